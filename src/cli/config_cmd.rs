//! `duet config init|path`: writing the commented config template, and where duet's
//! files live.
//!
//! Owns: the two actions' output and exit statuses. Does not own: the template or the
//! list of locations (`duet::config::init`), nor the keymap file's place
//! (`duet::tui::keymap`).
//! Invariant: `init` never overwrites a config file that exists; it fails with exit
//! status 2 instead.

use std::process::ExitCode;

use duet::config::{self, Paths};
use duet::tui::keymap::Keymap;

use super::args::ConfigAction;
use super::report::usage_error;

/// `duet config init|path`.
pub fn run(action: &ConfigAction, paths: &Paths) -> ExitCode {
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
