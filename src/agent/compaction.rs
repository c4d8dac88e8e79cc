//! Compacting a conversation that fills the model's context window.
//!
//! Owns: deciding when to compact (the last call's prompt against the configured
//! threshold), pruning older tool results, the summary request and splicing its answer
//! into the conversation, and the breaker that stops compacting after a failure.
//! Does not own: the settings (`config::Compaction`), the wire format of the summary
//! call (`provider/`), or the transcript format (`session/`).
//! Invariant: compaction replaces whole exchanges, never half of one — a pruned result
//! keeps its call id, and a summary replaces every message before an assistant message —
//! and it never touches the newest `keep_recent_steps` model calls. So the pairing of
//! calls and results holds, and the signed thinking Anthropic wants back (that of the
//! tool loop in progress) stays in place; summarised turns take their thinking with them.

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;

use crate::config::{Compaction, ModelInfo};
use crate::provider::{Block, Message, ModelClient, ModelRequest, Role, StreamEvent, Usage};
use crate::session::Record;

use super::nested_instructions::NestedInstructions;
use super::notes_file;
use super::protocol::{CompactionKind, Event};
use super::session::Agent;
use super::step::StepEnd;

/// How a pruned result begins, so it is never pruned twice.
const PRUNED_PREFIX: &str = "[pruned to save context: ";

/// The system prompt of the summary call.
const SUMMARY_SYSTEM: &str = include_str!("../../assets/summary_system.md");

/// What the summary call asks for, after the conversation it summarises.
const SUMMARY_INSTRUCTIONS: &str = include_str!("../../assets/summary_request.md");

/// Leads the user message that replaces the summarised turns.
const SUMMARY_HEADER: &str =
    "[The earlier part of this conversation was summarised to save context.]\n\n";

/// The most characters of one block the summary request quotes: enough to know what a
/// result said, while a conversation that filled the window still fits in one request.
const QUOTE_LIMIT: usize = 2_000;

/// The longest start of a result a pruning note keeps.
const NOTE_START_LIMIT: usize = 80;

/// The rough size of a token, for estimates of text not yet sent.
const CHARS_PER_TOKEN: usize = 4;

/// When to compact, and whether compacting still may happen in this session.
#[derive(Debug)]
pub(crate) struct Compactor {
    settings: Compaction,
    /// The prompt of the last model call, until compaction has looked at it.
    last_prompt_tokens: Option<u64>,
    /// A summary failed: no more compaction in this session.
    tripped: bool,
}

impl Compactor {
    pub(crate) fn new(settings: Compaction) -> Self {
        Self {
            settings,
            last_prompt_tokens: None,
            tripped: false,
        }
    }

    /// Notes the usage of a model call; its prompt decides the next compaction.
    pub(crate) fn observe(&mut self, usage: &Usage) {
        self.last_prompt_tokens = Some(usage.prompt_tokens());
    }

    /// The threshold and the last prompt, when that prompt reached it. Each prompt is
    /// looked at once: the next call's usage tells whether compaction was enough.
    fn take_due(&mut self, model: &ModelInfo) -> Option<(u64, u64)> {
        let prompt = self.last_prompt_tokens.take()?;
        let threshold = self.settings.threshold(model)?;
        (!self.tripped && prompt >= threshold).then_some((threshold, prompt))
    }
}

/// How a compaction went.
enum Compacting {
    /// `compacted`: the conversation is smaller (pruned, summarised or both).
    Done { compacted: bool },
    /// The user interrupted or shut down the agent during the summary call.
    Cancelled(StepEnd),
    /// The summary failed (pruning may have happened); the reason, for the user.
    Failed(String),
}

/// Why a summary did not replace the older turns.
enum SummaryFailure {
    /// The user interrupted or shut down the agent meanwhile.
    Cancelled(StepEnd),
    Failed(String),
}

