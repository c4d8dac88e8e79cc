//! Programs that read and print, but have options that run another program or write a
//! file: searchers (`rg --pre`, `ag --pager`, `ack`), pagers (`less +!cmd`, `less -o`),
//! `bat --pager`, `man -P`, `info -o`, `tree -o`, `xxd IN OUT`, `ldd`.
//!
//! Owns: which options of these programs run programs or write files.
//! Does not own: environment variables that do the same (`LESSOPEN`, `MANPAGER`,
//! `RIPGREP_CONFIG_PATH`: `environment`), or arguments only known when the command runs
//! (`programs` refuses to call those reads for these programs).
//! Invariant: without such an option the program only reads; with one it is
//! [`CommandClass::Unknown`] or a write judged by `paths`.

use super::CommandClass;
use super::args::OptionSpec;
use super::paths::WriteKind;
use super::programs::Call;
use super::syntax::Walker;

/// `rg`: `--pre` runs a program on every file searched, `--hostname-bin` runs one to
/// learn the host name, `-z` runs decompressors found on `PATH`.
pub(super) fn ripgrep(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec {
        short_values: "ABCdeEfgjmMrtT",
        long_values: &[
            "pre",
            "pre-glob",
            "hostname-bin",
            "regexp",
            "file",
            "glob",
            "iglob",
            "type",
            "type-not",
            "type-add",
            "type-clear",
            "replace",
            "encoding",
            "max-count",
            "max-depth",
            "threads",
            "context",
            "after-context",
            "before-context",
            "max-columns",
            "max-filesize",
            "sort",
            "sortr",
            "colors",
            "color",
            "path-separator",
            "engine",
            "ignore-file",
            "context-separator",
            "field-context-separator",
            "field-match-separator",
            "hyperlink-format",
            "dfa-size-limit",
            "regex-size-limit",
            "generate",
        ],
        stop_at_operand: false,
    });
    if parsed.has(&["pre", "pre-glob", "hostname-bin"]) {
        walker.note(
            call.part,
            CommandClass::Unknown,
            "runs a program of its choice on what it searches (--pre, --hostname-bin)",
        );
    }
    if parsed.has(&["z", "search-zip"]) {
        walker.note(
            call.part,
            CommandClass::Unknown,
            "runs decompression programs (found on PATH) on compressed files (-z)",
        );
    }
}

/// `ag --pager CMD`, `bat --pager CMD`.
pub(super) fn pager_option(walker: &mut Walker<'_>, call: &Call<'_>) {
    if call
        .args
        .iter()
        .any(|arg| arg.spelling().starts_with("--pager"))
    {
        walker.note(
            call.part,
            CommandClass::Unknown,
            "runs a pager of its choice",
        );
    }
}

/// `ack` reads options from `.ackrc` files, the project's included, and `--pager` or
/// `--output` there (or here) run code; only `--noenv` keeps them out.
pub(super) fn ack(walker: &mut Walker<'_>, call: &Call<'_>) {
    let runs_code = call.args.iter().any(|arg| {
        let spelling = arg.spelling();
        spelling.starts_with("--pager") || spelling.starts_with("--output")
    });
    if runs_code || !call.has_word(&["--noenv"]) {
        walker.note(
            call.part,
            CommandClass::Unknown,
            "reads options from .ackrc files (the project's included), which can run a \
             pager or Perl code; `ack --noenv` does not",
        );
    }
}

/// `less` (and `more`, `most`, `zless`): `+CMD` runs a pager command at start (`+!cmd`
/// runs a shell command), `-o FILE` copies its input to a file, a lesskey file can set
/// `LESSOPEN`.
pub(super) fn pager(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec {
        short_values: "bhjkoOpPtTxyz",
        long_values: &[
            "log-file",
            "LOG-FILE",
            "lesskey-file",
            "lesskey-src",
            "lesskey-content",
            "tag",
            "tag-file",
            "prompt",
            "buffers",
            "max-back-scroll",
            "max-forw-scroll",
            "tabs",
            "window",
            "shift",
            "pattern",
        ],
        stop_at_operand: false,
    });
    for log in parsed.values(&["o", "O", "log-file", "LOG-FILE"]) {
        walker.write(call.part, log, WriteKind::Replace);
    }
    let commands = parsed
        .operands
        .iter()
        .any(|operand| operand.spelling().starts_with('+'));
    if commands || parsed.has(&["k", "lesskey-file", "lesskey-src", "lesskey-content"]) {
        walker.note(
            call.part,
            CommandClass::Unknown,
            "runs pager commands given on its command line or in a lesskey file, which can \
             run shell commands",
        );
    }
}

