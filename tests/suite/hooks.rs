//! Hooks through the agent, written as Claude Code's documentation writes them (the
//! event's JSON on stdin, exit 2 to block with stderr as the reason): a PreToolUse
//! hook refuses a shell call and the model gets its reason; a PostToolUse hook's
//! feedback reaches the model; a Stop hook that exits 2 once makes the turn go on
//! once; a UserPromptSubmit hook refuses a message; a hook's `ask` makes auto mode ask
//! and an untrusted `allow` does not skip asking. And through the binary: a project's
//! hooks never run unless the user's config trusts the project. Checked on the host
//! (marker files) and in what the scripted model server received.

use std::path::Path;

use duet::agent::{AgentSetup, Event, TurnOutcome};
use duet::hooks::{Hook, HookEvent, Matcher, OnFailure, Origin};
use duet::policy::{ApprovalMode, Decision};
use duet::provider::Wire;

use crate::common::harness::{
    TestAgent, TestRepo, all_text, home_with_config, run_duet, tool_results, wire_env,
};
use crate::common::script::Script;
use crate::common::scripted_server::ScriptedServer;

/// A hook from the user's config, run as configured (the harness's shell has no
/// sandbox, so neither do its hooks).
fn hook(event: HookEvent, matcher: &str, command: &str) -> Hook {
    Hook {
        event,
        matcher: Matcher::new(matcher).expect("matcher"),
        command: command.to_string(),
        timeout: std::time::Duration::from_secs(20),
        trusted: false,
        on_failure: OnFailure::Continue,
        origin: Origin::User("/home/u/.config/duet/config.toml".into()),
    }
}

fn with_hooks(hooks: Vec<Hook>) -> impl FnOnce(&mut AgentSetup) {
    move |setup| setup.hooks = hooks
}

fn shell_then_text(command: &str, closing: &str) -> Script {
    let args = toml::Value::String(serde_json::json!({ "command": command }).to_string());
    Script::from_toml(&format!(
        "[[turn]]\nblocks = [{{ tool = \"shell\", args = {args} }}]\n\n\
         [[turn]]\nblocks = [{{ text = \"{closing}\" }}]\n"
    ))
    .expect("script")
}

/// Claude Code's documented guard: read the JSON, look at `tool_input.command`, exit 2
/// with the reason on stderr. Written with Python so it parses the JSON for real.
const GUARD: &str = r#"python3 -c '
import json, sys
event = json.load(sys.stdin)
command = event["tool_input"].get("command", "")
if event["tool_name"] == "Bash" and "rm -rf" in command:
    print("Blocked: rm -rf is not allowed; move files to ./trash instead", file=sys.stderr)
    sys.exit(2)
'"#;

#[tokio::test]
async fn a_pre_tool_use_hook_blocks_a_shell_call_and_the_model_gets_its_reason() {
    let server = ScriptedServer::start(shell_then_text("rm -rf build", "Understood.")).await;
    let repo = TestRepo::with_files(&[("build/keep.txt", "still here\n")]);
    let mut agent = TestAgent::start_with(
        &server,
        Wire::Anthropic,
        repo.path(),
        ApprovalMode::Auto,
        with_hooks(vec![hook(HookEvent::PreToolUse, "Bash", GUARD)]),
    );
    agent.send("clean the build");
    assert!(matches!(
        agent.turn_end().await,
        TurnOutcome::Finished { .. }
    ));
    assert_eq!(
        repo.read("build/keep.txt"),
        "still here\n",
        "the command ran"
    );
    let result = &tool_results(&server.requests()[1])[0];
    assert!(result.is_error);
    assert!(
        result
            .content
            .contains("rm -rf is not allowed; move files to ./trash instead"),
        "{}",
        result.content
    );
    agent.position("the session's header names the hook", |event| {
        matches!(event, Event::SessionStarted { hooks, .. }
            if hooks.len() == 1 && hooks[0].event == "PreToolUse" && !hooks[0].project)
    });
    agent.position("the user is told", |event| {
        matches!(event, Event::HookNotice { hook_event, warning: true, text, .. }
            if hook_event == "PreToolUse" && text.contains("rm -rf is not allowed"))
    });
    server.assert_no_violations();
}

