//! duet's persistent shell: one long-lived bash or zsh per session on a PTY, started
//! on first use in the workspace root, plus throwaway shells for isolated commands.
//!
//! Owns: choosing the shell program, keeping the main session alive between calls
//! (its cwd, environment, functions and background jobs persist), replacing it when it
//! died, and the [`Outcome`] of each command: cleaned output, exit status, duration,
//! final directory, and how a stopped command was stopped.
//! Every shell starts with only the inherited variables the [`environment`] policy
//! allows and, unless the user turned it off, inside the [`sandbox`]; when the sandbox
//! lacks a layer the config does not accept, no shell starts.
//! [`Shell::protections`] says what is active.
//! Does not own: permission (the `shell` tool asks the approver first), or clipping and
//! wording for the model (the tool).
//! Invariant: at most one command runs in the main shell at a time, a command's
//! output never contains framing, and a shell that cannot be trusted any more (it
//! exited, or a command could not be stopped, or its sandbox is weaker than
//! reported) is never given a command.
//!
//! Platform: Linux first. Elsewhere on Unix it runs, but waiting-for-input detection
//! is unavailable (such commands run into their time limit) and background jobs are
//! only stopped through the shell's own SIGHUP handling.

pub mod environment;
mod framing;
pub mod jobs;
mod procfs;
pub mod sandbox;
mod screen;
pub mod secrets;
mod session;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::policy::ProtectedPaths;
use environment::EnvironmentPolicy;
use framing::Flavor;
use jobs::{JobError, JobView, Jobs};
use sandbox::{Blocked, Protections, Sandbox, SandboxConfig};
use secrets::SecretFilter;
use session::{Launch, Session};

/// Settings of the persistent shell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellConfig {
    /// Per-call time limit unless the call gives one.
    pub default_timeout: Duration,
    /// The longest time limit a call may ask for.
    pub max_timeout: Duration,
    /// How long a command may print nothing while blocked reading the terminal
    /// before it is stopped as waiting for input; `None` leaves it to the time limit.
    pub input_wait: Option<Duration>,
    /// How long a command gets to stop after Ctrl-C at its time limit or input wait
    /// before its process group is killed.
    pub interrupt_grace: Duration,
    /// The shell to run; `None` means `$SHELL` when that is bash or zsh, else `bash`.
    pub program: Option<PathBuf>,
    /// Where full outputs of clipped results are saved; `None` means a private
    /// temporary directory that lives as long as the [`Shell`].
    pub outputs_dir: Option<PathBuf>,
    /// Inherited variables the shell gets although the environment policy would
    /// withhold them (`keep`), or must not get whatever they are called (`extra`).
    pub secrets: SecretFilter,
    /// How to confine every shell; `None` runs them unconfined.
    pub sandbox: Option<SandboxConfig>,
}

impl Default for ShellConfig {
    fn default() -> Self {
        Self {
            default_timeout: Duration::from_secs(120),
            max_timeout: Duration::from_secs(600),
            input_wait: Some(Duration::from_secs(10)),
            interrupt_grace: Duration::from_secs(2),
            program: None,
            outputs_dir: None,
            secrets: SecretFilter::default(),
            sandbox: None,
        }
    }
}

/// One command to run.
pub struct Request<'a> {
    /// Shell source: one line or a whole script (heredocs, functions, `cd`, ...).
    pub command: &'a str,
    pub timeout: Duration,
    /// Cancelled when the user interrupts; the command is stopped promptly.
    pub cancel: &'a CancellationToken,
    /// Receives cleaned output while the command runs, a few lines at a time.
    pub on_output: &'a mut (dyn FnMut(String) + Send),
    /// Typed into the command's terminal the first time it stops to wait for keyboard
    /// input (a `y` to confirm, an answer to a prompt); a second wait stops it as
    /// usual.
    pub input: Option<&'a str>,
    /// A person watching the command who can type into it; `None` when nobody can
    /// (headless runs, tests).
    pub attendant: Option<Attendant<'a>>,
}

/// A person at the command's terminal, through a front end: told when the command
/// waits for keyboard input, and typing into it.
pub struct Attendant<'a> {
    /// What the person types, and whether the command has their attention.
    pub keys: &'a mut tokio::sync::mpsc::UnboundedReceiver<UserKeys>,
    /// Told when the command waits for keyboard input, and again whenever its prompt
    /// line changes while it still waits (the person's typing echoed).
    pub on_input_wait: &'a mut (dyn FnMut(InputWait) + Send),
}

