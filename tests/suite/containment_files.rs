//! Every file operation duet itself performs stays in the workspace (issue 21, item 3;
//! checklist B5–B7, C10, I21, K24). The model is scripted to aim the file tools, undo
//! and `duet exec --done` at things outside the workspace through links, `..`, prefix
//! siblings, hard links and races; every test asserts on the host: the decoys (in
//! their own temp directory, outside the workspace's) are unchanged, and markers that
//! a program ran are absent.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use duet::agent::protocol::UndoScope;
use duet::agent::{Command, Event};
use duet::policy::{ApprovalMode, Decision};
use duet::provider::Wire;
use pretty_assertions::assert_eq;

use crate::common::harness::{TestAgent, TestRepo, all_text, run_duet, tool_results, wire_env};
use crate::common::script::{LoadScript, Script};
use crate::common::scripted_server::ScriptedServer;

/// A directory of decoys outside the workspace: what planted links point at.
struct Decoys {
    dir: tempfile::TempDir,
}

impl Decoys {
    fn new(files: &[(&str, &str)]) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("duet-decoys-")
            .tempdir()
            .expect("decoy dir");
        for (name, content) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, content).expect("decoy");
        }
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Every entry below the decoy directory with its bytes (a link's target for a
    /// link), to compare before and after.
    fn snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut found = BTreeMap::new();
        let mut pending = vec![self.path().to_path_buf()];
        while let Some(dir) = pending.pop() {
            for entry in std::fs::read_dir(&dir).expect("read decoys") {
                let path = entry.expect("entry").path();
                let meta = std::fs::symlink_metadata(&path).expect("stat");
                let relative = path.strip_prefix(self.path()).expect("below").to_path_buf();
                if meta.is_dir() {
                    found.insert(relative, b"<dir>".to_vec());
                    pending.push(path);
                } else if meta.is_symlink() {
                    let target = std::fs::read_link(&path).expect("link");
                    found.insert(relative, target.into_os_string().into_encoded_bytes());
                } else {
                    found.insert(relative, std::fs::read(&path).expect("read"));
                }
            }
        }
        found
    }
}

fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).expect("symlink");
}

/// A TOML string holding `text` (JSON's escapes are TOML's).
fn quoted(text: &str) -> String {
    serde_json::to_string(text).expect("string")
}

/// One model response calling `tool` with each of `calls` (JSON arguments), then a
/// closing message; as a script.
fn calls_then_done(tool_calls: &[(&str, serde_json::Value)]) -> Script {
    calls_then_gated_done(tool_calls, None)
}

/// The same, with the closing message held at `gate` until the test releases it.
fn calls_then_gated_done(tool_calls: &[(&str, serde_json::Value)], gate: Option<&str>) -> Script {
    let gate = gate.map_or_else(String::new, |gate| {
        format!("{{ gate = {} }}, ", quoted(gate))
    });
    let blocks: Vec<String> = tool_calls
        .iter()
        .map(|(tool, args)| {
            format!(
                "{{ tool = {}, args = {} }}",
                quoted(tool),
                quoted(&args.to_string())
            )
        })
        .collect();
    let text = format!(
        "[[turn]]\nblocks = [\n  {}\n]\n\n[[turn]]\nblocks = [{gate}{{ text = \"Done.\" }}]\n",
        blocks.join(",\n  ")
    );
    Script::from_toml(&text).expect("script")
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().expect("canonical")
}

/// Waits for the end of the turn, approving whatever the turn asks for meanwhile (a
/// person who says yes to everything: what is tested must hold even then).
async fn end_of_turn_approving_all(agent: &mut TestAgent) -> duet::agent::TurnOutcome {
    loop {
        let event = agent
            .wait_for("an approval or the end of the turn", |e| {
                matches!(e, Event::ApprovalNeeded { .. } | Event::TurnEnd { .. })
            })
            .await;
        match event {
            Event::ApprovalNeeded { call_id, .. } => agent.decide(&call_id, Decision::Approve),
            Event::TurnEnd { outcome, .. } => return outcome,
            _ => unreachable!("wait_for returned a non-matching event"),
        }
    }
}

// --- B5, B6: traversal, prefix siblings and links, for reads and writes -------------

