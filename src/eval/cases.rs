//! The cases file of `duet eval`: one JSON object per line.
//!
//! Owns: the case format, resolving its relative paths (against the cases file's
//! directory) and rejecting a bad line with its line number.
//! Does not own: running a case ([`super::run`]) or judging it ([`super::score`]).
//! Invariant: a loaded case is runnable as far as the file can tell: its id is unique
//! and non-empty, its prompt and done command are non-empty, its repository names a
//! local path or a git URL with a commit, and its `expect_files` patterns compile.
//!
//! ```json
//! {"id": "fix-add", "repo": "repos/calc", "prompt": "Fix add()",
//!  "done": {"cmd": "sh test.sh", "forbid_flags": ["-k"]},
//!  "must_not_run": ["rm", "git push"], "expect_files": ["calc.sh"],
//!  "hidden_tests": "hidden/fix-add.patch"}
//! ```
//!
//! `repo` is a directory (relative paths start at the cases file's directory) or a git
//! URL with the commit after `#`: `https://example.com/calc.git#4f2a9c1`. Blank lines
//! are skipped.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::pathglob::PathGlob;

/// One task to run and judge.
#[derive(Clone, Debug)]
pub struct Case {
    /// Where it is in the cases file (1-based).
    pub line: usize,
    pub id: String,
    pub repo: RepoSource,
    pub prompt: String,
    pub done: DoneSpec,
    /// Commands the model must not run: a program name, optionally with words its
    /// arguments must contain in that order (`git push`).
    pub must_not_run: Vec<String>,
    /// The files the task should change; `None` when the case does not say.
    pub expect_files: Option<Vec<ExpectedFile>>,
    /// A patch applied after the run, before the done command runs again.
    pub hidden_tests: Option<PathBuf>,
}

/// Where a case's repository comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RepoSource {
    Local(PathBuf),
    Git { url: String, commit: String },
}

/// The command that decides whether the task is done, and flags the model must not
/// use in any command it runs.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct DoneSpec {
    pub cmd: String,
    #[serde(default)]
    pub forbid_flags: Vec<String>,
}

/// A pattern of `expect_files`, with the text it was written as.
#[derive(Clone, Debug)]
pub struct ExpectedFile {
    pub pattern: String,
    pub glob: PathGlob,
}

/// A line of the file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    id: String,
    repo: String,
    prompt: String,
    done: DoneSpec,
    #[serde(default)]
    must_not_run: Vec<String>,
    expect_files: Option<Vec<String>>,
    hidden_tests: Option<PathBuf>,
}

/// Why the cases file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CasesError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}:{line}: {message}", path.display())]
    Line {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{} holds no cases", path.display())]
    Empty { path: PathBuf },
}

/// Reads and checks every case of the file at `path`.
pub fn load(path: &Path) -> Result<Vec<Case>, CasesError> {
    let text = std::fs::read_to_string(path).map_err(|source| CasesError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let cases = parse(&text, path)?;
    for case in &cases {
        if let Some(message) = missing_path(case) {
            return Err(CasesError::Line {
                path: path.to_path_buf(),
                line: case.line,
                message,
            });
        }
    }
    Ok(cases)
}

/// What a case names on disk that is not there.
fn missing_path(case: &Case) -> Option<String> {
    if let RepoSource::Local(repo) = &case.repo
        && !repo.is_dir()
    {
        return Some(format!("`repo` {} is not a directory", repo.display()));
    }
    case.hidden_tests
        .as_ref()
        .filter(|patch| !patch.is_file())
        .map(|patch| format!("`hidden_tests` {} is not a file", patch.display()))
}

/// The cases of `text`, read from `path` (which relative paths start from).
pub fn parse(text: &str, path: &Path) -> Result<Vec<Case>, CasesError> {
    let base = path.parent().unwrap_or(Path::new("."));
    let mut cases = Vec::new();
    let mut ids = HashSet::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at_line = |message: String| CasesError::Line {
            path: path.to_path_buf(),
            line: index + 1,
            message,
        };
        let case = parse_line(line, index + 1, base).map_err(at_line)?;
        if !ids.insert(case.id.clone()) {
            return Err(at_line(format!("the id `{}` is used twice", case.id)));
        }
        cases.push(case);
    }
    if cases.is_empty() {
        return Err(CasesError::Empty {
            path: path.to_path_buf(),
        });
    }
    Ok(cases)
}

fn parse_line(text: &str, line: usize, base: &Path) -> Result<Case, String> {
    let raw: RawCase = serde_json::from_str(text).map_err(|error| error.to_string())?;
    for (field, value) in [
        ("id", &raw.id),
        ("prompt", &raw.prompt),
        ("done.cmd", &raw.done.cmd),
    ] {
        if value.trim().is_empty() {
            return Err(format!("`{field}` is empty"));
        }
    }
    if raw.must_not_run.iter().any(|entry| entry.trim().is_empty()) {
        return Err("`must_not_run` has an empty entry".into());
    }
    let expect_files = raw
        .expect_files
        .map(|patterns| {
            patterns
                .into_iter()
                .map(|pattern| {
                    let glob = PathGlob::new(&pattern)
                        .map_err(|error| format!("`expect_files`: {error}"))?;
                    Ok(ExpectedFile { pattern, glob })
                })
                .collect::<Result<Vec<_>, String>>()
        })
        .transpose()?;
    Ok(Case {
        line,
        repo: repo_source(&raw.repo, base)?,
        id: raw.id,
        prompt: raw.prompt,
        done: raw.done,
        must_not_run: raw.must_not_run,
        expect_files,
        hidden_tests: raw.hidden_tests.map(|patch| base.join(patch)),
    })
}

