//! `duet exec`'s transcript for people: streamed text as it comes, one line per tool
//! call with its result under it, edits as diffs.
//!
//! Owns: the line layout and colours of the human format. Does not own: the events
//! ([`crate::agent::protocol`]) or deciding approvals (`super::Approvals`).
//! Invariant: the only escape sequences written are this printer's own colours: every
//! text from an event (the model's, a tool's, the repository's) passes through
//! [`crate::terminal_text`] first — streamed text through a [`Sanitizer`] that outlives
//! one delta, so a sequence split between two deltas is caught — and a command or path
//! put up for approval has its hidden characters written out (`⟨U+202E⟩`).

use std::collections::HashMap;
use std::io::Write;

use super::Printer;
use crate::agent::protocol::{ApprovalView, user_command_call_id};
use crate::agent::wording;
use crate::agent::{Event, TurnOutcome};
use crate::mcp::ServerState;
use crate::provider::Usage;
use crate::terminal_text::{Sanitizer, reveal_plain, sanitize};

/// Longest argument preview on a tool line.
const ARGS_PREVIEW_CHARS: usize = 160;
/// Lines of an error result shown under its tool line.
const ERROR_PREVIEW_LINES: usize = 4;

#[derive(Clone, Copy)]
enum Style {
    Dim,
    Green,
    Red,
    Cyan,
    Yellow,
}

impl Style {
    fn code(self) -> &'static str {
        match self {
            Style::Dim => "\x1b[2m",
            Style::Green => "\x1b[32m",
            Style::Red => "\x1b[31m",
            Style::Cyan => "\x1b[36m",
            Style::Yellow => "\x1b[33m",
        }
    }
}

/// A transcript for people: streamed text as it comes, one line per tool call with its
/// result under it, edits as diffs.
pub(super) struct HumanPrinter {
    color: bool,
    at_line_start: bool,
    in_thinking: bool,
    usage: Usage,
    /// The model's streamed text, thinking, and each call's live output: cleaned as
    /// streams, so that control split across deltas is caught whole.
    text: Sanitizer,
    thinking: Sanitizer,
    outputs: HashMap<String, Sanitizer>,
}

impl HumanPrinter {
    pub(super) fn new(color: bool) -> Self {
        Self {
            color,
            at_line_start: true,
            in_thinking: false,
            usage: Usage::default(),
            text: Sanitizer::default(),
            thinking: Sanitizer::default(),
            outputs: HashMap::new(),
        }
    }

    /// A stream that `event` does not continue is over: what its sanitizer still holds
    /// back (a cut-off sequence, shown as a placeholder) is written. Bookkeeping events
    /// that print nothing (usage, checkpoints) end nothing.
    fn end_streams(&mut self, event: &Event, out: &mut dyn Write) -> std::io::Result<()> {
        if matches!(event, Event::Usage { .. } | Event::CheckpointTaken { .. }) {
            return Ok(());
        }
        if !matches!(event, Event::TextDelta { .. }) {
            let rest = self.text.finish();
            if !rest.is_empty() {
                self.stream(out, &rest)?;
            }
        }
        if !matches!(event, Event::ThinkingDelta { .. }) {
            let rest = self.thinking.finish();
            if !rest.is_empty() {
                let rest = self.paint(Style::Dim, &rest);
                self.stream(out, &rest)?;
            }
        }
        if let Event::ToolRunEnd { call_id, .. } = event
            && let Some(mut output) = self.outputs.remove(call_id)
        {
            let rest = output.finish();
            if !rest.is_empty() {
                self.tool_output(out, &rest)?;
            }
        }
        Ok(())
    }

    fn paint(&self, style: Style, text: &str) -> String {
        if self.color {
            format!("{}{text}\x1b[0m", style.code())
        } else {
            text.to_string()
        }
    }

    /// Writes streamed text, remembering whether the cursor is at a line start.
    fn stream(&mut self, out: &mut dyn Write, text: &str) -> std::io::Result<()> {
        if let Some(last) = text.chars().last() {
            self.at_line_start = last == '\n';
        }
        out.write_all(text.as_bytes())
    }

