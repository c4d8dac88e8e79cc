//! One tool call as a card: header, live tail, diff, result.
//!
//! Owns: a call's display state from `ToolCallBegin` to `ToolRunEnd` (and the checks
//! and approvals that refer to it) and its rows. Does not own: which card an event
//! belongs to (the transcript maps call ids) or approving anything.
//! Invariant: a card's height never depends on the clock — only its header's spinner
//! and elapsed time do — so animation never moves the rows below it. Every text a card
//! keeps (the model's arguments, tool output, reports) is cleaned of terminal control
//! as it comes in ([`crate::terminal_text`]), never per frame.

use std::time::{Duration, Instant};

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::live_output::LiveOutput;
use super::wrap::{self, LogicalLine};
use crate::policy::Decision;
use crate::terminal_text::sanitize;
use crate::tui::theme::Theme;

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
pub const SPINNER_INTERVAL: Duration = Duration::from_millis(80);
/// Output lines shown under a running (or expanded) shell card.
const TAIL_ROWS: usize = 5;
/// Diff lines shown in an expanded card; the approval view shows the whole diff.
const DIFF_ROWS: usize = 12;
const CHECK_ROWS: usize = 6;
/// Lines of an error shown under the result line of an expanded card.
const ERROR_DETAIL_ROWS: usize = 3;

#[derive(Clone, Debug, PartialEq)]
enum Phase {
    /// The model is still writing the arguments.
    Writing,
    /// Arguments complete; not started (waiting for its turn, or about to fail checks).
    Ready,
    Running {
        since: Instant,
    },
    Done(Outcome),
    /// The turn ended without a result for this call.
    Stopped,
}

#[derive(Clone, Debug, PartialEq)]
struct Outcome {
    ok: bool,
    /// `summary` on success, the first line of the output on failure.
    headline: String,
    details: Vec<String>,
    took: Option<Duration>,
}

/// A running command blocked reading its terminal, as the card shows it.
#[derive(Clone, Debug, PartialEq)]
struct InputWait {
    program: String,
    /// Its unfinished last line: the prompt, with what was typed so far echoed.
    line: String,
    /// How to type into it (`ctrl-y to type into it`), or, while the user types, how
    /// to stop.
    hint: String,
}

#[derive(Clone, Debug, PartialEq)]
enum Approval {
    None,
    Waiting(String),
    Closed(String),
}

pub struct ToolCard {
    name: String,
    call: Option<String>,
    began: Instant,
    phase: Phase,
    output: LiveOutput,
    diff: Option<String>,
    /// What the checks after this write or edit found (the verdict first).
    lint: Option<String>,
    /// The batch's project-wide checks, when this was its last edit.
    checks: Option<String>,
    approval: Approval,
    /// The command waits for keyboard input; new output ends the wait.
    input_wait: Option<InputWait>,
    /// The user types into the command: their keys go to it.
    typing: bool,
    /// The step this call belongs to is over: no checks report can come any more.
    step_over: bool,
    /// Rows below the header, for `cached_for`.
    body: Vec<Line<'static>>,
    cached_for: Option<(u16, bool)>,
    rows: Vec<Line<'static>>,
}

impl ToolCard {
    pub fn new(name: &str, now: Instant) -> Self {
        Self {
            name: sanitize(name).into_owned(),
            call: None,
            began: now,
            phase: Phase::Writing,
            output: LiveOutput::default(),
            diff: None,
            lint: None,
            checks: None,
            approval: Approval::None,
            input_wait: None,
            typing: false,
            step_over: false,
            body: Vec::new(),
            cached_for: None,
            rows: Vec::new(),
        }
    }

    /// The call is complete; `summary` says what it does ([`crate::tools::CallInfo`]).
    pub fn ready(&mut self, name: &str, summary: &str) {
        self.name = sanitize(name).into_owned();
        self.call = Some(summary.to_string());
        if self.phase == Phase::Writing {
            self.phase = Phase::Ready;
        }
        self.invalidate();
    }

    pub fn run_begin(&mut self, now: Instant) {
        if !self.is_done() {
            self.phase = Phase::Running { since: now };
            self.invalidate();
        }
    }

    pub fn output(&mut self, text: &str) {
        self.output.push(text);
        self.input_wait = None;
        self.invalidate();
    }

    /// The command waits for keyboard input; `hint` says how to answer it.
    pub fn waiting_for_input(&mut self, program: &str, line: &str, hint: &str) {
        if self.is_done() {
            return;
        }
        self.input_wait = Some(InputWait {
            program: sanitize(program).into_owned(),
            line: sanitize(line).into_owned(),
            hint: hint.to_string(),
        });
        self.invalidate();
    }

    /// Whether the running command waits for keyboard input now.
    pub fn is_waiting_for_input(&self) -> bool {
        self.input_wait.is_some() && !self.is_done()
    }