#[tokio::test]
async fn reads_and_writes_through_links_dot_dots_and_prefix_siblings_stay_inside() {
    let decoys = Decoys::new(&[
        ("bashrc", "the user's shell setup\n"),
        ("home/.bashrc", "the user's shell setup\n"),
        ("home/.ssh/id_canary", "PRIVATE KEY canary\n"),
    ]);
    let repo = TestRepo::with_files(&[("README.md", "hello\n")]);
    let root = canonical(repo.path());
    // One link per call: the same refusal three times in a row would stop the turn.
    for name in ["notes.md", "notes2.md", "notes3.md"] {
        symlink(&decoys.path().join("bashrc"), &root.join(name));
    }
    symlink(&decoys.path().join("home"), &root.join("home"));
    // `/w/proj_evil` beside `/w/proj`: a prefix of the root's path, but not inside it.
    let sibling = PathBuf::from(format!("{}_evil", root.display()));
    std::fs::create_dir_all(&sibling).expect("sibling");
    std::fs::write(sibling.join("x"), "sibling secret\n").expect("sibling file");
    let decoy_name = decoys
        .path()
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    let via_parent = format!("{}/../{decoy_name}/x", root.display());
    let via_double_slash = format!("{}//../{decoy_name}/y", root.display());
    let up_into_decoys = format!("../{decoy_name}/z");
    let before = decoys.snapshot();

    let text = "pwned\n";
    let calls = [
        ("read", serde_json::json!({"path": "home/.ssh/id_canary"})),
        ("read", serde_json::json!({"path": "notes.md"})),
        ("read", serde_json::json!({"path": sibling.join("x")})),
        (
            "read",
            serde_json::json!({"path": format!("{}/../{decoy_name}/bashrc", root.display())}),
        ),
        (
            "write",
            serde_json::json!({"path": "home/.bashrc", "content": text}),
        ),
        (
            "write",
            serde_json::json!({"path": "home/new/file", "content": text}),
        ),
        (
            "write",
            serde_json::json!({"path": "notes2.md", "content": text}),
        ),
        (
            "edit",
            serde_json::json!({"path": "notes3.md", "old_string": "shell", "new_string": "pwned"}),
        ),
        (
            "write",
            serde_json::json!({"path": sibling.join("x"), "content": text}),
        ),
        (
            "write",
            serde_json::json!({"path": via_parent, "content": text}),
        ),
        (
            "write",
            serde_json::json!({"path": via_double_slash, "content": text}),
        ),
        (
            "write",
            serde_json::json!({"path": up_into_decoys, "content": text}),
        ),
    ];
    let server = ScriptedServer::start(calls_then_done(&calls)).await;
    let mut agent = TestAgent::start(&server, Wire::Anthropic, &root, ApprovalMode::Auto);
    agent.send("update the notes");
    let outcome = end_of_turn_approving_all(&mut agent).await;
    assert_eq!(server.requests().len(), 2, "{outcome:?}: {:#?}", agent.seen);

    let results = tool_results(&server.requests()[1]);
    assert_eq!(results.len(), calls.len(), "{results:#?}");
    for ((tool, args), result) in calls.iter().zip(&results) {
        assert!(result.is_error, "{tool} {args} was not refused: {result:?}");
        assert!(
            !result.content.contains("PRIVATE KEY") && !result.content.contains("sibling secret"),
            "{tool} {args} leaked: {}",
            result.content
        );
    }
    assert_eq!(decoys.snapshot(), before);
    assert_eq!(
        std::fs::read_to_string(sibling.join("x")).expect("sibling"),
        "sibling secret\n"
    );
    std::fs::remove_dir_all(&sibling).expect("clean sibling");
    server.assert_no_violations();
}

// --- I21: approve, then a background job swaps a directory for a link ----------------

/// Swaps the workspace's directory `d` and a link to outside, kept in a directory
/// beside the workspace (so no snapshot sees it), atomically, over and over until
/// stopped: `d` is always there, a directory one moment and a link the next.
struct Swapper {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
    root: PathBuf,
    /// Holds `l`: the link while `d` is the directory, the directory while `d` is
    /// the link.
    aside: tempfile::TempDir,
}

