//! The `shell` tool: runs a command in the session's persistent shell (or a throwaway
//! one) after the approver agrees, and words the outcome for the model.
//!
//! Owns: the arguments and their limits, the approval request, and the result text:
//! a first line `exit <code> · <duration> · cwd <dir>` then the output, clipped with
//! its full copy saved; time limits, input waits and interrupts as errors that say
//! what happened to the shell and what to do instead.
//! Does not own: running commands, rendering output or stopping processes
//! ([`crate::shell`]).
//! Invariant: nothing runs unless the approver approved and the call was not
//! interrupted meanwhile. A command that ran to its end is a normal result whatever
//! its exit code (the model reads the code); only a command that could not start or
//! was stopped is an error.

use std::path::{Path, PathBuf};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::policy::{Action, Decision};
use crate::shell::jobs::{JobError, JobOutput, JobState, JobView};
use crate::shell::{Attendant, End, InputWait, Outcome, Recovery, Request};

use super::describe::{self, CallInfo};
use super::files::interrupted;
use super::truncate::{ClipLimits, clip};
use super::{Tool, ToolCtx, ToolError, ToolOutput, Workspace, parse_args, schema_for};

/// Room kept for the first line and notes, so the agent's own clipping (with the
/// default limits) never cuts a shell result a second time.
const RESERVED_BYTES: usize = 2_000;
const RESERVED_LINES: usize = 20;

/// Arguments of `shell`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ShellArgs {
    /// The command, as typed at a bash prompt. May be several lines: a script with
    /// pipes, `&&`, functions, loops and heredocs. It runs in the session's persistent
    /// shell, so `cd`, `export`, `source .venv/bin/activate`, functions and background
    /// jobs carry over to later calls.
    command: String,
    /// Time limit in seconds (default 120, at most 600). At the limit the command gets
    /// Ctrl-C and the call fails with the output so far.
    timeout: Option<f64>,
    /// Run in a fresh throwaway shell started in the current directory instead of the
    /// persistent one. Nothing it does (cd, export, background jobs) carries over, and
    /// everything it started is stopped when it ends. Use it for risky experiments or
    /// to run a server briefly: start it, probe it and read its log in one command.
    #[serde(default)]
    isolated: bool,
    /// Start the command in the background and return at once, for a server or
    /// watcher you then work against (`npm run dev`, `python3 -m http.server 8000`).
    /// It runs in a fresh shell of its own in the current directory (like `isolated`)
    /// and keeps running after the call; the result gives its job id (`bg1`) and the
    /// output of its first second. Read later output and stop it with `shell_jobs`.
    /// At most 8 run at once; all are stopped when the session ends. `timeout` does
    /// not apply. It shares the session shell's loopback: later commands reach a
    /// server it starts on 127.0.0.1.
    #[serde(default)]
    background: bool,
    /// Text to type into the command's terminal the first time it stops to wait for
    /// keyboard input, for a prompt that has no flag to skip it (`y\n` to confirm, an
    /// answer to an installer's question). End each line with `\n`. Typed once; a
    /// second wait stops the command as usual. The user sees it with the command when
    /// asked to approve.
    input: Option<String>,
}

/// How long a background command is watched before the call returns: long enough
/// for a server to print its address or fail at once.
const SETTLE_WINDOW: Duration = Duration::from_secs(1);

pub struct ShellTool;

