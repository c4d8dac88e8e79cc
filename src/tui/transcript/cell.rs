//! The cells of the transcript and their cached rows.
//!
//! Owns: what each kind of cell looks like (user message, assistant markdown, thinking,
//! notice; tool cards live in `tool_card.rs`) and the per-cell row caches. Does not
//! own: which events make cells, scrolling, or drawing into the buffer.
//! Invariant: a cell's rows are recomputed only when its content changed or the width
//! or its toggle changed; growing cells (streamed text, thinking) wrap only the lines
//! that are new since the last time, plus their small still-changing tail.

use std::time::Instant;

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::stream::{MarkdownDoc, split_lines};
use super::tool_card::ToolCard;
use super::wrap::{self, LogicalLine};
use crate::terminal_text::{Sanitizer, sanitize};
use crate::tui::theme::Theme;

/// How a line the UI itself adds is styled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoticeKind {
    Info,
    Warning,
    Error,
}

/// Which thinking blocks show their text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThinkingView {
    /// Shown while streaming, collapsed once the block ends (the default).
    Auto,
    Expanded,
    Collapsed,
}

/// The user's display toggles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ViewOptions {
    /// Finished tool cards show their bodies (diff, output tail, details, checks).
    pub expand_cards: bool,
    pub thinking: ThinkingView,
}

impl Default for ViewOptions {
    fn default() -> Self {
        Self {
            expand_cards: true,
            thinking: ThinkingView::Auto,
        }
    }
}

/// What rows depend on besides a cell's own content.
pub struct Ctx<'a> {
    pub width: u16,
    pub theme: &'a Theme,
    pub options: ViewOptions,
}

pub enum Cell {
    User(TextCell),
    Notice(TextCell),
    Assistant(Box<AssistantCell>),
    Thinking(ThinkingCell),
    Tool(Box<ToolCard>),
}

impl Cell {
    pub fn user(text: &str, theme: &Theme) -> Self {
        Cell::User(TextCell::marked(
            text,
            Span::styled("› ", theme.user),
            theme.user,
        ))
    }

    pub fn notice(text: &str, kind: NoticeKind, theme: &Theme) -> Self {
        let (mark, style) = match kind {
            NoticeKind::Info => ("· ", theme.dim),
            NoticeKind::Warning => ("! ", theme.warning),
            NoticeKind::Error => ("✗ ", theme.error),
        };
        Cell::Notice(TextCell::marked(text, Span::styled(mark, style), style))
    }

    /// The number of rows in `ctx` (independent of the clock).
    pub fn height(&mut self, ctx: &Ctx<'_>) -> usize {
        match self {
            Cell::Tool(card) => card.height(ctx.width, ctx.options.expand_cards, ctx.theme),
            cell => cell.rows(ctx, None).len(),
        }
    }

    /// The cell's rows in `ctx`, recomputed only if something they depend on changed.
    /// `now` animates running tool cards; `None` draws them as of their last event.
    pub fn rows(&mut self, ctx: &Ctx<'_>, now: Option<Instant>) -> &[Line<'static>] {
        match self {
            Cell::User(cell) | Cell::Notice(cell) => cell.rows(ctx.width),
            Cell::Assistant(cell) => cell.rows(ctx.width),
            Cell::Thinking(cell) => cell.rows(ctx),
            Cell::Tool(card) => card.rows(ctx.width, ctx.options.expand_cards, ctx.theme, now),
        }
    }

    /// Finished cells never change again (the `--inline` printer may take them).
    pub fn is_finished(&self) -> bool {
        match self {
            Cell::User(_) | Cell::Notice(_) => true,
            Cell::Assistant(cell) => cell.finished,
            Cell::Thinking(cell) => !cell.streaming,
            Cell::Tool(card) => card.is_done() && !card.awaits_checks(),
        }
    }

    pub fn is_tool(&self) -> bool {
        matches!(self, Cell::Tool(_))
    }
}

