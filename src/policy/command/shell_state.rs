//! Builtins that change the session's persistent shell for every later command:
//! variables and their attributes (`export`, `declare`, `local`, `readonly`, `unset`,
//! `read`, `mapfile`, `printf -v`, `getopts`), options (`set`, `shopt`), aliases,
//! traps, key bindings, loadable builtins and the command hash table.
//!
//! Owns: telling the listing forms (`alias`, `trap -p`, `set -o`, `shopt`) from the
//! changing ones, and which changes matter: a variable named in `environment`, an
//! option outside a short allow-list, any alias, trap, binding or `hash -p`.
//! Does not own: function definitions and `source` (found by `syntax` and `wrappers`),
//! or what the variables mean (`environment`).
//! Invariant: a change that can make a later command run other code than its text
//! says is [`CommandClass::Unknown`], so it waits for a person in every mode but
//! `read-only` (where it is refused). duet checks the command, not the shell's state
//! afterwards: a later `ls` is only as safe as every change before it was checked,
//! which is why these are never let through unasked.

use super::CommandClass;
use super::args::OptionSpec;
use super::evaluation;
use super::programs::Call;
use super::syntax::{Walker, Word};

/// `set` options that change nothing a later command runs (`set -euo pipefail`).
const HARMLESS_SET_LETTERS: &str = "abBCeEfhHmPTuvx";

/// `set -o` names that change nothing a later command runs.
const HARMLESS_SET_OPTIONS: &[&str] = &[
    "allexport",
    "braceexpand",
    "errexit",
    "errtrace",
    "functrace",
    "hashall",
    "histexpand",
    "history",
    "ignoreeof",
    "monitor",
    "noclobber",
    "noglob",
    "notify",
    "nounset",
    "physical",
    "pipefail",
    "verbose",
    "xtrace",
];

/// `shopt` options that change nothing a later command runs. Left out on purpose:
/// `expand_aliases`, `extdebug`, `interactive_comments` (off, `#` stops starting a
/// comment, so text duet read as a comment runs), `promptvars`, `sourcepath`.
const HARMLESS_SHOPT_OPTIONS: &[&str] = &[
    "autocd",
    "cdable_vars",
    "cdspell",
    "checkhash",
    "checkjobs",
    "checkwinsize",
    "cmdhist",
    "direxpand",
    "dirspell",
    "dotglob",
    "extglob",
    "failglob",
    "globasciiranges",
    "globstar",
    "histappend",
    "histreedit",
    "histverify",
    "huponexit",
    "inherit_errexit",
    "lastpipe",
    "lithist",
    "nocaseglob",
    "nocasematch",
    "nullglob",
    "xpg_echo",
];

const STATE: &str = "changes the session's shell so that later commands may run other code";

/// `export`, `declare`, `typeset`, `local`, `readonly` with their arguments (names,
/// `NAME=value`, flags). Assignments written as such are checked by the walk too.
pub(super) fn declare(walker: &mut Walker<'_>, keyword: &str, args: &[Word], part: &str) {
    let mut listing = false;
    for arg in args {
        let Some(value) = arg.value() else {
            walker.note(
                part,
                CommandClass::Unknown,
                format!(
                    "{keyword}s `{}`, a variable or attribute only known when it runs",
                    arg.text
                ),
            );
            continue;
        };
        if let Some(flags) = value.strip_prefix(['-', '+']).filter(|_| value != "--") {
            listing |= flags.contains(['p', 'f', 'F']);
            if flags.contains('n') {
                walker.note(
                    part,
                    CommandClass::Unknown,
                    "makes a name refer to another variable (a nameref), so assigning to a \
                     harmless-looking name can set any variable",
                );
            }
            if flags.contains('i') {
                walker.note(
                    part,
                    CommandClass::Unknown,
                    "gives a variable the integer attribute: every value assigned to it is \
                     evaluated as arithmetic, which can run commands (`a[$(...)]`)",
                );
            }
            continue;
        }
        let name = value.split_once('=').map_or(value, |(name, _)| name);
        if !listing || value.contains('=') {
            let verb = if keyword == "export" {
                "exports"
            } else {
                "sets"
            };
            check_name(walker, name, part, verb);
        }
    }
}

