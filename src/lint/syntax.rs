//! The built-in syntax check: parse with tree-sitter, collect what the parser could not
//! fit, and tell the errors the write introduced from those that were there before.
//!
//! Owns: turning ERROR and MISSING nodes into one short finding each (with the source
//! line and a caret), collapsing the cascades one typo causes, and the rule that
//! matches errors across the two versions of a file.
//! Also owns the parses kept between checks ([`ParseCache`]), so the next check of a
//! recently checked file parses only what changed.
//! Does not own: choosing the grammar (`language.rs`) or the report layout (`report.rs`).
//! Invariant: every function here is bounded in time by the parse deadline and never
//! panics, whatever the text.
//!
//! Matching rule (new vs already there): the line diff of before → after maps each
//! unchanged line of the old text to its new line number. An error after the write is
//! *already there* when the old text had an error with the same message at the same
//! column on an unchanged line that maps to the new error's line (or both sit at the
//! end of the file). Each old error vouches for at most one new one. Everything else is
//! *new*: an error on a line the write touched counts as the write's, even if that line
//! was broken before too.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use similar::{DiffTag, TextDiff};
use tree_sitter::{InputEdit, Node, Parser, Point, Tree};

use super::language::Language;
use super::python;

/// How long parsing one write (both versions together) may take before the check
/// gives up on the file.
pub(crate) const PARSE_BUDGET: Duration = Duration::from_secs(2);
/// How long the line diff may search for the best alignment before approximating.
const DIFF_BUDGET: Duration = Duration::from_millis(500);
/// Characters of the offending line shown, and of the unexpected text quoted.
const MAX_EXCERPT_CHARS: usize = 100;
const MAX_QUOTE_CHARS: usize = 30;

/// One place the parser could not make sense of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    /// 0-based line.
    pub row: usize,
    /// 0-based column in characters (not bytes).
    pub column: usize,
    /// What went wrong, e.g. "missing `;`" or "unexpected `}`".
    pub message: String,
    /// The error sits at the very end of the text.
    pub at_end: bool,
    /// The offending line (trimmed, cut if long) and a caret line under it; `None`
    /// when the line is blank.
    pub excerpt: Option<String>,
}

/// The errors after a write, split by whether the write introduced them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Findings {
    pub new: Vec<SyntaxError>,
    pub already_there: Vec<SyntaxError>,
}

impl Findings {
    pub(crate) fn is_empty(&self) -> bool {
        self.new.is_empty() && self.already_there.is_empty()
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum SyntaxCheckError {
    #[error("the {language} grammar could not be loaded ({reason})")]
    Grammar {
        language: &'static str,
        reason: String,
    },
    #[error("parsing took too long, so the syntax check was skipped")]
    TooSlow,
}

/// A parse kept for the next check of the same file.
pub(crate) struct Parsed {
    language: Language,
    /// The bytes the parser read (see [`parse_input`]).
    pub(super) input: Vec<u8>,
    tree: Tree,
}

/// The last parse of the most recently checked (or read) files, least recent first.
#[derive(Default)]
pub(crate) struct ParseCache {
    entries: Vec<(PathBuf, Parsed)>,
    /// Bytes of text of all entries: a tree costs ten to twenty times its text.
    bytes: usize,
}

impl ParseCache {
    /// Files whose parse is kept.
    const FILES: usize = 16;
    /// Larger texts are not kept: their trees cost tens of MB.
    const MAX_BYTES: usize = 1 << 20;
    /// Text kept in all, so that the trees stay within a few tens of MB.
    const MAX_TOTAL_BYTES: usize = 2 << 20;

    /// Removes and returns the parse kept for `path`.
    pub(crate) fn take(&mut self, path: &Path) -> Option<Parsed> {
        let index = self.entries.iter().position(|(kept, _)| kept == path)?;
        let (_, parsed) = self.entries.remove(index);
        self.bytes -= parsed.input.len();
        Some(parsed)
    }

    pub(crate) fn contains(&self, path: &Path) -> bool {
        self.entries.iter().any(|(kept, _)| kept == path)
    }

    /// Keeps `parsed` as the latest parse of `path`, forgetting the least recently
    /// checked files when full.
    pub(crate) fn keep(&mut self, path: &Path, parsed: Parsed) {
        self.take(path);
        if parsed.input.len() > Self::MAX_BYTES {
            return;
        }
        while !self.entries.is_empty()
            && (self.entries.len() == Self::FILES
                || self.bytes + parsed.input.len() > Self::MAX_TOTAL_BYTES)
        {
            let (_, forgotten) = self.entries.remove(0);
            self.bytes -= forgotten.input.len();
        }
        self.bytes += parsed.input.len();
        self.entries.push((path.to_path_buf(), parsed));
    }

    /// Keeps `parsed` unless a parse of `path` is already kept (a check's, newer).
    pub(crate) fn keep_if_absent(&mut self, path: &Path, parsed: Parsed) {
        if !self.contains(path) {
            self.keep(path, parsed);
        }
    }
}

impl std::fmt::Debug for ParseCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|(path, _)| path))
            .finish()
    }
}