#[tokio::test]
async fn a_post_tool_use_hooks_feedback_reaches_the_model() {
    let server = ScriptedServer::start(shell_then_text("echo built > out.txt", "Noted.")).await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let post =
        r#"cat > post-input.json; echo "lint: out.txt has no trailing newline policy" >&2; exit 2"#;
    let context = r#"echo '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "remember to update CHANGELOG.md"}}'"#;
    let mut agent = TestAgent::start_with(
        &server,
        Wire::OpenAiChat,
        repo.path(),
        ApprovalMode::Auto,
        with_hooks(vec![
            hook(HookEvent::PostToolUse, "Bash", post),
            hook(HookEvent::PostToolUse, "shell", context),
            hook(HookEvent::PostToolUse, "Edit|Write", "touch wrong-matcher"),
        ]),
    );
    agent.send("build it");
    agent.turn_end().await;
    let result = &tool_results(&server.requests()[1])[0];
    assert!(!result.is_error, "{result:?}");
    assert!(result.content.starts_with("exit 0"), "{}", result.content);
    for feedback in [
        "PostToolUse hook feedback",
        "lint: out.txt has no trailing newline policy",
        "remember to update CHANGELOG.md",
    ] {
        assert!(result.content.contains(feedback), "{}", result.content);
    }
    assert!(!repo.path().join("wrong-matcher").exists());
    // The hook got the call and its response, in Claude Code's shape.
    let input: serde_json::Value =
        serde_json::from_str(&repo.read("post-input.json")).expect("hook input");
    assert_eq!(input["hook_event_name"], "PostToolUse");
    assert_eq!(input["tool_name"], "Bash");
    assert_eq!(input["tool_input"]["command"], "echo built > out.txt");
    assert!(
        input["tool_response"]["output"]
            .as_str()
            .is_some_and(|output| output.starts_with("exit 0")),
        "{input}"
    );
    server.assert_no_violations();
}

#[tokio::test]
async fn a_stop_hook_that_exits_2_once_makes_the_turn_go_on_once() {
    let script = Script::from_toml(
        "[[turn]]\nblocks = [{ text = \"All done.\" }]\n\n\
         [[turn]]\nblocks = [{ text = \"Ran the tests too; done now.\" }]\n",
    )
    .expect("script");
    let server = ScriptedServer::start(script).await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    // Blocks the first stop only, as a real "tests must pass" hook would once they do;
    // it records `stop_hook_active` each time.
    let stop = r#"input=$(cat); echo "$input" >> stop-inputs.jsonl
if [ ! -e stopped-once ]; then touch stopped-once; echo "run the tests before you stop" >&2; exit 2; fi"#;
    let mut agent = TestAgent::start_with(
        &server,
        Wire::Anthropic,
        repo.path(),
        ApprovalMode::Auto,
        with_hooks(vec![hook(HookEvent::Stop, "", stop)]),
    );
    agent.send("finish up");
    assert!(matches!(
        agent.turn_end().await,
        TurnOutcome::Finished { .. }
    ));
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "one more step, not more");
    let second = all_text(&requests[1]);
    assert!(second.contains("run the tests before you stop"), "{second}");
    let inputs: Vec<serde_json::Value> = repo
        .read("stop-inputs.jsonl")
        .lines()
        .map(|line| serde_json::from_str(line).expect("json"))
        .collect();
    let active: Vec<bool> = inputs
        .iter()
        .map(|input| input["stop_hook_active"].as_bool().unwrap_or_default())
        .collect();
    assert_eq!(active, [false, true]);
    server.assert_no_violations();
}

#[tokio::test]
async fn a_stop_hook_that_always_blocks_cannot_keep_the_turn_going() {
    let turns: String = (0..6)
        .map(|n| format!("[[turn]]\nblocks = [{{ text = \"Attempt {n}.\" }}]\n\n"))
        .collect();
    let server = ScriptedServer::start(Script::from_toml(&turns).expect("script")).await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let mut agent = TestAgent::start_with(
        &server,
        Wire::Anthropic,
        repo.path(),
        ApprovalMode::Auto,
        with_hooks(vec![hook(
            HookEvent::Stop,
            "",
            "echo never done >&2; exit 2",
        )]),
    );
    agent.send("finish");
    agent.turn_end().await;
    assert_eq!(
        server.requests().len(),
        4,
        "the first answer and three more"
    );
}

