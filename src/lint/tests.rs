//! End-to-end tests of [`Linter`]: real files in a temp dir, real shell commands.

use std::fs;
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use tempfile::TempDir;

use super::syntax::tests::SAMPLES;
use super::*;

/// A project dir and a linter for it.
/// A parse budget no healthy machine runs out of.
const UNHURRIED: Duration = Duration::from_secs(120);

fn project(config: LintConfig) -> (TempDir, Linter) {
    let dir = tempfile::tempdir().unwrap();
    let linter = Linter::new(dir.path(), config);
    (dir, linter)
}

/// Writes `after` to `relative` (as the write tool would have) and checks it.
async fn write_and_check(
    dir: &TempDir,
    linter: &Linter,
    relative: &str,
    before: Option<&str>,
    after: &str,
) -> String {
    let abs = dir.path().join(relative);
    fs::create_dir_all(abs.parent().unwrap()).unwrap();
    fs::write(&abs, after).unwrap();
    linter.check_write(&abs, relative, before, after).await
}

fn with_linters(linters: &[(&str, &str)]) -> LintConfig {
    LintConfig {
        linters: linters
            .iter()
            .map(|(pattern, command)| (pattern.to_string(), command.to_string()))
            .collect(),
        ..LintConfig::default()
    }
}

#[tokio::test]
async fn broken_rust_names_the_place_and_shows_the_line() {
    let (dir, linter) = project(LintConfig::default());
    let text = "fn main() {\n    let x = 1;\n    if x > 0 {\n        println!(\"hi\");\n}\n";
    let report = write_and_check(&dir, &linter, "src/main.rs", None, text).await;
    assert_eq!(
        report,
        "lint: 1 new syntax error (line 1)\n\
         src/main.rs:1:11: syntax error: unclosed `{`\n    fn main() {\n              ^"
    );
}

#[tokio::test]
async fn broken_python_names_the_place_and_shows_the_line() {
    let (dir, linter) = project(LintConfig::default());
    let text = "def f(x):\n    return (x +\n\nprint(f(1))\n";
    let report = write_and_check(&dir, &linter, "app.py", None, text).await;
    assert_eq!(
        report,
        "lint: 1 new syntax error (line 2)\n\
         app.py:2:12: syntax error: unclosed `(`\n    return (x +\n           ^"
    );

    let text = "def f(x):\n    y = 1\n      return y\n";
    let report = write_and_check(&dir, &linter, "app.py", None, text).await;
    assert_eq!(
        report,
        "lint: 1 new syntax error (line 3)\n\
         app.py:3:7: syntax error: unexpected indent\n    return y\n    ^"
    );
}

#[tokio::test]
async fn every_language_is_clean_when_valid_and_flagged_when_broken() {
    let (dir, linter) = project(LintConfig::default());
    for (language, name, valid, broken) in SAMPLES {
        assert_eq!(
            Language::detect(Path::new(name), valid),
            Some(language),
            "{name}"
        );
        let clean = write_and_check(&dir, &linter, name, None, valid).await;
        assert_eq!(clean, format!("lint: clean ({} syntax)", language.name()));
        let report = write_and_check(&dir, &linter, name, Some(valid), broken).await;
        assert!(
            report.starts_with("lint: 1 new syntax error (line ")
                || report.starts_with("lint: 2 new syntax errors (line"),
            "{name}: {report}"
        );
        assert!(
            report.contains(&format!("{name}:")) && report.contains(": syntax error: "),
            "{name}: {report}"
        );
    }
}

#[tokio::test]
async fn old_errors_are_told_apart_from_new_ones_even_after_lines_moved() {
    let (dir, linter) = project(LintConfig::default());
    let before = "fn old() {\n    let a = 1\n    a\n}\n";
    let after = format!("fn fresh() {{\n    let b = 2\n    b\n}}\n\n{before}");
    let report = write_and_check(&dir, &linter, "lib.rs", Some(before), &after).await;
    assert_eq!(
        report,
        "lint: 1 new syntax error (line 2), 1 already there\n\
         lib.rs:2:14: syntax error: missing `;`\n    let b = 2\n             ^\n\
         already there before this write:\n\
         lib.rs:7:14: syntax error: missing `;`\n    let a = 1\n             ^"
    );

    // Fixing the new one leaves only the old one, said as such.
    let fixed = after.replace("let b = 2", "let b = 2;");
    let report = write_and_check(&dir, &linter, "lib.rs", Some(&after), &fixed).await;
    assert!(
        report.starts_with("lint: no new syntax errors, 1 already there\n"),
        "{report}"
    );
}

