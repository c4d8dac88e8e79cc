//! The Linux mechanisms behind the sandbox: namespaces (a user namespace wherever the
//! kernel allows one, for root too), the filesystem view, Landlock, capabilities and
//! the system-call filter.
//!
//! Owns: the system calls of both launcher stages and what each outcome means for the
//! report. Does not own: the order of the launcher's steps beyond what the kernel
//! dictates, or the report file ([`super::launcher`]).
//! Invariant: called only from the single-threaded launcher; every function says
//! what it achieved and never claims more than it read back from the kernel.

mod capabilities;
mod landlock;
mod mounts;
mod network;
mod seccomp;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use nix::sched::{CloneFlags, unshare};
use nix::sys::signal::{Signal, raise};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::{Gid, Pid, Uid, getgid, getuid};

use super::launcher::OuterResult;
use super::report::{Confinement, NetworkIsolation, Parts};

/// The namespaces every sandbox gets; the network one unless the config opens it.
fn namespace_flags(allow_network: bool) -> CloneFlags {
    let mut flags = CloneFlags::CLONE_NEWNS
        | CloneFlags::CLONE_NEWPID
        | CloneFlags::CLONE_NEWIPC
        | CloneFlags::CLONE_NEWUTS;
    if !allow_network {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    flags
}

/// Outer stage: moves this process into new namespaces (the process namespace takes
/// effect for its children). A user namespace comes first when the kernel allows one:
/// its capabilities reach only the new namespaces, and mounts made in it cannot be
/// undone from inside. Root without user namespaces creates the others directly.
pub(super) fn enter_namespaces(allow_network: bool) -> Result<OuterResult, String> {
    let (uid, gid) = (getuid(), getgid());
    let flags = namespace_flags(allow_network);
    let user_namespace = match unshare(flags | CloneFlags::CLONE_NEWUSER) {
        Ok(()) => {
            map_ids(uid, gid)?;
            capabilities::hand_over_to_exec()?;
            true
        }
        Err(error) if uid.is_root() => {
            unshare(flags).map_err(|again| {
                format!(
                    "cannot create namespaces: with a user namespace ({error}) or without ({again})"
                )
            })?;
            false
        }
        Err(error) => {
            return Err(format!(
                "cannot create a user namespace ({error}): unprivileged user namespaces are \
                 off on this machine (kernel.unprivileged_userns_clone = 0, or \
                 kernel.apparmor_restrict_unprivileged_userns = 1 without a profile for duet)"
            ));
        }
    };
    let network = if allow_network {
        NetworkIsolation::Allowed
    } else {
        NetworkIsolation::Isolated {
            loopback_up: network::bring_up_loopback().is_ok(),
        }
    };
    let user = if user_namespace {
        "user, "
    } else {
        "(root without a user namespace) "
    };
    Ok(OuterResult {
        namespaces: Ok(format!(
            "{user}mount, process, IPC and host-name namespaces"
        )),
        network,
    })
}

/// Outer stage of a program that shares another sandboxed launcher's loopback (a
/// background server the shell's later commands reach): joins that launcher's user
/// namespace (where it has one) and network namespace, and makes new mount, process,
/// IPC and host-name namespaces of its own as usual.
///
/// The namespaces are opened first and checked on the open descriptors, so a `pid`
/// that ended and was reused names nothing this stage joins by mistake: a network
/// namespace that is this process's own (the host's) is refused.
pub(super) fn join_namespaces(pid: i32) -> Result<OuterResult, String> {
    use std::os::fd::AsFd as _;
    use std::os::unix::fs::MetadataExt as _;
    let open = |name: &str| {
        std::fs::File::open(format!("/proc/{pid}/ns/{name}"))
            .map_err(|error| format!("cannot open the {name} namespace of process {pid}: {error}"))
    };
    let identity = |file: &std::fs::File| {
        file.metadata()
            .map(|meta| (meta.dev(), meta.ino()))
            .map_err(|error| format!("cannot read a namespace: {error}"))
    };
    let own = |name: &str| {
        std::fs::metadata(format!("/proc/self/ns/{name}"))
            .map(|meta| (meta.dev(), meta.ino()))
            .map_err(|error| format!("cannot read this process's {name} namespace: {error}"))
    };
    let (user, net) = (open("user")?, open("net")?);
    if identity(&net)? == own("net")? {
        return Err(format!(
            "process {pid} has the host's network: refusing to share it"
        ));
    }
    let joined_user = identity(&user)? != own("user")?;
    if joined_user {
        nix::sched::setns(user.as_fd(), CloneFlags::CLONE_NEWUSER)
            .map_err(|error| format!("cannot join the user namespace of {pid}: {error}"))?;
        capabilities::hand_over_to_exec()?;
    }
    unshare(namespace_flags(true)).map_err(|error| format!("cannot create namespaces: {error}"))?;
    nix::sched::setns(net.as_fd(), CloneFlags::CLONE_NEWNET)
        .map_err(|error| format!("cannot join the network namespace of {pid}: {error}"))?;
    let user = if joined_user {
        "the shell's user and network namespaces, own "
    } else {
        "(root without a user namespace) the shell's network namespace, own "
    };
    Ok(OuterResult {
        namespaces: Ok(format!(
            "{user}mount, process, IPC and host-name namespaces"
        )),
        network: NetworkIsolation::Isolated {
            loopback_up: network::bring_up_loopback().is_ok(),
        },
    })
}

/// Maps the caller's own ids to themselves in its new user namespace, so its files
/// keep their owner (anyone else's show as `nobody`). A process may map only its own
/// ids from inside the namespace, root included.
fn map_ids(uid: Uid, gid: Gid) -> Result<(), String> {
    let write = |file: &str, text: &str| {
        std::fs::write(format!("/proc/self/{file}"), text)
            .map_err(|error| format!("cannot write /proc/self/{file}: {error}"))
    };
    write("setgroups", "deny")?;
    write("gid_map", &format!("{gid} {gid} 1\n"))?;
    write("uid_map", &format!("{uid} {uid} 1\n"))
}

/// Runs the inner stage and waits for it; returns its status for the outer stage to
/// end with. A signal that ended it ends the outer stage the same way.
pub(super) fn run_stage(program: &Path, argv: &[OsString]) -> std::io::Result<u8> {
    let status = Command::new(program).args(argv).status()?;
    Ok(exit_code(status))
}

fn exit_code(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt as _;
    if let Some(code) = status.code() {
        return u8::try_from(code).unwrap_or(1);
    }
    let signal = status.signal().unwrap_or(nix::libc::SIGKILL);
    // Ended by the same signal where its default action does that; else 128 + n.
    if let Ok(signal) = Signal::try_from(signal) {
        let _ = raise(signal);
    }
    u8::try_from(128 + signal).unwrap_or(255)
}

/// What the inner stage builds.
pub(super) struct Inside<'a> {
    pub workspace: &'a Path,
    pub workspace_read_only: bool,
    pub private_tmp: &'a Path,
    pub writable: &'a [PathBuf],
    pub read_only: &'a [PathBuf],
    pub hidden: &'a [PathBuf],
    pub network: bool,
    /// What Landlock lets the program write, as seen inside (`/tmp`, not the host's
    /// directory behind it).
    pub writable_inside: Vec<PathBuf>,
    pub outer: OuterResult,
}

