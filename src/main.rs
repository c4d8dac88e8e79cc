//! The `duet` command: parses arguments, resolves settings, starts the agent and hands
//! it to a front end. Errors become one clear message and exit status 2 (usage or
//! configuration) or 1 (anything else).

mod demo;
mod doctor;
mod mcp_list;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};

use duet::config::{self, Flags, Paths, Settings, probe};
use duet::exec;
use duet::policy::ApprovalMode;
use duet::provider::replay::ReplayClient;
use duet::provider::replay::script::Script;
use duet::provider::{self, ModelClient, Wire};
use duet::session::{self, Header, Record, Session, SessionWriter};
use duet::shell::sandbox::launcher::{self, LauncherArgs};
use duet::tui::keymap::Keymap;
use duet::tui::terminal::Screen;

/// Rows of the live area in `--inline` mode.
const INLINE_ROWS: u16 = 12;
/// The base URL a replayed model's settings carry; nothing connects to it.
const REPLAY_BASE_URL: &str = "replay:";

#[derive(Parser, Debug)]
#[command(name = "duet", version, about = "A terminal pair-programming agent")]
struct Cli {
    /// Model provider wire: anthropic, openai (chat completions, any OpenAI-compatible
    /// server) or openai-responses (the OpenAI Responses API).
    #[arg(long, global = true, value_parser = parse_from_str::<Wire>)]
    provider: Option<Wire>,
    /// Model name, e.g. claude-sonnet-4-5 or qwen2.5-coder.
    #[arg(long, global = true)]
    model: Option<String>,
    /// Base URL of the model server (Anthropic: https://api.anthropic.com, OpenAI: https://api.openai.com/v1).
    #[arg(long, global = true)]
    base_url: Option<String>,
    /// What may happen without asking: ask, auto-edit, auto or read-only.
    #[arg(long, global = true, value_parser = parse_from_str::<ApprovalMode>)]
    approval: Option<ApprovalMode>,
    /// Work in this directory instead of the current one.
    #[arg(long, short = 'C', global = true, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Stop a task after this many model calls (default 200).
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_steps: Option<u32>,
    /// Stop a task after this many seconds.
    #[arg(long, global = true, value_name = "SECS")]
    max_time: Option<u64>,
    /// Stop a task before its tokens (sent and received, all calls) would pass this.
    #[arg(long, global = true, value_name = "TOKENS")]
    max_total_tokens: Option<u64>,
    /// Stop a task before its cost would pass this many US dollars.
    #[arg(long, global = true, value_name = "USD")]
    max_cost: Option<f64>,
    /// Keep the terminal's own scrollback: draw in a small area at the bottom instead of
    /// taking over the screen.
    #[arg(long)]
    inline: bool,
    /// Leave the mouse to the terminal (text selection) instead of scrolling with it.
    #[arg(long)]
    no_mouse: bool,
    /// Continue a session: this workspace's last one, or the one with this ID (see
    /// `duet sessions`).
    #[arg(long, value_name = "ID", num_args = 0..=1)]
    resume: Option<Option<String>>,
    /// Replay a recorded or scripted session as the model (no key, no network): the
    /// model's turns come from FILE, in order (the test suite's script format).
    #[arg(long, global = true, value_name = "FILE")]
    replay: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Subcmd>,
}

#[derive(Subcommand, Debug)]
enum Subcmd {
    /// Run one task headless and print the transcript.
    Exec {
        /// The task. `-` reads it from standard input.
        task: Option<String>,
        /// Print one JSON event per line instead of a transcript.
        #[arg(long)]
        json: bool,
        /// Approve whatever the approval mode would ask about (there is no one to ask).
        #[arg(long, short = 'y')]
        yes: bool,
        /// Continue a session with this task: this workspace's last one, or the one
        /// with this ID (`duet exec --resume [ID] "task"`).
        #[arg(long, value_name = "ID", num_args = 0..=1)]
        resume: Option<Option<String>>,
        #[command(flatten)]
        done: exec::done::DoneArgs,
    },
    /// List recorded sessions of this workspace, newest first.
    Sessions {
        /// List the sessions of every workspace.
        #[arg(long)]
        all: bool,
    },
    /// Check the setup: config, model settings, tools, and what protects you from the
    /// shell's commands on this machine.
    Doctor,
    /// Run a set of cases with `duet exec --done`, each in a copy of its repository,
    /// and score them (one JSON object per line in CASES.jsonl).
    Eval(duet::eval::EvalArgs),
    /// See duet work without a key or network: a replayed model in a throwaway copy of
    /// a sample project, with the real tools, approvals and terminal UI.
    Demo {
        /// Milliseconds between two streamed pieces of the model's output.
        #[arg(long, value_name = "MS", default_value_t = demo::DEFAULT_DELAY_MS)]
        delay_ms: u64,
    },
    /// MCP servers: the tools they offer the model.
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
    /// Write or locate duet's config file.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Print a shell completion script: bash, zsh or fish.
    ///
    /// For example: `duet completions bash > ~/.local/share/bash-completion/completions/duet`.
    Completions {
        /// The shell to complete in.
        shell: clap_complete::Shell,
    },
}

