//! Tools from MCP servers, against the scripted model server and the stdio server of
//! `examples/mcp_fixture.rs`: offered to the model once ready, a call round-trips,
//! approval and denial by policy, the first request's short wait for servers still
//! starting (a quick one's tools are in it, a slow one is named and joins later, a real
//! server from npm where this machine can fetch it), a crash mid-call and the restart
//! after it, a call past its timeout, and `duet mcp list`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use duet::agent::protocol::ApprovalView;
use duet::agent::{Event, TurnOutcome};
use duet::mcp::{McpSection, ServerConfig, ServerState};
use duet::policy::{ApprovalMode, Decision};
use duet::provider::{StopReason, Wire};
use pretty_assertions::assert_eq;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

use crate::common::harness::{
    TestAgent, TestRepo, duet_command, last_user_text, offered_tools, run_duet, tool_results,
    wire_env,
};
use crate::common::script::{LoadScript, Script};
use crate::common::scripted_server::ScriptedServer;

/// The fixture server, built by `cargo test` beside the test binary.
pub(crate) fn fixture_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target directory");
    let path = dir.join("examples").join("mcp_fixture");
    assert!(
        path.exists(),
        "{} is missing: build it with `cargo build --example mcp_fixture` (plain `cargo \
         test` does)",
        path.display()
    );
    path
}

/// The one server `[servers.NAME]` in `text` configures, resolved as the user's own.
fn user_server(text: &str) -> ServerConfig {
    let section: McpSection = toml::from_str(text).expect("server config");
    let config = duet::mcp::config::from_user(&section, Path::new("/test/config.toml"))
        .expect("server config resolves");
    config.startable().remove(0)
}

/// The `[servers.fixture]` entry for the fixture over stdio, with `extra` TOML lines.
fn fixture_server(args: &[&str], extra: &str) -> ServerConfig {
    user_server(&format!(
        "[servers.fixture]\ncommand = {:?}\nargs = {:?}\n{extra}",
        fixture_binary().display().to_string(),
        args
    ))
}

fn start(server: &ScriptedServer, wire: Wire, repo: &TestRepo, mcp: ServerConfig) -> TestAgent {
    TestAgent::start_with(server, wire, repo.path(), ApprovalMode::Ask, |setup| {
        setup.mcp = vec![mcp];
    })
}

fn is_ready(event: &Event) -> bool {
    matches!(
        event,
        Event::McpServer {
            state: ServerState::Ready { .. },
            ..
        }
    )
}

/// Waits until the fixture is ready (it may have been reported already).
async fn ready(agent: &mut TestAgent) {
    if !agent.seen.iter().any(is_ready) {
        agent.wait_for("the MCP server to be ready", is_ready).await;
    }
}

fn finished() -> TurnOutcome {
    TurnOutcome::Finished {
        stop_reason: StopReason::EndTurn,
    }
}

for_each_wire!(its_tools_are_offered_and_a_call_round_trips);

