//! Where the sandboxed program may write, enforced by Landlock: beneath the writable
//! paths and the harmless device files. Reading and executing stay allowed everywhere
//! (what must not be read is hidden by the mount layer instead).
//!
//! Owns: the ruleset and what its status means for the report. Does not own: which
//! paths are writable (the host side decides).
//! Invariant: writes are only reported limited when the kernel enforced the ruleset.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access as _, AccessFs, LandlockStatus, RestrictionStatus, Ruleset, RulesetAttr as _,
    RulesetCreatedAttr as _, RulesetError, RulesetStatus, path_beneath_rules,
};

use super::super::{TARGET_LANDLOCK_ABI, WriteLimits};

/// Device files commands write to in ordinary use, as the sandbox's `/dev` shows them:
/// the terminal (duet's own markers go to `/dev/tty`), the bit buckets, the sandbox's
/// own terminals and shared memory.
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
