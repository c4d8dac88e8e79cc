use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::json;

use super::config::{HooksSection, parse_claude_settings, parse_project_toml};
use super::*;

fn section(toml_text: &str) -> HooksSection {
    toml::from_str(toml_text).unwrap()
}

fn user_hooks(toml_text: &str) -> Vec<Hook> {
    section(toml_text)
        .user_hooks(Path::new("/home/u/.config/duet/config.toml"))
        .unwrap()
}

#[test]
fn matchers_take_duet_names_and_claude_codes() {
    let bash = Matcher::new("Bash").unwrap();
    assert!(bash.matches("shell"));
    assert!(!bash.matches("read"));
    let edits = Matcher::new("Edit|Write").unwrap();
    assert!(edits.matches("edit") && edits.matches("write"));
    assert!(!edits.matches("shell"));
    let whole = Matcher::new("Edit").unwrap();
    assert!(!whole.matches("multi_edit"), "the whole name must match");
    let mcp = Matcher::new("mcp__github__.*").unwrap();
    assert!(mcp.matches("github__create_issue"));
    assert!(Matcher::new("*").unwrap().matches("anything"));
    assert!(Matcher::new("").unwrap().matches("anything"));
    assert!(Matcher::new("shell").unwrap().matches("shell"));
    assert!(Matcher::new("(").is_err());
}

#[test]
fn the_users_table_reads_every_event() {
    let hooks = user_hooks(
        r#"
trusted_projects = ["~/work/app"]

[[PreToolUse]]
matcher = "Bash"
command = "check.sh"
timeout = 5
on_failure = "block"

[[Stop]]
command = "tests.sh"
trusted = true
"#,
    );
    assert_eq!(hooks.len(), 2);
    assert_eq!(hooks[0].event, HookEvent::PreToolUse);
    assert_eq!(hooks[0].matcher.source(), "Bash");
    assert_eq!(hooks[0].timeout, Duration::from_secs(5));
    assert_eq!(hooks[0].on_failure, OnFailure::Block);
    assert!(!hooks[0].trusted);
    assert_eq!(hooks[1].event, HookEvent::Stop);
    assert!(hooks[1].trusted);
}

#[test]
fn bad_entries_are_errors_naming_the_file_and_entry() {
    let file = Path::new("/c/config.toml");
    let error = |text: &str| section(text).user_hooks(file).unwrap_err().to_string();
    assert_eq!(
        error("[[Stop]]\nmatcher = \"Bash\"\ncommand = \"x\"\n"),
        "/c/config.toml: Stop hook 1: Stop hooks take no `matcher` (it applies to tool events)"
    );
    assert!(error("[[PreToolUse]]\nmatcher = \"(\"\ncommand = \"x\"\n").contains("regular"));
    assert!(error("[[PreToolUse]]\ncommand = \" \"\n").contains("`command` is empty"));
    assert!(error("[[PreToolUse]]\ncommand = \"x\"\non_failure = \"maybe\"\n").contains("maybe"));
    assert!(toml::from_str::<HooksSection>("[[PreTool]]\ncommand = \"x\"\n").is_err());
}

#[test]
fn a_project_cannot_trust_its_own_hooks() {
    let file = Path::new("/repo/.duet/hooks.toml");
    let error =
        parse_project_toml("[[PreToolUse]]\ncommand = \"x\"\ntrusted = true\n", file).unwrap_err();
    assert!(
        error.to_string().contains("cannot mark its own hooks"),
        "{error}"
    );
    let error = parse_project_toml("trusted_projects = [\"/\"]\n", file).unwrap_err();
    assert!(error.to_string().contains("your own config"), "{error}");
    let hooks = parse_project_toml("[[PostToolUse]]\ncommand = \"fmt.sh\"\n", file).unwrap();
    assert_eq!(hooks[0].origin, Origin::Project(file.to_path_buf()));
    assert!(!hooks[0].trusted);
}

#[test]
fn claude_codes_settings_file_reads_as_claude_code_writes_it() {
    let settings = r#"{
      "permissions": {"allow": ["Bash(npm test)"]},
      "hooks": {
        "PreToolUse": [
          {"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh", "timeout": 10}]}
        ],
        "Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "tests.sh"}]}],
        "PreCompact": [{"hooks": [{"type": "command", "command": "ignored.sh"}]}],
        "PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "prompt", "prompt": "skipped"}]}]
      }
    }"#;
    let hooks = parse_claude_settings(settings, Path::new("/repo/.claude/settings.json")).unwrap();
    let summary: Vec<(HookEvent, &str, &str, u64)> = hooks
        .iter()
        .map(|hook| {
            (
                hook.event,
                hook.matcher.source(),
                hook.command.as_str(),
                hook.timeout.as_secs(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (HookEvent::PreToolUse, "Bash", "guard.sh", 10),
            (HookEvent::Stop, "*", "tests.sh", 60),
        ]
    );
}

#[test]
fn a_project_is_trusted_only_when_the_users_config_names_it() {
    let home = tempfile::tempdir().unwrap();
    let repo = home.path().join("work/app");
    std::fs::create_dir_all(&repo).unwrap();
    let listed = section("trusted_projects = [\"~/work/app\"]\n");
    assert!(listed.trusts_project(&repo, Some(home.path())));
    assert!(!listed.trusts_project(home.path(), Some(home.path())));
    let relative = section("trusted_projects = [\"work/app\"]\n");
    assert!(
        !relative.trusts_project(&repo, Some(home.path())),
        "relative paths name nothing"
    );
    assert!(!HooksSection::default().trusts_project(&repo, Some(home.path())));
}

fn trusted(event: HookEvent, matcher: &str, command: &str) -> Hook {
    Hook {
        event,
        matcher: Matcher::new(matcher).unwrap(),
        command: command.to_string(),
        timeout: Duration::from_secs(10),
        trusted: true,
        on_failure: OnFailure::Continue,
        origin: Origin::User("/c/config.toml".into()),
    }
}

#[tokio::test]
async fn a_claude_code_hook_reads_the_command_from_stdin_and_blocks_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    // Written as Claude Code's documentation writes them, without jq.
    let script = r#"input=$(cat); case "$input" in *'"command":"rm -rf'*) echo "no rm -rf, use trash" >&2; exit 2;; esac; exit 0"#;
    let hooks = Hooks::new(
        vec![trusted(HookEvent::PreToolUse, "Bash", script)],
        dir.path(),
        None,
        "s1",
    );
    let input = json!({"tool_name": "Bash", "tool_input": {"command": "rm -rf build"}});
    let outcome = hooks.run(HookEvent::PreToolUse, Some("shell"), input).await;
    assert_eq!(outcome.block.as_deref(), Some("no rm -rf, use trash"));
    let fine = json!({"tool_name": "Bash", "tool_input": {"command": "ls"}});
    let outcome = hooks.run(HookEvent::PreToolUse, Some("shell"), fine).await;
    assert_eq!(outcome, Outcome::default());
    let other_tool = hooks
        .run(HookEvent::PreToolUse, Some("read"), json!({}))
        .await;
    assert_eq!(
        other_tool,
        Outcome::default(),
        "the matcher leaves `read` alone"
    );
}

