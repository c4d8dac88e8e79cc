//! Loop control against the scripted server: every budget limit stops the task before
//! the call that would pass it, with a report; a model that repeats itself is stopped;
//! identical calls in one response run once. Every test checks the server saw only
//! valid requests.

use std::time::Duration;

use duet::agent::{BudgetLimit, BudgetReport, Event, TurnOutcome};
use duet::config::{Budget, ModelInfo, Prices};
use duet::policy::ApprovalMode;
use duet::provider::Wire;
use pretty_assertions::assert_eq;

use crate::common::harness::{TestAgent, TestRepo, run_duet, tool_results, wire_env};
use crate::common::script::Script;
use crate::common::scripted_server::ScriptedServer;

for_each_wire!(
    the_step_limit_stops_before_the_next_call,
    the_token_limit_stops_before_a_call_that_would_pass_it,
    the_cost_limit_stops_before_a_call_that_would_pass_it,
    the_time_limit_stops_before_the_next_call,
    three_identical_calls_in_a_row_stop_the_task,
    the_same_error_three_times_stops_the_task,
    identical_calls_in_one_response_run_once,
    usage_events_carry_cost_and_context,
    exec_exits_3_with_the_report_when_a_budget_stops_it,
);

/// A turn that reads `path`, reporting `input`/`output` tokens.
fn read_turn(path: &str, input: u64, output: u64) -> String {
    format!(
        "[[turn]]\nblocks = [{{ text = \"Reading {path}.\" }}, {{ tool = \"read\", args = \
         '{{\"path\": \"{path}\"}}' }}]\nusage = {{ input = {input}, output = {output} }}\n"
    )
}

fn reads(paths: &[&str], input: u64, output: u64) -> Script {
    let text: String = paths
        .iter()
        .map(|path| read_turn(path, input, output))
        .chain(std::iter::once(
            "[[turn]]\nblocks = [{ text = \"Done.\" }]\n".to_string(),
        ))
        .collect();
    Script::from_toml(&text).expect("script")
}

fn repo() -> TestRepo {
    TestRepo::with_files(&[
        ("a.txt", "alpha\n"),
        ("b.txt", "bravo\n"),
        ("c.txt", "charlie\n"),
    ])
}

const PRICED: ModelInfo = ModelInfo {
    context_window: Some(10_000),
    prices: Some(Prices {
        input: 10.0,
        output: 10.0,
        cache_read: 1.0,
        cache_write: 10.0,
    }),
    takes_images: None,
};

fn unlimited() -> Budget {
    Budget {
        max_steps: 1_000,
        max_wall: None,
        max_total_tokens: None,
        max_cost_usd: None,
    }
}

/// Runs one task with `budget` and returns the server, its outcome and the agent.
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
            setup.model_info = PRICED;
        });
    agent.send("read the files");
    let outcome = agent.turn_end().await;
    server.assert_no_violations();
    (server, outcome, agent, repo)
}

fn report_of(outcome: TurnOutcome) -> BudgetReport {
    match outcome {
        TurnOutcome::BudgetExhausted { report } => report,
        other => panic!("expected a budget stop, got {other:?}"),
    }
}

async fn the_step_limit_stops_before_the_next_call(wire: Wire) {
    let budget = Budget {
        max_steps: 2,
        ..unlimited()
    };
    let (server, outcome, _agent, _repo) =
        run(reads(&["a.txt", "b.txt", "c.txt"], 10, 5), wire, budget).await;
    assert_eq!(server.requests().len(), 2, "the third call was never sent");
    let report = report_of(outcome);
    assert_eq!(report.limit, BudgetLimit::Steps);
    assert_eq!(report.steps, 2);
    assert_eq!(report.tools_run, 2);
    assert_eq!(report.tokens, 30);
    assert_eq!(report.last_message.as_deref(), Some("Reading b.txt."));
    let text = duet::agent::wording::budget_report(&report);
    assert!(
        text.contains("Stopped by the step limit: 2 of 2 model calls made."),
        "{text}"
    );
    assert!(text.contains("send a message to continue"), "{text}");
}

/// Three read steps of 1000 tokens in and 100 out each, under `budget`: how many calls
/// were sent, and the report of the budget stop.
async fn three_reads_under(budget: Budget, wire: Wire) -> (usize, BudgetReport) {
    let script = reads(&["a.txt", "b.txt", "c.txt"], 1_000, 100);
    let (server, outcome, _agent, _repo) = run(script, wire, budget).await;
    (server.requests().len(), report_of(outcome))
}

async fn the_token_limit_stops_before_a_call_that_would_pass_it(wire: Wire) {
    // After two calls 2200 are spent and the next would send at least 1000 more:
    // 3200 > 3000.
    let budget = Budget {
        max_total_tokens: Some(3_000),
        ..unlimited()
    };
    let (sent, report) = three_reads_under(budget, wire).await;
    assert_eq!(sent, 2);
    assert_eq!(report.limit, BudgetLimit::Tokens);
    assert_eq!(report.tokens, 2_200);
}

async fn the_cost_limit_stops_before_a_call_that_would_pass_it(wire: Wire) {
    // $10 per million either way: each call costs $0.011 and the next prompt $0.01, so
    // $0.011 + $0.01 fits under $0.025 and $0.022 + $0.01 does not.
    let budget = Budget {
        max_cost_usd: Some(0.025),
        ..unlimited()
    };
    let (sent, report) = three_reads_under(budget, wire).await;
    assert_eq!(sent, 2);
    assert_eq!(report.limit, BudgetLimit::Cost);
    let cost = report.cost_usd.expect("priced");
    assert!((cost - 0.022).abs() < 1e-9, "{cost}");
}

