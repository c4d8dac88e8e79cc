//! The explorer: a read-only sub-loop the model starts with the `explore` tool to
//! investigate the codebase without filling its own context.
//!
//! Owns: the `explore` tool, the sub-loop's conversation and system prompt
//! (`assets/explore_prompt.md`), its step cap, and the progress lines it shows on the
//! explore call's card.
//! Does not own: the tools it runs (`tools/`, restricted to read, glob and grep), the
//! limits (the parent task's [`SharedMeter`] books every model call, token and tool run
//! of the sub-loop against the task's budget), or scheduling and cancelling the explore
//! call itself (the parent's `ToolRuns`, like any other call).
//! Invariant: only the sub-loop's final answer reaches the parent; what its tools
//! returned stays in its own conversation, which ends with the call. Every request the
//! sub-loop sends pairs each call with exactly one result.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::config::{Budget, ModelInfo};
use crate::provider::{
    Block, EventStream, ModelClient, ModelRequest, StreamEvent, ToolCall, ToolResult, ToolSpec,
};
use crate::tools::{
    CallInfo, Concurrency, OutputSink, ReadLedger, Registry, Tool, ToolCtx, ToolError, ToolOutput,
    parse_args, schema_for,
};

use super::budget::SharedMeter;
use super::conversation::{AssistantDraft, Conversation};
use super::protocol::Event;
use super::tool_runs::{CancelReason, ToolRuns};

const EXPLORE_PROMPT: &str = include_str!("../../assets/explore_prompt.md");

/// The most model calls one exploration makes, whatever the task has left.
pub(crate) const MAX_EXPLORE_STEPS: u32 = 12;

/// The longest progress line shown for one of the explorer's lookups.
const MAX_LABEL_CHARS: usize = 100;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ExploreArgs {
    /// The question to investigate, with what you already know (names, paths) so the
    /// explorer does not start from nothing.
    question: String,
}

/// The `explore` tool. Built by the agent, which holds what the sub-loop needs (the
/// model client, the task's meter); `tools/` cannot.
pub(crate) struct Explore {
    pub(crate) client: Arc<dyn ModelClient>,
    /// The parent task's meter: the sub-loop spends from the same budget.
    pub(crate) meter: SharedMeter,
    pub(crate) budget: Budget,
    pub(crate) model_info: ModelInfo,
    pub(crate) max_tokens: u32,
    /// The step cap of one exploration before the task's budget is considered.
    pub(crate) max_steps: u32,
    /// Where clipped outputs of the explorer's own tool calls are saved.
    pub(crate) outputs_dir: PathBuf,
    /// The session's hooks, which the explorer's lookups go through like any call.
    pub(crate) hooks: Option<Arc<super::hooks::AgentHooks>>,
}

impl Explore {
    /// The model calls this exploration may make: its own cap, and never the last call
    /// the task has left, which the parent needs to use the answer.
    fn step_cap(&self) -> u32 {
        let task_left = self.meter.steps_left(&self.budget).saturating_sub(1);
        self.max_steps.min(task_left)
    }
}

#[async_trait::async_trait]
impl Tool for Explore {
    fn name(&self) -> &'static str {
        "explore"
    }

    fn description(&self) -> &'static str {
        "Investigates a question about the codebase in a separate read-only session (it can \
         read, glob and grep) and returns only its answer: the relevant paths with line ranges \
         and a short conclusion. Use it for open-ended searches (\"where is X handled\", \"how \
         does Y reach Z\") whose file contents you do not need in full; read files yourself \
         when you are about to edit them. Its model calls count against your step budget."
    }

    fn schema(&self) -> Value {
        schema_for::<ExploreArgs>()
    }

    fn concurrency(&self) -> Concurrency {
        Concurrency::Shared
    }

    fn describe(&self, args: &serde_json::Map<String, Value>) -> Option<CallInfo> {
        let question = args.get("question").and_then(Value::as_str)?;
        Some(CallInfo::new(
            format!("explore {}", crate::tools::describe::quoted(question)),
            Vec::new(),
        ))
    }

    async fn run(&self, args: Value, ctx: &ToolCtx) -> Result<ToolOutput, ToolError> {
        let args: ExploreArgs = parse_args(self.name(), args)?;
        let question = args.question.trim();
        if question.is_empty() {
            return Err(ToolError::InvalidArguments(
                "`question` is empty: say what you want to find out.".to_string(),
            ));
        }
        let cap = self.step_cap();
        if cap == 0 {
            return Err(ToolError::Refused(
                "the task's step budget has no model calls left for exploring; continue with \
                 what you know."
                    .to_string(),
            ));
        }
        let mut exploration = Exploration::new(self, ctx, question);
        let ending = exploration.run(cap).await;
        exploration.conclude(ending)
    }
}

