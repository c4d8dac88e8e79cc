//! Sessions. Through the real binary: a run killed with SIGKILL mid-turn leaves an
//! intact transcript, `duet exec --resume` continues it with the conversation the model
//! saw (pairing valid, the edit kept), and `duet sessions` lists what was recorded.
//! In process: a resumed session sends byte for byte the request an uninterrupted one
//! would, and a transcript that cannot be written is reported once without stopping duet.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use duet::agent::{Command, Event, TurnOutcome};
use duet::policy::ApprovalMode;
use duet::provider::{StopReason, Wire};
use duet::session::{self, FORMAT_VERSION, Header, Record, SessionWriter};
use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::common::harness::{
    TestAgent, TestRepo, all_text, duet_command, run_duet, tool_results, wire_env,
};
use crate::common::script::{LoadScript, Script};
use crate::common::scripted_server::ScriptedServer;

const CALC: &str = "def add(a, b):\n    return a + b\n";
const CALC_WITH_SUB: &str =
    "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n";
const TASK: &str = "add sub(a, b) to calc.py";
/// Longest wait for the killed run to record its tool result.
const RECORD_WAIT: Duration = Duration::from_secs(10);

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn sessions_dir(home: &Path) -> PathBuf {
    home.join("state").join("duet").join("sessions")
}

