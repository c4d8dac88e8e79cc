//! File operations on paths relative to an open directory handle, which never leave
//! the directory that handle names and never follow a symbolic link.
//!
//! Owns: opening a directory handle ([`Root`]) once, and every operation duet performs
//! by a path below it: stat, open for reading, read a link, create directories,
//! replace a file atomically, create a fresh file, remove, list, and a staging
//! directory for restores.
//! Does not own: which paths may be used (`tools::Workspace` checks what the model
//! asks for, and gives the canonical path it approved), or what is written.
//! Invariant: every path is resolved by the kernel relative to the root handle, one
//! step below the root at a time, and no symbolic link is followed anywhere in it: a
//! link met as a directory component or as the final entry of a read is an
//! [`Error::Link`]. A write never writes into an existing file: it creates a new file
//! in the same directory (by directory handle) and renames it over the entry, so a
//! link, a hard link or a file swapped in meanwhile is replaced, never written through.
//!
//! Why links are refused everywhere rather than followed while they stay beneath:
//! callers pass the canonical path they checked (and showed for approval), which has no
//! link in it. A link met later means the tree changed between the check and the use;
//! following it, even inside the root, would write somewhere nobody approved (a
//! `docs → .git/hooks` swap lands a write in a protected directory). Refusing turns
//! every such race into an error.
//!
//! How, per operation (`O_CLOEXEC` everywhere):
//! - directories are opened with `openat2(root, rel, O_PATH | O_DIRECTORY,
//!   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)` (Linux 5.6+). Where
//!   `openat2` is missing (older kernels, other Unix systems, seccomp profiles that
//!   answer `ENOSYS` or `EPERM`), the same walk is done one component at a time with
//!   `openat(dir, name, O_DIRECTORY | O_NOFOLLOW)`, each relative to the handle of the
//!   one before. Both are free of check-then-use gaps: a directory swapped for a link
//!   before a step fails that step; one swapped after it no longer matters, the
//!   handle is held.
//! - one exception, for reads only: [`Root::open_file_following_inside`] follows links
//!   that stay below the root (`RESOLVE_BENEATH` without `RESOLVE_NO_SYMLINKS`), for
//!   files whose links are part of a project's layout and that are only read;
//! - the final entry is used relative to its parent's handle: `fstatat(...,
//!   AT_SYMLINK_NOFOLLOW)` for metadata, `openat(..., O_NOFOLLOW | O_NONBLOCK)` for
//!   reading (non-blocking, so a FIFO swapped in cannot hang the open; the opened file
//!   is checked to be a regular file with `fstat`), `readlinkat`, `unlinkat` (which
//!   removes a link, never its target);
//! - writes: a temporary file created with `O_CREAT | O_EXCL | O_NOFOLLOW` in the
//!   parent (by handle), written, synced, then `renameat` over the entry.
//!
//! Built on `rustix` (safe wrappers of the `*at` system calls and `openat2`; already
//! built for `tempfile`, MIT/Apache-2.0). `cap-std` offers the same guarantee with its
//! own `Dir` type and file types, but duet needs the raw operations (rename between
//! two handles, `O_NONBLOCK` opens, stat without following) and a handful of them, not
//! a second file API.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Write as _};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawMode, Stat};
use rustix::io::Errno;

/// Prefix of the temporary files a replace writes before renaming them into place.
pub const TEMP_PREFIX: &str = ".duet-write-";
/// How many random names a temporary file or directory tries before giving up.
const TEMP_ATTEMPTS: usize = 64;

/// Why an operation below a [`Root`] did not happen. Paths are relative to the root.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Nothing is there (or a directory on the way is missing or is a file).
    #[error("`{}` does not exist", .path.display())]
    NotFound { path: PathBuf },
    /// The path goes through a symbolic link (`link`, possibly the path itself).
    #[error(
        "`{}` leads through the symbolic link `{}`; links are not followed here",
        .path.display(),
        .link.display()
    )]
    Link { path: PathBuf, link: PathBuf },
    #[error("`{}` is a directory", .path.display())]
    IsDir { path: PathBuf },
    /// A pipe, socket or device where a regular file was expected.
    #[error("`{}` is not a regular file", .path.display())]
    NotFile { path: PathBuf },
    /// Empty where a file is needed, absolute, or climbing with `..`.
    #[error("`{}` is not a path below the directory", .path.display())]
    NotBeneath { path: PathBuf },
    #[error("`{}`: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
}

