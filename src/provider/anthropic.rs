//! The Anthropic Messages wire: `POST {base}/v1/messages` with `stream: true`.
//!
//! Owns: translating a [`ModelRequest`] into the Messages request body (including the
//! prompt-caching breakpoints) and decoding the Messages event stream.
//! Does not own: HTTP details ([`super::http`]) or SSE framing ([`super::sse`]).
//! Invariant: the request body is a pure function of the request and model name; the
//! decoder ends with `Finished` only on `message_stop`, or at a clean end of the body
//! after `message_delta` gave the stop reason and every block closed; every
//! `ToolCallStart` it emits is closed by a `ToolCallEnd` before that.

use std::borrow::Cow;
use std::collections::HashMap;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::sse::SseEvent;
use super::stream::{Flow, WireDecoder, missing_terminal_event, push_unless_empty};
use super::{
    Block, Endpoint, EventStream, Message, ModelClient, ModelRequest, ProviderError, Role,
    StopReason, StreamEvent, ToolCall, ToolResult, ToolSpec, Usage, http,
};

const API_VERSION: &str = "2023-06-01";

/// A client for the Anthropic Messages API.
pub struct AnthropicClient {
    transport: http::Transport,
    endpoint: Endpoint,
}

impl AnthropicClient {
    pub fn new(transport: http::Transport, endpoint: Endpoint) -> Self {
        Self {
            transport,
            endpoint,
        }
    }

    fn url(&self) -> String {
        format!(
            "{}/v1/messages",
            self.endpoint.base_url.trim_end_matches('/')
        )
    }

    fn headers(&self) -> Result<HeaderMap, ProviderError> {
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        );
        if let Some(key) = &self.endpoint.api_key {
            headers.insert(
                HeaderName::from_static("x-api-key"),
                http::secret_header(key)?,
            );
        }
        Ok(headers)
    }
}

#[async_trait::async_trait]
impl ModelClient for AnthropicClient {
    fn model(&self) -> &str {
        &self.endpoint.model
    }

    async fn stream(&self, request: &ModelRequest) -> Result<EventStream, ProviderError> {
        self.transport
            .stream_events(
                &self.url(),
                self.headers()?,
                &request_body(&self.endpoint.model, request),
                AnthropicDecoder::default(),
            )
            .await
    }
}

// ---------------------------------------------------------------------------------
// Request body
// ---------------------------------------------------------------------------------

#[derive(Debug, Serialize)]
struct RequestBody<'a> {
    model: &'a str,
    max_tokens: u32,
    stream: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<WireBlock<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    messages: Vec<WireMessage<'a>>,
}

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

#[derive(Debug, Serialize)]
struct WireMessage<'a> {
    role: Role,
    content: Vec<WireBlock<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlock<'a> {
    Text {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// A base64 image in a user message.
    Image {
        source: ImageSource<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolResult {
        tool_use_id: &'a str,
        // The API rejects empty text content; an absent `content` means "no output".
        #[serde(skip_serializing_if = "str::is_empty")]
        content: &'a str,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
}

impl WireBlock<'_> {
    fn is_tool_result(&self) -> bool {
        matches!(self, WireBlock::ToolResult { .. })
    }

    /// Marks this block as the end of a cached prefix. Thinking blocks cannot carry a
    /// breakpoint; returns whether the mark was placed.
    fn mark_cache_breakpoint(&mut self) -> bool {
        match self {
            WireBlock::Text { cache_control, .. }
            | WireBlock::Image { cache_control, .. }
            | WireBlock::ToolUse { cache_control, .. }
            | WireBlock::ToolResult { cache_control, .. } => {
                *cache_control = Some(CacheControl::Ephemeral);
                true
            }
            WireBlock::Thinking { .. } | WireBlock::RedactedThinking { .. } => false,
        }
    }
}

/// An image's bytes, as the Messages API takes them inline.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ImageSource<'a> {
    Base64 { media_type: &'a str, data: &'a str },
}

#[derive(Clone, Copy, Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum CacheControl {
    Ephemeral,
}

/// The Messages request body for `request`. Cache breakpoints sit on the last system
/// block, the last tool, and the last cacheable block of the conversation, so the
/// stable prefix is cached and each turn extends the cache; the volatile context is
/// appended after the last breakpoint.
fn request_body<'a>(model: &'a str, request: &'a ModelRequest) -> RequestBody<'a> {
    let mut system: Vec<WireBlock<'a>> = request
        .system
        .iter()
        .filter(|text| !text.is_empty())
        .map(|text| text_block(text))
        .collect();
    if let Some(last) = system.last_mut() {
        last.mark_cache_breakpoint();
    }

    let mut tools: Vec<WireTool<'a>> = request.tools.iter().map(wire_tool).collect();
    if let Some(last) = tools.last_mut() {
        last.cache_control = Some(CacheControl::Ephemeral);
    }

    let mut messages = wire_messages(&request.messages);
    mark_last_cacheable_block(&mut messages);
    if let Some(context) = request.volatile_context.as_deref() {
        append_user_text(&mut messages, context);
    }

    RequestBody {
        model,
        max_tokens: request.max_tokens,
        stream: true,
        system,
        tools,
        messages,
    }
}

