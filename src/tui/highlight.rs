//! Syntax highlighting for every view: one syntax set, one palette.
//!
//! Owns: the bundled syntax set (loaded once, on first use), the highlighting theme
//! built from the terminal's 16 ANSI colours, finding a syntax by a code fence's
//! language word or by a file's name and first line, and [`SyntaxHighlighter`], which
//! styles the lines of one text in order, keeping syntect's parse state between them.
//! Does not own: what a view does with the styled pieces (the transcript's code
//! blocks, the review's two sides of an edit), plain fallbacks, or colour off.
//! Invariant: a style from here sets at most a palette foreground and bold or italic,
//! never a background and never an RGB colour.
//!
//! Why ANSI colours rather than a bundled RGB theme: the terminal maps the 16 palette
//! entries to shades that suit its own background, so the same choice reads on a dark
//! and on a light terminal.

use std::path::Path;
use std::str::FromStr;
use std::sync::LazyLock;

use ratatui::style::{Color, Modifier, Style};
use syntect::easy::HighlightLines;
use syntect::highlighting::{
    Color as SynColor, FontStyle, ScopeSelectors, StyleModifier, Theme as SynTheme, ThemeItem,
    ThemeSettings,
};
use syntect::parsing::{SyntaxReference, SyntaxSet};

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

/// Styles the lines of one text in order, keeping the parse state between them, so
/// each line is parsed once.
pub(crate) struct SyntaxHighlighter {
    lines: HighlightLines<'static>,
}

impl SyntaxHighlighter {
    /// For code in `language` as a code fence names it (`rust`, `rs`, `Python`);
    /// `None` for an empty or unknown word.
    pub(crate) fn for_language(language: &str) -> Option<Self> {
        if language.is_empty() {
            return None;
        }
        SYNTAXES.find_syntax_by_token(language).map(Self::new)
    }

    /// For the file at `path` whose text is `source`: by extension, then by full file
    /// name (`Makefile`), then by the first line (`#!/bin/sh`); `None` for plain text.
    pub(crate) fn for_file(path: &str, source: &str) -> Option<Self> {
        syntax_for_file(path, source).map(Self::new)
    }

    fn new(syntax: &'static SyntaxReference) -> Self {
        Self {
            lines: HighlightLines::new(syntax, &PALETTE_THEME),
        }
    }

    /// The next line, fed with its terminator (syntect's newline syntaxes expect one),
    /// as styled pieces of it in order, the terminator in the last. An error leaves the
    /// parse state unusable: the caller stops highlighting this text.
    pub(crate) fn line<'l>(
        &mut self,
        line: &'l str,
    ) -> Result<Vec<(Style, &'l str)>, syntect::Error> {
        let regions = self.lines.highlight_line(line, &SYNTAXES)?;
        Ok(regions
            .into_iter()
            .map(|(style, piece)| (to_style(style), piece))
            .collect())
    }
}

/// The syntax for the file at `path` (see [`SyntaxHighlighter::for_file`]).
fn syntax_for_file(path: &str, source: &str) -> Option<&'static SyntaxReference> {
    let path = Path::new(path);
    let by_name = |name: Option<&std::ffi::OsStr>| {
        name.and_then(|name| name.to_str())
            .and_then(|name| SYNTAXES.find_syntax_by_extension(name))
    };
    let first_line = source.lines().next().unwrap_or_default();
    by_name(path.extension())
        .or_else(|| by_name(path.file_name()))
        .or_else(|| SYNTAXES.find_syntax_by_first_line(first_line))
        .filter(|syntax| syntax.name != "Plain Text")
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

    /// The pieces of `line` (fed with a newline) as (foreground, text), terminator left
    /// out.
    fn pieces(highlighter: &mut SyntaxHighlighter, line: &str) -> Vec<(Option<Color>, String)> {
        let line = format!("{line}\n");
        highlighter
            .line(&line)
            .unwrap()
            .into_iter()
            .map(|(style, piece)| (style.fg, piece.trim_end_matches('\n').to_string()))
            .filter(|(_, piece)| !piece.is_empty())
            .collect()
    }

    #[test]
    fn languages_and_files_find_the_same_palette() {
        let mut by_language = SyntaxHighlighter::for_language("rust").unwrap();
        let mut by_file = SyntaxHighlighter::for_file("src/lib.rs", "fn main() {}\n").unwrap();
        let expected = pieces(&mut by_language, "fn main() {}");
        assert_eq!(expected[0], (Some(Color::Magenta), "fn".to_string()));
        assert_eq!(pieces(&mut by_file, "fn main() {}"), expected);
    }

    #[test]
    fn unknown_languages_and_plain_files_have_no_highlighter() {
        assert!(SyntaxHighlighter::for_language("").is_none());
        assert!(SyntaxHighlighter::for_language("no-such-language").is_none());
        assert!(SyntaxHighlighter::for_file("notes.unknown-ext", "words\n").is_none());
        assert!(SyntaxHighlighter::for_file("notes.txt", "words\n").is_none());
    }

    #[test]
    fn a_file_is_found_by_name_then_by_its_first_line() {
        assert!(SyntaxHighlighter::for_file("Makefile", "all:\n").is_some());
        assert!(SyntaxHighlighter::for_file("script", "#!/bin/sh\necho hi\n").is_some());
        assert!(SyntaxHighlighter::for_file("script", "just words\n").is_none());
    }

    #[test]
    fn only_palette_foregrounds_bold_and_italic_are_set() {
        let mut code = SyntaxHighlighter::for_language("python").unwrap();
        let line = "def f(x): return \"s\" + 1  # note\n";
        for (style, piece) in code.line(line).unwrap() {
            assert_eq!(style.bg, None, "{piece:?}");
            assert!(
                !matches!(style.fg, Some(Color::Rgb(..))),
                "{piece:?}: {style:?}"
            );
            let others = style.add_modifier - (Modifier::BOLD | Modifier::ITALIC);
            assert!(others.is_empty(), "{piece:?}: {style:?}");
        }
    }
}
