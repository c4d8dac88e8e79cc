//! The review panel: where the developer approves, partly approves or rejects each
//! proposed edit and shell command, one request at a time.
//!
//! Owns: the queue of [`Event::ApprovalNeeded`] requests, the panel frame (title with
//! the queue position, header, body, notice, reason input, key hints), routing actions
//! and typed keys to the request on screen, and the [`Command::Decide`] each ends with.
//! Does not own: keys (the keymap turns them into [`Action`]s and says which hints to
//! show), running `$EDITOR` (the front end does, see [`ReviewOutcome::OpenEditor`]),
//! or anything after the decision is sent.
//! Invariant: every request gets at most one decision: it leaves the queue the moment
//! the user decides it, and a request the agent closes itself
//! ([`Event::ApprovalClosed`]) just disappears without one.

mod command_panel;
mod diff_view;
mod edit_panel;
mod highlight;
mod hunk_lines;
mod queue;
mod reason_input;
mod text;

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Widget};

use crate::agent::protocol::{ApprovalView, Command, Event};
use crate::policy::Decision;
use crate::tui::action::{Action, Context};
use crate::tui::theme::Theme;

use command_panel::{CommandReview, Risk};
use diff_view::SIDE_BY_SIDE_MIN_WIDTH;
use edit_panel::{EditReview, ToggleRefused, Viewport};
use queue::{Pending, Queue, Review};
use reason_input::{InputOutcome, ReasonInput};
use text::{fit_from_end, reveal_spans, text_width, wrap_text};

/// What the front end should do after the panel handled something.
#[derive(Clone, Debug, PartialEq)]
pub enum ReviewOutcome {
    /// Not for the panel (nothing waits, or the action means nothing here).
    Ignored,
    /// The panel changed; redraw.
    Changed,
    /// Send this to the agent; the request it answers has left the panel.
    Send(Command),
    /// Run `$EDITOR` on `content` (the proposed file at `path`), then report what was
    /// saved with [`ReviewQueue::editor_finished`].
    OpenEditor {
        call_id: String,
        path: String,
        content: String,
    },
}

/// A key label and what it does, e.g. `("space", "toggle hunk")`.
pub type Hint = (String, String);

/// Rows the diff body gets before the first frame says how tall the panel really is.
const DEFAULT_BODY_ROWS: u16 = 10;

pub struct ReviewQueue {
    theme: Theme,
    queue: Queue,
    /// The reason being typed for the request on screen.
    input: Option<ReasonInput>,
    /// A one-off message about the last action (refused, failed); cleared by the next.
    notice: Option<String>,
    edit_hints: Vec<Hint>,
    command_hints: Vec<Hint>,
    /// The reason input handles its own keys, so these are fixed.
    typing_hints: Vec<Hint>,
    /// Height of the body at the last draw, for paging and keeping hunks in view.
    body_rows: u16,
}

impl ReviewQueue {
    pub fn new(theme: Theme) -> Self {
        Self {
            theme,
            queue: Queue::default(),
            input: None,
            notice: None,
            edit_hints: default_edit_hints(),
            command_hints: default_command_hints(),
            typing_hints: vec![hint("enter", "send"), hint("esc", "cancel")],
            body_rows: DEFAULT_BODY_ROWS,
        }
    }

    /// The hints shown under every review (edit or command), in this order.
    pub fn set_hints(&mut self, hints: Vec<Hint>) {
        self.edit_hints = hints.clone();
        self.command_hints = hints;
    }

    /// The hints shown in one context only ([`Context::DiffReview`] or
    /// [`Context::Approval`]); other contexts are ignored.
    pub fn set_context_hints(&mut self, context: Context, hints: Vec<Hint>) {
        match context {
            Context::DiffReview => self.edit_hints = hints,
            Context::Approval => self.command_hints = hints,
            _ => {}
        }
    }

