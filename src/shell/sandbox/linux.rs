//! The Linux mechanisms behind the sandbox: a network namespace (inside a user
//! namespace of its own where possible) and a Landlock ruleset.
//!
//! Owns: the system calls and what each outcome means for the report. Does not own:
//! the order of the steps or the report file ([`super::launcher`]).
//! Invariant: called only from the single-threaded launcher, before it `exec`s; each
//! function says what it achieved and never claims more.

use std::os::fd::AsRawFd as _;
use std::path::{Path, PathBuf};

use caps::{CapSet, Capability};
use landlock::{
    ABI, Access as _, AccessFs, LandlockStatus, RestrictionStatus, Ruleset, RulesetAttr as _,
    RulesetCreatedAttr as _, RulesetError, RulesetStatus, path_beneath_rules,
};
use nix::libc;
use nix::sched::{CloneFlags, unshare};
use nix::sys::socket::{
    AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol, SockType, recv, sendto, socket,
};
use nix::unistd::{Gid, Uid, geteuid, getgid, getuid};

use super::{NetworkIsolation, TARGET_LANDLOCK_ABI, WriteLimits};

/// Device files commands write to in ordinary use: the terminal (duet's own markers go
/// to `/dev/tty`), the bit buckets, shared memory for multiprocessing.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/shm",
];
/// The loopback interface is the first one in every new network namespace.
const LOOPBACK_INDEX: i32 = 1;

/// Moves this process into a new network namespace. Anyone else needs a user
/// namespace for that, mapping just their own ids; root creates the network namespace
/// directly, keeping its power over every file, and gives up the capabilities that
/// would let its shell rejoin the host's network.
pub(super) fn isolate_network() -> Result<NetworkIsolation, String> {
    if geteuid().is_root() {
        return Ok(match unshare(CloneFlags::CLONE_NEWNET) {
            Ok(()) => NetworkIsolation::Isolated {
                loopback_up: bring_up_loopback().is_ok(),
                locked: drop_escape_capabilities().is_ok(),
            },
            Err(error) => NetworkIsolation::Open {
                why: format!("cannot create a network namespace ({error})"),
            },
        });
    }
    let (uid, gid) = (getuid(), getgid());
    match unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET) {
        Ok(()) => {
            map_own_ids(uid, gid)?;
            Ok(NetworkIsolation::Isolated {
                loopback_up: bring_up_loopback().is_ok(),
                locked: true,
            })
        }
        Err(error) => Ok(NetworkIsolation::Open {
            why: format!(
                "user namespaces are not available to this user ({error}), and without one \
                 only root may create a network namespace"
            ),
        }),
    }
}

/// Maps the caller's ids to themselves in its new user namespace, so files keep their
/// owners. (A user may map only their own ids.)
fn map_own_ids(uid: Uid, gid: Gid) -> Result<(), String> {
    let write = |file: &str, text: &str| {
        std::fs::write(format!("/proc/self/{file}"), text)
            .map_err(|error| format!("cannot write /proc/self/{file}: {error}"))
    };
    write("setgroups", "deny")?;
    write("gid_map", &format!("{gid} {gid} 1\n"))?;
    write("uid_map", &format!("{uid} {uid} 1\n"))
}

/// Takes from root's shell what would let it leave the namespace: `setns` back into
/// the host's (CAP_SYS_ADMIN) and driving a process outside it (CAP_SYS_PTRACE). The
/// bounding set caps what the shell gets at `exec`; the inheritable set is cleared of
/// them too, as it survives `exec`.
fn drop_escape_capabilities() -> Result<(), caps::errors::CapsError> {
    for capability in [Capability::CAP_SYS_ADMIN, Capability::CAP_SYS_PTRACE] {
        caps::drop(None, CapSet::Bounding, capability)?;
        caps::drop(None, CapSet::Inheritable, capability)?;
    }
    Ok(())
}

/// Sets the namespace's loopback interface up with one rtnetlink request, so servers
/// the commands start on 127.0.0.1 are reachable from inside.
fn bring_up_loopback() -> Result<(), String> {
    let fail = |what: &str, error: nix::Error| format!("{what}: {error}");
    let socket = socket(
        AddressFamily::Netlink,
        SockType::Raw,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkRoute,
    )
    .map_err(|error| fail("netlink socket", error))?;
    let request = link_up_request(LOOPBACK_INDEX);
    sendto(
        socket.as_raw_fd(),
        &request,
        &NetlinkAddr::new(0, 0),
        MsgFlags::empty(),
    )
    .map_err(|error| fail("netlink send", error))?;
    let mut answer = [0_u8; 512];
    let length = recv(socket.as_raw_fd(), &mut answer, MsgFlags::empty())
        .map_err(|error| fail("netlink receive", error))?;
    acknowledged(&answer[..length])
}

