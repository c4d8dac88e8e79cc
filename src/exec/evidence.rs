//! The checks `duet exec --done` makes itself before it proposes a change, whatever
//! the model said about its work.
//!
//! Owns: judging the changes since the branch started (protected paths, test and CI
//! files, skip markers and test filters in added lines, size caps), receipts of what
//! each changed file was before and after (sha256), and the outcome of the done command.
//! Does not own: reading the repository or running the command (`git::work_branch` and
//! `exec::done` do); everything here is a pure function of what they found.
//!
//! Rules, kept simple on purpose:
//! - A test file is one under a `test`, `tests`, `spec`, `specs`, `__tests__` or
//!   `testdata` directory, or named like `test_*.py`, `*_test.py`, `*_test.go`,
//!   `*.test.*`, `*.spec.*` or `*_spec.rb`. A CI file is `.github/**`, `.gitlab-ci.yml`,
//!   `.circleci/**`, `.ci/**`, `.travis.yml`, `azure-pipelines.yml` or `Jenkinsfile`.
//!   Changing one fails the run unless the task text names its path or file name.
//! - Any added line containing a skip marker or test filter fails the run:
//!   [`SKIP_MARKERS`].
//! - Protected paths are the policy's (`[policy] protected` included), and are never
//!   allowed, whatever the task says.

use std::fmt;

use crate::git::work_branch::FileChange;
use crate::policy::ProtectedPaths;

/// Text that, in an added line, skips or filters tests.
pub const SKIP_MARKERS: &[&str] = &[
    "#[ignore",
    "@pytest.mark.skip",
    "@unittest.skip",
    "pytest.skip(",
    "it.skip(",
    "test.skip(",
    "describe.skip(",
    "xit(",
    ".only(",
    "t.Skip(",
    "-k ",
    "--ignore",
    "--skip",
];

/// Directory names whose contents are tests.
const TEST_DIRS: &[&str] = &["test", "tests", "spec", "specs", "__tests__", "testdata"];

/// Limits on the size of the change; `None` is no limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Caps {
    pub max_files: Option<usize>,
    pub max_lines: Option<usize>,
}

/// Which check failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    DoneCommand,
    ProtectedPath,
    TestOrCiFile,
    SkipMarker,
    ChangedFiles,
    ChangedLines,
    UnchangedSinceCheck,
}

impl Check {
    pub fn name(self) -> &'static str {
        match self {
            Check::DoneCommand => "done command",
            Check::ProtectedPath => "protected path",
            Check::TestOrCiFile => "test or CI file",
            Check::SkipMarker => "skip marker or test filter",
            Check::ChangedFiles => "changed-files cap",
            Check::ChangedLines => "changed-lines cap",
            Check::UnchangedSinceCheck => "unchanged since the check",
        }
    }
}

/// One failed check and what failed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub check: Check,
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.check.name(), self.detail)
    }
}

/// How the done command ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommandResult {
    /// It exited; `code` is `None` when a signal ended it.
    Exited {
        code: Option<i32>,
    },
    TimedOut {
        secs: u64,
    },
}

impl CommandResult {
    pub fn passed(&self) -> bool {
        matches!(self, CommandResult::Exited { code: Some(0) })
    }

    /// The failure, if it failed.
    pub fn violation(&self, command: &str) -> Option<Violation> {
        let how = match self {
            CommandResult::Exited { code: Some(0) } => return None,
            CommandResult::Exited { code: Some(code) } => format!("exited with {code}"),
            CommandResult::Exited { code: None } => "was killed by a signal".to_string(),
            CommandResult::TimedOut { secs } => format!("did not finish in {secs} s"),
        };
        Some(Violation {
            check: Check::DoneCommand,
            detail: format!("`{command}` {how}"),
        })
    }
}

/// Every check of the changes themselves (paths, added lines, size).
pub fn check_changes(
    changes: &[FileChange],
    task: &str,
    protected: &ProtectedPaths,
    caps: Caps,
) -> Vec<Violation> {
    let mut violations = Vec::new();
    for change in changes {
        if let Some(protection) = protected.check(std::path::Path::new(&change.path)) {
            violations.push(Violation {
                check: Check::ProtectedPath,
                detail: protection.to_string(),
            });
        } else if is_test_or_ci_path(&change.path) && !task_names(task, &change.path) {
            violations.push(Violation {
                check: Check::TestOrCiFile,
                detail: format!("{} changed, and the task does not mention it", change.path),
            });
        }
        violations.extend(change.added.iter().filter_map(|line| {
            skip_marker(line).map(|marker| Violation {
                check: Check::SkipMarker,
                detail: format!("{} adds `{marker}`: {}", change.path, line.trim()),
            })
        }));
    }
    violations.extend(check_caps(changes, caps));
    violations
}

