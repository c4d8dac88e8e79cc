//! `duet demo`: the whole product on a replayed model, with no key and no network.
//!
//! Owns: the demo's sample repository (`assets/demo/repo/`, built into the binary) and
//! its throwaway copy, the scripted session (`assets/demo/session.toml`), the task
//! and notices that start it, and starting the terminal UI on them.
//! Does not own: anything the session does — the real agent loop, tools, approvals,
//! linter and TUI run it; only the model is replayed ([`ReplayClient`]).
//! Invariant: the demo never touches a directory it did not create; the copy lives in
//! a temporary directory removed when the [`SampleRepo`] is dropped.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use duet::config::Paths;
use duet::provider::replay::ReplayClient;
use duet::provider::replay::script::Script;
use duet::session;

use super::agent::AgentStart;
use super::args::Cli;
use super::report::{finish, usage_error};
use super::settings::resolve_settings;
use super::tui::{TuiStart, run_tui};

/// Where the model's name is shown (status bar, session header).
pub const LABEL: &str = "demo: replayed model";
/// The message that starts the demo, as if the user had typed it.
pub const TASK: &str = "Show me what duet can do on this little project.";
/// The wait between two streamed pieces by default: visible streaming, a short demo.
pub const DEFAULT_DELAY_MS: u64 = 15;

const SCRIPT: &str = include_str!("../../assets/demo/session.toml");
const SAMPLE_FILES: [(&str, &str); 3] = [
    (
        "README.md",
        include_str!("../../assets/demo/repo/README.md"),
    ),
    (
        "calc/__init__.py",
        include_str!("../../assets/demo/repo/calc/__init__.py"),
    ),
    (
        "calc/ops.py",
        include_str!("../../assets/demo/repo/calc/ops.py"),
    ),
];

/// `duet demo`: the terminal UI on the demo's replayed model, in a fresh copy of the
/// sample project, in the normal approval mode (`ask`) unless `--approval` says
/// otherwise, so the edits come up for review.
pub fn run(cli: &Cli, paths: &Paths, delay_ms: u64) -> ExitCode {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        eprintln!("duet: the demo runs in the interactive UI, which needs a terminal");
        return ExitCode::from(2);
    }
    let prepared = SampleRepo::create().and_then(|repo| {
        let workspace = std::fs::canonicalize(repo.path())?;
        let mut config_problems = Vec::new();
        let mut settings = resolve_settings(cli, paths, &workspace, &mut config_problems)?;
        settings.approval = cli.global.approval.unwrap_or_default();
        let replayed = client(Duration::from_millis(delay_ms))?;
        let session = session::open(&paths.sessions_dir(), &workspace, &settings.endpoint, None)?;
        Ok(DemoRun {
            repo,
            config_problems,
            agent: AgentStart {
                settings,
                client: Arc::new(replayed),
                workspace,
                session,
            },
        })
    });
    let DemoRun {
        repo,
        config_problems,
        agent,
    } = match prepared {
        Ok(prepared) => prepared,
        Err(error) => return usage_error(&error),
    };
    eprintln!("duet demo: working in {}", agent.workspace.display());
    let start = TuiStart {
        intro: intro(&agent.workspace),
        task: Some(TASK.to_string()),
        config_problems,
    };
    let result = run_tui(cli, agent, paths, start);
    // The copy goes only once the UI is done with it.
    drop(repo);
    // The demo has no sessions to switch to: `/resume ID` there just ends it.
    finish(result.map(|_| ExitCode::SUCCESS))
}

/// A demo ready to start: its copy of the sample project and the agent working in it.
struct DemoRun {
    repo: SampleRepo,
    /// Mistakes found in the user's config file (the rest of it applies).
    config_problems: Vec<String>,
    agent: AgentStart,
}

/// The throwaway copy of the sample repository the demo works in.
pub struct SampleRepo {
    dir: tempfile::TempDir,
}

impl SampleRepo {
    /// Writes the sample repository into a new temporary directory.
    pub fn create() -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("duet-demo-")
            .tempdir()
            .context("cannot create a temporary directory for the demo")?;
        for (path, content) in SAMPLE_FILES {
            write_file(&dir.path().join(path), content)?;
        }
        Ok(Self { dir })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

fn write_file(path: &Path, content: &str) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(path, content).with_context(|| format!("cannot write {}", path.display()))
}

/// The replayed model of the demo, streaming a piece every `delay`.
pub fn client(delay: Duration) -> anyhow::Result<ReplayClient> {
    let script = Script::from_toml(SCRIPT).context("the built-in demo script is broken")?;
    Ok(ReplayClient::new(script, LABEL)?.with_delay(delay))
}

/// The lines shown at the top of the demo's transcript.
pub fn intro(repo: &Path) -> Vec<String> {
    vec![
        "DEMO: the model is replayed from a script (no key, no network); the tools, \
         approvals and linter are real."
            .to_string(),
        format!(
            "Working in a throwaway copy of a sample project: {} (removed when you quit).",
            repo.display()
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_script_loads_and_the_sample_repo_is_written() {
        client(Duration::ZERO).unwrap();
        let repo = SampleRepo::create().unwrap();
        let ops = std::fs::read_to_string(repo.path().join("calc/ops.py")).unwrap();
        assert_eq!(ops, SAMPLE_FILES[2].1);
        let path = repo.path().to_path_buf();
        drop(repo);
        assert!(!path.exists(), "the copy is removed on exit");
    }
}