    /// The user's keys go to this card's command (`true`) or back to duet; `hint`
    /// says how to change it.
    pub fn set_typing(&mut self, typing: bool, hint: &str) {
        self.typing = typing;
        if let Some(wait) = &mut self.input_wait {
            wait.hint = hint.to_string();
        }
        self.invalidate();
    }

    pub fn run_end(&mut self, is_error: bool, summary: &str, output: &str, now: Instant) {
        let took = match self.phase {
            Phase::Running { since } => Some(now.saturating_duration_since(since)),
            _ => None,
        };
        let summary = sanitize(summary);
        let summary = summary.as_ref();
        let output = sanitize(output);
        let mut lines = output.lines().filter(|line| !line.trim().is_empty());
        let (headline, details) = if is_error {
            let first = lines.next().unwrap_or(summary).to_string();
            (
                first,
                lines.take(ERROR_DETAIL_ROWS).map(str::to_string).collect(),
            )
        } else {
            (summary.to_string(), Vec::new())
        };
        self.phase = Phase::Done(Outcome {
            ok: !is_error,
            headline,
            details,
            took,
        });
        self.input_wait = None;
        self.typing = false;
        self.approval = match std::mem::replace(&mut self.approval, Approval::None) {
            Approval::Waiting(_) => Approval::Closed("no decision".to_string()),
            other => other,
        };
        self.invalidate();
    }

    pub fn edit_proposed(&mut self, diff: &str) {
        self.diff = Some(sanitize(diff).into_owned());
        self.invalidate();
    }

    /// The post-write checks' report: its verdict shows on the card, the details when
    /// the card is expanded.
    pub fn post_write_checks(&mut self, report: &str) {
        self.lint = Some(sanitize(report).into_owned());
        self.invalidate();
    }

    pub fn checks(&mut self, report: &str) {
        self.checks = Some(sanitize(report).into_owned());
        self.invalidate();
    }

    pub fn approval_needed(&mut self, why: &str) {
        self.approval = Approval::Waiting(sanitize(why).into_owned());
        self.invalidate();
    }

    pub fn approval_closed(&mut self, decision: Option<&Decision>) {
        let text = sanitize(&crate::agent::wording::decision_line(decision)).into_owned();
        self.approval = Approval::Closed(text);
        self.invalidate();
    }

    /// The turn is over: a card still waiting for a result stops animating.
    pub fn stop(&mut self) {
        if !self.is_done() {
            self.phase = Phase::Stopped;
            self.invalidate();
        }
    }

    /// The model is still writing the call's arguments.
    pub fn is_writing(&self) -> bool {
        self.phase == Phase::Writing
    }

    pub fn is_done(&self) -> bool {
        matches!(self.phase, Phase::Done(_) | Phase::Stopped)
    }

    /// A successful edit may still get the batch's checks report until the step ends.
    pub fn awaits_checks(&self) -> bool {
        matches!(&self.phase, Phase::Done(outcome) if outcome.ok)
            && (self.diff.is_some() || matches!(self.name.as_str(), "edit" | "write"))
            && self.checks.is_none()
            && !self.step_over
    }

    /// The step is over; a checks report for this call can no longer come.
    pub fn end_step(&mut self) {
        self.step_over = true;
    }

    pub fn is_animated(&self) -> bool {
        matches!(self.phase, Phase::Writing | Phase::Running { .. })
    }

    /// What the header shows of the clock (spinner frame, elapsed seconds).
    pub fn clock(&self, now: Instant) -> Option<(u128, u64)> {
        let frame =
            now.saturating_duration_since(self.began).as_millis() / SPINNER_INTERVAL.as_millis();
        match self.phase {
            Phase::Writing => Some((frame, 0)),
            Phase::Running { since } => {
                Some((frame, now.saturating_duration_since(since).as_secs()))
            }
            _ => None,
        }
    }

    /// When the spinner next moves.
    pub fn next_frame(&self, now: Instant) -> Option<Instant> {
        let (frame, _) = self.clock(now)?;
        let next = u32::try_from(frame + 1).ok()?;
        Some(self.began + SPINNER_INTERVAL * next)
    }

    fn invalidate(&mut self) {
        self.cached_for = None;
    }

    /// The card's height at `width`: it does not depend on the clock.
    pub fn height(&mut self, width: u16, expanded: bool, theme: &Theme) -> usize {
        1 + self.body(width, expanded, theme).len()
    }

    /// The card's rows at `width`; `expanded` shows the bodies of finished cards. The
    /// header shows the clock at `now`; without it, as the card was first drawn
    /// (finished cards do not animate).
    pub fn rows(
        &mut self,
        width: u16,
        expanded: bool,
        theme: &Theme,
        now: Option<Instant>,
    ) -> &[Line<'static>] {
        let header = self.header(width, theme, now.unwrap_or(self.began));
        self.body(width, expanded, theme);
        self.rows.clear();
        self.rows.push(header);
        self.rows.extend(self.body.iter().cloned());
        &self.rows
    }

