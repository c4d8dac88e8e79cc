//! Scripts of a model session: what the "model" answers, turn by turn.
//!
//! The replay provider ([`super::ReplayClient`]) plays them in-process; the test suite's
//! scripted model server renders them into each wire format (`tests/scripts/*.toml`).
//!
//! Owns: the provider-neutral script model and its TOML form.
//! Does not own: any wire format (the server renders a turn into whichever wire the
//! request came in on), timing, or request checking.
//! Invariant: a [`Script`] that loaded is playable — every check a script can fail is
//! made here, with the turn and block it concerns, so no player meets a bad turn.
//!
//! # Format
//!
//! ```toml
//! # (gates are released by a test of the scripted server; the replay provider refuses them)
//! [[turn]]                                   # one model response per [[turn]], in order
//! blocks = [
//!   { text = "Reading three files.", chunk = 5 },         # text, streamed in 5-char deltas
//!   { thinking = "Let me think.", signature = "sig-1" },  # reasoning (OpenAI chat: reasoning_content;
//!                                                         #   Responses: a reasoning item)
//!   { redacted_thinking = "opaque" },                     # Anthropic; Responses: a reasoning item
//!                                                         #   with no summary; OpenAI chat: nothing
//!   { tool = "read", args = '{"path": "a.txt"}', chunk = 3 },  # tool call, args in 3-char fragments
//!   { pause_ms = 200 },                                   # wait 200 ms
//!   { gate = "before-third" },                            # wait for server.release("before-third")
//!   { tool = "read", id = "call_custom", args = '{"path": "c.txt"}' },
//! ]
//! # A turn may end in a fault instead, as its last block:
//! #   { tool = "write", args = '{"path": "a.txt"}', chunk = 4, cut_after_chunks = 2 }
//! #       sends the call's start and 2 argument fragments, then drops the connection
//! #   { error = "overloaded_error", message = "Overloaded" }
//! #       sends the provider's mid-stream error event (Responses: `response.failed`
//! #       with that error code), then ends the body
//! # A stall (no bytes at all) is a pause longer than the client's idle timeout.
//! stop = "tool_use"      # end_turn | tool_use | max_tokens | stop_sequence | refusal;
//!                        # default: tool_use if the turn has a tool block, else end_turn
//! usage = { input = 100, output = 20, cache_read = 0, cache_write = 0 }  # default: all 0
//! cut_after_blocks = 2   # optional: drop the connection after 2 content blocks
//! terminal_event = false # optional: end the body cleanly without the wire's last event
//!                        #   (`data: [DONE]`, `message_stop`, `response.completed`), as
//!                        #   servers that never send it do
//! pace_ms = 10           # optional: wait 10 ms between consecutive events of the stream
//!                        #   (a steady token rate, e.g. for benchmarks)
//!
//! [[turn]]               # a turn can answer with an HTTP error instead of a stream
//! status = 529
//! retry_after = 2        # optional, seconds, sent as `retry-after`
//! message = "Overloaded" # optional; default: the status's reason phrase
//! ```
//!
//! `chunk` counts characters (never splits one) and defaults to the whole text in one
//! delta. `signature` defaults to `sig_t{turn}_{n}`; tool `id` defaults to
//! `toolu_t{turn}_{n}` (Anthropic) or `call_t{turn}_{n}` (both OpenAI wires; a Responses
//! call's item id is `fc_t{turn}_{n}`), where `turn` is the
//! 1-based turn and `n` the 1-based position of the block among the turn's blocks of that
//! kind. `args` is sent verbatim, so it may be deliberately invalid JSON; it defaults to
//! `{}`. Pauses and gates happen between content blocks. Usage follows Anthropic's
//! meaning: `input` excludes cached tokens (OpenAI's `prompt_tokens` is the sum of
//! `input`, `cache_read` and `cache_write`; `cached_tokens` is `cache_read`).

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// A whole script: the answers to the model requests, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Script {
    turns: Vec<Turn>,
}

