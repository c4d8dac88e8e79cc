//! Protected names a confined program created: taken back as soon as it ends.
//!
//! The sandbox mounts every protected path that exists read-only, but the kernel
//! offers no way to forbid one name that does not exist yet inside a directory that
//! stays writable: a mount needs something there (and a bind mount would create it on
//! the host), and Landlock grants creating entries per directory, not per name. So
//! what a program creates under a protected name (`.env`, `.github/workflows`, a
//! nested repository's `.git`) is moved out of the way when the program's command
//! ends, before anything else runs: into `.duet/blocked/<when>/`, itself read-only to
//! programs, where the user can look at it or put it back.
//!
//! Owns: choosing what to move (the outermost of the created entries) and moving it.
//! Does not own: finding the protected entries (the plan) or stopping the programs
//! that could make them again (the sandbox retires its shells).
//! Invariant: every move goes through the workspace's directory handle, never through
//! a link and never over an existing entry; what cannot be moved is reported, never
//! deleted.

use std::path::{Path, PathBuf};

use crate::beneath::Root;

/// Where taken-back entries go, relative to the workspace.
pub const BLOCKED_DIR: &str = ".duet/blocked";

/// duet's own directory, which may itself be what a program created.
const DUET_DIR: &str = ".duet";

/// What taking back a program's protected creations came to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Blocked {
    /// The entries moved away, relative to the workspace, as they were named.
    pub moved: Vec<PathBuf>,
    /// The directories they are in now, relative to the workspace (one per take-back).
    pub kept_in: Vec<PathBuf>,
    /// Entries that could not be moved, with why: they stay, read-only to programs
    /// from the next command on.
    pub stuck: Vec<(PathBuf, String)>,
}

impl Blocked {
    pub fn is_empty(&self) -> bool {
        self.moved.is_empty() && self.stuck.is_empty()
    }

    /// One line saying what `who` (e.g. "this check") created and where it went, for
    /// the model and the user; `None` when nothing was created.
    pub fn line(&self, who: &str) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let names = |paths: &mut dyn Iterator<Item = &PathBuf>| {
            paths
                .map(|path| path.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut line = format!(
            "{who} created protected paths ({}), which no program may create",
            names(
                &mut self
                    .moved
                    .iter()
                    .chain(self.stuck.iter().map(|(path, _)| path))
            )
        );
        if !self.kept_in.is_empty() {
            line.push_str(&format!(
                "; duet moved them into {} (the user can put them back)",
                names(&mut self.kept_in.iter())
            ));
        }
        if !self.stuck.is_empty() {
            line.push_str(&format!(
                "; could not move {}, read-only to commands from now on",
                names(&mut self.stuck.iter().map(|(path, _)| path))
            ));
        }
        line.push('.');
        Some(line)
    }

    /// This and `later` as one account.
    pub fn and(mut self, later: Blocked) -> Blocked {
        self.moved.extend(later.moved);
        self.kept_in.extend(later.kept_in);
        self.stuck.extend(later.stuck);
        self
    }
}

/// Moves the entries `created` (relative to `workspace`) into a new directory below
/// [`BLOCKED_DIR`], keeping their relative paths.
pub(crate) fn take_back(workspace: &Path, created: &[PathBuf]) -> Blocked {
    let created = outermost(created);
    let mut blocked = Blocked::default();
    if created.is_empty() {
        return blocked;
    }
    let root = match Root::open(workspace) {
        Ok(root) => root,
        Err(error) => {
            let why = format!("cannot open the workspace: {error}");
            blocked.stuck = created
                .into_iter()
                .map(|path| (path, why.clone()))
                .collect();
            return blocked;
        }
    };
    let kept_in = Path::new(BLOCKED_DIR).join(format!("{}-{:04x}", timestamp(), fastrand::u16(..)));
    // A `.duet` the program made cannot hold itself: it is set aside first, and the
    // blocked directory is made in a fresh `.duet`.
    let mut sources: Vec<(PathBuf, PathBuf)> = Vec::with_capacity(created.len());
    for entry in created {
        if entry == Path::new(DUET_DIR) {
            let aside = PathBuf::from(format!(".duet-blocked-{:08x}", fastrand::u32(..)));
            match root.move_entry(&entry, &aside) {
                Ok(()) => sources.push((aside, entry)),
                Err(error) => blocked.stuck.push((entry, error.to_string())),
            }
        } else {
            sources.push((entry.clone(), entry));
        }
    }
    for (source, entry) in sources {
        match root.move_entry(&source, &kept_in.join(&entry)) {
            Ok(()) => blocked.moved.push(entry),
            Err(error) => {
                tracing::warn!(entry = %entry.display(), %error, "a protected entry a program created could not be moved away");
                blocked.stuck.push((entry, error.to_string()));
            }
        }
    }
    if !blocked.moved.is_empty() {
        blocked.kept_in.push(kept_in);
    }
    blocked
}

/// `entries` without those inside another of them, sorted.
fn outermost(entries: &[PathBuf]) -> Vec<PathBuf> {
    let mut sorted = entries.to_vec();
    sorted.sort();
    sorted.dedup();
    let mut kept: Vec<PathBuf> = Vec::with_capacity(sorted.len());
    for entry in sorted {
        if !kept.iter().any(|outer| entry.starts_with(outer)) {
            kept.push(entry);
        }
    }
    kept
}

/// The time now in UTC as `20261205T234501Z`: names sort by when they were made.
fn timestamp() -> String {
    let now = time::OffsetDateTime::now_utc();
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second()
    )
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    fn tree(dir: &Path) -> Vec<String> {
        let mut found: Vec<String> = walk(dir, dir);
        found.sort();
        found
    }

