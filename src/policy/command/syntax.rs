//! The walk over bash's syntax tree: finds every simple command, redirection and
//! assignment, in the order they run, and hands each simple command to
//! [`super::programs`].
//!
//! Owns: parsing (with a time budget), reading words (quote removal, telling text
//! known now from text only known when the command runs, unquoted globs), redirections,
//! assignments and declarations (`export`, `declare`, `unset`, `for NAME in`), the
//! scopes in which `cd` takes effect, and nested scripts (`sh -c`) up to
//! [`MAX_NESTING`] deep.
//! Does not own: what a program does with its arguments (`programs`, `wrappers`,
//! `toolchains`, `git`), which variables matter (`environment`), which expansions and
//! arithmetic run code (`evaluation`), or where a path lands (`paths`).
//! Invariant: every node of the tree is either understood or visited for the commands
//! it contains; a tree with parse errors, or a command with a control character other
//! than tab and newline (which other parsers, tree-sitter's among them, may read
//! differently from bash), is [`CommandClass::Unknown`] whatever else it holds.

use std::path::Path;
use std::time::{Duration, Instant};

use tree_sitter::{Node, Parser, Tree};

use super::paths::{Cwd, WriteKind, place_of};
use super::{
    CommandClass, CommandContext, Findings, environment, evaluation, programs, shell_state,
};

/// How long parsing one command may take.
const PARSE_BUDGET: Duration = Duration::from_secs(2);
/// How deep shells nested in strings (`bash -c "sh -c '...'"`) are followed.
pub(super) const MAX_NESTING: usize = 4;
/// How deep the syntax tree is followed (`$($($(...)))`, long `&&` chains), so the
/// walk's recursion stays far from the end of the stack.
const MAX_TREE_DEPTH: usize = 256;

/// One shell word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Word {
    /// As written.
    pub text: String,
    /// After quote removal, when no expansion or substitution is involved.
    value: Option<String>,
    /// Unquoted glob characters that the shell expands into file names.
    glob: bool,
    /// Only known when it runs, but known not to start with `-` (a path `find` found
    /// under a start point).
    never_an_option: bool,
}

impl Word {
    /// A word whose value is known.
    pub(super) fn literal(text: &str) -> Self {
        Self {
            text: text.to_string(),
            value: Some(text.to_string()),
            glob: false,
            never_an_option: false,
        }
    }

    /// A word only known when the command runs (`$X`, `$(...)`, xargs input).
    pub(super) fn dynamic(text: &str) -> Self {
        Self {
            text: text.to_string(),
            value: None,
            glob: false,
            never_an_option: false,
        }
    }

    /// A path only known when the command runs that cannot start with `-`.
    pub(super) fn dynamic_path(text: &str) -> Self {
        Self {
            never_an_option: true,
            ..Self::dynamic(text)
        }
    }

    pub(super) fn value(&self) -> Option<&str> {
        self.value.as_deref()
    }

    /// The value if known, else the text as written (for matching option names).
    pub(super) fn spelling(&self) -> &str {
        self.value.as_deref().unwrap_or(&self.text)
    }

    /// Whether the program may get an option here that the command text does not show:
    /// the word is only known when it runs (`"$X"`, input from `xargs`), or it is a glob
    /// whose matches may start with `-` (`*` matching a file named `--pre=x.sh`).
    pub(super) fn may_be_option(&self) -> bool {
        match &self.value {
            None => !self.never_an_option,
            Some(value) => self.glob && value.starts_with(['*', '?', '[', '{']),
        }
    }
}

/// The walk's state: findings so far, where the shell is, and how deep in nested
/// scripts.
pub(super) struct Walker<'a> {
    pub context: &'a CommandContext<'a>,
    pub findings: Findings,
    pub cwd: Cwd,
    /// Nested scripts entered (`sh -c`).
    depth: usize,
    /// Syntax tree levels entered, across nested scripts.
    tree_depth: usize,
}

/// Walks the whole `command`.
pub(super) fn walk(command: &str, context: &CommandContext<'_>) -> Findings {
    let mut walker = Walker {
        context,
        findings: Findings::default(),
        cwd: Cwd::start(context.root, context.cwd),
        depth: 0,
        tree_depth: 0,
    };
    walker.script(command, command);
    walker.findings
}

