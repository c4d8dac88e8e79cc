//! What each known program does with its arguments: the tables of programs that only
//! read, talk to the network or destroy, and handlers for the ones whose arguments
//! decide (`rm -r`, `sed -i`, `curl -o`, `tee`, `cd`, ...).
//!
//! Owns: dispatch by program name and the handlers for file and network utilities.
//! Does not own: wrappers that run another command (`wrappers`), language toolchains
//! and git (`toolchains`, `git`), or path resolution (`paths`).
//! Invariant: a program missing from every table is [`CommandClass::Unknown`].

use super::CommandClass;
use super::args::{OptionSpec, Parsed, parse};
use super::paths::WriteKind;
use super::syntax::{Walker, Word};
use super::{toolchains, wrappers};

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
        "popd" => walker.cwd = super::paths::Cwd::Unknown,
        "export" | "declare" | "typeset" | "local" | "readonly" => declare(walker, call),
        "eval" => walker.note(call.part, CommandClass::Unknown, "runs text as a command"),
        "alias" | "trap" | "enable" => walker.note(
            call.part,
            CommandClass::Unknown,
            "makes later commands or signals run other code",
        ),
        "source" | "." => wrappers::source(walker, call),
        "rm" | "unlink" => remove(walker, call),
        "rmdir" => each_operand(walker, call, &OptionSpec::default(), WriteKind::Delete),
        "mv" => copy_or_move(walker, call, true),
        "cp" | "install" => copy_or_move(walker, call, false),
        "ln" => link(walker, call),
        "touch" => each_operand(walker, call, &TOUCH, WriteKind::Modify),
        "mkdir" => each_operand(walker, call, &MODE, WriteKind::Modify),
        "chmod" | "chown" | "chgrp" => permissions(walker, call),
        "tee" => tee(walker, call),
        "truncate" => each_operand(walker, call, &TRUNCATE, WriteKind::Replace),
        "shred" => {
            walker.note(
                call.part,
                CommandClass::Destructive,
                "overwrites files beyond recovery",
            );
            each_operand(walker, call, &SHRED, WriteKind::Delete);
        }
        "dd" => dd(walker, call),
        "sed" => sed(walker, call),
        "awk" | "gawk" | "mawk" | "nawk" => awk(walker, call),
        "sort" | "shuf" | "iconv" => output_option(walker, call),
        "uniq" => uniq(walker, call),
        "tar" => tar(walker, call),
        "unzip" => unzip(walker, call),
        "gzip" | "gunzip" | "bzip2" | "bunzip2" | "xz" | "unxz" | "zstd" | "unzstd" => {
            compress(walker, call);
        }
        "zip" | "patch" => walker.write_here(call.part, "changes files in the workspace"),
        "kill" | "pkill" | "killall" => kill(walker, call),
        "curl" => curl(walker, call),
        "wget" => wget(walker, call),
        "rsync" | "scp" => remote_copy(walker, call),
        "ruff" => ruff(walker, call),
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
            format!("{name} changes the system or destroys data"),
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
            format!("`{name}` is not a program duet knows"),
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

const TOUCH: OptionSpec = OptionSpec {
    short_values: "dtr",
    long_values: &["date", "reference", "time"],
    stop_at_operand: false,
};
const MODE: OptionSpec = OptionSpec {
    short_values: "m",
    long_values: &["mode", "context"],
    stop_at_operand: false,
};
const TRUNCATE: OptionSpec = OptionSpec {
    short_values: "sr",
    long_values: &["size", "reference"],
    stop_at_operand: false,
};
const SHRED: OptionSpec = OptionSpec {
    short_values: "ns",
    long_values: &["iterations", "size", "random-source", "remove"],
    stop_at_operand: false,
};
const TARGET_DIR: OptionSpec = OptionSpec {
    short_values: "tSgmo",
    long_values: &["target-directory", "suffix", "group", "mode", "owner"],
    stop_at_operand: false,
};

fn each_operand(walker: &mut Walker<'_>, call: &Call<'_>, spec: &OptionSpec, kind: WriteKind) {
    let parsed = call.parse(spec);
    for operand in parsed.operands {
        walker.write(call.part, operand, kind);
    }
}

fn change_dir(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec::default());
    let target = parsed.operands.first().copied();
    walker.cwd = if target.and_then(Word::value) == Some("-") {
        super::paths::Cwd::Unknown
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

fn remove(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec::default());
    let kind = if parsed.has(&["r", "R", "recursive"]) {
        WriteKind::DeleteTree
    } else {
        WriteKind::Delete
    };
    for operand in parsed.operands {
        walker.write(call.part, operand, kind);
    }
}

