//! Background commands through the agent, in the sandbox with the real `duet` binary
//! as launcher and its network isolated: a server the model starts with `shell {
//! background: true }` answers a `curl` in a later step (the job shares the shell's
//! loopback, not the host's network), its log is read
//! with `shell_jobs`, `stop` ends its whole process group, and every job dies with the
//! agent. Checked on the host: the files served, the job list, `/proc`.

use std::time::Duration;

use duet::agent::{Command, Event};
use duet::policy::ApprovalMode;
use duet::policy::Decision;
use duet::provider::Wire;
use duet::shell::ShellConfig;
use duet::shell::jobs::JobState;
use duet::shell::sandbox::SandboxConfig;

use crate::common::harness::{TestAgent, TestRepo, duet_binary, tool_results};
use crate::common::script::Script;
use crate::common::scripted_server::ScriptedServer;

/// One tool call per step, then a closing line.
fn script(calls: &[(&str, serde_json::Value)]) -> Script {
    let mut text = String::new();
    for (tool, args) in calls {
        let args = toml::Value::String(args.to_string());
        text.push_str(&format!(
            "[[turn]]\nblocks = [{{ tool = \"{tool}\", args = {args} }}]\n\n"
        ));
    }
    text.push_str("[[turn]]\nblocks = [{ text = \"Done.\" }]\n");
    Script::from_toml(&text).expect("script")
}

/// The whole sandbox, the network isolated as by default.
fn sandboxed(setup: &mut duet::agent::AgentSetup) {
    setup.shell = ShellConfig {
        program: Some("bash".into()),
        sandbox: Some(SandboxConfig {
            launcher: Some(duet_binary()),
            ..SandboxConfig::default()
        }),
        ..ShellConfig::default()
    };
}

/// Approves every request until the turn ends; checks that no job had started when
/// the first approval was asked for.
async fn approve_until_turn_end(agent: &mut TestAgent) {
    let mut first = true;
    loop {
        let event = agent
            .wait_for("an approval or the turn's end", |e| {
                matches!(e, Event::ApprovalNeeded { .. } | Event::TurnEnd { .. })
            })
            .await;
        match event {
            Event::ApprovalNeeded { call_id, .. } => {
                if first {
                    assert!(agent.handle.jobs().is_empty(), "started before approval");
                    first = false;
                }
                agent.decide(&call_id, Decision::Approve);
            }
            _ => return,
        }
    }
}

/// Whether any live process on the host is in process group `group`.
fn group_alive(group: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        std::fs::read_to_string(entry.path().join("stat")).is_ok_and(|stat| {
            let rest = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
            let fields: Vec<&str> = rest.split_whitespace().collect();
            fields.get(2) == Some(&group.to_string().as_str()) && fields[0] != "Z"
        })
    })
}

async fn wait_gone(group: u32) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while group_alive(group) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "process group {group} still runs"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A web server serving the workspace on a free port, and a command that fetches
/// `marker.txt` from it once it answers (trying for 10 s).
fn server_and_probe() -> (String, String) {
    // A port free on the host; inside the sandbox's network every port is free.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let server = format!("python3 -m http.server {port} --bind 127.0.0.1");
    let probe = format!(
        "for i in $(seq 100); do curl -sf http://127.0.0.1:{port}/marker.txt && break; \
         sleep 0.1; done"
    );
    (server, probe)
}