/// What a person does at a running command's terminal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UserKeys {
    /// They turned to the command: while it has their attention it is never stopped
    /// for waiting for input (its time limit still holds).
    Focus,
    /// They turned away: waiting for input stops it again, counted from now.
    Release,
    /// Bytes to type, as a terminal sends them for the keys pressed.
    Type(Vec<u8>),
}

/// A command blocked reading its terminal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputWait {
    /// The process reading, e.g. `python3`.
    pub program: String,
    /// The unfinished last line of its output: usually the prompt.
    pub line: String,
}

/// What running a command came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The output as a terminal would show it, escape sequences removed.
    pub output: String,
    pub duration: Duration,
    /// Where the next command of the same shell starts: the command's final
    /// directory, or the workspace root when the shell has to be restarted.
    pub cwd: PathBuf,
    pub end: End,
    /// The previous shell could not be reused (it exited, or was still busy with a
    /// command whose caller went away), so this command ran in a new shell started
    /// in the workspace root: earlier cwd, environment and jobs are gone.
    pub replaced_shell: bool,
    /// Protected names the command (or a job it left running) created, which the
    /// sandbox cannot refuse for names that did not exist: moved out of the workspace
    /// into `.duet/blocked/` when it ended. The next command runs in a new shell.
    pub blocked: Blocked,
}

/// How a command ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// It ran to its end with this exit status (128 + n after signal n).
    Exited { code: i32 },
    /// The shell itself exited (`exit`, `set -e` and a failure, `exec`); the next
    /// call starts a new one.
    ShellExited(ShellExit),
    /// It reached its time limit and was stopped.
    TimedOut { recovery: Recovery },
    /// It printed nothing for a while and was blocked reading the terminal, where no
    /// input will ever come; it was stopped.
    WaitingForInput {
        /// The process that was reading, e.g. `python3`.
        program: String,
        recovery: Recovery,
    },
    /// The user interrupted it.
    Interrupted { recovery: Recovery },
}

/// The exit status of a shell process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellExit {
    /// Its exit code, when it exited rather than being killed.
    pub code: Option<i32>,
    /// The signal that ended it, by name.
    pub signal: Option<String>,
}

impl std::fmt::Display for ShellExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.code, &self.signal) {
            (_, Some(signal)) => write!(f, "killed by {signal}"),
            (Some(code), None) => write!(f, "exit status {code}"),
            (None, None) => f.write_str("unknown exit status"),
        }
    }
}

/// What stopping a command cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// The command stopped and the shell lives on: cwd and environment are kept.
    Kept,
    /// The shell had to be killed; the next call starts a new one in the workspace
    /// root, so cwd, environment and background jobs are lost.
    Restarted,
}

/// Why a command could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum ShellError {
    #[error("could not start the shell `{program}`: {reason}")]
    Start { program: String, reason: String },
    #[error("could not hand the command to the shell: {0}")]
    Handoff(String),
}

/// The session's persistent shell, started on first use.
pub struct Shell {
    root: PathBuf,
    config: ShellConfig,
    main: tokio::sync::Mutex<Option<Session>>,
    /// The main shell's directory, readable while a command runs.
    cwd: Mutex<PathBuf>,
    own_outputs_dir: OnceLock<Option<tempfile::TempDir>>,
    /// Confines every shell, settled by its first probe.
    sandbox: Arc<Sandbox>,
    /// The protected entries known to exist legitimately: those there when the last
    /// command ended, and what duet's own tools wrote since. `None` before the first.
    known_protected: Mutex<Option<Vec<PathBuf>>>,
    /// Commands started in the background; every one is killed when the shell (the
    /// only owner of the registry) is dropped.
    jobs: Arc<Jobs>,
}

impl std::fmt::Debug for Shell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shell")
            .field("root", &self.root)
            .field("config", &self.config)
            .field("cwd", &self.cwd())
            .finish_non_exhaustive()
    }
}

impl Shell {
    /// A shell for the workspace at `root`, in a sandbox of its own protecting the
    /// default protected paths. Nothing starts until the first command.
    pub fn new(root: &Path, config: ShellConfig) -> Self {
        let sandbox = Arc::new(Sandbox::new(
            root,
            config.sandbox.clone(),
            ProtectedPaths::default(),
            &EnvironmentPolicy::from_filter(&config.secrets),
        ));
        Self::with_sandbox(root, config, sandbox)
    }

