//! The shell's sandbox: no network, and writes only to the workspace (with its
//! repository's git directories), the temp dir and the usual device files, as far as
//! the kernel allows.
//!
//! duet cannot confine a process portable-pty spawns, so the shell is started through
//! a launcher: duet's own binary as `duet __sandbox ... -- bash ...`, which confines
//! itself ([`launcher`]) and then `exec`s the shell. The launcher writes what it
//! achieved — a [`Confinement`] — to a report file before the `exec`.
//!
//! Owns: the sandbox settings, the launcher's command line (built here and parsed
//! here), probing what the machine allows, and checking each started shell against
//! that. Does not own: spawning the shell (the session) or which variables it sees
//! ([`super::secrets`]).
//! Invariant: a protection is only ever reported active when a launcher reported it
//! applied, and a shell whose launcher achieved less than the probe promised is never
//! handed a command.

pub mod launcher;
#[cfg(target_os = "linux")]
mod linux;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The newest Landlock ABI whose access rights duet asks for. Later ABIs add rights
/// (such as connecting to Unix sockets) that would change what commands may do, so
/// raising this is a deliberate, tested change.
pub(crate) const TARGET_LANDLOCK_ABI: u8 = 5;
/// How long the probe launcher may take; it only makes a few system calls.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);
/// The name of the launcher's report in the directory given to it.
pub(crate) const REPORT_FILE: &str = "sandbox-report.json";

/// How to confine the shell; `ShellConfig::sandbox` is `None` when it runs unconfined.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SandboxConfig {
    /// The binary that understands `__sandbox`; `None` means this executable. Tests
    /// of the library name the built `duet` binary.
    pub launcher: Option<PathBuf>,
    /// Let commands use the network (no network namespace).
    pub network: bool,
    /// Writable besides the workspace, the temp dir and the device files. Paths that
    /// do not exist when the shell starts are ignored.
    pub writable: Vec<PathBuf>,
}

/// Whether commands can reach the network.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum NetworkIsolation {
    /// The shell runs in a network namespace of its own: no interfaces but loopback.
    Isolated {
        /// The namespace's own loopback is up, so local servers started inside work.
        loopback_up: bool,
        /// The shell cannot move back into the host's network namespace: it runs in a
        /// user namespace of its own, or (root) without the capabilities to do so.
        locked: bool,
    },
    /// Commands reach whatever the host reaches.
    Open { why: String },
}

/// Whether commands can write outside the workspace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum WriteLimits {
    /// Landlock limits writes to the workspace, the temp dir, configured paths and
    /// the device files.
    Landlock {
        abi: u8,
    },
    Unlimited {
        why: String,
    },
}

/// What the launcher achieved before starting the shell.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confinement {
    pub network: NetworkIsolation,
    pub writes: WriteLimits,
}

impl Confinement {
    /// No protection, for one reason.
    pub fn none(why: &str) -> Self {
        Self {
            network: NetworkIsolation::Open { why: why.into() },
            writes: WriteLimits::Unlimited { why: why.into() },
        }
    }

    /// Whether `self` protects at least as much as `promised`.
    fn keeps(&self, promised: &Confinement) -> Result<(), String> {
        if promised.network_isolated() && !self.network_isolated() {
            return Err(format!("network isolation failed: {}", self.network));
        }
        match (&promised.writes, &self.writes) {
            (WriteLimits::Landlock { abi: promised }, WriteLimits::Landlock { abi })
                if abi < promised =>
            {
                Err(format!(
                    "write limits weakened from Landlock ABI {promised} to {abi}"
                ))
            }
            (WriteLimits::Landlock { .. }, WriteLimits::Unlimited { why }) => {
                Err(format!("write limits failed: {why}"))
            }
            _ => Ok(()),
        }
    }

    pub fn network_isolated(&self) -> bool {
        matches!(self.network, NetworkIsolation::Isolated { .. })
    }

    pub fn writes_limited(&self) -> bool {
        matches!(self.writes, WriteLimits::Landlock { .. })
    }
}

/// What the launcher writes to its report file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Report {
    /// Confined like this; the program starts next.
    Applied(Confinement),
    /// The launcher stopped before the program ran, for this reason.
    Failed(String),
}

/// Everything that protects the user from the shell's commands, as actually applied.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Protections {
    pub network: NetworkIsolation,
    pub writes: WriteLimits,
    /// Inherited variables that looked like credentials and were kept from the shell.
    pub secrets_scrubbed: usize,
}