impl Agent {
    /// Compacts the conversation before the next model call if the last call's prompt
    /// reached the threshold: first prunes older tool results, then, if the estimate is
    /// still above the threshold, has the model summarise the older turns. Returns how
    /// the turn ends when the user interrupted the summary call.
    pub(super) async fn compact_if_due(&mut self) -> Option<StepEnd> {
        let (threshold, prompt) = self.compaction.take_due(&self.model_info)?;
        match self.compact(Some(threshold), prompt, None).await {
            Compacting::Cancelled(end) => Some(end),
            Compacting::Done { .. } => None,
            Compacting::Failed(reason) => {
                tracing::warn!(%reason, "compaction failed; off for this session");
                self.compaction.tripped = true;
                self.events.emit(Event::CompactionFailed { reason }).await;
                None
            }
        }
    }

    /// `/compact [focus]`: compacts now, whatever the context's fill, with the summary
    /// giving weight to `focus`. A failure here leaves automatic compaction on. Returns
    /// how a summary call the user interrupted ended things.
    pub(super) async fn compact_now(&mut self, focus: Option<String>) -> Option<StepEnd> {
        let prompt = estimate_tokens(self.conversation.messages());
        let skipped = match self.compact(None, prompt, focus.as_deref()).await {
            Compacting::Cancelled(end) => return Some(end),
            Compacting::Done { compacted: true } => return None,
            Compacting::Done { compacted: false } => {
                "there is nothing old enough to compact yet".to_string()
            }
            Compacting::Failed(reason) => format!("the summary failed: {reason}"),
        };
        self.events
            .emit(Event::CompactionSkipped { reason: skipped })
            .await;
        None
    }

    /// Prunes older tool results, then, when the estimate still reaches `threshold`
    /// (always, without one), has the model summarise the older turns.
    async fn compact(
        &mut self,
        threshold: Option<u64>,
        prompt: u64,
        focus: Option<&str>,
    ) -> Compacting {
        let keep = self.compaction.settings.keep_recent_steps;
        let mut messages = self.conversation.messages().to_vec();
        let before = prompt.max(estimate_tokens(&messages));
        let saved = prune_tool_results(&mut messages, keep);
        let mut estimate = before.saturating_sub(tokens_of(saved));
        let mut compacted = saved > 0;
        let mut summarised = false;
        let mut failure = None;
        if compacted {
            self.conversation.replace(messages);
            self.announce(before, estimate, CompactionKind::PrunedToolResults)
                .await;
        }
        if threshold.is_none_or(|threshold| estimate >= threshold)
            && let Some(cut) = summary_cut(self.conversation.messages(), keep)
        {
            match self.summarise(cut, focus).await {
                Ok(summary) => {
                    let older = estimate_tokens(&self.conversation.messages()[..cut]);
                    let spliced = splice_summary(self.conversation.messages(), cut, &summary);
                    let after = estimate.saturating_sub(older) + estimate_tokens(&spliced[..1]);
                    self.conversation.replace(spliced);
                    self.announce(estimate, after, CompactionKind::Summarised)
                        .await;
                    estimate = after;
                    compacted = true;
                    summarised = true;
                }
                Err(SummaryFailure::Cancelled(end)) => return Compacting::Cancelled(end),
                Err(SummaryFailure::Failed(reason)) => failure = Some(reason),
            }
        }
        if compacted {
            self.carry_notes(summarised).await;
            // Pruned or summarised results may have held nested instructions.
            self.nested_instructions = NestedInstructions::given_in(self.conversation.messages());
            tracing::info!(before, after = estimate, "conversation compacted");
            self.events
                .record(Record::Compacted {
                    messages: self.conversation.messages().to_vec(),
                })
                .await;
        }
        // The summary call's own prompt says nothing about the conversation's.
        self.compaction.last_prompt_tokens = None;
        match failure {
            Some(reason) => Compacting::Failed(reason),
            None => Compacting::Done { compacted },
        }
    }

