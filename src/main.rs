//! The `duet` command: parses arguments, resolves settings, starts the agent and hands
//! it to a front end. Errors become one clear message and exit status 2 (usage or
//! configuration) or 1 (anything else).
//!
//! This file only dispatches; each subcommand and front end lives in `cli/`.

mod cli;

use std::process::ExitCode;

use clap::Parser;

use cli::args::{Cli, McpCommand, Subcmd};
use cli::report::{finish, usage_error};

fn main() -> ExitCode {
    // First, before anything could start a thread: the launcher confines its own process.
    if cli::launcher::is_invoked() {
        return cli::launcher::run();
    }
    // No process of the same user may read duet's memory or environment (its API key)
    // through /proc or ptrace; programs it starts are dumpable again after their exec.
    #[cfg(target_os = "linux")]
    if let Err(error) = nix::sys::prctl::set_dumpable(false) {
        eprintln!("duet: cannot protect its own memory from other processes: {error}");
    }
    let cli = Cli::parse();
    let (paths, workspace) = match cli::settings::locate(&cli) {
        Ok(located) => located,
        Err(error) => return usage_error(&error),
    };
    let _log_guard = cli::logging::init(&paths);
    match &cli.command {
        Some(Subcmd::Sessions { all }) => finish(cli::sessions::run(&paths, &workspace, *all)),
        // Needs no configured model: it reports what is missing instead.
        Some(Subcmd::Doctor) => cli::doctor::run(&cli::settings::flags(&cli), &workspace),
        // Each case's `duet exec` resolves the settings itself, from the same sources.
        Some(Subcmd::Eval(args)) => cli::eval::run(&cli, args, &paths, &workspace),
        Some(Subcmd::Mcp {
            command: McpCommand::List,
        }) => finish(cli::mcp_list::run(&paths, &workspace)),
        Some(Subcmd::Mcp {
            command: McpCommand::Trust { names },
        }) => finish(cli::mcp_list::trust(&paths, &workspace, names, true)),
        Some(Subcmd::Mcp {
            command: McpCommand::Untrust { names },
        }) => finish(cli::mcp_list::trust(&paths, &workspace, names, false)),
        Some(Subcmd::Config { action }) => cli::config_cmd::run(action, &paths),
        Some(Subcmd::Completions { shell }) => cli::args::print_completions(*shell),
        Some(Subcmd::Demo { delay_ms }) => cli::demo::run(&cli, &paths, *delay_ms),
        Some(Subcmd::Exec(args)) => cli::exec::run(&cli, args, &paths, workspace),
        None => cli::tui::run(&cli, &paths, workspace),
    }
}