/// How an exploration ended.
#[derive(Debug, PartialEq)]
enum Ending {
    /// The explorer answered (possibly with nothing).
    Answered(String),
    /// It used every model call it was allowed.
    StepCap(u32),
    /// The task's budget forbids another call.
    Budget(String),
    ModelFailed(String),
    Interrupted,
}

/// One model response of the explorer.
#[derive(Debug, Default)]
struct Reply {
    blocks: Vec<Block>,
    calls: Vec<ToolCall>,
}

/// One run of the sub-loop.
struct Exploration<'a> {
    explore: &'a Explore,
    tools: Registry,
    specs: Vec<ToolSpec>,
    conversation: Conversation,
    /// The template of the explorer's tool calls: the parent's workspace and approver,
    /// a read ledger of its own (what it read, the parent has not seen), no live output.
    inner: ToolCtx,
    /// The explore call's cancellation (the user's interrupt).
    cancel: CancellationToken,
    /// The explore call's card, where progress lines go.
    progress: OutputSink,
    call_id: String,
    /// One label per lookup made, in order.
    looked_at: Vec<String>,
    steps: u32,
}

impl<'a> Exploration<'a> {
    fn new(explore: &'a Explore, ctx: &ToolCtx, question: &str) -> Self {
        let tools = Registry::read_only();
        let mut conversation = Conversation::default();
        conversation.push_user_text(question.to_string());
        let inner = ToolCtx {
            ledger: Arc::new(ReadLedger::default()),
            output: OutputSink::default(),
            keyboards: Default::default(),
            cancel: ctx.cancel.child_token(),
            call_id: String::new(),
            ..ctx.clone()
        };
        Self {
            explore,
            specs: tools.specs(),
            tools,
            conversation,
            inner,
            cancel: ctx.cancel.clone(),
            progress: ctx.output.clone(),
            call_id: ctx.call_id.clone(),
            looked_at: Vec::new(),
            steps: 0,
        }
    }

    /// Model call → lookups → model call … until the explorer answers or may not go on.
    async fn run(&mut self, cap: u32) -> Ending {
        let meter = &self.explore.meter;
        while self.steps < cap {
            if let Err(exhausted) = meter.check(
                &self.explore.budget,
                &self.explore.model_info,
                Instant::now(),
            ) {
                return Ending::Budget(exhausted.detail);
            }
            meter.count_step();
            self.steps += 1;
            let reply = match self.call_model().await {
                Ok(reply) => reply,
                Err(ending) => return ending,
            };
            if reply.calls.is_empty() {
                return Ending::Answered(text_of(&reply.blocks));
            }
            let results = match self.run_calls(&reply.calls).await {
                Ok(results) => results,
                Err(ending) => return ending,
            };
            self.conversation.push_step(reply.blocks, results);
        }
        Ending::StepCap(cap)
    }

    async fn call_model(&self) -> Result<Reply, Ending> {
        let request = ModelRequest {
            system: vec![EXPLORE_PROMPT.trim_end().to_string()],
            tools: self.specs.clone(),
            messages: self.conversation.messages().to_vec(),
            volatile_context: None,
            max_tokens: self.explore.max_tokens,
        };
        let opened = tokio::select! {
            opened = self.explore.client.stream(&request) => opened,
            () = self.cancel.cancelled() => return Err(Ending::Interrupted),
        };
        let stream = opened.map_err(|error| Ending::ModelFailed(error.to_string()))?;
        tokio::select! {
            reply = read_reply(stream, &self.explore.meter) => reply,
            () = self.cancel.cancelled() => Err(Ending::Interrupted),
        }
    }

    /// Runs one response's lookups with the parent's machinery, showing each as it ends.
    async fn run_calls(&mut self, calls: &[ToolCall]) -> Result<Vec<ToolResult>, Ending> {
        let mut runs = ToolRuns::new(self.inner.clone(), self.explore.outputs_dir.clone())
            .with_hooks(self.explore.hooks.clone());
        let mut labels = HashMap::new();
        for call in calls {
            let label = describe_call(call);
            self.looked_at.push(label.clone());
            labels.insert(call.id.clone(), label);
            self.explore.meter.count_tool_run();
            let job = self.tools.prepare(&call.name, &call.arguments);
            let answered = runs.submit(call.clone(), job);
            self.show(&answered, &labels);
        }
        loop {
            // Only `ToolRunBegin`s: nothing to show until a lookup ends.
            runs.start_ready();
            if runs.all_done() {
                return Ok(runs.into_results());
            }
            tokio::select! {
                ended = runs.next_finished(), if runs.has_running() => self.show(&ended, &labels),
                () = self.cancel.cancelled() => {
                    // Lookups only read: nothing is lost by stopping them at once.
                    runs.cancel(CancelReason::UserInterrupt, Duration::ZERO).await;
                    return Err(Ending::Interrupted);
                }
            }
        }
    }