#[derive(Subcommand, Debug)]
enum McpCommand {
    /// Show the configured servers, connect to each, and list their tools.
    List,
    /// Trust the project's servers (all, or those named) as they are now: they start
    /// (with `[mcp] project_servers = true`) until their entry or a file they run
    /// changes.
    Trust {
        /// Server names; all of the project's when none.
        names: Vec<String>,
    },
    /// Stop trusting the project's servers (all, or those named).
    Untrust {
        /// Server names; all of the project's when none.
        names: Vec<String>,
    },
}

#[derive(Subcommand, Debug)]
enum ConfigAction {
    /// Write a commented config.toml with every setting at its default (never
    /// overwrites an existing file).
    Init,
    /// Print where the config, state, logs and sessions live.
    Path,
}

/// `duet __sandbox ...`, the shell's sandbox launcher: not a listed subcommand, and
/// parsed before anything else runs.
#[derive(Parser, Debug)]
#[command(name = "duet __sandbox")]
struct LauncherCli {
    #[command(flatten)]
    args: LauncherArgs,
}

/// Which session `--resume` continues.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Resume {
    /// The newest session of the workspace.
    Latest,
    Id(String),
}

impl Resume {
    fn from_flag(flag: Option<Option<String>>) -> Option<Self> {
        flag.map(|id| id.map_or(Resume::Latest, Resume::Id))
    }
}

fn parse_from_str<T: std::str::FromStr<Err = String>>(text: &str) -> Result<T, String> {
    text.parse()
}

