//! Background jobs: commands the model started with `background: true`, each in a
//! fresh shell of its own inside the session's sandbox, kept running while the agent
//! works against them (a dev server it then `curl`s).
//!
//! Owns: the registry of jobs (ids `bg1`, `bg2`, ...), the limit on how many run at
//! once, each job's output in a bounded ring buffer with a read cursor, stopping a job
//! (SIGTERM to its process group, SIGKILL after a grace), and killing every job when
//! the registry is dropped.
//! Does not own: building the confined command (the [`super::Shell`] does it through
//! the [`super::sandbox::Sandbox`]), permission (the `shell` tool asks first), or
//! wording for the model (the tools).
//! Invariant: no job outlives the registry: dropping it kills every job's process
//! group; a job's process group is only signalled while its leader is unreaped, so a
//! signal never reaches a group whose id was reused; when a job's leader ends, what
//! is left of its group is killed before the leader is reaped.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tempfile::TempDir;
use tokio::io::AsyncReadExt as _;
use tokio::process::Child;
use tokio::sync::watch;
use tokio::time::Instant;

use super::ShellExit;
use super::sandbox::Resident;

/// How many jobs may run at once.
pub const MAX_RUNNING: usize = 8;
/// How much of each job's output is kept: the newest bytes.
pub const RING_BYTES: usize = 256 * 1024;
/// How often a job's leader is looked at to see whether it ended.
#[cfg(target_os = "linux")]
const POLL: Duration = Duration::from_millis(50);
/// After the leader ended, how long its output pipes get to drain.
const DRAIN_GRACE: Duration = Duration::from_millis(500);
/// After SIGKILL, how long stopping waits for the job to be reaped.
const KILL_WAIT: Duration = Duration::from_secs(2);

/// Why a job could not be started, found or stopped.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("{running} background jobs are running already ({ids}), the most at once")]
    Full { running: usize, ids: String },
    #[error("there is no background job `{id}` ({known})")]
    NotFound { id: String, known: String },
    #[error("could not start the background command: {0}")]
    Start(String),
}

/// The newest bytes of an output stream, with the count of those dropped to keep
/// within the capacity. Offsets count every byte ever pushed, so a reader's cursor
/// stays meaningful after older bytes were dropped.
#[derive(Debug)]
pub struct Ring {
    bytes: VecDeque<u8>,
    capacity: usize,
    /// Every byte ever pushed.
    total: u64,
}

impl Ring {
    pub fn new(capacity: usize) -> Self {
        Self {
            bytes: VecDeque::new(),
            capacity,
            total: 0,
        }
    }

    pub fn push(&mut self, data: &[u8]) {
        self.total += data.len() as u64;
        // Only the tail of a chunk bigger than the whole buffer can survive.
        let data = &data[data.len().saturating_sub(self.capacity)..];
        let excess = (self.bytes.len() + data.len()).saturating_sub(self.capacity);
        self.bytes.drain(..excess);
        self.bytes.extend(data);
    }

    /// Bytes dropped so far to stay within the capacity.
    pub fn dropped(&self) -> u64 {
        self.total - self.bytes.len() as u64
    }

    /// The offset just past the newest byte.
    pub fn end(&self) -> u64 {
        self.total
    }

    /// The bytes kept from offset `from` on, and how many bytes from `from` on were
    /// dropped before they could be read.
    pub fn since(&self, from: u64) -> (Vec<u8>, u64) {
        let first_kept = self.dropped();
        let lost = first_kept.saturating_sub(from);
        let skip = usize::try_from(from.saturating_sub(first_kept)).unwrap_or(usize::MAX);
        (self.bytes.iter().skip(skip).copied().collect(), lost)
    }
}

/// Whether a job runs or how it ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobState {
    Running,
    Ended(ShellExit),
}

/// A job as people and the model see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobView {
    pub id: String,
    pub command: String,
    /// The job's process group (its leader's pid, on the host).
    pub pid: u32,
    pub cwd: PathBuf,
    pub state: JobState,
    /// How long it ran: until now, or until it ended.
    pub elapsed: Duration,
}

/// Output read from a job since the last read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobOutput {
    pub view: JobView,
    /// The new output, as text (terminal control removed).
    pub text: String,
    /// New bytes dropped from the ring before this read could see them.
    pub lost: u64,
}

/// What a job's watcher and its readers share.
#[derive(Debug)]
struct Shared {
    ring: Ring,
    /// The ring offset the last read ended at.
    read: u64,
    exit: Option<(ShellExit, Instant)>,
    /// The leader was reaped: its id may name another process now.
    reaped: bool,
}