fn text_block(text: &str) -> WireBlock<'_> {
    WireBlock::Text {
        text,
        cache_control: None,
    }
}

fn wire_tool(tool: &ToolSpec) -> WireTool<'_> {
    WireTool {
        name: &tool.name,
        description: &tool.description,
        input_schema: &tool.input_schema,
        cache_control: None,
    }
}

/// Translates the conversation: empty messages are dropped, consecutive messages of
/// one role are merged (the API wants strict alternation), and in user messages the
/// tool results come first (the API requires them to lead).
fn wire_messages(messages: &[Message]) -> Vec<WireMessage<'_>> {
    let mut wire: Vec<WireMessage<'_>> = Vec::new();
    for message in messages {
        let content: Vec<WireBlock<'_>> = message.content.iter().filter_map(wire_block).collect();
        if content.is_empty() {
            continue;
        }
        match wire.last_mut() {
            Some(previous) if previous.role == message.role => previous.content.extend(content),
            _ => wire.push(WireMessage {
                role: message.role,
                content,
            }),
        }
    }
    for message in wire.iter_mut().filter(|message| message.role == Role::User) {
        // A stable sort keeps the order within results and within the other blocks.
        message.content.sort_by_key(|block| !block.is_tool_result());
    }
    wire
}

/// The wire form of one block, or `None` for blocks the API must not receive.
fn wire_block(block: &Block) -> Option<WireBlock<'_>> {
    match block {
        Block::Text { text } if text.is_empty() => None,
        Block::Text { text } => Some(text_block(text)),
        // Without its signature the API rejects a thinking block; the model does not
        // need to see cut-off reasoning again.
        Block::Thinking {
            thinking,
            signature: Some(signature),
        } => Some(WireBlock::Thinking {
            thinking,
            signature,
        }),
        Block::Thinking {
            signature: None, ..
        } => None,
        Block::RedactedThinking { data } => Some(WireBlock::RedactedThinking { data }),
        // Another wire's reasoning: this API cannot read it.
        Block::ReasoningItem { .. } => None,
        Block::ToolCall(call) => Some(tool_use_block(call)),
        Block::ToolResult(result) => Some(tool_result_block(result)),
        Block::Image { media_type, data } => Some(WireBlock::Image {
            source: ImageSource::Base64 { media_type, data },
            cache_control: None,
        }),
    }
}

fn tool_use_block(call: &ToolCall) -> WireBlock<'_> {
    // `input` must be an object; arguments the model garbled are sent back as `{}`
    // (the tool already answered that call with an error explaining why).
    let input = match serde_json::from_str::<Value>(&call.arguments) {
        Ok(object @ Value::Object(_)) => object,
        _ => Value::Object(serde_json::Map::new()),
    };
    WireBlock::ToolUse {
        id: &call.id,
        name: &call.name,
        input,
        cache_control: None,
    }
}

fn tool_result_block(result: &ToolResult) -> WireBlock<'_> {
    WireBlock::ToolResult {
        tool_use_id: &result.call_id,
        content: &result.content,
        is_error: result.is_error,
        cache_control: None,
    }
}

fn mark_last_cacheable_block(messages: &mut [WireMessage<'_>]) {
    let blocks_from_the_end = messages
        .iter_mut()
        .rev()
        .flat_map(|message| message.content.iter_mut().rev());
    for block in blocks_from_the_end {
        if block.mark_cache_breakpoint() {
            return;
        }
    }
}

fn append_user_text<'a>(messages: &mut Vec<WireMessage<'a>>, text: &'a str) {
    match messages.last_mut() {
        Some(last) if last.role == Role::User => last.content.push(text_block(text)),
        _ => messages.push(WireMessage {
            role: Role::User,
            content: vec![text_block(text)],
        }),
    }
}

// ---------------------------------------------------------------------------------
// Event stream
// ---------------------------------------------------------------------------------

/// The stream events this decoder understands; others are skipped so new API
/// features do not break old clients.
#[derive(Debug)]
enum WireEvent {
    MessageStart {
        message: MessageStart,
    },
    ContentBlockStart {
        index: u64,
        content_block: ContentBlock,
    },
    ContentBlockDelta {
        index: u64,
        delta: Delta,
    },
    ContentBlockStop {
        index: u64,
    },
    MessageDelta {
        /// The stop reason, once the model stopped.
        reason: Option<String>,
        usage: WireUsage,
    },
    MessageStop,
    Error {
        error: ApiError,
    },
    /// `ping`, and event types this decoder does not know.
    Ignored,
}

/// Every field an event of the stream may carry, read in one pass and then sorted by
/// `type` ([`EventFields::into_event`]). Deriving an internally tagged enum instead
/// makes serde buffer each event into an intermediate tree before reading it again,
/// which was the largest cost of the agent's thread while text streamed.
#[derive(Deserialize)]
struct EventFields<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    index: Option<u64>,
    message: Option<MessageStart>,
    content_block: Option<ContentBlock>,
    #[serde(borrow)]
    delta: Option<DeltaFields<'a>>,
    usage: Option<WireUsage>,
    error: Option<ApiError>,
}

