//! The text being composed, its cursor and its wrapped layout: insertion, deletion
//! and cursor movement by grapheme, word, line and wrapped row.
//!
//! Invariant: there is always at least one line, no line holds a `\n`, `\r` or any
//! other control character but `\t`, the cursor is on a grapheme boundary of an
//! existing line, and every edit tells the layout cache what it touched.

use std::borrow::Cow;
use std::cell::RefCell;
use std::ops::Range;

use unicode_segmentation::UnicodeSegmentation;

use super::wrap::{WrapCache, is_blank, offset_at_cell, text_width};

/// A wrapped row: the row index within a line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct RowPos {
    pub(crate) line: usize,
    pub(crate) row: usize,
}

#[derive(Clone, Debug)]
pub(crate) struct Editor {
    lines: Vec<String>,
    row: usize,
    /// Byte offset into `lines[row]`.
    col: usize,
    /// The cell a run of up/down moves keeps aiming for, so passing a short line does
    /// not pull the cursor left for good.
    goal: Option<usize>,
    /// Filled while drawing (through `&self`), emptied by edits.
    layout: RefCell<WrapCache>,
}

impl Default for Editor {
    fn default() -> Self {
        Editor {
            lines: vec![String::new()],
            row: 0,
            col: 0,
            goal: None,
            layout: RefCell::default(),
        }
    }
}

/// `\r\n` and lone `\r` become `\n`; other control characters (escape sequences in a
/// paste, NULs) are dropped, since they would corrupt the screen and mean nothing to
/// the model. Tabs stay.
pub(crate) fn normalize(text: &str) -> Cow<'_, str> {
    let clean = |c: char| !c.is_control() || c == '\n' || c == '\t';
    if text.chars().all(clean) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                chars.next_if_eq(&'\n');
                out.push('\n');
            }
            c if clean(c) => out.push(c),
            _ => {}
        }
    }
    Cow::Owned(out)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum WordClass {
    Blank,
    Word,
    Punctuation,
}

fn class(grapheme: &str) -> WordClass {
    if is_blank(grapheme) {
        WordClass::Blank
    } else if grapheme
        .chars()
        .next()
        .is_some_and(|c| c.is_alphanumeric() || c == '_')
    {
        WordClass::Word
    } else {
        WordClass::Punctuation
    }
}

impl Editor {
    pub(crate) fn lines(&self) -> &[String] {
        &self.lines
    }

    /// (line, byte offset in it).
    pub(crate) fn cursor(&self) -> (usize, usize) {
        (self.row, self.col)
    }

    pub(crate) fn text(&self) -> String {
        self.lines.join("\n")
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.lines.len() == 1 && self.lines[0].is_empty()
    }

    /// Replaces everything; the cursor goes to `cursor_line`'s end (the last line when
    /// `None`).
    pub(crate) fn set_text(&mut self, text: &str, cursor_line: Option<usize>) {
        *self = Editor::default();
        self.insert(text);
        if let Some(line) = cursor_line {
            self.row = line.min(self.lines.len() - 1);
            self.col = self.lines[self.row].len();
        }
    }

    pub(crate) fn clear(&mut self) -> bool {
        let changed = !self.is_empty();
        *self = Editor::default();
        changed
    }

    /// Inserts at the cursor in one splice, however long `text` is.
    pub(crate) fn insert(&mut self, text: &str) {
        self.goal = None;
        let text = normalize(text);
        if text.contains('\n') {
            self.layout.get_mut().reshaped(self.row);
        } else {
            self.layout.get_mut().edited(self.row, self.col);
        }
        let mut pieces = text.split('\n');
        let current = &mut self.lines[self.row];
        let tail = current.split_off(self.col);
        current.push_str(pieces.next().unwrap_or_default());
        let mut new_lines: Vec<String> = pieces.map(str::to_string).collect();
        match new_lines.last_mut() {
            None => {
                self.col = current.len();
                current.push_str(&tail);
            }
            Some(last) => {
                self.col = last.len();
                last.push_str(&tail);
                let count = new_lines.len();
                let at = self.row + 1;
                self.lines.splice(at..at, new_lines);
                self.row += count;
            }
        }
    }

