//! The OpenAI Responses wire: `POST {base}/responses` with `stream: true`.
//!
//! Owns: translating a [`ModelRequest`] into the Responses body (input items,
//! `instructions`, function tools) and decoding its typed event stream
//! (`response.output_item.added`, `response.output_text.delta`, ...).
//! Does not own: HTTP details ([`super::http`]), SSE framing ([`super::sse`]) or what the
//! two OpenAI wires share ([`super::openai_common`]).
//! Invariant: duet keeps no state on OpenAI's side (`store: false`): every request
//! carries the whole conversation, and each step's reasoning items go back verbatim, in
//! order, before that step's `function_call` items. The decoder ends with `Finished`
//! only on `response.completed` or `response.incomplete`, and every `ToolCallStart` it
//! emits is closed by a `ToolCallEnd` before that.

use std::sync::atomic::{AtomicBool, Ordering};

use reqwest::header::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::http;
use super::openai_common::{
    api_error, bearer_headers, image_urls, join_non_empty, texts, tool_output,
};
use super::sse::SseEvent;
use super::stream::{Flow, WireDecoder, push_unless_empty};
use super::{
    Block, Endpoint, EventStream, Message, ModelClient, ModelRequest, ProviderError, Role,
    StopReason, StreamEvent, ToolCall, ToolSpec, Usage,
};

/// Asks for each reasoning item's encrypted content, which is what lets a stateless
/// (`store: false`) conversation keep the model's reasoning between requests.
const ENCRYPTED_REASONING: &str = "reasoning.encrypted_content";

/// Separates the parts of a reasoning summary in the thinking text.
const PARAGRAPH_BREAK: &str = "\n\n";

/// A client for the OpenAI Responses API.
pub struct OpenAiResponsesClient {
    transport: http::Transport,
    endpoint: Endpoint,
    /// Cleared for the rest of the session once the model refuses
    /// [`ENCRYPTED_REASONING`]: models without reasoning (`gpt-4o`, many compatible
    /// servers) reject the whole request when it is asked for.
    ask_for_reasoning: AtomicBool,
}

impl OpenAiResponsesClient {
    pub fn new(transport: http::Transport, endpoint: Endpoint) -> Self {
        Self {
            transport,
            endpoint,
            ask_for_reasoning: AtomicBool::new(true),
        }
    }

    async fn send(
        &self,
        request: &ModelRequest,
        ask_for_reasoning: bool,
    ) -> Result<EventStream, ProviderError> {
        self.transport
            .stream_events(
                &self.url(),
                self.headers()?,
                &request_body(&self.endpoint.model, request, ask_for_reasoning),
                ResponsesDecoder::default(),
            )
            .await
    }

    fn url(&self) -> String {
        format!("{}/responses", self.endpoint.base_url.trim_end_matches('/'))
    }

    fn headers(&self) -> Result<HeaderMap, ProviderError> {
        bearer_headers(self.endpoint.api_key.as_deref())
    }
}

#[async_trait::async_trait]
impl ModelClient for OpenAiResponsesClient {
    fn model(&self) -> &str {
        &self.endpoint.model
    }

    async fn stream(&self, request: &ModelRequest) -> Result<EventStream, ProviderError> {
        if !self.ask_for_reasoning.load(Ordering::Relaxed) {
            return self.send(request, false).await;
        }
        match self.send(request, true).await {
            Err(error) if refuses_encrypted_reasoning(&error) => {
                tracing::info!(
                    model = %self.endpoint.model,
                    "the model refuses {ENCRYPTED_REASONING}; asking without it from now on"
                );
                self.ask_for_reasoning.store(false, Ordering::Relaxed);
                self.send(request, false).await
            }
            result => result,
        }
    }
}

/// Whether `error` is the API's refusal of [`ENCRYPTED_REASONING`] by a model that has
/// no reasoning to encrypt ("Encrypted content is not supported with this model").
fn refuses_encrypted_reasoning(error: &ProviderError) -> bool {
    match error {
        ProviderError::Http {
            status: 400,
            message,
            ..
        } => {
            let message = message.to_ascii_lowercase();
            message.contains("encrypted content") || message.contains(ENCRYPTED_REASONING)
        }
        _ => false,
    }
}

// ---------------------------------------------------------------------------------
// Request body
// ---------------------------------------------------------------------------------

#[derive(Debug, Serialize)]
struct RequestBody<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<String>,
    input: Vec<InputItem<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    parallel_tool_calls: bool,
    max_output_tokens: u32,
    stream: bool,
    store: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    include: Vec<&'static str>,
}

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
    /// duet's schemas are not written for strict mode (optional fields, open objects).
    strict: bool,
}

