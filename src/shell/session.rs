//! One shell process on its own PTY: starting it, running one framed command at a
//! time, stopping a command that overstays (time limit, waiting for input, user
//! interrupt) and tearing the whole process session down.
//!
//! Owns: the PTY, the shell process, the reader thread that feeds the [`Scanner`], the
//! waiter thread that reaps the shell, and the interrupt ladder (Ctrl-C, then killing
//! the foreground process group, then giving the shell up).
//! Does not own: which shell or directory to use and when to replace a session (the
//! [`super::Shell`]), how results are worded for the model (the `shell` tool), or how
//! the sandbox launcher confines the shell (`super::sandbox`).
//! Invariant: every started shell is reaped by its waiter thread, dropping a session
//! signals the shell and every process left in its session, and a sandboxed shell is
//! only returned once its launcher's report shows the promised protections.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use portable_pty::{CommandBuilder, MasterPty, PtySize, native_pty_system};
use tempfile::TempDir;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::framing::{COMMAND_FILE, CWD_FILE, Flavor, Frame, Scanner, new_nonce};
use super::procfs::{self, TerminalReader};
use super::sandbox::{Plan, View};
use super::screen::Screen;
use super::{
    Attendant, End, InputWait, Outcome, Recovery, Request, ShellConfig, ShellError, ShellExit,
    UserKeys,
};

/// The terminal size commands see. Wide, so tools that fit output to the terminal
/// (`ls`, progress bars) rarely wrap or cut lines.
const ROWS: u16 = 50;
const COLUMNS: u16 = 200;
/// How long a new shell may take to run its setup script.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// How often live output is passed on and an input wait is checked for.
const TICK: Duration = Duration::from_millis(100);
/// After Ctrl-C on a user interrupt: short, the agent gives a call 3 s in all.
const CANCEL_GRACE: Duration = Duration::from_millis(1000);
/// After killing the foreground process group, for the shell to print its end marker.
const KILL_GRACE: Duration = Duration::from_millis(500);
/// Output still in flight when the shell exits.
const EXIT_DRAIN: Duration = Duration::from_millis(300);
/// A suspected input wait is confirmed after this long, in case the command's end
/// marker was already on its way.
const INPUT_WAIT_CONFIRM: Duration = Duration::from_millis(100);
/// How long a command given input must be quiet, reading the terminal, before the
/// input is typed: a prompt is printed whole by then.
const INPUT_QUIET: Duration = Duration::from_millis(300);
/// How long a watched command must be quiet, reading the terminal, before its
/// attendant is told it waits: long enough that a command reading between bursts of
/// output is not taken for one asking.
const INPUT_WAIT_NOTICE: Duration = Duration::from_millis(500);
/// The most bytes typed for one press or paste of the attendant's.
const MAX_TYPED_BYTES: usize = 1024;
/// Frames buffered between the reader thread and the session.
const FRAME_BUFFER: usize = 64;
const READ_BUFFER: usize = 64 * 1024;
/// The most of the cwd file read: a path, never more than the kernel's limit.
const MAX_CWD_BYTES: u64 = 4096;

/// Set for every command: pagers print, editors return at once, and prompts for
/// credentials or confirmation fail instead of waiting for a person.
pub(super) const NON_INTERACTIVE_ENV: &[(&str, &str)] = &[
    ("TERM", "xterm-256color"),
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("MANPAGER", "cat"),
    ("SYSTEMD_PAGER", "cat"),
    ("AWS_PAGER", ""),
    ("EDITOR", "true"),
    ("VISUAL", "true"),
    ("GIT_EDITOR", "true"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("GCM_INTERACTIVE", "never"),
    ("DEBIAN_FRONTEND", "noninteractive"),
    ("PIP_NO_INPUT", "1"),
    ("npm_config_yes", "true"),
    // Empty: the shell keeps no history file even if it dies before its setup ran.
    ("HISTFILE", ""),
];

/// Inherited variables that would change how the shell starts or prompts.
pub(super) const REMOVED_ENV: &[&str] = &[
    "PROMPT_COMMAND",
    "PS0",
    "PS1",
    "PS2",
    "PS4",
    "BASH_ENV",
    "ENV",
    "ZDOTDIR",
];

/// Why watching a running command stopped.
enum Stop {
    Ended(i32),
    ShellExited(ShellExit),
    Deadline,
    InputWait(TerminalReader),
    Cancelled,
}

/// What may end a watch early besides the command's end.
#[derive(Clone, Copy)]
struct Alarms<'a> {
    cancel: Option<&'a CancellationToken>,
    /// Quiet time after which an input wait is checked for.
    input_wait: Option<Duration>,
}

