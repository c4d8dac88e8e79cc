//! `duet __sandbox ...`: the shell's sandbox launcher, run as duet's own binary.
//!
//! Owns: recognising the launcher's invocation and turning its result into an exit
//! status. Does not own: the launcher (`duet::shell::sandbox::launcher`) or its
//! arguments' meaning.
//! Invariant: the launcher runs before anything else in `main` — no thread, runtime,
//! log file or setting exists yet — as it confines its own process.

use std::process::ExitCode;

use clap::Parser;

use duet::shell::sandbox::launcher;

use super::args::LauncherCli;
use super::report::shown;

/// Whether this process was started as the sandbox launcher.
pub fn is_invoked() -> bool {
    std::env::args_os()
        .nth(1)
        .is_some_and(|arg| arg == launcher::SUBCOMMAND)
}

/// Runs the launcher with this process's arguments (after `__sandbox`).
pub fn run() -> ExitCode {
    let cli = LauncherCli::parse_from(std::env::args_os().skip(1));
    match launcher::run(&cli.args) {
        Ok(status) => ExitCode::from(status),
        Err(error) => {
            eprintln!("duet {}: {}", launcher::SUBCOMMAND, shown(error));
            // What shells use for "found but could not run".
            ExitCode::from(126)
        }
    }
}
