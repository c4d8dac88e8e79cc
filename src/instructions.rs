//! Instruction files: the `CLAUDE.md` and `AGENTS.md` files people keep for coding
//! agents, found where they keep them and read without leaving the place they belong to.
//!
//! Owns: where they are looked for — the user's own ([`user_files`]: `AGENTS.md` in
//! duet's config directory, `~/.claude/CLAUDE.md`, `AGENTS.md` in `$CODEX_HOME` or
//! `~/.codex`), the project's from the working directory up to the git root
//! ([`at_start`]), and those of one directory below the working directory
//! ([`in_directory`]) — and reading them: UTF-8 text only, cut at [`MAX_BYTES`] with a
//! note saying so, each file once however many names lead to it.
//! Does not own: what the model is told about them, when a directory's files are given
//! to it (the agent decides both), or how front ends list them.
//! Invariant: a project's file is read through a handle of a directory that holds it,
//! following a link only while it stays below that directory, so a repository's
//! `AGENTS.md` linking to `~/.aws/credentials` is refused, never opened; the user's own
//! files are theirs, and their links are followed. Nothing here writes.

use std::ffi::OsString;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::beneath::{self, Root};
use crate::git;

/// The names read as instructions in every directory, in the order they are given.
pub const FILE_NAMES: [&str; 2] = ["CLAUDE.md", "AGENTS.md"];
/// Larger files are cut here: instructions travel with every request.
pub const MAX_BYTES: usize = 64 * 1024;

/// Whose instructions a file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The user's own, kept for every project.
    User,
    /// The repository's: written by whoever wrote the project.
    Project,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Origin::User => "user",
            Origin::Project => "project",
        })
    }
}

/// A place one of the user's own instruction files may be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserFile {
    pub path: PathBuf,
    /// How messages name it: `~/.claude/CLAUDE.md`.
    pub shown: String,
}

/// An instruction file that was read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstructionFile {
    pub origin: Origin,
    /// Where it is, absolute.
    pub path: PathBuf,
    /// How messages name it: the user's as [`UserFile::shown`]; a project's relative
    /// to the directory it was read below (`crates/core/AGENTS.md`).
    pub shown: String,
    /// Its size on disk, in bytes.
    pub bytes: u64,
    /// Its text, ending in a note when it was cut at [`MAX_BYTES`].
    pub text: String,
}

/// Why an instruction file that is there was not read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("not UTF-8 text")]
    NotUtf8,
    #[error("a symbolic link out of the project (a project's files are read only inside it)")]
    LinkOutside,
    #[error("not a regular file")]
    NotAFile,
    #[error("cannot be read: {reason}")]
    Unreadable { reason: String },
}

/// A file that is there and was not read, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    pub origin: Origin,
    /// As [`InstructionFile::shown`] would have named it.
    pub shown: String,
    pub why: Refusal,
}

/// The instruction files read, in the order the model gets them, and those refused.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Found {
    pub files: Vec<InstructionFile>,
    pub skipped: Vec<Skipped>,
}

