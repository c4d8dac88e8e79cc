//! Real servers' streams through the real decoders: every capture in
//! `tests/fixtures/provider-captures/` (verbatim bodies of Ollama, llama.cpp, vLLM,
//! LM Studio, Azure, Gemini, DeepSeek, Groq, Mistral, xAI, DashScope, OpenRouter,
//! Anthropic and gateways relaying Claude, each with a sidecar naming its source and
//! the answer it holds) is decoded whole, split in two at every byte (at many bytes
//! for the large ones), in small random pieces, and as servers that bend the framing
//! send it: without the terminal event, and with the last event unterminated.
//!
//! Owns: replaying the captures and comparing each answer with its sidecar's
//! `expect`. Does not own: the decoders (the wire modules) or the driver (`stream`).
//! Invariant: every capture in the directory is checked, in every variant that
//! applies to its wire; adding a capture adds its checks.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use serde_json::Value;

use super::anthropic::AnthropicDecoder;
use super::openai_chat::OpenAiChatDecoder;
use super::openai_responses::ResponsesDecoder;
use super::stream::testing::{Outcome, run};
use super::{ProviderError, StreamEvent};

/// Bodies up to this size are split in two at every byte; larger ones at
/// [`SPLITS_OF_LARGE_BODIES`] positions.
const SPLIT_EVERYWHERE_UP_TO: usize = 4096;
const SPLITS_OF_LARGE_BODIES: usize = 200;
/// Random chunkings of each body, in pieces of 1 to [`MAX_PIECE`] bytes.
const CHUNKINGS: u64 = 8;
const MAX_PIECE: u64 = 64;

/// One capture: its name, its wire, the body as replayed and what it must decode to.
struct Capture {
    id: String,
    wire: String,
    body: Vec<u8>,
    expect: Expected,
}

/// The answer a capture holds, from its sidecar.
#[derive(Debug, PartialEq)]
enum Expected {
    Text(String),
    /// Each call's id, name and arguments.
    Calls(Vec<(String, String, Value)>),
}

fn directory() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/provider-captures")
}

fn captures() -> Vec<Capture> {
    let mut sidecars: Vec<PathBuf> = std::fs::read_dir(directory())
        .expect("the captures directory")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    sidecars.sort();
    sidecars.iter().map(|path| load(path)).collect()
}

fn load(sidecar: &Path) -> Capture {
    let text = std::fs::read_to_string(sidecar).expect("a sidecar");
    let meta: Value = serde_json::from_str(&text).expect("a sidecar is JSON");
    let id = meta["id"].as_str().expect("the sidecar's id").to_owned();
    let mut body = std::fs::read(sidecar.with_extension("sse")).expect("the capture's body");
    if let Some(append) = meta["replay_append"].as_str() {
        body.extend_from_slice(append.as_bytes());
    }
    let expect = &meta["expect"];
    let expect = match expect["tool_calls"].as_array() {
        Some(calls) => Expected::Calls(
            calls
                .iter()
                .map(|call| {
                    (
                        call["id"].as_str().expect("a call's id").to_owned(),
                        call["tool_name"]
                            .as_str()
                            .expect("a call's name")
                            .to_owned(),
                        call["tool_args"].clone(),
                    )
                })
                .collect(),
        ),
        None => Expected::Text(expect["text"].as_str().expect("the text").to_owned()),
    };
    Capture {
        id,
        wire: meta["wire"].as_str().expect("the wire").to_owned(),
        body,
        expect,
    }
}

impl Capture {
    fn decode(&self, chunks: Vec<Bytes>) -> Outcome {
        let chunks: Vec<Result<Bytes, ProviderError>> = chunks.into_iter().map(Ok).collect();
        match self.wire.as_str() {
            "openai-chat" => run(chunks, OpenAiChatDecoder::default()),
            "anthropic" => run(chunks, AnthropicDecoder::default()),
            "openai-responses" => run(chunks, ResponsesDecoder::default()),
            other => panic!("{}: unknown wire {other}", self.id),
        }
    }

