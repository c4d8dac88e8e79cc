//! Tools from Model Context Protocol servers, offered to the model beside duet's own.
//!
//! Owns: the server list ([`config`]), starting each server in the background and
//! restarting it with backoff when it exits ([`McpHub`]), and the [`Tool`] adapter that
//! names a server's tools `server__tool` and maps their results to text.
//! Does not own: permission (each call asks the [`crate::policy::Approver`] like any
//! tool, with the rule from the user's config), scheduling or output clipping (the
//! agent does both for every tool), or rendering the servers' states (front ends show
//! the agent's `McpServer` events).
//! Invariant: a server never delays duet — nothing waits for a server to start, and a
//! call on a server that is not ready, crashes or overruns its timeout ends at once with
//! an error result that says so.

pub mod config;
mod connect;
pub mod results;
mod supervisor;
mod tool;
pub mod trust;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
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
        let shutdown = CancellationToken::new();
        let links = servers
            .into_iter()
            .map(|config| {
                let link = Arc::new(ServerLink::new(config, Arc::clone(&generation)));
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
            shutdown,
        };
        (hub, receiver)
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
