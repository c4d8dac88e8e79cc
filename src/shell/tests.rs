//! Tests of the shell against a real bash on a real PTY. Time limits and quiet
//! periods are short so the whole suite stays fast.

use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use tokio_util::sync::CancellationToken;

use super::*;

fn fast_config() -> ShellConfig {
    ShellConfig {
        input_wait: Some(Duration::from_millis(500)),
        interrupt_grace: Duration::from_millis(500),
        ..ShellConfig::default()
    }
}

struct Harness {
    dir: tempfile::TempDir,
    shell: Shell,
}

impl Harness {
    fn new() -> Self {
        Self::with_program("bash")
    }

    fn with_program(program: &str) -> Self {
        Self::with_config(ShellConfig {
            program: Some(PathBuf::from(program)),
            ..fast_config()
        })
    }

    fn with_config(config: ShellConfig) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        Self {
            shell: Shell::new(&root, config),
            dir,
        }
    }

    fn root(&self) -> &Path {
        self.shell.root()
    }

    async fn run(&self, command: &str) -> Outcome {
        self.run_for(command, Duration::from_secs(10)).await
    }

    async fn run_for(&self, command: &str, timeout: Duration) -> Outcome {
        self.try_run(command, timeout).await.unwrap()
    }

    async fn try_run(&self, command: &str, timeout: Duration) -> Result<Outcome, ShellError> {
        let cancel = CancellationToken::new();
        let mut ignore = |_: String| {};
        self.shell
            .run(Request {
                command,
                timeout,
                cancel: &cancel,
                on_output: &mut ignore,
                input: None,
                attendant: None,
            })
            .await
    }

    /// Runs `command`, typing `input` at its first wait for keyboard input.
    async fn run_with_input(&self, command: &str, input: &str) -> Outcome {
        let cancel = CancellationToken::new();
        let mut ignore = |_: String| {};
        self.shell
            .run(Request {
                command,
                timeout: Duration::from_secs(10),
                cancel: &cancel,
                on_output: &mut ignore,
                input: Some(input),
                attendant: None,
            })
            .await
            .unwrap()
    }

    /// Runs `command`, which must exit normally, and returns its output.
    async fn ok(&self, command: &str) -> String {
        let outcome = self.run(command).await;
        assert_eq!(outcome.end, End::Exited { code: 0 }, "{outcome:?}");
        outcome.output
    }
}

