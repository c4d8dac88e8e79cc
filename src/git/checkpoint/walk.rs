//! Which files a snapshot covers: everything under the root that git would not ignore
//! (`.gitignore` files, `.git/info/exclude`, the global excludes file). Never `.git/`,
//! never the inside of a nested repository (git records those as submodules, not as
//! files). Tracked files an ignore rule matches come from the user's index
//! (`user_index.rs`).

use std::path::Path;

use super::{CheckpointError, Files};

/// Every file and symlink under `root` that is not ignored, with its `lstat` metadata,
/// paths relative to `root`. Outside a git repository `.gitignore` files still apply,
/// so a `target/` or `node_modules/` is skipped there too.
pub(super) fn list_files(root: &Path, in_git: bool) -> Result<Files, CheckpointError> {
    let walk = ignore::WalkBuilder::new(root)
        .hidden(false)
        .ignore(false)
        .parents(in_git)
        .require_git(in_git)
        .follow_links(false)
        .filter_entry(|entry| {
            entry.file_name() != ".git" && !is_nested_repository(entry.path(), entry.depth())
        })
        .build();
    let mut files = Vec::new();
    for entry in walk {
        let entry = entry?;
        if entry.file_type().is_none_or(|kind| kind.is_dir()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let meta = entry.metadata()?;
        files.push((rel.to_path_buf(), meta));
    }
    Ok(files)
}

/// A directory below the root holding its own `.git` is another repository.
fn is_nested_repository(path: &Path, depth: usize) -> bool {
    depth > 0 && path.join(".git").symlink_metadata().is_ok()
}