    /// Gives the model the notes file again, so its plan and what is already done
    /// survive the compaction: right after the summary when there is one, else with
    /// the newest user message. Earlier copies become a stub.
    async fn carry_notes(&mut self, summarised: bool) {
        let Some(notes) = notes_file::read(&self.workspace).await else {
            return;
        };
        let mut messages = self.conversation.messages().to_vec();
        notes_file::retire_copies(&mut messages);
        if summarised && let Some(summary) = messages.first_mut() {
            // The summary message holds the summary alone, so the notes follow it.
            summary.content.push(Block::Text { text: notes });
            self.conversation.replace(messages);
        } else {
            self.conversation.replace(messages);
            self.conversation.push_user_text(notes);
        }
    }

    async fn announce(&self, before: u64, after: u64, kind: CompactionKind) {
        self.events
            .emit(Event::Compacted {
                before_tokens_estimate: before,
                after_tokens_estimate: after,
                kind,
            })
            .await;
    }

    /// Asks the model for a summary of the messages before `cut`; an interrupt or
    /// shutdown cancels the call at once.
    async fn summarise(
        &mut self,
        cut: usize,
        focus: Option<&str>,
    ) -> Result<String, SummaryFailure> {
        let request = summary_request(&self.conversation.messages()[..cut], self.max_tokens, focus);
        let client = Arc::clone(&self.client);
        let (summary, usage) = tokio::select! {
            read = read_summary(client.as_ref(), &request) => read.map_err(SummaryFailure::Failed)?,
            end = self.wait_for_cancel() => return Err(SummaryFailure::Cancelled(end)),
        };
        if let Some(usage) = usage {
            self.record_usage(usage).await;
        }
        if summary.trim().is_empty() {
            return Err(SummaryFailure::Failed(
                "the model answered the summary request with no text".into(),
            ));
        }
        Ok(summary)
    }
}

/// Streams the summary call to its end: its text, and its usage when it finished.
async fn read_summary(
    client: &dyn ModelClient,
    request: &ModelRequest,
) -> Result<(String, Option<Usage>), String> {
    let failed =
        |error: crate::provider::ProviderError| format!("the summary call failed: {error}");
    let mut stream = client.stream(request).await.map_err(failed)?;
    let mut text = String::new();
    while let Some(event) = stream.next().await {
        match event.map_err(failed)? {
            StreamEvent::TextDelta { text: delta } => text.push_str(&delta),
            StreamEvent::Finished { usage, .. } => return Ok((text, Some(usage))),
            // Reasoning is not part of the summary, and no tools were offered.
            _ => {}
        }
    }
    Err("the summary call ended without a stop reason".into())
}

/// A rough token count of `messages`, for what no provider has counted yet.
fn estimate_tokens(messages: &[Message]) -> u64 {
    tokens_of(
        messages
            .iter()
            .flat_map(|message| &message.content)
            .map(block_chars)
            .sum(),
    )
}

fn tokens_of(chars: usize) -> u64 {
    u64::try_from(chars / CHARS_PER_TOKEN).unwrap_or(u64::MAX)
}

fn block_chars(block: &Block) -> usize {
    match block {
        Block::Text { text } => text.len(),
        Block::Thinking {
            thinking,
            signature,
        } => thinking.len() + signature.as_ref().map_or(0, String::len),
        Block::RedactedThinking { data } => data.len(),
        Block::ReasoningItem { item } => item.to_string().len(),
        Block::ToolCall(call) => call.name.len() + call.arguments.len(),
        Block::ToolResult(result) => result.content.len(),
        // Providers count an image by its pixels, not its bytes: about 1,600 tokens
        // for one of the largest sizes they take.
        Block::Image { .. } => IMAGE_TOKENS_ESTIMATE * CHARS_PER_TOKEN,
    }
}

/// What an attached image is taken to cost, in tokens.
const IMAGE_TOKENS_ESTIMATE: usize = 1_600;

/// Where the newest `keep` model calls begin: the index of the `keep`-th assistant
/// message from the end (at least one is kept). `None` when there are fewer.
fn recent_start(messages: &[Message], keep: usize) -> Option<usize> {
    messages
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, message)| message.role == Role::Assistant)
        .nth(keep.max(1) - 1)
        .map(|(index, _)| index)
}

