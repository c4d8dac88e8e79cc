//! Custom slash commands: the prompt files users keep for Claude Code and Codex (and
//! for duet), each a command `/name` whose text, its placeholders filled with what is
//! typed after the name, is sent as the user's message.
//!
//! Owns: where prompt files are looked for and in which order, reading them (size cap,
//! text only, never outside the project for a project's files), their names, front
//! matter ([`front_matter`]) and placeholders ([`expand`]), and why a file was left out.
//! Does not own: the built-in commands (the front end passes their names in), parsing
//! what is typed, or sending the message.
//! Invariant: a project's prompt files are read through a handle of the workspace and
//! only inside it (a link out of it is refused, never opened); one name is one command,
//! the first found in [`Locations`]' order, and a built-in name is never taken; every
//! file that looked like a command and was left out is in [`Catalog::ignored`] with
//! the reason; nothing in a description or argument hint can act on a terminal.
//!
//! The order, first wins: the user's `<config dir>/commands`, `~/.claude/commands`,
//! `$CODEX_HOME/prompts` (default `~/.codex/prompts`), then the project's
//! `<workspace>/.duet/commands` and `<workspace>/.claude/commands`: the repository is
//! untrusted, and never takes a name the user's own prompts have. Each `*.md` file is a command named by its file name less `.md`;
//! in all but Codex's directory, a file one directory down is namespaced by it:
//! `frontend/test.md` is `/frontend:test`.

mod expand;
pub mod front_matter;

use std::ffi::OsString;
use std::fmt;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

pub use expand::expand;

use crate::beneath::{self, Kind, Root};
use crate::terminal_text;

/// Larger prompt files are left out: a prompt is a page, not a document.
pub const MAX_FILE_BYTES: u64 = 64 * 1024;
/// A description longer than this (the first line of a file without front matter,
/// usually) is cut with `…`.
const MAX_DESCRIPTION_CHARS: usize = 80;
const EXTENSION: &str = ".md";

/// Whose file a command came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The workspace's: written by whoever wrote the repository.
    Project,
    /// The user's own, in their home or config directory.
    User,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Origin::Project => "project",
            Origin::User => "user",
        })
    }
}

/// One directory prompt files are looked for in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    pub origin: Origin,
    /// Relative to the workspace for [`Origin::Project`], absolute for [`Origin::User`].
    pub dir: PathBuf,
    /// How messages name it: `.claude/commands`, `~/.codex/prompts`.
    pub shown: String,
    /// Whether files one directory down are commands too (`dir/name.md` is `dir:name`).
    pub namespaced: bool,
}

/// The directories to look in, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Locations {
    pub workspace: PathBuf,
    pub sources: Vec<Source>,
}

impl Locations {
    /// The usual directories for `workspace`: duet's own in `config_dir` (where
    /// `config.toml` lives), Claude Code's and Codex's in the home directory, then the
    /// project's. `env` reads `HOME` and `CODEX_HOME`.
    pub fn new(
        workspace: &Path,
        config_dir: Option<&Path>,
        env: &dyn Fn(&str) -> Option<OsString>,
    ) -> Self {
        let home = env("HOME")
            .filter(|home| !home.is_empty())
            .map(PathBuf::from);
        let shown = |dir: &Path| match home.as_deref().and_then(|home| dir.strip_prefix(home).ok())
        {
            Some(rest) => Path::new("~").join(rest).display().to_string(),
            None => dir.display().to_string(),
        };
        let project = |dir: &str| Source {
            origin: Origin::Project,
            dir: PathBuf::from(dir),
            shown: dir.to_string(),
            namespaced: true,
        };
        let user = |dir: PathBuf, namespaced: bool| Source {
            origin: Origin::User,
            shown: shown(&dir),
            dir,
            namespaced,
        };
        // The user's own first: a repository cannot take the name of a prompt the user
        // relies on and make `/review` send its text instead.
        let mut sources = Vec::new();
        if let Some(config_dir) = config_dir {
            sources.push(user(config_dir.join("commands"), true));
        }
        if let Some(home) = &home {
            sources.push(user(home.join(".claude").join("commands"), true));
        }
        let codex_home = env("CODEX_HOME")
            .filter(|dir| !dir.is_empty())
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|home| home.join(".codex")));
        if let Some(codex_home) = codex_home {
            // Codex reads only the files directly in its directory.
            sources.push(user(codex_home.join("prompts"), false));
        }
        sources.extend([project(".duet/commands"), project(".claude/commands")]);
        Self {
            workspace: workspace.to_path_buf(),
            sources,
        }
    }

    /// Where the process's environment says: [`Locations::new`] with `std::env`.
    pub fn from_process(workspace: &Path, config_dir: Option<&Path>) -> Self {
        Self::new(workspace, config_dir, &|name| std::env::var_os(name))
    }
}