/// `mv`/`cp SRC... DEST` or `-t DIR SRC...`: the destination is overwritten; `mv` also
/// takes the sources away.
fn copy_or_move(walker: &mut Walker<'_>, call: &Call<'_>, moves: bool) {
    let parsed = call.parse(&TARGET_DIR);
    let (sources, destination) = match parsed.value(&["t", "target-directory"]) {
        Some(directory) => (&parsed.operands[..], Some((directory, WriteKind::Modify))),
        None => match parsed.operands.split_last() {
            Some((last, sources)) => (sources, Some((*last, WriteKind::Replace))),
            None => (&parsed.operands[..], None),
        },
    };
    if moves {
        for source in sources {
            walker.write(call.part, source, WriteKind::Modify);
        }
    }
    if let Some((destination, kind)) = destination {
        walker.write(call.part, destination, kind);
    }
}

fn link(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&TARGET_DIR);
    let kind = if parsed.has(&["f", "force"]) {
        WriteKind::Replace
    } else {
        WriteKind::Modify
    };
    if let Some(directory) = parsed.value(&["t", "target-directory"]) {
        walker.write(call.part, directory, WriteKind::Modify);
    } else if let [_, .., link] = parsed.operands[..] {
        walker.write(call.part, link, kind);
    } else {
        walker.write_here(call.part, "creates a link");
    }
}

fn permissions(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec {
        long_values: &["reference", "from"],
        ..OptionSpec::default()
    });
    if parsed.has(&["R", "recursive"]) {
        walker.note(
            call.part,
            CommandClass::Destructive,
            format!("{} changes ownership or permissions recursively", call.name),
        );
    }
    // The first operand is the mode or owner unless a reference file gives it.
    let skip = usize::from(!parsed.has(&["reference"]));
    for operand in parsed.operands.iter().skip(skip) {
        walker.write(call.part, operand, WriteKind::Modify);
    }
}

fn tee(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec {
        long_values: &["output-error"],
        ..OptionSpec::default()
    });
    let kind = if parsed.has(&["a", "append"]) {
        WriteKind::Modify
    } else {
        WriteKind::Replace
    };
    for operand in parsed.operands {
        walker.write(call.part, operand, kind);
    }
}

fn dd(walker: &mut Walker<'_>, call: &Call<'_>) {
    walker.note(
        call.part,
        CommandClass::Destructive,
        "dd copies raw bytes and can overwrite whole files or disks",
    );
    for arg in call.args {
        if let Some(target) = arg.spelling().strip_prefix("of=") {
            let word = if arg.value().is_some() {
                Word::literal(target)
            } else {
                Word::dynamic(target)
            };
            walker.write(call.part, &word, WriteKind::Replace);
        }
    }
}

fn sed(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec {
        short_values: "efl",
        long_values: &["expression", "file", "line-length"],
        stop_at_operand: false,
    });
    if parsed.has(&["f", "file"]) {
        walker.note(
            call.part,
            CommandClass::Unknown,
            "runs a sed script from a file, which can write files or run commands",
        );
    }
    let mut scripts: Vec<&Word> = parsed.values(&["e", "expression"]).collect();
    let mut files = parsed.operands.clone();
    if scripts.is_empty() && !parsed.has(&["f", "file"]) && !files.is_empty() {
        scripts.push(files.remove(0));
    }
    for script in scripts {
        match script.value() {
            Some(text) if !sed_script_writes_or_runs(text) => {}
            Some(_) => walker.note(
                call.part,
                CommandClass::Unknown,
                "the sed script writes files or runs commands (w, W or e)",
            ),
            None => walker.note(
                call.part,
                CommandClass::Unknown,
                "the sed script is only known when it runs",
            ),
        }
    }
    let in_place = parsed
        .options
        .iter()
        .any(|option| option.name == "i" || option.name == "in-place");
    if in_place {
        for file in files.into_iter().filter(|file| file.value() != Some("")) {
            walker.write(call.part, file, WriteKind::Modify);
        }
    }
}

