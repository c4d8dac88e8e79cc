//! The review of one proposed edit: which hunks are accepted, which is selected, how
//! it is shown and where it is scrolled, and the decision that follows.
//!
//! Owns: per-hunk accept/reject state, hunk navigation and scrolling, the view toggles,
//! turning the state into a [`Decision`], and drawing the diff body with the selected
//! and rejected hunks marked.
//! Does not own: the queue, the reason input, key hints or the panel frame (`mod.rs`),
//! nor the row layout itself (`diff_view`).
//! Invariant: `accepted` has one entry per hunk, in file order, and a decision names
//! exactly the accepted hunks' ids in that order; the layout is rebuilt only when the
//! view or the width changes.

use std::ops::Range;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use crate::agent::protocol::HunkView;
use crate::diff::{self, Hunk, HunkId};
use crate::policy::Decision;
use crate::terminal_text::Findings;
use crate::tui::theme::Theme;

use super::diff_view::{self, Files, Layout, RowBody, View};
use super::highlight::FileHighlighter;

/// The body area the diff is drawn in, as the panel last laid it out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Viewport {
    /// Including the one-cell column that marks the selected hunk.
    pub(super) width: u16,
    pub(super) height: u16,
    /// Whether the panel is wide enough for two columns.
    pub(super) wide: bool,
}

impl Viewport {
    fn rows(self) -> usize {
        usize::from(self.height.max(1))
    }

    fn text_width(self) -> usize {
        usize::from(self.width.saturating_sub(1))
    }
}

pub(super) enum ToggleRefused {
    /// The agent's hunks could not be matched to the ones shown.
    Unmatched,
    NoHunks,
}

pub(super) struct EditReview {
    path: String,
    /// The path as the model gave it, when it goes through a symbolic link to `path`.
    requested: Option<String>,
    after: String,
    hunks: Vec<Hunk>,
    accepted: Vec<bool>,
    /// Whether the recomputed hunks carry the ids the agent offered; if not, only the
    /// whole edit can be approved or rejected.
    hunks_match: bool,
    selected: usize,
    scroll: usize,
    side_by_side: bool,
    whole_file: bool,
    files: Files,
    cache: Option<((View, usize), Layout)>,
    theme: Theme,
    /// What the header warns about: hidden or look-alike characters in the path or in
    /// the lines the edit adds.
    warnings: Vec<String>,
}

impl EditReview {
    pub(super) fn new(
        path: &str,
        requested: Option<&str>,
        before: Option<&str>,
        after: &str,
        offered: &[HunkView],
        theme: &Theme,
    ) -> Self {
        let color = theme.color;
        let hunks = diff::hunks(before, after);
        let hunks_match = hunks
            .iter()
            .map(|hunk| &hunk.id)
            .eq(offered.iter().map(|view| &view.id));
        if !hunks_match {
            tracing::warn!(
                path,
                "recomputed hunks differ from the ones offered for approval"
            );
        }
        let added: String = hunks
            .iter()
            .flat_map(|hunk| &hunk.lines)
            .filter(|line| line.kind == diff::LineKind::Added)
            .flat_map(|line| [line.text.as_str(), "\n"])
            .collect();
        let mut added_findings = Findings::of(&added);
        // Look-alikes are ordinary in prose and string literals; the path is where
        // they deceive.
        added_findings.lookalikes.clear();
        let named = requested.map(Findings::of);
        let warnings = Findings::of(path)
            .warnings("the path")
            .into_iter()
            .chain(
                named
                    .map(|found| found.warnings("the name the model gave"))
                    .into_iter()
                    .flatten(),
            )
            .chain(added_findings.warnings("the added text"))
            .collect();
        Self {
            warnings,
            path: path.to_string(),
            requested: requested.map(str::to_string),
            after: after.to_string(),
            accepted: vec![true; hunks.len()],
            hunks,
            hunks_match,
            selected: 0,
            scroll: 0,
            side_by_side: false,
            whole_file: false,
            files: Files {
                old: FileHighlighter::new(
                    path,
                    before.unwrap_or_default().to_string(),
                    color,
                    theme.hidden,
                ),
                new: FileHighlighter::new(path, after.to_string(), color, theme.hidden),
            },
            cache: None,
            theme: theme.clone(),
        }
    }

    pub(super) fn path(&self) -> &str {
        &self.path
    }

    /// The header's path: the file that really changes, and, when the model named it
    /// through a symbolic link, that name first (`notes.md → docs/notes.md`).
    pub(super) fn header_path(&self) -> String {
        match &self.requested {
            Some(requested) => format!("{requested} → {} (symbolic link)", self.path),
            None => self.path.clone(),
        }
    }

