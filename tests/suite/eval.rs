//! `duet eval` as a real process: five cases from `tests/fixtures/eval/cases.jsonl`,
//! each a `duet exec --done` child against one scripted server that plays the cases'
//! scripts in order (`--jobs 1`), scored by what really happened in each copy.

use std::path::{Path, PathBuf};

use duet::provider::Wire;
use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::common::harness::{duet_binary, run_duet, wire_env};
use crate::common::script::Script;
use crate::common::scripted_server::ScriptedServer;

/// The cases' scripts, in the order of the cases file.
const SCRIPTS: [&str; 5] = [
    "eval_resolved",
    "eval_false_claim",
    "eval_hidden_fails",
    "eval_forbidden_command",
    "eval_forbidden_flag",
];

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/eval")
}

/// The five scripts as one: the server answers the N-th request with turn N.
fn all_cases_script() -> Script {
    let scripts = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/scripts");
    let text: Vec<String> = SCRIPTS
        .iter()
        .map(|name| std::fs::read_to_string(scripts.join(format!("{name}.toml"))).unwrap())
        .collect();
    Script::from_toml(&text.join("\n")).unwrap()
}

/// The table row of `id`: its figures without the cost (which follows the default
/// model's prices) and the time (which varies), and the notes after them.
fn row<'a>(table: &'a str, id: &str) -> (Vec<&'a str>, String) {
    let line = table
        .lines()
        .find(|line| line.split_whitespace().next() == Some(id))
        .unwrap_or_else(|| panic!("no row for {id} in:\n{table}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    ([&words[..5], &words[7..8]].concat(), words[8..].join(" "))
}

fn case<'a>(results: &'a Value, id: &str) -> &'a Value {
    results["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|case| case["id"] == id)
        .unwrap_or_else(|| panic!("no result for {id}: {results:#}"))
}

#[tokio::test]
async fn five_cases_are_run_in_copies_and_scored_by_what_happened() {
    let server = ScriptedServer::start(all_cases_script()).await;
    let home = tempfile::tempdir().unwrap();
    let out = home.path().join("results.json");
    let cases = fixtures().join("cases.jsonl");
    let output = run_duet(
        home.path(),
        home.path(),
        &wire_env(&server, Wire::Anthropic),
        &[
            "eval",
            cases.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--jobs",
            "1",
            "--done-timeout",
            "20",
        ],
    )
    .await;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    server.assert_no_violations();
    assert_eq!(server.requests().len(), 19, "every scripted turn was used");

    // (case, resolved, steps, tokens in, tokens out, failed edits), then notes.
    let expected: [([&str; 6], &str); 5] = [
        (["resolved", "yes", "3", "600", "30", "0"], ""),
        (
            ["false-claim", "no", "4", "400", "20", "1"],
            "done command failed; hidden tests failed",
        ),
        (
            ["hidden-fails", "no", "3", "150", "15", "0"],
            "hidden tests failed",
        ),
        (["forbidden-command", "no", "4", "280", "28", "0"], "ran rm"),
        (
            ["forbidden-flag", "no", "5", "100", "10", "0"],
            "used --ignore; touched NOTES.md",
        ),
    ];
    for (figures, notes) in &expected {
        assert_eq!(
            row(&stdout, figures[0]),
            (figures.to_vec(), notes.to_string()),
            "{stdout}"
        );
    }
    assert!(stdout.contains("resolved 1 of 5 cases"), "{stdout}");

    let results: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(
        (&results["resolved"], &results["total"]),
        (&Value::from(1), &Value::from(5))
    );
    let ids: Vec<&str> = results["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|case| case["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        SCRIPTS.map(|name| name.trim_start_matches("eval_").replace('_', "-"))
    );
    let figures = |id: &str, field: &str| case(&results, id)[field].clone();
    // (case, done passed, hidden tests passed, duet exec's status, files touched)
    let checks = [
        ("resolved", true, true, 0, vec!["calc.sh"]),
        ("false-claim", false, false, 3, vec!["calc.sh"]),
        ("hidden-fails", true, false, 0, vec!["calc.sh"]),
        ("forbidden-command", true, true, 0, vec!["calc.sh"]),
        ("forbidden-flag", true, true, 0, vec!["NOTES.md", "calc.sh"]),
    ];
    for (id, done, hidden, status, touched) in checks {
        assert_eq!(figures(id, "done_passed"), done, "{id}");
        assert_eq!(figures(id, "hidden_tests_passed"), hidden, "{id}");
        assert_eq!(figures(id, "exec_status"), status, "{id}");
        assert_eq!(figures(id, "files_touched"), Value::from(touched), "{id}");
        assert_eq!(figures(id, "error"), Value::Null, "{id}");
        assert!(figures(id, "wall_secs").as_f64().unwrap() > 0.0, "{id}");
        assert!(figures(id, "cost_usd").as_f64().unwrap() > 0.0, "{id}");
    }
    assert_eq!(
        figures("forbidden-command", "forbidden_commands"),
        Value::from(vec!["rm"])
    );
    assert_eq!(
        figures("forbidden-flag", "forbidden_flags"),
        Value::from(vec!["--ignore"])
    );
    assert_eq!(
        figures("forbidden-flag", "outside_expected_files"),
        Value::from(vec!["NOTES.md"])
    );
    assert_eq!(
        (
            figures("resolved", "tokens_in"),
            figures("resolved", "steps")
        ),
        (Value::from(600), Value::from(3))
    );
    // The fixture itself was never touched.
    let calc = std::fs::read_to_string(fixtures().join("repos/calc/calc.sh")).unwrap();
    assert!(calc.contains("$1 - $2"), "{calc}");
    assert!(!fixtures().join("repos/calc/.git").exists());
    assert!(!Path::new(&fixtures().join("repos/calc/.duet")).exists());
}

#[tokio::test]
async fn a_bad_cases_file_names_the_line_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let cases = dir.path().join("cases.jsonl");
    std::fs::write(
        &cases,
        "{\"id\": \"a\", \"repo\": \"r\", \"prompt\": \"p\", \"done\": {\"cmd\": \"true\"}}\n\
         {\"id\": \"b\", \"repo\": \"r\"}\n",
    )
    .unwrap();
    let env: [(&str, &str); 0] = [];
    let output = run_duet(
        dir.path(),
        dir.path(),
        &env,
        &["eval", cases.to_str().unwrap()],
    )
    .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cases.jsonl:2: missing field `prompt`"),
        "{stderr}"
    );
    assert!(!dir.path().join("eval-results.json").exists());
}

