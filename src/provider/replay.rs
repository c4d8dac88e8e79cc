//! The replay provider: a [`ModelClient`] that plays a recorded or written [`Script`]
//! in-process, with no network and no key (`duet demo`, `duet --replay FILE`).
//!
//! Owns: turning a script's turns into [`StreamEvent`]s, pacing them so text streams
//! visibly, checking each request's tool-call/result pairing as a real API would, and
//! the record of the requests it answered.
//! Does not own: the script format ([`script`]) or anything the agent does with the
//! events; the conversation may diverge from what the script expected (a rejected hunk,
//! a steering message) and the script still plays on.
//! Invariant: the N-th request is answered by turn N, and a turn's tool-call ids are
//! unique across the whole session, so every call the agent answers pairs up.

pub mod script;

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::StreamExt;

use self::script::{Script, ScriptUsage, Step, StopReason as ScriptStop, StreamTurn, Turn};
use super::{
    EventStream, Message, ModelClient, ModelRequest, ProviderError, Role, StopReason, StreamEvent,
    ToolCall, Usage,
};

/// The URL named in the errors of a replayed `status` turn.
const REPLAY_URL: &str = "replay";

/// Plays a [`Script`] as the model.
pub struct ReplayClient {
    label: String,
    turns: Vec<Turn>,
    /// Wait between two streamed pieces (text deltas, argument fragments).
    delay: Duration,
    /// Every request answered or refused so far, in order.
    requests: Mutex<Vec<ModelRequest>>,
}

impl ReplayClient {
    /// A client that plays `script` without pacing, naming itself `label` (shown where
    /// the model's name would be). Fails for a script with gates: only the scripted
    /// test server has someone to release them.
    pub fn new(script: Script, label: impl Into<String>) -> Result<Self, ProviderError> {
        check_no_gates(&script)?;
        Ok(Self {
            label: label.into(),
            turns: script.turns().to_vec(),
            delay: Duration::ZERO,
            requests: Mutex::new(Vec::new()),
        })
    }

    /// Waits `delay` before each streamed piece after the first, so text appears as a
    /// model would write it. Pauses written in the script are kept either way.
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// The requests received so far, in order.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.log().clone()
    }

    fn log(&self) -> MutexGuard<'_, Vec<ModelRequest>> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait::async_trait]
impl ModelClient for ReplayClient {
    fn model(&self) -> &str {
        &self.label
    }

    async fn stream(&self, request: &ModelRequest) -> Result<EventStream, ProviderError> {
        check_pairing(&request.messages).map_err(ProviderError::Replay)?;
        let number = {
            let mut log = self.log();
            log.push(request.clone());
            log.len()
        };
        let Some(turn) = self.turns.get(number - 1) else {
            return Err(ProviderError::Replay(format!(
                "the script has {} turn(s), and this is model call {number}",
                self.turns.len()
            )));
        };
        match turn {
            Turn::Status(status) => Err(ProviderError::Http {
                url: REPLAY_URL.into(),
                status: status.status,
                message: status
                    .message
                    .clone()
                    .unwrap_or_else(|| format!("scripted status {}", status.status)),
                retry_after: status.retry_after.map(Duration::from_secs),
            }),
            Turn::Stream(turn) => Ok(play(plan(turn, number), self.delay)),
        }
    }
}

fn check_no_gates(script: &Script) -> Result<(), ProviderError> {
    for (index, turn) in script.turns().iter().enumerate() {
        let Turn::Stream(turn) = turn else { continue };
        if let Some(Step::Gate(gate)) = turn.steps.iter().find(|s| matches!(s, Step::Gate(_))) {
            return Err(ProviderError::Setup(format!(
                "turn {}: gate `{gate}` waits for a test to release it, which a replay cannot do \
                 (use `pause_ms`)",
                index + 1
            )));
        }
    }
    Ok(())
}

/// The check a real API makes before answering: every tool call of an assistant
/// message is answered by exactly one result in the user message right after it, and
/// every result answers a call of the message right before it.
fn check_pairing(messages: &[Message]) -> Result<(), String> {
    let mut open: HashSet<&str> = HashSet::new();
    for (index, message) in messages.iter().enumerate() {
        match message.role {
            Role::Assistant => {
                if let Some(call) = open.iter().next() {
                    return Err(format!(
                        "message {index}: tool call `{call}` was never answered"
                    ));
                }
                open = message.tool_calls().map(|call| call.id.as_str()).collect();
            }
            Role::User => {
                for result in message.tool_results() {
                    if !open.remove(result.call_id.as_str()) {
                        return Err(format!(
                            "message {index}: result for `{}` answers no open tool call",
                            result.call_id
                        ));
                    }
                }
                if let Some(call) = open.iter().next() {
                    return Err(format!("message {index}: tool call `{call}` has no result"));
                }
            }
        }
    }
    match open.iter().next() {
        Some(call) => Err(format!("the last tool call `{call}` has no result")),
        None => Ok(()),
    }
}

/// One thing the replayed stream does.
#[derive(Debug)]
enum Action {
    /// Yield this event after the pacing delay.
    Piece(StreamEvent),
    /// Yield this event at once (it streams nothing visible).
    Event(StreamEvent),
    Wait(Duration),
    /// End the stream with this error.
    Fail(ProviderError),
}

