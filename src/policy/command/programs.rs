//! Which handler classifies a program, and the tables of programs whose arguments do
//! not matter: those that only read, talk to the network, destroy, build, load the
//! project's code, or check unless a flag makes them rewrite files.
//!
//! Owns: dispatch by program name, the tables, `cd`, and refusing to call a read an
//! argument that may hide an option (`$X`, xargs input, a glob like `*`) for programs
//! whose options run programs or write files.
//! Does not own: the handlers of file utilities (`files`), sed and awk
//! (`stream_editors`), readers with dangerous options (`readers`), the shell's own
//! state (`shell_state`), the clock, host name and signals (`system`), network clients
//! (`network`), wrappers that run another command (`wrappers`), language toolchains and
//! git (`toolchains`, `git`), or path resolution (`paths`).
//! Invariant: a program missing from every table is [`CommandClass::Unknown`]; a program
//! in `READ_ONLY` has no option that runs a program, writes a file or loads the
//! project's code.

use super::CommandClass;
use super::args::{OptionSpec, Parsed, parse};
use super::paths::{Cwd, WriteKind};
use super::syntax::{Walker, Word};
use super::{
    files, git, network, readers, shell_state, stream_editors, system, toolchains, wrappers,
};

/// One simple command, its program name resolved.
pub(super) struct Call<'a> {
    pub name: &'a str,
    pub args: &'a [Word],
    /// The command as written, for reasons.
    pub part: &'a str,
}

impl Call<'_> {
    pub(super) fn parse(&self, spec: &OptionSpec) -> Parsed<'_> {
        parse(self.args, spec)
    }

    /// The argument words as given.
    pub(super) fn has_word(&self, words: &[&str]) -> bool {
        self.args
            .iter()
            .any(|arg| arg.value().is_some_and(|value| words.contains(&value)))
    }
}

/// Programs that only read or print, whatever their arguments.
const READ_ONLY: &[&str] = &[
    ":",
    "apropos",
    "b2sum",
    "base32",
    "base64",
    "basename",
    "bc",
    "bzcat",
    "cal",
    "cat",
    "cksum",
    "cmp",
    "column",
    "comm",
    "cut",
    "df",
    "diff",
    "dir",
    "dirname",
    "dirs",
    "du",
    "echo",
    "egrep",
    "eza",
    "exa",
    "exit",
    "expand",
    "expr",
    "factor",
    "false",
    "fgrep",
    "file",
    "fold",
    "free",
    "getconf",
    "getent",
    "grep",
    "groups",
    "head",
    "help",
    "hexdump",
    "id",
    "jobs",
    "join",
    "jq",
    "locale",
    "locate",
    "ls",
    "lsblk",
    "lsof",
    "md5sum",
    "nl",
    "nm",
    "nproc",
    "numfmt",
    "objdump",
    "od",
    "paste",
    "pgrep",
    "printenv",
    "ps",
    "pwd",
    "readelf",
    "readlink",
    "realpath",
    "return",
    "rev",
    "seq",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "shellcheck",
    "size",
    "sleep",
    "stat",
    "strings",
    "sum",
    "tac",
    "tail",
    "tokei",
    "top",
    "tput",
    "tr",
    "true",
    "tty",
    "type",
    "ulimit",
    "umask",
    "uname",
    "unexpand",
    "uptime",
    "wait",
    "wc",
    "whatis",
    "whereis",
    "which",
    "whoami",
    "xzcat",
    "yes",
    "zcat",
    "zgrep",
    "cloc",
    "pyright",
    "hadolint",
    "clear",
    "reset",
    "dpkg-query",
    "apt-cache",
];

