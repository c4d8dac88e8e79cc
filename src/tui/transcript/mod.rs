//! The conversation view: the scrollback of user messages, the model's markdown,
//! thinking, tool cards and notices.
//!
//! Owns: turning agent [`Event`]s into cells, pacing streamed text (`chunking.rs`),
//! scrolling (`scroll.rs`) and drawing the visible window. Does not own: the terminal,
//! the event loop, clocks (every `now` comes in as an argument) or key bindings (it
//! receives [`Action`]s).
//! Invariant: per frame, work is bounded by what is visible plus what changed: cells
//! cache their wrapped rows per width, heights live in a Fenwick tree, and only cells
//! marked dirty are measured again. A resize or a toggle re-measures every cell once.
//!
//! Choices worth knowing:
//! - Streamed text is committed line by line; the line still arriving is shown raw
//!   (not parsed) once everything before it is revealed, then rendered as markdown in
//!   place when its line break comes (`stream.rs`). Turn end, a tool call, a new step
//!   or a user message reveal everything pending at once.
//! - Long code lines wrap at the column, continuation rows marked `↪` (`wrap.rs`).
//! - A notice pushed while a reply streams goes below it; the reply keeps growing above.
//! - Thinking is shown while it streams and collapsed to `▸ thinking (N lines)` once it
//!   ends; ToggleThinking then switches all blocks between expanded and collapsed.
//! - Tool cards are expanded by default; ToggleCards collapses finished cards to their
//!   header and result line. Running cards always show their live output tail.

mod cell;
mod chunking;
mod highlight;
mod live_output;
mod markdown;
mod restore;
mod scroll;
mod stream;
mod tool_card;
mod view;
mod wrap;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::time::Instant;

use self::cell::{AssistantCell, Cell, ThinkingCell, ThinkingView, ViewOptions};
use self::scroll::Scroll;
use self::stream::TextStream;
use self::tool_card::ToolCard;
use self::view::Layout;
use crate::agent::wording;
use crate::agent::{Event, TurnOutcome};
use crate::mcp::ServerState;
use crate::provider::StopReason;
use crate::tui::action::Action;
use crate::tui::theme::Theme;

pub use self::cell::NoticeKind;
/// For the fuzz entry points (`crate::fuzzing`).
pub(crate) use self::markdown::render as render_markdown;

struct Entry {
    cell: Cell,
    /// Blank rows above the cell (none between stacked tool cards).
    gap: usize,
    /// Changed since its height was last measured (it is then in `Layout::dirty`).
    dirty: bool,
}

/// The streamed reply being received and the cell it lands in.
struct ActiveText {
    cell: usize,
    stream: TextStream,
}

pub struct Transcript {
    theme: Theme,
    cells: Vec<Entry>,
    cards: HashMap<String, usize>,
    /// Cards without a result yet.
    live_cards: Vec<usize>,
    /// Successful edits of the current step, which may still get a checks report.
    step_edits: Vec<usize>,
    text: Option<ActiveText>,
    thinking: Option<usize>,
    options: ViewOptions,
    layout: Layout,
    scroll: Scroll,
    /// The size of the last render: scrolling between renders works in it.
    viewport: (u16, u16),
    /// The instant whose clock (spinners, elapsed times) the screen shows or the frame
    /// already asked for will show: set by a render and by a tick that found the clock
    /// moved, so the next animation deadline is always after it.
    clock_shown: Option<Instant>,
    /// The area and first visible row of the last render, to tell how far the view
    /// scrolled since.
    window: Option<(ratatui::layout::Rect, usize)>,
    /// Cells already handed out by [`Transcript::take_finished`].
    taken: usize,
    /// How a card waiting for input says to type into it, and to stop typing.
    input_hints: InputHints,
    /// The call whose command the user's keys go to.
    typing_into: Option<String>,
}

/// The key hints a card shows while its command waits for input.
#[derive(Clone, Debug, Default)]
pub struct InputHints {
    /// How to start typing into the command (`ctrl-y to type into it`).
    pub focus: String,
    /// How to give the keys back (`esc to stop typing`).
    pub release: String,
}

