//! `duet` with no subcommand: the interactive terminal UI, and starting it (also for
//! `duet demo`).
//!
//! Owns: the checks before the UI starts (a terminal on both ends, a model — or the
//! setup view that picks a local one), the UI's options from the command line, the
//! keymap file and the prompt files (custom commands), and the two runtimes the agent
//! and the UI run on. Does not own: the UI
//! itself (`duet::tui`), the agent (`super::agent`) or the settings
//! (`super::settings`).
//! Invariant: problems found before the UI starts go to stderr only when the UI does
//! not start; when it does, they are shown in it, where they are not lost under the
//! screen the UI takes over.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use duet::config::{Paths, probe};
use duet::custom_commands::{Catalog, Locations};
use duet::session::Resume;
use duet::tui::TuiExit;
use duet::tui::keymap::Keymap;
use duet::tui::terminal::Screen;

use super::agent::{AgentStart, AgentThread};
use super::args::Cli;
use super::report::{color_allowed, finish, not_configured, setup_error, shown};
use super::runtime::{runtime, single_thread_runtime};
use super::settings::resolve_settings;

/// Rows of the live area in `--inline` mode.
const INLINE_ROWS: u16 = 12;

/// `duet [--resume [ID]]`: the terminal UI in `workspace`. With no model configured,
/// the setup view offers the local model servers it finds first.
pub fn run(cli: &Cli, paths: &Paths, workspace: PathBuf) -> ExitCode {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        eprintln!(
            "duet: the interactive UI needs a terminal; for scripts and pipes use \
             `duet exec \"task\"`"
        );
        return ExitCode::from(2);
    }
    let mut problems = Vec::new();
    let resolved = match resolve_settings(cli, paths, &workspace, &mut problems) {
        Err(error) if not_configured(&error).is_some() => match pick_local_model(paths) {
            Ok(true) => {
                problems.clear();
                resolve_settings(cli, paths, &workspace, &mut problems)
            }
            // The user left the setup view: the same guidance, as text.
            Ok(false) => Err(error),
            Err(failure) => return finish(Err(failure)),
        },
        resolved => resolved,
    };
    let prepared = resolved.and_then(|settings| {
        let resume = Resume::from_flag(cli.resume.clone());
        AgentStart::prepare(cli, paths, workspace, settings, resume)
    });
    let agent = match prepared {
        Ok(agent) => agent,
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
    let (settings, workspace) = (agent.settings.clone(), agent.workspace.clone());
    let mut ended = run_tui(cli, agent, paths, start);
    // `/resume ID`: the session ended for another; its agent is already shut down.
    while let Ok(TuiExit::Resume(id)) = ended {
        ended = AgentStart::prepare(
            cli,
            paths,
            workspace.clone(),
            settings.clone(),
            Some(Resume::Id(id)),
        )
        .and_then(|agent| run_tui(cli, agent, paths, TuiStart::default()));
    }
    finish(ended.map(|_| ExitCode::SUCCESS))
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
    duet::config::init::save_choice(&paths.config_file, &choice)?;
    Ok(true)
}

/// What the terminal UI shows and sends before the user types.
#[derive(Default)]
pub struct TuiStart {
    /// Notices at the top of the transcript.
    pub intro: Vec<String>,
    /// A first message sent as if the user had typed it.
    pub task: Option<String>,
    /// Mistakes found in the config file (the rest of it applies).
    pub config_problems: Vec<String>,
}

/// Runs the terminal UI on the agent `agent` starts, until the user quits or asks for
/// another session.
pub fn run_tui(
    cli: &Cli,
    agent: AgentStart,
    paths: &Paths,
    start: TuiStart,
) -> anyhow::Result<TuiExit> {
    let (keymap, errors) = Keymap::load(&Keymap::user_file(paths));
    let model = agent.settings.endpoint.model.clone();
    let workspace = agent.workspace.clone();
    let custom_commands = custom_command_locations(paths, &workspace);
    let notify = agent.settings.notify;
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
        agent.spawn(paths)?
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
            notify,
            sessions_dir: paths.sessions_dir(),
            custom_commands,
        };
        Ok(duet::tui::run(handle, events, options).await?)
    })
}

/// Where the prompt files of `workspace` and of the user are looked for: the project,
/// duet's config directory, Claude Code's and Codex's.
pub fn custom_command_locations(paths: &Paths, workspace: &std::path::Path) -> Locations {
    Locations::from_process(workspace, paths.config_file.parent())
}

/// The prompt files found in `locations`, as slash commands; `duet doctor` lists the
/// same.
pub fn load_custom_commands(locations: &Locations) -> Catalog {
    Catalog::load(locations, &duet::tui::slash::built_in_names())
}
