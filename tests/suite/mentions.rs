//! `@path` mentions: the files a message names are attached to it, read as the model's
//! reads are (beneath the workspace, never out through a link); a mention that names
//! no readable file is reported to the user and the model; a word like `@alice` is
//! left alone.

use duet::agent::Event;
use duet::policy::ApprovalMode;
use duet::provider::Wire;

use crate::common::harness::{TestAgent, TestRepo, all_text};
use crate::common::script::Script;
use crate::common::scripted_server::ScriptedServer;

for_each_wire!(mentioned_files_reach_the_model_and_nothing_outside_does);

async fn mentioned_files_reach_the_model_and_nothing_outside_does(wire: Wire) {
    let server = ScriptedServer::start(
        Script::from_toml("[[turn]]\nblocks = [{ text = \"Seen.\" }]\n").unwrap(),
    )
    .await;
    let lines: String = (1..=6).map(|n| format!("line-{n}-of-calc\n")).collect();
    let repo = TestRepo::with_files(&[("src/calc.py", &lines)]);
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "SECRET-MARKER-7f3\n").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&secret, repo.path().join("leak.txt")).unwrap();
    let mut agent = TestAgent::start(&server, wire, repo.path(), ApprovalMode::Ask);
    agent.send("look at @src/calc.py:2-3, @leak.txt and @nope.py, thanks @alice");
    agent.turn_end().await;

    let sent = all_text(&server.requests()[0]);
    assert!(sent.contains("line-2-of-calc"), "{sent}");
    assert!(sent.contains("line-3-of-calc"), "{sent}");
    assert!(
        !sent.contains("line-5-of-calc"),
        "only the lines asked for: {sent}"
    );
    assert!(!sent.contains("SECRET-MARKER-7f3"), "{sent}");
    assert!(sent.contains("@leak.txt was not attached"), "{sent}");
    assert!(sent.contains("@nope.py was not attached"), "{sent}");
    assert!(!sent.contains("@alice was not attached"), "{sent}");
    let attached = agent.position("the attachment", |event| {
        matches!(event, Event::FilesAttached { files, problems, .. }
            if files == &["src/calc.py:2-3".to_string()] && problems.len() == 2)
    });
    let delivered = agent.position("the message", |event| {
        matches!(event, Event::UserMessageDelivered { .. })
    });
    assert!(delivered < attached);
    server.assert_no_violations();
}
