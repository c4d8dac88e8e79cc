//! Running one configured check command: `sh -c` in the project root, in the session's
//! sandbox (a linter or a build runs the project's code), with a time limit, its
//! output (stdout and stderr together) kept to a head and a tail.
//!
//! Owns: spawning, the timeout, stopping a command together with everything it started
//! (its process group), and the bounded capture of output.
//! Does not own: what the outcome means for the report (`report.rs`) or which commands
//! run (`mod.rs`).
//! Invariant: [`run`] returns within its time limit plus a short grace period, holds
//! at most `output_cap` bytes of output in memory, and leaves no process of the
//! command's group running when the limit expires or the future is dropped.

use std::collections::VecDeque;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt as _};
use tokio::process::{Child, Command};

use crate::process_group::{self, ProcessGroup};
use crate::shell::sandbox::Sandbox;

/// How long a killed command may take to be reaped before it is left to the runtime.
const REAP_GRACE: Duration = Duration::from_secs(2);
/// The exit status `sh` uses for "command not found".
const NOT_FOUND_STATUS: i32 = 127;

/// How a command ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// It exited with this status.
    Exited(i32),
    /// A signal ended it (reported by number).
    Signalled(Option<i32>),
    /// The program (or `sh` itself) does not exist.
    NotFound,
    /// It ran past the time limit and was stopped.
    TimedOut,
    /// It could not be started or waited for.
    Failed(String),
}

/// A finished command: how it ended and what it printed (clipped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Run {
    pub outcome: Outcome,
    pub output: String,
}

impl Run {
    /// Exit status 0 and nothing printed.
    pub(crate) fn is_clean(&self) -> bool {
        self.outcome == Outcome::Exited(0) && self.output.trim().is_empty()
    }
}

/// Runs `script` with `sh -c` in `root` (inside `sandbox` when there is one),
/// stopping it after `limit`. The output keeps the first and last `output_cap / 2`
/// bytes.
pub(crate) async fn run(
    root: &Path,
    script: &str,
    limit: Duration,
    output_cap: usize,
    sandbox: Option<&Sandbox>,
) -> Run {
    let failed = |why: String| Run {
        outcome: Outcome::Failed(why),
        output: String::new(),
    };
    let (mut command, _report_dir) = match sandbox {
        Some(sandbox) => match sandbox.command("sh", &["-c", script], root, &[]).await {
            Ok(built) => built,
            Err(error) => return failed(error.to_string()),
        },
        None => {
            let mut command = Command::new("sh");
            command.arg("-c").arg(script).current_dir(root);
            (command, None)
        }
    };
    // Listed once the sandbox has settled (building the command settles it).
    let watch = sandbox.map(Sandbox::watch_protected);
    let mut child = match spawn(&mut command) {
        Ok(child) => child,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Run {
                outcome: Outcome::NotFound,
                output: String::new(),
            };
        }
        Err(error) => return failed(format!("could not start `sh`: {error}")),
    };
    let group = ProcessGroup::of(&child);
    let output = Mutex::new(Capture::new(output_cap));
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let finished = tokio::time::timeout(limit, async {
        futures::join!(drain(stdout, &output), drain(stderr, &output));
        child.wait().await
    })
    .await;
    let outcome = match finished {
        Ok(Ok(status)) => {
            group.disarm();
            outcome_of(status)
        }
        Ok(Err(error)) => Outcome::Failed(format!("waiting for the command failed: {error}")),
        Err(_elapsed) => {
            // Kill before reaping: until the leader is reaped its id cannot be reused,
            // so the signal cannot reach an unrelated process group.
            group.kill();
            let _ = tokio::time::timeout(REAP_GRACE, child.wait()).await;
            Outcome::TimedOut
        }
    };
    let mut output = match output.into_inner() {
        Ok(capture) => capture.render(),
        Err(poisoned) => poisoned.into_inner().render(),
    };
    // A check that runs project code may create what no command may.
    if let Some(line) = watch.and_then(|watch| watch.take_back().line("this check")) {
        if !output.is_empty() && !output.ends_with('\n') {
            output.push('\n');
        }
        output.push_str(&format!("duet: {line}\n"));
    }
    Run { outcome, output }
}

fn spawn(command: &mut Command) -> std::io::Result<Child> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // Its own process group, so a timeout stops the linter's children too.
    process_group::isolate(command);
    command.spawn()
}

fn outcome_of(status: ExitStatus) -> Outcome {
    match status.code() {
        Some(NOT_FOUND_STATUS) => Outcome::NotFound,
        Some(code) => Outcome::Exited(code),
        None => Outcome::Signalled(signal_of(status)),
    }
}

#[cfg(unix)]
fn signal_of(status: ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt as _;
    status.signal()
}

#[cfg(not(unix))]
fn signal_of(_status: ExitStatus) -> Option<i32> {
    None
}

