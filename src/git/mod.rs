//! Views of the git repository around the workspace, and checkpoints.
//!
//! Owns: finding the repository around the workspace ([`discover`], the one way duet
//! opens it) and summarizing its state (branch, recent commits, staged / unstaged /
//! untracked files) for the model's environment block; snapshots of the work tree and
//! undoing turns ([`checkpoint`]); the branch and commit of `duet exec --done`
//! ([`work_branch`]); the git program run as a child process ([`host`]).
//! Invariant: outside [`work_branch`], nothing here writes to the repository's index,
//! refs or config; the only thing ever added is unreferenced checkpoint objects.
//!
//! The repository's content, `.git/config` included, is untrusted (the model can
//! change it). duet's own git work goes through libgit2, which runs no program for it:
//! no hooks, no `core.fsmonitor`, no filter drivers (only the built-in line-ending and
//! `ident` conversions; duet registers no other filter), no pagers, diff drivers or
//! text conversions (libgit2 starts a process only for ssh transports, which duet never
//! uses). It follows `include.path` and `includeIf` as git does, which only reads more
//! config. What libgit2 does honour from a hostile config is where the work tree is and
//! which repository is used, and [`discover`] fixes both: it opens only a
//! `.git` directory or file found in the workspace or above it, never a bare repository
//! found by walking up (git's `safe.bareRepository=explicit`), and the work tree is
//! always the directory holding that `.git`, whatever `core.worktree` says (git's
//! explicit `GIT_WORK_TREE`). libgit2 also checks that the repository belongs to the
//! user (git's `safe.directory` rule, read from the user's own config only).

pub mod checkpoint;
pub mod host;
pub mod work_branch;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use git2::{Repository, RepositoryOpenFlags, Status, StatusOptions};

/// How many paths of each kind the summary names before it only counts.
const LISTED_PATHS: usize = 10;

/// The state of a repository at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RepoSummary {
    /// The checked-out branch; `None` on a detached HEAD or an unborn branch with no name.
    pub branch: Option<String>,
    /// Most recent first: (short id, first line of the message).
    pub recent_commits: Vec<(String, String)>,
    pub staged: Vec<String>,
    pub unstaged: Vec<String>,
    pub untracked: Vec<String>,
}

/// The repository whose work tree holds `path` (a directory), opened for duet's own
/// use (see the module doc): the nearest `.git` directory or file at `path` or above
/// it, with the directory holding it as the work tree. `Ok(None)` when there is none,
/// or when the nearest `.git` is a symbolic link (not followed).
pub fn discover(path: &Path) -> Result<Option<Repository>, git2::Error> {
    for dir in path.ancestors() {
        let dot_git = dir.join(".git");
        let Ok(meta) = dot_git.symlink_metadata() else {
            continue;
        };
        if meta.file_type().is_symlink() {
            tracing::info!(path = %dot_git.display(), "`.git` is a symbolic link; not used");
            return Ok(None);
        }
        // NO_DOTGIT: open exactly this `.git`, never `dir` itself as a bare repository.
        let flags = RepositoryOpenFlags::NO_SEARCH | RepositoryOpenFlags::NO_DOTGIT;
        let repo = match Repository::open_ext(&dot_git, flags, std::iter::empty::<&OsStr>()) {
            Ok(repo) => repo,
            Err(error) if error.code() == git2::ErrorCode::NotFound => return Ok(None),
            Err(error) => return Err(error),
        };
        if !repo.is_bare() && repo.workdir().map(normalized) != Some(normalized(dir)) {
            tracing::info!(
                workdir = ?repo.workdir(),
                "the repository's config moves the work tree; duet uses {}",
                dir.display()
            );
            repo.set_workdir(dir, false)?;
        }
        return Ok(Some(repo));
    }
    Ok(None)
}

/// `path` without a trailing separator, for comparing directories.
fn normalized(path: &Path) -> PathBuf {
    path.components().collect()
}

/// The working-tree root of the repository containing `path`, if any.
pub fn repo_root(path: &Path) -> Option<PathBuf> {
    let repo = discover(path).ok()??;
    repo.workdir().map(Path::to_path_buf)
}

