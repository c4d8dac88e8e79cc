//! The visible tail of a running tool's output, cleaned for display.
//!
//! Owns: turning raw output fragments (which may split escape sequences, use `\r` for
//! progress bars, or never end a line) into a few plain lines. Does not own: what the
//! model receives (that is `ToolRunEnd`'s output), how the lines are drawn, or the
//! grammar of escape sequences ([`crate::terminal_text::Parser`]: whole sequences,
//! payload included, are dropped here — a live tail is no place for placeholders).
//! Invariant: memory is bounded whatever the tool prints: [`KEPT_LINES`] lines of at
//! most [`MAX_LINE_CHARS`] characters each, and nothing kept contains a control
//! character.

use std::collections::VecDeque;

use crate::terminal_text::{Parser, Token};

/// Complete lines kept (the card shows the last few of them).
pub const KEPT_LINES: usize = 8;
/// Characters kept of one line; the rest would be cut at the card's edge anyway.
const MAX_LINE_CHARS: usize = 1_000;
const TAB: &str = "    ";

#[derive(Clone, Debug, Default)]
pub struct LiveOutput {
    lines: VecDeque<String>,
    current: String,
    current_chars: usize,
    parser: Parser,
    /// A `\r` was seen: the next character overwrites the line unless it is `\n`.
    carriage_return: bool,
}

impl LiveOutput {
    pub fn push(&mut self, text: &str) {
        let mut parser = std::mem::take(&mut self.parser);
        for c in text.chars() {
            parser.feed(c, &mut |token| match token {
                Token::Char(c) | Token::Control(c) => self.printable(c),
                Token::Sequence { .. } => {}
            });
        }
        self.parser = parser;
    }

    /// The last `count` lines, the incomplete one included.
    pub fn tail(&self, count: usize) -> Vec<&str> {
        let mut lines: Vec<&str> = self.lines.iter().map(String::as_str).collect();
        if !self.current.is_empty() {
            lines.push(&self.current);
        }
        let skip = lines.len().saturating_sub(count);
        lines.split_off(skip)
    }

    fn printable(&mut self, c: char) {
        if std::mem::take(&mut self.carriage_return) && c != '\n' {
            // A progress bar redrawing its line: keep only the newest state.
            self.current.clear();
            self.current_chars = 0;
        }
        match c {
            '\n' => self.end_line(),
            '\r' => self.carriage_return = true,
            '\t' => self.append(TAB),
            '\u{8}' => {
                if self.current.pop().is_some() {
                    self.current_chars -= 1;
                }
            }
            c if c.is_control() => {}
            c => self.append(c.encode_utf8(&mut [0; 4])),
        }
    }

    fn append(&mut self, text: &str) {
        if self.current_chars < MAX_LINE_CHARS {
            self.current.push_str(text);
            self.current_chars += text.chars().count();
        }
    }

    fn end_line(&mut self) {
        let line = std::mem::take(&mut self.current);
        self.current_chars = 0;
        if self.lines.len() == KEPT_LINES {
            self.lines.pop_front();
        }
        self.lines.push_back(line);
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn fragments_join_into_lines() {
        let mut output = LiveOutput::default();
        output.push("compil");
        output.push("ing\nok\nrunn");
        assert_eq!(output.tail(5), ["compiling", "ok", "runn"]);
        assert_eq!(output.tail(1), ["runn"]);
    }

    #[test]
    fn escape_sequences_are_stripped_even_when_split() {
        let mut output = LiveOutput::default();
        output.push("\u{1b}[1;3");
        output.push("2mgreen\u{1b}[0m \u{1b}]0;title\u{7}done\u{1b}]8;;x\u{1b}\\!\n");
        assert_eq!(output.tail(1), ["green done!"]);
        // DCS and APC payloads, and the 8-bit forms, go with their sequences.
        output.push("a\u{1b}Pq#0;2\u{1b}\\b\u{1b}_apc\u{1b}\\c\u{9d}52;c;eA==\u{9c}d\u{9b}2Ke\n");
        assert_eq!(output.tail(1), ["abcde"]);
    }

    #[test]
    fn carriage_returns_overwrite_and_controls_vanish() {
        let mut output = LiveOutput::default();
        output.push("10%\r50%\r100%\r\nnext\tcol\u{7}\u{0}\n");
        output.push("ab\u{8}c\n");
        assert_eq!(output.tail(5), ["100%", "next    col", "ac"]);
    }

    #[test]
    fn memory_stays_bounded() {
        let mut output = LiveOutput::default();
        for n in 0..100 {
            output.push(&format!("line {n}\n"));
        }
        output.push(&"x".repeat(5_000));
        assert_eq!(output.lines.len(), KEPT_LINES);
        assert_eq!(output.current.chars().count(), MAX_LINE_CHARS);
        assert_eq!(output.tail(2)[0], "line 99");
    }
}
