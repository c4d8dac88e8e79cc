//! The shell's sandbox and environment policy, with the real `duet` binary as
//! launcher: no network (a connect to a listener this test opened fails inside and
//! works outside), no writes outside the workspace and the private temp dir, git
//! metadata read-only, cwd and environment still persist, credentials never reach the
//! shell, and `duet doctor` reports the protections without printing a secret. The
//! attack classes of issue 21 have their own suite (`containment.rs`).
//!
//! Where this machine cannot apply a protection, the test that needs it prints why
//! and passes without checking (except in CI): the probe's report is the authority on
//! that, and the unit tests check that it is never overstated.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use duet::provider::Wire;
use duet::shell::sandbox::{Protections, SandboxConfig};
use duet::shell::{End, Outcome, Request, Shell, ShellConfig};
use tokio_util::sync::CancellationToken;

use crate::common::harness::{
    TestRepo, duet_binary, home_with_config, run_duet, tool_results, wire_env,
};
use crate::common::script::{LoadScript, Script};
use crate::common::scripted_server::ScriptedServer;

/// A shell in `root`, confined by the built `duet` binary when `sandboxed`.
fn shell(root: &Path, sandboxed: bool) -> Shell {
    let sandbox = sandboxed.then(|| SandboxConfig {
        launcher: Some(duet_binary()),
        ..SandboxConfig::default()
    });
    Shell::new(
        root,
        ShellConfig {
            program: Some(PathBuf::from("bash")),
            input_wait: Some(Duration::from_millis(500)),
            sandbox,
            ..ShellConfig::default()
        },
    )
}

/// Runs `command`; returns its exit code and output.
async fn run(shell: &Shell, command: &str) -> (i32, String) {
    let outcome = run_outcome(shell, command).await;
    match outcome.end {
        End::Exited { code } => (code, outcome.output),
        other => panic!("{command}: {other:?}\n{}", outcome.output),
    }
}

/// Runs `command`; returns what it came to.
async fn run_outcome(shell: &Shell, command: &str) -> Outcome {
    let cancel = CancellationToken::new();
    let mut ignore = |_: String| {};
    shell
        .run(Request {
            command,
            timeout: Duration::from_secs(20),
            cancel: &cancel,
            on_output: &mut ignore,
            input: None,
            attendant: None,
        })
        .await
        .unwrap_or_else(|error| panic!("{command}: {error}"))
}

/// Notes a check this machine cannot make; in CI (`DUET_CI`), whose machines have
/// both protections, that is a failure.
fn skip(what: &str, protections: &Protections) {
    let why = format!(
        "{what} is not available here: {}",
        protections.gaps().join("; ")
    );
    assert!(
        std::env::var_os("DUET_CI").is_none(),
        "DUET_CI is set but {why}"
    );
    eprintln!("skipped: {why}");
}

/// `bash`'s own TCP client, so the test needs no curl: exit 0 when connected.
fn connect(port: u16) -> String {
    format!("echo ping >/dev/tcp/127.0.0.1/{port}")
}

#[tokio::test]
async fn a_connect_to_the_host_fails_inside_and_works_outside() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);

    let open = shell(repo.path(), false);
    let (code, output) = run(&open, &connect(port)).await;
    assert_eq!(code, 0, "unsandboxed connect failed: {output}");

    let confined = shell(repo.path(), true);
    let protections = confined.protections().await;
    if !protections.network_isolated() {
        return skip("network isolation", &protections);
    }
    let (code, output) = run(&confined, &connect(port)).await;
    assert_ne!(code, 0, "the sandboxed shell reached the host: {output}");
    // Its own loopback is up, for servers the commands start themselves.
    if run(&confined, "command -v python3").await.0 != 0 {
        eprintln!("skipped the loopback check: no python3 to listen with");
        return;
    }
    let (code, output) = run(
        &confined,
        "python3 -c 'import socket; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); \
         s.listen(); socket.create_connection(s.getsockname()); print(\"local ok\")'",
    )
    .await;
    assert_eq!((code, output.as_str()), (0, "local ok\n"));
}

