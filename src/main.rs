//! The `duet` command: parses arguments, resolves settings, starts the agent and hands
//! it to a front end. Errors become one clear message and exit status 2 (usage or
//! configuration) or 1 (anything else).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

use duet::config::{self, Flags, Paths, Settings};
use duet::exec;
use duet::policy::ApprovalMode;
use duet::provider::{self, Wire};
use duet::tui::keymap::Keymap;
use duet::tui::terminal::Screen;

/// Rows of the live area in `--inline` mode.
const INLINE_ROWS: u16 = 12;

#[derive(Parser, Debug)]
#[command(name = "duet", version, about = "A terminal pair-programming agent")]
struct Cli {
    /// Model provider wire: anthropic or openai (any OpenAI-compatible server).
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
    /// Keep the terminal's own scrollback: draw in a small area at the bottom instead of
    /// taking over the screen.
    #[arg(long)]
    inline: bool,
    /// Leave the mouse to the terminal (text selection) instead of scrolling with it.
    #[arg(long)]
    no_mouse: bool,
    #[command(subcommand)]
    command: Option<Subcmd>,
}

#[derive(Subcommand, Debug)]
enum Subcmd {
    /// Run one task headless and print the transcript.
    Exec {
        /// The task. `-` reads it from standard input.
        task: String,
        /// Print one JSON event per line instead of a transcript.
        #[arg(long)]
        json: bool,
        /// Approve whatever the approval mode would ask about (there is no one to ask).
        #[arg(long, short = 'y')]
        yes: bool,
    },
}

fn parse_from_str<T: std::str::FromStr<Err = String>>(text: &str) -> Result<T, String> {
    text.parse()
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let prepared = prepare(&cli);
    let (settings, paths, workspace) = match prepared {
        Ok(prepared) => prepared,
        Err(error) => {
            eprintln!("duet: {error:#}");
            return ExitCode::from(2);
        }
    };
    let _log_guard = init_logging(&paths);
    match &cli.command {
        Some(Subcmd::Exec { task, json, yes }) => {
            let task = match read_task(task) {
                Ok(task) => task,
                Err(error) => {
                    eprintln!("duet: {error:#}");
                    return ExitCode::from(2);
                }
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
            finish(
                run_exec(settings, &paths, workspace, task, format, approvals)
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
            finish(run_tui(&cli, settings, &paths, workspace).map(|()| ExitCode::SUCCESS))
        }
    }
}

fn finish(result: anyhow::Result<ExitCode>) -> ExitCode {
    result.unwrap_or_else(|error| {
        eprintln!("duet: {error:#}");
        ExitCode::from(1)
    })
}

fn color_allowed() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty())
}

/// Resolves settings, directories and the workspace; every failure here is the user's
/// to fix, so each says how.
fn prepare(cli: &Cli) -> anyhow::Result<(Settings, Paths, PathBuf)> {
    let paths = Paths::discover()?;
    let file = config::load_file(&paths.config_file)?;
    let flags = Flags {
        provider: cli.provider,
        model: cli.model.clone(),
        base_url: cli.base_url.clone(),
        approval: cli.approval,
    };
    let settings = config::resolve(&file, &|name| std::env::var(name).ok(), &flags, &paths)?;
    let workspace = match &cli.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    Ok((settings, paths, workspace))
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

/// Starts the agent for one session.
fn start_agent(
    settings: Settings,
    paths: &Paths,
    workspace: PathBuf,
) -> anyhow::Result<(
    duet::agent::AgentHandle,
    tokio::sync::mpsc::Receiver<duet::agent::Event>,
)> {
    let client = provider::connect(settings.endpoint)?;
    Ok(duet::agent::spawn(duet::agent::AgentSetup {
        client,
        workspace,
        approval: settings.approval,
        max_tokens: settings.max_tokens,
        outputs_dir: paths.outputs_dir(&session_id()),
        shell: settings.shell,
        lint: settings.lint,
        policy: settings.policy,
    })?)
}

fn run_tui(cli: &Cli, settings: Settings, paths: &Paths, workspace: PathBuf) -> anyhow::Result<()> {
    let (keymap, errors) = Keymap::load(&Keymap::user_file(paths));
    let model = settings.endpoint.model.clone();
    runtime()?.block_on(async {
        let (handle, events) = start_agent(settings, paths, workspace.clone())?;
        let options = duet::tui::TuiOptions {
            screen: Screen {
                inline_rows: cli.inline.then_some(INLINE_ROWS),
                mouse: !cli.no_mouse,
            },
            color: color_allowed(),
            keymap,
            keymap_errors: errors.iter().map(ToString::to_string).collect(),
            workspace,
            model,
        };
        duet::tui::run(handle, events, options).await?;
        Ok(())
    })
}

fn run_exec(
    settings: Settings,
    paths: &Paths,
    workspace: PathBuf,
    task: String,
    format: exec::Format,
    approvals: exec::Approvals,
) -> anyhow::Result<exec::Outcome> {
    runtime()?.block_on(async {
        let (handle, events) = start_agent(settings, paths, workspace)?;
        let mut stdout = std::io::stdout().lock();
        Ok(exec::run(handle, events, task, format, approvals, &mut stdout).await?)
    })
}

/// Unique enough to keep concurrent runs' files apart, and sortable by start time.
fn session_id() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or_default();
    format!("{seconds}-{}", std::process::id())
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
        .ok()
}