/// What turn `number` (1-based) plays, in order, ending in `Finished` or a failure.
fn plan(turn: &StreamTurn, number: usize) -> Vec<Action> {
    let mut actions = Vec::new();
    let mut counts = BlockCounts::default();
    let mut blocks = 0;
    for step in &turn.steps {
        if turn.cut_after_blocks == Some(blocks) && step.is_content() {
            actions.push(Action::Fail(cut(format!(
                "the script cuts the stream after {blocks} block(s)"
            ))));
            return actions;
        }
        if step.is_content() {
            blocks += 1;
        }
        if let Some(failure) = plan_step(step, number, &mut counts, &mut actions) {
            actions.push(Action::Fail(failure));
            return actions;
        }
    }
    if let Some(blocks) = turn.cut_after_blocks {
        actions.push(Action::Fail(cut(format!(
            "the script cuts the stream after {blocks} block(s)"
        ))));
        return actions;
    }
    actions.push(Action::Event(StreamEvent::Finished {
        stop_reason: stop_reason(turn.stop),
        usage: usage(turn.usage),
    }));
    actions
}

/// How many blocks of each kind a turn has played, for default ids and signatures.
#[derive(Default)]
struct BlockCounts {
    thinking: usize,
    tools: usize,
}

/// Appends what `step` plays; returns the error that ends the stream there, if any.
fn plan_step(
    step: &Step,
    turn: usize,
    counts: &mut BlockCounts,
    actions: &mut Vec<Action>,
) -> Option<ProviderError> {
    match step {
        Step::Text { text, chunk } => actions.extend(
            script::pieces(text, *chunk)
                .into_iter()
                .map(|text| Action::Piece(StreamEvent::TextDelta { text })),
        ),
        Step::Thinking {
            thinking,
            signature,
            chunk,
        } => {
            counts.thinking += 1;
            actions.extend(
                script::pieces(thinking, *chunk)
                    .into_iter()
                    .map(|text| Action::Piece(StreamEvent::ThinkingDelta { text })),
            );
            let signature = signature
                .clone()
                .unwrap_or_else(|| format!("sig_t{turn}_{}", counts.thinking));
            actions.push(Action::Event(StreamEvent::ThinkingSignature { signature }));
        }
        Step::RedactedThinking { data } => {
            actions.push(Action::Event(StreamEvent::RedactedThinking {
                data: data.clone(),
            }));
        }
        Step::Tool {
            name,
            id,
            args,
            chunk,
            cut_after_chunks,
        } => {
            counts.tools += 1;
            let id = id
                .clone()
                .unwrap_or_else(|| format!("toolu_t{turn}_{}", counts.tools));
            return plan_tool(name, &id, args, *chunk, *cut_after_chunks, actions);
        }
        Step::StreamError { kind, message } => {
            return Some(ProviderError::Api {
                kind: kind.clone(),
                message: message.clone(),
            });
        }
        Step::Pause(duration) => actions.push(Action::Wait(*duration)),
        // Refused when the client was made.
        Step::Gate(_) => {}
    }
    None
}

fn plan_tool(
    name: &str,
    id: &str,
    args: &str,
    chunk: Option<std::num::NonZeroUsize>,
    cut_after_chunks: Option<usize>,
    actions: &mut Vec<Action>,
) -> Option<ProviderError> {
    actions.push(Action::Event(StreamEvent::ToolCallStart {
        id: id.to_owned(),
        name: name.to_owned(),
    }));
    for (index, fragment) in script::pieces(args, chunk).into_iter().enumerate() {
        if cut_after_chunks == Some(index) {
            return Some(cut(format!(
                "the script cuts tool call `{id}` after {index} fragment(s)"
            )));
        }
        actions.push(Action::Piece(StreamEvent::ToolCallArgsDelta {
            id: id.to_owned(),
            fragment,
        }));
    }
    actions.push(Action::Event(StreamEvent::ToolCallEnd {
        call: ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments: args.to_owned(),
        },
    }));
    None
}

fn cut(detail: String) -> ProviderError {
    ProviderError::Truncated(detail)
}

fn stop_reason(stop: ScriptStop) -> StopReason {
    match stop {
        ScriptStop::EndTurn => StopReason::EndTurn,
        ScriptStop::ToolUse => StopReason::ToolUse,
        ScriptStop::MaxTokens => StopReason::MaxTokens,
        ScriptStop::StopSequence => StopReason::StopSequence,
        ScriptStop::Refusal => StopReason::Refusal,
    }
}

fn usage(usage: ScriptUsage) -> Usage {
    Usage {
        input_tokens: usage.input,
        output_tokens: usage.output,
        cache_read_tokens: usage.cache_read,
        cache_write_tokens: usage.cache_write,
    }
}

/// Streams `actions`, waiting `delay` before every visible piece but the first.
fn play(actions: Vec<Action>, delay: Duration) -> EventStream {
    let paced = futures::stream::iter(actions).scan(false, move |started, action| {
        let wait = match &action {
            Action::Piece(_) if *started => delay,
            Action::Wait(duration) => *duration,
            _ => Duration::ZERO,
        };
        if matches!(action, Action::Piece(_)) {
            *started = true;
        }
        async move {
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            Some(action)
        }
    });
    Box::pin(paced.filter_map(|action| async move {
        match action {
            Action::Piece(event) | Action::Event(event) => Some(Ok(event)),
            Action::Wait(_) => None,
            Action::Fail(error) => Some(Err(error)),
        }
    }))
}

#[cfg(test)]
mod tests;
