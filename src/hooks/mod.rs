//! Hooks: the user's (and a trusted project's) commands that run at points of the
//! agent's work, with the event names and the JSON protocol Claude Code documents, so
//! hook scripts written for it work unchanged.
//!
//! Owns: which hooks exist ([`config`]), which of them an event and tool match, running
//! them ([`run`]) and reading their replies ([`reply`]) into one [`Outcome`] per event.
//! Does not own: what the agent does with an outcome (refusing a call, asking the user,
//! continuing a turn: `agent/`), or the sandbox (`shell::sandbox`).
//! Invariant: an untrusted hook (every project hook, and the user's own unless their
//! config marks it `trusted`) runs only in the sandbox and can only make a decision
//! stricter: its `allow` is ignored; a block is never lost, whichever hook gave it.

pub mod config;
pub mod reply;
pub mod run;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::shell::sandbox::Sandbox;
use reply::{Permission, Reply};
use run::Confinement;

/// The points at which hooks run, named as Claude Code names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HookEvent {
    /// Before a tool call runs (and before it is approved): may refuse it, or make it
    /// ask the user.
    PreToolUse,
    /// After a tool call returned: may add to what the model is told.
    PostToolUse,
    /// A message of the user's, before the model gets it: may refuse it or add context.
    UserPromptSubmit,
    /// The model is about to end its turn: may have it continue.
    Stop,
    /// The session started (or was resumed): may add context.
    SessionStart,
    /// The session ends.
    SessionEnd,
    /// duet is about to call the user (an approval waits).
    Notification,
}

impl HookEvent {
    pub const ALL: [HookEvent; 7] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::UserPromptSubmit,
        HookEvent::Stop,
        HookEvent::SessionStart,
        HookEvent::SessionEnd,
        HookEvent::Notification,
    ];

    pub fn name(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::Notification => "Notification",
        }
    }

    pub fn from_name(name: &str) -> Option<HookEvent> {
        HookEvent::ALL
            .into_iter()
            .find(|event| event.name() == name)
    }

    /// Whether the event is about a tool, so a matcher applies.
    pub fn has_matcher(self) -> bool {
        matches!(self, HookEvent::PreToolUse | HookEvent::PostToolUse)
    }

    /// Whether plain stdout of a successful run goes to the model as context (as
    /// Claude Code does for these two) rather than to the user.
    fn stdout_is_context(self) -> bool {
        matches!(self, HookEvent::UserPromptSubmit | HookEvent::SessionStart)
    }
}

/// Which tools a hook applies to.
#[derive(Clone, Debug)]
pub enum Matcher {
    All,
    /// A regular expression matched against the whole name.
    Pattern {
        source: String,
        regex: regex::Regex,
    },
}

impl PartialEq for Matcher {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Matcher::All, Matcher::All) => true,
            (Matcher::Pattern { source: a, .. }, Matcher::Pattern { source: b, .. }) => a == b,
            _ => false,
        }
    }
}

impl Matcher {
    /// `""` and `*` match everything; anything else is a regular expression that must
    /// match a whole name (`Edit|Write`, `mcp__github__.*`).
    pub fn new(pattern: &str) -> Result<Matcher, String> {
        let pattern = pattern.trim();
        if pattern.is_empty() || pattern == "*" {
            return Ok(Matcher::All);
        }
        regex::Regex::new(&format!("^(?:{pattern})$"))
            .map(|regex| Matcher::Pattern {
                source: pattern.to_string(),
                regex,
            })
            .map_err(|error| format!("`matcher` is not a regular expression: {error}"))
    }

    /// Whether the hook applies to duet's tool `tool` (also known by Claude Code's
    /// name for it).
    pub fn matches(&self, tool: &str) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Pattern { regex, .. } => {
                regex.is_match(tool)
                    || claude_name(tool).is_some_and(|alias| regex.is_match(&alias))
            }
        }
    }

    pub fn source(&self) -> &str {
        match self {
            Matcher::All => "*",
            Matcher::Pattern { source, .. } => source,
        }
    }
}