    fn walk(root: &Path, dir: &Path) -> Vec<String> {
        let mut found = Vec::new();
        for entry in fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let relative = path.strip_prefix(root).unwrap().display().to_string();
            if entry.file_type().unwrap().is_dir() {
                found.extend(walk(root, &path));
            } else {
                found.push(relative);
            }
        }
        found
    }

    #[test]
    fn created_entries_move_with_their_content_into_one_blocked_directory() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        fs::create_dir_all(ws.join(".github/workflows")).unwrap();
        fs::write(ws.join(".github/workflows/ci.yml"), "on: push\n").unwrap();
        fs::write(ws.join(".env"), "A=1\n").unwrap();
        fs::write(ws.join("kept.txt"), "mine\n").unwrap();
        let blocked = take_back(
            ws,
            &[
                ".github/workflows".into(),
                ".github/workflows/ci.yml".into(),
                ".env".into(),
            ],
        );
        assert_eq!(
            blocked.moved,
            [PathBuf::from(".env"), PathBuf::from(".github/workflows")]
        );
        assert!(blocked.stuck.is_empty(), "{:?}", blocked.stuck);
        let kept_in = blocked.kept_in[0].clone();
        assert!(kept_in.starts_with(BLOCKED_DIR), "{}", kept_in.display());
        let kept = |path: &str| kept_in.join(path).display().to_string();
        assert_eq!(
            tree(ws),
            [
                kept(".env"),
                kept(".github/workflows/ci.yml"),
                "kept.txt".into()
            ]
        );
        assert_eq!(
            fs::read_to_string(ws.join(&kept_in).join(".env")).unwrap(),
            "A=1\n"
        );
    }

    #[test]
    fn a_duet_directory_a_program_made_is_blocked_inside_a_fresh_one() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        fs::create_dir_all(ws.join(".duet")).unwrap();
        fs::write(ws.join(".duet/mcp.toml"), "[servers.x]\n").unwrap();
        let blocked = take_back(ws, &[".duet".into()]);
        assert_eq!(blocked.moved, [PathBuf::from(".duet")]);
        let kept_in = blocked.kept_in[0].clone();
        assert_eq!(
            tree(ws),
            [kept_in.join(".duet/mcp.toml").display().to_string()]
        );
    }

    #[test]
    fn a_link_is_moved_itself_and_a_linked_duet_directory_stops_the_move() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("decoy"), "decoy\n").unwrap();
        let ws = dir.path();
        std::os::unix::fs::symlink(outside.path().join("decoy"), ws.join(".env")).unwrap();
        let blocked = take_back(ws, &[".env".into()]);
        assert_eq!(blocked.moved, [PathBuf::from(".env")]);
        let kept = ws.join(&blocked.kept_in[0]).join(".env");
        assert!(fs::symlink_metadata(kept).unwrap().is_symlink());

        // `.duet` a link out (planted before the session): nothing is moved through it.
        fs::remove_dir_all(ws.join(".duet")).unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.join(".duet")).unwrap();
        fs::write(ws.join(".envrc"), "evil\n").unwrap();
        let blocked = take_back(ws, &[".envrc".into()]);
        assert!(blocked.moved.is_empty());
        assert_eq!(blocked.stuck.len(), 1, "{:?}", blocked.stuck);
        assert_eq!(tree(outside.path()), ["decoy"]);
        assert_eq!(fs::read_to_string(ws.join(".envrc")).unwrap(), "evil\n");
    }
}
