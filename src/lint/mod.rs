//! Post-write checks: after every write or edit the model reads, in the same tool
//! result, the syntax errors and linter output for what it just wrote, and after the
//! last edit of a batch the output of the project-wide turn checks.
//!
//! Owns: the `[lint]` settings ([`LintConfig`]), the built-in tree-sitter syntax check
//! (`syntax.rs`, `language.rs`, `python.rs`), running configured linters and turn
//! checks (`command.rs`), and the report text (`report.rs`).
//! Does not own: when checks run (the write and edit tools and the agent call in) or
//! the write itself — checks read what already landed.
//! Invariant: checking never fails and never blocks without bound: every problem inside
//! lint (a bad pattern, a missing linter, a timeout, a parser giving up) becomes a line
//! of the report, parsing runs off the async runtime, and every command has a time
//! limit after which its whole process group is killed.
//!
//! Report rules: everything clean is one line (`lint: clean (rust syntax, ruff check)`);
//! otherwise a header with counts, then notes, then details with new syntax errors
//! first. A file with no grammar and no matching linter gets an empty string, so the
//! write result carries no lint line at all. A linter whose program is missing (exit
//! status 127) is reported once per session and skipped silently afterwards.
//!
//! Syntax check coverage: Rust, Python, JavaScript (with JSX), TypeScript, TSX, Go, C,
//! C++ (also `.h`), JSON, TOML (also `Cargo.lock`, `poetry.lock`, `uv.lock`), YAML,
//! Bash (also shebang scripts without an extension), HTML and CSS. Known limits of the
//! grammars: C and C++ are parsed without expanding macros (reports there carry a
//! caveat line); tree-sitter-python accepts bad indentation, so `python.rs` adds that
//! check; HTML is lenient by design (unclosed tags are not errors).

pub(crate) mod command;
mod language;
mod python;
mod report;
mod syntax;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::pathglob::PathGlob;
use crate::shell::sandbox::Sandbox;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};

use command::{Outcome, Run};
use language::Language;
use report::Report;
pub use report::is_clean_report;
use syntax::{Checked, ParseCache};

/// Output kept from one linter run, head and tail together.
const LINTER_OUTPUT_CAP: usize = 4 * 1024;
/// Output kept from one turn check.
const TURN_OUTPUT_CAP: usize = 8 * 1024;
const DEFAULT_TIMEOUT_SECS: u64 = 20;
const DEFAULT_TURN_TIMEOUT_SECS: u64 = 120;
/// Larger files (generated data, bundles) are not parsed: the tree alone would take
/// hundreds of MB, and nobody edits such files by hand.
const MAX_SYNTAX_BYTES: usize = 8 << 20;
/// Files read by the model are parsed ahead of an edit up to this size (a 5,000-line
/// file is about 150 KiB): a parse costs CPU the model may never need, and memory.
const MAX_PRIMED_BYTES: u64 = 256 << 10;
/// What `{path}` in a linter command is replaced with.
const PATH_PLACEHOLDER: &str = "{path}";

/// The `[lint]` table of the config file:
///
/// ```toml
/// [lint]
/// syntax = true                      # built-in tree-sitter check (default true)
/// timeout_secs = 20                  # per linter run (default 20)
/// turn_timeout_secs = 120            # per turn check (default 120)
/// turn_checks = ["cargo check --quiet"]
///
/// [lint.linters]
/// "*.py" = "ruff check --quiet {path}"
/// "src/**/*.ts" = "npx eslint {path}"
/// ```
///
/// A pattern without `/` matches the file name anywhere (`*.py`); one with `/` matches
/// the path relative to the project root, where `*` stays within one directory and
/// `**` crosses them. Every matching linter runs, in the sorted order of the patterns.
/// `{path}` becomes the shell-quoted root-relative path; commands run with `sh -c` in
/// the root. Turn checks get no `{path}` and run the same way.
///
/// Deserializing rejects an invalid glob, an empty command or a zero timeout with a
/// message naming it, so the config loader can point at the file and line;
/// [`LintConfig::validate`] applies the same rules to a config built in code.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LintConfig {
    /// Run the built-in syntax check.
    pub syntax: bool,
    /// File pattern → command run after each write of a matching file.
    #[serde(deserialize_with = "linters_field")]
    pub linters: BTreeMap<String, String>,
    /// Project-wide commands run, in order, after the last edit of a batch.
    #[serde(deserialize_with = "turn_checks_field")]
    pub turn_checks: Vec<String>,
    /// Time limit of one linter run, in seconds.
    #[serde(deserialize_with = "seconds_field")]
    pub timeout_secs: u64,
    /// Time limit of one turn check, in seconds.
    #[serde(deserialize_with = "seconds_field")]
    pub turn_timeout_secs: u64,
}