impl Walker<'_> {
    pub(super) fn note(&mut self, part: &str, class: CommandClass, why: impl Into<String>) {
        self.findings.note(part, class, why);
    }

    /// Runs `f` in a scope whose `cd` does not outlast it (a subshell, a pipeline).
    pub(super) fn scoped(&mut self, f: impl FnOnce(&mut Self)) {
        let saved = self.cwd.clone();
        f(self);
        self.cwd = saved;
    }

    /// Records a write of `target` by `part`.
    pub(super) fn write(&mut self, part: &str, target: &Word, kind: WriteKind) {
        let place = place_of(target, &self.cwd, self.context.root);
        super::paths::judge_write(self, part, &target.text, place, kind);
    }

    /// Records that `part` writes in the directory it runs in (builds, downloads).
    pub(super) fn write_here(&mut self, part: &str, what: &str) {
        super::paths::judge_write_here(self, part, what);
    }

    /// Walks a script given as a string (`sh -c`), in a scope of its own.
    pub(super) fn nested_script(&mut self, script: &str, part: &str) {
        self.scoped(|walker| {
            walker.depth += 1;
            walker.script(script, part);
            walker.depth -= 1;
        });
    }

    fn script(&mut self, source: &str, part: &str) {
        if self.depth > MAX_NESTING {
            self.note(
                part,
                CommandClass::Unknown,
                format!("nests shells more than {MAX_NESTING} deep, so duet stopped reading"),
            );
            return;
        }
        if let Some(control) = source
            .chars()
            .find(|&c| c.is_control() && c != '\n' && c != '\t')
        {
            // Bash takes a carriage return (or any control character) as part of a word;
            // other parsers, tree-sitter's among them, may take it as a space or a line
            // break, and then duet would judge other commands than bash runs.
            self.note(
                part,
                CommandClass::Unknown,
                format!(
                    "contains the control character U+{:04X}, which bash and duet's parser \
                     may read differently",
                    u32::from(control)
                ),
            );
        }
        let Some(tree) = parse(source) else {
            self.note(
                part,
                CommandClass::Unknown,
                "could not be parsed as shell syntax in time",
            );
            return;
        };
        let root = tree.root_node();
        if root.has_error() {
            self.note(
                part,
                CommandClass::Unknown,
                "is not valid shell syntax (or uses syntax duet cannot read)",
            );
        }
        self.visit(root, source);
    }

    fn visit(&mut self, node: Node<'_>, source: &str) {
        if self.tree_depth >= MAX_TREE_DEPTH {
            self.note(
                text(node, source),
                CommandClass::Unknown,
                "nests too deeply for duet to read",
            );
            return;
        }
        self.tree_depth += 1;
        self.visit_kind(node, source);
        self.tree_depth -= 1;
    }

    fn visit_kind(&mut self, node: Node<'_>, source: &str) {
        match node.kind() {
            "command" => self.command(node, source),
            "file_redirect" => self.redirect(node, source),
            "variable_assignment" => self.assignment(node, source),
            "function_definition" => {
                self.note(
                    text(node, source),
                    CommandClass::Unknown,
                    "defines a shell function, which later commands can call by a \
                     harmless-looking name",
                );
                self.children(node, source);
            }
            "command_substitution" => {
                // Its output becomes words of the outer command (`find . $(echo -delete)`),
                // so what the outer command does is only known when it runs.
                self.note(
                    text(node, source),
                    CommandClass::Unknown,
                    "substitutes a command's output into the command line, so what runs is \
                     only known when it runs",
                );
                self.scoped(|walker| walker.children(node, source));
            }
            "subshell" | "process_substitution" | "pipeline" => {
                self.scoped(|walker| walker.children(node, source));
            }
            "declaration_command" => {
                self.declaration(node, source);
                self.children(node, source);
            }
            "unset_command" => {
                let args = self.arguments(node, source);
                shell_state::unset(self, &args, text(node, source));
                self.children(node, source);
            }
            "for_statement" => {
                if let Some(variable) = node.child_by_field_name("variable") {
                    self.check_variable(text(variable, source), text(node, source), "sets");
                }
                self.children(node, source);
            }
            "expansion" => {
                if let Some(why) = evaluation::expansion(node, source) {
                    self.note(text(node, source), CommandClass::Unknown, why);
                }
                self.children(node, source);
            }
            "subscript" => {
                if let Some(why) = evaluation::subscript(node, source) {
                    self.note(text(node, source), CommandClass::Unknown, why);
                }
                self.children(node, source);
            }
            "arithmetic_expansion" => self.arithmetic(node, source),
            "compound_statement" if first_token(node, source) == "((" => {
                self.arithmetic(node, source);
            }
            "c_style_for_statement" => {
                let reads = ["initializer", "condition", "update"].iter().any(|field| {
                    let mut cursor = node.walk();
                    node.children_by_field_name(field, &mut cursor)
                        .any(|clause| !evaluation::is_numeric(clause, source))
                });
                if reads {
                    self.note(
                        text(node, source),
                        CommandClass::Unknown,
                        evaluation::ARITHMETIC,
                    );
                }
                self.children(node, source);
            }
            "test_command" => {
                let double = first_token(node, source) == "[[";
                if evaluation::test_evaluates(node, source, double) {
                    self.note(
                        text(node, source),
                        CommandClass::Unknown,
                        evaluation::ARITHMETIC,
                    );
                }
                self.children(node, source);
            }
            "comment" => {}
            _ => self.children(node, source),
        }
    }

    /// `$((...))` or `((...))`.
    fn arithmetic(&mut self, node: Node<'_>, source: &str) {
        if evaluation::arithmetic_reads_variables(node, source) {
            self.note(
                text(node, source),
                CommandClass::Unknown,
                evaluation::ARITHMETIC,
            );
        }
        self.children(node, source);
    }

    /// `export`/`declare`/`typeset`/`local`/`readonly` as the parser gives them.
    fn declaration(&mut self, node: Node<'_>, source: &str) {
        let keyword = first_token(node, source);
        let args = self.arguments(node, source);
        shell_state::declare(self, keyword, &args, text(node, source));
    }

    /// The words of a declaration or `unset`, assignments given as `NAME=` (their
    /// values are checked where the walk visits them).
    fn arguments(&mut self, node: Node<'_>, source: &str) -> Vec<Word> {
        let mut cursor = node.walk();
        node.named_children(&mut cursor)
            .map(|child| match child.kind() {
                "variable_assignment" => {
                    let name = child
                        .child_by_field_name("name")
                        .map(|name| text(name, source))
                        .unwrap_or_default();
                    Word::literal(&format!("{name}="))
                }
                "variable_name" => Word::literal(text(child, source)),
                _ => word(child, source),
            })
            .collect()
    }

    fn children(&mut self, node: Node<'_>, source: &str) {
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            self.visit(child, source);
        }
    }

    /// A simple command: its assignments, substitutions and redirections first (they
    /// happen before it runs), then the program with its arguments.
    fn command(&mut self, node: Node<'_>, source: &str) {
        self.children(node, source);
        let Some(name) = node.child_by_field_name("name") else {
            return;
        };
        let mut cursor = node.walk();
        let argv: Vec<Word> = std::iter::once(word(name, source))
            .chain(
                node.children_by_field_name("argument", &mut cursor)
                    .map(|argument| word(argument, source)),
            )
            .collect();
        self.run(&argv, text(node, source));
    }

    /// Runs `argv` as one simple command (also used by wrappers for the command they
    /// run).
    pub(super) fn run(&mut self, argv: &[Word], part: &str) {
        let Some((program, args)) = argv.split_first() else {
            return;
        };
        self.findings.commands.push(
            argv.iter()
                .map(|word| word.spelling().to_string())
                .collect(),
        );
        let Some(name) = program.value() else {
            self.note(
                part,
                CommandClass::Unknown,
                format!(
                    "runs a command named by `{}`, which is only known when it runs",
                    program.text
                ),
            );
            return;
        };
        match program_name(name) {
            Some(name) => programs::dispatch(self, &programs::Call { name, args, part }),
            None => self.note(
                part,
                CommandClass::Unknown,
                format!("runs `{name}`, a program or script whose contents duet does not check"),
            ),
        }
    }

    fn redirect(&mut self, node: Node<'_>, source: &str) {
        self.children(node, source);
        let Some(destination) = node.child_by_field_name("destination") else {
            return;
        };
        if destination.kind() == "process_substitution" {
            return;
        }
        let operator = redirect_operator(node, source);
        let target = word(destination, source);
        let part = text(node, source);
        match operator {
            // Reads, and closing a descriptor.
            "<" | "<&" | "<&-" | ">&-" => {}
            // `2>&1`, `>&2`: one descriptor onto another.
            ">&" if destination.kind() == "number" || target.value() == Some("-") => {}
            ">" | ">|" | "&>" | ">&" => self.write(part, &target, WriteKind::Replace),
            ">>" | "&>>" => self.write(part, &target, WriteKind::Modify),
            other => self.note(
                part,
                CommandClass::Unknown,
                format!("uses the redirection `{other}`, which duet does not recognise"),
            ),
        }
    }

    fn assignment(&mut self, node: Node<'_>, source: &str) {
        self.children(node, source);
        let name = node
            .child_by_field_name("name")
            .map(|name| text(name, source))
            .unwrap_or_default();
        let bare = name.split('[').next().unwrap_or(name);
        self.check_variable(bare, text(node, source), "sets");
    }

    /// Notes setting, exporting or unsetting (`verb`) a variable that changes what
    /// later commands run.
    pub(super) fn check_variable(&mut self, name: &str, part: &str, verb: &str) {
        if environment::changes_behaviour(name) {
            self.note(
                part,
                CommandClass::Unknown,
                format!("{verb} {name}, which changes what programs run or how they behave"),
            );
        }
    }
}

