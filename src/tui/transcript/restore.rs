//! A resumed session's conversation, shown with the cells live events make: user
//! messages, the model's text and collapsed thinking, and a finished card per tool call
//! with its result line.

use std::collections::BTreeMap;
use std::time::Instant;

use super::NoticeKind;
use super::Transcript;
use super::cell::Cell;
use crate::provider::{Block, Message, Role};
use crate::tools::CallInfo;

/// What a resumed session shows ([`crate::agent::Event::ConversationRestored`]).
pub(super) struct Restored<'a> {
    pub messages: &'a [Message],
    /// Each tool result's one-line summary by call id (the result's first line stands in
    /// without one).
    pub summaries: &'a BTreeMap<String, String>,
    /// What each tool call does, by call id (its tool's name stands in without one).
    pub calls: &'a BTreeMap<String, CallInfo>,
}

impl Transcript {
    /// Shows `restored` as a finished conversation.
    pub(super) fn restore(&mut self, restored: Restored<'_>, now: Instant) {
        for message in restored.messages {
            for block in &message.content {
                self.restore_block(message.role, block, &restored, now);
            }
        }
        self.end_step();
    }

    fn restore_block(&mut self, role: Role, block: &Block, restored: &Restored<'_>, now: Instant) {
        match block {
            Block::Text { text } if role == Role::User => {
                self.end_streams();
                let cell = Cell::user(text, &self.theme);
                self.push_cell(cell);
            }
            Block::Text { text } => {
                self.end_thinking();
                self.active_text().stream.push(text);
                self.end_text();
            }
            Block::Thinking { thinking, .. } => {
                self.thinking_delta(thinking);
                self.end_thinking();
            }
            Block::RedactedThinking { .. } | Block::ReasoningItem { .. } => {}
            Block::Image { media_type, .. } => {
                self.push_notice(&format!("image attached ({media_type})"), NoticeKind::Info);
            }
            Block::ToolCall(call) => {
                self.end_streams();
                let index = self.card_or_new(&call.id, &call.name, now);
                let summary = restored
                    .calls
                    .get(&call.id)
                    .map_or(call.name.as_str(), |info| info.summary.as_str());
                self.update_card_at(index, |card| card.ready(&call.name, summary));
            }
            Block::ToolResult(result) => {
                let summary = restored
                    .summaries
                    .get(&result.call_id)
                    .map_or_else(|| first_line(&result.content), String::clone);
                self.run_end(
                    &result.call_id,
                    result.is_error,
                    &summary,
                    &result.content,
                    now,
                );
            }
        }
    }
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().to_string()
}
