//! Laying out a proposed edit as screen rows: unified, side by side, or the whole new
//! file with its changes marked.
//!
//! Owns: the row model ([`Layout`]), gutters with old/new line numbers and `+`/`-`
//! markers (in the added or removed colour on a changed line), wrapping long lines, and
//! which rows belong to which hunk.
//! Does not own: hunk state (accepted, selected), scrolling or drawing — the edit
//! panel lays those over the rows at draw time, so a layout depends only on the
//! proposal, the view and the width, and can be cached across frames.
//! Rows refer to source text by line and character range instead of holding styled
//! text, so laying out needs only the plain lines, and syntax highlighting happens when
//! a row is first drawn: a 2,000-line file is parsed only as far as anyone scrolls.
//! Invariant: every text row is exactly `width` cells wide, and `hunk_rows[i]` is the
//! contiguous range of rows showing hunk `i` (empty when the view shows none of it).

use std::ops::Range;

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::diff::{Hunk, HunkLine, LineEnding, LineKind};
use crate::tui::theme::Theme;

use super::highlight::FileHighlighter;
use super::hunk_lines::{ChangeMarks, has_mixed_endings, pair_lines};
use super::text::{char_width, overlap, slice_chars, text_width, wrap_ranges};

/// How the edit is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum View {
    Unified,
    SideBySide,
    WholeFile,
}

/// The panel is this wide or wider before side by side is offered.
pub(super) const SIDE_BY_SIDE_MIN_WIDTH: u16 = 120;

pub(super) enum RowBody {
    /// A hunk's `@@` line, drawn with the hunk's current state.
    HunkHeader,
    Pieces(Vec<Piece>),
}

pub(super) struct Row {
    pub(super) hunk: Option<usize>,
    pub(super) body: RowBody,
}

pub(super) struct Layout {
    pub(super) rows: Vec<Row>,
    pub(super) hunk_rows: Vec<Range<usize>>,
}

/// Which file a line of code comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FileSide {
    Old,
    New,
}

/// Part of a row.
pub(super) enum Piece {
    Fixed(Span<'static>),
    /// Characters `chars` of 0-based `line` of one file, styled when drawn.
    Code {
        side: FileSide,
        line: usize,
        chars: Range<usize>,
    },
}

/// Both sides of the edit.
pub(super) struct Files {
    pub(super) old: FileHighlighter,
    pub(super) new: FileHighlighter,
}

impl Files {
    fn side(&self, side: FileSide) -> &FileHighlighter {
        match side {
            FileSide::Old => &self.old,
            FileSide::New => &self.new,
        }
    }

    fn side_mut(&mut self, side: FileSide) -> &mut FileHighlighter {
        match side {
            FileSide::Old => &mut self.old,
            FileSide::New => &mut self.new,
        }
    }
}

/// A row's pieces as a line, highlighting the code in it (once per source line).
pub(super) fn draw_pieces(pieces: &[Piece], files: &mut Files) -> Line<'static> {
    let mut spans = Vec::with_capacity(pieces.len() + 4);
    for piece in pieces {
        match piece {
            Piece::Fixed(span) => spans.push(span.clone()),
            Piece::Code { side, line, chars } => {
                let styled = files.side_mut(*side).line(*line);
                spans.extend(slice_chars(styled, chars.clone()));
            }
        }
    }
    Line::from(spans)
}

/// Lays out `hunks` for `view` in rows `width` cells wide.
pub(super) fn layout(
    view: View,
    hunks: &[Hunk],
    files: &Files,
    width: usize,
    theme: &Theme,
) -> Layout {
    let mut builder = Builder {
        rows: Vec::new(),
        width: width.max(1),
        paint: Paint::new(theme),
        numbers: number_width(hunks, files.new.len()),
        files,
    };
    let hunk_rows = match view {
        View::Unified => builder.unified(hunks),
        View::SideBySide => builder.side_by_side(hunks),
        View::WholeFile => builder.whole_file(hunks),
    };
    Layout {
        rows: builder.rows,
        hunk_rows,
    }
}