/// A prompt file that is a command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CustomCommand {
    /// Without the slash: `review`, `frontend:test`.
    pub name: String,
    /// One line, possibly empty; safe to show.
    pub description: String,
    /// How to call it (`[file]`), from the front matter; one line, safe to show.
    pub argument_hint: Option<String>,
    pub origin: Origin,
    /// The file as messages name it: `.duet/commands/review.md`, `~/.codex/prompts/fix.md`.
    pub file: String,
    /// The text after the front matter, placeholders unfilled.
    template: String,
}

impl CustomCommand {
    /// The command a prompt file's whole text `content` makes, named `name` and found
    /// at `file` (also for tests, and for front ends that offer commands of their own).
    pub fn new(name: &str, content: &str, origin: Origin, file: &str) -> Self {
        let (front, body) = front_matter::split(content);
        CustomCommand {
            name: name.to_string(),
            description: describe(front.description.as_deref(), body),
            argument_hint: front
                .argument_hint
                .as_deref()
                .map(one_line)
                .filter(|hint| !hint.is_empty()),
            origin,
            file: file.to_string(),
            template: body.trim().to_string(),
        }
    }

    /// The message to send for `/name arguments`.
    pub fn expand(&self, arguments: &str) -> String {
        expand(&self.template, arguments)
    }

    /// The text after the front matter, placeholders unfilled.
    pub fn template(&self) -> &str {
        &self.template
    }
}

/// Why a prompt file is not a command.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("/{name} is a built-in command, which a file cannot replace")]
    BuiltIn { name: String },
    #[error("/{name} is already defined by {by}")]
    Shadowed { name: String, by: String },
    #[error("`{name}` is not a command name (letters, digits, `_`, `-`, `.` and `:` only)")]
    BadName { name: String },
    #[error("{bytes} bytes, more than the {MAX_FILE_BYTES} a prompt file may have")]
    TooBig { bytes: u64 },
    #[error("not UTF-8 text")]
    NotUtf8,
    #[error("a binary file")]
    Binary,
    #[error("a symbolic link out of the project (a project's files are read only inside it)")]
    LinkOutside,
    #[error("a symbolic link to a directory (not followed in a project)")]
    LinkedDirectory,
    #[error("nested more than one directory deep (`dir/name.md` is `/dir:name`)")]
    TooDeep,
    #[error("not a regular file")]
    NotAFile,
    #[error("cannot be read: {reason}")]
    Unreadable { reason: String },
}

/// A file (or directory) left out, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ignored {
    /// As messages name it, like [`CustomCommand::file`].
    pub file: String,
    /// The command a file would have been (`None` for a directory), so that typing it
    /// can say why it is not there.
    pub name: Option<String>,
    pub origin: Origin,
    pub why: Refusal,
}

/// The custom commands found, in the order they were found, and the files left out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Catalog {
    commands: Vec<CustomCommand>,
    ignored: Vec<Ignored>,
}