/// Text that is complete when the cell is made.
pub struct TextCell {
    lines: Vec<LogicalLine>,
    cache: Option<(u16, Vec<Line<'static>>)>,
}

impl TextCell {
    /// `text` in `style`, its first line after `mark`, the others indented under it.
    fn marked(text: &str, mark: Span<'static>, style: Style) -> Self {
        let indent = [Span::raw(" ".repeat(mark.width()))];
        let mut lines: Vec<LogicalLine> = sanitize(text)
            .lines()
            .map(|line| LogicalLine::styled(line, style).with_gutter(&indent, &indent))
            .collect();
        match lines.first_mut() {
            Some(first) => first.first = vec![mark],
            None => lines.push(LogicalLine::blank().with_gutter(&[mark], &indent)),
        }
        Self { lines, cache: None }
    }

    /// Adds a line of chips under the text (`[image: shot.png]`), what went with it.
    pub fn add_chips(&mut self, chips: &[String], style: Style) {
        let spans = chips
            .iter()
            .flat_map(|chip| {
                [
                    Span::styled(format!("[{}]", sanitize(chip)), style),
                    Span::raw(" "),
                ]
            })
            .collect();
        let indent = self
            .lines
            .first()
            .map(|line| {
                [Span::raw(
                    " ".repeat(line.first.iter().map(Span::width).sum()),
                )]
            })
            .unwrap_or_else(|| [Span::raw("")]);
        self.lines
            .push(LogicalLine::new(spans).with_gutter(&indent, &indent));
        self.cache = None;
    }

    fn rows(&mut self, width: u16) -> &[Line<'static>] {
        let cache = match self.cache.take() {
            Some((cached_width, rows)) if cached_width == width => (width, rows),
            _ => (width, wrap::wrap_all(&self.lines, width)),
        };
        &self.cache.insert(cache).1
    }
}

/// Rows of a growing list of lines: the stable lines are wrapped once, the volatile
/// ones (a still-changing tail) every time.
#[derive(Default)]
struct Incremental {
    /// The width `rows` were wrapped at; `None` before the first update.
    width: Option<u16>,
    stable_lines: usize,
    stable_rows: usize,
    rows: Vec<Line<'static>>,
}

impl Incremental {
    /// Whether the rows were made at `width` and nothing `changed` since.
    fn is_fresh(&self, width: u16, changed: bool) -> bool {
        !changed && self.width == Some(width)
    }

    fn update<'a>(
        &mut self,
        width: u16,
        stable: &[LogicalLine],
        volatile: impl IntoIterator<Item = &'a LogicalLine>,
    ) -> &[Line<'static>] {
        if self.width != Some(width) || stable.len() < self.stable_lines {
            *self = Self {
                width: Some(width),
                ..Self::default()
            };
        }
        self.rows.truncate(self.stable_rows);
        for line in &stable[self.stable_lines..] {
            wrap::wrap_into(line, width, &mut self.rows);
        }
        self.stable_lines = stable.len();
        self.stable_rows = self.rows.len();
        for line in volatile {
            wrap::wrap_into(line, width, &mut self.rows);
        }
        &self.rows
    }
}

/// The model's reply, rendered as markdown as its lines are revealed.
pub struct AssistantCell {
    doc: MarkdownDoc,
    /// The incomplete line being received, shown raw.
    preview: String,
    finished: bool,
    /// Lines or preview changed since the rows were made.
    dirty: bool,
    rows: Incremental,
}

impl AssistantCell {
    pub fn new(theme: &Theme) -> Self {
        Self {
            doc: MarkdownDoc::new(theme),
            preview: String::new(),
            finished: false,
            dirty: true,
            rows: Incremental::default(),
        }
    }

    /// Adds a complete line; false when that changes nothing shown yet (see
    /// [`MarkdownDoc::push_line`]).
    pub fn push_line(&mut self, line: &str) -> bool {
        self.dirty = true;
        self.doc.push_line(line)
    }

    /// Shows `partial` as the line being received; true when that changed anything.
    pub fn set_preview(&mut self, partial: &str) -> bool {
        if self.preview == partial {
            return false;
        }
        self.preview = partial.to_string();
        self.dirty = true;
        true
    }