    fn line(&self) -> &str {
        &self.lines[self.row]
    }

    fn prev_boundary(&self) -> Option<usize> {
        let line = self.line();
        line[..self.col]
            .grapheme_indices(true)
            .next_back()
            .map(|(offset, _)| offset)
    }

    fn next_boundary(&self) -> Option<usize> {
        let line = self.line();
        line[self.col..]
            .graphemes(true)
            .next()
            .map(|grapheme| self.col + grapheme.len())
    }

    pub(crate) fn left(&mut self) -> bool {
        self.goal = None;
        if let Some(offset) = self.prev_boundary() {
            self.col = offset;
        } else if self.row > 0 {
            self.row -= 1;
            self.col = self.line().len();
        } else {
            return false;
        }
        true
    }

    pub(crate) fn right(&mut self) -> bool {
        self.goal = None;
        if let Some(offset) = self.next_boundary() {
            self.col = offset;
        } else if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = 0;
        } else {
            return false;
        }
        true
    }

    /// The start of the word before the cursor (blanks skipped first).
    fn word_start_before(&self) -> usize {
        let line = self.line();
        let mut graphemes = line[..self.col].grapheme_indices(true).rev().peekable();
        while graphemes.next_if(|(_, g)| is_blank(g)).is_some() {}
        let Some(&(mut start, first)) = graphemes.peek() else {
            return 0;
        };
        let word = class(first);
        while let Some((offset, _)) = graphemes.next_if(|(_, g)| class(g) == word) {
            start = offset;
        }
        start
    }

    /// The end of the word after the cursor (blanks skipped first).
    fn word_end_after(&self) -> usize {
        let line = self.line();
        let mut graphemes = line[self.col..].grapheme_indices(true).peekable();
        while graphemes.next_if(|(_, g)| is_blank(g)).is_some() {}
        let Some(&(_, first)) = graphemes.peek() else {
            return line.len();
        };
        let word = class(first);
        let mut end = self.col;
        while let Some((offset, grapheme)) = graphemes.next_if(|(_, g)| class(g) == word) {
            end = self.col + offset + grapheme.len();
        }
        end
    }

    pub(crate) fn word_left(&mut self) -> bool {
        if self.col == 0 {
            return self.left();
        }
        self.goal = None;
        self.col = self.word_start_before();
        true
    }

    pub(crate) fn word_right(&mut self) -> bool {
        if self.col == self.line().len() {
            return self.right();
        }
        self.goal = None;
        self.col = self.word_end_after();
        true
    }

    pub(crate) fn line_start(&mut self) -> bool {
        self.goal = None;
        std::mem::replace(&mut self.col, 0) != 0
    }

    pub(crate) fn line_end(&mut self) -> bool {
        self.goal = None;
        let end = self.line().len();
        std::mem::replace(&mut self.col, end) != end
    }

    pub(crate) fn delete_back(&mut self) -> bool {
        self.goal = None;
        if let Some(offset) = self.prev_boundary() {
            self.remove_before(offset);
        } else if self.row > 0 {
            self.layout.get_mut().reshaped(self.row - 1);
            let line = self.lines.remove(self.row);
            self.row -= 1;
            self.col = self.line().len();
            self.lines[self.row].push_str(&line);
        } else {
            return false;
        }
        true
    }

    pub(crate) fn delete_forward(&mut self) -> bool {
        self.goal = None;
        if let Some(offset) = self.next_boundary() {
            self.layout.get_mut().edited(self.row, self.col);
            let col = self.col;
            self.lines[self.row].replace_range(col..offset, "");
        } else if self.row + 1 < self.lines.len() {
            self.layout.get_mut().reshaped(self.row);
            let next = self.lines.remove(self.row + 1);
            self.lines[self.row].push_str(&next);
        } else {
            return false;
        }
        true
    }

    /// Deletes back to the previous blank, like Ctrl-W in a shell: `-m`, `foo.bar()` and
    /// a path go in one stroke.
    pub(crate) fn delete_word_back(&mut self) -> bool {
        if self.col == 0 {
            return self.delete_back();
        }
        self.goal = None;
        let line = self.line();
        let mut graphemes = line[..self.col].grapheme_indices(true).rev().peekable();
        while graphemes.next_if(|(_, g)| is_blank(g)).is_some() {}
        let mut start = graphemes.peek().map_or(0, |&(offset, _)| offset);
        while let Some((offset, _)) = graphemes.next_if(|(_, g)| !is_blank(g)) {
            start = offset;
        }
        self.remove_before(start);
        true
    }

    /// Replaces the text from byte `start` of the cursor's line up to the cursor with
    /// `text`, the cursor after it. `start` past the cursor or off a character boundary
    /// changes nothing.
    pub(crate) fn replace_before(&mut self, start: usize, text: &str) -> bool {
        if start > self.col || !self.line().is_char_boundary(start) {
            return false;
        }
        self.goal = None;
        self.remove_before(start);
        self.insert(text);
        true
    }

    /// The character just after the cursor on its line.
    pub(crate) fn char_after(&self) -> Option<char> {
        self.line()[self.col..].chars().next()
    }

    /// Removes the text from `start` to the cursor.
    fn remove_before(&mut self, start: usize) {
        self.layout.get_mut().edited(self.row, start);
        let col = self.col;
        self.lines[self.row].replace_range(start..col, "");
        self.col = start;
    }

    /// Moves up one wrapped row at `width` cells; `false` on the first row.
    pub(crate) fn up(&mut self, width: usize) -> bool {
        let (row, cell) = self.cursor_cell(width);
        let target = if row > 0 {
            Some((self.row, row - 1))
        } else if self.row > 0 {
            Some((
                self.row - 1,
                self.row_count(self.row - 1, width).saturating_sub(1),
            ))
        } else {
            None
        };
        self.land(target, cell, width)
    }

    /// Moves down one wrapped row at `width` cells; `false` on the last row.
    pub(crate) fn down(&mut self, width: usize) -> bool {
        let (row, cell) = self.cursor_cell(width);
        let target = if self.row_range(self.row, row + 1, width).is_some() {
            Some((self.row, row + 1))
        } else if self.row + 1 < self.lines.len() {
            Some((self.row + 1, 0))
        } else {
            None
        };
        self.land(target, cell, width)
    }

    /// Puts the cursor on `target` (line, row), as near the goal cell as it gets.
    fn land(&mut self, target: Option<(usize, usize)>, cell: usize, width: usize) -> bool {
        let goal = *self.goal.get_or_insert(cell);
        let Some((line, row)) = target else {
            return false;
        };
        let Some(range) = self.row_range(line, row, width) else {
            return false;
        };
        self.row = line;
        self.col = offset_at_cell(&self.lines[line], range, goal);
        true
    }

    /// The cursor's row within its line and its cell within that row, at `width`.
    /// The cell is clamped to the row, which only matters on a clipped trailing space.
    pub(crate) fn cursor_cell(&self, width: usize) -> (usize, usize) {
        let line = self.line();
        let (row, range) = self
            .layout
            .borrow_mut()
            .row_of(line, self.row, self.col, width);
        let cell = text_width(&line[range.start..self.col]);
        (row, cell.min(width.max(1) - 1))
    }

    pub(crate) fn row_range(&self, line: usize, row: usize, width: usize) -> Option<Range<usize>> {
        let text = self.lines.get(line)?;
        self.layout.borrow_mut().row(text, line, row, width)
    }

    pub(crate) fn row_count(&self, line: usize, width: usize) -> usize {
        match self.lines.get(line) {
            Some(text) => self.layout.borrow_mut().row_count(text, line, width),
            None => 0,
        }
    }

    /// Up to `limit` wrapped rows from `top` on.
    pub(crate) fn rows_from(
        &self,
        top: RowPos,
        width: usize,
        limit: usize,
    ) -> Vec<(RowPos, Range<usize>)> {
        let mut found = Vec::new();
        let mut pos = top;
        while found.len() < limit && pos.line < self.lines.len() {
            match self.row_range(pos.line, pos.row, width) {
                Some(range) => {
                    found.push((pos, range));
                    pos.row += 1;
                }
                None => {
                    pos.line += 1;
                    pos.row = 0;
                }
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn editor(text: &str) -> Editor {
        let mut editor = Editor::default();
        editor.insert(text);
        editor
    }

    #[test]
    fn insertion_splits_and_joins_lines() {
        let mut e = editor("one\ntwo");
        assert_eq!(e.cursor(), (1, 3));
        e.line_start();
        e.insert("X\nY");
        assert_eq!(e.text(), "one\nX\nYtwo");
        assert_eq!(e.cursor(), (2, 1));
        assert!(e.delete_back());
        assert!(e.delete_back());
        assert_eq!(e.text(), "one\nXtwo");
        assert_eq!(e.cursor(), (1, 1));
        e.line_end();
        assert!(!e.delete_forward());
        e.set_text("a\nb", Some(0));
        assert!(e.delete_forward());
        assert_eq!(e.text(), "ab");
    }

    #[test]
    fn pasted_line_endings_and_escapes_are_normalized() {
        assert_eq!(normalize("a\r\nb\rc\n"), "a\nb\nc\n");
        assert_eq!(normalize("red \u{1b}[31m\u{0}x\ty"), "red [31mx\ty");
        assert!(matches!(normalize("plain\ttext\n"), Cow::Borrowed(_)));
    }

    #[test]
    fn multibyte_and_wide_characters_move_as_one() {
        let mut e = editor("e\u{301}日👍🏽x");
        let mut offsets = vec![e.cursor().1];
        while e.left() {
            offsets.push(e.cursor().1);
        }
        assert_eq!(offsets, [15, 14, 6, 3, 0]);
        assert!(e.delete_forward());
        assert_eq!(e.text(), "日👍🏽x");
        e.line_end();
        e.delete_back();
        e.delete_back();
        assert_eq!(e.text(), "日");
    }

    #[test]
    fn words_are_runs_of_one_kind() {
        let mut e = editor("let x = foo.bar(1);  ");
        let mut stops = Vec::new();
        while e.cursor().1 > 0 {
            e.word_left();
            stops.push(e.cursor().1);
        }
        assert_eq!(stops, [17, 16, 15, 12, 11, 8, 6, 4, 0]);
        let mut stops = Vec::new();
        while e.word_right() {
            stops.push(e.cursor().1);
        }
        assert_eq!(stops, [3, 5, 7, 11, 12, 15, 16, 17, 19, 21]);
    }

    #[test]
    fn deleting_a_word_takes_the_blanks_before_it() {
        let mut e = editor("git commit   -m");
        e.delete_word_back();
        assert_eq!(e.text(), "git commit   ");
        e.delete_word_back();
        assert_eq!(e.text(), "git ");
        e.set_text("a\nb", None);
        e.line_start();
        e.delete_word_back();
        assert_eq!(e.text(), "ab");
    }

    #[test]
    fn vertical_moves_follow_wrapped_rows_and_keep_the_goal_cell() {
        // At 8 cells "first line" wraps into "first " and "line".
        let mut e = Editor::default();
        e.set_text("first line\nab\nlonger line here", Some(0));
        assert_eq!(e.cursor(), (0, 10), "row 1 of line 0, cell 4");
        assert!(e.down(8));
        assert_eq!(e.cursor(), (1, 2), "short line: clamped");
        assert!(e.down(8));
        assert_eq!(e.cursor(), (2, 4), "goal cell 4 kept");
        assert!(e.up(8));
        assert!(e.up(8));
        assert_eq!(e.cursor(), (0, 10));
        assert!(e.up(8));
        assert_eq!(e.cursor(), (0, 4));
        assert!(!e.up(8), "first row");
        e.set_text("x", None);
        assert!(!e.down(8), "last row");
    }
}