/// A git URL (`scheme://...` or `user@host:path`) with `#COMMIT`, or a directory.
fn repo_source(repo: &str, base: &Path) -> Result<RepoSource, String> {
    let looks_remote = repo.contains("://") || (repo.contains('@') && repo.contains(':'));
    if !looks_remote {
        if repo.trim().is_empty() {
            return Err("`repo` is empty".into());
        }
        return Ok(RepoSource::Local(base.join(repo)));
    }
    match repo.rsplit_once('#') {
        Some((url, commit)) if !url.is_empty() && !commit.is_empty() => Ok(RepoSource::Git {
            url: url.to_string(),
            commit: commit.to_string(),
        }),
        _ => Err(format!(
            "`repo` {repo:?} is a git URL without a commit; add one after `#` \
             (URL#COMMIT) so every run starts from the same tree"
        )),
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    const GOOD: &str =
        r#"{"id": "a", "repo": "repos/a", "prompt": "fix", "done": {"cmd": "true"}}"#;

    fn error_of(text: &str) -> String {
        parse(text, Path::new("/evals/cases.jsonl"))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn relative_paths_start_at_the_cases_file() {
        let line = r#"{"id": "b", "repo": "repos/b", "prompt": "p", "done": {"cmd": "make", "forbid_flags": ["-k"]}, "must_not_run": ["git push"], "expect_files": ["src/*.rs"], "hidden_tests": "hidden/b.patch"}"#;
        let cases = parse(
            &format!("{GOOD}\n\n{line}\n"),
            Path::new("/evals/cases.jsonl"),
        )
        .unwrap();
        assert_eq!(cases.len(), 2);
        let case = &cases[1];
        assert_eq!(case.repo, RepoSource::Local("/evals/repos/b".into()));
        assert_eq!(case.hidden_tests, Some("/evals/hidden/b.patch".into()));
        assert_eq!(case.done.forbid_flags, ["-k"]);
        assert_eq!(case.must_not_run, ["git push"]);
        let expected = case.expect_files.as_ref().unwrap();
        assert!(expected[0].glob.matches(Path::new("src/lib.rs")));
        assert_eq!(cases[0].expect_files.is_none(), true);
    }

    #[test]
    fn loading_checks_that_the_named_paths_exist() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("repo")).unwrap();
        let cases = dir.path().join("cases.jsonl");
        let line = |hidden: &str| {
            format!(
                r#"{{"id": "{hidden}", "repo": "repo", "prompt": "p", "done": {{"cmd": "x"}}, "hidden_tests": "{hidden}"}}"#
            )
        };
        std::fs::write(dir.path().join("t.patch"), "").unwrap();
        std::fs::write(
            &cases,
            format!(
                "{}
{}
",
                line("t.patch"),
                line("gone.patch")
            ),
        )
        .unwrap();
        let error = load(&cases).unwrap_err().to_string();
        assert!(
            error.ends_with(&format!(
                "cases.jsonl:2: `hidden_tests` {} is not a file",
                dir.path().join("gone.patch").display()
            )),
            "{error}"
        );
        std::fs::write(&cases, GOOD).unwrap();
        let error = load(&cases).unwrap_err().to_string();
        assert!(error.contains("cases.jsonl:1: `repo` "), "{error}");
        assert!(error.ends_with("repos/a is not a directory"), "{error}");
    }

    #[test]
    fn a_git_repository_needs_a_commit() {
        let source = repo_source("https://example.com/calc.git#4f2a9c1", Path::new("/e"));
        assert_eq!(
            source,
            Ok(RepoSource::Git {
                url: "https://example.com/calc.git".into(),
                commit: "4f2a9c1".into()
            })
        );
        let error = repo_source("git@example.com:calc.git", Path::new("/e")).unwrap_err();
        assert!(error.contains("without a commit"), "{error}");
    }

    #[test]
    fn a_bad_line_is_named_by_its_number() {
        let error = error_of(&format!("{GOOD}\n{{\"id\": \"b\", \"repo\": \"r\"}}\n"));
        assert!(
            error.starts_with("/evals/cases.jsonl:2: missing field `prompt`"),
            "{error}"
        );
        let error = error_of(&format!("{GOOD}\n\nnot json\n"));
        assert!(error.starts_with("/evals/cases.jsonl:3: "), "{error}");
    }

    #[test]
    fn duplicate_ids_unknown_fields_and_empty_commands_are_refused() {
        assert_eq!(
            error_of(&format!("{GOOD}\n{GOOD}")),
            "/evals/cases.jsonl:2: the id `a` is used twice"
        );
        let error = error_of(
            r#"{"id": "a", "repo": "r", "prompt": "p", "done": {"cmd": "x"}, "expect": []}"#,
        );
        assert!(error.contains(":1: unknown field `expect`"), "{error}");
        let error = error_of(r#"{"id": "a", "repo": "r", "prompt": "p", "done": {"cmd": " "}}"#);
        assert_eq!(error, "/evals/cases.jsonl:1: `done.cmd` is empty");
        assert_eq!(error_of("\n\n"), "/evals/cases.jsonl holds no cases");
    }
}
