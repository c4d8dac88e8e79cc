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
use ratatui::layout::{Constraint, Layout, Rect};

use crate::agent::{AgentHandle, Command, Event, TurnOutcome};
use crate::policy::ApprovalMode;

use super::action::{Action, Context};
use super::composer::{Composer, ComposerOutcome, PendingView};
use super::help::HelpOverlay;
use super::keymap::Keymap;
use super::pending::{Pending, PendingKind, Withdrawal};
use super::review::{ReviewOutcome, ReviewQueue};
use super::slash::{self, SlashCommand};
use super::status::{Activity, StatusInfo, render_status};
use super::theme::Theme;
use super::transcript::{NoticeKind, Transcript};

/// How long a first Ctrl-C (or idle Esc) waits for the second one that quits.
const QUIT_WINDOW: Duration = Duration::from_secs(2);

/// Work the event loop does on the app's behalf.
#[derive(Debug, PartialEq)]
pub enum Effect {
    Nothing,
    Redraw,
    Quit,
    /// Run `$EDITOR` on `content`, then report back with [`App::editor_finished`].
    OpenEditor {
        call_id: String,
        path: String,
        content: String,
    },
    /// Compute the session's changes since it started and show them (`/diff`).
    ShowDiff,
    /// Re-read the git branch and dirty count for the status line.
    RefreshGit,
}

/// What the status line shows that comes from outside the agent's events.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GitStatus {
    pub branch: Option<String>,
    pub dirty: usize,
}

pub struct App {
    theme: Theme,
    keymap: Keymap,
    transcript: Transcript,
    review: ReviewQueue,
    composer: Composer,
    pending: Pending,
    agent: AgentHandle,
    model: String,
    mode: ApprovalMode,
    tokens: (u64, u64),
    git: GitStatus,
    turn_running: bool,
    interrupting: bool,
    running_tools: usize,
    help_open: bool,
    help: HelpOverlay,
    quit_armed_at: Option<Instant>,
}

impl App {
    pub fn new(theme: Theme, keymap: Keymap, agent: AgentHandle, model: String) -> Self {
        let mut review = ReviewQueue::new(theme.clone());
        for context in [Context::DiffReview, Context::Approval] {
            review.set_context_hints(context, hints(&keymap, context));
        }
        Self {
            transcript: Transcript::new(theme.clone()),
            review,
            composer: Composer::new(theme.clone()),
            theme,
            keymap,
            pending: Pending::default(),
            agent,
            model,
            mode: ApprovalMode::default(),
            tokens: (0, 0),
            git: GitStatus::default(),
            turn_running: false,
            interrupting: false,
            running_tools: 0,
            help_open: false,
            help: HelpOverlay::default(),
            quit_armed_at: None,
        }
    }