/// `RTM_NEWLINK` asking for interface `index` to be up, with an acknowledgement:
/// an `nlmsghdr` followed by an `ifinfomsg`, in native byte order.
fn link_up_request(index: i32) -> [u8; 32] {
    let mut message = [0_u8; 32];
    let flags = u16::try_from(libc::NLM_F_REQUEST | libc::NLM_F_ACK).unwrap_or_default();
    let up = u32::try_from(libc::IFF_UP).unwrap_or_default();
    message[0..4].copy_from_slice(&32_u32.to_ne_bytes());
    message[4..6].copy_from_slice(&libc::RTM_NEWLINK.to_ne_bytes());
    message[6..8].copy_from_slice(&flags.to_ne_bytes());
    message[8..12].copy_from_slice(&1_u32.to_ne_bytes());
    // Bytes 12..16 (port id) and 16..20 (family, padding, device type) stay zero.
    message[20..24].copy_from_slice(&index.to_ne_bytes());
    message[24..28].copy_from_slice(&up.to_ne_bytes());
    message[28..32].copy_from_slice(&up.to_ne_bytes());
    message
}

/// Reads the kernel's answer: an `NLMSG_ERROR` message whose error code is 0.
fn acknowledged(answer: &[u8]) -> Result<(), String> {
    let field = |range: std::ops::Range<usize>| answer.get(range).map(<[u8]>::to_vec);
    let kind = field(4..6).and_then(|bytes| Some(u16::from_ne_bytes(bytes.try_into().ok()?)));
    let code = field(16..20).and_then(|bytes| Some(i32::from_ne_bytes(bytes.try_into().ok()?)));
    match (kind, code) {
        (Some(kind), Some(0)) if i32::from(kind) == libc::NLMSG_ERROR => Ok(()),
        (Some(kind), Some(code)) if i32::from(kind) == libc::NLMSG_ERROR => Err(format!(
            "the kernel refused: {}",
            nix::Error::from_raw(-code)
        )),
        _ => Err("unexpected netlink answer".into()),
    }
}

/// Lets this process (and what it runs) write only beneath `writable` and the device
/// files; reading and executing stay allowed everywhere.
pub(super) fn limit_writes(writable: &[PathBuf]) -> WriteLimits {
    match restrict(writable) {
        Ok(status) => limits_from(&status),
        Err(error) => WriteLimits::Unlimited {
            why: format!("Landlock failed: {error}"),
        },
    }
}

fn restrict(writable: &[PathBuf]) -> Result<RestrictionStatus, RulesetError> {
    let abi = ABI::from(i32::from(TARGET_LANDLOCK_ABI));
    let write_paths = writable
        .iter()
        .map(PathBuf::as_path)
        .chain(DEVICES.iter().map(Path::new));
    Ruleset::default()
        .handle_access(AccessFs::from_all(abi))?
        .create()?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))?
        .add_rules(path_beneath_rules(write_paths, AccessFs::from_all(abi)))?
        .restrict_self()
}

fn limits_from(status: &RestrictionStatus) -> WriteLimits {
    let why = match (&status.ruleset, status.landlock) {
        (
            RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced,
            LandlockStatus::Available { effective_abi, .. },
        ) => {
            let abi = effective_abi.min(ABI::from(i32::from(TARGET_LANDLOCK_ABI)));
            return WriteLimits::Landlock {
                abi: abi.to_string().parse().unwrap_or_default(),
            };
        }
        (_, LandlockStatus::NotEnabled) => {
            "the kernel has Landlock but did not enable it (add `landlock` to the `lsm=` boot parameter)"
        }
        (_, LandlockStatus::NotImplemented) => {
            "the kernel has no Landlock (it needs Linux 5.13 or later, built with Landlock)"
        }
        _ => "Landlock did not enforce the ruleset",
    };
    WriteLimits::Unlimited { why: why.into() }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn the_link_request_asks_for_loopback_up_with_an_ack() {
        let request = link_up_request(1);
        assert_eq!(u32::from_ne_bytes(request[0..4].try_into().unwrap()), 32);
        assert_eq!(
            u16::from_ne_bytes(request[4..6].try_into().unwrap()),
            libc::RTM_NEWLINK
        );
        let flags = u16::from_ne_bytes(request[6..8].try_into().unwrap());
        assert_eq!(i32::from(flags), libc::NLM_F_REQUEST | libc::NLM_F_ACK);
        assert_eq!(i32::from_ne_bytes(request[20..24].try_into().unwrap()), 1);
        let up = u32::from_ne_bytes(request[24..28].try_into().unwrap());
        assert_eq!(up, libc::IFF_UP as u32);
    }

    fn answer(kind: i32, code: i32) -> Vec<u8> {
        let mut bytes = vec![0_u8; 36];
        bytes[4..6].copy_from_slice(&(kind as u16).to_ne_bytes());
        bytes[16..20].copy_from_slice(&code.to_ne_bytes());
        bytes
    }

    #[test]
    fn only_a_zero_error_code_is_an_acknowledgement() {
        assert_eq!(acknowledged(&answer(libc::NLMSG_ERROR, 0)), Ok(()));
        let refused = acknowledged(&answer(libc::NLMSG_ERROR, -libc::EPERM)).unwrap_err();
        assert!(refused.contains("EPERM"), "{refused}");
        assert!(acknowledged(&answer(libc::NLMSG_DONE, 0)).is_err());
        assert!(acknowledged(&[0; 8]).is_err());
    }
}
