//! Model API failures against the scripted server: rate limits, overload, stalled and
//! dropped streams, cut-off answers, refused keys, and the breaker. Retries wait
//! milliseconds here (see [`fast_retries`]); every test ends by checking that the
//! server saw only valid requests, retries included.

use std::time::{Duration, Instant};

use duet::agent::{AgentSetup, Command, Event, TurnOutcome};
use duet::policy::ApprovalMode;
use duet::provider::{Block, RetryPolicy, Role, StopReason, Wire};
use duet::session::{self, FORMAT_VERSION, Header, SessionWriter};
use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::common::harness::{
    TEST_KEY_ENV, TestAgent, TestRepo, all_text, conversation, fast_retries, scripted_client,
    tool_results,
};
use crate::common::script::Script;
use crate::common::scripted_server::{RecordedRequest, ScriptedServer};

for_each_wire!(
    overloaded_twice_then_an_answer,
    an_overloaded_error_mid_stream_is_retried,
    a_stalled_stream_trips_the_watchdog_and_is_retried,
    a_drop_mid_tool_json_runs_nothing_and_retries_the_same_request,
    a_drop_after_a_complete_call_keeps_the_call_and_its_result,
    an_answer_cut_at_max_tokens_is_asked_again_then_continued,
    a_tool_call_cut_at_max_tokens_never_runs,
    a_broken_last_call_without_the_limit_is_answered_as_an_error,
    a_refused_key_fails_once_naming_the_variable,
    the_breaker_stops_after_the_last_retry,
);

const ORIGINAL: &str = "alpha\n";

/// Servers that never send `data: [DONE]` (ik_llama.cpp, llama.cpp before 2024-09, TGI
/// before 2024-07, mistral.rs before 2025-03) end the body right after the stop reason:
/// the answer is whole and taken once, with no retry.
mod an_answer_without_the_terminal_event {
    #[tokio::test]
    async fn anthropic() {
        super::an_answer_without_the_terminal_event_is_taken_once(duet::provider::Wire::Anthropic)
            .await;
    }

    #[tokio::test]
    async fn openai() {
        super::an_answer_without_the_terminal_event_is_taken_once(duet::provider::Wire::OpenAiChat)
            .await;
    }
}

async fn an_answer_without_the_terminal_event_is_taken_once(wire: Wire) {
    let script = "[[turn]]\nterminal_event = false\n\
                  blocks = [{ tool = 'read', args = '{\"path\": \"a.txt\"}', chunk = 4 }]\n\n\
                  [[turn]]\nterminal_event = false\nblocks = [{ text = 'Read it.', chunk = 3 }]\n";
    let (server, _repo, mut agent) = start(script, wire).await;
    agent.send("read a.txt");
    assert_eq!(agent.turn_end().await, finished());
    let (retries, reasons) = retries(&agent);
    assert!(retries.is_empty(), "retried: {reasons:?}");
    assert_eq!(agent.streamed_text(), "Read it.");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let results = tool_results(&requests[1]);
    assert_eq!(results.len(), 1);
    assert!(results[0].content.contains("alpha"), "{:?}", results[0]);
    server.assert_no_violations();
}

/// On the Responses wire the terminal event carries the response's status: a body
/// without it was cut, and is asked again.
#[tokio::test]
async fn a_responses_body_without_its_terminal_event_is_asked_again() {
    let script = "[[turn]]\nterminal_event = false\nblocks = [{ text = 'Half' }]\n\n\
                  [[turn]]\nblocks = [{ text = 'Whole.' }]\n";
    let (server, _repo, mut agent) = start(script, Wire::OpenAiResponses).await;
    agent.send("hi");
    assert_eq!(agent.turn_end().await, finished());
    let (retries, _) = retries(&agent);
    assert_eq!(retries.len(), 1);
    assert_eq!(server.requests().len(), 2);
    server.assert_no_violations();
}

async fn start(script: &str, wire: Wire) -> (ScriptedServer, TestRepo, TestAgent) {
    start_with(script, wire, |_, _| {}).await
}

