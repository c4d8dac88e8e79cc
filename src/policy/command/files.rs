//! File utilities: which arguments `rm`, `mv`, `cp`, `ln`, `touch`, `mkdir`, `chmod`,
//! `tee`, `truncate`, `shred`, `dd`, `sort -o`, `uniq`, `tar`, `unzip` and the
//! compressors write, delete or overwrite.
//!
//! Owns: option layouts and which operand is written how ([`WriteKind`]).
//! Does not own: where a path lands or what writing it means (`paths`).
//! Invariant: every operand a program may write is reported as a write.

use super::CommandClass;
use super::args::{OptionSpec, parse};
use super::paths::WriteKind;
use super::programs::Call;
use super::syntax::{Walker, Word};

pub(super) const TOUCH: OptionSpec = OptionSpec {
    short_values: "dtr",
    long_values: &["date", "reference", "time"],
    stop_at_operand: false,
};
pub(super) const MODE: OptionSpec = OptionSpec {
    short_values: "m",
    long_values: &["mode", "context"],
    stop_at_operand: false,
};
pub(super) const TRUNCATE: OptionSpec = OptionSpec {
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

pub(super) fn each_operand(
    walker: &mut Walker<'_>,
    call: &Call<'_>,
    spec: &OptionSpec,
    kind: WriteKind,
) {
    let parsed = call.parse(spec);
    for operand in parsed.operands {
        walker.write(call.part, operand, kind);
    }
}

pub(super) fn remove(walker: &mut Walker<'_>, call: &Call<'_>) {
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

/// `mv`/`cp SRC... DEST` or `-t DIR SRC...`: what lands in the destination is
/// overwritten; `mv` also takes the sources away. A destination that is a directory
/// (`-t DIR`, `.`, `dir/`, or any destination of several sources) receives each source
/// under its own name, so that is the path written.
pub(super) fn copy_or_move(walker: &mut Walker<'_>, call: &Call<'_>, moves: bool) {
    let parsed = call.parse(&TARGET_DIR);
    let (sources, destination, into_directory) = match parsed.value(&["t", "target-directory"]) {
        Some(directory) => (&parsed.operands[..], Some(directory), true),
        None => match parsed.operands.split_last() {
            Some((last, sources)) => (
                sources,
                Some(*last),
                sources.len() > 1 || names_a_directory(last),
            ),
            None => (&parsed.operands[..], None, false),
        },
    };
    if moves {
        for source in sources {
            walker.write(call.part, source, WriteKind::Modify);
        }
    }
    let Some(destination) = destination else {
        return;
    };
    if !into_directory || parsed.has(&["T", "no-target-directory"]) {
        walker.write(call.part, destination, WriteKind::Replace);
        return;
    }
    for source in sources {
        match landing_in(destination, source) {
            Some(target) => walker.write(call.part, &target, WriteKind::Replace),
            // `cp -r . dir`: the directory receives the contents.
            None => walker.write(call.part, destination, WriteKind::Modify),
        }
    }
}

/// Whether a destination is a directory by its spelling alone: `.`, `..`, `~`, or a
/// trailing `/` or `/.`.
fn names_a_directory(destination: &Word) -> bool {
    destination.value().is_some_and(|value| {
        matches!(value, "." | ".." | "~")
            || value.ends_with('/')
            || value.ends_with("/.")
            || value.ends_with("/..")
    })
}

/// The path `source` lands at inside the directory `directory`; `None` when the
/// source has no name of its own (`.`, `..`, `/`). Only known when it runs when either
/// is.
fn landing_in(directory: &Word, source: &Word) -> Option<Word> {
    let (Some(directory), Some(source)) = (directory.value(), source.value()) else {
        return Some(Word::dynamic(&format!(
            "{}/{}",
            directory.text, source.text
        )));
    };
    let name = std::path::Path::new(source.trim_end_matches('/')).file_name()?;
    let name = name.to_str()?;
    if name == "." || name == ".." {
        return None;
    }
    Some(Word::literal(&format!(
        "{}/{name}",
        directory.trim_end_matches('/')
    )))
}

pub(super) fn link(walker: &mut Walker<'_>, call: &Call<'_>) {
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

pub(super) fn permissions(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec {
        long_values: &["reference", "from"],
        ..OptionSpec::default()
    });
    if parsed.has(&["R", "recursive"]) {
        walker.note(
            call.part,
            CommandClass::Destructive,
            "changes ownership or permissions recursively",
        );
    }
    // The first operand is the mode or owner unless a reference file gives it.
    let skip = usize::from(!parsed.has(&["reference"]));
    for operand in parsed.operands.iter().skip(skip) {
        walker.write(call.part, operand, WriteKind::Modify);
    }
}

pub(super) fn tee(walker: &mut Walker<'_>, call: &Call<'_>) {
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

pub(super) fn shred(walker: &mut Walker<'_>, call: &Call<'_>) {
    walker.note(
        call.part,
        CommandClass::Destructive,
        "overwrites files beyond recovery",
    );
    each_operand(walker, call, &SHRED, WriteKind::Delete);
}

pub(super) fn dd(walker: &mut Walker<'_>, call: &Call<'_>) {
    walker.note(
        call.part,
        CommandClass::Destructive,
        "copies raw bytes and can overwrite whole files or disks",
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

/// `sort -o FILE`, `shuf -o FILE`, `iconv -o FILE`.
pub(super) fn output_option(walker: &mut Walker<'_>, call: &Call<'_>) {
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

pub(super) fn uniq(walker: &mut Walker<'_>, call: &Call<'_>) {
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

pub(super) fn tar(walker: &mut Walker<'_>, call: &Call<'_>) {
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
            short_values: "fCTXbKNgVFI",
            long_values: &[
                "file",
                "directory",
                "files-from",
                "exclude-from",
                "to-command",
                "use-compress-program",
                "info-script",
                "new-volume-script",
                "rsh-command",
                "rmt-command",
                "checkpoint-action",
            ],
            stop_at_operand: false,
        },
    );
    if parsed.has(&[
        "to-command",
        "use-compress-program",
        "I",
        "checkpoint-action",
        "F",
        "info-script",
        "new-volume-script",
        "rsh-command",
        "rmt-command",
    ]) {
        walker.note(
            call.part,
            CommandClass::Unknown,
            "runs a program of its choice",
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

/// `zip`: writes its archive in the workspace; `-TT CMD` (`--unzip-command`) runs a
/// program to test it.
pub(super) fn zip(walker: &mut Walker<'_>, call: &Call<'_>) {
    let tests_with_a_program = call.args.iter().any(|arg| {
        let spelling = arg.spelling();
        spelling.starts_with("-TT") || spelling.starts_with("--unzip-command")
    });
    if tests_with_a_program {
        walker.note(
            call.part,
            CommandClass::Unknown,
            "runs a program of its choice to test the archive (-TT)",
        );
    }
    walker.write_here(call.part, "changes files in the workspace");
}

pub(super) fn unzip(walker: &mut Walker<'_>, call: &Call<'_>) {
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

pub(super) fn compress(walker: &mut Walker<'_>, call: &Call<'_>) {
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