/// The `delta` of `content_block_delta` (tagged `text_delta`, `input_json_delta`, ...)
/// and of `message_delta` (untagged, with the stop reason).
#[derive(Deserialize)]
struct DeltaFields<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    text: Option<String>,
    partial_json: Option<String>,
    thinking: Option<String>,
    signature: Option<String>,
    stop_reason: Option<String>,
}

/// The event types this decoder reads, by their `type`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum EventKind {
    MessageStart,
    ContentBlockStart,
    ContentBlockDelta,
    ContentBlockStop,
    MessageDelta,
    MessageStop,
    Error,
    /// `ping`, and types added to the API after this decoder.
    Other,
}

impl EventKind {
    fn of(kind: &str) -> EventKind {
        match kind {
            "message_start" => EventKind::MessageStart,
            "content_block_start" => EventKind::ContentBlockStart,
            "content_block_delta" => EventKind::ContentBlockDelta,
            "content_block_stop" => EventKind::ContentBlockStop,
            "message_delta" => EventKind::MessageDelta,
            "message_stop" => EventKind::MessageStop,
            "error" => EventKind::Error,
            _ => EventKind::Other,
        }
    }
}

/// Reads one event's JSON. An event of a type this decoder does not know is ignored
/// even when its fields would not fit the known events' shapes.
fn parse_event(data: &str) -> Result<WireEvent, String> {
    #[derive(Deserialize)]
    struct Kind<'a> {
        #[serde(rename = "type", borrow)]
        kind: Cow<'a, str>,
    }
    match serde_json::from_str::<EventFields>(data) {
        Ok(fields) => fields.into_event(),
        Err(err) => match serde_json::from_str::<Kind>(data) {
            Ok(Kind { kind }) if EventKind::of(&kind) == EventKind::Other => Ok(WireEvent::Ignored),
            _ => Err(err.to_string()),
        },
    }
}

/// `field` when the event has it; else the error serde gives for a missing field.
fn required<T>(field: Option<T>, name: &str) -> Result<T, String> {
    field.ok_or_else(|| format!("missing field `{name}`"))
}

impl EventFields<'_> {
    fn into_event(self) -> Result<WireEvent, String> {
        let event = match EventKind::of(&self.kind) {
            EventKind::MessageStart => WireEvent::MessageStart {
                message: required(self.message, "message")?,
            },
            EventKind::ContentBlockStart => WireEvent::ContentBlockStart {
                index: required(self.index, "index")?,
                content_block: required(self.content_block, "content_block")?,
            },
            EventKind::ContentBlockDelta => WireEvent::ContentBlockDelta {
                index: required(self.index, "index")?,
                delta: required(self.delta, "delta")?.into_content_delta()?,
            },
            EventKind::ContentBlockStop => WireEvent::ContentBlockStop {
                index: required(self.index, "index")?,
            },
            EventKind::MessageDelta => WireEvent::MessageDelta {
                reason: required(self.delta, "delta")?.stop_reason,
                usage: self.usage.unwrap_or_default(),
            },
            EventKind::MessageStop => WireEvent::MessageStop,
            EventKind::Error => WireEvent::Error {
                error: required(self.error, "error")?,
            },
            EventKind::Other => WireEvent::Ignored,
        };
        Ok(event)
    }
}

impl DeltaFields<'_> {
    fn into_content_delta(self) -> Result<Delta, String> {
        let delta = match required(self.kind, "type")?.as_ref() {
            "text_delta" => Delta::Text(required(self.text, "text")?),
            "input_json_delta" => Delta::InputJson(required(self.partial_json, "partial_json")?),
            "thinking_delta" => Delta::Thinking(required(self.thinking, "thinking")?),
            "signature_delta" => Delta::Signature(required(self.signature, "signature")?),
            _ => Delta::Unknown,
        };
        Ok(delta)
    }
}

#[derive(Debug, Deserialize)]
struct MessageStart {
    #[serde(default)]
    usage: WireUsage,
}

/// Usage counts; `message_delta` repeats them cumulatively, so a later value replaces
/// an earlier one.
#[derive(Debug, Default, Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Option<Value>,
    },
    #[serde(other)]
    Unknown,
}

/// A content block delta; the wire names end in `_delta` (`text_delta`, ...).
#[derive(Debug)]
enum Delta {
    Text(String),
    InputJson(String),
    Thinking(String),
    Signature(String),
    Unknown,
}

#[derive(Debug, Deserialize)]
struct ApiError {
    #[serde(rename = "type")]
    kind: String,
    message: String,
}

/// A content block between its start and stop events.
#[derive(Debug)]
enum OpenBlock {
    /// Text, thinking and blocks we do not know: their deltas need no state.
    Stateless,
    ToolUse {
        id: String,
        name: String,
        arguments: String,
        /// The `input` given at block start, used if no argument deltas follow.
        initial_input: Option<Value>,
    },
}

