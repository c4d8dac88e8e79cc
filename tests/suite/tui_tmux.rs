//! The real terminal, end to end: tmux runs `duet` against the scripted server in a temp
//! repository; the test types like a user (`send-keys`) and reads the screen
//! (`capture-pane`). It reviews an edit — rejecting one hunk with a reason, approving the
//! rest — then interrupts a long answer with Esc and steers with a new message. It sends a
//! project's custom command, chosen from the `/` list. And it drives `duet demo` to its
//! end, and checks that a streamed answer scrolled with the terminal's scroll region
//! leaves the screen as a full redraw draws it.

use std::path::Path;
use std::process::Command as Process;
use std::time::{Duration, Instant};

use base64::Engine as _;
use duet::provider::Wire;

use crate::common::harness::{
    TestRepo, all_text, duet_binary, last_user_text, run_duet, tool_results, wire_env,
};
use crate::common::script::{LoadScript, Script};
use crate::common::scripted_server::ScriptedServer;

const SCREEN_WAIT: Duration = Duration::from_secs(20);

/// A tmux server of the test's own (its own socket), killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(command: &str, cwd: &Path) -> Option<Tmux> {
        Self::start_with_options(command, cwd, &[])
    }

    /// [`Tmux::start`], with server options (`set-clipboard on`) set before the
    /// program starts.
    fn start_with_options(command: &str, cwd: &Path, options: &[(&str, &str)]) -> Option<Tmux> {
        if Process::new("tmux").arg("-V").output().is_err() {
            assert!(
                std::env::var_os("DUET_CI").is_none(),
                "DUET_CI is set but tmux is missing"
            );
            eprintln!("skipped: tmux is not installed");
            return None;
        }
        let socket = format!("duet-test-{}-{}", std::process::id(), rand_suffix());
        let tmux = Tmux { socket };
        let mut start = tmux.cmd();
        start.arg("start-server");
        for (option, value) in options {
            start.args([";", "set-option", "-g", option, value]);
        }
        let status = start
            .arg(";")
            .args([
                "new-session",
                "-d",
                "-s",
                "duet",
                "-x",
                "100",
                "-y",
                "30",
                "-c",
            ])
            .arg(cwd)
            .arg(command)
            .status()
            .expect("tmux new-session");
        assert!(status.success());
        Some(tmux)
    }

    fn cmd(&self) -> Process {
        let mut command = Process::new("tmux");
        command.args(["-L", &self.socket]);
        command
    }

    fn keys(&self, keys: &[&str]) {
        let status = self
            .cmd()
            .args(["send-keys", "-t", "duet"])
            .args(keys)
            .status()
            .expect("send-keys");
        assert!(status.success());
    }

    /// Types `text` as the user would, then presses Enter.
    fn type_line(&self, text: &str) {
        let status = self
            .cmd()
            .args(["send-keys", "-t", "duet", "-l", text])
            .status()
            .expect("send-keys -l");
        assert!(status.success());
        self.keys(&["Enter"]);
    }

    fn screen(&self) -> String {
        self.capture(&[])
    }

    /// A tmux format evaluated for the pane (`#{pane_title}`).
    fn display(&self, format: &str) -> String {
        let output = self
            .cmd()
            .args(["display-message", "-p", "-t", "duet", format])
            .output()
            .expect("display-message");
        String::from_utf8_lossy(&output.stdout)
            .trim_end()
            .to_string()
    }

    /// What `list-buffers` says: one line per paste buffer (OSC 52 makes one).
    fn buffers(&self) -> String {
        let output = self
            .cmd()
            .arg("list-buffers")
            .output()
            .expect("list-buffers");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// The screen and everything that scrolled off it.
    fn history(&self) -> String {
        self.capture(&["-S", "-500"])
    }

    fn capture(&self, extra: &[&str]) -> String {
        let output = self
            .cmd()
            .args(["capture-pane", "-p", "-t", "duet"])
            .args(extra)
            .output()
            .expect("capture-pane");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    async fn wait_for_screen(&self, needle: &str) -> String {
        let deadline = Instant::now() + SCREEN_WAIT;
        loop {
            let screen = self.screen();
            if screen.contains(needle) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {needle:?} on screen:\n{screen}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until the program in the pane has exited (tmux then ends the session).
    async fn wait_for_exit(&self) {
        let deadline = Instant::now() + SCREEN_WAIT;
        while self
            .cmd()
            .args(["has-session", "-t", "duet"])
            .status()
            .expect("tmux has-session")
            .success()
        {
            assert!(Instant::now() < deadline, "the program never exited");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").status();
    }
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default()
}

async fn wait_for_requests(server: &ScriptedServer, count: usize) {
    let deadline = Instant::now() + SCREEN_WAIT;
    while server.requests().len() < count {
        assert!(
            Instant::now() < deadline,
            "the server never saw request {count}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A shell command line that runs `duet` with only the environment a test gives it.
/// A `duet` session in tmux on the scripted model's `script`, in a repository holding
/// `a.txt`, started with `flags`, its prompt ready; `None` where tmux is missing.
struct Scripted {
    server: ScriptedServer,
    /// The workspace duet runs in: deleted when the session is dropped.
    repo: TestRepo,
    home: tempfile::TempDir,
    tmux: Tmux,
}

async fn scripted_session(script: &str, flags: &str) -> Option<Scripted> {
    scripted_session_with(script, flags, &[("a.txt", "a\n")]).await
}

/// [`scripted_session`] in a repository holding `files`.
async fn scripted_session_with(
    script: &str,
    flags: &str,
    files: &[(&str, &str)],
) -> Option<Scripted> {
    scripted_session_on(Wire::Anthropic, script, flags, files).await
}

/// [`scripted_session_with`] on `wire`.
async fn scripted_session_on(
    wire: Wire,
    script: &str,
    flags: &str,
    files: &[(&str, &str)],
) -> Option<Scripted> {
    let server = ScriptedServer::start(Script::from_toml(script).unwrap()).await;
    let repo = TestRepo::with_files(files);
    let home = tempfile::tempdir().unwrap();
    let env = wire_env(&server, wire);
    let command = isolated_duet_command(home.path(), flags, &env);
    let tmux = Tmux::start(&command, repo.path())?;
    tmux.wait_for_screen("Ask duet").await;
    Some(Scripted {
        server,
        repo,
        home,
        tmux,
    })
}

fn duet_command(server: &ScriptedServer, home: &Path, flags: &str) -> String {
    duet_command_with(server, home, flags, &[])
}

fn duet_command_with(
    server: &ScriptedServer,
    home: &Path,
    flags: &str,
    extra_env: &[(&str, String)],
) -> String {
    let env: Vec<(&str, String)> = wire_env(server, Wire::Anthropic)
        .into_iter()
        .chain(extra_env.iter().cloned())
        .collect();
    isolated_duet_command(home, flags, &env)
}

/// A shell command line that runs `duet` with a private HOME and config, a terminal,
/// PATH, and `env`.
fn isolated_duet_command(home: &Path, flags: &str, env: &[(&str, String)]) -> String {
    let mut all_env = vec![
        ("HOME".to_string(), home.display().to_string()),
        (
            "XDG_CONFIG_HOME".into(),
            home.join("config").display().to_string(),
        ),
        (
            "XDG_STATE_HOME".into(),
            home.join("state").display().to_string(),
        ),
        ("TERM".into(), "xterm-256color".into()),
        ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
    ];
    all_env.extend(env.iter().map(|(k, v)| (k.to_string(), v.clone())));
    let assignments: Vec<String> = all_env
        .iter()
        .map(|(k, v)| format!("{k}={}", shell_quote(v)))
        .collect();
    format!(
        "env -i {} {} {flags}",
        assignments.join(" "),
        shell_quote(&duet_binary().display().to_string())
    )
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[tokio::test]
async fn review_a_hunk_with_a_reason_then_interrupt_and_steer() {
    let lines: Vec<String> = (1..=20)
        .map(|n| match n {
            2 | 18 => format!("line {n} foo"),
            _ => format!("line {n}"),
        })
        .collect();
    let original = lines.join("\n") + "\n";
    let server = ScriptedServer::start(Script::load("tui_session")).await;
    let repo = TestRepo::with_files(&[("b.txt", &original)]);
    let home = tempfile::tempdir().unwrap();
    let command = duet_command(&server, home.path(), "--approval ask");
    let Some(tmux) = Tmux::start(&command, repo.path()) else {
        return;
    };

    tmux.wait_for_screen("ask").await;
    tmux.type_line("shout foo");
    tmux.wait_for_screen("FOO").await;
    // Second hunk: reject it, with a reason; the first stays accepted.
    tmux.keys(&["j"]);
    tmux.keys(&["Space"]);
    tmux.keys(&["r"]);
    tmux.type_line("keep the footer quiet");
    tmux.wait_for_screen("Applied what you accepted.").await;

    let expected = original.replacen("line 2 foo", "line 2 FOO", 1);
    assert_eq!(repo.read("b.txt"), expected);
    let result = &tool_results(&server.requests()[1])[0];
    assert!(
        result.content.contains("keep the footer quiet"),
        "{}",
        result.content
    );

    tmux.type_line("now the long one");
    server.wait_for_gate("long").await;
    tmux.wait_for_screen("this will take a while").await;
    tmux.keys(&["Escape"]);
    tmux.wait_for_screen("interrupted").await;
    tmux.type_line("please focus on b.txt");
    wait_for_requests(&server, 4).await;
    tmux.wait_for_screen("Focusing on b.txt now.").await;
    let steer = last_user_text(&server.requests()[3]);
    assert!(steer.contains("please focus on b.txt"), "{steer}");

    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    server.assert_no_violations();
}

#[tokio::test]
async fn a_resumed_session_shows_its_conversation_and_continues_it() {
    let server = ScriptedServer::start(Script::load("two_answers")).await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let home = tempfile::tempdir().unwrap();
    let env = wire_env(&server, Wire::Anthropic);
    let first = run_duet(repo.path(), home.path(), &env, &["exec", "first task"]).await;
    assert_eq!(first.status.code(), Some(0));
    let command = duet_command(&server, home.path(), "--resume");
    let Some(tmux) = Tmux::start(&command, repo.path()) else {
        return;
    };
    let screen = tmux.wait_for_screen("resumed session").await;
    assert!(screen.contains("› first task"), "{screen}");
    assert!(screen.contains("The first answer."), "{screen}");
    tmux.type_line("second task");
    tmux.wait_for_screen("The second answer.").await;
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(all_text(&requests[1]).contains("first task"));
    server.assert_no_violations();
}

/// `/resume` lists the workspace's sessions; `/resume ID` leaves this one for that one,
/// whose conversation is shown and continued.
#[tokio::test]
async fn resume_switches_to_an_earlier_session_from_inside_the_ui() {
    let server = ScriptedServer::start(Script::load("two_answers")).await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let home = tempfile::tempdir().unwrap();
    let env = wire_env(&server, Wire::Anthropic);
    let first = run_duet(repo.path(), home.path(), &env, &["exec", "first task"]).await;
    assert_eq!(first.status.code(), Some(0));
    let command = duet_command(&server, home.path(), "");
    let Some(tmux) = Tmux::start(&command, repo.path()) else {
        return;
    };
    tmux.wait_for_screen("Ask duet").await;
    tmux.type_line("/resume");
    let screen = tmux.wait_for_screen("/resume ID").await;
    assert!(screen.contains("first task"), "the listing: {screen}");
    // The listing's row of that session starts with its id.
    let id = screen
        .lines()
        .find(|line| line.contains("first task") && !line.contains("ID"))
        .and_then(|line| {
            line.split_whitespace().find(|word| {
                word.contains('-') && word.chars().all(|c| c.is_ascii_digit() || c == '-')
            })
        })
        .unwrap_or_else(|| panic!("no session id in the listing: {screen}"))
        .to_string();
    tmux.type_line("/resume 1-nonexistent");
    tmux.wait_for_screen("no session 1-nonexistent").await;
    tmux.type_line(&format!("/resume {id}"));
    let screen = tmux.wait_for_screen("resumed session").await;
    assert!(screen.contains("The first answer."), "{screen}");
    tmux.type_line("second task");
    tmux.wait_for_screen("The second answer.").await;
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(all_text(&requests[1]).contains("first task"));
    server.assert_no_violations();
}

#[tokio::test]
async fn inline_mode_leaves_the_conversation_in_the_terminal_scrollback() {
    let server = ScriptedServer::start(Script::load("stream_text")).await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let home = tempfile::tempdir().unwrap();
    let command = format!(
        "sh -c {}",
        shell_quote(&format!(
            "echo before-duet; {}; echo after-duet; sleep 30",
            duet_command(&server, home.path(), "--inline")
        ))
    );
    let Some(tmux) = Tmux::start(&command, repo.path()) else {
        return;
    };
    tmux.wait_for_screen("ASK").await;
    tmux.type_line("say hello");
    tmux.wait_for_screen("Streaming works.").await;
    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    tmux.wait_for_screen("after-duet").await;
    let history = tmux.history();
    let order: Vec<Option<usize>> = [
        "before-duet",
        "› say hello",
        "Hello from the scripted model. Streaming works.",
        "after-duet",
    ]
    .iter()
    .map(|needle| history.find(needle))
    .collect();
    assert!(order.iter().all(Option::is_some), "{history}");
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "out of order:\n{history}"
    );
    assert!(
        !history.contains("Ask duet…"),
        "the live input box must not stay behind:\n{history}"
    );
    server.assert_no_violations();
}

/// While an answer streams, the transcript's rows move up and the terminal is told to
/// scroll them (a scroll region) instead of having every row written again. Whatever
/// that left on the screen must be what drawing the last frame from scratch (Ctrl-L)
/// shows.
#[tokio::test]
async fn a_streamed_answer_that_scrolls_leaves_the_screen_as_a_full_redraw_draws_it() {
    let script = format!(
        "[[turn]]\nblocks = [{{ text = '''{}''', chunk = 12 }}]\npace_ms = 4\n",
        long_markdown()
    );
    let server = ScriptedServer::start(Script::from_toml(&script).unwrap()).await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let home = tempfile::tempdir().unwrap();
    let command = duet_command(&server, home.path(), "");
    let Some(tmux) = Tmux::start(&command, repo.path()) else {
        return;
    };
    tmux.wait_for_screen("Ask duet").await;
    tmux.type_line("explain the module");
    tmux.wait_for_screen("That is all of it.").await;
    let streamed = settled_screen(&tmux).await;
    assert!(
        !streamed.contains("explain the module"),
        "the answer must scroll the prompt off the screen:\n{streamed}"
    );
    tmux.keys(&["C-l"]);
    // The redraw clears first: wait until the text is back, then until it settles.
    tmux.wait_for_screen("That is all of it.").await;
    let redrawn = settled_screen(&tmux).await;
    assert_eq!(
        streamed, redrawn,
        "the streamed screen differs from a full redraw"
    );
    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    server.assert_no_violations();
}

/// An answer of paragraphs, lists and code blocks, several screens long.
fn long_markdown() -> String {
    let mut text = String::new();
    for section in 1..=8 {
        text.push_str(&format!(
            "## Part {section}\n\nThe function `step_{section}` reads the input, checks \
             that every field is present and **returns early** when one is missing, so the \
             caller sees the first problem.\n\n- one item of part {section}\n- another \
             item, long enough that it wraps across the width of the terminal on its own\n\n\
             ```rust\nfn step_{section}(input: &str) -> Option<u32> {{\n    let value = \
             input.trim().parse().ok()?;\n    Some(value + {section})\n}}\n```\n\n"
        ));
    }
    text.push_str("That is all of it.");
    text
}

/// The screen once two captures a little apart agree (the last frame was drawn).
async fn settled_screen(tmux: &Tmux) -> String {
    let deadline = Instant::now() + SCREEN_WAIT;
    let mut last = tmux.screen();
    loop {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let screen = tmux.screen();
        if screen == last {
            return screen;
        }
        assert!(
            Instant::now() < deadline,
            "the screen never settled:\n{screen}"
        );
        last = screen;
    }
}

/// Quitting while a command runs (one that ignores Ctrl-C): the agent is given the
/// moment it needs to record the call's result and the end of the turn, so the session
/// keeps a result for every call.
#[tokio::test]
async fn quitting_while_a_command_runs_keeps_its_result_in_the_session() {
    let script = r#"
[[turn]]
blocks = [{ tool = "shell", args = '{"command": "trap \"\" INT; echo stubborn-started; sleep 30"}' }]

[[turn]]
blocks = [{ text = "Not reached." }]
"#;
    let Some(session) = scripted_session(script, "--approval auto").await else {
        return;
    };
    session.tmux.type_line("run it");
    session.tmux.wait_for_screen("stubborn-started").await;
    session.tmux.keys(&["C-c"]);
    session.tmux.keys(&["C-c"]);
    session.tmux.wait_for_exit().await;
    let recorded = session_text(&session.home.path().join("state")).await;
    let records: Vec<serde_json::Value> = recorded
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let kinds: Vec<&str> = records
        .iter()
        .filter_map(|record| record["kind"].as_str())
        .collect();
    assert_eq!(
        kinds.iter().filter(|kind| **kind == "tool_result").count(),
        1,
        "{recorded}"
    );
    assert_eq!(kinds.last(), Some(&"turn_end"), "{recorded}");
    session.server.assert_no_violations();
}

/// A long command does not look hung: while it runs, its card's spinner turns and its
/// elapsed time counts up, drawn by the frame scheduler alone (no output arrives).
#[tokio::test]
async fn the_card_of_a_running_command_animates_and_counts_its_seconds() {
    let script = r#"
[[turn]]
blocks = [{ tool = "shell", args = '{"command": "sleep 5; echo slept"}' }]

[[turn]]
blocks = [{ text = "Done sleeping." }]
"#;
    let Some(session) = scripted_session(script, "--approval auto").await else {
        return;
    };
    session.tmux.type_line("sleep a while");
    let card_line = |screen: &str| {
        screen
            .lines()
            .find(|line| line.contains("sleep 5"))
            .map(str::to_string)
    };
    let first = card_line(&session.tmux.wait_for_screen("sleep 5").await);
    let mut lines = vec![first.clone()];
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(700)).await;
        lines.push(card_line(&session.tmux.screen()));
    }
    let seconds: Vec<u64> = lines
        .iter()
        .flatten()
        .filter_map(|line| {
            let word = line.split_whitespace().last()?;
            word.strip_suffix('s')?.parse().ok()
        })
        .collect();
    assert!(
        seconds.windows(2).all(|pair| pair[0] <= pair[1]) && seconds.last() > seconds.first(),
        "the elapsed time counts up: {lines:#?}"
    );
    let spinners: std::collections::BTreeSet<String> = lines
        .iter()
        .flatten()
        .filter_map(|line| line.split_whitespace().next().map(str::to_string))
        .collect();
    assert!(spinners.len() > 1, "the spinner turns: {lines:#?}");
    session.tmux.wait_for_screen("Done sleeping.").await;
    session.server.assert_no_violations();
}

/// What the check after a write found is on the write's card, not only in the model's
/// words.
#[tokio::test]
async fn a_write_card_shows_what_the_syntax_check_found() {
    let script = r#"
[[turn]]
blocks = [{ tool = "write", args = '{"path": "calc/stats.py", "content": "def mean(xs):\n    return sum(xs) / len(xs\n"}' }]

[[turn]]
blocks = [{ text = "Written." }]
"#;
    let Some(session) = scripted_session(script, "--approval auto").await else {
        return;
    };
    session.tmux.type_line("write the stats module");
    let screen = session.tmux.wait_for_screen("Written.").await;
    let verdict = screen
        .lines()
        .find(|line| line.contains("lint:"))
        .unwrap_or_else(|| panic!("no lint line on the card: {screen}"));
    assert!(
        verdict.contains("lint: 1 new syntax error (line 2)"),
        "{screen}"
    );
    session.server.assert_no_violations();
}

/// `!command` runs in the session's shell with a card of its own, and its output
/// reaches the model with the next message.
#[tokio::test]
async fn a_bang_command_runs_in_the_shell_and_reaches_the_model() {
    let script = "[[turn]]\nblocks = [{ text = \"Noted.\" }]\n";
    let Some(session) = scripted_session(script, "--approval ask").await else {
        return;
    };
    session.tmux.type_line("!echo tmux-user-$((40 + 2))");
    let screen = session.tmux.wait_for_screen("tmux-user-42").await;
    assert!(screen.contains("! echo tmux-user-"), "the card: {screen}");
    assert!(
        session.server.requests().is_empty(),
        "no model call for the command"
    );
    session.tmux.type_line("what did I run?");
    session.tmux.wait_for_screen("Noted.").await;
    let sent = all_text(&session.server.requests()[0]);
    assert!(sent.contains("tmux-user-42"), "{sent}");
    session.server.assert_no_violations();
}

/// A command the model started asks a question; the card says so, Ctrl-Y gives the
/// keys to it, `y` and Enter answer it, and Esc is not needed: its end gives the keys
/// back. The answer lands on the host and the model sees the exchange.
#[tokio::test]
async fn typing_y_into_a_command_that_waits_for_input() {
    let script = r#"
[[turn]]
blocks = [{ tool = "shell", args = '{"command": "read -r -p \"Deploy to staging? [y/N] \" yes; [ \"$yes\" = y ] && echo deployed > answer.txt"}' }]

[[turn]]
blocks = [{ text = "Deployed, as you said." }]
"#;
    let Some(session) = scripted_session(script, "--approval auto").await else {
        return;
    };
    session.tmux.type_line("deploy it");
    let screen = session.tmux.wait_for_screen("waits for input").await;
    assert!(screen.contains("Deploy to staging? [y/N]"), "{screen}");
    assert!(screen.contains("Ctrl-Y"), "the card says how: {screen}");
    session.tmux.keys(&["C-y"]);
    session.tmux.wait_for_screen("typing into").await;
    session.tmux.keys(&["y"]);
    session.tmux.wait_for_screen("[y/N] y").await;
    session.tmux.keys(&["Enter"]);
    session.tmux.wait_for_screen("Deployed, as you said.").await;
    assert_eq!(
        std::fs::read_to_string(session.repo.path().join("answer.txt")).unwrap(),
        "deployed\n"
    );
    let sent = all_text(&session.server.requests()[1]);
    assert!(sent.contains("Deploy to staging? [y/N] y"), "{sent}");
    // The keys are duet's again: typing goes into the message.
    session.tmux.keys(&["-l", "thanks"]);
    session.tmux.wait_for_screen("thanks").await;
    session.server.assert_no_violations();
}

for_each_wire!(an_image_attached_in_the_ui_reaches_the_model_as_an_image_block);

/// `/image PATH` shows a chip and the image goes with the next message, as the image
/// block each API documents.
async fn an_image_attached_in_the_ui_reaches_the_model_as_an_image_block(wire: Wire) {
    let script = "[[turn]]\nblocks = [{ text = \"A single dot.\" }]\n";
    let Some(session) =
        scripted_session_on(wire, script, "--approval ask", &[("a.txt", "a\n")]).await
    else {
        return;
    };
    let shot = session.home.path().join("shot.png");
    std::fs::write(&shot, super::images::PNG).unwrap();
    session
        .tmux
        .type_line(&format!("/image {}", shot.display()));
    session.tmux.wait_for_screen("[image: shot.png]").await;
    session.tmux.type_line("what is in this picture?");
    session.tmux.wait_for_screen("A single dot.").await;
    let request = &session.server.requests()[0];
    let expected = base64::engine::general_purpose::STANDARD.encode(super::images::PNG);
    assert_eq!(
        super::images::images_sent(wire, &request.body),
        [("image/png".to_string(), expected)]
    );
    session.server.assert_no_violations();
}

/// A server the model starts in the background answers the model's later `curl`, in
/// the sandbox with the network isolated, and `/ps` lists it.
#[tokio::test]
async fn a_background_server_answers_a_later_curl_from_the_model() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let serve = serde_json::json!({
        "command": format!("python3 -m http.server {port} --bind 127.0.0.1"),
        "background": true,
    });
    let fetch = serde_json::json!({
        "command": format!(
            "for i in $(seq 100); do curl -sf http://127.0.0.1:{port}/a.txt && break; sleep 0.1; done"
        ),
        "timeout": 30,
    });
    let script = format!(
        "[[turn]]\nblocks = [{{ tool = \"shell\", args = {} }}]\n\n\
         [[turn]]\nblocks = [{{ tool = \"shell\", args = {} }}]\n\n\
         [[turn]]\nblocks = [{{ text = \"Served fine.\" }}]\n",
        toml::Value::String(serve.to_string()),
        toml::Value::String(fetch.to_string()),
    );
    let Some(session) =
        scripted_session_with(&script, "--approval auto", &[("a.txt", "served-from-bg\n")]).await
    else {
        return;
    };
    session.tmux.type_line("start the server and fetch a.txt");
    // Auto mode asks before the server (a Python module it does not know) and the
    // fetch (the network): the user says yes to each.
    let deadline = Instant::now() + SCREEN_WAIT;
    loop {
        let screen = session.tmux.screen();
        if screen.contains("Served fine.") {
            break;
        }
        assert!(Instant::now() < deadline, "the task did not end:\n{screen}");
        if screen.contains("Run command?") {
            session.tmux.keys(&["y"]);
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let fetched = tool_results(&session.server.requests()[2])
        .pop()
        .expect("the fetch's result");
    assert!(
        fetched.content.contains("served-from-bg"),
        "{}",
        fetched.content
    );
    session.tmux.type_line("/ps");
    session.tmux.wait_for_screen("http.server").await;
    session.server.assert_no_violations();
}

#[tokio::test]
async fn what_the_user_saves_in_their_editor_becomes_the_change() {
    let server = ScriptedServer::start(Script::load("edit_two_places")).await;
    let lines: Vec<String> = (1..=20)
        .map(|n| match n {
            2 | 18 => format!("line {n} foo"),
            _ => format!("line {n}"),
        })
        .collect();
    let original = lines.join("\n") + "\n";
    let repo = TestRepo::with_files(&[("b.txt", &original)]);
    let home = tempfile::tempdir().unwrap();
    // The "editor" rewrites the proposal the way a person would, then exits.
    let editor = home.path().join("editor.sh");
    std::fs::write(&editor, "#!/bin/sh\nsed -i 's/FOO/Foo/' \"$1\"\n").unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&editor)
        .status()
        .unwrap();
    let command = duet_command_with(
        &server,
        home.path(),
        "--approval ask",
        &[("EDITOR", editor.display().to_string())],
    );
    let Some(tmux) = Tmux::start(&command, repo.path()) else {
        return;
    };
    tmux.wait_for_screen("ASK").await;
    tmux.type_line("shout foo");
    tmux.wait_for_screen("FOO").await;
    tmux.keys(&["e"]);
    tmux.wait_for_screen("Noted which part landed.").await;

    assert_eq!(repo.read("b.txt"), original.replace("foo", "Foo"));
    let result = &tool_results(&server.requests()[1])[0];
    assert!(
        result.content.contains("The user edited your proposal"),
        "{}",
        result.content
    );
    assert!(result.content.contains("+line 2 Foo"), "{}", result.content);
    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    server.assert_no_violations();
}

/// Typing `@` and part of a file's name offers the workspace's files (what .gitignore
/// ignores left out); Tab puts the chosen one's whole path in the message.
#[tokio::test]
async fn an_at_mention_completes_a_file_path_with_tab() {
    let server = ScriptedServer::start(
        Script::from_toml("[[turn]]\nblocks = [{ text = \"Read it.\" }]\n").unwrap(),
    )
    .await;
    let repo = TestRepo::with_files(&[
        ("src/parser/lexer.rs", "pub fn lex() {}\n"),
        ("src/parser/mod.rs", "mod lexer;\n"),
        ("build/lexer_generated.rs", "// generated\n"),
        (".gitignore", "build/\n"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let command = duet_command(&server, home.path(), "");
    let Some(tmux) = Tmux::start(&command, repo.path()) else {
        return;
    };
    tmux.wait_for_screen("Ask duet").await;
    tmux.keys(&["-l", "explain @lexer"]);
    let screen = tmux.wait_for_screen("│ src/parser/lexer.rs").await;
    assert!(!screen.contains("lexer_generated"), "ignored: {screen}");
    tmux.keys(&["Tab"]);
    let screen = tmux.wait_for_screen("› explain @src/parser/lexer.rs").await;
    assert!(!screen.contains("┌ files"), "the list closed: {screen}");
    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    server.assert_no_violations();
}

/// Ctrl-G hands the message to `$EDITOR`; what it saves comes back to the input, not
/// sent. An editor that fails leaves the input as it was and says so.
#[tokio::test]
async fn ctrl_g_edits_the_message_in_the_editor() {
    let server = ScriptedServer::start(
        Script::from_toml("[[turn]]\nblocks = [{ text = \"Unused.\" }]\n").unwrap(),
    )
    .await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let home = tempfile::tempdir().unwrap();
    // The "editor" rewrites the message the way a person would, or fails on request.
    let editor = home.path().join("editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\ngrep -q fail \"$1\" && exit 3\nprintf 'rewritten by the editor\\nwith a second line\\n' > \"$1\"\n",
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&editor)
        .status()
        .unwrap();
    let command = duet_command_with(
        &server,
        home.path(),
        "",
        &[("EDITOR", editor.display().to_string())],
    );
    let Some(tmux) = Tmux::start(&command, repo.path()) else {
        return;
    };
    tmux.wait_for_screen("Ask duet").await;
    tmux.keys(&["-l", "please fail"]);
    tmux.keys(&["C-g"]);
    let screen = tmux.wait_for_screen("the editor failed").await;
    assert!(screen.contains("the message is as it was"), "{screen}");
    assert!(screen.contains("› please fail"), "{screen}");

    tmux.keys(&["C-u"]);
    tmux.keys(&["-l", "a first draft"]);
    tmux.keys(&["C-g"]);
    let screen = tmux.wait_for_screen("› rewritten by the editor").await;
    assert!(screen.contains("  with a second line"), "{screen}");
    assert!(!screen.contains("a first draft"), "{screen}");
    assert_eq!(server.requests().len(), 0, "put back, not sent");
    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    server.assert_no_violations();
}

#[tokio::test]
async fn with_nothing_configured_the_setup_view_opens_and_leaving_it_shows_the_guidance() {
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let home = tempfile::tempdir().unwrap();
    // The pane stays open after duet exits, so its last words can be read.
    let command = format!(
        "{}; echo \"exit status $?\"; sleep 60",
        isolated_duet_command(home.path(), "", &[])
    );
    let Some(tmux) = Tmux::start(&command, repo.path()) else {
        return;
    };
    let screen = tmux.wait_for_screen("Hosted models: set a key").await;
    assert!(screen.contains("duet needs a model to talk to"), "{screen}");
    assert!(screen.contains("ANTHROPIC_API_KEY"), "{screen}");
    tmux.keys(&["q"]);
    let screen = tmux.wait_for_screen("exit status 2").await;
    assert!(screen.contains("OPENAI_BASE_URL"), "{screen}");
    assert!(
        !home.path().join("config/duet/config.toml").exists(),
        "leaving without a pick writes nothing"
    );
}

/// `duet demo` end to end, with no key and no network: the replayed session reviews an
/// edit (one hunk rejected), catches a syntax error and fixes it, and takes a message
/// typed mid-run.
#[tokio::test]
async fn the_demo_runs_to_its_end_with_the_users_choices() {
    let home = tempfile::tempdir().unwrap();
    let env = [
        ("HOME", home.path()),
        ("XDG_CONFIG_HOME", &home.path().join("config")),
        ("XDG_STATE_HOME", &home.path().join("state")),
    ];
    let assignments: Vec<String> = env
        .iter()
        .map(|(k, v)| format!("{k}={}", shell_quote(&v.display().to_string())))
        .collect();
    let command = format!(
        "env -i {} TERM=xterm-256color PATH={} {} demo --delay-ms 0",
        assignments.join(" "),
        shell_quote(&std::env::var("PATH").unwrap_or_default()),
        shell_quote(&duet_binary().display().to_string())
    );
    let Some(tmux) = Tmux::start(&command, home.path()) else {
        return;
    };

    let screen = tmux.wait_for_screen("hunk 1 of 2").await;
    assert!(screen.contains("demo: replayed model"), "{screen}");
    let workspace = demo_workspace(&home.path().join("state")).await;
    // Reject the second hunk (divide), keep the first (add).
    tmux.keys(&["j"]);
    tmux.keys(&["Space"]);
    tmux.keys(&["y"]);
    // The new module, with its syntax error: approve it.
    tmux.wait_for_screen("def median(values:").await;
    tmux.keys(&["y"]);
    // The fix, once the check reported the error (the review panel covers the
    // transcript until it is decided).
    tmux.wait_for_screen("+ def median(values):").await;
    tmux.keys(&["y"]);
    let screen = tmux.wait_for_screen("caught a syntax error").await;
    assert!(screen.contains("+def median(values):"), "{screen}");

    tmux.wait_for_screen("Demo hint").await;
    tmux.type_line("also add a docstring");
    let screen = tmux.wait_for_screen("End of the").await;
    assert!(screen.contains("› also add a docstring"), "{screen}");
    let steered = screen.find("› also add a docstring");
    let answered = screen.find("End of the");
    assert!(
        steered < answered,
        "the steer came before the last answer:\n{screen}"
    );

    let ops = std::fs::read_to_string(workspace.join("calc/ops.py")).unwrap();
    assert!(
        ops.contains("def add(a: float, b: float) -> float:"),
        "{ops}"
    );
    assert!(ops.contains("def divide(a, b):"), "{ops}");
    let stats = std::fs::read_to_string(workspace.join("calc/stats.py")).unwrap();
    assert!(stats.contains("def median(values):"), "{stats}");
    let session = session_text(&home.path().join("state")).await;
    assert!(
        session.contains("also add a docstring"),
        "the steer reached the model"
    );
    assert!(
        session.contains("calc/stats.py:4:11: syntax error"),
        "the post-write check reported the error to the model"
    );

    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
}

/// The demo's workspace, as its session header records it.
async fn demo_workspace(state: &Path) -> std::path::PathBuf {
    let session = session_text(state).await;
    let header: serde_json::Value = serde_json::from_str(session.lines().next().unwrap()).unwrap();
    std::path::PathBuf::from(header["workspace"].as_str().unwrap())
}

/// The text of the one session recorded under `state`.
async fn session_text(state: &Path) -> String {
    let deadline = Instant::now() + SCREEN_WAIT;
    loop {
        let found = walk_files(state)
            .into_iter()
            .find(|path| path.extension().is_some_and(|ext| ext == "jsonl"));
        if let Some(path) = found {
            return std::fs::read_to_string(path).unwrap();
        }
        assert!(
            Instant::now() < deadline,
            "no session under {}",
            state.display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn walk_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .flat_map(|entry| {
            let path = entry.path();
            if path.is_dir() {
                walk_files(&path)
            } else {
                vec![path]
            }
        })
        .collect()
}

/// A model streams text that would write the clipboard (OSC 52), set the window title
/// (OSC 0) and move the cursor up to erase the line above, the first sequence cut
/// between two deltas. On the real terminal: the title is the one a control `printf`
/// set before duet started (proving titles take effect here), the only paste buffer is
/// the control's (proving this tmux takes OSC 52 from programs), and the screen shows
/// placeholders where the sequences were, with the line above left standing.
#[tokio::test]
async fn escape_sequences_the_model_streams_have_no_effect_on_the_terminal() {
    let script = r#"
[[turn]]
blocks = [{ text = "Copy\u001b]52;c;cm0gLXJmIH4vICMgcHduZWQ=\u0007 this.\n\u001b]0;PWNED-TITLE\u0007Title line.\n\u001b[1A\u001b[2KOVERWRITE\nThe end.", chunk = 5 }]
"#;
    let server = ScriptedServer::start(Script::from_toml(script).unwrap()).await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let home = tempfile::tempdir().unwrap();
    let controls = r"printf '\033]2;control-title\007\033]52;c;Y29udHJvbA==\007'";
    let command = format!(
        "sh -c {}",
        shell_quote(&format!(
            "{controls}; exec {}",
            duet_command(&server, home.path(), "")
        ))
    );
    let Some(tmux) = Tmux::start_with_options(&command, repo.path(), &[("set-clipboard", "on")])
    else {
        return;
    };
    tmux.wait_for_screen("Ask duet").await;
    assert_eq!(tmux.display("#{pane_title}"), "control-title");
    let before = tmux.buffers();
    assert!(before.contains("control"), "{before}");

    tmux.type_line("go");
    let screen = tmux.wait_for_screen("The end.").await;
    assert_eq!(
        tmux.display("#{pane_title}"),
        "control-title",
        "the title changed"
    );
    let after = tmux.buffers();
    assert_eq!(after, before, "a paste buffer appeared");
    for shown in ["Copy␛ this.", "␛Title line.", "␛␛OVERWRITE"] {
        assert!(screen.contains(shown), "{shown:?} not on screen:\n{screen}");
    }
    assert!(!screen.contains("52;c;"), "{screen}");
    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    server.assert_no_violations();
}

/// A project's prompt file is a command: the `/` list offers it, and `/review
/// src/lib.rs` reaches the model as the file's text with the argument filled in.
#[tokio::test]
async fn a_custom_command_sends_its_expanded_prompt_to_the_model() {
    let script = r#"
[[turn]]
blocks = [{ text = "Reviewed." }]
"#;
    let files = [
        ("src/lib.rs", "pub fn f() {}\n"),
        (
            ".duet/commands/review.md",
            "---\ndescription: Review a file\nargument-hint: [file]\n---\nReview $ARGUMENTS carefully\n",
        ),
    ];
    let Some(session) = scripted_session_with(script, "", &files).await else {
        return;
    };
    let tmux = &session.tmux;
    let keys = |text: &str| {
        let status = tmux
            .cmd()
            .args(["send-keys", "-t", "duet", "-l", text])
            .status()
            .expect("send-keys -l");
        assert!(status.success());
    };
    keys("/rev");
    let screen = tmux.wait_for_screen("[file]  Review a file").await;
    assert!(screen.contains("/review"), "{screen}");
    tmux.keys(&["Tab"]);
    tmux.type_line("src/lib.rs");
    wait_for_requests(&session.server, 1).await;
    tmux.wait_for_screen("Reviewed.").await;
    let requests = session.server.requests();
    let sent = last_user_text(&requests[0]);
    assert!(sent.contains("Review src/lib.rs carefully"), "{sent}");
    assert!(!sent.contains("$ARGUMENTS"), "{sent}");
    session.server.assert_no_violations();
}
