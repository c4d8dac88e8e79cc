//! What a shell command would do, read from its syntax before it runs.
//!
//! Owns: parsing a command with tree-sitter-bash and sorting every simple command in it
//! (pipelines, lists, subshells, substitutions, redirections, heredocs, `xargs`,
//! `find -exec`, `sh -c` strings, wrappers like `sudo` or `timeout`) into a
//! [`CommandClass`], with a [`Reason`] for each part that is more than a read, and the
//! protected paths it would write.
//! Does not own: deciding what a mode does with a class (`policy::Policy::judge`), knowing
//! which files git tracks (the caller injects [`TrackedFiles`]), or running anything.
//! Invariant: classification is a pure function of the command text and its
//! [`CommandContext`]; whatever it cannot read with certainty (a parse error, a control
//! character, a command substitution `$(...)` anywhere, a command name built from a
//! variable, `eval`, arithmetic or expansions bash evaluates as code, an option that
//! may hide in `$X` or a glob, an unrecognised program) is [`CommandClass::Unknown`],
//! never [`CommandClass::ReadOnly`]; so is anything that changes the session's
//! persistent shell for later commands (a variable that changes how programs behave,
//! an alias, a function, a trap, an option, a sourced file), since duet judges each
//! command by its text alone and not by the state an earlier one left behind.
//! [`CommandClass::ReadOnly`] means: reads, and runs no code from the repository (a
//! build, a test, a linter that loads the project's plugins is more than a read).
//!
//! Paths are resolved lexically against the workspace root and the directory the
//! command starts in (following `cd` within the command). Symbolic links are not
//! followed and globs are not expanded: a delete or overwrite through a glob counts as
//! destructive because it may match tracked files.

mod args;
mod environment;
mod evaluation;
mod files;
mod git;
mod network;
mod paths;
mod programs;
mod readers;
mod shell_state;
mod stream_editors;
mod syntax;
mod system;
mod toolchains;
mod wrappers;

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::protected::{ProtectedPaths, Protection};

/// How dangerous a command is, from harmless to most dangerous. A whole command takes
/// the highest class of its parts.
///
/// The order: reading is harmless; ordinary writes in the workspace can be reviewed in
/// the diff and undone; network access can leak the workspace or fetch code but does not
/// by itself lose data; an unknown command may do anything, including destroy data; a
/// destructive command is known to lose data (or write where duet does not look).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum CommandClass {
    /// Only reads (files, git history, build checks that write nothing but `target/`).
    ReadOnly,
    /// Ordinary writes inside the workspace: new files, in-place edits, builds, tests.
    WritesWorkspace,
    /// Talks to other machines: downloads, uploads, package installs, git remotes.
    Network,
    /// Not recognised, or built from text only known when it runs.
    Unknown,
    /// Deletes or overwrites data, or writes outside the workspace.
    Destructive,
}

impl CommandClass {
    pub fn as_str(self) -> &'static str {
        match self {
            CommandClass::ReadOnly => "read-only",
            CommandClass::WritesWorkspace => "writes-workspace",
            CommandClass::Network => "network",
            CommandClass::Unknown => "unknown",
            CommandClass::Destructive => "destructive",
        }
    }

    /// The class in a sentence: "a destructive command".
    pub fn described(self) -> &'static str {
        match self {
            CommandClass::ReadOnly => "a read-only command",
            CommandClass::WritesWorkspace => "a command that writes in the workspace",
            CommandClass::Network => "a command that uses the network",
            CommandClass::Unknown => "a command duet cannot classify",
            CommandClass::Destructive => "a destructive command",
        }
    }
}

impl std::fmt::Display for CommandClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why one part of a command got its class, for the person approving it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Reason {
    /// The part of the command, as written (shortened when long).
    pub part: String,
    pub class: CommandClass,
    /// What that part does, e.g. "deletes recursively".
    pub why: String,
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}` {}", self.part, self.why)
    }
}

/// The verdict on a whole command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Classification {
    /// The highest class among the parts.
    pub class: CommandClass,
    /// Every part that is more than a read, in the order written.
    pub reasons: Vec<Reason>,
    /// Protected paths the command would write, delete or overwrite.
    pub protected: Vec<Protection>,
}

impl Classification {
    /// The distinct classes of the parts (a read-only command has none).
    pub fn classes(&self) -> impl Iterator<Item = CommandClass> + '_ {
        self.reasons.iter().map(|reason| reason.class)
    }

    /// The reasons of the highest class, joined for one line of text.
    pub fn summary(&self) -> String {
        let top: Vec<String> = self
            .reasons
            .iter()
            .filter(|reason| reason.class == self.class)
            .map(ToString::to_string)
            .collect();
        top.join("; ")
    }
}

/// Which files git tracks; injected so classification needs no repository.
pub trait TrackedFiles: Send + Sync {
    /// `path` is relative to the workspace root.
    fn is_tracked(&self, path: &Path) -> bool;
}

/// Everything classification needs besides the command.
pub struct CommandContext<'a> {
    /// The workspace root (absolute).
    pub root: &'a Path,
    /// The directory the command starts in (absolute).
    pub cwd: &'a Path,
    pub tracked: &'a dyn TrackedFiles,
    pub protected: &'a ProtectedPaths,
}

/// Classifies `command` as it would run in `context`.
pub fn classify(command: &str, context: &CommandContext<'_>) -> Classification {
    let findings = syntax::walk(command, context);
    let class = findings
        .reasons
        .iter()
        .map(|reason| reason.class)
        .max()
        .unwrap_or(CommandClass::ReadOnly);
    Classification {
        class,
        reasons: findings.reasons,
        protected: findings.protected,
    }
}

/// Every simple command `command` would run, as its words in the order they run:
/// those in pipelines, lists, substitutions and nested `sh -c` scripts, and the
/// commands wrappers run (`sudo rm x` gives `sudo rm x`, then `rm x`). A word only
/// known when the command runs is given as written (`$X`).
pub fn simple_commands(command: &str) -> Vec<Vec<String>> {
    struct NothingTracked;
    impl TrackedFiles for NothingTracked {
        fn is_tracked(&self, _path: &Path) -> bool {
            false
        }
    }
    // Paths do not matter for the words, only for the classes this drops.
    let root = Path::new("/");
    let context = CommandContext {
        root,
        cwd: root,
        tracked: &NothingTracked,
        protected: &ProtectedPaths::default(),
    };
    syntax::walk(command, &context).commands
}

/// What the walk collected.
#[derive(Debug, Default)]
struct Findings {
    reasons: Vec<Reason>,
    protected: Vec<Protection>,
    /// The words of every simple command, wrapped ones included.
    commands: Vec<Vec<String>>,
}

impl Findings {
    /// Records `part` as `class`; reads are the default and leave no trace.
    fn note(&mut self, part: &str, class: CommandClass, why: impl Into<String>) {
        if class == CommandClass::ReadOnly {
            return;
        }
        let reason = Reason {
            part: shorten(part),
            class,
            why: why.into(),
        };
        if !self.reasons.contains(&reason) {
            self.reasons.push(reason);
        }
    }

    fn protect(&mut self, protection: Protection) {
        if !self.protected.contains(&protection) {
            self.protected.push(protection);
        }
    }
}

/// Longest part quoted in a reason.
const MAX_PART_CHARS: usize = 80;

/// One line, at most [`MAX_PART_CHARS`] characters.
fn shorten(part: &str) -> String {
    let flat = part.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(MAX_PART_CHARS) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

#[cfg(test)]
mod tests;
