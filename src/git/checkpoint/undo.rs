//! Undoing turns: which paths go back to which state, the check that nobody changed
//! them since, and writing them back.
//!
//! Turns are undone newest first on a simulated state of the disk, so undoing several
//! at once checks each turn against what the turn after it left, exactly as undoing
//! them one by one would. Only when every check passes does anything touch the disk:
//! new contents are first staged in a temporary directory under the root, then files
//! are deleted and the staged ones renamed into place.
//!
//! Every path is used through the root handle ([`crate::beneath`]) with no link
//! followed: a path that now leads through a link (a directory swapped for a link
//! after the turn) is never read, written or deleted. Found while planning, it refuses
//! the whole undo; appearing while applying (a race), that path alone is left as it is
//! and reported, like a path that is git metadata, which is never restored from a
//! snapshot. A link standing where a file goes is replaced, not written through.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{self, Read as _, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Component, Path, PathBuf};

use git2::{FileMode, ObjectType, Oid, Repository, Tree};

use super::{
    Checkpoint, CheckpointError, Entry, EntryKind, STREAM_ABOVE_BYTES, bytes_to_path, path_to_bytes,
};
use crate::beneath::{self, Root, Staging};

/// Prefix of the staging directory an undo writes new contents to before moving them.
const STAGING_PREFIX: &str = ".duet-undo-";

/// What an undo will do.
pub(super) struct Plan {
    /// The state each path returns to; `None` deletes it. Only paths whose state on
    /// disk differs from the target are here.
    targets: BTreeMap<PathBuf, Option<Entry>>,
    /// Paths the target state has but that are git metadata: never restored.
    withheld: Vec<PathBuf>,
    /// The tree of the oldest before-snapshot (none when no turn is undone): a
    /// directory it has is never removed, even when emptied.
    oldest_before: Option<Oid>,
}

/// What an undo did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct UndoReport {
    /// The paths back as they were, relative to the root, sorted.
    pub restored: Vec<PathBuf>,
    /// The paths left as they are, with why, sorted.
    pub not_restored: Vec<(PathBuf, String)>,
}