/// The program's name for dispatch: a bare name, or a path into a system directory
/// (`/usr/bin/rm` is `rm`). `None` for any other path (`./build.sh`, `bin/tool`).
fn program_name(name: &str) -> Option<&str> {
    const SYSTEM_DIRS: &[&str] = &["/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin"];
    if !name.contains('/') {
        return Some(name);
    }
    let path = Path::new(name);
    let parent = path.parent()?.to_str()?;
    SYSTEM_DIRS
        .contains(&parent)
        .then(|| path.file_name()?.to_str())
        .flatten()
}

fn parse(source: &str) -> Option<Tree> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .ok()?;
    let deadline = Instant::now() + PARSE_BUDGET;
    crate::parse_deadline::parse_by(&mut parser, source.as_bytes(), None, deadline)
}

fn text<'s>(node: Node<'_>, source: &'s str) -> &'s str {
    source.get(node.byte_range()).unwrap_or_default()
}

/// The text of a node's first child, named or not (`((`, `export`).
fn first_token<'s>(node: Node<'_>, source: &'s str) -> &'s str {
    node.child(0)
        .map(|child| text(child, source))
        .unwrap_or_default()
}

/// The operator token of a redirection (`>`, `>>`, `&>`, ...).
fn redirect_operator<'s>(node: Node<'_>, source: &'s str) -> &'s str {
    let mut cursor = node.walk();
    node.children(&mut cursor)
        .find(|child| !child.is_named())
        .map(|child| text(child, source))
        .unwrap_or_default()
}