#[async_trait::async_trait]
impl Tool for ShellTool {
    fn name(&self) -> &'static str {
        "shell"
    }

    fn description(&self) -> &'static str {
        "Run a shell command in a persistent bash session on a real terminal, starting in \
         the workspace root. State persists between calls: the working directory, exported \
         variables, activated virtualenvs, functions and background jobs. The result starts \
         with `exit <code> · <duration> · cwd <dir>`, then the output (stdout and stderr \
         together, cleaned: colours removed, progress bars shown in their final state). A \
         non-zero exit code is a normal result; read it. Nobody can type into this \
         terminal: use non-interactive flags (`-y`, `--yes`, `git commit -m`, `--no-edit`, \
         `npm init -y`) and give input with pipes or heredocs; a command that sits waiting \
         for input is stopped after about 10 s of silence. Pagers and editors are disabled \
         (PAGER=cat, EDITOR=true). Commands are stopped with Ctrl-C at their time limit \
         (default 120 s, `timeout` up to 600 s). Long output is cut in the middle and saved \
         in full to a file whose path the result names. To keep a server or watcher \
         running while you work against it, pass `background: true` and read its output \
         with `shell_jobs`; use `isolated` to run one briefly without touching the main \
         session. Prefer the read, grep, glob, edit and \
         write tools for reading, searching and changing files."
    }

    fn schema(&self) -> Value {
        schema_for::<ShellArgs>()
    }

    fn describe(&self, args: &serde_json::Map<String, Value>) -> Option<CallInfo> {
        let command = describe::text(args, "command")?;
        let mut lines = command.lines().filter(|line| !line.trim().is_empty());
        let first = lines.next().unwrap_or_default().trim();
        let more = match lines.count() {
            0 => String::new(),
            more => format!(" (+{more} lines)"),
        };
        let input = if describe::text(args, "input").is_some() {
            " (+input)"
        } else {
            ""
        };
        let isolated = if describe::flag(args, "background") {
            " (background)"
        } else if describe::flag(args, "isolated") {
            " (isolated)"
        } else {
            ""
        };
        Some(CallInfo {
            summary: format!("shell{isolated} $ {first}{more}{input}"),
            paths: Vec::new(),
            command: Some(command.to_string()),
        })
    }

    async fn run(&self, args: Value, ctx: &ToolCtx) -> Result<ToolOutput, ToolError> {
        let args: ShellArgs = parse_args(self.name(), args)?;
        if args.command.trim().is_empty() {
            return Err(ToolError::InvalidArguments(
                "`command` is empty. Give the shell command to run, e.g. `ls -la` or \
                 `cargo test`."
                    .into(),
            ));
        }
        if args.background {
            if args.input.is_some() {
                return Err(ToolError::InvalidArguments(
                    "`input` is typed into the command's terminal, and a background \
                     command has none: run it without `background` to answer its prompt."
                        .into(),
                ));
            }
            return run_background(&args.command, ctx).await;
        }
        let limit = TimeLimit::from_args(args.timeout, ctx)?;
        let dir = ctx.shell.cwd();
        let start_dir = dir_display(&ctx.workspace, &dir);
        // What is typed at a prompt is part of what runs: the user approves both.
        let shown = match &args.input {
            Some(input) => format!(
                "{}\n# typed when it waits for input: {input:?}",
                args.command
            ),
            None => args.command.clone(),
        };
        approve(ctx, &shown, &start_dir, dir).await?;

        let mut live = |text: String| ctx.output.send(&ctx.call_id, text);
        let mut keyboard = ctx.keyboards.attach(&ctx.call_id);
        let mut on_input_wait = |wait: InputWait| {
            ctx.output
                .waiting_for_input(&ctx.call_id, wait.program, wait.line)
        };
        let request = Request {
            command: &args.command,
            timeout: limit.duration,
            cancel: &ctx.cancel,
            on_output: &mut live,
            input: args.input.as_deref(),
            attendant: Some(Attendant {
                keys: &mut keyboard.keys,
                on_input_wait: &mut on_input_wait,
            }),
        };
        let ran = if args.isolated {
            ctx.shell.run_isolated(request).await
        } else {
            ctx.shell.run(request).await
        };
        let outcome = ran.map_err(|error| {
            ToolError::Failed(format!(
                "{error}. The command did not run. This is a problem with duet's shell, not \
                 with the command; if it persists, tell the user."
            ))
        })?;
        Report {
            outcome: &outcome,
            limit: &limit,
            isolated: args.isolated,
            ctx,
        }
        .render()
    }
}

/// Starts `command` as a background job after the same approval as any command, and
/// reports its id and first output.
async fn run_background(command: &str, ctx: &ToolCtx) -> Result<ToolOutput, ToolError> {
    // Refused before asking: the user is not asked about what cannot start.
    ctx.shell.jobs().check_room().map_err(job_refused)?;
    let dir = ctx.shell.cwd();
    let start_dir = dir_display(&ctx.workspace, &dir);
    approve(ctx, command, &start_dir, dir).await?;
    let started = ctx
        .shell
        .start_background(command)
        .await
        .map_err(job_refused)?;
    let jobs = ctx.shell.jobs();
    tokio::select! {
        settled = jobs.settle(&started.id, SETTLE_WINDOW) => settled.map_err(job_refused)?,
        // The job keeps running: an interrupt only cuts the wait short.
        () = ctx.cancel.cancelled() => {}
    }
    let read = jobs.read(&started.id).map_err(job_refused)?;
    let cwd = dir_display(&ctx.workspace, &started.cwd);
    let state = job_state(&read.view);
    let mut content = format!(
        "started {} in the background · pid {} · cwd {cwd} · {state}\n",
        started.id, started.pid
    );
    content.push_str(&job_body(&read, ctx));
    if read.view.state == JobState::Running {
        content.push_str(&format!(
            "Read its later output with shell_jobs {{\"action\": \"output\", \"id\": \"{id}\"}} \
             and stop it with {{\"action\": \"stop\", \"id\": \"{id}\"}}.\n",
            id = started.id
        ));
    }
    Ok(ToolOutput {
        content,
        summary: format!("{} · {state}", started.id),
        checks: None,
    })
}

