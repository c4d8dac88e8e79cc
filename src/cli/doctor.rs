//! `duet doctor`: one screen that says whether duet can run here and what protects the
//! user while it does.
//!
//! Owns: gathering the facts (config, model settings, key presence, state directory,
//! custom commands and the prompt files left out, the instruction files a session
//! starts with, shells and tools on PATH, the shell's protections) and laying them
//! out. Does not
//! own: any of the mechanisms it reports on.
//! Invariant: it never prints a secret's value, and it reports protections as the
//! sandbox launcher achieved them, never as configured.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use duet::config::{self, ConfigError, FileConfig, Flags, Paths};
use duet::custom_commands::{Catalog, Locations};
use duet::hooks::Hook;
use duet::hooks::config::HooksSection;
use duet::instructions::{self, Origin, UserFile};
use duet::policy::ProtectedPaths;
use duet::shell::ShellConfig;
use duet::shell::environment::EnvironmentPolicy;
use duet::shell::sandbox::{NetworkIsolation, Protections, Sandbox, WriteLimits};

/// How a line of the report reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Ok,
    /// Optional, or informational.
    Note,
    /// Works, with less than it could.
    Warn,
    /// duet cannot run like this.
    Fail,
}

impl Status {
    fn tag(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Note => "--",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Check {
    status: Status,
    label: &'static str,
    detail: String,
}

fn check(status: Status, label: &'static str, detail: impl Into<String>) -> Check {
    Check {
        status,
        label,
        detail: detail.into(),
    }
}

/// Runs every check, prints the report, and fails when duet could not run.
pub fn run(flags: &Flags, workspace: &Path) -> ExitCode {
    let checks = gather(flags, workspace);
    // Paths and probe output are quoted in the report: no escape sequence in them
    // reaches the terminal.
    print!("{}", duet::terminal_text::sanitize(&render(&checks)));
    if checks.iter().any(|check| check.status == Status::Fail) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn gather(flags: &Flags, workspace: &Path) -> Vec<Check> {
    let env = |name: &str| std::env::var(name).ok();
    let paths = match Paths::discover() {
        Ok(paths) => paths,
        Err(error) => return vec![check(Status::Fail, "config file", error.to_string())],
    };
    let (file, mut checks) = config_file(&paths.config_file, config::load_file(&paths.config_file));
    let shell = match config::resolve(&file, &env, flags, &paths) {
        Ok(settings) => {
            checks.extend(model_checks(
                &settings,
                env(&settings.api_key_env).is_some(),
            ));
            Ok(settings.shell)
        }
        Err(error) => {
            checks.push(check(Status::Fail, "model", error.to_string()));
            config::resolve_shell(&file, &env, &paths)
        }
    };
    checks.push(state_dir(&paths.state_dir));
    let locations = super::tui::custom_command_locations(&paths, workspace);
    checks.extend(custom_commands(
        &super::tui::load_custom_commands(&locations),
        &locations,
    ));
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    checks.extend(hooks(
        &file.hooks,
        &paths.config_file,
        workspace,
        home.as_deref(),
    ));
    let user_instructions = instructions::user_files_from_process(paths.config_file.parent());
    checks.extend(instruction_files(workspace, &user_instructions));
    checks.extend(programs());
    match shell {
        Ok(shell) => checks.extend(protections(shell, file.policy.protected.clone(), workspace)),
        Err(error) => checks.push(check(Status::Fail, "sandbox", error.to_string())),
    }
    checks
}

fn config_file(path: &Path, loaded: Result<FileConfig, ConfigError>) -> (FileConfig, Vec<Check>) {
    let shown = path.display();
    match loaded {
        Ok(file) if path.exists() => (
            file,
            vec![check(
                Status::Ok,
                "config file",
                format!("{shown} (parsed)"),
            )],
        ),
        Ok(file) => (
            file,
            vec![check(
                Status::Note,
                "config file",
                format!("{shown} (none; built-in defaults)"),
            )],
        ),
        // The rest of the report still says what the defaults would do.
        Err(error) => (
            FileConfig::default(),
            vec![check(Status::Fail, "config file", error.to_string())],
        ),
    }
}

fn model_checks(settings: &config::Settings, key_set: bool) -> Vec<Check> {
    let endpoint = &settings.endpoint;
    let key = if key_set {
        check(
            Status::Ok,
            "API key",
            format!("{} is set", settings.api_key_env),
        )
    } else {
        check(
            Status::Note,
            "API key",
            format!(
                "{} is not set (the server at the base URL needs none)",
                settings.api_key_env
            ),
        )
    };
    vec![
        check(Status::Ok, "provider", endpoint.wire.to_string()),
        check(Status::Ok, "model", endpoint.model.clone()),
        check(Status::Ok, "base URL", endpoint.base_url.clone()),
        key,
    ]
}

fn state_dir(dir: &Path) -> Check {
    let writable = std::fs::create_dir_all(dir).and_then(|()| tempfile::tempfile_in(dir).map(drop));
    match writable {
        Ok(()) => check(
            Status::Ok,
            "state dir",
            format!("{} (writable)", dir.display()),
        ),
        Err(error) => check(
            Status::Fail,
            "state dir",
            format!("{}: {error}", dir.display()),
        ),
    }
}

/// The slash commands the prompt files make, and the files left out with the reason.
/// The user's hooks, and the project's with whether they run (only where the user's
/// config trusts the project).
fn hooks(
    section: &HooksSection,
    config_file: &Path,
    workspace: &Path,
    home: Option<&Path>,
) -> Vec<Check> {
    let line = |hook: &Hook| {
        let matcher = if hook.event.has_matcher() {
            format!(" [{}]", hook.matcher.source())
        } else {
            String::new()
        };
        let confinement = if hook.trusted {
            "trusted, unconfined"
        } else {
            "in the sandbox"
        };
        format!(
            "{}{matcher}  {}  ({confinement})",
            hook.event.name(),
            hook.label()
        )
    };
    let mut checks = Vec::new();
    match section.user_hooks(config_file) {
        Ok(user) if user.is_empty() => checks.push(check(
            Status::Note,
            "hooks",
            "none configured (see README \"Hooks\")".to_string(),
        )),
        Ok(user) => {
            let lines: Vec<String> = user.iter().map(line).collect();
            checks.push(check(
                Status::Ok,
                "hooks",
                format!("{} of yours:\n{}", user.len(), lines.join("\n")),
            ));
        }
        Err(error) => checks.push(check(Status::Fail, "hooks", error.to_string())),
    }
    let (project, problems) = duet::hooks::config::project_hooks(workspace);
    let trusted = section.trusts_project(workspace, home);
    if !project.is_empty() {
        let lines: Vec<String> = project.iter().map(line).collect();
        let (status, verdict) = if trusted {
            (
                Status::Ok,
                "run (this workspace is in `[hooks] trusted_projects`)",
            )
        } else {
            (
                Status::Warn,
                "ignored as untrusted: add this workspace to `[hooks] trusted_projects` to run \
                 them (always in the sandbox)",
            )
        };
        checks.push(check(
            status,
            "hooks",
            format!(
                "{} of the project's, {verdict}:\n{}",
                project.len(),
                lines.join("\n")
            ),
        ));
    }
    if !problems.is_empty() {
        checks.push(check(Status::Warn, "hooks", problems.join("\n")));
    }
    checks
}

fn custom_commands(catalog: &Catalog, locations: &Locations) -> Vec<Check> {
    let mut checks = Vec::new();
    if catalog.is_empty() {
        let looked: Vec<&str> = locations
            .sources
            .iter()
            .map(|source| source.shown.as_str())
            .collect();
        checks.push(check(
            Status::Note,
            "commands",
            format!(
                "no prompt files (looked in {}; see README \"Custom commands\")",
                looked.join(", ")
            ),
        ));
    } else {
        let lines: Vec<String> = catalog
            .commands()
            .iter()
            .map(|command| format!("/{}  {}  {}", command.name, command.origin, command.file))
            .collect();
        checks.push(check(
            Status::Ok,
            "commands",
            format!(
                "{} from prompt files:\n{}",
                catalog.commands().len(),
                lines.join("\n")
            ),
        ));
    }
    if !catalog.ignored().is_empty() {
        let lines: Vec<String> = catalog
            .ignored()
            .iter()
            .map(|ignored| format!("{} ({}): {}", ignored.file, ignored.origin, ignored.why))
            .collect();
        checks.push(check(
            Status::Warn,
            "commands",
            format!(
                "{} left out:\n{}",
                catalog.ignored().len(),
                lines.join("\n")
            ),
        ));
    }
    checks
}

/// The instruction files a session in `workspace` starts with (the user's own, then
/// the project's), with their sizes, and the files refused.
fn instruction_files(workspace: &Path, user: &[UserFile]) -> Vec<Check> {
    // The agent works in the canonical directory; so does the lookup up to the git root.
    let workspace = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    let found = instructions::at_start(&workspace, user);
    let nested = "those of directories below load when the model first reads, edits or writes a \
                  file there, or you mention one";
    let mut checks = Vec::new();
    if found.files.is_empty() {
        let looked: Vec<&str> = user.iter().map(|place| place.shown.as_str()).collect();
        let mut places = looked.join(", ");
        if !places.is_empty() {
            places.push_str(", ");
        }
        checks.push(check(
            Status::Note,
            "instructions",
            format!(
                "none at start (looked in {places}CLAUDE.md and AGENTS.md from here up to the \
                 git root);\n{nested}"
            ),
        ));
    } else {
        let lines: Vec<String> = found
            .files
            .iter()
            .map(|file| {
                let shown = match file.origin {
                    Origin::User => file.shown.clone(),
                    Origin::Project => file.path.display().to_string(),
                };
                format!("{shown}  {}  {} bytes", file.origin, file.bytes)
            })
            .collect();
        checks.push(check(
            Status::Ok,
            "instructions",
            format!(
                "{} read at start:\n{}\n{nested}",
                found.files.len(),
                lines.join("\n")
            ),
        ));
    }
    if !found.skipped.is_empty() {
        let lines: Vec<String> = found
            .skipped
            .iter()
            .map(|skipped| format!("{} ({}): {}", skipped.shown, skipped.origin, skipped.why))
            .collect();
        checks.push(check(
            Status::Warn,
            "instructions",
            format!("{} left out:\n{}", found.skipped.len(), lines.join("\n")),
        ));
    }
    checks
}

/// Shells duet can drive, and the tools it works with.
fn programs() -> Vec<Check> {
    let found = |name: &str, version_flag: &str| {
        find_on_path(name).map(|path| {
            let version =
                version_of(&path, version_flag).unwrap_or_else(|| "version unknown".into());
            format!("{version} ({})", path.display())
        })
    };
    let bash = match found("bash", "--version") {
        Some(detail) => check(Status::Ok, "bash", detail),
        None => check(
            Status::Fail,
            "bash",
            "not found on PATH: the shell tool needs bash or zsh",
        ),
    };
    let optional = |name: &'static str, flag: &str, missing: &str| match found(name, flag) {
        Some(detail) => check(Status::Ok, name, detail),
        None => check(Status::Note, name, format!("not found ({missing})")),
    };
    vec![
        bash,
        optional("zsh", "--version", "bash is used"),
        optional(
            "git",
            "--version",
            "no branch in the status bar, no git tools",
        ),
        optional("tmux", "-V", "only needed for the end-to-end tests"),
    ]
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

/// The first line the program prints for `flag`.
fn version_of(program: &Path, flag: impl AsRef<OsStr>) -> Option<String> {
    let output = std::process::Command::new(program)
        .arg(flag)
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .next()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_string)
}

/// What programs would be protected by in `workspace`, found by running the sandbox
/// launcher the way a session does, with the config's protected paths.
fn protections(shell: ShellConfig, protected: ProtectedPaths, workspace: &Path) -> Vec<Check> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let sandbox = Sandbox::new(
        workspace,
        shell.sandbox.clone(),
        protected,
        &EnvironmentPolicy::from_filter(&shell.secrets),
    );
    let protections = match runtime {
        Ok(runtime) => runtime.block_on(sandbox.protections()),
        Err(error) => {
            return vec![check(
                Status::Fail,
                "sandbox",
                format!("cannot start the async runtime: {error}"),
            )];
        }
    };
    protection_checks(&protections)
}

/// One line per layer: ok when applied; when missing, a failure if that stops
/// commands, else a warning. A sandbox missing everything for one reason is one line.
fn protection_checks(protections: &Protections) -> Vec<Check> {
    let mut checks = Vec::new();
    if let Some(refused) = &protections.refused {
        checks.push(check(
            Status::Fail,
            "sandbox",
            format!(
                "commands cannot run: {refused}\n(`[sandbox] accept_missing` in the config file \
                 lets them run without those layers)"
            ),
        ));
    }
    let missing = if protections.refused.is_some() {
        Status::Fail
    } else {
        Status::Warn
    };
    let confinement = &protections.confinement;
    let gaps = protections.gaps();
    if let [only] = gaps.as_slice()
        && only.starts_with("no sandbox: ")
    {
        checks.push(check(missing, "sandbox", only.clone()));
    } else {
        let layer = |applied: bool, label: &'static str, text: String| {
            check(if applied { Status::Ok } else { missing }, label, text)
        };
        checks.extend([
            layer(
                confinement.namespaces.is_applied(),
                "namespaces",
                confinement.namespaces.to_string(),
            ),
            check(
                match confinement.network {
                    NetworkIsolation::Isolated { .. } => Status::Ok,
                    NetworkIsolation::Allowed => Status::Warn,
                    NetworkIsolation::Open { .. } => missing,
                },
                "network",
                confinement.network.to_string(),
            ),
            layer(
                matches!(confinement.writes, WriteLimits::Landlock { .. }),
                "writes",
                confinement.writes.to_string(),
            ),
            layer(
                confinement.protected.is_applied(),
                "protected",
                confinement.protected.to_string(),
            ),
            layer(
                confinement.credentials.is_applied(),
                "credentials",
                confinement.credentials.to_string(),
            ),
            layer(
                confinement.capabilities.is_applied(),
                "capabilities",
                confinement.capabilities.to_string(),
            ),
            layer(
                confinement.syscalls.is_applied(),
                "syscalls",
                confinement.syscalls.to_string(),
            ),
        ]);
    }
    checks.push(check(
        Status::Ok,
        "environment",
        format!(
            "an allow-list: {} inherited variables passed, {} withheld \
             (`[shell] keep_env` passes more)",
            protections.environment_passed, protections.environment_withheld
        ),
    ));
    checks
}

