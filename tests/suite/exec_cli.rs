//! `duet exec` as a real process: configuration from the environment, a scripted task
//! that edits a real file in a temporary git repository, the JSON event stream, and the
//! exit statuses for success, misconfiguration and an unreachable server.

use duet::provider::Wire;
use pretty_assertions::assert_eq;

use crate::common::harness::{TestRepo, home_with_config, run_duet, tool_results, wire_env};
use crate::common::script::{LoadScript, Script, script_path};
use crate::common::scripted_server::ScriptedServer;

const CALC: &str = "def add(a, b):\n    return a + b\n";
const CALC_WITH_SUB: &str =
    "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

async fn exec_edits_a_real_file(wire: Wire) {
    let server = ScriptedServer::start(Script::load("edit_calc")).await;
    let repo = TestRepo::with_files(&[("calc.py", CALC)]);
    let home = tempfile::tempdir().unwrap();
    let env = wire_env(&server, wire);

    let output = run_duet(
        repo.path(),
        home.path(),
        &env,
        &["exec", "--approval", "auto", "add sub(a, b) to calc.py"],
    )
    .await;
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{}",
        text(&output.stderr)
    );
    assert_eq!(repo.read("calc.py"), CALC_WITH_SUB);
    assert!(
        server.requests().iter().all(|request| request.wire == wire),
        "every request went to the {wire} endpoint"
    );

    // A readable transcript without escape codes, since stdout is not a terminal.
    assert!(!stdout.contains('\x1b'), "{stdout}");
    for needle in [
        "› add sub(a, b) to calc.py",
        "I'll read calc.py first.",
        "→ read",
        "→ edit",
        "+def sub(a, b):",
        "Added sub(a, b) to calc.py.",
        "— done",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let results = tool_results(&requests[2]);
    let edit_result = results.last().unwrap();
    assert!(!edit_result.is_error, "{edit_result:?}");
    assert!(
        edit_result.content.contains("def sub(a, b):"),
        "{}",
        edit_result.content
    );
    server.assert_no_violations();
}

#[tokio::test]
async fn exec_edits_a_real_file_over_anthropic() {
    exec_edits_a_real_file(Wire::Anthropic).await;
}

#[tokio::test]
async fn exec_edits_a_real_file_over_openai() {
    exec_edits_a_real_file(Wire::OpenAiChat).await;
}

/// Also proves `DUET_PROVIDER=openai-responses` selects the wire from the environment.
#[tokio::test]
async fn exec_edits_a_real_file_over_openai_responses() {
    exec_edits_a_real_file(Wire::OpenAiResponses).await;
}

