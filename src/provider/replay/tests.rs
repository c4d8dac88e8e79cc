use std::time::{Duration, Instant};

use futures::StreamExt;
use pretty_assertions::assert_eq;

use super::*;
use crate::provider::test_server::request;
use crate::provider::{Block, ToolResult};

fn client(toml: &str) -> ReplayClient {
    ReplayClient::new(Script::from_toml(toml).unwrap(), "replay").unwrap()
}

/// Everything one call streams: its events, then the error that ended it, if any.
async fn call(client: &ReplayClient, messages: Vec<Message>) -> (Vec<StreamEvent>, Option<String>) {
    let mut stream = client.stream(&request(messages)).await.unwrap();
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(error) => return (events, Some(error.to_string())),
        }
    }
    (events, None)
}

fn text(text: &str) -> StreamEvent {
    StreamEvent::TextDelta { text: text.into() }
}

fn finished(stop_reason: StopReason) -> StreamEvent {
    StreamEvent::Finished {
        stop_reason,
        usage: Usage::default(),
    }
}

fn assistant_calling(ids: &[&str]) -> Message {
    Message {
        role: Role::Assistant,
        content: ids
            .iter()
            .map(|id| {
                Block::ToolCall(ToolCall {
                    id: (*id).into(),
                    name: "read".into(),
                    arguments: "{}".into(),
                })
            })
            .collect(),
    }
}

fn results_for(ids: &[&str]) -> Message {
    Message {
        role: Role::User,
        content: ids
            .iter()
            .map(|id| {
                Block::ToolResult(ToolResult {
                    call_id: (*id).into(),
                    content: "ok".into(),
                    is_error: false,
                })
            })
            .collect(),
    }
}

const TEXT_THEN_TOOLS: &str = r#"
[[turn]]
blocks = [
  { text = "Reading.", chunk = 4 },
  { tool = "read", args = '{"path": "a"}', chunk = 7 },
  { tool = "read", id = "mine", args = '{"path": "b"}' },
]
usage = { input = 10, output = 2 }

[[turn]]
blocks = [{ thinking = "Hm.", signature = "s" }, { text = "Done." }]
"#;

