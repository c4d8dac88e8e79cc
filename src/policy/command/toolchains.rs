//! Language toolchains and package managers: `cargo`, `npm`/`pnpm`/`yarn`/`bun`,
//! `pip`, `uv`, `poetry`, `go`, interpreters, compilers, system package managers.
//!
//! Owns: which subcommands only check, which write in the workspace (builds, tests,
//! formatters), which reach the network (installs, publishes), and which rewrite a
//! lockfile (so protection applies).
//! Does not own: git (`git`), or what a build script might do: a project's own build
//! and test code is trusted like the project.
//! Invariant: an unknown subcommand (a plugin, an alias) is [`CommandClass::Unknown`].

use super::CommandClass;
use super::args::OptionSpec;
use super::paths::WriteKind;
use super::programs::{self, Call, dispatch as dispatch_program};
use super::syntax::{Walker, Word};

/// Classifies `call` if its program is a toolchain; false if it is not one.
pub(super) fn dispatch(walker: &mut Walker<'_>, call: &Call<'_>) -> bool {
    match call.name {
        "cargo" => cargo(walker, call),
        "npm" | "pnpm" | "yarn" | "bun" => node_packages(walker, call),
        "pip" | "pip3" => pip(walker, call, call.args),
        "uv" => uv(walker, call),
        "poetry" => poetry(walker, call),
        "go" => go(walker, call),
        "rustc" | "gcc" | "g++" | "cc" | "c++" | "clang" | "clang++" => compiler(walker, call),
        "apt" | "apt-get" | "aptitude" | "dnf" | "yum" | "zypper" | "pacman" | "apk" | "brew"
        | "port" | "snap" | "flatpak" | "dpkg" | "rpm" | "gem" => system_packages(walker, call),
        "bundle" => bundle(walker, call),
        name if is_python(name) => python(walker, call),
        "node" | "ruby" | "perl" | "php" | "deno" | "lua" | "Rscript" => interpreter(walker, call),
        _ => return false,
    }
    true
}