#[tokio::test]
async fn exec_json_prints_one_event_per_line() {
    let server = ScriptedServer::start(Script::load("read_round_trip")).await;
    let repo = TestRepo::with_files(&[("notes.txt", "hello\n")]);
    let home = tempfile::tempdir().unwrap();
    let env = wire_env(&server, Wire::Anthropic);

    let output = run_duet(
        repo.path(),
        home.path(),
        &env,
        &["exec", "--json", "read the notes"],
    )
    .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let events: Vec<serde_json::Value> = text(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(kinds.first(), Some(&"session_started"));
    assert_eq!(kinds.last(), Some(&"turn_end"));
    for kind in [
        "text_delta",
        "tool_call_begin",
        "tool_call_ready",
        "tool_run_begin",
        "tool_run_end",
        "usage",
    ] {
        assert!(kinds.contains(&kind), "no {kind} in {kinds:?}");
    }
    let end = events.last().unwrap();
    assert_eq!(end["outcome"]["kind"], "finished");
    assert_eq!(end["outcome"]["stop_reason"], "end_turn");
    server.assert_no_violations();

    // The protocol is a contract: each line reads back as the event type, and is valid
    // under the schema `duet exec --json-schema` prints.
    for line in text(&output.stdout).lines() {
        serde_json::from_str::<duet::agent::Event>(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    }
    let schema = run_duet(repo.path(), home.path(), &env, &["exec", "--json-schema"]).await;
    assert_eq!(schema.status.code(), Some(0));
    let schema_file = home.path().join("schema.json");
    let lines_file = home.path().join("lines.jsonl");
    std::fs::write(&schema_file, &schema.stdout).unwrap();
    std::fs::write(&lines_file, &output.stdout).unwrap();
    let check = "import json, sys\n\
        try:\n    import jsonschema\nexcept ImportError:\n    sys.exit(77)\n\
        schema = json.load(open(sys.argv[1]))\n\
        for line in open(sys.argv[2]):\n    jsonschema.validate(json.loads(line), schema)\n";
    let validated = tokio::process::Command::new("python3")
        .args(["-c", check])
        .arg(&schema_file)
        .arg(&lines_file)
        .output()
        .await
        .expect("python3");
    match validated.status.code() {
        Some(0) => {}
        Some(77) => {
            assert!(
                std::env::var_os("DUET_CI").is_none(),
                "DUET_CI=1 but python's jsonschema is missing (tests/sdk/requirements.txt)"
            );
            eprintln!("skipped the schema validation: pip install jsonschema to run it");
        }
        _ => panic!("a line breaks the schema: {}", text(&validated.stderr)),
    }
}

#[tokio::test]
async fn exec_without_configuration_says_what_to_set() {
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let home = tempfile::tempdir().unwrap();
    let output = run_duet(
        repo.path(),
        home.path(),
        &[] as &[(&str, &str)],
        &["exec", "anything"],
    )
    .await;
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    for needle in [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "DUET_MODEL",
        "config.toml",
    ] {
        assert!(stderr.contains(needle), "missing {needle} in:\n{stderr}");
    }
    // What the probe of local model servers found, whatever runs on this machine.
    assert!(
        stderr.contains("No local model server answered")
            || stderr.contains("Found on this machine"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
}

#[tokio::test]
async fn exec_with_a_bad_config_file_names_file_and_line() {
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let home = tempfile::tempdir().unwrap();
    let config_dir = home.path().join("config").join("duet");
    std::fs::create_dir_all(&config_dir).unwrap();
    std::fs::write(
        config_dir.join("config.toml"),
        "model = \"x\"\nprovider = \"gemini\"\n",
    )
    .unwrap();
    let output = run_duet(
        repo.path(),
        home.path(),
        &[] as &[(&str, &str)],
        &["exec", "anything"],
    )
    .await;
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("config.toml:2:"), "{stderr}");
    assert!(stderr.contains("gemini"), "{stderr}");
}

#[tokio::test]
async fn exec_against_a_dead_server_fails_clearly() {
    // Bind and drop a listener to find a port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    // One quick retry instead of the default five with growing waits.
    let home = home_with_config("[network]\nmax_retries = 1\n");
    let base = format!("http://127.0.0.1:{port}");
    let output = run_duet(
        repo.path(),
        home.path(),
        &[
            ("ANTHROPIC_BASE_URL", base.as_str()),
            ("ANTHROPIC_API_KEY", "k"),
        ],
        &["exec", "anything"],
    )
    .await;
    assert_eq!(output.status.code(), Some(1));
    let stdout = text(&output.stdout);
    assert!(stdout.contains("↻ retrying in "), "{stdout}");
    assert!(
        stdout.contains("(attempt 1/1): could not reach"),
        "{stdout}"
    );
    assert!(
        stdout.contains("error: model call failed 2 times in a row"),
        "{stdout}"
    );
    assert!(stdout.contains(&base), "{stdout}");
    assert!(stdout.contains("Is the server running"), "{stdout}");
}

/// `--replay FILE` plays a script as the model: no key, no provider, no network, and
/// the real tools answer its calls.
#[tokio::test]
async fn exec_replays_a_scripted_session_without_a_key() {
    let repo = TestRepo::with_files(&[("notes.txt", "hello\n")]);
    let home = tempfile::tempdir().unwrap();
    let script = script_path("read_round_trip");
    let no_env: [(&str, &str); 0] = [];
    let output = run_duet(
        repo.path(),
        home.path(),
        &no_env,
        &[
            "exec",
            "--json",
            "--replay",
            script.to_str().unwrap(),
            "read the notes",
        ],
    )
    .await;
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{}",
        text(&output.stderr)
    );
    let events: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let read = events
        .iter()
        .find(|event| event["type"] == "tool_run_end")
        .expect("the read ran");
    assert_eq!(read["is_error"], false);
    assert!(read["output"].as_str().unwrap().contains("hello"), "{read}");
    let said: String = events
        .iter()
        .filter(|event| event["type"] == "text_delta")
        .filter_map(|event| event["text"].as_str())
        .collect();
    assert_eq!(said, "Let me read the notes.The notes say hello.");
    assert_eq!(events[0]["model"], "replay: read_round_trip.toml");
}

#[tokio::test]
async fn exec_reports_a_replay_script_it_cannot_read() {
    let repo = TestRepo::with_files(&[]);
    let home = tempfile::tempdir().unwrap();
    let no_env: [(&str, &str); 0] = [];
    let output = run_duet(
        repo.path(),
        home.path(),
        &no_env,
        &["exec", "--replay", "missing.toml", "task"],
    )
    .await;
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("cannot read script missing.toml"),
        "{stderr}"
    );
}

/// A model whose thinking and text carry OSC 52, a title, a link and cursor-up +
/// erase-line (cut between deltas), and a call whose failure quotes such a path: the
/// human transcript on stdout holds no ESC and no C1 control (it is not a terminal, so
/// duet's own colours are off and any ESC would be the model's), and shows `␛` where
/// each sequence was.
#[tokio::test]
async fn exec_output_carries_no_escape_sequence_from_the_model() {
    let script = r#"
[[turn]]
blocks = [
  { thinking = "plan\u001b]0;PWNED\u0007 it", signature = "sig-1", chunk = 5 },
  { text = "Copy\u001b]52;c;cm0gLXJmIH4=\u0007 this.\n\u001b]8;;https://evil.test\u001b\\link\u001b]8;;\u001b\\\n\u001b[1A\u001b[2Kapproved\u009b2J\n", chunk = 5 },
  { tool = "read", args = '{"path": "missing\u001b]0;T\u0007.txt"}' },
]

[[turn]]
blocks = [{ text = "The end." }]
"#;
    let server = ScriptedServer::start(Script::from_toml(script).unwrap()).await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let home = tempfile::tempdir().unwrap();
    let env = wire_env(&server, Wire::Anthropic);
    let output = run_duet(repo.path(), home.path(), &env, &["exec", "go"]).await;
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(!output.stdout.contains(&0x1b), "{stdout:?}");
    assert!(
        !output
            .stdout
            .windows(2)
            .any(|pair| pair[0] == 0xc2 && (0x80..=0x9f).contains(&pair[1])),
        "{stdout:?}"
    );
    for payload in ["52;c;", "PWNED", "evil.test", "[1A", "[2K"] {
        assert!(!stdout.contains(payload), "{payload:?} in {stdout}");
    }
    for shown in [
        "plan␛ it",
        "Copy␛ this.",
        "␛link␛",
        "␛␛approved␛",
        "The end.",
    ] {
        assert!(stdout.contains(shown), "{shown:?} not in {stdout}");
    }
    assert!(!output.stderr.contains(&0x1b), "{}", text(&output.stderr));
    server.assert_no_violations();
}