impl Error {
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::NotFound { .. })
    }

    /// The path the error is about, relative to the root.
    pub fn path(&self) -> &Path {
        match self {
            Error::NotFound { path }
            | Error::Link { path, .. }
            | Error::IsDir { path }
            | Error::NotFile { path }
            | Error::NotBeneath { path }
            | Error::Io { path, .. } => path,
        }
    }

    fn io(path: &Path, source: impl Into<io::Error>) -> Self {
        Error::Io {
            path: path.to_path_buf(),
            source: source.into(),
        }
    }
}

/// What kind of entry a path names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    /// A pipe, socket or device.
    Other,
}

/// The metadata of one entry, taken without following a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    kind: Kind,
    /// Permission bits (`0o7777`).
    mode: u32,
    len: u64,
    nlink: u64,
    ino: u64,
    modified: Option<SystemTime>,
    /// Inode change time: seconds and nanoseconds.
    changed: (i64, i64),
}

impl Meta {
    pub fn kind(&self) -> Kind {
        self.kind
    }

    pub fn is_file(&self) -> bool {
        self.kind == Kind::File
    }

    pub fn is_dir(&self) -> bool {
        self.kind == Kind::Dir
    }

    pub fn is_symlink(&self) -> bool {
        self.kind == Kind::Symlink
    }

    /// Permission bits, `0o7777` at most.
    pub fn mode(&self) -> u32 {
        self.mode
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many names the file has (hard links), this one included.
    pub fn nlink(&self) -> u64 {
        self.nlink
    }

    pub fn ino(&self) -> u64 {
        self.ino
    }

    pub fn modified(&self) -> Option<SystemTime> {
        self.modified
    }

    /// Inode change time (seconds, nanoseconds).
    pub fn changed(&self) -> (i64, i64) {
        self.changed
    }

    // The field types of `struct stat` differ between platforms and architectures
    // (`st_nlink` is 64 bits on x86-64 Linux, 32 on aarch64, 16 on macOS), so the casts
    // are needed somewhere and are no-ops elsewhere.
    #[allow(clippy::unnecessary_cast)]
    fn of(stat: &Stat) -> Self {
        let kind = match FileType::from_raw_mode(stat.st_mode as RawMode) {
            FileType::RegularFile => Kind::File,
            FileType::Directory => Kind::Dir,
            FileType::Symlink => Kind::Symlink,
            _ => Kind::Other,
        };
        let seconds = stat.st_mtime as i64;
        let nanos = stat.st_mtime_nsec as i64;
        let modified = u64::try_from(seconds)
            .ok()
            .zip(u32::try_from(nanos).ok())
            .map(|(seconds, nanos)| UNIX_EPOCH + Duration::new(seconds, nanos));
        Self {
            kind,
            mode: stat.st_mode as u32 & 0o7777,
            len: u64::try_from(stat.st_size as i64).unwrap_or(0),
            nlink: stat.st_nlink as u64,
            ino: stat.st_ino as u64,
            modified,
            changed: (stat.st_ctime as i64, stat.st_ctime_nsec as i64),
        }
    }
}

/// What a replace found at the path before it put the new file there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replaced {
    /// The entry that was replaced; `None` when the file is new.
    pub previous: Option<Meta>,
}

impl Replaced {
    /// How many other names the replaced file had: they keep the old content, since the
    /// new content is a new file. `None` when there were none.
    pub fn other_hard_links(&self) -> Option<u64> {
        self.previous
            .filter(|meta| meta.is_file() && meta.nlink() > 1)
            .map(|meta| meta.nlink() - 1)
    }

    /// Whether a symbolic link stood at the path; it was replaced, not followed.
    pub fn replaced_a_link(&self) -> bool {
        self.previous.is_some_and(|meta| meta.is_symlink())
    }
}

/// How directories below the root are opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resolver {
    /// One `openat2` call with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`.
    #[cfg(target_os = "linux")]
    Openat2,
    /// One `openat(O_NOFOLLOW)` per component.
    Walk,
}

/// An open handle of a directory; every operation takes a path relative to it.
pub struct Root {
    fd: OwnedFd,
    /// The path it was opened at, for messages.
    path: PathBuf,
    resolver: Resolver,
}

impl std::fmt::Debug for Root {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Root")
            .field("path", &self.path)
            .field("resolver", &self.resolver)
            .finish_non_exhaustive()
    }
}

/// Flags to open a directory only as a handle for the `*at` calls.
#[cfg(target_os = "linux")]
fn dir_handle_flags() -> OFlags {
    OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC
}

