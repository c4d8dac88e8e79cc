//! `duet exec --done CMD`: work on a fresh branch until a command passes, checked by
//! duet itself, and propose the result as one commit with a PR description.
//!
//! Owns: preparing the branch and `.duet/notes.md`, the task text the model gets, what
//! the run learns from the agent's events (the last message, the write and edit calls),
//! running the done command, the verdict, the commit, `.duet/PR.md` and the exit status.
//! duet's files in `.duet/` are written through a handle of the workspace root
//! ([`crate::beneath`]): a link planted at one of them is replaced, never written
//! through, and the run says so; a `.duet` that is a link is refused.
//! Does not own: the checks themselves ([`super::evidence`]), git plumbing
//! ([`crate::git::work_branch`]) or the agent loop ([`super::run`]).
//! Invariant: the model's word decides nothing: a commit is made only after duet ran
//! the done command itself and every evidence check passed on exactly the tree it
//! commits (or, with `--draft-on-cap`, for a budget stop, marked DRAFT).
//!
//! Exit status ([`super::status`]): 0 done and verified; 1 error (including a refused
//! dirty tree or a failed model call); 2 stopped by a budget limit or a detected loop
//! (a DRAFT commit with `--draft-on-cap`); 3 an evidence check failed; 130 interrupted.

use std::collections::HashMap;
use std::io::{Read as _, Seek as _, Write};
use std::path::{Component, Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use git2::Oid;
use tokio::sync::mpsc;

use super::evidence::{self, Caps, Check, CommandResult, Receipt, Violation};
use super::{Approvals, Format, Outcome, status};
use crate::agent::{AgentHandle, Event, NOTES_FILE, TurnOutcome};
use crate::beneath::{self, Replaced, Root};
use crate::git::work_branch::{BranchStart, FileChange, WorkBranchError, WorkRepo, slug};
use crate::policy::ProtectedPaths;
use crate::process_group::{self, ProcessGroup};
use crate::shell::sandbox::Sandbox;

/// duet's own files in the workspace, kept out of git by `.git/info/exclude`.
pub const DUET_DIR: &str = ".duet";
/// The notes file's name in [`DUET_DIR`]: the agent's [`NOTES_FILE`], which it gives
/// the model again after every compaction.
const NOTES_FILE_NAME: &str = "notes.md";
/// Lines of the done command's output shown in the report and PR.md.
const OUTPUT_TAIL_LINES: usize = 40;
/// How long a timed-out done command has to stop on SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(1);

/// The `--done` flags of `duet exec`.
#[derive(clap::Args, Clone, Debug, Default, PartialEq)]
pub struct DoneArgs {
    /// Work on a new branch `duet/<task>` until this shell command passes (duet runs it
    /// itself at the end), then commit there and write .duet/PR.md.
    #[arg(long, value_name = "CMD", conflicts_with = "resume")]
    pub done: Option<String>,
    /// The task: a file to read it from, or the text itself (instead of the positional
    /// task).
    #[arg(
        long = "task",
        id = "task_source",
        value_name = "FILE|TEXT",
        requires = "done",
        conflicts_with = "task"
    )]
    pub task_source: Option<String>,
    /// Start even with uncommitted changes; they become part of duet's commit.
    #[arg(long, requires = "done")]
    pub allow_dirty: bool,
    /// Fail the run when more than N files changed.
    #[arg(long, value_name = "N", requires = "done")]
    pub max_changed_files: Option<usize>,
    /// Fail the run when more than N lines changed (added plus removed).
    #[arg(long, value_name = "N", requires = "done")]
    pub max_changed_lines: Option<usize>,
    /// When a budget limit stops the task, still commit and write PR.md, marked DRAFT.
    #[arg(long, requires = "done")]
    pub draft_on_cap: bool,
    /// Give the done command this many seconds before it counts as failed.
    #[arg(long, value_name = "SECS", default_value_t = 600, requires = "done")]
    pub done_timeout: u64,
}

impl DoneArgs {
    /// The task `--task` gives: the named file's contents, or the value itself.
    pub fn task_text(&self) -> Option<std::io::Result<String>> {
        let value = self.task_source.as_deref()?;
        let path = Path::new(value);
        Some(if path.is_file() {
            std::fs::read_to_string(path)
        } else {
            Ok(value.to_string())
        })
    }