impl Transcript {
    pub fn new(theme: Theme) -> Self {
        Self {
            theme,
            cells: Vec::new(),
            cards: HashMap::new(),
            live_cards: Vec::new(),
            step_edits: Vec::new(),
            text: None,
            thinking: None,
            options: ViewOptions::default(),
            layout: Layout::default(),
            scroll: Scroll::default(),
            viewport: (0, 0),
            clock_shown: None,
            window: None,
            taken: 0,
            input_hints: InputHints::default(),
            typing_into: None,
        }
    }

    /// Shows the images a message went with as chips under it: the message is the last
    /// cell, just delivered. False when there is no such cell to add them to (none
    /// attached, or inline mode already wrote it to the scrollback).
    fn add_image_chips(&mut self, attached: &[String]) -> bool {
        if attached.is_empty() {
            return false;
        }
        let index = self.cells.len().saturating_sub(1);
        if index < self.taken {
            return false;
        }
        let chips: Vec<String> = attached
            .iter()
            .map(|name| format!("image: {name}"))
            .collect();
        let style = self.theme.accent;
        let Some(Cell::User(cell)) = self.cells.get_mut(index).map(|entry| &mut entry.cell) else {
            return false;
        };
        cell.add_chips(&chips, style);
        self.touch(index);
        true
    }

    /// The hints cards waiting for input show, from the keymap.
    pub fn set_input_hints(&mut self, hints: InputHints) {
        self.input_hints = hints;
    }

    /// The newest running command that waits for keyboard input.
    pub fn waiting_command(&self) -> Option<String> {
        self.cards
            .iter()
            .filter(|&(_, &index)| self.card(index).is_some_and(ToolCard::is_waiting_for_input))
            .max_by_key(|&(_, &index)| index)
            .map(|(call_id, _)| call_id.clone())
    }

    /// Whether the call's card is still running.
    pub fn is_running(&self, call_id: &str) -> bool {
        self.cards
            .get(call_id)
            .and_then(|&index| self.card(index))
            .is_some_and(|card| !card.is_done())
    }

    /// Marks the card the user's keys go to (`None`: back to duet).
    pub fn set_typing_into(&mut self, call_id: Option<&str>) {
        if let Some(old) = self.typing_into.take() {
            let hint = self.input_hints.focus.clone();
            self.update_card(&old, |card| card.set_typing(false, &hint));
        }
        if let Some(call_id) = call_id {
            let hint = self.input_hints.release.clone();
            if self.update_card(call_id, |card| card.set_typing(true, &hint)) {
                self.typing_into = Some(call_id.to_string());
            }
        }
    }