/// One `input` item.
#[derive(Debug, PartialEq, Serialize)]
#[serde(untagged)]
enum InputItem<'a> {
    Message(MessageItem),
    FunctionCall(FunctionCallItem<'a>),
    FunctionCallOutput(FunctionCallOutputItem<'a>),
    /// A reasoning item exactly as the API produced it.
    Reasoning(&'a Value),
}

#[derive(Debug, PartialEq, Serialize)]
struct MessageItem {
    #[serde(rename = "type")]
    kind: &'static str,
    role: Role,
    content: Vec<Part>,
}

/// A part of a message item: text, or (from the user) an image.
#[derive(Debug, PartialEq, Serialize)]
#[serde(untagged)]
enum Part {
    Text(ContentPart),
    Image(ImagePart),
}

/// `{"type": "input_image", "image_url": "data:..."}`.
#[derive(Debug, PartialEq, Serialize)]
struct ImagePart {
    #[serde(rename = "type")]
    kind: &'static str,
    /// A `data:` URL holding the image.
    image_url: String,
}

#[derive(Debug, PartialEq, Serialize)]
struct ContentPart {
    /// `input_text` for the user's words, `output_text` for the model's.
    #[serde(rename = "type")]
    kind: &'static str,
    text: String,
}

#[derive(Debug, PartialEq, Serialize)]
struct FunctionCallItem<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    call_id: &'a str,
    name: &'a str,
    /// The arguments exactly as the model produced them.
    arguments: &'a str,
}

#[derive(Debug, PartialEq, Serialize)]
struct FunctionCallOutputItem<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    call_id: &'a str,
    output: String,
}

/// The Responses request body for `request`, asking for reasoning items' encrypted
/// content if `ask_for_reasoning`.
fn request_body<'a>(
    model: &'a str,
    request: &'a ModelRequest,
    ask_for_reasoning: bool,
) -> RequestBody<'a> {
    let mut input = Vec::new();
    for message in &request.messages {
        match message.role {
            Role::User => push_user_items(&mut input, message),
            Role::Assistant => push_assistant_items(&mut input, message),
        }
    }
    if let Some(context) = request.volatile_context.as_deref() {
        input.extend(text_message(Role::User, context));
    }
    RequestBody {
        model,
        instructions: join_non_empty(request.system.iter().map(String::as_str)),
        input,
        tools: request.tools.iter().map(wire_tool).collect(),
        parallel_tool_calls: true,
        max_output_tokens: request.max_tokens,
        stream: true,
        store: false,
        include: if ask_for_reasoning {
            vec![ENCRYPTED_REASONING]
        } else {
            Vec::new()
        },
    }
}

fn wire_tool(tool: &ToolSpec) -> WireTool<'_> {
    WireTool {
        kind: "function",
        name: &tool.name,
        description: &tool.description,
        parameters: &tool.input_schema,
        strict: false,
    }
}

/// Tool outputs first (they answer the calls just before them), then the user's text.
fn push_user_items<'a>(input: &mut Vec<InputItem<'a>>, message: &'a Message) {
    input.extend(message.tool_results().map(|result| {
        InputItem::FunctionCallOutput(FunctionCallOutputItem {
            kind: "function_call_output",
            call_id: &result.call_id,
            output: tool_output(result),
        })
    }));
    let text = join_non_empty(texts(message));
    let images: Vec<Part> = image_urls(message)
        .map(|image_url| {
            Part::Image(ImagePart {
                kind: "input_image",
                image_url,
            })
        })
        .collect();
    if images.is_empty() {
        if let Some(text) = text {
            input.extend(text_message(Role::User, &text));
        }
        return;
    }
    let content = text
        .map(|text| {
            Part::Text(ContentPart {
                kind: "input_text",
                text,
            })
        })
        .into_iter()
        .chain(images)
        .collect();
    input.push(InputItem::Message(MessageItem {
        kind: "message",
        role: Role::User,
        content,
    }));
}

/// The assistant's blocks in their order, so each reasoning item precedes the calls it
/// led to. Thinking text is dropped: the reasoning item it summarises carries it.
fn push_assistant_items<'a>(input: &mut Vec<InputItem<'a>>, message: &'a Message) {
    for block in &message.content {
        match block {
            Block::Text { text } => input.extend(text_message(Role::Assistant, text)),
            Block::ReasoningItem { item } => input.push(InputItem::Reasoning(item)),
            Block::ToolCall(call) => input.push(function_call(call)),
            Block::Thinking { .. }
            | Block::RedactedThinking { .. }
            | Block::ToolResult(_)
            | Block::Image { .. } => {}
        }
    }
}

fn function_call(call: &ToolCall) -> InputItem<'_> {
    InputItem::FunctionCall(FunctionCallItem {
        kind: "function_call",
        call_id: &call.id,
        name: &call.name,
        arguments: &call.arguments,
    })
}

/// A message item with one text part, or `None` for empty text.
fn text_message(role: Role, text: &str) -> Option<InputItem<'static>> {
    if text.is_empty() {
        return None;
    }
    let kind = match role {
        Role::User => "input_text",
        Role::Assistant => "output_text",
    };
    Some(InputItem::Message(MessageItem {
        kind: "message",
        role,
        content: vec![Part::Text(ContentPart {
            kind,
            text: text.to_owned(),
        })],
    }))
}