#[cfg(not(target_os = "linux"))]
fn dir_handle_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC
}

impl Root {
    /// Opens `path` (a directory the caller trusts; links in it are followed once,
    /// here) as the root of every later operation.
    pub fn open(path: &Path) -> io::Result<Self> {
        let fd = rustix::fs::open(path, dir_handle_flags(), Mode::empty())?;
        let resolver = best_resolver(fd.as_fd());
        Ok(Self {
            fd,
            path: path.to_path_buf(),
            resolver,
        })
    }

    /// The same, always walking component by component (the fallback for systems
    /// without `openat2`), so tests can run both.
    #[cfg(test)]
    fn open_walking(path: &Path) -> io::Result<Self> {
        let mut root = Self::open(path)?;
        root.resolver = Resolver::Walk;
        Ok(root)
    }

    /// The path the root was opened at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The metadata of the entry at `rel` (a link is reported as a link, not
    /// followed); `None` when nothing is there.
    pub fn metadata(&self, rel: &Path) -> Result<Option<Meta>, Error> {
        let rel = checked(rel, AllowRoot::Yes)?;
        let Some((parent, name)) = split(&rel) else {
            let stat = rustix::fs::fstat(&self.fd).map_err(|e| Error::io(&rel, e))?;
            return Ok(Some(Meta::of(&stat)));
        };
        let dir = match self.dir(parent, &rel) {
            Ok(dir) => dir,
            Err(error) if error.is_not_found() => return Ok(None),
            Err(error) => return Err(error),
        };
        match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(Meta::of(&stat))),
            Err(Errno::NOENT) => Ok(None),
            Err(error) => Err(Error::io(&rel, error)),
        }
    }

    /// Opens the regular file at `rel` for reading. A link, a directory, a pipe, a
    /// socket or a device is refused without being opened as such.
    pub fn open_file(&self, rel: &Path) -> Result<(File, Meta), Error> {
        let rel = checked(rel, AllowRoot::No)?;
        #[cfg(target_os = "linux")]
        if self.resolver == Resolver::Openat2 {
            return self.open_file_openat2(&rel);
        }
        let (parent, name) = split(&rel).ok_or_else(|| not_beneath(&rel))?;
        let dir = self.dir(parent, &rel)?;
        let before = match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Meta::of(&stat),
            Err(Errno::NOENT) => return Err(Error::NotFound { path: rel }),
            Err(error) => return Err(Error::io(&rel, error)),
        };
        refuse_unless_file(&before, &rel)?;
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(&dir, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::LOOP) => {
                return Err(Error::Link {
                    link: rel.clone(),
                    path: rel,
                });
            }
            Err(Errno::NOENT) => return Err(Error::NotFound { path: rel }),
            Err(error) => return Err(Error::io(&rel, error)),
        };
        // Between the stat and the open the entry may have been swapped: check again.
        let meta = Meta::of(&rustix::fs::fstat(&fd).map_err(|e| Error::io(&rel, e))?);
        refuse_unless_file(&meta, &rel)?;
        // Reads of a regular file never block; clear the flag for whoever reads on.
        rustix::fs::fcntl_setfl(&fd, OFlags::empty()).map_err(|e| Error::io(&rel, e))?;
        Ok((File::from(fd), meta))
    }

    /// [`Root::open_file`] in one resolution (searches open every file they look at):
    /// `openat2` with no link followed, the final one included, then `fstat`. The
    /// open is non-blocking, so a pipe swapped in cannot hang it; a device node would be
    /// opened before it is refused (making one takes `CAP_MKNOD`, which the shell's
    /// sandbox does not have).
    #[cfg(target_os = "linux")]
    fn open_file_openat2(&self, rel: &Path) -> Result<(File, Meta), Error> {
        use rustix::fs::ResolveFlags;
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let resolve =
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        let fd = match openat2_vouched(self.fd.as_fd(), rel, flags, resolve) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => {
                return Err(Error::NotFound {
                    path: rel.to_path_buf(),
                });
            }
            // A socket cannot be opened at all.
            Err(Errno::NXIO) => {
                return Err(Error::NotFile {
                    path: rel.to_path_buf(),
                });
            }
            Err(error) => return Err(self.diagnose(rel, rel, error)),
        };
        let meta = Meta::of(&rustix::fs::fstat(&fd).map_err(|e| Error::io(rel, e))?);
        refuse_unless_file(&meta, rel)?;
        rustix::fs::fcntl_setfl(&fd, OFlags::empty()).map_err(|e| Error::io(rel, e))?;
        Ok((File::from(fd), meta))
    }

    /// Opens the regular file at `rel` for reading, following symbolic links as long
    /// as they stay below the root (`RESOLVE_BENEATH`: a relative link that does not
    /// climb out; an absolute link, or one leaving the root, is an [`Error::Link`]). For
    /// files whose links are part of how a project is laid out (`AGENTS.md` linking to
    /// `CLAUDE.md`) and that are only read. Without `openat2`, links are refused.
    pub fn open_file_following_inside(&self, rel: &Path) -> Result<(File, Meta), Error> {
        #[cfg(target_os = "linux")]
        if self.resolver == Resolver::Openat2 {
            use rustix::fs::ResolveFlags;
            let rel = checked(rel, AllowRoot::No)?;
            let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
            let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
            let fd = match openat2_vouched(self.fd.as_fd(), &rel, flags, resolve) {
                Ok(fd) => fd,
                Err(Errno::NOENT | Errno::NOTDIR) => return Err(Error::NotFound { path: rel }),
                Err(Errno::XDEV | Errno::LOOP) => {
                    return Err(Error::Link {
                        link: rel.clone(),
                        path: rel,
                    });
                }
                Err(error) => return Err(Error::io(&rel, error)),
            };
            let meta = Meta::of(&rustix::fs::fstat(&fd).map_err(|e| Error::io(&rel, e))?);
            refuse_unless_file(&meta, &rel)?;
            rustix::fs::fcntl_setfl(&fd, OFlags::empty()).map_err(|e| Error::io(&rel, e))?;
            return Ok((File::from(fd), meta));
        }
        self.open_file(rel)
    }

    /// The whole content of the regular file at `rel`.
    pub fn read(&self, rel: &Path) -> Result<Vec<u8>, Error> {
        let (mut file, meta) = self.open_file(rel)?;
        let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
        io::Read::read_to_end(&mut file, &mut bytes).map_err(|e| Error::io(rel, e))?;
        Ok(bytes)
    }

    /// The target of the symbolic link at `rel`.
    pub fn read_link(&self, rel: &Path) -> Result<PathBuf, Error> {
        let rel = checked(rel, AllowRoot::No)?;
        let (parent, name) = split(&rel).ok_or_else(|| not_beneath(&rel))?;
        let dir = self.dir(parent, &rel)?;
        match rustix::fs::readlinkat(&dir, name, Vec::new()) {
            Ok(target) => Ok(PathBuf::from(std::ffi::OsStr::from_bytes(
                target.as_bytes(),
            ))),
            Err(Errno::NOENT) => Err(Error::NotFound { path: rel }),
            Err(error) => Err(Error::io(&rel, error)),
        }
    }

    /// Names and kinds of the entries of the directory at `rel`, sorted by name.
    pub fn list(&self, rel: &Path) -> Result<Vec<(OsString, Kind)>, Error> {
        let rel = checked(rel, AllowRoot::Yes)?;
        let handle = self.dir(&rel, &rel)?;
        list_dir(handle.as_fd(), &rel)
    }

    /// Creates the directory `rel` and every missing one above it (never through a
    /// link); returns a handle of it.
    pub fn create_dir_all(&self, rel: &Path) -> Result<OwnedFd, Error> {
        let rel = checked(rel, AllowRoot::Yes)?;
        let mut current = reopen(self.fd.as_fd(), &rel)?;
        let mut walked = PathBuf::new();
        for name in rel.iter() {
            walked.push(name);
            current = match step(current.as_fd(), name, &walked, &rel) {
                Ok(next) => next,
                Err(Error::NotFound { .. }) => {
                    match rustix::fs::mkdirat(&current, name, Mode::from_raw_mode(0o777)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(error) => return Err(Error::io(&walked, error)),
                    }
                    step(current.as_fd(), name, &walked, &rel)?
                }
                Err(error) => return Err(error),
            };
        }
        Ok(current)
    }

    /// Puts a new regular file holding `content` at `rel`, creating missing parent
    /// directories: written to a temporary file beside it, synced, then renamed over
    /// whatever is there, so readers see the old entry or the new file, never half of
    /// one. The new file gets `mode`, or 0666 minus the umask. A link at `rel` is
    /// replaced, and a hard-linked file is replaced by a new one: nothing is written
    /// through either ([`Replaced`] says which).
    pub fn replace(
        &self,
        rel: &Path,
        content: &[u8],
        mode: Option<u32>,
    ) -> Result<Replaced, Error> {
        let (_, replaced) = self.put_new_file(rel, mode, |file| file.write_all(content))?;
        Ok(replaced)
    }

    /// Puts a new empty file at `rel` the way [`Root::replace`] does, and returns it
    /// open for reading and writing.
    pub fn create_fresh(&self, rel: &Path) -> Result<(File, Replaced), Error> {
        self.put_new_file(rel, None, |_| Ok(()))
    }

    fn put_new_file(
        &self,
        rel: &Path,
        mode: Option<u32>,
        fill: impl FnOnce(&mut File) -> io::Result<()>,
    ) -> Result<(File, Replaced), Error> {
        let rel = checked(rel, AllowRoot::No)?;
        let (parent, name) = split(&rel).ok_or_else(|| not_beneath(&rel))?;
        let dir = self.create_dir_all(parent).map_err(|error| match error {
            // The message should name the file the caller asked for.
            Error::Link { link, .. } => Error::Link {
                path: rel.clone(),
                link,
            },
            other => other,
        })?;
        let previous = match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Some(Meta::of(&stat)),
            Err(Errno::NOENT) => None,
            Err(error) => return Err(Error::io(&rel, error)),
        };
        if previous.is_some_and(|meta| meta.is_dir()) {
            return Err(Error::IsDir { path: rel });
        }
        let (temp_name, mut file) = create_temp_file(dir.as_fd(), &rel)?;
        let written = fill(&mut file)
            .and_then(|()| file.sync_all())
            .and_then(|()| match mode {
                Some(mode) => rustix::fs::fchmod(&file, mode_of(mode)).map_err(io::Error::from),
                None => Ok(()),
            })
            .map_err(|error| Error::io(&rel, error))
            .and_then(|()| {
                rustix::fs::renameat(&dir, &temp_name, &dir, name).map_err(|e| Error::io(&rel, e))
            });
        if let Err(error) = written {
            let _ = rustix::fs::unlinkat(&dir, &temp_name, AtFlags::empty());
            return Err(error);
        }
        Ok((file, Replaced { previous }))
    }

    /// Removes the file or link at `rel` (a link itself, never its target); false when
    /// nothing was there.
    pub fn remove_file(&self, rel: &Path) -> Result<bool, Error> {
        self.unlink(rel, AtFlags::empty())
    }

    /// Removes the empty directory at `rel`; false when nothing was there.
    pub fn remove_dir(&self, rel: &Path) -> Result<bool, Error> {
        self.unlink(rel, AtFlags::REMOVEDIR)
    }

    fn unlink(&self, rel: &Path, flags: AtFlags) -> Result<bool, Error> {
        let rel = checked(rel, AllowRoot::No)?;
        let (parent, name) = split(&rel).ok_or_else(|| not_beneath(&rel))?;
        let dir = match self.dir(parent, &rel) {
            Ok(dir) => dir,
            Err(error) if error.is_not_found() => return Ok(false),
            Err(error) => return Err(error),
        };
        match rustix::fs::unlinkat(&dir, name, flags) {
            Ok(()) => Ok(true),
            Err(Errno::NOENT) => Ok(false),
            Err(Errno::ISDIR) => Err(Error::IsDir { path: rel }),
            Err(error) => Err(Error::io(&rel, error)),
        }
    }

    /// Moves the entry at `from` (a file, a directory with what is in it, or a link
    /// itself) to `to`, creating the missing directories above `to`, never through a
    /// link, and never replacing anything already at `to`.
    pub fn move_entry(&self, from: &Path, to: &Path) -> Result<(), Error> {
        let from = checked(from, AllowRoot::No)?;
        let to = checked(to, AllowRoot::No)?;
        let (from_parent, from_name) = split(&from).ok_or_else(|| not_beneath(&from))?;
        let (to_parent, to_name) = split(&to).ok_or_else(|| not_beneath(&to))?;
        let source = self.dir(from_parent, &from)?;
        let target = self.create_dir_all(to_parent)?;
        rustix::fs::renameat_with(
            &source,
            from_name,
            &target,
            to_name,
            rustix::fs::RenameFlags::NOREPLACE,
        )
        .map_err(|error| match error {
            Errno::NOENT => Error::NotFound { path: from.clone() },
            other => Error::io(&from, other),
        })
    }

    /// Makes a new, empty directory with a random name starting with `prefix` directly
    /// in the root, removed with what is left in it when dropped.
    pub fn staging_dir(&self, prefix: &str) -> Result<Staging<'_>, Error> {
        for _ in 0..TEMP_ATTEMPTS {
            let name = format!("{prefix}{:08x}", fastrand::u32(..));
            match rustix::fs::mkdirat(&self.fd, name.as_str(), Mode::from_raw_mode(0o700)) {
                Ok(()) => {
                    let here = Path::new(&name);
                    let fd = step(self.fd.as_fd(), here.as_os_str(), here, here)?;
                    return Ok(Staging {
                        root: self,
                        name,
                        fd,
                    });
                }
                Err(Errno::EXIST) => {}
                Err(error) => return Err(Error::io(Path::new(&name), error)),
            }
        }
        Err(Error::io(
            Path::new(prefix),
            io::Error::other("no free name for a staging directory"),
        ))
    }

    /// A handle of the directory `dir` (relative, checked), never through a link.
    /// `whole` is the path the caller works on, for messages.
    fn dir(&self, dir: &Path, whole: &Path) -> Result<OwnedFd, Error> {
        if dir.as_os_str().is_empty() {
            return reopen(self.fd.as_fd(), whole);
        }
        match self.resolver {
            #[cfg(target_os = "linux")]
            Resolver::Openat2 => self.dir_openat2(dir, whole),
            Resolver::Walk => {
                let mut current = reopen(self.fd.as_fd(), whole)?;
                let mut walked = PathBuf::new();
                for name in dir.iter() {
                    walked.push(name);
                    current = step(current.as_fd(), name, &walked, whole)?;
                }
                Ok(current)
            }
        }
    }

    #[cfg(target_os = "linux")]
    fn dir_openat2(&self, dir: &Path, whole: &Path) -> Result<OwnedFd, Error> {
        use rustix::fs::ResolveFlags;
        let resolve =
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        openat2_vouched(self.fd.as_fd(), dir, dir_handle_flags(), resolve)
            .map_err(|error| self.diagnose(dir, whole, error))
    }

    /// Why opening the directory `dir` failed with `errno`: finds the link or the
    /// missing piece by looking at each component without following it. Only for the
    /// error it returns; nothing is opened on the strength of what it finds.
    #[cfg(target_os = "linux")]
    fn diagnose(&self, dir: &Path, whole: &Path, errno: Errno) -> Error {
        let mut walked = PathBuf::new();
        for name in dir.iter() {
            walked.push(name);
            match rustix::fs::statat(&self.fd, &walked, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) if Meta::of(&stat).is_symlink() => {
                    return Error::Link {
                        path: whole.to_path_buf(),
                        link: walked,
                    };
                }
                Ok(stat) if Meta::of(&stat).is_dir() => {}
                // The entry itself is there: the error is about it, not the way to it.
                Ok(_) if walked == whole => break,
                // Missing, or a file where a directory should be: nothing is there.
                Ok(_) | Err(Errno::NOENT | Errno::NOTDIR) => {
                    return Error::NotFound {
                        path: whole.to_path_buf(),
                    };
                }
                Err(_) => break,
            }
        }
        match errno {
            Errno::NOENT | Errno::NOTDIR => Error::NotFound {
                path: whole.to_path_buf(),
            },
            // A link that was there when the kernel looked and is gone by now.
            Errno::LOOP | Errno::XDEV => Error::Link {
                path: whole.to_path_buf(),
                link: dir.to_path_buf(),
            },
            other => Error::io(whole, other),
        }
    }
}

