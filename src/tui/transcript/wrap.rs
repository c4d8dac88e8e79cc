//! Styled logical lines and their wrapping into terminal rows.
//!
//! Owns: [`LogicalLine`] (a line of content with the prefixes its rows start with) and
//! the grapheme-aware wrapping and truncation every cell uses. Does not own: what the
//! lines say or how they are cached.
//! Invariant: no produced row is wider than the width asked for (unless a single
//! grapheme is wider than the whole row), widths are measured exactly as ratatui's
//! buffer measures them, and a grapheme (an emoji sequence, a letter with its accents)
//! is never split across rows.
//!
//! Prose wraps at spaces; a word longer than a row is broken between graphemes. Code
//! lines wrap at the exact column (whitespace in code is meaningful) and their
//! continuation rows start with the `rest` prefix, where code puts a `↪` marker, so a
//! wrapped code line cannot be mistaken for two lines. Tabs become four spaces; other
//! control characters are dropped.

use std::borrow::Cow;

use ratatui::buffer::CellWidth;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_segmentation::UnicodeSegmentation;

/// How a logical line breaks when it is wider than the area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WrapMode {
    /// At spaces; spaces at a break are dropped.
    Words,
    /// At the column; every character is kept.
    Code,
}

/// One line of content before wrapping.
#[derive(Clone, Debug, PartialEq)]
pub struct LogicalLine {
    pub spans: Vec<Span<'static>>,
    /// Starts the first row (a list marker, a quote bar, a gutter).
    pub first: Vec<Span<'static>>,
    /// Starts every further row (indentation under the marker, a continuation mark).
    pub rest: Vec<Span<'static>>,
    pub mode: WrapMode,
}

impl LogicalLine {
    pub fn new(spans: Vec<Span<'static>>) -> Self {
        Self {
            spans,
            first: Vec::new(),
            rest: Vec::new(),
            mode: WrapMode::Words,
        }
    }

    pub fn styled(text: impl Into<String>, style: Style) -> Self {
        Self::new(vec![Span::styled(text.into(), style)])
    }

    pub fn blank() -> Self {
        Self::new(Vec::new())
    }

    /// Puts `first`/`rest` in front of the prefixes the line already has (a cell's
    /// gutter around markdown's own indentation).
    pub fn with_gutter(mut self, first: &[Span<'static>], rest: &[Span<'static>]) -> Self {
        self.first.splice(0..0, first.iter().cloned());
        self.rest.splice(0..0, rest.iter().cloned());
        self
    }

    /// The plain text of the line, prefixes excluded (for tests and summaries).
    #[cfg(test)]
    pub fn text(&self) -> String {
        self.spans
            .iter()
            .map(|span| span.content.as_ref())
            .collect()
    }
}

/// Display width of `text` as the buffer will draw it.
pub fn width_of(text: &str) -> usize {
    graphemes(text).map(|(_, width)| width).sum()
}

fn spans_width(spans: &[Span<'_>]) -> usize {
    spans.iter().map(|span| width_of(&span.content)).sum()
}

/// The drawable graphemes of `text` with their widths, filtered and measured the way
/// ratatui's buffer does, so a row's computed width is its drawn width.
fn graphemes(text: &str) -> impl Iterator<Item = (&str, usize)> {
    text.graphemes(true)
        .filter(|symbol| !symbol.contains(char::is_control))
        .map(|symbol| (symbol, usize::from(symbol.cell_width())))
}

fn expand_tabs(text: &str) -> Cow<'_, str> {
    if text.contains('\t') {
        Cow::Owned(text.replace('\t', "    "))
    } else {
        Cow::Borrowed(text)
    }
}

/// Collects one row, merging neighbouring graphemes of the same style into one span.
#[derive(Default)]
struct RowBuilder {
    spans: Vec<(Style, String)>,
    width: usize,
}

impl RowBuilder {
    fn push(&mut self, symbol: &str, width: usize, style: Style) {
        match self.spans.last_mut() {
            Some((last, text)) if *last == style => text.push_str(symbol),
            _ => self.spans.push((style, symbol.to_string())),
        }
        self.width += width;
    }

