//! Network clients that also write files: `curl`, `wget`, `rsync`, `scp`.
//!
//! Owns: which options name files they write (`-o`, `-O`, `--output-dir`, `-P`, logs,
//! cookie jars) and when a copy is remote.
//! Does not own: clients that only talk (`ssh`, `nc`: the tables in `programs`).
//! Invariant: every such call is [`CommandClass::Network`], plus whatever it writes.

use super::CommandClass;
use super::args::OptionSpec;
use super::paths::WriteKind;
use super::programs::Call;
use super::syntax::{Walker, Word};

pub(super) fn curl(walker: &mut Walker<'_>, call: &Call<'_>) {
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

pub(super) fn wget(walker: &mut Walker<'_>, call: &Call<'_>) {
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
pub(super) fn remote_copy(walker: &mut Walker<'_>, call: &Call<'_>) {
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
