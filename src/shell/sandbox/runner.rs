//! One workspace's sandbox as the rest of duet uses it: settled by one probe, shared
//! by the shell and by everything else that runs project code (the `--done` command,
//! turn checks, linters, the project's MCP servers), with the environment those
//! programs may see.
//!
//! Owns: the probe's outcome for the session, the private temp dir shown to programs
//! as `/tmp` (removed with the sandbox), the directory of launcher reports (which
//! programs never see), and building confined commands. Does not own: the launcher
//! or the layers (the launcher), or spawning the shell's terminal (the session).
//! Invariant: with the sandbox configured, no program is started unless a probe
//! succeeded, and every program goes through the launcher with the probe's
//! requirements; when the probe refused, every start fails with the reason.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use tempfile::TempDir;

use super::SandboxConfig;
use super::blocked::{self, Blocked};
use super::host::{Plan, Refusal, View};
use super::report::{Confinement, Protections};
use crate::policy::ProtectedPaths;
use crate::shell::environment::{EnvironmentPolicy, Filtered};

/// Why a program could not be started confined.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the sandbox cannot start programs: {0}")]
pub struct SandboxError(pub String);

/// The protected names that existed before a confined program ran.
#[derive(Debug)]
pub struct ProtectedWatch<'a> {
    sandbox: &'a Sandbox,
    before: Option<Vec<PathBuf>>,
}

impl ProtectedWatch<'_> {
    /// Takes back what the program created under protected names; call it once the
    /// program and everything it started have ended.
    pub fn take_back(self) -> Blocked {
        let after = self.sandbox.protected_entries();
        let created = Sandbox::created_between(self.before.as_deref(), after.as_deref());
        self.sandbox.take_back(&created)
    }
}

/// A workspace's sandbox.
#[derive(Debug)]
pub struct Sandbox {
    workspace: PathBuf,
    config: Option<SandboxConfig>,
    protected: ProtectedPaths,
    environment: Filtered,
    state: tokio::sync::OnceCell<State>,
    /// The workspace is read-only for programs started from now on (`read-only` mode).
    workspace_read_only: AtomicBool,
    /// Counts changes of what programs see; a shell started under an older view is
    /// replaced before its next command.
    view: AtomicU64,
    /// How many programs that stay running (a project's MCP servers) are confined
    /// here now: while any is, a protected name that appears may be theirs.
    resident: Arc<AtomicUsize>,
}

/// Held while a program that stays running is confined in the sandbox
/// ([`Sandbox::resident`]); dropped when it ends.
#[derive(Debug)]
pub struct Resident(Arc<AtomicUsize>);

