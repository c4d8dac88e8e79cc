//! What the model has seen of each file in this session, and which of those files
//! changed on disk since.
//!
//! Owns: the set of files the model read (or wrote itself), keyed by the resolved
//! absolute path, with the file's modification time and length at that moment; and
//! which changes behind the model's back were already reported to it.
//! Does not own: path resolution (callers pass [`super::Workspace::resolve`]d paths),
//! the OS watcher ([`super::watch`], which only narrows which files to check), or the
//! wording of what a stale record means (the tools and the agent say it).
//! Invariant: a path is recorded only after the read or write it stands for succeeded,
//! and its stamp is the file's state right after that operation — so duet's own writes
//! never count as changes. Stamps are taken without following any link in the recorded
//! (canonical) path: a path that now leads through a link has no stamp, i.e. it changed.

use std::collections::HashMap;
use std::fs::Metadata;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use crate::beneath::Meta;

use super::watch::{Changes, DirWatcher};

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

    fn from_meta(meta: &Meta) -> Self {
        Self {
            modified: meta.modified(),
            len: meta.len(),
        }
    }

    /// The current stamp of the file at the canonical path `path`, if it can be read
    /// without following a link anywhere in it.
    pub fn of(path: &Path) -> Option<Self> {
        crate::beneath::metadata_exact(path)
            .ok()
            .flatten()
            .map(|meta| Self::from_meta(&meta))
    }
}

/// What the ledger knows of one file.
#[derive(Clone, Copy, Debug)]
struct Seen {
    /// `None`: the file was seen but could not be stat'ed right after.
    stamp: Option<FileStamp>,
    /// A watch covers the file's directory, so its changes arrive as events.
    watched: bool,
    /// The disk state last reported as a change (`Some(None)`: reported missing), so
    /// one change is reported once.
    reported: Option<Option<FileStamp>>,
}

impl Seen {
    /// Whether `now` (the file's current stamp) differs from what the model saw.
    fn differs_from(&self, now: Option<FileStamp>) -> bool {
        self.stamp.is_some() && self.stamp != now
    }
}

/// Files the model knows the content of. Shared by every tool call of a session.
#[derive(Debug, Default)]
pub struct ReadLedger {
    known: Mutex<HashMap<PathBuf, Seen>>,
    /// `None` in tests and where the OS watcher could not start: every known file is
    /// then checked when changes are asked for.
    watcher: Option<DirWatcher>,
}

impl ReadLedger {
    /// A ledger that watches the directories of the files it records, so changes to
    /// them can be reported without checking every file.
    pub fn watching() -> Self {
        let watcher = DirWatcher::new()
            .inspect_err(|error| {
                tracing::warn!(%error, "cannot watch files; read files are checked each step")
            })
            .ok();
        Self {
            known: Mutex::default(),
            watcher,
        }
    }

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
        self.entries().get(path).and_then(|seen| seen.stamp)
    }

    /// Whether `path` changed on disk since the model last read or wrote it. False for
    /// a file it never saw.
    pub fn changed_since_seen(&self, path: &Path) -> bool {
        let Some(seen) = self.entries().get(path).copied() else {
            return false;
        };
        seen.differs_from(FileStamp::of(path))
    }

    /// The known files that changed on disk since the model last saw them and whose
    /// current state was not reported yet, sorted; each is reported once per change.
    pub fn take_unreported_changes(&self) -> Vec<PathBuf> {
        let candidates = self.candidates();
        let now: Vec<(PathBuf, Option<FileStamp>)> = candidates
            .into_iter()
            .map(|path| {
                let stamp = FileStamp::of(&path);
                (path, stamp)
            })
            .collect();
        let mut entries = self.entries();
        let mut changed: Vec<PathBuf> = now
            .into_iter()
            .filter_map(|(path, stamp)| {
                let seen = entries.get_mut(&path)?;
                if !seen.differs_from(stamp) || seen.reported == Some(stamp) {
                    return None;
                }
                seen.reported = Some(stamp);
                Some(path)
            })
            .collect();
        changed.sort();
        changed
    }

    /// The model has been told about the current state of `path` another way (it was
    /// restored by an undo), so it is not reported as a change.
    pub fn mark_reported(&self, path: &Path) {
        if let Some(seen) = self.entries().get_mut(path) {
            seen.reported = Some(FileStamp::of(path));
        }
    }

    /// Known files that may have changed since the last look.
    fn candidates(&self) -> Vec<PathBuf> {
        let changes = match &self.watcher {
            Some(watcher) => watcher.take_changes(),
            None => Changes::Unknown,
        };
        let entries = self.entries();
        match changes {
            Changes::Unknown => entries.keys().cloned().collect(),
            Changes::Paths(paths) => entries
                .iter()
                .filter(|(path, seen)| !seen.watched || paths.contains(*path))
                .map(|(path, _)| path.clone())
                .collect(),
        }
    }

    fn record(&self, path: &Path) {
        // Watch before stamping, so a change right after the stamp is not missed.
        let watched = self
            .watcher
            .as_ref()
            .is_some_and(|watcher| watcher.watch_dir_of(path));
        let seen = Seen {
            stamp: FileStamp::of(path),
            watched,
            reported: None,
        };
        self.entries().insert(path.to_path_buf(), seen);
    }

    fn entries(&self) -> MutexGuard<'_, HashMap<PathBuf, Seen>> {
        // A panic elsewhere while holding the lock cannot leave the map half-updated
        // (every operation is a single insert, lookup or field update), so the data
        // stays valid.
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

    #[test]
    fn a_change_behind_the_models_back_is_reported_once_and_its_own_writes_never() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "hello").unwrap();
        let ledger = ReadLedger::default();
        ledger.record_read(&path);
        assert!(!ledger.changed_since_seen(&path));
        assert!(ledger.take_unreported_changes().is_empty());

        std::fs::write(&path, "changed by the user").unwrap();
        assert!(ledger.changed_since_seen(&path));
        assert_eq!(
            ledger.take_unreported_changes(),
            std::slice::from_ref(&path)
        );
        assert!(ledger.take_unreported_changes().is_empty(), "reported once");
        assert!(ledger.changed_since_seen(&path), "still stale until read");

        std::fs::write(&path, "the model's own write").unwrap();
        ledger.record_write(&path);
        assert!(!ledger.changed_since_seen(&path));
        assert!(ledger.take_unreported_changes().is_empty());

        std::fs::remove_file(&path).unwrap();
        assert_eq!(
            ledger.take_unreported_changes(),
            std::slice::from_ref(&path)
        );
    }

    #[test]
    fn a_change_marked_reported_is_not_reported_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "hello").unwrap();
        let ledger = ReadLedger::default();
        ledger.record_read(&path);
        std::fs::write(&path, "restored by undo").unwrap();
        ledger.mark_reported(&path);
        assert!(ledger.take_unreported_changes().is_empty());
        assert!(ledger.changed_since_seen(&path));
    }

    #[test]
    fn a_watching_ledger_reports_what_its_watcher_saw() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().canonicalize().unwrap().join("a.txt");
        std::fs::write(&path, "hello").unwrap();
        let ledger = ReadLedger::watching();
        ledger.record_read(&path);
        std::fs::write(&path, "changed by the user").unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut changed = Vec::new();
        while changed.is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
            changed = ledger.take_unreported_changes();
        }
        assert_eq!(changed, [path]);
    }
}