    /// The settings of a `--done` run, when `--done` was given.
    pub fn options(&self, protected: ProtectedPaths) -> Option<DoneOptions> {
        Some(DoneOptions {
            command: self.done.clone()?,
            timeout: Duration::from_secs(self.done_timeout),
            allow_dirty: self.allow_dirty,
            caps: Caps {
                max_files: self.max_changed_files,
                max_lines: self.max_changed_lines,
            },
            draft_on_cap: self.draft_on_cap,
            protected,
        })
    }
}

/// Everything a `--done` run is told.
#[derive(Clone, Debug)]
pub struct DoneOptions {
    pub command: String,
    pub timeout: Duration,
    pub allow_dirty: bool,
    pub caps: Caps,
    pub draft_on_cap: bool,
    /// The policy's protected paths, `[policy] protected` included.
    pub protected: ProtectedPaths,
}

/// Why a `--done` run could not go on.
#[derive(Debug, thiserror::Error)]
pub enum DoneError {
    #[error(transparent)]
    Branch(#[from] WorkBranchError),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", .path.display())]
    DuetFile {
        path: PathBuf,
        source: beneath::Error,
    },
    #[error("cannot run the done command `{command}`: {source}")]
    Command {
        command: String,
        source: std::io::Error,
    },
    #[error("cannot print: {0}")]
    Print(#[from] std::io::Error),
}

/// How a `--done` run ended, mapped to the process exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DoneOutcome {
    /// The done command passed and every check held; committed.
    Verified,
    /// A budget limit or the loop detector stopped the task.
    Stopped,
    /// The model finished, but a check failed; nothing was committed.
    ChecksFailed,
    Failed,
    Interrupted,
}

impl DoneOutcome {
    pub fn exit_code(self) -> ExitCode {
        ExitCode::from(match self {
            DoneOutcome::Verified => status::DONE,
            DoneOutcome::Failed => status::ERROR,
            DoneOutcome::Stopped => status::STOPPED,
            DoneOutcome::ChecksFailed => status::CHECKS_FAILED,
            DoneOutcome::Interrupted => status::INTERRUPTED,
        })
    }
}

/// A workspace ready for the agent: on its own branch, with notes started.
pub struct Prepared {
    repo: WorkRepo,
    start: BranchStart,
    /// The work tree as it was when the branch started: the start commit's tree, plus
    /// the user's own uncommitted changes under `--allow-dirty`. The checks judge what
    /// changed since this, so the user's changes are committed but not held against
    /// the model.
    baseline: Oid,
    workspace: PathBuf,
    files: DuetFiles,
    task: String,
}

impl Prepared {
    /// The branch duet works on.
    pub fn branch(&self) -> &str {
        &self.start.branch
    }
}

/// Keeps `.duet/` out of git, refuses a dirty tree (unless allowed), switches to a new
/// `duet/<slug>` branch and writes `.duet/notes.md`.
pub fn prepare(workspace: &Path, task: &str, options: &DoneOptions) -> Result<Prepared, DoneError> {
    let repo = WorkRepo::open(workspace)?;
    repo.exclude(&format!("{DUET_DIR}/"))?;
    if !options.allow_dirty {
        repo.ensure_clean()?;
    }
    let start = repo.start_branch(&slug(task))?;
    let baseline = repo.work_tree()?;
    let notes = format!(
        "# duet notes\n\nBranch: {} (from {}). Done when `{}` exits 0.\n\
         Keep the plan and notes for this task here; this file is not committed.\n\n\
         ## Task\n\n{}\n\n## Plan\n\n",
        start.branch,
        start.previous.as_deref().unwrap_or("a detached HEAD"),
        options.command,
        task.trim()
    );
    let files = DuetFiles::open(workspace)?;
    files.write(NOTES_FILE_NAME, &notes)?;
    Ok(Prepared {
        repo,
        start,
        baseline,
        workspace: workspace.to_path_buf(),
        files,
        task: task.to_string(),
    })
}

/// The task as the model receives it: the user's, and how it will be judged.
pub fn model_task(task: &str, command: &str) -> String {
    format!(
        "{}\n\n---\nYou work on the git branch duet created for this task. Keep your plan and \
         notes in {NOTES_FILE} (it is not committed, and you get it again whenever the \
         conversation is compacted). When you stop, duet runs `{command}` \
         in the workspace itself: the task is done only if it exits 0. Do not change tests, CI \
         configuration or protected files unless the task names them, and do not skip or \
         filter tests; duet checks the diff and fails the run if you do.",
        task.trim_end()
    )
}

/// Runs the task, checks the result and proposes it. The transcript goes to `out`; the
/// verdict too, or to stderr with `--json` so stdout stays one JSON object per line.
pub async fn run(
    handle: AgentHandle,
    events: mpsc::Receiver<Event>,
    prepared: Prepared,
    options: &DoneOptions,
    format: Format,
    approvals: Approvals,
    out: &mut dyn Write,
) -> Result<DoneOutcome, DoneError> {
    let mut log = WorkLog::default();
    let task = model_task(&prepared.task, &options.command);
    // The done command runs project code: in the agent's sandbox, like its shell.
    let sandbox = handle.sandbox();
    let outcome = super::run_observed(handle, events, task, format, approvals, out, &mut |event| {
        log.observe(event)
    })
    .await?;
    let mut stderr = std::io::stderr();
    let report: &mut dyn Write = match format {
        Format::Jsonl => &mut stderr,
        Format::Human { .. } => out,
    };
    let branch = prepared.branch().to_string();
    match outcome {
        Outcome::Failed | Outcome::Interrupted => {
            prepared.files.report_notices(report)?;
            writeln!(
                report,
                "duet: any changes are left uncommitted on {branch}."
            )?;
            return Ok(if outcome == Outcome::Failed {
                DoneOutcome::Failed
            } else {
                DoneOutcome::Interrupted
            });
        }
        Outcome::Stopped if !options.draft_on_cap => {
            prepared.files.report_notices(report)?;
            writeln!(
                report,
                "duet: stopped before the task was done; the changes are left uncommitted on \
                 {branch} (--draft-on-cap commits them as a draft)."
            )?;
            return Ok(DoneOutcome::Stopped);
        }
        Outcome::Stopped | Outcome::Finished => {}
    }
    let draft = outcome == Outcome::Stopped;
    let mut verdict = verify(&prepared, options, &log, sandbox.as_deref()).await?;
    let committed = propose(&prepared, options, &log, &mut verdict, draft)?;
    let pr = pr_description(&prepared, options, &log, &verdict, committed, draft);
    let pr_path = prepared.files.write("PR.md", &pr)?;
    // The done command's output and the file names are the project's: cleaned of
    // terminal control before they reach the terminal.
    let verdict_text = verdict_lines(&verdict, committed, &branch, &pr_path, draft);
    writeln!(report, "{}", crate::terminal_text::sanitize(&verdict_text))?;
    prepared.files.report_notices(report)?;
    Ok(if draft {
        DoneOutcome::Stopped
    } else if verdict.violations.is_empty() {
        DoneOutcome::Verified
    } else {
        DoneOutcome::ChecksFailed
    })
}

/// What duet found when it checked the work.
struct Verdict {
    result: CommandResult,
    output: String,
    /// The tree that was checked.
    tree: Oid,
    changes: Vec<FileChange>,
    diff_stat: String,
    receipts: Vec<Receipt>,
    violations: Vec<Violation>,
}

/// Runs the done command, then checks the tree as it is right after.
async fn verify(
    prepared: &Prepared,
    options: &DoneOptions,
    log: &WorkLog,
    sandbox: Option<&Sandbox>,
) -> Result<Verdict, DoneError> {
    let (result, output) =
        run_done_command(&prepared.workspace, &prepared.files, options, sandbox).await?;
    let repo = &prepared.repo;
    let tree = repo.work_tree()?;
    let start = prepared.start.commit;
    let changes = repo.changes(start, tree)?;
    let mut violations: Vec<Violation> = result.violation(&options.command).into_iter().collect();
    violations.extend(evidence::check_changes(
        &repo.changes_between_trees(prepared.baseline, tree)?,
        &prepared.task,
        &options.protected,
        options.caps,
    ));
    let writes = log.writes_by_path(repo.root(), &prepared.workspace);
    let receipts = changes
        .iter()
        .map(|change| {
            let content = |blob: Option<Oid>| blob.map(|id| repo.blob(id)).transpose();
            Ok(Receipt::new(
                &change.path,
                content(change.before)?.as_deref(),
                content(change.after)?.as_deref(),
                writes.get(&change.path).cloned().unwrap_or_default(),
            ))
        })
        .collect::<Result<Vec<_>, WorkBranchError>>()?;
    Ok(Verdict {
        result,
        output,
        tree,
        diff_stat: repo.diff_stat(start, tree)?,
        changes,
        receipts,
        violations,
    })
}

/// Commits the checked tree when it passed (or as a draft), unless it changed since
/// the check; returns the commit.
fn propose(
    prepared: &Prepared,
    options: &DoneOptions,
    log: &WorkLog,
    verdict: &mut Verdict,
    draft: bool,
) -> Result<Option<Oid>, DoneError> {
    let nothing_changed = verdict.changes.is_empty();
    if nothing_changed || (!draft && !verdict.violations.is_empty()) {
        return Ok(None);
    }
    let message = commit_message(prepared, options, log, verdict, draft);
    match prepared.repo.commit(verdict.tree, &message) {
        Ok(commit) => Ok(Some(commit)),
        Err(WorkBranchError::ChangedAfterCheck) => {
            verdict.violations.push(Violation {
                check: Check::UnchangedSinceCheck,
                detail: "files changed after the done command's final run".into(),
            });
            Ok(None)
        }
        Err(error) => Err(error.into()),
    }
}

fn commit_message(
    prepared: &Prepared,
    options: &DoneOptions,
    log: &WorkLog,
    verdict: &Verdict,
    draft: bool,
) -> String {
    let title = title(&prepared.task);
    let mut message = if draft {
        format!("duet (draft): {title}\n")
    } else {
        format!("duet: {title}\n")
    };
    if let Some(summary) = log.last_message.as_deref() {
        message.push_str(&format!("\n{}\n", summary.trim()));
    }
    let how = match verdict.result.violation(&options.command) {
        None => format!("`{}` passed", options.command),
        Some(violation) => violation.detail,
    };
    message.push_str(&format!("\nDone command: {how}.\n"));
    message
}

/// The first line of the task, at most 72 characters.
fn title(task: &str) -> String {
    let line = task.trim().lines().next().unwrap_or_default();
    match line.char_indices().nth(72) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

/// Runs `sh -c CMD` in the workspace, inside `sandbox`, with stdout and stderr into
/// `.duet/done.log`, stopped after the timeout together with everything it started;
/// returns how it ended and what it printed.
async fn run_done_command(
    workspace: &Path,
    files: &DuetFiles,
    options: &DoneOptions,
    sandbox: Option<&Sandbox>,
) -> Result<(CommandResult, String), DoneError> {
    let command_error = |source| DoneError::Command {
        command: options.command.clone(),
        source,
    };
    let mut log_back = files.create("done.log")?;
    let log = log_back.try_clone().map_err(command_error)?;
    let log_for_stderr = log.try_clone().map_err(command_error)?;
    let (mut command, _report_dir) = match sandbox {
        Some(sandbox) => sandbox
            .command("sh", &["-c", &options.command], workspace, &[])
            .await
            .map_err(|error| command_error(std::io::Error::other(error)))?,
        None => {
            let mut command = tokio::process::Command::new("sh");
            command
                .arg("-c")
                .arg(&options.command)
                .current_dir(workspace);
            (command, None)
        }
    };
    // Listed once the sandbox has settled (building the command settles it).
    let watch = sandbox.map(Sandbox::watch_protected);
    command
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_for_stderr)
        .kill_on_drop(true);
    // Its own process group, so a timeout also stops what the command started.
    process_group::isolate(&mut command);
    let mut child = command.spawn().map_err(command_error)?;
    let group = ProcessGroup::of(&child);
    let result = match tokio::time::timeout(options.timeout, child.wait()).await {
        Ok(status) => {
            group.disarm();
            CommandResult::Exited {
                code: status.map_err(command_error)?.code(),
            }
        }
        Err(_) => {
            group.terminate(&mut child, STOP_GRACE).await;
            CommandResult::TimedOut {
                secs: options.timeout.as_secs(),
            }
        }
    };
    // Read back through the file duet made, not by its name: the command may have put
    // something else there meanwhile.
    let mut output = Vec::new();
    log_back
        .rewind()
        .and_then(|()| log_back.read_to_end(&mut output))
        .map_err(command_error)?;
    let mut output = String::from_utf8_lossy(&output).into_owned();
    // The command runs the project's code, which may create what no command may.
    if let Some(line) = watch.and_then(|watch| watch.take_back().line("the done command")) {
        files.notice(&line);
        if !output.is_empty() && !output.ends_with('\n') {
            output.push('\n');
        }
        output.push_str(&format!("duet: {line}\n"));
    }
    Ok((result, output))
}

/// duet's own files in the workspace's `.duet/`, written through a handle of the
/// workspace root. Whatever stands at one of their paths is replaced by a new file,
/// never written through: a link (to `~/.bashrc`, say) or a hard link is noted for the
/// run's report; a `.duet` that is itself a link is an error.
struct DuetFiles {
    root: Root,
    workspace: PathBuf,
    notices: Mutex<Vec<String>>,
}

impl DuetFiles {
    fn open(workspace: &Path) -> Result<Self, DoneError> {
        let root = Root::open(workspace).map_err(|source| DoneError::Write {
            path: workspace.to_path_buf(),
            source,
        })?;
        Ok(Self {
            root,
            workspace: workspace.to_path_buf(),
            notices: Mutex::new(Vec::new()),
        })
    }