/// A check's findings, and the parse of `after` for the next check of the file.
pub(crate) struct Checked {
    pub findings: Findings,
    pub parsed: Parsed,
}

/// Parses `after` (and `before`, when given) and classifies the errors of `after`.
/// Both parses share `budget`; the old one only runs when the new text has errors.
///
/// With `previous` (the last parse of this file) only what changed since is parsed
/// again. Error recovery can differ between an incremental and a full parse, so a
/// text with errors is always parsed again from scratch: findings come from full
/// parses only, and the fast path is the common one, a clean file.
pub(crate) fn check(
    language: Language,
    before: Option<&str>,
    after: &str,
    budget: Duration,
    previous: Option<Parsed>,
) -> Result<Checked, SyntaxCheckError> {
    let deadline = Instant::now() + budget;
    let input = parse_input(language, after).into_owned();
    let previous = previous.filter(|previous| previous.language == language);
    let mut tree = match &previous {
        Some(previous) => parse_edited(previous, &input, deadline)?,
        None => parse(language, &input, None, deadline)?,
    };
    let mut errors = errors_in(language, &tree, after);
    if !errors.is_empty() && previous.is_some() {
        tree = parse(language, &input, None, deadline)?;
        errors = errors_in(language, &tree, after);
    }
    let parsed = Parsed {
        language,
        input,
        tree,
    };
    if errors.is_empty() {
        return Ok(Checked {
            findings: Findings::default(),
            parsed,
        });
    }
    // An old version that cannot be parsed in time only loses the distinction: every
    // error then counts as new, which is the safe side.
    let old_errors = match before {
        Some(before) => old_errors(language, before, previous.as_ref(), deadline)
            .ok()
            .map(|old| (before, old)),
        None => None,
    };
    let findings = match old_errors {
        Some((before, old)) => classify(before, &old, after, errors),
        None => Findings {
            new: errors,
            already_there: Vec::new(),
        },
    };
    Ok(Checked { findings, parsed })
}

/// A full parse of `text`, to keep for the file's next check.
pub(crate) fn parse_for_later(
    language: Language,
    text: &str,
    budget: Duration,
) -> Result<Parsed, SyntaxCheckError> {
    let input = parse_input(language, text).into_owned();
    let tree = parse(language, &input, None, Instant::now() + budget)?;
    Ok(Parsed {
        language,
        input,
        tree,
    })
}

/// The errors of `before`, from `previous` when that is the parse of the same text.
fn old_errors(
    language: Language,
    before: &str,
    previous: Option<&Parsed>,
    deadline: Instant,
) -> Result<Vec<SyntaxError>, SyntaxCheckError> {
    match previous {
        Some(previous) if previous.input == parse_input(language, before).as_ref() => {
            Ok(errors_in(language, &previous.tree, before))
        }
        _ => find_errors(language, before, deadline),
    }
}

/// The syntax errors of `text`, at most one per line, in source order.
pub(crate) fn find_errors(
    language: Language,
    text: &str,
    deadline: Instant,
) -> Result<Vec<SyntaxError>, SyntaxCheckError> {
    let tree = parse(language, &parse_input(language, text), None, deadline)?;
    Ok(errors_in(language, &tree, text))
}

/// The syntax errors in `tree`, the parse of `text`.
fn errors_in(language: Language, tree: &Tree, text: &str) -> Vec<SyntaxError> {
    let root = tree.root_node();
    let mut spots = Vec::new();
    collect(root, &mut spots);
    if language == Language::Python {
        spots.extend(
            python::misindents(root, text)
                .into_iter()
                .map(|misindent| (misindent.node, Problem::Misindent(misindent.message))),
        );
    }
    spots.sort_by_key(|(node, _)| node.start_byte());
    // One typo often yields several nodes on the same line; the first one is the one
    // worth reading, and the rest disappear once it is fixed. Deduplicating before
    // locating also keeps a huge one-line file from being scanned once per node.
    spots.dedup_by_key(|(node, _)| node.start_position().row);
    spots
        .into_iter()
        .map(|(node, problem)| located(node, text, problem.message(node, text)))
        .collect()
}

/// What is wrong at a node, before it is put into words.
enum Problem {
    Missing,
    Unexpected,
    Unclosed,
    Misindent(&'static str),
}

impl Problem {
    fn message(&self, node: Node<'_>, text: &str) -> String {
        match self {
            Self::Missing => missing_message(node),
            Self::Unexpected => unexpected_message(node, text),
            Self::Unclosed => format!("unclosed `{}`", node.kind()),
            Self::Misindent(message) => (*message).to_string(),
        }
    }
}

/// What the parser reads: the text itself, except that C and C++ preprocessor
/// directives are blanked out (offsets unchanged). The grammars parse each branch of an
/// `#ifdef` on its own, so the ubiquitous `#ifdef __cplusplus extern "C" { #endif … }`
/// guard would otherwise be an error in every header that has it.
fn parse_input(language: Language, text: &str) -> Cow<'_, [u8]> {
    if !matches!(language, Language::C | Language::Cpp) {
        return Cow::Borrowed(text.as_bytes());
    }
    let mut bytes = text.as_bytes().to_vec();
    let mut offset = 0;
    let mut continued = false;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        if continued || body.trim_start().starts_with('#') {
            continued = body.ends_with('\\');
            for byte in &mut bytes[offset..offset + body.len()] {
                if !byte.is_ascii_whitespace() {
                    *byte = b' ';
                }
            }
        }
        offset += line.len();
    }
    Cow::Owned(bytes)
}