/// How the server answers one model request.
#[derive(Clone, Debug, PartialEq)]
pub enum Turn {
    /// A streamed response (possibly cut short).
    Stream(StreamTurn),
    /// An HTTP error response in the provider's error format.
    Status(StatusTurn),
}

/// A streamed response.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamTurn {
    pub steps: Vec<Step>,
    pub stop: StopReason,
    pub usage: ScriptUsage,
    /// Drop the connection after this many content blocks instead of finishing.
    pub cut_after_blocks: Option<usize>,
    /// Whether the body ends with the wire's terminal event; some servers end it
    /// cleanly right after the stop reason instead.
    pub terminal_event: bool,
    /// Wait this long between consecutive events of the stream.
    pub pace: Option<Duration>,
}

/// An HTTP error response.
#[derive(Clone, Debug, PartialEq)]
pub struct StatusTurn {
    /// 400..=599.
    pub status: u16,
    /// Seconds, sent as the `retry-after` header.
    pub retry_after: Option<u64>,
    pub message: Option<String>,
}

/// One entry of a streamed turn: a content block, or a pause in the stream.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    Text {
        text: String,
        chunk: Option<NonZeroUsize>,
    },
    Thinking {
        thinking: String,
        /// `None` means the default `sig_t{turn}_{n}`.
        signature: Option<String>,
        chunk: Option<NonZeroUsize>,
    },
    RedactedThinking {
        data: String,
    },
    Tool {
        name: String,
        /// `None` means the wire's default id for this position.
        id: Option<String>,
        args: String,
        chunk: Option<NonZeroUsize>,
        /// Drop the connection after this many argument fragments (fewer than the
        /// call has), leaving the call's JSON cut.
        cut_after_chunks: Option<usize>,
    },
    /// The provider's mid-stream error event (`kind` as in its `error.type`); the body
    /// ends after it.
    StreamError {
        kind: String,
        message: String,
    },
    Pause(Duration),
    Gate(String),
}

impl Step {
    /// Whether this step is a content block (as opposed to a pause or gate).
    pub fn is_content(&self) -> bool {
        !matches!(self, Step::Pause(_) | Step::Gate(_))
    }

    /// Whether the stream ends with this step (a fault), so nothing may follow it.
    pub fn ends_stream(&self) -> bool {
        matches!(
            self,
            Step::Tool {
                cut_after_chunks: Some(_),
                ..
            } | Step::StreamError { .. }
        )
    }
}

/// `text` in pieces of `chunk` characters (the whole text when `None`); a call's
/// argument fragments and a block's text deltas are cut this way.
pub fn pieces(text: &str, chunk: Option<NonZeroUsize>) -> Vec<String> {
    let Some(size) = chunk else {
        return if text.is_empty() {
            Vec::new()
        } else {
            vec![text.to_owned()]
        };
    };
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size.get())
        .map(|piece| piece.iter().collect())
        .collect()
}

/// Why the scripted model stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    StopSequence,
    Refusal,
}

/// Token counts the server reports for a turn (Anthropic's meaning; see the module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScriptUsage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

/// Why a script could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("cannot read script {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("script is not valid TOML for the script format: {0}")]
    Toml(#[from] toml::de::Error),
    #[error("turn {turn}: {reason}")]
    Turn { turn: usize, reason: String },
    #[error("turn {turn}, block {block}: {reason}")]
    Block {
        turn: usize,
        block: usize,
        reason: String,
    },
}

impl Script {
    /// Parses a script from TOML text.
    pub fn from_toml(text: &str) -> Result<Script, ScriptError> {
        let raw: RawScript = toml::from_str(text)?;
        let turns = raw
            .turn
            .into_iter()
            .enumerate()
            .map(|(index, turn)| turn.into_turn(index + 1))
            .collect::<Result<_, _>>()?;
        Ok(Script { turns })
    }

    pub fn turns(&self) -> &[Turn] {
        &self.turns
    }

