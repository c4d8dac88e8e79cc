//! `duet exec --done` as a real process in temporary git repositories: the done command
//! duet runs itself decides, the evidence checks catch what the model's word would
//! hide, and the user's branch is never touched.

use std::path::Path;

use duet::provider::Wire;
use pretty_assertions::assert_eq;

use crate::common::harness::{TestRepo, run_duet, wire_env};
use crate::common::script::{LoadScript, Script};
use crate::common::scripted_server::ScriptedServer;

const DONE: &str = "sh -c 'grep -q fixed a.txt'";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `duet exec --done DONE` with `extra` flags in `repo` against `script`.
async fn run_done(
    script: &str,
    repo: &TestRepo,
    extra: &[&str],
    task: &str,
) -> (std::process::Output, ScriptedServer) {
    let server = ScriptedServer::start(Script::load(script)).await;
    let home = tempfile::tempdir().unwrap();
    let env = wire_env(&server, Wire::Anthropic);
    let mut args = vec!["exec", "--approval", "auto", "--done", DONE];
    args.extend_from_slice(extra);
    args.push(task);
    let output = run_duet(repo.path(), home.path(), &env, &args).await;
    (output, server)
}

fn describe(output: &std::process::Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr)
    )
}

fn current_branch(path: &Path) -> String {
    let repo = git2::Repository::open(path).unwrap();
    repo.head().unwrap().shorthand().unwrap().to_string()
}

/// The commit a branch points at.
fn branch_tip(path: &Path, branch: &str) -> git2::Oid {
    let repo = git2::Repository::open(path).unwrap();
    let branch = repo.find_branch(branch, git2::BranchType::Local).unwrap();
    branch.get().target().unwrap()
}

fn default_branch(path: &Path) -> (String, git2::Oid) {
    let name = current_branch(path);
    let tip = branch_tip(path, &name);
    (name, tip)
}

#[tokio::test]
async fn a_fix_that_passes_the_done_command_is_committed_on_its_own_branch() {
    let repo = TestRepo::with_files(&[("a.txt", "broken\n")]);
    let (default, tip) = default_branch(repo.path());
    let (output, server) = run_done("done_fix", &repo, &[], "Fix a.txt").await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    server.assert_no_violations();

    assert_eq!(current_branch(repo.path()), "duet/fix-a-txt");
    assert_eq!(
        branch_tip(repo.path(), &default),
        tip,
        "the default branch moved"
    );
    let git = git2::Repository::open(repo.path()).unwrap();
    let commit = git.head().unwrap().peel_to_commit().unwrap();
    assert_eq!(commit.author().name().unwrap(), "duet");
    assert_eq!(commit.parent_id(0).unwrap(), tip);
    assert!(
        commit.message().unwrap().starts_with("duet: Fix a.txt\n"),
        "{:?}",
        commit.message()
    );
    let mut options = git2::StatusOptions::new();
    options.include_untracked(true).include_ignored(false);
    let statuses = git.statuses(Some(&mut options)).unwrap();
    let dirty: Vec<_> = statuses
        .iter()
        .map(|entry| entry.path().unwrap().to_string())
        .collect();
    assert!(dirty.is_empty(), "not clean after the commit: {dirty:?}");

    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("duet: done and verified: committed"),
        "{stdout}"
    );
    let pr = repo.read(".duet/PR.md");
    for needle in [
        "# Fix a.txt",
        "Done and verified by duet",
        "Branch: duet/fix-a-txt",
        "## Summary\n\nFixed a.txt: it now says fixed.",
        "- [x] `sh -c 'grep -q fixed a.txt'` passed",
        "a.txt | 2 +-",
        "| a.txt | ",
        "toolu_t2_1",
    ] {
        assert!(pr.contains(needle), "missing {needle:?} in PR.md:\n{pr}");
    }
    let notes = repo.read(".duet/notes.md");
    assert!(notes.contains("## Task\n\nFix a.txt"), "{notes}");
    let exclude = std::fs::read_to_string(repo.path().join(".git/info/exclude")).unwrap();
    assert!(exclude.lines().any(|line| line == ".duet/"), "{exclude}");
    // The model was told how it will be judged and where its notes are.
    let first = server.requests()[0].body.to_string();
    assert!(first.contains(".duet/notes.md"), "{first}");
    assert!(first.contains("grep -q fixed a.txt"), "{first}");
}

