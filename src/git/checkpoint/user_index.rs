//! The user's git index, read and never written, for two things: tracked files that an
//! ignore rule hides from the walk, and the blob ids it already vouches for, so the
//! first snapshot of a session does not read every tracked file again.
//!
//! The index records a file's stat next to its blob id. Where the stat still matches
//! and nothing can make git's blob differ from the file's bytes (line-ending
//! conversion, clean filters: `core.autocrlf` or any attributes file), that id is the
//! id of the file's exact bytes. Entries written in the same instant as the index
//! itself are "racily clean" in git's terms and not trusted.

use std::collections::{HashMap, HashSet};
use std::fs::{self, Metadata};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use git2::{Index, IndexEntry, IndexTime, Repository};

use super::{BlobIds, EntryKind, Files, bytes_to_path};

const ATTRIBUTES_FILE: &str = ".gitattributes";
/// Attributes under which git's blob may differ from the file's bytes.
const CONVERTING_ATTRIBUTES: &[&str] = &[
    "text",
    "eol",
    "crlf",
    "filter",
    "ident",
    "working-tree-encoding",
];
/// Bits of [`IndexEntry::flags`] holding the merge stage; non-zero means a conflict.
const STAGE_MASK: u16 = 0x3000;
/// [`IndexEntry::flags_extended`] bits of entries whose stat says nothing about the
/// work tree: intent-to-add and skip-worktree.
const UNTRUSTED_EXTENDED: u16 = (1 << 13) | (1 << 14);

pub(super) struct UserIndex {
    index: Index,
    /// The root relative to the work tree: index paths start with it.
    prefix: PathBuf,
    /// When the index file was written; `None` when blob ids cannot be trusted at all.
    trusted_before: Option<SystemTime>,
    /// Directories (relative to the root) whose attributes may convert files: the
    /// index does not vouch for anything under them.
    converted_under: Vec<PathBuf>,
}

impl UserIndex {
    /// Reads the index of `repo`, whose work tree contains `root`. `None` without an
    /// index, or when libgit2 cannot read it (an extension it lacks): the snapshot then
    /// only misses ignored-but-tracked files and the head start.
    pub(super) fn open(repo: &Repository, root: &Path, files: &Files) -> Option<Self> {
        let workdir = repo.workdir()?.canonicalize().ok()?;
        let prefix = root.strip_prefix(&workdir).ok()?.to_path_buf();
        let path = repo.path().join("index");
        let written = fs::metadata(&path).ok()?.modified().ok()?;
        // A private in-memory copy bound to the file: it is read here and never written.
        let index = Index::open(&path)
            .inspect_err(|error| tracing::debug!(%error, "cannot read the git index"))
            .ok()?;
        let converted_under = converting_attribute_dirs(root, files);
        let raw = blobs_are_raw(repo, &workdir, &prefix);
        Some(Self {
            index,
            prefix,
            trusted_before: raw.then_some(written),
            converted_under,
        })
    }

    /// Tracked files under the root that are not in `listed` (an ignore rule matches
    /// them), with their `lstat` metadata.
    pub(super) fn unlisted_tracked(&self, root: &Path, listed: &Files) -> Files {
        let mut seen: HashSet<PathBuf> = listed.iter().map(|(rel, _)| rel.clone()).collect();
        let mut extra = Vec::new();
        for rel in self.index.iter().filter_map(|entry| self.relative(&entry)) {
            if seen.contains(&rel) || rel.components().any(|part| part.as_os_str() == ".git") {
                continue;
            }
            if let Ok(meta) = fs::symlink_metadata(root.join(&rel)) {
                seen.insert(rel.clone());
                extra.push((rel, meta));
            }
        }
        extra
    }

    /// Blob ids of `files` that the index vouches for (see the module doc).
    pub(super) fn vouched_blobs(&self, files: &Files) -> BlobIds {
        let Some(written) = self.trusted_before else {
            return HashMap::new();
        };
        let entries: HashMap<PathBuf, IndexEntry> = self
            .index
            .iter()
            .filter_map(|entry| Some((self.relative(&entry)?, entry)))
            .collect();
        files
            .iter()
            .filter(|(rel, _)| !self.converted_under.iter().any(|dir| rel.starts_with(dir)))
            .filter_map(|(rel, meta)| {
                let entry = entries.get(rel)?;
                vouches(entry, meta, written).then(|| (rel.clone(), entry.id))
            })
            .collect()
    }

