//! The sandbox's system-call filter: the calls no command needs and an escape would,
//! refused with `EPERM` (and `clone3` with `ENOSYS`, so the C library falls back to
//! `clone`, whose flags the filter can read).
//!
//! Owns: the list of refused calls and conditions, building the BPF programs with
//! `seccompiler`, installing them, and reading back that the kernel has them.
//! Does not own: `no_new_privs` (set before, by the caller: the kernel requires it).
//! Invariant: the filter only ever refuses; it never kills, traps or allows what the
//! rest of the sandbox forbids, so a missed entry weakens one layer, never another.

use std::collections::BTreeMap;

use nix::libc;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// On x86-64 the same kernel also takes x32 calls: the number with this bit set. A
/// filter keyed on numbers must refuse both spellings.
#[cfg(target_arch = "x86_64")]
const X32_BIT: i64 = 0x4000_0000;

/// Calls refused outright: debugging other processes, mounting and namespaces (the
/// sandbox's own walls), kernel keyrings, BPF and perf, io_uring (which can open
/// sockets without `socket()`), setting the clocks, loading kernels and modules,
/// rebooting, swap and accounting, and opening files by handle.
fn refused_calls() -> Vec<(&'static str, i64)> {
    let mut calls = vec![
        ("ptrace", libc::SYS_ptrace),
        ("process_vm_readv", libc::SYS_process_vm_readv),
        ("process_vm_writev", libc::SYS_process_vm_writev),
        ("pidfd_getfd", libc::SYS_pidfd_getfd),
        ("mount", libc::SYS_mount),
        ("umount2", libc::SYS_umount2),
        ("pivot_root", libc::SYS_pivot_root),
        ("chroot", libc::SYS_chroot),
        ("fsopen", libc::SYS_fsopen),
        ("fsconfig", libc::SYS_fsconfig),
        ("fsmount", libc::SYS_fsmount),
        ("fspick", libc::SYS_fspick),
        ("move_mount", libc::SYS_move_mount),
        ("open_tree", libc::SYS_open_tree),
        ("mount_setattr", libc::SYS_mount_setattr),
        ("unshare", libc::SYS_unshare),
        ("setns", libc::SYS_setns),
        ("keyctl", libc::SYS_keyctl),
        ("add_key", libc::SYS_add_key),
        ("request_key", libc::SYS_request_key),
        ("bpf", libc::SYS_bpf),
        ("perf_event_open", libc::SYS_perf_event_open),
        ("userfaultfd", libc::SYS_userfaultfd),
        ("io_uring_setup", libc::SYS_io_uring_setup),
        ("io_uring_enter", libc::SYS_io_uring_enter),
        ("io_uring_register", libc::SYS_io_uring_register),
        ("clock_settime", libc::SYS_clock_settime),
        ("settimeofday", libc::SYS_settimeofday),
        ("clock_adjtime", libc::SYS_clock_adjtime),
        ("kexec_load", libc::SYS_kexec_load),
        ("init_module", libc::SYS_init_module),
        ("finit_module", libc::SYS_finit_module),
        ("delete_module", libc::SYS_delete_module),
        ("reboot", libc::SYS_reboot),
        ("swapon", libc::SYS_swapon),
        ("swapoff", libc::SYS_swapoff),
        ("acct", libc::SYS_acct),
        ("quotactl", libc::SYS_quotactl),
        ("syslog", libc::SYS_syslog),
        ("vhangup", libc::SYS_vhangup),
        ("open_by_handle_at", libc::SYS_open_by_handle_at),
        ("name_to_handle_at", libc::SYS_name_to_handle_at),
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([
        ("adjtimex", libc::SYS_adjtimex),
        ("kexec_file_load", libc::SYS_kexec_file_load),
        ("iopl", libc::SYS_iopl),
        ("ioperm", libc::SYS_ioperm),
        ("uselib", libc::SYS_uselib),
    ]);
    #[cfg(target_arch = "aarch64")]
    calls.extend([
        ("adjtimex", libc::SYS_adjtimex),
        ("kexec_file_load", libc::SYS_kexec_file_load),
    ]);
    calls
}

/// x32's own numbers for calls whose x32 entry differs from the 64-bit one.
#[cfg(target_arch = "x86_64")]
const X32_SPECIFIC: &[i64] = &[
    521, // ptrace
    539, // process_vm_readv
    540, // process_vm_writev
];

/// Namespace flags `clone` may not carry (`unshare` and `setns` are refused whole).
const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWNS,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
];

/// Terminal requests that type input into a terminal or drive the console.
const TERMINAL_REQUESTS: &[libc::c_ulong] = &[libc::TIOCSTI, libc::TIOCLINUX];

/// What the installed filters refuse, for the report.
#[derive(Debug)]
pub(super) struct Installed {
    pub refused: usize,
}

/// Builds both filters and installs them in this thread (the launcher has no other),
/// then checks `/proc/self/status` that the kernel runs a filter for it.
pub(super) fn install() -> Result<Installed, String> {
    let arch = target_arch()?;
    let (refusals, refused) = refusal_program(arch)?;
    let fallback = clone3_program(arch)?;
    seccompiler::apply_filter(&refusals)
        .map_err(|error| format!("the kernel refused the filter: {error}"))?;
    seccompiler::apply_filter(&fallback)
        .map_err(|error| format!("the kernel refused the clone3 filter: {error}"))?;
    match super::status_field("Seccomp").as_deref() {
        Some("2") => Ok(Installed { refused }),
        other => Err(format!(
            "the filter was accepted but /proc/self/status says Seccomp: {}",
            other.unwrap_or("(missing)")
        )),
    }
}

