//! Undo and changes made behind the model's back, through the agent's command channel
//! against the scripted server: an approved edit undone to the exact original bytes
//! (and the model told), an undo refused because the user changed the file since, a
//! file created by a shell command undone, and a stale read noticed and refused.

use duet::agent::protocol::{CheckpointStage, UndoScope};
use duet::agent::{Command, Event};
use duet::policy::{ApprovalMode, Decision};
use duet::provider::Wire;
use duet::session::{self, Change, SessionWriter};
use pretty_assertions::assert_eq;

use crate::common::harness::{TestAgent, TestRepo, last_user_text, tool_results};
use crate::common::script::{LoadScript, Script};
use crate::common::scripted_server::ScriptedServer;
use crate::suite::sessions::{header, resume_recorded};

/// CRLF line endings and no final newline: undo must give back these exact bytes.
const ORIGINAL: &str = "alpha\r\nbeta";

impl TestAgent {
    fn undo(&self, scope: UndoScope) {
        self.handle
            .send(Command::Undo { scope })
            .expect("agent alive");
    }

    /// Waits for the answer to an undo: the files restored, or the refusal's message.
    async fn undo_answer(&mut self) -> Result<Vec<String>, String> {
        let answer = self
            .wait_for("the undo's answer", |e| {
                matches!(e, Event::Undone { .. } | Event::UndoFailed { .. })
            })
            .await;
        match answer {
            Event::Undone { files, .. } => Ok(files),
            Event::UndoFailed { message } => Err(message),
            _ => unreachable!("wait_for returned a non-matching event"),
        }
    }
}

/// Runs the edit turn of `undo_edit`, approved, and returns once it has ended.
async fn edited(wire: Wire) -> (ScriptedServer, TestRepo, TestAgent) {
    let server = ScriptedServer::start(Script::load("undo_edit")).await;
    let repo = TestRepo::with_files(&[("a.txt", ORIGINAL)]);
    let mut agent = TestAgent::start(&server, wire, repo.path(), ApprovalMode::Ask);
    agent.send("capitalize alpha");
    let (call_id, _) = agent.approval_needed().await;
    agent.decide(&call_id, Decision::Approve);
    agent.turn_end().await;
    assert_eq!(repo.read("a.txt"), "ALPHA\r\nbeta");
    (server, repo, agent)
}

for_each_wire!(an_approved_edit_is_undone_to_the_exact_bytes_and_the_model_is_told);

async fn an_approved_edit_is_undone_to_the_exact_bytes_and_the_model_is_told(wire: Wire) {
    let (server, repo, mut agent) = edited(wire).await;
    let stages: Vec<CheckpointStage> = agent
        .seen
        .iter()
        .filter_map(|e| match e {
            Event::CheckpointTaken { turn: 1, stage, .. } => Some(*stage),
            _ => None,
        })
        .collect();
    assert_eq!(stages, [CheckpointStage::Before, CheckpointStage::After]);
    let before = agent.position("the before-checkpoint", |e| {
        matches!(
            e,
            Event::CheckpointTaken {
                stage: CheckpointStage::Before,
                ..
            }
        )
    });
    let run = agent.position("the edit running", |e| {
        matches!(e, Event::ToolRunEnd { .. })
    });
    assert!(before < run, "the snapshot precedes the change");

    agent.undo(UndoScope::LastTurn);
    assert_eq!(agent.undo_answer().await, Ok(vec!["a.txt".to_string()]));
    let bytes = std::fs::read(repo.path().join("a.txt")).expect("a.txt");
    assert_eq!(bytes, ORIGINAL.as_bytes());

    agent.undo(UndoScope::LastTurn);
    let message = agent.undo_answer().await.expect_err("nothing left to undo");
    assert!(message.contains("nothing to undo"), "{message}");

    agent.send("what happened?");
    agent.turn_end().await;
    let note = last_user_text(&server.requests()[2]);
    assert!(
        note.contains(
            "The user undid the changes of your most recent turn that changed files: a.txt"
        ),
        "{note}"
    );
    assert!(note.contains("what happened?"), "{note}");
    server.assert_no_violations();
}

#[tokio::test]
async fn the_undo_note_is_recorded_so_a_resumed_session_keeps_it() {
    let server = ScriptedServer::start(Script::load("undo_edit")).await;
    let repo = TestRepo::with_files(&[("a.txt", ORIGINAL)]);
    let dir = tempfile::tempdir().expect("sessions dir");
    let writer = SessionWriter::create(dir.path(), header("1-1", repo.path()));
    let path = writer.path().to_path_buf();
    let mut agent = TestAgent::start_with(
        &server,
        Wire::Anthropic,
        repo.path(),
        ApprovalMode::Auto,
        |setup| setup.transcript = Some(writer),
    );
    agent.send("capitalize alpha");
    agent.turn_end().await;
    agent.undo(UndoScope::LastTurn);
    assert_eq!(agent.undo_answer().await, Ok(vec!["a.txt".to_string()]));

    let changes = session::load(&path).expect("transcript").changes;
    assert!(
        matches!(changes.last(), Some(Change::User(note)) if note.starts_with("The user undid")),
        "{changes:#?}"
    );
    server.assert_no_violations();
}

