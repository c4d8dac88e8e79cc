//! The command policy end to end, against the scripted server: `auto` mode asks before
//! a destructive command (and headless runs refuse it, telling the model why);
//! `--yes` approves ordinary asks but never a change to a protected path; the user's
//! `[policy]` config unprotects paths and lets `auto` run more classes.

use duet::agent::protocol::ApprovalView;
use duet::agent::{Event, TurnOutcome};
use duet::policy::{ApprovalMode, CommandClass, Decision, Reason};
use duet::provider::Wire;
use pretty_assertions::assert_eq;

use crate::common::harness::{
    TestAgent, TestRepo, home_with_config, run_duet, tool_results, wire_env,
};
use crate::common::script::{LoadScript, Script};
use crate::common::scripted_server::ScriptedServer;

const LOCKFILE: &str = "version = 3\n";

fn repo() -> TestRepo {
    TestRepo::with_files(&[("build/app.o", "binary\n"), ("Cargo.lock", LOCKFILE)])
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test]
async fn auto_mode_asks_before_rm_rf_with_the_class_and_why() {
    let server = ScriptedServer::start(Script::load("policy_rm_rf")).await;
    let repo = repo();
    let mut agent = TestAgent::start(&server, Wire::Anthropic, repo.path(), ApprovalMode::Auto);
    agent.send("clean the build");
    let (call_id, view) = agent.approval_needed().await;
    assert_eq!(
        view,
        ApprovalView::Command {
            command: "rm -rf build".into(),
            cwd: "./".into(),
            class: CommandClass::Destructive,
            reasons: vec![Reason {
                part: "rm -rf build".into(),
                class: CommandClass::Destructive,
                why: "deletes build and everything in it".into(),
            }],
            protected: Vec::new(),
        }
    );
    assert!(
        repo.path().join("build/app.o").exists(),
        "nothing runs before approval"
    );
    agent.decide(
        &call_id,
        Decision::Reject {
            reason: Some("keep the build".into()),
        },
    );
    agent.turn_end().await;
    assert!(repo.path().join("build/app.o").exists());
    let result = &tool_results(&server.requests()[1])[0];
    assert!(result.is_error, "{result:?}");
    assert!(
        result.content.contains("keep the build"),
        "{}",
        result.content
    );
    server.assert_no_violations();
}

for_each_wire!(headless_auto_refuses_rm_rf_and_the_model_gets_the_reason);

async fn headless_auto_refuses_rm_rf_and_the_model_gets_the_reason(wire: Wire) {
    let server = ScriptedServer::start(Script::load("policy_rm_rf")).await;
    let repo = repo();
    let home = tempfile::tempdir().unwrap();
    let env = wire_env(&server, wire);
    let output = run_duet(
        repo.path(),
        home.path(),
        &env,
        &["exec", "--approval", "auto", "clean the build"],
    )
    .await;
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        text(&output.stderr)
    );
    assert!(repo.path().join("build/app.o").exists(), "{stdout}");
    assert!(
        stdout.contains("? approve destructive command `rm -rf build`?"),
        "{stdout}"
    );
    let result = &tool_results(&server.requests()[1])[0];
    assert!(result.is_error, "{result:?}");
    for needle in [
        "the command was not run",
        "auto mode asks before a destructive command",
        "`rm -rf build` deletes build and everything in it",
        "no one to approve in headless mode",
    ] {
        assert!(
            result.content.contains(needle),
            "{needle:?} not in {}",
            result.content
        );
    }
    server.assert_no_violations();
}

#[tokio::test]
async fn yes_approves_ordinary_asks_but_refuses_protected_paths_and_says_how_to_allow_them() {
    let server = ScriptedServer::start(Script::load("policy_protected")).await;
    let repo = repo();
    let home = tempfile::tempdir().unwrap();
    let env = wire_env(&server, Wire::Anthropic);
    let output = run_duet(
        repo.path(),
        home.path(),
        &env,
        &["exec", "--approval", "auto", "--yes", "tidy up"],
    )
    .await;
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        text(&output.stderr)
    );
    assert!(
        !repo.path().join("build").exists(),
        "--yes approved rm -rf: {stdout}"
    );
    assert_eq!(repo.read("Cargo.lock"), LOCKFILE, "{stdout}");

    let results = tool_results(&server.requests()[1]);
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(!results[0].is_error, "{:?}", results[0]);
    let config_file = home.path().join("config/duet/config.toml");
    for refused in &results[1..] {
        assert!(refused.is_error, "{refused:?}");
        for needle in [
            "Cargo.lock is protected (lockfile)",
            "`duet exec --yes` never approves changes to protected paths",
            "add \"!Cargo.lock\" to `protected` in the [policy] table",
            &config_file.display().to_string(),
        ] {
            assert!(
                refused.content.contains(needle),
                "{needle:?} not in {}",
                refused.content
            );
        }
    }
    server.assert_no_violations();
}

#[tokio::test]
async fn the_users_policy_config_unprotects_paths_and_widens_auto() {
    let server = ScriptedServer::start(Script::load("policy_protected")).await;
    let repo = repo();
    let home = home_with_config(
        "[policy]\nprotected = [\"!Cargo.lock\"]\nauto_allow = [\"destructive\"]\n",
    );
    let env = wire_env(&server, Wire::Anthropic);
    let output = run_duet(
        repo.path(),
        home.path(),
        &env,
        &["exec", "--approval", "auto", "--json", "tidy up"],
    )
    .await;
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        text(&output.stderr)
    );
    assert!(
        !stdout.contains("approval_needed"),
        "nothing asks: {stdout}"
    );
    assert!(!repo.path().join("build").exists());
    assert_eq!(
        repo.read("Cargo.lock"),
        "ok\n",
        "the edit, then the overwrite landed"
    );
    let results = tool_results(&server.requests()[1]);
    assert!(results.iter().all(|result| !result.is_error), "{results:?}");
    server.assert_no_violations();
}

#[tokio::test]
async fn read_only_commands_run_in_ask_mode_without_asking() {
    let server = ScriptedServer::start(Script::load("policy_read_only")).await;
    let repo = repo();
    let mut agent = TestAgent::start(&server, Wire::OpenAiChat, repo.path(), ApprovalMode::Ask);
    agent.send("what is in the lockfile?");
    assert_eq!(
        agent.turn_end().await,
        TurnOutcome::Finished {
            stop_reason: duet::provider::StopReason::EndTurn
        }
    );
    assert!(
        !agent
            .seen
            .iter()
            .any(|event| matches!(event, Event::ApprovalNeeded { .. })),
        "{:?}",
        agent.seen
    );
    let result = &tool_results(&server.requests()[1])[0];
    assert!(!result.is_error, "{result:?}");
    assert!(result.content.contains("app.o"), "{}", result.content);
    assert!(result.content.contains("version = 3"), "{}", result.content);
    server.assert_no_violations();
}