impl Default for LintConfig {
    fn default() -> Self {
        Self {
            syntax: true,
            linters: BTreeMap::new(),
            turn_checks: Vec::new(),
            timeout_secs: DEFAULT_TIMEOUT_SECS,
            turn_timeout_secs: DEFAULT_TURN_TIMEOUT_SECS,
        }
    }
}

impl LintConfig {
    /// Checks what deserializing checks, for configs built in code: the first invalid
    /// pattern, empty command or zero timeout.
    pub fn validate(&self) -> Result<(), LintConfigError> {
        check_linters(&self.linters)?;
        check_turn_checks(&self.turn_checks)?;
        check_seconds(&self.timeout_secs)?;
        check_seconds(&self.turn_timeout_secs)
    }
}

/// A `[lint]` setting that cannot work.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LintConfigError {
    #[error("invalid file pattern `{pattern}` in [lint] linters: {reason}")]
    BadPattern { pattern: String, reason: String },
    #[error(
        "the linter for `{pattern}` in [lint] linters is empty; give the command to run, \
         e.g. \"ruff check --quiet {{path}}\""
    )]
    EmptyLinter { pattern: String },
    #[error("[lint] turn_checks contains an empty command; remove it or give the command to run")]
    EmptyTurnCheck,
    #[error("a [lint] timeout of 0 s would stop every check at once; use at least 1")]
    ZeroTimeout,
}

fn check_linters(linters: &BTreeMap<String, String>) -> Result<(), LintConfigError> {
    linters
        .iter()
        .try_for_each(|(pattern, command)| FileLinter::new(pattern, command).map(drop))
}

fn check_turn_checks(checks: &[String]) -> Result<(), LintConfigError> {
    match checks.iter().any(|check| check.trim().is_empty()) {
        true => Err(LintConfigError::EmptyTurnCheck),
        false => Ok(()),
    }
}

fn check_seconds(seconds: &u64) -> Result<(), LintConfigError> {
    match seconds {
        0 => Err(LintConfigError::ZeroTimeout),
        _ => Ok(()),
    }
}

/// Deserializes a field and applies `check`, so the error carries the field's span.
fn checked<'de, D, T>(
    deserializer: D,
    check: impl Fn(&T) -> Result<(), LintConfigError>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    let value = T::deserialize(deserializer)?;
    check(&value).map_err(D::Error::custom)?;
    Ok(value)
}

fn linters_field<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    checked(deserializer, check_linters)
}

fn turn_checks_field<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    checked(deserializer, |checks: &Vec<String>| {
        check_turn_checks(checks)
    })
}

fn seconds_field<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    checked(deserializer, check_seconds)
}

/// A configured per-file linter, its pattern compiled.
#[derive(Debug)]
struct FileLinter {
    glob: PathGlob,
    command: String,
}

impl FileLinter {
    fn new(pattern: &str, command: &str) -> Result<Self, LintConfigError> {
        let glob = PathGlob::new(pattern).map_err(|error| LintConfigError::BadPattern {
            pattern: error.pattern,
            reason: error.reason,
        })?;
        if command.trim().is_empty() {
            return Err(LintConfigError::EmptyLinter {
                pattern: pattern.to_string(),
            });
        }
        Ok(Self {
            glob,
            command: command.to_string(),
        })
    }

    fn matches(&self, relative: &Path) -> bool {
        self.glob.matches(relative)
    }
}

/// Runs the checks after each write and at the end of each batch of edits.
#[derive(Debug)]
pub struct Linter {
    root: PathBuf,
    config: LintConfig,
    file_linters: Vec<FileLinter>,
    /// Settings that could not be used, told in the first report only.
    config_problems: Vec<String>,
    config_problems_told: AtomicBool,
    /// Commands whose program was not found; told once, then skipped.
    missing: Mutex<HashSet<String>>,
    /// How long one syntax check may parse before it is given up.
    parse_budget: Duration,
    /// The last parse of recently checked files.
    parses: Mutex<ParseCache>,
    /// Where linters and turn checks run; `None` runs them unconfined (tests).
    sandbox: Option<Arc<Sandbox>>,
}

impl Linter {
    /// A linter for the project at `root`. Settings that cannot be used (an invalid
    /// pattern in a config built without [`LintConfig::validate`]) are skipped and
    /// mentioned in the first report rather than failing here.
    pub fn new(root: &Path, config: LintConfig) -> Self {
        let mut file_linters = Vec::new();
        let mut config_problems = Vec::new();
        for (pattern, command) in &config.linters {
            match FileLinter::new(pattern, command) {
                Ok(linter) => file_linters.push(linter),
                Err(error) => config_problems.push(format!("{error}; that linter is skipped")),
            }
        }
        if let Err(error) = check_turn_checks(&config.turn_checks) {
            config_problems.push(format!("{error}; it is skipped"));
        }
        Self {
            root: root.to_path_buf(),
            config,
            file_linters,
            config_problems,
            config_problems_told: AtomicBool::new(false),
            missing: Mutex::new(HashSet::new()),
            parse_budget: syntax::PARSE_BUDGET,
            parses: Mutex::new(ParseCache::default()),
            sandbox: None,
        }
    }

