//! `duet exec` against servers that answer with real servers' recorded bodies
//! (`tests/fixtures/provider-captures/`, byte for byte): every text answer as sent,
//! without its terminal event and with its last event unterminated; every tool call
//! answered and paired by its captured id in the next request, and, renamed to duet's
//! `shell`, run by the real shell tool on all three wires; and the request rules a
//! server was reported to enforce (Mistral's 422 for `stream_options`).
//!
//! The decoders' own replay of every capture, chunked every way, is in
//! `src/provider/captures.rs`; this proves the whole path, HTTP and agent included.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{Response, StatusCode};
use axum::routing::post;
use futures::StreamExt as _;
use serde_json::Value;

use crate::common::framing;
use crate::common::harness::{TestRepo, run_duet};

fn captures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/provider-captures")
}

/// A capture's sidecar and body (with its `replay_append`).
struct Capture {
    meta: Value,
    body: Vec<u8>,
}

impl Capture {
    fn load(id: &str) -> Self {
        let dir = captures_dir();
        let meta: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("{id}.json"))).expect("sidecar"),
        )
        .expect("sidecar JSON");
        let mut body = std::fs::read(dir.join(format!("{id}.sse"))).expect("body");
        if let Some(append) = meta["replay_append"].as_str() {
            body.extend_from_slice(append.as_bytes());
        }
        Self { meta, body }
    }

    fn all() -> Vec<String> {
        let mut ids: Vec<String> = std::fs::read_dir(captures_dir())
            .expect("captures")
            .filter_map(|entry| {
                let name = entry.expect("entry").file_name();
                name.to_str()?.strip_suffix(".json").map(str::to_owned)
            })
            .collect();
        ids.sort();
        ids
    }

    fn wire(&self) -> &str {
        self.meta["wire"].as_str().expect("wire")
    }

    fn text(&self) -> Option<&str> {
        self.meta["expect"]["text"].as_str()
    }

    /// The body without the wire's terminal event, as servers that never send it end.
    fn without_terminal_event(&self) -> Vec<u8> {
        framing::without_terminal_event(self.wire(), &self.body).expect("a terminal event")
    }

    /// The body with every captured tool call's name replaced by `to`, as the server
    /// would have sent it had duet's tools been offered. Names are never split across
    /// events in these captures; a capture where one is would fail here, loudly.
    fn with_calls_named(&self, to: &str) -> Vec<u8> {
        let mut text = String::from_utf8(self.body.clone()).expect("UTF-8");
        let mut names: Vec<&str> = self.meta["expect"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|call| call["tool_name"].as_str().expect("tool_name"))
            .collect();
        names.sort_unstable();
        names.dedup();
        for name in names {
            let spellings = [
                format!("\"name\":\"{name}\""),
                format!("\"name\": \"{name}\""),
            ];
            assert!(
                spellings.iter().any(|spelling| text.contains(spelling)),
                "the name `{name}` is not in the body whole"
            );
            for spelling in spellings {
                text = text.replace(&spelling, &format!("\"name\":\"{to}\""));
            }
        }
        text.into_bytes()
    }

    fn unterminated(&self) -> Vec<u8> {
        framing::unterminated(&self.body)
    }
}

/// A refusal a server was reported to answer when a request has `key`.
#[derive(Clone)]
struct Rule {
    key: String,
    status: u16,
    body: String,
}

/// One response body, and where to split it: each piece after the first is sent a few
/// milliseconds after the one before, so duet reads them apart.
struct Served {
    bytes: Vec<u8>,
    splits: Vec<usize>,
}

impl From<Vec<u8>> for Served {
    fn from(bytes: Vec<u8>) -> Self {
        Self {
            bytes,
            splits: Vec::new(),
        }
    }
}

impl Served {
    /// The pieces between the split points.
    fn pieces(&self) -> Vec<Vec<u8>> {
        let mut cuts: Vec<usize> = self
            .splits
            .iter()
            .copied()
            .filter(|cut| *cut > 0 && *cut < self.bytes.len())
            .collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut pieces = Vec::new();
        let mut start = 0;
        for cut in cuts.into_iter().chain([self.bytes.len()]) {
            pieces.push(self.bytes[start..cut].to_vec());
            start = cut;
        }
        pieces
    }
}