impl Swapper {
    fn start(root: &Path, outside: &Path) -> Self {
        let aside = tempfile::tempdir().expect("aside");
        symlink(outside, &aside.path().join("l"));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (stop, root, aside) = (
                Arc::clone(&stop),
                root.to_path_buf(),
                aside.path().to_path_buf(),
            );
            std::thread::spawn(move || {
                let open = |dir: &Path| {
                    rustix::fs::open(
                        dir,
                        rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY,
                        rustix::fs::Mode::empty(),
                    )
                    .expect("open")
                };
                let (root, aside) = (open(&root), open(&aside));
                let mut swaps = 0;
                while !stop.load(Ordering::Relaxed) {
                    rustix::fs::renameat_with(
                        &root,
                        "d",
                        &aside,
                        "l",
                        rustix::fs::RenameFlags::EXCHANGE,
                    )
                    .expect("exchange");
                    swaps += 1;
                    if swaps % 64 == 0 {
                        std::thread::sleep(Duration::from_micros(50));
                    }
                }
                swaps
            })
        };
        Self {
            stop,
            thread: Some(thread),
            root: root.to_path_buf(),
            aside,
        }
    }

    /// Stops swapping and leaves `d` the directory; returns the swaps.
    fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        let swaps = self
            .thread
            .take()
            .expect("running")
            .join()
            .expect("swapper");
        let d = self.root.join("d");
        if std::fs::symlink_metadata(&d).expect("d").is_symlink() {
            std::fs::remove_file(&d).expect("remove the link");
            std::fs::rename(self.aside.path().join("l"), &d).expect("put d back");
        }
        swaps
    }
}

async fn undo_answer(agent: &mut TestAgent) -> Result<Vec<String>, String> {
    let answer = agent
        .wait_for("the undo's answer", |e| {
            matches!(e, Event::Undone { .. } | Event::UndoFailed { .. })
        })
        .await;
    match answer {
        Event::Undone { files, .. } => Ok(files),
        Event::UndoFailed { message } => Err(message),
        _ => unreachable!("wait_for returned a non-matching event"),
    }
}

#[tokio::test]
async fn a_directory_swapped_for_a_link_during_approvals_and_undo_never_lets_anything_out() {
    const WRITES: usize = 40;
    let repo = TestRepo::with_files(&[("d/keep.txt", "kept\n")]);
    let root = canonical(repo.path());
    // The decoys hold what the writes carry, so an undo that looked through the link
    // would find "its" files unchanged and delete or overwrite them.
    let contents: Vec<(String, String)> = (0..WRITES)
        .map(|n| (format!("f{n}.txt"), format!("written {n}\n")))
        .collect();
    let decoy_files: Vec<(&str, &str)> = contents
        .iter()
        .map(|(name, text)| (name.as_str(), text.as_str()))
        .chain([("keep.txt", "kept\n")])
        .collect();
    let decoys = Decoys::new(&decoy_files);
    let before = decoys.snapshot();
    // A first write before anything swaps, so the turn's before-snapshot is taken of
    // the workspace as it was.
    let calls: Vec<(&str, serde_json::Value)> = [(
        "write",
        serde_json::json!({"path": "first.txt", "content": "first\n"}),
    )]
    .into_iter()
    .chain(contents.iter().map(|(name, text)| {
        (
            "write",
            serde_json::json!({"path": format!("d/{name}"), "content": text}),
        )
    }))
    .collect();
    let server = ScriptedServer::start(calls_then_gated_done(&calls, Some("writes-done"))).await;
    let mut agent = TestAgent::start(&server, Wire::Anthropic, &root, ApprovalMode::Ask);
    agent.send("write the files");
    let (call_id, _) = agent.approval_needed().await;
    agent.decide(&call_id, Decision::Approve);
    agent
        .wait_for("the first write", |e| matches!(e, Event::ToolRunEnd { .. }))
        .await;

    let swapper = Swapper::start(&root, decoys.path());
    let mut ended = 1;
    let mut n = 0_u64;
    while ended < calls.len() {
        let event = agent
            .wait_for("an approval or a write's end", |e| {
                matches!(e, Event::ApprovalNeeded { .. } | Event::ToolRunEnd { .. })
            })
            .await;
        match event {
            Event::ApprovalNeeded { call_id, .. } => {
                // The person takes a moment; the background job keeps swapping.
                tokio::time::sleep(Duration::from_millis(2 + n % 5)).await;
                agent.decide(&call_id, Decision::Approve);
                n += 1;
            }
            _ => ended += 1,
        }
    }
    let swaps = swapper.stop();
    server.release("writes-done");
    agent.turn_end().await;
    assert!(swaps > 100, "the swapper barely ran: {swaps}");
    assert_eq!(decoys.snapshot(), before, "a write landed outside");
    let results = tool_results(&server.requests()[1]);
    let landed = results.iter().filter(|result| !result.is_error).count();

    // Undo while the job swaps again: each attempt is refused, or restores what it
    // can and reports the rest; nothing outside is read, written or deleted.
    let swapper = Swapper::start(&root, decoys.path());
    let mut answers = Vec::new();
    for _ in 0..10 {
        agent
            .handle
            .send(Command::Undo {
                scope: UndoScope::All,
            })
            .expect("agent alive");
        let answer = undo_answer(&mut agent).await;
        let done = answer.is_ok();
        answers.push(answer);
        if done {
            break;
        }
    }
    swapper.stop();
    assert_eq!(
        decoys.snapshot(),
        before,
        "undo changed the decoys; {landed} writes landed; answers {answers:#?}"
    );
    assert_eq!(repo.read("d/keep.txt"), "kept\n");
    server.assert_no_violations();
}

