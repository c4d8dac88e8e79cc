//! Permission modes and the approval hook that sits before every side effect.
//!
//! Owns: the [`ApprovalMode`]s, the [`Approver`] trait tools call before they touch the
//! disk, and [`ModeApprover`], which decides from the mode alone.
//! Does not own: asking a human (the agent implements [`Approver`] over its channels)
//! or computing diffs.
//! Invariant: no tool writes, edits or runs a command without an [`Approver`] decision.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How much duet may do without asking.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalMode {
    /// Every side effect applies.
    #[default]
    Auto,
    /// Writes and edits are refused with a result telling the model so.
    ReadOnly,
}

impl ApprovalMode {
    pub const ALL: [ApprovalMode; 2] = [ApprovalMode::Auto, ApprovalMode::ReadOnly];

    pub fn as_str(self) -> &'static str {
        match self {
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
            .ok_or_else(|| format!("unknown approval mode `{s}` (valid: auto, read-only)"))
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
}

/// What a tool asks permission for.
#[derive(Clone, Debug, PartialEq)]
pub struct ApprovalRequest {
    pub call_id: String,
    pub action: Action,
}

/// The answer to an [`ApprovalRequest`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Approve,
    /// `reason` is written for the model: it says why, and what to do instead.
    Reject {
        reason: String,
    },
}

/// Decides whether a side effect may happen. Called by tools right before they act.
#[async_trait::async_trait]
pub trait Approver: Send + Sync {
    async fn decide(&self, request: ApprovalRequest) -> Decision;
}

/// Decides from the approval mode alone, without asking anyone.
#[derive(Clone, Copy, Debug)]
pub struct ModeApprover {
    pub mode: ApprovalMode,
}

#[async_trait::async_trait]
impl Approver for ModeApprover {
    async fn decide(&self, request: ApprovalRequest) -> Decision {
        match (self.mode, &request.action) {
            (ApprovalMode::Auto, _) => Decision::Approve,
            (ApprovalMode::ReadOnly, Action::WriteFile { display, .. }) => Decision::Reject {
                reason: format!(
                    "duet is in read-only mode, so {display} was not written. Do not retry \
                     writes or edits; describe the change you would make instead."
                ),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_request() -> ApprovalRequest {
        ApprovalRequest {
            call_id: "c1".into(),
            action: Action::WriteFile {
                path: PathBuf::from("/repo/a.txt"),
                display: "a.txt".into(),
                before: None,
                after: "x".into(),
            },
        }
    }

    #[tokio::test]
    async fn auto_mode_approves_writes() {
        let approver = ModeApprover {
            mode: ApprovalMode::Auto,
        };
        assert_eq!(approver.decide(write_request()).await, Decision::Approve);
    }

    #[tokio::test]
    async fn read_only_mode_rejects_writes_and_names_the_file() {
        let approver = ModeApprover {
            mode: ApprovalMode::ReadOnly,
        };
        match approver.decide(write_request()).await {
            Decision::Reject { reason } => {
                assert!(reason.contains("read-only mode"), "{reason}");
                assert!(reason.contains("a.txt"), "{reason}");
            }
            Decision::Approve => panic!("read-only mode approved a write"),
        }
    }

    #[test]
    fn modes_round_trip_through_their_names() {
        for mode in ApprovalMode::ALL {
            assert_eq!(mode.as_str().parse::<ApprovalMode>(), Ok(mode));
        }
        assert!("yolo".parse::<ApprovalMode>().is_err());
    }
}
