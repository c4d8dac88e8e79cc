//! Putting frames on the terminal with as little output as the change allows.
//!
//! ratatui's `Terminal::draw` compares every cell of the new frame with the last one
//! and rewrites the ones that differ. While a model streams, the transcript gains a row
//! a few times a second and every row above it moves up by one: each cell then differs,
//! and the whole transcript is written again (a few kilobytes a frame, which the
//! terminal parses and repaints). Full-screen frames go through this painter instead:
//! when the view reports that a band of rows scrolled ([`Scroll`]), the terminal is
//! told to scroll that band itself (a scroll region: a few escape sequences), each row
//! of the new frame is compared with the row of the last frame it was scrolled from,
//! and only what still differs (the new rows) is written. Rows that did not change are
//! skipped with one comparison of the row, not a walk cell by cell.
//!
//! The copy of the last frame is this painter's own; an inline viewport keeps
//! ratatui's drawing, whose inserting of lines above the viewport relies on its own.

use std::ops::Range;

use ratatui::backend::Backend;
use ratatui::buffer::{Buffer, Cell};
use ratatui::layout::{Position, Rect};
use ratatui::{Frame, Terminal};

use super::terminal::TrackedCursor;

/// What a render produced besides the cells.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Drawn {
    /// Where the cursor should show; `None` hides it.
    pub cursor: Option<Position>,
    /// Rows whose content moved up since the last frame.
    pub scroll: Option<Scroll>,
}

/// A band of full-width screen rows whose content moved up by `lines` since the last
/// frame (the rows scrolled out at the top are gone, new ones came in at the bottom).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scroll {
    pub rows: Range<u16>,
    pub lines: u16,
}

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

    /// Renders a frame with `render` and writes what changed.
    pub fn draw(&mut self, render: impl FnOnce(&mut Frame) -> Drawn) -> Result<(), B::Error> {
        let Some(previous) = &mut self.previous else {
            self.term.draw(|frame| {
                if let Some(cursor) = render(frame).cursor {
                    frame.set_cursor_position(cursor);
                }
            })?;
            return Ok(());
        };
        // A changed size resizes the buffers (and clears the screen).
        self.term.autoresize()?;
        let area = self.term.get_frame().area();
        let known = previous.area == area;
        if !known {
            // Unknown or resized: start from a blank screen.
            self.term.clear()?;
            *previous = Buffer::empty(area);
        }
        let drawn = render(&mut self.term.get_frame());
        let current = std::mem::take(self.term.current_buffer_mut());
        // A scroll is only told to a screen whose rows are known to be the last frame's.
        let scroll = drawn
            .scroll
            .filter(|_| known)
            .and_then(|scroll| scroll.within(area));
        let written = write_frame(&mut self.term, previous, &current, scroll, drawn.cursor);
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

/// Scrolls the band that moved (when one did), writes the cells of `current` that
/// still differ from what the screen shows, then places the cursor.
fn write_frame<B: Backend>(
    term: &mut Terminal<B>,
    previous: &Buffer,
    current: &Buffer,
    scroll: Option<Scroll>,
    cursor: Option<Position>,
) -> Result<(), B::Error> {
    if let Some(scroll) = &scroll {
        term.backend_mut()
            .scroll_region_up(scroll.rows.clone(), scroll.lines)?;
    }
    let changed = changed_cells(previous, current, scroll.as_ref());
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

impl Scroll {
    /// The scroll clipped to `area`'s rows, if anything is left to scroll: a scroll of
    /// the whole band or more is no scroll (every row is new).
    fn within(&self, area: Rect) -> Option<Scroll> {
        let rows = self.rows.start.max(area.top())..self.rows.end.min(area.bottom());
        let height = rows.end.saturating_sub(rows.start);
        (self.lines > 0 && self.lines < height).then_some(Scroll {
            rows,
            lines: self.lines,
        })
    }
}

/// The positions whose cells must be written to turn the screen showing `previous`,
/// after `scroll` (when given) moved a band of it up, into `current` (same area), in
/// order. The scroll is not applied to `previous`: a row of the band is compared with
/// the row it came from, and rows that came in at the bottom with a blank row. Rows
/// that are equal are skipped whole; a row that differs is compared by ratatui's own
/// diff, which knows about wide characters.
fn changed_cells<'a>(
    previous: &'a Buffer,
    current: &'a Buffer,
    scroll: Option<&Scroll>,
) -> Vec<(u16, u16)> {
    let area = current.area;
    let width = usize::from(area.width);
    let mut changed = Vec::new();
    if width == 0 {
        return changed;
    }
    let blank = vec![Cell::EMPTY; width];
    let row_of = |buffer: &'a Buffer, y: u16| {
        let start = usize::from(y - area.y) * width;
        buffer.content.get(start..start + width)
    };
    // Rows that differ are copied into these one-row buffers for ratatui's diff; they
    // are allocated once per frame, not once per row.
    let mut before_row = Buffer::empty(Rect::new(area.x, area.y, area.width, 1));
    let mut after_row = before_row.clone();
    for y in area.top()..area.bottom() {
        let Some(after) = row_of(current, y) else {
            break;
        };
        let before = match scroll {
            Some(scroll) if scroll.rows.contains(&y) => {
                let source = y + scroll.lines;
                if source < scroll.rows.end {
                    row_of(previous, source)
                } else {
                    Some(blank.as_slice())
                }
            }
            _ => row_of(previous, y),
        };
        let Some(before) = before else {
            break;
        };
        if before == after {
            continue;
        }
        before_row.area.y = y;
        after_row.area.y = y;
        before_row.content.clone_from_slice(before);
        after_row.content.clone_from_slice(after);
        changed.extend(before_row.diff_iter(&after_row).map(|(x, y, _)| (x, y)));
    }
    changed
}

