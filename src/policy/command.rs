//! A deliberately conservative test for "this shell command only reads".
//!
//! It accepts one plain command from a short list, with no shell syntax that could
//! chain, redirect or substitute anything; everything else counts as "may write". A
//! full shell-syntax classifier (pipelines, subshells, `xargs`, `sh -c`, ...) replaces
//! it later; until then, being wrong means asking too often, never running a write in
//! read-only mode.

/// Characters that let a command do more than its first word says: chaining,
/// pipes, redirection, substitution, grouping, escapes, line breaks.
const SHELL_SYNTAX: &[char] = &[
    ';', '&', '|', '<', '>', '`', '$', '(', ')', '{', '}', '\\', '\n', '\r',
];

/// Programs that only read, whatever their (non-excluded) arguments.
const READ_ONLY_PROGRAMS: &[&str] = &[
    "ls", "cat", "head", "tail", "wc", "pwd", "echo", "grep", "egrep", "fgrep", "rg", "file",
    "stat", "du", "df", "which", "tree", "diff", "cmp", "cut", "nl", "basename", "dirname",
    "realpath", "true", "date", "whoami", "uname", "env", "printenv",
];

/// `find` actions that run or write something.
const FIND_ACTIONS: &[&str] = &[
    "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
];

/// git subcommands that only read (with `--output` refused separately).
const GIT_READERS: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "rev-parse",
    "ls-files",
    "blame",
    "grep",
    "shortlog",
    "describe",
];

/// cargo subcommands that write nothing but build artifacts under `target/`.
const CARGO_READERS: &[&str] = &["check", "test", "clippy", "tree", "metadata"];

/// True when `command` is one plain, known read-only command.
pub fn is_read_only_command(command: &str) -> bool {
    if command.contains(SHELL_SYNTAX) {
        return false;
    }
    let words: Vec<&str> = command.split_whitespace().collect();
    let Some((&program, args)) = words.split_first() else {
        return false;
    };
    match program {
        // `env CMD` runs CMD; only a bare `env` just prints.
        "env" => args.is_empty(),
        "find" => !args.iter().any(|arg| FIND_ACTIONS.contains(arg)),
        "git" => git_reads_only(args),
        "cargo" => cargo_reads_only(args),
        _ => READ_ONLY_PROGRAMS.contains(&program),
    }
}

fn git_reads_only(args: &[&str]) -> bool {
    let Some(subcommand) = args.iter().find(|arg| !arg.starts_with('-')) else {
        return false;
    };
    GIT_READERS.contains(subcommand) && !args.iter().any(|arg| arg.starts_with("--output"))
}

fn cargo_reads_only(args: &[&str]) -> bool {
    let Some(subcommand) = args.first() else {
        return false;
    };
    CARGO_READERS.contains(subcommand) && !args.contains(&"--fix")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_readers_are_read_only() {
        for command in [
            "ls -la src",
            "cat README.md",
            "rg -n 'fn main' src",
            "git status",
            "git --no-pager log --oneline -5",
            "git diff HEAD~1",
            "find . -name '*.rs'",
            "cargo test --all",
            "wc -l src/main.rs",
        ] {
            assert!(is_read_only_command(command), "{command}");
        }
    }

    #[test]
    fn anything_that_may_write_chain_or_substitute_is_not() {
        for command in [
            "",
            "rm -rf target",
            "echo hi > notes.txt",
            "cat a.txt | tee b.txt",
            "ls; rm -rf /",
            "ls && touch x",
            "$(echo rm) -rf /",
            "`echo rm` -rf /",
            "find . -delete",
            "find / -exec rm {} ;",
            "git push --force",
            "git commit -m x",
            "git branch new-branch",
            "git diff --output=patch.txt",
            "cargo clippy --fix",
            "cargo build",
            "env rm -rf .",
            "FOO=1 ls",
            "./script.sh",
            "python -c 'print(1)'",
            "ls\nrm -rf .",
            "curl http://example.com",
        ] {
            assert!(!is_read_only_command(command), "{command}");
        }
    }
}