#[tokio::test]
async fn writes_stay_in_the_workspace_and_a_private_temp_dir() {
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    // Under the target directory, so outside the workspace.
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    // A file in the host's temp dir, which commands must neither see nor change.
    let host_temp = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(host_temp.path(), "host\n").unwrap();
    let confined = shell(repo.path(), true);
    let protections = confined.protections().await;
    if !protections.complete() {
        return skip("the sandbox", &protections);
    }

    let (code, output) = run(&confined, "echo inside > made.txt && cat made.txt").await;
    assert_eq!((code, output.as_str()), (0, "inside\n"));
    let (code, output) = run(&confined, "echo temp > /tmp/t.txt && cat /tmp/t.txt").await;
    assert_eq!((code, output.as_str()), (0, "temp\n"));
    assert_eq!(run(&confined, "echo quiet > /dev/null").await.0, 0);
    // The host's temp dir is not the one commands see.
    let shown = format!("cat {0}; echo changed > {0}", host_temp.path().display());
    let (_, output) = run(&confined, &shown).await;
    assert!(!output.contains("host"), "{output}");
    assert_eq!(std::fs::read_to_string(host_temp.path()).unwrap(), "host\n");

    let target = outside.path().join("escaped.txt");
    let (code, output) = run(&confined, &format!("echo out > {}", target.display())).await;
    assert_ne!(code, 0, "{output}");
    assert!(!target.exists());
}

#[tokio::test]
async fn git_metadata_is_read_only_even_for_a_worktree_whose_repository_lies_outside() {
    // The repository lives under the target directory: outside the workspace (the
    // worktree).
    let main = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let repository = git2::Repository::init(main.path()).unwrap();
    let signature = git2::Signature::now("T", "t@example.com").unwrap();
    let tree = repository
        .find_tree(repository.index().unwrap().write_tree().unwrap())
        .unwrap();
    repository
        .commit(Some("HEAD"), &signature, &signature, "first", &tree, &[])
        .unwrap();
    let head = repository.head().unwrap().target();
    let parent = tempfile::tempdir().unwrap();
    let worktree_path = parent.path().join("feature");
    repository
        .worktree("feature", &worktree_path, None)
        .unwrap();
    let confined = shell(&worktree_path, true);
    let protections = confined.protections().await;
    if !protections.complete() {
        return skip("the sandbox", &protections);
    }
    let (code, output) = run(
        &confined,
        "echo b > b.txt && git add b.txt && \
         git -c user.name=T -c user.email=t@example.com commit -q -m 'add b'",
    )
    .await;
    assert_ne!(code, 0, "a commit went through: {output}");
    assert_eq!(
        git2::Repository::open(main.path())
            .unwrap()
            .head()
            .unwrap()
            .target(),
        head
    );
    // The file itself was written: only git's metadata is read-only.
    assert!(worktree_path.join("b.txt").exists());
}

#[tokio::test]
async fn cwd_and_environment_persist_through_the_launcher() {
    let repo = TestRepo::with_files(&[("sub/b.txt", "b\n")]);
    let confined = shell(repo.path(), true);
    assert_eq!(run(&confined, "cd sub && export GREETING=hello").await.0, 0);
    let (code, output) = run(&confined, r#"echo "$GREETING from ${PWD##*/}""#).await;
    assert_eq!((code, output.as_str()), (0, "hello from sub\n"));
    assert_eq!(
        confined.cwd(),
        repo.path().canonicalize().unwrap().join("sub")
    );
    // Rust ignores SIGPIPE; the launcher must not pass that on to the shell.
    assert_eq!(run(&confined, "yes | head -n 1").await, (0, "y\n".into()));
}

#[tokio::test]
async fn a_shell_the_launcher_cannot_run_is_an_error_saying_why() {
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let confined = Shell::new(
        repo.path(),
        ShellConfig {
            program: Some(PathBuf::from("no-such-shell-here")),
            sandbox: Some(SandboxConfig {
                launcher: Some(duet_binary()),
                ..SandboxConfig::default()
            }),
            ..ShellConfig::default()
        },
    );
    let cancel = CancellationToken::new();
    let mut ignore = |_: String| {};
    let error = confined
        .run(Request {
            command: "true",
            timeout: Duration::from_secs(10),
            cancel: &cancel,
            on_output: &mut ignore,
            input: None,
            attendant: None,
        })
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("cannot run no-such-shell-here"), "{error}");
}