impl Drop for Resident {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[derive(Debug)]
enum State {
    /// Turned off by the user's config: programs run unconfined.
    Off(Protections),
    Ready {
        plan: Box<Plan>,
        protections: Protections,
        /// The private `/tmp` and the report directory live as long as the plan.
        _private_tmp: TempDir,
        reports: TempDir,
    },
    Refused(Protections, String),
}

impl Sandbox {
    /// The sandbox for `workspace`; `config` is `None` when the user turned it off.
    /// Nothing runs until the first program or [`Sandbox::protections`].
    pub fn new(
        workspace: &Path,
        config: Option<SandboxConfig>,
        protected: ProtectedPaths,
        environment: &EnvironmentPolicy,
    ) -> Self {
        Self {
            workspace: workspace.to_path_buf(),
            protected,
            workspace_read_only: AtomicBool::new(
                config
                    .as_ref()
                    .is_some_and(|config| config.workspace_read_only),
            ),
            config,
            environment: environment.filter(std::env::vars_os()),
            state: tokio::sync::OnceCell::new(),
            view: AtomicU64::new(0),
            resident: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Makes the workspace read-only (or writable again) for programs started from now
    /// on; a change also retires the shells started before it ([`Sandbox::view`]).
    pub fn set_workspace_read_only(&self, read_only: bool) {
        if self.workspace_read_only.swap(read_only, Ordering::SeqCst) != read_only {
            self.view.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Whether programs started now get a read-only workspace.
    pub fn workspace_read_only(&self) -> bool {
        self.workspace_read_only.load(Ordering::SeqCst)
    }

    /// Which view of the workspace programs started now get; it changes whenever the
    /// workspace turns read-only or writable, or a protected path appeared.
    pub fn view(&self) -> u64 {
        self.view.load(Ordering::SeqCst)
    }

    /// The protected entries that exist now, relative to the workspace and named as
    /// they are (a link itself). `None` when the sandbox is off or not settled yet, or
    /// the workspace could not be listed whole: two lists compare only when both are
    /// `Some`.
    pub(crate) fn protected_entries(&self) -> Option<Vec<PathBuf>> {
        match self.state.get() {
            Some(State::Ready { plan, .. }) => plan.protected_entries(),
            _ => None,
        }
    }

    /// Where the protected `entries` (from [`Sandbox::protected_entries`]) lead: the
    /// canonical paths a program started now gets read-only.
    pub(crate) fn protected_paths_of(&self, entries: &[PathBuf]) -> Vec<PathBuf> {
        match self.state.get() {
            Some(State::Ready { plan, .. }) => plan.canonical(entries),
            _ => Vec::new(),
        }
    }

    /// The entries of `after` that are not in `before` (both from
    /// [`Sandbox::protected_entries`]): a confined program created them. Nothing unless
    /// both lists are known.
    pub(crate) fn created_between(
        before: Option<&[PathBuf]>,
        after: Option<&[PathBuf]>,
    ) -> Vec<PathBuf> {
        match (before, after) {
            (Some(before), Some(after)) => after
                .iter()
                .filter(|entry| !before.contains(entry))
                .cloned()
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Takes back protected entries a confined program created (from
    /// [`Sandbox::created_between`]): they are moved into `.duet/blocked/` ([`blocked`]).
    /// Every shell started before is retired, as its programs could make them again
    /// and what could not be moved is read-only only to a shell started after.
    pub(crate) fn take_back(&self, created: &[PathBuf]) -> Blocked {
        let Some(State::Ready { plan, .. }) = self.state.get() else {
            return Blocked::default();
        };
        if created.is_empty() {
            return Blocked::default();
        }
        self.view.fetch_add(1, Ordering::SeqCst);
        blocked::take_back(plan.workspace(), created)
    }

    /// Marks a program that stays running (a project's MCP server) as confined here
    /// until the returned guard is dropped.
    pub fn resident(&self) -> Resident {
        self.resident.fetch_add(1, Ordering::SeqCst);
        Resident(Arc::clone(&self.resident))
    }

    /// Whether a program that stays running is confined here now.
    pub fn has_residents(&self) -> bool {
        self.resident.load(Ordering::SeqCst) > 0
    }

    /// Starts watching the protected names around one confined program (the `--done`
    /// command, a turn check, a linter): what it creates under them is taken back by
    /// [`ProtectedWatch::take_back`] once it has ended. Call it once the sandbox has
    /// settled (after [`Sandbox::command`]), or nothing is watched.
    pub fn watch_protected(&self) -> ProtectedWatch<'_> {
        ProtectedWatch {
            sandbox: self,
            before: self.protected_entries(),
        }
    }

    /// What protects the user from programs run here, as a probe found it.
    pub async fn protections(&self) -> Protections {
        match self.state().await {
            State::Off(protections)
            | State::Ready { protections, .. }
            | State::Refused(protections, _) => protections.clone(),
        }
    }

    /// The variables programs get from duet's environment.
    pub fn environment(&self) -> &[(OsString, OsString)] {
        &self.environment.passed
    }

    /// The plan programs start under: `None` when the sandbox is off.
    pub(crate) async fn plan(&self) -> Result<Option<(&Plan, &Path)>, SandboxError> {
        match self.state().await {
            State::Off(_) => Ok(None),
            State::Ready { plan, reports, .. } => Ok(Some((plan.as_ref(), reports.path()))),
            State::Refused(_, why) => Err(SandboxError(why.clone())),
        }
    }

    /// A command running `program args...` in `cwd` inside the sandbox (directly when
    /// it is off), with the allowed environment plus `env`; stdio is the caller's to
    /// set. The returned guard keeps the launcher's report directory until the
    /// command is done.
    pub async fn command(
        &self,
        program: &str,
        args: &[&str],
        cwd: &Path,
        env: &[(&str, &str)],
    ) -> Result<(tokio::process::Command, Option<TempDir>), SandboxError> {
        self.command_sharing_network(program, args, cwd, env, None)
            .await
    }

    /// [`Sandbox::command`], sharing the network namespace (the loopback) of the
    /// sandboxed launcher `join_network` (the session's shell) where the network is
    /// isolated, instead of a new one: for a background server the shell's later
    /// commands reach.
    pub async fn command_sharing_network(
        &self,
        program: &str,
        args: &[&str],
        cwd: &Path,
        env: &[(&str, &str)],
        join_network: Option<i32>,
    ) -> Result<(tokio::process::Command, Option<TempDir>), SandboxError> {
        let (mut command, report_dir) = match self.plan().await? {
            None => {
                let mut command = tokio::process::Command::new(program);
                command.args(args);
                (command, None)
            }
            Some((plan, reports)) => {
                let report_dir = tempfile::Builder::new()
                    .prefix("run-")
                    .tempdir_in(reports)
                    .map_err(|error| {
                        SandboxError(format!("cannot create a report directory: {error}"))
                    })?;
                let mut command = tokio::process::Command::new(plan.launcher());
                let protected = plan.protected_now();
                let view = View {
                    workspace_read_only: self.workspace_read_only(),
                    protected: &protected,
                    join_network,
                };
                command.args(plan.arguments_for(report_dir.path(), Path::new(program), args, view));
                (command, Some(report_dir))
            }
        };
        command.current_dir(cwd).env_clear();
        command.envs(self.environment.passed.iter().map(|(k, v)| (k, v)));
        if report_dir.is_some() {
            command.env("TMPDIR", "/tmp");
        }
        command.envs(env.iter().map(|(k, v)| (OsStr::new(k), OsStr::new(v))));
        Ok((command, report_dir))
    }

    async fn state(&self) -> &State {
        self.state
            .get_or_init(|| async {
                let state = self.settle().await;
                match &state {
                    State::Refused(_, why) => tracing::warn!(%why, "sandbox refused"),
                    State::Off(protections) | State::Ready { protections, .. } => {
                        tracing::info!(?protections, "sandbox settled");
                    }
                }
                state
            })
            .await
    }

    async fn settle(&self) -> State {
        let protections = |confinement: Confinement, refused: Option<String>| Protections {
            confinement,
            refused,
            environment_passed: self.environment.passed.len(),
            environment_withheld: self.environment.withheld.len(),
        };
        let Some(config) = &self.config else {
            let off = "the sandbox is turned off ([sandbox] enabled = false)";
            return State::Off(protections(Confinement::none(off), None));
        };
        let refuse = |refusal: Refusal| {
            State::Refused(
                protections(refusal.confinement, Some(refusal.why.clone())),
                refusal.why,
            )
        };
        let private = |prefix: &str| tempfile::Builder::new().prefix(prefix).tempdir();
        let (private_tmp, reports) = match (private("duet-sandbox-"), private("duet-reports-")) {
            (Ok(private_tmp), Ok(reports)) => (private_tmp, reports),
            (Err(error), _) | (_, Err(error)) => {
                let why = format!("cannot create a private temp dir: {error}");
                return refuse(Refusal {
                    confinement: Confinement::none(&why),
                    why,
                });
            }
        };
        let probed = Plan::probe(
            config,
            &self.workspace,
            private_tmp.path(),
            reports.path(),
            &self.protected,
        );
        match probed.await {
            Ok(plan) => {
                let confinement = plan.promised().clone();
                State::Ready {
                    plan: Box::new(plan),
                    protections: protections(confinement, None),
                    _private_tmp: private_tmp,
                    reports,
                }
            }
            Err(refusal) => refuse(refusal),
        }
    }
}
