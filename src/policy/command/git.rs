//! `git`: which subcommands only read, which change the repository or work tree,
//! which lose uncommitted work or rewrite shared history, and which talk to remotes.
//!
//! Owns: git's global options (`-C`, `-c`, `--git-dir`) and per-subcommand rules.
//! Does not own: whether a path is tracked (`paths`, through the injected
//! [`super::TrackedFiles`]).
//! Invariant: configuration that can make git run programs (`-c alias.x=!cmd`,
//! `--config-env`, `git config core.pager ...`), options that run a program the command
//! names (`grep -O`, `rebase --exec`, `bisect run`, `--ext-diff`, `--upload-pack`) and
//! unknown subcommands (aliases) are [`CommandClass::Unknown`]; a force push is
//! destructive as well as network.

use super::CommandClass;
use super::args::{OptionSpec, parse};
use super::paths::WriteKind;
use super::programs::Call;
use super::syntax::{Walker, Word};

/// Subcommands that only read.
const READERS: &[&str] = &[
    "annotate",
    "blame",
    "cat-file",
    "check-attr",
    "check-ignore",
    "check-ref-format",
    "cherry",
    "count-objects",
    "describe",
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "for-each-ref",
    "fsck",
    "grep",
    "help",
    "log",
    "ls-files",
    "ls-tree",
    "merge-base",
    "name-rev",
    "range-diff",
    "rev-list",
    "rev-parse",
    "shortlog",
    "show",
    "show-branch",
    "show-ref",
    "status",
    "var",
    "verify-commit",
    "verify-tag",
    "version",
    "whatchanged",
];

/// Subcommands that talk to a remote.
const REMOTE: &[&str] = &[
    "clone",
    "fetch",
    "fetch-pack",
    "ls-remote",
    "pull",
    "send-pack",
    "request-pull",
    "lfs",
    "svn",
    "p4",
];

/// Subcommands that change the repository or work tree in ways git can undo (commits,
/// merges, the index, new branches).
const WRITERS: &[&str] = &[
    "add",
    "am",
    "apply",
    "bisect",
    "cherry-pick",
    "commit",
    "format-patch",
    "gc",
    "init",
    "maintenance",
    "merge",
    "mv",
    "notes",
    "pack-refs",
    "rebase",
    "repack",
    "replace",
    "rerere",
    "revert",
    "sparse-checkout",
    "update-index",
    "bundle",
    "archive",
];

/// Configuration keys that cannot make git run anything.
const HARMLESS_CONFIG: &[&str] = &[
    "color.",
    "advice.",
    "user.",
    "core.quotepath",
    "init.defaultbranch",
    "log.",
    "format.",
    "column.",
    "safe.directory",
    "diff.noprefix",
    "diff.renames",
    "core.abbrev",
];

/// Global options that take a value.
const GLOBAL: OptionSpec = OptionSpec {
    short_values: "Cc",
    long_values: &[
        "git-dir",
        "work-tree",
        "namespace",
        "config-env",
        "super-prefix",
    ],
    stop_at_operand: true,
};

pub(super) fn git(walker: &mut Walker<'_>, call: &Call<'_>) {
    let parsed = call.parse(&GLOBAL);
    if parsed.has(&["version", "help"]) && parsed.rest.is_empty() {
        return;
    }
    for setting in parsed.values(&["c"]) {
        let key = setting.value().map(|value| {
            value
                .split('=')
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase()
        });
        let harmless =
            key.is_some_and(|key| HARMLESS_CONFIG.iter().any(|prefix| key.starts_with(prefix)));
        if !harmless {
            walker.note(
                call.part,
                CommandClass::Unknown,
                format!(
                    "sets git configuration `{}`, which can make git run other programs",
                    setting.text
                ),
            );
        }
    }
    if parsed.has(&["git-dir", "work-tree", "config-env"]) {
        walker.note(
            call.part,
            CommandClass::Unknown,
            "points git at another repository or work tree, or sets configuration from the \
             environment",
        );
    }
    if parsed.value(&["exec-path"]).is_some() {
        walker.note(
            call.part,
            CommandClass::Unknown,
            "makes git look for its own programs in another directory (--exec-path)",
        );
    }
    let Some((sub, args)) = parsed.rest.split_first() else {
        return;
    };
    let directories: Vec<Word> = parsed.values(&["C"]).cloned().collect();
    walker.scoped(|walker| {
        for directory in &directories {
            walker.cwd = walker.cwd.after_cd(Some(directory), walker.context.root);
        }
        match sub.value() {
            Some(sub) => subcommand(walker, call, sub, args),
            None => walker.note(
                call.part,
                CommandClass::Unknown,
                "runs a git subcommand only known when it runs",
            ),
        }
    });
}

