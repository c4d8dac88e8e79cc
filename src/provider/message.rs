//! The conversation as duet keeps it, independent of any wire format.
//!
//! Each wire module translates these values into its own JSON. The agent owns the
//! invariant that every [`ToolCall`] in an assistant message is answered by exactly one
//! [`ToolResult`] in the user message that follows it.

use serde::{Deserialize, Serialize};

/// Who authored a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
}

/// One turn of the conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Message {
    pub role: Role,
    pub content: Vec<Block>,
}

impl Message {
    pub fn user_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: vec![Block::Text { text: text.into() }],
        }
    }

    /// Tool calls carried by this message, in the order the model made them.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|block| match block {
            Block::ToolCall(call) => Some(call),
            _ => None,
        })
    }

    /// Tool results carried by this message, in order.
    pub fn tool_results(&self) -> impl Iterator<Item = &ToolResult> {
        self.content.iter().filter_map(|block| match block {
            Block::ToolResult(result) => Some(result),
            _ => None,
        })
    }
}

/// A piece of message content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text {
        text: String,
    },
    /// Model reasoning. Anthropic requires the signed block to be sent back unchanged
    /// while a tool-use turn is in progress; an unsigned (cut) block must be dropped.
    Thinking {
        thinking: String,
        signature: Option<String>,
    },
    /// Reasoning the provider encrypted; sent back verbatim.
    RedactedThinking {
        data: String,
    },
    /// An OpenAI Responses reasoning output item (`type: "reasoning"`, with its
    /// `encrypted_content`), kept exactly as received: that wire sends it back as an
    /// input item so the model keeps its reasoning across tool steps. Its readable
    /// summary is also kept as [`Block::Thinking`]; the other wires drop this block.
    ReasoningItem {
        item: serde_json::Value,
    },
    ToolCall(ToolCall),
    ToolResult(ToolResult),
    /// An image the user attached: `media_type` one of `image/png`, `image/jpeg`,
    /// `image/gif`, `image/webp` (checked against the file's first bytes), `data` its
    /// bytes in standard base64.
    Image {
        media_type: String,
        data: String,
    },
}

/// A tool invocation requested by the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments exactly as the model streamed them (JSON text, possibly invalid).
    pub arguments: String,
}

/// The answer to one [`ToolCall`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolResult {
    pub call_id: String,
    pub content: String,
    pub is_error: bool,
}

/// A tool offered to the model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub input_schema: serde_json::Value,
}

/// Everything a wire client needs to make one model call.
#[derive(Clone, Debug)]
pub struct ModelRequest {
    /// Stable system text, in order: the base prompt, then project instructions. Together
    /// with `tools` this is the cacheable prefix.
    pub system: Vec<String>,
    pub tools: Vec<ToolSpec>,
    pub messages: Vec<Message>,
    /// Text that changes on every call (the environment block). Placed after the
    /// conversation, outside any cache breakpoint, and never stored in the conversation.
    pub volatile_context: Option<String>,
    pub max_tokens: u32,
}

/// Token counts reported by the provider for one call. A count missing where one is
/// read back (a session file, a `--json` stream) is zero.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(default)]
pub struct Usage {
    /// Input tokens neither read from nor written to the prompt cache, so the whole
    /// prompt is `input_tokens + cache_read_tokens + cache_write_tokens` on every wire.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Input tokens served from the prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache (reported by Anthropic and OpenAI
    /// Responses).
    pub cache_write_tokens: u64,
}

impl Usage {
    /// The whole prompt of the call, cached or not.
    pub fn prompt_tokens(&self) -> u64 {
        self.input_tokens + self.cache_read_tokens + self.cache_write_tokens
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, call: Usage) {
        self.input_tokens += call.input_tokens;
        self.output_tokens += call.output_tokens;
        self.cache_read_tokens += call.cache_read_tokens;
        self.cache_write_tokens += call.cache_write_tokens;
    }
}

/// Why the model stopped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    StopSequence,
    Refusal,
    Other(String),
}

/// One decoded step of a streamed response, common to every wire format.
///
/// A well-formed stream is any sequence of these ending with exactly one
/// [`StreamEvent::Finished`]. Tool calls are announced by `ToolCallStart`, may stream
/// argument fragments, and are complete at `ToolCallEnd`, which carries the whole call.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamEvent {
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        text: String,
    },
    /// Closes the current thinking block with the provider's signature.
    ThinkingSignature {
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
    /// A complete provider reasoning item to keep verbatim ([`Block::ReasoningItem`]).
    ReasoningItem {
        item: serde_json::Value,
    },
    ToolCallStart {
        id: String,
        name: String,
    },
    ToolCallArgsDelta {
        id: String,
        fragment: String,
    },
    /// The call's arguments are complete; it may be executed now.
    ToolCallEnd {
        call: ToolCall,
    },
    Finished {
        stop_reason: StopReason,
        usage: Usage,
    },
    /// The client changed how it asks this server for the rest of the session (a
    /// request feature the server refused is left out from now on), for the user to
    /// see once. Carries nothing for the conversation.
    Notice {
        text: String,
    },
}