/// Why a path is never restored from a snapshot.
const GIT_METADATA: &str = "it is git metadata (a hook, config or ref), which undo never \
                            restores from a snapshot";

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
    root: &Root,
    turns: &[(Checkpoint, Checkpoint)],
) -> Result<Plan, CheckpointError> {
    // The simulated disk: a path's state once the newer turns are undone.
    let mut state: HashMap<PathBuf, Option<Entry>> = HashMap::new();
    let mut on_disk: HashMap<PathBuf, Option<Entry>> = HashMap::new();
    let mut changed_by_user = BTreeSet::new();
    let mut through_links = BTreeMap::new();
    for (before, after) in turns {
        for change in changes(repo, before.tree, after.tree)? {
            let current = match state.get(&change.path) {
                Some(current) => *current,
                None => {
                    let current = match disk_entry(repo, root, &change.path)? {
                        OnDisk::Entry(entry) => entry,
                        OnDisk::ThroughLink(link) => {
                            through_links.insert(change.path.clone(), link);
                            None
                        }
                    };
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
    // A link the undone turns made themselves (it is one of their changes, still as
    // they left it) is theirs to take away: what was below it is simply gone. Any other
    // link is someone's change since, and what it leads to is not the workspace's.
    let made_by_the_turns = |link: &PathBuf| {
        on_disk
            .get(link)
            .is_some_and(|entry| entry.is_some_and(|entry| entry.kind == EntryKind::Symlink))
            && !changed_by_user.contains(link)
    };
    through_links.retain(|_, link| !made_by_the_turns(link));
    if !through_links.is_empty() {
        return Err(CheckpointError::ThroughLink {
            paths: through_links.into_iter().collect(),
        });
    }
    if !changed_by_user.is_empty() {
        return Err(CheckpointError::ChangedSince {
            paths: changed_by_user.into_iter().collect(),
        });
    }
    let oldest_before = turns.last().map(|(before, _)| before.tree);
    let kept_tree = oldest_before.map(|tree| repo.find_tree(tree)).transpose()?;
    let mut withheld = Vec::new();
    let targets = state
        .into_iter()
        .filter(|(path, target)| on_disk.get(path) != Some(target))
        .filter(|(path, target)| {
            let refused = target.is_some() && is_git_metadata(path, kept_tree.as_ref());
            if refused {
                withheld.push(path.clone());
            }
            !refused
        })
        .collect();
    withheld.sort();
    Ok(Plan {
        targets,
        withheld,
        oldest_before,
    })
}

/// Whether `path` is inside git's own files: under a `.git`, or in a directory that
/// the snapshot shows laid out as a git directory (`HEAD` beside `objects` or `refs`,
/// as a bare repository planted in the tree would be).
fn is_git_metadata(path: &Path, tree: Option<&Tree<'_>>) -> bool {
    if path
        .components()
        .any(|part| part == Component::Normal(".git".as_ref()))
    {
        return true;
    }
    let Some(tree) = tree else {
        return false;
    };
    path.ancestors().skip(1).any(|dir| {
        let has = |name: &str| tree.get_path(&dir.join(name)).is_ok();
        has("HEAD") && (has("objects") || has("refs"))
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

/// What is at a path, seen through the root handle.
enum OnDisk {
    /// In snapshot terms: a directory or a special file is no file at all.
    Entry(Option<Entry>),
    /// The path leads through this link (relative to the root): what is behind it is
    /// not the workspace's, and is not looked at.
    ThroughLink(PathBuf),
}

/// What is on disk at `rel`, in snapshot terms.
fn disk_entry(repo: &Repository, root: &Root, rel: &Path) -> Result<OnDisk, CheckpointError> {
    let through = |error: beneath::Error| match error {
        beneath::Error::Link { link, .. } => Ok(OnDisk::ThroughLink(link)),
        beneath::Error::NotFound { .. } => Ok(OnDisk::Entry(None)),
        other => Err(CheckpointError::from(other)),
    };
    let meta = match root.metadata(rel) {
        Ok(Some(meta)) => meta,
        Ok(None) => return Ok(OnDisk::Entry(None)),
        Err(error) => return through(error),
    };
    let Some(kind) = EntryKind::of_meta(&meta) else {
        return Ok(OnDisk::Entry(None));
    };
    let id = match kind {
        EntryKind::Symlink => match root.read_link(rel) {
            Ok(target) => Oid::hash_object(ObjectType::Blob, &path_to_bytes(&target))?,
            Err(error) => return through(error),
        },
        EntryKind::File | EntryKind::Executable => match hash_file(repo, root, rel) {
            Ok(id) => id,
            Err(HashError::Files(error)) => return through(error),
            Err(HashError::Other(error)) => return Err(error),
        },
    };
    Ok(OnDisk::Entry(Some(Entry { id, kind })))
}

enum HashError {
    Files(beneath::Error),
    Other(CheckpointError),
}

/// The blob id of the regular file at `rel`, read through the root handle. Large
/// files are streamed into the object database (their blob already is there: it is
/// what the turn left) instead of being read into memory.
fn hash_file(repo: &Repository, root: &Root, rel: &Path) -> Result<Oid, HashError> {
    let (mut file, meta) = root.open_file(rel).map_err(HashError::Files)?;
    let io_error = |source: io::Error| {
        HashError::Other(CheckpointError::Io {
            path: rel.to_path_buf(),
            source,
        })
    };
    if meta.len() <= STREAM_ABOVE_BYTES {
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io_error)?;
        return Oid::hash_object(ObjectType::Blob, &bytes)
            .map_err(|error| HashError::Other(error.into()));
    }
    let git = |error: git2::Error| HashError::Other(error.into());
    let odb = repo.odb().map_err(git)?;
    let size = usize::try_from(meta.len())
        .map_err(|_| io_error(io::Error::other("too large on this platform")))?;
    let mut writer = odb.writer(size, ObjectType::Blob).map_err(git)?;
    io::copy(&mut file, &mut writer).map_err(io_error)?;
    writer.finalize().map_err(git)
}

/// Carries out a plan: stage every new content, then delete, then move the staged
/// files into place. A failure while staging leaves the disk as it was; a path that
/// cannot be deleted or moved into place (it leads through a link that appeared
/// meanwhile, a directory full of files stands there) is left as it is and reported.
pub(super) fn apply(
    repo: &Repository,
    root: &Root,
    plan: &Plan,
) -> Result<UndoReport, CheckpointError> {
    let mut report = UndoReport {
        not_restored: plan
            .withheld
            .iter()
            .map(|path| (path.clone(), GIT_METADATA.to_string()))
            .collect(),
        ..UndoReport::default()
    };
    let Some(oldest_before) = plan.oldest_before.filter(|_| !plan.targets.is_empty()) else {
        return Ok(report);
    };
    let staging = root.staging_dir(STAGING_PREFIX)?;
    let mut staged = Vec::new();
    for (number, (rel, target)) in plan.targets.iter().enumerate() {
        if let Some(entry) = target {
            let name = number.to_string();
            stage(repo, root, &staging, &name, entry, rel)?;
            staged.push((rel, name));
        }
    }
    let kept_dirs = repo.find_tree(oldest_before)?;
    for (rel, target) in &plan.targets {
        if target.is_none() {
            match root.remove_file(rel) {
                Ok(_) => {
                    prune_empty_dirs(root, rel, &kept_dirs);
                    report.restored.push(rel.clone());
                }
                Err(error) => report.not_restored.push((rel.clone(), why_not(&error))),
            }
        }
    }
    for (rel, name) in staged {
        match make_room(root, rel).and_then(|()| staging.move_to(&name, rel)) {
            Ok(()) => report.restored.push(rel.clone()),
            Err(error) => report.not_restored.push((rel.clone(), why_not(&error))),
        }
    }
    report.restored.sort();
    report.not_restored.sort();
    Ok(report)
}

/// Why a path was left as it is, for the user.
fn why_not(error: &beneath::Error) -> String {
    match error {
        beneath::Error::Link { link, .. } => format!(
            "it now leads through the symbolic link `{}`, and undo never writes through links",
            link.display()
        ),
        beneath::Error::IsDir { .. } => "a directory stands there".to_string(),
        beneath::Error::Io { source, .. } => source.to_string(),
        other => other.to_string(),
    }
}

/// Writes `entry` to `name` in the staging directory, with the permissions the file
/// at `dest` will need.
fn stage(
    repo: &Repository,
    root: &Root,
    staging: &Staging<'_>,
    name: &str,
    entry: &Entry,
    dest: &Path,
) -> Result<(), CheckpointError> {
    let blob = repo.find_blob(entry.id)?;
    if entry.kind == EntryKind::Symlink {
        return Ok(staging.symlink(name, &bytes_to_path(blob.content()))?);
    }
    let mut file = staging.create(name)?;
    let io_error = |source| CheckpointError::Io {
        path: dest.to_path_buf(),
        source,
    };
    file.write_all(blob.content()).map_err(io_error)?;
    // The mode the file replaces (a link or a directory has none worth keeping), or
    // the one a new file got.
    let base = match root.metadata(dest) {
        Ok(Some(meta)) if meta.is_file() => meta.mode(),
        _ => file.metadata().map_err(io_error)?.permissions().mode(),
    } & 0o7777;
    let mode = if entry.kind == EntryKind::Executable {
        // Executable by whoever may read it, as git checks files out.
        base | ((base & 0o444) >> 2)
    } else {
        base & !0o111
    };
    file.set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(io_error)
}

/// Removes the directories above `rel` that are now empty and that the oldest
/// before-snapshot did not have (the undone turns created them).
fn prune_empty_dirs(root: &Root, rel: &Path, kept: &Tree<'_>) {
    for dir in rel.ancestors().skip(1) {
        if dir.as_os_str().is_empty() || kept.get_path(dir).is_ok() {
            return;
        }
        // Fails on a directory that still holds something, which is where to stop.
        if !matches!(root.remove_dir(dir), Ok(true)) {
            return;
        }
    }
}

/// Clears the way for a file at `dest`: an empty directory standing where the file
/// goes is removed (the parents are created by the move).
fn make_room(root: &Root, dest: &Path) -> Result<(), beneath::Error> {
    if root.metadata(dest)?.is_some_and(|meta| meta.is_dir()) {
        root.remove_dir(dest)?;
    }
    Ok(())
}