impl Alarms<'_> {
    const NONE: Alarms<'static> = Alarms {
        cancel: None,
        input_wait: None,
    };
}

/// A command being watched: its id, its rendered output and the live output sink.
struct Running<'a> {
    id: u64,
    screen: Screen,
    last_output: Instant,
    on_output: &'a mut (dyn FnMut(String) + Send),
    /// Input to type at the command's first wait for keyboard input.
    input: Option<Vec<u8>>,
    /// The person who can type into the command, while their keys can still come.
    attendant: Option<Attendant<'a>>,
    /// The command has the attendant's attention: it is not stopped for waiting.
    focused: bool,
    /// The wait last reported to the attendant, not reported again unchanged.
    reported_wait: Option<InputWait>,
    /// Output or keys came since the wait was reported: it may have changed.
    changed_since_report: bool,
    /// When the attendant's check for a wait last ran.
    wait_checked: Option<Instant>,
}

impl Running<'_> {
    fn output(&mut self, bytes: &[u8]) {
        self.screen.feed(bytes);
        self.last_output = Instant::now();
        self.changed_since_report = true;
    }

    /// Whether to look for a wait to tell the attendant of now. Each look walks the
    /// command's processes: without the attendant's attention, a few times a second
    /// is enough to show a prompt; a wait already reported stands until output or
    /// keys may have changed it.
    fn wait_check_due(&mut self) -> bool {
        if self.attendant.is_none() || (self.reported_wait.is_some() && !self.changed_since_report)
        {
            return false;
        }
        let every = if self.focused {
            TICK
        } else {
            INPUT_WAIT_NOTICE
        };
        let now = Instant::now();
        if self
            .wait_checked
            .is_some_and(|at| now.duration_since(at) < every)
        {
            return false;
        }
        self.wait_checked = Some(now);
        true
    }

    fn flush_live(&mut self) {
        let text = self.screen.take_lines();
        if !text.is_empty() {
            (self.on_output)(text);
            // Front ends take new output to mean the wait is over; a wait still going
            // on is reported afresh.
            self.reported_wait = None;
        }
    }

    /// Tells the attendant the command waits, unless it was told this already.
    fn report_wait(&mut self, program: String) {
        let Some(attendant) = self.attendant.as_mut() else {
            return;
        };
        let wait = InputWait {
            program,
            line: self.screen.cursor_line(),
        };
        if self.reported_wait.as_ref() != Some(&wait) {
            (attendant.on_input_wait)(wait.clone());
            self.reported_wait = Some(wait);
        }
        self.changed_since_report = false;
    }

    fn finish_live(&mut self) {
        let text = self.screen.take_rest();
        if !text.is_empty() {
            (self.on_output)(text);
        }
    }
}

/// How to start one shell.
pub(super) struct Launch<'a> {
    pub program: &'a Path,
    pub flavor: Flavor,
    pub cwd: &'a Path,
    /// The inherited variables the shell gets (the environment policy's).
    pub environment: &'a [(OsString, OsString)],
    /// Start the shell through the sandbox launcher, under this plan, reporting into a
    /// directory under this one.
    pub sandbox: Option<(&'a Plan, &'a Path)>,
    /// The workspace is read-only for this shell.
    pub read_only: bool,
    /// The protected paths mounted read-only for this shell.
    pub protected: &'a [PathBuf],
    /// The sandbox's view the shell starts under.
    pub view: u64,
    /// Share the network namespace (the loopback) of this sandboxed process, where the
    /// network is isolated: a background job's, so its server stays reachable.
    pub join_network: Option<i32>,
}