#[tokio::test]
async fn unknown_files_without_linters_get_nothing() {
    let (dir, linter) = project(LintConfig::default());
    let report = write_and_check(&dir, &linter, "notes.md", None, "# Notes\n").await;
    assert_eq!(report, "");
}

#[tokio::test]
async fn the_syntax_check_can_be_turned_off() {
    let config = LintConfig {
        syntax: false,
        ..LintConfig::default()
    };
    let (dir, linter) = project(config);
    let report = write_and_check(&dir, &linter, "a.rs", None, "fn (").await;
    assert_eq!(report, "");
}

#[tokio::test]
async fn a_configured_linter_runs_on_the_written_file() {
    let config = with_linters(&[("*.py", "sh lint.sh {path}")]);
    let (dir, linter) = project(config);
    fs::write(
        dir.path().join("lint.sh"),
        "printf '%s: bad style (%s)\\n' \"$1\" \"$(cat \"$1\")\"\nexit 1\n",
    )
    .unwrap();
    let report = write_and_check(&dir, &linter, "src/my app.py", None, "x = 1\n").await;
    assert_eq!(
        report,
        "lint: sh lint.sh: exit 1 (clean: python syntax)\n\
         $ sh lint.sh 'src/my app.py'\n\
         src/my app.py: bad style (x = 1)"
    );
}

#[tokio::test]
async fn a_quiet_linter_is_clean() {
    let config = with_linters(&[("*.rs", "true {path}")]);
    let (dir, linter) = project(config);
    let report = write_and_check(&dir, &linter, "a.rs", None, "fn a() {}\n").await;
    assert_eq!(report, "lint: clean (rust syntax, true)");
}

#[tokio::test]
async fn patterns_match_names_or_root_relative_paths() {
    let config = with_linters(&[
        ("*.md", "echo name {path}; exit 1"),
        ("docs/*.md", "echo top {path}; exit 1"),
        ("docs/**/*.md", "echo deep {path}; exit 1"),
    ]);
    let (dir, linter) = project(config);
    let report = write_and_check(&dir, &linter, "docs/api/x.md", None, "# x\n").await;
    assert!(report.contains("\nname docs/api/x.md"), "{report}");
    assert!(report.contains("\ndeep docs/api/x.md"), "{report}");
    assert!(!report.contains("top"), "{report}");
    let report = write_and_check(&dir, &linter, "docs/y.md", None, "# y\n").await;
    assert!(report.contains("\ntop docs/y.md"), "{report}");
    let report = write_and_check(&dir, &linter, "y.txt", None, "y\n").await;
    assert_eq!(report, "");
}

#[tokio::test]
async fn a_missing_linter_is_reported_once_then_skipped() {
    let config = with_linters(&[("*.txt", "no-such-linter-xyz --check {path}")]);
    let (dir, linter) = project(config);
    let first = write_and_check(&dir, &linter, "a.txt", None, "a\n").await;
    assert!(
        first.starts_with("lint: nothing checked\nlinter `no-such-linter-xyz` not found"),
        "{first}"
    );
    assert!(
        first.ends_with("; skipping it for the rest of the session"),
        "{first}"
    );
    assert_eq!(first.lines().count(), 2, "{first}");
    let second = write_and_check(&dir, &linter, "b.txt", None, "b\n").await;
    assert_eq!(second, "");
}

#[tokio::test]
async fn a_linter_past_its_timeout_is_stopped_and_reported() {
    let config = LintConfig {
        timeout_secs: 1,
        ..with_linters(&[("*.txt", "echo checking; sleep 30")])
    };
    let (dir, linter) = project(config);
    let started = Instant::now();
    let report = write_and_check(&dir, &linter, "a.txt", None, "a\n").await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(
        report,
        "lint: echo: timed out after 1 s and was stopped\n\
         $ echo checking; sleep 30\nchecking"
    );
}