    /// Writes `.duet/<name>` whole; returns its path.
    fn write(&self, name: &str, text: &str) -> Result<PathBuf, DoneError> {
        let relative = Path::new(DUET_DIR).join(name);
        let target = self.link_target(&relative);
        let replaced = self
            .root
            .replace(&relative, text.as_bytes(), None)
            .map_err(|source| self.error(&relative, source))?;
        self.note(&relative, &replaced, target);
        Ok(self.workspace.join(relative))
    }

    /// Makes `.duet/<name>` a new empty file and returns it, open for writing and
    /// reading back.
    fn create(&self, name: &str) -> Result<std::fs::File, DoneError> {
        let relative = Path::new(DUET_DIR).join(name);
        let target = self.link_target(&relative);
        let (file, replaced) = self
            .root
            .create_fresh(&relative)
            .map_err(|source| self.error(&relative, source))?;
        self.note(&relative, &replaced, target);
        Ok(file)
    }

    /// Writes what happened to links found in the way, and what was blocked, one line
    /// each, to the run's report.
    fn report_notices(&self, report: &mut dyn Write) -> std::io::Result<()> {
        let notices = self
            .notices
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for notice in notices {
            // Names in the workspace are the project's: cleaned for the terminal.
            writeln!(report, "duet: {}", crate::terminal_text::sanitize(&notice))?;
        }
        Ok(())
    }

