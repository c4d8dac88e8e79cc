//! The filesystem the sandboxed program sees, built in its own mount namespace: a
//! fresh `/proc` for its own process namespace, a minimal `/dev`, an empty `/run`, a
//! private `/tmp`, the protected paths of the workspace read-only, and the user's
//! credential files and directories hidden behind empty ones.
//!
//! Owns: the mounts and the order they are made in, and checking each one took.
//! Does not own: which paths are protected or hidden (the host side decides and passes
//! them), or what may be written (Landlock, applied after this).
//! Invariant: a path is reported read-only or hidden only after the mount over it was
//! made and read back; a mount is never made through a symbolic link.

use std::fs::{self, File};
use std::os::fd::AsRawFd as _;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use nix::libc;
use nix::mount::{MsFlags, mount};
use nix::sys::statvfs::{FsFlags, statvfs};

/// Device nodes the program gets, bound from the host's `/dev`.
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];
/// Links every `/dev` has, for `<(...)`, `/dev/stdin` and friends.
const DEV_LINKS: &[(&str, &str)] = &[
    ("fd", "/proc/self/fd"),
    ("stdin", "/proc/self/fd/0"),
    ("stdout", "/proc/self/fd/1"),
    ("stderr", "/proc/self/fd/2"),
    ("ptmx", "pts/ptmx"),
];

/// What to build.
pub(super) struct View<'a> {
    /// Shown at `/tmp`.
    pub private_tmp: &'a Path,
    /// Must stay visible at their own paths even when they lie under `/tmp` or `/run`:
    /// the workspace and the other writable paths.
    pub keep_visible: &'a [PathBuf],
    /// Made read-only where they are (inside the workspace).
    pub read_only: &'a [PathBuf],
    /// Hidden behind an empty directory or an empty file.
    pub hidden: &'a [PathBuf],
    /// Keep `/etc/resolv.conf` working when it points into `/run`.
    pub network: bool,
}

/// How each part of the view came out.
pub(super) struct Built {
    /// `/proc`, `/dev`, `/run` and `/tmp`: `Err` says which failed.
    pub base: Result<(), String>,
    /// Read-only paths: how many, or what failed.
    pub read_only: Result<usize, String>,
    /// Hidden paths: how many, or what failed.
    pub hidden: Result<usize, String>,
}

/// Builds the view. Each part is attempted even when an earlier one failed, so the
/// report says what holds.
pub(super) fn build(view: &View<'_>) -> Built {
    if let Err(error) = mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    ) {
        let why = format!("cannot make the mounts private: {error}");
        return Built {
            base: Err(why.clone()),
            read_only: Err(why.clone()),
            hidden: Err(why),
        };
    }
    let base = build_base(view);
    let read_only = view.read_only.iter().try_fold(0, |count, path| {
        make_read_only(path).map(|made| count + usize::from(made))
    });
    let hidden = view.hidden.iter().try_fold(0, |count, path| {
        hide(path).map(|hidden| count + usize::from(hidden))
    });
    Built {
        base,
        read_only,
        hidden,
    }
}

