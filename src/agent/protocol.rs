//! The only vocabulary shared by the agent and its front ends.
//!
//! [`Command`]s go in, [`Event`]s come out. Front ends (`duet exec`, the TUI) import
//! this module and [`super::spawn`], nothing else from `agent/`. Every tool-related event
//! carries the `call_id` the model gave the call, so a front end can group them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::diff::HunkId;
use crate::mcp::ServerState;
use crate::policy::{ApprovalMode, CommandClass, Decision, Protection, Reason};
use crate::provider::{Message, StopReason, Usage};
use crate::shell::sandbox::Protections;
use crate::tools::CallInfo;

/// Names one user message for the session, chosen by the front end that sends it:
/// withdrawing and delivery refer to it, so two messages with the same text stay two.
pub type MessageId = u64;

/// What a front end asks of the agent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Command {
    /// A message from the user. Sent while a turn runs, it steers that turn: the model
    /// receives it at its next step, after the results of the tools already running.
    /// `images` are paths of image files (PNG, JPEG, GIF, WebP) to attach to it; the
    /// user chose them, so they may lie outside the workspace.
    UserMessage {
        id: MessageId,
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<String>,
    },
    /// Cancel the current step: the model stream and any running tools. The conversation
    /// stays valid, and the next message continues it.
    Interrupt,
    /// Takes back the message `id`, sent during a turn, if it has not reached the
    /// model yet. [`Event::MessageWithdrawn`] confirms; without it, the message was
    /// already delivered.
    WithdrawMessage { id: MessageId },
    /// Answers the [`Event::ApprovalNeeded`] of `call_id`.
    Decide { call_id: String, decision: Decision },
    /// Switches the approval mode for everything decided from now on, including
    /// approvals still waiting.
    SetMode { mode: ApprovalMode },
    /// Forgets the conversation so far (the next message starts afresh). Ignored while a
    /// turn runs.
    ClearConversation,
    /// Reverts the file changes of the last turn that changed files, or of every turn of
    /// the session. Answered by [`Event::Undone`] or [`Event::UndoFailed`]; refused
    /// while a turn runs.
    Undo { scope: UndoScope },
    /// Compact the conversation now (`/compact [focus]`): prune older tool results and
    /// summarise the older turns, the summary keeping `focus` above all. Answered by
    /// [`Event::Compacted`] or [`Event::CompactionSkipped`]; refused while a turn runs.
    Compact { focus: Option<String> },
    /// Run the user's own command (`!command`) in the session's shell, between turns:
    /// never asked about, always in the sandbox; the model gets its result with the
    /// next message. Refused while a turn runs; an interrupt stops it.
    RunUserCommand { id: MessageId, command: String },
    /// The user at the terminal of the running command `call_id` (a model's call, or
    /// the user's own command by [`user_command_call_id`]); ignored once it ended.
    TypeIntoCommand {
        call_id: String,
        input: CommandInput,
    },
    /// End the agent task after cancelling whatever runs.
    Shutdown,
}

/// What the user does at a running command's terminal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CommandInput {
    /// The user turned to the command: while it has their attention, waiting for input
    /// does not stop it (its time limit still holds).
    Focus,
    /// The user turned away: waiting for input stops it again, counted from now.
    Release,
    /// Keys, as a terminal sends them (`"y\r"`, `"\u0003"` for Ctrl-C).
    Text { text: String },
}

/// A hook that runs in this session, as the session's header names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HookInfo {
    /// `PreToolUse`, `Stop`, ...
    pub event: String,
    /// Its command's first line.
    pub command: String,
    /// It runs outside the sandbox (the user's config says so).
    pub trusted: bool,
    /// A project's file configured it (the user's config trusts the project).
    pub project: bool,
}

/// The call id the user's own command `id` (`!command`) has in events and in
/// [`Command::TypeIntoCommand`].
pub fn user_command_call_id(id: MessageId) -> String {
    format!("!{id}")
}