/// Starts the agent in auto mode, with `adjust` changing its setup first (it gets the
/// server, to build a client of its own).
async fn start_with(
    script: &str,
    wire: Wire,
    adjust: impl FnOnce(&ScriptedServer, &mut AgentSetup),
) -> (ScriptedServer, TestRepo, TestAgent) {
    let server = ScriptedServer::start(Script::from_toml(script).expect("test script")).await;
    let repo = TestRepo::with_files(&[("a.txt", ORIGINAL)]);
    let agent = TestAgent::start_with(&server, wire, repo.path(), ApprovalMode::Auto, |setup| {
        adjust(&server, setup)
    });
    (server, repo, agent)
}

fn finished() -> TurnOutcome {
    TurnOutcome::Finished {
        stop_reason: StopReason::EndTurn,
    }
}

/// One `Retrying` event, without its reason.
#[derive(Debug, PartialEq)]
struct Retry {
    attempt: u32,
    max_attempts: u32,
    delay_ms: u64,
    discarded: bool,
}

/// The retries the agent announced, and their reasons.
fn retries(agent: &TestAgent) -> (Vec<Retry>, Vec<String>) {
    agent
        .seen
        .iter()
        .filter_map(|event| match event {
            Event::Retrying {
                attempt,
                max_attempts,
                delay_ms,
                reason,
                discarded,
            } => Some((
                Retry {
                    attempt: *attempt,
                    max_attempts: *max_attempts,
                    delay_ms: *delay_ms,
                    discarded: *discarded,
                },
                reason.clone(),
            )),
            _ => None,
        })
        .unzip()
}

/// The conversation a request carries (without the volatile environment block, which
/// is rebuilt for every call).
fn messages(request: &RecordedRequest) -> Vec<Value> {
    let mut messages = conversation(request);
    for message in &mut messages {
        if let Some(blocks) = message["content"].as_array_mut() {
            blocks.retain(|block| {
                !block["text"]
                    .as_str()
                    .is_some_and(|text| text.contains("<environment>"))
            });
        }
        if let Some(text) = message["content"].as_str()
            && let Some(start) = text.find("<environment>")
        {
            message["content"] = Value::String(text[..start].trim_end().to_string());
        }
    }
    messages
}

/// The server saw the request once more after the failure, with the same conversation,
/// and only valid requests.
fn assert_sent_twice_unchanged(server: &ScriptedServer) {
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(messages(&requests[0]), messages(&requests[1]));
    server.assert_no_violations();
}

/// The names of the tool calls in a request's conversation, whatever the wire.
fn tool_call_names(request: &RecordedRequest) -> Vec<String> {
    let messages = conversation(request);
    let name = |value: &Value| value.as_str().unwrap_or_default().to_string();
    match request.wire {
        Wire::OpenAiResponses => messages
            .iter()
            .filter(|item| item["type"] == "function_call")
            .map(|item| name(&item["name"]))
            .collect(),
        Wire::Anthropic => messages
            .iter()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter(|block| block["type"] == "tool_use")
            .map(|block| name(&block["name"]))
            .collect(),
        Wire::OpenAiChat => messages
            .iter()
            .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
            .map(|call| name(&call["function"]["name"]))
            .collect(),
    }
}

fn max_tokens(request: &RecordedRequest) -> u64 {
    let key = match request.wire {
        Wire::Anthropic | Wire::OpenAiChat => "max_tokens",
        Wire::OpenAiResponses => "max_output_tokens",
    };
    request.body[key].as_u64().expect("the output token limit")
}

fn ran_any_tool(agent: &TestAgent) -> bool {
    agent
        .seen
        .iter()
        .any(|event| matches!(event, Event::ToolRunBegin { .. }))
}

#[tokio::test]
async fn a_rate_limit_waits_as_long_as_retry_after_asks() {
    let script = "[[turn]]\nstatus = 429\nretry_after = 1\n\n\
                  [[turn]]\nblocks = [{ text = 'Hello.' }]\n";
    let (server, _repo, mut agent) = start(script, Wire::Anthropic).await;
    let started = Instant::now();
    agent.send("hi");
    assert_eq!(agent.turn_end().await, finished());

    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "retried after {:?}",
        started.elapsed()
    );
    let (retries, reasons) = retries(&agent);
    assert_eq!(
        retries,
        [Retry {
            attempt: 1,
            max_attempts: 5,
            delay_ms: 1000,
            discarded: false
        }]
    );
    assert!(reasons[0].contains("HTTP 429"), "{reasons:?}");
    assert_eq!(server.requests().len(), 2);
    server.assert_no_violations();
}