#[tokio::test]
async fn turn_checks_run_in_order_and_combine() {
    let config = LintConfig {
        turn_checks: vec![
            "echo first >> order; echo one; exit 1".into(),
            "echo second >> order".into(),
            "echo third >> order; echo three >&2; exit 2".into(),
        ],
        ..LintConfig::default()
    };
    let (dir, linter) = project(config);
    let report = linter.turn_checks().await;
    assert_eq!(
        report.as_deref(),
        Some(
            "turn checks: echo first: exit 1; echo third: exit 2 (clean: echo second)\n\
             $ echo first >> order; echo one; exit 1\none\n\
             $ echo third >> order; echo three >&2; exit 2\nthree"
        )
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("order")).unwrap(),
        "first\nsecond\nthird\n"
    );
}

#[tokio::test]
async fn turn_checks_are_one_line_when_clean_and_absent_when_unset() {
    let (_dir, linter) = project(LintConfig::default());
    assert_eq!(linter.turn_checks().await, None);
    let config = LintConfig {
        turn_checks: vec!["true".into(), "cargo-free-check-xyz".into()],
        ..LintConfig::default()
    };
    let (_dir, linter) = project(config);
    assert_eq!(
        linter
            .turn_checks()
            .await
            .as_deref()
            .map(|r| r.lines().count()),
        Some(2)
    );
    // The missing one is skipped from now on; what remains is one clean line.
    assert_eq!(
        linter.turn_checks().await.as_deref(),
        Some("turn checks: clean (true)")
    );
}

#[tokio::test]
async fn a_megabyte_of_minified_json_is_checked_whole() {
    let (dir, linter) = project(LintConfig::default());
    // Only correctness here: on a loaded machine the default budget may run out.
    let linter = linter.with_parse_budget(UNHURRIED);
    let item = r#"{"id":12345,"name":"widget","tags":["a","b","c"],"price":9.99,"ok":true},"#;
    let mut valid = String::from("[");
    while valid.len() < 1_000_000 {
        valid.push_str(item);
    }
    valid.push_str("null]");
    let middle = valid.len() / 2;
    let cut = valid[middle..].find("\"ok\"").unwrap() + middle;
    let broken = format!("{},{}", &valid[..cut], &valid[cut..]);

    let clean = write_and_check(&dir, &linter, "data.json", None, &valid).await;
    let report = write_and_check(&dir, &linter, "data.json", Some(&valid), &broken).await;

    assert_eq!(clean, "lint: clean (json syntax)");
    assert!(
        report.starts_with("lint: 1 new syntax error (line 1)\n"),
        "{report}"
    );
    assert!(report.len() < 1000, "the long line was not cut: {report}");
}

#[tokio::test]
async fn a_ten_thousand_line_file_is_checked_whole() {
    let (dir, linter) = project(LintConfig::default());
    let linter = linter.with_parse_budget(UNHURRIED);
    let mut before = String::new();
    for i in 0..2500 {
        before.push_str(&format!(
            "fn f{i}(x: u32) -> u32 {{\n    let y = x + {i};\n    y * 2\n}}\n"
        ));
    }
    let after = before.replacen("let y = x + 7;", "let y = x + 7", 1);
    let report = write_and_check(&dir, &linter, "big.rs", Some(&before), &after).await;
    // The missing `;` makes the next line part of the statement; both are reported.
    assert!(
        report.starts_with("lint: 2 new syntax errors (lines 30, 31)\nbig.rs:30:17: syntax error:"),
        "{report}"
    );
}

#[test]
fn the_lint_table_parses_with_defaults() {
    let config: LintConfig = toml::from_str(
        r#"
turn_checks = ["cargo check --quiet"]
timeout_secs = 5
linters = { "*.py" = "ruff check --quiet {path}" }
"#,
    )
    .unwrap();
    assert_eq!(
        config,
        LintConfig {
            turn_checks: vec!["cargo check --quiet".into()],
            timeout_secs: 5,
            ..with_linters(&[("*.py", "ruff check --quiet {path}")])
        }
    );
    assert_eq!(config.validate(), Ok(()));
    assert_eq!(
        toml::from_str::<LintConfig>("").unwrap(),
        LintConfig::default()
    );
}

