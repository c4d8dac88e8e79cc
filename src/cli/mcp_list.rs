//! `duet mcp list`: every configured MCP server, the file that configures it, whether
//! it starts (for a project's, whether the user trusts it as it is now), and — after
//! connecting to it — its state and its tools as the model would see them. `duet mcp
//! trust` / `untrust`: the user's trust in the project's servers.
//!
//! Owns: connecting to each server once (all at once, each within [`PROBE_TIMEOUT`])
//! and laying the reports out. Does not own: the config format, the fingerprints and
//! their record, or the connection (all `duet::mcp`).
//! Invariant: project servers that would not start in a session are not started here
//! either: listing a project never runs its commands unless the user allowed project
//! servers and trusted that one as it is, and then only inside the same sandbox a
//! session would start them in. Trusting reads the project's files, never runs them.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use duet::config::Paths;
use duet::mcp::trust::{TrustState, TrustStore};
use duet::mcp::{self, McpConfig, ServerConfig, Source, ToolShape, Transport};
use duet::shell::environment::EnvironmentPolicy;
use duet::shell::sandbox::Sandbox;

/// How long one server gets to start and list its tools.
const PROBE_TIMEOUT: Duration = Duration::from_secs(15);

/// What became of one server.
enum Finding {
    Disabled,
    /// A project server while the user has not allowed project servers.
    NotAllowed,
    /// A project server the user has not trusted as it is now.
    NotTrusted(TrustState),
    Listed(Vec<ToolShape>),
    Failed(String),
}

