//! The agent: conversation state and the turn loop, driven through typed channels.
//!
//! Owns: the conversation, the system prompt and instructions, the loop that
//! calls the model and runs tools (in parallel where safe, as soon as each call is
//! complete), interrupts and steering, and recovery from failed or cut-off model calls.
//! Does not own: rendering (front ends consume [`Event`]s), wire formats (`provider/`),
//! tool behaviour (`tools/`), permission (`policy/`).
//! Invariant: every request sent to the model pairs each tool call with exactly one
//! result — after interrupts and failures too.
//!
//! Front ends call [`spawn`] and talk to the agent only through [`AgentHandle`] and the
//! [`Event`] receiver.

mod approval;
mod budget;
mod checkpoints;
mod compaction;
mod context;
mod conversation;
mod events;
mod explore;
mod hooks;
mod images;
mod mentions;
mod nested_instructions;
mod notes_file;
mod outside_changes;
mod prime;
pub mod protocol;
mod recording;
mod recovery;
mod repetition;
mod scheduler;
mod session;
mod step;
mod tool_runs;
mod tool_set;
mod turn;
mod user_command;
pub mod wording;

use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::config::{Budget, Compaction, ModelInfo};
use crate::instructions::UserFile;
use crate::lint::{LintConfig, Linter};
use crate::mcp::{McpHub, ServerConfig, StateChange};
use crate::policy::{ApprovalMode, GitIndex, Policy, PolicyConfig};
use crate::provider::{ModelClient, RetryPolicy, Usage};
use crate::session::{Session, SessionWriter};
use crate::shell::environment::EnvironmentPolicy;
use crate::shell::jobs::{JobError, JobView, Jobs};
use crate::shell::sandbox::Sandbox;
use crate::shell::{Shell, ShellConfig};
use crate::tools::{OutputSink, ReadLedger, Registry, ToolCtx, Workspace};

pub use notes_file::NOTES_FILE;
pub use protocol::{
    BudgetLimit, BudgetReport, Command, CompactionKind, Event, MessageId, TurnOutcome,
};

/// Events buffered between the agent and a slow front end before the agent waits.
const EVENT_BUFFER: usize = 1024;

/// How long the session's first model request waits, at most, for MCP servers still
/// starting, so that their tools are in it. Later requests never wait.
pub const MCP_STARTUP_WAIT: Duration = Duration::from_secs(1);

/// Everything the agent needs to start.
pub struct AgentSetup {
    pub client: Arc<dyn ModelClient>,
    /// The directory duet works in; no tool reaches outside it.
    pub workspace: PathBuf,
    pub approval: ApprovalMode,
    pub max_tokens: u32,
    /// How failed model calls are retried.
    pub retry: RetryPolicy,
    /// The environment variable the API key comes from, named when the provider
    /// refuses the key.
    pub api_key_env: Option<String>,
    /// Where clipped tool outputs are saved in full, and where checkpoints of a
    /// workspace outside git are kept (`checkpoints.git`).
    pub outputs_dir: PathBuf,
    pub shell: ShellConfig,
    pub lint: LintConfig,
    /// Limits on each task.
    pub budget: Budget,
    /// The model's context window and prices, where known.
    pub model_info: ModelInfo,
    /// When a conversation that fills the context window is compacted.
    pub compaction: Compaction,
    /// Where the session is recorded; `None` records nothing.
    pub transcript: Option<SessionWriter>,
    /// A recorded session to continue (`--resume`); `None` starts a new conversation.
    /// The approval mode is not restored: it comes from `approval` as always.
    pub resume: Option<Session>,
    /// Protected paths and what `auto` mode may run (from the user's config only).
    pub policy: PolicyConfig,
    /// The MCP servers to start in the background; their tools join as each is ready.
    pub mcp: Vec<ServerConfig>,
    /// The hooks to run (the user's, and a trusted project's).
    pub hooks: Vec<crate::hooks::Hook>,
    /// The session's id as hooks are told it (`session_id`).
    pub session_id: String,
    /// How long the first model request waits for servers still starting (normally
    /// [`MCP_STARTUP_WAIT`]).
    pub mcp_startup_wait: Duration,
    /// Where the user's own instruction files may be (`crate::instructions::user_files`);
    /// those that exist come before the project's. Empty: none are read.
    pub user_instructions: Vec<UserFile>,
}

/// The front end's end of the command channel.
#[derive(Clone, Debug)]
pub struct AgentHandle {
    commands: mpsc::UnboundedSender<Command>,
    /// The sandbox the agent's shell and checks run in, for the front end's own runs
    /// of project code (`duet exec --done`); `None` for a detached handle.
    sandbox: Option<Arc<Sandbox>>,
    /// The shell's background jobs, for `/ps`; weak, so that they end with the agent.
    jobs: Weak<Jobs>,
}

