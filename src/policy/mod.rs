//! Permission modes and the approval hook that sits before every side effect.
//!
//! Owns: the [`ApprovalMode`]s, what each mode lets through without asking
//! ([`judge`]), the [`Approver`] trait tools call before they touch the disk or run a
//! command, and [`ModeApprover`], which decides without a person.
//! Does not own: asking a human (the agent implements [`Approver`] over its channels),
//! computing diffs, or applying a decision.
//! Invariant: no tool writes, edits or runs a command without an [`Approver`] decision,
//! and a mode never allows more than its [`judge`] verdict says.

mod command;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::diff::HunkId;

pub use command::is_read_only_command;

/// How much duet may do without asking.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalMode {
    /// Every edit and every shell command waits for a decision.
    #[default]
    Ask,
    /// Edits apply; shell commands wait for a decision.
    AutoEdit,
    /// Everything applies.
    Auto,
    /// Edits and commands that change anything are refused; the model is told why.
    ReadOnly,
}

impl ApprovalMode {
    /// In the order a front end cycles through them.
    pub const ALL: [ApprovalMode; 4] = [
        ApprovalMode::Ask,
        ApprovalMode::AutoEdit,
        ApprovalMode::Auto,
        ApprovalMode::ReadOnly,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Ask => "ask",
            ApprovalMode::AutoEdit => "auto-edit",
            ApprovalMode::Auto => "auto",
            ApprovalMode::ReadOnly => "read-only",
        }
    }
}

impl std::fmt::Display for ApprovalMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ApprovalMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ApprovalMode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == s)
            .ok_or_else(|| {
                format!("unknown approval mode `{s}` (valid: ask, auto-edit, auto, read-only)")
            })
    }
}

/// A side effect a tool wants to perform.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Create or replace a file. `before` is `None` for a new file.
    WriteFile {
        path: PathBuf,
        /// The path as the user and model see it (relative to the workspace).
        display: String,
        before: Option<String>,
        after: String,
    },
    /// Run a shell command.
    RunCommand {
        command: String,
        /// The directory it runs in, as the user sees it.
        cwd: String,
    },
}

/// What a tool asks permission for.
#[derive(Clone, Debug, PartialEq)]
pub struct ApprovalRequest {
    pub call_id: String,
    pub action: Action,
}

/// The answer to an [`ApprovalRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Decision {
    Approve,
    /// Apply only these hunks of a proposed edit; the rest are rejected.
    ApproveHunks {
        hunks: Vec<HunkId>,
        /// Why the other hunks were rejected, for the model.
        reason: Option<String>,
    },
    Reject {
        /// Written for the model: why, and what to do instead.
        reason: Option<String>,
    },
    /// The user rewrote the proposed file (in their editor); `content` is what lands.
    Edited {
        content: String,
    },
}

/// What a mode says about an action before anyone is asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// Refused outright; `reason` is written for the model.
    Deny {
        reason: String,
    },
    /// A person must decide; `why` says which rule asks (shown to them).
    Ask {
        why: String,
    },
}

/// The mode's verdict on `action`.
pub fn judge(mode: ApprovalMode, action: &Action) -> Verdict {
    match (mode, action) {
        (ApprovalMode::Auto, _) | (ApprovalMode::AutoEdit, Action::WriteFile { .. }) => {
            Verdict::Allow
        }
        (ApprovalMode::Ask, Action::WriteFile { .. }) => Verdict::Ask {
            why: "ask mode: every edit needs approval".into(),
        },
        (ApprovalMode::Ask | ApprovalMode::AutoEdit, Action::RunCommand { .. }) => Verdict::Ask {
            why: format!("{mode} mode: shell commands need approval"),
        },
        (ApprovalMode::ReadOnly, Action::WriteFile { display, .. }) => Verdict::Deny {
            reason: format!(
                "duet is in read-only mode, so {display} was not written. Do not retry writes \
                 or edits; describe the change you would make instead."
            ),
        },
        (ApprovalMode::ReadOnly, Action::RunCommand { command, .. }) => {
            if is_read_only_command(command) {
                Verdict::Allow
            } else {
                Verdict::Deny {
                    reason: "duet is in read-only mode and this command may change files or \
                             reach the network, so it was not run. Only plain read-only \
                             commands (ls, cat, grep, git status/log/diff, ...) without \
                             redirections or chaining run in this mode."
                        .into(),
                }
            }
        }
    }
}

