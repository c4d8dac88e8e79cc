//! Fitting text into terminal cells: showing it as an approval view must and wrapping
//! it.
//!
//! Owns: what a character costs on screen (its display width), turning text from a
//! file or the model into what a reviewer can read exactly — every character that
//! could not be seen (controls, bidi controls, zero-width and format characters,
//! unusual spaces; see [`crate::terminal_text::hidden`]) written out as its code point,
//! `⟨U+202E⟩` — and splitting styled spans into rows.
//! Does not own: what the text means or how it is styled.
//! Invariant: every row [`wrap_ranges`] returns fits the width it was given (a
//! character wider than the whole row still gets a row of its own, so nothing is lost),
//! and revealed text holds no control, bidi or invisible character: what is drawn is
//! what is approved, in the order it runs. [`reveal`] and [`reveal_spans`] give the
//! same characters.

use std::ops::Range;

use ratatui::style::Style;
use ratatui::text::Span;
use unicode_width::UnicodeWidthChar;

use crate::terminal_text::{self, Revealed};

/// Spaces a tab becomes: tab stops would depend on where a span starts, and code reads
/// fine with fixed-width indentation.
const TAB: &str = "    ";

/// `text` with tabs expanded and hidden characters written out as their code points.
pub(super) fn reveal(text: &str) -> String {
    reveal_spans(text, Style::default(), Style::default())
        .into_iter()
        .map(|span| span.content)
        .collect()
}

/// [`reveal`] as spans: the text in `style`, each written-out character in `escape`,
/// so it stands apart from text that merely looks like it.
pub(super) fn reveal_spans(text: &str, style: Style, escape: Style) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    for piece in terminal_text::reveal(text) {
        match piece {
            Revealed::Text(run) => spans.push(Span::styled(run.replace('\t', TAB), style)),
            Revealed::Hidden(c) => spans.push(Span::styled(terminal_text::code_point(c), escape)),
        }
    }
    spans
}

pub(super) fn char_width(c: char) -> usize {
    c.width().unwrap_or(0)
}

pub(super) fn text_width(text: &str) -> usize {
    text.chars().map(char_width).sum()
}

/// `text` split into rows at most `width` cells wide, as char index ranges; always at
/// least one row.
pub(super) fn wrap_ranges(text: &str, width: usize) -> Vec<Range<usize>> {
    let width = width.max(1);
    let mut rows = Vec::new();
    let mut start = 0;
    let mut used = 0;
    for (at, c) in text.chars().enumerate() {
        let cost = char_width(c);
        if used + cost > width && used > 0 {
            rows.push(start..at);
            start = at;
            used = 0;
        }
        used += cost;
    }
    rows.push(start..text.chars().count());
    rows
}