/// Decodes the Messages event stream.
#[derive(Debug, Default)]
pub struct AnthropicDecoder {
    open_blocks: HashMap<u64, OpenBlock>,
    usage: Usage,
    stop_reason: Option<StopReason>,
}

impl WireDecoder for AnthropicDecoder {
    const TERMINAL_EVENT: &'static str = "`message_stop` event";

    fn decode(
        &mut self,
        event: &SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Flow, ProviderError> {
        let wire_event = parse_event(&event.data).map_err(|err| {
            ProviderError::Malformed(format!("undecodable event `{}`: {err}", event.data))
        })?;
        match wire_event {
            WireEvent::MessageStart { message } => self.record_usage(&message.usage),
            WireEvent::ContentBlockStart {
                index,
                content_block,
            } => self.start_block(index, content_block, out)?,
            WireEvent::ContentBlockDelta { index, delta } => self.apply_delta(index, delta, out)?,
            WireEvent::ContentBlockStop { index } => self.stop_block(index, out)?,
            WireEvent::MessageDelta { reason, usage } => {
                if let Some(reason) = reason {
                    self.stop_reason = Some(stop_reason(&reason));
                }
                self.record_usage(&usage);
            }
            WireEvent::MessageStop => {
                out.push(self.finish()?);
                return Ok(Flow::Finished);
            }
            WireEvent::Error { error } => {
                return Err(ProviderError::Api {
                    kind: error.kind,
                    message: error.message,
                });
            }
            WireEvent::Ignored => {}
        }
        Ok(Flow::Continue)
    }

    /// Complete once `message_delta` gave the stop reason and every block closed.
    fn end_of_body(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        if self.stop_reason.is_none() || !self.open_blocks.is_empty() {
            return Err(missing_terminal_event::<Self>());
        }
        out.push(self.finish()?);
        Ok(())
    }
}

impl AnthropicDecoder {
    fn record_usage(&mut self, usage: &WireUsage) {
        let fields = [
            (usage.input_tokens, &mut self.usage.input_tokens),
            (usage.output_tokens, &mut self.usage.output_tokens),
            (
                usage.cache_creation_input_tokens,
                &mut self.usage.cache_write_tokens,
            ),
            (
                usage.cache_read_input_tokens,
                &mut self.usage.cache_read_tokens,
            ),
        ];
        for (reported, total) in fields {
            if let Some(reported) = reported {
                *total = reported;
            }
        }
    }

    fn start_block(
        &mut self,
        index: u64,
        block: ContentBlock,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let open = match block {
            ContentBlock::Text { text } => {
                push_unless_empty(out, text, |text| StreamEvent::TextDelta { text });
                OpenBlock::Stateless
            }
            ContentBlock::Thinking {
                thinking,
                signature,
            } => {
                push_unless_empty(out, thinking, |text| StreamEvent::ThinkingDelta { text });
                push_unless_empty(out, signature, |signature| StreamEvent::ThinkingSignature {
                    signature,
                });
                OpenBlock::Stateless
            }
            ContentBlock::RedactedThinking { data } => {
                out.push(StreamEvent::RedactedThinking { data });
                OpenBlock::Stateless
            }
            ContentBlock::ToolUse { id, name, input } => {
                out.push(StreamEvent::ToolCallStart {
                    id: id.clone(),
                    name: name.clone(),
                });
                OpenBlock::ToolUse {
                    id,
                    name,
                    arguments: String::new(),
                    initial_input: input,
                }
            }
            ContentBlock::Unknown => OpenBlock::Stateless,
        };
        if self.open_blocks.insert(index, open).is_some() {
            return Err(ProviderError::Malformed(format!(
                "content block {index} started twice"
            )));
        }
        Ok(())
    }

    fn apply_delta(
        &mut self,
        index: u64,
        delta: Delta,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let block = self.open_blocks.get_mut(&index).ok_or_else(|| {
            ProviderError::Malformed(format!(
                "delta for content block {index}, which is not open"
            ))
        })?;
        match delta {
            Delta::Text(text) => {
                push_unless_empty(out, text, |text| StreamEvent::TextDelta { text });
            }
            Delta::Thinking(thinking) => {
                push_unless_empty(out, thinking, |text| StreamEvent::ThinkingDelta { text });
            }
            Delta::Signature(signature) => {
                out.push(StreamEvent::ThinkingSignature { signature });
            }
            Delta::InputJson(partial_json) => {
                let OpenBlock::ToolUse { id, arguments, .. } = block else {
                    return Err(ProviderError::Malformed(format!(
                        "tool input delta for content block {index}, which is not a tool call"
                    )));
                };
                if !partial_json.is_empty() {
                    arguments.push_str(&partial_json);
                    out.push(StreamEvent::ToolCallArgsDelta {
                        id: id.clone(),
                        fragment: partial_json,
                    });
                }
            }
            Delta::Unknown => {}
        }
        Ok(())
    }