/// Reads `stream` to its end into the shared capture.
async fn drain(stream: Option<impl AsyncRead + Unpin>, capture: &Mutex<Capture>) {
    let Some(mut stream) = stream else { return };
    let mut buffer = [0u8; 8192];
    // A read error ends this stream's capture; the exit status still tells the story.
    while let Ok(read @ 1..) = stream.read(&mut buffer).await {
        if let Ok(mut capture) = capture.lock() {
            capture.push(&buffer[..read]);
        }
    }
}

/// The first and last bytes of a stream of unknown length.
struct Capture {
    half: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: usize,
}

impl Capture {
    fn new(cap: usize) -> Self {
        Self {
            half: cap / 2,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
        }
    }

    fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len();
        let room = self.half.saturating_sub(self.head.len());
        let (to_head, rest) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(to_head);
        bytes = rest;
        self.tail.extend(bytes);
        let excess = self.tail.len().saturating_sub(self.half);
        self.tail.drain(..excess);
    }

    /// Head and tail around a marker; lines cut by the clipping are dropped whole so
    /// every line shown is a real line of output.
    fn render(&self) -> String {
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        let cut = self.total - self.head.len() - tail.len();
        if cut == 0 {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        let head_end = self
            .head
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(self.head.len(), |newline| newline + 1);
        let tail_start = tail
            .iter()
            .position(|&b| b == b'\n')
            .map_or(0, |newline| newline + 1);
        let (head, tail) = (&self.head[..head_end], &tail[tail_start..]);
        let dropped = self.total - head.len() - tail.len();
        let mut text = String::from_utf8_lossy(head).into_owned();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("[… {dropped} bytes of output cut …]\n"));
        text.push_str(&String::from_utf8_lossy(tail));
        text
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use pretty_assertions::assert_eq;

    use super::*;

    async fn sh(script: &str, limit: Duration) -> Run {
        let dir = tempfile::tempdir().unwrap();
        run(dir.path(), script, limit, 4096, None).await
    }

    #[tokio::test]
    async fn output_and_status_are_captured() {
        let result = sh("echo out; echo err >&2; exit 3", Duration::from_secs(10)).await;
        assert_eq!(result.outcome, Outcome::Exited(3));
        assert!(result.output.contains("out\n"), "{result:?}");
        assert!(result.output.contains("err\n"), "{result:?}");
        assert!(!result.is_clean());
        assert!(sh("true", Duration::from_secs(10)).await.is_clean());
    }

    #[tokio::test]
    async fn runs_in_the_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("marker"), "here").unwrap();
        let result = run(
            dir.path(),
            "cat marker",
            Duration::from_secs(10),
            4096,
            None,
        )
        .await;
        assert_eq!(result.output, "here");
    }

    #[tokio::test]
    async fn a_missing_program_is_not_found() {
        let result = sh(
            "definitely-not-a-linter-xyz --check",
            Duration::from_secs(10),
        )
        .await;
        assert_eq!(result.outcome, Outcome::NotFound);
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_timeout_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        // The grandchild would touch the file after 3 s if it survived the kill.
        let script = "echo started; (sleep 3; touch survived) & sleep 30";
        let started = Instant::now();
        let result = run(dir.path(), script, Duration::from_millis(500), 4096, None).await;
        assert_eq!(result.outcome, Outcome::TimedOut);
        assert_eq!(result.output, "started\n");
        // Well before the 30 s sleep would end on its own.
        assert!(started.elapsed() < Duration::from_secs(20));
        tokio::time::sleep(Duration::from_secs(4)).await;
        assert!(!dir.path().join("survived").exists());
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn dropping_the_run_kills_the_command() {
        let dir = tempfile::tempdir().unwrap();
        let script = "sleep 2; touch survived";
        let limit = Duration::from_secs(60);
        let interrupted = tokio::time::timeout(
            Duration::from_millis(300),
            run(dir.path(), script, limit, 4096, None),
        )
        .await;
        assert!(interrupted.is_err(), "the command should still be running");
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert!(!dir.path().join("survived").exists());
    }

    #[tokio::test]
    async fn long_output_keeps_whole_lines_at_both_ends() {
        let result = sh("seq 1 100000", Duration::from_secs(10)).await;
        assert_eq!(result.outcome, Outcome::Exited(0));
        assert!(result.output.len() < 4200, "{}", result.output.len());
        assert!(result.output.starts_with("1\n2\n"));
        assert!(result.output.ends_with("99999\n100000\n"));
        let marker = result
            .output
            .lines()
            .find(|line| line.contains("cut"))
            .unwrap();
        assert!(marker.starts_with("[… ") && marker.ends_with(" bytes of output cut …]"));
        // Every other line is a whole number: nothing was split mid-line.
        for line in result.output.lines().filter(|line| *line != marker) {
            assert!(line.parse::<u32>().is_ok(), "partial line {line:?}");
        }
    }

    #[test]
    fn capture_within_the_cap_is_exact() {
        let mut capture = Capture::new(10);
        capture.push(b"abc");
        capture.push(b"defgh");
        assert_eq!(capture.render(), "abcdefgh");
    }
}
