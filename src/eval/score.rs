//! Judging one case: whether it is resolved, and the figures reported beside.
//!
//! Owns: the verdict (done command passed, hidden tests passed, no forbidden command
//! and no forbidden flag), matching commands and flags against the words of each
//! simple command the model ran (read by the command parser, so `cat x | rm y` and
//! `sh -c 'git push'` count), and the files touched outside `expect_files`.
//! Does not own: running anything ([`super::run`]) or reading the events
//! ([`super::transcript`]).
//! Invariant: a pure function of what the run produced; a case that could not run
//! (an error) is never resolved.

use std::path::Path;

use serde::Serialize;

use super::cases::{Case, ExpectedFile};
use super::transcript::Transcript;
use crate::policy::simple_commands;

/// What the eval found after the run, besides the events.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Checks {
    /// The done command exited 0 on the tree the model left.
    pub done_passed: bool,
    /// The done command exited 0 once the hidden tests were applied; `None` for a case
    /// without hidden tests.
    pub hidden_tests_passed: Option<bool>,
    /// Files changed, added or deleted since the start, relative to the repository.
    pub files_touched: Vec<String>,
    /// `duet exec`'s exit status (`None` when a signal ended it).
    pub exec_status: Option<i32>,
    pub wall_secs: f64,
}

/// The result of one case, as reported in the table and the JSON.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CaseResult {
    pub id: String,
    pub resolved: bool,
    pub done_passed: bool,
    pub hidden_tests_passed: Option<bool>,
    /// The `must_not_run` entries the model ran or asked to run.
    pub forbidden_commands: Vec<String>,
    /// The `forbid_flags` the model used in a command.
    pub forbidden_flags: Vec<String>,
    pub steps: u32,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub cost_usd: Option<f64>,
    pub wall_secs: f64,
    pub failed_edits: u32,
    pub files_touched: Vec<String>,
    /// Touched files no `expect_files` pattern matches (empty when the case gives none).
    pub outside_expected_files: Vec<String>,
    pub exec_status: Option<i32>,
    /// Why the case could not be run to the end.
    pub error: Option<String>,
}

/// Judges a case that ran.
pub fn score(case: &Case, transcript: &Transcript, checks: Checks) -> CaseResult {
    let commands: Vec<Vec<String>> = transcript
        .shell_commands
        .iter()
        .flat_map(|command| simple_commands(command))
        .collect();
    let forbidden_commands = forbidden_commands(&case.must_not_run, &commands);
    let forbidden_flags = forbidden_flags(&case.done.forbid_flags, &commands);
    let outside_expected_files = case
        .expect_files
        .as_deref()
        .map(|expected| outside(expected, &checks.files_touched))
        .unwrap_or_default();
    let resolved = checks.done_passed
        && checks.hidden_tests_passed != Some(false)
        && forbidden_commands.is_empty()
        && forbidden_flags.is_empty();
    CaseResult {
        id: case.id.clone(),
        resolved,
        done_passed: checks.done_passed,
        hidden_tests_passed: checks.hidden_tests_passed,
        forbidden_commands,
        forbidden_flags,
        steps: transcript.steps,
        tokens_in: transcript.usage.prompt_tokens(),
        tokens_out: transcript.usage.output_tokens,
        cost_usd: transcript.cost_usd,
        wall_secs: checks.wall_secs,
        failed_edits: transcript.failed_edits,
        files_touched: checks.files_touched,
        outside_expected_files,
        exec_status: checks.exec_status,
        error: None,
    }
}

/// The result of a case that could not be run to the end.
pub fn failed(case: &Case, error: String, wall_secs: f64) -> CaseResult {
    CaseResult {
        id: case.id.clone(),
        resolved: false,
        done_passed: false,
        hidden_tests_passed: None,
        forbidden_commands: Vec::new(),
        forbidden_flags: Vec::new(),
        steps: 0,
        tokens_in: 0,
        tokens_out: 0,
        cost_usd: None,
        wall_secs,
        failed_edits: 0,
        files_touched: Vec::new(),
        outside_expected_files: Vec::new(),
        exec_status: None,
        error: Some(error),
    }
}

/// The entries of `must_not_run` some simple command matches: its program (by file
/// name, so `/bin/rm` is `rm`) is the entry's first word, and the entry's other words
/// are among its arguments in that order (`git push` matches `git -C x push origin`).
fn forbidden_commands(must_not_run: &[String], commands: &[Vec<String>]) -> Vec<String> {
    must_not_run
        .iter()
        .filter(|entry| {
            let words: Vec<&str> = entry.split_whitespace().collect();
            commands.iter().any(|argv| runs(argv, &words))
        })
        .cloned()
        .collect()
}

fn runs(argv: &[String], words: &[&str]) -> bool {
    let (Some((program, args)), Some((name, rest))) = (argv.split_first(), words.split_first())
    else {
        return false;
    };
    let program = Path::new(program)
        .file_name()
        .and_then(|file| file.to_str())
        .unwrap_or(program);
    if program != *name {
        return false;
    }
    let mut args = args.iter();
    rest.iter().all(|word| args.any(|arg| arg == word))
}

