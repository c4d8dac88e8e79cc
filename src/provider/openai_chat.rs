//! The OpenAI-compatible chat completions wire: `POST {base}/chat/completions` with
//! `stream: true`, as spoken by OpenAI, Ollama, llama.cpp server and vLLM.
//!
//! Owns: translating a [`ModelRequest`] into the chat completions body and decoding
//! the chunk stream, tolerating the ways compatible servers differ from OpenAI.
//! Does not own: HTTP details ([`super::http`]) or SSE framing ([`super::sse`]).
//! Invariant: the request body is a pure function of the request, model and base URL;
//! the decoder ends with `Finished` only after a `finish_reason`, on `data: [DONE]` or
//! at a clean end of the body when every tool call's arguments parse (servers that
//! never send `[DONE]`); every `ToolCallStart` it emits names its tool and is closed by
//! a `ToolCallEnd` before that.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt as _;
use reqwest::header::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::arguments::ArgumentsBuffer;
use super::http;
use super::openai_common::{
    api_error, bearer_headers, image_urls, join_non_empty, texts, tool_output,
};
use super::sse::SseEvent;
use super::stream::{Flow, WireDecoder, missing_terminal_event, push_unless_empty};
use super::{
    Endpoint, EventStream, Message, ModelClient, ModelRequest, ProviderError, Role, StopReason,
    StreamEvent, ToolCall, ToolResult, ToolSpec, Usage,
};

/// The host whose models reject `max_tokens` (see [`TokenLimit`]).
const OPENAI_HOST: &str = "api.openai.com";

/// What the user is told, once, when a server refuses `stream_options`.
const WITHOUT_STREAM_OPTIONS: &str = "the server refused `stream_options`; asking without it \
     from now on (token counts come only where the server sends them unasked)";

/// A client for OpenAI-compatible chat completions.
pub struct OpenAiChatClient {
    transport: http::Transport,
    endpoint: Endpoint,
    /// Cleared for the rest of the session once the server refuses `stream_options`
    /// (Mistral answers 422 `extra_forbidden`, Fireworks 400 "Extra inputs are not
    /// permitted").
    ask_for_usage: AtomicBool,
}

impl OpenAiChatClient {
    pub fn new(transport: http::Transport, endpoint: Endpoint) -> Self {
        Self {
            transport,
            endpoint,
            ask_for_usage: AtomicBool::new(true),
        }
    }

    /// With `ask` false, `stream_options` is never sent (the user's config says the
    /// server refuses it).
    pub fn asking_for_usage(self, ask: bool) -> Self {
        self.ask_for_usage.store(ask, Ordering::Relaxed);
        self
    }

    async fn send(
        &self,
        request: &ModelRequest,
        ask_for_usage: bool,
    ) -> Result<EventStream, ProviderError> {
        let body = request_body(
            &self.endpoint.model,
            &self.endpoint.base_url,
            request,
            ask_for_usage,
        );
        self.transport
            .stream_events(
                &self.url(),
                self.headers()?,
                &body,
                OpenAiChatDecoder::default(),
            )
            .await
    }

    fn url(&self) -> String {
        format!(
            "{}/chat/completions",
            self.endpoint.base_url.trim_end_matches('/')
        )
    }

    fn headers(&self) -> Result<HeaderMap, ProviderError> {
        bearer_headers(self.endpoint.api_key.as_deref())
    }
}

#[async_trait::async_trait]
impl ModelClient for OpenAiChatClient {
    fn model(&self) -> &str {
        &self.endpoint.model
    }

    async fn stream(&self, request: &ModelRequest) -> Result<EventStream, ProviderError> {
        if !self.ask_for_usage.load(Ordering::Relaxed) {
            return self.send(request, false).await;
        }
        match self.send(request, true).await {
            Err(error) if refuses_stream_options(&error) => {
                tracing::info!(model = %self.endpoint.model, %error, "{WITHOUT_STREAM_OPTIONS}");
                self.ask_for_usage.store(false, Ordering::Relaxed);
                let stream = self.send(request, false).await?;
                let notice = StreamEvent::Notice {
                    text: WITHOUT_STREAM_OPTIONS.to_owned(),
                };
                Ok(Box::pin(
                    futures::stream::once(async { Ok(notice) }).chain(stream),
                ))
            }
            result => result,
        }
    }
}

/// Whether `error` is a server's refusal of the `stream_options` field: a 400 or 422
/// that names it (Mistral's validation error lists `["body","stream_options",...]`).
fn refuses_stream_options(error: &ProviderError) -> bool {
    matches!(
        error,
        ProviderError::Http { status: 400 | 422, message, .. } if message.contains("stream_options")
    )
}

// ---------------------------------------------------------------------------------
// Request body
// ---------------------------------------------------------------------------------

#[derive(Debug, Serialize)]
struct RequestBody<'a> {
    model: &'a str,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(flatten)]
    token_limit: TokenLimit,
}

#[derive(Debug, Serialize)]
struct StreamOptions {
    /// Asks for the final usage chunk.
    include_usage: bool,
}

/// The output token limit. OpenAI's reasoning models reject the older `max_tokens`
/// and want `max_completion_tokens`, while many compatible servers (Ollama,
/// llama.cpp, vLLM) only know `max_tokens`, so the field follows the host.
#[derive(Debug, Serialize)]
enum TokenLimit {
    #[serde(rename = "max_completion_tokens")]
    MaxCompletionTokens(u32),
    #[serde(rename = "max_tokens")]
    MaxTokens(u32),
}

impl TokenLimit {
    fn for_base_url(base_url: &str, limit: u32) -> Self {
        let host = reqwest::Url::parse(base_url)
            .ok()
            .and_then(|url| url.host_str().map(str::to_owned));
        if host.as_deref() == Some(OPENAI_HOST) {
            TokenLimit::MaxCompletionTokens(limit)
        } else {
            TokenLimit::MaxTokens(limit)
        }
    }
}

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Debug, Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

#[derive(Debug, PartialEq, Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
enum WireMessage<'a> {
    System {
        content: String,
    },
    User {
        content: String,
    },
    /// A user message with images: its text and images as content parts.
    #[serde(rename = "user")]
    UserParts {
        content: Vec<UserPart>,
    },
    Assistant {
        /// `null` when the turn was only tool calls.
        content: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireToolCall<'a>>,
    },
    Tool {
        tool_call_id: Cow<'a, str>,
        content: String,
    },
}