/// A backend that keeps the bytes crossterm would send to the terminal, for tests that
/// look at what a frame really writes (a `TestBackend` keeps cells, not bytes).
#[cfg(test)]
pub(crate) mod recording {
    use std::cell::RefCell;
    use std::io::{self, Write};
    use std::rc::Rc;

    use ratatui::backend::{Backend, ClearType, CrosstermBackend, WindowSize};
    use ratatui::buffer::Cell;
    use ratatui::layout::{Position, Size};

    pub(crate) struct Recording {
        inner: CrosstermBackend<Shared>,
        written: Rc<RefCell<Vec<u8>>>,
        size: Size,
        cursor: Position,
    }

    /// The writer crossterm owns, appending to a buffer the test can read.
    struct Shared(Rc<RefCell<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Recording {
        pub(crate) fn new(width: u16, height: u16) -> Self {
            let written = Rc::default();
            Self {
                inner: CrosstermBackend::new(Shared(Rc::clone(&written))),
                written,
                size: Size { width, height },
                cursor: Position::ORIGIN,
            }
        }

        /// Everything written so far.
        pub(crate) fn bytes(&self) -> Vec<u8> {
            self.written.borrow().clone()
        }
    }

    /// What in `bytes` is not the painter's own doing: control characters other than
    /// ESC, and escape sequences other than the CSIs crossterm draws with (cursor
    /// position `H`, colours and attributes `m`, cursor shown or hidden `?25h`/`?25l`,
    /// clearing the screen `J`, scroll regions `r`, scrolling `S`/`T`). An OSC (title,
    /// clipboard, link), a cursor movement or a line erase is foreign.
    pub(crate) fn foreign_control(bytes: &[u8]) -> Vec<String> {
        let mut found = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let byte = bytes[at];
            if byte == 0x1b {
                let rest = &bytes[at + 1..];
                let params = rest
                    .iter()
                    .skip(1)
                    .take_while(|b| b.is_ascii_digit() || **b == b';' || **b == b'?')
                    .count();
                let end = (1 + params + 1).min(rest.len());
                let sequence = &rest[..end];
                let allowed = sequence.first() == Some(&b'[')
                    && matches!(
                        sequence.last(),
                        Some(b'H' | b'm' | b'h' | b'l' | b'J' | b'r' | b'S' | b'T')
                    );
                if !allowed {
                    found.push(format!("ESC {}", String::from_utf8_lossy(sequence)));
                }
                at += 1 + end;
                continue;
            }
            let c1 = byte == 0xc2 && matches!(bytes.get(at + 1), Some(0x80..=0x9f));
            if byte < 0x20 || byte == 0x7f || c1 {
                found.push(format!("byte {byte:#04x} at {at}"));
            }
            at += 1;
        }
        found
    }

