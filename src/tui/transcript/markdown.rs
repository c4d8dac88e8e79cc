//! Markdown source → styled logical lines.
//!
//! Owns: the rendering of one complete piece of markdown (headings, paragraphs, nested
//! bullet and numbered lists, block quotes, emphasis, inline code, links as their text,
//! fenced and indented code blocks with highlighting, rules). Does not own: streaming
//! (see `stream.rs`, which calls this on settled segments) or wrapping.
//! Invariant: every source line of prose yields at least its own logical line — a soft
//! line break stays a line break — so a line, once shown while streaming, keeps its
//! place when the lines after it arrive.

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::Span;

use super::highlight::CodeHighlighter;
use super::wrap::{LogicalLine, WrapMode};
use crate::tui::theme::Theme;

const BULLETS: [&str; 3] = ["•", "◦", "▪"];
const RULE_WIDTH: usize = 24;

/// The gutter of a code line, and of the continuation rows of a code line that wraps.
pub fn code_gutter(theme: &Theme) -> (Span<'static>, Span<'static>) {
    (Span::raw("  "), Span::styled("↪ ", theme.dim))
}

/// One code line with its gutter.
pub fn code_line(spans: Vec<Span<'static>>, theme: &Theme) -> LogicalLine {
    let (first, rest) = code_gutter(theme);
    LogicalLine {
        spans,
        first: vec![first],
        rest: vec![rest],
        mode: WrapMode::Code,
    }
}

/// Renders `source` (complete lines) to logical lines.
pub fn render(source: &str, theme: &Theme) -> Vec<LogicalLine> {
    let mut renderer = Renderer::new(theme);
    let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(source, options) {
        renderer.event(event);
    }
    renderer.finish_line();
    renderer.out
}

enum Container {
    Quote,
    List {
        next_number: Option<u64>,
    },
    Item {
        marker: String,
        width: usize,
        shown: bool,
    },
}

struct CodeBlock {
    highlighter: CodeHighlighter,
    source: String,
}

struct Renderer<'t> {
    theme: &'t Theme,
    out: Vec<LogicalLine>,
    containers: Vec<Container>,
    styles: Vec<Style>,
    /// The line being built: its first-row prefix, rest prefix and spans.
    line: Option<LogicalLine>,
    /// A blank line is due before the next block.
    gap: bool,
    code: Option<CodeBlock>,
}