/// Programs that talk to other machines.
const NETWORK: &[&str] = &[
    "aria2c",
    "aws",
    "az",
    "bunx",
    "dig",
    "ftp",
    "gcloud",
    "gh",
    "glab",
    "helm",
    "host",
    "http",
    "https",
    "hub",
    "kubectl",
    "lftp",
    "mosh",
    "mtr",
    "nc",
    "ncat",
    "netcat",
    "nslookup",
    "npx",
    "ping",
    "ping6",
    "pipx",
    "pnpx",
    "sftp",
    "socat",
    "ssh",
    "telnet",
    "traceroute",
    "whois",
    "xh",
];

/// Programs that change the system or destroy data whatever their arguments.
const DESTRUCTIVE: &[&str] = &[
    "cfdisk",
    "chattr",
    "chpasswd",
    "crontab",
    "fdisk",
    "gdisk",
    "groupadd",
    "groupdel",
    "halt",
    "insmod",
    "iptables",
    "killall5",
    "modprobe",
    "mkswap",
    "mount",
    "nft",
    "parted",
    "passwd",
    "poweroff",
    "reboot",
    "renice",
    "rmmod",
    "service",
    "setfacl",
    "sfdisk",
    "shutdown",
    "skill",
    "snice",
    "swapoff",
    "swapon",
    "sysctl",
    "systemctl",
    "telinit",
    "ufw",
    "umount",
    "useradd",
    "userdel",
    "usermod",
    "visudo",
    "wipefs",
];

/// Build and test runners: they write in the directory they run in.
const BUILDERS: &[&str] = &[
    "bazel", "cmake", "ctest", "gradle", "gradlew", "jest", "just", "make", "meson", "mocha",
    "mvn", "ninja", "nox", "pytest", "rake", "tox", "vite", "vitest", "webpack", "esbuild",
    "rollup", "split", "csplit", "gmake",
];

/// Checkers that load code the project's configuration names (plugins, hooks, a
/// config file that is a program): running them runs code from the repository.
const PROJECT_CODE: &[&str] = &["pylint", "mypy", "flake8", "stylelint"];

/// What running a program that loads the project's code is said to do.
pub(super) const RUNS_PROJECT_CODE: &str =
    "runs code from the repository (its configuration, plugins, build scripts or tests)";

/// Tools that either only check or rewrite files, depending on a flag.
struct Checker {
    name: &'static str,
    /// Rewrites files unless one of `flags` is given (else: only when one is given).
    writes_by_default: bool,
    flags: &'static [&'static str],
    /// Its configuration is code from the project (`eslint.config.js`).
    loads_project_code: bool,
}

const CHECKERS: &[Checker] = &[
    Checker {
        name: "eslint",
        writes_by_default: false,
        flags: &["--fix"],
        loads_project_code: true,
    },
    Checker {
        name: "prettier",
        writes_by_default: false,
        flags: &["--write", "-w"],
        loads_project_code: true,
    },
    Checker {
        name: "black",
        writes_by_default: true,
        flags: &["--check", "--diff"],
        loads_project_code: false,
    },
    Checker {
        name: "isort",
        writes_by_default: true,
        flags: &["--check-only", "--check", "-c", "--diff"],
        loads_project_code: false,
    },
    Checker {
        name: "rustfmt",
        writes_by_default: true,
        flags: &["--check"],
        loads_project_code: false,
    },
    Checker {
        name: "gofmt",
        writes_by_default: false,
        flags: &["-w"],
        loads_project_code: false,
    },
    Checker {
        name: "goimports",
        writes_by_default: false,
        flags: &["-w"],
        loads_project_code: false,
    },
    Checker {
        name: "clang-format",
        writes_by_default: false,
        flags: &["-i"],
        loads_project_code: false,
    },
    Checker {
        name: "autopep8",
        writes_by_default: false,
        flags: &["-i", "--in-place"],
        loads_project_code: false,
    },
    Checker {
        name: "shfmt",
        writes_by_default: false,
        flags: &["-w", "--write"],
        loads_project_code: false,
    },
    Checker {
        name: "stylua",
        writes_by_default: true,
        flags: &["--check"],
        loads_project_code: false,
    },
    Checker {
        name: "tsc",
        writes_by_default: true,
        flags: &["--noEmit"],
        loads_project_code: false,
    },
];

