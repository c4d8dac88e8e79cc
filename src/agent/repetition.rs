//! Runaway-loop detection: a model that keeps making the same call, or keeps hitting
//! the same error, is stopped instead of burning the budget.
//!
//! Owns: call fingerprints and the two rules — the same tool with the same arguments
//! [`REPEAT_LIMIT`] times in a row, or the same error [`REPEAT_LIMIT`] times in one
//! task. Does not own: ending the turn (the turn loop does, after the step's results are
//! in the conversation, so it stays valid).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::provider::{ToolCall, ToolResult};

/// How many repeats make a loop.
pub(crate) const REPEAT_LIMIT: u32 = 3;

/// Watches the calls and results of one task.
#[derive(Debug, Default)]
pub(crate) struct RepetitionGuard {
    last_call: Option<String>,
    run_length: u32,
    errors: HashMap<String, u32>,
}

impl RepetitionGuard {
    /// Records one step's calls (in the order the model made them) and their results.
    /// Returns why the task must stop, if it must.
    pub(crate) fn observe<'a>(
        &mut self,
        calls: impl IntoIterator<Item = &'a ToolCall>,
        results: impl IntoIterator<Item = &'a ToolResult>,
    ) -> Option<String> {
        let mut verdict = None;
        let mut this_step = HashSet::new();
        for call in calls {
            let fingerprint = fingerprint(call);
            // Identical calls of one response run once (see `ToolRuns`): one repeat.
            if !this_step.insert(fingerprint.clone()) {
                continue;
            }
            if self.last_call.as_ref() == Some(&fingerprint) {
                self.run_length += 1;
            } else {
                self.last_call = Some(fingerprint);
                self.run_length = 1;
            }
            if self.run_length >= REPEAT_LIMIT && verdict.is_none() {
                verdict = Some(format!(
                    "Stopped: the model called `{}` with the same arguments {} times in a row \
                     ({}). Tell it what to do differently, or rephrase the task.",
                    call.name,
                    self.run_length,
                    preview(&call.arguments)
                ));
            }
        }
        for result in results.into_iter().filter(|result| result.is_error) {
            let count = self.errors.entry(result.content.clone()).or_insert(0);
            *count += 1;
            if *count >= REPEAT_LIMIT && verdict.is_none() {
                verdict = Some(format!(
                    "Stopped: the same error came back {count} times: {}. Tell the model what \
                     to do differently, or rephrase the task.",
                    preview(first_line(&result.content))
                ));
            }
        }
        verdict
    }
}

/// The tool and its arguments, with the JSON normalised (key order, spacing) so calls
/// that differ only in formatting count as the same.
fn fingerprint(call: &ToolCall) -> String {
    let arguments = match serde_json::from_str::<Value>(&call.arguments) {
        // `serde_json::Map` keeps keys sorted, so printing it normalises the order.
        Ok(value) => value.to_string(),
        Err(_) => call.arguments.trim().to_string(),
    };
    format!("{}\u{0}{arguments}", call.name)
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

fn preview(text: &str) -> String {
    const MAX: usize = 80;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: format!("id-{arguments}"),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    fn error(content: &str) -> ToolResult {
        ToolResult {
            call_id: "x".into(),
            content: content.into(),
            is_error: true,
        }
    }

    #[test]
    fn the_third_identical_call_in_a_row_stops_the_task() {
        let mut guard = RepetitionGuard::default();
        let read = call("read", r#"{"path": "a.rs"}"#);
        assert_eq!(guard.observe([&read], []), None);
        // Same call, different key order and spacing.
        let again = call("read", r#"{ "path":"a.rs" }"#);
        assert_eq!(guard.observe([&again], []), None);
        let verdict = guard.observe([&read], []).expect("a loop");
        assert!(
            verdict.contains("`read` with the same arguments 3 times"),
            "{verdict}"
        );
        assert!(verdict.contains("a.rs"), "{verdict}");
    }

    #[test]
    fn identical_calls_in_one_response_count_once() {
        let mut guard = RepetitionGuard::default();
        let read = call("read", r#"{"path": "a.rs"}"#);
        assert_eq!(guard.observe([&read, &read, &read], []), None);
        assert_eq!(guard.observe([&read], []), None);
    }

    #[test]
    fn a_different_call_between_repeats_resets_the_run() {
        let mut guard = RepetitionGuard::default();
        let test = call("shell", r#"{"command": "cargo test"}"#);
        let edit = call("edit", r#"{"path": "a.rs"}"#);
        for _ in 0..5 {
            assert_eq!(guard.observe([&test, &edit], []), None);
        }
    }

    #[test]
    fn the_same_tool_with_other_arguments_is_not_a_loop() {
        let mut guard = RepetitionGuard::default();
        for n in 0..5 {
            let read = call("read", &format!(r#"{{"path": "{n}.rs"}}"#));
            assert_eq!(guard.observe([&read], []), None);
        }
    }

    #[test]
    fn the_third_identical_error_stops_the_task_even_when_not_in_a_row() {
        let mut guard = RepetitionGuard::default();
        let failing = error("old_string not found in a.rs\nnearest match: ...");
        assert_eq!(guard.observe([], [&failing]), None);
        assert_eq!(guard.observe([], [&error("other error")]), None);
        assert_eq!(guard.observe([], [&failing]), None);
        let verdict = guard.observe([], [&failing]).expect("a loop");
        assert!(
            verdict.contains("3 times: old_string not found in a.rs."),
            "{verdict}"
        );
    }

    #[test]
    fn successful_results_never_count() {
        let mut guard = RepetitionGuard::default();
        let ok = ToolResult {
            call_id: "x".into(),
            content: "fine".into(),
            is_error: false,
        };
        for _ in 0..5 {
            assert_eq!(guard.observe([], [&ok]), None);
        }
    }
}