    /// Applies an agent event; true when what is on screen may have changed.
    pub fn on_event(&mut self, event: &Event, now: Instant) -> bool {
        match event {
            Event::SessionStarted {
                model,
                workspace,
                instructions,
                mode,
                sandbox,
                hooks,
            } => {
                let text =
                    wording::session_header(model, *mode, workspace, instructions, sandbox, hooks)
                        .join("\n");
                self.push_notice(&text, NoticeKind::Info);
                let gaps = sandbox.gaps();
                if !gaps.is_empty() {
                    self.push_notice(&gaps.join("\n"), NoticeKind::Warning);
                }
            }
            Event::UserMessageDelivered { text, .. } => {
                self.end_streams();
                let cell = Cell::user(text, &self.theme);
                self.push_cell(cell);
            }
            Event::MessageWithdrawn { text, .. } => {
                self.push_notice(&wording::withdrawn_line(text), NoticeKind::Info);
            }
            // A turn starts with the message the user sees already.
            Event::TurnStarted { .. } => return false,
            Event::StepStarted { .. } => return self.end_step(),
            Event::TextDelta { text } => {
                // Text that only joins the lines waiting to be revealed changes nothing
                // on screen: no frame for it.
                let changed_cells = self.thinking.is_some() || self.text.is_none();
                self.end_thinking();
                self.active_text().stream.push(text);
                return self.advance_text(now) || changed_cells;
            }
            Event::ThinkingDelta { text } => self.thinking_delta(text),
            Event::ToolCallBegin { call_id, name } => {
                self.end_streams();
                self.card_or_new(call_id, name, now);
            }
            Event::ToolCallReady {
                call_id,
                name,
                info,
                ..
            } => {
                self.end_streams();
                let index = self.card_or_new(call_id, name, now);
                self.update_card_at(index, |card| card.ready(name, &info.summary));
            }
            Event::ToolRunBegin { call_id } => {
                return self.update_card(call_id, |c| c.run_begin(now));
            }
            Event::ToolOutputDelta { call_id, text } => {
                return self.update_card(call_id, |c| c.output(text));
            }
            Event::HookNotice {
                hook_event,
                hook,
                text,
                warning,
            } => {
                let kind = if *warning {
                    NoticeKind::Warning
                } else {
                    NoticeKind::Info
                };
                self.push_notice(&wording::hook_notice_line(hook_event, hook, text), kind);
            }
            Event::CommandWaitingForInput {
                call_id,
                program,
                line,
            } => {
                let hint = if self.typing_into.as_deref() == Some(call_id.as_str()) {
                    &self.input_hints.release
                } else {
                    &self.input_hints.focus
                }
                .clone();
                return self.update_card(call_id, |c| c.waiting_for_input(program, line, &hint));
            }
            Event::ToolRunEnd {
                call_id,
                is_error,
                summary,
                output,
                checks,
            } => {
                self.run_end(call_id, *is_error, summary, output, now);
                if let Some(report) = checks {
                    self.update_card(call_id, |card| card.post_write_checks(report));
                }
            }
            Event::ImagesAttached {
                attached, refused, ..
            } => {
                if !self.add_image_chips(attached)
                    && let Some(text) = wording::images_attached_line(attached)
                {
                    self.push_notice(&text, NoticeKind::Info);
                }
                for problem in refused {
                    self.push_notice(&format!("image not sent: {problem}"), NoticeKind::Warning);
                }
            }
            Event::FilesAttached {
                files, problems, ..
            } => {
                if let Some(text) = wording::attached_line(files) {
                    self.push_notice(&text, NoticeKind::Info);
                }
                if !problems.is_empty() {
                    self.push_notice(&problems.join("\n"), NoticeKind::Warning);
                }
            }
            Event::UserCommandStarted { id, command } => {
                self.end_streams();
                let key = user_command_card(*id);
                let index = self.card_or_new(&key, "shell", now);
                let first = command.lines().next().unwrap_or_default();
                self.update_card_at(index, |card| {
                    card.ready("shell", &format!("! {first}"));
                    card.run_begin(now);
                });
            }
            Event::UserCommandOutput { id, text } => {
                return self.update_card(&user_command_card(*id), |c| c.output(text));
            }
            Event::UserCommandEnded {
                id,
                is_error,
                summary,
                output,
            } => self.run_end(&user_command_card(*id), *is_error, summary, output, now),
            Event::InstructionsLoaded { files, .. } => {
                self.push_notice(&wording::instructions_loaded_line(files), NoticeKind::Info);
            }
            Event::ChecksReported { call_id, report } => {
                if !self.update_card(call_id, |c| c.checks(report)) {
                    self.push_notice(report, NoticeKind::Info);
                }
            }
            Event::EditProposed { call_id, diff, .. } => {
                return self.update_card(call_id, |c| c.edit_proposed(diff));
            }
            Event::ApprovalNeeded { call_id, why, .. } => {
                return self.update_card(call_id, |c| c.approval_needed(why));
            }
            Event::ApprovalClosed { call_id, decision } => {
                return self.update_card(call_id, |c| c.approval_closed(decision.as_ref()));
            }
            Event::ModeChanged { mode } => {
                self.push_notice(&wording::mode_line(*mode), NoticeKind::Info)
            }
            Event::ProviderNotice { text } => {
                self.push_notice(&wording::provider_notice_line(text), NoticeKind::Info)
            }
            Event::Retrying {
                attempt,
                max_attempts,
                delay_ms,
                reason,
                discarded,
            } => {
                self.end_step();
                let mut text = wording::retry_line(*attempt, *max_attempts, *delay_ms, reason);
                if *discarded {
                    text.push('\n');
                    text.push_str(wording::PARTIAL_REPLY_DISCARDED);
                }
                self.push_notice(&text, NoticeKind::Warning);
            }
            Event::Usage { .. } => return false,
            Event::TurnEnd { outcome, .. } => self.turn_end(outcome),
            Event::ConversationCleared => {
                self.clear();
                self.push_notice("conversation cleared", NoticeKind::Info);
            }
            Event::ConversationRestored {
                session_id,
                messages,
                summaries,
                calls,
            } => {
                let restored = restore::Restored {
                    messages,
                    summaries,
                    calls,
                };
                self.restore(restored, now);
                let text = wording::resumed_line(session_id, messages.len());
                self.push_notice(&text, NoticeKind::Info);
            }
            Event::TranscriptUnsaved { reason, .. } => {
                let text = wording::transcript_unsaved_line(reason);
                self.push_notice(&text, NoticeKind::Warning);
            }
            Event::CheckpointTaken { .. } => return false,
            Event::Undone { files, .. } => {
                self.push_notice(&wording::undone_line(files), NoticeKind::Info);
            }
            Event::UndoFailed { message } => {
                self.push_notice(&wording::undo_failed_line(message), NoticeKind::Error)
            }
            Event::Compacted {
                before_tokens_estimate,
                after_tokens_estimate,
                kind,
            } => {
                let text =
                    wording::compacted_line(*kind, *before_tokens_estimate, *after_tokens_estimate);
                self.push_notice(&text, NoticeKind::Info);
            }
            Event::CompactionSkipped { reason } => {
                let text = wording::compaction_skipped_line(reason);
                self.push_notice(&text, NoticeKind::Info);
            }
            Event::CompactionFailed { reason } => {
                self.push_notice(
                    &wording::compaction_failed_line(reason),
                    NoticeKind::Warning,
                );
            }
            // The status bar counts ready servers; trouble gets a line of its own.
            Event::McpServer { server, state } => match state {
                ServerState::Starting | ServerState::Ready { .. } => return false,
                ServerState::Restarting { .. } | ServerState::Failed { .. } => {
                    let text = wording::mcp_server_line(server, state);
                    self.push_notice(&text, NoticeKind::Warning);
                }
            },
        }
        true
    }

