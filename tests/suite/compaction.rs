//! Context compaction against the scripted server: a prompt past the threshold gets
//! older tool results pruned, or older turns summarised by one plain model call, and the
//! task goes on with a smaller request; a resumed session continues from the compacted
//! conversation; a failed summary turns compaction off instead of looping; the
//! workspace's `.duet/notes.md` is given again after every compaction. Every test
//! checks the server saw only valid requests.

use duet::agent::{Command, CompactionKind, Event, TurnOutcome};
use duet::config::{Compaction, ModelInfo};
use duet::policy::ApprovalMode;
use duet::provider::{Block, Role, StopReason, Wire};
use duet::session::SessionWriter;
use pretty_assertions::assert_eq;

use crate::common::harness::{TestAgent, TestRepo, all_text, input_items, is_model_item};
use crate::common::script::Script;
use crate::common::scripted_server::{RecordedRequest, ScriptedServer};
use crate::suite::sessions::{header, resume_recorded};

for_each_wire!(
    a_full_context_is_summarised_and_the_task_goes_on,
    large_old_results_are_pruned_when_that_is_enough,
    a_failed_summary_turns_compaction_off_and_the_task_goes_on,
    an_interrupt_cancels_the_summary_and_leaves_the_conversation_whole,
    the_notes_file_follows_the_summary_as_it_is_now,
    the_notes_file_joins_the_newest_message_after_pruning,
    the_user_compacts_on_request_with_a_focus,
);

/// Compaction at 8000 prompt tokens, keeping only the newest model call whole.
const WINDOW: ModelInfo = ModelInfo {
    context_window: Some(10_000),
    prices: None,
    takes_images: None,
};

fn compaction() -> Compaction {
    Compaction {
        keep_recent_steps: 1,
        ..Compaction::default()
    }
}

/// A turn that thinks, then reads `path`, reporting a prompt of `input` tokens.
fn read_turn(path: &str, input: u64) -> String {
    format!(
        "[[turn]]\nblocks = [{{ thinking = \"Plan {path}.\" }}, {{ text = \"Reading {path}.\" }}, \
         {{ tool = \"read\", args = '{{\"path\": \"{path}\"}}' }}]\nusage = {{ input = {input}, \
         output = 10 }}\n"
    )
}

fn text_turn(text: &str, input: u64) -> String {
    format!(
        "[[turn]]\nblocks = [{{ text = \"{text}\" }}]\nusage = {{ input = {input}, output = 10 }}\n"
    )
}

fn script(turns: &[String]) -> Script {
    Script::from_toml(&turns.concat()).expect("script")
}

fn repo() -> TestRepo {
    let big: String = (0..300).map(|n| format!("big line {n}\n")).collect();
    TestRepo::with_files(&[
        ("a.txt", "alpha\n"),
        ("b.txt", "bravo\n"),
        ("c.txt", "charlie\n"),
        ("big.txt", &big),
    ])
}

fn finished() -> TurnOutcome {
    TurnOutcome::Finished {
        stop_reason: StopReason::EndTurn,
    }
}

/// The conversation messages of a request (OpenAI also sends the system prompt as one).
/// Responses input is a list of items: each run of the model's items, or of the
/// user's, counts as one message.
fn message_count(request: &RecordedRequest) -> usize {
    if request.wire == Wire::OpenAiResponses {
        let sides: Vec<bool> = input_items(request).iter().map(is_model_item).collect();
        return sides.chunk_by(|a, b| a == b).count();
    }
    request.body["messages"].as_array().map_or(0, |messages| {
        messages
            .iter()
            .filter(|message| message["role"] != "system")
            .count()
    })
}

fn compactions(agent: &TestAgent) -> Vec<CompactionKind> {
    agent
        .seen
        .iter()
        .filter_map(|event| match event {
            Event::Compacted { kind, .. } => Some(*kind),
            _ => None,
        })
        .collect()
}

