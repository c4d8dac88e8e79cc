use tokio::sync::mpsc;

use super::protocol::Event;

/// Sends events to the front end. A front end that has gone away is not an error for
/// the agent: the work in flight still finishes and stays consistent.
#[derive(Clone, Debug)]
pub(crate) struct EventSink {
    sender: mpsc::Sender<Event>,
}

impl EventSink {
    pub(crate) fn new(sender: mpsc::Sender<Event>) -> Self {
        Self { sender }
    }

    pub(crate) async fn emit(&self, event: Event) {
        if self.sender.send(event).await.is_err() {
            tracing::debug!("event receiver dropped");
        }
    }
}