#[derive(Debug)]
struct Job {
    id: String,
    command: String,
    pid: u32,
    cwd: PathBuf,
    started: Instant,
    shared: Arc<Mutex<Shared>>,
    ended: watch::Receiver<bool>,
    /// The launcher's report directory, kept while the job may run.
    _report_dir: Option<TempDir>,
    /// Counts the job as a program that stays running in the sandbox, so protected
    /// names appearing between commands are taken back. Released only once a command
    /// started after the job ended has checked for them ([`Jobs::release_ended`]).
    resident: Option<Resident>,
}

impl Job {
    fn view(&self) -> JobView {
        let shared = lock(&self.shared);
        let (state, elapsed) = match &shared.exit {
            Some((exit, at)) => (
                JobState::Ended(exit.clone()),
                at.saturating_duration_since(self.started),
            ),
            None => (JobState::Running, self.started.elapsed()),
        };
        JobView {
            id: self.id.clone(),
            command: self.command.clone(),
            pid: self.pid,
            cwd: self.cwd.clone(),
            state,
            elapsed,
        }
    }

    fn running(&self) -> bool {
        lock(&self.shared).exit.is_none()
    }

    fn signal(&self, signal: Signal) {
        signal_group(&lock(&self.shared), self.pid, signal);
    }
}

#[derive(Clone, Copy, Debug)]
enum Signal {
    Terminate,
    Kill,
}

/// Signals the group `pid` leads unless its leader was reaped (the caller holds the
/// lock, so reaping cannot happen in between).
fn signal_group(shared: &Shared, pid: u32, signal: Signal) {
    if shared.reaped {
        return;
    }
    #[cfg(unix)]
    if let Ok(pid) = i32::try_from(pid) {
        use nix::sys::signal::{Signal as Nix, killpg};
        let signal = match signal {
            Signal::Terminate => Nix::SIGTERM,
            Signal::Kill => Nix::SIGKILL,
        };
        // The group may be gone already; nothing else to do then.
        let _ = killpg(nix::unistd::Pid::from_raw(pid), signal);
    }
    #[cfg(not(unix))]
    let _ = (pid, signal);
}

/// A job about to be registered: the spawned child and what it needs kept.
pub(super) struct Spawned {
    pub child: Child,
    pub command: String,
    pub cwd: PathBuf,
    pub report_dir: Option<TempDir>,
    pub resident: Option<Resident>,
}

#[derive(Debug, Default)]
struct Registry {
    jobs: Vec<Job>,
    next: u64,
}

/// The session's background jobs.
#[derive(Debug)]
pub struct Jobs {
    registry: Mutex<Registry>,
    max_running: usize,
    ring_bytes: usize,
}

impl Default for Jobs {
    fn default() -> Self {
        Self::new(MAX_RUNNING, RING_BYTES)
    }
}

impl Jobs {
    pub fn new(max_running: usize, ring_bytes: usize) -> Self {
        Self {
            registry: Mutex::default(),
            max_running,
            ring_bytes,
        }
    }

    /// Refuses when as many jobs run as may.
    pub fn check_room(&self) -> Result<(), JobError> {
        let registry = lock(&self.registry);
        let running: Vec<&str> = registry
            .jobs
            .iter()
            .filter(|job| job.running())
            .map(|job| job.id.as_str())
            .collect();
        if running.len() >= self.max_running {
            return Err(JobError::Full {
                running: running.len(),
                ids: running.join(", "),
            });
        }
        Ok(())
    }

    /// Registers a spawned job (it must lead its own process group) and starts
    /// watching it; returns its id. Must run inside a tokio runtime. When the limit
    /// was reached meanwhile, the job is killed and refused.
    pub(super) fn add(&self, spawned: Spawned) -> Result<JobView, JobError> {
        let Spawned {
            mut child,
            command,
            cwd,
            report_dir,
            resident,
        } = spawned;
        let Some(pid) = child.id() else {
            return Err(JobError::Start(
                "it exited before it could be watched".into(),
            ));
        };
        let shared = Arc::new(Mutex::new(Shared {
            ring: Ring::new(self.ring_bytes),
            read: 0,
            exit: None,
            reaped: false,
        }));
        if let Err(full) = self.check_room() {
            signal_group(&lock(&shared), pid, Signal::Kill);
            // Reaped by the runtime once killed.
            drop(child);
            return Err(full);
        }
        let (ended_tx, ended) = watch::channel(false);
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        tokio::spawn(watch_job(
            child,
            pid,
            Arc::clone(&shared),
            ended_tx,
            stdout,
            stderr,
        ));
        let mut registry = lock(&self.registry);
        registry.next += 1;
        let job = Job {
            id: format!("bg{}", registry.next),
            command,
            pid,
            cwd,
            started: Instant::now(),
            shared,
            ended,
            _report_dir: report_dir,
            resident,
        };
        let view = job.view();
        registry.jobs.push(job);
        Ok(view)
    }

