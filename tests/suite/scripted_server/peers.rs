//! Peer mode: a script in duet's tool names played to other agents' tools, and side
//! requests answered without consuming a turn.

use std::path::PathBuf;

use duet::provider::Wire;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::wire::{anthropic_events, read_body, responses_events};
use super::{http, post};
use crate::common::script::Script;
use crate::common::scripted_server::ScriptedServer;

/// A read, then a closing text.
const READ_THEN_DONE: &str = r#"
[[turn]]
blocks = [{ tool = "read", args = '{"path": "calc.py"}' }]
[[turn]]
blocks = [{ text = "Done." }]
"#;

const WORKDIR: &str = "/work/repo";

async fn start_for_peers(toml: &str) -> ScriptedServer {
    let script = Script::from_toml(toml).expect("test script");
    ScriptedServer::start_for_peers(script, 0, PathBuf::from(WORKDIR)).await
}

/// A Claude Code-shaped request: its tools, and `messages` as given.
fn claude_request(messages: Value) -> Value {
    let tool = |name: &str| json!({ "name": name, "input_schema": { "type": "object" } });
    json!({
        "model": "claude-scripted",
        "max_tokens": 1024,
        "stream": true,
        "tools": [tool("Bash"), tool("Edit"), tool("Read"), tool("Write")],
        "messages": messages,
    })
}

fn user(text: &str) -> Value {
    json!({ "role": "user", "content": text })
}

/// The text of an Anthropic stream's text deltas.
fn anthropic_text(events: &[Value]) -> String {
    events
        .iter()
        .filter_map(|event| event["delta"]["text"].as_str())
        .collect()
}

async fn anthropic_stream(server: &ScriptedServer, body: &Value) -> Vec<Value> {
    let mut response = post(server, Wire::Anthropic, body).await;
    assert_eq!(response.status(), 200);
    let (text, error) = read_body(&mut response).await;
    assert!(error.is_none(), "{error:?}");
    anthropic_events(&text)
}

#[tokio::test]
async fn a_side_request_in_the_middle_does_not_advance_the_script() {
    let server = start_for_peers(READ_THEN_DONE).await;

    let first = anthropic_stream(&server, &claude_request(json!([user("go")]))).await;
    let call = first
        .iter()
        .find(|event| event["content_block"]["type"] == "tool_use")
        .expect("a tool call");
    assert_eq!(call["content_block"]["name"], "Read");
    let args: String = first
        .iter()
        .filter_map(|event| event["delta"]["partial_json"].as_str())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&args).unwrap(),
        json!({ "file_path": "/work/repo/calc.py" })
    );

    // A title request: no tools, between two steps.
    let title_request = json!({
        "model": "claude-haiku", "max_tokens": 64, "stream": true,
        "messages": [user("Write a title for: go")],
    });
    let title = anthropic_stream(&server, &title_request).await;
    assert_eq!(anthropic_text(&title), "Scripted task");

    let id = call["content_block"]["id"].clone();
    let second = claude_request(json!([
        user("go"),
        { "role": "assistant", "content": [{ "type": "tool_use", "id": id, "name": "Read", "input": { "file_path": "/work/repo/calc.py" } }] },
        { "role": "user", "content": [{ "type": "tool_result", "tool_use_id": id, "content": "1\tdef add(a, b):" }] },
    ]));
    let done = anthropic_stream(&server, &second).await;
    assert_eq!(anthropic_text(&done), "Done.");

    let sides: Vec<Option<&str>> = server.requests().iter().map(|r| r.side).collect();
    assert_eq!(sides, [None, Some("no tools offered"), None]);
    server.assert_no_violations();
}

