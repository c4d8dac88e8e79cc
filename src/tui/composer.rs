//! The message input at the bottom of the screen, with the list of messages still
//! waiting to be delivered above it.
//!
//! Owns: the text being written (multi-line, wrapped, scrolled within a height cap),
//! the history of sent messages, the list of files offered while an `@` mention is
//! typed and of commands while a leading `/` is (see `composer::complete`), and how all
//! of them are drawn. Does not own: what a sent message does (the app decides between
//! steering, queueing and slash commands), the pending list itself (the app sets it
//! after every change), or the workspace's files and the commands (the app hands over
//! each new list).
//! Invariant: work per keystroke or frame is bounded by the visible rows and the
//! cursor's line, never by the whole text, so a megabyte paste stays responsive.
//!
//! The `@` list opens when typing or deleting leaves the cursor at the end of a mention
//! being written ([`crate::mention::typing`]), never on a mere cursor move or a recalled
//! message, so ↑ keeps browsing history through messages that end in a mention. Closed
//! with Esc, it stays closed for that token until the cursor leaves it. The `/` list
//! opens the same way while the first line, up to the cursor, is a `/` and the start of
//! a command name; a whole name typed leaves Enter to send it.

mod complete;
mod edit;
pub(crate) mod wrap;

use std::collections::HashMap;
use std::sync::Arc;

use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::Style;
use unicode_segmentation::UnicodeSegmentation;

use self::complete::{Choices, Completion, Subject};
use self::edit::{Editor, RowPos};
use self::wrap::{grapheme_width, is_blank};
use super::action::Action;
use super::file_list::FileList;
use super::theme::Theme;
use crate::custom_commands;
use crate::mention;

const PLACEHOLDER: &str = "Ask duet… (Enter to send, Shift+Enter for a newline)";
const PROMPT: &str = "› ";
const MORE_ABOVE: &str = "↑ ";
const MORE_BELOW: &str = "↓ ";
/// Cells left of the text: the prompt or a scroll marker.
const GUTTER: u16 = 2;
/// The input grows up to this many rows, then scrolls.
const MAX_INPUT_ROWS: usize = 10;
/// Pending messages beyond this many are summed up in one row.
const MAX_PENDING_ROWS: usize = 4;
const HISTORY_LIMIT: usize = 500;
/// Used for moving by wrapped rows until the first frame gives the real width.
const DEFAULT_TEXT_WIDTH: usize = 78;
/// How far back from the cursor an `@` is looked for: a path is shorter, and looking
/// further would make each keystroke in a long line cost the whole line.
const MENTION_LOOKBACK: usize = 1024;

/// What a [`Composer::handle`] call did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ComposerOutcome {
    /// The action is not the composer's, or changed nothing.
    Ignored,
    /// The text or cursor changed: redraw.
    Changed,
    /// Send this message now (the input is cleared and the message remembered).
    Submit(String),
    /// Send this message when the current turn ends.
    Queue(String),
}

/// How a waiting message will reach the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PendingKind {
    /// At the model's next step, during the current turn.
    Steer,
    /// After the current turn ends.
    Queued,
}

/// A message sent but not yet delivered, as the composer shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingView {
    pub text: String,
    pub kind: PendingKind,
}

/// Where the input is while history is browsed.
#[derive(Clone, Debug)]
struct Browsing {
    /// Into the history; `history.len()` is the draft.
    index: usize,
    /// What was being written before browsing started.
    draft: String,
}

#[derive(Clone, Debug)]
pub struct Composer {
    theme: Theme,
    editor: Editor,
    history: Vec<String>,
    browsing: Option<Browsing>,
    /// Recalled messages edited since the last send, by history index, so browsing on
    /// loses nothing.
    history_edits: HashMap<usize, String>,
    pending: Vec<PendingView>,
    /// The first visible row, kept between frames so the view only scrolls when the
    /// cursor leaves it.
    top: RowPos,
    /// The text width of the last frame, for moving by wrapped rows.
    text_width: usize,
    /// The workspace's files, once a walk has listed them.
    files: Option<Arc<Choices>>,
    /// The slash commands, with what they take and do.
    commands: Arc<Choices>,
    /// The `@` or `/` list, while one is open.
    completion: Option<Completion>,
    /// The `@` or `/` (line, byte offset) whose list Esc closed.
    dismissed: Option<(usize, usize)>,
    /// An `@` list opened since [`Composer::take_opened`] was last asked.
    opened: bool,
    /// The keys of the `@` and `/` lists, for the bottom of their popup.
    completion_footer: String,
    /// What goes with the next message besides its text (`image: shot.png`), shown as
    /// chips on the rule above the input.
    chips: Vec<String>,
}

