//! Putting frames on the terminal with as little work as the change allows.
//!
//! ratatui's `Terminal::draw` compares every cell of the new frame with the last one,
//! working out each cell's display width on the way. While a model streams, most rows
//! of a frame are the same as in the last one. Full-screen frames go through this
//! painter instead, which keeps its own copy of the last frame and skips rows that are
//! equal with one comparison of the row; only rows that differ are compared cell by cell
//! (by ratatui's own diff, which knows about wide characters). An inline viewport keeps
//! ratatui's drawing, whose inserting of lines above the viewport relies on its own copy.

use ratatui::backend::Backend;
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::{Frame, Terminal};

use super::terminal::TrackedCursor;

pub struct Painter<B: Backend = TrackedCursor> {
    term: Terminal<B>,
    /// The last frame as it is on the terminal (full screen only; `None` when inline).
    /// An area other than the frame's means "unknown": the next frame clears the screen
    /// and is written whole.
    previous: Option<Buffer>,
}

impl<B: Backend> Painter<B> {
    pub fn new(term: Terminal<B>, inline: bool) -> Self {
        Self {
            term,
            previous: (!inline).then(Buffer::default),
        }
    }

    pub fn term(&mut self) -> &mut Terminal<B> {
        &mut self.term
    }

    /// Forgets what the screen shows (another program had the terminal): the next
    /// frame clears it and is drawn whole.
    pub fn clear(&mut self) -> Result<(), B::Error> {
        match &mut self.previous {
            Some(previous) => {
                *previous = Buffer::default();
                Ok(())
            }
            None => self.term.clear(),
        }
    }

    /// Renders a frame with `render`, which returns where the cursor should show
    /// (`None` hides it), and writes what changed.
    pub fn draw(
        &mut self,
        render: impl FnOnce(&mut Frame) -> Option<Position>,
    ) -> Result<(), B::Error> {
        let Some(previous) = &mut self.previous else {
            self.term.draw(|frame| {
                if let Some(cursor) = render(frame) {
                    frame.set_cursor_position(cursor);
                }
            })?;
            return Ok(());
        };
        // A changed size resizes the buffers (and clears the screen).
        self.term.autoresize()?;
        let area = self.term.get_frame().area();
        if previous.area != area {
            // Unknown or resized: start from a blank screen.
            self.term.clear()?;
            *previous = Buffer::empty(area);
        }
        let cursor = render(&mut self.term.get_frame());
        let current = std::mem::take(self.term.current_buffer_mut());
        let written = write_frame(&mut self.term, previous, &current, cursor);
        // The frame just written becomes the last one (unknown if writing it failed);
        // the older buffer, blanked, goes back to be rendered into next.
        let mut recycled = std::mem::replace(previous, current);
        if written.is_err() {
            *previous = Buffer::default();
        }
        recycled.reset();
        *self.term.current_buffer_mut() = recycled;
        written
    }
}

/// Writes the cells of `current` that differ from `previous`, then places the cursor.
fn write_frame<B: Backend>(
    term: &mut Terminal<B>,
    previous: &Buffer,
    current: &Buffer,
    cursor: Option<Position>,
) -> Result<(), B::Error> {
    let changed = changed_cells(previous, current);
    term.backend_mut()
        .draw(changed.iter().map(|&(x, y)| (x, y, &current[(x, y)])))?;
    match cursor {
        None => term.hide_cursor()?,
        Some(position) => {
            term.show_cursor()?;
            term.set_cursor_position(position)?;
        }
    }
    Backend::flush(term.backend_mut())
}

