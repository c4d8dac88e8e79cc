//! The status bar: one line saying what mode duet is in, what it is doing, and what
//! the session has cost so far.
//!
//! Owns: how [`StatusInfo`] is laid out and styled. Does not own: gathering the
//! numbers (the app folds [`crate::agent::Event`]s and git state into a
//! [`StatusInfo`]).
//! Invariant: the bar never draws outside its area; when space runs short the least
//! important parts shrink or go first, and the mode badge goes last.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};

use super::composer::wrap::text_width;
use super::theme::Theme;
use crate::policy::ApprovalMode;
use crate::shell::sandbox::Protections;

/// Everything the status bar shows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StatusInfo {
    pub model: String,
    pub mode: ApprovalMode,
    /// Session totals.
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// In US dollars, when the price of the model is known.
    pub cost: Option<f64>,
    /// Share of the context window in use, 0 to 1.
    pub context_used: Option<f32>,
    pub branch: Option<String>,
    /// Files changed in the working tree.
    pub dirty: usize,
    pub activity: Activity,
    /// What confines the shell; `None` until the session has said.
    pub sandbox: Option<Protections>,
    /// The configured MCP servers; `None` when there are none.
    pub mcp: Option<McpSummary>,
}

/// How many MCP servers are ready, and whether any is in trouble.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct McpSummary {
    pub ready: usize,
    pub total: usize,
    /// Some server is restarting or has failed.
    pub trouble: bool,
}

/// What the agent is doing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Activity {
    /// Waiting for the user.
    #[default]
    Idle,
    /// The model is writing.
    Streaming,
    /// This many tools are running.
    RunningTools(usize),
    /// This many approvals wait for the user.
    WaitingForApproval(usize),
    /// An interrupt was sent and is being honoured.
    Interrupting,
    /// The user's keys go to a running command.
    TypingIntoCommand,
}

/// How much a part of the bar matters: the lowest goes first when space runs out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Priority {
    Branch,
    Idle,
    Tokens,
    Cost,
    Sandbox,
    Mcp,
    Model,
    Context,
    Activity,
    Mode,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Left,
    Right,
}

struct Part {
    text: String,
    /// A shorter form tried before the part is dropped.
    short: Option<String>,
    style: Style,
    priority: Priority,
    side: Side,
}

impl Part {
    fn new(side: Side, priority: Priority, text: String, style: Style) -> Part {
        Part {
            text,
            short: None,
            style,
            priority,
            side,
        }
    }

    fn or_short(mut self, short: String) -> Part {
        self.short = Some(short);
        self
    }
}

const LEFT_GAP: &str = "  ";
const RIGHT_SEPARATOR: &str = " · ";
const MODEL_SHORT_WIDTH: usize = 14;

pub fn render_status(info: &StatusInfo, theme: &Theme, area: Rect, buf: &mut Buffer) {
    if area.width == 0 || area.height == 0 {
        return;
    }
    let width = usize::from(area.width);
    let parts = fit(parts(info, theme), width);
    let mut x = area.x;
    let left = parts.iter().filter(|part| part.side == Side::Left);
    for (index, part) in left.enumerate() {
        if index > 0 {
            x = draw(buf, area, x, LEFT_GAP, Style::default());
        }
        x = draw(buf, area, x, &part.text, part.style);
    }
    let right: Vec<&Part> = parts
        .iter()
        .filter(|part| part.side == Side::Right)
        .collect();
    let right_width = side_width(&right, RIGHT_SEPARATOR);
    let start = area.right().saturating_sub(right_width as u16);
    // Never over the left side, even when `fit` could not make room.
    let mut x = start.max(x.saturating_add(1));
    for (index, part) in right.iter().enumerate() {
        if index > 0 {
            x = draw(buf, area, x, RIGHT_SEPARATOR, theme.dim);
        }
        x = draw(buf, area, x, &part.text, part.style);
    }
}