    /// The same linter running its commands in `sandbox`: they run project code (a
    /// linter's plugins, a build script), so they get what the shell gets.
    pub fn with_sandbox(mut self, sandbox: Arc<Sandbox>) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// The same linter with another parse budget: tests on busy machines use a large
    /// one so that only correctness is checked.
    #[cfg(test)]
    pub(crate) fn with_parse_budget(mut self, budget: Duration) -> Self {
        self.parse_budget = budget;
        self
    }

    /// The text appended to a write or edit result for the file at `abs` (shown as
    /// `display`), whose content was `before` (`None` for a new file) and is now
    /// `after` on disk. Empty when nothing applies to this file.
    pub async fn check_write(
        &self,
        abs: &Path,
        display: &str,
        before: Option<&str>,
        after: &str,
    ) -> String {
        let mut report = Report::new("lint");
        self.tell_config_problems(&mut report);
        if self.config.syntax {
            self.check_syntax(abs, display, before, after, &mut report)
                .await;
        }
        let relative = abs.strip_prefix(&self.root).unwrap_or(abs);
        let quoted = shell_quote(&relative.to_string_lossy());
        for linter in self.file_linters.iter().filter(|l| l.matches(relative)) {
            let script = linter.command.replace(PATH_PLACEHOLDER, &quoted);
            self.run_check(&mut report, CheckKind::Linter, &linter.command, &script)
                .await;
        }
        report.render()
    }

    /// Parses off the async runtime and adds the outcome to `report`; files without a
    /// grammar add nothing. The parse is kept for the next check of the same file.
    async fn check_syntax(
        &self,
        abs: &Path,
        display: &str,
        before: Option<&str>,
        after: &str,
        report: &mut Report,
    ) {
        let Some(language) = Language::detect(abs, after) else {
            return;
        };
        if after.len() > MAX_SYNTAX_BYTES {
            report.note(format!(
                "{} syntax check skipped: the file is larger than {} MiB",
                language.name(),
                MAX_SYNTAX_BYTES >> 20
            ));
            return;
        }
        let previous = self.parses().take(abs);
        let (before, after) = (before.map(str::to_string), after.to_string());
        let budget = self.parse_budget;
        let checked = tokio::task::spawn_blocking(move || {
            syntax::check(language, before.as_deref(), &after, budget, previous)
        })
        .await;
        match checked {
            Ok(Ok(Checked { findings, parsed })) => {
                self.parses().keep(abs, parsed);
                report.syntax(language.name(), display, &findings);
                if let Some(caveat) = language.caveat().filter(|_| !findings.is_empty()) {
                    report.note(caveat.to_string());
                }
            }
            Ok(Err(error)) => report.note(format!("{} syntax check: {error}", language.name())),
            Err(error) => report.note(format!(
                "{} syntax check stopped unexpectedly: {error}",
                language.name()
            )),
        }
    }

    /// Parses the file at `abs` in the background and keeps the parse, so that the
    /// check after the model's first edit of the file parses only what the edit changed
    /// (about a millisecond instead of a full parse, ten for 5,000 lines). Does nothing
    /// for what is not a regular file, files without a grammar, larger than
    /// `MAX_PRIMED_BYTES` or already kept, or when syntax checks are off.
    pub fn prime(self: &Arc<Self>, abs: &Path) {
        if !self.config.syntax || self.parses().contains(abs) {
            return;
        }
        let linter = Arc::clone(self);
        let abs = abs.to_path_buf();
        tokio::task::spawn_blocking(move || linter.prime_now(&abs));
    }

    /// [`Linter::prime`] on the calling thread, which may block.
    pub(crate) fn prime_now(&self, abs: &Path) {
        if !self.config.syntax || self.parses().contains(abs) {
            return;
        }
        // Only regular files: reading a FIFO would wait for a writer that may never come.
        let small = std::fs::metadata(abs)
            .is_ok_and(|meta| meta.is_file() && meta.len() <= MAX_PRIMED_BYTES);
        let Some(text) = small.then(|| std::fs::read_to_string(abs).ok()).flatten() else {
            return;
        };
        let Some(language) = Language::detect(abs, &text) else {
            return;
        };
        match syntax::parse_for_later(language, &text, self.parse_budget) {
            Ok(parsed) => self.parses().keep_if_absent(abs, parsed),
            Err(error) => tracing::debug!(%error, file = %abs.display(), "not primed"),
        }
    }

