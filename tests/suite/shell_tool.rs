//! The `shell` tool through the agent, over both wires: live output and a result with
//! the exit status; approval of the command in ask mode; refusal in read-only mode;
//! answering a command that waits for input, by the model or by the user.

use duet::agent::protocol::{ApprovalView, CommandInput, user_command_call_id};
use duet::agent::{Command, Event};
use duet::policy::{ApprovalMode, CommandClass, Decision, Reason};
use duet::provider::Wire;

use crate::common::harness::{TestAgent, TestRepo, tool_results};
use crate::common::script::{LoadScript, Script};
use crate::common::scripted_server::ScriptedServer;

async fn start(wire: Wire, mode: ApprovalMode) -> (ScriptedServer, TestRepo, TestAgent) {
    let server = ScriptedServer::start(Script::load("shell_command")).await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let agent = TestAgent::start(&server, wire, repo.path(), mode);
    agent.send("say hello from the shell");
    (server, repo, agent)
}

for_each_wire!(a_command_runs_and_streams_its_output);

async fn a_command_runs_and_streams_its_output(wire: Wire) {
    let (server, repo, mut agent) = start(wire, ApprovalMode::Auto).await;
    agent.turn_end().await;
    assert!(repo.path().join("made.txt").exists());
    agent.position(
        "live output",
        |e| matches!(e, Event::ToolOutputDelta { text, .. } if text.contains("hello-from-shell")),
    );
    let result = &tool_results(&server.requests()[1])[0];
    assert!(!result.is_error, "{result:?}");
    assert!(result.content.starts_with("exit 0"), "{}", result.content);
    assert!(
        result.content.contains("hello-from-shell"),
        "{}",
        result.content
    );
    server.assert_no_violations();
}

#[tokio::test]
async fn ask_mode_shows_the_command_and_waits() {
    let (server, repo, mut agent) = start(Wire::Anthropic, ApprovalMode::AutoEdit).await;
    let (call_id, request) = match agent
        .wait_for("the approval", |e| {
            matches!(e, Event::ApprovalNeeded { .. })
        })
        .await
    {
        Event::ApprovalNeeded {
            call_id, request, ..
        } => (call_id, request),
        _ => unreachable!(),
    };
    assert_eq!(
        request,
        ApprovalView::Command {
            command: "echo hello-from-shell && touch made.txt".into(),
            cwd: "./".into(),
            class: CommandClass::WritesWorkspace,
            reasons: vec![Reason {
                part: "touch made.txt".into(),
                class: CommandClass::WritesWorkspace,
                why: "writes made.txt".into(),
            }],
            protected: Vec::new(),
        }
    );
    assert!(
        !repo.path().join("made.txt").exists(),
        "nothing runs before approval"
    );
    agent.decide(&call_id, Decision::Approve);
    agent.turn_end().await;
    assert!(repo.path().join("made.txt").exists());
    server.assert_no_violations();
}

#[tokio::test]
async fn read_only_mode_refuses_commands_that_write() {
    let (server, repo, mut agent) = start(Wire::OpenAiChat, ApprovalMode::ReadOnly).await;
    agent.turn_end().await;
    assert!(!repo.path().join("made.txt").exists());
    let result = &tool_results(&server.requests()[1])[0];
    assert!(result.is_error);
    assert!(
        result.content.contains("read-only mode"),
        "{}",
        result.content
    );
    server.assert_no_violations();
}

