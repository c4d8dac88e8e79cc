//! The text the model reads after a write or at the end of a batch of edits.
//!
//! Owns: the layout — one line when everything is clean; otherwise a header with
//! counts, then one-line notes, then the details (new syntax errors first, then those
//! already there, then each failing command's output).
//! Does not own: running anything; callers fill a [`Report`] with outcomes.
//! Invariant: a report with nothing checked and nothing to say renders as "".

use std::time::Duration;

use super::command::{Outcome, Run};
use super::syntax::{Findings, SyntaxError};

/// How many syntax errors are shown in full; the rest are counted.
const MAX_SHOWN_ERRORS: usize = 10;
/// Of those, how many that were already there before the write: they matter less.
const MAX_SHOWN_OLD_ERRORS: usize = 3;

/// What one round of checks found, in the order it will be shown.
#[derive(Debug)]
pub(crate) struct Report {
    /// "lint" after a write, "turn checks" after a batch.
    title: &'static str,
    /// Checks that passed, e.g. "rust syntax", "ruff check".
    clean: Vec<String>,
    /// One phrase per failed check for the header, e.g. "2 new syntax errors".
    problems: Vec<String>,
    /// One-line remarks: a linter that is missing, a check that was skipped.
    notes: Vec<String>,
    /// Multi-line blocks, shown after the header and notes.
    details: Vec<String>,
}

impl Report {
    pub(crate) fn new(title: &'static str) -> Self {
        Self {
            title,
            clean: Vec::new(),
            problems: Vec::new(),
            notes: Vec::new(),
            details: Vec::new(),
        }
    }

    pub(crate) fn note(&mut self, note: String) {
        self.notes.push(note);
    }

    /// Adds the syntax check of `display` in `language`.
    pub(crate) fn syntax(&mut self, language: &str, display: &str, findings: &Findings) {
        let (new, old) = (findings.new.len(), findings.already_there.len());
        if new == 0 && old == 0 {
            self.clean.push(format!("{language} syntax"));
            return;
        }
        let new_phrase = format!(
            "{}{}",
            count(new, "new syntax error"),
            where_they_are(&findings.new)
        );
        self.problems.push(match (new, old) {
            (_, 0) => new_phrase,
            (0, _) => format!("no new syntax errors, {old} already there"),
            _ => format!("{new_phrase}, {old} already there"),
        });
        let shown_new = new.min(MAX_SHOWN_ERRORS);
        let shown_old = old.min(MAX_SHOWN_OLD_ERRORS.min(MAX_SHOWN_ERRORS - shown_new));
        let mut block: Vec<String> = findings.new[..shown_new]
            .iter()
            .map(|error| describe(display, error))
            .collect();
        if new > shown_new {
            block.push(format!("… and {} more new", new - shown_new));
        }
        if old > 0 {
            block.push("already there before this write:".to_string());
            block.extend(
                findings.already_there[..shown_old]
                    .iter()
                    .map(|error| describe(display, error)),
            );
            if old > shown_old {
                block.push(format!("… and {} more", old - shown_old));
            }
        }
        self.details.push(block.join("\n"));
    }

    /// Adds a finished command; `label` names it in the header ("ruff check").
    pub(crate) fn command(&mut self, label: &str, script: &str, limit: Duration, run: &Run) {
        if run.is_clean() {
            self.clean.push(label.to_string());
            return;
        }
        let ending = match &run.outcome {
            Outcome::Exited(code) => format!("exit {code}"),
            Outcome::Signalled(Some(signal)) => format!("killed by signal {signal}"),
            Outcome::Signalled(None) => "killed by a signal".to_string(),
            Outcome::TimedOut => format!("timed out after {} s and was stopped", limit.as_secs()),
            Outcome::NotFound => "command not found".to_string(),
            Outcome::Failed(why) => why.clone(),
        };
        self.problems.push(format!("{label}: {ending}"));
        let output = run.output.trim_end();
        let output = if output.is_empty() {
            "(no output)"
        } else {
            output
        };
        self.details.push(format!("$ {script}\n{output}"));
    }

    pub(crate) fn render(&self) -> String {
        let summary = if !self.problems.is_empty() {
            let mut summary = self.problems.join("; ");
            if !self.clean.is_empty() {
                summary.push_str(&format!(" (clean: {})", self.clean.join(", ")));
            }
            summary
        } else if !self.clean.is_empty() {
            format!("clean ({})", self.clean.join(", "))
        } else if !self.notes.is_empty() {
            "nothing checked".to_string()
        } else {
            return String::new();
        };
        let mut lines = vec![format!("{}: {summary}", self.title)];
        lines.extend(self.notes.iter().cloned());
        lines.extend(self.details.iter().cloned());
        lines.join("\n")
    }
}

/// ` (line 4)`, ` (lines 4, 9, 12, …)`: where the first errors are, 1-based.
fn where_they_are(errors: &[SyntaxError]) -> String {
    const NAMED: usize = 3;
    let mut rows: Vec<usize> = errors.iter().map(|error| error.row + 1).collect();
    rows.dedup();
    let mut named: Vec<String> = rows.iter().take(NAMED).map(usize::to_string).collect();
    if rows.len() > NAMED {
        named.push("…".to_string());
    }
    match rows.len() {
        0 => String::new(),
        1 => format!(" (line {})", named.join("")),
        _ => format!(" (lines {})", named.join(", ")),
    }
}