    /// `ApprovalNeeded` enqueues (or, for a command allowed for the session, answers at
    /// once); `ApprovalClosed` removes the request wherever it is in the queue.
    pub fn on_event(&mut self, event: &Event) -> ReviewOutcome {
        match event {
            Event::ApprovalNeeded {
                call_id,
                why,
                request,
            } => self.enqueue(call_id, why, request),
            Event::ApprovalClosed { call_id, .. } => match self.queue.remove(call_id) {
                Some((position, _)) => {
                    if position == 0 {
                        self.reset_front();
                    }
                    ReviewOutcome::Changed
                }
                None => ReviewOutcome::Ignored,
            },
            _ => ReviewOutcome::Ignored,
        }
    }

    fn enqueue(&mut self, call_id: &str, why: &str, request: &ApprovalView) -> ReviewOutcome {
        let review = match request {
            // "Allow for session" never covers protected paths: they ask every time.
            ApprovalView::Command {
                command, protected, ..
            } if self.queue.is_allowed(command) && protected.is_empty() => {
                return decide(call_id, Decision::Approve);
            }
            ApprovalView::Command {
                command,
                cwd,
                class,
                reasons,
                protected,
            } => Review::Command(CommandReview::new(
                command,
                cwd,
                Risk {
                    class: *class,
                    reasons: reasons.clone(),
                    protected: protected.clone(),
                },
            )),
            ApprovalView::ExternalTool { server, tool, .. }
                if self
                    .queue
                    .is_allowed(&command_panel::external_allow_key(server, tool)) =>
            {
                return decide(call_id, Decision::Approve);
            }
            ApprovalView::ExternalTool {
                server,
                tool,
                arguments,
            } => Review::Command(CommandReview::external_tool(server, tool, arguments)),
            ApprovalView::Edit {
                path,
                requested,
                before,
                after,
                hunks,
                ..
            } => Review::Edit(Box::new(EditReview::new(
                path,
                requested.as_deref(),
                before.as_deref(),
                after,
                hunks,
                &self.theme,
            ))),
        };
        self.queue.push(Pending {
            call_id: call_id.to_string(),
            why: why.to_string(),
            review,
        });
        ReviewOutcome::Changed
    }

    /// Something is waiting for review.
    pub fn is_open(&self) -> bool {
        self.queue.len() > 0
    }

    pub fn pending_count(&self) -> usize {
        self.queue.len()
    }

    /// The keymap context of the request on screen.
    pub fn context(&self) -> Option<Context> {
        self.queue.front().map(|pending| match pending.review {
            Review::Edit(_) => Context::DiffReview,
            Review::Command(_) => Context::Approval,
        })
    }

    /// The reason input has focus: raw keys go to [`Self::handle_text`].
    pub fn is_typing(&self) -> bool {
        self.input.is_some()
    }

    /// An action from the keymap; `area_width` is the width the panel is drawn at.
    pub fn handle(&mut self, action: Action, area_width: u16) -> ReviewOutcome {
        if self.input.is_some() {
            return ReviewOutcome::Ignored;
        }
        let viewport = Viewport {
            width: area_width.saturating_sub(2),
            height: self.body_rows,
            wide: area_width >= SIDE_BY_SIDE_MIN_WIDTH,
        };
        let Some(front) = self.queue.front_mut() else {
            return ReviewOutcome::Ignored;
        };
        let call_id = front.call_id.clone();
        let step = match &mut front.review {
            Review::Edit(edit) => edit_action(edit, action, viewport, area_width),
            Review::Command(command) => command_action(command, action, viewport),
        };
        match step {
            Step::Ignored => ReviewOutcome::Ignored,
            Step::Done => {
                self.notice = None;
                ReviewOutcome::Changed
            }
            Step::Notice(notice) => {
                self.notice = Some(notice);
                ReviewOutcome::Changed
            }
            Step::AskReason(prompt) => {
                self.notice = None;
                self.input = Some(ReasonInput::new(prompt));
                ReviewOutcome::Changed
            }
            Step::Decide(decision) => self.settle(&call_id, decision),
            Step::AllowForSession(command) => {
                self.queue.allow(&command);
                self.settle(&call_id, Decision::Approve)
            }
            Step::OpenEditor { path, content } => ReviewOutcome::OpenEditor {
                call_id,
                path,
                content,
            },
        }
    }

