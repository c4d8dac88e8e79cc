//! The UI's state and its reactions: keys and agent events in, commands and redraws
//! out. Views own their own state; this file routes between them and keeps what no
//! single view owns (pending messages, the status line, quitting).
//!
//! No I/O happens here: commands go out through the agent handle (a non-blocking
//! channel send), and anything slow (git status, the editor) is an [`Effect`] the
//! event loop carries out.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};

use crate::agent::protocol::CommandInput;
use crate::agent::{AgentHandle, Command, Event, MessageId, TurnOutcome};
use crate::custom_commands::{Catalog, Locations};
use crate::mcp::ServerState;
use crate::policy::ApprovalMode;
use crate::shell::sandbox::Protections;

use super::action::{Action, Context};
use super::composer::{Composer, ComposerOutcome, PendingView};
use super::file_list::FileList;
use super::help::HelpOverlay;
use super::keymap::Keymap;
use super::notify::Bell;
use super::painter::{Drawn, Scroll};
use super::pending::{Pending, Withdrawal};
use super::review::{ReviewOutcome, ReviewQueue};
use super::slash::{self, SlashCommand};
use super::status::{Activity, McpSummary, StatusInfo, render_status};
use super::terminal_keys;
use super::theme::Theme;
use super::transcript::{InputHints, NoticeKind, Transcript};

/// How long a first Ctrl-C (or idle Esc) waits for the second one that quits.
const QUIT_WINDOW: Duration = Duration::from_secs(2);
/// A list of files older than this is walked again when an `@` list opens: files made
/// outside duet (another terminal, an editor) show up without a restart.
const FILES_MAX_AGE: Duration = Duration::from_secs(30);

/// Work the event loop does on the app's behalf.
#[derive(Debug, PartialEq)]
pub enum Effect {
    Nothing,
    Redraw,
    /// Clear the screen and draw it whole (Ctrl-L: something else wrote over it).
    Repaint,
    Quit,
    /// Run `$EDITOR` on `content` in a temp file named like `path`, then report back
    /// with [`App::editor_finished`].
    OpenEditor {
        editing: Editing,
        path: String,
        content: String,
    },
    /// Compute the session's changes since it started and show them (`/diff`).
    ShowDiff,
    /// Re-read the git branch and dirty count for the status line.
    RefreshGit,
    /// List the workspace's files for `@` mentions, off the loop; the list comes back
    /// through [`App::set_files`].
    ListFiles,
    /// Stop the background command with this id (`/ps stop ID`), off the loop.
    StopJob(String),
    /// List this workspace's sessions (`/resume`), off the loop.
    ListSessions,
    /// Leave this session for the recorded one with this id (`/resume ID`).
    Resume(String),
}

impl Effect {
    /// The effect of two events handled in one batch: work asked for is kept (the
    /// first when both ask for some), and a redraw beats nothing.
    pub fn and(self, next: Effect) -> Effect {
        match (self, next) {
            (Effect::Nothing, next) => next,
            (Effect::Redraw, Effect::Nothing) => Effect::Redraw,
            (Effect::Redraw, next) => next,
            (first, _) => first,
        }
    }
}

/// What an editor session edits, so what is saved goes back where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Editing {
    /// The file proposed by the call `call_id`, under review.
    Proposal { call_id: String },
    /// The message in the composer (Ctrl-G).
    Message,
}

/// The temp file a message is edited in: markdown, like what the model reads.
const MESSAGE_FILE: &str = "duet-message.md";

/// What the status line shows that comes from outside the agent's events.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GitStatus {
    pub branch: Option<String>,
    pub dirty: usize,
}

/// When the workspace's files were last listed for `@` mentions, and whether that list
/// may be out of date.
#[derive(Clone, Copy, Debug, Default)]
struct FileWalks {
    /// A walk is running: no second one starts.
    running: bool,
    /// When the last walk started.
    started: Option<Instant>,
    /// The agent may have changed the workspace since the last walk started.
    stale: bool,
}

/// What the session has used so far, as the last [`Event::Usage`] said.
#[derive(Clone, Copy, Debug, Default)]
struct Spend {
    tokens_in: u64,
    tokens_out: u64,
    cost: Option<f64>,
    context_used: Option<f32>,
}

pub struct App {
    theme: Theme,
    keymap: Keymap,
    transcript: Transcript,
    review: ReviewQueue,
    composer: Composer,
    pending: Pending,
    /// Messages sent to the agent so far; the last one's id.
    messages_sent: MessageId,
    agent: AgentHandle,
    model: String,
    mode: ApprovalMode,
    spend: Spend,
    git: GitStatus,
    /// What protects the user from the shell, once the session has said.
    sandbox: Option<Protections>,
    /// Each MCP server's last reported state, in the order they first reported.
    mcp: Vec<(String, ServerState)>,
    turn_running: bool,
    /// The user's own command (`!command`) runs: Esc stops it, messages wait for it.
    command_running: bool,
    /// The running command the user types into (its call id): keys go to it, not to
    /// duet, until Esc or its end.
    typing_into: Option<String>,
    /// Whether the terminal has the focus (as its focus events said; assumed until
    /// one says otherwise).
    focused: bool,
    /// How to ring the terminal when the user is away; `None` with `[ui] notify = false`.
    bell: Option<Bell>,
    /// A notification to write before the next frame.
    notification: Option<String>,
    interrupting: bool,
    running_tools: usize,
    /// Paths of images that go with the next message (`/image`, a pasted path).
    images: Vec<String>,
    /// Calls of the turn that may change the workspace, until their result: the git
    /// figures are refreshed after each.
    changing_calls: std::collections::HashSet<String>,
    help_open: bool,
    help: HelpOverlay,
    /// The user's and the project's prompt files, as slash commands.
    custom: Catalog,
    /// Where the prompt files of `custom` were found, to read them again.
    custom_locations: Option<Locations>,
    quit_armed_at: Option<Instant>,
    /// `--inline`: finished cells go to the terminal's scrollback; only the live part
    /// is drawn here.
    inline: bool,
    /// The last frame showed the transcript (not help or a review) in full.
    transcript_shown: bool,
    file_walks: FileWalks,
}

impl App {
    pub fn new(theme: Theme, keymap: Keymap, agent: AgentHandle, model: String) -> Self {
        let mut review = ReviewQueue::new(theme.clone());
        for context in [Context::DiffReview, Context::Approval] {
            review.set_context_hints(context, hints(&keymap, context));
        }
        let mut composer = Composer::new(theme.clone());
        composer.set_completion_footer(completion_footer(&keymap));
        let custom = Catalog::default();
        composer.set_commands(command_choices(&custom));
        let mut transcript = Transcript::new(theme.clone());
        transcript.set_input_hints(input_hints(&keymap));
        Self {
            transcript,
            review,
            composer,
            theme,
            keymap,
            pending: Pending::default(),
            messages_sent: 0,
            agent,
            model,
            mode: ApprovalMode::default(),
            spend: Spend::default(),
            git: GitStatus::default(),
            sandbox: None,
            mcp: Vec::new(),
            turn_running: false,
            command_running: false,
            typing_into: None,
            focused: true,
            bell: None,
            notification: None,
            interrupting: false,
            running_tools: 0,
            changing_calls: std::collections::HashSet::new(),
            images: Vec::new(),
            help_open: false,
            help: HelpOverlay::default(),
            custom,
            custom_locations: None,
            quit_armed_at: None,
            inline: false,
            transcript_shown: false,
            file_walks: FileWalks::default(),
        }
    }

    /// Where prompt files are looked for: `/name` sends one, the help and the `/` list
    /// show them. They are read now, and again whenever a `/` line is sent, so a file
    /// added or edited during the session counts at once.
    pub fn set_custom_commands(&mut self, locations: Locations) {
        self.custom_locations = Some(locations);
        self.reload_custom_commands();
    }

    fn reload_custom_commands(&mut self) {
        let Some(locations) = &self.custom_locations else {
            return;
        };
        let custom = Catalog::load(locations, &slash::built_in_names());
        self.composer.set_commands(command_choices(&custom));
        self.custom = custom;
    }

    /// A walk of the workspace's files ended (see [`Effect::ListFiles`]).
    pub fn set_files(&mut self, files: FileList) -> Effect {
        self.file_walks.running = false;
        let completing = self.composer.completing();
        self.composer.set_files(files);
        if completing {
            Effect::Redraw
        } else {
            Effect::Nothing
        }
    }

    /// Whether to list the files again, now that an `@` list opened: never listed, or
    /// the list may be out of date. One walk at a time; the old list serves meanwhile.
    fn files_wanted(&mut self, now: Instant) -> bool {
        if !self.composer.take_opened() || self.file_walks.running {
            return false;
        }
        let fresh = !self.file_walks.stale
            && self
                .file_walks
                .started
                .is_some_and(|started| now.duration_since(started) < FILES_MAX_AGE);
        if fresh {
            return false;
        }
        // Changes made while this walk runs may be missed by it: they mark it stale.
        self.file_walks = FileWalks {
            running: true,
            started: Some(now),
            stale: false,
        };
        true
    }

    /// `effect`, and a walk of the files if an `@` list just opened and wants one.
    fn and_files(&mut self, effect: Effect, now: Instant) -> Effect {
        if self.files_wanted(now) {
            effect.and(Effect::ListFiles)
        } else {
            effect
        }
    }

    /// Draws only the live part; finished cells are printed above with [`App::take_finished`].
    pub fn set_inline(&mut self, inline: bool) {
        self.inline = inline;
    }

