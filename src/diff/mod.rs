//! Diffs of proposed file changes, split into hunks that can be approved one by one.
//!
//! Owns: turning (before, after) into the unified diff people review, the [`Hunk`]s it
//! consists of, applying a chosen subset of them ([`apply`]) and telling the model what
//! landed ([`Applied::describe_partial`]).
//! Does not own: deciding whether a change applies (`policy/`) or writing files (`tools/`).
//! Invariant: the diff is computed from the exact bytes that would be written, so what is
//! shown is what lands; [`unified`] and [`hunks`] are the same hunks, so an id names
//! what the person saw.

mod align;
mod apply;
mod describe;
mod hunk;
mod lines;
#[cfg(test)]
mod test_support;

use serde::{Deserialize, Serialize};

pub use apply::{Applied, HunkError, HunkOutcome, apply};
pub use hunk::{Hunk, HunkLine, LineKind, LineRange, hunks};
pub use lines::LineEnding;

/// Identifies one hunk of a proposed change by its content, so a decision about it
/// still names the same lines after the diff is recomputed.
#[derive(
    Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
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
/// A new file diffs against `/dev/null`. Identical content gives an empty string.
pub fn unified(path: &str, before: Option<&str>, after: &str) -> String {
    let hunks = hunks(before, after);
    if hunks.is_empty() {
        return String::new();
    }
    let old_name = match before {
        Some(_) => format!("a/{path}"),
        None => "/dev/null".to_string(),
    };
    let mut out = format!("--- {old_name}\n+++ b/{path}\n");
    for hunk in &hunks {
        hunk.write_unified(&mut out);
    }
    out
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

    #[test]
    fn several_hunks_share_one_header_and_keep_terminators() {
        let before: String = (1..=12).map(|n| format!("{n}\r\n")).collect();
        let after = before.replace("\n2\r\n", "\ntwo\r\n");
        let after = after.trim_end();
        assert_eq!(
            unified("dos.txt", Some(&before), after),
            "--- a/dos.txt\n+++ b/dos.txt\n\
             @@ -1,5 +1,5 @@\n 1\r\n-2\r\n+two\r\n 3\r\n 4\r\n 5\r\n\
             @@ -9,4 +9,4 @@\n 9\r\n 10\r\n 11\r\n-12\r\n+12\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn a_new_empty_file_still_shows_its_one_hunk() {
        assert_eq!(
            unified("empty", None, ""),
            "--- /dev/null\n+++ b/empty\n@@ -0,0 +0,0 @@\n"
        );
    }
}
