//! Peer mode: playing a script written in duet's tool names to another agent (Codex
//! CLI, Claude Code), for the side-by-side bench (`bench/peers`).
//!
//! Owns: recognising which agent sent a request from the tools it offers
//! ([`Dialect::from_tools`]), mapping each scripted duet call (`read`, `shell`,
//! `edit`) to that agent's own tool and arguments ([`map_call`], [`map_turn`]), and
//! telling a side request (title generation, token counting, a probe) from a step of the
//! task ([`classify`]).
//! Does not own: rendering the mapped turn (the server's renderers do that; a call to a
//! tool the request declared `"type": "custom"` goes out as a Responses custom tool call)
//! or deciding what the task is (the script does).
//! Invariant: a mapped call has the effect the duet call would have in the same
//! workspace: read prints the file, shell runs the same command, edit replaces the same
//! text once.

use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::script::{ScriptUsage, Step, StopReason, StreamTurn};

/// The tool dialect of the agent that sent a request, read from its `tools`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// duet itself: calls go out as scripted.
    Duet,
    /// Claude Code: `Read`, `Bash`, `Edit`, with absolute `file_path`s.
    ClaudeCode,
    /// Codex CLI: a shell tool for reading and running, `apply_patch` for edits.
    Codex {
        shell: CodexShell,
        patch: CodexPatch,
    },
}

/// Which of Codex's shell tools the request offers (it depends on the model slug).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodexShell {
    /// `exec_command { cmd }` (the unified exec tool).
    ExecCommand,
    /// `shell_command { command: "..." }`.
    ShellCommand,
    /// `shell { command: ["bash", "-lc", "..."] }`.
    Shell,
}

/// How Codex's `apply_patch` takes its patch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodexPatch {
    /// A custom (freeform) tool: the call's input is the patch text itself.
    Freeform,
    /// A function tool: `{"input": "<patch>"}`.
    Function,
}

/// Why a scripted call could not be mapped to the peer's tools.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MapError {
    #[error("the request's tools ({0}) match no known agent (duet, Claude Code or Codex)")]
    UnknownAgent(String),
    #[error("scripted tool `{0}` has no mapping to a peer's tools (mapped: read, shell, edit)")]
    UnmappedTool(String),
    #[error("scripted `{tool}` arguments are not what duet's tool takes: {reason}")]
    BadArguments { tool: String, reason: String },
}

/// A tool as a request declares it: its name and whether it is freeform.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OfferedTool {
    pub name: String,
    /// Declared `"type": "custom"` (Responses): called with free text, not JSON.
    pub custom: bool,
}

/// The tools `body` offers, on any wire (`name` at the top level, or under `function`
/// for chat completions).
pub fn offered_tools(body: &Value) -> Vec<OfferedTool> {
    let Some(tools) = body.get("tools").and_then(Value::as_array) else {
        return Vec::new();
    };
    tools
        .iter()
        .filter_map(|tool| {
            let name = tool
                .get("name")
                .or_else(|| tool.get("function").and_then(|f| f.get("name")))
                .and_then(Value::as_str)?;
            Some(OfferedTool {
                name: name.to_owned(),
                custom: tool.get("type").and_then(Value::as_str) == Some("custom"),
            })
        })
        .collect()
}

impl Dialect {
    /// The dialect of an agent offering `tools`.
    pub fn from_tools(tools: &[OfferedTool]) -> Result<Dialect, MapError> {
        let find = |name: &str| tools.iter().find(|tool| tool.name == name);
        let has = |name: &str| find(name).is_some();
        if has("read") && has("shell") && has("edit") {
            return Ok(Dialect::Duet);
        }
        if has("Read") && has("Bash") && has("Edit") {
            return Ok(Dialect::ClaudeCode);
        }
        let shell = if has("exec_command") {
            Some(CodexShell::ExecCommand)
        } else if has("shell_command") {
            Some(CodexShell::ShellCommand)
        } else if has("shell") {
            Some(CodexShell::Shell)
        } else {
            None
        };
        if let (Some(shell), Some(patch)) = (shell, find("apply_patch")) {
            let patch = if patch.custom {
                CodexPatch::Freeform
            } else {
                CodexPatch::Function
            };
            return Ok(Dialect::Codex { shell, patch });
        }
        let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
        Err(MapError::UnknownAgent(names.join(", ")))
    }
}

/// A call in the peer's own terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MappedCall {
    pub name: String,
    /// JSON text for a function tool, the raw input for a freeform one.
    pub args: String,
}

#[derive(Deserialize)]
struct ReadArgs {
    path: String,
}

#[derive(Deserialize)]
struct ShellArgs {
    command: String,
}

