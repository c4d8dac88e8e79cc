use std::io::Write;
use std::path::Path;

use pretty_assertions::assert_eq;

use super::*;
use crate::policy::{ApprovalMode, Decision};
use crate::provider::{Block, ToolCall, ToolResult, Usage, Wire};

fn header(id: &str, workspace: &str, started_at: u64) -> Header {
    Header {
        format: FORMAT_VERSION,
        id: id.into(),
        workspace: workspace.into(),
        model: "model-x".into(),
        provider: Wire::Anthropic,
        started_at,
        duet_version: "0.1.0".into(),
    }
}

fn call(id: &str) -> Block {
    Block::ToolCall(ToolCall {
        id: id.into(),
        name: "edit".into(),
        arguments: r#"{"path": "a.txt"}"#.into(),
    })
}

fn result(id: &str, content: &str) -> ToolResult {
    ToolResult {
        call_id: id.into(),
        content: content.into(),
        is_error: false,
    }
}

fn text(text: &str) -> Block {
    Block::Text { text: text.into() }
}

/// Records `records` as session `id` in `dir` and returns the file.
fn record_session(dir: &Path, id: &str, records: &[Record]) -> std::path::PathBuf {
    let mut writer = SessionWriter::create(dir, header(id, "/work", 100));
    for record in records {
        writer.append(record).unwrap();
    }
    writer.path().to_path_buf()
}

fn append_raw(path: &Path, bytes: &str) {
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(bytes.as_bytes()).unwrap();
}

fn every_kind_of_record() -> Vec<Record> {
    vec![
        Record::User {
            text: "add sub()".into(),
        },
        Record::AssistantPart {
            blocks: vec![
                Block::Thinking {
                    thinking: "where?".into(),
                    signature: Some("sig-1".into()),
                },
                Block::RedactedThinking {
                    data: "opaque".into(),
                },
                Block::ReasoningItem {
                    item: serde_json::json!({
                        "id": "rs_1",
                        "type": "reasoning",
                        "summary": [{"type": "summary_text", "text": "where?"}],
                        "encrypted_content": "gAAAA-opaque",
                    }),
                },
                text("Editing."),
                call("c1"),
            ],
        },
        Record::Approval {
            call_id: "c1".into(),
            decision: Some(Decision::Reject {
                reason: Some("not that file".into()),
            }),
        },
        Record::ToolResult {
            result: result("c1", "edited a.txt"),
            summary: "a.txt +2 -0".into(),
        },
        Record::Step {
            assistant: vec![text("Editing."), call("c1")],
            results: vec![result("c1", "edited a.txt\n\nchecks: ok")],
        },
        Record::Usage {
            usage: Usage {
                input_tokens: 10,
                output_tokens: 2,
                cache_read_tokens: 3,
                cache_write_tokens: 4,
            },
        },
        Record::ModeChanged {
            mode: ApprovalMode::AutoEdit,
        },
        Record::TurnEnd {
            outcome: serde_json::json!({"kind": "finished", "stop_reason": "end_turn"}),
        },
        Record::Resumed {
            at: 200,
            model: "model-y".into(),
            provider: Wire::OpenAiChat,
            duet_version: "0.2.0".into(),
        },
        Record::TurnCheckpoints {
            turn: 1,
            before: "a".repeat(40),
            after: "b".repeat(40),
        },
        Record::Undone { turns: vec![1] },
        Record::Cleared,
    ]
}

#[test]
fn undoable_turns_are_the_recorded_ones_not_undone_since() {
    let dir = tempfile::tempdir().unwrap();
    let checkpoints = |turn: u32| Record::TurnCheckpoints {
        turn,
        before: format!("before-{turn}"),
        after: format!("after-{turn}"),
    };
    let path = record_session(
        dir.path(),
        "s1",
        &[
            checkpoints(1),
            checkpoints(2),
            Record::Undone { turns: vec![2] },
            checkpoints(3),
            // A clear forgets the conversation, not the files' history.
            Record::Cleared,
        ],
    );
    let session = crate::session::load(&path).unwrap();
    let turns: Vec<u32> = session.undoable.iter().map(|turn| turn.turn).collect();
    assert_eq!(turns, [1, 3]);
    assert_eq!(session.undoable[1].before, "before-3");
}

#[test]
fn every_record_and_the_header_round_trip_one_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let records = every_kind_of_record();
    let path = record_session(dir.path(), "s1", &records);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines = text.lines();
    let first: Header = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(first, header("s1", "/work", 100));
    let read: Vec<Record> = lines
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(read, records);
    assert!(text.ends_with('\n'));
}