/// Answers each request with the next body (the last one again once they run out),
/// unless a rule refuses it; keeps every request.
struct Replayer {
    bodies: Vec<Served>,
    rules: Vec<Rule>,
    requests: Mutex<Vec<Value>>,
}

async fn answer(State(replayer): State<Arc<Replayer>>, body: String) -> Response<Body> {
    let request: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let answered = {
        let mut requests = replayer.requests.lock().expect("requests");
        requests.push(request.clone());
        requests
            .iter()
            .filter(|seen| !refused(&replayer, seen))
            .count()
    };
    if let Some(rule) = replayer
        .rules
        .iter()
        .find(|rule| request.get(&rule.key).is_some())
    {
        return Response::builder()
            .status(StatusCode::from_u16(rule.status).expect("status"))
            .header("content-type", "application/json")
            .body(Body::from(rule.body.clone()))
            .expect("response");
    }
    let index = answered.saturating_sub(1).min(replayer.bodies.len() - 1);
    let pieces = replayer.bodies[index].pieces();
    let stream =
        futures::stream::iter(pieces.into_iter().enumerate()).then(|(number, piece)| async move {
            if number > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            Ok::<_, std::convert::Infallible>(piece)
        });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .expect("response")
}

fn refused(replayer: &Replayer, request: &Value) -> bool {
    replayer
        .rules
        .iter()
        .any(|rule| request.get(&rule.key).is_some())
}

async fn serve(replayer: Arc<Replayer>) -> SocketAddr {
    let router = Router::new()
        .route("/v1/chat/completions", post(answer))
        .route("/v1/messages", post(answer))
        .route("/v1/responses", post(answer))
        .with_state(replayer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, router).await });
    addr
}

/// What one `duet exec` run against `bodies` left.
struct Run {
    code: Option<i32>,
    stdout: String,
    requests: Vec<Value>,
}

async fn exec(wire: &str, bodies: Vec<Served>, rules: Vec<Rule>) -> Run {
    let replayer = Arc::new(Replayer {
        bodies,
        rules,
        requests: Mutex::new(Vec::new()),
    });
    let addr = serve(Arc::clone(&replayer)).await;
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    let home = tempfile::tempdir().expect("home");
    let env: Vec<(&str, String)> = match wire {
        "anthropic" => vec![
            ("ANTHROPIC_BASE_URL", format!("http://{addr}")),
            ("ANTHROPIC_API_KEY", "test-key".into()),
        ],
        "openai-chat" => vec![
            ("OPENAI_BASE_URL", format!("http://{addr}/v1")),
            ("OPENAI_API_KEY", "test-key".into()),
            ("DUET_MODEL", "captured-model".into()),
        ],
        "openai-responses" => vec![
            ("OPENAI_BASE_URL", format!("http://{addr}/v1")),
            ("OPENAI_API_KEY", "test-key".into()),
            ("DUET_MODEL", "captured-model".into()),
            ("DUET_PROVIDER", "openai-responses".into()),
        ],
        other => panic!("no replay of the {other} wire here"),
    };
    let output = run_duet(
        repo.path(),
        home.path(),
        &env,
        &["exec", "--approval", "auto", "--max-steps", "4", "answer"],
    )
    .await;
    let requests = replayer.requests.lock().expect("requests").clone();
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned()
            + &String::from_utf8_lossy(&output.stderr),
        requests,
    }
}

/// Each text capture of the chat and Anthropic wires, as sent, in pieces read apart,
/// and as servers that bend the framing send it: the answer is printed once, from one
/// request.
#[tokio::test]
async fn every_text_answer_is_taken_once_however_its_body_ends() {
    let mut checked = 0;
    for id in Capture::all() {
        let capture = Capture::load(&id);
        let Some(text) = capture.text() else { continue };
        if capture.wire() == "openai-responses" || capture.meta.get("request_rules").is_some() {
            continue;
        }
        for (variant, body) in [
            ("as sent", capture.body.clone().into()),
            (
                "in pieces",
                Served {
                    bytes: capture.body.clone(),
                    splits: split_points(&capture.body),
                },
            ),
            (
                "without its terminal event",
                capture.without_terminal_event().into(),
            ),
            ("unterminated", capture.unterminated().into()),
        ] {
            let run = exec(capture.wire(), vec![body], Vec::new()).await;
            assert_eq!(run.code, Some(0), "{id} {variant}:\n{}", run.stdout);
            assert_eq!(run.requests.len(), 1, "{id} {variant}:\n{}", run.stdout);
            let first_words: String = text.chars().take(20).collect();
            assert_eq!(
                run.stdout.matches(&first_words).count(),
                1,
                "{id} {variant}: the answer once:\n{}",
                run.stdout
            );
        }
        checked += 1;
    }
    assert!(checked >= 4, "only {checked} text captures");
}

