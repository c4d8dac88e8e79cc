//! Tools served by MCP servers: what each rule and mode lets through.
//!
//! Owns: [`ToolRule`] (the user's allow / ask / deny for a server or one of its tools)
//! and the verdict on one call of such a tool.
//! Does not own: where the rule comes from (`mcp::config` resolves it, and never lets a
//! project's own file loosen it) or talking to the server.
//! Invariant: duet cannot see what an external tool does, so nothing runs without a
//! person unless the user's own config allows that tool; `deny` is refused in every
//! mode, and read-only mode runs only tools that are both allowed and marked read-only.

use serde::{Deserialize, Serialize};

use super::{ApprovalMode, Verdict};

/// What the user's config says about calls of one external tool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolRule {
    /// Runs without asking (except in read-only mode, unless the tool is read-only).
    Allow,
    /// A person decides each call.
    #[default]
    Ask,
    /// Refused without asking.
    Deny,
}

impl ToolRule {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolRule::Allow => "allow",
            ToolRule::Ask => "ask",
            ToolRule::Deny => "deny",
        }
    }
}

/// One call of an external tool, as the policy sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalCall {
    pub server: String,
    pub tool: String,
    pub rule: ToolRule,
    /// The server marks the tool read-only and the user's config trusts that mark.
    pub read_only: bool,
}

impl ExternalCall {
    /// The name the model calls the tool by.
    pub fn exposed_name(&self) -> String {
        format!("{}__{}", self.server, self.tool)
    }
}

/// What `mode` says about `call` before anyone is asked.
pub(super) fn judge(mode: ApprovalMode, call: &ExternalCall) -> Verdict {
    let name = call.exposed_name();
    match (call.rule, mode) {
        (ToolRule::Deny, _) => Verdict::Deny {
            reason: format!(
                "the user's configuration denies `{name}` (MCP server `{}`), so it was not \
                 called. Do not call it again; do without it or ask the user.",
                call.server
            ),
        },
        (ToolRule::Allow, ApprovalMode::ReadOnly) if call.read_only => Verdict::Allow,
        (_, ApprovalMode::ReadOnly) => Verdict::Deny {
            reason: format!(
                "duet is in read-only mode and `{name}` is an MCP tool that may change \
                 things, so it was not called."
            ),
        },
        (ToolRule::Allow, _) => Verdict::Allow,
        (ToolRule::Ask, _) => Verdict::Ask {
            why: format!(
                "MCP tools ask before each call unless the user's config allows them \
                 (server `{}`)",
                call.server
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(rule: ToolRule, read_only: bool) -> ExternalCall {
        ExternalCall {
            server: "tracker".into(),
            tool: "create_issue".into(),
            rule,
            read_only,
        }
    }

    fn kind(verdict: &Verdict) -> &'static str {
        match verdict {
            Verdict::Allow => "allow",
            Verdict::Deny { .. } => "deny",
            Verdict::Ask { .. } => "ask",
        }
    }

    #[test]
    fn each_rule_under_each_mode() {
        // (rule, read_only) → verdict in ask, auto-edit, auto, read-only.
        let table = [
            ((ToolRule::Ask, false), ["ask", "ask", "ask", "deny"]),
            ((ToolRule::Ask, true), ["ask", "ask", "ask", "deny"]),
            (
                (ToolRule::Allow, false),
                ["allow", "allow", "allow", "deny"],
            ),
            (
                (ToolRule::Allow, true),
                ["allow", "allow", "allow", "allow"],
            ),
            ((ToolRule::Deny, true), ["deny", "deny", "deny", "deny"]),
        ];
        for ((rule, read_only), expected) in table {
            let got: Vec<&str> = ApprovalMode::ALL
                .iter()
                .map(|mode| kind(&judge(*mode, &call(rule, read_only))))
                .collect();
            assert_eq!(got, expected, "{rule:?} read_only={read_only}");
        }
    }

    #[test]
    fn a_denial_names_the_tool_and_says_not_to_retry() {
        let Verdict::Deny { reason } = judge(ApprovalMode::Auto, &call(ToolRule::Deny, false))
        else {
            panic!("expected a denial");
        };
        assert!(reason.contains("`tracker__create_issue`"), "{reason}");
        assert!(reason.contains("Do not call it again"), "{reason}");
    }
}