async fn a_full_context_is_summarised_and_the_task_goes_on(wire: Wire) {
    let server = ScriptedServer::start(script(&[
        read_turn("a.txt", 3_000),
        read_turn("b.txt", 5_000),
        read_turn("c.txt", 9_000),
        text_turn("SUMMARY: read a.txt and b.txt; c.txt is next.", 1_500),
        text_turn("Done.", 1_000),
    ]))
    .await;
    let repo = repo();
    let dir = tempfile::tempdir().unwrap();
    let writer = SessionWriter::create(dir.path(), header("1-1", repo.path()));
    let path = writer.path().to_path_buf();
    let mut agent =
        TestAgent::start_with(&server, wire, repo.path(), ApprovalMode::Auto, |setup| {
            setup.model_info = WINDOW;
            setup.compaction = compaction();
            setup.transcript = Some(writer);
        });
    agent.send("read the files");
    assert_eq!(agent.turn_end().await, finished());
    server.assert_no_violations();

    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    let summary_request = &requests[3];
    assert!(
        summary_request.body.get("tools").is_none(),
        "a plain request"
    );
    assert_eq!(message_count(summary_request), 1);
    let quoted = all_text(summary_request);
    assert!(quoted.contains("Reading a.txt."), "{quoted}");
    assert!(quoted.contains("bravo"), "{quoted}");
    assert!(
        quoted.contains("Summarise the conversation above"),
        "{quoted}"
    );
    assert!(
        !quoted.contains("Plan a.txt."),
        "thinking is not quoted: {quoted}"
    );

    let (before, after) = (&requests[2], &requests[4]);
    assert!(
        message_count(after) < message_count(before),
        "{} messages after, {} before",
        message_count(after),
        message_count(before)
    );
    let sent = all_text(after);
    assert!(sent.contains("SUMMARY: read a.txt and b.txt"), "{sent}");
    assert!(!sent.contains("Reading a.txt."), "summarised away: {sent}");
    assert!(sent.contains("charlie"), "the newest step is whole: {sent}");
    if wire == Wire::Anthropic {
        assert!(
            sent.contains("Plan c.txt."),
            "its signed thinking stays: {sent}"
        );
    }
    assert_eq!(compactions(&agent), vec![CompactionKind::Summarised]);

    // A resumed session continues from the compacted conversation.
    let mut second = resume_recorded(&server, wire, repo.path(), &path);
    let restored = second
        .wait_for("the restored conversation", |event| {
            matches!(event, Event::ConversationRestored { .. })
        })
        .await;
    let Event::ConversationRestored { messages, .. } = restored else {
        unreachable!("wait_for returned a non-matching event");
    };
    assert_eq!(
        messages.len(),
        4,
        "summary, read of c.txt, its result, Done: {messages:#?}"
    );
    assert_eq!(messages[0].role, Role::User);
    let Block::Text { text } = &messages[0].content[0] else {
        panic!("the summary is user text: {messages:#?}");
    };
    assert!(text.contains("SUMMARY: read a.txt and b.txt"), "{text}");
}

async fn large_old_results_are_pruned_when_that_is_enough(wire: Wire) {
    let server = ScriptedServer::start(script(&[
        read_turn("big.txt", 3_000),
        read_turn("b.txt", 8_100),
        text_turn("Done.", 2_000),
    ]))
    .await;
    let repo = repo();
    let mut agent =
        TestAgent::start_with(&server, wire, repo.path(), ApprovalMode::Auto, |setup| {
            setup.model_info = WINDOW;
            setup.compaction = compaction();
        });
    agent.send("read the files");
    assert_eq!(agent.turn_end().await, finished());
    server.assert_no_violations();

    let requests = server.requests();
    assert_eq!(requests.len(), 3, "no summary call");
    assert!(all_text(&requests[1]).contains("big line 250"));
    let sent = all_text(&requests[2]);
    assert!(!sent.contains("big line 250"), "{sent}");
    assert!(
        sent.contains("[pruned to save context: read returned"),
        "{sent}"
    );
    assert!(sent.contains("bravo"), "the newest result is whole: {sent}");
    assert_eq!(
        message_count(&requests[2]),
        message_count(&requests[1]) + 2,
        "the calls stay"
    );
    assert_eq!(compactions(&agent), vec![CompactionKind::PrunedToolResults]);
}