/// `unset [-v|-f|-n] NAME...`.
pub(super) fn unset(walker: &mut Walker<'_>, args: &[Word], part: &str) {
    let mut functions = false;
    for arg in args {
        match arg.value() {
            Some(value) if value.starts_with('-') => functions |= value.contains('f'),
            Some(name) if !functions => check_name(walker, name, part, "unsets"),
            Some(_) => {}
            None => walker.note(
                part,
                CommandClass::Unknown,
                format!("unsets `{}`, a name only known when it runs", arg.text),
            ),
        }
    }
}

/// A variable name given to a builtin that sets, exports or unsets it.
pub(super) fn check_name(walker: &mut Walker<'_>, name: &str, part: &str, verb: &str) {
    if evaluation::subscript_evaluates(name) {
        walker.note(
            part,
            CommandClass::Unknown,
            format!(
                "names `{name}`, whose subscript bash evaluates as arithmetic, which can run \
                 commands"
            ),
        );
        return;
    }
    let bare = name.split('[').next().unwrap_or(name);
    walker.check_variable(bare, part, verb);
}

/// `read [-a NAME] [NAME...]`, `mapfile`/`readarray [-C CALLBACK] [NAME]`, `getopts
/// OPTSTRING NAME`, `printf -v NAME`: the names they assign.
pub(super) fn assigning_builtin(walker: &mut Walker<'_>, call: &Call<'_>) {
    let names: Vec<Word> = match call.name {
        "read" => {
            let parsed = call.parse(&OptionSpec {
                short_values: "adinNptu",
                ..OptionSpec::default()
            });
            let mut names: Vec<Word> = parsed.operands.iter().map(|&name| name.clone()).collect();
            names.extend(parsed.values(&["a"]).cloned());
            names
        }
        "mapfile" | "readarray" => {
            let parsed = call.parse(&OptionSpec {
                short_values: "dnOsuCc",
                ..OptionSpec::default()
            });
            if parsed.has(&["C"]) {
                walker.note(
                    call.part,
                    CommandClass::Unknown,
                    "runs a callback as it reads (mapfile -C)",
                );
            }
            parsed.operands.iter().map(|&name| name.clone()).collect()
        }
        "getopts" => call.args.get(1).into_iter().cloned().collect(),
        "printf" => {
            let parsed = call.parse(&OptionSpec {
                short_values: "v",
                stop_at_operand: true,
                ..OptionSpec::default()
            });
            let names: Vec<Word> = parsed.values(&["v"]).cloned().collect();
            for name in &names {
                name_word(walker, name, call.part);
            }
            return;
        }
        _ => Vec::new(),
    };
    for name in &names {
        name_word(walker, name, call.part);
    }
}

fn name_word(walker: &mut Walker<'_>, name: &Word, part: &str) {
    match name.value() {
        Some(value) => check_name(walker, value, part, "sets"),
        None => walker.note(
            part,
            CommandClass::Unknown,
            format!("assigns `{}`, a name only known when it runs", name.text),
        ),
    }
}

/// `let EXPR...`: arithmetic on variables runs whatever their values hold.
pub(super) fn let_builtin(walker: &mut Walker<'_>, call: &Call<'_>) {
    let reads_variables = call.args.iter().any(|arg| {
        arg.value()
            .is_none_or(|value| value.contains(|c: char| c.is_ascii_alphabetic() || c == '_'))
    });
    if reads_variables {
        walker.note(call.part, CommandClass::Unknown, evaluation::ARITHMETIC);
    }
}

/// `test`/`[`: `-v NAME[SUBSCRIPT]` evaluates the subscript.
pub(super) fn test_builtin(walker: &mut Walker<'_>, call: &Call<'_>) {
    let mut args = call.args.iter();
    while let Some(arg) = args.next() {
        if arg.value() != Some("-v") {
            continue;
        }
        match args.next().map(Word::value) {
            Some(Some(name)) if evaluation::subscript_evaluates(name) => walker.note(
                call.part,
                CommandClass::Unknown,
                format!("tests `{name}`, whose subscript bash evaluates as arithmetic"),
            ),
            Some(None) => walker.note(
                call.part,
                CommandClass::Unknown,
                "tests a variable named only when it runs, whose subscript bash may evaluate",
            ),
            _ => {}
        }
    }
}