pub(super) struct Session {
    flavor: Flavor,
    master: Box<dyn MasterPty + Send>,
    writer: Box<dyn Write + Send>,
    pid: i32,
    frames: mpsc::Receiver<Frame>,
    exit: watch::Receiver<Option<ShellExit>>,
    /// The setup script, the command file and the cwd file; removed with the session.
    /// In the sandbox it lies in the private `/tmp`, where commands can write too.
    _scratch: TempDir,
    /// The scratch directory itself, opened before the shell started: files in it are
    /// reached through this handle, never through a path a command could replace.
    scratch_handle: fs::File,
    /// The sandbox launcher's report, where commands cannot reach it.
    report_dir: Option<TempDir>,
    /// The scratch `command` file, kept open: each command is written over the last.
    command_file: fs::File,
    /// The PTY's slave device (`/dev/pts/N`), to recognise reads from the terminal.
    tty: Option<PathBuf>,
    next_id: u64,
    cwd: PathBuf,
    /// The shell's own process group, the terminal's foreground group while no
    /// command runs (in the sandbox the shell is not the process duet started).
    shell_group: Option<i32>,
    /// The sandbox's view this shell was started under.
    pub(super) view: u64,
    /// The protected paths read-only in this shell.
    pub(super) protected: Vec<PathBuf>,
    /// How many processes its sandbox held while it waited at its prompt before any
    /// command: more later means jobs are running. `None` unconfined or unknown.
    idle_population: Option<usize>,
    /// A command was typed and its end not seen: its caller went away mid-run.
    busy: bool,
    /// The shell exited or was given up on; it must be replaced.
    dead: bool,
}

