//! The agent's side of the session transcript: what it records, and what it restores.
//!
//! Most records follow from events (see [`record_of`]), so they are written where those
//! events are emitted; the turn loop adds the exact blocks of each model response,
//! which no event carries. A resumed conversation is rebuilt by replaying the recorded
//! changes through [`Conversation`]'s own rules, then repaired.

use std::sync::{Mutex, PoisonError};

use crate::provider::{Block, ToolResult, Usage};
use crate::session::{Record, Session, SessionWriter, UndoableTurn};

use super::conversation::Conversation;
use super::protocol::Event;
use crate::tools::Registry;

/// The session writer, shared by everything that emits events.
#[derive(Debug)]
pub(crate) struct Recorder {
    writer: Mutex<SessionWriter>,
}

impl Recorder {
    pub(crate) fn new(writer: SessionWriter) -> Self {
        Self {
            writer: Mutex::new(writer),
        }
    }

    /// Appends `record`. On the first failure (the writer reports only that one),
    /// returns the event that tells the user.
    pub(crate) fn append(&self, record: &Record) -> Option<Event> {
        let mut writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let error = writer.append(record).err()?;
        tracing::warn!(%error, "the session transcript cannot be saved");
        Some(Event::TranscriptUnsaved {
            path: writer.path().display().to_string(),
            reason: error.to_string(),
        })
    }
}

/// The record an event leaves in the transcript, if any.
pub(crate) fn record_of(event: &Event) -> Option<Record> {
    let record = match event {
        Event::UserMessageDelivered { text, .. } => Record::User { text: text.clone() },
        Event::ToolRunEnd {
            call_id,
            is_error,
            summary,
            output,
            ..
        } => Record::ToolResult {
            result: ToolResult {
                call_id: call_id.clone(),
                content: output.clone(),
                is_error: *is_error,
            },
            summary: summary.clone(),
        },
        Event::ApprovalClosed { call_id, decision } => Record::Approval {
            call_id: call_id.clone(),
            decision: decision.clone(),
        },
        Event::Usage { call, .. } => Record::Usage { usage: *call },
        Event::ModeChanged { mode } => Record::ModeChanged { mode: *mode },
        Event::TurnEnd { outcome, .. } => Record::TurnEnd {
            outcome: serde_json::to_value(outcome).unwrap_or_default(),
        },
        Event::ConversationCleared => Record::Cleared,
        Event::Undone { turns, .. } => Record::Undone {
            turns: turns.clone(),
        },
        // Streaming progress, display-only detail and the session's own notices change
        // nothing that a resume needs.
        _ => return None,
    };
    Some(record)
}

/// A recorded session made ready to continue: the conversation, the usage so far, and
/// the event that shows the front end what was restored.
pub(crate) struct Restored {
    pub(crate) conversation: Conversation,
    pub(crate) usage: Usage,
    pub(crate) event: Event,
    /// Turns started so far, and those whose changes can still be undone.
    pub(crate) turns: u32,
    pub(crate) undoable: Vec<UndoableTurn>,
}

/// `session` made ready to continue; `tools` describe its calls for the front end.
pub(crate) fn restore(session: Session, tools: &Registry) -> Restored {
    let conversation = Conversation::restore(session.changes);
    let calls = conversation
        .messages()
        .iter()
        .flat_map(|message| &message.content)
        .filter_map(|block| match block {
            Block::ToolCall(call) => {
                Some((call.id.clone(), tools.describe(&call.name, &call.arguments)))
            }
            _ => None,
        })
        .collect();
    let event = Event::ConversationRestored {
        session_id: session.header.id,
        messages: conversation.messages().to_vec(),
        summaries: session.summaries,
        calls,
    };
    Restored {
        conversation,
        usage: session.usage,
        event,
        turns: u32::try_from(session.turns).unwrap_or(u32::MAX),
        undoable: session.undoable,
    }
}