/// Summarizes the repository containing `path`; `Ok(None)` when there is none.
pub fn summarize(path: &Path, commits: usize) -> Result<Option<RepoSummary>, git2::Error> {
    let Some(repo) = discover(path)? else {
        return Ok(None);
    };
    let mut summary = RepoSummary {
        branch: branch_name(&repo),
        recent_commits: recent_commits(&repo, commits)?,
        ..RepoSummary::default()
    };
    if repo.is_bare() {
        return Ok(Some(summary));
    }
    let mut options = StatusOptions::new();
    options
        .include_untracked(true)
        .recurse_untracked_dirs(false)
        .include_ignored(false);
    for entry in repo.statuses(Some(&mut options))?.iter() {
        // Non-UTF-8 paths cannot be named to the model; they are rare enough to skip.
        let Ok(path) = entry.path() else { continue };
        let status = entry.status();
        if status.intersects(
            Status::INDEX_NEW
                | Status::INDEX_MODIFIED
                | Status::INDEX_DELETED
                | Status::INDEX_RENAMED
                | Status::INDEX_TYPECHANGE,
        ) {
            summary.staged.push(path.to_string());
        }
        if status.intersects(
            Status::WT_MODIFIED | Status::WT_DELETED | Status::WT_RENAMED | Status::WT_TYPECHANGE,
        ) {
            summary.unstaged.push(path.to_string());
        }
        if status.contains(Status::WT_NEW) {
            summary.untracked.push(path.to_string());
        }
    }
    Ok(Some(summary))
}

fn branch_name(repo: &Repository) -> Option<String> {
    match repo.head() {
        Ok(head) if head.is_branch() => head.shorthand().ok().map(str::to_string),
        Ok(_) => None,
        // An unborn branch has no commit yet, but HEAD still names it.
        Err(_) => repo
            .find_reference("HEAD")
            .ok()
            .and_then(|head| head.symbolic_target().ok().flatten().map(str::to_string))
            .map(|target| target.trim_start_matches("refs/heads/").to_string()),
    }
}

fn recent_commits(repo: &Repository, limit: usize) -> Result<Vec<(String, String)>, git2::Error> {
    let mut walk = repo.revwalk()?;
    if walk.push_head().is_err() {
        return Ok(Vec::new()); // no commits yet
    }
    let mut commits = Vec::new();
    for oid in walk.take(limit) {
        let commit = repo.find_commit(oid?)?;
        let id = commit.as_object().short_id()?;
        commits.push((
            id.as_str().unwrap_or_default().to_string(),
            commit
                .summary()
                .ok()
                .flatten()
                .unwrap_or_default()
                .to_string(),
        ));
    }
    Ok(commits)
}

/// The commit HEAD points at, if any (a session's starting point for `/diff`).
pub fn head_commit(path: &Path) -> Option<String> {
    let repo = discover(path).ok()??;
    let head = repo.head().ok()?.peel_to_commit().ok()?;
    Some(head.id().to_string())
}

/// Every change in the working tree since `commit` — staged, unstaged and untracked
/// files alike — as a unified diff with paths relative to the repository root.
pub fn diff_since(path: &Path, commit: &str) -> Result<String, git2::Error> {
    let repo = discover(path)?.ok_or_else(|| {
        git2::Error::new(
            git2::ErrorCode::NotFound,
            git2::ErrorClass::Repository,
            format!("no git repository at {}", path.display()),
        )
    })?;
    let tree = repo.find_commit(git2::Oid::from_str(commit)?)?.tree()?;
    let mut options = git2::DiffOptions::new();
    options
        .include_untracked(true)
        .recurse_untracked_dirs(true)
        .show_untracked_content(true);
    let diff = repo.diff_tree_to_workdir_with_index(Some(&tree), Some(&mut options))?;
    let mut text = String::new();
    diff.print(git2::DiffFormat::Patch, |_, _, line| {
        if matches!(line.origin(), '+' | '-' | ' ') {
            text.push(line.origin());
        }
        text.push_str(&String::from_utf8_lossy(line.content()));
        true
    })?;
    Ok(text)
}

impl RepoSummary {
    /// Renders the summary as lines for the model.
    pub fn render(&self) -> String {
        let mut out = format!(
            "git branch: {}\n",
            self.branch.as_deref().unwrap_or("(detached HEAD)")
        );
        if self.recent_commits.is_empty() {
            out.push_str("recent commits: none yet\n");
        } else {
            out.push_str("recent commits:\n");
            for (id, summary) in &self.recent_commits {
                out.push_str(&format!("  {id} {summary}\n"));
            }
        }
        for (label, paths) in [
            ("staged", &self.staged),
            ("unstaged", &self.unstaged),
            ("untracked", &self.untracked),
        ] {
            out.push_str(&format!("{label}: {}\n", describe_paths(paths)));
        }
        out
    }
}

