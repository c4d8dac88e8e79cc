//! The help overlay: every key of every context and the slash commands (built-in, then
//! the prompt files found), generated from the [`Keymap`] and [`Catalog`] in use so it
//! always tells the truth about the user's keys and commands.
//!
//! Owns: the overlay's layout and its scroll position. Does not own: when it opens or
//! closes (the app toggles it on [`Action::ToggleHelp`]).
//! Invariant: nothing is drawn outside the given area, and the scroll position never
//! passes the last line.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Widget};

use super::action::{Action, Context};
use super::composer::wrap::{text_width, wrap_words};
use super::keymap::Keymap;
use super::slash::COMMANDS;
use super::theme::Theme;
use crate::custom_commands::Catalog;

/// Key columns wider than this put the description on the next line.
const MAX_KEY_COLUMN: usize = 14;
/// Below this many cells for descriptions, they go under their keys.
const MIN_DESCRIPTION_WIDTH: usize = 16;
const INDENT: usize = 2;

/// The overlay's scroll state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HelpOverlay {
    scroll: usize,
    /// Rows shown in the last frame: a page.
    page: usize,
}

/// One row of the help: keys and what they do.
struct Entry {
    keys: String,
    description: String,
}

impl HelpOverlay {
    /// Scrolls on the scrolling actions of any context; `false` for other actions.
    pub fn handle(&mut self, action: Action) -> bool {
        let page = self.page.max(1);
        match action {
            Action::ScrollUp | Action::HistoryPrev | Action::PrevHunk => {
                self.scroll = self.scroll.saturating_sub(1);
            }
            Action::ScrollDown | Action::HistoryNext | Action::NextHunk => self.scroll += 1,
            Action::PageUp => self.scroll = self.scroll.saturating_sub(page),
            Action::PageDown => self.scroll += page,
            Action::ScrollTop => self.scroll = 0,
            // Clamped to the last page when drawn.
            Action::ScrollBottom => self.scroll = usize::MAX,
            _ => return false,
        }
        true
    }

    pub fn render(
        &mut self,
        keymap: &Keymap,
        custom: &Catalog,
        theme: &Theme,
        area: Rect,
        buf: &mut Buffer,
    ) {
        Clear.render(area, buf);
        let block = Block::bordered()
            .border_style(theme.dim)
            .title(Span::styled(" Keys and commands ", theme.heading))
            .title_bottom(Span::styled(footer(keymap), theme.dim));
        let inner = block.inner(area);
        block.render(area, buf);
        if inner.width == 0 || inner.height == 0 {
            return;
        }
        let lines = layout(&sections(keymap, custom), usize::from(inner.width), theme);
        self.page = usize::from(inner.height);
        self.scroll = self.scroll.min(lines.len().saturating_sub(self.page));
        for (y, line) in (inner.y..).zip(lines.iter().skip(self.scroll).take(self.page)) {
            buf.set_line(inner.x, y, line, inner.width);
        }
        if lines.len() > self.page {
            let position = format!(
                " {}–{} of {} ",
                self.scroll + 1,
                (self.scroll + self.page).min(lines.len()),
                lines.len()
            );
            let width = text_width(&position) as u16;
            if width + 2 <= area.width {
                let x = area.right() - width - 1;
                buf.set_stringn(x, area.y, position, usize::from(width), theme.dim);
            }
        }
    }
}

/// The help from the top, for callers that do not keep a [`HelpOverlay`].
pub fn render_help(keymap: &Keymap, custom: &Catalog, theme: &Theme, area: Rect, buf: &mut Buffer) {
    HelpOverlay::default().render(keymap, custom, theme, area, buf);
}

/// How to scroll and close, in the user's own keys.
fn footer(keymap: &Keymap) -> String {
    let key = |action: Action| keymap.key_for(Context::Global, action);
    let scroll = match (key(Action::PageUp), key(Action::PageDown)) {
        (Some(up), Some(down)) => format!("↑↓ {up} {down} scroll"),
        _ => "↑↓ scroll".to_string(),
    };
    match key(Action::ToggleHelp) {
        Some(close) => format!(" {scroll} · {close} close "),
        None => format!(" {scroll} "),
    }
}

