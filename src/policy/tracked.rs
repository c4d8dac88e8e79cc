//! Which files git tracks, read from the repository's index: the real
//! [`TrackedFiles`] behind command classification.
//!
//! Owns: opening the repository around the workspace and looking a path up in its
//! index.
//! Does not own: what "tracked" means for a command (`command::paths`).
//! Invariant: read-only; a path is untracked only when git says so (or there is no
//! repository); when the index cannot be read, every path counts as tracked.

use std::path::{Path, PathBuf};

use git2::{ErrorCode, Repository};

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
        let repo = match Repository::discover(&self.root) {
            Ok(repo) => repo,
            Err(error) if error.code() == ErrorCode::NotFound => return Ok(false),
            Err(error) => return Err(error),
        };
        let Some(workdir) = repo.workdir() else {
            return Ok(false);
        };
        let absolute = self.root.join(path);
        let Ok(in_repo) = absolute.strip_prefix(workdir) else {
            return Ok(false);
        };
        Ok(repo.index()?.get_path(in_repo, 0).is_some())
    }
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
    fn outside_a_repository_nothing_is_tracked() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!GitIndex::new(dir.path()).is_tracked(Path::new("a.txt")));
    }
}
