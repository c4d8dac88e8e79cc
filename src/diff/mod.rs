//! Diffs of proposed file changes.
//!
//! Owns: turning (before, after) into the unified diff people review.
//! Does not own: deciding whether a change applies (`policy/`) or writing files (`tools/`).
//! Invariant: the diff is computed from the exact bytes that would be written, so what is
//! shown is what lands.

use serde::{Deserialize, Serialize};
use similar::TextDiff;

/// Identifies one hunk of a proposed change by its content, so a decision about it
/// still names the same lines after the diff is recomputed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct HunkId(pub String);

impl std::fmt::Display for HunkId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Lines of unchanged context around each hunk.
pub const CONTEXT_LINES: usize = 3;

/// A unified diff (`--- a/path`, `+++ b/path`, `@@` hunks) of `before` → `after`.
/// A new file diffs against `/dev/null`.
pub fn unified(path: &str, before: Option<&str>, after: &str) -> String {
    let old_name = match before {
        Some(_) => format!("a/{path}"),
        None => "/dev/null".to_string(),
    };
    TextDiff::from_lines(before.unwrap_or_default(), after)
        .unified_diff()
        .context_radius(CONTEXT_LINES)
        .header(&old_name, &format!("b/{path}"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn changed_line_becomes_one_hunk() {
        let diff = unified("src/a.rs", Some("one\ntwo\nthree\n"), "one\n2\nthree\n");
        assert_eq!(
            diff,
            "--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"
        );
    }

    #[test]
    fn new_file_diffs_against_dev_null() {
        let diff = unified("new.txt", None, "hello\n");
        assert_eq!(
            diff,
            "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hello\n"
        );
    }

    #[test]
    fn identical_content_has_no_hunks() {
        assert!(!unified("a", Some("x\n"), "x\n").contains("@@"));
    }
}