    /// Rows of the transcript cells finished since the last call, for the scrollback.
    pub fn take_finished(&mut self, width: u16) -> Vec<ratatui::text::Line<'static>> {
        self.transcript.take_finished(width)
    }

    /// Shows a line in the transcript that the UI itself produced.
    pub fn notice(&mut self, text: &str, kind: NoticeKind) {
        self.transcript.push_notice(text, kind);
    }

    /// Rings the terminal with `bell` when a turn ends or an approval waits while the
    /// terminal is not focused; `None` never does.
    pub fn set_bell(&mut self, bell: Option<Bell>) {
        self.bell = bell;
    }

    /// A focus event of the terminal.
    pub fn set_focused(&mut self, focused: bool) {
        self.focused = focused;
    }

    /// The bytes of a notification due, once.
    pub fn take_notification(&mut self) -> Option<String> {
        let message = self.notification.take()?;
        Some(self.bell?.sequence(&message))
    }

    /// Asks for a notification, when the user is away and wants them.
    fn call_back(&mut self, message: &str) {
        if !self.focused && self.bell.is_some() {
            self.notification = Some(message.to_string());
        }
    }

    pub fn set_git(&mut self, git: GitStatus) -> bool {
        let changed = self.git != git;
        self.git = git;
        changed
    }

    /// Applies an agent event. Returns the effect it calls for.
    pub fn on_agent_event(&mut self, event: &Event, now: Instant) -> Effect {
        let mut effect = Effect::Nothing;
        match event {
            Event::SessionStarted {
                model,
                mode,
                sandbox,
                ..
            } => {
                self.model.clone_from(model);
                self.mode = *mode;
                self.sandbox = Some(sandbox.clone());
            }
            Event::ModeChanged { mode } => self.mode = *mode,
            Event::McpServer { server, state } => self.mcp_state(server, state),
            Event::Usage {
                session,
                session_cost_usd,
                context_used,
                ..
            } => {
                self.spend = Spend {
                    tokens_in: session.input_tokens
                        + session.cache_read_tokens
                        + session.cache_write_tokens,
                    tokens_out: session.output_tokens,
                    cost: *session_cost_usd,
                    // An exploration's calls say nothing about the conversation's size.
                    context_used: context_used.or(self.spend.context_used),
                };
            }
            Event::UserMessageDelivered { id, .. } => {
                self.pending.delivered(*id);
            }
            Event::MessageWithdrawn { id, text } => {
                // Taken back at the user's request, or refused by a UserPromptSubmit
                // hook (then it may be the message that started the turn): either way
                // it comes back to the input to be changed.
                self.pending.withdrawn(*id);
                if self.composer.is_empty() {
                    self.composer.set_text(text);
                }
            }
            Event::ToolCallReady { call_id, name, .. } if !only_looks(name) => {
                self.changing_calls.insert(call_id.clone());
            }
            Event::ToolRunBegin { .. } => self.running_tools += 1,
            Event::ToolRunEnd { call_id, .. } => {
                self.running_tools = self.running_tools.saturating_sub(1);
                // What a write, an edit or a command changed shows in the bar at once.
                if self.changing_calls.remove(call_id) {
                    effect = Effect::RefreshGit;
                }
            }
            Event::Undone { .. } | Event::UndoFailed { .. } => effect = Effect::RefreshGit,
            // A message sent while a `!` command ran starts its turn right after it.
            Event::TurnStarted { .. } => self.turn_running = true,
            Event::UserCommandEnded { .. } => {
                self.command_running = false;
                self.interrupting = false;
                effect = Effect::RefreshGit;
            }
            Event::ApprovalNeeded { .. } => self.call_back("an approval waits for you"),
            Event::CommandWaitingForInput { call_id, .. }
                if self.typing_into.as_deref() != Some(call_id.as_str()) =>
            {
                self.call_back("a command waits for input")
            }
            Event::TurnEnd { outcome, .. } => {
                self.call_back(&format!("turn {}", outcome.kind().replace('_', " ")));
                self.changing_calls.clear();
                self.end_turn(outcome);
                effect = Effect::RefreshGit;
            }
            _ => {}
        }
        if effect == Effect::RefreshGit {
            // What changed the git figures may have added or removed files.
            self.file_walks.stale = true;
        }
        match self.review.on_event(event) {
            ReviewOutcome::Send(command) => self.send(command),
            ReviewOutcome::Ignored | ReviewOutcome::Changed | ReviewOutcome::OpenEditor { .. } => {}
        }
        let transcript_changed = self.transcript.on_event(event, now);
        if self
            .typing_into
            .as_ref()
            .is_some_and(|call_id| !self.transcript.is_running(call_id))
        {
            // The command ended (or the turn did): the keys are duet's again.
            // The card's end redraws it.
            self.typing_into = None;
            self.transcript.set_typing_into(None);
        }
        self.sync_pending_view();
        match effect {
            // Streamed text that only queued up behind lines still being revealed
            // changes nothing on screen.
            Effect::Nothing if matches!(event, Event::TextDelta { .. }) && !transcript_changed => {
                Effect::Nothing
            }
            Effect::Nothing => Effect::Redraw,
            other => other,
        }
    }

    fn mcp_state(&mut self, server: &str, state: &ServerState) {
        match self.mcp.iter_mut().find(|(name, _)| name == server) {
            Some((_, known)) => *known = state.clone(),
            None => self.mcp.push((server.to_string(), state.clone())),
        }
    }

    /// `/status`: what runs, what it has cost, and what protects the user.
    fn status_lines(&self) -> Vec<String> {
        let mut lines = vec![format!("model: {} · mode: {}", self.model, self.mode)];
        let context = match self.spend.context_used {
            Some(used) => format!("{:.0}% of the context window", used * 100.0),
            None => "context window: not known for this model".to_string(),
        };
        let cost = self
            .spend
            .cost
            .map(|cost| format!(" · ${cost:.4}"))
            .unwrap_or_default();
        lines.push(format!(
            "{context} · {} tokens in, {} out{cost}",
            self.spend.tokens_in, self.spend.tokens_out
        ));
        match &self.sandbox {
            Some(sandbox) => {
                lines.push(format!("sandbox: {}", sandbox.summary()));
                lines.extend(sandbox.gaps().into_iter().map(|gap| format!("  {gap}")));
            }
            None => lines.push("sandbox: not reported yet".to_string()),
        }
        let ready = self
            .mcp
            .iter()
            .filter(|(_, state)| matches!(state, ServerState::Ready { .. }))
            .count();
        lines.push(match self.mcp.len() {
            0 => "mcp: no servers configured".to_string(),
            all => format!("mcp: {ready} of {all} servers ready (/mcp lists them)"),
        });
        let branch = self.git.branch.as_deref().unwrap_or("(no branch)");
        lines.push(format!("git: {branch} · {} changed", self.git.dirty));
        lines
    }

    /// `/mcp`: one line per server.
    fn show_mcp(&mut self) {
        if self.mcp.is_empty() {
            self.notice(
                "no MCP servers are configured (see `duet mcp list` and the README)",
                NoticeKind::Info,
            );
            return;
        }
        let lines: Vec<String> = self
            .mcp
            .iter()
            .map(|(server, state)| format!("mcp: {server} {state}"))
            .collect();
        self.notice(&lines.join("\n"), NoticeKind::Info);
    }

    fn mcp_summary(&self) -> Option<McpSummary> {
        (!self.mcp.is_empty()).then(|| McpSummary {
            ready: self
                .mcp
                .iter()
                .filter(|(_, state)| matches!(state, ServerState::Ready { .. }))
                .count(),
            total: self.mcp.len(),
            trouble: self.mcp.iter().any(|(_, state)| {
                matches!(
                    state,
                    ServerState::Restarting { .. } | ServerState::Failed { .. }
                )
            }),
        })
    }

    fn end_turn(&mut self, outcome: &TurnOutcome) {
        self.turn_running = false;
        self.interrupting = false;
        self.running_tools = 0;
        if matches!(outcome, TurnOutcome::Finished { .. })
            && let Some(next) = self.pending.next_queued()
        {
            self.start_turn(next);
        }
    }

    /// Handles a key press. `area_width` is the screen width (the review panel needs it).
    pub fn on_key(&mut self, key: KeyEvent, area_width: u16, now: Instant) -> Effect {
        let effect = self.handle_key(key, area_width, now);
        self.and_files(effect, now)
    }

    fn handle_key(&mut self, key: KeyEvent, area_width: u16, now: Instant) -> Effect {
        if key.kind == KeyEventKind::Release {
            return Effect::Nothing;
        }
        if self.typing_into.is_some() {
            return self.key_for_command(&key);
        }
        if self.review.is_open() && self.review.is_typing() {
            let outcome = self.review.handle_text(key);
            return self.review_outcome(outcome);
        }
        let mut contexts = self.focus();
        let mut action = self.keymap.action(&contexts, &key);
        if action.is_some_and(|action| {
            contexts.first() == Some(&Context::Completion)
                && !self.composer.completion_takes(action)
        }) {
            // Nothing to choose in the `@` list: the key does what it does without it.
            contexts.remove(0);
            action = self.keymap.action(&contexts, &key);
        }
        let Some(action) = action else {
            return self.typed(key);
        };
        if action != Action::Quit && action != Action::Interrupt {
            self.quit_armed_at = None;
        }
        if action == Action::Redraw {
            return Effect::Repaint;
        }
        if self.help_open {
            return self.help_action(action, now);
        }
        if self.review.is_open() {
            let outcome = self.review.handle(action, area_width);
            if outcome != ReviewOutcome::Ignored {
                return self.review_outcome(outcome);
            }
        }
        self.action(action, now)
    }

    /// A key while the user types into a command: Esc (or what the keymap binds) gives
    /// the keys back, every other key goes to the command.
    fn key_for_command(&mut self, key: &KeyEvent) -> Effect {
        if self.keymap.action_in(Context::CommandInput, key) == Some(Action::ReleaseCommand) {
            return self.stop_typing();
        }
        match terminal_keys::key_bytes(key).and_then(|bytes| String::from_utf8(bytes).ok()) {
            Some(text) => self.type_into_command(text),
            None => Effect::Nothing,
        }
    }

    /// Sends `text` to the command the user types into.
    fn type_into_command(&mut self, text: String) -> Effect {
        if let Some(call_id) = self.typing_into.clone() {
            self.send(Command::TypeIntoCommand {
                call_id,
                input: CommandInput::Text { text },
            });
        }
        Effect::Nothing
    }

    /// Ctrl-Y: the newest command waiting for input gets the keys.
    fn start_typing(&mut self) -> Effect {
        let Some(call_id) = self.transcript.waiting_command() else {
            self.notice(
                "no running command waits for input (a card says when one does)",
                NoticeKind::Info,
            );
            return Effect::Redraw;
        };
        self.send(Command::TypeIntoCommand {
            call_id: call_id.clone(),
            input: CommandInput::Focus,
        });
        self.transcript.set_typing_into(Some(&call_id));
        self.typing_into = Some(call_id);
        Effect::Redraw
    }

    /// Esc while typing into a command: keys go to duet again.
    fn stop_typing(&mut self) -> Effect {
        if let Some(call_id) = self.typing_into.take() {
            self.send(Command::TypeIntoCommand {
                call_id,
                input: CommandInput::Release,
            });
        }
        self.transcript.set_typing_into(None);
        Effect::Redraw
    }

    /// Text that no binding claimed: typed into the composer (plain and shifted keys).
    fn typed(&mut self, key: KeyEvent) -> Effect {
        let KeyCode::Char(c) = key.code else {
            return Effect::Nothing;
        };
        if key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
            || self.review.is_open()
        {
            return Effect::Nothing;
        }
        self.quit_armed_at = None;
        self.composer.insert_text(c.encode_utf8(&mut [0; 4]));
        Effect::Redraw
    }

    pub fn on_paste(&mut self, text: &str, now: Instant) -> Effect {
        if self.typing_into.is_some() {
            return self.type_into_command(text.to_string());
        }
        if !self.review.is_open() && is_image_path(text) {
            self.attach_image(text);
            return Effect::Redraw;
        }
        if self.review.is_open() && self.review.is_typing() {
            self.review.insert_text(text);
        } else if !self.review.is_open() {
            self.composer.insert_text(text);
        }
        self.and_files(Effect::Redraw, now)
    }

    /// The contexts a key is looked up in, most specific first.
    fn focus(&self) -> Vec<Context> {
        let mut contexts = Vec::with_capacity(3);
        match self.review.context() {
            Some(context) if self.review.is_open() => contexts.push(context),
            // Typing has focus; the transcript scrolls through global keys (PgUp, ...),
            // so its single-letter bindings never eat typed text.
            _ => {
                // The `@` list is drawn only over the transcript, and its keys are taken
                // only while it can be seen.
                if self.composer.completing() && !self.help_open {
                    contexts.push(Context::Completion);
                }
                contexts.push(Context::Composer);
            }
        }
        contexts.push(Context::Global);
        contexts
    }

    fn help_action(&mut self, action: Action, now: Instant) -> Effect {
        match action {
            Action::ToggleHelp | Action::Interrupt => {
                self.help_open = false;
                Effect::Redraw
            }
            Action::Quit => self.quit(now),
            _ if self.help.handle(action) => Effect::Redraw,
            _ => Effect::Nothing,
        }
    }

    fn action(&mut self, action: Action, now: Instant) -> Effect {
        match action {
            Action::Quit => return self.quit(now),
            Action::Interrupt => return self.interrupt(now),
            Action::CycleMode => {
                let next = next_mode(self.mode);
                self.send(Command::SetMode { mode: next });
            }
            Action::ToggleHelp => self.help_open = true,
            Action::WithdrawPending => self.withdraw_pending(),
            Action::EditMessage => return self.edit_message(),
            Action::TypeIntoCommand => return self.start_typing(),
            _ => {}
        }
        if self.transcript.handle(action) {
            return Effect::Redraw;
        }
        match self.composer.handle(action) {
            ComposerOutcome::Submit(text) => self.submit(text),
            ComposerOutcome::Queue(text) => self.queue(text),
            ComposerOutcome::Changed => Effect::Redraw,
            // Global actions above changed state the screen shows.
            ComposerOutcome::Ignored => Effect::Redraw,
        }
    }

    fn submit(&mut self, text: String) -> Effect {
        if let Some(command) = user_command(&text) {
            return self.run_user_command(command.to_string());
        }
        if text.starts_with('/') {
            self.reload_custom_commands();
        }
        let Some(parsed) = slash::parse(&text, &self.custom) else {
            return self.send_message(unescape(&text).to_string());
        };
        match parsed {
            Ok(command) => self.slash(command),
            Err(message) => {
                self.notice(&message, NoticeKind::Error);
                Effect::Redraw
            }
        }
    }

    /// `!command`: runs in the session's shell between turns; its result reaches the
    /// model with the next message.
    fn run_user_command(&mut self, command: String) -> Effect {
        if command.trim().is_empty() {
            self.notice(
                "type a command after `!` to run it in the session's shell",
                NoticeKind::Error,
            );
        } else if self.busy() {
            self.notice(
                "`!` commands wait until the current turn ends (or Esc to interrupt it)",
                NoticeKind::Error,
            );
        } else {
            self.command_running = true;
            let id = self.next_message_id();
            self.send(Command::RunUserCommand { id, command });
        }
        Effect::Redraw
    }

    /// Whether the agent is working: a turn, or the user's own command.
    fn busy(&self) -> bool {
        self.turn_running || self.command_running
    }

    fn send_message(&mut self, text: String) -> Effect {
        if self.busy() {
            let id = self.next_message_id();
            self.pending.steer(id, text.clone());
            let images = self.take_images();
            self.send(Command::UserMessage { id, text, images });
            self.sync_pending_view();
        } else {
            self.start_turn(text);
        }
        Effect::Redraw
    }

    fn queue(&mut self, text: String) -> Effect {
        if self.busy() {
            self.pending.queue(text);
            self.sync_pending_view();
            Effect::Redraw
        } else {
            self.submit(text)
        }
    }

    /// Sends `text` as the message that starts a turn.
    pub(super) fn start_turn(&mut self, text: String) {
        self.turn_running = true;
        let id = self.next_message_id();
        let images = self.take_images();
        self.send(Command::UserMessage { id, text, images });
    }

    /// `/image PATH`, or a pasted path to an image: it goes with the next message.
    fn attach_image(&mut self, path: &str) {
        let path = path.trim();
        let path = expand_home(path);
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_file() => {
                let name = file_name(&path);
                self.images.push(path);
                self.notice(
                    &format!("image {name} goes with your next message"),
                    NoticeKind::Info,
                );
                self.sync_chips();
            }
            Ok(_) => self.notice(&format!("/image: {path} is not a file"), NoticeKind::Error),
            Err(error) => self.notice(&format!("/image: {path}: {error}"), NoticeKind::Error),
        }
    }

    /// The images attached for the next message, handed over.
    fn take_images(&mut self) -> Vec<String> {
        let images = std::mem::take(&mut self.images);
        self.sync_chips();
        images
    }

    fn sync_chips(&mut self) {
        let chips = self
            .images
            .iter()
            .map(|path| format!("image: {}", file_name(path)))
            .collect();
        self.composer.set_chips(chips);
    }

    /// A new id for a message sent to the agent: they count from 1 in the session.
    fn next_message_id(&mut self) -> MessageId {
        self.messages_sent += 1;
        self.messages_sent
    }

    fn withdraw_pending(&mut self) {
        match self.pending.withdraw_last() {
            Withdrawal::Removed(text) => {
                if self.composer.is_empty() {
                    self.composer.set_text(&text);
                }
                self.sync_pending_view();
            }
            Withdrawal::AskAgent(id) => self.send(Command::WithdrawMessage { id }),
            Withdrawal::Nothing => {}
        }
    }

    fn slash(&mut self, command: SlashCommand) -> Effect {
        match command {
            SlashCommand::Help => self.help_open = true,
            SlashCommand::Mode(Some(mode)) => self.send(Command::SetMode { mode }),
            SlashCommand::Mode(None) => {
                let text = format!("approval mode: {} (Shift-Tab cycles)", self.mode);
                self.notice(&text, NoticeKind::Info);
            }
            SlashCommand::Model(_) => {
                let text = format!(
                    "model: {} — to use another, restart with `duet --model <name>`",
                    self.model
                );
                self.notice(&text, NoticeKind::Info);
            }
            SlashCommand::Clear => {
                if self.busy() {
                    self.notice(
                        "/clear waits until the current turn ends",
                        NoticeKind::Error,
                    );
                } else {
                    self.send(Command::ClearConversation);
                }
            }
            SlashCommand::Diff => return Effect::ShowDiff,
            SlashCommand::Undo(scope) => {
                if self.busy() {
                    self.notice("/undo waits until the current turn ends", NoticeKind::Error);
                } else {
                    self.send(Command::Undo { scope });
                }
            }
            SlashCommand::Mcp => self.show_mcp(),
            SlashCommand::Compact(focus) => {
                if self.busy() {
                    self.notice(
                        "/compact waits until the current turn ends",
                        NoticeKind::Error,
                    );
                } else {
                    self.send(Command::Compact { focus });
                }
            }
            SlashCommand::Init => {
                if self.busy() {
                    self.notice("/init waits until the current turn ends", NoticeKind::Error);
                } else {
                    self.start_turn(INIT_PROMPT.trim_end().to_string());
                }
            }
            SlashCommand::Image(path) => self.attach_image(&path),
            SlashCommand::Ps(Some(id)) => return Effect::StopJob(id),
            SlashCommand::Resume(None) => return Effect::ListSessions,
            SlashCommand::Resume(Some(_)) if self.busy() => {
                self.notice(
                    "/resume waits until the current turn ends (or Esc to interrupt it)",
                    NoticeKind::Error,
                );
            }
            SlashCommand::Resume(Some(id)) => return Effect::Resume(id),
            SlashCommand::Ps(None) => {
                let text = jobs_text(&self.agent.jobs());
                self.notice(&text, NoticeKind::Info);
            }
            SlashCommand::Status => {
                let status = self.status_lines().join("\n");
                self.notice(&status, NoticeKind::Info);
            }
            SlashCommand::Quit => return Effect::Quit,
            SlashCommand::Custom { name, arguments } => {
                // The catalog does not change while the app runs: parsing found it there.
                let Some(command) = self.custom.get(&name) else {
                    self.notice(&format!("unknown command /{name}"), NoticeKind::Error);
                    return Effect::Redraw;
                };
                let text = command.expand(&arguments);
                return self.send_message(text);
            }
        }
        Effect::Redraw
    }

    /// Esc: stop the current step; with nothing running, a second Esc quits.
    fn interrupt(&mut self, now: Instant) -> Effect {
        if self.busy() {
            self.interrupting = true;
            self.send(Command::Interrupt);
            return Effect::Redraw;
        }
        self.quit(now)
    }

    /// The first press arms, a second one within the window quits.
    fn quit(&mut self, now: Instant) -> Effect {
        match self.quit_armed_at {
            Some(armed) if now.duration_since(armed) <= QUIT_WINDOW => Effect::Quit,
            _ => {
                self.quit_armed_at = Some(now);
                let text = if self.busy() {
                    "work is running: press again to stop it and quit"
                } else {
                    "press again to quit"
                };
                self.notice(text, NoticeKind::Info);
                Effect::Redraw
            }
        }
    }

    fn review_outcome(&mut self, outcome: ReviewOutcome) -> Effect {
        match outcome {
            ReviewOutcome::Ignored => Effect::Nothing,
            ReviewOutcome::Changed => Effect::Redraw,
            ReviewOutcome::Send(command) => {
                self.send(command);
                Effect::Redraw
            }
            ReviewOutcome::OpenEditor {
                call_id,
                path,
                content,
            } => Effect::OpenEditor {
                editing: Editing::Proposal { call_id },
                path,
                content,
            },
        }
    }

    /// Ctrl-G: the message goes to `$EDITOR`, ending in a line break as a text file
    /// does (taken off again when it comes back).
    fn edit_message(&self) -> Effect {
        let mut content = self.composer.text();
        if !content.is_empty() {
            content.push('\n');
        }
        Effect::OpenEditor {
            editing: Editing::Message,
            path: MESSAGE_FILE.to_string(),
            content,
        }
    }

    /// The editor closed; `saved` is the file's content, `None` when there is nothing
    /// to take (the editor failed, or the file is gone).
    pub fn editor_finished(&mut self, editing: &Editing, saved: Option<String>) -> Effect {
        match editing {
            Editing::Proposal { call_id } => {
                let outcome = self.review.editor_finished(call_id, saved);
                self.review_outcome(outcome)
            }
            Editing::Message => {
                let Some(saved) = saved else {
                    return Effect::Redraw;
                };
                // The line break every editor ends a file with is not part of the message.
                let saved = saved.strip_suffix('\n').unwrap_or(&saved);
                let saved = saved.strip_suffix('\r').unwrap_or(saved);
                // Unchanged, the input keeps its cursor and its place in the history.
                if saved != self.composer.text() {
                    self.composer.set_text(saved);
                }
                Effect::Redraw
            }
        }
    }

    fn send(&mut self, command: Command) {
        if self.agent.send(command).is_err() {
            self.notice(
                "the agent has stopped; quit and restart duet",
                NoticeKind::Error,
            );
        }
    }

    fn sync_pending_view(&mut self) {
        let views = self
            .pending
            .messages()
            .iter()
            .map(|message| PendingView {
                text: message.text.clone(),
                kind: message.kind,
            })
            .collect();
        self.composer.set_pending(views);
    }

    pub fn tick(&mut self, now: Instant) -> bool {
        self.transcript.tick(now)
    }

    pub fn next_deadline(&self, now: Instant) -> Option<Instant> {
        self.transcript.next_deadline(now)
    }

    fn activity(&self) -> Activity {
        let waiting = self.review.pending_count();
        if waiting > 0 {
            Activity::WaitingForApproval(waiting)
        } else if self.interrupting {
            Activity::Interrupting
        } else if self.typing_into.is_some() {
            Activity::TypingIntoCommand
        } else if self.running_tools > 0 {
            Activity::RunningTools(self.running_tools)
        } else if self.command_running {
            Activity::RunningTools(1)
        } else if self.turn_running {
            Activity::Streaming
        } else {
            Activity::Idle
        }
    }

    /// Renders the whole screen; the cursor and what scrolled are for the painter.
    pub fn render(&mut self, frame: &mut Frame, now: Instant) -> Drawn {
        let area = frame.area();
        let composer_height = self.composer.desired_height(area.width);
        let [main, input, status] = Layout::vertical([
            Constraint::Min(1),
            Constraint::Length(composer_height),
            Constraint::Length(1),
        ])
        .areas(area);
        let buf = frame.buffer_mut();
        let mut scroll = None;
        let transcript_shown = !self.help_open && !self.review.is_open() && !self.inline;
        if self.help_open {
            self.help
                .render(&self.keymap, &self.custom, &self.theme, main, buf);
        } else if self.review.is_open() {
            self.review.render(main, buf);
        } else if self.inline {
            self.transcript.render_live(main, buf, now);
        } else {
            let lines = self.transcript.render(main, buf, now);
            // Only if these rows showed the transcript last frame too.
            scroll = (self.transcript_shown && lines > 0).then(|| Scroll {
                rows: main.top()..main.bottom(),
                lines,
            });
        }
        self.transcript_shown = transcript_shown;
        self.composer.render(input, buf);
        if !self.help_open && !self.review.is_open() {
            // Over the transcript's last rows, just above the input. The painter compares
            // every row it scrolled, so a popup inside the scrolled band is redrawn right.
            self.composer.render_completion(main, buf);
        }
        render_status(&self.status_info(), &self.theme, status, buf);
        let cursor = (!self.review.is_open() && !self.help_open && self.typing_into.is_none())
            .then(|| self.composer.cursor_position(input))
            .flatten();
        Drawn { cursor, scroll }
    }

    fn status_info(&self) -> StatusInfo {
        StatusInfo {
            model: self.model.clone(),
            mode: self.mode,
            tokens_in: self.spend.tokens_in,
            tokens_out: self.spend.tokens_out,
            cost: self.spend.cost,
            context_used: self.spend.context_used,
            branch: self.git.branch.clone(),
            dirty: self.git.dirty,
            activity: self.activity(),
            sandbox: self.sandbox.clone(),
            mcp: self.mcp_summary(),
        }
    }

    pub fn scroll(&mut self, up: bool) -> Effect {
        let action = if up {
            Action::ScrollUp
        } else {
            Action::ScrollDown
        };
        let handled = if self.review.is_open() {
            self.review.handle(action, 0) != ReviewOutcome::Ignored
        } else {
            self.transcript.handle(action)
        };
        if handled {
            Effect::Redraw
        } else {
            Effect::Nothing
        }
    }
}