impl Session {
    /// Starts the shell and waits until its setup script has run (and, in the
    /// sandbox, until its launcher's report has been checked).
    pub(super) async fn start(launch: &Launch<'_>) -> Result<Self, ShellError> {
        let Launch {
            flavor,
            cwd,
            sandbox,
            ..
        } = *launch;
        let failed = |reason: String| ShellError::Start {
            program: launch.program.display().to_string(),
            reason,
        };
        let mut scratch = tempfile::Builder::new();
        scratch.prefix("duet-shell-");
        let scratch = match sandbox {
            Some((plan, _)) => scratch.tempdir_in(plan.private_tmp()),
            None => scratch.tempdir(),
        }
        .map_err(|error| failed(format!("cannot create its scratch directory: {error}")))?;
        let report_dir = match sandbox {
            Some((_, reports)) => Some(
                tempfile::Builder::new()
                    .prefix("shell-")
                    .tempdir_in(reports)
                    .map_err(|error| {
                        failed(format!("cannot create its report directory: {error}"))
                    })?,
            ),
            None => None,
        };
        let scratch_handle = fs::File::open(scratch.path())
            .map_err(|error| failed(format!("cannot open its scratch directory: {error}")))?;
        // Where the shell sees its scratch directory: under `/tmp` in the sandbox.
        let seen = |path: &Path| match sandbox {
            Some((plan, _)) => plan.inside_path(path),
            None => path.to_path_buf(),
        };
        let nonce = new_nonce();
        let script = scratch.path().join("init");
        fs::write(&script, flavor.init_script(&nonce, &seen(scratch.path())))
            .map_err(|error| failed(format!("cannot write its setup script: {error}")))?;
        let command_file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(scratch.path().join(COMMAND_FILE))
            .map_err(|error| failed(format!("cannot create its command file: {error}")))?;

        let pty = native_pty_system()
            .openpty(PtySize {
                rows: ROWS,
                cols: COLUMNS,
                pixel_width: 0,
                pixel_height: 0,
            })
            .map_err(|error| failed(format!("cannot open a terminal: {error:#}")))?;
        let child = pty
            .slave
            .spawn_command(command(launch, report_dir.as_ref().map(TempDir::path)))
            .map_err(|error| failed(format!("{error:#}")))?;
        // Only the shell holds the slave side, so its end closes the terminal.
        drop(pty.slave);
        let pid = child
            .process_id()
            .and_then(|pid| i32::try_from(pid).ok())
            .unwrap_or_default();
        let mut killer = child.clone_killer();
        let (exit_tx, exit) = watch::channel(None);
        if let Err(error) = spawn_waiter(child, exit_tx) {
            // Nothing would reap the shell; stop it now rather than leave it running.
            let _ = killer.kill();
            return Err(failed(format!("cannot watch the process: {error}")));
        }

        let (frames_tx, frames) = mpsc::channel(FRAME_BUFFER);
        let reader = pty.master.try_clone_reader();
        let writer = pty.master.take_writer();
        let mut session = Session {
            flavor,
            tty: pty.master.tty_name(),
            master: pty.master,
            writer: Box::new(std::io::sink()),
            pid,
            frames,
            exit,
            _scratch: scratch,
            scratch_handle,
            report_dir,
            command_file,
            next_id: 1,
            cwd: cwd.to_path_buf(),
            shell_group: None,
            view: launch.view,
            protected: launch.protected.to_vec(),
            idle_population: None,
            busy: false,
            dead: false,
        };
        // From here on, dropping `session` cleans the process up.
        session.writer = writer.map_err(|error| failed(format!("{error:#}")))?;
        let reader = reader.map_err(|error| failed(format!("{error:#}")))?;
        spawn_reader(reader, Scanner::new(&nonce), frames_tx)
            .map_err(|error| failed(format!("cannot read its terminal: {error}")))?;
        session
            .type_text(&flavor.source_line(&seen(&script)))
            .map_err(|error| failed(format!("cannot write to its terminal: {error}")))?;
        let report_dir = session
            .report_dir
            .as_ref()
            .map(|dir| dir.path().to_path_buf());
        if let Err(reason) = session.await_ready().await {
            // The launcher's own account says more than "it exited".
            let launch_failure = sandbox
                .zip(report_dir.as_deref())
                .and_then(|((plan, _), dir)| plan.launch_failure(dir));
            return Err(failed(launch_failure.unwrap_or(reason)));
        }
        if let Some(((plan, _), dir)) = sandbox.zip(report_dir.as_deref()) {
            // The setup script ran, but no command has: a shell that got less than the
            // probe promised is dropped (and killed) before it is given one.
            plan.verify(dir).map_err(failed)?;
        }
        // Idle at its prompt, the shell's own group has the terminal.
        session.shell_group = session.master.process_group_leader();
        if sandbox.is_some() {
            session.idle_population = procfs::tree_size(session.pid);
        }
        Ok(session)
    }

    /// Whether processes besides the idle shell live in its sandbox (jobs a command
    /// left running), as far as `/proc` tells; true when it cannot tell.
    pub(super) fn runs_jobs(&self) -> bool {
        match (self.idle_population, procfs::tree_size(self.pid)) {
            (Some(idle), Some(now)) => now > idle,
            _ => true,
        }
    }