fn heading(context: Context) -> &'static str {
    match context {
        Context::Global => "Everywhere",
        Context::Composer => "Writing a message",
        Context::Completion => "Choosing a file after @ or a command after /",
        Context::Transcript => "Reading the conversation",
        Context::DiffReview => "Reviewing an edit",
        Context::Approval => "Approving a command",
        Context::CommandInput => "Typing into a running command",
    }
}

fn sections(keymap: &Keymap, custom: &Catalog) -> Vec<(&'static str, Vec<Entry>)> {
    let mut sections: Vec<_> = Context::ALL
        .into_iter()
        .map(|context| (heading(context), key_entries(keymap, context)))
        .filter(|(_, entries)| !entries.is_empty())
        .collect();
    let mut commands: Vec<Entry> = COMMANDS
        .iter()
        .map(|info| Entry {
            keys: format!("/{} {}", info.name, info.args)
                .trim_end()
                .to_string(),
            description: info.about.to_string(),
        })
        .collect();
    commands.push(Entry {
        keys: "//text".into(),
        description: "Send a message that starts with a slash".into(),
    });
    sections.push(("Slash commands", commands));
    if !custom.is_empty() {
        sections.push(("Custom commands", custom_entries(custom)));
    }
    sections
}

/// One entry per prompt file: how to call it, what it does and whose file it is.
fn custom_entries(custom: &Catalog) -> Vec<Entry> {
    custom
        .commands()
        .iter()
        .map(|command| {
            let hint = command.argument_hint.as_deref().unwrap_or_default();
            let origin = format!("({}: {})", command.origin, command.file);
            Entry {
                keys: format!("/{} {hint}", command.name).trim_end().to_string(),
                description: format!("{} {origin}", command.description)
                    .trim_start()
                    .to_string(),
            }
        })
        .collect()
}

/// One entry per action, its keys in the order the keymap lists them.
fn key_entries(keymap: &Keymap, context: Context) -> Vec<Entry> {
    let mut grouped: Vec<(Action, Vec<String>)> = Vec::new();
    for (label, action) in keymap.bindings(context) {
        match grouped.iter_mut().find(|(known, _)| *known == action) {
            Some((_, labels)) => labels.push(label),
            None => grouped.push((action, vec![label])),
        }
    }
    grouped
        .into_iter()
        .map(|(action, labels)| Entry {
            keys: labels.join(", "),
            description: keymap.description(context, action).to_string(),
        })
        .collect()
}

/// The help as lines `width` cells wide: headings, then keys in a column with their
/// descriptions wrapped beside them (or under them when the column is too narrow).
fn layout(sections: &[(&str, Vec<Entry>)], width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let key_column = sections
        .iter()
        .flat_map(|(_, entries)| entries)
        .map(|entry| text_width(&entry.keys))
        .filter(|&keys| keys <= MAX_KEY_COLUMN)
        .max()
        .unwrap_or(0)
        + 2;
    let beside = width >= INDENT + key_column + MIN_DESCRIPTION_WIDTH;
    let mut lines = Vec::new();
    for (index, (title, entries)) in sections.iter().enumerate() {
        if index > 0 {
            lines.push(Line::default());
        }
        lines.push(Line::styled(title.to_string(), theme.heading));
        for entry in entries {
            entry_lines(
                entry,
                width,
                beside.then_some(key_column),
                theme,
                &mut lines,
            );
        }
    }
    lines
}