    fn body(&mut self, width: u16, expanded: bool, theme: &Theme) -> &[Line<'static>] {
        if self.cached_for != Some((width, expanded)) {
            self.body = self.build_body(width, expanded, theme);
            self.cached_for = Some((width, expanded));
        }
        &self.body
    }

    fn header(&self, width: u16, theme: &Theme, now: Instant) -> Line<'static> {
        let frame = self.clock(now).map_or(0, |(frame, _)| frame);
        let spinner = SPINNER[usize::try_from(frame % SPINNER.len() as u128).unwrap_or(0)];
        let (glyph, right) = match &self.phase {
            Phase::Writing => (Span::styled(spinner, theme.accent), Vec::new()),
            Phase::Ready => (
                Span::styled("○", theme.dim),
                vec![Span::styled("queued", theme.dim)],
            ),
            Phase::Running { since } => (
                Span::styled(spinner, theme.accent),
                vec![Span::styled(
                    elapsed(now.saturating_duration_since(*since)),
                    theme.dim,
                )],
            ),
            Phase::Done(outcome) => {
                let took = outcome.took.filter(|took| took.as_secs() >= 1);
                let right = took.map(|took| vec![Span::styled(elapsed(took), theme.dim)]);
                (Span::styled("•", theme.dim), right.unwrap_or_default())
            }
            Phase::Stopped => (Span::styled("•", theme.dim), Vec::new()),
        };
        let call = match &self.call {
            Some(call) => Span::styled(call.clone(), theme.accent),
            None => Span::styled(format!("{} …", self.name), theme.accent),
        };
        wrap::left_right(&[glyph, Span::raw(" "), call], &right, width)
    }

    fn build_body(&self, width: u16, expanded: bool, theme: &Theme) -> Vec<Line<'static>> {
        let mut rows = Vec::new();
        let done = self.is_done();
        match &self.approval {
            Approval::Waiting(why) => rows.extend(wrap::wrap_all(
                [&gutter(LogicalLine::styled(
                    format!("? needs approval: {why}"),
                    theme.warning,
                ))],
                width,
            )),
            Approval::Closed(text) if expanded => {
                rows.push(cut(format!("→ {text}"), theme.dim, width))
            }
            _ => {}
        }
        if let Some(diff) = self.diff.as_ref().filter(|_| expanded) {
            diff_rows(diff, theme, width, &mut rows);
        }
        if !done || expanded {
            for line in self.output.tail(TAIL_ROWS) {
                let spans = vec![
                    Span::styled("  │ ", theme.dim),
                    Span::styled(line.to_string(), theme.dim),
                ];
                rows.push(wrap::truncate(&spans, width));
            }
        }
        if let Some(wait) = self.input_wait.as_ref().filter(|_| !done) {
            self.input_wait_rows(wait, theme, width, &mut rows);
        }
        match &self.phase {
            Phase::Done(outcome) => {
                self.outcome_rows(outcome, expanded, theme, width, &mut rows);
                if let Some(report) = &self.lint {
                    lint_rows(report, expanded, theme, width, &mut rows);
                }
            }
            Phase::Stopped => rows.push(cut(
                "✗ stopped before a result".to_string(),
                theme.warning,
                width,
            )),
            _ => {}
        }
        if let Some(report) = self.checks.as_ref().filter(|_| expanded) {
            for line in report
                .lines()
                .filter(|l| !l.trim().is_empty())
                .take(CHECK_ROWS)
            {
                rows.push(cut(line.to_string(), theme.dim, width));
            }
        }
        rows
    }

    /// The prompt the command waits at, and how to answer it.
    fn input_wait_rows(
        &self,
        wait: &InputWait,
        theme: &Theme,
        width: u16,
        rows: &mut Vec<Line<'static>>,
    ) {
        if !wait.line.is_empty() {
            let mut spans = vec![
                Span::styled("  │ ", theme.dim),
                Span::styled(wait.line.clone(), theme.text),
            ];
            if self.typing {
                spans.push(Span::styled("▏", theme.accent));
            }
            rows.push(wrap::truncate(&spans, width));
        }
        let (text, style) = if self.typing {
            (
                format!("⌨ typing into {} · {}", wait.program, wait.hint),
                theme.accent,
            )
        } else {
            (
                format!("⌨ {} waits for input · {}", wait.program, wait.hint),
                theme.warning,
            )
        };
        rows.push(cut(text, style, width));
    }

    fn outcome_rows(
        &self,
        outcome: &Outcome,
        expanded: bool,
        theme: &Theme,
        width: u16,
        rows: &mut Vec<Line<'static>>,
    ) {
        let (mark, style) = if outcome.ok {
            ("✓ ", theme.success)
        } else {
            ("✗ ", theme.error)
        };
        let text_style = if outcome.ok { theme.text } else { theme.error };
        let mut result = LogicalLine::new(vec![Span::styled(outcome.headline.clone(), text_style)]);
        result.first = vec![Span::raw("  "), Span::styled(mark, style)];
        result.rest = vec![Span::raw("    ")];
        wrap::wrap_into(&result, width, rows);
        if expanded {
            for detail in &outcome.details {
                rows.push(wrap::truncate(
                    &[Span::raw("    "), Span::styled(detail.clone(), theme.error)],
                    width,
                ));
            }
        }
    }
}