#[tokio::test]
async fn a_user_prompt_submit_hook_refuses_a_message_and_adds_context_to_others() {
    let server = ScriptedServer::start(
        Script::from_toml("[[turn]]\nblocks = [{ text = \"Fine.\" }]\n").expect("script"),
    )
    .await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let prompt = r#"python3 -c '
import json, sys
prompt = json.load(sys.stdin)["prompt"]
if "password" in prompt:
    print("do not paste secrets", file=sys.stderr)
    sys.exit(2)
print("Current branch: feature/login")
'"#;
    let mut agent = TestAgent::start_with(
        &server,
        Wire::Anthropic,
        repo.path(),
        ApprovalMode::Auto,
        with_hooks(vec![hook(HookEvent::UserPromptSubmit, "", prompt)]),
    );
    agent.send("my password is hunter2, log in");
    assert!(matches!(
        agent.turn_end().await,
        TurnOutcome::StoppedByHook { .. }
    ));
    assert!(server.requests().is_empty(), "the model never saw it");
    agent.position(
        "the message is taken back",
        |event| matches!(event, Event::MessageWithdrawn { text, .. } if text.contains("hunter2")),
    );
    agent.send("what branch am I on?");
    agent.turn_end().await;
    let sent = all_text(&server.requests()[0]);
    assert!(sent.contains("Current branch: feature/login"), "{sent}");
    assert!(!sent.contains("hunter2"), "{sent}");
    server.assert_no_violations();
}

#[tokio::test]
async fn a_hooks_ask_makes_auto_mode_ask_and_an_untrusted_allow_does_not_skip_asking() {
    let ask = r#"echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask"}}'"#;
    let server = ScriptedServer::start(shell_then_text("touch asked.txt", "Done.")).await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let mut agent = TestAgent::start_with(
        &server,
        Wire::Anthropic,
        repo.path(),
        ApprovalMode::Auto,
        with_hooks(vec![hook(HookEvent::PreToolUse, "Bash", ask)]),
    );
    agent.send("touch it");
    let (call_id, _) = agent.approval_needed().await;
    assert!(
        !repo.path().join("asked.txt").exists(),
        "ran before the answer"
    );
    agent.decide(&call_id, Decision::Approve);
    agent.turn_end().await;
    assert!(repo.path().join("asked.txt").exists());

    // An untrusted hook's `allow` in ask mode: the user is still asked.
    let allow = r#"echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}'"#;
    let server = ScriptedServer::start(shell_then_text("touch allowed.txt", "Done.")).await;
    let mut agent = TestAgent::start_with(
        &server,
        Wire::Anthropic,
        repo.path(),
        ApprovalMode::Ask,
        with_hooks(vec![hook(HookEvent::PreToolUse, "Bash", allow)]),
    );
    agent.send("touch it");
    let (call_id, _) = agent.approval_needed().await;
    assert!(!repo.path().join("allowed.txt").exists());
    agent.decide(&call_id, Decision::Reject { reason: None });
    agent.turn_end().await;
    assert!(!repo.path().join("allowed.txt").exists());
}

/// The project's hook files, as a hostile repository would write them: each hook
/// touches a marker outside the workspace.
fn write_project_hooks(repo: &Path, marker: &Path) {
    let touch = format!("touch '{}'", marker.display());
    let settings = serde_json::json!({
        "hooks": {
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": touch}]}],
            "PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": touch}]}]
        }
    });
    std::fs::create_dir_all(repo.join(".claude")).unwrap();
    std::fs::write(repo.join(".claude/settings.json"), settings.to_string()).unwrap();
    std::fs::create_dir_all(repo.join(".duet")).unwrap();
    std::fs::write(
        repo.join(".duet/hooks.toml"),
        format!("[[SessionStart]]\ncommand = \"{touch}\"\n"),
    )
    .unwrap();
}

/// Runs `duet exec "say hi"` in `repo` with `home`'s config, and checks it succeeded.
async fn exec_say_hi(server: &ScriptedServer, repo: &TestRepo, home: &tempfile::TempDir) {
    let output = run_duet(
        repo.path(),
        home.path(),
        &wire_env(server, Wire::Anthropic),
        &["exec", "--approval", "auto", "say hi"],
    )
    .await;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test]
async fn an_untrusted_projects_hooks_never_run() {
    let server = ScriptedServer::start(shell_then_text("echo hi", "Done.")).await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("project-hook-ran");
    write_project_hooks(repo.path(), &marker);
    // Without the sandbox, so a hook that ran would leave its marker outside.
    let home = home_with_config("[sandbox]\nenabled = false\n");
    exec_say_hi(&server, &repo, &home).await;
    assert_eq!(server.requests().len(), 2, "the task ran");
    assert!(!marker.exists(), "an untrusted project's hook ran");
}