    /// A key typed while the reason input has focus.
    pub fn handle_text(&mut self, key: KeyEvent) -> ReviewOutcome {
        let Some(input) = &mut self.input else {
            return ReviewOutcome::Ignored;
        };
        match input.handle_key(key) {
            InputOutcome::Submit(reason) => {
                let Some(front) = self.queue.front() else {
                    self.input = None;
                    return ReviewOutcome::Changed;
                };
                let decision = match &front.review {
                    Review::Edit(edit) => edit.decision_with_reason(reason),
                    Review::Command(_) => Decision::Reject { reason },
                };
                let call_id = front.call_id.clone();
                self.settle(&call_id, decision)
            }
            InputOutcome::Cancel => {
                self.input = None;
                ReviewOutcome::Changed
            }
            InputOutcome::Edited => ReviewOutcome::Changed,
            InputOutcome::Ignored => ReviewOutcome::Ignored,
        }
    }

    /// Pasted text, into the reason input if it is open.
    pub fn insert_text(&mut self, text: &str) {
        if let Some(input) = &mut self.input {
            input.insert(text);
        }
    }

    /// What the user saved in `$EDITOR` for `call_id`: the proposal unchanged approves
    /// it, anything else replaces it; `None` (quit without saving, editor failed) keeps
    /// the panel open with a notice.
    pub fn editor_finished(&mut self, call_id: &str, saved: Option<String>) -> ReviewOutcome {
        let Some(pending) = self.queue.get(call_id) else {
            return ReviewOutcome::Ignored;
        };
        let Review::Edit(edit) = &pending.review else {
            return ReviewOutcome::Ignored;
        };
        match saved {
            Some(content) if content == edit.proposed() => self.settle(call_id, Decision::Approve),
            Some(content) => self.settle(call_id, Decision::Edited { content }),
            None => {
                self.notice = Some(
                    "The editor closed without saving (or failed); the proposal is unchanged."
                        .to_string(),
                );
                ReviewOutcome::Changed
            }
        }
    }

    /// Removes the request and sends its decision.
    fn settle(&mut self, call_id: &str, decision: Decision) -> ReviewOutcome {
        if let Some((0, _)) = self.queue.remove(call_id) {
            self.reset_front();
        }
        decide(call_id, decision)
    }

    /// A new request is on screen: nothing typed or noticed carries over.
    fn reset_front(&mut self) {
        self.input = None;
        self.notice = None;
    }

    pub fn render(&mut self, area: Rect, buf: &mut Buffer) {
        let count = self.queue.len();
        let Some(front) = self.queue.front() else {
            return;
        };
        let theme = &self.theme;
        let wide = area.width >= SIDE_BY_SIDE_MIN_WIDTH;
        let title = match &front.review {
            Review::Edit(_) => Line::from(Span::styled(
                format!(" Review edit · 1 of {count} "),
                theme.heading,
            )),
            Review::Command(command) if command.is_external() => Line::from(Span::styled(
                format!(" Call MCP tool? · 1 of {count} "),
                theme.heading,
            )),
            Review::Command(command) => Line::from(vec![
                Span::styled(" Run command? · ", theme.heading),
                Span::styled(
                    command.class().to_string(),
                    command_panel::class_style(command.class(), theme),
                ),
                Span::styled(format!(" · 1 of {count} "), theme.heading),
            ]),
        };
        let block = Block::bordered().border_style(theme.accent).title(title);
        let inner = block.inner(area);
        Clear.render(area, buf);
        block.render(area, buf);
        let header = match &front.review {
            Review::Edit(edit) => edit_header(edit, &front.why, inner.width, wide, theme),
            Review::Command(_) => Vec::new(),
        };
        let footer = self.footer(inner);
        let sections = Sections::split(inner, header.len(), footer.len());
        draw_lines(&header, sections.header, buf);
        draw_lines(&footer, sections.footer, buf);
        self.body_rows = sections.body.height.max(1);
        let Some(front) = self.queue.front_mut() else {
            return;
        };
        match &mut front.review {
            Review::Edit(edit) => {
                let viewport = Viewport {
                    width: sections.body.width,
                    height: sections.body.height,
                    wide,
                };
                edit.render_body(sections.body, viewport, buf);
            }
            Review::Command(command) => {
                command.render(sections.body, buf, &front.why, &self.theme);
            }
        }
    }

