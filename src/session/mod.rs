//! Session transcripts: every session is recorded so it can be listed and resumed.
//!
//! Owns: the file format (`<state dir>/sessions/<id>.jsonl`: a [`Header`] line, then one
//! [`Record`] per line, appended and flushed as things happen), writing it
//! ([`SessionWriter`]), reading it back into the conversation's [`Change`]s
//! ([`load`]), finding sessions ([`list`], [`find`], [`table`]), and opening the one a
//! run records to, new or resumed ([`open()`]).
//! Does not own: what a conversation may contain or how it is repaired (the agent
//! replays the changes with its own rules), nor when records are written (the agent
//! decides; it imports this module, never the reverse).
//! Invariant: reading never fails on a bad record — a line torn by a killed process or
//! of a kind from a newer duet is skipped with a warning — and writing never stops duet:
//! the first failure is reported once and the session goes on unrecorded.

mod listing;
mod open;
mod reader;
mod record;
mod writer;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

pub use listing::{Listing, SessionInfo, find, list, table};
pub use open::{Resume, SessionPlan, open};
pub use reader::{Change, Session, UndoableTurn, load};
pub use record::{FORMAT_VERSION, Header, Record};
pub use writer::SessionWriter;

/// Why a session could not be read, recorded or continued.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a duet session: {reason}")]
    NotASession { path: PathBuf, reason: String },
    #[error(
        "{path} was written by a newer duet (format {found}; this one reads up to {FORMAT_VERSION})"
    )]
    NewerFormat { path: PathBuf, found: u32 },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot encode a session record: {0}")]
    Encode(#[source] serde_json::Error),
    #[error(
        "no session `{id}`; `duet sessions` lists this workspace's sessions \
         (`duet sessions --all` every workspace's)"
    )]
    NoSuchSession { id: String },
    #[error(
        "no session to resume in {}; `duet sessions --all` lists every workspace's sessions",
        workspace.display()
    )]
    NothingToResume { workspace: PathBuf },
    /// A session's conversation and checkpoints are about the files of the workspace
    /// it was recorded in: it is continued there only.
    #[error(
        "session {id} belongs to {workspace}; continue it there: duet -C {workspace} --resume {id}"
    )]
    OtherWorkspace { id: String, workspace: String },
}

/// The file of session `id` under `dir`.
pub fn path_for(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.jsonl"))
}