    /// Starts a line of its own, ending any streamed text first.
    fn line(&mut self, out: &mut dyn Write, text: &str) -> std::io::Result<()> {
        if !self.at_line_start {
            out.write_all(b"\n")?;
        }
        self.in_thinking = false;
        self.at_line_start = true;
        writeln!(out, "{text}")
    }

    /// Live tool output, each line marked as output so it cannot pass for the model's.
    fn tool_output(&mut self, out: &mut dyn Write, text: &str) -> std::io::Result<()> {
        if self.in_thinking {
            self.line(out, "")?;
        }
        for piece in text.split_inclusive('\n') {
            if self.at_line_start {
                let bar = self.paint(Style::Dim, "  │ ");
                out.write_all(bar.as_bytes())?;
            }
            self.stream(out, piece)?;
        }
        Ok(())
    }

    fn diff(&mut self, out: &mut dyn Write, diff: &str) -> std::io::Result<()> {
        for line in diff.lines() {
            let style = match line.chars().next() {
                Some('+') if !line.starts_with("+++") => Some(Style::Green),
                Some('-') if !line.starts_with("---") => Some(Style::Red),
                Some('@') => Some(Style::Cyan),
                _ => None,
            };
            let text = match style {
                Some(style) => self.paint(style, line),
                None => line.to_string(),
            };
            self.line(out, &format!("    {text}"))?;
        }
        Ok(())
    }
}

impl HumanPrinter {
    /// The question, then a line per risky part of a command and per protected path.
    fn approval(
        &mut self,
        out: &mut dyn Write,
        why: &str,
        request: &ApprovalView,
    ) -> std::io::Result<()> {
        let (what, details) = match request {
            ApprovalView::Edit { path, .. } => (format!("edit {}", reveal_plain(path)), Vec::new()),
            ApprovalView::ExternalTool {
                server,
                tool,
                arguments,
            } => (
                format!(
                    "MCP tool `{}` of server `{}`",
                    reveal_plain(tool),
                    reveal_plain(server)
                ),
                vec![format!("arguments: {}", reveal_plain(&preview(arguments)))],
            ),
            ApprovalView::Command {
                command,
                class,
                reasons,
                ..
            } => (
                format!("{class} command `{}`", reveal_plain(command)),
                reasons
                    .iter()
                    .map(|reason| {
                        format!("{}: {}", reason.class, reveal_plain(&reason.to_string()))
                    })
                    .collect(),
            ),
        };
        let why = sanitize(why);
        let line = self.paint(Style::Cyan, &format!("  ? approve {what}? ({why})"));
        self.line(out, &line)?;
        let protections = request
            .protected_paths()
            .iter()
            .map(|protection| reveal_plain(&protection.to_string()).into_owned());
        for detail in details.into_iter().chain(protections) {
            let detail = self.paint(Style::Dim, &format!("    · {detail}"));
            self.line(out, &detail)?;
        }
        Ok(())
    }
}

