//! Renders a command's raw terminal output as the text a terminal would show.
//!
//! Owns: a small line-based terminal emulator: printable text, `\r`, `\n`, backspace,
//! tab, cursor movement and erase sequences (CSI A/B/C/D/E/F/G/H/d/J/K, save and
//! restore cursor); every other escape sequence (colours, modes, titles, OSC, DCS) is
//! dropped.
//! Does not own: framing (the scanner has removed markers) or clipping.
//! Invariant: nothing that scrolled out of the editable window is ever changed or lost,
//! every input byte is handled in amortized constant time, and no input makes it panic.

use std::collections::VecDeque;

/// Columns a tab stop spans.
const TAB_WIDTH: usize = 8;
/// Cells after a tab up to its stop: shown as nothing while the tab is there.
const TAB_FILL: char = '\0';
/// Parameter bytes kept for one CSI sequence; longer ones are consumed and ignored.
const MAX_CSI_PARAMS: usize = 32;

/// Where the escape-sequence parser is.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Parser {
    Ground,
    /// After ESC.
    Escape,
    /// After ESC and an intermediate byte (e.g. `ESC ( B`): one more byte ends it.
    EscapeIntermediate,
    Csi {
        params: String,
        /// A private marker (`?`, `>`, ...) or an overlong sequence: ignore it.
        ignore: bool,
    },
    /// OSC, DCS, APC, PM or SOS: a string ended by BEL or ST.
    Text {
        after_escape: bool,
    },
}

/// The rendered output of one command.
#[derive(Debug)]
pub(super) struct Screen {
    /// Lines that scrolled out of the window, each ending in `\n`.
    frozen: String,
    frozen_lines: usize,
    /// Byte offset in `frozen` up to which lines were handed out by [`Self::take_lines`].
    frozen_taken: usize,
    /// Absolute number of lines handed out so far.
    taken_lines: usize,
    /// The editable bottom of the output, like a terminal's screen. Never empty.
    window: VecDeque<Vec<char>>,
    max_rows: usize,
    row: usize,
    col: usize,
    saved: (usize, usize),
    parser: Parser,
    /// An incomplete UTF-8 sequence at the end of the last chunk.
    utf8_tail: Vec<u8>,
}

impl Screen {
    /// A screen whose editable window is `rows` lines high (the PTY's height).
    pub(super) fn new(rows: usize) -> Self {
        Self {
            frozen: String::new(),
            frozen_lines: 0,
            frozen_taken: 0,
            taken_lines: 0,
            window: VecDeque::from([Vec::new()]),
            max_rows: rows.max(1),
            row: 0,
            col: 0,
            saved: (0, 0),
            parser: Parser::Ground,
            utf8_tail: Vec::new(),
        }
    }