    /// Adds a line to the run's report.
    fn notice(&self, text: &str) {
        tracing::warn!("{text}");
        self.notices
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(text.to_string());
    }

    /// Where a link at `relative` points, if one is there (for the notice only).
    fn link_target(&self, relative: &Path) -> Option<PathBuf> {
        self.root.read_link(relative).ok()
    }

    fn note(&self, relative: &Path, replaced: &Replaced, target: Option<PathBuf>) {
        let shown = relative.display();
        let notice = if replaced.replaced_a_link() {
            let to = target.map_or_else(String::new, |to| format!(" to {}", to.display()));
            format!(
                "{shown} was a symbolic link{to}; duet replaced the link with its own file \
                 and wrote nothing through it"
            )
        } else if let Some(others) = replaced.other_hard_links() {
            format!(
                "{shown} had {others} other hard link(s); duet wrote a new file, so they keep \
                 the old content"
            )
        } else {
            return;
        };
        self.notice(&notice);
    }

    fn error(&self, relative: &Path, source: beneath::Error) -> DoneError {
        DoneError::DuetFile {
            path: self.workspace.join(relative),
            source,
        }
    }
}

/// The verdict as the last lines of the run's output.
fn verdict_lines(
    verdict: &Verdict,
    committed: Option<Oid>,
    branch: &str,
    pr_path: &Path,
    draft: bool,
) -> String {
    let mut lines = Vec::new();
    let head = match (draft, verdict.violations.is_empty()) {
        (true, _) => "duet: stopped by a budget limit; DRAFT".to_string(),
        (false, true) => "duet: done and verified".to_string(),
        (false, false) => "duet: the evidence checks failed".to_string(),
    };
    lines.push(match committed {
        Some(commit) => format!("{head}: committed {:.7} on {branch}.", commit.to_string()),
        None if verdict.changes.is_empty() => format!("{head}: nothing changed, no commit."),
        None => format!("{head}: nothing committed; the changes are left on {branch}."),
    });
    for violation in &verdict.violations {
        lines.push(format!("  failed: {violation}"));
    }
    if !verdict.result.passed() {
        lines.push(format!(
            "done command output (last {OUTPUT_TAIL_LINES} lines):\n{}",
            evidence::tail(&verdict.output, OUTPUT_TAIL_LINES)
        ));
    }
    lines.push(format!("PR description: {}", pr_path.display()));
    lines.join("\n")
}

/// `.duet/PR.md`: what a reviewer needs to judge the change.
fn pr_description(
    prepared: &Prepared,
    options: &DoneOptions,
    log: &WorkLog,
    verdict: &Verdict,
    committed: Option<Oid>,
    draft: bool,
) -> String {
    let status = match (draft, verdict.violations.is_empty()) {
        (true, _) => "DRAFT: stopped by a budget limit before the task was done",
        (false, true) => "Done and verified by duet",
        (false, false) => "Not proposed: evidence checks failed",
    };
    let marker = if draft { "[DRAFT] " } else { "" };
    let commit = committed.map_or_else(|| "not committed".to_string(), |id| id.to_string());
    let mut checks: Vec<String> = vec![match verdict.result.violation(&options.command) {
        None => format!("- [x] `{}` passed", options.command),
        Some(violation) => format!("- [ ] {}", violation.detail),
    }];
    checks.extend(
        verdict
            .violations
            .iter()
            .filter(|violation| violation.check != Check::DoneCommand)
            .map(|violation| format!("- [ ] {violation}")),
    );
    let lines: usize = verdict.changes.iter().map(evidence::changed_lines).sum();
    checks.push(format!(
        "- {} files and {lines} lines changed since {:.7}",
        verdict.changes.len(),
        prepared.start.commit.to_string()
    ));
    let receipts: Vec<String> = verdict.receipts.iter().map(Receipt::row).collect();
    format!(
        "# {marker}{title}\n\n{status}.\nBranch: {branch}, commit: {commit}\n\n\
         ## Task\n\n{task}\n\n## Summary\n\n{summary}\n\n## Checks\n\n{checks}\n\n\
         ## Diff stat\n\n```\n{stat}```\n\n## Receipts\n\n\
         | path | sha256 before | sha256 after | written by |\n|---|---|---|---|\n{receipts}\n\n\
         ## Done command output (last {OUTPUT_TAIL_LINES} lines)\n\n```\n{tail}\n```\n",
        title = title(&prepared.task),
        branch = prepared.start.branch,
        task = prepared.task.trim(),
        summary = log
            .last_message
            .as_deref()
            .map_or("(the model left no message)", str::trim),
        checks = checks.join("\n"),
        stat = verdict.diff_stat,
        receipts = receipts.join("\n"),
        tail = evidence::tail(&verdict.output, OUTPUT_TAIL_LINES),
    )
}

/// What the run learns from the agent's events.
#[derive(Debug, Default)]
struct WorkLog {
    /// The text of the current model step.
    step_text: String,
    /// The model's last message that said something.
    last_message: Option<String>,
    /// Write and edit calls waiting for their result: call id → path as given.
    pending: HashMap<String, String>,
    /// Successful writes and edits in order: (path as given, call id).
    writes: Vec<(String, String)>,
}

impl WorkLog {
    fn observe(&mut self, event: &Event) {
        match event {
            Event::StepStarted { .. } | Event::TurnEnd { .. } => self.end_step(event),
            Event::TextDelta { text } => self.step_text.push_str(text),
            Event::Retrying {
                discarded: true, ..
            } => self.step_text.clear(),
            Event::ToolCallReady {
                call_id,
                name,
                info,
                ..
            } if name == "write" || name == "edit" => {
                if let Some(path) = info.path() {
                    self.pending.insert(call_id.clone(), path.to_string());
                }
            }
            Event::ToolRunEnd {
                call_id, is_error, ..
            } => {
                if let Some(path) = self.pending.remove(call_id)
                    && !is_error
                {
                    self.writes.push((path, call_id.clone()));
                }
            }
            _ => {}
        }
    }

