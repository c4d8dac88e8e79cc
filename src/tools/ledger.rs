//! What the model has seen of each file in this session.
//!
//! Owns: the set of files the model read (or wrote itself), keyed by the resolved
//! absolute path, with the file's modification time and length at that moment.
//! Does not own: path resolution (callers pass [`super::Workspace::resolve`]d paths) or
//! deciding what a stale record means.
//! Invariant: a path is recorded only after the read or write it stands for succeeded,
//! and its stamp is the file's state right after that operation.

use std::collections::HashMap;
use std::fs::Metadata;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

/// A file's state when the model last saw it, to notice later changes behind its back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileStamp {
    /// `None` where the platform does not report modification times.
    pub modified: Option<SystemTime>,
    pub len: u64,
}

impl FileStamp {
    pub fn from_metadata(meta: &Metadata) -> Self {
        Self {
            modified: meta.modified().ok(),
            len: meta.len(),
        }
    }

    /// The current stamp of the file at `path`, if it can be read.
    pub fn of(path: &Path) -> Option<Self> {
        std::fs::metadata(path)
            .ok()
            .map(|meta| Self::from_metadata(&meta))
    }
}

/// Files the model knows the content of. Shared by every tool call of a session.
#[derive(Debug, Default)]
pub struct ReadLedger {
    /// `None` stamp: the file was seen but could not be stat'ed right after.
    known: Mutex<HashMap<PathBuf, Option<FileStamp>>>,
}

impl ReadLedger {
    /// The model has just read `path`.
    pub fn record_read(&self, path: &Path) {
        self.record(path);
    }

    /// The model has just written or edited `path`, so it knows the content.
    pub fn record_write(&self, path: &Path) {
        self.record(path);
    }

    /// Whether the model read or wrote `path` in this session.
    pub fn was_read(&self, path: &Path) -> bool {
        self.entries().contains_key(path)
    }

    /// The file's state when the model last read or wrote it; `None` if it never did
    /// or the file could not be stat'ed then.
    pub fn stamp(&self, path: &Path) -> Option<FileStamp> {
        self.entries().get(path).copied().flatten()
    }

    fn record(&self, path: &Path) {
        let stamp = FileStamp::of(path);
        self.entries().insert(path.to_path_buf(), stamp);
    }

    fn entries(&self) -> MutexGuard<'_, HashMap<PathBuf, Option<FileStamp>>> {
        // A panic elsewhere while holding the lock cannot leave the map half-updated
        // (every operation is a single insert or lookup), so the data stays valid.
        self.known.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_reads_and_writes_with_their_stamp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "hello").unwrap();
        let ledger = ReadLedger::default();
        assert!(!ledger.was_read(&path));
        assert_eq!(ledger.stamp(&path), None);

        ledger.record_read(&path);
        assert!(ledger.was_read(&path));
        assert_eq!(ledger.stamp(&path).map(|s| s.len), Some(5));

        std::fs::write(&path, "hello, world").unwrap();
        ledger.record_write(&path);
        assert_eq!(ledger.stamp(&path), FileStamp::of(&path));
        assert_eq!(ledger.stamp(&path).map(|s| s.len), Some(12));
    }

    #[test]
    fn other_paths_stay_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = ReadLedger::default();
        ledger.record_read(&dir.path().join("a.txt"));
        assert!(!ledger.was_read(&dir.path().join("b.txt")));
    }

    #[test]
    fn is_shareable_between_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<ReadLedger>();
    }
}
