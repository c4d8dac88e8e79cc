//! The few styles every view draws with. With colour off (`NO_COLOR`), only modifiers
//! (bold, dim, reversed) remain, so the UI stays readable on any terminal.

use ratatui::style::{Color, Modifier, Style};

#[derive(Clone, Debug, PartialEq)]
pub struct Theme {
    /// Whether colours are used at all (also decides syntax highlighting).
    pub color: bool,
    pub text: Style,
    pub dim: Style,
    pub accent: Style,
    pub user: Style,
    pub error: Style,
    pub warning: Style,
    pub success: Style,
    pub added: Style,
    pub removed: Style,
    pub hunk_header: Style,
    pub selected: Style,
    pub code: Style,
    pub heading: Style,
    /// A character an approval view writes out because it could not be seen
    /// (`⟨U+202E⟩`): unlike any text around it.
    pub hidden: Style,
}

impl Theme {
    pub fn new(color: bool) -> Self {
        if !color {
            return Self::monochrome();
        }
        Self {
            color,
            text: Style::default(),
            dim: Style::default().add_modifier(Modifier::DIM),
            accent: Style::default().fg(Color::Cyan),
            user: Style::default()
                .fg(Color::Blue)
                .add_modifier(Modifier::BOLD),
            error: Style::default().fg(Color::Red),
            warning: Style::default().fg(Color::Yellow),
            success: Style::default().fg(Color::Green),
            added: Style::default().fg(Color::Green),
            removed: Style::default().fg(Color::Red),
            hunk_header: Style::default().fg(Color::Cyan).add_modifier(Modifier::DIM),
            selected: Style::default().add_modifier(Modifier::REVERSED),
            code: Style::default().fg(Color::Yellow),
            heading: Style::default()
                .fg(Color::Magenta)
                .add_modifier(Modifier::BOLD),
            hidden: Style::default()
                .fg(Color::Black)
                .bg(Color::Yellow)
                .add_modifier(Modifier::BOLD),
        }
    }

    fn monochrome() -> Self {
        let plain = Style::default();
        Self {
            color: false,
            text: plain,
            dim: plain.add_modifier(Modifier::DIM),
            accent: plain.add_modifier(Modifier::BOLD),
            user: plain.add_modifier(Modifier::BOLD),
            error: plain.add_modifier(Modifier::BOLD),
            warning: plain.add_modifier(Modifier::BOLD),
            success: plain,
            added: plain,
            removed: plain,
            hunk_header: plain.add_modifier(Modifier::DIM),
            selected: plain.add_modifier(Modifier::REVERSED),
            code: plain,
            heading: plain.add_modifier(Modifier::BOLD),
            hidden: plain.add_modifier(Modifier::REVERSED | Modifier::BOLD),
        }
    }
}
