//! The server over real HTTP: exact SSE framing per wire, recording, violations,
//! gates, pauses and injected faults.

use std::time::{Duration, Instant};

use duet::provider::Wire;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{minimal_request, post};
use crate::common::script::Script;
use crate::common::scripted_server::ScriptedServer;

/// How long a test waits for bytes that must arrive.
const ARRIVAL: Duration = Duration::from_secs(5);

/// Thinking, redacted thinking, chunked text and a fragmented tool call.
const EVERY_BLOCK: &str = r#"
[[turn]]
blocks = [
  { thinking = "Hmm.", signature = "sig-a" },
  { redacted_thinking = "opaque" },
  { text = "Hi there", chunk = 3 },
  { tool = "read", args = '{"path":"a"}', chunk = 6 },
]
usage = { input = 7, output = 3, cache_read = 2, cache_write = 1 }
"#;

async fn start(toml: &str) -> ScriptedServer {
    ScriptedServer::start(Script::from_toml(toml).expect("test script")).await
}

/// Reads the body to its end; the error, if the connection broke instead.
pub(super) async fn read_body(
    response: &mut reqwest::Response,
) -> (String, Option<reqwest::Error>) {
    let mut body = Vec::new();
    loop {
        match tokio::time::timeout(ARRIVAL, response.chunk()).await {
            Ok(Ok(Some(bytes))) => body.extend_from_slice(&bytes),
            Ok(Ok(None)) => return (String::from_utf8(body).expect("UTF-8 body"), None),
            Ok(Err(err)) => return (String::from_utf8(body).expect("UTF-8 body"), Some(err)),
            Err(_) => panic!(
                "the body stalled; so far: {}",
                String::from_utf8_lossy(&body)
            ),
        }
    }
}

/// Reads until `body` contains `marker`.
async fn read_until(response: &mut reqwest::Response, body: &mut String, marker: &str) {
    while !body.contains(marker) {
        let chunk = tokio::time::timeout(ARRIVAL, response.chunk())
            .await
            .unwrap_or_else(|_| panic!("`{marker}` did not arrive; so far: {body}"))
            .expect("read the body")
            .unwrap_or_else(|| panic!("the body ended before `{marker}`; got: {body}"));
        body.push_str(std::str::from_utf8(&chunk).expect("UTF-8 chunk"));
    }
}

/// Splits an Anthropic SSE body into its events' data, checking each frame is exactly
/// `event: {type}` + `data: {json}` and the name matches the data's `type`.
pub(super) fn anthropic_events(body: &str) -> Vec<Value> {
    assert!(
        body.ends_with("\n\n"),
        "the stream must end with a blank line: {body:?}"
    );
    body.split_terminator("\n\n")
        .map(|frame| {
            let (event, data) = frame.split_once('\n').expect("two lines per frame");
            let name = event.strip_prefix("event: ").expect("an event line");
            let data: Value =
                serde_json::from_str(data.strip_prefix("data: ").expect("a data line"))
                    .unwrap_or_else(|err| panic!("frame {frame:?}: {err}"));
            assert_eq!(data["type"], name, "frame {frame:?}");
            data
        })
        .collect()
}

/// Splits an OpenAI SSE body into its chunks, checking each frame is one `data:` line
/// and the stream ends with `data: [DONE]`; `created` is checked, then zeroed.
fn openai_chunks(body: &str) -> Vec<Value> {
    let frames: Vec<&str> = body.split_terminator("\n\n").collect();
    assert!(
        body.ends_with("\n\n"),
        "the stream must end with a blank line: {body:?}"
    );
    assert_eq!(frames.last(), Some(&"data: [DONE]"));
    frames[..frames.len() - 1]
        .iter()
        .map(|frame| {
            let data = frame.strip_prefix("data: ").expect("a data line");
            assert!(!data.contains('\n'), "one line per frame: {frame:?}");
            let mut chunk: Value = serde_json::from_str(data).expect("JSON chunk");
            assert!(chunk["created"].as_u64().is_some_and(|t| t > 0), "{chunk}");
            chunk["created"] = json!(0);
            chunk
        })
        .collect()
}