    /// Sends a progress line to the explore call's card for each lookup that ended.
    fn show(&self, events: &[Event], labels: &HashMap<String, String>) {
        for event in events {
            if let Event::ToolRunEnd {
                call_id,
                is_error,
                summary,
                ..
            } = event
            {
                let label = labels.get(call_id).map_or("lookup", String::as_str);
                let outcome = if *is_error { "error: " } else { "" };
                self.progress
                    .send(&self.call_id, format!("{label} → {outcome}{summary}\n"));
            }
        }
    }

    /// What the parent receives.
    fn conclude(self, ending: Ending) -> Result<ToolOutput, ToolError> {
        if let Err(problem) = self.conversation.check_pairing() {
            tracing::error!(%problem, "explorer conversation lost call/result pairing");
        }
        let lookups = self.looked_at.len();
        let reason = match ending {
            Ending::Answered(answer) if !answer.trim().is_empty() => {
                return Ok(ToolOutput {
                    content: answer.trim().to_string(),
                    summary: format!(
                        "explored in {} ({lookups} lookups)",
                        plural(self.steps, "step")
                    ),
                    checks: None,
                });
            }
            Ending::Interrupted => {
                return Err(ToolError::Failed(
                    "Stopped: the user interrupted the exploration.".to_string(),
                ));
            }
            Ending::Answered(_) => "the explorer ended without an answer".to_string(),
            Ending::StepCap(cap) => format!(
                "the explorer used all {} it was allowed",
                plural(cap, "model call")
            ),
            Ending::Budget(detail) => format!("the task's budget is spent: {detail}"),
            Ending::ModelFailed(error) => format!("the explorer's model call failed: {error}"),
        };
        let notes = self.conversation.last_assistant_text().map(str::trim);
        Ok(ToolOutput {
            content: partial_findings(&reason, &self.looked_at, notes),
            summary: format!("stopped: {reason}"),
            checks: None,
        })
    }
}

/// Reads one response to its end, booking its usage on `meter`.
async fn read_reply(mut stream: EventStream, meter: &SharedMeter) -> Result<Reply, Ending> {
    let mut draft = AssistantDraft::default();
    let mut calls = Vec::new();
    while let Some(item) = stream.next().await {
        match item.map_err(|error| Ending::ModelFailed(error.to_string()))? {
            StreamEvent::TextDelta { text } => draft.push_text(&text),
            StreamEvent::ThinkingDelta { text } => draft.push_thinking(&text),
            StreamEvent::ThinkingSignature { signature } => draft.sign_thinking(signature),
            StreamEvent::RedactedThinking { data } => draft.push_redacted_thinking(data),
            StreamEvent::ReasoningItem { item } => draft.push_reasoning_item(item),
            // An exploration's notices are the client's log lines only.
            StreamEvent::ToolCallStart { .. }
            | StreamEvent::ToolCallArgsDelta { .. }
            | StreamEvent::Notice { .. } => {}
            StreamEvent::ToolCallEnd { call } => calls.push(draft.push_call(call)),
            StreamEvent::Finished { usage, .. } => {
                meter.add_delegated_usage(&usage);
                return Ok(Reply {
                    blocks: draft.into_blocks(),
                    calls,
                });
            }
        }
    }
    Err(Ending::ModelFailed(
        "the response ended without a stop reason".to_string(),
    ))
}