    fn end_step(&mut self, event: &Event) {
        let text = std::mem::take(&mut self.step_text);
        if !text.trim().is_empty() {
            self.last_message = Some(text);
        }
        if let Event::TurnEnd {
            outcome: TurnOutcome::BudgetExhausted { report },
            ..
        } = event
            && self.last_message.is_none()
        {
            self.last_message.clone_from(&report.last_message);
        }
    }

    /// The successful write and edit calls per changed path, relative to the
    /// repository root like the changes are.
    fn writes_by_path(&self, repo_root: &Path, workspace: &Path) -> HashMap<String, Vec<String>> {
        let mut by_path: HashMap<String, Vec<String>> = HashMap::new();
        for (path, call_id) in &self.writes {
            if let Some(relative) = repo_relative(repo_root, workspace, path) {
                by_path.entry(relative).or_default().push(call_id.clone());
            }
        }
        by_path
    }
}

/// `path` as the model gave it (relative to the workspace, or absolute), relative to
/// the repository root and `/`-separated; `None` outside the repository.
fn repo_relative(repo_root: &Path, workspace: &Path, path: &str) -> Option<String> {
    let joined = workspace.join(path);
    let mut normal = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                normal.pop();
            }
            other => normal.push(other),
        }
    }
    let relative = normal.strip_prefix(repo_root).ok()?;
    let parts: Vec<String> = relative
        .components()
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn the_model_is_told_the_command_the_notes_and_the_rules() {
        let text = model_task("fix a.txt\n", "sh -c 'grep -q fixed a.txt'");
        assert!(text.starts_with("fix a.txt\n\n---\n"), "{text}");
        for needle in ["`sh -c 'grep -q fixed a.txt'`", ".duet/notes.md", "skip"] {
            assert!(text.contains(needle), "missing {needle} in {text}");
        }
    }

    #[test]
    fn the_log_keeps_the_last_message_and_successful_writes() {
        let mut log = WorkLog::default();
        let events = [
            Event::StepStarted { turn: 1, step: 1 },
            Event::TextDelta {
                text: "Fixing.".into(),
            },
            Event::ToolCallReady {
                call_id: "c1".into(),
                name: "write".into(),
                arguments: r#"{"path": "./src/a.txt", "content": "x"}"#.into(),
                info: crate::tools::Registry::core()
                    .describe("write", r#"{"path": "./src/a.txt", "content": "x"}"#),
            },
            Event::ToolCallReady {
                call_id: "c2".into(),
                name: "edit".into(),
                arguments: r#"{"path": "b.txt"}"#.into(),
                info: crate::tools::Registry::core().describe("edit", r#"{"path": "b.txt"}"#),
            },
            Event::ToolRunEnd {
                call_id: "c1".into(),
                is_error: false,
                summary: String::new(),
                output: String::new(),
                checks: None,
            },
            Event::ToolRunEnd {
                call_id: "c2".into(),
                is_error: true,
                summary: String::new(),
                output: String::new(),
                checks: None,
            },
            Event::StepStarted { turn: 1, step: 2 },
            Event::TextDelta {
                text: "Fixed a.txt.".into(),
            },
            Event::TurnEnd {
                turn: 1,
                outcome: TurnOutcome::Interrupted,
            },
        ];
        for event in &events {
            log.observe(event);
        }
        assert_eq!(log.last_message.as_deref(), Some("Fixed a.txt."));
        let by_path = log.writes_by_path(Path::new("/repo"), Path::new("/repo/sub"));
        assert_eq!(by_path.len(), 1);
        assert_eq!(by_path["sub/src/a.txt"], ["c1"]);
    }

    #[test]
    fn paths_outside_the_repository_have_no_relative_form() {
        let root = Path::new("/repo");
        assert_eq!(repo_relative(root, root, "../elsewhere.txt"), None);
        assert_eq!(
            repo_relative(root, root, "/repo/a/../b.txt").as_deref(),
            Some("b.txt")
        );
    }

    #[test]
    fn the_notes_are_written_where_the_agent_reads_them_after_compaction() {
        assert_eq!(
            Path::new(DUET_DIR).join(NOTES_FILE_NAME),
            Path::new(NOTES_FILE)
        );
    }

    #[test]
    fn titles_are_the_first_line_cut_to_72_characters() {
        assert_eq!(title("\nfix it\nmore"), "fix it");
        assert_eq!(title(&"é".repeat(80)).chars().count(), 73);
    }

    #[test]
    fn exit_statuses_follow_the_documented_table() {
        assert_eq!(DoneOutcome::Verified.exit_code(), ExitCode::SUCCESS);
        assert_eq!(DoneOutcome::Failed.exit_code(), ExitCode::from(1));
        assert_eq!(DoneOutcome::Stopped.exit_code(), ExitCode::from(2));
        assert_eq!(DoneOutcome::ChecksFailed.exit_code(), ExitCode::from(3));
    }
}