/// `man -P PAGER`, `-H BROWSER`, `-C CONFIG`, `-X`.
pub(super) fn man(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec {
        short_values: "CeELmMpPrRsS",
        long_values: &[
            "pager",
            "config-file",
            "encoding",
            "extension",
            "locale",
            "systems",
            "manpath",
            "preprocessor",
            "prompt",
            "recode",
            "sections",
        ],
        stop_at_operand: false,
    });
    if parsed.has(&[
        "P",
        "pager",
        "H",
        "html",
        "C",
        "config-file",
        "X",
        "gxditview",
    ]) {
        walker.note(
            call.part,
            CommandClass::Unknown,
            "runs a pager, browser or viewer of its choice (-P, -H, -X) or reads another \
             configuration (-C)",
        );
    }
}

/// `info -o FILE` / `--dribble FILE` write files.
pub(super) fn info(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec {
        short_values: "dfno",
        long_values: &[
            "directory",
            "file",
            "node",
            "output",
            "dribble",
            "restore",
            "init-file",
            "index-search",
        ],
        stop_at_operand: false,
    });
    for file in parsed.values(&["o", "output", "dribble"]) {
        walker.write(call.part, file, WriteKind::Replace);
    }
}

/// `tree -o FILE` writes its listing; `-R` writes an index into every directory.
pub(super) fn tree(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec {
        short_values: "LPIHTo",
        long_values: &[
            "filelimit",
            "timefmt",
            "sort",
            "charset",
            "fromfile",
            "infofile",
            "hintro",
            "houtro",
        ],
        stop_at_operand: false,
    });
    for file in parsed.values(&["o"]) {
        walker.write(call.part, file, WriteKind::Replace);
    }
    if parsed.has(&["R"]) {
        walker.write_here(call.part, "writes an index file into every directory");
    }
}

/// `xxd [OPTIONS] [INFILE [OUTFILE]]`: the second operand is written.
pub(super) fn xxd(walker: &mut Walker<'_>, call: &Call<'_>) {
    const TAKE_VALUES: &[&str] = &[
        "-c",
        "-g",
        "-l",
        "-o",
        "-s",
        "-n",
        "-cols",
        "-groupsize",
        "-len",
        "-seek",
        "-name",
        "-offset",
        "-octets",
    ];
    let mut operands = Vec::new();
    let mut args = call.args.iter();
    while let Some(arg) = args.next() {
        let spelling = arg.spelling();
        if TAKE_VALUES.contains(&spelling) {
            args.next();
        } else if !spelling.starts_with('-') || spelling == "-" {
            operands.push(arg);
        }
    }
    if let Some(output) = operands.get(1).filter(|output| output.value() != Some("-")) {
        walker.write(call.part, output, WriteKind::Replace);
    }
}

/// `ldd` may run the program it inspects (it says so itself): fine for the system's
/// own binaries, not for one in the workspace.
pub(super) fn ldd(walker: &mut Walker<'_>, call: &Call<'_>) {
    const SYSTEM: &[&str] = &["/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/"];
    let parsed = call.parse(&OptionSpec::default());
    let system_only = parsed.operands.iter().all(|operand| {
        operand
            .value()
            .is_some_and(|value| SYSTEM.iter().any(|dir| value.starts_with(dir)))
    });
    if !system_only {
        walker.note(
            call.part,
            CommandClass::Unknown,
            "may run the program it inspects, which is not one of the system's own",
        );
    }
}
