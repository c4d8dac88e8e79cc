//! Fitting text into terminal cells: cleaning it for display and wrapping it.
//!
//! Owns: what a character costs on screen (its display width), turning text from a
//! file or the model into something safe to draw, and splitting styled spans into rows.
//! Does not own: what the text means or how it is styled.
//! Invariant: every row [`wrap_ranges`] returns fits the width it was given (a
//! character wider than the whole row still gets a row of its own, so nothing is lost),
//! and sanitized text holds no control characters that could move the cursor.

use std::ops::Range;

use ratatui::text::Span;
use unicode_width::UnicodeWidthChar;

/// Spaces a tab becomes: tab stops would depend on where a span starts, and code reads
/// fine with fixed-width indentation.
const TAB: &str = "    ";

/// `text` with tabs expanded and other control characters shown as `�`.
pub(super) fn sanitize(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\t' => out.push_str(TAB),
            c if c.is_control() => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
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
            wrap_spans(&[Span::raw(sanitize(line))], width)
                .into_iter()
                .map(|row| row.iter().map(|span| span.content.as_ref()).collect())
        })
        .collect()
}

/// `text` cut from the left to fit `width`, with `…` showing the cut: for paths, whose
/// end (the file name) matters most.
pub(super) fn fit_from_end(text: &str, width: usize) -> String {
    if text_width(text) <= width {
        return text.to_string();
    }
    let mut kept = Vec::new();
    let mut used = 1; // the ellipsis
    for c in text.chars().rev() {
        used += char_width(c);
        if used > width {
            break;
        }
        kept.push(c);
    }
    std::iter::once('…').chain(kept.into_iter().rev()).collect()
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
    fn control_characters_cannot_reach_the_terminal() {
        assert_eq!(sanitize("a\tb\x1b[2Jc\r"), "a    b\u{FFFD}[2Jc\u{FFFD}");
        assert_eq!(wrap_text("one\ntwo three", 5), ["one", "two t", "hree"]);
    }

    #[test]
    fn long_paths_keep_their_file_name() {
        assert_eq!(fit_from_end("src/tui/review/mod.rs", 10), "…ew/mod.rs");
        assert_eq!(fit_from_end("a.rs", 10), "a.rs");
    }
}