    async fn await_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        loop {
            tokio::select! {
                frame = self.frames.recv() => match frame {
                    Some(Frame::Ready) => return Ok(()),
                    Some(_) => {}
                    None => return Err("it closed its terminal while starting".into()),
                },
                _ = self.exit.changed() => {
                    return Err(format!("it exited while starting ({})", self.exit_status()));
                }
                () = tokio::time::sleep_until(deadline) => {
                    return Err(format!(
                        "it did not finish starting within {} s",
                        STARTUP_TIMEOUT.as_secs()
                    ));
                }
            }
        }
    }

    /// Whether the shell must be replaced before the next command: it exited, was
    /// given up on, or is still busy with a command whose caller went away.
    /// The process the session's terminal runs: the sandbox's launcher, where there is
    /// one, whose network namespace a background job may share.
    pub(super) fn pid(&self) -> i32 {
        self.pid
    }

    pub(super) fn unusable(&self) -> bool {
        self.dead || self.busy || self.exit.borrow().is_some()
    }

    /// Runs one command and watches it to its end, its time limit, an input wait or
    /// `cancel`, stopping it in the last three cases.
    pub(super) async fn run(
        &mut self,
        request: Request<'_>,
        config: &ShellConfig,
    ) -> Result<Outcome, ShellError> {
        let Request {
            command,
            timeout,
            cancel,
            on_output,
            input,
            attendant,
        } = request;
        // Ends of earlier, abandoned commands must not be taken for this one's.
        while self.frames.try_recv().is_ok() {}
        let id = self.next_id;
        self.next_id += 1;
        let handoff = |error: std::io::Error| ShellError::Handoff(error.to_string());
        self.save_command(command).map_err(handoff)?;
        self.busy = true;
        self.type_text(&self.flavor.run_line(id)).map_err(handoff)?;

        let started = Instant::now();
        let mut running = Running {
            id,
            screen: Screen::new(usize::from(ROWS)),
            last_output: started,
            on_output,
            input: input.map(|text| text.as_bytes().to_vec()),
            attendant,
            focused: false,
            reported_wait: None,
            changed_since_report: false,
            wait_checked: None,
        };
        let alarms = Alarms {
            cancel: Some(cancel),
            input_wait: config.input_wait,
        };
        let stop = self.watch(&mut running, started + timeout, alarms).await;
        let end = match stop {
            Stop::Ended(code) => {
                self.finished();
                End::Exited { code }
            }
            Stop::ShellExited(exit) => End::ShellExited(exit),
            Stop::Deadline => End::TimedOut {
                recovery: self.interrupt(&mut running, config.interrupt_grace).await,
            },
            Stop::InputWait(reader) => End::WaitingForInput {
                program: reader.program,
                recovery: self.interrupt(&mut running, config.interrupt_grace).await,
            },
            Stop::Cancelled => End::Interrupted {
                recovery: self.interrupt(&mut running, CANCEL_GRACE).await,
            },
        };
        running.finish_live();
        Ok(Outcome {
            output: running.screen.text(),
            duration: started.elapsed(),
            cwd: self.cwd.clone(),
            end,
            replaced_shell: false,
            blocked: Default::default(),
        })
    }

    /// Watches until the command ends or an alarm or `until` comes first.
    async fn watch(
        &mut self,
        running: &mut Running<'_>,
        until: Instant,
        alarms: Alarms<'_>,
    ) -> Stop {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                biased;
                frame = self.frames.recv() => match frame {
                    Some(Frame::Output(bytes)) => running.output(&bytes),
                    Some(Frame::End { id, status }) if id == running.id => {
                        return Stop::Ended(status);
                    }
                    Some(_) => {}
                    // The terminal closed: the shell is gone or going.
                    None => return self.shell_exited(running).await,
                },
                _ = self.exit.changed() => return self.shell_exited(running).await,
                () = cancelled(alarms.cancel) => return Stop::Cancelled,
                () = tokio::time::sleep_until(until) => return Stop::Deadline,
                keys = next_keys(running.attendant.as_mut()) => match keys {
                    Some(keys) => self.take_keys(running, keys),
                    // The front end went away: nobody can type any more.
                    None => {
                        running.attendant = None;
                        running.focused = false;
                    }
                },
                _ = tick.tick() => {
                    running.flush_live();
                    if running.input.is_some()
                        && self.input_wait(running, Some(INPUT_QUIET)).is_some()
                        && let Some(bytes) = running.input.take()
                    {
                        if let Err(error) = self.type_bytes(&bytes) {
                            tracing::warn!(%error, "typing the command's input failed");
                        }
                        // Its answer to the input starts a new quiet period.
                        running.last_output = Instant::now();
                        continue;
                    }
                    if running.wait_check_due() {
                        // With the attendant's attention, their typing echoed shows at
                        // once; otherwise only a wait that lasts is worth their look.
                        let quiet = if running.focused { Duration::ZERO } else { INPUT_WAIT_NOTICE };
                        if let Some(reader) = self.input_wait(running, Some(quiet)) {
                            running.report_wait(reader.program);
                        }
                    }
                    if running.focused {
                        continue;
                    }
                    if let Some(reader) = self.input_wait(running, alarms.input_wait) {
                        match self.confirm_input_wait(running, reader).await {
                            // The user turned to it meanwhile: it waits for them.
                            Stop::InputWait(_) if running.focused => {}
                            stop => return stop,
                        }
                    }
                }
            }
        }
    }

    /// Carries out what the attendant did at the command's terminal.
    fn take_keys(&mut self, running: &mut Running<'_>, keys: UserKeys) {
        match keys {
            UserKeys::Focus => running.focused = true,
            UserKeys::Release => {
                running.focused = false;
                // The wait before the command is stopped counts from now.
                running.last_output = Instant::now();
            }
            UserKeys::Type(mut bytes) => {
                // Writing waits while the terminal's input queue is full; a key or a
                // short paste never fills it, a flood from a front end must not.
                bytes.truncate(MAX_TYPED_BYTES);
                if let Err(error) = self.type_bytes(&bytes) {
                    tracing::warn!(%error, "typing the attendant's keys failed");
                }
                running.last_output = Instant::now();
                // Unechoed (a passphrase), the keys may still have ended the wait.
                running.changed_since_report = true;
            }
        }
    }

    /// The process blocked reading the terminal, once the command has been quiet
    /// for `quiet`.
    fn input_wait(&self, running: &Running<'_>, quiet: Option<Duration>) -> Option<TerminalReader> {
        let quiet = quiet?;
        if running.last_output.elapsed() < quiet {
            return None;
        }
        let group = self.master.process_group_leader()?;
        procfs::terminal_reader(self.pid, group, self.tty.as_deref()?)
    }

    /// Gives an end marker already on its way a moment to arrive before calling the
    /// command stuck.
    async fn confirm_input_wait(
        &mut self,
        running: &mut Running<'_>,
        reader: TerminalReader,
    ) -> Stop {
        match Box::pin(self.watch(running, Instant::now() + INPUT_WAIT_CONFIRM, Alarms::NONE)).await
        {
            Stop::Deadline => Stop::InputWait(reader),
            other => other,
        }
    }

    /// The shell is gone: collects the output still in flight and marks it dead.
    async fn shell_exited(&mut self, running: &mut Running<'_>) -> Stop {
        self.dead = true;
        let deadline = Instant::now() + EXIT_DRAIN;
        loop {
            tokio::select! {
                frame = self.frames.recv() => match frame {
                    Some(Frame::Output(bytes)) => running.output(&bytes),
                    Some(_) => {}
                    None => break,
                },
                () = tokio::time::sleep_until(deadline) => break,
            }
        }
        // The waiter reports the status right after the terminal closes.
        if self.exit.borrow().is_none() {
            let _ = tokio::time::timeout(EXIT_DRAIN, self.exit.changed()).await;
        }
        Stop::ShellExited(self.exit_status())
    }

    /// Stops the running command: Ctrl-C, then killing the foreground process group,
    /// then giving the shell up. Says whether the shell survived.
    async fn interrupt(&mut self, running: &mut Running<'_>, grace: Duration) -> Recovery {
        self.send_ctrl_c();
        if let Some(recovery) = self.await_stop(running, grace).await {
            return recovery;
        }
        if let Some(group) = self.foreground_job() {
            signal::kill_group(group);
            if let Some(recovery) = self.await_stop(running, KILL_GRACE).await {
                return recovery;
            }
        }
        self.dead = true;
        Recovery::Restarted
    }

    /// Waits up to `grace` for the command to end after a signal.
    async fn await_stop(&mut self, running: &mut Running<'_>, grace: Duration) -> Option<Recovery> {
        match Box::pin(self.watch(running, Instant::now() + grace, Alarms::NONE)).await {
            Stop::Ended(_) => {
                self.finished();
                Some(Recovery::Kept)
            }
            Stop::ShellExited(_) => Some(Recovery::Restarted),
            Stop::Deadline | Stop::InputWait(_) | Stop::Cancelled => None,
        }
    }

    /// Types Ctrl-C. A program that switched the terminal to raw mode reads it as a
    /// key instead of getting SIGINT, so then the signal is sent directly too.
    fn send_ctrl_c(&mut self) {
        let _ = self.type_text("\x03");
        let raw = self
            .master
            .get_termios()
            .is_some_and(|termios| !signal::generates_signals(&termios));
        if let Some(group) = self.master.process_group_leader().filter(|_| raw) {
            signal::interrupt_group(group);
        }
    }

    /// The terminal's foreground process group when it is a command's, not the
    /// shell's own (killing that would kill the shell).
    fn foreground_job(&self) -> Option<i32> {
        self.master
            .process_group_leader()
            .filter(|&group| group > 0 && group != self.pid && Some(group) != self.shell_group)
    }

    /// Writes `command` over the last one in the command file, ended by a NUL (the
    /// shell reads up to it). The file is never truncated: see `framing`.
    fn save_command(&self, command: &str) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt as _;
        if command.contains('\0') {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "the command contains a NUL byte, which no shell can take",
            ));
        }
        let mut saved = Vec::with_capacity(command.len() + 1);
        saved.extend_from_slice(command.as_bytes());
        saved.push(0);
        self.command_file.write_all_at(&saved, 0)
    }

    /// Records a normal end: the shell is idle again, in the directory it last
    /// reported (the file holds it up to a NUL, and is only rewritten on a change).
    fn finished(&mut self) {
        self.busy = false;
        if let Ok(mut cwd) = self.read_scratch(CWD_FILE) {
            if let Some(end) = cwd.iter().position(|&byte| byte == 0) {
                cwd.truncate(end);
            }
            if !cwd.is_empty() {
                self.cwd = path_from_bytes(cwd);
            }
        }
    }

    /// Reads a file the shell wrote in the scratch directory, through the directory's
    /// handle and never through a symbolic link: a command may have replaced the file
    /// (or the directory's name) with a link to something it cannot read itself.
    fn read_scratch(&self, name: &str) -> std::io::Result<Vec<u8>> {
        use std::os::fd::AsRawFd as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        let path = PathBuf::from(format!(
            "/proc/self/fd/{}/{name}",
            self.scratch_handle.as_raw_fd()
        ));
        let mut file = fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
            .open(path)?;
        if !file.metadata()?.is_file() {
            return Err(std::io::Error::other("not a regular file"));
        }
        let mut bytes = Vec::new();
        Read::by_ref(&mut file)
            .take(MAX_CWD_BYTES)
            .read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    fn exit_status(&self) -> ShellExit {
        self.exit.borrow().clone().unwrap_or(ShellExit {
            code: None,
            signal: None,
        })
    }

    fn type_text(&mut self, text: &str) -> std::io::Result<()> {
        self.type_bytes(text.as_bytes())
    }

    fn type_bytes(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.writer.write_all(bytes)?;
        self.writer.flush()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let exited = self.exit.borrow().is_some();
        signal::end_session(self.pid, exited);
    }
}

