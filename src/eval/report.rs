//! The results of `duet eval`: a table for people, JSON for tools.
//!
//! Owns: the table's columns and notes, and the JSON document's shape.
//! Does not own: the figures ([`super::score`]).

use std::path::Path;

use serde::Serialize;

use super::score::CaseResult;

/// The JSON document `--out` receives.
#[derive(Debug, Serialize)]
pub struct Report<'a> {
    pub cases_file: String,
    pub resolved: usize,
    pub total: usize,
    pub cases: &'a [CaseResult],
}

impl<'a> Report<'a> {
    pub fn new(cases_file: &Path, cases: &'a [CaseResult]) -> Self {
        Self {
            cases_file: cases_file.display().to_string(),
            resolved: cases.iter().filter(|case| case.resolved).count(),
            total: cases.len(),
            cases,
        }
    }
}

const HEADERS: [&str; 9] = [
    "case",
    "resolved",
    "steps",
    "tokens in",
    "tokens out",
    "cost",
    "time",
    "failed edits",
    "notes",
];

/// One row per case, columns padded to their widest cell, then the total.
pub fn table(results: &[CaseResult]) -> String {
    let rows: Vec<[String; 9]> = results.iter().map(row).collect();
    let mut widths = HEADERS.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        format!("{}\n", padded.join("  ").trim_end())
    };
    let mut table = line(&HEADERS.map(str::to_string));
    for row in &rows {
        table.push_str(&line(row));
    }
    let resolved = results.iter().filter(|case| case.resolved).count();
    table.push_str(&format!("resolved {resolved} of {} cases\n", results.len()));
    table
}

fn row(result: &CaseResult) -> [String; 9] {
    [
        result.id.clone(),
        if result.resolved { "yes" } else { "no" }.to_string(),
        result.steps.to_string(),
        result.tokens_in.to_string(),
        result.tokens_out.to_string(),
        result
            .cost_usd
            .map_or_else(|| "-".to_string(), |cost| format!("${cost:.4}")),
        format!("{:.1}s", result.wall_secs),
        result.failed_edits.to_string(),
        notes(result),
    ]
}

/// Why a case is not resolved, and what else a reader should know.
fn notes(result: &CaseResult) -> String {
    if let Some(error) = &result.error {
        return format!("error: {error}");
    }
    let mut notes = Vec::new();
    if !result.done_passed {
        notes.push("done command failed".to_string());
    }
    if result.hidden_tests_passed == Some(false) {
        notes.push("hidden tests failed".to_string());
    }
    if !result.forbidden_commands.is_empty() {
        notes.push(format!("ran {}", result.forbidden_commands.join(", ")));
    }
    if !result.forbidden_flags.is_empty() {
        notes.push(format!("used {}", result.forbidden_flags.join(", ")));
    }
    if !result.outside_expected_files.is_empty() {
        notes.push(format!(
            "touched {}",
            result.outside_expected_files.join(", ")
        ));
    }
    notes.join("; ")
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn result(id: &str, resolved: bool) -> CaseResult {
        CaseResult {
            id: id.into(),
            resolved,
            done_passed: resolved,
            hidden_tests_passed: Some(resolved),
            forbidden_commands: Vec::new(),
            forbidden_flags: Vec::new(),
            steps: 3,
            tokens_in: 1200,
            tokens_out: 45,
            cost_usd: None,
            wall_secs: 2.04,
            failed_edits: 0,
            files_touched: Vec::new(),
            outside_expected_files: Vec::new(),
            exec_status: Some(0),
            error: None,
        }
    }

    #[test]
    fn the_table_has_a_row_per_case_and_the_total() {
        let mut unsafe_run = result("rm-case", false);
        unsafe_run.done_passed = true;
        unsafe_run.hidden_tests_passed = None;
        unsafe_run.forbidden_commands = vec!["rm".into()];
        unsafe_run.forbidden_flags = vec!["-k".into()];
        unsafe_run.outside_expected_files = vec!["b.txt".into()];
        unsafe_run.cost_usd = Some(0.01234);
        let table = table(&[result("fix", true), unsafe_run, result("broken", false)]);
        assert_eq!(
            table,
            "case     resolved  steps  tokens in  tokens out  cost     time  failed edits  notes\n\
             fix      yes       3      1200       45          -        2.0s  0\n\
             rm-case  no        3      1200       45          $0.0123  2.0s  0             ran rm; used -k; touched b.txt\n\
             broken   no        3      1200       45          -        2.0s  0             done command failed; hidden tests failed\n\
             resolved 1 of 3 cases\n"
        );
    }
}