#[tokio::test]
async fn cwd_and_exports_survive_separate_calls() {
    let h = Harness::new();
    std::fs::create_dir(h.dir.path().join("sub")).unwrap();
    assert_eq!(h.shell.cwd(), h.root());
    h.ok("cd sub").await;
    assert_eq!(h.shell.cwd(), h.root().join("sub"));
    h.ok("export GREETING='hello there'").await;
    let outcome = h.run(r#"echo "$GREETING from ${PWD##*/}""#).await;
    assert_eq!(outcome.output, "hello there from sub\n");
    assert_eq!(outcome.cwd, h.root().join("sub"));
    assert!(!outcome.replaced_shell);
}

/// The command and cwd files are overwritten in place: a short command or directory
/// after a longer one must not pick up the longer one's tail, noclobber included.
async fn check_shorter_commands_and_directories_after_longer_ones(h: &Harness) {
    std::fs::create_dir_all(h.dir.path().join("sub/deeper")).unwrap();
    h.ok("set -o noclobber; cd sub/deeper").await;
    assert_eq!(h.shell.cwd(), h.root().join("sub/deeper"));
    assert_eq!(
        h.ok("echo a-much-longer-command-than-the-next-one").await,
        "a-much-longer-command-than-the-next-one\n"
    );
    assert_eq!(h.ok("cd ..; echo x").await, "x\n");
    assert_eq!(h.shell.cwd(), h.root().join("sub"));
    assert_eq!(
        h.ok("pwd").await,
        format!("{}\n", h.root().join("sub").display())
    );
    h.ok("cd ..").await;
    assert_eq!(h.shell.cwd(), h.root());
}

#[tokio::test]
async fn shorter_commands_and_directories_replace_longer_ones_whole() {
    check_shorter_commands_and_directories_after_longer_ones(&Harness::new()).await;
}

#[tokio::test]
async fn a_command_with_a_nul_byte_is_refused_with_a_reason() {
    let h = Harness::new();
    match h.try_run("echo a\0b", Duration::from_secs(10)).await {
        Err(ShellError::Handoff(reason)) => assert!(reason.contains("NUL"), "{reason}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(h.ok("echo still here").await, "still here\n");
}

#[tokio::test]
async fn a_sourced_activate_script_keeps_its_function_and_path() {
    let h = Harness::new();
    let bin = h.dir.path().join("venv/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(
        bin.join("activate"),
        "VIRTUAL_ENV=\"$(pwd)/venv\"\nexport PATH=\"$VIRTUAL_ENV/bin:$PATH\"\n\
         deactivate() { echo deactivated; }\ndeclare -A TABLE=([k]=v)\n",
    )
    .unwrap();
    let tool = bin.join("venv-tool");
    std::fs::write(&tool, "#!/bin/sh\necho tool from venv\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    h.ok("source venv/bin/activate").await;
    assert_eq!(
        h.ok("venv-tool; deactivate; echo ${TABLE[k]}").await,
        "tool from venv\ndeactivated\nv\n"
    );
}

#[tokio::test]
async fn exit_codes_are_exact_and_the_shell_survives_exit() {
    let h = Harness::new();
    let cases = [
        ("true", 0),
        ("false", 1),
        ("(exit 42)", 42),
        ("no-such-command-here", 127),
        ("if then fi", 2),
        ("echo 'unterminated", 2),
    ];
    for (command, code) in cases {
        let outcome = h.run(command).await;
        assert_eq!(outcome.end, End::Exited { code }, "{command}: {outcome:?}");
    }
    assert!(
        h.run("no-such-command-here")
            .await
            .output
            .contains("command not found"),
        "the error names the problem"
    );

    h.ok("cd /").await;
    let outcome = h.run("echo bye; exit 3").await;
    assert_eq!(
        outcome.end,
        End::ShellExited(ShellExit {
            code: Some(3),
            signal: None
        })
    );
    assert_eq!(outcome.output, "bye\nexit\n");
    assert_eq!(outcome.cwd, h.root());
    let next = h.run("pwd").await;
    assert_eq!(next.output, format!("{}\n", h.root().display()));
    assert!(!next.replaced_shell, "the exit was already reported");
}

#[tokio::test]
async fn exit_with_a_background_job_holding_the_terminal_returns_promptly() {
    let h = Harness::new();
    let started = Instant::now();
    let outcome = h.run("sleep 30 & exit 4").await;
    assert!(matches!(
        outcome.end,
        End::ShellExited(ShellExit { code: Some(4), .. })
    ));
    // Far less than the 30 s the job holds the terminal, even on a loaded machine.
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_eq!(h.ok("echo alive").await, "alive\n");
}

#[tokio::test]
async fn scripts_heredocs_and_quotes_run_as_written() {
    let h = Harness::new();
    let script = "greet() {\n  printf '%s, %s!\\n' \"$1\" \"$2\"\n}\n\
                  greet 'single quoted' \"double $((1 + 1))\"\n\
                  cat <<'EOF'\nliteral $HOME `x` \\n\nEOF\n\
                  # a comment\n\
                  -x() { echo dash; }; -x";
    assert_eq!(
        h.ok(script).await,
        "single quoted, double 2!\nliteral $HOME `x` \\n\ndash\n"
    );
    assert_eq!(h.ok("printf 'no newline'").await, "no newline\n");
}

#[tokio::test]
async fn framing_never_shows_even_when_output_imitates_it() {
    let h = Harness::new();
    let fake = "<<duet-00000000000000000000000000000000:end:1:0>>";
    let outcome = h.run(&format!("echo '{fake}'; echo after")).await;
    assert_eq!(outcome.output, format!("{fake}\nafter\n"));
    assert_eq!(outcome.end, End::Exited { code: 0 });

    h.ok("set -x").await;
    let traced = h.ok("echo hi").await;
    assert!(traced.contains("echo hi\nhi\n"), "{traced}");
    for leak in ["__duet", "duet-", "<<"] {
        assert!(!traced.contains(leak), "{leak} in {traced}");
    }
    h.ok("set +x").await;
    assert_eq!(h.ok("echo plain").await, "plain\n");
}

#[tokio::test]
async fn progress_bars_collapse_to_their_last_state() {
    let h = Harness::new();
    let output = h
        .ok(r"for p in 10 50 100; do printf '\rDownloading... %3d%%' $p; done; printf '\n\033[32mdone\033[0m\n'")
        .await;
    assert_eq!(output, "Downloading... 100%\ndone\n");
}

#[tokio::test]
async fn a_time_limit_stops_the_command_and_the_shell_keeps_its_state() {
    let h = Harness::new();
    h.ok("export KEPT=yes").await;
    let started = Instant::now();
    let outcome = h
        .run_for("echo before; sleep 600", Duration::from_millis(500))
        .await;
    assert_eq!(
        outcome.end,
        End::TimedOut {
            recovery: Recovery::Kept
        }
    );
    assert_eq!(outcome.output, "before\n");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(h.ok("echo $KEPT").await, "yes\n");
}

#[tokio::test]
async fn a_shell_loop_that_ignores_ctrl_c_is_given_up_and_replaced() {
    let h = Harness::new();
    h.ok("cd /").await;
    let outcome = h
        .run_for(
            "trap '' INT; while :; do :; done",
            Duration::from_millis(300),
        )
        .await;
    assert_eq!(
        outcome.end,
        End::TimedOut {
            recovery: Recovery::Restarted
        }
    );
    assert_eq!(outcome.cwd, h.root());
    assert_eq!(h.shell.cwd(), h.root());
    assert_eq!(h.ok("echo fresh").await, "fresh\n");
}

// Input waits and leftover processes are seen through Linux's /proc.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn commands_waiting_for_terminal_input_are_stopped_quickly() {
    let h = Harness::new();
    let cases = [
        ("read answer", "bash"),
        ("python3", "python3"),
        ("cat | sort", "cat"),
        // Password prompts open /dev/tty themselves.
        ("python3 -c 'import getpass; getpass.getpass()'", "python3"),
    ];
    for (command, program) in cases {
        let started = Instant::now();
        let outcome = h.run_for(command, Duration::from_secs(20)).await;
        assert_eq!(
            outcome.end,
            End::WaitingForInput {
                program: program.into(),
                recovery: Recovery::Kept
            },
            "{command}: {outcome:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "{command}: {:?}",
            started.elapsed()
        );
    }
    assert_eq!(h.ok("echo still here").await, "still here\n");
}

#[tokio::test]
async fn a_quiet_command_that_is_not_reading_is_left_alone() {
    let h = Harness::new();
    let outcome = h.run("sleep 1.2 | cat; echo woke").await;
    assert_eq!(outcome.output, "woke\n");
}

#[tokio::test]
async fn cancelling_stops_a_long_command_promptly() {
    let h = Harness::new();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let mut ignore = |_: String| {};
    let started = Instant::now();
    let outcome = h
        .shell
        .run(Request {
            command: "echo working; sleep 60",
            timeout: Duration::from_secs(60),
            cancel: &cancel,
            on_output: &mut ignore,
            input: None,
            attendant: None,
        })
        .await
        .unwrap();
    assert_eq!(
        outcome.end,
        End::Interrupted {
            recovery: Recovery::Kept
        }
    );
    assert_eq!(outcome.output, "working\n");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(h.ok("echo next").await, "next\n");
}

#[tokio::test]
async fn isolated_commands_do_not_touch_the_main_shell() {
    let h = Harness::new();
    std::fs::create_dir_all(h.dir.path().join("a/b")).unwrap();
    h.ok("cd a; export MAIN=1").await;
    let cancel = CancellationToken::new();
    let mut ignore = |_: String| {};
    let isolated = h
        .shell
        .run_isolated(Request {
            command: "pwd; echo main=${MAIN:-unset}; cd b; export MAIN=2",
            timeout: Duration::from_secs(10),
            cancel: &cancel,
            on_output: &mut ignore,
            input: None,
            attendant: None,
        })
        .await
        .unwrap();
    assert_eq!(
        isolated.output,
        format!("{}\nmain=unset\n", h.root().join("a").display())
    );
    assert_eq!(isolated.cwd, h.root().join("a/b"));
    assert_eq!(h.shell.cwd(), h.root().join("a"));
    assert_eq!(
        h.ok("echo $MAIN; pwd").await,
        format!("1\n{}\n", h.root().join("a").display())
    );
}

#[tokio::test]
async fn live_output_arrives_in_pieces_while_the_command_runs() {
    let h = Harness::new();
    let chunks = Arc::new(StdMutex::new(Vec::<(Instant, String)>::new()));
    let sink = Arc::clone(&chunks);
    let mut collect = move |text: String| sink.lock().unwrap().push((Instant::now(), text));
    let cancel = CancellationToken::new();
    let outcome = h
        .shell
        .run(Request {
            command: "echo one; sleep 0.5; printf 'two\\rTWO'",
            timeout: Duration::from_secs(10),
            cancel: &cancel,
            on_output: &mut collect,
            input: None,
            attendant: None,
        })
        .await
        .unwrap();
    let ended = Instant::now();
    let chunks = chunks.lock().unwrap();
    let joined: String = chunks.iter().map(|(_, text)| text.as_str()).collect();
    assert_eq!(joined, "one\nTWO\n");
    assert_eq!(outcome.output, joined);
    assert_eq!(chunks[0].1, "one\n");
    assert!(ended - chunks[0].0 >= Duration::from_millis(300));
}

#[tokio::test]
async fn git_log_does_not_wait_for_a_pager() {
    let h = Harness::new();
    let output = h
        .ok(
            "git init -q . && git -c user.name=t -c user.email=t@example.com commit -q \
             --allow-empty -m 'first commit' && git log --format=%s && git commit --allow-empty \
             -q 2>&1; echo status=$?",
        )
        .await;
    assert!(output.starts_with("first commit\n"), "{output}");
    assert!(
        output.ends_with("status=1\n") || output.ends_with("status=128\n"),
        "{output}"
    );
}

#[tokio::test]
async fn ten_megabytes_of_output_come_back_whole() {
    let h = Harness::new();
    let started = Instant::now();
    let outcome = h
        .run("head -c 10000000 /dev/zero | tr '\\0' x | fold -w 100")
        .await;
    assert_eq!(outcome.end, End::Exited { code: 0 });
    assert_eq!(outcome.output.len(), 10_100_000);
    assert!(outcome.output.lines().all(|line| line.len() == 100));
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
}

// Input waits and leftover processes are seen through Linux's /proc.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn dropping_the_shell_ends_its_background_jobs() {
    let h = Harness::new();
    let started = h.ok("sleep 300 & echo $!").await;
    // Job control announces the job (`[1] <pid>`) before the echo.
    let pid: i32 = started.lines().last().unwrap().parse().unwrap();
    assert!(h.ok("jobs").await.contains("sleep 300"));
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    assert!(proc_dir.exists());
    drop(h);
    let deadline = Instant::now() + Duration::from_secs(3);
    // Gone, or a zombie waiting for its new parent to reap it.
    while proc_dir.exists() && !is_zombie(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!proc_dir.exists() || is_zombie(pid), "sleep {pid} survived");
}

#[cfg(target_os = "linux")]
fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'))
    })
}

