//! Undoing turns: which paths go back to which state, the check that nobody changed
//! them since, and writing them back so that every path is restored or none.
//!
//! Turns are undone newest first on a simulated state of the disk, so undoing several
//! at once checks each turn against what the turn after it left, exactly as undoing
//! them one by one would. Only when every check passes does anything touch the disk:
//! new contents are first staged in a temporary directory under the root, then files
//! are deleted and the staged ones renamed into place.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use git2::{FileMode, ObjectType, Oid, Repository, Tree};

use super::{
    Checkpoint, CheckpointError, Entry, EntryKind, bytes_to_path, io_error, path_to_bytes,
};

/// Prefix of the staging directory an undo writes new contents to before moving them.
const STAGING_PREFIX: &str = ".duet-undo-";

/// What an undo will do.
pub(super) struct Plan {
    /// The state each path returns to; `None` deletes it. Only paths whose state on
    /// disk differs from the target are here.
    targets: BTreeMap<PathBuf, Option<Entry>>,
    /// The tree of the oldest before-snapshot (none when no turn is undone): a
    /// directory it has is never removed, even when emptied.
    oldest_before: Option<Oid>,
}

impl Plan {
    pub(super) fn paths(&self) -> Vec<PathBuf> {
        self.targets.keys().cloned().collect()
    }
}

/// A path that differs between a turn's before- and after-snapshot.
struct Change {
    path: PathBuf,
    before: Option<Entry>,
    after: Option<Entry>,
}

/// Plans undoing `turns` (before/after pairs, newest first) and checks that every
/// path they changed is still as its turn left it.
pub(super) fn plan(
    repo: &Repository,
    root: &Path,
    turns: &[(Checkpoint, Checkpoint)],
) -> Result<Plan, CheckpointError> {
    // The simulated disk: a path's state once the newer turns are undone.
    let mut state: HashMap<PathBuf, Option<Entry>> = HashMap::new();
    let mut on_disk: HashMap<PathBuf, Option<Entry>> = HashMap::new();
    let mut changed_by_user = BTreeSet::new();
    for (before, after) in turns {
        for change in changes(repo, before.tree, after.tree)? {
            let current = match state.get(&change.path) {
                Some(current) => *current,
                None => {
                    let current = disk_entry(&root.join(&change.path))?;
                    on_disk.insert(change.path.clone(), current);
                    current
                }
            };
            if current != change.after {
                changed_by_user.insert(change.path.clone());
            }
            state.insert(change.path, change.before);
        }
    }
    if !changed_by_user.is_empty() {
        return Err(CheckpointError::ChangedSince {
            paths: changed_by_user.into_iter().collect(),
        });
    }
    let targets = state
        .into_iter()
        .filter(|(path, target)| on_disk.get(path) != Some(target))
        .collect();
    Ok(Plan {
        targets,
        oldest_before: turns.last().map(|(before, _)| before.tree),
    })
}

/// The files that differ between two snapshot trees. A path whose type changed comes
/// from git as a deletion and an addition; both sides are merged into one change.
fn changes(repo: &Repository, before: Oid, after: Oid) -> Result<Vec<Change>, CheckpointError> {
    let before = repo.find_tree(before)?;
    let after = repo.find_tree(after)?;
    let diff = repo.diff_tree_to_tree(Some(&before), Some(&after), None)?;
    let mut sides: BTreeMap<PathBuf, (Option<Entry>, Option<Entry>)> = BTreeMap::new();
    for delta in diff.deltas() {
        let (old, new) = (delta.old_file(), delta.new_file());
        let Some(path) = new.path_bytes().or(old.path_bytes()) else {
            continue;
        };
        let slot = sides.entry(bytes_to_path(path)).or_default();
        if old.exists() {
            slot.0 = entry_of(old.id(), old.mode());
        }
        if new.exists() {
            slot.1 = entry_of(new.id(), new.mode());
        }
    }
    Ok(sides
        .into_iter()
        .filter(|(_, (before, after))| before != after)
        .map(|(path, (before, after))| Change {
            path,
            before,
            after,
        })
        .collect())
}

fn entry_of(id: Oid, mode: FileMode) -> Option<Entry> {
    let kind = match mode {
        FileMode::Blob | FileMode::BlobGroupWritable => EntryKind::File,
        FileMode::BlobExecutable => EntryKind::Executable,
        FileMode::Link => EntryKind::Symlink,
        FileMode::Tree | FileMode::Commit | FileMode::Unreadable => return None,
    };
    Some(Entry { id, kind })
}

/// What is on disk at `abs`, in snapshot terms. A directory or a special file is no
/// file at all.
fn disk_entry(abs: &Path) -> Result<Option<Entry>, CheckpointError> {
    let meta = match fs::symlink_metadata(abs) {
        Ok(meta) => meta,
        Err(error)
            if matches!(
                error.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(None);
        }
        Err(error) => return Err(io_error(abs)(error)),
    };
    let Some(kind) = EntryKind::of(&meta) else {
        return Ok(None);
    };
    let id = match kind {
        EntryKind::Symlink => {
            let target = fs::read_link(abs).map_err(io_error(abs))?;
            Oid::hash_object(ObjectType::Blob, &path_to_bytes(&target))?
        }
        EntryKind::File | EntryKind::Executable => Oid::hash_file(ObjectType::Blob, abs)?,
    };
    Ok(Some(Entry { id, kind }))
}

