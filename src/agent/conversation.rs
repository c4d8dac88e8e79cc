//! The conversation the agent sends to the model, and the assistant message being
//! streamed into it.
//!
//! Invariant: after every step, each tool call in an assistant message is answered by
//! exactly one result in the user message right after it, and every result answers a
//! call. [`Conversation::check_pairing`] verifies it; the step code keeps it by
//! construction, including after interrupts and failures. A conversation restored from
//! a transcript may break it (the process was killed between a call and its result), so
//! [`Conversation::repair`] runs before every request and mends what the APIs reject.

use std::collections::HashSet;

use crate::provider::{Block, Message, Role, ToolCall, ToolResult};
use crate::session::Change;

/// The answer given to a call whose result was never recorded.
const NO_RESULT_RECORDED: &str = "interrupted: no result was recorded (duet stopped while \
    this call ran, so it may have partly run; check before repeating it)";

#[derive(Clone, Debug, Default)]
pub(crate) struct Conversation {
    messages: Vec<Message>,
}

impl Conversation {
    /// Rebuilds a recorded conversation with the rules that built it, then repairs it.
    pub(crate) fn restore(changes: Vec<Change>) -> Self {
        let mut conversation = Self::default();
        for change in changes {
            match change {
                Change::User(text) => conversation.push_user_text(text),
                Change::UserImage(image) => conversation.push_user_block(image),
                Change::Step { assistant, results } => conversation.push_step(assistant, results),
                Change::Compacted(messages) => conversation.messages = messages,
            }
        }
        conversation.repair();
        conversation
    }

