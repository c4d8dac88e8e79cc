//! Which handler classifies a program, and the tables of programs whose arguments do
//! not matter: those that only read, talk to the network, destroy, build, or check
//! unless a flag makes them rewrite files.
//!
//! Owns: dispatch by program name, the tables, and shell state (`cd`, `export`, `kill`).
//! Does not own: the handlers of file utilities (`files`), sed and awk
//! (`stream_editors`), network clients (`network`), wrappers that run another command
//! (`wrappers`), language toolchains and git (`toolchains`, `git`), or path resolution
//! (`paths`).
//! Invariant: a program missing from every table is [`CommandClass::Unknown`].

use super::CommandClass;
use super::args::{OptionSpec, Parsed, parse};
use super::paths::{Cwd, WriteKind};
use super::syntax::{Walker, Word};
use super::{files, git, network, stream_editors, toolchains, wrappers};

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
    "[",
    "ack",
    "ag",
    "apropos",
    "b2sum",
    "base32",
    "base64",
    "basename",
    "bat",
    "bc",
    "bzcat",
    "cal",
    "cat",
    "cksum",
    "cmp",
    "column",
    "comm",
    "cut",
    "date",
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
    "hash",
    "head",
    "help",
    "hexdump",
    "history",
    "hostname",
    "id",
    "info",
    "jobs",
    "join",
    "jq",
    "less",
    "locale",
    "locate",
    "ls",
    "lsblk",
    "lsof",
    "man",
    "md5sum",
    "more",
    "nl",
    "nm",
    "nproc",
    "numfmt",
    "objdump",
    "od",
    "paste",
    "pgrep",
    "printenv",
    "printf",
    "ps",
    "pwd",
    "read",
    "readelf",
    "readlink",
    "realpath",
    "return",
    "rev",
    "rg",
    "seq",
    "set",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "shellcheck",
    "shopt",
    "size",
    "sleep",
    "stat",
    "strings",
    "sum",
    "tac",
    "tail",
    "test",
    "tokei",
    "top",
    "tput",
    "tr",
    "tree",
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
    "xxd",
    "xzcat",
    "yes",
    "zcat",
    "zgrep",
    "zless",
    "cloc",
    "flake8",
    "pylint",
    "mypy",
    "pyright",
    "hadolint",
    "clear",
    "reset",
    "dpkg-query",
    "apt-cache",
    "ldd",
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
    "modprobe",
    "mkswap",
    "mount",
    "nft",
    "parted",
    "passwd",
    "poweroff",
    "reboot",
    "rmmod",
    "service",
    "setfacl",
    "sfdisk",
    "shutdown",
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

/// Tools that either only check or rewrite files, depending on a flag.
struct Checker {
    name: &'static str,
    /// Rewrites files unless one of `flags` is given (else: only when one is given).
    writes_by_default: bool,
    flags: &'static [&'static str],
}

const CHECKERS: &[Checker] = &[
    Checker {
        name: "eslint",
        writes_by_default: false,
        flags: &["--fix"],
    },
    Checker {
        name: "prettier",
        writes_by_default: false,
        flags: &["--write", "-w"],
    },
    Checker {
        name: "black",
        writes_by_default: true,
        flags: &["--check", "--diff"],
    },
    Checker {
        name: "isort",
        writes_by_default: true,
        flags: &["--check-only", "--check", "-c", "--diff"],
    },
    Checker {
        name: "rustfmt",
        writes_by_default: true,
        flags: &["--check"],
    },
    Checker {
        name: "gofmt",
        writes_by_default: false,
        flags: &["-w"],
    },
    Checker {
        name: "goimports",
        writes_by_default: false,
        flags: &["-w"],
    },
    Checker {
        name: "clang-format",
        writes_by_default: false,
        flags: &["-i"],
    },
    Checker {
        name: "autopep8",
        writes_by_default: false,
        flags: &["-i", "--in-place"],
    },
    Checker {
        name: "shfmt",
        writes_by_default: false,
        flags: &["-w", "--write"],
    },
    Checker {
        name: "stylua",
        writes_by_default: true,
        flags: &["--check"],
    },
    Checker {
        name: "tsc",
        writes_by_default: true,
        flags: &["--noEmit"],
    },
];

/// Classifies one simple command.
pub(super) fn dispatch(walker: &mut Walker<'_>, call: &Call<'_>) {
    let name = call.name;
    match name {
        "cd" | "pushd" => change_dir(walker, call),
        "popd" => walker.cwd = Cwd::Unknown,
        "export" | "declare" | "typeset" | "local" | "readonly" => declare(walker, call),
        "eval" => walker.note(call.part, CommandClass::Unknown, "runs text as a command"),
        "alias" | "trap" | "enable" => walker.note(
            call.part,
            CommandClass::Unknown,
            "makes later commands or signals run other code",
        ),
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
        "zip" | "patch" => walker.write_here(call.part, "changes files in the workspace"),
        "sed" => stream_editors::sed(walker, call),
        "awk" | "gawk" | "mawk" | "nawk" => stream_editors::awk(walker, call),
        "kill" | "pkill" | "killall" => kill(walker, call),
        "curl" => network::curl(walker, call),
        "wget" => network::wget(walker, call),
        "rsync" | "scp" => network::remote_copy(walker, call),
        "ruff" => ruff(walker, call),
        "git" => git::git(walker, call),
        _ => by_table(walker, call),
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
        }
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

/// `export NAME=value` etc. when written as a plain command (the parser usually gives
/// these as declarations, whose assignments the walk checks).
fn declare(walker: &mut Walker<'_>, call: &Call<'_>) {
    for arg in call.args {
        let name = arg.spelling().split('=').next().unwrap_or_default();
        walker.check_variable(name, call.part);
    }
}

fn kill(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec {
        short_values: "sn",
        ..OptionSpec::default()
    });
    if parsed.has(&["l", "L", "list"]) {
        return;
    }
    let only_jobs = call.name == "kill"
        && !parsed.operands.is_empty()
        && parsed
            .operands
            .iter()
            .all(|operand| operand.value().is_some_and(|value| value.starts_with('%')));
    if only_jobs {
        walker.note(
            call.part,
            CommandClass::WritesWorkspace,
            "stops a background job of this shell",
        );
    } else {
        walker.note(
            call.part,
            CommandClass::Destructive,
            "sends signals to processes, which can stop anything the user runs",
        );
    }
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
