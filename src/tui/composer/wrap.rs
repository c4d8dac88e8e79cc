//! Cell widths and word wrapping of the input's lines, computed lazily row by row and
//! kept in a [`WrapCache`] between frames, so that neither a megabyte-long line nor a
//! keystroke in it costs more than the rows around the cursor.
//!
//! Invariant: widths agree with what [`ratatui::buffer::Buffer`] draws (tabs excepted,
//! which the composer draws as [`TAB_WIDTH`] spaces), so the cursor lands on the cell
//! of the character it is before; and a cached row start is only kept while the text
//! before the next row start is unchanged.

use std::ops::Range;

use ratatui::buffer::CellWidth;
use unicode_segmentation::UnicodeSegmentation;

/// Tabs are drawn as this many spaces (no tab stops: the input is not a code editor).
pub(crate) const TAB_WIDTH: usize = 4;

/// The cells a grapheme occupies.
pub(crate) fn grapheme_width(grapheme: &str) -> usize {
    if grapheme == "\t" {
        TAB_WIDTH
    } else if grapheme.contains(char::is_control) {
        // Filtered on input; drawn as nothing if one slips through.
        0
    } else {
        usize::from(grapheme.cell_width())
    }
}

/// The cells `text` occupies.
pub(crate) fn text_width(text: &str) -> usize {
    text.graphemes(true).map(grapheme_width).sum()
}

pub(crate) fn is_blank(grapheme: &str) -> bool {
    grapheme.chars().all(char::is_whitespace)
}

/// The rows `line` wraps into at `width` cells from `start` (a row start), as byte
/// ranges of `line`.
///
/// Rows break after whitespace when a word would overflow, and inside a word only when
/// it is longer than a row. A space that overflows stays at the end of its row (drawn
/// clipped) rather than starting the next. When the last row is full, an empty row
/// follows, where the cursor goes at the end of the line. An empty line is one empty
/// row.
fn rows_from(line: &str, width: usize, start: usize) -> Rows<'_> {
    Rows {
        line,
        width: width.max(1),
        start,
        done: false,
    }
}

struct Rows<'a> {
    line: &'a str,
    width: usize,
    start: usize,
    done: bool,
}

impl Iterator for Rows<'_> {
    type Item = Range<usize>;

    fn next(&mut self) -> Option<Range<usize>> {
        if self.done {
            return None;
        }
        let start = self.start;
        let mut used = 0;
        let mut last_break = None;
        for (offset, grapheme) in self.line[start..].grapheme_indices(true) {
            let at = start + offset;
            let width = grapheme_width(grapheme);
            if used + width > self.width && at > start {
                let end = if is_blank(grapheme) {
                    at + grapheme.len()
                } else {
                    last_break.unwrap_or(at)
                };
                self.start = end;
                return Some(start..end);
            }
            used += width;
            if is_blank(grapheme) {
                last_break = Some(at + grapheme.len());
            }
        }
        let end = self.line.len();
        if used >= self.width {
            // Keep going: one more (empty) row follows for the cursor.
            self.start = end;
        } else {
            self.done = true;
        }
        Some(start..end)
    }
}

/// `text` (one line) word-wrapped at `width` cells, trailing blanks of each row
/// dropped: for read-only prose such as the help.
pub(crate) fn wrap_words(text: &str, width: usize) -> Vec<&str> {
    let mut rows: Vec<&str> = rows_from(text, width, 0)
        .map(|row| text[row].trim_end())
        .collect();
    if rows.len() > 1 && rows.last().is_some_and(|row| row.is_empty()) {
        rows.pop();
    }
    rows
}

/// Row starts per line at one width, computed on demand and kept across frames.
///
/// Each row's end is the next row's start; a row start depends only on the text
/// before the following row start, which is what [`WrapCache::edited`] relies on.
#[derive(Clone, Debug, Default)]
pub(crate) struct WrapCache {
    width: usize,
    lines: Vec<Option<LineRows>>,
}

#[derive(Clone, Debug)]
struct LineRows {
    /// Known row starts; the first is always 0.
    starts: Vec<usize>,
    /// Whether `starts` holds every row.
    complete: bool,
}

impl LineRows {
    fn new() -> Self {
        LineRows {
            starts: vec![0],
            complete: false,
        }
    }