fn word(node: Node<'_>, source: &str) -> Word {
    Word {
        text: text(node, source).to_string(),
        value: static_value(node, source),
        glob: has_unquoted_glob(node, source),
        never_an_option: starts_with_quoted_text(node, source),
    }
}

/// A double-quoted word that starts with literal text other than `-` (`"commit $n"`):
/// it stays one word, and whatever it expands to starts with that text.
fn starts_with_quoted_text(node: Node<'_>, source: &str) -> bool {
    node.kind() == "string"
        && text(node, source)
            .chars()
            .nth(1)
            .is_some_and(|first| !matches!(first, '-' | '$' | '`' | '\\' | '"'))
}

/// Whether an unquoted part of the word holds glob or brace characters. Only the kinds
/// [`static_value`] reads matter: any other word is only known when it runs anyway.
fn has_unquoted_glob(node: Node<'_>, source: &str) -> bool {
    match node.kind() {
        "word" => {
            let text = text(node, source);
            text.contains(['*', '?', '['])
                || (text.contains('{') && (text.contains(',') || text.contains("..")))
        }
        "concatenation" | "command_name" => {
            let mut cursor = node.walk();
            node.named_children(&mut cursor)
                .any(|child| child.kind() == "word" && has_unquoted_glob(child, source))
        }
        _ => false,
    }
}

/// The value of a word after quote removal, or `None` when part of it is only known
/// when it runs.
fn static_value(node: Node<'_>, source: &str) -> Option<String> {
    let raw = text(node, source);
    match node.kind() {
        "word" | "number" => Some(unescape(raw, |_| true)),
        "raw_string" => Some(raw.get(1..raw.len().saturating_sub(1))?.to_string()),
        "string" => {
            let mut value = String::new();
            let mut cursor = node.walk();
            for child in node.named_children(&mut cursor) {
                if child.kind() != "string_content" {
                    return None;
                }
                value.push_str(&unescape(text(child, source), |c| {
                    matches!(c, '$' | '`' | '"' | '\\' | '\n')
                }));
            }
            Some(value)
        }
        "concatenation" | "command_name" => {
            let mut value = String::new();
            let mut cursor = node.walk();
            for child in node.named_children(&mut cursor) {
                value.push_str(&static_value(child, source)?);
            }
            Some(value)
        }
        _ => None,
    }
}

/// Removes the backslashes that quote a character for which `quotes` holds; a quoted
/// newline disappears (line continuation).
fn unescape(raw: &str, quotes: impl Fn(char) -> bool) -> String {
    let mut value = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            value.push(c);
            continue;
        }
        match chars.next() {
            Some('\n') => {}
            Some(next) if quotes(next) => value.push(next),
            Some(next) => {
                value.push('\\');
                value.push(next);
            }
            None => value.push('\\'),
        }
    }
    value
}