fn subcommand(walker: &mut Walker<'_>, call: &Call<'_>, sub: &str, args: &[Word]) {
    let flags = |names: &[&str]| args.iter().any(|arg| names.contains(&arg.spelling()));
    let part = call.part;
    output_file(walker, part, sub, args);
    if let Some(why) = runs_a_program(sub, args) {
        walker.note(part, CommandClass::Unknown, why);
    }
    match sub {
        _ if READERS.contains(&sub) => {}
        "push" => push(walker, part, args),
        _ if REMOTE.contains(&sub) => {
            walker.note(part, CommandClass::Network, "talks to a git remote");
        }
        "reset" if flags(&["--hard", "--merge", "--keep"]) => walker.note(
            part,
            CommandClass::Destructive,
            "discards uncommitted changes",
        ),
        "clean" if !flags(&["-n", "--dry-run"]) => {
            walker.note(part, CommandClass::Destructive, "deletes untracked files")
        }
        "clean" => {}
        "checkout" => checkout(walker, part, args),
        "restore" => {
            let staged_only = flags(&["--staged", "-S"]) && !flags(&["--worktree", "-W"]);
            if staged_only {
                walker.note(part, CommandClass::WritesWorkspace, "unstages changes");
            } else {
                walker.note(
                    part,
                    CommandClass::Destructive,
                    "discards uncommitted changes",
                );
            }
        }
        "switch" if flags(&["--discard-changes", "-f", "--force"]) => walker.note(
            part,
            CommandClass::Destructive,
            "switches branches and discards uncommitted changes",
        ),
        "rm" if flags(&["-f", "--force", "-rf", "-fr"]) => walker.note(
            part,
            CommandClass::Destructive,
            "deletes files with uncommitted changes",
        ),
        "branch" => branch(walker, part, args),
        "tag" => listing_or(
            walker,
            part,
            args,
            &["-l", "--list", "-n", "--contains", "--points-at", "-v"],
            "creates or deletes a tag",
        ),
        "stash" => stash(walker, part, args),
        "remote" => remote(walker, part, args),
        "config" => config(walker, part, args),
        "worktree" => worktree(walker, part, args),
        "submodule" => submodule(walker, part, args),
        "reflog"
            if args
                .first()
                .is_some_and(|arg| matches!(arg.spelling(), "expire" | "delete")) =>
        {
            walker.note(
                part,
                CommandClass::Destructive,
                "drops history that only the reflog keeps",
            );
        }
        "reflog" => {}
        "prune" | "filter-branch" | "filter-repo" => walker.note(
            part,
            CommandClass::Destructive,
            "rewrites history or drops unreachable commits",
        ),
        "update-ref" if flags(&["-d"]) => {
            walker.note(part, CommandClass::Destructive, "deletes a ref");
        }
        "reset" | "switch" | "rm" | "update-ref" | "symbolic-ref" => {
            walker.note(
                part,
                CommandClass::WritesWorkspace,
                "changes the repository",
            );
        }
        "difftool" | "mergetool" | "daemon" | "instaweb" => walker.note(
            part,
            CommandClass::Unknown,
            "runs other programs chosen by configuration",
        ),
        _ if WRITERS.contains(&sub) => {
            walker.note(
                part,
                CommandClass::WritesWorkspace,
                "changes the repository",
            );
        }
        _ => walker.note(
            part,
            CommandClass::Unknown,
            format!(
                "runs `git {sub}`, which is not a git command duet knows (an alias or \
                 extension can run anything)"
            ),
        ),
    }
}

/// `--output FILE` (diff, log, show and every command taking diff options), `-o DIR`
/// of format-patch, `-o FILE` of archive, `bundle create FILE`.
fn output_file(walker: &mut Walker<'_>, part: &str, sub: &str, args: &[Word]) {
    let short = match sub {
        "format-patch" | "archive" => "o",
        _ => "",
    };
    let parsed = parse(
        args,
        &OptionSpec {
            short_values: short,
            long_values: &["output", "output-directory"],
            stop_at_operand: false,
        },
    );
    let files: &[&str] = if sub == "archive" {
        &["output", "o"]
    } else {
        &["output"]
    };
    for file in parsed.values(files) {
        walker.write(part, file, WriteKind::Replace);
    }
    if sub == "format-patch" {
        for directory in parsed.values(&["o", "output-directory"]) {
            walker.write(part, directory, WriteKind::Modify);
        }
    }
    if sub == "bundle"
        && parsed.operands.first().and_then(|word| word.value()) == Some("create")
        && let Some(file) = parsed.operands.get(1)
    {
        walker.write(part, file, WriteKind::Replace);
    }
}