/// `openat2` beneath `dir`, tried again while it answers `EAGAIN`: with
/// `RESOLVE_BENEATH` the kernel answers that when a rename anywhere on the system ran
/// during the walk and it cannot vouch that a `..` stayed inside. Any process renaming
/// files (a build, a test, the model's shell) causes it, so it is not an attack; after
/// a few tries the error is passed on.
#[cfg(target_os = "linux")]
fn openat2_vouched(
    dir: BorrowedFd<'_>,
    rel: &Path,
    flags: OFlags,
    resolve: rustix::fs::ResolveFlags,
) -> Result<OwnedFd, Errno> {
    const TRIES: u32 = 16;
    let mut tries = 1;
    loop {
        match rustix::fs::openat2(dir, rel, flags, Mode::empty(), resolve) {
            Err(Errno::AGAIN) if tries < TRIES => tries += 1,
            answer => return answer,
        }
    }
}

/// Chooses `openat2` when the kernel answers it.
#[cfg(target_os = "linux")]
fn best_resolver(fd: BorrowedFd<'_>) -> Resolver {
    use rustix::fs::ResolveFlags;
    use std::sync::OnceLock;
    static WORKS: OnceLock<bool> = OnceLock::new();
    let works = *WORKS.get_or_init(|| {
        let probe = rustix::fs::openat2(
            fd,
            ".",
            dir_handle_flags(),
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS,
        );
        // Seccomp profiles written before openat2 existed answer ENOSYS or EPERM.
        !matches!(probe, Err(Errno::NOSYS | Errno::PERM))
    });
    if works {
        Resolver::Openat2
    } else {
        tracing::info!("openat2 is unavailable; paths are walked one component at a time");
        Resolver::Walk
    }
}

