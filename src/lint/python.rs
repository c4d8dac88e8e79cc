//! Python indentation rules that tree-sitter-python does not enforce.
//!
//! Owns: finding empty blocks (`def f():` followed by an unindented line) and
//! statements whose indentation differs from the rest of their block. The grammar's
//! error recovery accepts both without an ERROR node, yet they are the most common way
//! an edit breaks a Python file.
//! Does not own: reporting (the caller turns each [`Misindent`] into a syntax error).
//! Invariant: only looks at `module` and `block` nodes and the start columns of their
//! statements, so valid Python (whose blocks are consistently indented) yields nothing;
//! only the nodes that can hold a block are walked.

use tree_sitter::Node;

// Python's own wording, which models know.
const UNEXPECTED_INDENT: &str = "unexpected indent";
const UNMATCHED_UNINDENT: &str = "unindent does not match any outer indentation level";

/// A statement (or a missing block) at the wrong indentation.
pub(crate) struct Misindent<'tree> {
    /// Where to point: the statement, or the empty block after a `:`.
    pub node: Node<'tree>,
    pub message: &'static str,
}

/// Indentation mistakes under `root`, in no particular order.
pub(crate) fn misindents<'tree>(root: Node<'tree>, text: &str) -> Vec<Misindent<'tree>> {
    let mut found = Vec::new();
    let mut pending = vec![root];
    while let Some(node) = pending.pop() {
        if node.is_error() {
            // Already reported as an ERROR; its insides are unreliable.
            continue;
        }
        match node.kind() {
            "module" => check_block(node, Some(0), text, &mut found),
            "block" => check_block(node, None, text, &mut found),
            _ => {}
        }
        let mut cursor = node.walk();
        pending.extend(
            node.named_children(&mut cursor)
                .filter(|child| CAN_HOLD_BLOCKS.contains(&child.kind())),
        );
    }
    found
}

/// The node kinds a `block` can be found under (from the grammar's node types):
/// expressions and simple statements cannot hold one, so the walk skips them, which
/// makes it visit statements rather than every node of the file.
const CAN_HOLD_BLOCKS: &[&str] = &[
    "block",
    "case_clause",
    "class_definition",
    "decorated_definition",
    "elif_clause",
    "else_clause",
    "except_clause",
    "finally_clause",
    "for_statement",
    "function_definition",
    "if_statement",
    "match_statement",
    "try_statement",
    "while_statement",
    "with_statement",
];

/// Checks that every statement of `block` that starts a line starts at the same column
/// as the first one (or at `expected`, for the module, which must start at column 0).
fn check_block<'tree>(
    block: Node<'tree>,
    expected: Option<usize>,
    text: &str,
    found: &mut Vec<Misindent<'tree>>,
) {
    let mut cursor = block.walk();
    let statements: Vec<Node<'tree>> = block
        .named_children(&mut cursor)
        .filter(|child| child.kind() != "comment" && !child.is_error() && !child.is_missing())
        .collect();
    if statements.is_empty() {
        if block.kind() == "block" {
            found.push(Misindent {
                node: block,
                message: "expected an indented block after `:`",
            });
        }
        return;
    }
    let mut expected = expected;
    for statement in statements {
        if !starts_its_line(statement, text) {
            continue;
        }
        let column = statement.start_position().column;
        let message = match expected {
            None => {
                expected = Some(column);
                continue;
            }
            Some(want) if column == want => continue,
            // Deeper than its block but shallower than the code above it: a dedent
            // that stopped between two levels.
            Some(want) if column > want && previous_code_indent(statement, text) <= column => {
                UNEXPECTED_INDENT
            }
            Some(_) => UNMATCHED_UNINDENT,
        };
        found.push(Misindent {
            node: statement,
            message,
        });
    }
}

/// The indentation of the nearest line above `node` holding code (not blank, not
/// only a comment); 0 when there is none.
fn previous_code_indent(node: Node<'_>, text: &str) -> usize {
    let line_start = node.start_byte() - node.start_position().column.min(node.start_byte());
    text.get(..line_start)
        .unwrap_or_default()
        .lines()
        .rev()
        .find(|line| {
            let code = line.trim_start();
            !code.is_empty() && !code.starts_with('#')
        })
        .map_or(0, |line| line.len() - line.trim_start().len())
}

/// Whether only whitespace precedes `node` on its line (not `a = 1; b = 2`'s `b`).
fn starts_its_line(node: Node<'_>, text: &str) -> bool {
    let start = node.start_byte();
    let line_start = start - node.start_position().column.min(start);
    text.get(line_start..start)
        .is_some_and(|prefix| prefix.chars().all(char::is_whitespace))
}