fn main() -> ExitCode {
    // First, before anything could start a thread: the launcher confines its own process.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|arg| arg == launcher::SUBCOMMAND)
    {
        return run_launcher(&LauncherCli::parse_from(std::env::args_os().skip(1)).args);
    }
    // No process of the same user may read duet's memory or environment (its API key)
    // through /proc or ptrace; programs it starts are dumpable again after their exec.
    #[cfg(target_os = "linux")]
    if let Err(error) = nix::sys::prctl::set_dumpable(false) {
        eprintln!("duet: cannot protect its own memory from other processes: {error}");
    }
    let cli = Cli::parse();
    let (paths, workspace) = match locate(&cli) {
        Ok(located) => located,
        Err(error) => return usage_error(&error),
    };
    let _log_guard = init_logging(&paths);
    match &cli.command {
        Some(Subcmd::Sessions { all }) => finish(print_sessions(&paths, &workspace, *all)),
        // Needs no configured model: it reports what is missing instead.
        Some(Subcmd::Doctor) => doctor::run(&flags(&cli), &workspace),
        // Each case's `duet exec` resolves the settings itself, from the same sources.
        Some(Subcmd::Eval(args)) => run_eval(&cli, args, &paths, &workspace),
        Some(Subcmd::Mcp {
            command: McpCommand::List,
        }) => finish(mcp_list::run(&paths, &workspace)),
        Some(Subcmd::Mcp {
            command: McpCommand::Trust { names },
        }) => finish(mcp_list::trust(&paths, &workspace, names, true)),
        Some(Subcmd::Mcp {
            command: McpCommand::Untrust { names },
        }) => finish(mcp_list::trust(&paths, &workspace, names, false)),
        Some(Subcmd::Config { action }) => run_config(action, &paths),
        Some(Subcmd::Completions { shell }) => {
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(*shell, &mut command, "duet", &mut std::io::stdout());
            ExitCode::SUCCESS
        }
        Some(Subcmd::Demo { delay_ms }) => run_demo(&cli, &paths, *delay_ms),
        Some(Subcmd::Exec {
            task,
            json,
            yes,
            resume,
            done,
        }) => {
            // `duet --resume ID exec "task"` means the same as `duet exec --resume ID "task"`.
            let resume = resume.clone().or_else(|| cli.resume.clone());
            let task = match done.task_text() {
                Some(Ok(text)) => Some(text),
                Some(Err(error)) => {
                    return usage_error(&anyhow::anyhow!("cannot read --task: {error}"));
                }
                None => task.clone(),
            };
            let mut problems = Vec::new();
            let prepared = exec_task(task, resume).and_then(|(task, resume)| {
                let settings = resolve_settings(&cli, &paths, &workspace, &mut problems);
                for problem in &problems {
                    eprintln!("duet: {}", shown(problem));
                }
                let settings = settings?;
                let client = model_client(&cli, &settings)?;
                let session = open_session(&paths, &workspace, &settings, resume)?;
                Ok((task, settings, client, session))
            });
            let (task, settings, client, session) = match prepared {
                Ok(prepared) => prepared,
                Err(error) => return setup_error(&error),
            };
            let format = if *json {
                exec::Format::Jsonl
            } else {
                exec::Format::Human {
                    color: std::io::stdout().is_terminal() && color_allowed(),
                }
            };
            let approvals = if *yes {
                exec::Approvals::ApproveAll {
                    config_file: paths.config_file.clone(),
                }
            } else {
                exec::Approvals::Refuse
            };
            if let Some(options) = done.options(settings.policy.protected.clone()) {
                return finish(run_exec_done(
                    settings, client, &paths, workspace, session, task, format, approvals, &options,
                ));
            }
            finish(
                run_exec(
                    settings, client, &paths, workspace, session, task, format, approvals,
                )
                .map(exec::Outcome::exit_code),
            )
        }
        None => {
            if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
                eprintln!(
                    "duet: the interactive UI needs a terminal; for scripts and pipes use \
                     `duet exec \"task\"`"
                );
                return ExitCode::from(2);
            }
            let mut problems = Vec::new();
            let resolved = match resolve_settings(&cli, &paths, &workspace, &mut problems) {
                Err(error) if not_configured(&error).is_some() => {
                    match pick_local_model(&paths) {
                        Ok(true) => {
                            problems.clear();
                            resolve_settings(&cli, &paths, &workspace, &mut problems)
                        }
                        // The user left the setup view: the same guidance, as text.
                        Ok(false) => Err(error),
                        Err(failure) => return finish(Err(failure)),
                    }
                }
                resolved => resolved,
            };
            let prepared = resolved.and_then(|settings| {
                let client = model_client(&cli, &settings)?;
                let resume = Resume::from_flag(cli.resume.clone());
                let session = open_session(&paths, &workspace, &settings, resume)?;
                Ok((settings, client, session))
            });
            let (settings, client, session) = match prepared {
                Ok(prepared) => prepared,
                Err(error) => {
                    for problem in &problems {
                        eprintln!("duet: {}", shown(problem));
                    }
                    return setup_error(&error);
                }
            };
            let start = TuiStart {
                intro: Vec::new(),
                task: None,
                config_problems: problems,
            };
            finish(
                run_tui(&cli, settings, client, &paths, workspace, session, start)
                    .map(|()| ExitCode::SUCCESS),
            )
        }
    }
}

fn run_launcher(args: &LauncherArgs) -> ExitCode {
    match launcher::run(args) {
        Ok(status) => ExitCode::from(status),
        Err(error) => {
            eprintln!("duet {}: {}", launcher::SUBCOMMAND, shown(error));
            // What shells use for "found but could not run".
            ExitCode::from(126)
        }
    }
}

/// Reports a problem the user must fix (usage or configuration): exit status 2.
fn usage_error(error: &anyhow::Error) -> ExitCode {
    eprintln!("duet: {}", shown(format_args!("{error:#}")));
    ExitCode::from(2)
}

/// Like [`usage_error`], but with no model configured the guidance also lists the
/// model servers found running on this machine.
fn setup_error(error: &anyhow::Error) -> ExitCode {
    let Some(config_file) = not_configured(error) else {
        return usage_error(error);
    };
    let found = runtime().map(|runtime| {
        runtime.block_on(probe::probe_all(
            probe::LocalServer::defaults(),
            probe::PROBE_DEADLINE,
        ))
    });
    // The model names come from whatever answers on the local ports.
    eprintln!(
        "duet: {}",
        shown(config::init::nothing_configured(
            config_file,
            &found.unwrap_or_default()
        ))
    );
    ExitCode::from(2)
}

/// The config file to write when `error` says no model is configured.
fn not_configured(error: &anyhow::Error) -> Option<&Path> {
    match error.downcast_ref() {
        Some(config::ConfigError::NotConfigured { config_file }) => Some(config_file),
        _ => None,
    }
}