/// Programs with options that run other programs or write files, so an argument only
/// known when the command runs (`$X`, input from `xargs`, a glob like `*`) may turn
/// out to be one of them (a file named `--pre=x.sh` is a real option to `rg`).
const OPTIONS_RUN_OR_WRITE: &[&str] = &[
    "ack", "ag", "bat", "batcat", "cargo", "cp", "curl", "date", "fd", "fdfind", "find", "git",
    "hostname", "iconv", "info", "install", "less", "ln", "man", "more", "most", "mv", "patch",
    "rg", "rsync", "scp", "sed", "sftp", "shuf", "sort", "ssh", "tar", "tree", "uniq", "wget",
    "xxd", "zip", "zless",
];

/// Classifies one simple command.
pub(super) fn dispatch(walker: &mut Walker<'_>, call: &Call<'_>) {
    let name = call.name;
    if OPTIONS_RUN_OR_WRITE.contains(&name) {
        hidden_options(walker, call);
    }
    match name {
        "cd" | "pushd" => change_dir(walker, call),
        "popd" => walker.cwd = Cwd::Unknown,
        "export" | "declare" | "typeset" | "local" | "readonly" => {
            shell_state::declare(walker, name, call.args, call.part);
        }
        "unset" => shell_state::unset(walker, call.args, call.part),
        "alias" | "trap" | "bind" | "enable" | "hash" => shell_state::definitions(walker, call),
        "set" => shell_state::set(walker, call),
        "shopt" => shell_state::shopt(walker, call),
        "read" | "mapfile" | "readarray" | "getopts" | "printf" => {
            shell_state::assigning_builtin(walker, call);
        }
        "let" => shell_state::let_builtin(walker, call),
        "test" | "[" => shell_state::test_builtin(walker, call),
        "history" => shell_state::history(walker, call),
        "eval" => walker.note(call.part, CommandClass::Unknown, "runs text as a command"),
        "source" | "." => wrappers::source(walker, call),
        "rm" | "unlink" => files::remove(walker, call),
        "rmdir" => files::each_operand(walker, call, &OptionSpec::default(), WriteKind::Delete),
        "mv" => files::copy_or_move(walker, call, true),
        "cp" | "install" => files::copy_or_move(walker, call, false),
        "ln" => files::link(walker, call),
        "touch" => files::each_operand(walker, call, &files::TOUCH, WriteKind::Modify),
        "mkdir" => files::each_operand(walker, call, &files::MODE, WriteKind::Modify),
        "chmod" | "chown" | "chgrp" => files::permissions(walker, call),
        "tee" => files::tee(walker, call),
        "truncate" => files::each_operand(walker, call, &files::TRUNCATE, WriteKind::Replace),
        "shred" => files::shred(walker, call),
        "dd" => files::dd(walker, call),
        "sort" | "shuf" | "iconv" => files::output_option(walker, call),
        "uniq" => files::uniq(walker, call),
        "tar" => files::tar(walker, call),
        "unzip" => files::unzip(walker, call),
        "gzip" | "gunzip" | "bzip2" | "bunzip2" | "xz" | "unxz" | "zstd" | "unzstd" => {
            files::compress(walker, call);
        }
        "zip" => files::zip(walker, call),
        "patch" => walker.write_here(call.part, "changes files in the workspace"),
        "sed" => stream_editors::sed(walker, call),
        "awk" | "gawk" | "mawk" | "nawk" => stream_editors::awk(walker, call),
        "rg" => readers::ripgrep(walker, call),
        "ag" | "bat" | "batcat" => readers::pager_option(walker, call),
        "ack" => readers::ack(walker, call),
        "less" | "more" | "most" | "zless" => readers::pager(walker, call),
        "man" => readers::man(walker, call),
        "info" => readers::info(walker, call),
        "tree" => readers::tree(walker, call),
        "xxd" => readers::xxd(walker, call),
        "ldd" => readers::ldd(walker, call),
        "date" => system::date(walker, call),
        "hwclock" => system::hwclock(walker, call),
        "timedatectl" => system::timedatectl(walker, call),
        "hostname" => system::hostname(walker, call),
        "kill" | "pkill" | "killall" => system::kill(walker, call),
        "curl" => network::curl(walker, call),
        "wget" => network::wget(walker, call),
        "rsync" | "scp" => network::remote_copy(walker, call),
        "ruff" => ruff(walker, call),
        "git" => git::git(walker, call),
        _ => by_table(walker, call),
    }
}