    /// One line per kind of hidden or look-alike character found, for the header.
    pub(super) fn warnings(&self) -> &[String] {
        &self.warnings
    }

    pub(super) fn proposed(&self) -> &str {
        &self.after
    }

    /// What Apply sends: everything, nothing, or exactly the accepted hunks.
    pub(super) fn decision(&self) -> Decision {
        let accepted = self.accepted_ids();
        if accepted.len() == self.hunks.len() {
            Decision::Approve
        } else if accepted.is_empty() {
            Decision::Reject { reason: None }
        } else {
            Decision::ApproveHunks {
                hunks: accepted,
                reason: None,
            }
        }
    }

    /// What a reason sends: with some hunks accepted it explains the rejected ones and
    /// the accepted ones still apply; otherwise it rejects the whole edit.
    pub(super) fn decision_with_reason(&self, reason: Option<String>) -> Decision {
        if self.is_partial() {
            Decision::ApproveHunks {
                hunks: self.accepted_ids(),
                reason,
            }
        } else {
            Decision::Reject { reason }
        }
    }

    /// The reason input's prompt: says what the reason will be attached to.
    pub(super) fn reason_prompt(&self) -> String {
        if !self.is_partial() {
            return "Why reject this edit? (sent to the model)".to_string();
        }
        let rejected: Vec<String> = self
            .accepted
            .iter()
            .enumerate()
            .filter(|(_, accepted)| !**accepted)
            .map(|(index, _)| (index + 1).to_string())
            .collect();
        let plural = if rejected.len() == 1 { "" } else { "s" };
        format!(
            "Why reject hunk{plural} {}? The accepted hunks still apply.",
            rejected.join(", ")
        )
    }

    fn is_accepted(&self, hunk: usize) -> bool {
        self.accepted.get(hunk).copied().unwrap_or(true)
    }

    fn is_partial(&self) -> bool {
        let accepted = self.accepted.iter().filter(|a| **a).count();
        accepted > 0 && accepted < self.hunks.len()
    }

    fn accepted_ids(&self) -> Vec<HunkId> {
        self.hunks
            .iter()
            .zip(&self.accepted)
            .filter(|(_, accepted)| **accepted)
            .map(|(hunk, _)| hunk.id.clone())
            .collect()
    }

    pub(super) fn toggle_selected(&mut self) -> Result<(), ToggleRefused> {
        if !self.hunks_match {
            return Err(ToggleRefused::Unmatched);
        }
        let accepted = self
            .accepted
            .get_mut(self.selected)
            .ok_or(ToggleRefused::NoHunks)?;
        *accepted = !*accepted;
        Ok(())
    }

    /// Moves the selection by `step` hunks (clamped) and scrolls it into view; false
    /// when it could not move.
    pub(super) fn select_by(&mut self, step: isize, viewport: Viewport) -> bool {
        let last = self.hunks.len().saturating_sub(1);
        let target = self.selected.saturating_add_signed(step).min(last);
        if target == self.selected {
            return false;
        }
        self.selected = target;
        self.reveal_selected(viewport);
        true
    }

    /// Scrolls by `rows` (negative: up); the selection follows onto a visible hunk if
    /// its own hunk scrolled out of view, so a toggle always acts on something seen.
    pub(super) fn scroll_by(&mut self, rows: isize, viewport: Viewport) {
        let (total, hunk_rows) = self.geometry(viewport);
        let max = total.saturating_sub(viewport.rows());
        self.scroll = self.scroll.saturating_add_signed(rows).min(max);
        let window = self.scroll..self.scroll + viewport.rows();
        let overlaps = |rows: &Range<usize>| rows.start < window.end && window.start < rows.end;
        if !hunk_rows.get(self.selected).is_some_and(overlaps)
            && let Some(index) = hunk_rows.iter().position(overlaps)
        {
            self.selected = index;
        }
    }

    pub(super) fn toggle_whole_file(&mut self, viewport: Viewport) {
        self.whole_file = !self.whole_file;
        self.reveal_selected(viewport);
    }

    /// False (and no change) when the panel is too narrow for two columns.
    pub(super) fn toggle_side_by_side(&mut self, viewport: Viewport) -> bool {
        let showing = self.view(viewport.wide) == View::SideBySide;
        if !showing && !viewport.wide {
            return false;
        }
        self.side_by_side = !showing;
        self.whole_file = false;
        self.reveal_selected(viewport);
        true
    }

    /// What is shown: side by side falls back to unified while the panel is narrow.
    fn view(&self, wide: bool) -> View {
        if self.whole_file {
            View::WholeFile
        } else if self.side_by_side && wide {
            View::SideBySide
        } else {
            View::Unified
        }
    }

