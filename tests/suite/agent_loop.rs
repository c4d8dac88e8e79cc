//! The agent loop against the scripted server, over both wire formats: streaming,
//! tool round trips, parallel and failing calls, bad calls, interrupt and steering.
//! Every test ends by checking the server saw no invalid request.

use duet::agent::{Event, TurnOutcome};
use duet::policy::ApprovalMode;
use duet::provider::{StopReason, Wire};
use pretty_assertions::assert_eq;

use crate::common::harness::{
    SentResult, TestAgent, TestRepo, all_text, input_items, last_user_text, offered_tools,
    tool_results,
};
use crate::common::script::{LoadScript, Script};
use crate::common::scripted_server::ScriptedServer;

for_each_wire!(
    streamed_text_arrives_as_deltas,
    request_carries_instructions_environment_and_cache_prefix,
    single_tool_call_round_trip,
    calls_start_while_the_response_still_streams,
    a_failing_read_fails_alone,
    unknown_tools_and_bad_arguments_become_error_results,
    interrupt_mid_stream_keeps_the_conversation_valid,
    a_message_sent_mid_turn_steers_the_next_step,
    read_only_mode_refuses_writes,
);

/// The `<environment>` block a request's last user message carries.
fn environment_block(request: &crate::common::scripted_server::RecordedRequest) -> String {
    let text = last_user_text(request);
    let start = text.find("<environment>").expect("an environment block");
    let end = text.find("</environment>").expect("the block's end");
    text[start..end].to_string()
}

#[tokio::test]
async fn steps_that_only_read_reuse_the_environment_block() {
    let (server, repo, mut agent) =
        start("environment_reuse", Wire::Anthropic, ApprovalMode::Auto).await;
    agent.send("read a, then write new.txt");
    // The first request is out (its block worked out); a file appears behind the agent's
    // back before the read is even sent.
    server.wait_for_gate("hold-read").await;
    std::fs::write(repo.path().join("late.txt"), "late\n").unwrap();
    server.release("hold-read");
    assert_eq!(agent.turn_end().await, finished(StopReason::EndTurn));

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let blocks: Vec<String> = requests.iter().map(environment_block).collect();
    assert!(!blocks[0].contains("late.txt"), "{}", blocks[0]);
    assert_eq!(blocks[1], blocks[0], "after a read, the same block");
    assert!(
        blocks[2].contains("late.txt"),
        "after a write, a new one: {}",
        blocks[2]
    );
    assert!(blocks[2].contains("new.txt"), "{}", blocks[2]);
    server.assert_no_violations();
}

fn fixture_repo() -> TestRepo {
    TestRepo::with_files(&[
        ("a.txt", "alpha\n"),
        ("b.txt", "bravo\n"),
        ("c.txt", "charlie\n"),
        ("notes.txt", "hello\nfrom the notes\n"),
        (
            "CLAUDE.md",
            "Always run `make check` before saying you are done.\n",
        ),
    ])
}

async fn start(
    script: &str,
    wire: Wire,
    approval: ApprovalMode,
) -> (ScriptedServer, TestRepo, TestAgent) {
    let server = ScriptedServer::start(Script::load(script)).await;
    let repo = fixture_repo();
    let agent = TestAgent::start(&server, wire, repo.path(), approval);
    (server, repo, agent)
}

fn finished(stop_reason: StopReason) -> TurnOutcome {
    TurnOutcome::Finished { stop_reason }
}

async fn streamed_text_arrives_as_deltas(wire: Wire) {
    let (server, _repo, mut agent) = start("stream_text", wire, ApprovalMode::Auto).await;
    agent.send("say hello");
    assert_eq!(agent.turn_end().await, finished(StopReason::EndTurn));

    let deltas = agent
        .seen
        .iter()
        .filter(|e| matches!(e, Event::TextDelta { .. }))
        .count();
    assert!(
        deltas >= 8,
        "expected the text in many deltas, got {deltas}"
    );
    assert_eq!(
        agent.streamed_text(),
        "Hello from the scripted model. Streaming works."
    );
    let usage = agent
        .seen
        .iter()
        .find_map(|e| match e {
            Event::Usage { session, .. } => Some(*session),
            _ => None,
        })
        .expect("a usage event");
    assert_eq!(usage.output_tokens, 12);
    assert_eq!(server.requests().len(), 1);
    server.assert_no_violations();
}

