//! What a hook's run says, in Claude Code's protocol: exit 0 goes on (its stdout is a
//! JSON reply or plain text), exit 2 blocks with stderr as the reason, anything else
//! is a failure that does not block (unless the hook says `on_failure = "block"`).
//!
//! Owns: reading an exit status, stdout and stderr into a [`Reply`]. Does not own:
//! what a reply means for each event (`super::Hooks`).
//! Invariant: a reply never loosens anything by itself: `allow` is only recorded, and
//! only the caller, knowing whether the hook is trusted, may act on it.

use serde::Deserialize;

/// How a hook's process ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ended {
    Exited(i32),
    /// Killed by a signal, timed out, or could not start; the text says which.
    Failed(String),
}

/// A hook's decision about a tool call (`hookSpecificOutput.permissionDecision`, or
/// the older `decision: approve | block`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Permission {
    Allow,
    Ask,
    Deny,
}

/// What one hook run came to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reply {
    /// Exit 2, or `decision: "block"` / `permissionDecision: "deny"`: the reason.
    pub block: Option<String>,
    /// A tool-call decision other than deny.
    pub permission: Option<Permission>,
    /// `continue: false`: stop after this, saying why (`stopReason`).
    pub stop: Option<String>,
    /// `systemMessage`, and a failed hook's account: shown to the user.
    pub message: Option<String>,
    /// `hookSpecificOutput.additionalContext`, or plain stdout where the event adds it
    /// to the model's context.
    pub context: Option<String>,
    /// Plain stdout of a successful run, for the user's eyes.
    pub output: Option<String>,
    /// The hook failed to run as its protocol says (not 0 or 2, timed out, bad JSON).
    pub failed: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct JsonReply {
    #[serde(rename = "continue")]
    go_on: Option<bool>,
    stop_reason: Option<String>,
    system_message: Option<String>,
    decision: Option<String>,
    reason: Option<String>,
    hook_specific_output: Option<Specific>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Specific {
    permission_decision: Option<String>,
    permission_decision_reason: Option<String>,
    additional_context: Option<String>,
}

/// Reads a run. `stdout` and `stderr` are what the hook printed, already clipped.
pub fn read(ended: &Ended, stdout: &str, stderr: &str) -> Reply {
    let stderr = stderr.trim();
    match ended {
        Ended::Exited(0) => read_success(stdout),
        Ended::Exited(2) => Reply {
            block: Some(if stderr.is_empty() {
                "blocked by a hook (it gave no reason)".to_string()
            } else {
                stderr.to_string()
            }),
            ..Reply::default()
        },
        Ended::Exited(code) => Reply {
            failed: Some(with_detail(&format!("exited with status {code}"), stderr)),
            ..Reply::default()
        },
        Ended::Failed(why) => Reply {
            failed: Some(with_detail(why, stderr)),
            ..Reply::default()
        },
    }
}

fn with_detail(what: &str, stderr: &str) -> String {
    match stderr.lines().next() {
        Some(first) if !first.trim().is_empty() => format!("{what}: {}", first.trim()),
        _ => what.to_string(),
    }
}

fn read_success(stdout: &str) -> Reply {
    let text = stdout.trim();
    if !text.starts_with('{') {
        return Reply {
            output: (!text.is_empty()).then(|| text.to_string()),
            ..Reply::default()
        };
    }
    let json: JsonReply = match serde_json::from_str(text) {
        Ok(json) => json,
        Err(error) => {
            return Reply {
                failed: Some(format!("printed JSON duet cannot read: {error}")),
                output: Some(text.to_string()),
                ..Reply::default()
            };
        }
    };
    let specific = json.hook_specific_output.unwrap_or_default();
    let mut reply = Reply {
        message: json.system_message.filter(|text| !text.trim().is_empty()),
        context: specific
            .additional_context
            .filter(|text| !text.trim().is_empty()),
        ..Reply::default()
    };
    if json.go_on == Some(false) {
        reply.stop = Some(
            json.stop_reason
                .unwrap_or_else(|| "a hook asked to stop".to_string()),
        );
    }
    let reason = specific
        .permission_decision_reason
        .or(json.reason)
        .filter(|text| !text.trim().is_empty());
    let decision = specific
        .permission_decision
        .or(json.decision)
        .map(|text| text.to_ascii_lowercase());
    match decision.as_deref() {
        Some("deny" | "block") => {
            reply.block = Some(reason.unwrap_or_else(|| "blocked by a hook".to_string()));
        }
        Some("ask") => {
            reply.permission = Some(Permission::Ask);
            reply.message = reply.message.or(reason);
        }
        Some("allow" | "approve") => reply.permission = Some(Permission::Allow),
        Some(other) => {
            reply.failed = Some(format!("gave a decision duet does not know: `{other}`"));
        }
        None => {}
    }
    reply
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn exit_two_blocks_with_stderr() {
        let reply = read(&Ended::Exited(2), "ignored", "rm -rf is not allowed here\n");
        assert_eq!(reply.block.as_deref(), Some("rm -rf is not allowed here"));
        let silent = read(&Ended::Exited(2), "", "");
        assert!(silent.block.unwrap().contains("no reason"));
    }

    #[test]
    fn other_statuses_fail_without_blocking() {
        let reply = read(&Ended::Exited(1), "", "jq: not found\nmore");
        assert_eq!(reply.block, None);
        assert_eq!(
            reply.failed.as_deref(),
            Some("exited with status 1: jq: not found")
        );
        let timed_out = read(&Ended::Failed("timed out after 5 s".into()), "", "");
        assert_eq!(timed_out.failed.as_deref(), Some("timed out after 5 s"));
    }

    #[test]
    fn plain_stdout_is_output() {
        let reply = read(&Ended::Exited(0), "formatted 2 files\n", "");
        assert_eq!(reply.output.as_deref(), Some("formatted 2 files"));
        assert_eq!(
            reply,
            Reply {
                output: reply.output.clone(),
                ..Reply::default()
            }
        );
    }

    #[test]
    fn json_fields_are_honoured() {
        let deny = r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "deny", "permissionDecisionReason": "use the staging DB"}}"#;
        assert_eq!(
            read(&Ended::Exited(0), deny, "").block.as_deref(),
            Some("use the staging DB")
        );
        let ask = r#"{"hookSpecificOutput": {"permissionDecision": "ask"}}"#;
        assert_eq!(
            read(&Ended::Exited(0), ask, "").permission,
            Some(Permission::Ask)
        );
        let allow = r#"{"decision": "approve"}"#;
        assert_eq!(
            read(&Ended::Exited(0), allow, "").permission,
            Some(Permission::Allow)
        );
        let block = r#"{"decision": "block", "reason": "tests fail: fix them first"}"#;
        assert_eq!(
            read(&Ended::Exited(0), block, "").block.as_deref(),
            Some("tests fail: fix them first")
        );
        let stop = r#"{"continue": false, "stopReason": "deploy window closed",
            "systemMessage": "stopping"}"#;
        let reply = read(&Ended::Exited(0), stop, "");
        assert_eq!(reply.stop.as_deref(), Some("deploy window closed"));
        assert_eq!(reply.message.as_deref(), Some("stopping"));
        let context = r#"{"hookSpecificOutput": {"additionalContext": "branch: main"}}"#;
        assert_eq!(
            read(&Ended::Exited(0), context, "").context.as_deref(),
            Some("branch: main")
        );
    }

    #[test]
    fn unreadable_json_and_unknown_decisions_are_failures() {
        let reply = read(&Ended::Exited(0), "{not json", "");
        assert!(reply.failed.unwrap().contains("JSON"));
        let reply = read(&Ended::Exited(0), r#"{"decision": "maybe"}"#, "");
        assert!(reply.failed.unwrap().contains("maybe"));
    }
}