/// The agent task has ended; commands can no longer be delivered.
#[derive(Debug, thiserror::Error)]
#[error("the agent has stopped")]
pub struct AgentGone;

impl AgentHandle {
    pub fn send(&self, command: Command) -> Result<(), AgentGone> {
        self.commands.send(command).map_err(|_| AgentGone)
    }

    /// Resolves once the agent has stopped: after a [`Command::Shutdown`] it has recorded
    /// where its turn ended.
    pub async fn stopped(&self) {
        self.commands.closed().await;
    }

    /// The sandbox the agent runs project code in.
    pub fn sandbox(&self) -> Option<Arc<Sandbox>> {
        self.sandbox.clone()
    }

    /// The background jobs the model started, oldest first; empty once the agent has
    /// stopped (its jobs were killed with it).
    pub fn jobs(&self) -> Vec<JobView> {
        self.jobs
            .upgrade()
            .map(|jobs| jobs.list())
            .unwrap_or_default()
    }

    /// Stops background job `id` (SIGTERM to its group, SIGKILL after `grace`).
    pub async fn stop_job(&self, id: &str, grace: Duration) -> Result<JobView, JobError> {
        let Some(jobs) = self.jobs.upgrade() else {
            return Err(JobError::NotFound {
                id: id.to_string(),
                known: "the agent has stopped".into(),
            });
        };
        jobs.stop(id, grace).await
    }

