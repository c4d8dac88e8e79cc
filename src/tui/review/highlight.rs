//! Syntax colouring of the two sides of a proposed edit.
//!
//! Owns: highlighting a file line by line on demand, and turning the styled pieces into
//! display spans.
//! Does not own: the syntax set, finding a file's syntax, or the palette
//! (`tui::highlight`, shared with the transcript); diff backgrounds, markers or layout
//! (`diff_view`).
//! Invariant: each line of a file is highlighted at most once per review, in order from
//! the top (syntect's parse state runs through the file), and only as far down as a
//! frame has shown; with colour off, or for a syntax syntect does not know, nothing is
//! parsed at all. A styled line has exactly the characters of its plain text, hidden
//! characters written out as code points in both (styled apart in the styled line).

use std::ops::Range;

use ratatui::style::Style;
use ratatui::text::Span;

use super::text::{reveal, reveal_spans};
use crate::tui::highlight::SyntaxHighlighter;

/// Lines longer than this are shown plain: regex-based highlighting of a minified file
/// would stall the UI, and nobody reads its colours anyway.
const MAX_HIGHLIGHTED_BYTES: usize = 4_096;

/// One source line as display spans, terminator removed, control and other hidden
/// characters written out and tabs expanded.
pub(super) type StyledLine = Vec<Span<'static>>;

/// One file (the old or the new side of an edit), highlighted as far as needed.
pub(super) struct FileHighlighter {
    source: String,
    /// Byte range of each line, terminator included.
    lines: Vec<Range<usize>>,
    /// The first `highlighted.len()` lines, styled.
    highlighted: Vec<StyledLine>,
    /// `None` when not colouring (colour off, unknown syntax, or syntect gave up).
    state: Option<SyntaxHighlighter>,
    /// How a written-out hidden character is drawn.
    hidden: Style,
}

impl FileHighlighter {
    pub(super) fn new(path: &str, source: String, color: bool, hidden: Style) -> Self {
        let state = if color {
            SyntaxHighlighter::for_file(path, &source)
        } else {
            None
        };
        let mut lines = Vec::new();
        let mut start = 0;
        for line in source.split_inclusive('\n') {
            lines.push(start..start + line.len());
            start += line.len();
        }
        Self {
            source,
            lines,
            highlighted: Vec::new(),
            state,
            hidden,
        }
    }

    /// Lines in the file.
    pub(super) fn len(&self) -> usize {
        self.lines.len()
    }

    /// The 0-based line `index` as plain display text: exactly the characters
    /// [`Self::line`] styles, without parsing anything. Empty beyond the end.
    pub(super) fn plain(&self, index: usize) -> String {
        reveal(strip_terminator(self.raw(index)))
    }

    /// The 0-based line `index`, styled; parses the file down to it the first time.
    pub(super) fn line(&mut self, index: usize) -> &[Span<'static>] {
        let wanted = index.saturating_add(1).min(self.lines.len());
        while self.highlighted.len() < wanted {
            let raw = line_of(&self.source, &self.lines, self.highlighted.len());
            let styled = highlight(&mut self.state, raw, self.hidden);
            self.highlighted.push(styled);
        }
        self.highlighted.get(index).map_or(&[], Vec::as_slice)
    }

    fn raw(&self, index: usize) -> &str {
        line_of(&self.source, &self.lines, index)
    }
}

/// Line `index` of `source`, terminator included; empty beyond the end.
fn line_of<'s>(source: &'s str, lines: &[Range<usize>], index: usize) -> &'s str {
    lines
        .get(index)
        .and_then(|range| source.get(range.clone()))
        .unwrap_or_default()
}

/// Highlights one line (fed with its terminator, as syntect's newline syntaxes expect;
/// the styled text stops before it).
fn highlight(state: &mut Option<SyntaxHighlighter>, line: &str, hidden: Style) -> StyledLine {
    let content = strip_terminator(line);
    let plain = || reveal_spans(content, Style::default(), hidden);
    let Some(highlighter) = state else {
        return plain();
    };
    if line.len() > MAX_HIGHLIGHTED_BYTES {
        return plain();
    }
    match highlighter.line(line) {
        Ok(regions) => {
            let mut at = 0;
            let mut spans = Vec::with_capacity(regions.len());
            for (style, text) in regions {
                let end = (at + text.len()).min(content.len());
                if let Some(piece) = content
                    .get(at.min(end)..end)
                    .filter(|piece| !piece.is_empty())
                {
                    spans.extend(reveal_spans(piece, style, hidden));
                }
                at += text.len();
            }
            spans
        }
        Err(error) => {
            // The parse state is unusable after an error; the rest of the file stays plain.
            tracing::debug!(%error, "syntax highlighting stopped");
            *state = None;
            plain()
        }
    }
}

/// The line without its `\n` or `\r\n` (a lone `\r` is text, as in `crate::diff`).
fn strip_terminator(text: &str) -> &str {
    text.strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
        .unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(line: &StyledLine) -> String {
        line.iter().map(|span| span.content.as_ref()).collect()
    }

    #[test]
    fn rust_is_coloured_and_keeps_its_text() {
        let mut file = FileHighlighter::new(
            "src/lib.rs",
            "fn main() {\n\tlet x = 1;\n}\n".into(),
            true,
            Style::new(),
        );
        let line = file.line(1).to_vec();
        assert_eq!(text_of(&line), "    let x = 1;");
        assert_eq!(file.plain(1), "    let x = 1;");
        assert!(line.iter().any(|span| span.style.fg.is_some()));
        assert_eq!(text_of(&file.line(3).to_vec()), "", "beyond the end");
        assert_eq!((file.len(), file.plain(3)), (3, String::new()));
    }

    #[test]
    fn colour_off_or_unknown_syntax_is_plain() {
        for (path, color) in [("src/lib.rs", false), ("notes.unknown-ext", true)] {
            let mut file =
                FileHighlighter::new(path, "fn main() {}\r\n".into(), color, Style::new());
            let line = file.line(0).to_vec();
            assert_eq!(text_of(&line), "fn main() {}");
            assert!(
                line.iter().all(|span| span.style == Style::default()),
                "{path}"
            );
        }
    }

    #[test]
    fn only_line_terminators_are_dropped() {
        let file = FileHighlighter::new("a.txt", "a\rb\r\nend\r".into(), false, Style::new());
        assert_eq!(file.len(), 2);
        assert_eq!(file.plain(0), "a⟨U+000D⟩b");
        assert_eq!(file.plain(1), "end⟨U+000D⟩", "a lone CR is text");
    }

    #[test]
    fn a_shebang_picks_the_syntax() {
        let mut script =
            FileHighlighter::new("script", "#!/bin/sh\necho hi\n".into(), true, Style::new());
        assert!(script.line(1).iter().any(|span| span.style.fg.is_some()));
        let mut words = FileHighlighter::new("script", "just words\n".into(), true, Style::new());
        assert!(
            words
                .line(0)
                .iter()
                .all(|span| span.style == Style::default())
        );
    }
}