/// Digits needed for the largest line number shown.
fn number_width(hunks: &[Hunk], new_len: usize) -> usize {
    let largest = hunks
        .iter()
        .flat_map(|hunk| &hunk.lines)
        .flat_map(|line| [line.old_line, line.new_line])
        .flatten()
        .chain([new_len])
        .max()
        .unwrap_or(0);
    largest.max(1).to_string().len()
}

/// The styles a row is drawn with. No background: the code keeps the terminal's own
/// (its palette's syntax colours read on it, light or dark), and a changed line shows
/// in its gutter, numbers and marker in the added or removed colour. Without colour
/// the `+`/`-` markers alone carry the meaning.
struct Paint {
    /// Unchanged lines' numbers and the column separator.
    dim: Style,
    added: Style,
    removed: Style,
    note: Style,
}

impl Paint {
    fn new(theme: &Theme) -> Self {
        Self {
            dim: theme.dim,
            added: theme.added,
            removed: theme.removed,
            note: theme.dim,
        }
    }

    /// The style of a line number on a line of `kind`.
    fn number(&self, kind: LineKind) -> Style {
        match kind {
            LineKind::Context => self.dim,
            LineKind::Added => self.added,
            LineKind::Removed => self.removed,
        }
    }

    fn marker(&self, kind: LineKind) -> Span<'static> {
        let style = match kind {
            LineKind::Context => Style::default(),
            LineKind::Added => self.added,
            LineKind::Removed => self.removed,
        };
        Span::styled(kind.marker().to_string(), style)
    }
}

/// One diff line as a column shows it.
#[derive(Clone, Copy)]
struct Side<'h> {
    line: &'h HunkLine,
    /// Whether the hunk's changed lines end differently, so endings must be shown.
    mixed_endings: bool,
    numbers: Numbers,
}

/// Which line numbers a column's gutter shows.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Numbers {
    Both,
    Old,
    New,
}

/// A stretch of a cell's text before wrapping.
enum Run {
    Code {
        side: FileSide,
        line: usize,
        text: String,
    },
    Fixed(Span<'static>),
}

impl Run {
    fn text(&self) -> &str {
        match self {
            Run::Code { text, .. } => text,
            Run::Fixed(span) => &span.content,
        }
    }
}

/// The rows of one cell (a line in a column), each as its pieces.
type Cells = Vec<Vec<Piece>>;

struct Builder<'f> {
    rows: Vec<Row>,
    width: usize,
    paint: Paint,
    numbers: usize,
    files: &'f Files,
}