#[cfg(not(target_os = "linux"))]
fn best_resolver(_fd: BorrowedFd<'_>) -> Resolver {
    Resolver::Walk
}

/// A fresh handle of the directory `fd`.
fn reopen(fd: BorrowedFd<'_>, whole: &Path) -> Result<OwnedFd, Error> {
    rustix::fs::openat(fd, ".", dir_handle_flags(), Mode::empty()).map_err(|e| Error::io(whole, e))
}

/// Opens the directory `name` inside `dir` without following a link. `walked` is the
/// path up to and including `name`, `whole` the path being worked on.
fn step(
    dir: BorrowedFd<'_>,
    name: &std::ffi::OsStr,
    walked: &Path,
    whole: &Path,
) -> Result<OwnedFd, Error> {
    match rustix::fs::openat(
        dir,
        name,
        dir_handle_flags() | OFlags::NOFOLLOW,
        Mode::empty(),
    ) {
        Ok(fd) => Ok(fd),
        // Refused by O_NOFOLLOW: a link when the kernel looked, whatever is there now.
        Err(Errno::LOOP) => Err(Error::Link {
            path: whole.to_path_buf(),
            link: walked.to_path_buf(),
        }),
        // A link (with O_PATH opened as itself, then refused by O_DIRECTORY) or a file.
        // Look without following to tell; a directory there now means the entry was
        // swapped since the open, which only a link trading places with it explains.
        Err(Errno::NOTDIR) => match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) if Meta::of(&stat).is_symlink() || Meta::of(&stat).is_dir() => {
                Err(Error::Link {
                    path: whole.to_path_buf(),
                    link: walked.to_path_buf(),
                })
            }
            _ => Err(Error::NotFound {
                path: whole.to_path_buf(),
            }),
        },
        Err(Errno::NOENT) => Err(Error::NotFound {
            path: whole.to_path_buf(),
        }),
        Err(error) => Err(Error::io(walked, error)),
    }
}

