//! The host side of one session's sandbox: which paths are protected and hidden, the
//! launcher command that confines every program, the probe that learns what this
//! machine allows, and checking a started program's report against it.
//!
//! Owns: [`Plan`] (settled once per session by a probe) and the lists of paths it
//! passes to the launcher. Does not own: running programs (the session and
//! [`super::Sandbox`]) or the layers themselves (the launcher).
//! Invariant: every path passed to the launcher is absolute and canonical, and a
//! hidden path is never the workspace, one of its ancestors or a writable path's.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::SandboxConfig;
use super::launcher::{self, Settings};
use super::report::{Confinement, REPORT_FILE, Report};
use crate::policy::ProtectedPaths;

/// How long the probe launcher may take; it only makes a few system calls.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Entries inside the workspace always mounted read-only when they exist: git's own
/// directory (hooks and config run code at the user's next `git commit`) and duet's.
const ALWAYS_PROTECTED: &[&str] = &[".git", ".duet"];

/// How programs of one session are confined: the launcher command, and what the
/// probe found it achieves here.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    program: PathBuf,
    /// Every option but the protected paths, which are listed again for each program.
    options: Vec<OsString>,
    private_tmp: PathBuf,
    workspace: PathBuf,
    protected: ProtectedPaths,
    /// The hooks directory git's config names, read once: the config is read-only.
    hooks: Vec<PathBuf>,
    promised: Confinement,
}

/// What one program's view of the workspace holds besides the plan's settings.
#[derive(Clone, Copy, Debug)]
pub(crate) struct View<'a> {
    /// The workspace is read-only (`read-only` mode).
    pub workspace_read_only: bool,
    /// The protected paths that exist now, mounted read-only.
    pub protected: &'a [PathBuf],
    /// Share the network namespace of this launcher (the session's shell) instead of
    /// making one: a background server the shell's later commands can reach.
    pub join_network: Option<i32>,
}

/// A probe that did not give a plan: the launcher missed layers nobody accepted, or
/// did not run at all.
#[derive(Clone, Debug)]
pub(crate) struct Refusal {
    pub confinement: Confinement,
    pub why: String,
}

impl Plan {
    /// Runs the launcher once without a program to learn what it achieves on this
    /// machine for this workspace.
    pub(crate) async fn probe(
        config: &SandboxConfig,
        workspace: &Path,
        private_tmp: &Path,
        reports: &Path,
        protected: &ProtectedPaths,
    ) -> Result<Plan, Refusal> {
        let failed = |why: String| Refusal {
            confinement: Confinement::none(&why),
            why,
        };
        let program = match &config.launcher {
            Some(path) => path.clone(),
            None => std::env::current_exe()
                .map_err(|error| failed(format!("cannot find duet's own executable: {error}")))?,
        };
        let workspace = workspace
            .canonicalize()
            .map_err(|error| failed(format!("cannot resolve the workspace: {error}")))?;
        let private_tmp = private_tmp
            .canonicalize()
            .map_err(|error| failed(format!("cannot resolve the private temp dir: {error}")))?;
        let writable = existing(&config.writable);
        let mut keep = vec![workspace.clone(), private_tmp.clone()];
        keep.extend(writable.iter().cloned());
        let hidden: Vec<PathBuf> = existing(&config.hidden)
            .into_iter()
            .filter(|hidden| !keep.iter().any(|kept| kept.starts_with(hidden)))
            .collect();
        let options = launcher::options(&Settings {
            workspace: &workspace,
            private_tmp: &private_tmp,
            writable: &writable,
            hidden: &hidden,
            network: config.network,
            accept_missing: &config.accept_missing,
        });
        let mut plan = Plan {
            program,
            options,
            private_tmp,
            hooks: hooks_dirs(&workspace),
            workspace,
            protected: protected.clone(),
            promised: Confinement::none("not probed yet"),
        };
        match plan.run_probe(reports).await {
            Ok(Report::Applied(confinement)) => {
                plan.promised = confinement;
                Ok(plan)
            }
            Ok(Report::Refused(confinement)) => {
                let why = confinement
                    .unaccepted_gaps(&config.accept_missing)
                    .join("; ");
                Err(Refusal { confinement, why })
            }
            Ok(Report::Failed(why)) => Err(failed(format!("the sandbox launcher failed: {why}"))),
            Err(why) => Err(failed(format!("the sandbox launcher did not run: {why}"))),
        }
    }

    /// What every program started with this plan is confined by.
    pub(crate) fn promised(&self) -> &Confinement {
        &self.promised
    }

    pub(crate) fn launcher(&self) -> &Path {
        &self.program
    }

    /// The host directory shown to programs as `/tmp`.
    pub(crate) fn private_tmp(&self) -> &Path {
        &self.private_tmp
    }

    /// Where a program sees `host`, a path in the private temp dir: under `/tmp`.
    pub(crate) fn inside_path(&self, host: &Path) -> PathBuf {
        match host.strip_prefix(&self.private_tmp) {
            Ok(relative) => Path::new("/tmp").join(relative),
            Err(_) => host.to_path_buf(),
        }
    }

