//! Programs that run another command: prefixes (`env VAR=x`, `sudo`, `nice`, `nohup`,
//! `timeout N`, `time`, `command`, `exec`, `stdbuf`), `xargs`, `find -exec`, `fd -x`,
//! shells given a script (`sh -c`, `bash -c`, `zsh -c`) and `source`.
//!
//! Owns: finding the inner command (or script) and classifying it in the right
//! setting: arguments from standard input or `{}` are only known when it runs, `sh -c`
//! strings are parsed again (depth-limited by the walk), `sudo` makes any change a
//! change as root.
//! Does not own: the inner command's own rules (dispatch starts again for it).
//! Invariant: a wrapper never lowers the class of what it runs; `source` of anything
//! but the user's own `~/.cargo/env` is [`CommandClass::Unknown`], since the file can
//! change what every later command in the session's shell runs.

use super::CommandClass;
use super::args::OptionSpec;
use super::paths::WriteKind;
use super::programs::Call;
use super::syntax::{Walker, Word};

/// Classifies `call` if its program runs another command; false if it is not a wrapper.
pub(super) fn dispatch(walker: &mut Walker<'_>, call: &Call<'_>) -> bool {
    match call.name {
        "env" => env(walker, call),
        "sudo" | "doas" => as_root(walker, call),
        "nice" => prefix(walker, call, &NICE),
        "ionice" => prefix(walker, call, &IONICE),
        "stdbuf" => prefix(walker, call, &STDBUF),
        "nohup" | "builtin" => walker.run(call.args, call.part),
        "timeout" => timeout(walker, call),
        "time" => time(walker, call),
        "command" => command(walker, call),
        "exec" => exec(walker, call),
        "xargs" => xargs(walker, call),
        "find" => find(walker, call),
        "fd" | "fdfind" => fd(walker, call),
        "watch" => walker.note(
            call.part,
            CommandClass::Unknown,
            "runs its command again and again until stopped",
        ),
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "mksh" => shell(walker, call),
        _ => return false,
    }
    true
}

const NICE: OptionSpec = OptionSpec {
    short_values: "n",
    long_values: &["adjustment"],
    stop_at_operand: true,
};
const IONICE: OptionSpec = OptionSpec {
    short_values: "cnpPu",
    long_values: &["class", "classdata", "pid", "pgid", "uid"],
    stop_at_operand: true,
};
const STDBUF: OptionSpec = OptionSpec {
    short_values: "ioe",
    long_values: &["input", "output", "error"],
    stop_at_operand: true,
};

/// A prefix whose options end at the command it runs.
fn prefix(walker: &mut Walker<'_>, call: &Call<'_>, spec: &OptionSpec) {
    let parsed = call.parse(spec);
    walker.run(parsed.rest, call.part);
}

fn env(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec {
        short_values: "uCS",
        long_values: &["unset", "chdir", "split-string"],
        stop_at_operand: true,
    });
    if parsed.has(&["S", "split-string"]) {
        walker.note(
            call.part,
            CommandClass::Unknown,
            "splits a string into a command (env -S), which duet does not read",
        );
        return;
    }
    let assignments = parsed
        .rest
        .iter()
        .take_while(|word| {
            word.spelling()
                .split_once('=')
                .is_some_and(|(name, _)| is_name(name))
        })
        .count();
    for assignment in &parsed.rest[..assignments] {
        let name = assignment.spelling().split('=').next().unwrap_or_default();
        walker.check_variable(name, call.part, "sets");
    }
    for unset in parsed.values(&["u", "unset"]) {
        walker.check_variable(unset.spelling(), call.part, "unsets");
    }
    let command = &parsed.rest[assignments..];
    match parsed.value(&["C", "chdir"]).cloned() {
        Some(directory) => walker.scoped(|walker| {
            walker.cwd = walker.cwd.after_cd(Some(&directory), walker.context.root);
            walker.run(command, call.part);
        }),
        None => walker.run(command, call.part),
    }
}

