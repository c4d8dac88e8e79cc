//! `duet exec --json`: one JSON object per event, one per line, as the agent emits
//! them, each stamped with the schema version.
//!
//! Owns: the line format and [`SCHEMA_VERSION`]. Does not own: the events themselves
//! ([`crate::agent::protocol`]).
//! Invariant: every line is one object with `schema_version` and `type`, and holds no
//! control character a terminal would act on: serde escapes C0 controls (ESC included)
//! in strings, and [`TerminalSafe`] escapes DEL and the C1 controls (an 8-bit CSI is
//! U+009B) it leaves raw, so the stream is safe to print on a terminal as it is.

use std::io::Write;

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter};

use super::Printer;
use crate::agent::Event;

/// The version of the `--json` line format; raised when a field or event type changes
/// meaning or goes away (new event types and fields keep it).
pub const SCHEMA_VERSION: u32 = 1;

/// One line: the event's own fields beside the version.
#[derive(Serialize)]
struct Line<'a> {
    schema_version: u32,
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
        #[serde(flatten)]
        event: Event,
    }
    serde_json::to_value(schemars::schema_for!(DuetExecJsonLine)).unwrap_or(serde_json::Value::Null)
}

/// Where the schema is kept in the repository, relative to its root.
pub const SCHEMA_FILE: &str = "assets/exec-json-schema.json";

pub(super) struct JsonlPrinter;

impl Printer for JsonlPrinter {
    fn print(&mut self, event: &Event, out: &mut dyn Write) -> std::io::Result<()> {
        let line = Line {
            schema_version: SCHEMA_VERSION,
            event,
        };
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

    fn printed(event: &Event) -> serde_json::Value {
        let mut out = Vec::new();
        JsonlPrinter.print(event, &mut out).unwrap();
        serde_json::from_slice(&out).unwrap()
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
            Event::UserMessageDelivered {
                id: 1,
                text: "what does calc.py do?".into(),
            },
            Event::StepStarted { step: 1 },
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
            },
            Event::TurnEnd {
                outcome: TurnOutcome::Finished {
                    stop_reason: StopReason::EndTurn,
                },
            },
        ];
        let printed: Vec<_> = events.iter().map(printed).collect();
        assert_eq!(documented, printed);
    }

    #[test]
    fn each_event_is_one_line_of_tagged_json() {
        let mut out = Vec::new();
        let mut printer = JsonlPrinter;
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
            serde_json::json!({"schema_version": 1, "type": "text_delta", "text": "a\nb"})
        );
        assert_eq!(
            lines[1],
            serde_json::json!({"schema_version": 1, "type": "tool_run_begin", "call_id": "c1"})
        );
    }

    #[test]
    fn no_control_character_reaches_the_terminal_raw() {
        let hostile = "\x1b]52;c;cm0gLXJmIH4=\x07 \u{9b}2K \u{9d}0;t\u{9c} \x7f é";
        let event = Event::TextDelta {
            text: hostile.into(),
        };
        let mut out = Vec::new();
        JsonlPrinter.print(&event, &mut out).unwrap();
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
