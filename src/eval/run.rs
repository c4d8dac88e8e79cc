//! Running one case: a throwaway copy of its repository, `duet exec --done` in it as
//! a child process, then the done command again, before and after the hidden tests.
//!
//! Owns: making the workspace (a copied directory, or a clone at the case's commit,
//! committed as the baseline when it is not a git repository yet), the `duet exec`
//! command line, the list of touched files, applying the hidden tests and running the
//! done command.
//! Does not own: the verdict ([`super::score`]) or reading the events
//! ([`super::transcript`]).
//! Invariant: a case never touches its source: everything happens in a temporary
//! directory that is removed when the case ends. A case that cannot run ends as a
//! result with the error, not as a failure of the whole eval.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::Command;

use super::cases::{Case, RepoSource};
use super::score::{self, CaseResult, Checks};
use super::transcript;
use crate::exec::done::DUET_DIR;
use crate::git::host::HostGit;
use crate::lint::command::{self as shell_command, Outcome};
use crate::policy::ProtectedPaths;
use crate::shell::environment::EnvironmentPolicy;
use crate::shell::sandbox::{Sandbox, SandboxConfig};

/// Output of the done command kept while it runs (the eval reports only its status).
const DONE_OUTPUT_CAP: usize = 16 * 1024;

/// How every case is run.
#[derive(Clone, Debug)]
pub struct Runner {
    /// The `duet` binary the cases run.
    pub exe: PathBuf,
    /// Arguments before `exec` in every run: provider, model, approval mode, budgets.
    pub global_args: Vec<String>,
    /// Approve what the approval mode would ask about (`duet exec --yes`).
    pub approve_all: bool,
    pub done_timeout: Duration,
    /// The sandbox the done command runs in; `None` when the user turned it off.
    pub sandbox: Option<SandboxConfig>,
    /// What the done command may see of duet's environment.
    pub environment: EnvironmentPolicy,
}

/// Why a case could not be run to the end.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot make a workspace: {0}")]
    Workspace(std::io::Error),
    #[error("cannot copy {}: {source}", path.display())]
    Copy {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("`git {command}` failed: {detail}")]
    Git { command: String, detail: String },
    #[error("cannot run `{}`: {source}", exe.display())]
    Exec {
        exe: PathBuf,
        source: std::io::Error,
    },
}

/// Runs and judges one case.
pub async fn run_case(runner: &Runner, case: &Case) -> CaseResult {
    let started = Instant::now();
    match try_run(runner, case).await {
        Ok(result) => result,
        Err(error) => score::failed(case, error.to_string(), started.elapsed().as_secs_f64()),
    }
}

async fn try_run(runner: &Runner, case: &Case) -> Result<CaseResult, RunError> {
    let dir = tempfile::Builder::new()
        .prefix("duet-eval-")
        .tempdir()
        .map_err(RunError::Workspace)?;
    let workspace = dir.path().join("repo");
    materialize(&case.repo, &workspace).await?;
    let baseline = baseline(&workspace).await?;

    let started = Instant::now();
    let output = exec_command(runner, case, &workspace)
        .output()
        .await
        .map_err(|source| RunError::Exec {
            exe: runner.exe.clone(),
            source,
        })?;
    let wall_secs = started.elapsed().as_secs_f64();
    if !output.stderr.is_empty() {
        tracing::debug!(case = %case.id, stderr = %String::from_utf8_lossy(&output.stderr));
    }
    let transcript = transcript::read(&String::from_utf8_lossy(&output.stdout));

    let files_touched = touched_files(&workspace, &baseline).await?;
    let done_passed = done_passes(runner, case, &workspace).await;
    let hidden_tests_passed = match &case.hidden_tests {
        None => None,
        Some(patch) => {
            Some(apply(&workspace, patch).await && done_passes(runner, case, &workspace).await)
        }
    };
    Ok(score::score(
        case,
        &transcript,
        Checks {
            done_passed,
            hidden_tests_passed,
            files_touched,
            exec_status: output.status.code(),
            wall_secs,
        },
    ))
}

