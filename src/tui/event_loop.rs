//! The UI's event loop: one `select!` over terminal input, agent events, background
//! results (git status, `/diff`, the files `@` mentions offer) and the next animation
//! deadline. It draws only when
//! something asked for a frame, so an idle session makes no wakeups at all.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crossterm::event::{Event as TermEvent, MouseEventKind};
use futures::future::{BoxFuture, FutureExt, Shared};
use ratatui::layout::Size;
use tokio::sync::mpsc;

use crate::agent::{AgentHandle, Command, Event};
use crate::custom_commands::Locations;
use crate::git;

use super::app::{App, Editing, Effect, GitStatus};
use super::file_list::{self, FileList};
use super::frame::FrameScheduler;
use super::input::Input;
use super::keymap::Keymap;
use super::notify::Bell;
use super::painter::Painter;
use super::terminal::{self, Screen, Term, TerminalGuard};
use super::theme::Theme;
use super::transcript::NoticeKind;

/// What the UI needs besides the agent.
pub struct TuiOptions {
    pub screen: Screen,
    pub color: bool,
    pub keymap: Keymap,
    /// Problems found loading the user's keymap, shown once at start.
    pub keymap_errors: Vec<String>,
    /// Settings of the config file that were ignored, shown once at start.
    pub config_problems: Vec<String>,
    pub workspace: PathBuf,
    pub model: String,
    /// Notices shown at the top of the transcript (what this session is).
    pub intro: Vec<String>,
    /// Sent as the first message, as if the user had typed it.
    pub initial_message: Option<String>,
    /// Where duet logs, named when the agent stops unexpectedly.
    pub log_file: PathBuf,
    /// Ring the terminal when a turn ends or an approval waits while it is not focused.
    pub notify: bool,
    /// Where sessions are recorded, for `/resume`.
    pub sessions_dir: PathBuf,
    /// Where the prompt files that are slash commands are looked for.
    pub custom_commands: Locations,
}

/// Why the terminal UI ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TuiExit {
    Quit,
    /// The user asked to continue the recorded session with this id (`/resume ID`);
    /// this session's agent was shut down.
    Resume(String),
}

/// The commit HEAD pointed at when the session started (`None` outside a repository
/// or before the first commit), found on a blocking thread; `/diff` compares with it.
type StartCommit = Shared<BoxFuture<'static, Option<String>>>;

/// Results of work done off the loop.
enum Background {
    /// A `git status` for the bar ended; `None` when the workspace is not a repository
    /// or git failed.
    Git(Option<GitStatus>),
    /// Text for the transcript: `/diff`'s changes, how `/ps stop` went.
    Notice(String),
    Files(FileList),
}