impl<'t> Renderer<'t> {
    fn new(theme: &'t Theme) -> Self {
        Self {
            theme,
            out: Vec::new(),
            containers: Vec::new(),
            styles: vec![theme.text],
            line: None,
            gap: false,
            code: None,
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => self.text(&text),
            Event::Code(code) => self.inline_code(&code),
            Event::InlineMath(text) | Event::DisplayMath(text) => self.text(&text),
            Event::Html(html) | Event::InlineHtml(html) => self.styled_text(&html, self.theme.dim),
            Event::FootnoteReference(label) => self.text(&format!("[^{label}]")),
            Event::SoftBreak | Event::HardBreak => self.finish_line(),
            Event::Rule => {
                self.start_block();
                self.push_span(Span::styled("─".repeat(RULE_WIDTH), self.theme.dim));
                self.finish_line();
                self.gap = true;
            }
            Event::TaskListMarker(done) => self.text(if done { "[x] " } else { "[ ] " }),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph | Tag::HtmlBlock => self.start_block(),
            Tag::Heading { level, .. } => {
                self.start_block();
                // The hashes say the level, and mark a heading even without colour.
                let hashes = "#".repeat(level as usize);
                self.push_span(Span::styled(format!("{hashes} "), self.theme.heading));
                self.styles.push(self.theme.heading);
            }
            Tag::BlockQuote(_) => {
                self.start_block();
                self.containers.push(Container::Quote);
                self.styles
                    .push(self.theme.text.add_modifier(Modifier::ITALIC));
            }
            Tag::CodeBlock(kind) => {
                self.start_block();
                let info = match &kind {
                    CodeBlockKind::Fenced(info) => info.as_ref(),
                    CodeBlockKind::Indented => "",
                };
                self.code = Some(CodeBlock {
                    highlighter: CodeHighlighter::new(info, self.theme),
                    source: String::new(),
                });
            }
            Tag::List(start) => {
                if self.list_depth() == 0 {
                    self.start_block();
                } else {
                    self.finish_line();
                }
                self.containers.push(Container::List { next_number: start });
            }
            Tag::Item => {
                self.finish_line();
                let marker = self.next_marker();
                let width = super::wrap::width_of(&marker);
                self.containers.push(Container::Item {
                    marker,
                    width,
                    shown: false,
                });
            }
            Tag::Emphasis => self.push_modifier(Modifier::ITALIC),
            Tag::Strong => self.push_modifier(Modifier::BOLD),
            Tag::Strikethrough => self.push_modifier(Modifier::CROSSED_OUT),
            Tag::Link { .. } => {
                let style = self.current_style().patch(self.theme.accent);
                self.styles.push(style.add_modifier(Modifier::UNDERLINED));
            }
            Tag::Image { .. } => self.styles.push(self.theme.dim),
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock => self.end_block(),
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.end_block();
            }
            TagEnd::BlockQuote(_) => {
                self.finish_line();
                self.styles.pop();
                self.containers.pop();
                self.gap = true;
            }
            TagEnd::CodeBlock => self.end_code(),
            TagEnd::List(_) => {
                self.finish_line();
                self.containers.pop();
                if self.list_depth() == 0 {
                    self.gap = true;
                }
            }
            TagEnd::Item => {
                self.finish_line();
                self.containers.pop();
            }
            TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Link
            | TagEnd::Image => {
                self.styles.pop();
            }
            _ => {}
        }
    }

    fn list_depth(&self) -> usize {
        self.containers
            .iter()
            .filter(|c| matches!(c, Container::List { .. }))
            .count()
    }

    /// The marker of a new item of the innermost list.
    fn next_marker(&mut self) -> String {
        let depth = self.list_depth().saturating_sub(1);
        let Some(Container::List { next_number }) = self
            .containers
            .iter_mut()
            .rev()
            .find(|c| matches!(c, Container::List { .. }))
        else {
            return format!("{} ", BULLETS[0]);
        };
        match next_number {
            Some(number) => {
                let marker = format!("{number}. ");
                *number += 1;
                marker
            }
            None => format!("{} ", BULLETS[depth % BULLETS.len()]),
        }
    }

    fn current_style(&self) -> Style {
        self.styles.last().copied().unwrap_or(self.theme.text)
    }

    fn push_modifier(&mut self, modifier: Modifier) {
        let style = self.current_style().add_modifier(modifier);
        self.styles.push(style);
    }

    /// Ends the line in progress and puts a blank line first if one is due.
    fn start_block(&mut self) {
        self.finish_line();
        if self.gap && !self.out.is_empty() {
            let (_, rest) = self.prefixes(false);
            self.out.push(LogicalLine {
                first: rest.clone(),
                rest,
                ..LogicalLine::blank()
            });
        }
        self.gap = false;
    }

    fn end_block(&mut self) {
        self.finish_line();
        self.gap = true;
    }

    /// The prefixes of a new line inside the current containers. With `claim`, item
    /// markers not shown yet are shown now (on this line) and marked as shown.
    fn prefixes(&mut self, claim: bool) -> (Vec<Span<'static>>, Vec<Span<'static>>) {
        let mut first = Vec::new();
        let mut rest = Vec::new();
        for container in &mut self.containers {
            match container {
                Container::Quote => {
                    first.push(Span::styled("│ ", self.theme.dim));
                    rest.push(Span::styled("│ ", self.theme.dim));
                }
                Container::Item {
                    marker,
                    width,
                    shown,
                } => {
                    if claim && !*shown {
                        first.push(Span::styled(marker.clone(), self.theme.accent));
                        *shown = true;
                    } else {
                        first.push(Span::raw(" ".repeat(*width)));
                    }
                    rest.push(Span::raw(" ".repeat(*width)));
                }
                Container::List { .. } => {}
            }
        }
        (first, rest)
    }

    /// Adds `span` to the line in progress, starting a line (with its prefixes) if
    /// none is.
    fn push_span(&mut self, span: Span<'static>) {
        let mut line = match self.line.take() {
            Some(line) => line,
            None => {
                let (first, rest) = self.prefixes(true);
                LogicalLine {
                    first,
                    rest,
                    ..LogicalLine::blank()
                }
            }
        };
        line.spans.push(span);
        self.line = Some(line);
    }

    fn finish_line(&mut self) {
        if let Some(line) = self.line.take() {
            self.out.push(line);
        }
    }

    fn text(&mut self, text: &str) {
        self.styled_text(text, self.current_style());
    }

    fn styled_text(&mut self, text: &str, style: Style) {
        if let Some(code) = self.code.as_mut() {
            code.source.push_str(text);
            return;
        }
        for (index, piece) in text.split('\n').enumerate() {
            if index > 0 {
                self.finish_line();
            }
            if !piece.is_empty() {
                self.push_span(Span::styled(piece.to_string(), style));
            }
        }
    }

    fn inline_code(&mut self, code: &str) {
        let style = self.current_style().patch(self.theme.code);
        // Without colour the backticks are what sets code apart.
        let text = if self.theme.color {
            code.to_string()
        } else {
            format!("`{code}`")
        };
        self.push_span(Span::styled(text, style));
    }

    fn end_code(&mut self) {
        let Some(mut code) = self.code.take() else {
            return;
        };
        let (first, rest) = self.prefixes(true);
        let source = code.source.strip_suffix('\n').unwrap_or(&code.source);
        for text in source.split('\n') {
            let spans = code.highlighter.line(text);
            self.out
                .push(code_line(spans, self.theme).with_gutter(&first, &rest));
        }
        self.gap = true;
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use ratatui::style::Color;

    use super::*;

    /// Each logical line as `prefix|text`.
    fn plain(source: &str) -> Vec<String> {
        render(source, &Theme::new(false))
            .iter()
            .map(|line| {
                let prefix: String = line.first.iter().map(|s| s.content.as_ref()).collect();
                format!("{prefix}|{}", line.text())
            })
            .collect()
    }

    #[test]
    fn headings_paragraphs_and_emphasis() {
        let lines = render("# Title\n\nSome **bold** and *it*.\n", &Theme::new(true));
        assert_eq!(lines[0].text(), "# Title");
        assert_eq!(lines[0].spans[0].style, Theme::new(true).heading);
        assert_eq!(lines[1].text(), "", "a gap between blocks");
        let bold = &lines[2].spans[1];
        assert_eq!(bold.content, "bold");
        assert!(bold.style.add_modifier.contains(Modifier::BOLD));
        assert!(
            lines[2].spans[3]
                .style
                .add_modifier
                .contains(Modifier::ITALIC)
        );
    }

    #[test]
    fn nested_lists_indent_under_their_markers() {
        let source = "- one\n  - inner\n    1. deep\n    2. deeper\n- two\n\n3. three\n4. four\n";
        assert_eq!(
            plain(source),
            [
                "• |one",
                "  ◦ |inner",
                "    1. |deep",
                "    2. |deeper",
                "• |two",
                "|",
                "3. |three",
                "4. |four",
            ]
        );
        let lines = render("- a long item\n", &Theme::new(false));
        let rest: String = lines[0].rest.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(rest, "  ", "wrapped rows align under the item text");
    }

    #[test]
    fn soft_breaks_stay_line_breaks() {
        assert_eq!(
            plain("first line\nsecond line\n"),
            ["|first line", "|second line"]
        );
    }

    #[test]
    fn code_fences_keep_their_lines_with_a_gutter() {
        let source = "Run:\n\n```sh\ncargo test\n  --all\n```\nDone.\n";
        assert_eq!(
            plain(source),
            ["|Run:", "|", "  |cargo test", "  |  --all", "|", "|Done."]
        );
        let lines = render(source, &Theme::new(false));
        assert_eq!(lines[2].mode, WrapMode::Code);
    }

    #[test]
    fn unknown_languages_are_plain_code() {
        let theme = Theme::new(true);
        let lines = render("```klingon\nqapla' batlh\n```\n", &theme);
        assert_eq!(lines.len(), 1);
        assert_eq!(
            lines[0].spans,
            vec![Span::styled("qapla' batlh", theme.code)]
        );
    }

    #[test]
    fn known_languages_are_highlighted_only_with_colour() {
        let colour = render("```rust\nfn main() {}\n```\n", &Theme::new(true));
        let keyword = &colour[0].spans[0];
        assert_eq!(keyword.content, "fn");
        assert_eq!(keyword.style.fg, Some(Color::Magenta));
        let mono = render("```rust\nfn main() {}\n```\n", &Theme::new(false));
        assert_eq!(mono[0].spans.len(), 1);
        assert_eq!(mono[0].spans[0].style.fg, None);
    }

    #[test]
    fn quotes_links_and_inline_code() {
        assert_eq!(
            plain("> quoted\n> more\n\nsee [the docs](https://x.y) and `cfg`\n"),
            ["│ |quoted", "│ |more", "|", "|see the docs and `cfg`"]
        );
        let colour = render("`cfg`\n", &Theme::new(true));
        assert_eq!(
            colour[0].text(),
            "cfg",
            "no backticks when colour shows code"
        );
    }

    #[test]
    fn code_inside_a_list_item_is_indented_with_it() {
        assert_eq!(
            plain("1. build:\n\n   ```\n   make\n   ```\n"),
            ["1. |build:", "   |", "     |make"]
        );
    }
}
