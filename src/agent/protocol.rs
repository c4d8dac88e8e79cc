//! The only vocabulary shared by the agent and its front ends.
//!
//! [`Command`]s go in, [`Event`]s come out. Front ends (`duet exec`, the TUI) import
//! this module and [`super::spawn`], nothing else from `agent/`. Every tool-related event
//! carries the `call_id` the model gave the call, so a front end can group them.

use serde::{Deserialize, Serialize};

use crate::diff::HunkId;
use crate::policy::{ApprovalMode, CommandClass, Decision, Protection, Reason};
use crate::provider::{StopReason, Usage};

/// What a front end asks of the agent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Command {
    /// A message from the user. Sent while a turn runs, it steers that turn: the model
    /// receives it at its next step, after the results of the tools already running.
    UserMessage { text: String },
    /// Cancel the current step: the model stream and any running tools. The conversation
    /// stays valid, and the next message continues it.
    Interrupt,
    /// Takes back a message sent during a turn that has not reached the model yet (the
    /// first waiting message with exactly this text). [`Event::MessageWithdrawn`]
    /// confirms; without it, the message was already delivered.
    WithdrawMessage { text: String },
    /// Answers the [`Event::ApprovalNeeded`] of `call_id`.
    Decide { call_id: String, decision: Decision },
    /// Switches the approval mode for everything decided from now on, including
    /// approvals still waiting.
    SetMode { mode: ApprovalMode },
    /// Forgets the conversation so far (the next message starts afresh). Ignored while a
    /// turn runs.
    ClearConversation,
    /// End the agent task after cancelling whatever runs.
    Shutdown,
}

/// What the agent reports. Serialized as-is by `duet exec --json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The agent is ready. `instructions` lists the project instruction files loaded.
    SessionStarted {
        model: String,
        workspace: String,
        instructions: Vec<String>,
        mode: ApprovalMode,
    },
    /// A user message was delivered to the model (a steering message included).
    UserMessageDelivered {
        text: String,
    },
    /// A waiting message was taken back before delivery.
    MessageWithdrawn {
        text: String,
    },
    /// A model call is about to be sent; `step` counts calls within the turn from 1.
    StepStarted {
        step: u32,
    },
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        text: String,
    },
    /// The model started writing a tool call.
    ToolCallBegin {
        call_id: String,
        name: String,
    },
    /// The call's arguments are complete (raw JSON text as the model wrote it).
    ToolCallReady {
        call_id: String,
        name: String,
        arguments: String,
    },
    /// The tool began executing.
    ToolRunBegin {
        call_id: String,
    },
    /// Live output of a running tool (shell output as it arrives), for display only.
    ToolOutputDelta {
        call_id: String,
        text: String,
    },
    /// The tool finished; `output` is exactly what the model receives.
    ToolRunEnd {
        call_id: String,
        is_error: bool,
        summary: String,
        output: String,
    },
    /// The project-wide checks that ran after a batch of edits; `report` was appended to
    /// the result of `call_id`, the batch's last edit.
    ChecksReported {
        call_id: String,
        report: String,
    },
    /// A write or edit is about to be decided on; `diff` is unified, against the file
    /// on disk.
    EditProposed {
        call_id: String,
        path: String,
        diff: String,
    },
    /// A side effect waits for the user's [`Command::Decide`]; `why` names the rule that
    /// asks.
    ApprovalNeeded {
        call_id: String,
        why: String,
        request: ApprovalView,
    },
    /// The approval of `call_id` is settled: `decision` is what applied, `None` when the
    /// request was withdrawn (interrupt) before anyone decided.
    ApprovalClosed {
        call_id: String,
        decision: Option<Decision>,
    },
    ModeChanged {
        mode: ApprovalMode,
    },
    ConversationCleared,
    /// Token usage of the last model call, and the running total for the session.
    Usage {
        call: Usage,
        session: Usage,
    },
    /// The turn is over; the agent waits for the next message.
    TurnEnd {
        outcome: TurnOutcome,
    },
}

/// How a turn ended.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TurnOutcome {
    /// The model stopped without asking for more tools.
    Finished { stop_reason: StopReason },
    /// The user interrupted.
    Interrupted,
    /// The model call failed; `message` says why and what to check.
    Failed { message: String },
}

/// What a person is asked to approve.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ApprovalView {
    Edit {
        path: String,
        /// The file as it is on disk; `None` for a new file.
        before: Option<String>,
        /// The file as the model proposes it.
        after: String,
        /// The whole change as a unified diff.
        diff: String,
        /// The same change split into hunks that can be accepted one by one.
        hunks: Vec<HunkView>,
        /// The protection the file falls under, if any: only a person approves it.
        protected: Vec<Protection>,
    },
    Command {
        command: String,
        cwd: String,
        /// How dangerous the command is, as a whole.
        class: CommandClass,
        /// Each part that is more than a read, and why.
        reasons: Vec<Reason>,
        /// Protected paths it writes: only a person approves it.
        protected: Vec<Protection>,
    },
}

impl ApprovalView {
    /// Protected paths the request would change; a front end that approves on the
    /// user's behalf (`duet exec --yes`, "allow for session") must not approve these.
    pub fn protections(&self) -> &[Protection] {
        match self {
            ApprovalView::Edit { protected, .. } | ApprovalView::Command { protected, .. } => {
                protected
            }
        }
    }
}

/// One hunk of a proposed edit, as offered for approval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HunkView {
    pub id: HunkId,
    /// `@@ -a,b +c,d @@`
    pub header: String,
    /// The hunk in unified form, header included.
    pub text: String,
}
