//! The agent: conversation state and the turn loop, driven through typed channels.
//!
//! Owns: the conversation, the system prompt and project instructions, the loop that
//! calls the model and runs tools (in parallel where safe, as soon as each call is
//! complete), interrupts and steering.
//! Does not own: rendering (front ends consume [`Event`]s), wire formats (`provider/`),
//! tool behaviour (`tools/`), permission (`policy/`).
//! Invariant: every request sent to the model pairs each tool call with exactly one
//! result — after interrupts and failures too.
//!
//! Front ends call [`spawn`] and talk to the agent only through [`AgentHandle`] and the
//! [`Event`] receiver.

mod approval;
mod context;
mod conversation;
mod events;
pub mod protocol;
mod scheduler;
mod tool_runs;
mod turn;

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::lint::{LintConfig, Linter};
use crate::policy::{ApprovalMode, GitIndex, Policy, PolicyConfig};
use crate::provider::{ModelClient, Usage};
use crate::shell::{Shell, ShellConfig};
use crate::tools::{OutputSink, ReadLedger, Registry, ToolCtx, Workspace};

pub use protocol::{Command, Event, TurnOutcome};

/// Events buffered between the agent and a slow front end before the agent waits.
const EVENT_BUFFER: usize = 1024;

/// Everything the agent needs to start.
pub struct AgentSetup {
    pub client: Arc<dyn ModelClient>,
    /// The directory duet works in; no tool reaches outside it.
    pub workspace: PathBuf,
    pub approval: ApprovalMode,
    pub max_tokens: u32,
    /// Where clipped tool outputs are saved in full.
    pub outputs_dir: PathBuf,
    pub shell: ShellConfig,
    pub lint: LintConfig,
    /// Protected paths and what `auto` mode may run (from the user's config only).
    pub policy: PolicyConfig,
}

/// The front end's end of the command channel.
#[derive(Clone, Debug)]
pub struct AgentHandle {
    commands: mpsc::UnboundedSender<Command>,
}

/// The agent task has ended; commands can no longer be delivered.
#[derive(Debug, thiserror::Error)]
#[error("the agent has stopped")]
pub struct AgentGone;

impl AgentHandle {
    pub fn send(&self, command: Command) -> Result<(), AgentGone> {
        self.commands.send(command).map_err(|_| AgentGone)
    }

    /// A handle with no agent behind it: its commands arrive on the returned receiver.
    /// For testing front ends without a model.
    pub fn detached() -> (AgentHandle, mpsc::UnboundedReceiver<Command>) {
        let (commands, receiver) = mpsc::unbounded_channel();
        (AgentHandle { commands }, receiver)
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
/// [`Event::SessionStarted`]; the agent then waits for a [`Command::UserMessage`].
pub fn spawn(setup: AgentSetup) -> Result<(AgentHandle, mpsc::Receiver<Event>), SetupError> {
    let workspace = Workspace::new(&setup.workspace)
        .map_err(|source| SetupError::Workspace {
            path: setup.workspace.clone(),
            source,
        })?
        .with_saved_outputs(&setup.outputs_dir);
    let root = workspace.root().to_path_buf();
    let (command_tx, command_rx) = mpsc::unbounded_channel();
    let (event_tx, event_rx) = mpsc::channel(EVENT_BUFFER);
    let events = events::EventSink::new(event_tx);

    let instructions = context::load_instructions(&root);
    let mut system = vec![context::SYSTEM_PROMPT.trim_end().to_string()];
    system.extend(instructions.text);
    let tools = Registry::core();
    let approvals = Arc::new(approval::ApprovalDesk::new(
        setup.approval,
        Policy::new(&root, setup.policy),
        Arc::new(GitIndex::new(&root)),
        events.clone(),
    ));
    let tool_ctx = ToolCtx {
        workspace: Arc::new(workspace),
        ledger: Arc::new(ReadLedger::default()),
        approver: approvals.clone(),
        // Full outputs of clipped commands go where `read` may open them.
        shell: Arc::new(Shell::new(
            &root,
            ShellConfig {
                outputs_dir: Some(setup.outputs_dir.clone()),
                ..setup.shell
            },
        )),
        linter: Arc::new(Linter::new(&root, setup.lint)),
        output: OutputSink::default(),
        call_id: String::new(),
        cancel: CancellationToken::new(),
    };
    let started = Event::SessionStarted {
        model: setup.client.model().to_string(),
        workspace: root.display().to_string(),
        instructions: instructions
            .files
            .iter()
            .map(|path| path.display().to_string())
            .collect(),
        mode: setup.approval,
    };
    let agent = turn::Agent {
        client: setup.client,
        tool_specs: tools.specs(),
        tools,
        tool_ctx,
        approvals,
        system,
        workspace: root,
        outputs_dir: setup.outputs_dir,
        max_tokens: setup.max_tokens,
        events: events.clone(),
        commands: command_rx,
        conversation: conversation::Conversation::default(),
        pending: Vec::new(),
        session_usage: Usage::default(),
    };
    tokio::spawn(async move {
        events.emit(started).await;
        agent.run().await;
    });
    Ok((
        AgentHandle {
            commands: command_tx,
        },
        event_rx,
    ))
}
