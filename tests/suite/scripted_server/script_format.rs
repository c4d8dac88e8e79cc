//! Loading scripts: the documented format, its defaults, and clear errors.

use std::num::NonZeroUsize;
use std::time::Duration;

use pretty_assertions::assert_eq;

use crate::common::script::{
    LoadScript, Script, ScriptUsage, StatusTurn, Step, StopReason, StreamTurn, Turn,
};

fn chunk(size: usize) -> Option<NonZeroUsize> {
    NonZeroUsize::new(size)
}

#[test]
fn the_example_script_loads_as_documented() {
    let script = Script::load("sdk_stream_check");

    let expected = [Turn::Stream(StreamTurn {
        steps: vec![
            Step::Thinking {
                thinking: "The user wants two files read.".into(),
                signature: Some("sig-scripted-1".into()),
                chunk: chunk(7),
            },
            Step::Text {
                text: "Reading both files → then I'll summarise.".into(),
                chunk: chunk(5),
            },
            Step::Pause(Duration::from_millis(30)),
            Step::Tool {
                name: "read".into(),
                id: None,
                args: r#"{"path": "src/a.rs", "limit": 40}"#.into(),
                chunk: chunk(3),
                cut_after_chunks: None,
            },
            Step::Tool {
                name: "read".into(),
                id: Some("custom_call_2".into()),
                args: r#"{"path": "notes/é.txt"}"#.into(),
                chunk: chunk(4),
                cut_after_chunks: None,
            },
        ],
        stop: StopReason::ToolUse,
        usage: ScriptUsage {
            input: 120,
            output: 45,
            cache_read: 30,
            cache_write: 10,
        },
        cut_after_blocks: None,
        terminal_event: true,
        pace: None,
    })];
    assert_eq!(script.turns(), expected);
}

#[test]
fn omitted_keys_take_their_documented_defaults() {
    let script = Script::from_toml(
        r#"
        [[turn]]
        blocks = [{ text = "done" }, { gate = "g" }, { tool = "glob" }]

        [[turn]]
        blocks = [{ text = "bye" }]

        [[turn]]
        status = 429
        "#,
    )
    .unwrap();

    let expected = [
        Turn::Stream(StreamTurn {
            steps: vec![
                Step::Text {
                    text: "done".into(),
                    chunk: None,
                },
                Step::Gate("g".into()),
                Step::Tool {
                    name: "glob".into(),
                    id: None,
                    args: "{}".into(),
                    chunk: None,
                    cut_after_chunks: None,
                },
            ],
            stop: StopReason::ToolUse,
            usage: ScriptUsage::default(),
            cut_after_blocks: None,
            terminal_event: true,
            pace: None,
        }),
        Turn::Stream(StreamTurn {
            steps: vec![Step::Text {
                text: "bye".into(),
                chunk: None,
            }],
            stop: StopReason::EndTurn,
            usage: ScriptUsage::default(),
            cut_after_blocks: None,
            terminal_event: true,
            pace: None,
        }),
        Turn::Status(StatusTurn {
            status: 429,
            retry_after: None,
            message: None,
        }),
    ];
    assert_eq!(script.turns(), expected);
}

