use std::io::Write;

use super::Printer;
use crate::agent::Event;

/// One JSON object per event, one per line, exactly as the agent emits them.
pub(super) struct JsonlPrinter;

impl Printer for JsonlPrinter {
    fn print(&mut self, event: &Event, out: &mut dyn Write) -> std::io::Result<()> {
        serde_json::to_writer(&mut *out, event)?;
        out.write_all(b"\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            serde_json::json!({"type": "text_delta", "text": "a\nb"})
        );
        assert_eq!(
            lines[1],
            serde_json::json!({"type": "tool_run_begin", "call_id": "c1"})
        );
    }
}
