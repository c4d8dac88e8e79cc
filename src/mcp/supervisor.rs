//! One server's life: start, serve until it exits, restart with backoff, give up.
//!
//! A server that cannot be started the first time has failed for the session (a wrong
//! command does not fix itself); one that was ready and exits is restarted, with
//! doubling waits, until it has exited [`MAX_RESTARTS`] times in a row without staying
//! up for [`STABLE_UPTIME`]. While it is down its tools answer with an error at once.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rmcp::service::{Peer, RoleClient, ServiceError};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

use crate::shell::sandbox::Sandbox;
use crate::tools::Tool;

use super::config::ServerConfig;
use super::connect::{self, LastWords, Opened};
use super::tool::{McpTool, ToolShape, shapes};
use super::{ServerState, StateChange};

/// Exits in a row after which a server is given up.
const MAX_RESTARTS: u32 = 5;
/// Up this long, a server's earlier exits are forgiven.
const STABLE_UPTIME: Duration = Duration::from_secs(60);
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// What the hub, the supervisor and the server's tools share about one server.
pub(crate) struct ServerLink {
    config: ServerConfig,
    /// The hub's tool-list generation, bumped when this server's tools change.
    generation: Arc<AtomicU64>,
    /// The hub's signal that some server's state changed.
    state_changed: Arc<Notify>,
    status: Mutex<Status>,
}

struct Status {
    state: ServerState,
    /// The session's request handle while the server is ready.
    peer: Option<Peer<RoleClient>>,
    tools: Vec<Arc<dyn Tool>>,
}

impl ServerLink {
    pub(crate) fn new(
        config: ServerConfig,
        generation: Arc<AtomicU64>,
        state_changed: Arc<Notify>,
    ) -> Self {
        Self {
            config,
            generation,
            state_changed,
            status: Mutex::new(Status {
                state: ServerState::Starting,
                peer: None,
                tools: Vec::new(),
            }),
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.config.name
    }

    pub(crate) fn config(&self) -> &ServerConfig {
        &self.config
    }

    pub(crate) fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.status().tools.clone()
    }

    /// Whether the server has not yet answered for the first time, nor failed.
    pub(crate) fn is_starting(&self) -> bool {
        self.status().state == ServerState::Starting
    }

    /// The session to call on, or why there is none (written for the model).
    pub(crate) fn ready_peer(&self) -> Result<Peer<RoleClient>, String> {
        let status = self.status();
        let name = self.name();
        match (&status.peer, &status.state) {
            (Some(peer), ServerState::Ready { .. }) => Ok(peer.clone()),
            (_, ServerState::Failed { reason }) => Err(format!(
                "MCP server `{name}` has failed ({reason}); its tools cannot be used in this \
                 session."
            )),
            (_, ServerState::Restarting { reason, .. }) => Err(format!(
                "MCP server `{name}` is restarting ({reason}); try again in a moment."
            )),
            _ => Err(format!(
                "MCP server `{name}` is not ready yet; try again in a moment."
            )),
        }
    }

    /// Explains a failed call (written for the model).
    pub(crate) fn call_failed(&self, error: &ServiceError) -> String {
        let name = self.name();
        match error {
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => format!(
                "MCP server `{name}` stopped during the call (it is being restarted); the \
                 call may or may not have taken effect."
            ),
            other => format!("MCP server `{name}` could not complete the call: {other}"),
        }
    }

    fn status(&self) -> MutexGuard<'_, Status> {
        // Plain data: a panic elsewhere mid-update leaves nothing half-written that matters.
        self.status.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records the new state (and the tools that come or go with it), then reports it:
    /// whoever sees the change finds the tools already in place.
    fn enter(
        self: &Arc<Self>,
        state: ServerState,
        tools: ToolChange,
        changes: &mpsc::UnboundedSender<StateChange>,
    ) {
        {
            let mut status = self.status();
            status.state = state.clone();
            let offered = match tools {
                ToolChange::Offer(peer, shapes) => {
                    status.peer = Some(peer);
                    Some(
                        shapes
                            .into_iter()
                            .map(|shape| {
                                Arc::new(McpTool::new(shape, Arc::clone(self))) as Arc<dyn Tool>
                            })
                            .collect(),
                    )
                }
                ToolChange::Keep => {
                    status.peer = None;
                    None
                }
                ToolChange::Withdraw => {
                    status.peer = None;
                    Some(Vec::new())
                }
            };
            if let Some(offered) = offered
                && !(offered.is_empty() && status.tools.is_empty())
            {
                status.tools = offered;
                self.generation.fetch_add(1, Ordering::AcqRel);
            }
        }
        self.state_changed.notify_waiters();
        tracing::info!(server = self.name(), %state, "mcp server state");
        // Nobody listening only means the session is ending.
        let _ = changes.send(StateChange {
            server: self.name().to_string(),
            state,
        });
    }
}

/// What a state change does to the tools the model is offered.
enum ToolChange {
    /// The server is ready with these tools.
    Offer(Peer<RoleClient>, Vec<ToolShape>),
    /// The server is down for now: its tools stay listed and answer that it is
    /// restarting, so a call the model already planned gets that answer.
    Keep,
    /// The server is gone for the session.
    Withdraw,
}