async fn a_failed_summary_turns_compaction_off_and_the_task_goes_on(wire: Wire) {
    let server = ScriptedServer::start(script(&[
        read_turn("a.txt", 3_000),
        read_turn("b.txt", 9_000),
        "[[turn]]\nstatus = 500\n".to_string(),
        read_turn("c.txt", 9_500),
        text_turn("Done.", 9_800),
    ]))
    .await;
    let repo = repo();
    let mut agent =
        TestAgent::start_with(&server, wire, repo.path(), ApprovalMode::Auto, |setup| {
            setup.model_info = WINDOW;
            setup.compaction = compaction();
        });
    agent.send("read the files");
    assert_eq!(agent.turn_end().await, finished());
    server.assert_no_violations();

    assert_eq!(server.requests().len(), 5, "one summary call, never again");
    let failures: Vec<&Event> = agent
        .seen
        .iter()
        .filter(|event| matches!(event, Event::CompactionFailed { .. }))
        .collect();
    assert_eq!(failures.len(), 1, "{failures:#?}");
    assert_eq!(compactions(&agent), Vec::new());
}

async fn an_interrupt_cancels_the_summary_and_leaves_the_conversation_whole(wire: Wire) {
    let server = ScriptedServer::start(script(&[
        read_turn("a.txt", 3_000),
        read_turn("b.txt", 9_000),
        "[[turn]]\nblocks = [{ text = \"SUMMARY\" }, { gate = \"summarising\" }, \
         { text = \" never sent\" }]\n"
            .to_string(),
        text_turn("Done.", 1_000),
    ]))
    .await;
    let repo = repo();
    let mut agent =
        TestAgent::start_with(&server, wire, repo.path(), ApprovalMode::Auto, |setup| {
            setup.model_info = WINDOW;
            setup.compaction = compaction();
        });
    agent.send("read the files");
    server.wait_for_gate("summarising").await;
    agent.interrupt();
    assert_eq!(agent.turn_end().await, TurnOutcome::Interrupted);

    agent.send("go on");
    assert_eq!(agent.turn_end().await, finished());
    server.assert_no_violations();
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let sent = all_text(&requests[3]);
    assert!(
        sent.contains("Reading a.txt."),
        "nothing was compacted: {sent}"
    );
    assert!(!sent.contains("SUMMARY"), "{sent}");
    assert_eq!(compactions(&agent), Vec::new());
    assert!(
        !agent
            .seen
            .iter()
            .any(|event| matches!(event, Event::CompactionFailed { .. })),
        "an interrupt is no failure"
    );
}

/// Leads the notes file when the agent gives it again.
const NOTES_HEADER: &str = "[The notes file .duet/notes.md as it is now";

/// A turn that writes `.duet/notes.md`, reporting a prompt of `input` tokens.
fn notes_turn(notes: &str, input: u64) -> String {
    format!(
        "[[turn]]\nblocks = [{{ tool = \"write\", args = '{{\"path\": \".duet/notes.md\", \
         \"content\": \"{notes}\"}}' }}]\nusage = {{ input = {input}, output = 10 }}\n"
    )
}

async fn the_notes_file_follows_the_summary_as_it_is_now(wire: Wire) {
    let server = ScriptedServer::start(script(&[
        notes_turn("PLAN: read a, b, c. DONE: nothing yet.", 1_000),
        read_turn("a.txt", 3_000),
        read_turn("b.txt", 5_000),
        notes_turn("PLAN: read a, b, c. DONE: a and b.", 7_000),
        read_turn("c.txt", 9_000),
        text_turn("SUMMARY: read a.txt and b.txt; c.txt is next.", 1_500),
        read_turn("a.txt", 2_000),
        text_turn("Done.", 2_500),
    ]))
    .await;
    let repo = repo();
    let mut agent =
        TestAgent::start_with(&server, wire, repo.path(), ApprovalMode::Auto, |setup| {
            setup.model_info = WINDOW;
            setup.compaction = compaction();
        });
    agent.send("read the files");
    assert_eq!(agent.turn_end().await, finished());
    server.assert_no_violations();
    assert_eq!(compactions(&agent), vec![CompactionKind::Summarised]);

    let requests = server.requests();
    assert_eq!(requests.len(), 8, "the task went on after the compaction");
    let (before, after) = (&requests[4], &requests[6]);
    assert!(message_count(after) < message_count(before));
    let sent = all_text(after);
    assert_eq!(sent.matches(NOTES_HEADER).count(), 1, "{sent}");
    let summary_at = sent.find("SUMMARY: read a.txt").expect("the summary");
    let notes_at = sent.find(NOTES_HEADER).expect("the notes");
    assert!(
        summary_at < notes_at,
        "the notes follow the summary: {sent}"
    );
    assert!(
        sent[notes_at..].contains("PLAN: read a, b, c. DONE: a and b."),
        "the current notes: {sent}"
    );
    assert!(!sent.contains("DONE: nothing yet"), "{sent}");
    assert!(sent.contains("charlie"), "the newest step is whole: {sent}");
    // Later requests keep the notes without adding copies.
    assert_eq!(all_text(&requests[7]).matches(NOTES_HEADER).count(), 1);
}