    impl Backend for Recording {
        type Error = io::Error;

        fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
        where
            I: Iterator<Item = (u16, u16, &'a Cell)>,
        {
            self.inner.draw(content)
        }

        fn hide_cursor(&mut self) -> io::Result<()> {
            self.inner.hide_cursor()
        }

        fn show_cursor(&mut self) -> io::Result<()> {
            self.inner.show_cursor()
        }

        fn get_cursor_position(&mut self) -> io::Result<Position> {
            Ok(self.cursor)
        }

        fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> io::Result<()> {
            self.cursor = position.into();
            self.inner.set_cursor_position(self.cursor)
        }

        fn clear(&mut self) -> io::Result<()> {
            self.inner.clear()
        }

        fn clear_region(&mut self, clear_type: ClearType) -> io::Result<()> {
            self.inner.clear_region(clear_type)
        }

        fn size(&self) -> io::Result<Size> {
            Ok(self.size)
        }

        fn window_size(&mut self) -> io::Result<WindowSize> {
            Ok(WindowSize {
                columns_rows: self.size,
                pixels: Size::default(),
            })
        }

        fn flush(&mut self) -> io::Result<()> {
            Backend::flush(&mut self.inner)
        }

        fn scroll_region_up(
            &mut self,
            region: std::ops::Range<u16>,
            line_count: u16,
        ) -> io::Result<()> {
            self.inner.scroll_region_up(region, line_count)
        }

        fn scroll_region_down(
            &mut self,
            region: std::ops::Range<u16>,
            line_count: u16,
        ) -> io::Result<()> {
            self.inner.scroll_region_down(region, line_count)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::recording::{Recording, foreign_control};
    use super::*;
    use proptest::prelude::*;
    use ratatui::backend::TestBackend;
    use ratatui::style::{Color, Style};
    use ratatui::text::Span;

    /// What ratatui itself does with control characters in a span, unsanitized: it
    /// drops every grapheme holding one (so the ESC byte never reaches the terminal),
    /// but the rest of a sequence is printed as text, and characters that join the
    /// grapheme before them (tag characters, ZWJ) are written through. Hence the
    /// sanitizing at the views' edges ([`crate::terminal_text`]): the payload goes and
    /// a placeholder shows that something was there.
    #[test]
    fn ratatui_drops_control_characters_but_not_what_follows_them() {
        let mut painter = Painter::new(Terminal::new(Recording::new(60, 3)).unwrap(), false);
        let hostile = "a\x1b]52;c;cm0=\x07b\x1b[1A\x1b[2Kc\u{9b}2Kd e\u{e0041}\u{e0042}";
        painter
            .draw(|frame| {
                frame.buffer_mut().set_span(0, 0, &Span::raw(hostile), 60);
                Drawn::default()
            })
            .unwrap();
        let bytes = painter.term().backend().bytes();
        assert_eq!(foreign_control(&bytes), Vec::<String>::new());
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            text.contains("]52;c;cm0="),
            "the payload is printed: {text:?}"
        );
        assert!(text.contains("[2Kc"), "{text:?}");
        assert!(text.contains("e\u{e0041}\u{e0042}"), "tags pass: {text:?}");
    }

    fn buffer(rows: &[&str]) -> Buffer {
        Buffer::with_lines(rows.iter().copied())
    }

    #[test]
    fn equal_rows_are_skipped_and_changed_cells_listed_in_order() {
        let previous = buffer(&["abcd", "efgh", "ijkl"]);
        let current = buffer(&["abcd", "eFgH", "ijkL"]);
        assert_eq!(
            changed_cells(&previous, &current, None),
            [(1, 1), (3, 1), (3, 2)]
        );
        assert_eq!(changed_cells(&current, &current, None), []);
    }

    #[test]
    fn after_a_scroll_rows_are_compared_with_where_they_came_from() {
        let previous = buffer(&["one ", "two ", "thr ", "stat"]);
        let current = buffer(&["two ", "thr ", "fou ", "stat"]);
        let scroll = Scroll {
            rows: 0..3,
            lines: 1,
        };
        let changed = changed_cells(&previous, &current, Some(&scroll));
        assert_eq!(changed, [(0, 2), (1, 2), (2, 2)], "only the new row");
        // The scrolled screen with those cells written is the new frame.
        let mut screen = buffer(&["two ", "thr ", "    ", "stat"]);
        for (x, y) in changed {
            screen[(x, y)] = current[(x, y)].clone();
        }
        assert_eq!(screen, current);
    }

    #[test]
    fn a_scroll_of_the_whole_band_or_outside_the_screen_is_none() {
        let area = Rect::new(0, 0, 10, 5);
        let scroll = |rows: Range<u16>, lines| Scroll { rows, lines }.within(area);
        assert_eq!(scroll(0..3, 3), None, "every row is new");
        assert_eq!(scroll(0..3, 0), None);
        assert_eq!(scroll(7..9, 1), None, "below the screen");
        assert_eq!(
            scroll(2..9, 1),
            Some(Scroll {
                rows: 2..5,
                lines: 1
            })
        );
    }

    /// A screen of `height` rows: lines `first..` above a status line.
    fn page(first: usize, height: u16, status: &str) -> Vec<String> {
        let mut rows: Vec<String> = (0..usize::from(height) - 1)
            .map(|row| format!("line {}", first + row))
            .collect();
        rows.push(status.to_string());
        rows
    }

    fn draw_page(painter: &mut Painter<TestBackend>, rows: &[String], scroll: Option<Scroll>) {
        painter
            .draw(|frame| {
                for (y, row) in (0..).zip(rows) {
                    frame.buffer_mut().set_string(0, y, row, Style::new());
                }
                Drawn {
                    cursor: Some(Position::new(1, 0)),
                    scroll,
                }
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
    fn frames_with_scrolls_leave_the_screen_exactly_as_rendered() {
        let mut painter = Painter::new(Terminal::new(TestBackend::new(12, 6)).unwrap(), false);
        let band = |lines| Some(Scroll { rows: 0..5, lines });
        let mut first = 0;
        // A first frame, scrolls of one and two lines, a status change with no scroll,
        // and a wrong hint (said to scroll, did not): the screen is right every time.
        for (step, (advance, scroll, status)) in [
            (0, None, "ready"),
            (1, band(1), "ready"),
            (2, band(2), "ready"),
            (0, None, "working"),
            (0, band(1), "working"),
            (4, band(4), "done"),
        ]
        .into_iter()
        .enumerate()
        {
            first += advance;
            let rows = page(first, 6, status);
            draw_page(&mut painter, &rows, scroll);
            assert_eq!(on_screen(&mut painter), rows, "frame {step}");
            let cursor = painter.term().backend_mut().get_cursor_position().unwrap();
            assert_eq!(cursor, Position::new(1, 0));
        }
    }

    #[test]
    fn a_cleared_or_resized_screen_is_drawn_whole() {
        let mut painter = Painter::new(Terminal::new(TestBackend::new(12, 6)).unwrap(), false);
        let rows = page(0, 6, "ready");
        draw_page(&mut painter, &rows, None);
        painter.clear().unwrap();
        draw_page(
            &mut painter,
            &rows,
            Some(Scroll {
                rows: 0..5,
                lines: 1,
            }),
        );
        assert_eq!(on_screen(&mut painter), rows);
        painter.term().backend_mut().resize(12, 4);
        let rows = page(3, 4, "small");
        draw_page(
            &mut painter,
            &rows,
            Some(Scroll {
                rows: 0..3,
                lines: 1,
            }),
        );
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
            let changed = changed_cells(&previous, &current, None);
            let whole: Vec<(u16, u16)> =
                previous.diff(&current).into_iter().map(|(x, y, _)| (x, y)).collect();
            prop_assert_eq!(&changed, &whole);
        }
    }
}