    pub(super) fn feed(&mut self, bytes: &[u8]) {
        let joined;
        let mut rest: &[u8] = if self.utf8_tail.is_empty() {
            bytes
        } else {
            let mut buffer = std::mem::take(&mut self.utf8_tail);
            buffer.extend_from_slice(bytes);
            joined = buffer;
            &joined
        };
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    self.feed_str(text);
                    return;
                }
                Err(error) => {
                    let (valid, after) = rest.split_at(error.valid_up_to());
                    if let Ok(text) = std::str::from_utf8(valid) {
                        self.feed_str(text);
                    }
                    match error.error_len() {
                        Some(bad) => {
                            self.feed_char(char::REPLACEMENT_CHARACTER);
                            rest = &after[bad..];
                        }
                        None => {
                            self.utf8_tail = after.to_vec();
                            return;
                        }
                    }
                }
            }
        }
    }

    fn feed_str(&mut self, text: &str) {
        for c in text.chars() {
            self.feed_char(c);
        }
    }

    fn feed_char(&mut self, c: char) {
        match std::mem::replace(&mut self.parser, Parser::Ground) {
            Parser::Ground => self.ground(c),
            Parser::Escape => self.escape(c),
            Parser::EscapeIntermediate => {}
            Parser::Csi { params, ignore } => self.csi(c, params, ignore),
            Parser::Text { after_escape } => self.text_string(c, after_escape),
        }
    }

    fn ground(&mut self, c: char) {
        match c {
            '\x1b' => self.parser = Parser::Escape,
            '\n' | '\x0b' | '\x0c' => self.line_feed(),
            '\r' => self.col = 0,
            '\x08' => self.col = self.col.saturating_sub(1),
            '\t' => self.tab(),
            // CSI and OSC as single C1 characters.
            '\u{9b}' => self.start_csi(),
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => {
                self.parser = Parser::Text {
                    after_escape: false,
                }
            }
            c if c.is_control() => {}
            c => self.put(c),
        }
    }

    fn escape(&mut self, c: char) {
        match c {
            '[' => self.start_csi(),
            ']' | 'P' | 'X' | '^' | '_' => {
                self.parser = Parser::Text {
                    after_escape: false,
                }
            }
            '7' => self.saved = (self.row, self.col),
            '8' => self.restore_cursor(),
            'M' => self.row = self.row.saturating_sub(1),
            'E' => {
                self.line_feed();
            }
            '\x1b' => self.parser = Parser::Escape,
            ' '..='/' => self.parser = Parser::EscapeIntermediate,
            // Any other final byte (`=`, `>`, `c`, ...) ends a sequence we ignore.
            _ => {}
        }
    }

    fn start_csi(&mut self) {
        self.parser = Parser::Csi {
            params: String::new(),
            ignore: false,
        };
    }

    fn csi(&mut self, c: char, mut params: String, mut ignore: bool) {
        match c {
            '0'..='9' | ';' | ':' => {
                if params.len() < MAX_CSI_PARAMS {
                    params.push(c);
                } else {
                    ignore = true;
                }
                self.parser = Parser::Csi { params, ignore };
            }
            // Private markers and intermediates: modes and queries we do not act on.
            '<'..='?' | ' '..='/' => {
                self.parser = Parser::Csi {
                    params,
                    ignore: true,
                }
            }
            '\x1b' => self.parser = Parser::Escape,
            // CAN and SUB cancel the sequence.
            '\x18' | '\x1a' => {}
            // Other controls inside a sequence still act.
            c if c.is_control() => {
                self.ground(c);
                self.parser = Parser::Csi { params, ignore };
            }
            final_byte => {
                if !ignore {
                    self.apply_csi(final_byte, &params);
                }
            }
        }
    }

    fn text_string(&mut self, c: char, after_escape: bool) {
        match c {
            '\x07' | '\u{9c}' => {}
            '\\' if after_escape => {}
            '\x1b' => {
                self.parser = Parser::Text { after_escape: true };
            }
            _ => {
                self.parser = Parser::Text {
                    after_escape: false,
                }
            }
        }
    }

    fn apply_csi(&mut self, final_byte: char, params: &str) {
        let mut numbers = params.split([';', ':']).map(|p| p.parse::<usize>().ok());
        let first = numbers.next().flatten();
        let second = numbers.next().flatten();
        // Movement counts treat 0 and a missing value as 1.
        let count = first.unwrap_or(1).max(1);
        match final_byte {
            'A' => self.row = self.row.saturating_sub(count),
            'B' => self.move_to_row(self.row.saturating_add(count)),
            'C' => self.col = self.col.saturating_add(count),
            'D' => self.col = self.col.saturating_sub(count),
            'E' => {
                self.move_to_row(self.row.saturating_add(count));
                self.col = 0;
            }
            'F' => {
                self.row = self.row.saturating_sub(count);
                self.col = 0;
            }
            'G' | '`' => self.col = count - 1,
            'H' | 'f' => {
                self.move_to_row(count - 1);
                self.col = second.unwrap_or(1).max(1) - 1;
            }
            'd' => self.move_to_row(count - 1),
            'J' => self.erase_display(first.unwrap_or(0)),
            'K' => self.erase_line(first.unwrap_or(0)),
            's' => self.saved = (self.row, self.col),
            'u' => self.restore_cursor(),
            _ => {}
        }
    }

    fn current_line(&mut self) -> &mut Vec<char> {
        // `row` always indexes an existing line; fall back to the last one if not.
        let last = self.window.len() - 1;
        let row = self.row.min(last);
        &mut self.window[row]
    }

    fn put(&mut self, c: char) {
        let col = self.col;
        let line = self.current_line();
        if col < line.len() {
            line[col] = c;
        } else {
            line.resize(col, ' ');
            line.push(c);
        }
        self.col += 1;
    }

    /// Moves to the next tab stop. At the end of a line the tab itself is kept, so
    /// tab-separated output (a Makefile, a TSV) reads back as it was written.
    fn tab(&mut self) {
        let stop = (self.col / TAB_WIDTH + 1) * TAB_WIDTH;
        let col = self.col;
        let line = self.current_line();
        if col >= line.len() {
            line.resize(col, ' ');
            line.push('\t');
            line.resize(stop, TAB_FILL);
        } else if stop > line.len() {
            line.resize(stop, ' ');
        }
        self.col = stop;
    }

    /// LF moves to the start of the next line (the PTY's usual `\r\n` translation
    /// applied even where a program switched it off), scrolling the window when needed.
    fn line_feed(&mut self) {
        self.col = 0;
        self.row += 1;
        if self.row < self.window.len() {
            return;
        }
        self.window.push_back(Vec::new());
        self.row = self.window.len() - 1;
        if self.window.len() > self.max_rows {
            self.freeze_top();
        }
    }

    fn freeze_top(&mut self) {
        if let Some(line) = self.window.pop_front() {
            push_rendered(&mut self.frozen, &line);
            self.frozen.push('\n');
            self.frozen_lines += 1;
            if self.taken_lines >= self.frozen_lines {
                self.frozen_taken = self.frozen.len();
            }
            self.row = self.row.saturating_sub(1);
            self.saved.0 = self.saved.0.saturating_sub(1);
        }
    }

    /// Moves to `row` of the window, adding empty lines below the output if needed
    /// (the screen below the last line exists, just blank).
    fn move_to_row(&mut self, row: usize) {
        let row = row.min(self.max_rows - 1);
        while self.window.len() <= row {
            self.window.push_back(Vec::new());
        }
        self.row = row;
    }

    fn restore_cursor(&mut self) {
        let (row, col) = self.saved;
        self.move_to_row(row);
        self.col = col;
    }

    fn erase_line(&mut self, mode: usize) {
        let col = self.col;
        let line = self.current_line();
        match mode {
            0 => line.truncate(col),
            1 => {
                let end = (col + 1).min(line.len());
                line[..end].fill(' ');
            }
            _ => line.clear(),
        }
    }

    fn erase_display(&mut self, mode: usize) {
        match mode {
            0 => {
                self.erase_line(0);
                self.window.truncate(self.row + 1);
            }
            1 => {
                for line in self.window.iter_mut().take(self.row) {
                    line.clear();
                }
                self.erase_line(1);
            }
            // The whole screen; what scrolled off stays, as in a terminal's scrollback.
            _ => self.window.iter_mut().for_each(Vec::clear),
        }
    }

    /// The lines completed since the last call (those above the cursor), for live
    /// display. A line changed after it was taken is not taken again.
    pub(super) fn take_lines(&mut self) -> String {
        let mut out = self.frozen[self.frozen_taken..].to_string();
        self.frozen_taken = self.frozen.len();
        let first_row = self.taken_lines.saturating_sub(self.frozen_lines);
        for line in self
            .window
            .range(first_row..self.row.min(self.window.len()))
        {
            push_rendered(&mut out, line);
            out.push('\n');
        }
        self.taken_lines = self.taken_lines.max(self.frozen_lines + self.row);
        out
    }

    /// Whatever [`Self::take_lines`] has not handed out, the unfinished last line
    /// included: the end of the live display.
    pub(super) fn take_rest(&mut self) -> String {
        let mut out = self.take_lines();
        let first_row = self.taken_lines.saturating_sub(self.frozen_lines);
        let mut rest = String::new();
        for line in self.window.range(first_row.min(self.window.len())..) {
            push_rendered(&mut rest, line);
            rest.push('\n');
        }
        self.taken_lines = self.frozen_lines + self.window.len();
        out.push_str(&trim_trailing_blank(rest));
        out
    }

    /// The line the cursor is on, as shown, trailing blanks removed: a prompt waiting
    /// for its answer.
    pub(super) fn cursor_line(&self) -> String {
        let mut line = String::new();
        if let Some(row) = self.window.get(self.row) {
            push_rendered(&mut line, row);
        }
        line.truncate(line.trim_end().len());
        line
    }

    /// The whole output as text: trailing blank lines and spaces removed, ending in a
    /// newline unless empty.
    pub(super) fn text(&self) -> String {
        let mut out = self.frozen.clone();
        for line in &self.window {
            push_rendered(&mut out, line);
            out.push('\n');
        }
        trim_trailing_blank(out)
    }
}

