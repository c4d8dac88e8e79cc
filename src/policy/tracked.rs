//! Which files git tracks, read from the repository's index: the real
//! [`TrackedFiles`] behind command classification.
//!
//! Owns: opening the repository around the workspace and looking a path up in its
//! index.
//! Does not own: what "tracked" means for a command (`command::paths`).
//! Invariant: read-only; a path is untracked only when git says so (or there is no
//! repository, or it is not a path git can track: the work tree's root, or a path with
//! `.`, `..` or a NUL byte in it); when the index cannot be read, every path counts as
//! tracked. Never panics, whatever the path.

use std::path::{Component, Path, PathBuf};

use super::TrackedFiles;

/// Looks paths up in the index of the repository containing the workspace.
#[derive(Clone, Debug)]
pub struct GitIndex {
    root: PathBuf,
}

impl GitIndex {
    /// `root` is the workspace root that classified paths are relative to.
    pub fn new(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
        }
    }

    fn lookup(&self, path: &Path) -> Result<bool, git2::Error> {
        let Some(repo) = crate::git::discover(&self.root)? else {
            return Ok(false);
        };
        let Some(workdir) = repo.workdir() else {
            return Ok(false);
        };
        let absolute = self.root.join(path);
        let Ok(in_repo) = absolute.strip_prefix(workdir) else {
            return Ok(false);
        };
        // git2's lookup panics on a path it cannot store (the root itself, a `..`, a
        // NUL): none of those is a tracked file.
        if !is_index_path(in_repo) {
            return Ok(false);
        }
        Ok(repo.index()?.get_path(in_repo, 0).is_some())
    }
}

/// A path the index can hold: one or more plain names, no NUL byte.
fn is_index_path(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    path.components().next().is_some()
        && path
            .components()
            .all(|component| matches!(component, Component::Normal(_)))
        && !path.as_os_str().as_bytes().contains(&0)
}

impl TrackedFiles for GitIndex {
    fn is_tracked(&self, path: &Path) -> bool {
        self.lookup(path).unwrap_or_else(|error| {
            tracing::warn!(%error, path = %path.display(), "cannot read the git index; assuming tracked");
            true
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use git2::Repository;

    #[test]
    fn the_index_says_what_is_tracked() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let repo = Repository::init(&root).unwrap();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/lib.rs"), "").unwrap();
        std::fs::write(root.join("notes.txt"), "").unwrap();
        let mut index = repo.index().unwrap();
        index.add_path(Path::new("src/lib.rs")).unwrap();
        index.write().unwrap();

        let tracked = GitIndex::new(&root);
        assert!(tracked.is_tracked(Path::new("src/lib.rs")));
        assert!(!tracked.is_tracked(Path::new("notes.txt")));
        assert!(!tracked.is_tracked(Path::new("missing.rs")));
        // From a workspace below the repository root, paths are relative to it.
        assert!(GitIndex::new(&root.join("src")).is_tracked(Path::new("lib.rs")));
    }

    #[test]
    fn the_root_and_paths_git_cannot_store_are_untracked_not_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        Repository::init(&root).unwrap();
        let tracked = GitIndex::new(&root);
        for path in ["", ".", "..", "./a", "a/../b", "a\0b"] {
            assert!(!tracked.is_tracked(Path::new(path)), "{path:?}");
        }
        // From a workspace below the repository root, its root is a path in the index.
        std::fs::create_dir(root.join("sub")).unwrap();
        assert!(!GitIndex::new(&root.join("sub")).is_tracked(Path::new("")));
    }

    #[test]
    fn outside_a_repository_nothing_is_tracked() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!GitIndex::new(dir.path()).is_tracked(Path::new("a.txt")));
    }
}