/// A part of a user message's content.
#[derive(Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum UserPart {
    Text { text: String },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Debug, PartialEq, Serialize)]
struct ImageUrl {
    /// A `data:` URL holding the image.
    url: String,
}

#[derive(Debug, PartialEq, Serialize)]
struct WireToolCall<'a> {
    id: Cow<'a, str>,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireCallFunction<'a>,
}

#[derive(Debug, PartialEq, Serialize)]
struct WireCallFunction<'a> {
    name: &'a str,
    /// The arguments exactly as the model produced them.
    arguments: &'a str,
}

/// The chat completions request body for `request`, sent to a server at `base_url`;
/// with `ask_for_usage`, it asks for the final usage chunk.
fn request_body<'a>(
    model: &'a str,
    base_url: &str,
    request: &'a ModelRequest,
    ask_for_usage: bool,
) -> RequestBody<'a> {
    let ids = CallIds::for_server(base_url, model);
    let mut messages = Vec::new();
    if let Some(system) = join_non_empty(request.system.iter().map(String::as_str)) {
        messages.push(WireMessage::System { content: system });
    }
    for message in &request.messages {
        match message.role {
            Role::User => push_user_message(&mut messages, message, ids),
            Role::Assistant => messages.extend(assistant_message(message, ids)),
        }
    }
    if let Some(context) = &request.volatile_context {
        messages.push(WireMessage::User {
            content: context.clone(),
        });
    }
    RequestBody {
        model,
        stream: true,
        stream_options: ask_for_usage.then_some(StreamOptions {
            include_usage: true,
        }),
        messages,
        tools: request.tools.iter().map(wire_tool).collect(),
        token_limit: TokenLimit::for_base_url(base_url, request.max_tokens),
    }
}

fn wire_tool(tool: &ToolSpec) -> WireTool<'_> {
    WireTool {
        kind: "function",
        function: WireFunction {
            name: &tool.name,
            description: &tool.description,
            parameters: &tool.input_schema,
        },
    }
}

/// Tool results become `tool` messages, which must directly follow the assistant
/// message that made the calls; the user's own text comes after them.
fn push_user_message<'a>(messages: &mut Vec<WireMessage<'a>>, message: &'a Message, ids: CallIds) {
    messages.extend(
        message
            .tool_results()
            .map(|result| tool_message(result, ids)),
    );
    let text = join_non_empty(texts(message));
    let images: Vec<UserPart> = image_urls(message)
        .map(|url| UserPart::ImageUrl {
            image_url: ImageUrl { url },
        })
        .collect();
    match (text, images.is_empty()) {
        (Some(content), true) => messages.push(WireMessage::User { content }),
        (None, true) => {}
        (text, false) => messages.push(WireMessage::UserParts {
            content: text
                .map(|text| UserPart::Text { text })
                .into_iter()
                .chain(images)
                .collect(),
        }),
    }
}

fn tool_message(result: &ToolResult, ids: CallIds) -> WireMessage<'_> {
    WireMessage::Tool {
        tool_call_id: ids.write(&result.call_id),
        content: tool_output(result),
    }
}

/// The assistant turn without its reasoning (this wire has no field to send it back
/// in), or `None` if nothing else is left.
fn assistant_message(message: &Message, ids: CallIds) -> Option<WireMessage<'_>> {
    let content = join_non_empty(texts(message));
    let tool_calls: Vec<WireToolCall<'_>> = message
        .tool_calls()
        .map(|call| wire_tool_call(call, ids))
        .collect();
    if content.is_none() && tool_calls.is_empty() {
        return None;
    }
    Some(WireMessage::Assistant {
        content,
        tool_calls,
    })
}

fn wire_tool_call(call: &ToolCall, ids: CallIds) -> WireToolCall<'_> {
    WireToolCall {
        id: ids.write(&call.id),
        kind: "function",
        function: WireCallFunction {
            name: &call.name,
            arguments: &call.arguments,
        },
    }
}

/// How the conversation's tool-call ids are written for the server. Mistral's API
/// (and vLLM serving Mistral models) accepts only ids of nine ASCII letters and digits,
/// which its own calls have; ids from elsewhere in the conversation (another model
/// before `/model`, a replayed session) are rewritten for it, each to the same nine
/// characters every time, so calls and results still pair and the prompt's prefix
/// stays the same from request to request. The session keeps the original ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CallIds {
    AsGiven,
    NineAlphanumeric,
}

impl CallIds {
    fn for_server(base_url: &str, model: &str) -> Self {
        let host = reqwest::Url::parse(base_url)
            .ok()
            .and_then(|url| url.host_str().map(str::to_ascii_lowercase));
        let mistral_host = host.is_some_and(|host| host.ends_with("mistral.ai"));
        // mistral, ministral, codestral, devstral, magistral, pixtral.
        let model = model.to_ascii_lowercase();
        let mistral_model = ["mistral", "stral", "pixtral"]
            .iter()
            .any(|name| model.contains(name));
        if mistral_host || mistral_model {
            CallIds::NineAlphanumeric
        } else {
            CallIds::AsGiven
        }
    }

    fn write(self, id: &str) -> Cow<'_, str> {
        let valid = id.len() == 9 && id.bytes().all(|byte| byte.is_ascii_alphanumeric());
        if self == CallIds::AsGiven || valid {
            return Cow::Borrowed(id);
        }
        const ALPHABET: &[u8; 62] =
            b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        let digest = ring::digest::digest(&ring::digest::SHA256, id.as_bytes());
        let written = digest
            .as_ref()
            .iter()
            .take(9)
            .map(|byte| char::from(ALPHABET[usize::from(*byte) % ALPHABET.len()]))
            .collect();
        Cow::Owned(written)
    }
}

// ---------------------------------------------------------------------------------
// Event stream
// ---------------------------------------------------------------------------------

/// The payload that ends the stream.
const DONE: &str = "[DONE]";