/// The text blocks of a response, joined.
fn text_of(blocks: &[Block]) -> String {
    blocks
        .iter()
        .filter_map(|block| match block {
            Block::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The answer of an exploration that stopped early: why, what it looked at, and its
/// last notes, so the parent can go on from there.
fn partial_findings(reason: &str, looked_at: &[String], notes: Option<&str>) -> String {
    let mut text = format!("The exploration stopped before it concluded: {reason}.");
    if !looked_at.is_empty() {
        text.push_str("\nIt looked at:");
        for label in looked_at {
            text.push_str("\n- ");
            text.push_str(label);
        }
    }
    if let Some(notes) = notes.filter(|notes| !notes.is_empty()) {
        text.push_str("\nIts last notes:\n");
        text.push_str(notes);
    }
    text
}

/// One line naming a lookup: the tool, its pattern and path, then any other argument
/// as `key=value`, e.g. `grep fn main src glob=*.rs`.
fn describe_call(call: &ToolCall) -> String {
    let words = match serde_json::from_str::<Value>(&call.arguments) {
        Ok(Value::Object(args)) => {
            let text = |value: &Value| match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            let primary = ["pattern", "path"];
            let leading = primary.iter().filter_map(|key| args.get(*key).map(text));
            let rest = args
                .iter()
                .filter(|(key, _)| !primary.contains(&key.as_str()))
                .map(|(key, value)| format!("{key}={}", text(value)));
            leading.chain(rest).collect::<Vec<_>>().join(" ")
        }
        _ => call.arguments.clone(),
    };
    let line = format!(
        "{} {}",
        call.name,
        words.split_whitespace().collect::<Vec<_>>().join(" ")
    );
    match line.char_indices().nth(MAX_LABEL_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.trim_end().to_string(),
    }
}

fn plural(count: u32, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    use futures::stream;
    use pretty_assertions::assert_eq;

    use crate::provider::Usage;

    use super::*;
    use crate::agent::budget::Exhausted;
    use crate::agent::protocol::BudgetLimit;
    use crate::provider::{ProviderError, StopReason};

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    fn events(items: Vec<Result<StreamEvent, ProviderError>>) -> EventStream {
        Box::pin(stream::iter(items))
    }

    #[test]
    fn a_lookup_is_named_by_its_tool_and_argument_values() {
        assert_eq!(
            describe_call(&call("grep", r#"{"pattern": "fn  main", "path": "src"}"#)),
            "grep fn main src"
        );
        assert_eq!(
            describe_call(&call("read", r#"{"path": "a.rs", "offset": 10}"#)),
            "read a.rs offset=10"
        );
        assert_eq!(describe_call(&call("glob", "not json")), "glob not json");
        let long = describe_call(&call(
            "read",
            &format!(r#"{{"path": "{}"}}"#, "x".repeat(300)),
        ));
        assert_eq!(long.chars().count(), MAX_LABEL_CHARS + 1);
        assert!(long.ends_with('…'));
    }

    #[test]
    fn partial_findings_say_why_and_what_was_seen() {
        let text = partial_findings(
            "the explorer used all 2 model calls it was allowed",
            &["read a.rs".to_string(), "grep x".to_string()],
            Some("Half way: a.rs calls x."),
        );
        assert_eq!(
            text,
            "The exploration stopped before it concluded: the explorer used all 2 model calls \
             it was allowed.\nIt looked at:\n- read a.rs\n- grep x\nIts last notes:\nHalf way: \
             a.rs calls x."
        );
        assert_eq!(
            partial_findings("x", &[], None),
            "The exploration stopped before it concluded: x."
        );
    }

    #[tokio::test]
    async fn a_reply_keeps_text_and_calls_and_books_its_usage() {
        let meter = SharedMeter::start(Instant::now());
        let usage = Usage {
            input_tokens: 7,
            output_tokens: 3,
            ..Usage::default()
        };
        let stream = events(vec![
            Ok(StreamEvent::TextDelta {
                text: "Looking.".into(),
            }),
            Ok(StreamEvent::ToolCallEnd {
                call: call("read", r#"{"path": "a.rs"}"#),
            }),
            Ok(StreamEvent::Finished {
                stop_reason: StopReason::ToolUse,
                usage,
            }),
        ]);
        let reply = read_reply(stream, &meter).await.unwrap();
        assert_eq!(reply.calls, [call("read", r#"{"path": "a.rs"}"#)]);
        assert_eq!(text_of(&reply.blocks), "Looking.");
        let exhausted = Exhausted {
            limit: BudgetLimit::Steps,
            detail: String::new(),
        };
        let report = meter.report(exhausted, &ModelInfo::default(), Instant::now(), None);
        assert_eq!(report.tokens, 10);
    }

    #[tokio::test]
    async fn a_reply_without_a_stop_reason_is_a_failure() {
        let meter = SharedMeter::start(Instant::now());
        let stream = events(vec![Ok(StreamEvent::TextDelta { text: "Lo".into() })]);
        let ending = read_reply(stream, &meter).await.unwrap_err();
        assert_eq!(
            ending,
            Ending::ModelFailed("the response ended without a stop reason".to_string())
        );
    }
}
