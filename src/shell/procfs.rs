//! What the shell's processes are doing, read from Linux's `/proc`: which process of
//! the terminal's foreground group is blocked reading the terminal, and which
//! processes belong to the shell's session (to clean them up).
//!
//! Owns: parsing `/proc/<pid>/{stat,syscall,fd,fdinfo,mem}` and the syscall tables.
//! Does not own: deciding when to look (the session waits for a quiet period first) or
//! acting on the answer.
//! Invariant: every question is answered conservatively: anything unreadable or
//! unknown means "not waiting for input", so a busy command is never interrupted by
//! mistake. Elsewhere than Linux on x86_64/aarch64 the answers are always "no".

// The parsers are compiled (and tested) everywhere but only called on Linux.
#![cfg_attr(
    not(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )),
    allow(dead_code)
)]

use std::path::Path;

/// A process blocked on a read from the terminal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct TerminalReader {
    /// Its command name (`/proc/<pid>/comm`).
    pub program: String,
}

/// The process of foreground group `pgrp` that is blocked reading the terminal `tty`
/// (or `/dev/tty`), if the whole group is asleep and one of them is.
///
/// Asked every tick while a command is quiet, so it first looks only at the shell's
/// own descendants (a handful of processes, not every process on the machine); only
/// when one of them seems to wait is the answer confirmed over every process, so a
/// member that left the shell's tree still counts (a busy one means "not waiting").
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
pub(super) fn terminal_reader(shell: i32, pgrp: i32, tty: &Path) -> Option<TerminalReader> {
    if let Some(near) = descendants(shell) {
        reader_among(near, pgrp, tty)?;
    }
    reader_among(processes(), pgrp, tty)
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
fn reader_among(processes: Vec<(i32, Stat)>, pgrp: i32, tty: &Path) -> Option<TerminalReader> {
    let members: Vec<(i32, Stat)> = processes
        .into_iter()
        .filter(|(_, stat)| stat.pgrp == pgrp)
        .collect();
    // A member on a CPU or in disk I/O is working, whatever the others do.
    if members.is_empty() || members.iter().any(|(_, stat)| stat.busy()) {
        return None;
    }
    let pid = members
        .iter()
        .map(|(pid, _)| *pid)
        .find(|&pid| linux::reads_terminal(pid, tty))?;
    let program = std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|name| name.trim_end().to_string())
        .unwrap_or_default();
    Some(TerminalReader { program })
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
pub(super) fn terminal_reader(_shell: i32, _pgrp: i32, _tty: &Path) -> Option<TerminalReader> {
    None
}

/// Every process in session `sid` (the shell is its leader), leader included.
pub(super) fn session_members(sid: i32) -> Vec<i32> {
    processes()
        .into_iter()
        .filter(|(_, stat)| stat.session == sid)
        .map(|(pid, _)| pid)
        .collect()
}

/// How many processes `root` and everything below it are: for the sandbox launcher,
/// its whole process namespace, where orphans are adopted by the namespace's first
/// process. `None` when the tree cannot be read.
pub(super) fn tree_size(root: i32) -> Option<usize> {
    descendants(root).map(|tree| tree.len())
}

/// The fields of `/proc/<pid>/stat` used here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stat {
    state: char,
    pgrp: i32,
    session: i32,
}

impl Stat {
    fn busy(self) -> bool {
        matches!(self.state, 'R' | 'D')
    }
}

/// Parses a stat line. The command name is in parentheses and may itself contain
/// spaces and parentheses, so fields are counted from the last `)`.
fn parse_stat(line: &str) -> Option<Stat> {
    let (_, after_name) = line.rsplit_once(')')?;
    let mut fields = after_name.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    let session = fields.next()?.parse().ok()?;
    Some(Stat {
        state,
        pgrp,
        session,
    })
}

/// Every process whose stat can be read (none where there is no `/proc`).
fn processes() -> Vec<(i32, Stat)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| {
            let pid: i32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
            Some((pid, read_stat(pid)?))
        })
        .collect()
}

/// More processes than a shell's jobs plausibly hold: past this the walk gives up.
const MAX_DESCENDANTS: usize = 4096;