#[tokio::test]
async fn a_request_without_tools_that_does_not_stream_gets_a_whole_answer() {
    let server = start_for_peers(READ_THEN_DONE).await;
    let body = json!({ "model": "claude-haiku", "max_tokens": 64, "messages": [user("quota")] });

    let response = post(&server, Wire::Anthropic, &body).await;

    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.expect("a JSON body");
    assert_eq!(answer["type"], "message");
    assert_eq!(
        answer["content"],
        json!([{ "type": "text", "text": "Scripted task" }])
    );
    assert_eq!(answer["stop_reason"], "end_turn");
    // The script is untouched: its first turn still answers the first step.
    let first = anthropic_stream(&server, &claude_request(json!([user("go")]))).await;
    assert!(
        first
            .iter()
            .any(|event| event["content_block"]["name"] == "Read")
    );
    server.assert_no_violations();
}

#[tokio::test]
async fn token_counts_and_probes_are_answered_without_a_turn() {
    let server = start_for_peers(READ_THEN_DONE).await;
    let base = server.anthropic_base_url();

    let count = http()
        .post(format!("{base}/v1/messages/count_tokens"))
        .header("content-type", "application/json")
        .body(claude_request(json!([user("go")])).to_string())
        .send()
        .await
        .expect("count tokens");
    assert_eq!(count.status(), 200);
    let count: Value = count.json().await.expect("JSON");
    assert!(
        count["input_tokens"].as_u64().is_some_and(|n| n > 0),
        "{count}"
    );
    let head = http().head(&base).send().await.expect("HEAD /");
    assert_eq!(head.status(), 200);
    let models = http()
        .get(format!("{base}/v1/models"))
        .send()
        .await
        .expect("GET");
    assert_eq!(models.status(), 200);

    let first = anthropic_stream(&server, &claude_request(json!([user("go")]))).await;
    assert!(
        first
            .iter()
            .any(|event| event["content_block"]["name"] == "Read")
    );
    let probes: Vec<String> = server
        .probes()
        .into_iter()
        .map(|(probe, _)| probe)
        .collect();
    assert_eq!(probes, ["HEAD /", "GET /v1/models"]);
    let sides: Vec<Option<&str>> = server.requests().iter().map(|r| r.side).collect();
    assert_eq!(sides, [Some("token count"), None]);
    server.assert_no_violations();
}

#[tokio::test]
async fn outside_peer_mode_a_request_without_tools_is_a_step() {
    let server = ScriptedServer::start(Script::from_toml(READ_THEN_DONE).unwrap()).await;
    let body = json!({ "model": "m", "max_tokens": 64, "stream": true, "messages": [user("hi")] });

    let events = anthropic_stream(&server, &body).await;

    assert!(
        events
            .iter()
            .any(|event| event["content_block"]["name"] == "read")
    );
    assert_eq!(server.requests()[0].side, None);
}

/// A Codex-shaped Responses request: a shell tool, a freeform apply_patch, a built-in.
fn codex_request(input: Value) -> Value {
    json!({
        "model": "gpt-5.5",
        "stream": true,
        "store": false,
        "tools": [
            { "type": "function", "name": "exec_command", "parameters": { "type": "object" } },
            { "type": "custom", "name": "apply_patch", "format": { "type": "grammar" } },
            { "type": "web_search" },
        ],
        "input": input,
    })
}

fn codex_user(text: &str) -> Value {
    json!({ "type": "message", "role": "user", "content": [{ "type": "input_text", "text": text }] })
}

const EDIT_THEN_DONE: &str = r#"
[[turn]]
blocks = [{ tool = "edit", args = '{"path": "calc.py", "old_string": "a\n", "new_string": "b\n"}' }]
[[turn]]
blocks = [{ text = "Done." }]
"#;