#[tokio::test]
async fn stuck_commands_are_still_recognised_and_stopped() {
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let confined = shell(repo.path(), true);
    assert_eq!(run(&confined, "export KEPT=yes").await.0, 0);
    let cancel = CancellationToken::new();
    let mut ignore = |_: String| {};
    let waiting = confined
        .run(Request {
            command: "read -r answer",
            timeout: Duration::from_secs(20),
            cancel: &cancel,
            on_output: &mut ignore,
            input: None,
            attendant: None,
        })
        .await
        .unwrap();
    assert!(
        matches!(waiting.end, End::WaitingForInput { .. }),
        "{waiting:?}"
    );
    let timed_out = confined
        .run(Request {
            command: "sleep 30",
            timeout: Duration::from_millis(300),
            cancel: &cancel,
            on_output: &mut ignore,
            input: None,
            attendant: None,
        })
        .await
        .unwrap();
    assert!(
        matches!(timed_out.end, End::TimedOut { .. }),
        "{timed_out:?}"
    );
    assert_eq!(run(&confined, "echo $KEPT").await, (0, "yes\n".into()));
}

#[tokio::test]
async fn credentials_never_reach_the_shell_of_duet_exec() {
    let server = ScriptedServer::start(Script::load("shell_env")).await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let home = home_with_config("[shell]\nkeep_env = [\"AWS_PROFILE\"]\n");
    let mut env = wire_env(&server, Wire::Anthropic);
    env.push(("GH_TOKEN", "ghp_not_for_the_shell".into()));
    env.push(("AWS_PROFILE", "dev".into()));

    let output = run_duet(
        repo.path(),
        home.path(),
        &env,
        &["exec", "--approval", "auto", "show the environment"],
    )
    .await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let result = &tool_results(&server.requests()[1])[0];
    assert!(
        result
            .content
            .contains("key=[] gh=[] kept=[dev] path=[set]"),
        "{}",
        result.content
    );
    // The transcript header says what protected the shell.
    assert!(stdout.contains("sandbox: "), "{stdout}");
    assert!(stdout.contains("withheld"), "{stdout}");
    server.assert_no_violations();
}

#[tokio::test]
async fn the_json_session_start_carries_the_protections() {
    let server = ScriptedServer::start(Script::load("stream_text")).await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let home = tempfile::tempdir().unwrap();
    let env = wire_env(&server, Wire::Anthropic);
    let output = run_duet(repo.path(), home.path(), &env, &["exec", "--json", "hi"]).await;
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let first: serde_json::Value =
        serde_json::from_str(stdout.lines().next().unwrap_or_default()).unwrap();
    assert_eq!(first["type"], "session_started");
    let sandbox = &first["sandbox"];
    for field in [
        "namespaces",
        "network",
        "writes",
        "capabilities",
        "syscalls",
        "protected",
        "credentials",
    ] {
        let state = sandbox[field]["state"].as_str().unwrap_or_default();
        assert!(!state.is_empty(), "{field}: {first}");
    }
    assert!(
        sandbox["environment_withheld"].as_u64() >= Some(1),
        "{first}"
    );
}