/// One line per check: status tag, label, detail, in aligned columns. A detail of
/// several lines continues in its column.
fn render(checks: &[Check]) -> String {
    let width = checks
        .iter()
        .map(|check| check.label.len())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for check in checks {
        let mut lines = check.detail.lines();
        let first = lines.next().unwrap_or_default();
        let head = format!("{:<4}  {:<width$}  ", check.status.tag(), check.label);
        let _ = writeln!(out, "{}", format!("{head}{first}").trim_end());
        let indent = " ".repeat(head.len());
        for line in lines {
            let _ = writeln!(out, "{}", format!("{indent}{line}").trim_end());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use duet::shell::sandbox::{Confinement, Layer};

    use super::*;

    #[test]
    fn the_report_aligns_labels_and_tags() {
        let checks = [
            check(Status::Ok, "git", "git version 2.43.0"),
            check(Status::Warn, "network", "open: no user namespaces"),
            check(Status::Fail, "bash", "not found"),
        ];
        assert_eq!(
            render(&checks),
            "ok    git      git version 2.43.0\n\
             warn  network  open: no user namespaces\n\
             FAIL  bash     not found\n"
        );
    }

    #[test]
    fn a_long_detail_continues_in_its_column() {
        let checks = [check(
            Status::Fail,
            "model",
            "none configured:\n\n  export X=1",
        )];
        assert_eq!(
            render(&checks),
            "FAIL  model  none configured:\n\n               export X=1\n"
        );
    }

    fn protections(refused: Option<&str>) -> Protections {
        let mut confinement = Confinement::none("unused");
        confinement.namespaces = Layer::applied("user, mount, process namespaces");
        confinement.network = NetworkIsolation::Open {
            why: "user namespaces are off".into(),
        };
        confinement.writes = WriteLimits::Landlock { abi: 5 };
        confinement.capabilities = Layer::applied("none left");
        confinement.syscalls = Layer::missing("no filter for this architecture");
        confinement.protected = Layer::applied("2 paths read-only");
        confinement.credentials = Layer::applied("3 credential paths hidden");
        Protections {
            confinement,
            refused: refused.map(str::to_string),
            environment_passed: 12,
            environment_withheld: 30,
        }
    }

    fn status_of<'a>(checks: &'a [Check], label: &str) -> &'a Check {
        checks
            .iter()
            .find(|check| check.label == label)
            .unwrap_or_else(|| panic!("no {label} check"))
    }

    #[test]
    fn accepted_missing_layers_are_warnings_with_their_reason() {
        let checks = protection_checks(&protections(None));
        let network = status_of(&checks, "network");
        assert_eq!(network.status, Status::Warn);
        assert_eq!(network.detail, "open: user namespaces are off");
        assert_eq!(status_of(&checks, "syscalls").status, Status::Warn);
        assert_eq!(status_of(&checks, "writes").status, Status::Ok);
        assert!(
            status_of(&checks, "writes")
                .detail
                .contains("Landlock ABI 5")
        );
        assert_eq!(status_of(&checks, "protected").status, Status::Ok);
        let environment = &status_of(&checks, "environment").detail;
        assert!(
            environment.contains("12 inherited variables passed, 30 withheld"),
            "{environment}"
        );
    }

    #[test]
    fn a_sandbox_that_refuses_fails_and_says_how_to_accept() {
        let checks = protection_checks(&protections(Some("syscalls: no filter")));
        let sandbox = status_of(&checks, "sandbox");
        assert_eq!(sandbox.status, Status::Fail);
        assert!(
            sandbox.detail.contains("accept_missing"),
            "{}",
            sandbox.detail
        );
        assert_eq!(status_of(&checks, "syscalls").status, Status::Fail);
    }

    #[test]
    fn a_sandbox_turned_off_is_one_line() {
        let protections = Protections {
            confinement: Confinement::none("turned off"),
            refused: None,
            environment_passed: 1,
            environment_withheld: 0,
        };
        let checks = protection_checks(&protections);
        assert_eq!(checks.len(), 2);
        assert_eq!(checks[0].detail, "no sandbox: turned off");
    }

    #[test]
    fn a_broken_config_file_fails_but_the_defaults_are_still_reported() {
        let path = Path::new("/c/config.toml");
        let broken = config::parse_file(path, "modle = 1\n");
        let (file, checks) = config_file(path, broken);
        assert_eq!(file, FileConfig::default());
        assert_eq!(checks[0].status, Status::Fail);
        assert!(
            checks[0].detail.starts_with("/c/config.toml:1:"),
            "{}",
            checks[0].detail
        );
    }

    #[cfg(unix)]
    #[test]
    fn custom_commands_are_listed_and_the_files_left_out_say_why() {
        let workspace = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let write = |dir: &Path, relative: &str, content: &str| {
            let path = dir.join(relative);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        };
        write(
            workspace.path(),
            ".duet/commands/review.md",
            "Review $ARGUMENTS",
        );
        write(workspace.path(), ".duet/commands/help.md", "Not the help");
        write(home.path(), ".codex/prompts/fix.md", "Fix $1");
        write(home.path(), ".codex/prompts/review.md", "Another review");
        std::os::unix::fs::symlink(
            "/etc/passwd",
            workspace.path().join(".duet/commands/passwd.md"),
        )
        .unwrap();
        let home_path = home.path().as_os_str().to_os_string();
        let env = move |name: &str| (name == "HOME").then(|| home_path.clone());
        let locations = Locations::new(workspace.path(), None, &env);
        let checks = custom_commands(
            &super::super::tui::load_custom_commands(&locations),
            &locations,
        );
        assert_eq!(
            render(&checks),
            "ok    commands  2 from prompt files:\n\
             \x20               /fix  user  ~/.codex/prompts/fix.md\n\
             \x20               /review  user  ~/.codex/prompts/review.md\n\
             warn  commands  3 left out:\n\
             \x20               .duet/commands/help.md (project): /help is a built-in command, \
             which a file cannot replace\n\
             \x20               .duet/commands/passwd.md (project): a symbolic link out of the \
             project (a project's files are read only inside it)\n\
             \x20               .duet/commands/review.md (project): /review is already defined \
             by ~/.codex/prompts/review.md\n"
        );
        let nothing = Locations::new(home.path().join("none").as_path(), None, &|_| None);
        let checks = custom_commands(&Catalog::default(), &nothing);
        assert_eq!(checks.len(), 1);
        assert_eq!(checks[0].status, Status::Note);
        assert!(
            checks[0]
                .detail
                .contains(".duet/commands, .claude/commands"),
            "{}",
            checks[0].detail
        );
    }

    #[cfg(unix)]
    #[test]
    fn instruction_files_are_listed_with_their_sizes_and_the_refused_ones_say_why() {
        let workspace = tempfile::tempdir().unwrap();
        let root = workspace.path().canonicalize().unwrap();
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join(".claude")).unwrap();
        std::fs::write(home.path().join(".claude/CLAUDE.md"), "Be brief.\n").unwrap();
        std::fs::write(root.join("AGENTS.md"), "Run the tests.\n").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("CLAUDE.md")).unwrap();
        let home_path = home.path().as_os_str().to_os_string();
        let env = move |name: &str| (name == "HOME").then(|| home_path.clone());
        let user = instructions::user_files(None, &env);

        let checks = instruction_files(workspace.path(), &user);
        assert_eq!(
            render(&checks),
            format!(
                "ok    instructions  2 read at start:\n\
                 \x20                   ~/.claude/CLAUDE.md  user  10 bytes\n\
                 \x20                   {}  project  15 bytes\n\
                 \x20                   those of directories below load when the model first \
                 reads, edits or writes a file there, or you mention one\n\
                 warn  instructions  1 left out:\n\
                 \x20                   CLAUDE.md (project): a symbolic link out of the project \
                 (a project's files are read only inside it)\n",
                root.join("AGENTS.md").display()
            )
        );

        let empty = tempfile::tempdir().unwrap();
        let empty_home = empty.path().as_os_str().to_os_string();
        let env = move |name: &str| (name == "HOME").then(|| empty_home.clone());
        let checks = instruction_files(empty.path(), &instructions::user_files(None, &env));
        assert_eq!(checks.len(), 1);
        assert_eq!(checks[0].status, Status::Note);
        assert!(
            checks[0]
                .detail
                .starts_with("none at start (looked in ~/.claude/CLAUDE.md, ~/.codex/AGENTS.md, "),
            "{}",
            checks[0].detail
        );
    }

    #[test]
    fn hooks_are_listed_and_an_untrusted_projects_are_said_to_be_ignored() {
        let workspace = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(workspace.path().join(".duet")).unwrap();
        std::fs::write(
            workspace.path().join(".duet/hooks.toml"),
            "[[PostToolUse]]\nmatcher = \"Edit\"\ncommand = \"cargo fmt\"\n",
        )
        .unwrap();
        let section: HooksSection =
            toml::from_str("[[Stop]]\ncommand = \"make test\"\ntrusted = true\n").unwrap();
        let config = Path::new("/c/config.toml");
        let shown = render(&hooks(&section, config, workspace.path(), None));
        assert!(
            shown.contains(
                "ok    hooks  1 of yours:\n             Stop  make test  (trusted, unconfined)"
            ),
            "{shown}"
        );
        assert!(
            shown.contains("warn  hooks  1 of the project's, ignored as untrusted"),
            "{shown}"
        );
        assert!(
            shown.contains("PostToolUse [Edit]  cargo fmt  (in the sandbox)"),
            "{shown}"
        );
        let listed = format!(
            "trusted_projects = [{}]\n",
            toml::Value::String(workspace.path().display().to_string())
        );
        let trusting: HooksSection = toml::from_str(&listed).unwrap();
        let shown = render(&hooks(&trusting, config, workspace.path(), None));
        assert!(shown.contains("none configured"), "{shown}");
        assert!(
            shown.contains("ok    hooks  1 of the project's, run"),
            "{shown}"
        );
    }

    #[test]
    fn an_unwritable_state_dir_fails() {
        let file = tempfile::NamedTempFile::new().unwrap();
        let check = state_dir(&file.path().join("state"));
        assert_eq!(check.status, Status::Fail);
    }
}