/// The one transcript under `home`, and its session id.
fn only_transcript(home: &Path) -> (PathBuf, String) {
    let files: Vec<PathBuf> = std::fs::read_dir(sessions_dir(home))
        .expect("sessions dir")
        .map(|entry| entry.expect("dir entry").path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let path = files[0].clone();
    let id = path.file_stem().unwrap().to_string_lossy().into_owned();
    (path, id)
}

/// Waits until a transcript under `home` holds a line containing `needle`.
async fn wait_for_record(home: &Path, needle: &str) {
    let deadline = tokio::time::Instant::now() + RECORD_WAIT;
    loop {
        let recorded = std::fs::read_dir(sessions_dir(home))
            .into_iter()
            .flatten()
            .flatten()
            .any(|entry| {
                std::fs::read_to_string(entry.path()).is_ok_and(|text| text.contains(needle))
            });
        if recorded {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no transcript recorded {needle} within {RECORD_WAIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every line of a transcript, parsed; fails on a line that is not JSON.
fn transcript_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("read transcript");
    assert!(text.ends_with('\n'), "torn last line:\n{text}");
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

fn kinds(lines: &[Value]) -> Vec<&str> {
    lines
        .iter()
        .filter_map(|line| line["kind"].as_str())
        .collect()
}

#[tokio::test]
async fn a_run_killed_mid_turn_resumes_with_its_conversation_and_its_edit() {
    let server = ScriptedServer::start(Script::load("edit_then_stall")).await;
    let repo = TestRepo::with_files(&[("calc.py", CALC)]);
    let home = tempfile::tempdir().unwrap();
    let env = wire_env(&server, Wire::Anthropic);

    let mut killed = duet_command(
        repo.path(),
        home.path(),
        &env,
        &["exec", "--approval", "auto", TASK],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .expect("spawn duet");
    server.wait_for_gate("hold").await;
    wait_for_record(home.path(), r#""kind":"tool_result""#).await;
    killed.start_kill().expect("SIGKILL duet");
    let status = killed.wait().await.expect("wait for duet");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
    assert_eq!(repo.read("calc.py"), CALC_WITH_SUB);

    let (path, id) = only_transcript(home.path());
    let lines = transcript_lines(&path);
    assert_eq!(lines[0]["duet_session"], 1);
    assert_eq!(lines[0]["id"], id.as_str());
    assert_eq!(kinds(&lines), ["user", "assistant_part", "tool_result"]);
    let part = &lines[2]["blocks"];
    assert_eq!(part[0]["text"], "Adding sub() below add().");
    assert_eq!(part[1]["type"], "tool_call");

    let listed = run_duet(repo.path(), home.path(), &env, &["sessions"]).await;
    assert_eq!(listed.status.code(), Some(0), "{}", text(&listed.stderr));
    let listing = text(&listed.stdout);
    let row = listing
        .lines()
        .find(|line| line.starts_with(&id))
        .unwrap_or_else(|| panic!("{id} not listed:\n{listing}"));
    assert!(row.contains(TASK), "{row}");
    assert!(row.contains(&repo.path().canonicalize().unwrap().display().to_string()));

    let resumed = run_duet(
        repo.path(),
        home.path(),
        &env,
        &["exec", "--approval", "auto", "--resume", &id, "continue"],
    )
    .await;
    let stdout = text(&resumed.stdout);
    assert_eq!(
        resumed.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{}",
        text(&resumed.stderr)
    );
    assert!(
        stdout.contains(&format!("resumed session {id}")),
        "{stdout}"
    );
    assert!(stdout.contains("sub() is in place"), "{stdout}");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(messages.len(), 3, "{messages:#?}");
    assert_eq!(messages[0]["role"], "user");
    assert!(messages[0].to_string().contains(TASK));
    assert_eq!(messages[1]["role"], "assistant");
    let call = messages[1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|block| block["type"] == "tool_use")
        .expect("the edit call");
    assert_eq!(call["name"], "edit");
    let results = tool_results(&requests[1]);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].call_id, call["id"].as_str().unwrap());
    assert!(!results[0].is_error, "{:?}", results[0]);
    assert!(all_text(&requests[1]).contains("continue"));
    server.assert_no_violations();
    assert_eq!(repo.read("calc.py"), CALC_WITH_SUB);

    // The resumed run appended to the same transcript.
    let (_, same_id) = only_transcript(home.path());
    assert_eq!(same_id, id);
    let kinds_after: Vec<String> = kinds(&transcript_lines(&path))
        .into_iter()
        .map(str::to_string)
        .collect();
    assert_eq!(
        kinds_after[3..5],
        ["resumed".to_string(), "user".to_string()]
    );
    assert_eq!(kinds_after.last().map(String::as_str), Some("turn_end"));
}

#[tokio::test]
async fn resume_without_an_id_continues_the_workspace_last_session() {
    let server = ScriptedServer::start(Script::load("two_answers")).await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let home = tempfile::tempdir().unwrap();
    let env = wire_env(&server, Wire::OpenAiChat);

    let nothing = run_duet(
        repo.path(),
        home.path(),
        &env,
        &["exec", "--resume", "again"],
    )
    .await;
    assert_eq!(nothing.status.code(), Some(2));
    assert!(
        text(&nothing.stderr).contains("no session to resume"),
        "{}",
        text(&nothing.stderr)
    );

    let first = run_duet(repo.path(), home.path(), &env, &["exec", "first task"]).await;
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let second = run_duet(
        repo.path(),
        home.path(),
        &env,
        &["exec", "--resume", "second task"],
    )
    .await;
    assert_eq!(second.status.code(), Some(0), "{}", text(&second.stderr));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let roles: Vec<&str> = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|message| message["role"].as_str())
        .filter(|role| *role != "system")
        .collect();
    // The OpenAI wire sends the environment block as a user message of its own, last.
    assert_eq!(roles, ["user", "assistant", "user", "user"]);
    let sent = all_text(&requests[1]);
    for needle in ["first task", "The first answer.", "second task"] {
        assert!(sent.contains(needle), "missing {needle:?} in:\n{sent}");
    }
    server.assert_no_violations();

    let unknown = run_duet(
        repo.path(),
        home.path(),
        &env,
        &["exec", "--resume", "1-2", "third task"],
    )
    .await;
    assert_eq!(unknown.status.code(), Some(2));
    let stderr = text(&unknown.stderr);
    assert!(stderr.contains("no session `1-2`"), "{stderr}");
    assert!(stderr.contains("duet sessions"), "{stderr}");

    // Listing needs no model configuration, and is per workspace unless --all.
    let (_, id) = only_transcript(home.path());
    let elsewhere = tempfile::tempdir().unwrap();
    let no_env: &[(&str, &str)] = &[];
    let here = run_duet(repo.path(), home.path(), no_env, &["sessions"]).await;
    assert_eq!(here.status.code(), Some(0), "{}", text(&here.stderr));
    let listing = text(&here.stdout);
    let row = listing.lines().find(|line| line.starts_with(&id)).unwrap();
    let columns: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(columns[3], "2", "two turns: {row}");
    assert!(row.contains("first task"), "{row}");
    let other = run_duet(elsewhere.path(), home.path(), no_env, &["sessions"]).await;
    assert!(
        text(&other.stdout).starts_with("No sessions in"),
        "{}",
        text(&other.stdout)
    );
    let all = run_duet(
        elsewhere.path(),
        home.path(),
        no_env,
        &["sessions", "--all"],
    )
    .await;
    assert!(text(&all.stdout).contains(&id), "{}", text(&all.stdout));
}

/// Starts an agent that continues the session recorded at `path`, as `duet --resume`
/// does: the recorded conversation restored, new records appended to the same file.
pub(crate) fn resume_recorded(
    server: &ScriptedServer,
    wire: Wire,
    workspace: &Path,
    path: &Path,
) -> TestAgent {
    let recorded = session::load(path).expect("a readable transcript");
    let resumed = Record::Resumed {
        at: 2,
        model: "scripted-model".into(),
        provider: wire,
        duet_version: "test".into(),
    };
    TestAgent::start_with(server, wire, workspace, ApprovalMode::Auto, |setup| {
        setup.transcript = Some(SessionWriter::resume(path, resumed));
        setup.resume = Some(recorded);
    })
}

pub(crate) fn header(id: &str, workspace: &Path) -> Header {
    Header {
        format: FORMAT_VERSION,
        id: id.into(),
        workspace: workspace.display().to_string(),
        model: "scripted-model".into(),
        provider: Wire::Anthropic,
        started_at: 1,
        duet_version: "test".into(),
    }
}

fn finished() -> TurnOutcome {
    TurnOutcome::Finished {
        stop_reason: StopReason::EndTurn,
    }
}

/// On both wires that send reasoning back: Anthropic's signed thinking and the
/// Responses reasoning items survive the transcript byte for byte.
#[tokio::test]
async fn a_resumed_session_sends_exactly_what_an_uninterrupted_one_would() {
    resumed_equals_uninterrupted(Wire::Anthropic, "toolu_t1_1").await;
}

#[tokio::test]
async fn a_resumed_responses_session_sends_exactly_what_an_uninterrupted_one_would() {
    resumed_equals_uninterrupted(Wire::OpenAiResponses, "call_t1_1").await;
}

async fn resumed_equals_uninterrupted(wire: Wire, call_id: &str) {
    let repo = TestRepo::with_files(&[("a.txt", "hello\n")]);

    let live_server = ScriptedServer::start(Script::load("think_read_answer")).await;
    let mut live = TestAgent::start(&live_server, wire, repo.path(), ApprovalMode::Auto);
    live.send("what is in a.txt?");
    assert_eq!(live.turn_end().await, finished());
    live.send("and now?");
    assert_eq!(live.turn_end().await, finished());

    let server = ScriptedServer::start(Script::load("think_read_answer")).await;
    let dir = tempfile::tempdir().unwrap();
    let writer = SessionWriter::create(dir.path(), header("1-1", repo.path()));
    let path = writer.path().to_path_buf();
    let mut first =
        TestAgent::start_with(&server, wire, repo.path(), ApprovalMode::Auto, |setup| {
            setup.transcript = Some(writer);
        });
    first.send("what is in a.txt?");
    assert_eq!(first.turn_end().await, finished());
    first.handle.send(Command::Shutdown).unwrap();

    let mut second = resume_recorded(&server, wire, repo.path(), &path);
    let restored = second
        .wait_for("the restored conversation", |event| {
            matches!(event, Event::ConversationRestored { .. })
        })
        .await;
    let Event::ConversationRestored {
        messages,
        summaries,
        ..
    } = restored
    else {
        unreachable!("wait_for returned a non-matching event");
    };
    assert_eq!(messages.len(), 4, "{messages:#?}");
    assert!(summaries.contains_key(call_id), "{summaries:?}");
    second.send("and now?");
    assert_eq!(second.turn_end().await, finished());
    // Turns are numbered in the session, and a resumed session counts on.
    assert_eq!(turn_numbers(&live.seen), [1, 1, 1, 2, 2, 2]);
    assert_eq!(turn_numbers(&first.seen), [1, 1, 1]);
    assert_eq!(turn_numbers(&second.seen), [2, 2, 2]);

    let live_requests = live_server.requests();
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[2].body, live_requests[2].body);
    assert!(
        requests[2].body.to_string().contains("sig-read"),
        "the signed thinking or reasoning item goes back"
    );
    server.assert_no_violations();
    live_server.assert_no_violations();
}

/// The turn each turn-start, step-start (the first of each turn) and turn-end names, in
/// the order they came.
fn turn_numbers(seen: &[Event]) -> Vec<u32> {
    seen.iter()
        .filter(|event| {
            matches!(
                event,
                Event::TurnStarted { .. }
                    | Event::StepStarted { step: 1, .. }
                    | Event::TurnEnd { .. }
            )
        })
        .filter_map(Event::turn)
        .collect()
}

#[tokio::test]
async fn a_transcript_that_cannot_be_written_is_reported_once_and_duet_goes_on() {
    let server = ScriptedServer::start(Script::load("read_round_trip")).await;
    let repo = TestRepo::with_files(&[("notes.txt", "hello\n")]);
    let blocker = tempfile::NamedTempFile::new().unwrap();
    // A directory cannot be made under a regular file, whoever runs the test.
    let writer =
        SessionWriter::create(&blocker.path().join("sessions"), header("1-1", repo.path()));
    let mut agent = TestAgent::start_with(
        &server,
        Wire::Anthropic,
        repo.path(),
        ApprovalMode::Auto,
        |setup| setup.transcript = Some(writer),
    );
    agent.send("read the notes");
    assert_eq!(agent.turn_end().await, finished());
    let warnings: Vec<&Event> = agent
        .seen
        .iter()
        .filter(|event| matches!(event, Event::TranscriptUnsaved { .. }))
        .collect();
    assert_eq!(warnings.len(), 1, "{:#?}", agent.seen);
    assert!(agent.streamed_text().contains("The notes say hello."));
    server.assert_no_violations();
}