#[test]
fn bad_settings_are_named_with_their_line() {
    let text = "syntax = true\nlinters = { \"*.py\" = \"ruff\", \"src/[a.py\" = \"x\" }\n";
    let error = toml::from_str::<LintConfig>(text).unwrap_err();
    assert!(
        error.message().contains("invalid file pattern `src/[a.py`"),
        "{error}"
    );
    let line = text[..error.span().unwrap().start].matches('\n').count() + 1;
    assert_eq!(line, 2);

    for (text, needle) in [
        ("timeout_secs = 0\n", "at least 1"),
        ("turn_checks = [\"  \"]\n", "empty command"),
        ("linters = { \"*.py\" = \"\" }\n", "`*.py`"),
        ("linter = {}\n", "unknown field `linter`"),
    ] {
        let error = toml::from_str::<LintConfig>(text).unwrap_err();
        assert!(error.message().contains(needle), "{text}: {error}");
    }
}

#[test]
fn validate_checks_configs_built_in_code() {
    let config = with_linters(&[("{unclosed", "x {path}")]);
    assert!(matches!(
        config.validate(),
        Err(LintConfigError::BadPattern { pattern, .. }) if pattern == "{unclosed"
    ));
    let config = LintConfig {
        turn_timeout_secs: 0,
        ..LintConfig::default()
    };
    assert_eq!(config.validate(), Err(LintConfigError::ZeroTimeout));
}

#[tokio::test]
async fn an_unusable_pattern_is_reported_once_and_the_rest_still_run() {
    let config = with_linters(&[("[bad", "x {path}"), ("*.txt", "echo seen {path}")]);
    let (dir, linter) = project(config);
    let first = write_and_check(&dir, &linter, "a.txt", None, "a\n").await;
    assert!(
        first.contains("\ninvalid file pattern `[bad` in [lint] linters:"),
        "{first}"
    );
    assert!(first.contains("\nseen a.txt"), "{first}");
    let second = write_and_check(&dir, &linter, "a.txt", None, "a\n").await;
    assert!(!second.contains("[bad"), "{second}");
}

#[test]
fn paths_are_quoted_only_when_needed() {
    assert_eq!(shell_quote("src/a_b-c.py"), "src/a_b-c.py");
    assert_eq!(shell_quote("my file.py"), "'my file.py'");
    assert_eq!(shell_quote("it's.py"), r"'it'\''s.py'");
    assert_eq!(shell_quote("-rf.py"), "./-rf.py");
    assert_eq!(shell_quote("$(boom).py"), "'$(boom).py'");
}

#[test]
fn labels_are_the_program_and_its_subcommand() {
    assert_eq!(label("ruff check --quiet {path}"), "ruff check");
    assert_eq!(label("cargo clippy --quiet"), "cargo clippy");
    assert_eq!(label("tsc --noEmit"), "tsc");
    assert_eq!(label("RUFF_CACHE_DIR=/tmp/x ruff check"), "ruff check");
    assert_eq!(label("eslint {path}"), "eslint");
    assert_eq!(program("RUST_LOG=1 cargo check"), "cargo");
}

#[tokio::test]
async fn huge_files_skip_the_syntax_check_with_a_note() {
    let (dir, linter) = project(LintConfig::default());
    let text = "[1,\n".repeat(3 << 20);
    let report = write_and_check(&dir, &linter, "huge.json", None, &text).await;
    assert_eq!(
        report,
        "lint: nothing checked\njson syntax check skipped: the file is larger than 8 MiB"
    );
}

#[test]
fn the_checks_can_run_inside_spawned_tasks() {
    fn assert_send<T: Send>(_: &T) {}
    let (_dir, linter) = project(LintConfig::default());
    assert_send(&linter.check_write(Path::new("/x/a.rs"), "a.rs", None, ""));
    assert_send(&linter.turn_checks());
}

#[tokio::test]
async fn c_errors_carry_the_macro_caveat() {
    let (dir, linter) = project(LintConfig::default());
    let report = write_and_check(&dir, &linter, "m.c", None, "int main(void) { return 0 }\n").await;
    assert_eq!(
        report,
        "lint: 1 new syntax error (line 1)\n\
         c/c++ is checked without expanding macros: an error where a macro is used may be a \
         false alarm if the code compiles\n\
         m.c:1:26: syntax error: missing `;`\n    int main(void) { return 0 }\n                             ^"
    );
}

