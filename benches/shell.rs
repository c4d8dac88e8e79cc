//! Shell round-trip: a trivial command through duet's persistent PTY shell, in its
//! sandbox as users get it, against spawning a fresh `bash -c` for each command; and
//! what starting a sandboxed shell costs (sandbox probe, launcher, namespaces, mounts
//! and the shell's setup) against starting an unconfined one.

mod support;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use duet::shell::sandbox::SandboxConfig;
use duet::shell::{End, Request, Shell, ShellConfig};
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

use support::Goal;

const COMMAND: &str = "true";

fn main() {
    let mut criterion = support::criterion();
    let runtime = Runtime::new().unwrap_or_else(|error| panic!("tokio runtime: {error}"));
    let workspace = tempfile::tempdir().unwrap_or_else(|error| panic!("temp dir: {error}"));
    let shell = Shell::new(workspace.path(), config(true));
    support::compare(
        &mut criterion,
        "shell round-trip (`true`, sandboxed)",
        Goal::FasterBy(5.0),
        || runtime.block_on(run_in_shell(&shell)),
        spawn_bash,
    );
    // A new shell each time: the probe, the launcher's two stages, the namespaces and
    // mounts, then the shell's own start and one command.
    support::compare(
        &mut criterion,
        "shell start + first command (sandboxed vs unconfined)",
        Goal::AtMost(Duration::from_millis(50)),
        || runtime.block_on(run_in_shell(&Shell::new(workspace.path(), config(true)))),
        || runtime.block_on(run_in_shell(&Shell::new(workspace.path(), config(false)))),
    );
    criterion.final_summary();
}

/// bash, in the sandbox (with the built `duet` as its launcher) or not.
fn config(sandboxed: bool) -> ShellConfig {
    ShellConfig {
        program: Some(PathBuf::from("bash")),
        sandbox: sandboxed.then(|| SandboxConfig {
            launcher: Some(PathBuf::from(env!("CARGO_BIN_EXE_duet"))),
            ..SandboxConfig::default()
        }),
        ..ShellConfig::default()
    }
}

/// Runs `COMMAND` in the persistent shell (started by the first call).
async fn run_in_shell(shell: &Shell) {
    let cancel = CancellationToken::new();
    let mut ignore = |_: String| {};
    let request = Request {
        command: COMMAND,
        timeout: Duration::from_secs(10),
        cancel: &cancel,
        on_output: &mut ignore,
        input: None,
        attendant: None,
    };
    match shell.run(request).await {
        Ok(outcome) => assert_eq!(outcome.end, End::Exited { code: 0 }, "{outcome:?}"),
        Err(error) => panic!("the shell failed: {error}"),
    }
}

/// The baseline: a fresh `bash -c COMMAND`, as a tool without a persistent shell runs it.
fn spawn_bash() {
    match Command::new("bash").args(["-c", COMMAND]).status() {
        Ok(status) => assert!(status.success(), "bash -c {COMMAND}: {status}"),
        Err(error) => panic!("could not spawn bash: {error}"),
    }
}