    /// The rows under the body: the notice, the reason being typed, then as many rows
    /// of key hints as a quarter of the panel allows.
    fn footer(&self, inner: Rect) -> Vec<Line<'static>> {
        let theme = &self.theme;
        let mut footer = Vec::new();
        if let Some(notice) = &self.notice {
            let rows = wrap_text(notice, usize::from(inner.width));
            footer.extend(rows.into_iter().map(|row| Line::styled(row, theme.warning)));
        }
        if let Some(input) = &self.input {
            footer.extend(input.lines(inner.width, theme));
        }
        let hints = match (&self.input, self.context()) {
            (Some(_), _) => &self.typing_hints,
            (None, Some(Context::Approval)) => &self.command_hints,
            (None, _) => &self.edit_hints,
        };
        let hint_rows = usize::from(inner.height / 4).max(1);
        footer.extend(
            hint_lines(hints, inner.width, theme)
                .into_iter()
                .take(hint_rows),
        );
        footer
    }
}

fn decide(call_id: &str, decision: Decision) -> ReviewOutcome {
    ReviewOutcome::Send(Command::Decide {
        call_id: call_id.to_string(),
        decision,
    })
}

/// What an action did to the request on screen.
enum Step {
    Ignored,
    Done,
    Notice(String),
    AskReason(String),
    Decide(Decision),
    AllowForSession(String),
    OpenEditor { path: String, content: String },
}

fn edit_action(edit: &mut EditReview, action: Action, viewport: Viewport, width: u16) -> Step {
    let page = page_rows(viewport);
    match action {
        Action::NextHunk => edit.select_by(1, viewport).then_some(Step::Done),
        Action::PrevHunk => edit.select_by(-1, viewport).then_some(Step::Done),
        Action::ToggleHunk => Some(match edit.toggle_selected() {
            Ok(()) => Step::Done,
            Err(ToggleRefused::Unmatched) => Step::Notice(
                "These hunks could not be matched to the agent's; apply or reject the edit \
                 as a whole."
                    .to_string(),
            ),
            Err(ToggleRefused::NoHunks) => {
                Step::Notice("This edit has no hunks to choose from.".to_string())
            }
        }),
        Action::Apply => Some(Step::Decide(edit.decision())),
        Action::RejectAll => Some(Step::Decide(Decision::Reject { reason: None })),
        Action::RejectWithReason => Some(Step::AskReason(edit.reason_prompt())),
        Action::WholeFile => {
            edit.toggle_whole_file(viewport);
            Some(Step::Done)
        }
        Action::SideBySide => Some(if edit.toggle_side_by_side(viewport) {
            Step::Done
        } else {
            Step::Notice(format!(
                "The terminal is too narrow for side by side: it needs {SIDE_BY_SIDE_MIN_WIDTH} \
                 columns, the panel has {width}."
            ))
        }),
        Action::OpenEditor => Some(Step::OpenEditor {
            path: edit.path().to_string(),
            content: edit.proposed().to_string(),
        }),
        _ => scroll_rows(action, page).map(|rows| {
            edit.scroll_by(rows, viewport);
            Step::Done
        }),
    }
    .unwrap_or(Step::Ignored)
}

fn command_action(command: &mut CommandReview, action: Action, viewport: Viewport) -> Step {
    let page = page_rows(viewport);
    match action {
        Action::Apply => Step::Decide(Decision::Approve),
        Action::RejectAll => Step::Decide(Decision::Reject { reason: None }),
        Action::RejectWithReason => {
            Step::AskReason("Why reject this command? (sent to the model)".to_string())
        }
        Action::AllowForSession => Step::AllowForSession(command.allow_key()),
        _ => match scroll_rows(action, page) {
            Some(rows) => {
                command.scroll_by(rows);
                Step::Done
            }
            None => Step::Ignored,
        },
    }
}

/// A page: the body's height less one row, kept for orientation.
fn page_rows(viewport: Viewport) -> isize {
    isize::try_from(viewport.height.saturating_sub(1).max(1)).unwrap_or(1)
}