/// Where to split a body for the "in pieces" variant: inside the first event's
/// `data:`, inside a tool call's arguments, in the middle, inside the first multi-byte
/// character, and before the last byte.
fn split_points(body: &[u8]) -> Vec<usize> {
    let find = |needle: &[u8]| {
        body.windows(needle.len())
            .position(|window| window == needle)
    };
    let mut points = vec![body.len() / 2, body.len().saturating_sub(1)];
    points.extend(find(b"data:").map(|at| at + 3));
    points.extend(
        find(b"arguments")
            .or_else(|| find(b"partial_json"))
            .map(|at| at + 7),
    );
    points.extend(body.iter().position(|byte| *byte >= 0x80).map(|at| at + 1));
    points
}

/// The ids of the tool calls and results in a request of any wire.
fn call_and_result_ids(request: &Value) -> (Vec<String>, Vec<String>) {
    let mut calls = Vec::new();
    let mut results = Vec::new();
    // Responses: items of the input.
    for item in request["input"].as_array().into_iter().flatten() {
        match item["type"].as_str() {
            Some("function_call") => calls.extend(item["call_id"].as_str().map(str::to_owned)),
            Some("function_call_output") => {
                results.extend(item["call_id"].as_str().map(str::to_owned));
            }
            _ => {}
        }
    }
    for message in request["messages"].as_array().into_iter().flatten() {
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            calls.extend(call["id"].as_str().map(str::to_owned));
        }
        results.extend(message["tool_call_id"].as_str().map(str::to_owned));
        for block in message["content"].as_array().into_iter().flatten() {
            match block["type"].as_str() {
                Some("tool_use") => calls.extend(block["id"].as_str().map(str::to_owned)),
                Some("tool_result") => {
                    results.extend(block["tool_use_id"].as_str().map(str::to_owned));
                }
                _ => {}
            }
        }
    }
    (calls, results)
}

/// Each tool-call capture of the chat and Anthropic wires: its calls (tools duet does
/// not have, so each is answered as unknown) go back in the next request with their
/// captured ids, each with its result, and the run ends on the text that follows.
#[tokio::test]
async fn every_captured_call_is_answered_under_its_own_id() {
    let mut checked = 0;
    for id in Capture::all() {
        let capture = Capture::load(&id);
        let Some(expected) = capture.meta["expect"]["tool_calls"].as_array() else {
            continue;
        };
        let follow_up = match capture.wire() {
            "openai-chat" => Capture::load("azure-gpt52chat-text"),
            "anthropic" => Capture::load("anthropic-sonnet45-text"),
            _ => continue,
        };
        let rules = rules(&capture);
        let run = exec(
            capture.wire(),
            vec![capture.body.clone().into(), follow_up.body.clone().into()],
            rules,
        )
        .await;
        assert_eq!(run.code, Some(0), "{id}:\n{}", run.stdout);
        let answered: Vec<&Value> = run
            .requests
            .iter()
            .filter(|request| call_and_result_ids(request).0.len() == expected.len())
            .collect();
        let last = answered
            .last()
            .unwrap_or_else(|| panic!("{id}: no request carried the calls back:\n{}", run.stdout));
        let (calls, results) = call_and_result_ids(last);
        let ids: Vec<String> = expected
            .iter()
            .map(|call| call["id"].as_str().expect("id").to_owned())
            .collect();
        // Mistral's own ids are valid for it and kept; others are kept everywhere.
        assert_eq!(calls, ids, "{id}: the calls' ids");
        assert_eq!(results, ids, "{id}: each call has its result");
        checked += 1;
    }
    assert!(checked >= 18, "only {checked} tool-call captures");
}

fn rules(capture: &Capture) -> Vec<Rule> {
    capture.meta["request_rules"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|rule| Rule {
            key: rule["reject_if_present"]
                .as_str()
                .expect("reject_if_present")
                .to_owned(),
            status: u16::try_from(rule["status"].as_u64().expect("status")).expect("status"),
            body: rule["body"].as_str().expect("body").to_owned(),
        })
        .collect()
}