impl Catalog {
    /// Reads the prompt files of every directory in `locations`; `built_in` names the
    /// commands no file may replace (compared without regard to case, as they are
    /// typed). Missing directories are no error; nothing here fails.
    pub fn load(locations: &Locations, built_in: &[&str]) -> Catalog {
        let mut loader = Loader {
            built_in,
            catalog: Catalog::default(),
        };
        let project = Root::open(&locations.workspace).ok();
        // The workspace may be the home directory: its `.claude/commands` is then read
        // once, as the user's.
        let mut seen: Vec<PathBuf> = Vec::new();
        for source in &locations.sources {
            let absolute = locations.workspace.join(&source.dir);
            if let Ok(canonical) = std::fs::canonicalize(&absolute) {
                if seen.contains(&canonical) {
                    continue;
                }
                seen.push(canonical);
            }
            match (source.origin, &project) {
                (Origin::Project, Some(root)) => loader.walk(source, &ProjectFiles { root }),
                (Origin::Project, None) => {}
                (Origin::User, _) => loader.walk(source, &UserFiles),
            }
        }
        loader.catalog
    }

    /// A catalog of these commands, for tests and callers that build their own.
    pub fn from_commands(commands: Vec<CustomCommand>) -> Catalog {
        Catalog {
            commands,
            ignored: Vec::new(),
        }
    }

    pub fn commands(&self) -> &[CustomCommand] {
        &self.commands
    }

    pub fn ignored(&self) -> &[Ignored] {
        &self.ignored
    }

    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    /// The command called `name`: spelled exactly, or else the first whose name
    /// differs only in case (`/Review` finds `review`).
    pub fn get(&self, name: &str) -> Option<&CustomCommand> {
        self.commands
            .iter()
            .find(|command| command.name == name)
            .or_else(|| {
                self.commands
                    .iter()
                    .find(|command| command.name.eq_ignore_ascii_case(name))
            })
    }

    /// Why there is no command `name` although a file would have made one: the file
    /// left out for its content (too big, a link out of the project, …).
    pub fn left_out(&self, name: &str) -> Option<&Ignored> {
        self.ignored.iter().find(|ignored| {
            ignored
                .name
                .as_deref()
                .is_some_and(|left_out| left_out.eq_ignore_ascii_case(name))
                && !matches!(
                    ignored.why,
                    Refusal::BuiltIn { .. } | Refusal::Shadowed { .. }
                )
        })
    }
}

/// Whether `name` may name a command: ASCII letters, digits, `_`, `-`, `.` and `:`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
}

/// What a directory entry is, as far as the walk needs to know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Entry {
    File,
    Dir,
    /// A link not followed to find out (in a project).
    Link,
    Other,
}

/// Listing and reading in one kind of source directory.
trait Files {
    /// The entries of `dir`, by name. `Ok(None)` when it does not exist.
    fn list(&self, dir: &Path) -> Result<Option<Vec<(OsString, Entry)>>, Refusal>;
    /// The bytes of the file at `path`, at most [`MAX_FILE_BYTES`].
    fn read(&self, path: &Path, entry: Entry) -> Result<Vec<u8>, Refusal>;
}

/// A project's files: through a handle of the workspace, never leaving it.
struct ProjectFiles<'a> {
    root: &'a Root,
}

impl Files for ProjectFiles<'_> {
    fn list(&self, dir: &Path) -> Result<Option<Vec<(OsString, Entry)>>, Refusal> {
        match self.root.list(dir) {
            Ok(entries) => Ok(Some(
                entries
                    .into_iter()
                    .map(|(name, kind)| {
                        let entry = match kind {
                            Kind::File => Entry::File,
                            Kind::Dir => Entry::Dir,
                            Kind::Symlink => Entry::Link,
                            Kind::Other => Entry::Other,
                        };
                        (name, entry)
                    })
                    .collect(),
            )),
            Err(error) if error.is_not_found() => Ok(None),
            Err(beneath::Error::Link { .. }) => Err(Refusal::LinkedDirectory),
            Err(error) => Err(Refusal::Unreadable {
                reason: error.to_string(),
            }),
        }
    }

    fn read(&self, path: &Path, entry: Entry) -> Result<Vec<u8>, Refusal> {
        // A link may lead to another file of the project (a shared prompt), never out.
        let opened = match entry {
            Entry::Link => self.root.open_file_following_inside(path),
            _ => self.root.open_file(path),
        };
        let (file, meta) = opened.map_err(|error| match error {
            beneath::Error::Link { .. } => Refusal::LinkOutside,
            beneath::Error::IsDir { .. } | beneath::Error::NotFile { .. } => Refusal::NotAFile,
            other => Refusal::Unreadable {
                reason: other.to_string(),
            },
        })?;
        read_capped(file, meta.len())
    }
}

