//! Checks every request the scripted server receives against what the real API accepts.
//!
//! Owns: the list of request mistakes the real providers reject with HTTP 400 (and that
//! duet must therefore never make), above all the tool-call/result pairing invariant.
//! Does not own: answering — the server turns a non-empty problem list into a
//! violation and a 400 in the provider's format.
//! Invariant: an empty list means the real API would accept the request's shape; each
//! problem names where it is (`messages[2].content[0]`) and what is wrong.
//!
//! The checks are deliberately a little stricter than the APIs in one place: Anthropic
//! merges consecutive same-role messages, but duet must alternate roles, so this rejects
//! them.

mod anthropic;
mod openai;
mod responses;

use std::fmt::Display;

use axum::http::HeaderMap;
use axum::http::header::CONTENT_TYPE;
use duet::provider::Wire;
use serde_json::{Map, Value};

pub use responses::ReasoningLedger;

/// Problems with an Anthropic Messages request body; empty when it is acceptable.
pub fn anthropic_body(body: &Value) -> Vec<String> {
    anthropic::body(body, Mode::Duet)
}

/// Problems with an OpenAI chat completions request body; empty when it is acceptable.
pub fn openai_body(body: &Value) -> Vec<String> {
    openai::body(body)
}

/// Problems with an OpenAI Responses request body; empty when it is acceptable.
pub fn responses_body(body: &Value) -> Vec<String> {
    responses::body(body, Mode::Duet)
}

/// Whose requests are checked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// duet's own: every check, including the ones stricter than the API.
    #[default]
    Duet,
    /// Another agent's (peer mode, for `bench/peers`). Relaxed only where the real API
    /// accepts what duet never sends: on the Responses wire, tools of other types than
    /// `function` (Codex's freeform `apply_patch`, `web_search`, ...) and custom tool
    /// calls with their outputs, which must pair up like function calls; on the
    /// Anthropic wire, `system` messages between turns (Claude Code's), which stand
    /// apart from role alternation and call/result pairing.
    Peer,
}

/// Problems with the body of a request on `wire`.
pub(super) fn body(wire: Wire, body: &Value, mode: Mode) -> Vec<String> {
    match wire {
        Wire::Anthropic => anthropic::body(body, mode),
        Wire::OpenAiChat => openai_body(body),
        Wire::OpenAiResponses => responses::body(body, mode),
    }
}

/// Problems with the headers of a request on `wire`.
pub(super) fn headers(wire: Wire, headers: &HeaderMap) -> Vec<String> {
    let mut problems = Problems::default();
    let content_type = headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    if !content_type.starts_with("application/json") {
        problems.add(
            "content-type",
            format!("must be application/json, got `{content_type}`"),
        );
    }
    if wire == Wire::Anthropic && !headers.contains_key("anthropic-version") {
        problems.add("anthropic-version", "header is required");
    }
    problems.into_vec()
}

/// Collects problems, each prefixed with where it is.
#[derive(Default)]
struct Problems(Vec<String>);

impl Problems {
    fn add(&mut self, at: impl Display, what: impl Display) {
        self.0.push(format!("{at}: {what}"));
    }

    fn into_vec(self) -> Vec<String> {
        self.0
    }
}

fn require_non_empty_string(
    object: &Map<String, Value>,
    key: &str,
    at: &str,
    problems: &mut Problems,
) {
    match object.get(key) {
        Some(Value::String(text)) if !text.is_empty() => {}
        Some(Value::String(_)) => problems.add(format_args!("{at}{key}"), "must not be empty"),
        Some(_) => problems.add(format_args!("{at}{key}"), "must be a string"),
        None => problems.add(format_args!("{at}{key}"), "required"),
    }
}

/// `model` (a non-empty string) and `stream: true`, which every wire requires here.
fn check_model_and_stream(request: &Map<String, Value>, problems: &mut Problems) {
    require_non_empty_string(request, "model", "", problems);
    if request.get("stream") != Some(&Value::Bool(true)) {
        problems.add(
            "stream",
            "must be true (duet always streams; this server only answers streaming requests)",
        );
    }
}

/// Every API: 1 to 64 characters from `a-z A-Z 0-9 _ -`.
fn check_tool_name(name: Option<&Value>, at: &str, problems: &mut Problems) {
    let Some(name) = name.and_then(Value::as_str) else {
        problems.add(at, "`name` is required and must be a string");
        return;
    };
    let well_formed = (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !well_formed {
        problems.add(
            at,
            format!("tool name `{name}` must match ^[a-zA-Z0-9_-]{{1,64}}$"),
        );
    }
}

fn positive_integer(value: Option<&Value>, key: &str, problems: &mut Problems) {
    if let Some(value) = value
        && value.as_u64().is_none_or(|n| n == 0)
    {
        problems.add(key, "must be a positive integer");
    }
}