/// Replaces each tool result older than the newest `keep` model calls by a one-line
/// note (when that is shorter); the calls stay as they were. Returns the characters
/// saved.
fn prune_tool_results(messages: &mut [Message], keep: usize) -> usize {
    let Some(recent) = recent_start(messages, keep) else {
        return 0;
    };
    let mut saved = 0;
    for index in 1..recent {
        let (before, rest) = messages.split_at_mut(index);
        let names: HashMap<&str, &str> = before[index - 1]
            .tool_calls()
            .map(|call| (call.id.as_str(), call.name.as_str()))
            .collect();
        for block in &mut rest[0].content {
            let Block::ToolResult(result) = block else {
                continue;
            };
            let tool = names
                .get(result.call_id.as_str())
                .copied()
                .unwrap_or("tool");
            if let Some(note) = pruned_note(tool, &result.content) {
                saved += result.content.len() - note.len();
                result.content = note;
            }
        }
    }
    saved
}

/// The note that replaces a result of `tool`, or `None` when the result was pruned
/// already or is shorter than its note.
fn pruned_note(tool: &str, content: &str) -> Option<String> {
    if content.starts_with(PRUNED_PREFIX) {
        return None;
    }
    let lines = content.lines().count();
    let start = content
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or_default();
    let note = format!(
        "{PRUNED_PREFIX}{tool} returned {lines} lines, starting `{}`]",
        clip(start, NOTE_START_LIMIT)
    );
    (note.len() < content.len()).then_some(note)
}

