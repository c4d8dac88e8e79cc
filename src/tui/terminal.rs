//! Owning the terminal: raw mode, the alternate screen (or an inline viewport),
//! bracketed paste, mouse reporting, and putting all of it back — on a normal exit, on
//! an error, on a panic, and around a child program such as `$EDITOR`.

use std::io::{self, BufWriter, Stdout, Write};
use std::rc::Rc;
use std::sync::{Mutex, PoisonError};
use std::thread::ThreadId;

use crossterm::event::{
    DisableBracketedPaste, DisableFocusChange, DisableMouseCapture, EnableBracketedPaste,
    EnableFocusChange, EnableMouseCapture, KeyboardEnhancementFlags, PopKeyboardEnhancementFlags,
    PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{
    BeginSynchronizedUpdate, EndSynchronizedUpdate, EnterAlternateScreen, LeaveAlternateScreen,
    disable_raw_mode, enable_raw_mode, supports_keyboard_enhancement,
};
use crossterm::{cursor, execute, queue};
use ratatui::backend::{Backend, ClearType, CrosstermBackend, WindowSize};
use ratatui::buffer::Cell;
use ratatui::layout::{Position, Size};
use ratatui::{Terminal, TerminalOptions, Viewport};

use super::painter::Painter;

pub type Term = Terminal<TrackedCursor>;

/// The crossterm backend, except that it never asks the terminal where the cursor is
/// or how big it is, and that a frame reaches the terminal in one write.
///
/// Asking where the cursor is means writing a query and reading the reply from stdin —
/// which the UI's input stream is reading too, so the reply is lost and the query fails
/// after a timeout. ratatui asks when it clears or resizes an inline viewport; this
/// backend answers with the last position it moved the cursor to, and queries the
/// terminal once, at start, before any input is read — only for an inline viewport: a
/// full screen is always drawn at explicit positions, so it skips the round trip.
///
/// ratatui asks for the size before every frame, which crossterm answers by opening
/// `/dev/tty`; the size is kept instead and read again when the terminal reports a
/// resize ([`TrackedCursor::resized`]).
///
/// Output is buffered, and between [`TrackedCursor::begin_frame`] and
/// [`TrackedCursor::end_frame`] every flush is held (ratatui's, and the ones crossterm
/// makes after moving or showing the cursor), so a whole frame (wrapped in a
/// synchronized update) is one write to the terminal.
pub struct TrackedCursor {
    inner: CrosstermBackend<FrameWriter>,
    /// Shared with the writer inside `inner`, which crossterm owns.
    held: Rc<std::cell::Cell<bool>>,
    cursor: Position,
    size: Size,
}

/// Buffered standard output whose flushes can be held back until a frame is complete.
struct FrameWriter {
    out: BufWriter<Stdout>,
    held: Rc<std::cell::Cell<bool>>,
}

impl Write for FrameWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.out.write(bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.held.get() {
            return Ok(());
        }
        self.out.flush()
    }
}

/// Room for a full frame of a large terminal in one write.
const FRAME_BUFFER_BYTES: usize = 256 * 1024;

impl TrackedCursor {
    fn new(inline: bool) -> io::Result<Self> {
        let (x, y) = if inline {
            crossterm::cursor::position()?
        } else {
            (0, 0)
        };
        let held = Rc::default();
        Ok(Self {
            inner: CrosstermBackend::new(FrameWriter {
                out: BufWriter::with_capacity(FRAME_BUFFER_BYTES, io::stdout()),
                held: Rc::clone(&held),
            }),
            held,
            cursor: Position { x, y },
            size: terminal_size()?,
        })
    }

    /// The terminal reported its new size.
    pub fn resized(&mut self, size: Size) {
        self.size = size;
    }

    /// Reads the terminal's size again (after a child program had the terminal).
    pub fn refresh_size(&mut self) -> io::Result<()> {
        self.size = terminal_size()?;
        Ok(())
    }

    /// Starts a frame: output waits until [`TrackedCursor::end_frame`].
    pub fn begin_frame(&mut self) -> io::Result<()> {
        self.held.set(true);
        queue!(self.inner, BeginSynchronizedUpdate)
    }

    /// Writes `bytes` (a notification) to the terminal now, between frames; they move
    /// no cursor and draw nothing.
    pub fn write_between_frames(&mut self, bytes: &[u8]) -> io::Result<()> {
        use std::io::Write as _;
        self.inner.write_all(bytes)?;
        Backend::flush(&mut self.inner)
    }

    /// Ends the frame and sends all of it.
    pub fn end_frame(&mut self) -> io::Result<()> {
        self.held.set(false);
        queue!(self.inner, EndSynchronizedUpdate)?;
        Backend::flush(&mut self.inner)
    }
}

fn terminal_size() -> io::Result<Size> {
    let (width, height) = crossterm::terminal::size()?;
    Ok(Size { width, height })
}

impl Backend for TrackedCursor {
    type Error = io::Error;

    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        self.inner.draw(content)
    }

    fn append_lines(&mut self, n: u16) -> io::Result<()> {
        self.inner.append_lines(n)
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
        let position = position.into();
        self.cursor = position;
        self.inner.set_cursor_position(position)
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
        self.inner.window_size()
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

/// How the UI occupies the terminal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Screen {
    /// Keep the terminal's own scrollback: finished output is printed above a small live
    /// viewport of this many rows instead of taking over the whole screen.
    pub inline_rows: Option<u16>,
    pub mouse: bool,
}

