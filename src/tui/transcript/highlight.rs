//! Syntax highlighting of code blocks, line by line, in the terminal's own palette.
//!
//! Owns: the bundled syntax set, a highlighting theme built from the 16 ANSI colours,
//! and [`CodeHighlighter`], which highlights one block incrementally (each line once, as
//! it arrives). Does not own: where code lines go or how they wrap.
//! Invariant: with colour off, or for a language syntect does not know, lines come back
//! unhighlighted in the theme's `code` style; highlighting never fails a render.
//!
//! Why ANSI colours rather than a bundled RGB theme: the terminal maps the 16 palette
//! entries to shades that suit its own background, so the same choice reads on a dark
//! and on a light terminal. No background colour is ever set.

use std::str::FromStr;
use std::sync::LazyLock;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Span;
use syntect::easy::HighlightLines;
use syntect::highlighting::{
    Color as SynColor, FontStyle, ScopeSelectors, StyleModifier, Theme as SynTheme, ThemeItem,
    ThemeSettings,
};
use syntect::parsing::SyntaxSet;

use crate::tui::theme::Theme;

static SYNTAXES: LazyLock<SyntaxSet> = LazyLock::new(SyntaxSet::load_defaults_newlines);
static PALETTE_THEME: LazyLock<SynTheme> = LazyLock::new(palette_theme);

/// Marks a syntect colour as "ANSI palette entry `r`" (syntect colours are RGBA; a real
/// theme never uses alpha 0 for a foreground).
const PALETTE_ALPHA: u8 = 0;
/// The default foreground: the terminal's own text colour.
const DEFAULT_FG: SynColor = SynColor {
    r: 0,
    g: 0,
    b: 0,
    a: 255,
};

/// Which palette entry each kind of token gets. Yellow is avoided: it is unreadable on
/// many light backgrounds.
const RULES: &[(&str, u8, FontStyle)] = &[
    (
        "comment, punctuation.definition.comment",
        8,
        FontStyle::ITALIC,
    ),
    (
        "string, constant.character, markup.inserted",
        2,
        FontStyle::empty(),
    ),
    (
        "constant.numeric, constant.language, constant.other",
        1,
        FontStyle::empty(),
    ),
    (
        "keyword, storage, keyword.control, markup.heading",
        5,
        FontStyle::empty(),
    ),
    ("keyword.operator", 0xFF, FontStyle::empty()),
    (
        "entity.name.function, support.function, variable.function, support.macro, \
         entity.name.tag",
        4,
        FontStyle::empty(),
    ),
    (
        "entity.name.type, entity.name.class, entity.name.struct, entity.name.enum, \
         entity.name.trait, support.type, support.class, entity.other.attribute-name",
        6,
        FontStyle::empty(),
    ),
    ("markup.deleted, invalid", 1, FontStyle::empty()),
    ("markup.bold", 0xFF, FontStyle::BOLD),
    ("markup.italic", 0xFF, FontStyle::ITALIC),
];

fn palette_theme() -> SynTheme {
    let scopes = RULES
        .iter()
        .filter_map(|(selector, index, font_style)| {
            let scope = ScopeSelectors::from_str(selector).ok()?;
            let foreground = match index {
                0xFF => DEFAULT_FG,
                index => SynColor {
                    r: *index,
                    g: 0,
                    b: 0,
                    a: PALETTE_ALPHA,
                },
            };
            Some(ThemeItem {
                scope,
                style: StyleModifier {
                    foreground: Some(foreground),
                    background: None,
                    font_style: Some(*font_style),
                },
            })
        })
        .collect();
    SynTheme {
        name: Some("duet ANSI".to_string()),
        author: None,
        settings: ThemeSettings {
            foreground: Some(DEFAULT_FG),
            ..ThemeSettings::default()
        },
        scopes,
    }
}

/// Highlights the lines of one code block in order, keeping the parser state between
/// lines, so a block that streams in is highlighted once per line.
pub struct CodeHighlighter {
    lines: Option<HighlightLines<'static>>,
    plain: Style,
}

impl CodeHighlighter {
    /// `info` is the fence's info string (`rust`, `py title="x"`, `rust,ignore`).
    pub fn new(info: &str, theme: &Theme) -> Self {
        let language = info
            .split(|c: char| c.is_whitespace() || c == ',' || c == '{')
            .find(|word| !word.is_empty())
            .unwrap_or_default();
        let lines = if theme.color && !language.is_empty() {
            SYNTAXES
                .find_syntax_by_token(language)
                .map(|syntax| HighlightLines::new(syntax, &PALETTE_THEME))
        } else {
            None
        };
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
        match lines.highlight_line(&with_break, &SYNTAXES) {
            Ok(pieces) => pieces
                .into_iter()
                .filter_map(|(style, piece)| {
                    let piece = piece.trim_end_matches('\n');
                    (!piece.is_empty()).then(|| Span::styled(piece.to_string(), to_style(style)))
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

/// The ratatui style for a syntect style from [`PALETTE_THEME`].
fn to_style(style: syntect::highlighting::Style) -> Style {
    let fg = style.foreground;
    let mut out = Style::default();
    if fg.a == PALETTE_ALPHA {
        out = out.fg(ansi(fg.r));
    }
    if style.font_style.contains(FontStyle::BOLD) {
        out = out.add_modifier(Modifier::BOLD);
    }
    if style.font_style.contains(FontStyle::ITALIC) {
        out = out.add_modifier(Modifier::ITALIC);
    }
    out
}

fn ansi(index: u8) -> Color {
    match index {
        1 => Color::Red,
        2 => Color::Green,
        4 => Color::Blue,
        5 => Color::Magenta,
        6 => Color::Cyan,
        8 => Color::DarkGray,
        other => Color::Indexed(other),
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn every_rule_selector_parses() {
        assert_eq!(PALETTE_THEME.scopes.len(), RULES.len());
    }

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
