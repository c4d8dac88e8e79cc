//! From the command line to a run's settings: where duet's files and the workspace
//! are, what the flags say on top of the config file, and the model client they ask
//! for.
//!
//! Owns: mapping the global flags onto [`Flags`] (a replayed model stands in for a
//! configured one), finding the workspace, and choosing between the replayed and the
//! configured model. Does not own: the config file, its defaults or how the sources
//! combine (`duet::config`), nor the model clients themselves (`duet::provider`).
//! Invariant: every failure here is the user's to fix, and says how; a config file's
//! unknown or bad settings are collected as problems while its other settings apply.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;

use duet::config::{self, Flags, Paths, Settings};
use duet::provider::replay::ReplayClient;
use duet::provider::replay::script::Script;
use duet::provider::{self, ModelClient, Wire};

use super::args::{Cli, Subcmd};
use super::demo;

/// The base URL a replayed model's settings carry; nothing connects to it.
const REPLAY_BASE_URL: &str = "replay:";

/// Finds duet's directories and the workspace (canonical when it exists, so sessions
/// of one directory match however it was named).
pub fn locate(cli: &Cli) -> anyhow::Result<(Paths, PathBuf)> {
    let paths = Paths::discover()?;
    let workspace = match &cli.global.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let workspace = std::fs::canonicalize(&workspace).unwrap_or(workspace);
    Ok((paths, workspace))
}

/// Resolves the settings for a session in `workspace`, adding to `problems` the
/// settings of the config file that were ignored (unknown, or bad values). Every
/// failure here is the user's to fix, so each says how.
pub fn resolve_settings(
    cli: &Cli,
    paths: &Paths,
    workspace: &Path,
    problems: &mut Vec<String>,
) -> anyhow::Result<Settings> {
    let loaded = config::load_file_lenient(&paths.config_file)?;
    problems.extend(
        loaded
            .problems
            .iter()
            .map(|problem| format!("{problem} (ignored: the default applies)")),
    );
    let mut settings = config::resolve(
        &loaded.config,
        &|name| std::env::var(name).ok(),
        &flags(cli),
        paths,
    )?;
    // Unless the user allowed project servers, the project's files are not even read:
    // a file written for another tool cannot keep duet from starting.
    if settings.mcp.project_servers {
        let trust = duet::mcp::trust::TrustStore::load(&paths.state_dir)?;
        settings.mcp.add_project(workspace, &trust)?;
        problems.extend(settings.mcp.untrusted());
    }
    // A project's hooks are read only where the user's config trusts the project.
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    if settings
        .hooks_section
        .trusts_project(workspace, home.as_deref())
    {
        let (hooks, hook_problems) = duet::hooks::config::project_hooks(workspace);
        settings.hooks.extend(hooks);
        problems.extend(hook_problems);
    }
    Ok(settings)
}

/// What the command line says about the settings.
pub fn flags(cli: &Cli) -> Flags {
    let global = &cli.global;
    let mut flags = Flags {
        provider: global.provider,
        model: global.model.clone(),
        base_url: global.base_url.clone(),
        approval: global.approval,
        budget: config::BudgetSection {
            max_steps: global.max_steps,
            max_wall_secs: global.max_time,
            max_total_tokens: global.max_total_tokens,
            max_cost_usd: global.max_cost,
        },
    };
    if let Some(label) = replay_label(cli) {
        // A replayed model needs no provider, key or endpoint: these satisfy the
        // settings' resolution (a base URL stands in for the key) and name the replay
        // where the model's name is shown. Everything else comes from the user's config.
        flags.provider = Some(Wire::Anthropic);
        flags.base_url = Some(REPLAY_BASE_URL.to_string());
        flags.model = Some(label);
    }
    flags
}

/// The name a replayed model goes by, when the model is replayed.
fn replay_label(cli: &Cli) -> Option<String> {
    if matches!(cli.command, Some(Subcmd::Demo { .. })) {
        return Some(demo::LABEL.to_string());
    }
    let file = cli.global.replay.as_ref()?;
    let name = file.file_name().unwrap_or(file.as_os_str());
    Some(format!("replay: {}", name.to_string_lossy()))
}

/// The client for the model: the replayed script of `--replay FILE`, or the endpoint
/// of the settings.
pub fn model_client(cli: &Cli, settings: &Settings) -> anyhow::Result<Arc<dyn ModelClient>> {
    let Some(file) = &cli.global.replay else {
        return Ok(provider::connect(
            settings.endpoint.clone(),
            settings.idle_timeout,
            settings.request_features,
        ));
    };
    let script = Script::from_file(file)?;
    Ok(Arc::new(ReplayClient::new(
        script,
        settings.endpoint.model.clone(),
    )?))
}
