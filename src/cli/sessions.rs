//! `duet sessions`: the recorded sessions of this workspace (or of every one), newest
//! first.
//!
//! Owns: the listing's output: the table on stdout, the files that could not be read
//! on stderr, and what an empty listing says. Does not own: reading, filtering or
//! laying out the sessions (`duet::session`).
//! Invariant: every text a session file supplies passes [`shown`] before it reaches
//! the terminal.

use std::path::Path;
use std::process::ExitCode;

use duet::config::Paths;
use duet::session;

use super::report::shown;

/// `duet sessions [--all]`: the table on stdout, files that could not be read on stderr.
pub fn run(paths: &Paths, workspace: &Path, all: bool) -> anyhow::Result<ExitCode> {
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
