//! Running one hook's command: `sh -c` in the workspace root, in the session's sandbox
//! unless the hook is trusted, with the event's JSON on stdin and a time limit.
//!
//! Owns: spawning, stdin, the bounded capture of stdout and stderr, the time limit and
//! stopping the command with everything it started. Does not own: what the output
//! means (`reply`) or which hooks run (`super`).
//! Invariant: a run returns within its time limit plus a short grace, and leaves no
//! process of its group running when the limit expires or the future is dropped; an
//! untrusted hook never runs outside the sandbox (no sandbox, no run).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWriteExt as _};
use tokio::process::Command;

use super::reply::Ended;
use crate::process_group::{self, ProcessGroup};
use crate::shell::sandbox::Sandbox;

/// The most of stdout, and of stderr, kept from one run.
const MAX_OUTPUT_BYTES: usize = 64 * 1024;
/// How long a killed hook may take to be reaped.
const REAP_GRACE: Duration = Duration::from_secs(2);

/// What one run printed and how it ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ran {
    pub ended: Ended,
    pub stdout: String,
    pub stderr: String,
}

/// Where a hook runs.
pub enum Confinement<'a> {
    /// In the session's sandbox, with the environment its policy passes.
    Sandboxed(Option<&'a Sandbox>),
    /// Outside it, with `environment` (the user's, for a hook their config trusts).
    Trusted,
}

/// Runs `script` with `input` on its stdin.
pub async fn run(
    script: &str,
    workspace: &Path,
    input: &[u8],
    limit: Duration,
    confinement: Confinement<'_>,
) -> Ran {
    let failed = |why: String| Ran {
        ended: Ended::Failed(why),
        stdout: String::new(),
        stderr: String::new(),
    };
    let project_dir = workspace.display().to_string();
    let env = [
        ("CLAUDE_PROJECT_DIR", project_dir.as_str()),
        ("DUET_PROJECT_DIR", project_dir.as_str()),
    ];
    let (mut command, _report_dir) = match confinement {
        Confinement::Sandboxed(Some(sandbox)) => {
            match sandbox
                .command("sh", &["-c", script], workspace, &env)
                .await
            {
                Ok(built) => built,
                Err(error) => return failed(format!("the sandbox refused it: {error}")),
            }
        }
        Confinement::Sandboxed(None) => {
            return failed(
                "no sandbox to run it in (mark it `trusted` in your config to run it \
                 outside one)"
                    .to_string(),
            );
        }
        Confinement::Trusted => {
            let mut command = Command::new("sh");
            command.arg("-c").arg(script).current_dir(workspace);
            command.envs(env);
            (command, None)
        }
    };
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    process_group::isolate(&mut command);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => return failed(format!("could not start `sh`: {error}")),
    };
    let group = ProcessGroup::of(&child);
    let stdin = child.stdin.take();
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let finished = tokio::time::timeout(limit, async {
        let feed = async {
            if let Some(mut stdin) = stdin {
                // A hook that does not read its input closes the pipe; that is its
                // business, not an error.
                let _ = stdin.write_all(input).await;
                let _ = stdin.shutdown().await;
            }
        };
        let ((), out, err) = futures::join!(feed, capture(stdout), capture(stderr));
        (child.wait().await, out, err)
    })
    .await;
    match finished {
        Ok((Ok(status), stdout, stderr)) => {
            group.disarm();
            let ended = match status.code() {
                Some(code) => Ended::Exited(code),
                None => Ended::Failed("it was killed by a signal".to_string()),
            };
            Ran {
                ended,
                stdout,
                stderr,
            }
        }
        Ok((Err(error), stdout, stderr)) => Ran {
            ended: Ended::Failed(format!("waiting for it failed: {error}")),
            stdout,
            stderr,
        },
        Err(_elapsed) => {
            group.kill();
            let _ = tokio::time::timeout(REAP_GRACE, child.wait()).await;
            failed(format!(
                "it ran past its time limit of {} s",
                limit.as_secs()
            ))
        }
    }
}

/// Reads `stream` to its end, keeping the first [`MAX_OUTPUT_BYTES`].
async fn capture(stream: Option<impl AsyncRead + Unpin>) -> String {
    let Some(mut stream) = stream else {
        return String::new();
    };
    let mut kept = Vec::new();
    let mut buffer = [0u8; 8192];
    while let Ok(read @ 1..) = stream.read(&mut buffer).await {
        let room = MAX_OUTPUT_BYTES.saturating_sub(kept.len());
        kept.extend_from_slice(&buffer[..read.min(room)]);
    }
    String::from_utf8_lossy(&kept).into_owned()
}