// --- K24: undo never writes through a link ----------------------------------------

#[tokio::test]
async fn undo_puts_files_back_where_the_model_left_links_and_never_writes_through_them() {
    let decoys = Decoys::new(&[("bashrc", "the user's shell setup\n"), ("lib/b.rs", "b\n")]);
    let repo = TestRepo::with_files(&[("src/a.rs", "old\n"), ("lib/b.rs", "b\n")]);
    let root = canonical(repo.path());
    // The model edits src/a.rs, then replaces it by a link to the decoy, and the
    // directory lib by a link to the decoys' lib.
    let command = format!(
        "rm src/a.rs && ln -s {} src/a.rs && rm -r lib && ln -s {} lib",
        decoys.path().join("bashrc").display(),
        decoys.path().join("lib").display()
    );
    let calls = [
        (
            "edit",
            serde_json::json!({"path": "src/a.rs", "old_string": "old", "new_string": "new"}),
        ),
        ("shell", serde_json::json!({"command": command})),
    ];
    let server = ScriptedServer::start(calls_then_done(&calls)).await;
    let mut agent = TestAgent::start(&server, Wire::Anthropic, &root, ApprovalMode::Auto);
    let before = decoys.snapshot();
    agent.send("rework src");
    end_of_turn_approving_all(&mut agent).await;
    let link = std::fs::symlink_metadata(root.join("src/a.rs")).expect("src/a.rs");
    assert!(
        link.is_symlink(),
        "the shell did not make the link: {:#?}",
        tool_results(&server.requests()[1])
    );

    agent
        .handle
        .send(Command::Undo {
            scope: UndoScope::LastTurn,
        })
        .expect("agent alive");
    let restored = undo_answer(&mut agent).await.expect("undone");
    assert!(restored.contains(&"src/a.rs".to_string()), "{restored:?}");
    assert_eq!(decoys.snapshot(), before);
    let meta = std::fs::symlink_metadata(root.join("src/a.rs")).expect("src/a.rs");
    assert!(meta.is_file(), "src/a.rs is a regular file again");
    assert_eq!(repo.read("src/a.rs"), "old\n");
    assert!(
        std::fs::symlink_metadata(root.join("lib"))
            .expect("lib")
            .is_dir()
    );
    assert_eq!(repo.read("lib/b.rs"), "b\n");
    server.assert_no_violations();
}