/// One `chat.completion.chunk`. Every field is optional because compatible servers
/// omit or null them freely (vLLM sends `"choices": null` in the usage chunk).
#[derive(Debug, Deserialize)]
struct Chunk {
    choices: Option<Vec<Choice>>,
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    delta: Option<Delta>,
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Delta {
    content: Option<String>,
    /// Reasoning text: `reasoning_content` (DeepSeek, vLLM, llama.cpp) or `reasoning`
    /// (Ollama, newer vLLM).
    reasoning_content: Option<String>,
    reasoning: Option<String>,
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Debug, Deserialize)]
struct ToolCallDelta {
    index: Option<u64>,
    id: Option<String>,
    function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta {
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    prompt_tokens_details: Option<PromptTokensDetails>,
}

#[derive(Debug, Deserialize)]
struct PromptTokensDetails {
    cached_tokens: Option<u64>,
}

/// The tool call whose fragments are arriving. Calls stream one after another, so a
/// fragment for another index completes the open one; so does the closing brace of
/// its arguments object, whichever comes first.
///
/// Its name usually comes with its first fragment, but some servers (vMLX) open a call
/// with an empty name and send the name in a later fragment: until the name is known
/// the call is not announced and its argument fragments wait in `held`.
#[derive(Debug)]
struct OpenCall {
    index: u64,
    /// Where the call falls among this answer's calls, for a made-up id.
    number: u64,
    id: Option<String>,
    name: Option<String>,
    /// Argument fragments that arrived before the name.
    held: Vec<String>,
    arguments: ArgumentsBuffer,
}

impl OpenCall {
    fn announced(&self) -> bool {
        self.name.is_some()
    }

    /// The id results refer to: the server's, or made up for servers that omit ids.
    fn id(&self) -> String {
        self.id
            .clone()
            .unwrap_or_else(|| format!("call_{}", self.number))
    }
}

/// Decodes the chat completions chunk stream.
#[derive(Debug, Default)]
pub struct OpenAiChatDecoder {
    open_call: Option<OpenCall>,
    /// The call closed early by its complete arguments (index, id): later fragments of
    /// it may still repeat its id or carry whitespace, and are ignored.
    closed_early: Option<(u64, String)>,
    calls_started: u64,
    /// A finished call's arguments were not valid JSON: at an end of the body without
    /// `[DONE]` that means they were cut, not that the model wrote them so.
    unparsable_arguments: bool,
    stop_reason: Option<StopReason>,
    usage: Usage,
}

impl WireDecoder for OpenAiChatDecoder {
    const TERMINAL_EVENT: &'static str = "`data: [DONE]` line";

    fn decode(
        &mut self,
        event: &SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Flow, ProviderError> {
        if event.data.trim() == DONE {
            out.push(self.finish()?);
            return Ok(Flow::Finished);
        }
        let value: Value = serde_json::from_str(&event.data).map_err(|err| {
            ProviderError::Malformed(format!("undecodable chunk `{}`: {err}", event.data))
        })?;
        if let Some(error) = value.get("error").filter(|error| !error.is_null()) {
            return Err(api_error(error));
        }
        let chunk: Chunk = serde_json::from_value(value).map_err(|err| {
            ProviderError::Malformed(format!("unexpected chunk `{}`: {err}", event.data))
        })?;
        if let Some(usage) = chunk.usage {
            self.usage = usage.into();
        }
        // duet never asks for several choices; the first is the answer.
        if let Some(choice) = chunk.choices.into_iter().flatten().next() {
            self.apply_choice(choice, out)?;
        }
        Ok(Flow::Continue)
    }

    /// Complete once a `finish_reason` came and every call's arguments parse.
    fn end_of_body(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        if self.stop_reason.is_none() || self.unparsable_arguments {
            return Err(missing_terminal_event::<Self>());
        }
        self.close_call(out)?;
        out.push(self.finish()?);
        Ok(())
    }
}

impl OpenAiChatDecoder {
    fn apply_choice(
        &mut self,
        choice: Choice,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        if let Some(delta) = choice.delta {
            self.apply_delta(delta, out)?;
        }
        if let Some(reason) = choice.finish_reason {
            self.close_call(out)?;
            self.stop_reason = Some(stop_reason(&reason));
        }
        Ok(())
    }

    fn apply_delta(
        &mut self,
        delta: Delta,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        // Servers that send both reasoning fields send the same text in each.
        if let Some(text) = delta.reasoning_content.or(delta.reasoning) {
            push_unless_empty(out, text, |text| StreamEvent::ThinkingDelta { text });
        }
        if let Some(text) = delta.content {
            push_unless_empty(out, text, |text| StreamEvent::TextDelta { text });
        }
        for fragment in delta.tool_calls.into_iter().flatten() {
            self.apply_tool_fragment(fragment, out)?;
        }
        Ok(())
    }

    fn apply_tool_fragment(
        &mut self,
        fragment: ToolCallDelta,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let id = fragment.id.filter(|id| !id.is_empty());
        let (name, arguments) = fragment
            .function
            .map(|function| (function.name, function.arguments))
            .unwrap_or_default();
        // An empty name (a continuation, or a name still to come) names nothing.
        let name = name.filter(|name| !name.is_empty());
        let index = fragment
            .index
            .unwrap_or_else(|| self.infer_index(id.as_deref(), name.is_some()));
        let closed_early = self
            .closed_early
            .as_ref()
            .is_some_and(|(closed, _)| *closed == index);
        // Later fragments of a call closed by its complete arguments may repeat its
        // id or name (vLLM's parsers re-send the name) or carry whitespace.
        if closed_early {
            return match arguments.as_deref().map(str::trim) {
                None | Some("") => Ok(()),
                Some(extra) => Err(ProviderError::Malformed(format!(
                    "tool call {index} sent `{extra}` after its complete arguments object"
                ))),
            };
        }
        let continues_open_call = self
            .open_call
            .as_ref()
            .is_some_and(|call| call.index == index);
        if !continues_open_call {
            self.close_call(out)?;
            self.open_call = Some(OpenCall {
                index,
                number: self.calls_started,
                id: None,
                name: None,
                held: Vec::new(),
                arguments: ArgumentsBuffer::default(),
            });
            self.calls_started += 1;
        }
        let Some(call) = self.open_call.as_mut() else {
            return Ok(());
        };
        if !call.announced() {
            if call.id.is_none() {
                call.id = id;
            }
            // A name repeated on later fragments changes nothing once it is known.
            if let Some(name) = name {
                call.name = Some(name.clone());
                let id = call.id();
                out.push(StreamEvent::ToolCallStart {
                    id: id.clone(),
                    name,
                });
                out.extend(
                    call.held
                        .drain(..)
                        .map(|fragment| StreamEvent::ToolCallArgsDelta {
                            id: id.clone(),
                            fragment,
                        }),
                );
            }
        }
        if let Some(fragment) = arguments.filter(|fragment| !fragment.is_empty()) {
            call.arguments.push(&fragment);
            if call.announced() {
                out.push(StreamEvent::ToolCallArgsDelta {
                    id: call.id(),
                    fragment,
                });
            } else {
                call.held.push(fragment);
            }
        }
        if call.announced() && call.arguments.is_complete_object() {
            self.closed_early = Some((index, call.id()));
            self.close_call(out)?;
        }
        Ok(())
    }