    /// A line the UI itself adds (slash-command output, errors, "mode: auto"), with a
    /// kind for styling. Pushed while a reply streams, it goes below that reply, which
    /// keeps growing above it.
    pub fn push_notice(&mut self, text: &str, kind: NoticeKind) {
        let cell = Cell::notice(text, kind, &self.theme);
        self.push_cell(cell);
    }

    /// Scrolling and toggles: ScrollUp/Down, PageUp/Down, ScrollTop/Bottom,
    /// ToggleThinking, ToggleCards. True if handled.
    pub fn handle(&mut self, action: Action) -> bool {
        let page = isize::try_from(self.viewport.1.saturating_sub(1).max(1)).unwrap_or(1);
        match action {
            Action::ScrollUp => self.scroll_by(-1),
            Action::ScrollDown => self.scroll_by(1),
            Action::PageUp => self.scroll_by(-page),
            Action::PageDown => self.scroll_by(page),
            Action::ScrollTop => {
                self.sync_layout();
                let height = usize::from(self.viewport.1);
                self.scroll.jump_to_top(&self.layout.heights, height);
            }
            Action::ScrollBottom => self.scroll.follow_bottom(),
            Action::ToggleThinking => {
                self.options.thinking = match self.options.thinking {
                    // Mid-stream the user wants it out of the way; afterwards, to read it.
                    ThinkingView::Auto if self.thinking.is_some() => ThinkingView::Collapsed,
                    ThinkingView::Auto | ThinkingView::Collapsed => ThinkingView::Expanded,
                    ThinkingView::Expanded => ThinkingView::Collapsed,
                };
            }
            Action::ToggleCards => self.options.expand_cards = !self.options.expand_cards,
            _ => return false,
        }
        true
    }

    /// Advances time-driven state (streamed-text commit, spinners, elapsed times); true
    /// when a redraw is due.
    pub fn tick(&mut self, now: Instant) -> bool {
        let text_changed = self.advance_text(now);
        let clock_moved = self.clock_moved(now);
        if clock_moved {
            // The frame this asks for shows the clock at `now` or later.
            self.clock_shown = Some(now);
        }
        text_changed || clock_moved
    }