    fn stop_block(&mut self, index: u64, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        let block = self.open_blocks.remove(&index).ok_or_else(|| {
            ProviderError::Malformed(format!("stop for content block {index}, which is not open"))
        })?;
        if let OpenBlock::ToolUse {
            id,
            name,
            arguments,
            initial_input,
        } = block
        {
            let arguments = complete_arguments(arguments, initial_input);
            out.push(StreamEvent::ToolCallEnd {
                call: ToolCall {
                    id,
                    name,
                    arguments,
                },
            });
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<StreamEvent, ProviderError> {
        if let Some(index) = self.open_blocks.keys().min() {
            return Err(ProviderError::Malformed(format!(
                "message_stop while content block {index} is still open"
            )));
        }
        let stop_reason = self.stop_reason.take().ok_or_else(|| {
            ProviderError::Malformed("message_stop without a stop_reason in message_delta".into())
        })?;
        Ok(StreamEvent::Finished {
            stop_reason,
            usage: self.usage,
        })
    }
}

/// The arguments of a finished tool call: the streamed JSON, else the input given at
/// block start (servers that send it whole), else an empty object.
fn complete_arguments(streamed: String, initial_input: Option<Value>) -> String {
    if !streamed.is_empty() {
        return streamed;
    }
    match initial_input {
        Some(Value::Object(object)) if !object.is_empty() => Value::Object(object).to_string(),
        _ => "{}".to_owned(),
    }
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        "refusal" => StopReason::Refusal,
        other => StopReason::Other(other.to_owned()),
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
        Outcome, assert_decodes_fixture, decode_whole, read_and_grep_calls,
    };
    use crate::provider::test_server::{
        Reply, TestServer, call, endpoint, message, result, say_hi, text, transport,
    };

    const FIXTURE: &str =
        include_str!("../../tests/fixtures/anthropic/thinking_text_two_tools.sse");

    fn body_json(request: &ModelRequest) -> Value {
        serde_json::to_value(request_body("claude-test", request)).unwrap()
    }

    fn request(messages: Vec<Message>) -> ModelRequest {
        ModelRequest {
            max_tokens: 1024,
            ..crate::provider::test_server::request(messages)
        }
    }

    fn client(base_url: String, api_key: Option<&str>) -> AnthropicClient {
        AnthropicClient::new(
            transport(),
            endpoint(Wire::Anthropic, base_url, api_key, "claude-test"),
        )
    }

    fn tool(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: format!("The {name} tool."),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }
    }