/// A shell variable name.
fn is_name(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `sudo CMD`: whatever CMD changes, it changes as root, where the workspace's bounds
/// mean nothing.
fn as_root(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec {
        short_values: "ugprtCDhTUc",
        long_values: &[
            "user",
            "group",
            "prompt",
            "role",
            "type",
            "close-from",
            "chdir",
            "host",
            "command-timeout",
            "other-user",
        ],
        stop_at_operand: true,
    });
    if parsed.has(&["e", "edit"]) {
        walker.note(call.part, CommandClass::Destructive, "edits files as root");
        return;
    }
    if parsed.rest.is_empty() {
        if parsed.has(&["i", "login", "s", "shell"]) {
            walker.note(call.part, CommandClass::Unknown, "opens a root shell");
        }
        return;
    }
    let before = walker.findings.reasons.len();
    walker.run(parsed.rest, call.part);
    let changes = walker.findings.reasons[before..]
        .iter()
        .any(|reason| reason.class > CommandClass::ReadOnly);
    if changes {
        walker.note(
            call.part,
            CommandClass::Destructive,
            format!(
                "runs it as root with {}, so its changes are not confined to the workspace",
                call.name
            ),
        );
    }
}

fn timeout(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec {
        short_values: "sk",
        long_values: &["signal", "kill-after"],
        stop_at_operand: true,
    });
    // The first operand is the duration.
    walker.run(parsed.rest.get(1..).unwrap_or_default(), call.part);
}

fn time(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec {
        short_values: "fo",
        long_values: &["format", "output"],
        stop_at_operand: true,
    });
    let kind = if parsed.has(&["a", "append"]) {
        WriteKind::Modify
    } else {
        WriteKind::Replace
    };
    if let Some(output) = parsed.value(&["o", "output"]) {
        walker.write(call.part, output, kind);
    }
    walker.run(parsed.rest, call.part);
}

fn command(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec {
        stop_at_operand: true,
        ..OptionSpec::default()
    });
    // `command -v NAME` only looks the name up.
    if !parsed.has(&["v", "V"]) {
        walker.run(parsed.rest, call.part);
    }
}

fn exec(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec {
        short_values: "a",
        stop_at_operand: true,
        ..OptionSpec::default()
    });
    if parsed.rest.is_empty() {
        walker.note(
            call.part,
            CommandClass::Unknown,
            "changes the shell's own files for every later command (exec without a command)",
        );
    } else {
        walker.run(parsed.rest, call.part);
    }
}

/// `xargs CMD ARGS`: CMD gets more arguments from standard input (or the replace
/// string stands for them), so those are only known when it runs.
fn xargs(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec {
        short_values: "adEILnPs",
        long_values: &[
            "arg-file",
            "delimiter",
            "eof",
            "replace",
            "max-lines",
            "max-args",
            "max-procs",
            "max-chars",
            "process-slot-var",
        ],
        stop_at_operand: true,
    });
    if parsed.rest.is_empty() {
        // The default command is `echo`.
        return;
    }
    let replace = parsed
        .value(&["I", "replace"])
        .and_then(Word::value)
        .map(str::to_string)
        .or_else(|| parsed.has(&["i"]).then(|| "{}".to_string()));
    let input = Word::dynamic("<arguments from standard input>");
    let mut argv: Vec<Word> = parsed
        .rest
        .iter()
        .map(|word| match (&replace, word.value()) {
            (Some(replace), Some(value)) if value.contains(replace.as_str()) => {
                Word::dynamic(&word.text)
            }
            _ => word.clone(),
        })
        .collect();
    if replace.is_none() {
        argv.push(input);
    }
    walker.run(&argv, call.part);
}