    /// Reads and parses the script file at `path`.
    pub fn from_file(path: &Path) -> Result<Script, ScriptError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_toml(&text)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScript {
    #[serde(default)]
    turn: Vec<RawTurn>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTurn {
    #[serde(default)]
    blocks: Vec<RawBlock>,
    stop: Option<StopReason>,
    usage: Option<ScriptUsage>,
    cut_after_blocks: Option<usize>,
    terminal_event: Option<bool>,
    pace_ms: Option<u64>,
    status: Option<u16>,
    retry_after: Option<u64>,
    message: Option<String>,
}

impl RawTurn {
    fn into_turn(self, turn: usize) -> Result<Turn, ScriptError> {
        let fail = |reason: String| ScriptError::Turn { turn, reason };
        match self.status {
            Some(status) => self.into_status(status).map_err(fail),
            None => {
                if self.retry_after.is_some() || self.message.is_some() {
                    return Err(fail(
                        "`retry_after` and `message` only apply to a `status` turn".into(),
                    ));
                }
                self.into_stream(turn)
            }
        }
    }

    fn into_status(self, status: u16) -> Result<Turn, String> {
        if !(400..=599).contains(&status) {
            return Err(format!("status {status} is not an HTTP error (400..=599)"));
        }
        let streaming_keys = [
            ("blocks", !self.blocks.is_empty()),
            ("stop", self.stop.is_some()),
            ("usage", self.usage.is_some()),
            ("cut_after_blocks", self.cut_after_blocks.is_some()),
            ("terminal_event", self.terminal_event.is_some()),
            ("pace_ms", self.pace_ms.is_some()),
        ];
        if let Some((key, _)) = streaming_keys.iter().find(|(_, present)| *present) {
            return Err(format!(
                "a `status` turn answers with an error, so `{key}` does not apply"
            ));
        }
        Ok(Turn::Status(StatusTurn {
            status,
            retry_after: self.retry_after,
            message: self.message,
        }))
    }

    fn into_stream(self, turn: usize) -> Result<Turn, ScriptError> {
        let steps = self
            .blocks
            .into_iter()
            .enumerate()
            .map(|(index, block)| {
                block.into_step().map_err(|reason| ScriptError::Block {
                    turn,
                    block: index + 1,
                    reason,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let content_blocks = steps.iter().filter(|step| step.is_content()).count();
        if let Some(cut) = self.cut_after_blocks
            && cut > content_blocks
        {
            return Err(ScriptError::Turn {
                turn,
                reason: format!(
                    "cut_after_blocks = {cut}, but the turn has only {content_blocks} content block(s)"
                ),
            });
        }
        check_unique_tool_ids(&steps).map_err(|reason| ScriptError::Turn { turn, reason })?;
        check_faults(&steps, self.cut_after_blocks)
            .map_err(|reason| ScriptError::Turn { turn, reason })?;
        let has_tools = steps.iter().any(|step| matches!(step, Step::Tool { .. }));
        let default_stop = if has_tools {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        };
        Ok(Turn::Stream(StreamTurn {
            steps,
            stop: self.stop.unwrap_or(default_stop),
            usage: self.usage.unwrap_or_default(),
            cut_after_blocks: self.cut_after_blocks,
            terminal_event: self.terminal_event.unwrap_or(true),
            pace: self.pace_ms.map(Duration::from_millis),
        }))
    }
}

fn check_unique_tool_ids(steps: &[Step]) -> Result<(), String> {
    let mut seen = std::collections::HashSet::new();
    for step in steps {
        if let Step::Tool { id: Some(id), .. } = step
            && !seen.insert(id.as_str())
        {
            return Err(format!("tool id `{id}` is used twice in one turn"));
        }
    }
    Ok(())
}

/// A fault ends the stream, so it must be the last step and the only cut.
fn check_faults(steps: &[Step], cut_after_blocks: Option<usize>) -> Result<(), String> {
    let Some(position) = steps.iter().position(Step::ends_stream) else {
        return Ok(());
    };
    if position + 1 != steps.len() {
        return Err(format!(
            "block {} ends the stream, so it must be the last block",
            position + 1
        ));
    }
    if cut_after_blocks.is_some() {
        return Err(
            "`cut_after_blocks` cannot be combined with a block that ends the stream".into(),
        );
    }
    Ok(())
}

/// One `blocks` entry as written: which kind it is depends on its one "head" key.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBlock {
    text: Option<String>,
    thinking: Option<String>,
    redacted_thinking: Option<String>,
    tool: Option<String>,
    error: Option<String>,
    pause_ms: Option<u64>,
    gate: Option<String>,
    signature: Option<String>,
    id: Option<String>,
    args: Option<String>,
    chunk: Option<usize>,
    cut_after_chunks: Option<usize>,
    message: Option<String>,
}

impl RawBlock {
    const HEADS: [&'static str; 7] = [
        "text",
        "thinking",
        "redacted_thinking",
        "tool",
        "error",
        "pause_ms",
        "gate",
    ];

    fn present_keys(&self) -> Vec<&'static str> {
        [
            ("text", self.text.is_some()),
            ("thinking", self.thinking.is_some()),
            ("redacted_thinking", self.redacted_thinking.is_some()),
            ("tool", self.tool.is_some()),
            ("error", self.error.is_some()),
            ("pause_ms", self.pause_ms.is_some()),
            ("gate", self.gate.is_some()),
            ("signature", self.signature.is_some()),
            ("id", self.id.is_some()),
            ("args", self.args.is_some()),
            ("chunk", self.chunk.is_some()),
            ("cut_after_chunks", self.cut_after_chunks.is_some()),
            ("message", self.message.is_some()),
        ]
        .into_iter()
        .filter_map(|(key, present)| present.then_some(key))
        .collect()
    }

    fn into_step(self) -> Result<Step, String> {
        let present = self.present_keys();
        let heads: Vec<_> = present
            .iter()
            .copied()
            .filter(|key| Self::HEADS.contains(key))
            .collect();
        let head = match heads.as_slice() {
            [head] => *head,
            [] => {
                return Err(format!(
                    "a block needs exactly one of {}",
                    Self::HEADS.join(", ")
                ));
            }
            many => {
                return Err(format!(
                    "a block has exactly one kind, but this one has {}",
                    many.join(" and ")
                ));
            }
        };
        let allowed: &[&str] = match head {
            "text" => &["chunk"],
            "thinking" => &["signature", "chunk"],
            "tool" => &["id", "args", "chunk", "cut_after_chunks"],
            "error" => &["message"],
            _ => &[],
        };
        if let Some(extra) = present
            .iter()
            .find(|key| **key != head && !allowed.contains(key))
        {
            return Err(format!("`{extra}` does not apply to a `{head}` block"));
        }
        let chunk = match self.chunk {
            Some(0) => return Err("`chunk` must be at least 1".into()),
            chunk => chunk.and_then(NonZeroUsize::new),
        };
        Ok(match self {
            RawBlock {
                text: Some(text), ..
            } => Step::Text { text, chunk },
            RawBlock {
                thinking: Some(thinking),
                signature,
                ..
            } => Step::Thinking {
                thinking,
                signature,
                chunk,
            },
            RawBlock {
                redacted_thinking: Some(data),
                ..
            } => Step::RedactedThinking { data },
            RawBlock {
                tool: Some(name),
                id,
                args,
                cut_after_chunks,
                ..
            } => {
                let args = args.unwrap_or_else(|| "{}".into());
                let fragments = pieces(&args, chunk).len();
                if let Some(cut) = cut_after_chunks
                    && cut >= fragments
                {
                    return Err(format!(
                        "cut_after_chunks = {cut} must be less than the call's {fragments} argument fragment(s)"
                    ));
                }
                Step::Tool {
                    name,
                    id,
                    args,
                    chunk,
                    cut_after_chunks,
                }
            }
            RawBlock {
                error: Some(kind),
                message,
                ..
            } => Step::StreamError {
                message: message.unwrap_or_else(|| kind.clone()),
                kind,
            },
            RawBlock {
                pause_ms: Some(ms), ..
            } => Step::Pause(Duration::from_millis(ms)),
            RawBlock {
                gate: Some(name), ..
            } => Step::Gate(name),
            RawBlock { .. } => return Err("a block needs a kind".into()),
        })
    }
}
