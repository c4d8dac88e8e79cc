//! Capabilities in the sandbox: the two the inner launcher needs to build the
//! filesystem view are handed to it across `exec`, and every capability is gone from
//! all five sets before the program starts.
//!
//! Owns: raising the hand-over capabilities (outer launcher) and dropping everything
//! (inner launcher), and reading back that nothing is left.
//! Does not own: when either happens (the launcher's order of steps).
//! Invariant: [`drop_all`] succeeds only if `/proc/self/status` shows every set empty.

use caps::{CapSet, Capability};

/// What the inner launcher needs after `exec`: mounting (`CAP_SYS_ADMIN`) and then
/// emptying its bounding set (`CAP_SETPCAP`).
const HANDED_OVER: [Capability; 2] = [Capability::CAP_SYS_ADMIN, Capability::CAP_SETPCAP];

/// The `/proc/self/status` fields of the five sets.
const SETS: [&str; 5] = ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"];

/// Makes [`HANDED_OVER`] survive the next `exec` as ambient capabilities. Needed only
/// when the process holds them through a user namespace it created: an `exec` by a
/// non-root user would otherwise clear them.
pub(super) fn hand_over_to_exec() -> Result<(), String> {
    for capability in HANDED_OVER {
        caps::raise(None, CapSet::Inheritable, capability)
            .and_then(|()| caps::raise(None, CapSet::Ambient, capability))
            .map_err(|error| format!("cannot keep {capability} across exec: {error}"))?;
    }
    Ok(())
}

/// Empties the ambient, bounding, inheritable, permitted and effective sets, in that
/// order (the bounding set needs `CAP_SETPCAP` while it is still effective), and
/// checks the result.
pub(super) fn drop_all() -> Result<(), String> {
    caps::clear(None, CapSet::Ambient).map_err(|error| format!("ambient set: {error}"))?;
    caps::clear(None, CapSet::Bounding).map_err(|error| format!("bounding set: {error}"))?;
    for set in [CapSet::Inheritable, CapSet::Permitted, CapSet::Effective] {
        caps::clear(None, set).map_err(|error| format!("{set:?} set: {error}"))?;
    }
    let mut left = Vec::new();
    for field in SETS {
        match super::status_field(field) {
            None => return Err(format!("cannot read {field} in /proc/self/status")),
            Some(value) if value.bytes().all(|digit| digit == b'0') => {}
            Some(value) => left.push(format!("{field} {value}")),
        }
    }
    if left.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "capabilities left after dropping them all: {}",
            left.join(", ")
        ))
    }
}