#[tokio::test]
async fn the_input_carries_the_common_fields() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("input.json");
    let script = format!("cat > '{}'", out.display());
    let hooks = Hooks::new(
        vec![trusted(HookEvent::UserPromptSubmit, "", &script)],
        dir.path(),
        None,
        "session-7",
    );
    hooks
        .run(HookEvent::UserPromptSubmit, None, json!({"prompt": "hi"}))
        .await;
    let input: Value = serde_json::from_slice(&std::fs::read(out).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "UserPromptSubmit");
    assert_eq!(input["session_id"], "session-7");
    assert_eq!(input["prompt"], "hi");
    assert_eq!(input["cwd"], dir.path().display().to_string());
}

#[tokio::test]
async fn an_untrusted_hook_never_runs_outside_the_sandbox_and_cannot_allow() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let mut hook = trusted(
        HookEvent::PreToolUse,
        "",
        &format!(
            "touch '{}'; echo '{{\"decision\": \"approve\"}}'",
            marker.display()
        ),
    );
    hook.trusted = false;
    let hooks = Hooks::new(vec![hook.clone()], dir.path(), None, "s");
    let outcome = hooks
        .run(HookEvent::PreToolUse, Some("shell"), json!({}))
        .await;
    assert!(!marker.exists(), "it ran without a sandbox");
    assert!(!outcome.allow);
    assert!(
        outcome.notices[0].text.contains("no sandbox"),
        "{outcome:?}"
    );

    // Its `allow`, had it run, is ignored.
    let mut outcome = Outcome::default();
    outcome.take(
        HookEvent::PreToolUse,
        &hook,
        Reply {
            permission: Some(Permission::Allow),
            ..Reply::default()
        },
    );
    assert!(!outcome.allow);
    assert!(outcome.notices[0].text.contains("ignored"));
}

#[tokio::test]
async fn a_hook_that_must_pass_blocks_when_it_fails_and_a_slow_one_is_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let mut failing = trusted(HookEvent::PreToolUse, "", "exit 1");
    failing.on_failure = OnFailure::Block;
    let mut slow = trusted(HookEvent::PreToolUse, "", "sleep 30");
    slow.timeout = Duration::from_secs(1);
    let hooks = Hooks::new(vec![failing, slow], dir.path(), None, "s");
    let started = std::time::Instant::now();
    let outcome = hooks
        .run(HookEvent::PreToolUse, Some("shell"), json!({}))
        .await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(outcome.block.unwrap().contains("must pass failed"));
    assert!(
        outcome
            .notices
            .iter()
            .any(|notice| notice.text.contains("time limit of 1 s")),
        "{:?}",
        outcome.notices
    );
}

#[tokio::test]
async fn plain_stdout_is_context_where_the_protocol_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = Hooks::new(
        vec![
            trusted(HookEvent::UserPromptSubmit, "", "echo 'branch: main'"),
            trusted(HookEvent::PostToolUse, "", "echo 'formatted'"),
        ],
        dir.path(),
        None,
        "s",
    );
    let prompt = hooks
        .run(HookEvent::UserPromptSubmit, None, json!({}))
        .await;
    assert_eq!(prompt.context, ["branch: main"]);
    let post = hooks
        .run(HookEvent::PostToolUse, Some("edit"), json!({}))
        .await;
    assert!(post.context.is_empty());
    assert_eq!(post.notices[0].text, "formatted");
}

#[test]
fn tool_input_adds_claude_codes_file_path() {
    let input = tool_input(
        &json!({"path": "src/a.rs", "content": "x"}),
        Path::new("/w"),
    );
    assert_eq!(input["file_path"], "/w/src/a.rs");
    assert_eq!(input["path"], "src/a.rs");
    assert_eq!(claude_name("shell").as_deref(), Some("Bash"));
    assert_eq!(
        claude_name("fs__read_text_file").as_deref(),
        Some("mcp__fs__read_text_file")
    );
    assert_eq!(claude_name("shell_jobs"), None);
}
