//! The conversation the agent sends to the model, and the assistant message being
//! streamed into it.
//!
//! Invariant: after every step, each tool call in an assistant message is answered by
//! exactly one result in the user message right after it, and every result answers a
//! call. [`Conversation::check_pairing`] verifies it; the step code keeps it by
//! construction, including after interrupts and failures.

use std::collections::HashSet;

use crate::provider::{Block, Message, Role, ToolCall, ToolResult};

#[derive(Clone, Debug, Default)]
pub(crate) struct Conversation {
    messages: Vec<Message>,
}

impl Conversation {
    pub(crate) fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Adds user text. Text that follows tool results joins their message, so the model
    /// reads a steering message right after the results it was typed during.
    pub(crate) fn push_user_text(&mut self, text: String) {
        let block = Block::Text { text };
        match self.messages.last_mut() {
            Some(last) if last.role == Role::User => last.content.push(block),
            _ => self.messages.push(Message {
                role: Role::User,
                content: vec![block],
            }),
        }
    }

    /// Records one model response and the answers to its tool calls. An empty response
    /// (interrupted before any output) leaves no trace.
    pub(crate) fn push_step(&mut self, assistant: Vec<Block>, results: Vec<ToolResult>) {
        if assistant.is_empty() {
            return;
        }
        self.messages.push(Message {
            role: Role::Assistant,
            content: assistant,
        });
        if !results.is_empty() {
            self.messages.push(Message {
                role: Role::User,
                content: results.into_iter().map(Block::ToolResult).collect(),
            });
        }
    }

    /// The calls of the latest assistant message and the results that answered them
    /// (empty when the conversation does not end with a step that called tools).
    pub(crate) fn last_exchange(&self) -> (Vec<&ToolCall>, Vec<&ToolResult>) {
        match self.messages.as_slice() {
            [.., call, answer] if call.role == Role::Assistant && answer.role == Role::User => {
                (call.tool_calls().collect(), answer.tool_results().collect())
            }
            _ => (Vec::new(), Vec::new()),
        }
    }

    /// The model's most recent text, if it wrote any.
    pub(crate) fn last_assistant_text(&self) -> Option<&str> {
        self.messages
            .iter()
            .rev()
            .filter(|message| message.role == Role::Assistant)
            .flat_map(|message| message.content.iter().rev())
            .find_map(|block| match block {
                Block::Text { text } if !text.trim().is_empty() => Some(text.as_str()),
                _ => None,
            })
    }

    /// Checks the call/result pairing invariant; the error names the first offender.
    pub(crate) fn check_pairing(&self) -> Result<(), String> {
        let mut open: Vec<String> = Vec::new();
        for (index, message) in self.messages.iter().enumerate() {
            let mut answered = HashSet::new();
            for result in message.tool_results() {
                if !open.contains(&result.call_id) {
                    return Err(format!(
                        "message {index}: result for `{}` answers no call of the previous message",
                        result.call_id
                    ));
                }
                if !answered.insert(result.call_id.clone()) {
                    return Err(format!(
                        "message {index}: call `{}` answered twice",
                        result.call_id
                    ));
                }
            }
            if let Some(unanswered) = open.iter().find(|id| !answered.contains(*id)) {
                return Err(format!(
                    "message {index}: call `{unanswered}` has no result"
                ));
            }
            open = message.tool_calls().map(|call| call.id.clone()).collect();
        }
        match open.first() {
            Some(id) => Err(format!("the last message's call `{id}` has no result")),
            None => Ok(()),
        }
    }
}

/// The assistant message as it streams in. Only complete parts enter it: a tool call is
/// added when its arguments are complete, so an interrupted call never reaches the
/// conversation.
#[derive(Debug, Default)]
pub(crate) struct AssistantDraft {
    blocks: Vec<Block>,
    call_ids: HashSet<String>,
}

impl AssistantDraft {
    pub(crate) fn push_text(&mut self, delta: &str) {
        if let Some(Block::Text { text }) = self.blocks.last_mut() {
            text.push_str(delta);
        } else {
            self.blocks.push(Block::Text {
                text: delta.to_string(),
            });
        }
    }

    pub(crate) fn push_thinking(&mut self, delta: &str) {
        match self.blocks.last_mut() {
            Some(Block::Thinking {
                thinking,
                signature: None,
            }) => thinking.push_str(delta),
            _ => self.blocks.push(Block::Thinking {
                thinking: delta.to_string(),
                signature: None,
            }),
        }
    }

    pub(crate) fn sign_thinking(&mut self, value: String) {
        if let Some(Block::Thinking { signature, .. }) = self.blocks.last_mut() {
            *signature = Some(value);
        }
    }

