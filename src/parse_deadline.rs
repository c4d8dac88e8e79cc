//! Parsing with tree-sitter under a deadline, for the places that parse text nobody
//! vetted (a file the model wrote, a command it proposed) and must answer in time.
//!
//! Owns: running one parse that gives up at a deadline. Does not own: choosing the
//! grammar or the budget (the callers: `lint::syntax` and `policy::command`), or what
//! a parse that gave up means (a "too slow" report, or "ask").
//! Invariant: a parse never runs past its deadline by more than one of tree-sitter's
//! progress steps, and a parse that stopped there is `None`, never a partial tree.

use std::ops::ControlFlow;
use std::time::Instant;

use tree_sitter::{ParseOptions, ParseState, Parser, Tree};

/// Parses `text` with `parser` (its language already set), reusing `old_tree` (edited
/// to match) when given; `None` when the deadline passed first.
pub fn parse_by(
    parser: &mut Parser,
    text: &[u8],
    old_tree: Option<&Tree>,
    deadline: Instant,
) -> Option<Tree> {
    let mut stop_at_deadline = |_: &ParseState| {
        if Instant::now() >= deadline {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    let options = ParseOptions::new().progress_callback(&mut stop_at_deadline);
    parser.parse_with_options(
        &mut |offset, _| text.get(offset..).unwrap_or_default(),
        old_tree,
        Some(options),
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn bash() -> Parser {
        let mut parser = Parser::new();
        parser
            .set_language(&tree_sitter_bash::LANGUAGE.into())
            .expect("bash grammar");
        parser
    }

    #[test]
    fn a_parse_in_time_gives_the_tree_and_one_past_its_deadline_gives_none() {
        let later = Instant::now() + Duration::from_secs(10);
        let tree = parse_by(&mut bash(), b"echo hi | wc -c", None, later).expect("a tree");
        assert_eq!(tree.root_node().kind(), "program");
        // Long enough that tree-sitter checks progress before it is done.
        let long = "echo a; ".repeat(200_000);
        let past = Instant::now() - Duration::from_millis(1);
        assert!(parse_by(&mut bash(), long.as_bytes(), None, past).is_none());
    }
}