/// The characters `range` of the text `spans` make up, keeping each one's style.
pub(super) fn slice_chars(spans: &[Span<'static>], range: Range<usize>) -> Vec<Span<'static>> {
    let mut out = Vec::new();
    let mut offset = 0;
    for span in spans {
        let len = span.content.chars().count();
        if let Some(local) = overlap(&range, offset, len) {
            let piece: String = span
                .content
                .chars()
                .skip(local.start)
                .take(local.len())
                .collect();
            out.push(Span::styled(piece, span.style));
        }
        offset += len;
        if offset >= range.end {
            break;
        }
    }
    out
}

/// The part of `range` inside the `len` characters starting at `offset`, relative to
/// `offset`; `None` when they do not meet.
pub(super) fn overlap(range: &Range<usize>, offset: usize, len: usize) -> Option<Range<usize>> {
    let start = range.start.clamp(offset, offset + len) - offset;
    let end = range.end.clamp(offset, offset + len) - offset;
    (start < end).then_some(start..end)
}

/// `spans` split into rows at most `width` cells wide; always at least one row.
pub(super) fn wrap_spans(spans: &[Span<'static>], width: usize) -> Vec<Vec<Span<'static>>> {
    let text: String = spans.iter().map(|span| span.content.as_ref()).collect();
    wrap_ranges(&text, width)
        .into_iter()
        .map(|range| slice_chars(spans, range))
        .collect()
}

/// Plain `text` wrapped at `width`, each line of it starting a new row.
pub(super) fn wrap_text(text: &str, width: usize) -> Vec<String> {
    text.lines()
        .flat_map(|line| {
            wrap_spans(&[Span::raw(reveal(line))], width)
                .into_iter()
                .map(|row| row.iter().map(|span| span.content.as_ref()).collect())
        })
        .collect()
}

/// `text` exactly as it would run, wrapped at `width`: each `\n` starts a row (a `\r`
/// before it is written out, not dropped), and hidden characters are written out in
/// `escape`.
pub(super) fn wrap_revealed(
    text: &str,
    width: usize,
    style: Style,
    escape: Style,
) -> Vec<Vec<Span<'static>>> {
    text.split('\n')
        .flat_map(|line| wrap_spans(&reveal_spans(line, style, escape), width))
        .collect()
}

/// `spans` cut from the left to fit `width`, with `…` (in `style`) showing the cut: for
/// paths, whose end (the file name) matters most.
pub(super) fn fit_from_end(
    spans: Vec<Span<'static>>,
    width: usize,
    style: Style,
) -> Vec<Span<'static>> {
    let text: String = spans.iter().map(|span| span.content.as_ref()).collect();
    if text_width(&text) <= width {
        return spans;
    }
    let count = text.chars().count();
    let mut start = count;
    let mut used = 1; // the ellipsis
    for c in text.chars().rev() {
        used += char_width(c);
        if used > width {
            break;
        }
        start -= 1;
    }
    let mut fitted = vec![Span::styled("…", style)];
    fitted.extend(slice_chars(&spans, start..count));
    fitted
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use ratatui::style::Style;

    use super::*;

    fn row_texts(rows: &[Vec<Span<'static>>]) -> Vec<String> {
        rows.iter()
            .map(|row| row.iter().map(|span| span.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn wrapping_keeps_styles_and_counts_wide_characters() {
        let spans = [
            Span::styled("abcd", Style::new().red()),
            Span::raw("ef日本"),
        ];
        let rows = wrap_spans(&spans, 3);
        assert_eq!(row_texts(&rows), ["abc", "def", "日", "本"]);
        assert_eq!(rows[1][0].style, Style::new().red());
        assert_eq!(rows[1][1].style, Style::default());
        assert_eq!(row_texts(&wrap_spans(&[], 5)), [""]);
        assert_eq!(row_texts(&wrap_spans(&[Span::raw("日")], 1)), ["日"]);
        assert_eq!(wrap_ranges("abcdefg", 3), [0..3, 3..6, 6..7]);
        assert_eq!(row_texts(&[slice_chars(&spans, 2..100)]), ["cdef日本"]);
    }

    #[test]
    fn control_and_hidden_characters_are_written_out() {
        assert_eq!(reveal("a\tb\x1b[2Jc\r"), "a    b⟨U+001B⟩[2Jc⟨U+000D⟩");
        assert_eq!(reveal("x\u{202e}y\u{200b}"), "x⟨U+202E⟩y⟨U+200B⟩");
        assert_eq!(wrap_text("one\ntwo three", 5), ["one", "two t", "hree"]);
        let escape = Style::new().reversed();
        let spans = reveal_spans("ab\u{2066}c", Style::new(), escape);
        assert_eq!(
            spans,
            [
                Span::raw("ab"),
                Span::styled("⟨U+2066⟩", escape),
                Span::raw("c")
            ]
        );
        let rows = wrap_revealed("ls\r\nrm x", 20, Style::new(), escape);
        assert_eq!(row_texts(&rows), ["ls⟨U+000D⟩", "rm x"]);
    }

    #[test]
    fn long_paths_keep_their_file_name() {
        let fit = |text: &str| {
            let spans = fit_from_end(vec![Span::raw(text.to_string())], 10, Style::new());
            row_texts(&[spans]).concat()
        };
        assert_eq!(fit("src/tui/review/mod.rs"), "…ew/mod.rs");
        assert_eq!(fit("a.rs"), "a.rs");
        let escape = Style::new().reversed();
        let spans = fit_from_end(
            reveal_spans("src/long/a\u{202e}b.rs", Style::new(), escape),
            14,
            Style::new(),
        );
        assert_eq!(
            row_texts(std::slice::from_ref(&spans)).concat(),
            "…a⟨U+202E⟩b.rs"
        );
        assert_eq!(spans[2].style, escape);
    }
}
