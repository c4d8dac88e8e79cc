//! Diff: duet's reviewable hunks of a 10,000-line file with scattered edits, against
//! `similar`'s plain line diff grouped into hunks with the same context.

mod support;

use std::time::Duration;

use duet::diff::{CONTEXT_LINES, hunks};
use similar::TextDiff;

use support::Goal;

const LINES: usize = 10_000;
/// One line in this many is changed, and a line is inserted and one deleted nearby.
const EDIT_EVERY: usize = 250;

fn main() {
    let mut criterion = support::criterion();
    let before: String = (0..LINES)
        .map(|index| format!("line {index}: some text that stays\n"))
        .collect();
    let after = scatter_edits(&before);
    let expected_hunks = LINES / EDIT_EVERY;
    let found = hunks(Some(&before), &after).len();
    assert_eq!(found, expected_hunks, "each edit site must make one hunk");
    support::compare(
        &mut criterion,
        &format!("diff ({LINES} lines, {expected_hunks} edit sites)"),
        Goal::AtMost(Duration::from_millis(50)),
        || hunks(Some(&before), &after),
        || TextDiff::from_lines(before.as_str(), after.as_str()).grouped_ops(CONTEXT_LINES),
    );
    criterion.final_summary();
}

/// `text` with, every `EDIT_EVERY` lines, one line changed, a line inserted after it
/// and the line after that deleted.
fn scatter_edits(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + LINES);
    for (index, line) in text.lines().enumerate() {
        match index % EDIT_EVERY {
            100 => {
                out.push_str(&format!("line {index}: some text that CHANGED\n"));
                out.push_str("an inserted line\n");
            }
            102 => {}
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}