    pub(crate) fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Replaces the whole conversation (by its compaction, which keeps the pairing
    /// invariant).
    pub(crate) fn replace(&mut self, messages: Vec<Message>) {
        self.messages = messages;
    }

    /// Adds user text. Text that follows tool results joins their message, so the model
    /// reads a steering message right after the results it was typed during.
    pub(crate) fn push_user_text(&mut self, text: String) {
        self.push_user_block(Block::Text { text });
    }

    /// Adds a block (text, an image) to the user message being written.
    pub(crate) fn push_user_block(&mut self, block: Block) {
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

    /// Mends what the model APIs reject, logging each repair; returns how many were
    /// made (none for a conversation built live). Empty messages are dropped, adjacent
    /// messages of one role merged, results that answer no call of the message before
    /// (or answer one twice) dropped, and calls without a result answered with an
    /// error saying none was recorded. Results lead their message, as Anthropic requires.
    pub(crate) fn repair(&mut self) -> usize {
        let mut repairs = self.drop_empty_messages();
        repairs += self.merge_same_role();
        self.give_calls_a_reply();
        repairs += self.pair_results();
        // Dropping orphan results may empty a message and make its neighbours adjacent.
        repairs += self.drop_empty_messages();
        repairs + self.merge_same_role()
    }

    fn drop_empty_messages(&mut self) -> usize {
        let before = self.messages.len();
        self.messages.retain(|message| {
            if message.content.is_empty() {
                tracing::warn!(role = ?message.role, "repair: dropping an empty message");
            }
            !message.content.is_empty()
        });
        before - self.messages.len()
    }

    fn merge_same_role(&mut self) -> usize {
        let mut repairs = 0;
        let mut merged: Vec<Message> = Vec::with_capacity(self.messages.len());
        for message in std::mem::take(&mut self.messages) {
            let index = merged.len();
            match merged.last_mut() {
                Some(last) if last.role == message.role => {
                    tracing::warn!(
                        role = ?message.role,
                        index,
                        "repair: merging consecutive messages of one role"
                    );
                    last.content.extend(message.content);
                    repairs += 1;
                }
                _ => merged.push(message),
            }
        }
        self.messages = merged;
        repairs
    }

    /// Puts an (empty) user message after every assistant message with calls that has
    /// none, for [`Self::pair_results`] to fill.
    fn give_calls_a_reply(&mut self) {
        let mut index = 0;
        while index < self.messages.len() {
            let calls = self.messages[index].tool_calls().next().is_some();
            let replied = self
                .messages
                .get(index + 1)
                .is_some_and(|next| next.role == Role::User);
            if calls && !replied {
                self.messages.insert(
                    index + 1,
                    Message {
                        role: Role::User,
                        content: Vec::new(),
                    },
                );
            }
            index += 1;
        }
    }

    fn pair_results(&mut self) -> usize {
        let mut repairs = 0;
        let mut open: Vec<String> = Vec::new();
        for (index, message) in self.messages.iter_mut().enumerate() {
            if message.role == Role::User {
                repairs += answer_exactly(message, &open, index);
            }
            open = message.tool_calls().map(|call| call.id.clone()).collect();
        }
        repairs
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

/// Makes `message` (at `index`) answer each call of `open` exactly once, results first.
fn answer_exactly(message: &mut Message, open: &[String], index: usize) -> usize {
    let mut repairs = 0;
    let mut answered = HashSet::new();
    let mut results = Vec::new();
    let mut others = Vec::new();
    let mut out_of_order = false;
    for block in std::mem::take(&mut message.content) {
        match block {
            Block::ToolResult(result) => {
                let call_id = result.call_id.clone();
                if !open.contains(&call_id) {
                    tracing::warn!(
                        index,
                        call_id,
                        "repair: dropping a result that answers no call"
                    );
                    repairs += 1;
                } else if !answered.insert(call_id.clone()) {
                    tracing::warn!(
                        index,
                        call_id,
                        "repair: dropping a second result for a call"
                    );
                    repairs += 1;
                } else {
                    out_of_order |= !others.is_empty();
                    results.push(Block::ToolResult(result));
                }
            }
            other => others.push(other),
        }
    }
    for call_id in open.iter().filter(|id| !answered.contains(*id)) {
        tracing::warn!(
            index,
            call_id,
            "repair: answering a call that has no recorded result"
        );
        results.push(Block::ToolResult(ToolResult {
            call_id: call_id.clone(),
            content: NO_RESULT_RECORDED.to_string(),
            is_error: true,
        }));
        repairs += 1;
    }
    if out_of_order {
        tracing::warn!(
            index,
            "repair: moving tool results before the text they followed"
        );
        repairs += 1;
    }
    results.extend(others);
    message.content = results;
    repairs
}

/// The assistant message as it streams in. Only complete parts enter it: a tool call is
/// added when its arguments are complete, so an interrupted call never reaches the
/// conversation.
#[derive(Debug, Default)]
pub(crate) struct AssistantDraft {
    blocks: Vec<Block>,
    call_ids: HashSet<String>,
    /// Blocks already handed out by [`Self::take_settled`].
    settled: usize,
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

    pub(crate) fn push_reasoning_item(&mut self, item: serde_json::Value) {
        self.blocks.push(Block::ReasoningItem { item });
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

    /// The blocks that became final since the last call, for the transcript: everything
    /// up to the last tool call (a call is complete when added, and nothing before it
    /// changes afterwards).
    pub(crate) fn take_settled(&mut self) -> Vec<Block> {
        let end = self
            .blocks
            .iter()
            .rposition(|block| matches!(block, Block::ToolCall(_)))
            .map_or(self.settled, |last_call| last_call + 1)
            .max(self.settled);
        let settled = self.blocks[self.settled..end]
            .iter()
            .filter(|block| !is_empty_text(block))
            .cloned()
            .collect();
        self.settled = end;
        settled
    }

    pub(crate) fn into_blocks(self) -> Vec<Block> {
        self.blocks
            .into_iter()
            .filter(|block| !is_empty_text(block))
            .collect()
    }
}

fn is_empty_text(block: &Block) -> bool {
    matches!(block, Block::Text { text } if text.is_empty())
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

    fn message(role: Role, content: Vec<Block>) -> Message {
        Message { role, content }
    }

    fn text(text: &str) -> Block {
        Block::Text { text: text.into() }
    }

    fn no_result(id: &str) -> Block {
        Block::ToolResult(ToolResult {
            call_id: id.into(),
            content: NO_RESULT_RECORDED.into(),
            is_error: true,
        })
    }

    /// Repairs `messages`, checks the result pairs, and that a second repair finds nothing.
    fn repaired(messages: Vec<Message>) -> (Vec<Message>, usize) {
        let mut conversation = Conversation { messages };
        let repairs = conversation.repair();
        assert_eq!(conversation.check_pairing(), Ok(()));
        assert_eq!(conversation.repair(), 0, "repair is not idempotent");
        (conversation.messages, repairs)
    }

    #[test]
    fn a_live_conversation_needs_no_repair() {
        let mut conversation = Conversation::default();
        conversation.push_user_text("task".into());
        conversation.push_step(
            vec![text("Reading."), Block::ToolCall(call("a"))],
            vec![result("a")],
        );
        conversation.push_user_text("steer".into());
        conversation.push_step(vec![text("Done.")], Vec::new());
        let before = conversation.messages().to_vec();
        assert_eq!(conversation.repair(), 0);
        assert_eq!(conversation.messages(), before);
    }

    #[test]
    fn a_call_without_a_result_is_answered_as_interrupted() {
        let (messages, repairs) = repaired(vec![
            Message::user_text("task"),
            message(
                Role::Assistant,
                vec![Block::ToolCall(call("a")), Block::ToolCall(call("b"))],
            ),
            message(
                Role::User,
                vec![Block::ToolResult(result("a")), text("go on")],
            ),
            message(Role::Assistant, vec![Block::ToolCall(call("c"))]),
        ]);
        assert_eq!(repairs, 2);
        assert_eq!(
            messages[2].content,
            vec![
                Block::ToolResult(result("a")),
                no_result("b"),
                text("go on")
            ]
        );
        assert_eq!(messages[4], message(Role::User, vec![no_result("c")]));
    }

    #[test]
    fn an_orphan_result_is_dropped_and_its_emptied_message_with_it() {
        let (messages, repairs) = repaired(vec![
            Message::user_text("task"),
            message(Role::Assistant, vec![text("Thinking aloud.")]),
            message(Role::User, vec![Block::ToolResult(result("ghost"))]),
            message(Role::Assistant, vec![text("Done.")]),
        ]);
        // Dropped result, dropped empty message, merged assistants.
        assert_eq!(repairs, 3);
        assert_eq!(
            messages,
            vec![
                Message::user_text("task"),
                message(
                    Role::Assistant,
                    vec![text("Thinking aloud."), text("Done.")]
                ),
            ]
        );
    }

    #[test]
    fn a_second_result_for_one_call_is_dropped() {
        let (messages, repairs) = repaired(vec![
            Message::user_text("task"),
            message(Role::Assistant, vec![Block::ToolCall(call("a"))]),
            message(
                Role::User,
                vec![
                    Block::ToolResult(result("a")),
                    Block::ToolResult(ToolResult {
                        content: "again".into(),
                        ..result("a")
                    }),
                ],
            ),
        ]);
        assert_eq!(repairs, 1);
        assert_eq!(messages[2].content, vec![Block::ToolResult(result("a"))]);
    }

    #[test]
    fn consecutive_messages_of_one_role_are_merged() {
        let (messages, repairs) = repaired(vec![
            Message::user_text("one"),
            Message::user_text("two"),
            message(Role::Assistant, vec![Block::ToolCall(call("a"))]),
            message(Role::Assistant, vec![text("and more")]),
            message(Role::User, vec![Block::ToolResult(result("a"))]),
        ]);
        assert_eq!(repairs, 2);
        assert_eq!(
            messages,
            vec![
                message(Role::User, vec![text("one"), text("two")]),
                message(
                    Role::Assistant,
                    vec![Block::ToolCall(call("a")), text("and more")]
                ),
                message(Role::User, vec![Block::ToolResult(result("a"))]),
            ]
        );
    }

    #[test]
    fn results_are_moved_before_the_text_of_their_message() {
        let (messages, repairs) = repaired(vec![
            Message::user_text("task"),
            message(Role::Assistant, vec![Block::ToolCall(call("a"))]),
            message(
                Role::User,
                vec![text("hurry"), Block::ToolResult(result("a"))],
            ),
        ]);
        assert_eq!(repairs, 1);
        assert_eq!(
            messages[2].content,
            vec![Block::ToolResult(result("a")), text("hurry")]
        );
    }

    #[test]
    fn empty_messages_are_dropped() {
        let (messages, repairs) = repaired(vec![
            Message::user_text("task"),
            message(Role::Assistant, Vec::new()),
        ]);
        assert_eq!(repairs, 1);
        assert_eq!(messages, vec![Message::user_text("task")]);
    }

    #[test]
    fn restore_replays_with_the_live_rules_and_answers_a_cut_step() {
        let mut live = Conversation::default();
        live.push_user_text("task".into());
        live.push_step(
            vec![text("Reading."), Block::ToolCall(call("a"))],
            vec![result("a")],
        );
        live.push_user_text("steer".into());
        live.push_step(vec![text("Done.")], Vec::new());
        let restored = Conversation::restore(vec![
            Change::User("task".into()),
            Change::Step {
                assistant: vec![text("Reading."), Block::ToolCall(call("a"))],
                results: vec![result("a")],
            },
            Change::User("steer".into()),
            Change::Step {
                assistant: vec![text("Done.")],
                results: Vec::new(),
            },
        ]);
        assert_eq!(restored.messages(), live.messages());

        let compacted = Conversation::restore(vec![
            Change::User("old".into()),
            Change::Compacted(vec![Message::user_text("Summary.")]),
            Change::Step {
                assistant: vec![text("Done.")],
                results: Vec::new(),
            },
        ]);
        assert_eq!(
            compacted.messages(),
            &[
                Message::user_text("Summary."),
                Message {
                    role: Role::Assistant,
                    content: vec![text("Done.")],
                },
            ]
        );

        let mut cut = Conversation::restore(vec![
            Change::User("task".into()),
            Change::Step {
                assistant: vec![Block::ToolCall(call("a"))],
                results: Vec::new(),
            },
        ]);
        cut.push_user_text("continue".into());
        assert_eq!(cut.check_pairing(), Ok(()));
        assert_eq!(
            cut.messages().last().unwrap().content,
            vec![no_result("a"), text("continue")]
        );
    }

    #[test]
    fn settled_blocks_are_handed_out_once_up_to_the_last_call() {
        let mut draft = AssistantDraft::default();
        draft.push_thinking("hm");
        draft.sign_thinking("sig".into());
        draft.push_text("Reading.");
        draft.push_call(call("a"));
        let first = draft.take_settled();
        assert_eq!(
            first,
            vec![
                Block::Thinking {
                    thinking: "hm".into(),
                    signature: Some("sig".into())
                },
                text("Reading."),
                Block::ToolCall(call("a")),
            ]
        );
        draft.push_text("Then ");
        assert_eq!(draft.take_settled(), Vec::new());
        draft.push_call(call("b"));
        assert_eq!(
            draft.take_settled(),
            vec![text("Then "), Block::ToolCall(call("b"))]
        );
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
