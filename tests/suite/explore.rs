//! The explorer against the scripted server: the parent's `explore` call runs a
//! read-only sub-loop whose requests (told apart by their system prompt) come between
//! the parent's; only the sub-loop's answer reaches the parent, its model calls count
//! against the parent's step budget, it cannot change anything, a failed call of its own
//! ends it with what it found, and an interrupt stops it. Every test checks the server
//! saw only valid requests.

use duet::agent::{BudgetLimit, Event, TurnOutcome};
use duet::config::Budget;
use duet::policy::ApprovalMode;
use duet::provider::{Usage, Wire};
use pretty_assertions::assert_eq;

use crate::common::harness::{
    SentResult, TestAgent, TestRepo, all_text, offered_tools, tool_results,
};
use crate::common::script::Script;
use crate::common::scripted_server::{RecordedRequest, ScriptedServer};

for_each_wire!(
    only_the_answer_reaches_the_parent,
    the_explorer_spends_the_parent_step_budget,
    the_explorer_cannot_change_anything,
    an_interrupt_stops_the_explorer,
    a_failed_explorer_call_returns_what_it_found,
);

/// What only the file holds: it must never reach the parent's requests.
const SECRET: &str = "the-launch-code-is-4242";

const EXPLORE: &str = r#"
[[turn]]
blocks = [{ tool = "explore", args = '{"question": "Where is the launch code kept?"}' }]
"#;

fn repo() -> TestRepo {
    TestRepo::with_files(&[
        ("vault.txt", &format!("{SECRET}\n")),
        ("a.txt", "alpha\n"),
        ("b.txt", "bravo\n"),
        ("c.txt", "charlie\n"),
    ])
}

fn script(turns: &[&str]) -> Script {
    Script::from_toml(&turns.concat()).expect("script")
}

fn read_turn(path: &str) -> String {
    format!("[[turn]]\nblocks = [{{ tool = \"read\", args = '{{\"path\": \"{path}\"}}' }}]\n")
}

fn text_turn(text: &str) -> String {
    format!("[[turn]]\nblocks = [{{ text = \"{text}\" }}]\n")
}

fn is_explorer(request: &RecordedRequest) -> bool {
    all_text(request).contains("You are duet's explorer")
}

async fn run(
    script: Script,
    wire: Wire,
    budget: Budget,
) -> (ScriptedServer, TurnOutcome, TestAgent, TestRepo) {
    let server = ScriptedServer::start(script).await;
    let repo = repo();
    let mut agent =
        TestAgent::start_with(&server, wire, repo.path(), ApprovalMode::Auto, |setup| {
            setup.budget = budget;
        });
    agent.send("find the launch code");
    let outcome = agent.turn_end().await;
    server.assert_no_violations();
    (server, outcome, agent, repo)
}

/// The result the parent received for its explore call (its first tool result).
fn explore_result(request: &RecordedRequest) -> SentResult {
    tool_results(request)
        .into_iter()
        .next()
        .expect("the explore call's result")
}

