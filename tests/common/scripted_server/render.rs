//! Rendering a script turn into one provider's wire format.
//!
//! Owns: the exact bytes of the Anthropic Messages SSE stream, the OpenAI chat
//! completions chunk stream, the OpenAI Responses event stream ([`responses`]), and the
//! providers' error bodies.
//! Does not own: timing (pauses and gates are emitted as [`Emit`] markers the server
//! acts on) or deciding which turn answers which request.
//! Invariant: rendering is pure — the same turn and context always give the same
//! [`Emit`]s — and a stream that is not cut ends with the wire's terminal event
//! (`message_stop` / `data: [DONE]` / `response.completed` or `response.incomplete`).

mod responses;

use std::time::Duration;

use bytes::Bytes;
use duet::provider::Wire;
use serde_json::{Value, json};

use crate::common::script::{ScriptUsage, Step, StopReason, StreamTurn, pieces};

/// One thing the server does while streaming a response.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Emit {
    Send(Bytes),
    Pause(Duration),
    Gate(String),
    /// Close the connection abruptly (the response body fails).
    Cut,
}

/// What a rendered response needs beyond the turn itself.
pub(super) struct ReplyContext {
    /// 1-based position of the turn in the script (names default ids).
    pub turn_number: usize,
    /// Echoed from the request, as the real APIs do.
    pub model: String,
    /// OpenAI: the request asked for `stream_options.include_usage`.
    pub include_usage: bool,
    /// Unix seconds for OpenAI's `created`.
    pub created: u64,
    /// The tools the request declared freeform (`"type": "custom"`, Responses): a call
    /// to one is a custom tool call carrying text, not a function call.
    pub custom_tools: Vec<String>,
}

/// Renders `turn` for `wire`.
pub(super) fn stream(wire: Wire, turn: &StreamTurn, context: &ReplyContext) -> Vec<Emit> {
    match wire {
        Wire::Anthropic => render(turn, &mut AnthropicStream::new(turn, context)),
        Wire::OpenAiChat => render(turn, &mut OpenAiStream::new(turn, context)),
        Wire::OpenAiResponses => render(turn, &mut responses::ResponsesStream::new(turn, context)),
    }
}

/// The output items a Responses stream of `turn` completes, in order (what the
/// server must see reasoning items echoed for).
pub(super) fn responses_output(turn: &StreamTurn, context: &ReplyContext) -> Vec<Value> {
    let mut wire = responses::ResponsesStream::new(turn, context);
    render(turn, &mut wire);
    wire.output
}

/// A whole (not streamed) response holding only `text`, in `wire`'s format: the
/// answer to a request that did not ask for a stream (peer mode's side requests).
pub(super) fn complete_text(wire: Wire, text: &str, context: &ReplyContext) -> Value {
    let turn = context.turn_number;
    match wire {
        Wire::Anthropic => json!({
            "id": format!("msg_scripted_t{turn}"),
            "type": "message",
            "role": "assistant",
            "content": [{ "type": "text", "text": text }],
            "model": context.model,
            "stop_reason": "end_turn",
            "stop_sequence": null,
            "usage": { "input_tokens": 0, "output_tokens": 0 },
        }),
        Wire::OpenAiChat => json!({
            "id": format!("chatcmpl-scripted-t{turn}"),
            "object": "chat.completion",
            "created": context.created,
            "model": context.model,
            "choices": [{
                "index": 0,
                "message": { "role": "assistant", "content": text },
                "logprobs": null,
                "finish_reason": "stop",
            }],
            "usage": { "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0 },
        }),
        Wire::OpenAiResponses => json!({
            "id": format!("resp_scripted_t{turn}"),
            "object": "response",
            "created_at": context.created,
            "status": "completed",
            "model": context.model,
            "output": [{
                "id": format!("msg_t{turn}_1"),
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{ "type": "output_text", "text": text, "annotations": [] }],
            }],
            "usage": { "input_tokens": 0, "output_tokens": 0, "total_tokens": 0 },
        }),
    }
}

/// The provider's JSON error body for an HTTP error with `status`.
pub(super) fn error_body(wire: Wire, status: u16, message: &str) -> Value {
    match wire {
        Wire::Anthropic => json!({
            "type": "error",
            "error": { "type": anthropic_error_type(status), "message": message },
        }),
        Wire::OpenAiChat | Wire::OpenAiResponses => {
            let (kind, code) = openai_error_type(status);
            json!({
                "error": { "message": message, "type": kind, "param": null, "code": code },
            })
        }
    }
}