/// Where the user's own instruction files may be, in the order they are given: duet's
/// in `config_dir` (where `config.toml` lives), Claude Code's, then Codex's. `env`
/// reads `HOME` and `CODEX_HOME`, so tests can point them at temporary directories.
pub fn user_files(
    config_dir: Option<&Path>,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Vec<UserFile> {
    let home = env("HOME")
        .filter(|home| !home.is_empty())
        .map(PathBuf::from);
    let shown = |path: &Path| match home
        .as_deref()
        .and_then(|home| path.strip_prefix(home).ok())
    {
        Some(rest) => Path::new("~").join(rest).display().to_string(),
        None => path.display().to_string(),
    };
    let mut places = Vec::new();
    if let Some(config_dir) = config_dir {
        places.push(config_dir.join("AGENTS.md"));
    }
    if let Some(home) = &home {
        places.push(home.join(".claude").join("CLAUDE.md"));
    }
    let codex_home = env("CODEX_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|home| home.join(".codex")));
    if let Some(codex_home) = codex_home {
        places.push(codex_home.join("AGENTS.md"));
    }
    places
        .into_iter()
        .map(|path| UserFile {
            shown: shown(&path),
            path,
        })
        .collect()
}

/// [`user_files`] where the process's environment says.
pub fn user_files_from_process(config_dir: Option<&Path>) -> Vec<UserFile> {
    user_files(config_dir, &|name| std::env::var_os(name))
}

/// The files the model is given when a session in `workspace` starts: the user's own
/// (those of `user` that exist), then the project's in `workspace` and each parent up
/// to the git root (only `workspace` itself outside a repository), outermost first.
pub fn at_start(workspace: &Path, user: &[UserFile]) -> Found {
    let mut reading = Reading::default();
    for place in user {
        reading.user_file(place);
    }
    let top = git::repo_root(workspace)
        .and_then(|root| root.canonicalize().ok())
        .filter(|root| workspace.starts_with(root))
        .unwrap_or_else(|| workspace.to_path_buf());
    // Read through a handle of the top directory: a file may link to another one inside
    // it (`AGENTS.md` → `CLAUDE.md`), never to anything outside.
    match Root::open(&top) {
        Ok(root) => {
            let mut dirs: Vec<&Path> = workspace
                .ancestors()
                .take_while(|dir| dir.starts_with(&top))
                .filter_map(|dir| dir.strip_prefix(&top).ok())
                .collect();
            dirs.reverse();
            for dir in dirs {
                reading.project_dir(&root, dir);
            }
        }
        Err(error) => tracing::warn!(%error, top = %top.display(), "project instructions not read"),
    }
    reading.found
}

/// The instruction files directly in `dir`, a directory below `root` given relative to
/// it (`packages/api`), read through `root`'s handle; shown relative to `root`.
pub fn in_directory(root: &Root, dir: &Path) -> Found {
    let mut reading = Reading::default();
    reading.project_dir(root, dir);
    reading.found
}

/// Files read so far, with the real location of each so that a file reached by two
/// names (`~/.codex/AGENTS.md` linking to `~/.claude/CLAUDE.md`) is given once.
#[derive(Default)]
struct Reading {
    found: Found,
    seen: Vec<PathBuf>,
}

impl Reading {
    /// Whether the file at `path` was read already under another name; remembers it.
    fn seen_before(&mut self, path: &Path) -> bool {
        let Ok(real) = std::fs::canonicalize(path) else {
            return false;
        };
        if self.seen.contains(&real) {
            return true;
        }
        self.seen.push(real);
        false
    }

    fn user_file(&mut self, place: &UserFile) {
        let read = match std::fs::metadata(&place.path) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return,
            Err(error) if error.kind() == std::io::ErrorKind::NotADirectory => return,
            Err(error) => Err(unreadable(&error)),
            Ok(meta) if !meta.is_file() => Err(Refusal::NotAFile),
            Ok(_) if self.seen_before(&place.path) => return,
            // Checked again on the open file: a pipe swapped in meanwhile is no text.
            Ok(_) => File::open(&place.path)
                .map_err(|error| unreadable(&error))
                .and_then(|file| {
                    let meta = file.metadata().map_err(|error| unreadable(&error))?;
                    if !meta.is_file() {
                        return Err(Refusal::NotAFile);
                    }
                    Ok((read_text(file, meta.len())?, meta.len()))
                }),
        };
        self.add(Origin::User, place.path.clone(), place.shown.clone(), read);
    }

    fn project_dir(&mut self, root: &Root, dir: &Path) {
        for name in FILE_NAMES {
            let relative = dir.join(name);
            let opened = match root.open_file_following_inside(&relative) {
                Err(error) if error.is_not_found() => continue,
                Err(beneath::Error::Link { .. }) => Err(Refusal::LinkOutside),
                Err(beneath::Error::IsDir { .. } | beneath::Error::NotFile { .. }) => {
                    Err(Refusal::NotAFile)
                }
                Err(error) => Err(Refusal::Unreadable {
                    reason: error.to_string(),
                }),
                Ok(opened) => Ok(opened),
            };
            let path = root.path().join(&relative);
            if opened.is_ok() && self.seen_before(&path) {
                continue;
            }
            let read =
                opened.and_then(|(file, meta)| Ok((read_text(file, meta.len())?, meta.len())));
            self.add(Origin::Project, path, shown_relative(&relative), read);
        }
    }

    fn add(
        &mut self,
        origin: Origin,
        path: PathBuf,
        shown: String,
        read: Result<(String, u64), Refusal>,
    ) {
        match read {
            Ok((text, bytes)) => self.found.files.push(InstructionFile {
                origin,
                path,
                shown,
                bytes,
                text,
            }),
            Err(why) => self.found.skipped.push(Skipped { origin, shown, why }),
        }
    }
}

fn unreadable(error: &std::io::Error) -> Refusal {
    Refusal::Unreadable {
        reason: error.to_string(),
    }
}

/// `relative` with `/` between its parts, as the model and people read paths.
fn shown_relative(relative: &Path) -> String {
    relative
        .components()
        .map(|part| part.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// The text of `file` (`len` bytes on disk): at most [`MAX_BYTES`] of it, with a note
/// when there is more; refused unless it is UTF-8.
fn read_text(file: File, len: u64) -> Result<String, Refusal> {
    let limit = MAX_BYTES as u64;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| unreadable(&error))?;
    let cut = bytes.len() > MAX_BYTES;
    bytes.truncate(MAX_BYTES);
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        // The cap may fall inside a character: the whole ones before it are kept.
        Err(error) if cut && error.utf8_error().error_len().is_none() => {
            let valid = error.utf8_error().valid_up_to();
            let mut bytes = error.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).map_err(|_| Refusal::NotUtf8)?
        }
        Err(_) => return Err(Refusal::NotUtf8),
    };
    if !cut {
        return Ok(text.trim_end().to_string());
    }
    // The file may have grown since it was measured; it is at least what was read.
    let total = len.max(limit + 1);
    Ok(format!(
        "{text}\n[… cut: the file is {total} bytes; only the first {} are shown]",
        text.len()
    ))
}

#[cfg(test)]
mod tests;
