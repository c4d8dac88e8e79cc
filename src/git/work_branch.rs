//! The branch `duet exec --done` works on, and the one commit it proposes there.
//!
//! Owns: refusing a dirty work tree, creating and switching to a fresh `duet/<slug>`
//! branch, keeping duet's own files out of git (`.git/info/exclude`), naming the tree
//! the work tree would commit, listing the changes since the branch started (with the
//! blobs before and after and the added lines), and committing exactly a verified tree.
//! Does not own: deciding whether a change is acceptable (`exec::evidence` does).
//! Invariant: only the branch created here ever moves; the branch the user was on, any
//! remote and the user's `.gitignore` are never touched.

use std::path::{Path, PathBuf};

use git2::{
    BranchType, DiffOptions, IndexAddOption, Oid, Repository, Signature, Status, StatusOptions,
};

/// The prefix of every branch duet creates.
pub const BRANCH_PREFIX: &str = "duet/";

/// Why the work branch could not be prepared or committed.
#[derive(Debug, thiserror::Error)]
pub enum WorkBranchError {
    #[error("{0} is not inside a git repository; `duet exec --done` works on a new branch")]
    NotARepository(PathBuf),
    #[error("the repository has no commit yet to branch from; commit something first")]
    NoCommit,
    #[error(
        "the work tree has uncommitted changes ({0}); commit or stash them first, \
         or pass --allow-dirty to include them in duet's branch"
    )]
    Dirty(String),
    #[error("files changed after the final check; nothing was committed")]
    ChangedAfterCheck,
    #[error("cannot update {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Git(#[from] git2::Error),
}

/// The repository around a workspace, opened for `--done` work.
pub struct WorkRepo {
    repo: Repository,
}

/// Where a work branch started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BranchStart {
    /// `duet/<slug>`.
    pub branch: String,
    /// The branch the user was on, if any (it is left where it was).
    pub previous: Option<String>,
    pub commit: Oid,
}

/// One file the work changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    /// Relative to the repository root, `/`-separated.
    pub path: String,
    /// The blob at the branch start; `None` for a new file.
    pub before: Option<Oid>,
    /// The blob now; `None` for a deleted file.
    pub after: Option<Oid>,
    /// The lines the change adds (without the leading `+`).
    pub added: Vec<String>,
    pub removed_count: usize,
}

impl WorkRepo {
    /// The repository containing `workspace`.
    pub fn open(workspace: &Path) -> Result<Self, WorkBranchError> {
        let repo = super::discover(workspace)
            .ok()
            .flatten()
            .filter(|repo| repo.workdir().is_some())
            .ok_or_else(|| WorkBranchError::NotARepository(workspace.to_path_buf()))?;
        Ok(Self { repo })
    }

    /// The work tree's root.
    pub fn root(&self) -> &Path {
        self.repo.workdir().unwrap_or_else(|| self.repo.path())
    }