/// What the agent reports. Serialized as-is by `duet exec --json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The agent is ready. `instructions` lists the instruction files loaded, in the
    /// order the model gets them: the user's own (`~/.claude/CLAUDE.md`), then the
    /// project's (full paths); `sandbox` is what protects the user from the shell's
    /// commands, as applied; `hooks` the hooks that will run.
    SessionStarted {
        model: String,
        workspace: String,
        instructions: Vec<String>,
        mode: ApprovalMode,
        sandbox: Protections,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        hooks: Vec<HookInfo>,
    },
    /// A user message was delivered to the model (a steering message included).
    UserMessageDelivered {
        id: MessageId,
        text: String,
    },
    /// The images of the delivered message `id`: `attached` as the model got them (file
    /// names), `refused` the ones that could not be, each with why (not an image, too
    /// large, unreadable, or a model that takes no images).
    ImagesAttached {
        id: MessageId,
        attached: Vec<String>,
        refused: Vec<String>,
    },
    /// The files the delivered message `id` mentions (`@path`, `@path:10-40`) were
    /// attached to it: `files` as the model got them, `problems` for the mentions of
    /// files that could not be (missing, outside the workspace, binary), which the
    /// model is told of too.
    FilesAttached {
        id: MessageId,
        files: Vec<String>,
        problems: Vec<String>,
    },
    /// A waiting message was taken back before delivery.
    MessageWithdrawn {
        id: MessageId,
        text: String,
    },
    /// A user message started turn `turn` (counted from 1 in the session; a resumed
    /// session counts on). Every event until its [`Event::TurnEnd`] belongs to it.
    TurnStarted {
        turn: u32,
    },
    /// A model call of turn `turn` is about to be sent; `step` counts calls within the
    /// turn from 1.
    StepStarted {
        turn: u32,
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
    /// The call's arguments are complete (raw JSON text as the model wrote it), with
    /// what the call does as its tool describes it: front ends show `info` and never
    /// decode `arguments` themselves.
    ToolCallReady {
        call_id: String,
        name: String,
        arguments: String,
        info: CallInfo,
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
    /// A hook has something to tell the user: its plain output, its `systemMessage`,
    /// a block and its reason, or its failure (`warning`). `hook_event` is the event it
    /// ran for (`PreToolUse`), `hook` its command's first line.
    HookNotice {
        hook_event: String,
        hook: String,
        text: String,
        warning: bool,
    },
    /// The running command of `call_id` waits for keyboard input: `program` reads its
    /// terminal, `line` is its unfinished last line (the prompt). Sent again when the
    /// line changes while it waits; output after it means the wait is over. A front end
    /// may answer with [`Command::TypeIntoCommand`]; unanswered, the command is stopped
    /// after the shell's input wait.
    CommandWaitingForInput {
        call_id: String,
        program: String,
        line: String,
    },
    /// The tool finished; `output` is exactly what the model receives. After a write
    /// or an edit, `checks` is the part of `output` the post-write checks added (its
    /// first line the verdict), for front ends to show apart.
    ToolRunEnd {
        call_id: String,
        is_error: bool,
        summary: String,
        output: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        checks: Option<String>,
    },
    /// The project-wide checks that ran after a batch of edits; `report` was appended to
    /// the result of `call_id`, the batch's last edit.
    ChecksReported {
        call_id: String,
        report: String,
    },
    /// The instruction files of directories below the workspace that the call
    /// `call_id` reached first (`files`, workspace-relative: `packages/api/AGENTS.md`)
    /// were appended to its result, each once per conversation.
    InstructionsLoaded {
        call_id: String,
        files: Vec<String>,
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
    /// A model call failed (or stopped at the output limit) and is sent again after
    /// `delay_ms`. `attempt` numbers the retries of this streak from 1, out of at most
    /// `max_attempts`; `reason` says what went wrong. With `discarded`, what the failed
    /// call streamed (text, thinking, calls being written) is void: it never enters the
    /// conversation, and front ends drop or mark it.
    Retrying {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        reason: String,
        discarded: bool,
    },
    /// The model client changed how it asks the server for the rest of the session
    /// (it left out a request feature the server refused); said once, for the user.
    ProviderNotice {
        text: String,
    },
    /// Token usage of the last model call, and the running total for the session.
    Usage {
        call: Usage,
        session: Usage,
        /// The session's cost in US dollars, when the model's prices are known.
        session_cost_usd: Option<f64>,
        /// The share of the context window the last call's prompt filled, when the
        /// window is known. `None` also for calls outside the conversation (an
        /// exploration's), which leave the conversation's share as it was.
        context_used: Option<f32>,
    },
    /// Turn `turn` is over; the agent waits for the next message.
    TurnEnd {
        turn: u32,
        outcome: TurnOutcome,
    },
    /// A resumed session's conversation, as the model will see it; sent once, right
    /// after [`Event::SessionStarted`]. `summaries` holds the one-line summary of each
    /// tool result, and `calls` what each tool call does, by call id.
    ConversationRestored {
        session_id: String,
        messages: Vec<Message>,
        summaries: BTreeMap<String, String>,
        calls: BTreeMap<String, CallInfo>,
    },
    /// The session transcript cannot be saved (sent once): duet keeps working, but the
    /// session cannot be resumed past this point.
    TranscriptUnsaved {
        path: String,
        reason: String,
    },
    /// The workspace was snapshotted as an unreferenced git commit, `before` the first
    /// side effect of turn `turn` (counted from 1 in the session) or `after` it ended.
    CheckpointTaken {
        turn: u32,
        stage: CheckpointStage,
        commit: String,
    },
    /// The changes of `turns` were reverted: `files` (workspace-relative) are back as
    /// they were before the oldest of them.
    Undone {
        turns: Vec<u32>,
        files: Vec<String>,
    },
    /// An undo changed nothing, or, right after an [`Event::Undone`], left some files
    /// as they were; `message` says which and why.
    UndoFailed {
        message: String,
    },
    /// The conversation filled enough of the context window to be compacted before the
    /// next model call; the estimates are of the prompt, in tokens.
    Compacted {
        before_tokens_estimate: u64,
        after_tokens_estimate: u64,
        kind: CompactionKind,
    },
    /// Compacting failed (`reason` says why); the conversation is left whole and is not
    /// compacted again in this session.
    CompactionFailed {
        reason: String,
    },
    /// A compaction the user asked for did not happen; `reason` says why. Automatic
    /// compaction stays on.
    CompactionSkipped {
        reason: String,
    },
    /// The user's own command (`!command`) started in the session's shell.
    UserCommandStarted {
        id: MessageId,
        command: String,
    },
    /// Live output of the user's command, for display only.
    UserCommandOutput {
        id: MessageId,
        text: String,
    },
    /// The user's command ended; `output` is what the model gets with the next message
    /// (as the shell tool words a result: `exit <code> · <duration> · cwd <dir>`, then
    /// the output).
    UserCommandEnded {
        id: MessageId,
        is_error: bool,
        summary: String,
        output: String,
    },
    /// An MCP server's state changed (starting, ready with its tools, restarting after a
    /// crash, failed). Its tools are offered from the first model call after `Ready`.
    McpServer {
        server: String,
        state: ServerState,
    },
}

impl Event {
    /// The turn an event names itself: the number of a turn's start, its steps and its
    /// end. Other events of a turn come between its start and its end.
    pub fn turn(&self) -> Option<u32> {
        match self {
            Event::TurnStarted { turn }
            | Event::StepStarted { turn, .. }
            | Event::TurnEnd { turn, .. } => Some(*turn),
            _ => None,
        }
    }
}

/// How [`Event::Compacted`] made the conversation smaller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompactionKind {
    /// Older tool results were replaced by one-line notes.
    PrunedToolResults,
    /// Older turns were replaced by a summary the model wrote.
    Summarised,
}

/// Which turns [`Command::Undo`] reverts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UndoScope {
    /// The last turn that changed files and is not undone yet.
    LastTurn,
    /// Every turn of the session that is not undone yet.
    All,
}