// ---------------------------------------------------------------------------------
// Event stream
// ---------------------------------------------------------------------------------

/// One streamed event: the types duet reads, with the fields it reads (others are
/// ignored); every other type is [`WireEvent::Other`], whatever its shape.
#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
enum WireEvent {
    #[serde(rename = "response.output_text.delta")]
    TextDelta { delta: String },
    #[serde(rename = "response.reasoning_summary_text.delta")]
    SummaryTextDelta { delta: String },
    #[serde(rename = "response.reasoning_summary_part.added")]
    SummaryPartAdded { summary_index: u64 },
    #[serde(rename = "response.output_item.added")]
    ItemAdded { item: Value },
    #[serde(rename = "response.function_call_arguments.delta")]
    ArgumentsDelta { item_id: String, delta: String },
    #[serde(rename = "response.function_call_arguments.done")]
    ArgumentsDone { item_id: String, arguments: String },
    #[serde(rename = "response.output_item.done")]
    ItemDone { item: Value },
    #[serde(rename = "response.completed")]
    Completed { response: WireResponse },
    #[serde(rename = "response.incomplete")]
    Incomplete { response: WireResponse },
    #[serde(rename = "response.failed")]
    Failed { response: WireResponse },
    #[serde(rename = "error")]
    Error {
        code: Option<String>,
        message: Option<String>,
    },
    /// Lifecycle events (created, in_progress, content parts, the `.done` of texts)
    /// and event types newer than this client: nothing duet needs.
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct WireResponse {
    usage: Option<WireUsage>,
    incomplete_details: Option<IncompleteDetails>,
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct IncompleteDetails {
    reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    input_tokens_details: Option<InputTokensDetails>,
}

#[derive(Debug, Deserialize)]
struct InputTokensDetails {
    cached_tokens: Option<u64>,
    cache_write_tokens: Option<u64>,
}

/// A `function_call` output item whose arguments are streaming.
#[derive(Debug)]
struct OpenCall {
    call_id: String,
    name: String,
    arguments: String,
}

/// Decodes the Responses event stream.
#[derive(Debug, Default)]
pub struct ResponsesDecoder {
    /// Calls whose arguments are streaming, by item id (`fc_...`), in the order they
    /// opened; results pair with their `call_id`.
    open_calls: Vec<(String, OpenCall)>,
    /// Item ids of calls already ended, whose later events are repeats.
    ended_calls: Vec<String>,
    made_calls: bool,
}

impl WireDecoder for ResponsesDecoder {
    const TERMINAL_EVENT: &'static str = "`response.completed` event";

    fn decode(
        &mut self,
        event: &SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Flow, ProviderError> {
        let event: WireEvent = serde_json::from_str(&event.data).map_err(|err| {
            ProviderError::Malformed(format!("undecodable event `{}`: {err}", event.data))
        })?;
        match event {
            WireEvent::TextDelta { delta } => {
                push_unless_empty(out, delta, |text| StreamEvent::TextDelta { text });
            }
            WireEvent::SummaryTextDelta { delta } => {
                push_unless_empty(out, delta, |text| StreamEvent::ThinkingDelta { text });
            }
            // Summary parts read as paragraphs of one thought.
            WireEvent::SummaryPartAdded { summary_index } if summary_index > 0 => {
                out.push(StreamEvent::ThinkingDelta {
                    text: PARAGRAPH_BREAK.into(),
                });
            }
            WireEvent::ItemAdded { item } if item["type"] == "function_call" => {
                self.open_call(function_call_fields(&item)?, out);
            }
            WireEvent::ArgumentsDelta { item_id, delta } => {
                self.arguments_delta(&item_id, delta, out)?;
            }
            WireEvent::ArgumentsDone { item_id, arguments } => {
                self.end_call(&item_id, Some(arguments), out)?;
            }
            WireEvent::ItemDone { item } => self.item_done(item, out)?,
            WireEvent::Completed { response } => {
                self.finish(response, None, out);
                return Ok(Flow::Finished);
            }
            WireEvent::Incomplete { response } => {
                let reason = response
                    .incomplete_details
                    .as_ref()
                    .and_then(|details| details.reason.as_deref())
                    .map_or(StopReason::Other("incomplete".into()), incomplete_reason);
                self.finish(response, Some(reason), out);
                return Ok(Flow::Finished);
            }
            WireEvent::Failed { response } => return Err(failed(response)),
            WireEvent::Error { code, message } => {
                return Err(ProviderError::Api {
                    kind: code.unwrap_or_else(|| "error".into()),
                    message: message.unwrap_or_else(|| "unknown error".into()),
                });
            }
            WireEvent::SummaryPartAdded { .. } | WireEvent::ItemAdded { .. } | WireEvent::Other => {
            }
        }
        Ok(Flow::Continue)
    }
}

impl ResponsesDecoder {
    fn open_call(&mut self, call: FunctionCallFields, out: &mut Vec<StreamEvent>) {
        out.push(StreamEvent::ToolCallStart {
            id: call.open.call_id.clone(),
            name: call.open.name.clone(),
        });
        self.made_calls = true;
        self.open_calls.push((call.item_id, call.open));
    }

    fn arguments_delta(
        &mut self,
        item_id: &str,
        fragment: String,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let Some((_, call)) = self.open_calls.iter_mut().find(|(id, _)| id == item_id) else {
            return Err(ProviderError::Malformed(format!(
                "arguments for `{item_id}`, which is not an open function call"
            )));
        };
        if !fragment.is_empty() {
            call.arguments.push_str(&fragment);
            out.push(StreamEvent::ToolCallArgsDelta {
                id: call.call_id.clone(),
                fragment,
            });
        }
        Ok(())
    }

    fn item_done(&mut self, item: Value, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        match item["type"].as_str() {
            Some("function_call") => {
                let call = function_call_fields(&item)?;
                if self.ended_calls.contains(&call.item_id) {
                    return Ok(());
                }
                let item_id = call.item_id.clone();
                if !self.is_open(&item_id) {
                    // A server that skipped `output_item.added`.
                    self.open_call(call, out);
                }
                let arguments = item["arguments"].as_str().map(str::to_owned);
                self.end_call(&item_id, arguments, out)
            }
            // Without its encrypted content a reasoning item cannot be sent back to a
            // stateless conversation (the API would look its id up and fail).
            Some("reasoning") if item["encrypted_content"].is_string() => {
                out.push(StreamEvent::ReasoningItem { item });
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn is_open(&self, item_id: &str) -> bool {
        self.open_calls.iter().any(|(id, _)| id == item_id)
    }

    /// Ends the call with item id `item_id`; `arguments` (from a `.done` event) are the
    /// whole text and win over the fragments.
    fn end_call(
        &mut self,
        item_id: &str,
        arguments: Option<String>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let Some(position) = self.open_calls.iter().position(|(id, _)| id == item_id) else {
            if self.ended_calls.iter().any(|ended| ended == item_id) {
                return Ok(());
            }
            return Err(ProviderError::Malformed(format!(
                "`{item_id}` ended without being announced as a function call"
            )));
        };
        let (item_id, call) = self.open_calls.remove(position);
        self.ended_calls.push(item_id);
        out.push(close(call, arguments));
        Ok(())
    }

    /// Pushes the `Finished` event; `incomplete` is the stop reason of a response that
    /// ended early. A call still open there was cut by the token limit: it ends first,
    /// with its partial arguments, which the agent never runs.
    fn finish(
        &mut self,
        response: WireResponse,
        incomplete: Option<StopReason>,
        out: &mut Vec<StreamEvent>,
    ) {
        for (_, call) in self.open_calls.drain(..) {
            out.push(close(call, None));
        }
        let stop_reason = match incomplete {
            Some(reason) => reason,
            None if self.made_calls => StopReason::ToolUse,
            None => StopReason::EndTurn,
        };
        out.push(StreamEvent::Finished {
            stop_reason,
            usage: response.usage.map(Usage::from).unwrap_or_default(),
        });
    }
}

/// The identifying fields of a `function_call` output item.
struct FunctionCallFields {
    item_id: String,
    open: OpenCall,
}

fn function_call_fields(item: &Value) -> Result<FunctionCallFields, ProviderError> {
    let text = |key: &str| {
        item[key]
            .as_str()
            .filter(|value| !value.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| {
                ProviderError::Malformed(format!("a function_call item without `{key}`: {item}"))
            })
    };
    let call_id = text("call_id")?;
    // `id` is optional in the item schema; the call id identifies it just as well.
    let item_id = text("id").unwrap_or_else(|_| call_id.clone());
    Ok(FunctionCallFields {
        item_id,
        open: OpenCall {
            call_id,
            name: text("name")?,
            arguments: String::new(),
        },
    })
}

fn close(call: OpenCall, arguments: Option<String>) -> StreamEvent {
    let arguments = arguments.unwrap_or(call.arguments);
    StreamEvent::ToolCallEnd {
        call: ToolCall {
            id: call.call_id,
            name: call.name,
            arguments: if arguments.is_empty() {
                "{}".to_owned()
            } else {
                arguments
            },
        },
    }
}

/// `response.failed`: the response's error object decides retrying by its `code`.
fn failed(response: WireResponse) -> ProviderError {
    match response.error {
        Some(error) => api_error(&error),
        None => ProviderError::Api {
            kind: "error".into(),
            message: "the response failed without an error object".into(),
        },
    }
}

fn incomplete_reason(reason: &str) -> StopReason {
    match reason {
        "max_output_tokens" => StopReason::MaxTokens,
        "content_filter" => StopReason::Refusal,
        other => StopReason::Other(other.to_owned()),
    }
}

impl From<WireUsage> for Usage {
    /// `input_tokens` include the ones read from and written to the cache; duet's
    /// `input_tokens` are neither, as on the other wires.
    fn from(usage: WireUsage) -> Self {
        let input = usage.input_tokens.unwrap_or(0);
        let (cached, written) = usage
            .input_tokens_details
            .map(|details| {
                (
                    details.cached_tokens.unwrap_or(0),
                    details.cache_write_tokens.unwrap_or(0),
                )
            })
            .unwrap_or_default();
        Usage {
            input_tokens: input.saturating_sub(cached).saturating_sub(written),
            output_tokens: usage.output_tokens.unwrap_or(0),
            cache_read_tokens: cached,
            cache_write_tokens: written,
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;
    use crate::provider::Wire;
    use crate::provider::stream::testing::{
        Outcome, assert_chunking_invariant, assert_decodes_fixture, decode_whole,
        read_and_grep_calls,
    };
    use crate::provider::test_server::{
        Reply, TestServer, call, endpoint, http_error, request, result, say_hi, transport,
    };

    const FIXTURE: &str =
        include_str!("../../tests/fixtures/openai_responses/reasoning_text_two_tools.sse");

    fn body_json(request: &ModelRequest) -> Value {
        serde_json::to_value(request_body("gpt-test", request, true)).unwrap()
    }

    fn reasoning_item(id: &str) -> Value {
        json!({
            "id": id,
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "Read first."}],
            "encrypted_content": format!("enc-{id}"),
        })
    }

    #[test]
    fn builds_the_full_request_with_reasoning_before_its_calls() {
        let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}});
        let mut request = request(vec![
            Message::user_text("Fix the failing test."),
            Message {
                role: Role::Assistant,
                content: vec![
                    Block::Thinking {
                        thinking: "Read first.".into(),
                        signature: None,
                    },
                    Block::ReasoningItem {
                        item: reasoning_item("rs_1"),
                    },
                    Block::Text {
                        text: "Reading.".into(),
                    },
                    call("call_1", "read", r#"{"path":"src/lib.rs"}"#),
                    call("call_2", "grep", "{not json"),
                ],
            },
            Message {
                role: Role::User,
                content: vec![
                    Block::Text {
                        text: "Also check the docs.".into(),
                    },
                    result("call_1", "fn main() {}", false),
                    result("call_2", "the arguments are not valid JSON", true),
                ],
            },
        ]);
        request.system = vec!["You are duet.".into(), String::new(), "Rules.".into()];
        request.tools = vec![ToolSpec {
            name: "read".into(),
            description: "Reads a file.".into(),
            input_schema: schema.clone(),
        }];
        request.volatile_context = Some("cwd: /repo".into());

        assert_eq!(
            body_json(&request),
            json!({
                "model": "gpt-test",
                "instructions": "You are duet.\n\nRules.",
                "stream": true,
                "store": false,
                "include": ["reasoning.encrypted_content"],
                "max_output_tokens": 2048,
                "parallel_tool_calls": true,
                "tools": [{
                    "type": "function", "name": "read", "description": "Reads a file.",
                    "parameters": schema, "strict": false
                }],
                "input": [
                    {"type": "message", "role": "user",
                     "content": [{"type": "input_text", "text": "Fix the failing test."}]},
                    reasoning_item("rs_1"),
                    {"type": "message", "role": "assistant",
                     "content": [{"type": "output_text", "text": "Reading."}]},
                    {"type": "function_call", "call_id": "call_1", "name": "read",
                     "arguments": "{\"path\":\"src/lib.rs\"}"},
                    {"type": "function_call", "call_id": "call_2", "name": "grep",
                     "arguments": "{not json"},
                    {"type": "function_call_output", "call_id": "call_1", "output": "fn main() {}"},
                    {"type": "function_call_output", "call_id": "call_2",
                     "output": "Error: the arguments are not valid JSON"},
                    {"type": "message", "role": "user",
                     "content": [{"type": "input_text", "text": "Also check the docs."}]},
                    {"type": "message", "role": "user",
                     "content": [{"type": "input_text", "text": "cwd: /repo"}]}
                ]
            })
        );
    }

    #[test]
    fn other_wires_blocks_and_empty_text_are_left_out() {
        let request = request(vec![
            Message::user_text("go"),
            Message {
                role: Role::Assistant,
                content: vec![
                    Block::Thinking {
                        thinking: "signed".into(),
                        signature: Some("sig".into()),
                    },
                    Block::RedactedThinking {
                        data: "opaque".into(),
                    },
                    Block::Text {
                        text: String::new(),
                    },
                ],
            },
        ]);
        let body = body_json(&request);
        assert_eq!(
            body["input"],
            json!([{"type": "message", "role": "user",
                    "content": [{"type": "input_text", "text": "go"}]}])
        );
        assert_eq!(body.get("instructions"), None);
        assert_eq!(body.get("tools"), None);
    }

    fn fixture_events() -> Vec<StreamEvent> {
        let thinking = |text: &str| StreamEvent::ThinkingDelta { text: text.into() };
        let text = |text: &str| StreamEvent::TextDelta { text: text.into() };
        vec![
            thinking("The test fails in "),
            thinking("`parse`. "),
            thinking("\n\n"),
            thinking("Read the file, then grep."),
            StreamEvent::ReasoningItem {
                item: json!({
                    "id": "rs_01",
                    "type": "reasoning",
                    "summary": [
                        {"type": "summary_text", "text": "The test fails in `parse`. "},
                        {"type": "summary_text", "text": "Read the file, then grep."}
                    ],
                    "encrypted_content": "gAAAAABpZ0enc-RyPt3d=="
                }),
            },
            text("I'll read "),
            text("the parser — “ünïcode” "),
            text("and all 🦀."),
        ]
        .into_iter()
        .chain(read_and_grep_calls("call_Qx3vT8mZ", "call_Lk9wP2rD"))
        .chain([StreamEvent::Finished {
            stop_reason: StopReason::ToolUse,
            usage: Usage {
                input_tokens: 2560,
                output_tokens: 187,
                cache_read_tokens: 10240,
                cache_write_tokens: 0,
            },
        }])
        .collect()
    }

    #[test]
    fn decodes_the_recorded_stream_however_it_is_chunked() {
        assert_decodes_fixture(FIXTURE, ResponsesDecoder::default, fixture_events());
    }

    fn decode(input: &str) -> Outcome {
        decode_whole(input.as_bytes(), ResponsesDecoder::default())
    }

    /// `event: {type}` + `data: {json}` with a sequence number, as the API sends it.
    fn sse(events: &[Value]) -> String {
        events
            .iter()
            .enumerate()
            .map(|(sequence, event)| {
                let mut event = event.clone();
                event["sequence_number"] = json!(sequence);
                format!(
                    "event: {}\ndata: {event}\n\n",
                    event["type"].as_str().unwrap()
                )
            })
            .collect()
    }

    fn response(status: &str, extra: Value) -> Value {
        let mut response = json!({
            "id": "resp_1", "object": "response", "status": status, "output": [],
            "usage": {"input_tokens": 13, "output_tokens": 2,
                      "input_tokens_details": {"cached_tokens": 4, "cache_write_tokens": 3}}
        });
        if let Value::Object(extra) = extra {
            response.as_object_mut().unwrap().extend(extra);
        }
        response
    }

    fn call_added(item_id: &str, call_id: &str) -> Value {
        json!({"type": "response.output_item.added", "output_index": 0, "item": {
            "id": item_id, "type": "function_call", "call_id": call_id,
            "name": "write", "arguments": "", "status": "in_progress"}})
    }

    fn args_delta(item_id: &str, delta: &str) -> Value {
        json!({"type": "response.function_call_arguments.delta", "item_id": item_id,
               "output_index": 0, "delta": delta})
    }

    #[test]
    fn incomplete_at_the_token_limit_is_max_tokens_and_ends_the_cut_call() {
        let stream = sse(&[
            json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
                   "content_index": 0, "delta": "Writing", "logprobs": []}),
            call_added("fc_1", "call_1"),
            args_delta("fc_1", "{\"path\": \"a"),
            json!({"type": "response.incomplete", "response": response("incomplete",
                json!({"incomplete_details": {"reason": "max_output_tokens"}}))}),
        ]);
        let expected = Outcome::ok(vec![
            StreamEvent::TextDelta {
                text: "Writing".into(),
            },
            StreamEvent::ToolCallStart {
                id: "call_1".into(),
                name: "write".into(),
            },
            StreamEvent::ToolCallArgsDelta {
                id: "call_1".into(),
                fragment: "{\"path\": \"a".into(),
            },
            StreamEvent::ToolCallEnd {
                call: ToolCall {
                    id: "call_1".into(),
                    name: "write".into(),
                    arguments: "{\"path\": \"a".into(),
                },
            },
            StreamEvent::Finished {
                stop_reason: StopReason::MaxTokens,
                usage: Usage {
                    input_tokens: 6,
                    output_tokens: 2,
                    cache_read_tokens: 4,
                    cache_write_tokens: 3,
                },
            },
        ]);
        assert_chunking_invariant(stream.as_bytes(), ResponsesDecoder::default, &expected);
    }

    #[test]
    fn maps_incomplete_reasons() {
        for (reason, expected) in [
            ("max_output_tokens", StopReason::MaxTokens),
            ("content_filter", StopReason::Refusal),
            ("max_messages", StopReason::Other("max_messages".into())),
        ] {
            let stream = sse(
                &[json!({"type": "response.incomplete", "response": response(
                "incomplete", json!({"incomplete_details": {"reason": reason}}))})],
            );
            let outcome = decode(&stream);
            assert!(
                matches!(outcome.events.last(), Some(StreamEvent::Finished { stop_reason, .. }) if *stop_reason == expected),
                "{reason}: {outcome:?}"
            );
        }
    }

    #[test]
    fn failed_responses_and_error_events_are_api_errors_classified_by_code() {
        let failed = |code: &str| {
            sse(&[
                json!({"type": "response.failed", "response": response("failed", json!({
                "error": {"code": code, "message": "The model failed."}}))}),
            ])
        };
        let server_error = ProviderError::Api {
            kind: "server_error".into(),
            message: "The model failed.".into(),
        };
        assert_eq!(
            decode(&failed("server_error")),
            Outcome::failed(Vec::new(), &server_error)
        );
        assert!(server_error.is_transient());
        let invalid = ProviderError::Api {
            kind: "invalid_prompt".into(),
            message: "The model failed.".into(),
        };
        assert_eq!(
            decode(&failed("invalid_prompt")),
            Outcome::failed(Vec::new(), &invalid)
        );
        assert!(!invalid.is_transient());

        let error_event = sse(&[json!({"type": "error", "code": "rate_limit_exceeded",
            "message": "Slow down.", "param": null})]);
        assert_eq!(
            decode(&error_event),
            Outcome::failed(
                Vec::new(),
                &ProviderError::Api {
                    kind: "rate_limit_exceeded".into(),
                    message: "Slow down.".into()
                }
            )
        );
    }

    #[test]
    fn unknown_events_and_unusable_reasoning_are_ignored() {
        let stream = sse(&[
            json!({"type": "response.created", "response": response("in_progress", json!({}))}),
            json!({"type": "response.future_feature.delta", "item_id": "x", "delta": 5}),
            json!({"type": "response.output_item.done", "output_index": 0,
                   "item": {"id": "rs_1", "type": "reasoning", "summary": []}}),
            json!({"type": "response.output_item.done", "output_index": 1,
                   "item": {"id": "ws_1", "type": "web_search_call", "status": "completed"}}),
            json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 2,
                   "content_index": 0, "delta": "hi", "logprobs": []}),
            json!({"type": "response.completed", "response": response("completed", json!({}))}),
        ]);
        assert_eq!(
            decode(&stream),
            Outcome::ok(vec![
                StreamEvent::TextDelta { text: "hi".into() },
                StreamEvent::Finished {
                    stop_reason: StopReason::EndTurn,
                    usage: Usage {
                        input_tokens: 6,
                        output_tokens: 2,
                        cache_read_tokens: 4,
                        cache_write_tokens: 3,
                    },
                },
            ])
        );
    }