struct Areas {
    pending: Rect,
    rule: Option<Rect>,
    input: Rect,
}

impl Composer {
    pub fn new(theme: Theme) -> Self {
        Composer {
            theme,
            editor: Editor::default(),
            history: Vec::new(),
            browsing: None,
            history_edits: HashMap::new(),
            pending: Vec::new(),
            top: RowPos::default(),
            text_width: DEFAULT_TEXT_WIDTH,
            files: None,
            commands: Arc::default(),
            completion: None,
            dismissed: None,
            opened: false,
            completion_footer: String::new(),
            chips: Vec::new(),
        }
    }

    pub fn handle(&mut self, action: Action) -> ComposerOutcome {
        if matches!(
            action,
            Action::CompletionPrev
                | Action::CompletionNext
                | Action::CompletionAccept
                | Action::CompletionClose
        ) {
            return self.complete(action);
        }
        let outcome = self.handle_edit(action);
        if outcome != ComposerOutcome::Ignored {
            // Only what changes the text may open the list; a move may close it.
            let opens = matches!(action, Action::DeleteBack | Action::DeleteWordBack);
            self.refresh_completion(opens);
        }
        outcome
    }

    fn handle_edit(&mut self, action: Action) -> ComposerOutcome {
        use ComposerOutcome::{Changed, Ignored};
        match action {
            Action::Submit => self.take_message().map_or(Ignored, ComposerOutcome::Submit),
            Action::Queue => self.take_message().map_or(Ignored, ComposerOutcome::Queue),
            // Within the text these move between rows; at its edges they browse history.
            Action::HistoryPrev => {
                if self.editor.up(self.text_width) {
                    Changed
                } else {
                    self.history_prev()
                }
            }
            Action::HistoryNext => {
                if self.editor.down(self.text_width) {
                    Changed
                } else {
                    self.history_next()
                }
            }
            other => {
                if self.edit(other) {
                    Changed
                } else {
                    Ignored
                }
            }
        }
    }

    /// Applies an editing or cursor action; `true` when anything changed.
    fn edit(&mut self, action: Action) -> bool {
        let editor = &mut self.editor;
        match action {
            Action::Newline => {
                editor.insert("\n");
                true
            }
            Action::CursorLeft => editor.left(),
            Action::CursorRight => editor.right(),
            Action::WordLeft => editor.word_left(),
            Action::WordRight => editor.word_right(),
            Action::LineStart => editor.line_start(),
            Action::LineEnd => editor.line_end(),
            Action::DeleteBack => editor.delete_back(),
            Action::DeleteForward => editor.delete_forward(),
            Action::DeleteWordBack => editor.delete_word_back(),
            Action::ClearInput => editor.clear(),
            _ => false,
        }
    }

    /// Typed characters and bracketed pastes. Line endings are normalized to `\n`.
    pub fn insert_text(&mut self, text: &str) {
        self.editor.insert(text);
        self.refresh_completion(true);
    }

    /// Replaces the input (e.g. with a withdrawn message), cursor at the end.
    pub fn set_text(&mut self, text: &str) {
        self.browsing = None;
        self.editor.set_text(text, None);
        self.completion = None;
        self.dismissed = None;
    }

    /// A new list of the workspace's files; an open `@` list is matched against it.
    pub fn set_files(&mut self, files: FileList) {
        let files = Arc::new(Choices::from(files));
        if let Some(completion) = &mut self.completion
            && completion.subject() == Subject::Files
        {
            let query = completion.query().to_string();
            completion.update(&query, Some(&files));
        }
        self.files = Some(files);
    }