async fn overloaded_twice_then_an_answer(wire: Wire) {
    let script = "[[turn]]\nstatus = 529\n\n[[turn]]\nstatus = 529\n\n\
                  [[turn]]\nblocks = [{ text = 'Hello.' }]\n";
    let (server, _repo, mut agent) = start(script, wire).await;
    agent.send("hi");
    assert_eq!(agent.turn_end().await, finished());

    let (retries, reasons) = retries(&agent);
    let attempts: Vec<(u32, u32, bool)> = retries
        .iter()
        .map(|retry| (retry.attempt, retry.max_attempts, retry.discarded))
        .collect();
    assert_eq!(attempts, [(1, 5, false), (2, 5, false)]);
    assert!(
        reasons.iter().all(|r| r.contains("HTTP 529")),
        "{reasons:?}"
    );
    assert_eq!(agent.streamed_text(), "Hello.");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(messages(&requests[0]), messages(&requests[2]));
    server.assert_no_violations();
}

async fn an_overloaded_error_mid_stream_is_retried(wire: Wire) {
    let script = "[[turn]]\nblocks = [{ text = 'Half an ' }, \
                  { error = 'overloaded_error', message = 'Overloaded' }]\n\n\
                  [[turn]]\nblocks = [{ text = 'A whole answer.' }]\n";
    let (server, _repo, mut agent) = start(script, wire).await;
    agent.send("hi");
    assert_eq!(agent.turn_end().await, finished());

    let (retries, reasons) = retries(&agent);
    assert_eq!(retries.len(), 1);
    assert!(retries[0].discarded, "the partial text was shown");
    assert!(reasons[0].contains("overloaded_error"), "{reasons:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        messages(&requests[0]),
        messages(&requests[1]),
        "the partial answer must not enter the conversation"
    );
    server.assert_no_violations();
}

async fn a_stalled_stream_trips_the_watchdog_and_is_retried(wire: Wire) {
    // The pause is a stall: no byte for far longer than the idle timeout.
    let script = "[[turn]]\nblocks = [{ text = 'Thinking about ' }, { pause_ms = 30000 }, \
                  { text = 'never sent' }]\n\n\
                  [[turn]]\nblocks = [{ text = 'Answer.' }]\n";
    let (server, _repo, mut agent) = start_with(script, wire, |server, setup| {
        setup.client = scripted_client(server, wire, Duration::from_millis(300));
    })
    .await;
    let started = Instant::now();
    agent.send("hi");
    assert_eq!(agent.turn_end().await, finished());

    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let (retries, reasons) = retries(&agent);
    assert_eq!(retries.len(), 1);
    assert!(retries[0].discarded);
    assert!(
        reasons[0].contains("no data from the provider"),
        "{reasons:?}"
    );
    assert!(agent.streamed_text().ends_with("Answer."));
    assert_sent_twice_unchanged(&server);
}

async fn a_drop_mid_tool_json_runs_nothing_and_retries_the_same_request(wire: Wire) {
    let script = r#"
        [[turn]]
        blocks = [
          { text = "Rewriting a.txt." },
          { tool = "write", args = '{"path": "a.txt", "content": "changed\n"}', chunk = 8, cut_after_chunks = 2 },
        ]

        [[turn]]
        blocks = [{ text = "I will leave it." }]
    "#;
    let (server, repo, mut agent) = start(script, wire).await;
    agent.send("rewrite a.txt");
    assert_eq!(agent.turn_end().await, finished());

    assert_eq!(repo.read("a.txt"), ORIGINAL);
    assert!(!ran_any_tool(&agent), "{:#?}", agent.seen);
    assert!(
        !agent
            .seen
            .iter()
            .any(|event| matches!(event, Event::ToolCallReady { .. })),
        "a cut call was announced as complete"
    );
    let (retries, _) = retries(&agent);
    assert_eq!(retries.len(), 1);
    assert!(retries[0].discarded);
    assert_sent_twice_unchanged(&server);
}

