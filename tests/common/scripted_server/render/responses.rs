//! The OpenAI Responses event stream: every event as `event: {type}` plus
//! `data: {json}` whose `type` repeats the name and whose `sequence_number` counts from
//! 0, with the items, parts and lifecycle events the API sends around the deltas.
//!
//! Script blocks map to output items: text → a `message` item, thinking → a
//! `reasoning` item whose summary is the thinking text and whose `encrypted_content` is
//! a deterministic fake blob, redacted thinking → a `reasoning` item with no summary
//! and the data as its blob, a tool → a `function_call` item (item id `fc_t{turn}_{n}`,
//! call id as on the chat wire), or a `custom_tool_call` item whose `input` is the
//! block's `args` text (item id `ctc_t{turn}_{n}`) when the request declared that tool
//! `"type": "custom"` (a freeform tool, such as Codex's `apply_patch`). A stream error is `response.failed`, `max_tokens` is
//! `response.incomplete` (`max_output_tokens`) and `refusal` is `response.incomplete`
//! (`content_filter`).

use bytes::Bytes;
use serde_json::{Value, json};

use super::{DefaultIds, Emit, ReplyContext, WireStream};
use crate::common::script::{ScriptUsage, Step, StopReason, StreamTurn, pieces};

/// How one kind of tool call streams on the Responses wire: a function call carries
/// JSON `arguments`, a call to a freeform (custom) tool carries text `input`.
struct CallKind {
    custom: bool,
    item_type: &'static str,
    payload: &'static str,
    delta_event: &'static str,
    done_event: &'static str,
}

const FUNCTION_CALL: CallKind = CallKind {
    custom: false,
    item_type: "function_call",
    payload: "arguments",
    delta_event: "response.function_call_arguments.delta",
    done_event: "response.function_call_arguments.done",
};

const CUSTOM_TOOL_CALL: CallKind = CallKind {
    custom: true,
    item_type: "custom_tool_call",
    payload: "input",
    delta_event: "response.custom_tool_call_input.delta",
    done_event: "response.custom_tool_call_input.done",
};

pub(super) struct ResponsesStream<'a> {
    context: &'a ReplyContext,
    stop: StopReason,
    usage: ScriptUsage,
    sequence: u64,
    /// The output items completed so far, in order (`response.completed` lists them).
    pub(super) output: Vec<Value>,
    messages: DefaultIds,
    reasoning: DefaultIds,
    signatures: DefaultIds,
    call_ids: DefaultIds,
    call_items: DefaultIds,
    custom_items: DefaultIds,
}

impl<'a> ResponsesStream<'a> {
    pub(super) fn new(turn: &StreamTurn, context: &'a ReplyContext) -> Self {
        let turn_number = context.turn_number;
        Self {
            context,
            stop: turn.stop,
            usage: turn.usage,
            sequence: 0,
            output: Vec::new(),
            messages: DefaultIds::new("msg", turn_number),
            reasoning: DefaultIds::new("rs", turn_number),
            signatures: DefaultIds::new("sig", turn_number),
            call_ids: DefaultIds::new("call", turn_number),
            call_items: DefaultIds::new("fc", turn_number),
            custom_items: DefaultIds::new("ctc", turn_number),
        }
    }