async fn the_time_limit_stops_before_the_next_call(wire: Wire) {
    let script = Script::from_toml(
        r#"
        [[turn]]
        blocks = [{ pause_ms = 1100 }, { tool = "read", args = '{"path": "a.txt"}' }]
        [[turn]]
        blocks = [{ text = "Done." }]
        "#,
    )
    .expect("script");
    let budget = Budget {
        max_wall: Some(Duration::from_secs(1)),
        ..unlimited()
    };
    let (server, outcome, _agent, _repo) = run(script, wire, budget).await;
    assert_eq!(server.requests().len(), 1);
    assert_eq!(report_of(outcome).limit, BudgetLimit::WallTime);
}

fn loop_message(outcome: TurnOutcome) -> String {
    match outcome {
        TurnOutcome::LoopDetected { message } => message,
        other => panic!("expected a loop stop, got {other:?}"),
    }
}

async fn three_identical_calls_in_a_row_stop_the_task(wire: Wire) {
    let (server, outcome, _agent, _repo) = run(
        reads(&["a.txt", "a.txt", "a.txt", "a.txt"], 1, 1),
        wire,
        unlimited(),
    )
    .await;
    assert_eq!(
        server.requests().len(),
        3,
        "stopped after the third identical call"
    );
    let message = loop_message(outcome);
    assert!(
        message.contains("`read` with the same arguments 3 times in a row"),
        "{message}"
    );
}

async fn the_same_error_three_times_stops_the_task(wire: Wire) {
    let script = Script::from_toml(
        r#"
        [[turn]]
        blocks = [{ tool = "read", args = '{"path": "missing.txt"}' }]
        [[turn]]
        blocks = [{ tool = "read", args = '{"path": "a.txt"}' }]
        [[turn]]
        blocks = [{ tool = "read", args = '{"path": "missing.txt", "offset": 1}' }]
        [[turn]]
        blocks = [{ tool = "read", args = '{"path": "missing.txt", "offset": 2}' }]
        [[turn]]
        blocks = [{ text = "Never reached." }]
        "#,
    )
    .expect("script");
    let (server, outcome, _agent, _repo) = run(script, wire, unlimited()).await;
    assert_eq!(server.requests().len(), 4);
    let message = loop_message(outcome);
    assert!(
        message.contains("the same error came back 3 times"),
        "{message}"
    );
    assert!(message.contains("missing.txt"), "{message}");
}

async fn identical_calls_in_one_response_run_once(wire: Wire) {
    let script = Script::from_toml(
        r#"
        [[turn]]
        blocks = [
          { tool = "read", args = '{"path": "a.txt"}' },
          { tool = "read", args = '{ "path" : "a.txt" }' },
        ]
        [[turn]]
        blocks = [{ text = "Read it." }]
        "#,
    )
    .expect("script");
    let (server, _outcome, agent, _repo) = run(script, wire, unlimited()).await;
    let begun = agent
        .seen
        .iter()
        .filter(|event| matches!(event, Event::ToolRunBegin { .. }))
        .count();
    assert_eq!(begun, 1, "the second, identical call did not run");
    let results = tool_results(&server.requests()[1]);
    assert_eq!(results.len(), 2, "both calls answered");
    assert!(results[0].content.contains("alpha"), "{:?}", results[0]);
    assert!(
        results[1].content.contains("Same call as") && results[1].content.contains("alpha"),
        "{:?}",
        results[1]
    );
}

async fn usage_events_carry_cost_and_context(wire: Wire) {
    let (_server, _outcome, agent, _repo) =
        run(reads(&["a.txt"], 2_000, 500), wire, unlimited()).await;
    let (cost, context) = agent
        .seen
        .iter()
        .find_map(|event| match event {
            Event::Usage {
                session_cost_usd,
                context_used,
                ..
            } => Some((*session_cost_usd, *context_used)),
            _ => None,
        })
        .expect("a usage event");
    // 2500 tokens at $10 per million; a 2000-token prompt in a 10k window.
    assert!((cost.expect("priced") - 0.025).abs() < 1e-9, "{cost:?}");
    assert!(
        (context.expect("window known") - 0.2).abs() < 1e-6,
        "{context:?}"
    );
}

async fn exec_exits_3_with_the_report_when_a_budget_stops_it(wire: Wire) {
    let server = ScriptedServer::start(reads(&["a.txt", "b.txt"], 10, 5)).await;
    let repo = repo();
    let home = tempfile::tempdir().expect("home");
    let output = run_duet(
        repo.path(),
        home.path(),
        &wire_env(&server, wire),
        &[
            "exec",
            "--approval",
            "auto",
            "--max-steps",
            "1",
            "read the files",
        ],
    )
    .await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    // A budget stop exits 2, as it does with `--done`.
    assert_eq!(output.status.code(), Some(2), "{stdout}");
    assert!(
        stdout.contains("Stopped by the step limit: 1 of 1 model calls made."),
        "{stdout}"
    );
    assert!(stdout.contains("Left off at: Reading a.txt."), "{stdout}");
    assert_eq!(server.requests().len(), 1);
    server.assert_no_violations();
}