#[tokio::test]
async fn codex_edits_through_a_custom_apply_patch_call_and_its_output_pairs_up() {
    let server = start_for_peers(EDIT_THEN_DONE).await;

    let mut response = post(
        &server,
        Wire::OpenAiResponses,
        &codex_request(json!([codex_user("go")])),
    )
    .await;
    let (body, error) = read_body(&mut response).await;
    assert!(error.is_none(), "{error:?}");
    let events = responses_events(&body);
    let done = events
        .iter()
        .find(|event| event["type"] == "response.output_item.done")
        .expect("an item");
    let patch = "*** Begin Patch\n*** Update File: calc.py\n@@\n-a\n+b\n*** End Patch\n";
    assert_eq!(
        done["item"],
        json!({
            "id": "ctc_t1_1", "type": "custom_tool_call", "status": "completed",
            "call_id": "call_t1_1", "name": "apply_patch", "input": patch,
        })
    );
    let deltas: String = events
        .iter()
        .filter(|event| event["type"] == "response.custom_tool_call_input.delta")
        .filter_map(|event| event["delta"].as_str())
        .collect();
    assert_eq!(deltas, patch);

    let call = done["item"].clone();
    let output =
        json!({ "type": "custom_tool_call_output", "call_id": "call_t1_1", "output": "Success." });
    let next = codex_request(json!([codex_user("go"), call, output]));
    let mut response = post(&server, Wire::OpenAiResponses, &next).await;
    let (body, _) = read_body(&mut response).await;
    assert!(body.contains("Done."), "{body}");
    server.assert_no_violations();

    // duet's own checks still refuse what only peers send.
    let problems = crate::common::scripted_server::validate::responses_body(&next);
    assert!(
        problems
            .iter()
            .any(|p| p.contains("type must be \"function\"")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("type `custom_tool_call`")),
        "{problems:?}"
    );
}

#[tokio::test]
async fn peer_mode_still_holds_custom_calls_to_their_outputs() {
    let server = start_for_peers(EDIT_THEN_DONE).await;
    let orphan = json!({
        "type": "custom_tool_call", "call_id": "call_x", "name": "apply_patch", "input": "patch",
    });

    let response = post(
        &server,
        Wire::OpenAiResponses,
        &codex_request(json!([codex_user("go"), orphan])),
    )
    .await;

    assert_eq!(response.status(), 400);
    assert_eq!(
        server.violations(),
        [
            "request 1 (openai-responses POST /v1/responses): input[1]: No tool output found for function call call_x."
        ]
    );
}

#[tokio::test]
async fn a_title_request_offering_other_tools_is_a_side_request() {
    let server = start_for_peers(EDIT_THEN_DONE).await;
    // Codex asks for a title offering only apply_patch, while a step is in flight.
    let mut title = codex_request(json!([codex_user("Generate a title")]));
    title["tools"] = json!([{ "type": "custom", "name": "apply_patch" }]);

    let mut response = post(&server, Wire::OpenAiResponses, &title).await;
    let (body, _) = read_body(&mut response).await;
    assert!(body.contains("Scripted task"), "{body}");

    let mut response = post(
        &server,
        Wire::OpenAiResponses,
        &codex_request(json!([codex_user("go")])),
    )
    .await;
    let (body, _) = read_body(&mut response).await;
    assert!(body.contains("custom_tool_call"), "{body}");
    let sides: Vec<Option<&str>> = server.requests().iter().map(|r| r.side).collect();
    assert_eq!(sides, [Some("not the task's tools"), None]);
    server.assert_no_violations();
}

#[tokio::test]
async fn claude_codes_system_messages_pass_but_its_calls_must_still_be_answered() {
    let server = start_for_peers(READ_THEN_DONE).await;
    let system =
        json!({ "role": "system", "content": [{ "type": "text", "text": "# Environment" }] });

    anthropic_stream(&server, &claude_request(json!([user("go"), system]))).await;
    let orphan = json!({ "role": "assistant", "content": [
        { "type": "tool_use", "id": "toolu_x", "name": "Read", "input": {} },
    ]});
    let response = post(
        &server,
        Wire::Anthropic,
        &claude_request(json!([user("go"), system, orphan, user("next")])),
    )
    .await;

    assert_eq!(response.status(), 400);
    assert_eq!(
        server.violations(),
        [
            "request 2 (anthropic POST /v1/messages): messages[2]: tool_use `toolu_x` has no tool_result in the immediately following user message"
        ]
    );
    // duet's own checks refuse the system message.
    let problems =
        crate::common::scripted_server::validate::anthropic_body(&claude_request(json!([
            user("go"),
            system
        ])));
    assert!(
        problems.iter().any(|p| p.contains("role `system`")),
        "{problems:?}"
    );
}