/// `input` answers a prompt the command stops at: typed into its terminal, so a
/// password prompt that reads the terminal itself gets it too; the user approves the
/// command with its input shown.
#[tokio::test]
async fn input_answers_a_prompt_and_is_shown_for_approval() {
    let script = r#"
[[turn]]
blocks = [{ tool = "shell", args = '{"command": "read -r -p \"Overwrite? [y/N] \" yes; [ \"$yes\" = y ] && echo confirmed > answer.txt", "input": "y\n"}' }]

[[turn]]
blocks = [{ text = "Answered." }]
"#;
    let server = ScriptedServer::start(Script::from_toml(script).unwrap()).await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let mut agent = TestAgent::start(&server, Wire::Anthropic, repo.path(), ApprovalMode::Ask);
    agent.send("answer the prompt");
    let (call_id, request) = agent.approval_needed().await;
    let ApprovalView::Command { command, .. } = &request else {
        panic!("{request:?}");
    };
    assert!(
        command.contains("typed when it waits for input: \"y\\n\""),
        "{command}"
    );
    agent
        .handle
        .send(Command::Decide {
            call_id,
            decision: Decision::Approve,
        })
        .unwrap();
    agent.turn_end().await;
    assert_eq!(
        std::fs::read_to_string(repo.path().join("answer.txt")).unwrap(),
        "confirmed\n"
    );
    server.assert_no_violations();
}

/// Waits until the command of `call_id` shows its prompt, then types `keys` into it as
/// a front end does: focus first, then the keys.
async fn answer_prompt(agent: &mut TestAgent, call_id: &str, prompt: &str, keys: &str) {
    agent
        .wait_for("the prompt", |event| {
            matches!(event, Event::CommandWaitingForInput { call_id: id, line, .. }
                if id == call_id && line == prompt)
        })
        .await;
    for input in [
        CommandInput::Focus,
        CommandInput::Text { text: keys.into() },
    ] {
        agent
            .handle
            .send(Command::TypeIntoCommand {
                call_id: call_id.into(),
                input,
            })
            .unwrap();
    }
}

/// The user types into the model's command that waits for input: the answer reaches
/// the command (a file on the host says so) and the model sees the exchange.
#[tokio::test]
async fn the_user_types_the_answer_into_the_models_waiting_command() {
    let script = r#"
[[turn]]
blocks = [{ tool = "shell", args = '{"command": "read -r -p \"Deploy to staging? [y/N] \" yes; [ \"$yes\" = y ] && echo deployed > answer.txt"}' }]

[[turn]]
blocks = [{ text = "Deployed." }]
"#;
    let server = ScriptedServer::start(Script::from_toml(script).unwrap()).await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let mut agent = TestAgent::start(&server, Wire::OpenAiChat, repo.path(), ApprovalMode::Auto);
    agent.send("deploy");
    let call_id = match agent
        .wait_for("the call", |e| matches!(e, Event::ToolRunBegin { .. }))
        .await
    {
        Event::ToolRunBegin { call_id } => call_id,
        _ => unreachable!(),
    };
    answer_prompt(&mut agent, &call_id, "Deploy to staging? [y/N]", "y\r").await;
    agent.turn_end().await;
    assert_eq!(
        std::fs::read_to_string(repo.path().join("answer.txt")).unwrap(),
        "deployed\n"
    );
    let result = &tool_results(&server.requests()[1])[0];
    assert!(!result.is_error, "{result:?}");
    assert!(
        result.content.contains("Deploy to staging? [y/N] y"),
        "{}",
        result.content
    );
    server.assert_no_violations();
}

/// The user's own `!command` takes their keys the same way.
#[tokio::test]
async fn the_user_types_into_their_own_waiting_command() {
    let server = ScriptedServer::start(Script::from_toml("[[turn]]\nblocks = []\n").unwrap()).await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let mut agent = TestAgent::start(&server, Wire::Anthropic, repo.path(), ApprovalMode::Ask);
    let id = 7_000;
    agent
        .handle
        .send(Command::RunUserCommand {
            id,
            command: "read -r -p 'Name: ' name; echo \"$name\" > name.txt".into(),
        })
        .unwrap();
    answer_prompt(&mut agent, &user_command_call_id(id), "Name:", "Ada\r").await;
    agent
        .wait_for("the command's end", |e| {
            matches!(
                e,
                Event::UserCommandEnded {
                    is_error: false,
                    ..
                }
            )
        })
        .await;
    assert_eq!(
        std::fs::read_to_string(repo.path().join("name.txt")).unwrap(),
        "Ada\n"
    );
}
