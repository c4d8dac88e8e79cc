//! Everything that is the `duet` binary's own, not the library's: the command line,
//! each subcommand and front end's start, and how the process ends.
//!
//! Owns: the arguments ([`args`]), settings from them ([`settings`]), starting the
//! agent ([`agent`]) on the runtimes ([`runtime`]), one module per subcommand or front
//! end ([`tui`], [`exec`], [`eval`], [`demo`], [`sessions`], [`doctor`], [`mcp_list`],
//! [`config_cmd`], [`launcher`]), the log file ([`logging`]) and the messages and exit
//! statuses ([`report`]). Does not own: anything a front end does once started — the
//! agent, the tools, the terminal UI, the headless run, sessions and the config all
//! live in the `duet` library, which never imports this.
//! Invariant: errors end here as one clear message on stderr and exit status 2 (usage
//! or configuration) or 1 (anything else); subcommands with statuses of their own
//! (`duet exec`, the sandbox launcher) say so in their module.

pub mod agent;
pub mod args;
pub mod config_cmd;
pub mod demo;
pub mod doctor;
pub mod eval;
pub mod exec;
pub mod launcher;
pub mod logging;
pub mod mcp_list;
pub mod report;
pub mod runtime;
pub mod sessions;
pub mod settings;
pub mod tui;