fn entry_lines(
    entry: &Entry,
    width: usize,
    key_column: Option<usize>,
    theme: &Theme,
    lines: &mut Vec<Line<'static>>,
) {
    let keys = Span::styled(entry.keys.clone(), theme.accent);
    let fits_beside = key_column.filter(|&column| text_width(&entry.keys) + 2 <= column);
    let description_indent = match fits_beside {
        Some(column) => INDENT + column,
        None => {
            lines.push(Line::from(vec![
                Span::raw(" ".repeat(INDENT)),
                keys.clone(),
            ]));
            INDENT * 2
        }
    };
    let rows = wrap_words(&entry.description, width.saturating_sub(description_indent));
    for (index, row) in rows.into_iter().enumerate() {
        let description = Span::styled(row.to_string(), theme.text);
        let line = match (index, fits_beside) {
            (0, Some(column)) => {
                let padding = column - text_width(&entry.keys);
                Line::from(vec![
                    Span::raw(" ".repeat(INDENT)),
                    keys.clone(),
                    Span::raw(" ".repeat(padding)),
                    description,
                ])
            }
            _ => Line::from(vec![Span::raw(" ".repeat(description_indent)), description]),
        };
        lines.push(line);
    }
}

/// The same help as markdown tables, one per context and one for slash commands: the
/// key reference in README.md (without anyone's custom commands).
pub fn markdown(keymap: &Keymap) -> String {
    let cell = |text: &str| text.replace('|', "\\|");
    sections(keymap, &Catalog::default())
        .iter()
        .map(|(heading, entries)| {
            let rows: String = entries
                .iter()
                .map(|entry| format!("| {} | {} |\n", cell(&entry.keys), cell(&entry.description)))
                .collect();
            format!("**{heading}**\n\n| Keys | Does |\n| --- | --- |\n{rows}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use super::*;

    fn draw(overlay: &mut HelpOverlay, keymap: &Keymap, width: u16) -> Terminal<TestBackend> {
        let mut terminal = Terminal::new(TestBackend::new(width, 24)).unwrap();
        terminal
            .draw(|frame| {
                overlay.render(
                    keymap,
                    &Catalog::default(),
                    &Theme::new(true),
                    frame.area(),
                    frame.buffer_mut(),
                )
            })
            .unwrap();
        terminal
    }

    fn all_text(keymap: &Keymap, width: usize) -> String {
        layout(
            &sections(keymap, &Catalog::default()),
            width,
            &Theme::new(false),
        )
        .iter()
        .map(|line| line.to_string())
        .collect::<Vec<_>>()
        .join("\n")
    }

    #[test]
    fn snapshot_at_80_by_24() {
        let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
        terminal
            .draw(|frame| {
                render_help(
                    &Keymap::defaults(),
                    &Catalog::default(),
                    &Theme::new(true),
                    frame.area(),
                    frame.buffer_mut(),
                )
            })
            .unwrap();
        insta::assert_snapshot!(terminal.backend());
    }

    #[test]
    fn snapshot_scrolled_to_the_end_at_40_columns() {
        let mut overlay = HelpOverlay::default();
        overlay.handle(Action::ScrollBottom);
        let terminal = draw(&mut overlay, &Keymap::defaults(), 40);
        insta::assert_snapshot!(terminal.backend());
    }

    fn custom_catalog() -> Catalog {
        use crate::custom_commands::{CustomCommand, Origin};
        Catalog::from_commands(vec![
            CustomCommand::new(
                "review",
                "---\ndescription: Review a file carefully\nargument-hint: [file]\n---\nReview $ARGUMENTS",
                Origin::Project,
                ".duet/commands/review.md",
            ),
            CustomCommand::new(
                "frontend:test",
                "Run the UI tests and fix what fails",
                Origin::Project,
                ".claude/commands/frontend/test.md",
            ),
            CustomCommand::new(
                "fix",
                "---\nargument-hint: ISSUE=<n>\n---\nFix issue $ISSUE",
                Origin::User,
                "~/.codex/prompts/fix.md",
            ),
        ])
    }

    #[test]
    fn snapshot_of_custom_commands_at_the_end() {
        let mut overlay = HelpOverlay::default();
        overlay.handle(Action::ScrollBottom);
        let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
        terminal
            .draw(|frame| {
                overlay.render(
                    &Keymap::defaults(),
                    &custom_catalog(),
                    &Theme::new(true),
                    frame.area(),
                    frame.buffer_mut(),
                )
            })
            .unwrap();
        insta::assert_snapshot!(terminal.backend());
    }

    #[test]
    fn custom_commands_have_their_own_section_and_stay_out_of_the_readme() {
        let keymap = Keymap::defaults();
        let text = layout(
            &sections(&keymap, &custom_catalog()),
            200,
            &Theme::new(false),
        )
        .iter()
        .map(|line| line.to_string())
        .collect::<Vec<_>>()
        .join("\n");
        let section = text.find("Custom commands").unwrap();
        assert!(section > text.find("Slash commands").unwrap());
        assert!(
            text.contains(
                "/review [file]  Review a file carefully (project: .duet/commands/review.md)"
            ),
            "{text}"
        );
        assert!(text.contains("(user: ~/.codex/prompts/fix.md)"), "{text}");
        assert!(!all_text(&keymap, 200).contains("Custom commands"));
        assert!(!markdown(&keymap).contains("review"));
    }

    #[test]
    fn every_binding_and_command_is_listed() {
        let keymap = Keymap::defaults();
        let text = all_text(&keymap, 200);
        for context in Context::ALL {
            for (label, action) in keymap.bindings(context) {
                assert!(text.contains(&label), "{label} missing");
                assert!(
                    text.contains(keymap.description(context, action)),
                    "{} missing",
                    action.name()
                );
            }
        }
        for info in COMMANDS {
            assert!(text.contains(&format!("/{}", info.name)));
        }
    }

    #[test]
    fn the_help_follows_the_users_keys() {
        let (keymap, errors) = Keymap::with_overrides(
            std::path::Path::new("k.toml"),
            "[global]\nkeys = [{ on = \"f2\", run = \"toggle_help\", desc = \"Open this\" }]\n",
        );
        assert!(errors.is_empty(), "{errors:?}");
        let text = all_text(&keymap, 200);
        assert!(text.contains("F1, F2"), "{text}");
        assert!(text.contains("Open this"));
        assert_eq!(footer(&keymap), " ↑↓ PgUp PgDn scroll · F1 close ");
    }

    #[test]
    fn scrolling_stops_at_both_ends() {
        let keymap = Keymap::defaults();
        let mut overlay = HelpOverlay::default();
        assert!(overlay.handle(Action::ScrollUp));
        draw(&mut overlay, &keymap, 80);
        assert_eq!(overlay.scroll, 0);
        overlay.handle(Action::PageDown);
        draw(&mut overlay, &keymap, 80);
        assert_eq!(overlay.scroll, 22, "a page is the inner height");
        for _ in 0..50 {
            overlay.handle(Action::PageDown);
        }
        draw(&mut overlay, &keymap, 80);
        let total = layout(
            &sections(&keymap, &Catalog::default()),
            78,
            &Theme::new(true),
        )
        .len();
        assert_eq!(overlay.scroll, total - 22);
        assert!(!overlay.handle(Action::Submit));
    }

    #[test]
    fn the_readme_key_reference_is_generated_from_the_keymap() {
        let readme = include_str!("../../README.md");
        let generated = markdown(&Keymap::defaults());
        let block =
            format!("<!-- keymap: generated from keymap.toml -->\n{generated}<!-- keymap end -->");
        assert!(
            readme.contains(&block),
            "README.md's key reference differs from keymap.toml; it should read:\n{block}"
        );
    }

    #[test]
    fn headings_are_styled() {
        let terminal = draw(&mut HelpOverlay::default(), &Keymap::defaults(), 80);
        let buffer = terminal.backend().buffer();
        assert_eq!(buffer[(1, 1)].symbol(), "E", "Everywhere");
        assert_eq!(buffer[(1, 1)].style().fg, Theme::new(true).heading.fg);
    }
}
