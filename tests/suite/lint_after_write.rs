//! Lint after every write, end to end: `duet exec` writes broken files against the
//! scripted server, and the syntax errors, the configured linter's complaint and the
//! project check's output must reach the model in the very results of those writes.

use duet::provider::Wire;

use crate::common::harness::{TestRepo, run_duet, tool_results, wire_env};
use crate::common::script::{LoadScript, Script};
use crate::common::scripted_server::ScriptedServer;

const CONFIG: &str = r#"
[lint]
linters = { "*.txt" = "echo {path}: line too friendly; exit 1" }
turn_checks = ["echo project check ran"]
"#;

#[tokio::test]
async fn write_results_carry_syntax_errors_and_linter_output() {
    let server = ScriptedServer::start(Script::load("lint_writes")).await;
    let repo = TestRepo::with_files(&[("old.py", "def broken(:\n    pass\n\n# end\n")]);
    let home = tempfile::tempdir().unwrap();
    let config_dir = home.path().join("config").join("duet");
    std::fs::create_dir_all(&config_dir).unwrap();
    std::fs::write(config_dir.join("config.toml"), CONFIG).unwrap();

    let env = wire_env(&server, Wire::Anthropic);
    let args = ["exec", "--approval", "auto", "write some code"];
    let output = run_duet(repo.path(), home.path(), &env, &args).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");

    let results = tool_results(&server.requests()[1]);
    assert_eq!(results.len(), 4, "{results:#?}");
    let [rust, python, old, notes] = [&results[0], &results[1], &results[2], &results[3]];
    // The writes landed: lint reports ride on successful results.
    assert!(results.iter().all(|r| !r.is_error), "{results:#?}");

    for (result, location, excerpt) in [
        (
            rust,
            "src/lib.rs:1:35: syntax error",
            "pub fn add(a: i32, b: i32) -> i32 {",
        ),
        (python, "tool.py:1:9: syntax error", "def run(:"),
    ] {
        assert!(
            result.content.contains("1 new syntax error"),
            "{}",
            result.content
        );
        assert!(
            result.content.contains(location),
            "{location} not in {}",
            result.content
        );
        assert!(result.content.contains(excerpt), "{}", result.content);
    }
    assert!(
        old.content
            .contains("lint: no new syntax errors, 1 already there"),
        "{}",
        old.content
    );
    assert!(old.content.contains("old.py:1:"), "{}", old.content);
    assert!(
        notes.content.contains("notes.txt: line too friendly"),
        "{}",
        notes.content
    );
    // The project check ran once, after the batch, on its last edit.
    assert!(
        notes.content.contains("project check ran"),
        "{}",
        notes.content
    );
    let runs = results
        .iter()
        .filter(|r| r.content.contains("project check ran"))
        .count();
    assert_eq!(runs, 1);
    server.assert_no_violations();
}

for_each_wire!(a_file_is_parsed_ahead_once_its_edits_path_streams_in);

/// An edit of a file the model never read: the file is parsed ahead as soon as the
/// call's path has streamed in (so the check after the edit parses only what changed);
/// a path outside the workspace is never touched.
async fn a_file_is_parsed_ahead_once_its_edits_path_streams_in(wire: Wire) {
    let script = r#"
[[turn]]
blocks = [
  { tool = "edit", args = '{"path": "src/big.rs", "old_string": "fn one()", "new_string": "fn first()"}', chunk = 7 },
  { tool = "edit", args = '{"path": "../outside.rs", "old_string": "a", "new_string": "b"}', chunk = 7 },
]

[[turn]]
blocks = [{ text = "Renamed." }]
"#;
    let server = ScriptedServer::start(Script::from_toml(script).unwrap()).await;
    let repo = TestRepo::with_files(&[("src/big.rs", "fn one() {}\n\nfn two() {}\n")]);
    let home = tempfile::tempdir().unwrap();
    let mut env = wire_env(&server, wire);
    env.push(("DUET_LOG", "duet=debug".into()));
    let args = ["exec", "--approval", "auto", "rename one"];
    let output = run_duet(repo.path(), home.path(), &env, &args).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert_eq!(repo.read("src/big.rs"), "fn first() {}\n\nfn two() {}\n");

    let log = std::fs::read_to_string(home.path().join("state/duet/logs/duet.log")).unwrap();
    let ahead: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("parsing a file ahead of its edit"))
        .collect();
    assert_eq!(ahead.len(), 1, "{log}");
    assert!(ahead[0].contains("src/big.rs"), "{log}");
    server.assert_no_violations();
}