#[tokio::test]
async fn zsh_sessions_keep_state_frame_commands_and_stop_them() {
    if !program_exists("zsh") {
        // CI installs zsh; on a developer's machine without it, say so and skip.
        assert!(
            std::env::var_os("DUET_CI").is_none(),
            "DUET_CI is set but zsh is missing"
        );
        eprintln!("skipped: zsh is not installed");
        return;
    }
    let h = Harness::with_program("zsh");
    std::fs::create_dir(h.dir.path().join("sub")).unwrap();
    h.ok("cd sub; export KEPT=yes; greet() { echo \"hi $1\" }")
        .await;
    assert_eq!(h.ok("greet $KEPT # comments work").await, "hi yes\n");
    assert_eq!(h.shell.cwd(), h.root().join("sub"));
    for (command, code) in [
        ("false", 1),
        ("(exit 42)", 42),
        ("no-such-command-here", 127),
    ] {
        assert_eq!(h.run(command).await.end, End::Exited { code }, "{command}");
    }
    h.ok("set -x").await;
    let traced = h.ok("echo traced").await;
    assert!(traced.ends_with("echo traced\ntraced\n"), "{traced}");
    assert!(!traced.contains("duet"), "{traced}");
    h.ok("set +x").await;
    assert_eq!(h.ok("printf 'a 1%%\\rb 100%%'").await, "b 100%\n");
    if cfg!(target_os = "linux") {
        let waiting = h.run("read answer").await;
        assert!(
            matches!(waiting.end, End::WaitingForInput { .. }),
            "{waiting:?}"
        );
    }
    let timed_out = h.run_for("sleep 600", Duration::from_millis(300)).await;
    assert_eq!(
        timed_out.end,
        End::TimedOut {
            recovery: Recovery::Kept
        }
    );
    assert_eq!(h.ok("echo $KEPT").await, "yes\n");
    let exited = h.run("exit 3").await;
    assert!(
        matches!(
            exited.end,
            End::ShellExited(ShellExit { code: Some(3), .. })
        ),
        "{exited:?}"
    );
    assert_eq!(h.ok("echo ${KEPT:-reset}").await, "reset\n");
    check_shorter_commands_and_directories_after_longer_ones(&h).await;
}