/// Whether a rendered report says every check passed (or only notes, nothing checked):
/// nothing the user needs to look at.
pub fn is_clean_report(report: &str) -> bool {
    let verdict = report.lines().next().unwrap_or_default();
    verdict
        .split_once(": ")
        .is_some_and(|(_, summary)| summary.starts_with("clean") || summary == "nothing checked")
}

/// `path:line:col: syntax error: what`, then the offending line and a caret.
fn describe(display: &str, error: &SyntaxError) -> String {
    let place = if error.at_end { " at end of file" } else { "" };
    let mut text = format!(
        "{display}:{}:{}: syntax error: {}{place}",
        error.row + 1,
        error.column + 1,
        error.message
    );
    if let Some(excerpt) = &error.excerpt {
        for line in excerpt.lines() {
            text.push_str("\n    ");
            text.push_str(line);
        }
    }
    text
}

fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn error(row: usize, column: usize, message: &str, excerpt: Option<&str>) -> SyntaxError {
        SyntaxError {
            row,
            column,
            message: message.to_string(),
            at_end: false,
            excerpt: excerpt.map(str::to_string),
        }
    }

    #[test]
    fn nothing_checked_is_empty() {
        assert_eq!(Report::new("lint").render(), "");
    }

    #[test]
    fn clean_is_one_line() {
        let mut report = Report::new("lint");
        report.syntax("rust", "a.rs", &Findings::default());
        let run = Run {
            outcome: Outcome::Exited(0),
            output: "\n".to_string(),
        };
        report.command("cargo clippy", "cargo clippy", Duration::from_secs(1), &run);
        assert_eq!(report.render(), "lint: clean (rust syntax, cargo clippy)");
    }

    #[test]
    fn new_errors_come_first_and_old_ones_are_labelled() {
        let findings = Findings {
            new: vec![error(4, 2, "missing `;`", Some("x = 1\n     ^"))],
            already_there: vec![error(9, 0, "unexpected `}`", None)],
        };
        let mut report = Report::new("lint");
        report.syntax("rust", "src/a.rs", &findings);
        assert_eq!(
            report.render(),
            "lint: 1 new syntax error (line 5), 1 already there\n\
             src/a.rs:5:3: syntax error: missing `;`\n    x = 1\n         ^\n\
             already there before this write:\n\
             src/a.rs:10:1: syntax error: unexpected `}`"
        );
    }

    #[test]
    fn the_verdict_says_where_the_new_errors_are() {
        let one = Findings {
            new: vec![error(3, 0, "missing `)`", None)],
            already_there: Vec::new(),
        };
        let mut report = Report::new("lint");
        report.syntax("python", "a.py", &one);
        let text = report.render();
        assert!(
            text.starts_with("lint: 1 new syntax error (line 4)\n"),
            "{text}"
        );
        assert!(!is_clean_report(&text));
        // Two errors on one line name it once.
        let same_line = Findings {
            new: vec![error(6, 0, "a", None), error(6, 4, "b", None)],
            already_there: Vec::new(),
        };
        let mut report = Report::new("lint");
        report.syntax("python", "a.py", &same_line);
        assert!(
            report
                .render()
                .starts_with("lint: 2 new syntax errors (line 7)\n")
        );
        assert!(is_clean_report("lint: clean (python syntax)"));
        assert!(is_clean_report(
            "lint: nothing checked\nruff is not installed"
        ));
    }

    #[test]
    fn many_errors_are_capped() {
        let findings = Findings {
            new: (0..15)
                .map(|row| error(row, 0, "unexpected `x`", None))
                .collect(),
            already_there: (20..25)
                .map(|row| error(row, 0, "unexpected `y`", None))
                .collect(),
        };
        let mut report = Report::new("lint");
        report.syntax("go", "m.go", &findings);
        let text = report.render();
        assert_eq!(text.matches("unexpected `x`").count(), 10, "{text}");
        assert_eq!(text.matches("unexpected `y`").count(), 0, "{text}");
        assert!(text.contains("\n… and 5 more new\n"), "{text}");
        assert!(
            text.ends_with("\nalready there before this write:\n… and 5 more"),
            "{text}"
        );
        assert!(
            text.starts_with("lint: 15 new syntax errors (lines 1, 2, 3, …), 5 already there\n"),
            "{text}"
        );
    }

    #[test]
    fn failed_commands_show_the_command_and_output() {
        let mut report = Report::new("turn checks");
        let failed = Run {
            outcome: Outcome::Exited(101),
            output: "error[E0308]: mismatched types\n".to_string(),
        };
        let slow = Run {
            outcome: Outcome::TimedOut,
            output: String::new(),
        };
        let limit = Duration::from_secs(120);
        report.command("cargo check", "cargo check --quiet", limit, &failed);
        report.command("tsc", "tsc --noEmit", limit, &slow);
        assert_eq!(
            report.render(),
            "turn checks: cargo check: exit 101; tsc: timed out after 120 s and was stopped\n\
             $ cargo check --quiet\nerror[E0308]: mismatched types\n\
             $ tsc --noEmit\n(no output)"
        );
    }

    #[test]
    fn notes_alone_say_nothing_was_checked() {
        let mut report = Report::new("lint");
        report.note("linter `ruff` not found; skipping it".to_string());
        assert_eq!(
            report.render(),
            "lint: nothing checked\nlinter `ruff` not found; skipping it"
        );
    }
}