/// A job error as the model reads it.
pub(super) fn job_refused(error: JobError) -> ToolError {
    match error {
        JobError::Full { .. } => ToolError::Refused(format!(
            "{error}. Stop one you no longer need with shell_jobs \
             {{\"action\": \"stop\", \"id\": ...}} first."
        )),
        JobError::NotFound { .. } => ToolError::InvalidArguments(format!(
            "{error}. List the jobs with shell_jobs {{\"action\": \"list\"}}."
        )),
        JobError::Start(_) => ToolError::Failed(format!(
            "{error}. Nothing runs in the background. This is a problem with duet's shell, \
             not with the command; if it persists, tell the user."
        )),
    }
}

/// `running 3.2 s`, `exited 0 after 1.0 s`, `killed by SIGTERM after 4.0 s`.
pub(super) fn job_state(view: &JobView) -> String {
    let took = format_duration(view.elapsed);
    match &view.state {
        JobState::Running => format!("running {took}"),
        JobState::Ended(exit) => match (exit.code, &exit.signal) {
            (Some(code), None) => format!("exited {code} after {took}"),
            _ => format!("ended ({exit}) after {took}"),
        },
    }
}

/// A job's new output, clipped like a command's, with a note on what was dropped.
pub(super) fn job_body(read: &JobOutput, ctx: &ToolCtx) -> String {
    let mut body = String::new();
    if read.lost > 0 {
        body.push_str(&format!(
            "Note: {} bytes of its output were dropped unread; only the last {} KiB are \
             kept.\n",
            read.lost,
            crate::shell::jobs::RING_BYTES / 1024
        ));
    }
    if read.text.is_empty() {
        body.push_str("(no new output)\n");
        return body;
    }
    let defaults = ClipLimits::default();
    let limits = ClipLimits {
        max_bytes: defaults.max_bytes - RESERVED_BYTES,
        max_lines: defaults.max_lines - RESERVED_LINES,
    };
    body.push_str(&clip(
        &read.text,
        limits,
        &ctx.shell.outputs_dir(),
        &ctx.call_id,
    ));
    if !body.ends_with('\n') {
        body.push('\n');
    }
    body
}

/// Asks before running; a rejection, or an interrupt while the decision is pending,
/// means nothing runs.
async fn approve(ctx: &ToolCtx, command: &str, cwd: &str, dir: PathBuf) -> Result<(), ToolError> {
    let action = Action::RunCommand {
        command: command.to_string(),
        cwd: cwd.to_string(),
        dir,
    };
    let reason = match ctx.approve(action).await {
        None => return Err(interrupted("shell")),
        Some(Decision::Approve) => return Ok(()),
        Some(Decision::Reject { reason }) => reason,
        // Hunks belong to file edits; a partial answer to a command is not a yes.
        Some(Decision::ApproveHunks { reason, .. }) => reason,
        Some(Decision::Edited { .. }) => Some("the user edited the command instead".into()),
    };
    Err(ToolError::Refused(format!(
        "the command was not run: {}",
        reason.as_deref().unwrap_or("the user rejected it")
    )))
}

/// The call's time limit, capped at the configured maximum.
struct TimeLimit {
    duration: Duration,
    /// The limit asked for was above the maximum.
    capped: bool,
}

impl TimeLimit {
    fn from_args(seconds: Option<f64>, ctx: &ToolCtx) -> Result<Self, ToolError> {
        let config = ctx.shell.config();
        let Some(seconds) = seconds else {
            return Ok(Self {
                duration: config.default_timeout,
                capped: false,
            });
        };
        if !seconds.is_finite() || seconds <= 0.0 {
            return Err(ToolError::InvalidArguments(format!(
                "`timeout` must be a positive number of seconds (at most {}), got {seconds}. \
                 Omit it for the default of {}.",
                format_duration(config.max_timeout),
                format_duration(config.default_timeout)
            )));
        }
        let max = config.max_timeout;
        let capped = seconds > max.as_secs_f64();
        Ok(Self {
            duration: if capped {
                max
            } else {
                Duration::from_secs_f64(seconds)
            },
            capped,
        })
    }
}

