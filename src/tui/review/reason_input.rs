//! The one-line input where the user tells the model why they rejected something.
//!
//! Owns: the text being typed, its cursor, the keys that edit it, and drawing it
//! wrapped under its prompt.
//! Does not own: what the reason is attached to (the prompt is given), or the decision.
//! Invariant: the text never holds a line break, and the cursor is always a char
//! boundary of it.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};

use crate::tui::theme::Theme;

use super::text::{reveal, wrap_spans, wrap_text};

/// Rows the typed text may take before older rows scroll out of sight.
const MAX_TEXT_ROWS: usize = 3;

pub(super) enum InputOutcome {
    /// Enter: the reason, trimmed; `None` when nothing was typed.
    Submit(Option<String>),
    Cancel,
    Edited,
    Ignored,
}

pub(super) struct ReasonInput {
    prompt: String,
    text: String,
    /// Byte offset into `text`.
    cursor: usize,
}

impl ReasonInput {
    pub(super) fn new(prompt: String) -> Self {
        Self {
            prompt,
            text: String::new(),
            cursor: 0,
        }
    }

    pub(super) fn handle_key(&mut self, key: KeyEvent) -> InputOutcome {
        if key.kind == KeyEventKind::Release {
            return InputOutcome::Ignored;
        }
        let control = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Enter => InputOutcome::Submit(self.reason()),
            KeyCode::Esc => InputOutcome::Cancel,
            KeyCode::Char('u') if control => self.edit(|input| {
                input.text.clear();
                input.cursor = 0;
            }),
            KeyCode::Char(c) if !control && !key.modifiers.contains(KeyModifiers::ALT) => {
                self.edit(|input| input.insert_char(c))
            }
            KeyCode::Backspace => match self.previous_boundary() {
                Some(at) => self.edit(|input| {
                    input.text.replace_range(at..input.cursor, "");
                    input.cursor = at;
                }),
                None => InputOutcome::Ignored,
            },
            KeyCode::Delete => match self.next_boundary() {
                Some(at) => self.edit(|input| input.text.replace_range(input.cursor..at, "")),
                None => InputOutcome::Ignored,
            },
            KeyCode::Left => self.move_to(self.previous_boundary()),
            KeyCode::Right => self.move_to(self.next_boundary()),
            KeyCode::Home => self.move_to(Some(0)),
            KeyCode::End => self.move_to(Some(self.text.len())),
            _ => InputOutcome::Ignored,
        }
    }

    /// Pasted text; line breaks become spaces, since the reason is one line.
    pub(super) fn insert(&mut self, text: &str) {
        for c in text.chars() {
            self.insert_char(c);
        }
    }

    fn insert_char(&mut self, c: char) {
        let c = match c {
            '\r' | '\n' | '\t' => ' ',
            c => c,
        };
        self.text.insert(self.cursor, c);
        self.cursor += c.len_utf8();
    }

    fn reason(&self) -> Option<String> {
        let trimmed = self.text.trim();
        (!trimmed.is_empty()).then(|| trimmed.to_string())
    }

    fn edit(&mut self, change: impl FnOnce(&mut Self)) -> InputOutcome {
        change(self);
        InputOutcome::Edited
    }

    fn move_to(&mut self, at: Option<usize>) -> InputOutcome {
        match at {
            Some(at) if at != self.cursor => {
                self.cursor = at;
                InputOutcome::Edited
            }
            _ => InputOutcome::Ignored,
        }
    }

    fn previous_boundary(&self) -> Option<usize> {
        self.text[..self.cursor]
            .char_indices()
            .next_back()
            .map(|(at, _)| at)
    }

    fn next_boundary(&self) -> Option<usize> {
        self.text[self.cursor..]
            .chars()
            .next()
            .map(|c| self.cursor + c.len_utf8())
    }

    /// The prompt, then `> ` and the text with the cursor shown as a reversed cell;
    /// only the last [`MAX_TEXT_ROWS`] rows of a long reason.
    pub(super) fn lines(&self, width: u16, theme: &Theme) -> Vec<Line<'static>> {
        let width = usize::from(width).max(3);
        let mut lines: Vec<Line<'static>> = wrap_text(&self.prompt, width)
            .into_iter()
            .map(|row| Line::styled(row, theme.accent))
            .collect();
        let (before, after) = self.text.split_at(self.cursor);
        let mut under_cursor = after.chars();
        let cursor_char = under_cursor.next().map_or(" ".to_string(), String::from);
        let spans = [
            Span::styled(reveal(before), theme.text),
            Span::styled(
                reveal(&cursor_char),
                theme.text.add_modifier(Modifier::REVERSED),
            ),
            Span::styled(reveal(under_cursor.as_str()), theme.text),
        ];
        let rows = wrap_spans(&spans, width - 2);
        let skip = rows.len().saturating_sub(MAX_TEXT_ROWS);
        lines.extend(rows.into_iter().enumerate().skip(skip).map(|(at, row)| {
            let lead = if at == 0 { "> " } else { "  " };
            let mut spans = vec![Span::styled(lead, theme.accent)];
            spans.extend(row);
            Line::from(spans)
        }));
        lines
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn typed(input: &mut ReasonInput, text: &str) {
        for c in text.chars() {
            input.handle_key(key(KeyCode::Char(c)));
        }
    }

    fn submitted(input: &mut ReasonInput) -> Option<String> {
        match input.handle_key(key(KeyCode::Enter)) {
            InputOutcome::Submit(reason) => reason,
            _ => panic!("Enter must submit"),
        }
    }

    #[test]
    fn editing_keys_move_by_characters() {
        let mut input = ReasonInput::new("why?".into());
        typed(&mut input, "héllo");
        input.handle_key(key(KeyCode::Left));
        input.handle_key(key(KeyCode::Left));
        input.handle_key(key(KeyCode::Backspace));
        input.handle_key(key(KeyCode::Home));
        input.handle_key(key(KeyCode::Delete));
        input.handle_key(key(KeyCode::End));
        typed(&mut input, "!");
        // h é l [l] o → backspace drops the first l; Home, Delete drops the h.
        assert_eq!(submitted(&mut input), Some("élo!".to_string()));
    }

    #[test]
    fn paste_stays_on_one_line_and_blank_means_no_reason() {
        let mut input = ReasonInput::new("why?".into());
        input.insert("  two\nlines\t");
        assert_eq!(submitted(&mut input), Some("two lines".to_string()));
        let mut empty = ReasonInput::new("why?".into());
        typed(&mut empty, "   ");
        assert_eq!(submitted(&mut empty), None);
        assert!(matches!(
            empty.handle_key(key(KeyCode::Esc)),
            InputOutcome::Cancel
        ));
        let control_u = KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL);
        typed(&mut empty, "x");
        empty.handle_key(control_u);
        assert_eq!(submitted(&mut empty), None);
    }
}