async fn a_drop_after_a_complete_call_keeps_the_call_and_its_result(wire: Wire) {
    let script = r#"
        [[turn]]
        blocks = [
          { text = "Reading, then writing." },
          { tool = "read", args = '{"path": "a.txt"}' },
          { tool = "write", args = '{"path": "a.txt", "content": "xyzzy\n"}', chunk = 8, cut_after_chunks = 3 },
        ]

        [[turn]]
        blocks = [{ text = "It says alpha." }]
    "#;
    let (server, repo, mut agent) = start(script, wire).await;
    agent.send("read a.txt, then rewrite it");
    assert_eq!(agent.turn_end().await, finished());

    assert_eq!(repo.read("a.txt"), ORIGINAL);
    let (retries, _) = retries(&agent);
    assert_eq!(retries.len(), 1);
    assert!(!retries[0].discarded, "the complete read is kept");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let results = tool_results(&requests[1]);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(!results[0].is_error, "{results:?}");
    assert!(results[0].content.contains("alpha"), "{results:?}");
    let second = all_text(&requests[1]);
    assert!(second.contains("Reading, then writing."), "{second}");
    assert_eq!(
        tool_call_names(&requests[1]),
        ["read"],
        "the cut write leaked"
    );
    server.assert_no_violations();
}

async fn an_answer_cut_at_max_tokens_is_asked_again_then_continued(wire: Wire) {
    let script = r#"
        [[turn]]
        blocks = [{ text = "The first part, cut" }]
        stop = "max_tokens"

        [[turn]]
        blocks = [{ text = "The first part, longer but cut" }]
        stop = "max_tokens"

        [[turn]]
        blocks = [{ text = " and the end." }]
    "#;
    let (server, _repo, mut agent) =
        start_with(script, wire, |_, setup| setup.max_tokens = 4096).await;
    agent.send("write a long answer");
    assert_eq!(agent.turn_end().await, finished());

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let limits: Vec<u64> = requests.iter().map(max_tokens).collect();
    assert_eq!(limits, [4096, 8192, 8192]);
    assert_eq!(
        messages(&requests[0]),
        messages(&requests[1]),
        "the first cut answer is dropped"
    );
    let (retries, _) = retries(&agent);
    assert_eq!(
        retries,
        [Retry {
            attempt: 1,
            max_attempts: 1,
            delay_ms: 0,
            discarded: true
        }]
    );
    let third = all_text(&requests[2]);
    assert!(third.contains("The first part, longer but cut"), "{third}");
    assert!(third.contains("cut off at the output limit"), "{third}");
    assert!(!third.contains("The first part, cut\n"), "{third}");
    server.assert_no_violations();
}

async fn a_tool_call_cut_at_max_tokens_never_runs(wire: Wire) {
    let script = r#"
        [[turn]]
        blocks = [
          { text = "Writing it." },
          { tool = "write", args = '{"path": "a.txt", "content": "chan', chunk = 6 },
        ]
        stop = "max_tokens"

        [[turn]]
        blocks = [
          { tool = "write", args = '{"path": "a.txt", "content": "cha', chunk = 6 },
        ]
        stop = "max_tokens"

        [[turn]]
        blocks = [{ text = "I will write it in parts." }]
    "#;
    let (server, repo, mut agent) = start(script, wire).await;
    agent.send("rewrite a.txt");
    assert_eq!(agent.turn_end().await, finished());

    assert_eq!(repo.read("a.txt"), ORIGINAL);
    assert!(!ran_any_tool(&agent), "{:#?}", agent.seen);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(max_tokens(&requests[1]), 8192);
    assert_eq!(messages(&requests[0]), messages(&requests[1]));
    assert!(
        tool_call_names(&requests[2]).is_empty() && tool_results(&requests[2]).is_empty(),
        "a dropped call is neither sent nor answered"
    );
    let third = all_text(&requests[2]);
    assert!(
        third.contains("A tool call that was cut off was not run"),
        "{third}"
    );
    server.assert_no_violations();
}