    #[test]
    fn a_call_seen_only_at_its_item_done_still_starts_and_ends_once() {
        let done = json!({"type": "response.output_item.done", "output_index": 0, "item": {
            "id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "write",
            "arguments": "{\"path\":\"a\"}", "status": "completed"}});
        let stream = sse(&[
            done.clone(),
            done,
            json!({"type": "response.completed", "response": response("completed", json!({}))}),
        ]);
        let outcome = decode(&stream);
        assert_eq!(outcome.error, None);
        assert_eq!(
            outcome.events[..2],
            [
                StreamEvent::ToolCallStart {
                    id: "call_1".into(),
                    name: "write".into()
                },
                StreamEvent::ToolCallEnd {
                    call: ToolCall {
                        id: "call_1".into(),
                        name: "write".into(),
                        arguments: "{\"path\":\"a\"}".into()
                    }
                },
            ]
        );
        assert!(matches!(
            outcome.events[2],
            StreamEvent::Finished {
                stop_reason: StopReason::ToolUse,
                ..
            }
        ));
    }

    #[test]
    fn malformed_and_cut_streams_are_errors() {
        let orphan = sse(&[args_delta("fc_9", "{}")]);
        assert!(
            decode(&orphan)
                .error
                .unwrap()
                .contains("not an open function call")
        );
        let bad_json = "event: response.output_text.delta\ndata: {\"type\":\n\n";
        assert!(
            decode(bad_json)
                .error
                .unwrap()
                .starts_with("Malformed(\"undecodable event")
        );
        let wrong_shape = sse(&[json!({"type": "response.output_text.delta", "delta": 5})]);
        assert!(
            decode(&wrong_shape)
                .error
                .unwrap()
                .starts_with("Malformed(\"undecodable event")
        );
        let cut = FIXTURE.split("event: response.completed").next().unwrap();
        let mut before_finish = fixture_events();
        before_finish.pop();
        assert_eq!(
            decode(cut),
            Outcome::failed(
                before_finish,
                &ProviderError::Truncated(
                    "the body ended without the `response.completed` event".into()
                )
            )
        );
    }