#[tokio::test]
async fn claiming_done_while_the_command_fails_exits_3_with_its_output() {
    let repo = TestRepo::with_files(&[("a.txt", "broken\n")]);
    let (default, tip) = default_branch(repo.path());
    let (output, server) = run_done("done_false_claim", &repo, &[], "Fix a.txt").await;
    assert_eq!(output.status.code(), Some(3), "{}", describe(&output));
    server.assert_no_violations();
    let stdout = text(&output.stdout);
    for needle in [
        "duet: the evidence checks failed",
        "failed: done command: `sh -c 'grep -q fixed a.txt'` exited with 1",
        "left on duet/fix-a-txt",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
    // Nothing committed: the branch is where it started, the change still in the tree.
    assert_eq!(branch_tip(repo.path(), "duet/fix-a-txt"), tip);
    assert_eq!(branch_tip(repo.path(), &default), tip);
    assert_eq!(repo.read("a.txt"), "almost\n");
    let pr = repo.read(".duet/PR.md");
    assert!(pr.contains("Not proposed: evidence checks failed"), "{pr}");
}

#[tokio::test]
async fn the_done_command_output_is_shown_when_it_fails() {
    let repo = TestRepo::with_files(&[("a.txt", "broken\n")]);
    let server = ScriptedServer::start(Script::load("done_false_claim")).await;
    let home = tempfile::tempdir().unwrap();
    let env = wire_env(&server, Wire::Anthropic);
    let output = run_duet(
        repo.path(),
        home.path(),
        &env,
        &[
            "exec",
            "--approval",
            "auto",
            "--done",
            "sh -c 'echo checking a.txt; cat a.txt; exit 4'",
            "Fix a.txt",
        ],
    )
    .await;
    assert_eq!(output.status.code(), Some(3), "{}", describe(&output));
    let stdout = text(&output.stdout);
    assert!(stdout.contains("exited with 4"), "{stdout}");
    assert!(stdout.contains("checking a.txt\nalmost"), "{stdout}");
}

#[tokio::test]
async fn a_skip_marker_and_an_edited_test_file_fail_the_run_by_name() {
    let repo = TestRepo::with_files(&[
        ("a.txt", "broken\n"),
        (
            "tests/a_test.py",
            "import pytest\n\ndef test_a():\n    pass\n",
        ),
    ]);
    let (output, server) = run_done("done_skip_test", &repo, &[], "Fix a.txt").await;
    assert_eq!(output.status.code(), Some(3), "{}", describe(&output));
    server.assert_no_violations();
    let stdout = text(&output.stdout);
    for needle in [
        "failed: test or CI file: tests/a_test.py changed, and the task does not mention it",
        "failed: skip marker or test filter: tests/a_test.py adds `@pytest.mark.skip`",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
    assert!(!stdout.contains("failed: done command"), "{stdout}");
}

#[tokio::test]
async fn the_changed_lines_cap_fails_a_passing_fix() {
    let repo = TestRepo::with_files(&[("a.txt", "broken\n")]);
    let (output, _server) = run_done(
        "done_fix",
        &repo,
        &["--max-changed-lines", "1"],
        "Fix a.txt",
    )
    .await;
    assert_eq!(output.status.code(), Some(3), "{}", describe(&output));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("failed: changed-lines cap: 2 lines changed, more than 1"),
        "{stdout}"
    );
}

#[tokio::test]
async fn a_budget_stop_with_draft_on_cap_commits_a_draft_and_exits_2() {
    let repo = TestRepo::with_files(&[("a.txt", "broken\n")]);
    let (output, _server) = run_done(
        "done_fix",
        &repo,
        &["--max-steps", "2", "--draft-on-cap"],
        "Fix a.txt",
    )
    .await;
    assert_eq!(output.status.code(), Some(2), "{}", describe(&output));
    let git = git2::Repository::open(repo.path()).unwrap();
    let commit = git.head().unwrap().peel_to_commit().unwrap();
    assert!(
        commit
            .message()
            .unwrap()
            .starts_with("duet (draft): Fix a.txt"),
        "{:?}",
        commit.message()
    );
    let pr = repo.read(".duet/PR.md");
    assert!(pr.starts_with("# [DRAFT] Fix a.txt"), "{pr}");
    assert!(
        pr.contains("- [x] `sh -c 'grep -q fixed a.txt'` passed"),
        "{pr}"
    );
}

#[tokio::test]
async fn a_dirty_tree_is_refused_without_allow_dirty() {
    let repo = TestRepo::with_files(&[("a.txt", "broken\n")]);
    std::fs::write(repo.path().join("a.txt"), "local edit\n").unwrap();
    let (default, tip) = default_branch(repo.path());
    let (output, server) = run_done("done_fix", &repo, &[], "Fix a.txt").await;
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("uncommitted changes (a.txt)") && stderr.contains("--allow-dirty"),
        "{stderr}"
    );
    assert!(server.requests().is_empty(), "the model was called");
    assert_eq!(current_branch(repo.path()), default);
    assert_eq!(branch_tip(repo.path(), &default), tip);
    assert_eq!(repo.read("a.txt"), "local edit\n");
}

