use std::sync::Arc;

use tokio::sync::mpsc;

use super::protocol::Event;
use super::recording::{Recorder, record_of};
use crate::session::{Record, SessionWriter};

/// Sends events to the front end, and appends what they record to the session
/// transcript first (so whatever a front end has seen is on disk). A front end that has
/// gone away is not an error for the agent: the work in flight still finishes and
/// stays consistent.
#[derive(Clone, Debug)]
pub(crate) struct EventSink {
    sender: mpsc::Sender<Event>,
    recorder: Option<Arc<Recorder>>,
}

impl EventSink {
    pub(crate) fn new(sender: mpsc::Sender<Event>) -> Self {
        Self {
            sender,
            recorder: None,
        }
    }

    /// Records the session with `writer` from now on.
    pub(crate) fn recording(self, writer: SessionWriter) -> Self {
        Self {
            recorder: Some(Arc::new(Recorder::new(writer))),
            ..self
        }
    }

    pub(crate) async fn emit(&self, event: Event) {
        if let Some(record) = record_of(&event) {
            self.record(record).await;
        }
        self.send(event).await;
    }

    /// Appends a record no event carries (the exact blocks of a model response).
    pub(crate) async fn record(&self, record: Record) {
        let Some(recorder) = &self.recorder else {
            return;
        };
        if let Some(warning) = recorder.append(&record) {
            self.send(warning).await;
        }
    }

    async fn send(&self, event: Event) {
        if self.sender.send(event).await.is_err() {
            tracing::debug!("event receiver dropped");
        }
    }
}