/// The shell's command line (through the sandbox launcher, which reports into
/// `report_dir`, when confined) and environment: the policy's variables, then the
/// session's own.
fn command(launch: &Launch<'_>, report_dir: Option<&Path>) -> CommandBuilder {
    let shell_args = launch.flavor.args();
    let mut command = match launch.sandbox.zip(report_dir) {
        Some(((plan, _), report_dir)) => {
            let mut command = CommandBuilder::new(plan.launcher());
            let view = View {
                workspace_read_only: launch.read_only,
                protected: launch.protected,
                join_network: launch.join_network,
            };
            command.args(plan.arguments_for(report_dir, launch.program, shell_args, view));
            command
        }
        None => {
            let mut command = CommandBuilder::new(launch.program);
            command.args(shell_args);
            command
        }
    };
    let cwd = launch.cwd;
    command.cwd(cwd);
    command.env_clear();
    for (name, value) in launch.environment {
        if !REMOVED_ENV
            .iter()
            .any(|removed| OsStr::new(removed) == name)
        {
            command.env(name, value);
        }
    }
    for (name, value) in NON_INTERACTIVE_ENV {
        command.env(name, value);
    }
    if launch.sandbox.is_some() {
        command.env("TMPDIR", "/tmp");
    }
    // The shell trusts an inherited PWD only if it names the start directory.
    command.env("PWD", cwd);
    command
}