#[tokio::test]
async fn turns_become_stream_events_in_order() {
    let client = client(TEXT_THEN_TOOLS);
    let (events, error) = call(&client, vec![Message::user_text("go")]).await;
    assert_eq!(error, None);
    let call_a = ToolCall {
        id: "toolu_t1_1".into(),
        name: "read".into(),
        arguments: r#"{"path": "a"}"#.into(),
    };
    let call_b = ToolCall {
        id: "mine".into(),
        name: "read".into(),
        arguments: r#"{"path": "b"}"#.into(),
    };
    let fragment = |fragment: &str| StreamEvent::ToolCallArgsDelta {
        id: "toolu_t1_1".into(),
        fragment: fragment.into(),
    };
    assert_eq!(
        events,
        [
            text("Read"),
            text("ing."),
            StreamEvent::ToolCallStart {
                id: "toolu_t1_1".into(),
                name: "read".into()
            },
            fragment(r#"{"path""#),
            fragment(r#": "a"}"#),
            StreamEvent::ToolCallEnd { call: call_a },
            StreamEvent::ToolCallStart {
                id: "mine".into(),
                name: "read".into()
            },
            StreamEvent::ToolCallArgsDelta {
                id: "mine".into(),
                fragment: r#"{"path": "b"}"#.into(),
            },
            StreamEvent::ToolCallEnd { call: call_b },
            StreamEvent::Finished {
                stop_reason: StopReason::ToolUse,
                usage: Usage {
                    input_tokens: 10,
                    output_tokens: 2,
                    ..Usage::default()
                },
            },
        ]
    );

    let second = vec![
        Message::user_text("go"),
        assistant_calling(&["toolu_t1_1", "mine"]),
        results_for(&["toolu_t1_1", "mine"]),
    ];
    let (events, error) = call(&client, second).await;
    assert_eq!(error, None);
    assert_eq!(
        events,
        [
            StreamEvent::ThinkingDelta { text: "Hm.".into() },
            StreamEvent::ThinkingSignature {
                signature: "s".into()
            },
            text("Done."),
            finished(StopReason::EndTurn),
        ]
    );
    assert_eq!(client.requests().len(), 2);
}

#[tokio::test]
async fn a_request_past_the_last_turn_is_an_error_not_a_silent_answer() {
    let client = client(
        r#"[[turn]]
blocks = [{ text = "Only one." }]"#,
    );
    call(&client, vec![Message::user_text("one")]).await;
    let error = client
        .stream(&request(vec![Message::user_text("two")]))
        .await
        .err()
        .map(|error| error.to_string());
    let error = error.unwrap_or_default();
    assert!(
        error.contains("1 turn(s)") && error.contains("call 2"),
        "{error}"
    );
}

#[tokio::test]
async fn a_call_without_its_result_is_refused_like_a_real_api_would() {
    let client = client(TEXT_THEN_TOOLS);
    let unanswered = vec![
        Message::user_text("go"),
        assistant_calling(&["a", "b"]),
        results_for(&["a"]),
    ];
    let error = client.stream(&request(unanswered)).await.err();
    assert!(
        matches!(&error, Some(ProviderError::Replay(reason)) if reason.contains("`b` has no result")),
        "{error:?}"
    );
    let stray = vec![Message::user_text("go"), results_for(&["ghost"])];
    let error = client.stream(&request(stray)).await.err();
    assert!(
        matches!(&error, Some(ProviderError::Replay(reason)) if reason.contains("`ghost`")),
        "{error:?}"
    );
}

#[tokio::test]
async fn faults_end_the_stream_with_the_matching_error() {
    let client = client(
        r#"
[[turn]]
status = 529
retry_after = 2

[[turn]]
blocks = [{ text = "a" }, { text = "b" }]
cut_after_blocks = 1

[[turn]]
blocks = [{ tool = "write", args = "abcdef", chunk = 2, cut_after_chunks = 1 }]

[[turn]]
blocks = [{ text = "x" }, { error = "overloaded_error", message = "busy" }]
"#,
    );
    let status = client
        .stream(&request(vec![Message::user_text("1")]))
        .await
        .err();
    assert!(
        matches!(
            status,
            Some(ProviderError::Http { status: 529, retry_after: Some(wait), .. }) if wait == Duration::from_secs(2)
        ),
        "{status:?}"
    );
    let (events, error) = call(&client, vec![Message::user_text("2")]).await;
    assert_eq!(events, [text("a")]);
    assert!(error.is_some_and(|e| e.contains("after 1 block")));
    let (events, error) = call(&client, vec![Message::user_text("3")]).await;
    assert_eq!(events.len(), 2, "the start and one fragment: {events:?}");
    assert!(error.is_some_and(|e| e.contains("after 1 fragment")));
    let (events, error) = call(&client, vec![Message::user_text("4")]).await;
    assert_eq!(events, [text("x")]);
    assert_eq!(
        error.as_deref(),
        Some("the provider reported an error mid-stream: overloaded_error: busy")
    );
}

#[test]
fn a_script_with_a_gate_is_refused_with_the_turn_that_has_it() {
    let script = Script::from_toml(
        r#"
[[turn]]
blocks = [{ text = "a" }]

[[turn]]
blocks = [{ gate = "wait" }, { text = "b" }]
"#,
    )
    .unwrap();
    let error = ReplayClient::new(script, "replay")
        .err()
        .map(|e| e.to_string());
    let error = error.unwrap_or_default();
    assert!(
        error.contains("turn 2") && error.contains("`wait`"),
        "{error}"
    );
}

#[tokio::test(start_paused = true)]
async fn pacing_waits_between_pieces_and_pauses_always_wait() {
    let script = r#"
[[turn]]
blocks = [{ text = "abcd", chunk = 1 }, { pause_ms = 500 }, { text = "e" }]
"#;
    let started = tokio::time::Instant::now();
    let unpaced = client(script);
    call(&unpaced, vec![Message::user_text("go")]).await;
    assert_eq!(started.elapsed(), Duration::from_millis(500));

    let started = tokio::time::Instant::now();
    let paced = client(script).with_delay(Duration::from_millis(10));
    let (events, _) = call(&paced, vec![Message::user_text("go")]).await;
    // Four pieces after the first, and the pause.
    assert_eq!(started.elapsed(), Duration::from_millis(540));
    assert_eq!(events.len(), 6);
}

#[tokio::test]
async fn without_pacing_a_long_script_plays_at_once() {
    let client = client(
        r#"
[[turn]]
blocks = [{ text = "a long answer streamed one character at a time", chunk = 1 }]
"#,
    );
    let started = Instant::now();
    let (events, _) = call(&client, vec![Message::user_text("go")]).await;
    assert_eq!(events.len(), 47);
    assert!(started.elapsed() < Duration::from_millis(200));
}
