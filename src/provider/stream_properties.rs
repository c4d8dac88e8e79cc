//! Property-test support shared by the wire decoders: generated model turns, and the
//! properties every wire's stream must have whatever the turn and however the bytes
//! arrive.
//!
//! Owns: the turn generator (text deltas with any Unicode, tool calls whose argument
//! JSON is cut into arbitrary fragments) and [`check_stream`].
//! Does not own: rendering a turn in a wire format; each wire's tests do that in the
//! format its provider documents.
//! Invariant: the properties only compare a decoder with itself (whole vs chunked,
//! LF vs CRLF, full vs cut) and with the generated turn, so they hold for any wire.

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::{Map, Value};

use super::StreamEvent;
use super::stream::WireDecoder;
use super::stream::testing::{Outcome, decode_whole, run};

/// One generated assistant turn: text, then tool calls.
#[derive(Clone, Debug)]
pub struct GeneratedTurn {
    /// The text as the provider streams it, delta by delta.
    pub text: Vec<String>,
    pub calls: Vec<GeneratedCall>,
}

/// A tool call whose arguments arrive in `fragments` that join to `arguments`' JSON.
#[derive(Clone, Debug)]
pub struct GeneratedCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
    pub fragments: Vec<String>,
}

impl GeneratedTurn {
    pub fn has_calls(&self) -> bool {
        !self.calls.is_empty()
    }
}

/// Text with what breaks naive parsers: quotes, backslashes, newlines, `data:`-like
/// text, multi-byte characters.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-z é€😀\"\\\\\n\t:]{0,12}",
        1 => "\\PC{0,8}",
        1 => Just("\ndata: [DONE]\n\n".to_string()),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z_]{1,6}", inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// A tool's arguments: always a JSON object.
fn arguments() -> impl Strategy<Value = Value> {
    proptest::collection::btree_map("[a-z_]{1,8}", json_value(), 0..5)
        .prop_map(|map| Value::Object(map.into_iter().collect::<Map<String, Value>>()))
}

/// `text` cut at the given positions, moved back to character boundaries.
fn fragments(text: &str, cuts: &[usize]) -> Vec<String> {
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|cut| {
            let mut at = cut % (text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            at
        })
        .collect();
    points.push(0);
    points.push(text.len());
    points.sort_unstable();
    points.dedup();
    points
        .windows(2)
        .map(|pair| text[pair[0]..pair[1]].to_string())
        .collect()
}

fn call(index: usize) -> impl Strategy<Value = GeneratedCall> {
    (
        proptest::sample::select(vec!["read", "grep", "shell", "server__tool"]),
        arguments(),
        proptest::collection::vec(any::<usize>(), 0..6),
    )
        .prop_map(move |(name, arguments, cuts)| {
            let json = arguments.to_string();
            GeneratedCall {
                id: format!("call_{index}"),
                name: name.to_string(),
                fragments: fragments(&json, &cuts),
                arguments,
            }
        })
}

/// Turns of up to six text deltas and three tool calls.
pub fn turn() -> impl Strategy<Value = GeneratedTurn> {
    (proptest::collection::vec(text(), 0..6), 0..4usize).prop_flat_map(|(text, calls)| {
        let calls: Vec<_> = (0..calls).map(call).collect();
        calls.prop_map(move |calls| GeneratedTurn {
            text: text.clone(),
            calls,
        })
    })
}

/// Byte positions to cut a stream at (taken modulo its length).
pub fn cuts() -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::vec(any::<usize>(), 1..8)
}

/// Checks that `sse`, the rendering of `turn` in `D`'s wire format:
/// - decodes to the turn's text and its calls with exactly their arguments, ending in
///   one `Finished`;
/// - decodes to the same events when cut into chunks at `cuts` (inside lines, JSON,
///   UTF-8 characters), and with CRLF line endings cut the same way (between `\r` and
///   `\n`);
/// - cut short at any of `cuts`, yields a prefix of those events and then an error, so
///   no call whose arguments were cut off is ever complete; or, cut after the finish
///   reason, all of them (servers that never send the terminal event end so), where
///   the usage that comes after the finish reason may be missing.
pub fn check_stream<D: WireDecoder>(
    sse: &str,
    new_decoder: impl Fn() -> D,
    turn: &GeneratedTurn,
    cuts: &[usize],
) -> Result<(), TestCaseError> {
    let whole = decode_whole(sse.as_bytes(), new_decoder());
    check_matches_turn(&whole, turn)?;

    let crlf = sse.replace('\n', "\r\n");
    for input in [sse.as_bytes(), crlf.as_bytes()] {
        let chunked = run(chunked(input, cuts), new_decoder());
        prop_assert_eq!(&chunked, &whole, "chunked at {:?}", cuts);
    }

    let whole_events = without_usage(&whole.events);
    for &cut in cuts {
        let cut = cut % sse.len().max(1);
        let partial = decode_whole(&sse.as_bytes()[..cut], new_decoder());
        let partial_events = without_usage(&partial.events);
        prop_assert!(
            whole_events.starts_with(&partial_events),
            "cut at {cut}: {:?} is not a prefix of the whole stream's events",
            partial.events
        );
        prop_assert!(
            partial.error.is_some() || partial_events == whole_events,
            "cut at {cut}: the stream ended early without an error"
        );
    }
    Ok(())
}

/// `events` with the usage of `Finished` left out.
fn without_usage(events: &[StreamEvent]) -> Vec<StreamEvent> {
    events
        .iter()
        .map(|event| match event {
            StreamEvent::Finished { stop_reason, .. } => StreamEvent::Finished {
                stop_reason: stop_reason.clone(),
                usage: super::Usage::default(),
            },
            other => other.clone(),
        })
        .collect()
}

fn chunked(input: &[u8], cuts: &[usize]) -> Vec<Result<bytes::Bytes, super::ProviderError>> {
    let mut points: Vec<usize> = cuts.iter().map(|cut| cut % (input.len() + 1)).collect();
    points.extend([0, input.len()]);
    points.sort_unstable();
    points.dedup();
    points
        .windows(2)
        .map(|pair| Ok(bytes::Bytes::copy_from_slice(&input[pair[0]..pair[1]])))
        .collect()
}

fn check_matches_turn(outcome: &Outcome, turn: &GeneratedTurn) -> Result<(), TestCaseError> {
    prop_assert_eq!(&outcome.error, &None);
    let text: String = outcome
        .events
        .iter()
        .filter_map(|event| match event {
            StreamEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    prop_assert_eq!(text, turn.text.concat());

    let calls: Vec<(String, String, Value)> = outcome
        .events
        .iter()
        .filter_map(|event| match event {
            StreamEvent::ToolCallEnd { call } => Some(call),
            _ => None,
        })
        .map(|call| {
            let arguments = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
            (call.id.clone(), call.name.clone(), arguments)
        })
        .collect();
    let expected: Vec<(String, String, Value)> = turn
        .calls
        .iter()
        .map(|call| (call.id.clone(), call.name.clone(), call.arguments.clone()))
        .collect();
    prop_assert_eq!(calls, expected);

    let finished = outcome
        .events
        .iter()
        .filter(|event| matches!(event, StreamEvent::Finished { .. }))
        .count();
    prop_assert_eq!(finished, 1);
    let ends_finished = matches!(outcome.events.last(), Some(StreamEvent::Finished { .. }));
    prop_assert!(ends_finished, "the last event is not `Finished`");
    Ok(())
}
