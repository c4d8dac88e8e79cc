//! A spawned command's process group, so that stopping a command also stops
//! everything it started (a test runner's workers, `sleep 100 &`).
//!
//! Owns: putting a command in a group of its own, and signalling that group.
//! Does not own: spawning, time limits or output; the callers (`lint`, `exec --done`)
//! keep those.
//! Invariant: a [`ProcessGroup`] dropped while armed kills its group, so a dropped
//! future leaves nothing of the command running. Callers signal the group before they
//! reap the leader: until then the leader's id, which names the group, cannot be
//! reused by an unrelated process.

use std::time::Duration;

use tokio::process::{Child, Command};

/// Makes the command lead a new process group when it is spawned.
pub fn isolate(command: &mut Command) {
    #[cfg(unix)]
    command.process_group(0);
    #[cfg(not(unix))]
    let _ = command;
}

/// The process group a spawned [`isolate`]d command leads; killed on drop unless
/// disarmed.
#[derive(Debug)]
pub struct ProcessGroup {
    leader: Option<u32>,
}

impl ProcessGroup {
    pub fn of(child: &Child) -> Self {
        Self { leader: child.id() }
    }

    /// The command finished on its own; leave whatever it left behind alone.
    pub fn disarm(mut self) {
        self.leader = None;
    }

    /// Kills every process of the group at once.
    pub fn kill(mut self) {
        self.signal(Stop::Kill);
        self.leader = None;
    }

    /// Asks the group to stop (SIGTERM), gives the leader `grace` to exit (on Linux,
    /// where duet can see that without reaping it; elsewhere none), then kills whatever
    /// of the group is left and reaps the leader.
    pub async fn terminate(mut self, child: &mut Child, grace: Duration) {
        self.signal(Stop::Terminate);
        // Wait without reaping: polling `try_wait` would reap the leader and free its
        // id before the group is killed.
        let deadline = tokio::time::Instant::now() + grace;
        while tokio::time::Instant::now() < deadline && self.leader_running() {
            tokio::time::sleep(POLL).await;
        }
        self.signal(Stop::Kill);
        self.leader = None;
        // Killed above; waiting only collects the exit status (an error means it was
        // collected already). A leader stuck past the grace is left to the runtime.
        let _ = tokio::time::timeout(grace, child.wait()).await;
    }

    fn signal(&self, stop: Stop) {
        #[cfg(unix)]
        if let Some(pid) = self.leader.and_then(|id| i32::try_from(id).ok()) {
            use nix::sys::signal::{Signal, killpg};
            let signal = match stop {
                Stop::Terminate => Signal::SIGTERM,
                Stop::Kill => Signal::SIGKILL,
            };
            // The group may already be gone; there is nothing else to do then.
            let _ = killpg(nix::unistd::Pid::from_raw(pid), signal);
        }
        #[cfg(not(unix))]
        let _ = stop;
    }

    /// Whether the leader still runs (an exited leader waiting to be reaped does not).
    fn leader_running(&self) -> bool {
        #[cfg(target_os = "linux")]
        if let Some(id) = self.leader {
            return leader_running(id);
        }
        false
    }
}

/// Whether the process `pid` still runs: it exists and is not a zombie waiting to be
/// reaped. Looking does not reap it, so the group it leads can still be signalled.
#[cfg(target_os = "linux")]
pub fn leader_running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !is_zombie(&stat))
}

/// How often [`ProcessGroup::terminate`] looks whether the leader has exited.
const POLL: Duration = Duration::from_millis(20);

#[derive(Clone, Copy)]
enum Stop {
    Terminate,
    Kill,
}

/// Whether a `/proc/PID/stat` line describes a zombie: the state is the first field
/// after the command name, which is in parentheses and may itself contain any byte.
#[cfg(any(target_os = "linux", test))]
fn is_zombie(stat: &str) -> bool {
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .is_some_and(|state| state == "Z" || state == "X")
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.signal(Stop::Kill);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zombie_state_is_read_after_the_command_name() {
        assert!(is_zombie("42 (sh) Z 1 42 42 0"));
        assert!(!is_zombie("42 (a) Z (b) S 1 42"));
        assert!(!is_zombie("42 (sleep) S 1 42 42 0"));
    }
}
