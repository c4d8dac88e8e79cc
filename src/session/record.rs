//! The lines of a session file: one [`Header`], then [`Record`]s.

use serde::{Deserialize, Serialize};

use crate::policy::{ApprovalMode, Decision};
use crate::provider::{Block, Message, ToolResult, Usage, Wire};

/// The transcript format this duet writes and the newest it reads. Adding a record kind
/// or a field does not change it (older readers skip what they do not know); changing
/// the meaning of an existing one does.
pub const FORMAT_VERSION: u32 = 1;

/// The first line of a session file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// [`FORMAT_VERSION`] of the writer; the key also marks the file as a duet session.
    #[serde(rename = "duet_session")]
    pub format: u32,
    pub id: String,
    /// The workspace root, canonical.
    pub workspace: String,
    pub model: String,
    pub provider: Wire,
    /// Unix time in seconds.
    pub started_at: u64,
    pub duet_version: String,
}

/// One thing that happened in a session, appended as it happens.
///
/// The conversation is rebuilt from `User`, `AssistantPart`, `ToolResult`, `Step`,
/// `Cleared` and `Compacted`; the other kinds describe the session. A step's parts are recorded as they
/// settle, so a process killed mid-step loses at most the part in flight; the `Step`
/// record then restates the step whole, because results change after they were first
/// recorded (project checks are appended, cancelled calls are answered).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    /// The session continues in a new process (`--resume`), possibly with another model.
    Resumed {
        /// Unix time in seconds.
        at: u64,
        model: String,
        provider: Wire,
        duet_version: String,
    },
    /// User text delivered to the model: a task or a steering message.
    User {
        text: String,
    },
    /// An image the user attached to the message just recorded (base64).
    UserImage {
        media_type: String,
        data: String,
    },
    /// Settled blocks of the assistant message being streamed, up to and including a
    /// tool call. Provisional until the step's `Step` record.
    AssistantPart {
        blocks: Vec<Block>,
    },
    /// A tool's answer as soon as the tool ended, with the one-line summary shown for
    /// it. Provisional until the step's `Step` record.
    ToolResult {
        result: ToolResult,
        summary: String,
    },
    /// One model response and the answers to its tool calls, exactly as they entered
    /// the conversation. Supersedes the provisional records since the previous step.
    Step {
        assistant: Vec<Block>,
        results: Vec<ToolResult>,
    },
    /// A person settled an approval; `None` when it was withdrawn undecided.
    Approval {
        call_id: String,
        decision: Option<Decision>,
    },
    /// Token usage of one model call.
    Usage {
        usage: Usage,
    },
    ModeChanged {
        mode: ApprovalMode,
    },
    /// A turn ended. `outcome` is the agent's turn outcome as JSON, kept for people and
    /// tools reading the transcript; duet itself only counts turns.
    TurnEnd {
        outcome: serde_json::Value,
    },
    /// The conversation was forgotten; what follows starts afresh.
    Cleared,
    /// The conversation was compacted to save context: it is now exactly `messages`, and
    /// what follows continues from them.
    Compacted {
        messages: Vec<Message>,
    },
    /// Turn `turn` changed files: the snapshots (git commit ids) taken before its first
    /// change and at its end, so a resumed session can still undo it.
    TurnCheckpoints {
        turn: u32,
        before: String,
        after: String,
    },
    /// The changes of these turns were reverted.
    Undone {
        turns: Vec<u32>,
    },
    /// A kind this duet does not know (written by a newer one); skipped.
    #[serde(other)]
    Unknown,
}