/// The size caps alone.
pub fn check_caps(changes: &[FileChange], caps: Caps) -> Vec<Violation> {
    let lines: usize = changes.iter().map(changed_lines).sum();
    let mut violations = Vec::new();
    if let Some(max) = caps.max_files.filter(|&max| changes.len() > max) {
        violations.push(Violation {
            check: Check::ChangedFiles,
            detail: format!("{} files changed, more than {max}", changes.len()),
        });
    }
    if let Some(max) = caps.max_lines.filter(|&max| lines > max) {
        violations.push(Violation {
            check: Check::ChangedLines,
            detail: format!("{lines} lines changed, more than {max}"),
        });
    }
    violations
}

/// Lines added plus lines removed.
pub fn changed_lines(change: &FileChange) -> usize {
    change.added.len() + change.removed_count
}

/// The first skip marker or test filter in `line`.
pub fn skip_marker(line: &str) -> Option<&'static str> {
    SKIP_MARKERS
        .iter()
        .copied()
        .find(|marker| line.contains(marker))
}

/// Whether `path` (repository-relative, `/`-separated) is a test or CI file.
pub fn is_test_or_ci_path(path: &str) -> bool {
    is_test_path(path) || is_ci_path(path)
}

fn is_test_path(path: &str) -> bool {
    let mut parts: Vec<&str> = path.split('/').collect();
    let name = parts.pop().unwrap_or_default();
    if parts.iter().any(|dir| TEST_DIRS.contains(dir)) {
        return true;
    }
    let stem_parts: Vec<&str> = name.split('.').collect();
    (name.starts_with("test_") && name.ends_with(".py"))
        || name.ends_with("_test.py")
        || name.ends_with("_test.go")
        || name.ends_with("_spec.rb")
        || (stem_parts.len() > 2
            && stem_parts[1..stem_parts.len() - 1]
                .iter()
                .any(|part| *part == "test" || *part == "spec"))
}

fn is_ci_path(path: &str) -> bool {
    [".github/", ".circleci/", ".ci/"]
        .iter()
        .any(|dir| path.starts_with(dir))
        || [
            ".gitlab-ci.yml",
            ".travis.yml",
            "azure-pipelines.yml",
            "Jenkinsfile",
        ]
        .contains(&path)
}

/// Whether the task text names `path` or its file name.
fn task_names(task: &str, path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    task.contains(path) || task.contains(name)
}

/// What one changed file was before the work and is now, and which calls wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Receipt {
    pub path: String,
    /// sha256 in hex; `None` when the file did not exist.
    pub before: Option<String>,
    /// sha256 in hex; `None` when the file was deleted.
    pub after: Option<String>,
    /// The write and edit calls that succeeded on this path, in order; empty when only
    /// shell commands changed it.
    pub calls: Vec<String>,
}

impl Receipt {
    pub fn new(
        path: &str,
        before: Option<&[u8]>,
        after: Option<&[u8]>,
        calls: Vec<String>,
    ) -> Self {
        Self {
            path: path.to_string(),
            before: before.map(sha256_hex),
            after: after.map(sha256_hex),
            calls,
        }
    }

    /// One Markdown table row.
    pub fn row(&self) -> String {
        let hash = |hash: &Option<String>| hash.as_deref().unwrap_or("(none)").to_string();
        let by = if self.calls.is_empty() {
            "shell command".to_string()
        } else {
            self.calls.join(", ")
        };
        format!(
            "| {} | {} | {} | {by} |",
            self.path,
            hash(&self.before),
            hash(&self.after)
        )
    }
}

