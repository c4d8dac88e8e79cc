//! A first run as a real process: `duet config init` and `duet config path`, shell
//! completions, and a config file with mistakes that still runs on its defaults.

use duet::provider::Wire;
use pretty_assertions::assert_eq;

use crate::common::harness::{TestRepo, home_with_config, run_duet, wire_env};
use crate::common::script::{LoadScript, Script};
use crate::common::scripted_server::ScriptedServer;

const NO_ENV: &[(&str, &str)] = &[];

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test]
async fn config_init_writes_a_commented_file_once_and_path_finds_it() {
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let home = tempfile::tempdir().unwrap();
    let config_file = home.path().join("config/duet/config.toml");

    let output = run_duet(repo.path(), home.path(), NO_ENV, &["config", "init"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let written = std::fs::read_to_string(&config_file).unwrap();
    assert!(written.contains("# provider = \"anthropic\""), "{written}");
    assert!(written.contains("[budget]"), "{written}");

    std::fs::write(&config_file, "model = \"mine\"\n").unwrap();
    let again = run_duet(repo.path(), home.path(), NO_ENV, &["config", "init"]).await;
    assert_eq!(again.status.code(), Some(2));
    assert!(
        text(&again.stderr).contains("already exists"),
        "{}",
        text(&again.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&config_file).unwrap(),
        "model = \"mine\"\n"
    );

    let path = run_duet(repo.path(), home.path(), NO_ENV, &["config", "path"]).await;
    assert_eq!(path.status.code(), Some(0));
    let stdout = text(&path.stdout);
    let state = home.path().join("state/duet");
    for line in [
        format!("config    {}", config_file.display()),
        format!("sessions  {}", state.join("sessions").display()),
        format!("logs      {}", state.join("logs/duet.log").display()),
    ] {
        assert!(stdout.contains(&line), "missing {line:?} in:\n{stdout}");
    }
}

#[tokio::test]
async fn completions_cover_the_subcommands() {
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let home = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish"] {
        let output = run_duet(repo.path(), home.path(), NO_ENV, &["completions", shell]).await;
        assert_eq!(output.status.code(), Some(0), "{shell}");
        let script = text(&output.stdout);
        for word in ["exec", "sessions", "doctor", "config", "approval"] {
            assert!(script.contains(word), "{shell}: no {word}");
        }
    }
}

#[tokio::test]
async fn unknown_keys_are_reported_and_the_run_goes_on() {
    let server = ScriptedServer::start(Script::load("stream_text")).await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let home = home_with_config("approval = \"read-only\"\nmax_tokenz = 5\n[shell]\ntimeout = 3\n");
    let output = run_duet(
        repo.path(),
        home.path(),
        &wire_env(&server, Wire::Anthropic),
        &["exec", "say hello"],
    )
    .await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(text(&output.stdout).contains("Hello from the scripted model"));
    for (line, key, valid) in [
        (2, "max_tokenz", "max_tokens"),
        (4, "timeout", "timeout_secs"),
    ] {
        assert!(
            stderr
                .lines()
                .any(|problem| problem.contains(&format!("config.toml:{line}:"))
                    && problem.contains(key)
                    && problem.contains(valid)),
            "no report of {key} at line {line} in:\n{stderr}"
        );
    }
    server.assert_no_violations();
}
