//! Shell round-trip: a trivial command through duet's persistent PTY shell against
//! spawning a fresh `bash -c` for each command.

mod support;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use duet::shell::{End, Request, Shell, ShellConfig};
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

use support::Goal;

const COMMAND: &str = "true";

fn main() {
    let mut criterion = support::criterion();
    let runtime = Runtime::new().unwrap_or_else(|error| panic!("tokio runtime: {error}"));
    let workspace = tempfile::tempdir().unwrap_or_else(|error| panic!("temp dir: {error}"));
    let shell = Shell::new(
        workspace.path(),
        ShellConfig {
            program: Some(PathBuf::from("bash")),
            ..ShellConfig::default()
        },
    );
    support::compare(
        &mut criterion,
        "shell round-trip (`true`)",
        Goal::FasterBy(5.0),
        || runtime.block_on(run_in_shell(&shell)),
        spawn_bash,
    );
    criterion.final_summary();
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