fn target_arch() -> Result<TargetArch, String> {
    TargetArch::try_from(std::env::consts::ARCH).map_err(|_| {
        format!(
            "no system-call filter for the {} architecture",
            std::env::consts::ARCH
        )
    })
}

/// The `EPERM` program; also returns how many calls it refuses outright.
fn refusal_program(arch: TargetArch) -> Result<(BpfProgram, usize), String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    let calls = refused_calls();
    let refused = calls.len();
    for (_, number) in &calls {
        for alias in spellings(*number) {
            rules.insert(alias, Vec::new());
        }
    }
    #[cfg(target_arch = "x86_64")]
    for number in X32_SPECIFIC {
        rules.insert(number | X32_BIT, Vec::new());
    }
    let device_nodes = |mode_argument: u8| -> Result<Vec<SeccompRule>, String> {
        [libc::S_IFCHR, libc::S_IFBLK]
            .into_iter()
            .map(|kind| {
                rule(vec![condition(
                    mode_argument,
                    SeccompCmpOp::MaskedEq(u64::from(libc::S_IFMT)),
                    u64::from(kind),
                )?])
            })
            .collect()
    };
    #[cfg(target_arch = "x86_64")]
    insert_all(&mut rules, libc::SYS_mknod, device_nodes(1)?);
    insert_all(&mut rules, libc::SYS_mknodat, device_nodes(2)?);
    let vsock = vec![rule(vec![condition(
        0,
        SeccompCmpOp::Eq,
        cast(libc::AF_VSOCK),
    )?])?];
    insert_all(&mut rules, libc::SYS_socket, vsock);
    let namespaces = NAMESPACE_FLAGS
        .iter()
        .map(|&flag| {
            rule(vec![condition(
                0,
                SeccompCmpOp::MaskedEq(cast(flag)),
                cast(flag),
            )?])
        })
        .collect::<Result<Vec<_>, _>>()?;
    insert_all(&mut rules, libc::SYS_clone, namespaces);
    insert_all(&mut rules, libc::SYS_ioctl, terminal_rules()?);
    // x32's ioctl has its own number.
    #[cfg(target_arch = "x86_64")]
    rules.insert(514 | X32_BIT, terminal_rules()?);
    let program = compile(rules, arch, SeccompAction::Errno(errno(libc::EPERM)))?;
    Ok((program, refused))
}

/// The `ioctl` requests refused, on its second argument (a 32-bit request number).
fn terminal_rules() -> Result<Vec<SeccompRule>, String> {
    TERMINAL_REQUESTS
        .iter()
        .map(|&request| {
            // `c_ulong` is 64 bits on every architecture the filter is built for.
            let request = request & u64::from(u32::MAX);
            rule(vec![condition(1, SeccompCmpOp::Eq, request)?])
        })
        .collect()
}

/// `clone3` passes its flags in memory a filter cannot read; `ENOSYS` makes the C
/// library use `clone` instead.
fn clone3_program(arch: TargetArch) -> Result<BpfProgram, String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for alias in spellings(libc::SYS_clone3) {
        rules.insert(alias, Vec::new());
    }
    compile(rules, arch, SeccompAction::Errno(errno(libc::ENOSYS)))
}

fn compile(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    arch: TargetArch,
    action: SeccompAction,
) -> Result<BpfProgram, String> {
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, action, arch)
        .map_err(|error| format!("cannot build the filter: {error}"))?;
    BpfProgram::try_from(filter).map_err(|error| format!("cannot compile the filter: {error}"))
}

/// The numbers under which a call can be made on this architecture.
fn spellings(number: i64) -> Vec<i64> {
    #[cfg(target_arch = "x86_64")]
    return vec![number, number | X32_BIT];
    #[cfg(not(target_arch = "x86_64"))]
    return vec![number];
}

fn insert_all(
    rules: &mut BTreeMap<i64, Vec<SeccompRule>>,
    number: i64,
    conditions: Vec<SeccompRule>,
) {
    for alias in spellings(number) {
        rules.insert(alias, conditions.clone());
    }
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
    SeccompRule::new(conditions).map_err(|error| format!("bad filter rule: {error}"))
}

fn condition(argument: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, String> {
    SeccompCondition::new(argument, SeccompCmpArgLen::Dword, op, value)
        .map_err(|error| format!("bad filter condition: {error}"))
}

/// A non-negative C constant as a filter operand.
fn cast(value: libc::c_int) -> u64 {
    u64::try_from(value).unwrap_or_default()
}

fn errno(value: libc::c_int) -> u32 {
    u32::try_from(value).unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_programs_compile_for_this_machine() {
        let arch = target_arch().unwrap();
        let (program, refused) = refusal_program(arch).unwrap();
        assert!(refused >= 40, "{refused}");
        assert!(!program.is_empty());
        assert!(!clone3_program(arch).unwrap().is_empty());
    }

    #[test]
    fn the_walls_of_the_sandbox_are_on_the_list() {
        let names: Vec<&str> = refused_calls().iter().map(|(name, _)| *name).collect();
        for wall in [
            "ptrace",
            "process_vm_readv",
            "mount",
            "umount2",
            "pivot_root",
            "unshare",
            "setns",
            "keyctl",
            "bpf",
            "perf_event_open",
            "io_uring_setup",
            "clock_settime",
            "settimeofday",
            "kexec_load",
            "init_module",
            "reboot",
        ] {
            assert!(names.contains(&wall), "{wall} missing");
        }
    }
}
