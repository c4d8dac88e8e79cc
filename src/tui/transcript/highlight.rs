//! Syntax highlighting of code blocks, line by line, in the terminal's own palette.
//!
//! Owns: [`CodeHighlighter`], which highlights one block incrementally (each line once,
//! as it arrives), and picking the block's language from its fence's info string.
//! Does not own: the syntax set and the palette (`tui::highlight`, shared with the
//! review), where code lines go or how they wrap.
//! Invariant: with colour off, or for a language syntect does not know, lines come back
//! unhighlighted in the theme's `code` style; highlighting never fails a render.

use ratatui::style::Style;
use ratatui::text::Span;

use crate::tui::highlight::SyntaxHighlighter;
use crate::tui::theme::Theme;

/// Highlights the lines of one code block in order, keeping the parser state between
/// lines, so a block that streams in is highlighted once per line.
pub struct CodeHighlighter {
    lines: Option<SyntaxHighlighter>,
    plain: Style,
}

impl CodeHighlighter {
    /// `info` is the fence's info string (`rust`, `py title="x"`, `rust,ignore`).
    pub fn new(info: &str, theme: &Theme) -> Self {
        let language = info
            .split(|c: char| c.is_whitespace() || c == ',' || c == '{')
            .find(|word| !word.is_empty())
            .unwrap_or_default();
        let lines = theme
            .color
            .then(|| SyntaxHighlighter::for_language(language))
            .flatten();
        Self {
            lines,
            plain: theme.code,
        }
    }

    /// The styled spans of one line (without its line break).
    pub fn line(&mut self, text: &str) -> Vec<Span<'static>> {
        let Some(lines) = self.lines.as_mut() else {
            return vec![Span::styled(text.to_string(), self.plain)];
        };
        let with_break = format!("{text}\n");
        match lines.line(&with_break) {
            Ok(pieces) => pieces
                .into_iter()
                .filter_map(|(style, piece)| {
                    let piece = piece.trim_end_matches('\n');
                    (!piece.is_empty()).then(|| Span::styled(piece.to_string(), style))
                })
                .collect(),
            Err(error) => {
                // A grammar that fails once would fail again: stay plain from here.
                tracing::debug!(%error, "syntax highlighting stopped");
                self.lines = None;
                vec![Span::styled(text.to_string(), self.plain)]
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use ratatui::style::Color;

    use super::*;

    #[test]
    fn info_strings_name_the_language_by_their_first_word() {
        let theme = Theme::new(true);
        for info in ["rust", "rs", "rust,ignore", "rust title=\"x\"", "Rust"] {
            let mut code = CodeHighlighter::new(info, &theme);
            let spans = code.line("fn main() {}");
            assert_eq!(spans[0].style.fg, Some(Color::Magenta), "{info}");
        }
    }

    #[test]
    fn state_carries_across_lines() {
        let mut code = CodeHighlighter::new("rust", &Theme::new(true));
        code.line("/* a comment");
        let inside = code.line("still comment */ fn");
        assert_eq!(inside[0].content, "still comment ");
        assert_eq!(inside[0].style.fg, Some(Color::DarkGray));
    }

    #[test]
    fn plain_without_colour_or_language() {
        let mono = Theme::new(false);
        let mut code = CodeHighlighter::new("rust", &mono);
        assert_eq!(
            code.line("let x = 1;"),
            vec![Span::styled("let x = 1;", mono.code)]
        );
        let colour = Theme::new(true);
        let mut unknown = CodeHighlighter::new("", &colour);
        assert_eq!(unknown.line("x"), vec![Span::styled("x", colour.code)]);
    }

    #[test]
    fn no_background_is_ever_set() {
        let mut code = CodeHighlighter::new("python", &Theme::new(true));
        for span in code.line("def f(x): return \"s\" + 1  # note") {
            assert_eq!(span.style.bg, None, "{span:?}");
        }
    }
}