/// Options and subcommands that make git run a program the command names (or the
/// repository's configuration names): why, if `args` of `sub` have one.
fn runs_a_program(sub: &str, args: &[Word]) -> Option<&'static str> {
    let has = |prefixes: &[&str]| {
        args.iter()
            .take_while(|arg| arg.value() != Some("--"))
            .any(|arg| {
                let spelling = arg.spelling();
                prefixes.iter().any(|prefix| {
                    spelling == *prefix
                        || spelling
                            .strip_prefix(prefix)
                            .is_some_and(|rest| rest.starts_with('='))
                })
            })
    };
    let short = |letter: char| {
        args.iter()
            .take_while(|arg| arg.value() != Some("--"))
            .any(|arg| {
                let spelling = arg.spelling();
                !spelling.starts_with("--")
                    && spelling.starts_with('-')
                    && spelling.contains(letter)
            })
    };
    if has(&["--ext-diff", "--textconv"]) {
        return Some(
            "runs the external diff or text conversion programs configured for the repository",
        );
    }
    match sub {
        "grep" if has(&["--open-files-in-pager"]) || short('O') => {
            Some("opens the matching files in a program of its choice (-O)")
        }
        "rebase" if has(&["--exec"]) || short('x') => {
            Some("runs a command after each commit it replays (--exec)")
        }
        "bisect" if args.first().map(Word::spelling) == Some("run") => {
            Some("runs a command on each commit it tests")
        }
        "clone" | "fetch" | "pull" | "ls-remote" | "archive" | "push" | "submodule"
            if has(&[
                "--upload-pack",
                "--receive-pack",
                "--exec",
                "--template",
                "--config",
            ]) || (sub == "clone" && (short('u') || short('c'))) =>
        {
            Some(
                "runs a program of its choice, or sets configuration or hooks for the new repository",
            )
        }
        "init" if has(&["--template"]) => Some("installs hooks from a template directory"),
        "help" if has(&["--web", "--info", "--man"]) || short('w') || short('i') || short('m') => {
            Some("opens the help in a viewer chosen by configuration")
        }
        _ => None,
    }
}

fn push(walker: &mut Walker<'_>, part: &str, args: &[Word]) {
    walker.note(part, CommandClass::Network, "pushes to a git remote");
    let forced = args.iter().any(|arg| {
        let spelling = arg.spelling();
        matches!(
            spelling,
            "-f" | "--force" | "--mirror" | "--delete" | "-d" | "--prune"
        ) || spelling.starts_with("--force-with-lease")
            || spelling.starts_with("--force-if-includes")
            || (!spelling.starts_with('-')
                && (spelling.starts_with('+') || spelling.starts_with(':')))
            || (spelling.starts_with('-') && !spelling.starts_with("--") && spelling.contains('f'))
    });
    if forced {
        walker.note(
            part,
            CommandClass::Destructive,
            "force-pushes or deletes remote branches, which can overwrite others' history",
        );
    }
}

/// `git checkout BRANCH` switches branches (and refuses to lose changes); with paths,
/// `.`, `--` or `-f` it overwrites uncommitted work. An operand that looks like a path
/// (it has a `.` or `/`) is taken as one.
fn checkout(walker: &mut Walker<'_>, part: &str, args: &[Word]) {
    let parsed = parse(
        args,
        &OptionSpec {
            short_values: "bB",
            long_values: &["orphan", "conflict", "pathspec-from-file"],
            stop_at_operand: false,
        },
    );
    let creates = parsed.has(&["b", "B", "orphan"]);
    let looks_like_path = |word: &&Word| {
        word.value()
            .is_none_or(|value| value.contains(['.', '/', '*', '?']))
    };
    let overwrites = parsed.has(&[
        "f",
        "force",
        "p",
        "patch",
        "pathspec-from-file",
        "ours",
        "theirs",
    ]) || parsed.saw_double_dash
        || parsed.operands.len() > 1
        || (!creates && parsed.operands.iter().any(looks_like_path));
    if overwrites {
        walker.note(
            part,
            CommandClass::Destructive,
            "overwrites uncommitted changes in the named paths",
        );
    } else {
        walker.note(
            part,
            CommandClass::WritesWorkspace,
            "switches or creates a branch",
        );
    }
}

fn branch(walker: &mut Walker<'_>, part: &str, args: &[Word]) {
    let parsed = parse(
        args,
        &OptionSpec {
            short_values: "u",
            long_values: &[
                "set-upstream-to",
                "sort",
                "format",
                "contains",
                "merged",
                "no-merged",
                "points-at",
            ],
            stop_at_operand: false,
        },
    );
    if parsed.has(&["D"]) || (parsed.has(&["d", "delete"]) && parsed.has(&["f", "force"])) {
        walker.note(
            part,
            CommandClass::Destructive,
            "force-deletes a branch and its unmerged commits",
        );
    } else if parsed.has(&[
        "d",
        "delete",
        "m",
        "M",
        "c",
        "C",
        "move",
        "copy",
        "u",
        "set-upstream-to",
        "unset-upstream",
        "edit-description",
    ]) || !parsed.operands.is_empty()
        && !parsed.has(&["l", "list", "contains", "merged", "no-merged", "points-at"])
    {
        walker.note(
            part,
            CommandClass::WritesWorkspace,
            "creates, renames or deletes a branch",
        );
    }
}