/// When a [`Event::CheckpointTaken`] snapshot was taken within its turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointStage {
    Before,
    After,
}

/// How a turn ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TurnOutcome {
    /// The model stopped without asking for more tools.
    Finished { stop_reason: StopReason },
    /// The user interrupted.
    Interrupted,
    /// The model call failed for good (retries exhausted or pointless), or its answers
    /// kept stopping at the output limit; `message` says why and what to check.
    Failed { message: String },
    /// A budget limit would have been passed by the next model call, so it was not sent.
    BudgetExhausted { report: BudgetReport },
    /// The model repeated itself (same call or same error); `message` says how.
    LoopDetected { message: String },
    /// A hook stopped the turn (`continue: false`), or refused the message that would
    /// have started it; `reason` says why.
    StoppedByHook { reason: String },
}

impl TurnOutcome {
    /// The outcome's name as `--json` spells it (its `kind`): `finished`,
    /// `interrupted`, `failed`, `budget_exhausted`, `loop_detected`, `stopped_by_hook`.
    pub fn kind(&self) -> &'static str {
        match self {
            TurnOutcome::Finished { .. } => "finished",
            TurnOutcome::Interrupted => "interrupted",
            TurnOutcome::Failed { .. } => "failed",
            TurnOutcome::BudgetExhausted { .. } => "budget_exhausted",
            TurnOutcome::LoopDetected { .. } => "loop_detected",
            TurnOutcome::StoppedByHook { .. } => "stopped_by_hook",
        }
    }
}

