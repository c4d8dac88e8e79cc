//! The approval of one shell command: the command exactly as it would run, where it
//! runs, which rule asks, and what the policy found (its class, each risky part, the
//! protected paths it touches). A call of an MCP server's tool is shown the same way:
//! the tool and its arguments exactly as they would be sent, and the server.
//!
//! Owns: wrapping and scrolling the command text and findings, and drawing them.
//! Does not own: the decision (the queue sends it) or the panel frame.
//! Invariant: every character of the command can be brought on screen — long commands
//! wrap, tall ones scroll and say how much is below, and characters that cannot be
//! seen (controls, bidi controls, zero-width and format characters, unusual spaces)
//! are written out as `⟨U+202E⟩` in a style of their own — so nobody approves text they
//! could not see. When the command or its directory holds such characters, or letters
//! that only look like ASCII (a Cyrillic `а`, a fullwidth `ｓ`), a warning above the
//! command says so.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::policy::{CommandClass, Protection, Reason};
use crate::terminal_text::Findings;
use crate::tui::theme::Theme;

use super::text::{wrap_revealed, wrap_text};

/// What the policy found out about a command.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Risk {
    pub class: CommandClass,
    pub reasons: Vec<Reason>,
    pub protected: Vec<Protection>,
}

/// What runs the command: the shell, or an MCP server.
#[derive(Clone, Debug, PartialEq)]
enum Subject {
    Shell { cwd: String },
    Tool { server: String, tool: String },
}

pub(super) struct CommandReview {
    command: String,
    subject: Subject,
    risk: Risk,
    scroll: usize,
    /// The rows for the width they were wrapped at.
    cache: Option<(u16, Vec<Line<'static>>)>,
}

impl CommandReview {
    pub(super) fn new(command: &str, cwd: &str, risk: Risk) -> Self {
        Self {
            command: command.to_string(),
            subject: Subject::Shell {
                cwd: cwd.to_string(),
            },
            risk,
            scroll: 0,
            cache: None,
        }
    }

    /// A call of `tool` on MCP server `server`; duet cannot classify what it does.
    pub(super) fn external_tool(server: &str, tool: &str, arguments: &str) -> Self {
        Self {
            command: format!("{tool} {arguments}"),
            subject: Subject::Tool {
                server: server.to_string(),
                tool: tool.to_string(),
            },
            risk: Risk {
                class: CommandClass::Unknown,
                reasons: Vec::new(),
                protected: Vec::new(),
            },
            scroll: 0,
            cache: None,
        }
    }

    /// What "allow for session" remembers: the exact command, or the whole tool.
    pub(super) fn allow_key(&self) -> String {
        match &self.subject {
            Subject::Shell { .. } => self.command.clone(),
            Subject::Tool { server, tool } => external_allow_key(server, tool),
        }
    }

    pub(super) fn is_external(&self) -> bool {
        matches!(self.subject, Subject::Tool { .. })
    }

    pub(super) fn class(&self) -> CommandClass {
        self.risk.class
    }

    pub(super) fn scroll_by(&mut self, rows: isize) {
        // Clamped against the real height when drawn.
        self.scroll = self.scroll.saturating_add_signed(rows);
    }

    pub(super) fn render(&mut self, area: Rect, buf: &mut Buffer, why: &str, theme: &Theme) {
        let height = usize::from(area.height);
        let total = self.rows(area.width, why, theme).len();
        self.scroll = self.scroll.min(total.saturating_sub(height));
        let scroll = self.scroll;
        let hidden_below = total.saturating_sub(scroll + height);
        let rows = self.rows(area.width, why, theme);
        for (offset, line) in rows.iter().skip(scroll).take(height).enumerate() {
            let y = area
                .y
                .saturating_add(u16::try_from(offset).unwrap_or(u16::MAX));
            let last = offset + 1 == height;
            if last && hidden_below > 0 {
                let more = format!("… {} more lines below (scroll to read)", hidden_below + 1);
                buf.set_line(area.x, y, &Line::styled(more, theme.dim), area.width);
            } else {
                buf.set_line(area.x, y, line, area.width);
            }
        }
    }