/// Reads when given one of `listing` flags or nothing; otherwise writes.
fn listing_or(walker: &mut Walker<'_>, part: &str, args: &[Word], listing: &[&str], what: &str) {
    let lists = args.is_empty() || args.iter().any(|arg| listing.contains(&arg.spelling()));
    if !lists {
        walker.note(part, CommandClass::WritesWorkspace, what.to_string());
    }
}

fn stash(walker: &mut Walker<'_>, part: &str, args: &[Word]) {
    match args.first().map(Word::spelling) {
        Some("list" | "show") => {}
        Some("drop" | "clear") => {
            walker.note(part, CommandClass::Destructive, "discards stashed changes")
        }
        _ => walker.note(
            part,
            CommandClass::WritesWorkspace,
            "stashes or restores changes",
        ),
    }
}

fn remote(walker: &mut Walker<'_>, part: &str, args: &[Word]) {
    match args
        .iter()
        .find(|arg| !arg.spelling().starts_with('-'))
        .map(Word::spelling)
    {
        None | Some("get-url") => {}
        Some("show" | "update" | "prune") => {
            walker.note(part, CommandClass::Network, "talks to a git remote");
        }
        Some(_) => walker.note(
            part,
            CommandClass::WritesWorkspace,
            "changes the configured remotes",
        ),
    }
}

/// `git config`: reads with `--get`/`--list`/`get`/`list` or one name alone; any
/// other form sets, unsets, renames or edits configuration, which can make later git
/// commands run programs (`core.fsmonitor`, `core.pager`, `alias.*`, filters).
fn config(walker: &mut Walker<'_>, part: &str, args: &[Word]) {
    const READ_ACTIONS: &[&str] = &[
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "--get-color",
        "--get-colorbool",
        "--list",
        "-l",
    ];
    const WRITE_ACTIONS: &[&str] = &[
        "--add",
        "--unset",
        "--unset-all",
        "--replace-all",
        "--rename-section",
        "--remove-section",
        "--edit",
        "-e",
    ];
    let parsed = parse(
        args,
        &OptionSpec {
            short_values: "f",
            long_values: &["file", "blob", "type", "default", "comment", "value"],
            stop_at_operand: false,
        },
    );
    let spelled = |names: &[&str]| args.iter().any(|arg| names.contains(&arg.spelling()));
    let operands: Vec<&str> = parsed.operands.iter().map(|word| word.spelling()).collect();
    let reads = match operands.first().copied() {
        _ if spelled(WRITE_ACTIONS) => false,
        Some("get" | "list") => true,
        Some("set" | "unset" | "rename-section" | "remove-section" | "edit") => false,
        _ if spelled(READ_ACTIONS) => true,
        _ => operands.len() <= 1,
    };
    if !reads {
        walker.note(
            part,
            CommandClass::Unknown,
            "changes git configuration, which can make later git commands run other programs",
        );
    }
}

fn worktree(walker: &mut Walker<'_>, part: &str, args: &[Word]) {
    match args.first().map(Word::spelling) {
        Some("list") | None => {}
        Some("remove" | "prune") => {
            walker.note(part, CommandClass::Destructive, "deletes a worktree")
        }
        Some("add") => {
            let parsed = parse(
                &args[1..],
                &OptionSpec {
                    short_values: "bB",
                    long_values: &["reason"],
                    stop_at_operand: false,
                },
            );
            match parsed.operands.first() {
                Some(path) => walker.write(part, path, WriteKind::Modify),
                None => walker.note(
                    part,
                    CommandClass::WritesWorkspace,
                    "adds or changes a worktree",
                ),
            }
        }
        Some(_) => walker.note(
            part,
            CommandClass::WritesWorkspace,
            "adds or changes a worktree",
        ),
    }
}

fn submodule(walker: &mut Walker<'_>, part: &str, args: &[Word]) {
    match args
        .iter()
        .find(|arg| !arg.spelling().starts_with('-'))
        .map(Word::spelling)
    {
        None | Some("status" | "summary") => {}
        Some("foreach") => walker.note(
            part,
            CommandClass::Unknown,
            "runs a command in every submodule",
        ),
        Some("deinit") => walker.note(
            part,
            CommandClass::Destructive,
            "removes a submodule's work tree",
        ),
        Some(_) => walker.note(
            part,
            CommandClass::Network,
            "fetches submodules from their remotes",
        ),
    }
}