async fn request_carries_instructions_environment_and_cache_prefix(wire: Wire) {
    let (server, repo, mut agent) = start("stream_text", wire, ApprovalMode::Auto).await;
    agent.send("say hello");
    agent.turn_end().await;

    let request = &server.requests()[0];
    let text = all_text(request);
    assert!(text.contains("You are duet"), "system prompt missing");
    assert!(
        text.contains("Always run `make check` before saying you are done."),
        "CLAUDE.md text missing from the request"
    );
    // The environment block rides on the last user message, after the conversation.
    let last_user = last_user_text(request);
    assert!(last_user.contains("<environment>"), "{last_user}");
    let root = repo.path().canonicalize().unwrap();
    assert!(
        last_user.contains(&format!("working directory: {}", root.display())),
        "{last_user}"
    );
    assert!(last_user.contains("initial commit"), "{last_user}");
    assert!(last_user.contains("git branch: "), "{last_user}");
    assert!(last_user.contains("say hello"), "{last_user}");

    let tools = offered_tools(request);
    assert_eq!(
        tools,
        [
            "read",
            "write",
            "edit",
            "glob",
            "grep",
            "shell",
            "shell_jobs",
            "explore"
        ]
    );

    if wire == Wire::Anthropic {
        let body = &request.body;
        let system = body["system"].as_array().unwrap();
        assert_eq!(system.last().unwrap()["cache_control"]["type"], "ephemeral");
        let tools = body["tools"].as_array().unwrap();
        assert_eq!(tools.last().unwrap()["cache_control"]["type"], "ephemeral");
        // The environment block sits after the last breakpoint, so it never busts the cache.
        let last = body["messages"].as_array().unwrap().last().unwrap();
        let blocks = last["content"].as_array().unwrap();
        let env = blocks.last().unwrap();
        assert!(env["text"].as_str().unwrap().contains("<environment>"));
        assert!(env.get("cache_control").is_none());
    }
    server.assert_no_violations();
}

async fn single_tool_call_round_trip(wire: Wire) {
    let (server, _repo, mut agent) = start("read_round_trip", wire, ApprovalMode::Auto).await;
    agent.send("what do the notes say?");
    assert_eq!(agent.turn_end().await, finished(StopReason::EndTurn));

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let results = tool_results(&requests[1]);
    assert_eq!(results.len(), 1);
    let result = &results[0];
    assert!(!result.is_error, "{result:?}");
    assert!(
        result.content.contains("     1\thello"),
        "{}",
        result.content
    );
    assert!(
        result.content.contains("     2\tfrom the notes"),
        "{}",
        result.content
    );
    assert_eq!(
        agent.streamed_text(),
        "Let me read the notes.The notes say hello."
    );
    server.assert_no_violations();
}

