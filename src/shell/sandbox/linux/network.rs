//! The network namespace's loopback interface, brought up with one rtnetlink request
//! so servers the commands start on 127.0.0.1 are reachable from inside.
//!
//! Owns: the netlink message and reading the kernel's answer. Does not own: creating
//! the namespace (the outer launcher's `unshare`).
//! Invariant: success is only claimed on the kernel's acknowledgement.

use std::os::fd::AsRawFd as _;

use nix::libc;
use nix::sys::socket::{
    AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol, SockType, recv, sendto, socket,
};

/// The loopback interface is the first one in every new network namespace.
const LOOPBACK_INDEX: i32 = 1;

/// Sets the namespace's loopback interface up with one rtnetlink request, so servers
/// the commands start on 127.0.0.1 are reachable from inside.
pub(super) fn bring_up_loopback() -> Result<(), String> {
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