    /// The protected paths of the workspace that exist now. Cheap enough to run after
    /// every command: a listing of the top of the workspace and of its hidden
    /// directories.
    pub(crate) fn protected_now(&self) -> Vec<PathBuf> {
        protected_paths_with(&self.workspace, &self.protected, &self.hooks)
    }

    /// The protected entries that exist now, relative to the workspace and named as
    /// they are (see [`protected_entries_with`]); `None` when the workspace could not
    /// be listed whole.
    pub(crate) fn protected_entries(&self) -> Option<Vec<PathBuf>> {
        match protected_entries_with(&self.workspace, &self.protected, &self.hooks) {
            Ok(entries) => Some(entries),
            Err(error) => {
                tracing::warn!(%error, "cannot list the workspace's protected paths");
                None
            }
        }
    }

    /// Where `entries` (from [`Plan::protected_entries`]) lead: what [`Plan::protected_now`]
    /// gives when they are all that exist.
    pub(crate) fn canonical(&self, entries: &[PathBuf]) -> Vec<PathBuf> {
        canonical_paths(&self.workspace, entries)
    }

    /// The canonical workspace.
    pub(crate) fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The launcher's arguments for running `program args...` confined with `view`,
    /// reporting into `report_dir`, holding at least what the probe found.
    pub(crate) fn arguments_for(
        &self,
        report_dir: &Path,
        program: &Path,
        args: &[&str],
        view: View<'_>,
    ) -> Vec<OsString> {
        let mut all = self.arguments(report_dir, view.protected);
        all.extend(launcher::requirements(&self.promised));
        if view.workspace_read_only {
            all.push("--workspace-read-only".into());
        }
        // Only where the network is isolated: an open one is the host's already.
        if let Some(pid) = view.join_network.filter(|_| !self.allows_network()) {
            all.push("--join-network".into());
            all.push(pid.to_string().into());
        }
        all.push("--".into());
        all.push(program.as_os_str().to_os_string());
        all.extend(args.iter().map(OsString::from));
        all
    }

    /// Whether programs keep the host's network (`[sandbox] network = true`).
    fn allows_network(&self) -> bool {
        self.options
            .iter()
            .any(|option| option == "--allow-network")
    }

    /// Why the launcher of a program that did not start gave up, if that is why.
    pub(crate) fn launch_failure(&self, report_dir: &Path) -> Option<String> {
        match read_report_file(report_dir) {
            Ok(Report::Failed(reason)) => Some(reason),
            Ok(Report::Refused(confinement)) => Some(format!(
                "the sandbox lacks layers: {}",
                confinement.unaccepted_gaps(&[]).join("; ")
            )),
            _ => None,
        }
    }

    /// Checks a started program's report against the probe's.
    pub(crate) fn verify(&self, report_dir: &Path) -> Result<(), String> {
        let achieved = read_report(report_dir)?;
        achieved
            .keeps(&self.promised)
            .map_err(|reason| format!("the sandbox could not be applied as probed: {reason}"))
    }

    /// Runs the launcher with `--probe` and reads what it reported.
    async fn run_probe(&self, reports: &Path) -> Result<Report, String> {
        let dir = tempfile::Builder::new()
            .prefix("probe-")
            .tempdir_in(reports)
            .map_err(|error| format!("cannot create a directory for its report: {error}"))?;
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(self.arguments(dir.path(), &self.protected_now()))
            .arg("--probe")
            .env_clear()
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        let output = tokio::time::timeout(PROBE_TIMEOUT, command.output())
            .await
            .map_err(|_| format!("it took longer than {} s", PROBE_TIMEOUT.as_secs()))?
            .map_err(|error| format!("{}: {error}", self.program.display()))?;
        match read_report_file(dir.path()) {
            Ok(report) => Ok(report),
            Err(missing) => {
                let stderr = String::from_utf8_lossy(&output.stderr);
                Err(format!("{missing} ({}; {})", stderr.trim(), output.status))
            }
        }
    }

    /// The subcommand, the settings, the protected paths and where to report.
    fn arguments(&self, report_dir: &Path, protected: &[PathBuf]) -> Vec<OsString> {
        let mut all = vec![OsString::from(launcher::SUBCOMMAND)];
        all.extend(self.options.iter().cloned());
        for path in protected {
            all.push("--read-only".into());
            all.push(path.into());
        }
        all.push("--report-dir".into());
        all.push(report_dir.as_os_str().to_os_string());
        all
    }
}

/// The protected paths of the workspace that exist, as absolute paths to mount
/// read-only: git's and duet's directories, the entries at the top of the workspace
/// and one level down that a protected pattern covers (`.env`, lockfiles,
/// `.github/workflows`), and the directories git runs hooks from when they lie inside.
#[cfg(test)]
pub(crate) fn protected_paths(workspace: &Path, protected: &ProtectedPaths) -> Vec<PathBuf> {
    protected_paths_with(workspace, protected, &hooks_dirs(workspace))
}