/// The setup view: probes for local model servers and saves the model the user picks.
/// False when the user left without picking.
fn pick_local_model(paths: &Paths) -> anyhow::Result<bool> {
    let chosen = runtime()?.block_on(duet::tui::setup::run(
        color_allowed(),
        paths.config_file.clone(),
        probe::LocalServer::defaults(),
    ))?;
    let Some(choice) = chosen else {
        return Ok(false);
    };
    config::init::save_choice(&paths.config_file, &choice)?;
    Ok(true)
}

/// `duet config init|path`.
fn run_config(action: &ConfigAction, paths: &Paths) -> ExitCode {
    match action {
        ConfigAction::Init => match config::init::write_template(&paths.config_file) {
            Ok(()) => {
                println!("wrote {}", paths.config_file.display());
                ExitCode::SUCCESS
            }
            Err(error) => usage_error(&error.into()),
        },
        ConfigAction::Path => {
            let keymap = [("keymap", Keymap::user_file(paths))];
            print!("{}", config::init::locations(paths, &keymap));
            ExitCode::SUCCESS
        }
    }
}

fn finish(result: anyhow::Result<ExitCode>) -> ExitCode {
    result.unwrap_or_else(|error| {
        eprintln!("duet: {}", shown(format_args!("{error:#}")));
        ExitCode::from(1)
    })
}

/// `text` as it may go to a terminal: errors and listings quote file names, config
/// values, session files and servers' answers, none of which may carry an escape
/// sequence to the user's terminal.
fn shown(text: impl std::fmt::Display) -> String {
    duet::terminal_text::sanitize(&text.to_string()).into_owned()
}

fn color_allowed() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty())
}

/// Finds duet's directories and the workspace (canonical when it exists, so sessions
/// of one directory match however it was named).
fn locate(cli: &Cli) -> anyhow::Result<(Paths, PathBuf)> {
    let paths = Paths::discover()?;
    let workspace = match &cli.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let workspace = std::fs::canonicalize(&workspace).unwrap_or(workspace);
    Ok((paths, workspace))
}

/// Resolves the settings for a session in `workspace`, adding to `problems` the
/// settings of the config file that were ignored (unknown, or bad values). Every
/// failure here is the user's to fix, so each says how.
fn resolve_settings(
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
    Ok(settings)
}