/// Runs the server at `link` until `shutdown`, restarting it as described above.
pub(crate) async fn supervise(
    link: Arc<ServerLink>,
    workspace: PathBuf,
    sandbox: Option<Arc<Sandbox>>,
    changes: mpsc::UnboundedSender<StateChange>,
    shutdown: CancellationToken,
) {
    link.enter(ServerState::Starting, ToolChange::Keep, &changes);
    let mut exits: u32 = 0;
    let mut was_ready = false;
    loop {
        let last_words = LastWords::default();
        let started = tokio::select! {
            started = start(link.config(), &workspace, sandbox.as_deref(), &last_words) => started,
            () = shutdown.cancelled() => return,
        };
        let reason = match started {
            Ok((opened, shapes)) => {
                was_ready = true;
                let Some(uptime) = serve(&link, opened, shapes, &changes, &shutdown).await else {
                    return;
                };
                if uptime >= STABLE_UPTIME {
                    exits = 0;
                }
                last_words.explain("the server exited")
            }
            Err(reason) if !was_ready => {
                link.enter(
                    ServerState::Failed { reason },
                    ToolChange::Withdraw,
                    &changes,
                );
                return;
            }
            Err(reason) => reason,
        };
        exits += 1;
        if exits > MAX_RESTARTS {
            let reason = format!("{reason}; gave up after {MAX_RESTARTS} restarts");
            link.enter(
                ServerState::Failed { reason },
                ToolChange::Withdraw,
                &changes,
            );
            return;
        }
        let state = ServerState::Restarting {
            attempt: exits,
            reason,
        };
        link.enter(state, ToolChange::Keep, &changes);
        tokio::select! {
            () = tokio::time::sleep(backoff(exits)) => {}
            () = shutdown.cancelled() => return,
        }
    }
}

/// Offers the ready server's tools and waits until it exits; returns how long it was
/// up, or `None` when duet shut it down.
async fn serve(
    link: &Arc<ServerLink>,
    opened: Opened,
    shapes: Vec<ToolShape>,
    changes: &mpsc::UnboundedSender<StateChange>,
    shutdown: &CancellationToken,
) -> Option<Duration> {
    let Opened {
        session,
        _confinement,
    } = opened;
    let up_since = Instant::now();
    let state = ServerState::Ready {
        tools: shapes.len(),
    };
    link.enter(
        state,
        ToolChange::Offer(session.peer().clone(), shapes),
        changes,
    );
    let stop = session.cancellation_token();
    tokio::select! {
        quit = session.waiting() => {
            tracing::info!(server = link.name(), ?quit, "mcp server session ended");
            Some(up_since.elapsed())
        }
        () = shutdown.cancelled() => {
            stop.cancel();
            None
        }
    }
}

/// Opens a session and lists the tools, within [`connect::START_TIMEOUT`].
async fn start(
    config: &ServerConfig,
    workspace: &Path,
    sandbox: Option<&Sandbox>,
    last_words: &LastWords,
) -> Result<(Opened, Vec<ToolShape>), String> {
    let attempt = async {
        let opened = connect::open(config, workspace, sandbox, last_words).await?;
        let tools = connect::list_tools(&opened.session).await?;
        Ok((opened, shapes(config, &tools)))
    };
    tokio::time::timeout(connect::START_TIMEOUT, attempt)
        .await
        .unwrap_or_else(|_| {
            Err(last_words.explain(&format!(
                "it did not answer within {}s",
                connect::START_TIMEOUT.as_secs()
            )))
        })
}

/// The wait before restart `attempt` (from 1): doubling from [`FIRST_BACKOFF`].
fn backoff(attempt: u32) -> Duration {
    let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
    FIRST_BACKOFF.saturating_mul(factor).min(MAX_BACKOFF)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::mcp::config::{Source, Transport};
    use crate::policy::ToolRule;

    fn link() -> Arc<ServerLink> {
        let config = ServerConfig {
            name: "files".into(),
            transport: Transport::Http {
                url: "http://localhost/mcp".into(),
            },
            call_timeout: Duration::from_secs(1),
            enabled: true,
            default_rule: ToolRule::Ask,
            tool_rules: Default::default(),
            parallel_read_only: false,
            source: Source::User(PathBuf::from("/cfg.toml")),
        };
        Arc::new(ServerLink::new(
            config,
            Arc::new(AtomicU64::new(0)),
            Arc::new(Notify::new()),
        ))
    }

    #[test]
    fn a_server_that_is_down_says_why_at_once() {
        let link = link();
        let (changes, mut reported) = mpsc::unbounded_channel();
        assert!(
            link.ready_peer()
                .unwrap_err()
                .contains("MCP server `files` is not ready yet")
        );
        let restarting = ServerState::Restarting {
            attempt: 1,
            reason: "the server exited".into(),
        };
        link.enter(restarting.clone(), ToolChange::Keep, &changes);
        assert_eq!(
            link.ready_peer().unwrap_err(),
            "MCP server `files` is restarting (the server exited); try again in a moment."
        );
        let failed = ServerState::Failed {
            reason: "gave up".into(),
        };
        link.enter(failed.clone(), ToolChange::Withdraw, &changes);
        assert!(
            link.ready_peer()
                .unwrap_err()
                .contains("has failed (gave up); its tools cannot be used")
        );
        let states: Vec<ServerState> = std::iter::from_fn(|| reported.try_recv().ok())
            .map(|change| change.state)
            .collect();
        assert_eq!(states, [restarting, failed]);
        // No tools came or went, so the model's tool list stays as it was.
        assert_eq!(link.generation.load(Ordering::Acquire), 0);
    }

    #[test]
    fn backoff_doubles_up_to_a_cap() {
        let waits: Vec<u128> = (1..=8).map(|n| backoff(n).as_millis()).collect();
        assert_eq!(waits, [200, 400, 800, 1600, 3200, 6400, 10_000, 10_000]);
    }
}