/// `find`: reads, unless an action deletes, writes a list, or runs a command
/// (`-exec CMD {} ;`, where `{}` is each file found).
fn find(walker: &mut Walker<'_>, call: &Call<'_>) {
    let mut args = call.args.iter();
    while let Some(arg) = args.next() {
        match arg.spelling() {
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                // `{}` is a path under a start point, so it never reads as an option.
                let argv: Vec<Word> = args
                    .by_ref()
                    .take_while(|word| !matches!(word.spelling(), ";" | "+"))
                    .map(|word| match word.value() {
                        Some(value) if value.contains("{}") => Word::dynamic_path(&word.text),
                        _ => word.clone(),
                    })
                    .collect();
                walker.run(&argv, call.part);
            }
            "-delete" => walker.note(
                call.part,
                CommandClass::Destructive,
                "deletes every file it finds",
            ),
            "-fprint" | "-fprint0" | "-fls" | "-fprintf" => {
                if let Some(file) = args.next() {
                    walker.write(call.part, file, WriteKind::Replace);
                }
            }
            _ => {}
        }
    }
}

/// `fd PATTERN -x CMD`: the rest of the line is the command, run per file found.
fn fd(walker: &mut Walker<'_>, call: &Call<'_>) {
    let Some(at) = call.args.iter().position(|arg| {
        let spelling = arg.spelling();
        matches!(spelling, "-x" | "--exec" | "-X" | "--exec-batch")
            || spelling.starts_with("--exec=")
            || spelling.starts_with("--exec-batch=")
    }) else {
        return;
    };
    let mut argv: Vec<Word> = call.args[at + 1..]
        .iter()
        .map(|word| match word.value() {
            Some(value) if value.contains('{') => Word::dynamic(&word.text),
            _ => word.clone(),
        })
        .collect();
    argv.push(Word::dynamic("<each file found>"));
    walker.run(&argv, call.part);
}

/// `bash -c SCRIPT` parses SCRIPT as a command of its own; a shell given a script file
/// or reading standard input runs what duet cannot see.
fn shell(walker: &mut Walker<'_>, call: &Call<'_>) {
    let mut has_script_flag = false;
    let mut operands = Vec::new();
    let mut args = call.args.iter();
    while let Some(arg) = args.next() {
        let spelling = arg.spelling();
        match spelling {
            "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file" => {
                args.next();
            }
            _ if spelling.starts_with("--") => {}
            _ if spelling.starts_with(['-', '+']) && spelling.len() > 1 => {
                has_script_flag |= spelling.contains('c');
            }
            _ => operands.push(arg),
        }
    }
    match (has_script_flag, operands.first()) {
        (true, Some(script)) => match script.value() {
            Some(text) => walker.nested_script(text, call.part),
            None => walker.note(
                call.part,
                CommandClass::Unknown,
                "runs a script that is only known when it runs",
            ),
        },
        (false, Some(file)) => walker.note(
            call.part,
            CommandClass::Unknown,
            format!(
                "runs the script {}, whose contents duet does not check",
                file.text
            ),
        ),
        (_, None) => walker.note(
            call.part,
            CommandClass::Unknown,
            "runs commands read from its input, which duet cannot see",
        ),
    }
}

/// `source FILE`: runs FILE in the session's shell, where it can define aliases and
/// functions, set traps and change `PATH` for every later command. Only the user's own
/// `~/.cargo/env` is taken as an environment change; a file in the workspace (a
/// virtualenv's `activate` included) is the repository's code.
pub(super) fn source(walker: &mut Walker<'_>, call: &Call<'_>) {
    let file = call.args.first().and_then(Word::value);
    if file == Some("~/.cargo/env") {
        walker.note(
            call.part,
            CommandClass::WritesWorkspace,
            "changes the shell's environment for later commands",
        );
    } else {
        walker.note(
            call.part,
            CommandClass::Unknown,
            format!(
                "runs {} in the session's shell, where it can change what every later \
                 command runs; duet does not check its contents",
                file.unwrap_or("a file")
            ),
        );
    }
}