/// True when a sed script has a command that writes a file (`w`, `W`, the `w` flag of
/// `s`) or runs one (`e`, the `e` flag of `s`).
fn sed_script_writes_or_runs(script: &str) -> bool {
    let chars: Vec<char> = script.chars().collect();
    let mut at = 0;
    while at < chars.len() {
        at = skip_address(&chars, at);
        let Some(&command) = chars.get(at) else {
            break;
        };
        at += 1;
        match command {
            'w' | 'W' | 'e' => return true,
            's' | 'y' => {
                let Some(&delimiter) = chars.get(at) else {
                    break;
                };
                at = skip_delimited(&chars, at + 1, delimiter);
                at = skip_delimited(&chars, at, delimiter);
                if command == 's' {
                    let flags_end = chars[at..]
                        .iter()
                        .position(|c| matches!(c, ';' | '\n' | '}'))
                        .map_or(chars.len(), |offset| at + offset);
                    if chars[at..flags_end].iter().any(|c| matches!(c, 'w' | 'e')) {
                        return true;
                    }
                    at = flags_end;
                }
            }
            // Text arguments run to the end of the line, and on past escaped newlines.
            'a' | 'i' | 'c' => at = end_of_text(&chars, at),
            // Labels and file names run to the end of the line or a `;`.
            'r' | 'R' | 'b' | 't' | 'T' | ':' | 'q' | 'Q' | 'l' | 'L' => {
                at = chars[at..]
                    .iter()
                    .position(|&c| c == '\n' || c == ';')
                    .map_or(chars.len(), |offset| at + offset);
            }
            _ => {}
        }
    }
    false
}

/// The end of an `a`/`i`/`c` text: the first newline not escaped by a backslash.
fn end_of_text(chars: &[char], mut at: usize) -> usize {
    while let Some(offset) = chars[at..].iter().position(|&c| c == '\n') {
        let newline = at + offset;
        if newline > 0 && chars[newline - 1] == '\\' {
            at = newline + 1;
        } else {
            return newline;
        }
    }
    chars.len()
}

/// Skips whitespace, separators and an address (`1`, `$`, `/re/`, `\%re%`, `1,5`, `!`).
fn skip_address(chars: &[char], mut at: usize) -> usize {
    loop {
        match chars.get(at) {
            Some(c)
                if c.is_whitespace()
                    || matches!(c, ';' | '{' | '}' | '!' | ',' | '$' | '~' | '+') =>
            {
                at += 1;
            }
            Some(c) if c.is_ascii_digit() => at += 1,
            Some('/') => at = skip_delimited(chars, at + 1, '/'),
            Some('\\') => match chars.get(at + 1) {
                Some(&delimiter) => at = skip_delimited(chars, at + 2, delimiter),
                None => return at + 1,
            },
            _ => return at,
        }
    }
}

/// The index after the next unescaped `delimiter` at or after `at`.
fn skip_delimited(chars: &[char], mut at: usize, delimiter: char) -> usize {
    while let Some(&c) = chars.get(at) {
        at += 1;
        if c == '\\' {
            at += 1;
        } else if c == delimiter {
            break;
        }
    }
    at.min(chars.len())
}

fn awk(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec {
        short_values: "fvFi",
        long_values: &["file", "assign", "field-separator", "include"],
        stop_at_operand: false,
    });
    if parsed.has(&["f", "file"]) {
        walker.note(
            call.part,
            CommandClass::Unknown,
            "runs an awk program from a file, which can write files or run commands",
        );
        return;
    }
    let mut operands = parsed.operands.iter();
    match operands.next().map(|program| program.value()) {
        None => {}
        Some(Some(program)) if !program.contains(['|', '>']) && !program.contains("system") => {}
        Some(_) => walker.note(
            call.part,
            CommandClass::Unknown,
            "the awk program may write files or run commands (`>`, `|`, system)",
        ),
    }
    let in_place = parsed
        .values(&["i", "include"])
        .any(|library| library.value() == Some("inplace"));
    if in_place {
        for file in operands {
            walker.write(call.part, file, WriteKind::Modify);
        }
    }
}

/// `sort -o FILE`, `shuf -o FILE`, `iconv -o FILE`.
fn output_option(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec {
        short_values: "oktSTfn",
        long_values: &[
            "output",
            "key",
            "field-separator",
            "buffer-size",
            "temporary-directory",
            "files0-from",
            "from-code",
            "to-code",
            "head-count",
            "random-source",
        ],
        stop_at_operand: false,
    });
    if parsed.has(&["compress-program"]) {
        walker.note(
            call.part,
            CommandClass::Unknown,
            "runs a compression program of its choice",
        );
    }
    for output in parsed.values(&["o", "output"]) {
        walker.write(call.part, output, WriteKind::Replace);
    }
}

