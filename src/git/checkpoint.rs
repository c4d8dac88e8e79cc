//! Checkpoints: snapshots of the workspace stored as unreferenced git commits, and
//! undoing what changed between two of them.
//!
//! Owns: listing the files a snapshot covers ([`walk`]), hashing them into blobs with a
//! stat cache so unchanged files are not read again, building the tree and commit, and
//! restoring files from snapshots ([`undo`]).
//! Does not own: when snapshots are taken or which turns are undone (the agent decides).
//! Invariant: the user's repository gains objects only — its index, HEAD, refs, stash
//! and config are never written — and blobs hold a file's exact bytes (no line-ending
//! or clean filters), so a restore gives back exactly what was there. Files are read
//! and restored through a handle of the root with no link followed
//! ([`crate::beneath`]): a snapshot never reads, and an undo never writes or deletes,
//! anything a link leads to.
//!
//! In a git work tree the objects go to that repository's object database; elsewhere
//! to a private bare repository under duet's state directory. Either way the commits
//! are not referenced by any ref, so `git gc` may prune them after its grace period
//! (two weeks by default), long after a session needs them.

mod undo;
mod user_index;
mod walk;

pub use undo::UndoReport;

use std::collections::HashMap;
use std::fs::{self, Metadata};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use git2::{Index, IndexEntry, IndexTime, ObjectType, Oid, Repository, Signature};

use crate::beneath::{self, Meta, Root};

use user_index::UserIndex;

/// Files modified this recently before a snapshot started are hashed again next time:
/// a write within the file system's timestamp granularity could leave the stat unchanged.
const RACY_WINDOW: Duration = Duration::from_secs(2);
/// Files larger than this are streamed into the object database instead of being read
/// into memory whole.
const STREAM_ABOVE_BYTES: u64 = 32 << 20;

const MODE_FILE: u32 = 0o100_644;
const MODE_EXECUTABLE: u32 = 0o100_755;
const MODE_SYMLINK: u32 = 0o120_000;

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("git: {0}")]
    Git(#[from] git2::Error),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("cannot list the workspace: {0}")]
    Walk(#[from] ignore::Error),
    /// Undoing would overwrite changes made after the checkpoint; nothing was changed.
    #[error("changed since the checkpoint: {}", list_paths(.paths))]
    ChangedSince { paths: Vec<PathBuf> },
    /// These paths now lead through a link (path, link): undoing would write or delete
    /// whatever the link points at. Nothing was changed.
    #[error(
        "these paths lead through a symbolic link now: {}",
        list_paths(&.paths.iter().map(|(path, _)| path.clone()).collect::<Vec<_>>())
    )]
    ThroughLink { paths: Vec<(PathBuf, PathBuf)> },
    #[error("{0}")]
    Files(#[from] beneath::Error),
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> CheckpointError + '_ {
    move |source| CheckpointError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn list_paths(paths: &[PathBuf]) -> String {
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    names.join(", ")
}

/// One snapshot: an unreferenced commit whose tree holds the workspace's files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    commit: Oid,
    tree: Oid,
}

impl Checkpoint {
    /// The commit id, as `git show` takes it.
    pub fn commit_id(&self) -> String {
        self.commit.to_string()
    }

    /// Whether both snapshots hold exactly the same files.
    pub fn same_files_as(&self, other: &Checkpoint) -> bool {
        self.tree == other.tree
    }
}

/// What a snapshot records for one path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    id: Oid,
    kind: EntryKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EntryKind {
    File,
    Executable,
    Symlink,
}

impl EntryKind {
    fn git_mode(self) -> u32 {
        match self {
            EntryKind::File => MODE_FILE,
            EntryKind::Executable => MODE_EXECUTABLE,
            EntryKind::Symlink => MODE_SYMLINK,
        }
    }

    fn of_meta(meta: &Meta) -> Option<Self> {
        match meta.kind() {
            beneath::Kind::Symlink => Some(EntryKind::Symlink),
            beneath::Kind::File if meta.mode() & 0o100 != 0 => Some(EntryKind::Executable),
            beneath::Kind::File => Some(EntryKind::File),
            beneath::Kind::Dir | beneath::Kind::Other => None,
        }
    }

    fn of(meta: &Metadata) -> Option<Self> {
        let kind = meta.file_type();
        if kind.is_symlink() {
            Some(EntryKind::Symlink)
        } else if kind.is_file() {
            Some(if is_executable(meta) {
                EntryKind::Executable
            } else {
                EntryKind::File
            })
        } else {
            None
        }
    }
}

#[cfg(unix)]
fn is_executable(meta: &Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    meta.permissions().mode() & 0o100 != 0
}

#[cfg(not(unix))]
fn is_executable(_meta: &Metadata) -> bool {
    false
}