#[test]
fn mistakes_in_a_script_are_reported_with_their_place() {
    let cases = [
        (
            "[[turn]]\nblocks = [{ text = 'a', tool = 'read' }]",
            "turn 1, block 1: a block has exactly one kind, but this one has text and tool",
        ),
        (
            "[[turn]]\nblocks = [{ chunk = 3 }]",
            "turn 1, block 1: a block needs exactly one of text, thinking, redacted_thinking, tool, error, pause_ms, gate",
        ),
        (
            "[[turn]]\nblocks = [{ text = 'a' }, { gate = 'g', chunk = 2 }]",
            "turn 1, block 2: `chunk` does not apply to a `gate` block",
        ),
        (
            "[[turn]]\nblocks = [{ text = 'a', signature = 's' }]",
            "turn 1, block 1: `signature` does not apply to a `text` block",
        ),
        (
            "[[turn]]\nblocks = [{ text = 'a', chunk = 0 }]",
            "turn 1, block 1: `chunk` must be at least 1",
        ),
        (
            "[[turn]]\nblocks = [{ text = 'a' }]\n[[turn]]\nstatus = 200",
            "turn 2: status 200 is not an HTTP error (400..=599)",
        ),
        (
            "[[turn]]\nstatus = 529\nblocks = [{ text = 'a' }]",
            "turn 1: a `status` turn answers with an error, so `blocks` does not apply",
        ),
        (
            "[[turn]]\nstatus = 529\npace_ms = 5",
            "turn 1: a `status` turn answers with an error, so `pace_ms` does not apply",
        ),
        (
            "[[turn]]\nretry_after = 3\nblocks = [{ text = 'a' }]",
            "turn 1: `retry_after` and `message` only apply to a `status` turn",
        ),
        (
            "[[turn]]\ncut_after_blocks = 2\nblocks = [{ text = 'a' }, { pause_ms = 5 }]",
            "turn 1: cut_after_blocks = 2, but the turn has only 1 content block(s)",
        ),
        (
            "[[turn]]\nblocks = [{ tool = 'a', id = 'x' }, { tool = 'b', id = 'x' }]",
            "turn 1: tool id `x` is used twice in one turn",
        ),
        (
            "[[turn]]\nblocks = [{ tool = 'read', args = '{}', chunk = 1, cut_after_chunks = 2 }]",
            "turn 1, block 1: cut_after_chunks = 2 must be less than the call's 2 argument fragment(s)",
        ),
        (
            "[[turn]]\nblocks = [{ error = 'overloaded_error' }, { text = 'after' }]",
            "turn 1: block 1 ends the stream, so it must be the last block",
        ),
        (
            "[[turn]]\ncut_after_blocks = 1\nblocks = [{ text = 'a' }, { error = 'api_error' }]",
            "turn 1: `cut_after_blocks` cannot be combined with a block that ends the stream",
        ),
        (
            "[[turn]]\nblocks = [{ text = 'a', message = 'm' }]",
            "turn 1, block 1: `message` does not apply to a `text` block",
        ),
    ];
    for (toml, expected) in cases {
        let error = Script::from_toml(toml).expect_err(toml);
        assert_eq!(error.to_string(), expected, "script:\n{toml}");
    }
}

#[test]
fn faults_load_as_the_last_block() {
    let script = Script::from_toml(
        r#"
        [[turn]]
        blocks = [{ text = "a" }, { tool = "write", args = '{"path": "x"}', chunk = 4, cut_after_chunks = 2 }]

        [[turn]]
        blocks = [{ error = "overloaded_error", message = "Overloaded" }]
        "#,
    )
    .unwrap();
    let Turn::Stream(cut) = &script.turns()[0] else {
        panic!("a stream turn");
    };
    assert_eq!(
        cut.steps[1],
        Step::Tool {
            name: "write".into(),
            id: None,
            args: r#"{"path": "x"}"#.into(),
            chunk: chunk(4),
            cut_after_chunks: Some(2),
        }
    );
    let Turn::Stream(failed) = &script.turns()[1] else {
        panic!("a stream turn");
    };
    assert_eq!(
        failed.steps,
        [Step::StreamError {
            kind: "overloaded_error".into(),
            message: "Overloaded".into()
        }]
    );
}

#[test]
fn unknown_keys_are_rejected_not_ignored() {
    for toml in [
        "[[turn]]\nblocks = [{ text = 'a', split = 3 }]",
        "[[turn]]\nblocks = []\nstopp = 'end_turn'",
        "[[turn]]\nusage = { inputs = 3 }",
        "[[turn]]\nstop = 'finished'",
        "[[turns]]\nblocks = []",
    ] {
        let error = Script::from_toml(toml).expect_err(toml);
        assert!(
            matches!(error, crate::common::script::ScriptError::Toml(_)),
            "{toml}: {error}"
        );
    }
}