    /// The index of a fragment that lacks one. It continues the open call unless it
    /// brings a different id, or no id but a function name while the open call already
    /// has one (names come only on a call's first fragment, or on a later one for a
    /// call opened without a name); then it starts the next call.
    fn infer_index(&self, id: Option<&str>, has_name: bool) -> u64 {
        let current = match (&self.open_call, &self.closed_early) {
            (Some(call), _) => Some((call.index, call.id.as_deref(), call.announced())),
            (None, Some((index, closed_id))) => Some((*index, Some(closed_id.as_str()), true)),
            (None, None) => None,
        };
        let Some((index, current_id, current_named)) = current else {
            return self.calls_started;
        };
        let starts_new_call = match (id, current_id) {
            (Some(id), Some(current_id)) => id != current_id,
            (Some(_), None) => current_named,
            (None, _) => has_name && current_named,
        };
        if starts_new_call {
            self.calls_started.max(index + 1)
        } else {
            index
        }
    }

    /// Ends the open call, if any. A call that never got a name cannot be run or
    /// answered: the stream is malformed.
    fn close_call(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        let Some(call) = self.open_call.take() else {
            return Ok(());
        };
        let id = call.id();
        let Some(name) = call.name else {
            return Err(ProviderError::Malformed(format!(
                "tool call {} ended without a function name",
                call.index
            )));
        };
        let arguments = if call.arguments.is_empty() {
            "{}".to_owned()
        } else {
            call.arguments.into_text()
        };
        if serde_json::from_str::<serde::de::IgnoredAny>(&arguments).is_err() {
            self.unparsable_arguments = true;
        }
        out.push(StreamEvent::ToolCallEnd {
            call: ToolCall {
                id,
                name,
                arguments,
            },
        });
        Ok(())
    }

    /// `[DONE]` ends the stream, but only a `finish_reason` says the model finished:
    /// without one the answer was cut off (a server or proxy gave up), so the call
    /// is reported as truncated rather than as a complete answer.
    fn finish(&mut self) -> Result<StreamEvent, ProviderError> {
        let stop_reason = self.stop_reason.take().ok_or_else(|| {
            ProviderError::Truncated("`[DONE]` arrived without a finish_reason".into())
        })?;
        Ok(StreamEvent::Finished {
            stop_reason,
            usage: self.usage,
        })
    }
}

impl From<WireUsage> for Usage {
    /// OpenAI counts cached tokens inside `prompt_tokens`; duet's `input_tokens` are
    /// the uncached ones, as on the Anthropic wire.
    fn from(usage: WireUsage) -> Self {
        let prompt = usage.prompt_tokens.unwrap_or(0);
        let cached = usage
            .prompt_tokens_details
            .and_then(|details| details.cached_tokens)
            .unwrap_or(0);
        Usage {
            input_tokens: prompt.saturating_sub(cached),
            output_tokens: usage.completion_tokens.unwrap_or(0),
            cache_read_tokens: cached,
            cache_write_tokens: 0,
        }
    }
}

/// OpenAI's finish reasons, and the ones other servers send for the same thing
/// (Together's `eos`; Anthropic's names from gateways relaying Claude).
fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "stop" | "eos" | "end_turn" | "stop_sequence" => StopReason::EndTurn,
        "tool_calls" | "function_call" | "tool_use" => StopReason::ToolUse,
        "length" | "max_tokens" => StopReason::MaxTokens,
        "content_filter" => StopReason::Refusal,
        other => StopReason::Other(other.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;
    use crate::provider::stream::testing::{
        Outcome, assert_chunking_invariant, assert_decodes_fixture, decode_whole,
        read_and_grep_calls,
    };
    use crate::provider::test_server::{
        Reply, TestServer, call, endpoint, http_error, message, request, result, say_hi, text,
        transport,
    };
    use crate::provider::{Block, Wire};

    const FIXTURE: &str = include_str!("../../tests/fixtures/openai/reasoning_text_two_tools.sse");
    const OLLAMA_FIXTURE: &str = include_str!("../../tests/fixtures/openai/ollama_whole_calls.sse");

    const LOCAL: &str = "http://127.0.0.1:11434/v1";

    fn body_json(base_url: &str, request: &ModelRequest) -> Value {
        serde_json::to_value(request_body("gpt-test", base_url, request, true)).unwrap()
    }

    fn client(base_url: String, api_key: Option<&str>) -> OpenAiChatClient {
        OpenAiChatClient::new(
            transport(),
            endpoint(Wire::OpenAiChat, base_url, api_key, "gpt-test"),
        )
    }

    /// Mistral accepts only ids of nine letters and digits: ids from elsewhere are
    /// rewritten, the same way in the call and its result and on every request.
    #[test]
    fn call_ids_are_rewritten_for_servers_that_restrict_them() {
        let conversation = request(vec![
            message(Role::User, vec![text("go")]),
            message(
                Role::Assistant,
                vec![
                    call("toolu_01AbC-xyz", "read", "{}"),
                    call("gSIMJiOkT", "read", "{}"),
                ],
            ),
            message(
                Role::User,
                vec![
                    result("toolu_01AbC-xyz", "a", false),
                    result("gSIMJiOkT", "b", false),
                ],
            ),
        ]);
        let ids = |body: &Value| -> Vec<String> {
            let messages = body["messages"].as_array().unwrap();
            let calls = messages[1]["tool_calls"].as_array().unwrap();
            calls
                .iter()
                .map(|call| call["id"].as_str().unwrap().to_owned())
                .chain(
                    messages[2..]
                        .iter()
                        .map(|result| result["tool_call_id"].as_str().unwrap().to_owned()),
                )
                .collect()
        };
        let mistral = ids(&body_json("https://api.mistral.ai/v1", &conversation));
        assert_eq!(mistral[0], mistral[2], "a call and its result pair");
        assert_eq!(mistral[1], "gSIMJiOkT", "a valid id is kept");
        assert_eq!(mistral[3], "gSIMJiOkT");
        assert_eq!(mistral[0].len(), 9);
        assert!(mistral[0].bytes().all(|byte| byte.is_ascii_alphanumeric()));
        assert_eq!(
            ids(&body_json("https://api.mistral.ai/v1", &conversation)),
            mistral,
            "the same on every request"
        );
        // A Mistral model behind another server (vLLM) is held to the same rule.
        let local = serde_json::to_value(request_body(
            "mistralai/Devstral-Small-2507",
            LOCAL,
            &conversation,
            true,
        ))
        .unwrap();
        assert_eq!(ids(&local), mistral);
        assert_eq!(
            ids(&body_json(LOCAL, &conversation)),
            [
                "toolu_01AbC-xyz",
                "gSIMJiOkT",
                "toolu_01AbC-xyz",
                "gSIMJiOkT"
            ]
        );
    }

    #[test]
    fn builds_the_full_request() {
        let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}});
        let mut request = request(vec![
            Message::user_text("Fix the failing test."),
            message(
                Role::Assistant,
                vec![
                    Block::Thinking {
                        thinking: "Read first.".into(),
                        signature: None,
                    },
                    text("Reading."),
                    call("call_1", "read", r#"{"path":"src/lib.rs"}"#),
                    call("call_2", "grep", "{not json"),
                ],
            ),
            message(
                Role::User,
                vec![
                    text("Also check the docs."),
                    result("call_1", "fn main() {}", false),
                    result("call_2", "the arguments are not valid JSON", true),
                ],
            ),
        ]);
        request.system = vec![
            "You are duet.".into(),
            String::new(),
            "Project rules.".into(),
        ];
        request.tools = vec![ToolSpec {
            name: "read".into(),
            description: "Reads a file.".into(),
            input_schema: schema.clone(),
        }];
        request.volatile_context = Some("cwd: /repo".into());

        assert_eq!(
            body_json(LOCAL, &request),
            json!({
                "model": "gpt-test",
                "stream": true,
                "stream_options": {"include_usage": true},
                "max_tokens": 2048,
                "tools": [{
                    "type": "function",
                    "function": {"name": "read", "description": "Reads a file.", "parameters": schema}
                }],
                "messages": [
                    {"role": "system", "content": "You are duet.\n\nProject rules."},
                    {"role": "user", "content": "Fix the failing test."},
                    {"role": "assistant", "content": "Reading.", "tool_calls": [
                        {"id": "call_1", "type": "function",
                         "function": {"name": "read", "arguments": "{\"path\":\"src/lib.rs\"}"}},
                        {"id": "call_2", "type": "function",
                         "function": {"name": "grep", "arguments": "{not json"}}
                    ]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "fn main() {}"},
                    {"role": "tool", "tool_call_id": "call_2",
                     "content": "Error: the arguments are not valid JSON"},
                    {"role": "user", "content": "Also check the docs."},
                    {"role": "user", "content": "cwd: /repo"}
                ]
            })
        );
    }