    pub fn finish(&mut self) {
        self.preview.clear();
        self.doc.finish();
        self.finished = true;
        self.dirty = true;
    }

    fn rows(&mut self, width: u16) -> &[Line<'static>] {
        let changed = std::mem::take(&mut self.dirty);
        if self.rows.is_fresh(width, changed) {
            return &self.rows.rows;
        }
        let preview = self.doc.preview(&self.preview);
        let (settled, unsettled) = self.doc.parts();
        self.rows
            .update(width, settled, unsettled.iter().chain(&preview))
    }
}

/// The model's thinking: dim, and collapsible to one summary line.
pub struct ThinkingCell {
    /// The header line, then one line per complete line of thinking.
    lines: Vec<LogicalLine>,
    partial: String,
    /// Terminal control split across deltas is caught whole.
    sanitizer: Sanitizer,
    streaming: bool,
    /// Lines changed since the expanded rows were made.
    dirty: bool,
    expanded_rows: Incremental,
    collapsed: Option<(u16, usize, Line<'static>)>,
    style: Style,
}

impl ThinkingCell {
    pub fn new(theme: &Theme) -> Self {
        let header = LogicalLine::styled("thinking", theme.dim)
            .with_gutter(&[Span::styled("▾ ", theme.dim)], &[]);
        Self {
            lines: vec![header],
            partial: String::new(),
            sanitizer: Sanitizer::default(),
            streaming: true,
            dirty: true,
            expanded_rows: Incremental::default(),
            collapsed: None,
            style: theme.dim.add_modifier(Modifier::ITALIC),
        }
    }

    pub fn push(&mut self, text: &str) {
        self.dirty = true;
        let mut sanitizer = std::mem::take(&mut self.sanitizer);
        let mut partial = std::mem::take(&mut self.partial);
        split_lines(&mut partial, &sanitizer.push(text), |line| {
            self.push_line(&line)
        });
        self.partial = partial;
        self.sanitizer = sanitizer;
    }

    pub fn end(&mut self) {
        let rest = self.sanitizer.finish();
        self.partial.push_str(&rest);
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.push_line(&line);
        }
        self.streaming = false;
        self.dirty = true;
    }

    /// Lines of thinking (the incomplete one included).
    fn line_count(&self) -> usize {
        self.lines.len() - 1 + usize::from(!self.partial.is_empty())
    }

    fn push_line(&mut self, text: &str) {
        let line = self.line(text);
        self.lines.push(line);
    }

    fn line(&self, text: &str) -> LogicalLine {
        let indent = [Span::raw("  ")];
        LogicalLine::styled(text, self.style).with_gutter(&indent, &indent)
    }

    fn is_expanded(&self, view: ThinkingView) -> bool {
        match view {
            ThinkingView::Auto => self.streaming,
            ThinkingView::Expanded => true,
            ThinkingView::Collapsed => false,
        }
    }

    fn rows(&mut self, ctx: &Ctx<'_>) -> &[Line<'static>] {
        if self.is_expanded(ctx.options.thinking) {
            let changed = std::mem::take(&mut self.dirty);
            if self.expanded_rows.is_fresh(ctx.width, changed) {
                return &self.expanded_rows.rows;
            }
            let partial = (!self.partial.is_empty()).then(|| self.line(&self.partial));
            return self
                .expanded_rows
                .update(ctx.width, &self.lines, partial.iter());
        }
        let count = self.line_count();
        let fresh =
            matches!(&self.collapsed, Some((width, n, _)) if *width == ctx.width && *n == count);
        if !fresh {
            let plural = if count == 1 { "" } else { "s" };
            let spans = [
                Span::styled("▸ ", ctx.theme.dim),
                Span::styled(format!("thinking ({count} line{plural})"), ctx.theme.dim),
            ];
            self.collapsed = Some((ctx.width, count, wrap::truncate(&spans, ctx.width)));
        }
        match &self.collapsed {
            Some((_, _, row)) => std::slice::from_ref(row),
            None => &[],
        }
    }
}