    /// The body without its wire's terminal event ([`framing::without_terminal_event`]).
    fn without_terminal_event(&self) -> Option<Vec<u8>> {
        framing::without_terminal_event(&self.wire, &self.body)
    }

    /// The body with its last event left unterminated.
    fn unterminated(&self) -> Vec<u8> {
        framing::unterminated(&self.body)
    }

    /// Checks that `outcome` is a whole answer equal to the sidecar's.
    fn check(&self, variant: &str, outcome: &Outcome) {
        let place = format!("{} ({variant})", self.id);
        assert_eq!(outcome.error, None, "{place}: {:?}", outcome.events);
        let finished: Vec<usize> = positions(outcome, |event| {
            matches!(event, StreamEvent::Finished { .. })
        });
        assert_eq!(
            finished,
            [outcome.events.len() - 1],
            "{place}: one Finished, last"
        );
        let mut open = Vec::new();
        let mut calls = Vec::new();
        let mut text = String::new();
        for event in &outcome.events {
            match event {
                StreamEvent::TextDelta { text: delta } => text.push_str(delta),
                StreamEvent::ToolCallStart { id, .. } => open.push(id.clone()),
                StreamEvent::ToolCallEnd { call } => {
                    assert!(
                        open.contains(&call.id),
                        "{place}: {} ended before it started",
                        call.id
                    );
                    let arguments: Value =
                        serde_json::from_str(&call.arguments).unwrap_or_else(|error| {
                            panic!("{place}: {} has arguments {error}", call.id)
                        });
                    calls.push((call.id.clone(), call.name.clone(), arguments));
                }
                _ => {}
            }
        }
        match &self.expect {
            Expected::Text(expected) => {
                assert_eq!(&text, expected, "{place}: the text");
                assert_eq!(calls, [], "{place}: no calls");
            }
            Expected::Calls(expected) => assert_eq!(&calls, expected, "{place}: the calls"),
        }
    }
}

fn positions(outcome: &Outcome, wanted: impl Fn(&StreamEvent) -> bool) -> Vec<usize> {
    outcome
        .events
        .iter()
        .enumerate()
        .filter(|(_, event)| wanted(event))
        .map(|(index, _)| index)
        .collect()
}

/// A small deterministic generator (xorshift64), seeded per capture and use.
struct Xorshift(u64);