    /// The next instant at which `tick` would change something on screen, which is
    /// `now` or earlier when a change is already due; None when nothing animates (idle
    /// = no wakeups). A card's clock is due from the frame after the one last drawn, so
    /// the deadline stays put until a frame shows it.
    pub fn next_deadline(&self, now: Instant) -> Option<Instant> {
        let text = self
            .text
            .as_ref()
            .and_then(|active| active.stream.next_deadline(now));
        let shown_at = self.clock_shown.unwrap_or(now);
        let spinners = self
            .live_cards
            .iter()
            .filter_map(|&index| self.card(index))
            .filter_map(|card| card.next_frame(shown_at));
        text.into_iter().chain(spinners).min()
    }

    /// Forgets everything shown (a new conversation). Toggles are kept.
    pub fn clear(&mut self) {
        *self = Self {
            options: self.options,
            input_hints: std::mem::take(&mut self.input_hints),
            ..Self::new(self.theme.clone())
        };
    }

    /// Whether the view follows new output (false after the user scrolled up).
    pub fn is_following(&self) -> bool {
        self.scroll.is_following()
    }

    fn push_cell(&mut self, cell: Cell) -> usize {
        let gap = match self.cells.last() {
            None => 0,
            Some(last) if last.cell.is_tool() && cell.is_tool() => 0,
            Some(_) => 1,
        };
        self.cells.push(Entry {
            cell,
            gap,
            dirty: false,
        });
        self.cells.len() - 1
    }

    /// Marks a cell for measuring again before the next frame.
    fn touch(&mut self, index: usize) {
        if let Some(entry) = self.cells.get_mut(index)
            && !entry.dirty
        {
            entry.dirty = true;
            self.layout.dirty.push(index);
        }
    }

    fn active_text(&mut self) -> &mut ActiveText {
        let active = match self.text.take() {
            Some(active) => active,
            None => ActiveText {
                cell: self.push_cell(Cell::Assistant(Box::new(AssistantCell::new(&self.theme)))),
                stream: TextStream::default(),
            },
        };
        self.text.insert(active)
    }

    /// Reveals the lines the chunking policy allows; true when that changed what is
    /// shown (a fence or a blank line alone does not), or when the line being
    /// received, shown after them, changed.
    fn advance_text(&mut self, now: Instant) -> bool {
        let Some(active) = self.text.as_mut() else {
            return false;
        };
        let lines = active.stream.reveal(now);
        let index = active.cell;
        let partial = active.stream.visible_partial().to_string();
        let mut shown = false;
        if let Some(Cell::Assistant(cell)) = self.cells.get_mut(index).map(|e| &mut e.cell) {
            for line in &lines {
                shown |= cell.push_line(line);
            }
            shown |= cell.set_preview(&partial);
        }
        if shown || !lines.is_empty() {
            self.touch(index);
        }
        shown
    }

    fn thinking_delta(&mut self, text: &str) {
        self.end_text();
        let index = match self.thinking {
            Some(index) => index,
            None => {
                let index = self.push_cell(Cell::Thinking(ThinkingCell::new(&self.theme)));
                self.thinking = Some(index);
                index
            }
        };
        if let Some(Cell::Thinking(cell)) = self.cells.get_mut(index).map(|e| &mut e.cell) {
            cell.push(text);
        }
        self.touch(index);
    }

    /// The reply is over: everything pending is revealed at once.
    fn end_text(&mut self) {
        let Some(mut active) = self.text.take() else {
            return;
        };
        if let Some(Cell::Assistant(cell)) = self.cells.get_mut(active.cell).map(|e| &mut e.cell) {
            for line in active.stream.drain() {
                cell.push_line(&line);
            }
            cell.finish();
        }
        self.touch(active.cell);
    }

    fn end_thinking(&mut self) {
        let Some(index) = self.thinking.take() else {
            return;
        };
        if let Some(Cell::Thinking(cell)) = self.cells.get_mut(index).map(|e| &mut e.cell) {
            cell.end();
        }
        self.touch(index);
    }

    fn end_streams(&mut self) {
        self.end_text();
        self.end_thinking();
    }