/// `duet [global args] -C WORKSPACE exec --json --done CMD ... -- PROMPT`.
fn exec_command(runner: &Runner, case: &Case, workspace: &Path) -> Command {
    let mut command = Command::new(&runner.exe);
    command
        .args(&runner.global_args)
        .arg("-C")
        .arg(workspace)
        .args(["exec", "--json", "--done", &case.done.cmd, "--done-timeout"])
        .arg(runner.done_timeout.as_secs().to_string());
    if runner.approve_all {
        command.arg("--yes");
    }
    command
        .arg("--")
        .arg(&case.prompt)
        .current_dir(workspace)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Puts the case's repository at `workspace`.
async fn materialize(source: &RepoSource, workspace: &Path) -> Result<(), RunError> {
    match source {
        RepoSource::Local(path) => {
            let (from, to) = (path.clone(), workspace.to_path_buf());
            tokio::task::spawn_blocking(move || copy_tree(&from, &to))
                .await
                .map_err(|error| RunError::Workspace(std::io::Error::other(error)))?
        }
        RepoSource::Git { url, commit } => {
            let parent = workspace.parent().unwrap_or(workspace);
            let target = workspace.to_string_lossy();
            git(parent, &["clone", "--quiet", url, &target]).await?;
            git(workspace, &["checkout", "--quiet", "--detach", commit]).await?;
            Ok(())
        }
    }
}

/// Copies the directory `from` to `to` (which must not exist), symbolic links as links.
fn copy_tree(from: &Path, to: &Path) -> Result<(), RunError> {
    let copy_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| RunError::Copy { path, source }
    };
    std::fs::create_dir(to).map_err(copy_error(to))?;
    for entry in std::fs::read_dir(from).map_err(copy_error(from))? {
        let entry = entry.map_err(copy_error(from))?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().map_err(copy_error(&source))?;
        if kind.is_dir() {
            copy_tree(&source, &target)?;
        } else if kind.is_symlink() {
            let link = std::fs::read_link(&source).map_err(copy_error(&source))?;
            symlink(&link, &target).map_err(copy_error(&source))?;
        } else {
            std::fs::copy(&source, &target).map_err(copy_error(&source))?;
        }
    }
    Ok(())
}

#[cfg(unix)]
fn symlink(link: &Path, target: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(link, target)
}

#[cfg(not(unix))]
fn symlink(link: &Path, target: &Path) -> std::io::Result<()> {
    std::fs::copy(link, target).map(drop)
}

/// The commit the case starts from; a plain directory is committed first.
async fn baseline(workspace: &Path) -> Result<String, RunError> {
    if !workspace.join(".git").exists() {
        git(workspace, &["init", "--quiet"]).await?;
        git(workspace, &["add", "--all"]).await?;
        git(
            workspace,
            &[
                "commit",
                "--quiet",
                "--allow-empty",
                "--message",
                "duet eval: the case's starting tree",
            ],
        )
        .await?;
    }
    Ok(git(workspace, &["rev-parse", "HEAD"])
        .await?
        .trim()
        .to_string())
}

/// Every file added, changed or deleted since `baseline`, committed or not, except
/// duet's own files.
async fn touched_files(workspace: &Path, baseline: &str) -> Result<Vec<String>, RunError> {
    git(workspace, &["add", "--all"]).await?;
    let names = git(
        workspace,
        &[
            "diff",
            "--cached",
            "--name-only",
            "--no-renames",
            "--no-ext-diff",
            "--no-textconv",
            "-z",
            baseline,
        ],
    )
    .await?;
    let own = format!("{DUET_DIR}/");
    Ok(names
        .split('\0')
        .filter(|name| !name.is_empty() && !name.starts_with(&own))
        .map(str::to_string)
        .collect())
}

