//! The model's tools: one file per tool, one trait, one registry.
//!
//! Owns: argument schemas, argument checking with messages written for the model, and
//! each tool's behaviour inside the workspace.
//! Does not own: scheduling (the agent decides what runs in parallel from
//! [`Tool::concurrency`]) or permission (tools ask [`crate::policy::Approver`] before
//! any side effect).
//! Invariant: every path a tool touches has been resolved by [`Workspace::resolve`], and
//! is then used through the workspace's root handle ([`Workspace::place`]) with no link
//! followed, so nothing outside the workspace root is read or written, even when the
//! tree changes between the check and the use.

pub(crate) mod describe;
mod edit;
mod files;
mod glob;
mod grep;
mod keyboard;
mod ledger;
mod read;
mod shell;
mod shell_jobs;
#[cfg(test)]
pub(crate) mod test_support;
mod text;
pub mod truncate;
mod watch;
mod workspace;
mod write;

use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::lint::Linter;
use crate::policy::{Action, ApprovalRequest, Approver, Decision};
use crate::provider::ToolSpec;
use crate::shell::Shell;

pub use describe::{CallInfo, describe_call};
pub use keyboard::{AttachedKeyboard, Keyboards};
pub use ledger::{FileStamp, ReadLedger};
pub use workspace::{PathError, Workspace};

/// Whether a tool may run beside other calls of the same batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Concurrency {
    /// Only reads; runs in parallel with other shared calls.
    Shared,
    /// Changes state; runs alone, in the order the model gave.
    Exclusive,
}

/// What a tool produced.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolOutput {
    /// The text the model receives.
    pub content: String,
    /// One line for people (transcript, tool card), e.g. "read 120 of 4,000 lines".
    pub summary: String,
    /// What the checks after a write found, as the model reads it at the end of
    /// `content` (its first line is the verdict: `lint: clean (python syntax)`); `None`
    /// when no check ran or applies.
    pub checks: Option<String>,
}

/// Why a tool call failed. Every variant goes back to the model as an error result; the
/// message must tell it what to do differently.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The call itself is wrong: missing or mistyped arguments, an ambiguous edit.
    #[error("{0}")]
    InvalidArguments(String),
    /// The call is well-formed but not allowed: outside the workspace, binary file,
    /// rejected by policy, overwrite without a read.
    #[error("{0}")]
    Refused(String),
    /// The operation was attempted and failed (I/O error, disk full).
    #[error("{0}")]
    Failed(String),
}

/// Something a running call shows while it runs (shell output as it arrives), for
/// front ends; the model gets the tool's final result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputChunk {
    pub call_id: String,
    pub live: Live,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Live {
    /// Output lines.
    Output(String),
    /// The call's command waits for keyboard input: `program` reads the terminal,
    /// `line` is the unfinished last line (its prompt). New output ends the wait.
    WaitingForInput { program: String, line: String },
}

/// Where a tool sends live output. Sending never blocks; without a receiver (tests,
/// headless runs that do not show it) the output is dropped.
#[derive(Clone, Debug, Default)]
pub struct OutputSink {
    sender: Option<mpsc::UnboundedSender<OutputChunk>>,
}

impl OutputSink {
    pub fn new(sender: mpsc::UnboundedSender<OutputChunk>) -> Self {
        Self {
            sender: Some(sender),
        }
    }

    pub fn send(&self, call_id: &str, text: String) {
        self.show(call_id, Live::Output(text));
    }

    /// Shows that the call's command waits for keyboard input.
    pub fn waiting_for_input(&self, call_id: &str, program: String, line: String) {
        self.show(call_id, Live::WaitingForInput { program, line });
    }

    fn show(&self, call_id: &str, live: Live) {
        if let Some(sender) = &self.sender {
            // A closed receiver means nobody is watching; the result still carries it all.
            let _ = sender.send(OutputChunk {
                call_id: call_id.to_string(),
                live,
            });
        }
    }
}

/// What every tool call can use.
#[derive(Clone)]
pub struct ToolCtx {
    pub workspace: Arc<Workspace>,
    pub ledger: Arc<ReadLedger>,
    pub approver: Arc<dyn Approver>,
    /// The session's persistent shell.
    pub shell: Arc<Shell>,
    /// The checks run after every write and edit.
    pub linter: Arc<Linter>,
    pub output: OutputSink,
    /// Where the user's keys for running commands arrive, by call id.
    pub keyboards: Keyboards,
    /// The id of the call being run, for approvals and output files.
    pub call_id: String,
    /// Cancelled when the user interrupts; long-running tools should stop promptly.
    pub cancel: CancellationToken,
}