/// Restores the terminal when dropped.
pub struct TerminalGuard {
    screen: Screen,
    enhanced_keys: bool,
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        set_owner(None);
        restore(self.screen, self.enhanced_keys);
    }
}

/// The thread that draws the UI, while it owns the terminal.
static OWNER: Mutex<Option<ThreadId>> = Mutex::new(None);

fn set_owner(owner: Option<ThreadId>) {
    *OWNER.lock().unwrap_or_else(PoisonError::into_inner) = owner;
}

fn owner() -> Option<ThreadId> {
    *OWNER.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What a panic does to the terminal.
#[derive(Debug, PartialEq, Eq)]
enum OnPanic {
    /// The UI's own thread panicked: the terminal is put back before the message prints.
    RestoreAndPrint,
    /// Another thread (a tool's job, the agent) panicked while the UI goes on: the
    /// message goes to the log, since printing it would write over the screen the UI
    /// still draws (and restoring the terminal would take the screen from under it).
    Log,
    /// Nobody owns the terminal: the panic prints as usual.
    Print,
}

fn on_panic(owner: Option<ThreadId>, current: ThreadId) -> OnPanic {
    match owner {
        Some(owner) if owner == current => OnPanic::RestoreAndPrint,
        Some(_) => OnPanic::Log,
        None => OnPanic::Print,
    }
}

/// Takes over the terminal for the calling thread. Restoration is tied to the returned
/// guard; a panic hook installed here restores it too before the panic message prints,
/// when the panic is this thread's.
pub fn enter(screen: Screen) -> io::Result<(Term, TerminalGuard)> {
    enable_raw_mode()?;
    // Shift+Enter is only distinguishable where the terminal speaks the keyboard
    // enhancement protocol; elsewhere Alt+Enter is the newline key.
    let enhanced_keys = supports_keyboard_enhancement().unwrap_or(false);
    let guard = TerminalGuard {
        screen,
        enhanced_keys,
    };
    install_panic_hook(screen, enhanced_keys);
    set_owner(Some(std::thread::current().id()));
    let mut stdout = io::stdout();
    set_modes(&mut stdout, screen, enhanced_keys)?;
    let backend = TrackedCursor::new(screen.inline_rows.is_some())?;
    let viewport = match screen.inline_rows {
        Some(rows) => Viewport::Inline(rows),
        None => Viewport::Fullscreen,
    };
    let terminal = Terminal::with_options(backend, TerminalOptions { viewport })?;
    Ok((terminal, guard))
}

fn set_modes(out: &mut impl Write, screen: Screen, enhanced_keys: bool) -> io::Result<()> {
    if screen.inline_rows.is_none() {
        execute!(out, EnterAlternateScreen)?;
    }
    execute!(out, EnableBracketedPaste, EnableFocusChange)?;
    if screen.mouse {
        execute!(out, EnableMouseCapture)?;
    }
    if enhanced_keys {
        execute!(
            out,
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        )?;
    }
    Ok(())
}

/// Puts the terminal back as it was. Best effort: every step is tried even if an
/// earlier one fails, since a half-restored terminal is worse than a noisy one.
fn restore(screen: Screen, enhanced_keys: bool) {
    let mut out = io::stdout();
    if enhanced_keys {
        let _ = execute!(out, PopKeyboardEnhancementFlags);
    }
    if screen.mouse {
        let _ = execute!(out, DisableMouseCapture);
    }
    let _ = execute!(out, DisableBracketedPaste, DisableFocusChange);
    if screen.inline_rows.is_none() {
        let _ = execute!(out, LeaveAlternateScreen);
    }
    let _ = execute!(out, cursor::Show);
    let _ = disable_raw_mode();
}

fn install_panic_hook(screen: Screen, enhanced_keys: bool) {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        match on_panic(owner(), std::thread::current().id()) {
            OnPanic::RestoreAndPrint => {
                restore(screen, enhanced_keys);
                previous(info);
            }
            OnPanic::Log => {
                let thread = std::thread::current();
                let name = thread.name().unwrap_or("unnamed");
                tracing::error!(target: "duet::panic", thread = name, "{info}");
            }
            OnPanic::Print => previous(info),
        }
    }));
}

/// Hands the terminal to a child program (an editor) and takes it back afterwards.
pub fn suspend(guard: &TerminalGuard) {
    restore(guard.screen, guard.enhanced_keys);
}

pub fn resume(guard: &TerminalGuard, painter: &mut Painter) -> io::Result<()> {
    enable_raw_mode()?;
    set_modes(&mut io::stdout(), guard.screen, guard.enhanced_keys)?;
    painter.term().backend_mut().refresh_size()?;
    painter.clear()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_ui_threads_panic_takes_the_terminal_back_and_prints() {
        let ui = std::thread::current().id();
        let other = std::thread::spawn(|| std::thread::current().id())
            .join()
            .unwrap();
        assert_eq!(on_panic(Some(ui), ui), OnPanic::RestoreAndPrint);
        assert_eq!(on_panic(Some(ui), other), OnPanic::Log);
        assert_eq!(on_panic(None, other), OnPanic::Print);
    }
}