#[tokio::test]
async fn anthropic_stream_is_framed_as_documented() {
    let server = start(EVERY_BLOCK).await;
    let mut response = post(&server, Wire::Anthropic, &minimal_request(Wire::Anthropic)).await;

    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let (body, error) = read_body(&mut response).await;
    assert!(error.is_none(), "{error:?}");
    let delta = |index: usize, delta: Value| json!({ "type": "content_block_delta", "index": index, "delta": delta });
    let start = |index: usize, block: Value| json!({ "type": "content_block_start", "index": index, "content_block": block });
    let stop = |index: usize| json!({ "type": "content_block_stop", "index": index });
    let expected = vec![
        json!({ "type": "message_start", "message": {
            "id": "msg_scripted_t1", "type": "message", "role": "assistant", "content": [],
            "model": "claude-scripted", "stop_reason": null, "stop_sequence": null,
            "usage": {
                "input_tokens": 7, "cache_creation_input_tokens": 1,
                "cache_read_input_tokens": 2, "output_tokens": 1,
            },
        }}),
        json!({ "type": "ping" }),
        start(
            0,
            json!({ "type": "thinking", "thinking": "", "signature": "" }),
        ),
        delta(0, json!({ "type": "thinking_delta", "thinking": "Hmm." })),
        delta(
            0,
            json!({ "type": "signature_delta", "signature": "sig-a" }),
        ),
        stop(0),
        start(1, json!({ "type": "redacted_thinking", "data": "opaque" })),
        stop(1),
        start(2, json!({ "type": "text", "text": "" })),
        delta(2, json!({ "type": "text_delta", "text": "Hi " })),
        delta(2, json!({ "type": "text_delta", "text": "the" })),
        delta(2, json!({ "type": "text_delta", "text": "re" })),
        stop(2),
        start(
            3,
            json!({ "type": "tool_use", "id": "toolu_t1_1", "name": "read", "input": {} }),
        ),
        delta(
            3,
            json!({ "type": "input_json_delta", "partial_json": "{\"path" }),
        ),
        delta(
            3,
            json!({ "type": "input_json_delta", "partial_json": "\":\"a\"}" }),
        ),
        stop(3),
        json!({ "type": "message_delta",
            "delta": { "stop_reason": "tool_use", "stop_sequence": null },
            "usage": { "output_tokens": 3 } }),
        json!({ "type": "message_stop" }),
    ];
    assert_eq!(anthropic_events(&body), expected);
    server.assert_no_violations();
}

