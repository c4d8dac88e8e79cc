//! `!command`: the user's own command in the session's shell. It runs without being
//! asked about (the user typed it) but inside the same sandbox as the model's commands,
//! its result reaches the model with the next message, and it is refused while a turn
//! runs (the shell is the model's until then).

use duet::agent::{Command, Event};
use duet::policy::ApprovalMode;
use duet::provider::Wire;

use duet::shell::sandbox::SandboxConfig;

use crate::common::harness::{TestAgent, TestRepo, all_text, duet_binary};
use crate::common::script::Script;
use crate::common::scripted_server::ScriptedServer;

/// Ids of the test's own commands, apart from the harness's message ids.
const COMMAND_ID: u64 = 1_000;

async fn run(agent: &mut TestAgent, command: &str) -> (bool, String) {
    agent
        .handle
        .send(Command::RunUserCommand {
            id: COMMAND_ID,
            command: command.into(),
        })
        .unwrap();
    match agent
        .wait_for("the end of the user's command", |event| {
            matches!(event, Event::UserCommandEnded { .. })
        })
        .await
    {
        Event::UserCommandEnded {
            is_error, output, ..
        } => (is_error, output),
        _ => unreachable!("wait_for returned a non-matching event"),
    }
}

for_each_wire!(the_users_command_reaches_the_model_with_the_next_message);

async fn the_users_command_reaches_the_model_with_the_next_message(wire: Wire) {
    let server = ScriptedServer::start(
        Script::from_toml("[[turn]]\nblocks = [{ text = \"Noted.\" }]\n").unwrap(),
    )
    .await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    // Ask mode asks about every command of the model's; the user's own is not asked about.
    let mut agent = TestAgent::start(&server, wire, repo.path(), ApprovalMode::Ask);
    let (is_error, output) = run(&mut agent, "echo user-said-hi > note.txt; cat note.txt").await;
    assert!(!is_error, "{output}");
    assert!(output.starts_with("exit 0"), "{output}");
    assert!(output.contains("user-said-hi"), "{output}");
    assert!(repo.path().join("note.txt").is_file());
    assert!(
        !agent
            .seen
            .iter()
            .any(|event| matches!(event, Event::ApprovalNeeded { .. })),
        "{:#?}",
        agent.seen
    );
    agent
        .position("live output", |event| {
            matches!(event, Event::UserCommandOutput { text, .. } if text.contains("user-said-hi"))
        });
    assert!(
        server.requests().is_empty(),
        "no model call for the command"
    );

    agent.send("what did I just run?");
    agent.turn_end().await;
    let request = &server.requests()[0];
    let text = all_text(request);
    assert!(text.contains("The user ran a command"), "{text}");
    assert!(text.contains("user-said-hi"), "{text}");
    assert!(text.contains("what did I just run?"), "{text}");
    server.assert_no_violations();
}

#[tokio::test]
async fn the_users_command_runs_in_the_sandbox() {
    let server = ScriptedServer::start(Script::from_toml("").unwrap()).await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let config = repo.path().join(".git/config");
    let before = std::fs::read(&config).unwrap();
    let mut agent = TestAgent::start_with(
        &server,
        Wire::Anthropic,
        repo.path(),
        ApprovalMode::Auto,
        |setup| {
            setup.shell.sandbox = Some(SandboxConfig {
                launcher: Some(duet_binary()),
                ..SandboxConfig::default()
            });
        },
    );
    let (_, output) = run(
        &mut agent,
        "printf '[core]\\n\\thooksPath = /tmp\\n' >> .git/config; echo tried",
    )
    .await;
    assert!(output.contains("tried"), "{output}");
    assert_eq!(
        std::fs::read(&config).unwrap(),
        before,
        "the repository's .git stays read-only to the user's command too: {output}"
    );
}

#[tokio::test]
async fn the_users_command_is_refused_while_a_turn_runs() {
    let script = r#"
[[turn]]
blocks = [{ tool = "shell", args = '{"command": "sleep 2; echo model-done"}' }]

[[turn]]
blocks = [{ text = "Done." }]
"#;
    let server = ScriptedServer::start(Script::from_toml(script).unwrap()).await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let mut agent = TestAgent::start(&server, Wire::Anthropic, repo.path(), ApprovalMode::Auto);
    agent.send("sleep a little");
    agent
        .wait_for("the model's command running", |event| {
            matches!(event, Event::ToolRunBegin { .. })
        })
        .await;
    let (is_error, output) = run(&mut agent, "touch user-marker").await;
    assert!(is_error, "{output}");
    assert!(output.contains("a turn is running"), "{output}");
    agent.turn_end().await;
    assert!(!repo.path().join("user-marker").exists());
    server.assert_no_violations();
}