/// Draws `text` at `x` within `area`'s first row; returns where the next text goes.
fn draw(buf: &mut Buffer, area: Rect, x: u16, text: &str, style: Style) -> u16 {
    if x >= area.right() {
        return x;
    }
    let room = usize::from(area.right() - x);
    buf.set_stringn(x, area.y, text, room, style).0
}

fn parts(info: &StatusInfo, theme: &Theme) -> Vec<Part> {
    let mut parts = vec![mode_badge(info.mode, theme)];
    parts.push(activity(info.activity, theme));
    if !info.model.is_empty() {
        let short = truncate(&info.model, MODEL_SHORT_WIDTH);
        parts.push(
            Part::new(Side::Right, Priority::Model, info.model.clone(), theme.text).or_short(short),
        );
    }
    if let Some(used) = info.context_used {
        parts.push(context(used, theme));
    }
    if info.tokens_in > 0 || info.tokens_out > 0 {
        let full = format!(
            "{} in / {} out",
            compact(info.tokens_in),
            compact(info.tokens_out)
        );
        let short = format!("{} tok", compact(info.tokens_in + info.tokens_out));
        parts.push(Part::new(Side::Right, Priority::Tokens, full, theme.dim).or_short(short));
    }
    if let Some(cost) = info.cost {
        parts.push(Part::new(
            Side::Right,
            Priority::Cost,
            dollars(cost),
            theme.dim,
        ));
    }
    if let Some(protections) = &info.sandbox {
        parts.push(sandbox(protections, theme));
    }
    if let Some(summary) = info.mcp {
        parts.push(mcp(summary, theme));
    }
    if let Some(part) = working_tree(info.branch.as_deref(), info.dirty, theme) {
        parts.push(part);
    }
    parts
}

/// `sandbox: on` when every layer holds; anything less stands out.
fn sandbox(protections: &Protections, theme: &Theme) -> Part {
    let style = if protections.complete() {
        theme.dim
    } else {
        theme.warning
    };
    let badge = protections.badge();
    Part::new(
        Side::Right,
        Priority::Sandbox,
        format!("sandbox: {badge}"),
        style,
    )
    .or_short(format!("sbx {badge}"))
}

/// `mcp 2/3`: servers ready of those configured; a server in trouble stands out.
fn mcp(summary: McpSummary, theme: &Theme) -> Part {
    let style = if summary.trouble {
        theme.warning
    } else {
        theme.dim
    };
    Part::new(
        Side::Right,
        Priority::Mcp,
        format!("mcp {}/{}", summary.ready, summary.total),
        style,
    )
}

/// Each mode has its own word and colour, so a glance tells read-only from auto.
fn mode_badge(mode: ApprovalMode, theme: &Theme) -> Part {
    let (label, style) = match mode {
        ApprovalMode::Ask => (" ASK ", theme.accent),
        ApprovalMode::AutoEdit => (" AUTO-EDIT ", theme.warning),
        ApprovalMode::Auto => (" AUTO ", theme.error),
        ApprovalMode::ReadOnly => (" READ-ONLY ", theme.success),
    };
    let style = style.add_modifier(Modifier::REVERSED | Modifier::BOLD);
    Part::new(Side::Left, Priority::Mode, label.to_string(), style)
}

fn activity(activity: Activity, theme: &Theme) -> Part {
    let busy = |text: String, short: String, style: Style| {
        Part::new(Side::Left, Priority::Activity, text, style).or_short(short)
    };
    match activity {
        Activity::Idle => Part::new(Side::Left, Priority::Idle, "ready".into(), theme.dim),
        Activity::Streaming => busy("● responding".into(), "●".into(), theme.accent),
        Activity::RunningTools(count) => busy(
            format!("▶ running {}", plural(count, "tool", "tools")),
            format!("▶ {count}"),
            theme.accent,
        ),
        Activity::WaitingForApproval(count) => busy(
            format!("◆ {} waiting", plural(count, "approval", "approvals")),
            format!("◆ {count} waiting"),
            theme.warning.add_modifier(Modifier::BOLD),
        ),
        Activity::Interrupting => busy("■ interrupting…".into(), "■".into(), theme.warning),
        Activity::TypingIntoCommand => busy(
            "⌨ typing into a command".into(),
            "⌨".into(),
            theme.accent.add_modifier(Modifier::BOLD),
        ),
    }
}