/// Runs the UI until the user quits or the agent stops. The terminal is restored on
/// every way out, panics included.
pub async fn run(
    agent: AgentHandle,
    mut events: mpsc::Receiver<Event>,
    options: TuiOptions,
) -> io::Result<TuiExit> {
    let (term, guard) = terminal::enter(options.screen)?;
    let inline = options.screen.inline_rows.is_some();
    let mut painter = Painter::new(term, inline);
    let mut app = App::new(
        Theme::new(options.color),
        options.keymap,
        agent.clone(),
        options.model,
    );
    app.set_inline(inline);
    app.set_custom_commands(options.custom_commands);
    if options.notify {
        app.set_bell(Some(Bell::for_terminal(&|name| std::env::var(name).ok())));
    }
    for error in options.keymap_errors.iter().chain(&options.config_problems) {
        app.notice(error, NoticeKind::Error);
    }
    for line in &options.intro {
        app.notice(line, NoticeKind::Info);
    }
    if let Some(text) = &options.initial_message {
        app.start_turn(text.clone());
    }
    let (background_tx, mut background) = mpsc::unbounded_channel();
    let mut git = GitRefresh::new(&options.workspace, background_tx.clone());
    git.request();
    // Found off the loop: opening the repository takes longer than the first frame.
    let start_commit = {
        let workspace = options.workspace.clone();
        tokio::task::spawn_blocking(move || git::head_commit(&workspace))
            .map(|found| found.ok().flatten())
            .boxed()
            .shared()
    };
    let mut frames = FrameScheduler::default();
    frames.request();
    let mut input = Input::start();
    let mut sigterm = terminate_signal()?;
    // The agent's events ended (it stopped): their channel then answers at once, forever.
    let mut agent_gone = false;
    let mut exit = TuiExit::Quit;

    loop {
        let now = Instant::now();
        // Time-driven changes (the next streamed line, a spinner) are applied whatever
        // woke the loop: at an output frame the agent's events win the `select!`, and
        // the animation due at the same instant must land in the same frame.
        if app.next_deadline(now).is_some_and(|due| due <= now) && app.tick(now) {
            frames.request();
        }
        if frames.due(now) {
            draw(&mut painter, &mut app, now, inline)?;
            frames.drawn(now);
            // Flushed: `bench/run` times the first frame and counts frames from these
            // (`DUET_LOG=duet::frames=debug`); filtered out, it costs one cached check.
            tracing::debug!(target: "duet::frames", frame = frames.count(), "frame drawn");
        }
        // Between frames the agent's events wait in their channel (see `frame.rs`), so
        // a streaming model wakes the loop once a frame, not once a delta.
        let output_deadline = frames.output_deadline(now);
        let take_output = output_deadline.is_none();
        let animation = app
            .next_deadline(now)
            .map(|wanted| frames.animation_deadline(wanted, now));
        let wake = [frames.deadline(), animation, output_deadline]
            .into_iter()
            .flatten()
            .min();
        let effect = tokio::select! {
            biased;
            _ = sigterm.recv() => Effect::Quit,
            key = input.next() => match key {
                Some(Ok(event)) => on_terminal(&mut app, painter.term(), event),
                // The terminal is gone (closed tab, SIGHUP): nothing left to draw on.
                Some(Err(_)) | None => Effect::Quit,
            },
            event = events.recv(), if take_output && !agent_gone => match event {
                Some(event) => {
                    frames.output_taken(Instant::now());
                    let effect = on_agent(&mut app, event, &mut events);
                    if let Some(bytes) = app.take_notification() {
                        ring(painter.term(), &bytes);
                    }
                    effect
                }
                None => {
                    agent_gone = true;
                    let log = options.log_file.display();
                    app.notice(
                        &format!("the agent stopped unexpectedly (its log: {log}); press Ctrl-C twice to quit"),
                        NoticeKind::Error,
                    );
                    Effect::Redraw
                }
            },
            Some(result) = background.recv() => on_background(&mut app, &mut git, result),
            // The animation that was due is applied at the top of the loop.
            () = sleep_until(wake) => Effect::Nothing,
        };
        match effect {
            Effect::Nothing => {}
            Effect::Redraw => frames.request(),
            Effect::Repaint => {
                painter.clear()?;
                frames.request();
            }
            Effect::Quit => break,
            // A mistyped id keeps this session: only a recorded one ends it.
            Effect::Resume(id)
                if !crate::session::path_for(&options.sessions_dir, &id).is_file() =>
            {
                app.notice(
                    &format!("/resume: no session {id} here (`/resume` lists them)"),
                    NoticeKind::Error,
                );
                frames.request();
            }
            Effect::Resume(id) => {
                exit = TuiExit::Resume(id);
                break;
            }
            Effect::ListSessions => {
                list_sessions(&options.sessions_dir, &options.workspace, &background_tx)
            }
            Effect::RefreshGit => {
                git.request();
                frames.request();
            }
            Effect::ShowDiff => {
                show_diff(&options.workspace, start_commit.clone(), &background_tx);
            }
            Effect::ListFiles => {
                list_files(&options.workspace, &background_tx);
                frames.request();
            }
            Effect::StopJob(id) => stop_job(&agent, id, &background_tx),
            Effect::OpenEditor {
                editing,
                path,
                content,
            } => {
                // The editor owns the keyboard meanwhile: stop reading input first.
                input.stop().await;
                let saved = edit_in_editor(&guard, &mut painter, &path, &content).await;
                input = Input::start();
                if let Err(error) = &saved {
                    let what = match editing {
                        Editing::Proposal { .. } => "",
                        Editing::Message => "; the message is as it was",
                    };
                    app.notice(
                        &format!("the editor failed: {error}{what}"),
                        NoticeKind::Error,
                    );
                }
                app.editor_finished(&editing, saved.ok().flatten());
                frames.request();
            }
        }
    }
    let _ = agent.send(Command::Shutdown);
    if inline {
        // Leave the scrollback ending with the conversation, not with a stale input box.
        let term = painter.term();
        print_finished(term, &mut app)?;
        term.clear()?;
        let origin = term.get_frame().area().as_position();
        term.set_cursor_position(origin)?;
    }
    drop(guard);
    Ok(exit)
}

