//! Finding sessions: all of them, one workspace's, one by id.

use std::path::{Path, PathBuf};

use super::SessionError;
use super::reader::{Session, load};

/// A recorded session, for listings.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionInfo {
    pub path: PathBuf,
    pub session: Session,
}

/// The sessions under a directory, newest first (by start time), and the files that
/// could not be read as sessions.
#[derive(Debug, Default)]
pub struct Listing {
    pub sessions: Vec<SessionInfo>,
    pub unreadable: Vec<SessionError>,
}

impl Listing {
    /// Keeps only the sessions of `workspace` (a canonical path).
    pub fn in_workspace(mut self, workspace: &Path) -> Self {
        self.sessions
            .retain(|info| Path::new(&info.session.header.workspace) == workspace);
        self
    }
}

/// Every session recorded in `dir`. A missing directory means no sessions yet.
pub fn list(dir: &Path) -> Result<Listing, SessionError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Listing::default());
        }
        Err(source) => {
            return Err(SessionError::Read {
                path: dir.to_path_buf(),
                source,
            });
        }
    };
    let mut listing = Listing::default();
    for entry in entries {
        let path = match entry {
            Ok(entry) => entry.path(),
            Err(source) => {
                listing.unreadable.push(SessionError::Read {
                    path: dir.to_path_buf(),
                    source,
                });
                continue;
            }
        };
        if path.extension().is_none_or(|ext| ext != "jsonl") {
            continue;
        }
        match load(&path) {
            Ok(session) => listing.sessions.push(SessionInfo { path, session }),
            Err(error) => listing.unreadable.push(error),
        }
    }
    listing.sessions.sort_by(|a, b| {
        let key = |info: &SessionInfo| {
            (
                info.session.header.started_at,
                info.session.header.id.clone(),
            )
        };
        key(b).cmp(&key(a))
    });
    Ok(listing)
}

/// The file of session `id` in `dir`, if `id` names one. Ids are made by duet from
/// digits, letters, `-` and `_`; anything else (a path, say) names no session.
pub fn find(dir: &Path, id: &str) -> Option<PathBuf> {
    let valid = !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    let path = super::path_for(dir, id);
    (valid && path.is_file()).then_some(path)
}

/// Longest first message shown in a listing, in characters.
const FIRST_MESSAGE_CHARS: usize = 60;

/// The sessions as an aligned text table with a heading, one session per line.
pub fn table(sessions: &[SessionInfo]) -> String {
    let heading = [
        "ID",
        "STARTED (UTC)",
        "TURNS",
        "MODEL",
        "WORKSPACE",
        "FIRST MESSAGE",
    ];
    let rows: Vec<[String; 6]> = sessions
        .iter()
        .map(|info| {
            let session = &info.session;
            [
                session.header.id.clone(),
                utc_minute(session.header.started_at),
                session.turns.to_string(),
                session.header.model.clone(),
                session.header.workspace.clone(),
                session
                    .first_message
                    .as_deref()
                    .map(one_line_preview)
                    .unwrap_or_default(),
            ]
        })
        .collect();
    let mut widths = heading.map(|title| title.chars().count());
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let heading = heading.map(str::to_string);
    for row in std::iter::once(&heading).chain(&rows) {
        let mut line = String::new();
        for (cell, width) in row.iter().zip(widths) {
            line.push_str(&format!("{cell:<width$}  "));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// `YYYY-MM-DD HH:MM` in UTC.
fn utc_minute(unix_seconds: u64) -> String {
    let time = i64::try_from(unix_seconds)
        .ok()
        .and_then(|seconds| time::OffsetDateTime::from_unix_timestamp(seconds).ok())
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}",
        time.year(),
        u8::from(time.month()),
        time.day(),
        time.hour(),
        time.minute()
    )
}

/// The text's first line, shortened.
fn one_line_preview(text: &str) -> String {
    let line = text
        .lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or_default()
        .trim();
    match line.char_indices().nth(FIRST_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}