/// Carries out a plan: stage every new content, then delete, then move the staged
/// files into place. A failure while staging leaves the disk as it was.
pub(super) fn apply(repo: &Repository, root: &Path, plan: &Plan) -> Result<(), CheckpointError> {
    let Some(oldest_before) = plan.oldest_before.filter(|_| !plan.targets.is_empty()) else {
        return Ok(());
    };
    let staging = tempfile::Builder::new()
        .prefix(STAGING_PREFIX)
        .tempdir_in(root)
        .map_err(io_error(root))?;
    let mut staged = Vec::new();
    for (number, (rel, target)) in plan.targets.iter().enumerate() {
        if let Some(entry) = target {
            let temp = staging.path().join(number.to_string());
            stage(repo, entry, &temp, &root.join(rel))?;
            staged.push((rel, temp));
        }
    }
    let kept_dirs = repo.find_tree(oldest_before)?;
    for (rel, target) in &plan.targets {
        if target.is_none() {
            remove_file(&root.join(rel))?;
            prune_empty_dirs(root, rel, &kept_dirs);
        }
    }
    for (rel, temp) in staged {
        let dest = root.join(rel);
        make_room(&dest)?;
        fs::rename(&temp, &dest).map_err(io_error(&dest))?;
    }
    Ok(())
}

/// Writes `entry` to `temp`, with the permissions `dest` will need.
fn stage(
    repo: &Repository,
    entry: &Entry,
    temp: &Path,
    dest: &Path,
) -> Result<(), CheckpointError> {
    let blob = repo.find_blob(entry.id)?;
    if entry.kind == EntryKind::Symlink {
        return make_symlink(&bytes_to_path(blob.content()), temp);
    }
    fs::write(temp, blob.content()).map_err(io_error(temp))?;
    set_executable(temp, dest, entry.kind == EntryKind::Executable)
}

#[cfg(unix)]
fn make_symlink(target: &Path, link: &Path) -> Result<(), CheckpointError> {
    std::os::unix::fs::symlink(target, link).map_err(io_error(link))
}

#[cfg(not(unix))]
fn make_symlink(_target: &Path, link: &Path) -> Result<(), CheckpointError> {
    Err(io_error(link)(io::Error::other(
        "restoring symbolic links is only supported on Unix",
    )))
}

/// Gives `temp` the permissions of the file it replaces at `dest` (or of a new file),
/// with the executable bits as the snapshot recorded them.
#[cfg(unix)]
fn set_executable(temp: &Path, dest: &Path, executable: bool) -> Result<(), CheckpointError> {
    use std::os::unix::fs::PermissionsExt as _;
    let base = match fs::symlink_metadata(dest) {
        Ok(meta) if meta.is_file() => meta.permissions().mode(),
        _ => fs::metadata(temp)
            .map_err(io_error(temp))?
            .permissions()
            .mode(),
    } & 0o7777;
    let mode = if executable {
        // Executable by whoever may read it, as git checks files out.
        base | ((base & 0o444) >> 2)
    } else {
        base & !0o111
    };
    fs::set_permissions(temp, fs::Permissions::from_mode(mode)).map_err(io_error(temp))
}

#[cfg(not(unix))]
fn set_executable(_temp: &Path, _dest: &Path, _executable: bool) -> Result<(), CheckpointError> {
    Ok(())
}

fn remove_file(path: &Path) -> Result<(), CheckpointError> {
    match fs::remove_file(path) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => Err(io_error(path)(error)),
        _ => Ok(()),
    }
}

/// Removes the directories above `rel` that are now empty and that the oldest
/// before-snapshot did not have (the undone turns created them).
fn prune_empty_dirs(root: &Path, rel: &Path, kept: &Tree<'_>) {
    for dir in rel.ancestors().skip(1) {
        if dir.as_os_str().is_empty() || kept.get_path(dir).is_ok() {
            return;
        }
        // Fails on a directory that still holds something, which is where to stop.
        if fs::remove_dir(root.join(dir)).is_err() {
            return;
        }
    }
}

/// Clears the way for a file at `dest`: its parent directories exist, and an empty
/// directory standing where the file goes is removed.
fn make_room(dest: &Path) -> Result<(), CheckpointError> {
    if fs::symlink_metadata(dest).is_ok_and(|meta| meta.is_dir()) {
        fs::remove_dir(dest).map_err(io_error(dest))?;
    }
    if let Some(parent) = dest.parent() {
        fs::create_dir_all(parent).map_err(io_error(parent))?;
    }
    Ok(())
}