impl Builder<'_> {
    fn unified(&mut self, hunks: &[Hunk]) -> Vec<Range<usize>> {
        let width = self.width;
        self.each_hunk(hunks, |builder, index, hunk| {
            let mixed_endings = has_mixed_endings(hunk);
            for line in &hunk.lines {
                let side = Side {
                    line,
                    mixed_endings,
                    numbers: Numbers::Both,
                };
                let cells = builder.diff_cell(side, width);
                builder.push_rows(Some(index), cells);
            }
        })
    }

    fn side_by_side(&mut self, hunks: &[Hunk]) -> Vec<Range<usize>> {
        let left_width = self.width.saturating_sub(1) / 2;
        let right_width = self.width.saturating_sub(1 + left_width);
        self.each_hunk(hunks, |builder, index, hunk| {
            let mixed_endings = has_mixed_endings(hunk);
            let side = |line, numbers| Side {
                line,
                mixed_endings,
                numbers,
            };
            for (old, new) in pair_lines(&hunk.lines) {
                let left = match old {
                    Some(line) => builder.diff_cell(side(line, Numbers::Old), left_width),
                    None => vec![blank(left_width)],
                };
                let right = match new {
                    Some(line) => builder.diff_cell(side(line, Numbers::New), right_width),
                    None => vec![blank(right_width)],
                };
                let separator = builder.paint.dim;
                let rows = join_columns(left, right, left_width, right_width, separator);
                builder.push_rows(Some(index), rows);
            }
        })
    }

    fn whole_file(&mut self, hunks: &[Hunk]) -> Vec<Range<usize>> {
        let marks = ChangeMarks::of(hunks);
        let new_len = self.files.new.len();
        let mut hunk_rows: Vec<Option<Range<usize>>> = vec![None; hunks.len()];
        let mut claim = |hunk: usize, rows: Range<usize>| {
            if let Some(slot) = hunk_rows.get_mut(hunk) {
                let range = slot.get_or_insert(rows.clone());
                *range = range.start.min(rows.start)..range.end.max(rows.end);
            }
        };
        for index in 0..=new_len {
            if let Some(&(hunk, count)) = marks.removed_before.get(&index) {
                let start = self.rows.len();
                let cells = self.removal_cell(count);
                self.push_rows(Some(hunk), cells);
                claim(hunk, start..self.rows.len());
            }
            if index == new_len {
                break;
            }
            let hunk = marks.added.get(&index).copied();
            let kind = hunk.map_or(LineKind::Context, |_| LineKind::Added);
            let start = self.rows.len();
            let gutter = vec![
                Span::styled(
                    format!("{:>w$} ", index + 1, w = self.numbers),
                    self.paint.number(kind),
                ),
                self.paint.marker(kind),
                Span::raw(" "),
            ];
            let code = self.code(FileSide::New, index);
            let cells = self.cell(gutter, vec![code], self.width);
            self.push_rows(hunk, cells);
            if let Some(hunk) = hunk {
                claim(hunk, start..self.rows.len());
            }
        }
        hunk_rows
            .into_iter()
            .map(|rows| rows.unwrap_or(0..0))
            .collect()
    }

    /// Runs `body` for each hunk after its header row; returns each hunk's rows.
    fn each_hunk(
        &mut self,
        hunks: &[Hunk],
        mut body: impl FnMut(&mut Self, usize, &Hunk),
    ) -> Vec<Range<usize>> {
        hunks
            .iter()
            .enumerate()
            .map(|(index, hunk)| {
                let start = self.rows.len();
                self.rows.push(Row {
                    hunk: Some(index),
                    body: RowBody::HunkHeader,
                });
                body(self, index, hunk);
                start..self.rows.len()
            })
            .collect()
    }

    fn code(&self, side: FileSide, line: usize) -> Run {
        Run::Code {
            side,
            line,
            text: self.files.side(side).plain(line),
        }
    }

    /// One diff line as rows `width` wide: line number(s), marker, the code.
    fn diff_cell(&self, side: Side<'_>, width: usize) -> Cells {
        let line = side.line;
        let number = |n: Option<usize>| {
            let text = n.map_or(String::new(), |n| n.to_string());
            Span::styled(
                format!("{text:>w$} ", w = self.numbers),
                self.paint.number(line.kind),
            )
        };
        let mut gutter = Vec::new();
        if side.numbers != Numbers::New {
            gutter.push(number(line.old_line));
        }
        if side.numbers != Numbers::Old {
            gutter.push(number(line.new_line));
        }
        gutter.push(self.paint.marker(line.kind));
        gutter.push(Span::raw(" "));
        let mut runs = match (line.kind, line.old_line, line.new_line) {
            (LineKind::Removed, Some(old), _) => {
                vec![self.code(FileSide::Old, old.saturating_sub(1))]
            }
            (_, _, Some(new)) => vec![self.code(FileSide::New, new.saturating_sub(1))],
            _ => Vec::new(),
        };
        runs.extend(ending_note(side, self.paint.note).map(Run::Fixed));
        self.cell(gutter, runs, width)
    }

    fn removal_cell(&self, count: usize) -> Cells {
        let plural = if count == 1 { "" } else { "s" };
        let gutter = vec![
            Span::raw(" ".repeat(self.numbers + 1)),
            self.paint.marker(LineKind::Removed),
            Span::raw(" "),
        ];
        let note = Span::styled(
            format!("({count} line{plural} removed here)"),
            self.paint.note,
        );
        self.cell(gutter, vec![Run::Fixed(note)], self.width)
    }

    /// `gutter` then `runs` wrapped into rows exactly `width` wide.
    /// Continuation rows repeat the marker (so a wrapped `+` line still reads as added
    /// without colour) under a blank number column.
    fn cell(&self, gutter: Vec<Span<'static>>, runs: Vec<Run>, width: usize) -> Cells {
        let spans_width = |spans: &[Span<'static>]| -> usize {
            spans.iter().map(|s| text_width(&s.content)).sum()
        };
        // Too narrow for numbers: keep only the marker and its space.
        let gutter: Vec<Span<'static>> = if spans_width(&gutter) + 4 > width {
            gutter.into_iter().rev().take(2).rev().collect()
        } else {
            gutter
        };
        let gutter_width = spans_width(&gutter);
        let continuation: Vec<Span<'static>> = gutter
            .iter()
            .enumerate()
            .map(|(at, span)| {
                if at + 2 >= gutter.len() {
                    span.clone()
                } else {
                    Span::raw(" ".repeat(text_width(&span.content)))
                }
            })
            .collect();
        let text: String = runs.iter().map(Run::text).collect();
        let widths: Vec<usize> = text.chars().map(char_width).collect();
        wrap_ranges(&text, width.saturating_sub(gutter_width))
            .into_iter()
            .enumerate()
            .map(|(at, range)| {
                let lead = if at == 0 { &gutter } else { &continuation };
                let text_used: usize = widths.get(range.clone()).map_or(0, |w| w.iter().sum());
                let used = gutter_width + text_used;
                let mut pieces: Vec<Piece> =
                    lead.iter().map(|span| Piece::Fixed(span.clone())).collect();
                pieces.extend(pieces_in(&runs, range));
                if used < width {
                    pieces.push(Piece::Fixed(Span::raw(" ".repeat(width - used))));
                }
                pieces
            })
            .collect()
    }

    fn push_rows(&mut self, hunk: Option<usize>, cells: Cells) {
        self.rows.extend(cells.into_iter().map(|pieces| Row {
            hunk,
            body: RowBody::Pieces(pieces),
        }));
    }
}