impl Printer for HumanPrinter {
    fn print(&mut self, event: &Event, out: &mut dyn Write) -> std::io::Result<()> {
        self.end_streams(event, out)?;
        match event {
            Event::SessionStarted {
                model,
                workspace,
                instructions,
                mode,
                sandbox,
                hooks,
            } => {
                for line in
                    wording::session_header(model, *mode, workspace, instructions, sandbox, hooks)
                {
                    let line = self.paint(Style::Dim, &sanitize(&line));
                    self.line(out, &line)?;
                }
                for gap in sandbox.gaps() {
                    let gap = self.paint(Style::Red, &format!("  {gap}"));
                    self.line(out, &gap)?;
                }
            }
            Event::UserMessageDelivered { text, .. } => {
                let text = sanitize(text);
                let mut lines = text.lines();
                let first = lines.next().unwrap_or_default();
                self.line(out, &format!("› {first}"))?;
                for rest in lines {
                    self.line(out, &format!("  {rest}"))?;
                }
            }
            Event::TextDelta { text } => {
                if self.in_thinking {
                    self.line(out, "")?;
                }
                let text = self.text.push(text).into_owned();
                self.stream(out, &text)?;
            }
            Event::ThinkingDelta { text } => {
                if !self.in_thinking {
                    let label = self.paint(Style::Dim, "thinking:");
                    self.line(out, &label)?;
                    self.in_thinking = true;
                }
                let text = self.thinking.push(text).into_owned();
                if !text.is_empty() {
                    let text = self.paint(Style::Dim, &text);
                    self.stream(out, &text)?;
                }
            }
            Event::ToolCallReady { info, .. } => {
                let call = format!("→ {}", info.summary);
                let call = self.paint(Style::Cyan, &sanitize(&call));
                self.line(out, &call)?;
            }
            Event::ToolRunEnd {
                is_error: false,
                summary,
                checks,
                ..
            } => {
                let mark = self.paint(Style::Green, "✓");
                self.line(out, &format!("  {mark} {}", sanitize(summary)))?;
                // The verdict of the checks after a write; the model got the details.
                if let Some(report) = checks {
                    let verdict = report.lines().next().unwrap_or_default();
                    let style = if crate::lint::is_clean_report(report) {
                        Style::Dim
                    } else {
                        Style::Yellow
                    };
                    let verdict = self.paint(style, &sanitize(verdict));
                    self.line(out, &format!("    {verdict}"))?;
                }
            }
            Event::ToolRunEnd {
                is_error: true,
                output,
                ..
            } => {
                let mark = self.paint(Style::Red, "✗");
                let output = sanitize(output);
                for (index, text) in output.lines().take(ERROR_PREVIEW_LINES).enumerate() {
                    let lead = if index == 0 { &mark } else { " " };
                    self.line(out, &format!("  {lead} {text}"))?;
                }
            }
            Event::EditProposed { diff, .. } => self.diff(out, &sanitize(diff))?,
            Event::ToolOutputDelta { call_id, text } => {
                let text = self
                    .outputs
                    .entry(call_id.clone())
                    .or_default()
                    .push(text)
                    .into_owned();
                self.tool_output(out, &text)?;
            }
            Event::HookNotice {
                hook_event,
                hook,
                text,
                warning,
            } => {
                let style = if *warning { Style::Yellow } else { Style::Dim };
                let text = wording::hook_notice_line(hook_event, hook, text);
                let line = self.paint(style, &sanitize(&text));
                self.line(out, &line)?;
            }
            Event::CommandWaitingForInput { program, line, .. } => {
                let text = wording::waiting_for_input_line(program, line);
                let line = self.paint(Style::Yellow, &sanitize(&format!("  ⌨ {text}")));
                self.line(out, &line)?;
            }
            Event::ImagesAttached {
                attached, refused, ..
            } => {
                if let Some(text) = wording::images_attached_line(attached) {
                    let line = self.paint(Style::Dim, &sanitize(&text));
                    self.line(out, &line)?;
                }
                for problem in refused {
                    let text = format!("image not sent: {problem}");
                    let line = self.paint(Style::Yellow, &sanitize(&text));
                    self.line(out, &line)?;
                }
            }
            Event::FilesAttached {
                files, problems, ..
            } => {
                if let Some(text) = wording::attached_line(files) {
                    let line = self.paint(Style::Dim, &sanitize(&text));
                    self.line(out, &line)?;
                }
                for problem in problems {
                    let line = self.paint(Style::Yellow, &sanitize(problem));
                    self.line(out, &line)?;
                }
            }
            Event::UserCommandStarted { command, .. } => {
                let line = self.paint(Style::Cyan, &sanitize(&format!("! {command}")));
                self.line(out, &line)?;
            }
            Event::UserCommandOutput { id, text } => {
                let text = self
                    .outputs
                    .entry(user_command_call_id(*id))
                    .or_default()
                    .push(text)
                    .into_owned();
                self.tool_output(out, &text)?;
            }
            Event::UserCommandEnded {
                is_error, summary, ..
            } => {
                let mark = if *is_error {
                    self.paint(Style::Red, "✗")
                } else {
                    self.paint(Style::Green, "✓")
                };
                self.line(out, &format!("  {mark} {}", sanitize(summary)))?;
            }
            // The file names come from the repository.
            Event::InstructionsLoaded { files, .. } => {
                let text = wording::instructions_loaded_line(files);
                let line = self.paint(Style::Dim, &sanitize(&text));
                self.line(out, &line)?;
            }
            Event::ChecksReported { report, .. } => {
                for text in sanitize(report).lines() {
                    let text = self.paint(Style::Dim, text);
                    self.line(out, &format!("  {text}"))?;
                }
            }
            Event::ApprovalNeeded { why, request, .. } => self.approval(out, why, request)?,
            Event::ApprovalClosed { decision, .. } => {
                let text = sanitize(&wording::decision_line(decision.as_ref())).into_owned();
                let line = self.paint(Style::Dim, &format!("    → {text}"));
                self.line(out, &line)?;
            }
            Event::ModeChanged { mode } => {
                let line = self.paint(Style::Dim, &wording::mode_line(*mode));
                self.line(out, &line)?;
            }
            Event::ProviderNotice { text } => {
                let line = self.paint(Style::Dim, &sanitize(&wording::provider_notice_line(text)));
                self.line(out, &line)?;
            }
            // Every server starts; what it came to is the news.
            Event::McpServer {
                state: ServerState::Starting,
                ..
            } => {}
            Event::McpServer { server, state } => {
                let style = match state {
                    ServerState::Ready { .. } => Style::Dim,
                    _ => Style::Red,
                };
                let line = self.paint(style, &sanitize(&wording::mcp_server_line(server, state)));
                self.line(out, &line)?;
            }
            Event::Retrying {
                attempt,
                max_attempts,
                delay_ms,
                reason,
                discarded,
            } => {
                let mut text = wording::retry_line(*attempt, *max_attempts, *delay_ms, reason);
                if *discarded {
                    text.push_str(&format!(" ({})", wording::PARTIAL_REPLY_DISCARDED));
                }
                let line = self.paint(Style::Yellow, &sanitize(&format!("↻ {text}")));
                self.line(out, &line)?;
            }
            Event::Usage { session, .. } => self.usage = *session,
            Event::TurnEnd { outcome, .. } => {
                let text = match outcome {
                    TurnOutcome::Finished { .. } => self.paint(
                        Style::Dim,
                        &format!(
                            "— done ({} tokens in, {} out)",
                            self.usage.input_tokens, self.usage.output_tokens
                        ),
                    ),
                    TurnOutcome::Interrupted => self.paint(Style::Dim, "— interrupted"),
                    // `error: ...` stands alone; the others follow a dash.
                    TurnOutcome::Failed { .. } => {
                        let line = wording::outcome_line(outcome).unwrap_or_default();
                        self.paint(Style::Red, &sanitize(&line))
                    }
                    TurnOutcome::BudgetExhausted { .. }
                    | TurnOutcome::LoopDetected { .. }
                    | TurnOutcome::StoppedByHook { .. } => {
                        let line = wording::outcome_line(outcome).unwrap_or_default();
                        self.paint(Style::Red, &format!("— {}", sanitize(&line)))
                    }
                };
                self.line(out, &text)?;
            }
            Event::ConversationRestored {
                session_id,
                messages,
                ..
            } => {
                let text = wording::resumed_line(session_id, messages.len());
                let line = self.paint(Style::Dim, &sanitize(&text));
                self.line(out, &line)?;
            }
            Event::TranscriptUnsaved { reason, .. } => {
                let text = format!("warning: {}", wording::transcript_unsaved_line(reason));
                let line = self.paint(Style::Red, &sanitize(&text));
                self.line(out, &line)?;
            }
            Event::Undone { files, .. } => {
                let text = wording::undone_line(files);
                let line = self.paint(Style::Dim, &sanitize(&text));
                self.line(out, &line)?;
            }
            Event::UndoFailed { message } => {
                let line = self.paint(Style::Red, &sanitize(&wording::undo_failed_line(message)));
                self.line(out, &line)?;
            }
            Event::Compacted {
                before_tokens_estimate,
                after_tokens_estimate,
                kind,
            } => {
                let text =
                    wording::compacted_line(*kind, *before_tokens_estimate, *after_tokens_estimate);
                let line = self.paint(Style::Dim, &text);
                self.line(out, &line)?;
            }
            Event::CompactionSkipped { reason } => {
                let text = wording::compaction_skipped_line(reason);
                let line = self.paint(Style::Dim, &sanitize(&text));
                self.line(out, &line)?;
            }
            Event::CompactionFailed { reason } => {
                let text = format!("warning: {}", wording::compaction_failed_line(reason));
                let line = self.paint(Style::Yellow, &sanitize(&text));
                self.line(out, &line)?;
            }
            // The checkpoint ids are for session records (`--json` carries them).
            Event::CheckpointTaken { .. }
            | Event::TurnStarted { .. }
            | Event::StepStarted { .. }
            | Event::ToolCallBegin { .. }
            | Event::ToolRunBegin { .. }
            | Event::MessageWithdrawn { .. }
            | Event::ConversationCleared => {}
        }
        Ok(())
    }
}