/// How far a scrolling action moves, in rows.
fn scroll_rows(action: Action, page: isize) -> Option<isize> {
    match action {
        Action::ScrollUp => Some(-1),
        Action::ScrollDown => Some(1),
        Action::PageUp => Some(-page),
        Action::PageDown => Some(page),
        Action::ScrollTop => Some(isize::MIN),
        Action::ScrollBottom => Some(isize::MAX),
        _ => None,
    }
}

/// The path (hidden characters written out), then the hunk status and the rule that
/// asks, then a warning per kind of hidden or look-alike character in the path or the
/// added lines.
fn edit_header(
    edit: &EditReview,
    why: &str,
    width: u16,
    wide: bool,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let path_spans = reveal_spans(&edit.header_path(), theme.heading, theme.hidden);
    let path = Line::from(fit_from_end(path_spans, usize::from(width), theme.heading));
    let mut status = edit.status(wide);
    status
        .spans
        .push(Span::styled(format!(" · {why}"), theme.dim));
    let mut header = vec![path, status];
    for warning in edit.warnings() {
        header.extend(
            wrap_text(&format!("⚠ {warning}"), usize::from(width))
                .into_iter()
                .map(|row| Line::styled(row, theme.warning)),
        );
    }
    header
}

/// Hints packed into rows: `key description` pairs, two spaces apart, never split.
fn hint_lines(hints: &[Hint], width: u16, theme: &Theme) -> Vec<Line<'static>> {
    let width = usize::from(width);
    let mut rows: Vec<Line<'static>> = Vec::new();
    let mut used = 0;
    for (key, description) in hints {
        let cost = text_width(key) + 1 + text_width(description);
        let gap = if used == 0 { 0 } else { 2 };
        if used > 0 && used + gap + cost > width {
            used = 0;
        }
        if used == 0 {
            rows.push(Line::default());
        } else {
            if let Some(row) = rows.last_mut() {
                row.spans.push(Span::raw("  "));
            }
            used += gap;
        }
        if let Some(row) = rows.last_mut() {
            row.spans.push(Span::styled(key.clone(), theme.accent));
            row.spans
                .push(Span::styled(format!(" {description}"), theme.dim));
        }
        used += cost;
    }
    rows
}

fn hint(key: &str, description: &str) -> Hint {
    (key.to_string(), description.to_string())
}

fn default_edit_hints() -> Vec<Hint> {
    vec![
        hint("n/p", "next/prev hunk"),
        hint("space", "toggle hunk"),
        hint("enter", "apply"),
        hint("x", "reject"),
        hint("r", "reject with reason"),
        hint("w", "whole file"),
        hint("s", "side by side"),
        hint("e", "edit"),
    ]
}

fn default_command_hints() -> Vec<Hint> {
    vec![
        hint("enter", "run"),
        hint("a", "allow for session"),
        hint("x", "reject"),
        hint("r", "reject with reason"),
    ]
}

/// The panel's inside: header on top, footer at the bottom, body in between. The body
/// keeps at least one row; the footer gives up rows first, then the header.
struct Sections {
    header: Rect,
    body: Rect,
    footer: Rect,
}

impl Sections {
    fn split(inner: Rect, header: usize, footer: usize) -> Self {
        let to_u16 = |n: usize| u16::try_from(n).unwrap_or(u16::MAX);
        let spare = inner.height.saturating_sub(1);
        let header = to_u16(header).min(spare);
        let footer = to_u16(footer).min(spare - header);
        let body = inner.height - header - footer;
        let row = |y: u16, height: u16| Rect::new(inner.x, y, inner.width, height);
        Self {
            header: row(inner.y, header),
            body: row(inner.y + header, body),
            footer: row(inner.y + header + body, footer),
        }
    }
}

/// The first `area.height` rows of `lines` (a short footer drops hints, never the
/// notice or the reason being typed).
fn draw_lines(lines: &[Line<'static>], area: Rect, buf: &mut Buffer) {
    for (y, line) in (area.y..area.bottom()).zip(lines) {
        buf.set_line(area.x, y, line, area.width);
    }
}

#[cfg(test)]
mod tests;
