//! Terminal input, read by a task of its own and handed to the event loop over a
//! channel.
//!
//! crossterm's `EventStream` checks the terminal (a lock and a `poll` system call) every
//! time it is polled, and the event loop's `select!` polls every branch each time the
//! loop wakes — about twice a frame while a model streams, with no key pressed. Behind a
//! task the stream is polled only when crossterm's reader thread reports input, and the
//! loop polls a channel instead.

use std::io;

use crossterm::event::{Event, EventStream};
use futures::StreamExt;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// The running input reader. [`Input::stop`] ends it before another program (the
/// user's editor) takes the terminal; a new one is started afterwards.
pub struct Input {
    events: mpsc::UnboundedReceiver<io::Result<Event>>,
    stop: oneshot::Sender<()>,
    reader: JoinHandle<()>,
}

impl Input {
    /// Starts reading on the current runtime.
    pub fn start() -> Self {
        let (events_tx, events) = mpsc::unbounded_channel();
        let (stop, stopped) = oneshot::channel();
        let reader = tokio::spawn(read(events_tx, stopped));
        Self {
            events,
            stop,
            reader,
        }
    }

    /// The next terminal event; `None` once the terminal is gone.
    pub async fn next(&mut self) -> Option<io::Result<Event>> {
        self.events.recv().await
    }

    /// Stops reading, and returns once crossterm no longer reads the terminal: keys
    /// typed from then on reach whoever owns the terminal next.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.reader.await;
    }
}

async fn read(
    events: mpsc::UnboundedSender<io::Result<Event>>,
    mut stopped: oneshot::Receiver<()>,
) {
    let mut stream = EventStream::new();
    loop {
        let event = tokio::select! {
            biased;
            _ = &mut stopped => return,
            event = stream.next() => event,
        };
        // The stream has ended, or failed (the terminal is gone); a closed channel
        // means the loop has ended. Nothing left to read for, either way.
        let Some(event) = event else { return };
        let failed = event.is_err();
        if events.send(event).is_err() || failed {
            return;
        }
    }
}