    /// Wraps one more row; `false` when there is none.
    fn extend(&mut self, text: &str, width: usize) -> bool {
        if self.complete {
            return false;
        }
        let start = self.starts.last().copied().unwrap_or(0);
        let mut rows = rows_from(text, width, start);
        if rows.next().is_some() && !rows.done {
            self.starts.push(rows.start);
        } else {
            self.complete = true;
        }
        true
    }

    fn range(&self, text: &str, row: usize) -> Option<Range<usize>> {
        let start = *self.starts.get(row)?;
        match self.starts.get(row + 1) {
            Some(&end) => Some(start..end),
            None if self.complete => Some(start..text.len()),
            None => None,
        }
    }
}

impl WrapCache {
    /// Text of `line` changed from byte `byte` on: rows that may wrap differently
    /// (from the one before the row holding `byte`) are forgotten.
    pub(crate) fn edited(&mut self, line: usize, byte: usize) {
        if let Some(Some(rows)) = self.lines.get_mut(line) {
            let holding = rows.starts.partition_point(|&start| start <= byte);
            rows.starts.truncate(holding.saturating_sub(1).max(1));
            rows.complete = false;
        }
    }

    /// Lines were added or removed at `line`: it and everything after are forgotten.
    pub(crate) fn reshaped(&mut self, line: usize) {
        self.lines.truncate(line);
    }

    fn line_rows(&mut self, line: usize, width: usize) -> &mut LineRows {
        if self.width != width {
            self.width = width;
            self.lines.clear();
        }
        if self.lines.len() <= line {
            self.lines.resize(line + 1, None);
        }
        self.lines[line].get_or_insert_with(LineRows::new)
    }

    /// Row `row` of line number `line` (whose text is `text`).
    pub(crate) fn row(
        &mut self,
        text: &str,
        line: usize,
        row: usize,
        width: usize,
    ) -> Option<Range<usize>> {
        let rows = self.line_rows(line, width);
        loop {
            if let Some(range) = rows.range(text, row) {
                return Some(range);
            }
            if !rows.extend(text, width) {
                return None;
            }
        }
    }

    pub(crate) fn row_count(&mut self, text: &str, line: usize, width: usize) -> usize {
        let rows = self.line_rows(line, width);
        while rows.extend(text, width) {}
        rows.starts.len()
    }

    /// The row holding byte `byte` (at a break: the later row), and its range.
    pub(crate) fn row_of(
        &mut self,
        text: &str,
        line: usize,
        byte: usize,
        width: usize,
    ) -> (usize, Range<usize>) {
        let rows = self.line_rows(line, width);
        while rows.starts.last().is_some_and(|&start| start <= byte) && rows.extend(text, width) {}
        let row = rows.starts.partition_point(|&start| start <= byte).max(1) - 1;
        let range = rows.range(text, row).unwrap_or(0..text.len());
        (row, range)
    }
}