/// The parts of `runs` that fall in the characters `range` of their joined text.
fn pieces_in(runs: &[Run], range: Range<usize>) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut offset = 0;
    for run in runs {
        let len = run.text().chars().count();
        if let Some(local) = overlap(&range, offset, len) {
            pieces.push(match run {
                Run::Code { side, line, .. } => Piece::Code {
                    side: *side,
                    line: *line,
                    chars: local,
                },
                Run::Fixed(span) => {
                    let part = slice_chars(std::slice::from_ref(span), local);
                    let span = part.into_iter().next().unwrap_or_default();
                    Piece::Fixed(span)
                }
            });
        }
        offset += len;
    }
    pieces
}

fn blank(width: usize) -> Vec<Piece> {
    vec![Piece::Fixed(Span::raw(" ".repeat(width)))]
}

/// Two columns of rows side by side with a `│` between, the shorter padded.
fn join_columns(
    left: Cells,
    right: Cells,
    left_width: usize,
    right_width: usize,
    separator: Style,
) -> Cells {
    let height = left.len().max(right.len());
    let mut left = left.into_iter();
    let mut right = right.into_iter();
    (0..height)
        .map(|_| {
            let mut row = left.next().unwrap_or_else(|| blank(left_width));
            row.push(Piece::Fixed(Span::styled("│", separator)));
            row.extend(right.next().unwrap_or_else(|| blank(right_width)));
            row
        })
        .collect()
}

/// A dim note after a line whose terminator matters to the change.
fn ending_note(side: Side<'_>, style: Style) -> Option<Span<'static>> {
    let note = match side.line.ending {
        LineEnding::Missing => " (no newline at end of file)",
        _ if !side.mixed_endings || side.line.kind == LineKind::Context => return None,
        LineEnding::CrLf => " (CRLF)",
        LineEnding::Lf => " (LF)",
    };
    Some(Span::styled(note, style))
}
