//! The words front ends show for the agent's events, in one place: `duet exec`'s
//! transcript and the terminal UI say the same thing the same way.
//!
//! Owns: the lines for the session's header, retries, compaction, a budget stop, how a
//! turn ended, how an approval was settled, nested instruction files loaded, MCP
//! servers, undo and the transcript. Does
//! not own: the events (`protocol`), styling or layout (each front end), or terminal
//! safety (front ends sanitise what they print).
//! Invariant: pure functions of event data; a front end adds only decoration (a `—`,
//! a colour, a notice kind), never words of its own for these events.

use super::protocol::{BudgetReport, CompactionKind, HookInfo, TurnOutcome};
use crate::mcp::ServerState;
use crate::policy::{ApprovalMode, Decision};
use crate::shell::sandbox::Protections;

/// The lines that open a session ([`super::Event::SessionStarted`]): what runs where,
/// the instruction files loaded, and what protects the user. The sandbox's gaps
/// follow, one line each, from [`Protections::gaps`].
pub fn session_header(
    model: &str,
    mode: ApprovalMode,
    workspace: &str,
    instructions: &[String],
    sandbox: &Protections,
    hooks: &[HookInfo],
) -> Vec<String> {
    let mut lines = vec![format!("duet · {model} · {mode} · {workspace}")];
    if !instructions.is_empty() {
        lines.push(format!("instructions: {}", instructions.join(", ")));
    }
    lines.push(format!("sandbox: {}", sandbox.summary()));
    if let Some(line) = hooks_line(hooks) {
        lines.push(line);
    }
    lines
}

/// `hooks: 3 (1 from the project; 1 trusted, outside the sandbox)`; `None` without any.
fn hooks_line(hooks: &[HookInfo]) -> Option<String> {
    if hooks.is_empty() {
        return None;
    }
    let project = hooks.iter().filter(|hook| hook.project).count();
    let trusted = hooks.iter().filter(|hook| hook.trusted).count();
    let mut notes = Vec::new();
    if project > 0 {
        notes.push(format!("{project} from the project"));
    }
    if trusted > 0 {
        notes.push(format!("{trusted} trusted, outside the sandbox"));
    }
    let notes = if notes.is_empty() {
        "all in the sandbox".to_string()
    } else {
        notes.join("; ")
    };
    Some(format!(
        "hooks: {} ({notes}; `duet doctor` lists them)",
        hooks.len()
    ))
}

/// Said after a retry line when what the failed call streamed is void.
pub const PARTIAL_REPLY_DISCARDED: &str = "the partial reply above is discarded";

/// The line for [`super::Event::Retrying`]: `retrying in 2s (attempt 1/5): <reason>`.
pub fn retry_line(attempt: u32, max_attempts: u32, delay_ms: u64, reason: &str) -> String {
    let when = match delay_ms {
        0 => "now".to_string(),
        ms if ms < 1000 => format!("in {ms}ms"),
        ms => {
            let tenths = (ms + 50) / 100;
            match tenths % 10 {
                0 => format!("in {}s", tenths / 10),
                tenth => format!("in {}.{tenth}s", tenths / 10),
            }
        }
    };
    format!("retrying {when} (attempt {attempt}/{max_attempts}): {reason}")
}

/// The line for [`super::Event::CompactionFailed`].
pub fn compaction_failed_line(reason: &str) -> String {
    format!("context compaction failed and is off for this session: {reason}")
}

/// The line for [`super::Event::CompactionSkipped`].
pub fn compaction_skipped_line(reason: &str) -> String {
    format!("not compacted: {reason}")
}

/// The line for [`super::Event::Compacted`].
pub fn compacted_line(
    kind: CompactionKind,
    before_tokens_estimate: u64,
    after_tokens_estimate: u64,
) -> String {
    let what = match kind {
        CompactionKind::PrunedToolResults => "pruned older tool results",
        CompactionKind::Summarised => "summarised older turns",
    };
    format!(
        "context compacted: {what} (~{before_tokens_estimate} → ~{after_tokens_estimate} tokens)"
    )
}

/// A task stopped by its budget, as a few lines for a person.
pub fn budget_report(report: &BudgetReport) -> String {
    let mut lines = vec![format!(
        "Stopped by the {}: {}.",
        report.limit.describe(),
        report.detail
    )];
    let cost = report
        .cost_usd
        .map(|cost| format!(", ${cost:.4}"))
        .unwrap_or_default();
    lines.push(format!(
        "Done: {} model calls, {} tool calls, {} tokens{cost}, {:.1} s.",
        report.steps,
        report.tools_run,
        report.tokens,
        report.elapsed_ms as f64 / 1000.0
    ));
    if !report.files_changed.is_empty() {
        lines.push(format!("Changed: {}.", report.files_changed.join(", ")));
    }
    match &report.last_message {
        Some(text) => lines.push(format!("Left off at: {}", text.trim())),
        None => lines.push("The model had not said where it was.".to_string()),
    }
    lines.push("The task is not finished; send a message to continue it.".to_string());
    lines.join("\n")
}

/// What to say of a turn that did not simply finish: `interrupted`, `error: ...`, the
/// budget report, the loop; `None` for a finished turn (each front end has its own
/// closing line for that).
pub fn outcome_line(outcome: &TurnOutcome) -> Option<String> {
    match outcome {
        TurnOutcome::Finished { .. } => None,
        TurnOutcome::Interrupted => Some("interrupted".to_string()),
        TurnOutcome::Failed { message } => Some(format!("error: {message}")),
        TurnOutcome::BudgetExhausted { report } => Some(budget_report(report)),
        TurnOutcome::LoopDetected { message } => Some(message.clone()),
        TurnOutcome::StoppedByHook { reason } => Some(format!("stopped by a hook: {reason}")),
    }
}