/// Turns an [`Outcome`] into the tool's result.
struct Report<'a> {
    outcome: &'a Outcome,
    limit: &'a TimeLimit,
    isolated: bool,
    ctx: &'a ToolCtx,
}

impl Report<'_> {
    fn render(&self) -> Result<ToolOutput, ToolError> {
        let outcome = self.outcome;
        let took = format_duration(outcome.duration);
        let cwd = self.cwd();
        match &outcome.end {
            End::Exited { code } => {
                let status = format!("exit {code} · {took}");
                Ok(self.normal(&status, format!("{status} · cwd {cwd}")))
            }
            End::ShellExited(exit) => {
                let status = match exit.code {
                    Some(code) => format!("exit {code} · {took}"),
                    None => format!("{exit} · {took}"),
                };
                let mut first = format!("{status} · the shell itself exited ({exit})");
                if !self.isolated {
                    first.push_str(&format!(
                        "; the next call starts a new shell in {cwd}, so cwd, environment and \
                         background jobs were reset (`background: true` commands keep running)"
                    ));
                }
                Ok(self.normal(&status, first))
            }
            End::TimedOut { recovery } => Err(self.stopped(
                format!(
                    "stopped after {took}: the command was still running at its time limit of {}",
                    format_duration(self.limit.duration)
                ),
                *recovery,
                "If it needs longer, call again with a larger `timeout` (at most 600 s). For a \
                 server or watcher, start it with `background: true` and read its output with \
                 `shell_jobs` instead.",
            )),
            End::WaitingForInput { program, recovery } => Err(self.stopped(
                format!(
                    "stopped after {took}: `{program}` was waiting for input from the \
                     terminal, and nothing can be typed there"
                ),
                *recovery,
                "Run it non-interactively: pass flags that answer its questions (`-y`, \
                 `--yes`, `--no-input`, `-m \"message\"`), feed input through a pipe or a \
                 heredoc (`printf 'y\\n' | cmd`, `python3 - <<'EOF' ... EOF`), or redirect \
                 stdin from /dev/null.",
            )),
            End::Interrupted { recovery } => Err(self.stopped(
                format!("interrupted by the user after {took}"),
                *recovery,
                "Do not run it again unless the user asks.",
            )),
        }
    }

    /// A command that ran to its end: the first line, notes, then the output.
    fn normal(&self, summary: &str, first_line: String) -> ToolOutput {
        let mut content = first_line;
        if self.isolated {
            content.push_str(" · isolated shell, discarded");
        }
        content.push('\n');
        content.push_str(&self.notes());
        content.push_str(&self.body());
        let mut summary = format!("{summary} · {}", output_size(&self.outcome.output));
        let moved = &self.outcome.blocked.moved;
        if !moved.is_empty() {
            let paths: Vec<String> = moved
                .iter()
                .map(|path| path.display().to_string())
                .collect();
            summary.push_str(&format!(" · blocked: {}", paths.join(", ")));
        }
        ToolOutput {
            content,
            summary,
            checks: None,
        }
    }

    /// A command that was stopped: what happened, what it cost, advice, last output.
    fn stopped(&self, what: String, recovery: Recovery, advice: &str) -> ToolError {
        let shell = match (self.isolated, recovery) {
            (true, _) => "the isolated shell was discarded".to_string(),
            (false, Recovery::Kept) => "the shell was interrupted (cwd and env kept)".to_string(),
            (false, Recovery::Restarted) => format!(
                "the shell did not stop and was restarted (cwd and env lost; the next call \
                 starts in {})",
                self.cwd()
            ),
        };
        let last_output = if self.outcome.output.is_empty() {
            "no output".to_string()
        } else {
            format!("last output:\n{}", self.body())
        };
        ToolError::Failed(format!(
            "{what}; {shell} · cwd {}\n{}{advice}\n{last_output}",
            self.cwd(),
            self.notes()
        ))
    }

    /// Lines about the circumstances of the call, each ending in a newline.
    fn notes(&self) -> String {
        let mut notes = String::new();
        if self.limit.capped {
            notes.push_str(&format!(
                "Note: the time limit was capped at {}.\n",
                format_duration(self.limit.duration)
            ));
        }
        let blocked = &self.outcome.blocked;
        if !blocked.moved.is_empty() {
            let paths: Vec<String> = blocked
                .moved
                .iter()
                .map(|path| path.display().to_string())
                .collect();
            let dirs: Vec<String> = blocked
                .kept_in
                .iter()
                .map(|dir| dir.display().to_string())
                .collect();
            let kept_in = if dirs.is_empty() {
                String::new()
            } else {
                format!(" into {}", dirs.join(" and "))
            };
            notes.push_str(&format!(
                "Blocked: this command, or a job an earlier one left running, created \
                 protected paths ({}). No command may create them, so duet moved them out of the workspace{kept_in} (the user can put \
                 them back), and the next command runs in a new shell (cwd, environment and \
                 jobs are reset). A protected file can only be written with the write tool, \
                 which asks the user; do not try to create it another way.\n",
                paths.join(", ")
            ));
        }
        if !blocked.stuck.is_empty() {
            let paths: Vec<String> = blocked
                .stuck
                .iter()
                .map(|(path, why)| format!("{} ({why})", path.display()))
                .collect();
            notes.push_str(&format!(
                "Note: this command created protected paths duet could not move away: {}. \
                 They are read-only from the next command on, which runs in a new shell. \
                 Tell the user what you created there and why.\n",
                paths.join("; ")
            ));
        }
        if self.outcome.replaced_shell {
            notes.push_str(
                "Note: the previous shell could not be reused, so this ran in a new shell \
                 started in the workspace root; earlier cwd, environment and background jobs \
                 are gone (`background: true` commands keep running).\n",
            );
        }
        notes
    }

    /// The output, clipped to leave room for the rest of the result, or a note that
    /// there was none.
    fn body(&self) -> String {
        let output = &self.outcome.output;
        if output.is_empty() {
            return "(no output)\n".into();
        }
        let defaults = ClipLimits::default();
        let limits = ClipLimits {
            max_bytes: defaults.max_bytes - RESERVED_BYTES,
            max_lines: defaults.max_lines - RESERVED_LINES,
        };
        let mut body = clip(
            output,
            limits,
            &self.ctx.shell.outputs_dir(),
            &self.ctx.call_id,
        );
        if !body.ends_with('\n') {
            body.push('\n');
        }
        body
    }

    fn cwd(&self) -> String {
        dir_display(&self.ctx.workspace, &self.outcome.cwd)
    }
}