#[test]
fn a_completed_step_replaces_its_provisional_parts() {
    let dir = tempfile::tempdir().unwrap();
    let path = record_session(
        dir.path(),
        "s1",
        &[
            Record::User {
                text: "task".into(),
            },
            Record::AssistantPart {
                blocks: vec![text("Editing."), call("c1")],
            },
            Record::ToolResult {
                result: result("c1", "edited"),
                summary: "a.txt +1".into(),
            },
            Record::Step {
                assistant: vec![text("Editing."), call("c1"), text("Done soon.")],
                results: vec![result("c1", "edited\n\nchecks: ok")],
            },
            Record::TurnEnd {
                outcome: serde_json::json!({"kind": "interrupted"}),
            },
        ],
    );
    let session = load(&path).unwrap();
    assert_eq!(
        session.changes,
        vec![
            Change::User("task".into()),
            Change::Step {
                assistant: vec![text("Editing."), call("c1"), text("Done soon.")],
                results: vec![result("c1", "edited\n\nchecks: ok")],
            },
        ]
    );
    assert_eq!(session.summaries["c1"], "a.txt +1");
    assert_eq!(session.turns, 1);
    assert_eq!(session.first_message.as_deref(), Some("task"));
}

#[test]
fn a_step_cut_short_keeps_what_was_recorded_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = record_session(
        dir.path(),
        "s1",
        &[
            Record::User {
                text: "task".into(),
            },
            Record::AssistantPart {
                blocks: vec![text("Two edits."), call("c1")],
            },
            Record::ToolResult {
                result: result("c1", "edited"),
                summary: "ok".into(),
            },
            Record::AssistantPart {
                blocks: vec![call("c2")],
            },
        ],
    );
    let cut_short = Change::Step {
        assistant: vec![text("Two edits."), call("c1"), call("c2")],
        results: vec![result("c1", "edited")],
    };
    let session = load(&path).unwrap();
    assert_eq!(session.changes[1], cut_short);
    assert_eq!(session.turns, 1);

    // A resumed process closes that step before its own records follow.
    let mut writer = SessionWriter::resume(
        &path,
        Record::Resumed {
            at: 300,
            model: "m".into(),
            provider: Wire::Anthropic,
            duet_version: "0.1.0".into(),
        },
    );
    writer
        .append(&Record::User {
            text: "continue".into(),
        })
        .unwrap();
    writer
        .append(&Record::Step {
            assistant: vec![text("Continuing.")],
            results: Vec::new(),
        })
        .unwrap();
    let session = load(&path).unwrap();
    assert_eq!(
        session.changes,
        vec![
            Change::User("task".into()),
            cut_short,
            Change::User("continue".into()),
            Change::Step {
                assistant: vec![text("Continuing.")],
                results: Vec::new(),
            },
        ]
    );
    assert_eq!(session.turns, 2);
}

#[test]
fn a_clear_forgets_the_conversation_but_not_the_first_message() {
    let dir = tempfile::tempdir().unwrap();
    let path = record_session(
        dir.path(),
        "s1",
        &[
            Record::User { text: "old".into() },
            Record::Step {
                assistant: vec![text("Old answer.")],
                results: Vec::new(),
            },
            Record::Cleared,
            Record::User { text: "new".into() },
        ],
    );
    let session = load(&path).unwrap();
    assert_eq!(session.changes, vec![Change::User("new".into())]);
    assert_eq!(session.first_message.as_deref(), Some("old"));
}

#[test]
fn a_compaction_replaces_the_changes_before_it_and_later_ones_follow() {
    let dir = tempfile::tempdir().unwrap();
    let compacted = vec![crate::provider::Message::user_text(
        "Summary: a.txt was edited.",
    )];
    let path = record_session(
        dir.path(),
        "s1",
        &[
            Record::User { text: "old".into() },
            Record::Step {
                assistant: vec![text("Old answer.")],
                results: Vec::new(),
            },
            Record::Compacted {
                messages: compacted.clone(),
            },
            Record::Step {
                assistant: vec![text("Continuing.")],
                results: Vec::new(),
            },
        ],
    );
    let session = load(&path).unwrap();
    assert_eq!(
        session.changes,
        vec![
            Change::Compacted(compacted),
            Change::Step {
                assistant: vec![text("Continuing.")],
                results: Vec::new(),
            },
        ]
    );
    assert_eq!(session.first_message.as_deref(), Some("old"));
    assert_eq!(session.turns, 1);
}