/// The user's own files: links followed (dotfiles are often linked from elsewhere).
struct UserFiles;

impl Files for UserFiles {
    fn list(&self, dir: &Path) -> Result<Option<Vec<(OsString, Entry)>>, Refusal> {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) if error.kind() == std::io::ErrorKind::NotADirectory => return Ok(None),
            Err(error) => {
                return Err(Refusal::Unreadable {
                    reason: error.to_string(),
                });
            }
        };
        let mut listed: Vec<(OsString, Entry)> = entries
            .flatten()
            .map(|entry| {
                let kind = match std::fs::metadata(entry.path()) {
                    Ok(meta) if meta.is_file() => Entry::File,
                    Ok(meta) if meta.is_dir() => Entry::Dir,
                    _ => Entry::Other,
                };
                (entry.file_name(), kind)
            })
            .collect();
        listed.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(Some(listed))
    }

    fn read(&self, path: &Path, _entry: Entry) -> Result<Vec<u8>, Refusal> {
        let unreadable = |error: std::io::Error| Refusal::Unreadable {
            reason: error.to_string(),
        };
        let file = File::open(path).map_err(unreadable)?;
        let meta = file.metadata().map_err(unreadable)?;
        if !meta.is_file() {
            return Err(Refusal::NotAFile);
        }
        read_capped(file, meta.len())
    }
}

/// The whole of `file` if it is no larger than [`MAX_FILE_BYTES`] (`len` says how
/// large it was; a file growing meanwhile is caught by the read itself).
fn read_capped(file: File, len: u64) -> Result<Vec<u8>, Refusal> {
    if len > MAX_FILE_BYTES {
        return Err(Refusal::TooBig { bytes: len });
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| Refusal::Unreadable {
            reason: error.to_string(),
        })?;
    let read = bytes.len() as u64;
    if read > MAX_FILE_BYTES {
        return Err(Refusal::TooBig { bytes: read });
    }
    Ok(bytes)
}

/// A file the walk found that may be a command.
struct Candidate {
    /// As the source's [`Files`] takes it.
    path: PathBuf,
    entry: Entry,
    /// As messages name it.
    shown: String,
    /// The command it would be, without the slash.
    name: String,
}

struct Loader<'a> {
    built_in: &'a [&'a str],
    catalog: Catalog,
}