    fn rows(&mut self, width: u16, why: &str, theme: &Theme) -> &[Line<'static>] {
        if self
            .cache
            .as_ref()
            .is_some_and(|(cached, _)| *cached != width)
        {
            self.cache = None;
        }
        let (_, rows) = self.cache.get_or_insert_with(|| {
            let rows = layout(&self.command, &self.subject, &self.risk, why, width, theme);
            (width, rows)
        });
        rows
    }
}

/// The key under which "allow for session" remembers every call of an MCP tool.
pub(super) fn external_allow_key(server: &str, tool: &str) -> String {
    format!("mcp {server}__{tool}")
}

/// `why`, a warning per kind of hidden or look-alike character, a bullet per risky
/// part and per protected path, a blank row, the command after `$ ` (a tool call after
/// `→ `; continuations indented to match), a blank row, and the directory (or the
/// server).
fn layout(
    command: &str,
    subject: &Subject,
    risk: &Risk,
    why: &str,
    width: u16,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let width = usize::from(width).max(3);
    let mut rows: Vec<Line<'static>> = wrap_text(why, width)
        .into_iter()
        .map(|row| Line::styled(row, theme.dim))
        .collect();
    let (what, place) = match subject {
        Subject::Shell { cwd } => ("the command", ("the directory", cwd)),
        Subject::Tool { server, .. } => ("the call", ("the server name", server)),
    };
    let warnings = Findings::of(command)
        .warnings(what)
        .into_iter()
        .chain(Findings::of(place.1).warnings(place.0));
    for warning in warnings {
        rows.extend(
            wrap_text(&warning, width - 2)
                .into_iter()
                .enumerate()
                .map(|(at, row)| {
                    let lead = if at == 0 { "⚠ " } else { "  " };
                    Line::from(vec![
                        Span::styled(lead, theme.warning),
                        Span::styled(row, theme.warning),
                    ])
                }),
        );
    }
    for reason in &risk.reasons {
        let text = format!("{}: {reason}", reason.class);
        rows.extend(bullet(
            &text,
            class_style(reason.class, theme),
            width,
            theme,
        ));
    }
    for protection in &risk.protected {
        rows.extend(bullet(&protection.to_string(), theme.warning, width, theme));
    }
    rows.push(Line::default());
    let first_lead = match subject {
        Subject::Shell { .. } => "$ ",
        Subject::Tool { .. } => "→ ",
    };
    let command_rows = wrap_revealed(command, width - 2, theme.code, theme.hidden);
    rows.extend(command_rows.into_iter().enumerate().map(|(at, row)| {
        let lead = if at == 0 { first_lead } else { "  " };
        let mut spans = vec![Span::styled(lead, theme.dim)];
        spans.extend(row);
        Line::from(spans)
    }));
    rows.push(Line::default());
    let place = match subject {
        Subject::Shell { cwd } => format!("in {cwd}"),
        Subject::Tool { server, .. } => {
            format!("on MCP server `{server}` (duet cannot see what the tool does)")
        }
    };
    rows.extend(
        wrap_revealed(&place, width, theme.dim, theme.hidden)
            .into_iter()
            .map(Line::from),
    );
    rows
}

/// `• text`, wrapped with continuations under the text; the marker in `marker`'s style.
fn bullet(text: &str, marker: Style, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    wrap_text(text, width - 2)
        .into_iter()
        .enumerate()
        .map(|(at, row)| {
            let lead = if at == 0 { "• " } else { "  " };
            Line::from(vec![
                Span::styled(lead, marker),
                Span::styled(row, theme.text),
            ])
        })
        .collect()
}

/// How loudly a class is shown.
pub(super) fn class_style(class: CommandClass, theme: &Theme) -> Style {
    match class {
        CommandClass::Destructive | CommandClass::Unknown => theme.error,
        CommandClass::Network => theme.warning,
        CommandClass::WritesWorkspace => theme.accent,
        CommandClass::ReadOnly => theme.dim,
    }
}