    /// The slash commands the `/` list offers: each name (without its slash) with a
    /// note of what it takes and does.
    pub fn set_commands(&mut self, commands: Vec<(String, String)>) {
        let (items, notes) = commands.into_iter().unzip();
        self.commands = Arc::new(Choices {
            items,
            notes,
            truncated: false,
        });
        if let Some(completion) = &mut self.completion
            && completion.subject() == Subject::Commands
        {
            let query = completion.query().to_string();
            completion.update(&query, Some(&self.commands));
        }
    }

    /// Whether the `@` or `/` list is open (its keys then come first).
    pub fn completing(&self) -> bool {
        self.completion.is_some()
    }

    /// Whether the open list has a use for `action`: moving and accepting need an item
    /// to choose, so with none the key does what it does without the list (Enter sends
    /// `@home` when no file matches it), and accepting needs more than a command name
    /// typed whole (Enter sends `/help`).
    pub fn completion_takes(&self, action: Action) -> bool {
        let Some(completion) = &self.completion else {
            return false;
        };
        match action {
            Action::CompletionClose => true,
            Action::CompletionPrev | Action::CompletionNext => completion.has_choice(),
            Action::CompletionAccept => completion.has_choice() && !completion.is_complete(),
            _ => false,
        }
    }

    /// Whether an `@` list opened since the last call (the app may want a fresher list
    /// of files for it).
    pub fn take_opened(&mut self) -> bool {
        std::mem::take(&mut self.opened)
    }

    /// The keys shown at the bottom of the `@` list (`Tab insert · Esc close`).
    pub fn set_completion_footer(&mut self, footer: String) {
        self.completion_footer = footer;
    }

    /// Draws the `@` list, if open, at the bottom of `area` (the rows just above the
    /// composer). Returns where it went.
    pub fn render_completion(&self, area: Rect, buf: &mut Buffer) -> Option<Rect> {
        self.completion
            .as_ref()?
            .render(area, buf, &self.theme, &self.completion_footer)
    }

    /// The paths or command names the open list shows, best first; empty when it is
    /// closed.
    pub fn completion_items(&self) -> Vec<&str> {
        self.completion
            .as_ref()
            .map(Completion::shown_items)
            .unwrap_or_default()
    }

    fn complete(&mut self, action: Action) -> ComposerOutcome {
        let changed = if action == Action::CompletionAccept {
            self.accept_completion()
        } else if let Some(completion) = &mut self.completion {
            match action {
                Action::CompletionPrev => completion.select(false),
                Action::CompletionNext => completion.select(true),
                Action::CompletionClose => {
                    self.dismissed = Some(completion.anchor());
                    self.completion = None;
                    true
                }
                _ => false,
            }
        } else {
            false
        };
        if changed {
            ComposerOutcome::Changed
        } else {
            ComposerOutcome::Ignored
        }
    }

    /// Replaces the `@query` before the cursor with the chosen path's token (or the
    /// `/query` with the chosen command) and a space (none when whitespace follows
    /// already).
    fn accept_completion(&mut self) -> bool {
        let Some(completion) = &self.completion else {
            return false;
        };
        let token = match completion.subject() {
            Subject::Files => completion.chosen().and_then(mention::token),
            Subject::Commands => completion.chosen().map(|name| format!("/{name}")),
        };
        let Some(token) = token else {
            return false;
        };
        let (line, start) = completion.anchor();
        if self.editor.cursor().0 != line || !self.editor.replace_before(start, &token) {
            return false;
        }
        if self.editor.char_after().is_none_or(|c| !c.is_whitespace()) {
            self.editor.insert(" ");
        }
        self.completion = None;
        self.dismissed = None;
        true
    }

