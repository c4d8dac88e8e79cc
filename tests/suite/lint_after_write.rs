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