#[tokio::test]
async fn openai_stream_is_framed_as_documented() {
    let server = start(EVERY_BLOCK).await;
    let mut response = post(
        &server,
        Wire::OpenAiChat,
        &minimal_request(Wire::OpenAiChat),
    )
    .await;

    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let (body, error) = read_body(&mut response).await;
    assert!(error.is_none(), "{error:?}");
    let chunk = |delta: Value, finish_reason: Value| {
        json!({
            "id": "chatcmpl-scripted-t1", "object": "chat.completion.chunk", "created": 0,
            "model": "gpt-scripted",
            "choices": [{ "index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason }],
            "usage": null,
        })
    };
    let delta = |delta: Value| chunk(delta, Value::Null);
    let expected = vec![
        delta(json!({ "role": "assistant", "content": "" })),
        delta(json!({ "reasoning_content": "Hmm." })),
        delta(json!({ "content": "Hi " })),
        delta(json!({ "content": "the" })),
        delta(json!({ "content": "re" })),
        delta(
            json!({ "tool_calls": [{ "index": 0, "id": "call_t1_1", "type": "function",
            "function": { "name": "read", "arguments": "" } }] }),
        ),
        delta(json!({ "tool_calls": [{ "index": 0, "function": { "arguments": "{\"path" } }] })),
        delta(json!({ "tool_calls": [{ "index": 0, "function": { "arguments": "\":\"a\"}" } }] })),
        chunk(json!({}), json!("tool_calls")),
        json!({
            "id": "chatcmpl-scripted-t1", "object": "chat.completion.chunk", "created": 0,
            "model": "gpt-scripted", "choices": [],
            "usage": { "prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13,
                "prompt_tokens_details": { "cached_tokens": 2 } },
        }),
    ];
    assert_eq!(openai_chunks(&body), expected);
    server.assert_no_violations();
}

#[tokio::test]
async fn openai_sends_usage_only_when_asked() {
    let server = start("[[turn]]\nblocks = [{ text = 'ok' }]\nstop = 'max_tokens'").await;
    let mut request = minimal_request(Wire::OpenAiChat);
    request
        .as_object_mut()
        .expect("object")
        .remove("stream_options");
    let mut response = post(&server, Wire::OpenAiChat, &request).await;

    let (body, _) = read_body(&mut response).await;
    let chunks = openai_chunks(&body);
    assert!(
        chunks.iter().all(|chunk| chunk.get("usage").is_none()),
        "{chunks:#?}"
    );
    let last = chunks.last().expect("chunks");
    assert_eq!(last["choices"][0]["finish_reason"], "length");
}

#[tokio::test]
async fn turns_are_served_in_order_across_wires_and_requests_are_recorded() {
    let server =
        start("[[turn]]\nblocks = [{ text = 'first' }]\n[[turn]]\nblocks = [{ text = 'second' }]")
            .await;

    let (first, _) =
        read_body(&mut post(&server, Wire::Anthropic, &minimal_request(Wire::Anthropic)).await)
            .await;
    let (second, _) = read_body(
        &mut post(
            &server,
            Wire::OpenAiChat,
            &minimal_request(Wire::OpenAiChat),
        )
        .await,
    )
    .await;

    assert!(first.contains(r#""text":"first""#), "{first}");
    assert!(second.contains(r#""content":"second""#), "{second}");
    let requests = server.requests();
    let summary: Vec<_> = requests
        .iter()
        .map(|request| {
            (
                request.wire,
                request.path.as_str(),
                request.header("anthropic-version"),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (Wire::Anthropic, "/v1/messages", Some("2023-06-01")),
            (Wire::OpenAiChat, "/v1/chat/completions", None),
        ]
    );
    assert_eq!(requests[0].body, minimal_request(Wire::Anthropic));
    assert_eq!(requests[1].header("content-type"), Some("application/json"));
    server.assert_no_violations();
}

#[tokio::test]
async fn a_rejected_request_is_a_violation_answered_in_the_providers_format() {
    let server = start("[[turn]]\nblocks = [{ text = 'only' }]").await;
    let mut not_streaming = minimal_request(Wire::Anthropic);
    not_streaming["stream"] = json!(false);
    let mut orphan_result = minimal_request(Wire::OpenAiChat);
    orphan_result["messages"]
        .as_array_mut()
        .expect("messages")
        .push(json!({ "role": "tool", "tool_call_id": "call_1", "content": "x" }));

    let anthropic = post(&server, Wire::Anthropic, &not_streaming).await;
    let anthropic = (anthropic.status(), anthropic.text().await.expect("body"));
    let openai = post(&server, Wire::OpenAiChat, &orphan_result).await;
    let openai = (openai.status(), openai.text().await.expect("body"));

    let stream_problem =
        "stream: must be true (duet always streams; this server only answers streaming requests)";
    let tool_problem = "messages[1]: a `tool` message must follow an assistant message with tool_calls (or another tool message answering it)";
    assert_eq!(anthropic.0, 400);
    assert_eq!(
        serde_json::from_str::<Value>(&anthropic.1).expect("JSON error"),
        json!({ "type": "error", "error": { "type": "invalid_request_error", "message": stream_problem } })
    );
    assert_eq!(openai.0, 400);
    assert_eq!(
        serde_json::from_str::<Value>(&openai.1).expect("JSON error"),
        json!({ "error": { "message": tool_problem, "type": "invalid_request_error", "param": null, "code": null } })
    );
    assert_eq!(
        server.violations(),
        [
            format!("request 1 (anthropic POST /v1/messages): {stream_problem}"),
            format!("request 2 (openai POST /v1/chat/completions): {tool_problem}"),
        ]
    );
    // Rejected requests consume no turn.
    let (body, _) =
        read_body(&mut post(&server, Wire::Anthropic, &minimal_request(Wire::Anthropic)).await)
            .await;
    assert!(body.contains(r#""text":"only""#), "{body}");
}

#[tokio::test]
async fn headers_the_api_requires_are_checked() {
    let server = start("[[turn]]\nblocks = []").await;
    let url = format!("{}/v1/messages", server.anthropic_base_url());

    let response = super::http()
        .post(url)
        .body(minimal_request(Wire::Anthropic).to_string())
        .send()
        .await
        .expect("send");

    assert_eq!(response.status(), 400);
    assert_eq!(
        server.violations(),
        [
            "request 1 (anthropic POST /v1/messages): content-type: must be application/json, got ``",
            "request 1 (anthropic POST /v1/messages): anthropic-version: header is required",
        ]
    );
}

#[tokio::test]
async fn a_request_beyond_the_script_is_a_violation() {
    let server = start("[[turn]]\nblocks = [{ text = 'one' }]").await;
    for _ in 0..2 {
        read_body(
            &mut post(
                &server,
                Wire::OpenAiChat,
                &minimal_request(Wire::OpenAiChat),
            )
            .await,
        )
        .await;
    }
    let response = post(&server, Wire::Anthropic, &minimal_request(Wire::Anthropic)).await;

    assert_eq!(response.status(), 400);
    let message = "scripted server: the script is exhausted (it has 1 turn(s); this request would need turn 3)";
    let body: Value = serde_json::from_str(&response.text().await.expect("body")).expect("JSON");
    assert_eq!(body["error"]["message"], message);
    assert_eq!(
        server.violations(),
        [
            "request 2 (openai POST /v1/chat/completions): scripted server: the script is exhausted (it has 1 turn(s); this request would need turn 2)".to_owned(),
            format!("request 3 (anthropic POST /v1/messages): {message}"),
        ]
    );
}

#[tokio::test]
async fn requests_to_other_paths_are_violations() {
    let server = start("[[turn]]\nblocks = []").await;
    // A classic URL bug: the OpenAI base already ends in /v1.
    let url = format!("{}/v1/chat/completions", server.openai_base_url());

    let response = super::http()
        .post(url)
        .body("{}")
        .send()
        .await
        .expect("send");

    assert_eq!(response.status(), 404);
    assert_eq!(
        server.violations(),
        [
            "unexpected request POST /v1/v1/chat/completions: the model endpoints are POST /v1/messages, POST /v1/chat/completions and POST /v1/responses"
        ]
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
#[should_panic(
    expected = "the scripted server saw 1 violation(s):\n  unexpected request GET /v1/messages"
)]
async fn assert_no_violations_fails_when_there_are_some() {
    let server = start("[[turn]]\nblocks = []").await;
    let url = format!("{}/v1/messages", server.anthropic_base_url());
    super::http().get(url).send().await.expect("send");

    server.assert_no_violations();
}

#[tokio::test]
async fn a_status_turn_answers_with_the_providers_error() {
    let server = start(
        "[[turn]]\nstatus = 529\nretry_after = 2\n[[turn]]\nstatus = 429\nmessage = 'slow down'",
    )
    .await;

    let overloaded = post(&server, Wire::Anthropic, &minimal_request(Wire::Anthropic)).await;
    let limited = post(
        &server,
        Wire::OpenAiChat,
        &minimal_request(Wire::OpenAiChat),
    )
    .await;

    assert_eq!(overloaded.status(), 529);
    assert_eq!(overloaded.headers()["retry-after"], "2");
    assert_eq!(
        serde_json::from_str::<Value>(&overloaded.text().await.expect("body")).expect("JSON"),
        json!({ "type": "error", "error": { "type": "overloaded_error", "message": "Overloaded" } })
    );
    assert_eq!(limited.status(), 429);
    assert!(limited.headers().get("retry-after").is_none());
    assert_eq!(
        serde_json::from_str::<Value>(&limited.text().await.expect("body")).expect("JSON"),
        json!({ "error": { "message": "slow down", "type": "requests", "param": null, "code": "rate_limit_exceeded" } })
    );
    server.assert_no_violations();
}

#[tokio::test]
async fn a_cut_turn_drops_the_connection_after_its_blocks() {
    let turn = "[[turn]]\nblocks = [{ text = 'kept' }, { text = 'lost' }]\ncut_after_blocks = 1\n";
    let server = start(&turn.repeat(Wire::ALL.len())).await;

    for wire in Wire::ALL {
        let mut response = post(&server, wire, &minimal_request(wire)).await;
        let (body, error) = read_body(&mut response).await;

        assert!(
            error.is_some(),
            "{wire}: the body must fail, not end cleanly: {body}"
        );
        assert!(
            body.contains("kept") && !body.contains("lost"),
            "{wire}: {body}"
        );
        assert!(
            !body.contains("message_stop")
                && !body.contains("[DONE]")
                && !body.contains("response.completed"),
            "{wire}: {body}"
        );
    }
    server.assert_no_violations();
}

#[tokio::test]
async fn a_cut_inside_a_tool_call_leaves_its_arguments_unfinished() {
    let turn = "[[turn]]\nblocks = [{ tool = 'write', args = '{\"path\": \"a.txt\"}', chunk = 5, \
                cut_after_chunks = 2 }]\n";
    let server = start(&turn.repeat(Wire::ALL.len())).await;

    for wire in Wire::ALL {
        let mut response = post(&server, wire, &minimal_request(wire)).await;
        let (body, error) = read_body(&mut response).await;

        assert!(error.is_some(), "{wire}: the body must fail: {body}");
        // Fragments are JSON-escaped in the body: `{"pat` and `h": "`, not `a.txt`.
        assert!(
            body.contains("write") && body.contains("pat"),
            "{wire}: {body}"
        );
        assert!(!body.contains("a.txt"), "{wire}: {body}");
        assert!(!body.contains("content_block_stop"), "{wire}: {body}");
        assert!(
            !body.contains("function_call_arguments.done"),
            "{wire}: {body}"
        );
    }
    server.assert_no_violations();
}

#[tokio::test]
async fn an_error_block_sends_the_providers_mid_stream_error() {
    let turn = "[[turn]]\nblocks = [{ text = 'partial' }, { error = 'overloaded_error', message = 'Overloaded' }]\n";
    let server = start(&turn.repeat(2)).await;

    let mut anthropic = post(&server, Wire::Anthropic, &minimal_request(Wire::Anthropic)).await;
    let (body, error) = read_body(&mut anthropic).await;
    assert!(error.is_none(), "{error:?}");
    assert!(
        body.ends_with(
            "event: error\ndata: {\"error\":{\"message\":\"Overloaded\",\"type\":\"overloaded_error\"},\"type\":\"error\"}\n\n"
        ),
        "{body}"
    );

    let mut openai = post(
        &server,
        Wire::OpenAiChat,
        &minimal_request(Wire::OpenAiChat),
    )
    .await;
    let (body, error) = read_body(&mut openai).await;
    assert!(error.is_none(), "{error:?}");
    assert!(
        body.ends_with(
            "data: {\"error\":{\"code\":null,\"message\":\"Overloaded\",\"param\":null,\"type\":\"overloaded_error\"}}\n\n"
        ),
        "{body}"
    );
    assert!(!body.contains("[DONE]"), "{body}");
    server.assert_no_violations();
}

#[tokio::test]
async fn a_gate_holds_the_stream_until_released() {
    let server =
        start("[[turn]]\nblocks = [{ text = 'before' }, { gate = 'g' }, { text = 'after' }]").await;
    let mut response = post(&server, Wire::Anthropic, &minimal_request(Wire::Anthropic)).await;
    let mut body = String::new();

    read_until(&mut response, &mut body, "event: content_block_stop\n").await;
    server.wait_for_gate("g").await;
    let held = tokio::time::timeout(Duration::from_millis(300), response.chunk()).await;
    assert!(held.is_err(), "bytes passed a closed gate: {held:?}");

    server.release("g");
    let (rest, error) = read_body(&mut response).await;
    assert!(error.is_none(), "{error:?}");
    assert!(
        rest.contains(r#""text":"after""#)
            && rest.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"),
        "{rest}"
    );
    assert!(!body.contains("after"), "{body}");
    server.assert_no_violations();
}

#[tokio::test]
async fn a_gate_released_early_does_not_block() {
    let server = start("[[turn]]\nblocks = [{ gate = 'open' }, { text = 'through' }]").await;
    server.release("open");

    let (body, _) = read_body(
        &mut post(
            &server,
            Wire::OpenAiChat,
            &minimal_request(Wire::OpenAiChat),
        )
        .await,
    )
    .await;

    assert!(body.contains("through"), "{body}");
    server.wait_for_gate("open").await;
}

#[tokio::test]
async fn a_pause_delays_the_stream() {
    let server =
        start("[[turn]]\nblocks = [{ text = 'a' }, { pause_ms = 300 }, { text = 'b' }]").await;
    let started = Instant::now();

    let (body, _) =
        read_body(&mut post(&server, Wire::Anthropic, &minimal_request(Wire::Anthropic)).await)
            .await;

    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "{:?}",
        started.elapsed()
    );
    assert!(body.contains(r#""text":"b""#), "{body}");
}

#[tokio::test]
async fn the_server_keeps_serving_while_the_test_thread_blocks() {
    use std::io::{Read, Write};

    let server = start("[[turn]]\nblocks = [{ text = 'served' }]").await;
    let address = server.anthropic_base_url().replace("http://", "");
    let body = minimal_request(Wire::OpenAiChat).to_string();

    // Blocking I/O on this (current-thread) runtime: only a server with its own
    // runtime can answer, as it must when a test waits on a child process.
    let mut stream = std::net::TcpStream::connect(&address).expect("connect");
    write!(
        stream,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    stream
        .set_read_timeout(Some(ARRIVAL))
        .expect("read timeout");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");

    assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
    assert!(
        response.contains(r#""content":"served""#) && response.contains("data: [DONE]"),
        "{response}"
    );
    server.assert_no_violations();
}

#[tokio::test(start_paused = true)]
async fn gates_and_pauses_keep_real_time_when_the_test_clock_is_paused() {
    let server =
        start("[[turn]]\nblocks = [{ pause_ms = 200 }, { gate = 'g' }, { text = 'x' }]").await;
    let started = Instant::now();
    let request = tokio::spawn({
        let url = format!("{}/v1/messages", server.anthropic_base_url());
        async move {
            super::http()
                .post(url)
                .header("anthropic-version", "2023-06-01")
                .header("content-type", "application/json")
                .body(minimal_request(Wire::Anthropic).to_string())
                .send()
                .await
        }
    });

    // With the test's clock paused, a deadline on that clock would expire at once.
    server.wait_for_gate("g").await;

    assert!(
        started.elapsed() >= Duration::from_millis(200),
        "{:?}",
        started.elapsed()
    );
    server.release("g");
    let response = request.await.expect("join").expect("send");
    // No deadline here: on a paused clock it would fire while bytes are in flight.
    let body = response.text().await.expect("body");
    assert!(body.contains(r#""text":"x""#), "{body}");
}

#[tokio::test]
async fn dropping_the_server_ends_a_stream_held_at_a_gate() {
    let server = start("[[turn]]\nblocks = [{ text = 'a' }, { gate = 'never' }]").await;
    let mut response = post(&server, Wire::Anthropic, &minimal_request(Wire::Anthropic)).await;
    server.wait_for_gate("never").await;
    let started = Instant::now();

    drop(server);

    assert!(
        started.elapsed() < ARRIVAL,
        "shutdown took {:?}",
        started.elapsed()
    );
    let (body, error) = read_body(&mut response).await;
    assert!(
        error.is_some(),
        "the held stream must break, not finish: {body}"
    );
    assert!(!body.contains("message_stop"), "{body}");
}

/// The data of each Responses SSE frame, checking each is `event: {type}` +
/// `data: {json}` with matching names and sequence numbers 0, 1, 2, ...
pub(super) fn responses_events(body: &str) -> Vec<Value> {
    let events = anthropic_events(body);
    for (expected, event) in events.iter().enumerate() {
        assert_eq!(event["sequence_number"], json!(expected), "{event}");
    }
    events
}

fn types(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|event| event["type"].as_str().expect("a type"))
        .collect()
}

#[tokio::test]
async fn responses_stream_is_framed_as_documented() {
    let server = start(EVERY_BLOCK).await;
    let mut response = post(
        &server,
        Wire::OpenAiResponses,
        &minimal_request(Wire::OpenAiResponses),
    )
    .await;

    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let (body, error) = read_body(&mut response).await;
    assert!(error.is_none(), "{error:?}");
    let events = responses_events(&body);
    assert_eq!(
        types(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.reasoning_summary_part.added",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.done",
            "response.reasoning_summary_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.output_item.done",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let reasoning = json!({
        "id": "rs_t1_1", "type": "reasoning",
        "summary": [{ "type": "summary_text", "text": "Hmm." }],
        "encrypted_content": "gAAAAB-scripted-t1-sig-a",
    });
    let redacted = json!({
        "id": "rs_t1_2", "type": "reasoning", "summary": [], "encrypted_content": "opaque",
    });
    let call = json!({
        "id": "fc_t1_1", "type": "function_call", "status": "completed",
        "call_id": "call_t1_1", "name": "read", "arguments": "{\"path\":\"a\"}",
    });
    assert_eq!(events[7]["item"], reasoning);
    assert_eq!(events[9]["item"], redacted);
    assert_eq!(events[22]["item"], call);
    let deltas: Vec<&Value> = events
        .iter()
        .filter(|event| event["type"] == "response.function_call_arguments.delta")
        .map(|event| &event["delta"])
        .collect();
    assert_eq!(deltas, [&json!("{\"path"), &json!("\":\"a\"}")]);
    let completed = &events[23]["response"];
    assert_eq!(completed["status"], "completed");
    assert_eq!(
        completed["usage"],
        json!({
            "input_tokens": 10,
            "input_tokens_details": { "cached_tokens": 2, "cache_write_tokens": 1 },
            "output_tokens": 3, "output_tokens_details": { "reasoning_tokens": 0 },
            "total_tokens": 13,
        })
    );
    assert_eq!(completed["output"].as_array().map(Vec::len), Some(4));
    server.assert_no_violations();
}

#[tokio::test]
async fn responses_faults_end_in_failed_or_incomplete() {
    let server = start(
        "[[turn]]\nblocks = [{ text = 'partial' }, { error = 'server_error', message = 'Boom' }]\n\
         [[turn]]\nblocks = [{ text = 'long' }]\nstop = 'max_tokens'\n",
    )
    .await;
    let request = minimal_request(Wire::OpenAiResponses);

    let (body, error) = read_body(&mut post(&server, Wire::OpenAiResponses, &request).await).await;
    assert!(error.is_none(), "{error:?}");
    let failed = responses_events(&body).pop().expect("events");
    assert_eq!(failed["type"], "response.failed");
    assert_eq!(failed["response"]["status"], "failed");
    assert_eq!(
        failed["response"]["error"],
        json!({ "code": "server_error", "message": "Boom" })
    );

    let (body, _) = read_body(&mut post(&server, Wire::OpenAiResponses, &request).await).await;
    let incomplete = responses_events(&body).pop().expect("events");
    assert_eq!(incomplete["type"], "response.incomplete");
    assert_eq!(
        incomplete["response"]["incomplete_details"],
        json!({ "reason": "max_output_tokens" })
    );
    server.assert_no_violations();
}

/// A follow-up to a Responses turn that made a call after reasoning, carrying
/// `reasoning` (or nothing) before the call.
fn follow_up(reasoning: Option<Value>) -> Value {
    let mut request = minimal_request(Wire::OpenAiResponses);
    let input = request["input"].as_array_mut().expect("input");
    input.extend(reasoning);
    input.push(
        json!({ "type": "function_call", "call_id": "call_t1_1", "name": "read",
                       "arguments": "{}" }),
    );
    input.push(json!({ "type": "function_call_output", "call_id": "call_t1_1", "output": "a" }));
    request
}

#[tokio::test]
async fn reasoning_items_must_come_back_verbatim_before_their_calls() {
    let turn = "[[turn]]\nblocks = [{ thinking = 'Plan.', signature = 's' }, { tool = 'read' }]\n";
    let server = start(&turn.repeat(4)).await;
    let first = post(
        &server,
        Wire::OpenAiResponses,
        &minimal_request(Wire::OpenAiResponses),
    )
    .await;
    assert_eq!(first.status(), 200);
    let sent = json!({
        "id": "rs_t1_1", "type": "reasoning",
        "summary": [{ "type": "summary_text", "text": "Plan." }],
        "encrypted_content": "gAAAAB-scripted-t1-s",
    });

    let echoed = post(
        &server,
        Wire::OpenAiResponses,
        &follow_up(Some(sent.clone())),
    )
    .await;
    assert_eq!(echoed.status(), 200);
    server.assert_no_violations();

    let dropped = post(&server, Wire::OpenAiResponses, &follow_up(None)).await;
    assert_eq!(dropped.status(), 400);
    let mut altered = sent;
    altered["encrypted_content"] = json!("tampered");
    let tampered = post(&server, Wire::OpenAiResponses, &follow_up(Some(altered))).await;
    assert_eq!(tampered.status(), 400);
    let violations = server.violations();
    // The tampered item does not count as the call's reasoning either.
    assert_eq!(violations.len(), 3, "{violations:#?}");
    assert!(
        violations[0].contains(
            "function call `call_t1_1` must be preceded by its step's reasoning items [\"rs_t1_1\"] in order, found []"
        ),
        "{violations:#?}"
    );
    assert!(
        violations[1].contains("reasoning item `rs_t1_1` must come back verbatim"),
        "{violations:#?}"
    );
}

#[tokio::test]
async fn a_paced_turn_spaces_its_events_and_the_timings_show_it() {
    // Anthropic sends at least 5 events here (message start, block start, 2 deltas,
    // block stop, ...): 4 or more gaps of 40 ms.
    let server = start("[[turn]]\nblocks = [{ text = 'abcd', chunk = 2 }]\npace_ms = 40").await;
    let before = std::time::SystemTime::now();

    let (body, error) =
        read_body(&mut post(&server, Wire::Anthropic, &minimal_request(Wire::Anthropic)).await)
            .await;

    assert!(error.is_none() && body.contains("message_stop"), "{body}");
    let [timing] = server.timings()[..] else {
        panic!("one request, one timing: {:?}", server.timings());
    };
    assert_eq!(timing.request, 1);
    let first = timing.first_byte_sent.expect("first byte noted");
    let last = timing.last_byte_sent.expect("end noted");
    assert!(before <= timing.received && timing.received <= first);
    let streamed = last
        .duration_since(first)
        .expect("the end follows the start");
    assert!(streamed >= Duration::from_millis(4 * 40), "{streamed:?}");
}

#[tokio::test]
async fn an_error_answer_is_timed_as_received_with_no_stream() {
    let server = start("[[turn]]\nstatus = 529").await;

    let response = post(&server, Wire::Anthropic, &minimal_request(Wire::Anthropic)).await;

    assert_eq!(response.status(), 529);
    let [timing] = server.timings()[..] else {
        panic!("one request, one timing: {:?}", server.timings());
    };
    assert_eq!(
        (timing.first_byte_sent, timing.last_byte_sent),
        (None, None)
    );
}
