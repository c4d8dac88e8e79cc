//! Tests of the scripted model server itself: script loading, request validation, the
//! exact wire framing, gates and faults, peer mode, and the official SDKs reading its
//! streams.

mod peers;
mod script_format;
mod sdk;
mod validation;
mod wire;

use duet::provider::Wire;
use reqwest::header::CONTENT_TYPE;
use serde_json::Value;

use crate::common::scripted_server::ScriptedServer;

/// A plain HTTP client (no TLS is used, but reqwest needs a crypto provider to build).
fn http() -> reqwest::Client {
    // Fails only when a provider is already installed, which is just as good.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// POSTs `body` to `wire`'s endpoint the way a well-behaved client does.
async fn post(server: &ScriptedServer, wire: Wire, body: &Value) -> reqwest::Response {
    let (url, request) = match wire {
        Wire::Anthropic => {
            let url = format!("{}/v1/messages", server.anthropic_base_url());
            (
                url.clone(),
                http().post(url).header("anthropic-version", "2023-06-01"),
            )
        }
        Wire::OpenAiChat => {
            let url = format!("{}/chat/completions", server.openai_base_url());
            (url.clone(), http().post(url))
        }
        Wire::OpenAiResponses => {
            let url = format!("{}/responses", server.openai_base_url());
            (url.clone(), http().post(url))
        }
    };
    request
        .header(CONTENT_TYPE, "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap_or_else(|err| panic!("POST {url}: {err}"))
}

/// The smallest request each wire accepts, streaming.
fn minimal_request(wire: Wire) -> Value {
    match wire {
        Wire::Anthropic => serde_json::json!({
            "model": "claude-scripted",
            "max_tokens": 64,
            "stream": true,
            "messages": [{ "role": "user", "content": "hello" }],
        }),
        Wire::OpenAiChat => serde_json::json!({
            "model": "gpt-scripted",
            "stream": true,
            "stream_options": { "include_usage": true },
            "messages": [{ "role": "user", "content": "hello" }],
        }),
        Wire::OpenAiResponses => serde_json::json!({
            "model": "gpt-scripted",
            "stream": true,
            "store": false,
            "input": [{ "type": "message", "role": "user",
                        "content": [{ "type": "input_text", "text": "hello" }] }],
        }),
    }
}