fn describe_paths(paths: &[String]) -> String {
    if paths.is_empty() {
        return "none".to_string();
    }
    let listed = paths[..paths.len().min(LISTED_PATHS)].join(", ");
    match paths.len().checked_sub(LISTED_PATHS) {
        Some(more) if more > 0 => format!("{} files: {listed}, and {more} more", paths.len()),
        _ => format!("{} files: {listed}", paths.len()),
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    pub(crate) fn commit_all(repo: &Repository, message: &str) {
        let mut index = repo.index().unwrap();
        index
            .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
            .unwrap();
        index.write().unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let signature = git2::Signature::now("t", "t@example.com").unwrap();
        let parents: Vec<_> = repo
            .head()
            .ok()
            .and_then(|h| h.peel_to_commit().ok())
            .into_iter()
            .collect();
        let parents: Vec<_> = parents.iter().collect();
        repo.commit(
            Some("HEAD"),
            &signature,
            &signature,
            message,
            &tree,
            &parents,
        )
        .unwrap();
    }

    #[test]
    fn outside_a_repository_there_is_no_summary() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(summarize(dir.path(), 5).unwrap(), None);
        assert_eq!(repo_root(dir.path()), None);
    }

    #[test]
    fn summary_names_branch_commits_and_each_kind_of_change() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\n").unwrap();
        std::fs::write(dir.path().join("b.txt"), "one\n").unwrap();
        commit_all(&repo, "first commit");
        commit_all(&repo, "second commit\n\nbody text");

        std::fs::write(dir.path().join("a.txt"), "changed\n").unwrap();
        std::fs::write(dir.path().join("b.txt"), "staged\n").unwrap();
        let mut index = repo.index().unwrap();
        index.add_path(Path::new("b.txt")).unwrap();
        index.write().unwrap();
        std::fs::write(dir.path().join("new.txt"), "new\n").unwrap();

        let summary = summarize(dir.path(), 5).unwrap().unwrap();
        let head = repo.head().unwrap().shorthand().unwrap().to_string();
        assert_eq!(summary.branch.as_deref(), Some(head.as_str()));
        let messages: Vec<_> = summary
            .recent_commits
            .iter()
            .map(|(_, m)| m.as_str())
            .collect();
        assert_eq!(messages, ["second commit", "first commit"]);
        assert_eq!(summary.staged, ["b.txt"]);
        assert_eq!(summary.unstaged, ["a.txt"]);
        assert_eq!(summary.untracked, ["new.txt"]);

        let rendered = summary.render();
        assert!(
            rendered.contains(&format!("git branch: {head}")),
            "{rendered}"
        );
        assert!(rendered.contains("staged: 1 files: b.txt"), "{rendered}");
        assert!(
            rendered.contains("untracked: 1 files: new.txt"),
            "{rendered}"
        );
    }

    #[test]
    fn diff_since_a_commit_covers_edits_and_new_files() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\n").unwrap();
        commit_all(&repo, "first");
        let start = head_commit(dir.path()).unwrap();
        std::fs::write(dir.path().join("a.txt"), "two\n").unwrap();
        std::fs::write(dir.path().join("new.txt"), "fresh\n").unwrap();
        let diff = diff_since(dir.path(), &start).unwrap();
        assert!(diff.contains("-one\n+two\n"), "{diff}");
        assert!(diff.contains("+fresh\n"), "{diff}");
        assert!(diff.contains("new.txt"), "{diff}");
    }

    #[test]
    fn fresh_repository_has_a_branch_and_no_commits() {
        let dir = tempfile::tempdir().unwrap();
        Repository::init(dir.path()).unwrap();
        let summary = summarize(dir.path(), 5).unwrap().unwrap();
        assert!(summary.branch.is_some());
        assert!(summary.render().contains("recent commits: none yet"));
    }

    #[test]
    fn long_path_lists_are_counted_not_dumped() {
        let paths: Vec<String> = (0..14).map(|i| format!("f{i}")).collect();
        let text = describe_paths(&paths);
        assert!(text.starts_with("14 files: f0, f1"), "{text}");
        assert!(text.ends_with("and 4 more"), "{text}");
    }
}
