//! Approval of edits through the agent's command channel, against the scripted server:
//! approve, reject with a reason, a stale proposal, interrupt withdrawing a proposal, a
//! mode switch releasing it, and headless `ask` runs with and without `--yes`.

use duet::agent::protocol::ApprovalView;
use duet::agent::{Command, Event, TurnOutcome};
use duet::policy::{ApprovalMode, Decision};
use duet::provider::{StopReason, Wire};
use pretty_assertions::assert_eq;

use crate::common::harness::{TestAgent, TestRepo, run_duet, tool_results, wire_env};
use crate::common::script::{LoadScript, Script};
use crate::common::scripted_server::ScriptedServer;

const ORIGINAL: &str = "alpha\nbeta\n";

async fn start_edit(wire: Wire) -> (ScriptedServer, TestRepo, TestAgent) {
    let server = ScriptedServer::start(Script::load("edit_alpha")).await;
    let repo = TestRepo::with_files(&[("a.txt", ORIGINAL)]);
    let agent = TestAgent::start(&server, wire, repo.path(), ApprovalMode::Ask);
    agent.send("capitalize alpha");
    (server, repo, agent)
}

for_each_wire!(
    an_approved_edit_lands,
    a_rejected_edit_leaves_the_file_and_tells_the_model_why,
    a_subset_of_hunks_lands_exactly,
);

async fn an_approved_edit_lands(wire: Wire) {
    let (server, repo, mut agent) = start_edit(wire).await;
    let (call_id, view) = agent.approval_needed().await;
    let ApprovalView::Edit {
        path,
        before,
        after,
        diff,
        ..
    } = view
    else {
        panic!("expected an edit approval, got {view:?}");
    };
    assert_eq!(path, "a.txt");
    assert_eq!(before.as_deref(), Some(ORIGINAL));
    assert_eq!(after, "ALPHA\nbeta\n");
    assert!(diff.contains("-alpha\n+ALPHA\n"), "{diff}");
    assert_eq!(
        repo.read("a.txt"),
        ORIGINAL,
        "nothing lands before approval"
    );

    agent.decide(&call_id, Decision::Approve);
    assert_eq!(
        agent.turn_end().await,
        TurnOutcome::Finished {
            stop_reason: StopReason::EndTurn
        }
    );
    assert_eq!(repo.read("a.txt"), "ALPHA\nbeta\n");
    agent.position("the approval closing", |e| {
        matches!(
            e,
            Event::ApprovalClosed {
                decision: Some(Decision::Approve),
                ..
            }
        )
    });
    let results = tool_results(&server.requests()[1]);
    assert!(!results[0].is_error, "{:?}", results[0]);
    server.assert_no_violations();
}

async fn a_rejected_edit_leaves_the_file_and_tells_the_model_why(wire: Wire) {
    let (server, repo, mut agent) = start_edit(wire).await;
    let (call_id, _) = agent.approval_needed().await;
    agent.decide(
        &call_id,
        Decision::Reject {
            reason: Some("keep it lowercase, it is a Greek letter".into()),
        },
    );
    agent.turn_end().await;
    assert_eq!(repo.read("a.txt"), ORIGINAL);
    let results = tool_results(&server.requests()[1]);
    assert!(results[0].is_error);
    assert!(
        results[0]
            .content
            .contains("keep it lowercase, it is a Greek letter"),
        "{}",
        results[0].content
    );
    server.assert_no_violations();
}

async fn a_subset_of_hunks_lands_exactly(wire: Wire) {
    let lines: Vec<String> = (1..=20)
        .map(|n| match n {
            2 | 18 => format!("line {n} foo"),
            _ => format!("line {n}"),
        })
        .collect();
    let original = lines.join("\n") + "\n";
    let server = ScriptedServer::start(Script::load("edit_two_places")).await;
    let repo = TestRepo::with_files(&[("b.txt", &original)]);
    let mut agent = TestAgent::start(&server, wire, repo.path(), ApprovalMode::Ask);
    agent.send("shout foo");
    let (call_id, view) = agent.approval_needed().await;
    let ApprovalView::Edit { hunks, .. } = view else {
        panic!("expected an edit approval");
    };
    assert_eq!(hunks.len(), 2, "{hunks:#?}");
    agent.decide(
        &call_id,
        Decision::ApproveHunks {
            hunks: vec![hunks[0].id.clone()],
            reason: Some("leave the footer alone".into()),
        },
    );
    agent.turn_end().await;

    let expected = original.replacen("line 2 foo", "line 2 FOO", 1);
    assert_eq!(
        repo.read("b.txt"),
        expected,
        "original plus the accepted hunk only"
    );
    let results = tool_results(&server.requests()[1]);
    let report = &results[0];
    assert!(!report.is_error, "part of the edit landed: {report:?}");
    for needle in [
        hunks[0].id.to_string(),
        hunks[1].id.to_string(),
        "leave the footer alone".to_string(),
    ] {
        assert!(
            report.content.contains(&needle),
            "{needle} not in {}",
            report.content
        );
    }
    server.assert_no_violations();
}