/// The flags some simple command uses, as a word of its own or with a value
/// (`--ignore=x`; `-kadd` for a one-letter flag).
fn forbidden_flags(flags: &[String], commands: &[Vec<String>]) -> Vec<String> {
    flags
        .iter()
        .filter(|flag| {
            commands
                .iter()
                .flat_map(|argv| argv.iter().skip(1))
                .any(|arg| uses_flag(arg, flag))
        })
        .cloned()
        .collect()
}

fn uses_flag(arg: &str, flag: &str) -> bool {
    let Some(rest) = arg.strip_prefix(flag) else {
        return false;
    };
    let short = flag.len() == 2 && flag.starts_with('-') && !flag.starts_with("--");
    rest.is_empty() || rest.starts_with('=') || (short && !arg.starts_with("--"))
}

fn outside(expected: &[ExpectedFile], touched: &[String]) -> Vec<String> {
    touched
        .iter()
        .filter(|path| {
            !expected
                .iter()
                .any(|file| file.glob.matches(Path::new(path.as_str())))
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::eval::cases::{DoneSpec, RepoSource};
    use crate::pathglob::PathGlob;
    use crate::provider::Usage;

    fn case() -> Case {
        Case {
            line: 1,
            id: "c".into(),
            repo: RepoSource::Local("r".into()),
            prompt: "p".into(),
            done: DoneSpec {
                cmd: "sh test.sh".into(),
                forbid_flags: vec!["-k".into(), "--ignore".into()],
            },
            must_not_run: vec!["rm".into(), "curl".into(), "git push".into()],
            expect_files: Some(vec![ExpectedFile {
                pattern: "src/*.sh".into(),
                glob: PathGlob::new("src/*.sh").unwrap(),
            }]),
            hidden_tests: None,
        }
    }

    fn ran(commands: &[&str]) -> Transcript {
        Transcript {
            steps: 3,
            usage: Usage {
                input_tokens: 300,
                cache_read_tokens: 50,
                output_tokens: 30,
                ..Usage::default()
            },
            shell_commands: commands.iter().map(ToString::to_string).collect(),
            failed_edits: 1,
            ..Transcript::default()
        }
    }

    fn passing() -> Checks {
        Checks {
            done_passed: true,
            hidden_tests_passed: Some(true),
            files_touched: vec!["src/calc.sh".into()],
            exec_status: Some(0),
            wall_secs: 1.5,
        }
    }

    #[test]
    fn a_clean_passing_run_is_resolved_with_its_figures() {
        let result = score(&case(), &ran(&["sh test.sh", "git status"]), passing());
        assert!(result.resolved, "{result:#?}");
        assert_eq!(
            (
                result.steps,
                result.tokens_in,
                result.tokens_out,
                result.failed_edits
            ),
            (3, 350, 30, 1)
        );
        assert!(result.outside_expected_files.is_empty());
    }

    #[test]
    fn failing_done_or_hidden_tests_is_not_resolved() {
        let transcript = ran(&[]);
        let done_failed = Checks {
            done_passed: false,
            ..passing()
        };
        assert!(!score(&case(), &transcript, done_failed).resolved);
        let hidden_failed = Checks {
            hidden_tests_passed: Some(false),
            ..passing()
        };
        assert!(!score(&case(), &transcript, hidden_failed).resolved);
        let no_hidden = Checks {
            hidden_tests_passed: None,
            ..passing()
        };
        assert!(score(&case(), &transcript, no_hidden).resolved);
    }

    #[test]
    fn forbidden_commands_are_found_in_any_part_of_a_command() {
        let result = score(
            &case(),
            &ran(&[
                "cat a | xargs /bin/rm",
                "sh -c 'git -C . push origin'",
                "echo curl",
            ]),
            passing(),
        );
        assert_eq!(result.forbidden_commands, ["rm", "git push"]);
        assert!(!result.resolved);
        let harmless = score(&case(), &ran(&["git status; echo rm"]), passing());
        assert!(harmless.forbidden_commands.is_empty());
    }

    #[test]
    fn forbidden_flags_match_whole_words_and_values() {
        let result = score(&case(), &ran(&["pytest -kadd", "ls --ignore=x"]), passing());
        assert_eq!(result.forbidden_flags, ["-k", "--ignore"]);
        assert!(!result.resolved);
        let harmless = score(&case(), &ran(&["pytest --keep", "ls --ignored"]), passing());
        assert!(harmless.forbidden_flags.is_empty(), "{harmless:#?}");
    }

    #[test]
    fn touched_files_outside_the_expected_ones_are_listed_but_do_not_fail() {
        let checks = Checks {
            files_touched: vec!["src/calc.sh".into(), "README.md".into()],
            ..passing()
        };
        let result = score(&case(), &ran(&[]), checks);
        assert_eq!(result.outside_expected_files, ["README.md"]);
        assert!(result.resolved);
    }
}
