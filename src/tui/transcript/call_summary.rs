//! One line that says what a tool call does: `read src/main.rs:120-200`,
//! `grep "fn main" in src/`, `shell $ cargo test`.
//!
//! Owns: the per-tool summaries of the built-in tools' arguments. Does not own: the
//! tools' schemas (this reads the JSON leniently and falls back to compact JSON).
//! Invariant: always returns a single line, whatever the model wrote, with terminal
//! control in it neutralised ([`crate::terminal_text::sanitize`]: an escape sequence
//! becomes one `␛`, its payload dropped).

use serde_json::{Map, Value};

use crate::terminal_text::sanitize;

/// The longest argument text kept before the card's own truncation takes over.
const MAX_CHARS: usize = 200;

/// Summarises a call of `name` with `arguments` (raw JSON as the model wrote it).
pub fn summarize(name: &str, arguments: &str) -> String {
    let summary = match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(args)) => known(name, &args).unwrap_or_else(|| compact(name, &args)),
        Ok(other) => format!("{name} {other}"),
        Err(_) => format!(
            "{name} {}",
            arguments.split_whitespace().collect::<Vec<_>>().join(" ")
        ),
    };
    clip(&sanitize(&summary))
}

fn known(name: &str, args: &Map<String, Value>) -> Option<String> {
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    let number = |key: &str| args.get(key).and_then(Value::as_u64);
    let flag = |key: &str| args.get(key).and_then(Value::as_bool).unwrap_or(false);
    let summary = match name {
        "read" => format!(
            "read {}{}",
            text("path")?,
            line_range(number("offset"), number("limit"))
        ),
        "write" => format!("write {}", text("path")?),
        "edit" => {
            let all = if flag("replace_all") {
                " (every occurrence)"
            } else {
                ""
            };
            format!("edit {}{all}", text("path")?)
        }
        "grep" => {
            let mut line = format!("grep {}", quoted(text("pattern")?));
            if let Some(path) = text("path") {
                line.push_str(&format!(" in {path}"));
            }
            if let Some(glob) = text("glob") {
                line.push_str(&format!(" ({glob})"));
            }
            line
        }
        "glob" => match text("path") {
            Some(path) => format!("glob {} in {path}", text("pattern")?),
            None => format!("glob {}", text("pattern")?),
        },
        "explore" => format!("explore {}", quoted(text("question")?)),
        "shell" => {
            let command = text("command")?;
            let mut lines = command.lines().filter(|line| !line.trim().is_empty());
            let first = lines.next().unwrap_or_default().trim();
            let more = lines.count();
            let isolated = if flag("isolated") { " (isolated)" } else { "" };
            let more = if more > 0 {
                format!(" (+{more} lines)")
            } else {
                String::new()
            };
            format!("shell{isolated} $ {first}{more}")
        }
        _ => return None,
    };
    Some(summary)
}

/// `:120-200` for offset 120 and limit 81; nothing when the whole file is read.
fn line_range(offset: Option<u64>, limit: Option<u64>) -> String {
    match (offset, limit) {
        (None, None) => String::new(),
        (Some(start), None) => format!(":{start}-"),
        (start, Some(limit)) => {
            let start = start.unwrap_or(1).max(1);
            format!(":{start}-{}", start + limit.saturating_sub(1))
        }
    }
}

fn quoted(pattern: &str) -> String {
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
    match one_line.char_indices().nth(MAX_CHARS) {
        Some((cut, _)) => format!("{}…", &one_line[..cut]),
        None => one_line,
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

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
            (
                "explore",
                r#"{"question":"Where is \"auth\" checked?"}"#,
                "explore \"Where is \\\"auth\\\" checked?\"",
            ),
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
        assert!(summary.chars().count() <= MAX_CHARS + 1);
        assert!(summary.ends_with('…'));
        assert_eq!(summarize("write", r#"{"path":"a\tb"}"#), "write a b");
    }
}