#[tokio::test]
async fn a_resumed_session_undoes_a_turn_of_the_process_before_it() {
    let server = ScriptedServer::start(Script::load("undo_edit")).await;
    let repo = TestRepo::with_files(&[("a.txt", ORIGINAL)]);
    let dir = tempfile::tempdir().expect("sessions dir");
    let writer = SessionWriter::create(dir.path(), header("1-1", repo.path()));
    let path = writer.path().to_path_buf();
    let mut first = TestAgent::start_with(
        &server,
        Wire::Anthropic,
        repo.path(),
        ApprovalMode::Auto,
        |setup| setup.transcript = Some(writer),
    );
    first.send("capitalize alpha");
    first.turn_end().await;
    first.handle.send(Command::Shutdown).expect("agent alive");
    assert_eq!(repo.read("a.txt"), "ALPHA\r\nbeta");

    let recorded = session::load(&path).expect("transcript");
    assert_eq!(recorded.undoable.len(), 1, "{:?}", recorded.undoable);
    let mut second = resume_recorded(&server, Wire::Anthropic, repo.path(), &path);
    second.undo(UndoScope::LastTurn);
    assert_eq!(second.undo_answer().await, Ok(vec!["a.txt".to_string()]));
    let bytes = std::fs::read(repo.path().join("a.txt")).expect("a.txt");
    assert_eq!(bytes, ORIGINAL.as_bytes());
    // The undo is recorded too: the session has nothing left to undo.
    assert_eq!(session::load(&path).expect("transcript").undoable, []);
    server.assert_no_violations();
}

#[tokio::test]
async fn undo_is_refused_when_the_user_changed_the_file_after_the_turn() {
    let (server, repo, mut agent) = edited(Wire::Anthropic).await;
    std::fs::write(repo.path().join("a.txt"), "the user's own version\n").expect("write");
    agent.undo(UndoScope::All);
    let message = agent.undo_answer().await.expect_err("refused");
    assert!(
        message.contains("Nothing was undone: a.txt changed"),
        "{message}"
    );
    assert_eq!(repo.read("a.txt"), "the user's own version\n");
    server.assert_no_violations();
}

#[tokio::test]
async fn a_file_created_by_a_shell_command_is_undone() {
    let server = ScriptedServer::start(Script::load("shell_command")).await;
    let repo = TestRepo::with_files(&[("a.txt", "kept\n")]);
    let mut agent = TestAgent::start(&server, Wire::Anthropic, repo.path(), ApprovalMode::Auto);
    agent.send("make a file");
    agent.turn_end().await;
    assert!(repo.path().join("made.txt").exists());

    agent.undo(UndoScope::LastTurn);
    assert_eq!(agent.undo_answer().await, Ok(vec!["made.txt".to_string()]));
    assert!(!repo.path().join("made.txt").exists());
    assert_eq!(repo.read("a.txt"), "kept\n");
    server.assert_no_violations();
}

#[tokio::test]
async fn a_file_changed_after_the_model_read_it_is_reported_and_stale_edits_are_refused() {
    let server = ScriptedServer::start(Script::load("stale_read")).await;
    let repo = TestRepo::with_files(&[("a.txt", "alpha\nbeta\n")]);
    let mut agent = TestAgent::start(&server, Wire::Anthropic, repo.path(), ApprovalMode::Auto);
    agent.send("change alpha");
    // The second request has left (its response waits at the gate), so the change
    // below can only be reported with the third.
    server.wait_for_gate("user-edited").await;
    let users = "alpha\nbeta\ngamma from the user\n";
    std::fs::write(repo.path().join("a.txt"), users).expect("write");
    server.release("user-edited");
    agent.turn_end().await;

    let requests = server.requests();
    let note = last_user_text(&requests[2]);
    assert!(
        note.contains("This file changed on disk since you last read it") && note.contains("a.txt"),
        "{note}"
    );
    let results = tool_results(&requests[3]);
    let edit = results.last().expect("the edit's result");
    assert!(edit.is_error, "{edit:?}");
    assert!(
        edit.content
            .contains("`a.txt` changed on disk since you read it"),
        "{}",
        edit.content
    );
    assert!(
        !last_user_text(&requests[3]).contains("since you last read it"),
        "the change is reported once"
    );
    assert_eq!(repo.read("a.txt"), users);
    server.assert_no_violations();
}
