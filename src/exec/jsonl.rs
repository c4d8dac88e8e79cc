//! `duet exec --json`: one JSON object per event, one per line, as the agent emits
//! them, each stamped with the schema version and, inside a turn, the turn's number.
//!
//! Owns: the line format and [`SCHEMA_VERSION`]. Does not own: the events themselves
//! ([`crate::agent::protocol`]).
//! Invariant: every line is one object with `schema_version` and `type`; every line
//! from a `turn_started` to its `turn_end` (both included) has that turn's number as
//! `turn`, once, and no other line has one. A line holds no
//! control character a terminal would act on: serde escapes C0 controls (ESC included)
//! in strings, and [`TerminalSafe`] escapes DEL and the C1 controls (an 8-bit CSI is
//! U+009B) it leaves raw, so the stream is safe to print on a terminal as it is.

use std::io::Write;

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter};

use super::Printer;
use crate::agent::Event;

/// The version of the `--json` line format; raised when the shape of events changes.
/// README's "duet exec" section says what changed in each version.
pub const SCHEMA_VERSION: u32 = 2;

/// One line: the event's own fields beside the version and the turn.
#[derive(Serialize)]
struct Line<'a> {
    schema_version: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    turn: Option<u32>,
    #[serde(flatten)]
    event: &'a Event,
}

/// The JSON Schema of one `--json` line, for `duet exec --json-schema` and the file
/// shipped beside README ([`SCHEMA_FILE`]).
pub fn schema() -> serde_json::Value {
    /// What a line holds, as the schema describes it: the version beside the event.
    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct DuetExecJsonLine {
        /// The line format's version ([`SCHEMA_VERSION`]).
        schema_version: u32,
        /// The turn the event belongs to: present on every line from `turn_started` to
        /// its `turn_end`, both included, and on no other.
        turn: Option<u32>,
        #[serde(flatten)]
        event: Event,
    }
    serde_json::to_value(schemars::schema_for!(DuetExecJsonLine)).unwrap_or(serde_json::Value::Null)
}

/// Where the schema is kept in the repository, relative to its root.
pub const SCHEMA_FILE: &str = "assets/exec-json-schema.json";

/// Prints lines, keeping the number of the turn in progress: the agent sends a turn's
/// events in order between its `TurnStarted` and its `TurnEnd`.
#[derive(Default)]
pub(super) struct JsonlPrinter {
    turn: Option<u32>,
}

impl Printer for JsonlPrinter {
    fn print(&mut self, event: &Event, out: &mut dyn Write) -> std::io::Result<()> {
        if let Event::TurnStarted { turn } = event {
            self.turn = Some(*turn);
        }
        let line = Line {
            schema_version: SCHEMA_VERSION,
            // An event that names its turn carries the field itself.
            turn: self.turn.filter(|_| event.turn().is_none()),
            event,
        };
        if let Event::TurnEnd { .. } = event {
            self.turn = None;
        }
        let mut serializer = serde_json::Serializer::with_formatter(&mut *out, TerminalSafe);
        line.serialize(&mut serializer)?;
        out.write_all(b"\n")
    }
}

/// serde_json's compact format, with DEL and C1 controls inside strings written as
/// `\u` escapes instead of raw: the same JSON to a parser, inert on a terminal.
struct TerminalSafe;