#[derive(Deserialize)]
struct EditArgs {
    path: String,
    old_string: String,
    new_string: String,
}

fn parse<T: for<'de> Deserialize<'de>>(tool: &str, args: &str) -> Result<T, MapError> {
    serde_json::from_str(args).map_err(|err| MapError::BadArguments {
        tool: tool.to_owned(),
        reason: err.to_string(),
    })
}

/// Maps one scripted duet call to `dialect`; relative paths resolve against `workdir`
/// (the agent's working directory) where the peer wants absolute ones.
pub fn map_call(
    dialect: &Dialect,
    name: &str,
    args: &str,
    workdir: &Path,
) -> Result<MappedCall, MapError> {
    let call = |name: &str, args: Value| MappedCall {
        name: name.to_owned(),
        args: args.to_string(),
    };
    match dialect {
        Dialect::Duet => Ok(MappedCall {
            name: name.to_owned(),
            args: args.to_owned(),
        }),
        Dialect::ClaudeCode => match name {
            "read" => {
                let read: ReadArgs = parse(name, args)?;
                Ok(call(
                    "Read",
                    json!({ "file_path": absolute(workdir, &read.path) }),
                ))
            }
            "shell" => {
                let shell: ShellArgs = parse(name, args)?;
                let args =
                    json!({ "command": shell.command, "description": "Run the scripted command" });
                Ok(call("Bash", args))
            }
            "edit" => {
                let edit: EditArgs = parse(name, args)?;
                let args = json!({
                    "file_path": absolute(workdir, &edit.path),
                    "old_string": edit.old_string,
                    "new_string": edit.new_string,
                });
                Ok(call("Edit", args))
            }
            other => Err(MapError::UnmappedTool(other.to_owned())),
        },
        Dialect::Codex { shell, patch } => match name {
            "read" => {
                let read: ReadArgs = parse(name, args)?;
                Ok(codex_shell(
                    *shell,
                    &format!("cat {}", shell_quote(&read.path)),
                ))
            }
            "shell" => {
                let command: ShellArgs = parse(name, args)?;
                Ok(codex_shell(*shell, &command.command))
            }
            "edit" => {
                let edit: EditArgs = parse(name, args)?;
                let text = update_patch(&edit.path, &edit.old_string, &edit.new_string);
                Ok(match patch {
                    CodexPatch::Freeform => MappedCall {
                        name: "apply_patch".into(),
                        args: text,
                    },
                    CodexPatch::Function => call("apply_patch", json!({ "input": text })),
                })
            }
            other => Err(MapError::UnmappedTool(other.to_owned())),
        },
    }
}

/// `turn` with every tool call mapped to `dialect`; everything else as scripted.
pub fn map_turn(
    turn: &StreamTurn,
    dialect: &Dialect,
    workdir: &Path,
) -> Result<StreamTurn, MapError> {
    let steps = turn
        .steps
        .iter()
        .map(|step| match step {
            Step::Tool {
                name,
                id,
                args,
                chunk,
                cut_after_chunks,
            } => {
                let mapped = map_call(dialect, name, args, workdir)?;
                Ok(Step::Tool {
                    name: mapped.name,
                    id: id.clone(),
                    args: mapped.args,
                    chunk: *chunk,
                    cut_after_chunks: *cut_after_chunks,
                })
            }
            other => Ok(other.clone()),
        })
        .collect::<Result<_, MapError>>()?;
    Ok(StreamTurn {
        steps,
        ..turn.clone()
    })
}

fn codex_shell(shell: CodexShell, command: &str) -> MappedCall {
    let (name, args) = match shell {
        CodexShell::ExecCommand => ("exec_command", json!({ "cmd": command })),
        CodexShell::ShellCommand => ("shell_command", json!({ "command": command })),
        CodexShell::Shell => ("shell", json!({ "command": ["bash", "-lc", command] })),
    };
    MappedCall {
        name: name.to_owned(),
        args: args.to_string(),
    }
}

/// A Codex patch replacing `old` (whole lines) with `new` in `path`.
fn update_patch(path: &str, old: &str, new: &str) -> String {
    let mut patch = format!("*** Begin Patch\n*** Update File: {path}\n@@\n");
    for line in old.lines() {
        patch.push_str(&format!("-{line}\n"));
    }
    for line in new.lines() {
        patch.push_str(&format!("+{line}\n"));
    }
    patch.push_str("*** End Patch\n");
    patch
}

fn absolute(workdir: &Path, path: &str) -> String {
    workdir.join(path).display().to_string()
}

