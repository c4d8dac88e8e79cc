//! Programs that read the system's state or change it depending on their arguments:
//! the clock (`date`, `hwclock`, `timedatectl`), the host name, and signals (`kill`,
//! `pkill`, `killall`).
//!
//! Owns: telling the reading forms (`date +%s`, `hostname`, `kill -l`, `kill %1` of
//! the shell's own job) from the changing ones (`date -s`, `hostname NAME`, `kill PID`).
//! Does not own: programs that always change the system (the `DESTRUCTIVE` table in
//! `programs`).
//! Invariant: a change outside the workspace (the clock, the host name, another
//! process) is [`CommandClass::Destructive`]; only the shell's own jobs may be
//! signalled as an ordinary workspace action.

use super::CommandClass;
use super::args::OptionSpec;
use super::programs::Call;
use super::syntax::{Walker, Word};

const CLOCK: &str = "sets the system clock, outside the workspace";

/// `date`: `-s`/`--set`, or an operand that is not a `+FORMAT`, sets the clock.
pub(super) fn date(walker: &mut Walker<'_>, call: &Call<'_>) {
    // `-Iseconds` is `-I` with a value, not a cluster holding `-s`.
    let args: Vec<Word> = call
        .args
        .iter()
        .filter(|arg| !arg.spelling().starts_with("-I"))
        .cloned()
        .collect();
    let parsed = super::args::parse(
        &args,
        &OptionSpec {
            short_values: "dfrs",
            long_values: &["date", "file", "reference", "set"],
            stop_at_operand: false,
        },
    );
    let sets = parsed.has(&["s", "set"])
        || parsed
            .operands
            .iter()
            .any(|operand| operand.value().is_none_or(|value| !value.starts_with('+')));
    if sets {
        walker.note(call.part, CommandClass::Destructive, CLOCK);
    }
}

/// `hwclock`: only `--show`/`-r`/`--get` read.
pub(super) fn hwclock(walker: &mut Walker<'_>, call: &Call<'_>) {
    let reads = call.args.iter().all(|arg| {
        matches!(
            arg.spelling(),
            "-r" | "--show" | "--get" | "-V" | "--version" | "-h" | "--help" | "--verbose"
        )
    }) && !call.args.is_empty();
    if !reads {
        walker.note(call.part, CommandClass::Destructive, CLOCK);
    }
}

/// `timedatectl`: status and listings read; everything else sets the clock or zone.
pub(super) fn timedatectl(walker: &mut Walker<'_>, call: &Call<'_>) {
    let verb = call
        .args
        .iter()
        .find(|arg| !arg.spelling().starts_with('-'))
        .map(Word::spelling);
    let reads = matches!(
        verb,
        None | Some("status" | "show" | "list-timezones" | "timesync-status" | "show-timesync")
    );
    if !reads {
        walker.note(call.part, CommandClass::Destructive, CLOCK);
    }
}

/// `hostname`: printing is a read; a name, `-F FILE` or `-b` sets it.
pub(super) fn hostname(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec {
        short_values: "F",
        long_values: &["file"],
        stop_at_operand: false,
    });
    if !parsed.operands.is_empty() || parsed.has(&["F", "file", "b", "boot"]) {
        walker.note(
            call.part,
            CommandClass::Destructive,
            "sets the machine's host name, outside the workspace",
        );
    }
}

/// `kill %1` stops a job of this shell; any other target is another process.
pub(super) fn kill(walker: &mut Walker<'_>, call: &Call<'_>) {
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