#[tokio::test]
async fn a_trusted_projects_hooks_run_in_the_sandbox_of_the_session() {
    let server = ScriptedServer::start(shell_then_text("echo hi", "Done.")).await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    // Inside the workspace, which the sandbox lets commands write.
    let marker = repo.path().join("project-hook-ran");
    write_project_hooks(repo.path(), &marker);
    let config = format!(
        "[hooks]\ntrusted_projects = [{}]\n",
        toml::Value::String(repo.path().display().to_string())
    );
    let home = home_with_config(&config);
    exec_say_hi(&server, &repo, &home).await;
    assert!(marker.exists(), "the trusted project's hooks did not run");
}

/// `duet exec` gives the agent a moment to stop after the task: SessionStart and
/// SessionEnd hooks both run, and SessionStart's output reaches the model.
#[tokio::test]
async fn session_start_and_end_hooks_run_around_an_exec_task() {
    let server = ScriptedServer::start(
        Script::from_toml("[[turn]]\nblocks = [{ text = \"Hello.\" }]\n").expect("script"),
    )
    .await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let config = "[sandbox]\nenabled = false\n\n\
        [[hooks.SessionStart]]\ncommand = \"echo 'Deploys are frozen this week.'\"\n\n\
        [[hooks.SessionEnd]]\ncommand = \"sleep 0.5; cat > session-end.json\"\n";
    let home = home_with_config(config);
    let output = run_duet(
        repo.path(),
        home.path(),
        &wire_env(&server, Wire::Anthropic),
        &["exec", "--approval", "auto", "say hello"],
    )
    .await;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let sent = all_text(&server.requests()[0]);
    assert!(sent.contains("Deploys are frozen this week."), "{sent}");
    let ended: serde_json::Value =
        serde_json::from_str(&repo.read("session-end.json")).expect("SessionEnd input");
    assert_eq!(ended["hook_event_name"], "SessionEnd");
}

/// The explorer's lookups go through the same hooks: a PreToolUse guard on `Read`
/// keeps it from reading a file the team put off limits, and nothing of the file
/// reaches any request.
#[tokio::test]
async fn the_explorers_reads_go_through_pre_tool_use_hooks() {
    const SECRET: &str = "prod-db-password-9f2";
    let script = Script::from_toml(
        r#"
[[turn]]
blocks = [{ tool = "explore", args = '{"question": "What is in secrets.env?"}' }]

[[turn]]
blocks = [{ tool = "read", args = '{"path": "secrets.env"}' }]

[[turn]]
blocks = [{ text = "I could not read it." }]

[[turn]]
blocks = [{ text = "The explorer was refused." }]
"#,
    )
    .expect("script");
    let server = ScriptedServer::start(script).await;
    let repo = TestRepo::with_files(&[("secrets.env", &format!("DB={SECRET}\n"))]);
    let guard = r#"python3 -c '
import json, sys
event = json.load(sys.stdin)
if event["tool_input"].get("file_path", "").endswith(".env"):
    print("reading .env files is not allowed", file=sys.stderr)
    sys.exit(2)
'"#;
    let mut agent = TestAgent::start_with(
        &server,
        Wire::Anthropic,
        repo.path(),
        ApprovalMode::Auto,
        with_hooks(vec![hook(HookEvent::PreToolUse, "Read", guard)]),
    );
    agent.send("what is the database password?");
    agent.turn_end().await;
    let requests = server.requests();
    let everything: String = requests.iter().map(all_text).collect();
    assert!(!everything.contains(SECRET), "the guarded file was read");
    assert!(
        everything.contains("reading .env files is not allowed"),
        "{everything}"
    );
    server.assert_no_violations();
}

/// A task a UserPromptSubmit hook refuses never reaches the model, and `duet exec`
/// exits 2, as for any stop that is not the task's end.
#[tokio::test]
async fn exec_exits_2_when_a_hook_refuses_the_task() {
    let server = ScriptedServer::start(
        Script::from_toml("[[turn]]\nblocks = [{ text = \"Never.\" }]\n").expect("script"),
    )
    .await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let config = "[sandbox]\nenabled = false\n\n\
        [[hooks.UserPromptSubmit]]\ncommand = \"echo 'no deploys on Fridays' >&2; exit 2\"\n";
    let home = home_with_config(config);
    let output = run_duet(
        repo.path(),
        home.path(),
        &wire_env(&server, Wire::Anthropic),
        &["exec", "--approval", "auto", "deploy to prod"],
    )
    .await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(2), "{stdout}");
    assert!(server.requests().is_empty(), "the model saw the task");
    assert!(stdout.contains("no deploys on Fridays"), "{stdout}");
    assert!(stdout.contains("stopped by a hook"), "{stdout}");
}
