//! Drives duet's agent in-process against the scripted server, and builds the temporary
//! repositories the tests work in.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use duet::agent::protocol::ApprovalView;
use duet::agent::{self, AgentHandle, AgentSetup, Command, Event, TurnOutcome};
use duet::policy::{ApprovalMode, Decision};
use duet::provider::{self, Endpoint, ModelClient, RetryPolicy, Wire};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::common::scripted_server::{RecordedRequest, ScriptedServer};

/// Longest a test waits for an expected event before failing.
const EVENT_WAIT: Duration = Duration::from_secs(20);

/// The variable tests claim the API key comes from (named in auth errors).
pub const TEST_KEY_ENV: &str = "DUET_TEST_API_KEY";

/// The production retry policy, with waits of milliseconds instead of seconds.
pub fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        initial_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(40),
        ..RetryPolicy::default()
    }
}

/// A client for `server` over `wire` whose idle watchdog fires after `idle_timeout`.
pub fn scripted_client(
    server: &ScriptedServer,
    wire: Wire,
    idle_timeout: Duration,
) -> Arc<dyn ModelClient> {
    provider::connect(
        Endpoint {
            wire,
            base_url: server.base_url(wire),
            api_key: Some("test-key".into()),
            model: "scripted-model".into(),
        },
        idle_timeout,
        provider::RequestFeatures::default(),
    )
}

/// A temporary git repository with a first commit.
pub struct TestRepo {
    dir: tempfile::TempDir,
}

impl TestRepo {
    /// A repository holding `files` (path, content), all committed.
    pub fn with_files(files: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = git2::Repository::init(dir.path()).expect("git init");
        for (path, content) in files {
            let full = dir.path().join(path);
            if let Some(parent) = full.parent() {
                std::fs::create_dir_all(parent).expect("mkdir");
            }
            std::fs::write(&full, content).expect("write fixture");
        }
        let mut index = repo.index().expect("index");
        index
            .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
            .expect("git add");
        index.write().expect("index write");
        let tree = repo
            .find_tree(index.write_tree().expect("write tree"))
            .expect("tree");
        let signature = git2::Signature::now("Test", "test@example.com").expect("signature");
        repo.commit(
            Some("HEAD"),
            &signature,
            &signature,
            "initial commit",
            &tree,
            &[],
        )
        .expect("commit");
        Self { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(path)).expect("read repo file")
    }
}

/// An agent talking to a scripted server, with the events it has reported so far.
pub struct TestAgent {
    pub handle: AgentHandle,
    events: mpsc::Receiver<Event>,
    pub seen: Vec<Event>,
    /// Messages sent so far: the last one's id.
    messages_sent: std::sync::atomic::AtomicU64,
    _outputs: tempfile::TempDir,
}

impl TestAgent {
    /// Starts the agent in `workspace`, pointed at `server` over `wire`.
    pub fn start(
        server: &ScriptedServer,
        wire: Wire,
        workspace: &Path,
        approval: ApprovalMode,
    ) -> Self {
        Self::start_with(server, wire, workspace, approval, |_| {})
    }

    /// Like [`TestAgent::start`], with `adjust` changing the setup first.
    pub fn start_with(
        server: &ScriptedServer,
        wire: Wire,
        workspace: &Path,
        approval: ApprovalMode,
        adjust: impl FnOnce(&mut AgentSetup),
    ) -> Self {
        let client = scripted_client(server, wire, provider::DEFAULT_IDLE_TIMEOUT);
        let outputs = tempfile::tempdir().expect("outputs dir");
        let mut setup = AgentSetup {
            client,
            workspace: workspace.to_path_buf(),
            approval,
            max_tokens: 4096,
            retry: fast_retries(),
            api_key_env: Some(TEST_KEY_ENV.into()),
            outputs_dir: outputs.path().to_path_buf(),
            shell: duet::shell::ShellConfig::default(),
            lint: duet::lint::LintConfig::default(),
            policy: duet::policy::PolicyConfig::default(),
            budget: duet::config::Budget::default(),
            model_info: duet::config::ModelInfo::default(),
            compaction: duet::config::Compaction::default(),
            transcript: None,
            resume: None,
            mcp: Vec::new(),
            hooks: Vec::new(),
            session_id: "test-session".into(),
            mcp_startup_wait: agent::MCP_STARTUP_WAIT,
            // Never the real user's files: a test that wants some names them.
            user_instructions: Vec::new(),
        };
        adjust(&mut setup);
        let (handle, events) = agent::spawn(setup).expect("agent");
        Self {
            handle,
            events,
            seen: Vec::new(),
            messages_sent: std::sync::atomic::AtomicU64::new(0),
            _outputs: outputs,
        }
    }

