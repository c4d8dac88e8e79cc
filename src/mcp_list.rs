//! `duet mcp list`: every configured MCP server, the file that configures it, whether
//! it starts, and — after connecting to it — its state and its tools as the model
//! would see them.
//!
//! Owns: connecting to each server once (all at once, each within [`PROBE_TIMEOUT`])
//! and laying the report out. Does not own: the config format or the connection
//! (both `duet::mcp`).
//! Invariant: project servers that would not start in a session are not started here
//! either: listing a project never runs its commands unless the user allowed them, and
//! then only inside the same sandbox a session would start them in.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use duet::config::Paths;
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
    Listed(Vec<ToolShape>),
    Failed(String),
}

pub fn run(paths: &Paths, workspace: &Path) -> anyhow::Result<ExitCode> {
    let file = duet::config::load_file(&paths.config_file)?;
    let config = mcp::config::load(&file.mcp, &paths.config_file, workspace)?;
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
        describe(&mut report, server, finding);
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
        return Finding::NotAllowed;
    }
    match mcp::probe(server, workspace, Some(sandbox), PROBE_TIMEOUT).await {
        Ok(tools) => Finding::Listed(tools),
        Err(reason) => Finding::Failed(reason),
    }
}

fn describe(out: &mut String, server: &ServerConfig, finding: &Finding) {
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