    fn event(&mut self, out: &mut Vec<Emit>, mut data: Value) {
        let kind = data["type"].as_str().unwrap_or_default().to_owned();
        data["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        out.push(Emit::Send(Bytes::from(format!(
            "event: {kind}\ndata: {data}\n\n"
        ))));
    }

    /// The `response` object in `status`, listing the output so far.
    fn response(&self, status: &str) -> Value {
        json!({
            "id": format!("resp_scripted_t{}", self.context.turn_number),
            "object": "response",
            "created_at": self.context.created,
            "status": status,
            "model": self.context.model,
            "output": self.output,
            "parallel_tool_calls": true,
            "tool_choice": "auto",
            "tools": [],
            "store": false,
            "error": null,
            "incomplete_details": null,
            "usage": null,
        })
    }

    fn item_added(&mut self, out: &mut Vec<Emit>, index: usize, item: Value) {
        self.event(
            out,
            json!({ "type": "response.output_item.added", "output_index": index, "item": item }),
        );
    }

    fn item_done(&mut self, out: &mut Vec<Emit>, index: usize, item: Value) {
        self.event(
            out,
            json!({ "type": "response.output_item.done", "output_index": index, "item": item }),
        );
        self.output.push(item);
    }

    fn message(&mut self, out: &mut Vec<Emit>, text: &str, chunk: Option<std::num::NonZeroUsize>) {
        let index = self.output.len();
        let id = self.messages.next(None);
        let item = |status: &str, content: Value| json!({ "id": id, "type": "message", "status": status, "role": "assistant", "content": content });
        self.item_added(out, index, item("in_progress", json!([])));
        let part = |text: &str| json!({ "type": "output_text", "text": text, "annotations": [] });
        let located = json!({ "item_id": id, "output_index": index, "content_index": 0 });
        let with = |fields: Value| merge(&located, fields);
        self.event(
            out,
            with(json!({ "type": "response.content_part.added", "part": part("") })),
        );
        for piece in pieces(text, chunk) {
            self.event(
                out,
                with(
                    json!({ "type": "response.output_text.delta", "delta": piece, "logprobs": [] }),
                ),
            );
        }
        self.event(
            out,
            with(json!({ "type": "response.output_text.done", "text": text, "logprobs": [] })),
        );
        self.event(
            out,
            with(json!({ "type": "response.content_part.done", "part": part(text) })),
        );
        self.item_done(out, index, item("completed", json!([part(text)])));
    }

    fn reasoning(
        &mut self,
        out: &mut Vec<Emit>,
        summary: Option<(&str, Vec<String>)>,
        blob: String,
    ) {
        let index = self.output.len();
        let id = self.reasoning.next(None);
        self.item_added(
            out,
            index,
            json!({ "id": id, "type": "reasoning", "summary": [] }),
        );
        let mut summary_parts = Vec::new();
        if let Some((text, deltas)) = summary {
            let part = |text: &str| json!({ "type": "summary_text", "text": text });
            let located = json!({ "item_id": id, "output_index": index, "summary_index": 0 });
            let with = |fields: Value| merge(&located, fields);
            self.event(
                out,
                with(json!({ "type": "response.reasoning_summary_part.added", "part": part("") })),
            );
            for delta in deltas {
                self.event(
                    out,
                    with(
                        json!({ "type": "response.reasoning_summary_text.delta", "delta": delta }),
                    ),
                );
            }
            self.event(
                out,
                with(json!({ "type": "response.reasoning_summary_text.done", "text": text })),
            );
            self.event(
                out,
                with(json!({ "type": "response.reasoning_summary_part.done", "part": part(text) })),
            );
            summary_parts.push(part(text));
        }
        let item = json!({
            "id": id,
            "type": "reasoning",
            "summary": summary_parts,
            "encrypted_content": blob,
        });
        self.item_done(out, index, item);
    }

    /// Streams a call as `kind`; with `cut_after` fragments, stops there and cuts.
    fn tool_call(
        &mut self,
        out: &mut Vec<Emit>,
        kind: &CallKind,
        name: &str,
        call_id: String,
        fragments: Vec<String>,
        cut_after: Option<usize>,
    ) {
        let index = self.output.len();
        let id = if kind.custom {
            self.custom_items.next(None)
        } else {
            self.call_items.next(None)
        };
        let with_payload = |mut value: Value, payload: &str| {
            value[kind.payload] = json!(payload);
            value
        };
        let item = |status: &str, payload: &str| {
            with_payload(
                json!({
                    "id": id, "type": kind.item_type, "status": status,
                    "call_id": call_id, "name": name,
                }),
                payload,
            )
        };
        self.item_added(out, index, item("in_progress", ""));
        let payload: String = fragments.concat();
        let sent = cut_after.unwrap_or(fragments.len());
        for piece in fragments.into_iter().take(sent) {
            self.event(
                out,
                json!({
                    "type": kind.delta_event,
                    "item_id": id, "output_index": index, "delta": piece,
                }),
            );
        }
        if cut_after.is_some() {
            out.push(Emit::Cut);
            return;
        }
        let done = json!({ "type": kind.done_event, "item_id": id, "output_index": index });
        self.event(out, with_payload(done, &payload));
        self.item_done(out, index, item("completed", &payload));
    }

    fn usage(&self) -> Value {
        let usage = self.usage;
        let input = usage.input + usage.cache_read + usage.cache_write;
        json!({
            "input_tokens": input,
            "input_tokens_details": {
                "cached_tokens": usage.cache_read,
                "cache_write_tokens": usage.cache_write,
            },
            "output_tokens": usage.output,
            "output_tokens_details": { "reasoning_tokens": 0 },
            "total_tokens": input + usage.output,
        })
    }
}