    fn client(base_url: String, api_key: Option<&str>, model: &str) -> OpenAiResponsesClient {
        OpenAiResponsesClient::new(
            transport(),
            endpoint(Wire::OpenAiResponses, base_url, api_key, model),
        )
    }

    #[tokio::test]
    async fn streams_from_a_server_at_base_slash_responses() {
        let server = TestServer::start("/v1/responses", |_| Reply::stream(FIXTURE)).await;
        let client = client(server.url("/v1/"), Some("sk-test"), "gpt-test");
        assert_eq!(client.model(), "gpt-test");
        assert_eq!(
            say_hi(&client).await.unwrap(),
            Outcome::ok(fixture_events())
        );
        let sent = server.only_request();
        sent.assert_headers(&[("authorization", "Bearer sk-test")]);
        assert_eq!(sent.body["model"], "gpt-test");
        assert_eq!(sent.body["stream"], true);
        assert_eq!(sent.body["store"], false);
    }

    /// Whether a request body asks for encrypted reasoning.
    fn asks_for_encrypted_reasoning(body: &Value) -> bool {
        body.get("include").is_some()
    }

    #[tokio::test]
    async fn a_model_that_refuses_encrypted_reasoning_is_asked_without_it_from_then_on() {
        // Answers like the real API for a model without reasoning: 400 when the body
        // asks for encrypted reasoning, the recorded stream otherwise.
        let server = TestServer::start("/v1/responses", |body| {
            if asks_for_encrypted_reasoning(body) {
                let error = json!({"error": {"message": "Encrypted content is not supported \
                    with this model.", "type": "invalid_request_error", "param": "include",
                    "code": null}});
                Reply::error(StatusCode::BAD_REQUEST, error.to_string())
            } else {
                Reply::stream(FIXTURE)
            }
        })
        .await;
        let client = client(server.url("/v1"), None, "gpt-4o");
        for _ in 0..2 {
            assert_eq!(
                say_hi(&client).await.unwrap(),
                Outcome::ok(fixture_events())
            );
        }
        let seen: Vec<bool> = server
            .sent()
            .iter()
            .map(|sent| asks_for_encrypted_reasoning(&sent.body))
            .collect();
        assert_eq!(seen, [true, false, false]);
    }

