//! Model clients: one streaming client per wire format (Anthropic Messages, OpenAI chat
//! completions, OpenAI Responses), and a replay of a scripted session ([`replay`]),
//! behind the [`ModelClient`] trait.
//!
//! Owns: HTTP to the model API, SSE decoding, and the translation between duet's
//! wire-neutral [`Message`]s / [`StreamEvent`]s and each provider's JSON.
//! Does not own: the conversation, the retry loop, or what to do with tool calls (it
//! does classify its errors and compute backoff delays: [`RetryPolicy`]).
//! Invariant: a stream yields events ending in exactly one [`StreamEvent::Finished`];
//! a stream that ends without it is an error ([`ProviderError::Truncated`]), never a
//! silent success.

pub mod anthropic;
mod arguments;
#[cfg(test)]
mod captures;
mod error;
mod http;
mod message;
pub mod openai_chat;
mod openai_common;
pub mod openai_responses;
pub mod replay;
mod retry;
mod sse;
mod stream;
#[cfg(test)]
mod stream_properties;
#[cfg(test)]
mod test_server;

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use clap::ValueEnum;
use futures::Stream;
use serde::{Deserialize, Serialize};

pub use error::ProviderError;
pub use http::DEFAULT_IDLE_TIMEOUT;
pub use message::{
    Block, Message, ModelRequest, Role, StopReason, StreamEvent, ToolCall, ToolResult, ToolSpec,
    Usage,
};
pub use retry::{RetryDecision, RetryPolicy};

// For the fuzz entry points (`crate::fuzzing`).
pub(crate) use arguments::ArgumentsBuffer;
pub(crate) use sse::SseDecoder;
pub(crate) use stream::{WireDecoder, decode_body};

/// The stream of decoded events for one model call.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ProviderError>> + Send>>;

/// The wire format a provider speaks. Its name, the same in config files (serde) and
/// on the command line (clap, which lists the names in `--help` and completions), is
/// what [`Display`](std::fmt::Display) prints and [`FromStr`](std::str::FromStr) reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
pub enum Wire {
    /// Anthropic Messages API (`POST {base}/v1/messages`).
    #[serde(rename = "anthropic")]
    #[value(name = "anthropic")]
    Anthropic,
    /// OpenAI-compatible chat completions (`POST {base}/chat/completions`): OpenAI,
    /// Ollama, llama.cpp server, vLLM.
    #[serde(rename = "openai")]
    #[value(name = "openai")]
    OpenAiChat,
    /// OpenAI Responses API (`POST {base}/responses`), stateless (`store: false`) with
    /// encrypted reasoning carried between requests.
    #[serde(rename = "openai-responses")]
    #[value(name = "openai-responses")]
    OpenAiResponses,
}

impl Wire {
    /// Every wire, in the order their names are listed (as [`ValueEnum::value_variants`]).
    pub const ALL: [Wire; 3] = [Wire::Anthropic, Wire::OpenAiChat, Wire::OpenAiResponses];
}

impl std::fmt::Display for Wire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        crate::value_name::write(self, f)
    }
}

impl std::str::FromStr for Wire {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        crate::value_name::parse(s).ok_or_else(|| {
            let valid = crate::value_name::all::<Wire>();
            format!("unknown provider `{s}` (valid: {valid})")
        })
    }
}

/// Where and how to reach a model.
#[derive(Clone, Debug)]
pub struct Endpoint {
    pub wire: Wire,
    /// Base URL as the official SDKs take it: `https://api.anthropic.com` for Anthropic,
    /// `https://api.openai.com/v1` for OpenAI and OpenAI-compatible servers (both wires).
    pub base_url: String,
    /// Sent as `x-api-key` (Anthropic) or `Authorization: Bearer` (OpenAI). Local
    /// servers often need none.
    pub api_key: Option<String>,
    pub model: String,
}

/// A streaming model client.
#[async_trait::async_trait]
pub trait ModelClient: Send + Sync {
    /// The model this client calls.
    fn model(&self) -> &str;

    /// Sends `request` and returns its decoded event stream. Errors before the first
    /// byte (connection, HTTP status) come back here; later ones arrive in the stream.
    async fn stream(&self, request: &ModelRequest) -> Result<EventStream, ProviderError>;
}

/// Optional request fields the user's config can leave out for a server that refuses
/// them (a refusal also drops them by itself, for the rest of the session).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestFeatures {
    /// Chat completions: `stream_options.include_usage`, for the final usage chunk.
    pub stream_options: bool,
}

impl Default for RequestFeatures {
    fn default() -> Self {
        Self {
            stream_options: true,
        }
    }
}

/// Builds the client for `endpoint`. A response silent for `idle_timeout` (no byte of
/// headers or body) fails with [`ProviderError::Idle`]; a transport that could not be
/// set up fails the first request with [`ProviderError::Setup`].
pub fn connect(
    endpoint: Endpoint,
    idle_timeout: Duration,
    features: RequestFeatures,
) -> Arc<dyn ModelClient> {
    let transport = http::Transport::new(idle_timeout);
    match endpoint.wire {
        Wire::Anthropic => Arc::new(anthropic::AnthropicClient::new(transport, endpoint)),
        Wire::OpenAiChat => Arc::new(
            openai_chat::OpenAiChatClient::new(transport, endpoint)
                .asking_for_usage(features.stream_options),
        ),
        Wire::OpenAiResponses => Arc::new(openai_responses::OpenAiResponsesClient::new(
            transport, endpoint,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wires_are_named_alike_in_config_files_on_the_command_line_and_in_messages() {
        let names = ["anthropic", "openai", "openai-responses"];
        assert_eq!(Wire::ALL.map(|wire| wire.to_string()), names);
        assert_eq!(Wire::value_variants(), Wire::ALL);
        for (wire, name) in Wire::ALL.into_iter().zip(names) {
            assert_eq!(name.parse::<Wire>(), Ok(wire));
            assert_eq!(serde_json::to_string(&wire).unwrap(), format!("\"{name}\""));
        }
        assert_eq!(
            "openai-chat".parse::<Wire>(),
            Err(
                "unknown provider `openai-chat` (valid: anthropic, openai, openai-responses)"
                    .into()
            )
        );
    }
}