async fn a_broken_last_call_without_the_limit_is_answered_as_an_error(wire: Wire) {
    // Held back as possibly cut, then answered once the stop reason shows it was not.
    let script = r#"
        [[turn]]
        blocks = [{ tool = "read", args = '{"path": "a.txt"', chunk = 4 }]

        [[turn]]
        blocks = [{ text = "Let me fix that call." }]
    "#;
    let (server, _repo, mut agent) = start(script, wire).await;
    agent.send("read a.txt");
    assert_eq!(agent.turn_end().await, finished());

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(tool_call_names(&requests[1]), ["read"]);
    let results = tool_results(&requests[1]);
    assert_eq!(results.len(), 1);
    assert!(results[0].is_error, "{results:?}");
    assert!(retries(&agent).0.is_empty());
    server.assert_no_violations();
}

async fn a_refused_key_fails_once_naming_the_variable(wire: Wire) {
    let script = "[[turn]]\nstatus = 401\nmessage = 'invalid x-api-key'\n\n\
                  [[turn]]\nblocks = [{ text = 'never' }]\n";
    let (server, _repo, mut agent) = start(script, wire).await;
    agent.send("hi");
    let TurnOutcome::Failed { message } = agent.turn_end().await else {
        panic!("expected a failed turn; saw {:#?}", agent.seen);
    };

    assert!(message.contains("HTTP 401"), "{message}");
    assert!(message.contains("invalid x-api-key"), "{message}");
    assert!(message.contains(TEST_KEY_ENV), "{message}");
    assert!(retries(&agent).0.is_empty());
    assert_eq!(server.requests().len(), 1);
    server.assert_no_violations();
}

/// `response.failed` with a code that is not worth retrying ends the turn at once, with
/// the provider's message; the partial text never enters the conversation.
#[tokio::test]
async fn a_failed_response_with_a_permanent_code_fails_the_turn_once() {
    let script = "[[turn]]\nblocks = [{ text = 'Half' }, \
                  { error = 'invalid_prompt', message = 'Your prompt was flagged.' }]\n\n\
                  [[turn]]\nblocks = [{ text = 'never' }]\n";
    let (server, _repo, mut agent) = start(script, Wire::OpenAiResponses).await;
    agent.send("hi");
    let TurnOutcome::Failed { message } = agent.turn_end().await else {
        panic!("expected a failed turn; saw {:#?}", agent.seen);
    };

    assert!(message.contains("invalid_prompt"), "{message}");
    assert!(message.contains("Your prompt was flagged."), "{message}");
    assert!(retries(&agent).0.is_empty());
    assert_eq!(server.requests().len(), 1);
    server.assert_no_violations();
}

#[tokio::test]
async fn an_unknown_model_fails_once_naming_it() {
    let script = "[[turn]]\nstatus = 404\nmessage = 'model: scripted-model'\n";
    let (server, _repo, mut agent) = start(script, Wire::OpenAiChat).await;
    agent.send("hi");
    let TurnOutcome::Failed { message } = agent.turn_end().await else {
        panic!("expected a failed turn; saw {:#?}", agent.seen);
    };

    assert!(message.contains("HTTP 404"), "{message}");
    assert!(
        message.contains("Check the model name (`scripted-model`) and the base URL"),
        "{message}"
    );
    assert!(message.contains(&server.openai_base_url()), "{message}");
    assert_eq!(server.requests().len(), 1);
    server.assert_no_violations();
}

async fn the_breaker_stops_after_the_last_retry(wire: Wire) {
    const RETRIES: u32 = 2;
    let script = "[[turn]]\nstatus = 503\n\n".repeat(4);
    let (server, _repo, mut agent) = start_with(&script, wire, |_, setup| {
        setup.retry = RetryPolicy {
            max_retries: RETRIES,
            ..fast_retries()
        };
    })
    .await;
    agent.send("hi");
    let TurnOutcome::Failed { message } = agent.turn_end().await else {
        panic!("expected a failed turn; saw {:#?}", agent.seen);
    };

    assert!(message.contains("failed 3 times in a row"), "{message}");
    assert!(message.contains("HTTP 503"), "{message}");
    let attempts: Vec<u32> = retries(&agent).0.iter().map(|r| r.attempt).collect();
    assert_eq!(attempts, [1, 2]);
    assert_eq!(server.requests().len(), RETRIES as usize + 1);
    server.assert_no_violations();
}