    /// Shows a line in the transcript that the UI itself produced.
    pub fn notice(&mut self, text: &str, kind: NoticeKind) {
        self.transcript.push_notice(text, kind);
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
            Event::SessionStarted { model, mode, .. } => {
                self.model.clone_from(model);
                self.mode = *mode;
            }
            Event::ModeChanged { mode } => self.mode = *mode,
            Event::Usage { session, .. } => {
                self.tokens = (
                    session.input_tokens + session.cache_read_tokens + session.cache_write_tokens,
                    session.output_tokens,
                );
            }
            Event::UserMessageDelivered { text } => {
                self.pending.delivered(text);
            }
            Event::MessageWithdrawn { text } => {
                if self.pending.withdrawn(text) && self.composer.is_empty() {
                    self.composer.set_text(text);
                }
            }
            Event::ToolRunBegin { .. } => self.running_tools += 1,
            Event::ToolRunEnd { .. } => self.running_tools = self.running_tools.saturating_sub(1),
            Event::TurnEnd { outcome } => {
                self.end_turn(outcome);
                effect = Effect::RefreshGit;
            }
            Event::ConversationCleared => self.transcript.clear(),
            _ => {}
        }
        match self.review.on_event(event) {
            ReviewOutcome::Send(command) => self.send(command),
            ReviewOutcome::Ignored | ReviewOutcome::Changed | ReviewOutcome::OpenEditor { .. } => {}
        }
        self.transcript.on_event(event, now);
        self.sync_pending_view();
        match effect {
            Effect::Nothing => Effect::Redraw,
            other => other,
        }
    }

    fn end_turn(&mut self, outcome: &TurnOutcome) {
        self.turn_running = false;
        self.interrupting = false;
        self.running_tools = 0;
        if matches!(outcome, TurnOutcome::Finished { .. }) {
            if let Some(next) = self.pending.next_queued() {
                self.start_turn(next);
            }
        }
    }

    /// Handles a key press. `area_width` is the screen width (the review panel needs it).
    pub fn on_key(&mut self, key: KeyEvent, area_width: u16, now: Instant) -> Effect {
        if key.kind == KeyEventKind::Release {
            return Effect::Nothing;
        }
        if self.review.is_open() && self.review.is_typing() {
            return self.review_outcome(self.review.handle_text(key));
        }
        let contexts = self.focus();
        let Some(action) = self.keymap.action(&contexts, &key) else {
            return self.typed(key);
        };
        if action != Action::Quit && action != Action::Interrupt {
            self.quit_armed_at = None;
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

    /// Text that no binding claimed: typed into the composer (plain and shifted keys).
    fn typed(&mut self, key: KeyEvent) -> Effect {
        let KeyCode::Char(c) = key.code else {
            return Effect::Nothing;
        };
        if key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) || self.review.is_open()
        {
            return Effect::Nothing;
        }
        self.quit_armed_at = None;
        self.composer.insert_text(c.encode_utf8(&mut [0; 4]));
        Effect::Redraw
    }

    pub fn on_paste(&mut self, text: &str) -> Effect {
        if self.review.is_open() && self.review.is_typing() {
            self.review.insert_text(text);
        } else if !self.review.is_open() {
            self.composer.insert_text(text);
        }
        Effect::Redraw
    }

    /// The contexts a key is looked up in, most specific first.
    fn focus(&self) -> Vec<Context> {
        let mut contexts = Vec::with_capacity(3);
        match self.review.context() {
            Some(context) if self.review.is_open() => contexts.push(context),
            _ => contexts.extend([Context::Composer, Context::Transcript]),
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
        let Some(parsed) = slash::parse(&text) else {
            return self.send_message(slash::unescape(&text).to_string());
        };
        match parsed {
            Ok(command) => self.slash(command),
            Err(message) => {
                self.notice(&message, NoticeKind::Error);
                Effect::Redraw
            }
        }
    }

    fn send_message(&mut self, text: String) -> Effect {
        if self.turn_running {
            self.pending.push(text.clone(), PendingKind::Steer);
            self.send(Command::UserMessage { text });
            self.sync_pending_view();
        } else {
            self.start_turn(text);
        }
        Effect::Redraw
    }

    fn queue(&mut self, text: String) -> Effect {
        if self.turn_running {
            self.pending.push(text, PendingKind::Queued);
            self.sync_pending_view();
            Effect::Redraw
        } else {
            self.submit(text)
        }
    }

    fn start_turn(&mut self, text: String) {
        self.turn_running = true;
        self.send(Command::UserMessage { text });
    }

    fn withdraw_pending(&mut self) {
        match self.pending.withdraw_last() {
            Withdrawal::Removed(text) => {
                if self.composer.is_empty() {
                    self.composer.set_text(&text);
                }
                self.sync_pending_view();
            }
            Withdrawal::AskAgent(text) => self.send(Command::WithdrawMessage { text }),
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
                if self.turn_running {
                    self.notice("/clear waits until the current turn ends", NoticeKind::Error);
                } else {
                    self.send(Command::ClearConversation);
                }
            }
            SlashCommand::Diff => return Effect::ShowDiff,
            SlashCommand::Undo => self.notice(
                "/undo is not available yet: checkpoints arrive with the safety work",
                NoticeKind::Error,
            ),
            SlashCommand::Quit => return Effect::Quit,
        }
        Effect::Redraw
    }

    /// Esc: stop the current step; with nothing running, a second Esc quits.
    fn interrupt(&mut self, now: Instant) -> Effect {
        if self.turn_running {
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
                let text = if self.turn_running {
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
                call_id,
                path,
                content,
            },
        }
    }

    /// The editor closed; `saved` is the file's content if the user saved it.
    pub fn editor_finished(&mut self, call_id: &str, saved: Option<String>) -> Effect {
        let outcome = self.review.editor_finished(call_id, saved);
        self.review_outcome(outcome)
    }

    fn send(&mut self, command: Command) {
        if self.agent.send(command).is_err() {
            self.notice("the agent has stopped; quit and restart duet", NoticeKind::Error);
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
        } else if self.running_tools > 0 {
            Activity::RunningTools(self.running_tools)
        } else if self.turn_running {
            Activity::Streaming
        } else {
            Activity::Idle
        }
    }

    pub fn render(&mut self, frame: &mut Frame, now: Instant) {
        let area = frame.area();
        let composer_height = self.composer.desired_height(area.width);
        let [main, input, status] = Layout::vertical([
            Constraint::Min(1),
            Constraint::Length(composer_height),
            Constraint::Length(1),
        ])
        .areas(area);
        let buf = frame.buffer_mut();
        if self.help_open {
            self.help.render(&self.keymap, &self.theme, main, buf);
        } else if self.review.is_open() {
            self.review.render(main, buf);
        } else {
            self.transcript.render(main, buf, now);
        }
        self.composer.render(input, buf);
        render_status(&self.status_info(), &self.theme, status, buf);
        if !self.review.is_open()
            && !self.help_open
            && let Some(position) = self.composer.cursor_position(input)
        {
            frame.set_cursor_position(position);
        }
    }

    fn status_info(&self) -> StatusInfo {
        StatusInfo {
            model: self.model.clone(),
            mode: self.mode,
            tokens_in: self.tokens.0,
            tokens_out: self.tokens.1,
            cost: None,
            context_used: None,
            branch: self.git.branch.clone(),
            dirty: self.git.dirty,
            activity: self.activity(),
        }
    }

    /// The area of the main pane for a screen of `area` (mouse scrolling needs it).
    pub fn main_area(&self, area: Rect) -> Rect {
        let composer_height = self.composer.desired_height(area.width);
        let [main, _, _] = Layout::vertical([
            Constraint::Min(1),
            Constraint::Length(composer_height),
            Constraint::Length(1),
        ])
        .areas(area);
        main
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
        if handled { Effect::Redraw } else { Effect::Nothing }
    }
}

/// Shift-Tab's order: ask → auto-edit → auto → read-only → ask.
fn next_mode(mode: ApprovalMode) -> ApprovalMode {
    let all = ApprovalMode::ALL;
    let index = all.iter().position(|m| *m == mode).unwrap_or(0);
    all[(index + 1) % all.len()]
}

/// The key hints a panel shows: every binding of `context`, described by the keymap.
fn hints(keymap: &Keymap, context: Context) -> Vec<(String, String)> {
    keymap
        .bindings(context)
        .into_iter()
        .map(|(key, action)| (key, keymap.description(context, action).to_string()))
        .collect()
}