/// The arguments on one line, shortened. Valid JSON is re-serialized compactly, so
/// whitespace inside strings (indentation in an edit) is kept as written.
fn preview(arguments: &str) -> String {
    let flat = match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(value) => value.to_string(),
        Err(_) => arguments.split_whitespace().collect::<Vec<_>>().join(" "),
    };
    match flat.char_indices().nth(ARGS_PREVIEW_CHARS) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::provider::StopReason;

    fn render(events: &[Event]) -> String {
        let mut printer = HumanPrinter::new(false);
        let mut out = Vec::new();
        for event in events {
            printer.print(event, &mut out).unwrap();
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_write_shows_the_verdict_of_its_checks_under_its_result() {
        let report = "lint: 1 new syntax error (line 2)\ncalc.py:2:5: syntax error: unclosed `(`";
        let text = render(&[Event::ToolRunEnd {
            call_id: "w".into(),
            is_error: false,
            summary: "created calc.py (2 lines)".into(),
            output: format!("created `calc.py`.\n\n{report}"),
            checks: Some(report.into()),
        }]);
        assert_eq!(
            text,
            "  ✓ created calc.py (2 lines)\n    lint: 1 new syntax error (line 2)\n"
        );
    }

    #[test]
    fn transcript_reads_like_a_conversation() {
        let text = render(&[
            Event::UserMessageDelivered {
                id: 1,
                text: "fix it".into(),
            },
            Event::TextDelta {
                text: "Reading ".into(),
            },
            Event::TextDelta {
                text: "the file.".into(),
            },
            Event::ToolCallReady {
                call_id: "c1".into(),
                name: "read".into(),
                arguments: "{\"path\":\n \"a.txt\"}".into(),
                info: crate::tools::Registry::core().describe("read", "{\"path\":\n \"a.txt\"}"),
            },
            Event::ToolRunEnd {
                call_id: "c1".into(),
                is_error: false,
                summary: "read 3 lines of a.txt".into(),
                output: "...".into(),
                checks: None,
            },
            Event::ToolRunEnd {
                call_id: "c2".into(),
                is_error: true,
                summary: "nope".into(),
                output: "no such file\nsecond line".into(),
                checks: None,
            },
            Event::EditProposed {
                call_id: "c3".into(),
                path: "a.txt".into(),
                diff: "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-x\n+y\n".into(),
            },
            Event::TurnEnd {
                turn: 1,
                outcome: TurnOutcome::Finished {
                    stop_reason: StopReason::EndTurn,
                },
            },
        ]);
        assert_eq!(
            text,
            "› fix it\nReading the file.\n→ read a.txt\n  ✓ read 3 lines of a.txt\n  \
             ✗ no such file\n    second line\n    --- a/a.txt\n    +++ b/a.txt\n    @@ -1 +1 @@\n    -x\n    \
             +y\n— done (0 tokens in, 0 out)\n"
        );
    }

    #[test]
    fn live_output_is_marked_line_by_line() {
        let text = render(&[
            Event::ToolOutputDelta {
                call_id: "c".into(),
                text: "compil".into(),
            },
            Event::ToolOutputDelta {
                call_id: "c".into(),
                text: "ing\nok\n".into(),
            },
            Event::ToolRunEnd {
                call_id: "c".into(),
                is_error: false,
                summary: "exit 0".into(),
                output: String::new(),
                checks: None,
            },
        ]);
        assert_eq!(text, "  │ compiling\n  │ ok\n  ✓ exit 0\n");
    }

    #[test]
    fn command_approvals_show_the_class_each_reason_and_protected_paths() {
        use crate::policy::{CommandClass, Protection, Reason};

        let text = render(&[Event::ApprovalNeeded {
            call_id: "c1".into(),
            why: "auto mode asks before a destructive command".into(),
            request: ApprovalView::Command {
                command: "echo ok > Cargo.lock".into(),
                cwd: "./".into(),
                class: CommandClass::Destructive,
                reasons: vec![Reason {
                    part: "> Cargo.lock".into(),
                    class: CommandClass::Destructive,
                    why: "overwrites Cargo.lock, a protected file".into(),
                }],
                protected: vec![Protection {
                    path: "Cargo.lock".into(),
                    why: "lockfile".into(),
                }],
            },
        }]);
        assert_eq!(
            text,
            "  ? approve destructive command `echo ok > Cargo.lock`? (auto mode asks before a \
             destructive command)\n    · destructive: `> Cargo.lock` overwrites Cargo.lock, a \
             protected file\n    · Cargo.lock is protected (lockfile)\n"
        );
    }

    #[test]
    fn compaction_and_its_failure_are_announced() {
        let text = render(&[
            Event::Compacted {
                before_tokens_estimate: 9000,
                after_tokens_estimate: 2000,
                kind: crate::agent::CompactionKind::Summarised,
            },
            Event::CompactionFailed {
                reason: "the summary call failed: HTTP 500".into(),
            },
        ]);
        assert_eq!(
            text,
            "context compacted: summarised older turns (~9000 → ~2000 tokens)\n\
             warning: context compaction failed and is off for this session: the summary call \
             failed: HTTP 500\n"
        );
    }

    #[test]
    fn a_resumed_session_and_an_unsaved_transcript_are_announced() {
        let text = render(&[
            Event::ConversationRestored {
                session_id: "100-1".into(),
                messages: vec![crate::provider::Message::user_text("task")],
                summaries: Default::default(),
                calls: Default::default(),
            },
            Event::TranscriptUnsaved {
                path: "/s/100-1.jsonl".into(),
                reason: "cannot write /s/100-1.jsonl: No space left on device".into(),
            },
        ]);
        assert_eq!(
            text,
            "resumed session 100-1 (1 earlier messages)\n\
             warning: the session is no longer saved: cannot write /s/100-1.jsonl: No space \
             left on device\n"
        );
    }

    #[test]
    fn a_retry_ends_the_partial_line_and_says_it_is_discarded() {
        let text = render(&[
            Event::TextDelta {
                text: "Half an ans".into(),
            },
            Event::Retrying {
                attempt: 1,
                max_attempts: 5,
                delay_ms: 2000,
                reason: "network error while streaming: reset".into(),
                discarded: true,
            },
            Event::Retrying {
                attempt: 2,
                max_attempts: 5,
                delay_ms: 500,
                reason: "HTTP 529".into(),
                discarded: false,
            },
        ]);
        assert_eq!(
            text,
            "Half an ans\n↻ retrying in 2s (attempt 1/5): network error while streaming: \
             reset (the partial reply above is discarded)\n↻ retrying in 500ms (attempt 2/5): \
             HTTP 529\n"
        );
    }

    #[test]
    fn no_escape_codes_without_color() {
        let text = render(&[Event::TurnEnd {
            turn: 1,
            outcome: TurnOutcome::Failed {
                message: "boom".into(),
            },
        }]);
        assert_eq!(text, "error: boom\n");
    }

    #[test]
    fn indentation_inside_arguments_survives() {
        assert_eq!(
            preview("{\"old_string\":\n  \"    x\\n\"}"),
            r#"{"old_string":"    x\n"}"#
        );
        assert_eq!(preview("{not json\n  at all"), "{not json at all");
    }

    #[test]
    fn long_arguments_are_shortened() {
        let long = format!("{{\"content\": \"{}\"}}", "x".repeat(500));
        let shown = preview(&long);
        assert!(shown.chars().count() <= ARGS_PREVIEW_CHARS + 1);
        assert!(shown.ends_with('…'));
    }

    /// Every ESC in `printed` starts one of the printer's own colour codes.
    fn only_own_colours(printed: &str) -> bool {
        let own = [
            "\x1b[2m", "\x1b[32m", "\x1b[31m", "\x1b[36m", "\x1b[33m", "\x1b[0m",
        ];
        printed
            .match_indices('\x1b')
            .all(|(at, _)| own.iter().any(|code| printed[at..].starts_with(code)))
    }

    /// Model text, thinking, tool output and results, the checks' report, the user's
    /// command and attachment names carrying OSC 52, a title, a link and cursor
    /// movement, each split across deltas where it streams.
    fn hostile_events() -> Vec<Event> {
        let delta = |text: &str| Event::TextDelta { text: text.into() };
        let thinking = |text: &str| Event::ThinkingDelta { text: text.into() };
        let output = |text: &str| Event::ToolOutputDelta {
            call_id: "c1".into(),
            text: text.into(),
        };
        vec![
            thinking("plan \x1b"),
            thinking("]0;owned title\x07 done"),
            delta("Copying \x1b"),
            // Bookkeeping between two deltas does not cut the sequence in two.
            Event::Usage {
                call: Usage::default(),
                session: Usage::default(),
                session_cost_usd: None,
                context_used: None,
            },
            delta("]52;c;cm0gLXJmIH4=\x07 now\n\x1b[1A"),
            delta("\x1b[2Kapproved \x1b]8;;https://evil.test\x1b\\link\x1b]8;;\x1b\\\n"),
            delta("\u{9b}2K cut \x1b"),
            Event::ToolCallReady {
                call_id: "c1".into(),
                name: "shell\x1b[2J".into(),
                arguments: "{\"command\": \"echo \\u001b]0;x\\u0007\"}".into(),
                info: crate::tools::Registry::core()
                    .describe("shell\x1b[2J", "{\"command\": \"echo \\u001b]0;x\\u0007\"}"),
            },
            output("out \x1b["),
            output("31mred\x1b]0;t"),
            Event::ToolRunEnd {
                call_id: "c1".into(),
                is_error: true,
                summary: "exit 1 \x1b[1A".into(),
                output: "failed \x1b]52;c;eA==\x07\nnext \u{9d}0;t\u{9c}".into(),
                checks: None,
            },
            // A repository's linter writes the checks' report.
            Event::ToolRunEnd {
                call_id: "c2".into(),
                is_error: false,
                summary: "edited a.py".into(),
                output: "edited".into(),
                checks: Some("lint: ruff: exit 1 \x1b]52;c;ZXZpbA==\x07\ndetail".into()),
            },
            Event::UserCommandStarted {
                id: 9,
                command: "cat notes \x1b]0;owned\x07".into(),
            },
            Event::UserCommandOutput {
                id: 9,
                text: "notes \x1b]52;c;eA==\x07\n".into(),
            },
            Event::UserCommandEnded {
                id: 9,
                is_error: false,
                summary: "exit 0 \x1b]0;t\x07".into(),
                output: "exit 0".into(),
            },
            // A hook's output and its command line come from the user's or a project's
            // files.
            Event::HookNotice {
                hook_event: "PostToolUse".into(),
                hook: "fmt.sh \x1b]0;t\x07".into(),
                text: "formatted \x1b]52;c;eA==\x07".into(),
                warning: true,
            },
            // A command's prompt and program name are the command's own output.
            Event::CommandWaitingForInput {
                call_id: "c1".into(),
                program: "py\x1b]0;t\x07".into(),
                line: "Continue? \x1b]52;c;eA==\x07 \x1b]8;;https://evil.test\x1b\\".into(),
            },
            // File and image names come from the repository and the user's disk.
            Event::FilesAttached {
                id: 3,
                files: vec!["a\x1b]0;t\x07.rs".into()],
                problems: vec!["@b.rs was not attached: \x1b]52;c;eA==\x07".into()],
            },
            Event::ImagesAttached {
                id: 3,
                attached: vec!["shot\x1b]0;t\x07.png".into()],
                refused: vec!["x.png: \x1b]8;;https://evil.test\x1b\\".into()],
            },
            Event::CompactionSkipped {
                reason: "the summary failed: \x1b]0;t\x07".into(),
            },
            // A directory's name is the repository's to choose.
            Event::InstructionsLoaded {
                call_id: "c1".into(),
                files: vec![
                    "pkg\x1b]0;owned\x07/AGENTS.md".into(),
                    "x\x1b]52;c;eA==\x07/CLAUDE.md".into(),
                ],
            },
            Event::TurnEnd {
                turn: 1,
                outcome: TurnOutcome::Failed {
                    message: "boom \x1b]0;t\x07".into(),
                },
            },
        ]
    }

    #[test]
    fn no_escape_from_events_reaches_the_output_split_or_not() {
        for color in [false, true] {
            let mut printer = HumanPrinter::new(color);
            let mut out = Vec::new();
            for event in hostile_events() {
                printer.print(&event, &mut out).unwrap();
            }
            let printed = String::from_utf8(out).unwrap();
            let controls: Vec<char> = printed
                .chars()
                .filter(|c| c.is_control() && !matches!(c, '\n' | '\x1b'))
                .collect();
            assert!(controls.is_empty(), "{controls:?} in {printed:?}");
            assert!(only_own_colours(&printed), "{printed:?}");
            if !color {
                assert!(!printed.contains('\x1b'), "{printed:?}");
            }
            for payload in ["52;c;", "0;owned", "8;;https", "]0;t"] {
                assert!(!printed.contains(payload), "{payload:?} in {printed:?}");
            }
        }
        let printed = render(&hostile_events());
        assert!(
            printed.contains("Copying ␛ now\n␛␛approved ␛link␛\n␛ cut ␛\n"),
            "{printed}"
        );
        assert!(printed.contains("plan ␛ done"), "{printed}");
        assert!(printed.contains("  │ out red␛"), "{printed}");
    }

    #[test]
    fn approvals_write_hidden_characters_out() {
        use crate::policy::CommandClass;

        let text = render(&[Event::ApprovalNeeded {
            call_id: "c1".into(),
            why: "ask mode".into(),
            request: ApprovalView::Command {
                command: "cat notes\u{202e}txt.sh\u{200b} \x1b[2K".into(),
                cwd: "./".into(),
                class: CommandClass::Unknown,
                reasons: Vec::new(),
                protected: Vec::new(),
            },
        }]);
        assert!(
            text.contains("`cat notes⟨U+202E⟩txt.sh⟨U+200B⟩ ⟨U+001B⟩[2K`"),
            "{text}"
        );
    }
}