fn build_base(view: &View<'_>) -> Result<(), String> {
    // Handles on what must stay visible, taken before anything is mounted over them.
    let kept: Vec<(PathBuf, File)> = view
        .keep_visible
        .iter()
        .map(|path| Ok((path.clone(), open_path(path)?)))
        .collect::<Result<_, String>>()?;
    let resolver = if view.network {
        resolver_under_run()
    } else {
        None
    };
    mount_proc()?;
    mount_dev()?;
    if is_real_dir("/run") {
        mount_tmpfs("/run", "mode=0755")?;
        if let Some((path, handle)) = &resolver {
            bind_at(handle, path)?;
        }
    }
    if is_real_dir("/var/run") {
        mount_tmpfs("/var/run", "mode=0755")?;
    }
    mount(
        Some(view.private_tmp),
        "/tmp",
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(|error| {
        format!(
            "cannot show {} as /tmp: {error}",
            view.private_tmp.display()
        )
    })?;
    for (path, handle) in &kept {
        if path.starts_with("/tmp") || path.starts_with("/run") || path.starts_with("/var/run") {
            bind_at(handle, path)?;
        }
    }
    Ok(())
}

fn mount_proc() -> Result<(), String> {
    mount(
        Some("proc"),
        "/proc",
        Some("proc"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None::<&str>,
    )
    .map_err(|error| format!("cannot mount a fresh /proc: {error}"))
}

/// A tmpfs `/dev` holding the harmless device nodes, a terminal instance of its own
/// (`/dev/pts`, `/dev/ptmx`), `/dev/shm`, and the usual links. No disk, no memory, no
/// other terminal of the host.
fn mount_dev() -> Result<(), String> {
    let nodes: Vec<(&str, File)> = DEVICES
        .iter()
        .map(|name| Ok((*name, open_path(&Path::new("/dev").join(name))?)))
        .collect::<Result<_, String>>()?;
    mount_tmpfs("/dev", "mode=0755")?;
    for (name, handle) in &nodes {
        let path = Path::new("/dev").join(name);
        fs::File::create(&path)
            .map_err(|error| format!("cannot create {}: {error}", path.display()))?;
        bind_at(handle, &path)?;
    }
    let pts = Path::new("/dev/pts");
    fs::create_dir(pts).map_err(|error| format!("cannot create /dev/pts: {error}"))?;
    mount(
        Some("devpts"),
        pts,
        Some("devpts"),
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        Some("newinstance,ptmxmode=0666,mode=620"),
    )
    .map_err(|error| format!("cannot mount /dev/pts: {error}"))?;
    let shm = Path::new("/dev/shm");
    fs::create_dir(shm).map_err(|error| format!("cannot create /dev/shm: {error}"))?;
    mount_tmpfs(shm, "mode=1777")?;
    for (name, target) in DEV_LINKS {
        let link = Path::new("/dev").join(name);
        std::os::unix::fs::symlink(target, &link)
            .map_err(|error| format!("cannot link {}: {error}", link.display()))?;
    }
    Ok(())
}

fn mount_tmpfs(target: impl AsRef<Path>, options: &str) -> Result<(), String> {
    let target = target.as_ref();
    mount(
        Some("tmpfs"),
        target,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some(options),
    )
    .map_err(|error| format!("cannot mount a tmpfs on {}: {error}", target.display()))
}

/// `/etc/resolv.conf` when it is a link into `/run` (systemd-resolved, NetworkManager),
/// with a handle on its target: a commands with network still resolves names.
fn resolver_under_run() -> Option<(PathBuf, File)> {
    let target = fs::canonicalize("/etc/resolv.conf").ok()?;
    if !target.starts_with("/run") && !target.starts_with("/var/run") {
        return None;
    }
    let handle = open_path(&target).ok()?;
    Some((target, handle))
}

/// Binds what `handle` refers to at `path`, creating the mount point (and its parent
/// directories) first: a directory for a directory, an empty file otherwise.
fn bind_at(handle: &File, path: &Path) -> Result<(), String> {
    let is_dir = fs::metadata(fd_path(handle))
        .map(|metadata| metadata.is_dir())
        .unwrap_or(false);
    let created = if is_dir {
        fs::create_dir_all(path)
    } else {
        path.parent()
            .map_or(Ok(()), fs::create_dir_all)
            .and_then(|()| fs::File::create(path).map(drop))
    };
    created.map_err(|error| format!("cannot create {}: {error}", path.display()))?;
    mount(
        Some(&fd_path(handle)),
        path,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(|error| format!("cannot show {} again: {error}", path.display()))
}

/// Binds `path` onto itself and makes that mount read-only, keeping the flags the
/// kernel locks in a user namespace (`nosuid`, `nodev`, `noexec`, atime). A symbolic
/// link is refused: what it points to is either outside the workspace (Landlock keeps
/// it read-only) or listed on its own.
fn make_read_only(path: &Path) -> Result<bool, String> {
    // Gone since the host listed it (a branch switch, a test's temp dir): nothing is
    // there to protect.
    if is_missing(path) {
        return Ok(false);
    }
    let fail =
        |what: &str, error: &dyn std::fmt::Display| format!("{}: {what}: {error}", path.display());
    let handle = open_path(path)?;
    let before = fs::metadata(fd_path(&handle)).map_err(|error| fail("cannot inspect", &error))?;
    mount(
        Some(&fd_path(&handle)),
        &fd_path(&handle),
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(|error| fail("cannot bind", &error))?;
    let flags = locked_flags(path).map_err(|error| fail("cannot read its mount flags", &error))?;
    mount(
        None::<&str>,
        path,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | flags,
        None::<&str>,
    )
    .map_err(|error| fail("cannot make it read-only", &error))?;
    // The path must still lead to the same file, now on a read-only mount.
    let after = open_path(path)?;
    let now = fs::metadata(fd_path(&after)).map_err(|error| fail("cannot inspect", &error))?;
    let read_only = statvfs(&fd_path(&after))
        .map(|stats| stats.flags().contains(FsFlags::ST_RDONLY))
        .unwrap_or(false);
    if (now.dev(), now.ino()) != (before.dev(), before.ino()) || !read_only {
        return Err(format!("{}: did not stay read-only", path.display()));
    }
    Ok(true)
}

/// Puts an empty, read-only directory (a tmpfs) over a directory, or the empty
/// `/dev/null` over a file. Says whether it did: a path the view does not show at all
/// (it was under the host's `/tmp`) needs nothing.
fn hide(path: &Path) -> Result<bool, String> {
    if is_missing(path) {
        return Ok(false);
    }
    let handle = open_path(path)?;
    let target = fd_path(&handle);
    let metadata = fs::metadata(&target)
        .map_err(|error| format!("{}: cannot inspect: {error}", path.display()))?;
    let mounted = if metadata.is_dir() {
        mount(
            Some("tmpfs"),
            &target,
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC | MsFlags::MS_RDONLY,
            Some("mode=0500"),
        )
    } else {
        mount(
            Some("/dev/null"),
            &target,
            None::<&str>,
            MsFlags::MS_BIND,
            None::<&str>,
        )
    };
    mounted.map_err(|error| format!("{}: cannot hide: {error}", path.display()))?;
    let shown = fs::metadata(path)
        .map_err(|error| format!("{}: cannot inspect: {error}", path.display()))?;
    if (shown.dev(), shown.ino()) == (metadata.dev(), metadata.ino()) {
        return Err(format!("{}: still visible after hiding it", path.display()));
    }
    Ok(true)
}

/// The mount flags of the mount holding `path` that a remount must repeat.
fn locked_flags(path: &Path) -> nix::Result<MsFlags> {
    let flags = statvfs(path)?.flags();
    let pairs = [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ];
    Ok(pairs
        .into_iter()
        .filter(|(statvfs_flag, _)| flags.contains(*statvfs_flag))
        .fold(MsFlags::empty(), |all, (_, mount_flag)| all | mount_flag))
}

/// A handle on `path` itself (`O_PATH`), refusing a symbolic link as its last part.
fn open_path(path: &Path) -> Result<File, String> {
    // The access mode is ignored with `O_PATH`; std needs one named.
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_NOFOLLOW)
        .open(path)
        .map_err(|error| match error.raw_os_error() {
            Some(libc::ELOOP) => format!("{} is a symbolic link", path.display()),
            _ => format!("cannot open {}: {error}", path.display()),
        })
}

/// The path through which the kernel reaches what a handle refers to.
fn fd_path(handle: &File) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", handle.as_raw_fd()))
}

/// Nothing at `path` (not even a dangling link).
fn is_missing(path: &Path) -> bool {
    fs::symlink_metadata(path).is_err_and(|error| error.kind() == std::io::ErrorKind::NotFound)
}

fn is_real_dir(path: &str) -> bool {
    fs::symlink_metadata(path).is_ok_and(|metadata| metadata.is_dir())
}