/// The stat fields that tell whether a file may have changed since it was hashed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct StatKey {
    len: u64,
    modified: Option<SystemTime>,
    /// Inode change time (seconds, nanoseconds) and inode number; zero where unknown.
    changed: (i64, i64),
    inode: u64,
    mode: u32,
}

impl StatKey {
    #[cfg(unix)]
    fn of(meta: &Metadata) -> Self {
        use std::os::unix::fs::MetadataExt as _;
        Self {
            len: meta.len(),
            modified: meta.modified().ok(),
            changed: (meta.ctime(), meta.ctime_nsec()),
            inode: meta.ino(),
            mode: meta.mode(),
        }
    }

    #[cfg(not(unix))]
    fn of(meta: &Metadata) -> Self {
        Self {
            len: meta.len(),
            modified: meta.modified().ok(),
            changed: (0, 0),
            inode: 0,
            mode: 0,
        }
    }

    /// Whether the stat can vouch for the content later: not modified so recently
    /// that a second write could hide behind the same timestamp.
    fn is_settled(&self, snapshot_started: SystemTime) -> bool {
        self.modified
            .is_some_and(|modified| modified + RACY_WINDOW < snapshot_started)
    }
}

/// Blob ids of files hashed by earlier snapshots, keyed by path relative to the root.
type HashCache = HashMap<PathBuf, (StatKey, Oid)>;
/// Files under the root (relative paths) with their `lstat` metadata.
type Files = Vec<(PathBuf, Metadata)>;
/// Blob ids known without reading the files, keyed by path relative to the root.
type BlobIds = HashMap<PathBuf, Oid>;

struct Inner {
    repo: Repository,
    hashes: HashCache,
}

/// Takes and restores snapshots of one workspace.
pub struct CheckpointStore {
    inner: Mutex<Inner>,
    /// The directory snapshots cover; every path in a snapshot is relative to it.
    root: PathBuf,
    /// The same directory, open: every file is read and restored through it.
    handle: Root,
    /// The user's repository work tree contains the root.
    in_git: bool,
}

impl CheckpointStore {
    /// Opens the store for `workspace`: the git repository around it, or else a private
    /// bare repository at `private_repo` (created when missing).
    pub fn open(workspace: &Path, private_repo: &Path) -> Result<Self, CheckpointError> {
        let root = workspace.canonicalize().map_err(io_error(workspace))?;
        let handle = Root::open(&root).map_err(io_error(&root))?;
        let (repo, in_git) = match super::discover(&root) {
            Ok(Some(repo)) if repo.workdir().is_some() => (repo, true),
            _ => (open_private(private_repo)?, false),
        };
        Ok(Self {
            inner: Mutex::new(Inner {
                repo,
                hashes: HashCache::new(),
            }),
            root,
            handle,
            in_git,
        })
    }

    /// Snapshots every file under the root that is not ignored (tracked files always),
    /// as a commit with `label` in its message.
    pub fn snapshot(&self, label: &str) -> Result<Checkpoint, CheckpointError> {
        let started = SystemTime::now();
        let mut inner = self.lock();
        let Inner { repo, hashes } = &mut *inner;
        let (files, vouched) = self.covered_files(repo, hashes.is_empty())?;
        let mut index = Index::new()?;
        let mut fresh = HashCache::with_capacity(files.len());
        for (rel, meta) in files {
            let Some(kind) = EntryKind::of(&meta) else {
                continue;
            };
            let stat = StatKey::of(&meta);
            let known = match hashes.get(&rel) {
                Some((cached, id)) if *cached == stat => Some(*id),
                _ => vouched.get(&rel).copied(),
            };
            let id = match known {
                Some(id) => id,
                None => match write_blob(repo, &self.handle, &rel, kind, stat.len) {
                    Ok(id) => id,
                    // Deleted between listing and reading, or its directory swapped for a
                    // link: it is simply not in this snapshot.
                    Err(CheckpointError::Files(
                        beneath::Error::NotFound { .. } | beneath::Error::Link { .. },
                    )) => continue,
                    Err(error) => return Err(error),
                },
            };
            if stat.is_settled(started) {
                fresh.insert(rel.clone(), (stat, id));
            }
            index.add(&index_entry(&rel, id, kind)?)?;
        }
        *hashes = fresh;
        commit_index(repo, &mut index, label)
    }

    /// The files a snapshot covers, with their metadata, and — for the first snapshot
    /// of a session — the blob ids the user's index vouches for.
    fn covered_files(
        &self,
        repo: &Repository,
        first_snapshot: bool,
    ) -> Result<(Files, BlobIds), CheckpointError> {
        let mut files = walk::list_files(&self.root, self.in_git)?;
        let user_index = if self.in_git {
            UserIndex::open(repo, &self.root, &files)
        } else {
            None
        };
        let Some(user_index) = user_index else {
            return Ok((files, BlobIds::new()));
        };
        files.extend(user_index.unlisted_tracked(&self.root, &files));
        let vouched = if first_snapshot {
            user_index.vouched_blobs(&files)
        } else {
            BlobIds::new()
        };
        Ok((files, vouched))
    }