    #[test]
    fn only_the_refusal_of_encrypted_reasoning_drops_it() {
        assert!(refuses_encrypted_reasoning(&http_error(
            400,
            "Encrypted content is not supported with this model."
        )));
        assert!(refuses_encrypted_reasoning(&http_error(
            400,
            "Unsupported value for include: 'reasoning.encrypted_content'"
        )));
        assert!(!refuses_encrypted_reasoning(&http_error(
            400,
            "max_output_tokens too large"
        )));
        assert!(!refuses_encrypted_reasoning(&http_error(
            500,
            "encrypted content"
        )));
        assert!(
            !request_body("m", &request(Vec::new()), false)
                .include
                .contains(&ENCRYPTED_REASONING)
        );
    }

    mod properties {
        use proptest::prelude::*;

        use super::*;
        use crate::provider::stream_properties::{GeneratedTurn, check_stream, cuts, turn};

        /// `turn` as the Responses API streams it: a message item for the text, then a
        /// function_call item per call.
        fn render(turn: &GeneratedTurn) -> String {
            let mut events = vec![json!({"type": "response.created",
                "response": response("in_progress", json!({}))})];
            let mut index = 0;
            if !turn.text.is_empty() {
                events.push(
                    json!({"type": "response.output_item.added", "output_index": 0,
                    "item": {"id": "msg_1", "type": "message", "role": "assistant",
                             "status": "in_progress", "content": []}}),
                );
                for text in &turn.text {
                    events.push(json!({"type": "response.output_text.delta",
                        "item_id": "msg_1", "output_index": 0, "content_index": 0,
                        "delta": text, "logprobs": []}));
                }
                index += 1;
            }
            for call in &turn.calls {
                let item_id = format!("fc_{index}");
                events.push(
                    json!({"type": "response.output_item.added", "output_index": index,
                    "item": {"id": item_id, "type": "function_call", "call_id": call.id,
                             "name": call.name, "arguments": "", "status": "in_progress"}}),
                );
                for fragment in &call.fragments {
                    events.push(json!({"type": "response.function_call_arguments.delta",
                        "item_id": item_id, "output_index": index, "delta": fragment}));
                }
                events.push(json!({"type": "response.function_call_arguments.done",
                    "item_id": item_id, "output_index": index,
                    "arguments": call.fragments.concat()}));
                index += 1;
            }
            events.push(json!({"type": "response.completed",
                "response": response("completed", json!({}))}));
            sse(&events)
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(150))]

            #[test]
            fn any_turn_decodes_the_same_however_it_is_chunked_or_cut(
                turn in turn(),
                cuts in cuts(),
            ) {
                check_stream(&render(&turn), ResponsesDecoder::default, &turn, &cuts)?;
            }
        }
    }
}