/// Shift-Tab's order: ask → auto-edit → auto → read-only → ask.
fn next_mode(mode: ApprovalMode) -> ApprovalMode {
    let all = ApprovalMode::ALL;
    let index = all.iter().position(|m| *m == mode).unwrap_or(0);
    all[(index + 1) % all.len()]
}

/// The key hints a panel shows: each action bound in `context` once, with all its keys
/// (`j/↓ next hunk`), in the keymap's order.
fn hints(keymap: &Keymap, context: Context) -> Vec<(String, String)> {
    let mut grouped: Vec<(Vec<String>, Action)> = Vec::new();
    for (key, action) in keymap.bindings(context) {
        match grouped.iter_mut().find(|(_, bound)| *bound == action) {
            Some((keys, _)) => keys.push(key),
            None => grouped.push((vec![key], action)),
        }
    }
    grouped
        .into_iter()
        .map(|(keys, action)| (keys.join("/"), action.short().to_string()))
        .collect()
}

/// The hints a card waiting for input shows: how to type into it and how to stop.
fn input_hints(keymap: &Keymap) -> InputHints {
    let hint = |context, action: Action| match keymap.key_for(context, action) {
        Some(key) => format!("{key} {}", action.short()),
        None => format!("{} (no key bound)", action.short()),
    };
    InputHints {
        focus: hint(Context::Global, Action::TypeIntoCommand),
        release: hint(Context::CommandInput, Action::ReleaseCommand),
    }
}