#[tokio::test]
async fn undo_refuses_when_a_directory_became_a_link_after_the_turn() {
    let repo = TestRepo::with_files(&[("src/a.rs", "old\n")]);
    let root = canonical(repo.path());
    let calls = [
        (
            "edit",
            serde_json::json!({"path": "src/a.rs", "old_string": "old", "new_string": "new"}),
        ),
        (
            "write",
            serde_json::json!({"path": "src/created.rs", "content": "made\n"}),
        ),
    ];
    let server = ScriptedServer::start(calls_then_done(&calls)).await;
    let mut agent = TestAgent::start(&server, Wire::Anthropic, &root, ApprovalMode::Auto);
    agent.send("rework src");
    agent.turn_end().await;
    // After the turn, a job the model left running swaps `src` for a link to a
    // directory holding exactly what the turn left.
    let decoys = Decoys::new(&[("a.rs", "new\n"), ("created.rs", "made\n")]);
    let before = decoys.snapshot();
    std::fs::rename(root.join("src"), root.join("src.moved")).expect("move");
    symlink(decoys.path(), &root.join("src"));

    agent
        .handle
        .send(Command::Undo {
            scope: UndoScope::LastTurn,
        })
        .expect("agent alive");
    let message = undo_answer(&mut agent).await.expect_err("refused");
    assert!(message.contains("Nothing was undone"), "{message}");
    assert!(message.contains("symbolic link"), "{message}");
    assert!(message.contains("src/a.rs"), "{message}");
    assert_eq!(decoys.snapshot(), before);
    server.assert_no_violations();
}

// --- B7: hard links ------------------------------------------------------------------

#[tokio::test]
async fn an_edit_of_a_hard_linked_file_leaves_its_other_name_alone_and_says_so() {
    let decoys = Decoys::new(&[("bashrc", "alias ls='ls --color'\n")]);
    let repo = TestRepo::with_files(&[("README.md", "hi\n")]);
    let root = canonical(repo.path());
    std::fs::hard_link(decoys.path().join("bashrc"), root.join("h.txt")).expect("hard link");
    let before = decoys.snapshot();
    let calls = [
        ("read", serde_json::json!({"path": "h.txt"})),
        (
            "edit",
            serde_json::json!({"path": "h.txt", "old_string": "--color", "new_string": "-la"}),
        ),
    ];
    let server = ScriptedServer::start(calls_then_done(&calls)).await;
    let mut agent = TestAgent::start(&server, Wire::Anthropic, &root, ApprovalMode::Auto);
    agent.send("change the alias");
    agent.turn_end().await;

    assert_eq!(decoys.snapshot(), before);
    assert_eq!(repo.read("h.txt"), "alias ls='ls -la'\n");
    let results = tool_results(&server.requests()[1]);
    let edit = results.last().expect("the edit's result");
    assert!(!edit.is_error, "{edit:?}");
    assert!(
        edit.content.contains("1 other name (hard link)")
            && edit.content.contains("still have the old content"),
        "{}",
        edit.content
    );
    server.assert_no_violations();
}

// --- `duet exec --done`: .duet files planted as links ------------------------------

const DONE: &str = "sh -c 'grep -q fixed a.txt'";

async fn run_done(repo: &TestRepo, extra: &[&str]) -> (std::process::Output, ScriptedServer) {
    let server = ScriptedServer::start(Script::load("done_fix")).await;
    let home = tempfile::tempdir().expect("home");
    let env = wire_env(&server, Wire::Anthropic);
    let mut args = vec!["exec", "--approval", "auto", "--done", DONE];
    args.extend_from_slice(extra);
    args.push("Fix a.txt");
    let output = run_duet(repo.path(), home.path(), &env, &args).await;
    (output, server)
}