fn anthropic_error_type(status: u16) -> &'static str {
    match status {
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        504 => "timeout_error",
        529 => "overloaded_error",
        500..=599 => "api_error",
        _ => "invalid_request_error",
    }
}

fn openai_error_type(status: u16) -> (&'static str, Option<&'static str>) {
    match status {
        401 => ("invalid_request_error", Some("invalid_api_key")),
        429 => ("requests", Some("rate_limit_exceeded")),
        500..=599 => ("server_error", None),
        _ => ("invalid_request_error", None),
    }
}

/// The parts of a stream that differ between wires; [`render`] handles the rest
/// (ordering, pauses, gates and cuts) once for all.
trait WireStream {
    fn open(&mut self, out: &mut Vec<Emit>);
    /// Renders one content block (never a pause or gate). A block that ends the stream
    /// ([`Step::ends_stream`]) renders its own ending.
    fn content(&mut self, step: &Step, out: &mut Vec<Emit>);
    fn finish(&mut self, out: &mut Vec<Emit>);
}

fn render(turn: &StreamTurn, wire: &mut impl WireStream) -> Vec<Emit> {
    let emits = render_unpaced(turn, wire);
    match turn.pace {
        Some(pace) => paced(emits, pace),
        None => emits,
    }
}

/// `emits` with a pause of `pace` between each two consecutive sends.
fn paced(emits: Vec<Emit>, pace: Duration) -> Vec<Emit> {
    let mut out = Vec::with_capacity(emits.len() * 2);
    let mut sent_before = false;
    for emit in emits {
        if matches!(emit, Emit::Send(_)) {
            if sent_before {
                out.push(Emit::Pause(pace));
            }
            sent_before = true;
        }
        out.push(emit);
    }
    out
}

fn render_unpaced(turn: &StreamTurn, wire: &mut impl WireStream) -> Vec<Emit> {
    let mut out = Vec::new();
    wire.open(&mut out);
    if turn.cut_after_blocks == Some(0) {
        out.push(Emit::Cut);
        return out;
    }
    let mut blocks_sent = 0;
    for step in &turn.steps {
        match step {
            Step::Pause(duration) => out.push(Emit::Pause(*duration)),
            Step::Gate(name) => out.push(Emit::Gate(name.clone())),
            content => {
                wire.content(content, &mut out);
                if content.ends_stream() {
                    return out;
                }
                blocks_sent += 1;
                if turn.cut_after_blocks == Some(blocks_sent) {
                    out.push(Emit::Cut);
                    return out;
                }
            }
        }
    }
    wire.finish(&mut out);
    if !turn.terminal_event
        && let Some(last) = out.iter().rposition(|emit| matches!(emit, Emit::Send(_)))
    {
        out.remove(last);
    }
    out
}

/// Counts blocks of one kind to name their default ids (`{prefix}_t{turn}_{n}`).
struct DefaultIds {
    prefix: &'static str,
    turn_number: usize,
    issued: usize,
}

impl DefaultIds {
    fn new(prefix: &'static str, turn_number: usize) -> Self {
        Self {
            prefix,
            turn_number,
            issued: 0,
        }
    }

    /// `explicit` if given, else the next default id; counts the block either way so a
    /// default id depends only on the block's position.
    fn next(&mut self, explicit: Option<&str>) -> String {
        self.issued += 1;
        match explicit {
            Some(id) => id.to_owned(),
            None => format!("{}_t{}_{}", self.prefix, self.turn_number, self.issued),
        }
    }
}

struct AnthropicStream<'a> {
    context: &'a ReplyContext,
    stop: StopReason,
    usage: ScriptUsage,
    index: usize,
    tool_ids: DefaultIds,
    signatures: DefaultIds,
}

impl<'a> AnthropicStream<'a> {
    fn new(turn: &StreamTurn, context: &'a ReplyContext) -> Self {
        Self {
            context,
            stop: turn.stop,
            usage: turn.usage,
            index: 0,
            tool_ids: DefaultIds::new("toolu", context.turn_number),
            signatures: DefaultIds::new("sig", context.turn_number),
        }
    }