/// The positions whose cells must be written to turn `previous` into `current` (same
/// area), in order. Rows that are equal are skipped whole; a row that differs is
/// compared by ratatui's own diff, which knows about wide characters.
fn changed_cells(previous: &Buffer, current: &Buffer) -> Vec<(u16, u16)> {
    let area = current.area;
    let width = usize::from(area.width);
    let mut changed = Vec::new();
    if width == 0 {
        return changed;
    }
    let rows = previous
        .content
        .chunks(width)
        .zip(current.content.chunks(width));
    for (y, (before, after)) in (area.y..).zip(rows) {
        if before == after {
            continue;
        }
        let row = Rect::new(area.x, y, area.width, 1);
        let before = Buffer {
            area: row,
            content: before.to_vec(),
        };
        let after = Buffer {
            area: row,
            content: after.to_vec(),
        };
        changed.extend(before.diff(&after).into_iter().map(|(x, y, _)| (x, y)));
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use ratatui::backend::TestBackend;
    use ratatui::style::{Color, Style};

    fn buffer(rows: &[&str]) -> Buffer {
        Buffer::with_lines(rows.iter().copied())
    }

    #[test]
    fn equal_rows_are_skipped_and_changed_cells_listed_in_order() {
        let previous = buffer(&["abcd", "efgh", "ijkl"]);
        let current = buffer(&["abcd", "eFgH", "ijkL"]);
        assert_eq!(changed_cells(&previous, &current), [(1, 1), (3, 1), (3, 2)]);
        assert_eq!(changed_cells(&current, &current), []);
    }

    /// A screen of `height` rows: lines `first..` above a status line.
    fn page(first: usize, height: u16, status: &str) -> Vec<String> {
        let mut rows: Vec<String> = (0..usize::from(height) - 1)
            .map(|row| format!("line {}", first + row))
            .collect();
        rows.push(status.to_string());
        rows
    }

    fn draw_page(painter: &mut Painter<TestBackend>, rows: &[String]) {
        painter
            .draw(|frame| {
                for (y, row) in (0..).zip(rows) {
                    frame.buffer_mut().set_string(0, y, row, Style::new());
                }
                Some(Position::new(1, 0))
            })
            .unwrap();
    }

    fn on_screen(painter: &mut Painter<TestBackend>) -> Vec<String> {
        let buffer = painter.term().backend().buffer();
        (0..buffer.area.height)
            .map(|y| {
                let row: String = (0..buffer.area.width)
                    .map(|x| buffer[(x, y)].symbol())
                    .collect();
                row.trim_end().to_string()
            })
            .collect()
    }

    #[test]
    fn successive_frames_leave_the_screen_exactly_as_rendered() {
        let mut painter = Painter::new(Terminal::new(TestBackend::new(12, 6)).unwrap(), false);
        // A first frame, text moving up by one and two rows, a status change alone.
        for (step, (first, status)) in [(0, "ready"), (1, "ready"), (3, "ready"), (3, "working")]
            .into_iter()
            .enumerate()
        {
            let rows = page(first, 6, status);
            draw_page(&mut painter, &rows);
            assert_eq!(on_screen(&mut painter), rows, "frame {step}");
            let cursor = painter.term().backend_mut().get_cursor_position().unwrap();
            assert_eq!(cursor, Position::new(1, 0));
        }
    }

    #[test]
    fn a_cleared_or_resized_screen_is_drawn_whole() {
        let mut painter = Painter::new(Terminal::new(TestBackend::new(12, 6)).unwrap(), false);
        let rows = page(0, 6, "ready");
        draw_page(&mut painter, &rows);
        painter.clear().unwrap();
        draw_page(&mut painter, &rows);
        assert_eq!(on_screen(&mut painter), rows);
        painter.term().backend_mut().resize(12, 4);
        let rows = page(3, 4, "small");
        draw_page(&mut painter, &rows);
        assert_eq!(on_screen(&mut painter), rows);
    }

    /// A row of cells from a small alphabet with wide characters and colours, so rows
    /// often agree in part.
    fn row(width: usize) -> impl Strategy<Value = Vec<(char, bool)>> {
        prop::collection::vec(
            (
                prop::sample::select(vec!['a', 'b', ' ', '世', '界']),
                any::<bool>(),
            ),
            width,
        )
    }

    fn render(rows: &[Vec<(char, bool)>], width: u16) -> Buffer {
        let mut buffer = Buffer::empty(Rect::new(0, 0, width, rows.len() as u16));
        for (y, row) in rows.iter().enumerate() {
            let mut x = 0;
            for &(symbol, red) in row {
                let style = if red {
                    Style::new().fg(Color::Red)
                } else {
                    Style::new()
                };
                let written = buffer.set_stringn(x, y as u16, symbol.to_string(), 1, style);
                x = written.0.max(x + 1);
                if x >= width {
                    break;
                }
            }
        }
        buffer
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Row by row, the cells listed are exactly those ratatui's diff of the whole
        /// frame would write (wide characters included).
        #[test]
        fn changed_cells_turn_the_old_frame_into_the_new_one(
            old in prop::collection::vec(row(8), 4),
            new in prop::collection::vec(row(8), 4),
        ) {
            let previous = render(&old, 8);
            let current = render(&new, 8);
            let changed = changed_cells(&previous, &current);
            let whole: Vec<(u16, u16)> =
                previous.diff(&current).into_iter().map(|(x, y, _)| (x, y)).collect();
            prop_assert_eq!(&changed, &whole);
        }
    }
}