/// `set`: positional parameters and harmless options are fine; `set -k`, `set -o
/// posix` and the like change how later commands are read.
pub(super) fn set(walker: &mut Walker<'_>, call: &Call<'_>) {
    let mut args = call.args.iter();
    while let Some(arg) = args.next() {
        let Some(value) = arg.value() else {
            walker.note(call.part, CommandClass::Unknown, STATE);
            return;
        };
        if value == "--" || value == "-" || !value.starts_with(['-', '+']) {
            // The rest are positional parameters.
            return;
        }
        let letters = &value[1..];
        for letter in letters.chars() {
            if letter == 'o' {
                let name = args.next().map(Word::value);
                match name {
                    // `set -o` alone lists the options.
                    None => return,
                    Some(Some(name)) if HARMLESS_SET_OPTIONS.contains(&name) => {}
                    Some(_) => {
                        walker.note(call.part, CommandClass::Unknown, STATE);
                        return;
                    }
                }
            } else if !HARMLESS_SET_LETTERS.contains(letter) {
                walker.note(call.part, CommandClass::Unknown, STATE);
                return;
            }
        }
    }
}

/// `shopt [-s|-u] [-o] [NAME...]`: printing and querying are fine, and so is setting a
/// harmless option.
pub(super) fn shopt(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec::default());
    if !parsed.has(&["s", "u"]) {
        return;
    }
    let known: &[&str] = if parsed.has(&["o"]) {
        HARMLESS_SET_OPTIONS
    } else {
        HARMLESS_SHOPT_OPTIONS
    };
    let harmless = parsed
        .operands
        .iter()
        .all(|name| name.value().is_some_and(|name| known.contains(&name)));
    if !harmless {
        walker.note(call.part, CommandClass::Unknown, STATE);
    }
}

/// `alias`, `trap`, `bind`, `enable`, `hash`: their listing forms only read.
pub(super) fn definitions(walker: &mut Walker<'_>, call: &Call<'_>) {
    let listing = |flags: &[&str]| {
        call.args
            .iter()
            .all(|arg| arg.value().is_some_and(|value| flags.contains(&value)))
    };
    let why = match call.name {
        "alias" => {
            let defines = call
                .args
                .iter()
                .any(|arg| arg.value().is_none_or(|value| value.contains('=')));
            if !defines {
                return;
            }
            "defines an alias, which changes what a later command of that name runs"
        }
        "trap" => {
            if call.args.is_empty() || listing(&["-l", "-p"]) || call.has_word(&["-p"]) {
                return;
            }
            "sets a trap: code the shell runs on its own, later"
        }
        "bind" => {
            if listing(&["-p", "-P", "-l", "-v", "-V", "-s", "-S", "-X"]) {
                return;
            }
            "changes the key bindings of the shell's line editor, which every command is \
             typed through"
        }
        "enable" => {
            if listing(&["-a", "-p", "-n", "-s"]) {
                return;
            }
            "enables, disables or loads shell builtins, which changes what later commands run"
        }
        "hash" => {
            let parsed = call.parse(&OptionSpec {
                short_values: "p",
                ..OptionSpec::default()
            });
            if !parsed.has(&["p"]) {
                return;
            }
            "maps a command name to another program (hash -p)"
        }
        _ => STATE,
    };
    walker.note(call.part, CommandClass::Unknown, why);
}

/// `history`: `-w`/`-a` write the history file.
pub(super) fn history(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec {
        short_values: "d",
        ..OptionSpec::default()
    });
    if !parsed.has(&["w", "a"]) {
        return;
    }
    match parsed.operands.first() {
        Some(file) => walker.write(call.part, file, super::paths::WriteKind::Replace),
        None => walker.note(
            call.part,
            CommandClass::Destructive,
            "writes the shell's history file, outside the workspace",
        ),
    }
}