#[tokio::test]
async fn a_background_server_answers_a_later_step_and_stop_ends_it() {
    let repo = TestRepo::with_files(&[("marker.txt", "served-from-the-workspace\n")]);
    let (server_command, probe) = server_and_probe();
    let server = ScriptedServer::start(script(&[
        (
            "shell",
            serde_json::json!({"command": server_command, "background": true}),
        ),
        (
            "shell",
            serde_json::json!({"command": probe, "timeout": 30}),
        ),
        (
            "shell_jobs",
            serde_json::json!({"action": "output", "id": "bg1"}),
        ),
        (
            "shell_jobs",
            serde_json::json!({"action": "stop", "id": "bg1"}),
        ),
    ]))
    .await;
    let mut agent = TestAgent::start_with(
        &server,
        Wire::Anthropic,
        repo.path(),
        ApprovalMode::Auto,
        sandboxed,
    );
    agent.send("start a server and fetch the marker");
    approve_until_turn_end(&mut agent).await;
    let requests = server.requests();
    let started = tool_results(&requests[1]).pop().expect("a result");
    assert!(!started.is_error, "{started:?}");
    // The curl in the second step reached the server the first step left running.
    let fetched = tool_results(&requests[2]).pop().expect("a result");
    assert!(
        fetched.content.contains("served-from-the-workspace"),
        "{}",
        fetched.content
    );
    // The server's own log of that request, read afterwards.
    let log = tool_results(&requests[3]).pop().expect("a result");
    assert!(log.content.contains("GET /marker.txt"), "{}", log.content);
    let jobs = agent.handle.jobs();
    assert_eq!(jobs.len(), 1);
    assert!(matches!(jobs[0].state, JobState::Ended(_)), "{jobs:?}");
    wait_gone(jobs[0].pid).await;
    server.assert_no_violations();
}

#[tokio::test]
async fn every_job_dies_with_the_agent() {
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let server = ScriptedServer::start(script(&[
        (
            "shell",
            serde_json::json!({"command": "sleep 300", "background": true}),
        ),
        (
            "shell",
            serde_json::json!({"command": "sleep 301 & sleep 302", "background": true}),
        ),
    ]))
    .await;
    let mut agent = TestAgent::start_with(
        &server,
        Wire::Anthropic,
        repo.path(),
        ApprovalMode::Auto,
        sandboxed,
    );
    agent.send("start two jobs");
    approve_until_turn_end(&mut agent).await;
    let jobs = agent.handle.jobs();
    assert_eq!(jobs.len(), 2, "{jobs:?}");
    for job in &jobs {
        assert_eq!(job.state, JobState::Running);
        assert!(group_alive(job.pid));
    }
    agent.handle.send(Command::Shutdown).expect("agent alive");
    tokio::time::timeout(Duration::from_secs(10), agent.handle.stopped())
        .await
        .expect("the agent stops");
    for job in &jobs {
        wait_gone(job.pid).await;
    }
    assert!(agent.handle.jobs().is_empty());
}

/// The main shell dies (`exit`) after the model started a server: the shell that
/// replaces it shares the job's network, so the server still answers.
#[tokio::test]
async fn a_background_server_still_answers_after_the_shell_is_replaced() {
    let repo = TestRepo::with_files(&[("marker.txt", "still-served\n")]);
    let (server_command, probe) = server_and_probe();
    let server = ScriptedServer::start(script(&[
        (
            "shell",
            serde_json::json!({"command": server_command, "background": true}),
        ),
        ("shell", serde_json::json!({"command": "exit 3"})),
        (
            "shell",
            serde_json::json!({"command": probe, "timeout": 30}),
        ),
        (
            "shell_jobs",
            serde_json::json!({"action": "stop", "id": "bg1"}),
        ),
    ]))
    .await;
    let mut agent = TestAgent::start_with(
        &server,
        Wire::Anthropic,
        repo.path(),
        ApprovalMode::Auto,
        sandboxed,
    );
    agent.send("start a server, restart the shell, fetch the marker");
    approve_until_turn_end(&mut agent).await;
    let requests = server.requests();
    let exited = tool_results(&requests[2]).pop().expect("a result");
    assert!(
        exited.content.contains("the shell itself exited"),
        "the shell is gone: {}",
        exited.content
    );
    let fetched = tool_results(&requests[3]).pop().expect("a result");
    assert!(
        fetched.content.contains("still-served"),
        "{}",
        fetched.content
    );
    let jobs = agent.handle.jobs();
    wait_gone(jobs[0].pid).await;
    server.assert_no_violations();
}
