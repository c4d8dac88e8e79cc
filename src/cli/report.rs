//! How the command ends: one clear message on stderr and the exit status it stands
//! for, and text made safe for the terminal on the way.
//!
//! Owns: the exit statuses (2 for a problem the user must fix — usage or
//! configuration —, 1 for anything else), the `duet: ` prefix of every message, the
//! guidance when no model is configured, and whether colour is allowed (`NO_COLOR`).
//! Does not own: the messages' wording (the errors carry it), nor a subcommand's own
//! exit statuses (`duet exec`'s outcome, the sandbox launcher's).
//! Invariant: every message that leaves through here passes [`shown`] first: errors
//! quote file names, config values and servers' answers, which may carry escape
//! sequences.

use std::path::Path;
use std::process::ExitCode;

use duet::config::{self, probe};

use super::runtime::runtime;

/// Reports a problem the user must fix (usage or configuration): exit status 2.
pub fn usage_error(error: &anyhow::Error) -> ExitCode {
    eprintln!("duet: {}", shown(format_args!("{error:#}")));
    ExitCode::from(2)
}

/// Like [`usage_error`], but with no model configured the guidance also lists the
/// model servers found running on this machine.
pub fn setup_error(error: &anyhow::Error) -> ExitCode {
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
pub fn not_configured(error: &anyhow::Error) -> Option<&Path> {
    match error.downcast_ref() {
        Some(config::ConfigError::NotConfigured { config_file }) => Some(config_file),
        _ => None,
    }
}

/// The exit status of `result`: its own, or 1 after the error's message.
pub fn finish(result: anyhow::Result<ExitCode>) -> ExitCode {
    result.unwrap_or_else(|error| {
        eprintln!("duet: {}", shown(format_args!("{error:#}")));
        ExitCode::from(1)
    })
}

/// `text` as it may go to a terminal: errors and listings quote file names, config
/// values, session files and servers' answers, none of which may carry an escape
/// sequence to the user's terminal.
pub fn shown(text: impl std::fmt::Display) -> String {
    duet::terminal_text::sanitize(&text.to_string()).into_owned()
}

/// Whether output may be coloured: not when `NO_COLOR` is set to anything.
pub fn color_allowed() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty())
}