/// Claude Code's name for duet's tool `tool`: `shell` is `Bash`, an MCP server's tool
/// `server__tool` is `mcp__server__tool`.
pub fn claude_name(tool: &str) -> Option<String> {
    let name = match tool {
        "shell" => "Bash",
        "edit" => "Edit",
        "write" => "Write",
        "read" => "Read",
        "glob" => "Glob",
        "grep" => "Grep",
        "explore" => "Task",
        _ if tool.contains("__") => return Some(format!("mcp__{tool}")),
        _ => return None,
    };
    Some(name.to_string())
}

/// What a hook that fails to run means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnFailure {
    /// Go on, telling the user (Claude Code's behaviour).
    Continue,
    /// Treat it as a block: a policy that cannot be checked is not passed.
    Block,
}

/// Which file configured a hook.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    User(PathBuf),
    Project(PathBuf),
}

impl Origin {
    pub fn path(&self) -> &Path {
        match self {
            Origin::User(path) | Origin::Project(path) => path,
        }
    }
}

/// One configured hook.
#[derive(Clone, Debug, PartialEq)]
pub struct Hook {
    pub event: HookEvent,
    pub matcher: Matcher,
    pub command: String,
    pub timeout: Duration,
    /// Runs outside the sandbox and may loosen a decision; only the user's config.
    pub trusted: bool,
    pub on_failure: OnFailure,
    pub origin: Origin,
}

impl Hook {
    /// The command as messages name it: its first line, cut short.
    pub fn label(&self) -> String {
        const MAX_CHARS: usize = 60;
        let first = self.command.lines().next().unwrap_or_default().trim();
        if first.chars().count() > MAX_CHARS {
            let cut: String = first.chars().take(MAX_CHARS).collect();
            format!("{cut}…")
        } else {
            first.to_string()
        }
    }
}

/// Something a hook run has to tell the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub event: HookEvent,
    /// The hook's [`Hook::label`].
    pub hook: String,
    pub text: String,
    /// A block, a failure or an ignored decision, rather than information.
    pub warning: bool,
}

/// What the hooks of one event came to, together.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Why the action is refused (PreToolUse, UserPromptSubmit), or what the model is
    /// told to do (PostToolUse, Stop); `None` when no hook blocked.
    pub block: Option<String>,
    /// A hook asked that the user decide, whatever the approval mode.
    pub ask: bool,
    /// A trusted hook allowed the call without asking.
    pub allow: bool,
    /// A hook asked to stop the turn, and why.
    pub stop: Option<String>,
    /// What the model is to be told besides.
    pub context: Vec<String>,
    pub notices: Vec<Notice>,
}

/// The session's hooks and what they need to run.
#[derive(Clone, Debug, Default)]
pub struct Hooks {
    hooks: Vec<Hook>,
    workspace: PathBuf,
    sandbox: Option<Arc<Sandbox>>,
    session_id: String,
}