/// A directory as the model and user see it: `./` for the root, `src/` inside it,
/// the absolute path outside it.
fn dir_display(workspace: &Workspace, dir: &Path) -> String {
    let shown = workspace.display(dir);
    if shown.ends_with('/') {
        shown
    } else {
        format!("{shown}/")
    }
}

/// `0.3 s`, `12.0 s`, `2 min 5 s`.
pub(super) fn format_duration(duration: Duration) -> String {
    let seconds = duration.as_secs_f64();
    if seconds < 60.0 {
        format!("{seconds:.1} s")
    } else {
        let whole = duration.as_secs();
        format!("{} min {} s", whole / 60, whole % 60)
    }
}

fn output_size(output: &str) -> String {
    match output.lines().count() {
        0 => "no output".into(),
        1 => "1 line".into(),
        lines => format!("{} lines", super::text::thousands(lines as u64)),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use pretty_assertions::assert_eq;
    use serde_json::json;
    use tokio::sync::mpsc;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::policy::{ApprovalMode, ApprovalRequest, Approver};
    use crate::shell::UserKeys;
    use crate::shell::{Shell, ShellConfig};
    use crate::tools::test_support::{Fixture, invalid, refused};
    use crate::tools::{Live, OutputSink};

    /// A fixture whose shell gives up on silent input waits quickly.
    fn fixture(mode: ApprovalMode) -> Fixture {
        fixture_waiting(mode, Duration::from_millis(500))
    }

    /// A fixture whose shell stops a command waiting for input after `input_wait`.
    fn fixture_waiting(mode: ApprovalMode, input_wait: Duration) -> Fixture {
        let mut fixture = Fixture::with_mode(mode);
        let config = ShellConfig {
            input_wait: Some(input_wait),
            interrupt_grace: Duration::from_millis(500),
            program: Some("bash".into()),
            ..ShellConfig::default()
        };
        fixture.ctx.shell = Arc::new(Shell::new(fixture.root(), config));
        fixture
    }

    fn failed(result: Result<ToolOutput, ToolError>) -> String {
        match result {
            Err(ToolError::Failed(message)) => message,
            other => panic!("expected a failure, got {other:?}"),
        }
    }

    /// The first line with the duration replaced by `T`, and the rest.
    fn split_result(content: &str) -> (String, String) {
        let (first, rest) = content.split_once('\n').unwrap();
        let parts: Vec<&str> = first.split(" · ").collect();
        assert!(parts[1].ends_with(" s"), "{first}");
        let first = [parts[0], "T"]
            .into_iter()
            .chain(parts[2..].iter().copied())
            .collect::<Vec<_>>()
            .join(" · ");
        (first, rest.to_string())
    }

    #[tokio::test]
    async fn results_state_exit_code_duration_and_cwd() {
        let f = fixture(ApprovalMode::Auto);
        let out = f
            .ok(
                &ShellTool,
                json!({"command": "mkdir -p src/app && cd src/app && echo hi"}),
            )
            .await;
        assert_eq!(
            split_result(&out),
            ("exit 0 · T · cwd src/app/".into(), "hi\n".into())
        );
        let out = f
            .ok(&ShellTool, json!({"command": "cd ../..; false"}))
            .await;
        assert_eq!(
            split_result(&out),
            ("exit 1 · T · cwd ./".into(), "(no output)\n".into())
        );
        let outcome = f
            .call(&ShellTool, json!({"command": "echo bye; exit 3"}))
            .await
            .unwrap();
        assert!(
            outcome.content.starts_with("exit 3 · ")
                && outcome
                    .content
                    .contains("the shell itself exited (exit status 3)")
                && outcome
                    .content
                    .contains("cwd, environment and background jobs were reset")
                && outcome.content.ends_with("\nbye\nexit\n"),
            "{}",
            outcome.content
        );
        assert!(
            outcome.summary.starts_with("exit 3 · "),
            "{}",
            outcome.summary
        );
    }

    #[tokio::test]
    async fn read_only_mode_refuses_rm_and_allows_ls() {
        let f = fixture(ApprovalMode::ReadOnly);
        f.file("keep.txt", "data");
        let message = refused(f.call(&ShellTool, json!({"command": "rm keep.txt"})).await);
        assert!(
            message.contains("not run") && message.contains("read-only"),
            "{message}"
        );
        assert_eq!(f.text("keep.txt"), "data");
        let out = f.ok(&ShellTool, json!({"command": "ls"})).await;
        assert!(out.ends_with("\nkeep.txt\n"), "{out}");
    }

    #[tokio::test]
    async fn ten_megabytes_are_clipped_and_saved_in_full() {
        let f = fixture(ApprovalMode::Auto);
        let out = f
            .ok(
                &ShellTool,
                json!({"command": "head -c 10000000 /dev/zero | tr '\\0' y | fold -w 100"}),
            )
            .await;
        let limits = ClipLimits::default();
        assert!(out.len() <= limits.max_bytes, "{}", out.len());
        assert!(out.lines().count() <= limits.max_lines);
        assert!(out.starts_with("exit 0 · "), "{}", &out[..100]);
        let marker = out.lines().find(|line| line.starts_with("[…")).unwrap();
        let saved = marker
            .split("full output saved to ")
            .nth(1)
            .unwrap()
            .trim_end_matches(" (open it with `read`)]");
        let full = std::fs::read_to_string(saved).unwrap();
        assert_eq!(full.len(), 10_100_000);
        assert!(full.lines().all(|line| line == "y".repeat(100)));
        // The agent's own clipping leaves the result alone.
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(clip(&out, limits, dir.path(), "again"), out);
    }

    #[tokio::test]
    async fn a_time_limit_is_an_error_that_says_what_happened_and_the_next_call_works() {
        let f = fixture(ApprovalMode::Auto);
        let message = failed(
            f.call(
                &ShellTool,
                json!({"command": "echo started; sleep 600", "timeout": 0.5}),
            )
            .await,
        );
        let first = message.lines().next().unwrap();
        assert!(first.starts_with("stopped after 0."), "{message}");
        assert!(
            first.ends_with(
                "still running at its time limit of 0.5 s; the shell was interrupted (cwd and \
                 env kept) · cwd ./"
            ),
            "{message}"
        );
        assert!(message.ends_with("last output:\nstarted\n"), "{message}");
        assert!(message.contains("larger `timeout`"), "{message}");
        assert!(
            f.ok(&ShellTool, json!({"command": "echo ok"}))
                .await
                .ends_with("\nok\n")
        );
    }

    // Input waits are detected through Linux's /proc.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn waiting_for_input_is_an_error_that_teaches_non_interactive_use() {
        let f = fixture(ApprovalMode::Auto);
        let message = failed(f.call(&ShellTool, json!({"command": "read answer"})).await);
        assert!(
            message.contains("`bash` was waiting for input"),
            "{message}"
        );
        assert!(message.contains("non-interactively"), "{message}");
        assert!(message.ends_with("no output"), "{message}");
    }

    #[tokio::test]
    async fn bad_arguments_are_explained() {
        let f = fixture(ApprovalMode::Auto);
        let message = invalid(f.call(&ShellTool, json!({"command": "  "})).await);
        assert!(message.contains("`command` is empty"), "{message}");
        for timeout in [json!(0), json!(-3)] {
            let message = invalid(
                f.call(&ShellTool, json!({"command": "ls", "timeout": timeout}))
                    .await,
            );
            assert!(message.contains("positive number of seconds"), "{message}");
        }
        let out = f
            .ok(
                &ShellTool,
                json!({"command": "echo capped", "timeout": 9999}),
            )
            .await;
        assert!(
            out.contains("\nNote: the time limit was capped at 10 min 0 s.\ncapped\n"),
            "{out}"
        );
    }

    /// Approves, but only after the user interrupted.
    struct LateApprover {
        cancel: CancellationToken,
    }

    #[async_trait::async_trait]
    impl Approver for LateApprover {
        async fn decide(&self, _request: ApprovalRequest) -> Decision {
            self.cancel.cancel();
            Decision::Approve
        }
    }

    #[tokio::test]
    async fn an_interrupt_during_approval_runs_nothing() {
        let mut f = fixture(ApprovalMode::Auto);
        f.ctx.approver = Arc::new(LateApprover {
            cancel: f.ctx.cancel.clone(),
        });
        let message = failed(f.call(&ShellTool, json!({"command": "touch ran"})).await);
        assert!(message.contains("interrupted"), "{message}");
        assert!(!f.path("ran").exists());
    }

    #[tokio::test]
    async fn an_interrupt_while_running_stops_the_command_promptly() {
        let f = fixture(ApprovalMode::Auto);
        let cancel = f.ctx.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            cancel.cancel();
        });
        let started = std::time::Instant::now();
        let message = failed(
            f.call(&ShellTool, json!({"command": "echo busy; sleep 60"}))
                .await,
        );
        // Far sooner than the 60 s sleep.
        assert!(started.elapsed() < Duration::from_secs(20));
        assert!(
            message.starts_with("interrupted by the user after "),
            "{message}"
        );
        assert!(message.ends_with("last output:\nbusy\n"), "{message}");
    }

    #[tokio::test]
    async fn isolated_calls_leave_the_main_cwd_alone() {
        let f = fixture(ApprovalMode::Auto);
        f.file("sub/file.txt", "x");
        let out = f
            .ok(
                &ShellTool,
                json!({"command": "cd sub && ls", "isolated": true}),
            )
            .await;
        assert_eq!(
            split_result(&out),
            (
                "exit 0 · T · cwd sub/ · isolated shell, discarded".into(),
                "file.txt\n".into()
            )
        );
        let out = f.ok(&ShellTool, json!({"command": "pwd"})).await;
        assert!(
            out.starts_with("exit 0 · ") && out.contains(" · cwd ./\n"),
            "{out}"
        );
    }

    #[tokio::test]
    async fn live_output_arrives_before_the_result() {
        let mut f = fixture(ApprovalMode::Auto);
        let (sender, mut receiver) = mpsc::unbounded_channel();
        f.ctx.output = OutputSink::new(sender);
        let ctx = f.ctx.clone();
        let call = tokio::spawn(async move {
            ShellTool
                .run(json!({"command": "echo first; sleep 1; echo second"}), &ctx)
                .await
        });
        let chunk = receiver.recv().await.unwrap();
        assert_eq!(chunk.call_id, "call_test");
        assert_eq!(chunk.live, Live::Output("first\n".to_string()));
        assert!(!call.is_finished(), "the chunk came only with the result");
        let result = call.await.unwrap().unwrap();
        assert!(result.content.ends_with("\nfirst\nsecond\n"));
        assert_eq!(
            receiver.recv().await.unwrap().live,
            Live::Output("second\n".to_string())
        );
    }

    /// Runs `command` with live output, and returns its chunks' receiver and the call.
    fn run_watched(
        f: &Fixture,
        command: &str,
    ) -> (
        mpsc::UnboundedReceiver<crate::tools::OutputChunk>,
        tokio::task::JoinHandle<Result<ToolOutput, ToolError>>,
    ) {
        let (sender, receiver) = mpsc::unbounded_channel();
        let mut ctx = f.ctx.clone();
        ctx.output = OutputSink::new(sender);
        let command = command.to_string();
        let call =
            tokio::spawn(async move { ShellTool.run(json!({ "command": command }), &ctx).await });
        (receiver, call)
    }

    /// The first wait for input the call shows: its program and prompt line.
    async fn first_wait(
        receiver: &mut mpsc::UnboundedReceiver<crate::tools::OutputChunk>,
    ) -> (String, String) {
        loop {
            let chunk = receiver
                .recv()
                .await
                .expect("the call ended without waiting");
            if let Live::WaitingForInput { program, line } = chunk.live {
                return (program, line);
            }
        }
    }

    #[tokio::test]
    async fn the_user_answers_a_prompt_the_card_shows() {
        let f = fixture_waiting(ApprovalMode::Auto, Duration::from_secs(10));
        let (mut receiver, call) = run_watched(
            &f,
            "read -r -p 'Proceed? [y/N] ' answer; echo \"answer=$answer\" > answered",
        );
        let (program, line) = first_wait(&mut receiver).await;
        assert_eq!(
            (program.as_str(), line.as_str()),
            ("bash", "Proceed? [y/N]")
        );
        let keys = &f.ctx.keyboards;
        assert!(keys.send("call_test", UserKeys::Focus));
        assert!(keys.send("call_test", UserKeys::Type(b"y\r".to_vec())));
        let result = call.await.unwrap().unwrap();
        assert!(
            result.content.contains("Proceed? [y/N] y"),
            "{}",
            result.content
        );
        let answered = std::fs::read_to_string(f.root().join("answered")).unwrap();
        assert_eq!(answered, "answer=y\n");
        assert!(
            !keys.send("call_test", UserKeys::Focus),
            "keys outlived the call"
        );
    }

    #[tokio::test]
    async fn a_command_with_the_users_attention_is_not_stopped_for_waiting() {
        let f = fixture_waiting(ApprovalMode::Auto, Duration::from_secs(1));
        let (mut receiver, call) = run_watched(&f, "read -r -p 'Name: ' name; echo \"hi $name\"");
        first_wait(&mut receiver).await;
        f.ctx.keyboards.send("call_test", UserKeys::Focus);
        tokio::time::sleep(Duration::from_millis(2500)).await;
        assert!(!call.is_finished(), "stopped while the user had it");
        f.ctx
            .keyboards
            .send("call_test", UserKeys::Type(b"Ada\r".to_vec()));
        let result = call.await.unwrap().unwrap();
        assert!(result.content.contains("hi Ada"), "{}", result.content);
    }

    #[tokio::test]
    async fn a_command_the_user_turned_away_from_is_stopped_for_waiting_again() {
        let f = fixture_waiting(ApprovalMode::Auto, Duration::from_secs(1));
        let (mut receiver, call) = run_watched(&f, "read -r -p 'Name: ' name; echo \"hi $name\"");
        first_wait(&mut receiver).await;
        f.ctx.keyboards.send("call_test", UserKeys::Focus);
        f.ctx.keyboards.send("call_test", UserKeys::Release);
        let error = call.await.unwrap().unwrap_err();
        assert!(error.to_string().contains("waiting for input"), "{error}");
    }

    #[tokio::test]
    async fn git_log_in_a_repository_does_not_hang_on_a_pager() {
        let f = fixture(ApprovalMode::Auto);
        let setup = "git init -q && for n in 1 2 3; do git -c user.name=t -c \
                     user.email=t@example.com commit -q --allow-empty -m \"commit $n\"; done";
        f.ok(&ShellTool, json!({"command": setup})).await;
        let out = f
            .ok(&ShellTool, json!({"command": "git log", "timeout": 5}))
            .await;
        assert!(
            out.contains("    commit 3\n") && out.ends_with("    commit 1\n"),
            "{out}"
        );
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(format_duration(Duration::from_millis(340)), "0.3 s");
        assert_eq!(format_duration(Duration::from_secs(59)), "59.0 s");
        assert_eq!(format_duration(Duration::from_secs(125)), "2 min 5 s");
    }
}