/// `root` and every process below it, from each thread's
/// `/proc/<pid>/task/<tid>/children`. `None` when the tree cannot be read (the root
/// gone, a kernel without those files, a runaway tree): the caller then scans every
/// process instead. A process or thread that ends during the walk is left out, with
/// whatever it had started: nothing that has ended reads the terminal.
fn descendants(root: i32) -> Option<Vec<(i32, Stat)>> {
    if !Path::new(&format!("/proc/{root}/task/{root}/children")).exists() {
        return None;
    }
    let mut found = vec![(root, read_stat(root)?)];
    let mut pending = children(root);
    while let Some(pid) = pending.pop() {
        if found.len() >= MAX_DESCENDANTS {
            return None;
        }
        if let Some(stat) = read_stat(pid) {
            found.push((pid, stat));
            pending.extend(children(pid));
        }
    }
    Some(found)
}

/// The children of every thread of `pid` (none once it has ended).
fn children(pid: i32) -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(|task| {
            let tid = task.ok()?.file_name();
            std::fs::read_to_string(format!("/proc/{pid}/task/{}/children", tid.to_str()?)).ok()
        })
        .flat_map(|list| {
            list.split_whitespace()
                .filter_map(|child| child.parse::<i32>().ok())
                .collect::<Vec<_>>()
        })
        .collect()
}

fn read_stat(pid: i32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The system call a process is blocked in, from `/proc/<pid>/syscall`:
/// `<number> <arg0> ... <arg5> <sp> <pc>`, or `running`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Blocked {
    number: i64,
    args: [u64; 6],
}

fn parse_syscall(line: &str) -> Option<Blocked> {
    let mut fields = line.split_whitespace();
    let number = fields.next()?.parse().ok()?;
    let mut args = [0u64; 6];
    for arg in &mut args {
        let field = fields.next()?;
        *arg = u64::from_str_radix(field.trim_start_matches("0x"), 16).ok()?;
    }
    Some(Blocked { number, args })
}

/// The target fds of an epoll instance, from its `/proc/<pid>/fdinfo` text.
fn epoll_targets(fdinfo: &str) -> Vec<u64> {
    fdinfo
        .lines()
        .filter_map(|line| line.strip_prefix("tfd:"))
        .filter_map(|rest| rest.split_whitespace().next()?.parse().ok())
        .collect()
}