async fn calls_start_while_the_response_still_streams(wire: Wire) {
    let (server, _repo, mut agent) = start("three_reads", wire, ApprovalMode::Auto).await;
    agent.send("read a, b and c");

    // The server holds the third call at the gate; the first read must run meanwhile.
    let first = agent
        .wait_for("the first call", |e| {
            matches!(e, Event::ToolCallReady { .. })
        })
        .await;
    let Event::ToolCallReady {
        call_id: first_id, ..
    } = first
    else {
        unreachable!()
    };
    agent
        .wait_for(
            "the first read to finish",
            |e| matches!(e, Event::ToolRunEnd { call_id, .. } if *call_id == first_id),
        )
        .await;
    server.wait_for_gate("before-third").await;
    server.release("before-third");
    assert_eq!(agent.turn_end().await, finished(StopReason::EndTurn));

    let begins: Vec<String> = agent
        .seen
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallBegin { call_id, .. } => Some(call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(begins.len(), 3);
    let first_run = agent.position(
        "first run",
        |e| matches!(e, Event::ToolRunBegin { call_id } if *call_id == begins[0]),
    );
    let third_streamed = agent.position(
        "third call",
        |e| matches!(e, Event::ToolCallBegin { call_id, .. } if *call_id == begins[2]),
    );
    assert!(
        first_run < third_streamed,
        "the first read must start before the third call streams"
    );
    // Reads are shared: the second starts before the first ends is allowed, and all three
    // results go back in call order.
    let results = tool_results(&server.requests()[1]);
    let ids: Vec<&str> = results.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(ids, begins.iter().map(String::as_str).collect::<Vec<_>>());
    let contents: Vec<bool> = ["alpha", "bravo", "charlie"]
        .iter()
        .zip(&results)
        .map(|(word, result)| result.content.contains(word) && !result.is_error)
        .collect();
    assert_eq!(contents, [true, true, true]);
    server.assert_no_violations();
}

async fn a_failing_read_fails_alone(wire: Wire) {
    let (server, _repo, mut agent) = start("failing_read", wire, ApprovalMode::Auto).await;
    agent.send("read three files");
    assert_eq!(agent.turn_end().await, finished(StopReason::EndTurn));

    let results = tool_results(&server.requests()[1]);
    let summary: Vec<(bool, bool)> = results
        .iter()
        .map(|r| (r.is_error, r.content.contains("missing.txt")))
        .collect();
    assert_eq!(summary, [(false, false), (true, true), (false, false)]);
    assert!(results[0].content.contains("alpha"));
    assert!(results[2].content.contains("bravo"));
    server.assert_no_violations();
}

async fn unknown_tools_and_bad_arguments_become_error_results(wire: Wire) {
    let (server, _repo, mut agent) = start("bad_calls", wire, ApprovalMode::Auto).await;
    agent.send("do things");
    assert_eq!(agent.turn_end().await, finished(StopReason::EndTurn));

    let results = tool_results(&server.requests()[1]);
    assert_eq!(results.len(), 3);
    assert!(results.iter().all(|r| r.is_error), "{results:#?}");
    let expect = |result: &SentResult, needles: &[&str]| {
        for needle in needles {
            assert!(
                result.content.contains(needle),
                "{needle} not in {}",
                result.content
            );
        }
    };
    expect(
        &results[0],
        &["frobnicate", "read, write, edit, glob, grep"],
    );
    expect(&results[1], &["not valid JSON", r#"{"path": "a.txt""#]);
    expect(&results[2], &["invalid arguments for `read`", "file"]);
    assert_eq!(agent.streamed_text(), "Let me fix those calls.");
    server.assert_no_violations();
}

async fn interrupt_mid_stream_keeps_the_conversation_valid(wire: Wire) {
    let (server, _repo, mut agent) = start("interrupt", wire, ApprovalMode::Auto).await;
    agent.send("look at the code");
    server.wait_for_gate("hold").await;
    agent
        .wait_for("the read to finish", |e| {
            matches!(e, Event::ToolRunEnd { .. })
        })
        .await;
    agent.interrupt();
    assert_eq!(agent.turn_end().await, TurnOutcome::Interrupted);

    agent.send("actually, just continue");
    assert_eq!(agent.turn_end().await, finished(StopReason::EndTurn));

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let next = &requests[1];
    let text = all_text(next);
    assert!(
        text.contains("Let me look at the code first."),
        "partial assistant text kept"
    );
    assert!(!text.contains("This part never arrives."));
    // The completed read kept its real result; the conversation pairs every call.
    let results = tool_results(next);
    assert_eq!(results.len(), 1);
    assert!(results[0].content.contains("alpha"), "{:?}", results[0]);
    assert!(last_user_text(next).contains("actually, just continue"));
    server.assert_no_violations();
}

async fn a_message_sent_mid_turn_steers_the_next_step(wire: Wire) {
    let (server, _repo, mut agent) = start("steer", wire, ApprovalMode::Auto).await;
    agent.send("read a.txt");
    server.wait_for_gate("steer").await;
    agent.send("also check b.txt");
    server.release("steer");
    assert_eq!(agent.turn_end().await, finished(StopReason::EndTurn));

    let requests = server.requests();
    assert_eq!(
        requests.len(),
        2,
        "the steer is delivered within the same turn"
    );
    let first = all_text(&requests[0]);
    assert!(!first.contains("also check b.txt"));
    let next = &requests[1];
    assert_eq!(tool_results(next).len(), 1);
    assert!(last_user_text(next).contains("also check b.txt"));
    let delivered: Vec<&str> = agent
        .seen
        .iter()
        .filter_map(|e| match e {
            Event::UserMessageDelivered { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(delivered, ["read a.txt", "also check b.txt"]);
    server.assert_no_violations();
}

async fn read_only_mode_refuses_writes(wire: Wire) {
    let (server, repo, mut agent) = start("write_new_file", wire, ApprovalMode::ReadOnly).await;
    agent.send("create new.txt");
    assert_eq!(agent.turn_end().await, finished(StopReason::EndTurn));

    assert!(!repo.path().join("new.txt").exists());
    let results = tool_results(&server.requests()[1]);
    assert_eq!(results.len(), 1);
    assert!(results[0].is_error);
    assert!(
        results[0].content.contains("read-only"),
        "{}",
        results[0].content
    );
    server.assert_no_violations();
}

/// Responses: the reasoning item streamed with a call goes back verbatim, before that
/// call, in the next request (the server checks the echo; this checks the order), and
/// its summary is shown as thinking.
#[tokio::test]
async fn responses_reasoning_goes_back_before_its_call() {
    let (server, _repo, mut agent) = start(
        "think_read_answer",
        Wire::OpenAiResponses,
        ApprovalMode::Auto,
    )
    .await;
    agent.send("what is in a.txt?");
    assert_eq!(agent.turn_end().await, finished(StopReason::EndTurn));

    let thinking: String = agent
        .seen
        .iter()
        .filter_map(|event| match event {
            Event::ThinkingDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thinking, "The answer is in a.txt.");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let items = input_items(&requests[1]);
    let kinds: Vec<&str> = items
        .iter()
        .map(|item| item["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        kinds,
        [
            "message",
            "reasoning",
            "message",
            "function_call",
            "function_call_output",
            "message"
        ]
    );
    assert_eq!(items[1]["encrypted_content"], "gAAAAB-scripted-t1-sig-read");
    assert_eq!(items[3]["call_id"], items[4]["call_id"]);
    server.assert_no_violations();
}

/// Messages are named by id: of two waiting messages with the same text, the one
/// withdrawn never reaches the model and the other one does, once.
#[tokio::test]
async fn a_message_withdrawn_before_delivery_never_reaches_the_model() {
    let (server, _repo, mut agent) = start("steer", Wire::Anthropic, ApprovalMode::Auto).await;
    agent.send("read a.txt");
    server.wait_for_gate("steer").await;
    agent.send("also check b.txt");
    let typo = agent.send("also check b.txt");
    agent
        .handle
        .send(duet::agent::Command::WithdrawMessage { id: typo })
        .unwrap();
    agent
        .wait_for(
            "the withdrawal",
            |e| matches!(e, Event::MessageWithdrawn { id, .. } if *id == typo),
        )
        .await;
    server.release("steer");
    agent.turn_end().await;
    let requests = server.requests();
    assert_eq!(
        all_text(&requests[1]).matches("also check b.txt").count(),
        1
    );
    let delivered: Vec<u64> = agent
        .seen
        .iter()
        .filter_map(|event| match event {
            Event::UserMessageDelivered { id, .. } => Some(*id),
            _ => None,
        })
        .collect();
    assert_eq!(delivered, [1, 2]);
    server.assert_no_violations();
}
