//! What a case's `duet exec --json` run showed: its events, one JSON object per line.
//!
//! Owns: reading the events an eval needs (model calls, usage, the shell commands the
//! model asked for, failed edits, how the turn ended) from the JSONL stream.
//! Does not own: the event format (`agent::protocol::Event`, read back as it is) or
//! what the figures mean for the verdict ([`super::score`]).
//! Invariant: a line that is not one of these events (or not JSON) is skipped, never
//! fatal: the run's figures are as complete as the stream is.

use std::collections::HashMap;

use crate::agent::Event;
use crate::provider::Usage;

/// The figures of one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Transcript {
    /// Model calls of the task.
    pub steps: u32,
    /// The session's usage, all calls (summaries and explorations too).
    pub usage: Usage,
    pub cost_usd: Option<f64>,
    /// Every shell command the model asked to run, in order.
    pub shell_commands: Vec<String>,
    /// Edit calls that ended in an error.
    pub failed_edits: u32,
    /// How the turn ended (`finished`, `budget_exhausted`, ...), if it did.
    pub outcome: Option<String>,
}

/// Reads the figures from a run's standard output.
pub fn read(jsonl: &str) -> Transcript {
    let mut transcript = Transcript::default();
    // Calls by id → tool name, for the results that follow.
    let mut names: HashMap<String, String> = HashMap::new();
    for line in jsonl.lines() {
        // The line's `schema_version` (and `turn`, where the event has none) is not one
        // of the event's fields: ignored.
        let Ok(event) = serde_json::from_str::<Event>(line) else {
            continue;
        };
        match event {
            Event::StepStarted { .. } => transcript.steps += 1,
            Event::ToolCallReady {
                call_id,
                name,
                info,
                ..
            } => {
                if let Some(command) = info.command {
                    transcript.shell_commands.push(command);
                }
                names.insert(call_id, name);
            }
            Event::ToolRunEnd {
                call_id,
                is_error: true,
                ..
            } if names.get(&call_id).is_some_and(|name| name == "edit") => {
                transcript.failed_edits += 1;
            }
            Event::Usage {
                session,
                session_cost_usd,
                ..
            } => {
                transcript.usage = session;
                transcript.cost_usd = session_cost_usd;
            }
            Event::TurnEnd { outcome, .. } => transcript.outcome = Some(outcome.kind().to_string()),
            _ => {}
        }
    }
    transcript
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::agent::{Event, TurnOutcome};
    use crate::provider::StopReason;

    fn line(event: &Event) -> String {
        serde_json::to_string(event).unwrap()
    }

    fn usage(input: u64, output: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        }
    }

    #[test]
    fn the_figures_come_from_the_agents_own_events() {
        let ready = |id: &str, name: &str, arguments: &str| Event::ToolCallReady {
            call_id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
            info: crate::tools::Registry::core().describe(name, arguments),
        };
        let end = |id: &str, is_error: bool| Event::ToolRunEnd {
            call_id: id.into(),
            is_error,
            summary: String::new(),
            output: String::new(),
            checks: None,
        };
        let events = [
            Event::StepStarted { turn: 1, step: 1 },
            ready("c1", "shell", r#"{"command": "pytest -k add"}"#),
            ready("c2", "edit", r#"{"path": "a.py"}"#),
            ready("c3", "write", r#"{"path": "b.py"}"#),
            end("c1", false),
            end("c2", true),
            end("c3", true),
            Event::Usage {
                call: usage(100, 10),
                session: usage(100, 10),
                session_cost_usd: None,
                context_used: None,
            },
            Event::StepStarted { turn: 1, step: 2 },
            Event::Usage {
                call: usage(150, 5),
                session: usage(250, 15),
                session_cost_usd: Some(0.5),
                context_used: None,
            },
            Event::TurnEnd {
                turn: 1,
                outcome: TurnOutcome::Finished {
                    stop_reason: StopReason::EndTurn,
                },
            },
        ];
        let mut jsonl: Vec<String> = events.iter().map(line).collect();
        jsonl.insert(3, "not an event".into());
        let transcript = read(&jsonl.join("\n"));
        assert_eq!(
            transcript,
            Transcript {
                steps: 2,
                usage: usage(250, 15),
                cost_usd: Some(0.5),
                shell_commands: vec!["pytest -k add".into()],
                failed_edits: 1,
                outcome: Some("finished".into()),
            }
        );
    }
}