async fn the_notes_file_joins_the_newest_message_after_pruning(wire: Wire) {
    let server = ScriptedServer::start(script(&[
        notes_turn("PLAN: read big, then b.", 1_000),
        read_turn("big.txt", 3_000),
        read_turn("b.txt", 8_100),
        text_turn("Done.", 2_000),
    ]))
    .await;
    let repo = repo();
    let mut agent =
        TestAgent::start_with(&server, wire, repo.path(), ApprovalMode::Auto, |setup| {
            setup.model_info = WINDOW;
            setup.compaction = compaction();
        });
    agent.send("read the files");
    assert_eq!(agent.turn_end().await, finished());
    server.assert_no_violations();
    assert_eq!(compactions(&agent), vec![CompactionKind::PrunedToolResults]);

    let requests = server.requests();
    assert_eq!(requests.len(), 4, "no summary call");
    assert!(!all_text(&requests[2]).contains(NOTES_HEADER));
    let sent = all_text(&requests[3]);
    assert!(!sent.contains("big line 250"), "pruned: {sent}");
    let notes_at = sent.find(NOTES_HEADER).expect("the notes");
    assert!(
        sent[notes_at..].contains("PLAN: read big, then b."),
        "{sent}"
    );
    assert!(
        sent.find("bravo").is_some_and(|result| result < notes_at),
        "the notes follow the newest result: {sent}"
    );
}

/// `/compact [focus]`: a summary now, well below the threshold, that keeps the focus;
/// with nothing old enough, the user is told so and nothing is sent.
async fn the_user_compacts_on_request_with_a_focus(wire: Wire) {
    let server = ScriptedServer::start(script(&[
        read_turn("a.txt", 100),
        read_turn("b.txt", 200),
        text_turn("Read both.", 300),
        text_turn("SUMMARY: a and b are read; the parser bug is next.", 100),
        text_turn("Done.", 100),
    ]))
    .await;
    let repo = repo();
    let mut agent =
        TestAgent::start_with(&server, wire, repo.path(), ApprovalMode::Auto, |setup| {
            setup.model_info = WINDOW;
            setup.compaction = compaction();
        });
    agent.handle.send(Command::Compact { focus: None }).unwrap();
    let skipped = agent
        .wait_for("the refusal", |event| {
            matches!(event, Event::CompactionSkipped { .. })
        })
        .await;
    assert!(
        matches!(&skipped, Event::CompactionSkipped { reason } if reason.contains("nothing")),
        "{skipped:?}"
    );
    assert!(server.requests().is_empty());

    agent.send("read the files");
    assert_eq!(agent.turn_end().await, finished());
    agent
        .handle
        .send(Command::Compact {
            focus: Some("the parser bug".into()),
        })
        .unwrap();
    agent
        .wait_for("the summary", |event| {
            matches!(
                event,
                Event::Compacted {
                    kind: CompactionKind::Summarised,
                    ..
                }
            )
        })
        .await;
    agent.send("go on");
    assert_eq!(agent.turn_end().await, finished());
    server.assert_no_violations();
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    let asked = all_text(&requests[3]);
    assert!(asked.contains("keep, above all: the parser bug"), "{asked}");
    let sent = all_text(&requests[4]);
    assert!(sent.contains("SUMMARY: a and b are read"), "{sent}");
    assert!(!sent.contains("Reading a.txt."), "summarised away: {sent}");
}