/// How an approval was settled ([`super::Event::ApprovalClosed`]); `None` is a
/// request withdrawn before anyone decided.
pub fn decision_line(decision: Option<&Decision>) -> String {
    match decision {
        Some(Decision::Approve) => "approved".to_string(),
        Some(Decision::Edited { .. }) => "approved with edits".to_string(),
        Some(Decision::ApproveHunks { hunks, .. }) => format!("approved {} hunk(s)", hunks.len()),
        Some(Decision::Reject {
            reason: Some(reason),
        }) => format!("refused: {reason}"),
        Some(Decision::Reject { reason: None }) => "refused".to_string(),
        None => "withdrawn".to_string(),
    }
}

/// The line for [`super::Event::InstructionsLoaded`].
pub fn instructions_loaded_line(files: &[String]) -> String {
    format!("instructions loaded: {}", files.join(", "))
}

/// The line for [`super::Event::McpServer`].
pub fn mcp_server_line(server: &str, state: &ServerState) -> String {
    format!("mcp: {server} {state}")
}

/// The line for [`super::Event::ModeChanged`].
pub fn mode_line(mode: ApprovalMode) -> String {
    format!("mode: {mode}")
}

/// The line for [`super::Event::ConversationRestored`].
pub fn resumed_line(session_id: &str, earlier_messages: usize) -> String {
    format!("resumed session {session_id} ({earlier_messages} earlier messages)")
}

/// The line for [`super::Event::TranscriptUnsaved`].
pub fn transcript_unsaved_line(reason: &str) -> String {
    format!("the session is no longer saved: {reason}")
}

/// The line for [`super::Event::Undone`].
pub fn undone_line(files: &[String]) -> String {
    format!("undone: {}", files.join(", "))
}

/// The line for [`super::Event::UndoFailed`].
pub fn undo_failed_line(message: &str) -> String {
    format!("undo: {message}")
}

/// The line for [`super::Event::FilesAttached`]'s files; `None` when none was.
pub fn attached_line(files: &[String]) -> Option<String> {
    (!files.is_empty()).then(|| format!("attached: {}", files.join(", ")))
}

/// The line for [`super::Event::ImagesAttached`]'s images; `None` when none was.
pub fn images_attached_line(attached: &[String]) -> Option<String> {
    (!attached.is_empty()).then(|| format!("image attached: {}", attached.join(", ")))
}

/// The line for [`super::Event::MessageWithdrawn`].
pub fn withdrawn_line(text: &str) -> String {
    format!("withdrawn: {text}")
}

/// The line for [`super::Event::ProviderNotice`].
pub fn provider_notice_line(text: &str) -> String {
    format!("note: {text}")
}

/// The line for [`super::Event::CommandWaitingForInput`]: the prompt, and who reads.
pub fn waiting_for_input_line(program: &str, line: &str) -> String {
    match line.trim() {
        "" => format!("{program} waits for input"),
        prompt => format!("{program} waits for input: {prompt}"),
    }
}

/// The line for [`super::Event::HookNotice`].
pub fn hook_notice_line(hook_event: &str, hook: &str, text: &str) -> String {
    if hook.is_empty() {
        format!("{hook_event} hook: {text}")
    } else {
        format!("{hook_event} hook `{hook}`: {text}")
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn the_header_says_which_hooks_run_and_where() {
        let hook = |project, trusted| HookInfo {
            event: "PreToolUse".into(),
            command: "guard.py".into(),
            trusted,
            project,
        };
        let header = |hooks: &[HookInfo]| {
            let sandbox = Protections::example(true, true);
            session_header("m", ApprovalMode::Ask, "/w", &[], &sandbox, hooks)
        };
        assert!(!header(&[]).iter().any(|line| line.starts_with("hooks")));
        assert_eq!(
            header(&[hook(false, false)]).last().map(String::as_str),
            Some("hooks: 1 (all in the sandbox; `duet doctor` lists them)")
        );
        assert_eq!(
            header(&[hook(true, false), hook(false, true)])
                .last()
                .map(String::as_str),
            Some(
                "hooks: 2 (1 from the project; 1 trusted, outside the sandbox; \
                 `duet doctor` lists them)"
            )
        );
    }

    #[test]
    fn retry_lines_say_when_which_attempt_and_why() {
        assert_eq!(
            retry_line(1, 5, 2000, "HTTP 529"),
            "retrying in 2s (attempt 1/5): HTTP 529"
        );
        assert_eq!(
            retry_line(2, 5, 1449, "reset"),
            "retrying in 1.4s (attempt 2/5): reset"
        );
        assert_eq!(
            retry_line(3, 5, 20, "reset"),
            "retrying in 20ms (attempt 3/5): reset"
        );
        assert_eq!(
            retry_line(1, 1, 0, "cut off"),
            "retrying now (attempt 1/1): cut off"
        );
    }

    #[test]
    fn outcomes_other_than_finished_have_a_line() {
        let failed = TurnOutcome::Failed {
            message: "HTTP 401".into(),
        };
        assert_eq!(outcome_line(&failed).as_deref(), Some("error: HTTP 401"));
        assert_eq!(
            outcome_line(&TurnOutcome::Interrupted).as_deref(),
            Some("interrupted")
        );
        let finished = TurnOutcome::Finished {
            stop_reason: crate::provider::StopReason::EndTurn,
        };
        assert_eq!(outcome_line(&finished), None);
    }

    #[test]
    fn settled_approvals_say_what_applied() {
        let refused = Decision::Reject {
            reason: Some("not that file".into()),
        };
        assert_eq!(decision_line(Some(&refused)), "refused: not that file");
        assert_eq!(decision_line(Some(&Decision::Approve)), "approved");
        assert_eq!(decision_line(None), "withdrawn");
    }
}