    #[test]
    fn tool_only_turns_send_null_content_and_empty_turns_are_dropped() {
        let request = request(vec![
            Message::user_text("go"),
            message(
                Role::Assistant,
                vec![
                    Block::Thinking {
                        thinking: "only thoughts".into(),
                        signature: Some("sig".into()),
                    },
                    text(""),
                ],
            ),
            message(Role::Assistant, vec![call("c1", "glob", "{}")]),
            message(Role::User, vec![result("c1", "", false), text("")]),
            message(Role::User, vec![text("first"), text(""), text("second")]),
        ]);
        assert_eq!(
            body_json(LOCAL, &request)["messages"],
            json!([
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "glob", "arguments": "{}"}}
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": ""},
                {"role": "user", "content": "first\n\nsecond"}
            ])
        );
    }

    #[test]
    fn picks_the_token_limit_field_by_host() {
        let request = request(vec![Message::user_text("hi")]);
        let limit_fields = |base_url: &str| {
            let body = body_json(base_url, &request);
            (
                body.get("max_tokens").cloned(),
                body.get("max_completion_tokens").cloned(),
            )
        };
        assert_eq!(
            limit_fields("https://api.openai.com/v1"),
            (None, Some(json!(2048)))
        );
        assert_eq!(
            limit_fields("https://api.openai.com/v1/"),
            (None, Some(json!(2048)))
        );
        assert_eq!(limit_fields(LOCAL), (Some(json!(2048)), None));
        assert_eq!(
            limit_fields("https://api.openai.com.example.org/v1"),
            (Some(json!(2048)), None)
        );
        assert_eq!(limit_fields("not a url"), (Some(json!(2048)), None));
    }

    fn fixture_events() -> Vec<StreamEvent> {
        let read_id = "call_Qx3vT8mZ";
        let grep_id = "call_Lk9wP2rD";
        let thinking = |text: &str| StreamEvent::ThinkingDelta { text: text.into() };
        let text = |text: &str| StreamEvent::TextDelta { text: text.into() };
        vec![
            thinking("The test fails in "),
            thinking("`parse`. "),
            thinking("Read the file, then grep."),
            text("I'll read "),
            text("the parser — “ünïcode” "),
            text("and all 🦀."),
        ]
        .into_iter()
        .chain(read_and_grep_calls(read_id, grep_id))
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

    fn decode(input: &str) -> Outcome {
        decode_whole(input.as_bytes(), OpenAiChatDecoder::default())
    }

    #[test]
    fn decodes_the_recorded_stream_however_it_is_chunked() {
        assert_decodes_fixture(FIXTURE, OpenAiChatDecoder::default, fixture_events());
    }

    #[test]
    fn decodes_whole_calls_without_index_or_id() {
        let read = ToolCall {
            id: "call_a1b2c3".into(),
            name: "read".into(),
            arguments: r#"{"path":"README.md"}"#.into(),
        };
        let glob = ToolCall {
            id: "call_1".into(),
            name: "glob".into(),
            arguments: r#"{"pattern":"src/**/*.rs"}"#.into(),
        };
        let expected = Outcome::ok(vec![
            StreamEvent::ThinkingDelta {
                text: "Two files to look at.".into(),
            },
            StreamEvent::TextDelta {
                text: "Checking both.".into(),
            },
            StreamEvent::ToolCallStart {
                id: read.id.clone(),
                name: read.name.clone(),
            },
            StreamEvent::ToolCallArgsDelta {
                id: read.id.clone(),
                fragment: read.arguments.clone(),
            },
            StreamEvent::ToolCallEnd { call: read },
            StreamEvent::ToolCallStart {
                id: glob.id.clone(),
                name: glob.name.clone(),
            },
            StreamEvent::ToolCallArgsDelta {
                id: glob.id.clone(),
                fragment: glob.arguments.clone(),
            },
            StreamEvent::ToolCallEnd { call: glob },
            StreamEvent::Finished {
                stop_reason: StopReason::EndTurn,
                usage: Usage {
                    input_tokens: 900,
                    output_tokens: 61,
                    ..Usage::default()
                },
            },
        ]);
        assert_chunking_invariant(
            OLLAMA_FIXTURE.as_bytes(),
            OpenAiChatDecoder::default,
            &expected,
        );
    }

    /// A chunk whose first choice has `delta` and `finish_reason`.
    fn chunk(delta: Value, finish_reason: Option<&str>) -> String {
        let chunk = json!({
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
        });
        format!("data: {chunk}\n\n")
    }

    const DONE_LINE: &str = "data: [DONE]\n\n";

    fn tool_fragment(
        index: Option<u64>,
        id: Option<&str>,
        name: Option<&str>,
        arguments: &str,
    ) -> String {
        let mut fragment = json!({"function": {"arguments": arguments}});
        if let Some(index) = index {
            fragment["index"] = json!(index);
        }
        if let Some(id) = id {
            fragment["id"] = json!(id);
        }
        if let Some(name) = name {
            fragment["function"]["name"] = json!(name);
        }
        chunk(json!({"tool_calls": [fragment]}), None)
    }

    fn tool_events(outcome: &Outcome) -> Vec<ToolCall> {
        outcome
            .events
            .iter()
            .filter_map(|event| match event {
                StreamEvent::ToolCallEnd { call } => Some(call.clone()),
                _ => None,
            })
            .collect()
    }

    fn tool_call(id: &str, name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn a_call_ends_as_soon_as_its_arguments_object_closes() {
        let stream = [
            tool_fragment(Some(0), Some("a"), Some("read"), "{\"path\": \"a}"),
            tool_fragment(Some(0), None, None, ".txt\"}"),
            tool_fragment(Some(0), None, None, "  "),
            tool_fragment(Some(1), Some("b"), Some("read"), "{\"path\": \"b.txt\"}"),
            chunk(json!({}), Some("tool_calls")),
            DONE_LINE.to_owned(),
        ];
        let events = |parts: &[String]| decode(&parts.concat()).events;
        // The first call is complete before the second one appears in the stream.
        let first_end = events(&stream[..2])
            .into_iter()
            .filter(|event| matches!(event, StreamEvent::ToolCallEnd { .. }))
            .count();
        assert_eq!(first_end, 1, "the closing brace completes the call");
        let outcome = decode(&stream.concat());
        assert_eq!(outcome.error, None);
        assert_eq!(
            tool_events(&outcome),
            vec![
                tool_call("a", "read", "{\"path\": \"a}.txt\"}"),
                tool_call("b", "read", "{\"path\": \"b.txt\"}"),
            ]
        );
    }

    #[test]
    fn text_after_a_complete_arguments_object_is_malformed() {
        let stream = [
            tool_fragment(Some(0), Some("a"), Some("read"), "{}"),
            tool_fragment(Some(0), None, None, "{\"more\": 1}"),
        ]
        .concat();
        let error = decode(&stream).error.unwrap_or_default();
        assert!(
            error.contains("after its complete arguments object"),
            "{error}"
        );
    }

    #[test]
    fn tolerates_missing_indexes_repeated_ids_and_empty_arguments() {
        let stream = [
            // No index: fragments continue the open call until a new id arrives.
            tool_fragment(None, Some("a"), Some("read"), "{\"path\":"),
            tool_fragment(None, None, None, "\"x\"}"),
            // The id repeated on a later fragment is the same call.
            tool_fragment(None, Some("a"), None, ""),
            tool_fragment(None, Some("b"), Some("glob"), ""),
            // Explicit index with the id repeated, then a nameless, idless new call
            // would be malformed, so the next one names itself.
            tool_fragment(Some(5), None, Some("write"), "{}"),
            tool_fragment(Some(5), Some("call_2"), None, ""),
            chunk(json!({}), Some("tool_calls")),
            DONE_LINE.to_owned(),
        ]
        .concat();
        let outcome = decode(&stream);
        assert_eq!(outcome.error, None);
        assert_eq!(
            tool_events(&outcome),
            vec![
                tool_call("a", "read", "{\"path\":\"x\"}"),
                tool_call("b", "glob", "{}"),
                tool_call("call_2", "write", "{}"),
            ]
        );
    }

    #[test]
    fn a_call_that_never_gets_a_function_name_is_malformed() {
        let stream = [
            tool_fragment(Some(0), Some("a"), None, "{}"),
            chunk(json!({}), Some("tool_calls")),
            DONE_LINE.to_owned(),
        ]
        .concat();
        assert_eq!(
            decode(&stream),
            Outcome::failed(
                Vec::new(),
                &ProviderError::Malformed("tool call 0 ended without a function name".into())
            )
        );
    }

    /// vMLX opens a call with `"name": ""` and names it in a later fragment; LM Studio
    /// and others send `"name": ""` on continuations, and vLLM's parsers repeat it.
    #[test]
    fn a_name_that_comes_late_is_announced_once_with_the_fragments_before_it() {
        let stream = [
            tool_fragment(Some(0), Some("call_x"), Some(""), ""),
            tool_fragment(Some(0), None, None, "{\"path\""),
            tool_fragment(Some(0), None, Some("read"), ":"),
            tool_fragment(Some(0), None, Some(""), "\"a\""),
            tool_fragment(Some(0), None, Some("read"), "}"),
            tool_fragment(Some(0), None, Some("read"), ""),
            chunk(json!({}), Some("tool_calls")),
            DONE_LINE.to_owned(),
        ]
        .concat();
        let delta = |fragment: &str| StreamEvent::ToolCallArgsDelta {
            id: "call_x".into(),
            fragment: fragment.into(),
        };
        assert_eq!(
            decode(&stream),
            Outcome::ok(vec![
                StreamEvent::ToolCallStart {
                    id: "call_x".into(),
                    name: "read".into(),
                },
                delta("{\"path\""),
                delta(":"),
                delta("\"a\""),
                delta("}"),
                StreamEvent::ToolCallEnd {
                    call: tool_call("call_x", "read", "{\"path\":\"a\"}"),
                },
                StreamEvent::Finished {
                    stop_reason: StopReason::ToolUse,
                    usage: Usage::default(),
                },
            ])
        );
    }

    #[test]
    fn maps_finish_reasons() {
        let cases = [
            ("stop", StopReason::EndTurn),
            ("tool_calls", StopReason::ToolUse),
            ("function_call", StopReason::ToolUse),
            ("length", StopReason::MaxTokens),
            ("content_filter", StopReason::Refusal),
            ("eos", StopReason::EndTurn),
            ("end_turn", StopReason::EndTurn),
            ("tool_use", StopReason::ToolUse),
            ("something_new", StopReason::Other("something_new".into())),
        ];
        for (wire, expected) in cases {
            let stream = [
                chunk(json!({"content": "x"}), Some(wire)),
                DONE_LINE.to_owned(),
            ]
            .concat();
            assert_eq!(
                decode(&stream).events.last(),
                Some(&StreamEvent::Finished {
                    stop_reason: expected,
                    usage: Usage::default()
                }),
                "{wire}"
            );
        }
    }

    #[test]
    fn reads_usage_from_a_null_choices_chunk() {
        let stream = [
            chunk(json!({"content": "hi"}), Some("stop")),
            "data: {\"choices\":null,\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":2,\"prompt_tokens_details\":null}}\n\n".to_owned(),
            DONE_LINE.to_owned(),
        ]
        .concat();
        assert_eq!(
            decode(&stream),
            Outcome::ok(vec![
                StreamEvent::TextDelta { text: "hi".into() },
                StreamEvent::Finished {
                    stop_reason: StopReason::EndTurn,
                    usage: Usage {
                        input_tokens: 10,
                        output_tokens: 2,
                        ..Usage::default()
                    }
                }
            ])
        );
    }

    #[test]
    fn a_call_cut_by_the_length_limit_ends_with_its_partial_arguments() {
        // The agent must not run it: the arguments are not JSON.
        let stream = [
            tool_fragment(Some(0), Some("call_1"), Some("write"), "{\"path\": \"a"),
            chunk(json!({}), Some("length")),
            DONE_LINE.to_owned(),
        ]
        .concat();
        let outcome = decode(&stream);
        assert_eq!(
            tool_events(&outcome),
            [ToolCall {
                id: "call_1".into(),
                name: "write".into(),
                arguments: "{\"path\": \"a".into(),
            }]
        );
        assert_eq!(
            outcome.events.last(),
            Some(&StreamEvent::Finished {
                stop_reason: StopReason::MaxTokens,
                usage: Usage::default()
            })
        );
    }

    #[test]
    fn done_without_a_finish_reason_is_truncated() {
        let stream = [chunk(json!({"content": "hi"}), None), DONE_LINE.to_owned()].concat();
        assert_eq!(
            decode(&stream),
            Outcome::failed(
                vec![StreamEvent::TextDelta { text: "hi".into() }],
                &ProviderError::Truncated("`[DONE]` arrived without a finish_reason".into())
            )
        );
    }

    /// ik_llama.cpp, llama.cpp before 2024-09, TGI before 2024-07 and mistral.rs before
    /// 2025-03 end the body after the finish chunk without `[DONE]`.
    #[test]
    fn a_body_that_ends_cleanly_after_its_finish_reason_is_complete() {
        let without_done = FIXTURE.split("data: [DONE]").next().unwrap();
        assert_eq!(decode(without_done), Outcome::ok(fixture_events()));
        // The last line `data: [DONE]` with no blank line after it.
        assert_eq!(decode(FIXTURE.trim_end()), Outcome::ok(fixture_events()));
    }

    /// The error of a body that ended without `[DONE]` before the answer was whole.
    fn assert_cut_off(outcome: &Outcome) {
        let cut_off =
            ProviderError::Truncated("the body ended without the `data: [DONE]` line".into());
        assert_eq!(outcome.error, Some(format!("{cut_off:?}")), "{outcome:?}");
    }

    #[test]
    fn a_body_cut_before_its_finish_reason_is_truncated() {
        let (cut, _) = FIXTURE.split_at(FIXTURE.find("\"finish_reason\":\"tool_calls\"").unwrap());
        let cut = &cut[..cut.rfind("\n\n").unwrap() + 2];
        let outcome = decode(cut);
        assert_cut_off(&outcome);
        assert!(
            !outcome
                .events
                .iter()
                .any(|event| matches!(event, StreamEvent::Finished { .. })),
            "{outcome:?}"
        );
    }

    #[test]
    fn a_body_ending_after_the_finish_reason_with_cut_arguments_is_truncated() {
        let stream = [
            tool_fragment(Some(0), Some("a"), Some("read"), "{\"path\": \"x"),
            chunk(json!({}), Some("tool_calls")),
        ]
        .concat();
        let outcome = decode(&stream);
        assert_cut_off(&outcome);
    }

    #[test]
    fn an_error_payload_mid_stream_is_an_api_error() {
        let stream = [
            chunk(json!({"content": "hi"}), None),
            "data: {\"error\":{\"message\":\"The server had an error while processing your request.\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n".to_owned(),
            DONE_LINE.to_owned(),
        ]
        .concat();
        assert_eq!(
            decode(&stream),
            Outcome::failed(
                vec![StreamEvent::TextDelta { text: "hi".into() }],
                &ProviderError::Api {
                    kind: "server_error".into(),
                    message: "The server had an error while processing your request.".into()
                }
            )
        );
        let bare = "event: error\ndata: {\"error\":\"model crashed\"}\n\n";
        assert_eq!(
            decode(bare),
            Outcome::failed(
                Vec::new(),
                &ProviderError::Api {
                    kind: "error".into(),
                    message: "model crashed".into()
                }
            )
        );
    }

    #[test]
    fn malformed_json_is_malformed() {
        let stream = [
            chunk(json!({"content": "hi"}), None),
            "data: {\"choices\":[{\n\n".to_owned(),
        ]
        .concat();
        let outcome = decode(&stream);
        assert_eq!(
            outcome.events,
            vec![StreamEvent::TextDelta { text: "hi".into() }]
        );
        let error = outcome.error.unwrap();
        assert!(
            error.starts_with("Malformed(\"undecodable chunk"),
            "{error}"
        );

        let wrong_shape = "data: {\"choices\":[{\"delta\":{\"content\":5}}]}\n\n";
        let error = decode(wrong_shape).error.unwrap();
        assert!(error.starts_with("Malformed(\"unexpected chunk"), "{error}");
    }

    #[tokio::test]
    async fn streams_from_a_server_with_the_documented_request() {
        let server = TestServer::start("/v1/chat/completions", |_| Reply::stream(FIXTURE)).await;
        let client = client(server.url("/v1/"), Some("sk-test"));
        assert_eq!(client.model(), "gpt-test");
        assert_eq!(
            say_hi(&client).await.unwrap(),
            Outcome::ok(fixture_events())
        );
        let sent = server.only_request();
        sent.assert_headers(&[
            ("authorization", "Bearer sk-test"),
            ("content-type", "application/json"),
        ]);
        assert_eq!(sent.body["model"], "gpt-test");
        assert_eq!(sent.body["stream"], true);
    }

    #[tokio::test]
    async fn sends_no_authorization_without_a_key_and_reports_http_errors() {
        let server = TestServer::start("/v1/chat/completions", |_| {
            Reply::error(
                StatusCode::NOT_FOUND,
                r#"{"error":{"message":"model \"gpt-test\" not found, try pulling it first","type":"api_error","param":null,"code":null}}"#,
            )
            .with_header("retry-after", "3")
        })
        .await;
        let client = client(server.url("/v1"), None);
        let err = say_hi(&client).await.err().unwrap();
        assert!(
            matches!(&err, ProviderError::Http { status: 404, message, retry_after: Some(after), .. }
                if message == "model \"gpt-test\" not found, try pulling it first"
                    && *after == std::time::Duration::from_secs(3)),
            "{err:?}"
        );
        assert!(!server.only_request().headers.contains_key("authorization"));
    }

    /// Mistral's answer to `stream_options` (avante.nvim#2347, verbatim).
    const MISTRAL_422: &str = r#"{"object":"error","message":{"detail":[{"type":"extra_forbidden","loc":["body","stream_options","include_usage"],"msg":"Extra inputs are not permitted","input":true}]},"type":"invalid_request_error","param":null,"code":null}"#;

    /// Whether a request body asks for `stream_options`.
    fn asks_for_stream_options(body: &Value) -> bool {
        body.get("stream_options").is_some()
    }

    #[tokio::test]
    async fn a_server_that_refuses_stream_options_is_asked_without_them_from_then_on() {
        // Answers like Mistral: 422 when the body has `stream_options`, the recorded
        // stream otherwise.
        let server = TestServer::start("/v1/chat/completions", |body| {
            if asks_for_stream_options(body) {
                Reply::error(StatusCode::UNPROCESSABLE_ENTITY, MISTRAL_422)
            } else {
                Reply::stream(FIXTURE)
            }
        })
        .await;
        let seen = || -> Vec<bool> {
            let sent = server.sent();
            sent.iter()
                .map(|sent| asks_for_stream_options(&sent.body))
                .collect()
        };
        let asking = client(server.url("/v1"), None);
        let notice = StreamEvent::Notice {
            text: WITHOUT_STREAM_OPTIONS.into(),
        };
        let events: Vec<StreamEvent> = std::iter::once(notice).chain(fixture_events()).collect();
        assert_eq!(say_hi(&asking).await.unwrap(), Outcome::ok(events));
        // Told once: the next request goes out without them and says nothing.
        assert_eq!(
            say_hi(&asking).await.unwrap(),
            Outcome::ok(fixture_events())
        );
        assert_eq!(seen(), [true, false, false]);

        // Configured off (`[network] stream_options = false`): never sent, nothing said.
        let configured = client(server.url("/v1"), None).asking_for_usage(false);
        assert_eq!(
            say_hi(&configured).await.unwrap(),
            Outcome::ok(fixture_events())
        );
        assert_eq!(seen(), [true, false, false, false]);
    }

    #[test]
    fn only_a_refusal_naming_stream_options_drops_them() {
        assert!(refuses_stream_options(&http_error(422, MISTRAL_422)));
        assert!(refuses_stream_options(&http_error(
            400,
            "Extra inputs are not permitted, field: 'stream_options'"
        )));
        assert!(!refuses_stream_options(&http_error(
            422,
            "Extra inputs are not permitted"
        )));
        assert!(!refuses_stream_options(&http_error(500, MISTRAL_422)));
    }

    mod properties {
        use proptest::prelude::*;
        use serde_json::json;

        use super::*;
        use crate::provider::stream_properties::{GeneratedTurn, check_stream, cuts, turn};

        fn chunk(out: &mut String, choice: &serde_json::Value) {
            let data = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk",
                "created": 1, "model": "m", "choices": [choice]});
            out.push_str(&format!("data: {data}\n\n"));
        }

        /// `turn` as OpenAI chat completions stream it (with `stream_options.include_usage`).
        fn render(turn: &GeneratedTurn) -> String {
            let mut out = String::new();
            chunk(
                &mut out,
                &json!({"index": 0,
                "delta": {"role": "assistant", "content": ""}, "finish_reason": null}),
            );
            for text in &turn.text {
                chunk(
                    &mut out,
                    &json!({"index": 0, "delta": {"content": text},
                    "finish_reason": null}),
                );
            }
            for (index, call) in turn.calls.iter().enumerate() {
                chunk(
                    &mut out,
                    &json!({"index": 0, "delta": {"tool_calls": [{"index": index,
                    "id": call.id, "type": "function",
                    "function": {"name": call.name, "arguments": ""}}]},
                    "finish_reason": null}),
                );
                for fragment in &call.fragments {
                    chunk(
                        &mut out,
                        &json!({"index": 0, "delta": {"tool_calls": [{
                        "index": index, "function": {"arguments": fragment}}]},
                        "finish_reason": null}),
                    );
                }
            }
            let finish = if turn.has_calls() {
                "tool_calls"
            } else {
                "stop"
            };
            chunk(
                &mut out,
                &json!({"index": 0, "delta": {}, "finish_reason": finish}),
            );
            let usage = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk",
                "created": 1, "model": "m", "choices": [],
                "usage": {"prompt_tokens": 7, "completion_tokens": 9, "total_tokens": 16}});
            out.push_str(&format!("data: {usage}\n\ndata: [DONE]\n\n"));
            out
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(150))]

            #[test]
            fn any_turn_decodes_the_same_however_it_is_chunked_or_cut(
                turn in turn(),
                cuts in cuts(),
            ) {
                check_stream(&render(&turn), OpenAiChatDecoder::default, &turn, &cuts)?;
            }
        }
    }
}