    #[test]
    fn builds_the_full_request_with_cache_breakpoints() {
        let mut request = request(vec![
            Message::user_text("Fix the failing test."),
            message(
                Role::Assistant,
                vec![
                    Block::Thinking {
                        thinking: "Read first.".into(),
                        signature: Some("sig-1".into()),
                    },
                    text("Reading."),
                    call("toolu_1", "read", r#"{"path":"src/lib.rs"}"#),
                    call("toolu_2", "grep", r#"{"pattern":"fn parse"}"#),
                ],
            ),
            message(
                Role::User,
                vec![
                    text("Also check the docs."),
                    result("toolu_1", "fn main() {}", false),
                    result("toolu_2", "invalid regex", true),
                ],
            ),
        ]);
        request.system = vec!["You are duet.".into(), "Project rules.".into()];
        request.tools = vec![tool("read"), tool("grep")];
        request.volatile_context = Some("cwd: /repo".into());

        let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}});
        assert_eq!(
            body_json(&request),
            json!({
                "model": "claude-test",
                "max_tokens": 1024,
                "stream": true,
                "system": [
                    {"type": "text", "text": "You are duet."},
                    {"type": "text", "text": "Project rules.", "cache_control": {"type": "ephemeral"}}
                ],
                "tools": [
                    {"name": "read", "description": "The read tool.", "input_schema": schema},
                    {"name": "grep", "description": "The grep tool.", "input_schema": schema,
                     "cache_control": {"type": "ephemeral"}}
                ],
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "Fix the failing test."}]},
                    {"role": "assistant", "content": [
                        {"type": "thinking", "thinking": "Read first.", "signature": "sig-1"},
                        {"type": "text", "text": "Reading."},
                        {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "src/lib.rs"}},
                        {"type": "tool_use", "id": "toolu_2", "name": "grep", "input": {"pattern": "fn parse"}}
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "fn main() {}"},
                        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "invalid regex", "is_error": true},
                        {"type": "text", "text": "Also check the docs.", "cache_control": {"type": "ephemeral"}},
                        {"type": "text", "text": "cwd: /repo"}
                    ]}
                ]
            })
        );
    }

    #[test]
    fn merges_roles_and_drops_what_the_api_rejects() {
        let request = request(vec![
            Message::user_text("first"),
            message(Role::User, vec![text(""), text("second")]),
            message(Role::Assistant, vec![text("")]),
            message(
                Role::Assistant,
                vec![
                    Block::Thinking {
                        thinking: "cut off".into(),
                        signature: None,
                    },
                    Block::RedactedThinking {
                        data: "opaque".into(),
                    },
                    call("toolu_1", "read", "[1, 2]"),
                    call("toolu_2", "read", "{not json"),
                    call("toolu_3", "read", ""),
                ],
            ),
            message(Role::User, vec![result("toolu_1", "", false)]),
            message(
                Role::User,
                vec![result("toolu_2", "a", true), result("toolu_3", "b", false)],
            ),
        ]);
        assert_eq!(
            body_json(&request),
            json!({
                "model": "claude-test",
                "max_tokens": 1024,
                "stream": true,
                "messages": [
                    {"role": "user", "content": [
                        {"type": "text", "text": "first"},
                        {"type": "text", "text": "second"}
                    ]},
                    {"role": "assistant", "content": [
                        {"type": "redacted_thinking", "data": "opaque"},
                        {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}},
                        {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {}},
                        {"type": "tool_use", "id": "toolu_3", "name": "read", "input": {}}
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1"},
                        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "a", "is_error": true},
                        {"type": "tool_result", "tool_use_id": "toolu_3", "content": "b",
                         "cache_control": {"type": "ephemeral"}}
                    ]}
                ]
            })
        );
    }

    #[test]
    fn the_breakpoint_skips_thinking_and_the_context_gets_its_own_message_after_an_assistant() {
        let mut request = request(vec![
            Message::user_text("hi"),
            message(
                Role::Assistant,
                vec![
                    text("partial answer"),
                    Block::Thinking {
                        thinking: "hm".into(),
                        signature: Some("sig".into()),
                    },
                ],
            ),
        ]);
        request.volatile_context = Some("time: now".into());
        assert_eq!(
            body_json(&request)["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "partial answer", "cache_control": {"type": "ephemeral"}},
                    {"type": "thinking", "thinking": "hm", "signature": "sig"}
                ]},
                {"role": "user", "content": [{"type": "text", "text": "time: now"}]}
            ])
        );
    }

    #[test]
    fn an_empty_conversation_still_carries_the_volatile_context() {
        let mut request = request(Vec::new());
        request.volatile_context = Some("cwd: /repo".into());
        assert_eq!(
            body_json(&request)["messages"],
            json!([{"role": "user", "content": [{"type": "text", "text": "cwd: /repo"}]}])
        );
    }

    fn fixture_events() -> Vec<StreamEvent> {
        let read_id = "toolu_01T1x1fJ34qAmk2tNTrN7Up6";
        let grep_id = "toolu_01EjgV3jBLmFxqzSckDu4Rz9";
        vec![
            StreamEvent::ThinkingDelta {
                text: "The user wants the failing test fixed. ".into(),
            },
            StreamEvent::ThinkingDelta {
                text: "I should read lib.rs and find where `parse` is defined.".into(),
            },
            StreamEvent::ThinkingSignature {
                signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds".into(),
            },
            StreamEvent::TextDelta {
                text: "Let me look at ".into(),
            },
            StreamEvent::TextDelta {
                text: "the parser — “ünïcode” and all 🦀.".into(),
            },
        ]
        .into_iter()
        .chain(read_and_grep_calls(read_id, grep_id))
        .chain([StreamEvent::Finished {
            stop_reason: StopReason::ToolUse,
            usage: Usage {
                input_tokens: 412,
                output_tokens: 187,
                cache_read_tokens: 10240,
                cache_write_tokens: 2048,
            },
        }])
        .collect()
    }

    fn decode(input: &str) -> Outcome {
        decode_whole(input.as_bytes(), AnthropicDecoder::default())
    }

    #[test]
    fn decodes_the_recorded_stream_however_it_is_chunked() {
        assert_decodes_fixture(FIXTURE, AnthropicDecoder::default, fixture_events());
    }

    #[test]
    fn the_streamed_arguments_are_valid_json() {
        for event in fixture_events() {
            if let StreamEvent::ToolCallEnd { call } = event {
                let parsed: Value = serde_json::from_str(&call.arguments).unwrap();
                assert!(parsed.is_object(), "{parsed}");
            }
        }
    }

    /// Compatible servers that end the body after `message_delta` gave the stop reason
    /// have said everything `message_stop` would.
    #[test]
    fn a_body_that_ends_cleanly_after_the_stop_reason_is_complete() {
        let without_stop = FIXTURE.split("event: message_stop").next().unwrap();
        assert_eq!(decode(without_stop), Outcome::ok(fixture_events()));
    }

    #[test]
    fn a_stream_cut_before_its_stop_reason_is_truncated() {
        let cut = FIXTURE.split("event: message_delta").next().unwrap();
        let mut before_finish = fixture_events();
        before_finish.pop();
        assert_eq!(
            decode(cut),
            Outcome::failed(
                before_finish,
                &ProviderError::Truncated("the body ended without the `message_stop` event".into())
            )
        );
    }

    const START: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n";
    const TEXT_START: &str = "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n";
    const HELLO: &str = "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n";
    const END: &str = "data: {\"type\":\"content_block_stop\",\"index\":0}\n\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\ndata: {\"type\":\"message_stop\"}\n\n";

    fn hello() -> StreamEvent {
        StreamEvent::TextDelta {
            text: "Hello".into(),
        }
    }

    fn end_turn(input_tokens: u64, output_tokens: u64) -> StreamEvent {
        StreamEvent::Finished {
            stop_reason: StopReason::EndTurn,
            usage: Usage {
                input_tokens,
                output_tokens,
                ..Usage::default()
            },
        }
    }

    #[test]
    fn a_tool_use_cut_by_max_tokens_ends_with_its_partial_arguments() {
        // The agent must not run it: the arguments are not JSON.
        let stream = [
            START,
            "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"write\",\"input\":{}}}\n\n",
            "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \\\"a\"}}\n\n",
            "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
            "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":9}}\n\n",
            "data: {\"type\":\"message_stop\"}\n\n",
        ]
        .concat();
        let outcome = decode(&stream);
        assert_eq!(outcome.error, None);
        assert_eq!(
            outcome.events[2..],
            [
                StreamEvent::ToolCallEnd {
                    call: ToolCall {
                        id: "toolu_1".into(),
                        name: "write".into(),
                        arguments: "{\"path\": \"a".into(),
                    }
                },
                StreamEvent::Finished {
                    stop_reason: StopReason::MaxTokens,
                    usage: Usage {
                        input_tokens: 5,
                        output_tokens: 9,
                        ..Usage::default()
                    }
                }
            ]
        );
    }

    #[test]
    fn a_mid_stream_error_event_is_an_api_error() {
        let error = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
        assert_eq!(
            decode(&[START, TEXT_START, HELLO, error, END].concat()),
            Outcome::failed(
                vec![hello()],
                &ProviderError::Api {
                    kind: "overloaded_error".into(),
                    message: "Overloaded".into()
                }
            )
        );
    }

    #[test]
    fn malformed_json_is_malformed() {
        let outcome = decode(
            &[
                START,
                TEXT_START,
                HELLO,
                "data: {\"type\":\"content_block_delta\",\n\n",
            ]
            .concat(),
        );
        assert_eq!(outcome.events, vec![hello()]);
        let error = outcome.error.unwrap();
        assert!(
            error.starts_with("Malformed(\"undecodable event"),
            "{error}"
        );
    }

    #[test]
    fn a_known_event_missing_its_fields_is_malformed() {
        let outcome = decode(&[START, "data: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n"].concat());
        let error = outcome.error.unwrap();
        assert!(error.contains("missing field `index`"), "{error}");
        let outcome = decode(&[START, TEXT_START, "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\"}}\n\n"].concat());
        let error = outcome.error.unwrap();
        assert!(error.contains("missing field `text`"), "{error}");
        let outcome =
            decode(&[START, "data: {\"type\":\"message_delta\",\"delta\":7}\n\n"].concat());
        let error = outcome.error.unwrap();
        assert!(
            error.starts_with("Malformed(\"undecodable event"),
            "{error}"
        );
    }

    #[test]
    fn a_delta_for_a_block_that_is_not_open_is_malformed() {
        assert_eq!(
            decode(&[START, HELLO].concat()),
            Outcome::failed(
                Vec::new(),
                &ProviderError::Malformed("delta for content block 0, which is not open".into())
            )
        );
        let json_delta_on_text = "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n";
        assert_eq!(
            decode(&[START, TEXT_START, json_delta_on_text].concat()),
            Outcome::failed(
                Vec::new(),
                &ProviderError::Malformed(
                    "tool input delta for content block 0, which is not a tool call".into()
                )
            )
        );
    }

    #[test]
    fn message_stop_without_a_stop_reason_is_malformed() {
        let outcome = decode(&[START, "data: {\"type\":\"message_stop\"}\n\n"].concat());
        assert_eq!(
            outcome,
            Outcome::failed(
                Vec::new(),
                &ProviderError::Malformed(
                    "message_stop without a stop_reason in message_delta".into()
                )
            )
        );
    }

    #[test]
    fn unknown_events_blocks_and_deltas_are_ignored() {
        let unknown = [
            "event: future_event\ndata: {\"type\":\"future_event\",\"x\":1}\n\n",
            "event: ping\ndata: {\"type\": \"ping\"}\n\n",
            // Fields that share a name with the known events' but not their shape.
            "data: {\"type\":\"future_event\",\"index\":\"first\",\"delta\":[1,2]}\n\n",
            "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_1\",\"name\":\"web_search\",\"input\":{}}}\n\n",
            "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"future_delta\",\"stuff\":[1]}}\n\n",
            "data: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
            "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"citations_delta\",\"citation\":{}}}\n\n",
        ]
        .concat();
        assert_eq!(
            decode(&[START, TEXT_START, &unknown, HELLO, END].concat()),
            Outcome::ok(vec![hello(), end_turn(5, 9)])
        );
    }

    #[test]
    fn decodes_redacted_thinking_whole_tool_input_and_late_usage() {
        let stream = [
            START,
            "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"redacted_thinking\",\"data\":\"EmwKAhgBEgy3va\"}}\n\n",
            "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
            "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"glob\",\"input\":{}}}\n\n",
            "data: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
            "data: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t2\",\"name\":\"glob\",\"input\":{\"pattern\":\"*.rs\"}}}\n\n",
            "data: {\"type\":\"content_block_stop\",\"index\":2}\n\n",
            "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"pause_turn\"},\"usage\":{\"input_tokens\":7,\"cache_read_input_tokens\":3,\"output_tokens\":11}}\n\n",
            "data: {\"type\":\"message_stop\"}\n\n",
        ]
        .concat();
        let glob = |id: &str, arguments: &str| {
            [
                StreamEvent::ToolCallStart {
                    id: id.into(),
                    name: "glob".into(),
                },
                StreamEvent::ToolCallEnd {
                    call: ToolCall {
                        id: id.into(),
                        name: "glob".into(),
                        arguments: arguments.into(),
                    },
                },
            ]
        };
        let mut expected = vec![StreamEvent::RedactedThinking {
            data: "EmwKAhgBEgy3va".into(),
        }];
        expected.extend(glob("t1", "{}"));
        expected.extend(glob("t2", r#"{"pattern":"*.rs"}"#));
        expected.push(StreamEvent::Finished {
            stop_reason: StopReason::Other("pause_turn".into()),
            usage: Usage {
                input_tokens: 7,
                output_tokens: 11,
                cache_read_tokens: 3,
                cache_write_tokens: 0,
            },
        });
        assert_eq!(decode(&stream), Outcome::ok(expected));
    }

    #[test]
    fn maps_stop_reasons() {
        let cases = [
            ("end_turn", StopReason::EndTurn),
            ("tool_use", StopReason::ToolUse),
            ("max_tokens", StopReason::MaxTokens),
            ("stop_sequence", StopReason::StopSequence),
            ("refusal", StopReason::Refusal),
            (
                "model_context_window_exceeded",
                StopReason::Other("model_context_window_exceeded".into()),
            ),
        ];
        for (wire, expected) in cases {
            assert_eq!(stop_reason(wire), expected);
        }
    }

    #[tokio::test]
    async fn streams_from_a_server_with_the_documented_request() {
        let server = TestServer::start("/v1/messages", |_| Reply::stream(FIXTURE)).await;
        let client = client(server.url("/"), Some("sk-ant-test"));
        assert_eq!(client.model(), "claude-test");
        assert_eq!(
            say_hi(&client).await.unwrap(),
            Outcome::ok(fixture_events())
        );
        let sent = server.only_request();
        sent.assert_headers(&[
            ("x-api-key", "sk-ant-test"),
            ("anthropic-version", "2023-06-01"),
            ("content-type", "application/json"),
        ]);
        assert_eq!(sent.body["model"], "claude-test");
        assert_eq!(sent.body["stream"], true);
    }

    #[tokio::test]
    async fn sends_no_api_key_header_without_a_key() {
        let server = TestServer::start("/v1/messages", |_| {
            Reply::error(
                StatusCode::UNAUTHORIZED,
                r#"{"type":"error","error":{"type":"authentication_error","message":"x-api-key header is required"}}"#,
            )
        })
        .await;
        let client = client(server.url(""), None);
        let err = say_hi(&client).await.err().unwrap();
        assert!(
            matches!(&err, ProviderError::Http { status: 401, message, retry_after: None, .. }
                if message == "x-api-key header is required"),
            "{err:?}"
        );
        assert!(!server.only_request().headers.contains_key("x-api-key"));
    }

    mod properties {
        use proptest::prelude::*;
        use serde_json::json;

        use super::*;
        use crate::provider::stream_properties::{GeneratedTurn, check_stream, cuts, turn};

        fn event(out: &mut String, data: &serde_json::Value) {
            let kind = data["type"].as_str().unwrap_or_default();
            out.push_str(&format!("event: {kind}\ndata: {data}\n\n"));
        }

        /// `turn` as the Messages API streams it.
        fn render(turn: &GeneratedTurn) -> String {
            let mut out = String::new();
            event(
                &mut out,
                &json!({"type": "message_start", "message": {
                "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 7, "output_tokens": 1}}}),
            );
            let mut index = 0;
            if !turn.text.is_empty() {
                event(
                    &mut out,
                    &json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}}),
                );
                for text in &turn.text {
                    event(
                        &mut out,
                        &json!({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "text_delta", "text": text}}),
                    );
                }
                event(&mut out, &json!({"type": "content_block_stop", "index": 0}));
                index += 1;
            }
            for call in &turn.calls {
                event(
                    &mut out,
                    &json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": call.id, "name": call.name,
                        "input": {}}}),
                );
                for fragment in &call.fragments {
                    event(
                        &mut out,
                        &json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": fragment}}),
                    );
                }
                event(
                    &mut out,
                    &json!({"type": "content_block_stop", "index": index}),
                );
                index += 1;
            }
            let stop = if turn.has_calls() {
                "tool_use"
            } else {
                "end_turn"
            };
            event(
                &mut out,
                &json!({"type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": null},
                "usage": {"output_tokens": 9}}),
            );
            event(&mut out, &json!({"type": "message_stop"}));
            out
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(150))]

            #[test]
            fn any_turn_decodes_the_same_however_it_is_chunked_or_cut(
                turn in turn(),
                cuts in cuts(),
            ) {
                check_stream(&render(&turn), AnthropicDecoder::default, &turn, &cuts)?;
            }
        }
    }
}