/// What `/init` asks of the model: an AGENTS.md written the usual way, as an edit the
/// user reviews.
const INIT_PROMPT: &str = include_str!("../../assets/init_prompt.md");

/// The command of `!command` input; `!!text` is the message `!text`.
fn user_command(input: &str) -> Option<&str> {
    input
        .strip_prefix('!')
        .filter(|rest| !rest.starts_with('!'))
}

/// The message to send for input that is neither a command nor `!command`: `//text`
/// sends `/text`, `!!text` sends `!text`.
fn unescape(input: &str) -> &str {
    match input.strip_prefix('!') {
        Some(rest) if rest.starts_with('!') => rest,
        _ => slash::unescape(input),
    }
}

/// The keys of the `@` list for the bottom of its popup: the first key of each of its
/// actions, in the keymap's order (`↑ previous · ↓ next · Tab insert · Esc close`).
fn completion_footer(keymap: &Keymap) -> String {
    let mut shown: Vec<(String, Action)> = Vec::new();
    for (key, action) in keymap.bindings(Context::Completion) {
        if !shown.iter().any(|(_, known)| *known == action) {
            shown.push((key, action));
        }
    }
    let parts: Vec<String> = shown
        .into_iter()
        .map(|(key, action)| format!("{key} {}", action.short()))
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" {} ", parts.join(" · "))
    }
}