    /// Opens, updates or closes the `@` or `/` list after the text or the cursor changed;
    /// `may_open` when the change was typing or deleting.
    fn refresh_completion(&mut self, may_open: bool) {
        let (line, col) = self.editor.cursor();
        let typed = &self.editor.lines()[line][..col];
        let mut from = col.saturating_sub(MENTION_LOOKBACK);
        while !typed.is_char_boundary(from) {
            from += 1;
        }
        let found = mention::typing(&typed[from..])
            // Cut off mid-word, the start of the window is no start of a word.
            .filter(|t| {
                from == 0
                    || t.start > 0
                    || typed[..from]
                        .chars()
                        .next_back()
                        .is_some_and(char::is_whitespace)
            })
            .map(|t| (Subject::Files, (line, from + t.start), t.query.to_string()))
            .or_else(|| {
                let query = command_typing(line, typed)?;
                Some((Subject::Commands, (0, 0), query.to_string()))
            });
        let Some((subject, anchor, query)) = found else {
            self.completion = None;
            self.dismissed = None;
            return;
        };
        if self.dismissed == Some(anchor) {
            self.completion = None;
            return;
        }
        self.dismissed = None;
        let list = match subject {
            Subject::Files => self.files.as_ref(),
            Subject::Commands => Some(&self.commands),
        };
        match &mut self.completion {
            Some(completion)
                if completion.anchor() == anchor && completion.subject() == subject =>
            {
                completion.update(&query, list);
            }
            _ if may_open => {
                let mut completion = Completion::new(subject, anchor);
                completion.update(&query, list);
                self.completion = Some(completion);
                // Only files may want listing afresh; the commands are known.
                if subject == Subject::Files {
                    self.opened = true;
                }
            }
            _ => self.completion = None,
        }
    }

    pub fn text(&self) -> String {
        self.editor.text()
    }

    pub fn is_empty(&self) -> bool {
        self.editor.is_empty()
    }

    /// The messages waiting for delivery, oldest first.
    pub fn set_pending(&mut self, pending: Vec<PendingView>) {
        self.pending = pending;
    }

    /// The rows the composer would like at `width` columns: the pending list, a rule,
    /// and the input (up to its cap).
    pub fn desired_height(&self, width: u16) -> u16 {
        let text_width = usize::from(width.saturating_sub(GUTTER).max(1));
        let input_rows = self
            .editor
            .rows_from(RowPos::default(), text_width, MAX_INPUT_ROWS)
            .len()
            .max(1);
        // Both parts are capped well below u16::MAX.
        (self.pending_rows() + 1 + input_rows) as u16
    }

    pub fn render(&mut self, area: Rect, buf: &mut Buffer) {
        let areas = self.areas(area);
        self.render_pending(areas.pending, buf);
        if let Some(rule) = areas.rule {
            let line = "─".repeat(usize::from(rule.width));
            buf.set_stringn(
                rule.x,
                rule.y,
                line,
                usize::from(rule.width),
                self.theme.dim,
            );
            let mut x = rule.x.saturating_add(1);
            for chip in &self.chips {
                let text = format!(" [{chip}] ");
                let room = usize::from(rule.right().saturating_sub(x));
                let (end, _) = buf.set_stringn(x, rule.y, &text, room, self.theme.accent);
                x = end;
            }
        }
        self.render_input(areas.input, buf);
    }

    /// Shows `chips` (what goes with the next message) above the input.
    pub fn set_chips(&mut self, chips: Vec<String>) {
        self.chips = chips;
    }

    /// Where the terminal cursor goes when the composer has the focus and was drawn
    /// into `area`.
    pub fn cursor_position(&self, area: Rect) -> Option<Position> {
        let input = self.areas(area).input;
        if input.width <= GUTTER || input.height == 0 {
            return None;
        }
        let width = usize::from(input.width - GUTTER);
        let height = usize::from(input.height);
        let line = self.editor.cursor().0;
        let (row, cell) = self.editor.cursor_cell(width);
        let top = self.view_top(width, height);
        let y = self
            .editor
            .rows_from(top, width, height)
            .iter()
            .position(|(pos, _)| *pos == RowPos { line, row })?;
        // Both are bounded by the area's size.
        Some(Position::new(
            input.x + GUTTER + cell as u16,
            input.y + y as u16,
        ))
    }

    fn take_message(&mut self) -> Option<String> {
        let text = self.editor.text();
        if text.trim().is_empty() {
            return None;
        }
        let message = tidy(&text).to_string();
        if self.history.last() != Some(&message) {
            self.history.push(message.clone());
            if self.history.len() > HISTORY_LIMIT {
                self.history.remove(0);
            }
        }
        self.editor.clear();
        self.browsing = None;
        self.history_edits.clear();
        self.top = RowPos::default();
        Some(message)
    }