#[tokio::test]
async fn a_file_changed_while_the_proposal_waited_is_not_overwritten() {
    let (server, repo, mut agent) = start_edit(Wire::Anthropic).await;
    let (call_id, _) = agent.approval_needed().await;
    std::fs::write(repo.path().join("a.txt"), "alpha\nbeta\ngamma\n").unwrap();
    agent.decide(&call_id, Decision::Approve);
    agent.turn_end().await;
    assert_eq!(repo.read("a.txt"), "alpha\nbeta\ngamma\n");
    let results = tool_results(&server.requests()[1]);
    assert!(results[0].is_error);
    assert!(
        results[0].content.contains("changed on disk"),
        "{}",
        results[0].content
    );
    server.assert_no_violations();
}

#[tokio::test]
async fn interrupt_withdraws_a_waiting_proposal() {
    let (server, repo, mut agent) = start_edit(Wire::Anthropic).await;
    let (call_id, _) = agent.approval_needed().await;
    agent.interrupt();
    assert_eq!(agent.turn_end().await, TurnOutcome::Interrupted);
    agent.position(
        "the withdrawal",
        |e| matches!(e, Event::ApprovalClosed { call_id: id, decision: None } if *id == call_id),
    );
    assert_eq!(repo.read("a.txt"), ORIGINAL);

    // A late decision changes nothing, and the next message continues a valid conversation.
    agent.decide(&call_id, Decision::Approve);
    agent.send("never mind");
    agent.turn_end().await;
    assert_eq!(repo.read("a.txt"), ORIGINAL);
    let results = tool_results(&server.requests()[1]);
    assert_eq!(results.len(), 1);
    assert!(results[0].is_error);
    server.assert_no_violations();
}

#[tokio::test]
async fn switching_to_auto_applies_what_waits() {
    let (server, repo, mut agent) = start_edit(Wire::OpenAiChat).await;
    agent.approval_needed().await;
    agent
        .handle
        .send(Command::SetMode {
            mode: ApprovalMode::Auto,
        })
        .unwrap();
    agent.turn_end().await;
    assert_eq!(repo.read("a.txt"), "ALPHA\nbeta\n");
    agent.position("the mode change", |e| {
        matches!(
            e,
            Event::ModeChanged {
                mode: ApprovalMode::Auto
            }
        )
    });
    server.assert_no_violations();
}

async fn exec_ask(extra: &[&str]) -> (ScriptedServer, TestRepo, std::process::Output) {
    let server = ScriptedServer::start(Script::load("edit_alpha")).await;
    let repo = TestRepo::with_files(&[("a.txt", ORIGINAL)]);
    let home = tempfile::tempdir().unwrap();
    let mut args = vec!["exec", "--approval", "ask"];
    args.extend_from_slice(extra);
    args.push("capitalize alpha");
    let env = wire_env(&server, Wire::Anthropic);
    let output = run_duet(repo.path(), home.path(), &env, &args).await;
    (server, repo, output)
}

#[tokio::test]
async fn headless_ask_refuses_because_no_one_can_approve() {
    let (server, repo, output) = exec_ask(&[]).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert_eq!(repo.read("a.txt"), ORIGINAL);
    assert!(stdout.contains("? approve edit a.txt?"), "{stdout}");
    let results = tool_results(&server.requests()[1]);
    assert!(results[0].is_error);
    assert!(
        results[0]
            .content
            .contains("no one to approve in headless mode"),
        "{}",
        results[0].content
    );
    server.assert_no_violations();
}

#[tokio::test]
async fn headless_ask_with_yes_approves() {
    let (server, repo, output) = exec_ask(&["--yes"]).await;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert_eq!(repo.read("a.txt"), "ALPHA\nbeta\n");
    server.assert_no_violations();
}
