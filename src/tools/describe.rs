//! What a tool call does, in one readable line and a few facts, decided once by the
//! tool that owns the arguments: `read src/main.rs:120-200`, `grep "fn main" in src/`,
//! `shell $ cargo test`, with the paths it names and the command it runs.
//!
//! Owns: [`CallInfo`], reading a call's raw JSON leniently, the fallback for tools
//! without a description of their own (compact JSON), and the line's bounds. Does not
//! own: each tool's wording (its [`super::Tool::describe`]) or how front ends show it.
//! Invariant: `summary` is always one line of at most [`MAX_SUMMARY_CHARS`] characters
//! (plus an ellipsis), with terminal control neutralised
//! ([`crate::terminal_text::sanitize`]), whatever the model wrote; every front end
//! shows this value and none decodes arguments itself.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Tool;
use crate::terminal_text::sanitize;

/// The longest summary kept before front ends' own truncation takes over.
pub const MAX_SUMMARY_CHARS: usize = 200;

/// A call as people read it, carried in the event that announces it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CallInfo {
    /// One line: `read src/main.rs:120-200`, `shell $ cargo test (+2 lines)`.
    pub summary: String,
    /// The paths the call names, as the model wrote them (the file a write changes
    /// first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// The command line a shell call runs, whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

impl CallInfo {
    /// A call summarised by `summary`, naming `paths`.
    pub fn new(summary: String, paths: Vec<String>) -> Self {
        Self {
            summary,
            paths,
            command: None,
        }
    }

    /// The file the call works on, if it names one.
    pub fn path(&self) -> Option<&str> {
        self.paths.first().map(String::as_str)
    }
}

/// Describes a call of `name` with `arguments` (raw JSON as the model wrote it) by
/// `tool`, when there is such a tool and it knows the arguments' shape; otherwise by
/// the arguments themselves.
pub fn describe_call(tool: Option<&dyn Tool>, name: &str, arguments: &str) -> CallInfo {
    let mut info = match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(args)) => tool
            .and_then(|tool| tool.describe(&args))
            .unwrap_or_else(|| CallInfo::new(compact(name, &args), Vec::new())),
        Ok(other) => CallInfo::new(format!("{name} {other}"), Vec::new()),
        Err(_) => CallInfo::new(
            format!(
                "{name} {}",
                arguments.split_whitespace().collect::<Vec<_>>().join(" ")
            ),
            Vec::new(),
        ),
    };
    info.summary = clip(&sanitize(&info.summary));
    info
}

/// The string field `key` of `args`.
pub(crate) fn text<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

/// The boolean field `key` of `args`, false when absent.
pub(crate) fn flag(args: &Map<String, Value>, key: &str) -> bool {
    args.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// `"pattern"`, quotes inside escaped.
pub(crate) fn quoted(pattern: &str) -> String {
    format!("\"{}\"", pattern.replace('"', "\\\""))
}

/// `name {"a":1}`, whitespace inside strings kept as JSON escapes.
fn compact(name: &str, args: &Map<String, Value>) -> String {
    format!("{name} {}", Value::Object(args.clone()))
}

fn clip(text: &str) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    match one_line.char_indices().nth(MAX_SUMMARY_CHARS) {
        Some((cut, _)) => format!("{}…", &one_line[..cut]),
        None => one_line,
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::super::Registry;

    fn summarize(name: &str, arguments: &str) -> String {
        Registry::core().describe(name, arguments).summary
    }

    #[test]
    fn built_in_tools_read_naturally() {
        let cases = [
            (
                "read",
                r#"{"path":"src/main.rs","offset":120,"limit":81}"#,
                "read src/main.rs:120-200",
            ),
            ("read", r#"{"path":"src/main.rs"}"#, "read src/main.rs"),
            ("read", r#"{"path":"a","limit":10}"#, "read a:1-10"),
            (
                "grep",
                r#"{"pattern":"fn main","path":"src/"}"#,
                "grep \"fn main\" in src/",
            ),
            (
                "grep",
                r#"{"pattern":"x","glob":"*.rs"}"#,
                "grep \"x\" (*.rs)",
            ),
            ("glob", r#"{"pattern":"**/*.rs"}"#, "glob **/*.rs"),
            ("shell", r#"{"command":"cargo test"}"#, "shell $ cargo test"),
            (
                "shell",
                r#"{"command":"cd x\nmake\n"}"#,
                "shell $ cd x (+1 lines)",
            ),
            (
                "shell",
                r#"{"command":"ls","isolated":true}"#,
                "shell (isolated) $ ls",
            ),
            (
                "edit",
                r#"{"path":"src/lib.rs","old_string":"a","new_string":"b"}"#,
                "edit src/lib.rs",
            ),
            (
                "write",
                r#"{"path":"new.txt","content":"hi\n"}"#,
                "write new.txt",
            ),
        ];
        for (name, args, expected) in cases {
            assert_eq!(summarize(name, args), expected, "{name} {args}");
        }
    }

    #[test]
    fn paths_and_commands_come_with_the_summary() {
        let registry = Registry::core();
        let edit = registry.describe("edit", r#"{"path":"a.py","old_string":"x"}"#);
        assert_eq!(edit.path(), Some("a.py"));
        let shell = registry.describe("shell", r#"{"command":"cd x\nmake"}"#);
        assert_eq!(shell.command.as_deref(), Some("cd x\nmake"));
        assert_eq!(shell.paths, Vec::<String>::new());
        let grep = registry.describe("grep", r#"{"pattern":"x","path":"src"}"#);
        assert_eq!(grep.paths, ["src"]);
    }

    #[test]
    fn unknown_or_malformed_calls_fall_back_to_compact_json() {
        assert_eq!(
            summarize("fetch", "{\"url\":\n \"x\"}"),
            r#"fetch {"url":"x"}"#
        );
        assert_eq!(summarize("read", r#"{"file":"a"}"#), r#"read {"file":"a"}"#);
        assert_eq!(
            summarize("shell", "{not json\n at all"),
            "shell {not json at all"
        );
        assert_eq!(summarize("x", "[1]"), "x [1]");
    }

    #[test]
    fn summaries_are_one_bounded_line() {
        let long = format!(r#"{{"command":"echo {}"}}"#, "y".repeat(500));
        let summary = summarize("shell", &long);
        assert!(summary.chars().count() <= super::MAX_SUMMARY_CHARS + 1);
        assert!(summary.ends_with('…'));
        assert_eq!(summarize("write", r#"{"path":"a\tb"}"#), "write a b");
        assert_eq!(
            summarize("write", r#"{"path":"a\u001b]52;c;x\u0007"}"#),
            "write a␛"
        );
    }
}