/// Reads the terminal until it closes, passing frames on. Output the session does
/// not want (between commands) never leaves the scanner, so a chatty background job
/// cannot fill the channel while no command runs; begin markers stay here too.
fn spawn_reader(
    mut reader: Box<dyn Read + Send>,
    mut scanner: Scanner,
    frames: mpsc::Sender<Frame>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("duet-shell-reader".into())
        .spawn(move || {
            let mut buffer = vec![0; READ_BUFFER];
            let mut ready = Vec::new();
            loop {
                let count = match reader.read(&mut buffer) {
                    Ok(0) => return,
                    Ok(count) => count,
                    Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => return,
                };
                scanner.push(&buffer[..count], &mut ready);
                // The session does not wait for a command's start: passing it on
                // would only wake the session once more per command.
                let wanted = ready
                    .drain(..)
                    .filter(|frame| !matches!(frame, Frame::Begin(_)));
                for frame in wanted {
                    if frames.blocking_send(frame).is_err() {
                        return;
                    }
                }
            }
        })
        .map(drop)
}

/// Waits for the shell to exit (reaping it) and publishes its status.
fn spawn_waiter(
    mut child: Box<dyn portable_pty::Child + Send + Sync>,
    exit: watch::Sender<Option<ShellExit>>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("duet-shell-waiter".into())
        .spawn(move || {
            let status = match child.wait() {
                Ok(status) => ShellExit {
                    code: status
                        .signal()
                        .is_none()
                        .then(|| i32::try_from(status.exit_code()).unwrap_or(i32::MAX)),
                    signal: status.signal().map(str::to_string),
                },
                Err(_) => ShellExit {
                    code: None,
                    signal: None,
                },
            };
            let _ = exit.send(Some(status));
        })
        .map(drop)
}