impl Xorshift {
    fn new(seed: &str, salt: u64) -> Self {
        let hash = seed
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325_u64 ^ salt, |hash, byte| {
                (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
            });
        Self(hash | 1)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

fn split_at(body: &[u8], at: usize) -> Vec<Bytes> {
    vec![
        Bytes::copy_from_slice(&body[..at]),
        Bytes::copy_from_slice(&body[at..]),
    ]
}

fn random_pieces(body: &[u8], random: &mut Xorshift) -> Vec<Bytes> {
    let mut pieces = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let size = usize::try_from(1 + random.below(MAX_PIECE))
            .unwrap_or(1)
            .min(rest.len());
        pieces.push(Bytes::copy_from_slice(&rest[..size]));
        rest = &rest[size..];
    }
    pieces
}

/// Where to split `body` in two: everywhere for small bodies, else at random.
fn split_points(capture: &Capture) -> Vec<usize> {
    let len = capture.body.len();
    if len <= SPLIT_EVERYWHERE_UP_TO {
        return (0..=len).collect();
    }
    let mut random = Xorshift::new(&capture.id, 1);
    let bound = u64::try_from(len).unwrap_or(u64::MAX);
    (0..SPLITS_OF_LARGE_BODIES)
        .map(|_| usize::try_from(random.below(bound)).unwrap_or(0))
        .collect()
}

#[test]
fn every_capture_is_there_with_its_body() {
    let captures = captures();
    assert!(captures.len() >= 27, "{} captures", captures.len());
    for wire in ["openai-chat", "anthropic", "openai-responses"] {
        assert!(
            captures.iter().any(|capture| capture.wire == wire),
            "no {wire} capture"
        );
    }
}

#[test]
fn every_capture_decodes_to_its_answer_whole() {
    for capture in captures() {
        let outcome = capture.decode(vec![Bytes::from(capture.body.clone())]);
        capture.check("whole", &outcome);
    }
}

#[test]
fn every_capture_decodes_the_same_split_in_two_anywhere() {
    for capture in captures() {
        for at in split_points(&capture) {
            let outcome = capture.decode(split_at(&capture.body, at));
            capture.check(&format!("split at byte {at}"), &outcome);
        }
    }
}

#[test]
fn every_capture_decodes_the_same_in_small_random_pieces() {
    for capture in captures() {
        for seed in 0..CHUNKINGS {
            let mut random = Xorshift::new(&capture.id, seed + 100);
            let outcome = capture.decode(random_pieces(&capture.body, &mut random));
            capture.check(&format!("random pieces, seed {seed}"), &outcome);
        }
    }
}

/// ik_llama.cpp, llama.cpp before 2024-09, TGI before 2024-07, mistral.rs before
/// 2025-03 and llama-box end the body right after the finish reason.
#[test]
fn every_capture_decodes_the_same_without_its_terminal_event() {
    let mut checked = 0;
    for capture in captures() {
        let Some(body) = capture.without_terminal_event() else {
            continue;
        };
        checked += 1;
        let cut = Capture { body, ..capture };
        cut.check(
            "without the terminal event",
            &cut.decode(vec![Bytes::from(cut.body.clone())]),
        );
        let mut random = Xorshift::new(&cut.id, 7);
        let pieces = random_pieces(&cut.body, &mut random);
        cut.check("without the terminal event, in pieces", &cut.decode(pieces));
    }
    assert!(
        checked >= 24,
        "only {checked} captures without a terminal event"
    );
}

/// `data: [DONE]` as the very last line, with no blank line after it.
#[test]
fn every_capture_decodes_the_same_with_its_last_event_unterminated() {
    for capture in captures() {
        let body = capture.unterminated();
        let cut = Capture { body, ..capture };
        cut.check(
            "last event unterminated",
            &cut.decode(vec![Bytes::from(cut.body.clone())]),
        );
    }
}

#[path = "../../tests/common/framing.rs"]
mod framing;
/// The quirks as data, and the framings servers bend, shared with the replay through
/// `duet exec`.
#[path = "../../tests/common/quirks.rs"]
mod quirks;

/// Each quirk of `quirks.toml` (`QUIRKS.md`): its capture changed only as the report
/// describes still decodes to the capture's own answer, whole and in pieces.
#[test]
fn every_quirk_decodes_to_its_captures_answer() {
    let all = quirks::all(&directory());
    assert!(all.len() >= 10, "only {} quirks", all.len());
    for quirk in all {
        let capture = captures()
            .into_iter()
            .find(|capture| capture.id == quirk.capture)
            .unwrap_or_else(|| panic!("{}: no capture {}", quirk.name, quirk.capture));
        let text = std::str::from_utf8(&capture.body).expect("a capture is UTF-8");
        let capture = Capture {
            body: quirk.apply(text).into_bytes(),
            ..capture
        };
        let whole = capture.decode(vec![Bytes::from(capture.body.clone())]);
        capture.check(&quirk.name, &whole);
        for seed in 0..CHUNKINGS {
            let mut random = Xorshift::new(&quirk.name, seed);
            let pieces = random_pieces(&capture.body, &mut random);
            capture.check(
                &format!("{} ({}), in pieces (seed {seed})", quirk.name, quirk.report),
                &capture.decode(pieces),
            );
        }
    }
}