#[test]
fn a_torn_last_line_is_skipped_and_cut_off_before_appending() {
    let dir = tempfile::tempdir().unwrap();
    let path = record_session(
        dir.path(),
        "s1",
        &[Record::User {
            text: "task".into(),
        }],
    );
    append_raw(&path, r#"{"kind":"step","assistant":[{"type":"te"#);

    let session = load(&path).unwrap();
    assert_eq!(session.changes, vec![Change::User("task".into())]);

    let mut writer = SessionWriter::resume(
        &path,
        Record::Resumed {
            at: 1,
            model: "m".into(),
            provider: Wire::Anthropic,
            duet_version: "0.1.0".into(),
        },
    );
    writer
        .append(&Record::User {
            text: "more".into(),
        })
        .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains(r#"{"type":"te"#), "{text}");
    assert_eq!(text.lines().count(), 4, "{text}");
    assert_eq!(
        load(&path).unwrap().changes,
        vec![Change::User("task".into()), Change::User("more".into())]
    );
}

#[test]
fn unknown_kinds_and_bad_lines_are_skipped_and_new_fields_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let path = record_session(
        dir.path(),
        "s1",
        &[Record::ModeChanged {
            mode: ApprovalMode::Ask,
        }],
    );
    append_raw(
        &path,
        concat!(
            r#"{"kind":"user","text":"task","mood":"cheerful"}"#,
            "\n",
            r#"{"kind":"hologram","frames":3}"#,
            "\n",
            "not json at all\n",
            r#"{"kind":"user","text":42}"#,
            "\n\n",
            r#"{"kind":"user","text":"second"}"#,
            "\n",
        ),
    );
    let session = load(&path).unwrap();
    assert_eq!(
        session.changes,
        vec![Change::User("task".into()), Change::User("second".into())]
    );
}

#[test]
fn a_file_that_is_not_a_session_or_too_new_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let error = load(&empty).unwrap_err().to_string();
    assert!(error.contains("not a duet session"), "{error}");

    let foreign = dir.path().join("foreign.jsonl");
    std::fs::write(&foreign, "{\"hello\": 1}\n").unwrap();
    let error = load(&foreign).unwrap_err().to_string();
    assert!(error.contains("bad header"), "{error}");

    let newer = dir.path().join("newer.jsonl");
    let mut future = serde_json::to_value(header("n", "/w", 1)).unwrap();
    future["duet_session"] = serde_json::json!(FORMAT_VERSION + 1);
    std::fs::write(&newer, format!("{future}\n")).unwrap();
    let error = load(&newer).unwrap_err().to_string();
    assert!(error.contains("newer duet"), "{error}");

    let error = load(&dir.path().join("missing.jsonl")).unwrap_err();
    assert!(matches!(error, SessionError::Read { .. }), "{error}");
}

#[test]
fn nothing_recorded_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let writer = SessionWriter::create(dir.path(), header("s1", "/w", 1));
    assert!(!writer.path().exists());
    drop(writer);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn an_unwritable_directory_fails_once_then_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // A directory under a regular file cannot be made, even by root.
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "x").unwrap();
    let mut writer = SessionWriter::create(&blocker.join("sessions"), header("s1", "/w", 1));
    let first = writer.append(&Record::User { text: "a".into() });
    assert!(
        matches!(first, Err(SessionError::Write { .. })),
        "{first:?}"
    );
    assert!(writer.append(&Record::User { text: "b".into() }).is_ok());
    assert!(!writer.path().exists());
}

#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_fails_once_then_writes_nothing() {
    // /dev/full accepts the open and fails every write with ENOSPC.
    let mut writer = SessionWriter::resume(Path::new("/dev/full"), Record::Cleared);
    let first = writer.append(&Record::User { text: "a".into() });
    let Err(SessionError::Write { source, .. }) = first else {
        panic!("expected a write error, got {first:?}");
    };
    assert_eq!(source.raw_os_error(), Some(28), "{source}");
    assert!(writer.append(&Record::User { text: "b".into() }).is_ok());
}

#[test]
fn listing_is_newest_first_filters_by_workspace_and_reports_unreadable_files() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = [
        ("100-1", "/a", 100),
        ("300-1", "/b", 300),
        ("200-1", "/a", 200),
    ];
    for (id, workspace, started_at) in sessions {
        let mut writer = SessionWriter::create(dir.path(), header(id, workspace, started_at));
        writer
            .append(&Record::User {
                text: format!("task of {id}\nsecond line"),
            })
            .unwrap();
    }
    std::fs::write(dir.path().join("junk.jsonl"), "nope\n").unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not a session\n").unwrap();

    let listing = list(dir.path()).unwrap();
    let ids: Vec<&str> = listing
        .sessions
        .iter()
        .map(|info| info.session.header.id.as_str())
        .collect();
    assert_eq!(ids, ["300-1", "200-1", "100-1"]);
    assert_eq!(listing.unreadable.len(), 1);

    let mine = listing.in_workspace(Path::new("/a"));
    let ids: Vec<&str> = mine
        .sessions
        .iter()
        .map(|info| info.session.header.id.as_str())
        .collect();
    assert_eq!(ids, ["200-1", "100-1"]);

    let table = table(&mine.sessions);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines,
        [
            "ID     STARTED (UTC)     TURNS  MODEL    WORKSPACE  FIRST MESSAGE",
            "200-1  1970-01-01 00:03  1      model-x  /a         task of 200-1",
            "100-1  1970-01-01 00:01  1      model-x  /a         task of 100-1",
        ]
    );
}

#[test]
fn a_missing_directory_lists_nothing_and_find_accepts_only_ids() {
    let dir = tempfile::tempdir().unwrap();
    assert!(list(&dir.path().join("none")).unwrap().sessions.is_empty());
    record_session(dir.path(), "100-1", &[Record::User { text: "t".into() }]);
    assert_eq!(
        find(dir.path(), "100-1"),
        Some(path_for(dir.path(), "100-1"))
    );
    assert_eq!(find(dir.path(), "100-2"), None);
    assert_eq!(find(dir.path(), "../sessions/100-1"), None);
    assert_eq!(find(dir.path(), ""), None);
}