/// Creates a new file with a random name in `dir`, open for reading and writing.
fn create_temp_file(dir: BorrowedFd<'_>, rel: &Path) -> Result<(String, File), Error> {
    let flags = OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    for _ in 0..TEMP_ATTEMPTS {
        let name = format!("{TEMP_PREFIX}{:08x}", fastrand::u32(..));
        match rustix::fs::openat(dir, name.as_str(), flags, Mode::from_raw_mode(0o666)) {
            Ok(fd) => return Ok((name, File::from(fd))),
            Err(Errno::EXIST) => {}
            Err(error) => return Err(Error::io(rel, error)),
        }
    }
    Err(Error::io(
        rel,
        io::Error::other("no free name for a temporary file"),
    ))
}

fn list_dir(dir: BorrowedFd<'_>, rel: &Path) -> Result<Vec<(OsString, Kind)>, Error> {
    let readable = rustix::fs::openat(
        dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| Error::io(rel, e))?;
    let entries = rustix::fs::Dir::new(readable).map_err(|e| Error::io(rel, e))?;
    let mut listed = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(rel, e))?;
        let name = std::ffi::OsStr::from_bytes(entry.file_name().to_bytes());
        if name == "." || name == ".." {
            continue;
        }
        let kind = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Meta::of(&stat).kind(),
            Err(Errno::NOENT) => continue,
            Err(error) => return Err(Error::io(&rel.join(name), error)),
        };
        listed.push((name.to_os_string(), kind));
    }
    listed.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(listed)
}