/// Mistral answers 422 to `stream_options`: duet asks again without it, says so once,
/// and never sends it again.
#[tokio::test]
async fn a_server_that_refuses_stream_options_is_asked_without_them() {
    let capture = Capture::load("mistral-small-text");
    let rules = rules(&capture);
    assert_eq!(rules.len(), 1, "the capture's request rule");
    let run = exec("openai-chat", vec![capture.body.clone().into()], rules).await;
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    let asked: Vec<bool> = run
        .requests
        .iter()
        .map(|request| request.get("stream_options").is_some())
        .collect();
    assert_eq!(asked, [true, false], "{}", run.stdout);
    assert_eq!(
        run.stdout.matches("refused `stream_options`").count(),
        1,
        "{}",
        run.stdout
    );
    let text = capture.text().expect("text");
    let first_words: String = text.chars().take(20).collect();
    assert!(run.stdout.contains(&first_words), "{}", run.stdout);
}

/// The text of every tool result in a request of any wire.
fn result_texts(request: &Value) -> Vec<String> {
    let mut texts = Vec::new();
    for item in request["input"].as_array().into_iter().flatten() {
        if item["type"] == "function_call_output" {
            texts.push(item["output"].to_string());
        }
    }
    for message in request["messages"].as_array().into_iter().flatten() {
        if message["role"] == "tool" {
            texts.push(message["content"].to_string());
        }
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_result" {
                texts.push(block["content"].to_string());
            }
        }
    }
    texts
}

/// A short Responses answer in text, to end a run after a captured call (no text-only
/// Responses capture is on file).
const RESPONSES_TEXT: &str = "event: response.created\n\
data: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_end\",\"object\":\"response\",\"status\":\"in_progress\",\"output\":[]},\"sequence_number\":0}\n\n\
event: response.output_item.added\n\
data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"id\":\"msg_end\",\"type\":\"message\",\"status\":\"in_progress\",\"role\":\"assistant\",\"content\":[]},\"sequence_number\":1}\n\n\
event: response.output_text.delta\n\
data: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_end\",\"output_index\":0,\"content_index\":0,\"delta\":\"Done.\",\"sequence_number\":2}\n\n\
event: response.output_item.done\n\
data: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"id\":\"msg_end\",\"type\":\"message\",\"status\":\"completed\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"Done.\",\"annotations\":[]}]},\"sequence_number\":3}\n\n\
event: response.completed\n\
data: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_end\",\"object\":\"response\",\"status\":\"completed\",\"output\":[{\"id\":\"msg_end\",\"type\":\"message\",\"status\":\"completed\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"Done.\",\"annotations\":[]}]}],\"usage\":{\"input_tokens\":10,\"output_tokens\":2,\"total_tokens\":12}},\"sequence_number\":4}\n\n";

/// The replay: every tool-call capture of all three wires, its calls renamed
/// to duet's `shell`, through `duet exec` as sent, in pieces read apart, and (chat and
/// Anthropic) without its terminal event and unterminated. The calls reach the real shell tool: those
/// whose captured arguments carry a `command` run it in the sandbox (`ls`, `pwd`, a
/// `find`), the others get the shell's own complaint about its arguments; every result
/// goes back under its captured id, and the run ends on the text that follows.
#[tokio::test]
async fn every_captured_call_renamed_to_shell_runs_as_duets_shell() {
    let mut ran = 0;
    let mut checked = 0;
    for id in Capture::all() {
        let capture = Capture::load(&id);
        if capture.meta["expect"]["tool_calls"].as_array().is_none() {
            continue;
        }
        let renamed = Capture {
            meta: capture.meta.clone(),
            body: capture.with_calls_named("shell"),
        };
        let mut variants: Vec<(&str, Served)> = vec![
            ("as sent", renamed.body.clone().into()),
            (
                "in pieces",
                Served {
                    bytes: renamed.body.clone(),
                    splits: split_points(&renamed.body),
                },
            ),
        ];
        if capture.wire() != "openai-responses" {
            variants.push((
                "without its terminal event",
                renamed.without_terminal_event().into(),
            ));
            variants.push(("unterminated", renamed.unterminated().into()));
        }
        for (variant, body) in variants {
            ran += assert_calls_run_as_shell(&format!("{id} {variant}"), &capture, body).await;
        }
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} tool-call captures");
    assert!(ran >= 5, "only {ran} captured commands ran");
}

