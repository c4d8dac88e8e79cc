//! The git program, when duet itself runs it as a child process (the eval runner), made
//! unable to run anything the repository asks for.
//!
//! Owns: finding the program (an absolute path from `PATH`, never a relative entry or
//! one inside the directory it works on) and the environment and options of every run.
//! Does not own: which git commands are run (callers add those), or duet's in-process
//! git work (libgit2, see [`super`]).
//! Invariant: a run inside a repository ([`HostGit::in_repo`]) reads no system or
//! global config and no `GIT_*` variable of duet's own environment; its repository and
//! work tree are given explicitly (`GIT_DIR`, `GIT_WORK_TREE`), so no bare repository
//! planted below is discovered; and it runs no hook, no `core.fsmonitor` program, no
//! filter driver (every `filter.<name>` the repository's config defines is blanked on
//! the command line, which outranks every config file), no pager or signing program.
//! Commands that show diffs (`diff`, `log -p`, `show`) must also be given
//! `--no-ext-diff --no-textconv` by the caller: git has no option that blanks every
//! diff driver at once. Runs that make a repository
//! ([`HostGit::outside_repo`]: `clone`, `init`) keep the user's own config, which is
//! trusted and may hold what a clone needs (credentials, proxies).

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use tokio::process::Command;

/// Options every run gets, before the subcommand: each turns off a way for config to
/// start a program (or to find another repository).
const HARDENING: &[&str] = &[
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "safe.bareRepository=explicit",
    "-c",
    "core.pager=cat",
    "-c",
    "log.showSignature=false",
    "-c",
    "commit.gpgSign=false",
    "-c",
    "tag.gpgSign=false",
    "-c",
    "protocol.ext.allow=never",
];

/// Per filter name the config defines, the keys blanked so the filter does nothing.
const FILTER_KEYS: &[(&str, &str)] = &[
    ("clean", ""),
    ("smudge", ""),
    ("process", ""),
    ("required", "false"),
];

/// The git program, found once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostGit {
    program: PathBuf,
}

impl HostGit {
    /// Finds `git` on duet's `PATH`, skipping relative entries and any inside
    /// `untrusted` (the directory git will work on: a `git` planted there is not run).
    pub fn find(untrusted: &Path) -> io::Result<Self> {
        let path = std::env::var_os("PATH").unwrap_or_default();
        Self::find_on(&path, untrusted)
    }

    fn find_on(path: &OsString, untrusted: &Path) -> io::Result<Self> {
        let untrusted = untrusted
            .canonicalize()
            .unwrap_or_else(|_| untrusted.to_path_buf());
        for dir in std::env::split_paths(path) {
            if !dir.is_absolute() {
                continue;
            }
            let real = dir.canonicalize().unwrap_or_else(|_| dir.clone());
            if real.starts_with(&untrusted) {
                continue;
            }
            let candidate = real.join("git");
            if is_executable_file(&candidate) {
                return Ok(Self { program: candidate });
            }
        }
        Err(io::Error::new(
            io::ErrorKind::NotFound,
            "git was not found on PATH (relative entries and entries inside the \
             workspace are not used)",
        ))
    }

    /// The program that runs.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// git in the repository whose work tree is `work_tree` (`.git` in it), with none
    /// of the system's, the user's or the repository's ways to run programs.
    pub fn in_repo(&self, work_tree: &Path) -> Command {
        let git_dir = work_tree.join(".git");
        let mut command = self.base(work_tree);
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("GIT_") {
                command.env_remove(name);
            }
        }
        command
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_DIR", &git_dir)
            .env("GIT_WORK_TREE", work_tree);
        for name in filter_names(work_tree) {
            for (key, value) in FILTER_KEYS {
                command
                    .arg("-c")
                    .arg(format!("filter.{name}.{key}={value}"));
            }
        }
        command
    }

    /// git in `dir` where there is no repository yet (`clone`, `init`): the user's
    /// config applies, the hardening options too.
    pub fn outside_repo(&self, dir: &Path) -> Command {
        let mut command = self.base(dir);
        for name in [
            "GIT_DIR",
            "GIT_WORK_TREE",
            "GIT_INDEX_FILE",
            "GIT_CONFIG",
            "GIT_CONFIG_PARAMETERS",
            "GIT_CONFIG_COUNT",
        ] {
            command.env_remove(name);
        }
        command
    }

    fn base(&self, dir: &Path) -> Command {
        let mut command = Command::new(&self.program);
        command.args(HARDENING).current_dir(dir);
        command
    }
}