    /// The process id of a job still running (the oldest), whose network namespace a
    /// new shell can share.
    pub(super) fn running_pid(&self) -> Option<i32> {
        lock(&self.registry)
            .jobs
            .iter()
            .find(|job| job.running())
            .and_then(|job| i32::try_from(job.pid).ok())
    }

    /// Every job, oldest first.
    pub fn list(&self) -> Vec<JobView> {
        lock(&self.registry).jobs.iter().map(Job::view).collect()
    }

    /// The output of job `id` since the last read, and its state.
    pub fn read(&self, id: &str) -> Result<JobOutput, JobError> {
        let registry = lock(&self.registry);
        let job = find(&registry, id)?;
        let view = job.view();
        let mut shared = lock(&job.shared);
        let (mut bytes, lost) = shared.ring.since(shared.read);
        let mut end = shared.ring.end();
        // A character cut by the read's end waits for the next read, unless no more
        // output is coming.
        if view.state == JobState::Running
            && let Err(error) = std::str::from_utf8(&bytes)
            && error.error_len().is_none()
        {
            let cut = bytes.len() - error.valid_up_to();
            bytes.truncate(error.valid_up_to());
            end -= cut as u64;
        }
        shared.read = end;
        let text = String::from_utf8_lossy(&bytes);
        Ok(JobOutput {
            view,
            text: crate::terminal_text::sanitize(&text).into_owned(),
            lost,
        })
    }

    /// Waits until job `id` ends or `window` passes, whichever is first.
    pub async fn settle(&self, id: &str, window: Duration) -> Result<(), JobError> {
        let mut ended = {
            let registry = lock(&self.registry);
            find(&registry, id)?.ended.clone()
        };
        let _ = tokio::time::timeout(window, ended.wait_for(|ended| *ended)).await;
        Ok(())
    }

    /// Stops job `id`: SIGTERM to its process group, SIGKILL after `grace`. A job that
    /// ended already is left as it is.
    pub async fn stop(&self, id: &str, grace: Duration) -> Result<JobView, JobError> {
        let mut ended = {
            let registry = lock(&self.registry);
            let job = find(&registry, id)?;
            job.signal(Signal::Terminate);
            job.ended.clone()
        };
        let ended_in_grace = tokio::time::timeout(grace, ended.wait_for(|ended| *ended))
            .await
            .is_ok();
        if !ended_in_grace {
            {
                let registry = lock(&self.registry);
                find(&registry, id)?.signal(Signal::Kill);
            }
            let _ = tokio::time::timeout(KILL_WAIT, ended.wait_for(|ended| *ended)).await;
        }
        let registry = lock(&self.registry);
        Ok(find(&registry, id)?.view())
    }

    /// Which jobs have ended by now; pass them to [`Jobs::release_ended`] once what
    /// they may have created was checked for.
    pub(super) fn ended_ids(&self) -> Vec<String> {
        lock(&self.registry)
            .jobs
            .iter()
            .filter(|job| job.resident.is_some() && !job.running())
            .map(|job| job.id.clone())
            .collect()
    }

    /// Stops counting the ended jobs `ids` as programs running in the sandbox.
    pub(super) fn release_ended(&self, ids: &[String]) {
        for job in &mut lock(&self.registry).jobs {
            if ids.contains(&job.id) {
                job.resident = None;
            }
        }
    }

    /// Kills every job's process group at once.
    pub fn kill_all(&self) {
        for job in &lock(&self.registry).jobs {
            job.signal(Signal::Kill);
        }
    }
}

impl Drop for Jobs {
    fn drop(&mut self) {
        self.kill_all();
    }
}