/// [`protected_paths`] with the hooks directories already known.
fn protected_paths_with(
    workspace: &Path,
    protected: &ProtectedPaths,
    hooks: &[PathBuf],
) -> Vec<PathBuf> {
    // A link is protected where it leads, when that is inside the workspace (the
    // kernel mounts nothing over a link itself); a link leading out needs nothing:
    // outside the workspace is read-only already.
    // A listing that failed mounts at least git's and duet's directories.
    let entries = protected_entries_with(workspace, protected, hooks)
        .unwrap_or_else(|_| ALWAYS_PROTECTED.iter().map(PathBuf::from).collect());
    canonical_paths(workspace, &entries)
}

/// Where the protected `entries` of `workspace` lead, as absolute canonical paths to
/// mount read-only, sorted.
fn canonical_paths(workspace: &Path, entries: &[PathBuf]) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = entries
        .iter()
        .filter_map(|entry| workspace.join(entry).canonicalize().ok())
        .filter(|path| path.starts_with(workspace) && path != workspace)
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

/// The protected entries that exist, relative to the workspace and as they are named
/// (a link is listed itself, not where it leads), sorted.
fn protected_entries_with(
    workspace: &Path,
    protected: &ProtectedPaths,
    hooks: &[PathBuf],
) -> std::io::Result<Vec<PathBuf>> {
    let mut entries: Vec<PathBuf> = ALWAYS_PROTECTED.iter().map(PathBuf::from).collect();
    for relative in shallow_entries(workspace)? {
        let covered = protected.check(&relative).is_some()
            // A directory whose every entry is protected (`.ci/**`).
            || protected.check(&relative.join("\u{1}")).is_some();
        // Inside git's or duet's directory everything is covered by the directory.
        let inside_always = ALWAYS_PROTECTED
            .iter()
            .any(|name| relative.starts_with(name) && relative != Path::new(name));
        if covered && !inside_always {
            entries.push(relative);
        }
    }
    entries.extend(hooks.iter().cloned());
    let mut existing = Vec::with_capacity(entries.len());
    for entry in entries {
        match workspace.join(&entry).symlink_metadata() {
            Ok(_) => existing.push(entry),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(error),
        }
    }
    existing.sort();
    existing.dedup();
    Ok(existing)
}

/// Entries at the top of the workspace, inside its top-level hidden directories
/// (where CI and editor configuration live), and the `.git` of a repository one level
/// down (`git init sub`), relative to it. Any failure to read is an error (a
/// directory that went away meanwhile aside): a partial listing would make what it
/// missed look new the next time.
fn shallow_entries(workspace: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(workspace)? {
        let entry = entry?;
        let name = PathBuf::from(entry.file_name());
        let is_dir = entry.file_type()?.is_dir();
        if is_dir && name.to_string_lossy().starts_with('.') {
            match std::fs::read_dir(entry.path()) {
                Ok(inner) => {
                    for child in inner {
                        entries.push(name.join(child?.file_name()));
                    }
                }
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(error),
            }
        } else if is_dir && entry.path().join(".git").symlink_metadata().is_ok() {
            entries.push(name.join(".git"));
        }
        entries.push(name);
    }
    Ok(entries)
}

/// The hooks directory the repository's config names (`core.hooksPath`, e.g.
/// `.husky`) when it lies inside the workspace, relative to it, whether it exists or
/// not (a command that creates it is caught). Read with libgit2, which runs nothing.
fn hooks_dirs(workspace: &Path) -> Vec<PathBuf> {
    let Ok(repository) = git2::Repository::open(workspace) else {
        return Vec::new();
    };
    let Ok(config) = repository.config() else {
        return Vec::new();
    };
    let Ok(hooks) = config.get_path("core.hooksPath") else {
        return Vec::new();
    };
    let hooks = if hooks.is_absolute() {
        hooks.canonicalize().unwrap_or(hooks)
    } else {
        workspace.join(hooks)
    };
    let Ok(relative) = hooks.strip_prefix(workspace) else {
        return Vec::new();
    };
    // Only a plain path below the workspace: no `..`, not the workspace itself.
    let plain = relative
        .components()
        .all(|part| matches!(part, std::path::Component::Normal(_)));
    if plain && !relative.as_os_str().is_empty() {
        vec![relative.to_path_buf()]
    } else {
        Vec::new()
    }
}

/// The paths among `paths` that exist, canonical.
fn existing(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = paths
        .iter()
        .filter_map(|path| path.canonicalize().ok())
        .collect();
    found.sort();
    found.dedup();
    found
}

/// What the launcher reported; its failure or refusal, or a missing report, is an error.
pub(crate) fn read_report(dir: &Path) -> Result<Confinement, String> {
    match read_report_file(dir)? {
        Report::Applied(confinement) => Ok(confinement),
        Report::Refused(confinement) => Err(format!(
            "the sandbox launcher refused: {}",
            confinement.unaccepted_gaps(&[]).join("; ")
        )),
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