/// Applies the hidden tests; a patch that does not apply fails them.
async fn apply(workspace: &Path, patch: &Path) -> bool {
    let patch = patch.to_string_lossy();
    match git(workspace, &["apply", "--whitespace=nowarn", &patch]).await {
        Ok(_) => true,
        Err(error) => {
            tracing::info!(%error, "the hidden tests did not apply");
            false
        }
    }
}

async fn done_passes(runner: &Runner, case: &Case, workspace: &Path) -> bool {
    // A sandbox of the case's own: the hidden tests and the model's code are both
    // project code.
    let sandbox = Sandbox::new(
        workspace,
        runner.sandbox.clone(),
        ProtectedPaths::default(),
        &runner.environment,
    );
    let run = shell_command::run(
        workspace,
        &case.done.cmd,
        runner.done_timeout,
        DONE_OUTPUT_CAP,
        Some(&sandbox),
    )
    .await;
    tracing::debug!(case = %case.id, outcome = ?run.outcome, output = %run.output, "done command");
    run.outcome == Outcome::Exited(0)
}

/// Runs git in `dir` without the user's identity mattering; returns stdout. After
/// `clone` and `init`, the workspace is a repository the model may have changed, so
/// git runs there hardened ([`HostGit::in_repo`]): nothing it holds starts a program.
async fn git(dir: &Path, args: &[&str]) -> Result<String, RunError> {
    let failed = |detail: String| RunError::Git {
        command: args.join(" "),
        detail,
    };
    let host = HostGit::find(dir).map_err(|error| failed(error.to_string()))?;
    let mut command = match args.first() {
        Some(&"clone" | &"init") => host.outside_repo(dir),
        _ => host.in_repo(dir),
    };
    let output = command
        .args([
            "-c",
            "user.name=duet eval",
            "-c",
            "user.email=eval@duet.invalid",
        ])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(|error| failed(error.to_string()))?;
    if !output.status.success() {
        return Err(failed(
            String::from_utf8_lossy(&output.stderr).trim().to_string(),
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// After the model ran, the workspace's `.git/config` and `.gitattributes` are the
    /// model's: listing what it touched and applying the hidden tests must not run the
    /// programs they name.
    #[tokio::test]
    async fn a_workspace_the_model_changed_cannot_make_the_runner_start_a_program() {
        let workspace = tempfile::tempdir().unwrap();
        let markers = tempfile::tempdir().unwrap();
        let root = workspace.path();
        std::fs::write(root.join("a.txt"), "a\n").unwrap();
        let baseline = baseline(root).await.unwrap();
        let touch = |name: &str| format!("touch {}", markers.path().join(name).display());
        let config = root.join(".git/config");
        let mut text = std::fs::read_to_string(&config).unwrap();
        text.push_str(&format!(
            "[core]\n\tfsmonitor = \"{}; false\"\n[filter \"x\"]\n\tclean = \"{}; cat\"\n\
             \tsmudge = \"{}; cat\"\n[diff \"x\"]\n\ttextconv = \"{}; cat\"\n",
            touch("fsmonitor"),
            touch("clean"),
            touch("smudge"),
            touch("textconv")
        ));
        std::fs::write(&config, text).unwrap();
        std::fs::write(root.join(".gitattributes"), "* filter=x diff=x\n").unwrap();
        std::fs::write(root.join("a.txt"), "b\n").unwrap();

        let touched = touched_files(root, &baseline).await.unwrap();
        assert_eq!(touched, [".gitattributes", "a.txt"]);
        let patch = markers.path().with_extension("patch");
        std::fs::write(&patch, "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n b\n+c\n").unwrap();
        assert!(apply(root, &patch).await);
        assert_eq!(
            std::fs::read_to_string(root.join("a.txt")).unwrap(),
            "b\nc\n"
        );
        let ran: Vec<_> = std::fs::read_dir(markers.path()).unwrap().collect();
        assert!(ran.is_empty(), "programs ran: {ran:?}");
    }
}