/// Appends a window line: a tab's fill cells vanish while the tab is there; fill
/// cells whose tab was overwritten show as the blanks they are on screen.
fn push_rendered(out: &mut String, line: &[char]) {
    let mut after_tab = false;
    for &c in line {
        match c {
            '\t' => {
                after_tab = true;
                out.push('\t');
            }
            TAB_FILL if after_tab => {}
            TAB_FILL => out.push(' '),
            c => {
                after_tab = false;
                out.push(c);
            }
        }
    }
}

fn trim_trailing_blank(mut text: String) -> String {
    let kept = text.trim_end().len();
    text.truncate(kept);
    if !text.is_empty() {
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn render(input: &str) -> String {
        let mut screen = Screen::new(50);
        screen.feed(input.as_bytes());
        screen.text()
    }

    #[test]
    fn plain_lines_pass_through() {
        assert_eq!(render("one\r\ntwo\r\n"), "one\ntwo\n");
        assert_eq!(render("no newline"), "no newline\n");
        assert_eq!(render(""), "");
        assert_eq!(render("\r\n\r\n"), "");
    }

    #[test]
    fn carriage_return_progress_keeps_the_final_state() {
        let bar: String = (0..=100)
            .step_by(10)
            .map(|p| format!("\r[{:<10}] {p:>3}%", "#".repeat(p / 10)))
            .collect();
        assert_eq!(
            render(&format!("start\r\n{bar}\r\ndone\r\n")),
            "start\n[##########] 100%\ndone\n"
        );
    }

    #[test]
    fn overwriting_a_longer_line_leaves_its_tail_unless_erased() {
        assert_eq!(render("downloading\rdone"), "doneloading\n");
        assert_eq!(render("downloading\rdone\x1b[K"), "done\n");
        assert_eq!(render("downloading\r\x1b[2Kdone"), "done\n");
        assert_eq!(render("abcdef\x1b[3D\x1b[1K"), "    ef\n");
    }

    #[test]
    fn backspace_moves_left_and_the_next_char_overwrites() {
        assert_eq!(render("abc\x08\x08X"), "aXc\n");
        assert_eq!(render("_\x08a_\x08b"), "ab\n");
        assert_eq!(render("\x08\x08x"), "x\n");
    }

    #[test]
    fn colours_titles_and_modes_are_dropped() {
        assert_eq!(
            render(
                "\x1b[1;31mred\x1b[0m \x1b]0;title\x07plain \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\x1b[?25l\x1b(B\x1b=ok"
            ),
            "red plain linkok\n"
        );
        assert_eq!(render("a\x1bPdevice\x1b\\b\u{9b}31mc"), "abc\n");
    }

    #[test]
    fn tabs_are_kept_as_tabs_at_the_end_of_a_line() {
        assert_eq!(render("a\tb\r\n\tc"), "a\tb\n\tc\n");
        // Over existing text a tab only moves the cursor.
        assert_eq!(render("abcdefghij\rX\tY"), "XbcdefghYj\n");
        // An overwritten tab leaves the blanks it spanned.
        assert_eq!(render("a\tb\rxyz"), "xyz     b\n");
    }

    #[test]
    fn cursor_up_rewrites_earlier_lines() {
        let input = "task 1: running\r\ntask 2: running\r\n\x1b[2A\x1b[2Ktask 1: done\r\n\x1b[2Ktask 2: done\r\n";
        assert_eq!(render(input), "task 1: done\ntask 2: done\n");
        assert_eq!(render("abc\x1b[1Gx\x1b[5Gy"), "xbc y\n");
        assert_eq!(render("line\x1b[3;4Hz"), "line\n\n   z\n");
    }

    #[test]
    fn clearing_the_screen_keeps_what_scrolled_off() {
        let mut screen = Screen::new(3);
        screen.feed(b"1\r\n2\r\n3\r\n4\r\n5\x1b[2J\x1b[Hfinal\r\n");
        assert_eq!(screen.text(), "1\n2\nfinal\n");
        assert_eq!(render("a\r\nb\r\nc\x1b[1;1H\x1b[J"), "");
    }

    #[test]
    fn utf8_split_across_chunks_and_invalid_bytes() {
        let mut screen = Screen::new(50);
        let text = "héllo wörld €😀".as_bytes();
        for byte in text {
            screen.feed(std::slice::from_ref(byte));
        }
        screen.feed(b" \xff!");
        assert_eq!(screen.text(), "héllo wörld €😀 \u{fffd}!\n");
    }

    #[test]
    fn escape_sequences_split_across_chunks_are_still_dropped() {
        let mut screen = Screen::new(50);
        for part in ["ab\x1b", "[3", "1mc\x1b]0;ti", "tle\x1b", "\\d"] {
            screen.feed(part.as_bytes());
        }
        assert_eq!(screen.text(), "abcd\n");
    }

    #[test]
    fn taken_lines_cover_the_output_once_in_order() {
        let mut screen = Screen::new(3);
        let mut live = String::new();
        for i in 0..10 {
            screen.feed(format!("line {i}\r\n").as_bytes());
            if i % 3 == 0 {
                live.push_str(&screen.take_lines());
            }
        }
        screen.feed(b"partial");
        live.push_str(&screen.take_lines());
        assert!(!live.contains("partial"));
        live.push_str(&screen.take_rest());
        let expected: String = (0..10).map(|i| format!("line {i}\n")).collect();
        assert_eq!(live, format!("{expected}partial\n"));
        assert_eq!(screen.text(), format!("{expected}partial\n"));
    }

    #[test]
    fn ten_megabytes_of_progress_and_lines_collapse_to_their_final_text() {
        let mut screen = Screen::new(50);
        let progress = "\r\x1b[32m[=====>    ] 50%\x1b[0m".repeat(2_000);
        for _ in 0..100 {
            screen.feed(progress.as_bytes());
        }
        screen.feed(b"\r\n");
        let lines = "some output line that is moderately long\r\n".repeat(2_000);
        for _ in 0..100 {
            screen.feed(lines.as_bytes());
        }
        let text = screen.text();
        assert_eq!(text.lines().count(), 200_001);
        assert!(text.starts_with("[=====>    ] 50%\nsome output"));
    }
}