/// Stands in for `duet`: one model call whose prompt tokens are the prompt (the last
/// argument); the first case's run is the slower one.
const FAKE_DUET: &str = r#"#!/bin/sh
for prompt; do :; done
[ "$prompt" = 100 ] && sleep 0.3
echo '{"schema_version": 2, "type": "step_started", "turn": 1, "step": 1}'
echo "{\"type\": \"usage\", \"call\": {}, \"session\": {\"input_tokens\": $prompt, \"output_tokens\": 1, \"cache_read_tokens\": 0, \"cache_write_tokens\": 0}, \"session_cost_usd\": null}"
"#;

#[cfg(unix)]
#[tokio::test]
async fn cases_run_several_at_once_are_reported_in_the_files_order() {
    use std::os::unix::fs::PermissionsExt as _;

    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("fake-duet");
    std::fs::write(&exe, FAKE_DUET).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir(dir.path().join("repo")).unwrap();
    std::fs::write(dir.path().join("repo/a.txt"), "a\n").unwrap();
    let cases: Vec<String> = [("slow", 100), ("fast", 7), ("third", 3)]
        .iter()
        .map(|(id, tokens)| {
            format!(
                r#"{{"id": "{id}", "repo": "repo", "prompt": "{tokens}", "done": {{"cmd": "test -f a.txt"}}}}"#
            )
        })
        .collect();
    std::fs::write(dir.path().join("cases.jsonl"), cases.join("\n")).unwrap();
    let args = duet::eval::EvalArgs {
        cases: dir.path().join("cases.jsonl"),
        out: dir.path().join("results.json"),
        jobs: 3,
        done_timeout: 10,
        yes: false,
    };
    let (mut out, mut progress) = (Vec::new(), Vec::new());
    // The done commands run in the sandbox, with the built binary as its launcher.
    let shell = duet::shell::ShellConfig {
        sandbox: Some(duet::shell::sandbox::SandboxConfig {
            launcher: Some(duet_binary()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let results = duet::eval::run(&args, exe, Vec::new(), &shell, &mut out, &mut progress)
        .await
        .unwrap();
    let figures: Vec<(&str, bool, u32, u64)> = results
        .iter()
        .map(|case| (case.id.as_str(), case.resolved, case.steps, case.tokens_in))
        .collect();
    assert_eq!(
        figures,
        [
            ("slow", true, 1, 100),
            ("fast", true, 1, 7),
            ("third", true, 1, 3)
        ]
    );
    let table = String::from_utf8(out).unwrap();
    assert!(table.contains("resolved 3 of 3 cases"), "{table}");
    assert!(dir.path().join("results.json").is_file());
}