    /// Sends the user message `text`; returns its id.
    pub fn send(&self, text: &str) -> duet::agent::MessageId {
        self.send_with_images(text, &[])
    }

    /// Sends the user message `text` with the images at `images` attached.
    pub fn send_with_images(&self, text: &str, images: &[&Path]) -> duet::agent::MessageId {
        let id = 1 + self
            .messages_sent
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.handle
            .send(Command::UserMessage {
                id,
                text: text.into(),
                images: images
                    .iter()
                    .map(|path| path.display().to_string())
                    .collect(),
            })
            .expect("agent alive");
        id
    }

    pub fn interrupt(&self) {
        self.handle.send(Command::Interrupt).expect("agent alive");
    }

    /// Waits for the first event (from now on) that matches, and returns it.
    pub async fn wait_for(&mut self, what: &str, matches: impl Fn(&Event) -> bool) -> Event {
        let deadline = tokio::time::Instant::now() + EVENT_WAIT;
        loop {
            let next = tokio::time::timeout_at(deadline, self.events.recv()).await;
            match next {
                Ok(Some(event)) => {
                    self.seen.push(event.clone());
                    if matches(&event) {
                        return event;
                    }
                }
                Ok(None) => panic!(
                    "agent stopped while waiting for {what}; saw {:#?}",
                    self.seen
                ),
                Err(_) => panic!("timed out waiting for {what}; saw {:#?}", self.seen),
            }
        }
    }

    /// Waits for the end of the current turn and returns its outcome.
    pub async fn turn_end(&mut self) -> TurnOutcome {
        match self
            .wait_for("the end of the turn", |e| {
                matches!(e, Event::TurnEnd { .. })
            })
            .await
        {
            Event::TurnEnd { outcome, .. } => outcome,
            _ => unreachable!("wait_for returned a non-matching event"),
        }
    }

    /// Waits for the next approval request; returns its call id and what it asks.
    pub async fn approval_needed(&mut self) -> (String, ApprovalView) {
        match self
            .wait_for("an approval request", |e| {
                matches!(e, Event::ApprovalNeeded { .. })
            })
            .await
        {
            Event::ApprovalNeeded {
                call_id, request, ..
            } => (call_id, request),
            _ => unreachable!("wait_for returned a non-matching event"),
        }
    }

    pub fn decide(&self, call_id: &str, decision: Decision) {
        self.handle
            .send(Command::Decide {
                call_id: call_id.into(),
                decision,
            })
            .expect("agent alive");
    }

    /// Position of the first seen event that matches, for ordering assertions.
    pub fn position(&self, what: &str, matches: impl Fn(&Event) -> bool) -> usize {
        self.seen
            .iter()
            .position(matches)
            .unwrap_or_else(|| panic!("never saw {what}; saw {:#?}", self.seen))
    }