    /// Whether a parse of `abs` is kept for its next check.
    #[cfg(test)]
    pub(crate) fn keeps_parse_of(&self, abs: &Path) -> bool {
        self.parses().contains(abs)
    }

    fn parses(&self) -> MutexGuard<'_, ParseCache> {
        self.parses.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The project-wide checks, run in order once after the last edit of a batch:
    /// their combined report, or `None` when none are configured (or all were skipped
    /// as missing).
    pub async fn turn_checks(&self) -> Option<String> {
        let mut report = Report::new("turn checks");
        let checks = self.config.turn_checks.iter();
        for check in checks.filter(|check| !check.trim().is_empty()) {
            self.run_check(&mut report, CheckKind::Turn, check, check)
                .await;
        }
        Some(report.render()).filter(|text| !text.is_empty())
    }

    fn tell_config_problems(&self, report: &mut Report) {
        if !self.config_problems.is_empty()
            && !self.config_problems_told.swap(true, Ordering::Relaxed)
        {
            for problem in &self.config_problems {
                report.note(problem.clone());
            }
        }
    }

    /// Runs `script` (made from the configured `template`) unless its program is known
    /// to be missing, and adds the outcome to `report`.
    async fn run_check(&self, report: &mut Report, kind: CheckKind, template: &str, script: &str) {
        if self.is_missing(template) {
            return;
        }
        let seconds = match kind {
            CheckKind::Linter => self.config.timeout_secs,
            CheckKind::Turn => self.config.turn_timeout_secs,
        };
        // A zero from a config built in code must not stop every check at once.
        let limit = Duration::from_secs(seconds.max(1));
        let run = command::run(
            &self.root,
            script,
            limit,
            kind.output_cap(),
            self.sandbox.as_deref(),
        )
        .await;
        if run.outcome == Outcome::NotFound {
            if self.mark_missing(template) {
                report.note(not_found_note(kind.noun(), template, &run));
            }
            return;
        }
        report.command(&label(template), script, limit, &run);
    }

    fn is_missing(&self, template: &str) -> bool {
        self.missing
            .lock()
            .map(|missing| missing.contains(template))
            .unwrap_or(false)
    }

    /// Records `template` as missing; true the first time.
    fn mark_missing(&self, template: &str) -> bool {
        self.missing
            .lock()
            .map(|mut missing| missing.insert(template.to_string()))
            .unwrap_or(true)
    }
}

/// The two kinds of configured command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CheckKind {
    /// Runs on one file after each write.
    Linter,
    /// Runs on the project after a batch of edits.
    Turn,
}

impl CheckKind {
    fn noun(self) -> &'static str {
        match self {
            Self::Linter => "linter",
            Self::Turn => "turn check",
        }
    }

    fn output_cap(self) -> usize {
        match self {
            Self::Linter => LINTER_OUTPUT_CAP,
            // These summarize a whole project, so they get more room.
            Self::Turn => TURN_OUTPUT_CAP,
        }
    }
}

fn not_found_note(kind: &str, template: &str, run: &Run) -> String {
    let shell_said = run.output.lines().next().unwrap_or_default().trim();
    let said = if shell_said.is_empty() {
        String::new()
    } else {
        format!(" ({shell_said})")
    };
    format!(
        "{kind} `{}` not found{said}; skipping it for the rest of the session",
        program(template)
    )
}

/// The program a command runs: its first word after any `NAME=value` assignments.
fn program(command: &str) -> &str {
    command
        .split_whitespace()
        .find(|word| !is_assignment(word))
        .unwrap_or(command)
}

/// A short name for a command in the header: the program and, when it looks like a
/// subcommand or a script (`ruff check`, `cargo clippy`, `sh lint.sh`), the word after
/// it.
fn label(command: &str) -> String {
    let mut words = command
        .split_whitespace()
        .skip_while(|word| is_assignment(word));
    let Some(program) = words.next() else {
        return command.trim().to_string();
    };
    match words.next() {
        Some(sub)
            if !sub.starts_with('-')
                && sub
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c)) =>
        {
            format!("{program} {sub}")
        }
        _ => program.to_string(),
    }
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// `text` as one shell word: unchanged when it is plainly safe, single-quoted
/// otherwise. A leading `-` gets `./` so the linter does not read it as a flag.
fn shell_quote(text: &str) -> String {
    let text = if text.starts_with('-') {
        format!("./{text}")
    } else {
        text.to_string()
    };
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./+,:@%=".contains(c));
    if plain {
        text
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests;
