//! Noticing changes to files the model has read, made behind its back.
//!
//! Owns: one OS file watcher (inotify, FSEvents, …) on the directories of the files the
//! model read or wrote — each directory non-recursively, so a huge tree next to them
//! (`target/`, `node_modules/`) costs nothing — and the set of paths that changed since
//! it was last taken.
//! Does not own: deciding whether a change matters (the [`super::ReadLedger`] compares
//! stamps, which also filters out duet's own writes).
//! Invariant: a change is never lost silently: when events may have been missed (queue
//! overflow, a watcher error, too many changes to keep), the next take says so and the
//! caller checks every file it knows.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher as _};

/// Directories watched at most; beyond this, files are checked on every take instead.
const MAX_WATCHED_DIRS: usize = 4096;
/// Changed paths kept between takes; more means "check everything".
const MAX_CHANGED_PATHS: usize = 10_000;

/// What changed since the last [`DirWatcher::take_changes`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Changes {
    /// These paths (and only these) may have changed.
    Paths(HashSet<PathBuf>),
    /// Events may have been missed: any watched file may have changed.
    Unknown,
}

#[derive(Debug, Default)]
struct Pending {
    paths: HashSet<PathBuf>,
    overflowed: bool,
}

impl Pending {
    fn note(&mut self, event: notify::Result<notify::Event>) {
        match event {
            Ok(event) if event.need_rescan() => self.overflow(),
            // Opening or reading a file changes nothing.
            Ok(event) if matches!(event.kind, EventKind::Access(_)) => {}
            Ok(event) if self.paths.len() + event.paths.len() > MAX_CHANGED_PATHS => {
                self.overflow();
            }
            Ok(event) => self.paths.extend(event.paths),
            Err(error) => {
                tracing::debug!(%error, "file watcher error; every read file will be checked");
                self.overflow();
            }
        }
    }

    fn overflow(&mut self) {
        self.overflowed = true;
        self.paths.clear();
    }
}

/// Watches the directories of individual files.
pub(crate) struct DirWatcher {
    watcher: Mutex<RecommendedWatcher>,
    watched: Mutex<HashSet<PathBuf>>,
    pending: Arc<Mutex<Pending>>,
}

impl std::fmt::Debug for DirWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirWatcher")
            .field("watched", &lock(&self.watched).len())
            .finish_non_exhaustive()
    }
}

impl DirWatcher {
    /// Starts the OS watcher; it watches nothing until [`Self::watch_dir_of`].
    pub(crate) fn new() -> notify::Result<Self> {
        let pending = Arc::new(Mutex::new(Pending::default()));
        let sink = Arc::clone(&pending);
        let watcher = notify::recommended_watcher(move |event| lock(&sink).note(event))?;
        Ok(Self {
            watcher: Mutex::new(watcher),
            watched: Mutex::new(HashSet::new()),
            pending,
        })
    }

    /// Watches the directory holding `file`. False when it cannot be watched (limit
    /// reached, directory gone): then the caller must check the file itself.
    pub(crate) fn watch_dir_of(&self, file: &Path) -> bool {
        let Some(dir) = file.parent() else {
            return false;
        };
        let mut watched = lock(&self.watched);
        if watched.contains(dir) {
            return true;
        }
        if watched.len() >= MAX_WATCHED_DIRS {
            return false;
        }
        match lock(&self.watcher).watch(dir, RecursiveMode::NonRecursive) {
            Ok(()) => {
                watched.insert(dir.to_path_buf());
                true
            }
            Err(error) => {
                tracing::debug!(%error, dir = %dir.display(), "cannot watch directory");
                false
            }
        }
    }

    /// The paths that changed since the last call.
    pub(crate) fn take_changes(&self) -> Changes {
        let Pending { paths, overflowed } = std::mem::take(&mut *lock(&self.pending));
        if overflowed {
            Changes::Unknown
        } else {
            Changes::Paths(paths)
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every update is a single insert or swap, so a panic elsewhere leaves valid data.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    /// Waits until the watcher reports `path` (events arrive on the watcher's thread).
    fn wait_for_change(watcher: &DirWatcher, path: &Path) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            match watcher.take_changes() {
                Changes::Unknown => return true,
                Changes::Paths(paths) if paths.contains(path) => return true,
                Changes::Paths(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        false
    }

    #[test]
    fn reports_a_change_to_a_file_in_a_watched_directory() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let file = root.join("a.txt");
        std::fs::write(&file, "one").unwrap();
        let watcher = DirWatcher::new().unwrap();
        assert!(watcher.watch_dir_of(&file));
        assert_eq!(watcher.take_changes(), Changes::Paths(HashSet::new()));
        std::fs::write(&file, "two").unwrap();
        assert!(wait_for_change(&watcher, &file));
    }

    #[test]
    fn too_many_changes_become_unknown_and_reading_is_no_change() {
        let mut pending = Pending::default();
        let event = |kind, path: &str| Ok(notify::Event::new(kind).add_path(PathBuf::from(path)));
        pending.note(event(
            EventKind::Access(notify::event::AccessKind::Any),
            "/w/read.txt",
        ));
        assert!(pending.paths.is_empty());
        for n in 0..=MAX_CHANGED_PATHS {
            pending.note(event(EventKind::Any, &format!("/w/{n}")));
        }
        assert!(pending.overflowed);
        assert!(pending.paths.is_empty());
    }
}