/// Decides whether a side effect may happen. Called by tools right before they act.
#[async_trait::async_trait]
pub trait Approver: Send + Sync {
    async fn decide(&self, request: ApprovalRequest) -> Decision;
}

/// Decides from the mode alone. Where the mode would ask, nobody is there to answer,
/// so it refuses and says so.
#[derive(Clone, Copy, Debug)]
pub struct ModeApprover {
    pub mode: ApprovalMode,
}

/// The reason given when a decision needs a person and none is present.
pub const NO_ONE_TO_APPROVE: &str =
    "no one to approve in headless mode; the user can re-run with --yes or --approval auto";

#[async_trait::async_trait]
impl Approver for ModeApprover {
    async fn decide(&self, request: ApprovalRequest) -> Decision {
        match judge(self.mode, &request.action) {
            Verdict::Allow => Decision::Approve,
            Verdict::Deny { reason } => Decision::Reject {
                reason: Some(reason),
            },
            Verdict::Ask { .. } => Decision::Reject {
                reason: Some(NO_ONE_TO_APPROVE.into()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn write() -> Action {
        Action::WriteFile {
            path: PathBuf::from("/repo/a.txt"),
            display: "a.txt".into(),
            before: None,
            after: "x".into(),
        }
    }

    fn run(command: &str) -> Action {
        Action::RunCommand {
            command: command.into(),
            cwd: ".".into(),
        }
    }

    fn kind(verdict: Verdict) -> &'static str {
        match verdict {
            Verdict::Allow => "allow",
            Verdict::Deny { .. } => "deny",
            Verdict::Ask { .. } => "ask",
        }
    }

    #[test]
    fn each_mode_lets_through_what_it_promises() {
        let table = [
            (ApprovalMode::Ask, ["ask", "ask", "ask"]),
            (ApprovalMode::AutoEdit, ["allow", "ask", "ask"]),
            (ApprovalMode::Auto, ["allow", "allow", "allow"]),
            (ApprovalMode::ReadOnly, ["deny", "allow", "deny"]),
        ];
        for (mode, expected) in table {
            let got = [
                kind(judge(mode, &write())),
                kind(judge(mode, &run("git status"))),
                kind(judge(mode, &run("rm -rf target"))),
            ];
            assert_eq!(got, expected, "{mode}");
        }
    }

    #[tokio::test]
    async fn read_only_refusals_name_the_file_and_the_mode() {
        let approver = ModeApprover {
            mode: ApprovalMode::ReadOnly,
        };
        let request = ApprovalRequest {
            call_id: "c1".into(),
            action: write(),
        };
        let Decision::Reject {
            reason: Some(reason),
        } = approver.decide(request).await
        else {
            panic!("read-only mode approved a write");
        };
        assert!(reason.contains("read-only mode"), "{reason}");
        assert!(reason.contains("a.txt"), "{reason}");
    }

    #[tokio::test]
    async fn asking_without_a_person_refuses_with_the_headless_reason() {
        let approver = ModeApprover {
            mode: ApprovalMode::Ask,
        };
        let request = ApprovalRequest {
            call_id: "c1".into(),
            action: run("cargo test"),
        };
        assert_eq!(
            approver.decide(request).await,
            Decision::Reject {
                reason: Some(NO_ONE_TO_APPROVE.into())
            }
        );
    }

    #[test]
    fn modes_round_trip_through_their_names() {
        for mode in ApprovalMode::ALL {
            assert_eq!(mode.as_str().parse::<ApprovalMode>(), Ok(mode));
            let json = serde_json::to_string(&mode).unwrap();
            assert_eq!(json, format!("\"{mode}\""));
        }
        assert!("yolo".parse::<ApprovalMode>().is_err());
    }

    #[test]
    fn decisions_serialize_as_tagged_objects() {
        let decision = Decision::ApproveHunks {
            hunks: vec![HunkId("h1".into())],
            reason: Some("not that one".into()),
        };
        assert_eq!(
            serde_json::to_value(&decision).unwrap(),
            serde_json::json!({"kind": "approve_hunks", "hunks": ["h1"], "reason": "not that one"})
        );
    }
}