/// The post-write checks: the verdict in one line (quiet when clean), and with
/// `expanded` the details the model got.
fn lint_rows(
    report: &str,
    expanded: bool,
    theme: &Theme,
    width: u16,
    rows: &mut Vec<Line<'static>>,
) {
    let mut lines = report.lines().filter(|line| !line.trim().is_empty());
    let Some(verdict) = lines.next() else {
        return;
    };
    let style = if crate::lint::is_clean_report(report) {
        theme.dim
    } else {
        theme.warning
    };
    rows.push(cut(verdict.to_string(), style, width));
    if expanded {
        for line in lines.take(CHECK_ROWS) {
            rows.push(cut(format!("  {line}"), theme.dim, width));
        }
    }
}

/// A card body line: indented under the header.
fn gutter(line: LogicalLine) -> LogicalLine {
    line.with_gutter(&[Span::raw("  ")], &[Span::raw("    ")])
}

fn cut(text: String, style: Style, width: u16) -> Line<'static> {
    wrap::truncate(&[Span::raw("  "), Span::styled(text, style)], width)
}

/// The hunks of a unified diff, coloured and capped.
fn diff_rows(diff: &str, theme: &Theme, width: u16, rows: &mut Vec<Line<'static>>) {
    // File headers (`---`/`+++`) come before the first hunk; the header names the file.
    let body: Vec<&str> = diff
        .lines()
        .skip_while(|line| !line.starts_with("@@"))
        .collect();
    for line in body.iter().take(DIFF_ROWS) {
        let style = match line.chars().next() {
            Some('+') => theme.added,
            Some('-') => theme.removed,
            Some('@') => theme.hunk_header,
            _ => theme.dim,
        };
        rows.push(cut(line.to_string(), style, width));
    }
    if body.len() > DIFF_ROWS {
        rows.push(cut(
            format!("… {} more diff lines", body.len() - DIFF_ROWS),
            theme.dim,
            width,
        ));
    }
}

/// `7s`, `2m 05s`.
pub fn elapsed(duration: Duration) -> String {
    let secs = duration.as_secs();
    if secs < 60 {
        format!("{secs}s")
    } else {
        format!("{}m {:02}s", secs / 60, secs % 60)
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn texts(rows: &[Line<'static>]) -> Vec<String> {
        rows.iter().map(Line::to_string).collect()
    }

    #[test]
    fn elapsed_reads_in_seconds_then_minutes() {
        assert_eq!(elapsed(Duration::from_millis(7_900)), "7s");
        assert_eq!(elapsed(Duration::from_secs(125)), "2m 05s");
    }

    #[test]
    fn long_diffs_are_capped() {
        let theme = Theme::new(false);
        let start = Instant::now();
        let mut card = ToolCard::new("write", start);
        card.ready("write", "write big.txt");
        let added: String = (0..30).map(|n| format!("+line {n}\n")).collect();
        card.edit_proposed(&format!(
            "--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1,30 @@\n{added}"
        ));
        let rows = texts(card.rows(40, true, &theme, Some(start)));
        assert_eq!(rows.len(), 1 + DIFF_ROWS + 1);
        assert_eq!(rows[1], "  @@ -0,0 +1,30 @@");
        assert_eq!(rows[DIFF_ROWS + 1], "  … 19 more diff lines");
        assert_eq!(
            card.height(40, false, &theme),
            1,
            "collapsed: the header alone"
        );
    }

    #[test]
    fn height_does_not_depend_on_the_clock() {
        let theme = Theme::new(false);
        let start = Instant::now();
        let mut card = ToolCard::new("shell", start);
        card.ready("shell", "shell $ make");
        card.run_begin(start);
        card.output("building\n");
        let early = card.rows(40, true, &theme, Some(start)).len();
        let late = card
            .rows(40, true, &theme, Some(start + Duration::from_secs(90)))
            .to_vec();
        assert_eq!(early, late.len());
        assert_eq!(
            late[0].to_string(),
            format!("{:<34}1m 30s", "⠴ shell $ make")
        );
        assert_eq!(card.height(40, true, &theme), late.len());
    }
}