impl Loader<'_> {
    fn walk(&mut self, source: &Source, files: &dyn Files) {
        self.walk_dir(source, files, &source.dir, None);
    }

    /// The commands in `dir`; `namespace` is the directory name when it is one down.
    fn walk_dir(
        &mut self,
        source: &Source,
        files: &dyn Files,
        dir: &Path,
        namespace: Option<&str>,
    ) {
        let shown_dir = |relative: &Path| {
            let mut shown = PathBuf::from(&source.shown);
            if let Ok(rest) = relative.strip_prefix(&source.dir)
                && !rest.as_os_str().is_empty()
            {
                shown.push(rest);
            }
            shown.display().to_string()
        };
        let entries = match files.list(dir) {
            Ok(Some(entries)) => entries,
            Ok(None) => return,
            Err(why) => {
                self.ignore(source, shown_dir(dir), None, why);
                return;
            }
        };
        for (name, entry) in entries {
            let lossy = name.to_string_lossy();
            // Hidden files are no one's commands (an editor's lock file, `.DS_Store`).
            if lossy.starts_with('.') {
                continue;
            }
            let path = dir.join(&name);
            let shown = shown_dir(&path);
            match (entry, lossy.strip_suffix(EXTENSION)) {
                (Entry::Dir, _) if !source.namespaced => {}
                (Entry::Dir, _) if namespace.is_some() => {
                    self.ignore(source, shown, None, Refusal::TooDeep)
                }
                (Entry::Dir, _) => match name.to_str().filter(|dir_name| valid_name(dir_name)) {
                    Some(dir_name) => self.walk_dir(source, files, &path, Some(dir_name)),
                    None => self.ignore(
                        source,
                        shown,
                        None,
                        Refusal::BadName {
                            name: one_line(&lossy),
                        },
                    ),
                },
                // A name that is not UTF-8 reads with U+FFFD, which no command name has.
                (_, Some(stem)) => {
                    let name = match namespace {
                        Some(namespace) => format!("{namespace}:{stem}"),
                        None => stem.to_string(),
                    };
                    let candidate = Candidate {
                        path,
                        entry,
                        shown,
                        name,
                    };
                    self.add(source, files, candidate);
                }
                _ => {}
            }
        }
    }

    fn add(&mut self, source: &Source, files: &dyn Files, candidate: Candidate) {
        let Candidate {
            path,
            entry,
            shown,
            name,
        } = candidate;
        let refusal = if !valid_name(&name) {
            Some(Refusal::BadName {
                name: one_line(&name),
            })
        } else if self
            .built_in
            .iter()
            .any(|built_in| built_in.eq_ignore_ascii_case(&name))
        {
            Some(Refusal::BuiltIn { name: name.clone() })
        } else if let Some(winner) = self
            .catalog
            .commands
            .iter()
            .find(|command| command.name == name)
        {
            Some(Refusal::Shadowed {
                name: name.clone(),
                by: winner.file.clone(),
            })
        } else if entry == Entry::Other {
            Some(Refusal::NotAFile)
        } else {
            None
        };
        if let Some(why) = refusal {
            self.ignore(source, shown, Some(name), why);
            return;
        }
        match files.read(&path, entry).and_then(text) {
            Ok(text) => {
                let command = CustomCommand::new(&name, &text, source.origin, &shown);
                self.catalog.commands.push(command);
            }
            Err(why) => self.ignore(source, shown, Some(name), why),
        }
    }

    fn ignore(&mut self, source: &Source, file: String, name: Option<String>, why: Refusal) {
        self.catalog.ignored.push(Ignored {
            file,
            name,
            origin: source.origin,
            why,
        });
    }
}

/// The file's text: UTF-8 with no NUL (a NUL says it is binary, whatever else it is).
fn text(bytes: Vec<u8>) -> Result<String, Refusal> {
    if bytes.contains(&0) {
        return Err(Refusal::Binary);
    }
    String::from_utf8(bytes).map_err(|_| Refusal::NotUtf8)
}

/// The description shown for a command: the front matter's, or else the first line of
/// text (a markdown heading's `#`s dropped), on one line and cut to length.
fn describe(front_matter: Option<&str>, body: &str) -> String {
    let text = match front_matter {
        Some(description) => description,
        None => body
            .lines()
            .map(|line| line.trim().trim_start_matches('#').trim())
            .find(|line| !line.is_empty())
            .unwrap_or_default(),
    };
    let line = one_line(text);
    if line.chars().count() <= MAX_DESCRIPTION_CHARS {
        return line;
    }
    let mut cut: String = line.chars().take(MAX_DESCRIPTION_CHARS - 1).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    cut
}

/// `text` on one line with nothing a terminal would act on or a reader could not
/// see: escape sequences replaced, invisible characters dropped, whitespace runs made
/// one space.
fn one_line(text: &str) -> String {
    let safe = terminal_text::sanitize(text);
    safe.split_whitespace()
        .map(|word| {
            word.chars()
                .filter(|&c| terminal_text::hidden(c).is_none())
                .collect::<String>()
        })
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests;