/// Waits until the linter keeps a parse of `abs` (priming runs in the background).
async fn wait_until_primed(linter: &Linter, abs: &Path) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if linter.parses().contains(abs) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    false
}

#[tokio::test]
async fn a_primed_file_is_checked_from_its_kept_parse_with_the_same_findings() {
    let dir = tempfile::tempdir().unwrap();
    let linter = Arc::new(Linter::new(dir.path(), LintConfig::default()));
    let abs = dir.path().join("lib.rs");
    let before = "fn a() -> u8 {\n    1\n}\n\nfn b() -> u8 {\n    2\n}\n";
    fs::write(&abs, before).unwrap();
    linter.prime(&abs);
    assert!(wait_until_primed(&linter, &abs).await, "never primed");

    let after = before.replace("    2\n", "    let = 2;\n");
    fs::write(&abs, &after).unwrap();
    let primed = linter
        .check_write(&abs, "lib.rs", Some(before), &after)
        .await;
    let (_other, unprimed_linter) = project(LintConfig::default());
    let unprimed = unprimed_linter
        .check_write(&abs, "lib.rs", Some(before), &after)
        .await;
    assert_eq!(primed, unprimed);
    assert!(primed.contains("lib.rs:6"), "{primed}");
}

#[test]
fn priming_skips_large_files_unknown_files_and_files_already_kept() {
    let dir = tempfile::tempdir().unwrap();
    let linter = Linter::new(dir.path(), LintConfig::default());
    let large = dir.path().join("large.json");
    let body = "1,".repeat(usize::try_from(MAX_PRIMED_BYTES).unwrap());
    fs::write(&large, format!("[{body}1]")).unwrap();
    let unknown = dir.path().join("notes.txt");
    fs::write(&unknown, "plain text\n").unwrap();
    let small = dir.path().join("small.json");
    fs::write(&small, "[1]").unwrap();
    for abs in [&large, &unknown, &small] {
        linter.prime_now(abs);
    }
    assert!(!linter.parses().contains(&large));
    assert!(!linter.parses().contains(&unknown));
    assert!(linter.parses().contains(&small));

    // A checked file's parse is newer than what priming read: it is not replaced.
    let checked = tokio::runtime::Runtime::new().unwrap().block_on(async {
        fs::write(&small, "[2]").unwrap();
        linter
            .check_write(&small, "small.json", Some("[1]"), "[2]")
            .await
    });
    assert!(checked.contains("clean"), "{checked}");
    fs::write(&small, "[3]").unwrap();
    linter.prime_now(&small);
    assert_eq!(linter.parses().take(&small).unwrap().input, b"[2]");
}

/// A model may name any path in an edit it is still streaming; priming reads only
/// regular files, so a FIFO (whose read would wait for a writer forever) is left alone.
#[test]
fn priming_leaves_what_is_not_a_regular_file_alone() {
    let dir = tempfile::tempdir().unwrap();
    let linter = Arc::new(Linter::new(dir.path(), LintConfig::default()));
    let fifo = dir.path().join("pipe.json");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let (done, finished) = std::sync::mpsc::channel();
    let primer = Arc::clone(&linter);
    let path = fifo.clone();
    std::thread::spawn(move || {
        primer.prime_now(&path);
        let _ = done.send(());
    });
    let outcome = finished.recv_timeout(std::time::Duration::from_secs(10));
    if outcome.is_err() {
        // Unblock the reader so the test process can end, then fail.
        let _ = fs::write(&fifo, "[1]");
        panic!("priming waited on a FIFO");
    }
    assert!(!linter.parses().contains(&fifo));
    linter.prime_now(dir.path());
    assert!(!linter.parses().contains(dir.path()), "a directory");
}

#[tokio::test]
async fn nothing_is_primed_when_syntax_checks_are_off() {
    let dir = tempfile::tempdir().unwrap();
    let config = LintConfig {
        syntax: false,
        ..LintConfig::default()
    };
    let linter = Arc::new(Linter::new(dir.path(), config));
    let abs = dir.path().join("a.json");
    fs::write(&abs, "[1]").unwrap();
    linter.prime(&abs);
    linter.prime_now(&abs);
    assert!(!linter.parses().contains(&abs));
}