    fn relative(&self, entry: &IndexEntry) -> Option<PathBuf> {
        let path = bytes_to_path(&entry.path);
        path.strip_prefix(&self.prefix).ok().map(Path::to_path_buf)
    }
}

/// Whether the entry's blob id is the id of the file's bytes now.
fn vouches(entry: &IndexEntry, meta: &Metadata, index_written: SystemTime) -> bool {
    let Some(kind) = EntryKind::of(meta) else {
        return false;
    };
    let modified = system_time(entry.mtime);
    entry.flags & STAGE_MASK == 0
        && entry.flags_extended & UNTRUSTED_EXTENDED == 0
        && entry.mode == kind.git_mode()
        && u64::from(entry.file_size) == meta.len() & 0xffff_ffff
        && meta.modified().ok() == Some(modified)
        && modified < index_written
        && same_inode(entry, meta)
}

#[cfg(unix)]
fn same_inode(entry: &IndexEntry, meta: &Metadata) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    // The index keeps the low 32 bits of both.
    u64::from(entry.ino) == meta.ino() & 0xffff_ffff
        && system_time(entry.ctime)
            == UNIX_EPOCH + Duration::new(meta.ctime().unsigned_abs(), ctime_nanos(meta))
}

#[cfg(unix)]
fn ctime_nanos(meta: &Metadata) -> u32 {
    use std::os::unix::fs::MetadataExt as _;
    u32::try_from(meta.ctime_nsec()).unwrap_or(0)
}

#[cfg(not(unix))]
fn same_inode(_entry: &IndexEntry, _meta: &Metadata) -> bool {
    true
}

fn system_time(time: IndexTime) -> SystemTime {
    UNIX_EPOCH + Duration::new(u64::from(time.seconds().unsigned_abs()), time.nanoseconds())
}

/// Whether git stores tracked files' bytes unchanged as far as settings outside the
/// tree go: no `core.autocrlf`, no repository-wide or global attributes file, and no
/// converting `.gitattributes` between the work tree's top and the root.
fn blobs_are_raw(repo: &Repository, workdir: &Path, prefix: &Path) -> bool {
    let Ok(config) = repo.config() else {
        return false;
    };
    let autocrlf_off = match config.get_string("core.autocrlf") {
        Ok(value) => matches!(value.to_lowercase().as_str(), "false" | "no" | "off" | "0"),
        Err(error) => error.code() == git2::ErrorCode::NotFound,
    };
    let no_attributes_file = config.get_path("core.attributesFile").is_err()
        && !repo.path().join("info/attributes").exists()
        && !global_attributes_file().is_some_and(|path| path.exists());
    let converting_above = prefix
        .ancestors()
        .skip(1)
        .any(|dir| may_convert(&workdir.join(dir).join(ATTRIBUTES_FILE)));
    autocrlf_off && no_attributes_file && !converting_above
}

/// The directories under the root whose `.gitattributes` may convert file contents.
fn converting_attribute_dirs(root: &Path, files: &Files) -> Vec<PathBuf> {
    files
        .iter()
        .filter(|(rel, _)| rel.file_name().is_some_and(|name| name == ATTRIBUTES_FILE))
        .filter(|(rel, _)| may_convert(&root.join(rel)))
        .filter_map(|(rel, _)| rel.parent().map(Path::to_path_buf))
        .collect()
}

/// Whether an attributes file mentions any attribute that changes what git stores
/// (line endings, filters, `ident`, encodings). Attributes that only steer diffs,
/// merges or linguist are harmless. An unreadable file is taken to convert.
fn may_convert(path: &Path) -> bool {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) => return error.kind() != std::io::ErrorKind::NotFound,
    };
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .flat_map(str::split_whitespace)
        .map(|token| {
            let name = token.trim_start_matches(['-', '!']);
            name.split('=').next().unwrap_or(name)
        })
        .any(|name| CONVERTING_ATTRIBUTES.contains(&name))
}

/// Git's default global attributes file, `$XDG_CONFIG_HOME/git/attributes`.
fn global_attributes_file() -> Option<PathBuf> {
    let config_home = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    Some(config_home.join("git/attributes"))
}