impl Hooks {
    /// `hooks` for `workspace`, untrusted ones run in `sandbox`.
    pub fn new(
        hooks: Vec<Hook>,
        workspace: &Path,
        sandbox: Option<Arc<Sandbox>>,
        session_id: &str,
    ) -> Self {
        Self {
            hooks,
            workspace: workspace.to_path_buf(),
            sandbox,
            session_id: session_id.to_string(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// Whether any hook would run for `event` (and `tool`).
    pub fn any(&self, event: HookEvent, tool: Option<&str>) -> bool {
        self.matching(event, tool).next().is_some()
    }

    fn matching(&self, event: HookEvent, tool: Option<&str>) -> impl Iterator<Item = &Hook> {
        self.hooks.iter().filter(move |hook| {
            hook.event == event
                && match tool {
                    Some(tool) => hook.matcher.matches(tool),
                    None => true,
                }
        })
    }

    /// Runs every hook of `event` (for `tool`, if any), in parallel, each with the
    /// event's JSON: the common fields and `fields`.
    pub async fn run(&self, event: HookEvent, tool: Option<&str>, fields: Value) -> Outcome {
        let hooks: Vec<&Hook> = self.matching(event, tool).collect();
        if hooks.is_empty() {
            return Outcome::default();
        }
        let input = self.input(event, fields);
        let runs = hooks.iter().map(|hook| async {
            let confinement = if hook.trusted {
                Confinement::Trusted
            } else {
                Confinement::Sandboxed(self.sandbox.as_deref())
            };
            let ran = run::run(
                &hook.command,
                &self.workspace,
                &input,
                hook.timeout,
                confinement,
            )
            .await;
            reply::read(&ran.ended, &ran.stdout, &ran.stderr)
        });
        let replies = futures::future::join_all(runs).await;
        let mut outcome = Outcome::default();
        for (hook, reply) in hooks.into_iter().zip(replies) {
            outcome.take(event, hook, reply);
        }
        outcome
    }

    fn input(&self, event: HookEvent, fields: Value) -> Vec<u8> {
        let mut input = Map::new();
        input.insert("session_id".into(), json!(self.session_id));
        input.insert("transcript_path".into(), Value::Null);
        input.insert("cwd".into(), json!(self.workspace.display().to_string()));
        input.insert("hook_event_name".into(), json!(event.name()));
        if let Value::Object(fields) = fields {
            input.extend(fields);
        }
        // Serialising a map of JSON values cannot fail.
        serde_json::to_vec(&Value::Object(input)).unwrap_or_default()
    }

    /// Every hook, for `duet doctor`.
    pub fn list(&self) -> &[Hook] {
        &self.hooks
    }
}

impl Outcome {
    fn take(&mut self, event: HookEvent, hook: &Hook, reply: Reply) {
        let notice = |text: String, warning: bool| Notice {
            event,
            hook: hook.label(),
            text,
            warning,
        };
        if let Some(why) = reply.failed {
            let blocks = hook.on_failure == OnFailure::Block;
            let text = if blocks {
                format!("failed, and blocks: {why}")
            } else {
                format!("failed: {why}")
            };
            self.notices.push(notice(text, true));
            if blocks {
                self.add_block(format!("a hook that must pass failed ({why})"));
            }
        }
        if let Some(reason) = reply.block {
            self.notices
                .push(notice(format!("blocked: {reason}"), true));
            self.add_block(reason);
        }
        match reply.permission {
            Some(Permission::Ask) => self.ask = true,
            Some(Permission::Allow) if hook.trusted => self.allow = true,
            Some(Permission::Allow) => self.notices.push(notice(
                "its `allow` is ignored: only a hook your config marks `trusted` may skip \
                 asking"
                    .to_string(),
                true,
            )),
            Some(Permission::Deny) | None => {}
        }
        if let Some(reason) = reply.stop {
            self.notices
                .push(notice(format!("stops the turn: {reason}"), true));
            self.stop.get_or_insert(reason);
        }
        if let Some(message) = reply.message {
            self.notices.push(notice(message, false));
        }
        if let Some(context) = reply.context {
            self.context.push(context);
        }
        if let Some(output) = reply.output {
            if event.stdout_is_context() {
                self.context.push(output);
            } else {
                self.notices.push(notice(output, false));
            }
        }
    }

    fn add_block(&mut self, reason: String) {
        match &mut self.block {
            Some(existing) => {
                existing.push('\n');
                existing.push_str(&reason);
            }
            None => self.block = Some(reason),
        }
    }
}

/// A tool call's arguments as hooks see them (`tool_input`): duet's own, with
/// `file_path` (absolute) added beside `path`, as Claude Code's tools name it.
pub fn tool_input(arguments: &Value, workspace: &Path) -> Value {
    let mut input = match arguments {
        Value::Object(map) => map.clone(),
        other => return other.clone(),
    };
    if let Some(path) = input.get("path").and_then(Value::as_str) {
        let absolute = workspace.join(path).display().to_string();
        input.entry("file_path").or_insert(json!(absolute));
    }
    Value::Object(input)
}

#[cfg(test)]
mod tests;