    /// A shell for `root` confined by `sandbox`, which other programs of the session
    /// (checks, linters) share.
    pub fn with_sandbox(root: &Path, config: ShellConfig, sandbox: Arc<Sandbox>) -> Self {
        Self {
            root: root.to_path_buf(),
            main: tokio::sync::Mutex::new(None),
            cwd: Mutex::new(root.to_path_buf()),
            own_outputs_dir: OnceLock::new(),
            sandbox,
            config,
            known_protected: Mutex::new(None),
            jobs: Arc::new(Jobs::default()),
        }
    }

    /// The background jobs. Front ends keep a [`std::sync::Weak`] to it: only the
    /// shell may keep the jobs alive.
    pub fn jobs(&self) -> &Arc<Jobs> {
        &self.jobs
    }

    /// What protects the user from this shell's commands. The first call runs the
    /// sandbox launcher once to learn what this machine allows; every shell started
    /// later must hold at least that.
    pub async fn protections(&self) -> Protections {
        self.sandbox.protections().await
    }

    /// The sandbox the shell runs in.
    pub fn sandbox(&self) -> &Arc<Sandbox> {
        &self.sandbox
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn config(&self) -> &ShellConfig {
        &self.config
    }

    /// The main shell's current directory: the workspace root until a command
    /// changes it, and again after a restart.
    pub fn cwd(&self) -> PathBuf {
        match self.cwd.lock() {
            Ok(cwd) => cwd.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Where clipped outputs are saved in full.
    pub fn outputs_dir(&self) -> PathBuf {
        if let Some(dir) = &self.config.outputs_dir {
            return dir.clone();
        }
        let own = self.own_outputs_dir.get_or_init(|| {
            tempfile::Builder::new()
                .prefix("duet-shell-outputs-")
                .tempdir()
                .ok()
        });
        match own {
            Some(dir) => dir.path().to_path_buf(),
            None => std::env::temp_dir(),
        }
    }

    /// Runs a command in the main shell, starting (or replacing) it as needed.
    pub async fn run(&self, request: Request<'_>) -> Result<Outcome, ShellError> {
        let mut main = self.main.lock().await;
        // Background jobs that had ended before the check below: once it has run,
        // nothing they created can be missed, so they no longer count as residents.
        let ended_jobs = self.jobs.ended_ids();
        // The protected names are listed once before the command and once after, by a
        // settled sandbox (a start failure is reported by the start below).
        let _ = self.sandbox.plan().await;
        let mut before = self.sandbox.protected_entries();
        // Protected names that appeared since the last command ended and that duet's
        // own tools did not write: while the shell still runs jobs, or a project's
        // server runs in the sandbox, they made them.
        let appeared = before
            .as_deref()
            .map(|now| self.appeared_protected(now))
            .unwrap_or_default();
        let mut blocked = Blocked::default();
        if !appeared.is_empty()
            && (self.sandbox.has_residents() || main.as_ref().is_some_and(Session::runs_jobs))
        {
            *main = None;
            self.set_cwd(&self.root);
            blocked = self.sandbox.take_back(&appeared);
            // Listed again: taking back made `.duet/blocked`.
            before = self.sandbox.protected_entries();
        }
        self.jobs.release_ended(&ended_jobs);
        // A shell started under another view of the workspace (the mode turned
        // read-only, or back) is replaced like one that died; so is one started before
        // a protected path appeared (duet's own approved write, the user's), which is
        // read-only only to a shell started after it.
        let view = self.sandbox.view();
        let protected_now = self
            .sandbox
            .protected_paths_of(before.as_deref().unwrap_or_default());
        let replaced_shell = main.as_ref().is_some_and(|session| {
            session.unusable() || session.view != view || session.protected != protected_now
        });
        if replaced_shell {
            *main = None;
            self.set_cwd(&self.root);
        }
        let session = match &mut *main {
            Some(session) => session,
            empty => empty.insert(self.start(&self.root).await?),
        };
        let mut outcome = run_in(session, &self.config, request).await?;
        outcome.replaced_shell = replaced_shell || !blocked.is_empty();
        let after = self.sandbox.protected_entries();
        let created = Sandbox::created_between(before.as_deref(), after.as_deref());
        // When the command created protected names, whatever the shell still runs
        // could make them again: it ends before they are taken back.
        if session.unusable() || !created.is_empty() {
            *main = None;
            outcome.cwd = self.root.clone();
        }
        let taken = self.sandbox.take_back(&created);
        self.remember_protected(after, &taken);
        outcome.blocked = blocked.and(taken);
        self.set_cwd(&outcome.cwd);
        Ok(outcome)
    }

    /// Runs a command in a new shell started in the main shell's directory, and
    /// throws that shell away afterwards: nothing it does to its cwd, environment or
    /// jobs reaches the main shell.
    pub async fn run_isolated(&self, request: Request<'_>) -> Result<Outcome, ShellError> {
        let cwd = Some(self.cwd())
            .filter(|cwd| cwd.is_dir())
            .unwrap_or_else(|| self.root.clone());
        let mut session = self.start(&cwd).await?;
        let before = self.sandbox.protected_entries();
        let mut outcome = run_in(&mut session, &self.config, request).await?;
        let after = self.sandbox.protected_entries();
        let created = Sandbox::created_between(before.as_deref(), after.as_deref());
        drop(session);
        outcome.blocked = self.sandbox.take_back(&created);
        self.remember_protected(after, &outcome.blocked);
        Ok(outcome)
    }

    /// Starts `command` in the background in a new shell of its own (in the sandbox,
    /// like every shell), started in the main shell's directory, and returns at once.
    /// Its output goes to the job's ring buffer ([`Jobs::read`]); it runs until it
    /// ends, is stopped ([`Jobs::stop`]) or the shell is dropped.
    pub async fn start_background(&self, command: &str) -> Result<JobView, JobError> {
        self.jobs.check_room()?;
        let cwd = Some(self.cwd())
            .filter(|cwd| cwd.is_dir())
            .unwrap_or_else(|| self.root.clone());
        let program = self
            .config
            .program
            .clone()
            .unwrap_or_else(|| PathBuf::from("bash"));
        let program = program
            .to_str()
            .ok_or_else(|| JobError::Start("the shell's path is not UTF-8".into()))?;
        let mut env: Vec<(&str, &str)> = session::NON_INTERACTIVE_ENV.to_vec();
        // No terminal: Python would buffer its output until it exits.
        env.push(("PYTHONUNBUFFERED", "1"));
        // The job shares the main shell's loopback, so a server it starts answers the
        // shell's later commands: the main shell is started first if it is not running.
        let shell_pid = {
            let mut main = self.main.lock().await;
            if main.as_ref().is_none_or(Session::unusable) {
                *main = None;
                let started = self
                    .start(&self.root)
                    .await
                    .map_err(|error| JobError::Start(error.to_string()))?;
                *main = Some(started);
            }
            main.as_ref().map(Session::pid)
        };
        let (mut built, report_dir) = self
            .sandbox
            .command_sharing_network(program, &["-c", command], &cwd, &env, shell_pid)
            .await
            .map_err(|error| JobError::Start(error.to_string()))?;
        for removed in session::REMOVED_ENV {
            built.env_remove(removed);
        }
        // Protected names the job creates between commands are taken back like a
        // resident server's: the baseline must exist before it runs.
        let mut known = lock(&self.known_protected);
        if known.is_none() {
            *known = self.sandbox.protected_entries();
        }
        drop(known);
        let resident = report_dir.is_some().then(|| self.sandbox.resident());
        built
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(false);
        // Its own process group: stopping the job stops everything it started.
        crate::process_group::isolate(&mut built);
        let child = built
            .spawn()
            .map_err(|error| JobError::Start(format!("`{program}`: {error}")))?;
        self.jobs.add(jobs::Spawned {
            child,
            command: command.to_string(),
            cwd,
            report_dir,
            resident,
        })
    }

    /// Tells the shell that duet itself (an approved write or edit) just wrote `rel`,
    /// relative to the workspace: a protected entry that holds it is not taken for
    /// one a job made.
    pub fn note_own_write(&self, rel: &Path) {
        let entries = self.sandbox.protected_entries().unwrap_or_default();
        let mut known = lock(&self.known_protected);
        if let Some(known) = known.as_mut() {
            for entry in entries {
                if rel.starts_with(&entry) && !known.contains(&entry) {
                    known.push(entry);
                }
            }
        }
    }

    /// Of the protected entries that exist now (`now`), those not known when the last
    /// command ended, nor written by duet since.
    fn appeared_protected(&self, now: &[PathBuf]) -> Vec<PathBuf> {
        let known = lock(&self.known_protected);
        let Some(known) = known.as_ref() else {
            return Vec::new();
        };
        now.iter()
            .filter(|entry| !known.contains(entry))
            .cloned()
            .collect()
    }

    /// Records the protected entries there as a command ended (`after`), after what
    /// was `taken` back.
    fn remember_protected(&self, after: Option<Vec<PathBuf>>, taken: &Blocked) {
        // Taking back changed what is there (and made `.duet/blocked`): listed again.
        let known = if taken.is_empty() {
            after
        } else {
            self.sandbox.protected_entries()
        };
        if let Some(known) = known {
            *lock(&self.known_protected) = Some(known);
        }
    }

    /// Starts the configured shell, falling back to bash when `$SHELL` fails.
    /// Starts a shell in `cwd`. While a background job runs, the shell shares its
    /// network namespace: the job joined the main shell's, and a shell replacing that
    /// one (after it died, or the mode's view changed) must still reach its server.
    async fn start(&self, cwd: &Path) -> Result<Session, ShellError> {
        let Some(job) = self.jobs.running_pid() else {
            return self.start_joining(cwd, None).await;
        };
        match self.start_joining(cwd, Some(job)).await {
            Ok(session) => Ok(session),
            Err(error) => {
                // The job may have ended meanwhile; a shell of its own is still a shell.
                tracing::warn!(%error, job, "shell sharing a job's network did not start");
                self.start_joining(cwd, None).await
            }
        }
    }

    async fn start_joining(
        &self,
        cwd: &Path,
        join_network: Option<i32>,
    ) -> Result<Session, ShellError> {
        let sandbox = self
            .sandbox
            .plan()
            .await
            .map_err(|error| ShellError::Start {
                program: "the shell".into(),
                reason: error.to_string(),
            })?;
        let protected = sandbox
            .map(|(plan, _)| plan.protected_now())
            .unwrap_or_default();
        let mut last_error = None;
        for (program, flavor) in self.programs() {
            let launch = Launch {
                program: &program,
                flavor,
                cwd,
                environment: self.sandbox.environment(),
                sandbox,
                read_only: self.sandbox.workspace_read_only(),
                protected: &protected,
                view: self.sandbox.view(),
                join_network,
            };
            match Session::start(&launch).await {
                Ok(session) => return Ok(session),
                Err(error) => {
                    tracing::warn!(%error, "shell did not start");
                    last_error = Some(error);
                }
            }
        }
        Err(last_error.unwrap_or_else(|| ShellError::Start {
            program: "bash".into(),
            reason: "no shell program to try".into(),
        }))
    }

    /// The shells to try, in order.
    fn programs(&self) -> Vec<(PathBuf, Flavor)> {
        if let Some(program) = &self.config.program {
            return vec![(program.clone(), flavor_of(program))];
        }
        let bash = (PathBuf::from("bash"), Flavor::Bash);
        match std::env::var_os("SHELL").map(PathBuf::from) {
            Some(user) if is_supported(&user) => vec![(user.clone(), flavor_of(&user)), bash],
            _ => vec![bash],
        }
    }

    fn set_cwd(&self, cwd: &Path) {
        match self.cwd.lock() {
            Ok(mut current) => *current = cwd.to_path_buf(),
            Err(poisoned) => *poisoned.into_inner() = cwd.to_path_buf(),
        }
    }
}

async fn run_in(
    session: &mut Session,
    config: &ShellConfig,
    request: Request<'_>,
) -> Result<Outcome, ShellError> {
    session.run(request, config).await
}

fn program_name(program: &Path) -> &str {
    program
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or_default()
}

fn is_supported(program: &Path) -> bool {
    matches!(program_name(program), "bash" | "zsh")
}

fn flavor_of(program: &Path) -> Flavor {
    if program_name(program).starts_with("zsh") {
        Flavor::Zsh
    } else {
        Flavor::Bash
    }
}

#[cfg(test)]
mod tests;

/// The value behind `mutex`, also after a panic elsewhere poisoned it (the values
/// guarded here stay consistent whatever panicked).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