impl Protections {
    pub fn new(confinement: Confinement, secrets_scrubbed: usize) -> Self {
        Self {
            network: confinement.network,
            writes: confinement.writes,
            secrets_scrubbed,
        }
    }

    pub fn network_isolated(&self) -> bool {
        matches!(self.network, NetworkIsolation::Isolated { .. })
    }

    pub fn writes_limited(&self) -> bool {
        matches!(self.writes, WriteLimits::Landlock { .. })
    }

    /// A few characters for a status bar: `net+fs`, `net`, `fs` or `off`.
    pub fn badge(&self) -> &'static str {
        match (self.network_isolated(), self.writes_limited()) {
            (true, true) => "net+fs",
            (true, false) => "net",
            (false, true) => "fs",
            (false, false) => "off",
        }
    }

    /// Why each missing protection is missing, one line each (one in all when they
    /// share the reason); empty when the shell is fully confined.
    pub fn gaps(&self) -> Vec<String> {
        match (&self.network, &self.writes) {
            (NetworkIsolation::Open { why }, WriteLimits::Unlimited { why: same })
                if why == same =>
            {
                vec![format!("no sandbox: {why}")]
            }
            (network, writes) => {
                let network = (!self.network_isolated()).then(|| format!("network {network}"));
                let writes = (!self.writes_limited()).then(|| format!("writes {writes}"));
                network.into_iter().chain(writes).collect()
            }
        }
    }

    /// One line: `network isolated · writes limited (Landlock ABI 5) · 2 secrets scrubbed`.
    pub fn summary(&self) -> String {
        let network = match self.network {
            NetworkIsolation::Isolated { .. } => "network isolated".to_string(),
            NetworkIsolation::Open { .. } => "network open".to_string(),
        };
        let writes = match self.writes {
            WriteLimits::Landlock { abi } => format!("writes limited (Landlock ABI {abi})"),
            WriteLimits::Unlimited { .. } => "writes unlimited".to_string(),
        };
        let secrets = match self.secrets_scrubbed {
            1 => "1 secret scrubbed".to_string(),
            count => format!("{count} secrets scrubbed"),
        };
        format!("{network} · {writes} · {secrets}")
    }
}

impl std::fmt::Display for NetworkIsolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NetworkIsolation::Isolated {
                loopback_up,
                locked,
            } => {
                f.write_str("isolated: a network namespace of its own")?;
                f.write_str(if *loopback_up {
                    ", loopback only"
                } else {
                    ", no interface up"
                })?;
                if !locked {
                    f.write_str(" (a root shell could rejoin the host's network)")?;
                }
                Ok(())
            }
            NetworkIsolation::Open { why } => write!(f, "open: {why}"),
        }
    }
}

impl std::fmt::Display for WriteLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteLimits::Landlock { abi } => {
                write!(
                    f,
                    "limited to the workspace, the temp dir and device files (Landlock ABI {abi})"
                )?;
                if *abi < 3 {
                    f.write_str(
                        "; truncating existing files elsewhere is not covered before ABI 3",
                    )?;
                }
                Ok(())
            }
            WriteLimits::Unlimited { why } => write!(f, "unlimited: {why}"),
        }
    }
}

/// How shells of one session are confined: the launcher command, and what the probe
/// found it achieves here.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    command: LauncherCommand,
    promised: Confinement,
}

impl Plan {
    /// Runs the launcher once without a shell to learn what it achieves on this
    /// machine. `Err` carries what the protections report says when it cannot run:
    /// shells then start unconfined.
    pub(crate) async fn probe(
        config: &SandboxConfig,
        workspace: &Path,
        temp_dir: &Path,
    ) -> Result<Plan, Confinement> {
        let program = match &config.launcher {
            Some(path) => path.clone(),
            None => std::env::current_exe().map_err(|error| {
                Confinement::none(&format!("cannot find duet's own executable: {error}"))
            })?,
        };
        let mut writable = config.writable.clone();
        writable.extend(repository_dirs(workspace));
        let command = LauncherCommand {
            program,
            options: launcher::options(workspace, temp_dir, &writable, config.network),
        };
        let promised = command.probe(temp_dir).await.map_err(|reason| {
            Confinement::none(&format!("the sandbox launcher did not run: {reason}"))
        })?;
        Ok(Plan { command, promised })
    }

    /// What every shell started with this plan is confined by.
    pub(crate) fn promised(&self) -> &Confinement {
        &self.promised
    }

