//! Opening a session with one server: spawning a stdio server or reaching an HTTP one,
//! the MCP handshake, and listing its tools.
//!
//! A stdio server's stderr is its log: each line goes to duet's log (never to the
//! terminal, which may be the TUI's), and the last one is kept to explain a failure.
//!
//! Invariant: a server the project's files list runs only inside the workspace's
//! sandbox (the shell's), with the sandbox's environment and nothing the project asks
//! to keep; without a sandbox it does not start. The user's own servers are trusted
//! like the rest of the user's config and run as configured.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::Tool as RemoteTool;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::ChildStderr;

use super::config::{ServerConfig, Source, Transport};
use super::tool::{ToolShape, shapes};
use crate::shell::sandbox::{Resident, Sandbox};
use crate::shell::secrets::SecretFilter;

/// How long the handshake and the tool listing may take together.
pub(crate) const START_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) type Session = RunningService<RoleClient, ()>;

/// A session, and what must live as long as its server (the sandbox launcher's report
/// directory, for a confined server).
pub(crate) struct Opened {
    pub(crate) session: Session,
    pub(crate) _confinement: Option<(tempfile::TempDir, Resident)>,
}

/// The last line a server wrote to stderr, shared with whoever explains its failure.
#[derive(Clone, Debug, Default)]
pub(crate) struct LastWords(Arc<Mutex<Option<String>>>);

impl LastWords {
    /// `reason`, with the server's last stderr line when it left one.
    pub(crate) fn explain(&self, reason: &str) -> String {
        let last = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match last {
            Some(line) => format!("{reason} (its last words: {line})"),
            None => reason.to_string(),
        }
    }

    fn set(&self, line: String) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(line);
    }
}

/// Starts or reaches the server and completes the handshake. A project's stdio
/// server starts through `sandbox`, and not at all without one.
pub(crate) async fn open(
    config: &ServerConfig,
    workspace: &Path,
    sandbox: Option<&Sandbox>,
    last_words: &LastWords,
) -> Result<Opened, String> {
    match &config.transport {
        Transport::Stdio {
            command,
            args,
            env,
            keep_env,
        } => {
            let (process, confinement) = match &config.source {
                Source::Project(_) => {
                    let sandbox = sandbox.ok_or(
                        "a project's server starts only inside the sandbox, and there is none here",
                    )?;
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    let env: Vec<(&str, &str)> = env
                        .iter()
                        .map(|(name, value)| (name.as_str(), value.as_str()))
                        .collect();
                    let (mut process, report_dir) = sandbox
                        .command(command, &args, workspace, &env)
                        .await
                        .map_err(|error| error.to_string())?;
                    process.kill_on_drop(true);
                    // While it runs, what appears under a protected name may be its.
                    (process, report_dir.map(|dir| (dir, sandbox.resident())))
                }
                Source::User(_) => {
                    let mut process = tokio::process::Command::new(command);
                    process.args(args).current_dir(workspace).kill_on_drop(true);
                    let secrets = SecretFilter {
                        extra: Vec::new(),
                        keep: keep_env.clone(),
                    };
                    for name in secrets.hidden(std::env::vars_os().map(|(name, _)| name)) {
                        process.env_remove(name);
                    }
                    process.envs(env);
                    (process, None)
                }
            };
            let session = open_stdio(&config.name, process, last_words).await?;
            Ok(Opened {
                session,
                _confinement: confinement,
            })
        }
        Transport::Http { url } => Ok(Opened {
            session: open_http(url).await?,
            _confinement: None,
        }),
    }
}

async fn open_stdio(
    server: &str,
    process: tokio::process::Command,
    last_words: &LastWords,
) -> Result<Session, String> {
    let program = process
        .as_std()
        .get_program()
        .to_string_lossy()
        .into_owned();
    let (transport, stderr) = TokioChildProcess::builder(process)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| format!("cannot start `{program}`: {error}"))?;
    if let Some(stderr) = stderr {
        tokio::spawn(log_stderr(server.to_string(), stderr, last_words.clone()));
    }
    ().serve(transport)
        .await
        .map_err(|error| last_words.explain(&format!("the MCP handshake failed: {error}")))
}

async fn open_http(url: &str) -> Result<Session, String> {
    install_crypto_provider();
    let http = reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .build()
        .map_err(|error| format!("cannot build the HTTP client: {error}"))?;
    let transport = StreamableHttpClientTransport::with_client(
        http,
        StreamableHttpClientTransportConfig::with_uri(url),
    );
    ().serve(transport)
        .await
        .map_err(|error| format!("the MCP handshake with {url} failed: {error}"))
}

/// Every tool the server lists (all pages).
pub(crate) async fn list_tools(session: &Session) -> Result<Vec<RemoteTool>, String> {
    session
        .list_all_tools()
        .await
        .map_err(|error| format!("listing its tools failed: {error}"))
}

/// Connects to the server, lists its tools as the model would see them and
/// disconnects, all within `timeout` (for `duet mcp list`).
pub async fn probe(
    config: &ServerConfig,
    workspace: &Path,
    sandbox: Option<&Sandbox>,
    timeout: Duration,
) -> Result<Vec<ToolShape>, String> {
    let last_words = LastWords::default();
    let attempt = async {
        let opened = open(config, workspace, sandbox, &last_words).await?;
        let tools = list_tools(&opened.session).await;
        // The server is done with either way; how it closes changes nothing here.
        let _ = opened.session.cancel().await;
        Ok(shapes(config, &tools?))
    };
    tokio::time::timeout(timeout, attempt)
        .await
        .unwrap_or_else(|_| {
            Err(last_words.explain(&format!("no answer within {}s", timeout.as_secs_f64())))
        })
}

async fn log_stderr(server: String, stderr: ChildStderr, last_words: LastWords) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::info!(server, "mcp server stderr: {line}");
        if !line.trim().is_empty() {
            last_words.set(line);
        }
    }
}

/// reqwest is built without a rustls crypto provider, so the process needs a default.
fn install_crypto_provider() {
    // An error only says a provider is already installed, which is what we need.
    let _ = rustls::crypto::ring::default_provider().install_default();
}