    /// Adds `pattern` to `.git/info/exclude` unless a line already says it. The file
    /// is read and replaced through a handle of the git directory, never through a
    /// link planted at it or at `info`.
    pub fn exclude(&self, pattern: &str) -> Result<(), WorkBranchError> {
        let relative = Path::new("info").join("exclude");
        let io_error = |source| WorkBranchError::Io {
            path: self.repo.path().join(&relative),
            source,
        };
        let refused = |error: crate::beneath::Error| io_error(std::io::Error::other(error));
        let git_dir = crate::beneath::Root::open(self.repo.path()).map_err(io_error)?;
        let existing = match git_dir.read(&relative) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(error) if error.is_not_found() => String::new(),
            Err(error) => return Err(refused(error)),
        };
        if existing.lines().any(|line| line.trim() == pattern) {
            return Ok(());
        }
        let separator = if existing.is_empty() || existing.ends_with('\n') {
            ""
        } else {
            "\n"
        };
        let text = format!("{existing}{separator}{pattern}\n");
        let mode = match git_dir.metadata(&relative) {
            Ok(Some(meta)) if meta.is_file() => Some(meta.mode()),
            _ => None,
        };
        git_dir
            .replace(&relative, text.as_bytes(), mode)
            .map(drop)
            .map_err(refused)
    }

    /// Fails with the changed paths when anything is staged, modified or untracked
    /// (ignored files do not count).
    pub fn ensure_clean(&self) -> Result<(), WorkBranchError> {
        let mut options = StatusOptions::new();
        options
            .include_untracked(true)
            .recurse_untracked_dirs(false)
            .include_ignored(false);
        let statuses = self.repo.statuses(Some(&mut options))?;
        let dirty: Vec<String> = statuses
            .iter()
            .filter(|entry| entry.status() != Status::CURRENT)
            .filter_map(|entry| entry.path().ok().map(str::to_string))
            .collect();
        match dirty.len() {
            0 => Ok(()),
            n if n > 5 => Err(WorkBranchError::Dirty(format!(
                "{} and {} more",
                dirty[..5].join(", "),
                n - 5
            ))),
            _ => Err(WorkBranchError::Dirty(dirty.join(", "))),
        }
    }

    /// Creates `duet/<slug>` (or `duet/<slug>-2`, `-3`, ... when taken) at HEAD and
    /// switches to it. The work tree and index stay as they are.
    pub fn start_branch(&self, slug: &str) -> Result<BranchStart, WorkBranchError> {
        let head = self.repo.head().map_err(|_| WorkBranchError::NoCommit)?;
        let previous = head
            .is_branch()
            .then(|| head.shorthand().ok().map(str::to_string))
            .flatten();
        let commit = head
            .peel_to_commit()
            .map_err(|_| WorkBranchError::NoCommit)?;
        let branch = (1..)
            .map(|n| match n {
                1 => format!("{BRANCH_PREFIX}{slug}"),
                n => format!("{BRANCH_PREFIX}{slug}-{n}"),
            })
            .find(|name| self.repo.find_branch(name, BranchType::Local).is_err())
            .unwrap_or_else(|| format!("{BRANCH_PREFIX}{slug}"));
        self.repo.branch(&branch, &commit, false)?;
        self.repo.set_head(&format!("refs/heads/{branch}"))?;
        Ok(BranchStart {
            branch,
            previous,
            commit: commit.id(),
        })
    }

    /// The tree a commit of the whole work tree would have now (every file that is
    /// not ignored), written to the object store but not to the user's index.
    pub fn work_tree(&self) -> Result<Oid, WorkBranchError> {
        Ok(self.staged_index()?.write_tree()?)
    }

    /// The changes from `start`'s tree to `tree`.
    pub fn changes(&self, start: Oid, tree: Oid) -> Result<Vec<FileChange>, WorkBranchError> {
        let old = self.repo.find_commit(start)?.tree()?.id();
        self.changes_between_trees(old, tree)
    }

    /// The changes from the tree `old` to the tree `new`.
    pub fn changes_between_trees(
        &self,
        old: Oid,
        new: Oid,
    ) -> Result<Vec<FileChange>, WorkBranchError> {
        let diff = self.diff(old, new)?;
        let mut changes = Vec::with_capacity(diff.deltas().len());
        for (index, delta) in diff.deltas().enumerate() {
            let path = delta
                .new_file()
                .path()
                .or_else(|| delta.old_file().path())
                .map(|path| path.to_string_lossy().replace('\\', "/"))
                .unwrap_or_default();
            let blob = |file: git2::DiffFile<'_>| file.exists().then(|| file.id());
            let mut change = FileChange {
                path,
                before: blob(delta.old_file()),
                after: blob(delta.new_file()),
                added: Vec::new(),
                removed_count: 0,
            };
            // Binary files have no patch: they add no lines.
            if let Some(patch) = git2::Patch::from_diff(&diff, index)? {
                for hunk in 0..patch.num_hunks() {
                    for line in 0..patch.num_lines_in_hunk(hunk)? {
                        let line = patch.line_in_hunk(hunk, line)?;
                        match line.origin() {
                            '+' => change.added.push(
                                String::from_utf8_lossy(line.content())
                                    .trim_end_matches('\n')
                                    .to_string(),
                            ),
                            '-' => change.removed_count += 1,
                            _ => {}
                        }
                    }
                }
            }
            changes.push(change);
        }
        Ok(changes)
    }

    /// `git diff --stat` from `start`'s tree to `tree`.
    pub fn diff_stat(&self, start: Oid, tree: Oid) -> Result<String, WorkBranchError> {
        let old = self.repo.find_commit(start)?.tree()?.id();
        let stats = self.diff(old, tree)?.stats()?;
        let text = stats.to_buf(git2::DiffStatsFormat::FULL, 80)?;
        Ok(String::from_utf8_lossy(&text).into_owned())
    }

    /// The contents of a blob.
    pub fn blob(&self, id: Oid) -> Result<Vec<u8>, WorkBranchError> {
        Ok(self.repo.find_blob(id)?.content().to_vec())
    }

    /// Commits the work tree on the current branch, as "duet", if it is still exactly
    /// `verified`; the user's index is updated to match, so `git status` is clean.
    pub fn commit(&self, verified: Oid, message: &str) -> Result<Oid, WorkBranchError> {
        let mut index = self.staged_index()?;
        let tree_id = index.write_tree()?;
        if tree_id != verified {
            return Err(WorkBranchError::ChangedAfterCheck);
        }
        index.write()?;
        let tree = self.repo.find_tree(tree_id)?;
        let parent = self.repo.head()?.peel_to_commit()?;
        let signature = Signature::now("duet", "duet@localhost")?;
        Ok(self.repo.commit(
            Some("HEAD"),
            &signature,
            &signature,
            message,
            &tree,
            &[&parent],
        )?)
    }

    /// The tree of `commit`.
    pub fn tree_of(&self, commit: Oid) -> Result<Oid, WorkBranchError> {
        Ok(self.repo.find_commit(commit)?.tree_id())
    }

    /// The user's index with every non-ignored file of the work tree staged, in memory.
    fn staged_index(&self) -> Result<git2::Index, WorkBranchError> {
        let mut index = self.repo.index()?;
        index.add_all(["*"], IndexAddOption::DEFAULT, None)?;
        index.update_all(["*"], None)?;
        Ok(index)
    }

    fn diff(&self, old: Oid, new: Oid) -> Result<git2::Diff<'_>, WorkBranchError> {
        let old = self.repo.find_tree(old)?;
        let new = self.repo.find_tree(new)?;
        let mut options = DiffOptions::new();
        options.context_lines(0);
        Ok(self
            .repo
            .diff_tree_to_tree(Some(&old), Some(&new), Some(&mut options))?)
    }
}