    pub(crate) fn launcher(&self) -> &Path {
        &self.command.program
    }

    /// The launcher's arguments for running `program args...` confined, reporting into
    /// `report_dir`.
    pub(crate) fn arguments_for(
        &self,
        report_dir: &Path,
        program: &Path,
        args: &[&str],
    ) -> Vec<OsString> {
        let mut all = self.command.arguments(report_dir);
        all.push("--".into());
        all.push(program.as_os_str().to_os_string());
        all.extend(args.iter().map(OsString::from));
        all
    }

    /// Why the launcher of a shell that did not start gave up, if that is why.
    pub(crate) fn launch_failure(&self, report_dir: &Path) -> Option<String> {
        match read_report_file(report_dir) {
            Ok(Report::Failed(reason)) => Some(reason),
            _ => None,
        }
    }

    /// Checks a started shell's report against the probe's.
    pub(crate) fn verify(&self, report_dir: &Path) -> Result<(), String> {
        let achieved = read_report(report_dir)?;
        achieved
            .keeps(&self.promised)
            .map_err(|reason| format!("the sandbox could not be applied as probed: {reason}"))
    }
}

/// `duet __sandbox` with the session's settings.
#[derive(Clone, Debug)]
struct LauncherCommand {
    program: PathBuf,
    options: Vec<OsString>,
}

impl LauncherCommand {
    /// Runs the launcher with `--probe` and reads what it achieved.
    async fn probe(&self, temp_dir: &Path) -> Result<Confinement, String> {
        let dir = tempfile::Builder::new()
            .prefix("duet-sandbox-probe-")
            .tempdir_in(temp_dir)
            .map_err(|error| format!("cannot create a directory for its report: {error}"))?;
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(self.arguments(dir.path()))
            .arg("--probe")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        let output = tokio::time::timeout(PROBE_TIMEOUT, command.output())
            .await
            .map_err(|_| format!("it took longer than {} s", PROBE_TIMEOUT.as_secs()))?
            .map_err(|error| format!("{}: {error}", self.program.display()))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(format!("{} ({})", stderr.trim(), output.status));
        }
        read_report(dir.path())
    }

    /// The subcommand, the settings and where to report.
    fn arguments(&self, report_dir: &Path) -> Vec<OsString> {
        let mut all = vec![OsString::from(launcher::SUBCOMMAND)];
        all.extend(self.options.iter().cloned());
        all.push("--report-dir".into());
        all.push(report_dir.as_os_str().to_os_string());
        all
    }
}

/// The git directories of the repository the workspace belongs to, when they lie
/// outside it: the `.git` of an enclosing repository, or the directories a `.git`
/// file points to (a worktree's, and the common one it shares). Without them `git
/// commit` would fail in the sandbox.
fn repository_dirs(workspace: &Path) -> Vec<PathBuf> {
    let Some(dot_git) = workspace
        .ancestors()
        .map(|dir| dir.join(".git"))
        .find(|candidate| candidate.exists())
    else {
        return Vec::new();
    };
    let mut dirs = Vec::new();
    if dot_git.is_dir() {
        dirs.push(dot_git);
    } else if let Some(git_dir) = linked_git_dir(&dot_git) {
        if let Ok(common) = std::fs::read_to_string(git_dir.join("commondir")) {
            dirs.push(git_dir.join(common.trim()));
        }
        dirs.push(git_dir);
    }
    let workspace = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    dirs.into_iter()
        .filter_map(|dir| dir.canonicalize().ok())
        .filter(|dir| !dir.starts_with(&workspace))
        .collect()
}

/// The directory a `.git` file (`gitdir: <path>`) names, relative to the file.
fn linked_git_dir(dot_git: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(dot_git).ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    Some(dot_git.parent()?.join(target))
}

/// What the launcher achieved; its failure, or a missing report, is an error.
fn read_report(dir: &Path) -> Result<Confinement, String> {
    match read_report_file(dir)? {
        Report::Applied(confinement) => Ok(confinement),
        Report::Failed(reason) => Err(format!("the sandbox launcher failed: {reason}")),
    }
}

fn read_report_file(dir: &Path) -> Result<Report, String> {
    let path = dir.join(REPORT_FILE);
    let text = std::fs::read_to_string(&path)
        .map_err(|error| format!("no sandbox report at {}: {error}", path.display()))?;
    serde_json::from_str(&text)
        .map_err(|error| format!("unreadable sandbox report {}: {error}", path.display()))
}

#[cfg(test)]
mod tests;
