//! Where a path written by a command lands, and what writing it means.
//!
//! Owns: lexical path resolution against the workspace root and the shell's directory
//! (`..`, absolute paths, `~`, devices like `/dev/null`, globs), the shell's directory
//! as `cd` moves it, and the class of each kind of write: ordinary writes inside the
//! workspace, overwrites and deletes of tracked or protected files, anything outside.
//! Does not own: which arguments of a program are written (the program handlers say).
//! Invariant: resolution never touches the disk; a path it cannot place (built from
//! dynamic text, relative to an unknown directory) is never treated as inside.

use std::path::{Component, Path, PathBuf};

use super::CommandClass;
use super::syntax::{Walker, Word};
use crate::policy::protected::shown;

/// Paths that swallow or pass on what is written to them.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/tty",
    "/dev/zero",
];

/// Where the shell is, as far as the command text tells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Cwd {
    /// Inside the workspace, relative to its root.
    Inside(PathBuf),
    Outside,
    /// After `cd -`, `cd $X`, `popd`: relative paths could be anywhere.
    Unknown,
}

impl Cwd {
    pub(super) fn start(root: &Path, cwd: &Path) -> Self {
        match cwd.strip_prefix(root) {
            Ok(relative) => Cwd::Inside(normalize(relative).unwrap_or_default()),
            Err(_) => Cwd::Outside,
        }
    }

    /// The directory after `cd target` (`None`: plain `cd`, which goes home).
    pub(super) fn after_cd(&self, target: Option<&Word>, root: &Path) -> Self {
        let Some(target) = target else {
            return Cwd::Outside;
        };
        match place_of(target, self, root) {
            Place::Inside(relative) => Cwd::Inside(relative),
            Place::Outside(_) => Cwd::Outside,
            Place::Device | Place::Pattern(_) | Place::Dynamic => Cwd::Unknown,
        }
    }
}

/// Where one path lands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Place {
    /// A device that discards or passes on output.
    Device,
    /// Inside the workspace, relative to the root ("" is the root).
    Inside(PathBuf),
    /// A glob inside the workspace: which files it matches is only known when it runs.
    Pattern(PathBuf),
    /// Outside the workspace, as written.
    Outside(String),
    /// Built from dynamic text, or relative to a directory that is not known.
    Dynamic,
}

/// Resolves `word` against the shell's directory.
pub(super) fn place_of(word: &Word, cwd: &Cwd, root: &Path) -> Place {
    let Some(value) = word.value() else {
        return Place::Dynamic;
    };
    if DEVICES.contains(&value) || value.starts_with("/dev/fd/") {
        return Place::Device;
    }
    if value.starts_with('~') {
        return Place::Outside(value.to_string());
    }
    let path = Path::new(value);
    let relative = if path.is_absolute() {
        match path.strip_prefix(root) {
            Ok(inside) => normalize(inside),
            Err(_) => None,
        }
    } else {
        match cwd {
            Cwd::Inside(base) => normalize(&base.join(path)),
            Cwd::Outside => None,
            Cwd::Unknown => return Place::Dynamic,
        }
    };
    match relative {
        Some(relative) if is_pattern(value) => Place::Pattern(relative),
        Some(relative) => Place::Inside(relative),
        None => Place::Outside(value.to_string()),
    }
}

/// `path` with `.` and `..` resolved; `None` when `..` climbs above the start.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(name) => normal.push(name),
            Component::ParentDir => {
                if !normal.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(normal)
}

/// Glob or brace characters: the shell expands the word into whatever matches.
fn is_pattern(value: &str) -> bool {
    value.contains(['*', '?', '[']) || (value.contains('{') && value.contains([',', '.']))
}

/// What a write does to the file it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WriteKind {
    /// Creates, appends to, edits in place or changes the metadata of a file.
    Modify,
    /// Truncates or overwrites it: its old content is gone.
    Replace,
    /// Deletes it.
    Delete,
    /// Deletes it and everything below it.
    DeleteTree,
}

impl WriteKind {
    fn verb(self) -> &'static str {
        match self {
            WriteKind::Modify => "writes",
            WriteKind::Replace => "overwrites",
            WriteKind::Delete | WriteKind::DeleteTree => "deletes",
        }
    }

    fn loses_data(self) -> bool {
        !matches!(self, WriteKind::Modify)
    }
}