    /// Scrolls so the selected hunk starts at the top, unless it is already in full view.
    fn reveal_selected(&mut self, viewport: Viewport) {
        let (total, hunk_rows) = self.geometry(viewport);
        let Some(rows) = hunk_rows.get(self.selected) else {
            return;
        };
        let max = total.saturating_sub(viewport.rows());
        let in_view = rows.start >= self.scroll && rows.end <= self.scroll + viewport.rows();
        if !rows.is_empty() && !in_view {
            self.scroll = rows.start.min(max);
        }
    }

    /// How many rows the current view has, and which of them each hunk occupies.
    fn geometry(&mut self, viewport: Viewport) -> (usize, Vec<Range<usize>>) {
        let layout = self.layout(viewport);
        (layout.rows.len(), layout.hunk_rows.clone())
    }

    /// The rows for the current view and width, laid out once and then reused.
    fn layout(&mut self, viewport: Viewport) -> &Layout {
        let key = (self.view(viewport.wide), viewport.text_width());
        if self
            .cache
            .as_ref()
            .is_some_and(|(cached, _)| *cached != key)
        {
            self.cache = None;
        }
        let (_, layout) = self.cache.get_or_insert_with(|| {
            let layout = diff_view::layout(key.0, &self.hunks, &self.files, key.1, &self.theme);
            (key, layout)
        });
        layout
    }

    /// One line: where the selection is, how many hunks are accepted, and the view.
    pub(super) fn status(&self, wide: bool) -> Line<'static> {
        let theme = &self.theme;
        if self.hunks.is_empty() {
            return Line::styled("no changes", theme.dim);
        }
        let accepted = self.accepted.iter().filter(|a| **a).count();
        let rejected = self.hunks.len() - accepted;
        let (mark, mark_style) = if self.is_accepted(self.selected) {
            ("✓", theme.success)
        } else {
            ("✗", theme.warning)
        };
        let mut spans = vec![
            Span::styled(
                format!("hunk {} of {} ", self.selected + 1, self.hunks.len()),
                theme.accent,
            ),
            Span::styled(mark, mark_style),
            Span::styled(format!(" · {accepted} accepted"), theme.success),
        ];
        if rejected > 0 {
            spans.push(Span::styled(
                format!(", {rejected} rejected"),
                theme.warning,
            ));
        }
        let view = match self.view(wide) {
            View::WholeFile => " · whole file",
            View::SideBySide => " · side by side",
            View::Unified => "",
        };
        spans.push(Span::styled(view, theme.dim));
        Line::from(spans)
    }

    pub(super) fn render_body(&mut self, area: Rect, viewport: Viewport, buf: &mut Buffer) {
        let rows = viewport.rows();
        let total = self.layout(viewport).rows.len();
        self.scroll = self.scroll.min(total.saturating_sub(rows));
        let Some((_, layout)) = &self.cache else {
            return;
        };
        let theme = &self.theme;
        let rejected_text = Style::default().add_modifier(Modifier::DIM | Modifier::CROSSED_OUT);
        for (offset, row) in layout.rows.iter().skip(self.scroll).take(rows).enumerate() {
            let y = area
                .y
                .saturating_add(u16::try_from(offset).unwrap_or(u16::MAX));
            if y >= area.bottom() {
                break;
            }
            let content = Rect::new(area.x.saturating_add(1), y, area.width.saturating_sub(1), 1);
            if row.hunk == Some(self.selected) {
                buf.set_string(area.x, y, "▌", theme.accent);
            }
            let rejected = row.hunk.is_some_and(|hunk| !self.is_accepted(hunk));
            match (&row.body, row.hunk) {
                (RowBody::HunkHeader, Some(hunk)) => {
                    let line = self.header_line(hunk);
                    buf.set_line(content.x, y, &line, content.width);
                    if rejected {
                        buf.set_style(content, theme.dim);
                    }
                }
                (RowBody::Pieces(pieces), _) => {
                    let line = diff_view::draw_pieces(pieces, &mut self.files);
                    buf.set_line(content.x, y, &line, content.width);
                    if rejected {
                        buf.set_style(content, rejected_text);
                    }
                }
                (RowBody::HunkHeader, None) => {}
            }
        }
    }

    fn header_line(&self, index: usize) -> Line<'static> {
        let theme = &self.theme;
        let Some(hunk) = self.hunks.get(index) else {
            return Line::default();
        };
        let (mark, style) = if self.is_accepted(index) {
            ("✓ accepted", theme.success)
        } else {
            ("✗ rejected", theme.warning)
        };
        Line::from(vec![
            Span::styled(hunk.header.clone(), theme.hunk_header),
            Span::styled(format!("  {}/{} ", index + 1, self.hunks.len()), theme.dim),
            Span::styled(mark, style),
        ])
    }
}