#[tokio::test]
async fn hidden_variables_never_reach_the_shell() {
    // HOME is in every test environment, and bash does not invent one when it is
    // missing, so hiding it shows through `echo`.
    assert!(
        std::env::var_os("HOME").is_some(),
        "the test needs HOME set"
    );
    let h = Harness::with_config(ShellConfig {
        program: Some(PathBuf::from("bash")),
        secrets: SecretFilter {
            extra: vec!["HOME".into()],
            keep: Vec::new(),
        },
        ..fast_config()
    });
    assert_eq!(h.ok(r#"echo "[${HOME-unset}]""#).await, "[unset]\n");
    assert!(h.shell.protections().await.environment_withheld >= 1);

    let kept = Harness::with_config(ShellConfig {
        program: Some(PathBuf::from("bash")),
        secrets: SecretFilter {
            extra: vec!["HOME".into()],
            keep: vec!["HOME".into()],
        },
        ..fast_config()
    });
    assert_ne!(kept.ok(r#"echo "[${HOME-unset}]""#).await, "[unset]\n");
}

#[tokio::test]
async fn without_a_sandbox_the_protections_say_it_is_off() {
    let h = Harness::new();
    let protections = h.shell.protections().await;
    assert_eq!(protections.badge(), "off");
    assert!(
        protections
            .confinement
            .network
            .to_string()
            .contains("turned off"),
        "{protections:?}"
    );
}

/// A stand-in launcher whose probe claims full protection (`@PROBED@`), while the
/// real start reports the network open (`@STARTED@`): the shell must not be used.
/// It shows the shell's scratch directory under the host's `/tmp` with a link, where
/// the real launcher mounts the private temp dir.
const LYING_LAUNCHER: &str = r#"#!/bin/bash
report= probe= tmp=
while [ $# -gt 0 ]; do
    case "$1" in
        --report-dir) report=$2; shift 2 ;;
        --tmp) tmp=$2; shift 2 ;;
        --probe) probe=1; shift ;;
        --) shift; break ;;
        *) shift ;;
    esac