async fn its_tools_are_offered_and_a_call_round_trips(wire: Wire) {
    let server = ScriptedServer::start(Script::load("mcp_echo")).await;
    let repo = TestRepo::with_files(&[]);
    let mut agent = start(
        &server,
        wire,
        &repo,
        fixture_server(&[], "policy = \"allow\""),
    );
    ready(&mut agent).await;
    agent.send("say hello through the server");
    assert_eq!(agent.turn_end().await, finished());

    let requests = server.requests();
    let names = offered_tools(&requests[0]);
    for tool in [
        "read",
        "shell",
        "fixture__echo",
        "fixture__add",
        "fixture__crash",
    ] {
        assert!(
            names.iter().any(|name| name == tool),
            "{tool} not in {names:?}"
        );
    }
    let echo = requests[0].body["tools"]
        .as_array()
        .and_then(|tools| {
            tools
                .iter()
                .find(|t| t.to_string().contains("fixture__echo"))
        })
        .expect("echo offered")
        .to_string();
    assert!(echo.contains("from MCP server `fixture`"), "{echo}");
    assert!(echo.contains(r#""text":{"type":"string"}"#), "{echo}");
    let results = tool_results(&requests[1]);
    assert_eq!(results.len(), 1);
    assert!(!results[0].is_error, "{:?}", results[0]);
    assert_eq!(results[0].content, "hello from mcp");
    server.assert_no_violations();
}

#[tokio::test]
async fn a_server_over_streamable_http_round_trips() {
    let mut fixture = tokio::process::Command::new(fixture_binary())
        .arg("--http")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start the HTTP fixture");
    let mut url = String::new();
    BufReader::new(fixture.stdout.take().expect("stdout"))
        .read_line(&mut url)
        .await
        .expect("the fixture's URL");
    let web = user_server(&format!(
        "[servers.web]\nurl = {:?}\npolicy = \"allow\"",
        url.trim()
    ));
    let server = ScriptedServer::start(Script::load("mcp_http_echo")).await;
    let repo = TestRepo::with_files(&[]);
    let mut agent = start(&server, Wire::Anthropic, &repo, web);
    ready(&mut agent).await;
    agent.send("add over http");
    assert_eq!(agent.turn_end().await, finished());
    let results = tool_results(&server.requests()[1]);
    assert!(!results[0].is_error, "{:?}", results[0]);
    assert_eq!(results[0].content, "42");
    server.assert_no_violations();
}

#[tokio::test]
async fn a_call_asks_by_default_and_a_denied_tool_is_refused_without_asking() {
    let server = ScriptedServer::start(Script::load("mcp_ask_and_deny")).await;
    let repo = TestRepo::with_files(&[]);
    let mcp = fixture_server(&[], "tools = { add = \"deny\" }");
    let mut agent = start(&server, Wire::Anthropic, &repo, mcp);
    ready(&mut agent).await;
    agent.send("use the server");

    let (call_id, view) = agent.approval_needed().await;
    assert_eq!(
        view,
        ApprovalView::ExternalTool {
            server: "fixture".into(),
            tool: "echo".into(),
            arguments: r#"{"text":"asked"}"#.into(),
        }
    );
    agent.decide(&call_id, Decision::Approve);
    assert_eq!(agent.turn_end().await, finished());
    let asked = agent
        .seen
        .iter()
        .filter(|e| matches!(e, Event::ApprovalNeeded { .. }))
        .count();
    assert_eq!(asked, 1, "only the echo asks");

    let results = tool_results(&server.requests()[1]);
    assert_eq!(results.len(), 2);
    assert!(!results[0].is_error, "{:?}", results[0]);
    assert_eq!(results[0].content, "asked");
    assert!(results[1].is_error, "{:?}", results[1]);
    assert!(
        results[1]
            .content
            .contains("configuration denies `fixture__add`"),
        "{}",
        results[1].content
    );
    server.assert_no_violations();
}

#[tokio::test]
async fn a_server_ready_within_the_wait_has_its_tools_in_the_first_request() {
    let server = ScriptedServer::start(Script::load("mcp_two_answers")).await;
    let repo = TestRepo::with_files(&[]);
    // Slow enough that a request sent at once would go without its tools.
    let mcp = fixture_server(&["--start-delay-ms", "1500"], "");
    let wait = Duration::from_secs(10);
    let mut agent = TestAgent::start_with(
        &server,
        Wire::Anthropic,
        repo.path(),
        ApprovalMode::Ask,
        |setup| {
            setup.mcp = vec![mcp];
            // Far longer than the server needs, so a busy machine cannot fail the test;
            // the request still goes as soon as the server is ready.
            setup.mcp_startup_wait = wait;
        },
    );
    let sent = Instant::now();
    agent.send("hello");
    assert_eq!(agent.turn_end().await, finished());
    assert!(sent.elapsed() < wait, "waited {:?}", sent.elapsed());

    let first = &server.requests()[0];
    let names = offered_tools(first);
    assert!(
        names.iter().any(|name| name == "fixture__echo"),
        "{names:?}"
    );
    assert!(!last_user_text(first).contains("still starting"));
    let ready_at = agent.position("the server ready", is_ready);
    let step_at = agent.position("the first step", |event| {
        matches!(event, Event::StepStarted { .. })
    });
    assert!(
        step_at < ready_at,
        "the step began, then waited for the server"
    );
}

#[tokio::test]
async fn a_slow_server_is_named_as_starting_and_its_tools_come_in_a_later_request() {
    let server = ScriptedServer::start(Script::load("mcp_two_answers")).await;
    let repo = TestRepo::with_files(&[]);
    // Far slower than the wait (the default, 1 s).
    let mcp = fixture_server(&["--start-delay-ms", "3000"], "");
    let mut agent = start(&server, Wire::Anthropic, &repo, mcp);
    let sent = Instant::now();
    agent.send("hello");
    assert_eq!(agent.turn_end().await, finished());
    assert!(
        sent.elapsed() >= duet::agent::MCP_STARTUP_WAIT - Duration::from_millis(50),
        "the first request waited for the server: {:?}",
        sent.elapsed()
    );
    assert!(
        !agent.seen.iter().any(is_ready),
        "the first turn waited until the server was ready: {:#?}",
        agent.seen
    );
    let requests = server.requests();
    let first = offered_tools(&requests[0]);
    assert!(first.iter().any(|name| name == "read"), "{first:?}");
    assert!(
        !first.iter().any(|name| name.starts_with("fixture__")),
        "{first:?}"
    );
    let environment = last_user_text(&requests[0]);
    assert!(
        environment.contains(
            "mcp: still starting: `fixture` (its tools are offered from a later request, once \
             ready)\n</environment>"
        ),
        "{environment}"
    );

    ready(&mut agent).await;
    agent.send("and now?");
    assert_eq!(agent.turn_end().await, finished());
    let requests = server.requests();
    let second = offered_tools(&requests[1]);
    assert!(
        second.iter().any(|name| name == "fixture__echo"),
        "{second:?}"
    );
    assert!(!last_user_text(&requests[1]).contains("still starting"));
    server.assert_no_violations();
}

/// The npm package of the reference filesystem server.
const FILESYSTEM_SERVER: &str = "@modelcontextprotocol/server-filesystem";

/// Fetches the filesystem server into npx's cache by running it once with nothing to
/// read (it exits at the end of its input), so that the test's own start is not a
/// download; `Err` says why it cannot run here.
async fn fetch_filesystem_server(dir: &Path) -> Result<(), String> {
    let run = tokio::process::Command::new("npx")
        .args(["-y", FILESYSTEM_SERVER])
        .arg(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(Duration::from_secs(180), run).await {
        Err(_) => Err(format!("fetching {FILESYSTEM_SERVER} took over 180 s")),
        Ok(Err(error)) if error.kind() == std::io::ErrorKind::NotFound => {
            Err("npx is not installed".into())
        }
        Ok(Err(error)) => Err(format!("npx cannot run: {error}")),
        Ok(Ok(output)) if output.status.success() => Ok(()),
        Ok(Ok(output)) => {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
            Err(format!(
                "`npx -y {FILESYSTEM_SERVER}` failed ({}): {}",
                output.status,
                tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
            ))
        }
    }
}

/// A real server from npm: the reference filesystem server's tools are in the session's
/// very first request. Skipped, saying why, where `npx` is missing or the package
/// cannot be fetched (CI installs no node, and needs none).
#[tokio::test]
async fn a_real_server_from_npm_has_its_tools_in_the_first_request() {
    let repo = TestRepo::with_files(&[("notes.md", "notes\n")]);
    let root = repo.path().canonicalize().expect("workspace");
    if let Err(reason) = fetch_filesystem_server(&root).await {
        eprintln!("skipped a_real_server_from_npm_has_its_tools_in_the_first_request: {reason}");
        return;
    }
    let filesystem = user_server(&format!(
        "[servers.fs]\ncommand = \"npx\"\nargs = [\"-y\", {FILESYSTEM_SERVER:?}, {:?}]\n",
        root.display().to_string()
    ));
    let server = ScriptedServer::start(Script::load("mcp_two_answers")).await;
    let mut agent = TestAgent::start_with(
        &server,
        Wire::Anthropic,
        repo.path(),
        ApprovalMode::Ask,
        |setup| {
            setup.mcp = vec![filesystem];
            // npx looks the package up before starting node: more than a second on a
            // busy machine, and the point here is a real server's tools, not the timing.
            setup.mcp_startup_wait = Duration::from_secs(60);
        },
    );
    agent.send("what can you use?");
    assert_eq!(agent.turn_end().await, finished());

    let first = offered_tools(&server.requests()[0]);
    assert!(
        first
            .iter()
            .any(|name| name == "fs__read_text_file" || name == "fs__read_file"),
        "{first:?}"
    );
    server.assert_no_violations();
}

#[tokio::test]
async fn a_crash_mid_call_is_an_error_and_the_server_is_restarted() {
    let server = ScriptedServer::start(Script::load("mcp_crash_then_echo")).await;
    let repo = TestRepo::with_files(&[]);
    let mut agent = start(
        &server,
        Wire::Anthropic,
        &repo,
        fixture_server(&[], "policy = \"allow\""),
    );
    ready(&mut agent).await;
    agent.send("crash it");
    assert_eq!(agent.turn_end().await, finished());
    let results = tool_results(&server.requests()[1]);
    assert!(results[0].is_error, "{:?}", results[0]);
    assert!(
        results[0]
            .content
            .contains("MCP server `fixture` stopped during the call"),
        "{}",
        results[0].content
    );

    // Restarting, then ready again (either may already have been reported).
    let restarting = |e: &Event| {
        matches!(
            e,
            Event::McpServer {
                state: ServerState::Restarting { attempt: 1, .. },
                ..
            }
        )
    };
    if !agent.seen.iter().any(restarting) {
        agent.wait_for("the restart", restarting).await;
    }
    let restarted_at = agent.position("the restart", restarting);
    if !agent.seen[restarted_at..].iter().any(is_ready) {
        agent
            .wait_for("the server to be ready again", is_ready)
            .await;
    }
    agent.send("try again");
    assert_eq!(agent.turn_end().await, finished());
    let results = tool_results(&server.requests()[3]);
    let last = results.last().expect("a result");
    assert!(!last.is_error, "{last:?}");
    assert_eq!(last.content, "back again");
    server.assert_no_violations();
}

#[tokio::test]
async fn a_call_past_its_timeout_returns_a_clear_error() {
    let server = ScriptedServer::start(Script::load("mcp_sleep")).await;
    let repo = TestRepo::with_files(&[]);
    let mcp = fixture_server(&[], "policy = \"allow\"\ntimeout_secs = 0.3");
    let mut agent = start(&server, Wire::Anthropic, &repo, mcp);
    ready(&mut agent).await;
    agent.send("sleep");
    assert_eq!(agent.turn_end().await, finished());
    let results = tool_results(&server.requests()[1]);
    assert!(results[0].is_error, "{:?}", results[0]);
    assert!(
        results[0]
            .content
            .contains("`fixture__sleep` did not answer within its timeout of 0.3s"),
        "{}",
        results[0].content
    );
    server.assert_no_violations();
}

#[tokio::test]
async fn a_server_that_cannot_start_is_reported_failed() {
    let server = ScriptedServer::start(Script::load("mcp_two_answers")).await;
    let repo = TestRepo::with_files(&[]);
    let mut broken = fixture_server(&[], "");
    broken.transport = duet::mcp::Transport::Stdio {
        command: "/nonexistent/mcp-server".into(),
        args: Vec::new(),
        env: Default::default(),
        keep_env: Vec::new(),
    };
    let mut agent = start(&server, Wire::Anthropic, &repo, broken);
    let failed = agent
        .wait_for("the failure", |e| {
            matches!(
                e,
                Event::McpServer {
                    state: ServerState::Failed { .. },
                    ..
                }
            )
        })
        .await;
    let Event::McpServer {
        state: ServerState::Failed { reason },
        ..
    } = failed
    else {
        unreachable!("wait_for returned a non-matching event")
    };
    assert!(
        reason.contains("cannot start `/nonexistent/mcp-server`"),
        "{reason}"
    );
    agent.send("hello");
    assert_eq!(agent.turn_end().await, finished());
}

/// A home whose user config holds `config` (TOML).
fn home_with_config(config: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("home");
    let config_dir = home.path().join("config").join("duet");
    std::fs::create_dir_all(&config_dir).expect("config dir");
    std::fs::write(config_dir.join("config.toml"), config).expect("config");
    home
}

#[tokio::test]
async fn exec_reports_the_server_once_and_keeps_credentials_from_it() {
    let server = ScriptedServer::start(Script::load("mcp_exec_env")).await;
    let repo = TestRepo::with_files(&[("notes.md", "notes\n")]);
    let home = home_with_config(&format!(
        "[mcp.servers.fixture]\ncommand = {:?}\npolicy = \"allow\"\nkeep_env = [\"KEPT_TOKEN\"]\n",
        fixture_binary().display().to_string()
    ));
    let mut env = wire_env(&server, Wire::Anthropic);
    env.push(("LEAKY_API_KEY", "leak".into()));
    env.push(("KEPT_TOKEN", "kept".into()));
    let mut command = duet_command(repo.path(), home.path(), &env, &["exec", "look around"]);
    command.stdout(std::process::Stdio::piped());
    let mut child = command.spawn().expect("spawn duet");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    // The first model call is held until the server is ready, so the second one
    // offers its tools.
    let mut printed = String::new();
    while !printed.contains("mcp: fixture ready") {
        let read = stdout.read_line(&mut printed).await.expect("read stdout");
        assert!(
            read > 0,
            "duet ended before the server was ready:\n{printed}"
        );
    }
    server.release("ready");
    stdout
        .read_to_string(&mut printed)
        .await
        .expect("read stdout");
    assert!(
        child.wait().await.expect("duet exits").success(),
        "{printed}"
    );

    assert_eq!(printed.matches("mcp: fixture").count(), 1, "{printed}");
    assert!(
        printed.contains("mcp: fixture ready (7 tools)"),
        "{printed}"
    );
    let results = tool_results(&server.requests()[2]);
    let values: Vec<&str> = results.iter().map(|r| r.content.as_str()).collect();
    assert_eq!(values, ["notes.md", "(unset)", "kept"]);
    server.assert_no_violations();
}

#[tokio::test]
async fn mcp_list_shows_each_server_its_source_and_its_tools() {
    let repo = TestRepo::with_files(&[(
        ".mcp.json",
        r#"{"mcpServers": {"project": {"command": "/nonexistent/never-run"}}}"#,
    )]);
    let home = home_with_config(&format!(
        "[mcp.servers.fixture]\ncommand = {:?}\ntools = {{ add = \"deny\" }}\n",
        fixture_binary().display().to_string()
    ));
    let no_env: [(&str, &str); 0] = [];
    let output = run_duet(repo.path(), home.path(), &no_env, &["mcp", "list"]).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("fixture  (user config: "), "{stdout}");
    assert!(stdout.contains("ready: 7 tool(s)"), "{stdout}");
    assert!(stdout.contains("fixture__add  [deny]"), "{stdout}");
    assert!(stdout.contains("fixture__echo  [ask]"), "{stdout}");
    assert!(stdout.contains("project  (project: "), "{stdout}");
    assert!(
        stdout.contains("not started: project servers are off"),
        "{stdout}"
    );
}

#[tokio::test]
async fn a_bad_server_entry_stops_duet_with_a_clear_configuration_error() {
    let repo = TestRepo::with_files(&[]);
    let home = home_with_config(
        "[mcp.servers.both]\ncommand = \"both-mcp\"\nurl = \"http://localhost:1/mcp\"\n",
    );
    let env = [("ANTHROPIC_API_KEY", "test-key")];
    let output = run_duet(repo.path(), home.path(), &env, &["exec", "hello"]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("config.toml: MCP server `both`: set `command` or `url`, not both"),
        "{stderr}"
    );
}