fn describe(output: &std::process::Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[tokio::test]
async fn duet_files_planted_as_links_are_replaced_never_written_through() {
    let decoys = Decoys::new(&[
        ("bashrc", "the user's shell setup\n"),
        ("notes", "someone's notes\n"),
        ("log", "someone's log\n"),
    ]);
    let repo = TestRepo::with_files(&[("a.txt", "broken\n")]);
    std::fs::create_dir(repo.path().join(".duet")).expect(".duet");
    for (name, decoy) in [
        ("PR.md", "bashrc"),
        ("notes.md", "notes"),
        ("done.log", "log"),
    ] {
        symlink(
            &decoys.path().join(decoy),
            &repo.path().join(".duet").join(name),
        );
    }
    let before = decoys.snapshot();
    let (output, server) = run_done(&repo, &[]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    server.assert_no_violations();

    assert_eq!(decoys.snapshot(), before);
    for name in ["PR.md", "notes.md", "done.log"] {
        let meta = std::fs::symlink_metadata(repo.path().join(".duet").join(name)).expect(name);
        assert!(meta.is_file(), "{name} is duet's own file now");
    }
    assert!(
        repo.read(".duet/PR.md")
            .contains("Done and verified by duet")
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    for name in ["PR.md", "notes.md", "done.log"] {
        assert!(
            stdout.contains(&format!(
                ".duet/{name} was a symbolic link to {}",
                decoys.path().display()
            )),
            "the run does not say {name} was a link:\n{stdout}"
        );
    }
}

#[tokio::test]
async fn a_duet_directory_planted_as_a_link_stops_the_run_before_anything_is_written() {
    let decoys = Decoys::new(&[("notes.md", "someone's notes\n")]);
    let repo = TestRepo::with_files(&[("a.txt", "broken\n")]);
    symlink(decoys.path(), &repo.path().join(".duet"));
    let before = decoys.snapshot();
    let (output, _server) = run_done(&repo, &["--allow-dirty"]).await;
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(".duet/notes.md") && stderr.contains("symbolic link `.duet`"),
        "{stderr}"
    );
    assert_eq!(decoys.snapshot(), before);
}

// --- C10: duet's own git never runs what the repository names ----------------------

/// Makes the repository at `root` hostile: its config runs `touch` of a marker from
/// `core.fsmonitor`, a filter driver every file uses, a diff driver and hooks (in
/// `.git/hooks` and a `core.hooksPath`), and moves the work tree to `elsewhere`.
fn make_hostile(root: &Path, markers: &Path, elsewhere: &Path) {
    let touch = |name: &str| format!("touch {}", markers.join(name).display());
    let config = root.join(".git/config");
    let mut text = std::fs::read_to_string(&config).expect("config");
    text.push_str(&format!(
        "[core]\n\tfsmonitor = \"{}; false\"\n\thooksPath = hooks\n\tworktree = {}\n\
         [filter \"pwn\"]\n\tclean = \"{}; cat\"\n\tsmudge = \"{}; cat\"\n\
         [diff \"pwn\"]\n\ttextconv = \"{}; cat\"\n",
        touch("fsmonitor"),
        elsewhere.display(),
        touch("clean"),
        touch("smudge"),
        touch("textconv"),
    ));
    std::fs::write(&config, text).expect("config");
    std::fs::write(root.join(".gitattributes"), "* filter=pwn diff=pwn\n").expect("attributes");
    for dir in [root.join(".git/hooks"), root.join("hooks")] {
        std::fs::create_dir_all(&dir).expect("hooks");
        for hook in [
            "pre-commit",
            "post-commit",
            "post-checkout",
            "reference-transaction",
            "post-index-change",
        ] {
            let script = dir.join(hook);
            std::fs::write(&script, format!("#!/bin/sh\n{}\n", touch(hook))).expect("hook");
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))
                .expect("chmod");
        }
    }
}

/// A repository whose git configuration, attributes and hooks (its own, and those of
/// a bare repository planted in `vendor/x`) would each run a program leaving a marker
/// in `markers` or move the work tree to `elsewhere`.
struct Hostile {
    repo: TestRepo,
    markers: tempfile::TempDir,
    elsewhere: Decoys,
}

impl Hostile {
    fn with_files(files: &[(&str, &str)]) -> Self {
        let markers = tempfile::tempdir().expect("markers");
        let elsewhere = Decoys::new(&[("leak.txt", "from outside the workspace\n")]);
        let repo = TestRepo::with_files(files);
        make_hostile(repo.path(), markers.path(), elsewhere.path());
        plant_bare_repository(
            &repo.path().join("vendor/x"),
            markers.path(),
            elsewhere.path(),
        );
        Self {
            repo,
            markers,
            elsewhere,
        }
    }
}