/// Inner stage: the filesystem view, then `no_new_privs`, Landlock, the system-call
/// filter and no capabilities, in the order the kernel needs (mounting needs
/// capabilities; Landlock and the filter need `no_new_privs` or capabilities).
pub(super) fn confine_inside(inside: &Inside<'_>) -> Confinement {
    // The parent is the outer stage: when it goes, so does this namespace.
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    let namespaces = inside.outer.namespaces.clone().and_then(|created| {
        if std::process::id() == 1 {
            Ok(created)
        } else {
            Err("the launcher is not the first process of its own process namespace".into())
        }
    });
    let mut keep_visible = vec![inside.workspace.to_path_buf()];
    keep_visible.extend(inside.writable.iter().cloned());
    let mut read_only = inside.read_only.to_vec();
    if inside.workspace_read_only {
        read_only.insert(0, inside.workspace.to_path_buf());
    }
    let built = mounts::build(&mounts::View {
        private_tmp: inside.private_tmp,
        keep_visible: &keep_visible,
        read_only: &read_only,
        hidden: inside.hidden,
        network: inside.network,
    });
    let namespaces = namespaces.and_then(|created| {
        built
            .base
            .map(|()| format!("{created}; fresh /proc, minimal /dev, empty /run, private /tmp"))
    });
    // The program starts in the workspace as the new view shows it.
    let _ = nix::unistd::chdir(&std::env::current_dir().unwrap_or_default());
    let protected = built.read_only.map(|count| match count {
        1 => "1 path read-only".to_string(),
        count => format!("{count} paths read-only"),
    });
    let credentials = built.hidden.map(|count| match count {
        1 => "1 credential path hidden".to_string(),
        count => format!("{count} credential paths hidden"),
    });
    let no_new_privs = nix::sys::prctl::set_no_new_privs()
        .map_err(|error| format!("cannot set no_new_privs: {error}"));
    let writes = landlock::limit_writes(&inside.writable_inside);
    let syscalls = no_new_privs.and_then(|()| {
        seccomp::install().map(|installed| {
            format!(
                "no_new_privs; {} system calls refused (ptrace, mount, namespaces, \
                 kernel keys, BPF, io_uring, clocks, modules, ...)",
                installed.refused
            )
        })
    });
    let capabilities = capabilities::drop_all().map(|()| "none left in any set".to_string());
    Confinement::from_parts(Parts {
        namespaces,
        network: inside.outer.network.clone(),
        writes,
        capabilities,
        syscalls,
        protected,
        credentials,
    })
}

/// Runs the program as a child and stays the namespace's init: reaps every process
/// that ends, and returns the program's status when it ends (128 + the signal when a
/// signal ended it). Ending then ends everything still in the namespace.
pub(super) fn run_as_init(program: &OsString, args: &[OsString]) -> std::io::Result<u8> {
    let child = Command::new(program).args(args).spawn()?;
    let program_pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(-1));
    loop {
        match waitpid(None, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == program_pid => {
                return Ok(u8::try_from(code).unwrap_or(1));
            }
            Ok(WaitStatus::Signaled(pid, signal, _)) if pid == program_pid => {
                return Ok(u8::try_from(128 + signal as i32).unwrap_or(255));
            }
            Ok(_) | Err(nix::Error::EINTR) => {}
            Err(error) => return Err(std::io::Error::from(error)),
        }
    }
}

/// A field of `/proc/self/status` (`Seccomp`, `CapEff`, ...), trimmed.
fn status_field(name: &str) -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|line| {
        let (field, value) = line.split_once(':')?;
        (field == name).then(|| value.trim().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A launcher told to share the network of a process on the host's network (its
    /// shell died and the pid went to another program) refuses before joining anything.
    #[test]
    fn sharing_the_hosts_network_is_refused() {
        let own = i32::try_from(std::process::id()).expect("a pid");
        let error = join_namespaces(own).expect_err("the test's own network is the host's");
        assert!(error.contains("host's network"), "{error}");
        let error = join_namespaces(i32::MAX).expect_err("no such process");
        assert!(error.contains("cannot open"), "{error}");
    }
}