/// Notes an argument that may be an option the command text does not show, for a
/// program whose options run programs or write files.
fn hidden_options(walker: &mut Walker<'_>, call: &Call<'_>) {
    let hidden = call
        .args
        .iter()
        .take_while(|arg| arg.value() != Some("--"))
        .find(|arg| arg.may_be_option());
    if let Some(arg) = hidden {
        walker.note(
            call.part,
            CommandClass::Unknown,
            format!(
                "gets `{}`, which may turn into options only known when it runs (a file named \
                 like an option, such as `--pre=x.sh`, is one)",
                arg.text
            ),
        );
    }
}

fn by_table(walker: &mut Walker<'_>, call: &Call<'_>) {
    let name = call.name;
    if READ_ONLY.contains(&name) {
        return;
    }
    if NETWORK.contains(&name) {
        walker.note(call.part, CommandClass::Network, "talks to other machines");
    } else if DESTRUCTIVE.contains(&name) || name.starts_with("mkfs") {
        walker.note(
            call.part,
            CommandClass::Destructive,
            "changes the system or destroys data",
        );
    } else if BUILDERS.contains(&name) {
        walker.write_here(
            call.part,
            "runs a build or tests that write in the workspace",
        );
    } else if let Some(checker) = CHECKERS.iter().find(|checker| checker.name == name) {
        let flagged = call
            .args
            .iter()
            .any(|arg| checker.flags.iter().any(|flag| flag_matches(arg, flag)));
        if flagged != checker.writes_by_default {
            walker.write_here(call.part, "rewrites files in place");
        } else if checker.loads_project_code {
            walker.write_here(call.part, RUNS_PROJECT_CODE);
        }
    } else if PROJECT_CODE.contains(&name) {
        walker.write_here(call.part, RUNS_PROJECT_CODE);
    } else if !wrappers::dispatch(walker, call) && !toolchains::dispatch(walker, call) {
        walker.note(
            call.part,
            CommandClass::Unknown,
            format!("runs `{name}`, a program duet does not know"),
        );
    }
}

/// `arg` is `flag` or `flag=...`.
pub(super) fn flag_matches(arg: &Word, flag: &str) -> bool {
    arg.value().is_some_and(|value| {
        value == flag
            || value
                .strip_prefix(flag)
                .is_some_and(|rest| rest.starts_with('='))
    })
}

fn change_dir(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec::default());
    let target = parsed.operands.first().copied();
    walker.cwd = if target.and_then(Word::value) == Some("-") {
        Cwd::Unknown
    } else {
        walker.cwd.after_cd(target, walker.context.root)
    };
}

fn ruff(walker: &mut Walker<'_>, call: &Call<'_>) {
    let writes = match call.args.first().and_then(Word::value) {
        Some("format") => !call.has_word(&["--check", "--diff"]),
        Some("check") | None => call.has_word(&["--fix", "--unsafe-fixes"]),
        Some("--version" | "version" | "help" | "--help" | "rule" | "config") => false,
        Some(_) => {
            walker.note(
                call.part,
                CommandClass::Unknown,
                "runs a ruff command duet does not know",
            );
            return;
        }
    };
    if writes {
        walker.write_here(call.part, "rewrites files in place");
    }
}