/// The byte offset in `row` of `line` nearest to cell `goal` without passing it. On a
/// row that is not the line's last, the row's end belongs to the next row, so the
/// offset stays before it.
pub(crate) fn offset_at_cell(line: &str, row: Range<usize>, goal: usize) -> usize {
    let is_last = row.end == line.len();
    let mut used = 0;
    let mut best = row.start;
    for (offset, grapheme) in line[row.clone()].grapheme_indices(true) {
        let at = row.start + offset;
        let after = at + grapheme.len();
        used += grapheme_width(grapheme);
        if used > goal || (!is_last && after == row.end) {
            break;
        }
        best = after;
    }
    best
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn rows(line: &str, width: usize) -> Rows<'_> {
        rows_from(line, width, 0)
    }

    fn wrapped(line: &str, width: usize) -> Vec<&str> {
        rows(line, width).map(|row| &line[row]).collect()
    }

    #[test]
    fn words_wrap_at_spaces_and_long_words_break() {
        assert_eq!(wrapped("", 5), [""]);
        assert_eq!(wrapped("abc", 5), ["abc"]);
        assert_eq!(wrapped("ab cd ef", 5), ["ab cd ", "ef"]);
        assert_eq!(wrapped("ab cde", 5), ["ab ", "cde"]);
        assert_eq!(wrapped("abcdefgh", 3), ["abc", "def", "gh"]);
        assert_eq!(wrapped("hello world", 5), ["hello ", "world", ""]);
        assert_eq!(wrapped("a  b", 2), ["a  ", "b"]);
    }

    #[test]
    fn wide_characters_never_straddle_a_row() {
        assert_eq!(wrapped("日本語", 5), ["日本", "語"]);
        assert_eq!(wrapped("a日", 2), ["a", "日", ""]);
        // A character wider than the row still gets a row of its own.
        assert_eq!(wrapped("日日", 1), ["日", "日", ""]);
    }

    #[test]
    fn tabs_count_as_four_cells() {
        assert_eq!(text_width("\tx"), 5);
        assert_eq!(wrapped("\t\tx", 8), ["\t\t", "x"]);
    }

    fn cached_rows(cache: &mut WrapCache, line: &str, width: usize) -> Vec<Range<usize>> {
        (0..)
            .map_while(|row| cache.row(line, 0, row, width))
            .collect()
    }

    #[test]
    fn a_byte_at_a_break_belongs_to_the_later_row() {
        let mut cache = WrapCache::default();
        let line = "hello world";
        assert_eq!(cache.row_of(line, 0, 0, 5), (0, 0..6));
        assert_eq!(cache.row_of(line, 0, 5, 5), (0, 0..6));
        assert_eq!(cache.row_of(line, 0, 6, 5), (1, 6..11));
        assert_eq!(cache.row_of(line, 0, 11, 5), (2, 11..11));
        assert_eq!(cache.row_count(line, 0, 5), 3);
        assert_eq!(cache.row_of("", 1, 0, 5), (0, 0..0));
    }

    #[test]
    fn the_cache_agrees_with_fresh_wrapping_after_any_edit() {
        // A fixed pseudo-random walk of inserts and deletes.
        let mut seed: u64 = 0x5eed;
        let mut next = |bound: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % bound.max(1)
        };
        let pieces = [
            "a",
            "bb ",
            " ",
            "日本",
            "word ",
            "x",
            "\t",
            "  long-word-here ",
        ];
        let mut line = String::from("start ");
        let mut cache = WrapCache::default();
        for _ in 0..400 {
            let width = 7;
            let boundaries: Vec<usize> = line
                .grapheme_indices(true)
                .map(|(offset, _)| offset)
                .chain([line.len()])
                .collect();
            let at = boundaries[next(boundaries.len())];
            if next(3) == 0 && at < line.len() {
                let end = boundaries[boundaries.partition_point(|&b| b <= at)];
                line.replace_range(at..end, "");
            } else {
                line.insert_str(at, pieces[next(pieces.len())]);
            }
            cache.edited(0, at);
            let fresh: Vec<_> = rows(&line, width).collect();
            assert_eq!(cached_rows(&mut cache, &line, width), fresh, "{line:?}");
        }
    }

    #[test]
    fn a_new_width_rewraps() {
        let mut cache = WrapCache::default();
        let line = "one two three";
        assert_eq!(cache.row_count(line, 0, 5), 4, "the last row is full");
        assert_eq!(cache.row_count(line, 0, 20), 1);
        cache.reshaped(0);
        assert_eq!(
            cached_rows(&mut cache, line, 8),
            rows(line, 8).collect::<Vec<_>>()
        );
    }

    #[test]
    fn vertical_goals_land_on_character_boundaries() {
        let line = "ab日cd";
        let row = 0..line.len();
        assert_eq!(
            offset_at_cell(line, row.clone(), 3),
            2,
            "inside the wide char"
        );
        assert_eq!(offset_at_cell(line, row.clone(), 4), 5);
        assert_eq!(offset_at_cell(line, row, 99), line.len());
        // Not the last row: stop before the character that ends it.
        let line = "abc def";
        assert_eq!(offset_at_cell(line, 0..4, 99), 3);
    }

    #[test]
    fn the_first_rows_of_a_huge_line_are_cheap() {
        let line = "word ".repeat(400_000);
        let started = std::time::Instant::now();
        let first: Vec<_> = rows(&line, 80).take(10).collect();
        let elapsed = started.elapsed();
        println!("first 10 rows of a 2 MB line: {elapsed:?}");
        assert_eq!(first.len(), 10);
        assert_eq!(first[1], 80..160);
    }
}