#[tokio::test]
async fn a_sandbox_turned_off_is_reported_with_its_reason() {
    let server = ScriptedServer::start(Script::load("stream_text")).await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let home = home_with_config("[sandbox]\nenabled = false\n");
    let env = wire_env(&server, Wire::Anthropic);
    let output = run_duet(repo.path(), home.path(), &env, &["exec", "hi"]).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    for needle in [
        "sandbox: off · no namespaces · network open · writes unlimited",
        "no sandbox: the sandbox is turned off ([sandbox] enabled = false)",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
}

#[tokio::test]
async fn doctor_reports_protections_and_never_a_key() {
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let home = tempfile::tempdir().unwrap();
    let secret = "sk-ant-doctor-must-not-print-this";
    let output = run_duet(
        repo.path(),
        home.path(),
        &[("ANTHROPIC_API_KEY", secret)],
        &["doctor"],
    )
    .await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(!stdout.contains(secret), "{stdout}");
    for needle in [
        "config file",
        "(none; built-in defaults)",
        "anthropic",
        "claude-sonnet-4-5",
        "https://api.anthropic.com",
        "ANTHROPIC_API_KEY is set",
        "(writable)",
        "bash",
        "namespaces",
        "network",
        "writes",
        "protected",
        "credentials",
        "capabilities",
        "syscalls",
        "inherited variables passed",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
}

#[tokio::test]
async fn doctor_without_a_model_fails_and_still_reports_the_rest() {
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let home = tempfile::tempdir().unwrap();
    let output = run_duet(
        repo.path(),
        home.path(),
        &[] as &[(&str, &str)],
        &["doctor"],
    )
    .await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("FAIL  model"), "{stdout}");
    assert!(stdout.contains("network"), "{stdout}");
}

#[tokio::test]
async fn a_read_only_workspace_takes_effect_with_the_next_command() {
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let confined = shell(repo.path(), true);
    let protections = confined.protections().await;
    if !protections.complete() {
        return skip("the sandbox", &protections);
    }
    assert_eq!(run(&confined, "export KEPT=yes").await.0, 0);
    confined.sandbox().set_workspace_read_only(true);
    let (code, output) = run(&confined, "echo b > a.txt; echo b > new.txt").await;
    assert_ne!(code, 0, "{output}");
    assert_eq!(repo.read("a.txt"), "a\n");
    assert!(!repo.path().join("new.txt").exists());
    // The shell was replaced to get the new view: its state is gone.
    assert_eq!(run(&confined, "echo \"[$KEPT]\"").await.1, "[]\n");
    // The private /tmp stays writable.
    assert_eq!(
        run(&confined, "echo t > /tmp/t && cat /tmp/t").await.1,
        "t\n"
    );
    confined.sandbox().set_workspace_read_only(false);
    assert_eq!(run(&confined, "echo b > a.txt").await.0, 0);
    assert_eq!(repo.read("a.txt"), "b\n");
}

/// Protected names that appear between commands are judged by who could have made
/// them: while a job of the shell or a project's server runs in the sandbox, it
/// could, and they are taken back before the next command; with nothing running there
/// they are the user's (kept, read-only from then on); what duet's own write tool says
/// it wrote is kept even while a job runs.
#[tokio::test]
async fn protected_names_appearing_between_commands_are_taken_back_only_while_a_job_runs() {
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let confined = shell(repo.path(), true);
    let protections = confined.protections().await;
    if !protections.complete() {
        return skip("the sandbox", &protections);
    }
    assert_eq!(run(&confined, "true").await.0, 0);
    std::fs::write(repo.path().join(".env"), "the user's\n").unwrap();
    let (code, output) = run(&confined, "echo more >> .env").await;
    assert_ne!(code, 0, "{output}");
    assert_eq!(repo.read(".env"), "the user's\n");

    assert_eq!(run(&confined, "sleep 60 > /dev/null 2>&1 &").await.0, 0);
    // Stands in for the job's own write: only the timing matters here.
    std::fs::write(repo.path().join(".envrc"), "the job's\n").unwrap();
    let outcome = run_outcome(&confined, "true").await;
    assert!(!repo.path().join(".envrc").exists());
    assert_eq!(outcome.blocked.moved, [PathBuf::from(".envrc")]);
    assert!(outcome.replaced_shell);
    let kept = repo.path().join(&outcome.blocked.kept_in[0]).join(".envrc");
    assert_eq!(std::fs::read_to_string(kept).unwrap(), "the job's\n");

    assert_eq!(run(&confined, "sleep 60 > /dev/null 2>&1 &").await.0, 0);
    std::fs::write(repo.path().join(".gitattributes"), "* text\n").unwrap();
    confined.note_own_write(Path::new(".gitattributes"));
    let outcome = run_outcome(&confined, "true").await;
    assert!(outcome.blocked.is_empty(), "{:?}", outcome.blocked);
    assert_eq!(repo.read(".gitattributes"), "* text\n");

    // No job left, but a project's server runs in the sandbox: it could have.
    assert_eq!(run(&confined, "kill $(jobs -p); wait").await.0, 0);
    let server = confined.sandbox().resident();
    std::fs::write(repo.path().join(".env.local"), "a server's\n").unwrap();
    let outcome = run_outcome(&confined, "true").await;
    assert_eq!(outcome.blocked.moved, [PathBuf::from(".env.local")]);
    drop(server);
    std::fs::write(repo.path().join(".env.local"), "the user's\n").unwrap();
    let outcome = run_outcome(&confined, "true").await;
    assert!(outcome.blocked.is_empty(), "{:?}", outcome.blocked);
}
