//! Tools from Model Context Protocol servers, offered to the model beside duet's own.
//!
//! Owns: the server list ([`config`]), starting each server in the background and
//! restarting it with backoff when it exits ([`McpHub`]), and the [`Tool`] adapter that
//! names a server's tools `server__tool` and maps their results to text.
//! Does not own: permission (each call asks the [`crate::policy::Approver`] like any
//! tool, with the rule from the user's config), scheduling or output clipping (the
//! agent does both for every tool), or rendering the servers' states (front ends show
//! the agent's `McpServer` events).
//! Invariant: a server delays duet once at most, by a bound the caller sets: the
//! session's first model request may wait that long for servers still starting
//! ([`McpHub::wait_while_starting`]), so that their tools are in it; nothing else waits
//! for a server, and a call on a server that is not ready, crashes or overruns its
//! timeout ends at once with an error result that says so.

pub mod config;
mod connect;
pub mod results;
mod supervisor;
mod tool;
pub mod trust;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

use crate::shell::sandbox::Sandbox;
use crate::tools::Tool;

pub use config::{McpConfig, McpConfigError, McpSection, ServerConfig, Source, Transport};
pub use connect::probe;
pub use tool::ToolShape;

use supervisor::ServerLink;

/// Where a server is in its life.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ServerState {
    /// Started, not yet answering.
    Starting,
    /// Answering; its `tools` tools are offered to the model.
    Ready { tools: usize },
    /// It exited (`reason`) and is started again; `attempt` counts from 1.
    Restarting { attempt: u32, reason: String },
    /// It could not be started, or kept exiting; its tools are gone for this session.
    Failed { reason: String },
}

impl std::fmt::Display for ServerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerState::Starting => f.write_str("starting"),
            ServerState::Ready { tools: 1 } => f.write_str("ready (1 tool)"),
            ServerState::Ready { tools } => write!(f, "ready ({tools} tools)"),
            ServerState::Restarting { attempt, reason } => {
                write!(f, "restarting (attempt {attempt}): {reason}")
            }
            ServerState::Failed { reason } => write!(f, "failed: {reason}"),
        }
    }
}

/// A server's state changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateChange {
    pub server: String,
    pub state: ServerState,
}

/// The running servers. Dropping the hub stops them.
pub struct McpHub {
    links: Vec<Arc<ServerLink>>,
    /// Bumped whenever some server's tool list changes.
    generation: Arc<AtomicU64>,
    /// Woken whenever some server's state changes.
    state_changed: Arc<Notify>,
    shutdown: CancellationToken,
}

impl McpHub {
    /// Starts every server in `servers` in the background (stdio servers run in
    /// `workspace`, the project's inside `sandbox`) and returns at once. Each state
    /// change is sent on the receiver.
    pub fn start(
        servers: Vec<ServerConfig>,
        workspace: &Path,
        sandbox: Option<Arc<Sandbox>>,
    ) -> (Self, mpsc::UnboundedReceiver<StateChange>) {
        let (changes, receiver) = mpsc::unbounded_channel();
        let generation = Arc::new(AtomicU64::new(0));
        let state_changed = Arc::new(Notify::new());
        let shutdown = CancellationToken::new();
        let links = servers
            .into_iter()
            .map(|config| {
                let link = Arc::new(ServerLink::new(
                    config,
                    Arc::clone(&generation),
                    Arc::clone(&state_changed),
                ));
                tokio::spawn(supervisor::supervise(
                    Arc::clone(&link),
                    workspace.to_path_buf(),
                    sandbox.clone(),
                    changes.clone(),
                    shutdown.clone(),
                ));
                link
            })
            .collect();
        let hub = Self {
            links,
            generation,
            state_changed,
            shutdown,
        };
        (hub, receiver)
    }

    /// The servers that have not yet answered for the first time (nor failed), in
    /// config order.
    pub fn starting(&self) -> Vec<String> {
        self.links
            .iter()
            .filter(|link| link.is_starting())
            .map(|link| link.name().to_string())
            .collect()
    }

    /// Waits until no server is starting any more (each is ready or has failed), or
    /// `limit` has passed, whichever comes first.
    pub async fn wait_while_starting(&self, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            // Listening before looking: a change between the look and the wait still
            // wakes it.
            let changed = self.state_changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if !self.links.iter().any(|link| link.is_starting()) {
                return;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return;
            }
        }
    }

    /// A number that changes whenever [`McpHub::tools`] would return another list.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The tools of every ready server, and of those restarting (their tools answer
    /// that they are): servers in config order, each server's tools in the order it
    /// listed them (a stable order keeps the prompt prefix cacheable).
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.links.iter().flat_map(|link| link.tools()).collect()
    }
}

impl Drop for McpHub {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::policy::ToolRule;

    fn server(name: &str, command: &str) -> ServerConfig {
        ServerConfig {
            name: name.into(),
            transport: Transport::Stdio {
                command: command.into(),
                args: Vec::new(),
                env: Default::default(),
                keep_env: Vec::new(),
            },
            call_timeout: Duration::from_secs(1),
            enabled: true,
            default_rule: ToolRule::Ask,
            tool_rules: Default::default(),
            parallel_read_only: false,
            source: Source::User(PathBuf::from("/cfg.toml")),
        }
    }

    #[tokio::test]
    async fn the_wait_ends_when_no_server_is_starting_and_a_failed_one_is_not_waited_for() {
        let (empty, _changes) = McpHub::start(Vec::new(), Path::new("/"), None);
        assert_eq!(empty.starting(), Vec::<String>::new());
        tokio::time::timeout(
            Duration::from_millis(100),
            empty.wait_while_starting(Duration::from_secs(60)),
        )
        .await
        .expect("nothing to wait for");

        let (hub, _changes) = McpHub::start(
            vec![server("broken", "/nonexistent/mcp-server")],
            Path::new("/"),
            None,
        );
        assert_eq!(hub.starting(), ["broken"]);
        tokio::time::timeout(
            Duration::from_secs(20),
            hub.wait_while_starting(Duration::from_secs(60)),
        )
        .await
        .expect("a server that cannot start ends the wait");
        assert_eq!(hub.starting(), Vec::<String>::new());
    }
}