/// A branch-name slug of `task`: its first words, lowercase ASCII letters and digits
/// joined by `-`, at most 40 characters; `task` when nothing is left.
pub fn slug(task: &str) -> String {
    const MAX: usize = 40;
    let mut slug = String::new();
    for word in task
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| !word.is_empty())
    {
        let word = word.to_ascii_lowercase();
        let extra = if slug.is_empty() { 0 } else { 1 } + word.len();
        if slug.len() + extra > MAX {
            if slug.is_empty() {
                slug = word[..MAX].to_string();
            }
            break;
        }
        if !slug.is_empty() {
            slug.push('-');
        }
        slug.push_str(&word);
    }
    if slug.is_empty() {
        "task".to_string()
    } else {
        slug
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::git::tests::commit_all;

    fn repo_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Repository) {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        for (path, content) in files {
            std::fs::write(dir.path().join(path), content).unwrap();
        }
        commit_all(&repo, "first");
        (dir, repo)
    }

    #[test]
    fn slugs_are_short_lowercase_words() {
        assert_eq!(
            slug("Fix the failing test in a.txt!"),
            "fix-the-failing-test-in-a-txt"
        );
        assert_eq!(slug("  ***  "), "task");
        assert_eq!(
            slug("make every request in the client retry on overload errors"),
            "make-every-request-in-the-client-retry"
        );
        assert_eq!(slug(&"x".repeat(50)).len(), 40);
    }

    #[test]
    fn a_dirty_tree_is_refused_with_its_paths() {
        let (dir, _repo) = repo_with(&[("a.txt", "a\n")]);
        let work = WorkRepo::open(dir.path()).unwrap();
        work.ensure_clean().unwrap();
        std::fs::write(dir.path().join("a.txt"), "b\n").unwrap();
        let error = work.ensure_clean().unwrap_err().to_string();
        assert!(
            error.contains("a.txt") && error.contains("--allow-dirty"),
            "{error}"
        );
    }

    #[test]
    fn excluded_files_do_not_make_the_tree_dirty_and_are_added_once() {
        let (dir, repo) = repo_with(&[("a.txt", "a\n")]);
        let work = WorkRepo::open(dir.path()).unwrap();
        std::fs::create_dir(dir.path().join(".duet")).unwrap();
        std::fs::write(dir.path().join(".duet/notes.md"), "n\n").unwrap();
        work.exclude(".duet/").unwrap();
        work.exclude(".duet/").unwrap();
        work.ensure_clean().unwrap();
        let exclude = std::fs::read_to_string(repo.path().join("info/exclude")).unwrap();
        assert_eq!(exclude.matches(".duet/").count(), 1, "{exclude}");
    }

    #[test]
    fn branches_are_fresh_and_the_previous_branch_stays_put() {
        let (dir, repo) = repo_with(&[("a.txt", "a\n")]);
        let previous = repo.head().unwrap().shorthand().unwrap().to_string();
        let before = repo.head().unwrap().target().unwrap();
        let work = WorkRepo::open(dir.path()).unwrap();
        let first = work.start_branch("fix-it").unwrap();
        assert_eq!(first.branch, "duet/fix-it");
        assert_eq!(first.previous.as_deref(), Some(previous.as_str()));
        let second = work.start_branch("fix-it").unwrap();
        assert_eq!(second.branch, "duet/fix-it-2");
        assert_eq!(repo.head().unwrap().shorthand().unwrap(), "duet/fix-it-2");

        std::fs::write(dir.path().join("a.txt"), "fixed\n").unwrap();
        std::fs::write(dir.path().join("new.txt"), "one\ntwo\n").unwrap();
        let tree = work.work_tree().unwrap();
        let changes = work.changes(second.commit, tree).unwrap();
        let paths: Vec<_> = changes.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["a.txt", "new.txt"]);
        assert_eq!(changes[0].added, ["fixed"]);
        assert_eq!(changes[0].removed_count, 1);
        assert_eq!(changes[1].before, None);
        assert!(
            work.diff_stat(second.commit, tree)
                .unwrap()
                .contains("2 files changed")
        );

        let commit = work.commit(tree, "duet: fix it").unwrap();
        assert_eq!(work.tree_of(commit).unwrap(), tree);
        work.ensure_clean().unwrap();
        let user_branch = repo.find_branch(&previous, BranchType::Local).unwrap();
        assert_eq!(user_branch.get().target(), Some(before));
    }

    #[test]
    fn a_tree_changed_after_the_check_is_not_committed() {
        let (dir, _repo) = repo_with(&[("a.txt", "a\n")]);
        let work = WorkRepo::open(dir.path()).unwrap();
        work.start_branch("x").unwrap();
        std::fs::write(dir.path().join("a.txt"), "checked\n").unwrap();
        let verified = work.work_tree().unwrap();
        std::fs::write(dir.path().join("a.txt"), "sneaked in\n").unwrap();
        assert!(matches!(
            work.commit(verified, "m"),
            Err(WorkBranchError::ChangedAfterCheck)
        ));
    }
}
