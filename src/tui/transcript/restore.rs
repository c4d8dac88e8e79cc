//! A resumed session's conversation, shown with the cells live events make: user
//! messages, the model's text and collapsed thinking, and a finished card per tool call
//! with its result line.

use std::collections::BTreeMap;
use std::time::Instant;

use super::Transcript;
use super::cell::Cell;
use crate::provider::{Block, Message, Role};

impl Transcript {
    /// Shows `messages` as a finished conversation; `summaries` gives each tool result's
    /// one-line summary by call id (the result's first line stands in without one).
    pub(super) fn restore(
        &mut self,
        messages: &[Message],
        summaries: &BTreeMap<String, String>,
        now: Instant,
    ) {
        for message in messages {
            for block in &message.content {
                self.restore_block(message.role, block, summaries, now);
            }
        }
        self.end_step();
    }

    fn restore_block(
        &mut self,
        role: Role,
        block: &Block,
        summaries: &BTreeMap<String, String>,
        now: Instant,
    ) {
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
            Block::ToolCall(call) => {
                self.end_streams();
                let index = self.card_or_new(&call.id, &call.name, now);
                self.update_card_at(index, |card| card.ready(&call.name, &call.arguments));
            }
            Block::ToolResult(result) => {
                let summary = summaries
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