/// A bare repository planted at `dir` inside the workspace, whose config would run a
/// program and move its work tree to `elsewhere`.
fn plant_bare_repository(dir: &Path, markers: &Path, elsewhere: &Path) {
    for sub in ["objects", "refs/heads", "hooks"] {
        std::fs::create_dir_all(dir.join(sub)).expect("bare dirs");
    }
    std::fs::write(dir.join("HEAD"), "ref: refs/heads/main\n").expect("HEAD");
    std::fs::write(
        dir.join("config"),
        format!(
            "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = {}\n\
             \tfsmonitor = \"touch {}; false\"\n",
            elsewhere.display(),
            markers.join("planted-fsmonitor").display()
        ),
    )
    .expect("config");
}

fn markers_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("markers")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn duet_exec_branch_and_commit_run_nothing_from_a_hostile_repository() {
    let Hostile {
        repo,
        markers,
        elsewhere,
    } = Hostile::with_files(&[("a.txt", "broken\n")]);
    let before = elsewhere.snapshot();

    let (output, server) = run_done(&repo, &["--allow-dirty"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    server.assert_no_violations();
    assert_eq!(markers_in(markers.path()), Vec::<String>::new());
    assert_eq!(elsewhere.snapshot(), before);
    // The commit holds the workspace's files, not those of the directory the config
    // named as the work tree.
    let git = git2::Repository::open_bare(repo.path().join(".git")).expect("repo");
    let tree = git
        .head()
        .expect("head")
        .peel_to_commit()
        .expect("commit")
        .tree()
        .expect("tree");
    assert!(
        tree.get_path(Path::new("leak.txt")).is_err(),
        "the commit took leak.txt"
    );
    let a = tree.get_path(Path::new("a.txt")).expect("a.txt committed");
    let blob = git.find_blob(a.id()).expect("blob");
    assert_eq!(blob.content(), b"fixed\n");
}

#[tokio::test]
async fn checkpoints_and_undo_run_nothing_from_a_hostile_repository() {
    let Hostile {
        repo,
        markers,
        elsewhere,
    } = Hostile::with_files(&[("a.txt", "alpha\r\nbeta")]);
    let before = elsewhere.snapshot();
    let root = canonical(repo.path());
    let server = ScriptedServer::start(Script::load("undo_edit")).await;
    let mut agent = TestAgent::start(&server, Wire::Anthropic, &root, ApprovalMode::Auto);
    agent.send("capitalize alpha");
    agent.turn_end().await;
    assert_eq!(repo.read("a.txt"), "ALPHA\r\nbeta");
    agent
        .handle
        .send(Command::Undo {
            scope: UndoScope::LastTurn,
        })
        .expect("agent alive");
    assert_eq!(undo_answer(&mut agent).await, Ok(vec!["a.txt".to_string()]));
    assert_eq!(repo.read("a.txt"), "alpha\r\nbeta");
    assert_eq!(markers_in(markers.path()), Vec::<String>::new());
    assert_eq!(elsewhere.snapshot(), before);
    // The model's view of the repository is of the workspace, not of the directory
    // the config named as the work tree.
    let first = all_text(&server.requests()[0]);
    assert!(!first.contains("leak.txt"), "{first}");
    server.assert_no_violations();
}

#[tokio::test]
async fn a_bare_repository_planted_in_the_workspace_is_never_used_as_its_repository() {
    let markers = tempfile::tempdir().expect("markers");
    let elsewhere = Decoys::new(&[("secret-name.txt", "outside\n")]);
    let repo = TestRepo::with_files(&[("README.md", "hi\n")]);
    let planted = repo.path().join("vendor/x");
    plant_bare_repository(&planted, markers.path(), elsewhere.path());
    std::fs::write(planted.join("notes.txt"), "alpha\r\nbeta").expect("file");
    let root = canonical(&planted);
    let server = ScriptedServer::start(calls_then_done(&[(
        "write",
        serde_json::json!({"path": "made.txt", "content": "made\n"}),
    )]))
    .await;
    let mut agent = TestAgent::start(&server, Wire::Anthropic, &root, ApprovalMode::Auto);
    agent.send("make a file");
    agent.turn_end().await;
    let first = all_text(&server.requests()[0]);
    assert!(
        !first.contains("secret-name.txt"),
        "the environment block lists the planted repository's work tree: {first}"
    );
    assert_eq!(markers_in(markers.path()), Vec::<String>::new());
    assert!(!elsewhere.path().join("made.txt").exists());
    server.assert_no_violations();
}