    /// `event: {type}` + `data: {json}`, the event name always equal to the data's type.
    fn event(out: &mut Vec<Emit>, data: Value) {
        let kind = data["type"].as_str().unwrap_or_default().to_owned();
        out.push(Emit::Send(Bytes::from(format!(
            "event: {kind}\ndata: {data}\n\n"
        ))));
    }

    fn block(&mut self, out: &mut Vec<Emit>, start: Value, deltas: Vec<Value>) {
        let index = self.open_block(out, start, deltas);
        Self::event(out, json!({ "type": "content_block_stop", "index": index }));
    }

    /// Starts a block and sends `deltas`, leaving it open; returns its index.
    fn open_block(&mut self, out: &mut Vec<Emit>, start: Value, deltas: Vec<Value>) -> usize {
        let index = self.index;
        self.index += 1;
        Self::event(
            out,
            json!({ "type": "content_block_start", "index": index, "content_block": start }),
        );
        for delta in deltas {
            Self::event(
                out,
                json!({ "type": "content_block_delta", "index": index, "delta": delta }),
            );
        }
        index
    }
}

impl WireStream for AnthropicStream<'_> {
    fn open(&mut self, out: &mut Vec<Emit>) {
        let usage = self.usage;
        let message = json!({
            "id": format!("msg_scripted_t{}", self.context.turn_number),
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": self.context.model,
            "stop_reason": null,
            "stop_sequence": null,
            "usage": {
                "input_tokens": usage.input,
                "cache_creation_input_tokens": usage.cache_write,
                "cache_read_input_tokens": usage.cache_read,
                // The real API reports a token or so here and the total in message_delta.
                "output_tokens": usage.output.min(1),
            },
        });
        Self::event(out, json!({ "type": "message_start", "message": message }));
        Self::event(out, json!({ "type": "ping" }));
    }

    fn content(&mut self, step: &Step, out: &mut Vec<Emit>) {
        match step {
            Step::Text { text, chunk } => {
                let deltas = pieces(text, *chunk)
                    .into_iter()
                    .map(|piece| json!({ "type": "text_delta", "text": piece }))
                    .collect();
                self.block(out, json!({ "type": "text", "text": "" }), deltas);
            }
            Step::Thinking {
                thinking,
                signature,
                chunk,
            } => {
                let signature = self.signatures.next(signature.as_deref());
                let mut deltas: Vec<Value> = pieces(thinking, *chunk)
                    .into_iter()
                    .map(|piece| json!({ "type": "thinking_delta", "thinking": piece }))
                    .collect();
                deltas.push(json!({ "type": "signature_delta", "signature": signature }));
                let start = json!({ "type": "thinking", "thinking": "", "signature": "" });
                self.block(out, start, deltas);
            }
            Step::RedactedThinking { data } => {
                let start = json!({ "type": "redacted_thinking", "data": data });
                self.block(out, start, Vec::new());
            }
            Step::Tool {
                name,
                id,
                args,
                chunk,
                cut_after_chunks,
            } => {
                let id = self.tool_ids.next(id.as_deref());
                let mut fragments = pieces(args, *chunk);
                if fragments.is_empty() {
                    // The API sends one empty fragment for a call without arguments.
                    fragments.push(String::new());
                }
                fragments.truncate(cut_after_chunks.unwrap_or(usize::MAX));
                let deltas = fragments
                    .into_iter()
                    .map(|piece| json!({ "type": "input_json_delta", "partial_json": piece }))
                    .collect();
                let start = json!({ "type": "tool_use", "id": id, "name": name, "input": {} });
                if cut_after_chunks.is_some() {
                    self.open_block(out, start, deltas);
                    out.push(Emit::Cut);
                } else {
                    self.block(out, start, deltas);
                }
            }
            Step::StreamError { kind, message } => Self::event(
                out,
                json!({ "type": "error", "error": { "type": kind, "message": message } }),
            ),
            Step::Pause(_) | Step::Gate(_) => {}
        }
    }

    fn finish(&mut self, out: &mut Vec<Emit>) {
        let stop_reason = match self.stop {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::StopSequence => "stop_sequence",
            StopReason::Refusal => "refusal",
        };
        Self::event(
            out,
            json!({
                "type": "message_delta",
                "delta": { "stop_reason": stop_reason, "stop_sequence": null },
                "usage": { "output_tokens": self.usage.output },
            }),
        );
        Self::event(out, json!({ "type": "message_stop" }));
    }
}