/// `text` as one single-quoted shell word.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// What a request to a model endpoint is, in peer mode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// A step of the task, from an agent of this dialect.
    Step(Dialect),
    /// A side request, answered without consuming a step, and why it is one.
    Side(&'static str),
}

/// Tells a step of the task from a side request. A model request that does not offer
/// the tools the task needs cannot be one of its steps: agents send those for titles,
/// summaries and quota checks (Codex asks for a title offering only `apply_patch`).
pub fn classify(path: &str, body: &Value) -> Request {
    if path.ends_with("/count_tokens") {
        return Request::Side("token count");
    }
    let tools = offered_tools(body);
    if tools.is_empty() {
        return Request::Side("no tools offered");
    }
    match Dialect::from_tools(&tools) {
        Ok(dialect) => Request::Step(dialect),
        Err(_) => Request::Side("not the task's tools"),
    }
}

/// A turn that answers with `text` alone (a side request's answer).
pub fn text_turn(text: &str) -> StreamTurn {
    StreamTurn {
        steps: vec![Step::Text {
            text: text.to_owned(),
            chunk: None,
        }],
        stop: StopReason::EndTurn,
        usage: ScriptUsage::default(),
        cut_after_blocks: None,
        terminal_event: true,
        pace: None,
    }
}

/// A benign answer to the token-counting endpoint.
pub fn count_tokens_body(body: &Value) -> Value {
    // A rough, stable estimate: a token per four bytes of the request.
    let tokens = body.to_string().len().div_ceil(4);
    json!({ "input_tokens": tokens })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use pretty_assertions::assert_eq;

    use super::*;
    use crate::common::script::{Script, Turn};

    /// The bench's task, as `bench/peers` writes it (duet's tool names).
    const TASK: &str = r#"
[[turn]]
blocks = [{ text = "Reading calc.py." }, { tool = "read", args = '{"path": "calc.py"}' }]
[[turn]]
blocks = [{ tool = "shell", args = '{"command": "echo hello-from-shell"}' }]
[[turn]]
blocks = [{ tool = "edit", args = '{"path": "calc.py", "old_string": "    return a + b\n", "new_string": "    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"}' }]
[[turn]]
blocks = [{ text = "Added sub." }]
"#;

    fn tools(names: &[(&str, bool)]) -> Vec<OfferedTool> {
        names
            .iter()
            .map(|(name, custom)| OfferedTool {
                name: (*name).to_owned(),
                custom: *custom,
            })
            .collect()
    }

    fn claude_code() -> Dialect {
        Dialect::ClaudeCode
    }

    fn codex() -> Dialect {
        Dialect::Codex {
            shell: CodexShell::ExecCommand,
            patch: CodexPatch::Freeform,
        }
    }

    /// The (name, args) of every tool call of the task, mapped to `dialect`.
    fn mapped_task(dialect: &Dialect) -> Vec<(String, Value)> {
        let script = Script::from_toml(TASK).unwrap();
        let mut calls = Vec::new();
        for turn in script.turns() {
            let Turn::Stream(turn) = turn else {
                panic!("the task has only streamed turns")
            };
            let mapped = map_turn(turn, dialect, &PathBuf::from("/work/repo")).unwrap();
            for step in mapped.steps {
                if let Step::Tool { name, args, .. } = step {
                    let args = serde_json::from_str(&args).unwrap_or(Value::String(args));
                    calls.push((name, args));
                }
            }
        }
        calls
    }

    #[test]
    fn the_dialect_is_read_from_the_tools_offered() {
        let duet = tools(&[("read", false), ("shell", false), ("edit", false)]);
        assert_eq!(Dialect::from_tools(&duet), Ok(Dialect::Duet));
        let claude = tools(&[
            ("Agent", false),
            ("Bash", false),
            ("Edit", false),
            ("Read", false),
        ]);
        assert_eq!(Dialect::from_tools(&claude), Ok(Dialect::ClaudeCode));
        let codex_tools = tools(&[("exec_command", false), ("apply_patch", true)]);
        assert_eq!(Dialect::from_tools(&codex_tools), Ok(codex()));
        let older_codex = tools(&[("shell", false), ("apply_patch", false)]);
        assert_eq!(
            Dialect::from_tools(&older_codex),
            Ok(Dialect::Codex {
                shell: CodexShell::Shell,
                patch: CodexPatch::Function
            })
        );
        assert_eq!(
            Dialect::from_tools(&tools(&[("search", false)])),
            Err(MapError::UnknownAgent("search".into()))
        );
    }

    #[test]
    fn offered_tools_are_read_on_every_wire() {
        let responses = json!({ "tools": [
            { "type": "function", "name": "exec_command", "parameters": {} },
            { "type": "custom", "name": "apply_patch" },
            { "type": "web_search" },
        ]});
        assert_eq!(
            offered_tools(&responses),
            tools(&[("exec_command", false), ("apply_patch", true)])
        );
        let chat = json!({ "tools": [{ "type": "function", "function": { "name": "read" } }] });
        assert_eq!(offered_tools(&chat), tools(&[("read", false)]));
        assert_eq!(offered_tools(&json!({ "messages": [] })), Vec::new());
    }

    #[test]
    fn the_task_maps_to_claude_codes_tools() {
        let new = "    return a + b\n\n\ndef sub(a, b):\n    return a - b\n";
        assert_eq!(
            mapped_task(&claude_code()),
            vec![
                ("Read".into(), json!({ "file_path": "/work/repo/calc.py" })),
                (
                    "Bash".into(),
                    json!({ "command": "echo hello-from-shell", "description": "Run the scripted command" })
                ),
                (
                    "Edit".into(),
                    json!({
                        "file_path": "/work/repo/calc.py",
                        "old_string": "    return a + b\n",
                        "new_string": new,
                    })
                ),
            ]
        );
    }

    #[test]
    fn the_task_maps_to_codexs_tools_with_a_freeform_patch() {
        let patch = "*** Begin Patch\n*** Update File: calc.py\n@@\n-    return a + b\n\
                     +    return a + b\n+\n+\n+def sub(a, b):\n+    return a - b\n*** End Patch\n";
        assert_eq!(
            mapped_task(&codex()),
            vec![
                ("exec_command".into(), json!({ "cmd": "cat 'calc.py'" })),
                (
                    "exec_command".into(),
                    json!({ "cmd": "echo hello-from-shell" })
                ),
                ("apply_patch".into(), Value::String(patch.into())),
            ]
        );
    }

    #[test]
    fn codexs_other_shell_and_patch_tools_take_their_own_arguments() {
        let dialect = Dialect::Codex {
            shell: CodexShell::Shell,
            patch: CodexPatch::Function,
        };
        let workdir = PathBuf::from("/w");
        let shell = map_call(&dialect, "shell", r#"{"command": "ls"}"#, &workdir).unwrap();
        assert_eq!(shell.name, "shell");
        assert_eq!(
            serde_json::from_str::<Value>(&shell.args).unwrap(),
            json!({ "command": ["bash", "-lc", "ls"] })
        );
        let shell_command = Dialect::Codex {
            shell: CodexShell::ShellCommand,
            patch: CodexPatch::Function,
        };
        let read = map_call(&shell_command, "read", r#"{"path": "it's.txt"}"#, &workdir).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&read.args).unwrap(),
            json!({ "command": r"cat 'it'\''s.txt'" })
        );
        let edit = r#"{"path": "a.py", "old_string": "x\n", "new_string": "y\n"}"#;
        let patch = map_call(&dialect, "edit", edit, &workdir).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&patch.args).unwrap(),
            json!({ "input": "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** End Patch\n" })
        );
    }

    #[test]
    fn duet_gets_the_script_unchanged() {
        let calls = mapped_task(&Dialect::Duet);
        let names: Vec<&str> = calls.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["read", "shell", "edit"]);
        assert_eq!(calls[0].1, json!({ "path": "calc.py" }));
    }

    #[test]
    fn unmapped_tools_and_bad_arguments_are_errors() {
        let workdir = PathBuf::from("/w");
        assert_eq!(
            map_call(&claude_code(), "glob", "{}", &workdir),
            Err(MapError::UnmappedTool("glob".into()))
        );
        assert!(matches!(
            map_call(&codex(), "read", r#"{"file": "a"}"#, &workdir),
            Err(MapError::BadArguments { .. })
        ));
    }

    #[test]
    fn requests_without_the_tasks_tools_and_token_counts_are_side_requests() {
        let claude =
            json!({ "tools": [{ "name": "Read" }, { "name": "Bash" }, { "name": "Edit" }] });
        assert_eq!(
            classify("/v1/messages", &claude),
            Request::Step(Dialect::ClaudeCode)
        );
        assert_eq!(
            classify("/v1/messages", &json!({ "messages": [] })),
            Request::Side("no tools offered")
        );
        assert_eq!(
            classify("/v1/messages", &json!({ "tools": [] })),
            Request::Side("no tools offered")
        );
        let title = json!({ "tools": [{ "type": "custom", "name": "apply_patch" }] });
        assert_eq!(
            classify("/v1/responses", &title),
            Request::Side("not the task's tools")
        );
        assert_eq!(
            classify("/v1/messages/count_tokens", &claude),
            Request::Side("token count")
        );
    }
}
