//! Starting the library's agent for one session, and the thread the terminal UI
//! drives it on.
//!
//! Owns: handing the resolved settings, model client and session to the agent
//! ([`AgentStart`]), and the agent thread's lifetime in the terminal UI
//! ([`AgentThread`]). Does not own: the agent
//! (`duet::agent`), the settings (`super::settings`) or the session (`duet::session`).
//! Invariant: the agent thread never outlives the UI: dropping it asks the agent to
//! shut down, gives it [`AGENT_SHUTDOWN_GRACE`], and joins the thread.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use duet::agent::{AgentHandle, Event};
use duet::config::{Paths, Settings};
use duet::provider::ModelClient;
use duet::session::{self, Resume, SessionPlan};

use super::args::Cli;
use super::settings::model_client;

/// How long quitting waits for the agent to record where its turn ended.
const AGENT_SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// What the agent of one run starts from: everything resolved before it starts.
pub struct AgentStart {
    pub settings: Settings,
    pub client: Arc<dyn ModelClient>,
    pub workspace: PathBuf,
    pub session: SessionPlan,
}

impl AgentStart {
    /// The model client for `settings` and the session the run records to (`resume`d
    /// or new): what every front end prepares before it starts the agent.
    pub fn prepare(
        cli: &Cli,
        paths: &Paths,
        workspace: PathBuf,
        settings: Settings,
        resume: Option<Resume>,
    ) -> anyhow::Result<Self> {
        let client = model_client(cli, &settings)?;
        let session = session::open(
            &paths.sessions_dir(),
            &workspace,
            &settings.endpoint,
            resume,
        )?;
        Ok(Self {
            settings,
            client,
            workspace,
            session,
        })
    }

    /// Starts the agent on the current runtime; its tool outputs go under `paths`.
    pub fn spawn(
        self,
        paths: &Paths,
    ) -> anyhow::Result<(AgentHandle, tokio::sync::mpsc::Receiver<Event>)> {
        let AgentStart {
            settings,
            client,
            workspace,
            session,
        } = self;
        Ok(duet::agent::spawn(duet::agent::AgentSetup {
            client,
            workspace,
            approval: settings.approval,
            max_tokens: settings.max_tokens,
            retry: settings.retry,
            api_key_env: Some(settings.api_key_env),
            outputs_dir: paths.outputs_dir(&session.id),
            shell: settings.shell,
            lint: settings.lint,
            budget: settings.budget,
            model_info: settings.model_info,
            compaction: settings.compaction,
            transcript: Some(session.transcript),
            resume: session.resume,
            policy: settings.policy,
            mcp: settings.mcp.startable(),
            hooks: settings.hooks,
            session_id: session.id,
            mcp_startup_wait: duet::agent::MCP_STARTUP_WAIT,
            user_instructions: duet::instructions::user_files_from_process(
                paths.config_file.parent(),
            ),
        })?)
    }
}

/// The thread that drives the agent's runtime while the terminal UI runs on its own.
/// Dropping it asks the agent to shut down (the UI may have asked already, or left on
/// an error without asking), gives it up to [`AGENT_SHUTDOWN_GRACE`] to record where
/// its turn ended, then stops the runtime (the tasks left are dropped) and waits for
/// the thread.
pub struct AgentThread {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl AgentThread {
    pub fn spawn(
        runtime: tokio::runtime::Runtime,
        agent: AgentHandle,
    ) -> anyhow::Result<AgentThread> {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("duet-agent".into())
            .spawn(move || {
                runtime.block_on(async {
                    // Either a stop or its sender dropped: both mean the UI is done.
                    let _ = stopped.await;
                    let _ = agent.send(duet::agent::Command::Shutdown);
                    let _ = tokio::time::timeout(AGENT_SHUTDOWN_GRACE, agent.stopped()).await;
                });
            })
            .context("cannot start the agent's thread")?;
        Ok(AgentThread {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for AgentThread {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