#[tokio::test]
async fn a_resumed_session_has_the_continuation_and_none_of_the_dropped_answers() {
    let script = r#"
        [[turn]]
        blocks = [{ text = "Dropped by overload." }, { error = "overloaded_error" }]

        [[turn]]
        blocks = [{ text = "Dropped at the limit." }]
        stop = "max_tokens"

        [[turn]]
        blocks = [{ text = "Kept, then continued" }]
        stop = "max_tokens"

        [[turn]]
        blocks = [{ text = " to the end." }]
    "#;
    let dir = tempfile::tempdir().unwrap();
    let header = |workspace: &std::path::Path| Header {
        format: FORMAT_VERSION,
        id: "1-1".into(),
        workspace: workspace.display().to_string(),
        model: "scripted-model".into(),
        provider: Wire::Anthropic,
        started_at: 1,
        duet_version: "test".into(),
    };
    let mut path = None;
    let (server, repo, mut agent) = start_with(script, Wire::Anthropic, |_, setup| {
        let writer = SessionWriter::create(dir.path(), header(&setup.workspace));
        path = Some(writer.path().to_path_buf());
        setup.transcript = Some(writer);
    })
    .await;
    agent.send("write a long answer");
    assert_eq!(agent.turn_end().await, finished());
    agent.handle.send(Command::Shutdown).unwrap();
    server.assert_no_violations();

    let recorded = session::load(&path.unwrap()).unwrap();
    let restored = TestAgent::start_with(
        &server,
        Wire::Anthropic,
        repo.path(),
        ApprovalMode::Auto,
        |setup| {
            setup.resume = Some(recorded);
        },
    )
    .wait_for("the restored conversation", |event| {
        matches!(event, Event::ConversationRestored { .. })
    })
    .await;
    let Event::ConversationRestored { messages, .. } = restored else {
        unreachable!("wait_for returned a non-matching event");
    };
    let texts: Vec<(Role, Vec<String>)> = messages
        .iter()
        .map(|message| {
            let texts = message
                .content
                .iter()
                .filter_map(|block| match block {
                    Block::Text { text } => Some(text.clone()),
                    _ => None,
                })
                .collect();
            (message.role, texts)
        })
        .collect();
    assert_eq!(texts.len(), 4, "{texts:#?}");
    assert_eq!(
        texts[0],
        (Role::User, vec!["write a long answer".to_string()])
    );
    assert_eq!(
        texts[1],
        (Role::Assistant, vec!["Kept, then continued".to_string()])
    );
    assert_eq!(texts[2].0, Role::User);
    assert!(
        texts[2].1[0].contains("cut off at the output limit"),
        "{texts:#?}"
    );
    assert_eq!(
        texts[3],
        (Role::Assistant, vec![" to the end.".to_string()])
    );
}

#[tokio::test]
async fn an_interrupt_cancels_the_backoff_at_once() {
    let script = "[[turn]]\nstatus = 529\n\n[[turn]]\nblocks = [{ text = 'Hello.' }]\n";
    let (server, _repo, mut agent) = start_with(script, Wire::Anthropic, |_, setup| {
        setup.retry = RetryPolicy {
            max_retries: 5,
            initial_delay: Duration::from_secs(60),
            max_delay: Duration::from_secs(60),
        };
    })
    .await;
    agent.send("hi");
    agent
        .wait_for("the retry", |event| matches!(event, Event::Retrying { .. }))
        .await;
    let interrupted_at = Instant::now();
    agent.interrupt();
    assert_eq!(agent.turn_end().await, TurnOutcome::Interrupted);

    assert!(
        interrupted_at.elapsed() < Duration::from_secs(5),
        "{:?}",
        interrupted_at.elapsed()
    );
    assert_eq!(server.requests().len(), 1);

    // The conversation is still valid: the next message goes out and is answered.
    agent.send("hi again");
    assert_eq!(agent.turn_end().await, finished());
    assert_eq!(server.requests().len(), 2);
    server.assert_no_violations();
}