fn find<'a>(registry: &'a Registry, id: &str) -> Result<&'a Job, JobError> {
    let id = id.trim();
    registry
        .jobs
        .iter()
        .find(|job| job.id == id)
        .ok_or_else(|| JobError::NotFound {
            id: id.to_string(),
            known: if registry.jobs.is_empty() {
                "none was started".into()
            } else {
                let ids: Vec<&str> = registry.jobs.iter().map(|job| job.id.as_str()).collect();
                format!("known: {}", ids.join(", "))
            },
        })
}

/// Collects a job's output and, once its leader ended, kills what is left of its
/// group, reaps the leader and records how it ended.
async fn watch_job(
    mut child: Child,
    pid: u32,
    shared: Arc<Mutex<Shared>>,
    ended: watch::Sender<bool>,
    stdout: Option<tokio::process::ChildStdout>,
    stderr: Option<tokio::process::ChildStderr>,
) {
    let drains = tokio::spawn({
        let shared = Arc::clone(&shared);
        async move {
            futures::join!(drain(stdout, &shared), drain(stderr, &shared));
        }
    });
    let status = wait_leader(&mut child, pid, &shared).await;
    // Output still in the pipes; a process that left the group may hold them open
    // for ever, so the wait is short.
    let _ = tokio::time::timeout(DRAIN_GRACE, drains).await;
    let exit = match status {
        Some(status) => exit_of(status),
        None => ShellExit {
            code: None,
            signal: None,
        },
    };
    lock(&shared).exit = Some((exit, Instant::now()));
    let _ = ended.send(true);
}

/// Waits for the leader to end without reaping it, so its group can still be killed
/// safely, then kills the group and reaps it.
async fn wait_leader(
    child: &mut Child,
    pid: u32,
    shared: &Mutex<Shared>,
) -> Option<std::process::ExitStatus> {
    #[cfg(target_os = "linux")]
    {
        while crate::process_group::leader_running(pid) {
            tokio::time::sleep(POLL).await;
        }
        let mut guard = lock(shared);
        signal_group(&guard, pid, Signal::Kill);
        // The leader is a zombie now, so this does not block.
        if let Ok(Some(status)) = child.try_wait() {
            guard.reaped = true;
            return Some(status);
        }
    }
    // Elsewhere duet cannot see the leader end without reaping it: its group is
    // killed right after instead, with the small risk that its id was reused.
    let status = child.wait().await.ok();
    let mut guard = lock(shared);
    signal_group(&guard, pid, Signal::Kill);
    guard.reaped = true;
    status
}

async fn drain<R: tokio::io::AsyncRead + Unpin>(reader: Option<R>, shared: &Mutex<Shared>) {
    let Some(mut reader) = reader else {
        return;
    };
    let mut buffer = vec![0; 16 * 1024];
    loop {
        match reader.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(count) => lock(shared).ring.push(&buffer[..count]),
        }
    }
}

fn exit_of(status: std::process::ExitStatus) -> ShellExit {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt as _;
        if let Some(signal) = status.signal() {
            let name = nix::sys::signal::Signal::try_from(signal)
                .map(|signal| signal.as_str().to_string())
                .unwrap_or_else(|_| format!("signal {signal}"));
            return ShellExit {
                code: None,
                signal: Some(name),
            };
        }
    }
    ShellExit {
        code: status.code(),
        signal: None,
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_the_newest_bytes_and_counts_the_rest() {
        let mut ring = Ring::new(8);
        ring.push(b"abcde");
        assert_eq!(ring.since(0), (b"abcde".to_vec(), 0));
        ring.push(b"fghij");
        assert_eq!(ring.dropped(), 2);
        assert_eq!(ring.end(), 10);
        // A reader at 0 lost the two dropped bytes; one at 5 lost nothing.
        assert_eq!(ring.since(0), (b"cdefghij".to_vec(), 2));
        assert_eq!(ring.since(5), (b"fghij".to_vec(), 0));
        assert_eq!(ring.since(10), (Vec::new(), 0));
    }

    #[test]
    fn a_chunk_bigger_than_the_ring_keeps_its_tail() {
        let mut ring = Ring::new(4);
        ring.push(b"xy");
        ring.push(b"0123456789");
        assert_eq!(ring.since(0), (b"6789".to_vec(), 8));
        assert_eq!(ring.dropped(), 8);
    }

    #[test]
    fn an_empty_ring_reads_nothing() {
        let ring = Ring::new(0);
        assert_eq!(ring.since(0), (Vec::new(), 0));
        let mut ring = Ring::new(0);
        ring.push(b"abc");
        assert_eq!(ring.since(0), (Vec::new(), 3));
    }
}