    fn finish(&mut self, prefix: &[Span<'static>]) -> Line<'static> {
        let mut spans = prefix.to_vec();
        spans.extend(
            self.spans
                .drain(..)
                .map(|(style, text)| Span::styled(text, style)),
        );
        self.width = 0;
        Line::from(spans)
    }
}

/// One grapheme to place, with its width and style.
#[derive(Clone, Copy)]
struct Glyph<'t> {
    symbol: &'t str,
    width: usize,
    style: Style,
}

/// A run of glyphs that wraps as a unit: a word, a run of spaces, or (in code) a
/// single glyph.
struct Token {
    space: bool,
    width: usize,
    glyphs: std::ops::Range<usize>,
}

fn tokens(glyphs: &[Glyph<'_>], mode: WrapMode) -> Vec<Token> {
    let mut out: Vec<Token> = Vec::new();
    for (index, glyph) in glyphs.iter().enumerate() {
        let space = mode == WrapMode::Words && glyph.symbol == " ";
        match out.last_mut() {
            Some(token) if mode == WrapMode::Words && token.space == space => {
                token.width += glyph.width;
                token.glyphs.end = index + 1;
            }
            _ => out.push(Token {
                space,
                width: glyph.width,
                glyphs: index..index + 1,
            }),
        }
    }
    out
}

/// The rows being produced for one logical line.
struct Rows<'l, 'o> {
    out: &'o mut Vec<Line<'static>>,
    row: RowBuilder,
    prefix: &'l [Span<'static>],
    rest: &'l [Span<'static>],
    /// Columns for content on the current row.
    room: usize,
    width: usize,
}

impl Rows<'_, '_> {
    fn break_row(&mut self) {
        self.out.push(self.row.finish(self.prefix));
        self.prefix = self.rest;
        self.room = self.width - spans_width(self.prefix);
    }

