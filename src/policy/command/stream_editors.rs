//! Stream editors whose scripts can write files or run commands: `sed` (`w`, `e`,
//! `-i`) and `awk` (`>`, `|`, `system`, `-i inplace`).
//!
//! Owns: reading sed scripts far enough to find writing and running commands, and a
//! cautious look at awk programs.
//! Does not own: which files an in-place edit lands in (`paths`).
//! Invariant: a script that cannot be read (from a file, or dynamic) is
//! [`CommandClass::Unknown`].

use super::CommandClass;
use super::args::OptionSpec;
use super::paths::WriteKind;
use super::programs::Call;
use super::syntax::{Walker, Word};

pub(super) fn sed(walker: &mut Walker<'_>, call: &Call<'_>) {
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
                "has a sed script that writes files or runs commands (w, W or e)",
            ),
            None => walker.note(
                call.part,
                CommandClass::Unknown,
                "has a sed script that is only known when it runs",
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

pub(super) fn awk(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&OptionSpec {
        short_values: "fvFiEel",
        long_values: &[
            "file",
            "assign",
            "field-separator",
            "include",
            "exec",
            "source",
            "load",
        ],
        stop_at_operand: false,
    });
    if parsed.has(&["f", "file", "E", "exec"]) {
        walker.note(
            call.part,
            CommandClass::Unknown,
            "runs an awk program from a file, which can write files or run commands",
        );
        return;
    }
    if parsed.has(&["l", "load"]) {
        walker.note(
            call.part,
            CommandClass::Unknown,
            "loads a compiled extension into awk (-l)",
        );
    }
    if parsed.has(&[
        "d",
        "dump-variables",
        "o",
        "pretty-print",
        "p",
        "profile",
        "D",
        "debug",
    ]) {
        walker.note(
            call.part,
            CommandClass::Unknown,
            "writes a file of its choice (gawk -d, -o, -p) or starts its debugger",
        );
    }
    let mut programs: Vec<&Word> = parsed.values(&["e", "source"]).collect();
    let mut operands = parsed.operands.iter();
    if programs.is_empty()
        && let Some(program) = operands.next()
    {
        programs.push(program);
    }
    for program in programs {
        match program.value() {
            Some(text) if !awk_program_writes_or_runs(text) => {}
            _ => walker.note(
                call.part,
                CommandClass::Unknown,
                "has an awk program that may write files, run commands, load code or open \
                 network connections (`>`, `|`, system, @load, /inet)",
            ),
        }
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

/// A cautious look at an awk program: any `>` or `|` (output to a file or a command,
/// or a comparison), `system`, `@load`/`@include`, or a gawk network file.
fn awk_program_writes_or_runs(program: &str) -> bool {
    program.contains(['|', '>'])
        || ["system", "@load", "@include", "/inet"]
            .iter()
            .any(|needle| program.contains(needle))
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