/// Permission bits as the platform's mode type.
// `mode_t` is 32 bits on Linux and 16 on macOS.
#[allow(clippy::unnecessary_cast)]
fn mode_of(bits: u32) -> Mode {
    Mode::from_raw_mode(bits as RawMode)
}

fn refuse_unless_file(meta: &Meta, rel: &Path) -> Result<(), Error> {
    match meta.kind() {
        Kind::File => Ok(()),
        Kind::Dir => Err(Error::IsDir {
            path: rel.to_path_buf(),
        }),
        Kind::Symlink => Err(Error::Link {
            path: rel.to_path_buf(),
            link: rel.to_path_buf(),
        }),
        Kind::Other => Err(Error::NotFile {
            path: rel.to_path_buf(),
        }),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum AllowRoot {
    Yes,
    No,
}

/// `rel` with `.` components dropped; refused when absolute, climbing with `..`, or
/// (unless allowed) naming the root itself.
fn checked(rel: &Path, allow_root: AllowRoot) -> Result<PathBuf, Error> {
    let mut clean = PathBuf::new();
    for component in rel.components() {
        match component {
            Component::Normal(name) => clean.push(name),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(not_beneath(rel));
            }
        }
    }
    if clean.as_os_str().is_empty() && allow_root == AllowRoot::No {
        return Err(not_beneath(rel));
    }
    Ok(clean)
}

fn not_beneath(rel: &Path) -> Error {
    Error::NotBeneath {
        path: rel.to_path_buf(),
    }
}

/// The parent directory and the final name of a checked path; `None` for the root.
fn split(rel: &Path) -> Option<(&Path, &std::ffi::OsStr)> {
    let name = rel.file_name()?;
    Some((rel.parent().unwrap_or(Path::new("")), name))
}

/// A temporary directory directly below a [`Root`], for files that are moved into
/// place later. Removed, with whatever is still in it, when dropped.
pub struct Staging<'a> {
    root: &'a Root,
    name: String,
    fd: OwnedFd,
}