/// What the `/` list offers: the built-in commands, then the custom ones, each with a
/// note of its arguments and what it does.
fn command_choices(custom: &Catalog) -> Vec<(String, String)> {
    let note = |arguments: &str, about: &str| {
        [arguments, about]
            .into_iter()
            .filter(|part| !part.is_empty())
            .collect::<Vec<_>>()
            .join("  ")
    };
    slash::COMMANDS
        .iter()
        .map(|info| (info.name.to_string(), note(info.args, info.about)))
        .chain(custom.commands().iter().map(|command| {
            let hint = command.argument_hint.as_deref().unwrap_or_default();
            (command.name.clone(), note(hint, &command.description))
        }))
        .collect()
}

/// `/ps`: one line per background command.
fn jobs_text(jobs: &[crate::shell::jobs::JobView]) -> String {
    if jobs.is_empty() {
        return "no background commands (the model starts them with `shell` and \
                `background: true`)"
            .to_string();
    }
    let lines: Vec<String> = jobs
        .iter()
        .map(|job| {
            let state = match &job.state {
                crate::shell::jobs::JobState::Running => "running".to_string(),
                crate::shell::jobs::JobState::Ended(exit) => format!("ended ({exit})"),
            };
            let command = job.command.lines().next().unwrap_or_default();
            let seconds = job.elapsed.as_secs();
            format!("{} · {state} · {seconds}s · $ {command}", job.id)
        })
        .collect();
    format!("{}\n(`/ps stop ID` stops one)", lines.join("\n"))
}

/// Whether pasted text is just the path of an existing image file (a screenshot dragged
/// in): it is attached instead of typed.
fn is_image_path(text: &str) -> bool {
    let text = text.trim();
    if text.is_empty() || text.contains('\n') {
        return false;
    }
    let path = expand_home(text);
    let lower = path.to_lowercase();
    [".png", ".jpg", ".jpeg", ".gif", ".webp"]
        .iter()
        .any(|extension| lower.ends_with(extension))
        && std::path::Path::new(&path).is_file()
}

/// The last part of `path` (`shot.png`), or `path` itself when it has none.
fn file_name(path: &str) -> String {
    std::path::Path::new(path).file_name().map_or_else(
        || path.to_string(),
        |name| name.to_string_lossy().into_owned(),
    )
}

/// `~/x` as the user's home would have it; anything else unchanged.
fn expand_home(path: &str) -> String {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => std::path::Path::new(&home)
            .join(rest)
            .to_string_lossy()
            .into_owned(),
        _ => path.to_string(),
    }
}

/// Whether the tool `name` only looks at the workspace (duet's read-only tools); any
/// other (a write, an edit, the shell, an MCP server's tool) may change it.
fn only_looks(name: &str) -> bool {
    matches!(name, "read" | "glob" | "grep" | "explore")
}

#[cfg(test)]
mod tests {
    use crossterm::event::KeyEvent;
    use pretty_assertions::assert_eq;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use tokio::sync::mpsc::UnboundedReceiver;

    use super::*;
    use crate::provider::StopReason;
    use crate::tui::painter::Painter;

    struct Harness {
        app: App,
        commands: UnboundedReceiver<Command>,
        now: Instant,
    }

    impl Harness {
        fn new() -> Self {
            let (agent, commands) = AgentHandle::detached();
            let app = App::new(Theme::new(false), Keymap::defaults(), agent, "m".into());
            Self {
                app,
                commands,
                now: Instant::now(),
            }
        }

        fn key(&mut self, code: KeyCode) -> Effect {
            self.app
                .on_key(KeyEvent::new(code, KeyModifiers::NONE), 80, self.now)
        }

        fn ctrl(&mut self, c: char) -> Effect {
            self.app.on_key(
                KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL),
                80,
                self.now,
            )
        }

        fn type_text(&mut self, text: &str) {
            for c in text.chars() {
                self.key(KeyCode::Char(c));
            }
        }

        fn say(&mut self, text: &str) {
            self.type_text(text);
            self.key(KeyCode::Enter);
        }

        fn event(&mut self, event: Event) -> Effect {
            self.app.on_agent_event(&event, self.now)
        }

        fn sent(&mut self) -> Vec<Command> {
            std::iter::from_fn(|| self.commands.try_recv().ok()).collect()
        }