/// Which budget limit stopped a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BudgetLimit {
    Steps,
    WallTime,
    Tokens,
    Cost,
}

impl BudgetLimit {
    pub fn describe(self) -> &'static str {
        match self {
            BudgetLimit::Steps => "step limit",
            BudgetLimit::WallTime => "time limit",
            BudgetLimit::Tokens => "token limit",
            BudgetLimit::Cost => "cost limit",
        }
    }
}

/// What a task stopped by its budget had done, and where it was.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BudgetReport {
    pub limit: BudgetLimit,
    /// How the limit was reached, e.g. "30 of 30 model calls made".
    pub detail: String,
    /// Model calls made.
    pub steps: u32,
    pub elapsed_ms: u64,
    /// Tokens sent and received over all calls.
    pub tokens: u64,
    /// `None` when the model's prices are unknown.
    pub cost_usd: Option<f64>,
    pub tools_run: u32,
    /// Files the task's writes and edits changed, in the order first changed.
    pub files_changed: Vec<String>,
    /// The model's last text: where it was when stopped, and what it meant to do next.
    pub last_message: Option<String>,
}

/// What a person is asked to approve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ApprovalView {
    Edit {
        /// Where the file really is (links resolved), relative to the workspace.
        path: String,
        /// The path as the model gave it, when it goes through a symbolic link inside
        /// the workspace and so differs from `path`.
        requested: Option<String>,
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
    /// A call of a tool an MCP server provides; duet cannot see what it does.
    ExternalTool {
        server: String,
        /// The tool's name on its server.
        tool: String,
        /// The arguments as the model wrote them (JSON).
        arguments: String,
    },
}

impl ApprovalView {
    /// Protected paths the request would change; a front end that approves on the
    /// user's behalf (`duet exec --yes`, "allow for session") must not approve these.
    pub fn protected_paths(&self) -> &[Protection] {
        match self {
            ApprovalView::Edit { protected, .. } | ApprovalView::Command { protected, .. } => {
                protected
            }
            ApprovalView::ExternalTool { .. } => &[],
        }
    }
}

/// One hunk of a proposed edit, as offered for approval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HunkView {
    pub id: HunkId,
    /// `@@ -a,b +c,d @@`
    pub header: String,
    /// The hunk in unified form, header included.
    pub text: String,
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    /// Events are a contract both ways: what `duet exec --json` prints reads back as
    /// the same event (the eval reads runs this way).
    #[test]
    fn events_read_back_as_they_were_written() {
        let events = [
            Event::SessionStarted {
                model: "m".into(),
                workspace: "/w".into(),
                instructions: vec!["AGENTS.md".into()],
                mode: ApprovalMode::Auto,
                sandbox: Protections::example(true, true),
                hooks: vec![HookInfo {
                    event: "PreToolUse".into(),
                    command: "guard.py".into(),
                    trusted: false,
                    project: true,
                }],
            },
            Event::ToolCallReady {
                call_id: "c1".into(),
                name: "shell".into(),
                arguments: r#"{"command":"ls"}"#.into(),
                info: crate::tools::Registry::core().describe("shell", r#"{"command":"ls"}"#),
            },
            Event::ApprovalNeeded {
                call_id: "c1".into(),
                why: "writes".into(),
                request: ApprovalView::Command {
                    command: "rm -rf x".into(),
                    cwd: ".".into(),
                    class: CommandClass::Destructive,
                    reasons: vec![Reason {
                        part: "rm -rf x".into(),
                        class: CommandClass::Destructive,
                        why: "deletes recursively".into(),
                    }],
                    protected: vec![Protection {
                        path: ".env".into(),
                        why: "environment file".into(),
                    }],
                },
            },
            Event::InstructionsLoaded {
                call_id: "c2".into(),
                files: vec!["packages/api/AGENTS.md".into()],
            },
            Event::McpServer {
                server: "fs".into(),
                state: ServerState::Restarting {
                    attempt: 2,
                    reason: "exited".into(),
                },
            },
            Event::TurnEnd {
                turn: 1,
                outcome: TurnOutcome::LoopDetected {
                    message: "the same call three times".into(),
                },
            },
        ];
        for event in events {
            let json = serde_json::to_string(&event).expect("serializes");
            let back: Event = serde_json::from_str(&json).expect(&json);
            assert_eq!(back, event, "{json}");
        }
        let finished = TurnOutcome::Finished {
            stop_reason: StopReason::EndTurn,
        };
        assert_eq!(
            serde_json::to_value(&finished).expect("json")["kind"],
            finished.kind()
        );
    }
}