fn draw(painter: &mut Painter, app: &mut App, now: Instant, inline: bool) -> io::Result<()> {
    // One write per frame, wrapped in a synchronized update: terminals that support it
    // show the frame at once, never half of it; the others ignore the sequence.
    painter.term().backend_mut().begin_frame()?;
    let drawn = (|| {
        if inline {
            print_finished(painter.term(), app)?;
        }
        painter.draw(|frame| app.render(frame, now))
    })();
    painter.term().backend_mut().end_frame()?;
    drawn
}

/// Inline mode: moves finished transcript cells into the terminal's own scrollback,
/// above the live viewport, where they stay after duet exits.
fn print_finished(term: &mut Term, app: &mut App) -> io::Result<()> {
    let width = term.size()?.width;
    let lines = app.take_finished(width);
    if lines.is_empty() {
        return Ok(());
    }
    let height = u16::try_from(lines.len()).unwrap_or(u16::MAX);
    term.insert_before(height, |buf| {
        ratatui::widgets::Widget::render(ratatui::text::Text::from(lines), buf.area, buf);
    })
}

fn on_terminal(app: &mut App, term: &mut Term, event: TermEvent) -> Effect {
    let width = term.size().map(|size| size.width).unwrap_or(80);
    match event {
        TermEvent::Key(key) => app.on_key(key, width, Instant::now()),
        TermEvent::Paste(text) => app.on_paste(&text, Instant::now()),
        TermEvent::Resize(width, height) => {
            term.backend_mut().resized(Size { width, height });
            Effect::Redraw
        }
        TermEvent::Mouse(mouse) => match mouse.kind {
            MouseEventKind::ScrollUp => app.scroll(true),
            MouseEventKind::ScrollDown => app.scroll(false),
            _ => Effect::Nothing,
        },
        TermEvent::FocusGained => {
            app.set_focused(true);
            Effect::Nothing
        }
        TermEvent::FocusLost => {
            app.set_focused(false);
            Effect::Nothing
        }
    }
}

/// Applies an agent event and every other one already waiting, so a burst of deltas
/// costs one frame.
fn on_agent(app: &mut App, first: Event, events: &mut mpsc::Receiver<Event>) -> Effect {
    let now = Instant::now();
    let mut effect = app.on_agent_event(&first, now);
    while let Ok(event) = events.try_recv() {
        effect = effect.and(app.on_agent_event(&event, now));
    }
    effect
}

fn on_background(app: &mut App, git: &mut GitRefresh, result: Background) -> Effect {
    match result {
        Background::Git(status) => {
            git.finished();
            if status.is_some_and(|status| app.set_git(status)) {
                Effect::Redraw
            } else {
                Effect::Nothing
            }
        }
        Background::Notice(text) => {
            app.notice(&text, NoticeKind::Info);
            Effect::Redraw
        }
        Background::Files(list) => app.set_files(list),
    }
}