    fn history_prev(&mut self) -> ComposerOutcome {
        let current = self
            .browsing
            .as_ref()
            .map_or(self.history.len(), |b| b.index);
        if current == 0 {
            return ComposerOutcome::Ignored;
        }
        self.browse_to(current - 1);
        // On the first line, so another press goes further back.
        self.editor.set_text(&self.recalled(current - 1), Some(0));
        ComposerOutcome::Changed
    }

    fn history_next(&mut self) -> ComposerOutcome {
        let Some(current) = self.browsing.as_ref().map(|b| b.index) else {
            return ComposerOutcome::Ignored;
        };
        self.browse_to(current + 1);
        let text = self.recalled(current + 1);
        if current + 1 == self.history.len() {
            self.browsing = None;
        }
        self.editor.set_text(&text, None);
        ComposerOutcome::Changed
    }

    /// Files the current text under the entry being left, then moves to `index`.
    fn browse_to(&mut self, index: usize) {
        let text = self.editor.text();
        let history_len = self.history.len();
        let browsing = self.browsing.get_or_insert_with(|| Browsing {
            index: history_len,
            draft: String::new(),
        });
        match self.history.get(browsing.index) {
            None => browsing.draft = text,
            Some(original) if *original == text => {
                self.history_edits.remove(&browsing.index);
            }
            Some(_) => {
                self.history_edits.insert(browsing.index, text);
            }
        }
        browsing.index = index;
    }

    fn recalled(&self, index: usize) -> String {
        if let Some(edited) = self.history_edits.get(&index) {
            return edited.clone();
        }
        match (self.history.get(index), &self.browsing) {
            (Some(message), _) => message.clone(),
            (None, Some(browsing)) => browsing.draft.clone(),
            (None, None) => String::new(),
        }
    }

    fn pending_rows(&self) -> usize {
        self.pending.len().min(MAX_PENDING_ROWS)
    }

    /// Top to bottom: pending list, rule, input. A short area keeps one input row
    /// first, then the rule, then as much of the pending list as fits.
    fn areas(&self, area: Rect) -> Areas {
        let wanted = u16::try_from(self.pending_rows()).unwrap_or(u16::MAX);
        let pending = wanted.min(area.height.saturating_sub(2));
        let rule = u16::from(area.height > pending + 1);
        let at = |offset: u16, height: u16| Rect {
            y: area.y + offset,
            height,
            ..area
        };
        Areas {
            pending: at(0, pending),
            rule: (rule == 1).then(|| at(pending, 1)),
            input: at(pending + rule, area.height - pending - rule),
        }
    }

    fn render_pending(&self, area: Rect, buf: &mut Buffer) {
        let rows = usize::from(area.height);
        if rows == 0 {
            return;
        }
        let hidden = self.pending.len().saturating_sub(rows);
        let mut y = area.y;
        let width = usize::from(area.width);
        if hidden > 0 {
            // The newest messages are the ones likely to be withdrawn: keep them.
            let summary = format!("  … {} more waiting", hidden + 1);
            buf.set_stringn(area.x, y, summary, width, self.theme.dim);
            y += 1;
        }
        let shown_count = rows - usize::from(hidden > 0);
        let shown = &self.pending[self.pending.len().saturating_sub(shown_count)..];
        for message in shown {
            let label = match message.kind {
                PendingKind::Steer => "↳ steer: ",
                PendingKind::Queued => "⏸ queued: ",
            };
            let budget = width.saturating_sub(wrap::text_width(label));
            let line = format!("{label}{}", one_line(&message.text, budget));
            buf.set_stringn(area.x, y, line, width, self.theme.dim);
            y += 1;
        }
    }

    fn render_input(&mut self, area: Rect, buf: &mut Buffer) {
        if area.width <= GUTTER || area.height == 0 {
            return;
        }
        let width = usize::from(area.width - GUTTER);
        let height = usize::from(area.height);
        self.text_width = width;
        let text_x = area.x + GUTTER;
        if self.editor.is_empty() {
            buf.set_stringn(area.x, area.y, PROMPT, 2, self.theme.accent);
            buf.set_stringn(text_x, area.y, PLACEHOLDER, width, self.theme.dim);
            return;
        }
        self.top = self.view_top(width, height);
        // One row more than fits tells whether there is text below the view.
        let rows = self.editor.rows_from(self.top, width, height + 1);
        let lines = self.editor.lines();
        for (y, (pos, range)) in (area.y..).zip(rows.iter().take(height)) {
            let more_below = y + 1 == area.bottom() && rows.len() > height;
            let (gutter, style) = self.gutter(*pos, y == area.y, more_below);
            buf.set_stringn(area.x, y, gutter, 2, style);
            let text = lines[pos.line][range.clone()].replace('\t', &" ".repeat(wrap::TAB_WIDTH));
            buf.set_stringn(text_x, y, text, width, self.theme.text);
        }
    }