impl ToolCtx {
    /// Asks the approver about `action` for this call. `None` when the user interrupted
    /// while the decision was pending: the caller must then do nothing.
    pub async fn approve(&self, action: Action) -> Option<Decision> {
        let request = ApprovalRequest {
            call_id: self.call_id.clone(),
            action,
        };
        tokio::select! {
            decision = self.approver.decide(request) => {
                // The decision may arrive in the same instant as an interrupt; stop wins.
                (!self.cancel.is_cancelled()).then_some(decision)
            }
            () = self.cancel.cancelled() => None,
        }
    }
}

/// A tool the model can call.
#[async_trait::async_trait]
pub trait Tool: Send + Sync {
    /// Built-in tools return a constant; tools from MCP servers are named at run time.
    fn name(&self) -> &str;

    /// What the model reads to decide when and how to call the tool.
    fn description(&self) -> &str;

    /// JSON Schema of the arguments object.
    fn schema(&self) -> Value;

    /// Defaults to [`Concurrency::Exclusive`]: a tool must opt in to running in parallel.
    fn concurrency(&self) -> Concurrency {
        Concurrency::Exclusive
    }

    /// Whether a successful call changes files the way the post-batch project checks
    /// (`cargo check`, `tsc --noEmit`) care about. Defaults to false.
    fn edits_files(&self) -> bool {
        false
    }

    /// What a call with `args` does, for people: its one-line summary and the paths
    /// and command it names. `None` (the default) when the arguments are not the shape
    /// the tool knows; the call is then shown as compact JSON ([`describe_call`]).
    fn describe(&self, args: &serde_json::Map<String, Value>) -> Option<CallInfo> {
        let _ = args;
        None
    }

    async fn run(&self, args: Value, ctx: &ToolCtx) -> Result<ToolOutput, ToolError>;
}

/// The set of tools offered to the model.
#[derive(Clone)]
pub struct Registry {
    tools: Vec<Arc<dyn Tool>>,
}

impl Registry {
    /// The core tools: read, write, edit, glob, grep, shell, shell_jobs.
    pub fn core() -> Self {
        Self {
            tools: vec![
                Arc::new(read::Read),
                Arc::new(write::Write),
                Arc::new(edit::Edit),
                Arc::new(glob::Glob),
                Arc::new(grep::Grep),
                Arc::new(shell::ShellTool),
                Arc::new(shell_jobs::ShellJobs),
            ],
        }
    }

    /// The tools that only look: read, glob, grep. For sub-loops that must not change
    /// anything or run commands.
    pub fn read_only() -> Self {
        Self {
            tools: vec![
                Arc::new(read::Read),
                Arc::new(glob::Glob),
                Arc::new(grep::Grep),
            ],
        }
    }

    /// The same tools plus `tool`, offered last. A tool whose name is taken replaces
    /// the one it shadows, so names stay unique.
    pub fn with(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.retain(|known| known.name() != tool.name());
        self.tools.push(tool);
        self
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.iter().find(|tool| tool.name() == name).cloned()
    }

    /// What a call of `name` with `arguments` (raw JSON) does, as its tool describes
    /// it ([`describe_call`]).
    pub fn describe(&self, name: &str, arguments: &str) -> CallInfo {
        describe_call(self.get(name).as_deref(), name, arguments)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.tools.iter().map(|tool| tool.name())
    }

    /// The tool definitions sent to the model, in a fixed order so the prompt prefix
    /// stays byte-identical between calls (prompt caching depends on it).
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .map(|tool| ToolSpec {
                name: tool.name().to_string(),
                description: tool.description().to_string(),
                input_schema: tool.schema(),
            })
            .collect()
    }

    /// Checks a streamed call before it is scheduled: the tool must exist and the
    /// arguments must be a JSON object. Schema-level checks happen in [`Tool::run`].
    pub fn prepare(
        &self,
        name: &str,
        arguments: &str,
    ) -> Result<(Arc<dyn Tool>, Value), ToolError> {
        let tool = self.get(name).ok_or_else(|| {
            let known: Vec<_> = self.names().collect();
            ToolError::InvalidArguments(format!(
                "there is no tool named `{name}`. Available tools: {}.",
                known.join(", ")
            ))
        })?;
        let args = parse_arguments_json(name, arguments)?;
        Ok((tool, args))
    }
}

