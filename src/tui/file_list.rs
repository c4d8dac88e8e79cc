//! The workspace's files as `@` mentions can name them: walked on a blocking thread
//! when a mention first needs them, and again once the workspace may have changed.
//!
//! Owns: which files are offered (the search tools' walk: `.gitignore` and `.ignore`
//! respected even outside a git repository, hidden files included, never `.git/`,
//! symlinks not followed) and the cap on their number. Does not own: matching them
//! against what is typed (`composer::complete`), or when a walk runs (the app asks,
//! the event loop runs it).
//! Invariant: a walk stops after [`MAX_FILES`] files (or four times as many entries
//! seen), so a huge tree costs a bounded time and memory; every path listed has a
//! [`crate::mention::token`] and nothing in it a terminal would act on or hide.

use std::path::Path;

use crate::mention;
use crate::terminal_text;

/// Files listed at most; past this a walk stops and says so.
pub const MAX_FILES: usize = 50_000;

/// The result of one walk.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileList {
    /// Relative to the workspace, `/`-separated, in the walk's order (by name, depth
    /// first).
    pub paths: Vec<String>,
    /// The walk stopped at the cap: files past it are not offered.
    pub truncated: bool,
}

/// The files under `root` a mention may name, at most `cap` of them.
pub fn list_files(root: &Path, cap: usize) -> FileList {
    // Symlinks are offered only when they lead to a file inside the workspace: what a
    // mention names, the agent reads, and it reads nothing outside.
    let real_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let walk = ignore::WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .sort_by_file_name(|a, b| a.cmp(b))
        .build();
    let mut list = FileList::default();
    // Ignored directories are not entered, but a tree of empty directories costs a walk
    // too.
    let mut budget = cap.saturating_mul(4);
    for entry in walk.flatten() {
        if budget == 0 {
            list.truncated = true;
            break;
        }
        budget -= 1;
        let Some(kind) = entry.file_type() else {
            continue;
        };
        let wanted = kind.is_file()
            || (kind.is_symlink()
                && std::fs::canonicalize(entry.path())
                    .is_ok_and(|target| target.starts_with(&real_root) && target.is_file()));
        if !wanted {
            continue;
        }
        let Some(path) = entry
            .path()
            .strip_prefix(root)
            .ok()
            .and_then(Path::to_str)
            .filter(|path| offerable(path))
        else {
            continue;
        };
        if list.paths.len() == cap {
            list.truncated = true;
            break;
        }
        list.paths
            .push(path.replace(std::path::MAIN_SEPARATOR, "/"));
    }
    list
}

/// A path the popup can show as it is and a token can name: no control character, no
/// character a reader cannot see (a bidi override would make the list lie), and a
/// token exists for it.
fn offerable(path: &str) -> bool {
    !path.is_empty()
        && path
            .chars()
            .all(|c| !c.is_control() && terminal_text::hidden(c).is_none())
        && mention::token(path).is_some()
}

#[cfg(test)]
mod tests {
    use std::fs;

    use pretty_assertions::assert_eq;

    use super::*;

    fn tree(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for file in files {
            let path = dir.path().join(file);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, "x\n").unwrap();
        }
        dir
    }

    #[test]
    fn ignored_files_and_git_are_left_out_hidden_ones_kept() {
        let dir = tree(&[
            ".gitignore",
            "src/main.rs",
            "src/lib.rs",
            "target/debug/duet",
            ".git/HEAD",
            ".github/ci.yml",
            "dir with space/a b.txt",
        ]);
        fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
        let list = list_files(dir.path(), MAX_FILES);
        assert_eq!(
            list.paths,
            [
                ".github/ci.yml",
                ".gitignore",
                "dir with space/a b.txt",
                "src/lib.rs",
                "src/main.rs"
            ]
        );
        assert!(!list.truncated);
    }

    #[test]
    fn the_walk_stops_at_the_cap() {
        let dir = tree(&["a", "b", "c", "d"]);
        let list = list_files(dir.path(), 3);
        assert_eq!(list.paths, ["a", "b", "c"]);
        assert!(list.truncated);
        assert!(!list_files(dir.path(), 4).truncated);
    }

    #[test]
    fn paths_no_token_or_screen_can_take_are_skipped() {
        let dir = tree(&[
            "ok.rs",
            "bidi\u{202e}txt.sh",
            "both \"quoted.rs",
            "say \"hi\"",
        ]);
        let list = list_files(dir.path(), MAX_FILES);
        assert_eq!(list.paths, ["ok.rs"]);
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_offered_only_to_files_inside_the_workspace() {
        let outside = tree(&["secret.txt"]);
        let dir = tree(&["real/file.rs"]);
        let link = |target: &Path, name: &str| {
            std::os::unix::fs::symlink(target, dir.path().join(name)).unwrap();
        };
        link(&dir.path().join("real/file.rs"), "inside.rs");
        link(&outside.path().join("secret.txt"), "outside.txt");
        link(outside.path(), "outside_dir");
        link(&dir.path().join("real"), "real_dir");
        let list = list_files(dir.path(), MAX_FILES);
        assert_eq!(list.paths, ["inside.rs", "real/file.rs"]);
    }
}
