//! Places where bash evaluates text as code on its own, with no `$(...)` in sight:
//! arithmetic on variables, parameter expansions that assign, go through another
//! name or expand a prompt, and array subscripts.
//!
//! Why: a variable set by an earlier, harmless-looking command (`x='a[$(touch f)]'`)
//! runs `touch f` when bash evaluates it as arithmetic (`$((x))`, `((x))`, `[[ $x -eq
//! 1 ]]`, `${a[x]}`, `${s:x}`, `let`, `declare -i`, `test -v 'a[x]'`), when it is
//! named indirectly (`${!x}`), or when it is expanded as a prompt (`${x@P}`).
//! Owns: telling those syntax nodes and words apart from the harmless ones (plain
//! `$x`, `${x:-default}`, `${x#prefix}`, numbers-only arithmetic, `${a[0]}`).
//! Does not own: walking the tree (`syntax` calls in here for each node).
//! Invariant: a form not known to be harmless is reported, so the walk makes it
//! [`super::CommandClass::Unknown`].

use tree_sitter::Node;

/// Why arithmetic on variables is not a read.
pub(super) const ARITHMETIC: &str = "evaluates arithmetic on variables, and bash runs any \
     `$(...)` a variable's value holds in a subscript (`a[$(...)]`)";

/// What is wrong with a `${...}` expansion, if anything.
pub(super) fn expansion(node: Node<'_>, source: &str) -> Option<&'static str> {
    let mut cursor = node.walk();
    let mut substring = false;
    for child in node.children(&mut cursor) {
        if !child.is_named() {
            match child.kind() {
                "!" => {
                    return Some(
                        "expands a variable named by another (`${!x}`), whose subscript bash \
                         evaluates and which can run commands",
                    );
                }
                "@" => {
                    return Some(
                        "transforms a value (`${x@P}` expands it as a prompt, which runs the \
                         commands it holds)",
                    );
                }
                "=" | ":=" => {
                    return Some("assigns a variable while expanding it (`${x:=value}`)");
                }
                ":" => substring = true,
                _ => {}
            }
            continue;
        }
        if substring && !is_numeric(child, source) {
            return Some(ARITHMETIC);
        }
    }
    None
}

/// What is wrong with an array subscript (`a[i]` in an assignment or expansion).
pub(super) fn subscript(node: Node<'_>, source: &str) -> Option<&'static str> {
    let index = node.child_by_field_name("index")?;
    let text = source.get(index.byte_range()).unwrap_or_default();
    let harmless = matches!(text, "@" | "*") || is_numeric(index, source);
    (!harmless).then_some(ARITHMETIC)
}

/// Whether the arithmetic in `node` (`$((...))`, `((...))`) reads a variable.
pub(super) fn arithmetic_reads_variables(node: Node<'_>, source: &str) -> bool {
    let mut cursor = node.walk();
    node.named_children(&mut cursor)
        .any(|child| !is_numeric(child, source))
}

/// Whether a test command evaluates code: in `[[ ]]` (`double`), `A -eq B` and its kin
/// evaluate both sides as arithmetic; in both `[[ ]]` and `[ ]`, `-v a[i]` evaluates
/// the subscript.
pub(super) fn test_evaluates(node: Node<'_>, source: &str, double: bool) -> bool {
    test_part_evaluates(node, source, double, 0)
}

fn test_part_evaluates(node: Node<'_>, source: &str, double: bool, depth: usize) -> bool {
    const ARITHMETIC_TESTS: &[&str] = &["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];
    if depth > MAX_DEPTH {
        return true;
    }
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
    let operator = children
        .iter()
        .find(|child| child.kind() == "test_operator")
        .map(|operator| source.get(operator.byte_range()).unwrap_or_default());
    let operands = || {
        children
            .iter()
            .filter(|child| child.kind() != "test_operator")
    };
    match (node.kind(), operator) {
        ("binary_expression", Some(operator)) if ARITHMETIC_TESTS.contains(&operator) => {
            double && operands().any(|operand| !is_numeric(*operand, source))
        }
        ("unary_expression", Some("-v")) => operands()
            .any(|operand| subscript_evaluates(source.get(operand.byte_range()).unwrap_or("["))),
        (
            "test_command" | "binary_expression" | "unary_expression" | "parenthesized_expression",
            _,
        ) => operands().any(|operand| test_part_evaluates(*operand, source, double, depth + 1)),
        _ => false,
    }
}

/// Whether a variable name as a builtin takes it (`a[i]`, `'a[$(x)]'`) has a
/// subscript bash evaluates as arithmetic: anything but digits, `@` or `*`.
pub(super) fn subscript_evaluates(name: &str) -> bool {
    let Some((_, rest)) = name.split_once('[') else {
        return false;
    };
    let index = rest.strip_suffix(']').unwrap_or(rest);
    !(index == "@"
        || index == "*"
        || (!index.is_empty() && index.chars().all(|c| c.is_ascii_digit())))
}

/// Numbers, operators on numbers, and `$#`/`$?`/`$$`/`$!` (always numbers).
pub(super) fn is_numeric(node: Node<'_>, source: &str) -> bool {
    numeric_to(node, source, 0)
}

/// How deep expressions are followed; deeper ones count as reading variables (the
/// stack stays bounded whatever the command).
const MAX_DEPTH: usize = 64;

fn numeric_to(node: Node<'_>, source: &str, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    match node.kind() {
        "number" => true,
        "word" => {
            let text = source.get(node.byte_range()).unwrap_or_default();
            !text.is_empty() && text.chars().all(|c| c.is_ascii_digit() || c == '-')
        }
        "simple_expansion" => {
            let text = source.get(node.byte_range()).unwrap_or_default();
            matches!(text, "$#" | "$?" | "$$" | "$!")
        }
        "binary_expression"
        | "unary_expression"
        | "parenthesized_expression"
        | "ternary_expression" => {
            let mut cursor = node.walk();
            node.named_children(&mut cursor)
                .all(|child| numeric_to(child, source, depth + 1))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::subscript_evaluates;

    #[test]
    fn subscripts_of_digits_or_all_are_not_evaluated() {
        for name in ["x", "a[0]", "a[12]", "a[@]", "a[*]", "PATH"] {
            assert!(!subscript_evaluates(name), "{name}");
        }
        for name in ["a[i]", "a[$(touch x)]", "a[1+i]", "a[]", "a[", "a[`x`]"] {
            assert!(subscript_evaluates(name), "{name}");
        }
    }
}