    /// The snapshot with this commit id, recorded by an earlier process of the session.
    /// Fails when the id is malformed or the commit is gone (pruned by `git gc`).
    pub fn find(&self, commit_id: &str) -> Result<Checkpoint, CheckpointError> {
        let inner = self.lock();
        let commit = inner.repo.find_commit(Oid::from_str(commit_id)?)?;
        Ok(Checkpoint {
            commit: commit.id(),
            tree: commit.tree_id(),
        })
    }

    /// Restores every path that changed within `turns` (each a before/after pair,
    /// newest first) to its state before the oldest of them. Fails without changing
    /// anything when a path's current content is not what the turn left (the user
    /// changed it since) or when it now leads through a link. Reports the paths
    /// restored and those left as they are (git metadata; a link that appeared while
    /// the undo ran), relative to the root.
    pub fn undo(&self, turns: &[(Checkpoint, Checkpoint)]) -> Result<UndoReport, CheckpointError> {
        let inner = self.lock();
        let plan = undo::plan(&inner.repo, &self.handle, turns)?;
        undo::apply(&inner.repo, &self.handle, &plan)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Nothing leaves `Inner` half-updated on a panic: the cache is swapped in whole.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Writes the index's tree and an unreferenced commit of it.
fn commit_index(
    repo: &Repository,
    index: &mut Index,
    label: &str,
) -> Result<Checkpoint, CheckpointError> {
    let tree = index.write_tree_to(repo)?;
    let signature = Signature::now("duet", "duet@localhost")?;
    let message = format!("duet checkpoint: {label}");
    // No ref is updated: the commit is reachable only by its id.
    let commit = repo.commit(
        None,
        &signature,
        &signature,
        &message,
        &repo.find_tree(tree)?,
        &[],
    )?;
    Ok(Checkpoint { commit, tree })
}

fn open_private(path: &Path) -> Result<Repository, CheckpointError> {
    match Repository::open_bare(path) {
        Ok(repo) => Ok(repo),
        Err(_) => {
            fs::create_dir_all(path).map_err(io_error(path))?;
            Ok(Repository::init_bare(path)?)
        }
    }
}

/// Writes the file (or the symlink's target) at `rel` as a blob, byte for byte, read
/// through the root handle.
fn write_blob(
    repo: &Repository,
    root: &Root,
    rel: &Path,
    kind: EntryKind,
    len: u64,
) -> Result<Oid, CheckpointError> {
    if kind == EntryKind::Symlink {
        let target = root.read_link(rel)?;
        return Ok(repo.blob(&path_to_bytes(&target))?);
    }
    if len <= STREAM_ABOVE_BYTES {
        let bytes = root.read(rel)?;
        return Ok(repo.blob(&bytes)?);
    }
    let odb = repo.odb()?;
    let (mut file, _) = root.open_file(rel)?;
    let size = usize::try_from(len).map_err(|_| CheckpointError::Io {
        path: rel.to_path_buf(),
        source: io::Error::other("too large to snapshot on this platform"),
    })?;
    let mut writer = odb.writer(size, ObjectType::Blob)?;
    io::copy(&mut file, &mut writer).map_err(io_error(rel))?;
    Ok(writer.finalize()?)
}

fn index_entry(rel: &Path, id: Oid, kind: EntryKind) -> Result<IndexEntry, CheckpointError> {
    let path = path_to_bytes(rel);
    // The low 12 bits of the flags hold the path length (capped), as the index format says.
    let flags = u16::try_from(path.len()).unwrap_or(0xfff).min(0xfff);
    Ok(IndexEntry {
        ctime: IndexTime::new(0, 0),
        mtime: IndexTime::new(0, 0),
        dev: 0,
        ino: 0,
        mode: kind.git_mode(),
        uid: 0,
        gid: 0,
        file_size: 0,
        id,
        flags,
        flags_extended: 0,
        path,
    })
}

/// A relative path in git's form: bytes, `/`-separated.
#[cfg(unix)]
fn path_to_bytes(path: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt as _;
    path.as_os_str().as_bytes().to_vec()
}

#[cfg(not(unix))]
fn path_to_bytes(path: &Path) -> Vec<u8> {
    path.to_string_lossy().replace('\\', "/").into_bytes()
}

#[cfg(unix)]
fn bytes_to_path(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt as _;
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}

#[cfg(not(unix))]
fn bytes_to_path(bytes: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
}

#[cfg(test)]
mod tests;