/// The attendant's next keys; never, without one.
async fn next_keys(attendant: Option<&mut Attendant<'_>>) -> Option<UserKeys> {
    match attendant {
        Some(attendant) => attendant.keys.recv().await,
        None => std::future::pending().await,
    }
}

async fn cancelled(token: Option<&CancellationToken>) {
    match token {
        Some(token) => token.cancelled().await,
        None => std::future::pending().await,
    }
}

#[cfg(unix)]
fn path_from_bytes(bytes: Vec<u8>) -> PathBuf {
    use std::os::unix::ffi::OsStringExt as _;
    PathBuf::from(std::ffi::OsString::from_vec(bytes))
}

/// Signals to process groups and the shell's session.
#[cfg(unix)]
mod signal {
    use nix::sys::signal::{Signal, kill, killpg};
    use nix::sys::termios::{LocalFlags, Termios};
    use nix::unistd::Pid;

    use super::procfs;

    pub(super) fn generates_signals(termios: &Termios) -> bool {
        termios.local_flags.contains(LocalFlags::ISIG)
    }

    pub(super) fn interrupt_group(group: i32) {
        let _ = killpg(Pid::from_raw(group), Signal::SIGINT);
    }

    pub(super) fn kill_group(group: i32) {
        let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
    }

    /// Hangs up the shell (bash and zsh pass SIGHUP on to their jobs) and kills
    /// everything still in its session, background jobs included. A process that
    /// left the session on purpose (`setsid`, a daemon) is not touched.
    pub(super) fn end_session(shell: i32, exited: bool) {
        if shell <= 0 {
            return;
        }
        let members = procfs::session_members(shell);
        if !exited {
            let _ = kill(Pid::from_raw(shell), Signal::SIGHUP);
        }
        for member in members {
            if member != shell {
                let _ = kill(Pid::from_raw(member), Signal::SIGKILL);
            }
        }
        // On Linux the scan found every job; elsewhere the shell's own SIGHUP
        // handling has to reach them, so it is not killed outright there.
        if !exited && cfg!(target_os = "linux") {
            let _ = kill(Pid::from_raw(shell), Signal::SIGKILL);
        }
    }
}