/// The first `limit` characters of `text`, marked when cut.
fn clip(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// Where the summarised part ends: the messages before the newest `keep` model calls,
/// when they hold a model call worth summarising.
fn summary_cut(messages: &[Message], keep: usize) -> Option<usize> {
    let cut = recent_start(messages, keep)?;
    messages[..cut]
        .iter()
        .any(|message| message.role == Role::Assistant)
        .then_some(cut)
}

/// A plain request (no tools) for a summary of `older`, quoted as text: a transcript
/// of tool calls would need the tools defined, and its thinking signatures would not
/// hold in another conversation.
fn summary_request(older: &[Message], max_tokens: u32, focus: Option<&str>) -> ModelRequest {
    let mut text = format!(
        "{}\n\n{}",
        render_transcript(older),
        SUMMARY_INSTRUCTIONS.trim_end()
    );
    if let Some(focus) = focus.map(str::trim).filter(|focus| !focus.is_empty()) {
        text.push_str(&format!(
            "\n\nThe user asked for this compaction and wants the summary to keep, above \
             all: {focus}"
        ));
    }
    ModelRequest {
        system: vec![SUMMARY_SYSTEM.trim_end().to_string()],
        tools: Vec::new(),
        messages: vec![Message::user_text(text)],
        volatile_context: None,
        max_tokens,
    }
}

/// `messages` as a transcript for the summary request. Thinking is left out: it is the
/// model's scratch work, not what happened.
fn render_transcript(messages: &[Message]) -> String {
    let names: HashMap<&str, &str> = messages
        .iter()
        .flat_map(Message::tool_calls)
        .map(|call| (call.id.as_str(), call.name.as_str()))
        .collect();
    let mut entries = Vec::new();
    for message in messages {
        let speaker = match message.role {
            Role::User => "user",
            Role::Assistant => "agent",
        };
        for block in &message.content {
            let entry = match block {
                Block::Text { text } => format!("[{speaker}]\n{}", clip(text, QUOTE_LIMIT)),
                Block::ToolCall(call) => format!(
                    "[agent calls {}]\n{}",
                    call.name,
                    clip(&call.arguments, QUOTE_LIMIT)
                ),
                Block::ToolResult(result) => {
                    let tool = names
                        .get(result.call_id.as_str())
                        .copied()
                        .unwrap_or("tool");
                    let failed = if result.is_error { " (failed)" } else { "" };
                    format!(
                        "[{tool} result{failed}]\n{}",
                        clip(&result.content, QUOTE_LIMIT)
                    )
                }
                Block::Image { media_type, .. } => {
                    format!("[{speaker} attached an image ({media_type})]")
                }
                Block::Thinking { .. }
                | Block::RedactedThinking { .. }
                | Block::ReasoningItem { .. } => continue,
            };
            entries.push(entry);
        }
    }
    format!("<conversation>\n{}\n</conversation>", entries.join("\n\n"))
}

/// The conversation with the messages before `cut` replaced by one user message
/// holding `summary`. `cut` must start an assistant message (see [`summary_cut`]), so
/// roles still alternate and no call is parted from its result.
fn splice_summary(messages: &[Message], cut: usize, summary: &str) -> Vec<Message> {
    let mut spliced = vec![Message::user_text(format!(
        "{SUMMARY_HEADER}{}",
        summary.trim()
    ))];
    spliced.extend_from_slice(&messages[cut..]);
    spliced
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::agent::conversation::Conversation;
    use crate::provider::{ToolCall, ToolResult};

    fn call(id: &str, name: &str) -> Block {
        Block::ToolCall(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: format!(r#"{{"path": "{id}.rs"}}"#),
        })
    }

    fn result(id: &str, content: &str) -> Block {
        Block::ToolResult(ToolResult {
            call_id: id.into(),
            content: content.into(),
            is_error: false,
        })
    }

    fn assistant(content: Vec<Block>) -> Message {
        Message {
            role: Role::Assistant,
            content,
        }
    }

    fn user(content: Vec<Block>) -> Message {
        Message {
            role: Role::User,
            content,
        }
    }

    fn thinking(text: &str) -> Block {
        Block::Thinking {
            thinking: text.into(),
            signature: Some(format!("sig-{text}")),
        }
    }

    fn long(lines: usize) -> String {
        (0..lines)
            .map(|n| format!("line {n} of the file\n"))
            .collect()
    }

    /// A task, then `steps` model calls that each read a long file, then a final answer.
    fn session(steps: usize) -> Vec<Message> {
        let mut messages = vec![Message::user_text("refactor the parser")];
        for step in 0..steps {
            let id = format!("c{step}");
            messages.push(assistant(vec![thinking(&id), call(&id, "read")]));
            messages.push(user(vec![result(&id, &long(50))]));
        }
        messages.push(assistant(vec![Block::Text {
            text: "Done.".into(),
        }]));
        messages
    }

    fn content_of(message: &Message) -> Vec<&str> {
        message
            .tool_results()
            .map(|result| result.content.as_str())
            .collect()
    }

    fn assert_pairs(messages: Vec<Message>) {
        let mut conversation = Conversation::default();
        conversation.replace(messages);
        assert_eq!(conversation.check_pairing(), Ok(()));
        assert_eq!(conversation.repair(), 0, "nothing for repair to mend");
    }

    #[test]
    fn the_compactor_acts_once_on_a_prompt_at_the_threshold() {
        let mut compactor = Compactor::new(Compaction::default());
        let model = ModelInfo {
            context_window: Some(10_000),
            prices: None,
            takes_images: None,
        };
        let prompt = |input_tokens| Usage {
            input_tokens,
            ..Usage::default()
        };
        compactor.observe(&prompt(7_999));
        assert_eq!(compactor.take_due(&model), None);
        compactor.observe(&prompt(6_000));
        compactor.observe(&Usage {
            cache_read_tokens: 2_000,
            ..prompt(6_000)
        });
        assert_eq!(compactor.take_due(&model), Some((8_000, 8_000)));
        assert_eq!(compactor.take_due(&model), None, "looked at once");
        compactor.tripped = true;
        compactor.observe(&prompt(9_000));
        assert_eq!(compactor.take_due(&model), None, "the breaker holds");
    }

    #[test]
    fn pruning_replaces_older_results_by_notes_and_keeps_the_recent_steps() {
        let mut messages = session(3);
        let original = messages.clone();
        let saved = prune_tool_results(&mut messages, 3);
        // The first read is older than the newest three model calls (c1, c2, "Done.").
        assert_eq!(
            content_of(&messages[2]),
            vec!["[pruned to save context: read returned 50 lines, starting `line 0 of the file`]"]
        );
        assert_eq!(messages[1], original[1], "the call stays");
        assert_eq!(messages[3..], original[3..]);
        assert_eq!(saved, long(50).len() - content_of(&messages[2])[0].len());
        assert_pairs(messages.clone());

        let again = messages.clone();
        assert_eq!(prune_tool_results(&mut messages, 3), 0, "pruned once");
        assert_eq!(messages, again);
    }

    #[test]
    fn short_results_and_too_short_conversations_are_left_alone() {
        let mut messages = vec![
            Message::user_text("task"),
            assistant(vec![call("a", "read")]),
            user(vec![result("a", "ok")]),
            assistant(vec![Block::Text {
                text: "Done.".into(),
            }]),
        ];
        let original = messages.clone();
        assert_eq!(prune_tool_results(&mut messages, 1), 0);
        assert_eq!(prune_tool_results(&mut messages, 5), 0);
        assert_eq!(messages, original);
    }

    #[test]
    fn the_summary_cut_starts_an_assistant_message_after_a_model_call() {
        let messages = session(3);
        assert_eq!(summary_cut(&messages, 1), Some(7));
        assert_eq!(summary_cut(&messages, 2), Some(5));
        assert_eq!(summary_cut(&messages, 4), None, "only the task before it");
        assert_eq!(summary_cut(&messages, 9), None);
    }

    #[test]
    fn the_summary_request_quotes_the_older_turns_without_tools_or_thinking() {
        let messages = session(2);
        let request = summary_request(&messages[..5], 1_000, None);
        assert!(request.tools.is_empty());
        assert_eq!(request.max_tokens, 1_000);
        assert_eq!(request.messages.len(), 1);
        assert_eq!(request.messages[0].role, Role::User);
        let Block::Text { text } = &request.messages[0].content[0] else {
            panic!("the request is one text block");
        };
        assert!(text.starts_with("<conversation>\n[user]\nrefactor the parser\n\n"));
        assert!(text.contains("[agent calls read]\n{\"path\": \"c1.rs\"}"));
        assert!(text.contains("[read result]\nline 0 of the file"));
        assert!(!text.contains("sig-c0"), "no thinking: {text}");
        assert!(text.ends_with(SUMMARY_INSTRUCTIONS.trim_end()));
    }

    #[test]
    fn long_blocks_are_clipped_in_the_summary_request() {
        let messages = vec![
            Message::user_text("x".repeat(QUOTE_LIMIT * 3)),
            assistant(vec![Block::Text { text: "ok".into() }]),
        ];
        let request = summary_request(&messages, 100, None);
        let Block::Text { text } = &request.messages[0].content[0] else {
            panic!("the request is one text block");
        };
        assert!(text.len() < QUOTE_LIMIT + 1_000, "{}", text.len());
        assert!(text.contains("x…\n"));
    }

    #[test]
    fn splicing_replaces_whole_exchanges_and_keeps_the_recent_ones_signed() {
        let messages = session(3);
        let cut = summary_cut(&messages, 2).unwrap();
        let spliced = splice_summary(&messages, cut, "  Read c0 and c1.\n");
        assert_eq!(
            spliced[0],
            Message::user_text(format!("{SUMMARY_HEADER}Read c0 and c1."))
        );
        assert_eq!(spliced[1..], messages[cut..]);
        assert_eq!(
            spliced[1].content[0],
            thinking("c2"),
            "kept with its signature"
        );
        assert!(estimate_tokens(&spliced) < estimate_tokens(&messages));
        assert_pairs(spliced);
    }

    #[test]
    fn estimates_count_four_characters_a_token() {
        let messages = vec![Message::user_text("x".repeat(400))];
        assert_eq!(estimate_tokens(&messages), 100);
    }
}