    /// A handle with no agent behind it: its commands arrive on the returned receiver.
    /// For testing front ends without a model.
    pub fn detached() -> (AgentHandle, mpsc::UnboundedReceiver<Command>) {
        let (commands, receiver) = mpsc::unbounded_channel();
        (
            AgentHandle {
                commands,
                sandbox: None,
                jobs: Weak::new(),
            },
            receiver,
        )
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("cannot use {path} as the workspace: {source}")]
    Workspace {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Starts the agent task on the current tokio runtime. The first event is
/// [`Event::SessionStarted`], followed by [`Event::ConversationRestored`] when resuming;
/// the agent then waits for a [`Command::UserMessage`].
pub fn spawn(setup: AgentSetup) -> Result<(AgentHandle, mpsc::Receiver<Event>), SetupError> {
    let workspace = Workspace::new(&setup.workspace)
        .map_err(|source| SetupError::Workspace {
            path: setup.workspace.clone(),
            source,
        })?
        .with_saved_outputs(&setup.outputs_dir);
    let root = workspace.root().to_path_buf();
    // One sandbox for everything that runs project code: the shell, linters and
    // turn checks here, and the front end's own runs (the done command).
    let sandbox = Arc::new(Sandbox::new(
        &root,
        setup.shell.sandbox.clone(),
        setup.policy.protected.clone(),
        &EnvironmentPolicy::from_filter(&setup.shell.secrets),
    ));
    sandbox.set_workspace_read_only(setup.approval == ApprovalMode::ReadOnly);
    let (command_tx, command_rx) = mpsc::unbounded_channel();
    let (event_tx, event_rx) = mpsc::channel(EVENT_BUFFER);
    let mut events = events::EventSink::new(event_tx);
    if let Some(writer) = setup.transcript {
        events = events.recording(writer);
    }

    let instructions = context::load_instructions(&root, &setup.user_instructions);
    let mut system = vec![context::SYSTEM_PROMPT.trim_end().to_string()];
    system.extend(instructions.text);
    let meter = budget::SharedMeter::start(std::time::Instant::now());
    let approvals = Arc::new(approval::ApprovalDesk::new(
        setup.approval,
        Policy::new(&root, setup.policy),
        Arc::new(GitIndex::new(&root)),
        events.clone(),
    ));
    let hook_infos: Vec<protocol::HookInfo> = setup
        .hooks
        .iter()
        .map(|hook| protocol::HookInfo {
            event: hook.event.name().to_string(),
            command: hook.label(),
            trusted: hook.trusted,
            project: matches!(hook.origin, crate::hooks::Origin::Project(_)),
        })
        .collect();
    let hooks = hooks::AgentHooks::new(
        crate::hooks::Hooks::new(
            setup.hooks,
            &root,
            Some(Arc::clone(&sandbox)),
            &setup.session_id,
        ),
        Arc::clone(&approvals),
        root.clone(),
    );
    let tools = Registry::core().with(Arc::new(explore::Explore {
        client: Arc::clone(&setup.client),
        meter: meter.clone(),
        budget: setup.budget,
        model_info: setup.model_info,
        max_tokens: setup.max_tokens,
        max_steps: explore::MAX_EXPLORE_STEPS,
        outputs_dir: setup.outputs_dir.clone(),
        // The explorer's lookups go through the same PreToolUse and PostToolUse hooks.
        hooks: hooks.clone(),
    }));
    // Full outputs of clipped commands go where `read` may open them.
    let shell = Arc::new(Shell::with_sandbox(
        &root,
        ShellConfig {
            outputs_dir: Some(setup.outputs_dir.clone()),
            ..setup.shell
        },
        Arc::clone(&sandbox),
    ));
    let jobs_handle = Arc::downgrade(shell.jobs());
    let workspace = Arc::new(workspace);
    let checkpoints = Arc::new(checkpoints::Checkpoints::new(
        Arc::clone(&workspace),
        setup.outputs_dir.join("checkpoints.git"),
        events.clone(),
    ));
    let tool_ctx = ToolCtx {
        workspace,
        ledger: Arc::new(ReadLedger::watching()),
        // Every side effect asks first, so the gate sees the first one of each turn.
        approver: Arc::new(checkpoints::CheckpointGate {
            desk: approvals.clone(),
            checkpoints: Arc::clone(&checkpoints),
        }),
        shell: shell.clone(),
        linter: Arc::new(Linter::new(&root, setup.lint).with_sandbox(Arc::clone(&sandbox))),
        output: OutputSink::default(),
        keyboards: Default::default(),
        call_id: String::new(),
        cancel: CancellationToken::new(),
    };
    let model = setup.client.model().to_string();
    let workspace = root.display().to_string();
    let instructions = instructions.files;
    let mode = setup.approval;
    let call_site = recovery::CallSite {
        model: setup.client.model().to_string(),
        api_key_env: setup.api_key_env,
    };
    let restore = |session| recording::restore(session, &tools);
    let (conversation, session_usage, restored) = match setup.resume.map(restore) {
        Some(restored) => {
            let history = (restored.turns, restored.undoable);
            let event = restored.event;
            (
                restored.conversation,
                restored.usage,
                Some((event, history)),
            )
        }
        None => (
            conversation::Conversation::default(),
            Usage::default(),
            None,
        ),
    };
    let resumed = restored.is_some();
    // A resumed conversation may hold nested instructions already.
    let nested_instructions =
        nested_instructions::NestedInstructions::given_in(conversation.messages());
    let restored_checkpoints = Arc::clone(&checkpoints);
    // Servers start now, off the agent's path; their states are reported after
    // `SessionStarted`.
    let (mcp, mcp_changes) = McpHub::start(setup.mcp, &root, Some(Arc::clone(&sandbox)));
    let agent = session::Agent {
        client: setup.client,
        tools: tool_set::ToolSet::new(tools, mcp, setup.mcp_startup_wait),
        tool_ctx,
        approvals,
        system,
        workspace: root,
        outputs_dir: setup.outputs_dir,
        max_tokens: setup.max_tokens,
        retry: setup.retry,
        call_site,
        events: events.clone(),
        commands: command_rx,
        conversation,
        pending: Vec::new(),
        session_usage,
        budget: setup.budget,
        model_info: setup.model_info,
        meter,
        checkpoints,
        compaction: compaction::Compactor::new(setup.compaction),
        hooks,
        nested_instructions,
    };
    tokio::spawn(async move {
        let mut agent = agent;
        // Probing the sandbox runs its launcher once, so it happens here, off the
        // caller's path; the first shell command waits for the same probe.
        let sandbox = shell.protections().await;
        events
            .emit(Event::SessionStarted {
                model,
                workspace,
                instructions,
                mode,
                sandbox,
                hooks: hook_infos,
            })
            .await;
        if let Some((restored, (turns, undoable))) = restored {
            restored_checkpoints.restore(turns, undoable).await;
            events.emit(restored).await;
        }
        tokio::spawn(report_mcp_states(mcp_changes, events));
        agent.start_hooks(resumed).await;
        agent.run().await;
    });
    Ok((
        AgentHandle {
            commands: command_tx,
            sandbox: Some(sandbox),
            jobs: jobs_handle,
        },
        event_rx,
    ))
}

/// Forwards MCP server state changes as events until the servers stop (the agent
/// dropped the hub).
async fn report_mcp_states(
    mut changes: mpsc::UnboundedReceiver<StateChange>,
    events: events::EventSink,
) {
    while let Some(StateChange { server, state }) = changes.recv().await {
        events.emit(Event::McpServer { server, state }).await;
    }
}