    /// A new model call: this step's text is over, no checks can come for its edits,
    /// and a call still being written never will be (its response broke or was cut).
    fn end_step(&mut self) -> bool {
        let changed = self.text.is_some() || self.thinking.is_some();
        self.end_streams();
        for index in std::mem::take(&mut self.step_edits) {
            self.update_card_at(index, ToolCard::end_step);
        }
        let live = std::mem::take(&mut self.live_cards);
        let (unwritten, running): (Vec<usize>, Vec<usize>) = live
            .into_iter()
            .partition(|&index| self.card(index).is_some_and(ToolCard::is_writing));
        self.live_cards = running;
        for index in unwritten {
            self.update_card_at(index, ToolCard::stop);
        }
        changed
    }

    fn turn_end(&mut self, outcome: &TurnOutcome) {
        self.end_step();
        for index in std::mem::take(&mut self.live_cards) {
            self.update_card_at(index, ToolCard::stop);
        }
        let notice = match outcome {
            TurnOutcome::Finished { stop_reason } => match stop_reason {
                StopReason::MaxTokens => Some((
                    "the reply was cut off: the model reached its output token limit".to_string(),
                    NoticeKind::Warning,
                )),
                StopReason::Refusal => Some((
                    "the model declined to answer".to_string(),
                    NoticeKind::Warning,
                )),
                _ => None,
            },
            TurnOutcome::Failed { .. } => {
                wording::outcome_line(outcome).map(|line| (line, NoticeKind::Error))
            }
            TurnOutcome::Interrupted
            | TurnOutcome::BudgetExhausted { .. }
            | TurnOutcome::LoopDetected { .. }
            | TurnOutcome::StoppedByHook { .. } => {
                wording::outcome_line(outcome).map(|line| (line, NoticeKind::Warning))
            }
        };
        if let Some((text, kind)) = notice {
            self.push_notice(&text, kind);
        }
    }

    fn card(&self, index: usize) -> Option<&ToolCard> {
        match self.cells.get(index).map(|entry| &entry.cell) {
            Some(Cell::Tool(card)) => Some(card),
            _ => None,
        }
    }

    /// The card of `call_id`, made (with a spinner) if this is the first event for it.
    fn card_or_new(&mut self, call_id: &str, name: &str, now: Instant) -> usize {
        let index = match self.cards.get(call_id) {
            Some(&index) => index,
            None => {
                let index = self.push_cell(Cell::Tool(Box::new(ToolCard::new(name, now))));
                self.cards.insert(call_id.to_string(), index);
                self.live_cards.push(index);
                index
            }
        };
        self.touch(index);
        index
    }

    /// Applies `change` to the card of `call_id`; false when there is none.
    fn update_card(&mut self, call_id: &str, change: impl FnOnce(&mut ToolCard)) -> bool {
        match self.cards.get(call_id) {
            Some(&index) => self.update_card_at(index, change),
            None => false,
        }
    }

    fn update_card_at(&mut self, index: usize, change: impl FnOnce(&mut ToolCard)) -> bool {
        let Some(Cell::Tool(card)) = self.cells.get_mut(index).map(|entry| &mut entry.cell) else {
            return false;
        };
        change(card);
        self.touch(index);
        true
    }

    fn run_end(
        &mut self,
        call_id: &str,
        is_error: bool,
        summary: &str,
        output: &str,
        now: Instant,
    ) {
        self.end_streams();
        // A result with no card before it still shows (a call that failed validation
        // has at least its Ready; this covers a front end that joined late).
        let index = self.card_or_new(call_id, "tool", now);
        self.update_card_at(index, |card| card.run_end(is_error, summary, output, now));
        self.live_cards.retain(|&live| live != index);
        if self.card(index).is_some_and(ToolCard::awaits_checks) {
            self.step_edits.push(index);
        }
    }

    /// Whether the spinner or elapsed time of a running card differs from the frame
    /// last drawn.
    fn clock_moved(&self, now: Instant) -> bool {
        self.live_cards
            .iter()
            .filter_map(|&index| self.card(index))
            .any(|card| match self.clock_shown {
                Some(drawn) => card.clock(now) != card.clock(drawn),
                None => card.is_animated(),
            })
    }
}

/// The card key of the user's command `id`: apart from the model's call ids.
fn user_command_card(id: crate::agent::MessageId) -> String {
    crate::agent::protocol::user_command_call_id(id)
}