/// Names of the filter drivers the repository's config defines (includes followed, as
/// git would), read with libgit2, which runs none of them.
fn filter_names(work_tree: &Path) -> Vec<String> {
    let Ok(config) = git2::Config::open(&work_tree.join(".git").join("config")) else {
        return Vec::new();
    };
    let Ok(entries) = config.entries(Some(r"^filter\..*\.")) else {
        return Vec::new();
    };
    let mut names = Vec::new();
    let mut entries = entries;
    while let Some(Ok(entry)) = entries.next() {
        let Ok(key) = entry.name() else { continue };
        let Some(rest) = key.strip_prefix("filter.") else {
            continue;
        };
        let Some((name, _)) = rest.rsplit_once('.') else {
            continue;
        };
        // A name git could not be given back on the command line is skipped; git
        // would not match it from `.gitattributes` either.
        if !name.is_empty() && !name.contains(['=', '\n']) && !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    names
}

fn is_executable_file(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    path.metadata()
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    /// A committed repository whose config, attributes and hooks would each run a
    /// program that leaves a marker in `markers` (outside the repository).
    struct Hostile {
        repo: tempfile::TempDir,
        markers: tempfile::TempDir,
    }

    impl Hostile {
        fn new() -> Self {
            let repo = tempfile::tempdir().unwrap();
            let markers = tempfile::tempdir().unwrap();
            let git = git2::Repository::init(repo.path()).unwrap();
            fs::write(repo.path().join("a.txt"), "a\n").unwrap();
            crate::git::tests::commit_all(&git, "first");
            let touch = |name: &str| format!("touch {}", markers.path().join(name).display());
            let config = format!(
                "[core]\n\tfsmonitor = \"{}; false\"\n\thooksPath = hooks\n\
                 [filter \"pwn\"]\n\tclean = \"{}; cat\"\n\tsmudge = \"{}; cat\"\n\trequired = true\n\
                 [diff \"pwn\"]\n\ttextconv = \"{}; cat\"\n",
                touch("fsmonitor"),
                touch("clean"),
                touch("smudge"),
                touch("textconv"),
            );
            let path = repo.path().join(".git/config");
            let mut existing = fs::read_to_string(&path).unwrap();
            existing.push_str(&config);
            fs::write(&path, existing).unwrap();
            for dir in [".git/hooks", "hooks"] {
                fs::create_dir_all(repo.path().join(dir)).unwrap();
                for hook in [
                    "pre-commit",
                    "post-commit",
                    "post-checkout",
                    "post-index-change",
                ] {
                    let script = repo.path().join(dir).join(hook);
                    fs::write(&script, format!("#!/bin/sh\n{}\n", touch(hook))).unwrap();
                    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
                }
            }
            fs::write(
                repo.path().join(".gitattributes"),
                "* filter=pwn diff=pwn\n",
            )
            .unwrap();
            fs::write(repo.path().join("a.txt"), "b\n").unwrap();
            Self { repo, markers }
        }

        fn markers(&self) -> Vec<String> {
            let mut names: Vec<String> = fs::read_dir(self.markers.path())
                .unwrap()
                .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        }
    }

    async fn run(mut command: Command, args: &[&str]) -> std::process::Output {
        command
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .unwrap()
    }

    const COMMANDS: &[&[&str]] = &[
        &["status", "--short"],
        &["add", "--all"],
        &["diff", "--no-ext-diff", "--no-textconv", "--cached", "HEAD"],
        &["commit", "--quiet", "-m", "second"],
        &["log", "--no-ext-diff", "--no-textconv", "-p", "-1"],
        &["checkout", "--quiet", "HEAD~1", "--", "a.txt"],
    ];

    #[tokio::test]
    async fn the_repository_cannot_make_a_hardened_run_start_a_program() {
        let hostile = Hostile::new();
        let git = HostGit::find(hostile.repo.path()).unwrap();
        for args in COMMANDS {
            let output = run(git.in_repo(hostile.repo.path()), args).await;
            assert!(
                output.status.success(),
                "git {args:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let patch = hostile.markers.path().with_extension("patch");
        fs::write(&patch, "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n a\n+c\n").unwrap();
        let output = run(
            git.in_repo(hostile.repo.path()),
            &["apply", patch.to_str().unwrap()],
        )
        .await;
        assert!(output.status.success(), "{output:?}");
        assert_eq!(hostile.markers(), Vec::<String>::new());
    }

    /// The control: the same repository with a plain `git` does run its programs, so
    /// the test above can fail.
    #[tokio::test]
    async fn a_plain_git_run_in_the_same_repository_does_start_them() {
        let hostile = Hostile::new();
        let mut plain = Command::new("git");
        plain
            .current_dir(hostile.repo.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null");
        run(plain, &["add", "--all"]).await;
        let markers = hostile.markers();
        assert!(markers.contains(&"fsmonitor".to_string()), "{markers:?}");
        assert!(markers.contains(&"clean".to_string()), "{markers:?}");
    }

    #[test]
    fn git_is_never_taken_from_a_relative_entry_or_the_workspace() {
        let workspace = tempfile::tempdir().unwrap();
        let planted = workspace.path().join("bin");
        fs::create_dir(&planted).unwrap();
        let fake = planted.join("git");
        fs::write(&fake, "#!/bin/sh\n").unwrap();
        fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).unwrap();
        let real = HostGit::find(Path::new("/nonexistent")).unwrap();
        let real_dir = real.program().parent().unwrap().to_path_buf();
        let path = std::env::join_paths([Path::new("bin"), &planted, &real_dir]).unwrap();
        let found = HostGit::find_on(&path, workspace.path()).unwrap();
        assert_eq!(found.program(), real.program());
        let only_planted = std::env::join_paths([Path::new("bin"), &planted]).unwrap();
        assert!(HostGit::find_on(&only_planted, workspace.path()).is_err());
    }
}