/// Writes a notification between frames; a terminal that cannot take it is no reason
/// to stop.
fn ring(term: &mut Term, bytes: &str) {
    if let Err(error) = term.backend_mut().write_between_frames(bytes.as_bytes()) {
        tracing::debug!(%error, "notification not written");
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
        None => std::future::pending().await,
    }
}

#[cfg(unix)]
fn terminate_signal() -> io::Result<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
}

/// The status bar's git figures, worked out off the loop and one run at a time: a
/// refresh asked for while one runs (a turn of many commands) is made once, when it
/// ends, so the figures follow every change without stacking `git status` runs.
struct GitRefresh {
    workspace: std::path::PathBuf,
    results: mpsc::UnboundedSender<Background>,
    running: bool,
    again: bool,
}

impl GitRefresh {
    fn new(workspace: &Path, results: mpsc::UnboundedSender<Background>) -> Self {
        Self {
            workspace: workspace.to_path_buf(),
            results,
            running: false,
            again: false,
        }
    }

    fn request(&mut self) {
        if self.running {
            self.again = true;
            return;
        }
        self.running = true;
        let workspace = self.workspace.clone();
        let results = self.results.clone();
        tokio::task::spawn_blocking(move || {
            let status = git::summarize(&workspace, 0)
                .ok()
                .flatten()
                .map(|summary| GitStatus {
                    // A branch name is the repository's content: no control reaches the bar.
                    branch: summary
                        .branch
                        .map(|branch| crate::terminal_text::sanitize(&branch).into_owned()),
                    dirty: summary.staged.len() + summary.unstaged.len() + summary.untracked.len(),
                });
            let _ = results.send(Background::Git(status));
        });
    }

    /// The run in flight ended (its result is on the channel).
    fn finished(&mut self) {
        self.running = false;
        if std::mem::take(&mut self.again) {
            self.request();
        }
    }
}

/// `/resume`: this workspace's sessions, newest first, read off the loop.
fn list_sessions(dir: &Path, workspace: &Path, results: &mpsc::UnboundedSender<Background>) {
    let (dir, workspace) = (dir.to_path_buf(), workspace.to_path_buf());
    let results = results.clone();
    tokio::task::spawn_blocking(move || {
        let workspace = workspace.canonicalize().unwrap_or(workspace);
        let text = match crate::session::list(&dir) {
            Ok(listing) => {
                let listing = listing.in_workspace(&workspace);
                if listing.sessions.is_empty() {
                    "no earlier sessions in this workspace".to_string()
                } else {
                    format!(
                        "{}`/resume ID` continues one (this session ends; it can be resumed too)",
                        crate::session::table(&listing.sessions)
                    )
                }
            }
            Err(error) => format!("/resume: {error}"),
        };
        // Session files are written by duet but hold the model's words: made safe
        // for the terminal like everything else shown.
        let text = crate::terminal_text::sanitize(&text).into_owned();
        let _ = results.send(Background::Notice(text));
    });
}

/// `/ps stop ID`: stops the job off the loop (it may take the grace period) and says
/// how it ended.
fn stop_job(agent: &AgentHandle, id: String, results: &mpsc::UnboundedSender<Background>) {
    let agent = agent.clone();
    let results = results.clone();
    tokio::spawn(async move {
        let text = match agent.stop_job(&id, STOP_GRACE).await {
            Ok(job) => match job.state {
                crate::shell::jobs::JobState::Ended(exit) => format!("{id} stopped ({exit})"),
                crate::shell::jobs::JobState::Running => format!("{id} is still running"),
            },
            Err(error) => format!("/ps: {error}"),
        };
        let _ = results.send(Background::Notice(text));
    });
}

/// How long a job stopped with `/ps stop` gets to end on SIGTERM.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