/// Parses `input` again after editing `previous`'s tree by the one change between
/// the two texts, so the parser reuses every subtree outside it.
fn parse_edited(
    previous: &Parsed,
    input: &[u8],
    deadline: Instant,
) -> Result<Tree, SyntaxCheckError> {
    let mut old_tree = previous.tree.clone();
    old_tree.edit(&edit_between(&previous.input, input));
    parse(previous.language, input, Some(&old_tree), deadline)
}

fn parse(
    language: Language,
    text: &[u8],
    old_tree: Option<&Tree>,
    deadline: Instant,
) -> Result<Tree, SyntaxCheckError> {
    let mut parser = Parser::new();
    parser
        .set_language(&language.grammar())
        .map_err(|error| SyntaxCheckError::Grammar {
            language: language.name(),
            reason: error.to_string(),
        })?;
    crate::parse_deadline::parse_by(&mut parser, text, old_tree, deadline)
        .ok_or(SyntaxCheckError::TooSlow)
}

/// The single edit that turns `old` into `new`: everything between their common
/// prefix and their common suffix, widened to whole UTF-8 characters.
fn edit_between(old: &[u8], new: &[u8]) -> InputEdit {
    let is_inside_char = |text: &[u8], at: usize| text.get(at).is_some_and(|b| b & 0xC0 == 0x80);
    let mut start = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    while start > 0 && (is_inside_char(old, start) || is_inside_char(new, start)) {
        start -= 1;
    }
    let longest_suffix = old.len().min(new.len()) - start;
    let suffix = old
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take(longest_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    let (mut old_end, mut new_end) = (old.len() - suffix, new.len() - suffix);
    while is_inside_char(old, old_end) {
        old_end += 1;
        new_end += 1;
    }
    InputEdit {
        start_byte: start,
        old_end_byte: old_end,
        new_end_byte: new_end,
        start_position: point_at(old, start),
        old_end_position: point_at(old, old_end),
        new_end_position: point_at(new, new_end),
    }
}

/// The row and byte column of offset `at` in `text`.
fn point_at(text: &[u8], at: usize) -> Point {
    let before = &text[..at];
    let line_start = before
        .iter()
        .rposition(|&byte| byte == b'\n')
        .map_or(0, |newline| newline + 1);
    Point {
        row: before.iter().filter(|&&byte| byte == b'\n').count(),
        column: at - line_start,
    }
}

/// Walks only the subtrees that contain errors. An ERROR or MISSING node is reported
/// and its insides skipped: nested errors are the same mistake seen again.
fn collect<'tree>(root: Node<'tree>, spots: &mut Vec<(Node<'tree>, Problem)>) {
    let mut pending = vec![root];
    while let Some(node) = pending.pop() {
        if node.is_missing() {
            spots.push((node, Problem::Missing));
        } else if node.is_error() {
            spots.push(match unclosed_opener(node) {
                Some(opener) => (opener, Problem::Unclosed),
                None => (node, Problem::Unexpected),
            });
        } else if node.has_error() {
            let mut cursor = node.walk();
            pending.extend(node.children(&mut cursor));
        }
    }
}

/// The innermost bracket opened among `error`'s direct children and not closed there.
/// The parser wraps everything after an unclosed bracket into one ERROR node that
/// starts far from the mistake; the bracket itself is what the reader needs.
fn unclosed_opener(error: Node<'_>) -> Option<Node<'_>> {
    let mut open = Vec::new();
    let mut cursor = error.walk();
    for child in error.children(&mut cursor) {
        match child.kind() {
            "(" | "[" | "{" if !child.is_named() => open.push(child),
            closer @ (")" | "]" | "}") if !child.is_named() => {
                let opener = match closer {
                    ")" => "(",
                    "]" => "[",
                    _ => "{",
                };
                if open.last().is_some_and(|last| last.kind() == opener) {
                    open.pop();
                }
            }
            _ => {}
        }
    }
    open.pop()
}

fn missing_message(node: Node<'_>) -> String {
    if node.is_named() {
        format!("missing {}", node.kind().replace('_', " "))
    } else {
        format!("missing `{}`", node.kind())
    }
}

fn unexpected_message(node: Node<'_>, text: &str) -> String {
    let found = text.get(node.byte_range()).unwrap_or_default();
    let mut lines = found.lines().map(str::trim).filter(|line| !line.is_empty());
    match lines.next() {
        None => "unexpected input".to_string(),
        Some(first) => {
            let more_lines = lines.next().is_some();
            let (quoted, cut) = cut_chars(first, MAX_QUOTE_CHARS);
            let ellipsis = if cut || more_lines { "…" } else { "" };
            format!("unexpected `{quoted}{ellipsis}`")
        }
    }
}

fn located(node: Node<'_>, text: &str, message: String) -> SyntaxError {
    let start = node.start_byte().min(text.len());
    let line_start = text
        .get(..start)
        .and_then(|head| head.rfind('\n'))
        .map_or(0, |newline| newline + 1);
    let line_end = text
        .get(start..)
        .and_then(|tail| tail.find('\n'))
        .map_or(text.len(), |newline| start + newline);
    let line = text.get(line_start..line_end).unwrap_or_default();
    let column = text
        .get(line_start..start)
        .map_or(start - line_start, |prefix| prefix.chars().count());
    SyntaxError {
        row: node.start_position().row,
        column,
        message,
        at_end: start == text.len(),
        excerpt: excerpt(line, column),
    }
}

/// The line trimmed of indentation (and of the part far from the column when it is
/// long) with a caret under `column`.
fn excerpt(line: &str, column: usize) -> Option<String> {
    let line = line.trim_end();
    let indent = line.chars().take_while(|c| c.is_whitespace()).count();
    let chars: Vec<char> = line
        .chars()
        .skip(indent)
        .map(|c| if c == '\t' { ' ' } else { c })
        .collect();
    if chars.is_empty() {
        return None;
    }
    let caret = column.saturating_sub(indent).min(chars.len());
    // Keep a window of the line around the caret; a minified file's single line
    // must not flood the report.
    let start = caret.saturating_sub(MAX_EXCERPT_CHARS / 2);
    let start = start.min(chars.len().saturating_sub(MAX_EXCERPT_CHARS));
    let end = (start + MAX_EXCERPT_CHARS).min(chars.len());
    let mut shown = String::new();
    let mut caret_at = caret - start;
    if start > 0 {
        shown.push('…');
        caret_at += 1;
    }
    shown.extend(&chars[start..end]);
    if end < chars.len() {
        shown.push('…');
    }
    Some(format!("{shown}\n{}^", " ".repeat(caret_at)))
}

/// The first `max` characters of `text`, and whether anything was cut.
fn cut_chars(text: &str, max: usize) -> (&str, bool) {
    match text.char_indices().nth(max) {
        Some((cut, _)) => (&text[..cut], true),
        None => (text, false),
    }
}

/// Splits `errors` (of `after`) by the matching rule in the module doc.
fn classify(before: &str, old: &[SyntaxError], after: &str, errors: Vec<SyntaxError>) -> Findings {
    let moved = LineMap::new(before, after);
    // How many old errors vouch for each (message, column, place in the new text).
    let mut vouchers: HashMap<(String, usize, Place), usize> = HashMap::new();
    for error in old {
        let place = if error.at_end {
            Some(Place::End)
        } else {
            moved.new_row(error.row).map(Place::Row)
        };
        if let Some(place) = place {
            *vouchers
                .entry((error.message.clone(), error.column, place))
                .or_default() += 1;
        }
    }
    let mut findings = Findings::default();
    for error in errors {
        let place = if error.at_end {
            Place::End
        } else {
            Place::Row(error.row)
        };
        let key = (error.message.clone(), error.column, place);
        match vouchers.get_mut(&key) {
            Some(count) if *count > 0 => {
                *count -= 1;
                findings.already_there.push(error);
            }
            _ => findings.new.push(error),
        }
    }
    findings
}

/// Where an error sits, in terms that survive lines moving.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Place {
    Row(usize),
    End,
}

/// Where each unchanged line of the old text went in the new one.
struct LineMap {
    /// Indexed by old row; `None` for lines the write changed or removed.
    new_rows: Vec<Option<usize>>,
}

impl LineMap {
    fn new(before: &str, after: &str) -> Self {
        let diff = TextDiff::configure()
            .timeout(DIFF_BUDGET)
            .diff_lines(before, after);
        let mut new_rows = Vec::new();
        for op in diff.ops() {
            let (tag, old_range, new_range) = op.as_tag_tuple();
            if new_rows.len() < old_range.end {
                new_rows.resize(old_range.end, None);
            }
            if tag == DiffTag::Equal {
                for (old_row, new_row) in old_range.zip(new_range) {
                    new_rows[old_row] = Some(new_row);
                }
            }
        }
        Self { new_rows }
    }

    fn new_row(&self, old_row: usize) -> Option<usize> {
        self.new_rows.get(old_row).copied().flatten()
    }
}

#[cfg(test)]
pub(super) mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    /// A check without a kept parse: the reference every incremental check must match.
    fn check_fresh(
        language: Language,
        before: Option<&str>,
        after: &str,
    ) -> Result<Findings, SyntaxCheckError> {
        check(language, before, after, PARSE_BUDGET, None).map(|checked| checked.findings)
    }

    fn errors(language: Language, text: &str) -> Vec<SyntaxError> {
        find_errors(language, text, Instant::now() + PARSE_BUDGET).unwrap()
    }

    /// (1-based line, 1-based column, message) of each error.
    fn spots(language: Language, text: &str) -> Vec<(usize, usize, String)> {
        errors(language, text)
            .into_iter()
            .map(|error| (error.row + 1, error.column + 1, error.message))
            .collect()
    }

    fn spot(line: usize, column: usize, message: &str) -> (usize, usize, String) {
        (line, column, message.to_string())
    }

    /// A file name, a valid and a broken snippet of every supported language.
    pub(crate) const SAMPLES: [(Language, &str, &str, &str); 14] = [
        (
            Language::Rust,
            "src/main.rs",
            "fn main() {\n    let v = vec![1, 2];\n    println!(\"{v:?}\");\n}\n",
            "fn main() {\n    let v = vec![1, 2]\n    println!(\"{v:?}\");\n}\n",
        ),
        (
            Language::Python,
            "app.py",
            "def f(x):\n    return [i * 2 for i in x]\n",
            "def f(x):\n    return [i * 2 for i in x\n",
        ),
        (
            Language::JavaScript,
            "web/app.js",
            "const f = (x) => <b>{x}</b>;\nexport default f;\n",
            "const f = (x) => { return x * ;\n",
        ),
        (
            Language::TypeScript,
            "web/types.ts",
            "interface P { x: number }\nconst p: P = { x: 1 };\n",
            "interface P { x: number }\nconst p: P = { x: 1 ;\n",
        ),
        (
            Language::Tsx,
            "web/App.tsx",
            "export const A = (p: { n: number }) => <div>{p.n}</div>;\n",
            "export const A = (p: { n: number }) => <div>{p.n}</div;\n",
        ),
        (
            Language::Go,
            "main.go",
            "package main\n\nfunc main() {\n\tx := 1\n\t_ = x\n}\n",
            "package main\n\nfunc main() {\n\tx := \n}\n",
        ),
        (
            Language::C,
            "main.c",
            "#include <stdio.h>\nint main(void) { printf(\"hi\\n\"); return 0; }\n",
            "int main(void) { return 0 }\n",
        ),
        (
            Language::Cpp,
            "box.hpp",
            "template <typename T> class Box { T v; public: T get() const { return v; } };\n",
            "class Box { int v; \n",
        ),
        (
            Language::Json,
            "package.json",
            "{\"a\": [1, 2.5, true, null], \"b\": {\"c\": \"d\"}}\n",
            "{\"a\": [1, 2,], \"b\" 3}\n",
        ),
        (
            Language::Toml,
            "Cargo.toml",
            "[package]\nname = \"x\"\n[dependencies]\nserde = { version = \"1\" }\n",
            "[package\nname = \"x\"\n",
        ),
        (
            Language::Yaml,
            "ci.yml",
            "a: 1\nlist:\n  - x\n  - y\nmap: {k: v}\n",
            "a: [1, 2\nb: 3\n",
        ),
        (
            Language::Bash,
            "run.sh",
            "for f in *.txt; do\n  echo \"$f\"\ndone\n",
            "if [ -f x ]; then\n  echo yes\n",
        ),
        (
            Language::Html,
            "index.html",
            "<!DOCTYPE html>\n<html><body><p class=\"a\">hi</p></body></html>\n",
            "<div class=\"a>hi</div>\n",
        ),
        (
            Language::Css,
            "site.css",
            "a { color: red; }\n.b > .c:hover { margin: 0 auto; }\n",
            "a { color: red;\n",
        ),
    ];

    #[test]
    fn every_language_accepts_valid_code_and_flags_broken_code() {
        for (language, _, valid, broken) in SAMPLES {
            assert_eq!(errors(language, valid), Vec::new(), "{language:?} valid");
            assert!(
                !errors(language, broken).is_empty(),
                "{language:?} broken snippet was accepted"
            );
        }
    }

    #[test]
    fn rust_unclosed_brace_points_at_the_brace_with_the_line_shown() {
        let text = "fn main() {\n    let x = 1;\n    if x > 0 {\n        println!(\"hi\");\n}\n";
        let found = errors(Language::Rust, text);
        assert_eq!(
            found,
            vec![SyntaxError {
                row: 0,
                column: 10,
                message: "unclosed `{`".into(),
                at_end: false,
                excerpt: Some("fn main() {\n          ^".into()),
            }]
        );
    }

    #[test]
    fn rust_missing_token_is_named() {
        let text = "fn main() {\n    let x = 1\n    let y = 2;\n}\n";
        let found = errors(Language::Rust, text);
        assert_eq!(
            found.iter().map(|e| (e.row, e.column)).collect::<Vec<_>>(),
            vec![(1, 13)]
        );
        assert_eq!(found[0].message, "missing `;`");
        // Indentation is trimmed and the caret follows.
        assert_eq!(found[0].excerpt.as_deref(), Some("let x = 1\n         ^"));
        assert_eq!(
            spots(Language::Rust, "fn main() {\n}\n}\n"),
            vec![spot(3, 1, "unexpected `}`")]
        );
    }

    #[test]
    fn python_unclosed_paren() {
        let text = "def f(x):\n    return (x +\n\nprint(f(1))\n";
        let found = errors(Language::Python, text);
        assert_eq!(
            spots(Language::Python, text),
            vec![spot(2, 12, "unclosed `(`")]
        );
        assert_eq!(found[0].excerpt.as_deref(), Some("return (x +\n       ^"));
    }

    #[test]
    fn python_indentation_mistakes_are_caught() {
        let unindent = "unindent does not match any outer indentation level";
        for (text, expected) in [
            (
                "def f(x):\n    y = 1\n      return y\n",
                spot(3, 7, "unexpected indent"),
            ),
            ("if x:\n    a = 1\n  b = 2\n", spot(3, 3, unindent)),
            (
                "class A:\n    def f(self):\n        a = 1\n      b = 2\n",
                spot(4, 7, unindent),
            ),
            (
                "def f(x):\nreturn x\n",
                spot(1, 10, "expected an indented block after `:`"),
            ),
            ("  x = 1\n", spot(1, 3, "unexpected indent")),
            // Blocks under every kind of clause are checked.
            (
                "try:\n    pass\nexcept E:\n    a = 1\n  b = 2\n",
                spot(5, 3, unindent),
            ),
            (
                "@d\ndef f():\n    with o:\n        a = 1\n      b = 2\n",
                spot(5, 7, unindent),
            ),
            (
                "for i in x:\n    pass\nelse:\n    a = 1\n      b = 2\n",
                spot(5, 7, "unexpected indent"),
            ),
        ] {
            assert_eq!(spots(Language::Python, text), vec![expected], "{text}");
        }
    }

    #[test]
    fn valid_python_layouts_are_not_flagged() {
        let text = r#"import os  # comment
  # odd comment indentation is fine

@decorator
class A(Base):
    """Doc."""
    def f(self): return 1

    def g(self, x):
        total = (x +
                 1)
        a = 1; b = 2
        if a:
            pass
        elif b:
            pass
        else:
            return [
        i for i in range(3)
            ]
        match x:
            case 1:
                pass
            case _:
                pass
        try:
            pass
        except ValueError as error:
            raise
        s = """
  not code
"""
        return total
"#;
        assert_eq!(spots(Language::Python, text), Vec::new());
    }

    #[test]
    fn c_preprocessor_branches_do_not_split_blocks() {
        let header = "#ifndef LIB_H\n#define LIB_H\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n\
                      #define MAX(a, b) \\\n  ((a) > (b) ? (a) : (b))\n\nint lib_add(int a, int b);\n\n\
                      #ifdef __cplusplus\n}\n#endif\n#endif\n";
        assert_eq!(errors(Language::Cpp, header), Vec::new());
        // Blanking keeps offsets: an error after directives is still placed exactly,
        // and the excerpt shows the real line.
        let broken = "#include <stdio.h>\n#define N 3 // é\nint main(void) { return N }\n";
        let found = errors(Language::C, broken);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].row, found[0].column), (2, 25));
        assert_eq!(
            found[0].excerpt.as_deref(),
            Some("int main(void) { return N }\n                         ^")
        );
    }

    #[test]
    fn one_error_per_line_and_the_first_one_wins() {
        let found = spots(Language::Rust, "fn f() { let a = ; let b = ; }\n");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].0, found[0].1), (1, 16));
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        let found = spots(Language::Json, "{\"é\": 1,, \"b\": 2}\n");
        assert_eq!(found, vec![spot(1, 8, "unexpected `,`")]);
    }

    #[test]
    fn long_lines_are_shown_as_a_window_around_the_caret() {
        let numbers = |range: std::ops::Range<u32>| {
            range.map(|i| i.to_string()).collect::<Vec<_>>().join(",")
        };
        let text = format!("[{},,{}]\n", numbers(0..1000), numbers(1000..2000));
        let found = errors(Language::Json, &text);
        assert_eq!(found.len(), 1, "{found:?}");
        let excerpt = found[0].excerpt.clone().unwrap();
        let (shown, caret) = excerpt.split_once('\n').unwrap();
        assert!(shown.starts_with('…') && shown.ends_with('…'), "{shown}");
        assert!(shown.chars().count() <= MAX_EXCERPT_CHARS + 2);
        // The caret sits under the offending comma.
        assert_eq!(shown.chars().nth(caret.len() - 1), Some(','), "{excerpt}");
        assert!(caret.ends_with('^'));
    }

    #[test]
    fn errors_at_the_end_say_so() {
        let found = errors(Language::Bash, "if true; then\n  echo hi\n");
        assert_eq!(found.len(), 1);
        assert!(found[0].at_end);
        assert_eq!(found[0].message, "missing `fi`");
        assert_eq!(found[0].excerpt, None);
    }

    fn classify_texts(before: &str, after: &str) -> (Vec<usize>, Vec<usize>) {
        let findings = check_fresh(Language::Rust, Some(before), after).unwrap();
        let rows = |errors: &[SyntaxError]| errors.iter().map(|e| e.row + 1).collect();
        (rows(&findings.new), rows(&findings.already_there))
    }

    const OLD_BREAKAGE: &str = "fn a() {\n    let x = 1\n    x\n}\n";

    #[test]
    fn an_untouched_error_is_already_there_and_a_fresh_one_is_new() {
        let after = format!("{OLD_BREAKAGE}fn b() {{\n    let y = 2\n    y\n}}\n");
        assert_eq!(classify_texts(OLD_BREAKAGE, &after), (vec![6], vec![2]));
    }

    #[test]
    fn an_old_error_pushed_down_by_inserted_lines_is_still_already_there() {
        let after = format!("use std::fmt;\n\nfn c() {{\n    let z = 3\n}}\n\n{OLD_BREAKAGE}");
        assert_eq!(classify_texts(OLD_BREAKAGE, &after), (vec![4], vec![8]));
    }

    #[test]
    fn an_error_on_a_rewritten_line_counts_as_new() {
        let after = OLD_BREAKAGE.replace("let x = 1", "let x = 10");
        assert_eq!(classify_texts(OLD_BREAKAGE, &after), (vec![2], vec![]));
    }

    #[test]
    fn a_new_file_has_only_new_errors() {
        let findings = check_fresh(Language::Rust, None, OLD_BREAKAGE).unwrap();
        assert_eq!(findings.new.len(), 1);
        assert!(findings.already_there.is_empty());
    }

    #[test]
    fn a_clean_file_skips_the_old_parse() {
        let findings = check_fresh(Language::Rust, Some("fn ("), "fn a() {}\n").unwrap();
        assert_eq!(findings, Findings::default());
    }

    #[test]
    fn a_parse_over_budget_gives_up() {
        let text = "{\"a\": [1, 2, 3]}\n".repeat(20_000);
        let error = check(Language::Json, None, &text, Duration::ZERO, None)
            .map(|checked| checked.findings)
            .unwrap_err();
        assert!(matches!(error, SyntaxCheckError::TooSlow), "{error}");
    }

    #[test]
    fn the_edit_spans_what_differs_in_whole_characters() {
        let edit = edit_between(b"ab\ncd\nef", b"ab\ncXd\nef");
        assert_eq!(
            (edit.start_byte, edit.old_end_byte, edit.new_end_byte),
            (4, 4, 5)
        );
        assert_eq!(edit.start_position, Point { row: 1, column: 1 });
        assert_eq!(edit.new_end_position, Point { row: 1, column: 2 });
        // é and è share their first byte: the edit starts at the character.
        let edit = edit_between("aé".as_bytes(), "aè".as_bytes());
        assert_eq!(
            (edit.start_byte, edit.old_end_byte, edit.new_end_byte),
            (1, 3, 3)
        );
        // Deleting one of two equal lines: prefix and suffix do not overlap.
        let edit = edit_between(b"x\nx\n", b"x\n");
        assert_eq!(
            (edit.start_byte, edit.old_end_byte, edit.new_end_byte),
            (2, 4, 2)
        );
        assert_eq!(edit.old_end_position, Point { row: 2, column: 0 });
    }

    /// `check` of `before` → `after`, given the kept parse of `before`.
    fn check_after_previous(language: Language, before: &str, after: &str) -> Findings {
        let previous = check(language, None, before, PARSE_BUDGET, None)
            .unwrap()
            .parsed;
        check(language, Some(before), after, PARSE_BUDGET, Some(previous))
            .unwrap()
            .findings
    }

    #[test]
    fn a_kept_parse_gives_the_findings_of_a_full_parse() {
        let after = format!("{OLD_BREAKAGE}fn b() {{\n    let y = 2\n    y\n}}\n");
        for (before, after) in [
            (OLD_BREAKAGE, after.as_str()),
            ("fn a() {}\n", "fn a() {\n"),
            ("fn a() {\n", "fn a() {}\n"),
        ] {
            assert_eq!(
                check_after_previous(Language::Rust, before, after),
                check_fresh(Language::Rust, Some(before), after).unwrap(),
                "{before:?} -> {after:?}"
            );
        }
        let python = "def f():\n    return 1\n";
        let misindented = "def f():\n    x = 1\n      return x\n";
        assert_eq!(
            check_after_previous(Language::Python, python, misindented),
            check_fresh(Language::Python, Some(python), misindented).unwrap()
        );
    }

    #[test]
    fn a_parse_of_another_language_is_not_used() {
        let previous = check(Language::Json, None, "[1]\n", PARSE_BUDGET, None)
            .unwrap()
            .parsed;
        let checked = check(Language::Rust, None, "fn (", PARSE_BUDGET, Some(previous)).unwrap();
        assert_eq!(
            checked.findings,
            check_fresh(Language::Rust, None, "fn (").unwrap()
        );
        assert_eq!(checked.parsed.language, Language::Rust);
    }

    #[test]
    fn the_cache_keeps_the_latest_parse_of_recent_small_files() {
        let parsed = |text: &str| {
            check(Language::Json, None, text, PARSE_BUDGET, None)
                .unwrap()
                .parsed
        };
        let mut cache = ParseCache::default();
        for i in 0..=ParseCache::FILES {
            cache.keep(Path::new(&format!("{i}.json")), parsed("[1]"));
        }
        assert!(cache.take(Path::new("0.json")).is_none(), "the oldest goes");
        cache.keep(Path::new("1.json"), parsed("[2]"));
        assert_eq!(cache.take(Path::new("1.json")).unwrap().input, b"[2]");
        assert!(cache.take(Path::new("1.json")).is_none(), "taking removes");
        // One string token: quick to parse even in a debug build.
        let big = format!("\"{}\"", "a".repeat(ParseCache::MAX_BYTES));
        cache.keep(Path::new("big.json"), parsed(&big));
        assert!(cache.take(Path::new("big.json")).is_none());
    }

    #[test]
    fn the_cache_keeps_its_text_within_a_total_budget() {
        let parsed = |text: &str| {
            check(Language::Json, None, text, PARSE_BUDGET, None)
                .unwrap()
                .parsed
        };
        // Three strings of just under half the budget: the third pushes out the first.
        let half = format!("\"{}\"", "a".repeat(ParseCache::MAX_TOTAL_BYTES / 2 - 16));
        let mut cache = ParseCache::default();
        for name in ["a.json", "b.json", "c.json"] {
            cache.keep(Path::new(name), parsed(&half));
        }
        assert!(!cache.contains(Path::new("a.json")), "the oldest goes");
        assert!(cache.contains(Path::new("b.json")));
        assert!(cache.contains(Path::new("c.json")));
        assert!(cache.bytes <= ParseCache::MAX_TOTAL_BYTES);
        cache.take(Path::new("b.json"));
        assert_eq!(cache.bytes, half.len(), "taking gives its bytes back");
    }

    #[test]
    fn a_parse_kept_ahead_never_replaces_a_checked_one() {
        let parsed = |text: &str| {
            check(Language::Json, None, text, PARSE_BUDGET, None)
                .unwrap()
                .parsed
        };
        let mut cache = ParseCache::default();
        cache.keep(Path::new("a.json"), parsed("[1]"));
        cache.keep_if_absent(Path::new("a.json"), parsed("[2]"));
        assert_eq!(cache.take(Path::new("a.json")).unwrap().input, b"[1]");
        cache.keep_if_absent(Path::new("a.json"), parsed("[3]"));
        assert_eq!(cache.take(Path::new("a.json")).unwrap().input, b"[3]");
    }

    mod incremental {
        use pretty_assertions::assert_eq;
        use proptest::prelude::*;

        use super::*;

        /// Lines a sample is built from and edited with, some of them broken.
        const RUST_LINES: &[&str] = &[
            "fn a(x: u64) -> u64 {",
            "    let y = x * 3;",
            "    y ^ (y >> 7)",
            "}",
            "",
            "    let z = ;",
            "struct S { a: u8 }",
            "    if x > 1 {",
            "// é comment",
        ];
        const PYTHON_LINES: &[&str] = &[
            "def f(x):",
            "    y = x * 3",
            "    return y",
            "",
            "class C:",
            "  pass",
            "    z = (1,",
            "x = 'é'",
        ];

        fn text(lines: &[&str], picks: &[usize]) -> String {
            picks
                .iter()
                .map(|&pick| format!("{}\n", lines[pick % lines.len()]))
                .collect()
        }

        /// Replaces, inserts or deletes one line at each step.
        fn edited(
            lines: &[&str],
            picks: &[usize],
            (at, kind, pick): (usize, u8, usize),
        ) -> Vec<usize> {
            let mut picks = picks.to_vec();
            let at = at % (picks.len() + 1);
            let line = pick % lines.len();
            match kind % 3 {
                0 if at < picks.len() => picks[at] = line,
                1 if at < picks.len() => {
                    picks.remove(at);
                }
                _ => picks.insert(at, line),
            }
            picks
        }

        fn same_as_full_parses(
            language: Language,
            lines: &[&str],
            picks: Vec<usize>,
            edits: &[(usize, u8, usize)],
        ) {
            let mut picks = picks;
            let mut before = text(lines, &picks);
            let mut kept = check(language, None, &before, PARSE_BUDGET, None)
                .unwrap()
                .parsed;
            for &edit in edits {
                picks = edited(lines, &picks, edit);
                let after = text(lines, &picks);
                let checked =
                    check(language, Some(&before), &after, PARSE_BUDGET, Some(kept)).unwrap();
                assert_eq!(
                    checked.findings,
                    check_fresh(language, Some(&before), &after).unwrap(),
                    "{before:?} -> {after:?}"
                );
                kept = checked.parsed;
                before = after;
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(64))]

            #[test]
            fn rust_edits(picks in prop::collection::vec(0usize..32, 0..24),
                          edits in prop::collection::vec((0usize..32, 0u8..3, 0usize..32), 1..6)) {
                same_as_full_parses(Language::Rust, RUST_LINES, picks, &edits);
            }

            #[test]
            fn python_edits(picks in prop::collection::vec(0usize..32, 0..24),
                            edits in prop::collection::vec((0usize..32, 0u8..3, 0usize..32), 1..6)) {
                same_as_full_parses(Language::Python, PYTHON_LINES, picks, &edits);
            }
        }
    }
}