impl Formatter for TerminalSafe {
    fn write_string_fragment<W>(&mut self, writer: &mut W, fragment: &str) -> std::io::Result<()>
    where
        W: ?Sized + Write,
    {
        let mut start = 0;
        for (at, c) in fragment.char_indices() {
            if matches!(c, '\u{7f}'..='\u{9f}') {
                CompactFormatter.write_string_fragment(writer, &fragment[start..at])?;
                write!(writer, "\\u{:04x}", u32::from(c))?;
                start = at + c.len_utf8();
            }
        }
        CompactFormatter.write_string_fragment(writer, &fragment[start..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::TurnOutcome;
    use crate::provider::StopReason;

    /// The lines one printer prints for `events`, in order.
    fn print_all(events: &[Event]) -> Vec<String> {
        let mut printer = JsonlPrinter::default();
        events
            .iter()
            .map(|event| {
                let mut out = Vec::new();
                printer.print(event, &mut out).unwrap();
                String::from_utf8(out).unwrap()
            })
            .collect()
    }

    #[test]
    fn the_readme_examples_are_what_duet_prints() {
        let readme = include_str!("../../README.md");
        let (_, block) = readme.split_once("```jsonl\n").unwrap();
        let (block, _) = block.split_once("```").unwrap();
        let documented: Vec<serde_json::Value> = block
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        let call_id = || "c1".to_string();
        let events = [
            Event::TurnStarted { turn: 1 },
            Event::UserMessageDelivered {
                id: 1,
                text: "what does calc.py do?".into(),
            },
            Event::StepStarted { turn: 1, step: 1 },
            Event::TextDelta {
                text: "Let me read it.".into(),
            },
            Event::ToolCallReady {
                call_id: call_id(),
                name: "read".into(),
                arguments: r#"{"path":"calc.py"}"#.into(),
                info: crate::tools::Registry::core().describe("read", r#"{"path":"calc.py"}"#),
            },
            Event::ToolRunBegin { call_id: call_id() },
            Event::ToolRunEnd {
                call_id: call_id(),
                is_error: false,
                summary: "read calc.py (2 lines)".into(),
                output: "1\tdef add(a, b):\n2\t    return a + b\n".into(),
                checks: None,
            },
            Event::TurnEnd {
                turn: 1,
                outcome: TurnOutcome::Finished {
                    stop_reason: StopReason::EndTurn,
                },
            },
        ];
        let printed: Vec<serde_json::Value> = print_all(&events)
            .iter()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(documented, printed);
    }

    #[test]
    fn every_line_of_a_turn_names_it_once_and_no_other_line_does() {
        let server_ready = || Event::McpServer {
            server: "fs".into(),
            state: crate::mcp::ServerState::Starting,
        };
        let events = [
            server_ready(),
            Event::TurnStarted { turn: 4 },
            Event::StepStarted { turn: 4, step: 1 },
            Event::TextDelta { text: "hi".into() },
            server_ready(),
            Event::TurnEnd {
                turn: 4,
                outcome: TurnOutcome::Interrupted,
            },
            server_ready(),
            Event::TurnStarted { turn: 5 },
            Event::TextDelta {
                text: "again".into(),
            },
        ];
        let turns: Vec<Option<u64>> = print_all(&events)
            .iter()
            .map(|line| {
                // serde_json keeps the last of two equal keys: count them in the text.
                assert!(line.matches(r#""turn":"#).count() <= 1, "{line}");
                let value: serde_json::Value = serde_json::from_str(line).unwrap();
                value["turn"].as_u64()
            })
            .collect();
        assert_eq!(
            turns,
            [
                None,
                Some(4),
                Some(4),
                Some(4),
                Some(4),
                Some(4),
                None,
                Some(5),
                Some(5)
            ]
        );
    }

    #[test]
    fn each_event_is_one_line_of_tagged_json() {
        let mut out = Vec::new();
        let mut printer = JsonlPrinter::default();
        printer
            .print(
                &Event::TextDelta {
                    text: "a\nb".into(),
                },
                &mut out,
            )
            .unwrap();
        printer
            .print(
                &Event::ToolRunBegin {
                    call_id: "c1".into(),
                },
                &mut out,
            )
            .unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(
            lines[0],
            serde_json::json!({"schema_version": 2, "type": "text_delta", "text": "a\nb"})
        );
        assert_eq!(
            lines[1],
            serde_json::json!({"schema_version": 2, "type": "tool_run_begin", "call_id": "c1"})
        );
    }

    #[test]
    fn no_control_character_reaches_the_terminal_raw() {
        let hostile = "\x1b]52;c;cm0gLXJmIH4=\x07 \u{9b}2K \u{9d}0;t\u{9c} \x7f é";
        let event = Event::TextDelta {
            text: hostile.into(),
        };
        let mut out = Vec::new();
        JsonlPrinter::default().print(&event, &mut out).unwrap();
        let line = String::from_utf8(out).unwrap();
        assert!(line.trim_end().chars().all(|c| !c.is_control()), "{line:?}");
        assert!(line.contains("\\u001b]52;c;"), "{line}");
        assert!(line.contains("\\u009b2K"), "{line}");
        // The same text to a JSON reader.
        let parsed: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(parsed["text"], hostile);
    }

    /// The schema file shipped in the repository is the one duet generates: a change of
    /// the events shows in review as a change of this file. `DUET_BLESS=1 cargo test`
    /// rewrites it.
    #[test]
    fn the_shipped_schema_is_the_generated_one() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(SCHEMA_FILE);
        let generated = serde_json::to_string_pretty(&schema()).expect("schema") + "\n";
        if std::env::var_os("DUET_BLESS").is_some() {
            std::fs::write(&path, &generated).expect("write the schema");
        }
        let shipped = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            shipped == generated,
            "{SCHEMA_FILE} is not what duet generates: run `DUET_BLESS=1 cargo test \
             the_shipped_schema` and review the change"
        );
        // Every event type is in it.
        for kind in [
            "tool_call_ready",
            "turn_end",
            "conversation_restored",
            "mcp_server",
        ] {
            assert!(generated.contains(&format!("\"{kind}\"")), "{kind}");
        }
    }
}