fn context(used: f32, theme: &Theme) -> Part {
    let used = used.clamp(0.0, 1.0);
    let percent = (used * 100.0).round();
    let style = if used >= 0.95 {
        theme.error
    } else if used >= 0.8 {
        theme.warning
    } else {
        theme.dim
    };
    let full = format!("ctx {percent}%");
    Part::new(Side::Right, Priority::Context, full, style).or_short(format!("{percent}%"))
}

fn working_tree(branch: Option<&str>, dirty: usize, theme: &Theme) -> Option<Part> {
    let (full, short) = match (branch, dirty) {
        (None, 0) => return None,
        (None, dirty) => (format!("{dirty} changed"), format!("~{dirty}")),
        (Some(branch), 0) => (format!("⎇ {branch}"), truncate(branch, 12)),
        (Some(branch), dirty) => (
            format!("⎇ {branch} · {dirty} changed"),
            format!("{}*", truncate(branch, 12)),
        ),
    };
    Some(Part::new(Side::Right, Priority::Branch, full, theme.dim).or_short(short))
}

/// Shortens, then drops, the least important parts until the bar fits in `width`.
fn fit(mut parts: Vec<Part>, width: usize) -> Vec<Part> {
    while total_width(&parts) > width {
        let Some(index) = parts
            .iter()
            .enumerate()
            .filter(|(_, part)| part.priority != Priority::Mode)
            .min_by_key(|(_, part)| part.priority)
            .map(|(index, _)| index)
        else {
            break;
        };
        match parts[index].short.take() {
            Some(short) if text_width(&short) < text_width(&parts[index].text) => {
                parts[index].text = short;
            }
            _ => {
                parts.remove(index);
            }
        }
    }
    parts
}

fn total_width(parts: &[Part]) -> usize {
    let left: Vec<&Part> = parts
        .iter()
        .filter(|part| part.side == Side::Left)
        .collect();
    let right: Vec<&Part> = parts
        .iter()
        .filter(|part| part.side == Side::Right)
        .collect();
    let gap = usize::from(!left.is_empty() && !right.is_empty());
    side_width(&left, LEFT_GAP) + gap + side_width(&right, RIGHT_SEPARATOR)
}

fn side_width(parts: &[&Part], separator: &str) -> usize {
    let text: usize = parts.iter().map(|part| text_width(&part.text)).sum();
    text + parts.len().saturating_sub(1) * text_width(separator)
}

fn plural(count: usize, one: &str, many: &str) -> String {
    if count == 1 {
        format!("1 {one}")
    } else {
        format!("{count} {many}")
    }
}

/// `12`, `4.5k`, `123k`, `1.2M`.
fn compact(count: u64) -> String {
    // Display only: the precision lost converting to f64 is far below what is shown.
    let value = count as f64;
    match count {
        0..1_000 => count.to_string(),
        1_000..100_000 => format!("{:.1}k", value / 1e3),
        100_000..1_000_000 => format!("{:.0}k", value / 1e3),
        1_000_000..100_000_000 => format!("{:.1}M", value / 1e6),
        _ => format!("{:.0}M", value / 1e6),
    }
}

fn dollars(cost: f64) -> String {
    if cost > 0.0 && cost < 0.01 {
        "<$0.01".to_string()
    } else {
        format!("${cost:.2}")
    }
}

fn truncate(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_string();
    }
    let kept: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    format!("{kept}…")
}

#[cfg(test)]
mod tests;
