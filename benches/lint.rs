//! Post-write lint: duet's syntax check of a 5,000-line file after a one-line edit,
//! against a bare tree-sitter parse of the same text (what a check without a kept
//! parse pays at least).
//!
//! Two cases: the file's first check (nothing kept, a full parse) and an edit of a
//! file checked before, the usual case while the agent works on a file: the edits
//! alternate between two versions, so every check starts from the other version's
//! kept parse.

mod support;

use std::time::Duration;

use duet::lint::{LintConfig, Linter};
use tokio::runtime::Runtime;
use tree_sitter::{Language, Parser};

use support::Goal;

const LINES: usize = 5_000;

/// One language's sample: how a generated file looks and how the edit changes it.
struct Sample {
    name: &'static str,
    extension: &'static str,
    grammar: Language,
    /// The lines of the `index`th item; every item has `ITEM_LINES` lines.
    item: fn(usize) -> String,
    /// The line the edit changes, and what it becomes.
    edit: (&'static str, &'static str),
}

const ITEM_LINES: usize = 5;

fn rust_item(index: usize) -> String {
    format!(
        "fn item_{index}(x: u64) -> u64 {{\n    let y = x.wrapping_mul({index});\n    y ^ (y >> 7)\n}}\n\n"
    )
}

fn python_item(index: usize) -> String {
    format!("def item_{index}(x):\n    y = x * {index}\n    return y ^ (y >> 7)\n\n\n")
}

fn main() {
    let mut criterion = support::criterion();
    let runtime = Runtime::new().unwrap_or_else(|error| panic!("tokio runtime: {error}"));
    let workspace = tempfile::tempdir().unwrap_or_else(|error| panic!("temp dir: {error}"));
    let root = workspace.path();
    let samples = [
        Sample {
            name: "rust",
            extension: "rs",
            grammar: tree_sitter_rust::LANGUAGE.into(),
            item: rust_item,
            edit: ("    y ^ (y >> 7)\n", "    y ^ (y >> 9)\n"),
        },
        Sample {
            name: "python",
            extension: "py",
            grammar: tree_sitter_python::LANGUAGE.into(),
            item: python_item,
            edit: ("    return y ^ (y >> 7)\n", "    return y ^ (y >> 9)\n"),
        },
    ];
    for sample in &samples {
        let before: String = (0..LINES / ITEM_LINES).map(sample.item).collect();
        let after = edit_middle(&before, sample.edit);
        let path = root.join(format!("sample.{}", sample.extension));
        let check = |linter: &Linter, before: &str, after: &str| {
            let report = runtime.block_on(linter.check_write(&path, "sample", Some(before), after));
            assert!(
                report.contains("clean"),
                "the edited sample must lint clean: {report}"
            );
        };
        let first_check = || check(&Linter::new(root, LintConfig::default()), &before, &after);
        support::compare(
            &mut criterion,
            &format!(
                "lint {} ({LINES} lines, one-line edit, first check of the file)",
                sample.name
            ),
            Goal::AtMost(Duration::from_millis(10)),
            first_check,
            || bare_parse(&sample.grammar, &after),
        );
        let linter = Linter::new(root, LintConfig::default());
        check(&linter, &before, &before);
        let mut forward = true;
        let next_edit = || {
            let (from, to) = if forward {
                (&before, &after)
            } else {
                (&after, &before)
            };
            forward = !forward;
            check(&linter, from, to);
        };
        support::compare(
            &mut criterion,
            &format!(
                "lint {} ({LINES} lines, one-line edit, file checked before)",
                sample.name
            ),
            Goal::AtMost(Duration::from_millis(10)),
            next_edit,
            || bare_parse(&sample.grammar, &after),
        );
    }
    criterion.final_summary();
}

/// `text` with the first occurrence of `edit.0` after its middle replaced by `edit.1`.
fn edit_middle(text: &str, (old, new): (&str, &str)) -> String {
    let middle = text.len() / 2;
    let at = text[middle..]
        .find(old)
        .map(|offset| middle + offset)
        .unwrap_or_else(|| panic!("{old:?} is not in the second half of the sample"));
    format!("{}{new}{}", &text[..at], &text[at + old.len()..])
}

fn bare_parse(grammar: &Language, text: &str) -> bool {
    let mut parser = Parser::new();
    if let Err(error) = parser.set_language(grammar) {
        panic!("grammar: {error}");
    }
    parser
        .parse(text, None)
        .is_some_and(|tree| !tree.root_node().has_error())
}