fn parse_arguments_json(tool: &str, arguments: &str) -> Result<Value, ToolError> {
    // Some servers send no argument text at all for a call without parameters.
    let text = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(other) => Err(ToolError::InvalidArguments(format!(
            "the arguments to `{tool}` must be a JSON object, got {}. Call it again with an \
             object matching its schema.",
            json_kind(&other)
        ))),
        Err(error) => Err(ToolError::InvalidArguments(format!(
            "the arguments to `{tool}` are not valid JSON ({error}). You sent: {}. Call it \
             again with a JSON object matching its schema.",
            preview(arguments, 300)
        ))),
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn preview(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// Deserializes a tool's arguments, turning serde's complaint into an instruction.
pub(crate) fn parse_args<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args).map_err(|error| {
        ToolError::InvalidArguments(format!(
            "invalid arguments for `{tool}`: {error}. Call it again with arguments matching \
             its schema."
        ))
    })
}

/// The JSON Schema of an argument struct, in the plain form every provider accepts:
/// optional fields are simply not `required` (no `null` types), no `$schema`, no `$ref`.
pub(crate) fn schema_for<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft07()
        .with(|settings| {
            settings.inline_subschemas = true;
            settings.meta_schema = None;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    strip_schema_noise(&mut schema);
    schema
}

/// Removes what schemars adds for Rust's benefit but models and strict servers trip
/// over: `null` in optional types, `format` hints like `uint64`, and titles.
fn strip_schema_noise(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("format");
            map.remove("title");
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if let [single] = types.as_slice() {
                    let single = single.clone();
                    map.insert("type".into(), single);
                }
            }
            if let Some(Value::Array(choices)) = map.get_mut("enum") {
                choices.retain(|choice| !choice.is_null());
            }
            for child in map.values_mut() {
                strip_schema_noise(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_schema_noise),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_are_unique() {
        let registry = Registry::core();
        let mut names: Vec<_> = registry.names().collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count);
    }

    #[test]
    fn every_schema_is_a_plain_object_schema() {
        for spec in Registry::core().specs() {
            let schema = &spec.input_schema;
            assert_eq!(schema["type"], "object", "{}", spec.name);
            let properties = schema["properties"]
                .as_object()
                .unwrap_or_else(|| panic!("{} has no properties", spec.name));
            for required in schema["required"].as_array().into_iter().flatten() {
                let field = required.as_str().unwrap_or_default();
                assert!(properties.contains_key(field), "{}: {field}", spec.name);
            }
            let text = schema.to_string();
            for noise in ["\"null\"", "$ref", "$schema", "format", "\"title\""] {
                assert!(
                    !text.contains(noise),
                    "{}: schema contains {noise}: {text}",
                    spec.name
                );
            }
            assert!(!spec.description.is_empty(), "{}", spec.name);
        }
    }

    #[test]
    fn unknown_tool_lists_the_real_ones() {
        let error = Registry::core().prepare("delete_everything", "{}").err();
        let Some(ToolError::InvalidArguments(message)) = error else {
            panic!("expected an InvalidArguments error, got {error:?}");
        };
        assert!(message.contains("delete_everything"), "{message}");
        assert!(
            message.contains("read, write, edit, glob, grep"),
            "{message}"
        );
    }

    #[test]
    fn the_read_only_set_cannot_change_anything() {
        let registry = Registry::read_only();
        assert_eq!(
            registry.names().collect::<Vec<_>>(),
            ["read", "glob", "grep"]
        );
        let error = registry.prepare("shell", "{}").err();
        let Some(ToolError::InvalidArguments(message)) = error else {
            panic!("expected an InvalidArguments error, got {error:?}");
        };
        assert!(
            message.contains("Available tools: read, glob, grep."),
            "{message}"
        );
    }

    #[test]
    fn an_added_tool_comes_last_and_replaces_its_namesake() {
        let registry = Registry::read_only()
            .with(Arc::new(write::Write))
            .with(Arc::new(read::Read));
        assert_eq!(
            registry.names().collect::<Vec<_>>(),
            ["glob", "grep", "write", "read"]
        );
    }

    #[test]
    fn malformed_json_is_quoted_back() {
        let error = Registry::core()
            .prepare("read", r#"{"path": "a.txt""#)
            .err();
        let Some(ToolError::InvalidArguments(message)) = error else {
            panic!("expected an InvalidArguments error, got {error:?}");
        };
        assert!(message.contains("not valid JSON"), "{message}");
        assert!(message.contains(r#"{"path": "a.txt""#), "{message}");
    }

    #[test]
    fn non_object_arguments_are_refused() {
        let error = Registry::core().prepare("read", "[1, 2]").err();
        assert!(matches!(error, Some(ToolError::InvalidArguments(m)) if m.contains("an array")));
    }

    #[test]
    fn empty_arguments_mean_an_empty_object() {
        let prepared = Registry::core().prepare("glob", "  ");
        assert!(matches!(prepared, Ok((_, Value::Object(map))) if map.is_empty()));
    }
}