impl Staging<'_> {
    /// Creates the file `name` in the staging directory, open for writing; new files
    /// get 0666 minus the umask.
    pub fn create(&self, name: &str) -> Result<File, Error> {
        let flags =
            OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        rustix::fs::openat(&self.fd, name, flags, Mode::from_raw_mode(0o666))
            .map(File::from)
            .map_err(|error| Error::io(&self.rel(name), error))
    }

    /// Creates the symbolic link `name` in the staging directory, pointing at `target`.
    pub fn symlink(&self, name: &str, target: &Path) -> Result<(), Error> {
        rustix::fs::symlinkat(target, &self.fd, name)
            .map_err(|error| Error::io(&self.rel(name), error))
    }

    /// Moves the staged entry `name` to `rel` below the root, replacing the file or
    /// link there. The parent directories are created, never through a link.
    pub fn move_to(&self, name: &str, rel: &Path) -> Result<(), Error> {
        let rel = checked(rel, AllowRoot::No)?;
        let (parent, final_name) = split(&rel).ok_or_else(|| not_beneath(&rel))?;
        let dir = self
            .root
            .create_dir_all(parent)
            .map_err(|error| match error {
                Error::Link { link, .. } => Error::Link {
                    path: rel.clone(),
                    link,
                },
                other => other,
            })?;
        rustix::fs::renameat(&self.fd, name, &dir, final_name).map_err(|error| match error {
            Errno::ISDIR | Errno::NOTEMPTY | Errno::EXIST => Error::IsDir { path: rel.clone() },
            other => Error::io(&rel, other),
        })
    }

    fn rel(&self, name: &str) -> PathBuf {
        Path::new(&self.name).join(name)
    }
}

impl Drop for Staging<'_> {
    fn drop(&mut self) {
        let here = PathBuf::from(&self.name);
        if let Ok(entries) = list_dir(self.fd.as_fd(), &here) {
            for (name, _) in entries {
                let _ = rustix::fs::unlinkat(&self.fd, name.as_os_str(), AtFlags::empty());
            }
        }
        let _ = rustix::fs::unlinkat(&self.root.fd, self.name.as_str(), AtFlags::REMOVEDIR);
    }
}

/// Metadata of the entry at the absolute path `path`, taken without following a link
/// anywhere in it (a link at `path` itself is reported as a link); `None` when nothing
/// is there, or when a directory on the way is now a link (`path` is a canonical path,
/// which had none). For paths duet recorded earlier.
pub fn metadata_exact(path: &Path) -> Result<Option<Meta>, Error> {
    let rel = path.strip_prefix("/").map_err(|_| not_beneath(path))?;
    let root = Root::open(Path::new("/")).map_err(|error| Error::io(path, error))?;
    match root.metadata(rel) {
        Err(Error::Link { .. }) => Ok(None),
        other => other,
    }
}

#[cfg(test)]
mod tests;