done
if [ -n "$probe" ]; then
    echo '@PROBED@' >"$report/sandbox-report.json"
    exit 0
fi
for scratch in "$tmp"/duet-shell-*; do ln -sfn "$scratch" /tmp/; done
echo '@STARTED@' >"$report/sandbox-report.json"
exec "$@"
"#;

#[tokio::test]
async fn a_shell_with_less_protection_than_probed_gets_no_command() {
    use std::os::unix::fs::PermissionsExt as _;
    let bin = tempfile::tempdir().unwrap();
    let launcher = bin.path().join("lying-launcher");
    let full = crate::shell::sandbox::Protections::example(true, true).confinement;
    let mut lost = full.clone();
    lost.network = crate::shell::sandbox::NetworkIsolation::Open {
        why: "lost on the way".into(),
    };
    let report = |confinement| serde_json::json!({ "applied": confinement }).to_string();
    let script = LYING_LAUNCHER
        .replace("@PROBED@", &report(full))
        .replace("@STARTED@", &report(lost));
    std::fs::write(&launcher, script).unwrap();
    std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap();
    let h = Harness::with_config(ShellConfig {
        program: Some(PathBuf::from("bash")),
        sandbox: Some(SandboxConfig {
            launcher: Some(launcher),
            ..SandboxConfig::default()
        }),
        ..fast_config()
    });
    assert_eq!(h.shell.protections().await.badge(), "on");
    let cancel = CancellationToken::new();
    let mut ignore = |_: String| {};
    let error = h
        .shell
        .run(Request {
            command: "touch ran",
            timeout: Duration::from_secs(10),
            cancel: &cancel,
            on_output: &mut ignore,
            input: None,
            attendant: None,
        })
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(text.contains("could not be applied as probed"), "{text}");
    assert!(text.contains("lost on the way"), "{text}");
    assert!(!h.root().join("ran").exists());
    drop(h);
    // The links the stand-in made, dangling now that the sandbox is gone.
    for entry in std::fs::read_dir("/tmp").unwrap().flatten() {
        let dangling = entry.path().is_symlink() && !entry.path().exists();
        if dangling
            && entry
                .file_name()
                .to_string_lossy()
                .starts_with("duet-shell-")
        {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[test]
fn the_user_shell_is_used_only_when_it_is_bash_or_zsh() {
    assert!(is_supported(Path::new("/usr/bin/zsh")));
    assert!(is_supported(Path::new("/bin/bash")));
    assert!(!is_supported(Path::new("/usr/bin/fish")));
    assert_eq!(flavor_of(Path::new("/opt/zsh")), Flavor::Zsh);
    assert_eq!(flavor_of(Path::new("bash")), Flavor::Bash);
}

fn program_exists(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()))
}

#[tokio::test]
async fn input_is_typed_at_the_first_wait_and_a_second_wait_stops_the_command() {
    let h = Harness::new();
    let outcome = h
        .run_with_input(
            r#"read -r -p "Continue? [y/N] " answer; echo "got:$answer""#,
            "y\n",
        )
        .await;
    assert_eq!(outcome.end, End::Exited { code: 0 }, "{outcome:?}");
    assert!(outcome.output.contains("got:y"), "{}", outcome.output);
    // A password prompt reads the terminal itself, not stdin: typing still answers it.
    let outcome = h
        .run_with_input(
            "python3 -c 'import getpass; print(\"pw:\", getpass.getpass(\"Passphrase: \"))'",
            "s3cret\n",
        )
        .await;
    assert_eq!(outcome.end, End::Exited { code: 0 }, "{outcome:?}");
    assert!(outcome.output.contains("pw: s3cret"), "{}", outcome.output);
    // One answer: the second question waits, and is stopped as any input wait.
    let outcome = h
        .run_with_input("read -r first; read -r second; echo never", "one\n")
        .await;
    assert!(
        matches!(outcome.end, End::WaitingForInput { .. }),
        "{outcome:?}"
    );
    assert!(!outcome.output.contains("never"), "{}", outcome.output);
}
