//! The tools offered to the model in a step: duet's own, and those of the MCP servers
//! that are ready.
//!
//! Owns: the registry of the current step and its specs, rebuilt when the MCP hub's
//! tool lists change, and the one wait of the session for servers still starting
//! (before its first request). Does not own: what a tool does (`tools/`, `mcp/`).
//! Invariant: while the hub's tool lists are unchanged, the specs stay byte-identical
//! from one request to the next (prompt caching depends on it).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::mcp::McpHub;
use crate::provider::ToolSpec;
use crate::tools::{Concurrency, Registry};

pub(crate) struct ToolSet {
    /// duet's own tools, offered in every step.
    builtin: Registry,
    mcp: Arc<McpHub>,
    /// The hub's tool-list generation `offered` was built from.
    generation: u64,
    offered: Registry,
    specs: Vec<ToolSpec>,
    /// How long the first request may wait for servers still starting; taken by it.
    startup_wait: Option<Duration>,
}

impl ToolSet {
    /// duet's own tools, joined by each MCP server's once it is ready; the first
    /// request waits up to `startup_wait` for servers still starting.
    pub(crate) fn new(builtin: Registry, mcp: McpHub, startup_wait: Duration) -> Self {
        Self {
            specs: builtin.specs(),
            offered: builtin.clone(),
            builtin,
            mcp: Arc::new(mcp),
            generation: 0,
            startup_wait: Some(startup_wait),
        }
    }

    /// The first time only: a wait until no MCP server is still starting, or the
    /// startup wait has passed, so that the session's first request can offer their
    /// tools. `None` ever after, and when no server is starting.
    pub(crate) fn first_wait(&mut self) -> Option<impl Future<Output = ()> + use<>> {
        let limit = self.startup_wait.take()?;
        if self.mcp.starting().is_empty() {
            return None;
        }
        let mcp = Arc::clone(&self.mcp);
        Some(async move { mcp.wait_while_starting(limit).await })
    }

    /// The MCP servers still starting, whose tools are not offered yet.
    pub(crate) fn servers_starting(&self) -> Vec<String> {
        self.mcp.starting()
    }

    /// Offers the tools of MCP servers that became ready, and stops offering those of
    /// servers that failed, since the last call.
    pub(crate) fn refresh(&mut self) {
        let generation = self.mcp.generation();
        if generation == self.generation {
            return;
        }
        self.generation = generation;
        self.offered = self
            .mcp
            .tools()
            .into_iter()
            .fold(self.builtin.clone(), Registry::with);
        self.specs = self.offered.specs();
    }

    /// The tools offered in the current step.
    pub(crate) fn registry(&self) -> &Registry {
        &self.offered
    }

    pub(crate) fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    /// Whether a call of the tool `name` may change the workspace or its git state:
    /// anything but the tools that may run in parallel, which only look.
    pub(crate) fn may_change_workspace(&self, name: &str) -> bool {
        self.offered
            .get(name)
            .is_none_or(|tool| tool.concurrency() == Concurrency::Exclusive)
    }

    /// Whether `name` is a tool that writes or edits files.
    pub(crate) fn edits_files(&self, name: &str) -> bool {
        self.offered
            .get(name)
            .is_some_and(|tool| tool.edits_files())
    }
}
