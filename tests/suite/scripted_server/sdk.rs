//! The official Python SDKs stream a scripted turn from the server: the proof that it
//! speaks the real wire formats. Needs `pip install anthropic openai`; skipped (with a
//! note) when they are missing, unless `DUET_CI=1` makes that a failure.

use std::io::ErrorKind;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use duet::provider::Wire;

use crate::common::script::{LoadScript, Script};
use crate::common::scripted_server::ScriptedServer;

/// stream_check.py's exit status when the SDK packages are not importable.
const MISSING_SDK: i32 = 77;

fn sdk_unavailable(reason: &str) {
    let required = std::env::var("DUET_CI").is_ok_and(|value| value == "1");
    assert!(
        !required,
        "DUET_CI=1 but the SDK check cannot run ({reason}); pip install anthropic openai"
    );
    eprintln!(
        "SKIPPED official_sdks_read_the_scripted_stream: {reason}; pip install anthropic openai to run it"
    );
}

#[tokio::test]
async fn official_sdks_read_the_scripted_stream() {
    // One server per SDK, so each request is answered by the script's single turn.
    let anthropic = ScriptedServer::start(Script::load("sdk_stream_check")).await;
    let openai = ScriptedServer::start(Script::load("sdk_stream_check")).await;
    let responses = ScriptedServer::start(Script::load("sdk_stream_check")).await;
    let checker = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/stream_check.py");

    let output = tokio::process::Command::new("python3")
        .arg(checker)
        .arg(anthropic.anthropic_base_url())
        .arg(openai.openai_base_url())
        .arg(responses.openai_base_url())
        .output()
        .await;

    let output = match output {
        Err(err) if err.kind() == ErrorKind::NotFound => {
            return sdk_unavailable("python3 is not installed");
        }
        Err(err) => panic!("cannot run python3: {err}"),
        Ok(output) if output.status.code() == Some(MISSING_SDK) => {
            return sdk_unavailable(String::from_utf8_lossy(&output.stderr).trim());
        }
        Ok(output) => output,
    };
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "stream_check.py failed ({}):\n{stderr}",
        output.status
    );
    let summary: Value = serde_json::from_slice(&output.stdout).expect("a JSON summary");
    eprintln!("verified with the official SDKs: {}", summary["versions"]);

    let text = "Reading both files → then I'll summarise.";
    let thinking = "The user wants two files read.";
    let first_args = json!({ "path": "src/a.rs", "limit": 40 });
    let second_args = json!({ "path": "notes/é.txt" });
    assert_eq!(
        summary["anthropic"],
        json!({
            "blocks": ["thinking", "text", "tool_use", "tool_use"],
            "text": text,
            "thinking": [{ "thinking": thinking, "signature": "sig-scripted-1" }],
            "tool_calls": [
                { "id": "toolu_t1_1", "name": "read", "arguments": first_args },
                { "id": "custom_call_2", "name": "read", "arguments": second_args },
            ],
            "stop_reason": "tool_use",
            "usage": { "input": 120, "output": 45, "cache_read": 30, "cache_write": 10 },
            "first_and_last_events": ["message_start", "message_stop"],
        })
    );
    assert_eq!(
        summary["openai"],
        json!({
            "role": "assistant",
            "text": text,
            "thinking": thinking,
            "tool_calls": [
                { "id": "call_t1_1", "name": "read", "arguments": first_args },
                { "id": "custom_call_2", "name": "read", "arguments": second_args },
            ],
            "stop_reason": "tool_calls",
            "usage": { "prompt_tokens": 160, "completion_tokens": 45, "total_tokens": 205, "cached_tokens": 30 },
        })
    );
    assert_eq!(
        summary["responses"],
        json!({
            "status": "completed",
            "items": ["reasoning", "message", "function_call", "function_call"],
            "text": text,
            "reasoning": [{
                "summary": [thinking],
                "encrypted_content": "gAAAAB-scripted-t1-sig-scripted-1",
            }],
            "tool_calls": [
                { "call_id": "call_t1_1", "name": "read", "arguments": first_args },
                { "call_id": "custom_call_2", "name": "read", "arguments": second_args },
            ],
            "usage": { "input_tokens": 160, "output_tokens": 45, "total_tokens": 205, "cached_tokens": 30, "cache_write_tokens": 10 },
            "first_and_last_events": ["response.created", "response.completed"],
        })
    );
    // The SDKs' own requests pass the validator too.
    anthropic.assert_no_violations();
    openai.assert_no_violations();
    responses.assert_no_violations();
    assert_eq!(anthropic.requests().len(), 1);
    assert_eq!(openai.requests().len(), 1);
    assert_eq!(responses.requests().len(), 1);
    assert_eq!(responses.requests()[0].wire, Wire::OpenAiResponses);
}