/// Classifies a write of `written` (as typed) that lands at `place`.
pub(super) fn judge_write(
    walker: &mut Walker<'_>,
    part: &str,
    written: &str,
    place: Place,
    kind: WriteKind,
) {
    let verb = kind.verb();
    let (class, why) = match place {
        Place::Device => return,
        Place::Dynamic if matches!(kind, WriteKind::Delete | WriteKind::DeleteTree) => (
            CommandClass::Destructive,
            format!("{verb} `{written}`, a path only known when it runs"),
        ),
        Place::Dynamic => (
            CommandClass::Unknown,
            format!("{verb} `{written}`, a path only known when it runs"),
        ),
        Place::Outside(path) => (
            CommandClass::Destructive,
            format!("{verb} {path}, outside the workspace"),
        ),
        Place::Pattern(_) if kind.loses_data() => (
            CommandClass::Destructive,
            format!("{verb} whatever `{written}` matches, which may include tracked files"),
        ),
        Place::Pattern(_) => (
            CommandClass::WritesWorkspace,
            format!("{verb} the files `{written}` matches"),
        ),
        Place::Inside(relative) => judge_inside(walker, &relative, kind),
    };
    walker.note(part, class, why);
}

fn judge_inside(
    walker: &mut Walker<'_>,
    relative: &Path,
    kind: WriteKind,
) -> (CommandClass, String) {
    let shown = shown(relative);
    let verb = kind.verb();
    let protected = walker.context.protected;
    let mut protections = Vec::new();
    protections.extend(protected.check(relative));
    if kind == WriteKind::DeleteTree {
        protections.extend(protected.inside(relative));
    }
    let is_protected = !protections.is_empty();
    for protection in protections {
        walker.findings.protect(protection);
    }
    match kind {
        WriteKind::DeleteTree => (
            CommandClass::Destructive,
            format!("deletes {shown} and everything in it"),
        ),
        _ if kind.loses_data() && is_protected => (
            CommandClass::Destructive,
            format!("{verb} {shown}, a protected file"),
        ),
        _ if kind.loses_data() && walker.context.tracked.is_tracked(relative) => (
            CommandClass::Destructive,
            format!("{verb} {shown}, a file git tracks"),
        ),
        _ => (CommandClass::WritesWorkspace, format!("{verb} {shown}")),
    }
}

/// Classifies writing files in the shell's directory (`what` says which).
pub(super) fn judge_write_here(walker: &mut Walker<'_>, part: &str, what: &str) {
    let (class, why) = match &walker.cwd {
        Cwd::Inside(_) => (CommandClass::WritesWorkspace, what.to_string()),
        Cwd::Outside => (
            CommandClass::Destructive,
            format!("{what}, outside the workspace"),
        ),
        Cwd::Unknown => (
            CommandClass::Unknown,
            format!("{what}, in a directory only known when it runs"),
        ),
    };
    walker.note(part, class, why);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(value: &str, cwd: &str) -> Place {
        place_of(
            &Word::literal(value),
            &Cwd::Inside(PathBuf::from(cwd)),
            Path::new("/repo"),
        )
    }

    #[test]
    fn paths_resolve_lexically_against_the_shells_directory() {
        assert_eq!(place("a.txt", "src"), Place::Inside("src/a.txt".into()));
        assert_eq!(place("../a.txt", "src"), Place::Inside("a.txt".into()));
        assert_eq!(place("./x/../y", ""), Place::Inside("y".into()));
        assert_eq!(place(".", ""), Place::Inside("".into()));
        assert_eq!(place("/repo/src/a", ""), Place::Inside("src/a".into()));
        assert_eq!(place("../../a", "src"), Place::Outside("../../a".into()));
        assert_eq!(
            place("/etc/passwd", ""),
            Place::Outside("/etc/passwd".into())
        );
        assert_eq!(
            place("/repository/a", ""),
            Place::Outside("/repository/a".into())
        );
        assert_eq!(place("~/.bashrc", ""), Place::Outside("~/.bashrc".into()));
        assert_eq!(place("/dev/null", ""), Place::Device);
        assert_eq!(place("*.o", "build"), Place::Pattern("build/*.o".into()));
        assert_eq!(
            place_of(
                &Word::dynamic("$OUT"),
                &Cwd::Inside(PathBuf::new()),
                Path::new("/repo")
            ),
            Place::Dynamic
        );
        assert_eq!(
            place_of(&Word::literal("a"), &Cwd::Unknown, Path::new("/repo")),
            Place::Dynamic
        );
        assert_eq!(
            place_of(&Word::literal("a"), &Cwd::Outside, Path::new("/repo")),
            Place::Outside("a".into())
        );
    }

    #[test]
    fn cd_moves_the_directory_relative_paths_resolve_against() {
        let root = Path::new("/repo");
        let start = Cwd::start(root, Path::new("/repo/src"));
        assert_eq!(start, Cwd::Inside("src".into()));
        assert_eq!(
            start.after_cd(Some(&Word::literal("..")), root),
            Cwd::Inside("".into())
        );
        assert_eq!(
            start.after_cd(Some(&Word::literal("/tmp")), root),
            Cwd::Outside
        );
        assert_eq!(start.after_cd(None, root), Cwd::Outside);
        assert_eq!(
            start.after_cd(Some(&Word::dynamic("$D")), root),
            Cwd::Unknown
        );
        assert_eq!(Cwd::start(root, Path::new("/elsewhere")), Cwd::Outside);
    }
}