fn uniq(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec {
        short_values: "fsw",
        long_values: &[
            "skip-fields",
            "skip-chars",
            "check-chars",
            "group",
            "all-repeated",
        ],
        stop_at_operand: false,
    });
    if let Some(output) = parsed.operands.get(1) {
        walker.write(call.part, output, WriteKind::Replace);
    }
}

fn tar(walker: &mut Walker<'_>, call: &Call<'_>) {
    // `tar xzf a.tgz` is `tar -xzf a.tgz`.
    let mut args = call.args.to_vec();
    if let Some(first) = args.first_mut().filter(|first| {
        first.value().is_some_and(|value| {
            !value.starts_with('-') && value.chars().all(|c| c.is_ascii_alphabetic())
        })
    }) {
        *first = Word::literal(&format!("-{}", first.text));
    }
    let parsed = parse(
        &args,
        &OptionSpec {
            short_values: "fCTXbKNgV",
            long_values: &[
                "file",
                "directory",
                "files-from",
                "exclude-from",
                "to-command",
            ],
            stop_at_operand: false,
        },
    );
    if parsed.has(&[
        "to-command",
        "use-compress-program",
        "I",
        "checkpoint-action",
    ]) {
        walker.note(
            call.part,
            CommandClass::Unknown,
            "tar runs a program of its choice",
        );
    }
    if parsed.has(&["t", "list", "d", "diff", "compare"]) {
        return;
    }
    let directory = parsed.value(&["C", "directory"]);
    if parsed.has(&["x", "extract", "get"]) {
        match directory {
            Some(directory) => walker.write(call.part, directory, WriteKind::Modify),
            None => walker.write_here(call.part, "extracts files (which may overwrite others)"),
        }
        return;
    }
    match parsed.value(&["f", "file"]) {
        Some(archive) => walker.write(call.part, archive, WriteKind::Replace),
        None => walker.write_here(call.part, "writes an archive"),
    }
}

fn unzip(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec {
        short_values: "dxP",
        ..OptionSpec::default()
    });
    if parsed.has(&["l", "t", "v", "Z", "p", "c"]) {
        return;
    }
    match parsed.value(&["d"]) {
        Some(directory) => walker.write(call.part, directory, WriteKind::Modify),
        None => walker.write_here(call.part, "extracts files (which may overwrite others)"),
    }
}