/// The sha256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// The last `lines` lines of `text`.
pub fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn change(path: &str, added: &[&str], removed: usize) -> FileChange {
        FileChange {
            path: path.into(),
            before: None,
            after: None,
            added: added.iter().map(ToString::to_string).collect(),
            removed_count: removed,
        }
    }

    fn checks(changes: &[FileChange], task: &str, caps: Caps) -> Vec<Check> {
        check_changes(changes, task, &ProtectedPaths::default(), caps)
            .into_iter()
            .map(|violation| violation.check)
            .collect()
    }

    #[test]
    fn skip_markers_and_test_filters_in_added_lines_fail() {
        for line in [
            "#[ignore]",
            "    #[ignore = \"flaky\"]",
            "@pytest.mark.skip(reason='x')",
            "@pytest.mark.skipif(True, reason='x')",
            "it.skip('works', () => {})",
            "describe.only('suite', () => {})",
            "pytest -k 'not slow'",
            "cargo test -- --skip slow",
            "pytest --ignore=tests/slow",
        ] {
            assert!(skip_marker(line).is_some(), "{line}");
        }
        for line in [
            "fn ignore_case() {}",
            "let only = 1;",
            "it('works', () => {})",
        ] {
            assert_eq!(skip_marker(line), None, "{line}");
        }
        let violations = check_changes(
            &[change("src/lib.rs", &["fn f() {}", "#[ignore]"], 0)],
            "fix it",
            &ProtectedPaths::default(),
            Caps::default(),
        );
        assert_eq!(
            violations,
            [Violation {
                check: Check::SkipMarker,
                detail: "src/lib.rs adds `#[ignore`: #[ignore]".into()
            }]
        );
    }

    #[test]
    fn test_and_ci_files_are_recognized() {
        for path in [
            "tests/all.rs",
            "crate/tests/suite/x.rs",
            "src/__tests__/a.js",
            "test_calc.py",
            "pkg/calc_test.py",
            "server_test.go",
            "src/app.test.ts",
            "src/app.spec.js",
            "spec/models/user_spec.rb",
            ".github/workflows/ci.yml",
            ".gitlab-ci.yml",
            "Jenkinsfile",
        ] {
            assert!(is_test_or_ci_path(path), "{path}");
        }
        for path in [
            "src/lib.rs",
            "contest.py",
            "src/testing.rs",
            "latest.txt",
            "a.test",
        ] {
            assert!(!is_test_or_ci_path(path), "{path}");
        }
    }

    #[test]
    fn test_files_pass_only_when_the_task_names_them() {
        let changed = [change("tests/calc_test.py", &["x = 1"], 0)];
        assert_eq!(
            checks(&changed, "make the build green", Caps::default()),
            [Check::TestOrCiFile]
        );
        assert_eq!(
            checks(
                &changed,
                "fix the assertion in calc_test.py",
                Caps::default()
            ),
            []
        );
        assert_eq!(
            checks(&changed, "update tests/calc_test.py", Caps::default()),
            []
        );
    }

    #[test]
    fn protected_paths_fail_whatever_the_task_says() {
        let changed = [change("Cargo.lock", &["x"], 0)];
        let violations = check_changes(
            &changed,
            "update Cargo.lock",
            &ProtectedPaths::default(),
            Caps::default(),
        );
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].check, Check::ProtectedPath);
        assert_eq!(violations[0].detail, "Cargo.lock is protected (lockfile)");

        let configured = ProtectedPaths::with_patterns(&["secret/**".to_string()]).unwrap();
        let violations = check_changes(
            &[change("secret/a.txt", &["x"], 0)],
            "t",
            &configured,
            Caps::default(),
        );
        assert_eq!(violations[0].check, Check::ProtectedPath);
    }

    #[test]
    fn caps_count_files_and_added_plus_removed_lines() {
        let changed = [change("a.rs", &["1", "2"], 1), change("b.rs", &["3"], 0)];
        let caps = |files, lines| Caps {
            max_files: Some(files),
            max_lines: Some(lines),
        };
        assert_eq!(checks(&changed, "t", caps(2, 4)), []);
        assert_eq!(
            checks(&changed, "t", caps(1, 3)),
            [Check::ChangedFiles, Check::ChangedLines]
        );
        let violations = check_caps(&changed, caps(1, 4));
        assert_eq!(violations[0].detail, "2 files changed, more than 1");
        assert_eq!(checks(&changed, "t", Caps::default()), []);
    }

    #[test]
    fn receipts_hash_both_sides_and_name_the_writers() {
        let receipt = Receipt::new("a.txt", Some(b""), Some(b"abc"), vec!["toolu_1".into()]);
        assert_eq!(
            receipt.before.as_deref(),
            Some("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        );
        assert_eq!(
            receipt.after.as_deref(),
            Some("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        );
        assert!(receipt.row().ends_with("| toolu_1 |"), "{}", receipt.row());
        let by_shell = Receipt::new("gone.txt", Some(b"abc"), None, Vec::new());
        assert!(
            by_shell.row().contains("| (none) | shell command |"),
            "{}",
            by_shell.row()
        );
    }

    #[test]
    fn the_done_command_passes_only_on_exit_zero() {
        assert!(CommandResult::Exited { code: Some(0) }.passed());
        assert_eq!(
            CommandResult::Exited { code: Some(0) }.violation("make"),
            None
        );
        let failed = CommandResult::Exited { code: Some(2) }
            .violation("make")
            .unwrap();
        assert_eq!(failed.to_string(), "done command: `make` exited with 2");
        let slow = CommandResult::TimedOut { secs: 5 }
            .violation("make")
            .unwrap();
        assert_eq!(slow.detail, "`make` did not finish in 5 s");
    }

    #[test]
    fn tails_keep_the_last_lines() {
        assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail("a", 5), "a");
    }
}