/// `python`, `python3`, `python3.12`.
fn is_python(name: &str) -> bool {
    name.strip_prefix("python")
        .is_some_and(|version| version.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// The first operand and what follows it, past global options that take `spec`'s values.
/// A subcommand only known when it runs is noted as such (and `None`).
fn subcommand<'c>(
    walker: &mut Walker<'_>,
    call: &'c Call<'_>,
    spec: &OptionSpec,
) -> Option<(&'c str, &'c [Word])> {
    let parsed = call.parse(&OptionSpec {
        stop_at_operand: true,
        ..*spec
    });
    let (first, rest) = parsed.rest.split_first()?;
    match first.value() {
        Some(sub) => Some((sub, rest)),
        None => {
            walker.note(
                call.part,
                CommandClass::Unknown,
                format!(
                    "runs `{} {}`, a subcommand only known when it runs",
                    call.name, first.text
                ),
            );
            None
        }
    }
}

fn only_version(call: &Call<'_>) -> bool {
    call.args.iter().all(|arg| {
        matches!(
            arg.spelling(),
            "--version" | "-V" | "-v" | "version" | "--help" | "-h" | "help"
        )
    }) && !call.args.is_empty()
}

fn unknown_subcommand(walker: &mut Walker<'_>, call: &Call<'_>, sub: &str) {
    walker.note(
        call.part,
        CommandClass::Unknown,
        format!(
            "runs `{} {sub}`, a plugin or subcommand duet does not know",
            call.name
        ),
    );
}

/// Dependency changes rewrite the lockfile, which is often protected.
fn rewrites_lockfile(walker: &mut Walker<'_>, call: &Call<'_>, lockfile: &str) {
    walker.write(call.part, &Word::literal(lockfile), WriteKind::Modify);
}

fn cargo(walker: &mut Walker<'_>, call: &Call<'_>) {
    let spec = OptionSpec {
        short_values: "ZC",
        long_values: &["color", "config", "manifest-path"],
        stop_at_operand: true,
    };
    let args: Vec<Word> = call
        .args
        .iter()
        .filter(|arg| !arg.spelling().starts_with('+'))
        .cloned()
        .collect();
    let call = Call {
        args: &args,
        ..*call
    };
    if only_version(&call) {
        return;
    }
    let Some((sub, rest)) = subcommand(walker, &call, &spec) else {
        return;
    };
    let has = |flags: &[&str]| rest.iter().any(|arg| flags.contains(&arg.spelling()));
    let before_double_dash = || call.args.iter().take_while(|arg| arg.spelling() != "--");
    if before_double_dash().any(|arg| programs::flag_matches(arg, "--config")) {
        walker.note(
            call.part,
            CommandClass::Unknown,
            "sets cargo configuration on the command line, which can name programs to run \
             (runners, wrappers, linkers)",
        );
    }
    let target_dirs: Vec<Word> = call
        .parse(&OptionSpec {
            long_values: &["target-dir"],
            ..OptionSpec::default()
        })
        .values(&["target-dir"])
        .cloned()
        .collect();
    for directory in &target_dirs {
        walker.write(call.part, directory, WriteKind::Modify);
    }
    match sub {
        "tree" | "metadata" | "version" | "help" | "locate-project" | "pkgid"
        | "verify-project" | "read-manifest" => {}
        "fmt" if has(&["--check"]) => {}
        "check" | "c" | "test" | "t" | "build" | "b" | "doc" | "d" | "bench" | "nextest"
        | "expand" => walker.write_here(call.part, programs::RUNS_PROJECT_CODE),
        "clippy" if !has(&["--fix"]) => walker.write_here(call.part, programs::RUNS_PROJECT_CODE),
        "clippy" | "fmt" | "fix" | "new" | "init" => {
            walker.write_here(call.part, "rewrites or creates source files");
        }
        "run" | "r" => walker.write_here(call.part, "runs the project's program"),
        "clean" => walker.write_here(call.part, "deletes build artifacts"),
        "generate-lockfile" => rewrites_lockfile(walker, &call, "Cargo.lock"),
        "update" | "add" | "remove" | "rm" => {
            walker.note(
                call.part,
                CommandClass::Network,
                "fetches crate versions from the registry",
            );
            rewrites_lockfile(walker, &call, "Cargo.lock");
        }
        "install" | "publish" | "login" | "logout" | "owner" | "yank" | "fetch" | "vendor"
        | "search" | "info" | "audit" => {
            walker.note(
                call.part,
                CommandClass::Network,
                "talks to the crate registry",
            );
        }
        "uninstall" => walker.note(
            call.part,
            CommandClass::Destructive,
            "removes installed binaries outside the workspace",
        ),
        _ => unknown_subcommand(walker, &call, sub),
    }
}

fn node_packages(walker: &mut Walker<'_>, call: &Call<'_>) {
    let lockfile = match call.name {
        "pnpm" => "pnpm-lock.yaml",
        "yarn" => "yarn.lock",
        "bun" => "bun.lock",
        _ => "package-lock.json",
    };
    if only_version(call) {
        return;
    }
    let spec = OptionSpec {
        short_values: "wC",
        long_values: &["prefix", "workspace", "filter", "cwd", "dir"],
        stop_at_operand: true,
    };
    let Some((sub, rest)) = subcommand(walker, call, &spec) else {
        // Bare `yarn`, `pnpm` or `bun` installs; bare `npm` prints help.
        if call.name != "npm" {
            walker.note(call.part, CommandClass::Network, "installs dependencies");
            rewrites_lockfile(walker, call, lockfile);
        }
        return;
    };
    match sub {
        "ls" | "list" | "ll" | "la" | "help" | "why" | "explain" | "prefix" | "root" | "bin"
        | "get" => {}
        "config"
            if rest
                .first()
                .is_some_and(|arg| matches!(arg.spelling(), "get" | "list" | "ls")) => {}
        "config" | "set" => walker.note(
            call.part,
            CommandClass::Unknown,
            "changes package manager configuration (scripts, registries)",
        ),
        "test" | "t" | "tst" | "run" | "run-script" | "start" | "stop" | "restart" | "build"
        | "rebuild" | "pack" | "init" => {
            walker.write_here(call.part, "runs a package script");
        }
        "install" | "i" | "add" | "update" | "up" | "upgrade" | "uninstall" | "remove" | "rm"
        | "un" | "r" | "unlink" => {
            walker.note(
                call.part,
                CommandClass::Network,
                "installs or changes dependencies",
            );
            rewrites_lockfile(walker, call, lockfile);
        }
        "ci" | "publish" | "exec" | "x" | "dlx" | "audit" | "outdated" | "view" | "info"
        | "show" | "search" | "login" | "logout" | "whoami" | "create" | "unpublish"
        | "deprecate" | "dist-tag" | "owner" | "ping" => {
            walker.note(
                call.part,
                CommandClass::Network,
                "talks to the package registry",
            );
        }
        // `yarn lint`, `pnpm dev`: a package script by name.
        _ if call.name != "npm" => walker.write_here(call.part, "runs a package script"),
        _ => unknown_subcommand(walker, call, sub),
    }
}

fn pip(walker: &mut Walker<'_>, call: &Call<'_>, args: &[Word]) {
    let sub = args
        .iter()
        .find(|arg| !arg.spelling().starts_with('-'))
        .and_then(Word::value);
    match sub {
        None if args
            .iter()
            .any(|arg| matches!(arg.spelling(), "--version" | "-V")) => {}
        Some(
            "list" | "show" | "freeze" | "check" | "help" | "debug" | "inspect" | "config"
            | "cache",
        )
        | None => {}
        Some("install" | "download" | "wheel" | "search" | "index") => {
            walker.note(
                call.part,
                CommandClass::Network,
                "downloads Python packages",
            );
        }
        Some("uninstall") => walker.note(
            call.part,
            CommandClass::Destructive,
            "uninstalls packages from the Python environment, which may be outside the workspace",
        ),
        Some(sub) => unknown_subcommand(walker, call, sub),
    }
}

fn uv(walker: &mut Walker<'_>, call: &Call<'_>) {
    if only_version(call) {
        return;
    }
    let Some((sub, rest)) = subcommand(walker, call, &OptionSpec::default()) else {
        return;
    };
    match sub {
        "pip" => pip(walker, call, rest),
        "tree" | "help" | "version" => {}
        "venv" | "init" => walker.write_here(call.part, "creates project files"),
        "run" | "sync" | "tool" | "python" => {
            walker.note(
                call.part,
                CommandClass::Network,
                "may download packages or Python",
            );
            walker.write_here(call.part, "runs project code or changes the environment");
        }
        "add" | "remove" | "lock" => {
            walker.note(
                call.part,
                CommandClass::Network,
                "resolves dependencies from the index",
            );
            rewrites_lockfile(walker, call, "uv.lock");
        }
        "publish" | "build" => walker.note(
            call.part,
            CommandClass::Network,
            "talks to the package index",
        ),
        _ => unknown_subcommand(walker, call, sub),
    }
}

fn poetry(walker: &mut Walker<'_>, call: &Call<'_>) {
    if only_version(call) {
        return;
    }
    let Some((sub, _)) = subcommand(walker, call, &OptionSpec::default()) else {
        return;
    };
    match sub {
        "show" | "check" | "env" | "about" | "list" | "search" => {}
        "run" | "build" | "init" | "new" | "shell" => {
            walker.write_here(call.part, "runs project code or creates project files");
        }
        "install" | "add" | "remove" | "update" | "lock" => {
            walker.note(
                call.part,
                CommandClass::Network,
                "resolves and installs dependencies",
            );
            rewrites_lockfile(walker, call, "poetry.lock");
        }
        "publish" => walker.note(
            call.part,
            CommandClass::Network,
            "publishes to the package index",
        ),
        _ => unknown_subcommand(walker, call, sub),
    }
}

fn go(walker: &mut Walker<'_>, call: &Call<'_>) {
    let Some((sub, rest)) = subcommand(walker, call, &OptionSpec::default()) else {
        return;
    };
    match (sub, rest.first().and_then(Word::value)) {
        ("vet" | "list" | "version" | "env" | "doc" | "help", _)
        | ("mod", Some("graph" | "why" | "verify")) => {}
        ("test", _) => walker.write_here(call.part, programs::RUNS_PROJECT_CODE),
        ("build" | "run" | "generate" | "fmt" | "fix" | "clean" | "work", _)
        | ("mod", Some("init" | "edit" | "vendor")) => {
            walker.write_here(call.part, "builds, runs or rewrites project files");
        }
        ("install", _) | ("mod", Some("download")) => {
            walker.note(call.part, CommandClass::Network, "downloads Go modules");
        }
        ("get", _) | ("mod", Some("tidy")) => {
            walker.note(call.part, CommandClass::Network, "downloads Go modules");
            rewrites_lockfile(walker, call, "go.sum");
        }
        _ => unknown_subcommand(walker, call, sub),
    }
}

fn compiler(walker: &mut Walker<'_>, call: &Call<'_>) {
    let only_prints = call.args.iter().all(|arg| {
        let spelling = arg.spelling();
        spelling.starts_with("--version")
            || spelling.starts_with("--print")
            || matches!(
                spelling,
                "-V" | "-v" | "--help" | "-dumpversion" | "-dumpmachine"
            )
    });
    if only_prints && !call.args.is_empty() {
        return;
    }
    let parsed = call.parse(&OptionSpec {
        short_values: "oIDLlxC",
        long_values: &[
            "out-dir",
            "edition",
            "crate-type",
            "crate-name",
            "target",
            "emit",
        ],
        stop_at_operand: false,
    });
    match parsed.value(&["o"]) {
        Some(output) => walker.write(call.part, output, WriteKind::Replace),
        None => walker.write_here(call.part, "compiles and writes its output"),
    }
}

fn system_packages(walker: &mut Walker<'_>, call: &Call<'_>) {
    const READS: &[&str] = &[
        "list",
        "search",
        "show",
        "info",
        "policy",
        "depends",
        "rdepends",
        "-l",
        "-L",
        "-s",
        "-q",
        "-Q",
        "-Ss",
        "-Si",
        "-Qi",
        "-Ql",
        "--list",
        "--status",
        "--query",
        "-qa",
        "outdated",
        "madison",
        "contents",
        "files",
        "which",
        "environment",
        "query",
    ];
    const REMOVES: &[&str] = &[
        "remove",
        "purge",
        "autoremove",
        "uninstall",
        "erase",
        "del",
        "-R",
        "-Rs",
        "-Rns",
        "-r",
        "--remove",
        "--purge",
        "-e",
        "cleanup",
    ];
    if only_version(call) {
        return;
    }
    let action = call
        .args
        .iter()
        .find(|arg| {
            !matches!(
                arg.spelling(),
                "-y" | "--yes" | "-q" | "--quiet" | "--assume-yes"
            )
        })
        .map(Word::spelling);
    match action {
        Some(action) if READS.contains(&action) => {}
        Some(action) if REMOVES.contains(&action) => walker.note(
            call.part,
            CommandClass::Destructive,
            "removes system packages",
        ),
        _ => walker.note(
            call.part,
            CommandClass::Network,
            "installs or updates packages from the network, outside the workspace",
        ),
    }
}

fn bundle(walker: &mut Walker<'_>, call: &Call<'_>) {
    let Some((sub, rest)) = subcommand(walker, call, &OptionSpec::default()) else {
        walker.note(call.part, CommandClass::Network, "installs gems");
        rewrites_lockfile(walker, call, "Gemfile.lock");
        return;
    };
    match sub {
        "exec" => walker.run(rest, call.part),
        "list" | "show" | "info" | "check" | "help" | "version" => {}
        "install" | "update" | "add" | "lock" | "remove" => {
            walker.note(call.part, CommandClass::Network, "installs gems");
            rewrites_lockfile(walker, call, "Gemfile.lock");
        }
        _ => unknown_subcommand(walker, call, sub),
    }
}

/// `python -m MODULE` runs a known tool by its module name; inline code and scripts
/// could do anything.
fn python(walker: &mut Walker<'_>, call: &Call<'_>) {
    if only_version(call) {
        return;
    }
    let parsed = call.parse(&OptionSpec {
        short_values: "mcWX",
        stop_at_operand: true,
        ..OptionSpec::default()
    });
    if let Some(module) = parsed.value(&["m"]).and_then(Word::value) {
        let (name, args) = match module {
            "pip" => ("pip", parsed.rest),
            "pytest" | "unittest" => ("pytest", parsed.rest),
            "venv" | "virtualenv" => {
                walker.write_here(call.part, "creates a virtual environment");
                return;
            }
            "json.tool" | "py_compile" | "compileall" | "mypy" | "pyflakes" | "pylint"
            | "flake8" | "black" | "isort" | "ruff" => (module, parsed.rest),
            _ => {
                walker.note(
                    call.part,
                    CommandClass::Unknown,
                    format!("runs the Python module {module}, which duet does not know"),
                );
                return;
            }
        };
        match name {
            "json.tool" => {}
            "py_compile" | "compileall" => walker.write_here(call.part, "writes bytecode files"),
            _ => dispatch_program(
                walker,
                &Call {
                    name,
                    args,
                    part: call.part,
                },
            ),
        }
        return;
    }
    interpreter(walker, call);
}

/// An interpreter running inline code, a script, or its standard input.
fn interpreter(walker: &mut Walker<'_>, call: &Call<'_>) {
    if only_version(call) {
        return;
    }
    let script = call
        .args
        .iter()
        .find(|arg| !arg.spelling().starts_with('-'))
        .map(|arg| arg.text.as_str());
    let why = match script {
        Some(script)
            if !call
                .args
                .iter()
                .any(|arg| matches!(arg.spelling(), "-c" | "-e" | "-p" | "-E" | "-r")) =>
        {
            format!("runs {script}, whose contents duet does not check")
        }
        _ => format!("runs {} code that duet does not read", call.name),
    };
    walker.note(call.part, CommandClass::Unknown, why);
}