/// `base` with `fields` added (both objects).
fn merge(base: &Value, fields: Value) -> Value {
    let mut merged = base.clone();
    if let (Some(merged), Value::Object(fields)) = (merged.as_object_mut(), fields) {
        merged.extend(fields);
    }
    merged
}

/// The fake `encrypted_content` of a reasoning item: deterministic, opaque-looking, and
/// different for every item, so an echo that mixes items up is caught.
fn fake_blob(turn: usize, signature: &str) -> String {
    format!("gAAAAB-scripted-t{turn}-{signature}")
}

impl WireStream for ResponsesStream<'_> {
    fn open(&mut self, out: &mut Vec<Emit>) {
        let response = self.response("in_progress");
        self.event(
            out,
            json!({ "type": "response.created", "response": response }),
        );
        self.event(
            out,
            json!({ "type": "response.in_progress", "response": response }),
        );
    }

    fn content(&mut self, step: &Step, out: &mut Vec<Emit>) {
        match step {
            Step::Text { text, chunk } => self.message(out, text, *chunk),
            Step::Thinking {
                thinking,
                signature,
                chunk,
            } => {
                let signature = self.signatures.next(signature.as_deref());
                let blob = fake_blob(self.context.turn_number, &signature);
                self.reasoning(out, Some((thinking, pieces(thinking, *chunk))), blob);
            }
            Step::RedactedThinking { data } => self.reasoning(out, None, data.clone()),
            Step::Tool {
                name,
                id,
                args,
                chunk,
                cut_after_chunks,
            } => {
                let call_id = self.call_ids.next(id.as_deref());
                let fragments = pieces(args, *chunk);
                if self
                    .context
                    .custom_tools
                    .iter()
                    .any(|custom| custom == name)
                {
                    self.tool_call(
                        out,
                        &CUSTOM_TOOL_CALL,
                        name,
                        call_id,
                        fragments,
                        *cut_after_chunks,
                    );
                } else {
                    self.tool_call(
                        out,
                        &FUNCTION_CALL,
                        name,
                        call_id,
                        fragments,
                        *cut_after_chunks,
                    );
                }
            }
            Step::StreamError { kind, message } => {
                let mut response = self.response("failed");
                response["error"] = json!({ "code": kind, "message": message });
                self.event(
                    out,
                    json!({ "type": "response.failed", "response": response }),
                );
            }
            Step::Pause(_) | Step::Gate(_) => {}
        }
    }

    fn finish(&mut self, out: &mut Vec<Emit>) {
        let incomplete_reason = match self.stop {
            StopReason::EndTurn | StopReason::ToolUse | StopReason::StopSequence => None,
            StopReason::MaxTokens => Some("max_output_tokens"),
            StopReason::Refusal => Some("content_filter"),
        };
        let (kind, status) = match incomplete_reason {
            None => ("response.completed", "completed"),
            Some(_) => ("response.incomplete", "incomplete"),
        };
        let mut response = self.response(status);
        response["usage"] = self.usage();
        if let Some(reason) = incomplete_reason {
            response["incomplete_details"] = json!({ "reason": reason });
        }
        self.event(out, json!({ "type": kind, "response": response }));
    }
}
