//! Which key runs which [`Action`] in which [`Context`]: the shipped `keymap.toml`,
//! merged per context with the user's own `keymap.toml`.
//!
//! Owns: the file format, key lookup for a focus stack, and the key labels help and
//! hints show. Does not own: what an action does (the views), or finding the config
//! directory ([`crate::config::Paths`]).
//! Invariant: a bad user entry never costs a binding; it is reported with its line and
//! the default for that key stays.

mod key;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crossterm::event::KeyEvent;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use self::key::Key;
use super::action::{Action, Context};
use super::slash::closest;
use crate::config::Paths;

/// The shipped bindings, also the documentation of the format.
const DEFAULTS: &str = include_str!("../../keymap.toml");
const DEFAULTS_NAME: &str = "<built-in keymap.toml>";
/// The `run` value that removes a key's binding.
const UNBIND: &str = "none";

/// Keys bound per context, in the order the files list them.
#[derive(Clone, Debug, PartialEq)]
pub struct Keymap {
    contexts: BTreeMap<Context, Vec<Binding>>,
}

#[derive(Clone, Debug, PartialEq)]
struct Binding {
    key: Key,
    action: Action,
    desc: Option<String>,
}

/// A problem in a keymap file; the entry it names was skipped.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}: {problem}", path.display())]
pub struct KeymapError {
    pub path: PathBuf,
    /// 1-based.
    pub line: usize,
    pub problem: KeymapProblem,
}

/// What was wrong. `at` is `context.key` as written in the file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeymapProblem {
    #[error("not valid TOML: {message}; the whole file was ignored")]
    Syntax { message: String },
    #[error("could not read the file: {message}; the default keys apply")]
    Unreadable { message: String },
    #[error("[{name}]: unknown context (valid: {})", context_names())]
    UnknownContext { name: String },
    #[error("{at}: unknown action `{action}`{}", suggestion_hint(*.suggestion))]
    UnknownAction {
        at: String,
        action: String,
        suggestion: Option<&'static str>,
    },
    #[error("{at}: {reason}")]
    BadKey { at: String, reason: String },
    #[error("{at}: already bound on line {first_line} of this file; this entry is skipped")]
    DuplicateKey { at: String, first_line: usize },
    #[error("{at}: {reason}")]
    BadEntry { at: String, reason: String },
}

fn context_names() -> String {
    Context::ALL.map(Context::name).join(", ")
}

fn suggestion_hint(suggestion: Option<&str>) -> String {
    let list = "the help (F1) lists every action, and `none` unbinds";
    match suggestion {
        Some(name) => format!(" (did you mean `{name}`? {list})"),
        None => format!(" ({list})"),
    }
}

/// One key of a file entry; `action` is `None` for `run = "none"`.
struct Entry {
    context: Context,
    key: Key,
    action: Option<Action>,
    desc: Option<String>,
}

impl Default for Keymap {
    fn default() -> Self {
        Keymap::defaults()
    }
}

impl Keymap {
    /// Where the user's keymap lives: `keymap.toml` beside the config file.
    pub fn user_file(paths: &Paths) -> PathBuf {
        paths.config_file.with_file_name("keymap.toml")
    }

    /// The bindings of the shipped `keymap.toml`.
    pub fn defaults() -> Keymap {
        let mut keymap = Keymap {
            contexts: BTreeMap::new(),
        };
        // The shipped file is tested to parse cleanly; a broken build would only lose
        // the broken entries, never every key.
        let (entries, _errors) = parse(Path::new(DEFAULTS_NAME), DEFAULTS);
        keymap.apply(entries);
        keymap
    }