fn compress(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec {
        short_values: "S",
        long_values: &["suffix"],
        stop_at_operand: false,
    });
    if parsed.has(&[
        "c",
        "stdout",
        "to-stdout",
        "l",
        "list",
        "t",
        "test",
        "k",
        "keep",
    ]) {
        return;
    }
    for operand in parsed.operands {
        walker.write(call.part, operand, WriteKind::Replace);
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

fn curl(walker: &mut Walker<'_>, call: &Call<'_>) {
    walker.note(
        call.part,
        CommandClass::Network,
        "downloads or uploads over the network",
    );
    let parsed = call.parse(&OptionSpec {
        short_values: "AbcCdDeEFHKmoPQrtTuUwxXyYz",
        long_values: &[
            "output",
            "dump-header",
            "cookie-jar",
            "cookie",
            "data",
            "data-raw",
            "data-binary",
            "data-urlencode",
            "data-ascii",
            "form",
            "form-string",
            "header",
            "user-agent",
            "upload-file",
            "config",
            "output-dir",
            "request",
            "user",
            "proxy",
            "referer",
            "max-time",
            "connect-timeout",
            "retry",
            "url",
            "write-out",
            "range",
            "trace",
            "trace-ascii",
            "stderr",
            "etag-save",
            "etag-compare",
            "hsts",
            "alt-svc",
            "cert",
            "key",
            "cacert",
            "capath",
            "resolve",
            "connect-to",
            "interface",
            "json",
            "libcurl",
            "netrc-file",
            "unix-socket",
        ],
        stop_at_operand: false,
    });
    if parsed.has(&["K", "config"]) {
        walker.note(
            call.part,
            CommandClass::Unknown,
            "reads more options from a file",
        );
    }
    let written = [
        "o",
        "output",
        "D",
        "dump-header",
        "c",
        "cookie-jar",
        "trace",
        "trace-ascii",
        "stderr",
        "etag-save",
        "libcurl",
    ];
    for file in parsed.values(&written) {
        walker.write(call.part, file, WriteKind::Replace);
    }
    if parsed.has(&["O", "remote-name", "remote-name-all"]) {
        match parsed.value(&["output-dir"]) {
            Some(directory) => walker.write(call.part, directory, WriteKind::Modify),
            None => walker.write_here(call.part, "saves the download under its remote name"),
        }
    }
}

fn wget(walker: &mut Walker<'_>, call: &Call<'_>) {
    walker.note(
        call.part,
        CommandClass::Network,
        "downloads over the network",
    );
    let parsed = call.parse(&OptionSpec {
        short_values: "OoaPeiUtTwQlARDIXB",
        long_values: &[
            "output-document",
            "output-file",
            "append-output",
            "directory-prefix",
            "execute",
            "input-file",
            "user-agent",
            "tries",
            "timeout",
            "wait",
            "quota",
            "level",
            "accept",
            "reject",
            "domains",
            "include-directories",
            "exclude-directories",
            "base",
            "header",
            "post-data",
            "post-file",
            "user",
            "password",
            "load-cookies",
            "save-cookies",
        ],
        stop_at_operand: false,
    });
    for log in parsed.values(&["o", "output-file", "save-cookies"]) {
        walker.write(call.part, log, WriteKind::Replace);
    }
    for log in parsed.values(&["a", "append-output"]) {
        walker.write(call.part, log, WriteKind::Modify);
    }
    if parsed.has(&["spider"]) {
        return;
    }
    match (
        parsed.value(&["O", "output-document"]),
        parsed.value(&["P", "directory-prefix"]),
    ) {
        (Some(document), _) if document.value() == Some("-") => {}
        (Some(document), _) => walker.write(call.part, document, WriteKind::Replace),
        (None, Some(directory)) => walker.write(call.part, directory, WriteKind::Modify),
        (None, None) => walker.write_here(call.part, "saves the download"),
    }
}

/// `rsync`/`scp`: remote when an operand names a host (`host:path`, `rsync://`); the
/// last operand is the destination.
fn remote_copy(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec {
        short_values: "eiFlPoScJB",
        long_values: &[
            "rsh",
            "exclude",
            "include",
            "exclude-from",
            "include-from",
            "files-from",
            "filter",
            "rsync-path",
            "port",
            "chmod",
            "chown",
            "backup-dir",
            "suffix",
            "log-file",
            "password-file",
            "temp-dir",
            "partial-dir",
            "compare-dest",
            "copy-dest",
            "link-dest",
        ],
        stop_at_operand: false,
    });
    let is_remote = |word: &Word| {
        word.value().is_none_or(|value| {
            value.starts_with("rsync://")
                || value
                    .split_once(':')
                    .is_some_and(|(host, _)| !host.is_empty() && !host.contains('/'))
        })
    };
    if call.name == "scp" || parsed.operands.iter().any(|operand| is_remote(operand)) {
        walker.note(
            call.part,
            CommandClass::Network,
            "copies files to or from another machine",
        );
    }
    if parsed.has(&["e", "rsh", "rsync-path"]) {
        walker.note(
            call.part,
            CommandClass::Unknown,
            "runs a remote shell command of its choice",
        );
    }
    if parsed
        .options
        .iter()
        .any(|option| option.name.starts_with("delete") || option.name == "remove-source-files")
    {
        walker.note(
            call.part,
            CommandClass::Destructive,
            "deletes files that are not in the source",
        );
    }
    if let [_, .., destination] = parsed.operands[..]
        && !is_remote(destination)
    {
        walker.write(call.part, destination, WriteKind::Replace);
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
                "is a ruff command duet does not know",
            );
            return;
        }
    };
    if writes {
        walker.write_here(call.part, "rewrites files in place");
    }
}

#[cfg(test)]
mod tests {
    use super::sed_script_writes_or_runs;

    #[test]
    fn sed_scripts_that_write_or_run_are_found() {
        for script in [
            "s/a/b/",
            "1d",
            "/x/p",
            "s|w|e|g",
            "y/abc/xyz/",
            "$!N;s/\\n/ /",
            "a\\\nwow",
        ] {
            assert!(!sed_script_writes_or_runs(script), "{script}");
        }
        for script in [
            "w out.txt",
            "s/a/b/w out",
            "1e rm -rf /",
            "s/x/date/e",
            "/re/W f",
            "p;e ls",
        ] {
            assert!(sed_script_writes_or_runs(script), "{script}");
        }
    }
}