        fn screen(&mut self) -> String {
            let terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
            let now = self.now;
            let mut painter = Painter::new(terminal, false);
            painter.draw(|frame| self.app.render(frame, now)).unwrap();
            let buffer = painter.term().backend().buffer();
            (0..buffer.area.height)
                .map(|y| {
                    (0..buffer.area.width)
                        .map(|x| buffer[(x, y)].symbol())
                        .collect::<String>()
                        .trim_end()
                        .to_string()
                })
                .collect::<Vec<_>>()
                .join("\n")
        }
    }

    /// The `id`th message of the session, `text`.
    fn message(id: MessageId, text: &str) -> Command {
        Command::UserMessage {
            id,
            text: text.into(),
            images: Vec::new(),
        }
    }

    fn finished() -> Event {
        Event::TurnEnd {
            turn: 1,
            outcome: TurnOutcome::Finished {
                stop_reason: StopReason::EndTurn,
            },
        }
    }

    fn files(paths: &[&str]) -> FileList {
        FileList {
            paths: paths.iter().map(|path| path.to_string()).collect(),
            truncated: false,
        }
    }

    #[test]
    fn ps_lists_the_background_commands_or_asks_to_stop_one() {
        let mut h = Harness::new();
        h.say("/ps");
        assert!(
            h.screen().contains("no background commands"),
            "{}",
            h.screen()
        );
        assert_eq!(
            h.app.submit("/ps stop bg1".into()),
            Effect::StopJob("bg1".into())
        );
        let job = crate::shell::jobs::JobView {
            id: "bg1".into(),
            command: "python3 -m http.server 8000\n".into(),
            pid: 42,
            cwd: "/w".into(),
            state: crate::shell::jobs::JobState::Running,
            elapsed: std::time::Duration::from_secs(7),
        };
        assert_eq!(
            jobs_text(&[job]),
            "bg1 · running · 7s · $ python3 -m http.server 8000\n(`/ps stop ID` stops one)"
        );
    }

    #[test]
    fn an_image_goes_with_the_next_message_and_shows_as_a_chip() {
        let dir = tempfile::tempdir().unwrap();
        let shot = dir.path().join("shot.png");
        std::fs::write(&shot, b"\x89PNG\r\n\x1a\n").unwrap();
        let mut h = Harness::new();
        h.say(&format!("/image {}", shot.display()));
        assert!(h.screen().contains("[image: shot.png]"), "{}", h.screen());
        // A pasted path to an image is attached, not typed.
        assert_eq!(
            h.app.on_paste(&shot.display().to_string(), h.now),
            Effect::Redraw
        );
        h.say("what is this?");
        let shot = shot.display().to_string();
        assert!(matches!(
            h.sent().as_slice(),
            [Command::UserMessage { text, images, .. }]
                if text == "what is this?" && images == &[shot.clone(), shot.clone()]
        ));
        assert!(
            !h.screen().contains("[image: shot.png]"),
            "sent with the message"
        );
        h.say("/image /no/such/file.png");
        assert!(h.sent().is_empty());
    }

    #[test]
    fn an_at_sign_lists_the_files_when_none_are_listed_or_they_may_have_changed() {
        let mut h = Harness::new();
        assert_eq!(h.key(KeyCode::Char('@')), Effect::ListFiles);
        assert!(h.screen().contains("listing the workspace's files…"));
        h.key(KeyCode::Char(' '));
        assert_eq!(
            h.key(KeyCode::Char('@')),
            Effect::Redraw,
            "one walk at a time"
        );
        assert_eq!(
            h.app.set_files(files(&["src/main.rs", "a.txt"])),
            Effect::Redraw
        );
        h.type_text("mai");
        let screen = h.screen();
        assert!(screen.contains("│ src/main.rs"), "{screen}");
        assert!(!screen.contains("a.txt"), "{screen}");
        h.key(KeyCode::Char(' '));
        assert_eq!(
            h.key(KeyCode::Char('@')),
            Effect::Redraw,
            "the list is fresh"
        );
        h.event(finished());
        h.key(KeyCode::Char(' '));
        assert_eq!(
            h.key(KeyCode::Char('@')),
            Effect::ListFiles,
            "the turn may have made files"
        );
        h.app.set_files(files(&[]));
        h.now += FILES_MAX_AGE;
        h.key(KeyCode::Char(' '));
        assert_eq!(h.key(KeyCode::Char('@')), Effect::ListFiles, "too old");
    }

    #[test]
    fn enter_and_tab_take_the_chosen_file_while_the_list_is_open() {
        let mut h = Harness::new();
        h.app.set_files(files(&["src/main.rs", "src/lib.rs"]));
        h.type_text("see @mai");
        h.key(KeyCode::Enter);
        assert_eq!(h.sent(), [], "Enter took the file, it sent nothing");
        assert_eq!(h.app.composer.text(), "see @src/main.rs ");
        h.type_text("and @li");
        h.key(KeyCode::Tab);
        assert_eq!(h.app.composer.text(), "see @src/main.rs and @src/lib.rs ");
        h.key(KeyCode::Enter);
        assert_eq!(h.sent(), [message(1, "see @src/main.rs and @src/lib.rs")]);
        // With nothing to choose, Enter sends and ↑ browses history.
        h.say("deploy @staging");
        assert_eq!(h.sent(), [message(2, "deploy @staging")]);
        h.type_text("@zzz");
        h.key(KeyCode::Up);
        assert_eq!(h.app.composer.text(), "deploy @staging");
    }

    #[test]
    fn esc_closes_the_list_without_interrupting_the_agent() {
        let mut h = Harness::new();
        h.say("long task");
        h.sent();
        h.app.set_files(files(&["src/main.rs"]));
        h.type_text("look at @mai");
        h.key(KeyCode::Esc);
        assert_eq!(h.sent(), [], "Esc closed the list only");
        assert_eq!(h.app.activity(), Activity::Streaming);
        assert!(!h.screen().contains("│ src/main.rs"));
        h.key(KeyCode::Esc);
        assert_eq!(h.sent(), [Command::Interrupt]);
        // Help over an open list: Esc closes the help, and the list is back.
        h.type_text(" @mai");
        h.key(KeyCode::F(1));
        h.key(KeyCode::Esc);
        assert!(!h.app.help_open);
        assert!(h.screen().contains("│ src/main.rs"));
        assert_eq!(h.app.composer.text(), "look at @mai @mai");
    }

    #[test]
    fn ctrl_g_edits_the_message_in_the_editor_and_puts_back_what_was_saved() {
        let mut h = Harness::new();
        h.type_text("draft");
        assert_eq!(
            h.ctrl('g'),
            Effect::OpenEditor {
                editing: Editing::Message,
                path: "duet-message.md".into(),
                content: "draft\n".into(),
            }
        );
        h.app
            .editor_finished(&Editing::Message, Some("rewritten\nin two lines\n".into()));
        assert_eq!(h.app.composer.text(), "rewritten\nin two lines");
        assert_eq!(h.sent(), [], "put back, not sent");

        // Saved unchanged: the cursor stays where it was.
        h.key(KeyCode::Home);
        h.ctrl('g');
        h.app
            .editor_finished(&Editing::Message, Some("rewritten\nin two lines\n".into()));
        h.type_text("X");
        assert_eq!(h.app.composer.text(), "rewritten\nXin two lines");
        // The editor failed: nothing changes.
        h.app.editor_finished(&Editing::Message, None);
        assert_eq!(h.app.composer.text(), "rewritten\nXin two lines");
        // CRLF endings, and an empty message written from scratch.
        h.app
            .editor_finished(&Editing::Message, Some("from windows\r\n".into()));
        assert_eq!(h.app.composer.text(), "from windows");
        h.key(KeyCode::Enter);
        h.sent();
        assert_eq!(
            h.ctrl('g'),
            Effect::OpenEditor {
                editing: Editing::Message,
                path: "duet-message.md".into(),
                content: String::new(),
            }
        );
    }

    #[test]
    fn the_list_footer_names_the_users_keys() {
        assert_eq!(
            completion_footer(&Keymap::defaults()),
            " ↑ previous · ↓ next · Tab insert · Esc close "
        );
    }

    #[test]
    fn the_user_away_is_called_back_when_a_turn_ends_or_an_approval_waits() {
        let turn_end = || Event::TurnEnd {
            turn: 1,
            outcome: TurnOutcome::Finished {
                stop_reason: crate::provider::StopReason::EndTurn,
            },
        };
        let mut h = Harness::new();
        h.app.set_bell(Some(Bell::Osc9));
        h.event(turn_end());
        assert_eq!(h.app.take_notification(), None, "focused: no call");
        h.app.set_focused(false);
        h.event(turn_end());
        assert_eq!(
            h.app.take_notification().as_deref(),
            Some("\x1b]9;duet: turn finished\x07")
        );
        assert_eq!(h.app.take_notification(), None, "once");
        h.app.set_bell(None);
        h.event(turn_end());
        assert_eq!(h.app.take_notification(), None, "[ui] notify = false");
    }

    #[test]
    fn compact_init_and_status_do_what_they_say() {
        let mut h = Harness::new();
        h.say("/compact the parser bug");
        assert_eq!(
            h.sent(),
            [Command::Compact {
                focus: Some("the parser bug".into())
            }]
        );
        h.say("/init");
        assert!(matches!(
            h.sent().as_slice(),
            [Command::UserMessage { text, .. }] if text.contains("AGENTS.md")
        ));
        // While that turn runs, /compact waits.
        h.say("/compact");
        assert_eq!(h.sent(), []);
        h.event(Event::TurnEnd {
            turn: 1,
            outcome: TurnOutcome::Interrupted,
        });
        let lines = h.app.status_lines();
        assert_eq!(lines[0], "model: m · mode: ask");
        assert!(
            lines.iter().any(|line| line.starts_with("sandbox: ")),
            "{lines:#?}"
        );
        assert!(
            lines.contains(&"mcp: no servers configured".to_string()),
            "{lines:#?}"
        );
    }

    #[test]
    fn a_bang_runs_a_command_and_a_double_bang_sends_a_message() {
        assert_eq!(user_command("!ls -la"), Some("ls -la"));
        assert_eq!(user_command("!!not a command"), None);
        assert_eq!(unescape("!!not a command"), "!not a command");
        assert_eq!(user_command("hi !there"), None);
        assert_eq!(unescape("//etc"), "/etc");

        let mut h = Harness::new();
        h.say("!echo hi");
        assert!(matches!(
            h.sent().as_slice(),
            [Command::RunUserCommand { command, .. }] if command == "echo hi"
        ));
        // While it runs, Esc stops it rather than arming quit.
        assert_eq!(h.key(KeyCode::Esc), Effect::Redraw);
        assert_eq!(h.sent(), [Command::Interrupt]);
    }

    #[test]
    fn the_tools_that_only_look_are_the_ones_that_share_the_workspace() {
        let core = crate::tools::Registry::core();
        for name in core.names() {
            let shared = core
                .get(name)
                .is_some_and(|tool| tool.concurrency() == crate::tools::Concurrency::Shared);
            assert_eq!(only_looks(name), shared, "{name}");
        }
    }

    #[test]
    fn the_git_figures_are_refreshed_after_each_change_and_each_undo() {
        let mut h = Harness::new();
        let ready = |id: &str, name: &str| Event::ToolCallReady {
            call_id: id.into(),
            name: name.into(),
            arguments: "{}".into(),
            info: crate::tools::CallInfo::default(),
        };
        let end = |id: &str| Event::ToolRunEnd {
            call_id: id.into(),
            is_error: false,
            summary: String::new(),
            output: String::new(),
            checks: None,
        };
        h.event(ready("r", "read"));
        h.event(ready("s", "shell"));
        assert_eq!(h.event(end("r")), Effect::Redraw, "a read changes nothing");
        assert_eq!(h.event(end("s")), Effect::RefreshGit);
        let undone = Event::Undone {
            turns: vec![1],
            files: vec!["a.txt".into()],
        };
        assert_eq!(h.event(undone), Effect::RefreshGit);
    }

    #[test]
    fn effects_of_one_batch_keep_the_work_asked_for_and_any_redraw() {
        assert_eq!(Effect::Redraw.and(Effect::Nothing), Effect::Redraw);
        assert_eq!(Effect::Nothing.and(Effect::Redraw), Effect::Redraw);
        assert_eq!(Effect::Nothing.and(Effect::Nothing), Effect::Nothing);
        assert_eq!(Effect::Redraw.and(Effect::RefreshGit), Effect::RefreshGit);
        assert_eq!(Effect::RefreshGit.and(Effect::Nothing), Effect::RefreshGit);
        assert_eq!(Effect::Quit.and(Effect::RefreshGit), Effect::Quit);
    }

    #[test]
    fn a_message_typed_during_a_run_steers_once_and_stays_pending_until_delivered() {
        let mut h = Harness::new();
        h.say("fix the test");
        assert_eq!(h.sent(), [message(1, "fix the test")]);
        h.event(Event::StepStarted { turn: 1, step: 1 });
        h.say("also check b.txt");
        assert_eq!(
            h.sent(),
            [message(2, "also check b.txt")],
            "sent at once, once"
        );
        assert!(h.screen().contains("also check b.txt"), "shown as pending");
        h.event(Event::UserMessageDelivered {
            id: 2,
            text: "also check b.txt".into(),
        });
        assert_eq!(h.app.pending.messages(), []);
        h.event(finished());
        assert_eq!(h.sent(), [], "nothing is sent twice");
    }

    #[test]
    fn a_queued_message_waits_for_the_end_of_the_turn() {
        let mut h = Harness::new();
        h.say("first");
        h.sent();
        h.type_text("afterwards");
        h.key(KeyCode::Tab);
        assert_eq!(h.sent(), [], "held while the turn runs");
        h.event(finished());
        assert_eq!(h.sent(), [message(2, "afterwards")]);
    }

    #[test]
    fn esc_interrupts_a_running_turn_and_late_events_do_not_revive_it() {
        let mut h = Harness::new();
        h.say("long task");
        h.sent();
        h.key(KeyCode::Esc);
        assert_eq!(h.sent(), [Command::Interrupt]);
        assert_eq!(h.app.activity(), Activity::Interrupting);
        h.event(Event::TurnEnd {
            turn: 1,
            outcome: TurnOutcome::Interrupted,
        });
        assert_eq!(h.app.activity(), Activity::Idle);
        // A delta that was already in flight changes the transcript only.
        h.event(Event::TextDelta {
            text: "late".into(),
        });
        assert_eq!(h.app.activity(), Activity::Idle);
        h.say("correction");
        assert_eq!(h.sent(), [message(2, "correction")]);
    }

    #[test]
    fn withdrawing_a_steer_asks_the_agent_and_returns_the_text_to_the_input() {
        let mut h = Harness::new();
        h.say("task");
        h.say("typo");
        h.sent();
        h.app
            .on_key(KeyEvent::new(KeyCode::Up, KeyModifiers::ALT), 80, h.now);
        assert_eq!(h.sent(), [Command::WithdrawMessage { id: 2 }]);
        h.event(Event::MessageWithdrawn {
            id: 2,
            text: "typo".into(),
        });
        assert_eq!(h.app.composer.text(), "typo");
    }

    #[test]
    fn shift_tab_cycles_the_mode_through_the_agent() {
        let mut h = Harness::new();
        h.key(KeyCode::BackTab);
        assert_eq!(
            h.sent(),
            [Command::SetMode {
                mode: ApprovalMode::AutoEdit
            }]
        );
        h.event(Event::ModeChanged {
            mode: ApprovalMode::AutoEdit,
        });
        assert!(h.screen().contains("AUTO-EDIT"));
    }

    #[test]
    fn ctrl_c_twice_quits_and_once_only_warns() {
        let mut h = Harness::new();
        assert_eq!(h.ctrl('c'), Effect::Redraw);
        assert!(h.screen().contains("press again to quit"));
        assert_eq!(h.ctrl('c'), Effect::Quit);
    }

    #[test]
    fn ctrl_l_repaints_the_screen_wherever_the_focus_is_and_types_nothing() {
        let mut h = Harness::new();
        h.type_text("draft");
        assert_eq!(h.ctrl('l'), Effect::Repaint);
        assert!(h.screen().contains("› draft"), "{}", h.screen());
        h.key(KeyCode::F(1));
        assert_eq!(h.ctrl('l'), Effect::Repaint);
        assert!(h.screen().contains("Keys and commands"), "help stays open");
        assert_eq!(Effect::Redraw.and(Effect::Repaint), Effect::Repaint);
    }

    /// A harness whose workspace has `.duet/commands/review.md` saying `Review
    /// $ARGUMENTS carefully`, loaded the way the terminal UI loads it.
    fn with_review_command() -> (Harness, tempfile::TempDir) {
        let workspace = tempfile::tempdir().unwrap();
        let commands = workspace.path().join(".duet/commands");
        std::fs::create_dir_all(&commands).unwrap();
        std::fs::write(
            commands.join("review.md"),
            "---\ndescription: Review a file\nargument-hint: [file]\n---\nReview $ARGUMENTS carefully\n",
        )
        .unwrap();
        let env = |_: &str| None;
        let locations = Locations::new(workspace.path(), None, &env);
        let mut h = Harness::new();
        h.app.set_custom_commands(locations);
        (h, workspace)
    }

    #[test]
    fn a_custom_command_sends_its_expanded_prompt_as_the_message() {
        let (mut h, _workspace) = with_review_command();
        h.say("/review src/lib.rs");
        assert_eq!(h.sent(), [message(1, "Review src/lib.rs carefully")]);
        assert_eq!(h.app.activity(), Activity::Streaming, "it started a turn");
        // While that turn runs, another one steers it like any message.
        h.say("/review b.rs");
        assert_eq!(h.sent(), [message(2, "Review b.rs carefully")]);
        // Built-in commands keep their meaning; unknown ones suggest the custom ones.
        h.say("/reviw x");
        assert_eq!(h.sent(), []);
        assert!(
            h.screen()
                .contains("unknown command /reviw; did you mean /review?"),
            "{}",
            h.screen()
        );
    }

    #[test]
    fn a_prompt_file_added_or_edited_during_the_session_counts_at_once() {
        let (mut h, workspace) = with_review_command();
        let commands = workspace.path().join(".duet/commands");
        std::fs::write(commands.join("fix.md"), "Fix issue $1 with a test").unwrap();
        std::fs::write(commands.join("review.md"), "Review $ARGUMENTS twice").unwrap();
        h.say("/fix 42");
        assert_eq!(h.sent(), [message(1, "Fix issue 42 with a test")]);
        h.say("/review a.rs");
        assert_eq!(h.sent(), [message(2, "Review a.rs twice")]);
    }

    #[test]
    fn a_slash_opens_the_list_of_commands_and_enter_sends_a_whole_name() {
        let (mut h, _workspace) = with_review_command();
        assert_eq!(
            h.key(KeyCode::Char('/')),
            Effect::Redraw,
            "no walk of files"
        );
        h.type_text("rev");
        let screen = h.screen();
        assert!(screen.contains("commands"), "{screen}");
        assert!(
            screen.contains("/review  [file]  Review a file"),
            "{screen}"
        );
        assert!(!screen.contains("/help"), "{screen}");
        h.key(KeyCode::Tab);
        assert_eq!(h.app.composer.text(), "/review ");
        assert!(
            !h.app.composer.completing(),
            "closed once the arguments start"
        );
        h.type_text("a.rs");
        h.key(KeyCode::Enter);
        assert_eq!(h.sent(), [message(1, "Review a.rs carefully")]);
        h.event(finished());
        // A name typed whole: Enter runs it instead of completing it.
        h.type_text("/status");
        assert!(h.app.composer.completing());
        h.key(KeyCode::Enter);
        assert_eq!(h.app.composer.text(), "");
        assert!(h.screen().contains("model: m"), "{}", h.screen());
        // `//` is a message, not a command.
        h.type_text("//");
        assert!(!h.app.composer.completing());
    }

    #[test]
    fn the_help_lists_the_custom_commands() {
        let (mut h, _workspace) = with_review_command();
        h.key(KeyCode::F(1));
        h.app.help.handle(Action::ScrollBottom);
        let screen = h.screen();
        assert!(screen.contains("Custom commands"), "{screen}");
        assert!(
            screen.contains("Review a file (project: .duet/commands/review.md)"),
            "{screen}"
        );
    }

    #[test]
    fn slash_commands_run_locally_and_are_not_sent_as_messages() {
        let mut h = Harness::new();
        h.say("/mode auto");
        assert_eq!(
            h.sent(),
            [Command::SetMode {
                mode: ApprovalMode::Auto
            }]
        );
        h.say("/clear");
        assert_eq!(h.sent(), [Command::ClearConversation]);
        h.say("//literally");
        assert_eq!(h.sent(), [message(1, "/literally")]);
    }

    #[test]
    fn mcp_servers_show_in_the_status_bar_and_in_slash_mcp() {
        let mut h = Harness::new();
        h.say("/mcp");
        assert!(h.screen().contains("no MCP servers are configured"));
        for (server, state) in [
            ("tracker", ServerState::Starting),
            ("docs", ServerState::Starting),
            ("tracker", ServerState::Ready { tools: 3 }),
            (
                "docs",
                ServerState::Failed {
                    reason: "cannot start `docs-mcp`".into(),
                },
            ),
        ] {
            h.event(Event::McpServer {
                server: server.into(),
                state,
            });
        }
        assert_eq!(
            h.app.status_info().mcp,
            Some(McpSummary {
                ready: 1,
                total: 2,
                trouble: true
            })
        );
        h.say("/mcp");
        let screen = h.screen();
        assert!(screen.contains("mcp: tracker ready (3 tools)"), "{screen}");
        assert!(
            screen.contains("mcp: docs failed: cannot start `docs-mcp`"),
            "{screen}"
        );
        assert!(screen.contains("mcp 1/2"), "{screen}");
        assert_eq!(h.sent(), [], "/mcp is answered locally");
    }

    #[test]
    fn undo_is_sent_between_turns_and_its_answer_is_shown() {
        use crate::agent::protocol::UndoScope;
        let mut h = Harness::new();
        h.say("/undo");
        h.say("/undo all");
        assert_eq!(
            h.sent(),
            [
                Command::Undo {
                    scope: UndoScope::LastTurn
                },
                Command::Undo {
                    scope: UndoScope::All
                }
            ]
        );
        h.event(Event::Undone {
            turns: vec![2],
            files: vec!["src/a.rs".into()],
        });
        h.event(Event::UndoFailed {
            message: "Nothing was undone: b.rs changed after duet's turn".into(),
        });
        let screen = h.screen();
        assert!(screen.contains("undone: src/a.rs"), "{screen}");
        assert!(
            screen.contains("Nothing was undone: b.rs changed"),
            "{screen}"
        );

        h.say("go");
        h.sent();
        h.say("/undo");
        assert_eq!(h.sent(), [], "not while a turn runs");
        assert!(
            h.screen()
                .contains("/undo waits until the current turn ends")
        );
    }

    #[test]
    fn an_approval_takes_the_keys_until_it_is_decided() {
        let mut h = Harness::new();
        h.say("run it");
        h.sent();
        h.event(Event::ApprovalNeeded {
            call_id: "c1".into(),
            why: "ask mode".into(),
            request: crate::agent::protocol::ApprovalView::Command {
                command: "cargo fmt".into(),
                cwd: "./".into(),
                class: crate::policy::CommandClass::WritesWorkspace,
                reasons: Vec::new(),
                protected: Vec::new(),
            },
        });
        assert!(h.screen().contains("cargo fmt"));
        h.type_text("x");
        assert_eq!(h.app.composer.text(), "", "typing does not reach the input");
        h.key(KeyCode::Char('y'));
        assert_eq!(
            h.sent(),
            [Command::Decide {
                call_id: "c1".into(),
                decision: crate::policy::Decision::Approve
            }]
        );
    }

    #[test]
    fn whole_screen_mid_turn_at_80x24() {
        let mut h = Harness::new();
        h.event(Event::SessionStarted {
            model: "claude-sonnet-4-5".into(),
            workspace: "/repo".into(),
            instructions: vec!["/repo/CLAUDE.md".into()],
            mode: ApprovalMode::AutoEdit,
            sandbox: crate::shell::sandbox::Protections::example(true, true),
            hooks: Vec::new(),
        });
        h.say("why does the parser fail?");
        h.event(Event::UserMessageDelivered {
            id: 1,
            text: "why does the parser fail?".into(),
        });
        h.event(Event::StepStarted { turn: 1, step: 1 });
        h.event(Event::TextDelta {
            text: "Let me look at **the parser** first.\n".into(),
        });
        for (id, name, args) in [
            ("c1", "read", r#"{"path": "src/parse.rs"}"#),
            ("c2", "grep", r#"{"pattern": "fn parse", "path": "src"}"#),
        ] {
            h.event(Event::ToolCallBegin {
                call_id: id.into(),
                name: name.into(),
            });
            h.event(Event::ToolCallReady {
                call_id: id.into(),
                name: name.into(),
                arguments: args.into(),
                info: crate::tools::Registry::core().describe(name, args),
            });
            h.event(Event::ToolRunBegin { call_id: id.into() });
        }
        h.event(Event::ToolRunEnd {
            call_id: "c1".into(),
            is_error: false,
            summary: "read 120 lines of src/parse.rs".into(),
            output: String::new(),
            checks: None,
        });
        h.say("also look at the lexer");
        h.app.tick(h.now + Duration::from_secs(1));
        insta::assert_snapshot!(h.screen());
    }

    /// The bytes a frame writes to the terminal, with the model streaming OSC 52, a
    /// title, a link and cursor-up + erase-line, and a command up for approval carrying
    /// a bidi override and an ESC: nothing but the painter's own sequences gets out, the
    /// payloads are gone, and placeholders show where they were.
    #[test]
    fn no_escape_sequence_from_the_model_reaches_the_terminal() {
        use crate::agent::protocol::ApprovalView;
        use crate::policy::CommandClass;
        use crate::tui::painter::recording::{Recording, foreign_control};

        let mut h = Harness::new();
        h.say("go");
        h.event(Event::StepStarted { turn: 1, step: 1 });
        h.event(Event::ThinkingDelta {
            text: "see \x1b]8;;https://evil.test\x1b\\here\x1b]8;;\x1b\\\n".into(),
        });
        for text in [
            "Copying \x1b",
            "]52;c;cm0gLXJmIH4=\x07 now.\n\x1b]0;owned",
            "\x07Title \x1b[1A\x1b[2K",
            "approved\n",
        ] {
            h.event(Event::TextDelta { text: text.into() });
        }
        let command = "cat notes\u{202e}txt.sh\u{200b} \x1b[2K";
        h.event(Event::ToolCallReady {
            call_id: "c1".into(),
            name: "shell".into(),
            arguments: serde_json::json!({ "command": command }).to_string(),
            info: crate::tools::Registry::core().describe(
                "shell",
                &serde_json::json!({ "command": command }).to_string(),
            ),
        });
        let mut painter = Painter::new(Terminal::new(Recording::new(100, 30)).unwrap(), false);
        let now = h.now;
        painter.draw(|frame| h.app.render(frame, now)).unwrap();
        let transcript = h.screen();
        h.event(Event::ApprovalNeeded {
            call_id: "c1".into(),
            why: "ask mode asks before every command".into(),
            request: ApprovalView::Command {
                command: command.into(),
                cwd: "./".into(),
                class: CommandClass::Unknown,
                reasons: Vec::new(),
                protected: Vec::new(),
            },
        });
        painter.draw(|frame| h.app.render(frame, now)).unwrap();

        let bytes = painter.term().backend().bytes();
        assert_eq!(foreign_control(&bytes), Vec::<String>::new());
        let text = String::from_utf8(bytes).unwrap();
        for payload in ["52;c;", "cm0gLXJmIH4", "owned", "evil.test", "[1A"] {
            assert!(!text.contains(payload), "{payload:?} reached the terminal");
        }
        assert!(text.contains("⟨U+202E⟩"), "the override is written out");
        // What the frame shows instead: placeholders, and the command for approval
        // exactly, its bidi override, zero-width space and ESC written out.
        for shown in [
            "Copying ␛ now.",
            "␛Title ␛␛approved",
            "shell $ cat notestxt.sh ␛",
        ] {
            assert!(
                transcript.contains(shown),
                "{shown:?} not in:\n{transcript}"
            );
        }
        let approval = h.screen();
        assert!(
            approval.contains("$ cat notes⟨U+202E⟩txt.sh⟨U+200B⟩ ⟨U+001B⟩[2K"),
            "{approval}"
        );
    }

    /// A turn whose shell call `s` runs and waits at `prompt`.
    fn command_waiting(h: &mut Harness, prompt: &str) {
        h.say("clean up");
        h.sent();
        for event in [
            Event::ToolCallBegin {
                call_id: "s".into(),
                name: "shell".into(),
            },
            Event::ToolRunBegin {
                call_id: "s".into(),
            },
            Event::CommandWaitingForInput {
                call_id: "s".into(),
                program: "rm".into(),
                line: prompt.into(),
            },
        ] {
            h.event(event);
        }
    }

    fn typed(text: &str) -> Command {
        Command::TypeIntoCommand {
            call_id: "s".into(),
            input: CommandInput::Text { text: text.into() },
        }
    }

    #[test]
    fn ctrl_y_gives_the_keys_to_the_waiting_command_and_esc_takes_them_back() {
        let mut h = Harness::new();
        command_waiting(&mut h, "remove build?");
        h.ctrl('y');
        let focus = Command::TypeIntoCommand {
            call_id: "s".into(),
            input: CommandInput::Focus,
        };
        assert_eq!(h.sent(), [focus]);
        assert!(h.screen().contains("⌨ typing into a command"));
        // Every key goes to the command as a terminal sends it: Ctrl-C included, which
        // would otherwise quit or arm quitting.
        h.type_text("y");
        h.key(KeyCode::Enter);
        h.ctrl('c');
        h.key(KeyCode::Up);
        h.app.on_paste("pasted", h.now);
        assert_eq!(
            h.sent(),
            [
                typed("y"),
                typed("\r"),
                typed("\u{3}"),
                typed("\u{1b}[A"),
                typed("pasted")
            ]
        );
        assert!(
            h.app.composer.is_empty(),
            "nothing was typed into the message"
        );
        h.key(KeyCode::Esc);
        let release = Command::TypeIntoCommand {
            call_id: "s".into(),
            input: CommandInput::Release,
        };
        assert_eq!(h.sent(), [release]);
        // The keys are duet's again: Esc interrupts.
        h.key(KeyCode::Esc);
        assert_eq!(h.sent(), [Command::Interrupt]);
    }

    #[test]
    fn the_keys_return_to_duet_when_the_command_ends() {
        let mut h = Harness::new();
        command_waiting(&mut h, "remove build?");
        h.ctrl('y');
        h.sent();
        h.event(Event::ToolRunEnd {
            call_id: "s".into(),
            is_error: false,
            summary: "exit 0".into(),
            output: String::new(),
            checks: None,
        });
        h.type_text("thanks");
        assert_eq!(h.sent(), []);
        assert_eq!(h.app.composer.text(), "thanks");
    }

    #[test]
    fn ctrl_y_without_a_waiting_command_says_so() {
        let mut h = Harness::new();
        h.ctrl('y');
        assert_eq!(h.sent(), []);
        assert!(h.screen().contains("no running command waits for input"));
        h.type_text("hi");
        assert_eq!(h.app.composer.text(), "hi");
    }

    #[test]
    fn a_message_a_hook_refused_comes_back_to_the_input() {
        let mut h = Harness::new();
        h.say("my password is hunter2");
        let id = match h.sent().as_slice() {
            [Command::UserMessage { id, .. }] => *id,
            other => panic!("{other:?}"),
        };
        h.event(Event::MessageWithdrawn {
            id,
            text: "my password is hunter2".into(),
        });
        assert_eq!(h.app.composer.text(), "my password is hunter2");
    }
}