    /// The prompt on the first row, arrows where rows are scrolled out of view.
    fn gutter(&self, pos: RowPos, first_visible: bool, more_below: bool) -> (&str, Style) {
        if pos == RowPos::default() {
            (PROMPT, self.theme.accent)
        } else if first_visible {
            (MORE_ABOVE, self.theme.dim)
        } else if more_below {
            (MORE_BELOW, self.theme.dim)
        } else {
            ("  ", self.theme.text)
        }
    }

    /// The first visible row: last frame's, moved just enough to show the cursor and
    /// to leave no empty rows below the text.
    fn view_top(&self, width: usize, height: usize) -> RowPos {
        let cursor = RowPos {
            line: self.editor.cursor().0,
            row: self.editor.cursor_cell(width).0,
        };
        let mut top = self.top.min(cursor);
        if top.line < cursor.line {
            // Last frame's row may no longer exist after an edit or a resize.
            top.row = top
                .row
                .min(self.editor.row_count(top.line, width).saturating_sub(1));
        }
        let cursor_visible = self
            .editor
            .rows_from(top, width, height)
            .iter()
            .any(|(pos, _)| *pos == cursor);
        if !cursor_visible {
            top = self.back(cursor, height - 1, width);
        }
        let filled = self.editor.rows_from(top, width, height).len();
        self.back(top, height - filled, width)
    }

    /// The row `count` wrapped rows above `pos`, or the very first.
    fn back(&self, mut pos: RowPos, mut count: usize, width: usize) -> RowPos {
        while count > 0 {
            if pos.row > 0 {
                let step = pos.row.min(count);
                pos.row -= step;
                count -= step;
            } else if pos.line > 0 {
                pos.line -= 1;
                pos.row = self.editor.row_count(pos.line, width).saturating_sub(1);
                count -= 1;
            } else {
                break;
            }
        }
        pos
    }
}

/// The command name being typed when `typed` (line `line` up to the cursor) is a `/`
/// starting the message and what follows could still become a name: not `//` (a message
/// that starts with a slash) and no whitespace (the arguments have begun).
fn command_typing(line: usize, typed: &str) -> Option<&str> {
    let query = typed.strip_prefix('/').filter(|_| line == 0)?;
    (query.is_empty() || custom_commands::valid_name(query)).then_some(query)
}

/// A message as sent: no trailing whitespace, no leading blank lines (indentation of
/// the first real line is kept; it may be code).
fn tidy(text: &str) -> &str {
    let mut rest = text.trim_end();
    while let Some((first, more)) = rest.split_once('\n') {
        if !first.trim().is_empty() {
            break;
        }
        rest = more;
    }
    rest
}

/// `text` on one row of at most `max_width` cells: whitespace runs (newlines too)
/// become one space, and a cut is marked with `…`. Stops reading at the cut, so a huge
/// message costs one row.
fn one_line(text: &str, max_width: usize) -> String {
    let mut out = String::new();
    let mut used = 0;
    // (length of `out`, cells used) before each grapheme, to back off for the `…`.
    let mut marks = Vec::new();
    let mut space = false;
    for grapheme in text.trim().graphemes(true) {
        if is_blank(grapheme) {
            space = true;
            continue;
        }
        let width = grapheme_width(grapheme) + usize::from(space);
        if used + width > max_width {
            while used + 1 > max_width {
                let Some((len, cells)) = marks.pop() else {
                    break;
                };
                out.truncate(len);
                used = cells;
            }
            out.truncate(out.trim_end().len());
            out.push('…');
            return out;
        }
        marks.push((out.len(), used));
        if std::mem::take(&mut space) {
            out.push(' ');
        }
        out.push_str(grapheme);
        used += width;
    }
    out
}

#[cfg(test)]
mod tests;