async fn only_the_answer_reaches_the_parent(wire: Wire) {
    let answer = "vault.txt:1-1 holds the launch code.";
    let spent = "usage = { input = 100, output = 10 }\n";
    let (server, outcome, agent, _repo) = run(
        script(&[
            EXPLORE,
            &read_turn("vault.txt"),
            spent,
            &text_turn(answer),
            spent,
            &text_turn("Done."),
        ]),
        wire,
        Budget::default(),
    )
    .await;
    assert!(
        matches!(outcome, TurnOutcome::Finished { .. }),
        "{outcome:?}"
    );
    let requests = server.requests();
    let roles: Vec<bool> = requests.iter().map(is_explorer).collect();
    assert_eq!(roles, [false, true, true, false]);
    assert!(offered_tools(&requests[0]).contains(&"explore".to_string()));
    assert_eq!(offered_tools(&requests[1]), ["read", "glob", "grep"]);
    // The explorer's own conversation: the question, then its read with the file.
    assert!(all_text(&requests[1]).contains("Where is the launch code kept?"));
    assert!(all_text(&requests[2]).contains(SECRET));
    // The parent gets the answer, never the file.
    let result = explore_result(&requests[3]);
    assert_eq!(result.content, answer);
    assert!(!result.is_error);
    assert!(!all_text(&requests[3]).contains(SECRET));
    // The explore card shows the explorer's lookup as it ends.
    let progress: String = agent
        .seen
        .iter()
        .filter_map(|event| match event {
            Event::ToolOutputDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(progress.starts_with("read vault.txt → "), "{progress}");
    assert!(!progress.contains(SECRET), "{progress}");
    // The explorer's tokens join the session's totals, without a context share.
    let usages: Vec<_> = agent
        .seen
        .iter()
        .filter_map(|event| match event {
            Event::Usage {
                call,
                session,
                context_used,
                ..
            } => Some((*call, *session, *context_used)),
            _ => None,
        })
        .collect();
    let explorer = Usage {
        input_tokens: 200,
        output_tokens: 20,
        ..Usage::default()
    };
    assert!(usages.contains(&(explorer, explorer, None)), "{usages:#?}");
    assert_eq!(usages.last().map(|usage| usage.1), Some(explorer));
}

async fn the_explorer_spends_the_parent_step_budget(wire: Wire) {
    // Four calls in all: the parent's explore call leaves three, the explorer may take
    // all but the one the parent needs to use its answer.
    let budget = Budget {
        max_steps: 4,
        ..Budget::default()
    };
    let (server, outcome, _agent, _repo) = run(
        script(&[
            EXPLORE,
            &read_turn("a.txt"),
            &read_turn("b.txt"),
            &read_turn("c.txt"),
            &text_turn("Never sent."),
        ]),
        wire,
        budget,
    )
    .await;
    let requests = server.requests();
    let roles: Vec<bool> = requests.iter().map(is_explorer).collect();
    assert_eq!(
        roles,
        [false, true, true, false],
        "the fifth call was never sent"
    );
    let result = explore_result(&requests[3]);
    assert!(!result.is_error, "{result:?}");
    assert!(
        result
            .content
            .starts_with("The exploration stopped before it concluded: the explorer used all 2 model calls it was allowed."),
        "{}",
        result.content
    );
    assert!(
        result.content.contains("- read a.txt\n- read b.txt"),
        "{}",
        result.content
    );
    assert!(!result.content.contains("bravo"), "{}", result.content);
    let TurnOutcome::BudgetExhausted { report } = outcome else {
        panic!("expected a budget stop, got {outcome:?}");
    };
    assert_eq!(report.limit, BudgetLimit::Steps);
    assert_eq!(report.steps, 4);
    // explore, the explorer's two reads, and the parent's read of c.txt.
    assert_eq!(report.tools_run, 4);
}

async fn the_explorer_cannot_change_anything(wire: Wire) {
    let forbidden = r#"
[[turn]]
blocks = [
  { tool = "shell", args = '{"command": "touch made.txt"}' },
  { tool = "write", args = '{"path": "made.txt", "content": "x"}' },
  { tool = "edit", args = '{"path": "a.txt", "old_string": "alpha", "new_string": "omega"}' },
  { tool = "explore", args = '{"question": "again"}' },
]
"#;
    let (server, outcome, _agent, repo) = run(
        script(&[
            EXPLORE,
            forbidden,
            &text_turn("I could not look."),
            &text_turn("Done."),
        ]),
        wire,
        Budget::default(),
    )
    .await;
    assert!(
        matches!(outcome, TurnOutcome::Finished { .. }),
        "{outcome:?}"
    );
    let requests = server.requests();
    let roles: Vec<bool> = requests.iter().map(is_explorer).collect();
    assert_eq!(roles, [false, true, true, false]);
    let results = tool_results(&requests[2]);
    assert_eq!(results.len(), 4);
    for result in &results {
        assert!(result.is_error, "{result:?}");
        assert!(
            result
                .content
                .contains("Available tools: read, glob, grep."),
            "{result:?}"
        );
    }
    assert!(!repo.path().join("made.txt").exists());
    assert_eq!(repo.read("a.txt"), "alpha\n");
    assert_eq!(explore_result(&requests[3]).content, "I could not look.");
}

async fn an_interrupt_stops_the_explorer(wire: Wire) {
    let held = r#"
[[turn]]
blocks = [{ text = "Looking" }, { gate = "explorer" }, { text = " further." }]
"#;
    let server = ScriptedServer::start(script(&[EXPLORE, held, &text_turn("Understood.")])).await;
    let repo = repo();
    let mut agent = TestAgent::start(&server, wire, repo.path(), ApprovalMode::Auto);
    agent.send("find the launch code");
    server.wait_for_gate("explorer").await;
    agent.interrupt();
    let outcome = agent.turn_end().await;
    assert_eq!(outcome, TurnOutcome::Interrupted);
    let ended = agent.position("the explore call's end", |event| {
        matches!(event, Event::ToolRunEnd { is_error: true, output, .. }
            if output == "Stopped: the user interrupted the exploration.")
    });
    assert!(ended > 0);
    server.release("explorer");
    // The next task's request pairs the explore call with its error result.
    agent.send("never mind");
    agent.turn_end().await;
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let result = explore_result(&requests[2]);
    assert!(result.is_error);
    assert!(
        result.content.contains("interrupted the exploration"),
        "{result:?}"
    );
    server.assert_no_violations();
}

async fn a_failed_explorer_call_returns_what_it_found(wire: Wire) {
    let failed = "[[turn]]\nstatus = 400\nmessage = \"bad request\"\n";
    let (server, outcome, _agent, _repo) = run(
        script(&[EXPLORE, &read_turn("a.txt"), failed, &text_turn("Done.")]),
        wire,
        Budget::default(),
    )
    .await;
    assert!(
        matches!(outcome, TurnOutcome::Finished { .. }),
        "{outcome:?}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "the failed call was not retried");
    let result = explore_result(&requests[3]);
    assert!(!result.is_error, "{result:?}");
    assert!(
        result.content.starts_with(
            "The exploration stopped before it concluded: the explorer's model call failed:"
        ),
        "{}",
        result.content
    );
    assert!(
        result.content.contains("- read a.txt"),
        "{}",
        result.content
    );
}