fn show_diff(workspace: &Path, start: StartCommit, results: &mpsc::UnboundedSender<Background>) {
    let workspace = workspace.to_path_buf();
    let results = results.clone();
    tokio::spawn(async move {
        let start = start.await;
        let text = tokio::task::spawn_blocking(move || diff_text(&workspace, start))
            .await
            .unwrap_or_else(|error| format!("/diff failed: {error}"));
        let _ = results.send(Background::Notice(text));
    });
}

/// Lists the workspace's files for `@` mentions on a blocking thread. Whatever happens
/// to the walk, a list comes back (empty if it failed), so the app never waits for one
/// that will not come.
fn list_files(workspace: &Path, results: &mpsc::UnboundedSender<Background>) {
    let workspace = workspace.to_path_buf();
    let results = results.clone();
    tokio::spawn(async move {
        let list = tokio::task::spawn_blocking(move || {
            file_list::list_files(&workspace, file_list::MAX_FILES)
        })
        .await
        .unwrap_or_default();
        let _ = results.send(Background::Files(list));
    });
}

/// The workspace's changes since `start`, or why there are none to show.
fn diff_text(workspace: &Path, start: Option<String>) -> String {
    match start {
        None => "/diff needs a git repository with a commit to compare against".to_string(),
        Some(commit) => match git::diff_since(workspace, &commit) {
            Ok(diff) if diff.is_empty() => "no changes since the session started".into(),
            Ok(diff) => diff,
            Err(error) => format!("/diff failed: {error}"),
        },
    }
}

/// Writes `content` to a temp file named like `path`, runs the user's editor on it with
/// the terminal handed over, and returns what was saved (`None` when unchanged on disk
/// because the editor quit without saving is indistinguishable from "no edits", the
/// content is returned either way; `None` only when the file vanished).
async fn edit_in_editor(
    guard: &TerminalGuard,
    painter: &mut Painter,
    path: &str,
    content: &str,
) -> io::Result<Option<String>> {
    let name = Path::new(path)
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "proposal.txt".into());
    let dir = tempfile::tempdir()?;
    let file = dir.path().join(name);
    std::fs::write(&file, content)?;
    let editor = std::env::var("VISUAL")
        .or_else(|_| std::env::var("EDITOR"))
        .unwrap_or_else(|_| "vi".into());
    terminal::suspend(guard);
    let target = file.clone();
    let status = tokio::task::spawn_blocking(move || {
        let (program, args) = editor_command(&editor);
        std::process::Command::new(program)
            .args(args)
            .arg(&target)
            .status()
    })
    .await
    .map_err(io::Error::other);
    terminal::resume(guard, painter)?;
    let status = status??;
    if !status.success() {
        return Err(io::Error::other(format!("the editor exited with {status}")));
    }
    match std::fs::read_to_string(&file) {
        Ok(saved) => Ok(Some(saved)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    }
}

/// The program and arguments `$VISUAL`/`$EDITOR` names, split as a shell would
/// (`code --wait`, a quoted path with spaces); what does not split (an open quote) is
/// one program name, and nothing at all is `vi`.
fn editor_command(editor: &str) -> (String, Vec<String>) {
    let mut words = shlex::split(editor).unwrap_or_else(|| vec![editor.to_string()]);
    if words.is_empty() {
        return ("vi".into(), Vec::new());
    }
    let program = words.remove(0);
    (program, words)
}

#[cfg(test)]
mod tests {
    use super::editor_command;

    fn owned(words: &[&str]) -> Vec<String> {
        words.iter().map(|word| word.to_string()).collect()
    }

    #[test]
    fn the_editor_variable_splits_as_a_shell_would() {
        assert_eq!(
            editor_command("code --wait"),
            ("code".into(), owned(&["--wait"]))
        );
        assert_eq!(
            editor_command("'/opt/My Editor/bin/ed' -n"),
            ("/opt/My Editor/bin/ed".into(), owned(&["-n"]))
        );
        assert_eq!(
            editor_command("vim 'open"),
            ("vim 'open".into(), Vec::new())
        );
        assert_eq!(editor_command("  "), ("vi".into(), Vec::new()));
    }
}
