//! Measuring and drawing: keeping cell heights current, drawing the visible window and
//! the scroll hint, and handing finished cells to an inline printer.
//!
//! Owns: the [`Layout`] (heights per cell for one width and set of toggles). Does not
//! own: cell contents (`cell.rs`, `tool_card.rs`) or the scroll position (`scroll.rs`).
//! Invariant: after `sync_layout`, `layout.heights` holds one entry per cell, each the
//! cell's gap plus its row count for the last viewport's width and the current toggles.

use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::Transcript;
use super::cell::{Ctx, ViewOptions};
use super::scroll::HeightIndex;
use super::wrap;
use crate::tui::theme::Theme;

/// The cell heights and what they were measured for.
#[derive(Default)]
pub(super) struct Layout {
    pub(super) heights: HeightIndex,
    /// The width and toggles measured for; `None` forces measuring every cell.
    key: Option<(u16, ViewOptions)>,
    /// Cells changed since they were measured.
    pub(super) dirty: Vec<usize>,
}

fn ctx(theme: &Theme, options: ViewOptions, width: u16) -> Ctx<'_> {
    Ctx {
        width,
        theme,
        options,
    }
}

impl Transcript {
    /// Draws the visible window of the transcript into `area`. Returns how many rows
    /// the content moved up since the last render into the same area (0 when it did
    /// not, or moved otherwise), so that the terminal can be told to scroll them.
    pub fn render(&mut self, area: Rect, buf: &mut Buffer, now: Instant) -> u16 {
        let area = area.intersection(buf.area);
        if area.is_empty() {
            return 0;
        }
        self.viewport = (area.width, area.height);
        self.clock_shown = Some(now);
        self.sync_layout();
        // No clearing first: every frame starts from a blank buffer (ratatui's and
        // the painter's alike), and rows without text stay blank.
        let height = usize::from(area.height);
        let top = self.scroll.top(&self.layout.heights, height);
        let scrolled = match self.window.replace((area, top)) {
            Some((last_area, last_top)) if last_area == area => top.saturating_sub(last_top),
            _ => 0,
        };
        let ctx = ctx(&self.theme, self.options, area.width);
        let mut y = 0;
        let mut position = self.layout.heights.locate(top);
        while let Some((index, offset)) = position {
            let Some(entry) = self.cells.get_mut(index) else {
                break;
            };
            let gap = entry.gap;
            let rows = entry.cell.rows(&ctx, Some(now));
            for slot in offset..gap + rows.len() {
                if y >= height {
                    break;
                }
                if let Some(row) = slot.checked_sub(gap).and_then(|row| rows.get(row)) {
                    buf.set_line(area.x, area.y + y as u16, row, area.width);
                }
                y += 1;
            }
            position = (y < height).then_some((index + 1, 0));
        }
        if let Some(hint) = self.scroll.indicator(&self.layout.heights, height) {
            draw_indicator(&hint, area, buf, &self.theme);
        }
        u16::try_from(scrolled).unwrap_or(u16::MAX)
    }

    /// Draws only the cells not yet handed out by [`Transcript::take_finished`], anchored
    /// to the bottom of `area`: the live part of an `--inline` session, whose finished
    /// cells are printed into the terminal's own scrollback above it.
    pub fn render_live(&mut self, area: Rect, buf: &mut Buffer, now: Instant) {
        let area = area.intersection(buf.area);
        if area.is_empty() {
            return;
        }
        let ctx = ctx(&self.theme, self.options, area.width);
        let mut rows: Vec<Line<'static>> = Vec::new();
        for entry in self.cells.iter_mut().skip(self.taken) {
            rows.extend(std::iter::repeat_n(Line::default(), entry.gap));
            rows.extend(entry.cell.rows(&ctx, Some(now)).iter().cloned());
        }
        let height = usize::from(area.height);
        let skip = rows.len().saturating_sub(height);
        for (y, row) in rows.iter().skip(skip).enumerate() {
            buf.set_line(area.x, area.y + y as u16, row, area.width);
        }
    }

    /// The rows, at `width`, of the cells finished since the last call, in order. A
    /// cell is handed out only once every cell before it is finished, so printing the
    /// result keeps the transcript's order. (A width other than the last render's makes
    /// those cells wrap again for the screen, once.)
    pub fn take_finished(&mut self, width: u16) -> Vec<Line<'static>> {
        let ctx = ctx(&self.theme, self.options, width.max(1));
        let mut out = Vec::new();
        while let Some(entry) = self.cells.get_mut(self.taken) {
            if !entry.cell.is_finished() {
                break;
            }
            out.extend(std::iter::repeat_n(Line::default(), entry.gap));
            out.extend(entry.cell.rows(&ctx, None).iter().cloned());
            self.taken += 1;
        }
        out
    }

    pub(super) fn scroll_by(&mut self, delta: isize) {
        self.sync_layout();
        let height = usize::from(self.viewport.1);
        self.scroll.scroll_by(&self.layout.heights, height, delta);
    }

    /// Brings the heights up to date for the last viewport: every cell after a resize
    /// or a toggle, otherwise only the cells that changed and the new ones.
    pub(super) fn sync_layout(&mut self) {
        let width = self.viewport.0;
        if width == 0 {
            return;
        }
        let key = (width, self.options);
        let ctx = ctx(&self.theme, self.options, width);
        let layout = &mut self.layout;
        if layout.key != Some(key) {
            layout.heights.clear();
            layout.dirty.clear();
            for entry in &mut self.cells {
                entry.dirty = false;
                layout.heights.push(entry.gap + entry.cell.height(&ctx));
            }
            layout.key = Some(key);
        }
        for index in std::mem::take(&mut layout.dirty) {
            let Some(entry) = self.cells.get_mut(index) else {
                continue;
            };
            entry.dirty = false;
            if index < layout.heights.len() {
                let grew = layout
                    .heights
                    .set(index, entry.gap + entry.cell.height(&ctx));
                self.scroll.grew(index, grew.max(0).unsigned_abs());
            }
        }
        for index in layout.heights.len()..self.cells.len() {
            let entry = &mut self.cells[index];
            entry.dirty = false;
            let height = entry.gap + entry.cell.height(&ctx);
            layout.heights.push(height);
            self.scroll.grew(index, height);
        }
        self.scroll.clamp(self.cells.len());
    }
}

/// The "new lines" hint, over the bottom row at the right.
fn draw_indicator(hint: &str, area: Rect, buf: &mut Buffer, theme: &Theme) {
    let y = area.bottom() - 1;
    for x in area.left()..area.right() {
        buf[(x, y)].reset();
    }
    let text = format!(" {hint} ");
    let line = wrap::truncate(&[Span::styled(text, theme.selected)], area.width);
    let x = area.right().saturating_sub(line.width() as u16);
    buf.set_line(x, y, &line, area.width);
}