#[tokio::test]
async fn with_allow_dirty_the_users_own_changes_are_committed_but_not_judged() {
    let repo = TestRepo::with_files(&[
        ("a.txt", "broken\n"),
        ("tests/a_test.py", "def test_a():\n    pass\n"),
    ]);
    // The user's uncommitted work touches a protected path and a test file: the
    // model did neither, so neither may fail its run.
    std::fs::write(repo.path().join(".gitattributes"), "*.txt text\n").unwrap();
    std::fs::write(
        repo.path().join("tests/a_test.py"),
        "def test_a():\n    assert True\n",
    )
    .unwrap();
    let (output, server) = run_done("done_fix", &repo, &["--allow-dirty"], "Fix a.txt").await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    server.assert_no_violations();
    let git = git2::Repository::open(repo.path()).unwrap();
    let tree = git.head().unwrap().peel_to_tree().unwrap();
    let committed = |path: &str| {
        let entry = tree.get_path(Path::new(path)).unwrap();
        let blob = git.find_blob(entry.id()).unwrap();
        text(blob.content())
    };
    assert_eq!(committed(".gitattributes"), "*.txt text\n");
    assert_eq!(
        committed("tests/a_test.py"),
        "def test_a():\n    assert True\n"
    );
    assert!(
        committed("a.txt").contains("fixed"),
        "{}",
        committed("a.txt")
    );
}

#[tokio::test]
async fn with_allow_dirty_the_models_own_changes_are_still_judged() {
    let repo = TestRepo::with_files(&[
        ("a.txt", "broken\n"),
        (
            "tests/a_test.py",
            "import pytest\n\ndef test_a():\n    pass\n",
        ),
    ]);
    std::fs::write(repo.path().join("notes.txt"), "the user's own file\n").unwrap();
    let (output, server) = run_done("done_skip_test", &repo, &["--allow-dirty"], "Fix a.txt").await;
    assert_eq!(output.status.code(), Some(3), "{}", describe(&output));
    server.assert_no_violations();
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("failed: skip marker or test filter: tests/a_test.py"),
        "{stdout}"
    );
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_timed_out_done_command_is_stopped_with_everything_it_started() {
    let repo = TestRepo::with_files(&[("a.txt", "broken\n")]);
    let server = ScriptedServer::start(Script::load("done_fix")).await;
    let home = tempfile::tempdir().unwrap();
    let env = wire_env(&server, Wire::Anthropic);
    // A grandchild that ignores SIGTERM, so only the group's SIGKILL stops it; while
    // it lives it writes the time into `ticks` ten times a second.
    let done = "(trap '' TERM; while :; do date +%s%N > ticks; sleep 0.1; done) & wait";
    let output = run_duet(
        repo.path(),
        home.path(),
        &env,
        &[
            "exec",
            "--approval",
            "auto",
            "--done",
            done,
            "--done-timeout",
            "1",
            "Fix a.txt",
        ],
    )
    .await;
    assert_eq!(output.status.code(), Some(3), "{}", describe(&output));
    assert!(
        text(&output.stdout).contains("did not finish in 1 s"),
        "{}",
        describe(&output)
    );
    let last = repo.read("ticks");
    assert!(
        !last.trim().is_empty(),
        "the done command's grandchild never ran"
    );
    // Stopped with duet: the file stays as it was.
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    assert_eq!(
        repo.read("ticks"),
        last,
        "the done command's grandchild still runs"
    );
}