    /// Places glyphs one by one, breaking rows where they do not fit. Spaces that
    /// would start a new row are dropped instead.
    fn place(&mut self, glyphs: &[Glyph<'_>], is_space: bool) {
        for glyph in glyphs {
            if self.row.width > 0 && self.row.width + glyph.width > self.room {
                if is_space {
                    return;
                }
                self.break_row();
            }
            self.row.push(glyph.symbol, glyph.width, glyph.style);
        }
    }
}

/// Wraps `line` to `width` columns, appending the rows to `out`.
pub fn wrap_into(line: &LogicalLine, width: u16, out: &mut Vec<Line<'static>>) {
    let width = usize::from(width).max(1);
    // A prefix that leaves no room for content is dropped rather than starving it.
    let usable = |prefix: &'_ [Span<'static>]| spans_width(prefix) < width;
    let first: &[Span<'static>] = if usable(&line.first) {
        &line.first
    } else {
        &[]
    };
    let rest: &[Span<'static>] = if usable(&line.rest) { &line.rest } else { &[] };
    let texts: Vec<(Cow<'_, str>, Style)> = line
        .spans
        .iter()
        .map(|span| (expand_tabs(&span.content), span.style))
        .collect();
    let glyphs: Vec<Glyph<'_>> = texts
        .iter()
        .flat_map(|(text, style)| {
            graphemes(text).map(|(symbol, width)| Glyph {
                symbol,
                width,
                style: *style,
            })
        })
        .collect();
    let mut rows = Rows {
        out,
        row: RowBuilder::default(),
        prefix: first,
        rest,
        room: width - spans_width(first),
        width,
    };
    let mut pending_space: Option<&Token> = None;
    let tokens = tokens(&glyphs, line.mode);
    for token in &tokens {
        if token.space {
            pending_space = Some(token);
            continue;
        }
        let space_width = pending_space.map_or(0, |space| space.width);
        if rows.row.width > 0 && rows.row.width + space_width + token.width > rows.room {
            // A word that does not fit starts a new row (and is broken there if it is
            // longer than a row); the space before it is dropped.
            rows.break_row();
            pending_space = None;
        }
        if let Some(space) = pending_space.take() {
            rows.place(&glyphs[space.glyphs.clone()], true);
        }
        rows.place(&glyphs[token.glyphs.clone()], false);
    }
    let last = rows.row.finish(rows.prefix);
    rows.out.push(last);
}

/// `spans` cut to `width` columns; a cut line ends in `…`.
pub fn truncate(spans: &[Span<'static>], width: u16) -> Line<'static> {
    let width = usize::from(width);
    if spans_width(spans) <= width {
        return Line::from(spans.to_vec());
    }
    let mut row = RowBuilder::default();
    let room = width.saturating_sub(1);
    'spans: for span in spans {
        let text = expand_tabs(&span.content);
        for (symbol, symbol_width) in graphemes(&text) {
            if row.width + symbol_width > room {
                break 'spans;
            }
            row.push(symbol, symbol_width, span.style);
        }
    }
    let style = spans.last().map(|span| span.style).unwrap_or_default();
    if width > 0 {
        row.push("…", 1, style);
    }
    row.finish(&[])
}

/// Pads `left` and puts `right` at the right edge of a `width`-column row, cutting
/// `left` (never `right`) when both do not fit.
pub fn left_right(left: &[Span<'static>], right: &[Span<'static>], width: u16) -> Line<'static> {
    let right_width = spans_width(right);
    let room = usize::from(width).saturating_sub(right_width + 1);
    if right.is_empty() || room == 0 {
        return truncate(left, width);
    }
    let mut line = truncate(left, u16::try_from(room).unwrap_or(u16::MAX));
    let used = spans_width(&line.spans);
    line.spans.push(Span::raw(
        " ".repeat(usize::from(width) - right_width - used),
    ));
    line.spans.extend(right.iter().cloned());
    line
}

/// The rows of `lines` wrapped to `width`.
pub fn wrap_all<'a>(
    lines: impl IntoIterator<Item = &'a LogicalLine>,
    width: u16,
) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for line in lines {
        wrap_into(line, width, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use ratatui::style::Color;

    use super::*;

    fn rows(line: &LogicalLine, width: u16) -> Vec<String> {
        wrap_all([line], width)
            .iter()
            .map(|row| row.spans.iter().map(|span| span.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn words_wrap_at_spaces_and_drop_the_space() {
        let line = LogicalLine::styled("the quick brown fox jumps", Style::default());
        assert_eq!(rows(&line, 10), ["the quick", "brown fox", "jumps"]);
    }

    #[test]
    fn a_word_longer_than_a_row_is_broken() {
        let line = LogicalLine::styled("a abcdefghijkl", Style::default());
        assert_eq!(rows(&line, 5), ["a", "abcde", "fghij", "kl"]);
    }

    #[test]
    fn wide_characters_never_overflow_or_split() {
        // Each ideograph is two columns: five of them do not fit in nine.
        let line = LogicalLine::styled("漢字漢字漢字", Style::default());
        assert_eq!(rows(&line, 9), ["漢字漢字", "漢字"]);
        let emoji = LogicalLine::styled("ab👩‍🔬cd", Style::default());
        assert_eq!(rows(&emoji, 3), ["ab", "👩‍🔬c", "d"]);
        for row in wrap_all([&line, &emoji], 3) {
            assert!(row.width() <= 3, "{row:?}");
        }
    }

    #[test]
    fn prefixes_start_rows_and_count_toward_the_width() {
        let mut line = LogicalLine::styled("one two three", Style::default());
        line.first = vec![Span::raw("• ")];
        line.rest = vec![Span::raw("  ")];
        assert_eq!(rows(&line, 9), ["• one two", "  three"]);
    }

    #[test]
    fn code_wraps_at_the_column_keeping_spaces() {
        let mut line = LogicalLine::styled("let  x = 1;", Style::default());
        line.mode = WrapMode::Code;
        line.first = vec![Span::raw("  ")];
        line.rest = vec![Span::raw("↪ ")];
        assert_eq!(rows(&line, 7), ["  let  ", "↪ x = 1", "↪ ;"]);
    }

    #[test]
    fn styles_survive_wrapping() {
        let red = Style::default().fg(Color::Red);
        let line = LogicalLine::new(vec![Span::raw("plain "), Span::styled("red words", red)]);
        let wrapped = wrap_all([&line], 9);
        assert_eq!(wrapped[1].spans, vec![Span::styled("words", red)]);
    }

    #[test]
    fn an_empty_line_is_one_row_and_tabs_become_spaces() {
        assert_eq!(rows(&LogicalLine::blank(), 10), [""]);
        let tabbed = LogicalLine::styled("\tx\u{7}", Style::default());
        assert_eq!(rows(&tabbed, 10), ["    x"]);
    }

    #[test]
    fn truncation_marks_the_cut() {
        let spans = vec![Span::raw("hello world")];
        assert_eq!(truncate(&spans, 20).to_string(), "hello world");
        assert_eq!(truncate(&spans, 6).to_string(), "hello…");
        assert_eq!(truncate(&[Span::raw("日本語")], 4).to_string(), "日…");
    }

    #[test]
    fn right_side_is_kept_at_the_edge() {
        let line = left_right(&[Span::raw("shell $ cargo test")], &[Span::raw("3s")], 12);
        assert_eq!(line.to_string(), "shell $ … 3s");
        assert_eq!(line.width(), 12);
    }
}