/// The text answer that ends a run after `capture`'s calls: a text capture of the same
/// wire (a short stream of ours for Responses), and the words it prints first.
fn follow_up(capture: &Capture) -> (Vec<u8>, String) {
    match capture.wire() {
        "openai-chat" | "anthropic" => {
            let text = Capture::load(if capture.wire() == "anthropic" {
                "anthropic-sonnet45-text"
            } else {
                "azure-gpt52chat-text"
            });
            let answer: String = text.text().expect("text").chars().take(12).collect();
            (text.body, answer)
        }
        _ => (RESPONSES_TEXT.as_bytes().to_vec(), "Done.".to_owned()),
    }
}

/// Runs `duet exec` against `body` (the calls of `capture`, named `shell`) and then
/// the follow-up text: every call's result goes back under its captured id, those with
/// a `command` ran it, the others got the shell's own complaint, and the run ended on
/// the text. Returns how many commands ran.
async fn assert_calls_run_as_shell(label: &str, capture: &Capture, body: Served) -> usize {
    let expected = capture.meta["expect"]["tool_calls"]
        .as_array()
        .expect("a tool-call capture");
    let (follow_up, answer) = follow_up(capture);
    let run = exec(capture.wire(), vec![body, follow_up.into()], rules(capture)).await;
    assert_eq!(run.code, Some(0), "{label}:\n{}", run.stdout);
    let ids: Vec<String> = expected
        .iter()
        .map(|call| call["id"].as_str().expect("id").to_owned())
        .collect();
    let last = run
        .requests
        .iter()
        .rfind(|request| !call_and_result_ids(request).1.is_empty())
        .unwrap_or_else(|| panic!("{label}: no request carried results:\n{}", run.stdout));
    assert_eq!(call_and_result_ids(last), (ids.clone(), ids), "{label}");
    let mut ran = 0;
    for (call, result) in expected.iter().zip(result_texts(last)) {
        assert!(!result.contains("no tool named"), "{label}: {result}");
        if call["tool_args"].get("command").is_some() {
            assert!(result.contains("exit "), "{label}: {result}");
            ran += 1;
        } else {
            assert!(
                result.contains("invalid arguments for `shell`"),
                "{label}: the shell's own check: {result}"
            );
        }
    }
    assert!(run.stdout.contains(&answer), "{label}:\n{}", run.stdout);
    ran
}

/// Each quirk of real servers (`quirks.toml`, from `QUIRKS.md`) through `duet exec`:
/// its capture changed only as the report describes, calls renamed to `shell`, as
/// sent and in pieces; a text answer is printed once from one request.
#[tokio::test]
async fn every_quirk_passes_through_duet_exec() {
    let quirks = crate::common::quirks::all(&captures_dir());
    assert!(quirks.len() >= 10, "only {} quirks", quirks.len());
    for quirk in quirks {
        let capture = Capture::load(&quirk.capture);
        let text = String::from_utf8(capture.body.clone()).expect("UTF-8");
        let changed = Capture {
            meta: capture.meta.clone(),
            body: quirk.apply(&text).into_bytes(),
        };
        let is_call = capture.meta["expect"]["tool_calls"].as_array().is_some();
        let body = if is_call {
            changed.with_calls_named("shell")
        } else {
            changed.body.clone()
        };
        let pieces = Served {
            splits: split_points(&body),
            bytes: body.clone(),
        };
        for (variant, served) in [("as sent", body.clone().into()), ("in pieces", pieces)] {
            let label = format!("{} ({}) {variant}", quirk.name, quirk.report);
            if is_call {
                assert_calls_run_as_shell(&label, &capture, served).await;
                continue;
            }
            let run = exec(capture.wire(), vec![served], rules(&capture)).await;
            assert_eq!(run.code, Some(0), "{label}:\n{}", run.stdout);
            assert_eq!(run.requests.len(), 1, "{label}:\n{}", run.stdout);
            let first_words: String = capture.text().expect("text").chars().take(20).collect();
            assert_eq!(
                run.stdout.matches(&first_words).count(),
                1,
                "{label}:\n{}",
                run.stdout
            );
        }
    }
}