    /// The defaults with the user's file merged over them. A missing file is no error;
    /// bad entries are reported and skipped.
    pub fn load(user_file: &Path) -> (Keymap, Vec<KeymapError>) {
        match std::fs::read_to_string(user_file) {
            Ok(text) => Keymap::with_overrides(user_file, &text),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                (Keymap::defaults(), Vec::new())
            }
            Err(error) => {
                let problem = KeymapProblem::Unreadable {
                    message: error.to_string(),
                };
                (Keymap::defaults(), vec![file_error(user_file, 1, problem)])
            }
        }
    }

    /// The defaults with `text` (the contents of `path`) merged over them.
    pub fn with_overrides(path: &Path, text: &str) -> (Keymap, Vec<KeymapError>) {
        let mut keymap = Keymap::defaults();
        let (entries, errors) = parse(path, text);
        keymap.apply(entries);
        (keymap, errors)
    }

    /// The action `event` triggers: looked up in each of `contexts` in order (the
    /// focus stack, innermost first), then in [`Context::Global`].
    pub fn action(&self, contexts: &[Context], event: &KeyEvent) -> Option<Action> {
        let key = Key::from_event(event)?;
        contexts
            .iter()
            .chain(std::iter::once(&Context::Global))
            .find_map(|context| {
                self.contexts
                    .get(context)?
                    .iter()
                    .find(|binding| binding.key == key)
                    .map(|binding| binding.action)
            })
    }

    /// The action `event` triggers in `context` alone, without [`Context::Global`].
    pub fn action_in(&self, context: Context, event: &KeyEvent) -> Option<Action> {
        let key = Key::from_event(event)?;
        self.contexts
            .get(&context)?
            .iter()
            .find(|binding| binding.key == key)
            .map(|binding| binding.action)
    }

    /// The label of the first key bound to `action` in `context` (`ctrl-y`).
    pub fn key_for(&self, context: Context, action: Action) -> Option<String> {
        self.bindings(context)
            .into_iter()
            .find_map(|(key, bound)| (bound == action).then_some(key))
    }

    /// Every key bound in `context` with its label (`Ctrl-C`, `↑`), in file order.
    pub fn bindings(&self, context: Context) -> Vec<(String, Action)> {
        self.contexts
            .get(&context)
            .map(|bindings| {
                bindings
                    .iter()
                    .map(|binding| (binding.key.label(), binding.action))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// What `action` does in `context`: the file's `desc` when one is given, else the
    /// action's own description.
    pub fn description(&self, context: Context, action: Action) -> &str {
        self.contexts
            .get(&context)
            .and_then(|bindings| {
                bindings
                    .iter()
                    .filter(|binding| binding.action == action)
                    .find_map(|binding| binding.desc.as_deref())
            })
            .unwrap_or(action.describe())
    }

    /// A later entry for a key replaces the earlier binding in place, so the help keeps
    /// the shipped order.
    fn apply(&mut self, entries: Vec<Entry>) {
        for entry in entries {
            let bindings = self.contexts.entry(entry.context).or_default();
            let existing = bindings.iter().position(|binding| binding.key == entry.key);
            match (entry.action, existing) {
                (Some(action), Some(index)) => {
                    bindings[index] = Binding {
                        key: entry.key,
                        action,
                        desc: entry.desc,
                    };
                }
                (Some(action), None) => bindings.push(Binding {
                    key: entry.key,
                    action,
                    desc: entry.desc,
                }),
                (None, Some(index)) => {
                    bindings.remove(index);
                }
                (None, None) => {}
            }
        }
    }
}

fn file_error(path: &Path, line: usize, problem: KeymapProblem) -> KeymapError {
    KeymapError {
        path: path.to_path_buf(),
        line,
        problem,
    }
}

/// Reads the entries of one file, in file order, with every problem found.
fn parse(path: &Path, text: &str) -> (Vec<Entry>, Vec<KeymapError>) {
    let mut parser = Parser {
        path,
        text,
        entries: Vec::new(),
        errors: Vec::new(),
        first_lines: HashMap::new(),
    };
    match DeTable::parse(text) {
        Ok(root) => parser.contexts(root.get_ref()),
        Err(error) => {
            let line = error.span().map_or(1, |span| parser.line(span.start));
            parser.error(
                line,
                KeymapProblem::Syntax {
                    message: error.message().trim().to_string(),
                },
            );
        }
    }
    parser.errors.sort_by_key(|error| error.line);
    (parser.entries, parser.errors)
}

struct Parser<'a> {
    path: &'a Path,
    text: &'a str,
    entries: Vec<Entry>,
    errors: Vec<KeymapError>,
    /// Where each key was first bound in this file, per context.
    first_lines: HashMap<(Context, Key), usize>,
}

type Item<'i> = Spanned<DeValue<'i>>;

impl Parser<'_> {
    fn line(&self, byte: usize) -> usize {
        let end = byte.min(self.text.len());
        self.text.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    fn error(&mut self, line: usize, problem: KeymapProblem) {
        self.errors.push(file_error(self.path, line, problem));
    }

    fn contexts(&mut self, root: &DeTable<'_>) {
        let mut tables: Vec<_> = root.iter().collect();
        // The table is sorted by name; entries must apply in file order.
        tables.sort_by_key(|(name, _)| name.span().start);
        for (name, value) in tables {
            let line = self.line(name.span().start);
            match Context::from_name(name.get_ref()) {
                Some(context) => self.context(context, line, value),
                None => self.error(
                    line,
                    KeymapProblem::UnknownContext {
                        name: name.get_ref().to_string(),
                    },
                ),
            }
        }
    }

    fn context(&mut self, context: Context, line: usize, value: &Item<'_>) {
        let name = context.name();
        let shape =
            format!("expected a `[{name}]` table holding `keys = [ {{ on = …, run = … }} ]`");
        let Some(table) = value.get_ref().as_table() else {
            return self.bad_entry(line, name.to_string(), shape);
        };
        let mut fields: Vec<_> = table.iter().collect();
        fields.sort_by_key(|(field, _)| field.span().start);
        for (field, value) in fields {
            let line = self.line(field.span().start);
            let array = value.get_ref().as_array();
            match (field.get_ref().as_ref(), array) {
                ("keys", Some(items)) => {
                    for item in items.iter() {
                        self.entry(context, item);
                    }
                }
                ("keys", None) => self.bad_entry(line, format!("{name}.keys"), shape.clone()),
                (other, _) => self.bad_entry(
                    line,
                    format!("{name}.{other}"),
                    format!("unknown field; {shape}"),
                ),
            }
        }
    }

    fn bad_entry(&mut self, line: usize, at: String, reason: String) {
        self.error(line, KeymapProblem::BadEntry { at, reason });
    }

    fn entry(&mut self, context: Context, item: &Item<'_>) {
        let line = self.line(item.span().start);
        let at_context = context.name().to_string();
        let Some(fields) = item.get_ref().as_table() else {
            let reason = "each entry is a table like `{ on = \"ctrl-c\", run = \"quit\" }`";
            return self.bad_entry(line, at_context, reason.to_string());
        };
        let mut on = None;
        let mut run = None;
        let mut desc = None;
        for (field, value) in fields.iter() {
            match field.get_ref().as_ref() {
                "on" => on = Some(value),
                "run" => run = Some(value),
                "desc" => desc = Some(value),
                other => {
                    // Most likely a misspelt `on` or `run`: guessing would bind wrongly.
                    let reason = format!("unknown field `{other}` (valid: on, run, desc)");
                    let line = self.line(field.span().start);
                    return self.bad_entry(line, at_context, reason);
                }
            }
        }
        let Some(keys) = on.and_then(|on| self.key_texts(on)) else {
            let reason = "`on` must be a key or a list of keys, like `on = [\"up\", \"k\"]`";
            return self.bad_entry(line, at_context, reason.to_string());
        };
        let at = format!("{}.{}", context.name(), join_texts(&keys));
        let Some(run) = run else {
            return self.bad_entry(line, at, "`run` (the action to bind) is missing".into());
        };
        let Some(action) = self.action(&at, run) else {
            return;
        };
        let desc = match desc.map(|desc| desc.get_ref().as_str()) {
            None => None,
            Some(Some(text)) => Some(text.to_string()),
            Some(None) => {
                return self.bad_entry(line, at, "`desc` must be a string".into());
            }
        };
        for (text, key_line) in keys {
            self.key(context, &text, key_line, action, desc.clone());
        }
    }

    /// The texts of `on` with their lines; `None` when `on` has the wrong shape.
    fn key_texts(&self, on: &Item<'_>) -> Option<Vec<(String, usize)>> {
        let one = |item: &Item<'_>| {
            let text = item.get_ref().as_str()?;
            Some((text.to_string(), self.line(item.span().start)))
        };
        match on.get_ref() {
            DeValue::String(_) => one(on).map(|key| vec![key]),
            DeValue::Array(items) if !items.is_empty() => items.iter().map(one).collect(),
            _ => None,
        }
    }

    /// `Some(None)` for `run = "none"`; `None` (reported) when the action is unknown.
    fn action(&mut self, at: &str, run: &Item<'_>) -> Option<Option<Action>> {
        let line = self.line(run.span().start);
        let Some(name) = run.get_ref().as_str() else {
            let reason = "`run` must be an action name in quotes".to_string();
            self.bad_entry(line, at.to_string(), reason);
            return None;
        };
        if name == UNBIND {
            return Some(None);
        }
        if let Some(action) = Action::from_name(name) {
            return Some(Some(action));
        }
        let names = Action::ALL
            .iter()
            .map(|action| action.name())
            .chain([UNBIND]);
        let problem = KeymapProblem::UnknownAction {
            at: at.to_string(),
            action: name.to_string(),
            suggestion: closest(name, names),
        };
        self.error(line, problem);
        None
    }

    fn key(
        &mut self,
        context: Context,
        text: &str,
        line: usize,
        action: Option<Action>,
        desc: Option<String>,
    ) {
        let at = format!("{}.{text}", context.name());
        let key = match Key::parse(text) {
            Ok(key) => key,
            Err(reason) => return self.error(line, KeymapProblem::BadKey { at, reason }),
        };
        if let Some(&first_line) = self.first_lines.get(&(context, key)) {
            return self.error(line, KeymapProblem::DuplicateKey { at, first_line });
        }
        self.first_lines.insert((context, key), line);
        self.entries.push(Entry {
            context,
            key,
            action,
            desc,
        });
    }
}

fn join_texts(keys: &[(String, usize)]) -> String {
    keys.iter()
        .map(|(text, _)| text.as_str())
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests;