/// The fds whose bits are set in an `fd_set` of `nfds` bits (little-endian words,
/// as on x86_64 and aarch64).
fn fd_set_members(bits: &[u8], nfds: u64) -> Vec<u64> {
    (0..nfds)
        .filter(|&fd| {
            let byte = usize::try_from(fd / 8)
                .ok()
                .and_then(|index| bits.get(index));
            byte.is_some_and(|byte| byte & (1 << (fd % 8)) != 0)
        })
        .collect()
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod linux {
    use std::fs::File;
    use std::os::unix::fs::FileExt as _;
    use std::path::Path;

    use super::{Blocked, epoll_targets, fd_set_members, parse_syscall};

    /// More fds than this in one poll or select is not someone waiting for a key.
    const MAX_WAITED_FDS: u64 = 64;

    enum Wait {
        Read,
        Poll,
        Select,
        Epoll,
    }

    #[cfg(target_arch = "x86_64")]
    fn classify(number: i64) -> Option<Wait> {
        match number {
            0 | 17 | 19 => Some(Wait::Read),
            7 | 271 => Some(Wait::Poll),
            23 | 270 => Some(Wait::Select),
            232 | 281 | 441 => Some(Wait::Epoll),
            _ => None,
        }
    }

    #[cfg(target_arch = "aarch64")]
    fn classify(number: i64) -> Option<Wait> {
        match number {
            63 | 65 | 67 => Some(Wait::Read),
            73 => Some(Wait::Poll),
            72 => Some(Wait::Select),
            22 | 441 => Some(Wait::Epoll),
            _ => None,
        }
    }

    /// Whether `pid` is blocked waiting for input from the terminal and nothing else.
    pub(super) fn reads_terminal(pid: i32, tty: &Path) -> bool {
        let Some(blocked) = std::fs::read_to_string(format!("/proc/{pid}/syscall"))
            .ok()
            .and_then(|line| parse_syscall(&line))
        else {
            return false;
        };
        let fds = match classify(blocked.number) {
            Some(Wait::Read) => Some(vec![blocked.args[0]]),
            Some(Wait::Poll) => polled_fds(pid, &blocked),
            Some(Wait::Select) => selected_fds(pid, &blocked),
            Some(Wait::Epoll) => {
                std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{}", blocked.args[0]))
                    .ok()
                    .map(|info| epoll_targets(&info))
            }
            None => None,
        };
        fds.is_some_and(|fds| !fds.is_empty() && fds.iter().all(|&fd| is_terminal(pid, fd, tty)))
    }

    fn is_terminal(pid: i32, fd: u64, tty: &Path) -> bool {
        std::fs::read_link(format!("/proc/{pid}/fd/{fd}"))
            .is_ok_and(|target| target == tty || target == Path::new("/dev/tty"))
    }

    /// `poll(fds, nfds, ...)`: the fds of the `struct pollfd` array.
    fn polled_fds(pid: i32, blocked: &Blocked) -> Option<Vec<u64>> {
        let [address, count, ..] = blocked.args;
        if count == 0 || count > MAX_WAITED_FDS {
            return None;
        }
        let bytes = read_memory(pid, address, count * 8)?;
        Some(
            bytes
                .chunks_exact(8)
                .filter_map(|entry| {
                    let fd = i32::from_ne_bytes([entry[0], entry[1], entry[2], entry[3]]);
                    u64::try_from(fd).ok()
                })
                .collect(),
        )
    }

    /// `select(nfds, readfds, writefds, ...)`: the read set, when nothing waits to
    /// be written.
    fn selected_fds(pid: i32, blocked: &Blocked) -> Option<Vec<u64>> {
        let [nfds, read_set, write_set, ..] = blocked.args;
        if nfds == 0 || nfds > MAX_WAITED_FDS || read_set == 0 {
            return None;
        }
        let length = nfds.div_ceil(64) * 8;
        if write_set != 0 && !fd_set_members(&read_memory(pid, write_set, length)?, nfds).is_empty()
        {
            return None;
        }
        Some(fd_set_members(&read_memory(pid, read_set, length)?, nfds))
    }

    fn read_memory(pid: i32, address: u64, length: u64) -> Option<Vec<u8>> {
        let file = File::open(format!("/proc/{pid}/mem")).ok()?;
        let mut buffer = vec![0; usize::try_from(length).ok()?];
        file.read_exact_at(&mut buffer, address).ok()?;
        Some(buffer)
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_last_parenthesis() {
        let line = "4242 (my (odd) prog) S 1 4242 4200 34816 4242 4194304 0 0";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                state: 'S',
                pgrp: 4242,
                session: 4200
            })
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn syscall_lines_parse_or_are_rejected() {
        assert_eq!(
            parse_syscall("270 0x1 0x7ffd960569f0 0x0 0x0 0x0 0x0 0x7ffd96056960 0x7f1c"),
            Some(Blocked {
                number: 270,
                args: [1, 0x7ffd960569f0, 0, 0, 0, 0]
            })
        );
        assert_eq!(parse_syscall("running"), None);
        assert_eq!(parse_syscall("-1 0x7ffd 0x1"), None);
    }

    #[test]
    fn epoll_fdinfo_lists_its_targets() {
        let info = "pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1057\n\
                    tfd:        0 events:       19 data:                0  pos:0 ino:3 sdev:18\n\
                    tfd:        7 events:       19 data:                7  pos:0 ino:c sdev:e\n";
        assert_eq!(epoll_targets(info), vec![0, 7]);
    }

    #[test]
    fn fd_sets_are_read_bit_by_bit() {
        let mut bits = [0u8; 8];
        bits[0] = 0b0000_0101;
        bits[1] = 0b1000_0000;
        assert_eq!(fd_set_members(&bits, 16), vec![0, 2, 15]);
        assert_eq!(fd_set_members(&bits, 3), vec![0, 2]);
        assert_eq!(fd_set_members(&[], 3), Vec::<u64>::new());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn descendants_hold_the_root_and_a_child_it_started() {
        let me = i32::try_from(std::process::id()).unwrap();
        if !Path::new(&format!("/proc/{me}/task/{me}/children")).exists() {
            // A kernel built without CONFIG_PROC_CHILDREN: callers scan every process.
            assert!(descendants(me).is_none());
            eprintln!("skipped: this kernel does not list children");
            return;
        }
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let child_pid = i32::try_from(child.id()).unwrap();
        let found = descendants(me);
        child.kill().unwrap();
        child.wait().unwrap();
        let pids: Vec<i32> = found
            .expect("the whole tree was read")
            .into_iter()
            .map(|(pid, _)| pid)
            .collect();
        assert!(pids.contains(&me), "{pids:?}");
        assert!(pids.contains(&child_pid), "{pids:?}");
        assert!(descendants(i32::MAX).is_none(), "no such process");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_in_its_own_session_listing() {
        let line = std::fs::read_to_string("/proc/self/stat").unwrap();
        let session = parse_stat(&line).unwrap().session;
        let pid = i32::try_from(std::process::id()).unwrap();
        assert!(session_members(session).contains(&pid));
    }
}