fn flags(cli: &Cli) -> Flags {
    let mut flags = Flags {
        provider: cli.provider,
        model: cli.model.clone(),
        base_url: cli.base_url.clone(),
        approval: cli.approval,
        budget: config::BudgetSection {
            max_steps: cli.max_steps,
            max_wall_secs: cli.max_time,
            max_total_tokens: cli.max_total_tokens,
            max_cost_usd: cli.max_cost,
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
    let file = cli.replay.as_ref()?;
    let name = file.file_name().unwrap_or(file.as_os_str());
    Some(format!("replay: {}", name.to_string_lossy()))
}

/// The client for the model: the replayed script of `--replay FILE`, or the endpoint
/// of the settings.
fn model_client(cli: &Cli, settings: &Settings) -> anyhow::Result<Arc<dyn ModelClient>> {
    let Some(file) = &cli.replay else {
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

/// The task and the session of `duet exec [--resume [ID]] [TASK]`. `--resume` takes an
/// optional ID, so in `duet exec --resume "task"` the parser reads the task as the ID:
/// a lone value is the task.
fn exec_task(
    task: Option<String>,
    resume: Option<Option<String>>,
) -> anyhow::Result<(String, Option<Resume>)> {
    let (task, resume) = match (task, resume) {
        (Some(task), resume) => (task, Resume::from_flag(resume)),
        (None, Some(Some(task))) => (task, Some(Resume::Latest)),
        (None, _) => anyhow::bail!(
            "the task is missing: duet exec \"what to do\", or to continue a session, \
             duet exec --resume [ID] \"what to do\""
        ),
    };
    Ok((read_task(&task)?, resume))
}

fn read_task(task: &str) -> anyhow::Result<String> {
    let task = if task == "-" {
        std::io::read_to_string(std::io::stdin()).context("cannot read the task from stdin")?
    } else {
        task.to_string()
    };
    if task.trim().is_empty() {
        anyhow::bail!(
            "the task is empty: pass what duet should do, e.g. duet exec \"fix the failing test\""
        );
    }
    Ok(task)
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// A runtime whose tasks run on one thread: the one that drives it with `block_on`.
fn single_thread_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start an async runtime")
}

/// How long quitting waits for the agent to record where its turn ended.
const AGENT_SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// The thread that drives the agent's runtime while the terminal UI runs on its own.
/// Dropping it asks the agent to shut down (the UI may have asked already, or left on
/// an error without asking), gives it up to [`AGENT_SHUTDOWN_GRACE`] to record where
/// its turn ended, then stops the runtime (the tasks left are dropped) and waits for
/// the thread.
struct AgentThread {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl AgentThread {
    fn spawn(
        runtime: tokio::runtime::Runtime,
        agent: duet::agent::AgentHandle,
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

/// The session an agent records to, and the recorded conversation it continues.
struct SessionPlan {
    id: String,
    transcript: SessionWriter,
    resume: Option<Session>,
}

/// Starts a new session, or finds the one `resume` names and prepares to continue it.
fn open_session(
    paths: &Paths,
    workspace: &Path,
    settings: &Settings,
    resume: Option<Resume>,
) -> anyhow::Result<SessionPlan> {
    let dir = paths.sessions_dir();
    let now = unix_now();
    let Some(resume) = resume else {
        let id = session_id(now);
        let header = Header {
            format: session::FORMAT_VERSION,
            id: id.clone(),
            workspace: workspace.display().to_string(),
            model: settings.endpoint.model.clone(),
            provider: settings.endpoint.wire,
            started_at: now,
            duet_version: env!("CARGO_PKG_VERSION").to_string(),
        };
        return Ok(SessionPlan {
            id,
            transcript: SessionWriter::create(&dir, header),
            resume: None,
        });
    };
    let (path, session) = find_session(&dir, workspace, &resume)?;
    let recorded = Path::new(&session.header.workspace);
    if recorded != workspace {
        anyhow::bail!(
            "session {} belongs to {}; continue it there: duet -C {} --resume {}",
            session.header.id,
            recorded.display(),
            recorded.display(),
            session.header.id
        );
    }
    let resumed = Record::Resumed {
        at: now,
        model: settings.endpoint.model.clone(),
        provider: settings.endpoint.wire,
        duet_version: env!("CARGO_PKG_VERSION").to_string(),
    };
    Ok(SessionPlan {
        id: session.header.id.clone(),
        transcript: SessionWriter::resume(&path, resumed),
        resume: Some(session),
    })
}

/// The file and contents of the session `resume` names.
fn find_session(
    dir: &Path,
    workspace: &Path,
    resume: &Resume,
) -> anyhow::Result<(PathBuf, Session)> {
    match resume {
        Resume::Id(id) => {
            let Some(path) = session::find(dir, id) else {
                anyhow::bail!(
                    "no session `{id}`; `duet sessions` lists this workspace's sessions \
                     (`duet sessions --all` every workspace's)"
                );
            };
            let loaded = session::load(&path)?;
            Ok((path, loaded))
        }
        Resume::Latest => {
            let listing = session::list(dir)?.in_workspace(workspace);
            match listing.sessions.into_iter().next() {
                Some(info) => Ok((info.path, info.session)),
                None => anyhow::bail!(
                    "no session to resume in {}; `duet sessions --all` lists every \
                     workspace's sessions",
                    workspace.display()
                ),
            }
        }
    }
}

/// `duet sessions`: the table on stdout, files that could not be read on stderr.
fn print_sessions(paths: &Paths, workspace: &Path, all: bool) -> anyhow::Result<ExitCode> {
    let mut listing = session::list(&paths.sessions_dir())?;
    if !all {
        listing = listing.in_workspace(workspace);
    }
    for error in &listing.unreadable {
        eprintln!("duet: skipped {}", shown(error));
    }
    if listing.sessions.is_empty() {
        let scope = if all {
            "yet".to_string()
        } else {
            format!(
                "in {} (`duet sessions --all` lists every workspace's)",
                shown(workspace.display())
            )
        };
        println!("No sessions {scope}.");
    } else {
        print!("{}", shown(session::table(&listing.sessions)));
    }
    Ok(ExitCode::SUCCESS)
}

/// Starts the agent for one session.
fn start_agent(
    settings: Settings,
    client: Arc<dyn ModelClient>,
    paths: &Paths,
    workspace: PathBuf,
    session: SessionPlan,
) -> anyhow::Result<(
    duet::agent::AgentHandle,
    tokio::sync::mpsc::Receiver<duet::agent::Event>,
)> {
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
    })?)
}

/// What the terminal UI shows and sends before the user types.
struct TuiStart {
    /// Notices at the top of the transcript.
    intro: Vec<String>,
    /// A first message sent as if the user had typed it.
    task: Option<String>,
    /// Mistakes found in the config file (the rest of it applies).
    config_problems: Vec<String>,
}

fn run_tui(
    cli: &Cli,
    settings: Settings,
    client: Arc<dyn ModelClient>,
    paths: &Paths,
    workspace: PathBuf,
    session: SessionPlan,
    start: TuiStart,
) -> anyhow::Result<()> {
    let (keymap, errors) = Keymap::load(&Keymap::user_file(paths));
    let model = settings.endpoint.model.clone();
    // The agent and the UI get a runtime and a thread each; blocking work (files, the
    // post-write checks, checkpoints) goes to the runtime's blocking pool. The UI's
    // thread drives its own timers and wakeups: on a shared runtime, every frame
    // deadline was fired by a worker thread that then had to wake the UI thread (two
    // extra thread switches a frame, measured with strace while streaming), and
    // network work and frames contended for the same scheduler. One thread for the
    // agent rather than a worker per core: its work is waiting on the network and on
    // tools, and a pool of workers mostly woke each other (measured while streaming).
    let agent_runtime = single_thread_runtime()?;
    let (handle, events) = {
        let _entered = agent_runtime.enter();
        start_agent(settings, client, paths, workspace.clone(), session)?
    };
    let _agent_thread = AgentThread::spawn(agent_runtime, handle.clone())?;
    single_thread_runtime()?.block_on(async {
        let options = duet::tui::TuiOptions {
            screen: Screen {
                inline_rows: cli.inline.then_some(INLINE_ROWS),
                mouse: !cli.no_mouse,
            },
            color: color_allowed(),
            keymap,
            keymap_errors: errors.iter().map(ToString::to_string).collect(),
            config_problems: start.config_problems,
            workspace,
            model,
            intro: start.intro,
            initial_message: start.task,
            log_file: paths.log_file(),
        };
        duet::tui::run(handle, events, options).await?;
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
fn run_exec(
    settings: Settings,
    client: Arc<dyn ModelClient>,
    paths: &Paths,
    workspace: PathBuf,
    session: SessionPlan,
    task: String,
    format: exec::Format,
    approvals: exec::Approvals,
) -> anyhow::Result<exec::Outcome> {
    runtime()?.block_on(async {
        let (handle, events) = start_agent(settings, client, paths, workspace, session)?;
        let mut stdout = std::io::stdout().lock();
        Ok(exec::run(handle, events, task, format, approvals, &mut stdout).await?)
    })
}

/// `duet eval`: 0 when every case ran (resolved or not), 2 for a bad cases file, 1
/// when the eval itself failed. Relative paths start at `-C DIR` when given.
fn run_eval(cli: &Cli, args: &duet::eval::EvalArgs, paths: &Paths, dir: &Path) -> ExitCode {
    let args = duet::eval::EvalArgs {
        cases: dir.join(&args.cases),
        out: dir.join(&args.out),
        ..args.clone()
    };
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(error) => {
            return finish(Err(anyhow::anyhow!(
                "cannot find duet's own binary: {error}"
            )));
        }
    };
    // The sandbox the cases' done commands run in: the user's `[shell]` and `[sandbox]`.
    let shell = config::load_file(&paths.config_file)
        .and_then(|file| config::resolve_shell(&file, &|name| std::env::var(name).ok(), paths));
    let shell = match shell {
        Ok(shell) => shell,
        Err(error) => return usage_error(&error.into()),
    };
    let result = runtime().and_then(|runtime| {
        runtime.block_on(async {
            let mut stdout = std::io::stdout().lock();
            let mut stderr = std::io::stderr();
            let global_args = eval_global_args(cli);
            Ok(duet::eval::run(&args, exe, global_args, &shell, &mut stdout, &mut stderr).await)
        })
    });
    match result {
        Ok(Ok(_)) => ExitCode::SUCCESS,
        Ok(Err(error @ duet::eval::EvalError::Cases(_))) => usage_error(&error.into()),
        Ok(Err(error)) => finish(Err(error.into())),
        Err(error) => finish(Err(error)),
    }
}

/// The global flags `duet eval` passes on to each case's `duet exec`: the model and its
/// budgets as given, and the approval mode (`auto` unless given, as nobody watches).
fn eval_global_args(cli: &Cli) -> Vec<String> {
    let approval = cli.approval.unwrap_or(ApprovalMode::Auto);
    let mut args = vec!["--approval".to_string(), approval.to_string()];
    let mut pass = |flag: &str, value: Option<String>| {
        if let Some(value) = value {
            args.extend([flag.to_string(), value]);
        }
    };
    pass("--provider", cli.provider.map(|wire| wire.to_string()));
    pass("--model", cli.model.clone());
    pass("--base-url", cli.base_url.clone());
    pass("--max-steps", cli.max_steps.map(|n| n.to_string()));
    pass("--max-time", cli.max_time.map(|secs| secs.to_string()));
    pass(
        "--max-total-tokens",
        cli.max_total_tokens.map(|tokens| tokens.to_string()),
    );
    pass("--max-cost", cli.max_cost.map(|usd| usd.to_string()));
    args
}

/// `duet exec --done`: prepares the branch before the agent starts, so the agent
/// sees the branch it works on.
#[allow(clippy::too_many_arguments)]
fn run_exec_done(
    settings: Settings,
    client: Arc<dyn ModelClient>,
    paths: &Paths,
    workspace: PathBuf,
    session: SessionPlan,
    task: String,
    format: exec::Format,
    approvals: exec::Approvals,
    options: &exec::done::DoneOptions,
) -> anyhow::Result<ExitCode> {
    let prepared = exec::done::prepare(&workspace, &task, options)?;
    runtime()?.block_on(async {
        let (handle, events) = start_agent(settings, client, paths, workspace, session)?;
        let mut stdout = std::io::stdout().lock();
        let outcome = exec::done::run(
            handle,
            events,
            prepared,
            options,
            format,
            approvals,
            &mut stdout,
        )
        .await?;
        Ok(outcome.exit_code())
    })
}

/// `duet demo`: the terminal UI on the demo's replayed model, in a fresh copy of the
/// sample project, in the normal approval mode (`ask`) unless `--approval` says
/// otherwise, so the edits come up for review.
fn run_demo(cli: &Cli, paths: &Paths, delay_ms: u64) -> ExitCode {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        eprintln!("duet: the demo runs in the interactive UI, which needs a terminal");
        return ExitCode::from(2);
    }
    let prepared = demo::SampleRepo::create().and_then(|repo| {
        let workspace = std::fs::canonicalize(repo.path())?;
        let mut problems = Vec::new();
        let mut settings = resolve_settings(cli, paths, &workspace, &mut problems)?;
        settings.approval = cli.approval.unwrap_or_default();
        let client = demo::client(Duration::from_millis(delay_ms))?;
        let session = open_session(paths, &workspace, &settings, None)?;
        Ok((repo, workspace, settings, problems, client, session))
    });
    let (repo, workspace, settings, problems, client, session) = match prepared {
        Ok(prepared) => prepared,
        Err(error) => return usage_error(&error),
    };
    eprintln!("duet demo: working in {}", workspace.display());
    let start = TuiStart {
        intro: demo::intro(&workspace),
        task: Some(demo::TASK.to_string()),
        config_problems: problems,
    };
    let result = run_tui(
        cli,
        settings,
        Arc::new(client),
        paths,
        workspace,
        session,
        start,
    );
    drop(repo);
    finish(result.map(|()| ExitCode::SUCCESS))
}

/// Unique enough to keep concurrent runs' files apart, and sortable by start time.
fn session_id(started_at: u64) -> String {
    format!("{started_at}-{}", std::process::id())
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or_default()
}

/// Logs go to a file under the state directory, never to the terminal. Level from
/// `DUET_LOG` (e.g. `debug`, `duet=trace`), default `info`. Without a writable log file,
/// duet runs without logs rather than not at all.
fn init_logging(paths: &Paths) -> Option<()> {
    let path = paths.log_file();
    std::fs::create_dir_all(path.parent()?).ok()?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .ok()?;
    let filter = tracing_subscriber::EnvFilter::try_from_env("DUET_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::sync::Mutex::new(file))
        .with_ansi(false)
        .try_init()
        .ok()?;
    log_panics();
    Some(())
}

/// Every panic goes to the log as well (its message, where it happened and a
/// backtrace), then to the hook before this one, which prints it. A tool that crashes
/// is reported to the model as "a bug in duet, logged": this makes that true in every
/// front end. (The terminal UI installs its own hook over this one, which logs other
/// threads' panics itself.)
fn log_panics() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        log_panic(info);
        previous(info);
    }));
}

fn log_panic(info: &std::panic::PanicHookInfo<'_>) {
    let location = info
        .location()
        .map_or_else(|| "an unknown place".to_string(), ToString::to_string);
    let payload = info.payload();
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(a panic without a message)");
    let thread = std::thread::current();
    tracing::error!(
        target: "duet::panic",
        thread = thread.name().unwrap_or("unnamed"),
        %location,
        "panicked at {location}: {message}\n{}",
        std::backtrace::Backtrace::force_capture()
    );
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    /// The task and session `duet exec ...` asks for.
    fn exec(args: &[&str]) -> anyhow::Result<(String, Option<Resume>)> {
        let cli = Cli::try_parse_from(std::iter::once("duet").chain(args.iter().copied()))?;
        match cli.command {
            Some(Subcmd::Exec { task, resume, .. }) => exec_task(task, resume),
            other => panic!("not exec: {other:?}"),
        }
    }

    /// What a subscriber wrote, shared with the test.
    #[derive(Clone, Default)]
    struct CapturedLog(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for CapturedLog {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_panic_is_logged_with_its_message_and_place() {
        let log = CapturedLog::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer({
                let log = log.clone();
                move || log.clone()
            })
            .with_ansi(false)
            .finish();
        log_panics();
        let line = line!() + 2;
        tracing::subscriber::with_default(subscriber, || {
            let _ = std::panic::catch_unwind(|| panic!("deliberate test panic {}", 42));
        });
        let text = String::from_utf8_lossy(&log.0.lock().unwrap()).into_owned();
        for needle in [
            "ERROR".to_string(),
            "duet::panic".to_string(),
            "deliberate test panic 42".to_string(),
            format!("src/main.rs:{line}"),
        ] {
            assert!(text.contains(&needle), "{needle:?} not in the log:\n{text}");
        }
    }

    #[test]
    fn exec_resume_takes_an_optional_id_before_the_task() {
        assert_eq!(exec(&["exec", "do it"]).unwrap(), ("do it".into(), None));
        assert_eq!(
            exec(&["exec", "--resume", "do it"]).unwrap(),
            ("do it".into(), Some(Resume::Latest))
        );
        assert_eq!(
            exec(&["exec", "--resume", "100-1", "do it"]).unwrap(),
            ("do it".into(), Some(Resume::Id("100-1".into())))
        );
        assert_eq!(
            exec(&["exec", "do it", "--resume"]).unwrap(),
            ("do it".into(), Some(Resume::Latest))
        );
    }

    #[test]
    fn exec_without_a_task_says_how_to_give_one() {
        for args in [&["exec"][..], &["exec", "--resume"]] {
            let error = exec(args).unwrap_err().to_string();
            assert!(error.contains("the task is missing"), "{error}");
        }
    }

    #[test]
    fn done_flags_need_done_and_task_comes_from_one_place() {
        let parse = |args: &[&str]| {
            Cli::try_parse_from(std::iter::once("duet").chain(args.iter().copied()))
        };
        assert!(parse(&["exec", "--allow-dirty", "t"]).is_err());
        assert!(parse(&["exec", "--done", "make", "--task", "t", "t"]).is_err());
        assert!(parse(&["exec", "--done", "make", "--resume", "t"]).is_err());
        let Some(Subcmd::Exec { done, task, .. }) =
            parse(&["exec", "--done", "make", "--task", "fix it"])
                .unwrap()
                .command
        else {
            panic!("not exec");
        };
        assert_eq!(task, None);
        assert_eq!(done.task_text().unwrap().unwrap(), "fix it");
        assert_eq!(done.done.as_deref(), Some("make"));
    }

    #[test]
    fn eval_passes_the_model_flags_on_and_runs_in_auto_mode_by_default() {
        let parse = |args: &[&str]| {
            Cli::try_parse_from(std::iter::once("duet").chain(args.iter().copied())).unwrap()
        };
        assert_eq!(
            eval_global_args(&parse(&["eval", "cases.jsonl"])),
            ["--approval", "auto"]
        );
        let cli = parse(&[
            "--provider",
            "openai",
            "--model",
            "m",
            "eval",
            "--jobs",
            "2",
            "cases.jsonl",
            "--max-steps",
            "5",
            "--approval",
            "auto-edit",
        ]);
        assert_eq!(
            eval_global_args(&cli),
            [
                "--approval",
                "auto-edit",
                "--provider",
                "openai",
                "--model",
                "m",
                "--max-steps",
                "5"
            ]
        );
        let Some(Subcmd::Eval(args)) = cli.command else {
            panic!("not eval");
        };
        assert_eq!(args.jobs, 2);
        assert_eq!(args.out, PathBuf::from("eval-results.json"));
    }

    #[test]
    fn the_terminal_ui_resumes_the_latest_or_a_named_session() {
        let resume = |args: &[&str]| {
            let cli = Cli::try_parse_from(std::iter::once("duet").chain(args.iter().copied()));
            Resume::from_flag(cli.unwrap().resume)
        };
        assert_eq!(resume(&[]), None);
        assert_eq!(resume(&["--resume"]), Some(Resume::Latest));
        assert_eq!(
            resume(&["--resume", "100-1"]),
            Some(Resume::Id("100-1".into()))
        );
    }
}