    /// Text the model streamed, concatenated.
    pub fn streamed_text(&self) -> String {
        self.seen
            .iter()
            .filter_map(|event| match event {
                Event::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// A tool result as the server received it, whatever the wire.
#[derive(Clone, Debug, PartialEq)]
pub struct SentResult {
    pub call_id: String,
    pub content: String,
    pub is_error: bool,
}

/// The tool results carried by a recorded request, in order.
pub fn tool_results(request: &RecordedRequest) -> Vec<SentResult> {
    let messages = request.body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    match request.wire {
        Wire::OpenAiResponses => input_items(request)
            .iter()
            .filter(|item| item["type"] == "function_call_output")
            .map(|item| {
                let content = text_of(&item["output"]);
                SentResult {
                    call_id: text_of(&item["call_id"]),
                    is_error: content.starts_with("Error: "),
                    content,
                }
            })
            .collect(),
        Wire::Anthropic => messages
            .iter()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter(|block| block["type"] == "tool_result")
            .map(|block| SentResult {
                call_id: text_of(&block["tool_use_id"]),
                content: anthropic_result_text(&block["content"]),
                is_error: block["is_error"] == Value::Bool(true),
            })
            .collect(),
        Wire::OpenAiChat => messages
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| {
                let content = text_of(&m["content"]);
                SentResult {
                    call_id: text_of(&m["tool_call_id"]),
                    is_error: content.starts_with("Error: "),
                    content,
                }
            })
            .collect(),
    }
}

/// The names of the tools a request offers, whatever the wire.
pub fn offered_tools(request: &RecordedRequest) -> Vec<String> {
    let tools = request.body["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    tools
        .iter()
        .map(|tool| match request.wire {
            Wire::Anthropic | Wire::OpenAiResponses => text_of(&tool["name"]),
            Wire::OpenAiChat => text_of(&tool["function"]["name"]),
        })
        .collect()
}

/// The conversation a request carries: `messages`, or a Responses request's `input`.
pub fn conversation(request: &RecordedRequest) -> Vec<Value> {
    let key = match request.wire {
        Wire::Anthropic | Wire::OpenAiChat => "messages",
        Wire::OpenAiResponses => "input",
    };
    request.body[key].as_array().cloned().unwrap_or_default()
}

/// The `input` items of a Responses request.
pub fn input_items(request: &RecordedRequest) -> Vec<Value> {
    request.body["input"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Whether a Responses input item is the model's (its text, reasoning or a call).
pub fn is_model_item(item: &Value) -> bool {
    item["role"] == "assistant" || item["type"] == "function_call" || item["type"] == "reasoning"
}

fn anthropic_result_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks.iter().map(|b| text_of(&b["text"])).collect(),
        _ => String::new(),
    }
}

fn text_of(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_string()
}

/// Every piece of text a request carries (system, messages, tool results), joined, for
/// "the request mentions X" assertions.
pub fn all_text(request: &RecordedRequest) -> String {
    let mut out = String::new();
    collect_strings(&request.body, &mut out);
    out
}

fn collect_strings(value: &Value, out: &mut String) {
    match value {
        Value::String(text) => {
            out.push_str(text);
            out.push('\n');
        }
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_strings(v, out)),
        _ => {}
    }
}

/// The text of everything after the last assistant message of a request: tool results,
/// user text, steering messages and the environment block, whichever wire carries them.
pub fn last_user_text(request: &RecordedRequest) -> String {
    if request.wire == Wire::OpenAiResponses {
        let items = input_items(request);
        let start = items
            .iter()
            .rposition(is_model_item)
            .map_or(0, |index| index + 1);
        let mut out = String::new();
        for item in &items[start..] {
            collect_strings(&item["content"], &mut out);
            collect_strings(&item["output"], &mut out);
        }
        return out;
    }
    let messages = request.body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let start = messages
        .iter()
        .rposition(|m| m["role"] == "assistant")
        .map_or(0, |index| index + 1);
    let mut out = String::new();
    for message in &messages[start..] {
        collect_strings(&message["content"], &mut out);
    }
    out
}

/// A private HOME for [`run_duet`] whose duet config file (`config/duet/config.toml`,
/// where `XDG_CONFIG_HOME` points) holds `toml`.
pub fn home_with_config(toml: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("temp home");
    let config_dir = home.path().join("config/duet");
    std::fs::create_dir_all(&config_dir).expect("config dir");
    std::fs::write(config_dir.join("config.toml"), toml).expect("config file");
    home
}

/// Runs the binary in `cwd` with a clean environment (see [`duet_command`]) and
/// collects its output.
pub async fn run_duet(
    cwd: &Path,
    home: &Path,
    env: &[(impl AsRef<OsStr>, impl AsRef<OsStr>)],
    args: &[&str],
) -> std::process::Output {
    duet_command(cwd, home, env, args)
        .output()
        .await
        .expect("run duet")
}

/// The binary, to run in `cwd` with a clean environment: only what duet is given here,
/// and a private HOME/XDG tree so the user's real config never leaks into a test. The
/// process is killed if the command is dropped.
pub fn duet_command(
    cwd: &Path,
    home: &Path,
    env: &[(impl AsRef<OsStr>, impl AsRef<OsStr>)],
    args: &[&str],
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(duet_binary());
    command
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_DATA_HOME", home.join("data"));
    for (name, value) in env {
        command.env(name, value);
    }
    command.kill_on_drop(true);
    command
}

/// The environment that points `duet` at `server` over `wire`.
pub fn wire_env(server: &ScriptedServer, wire: Wire) -> Vec<(&'static str, String)> {
    match wire {
        Wire::Anthropic => vec![
            ("ANTHROPIC_BASE_URL", server.base_url(wire)),
            ("ANTHROPIC_API_KEY", "test-key".into()),
        ],
        Wire::OpenAiChat => vec![
            ("OPENAI_BASE_URL", server.base_url(wire)),
            ("OPENAI_API_KEY", "test-key".into()),
            ("DUET_MODEL", "scripted-model".into()),
        ],
        Wire::OpenAiResponses => vec![
            ("OPENAI_BASE_URL", server.base_url(wire)),
            ("OPENAI_API_KEY", "test-key".into()),
            ("DUET_MODEL", "scripted-model".into()),
            ("DUET_PROVIDER", "openai-responses".into()),
        ],
    }
}

/// Path of the built `duet` binary.
pub fn duet_binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_duet"))
}