pub fn run(paths: &Paths, workspace: &Path) -> anyhow::Result<ExitCode> {
    let file = duet::config::load_file(&paths.config_file)?;
    let trust = TrustStore::load(&paths.state_dir)?;
    let config = mcp::config::load(&file.mcp, &paths.config_file, workspace, &trust)?;
    if config.servers.is_empty() {
        println!(
            "No MCP servers configured. Add [mcp.servers.NAME] to {} (or .mcp.json / \
             .duet/mcp.toml in the project); see the README.",
            paths.config_file.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let env = |name: &str| std::env::var(name).ok();
    let shell = duet::config::resolve_shell(&file, &env, paths)?;
    // The project's servers start inside the sandbox a session would give them.
    let sandbox = Sandbox::new(
        workspace,
        shell.sandbox.clone(),
        file.policy.protected.clone(),
        &EnvironmentPolicy::from_filter(&shell.secrets),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let findings = runtime.block_on(futures::future::join_all(
        config
            .servers
            .iter()
            .map(|server| find(&config, server, workspace, &sandbox)),
    ));
    let mut report = String::new();
    for (server, finding) in config.servers.iter().zip(&findings) {
        describe(&mut report, &config, server, finding);
    }
    // Servers' names, tools and errors are theirs to word: no escape sequence of theirs
    // reaches the terminal.
    print!("{}", duet::terminal_text::sanitize(&report));
    let failed = findings.iter().any(|f| matches!(f, Finding::Failed(_)));
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

async fn find(
    config: &McpConfig,
    server: &ServerConfig,
    workspace: &Path,
    sandbox: &Sandbox,
) -> Finding {
    if !server.enabled {
        return Finding::Disabled;
    }
    if !config.may_start(server) {
        return match config.trust.get(&server.name) {
            Some(trust) if config.project_servers => Finding::NotTrusted(trust.state.clone()),
            _ => Finding::NotAllowed,
        };
    }
    match mcp::probe(server, workspace, Some(sandbox), PROBE_TIMEOUT).await {
        Ok(tools) => Finding::Listed(tools),
        Err(reason) => Finding::Failed(reason),
    }
}

fn describe(out: &mut String, config: &McpConfig, server: &ServerConfig, finding: &Finding) {
    let (origin, path) = match &server.source {
        Source::User(path) => ("user config", path),
        Source::Project(path) => ("project", path),
    };
    let how = match &server.transport {
        Transport::Stdio { command, args, .. } => {
            format!("stdio: {command} {}", args.join(" "))
        }
        Transport::Http { url } => format!("http: {url}"),
    };
    // Writing to a String cannot fail.
    let _ = writeln!(out, "{}  ({origin}: {})", server.name, path.display());
    let _ = writeln!(out, "  {}", how.trim_end());
    if let Some(trust) = config.trust.get(&server.name) {
        let files = trust.fingerprint.files_list();
        let covers = if files.is_empty() {
            "its entry".to_string()
        } else {
            format!("its entry and {files}")
        };
        let state = match trust.state {
            TrustState::Trusted => "trusted",
            TrustState::Changed => "changed since you trusted it",
            TrustState::Unknown => "not trusted",
        };
        let digest = trust.fingerprint.short();
        let _ = writeln!(out, "  trust: {state} (fingerprint {digest} of {covers})");
    }
    match finding {
        Finding::Disabled => {
            let _ = writeln!(out, "  disabled (enabled = false)");
        }
        Finding::NotAllowed => {
            let _ = writeln!(
                out,
                "  not started: project servers are off (set `project_servers = true` \
                 under [mcp] in your config.toml to start them)"
            );
        }
        Finding::NotTrusted(state) => {
            let why = match state {
                TrustState::Changed => "it changed since you trusted it",
                _ => "it is not trusted in this workspace",
            };
            let _ = writeln!(
                out,
                "  not started: {why}; read what it runs, then `duet mcp trust {}`",
                server.name
            );
        }
        Finding::Failed(reason) => {
            let _ = writeln!(out, "  failed: {reason}");
        }
        Finding::Listed(tools) => {
            let _ = writeln!(out, "  ready: {} tool(s)", tools.len());
            for tool in tools {
                let parallel = if tool.read_only { ", parallel" } else { "" };
                let rule = tool.rule.as_str();
                let _ = writeln!(
                    out,
                    "    {}  [{rule}{parallel}]  {}",
                    tool.exposed,
                    first_line(&tool.description)
                );
            }
        }
    }
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(100) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

/// `duet mcp trust` (`trusting`) and `duet mcp untrust`: records or forgets the
/// fingerprints of the project's servers named (all of them when none is), in duet's
/// state directory.
pub fn trust(
    paths: &Paths,
    workspace: &Path,
    names: &[String],
    trusting: bool,
) -> anyhow::Result<ExitCode> {
    let file = duet::config::load_file(&paths.config_file)?;
    let mut store = TrustStore::load(&paths.state_dir)?;
    let config = mcp::config::load(&file.mcp, &paths.config_file, workspace, &store)?;
    let project: Vec<&ServerConfig> = config
        .servers
        .iter()
        .filter(|server| matches!(server.source, Source::Project(_)))
        .collect();
    for name in names {
        if !project.iter().any(|server| &server.name == name) {
            let yours = config.servers.iter().any(|server| &server.name == name);
            anyhow::bail!(if yours {
                format!("`{name}` is a server of your own config, which is trusted as it is")
            } else {
                format!("the project lists no MCP server named `{name}` (see `duet mcp list`)")
            });
        }
    }
    let chosen: Vec<&ServerConfig> = project
        .into_iter()
        .filter(|server| names.is_empty() || names.contains(&server.name))
        .collect();
    if chosen.is_empty() {
        println!("The project lists no MCP servers (.mcp.json, .duet/mcp.toml).");
        return Ok(ExitCode::SUCCESS);
    }
    let mut report = String::new();
    for server in chosen {
        if trusting {
            let Some(now) = config.trust.get(&server.name) else {
                continue;
            };
            store.trust(workspace, &server.name, &now.fingerprint);
            let files = now.fingerprint.files_list();
            let _ = writeln!(
                report,
                "trusted {} as it is now (fingerprint {}{})",
                server.name,
                now.fingerprint.short(),
                if files.is_empty() {
                    String::new()
                } else {
                    format!(", covering {files}")
                }
            );
        } else if store.revoke(workspace, &server.name) {
            let _ = writeln!(report, "no longer trusted: {}", server.name);
        } else {
            let _ = writeln!(report, "was not trusted: {}", server.name);
        }
    }
    store.save()?;
    if trusting && !config.project_servers {
        let _ = writeln!(
            report,
            "Project servers start only with `project_servers = true` under [mcp] in {}.",
            paths.config_file.display()
        );
    }
    print!("{}", duet::terminal_text::sanitize(&report));
    Ok(ExitCode::SUCCESS)
}