    pub(crate) fn push_redacted_thinking(&mut self, data: String) {
        self.blocks.push(Block::RedactedThinking { data });
    }

    /// Adds a complete call. A duplicate id (a misbehaving server) gets a suffix so the
    /// call and its result still pair one to one; the returned call carries the id used.
    pub(crate) fn push_call(&mut self, mut call: ToolCall) -> ToolCall {
        let base = call.id.clone();
        let mut n = 2;
        while !self.call_ids.insert(call.id.clone()) {
            call.id = format!("{base}_{n}");
            n += 1;
        }
        self.blocks.push(Block::ToolCall(call.clone()));
        call
    }

    pub(crate) fn into_blocks(self) -> Vec<Block> {
        self.blocks
            .into_iter()
            .filter(|block| !matches!(block, Block::Text { text } if text.is_empty()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "read".into(),
            arguments: "{}".into(),
        }
    }

    fn result(id: &str) -> ToolResult {
        ToolResult {
            call_id: id.into(),
            content: "ok".into(),
            is_error: false,
        }
    }

    #[test]
    fn draft_merges_deltas_and_keeps_block_order() {
        let mut draft = AssistantDraft::default();
        draft.push_thinking("hm");
        draft.push_thinking("m");
        draft.sign_thinking("sig".into());
        draft.push_text("Hel");
        draft.push_text("lo");
        draft.push_call(call("a"));
        draft.push_text("after");
        assert_eq!(
            draft.into_blocks(),
            vec![
                Block::Thinking {
                    thinking: "hmm".into(),
                    signature: Some("sig".into())
                },
                Block::Text {
                    text: "Hello".into()
                },
                Block::ToolCall(call("a")),
                Block::Text {
                    text: "after".into()
                },
            ]
        );
    }

    #[test]
    fn duplicate_call_ids_are_made_unique() {
        let mut draft = AssistantDraft::default();
        assert_eq!(draft.push_call(call("x")).id, "x");
        assert_eq!(draft.push_call(call("x")).id, "x_2");
        assert_eq!(draft.push_call(call("x")).id, "x_3");
    }

    #[test]
    fn steering_text_joins_the_tool_results() {
        let mut conversation = Conversation::default();
        conversation.push_user_text("task".into());
        conversation.push_step(vec![Block::ToolCall(call("a"))], vec![result("a")]);
        conversation.push_user_text("also do X".into());
        let last = conversation.messages().last().unwrap();
        assert_eq!(last.role, Role::User);
        assert_eq!(last.content.len(), 2);
        assert_eq!(conversation.check_pairing(), Ok(()));
    }

    #[test]
    fn empty_response_leaves_no_message() {
        let mut conversation = Conversation::default();
        conversation.push_user_text("task".into());
        conversation.push_step(Vec::new(), Vec::new());
        assert_eq!(conversation.messages().len(), 1);
    }

    #[test]
    fn pairing_check_finds_each_kind_of_break() {
        let mut missing = Conversation::default();
        missing.push_user_text("t".into());
        missing.push_step(vec![Block::ToolCall(call("a"))], Vec::new());
        assert!(missing.check_pairing().is_err());

        let mut orphan = Conversation::default();
        orphan.push_user_text("t".into());
        orphan.push_step(vec![Block::ToolCall(call("a"))], vec![result("b")]);
        assert!(orphan.check_pairing().is_err());

        let mut twice = Conversation::default();
        twice.push_user_text("t".into());
        twice.push_step(
            vec![Block::ToolCall(call("a"))],
            vec![result("a"), result("a")],
        );
        assert!(twice.check_pairing().is_err());
    }

    #[test]
    fn last_exchange_is_the_latest_calls_and_their_results() {
        let mut conversation = Conversation::default();
        conversation.push_user_text("t".into());
        assert_eq!(conversation.last_exchange(), (Vec::new(), Vec::new()));
        conversation.push_step(
            vec![
                Block::Text {
                    text: "Reading.".into(),
                },
                Block::ToolCall(call("a")),
            ],
            vec![result("a")],
        );
        let (calls, results) = conversation.last_exchange();
        assert_eq!(calls, vec![&call("a")]);
        assert_eq!(results, vec![&result("a")]);
        assert_eq!(conversation.last_assistant_text(), Some("Reading."));
        conversation.push_step(
            vec![Block::Text {
                text: "Done.".into(),
            }],
            Vec::new(),
        );
        assert_eq!(conversation.last_exchange(), (Vec::new(), Vec::new()));
        assert_eq!(conversation.last_assistant_text(), Some("Done."));
    }
}