struct OpenAiStream<'a> {
    context: &'a ReplyContext,
    stop: StopReason,
    usage: ScriptUsage,
    has_text: bool,
    tool_ids: DefaultIds,
}

impl<'a> OpenAiStream<'a> {
    fn new(turn: &StreamTurn, context: &'a ReplyContext) -> Self {
        Self {
            context,
            stop: turn.stop,
            usage: turn.usage,
            has_text: turn
                .steps
                .iter()
                .any(|step| matches!(step, Step::Text { .. })),
            tool_ids: DefaultIds::new("call", context.turn_number),
        }
    }

    fn send(out: &mut Vec<Emit>, data: &Value) {
        out.push(Emit::Send(Bytes::from(format!("data: {data}\n\n"))));
    }

    fn chunk(&self, choices: Value) -> Value {
        let mut chunk = json!({
            "id": format!("chatcmpl-scripted-t{}", self.context.turn_number),
            "object": "chat.completion.chunk",
            "created": self.context.created,
            "model": self.context.model,
            "choices": choices,
        });
        if self.context.include_usage {
            // With include_usage, every chunk but the last carries `usage: null`.
            chunk["usage"] = Value::Null;
        }
        chunk
    }

    fn delta(&self, out: &mut Vec<Emit>, delta: Value) {
        let choice = json!({ "index": 0, "delta": delta, "logprobs": null, "finish_reason": null });
        Self::send(out, &self.chunk(json!([choice])));
    }
}

impl WireStream for OpenAiStream<'_> {
    fn open(&mut self, out: &mut Vec<Emit>) {
        // Like the API: an empty string when text follows, null for a tool-only answer.
        let content = if self.has_text {
            json!("")
        } else {
            Value::Null
        };
        self.delta(out, json!({ "role": "assistant", "content": content }));
    }

    fn content(&mut self, step: &Step, out: &mut Vec<Emit>) {
        match step {
            Step::Text { text, chunk } => {
                for piece in pieces(text, *chunk) {
                    self.delta(out, json!({ "content": piece }));
                }
            }
            Step::Thinking {
                thinking, chunk, ..
            } => {
                for piece in pieces(thinking, *chunk) {
                    self.delta(out, json!({ "reasoning_content": piece }));
                }
            }
            // Chat completions has no way to carry encrypted reasoning.
            Step::RedactedThinking { .. } | Step::Pause(_) | Step::Gate(_) => {}
            Step::Tool {
                name,
                id,
                args,
                chunk,
                cut_after_chunks,
            } => {
                let index = self.tool_ids.issued;
                let id = self.tool_ids.next(id.as_deref());
                let opening = json!({
                    "index": index,
                    "id": id,
                    "type": "function",
                    "function": { "name": name, "arguments": "" },
                });
                self.delta(out, json!({ "tool_calls": [opening] }));
                let fragments = pieces(args, *chunk);
                let sent = cut_after_chunks.unwrap_or(fragments.len());
                for piece in fragments.into_iter().take(sent) {
                    let fragment = json!({ "index": index, "function": { "arguments": piece } });
                    self.delta(out, json!({ "tool_calls": [fragment] }));
                }
                if cut_after_chunks.is_some() {
                    out.push(Emit::Cut);
                }
            }
            Step::StreamError { kind, message } => {
                let error = json!({
                    "error": { "message": message, "type": kind, "param": null, "code": null },
                });
                Self::send(out, &error);
            }
        }
    }

    fn finish(&mut self, out: &mut Vec<Emit>) {
        let finish_reason = match self.stop {
            StopReason::EndTurn | StopReason::StopSequence => "stop",
            StopReason::ToolUse => "tool_calls",
            StopReason::MaxTokens => "length",
            StopReason::Refusal => "content_filter",
        };
        let choice =
            json!({ "index": 0, "delta": {}, "logprobs": null, "finish_reason": finish_reason });
        Self::send(out, &self.chunk(json!([choice])));
        if self.context.include_usage {
            let usage = self.usage;
            let prompt = usage.input + usage.cache_read + usage.cache_write;
            let mut last = self.chunk(json!([]));
            last["usage"] = json!({
                "prompt_tokens": prompt,
                "completion_tokens": usage.output,
                "total_tokens": prompt + usage.output,
                "prompt_tokens_details": { "cached_tokens": usage.cache_read },
            });
            Self::send(out, &last);
        }
        out.push(Emit::Send(Bytes::from_static(b"data: [DONE]\n\n")));
    }
}
