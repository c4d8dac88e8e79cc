//! The driver shared by every wire: body bytes → SSE events → [`StreamEvent`]s.
//!
//! Owns: pulling chunks from the body, running them through the [`SseDecoder`] and a
//! wire's [`WireDecoder`], and ending the stream correctly.
//! Does not own: what any event means (the wire modules) or how the body is fetched.
//! Invariant: the stream yields `Ok` events up to and including the decoder's
//! `Finished`, then ends; or it yields them up to one `Err`, then ends. A body that
//! closes cleanly before the terminal event ends as the wire decides
//! ([`WireDecoder::end_of_body`]): complete when the answer said it was finished,
//! [`ProviderError::Truncated`] otherwise. A body that fails is always an error.

use std::collections::VecDeque;
use std::pin::Pin;

use bytes::Bytes;
use futures::{Stream, StreamExt};

use super::sse::{SseDecoder, SseEvent};
use super::{EventStream, ProviderError, StreamEvent};

/// Whether a wire decoder expects more events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// The wire's terminal event was decoded; the last event pushed was
    /// [`StreamEvent::Finished`] and nothing after it is read.
    Finished,
}

/// Translates one wire format's SSE events into [`StreamEvent`]s.
pub trait WireDecoder: Send + 'static {
    /// Names the terminal event, for the error when the body ends without it.
    const TERMINAL_EVENT: &'static str;

    /// Decodes `event`, appending what it yields to `out`.
    fn decode(
        &mut self,
        event: &SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Flow, ProviderError>;

    /// The body ended cleanly (no transport error) before the terminal event. Servers
    /// that never send it (ik_llama.cpp, older llama.cpp, TGI and mistral.rs) end their
    /// bodies right after the answer's finish reason: a wire whose events so far make
    /// a whole answer pushes its [`StreamEvent::Finished`]; otherwise the answer was cut
    /// off and this is the error. By default, every such end is a cut.
    fn end_of_body(&mut self, _out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        Err(missing_terminal_event::<Self>())
    }
}

/// The error of a body that ended without `D`'s terminal event.
pub fn missing_terminal_event<D: WireDecoder + ?Sized>() -> ProviderError {
    ProviderError::Truncated(format!("the body ended without the {}", D::TERMINAL_EVENT))
}

/// Decodes `body` with `decoder` into an [`EventStream`]. The body's errors become
/// the stream's errors; `reqwest` ones are classified by the `http` module first.
pub fn decode_body<S, E, D>(body: S, decoder: D) -> EventStream
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: Into<ProviderError> + 'static,
    D: WireDecoder,
{
    let driver = Driver {
        body: Box::pin(body),
        sse: SseDecoder::new(),
        wire: decoder,
        ready: VecDeque::new(),
        done: false,
    };
    Box::pin(futures::stream::unfold(driver, Driver::next_item))
}

/// Pushes `event(text)` unless `text` is empty: providers send empty deltas (block
/// openers, keep-alives) that carry nothing for the consumer.
pub fn push_unless_empty(
    out: &mut Vec<StreamEvent>,
    text: String,
    event: impl FnOnce(String) -> StreamEvent,
) {
    if !text.is_empty() {
        out.push(event(text));
    }
}

type Item = Result<StreamEvent, ProviderError>;

struct Driver<S, D> {
    body: Pin<Box<S>>,
    sse: SseDecoder,
    wire: D,
    /// Decoded but not yet yielded; an `Err` is always last.
    ready: VecDeque<Item>,
    /// Nothing more is read from the body once this is set.
    done: bool,
}

impl<S, E, D> Driver<S, D>
where
    S: Stream<Item = Result<Bytes, E>> + Send,
    E: Into<ProviderError>,
    D: WireDecoder,
{
    async fn next_item(mut self) -> Option<(Item, Self)> {
        loop {
            if let Some(item) = self.ready.pop_front() {
                return Some((item, self));
            }
            if self.done {
                return None;
            }
            self.read_chunk().await;
        }
    }

    async fn read_chunk(&mut self) {
        match self.body.next().await {
            Some(Ok(bytes)) => self.feed(&bytes),
            Some(Err(err)) => self.fail(err.into()),
            None => self.end_of_body(),
        }
    }

    /// A clean end of the body: its unterminated last event, if any, is decoded, and
    /// without a terminal event the wire decides whether the answer is whole.
    fn end_of_body(&mut self) {
        match self.sse.finish() {
            Ok(Some(event)) => {
                // An event without its blank line may have been cut anywhere: that it
                // does not decode says the body was cut, not malformed.
                if self.decode_event(&event, &mut Vec::new()).is_err() {
                    return self.fail(missing_terminal_event::<D>());
                }
                if self.done {
                    return;
                }
            }
            Ok(None) => {}
            Err(err) => return self.fail(ProviderError::Malformed(err.to_string())),
        }
        let mut out = Vec::new();
        let ended = self.wire.end_of_body(&mut out);
        self.ready.extend(out.into_iter().map(Ok));
        match ended {
            Ok(()) => self.done = true,
            Err(err) => self.fail(err),
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        let events = match self.sse.push(bytes) {
            Ok(events) => events,
            Err(err) => return self.fail(ProviderError::Malformed(err.to_string())),
        };
        let mut out = Vec::new();
        for event in &events {
            if let Err(err) = self.decode_event(event, &mut out) {
                return self.fail(err);
            }
            if self.done {
                return;
            }
        }
    }

    /// Decodes one event, queueing what it yields (`out` is scratch space), and is
    /// done when it was the terminal one.
    fn decode_event(
        &mut self,
        event: &SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let flow = self.wire.decode(event, out);
        self.ready.extend(out.drain(..).map(Ok));
        if flow? == Flow::Finished {
            self.done = true;
        }
        Ok(())
    }

    fn fail(&mut self, err: ProviderError) {
        self.ready.push_back(Err(err));
        self.done = true;
    }
}

/// Helpers for testing wire decoders against recorded streams, chunked every way.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// What a stream produced: its events, then the error that ended it, if any.
    /// Errors are compared by their debug text, since `ProviderError` is not `Eq`.
    #[derive(Debug, PartialEq)]
    pub struct Outcome {
        pub events: Vec<StreamEvent>,
        pub error: Option<String>,
    }

    impl Outcome {
        pub fn ok(events: Vec<StreamEvent>) -> Self {
            Self {
                events,
                error: None,
            }
        }

        pub fn failed(events: Vec<StreamEvent>, error: &ProviderError) -> Self {
            Self {
                events,
                error: Some(format!("{error:?}")),
            }
        }
    }

    /// Runs `decoder` over the body items `chunks` and collects everything.
    pub fn run<D: WireDecoder>(chunks: Vec<Result<Bytes, ProviderError>>, decoder: D) -> Outcome {
        let stream = decode_body(futures::stream::iter(chunks), decoder);
        futures::executor::block_on(collect(stream))
    }

    /// Drains `stream`, checking that nothing follows an error.
    pub async fn collect(stream: EventStream) -> Outcome {
        let items: Vec<Item> = stream.collect().await;
        let mut outcome = Outcome::ok(Vec::new());
        for item in items {
            assert!(outcome.error.is_none(), "the stream went on after an error");
            match item {
                Ok(event) => outcome.events.push(event),
                Err(err) => outcome.error = Some(format!("{err:?}")),
            }
        }
        outcome
    }

    /// The two tool calls both recorded fixtures end with: a `read` of `src/lib.rs` and a
    /// `grep`, each streamed in the same fragments, with the given ids.
    pub fn read_and_grep_calls(read_id: &str, grep_id: &str) -> Vec<StreamEvent> {
        let call = |id: &str, name: &str, fragments: &[&str], arguments: &str| {
            let mut events = vec![StreamEvent::ToolCallStart {
                id: id.into(),
                name: name.into(),
            }];
            events.extend(
                fragments
                    .iter()
                    .map(|fragment| StreamEvent::ToolCallArgsDelta {
                        id: id.into(),
                        fragment: (*fragment).into(),
                    }),
            );
            events.push(StreamEvent::ToolCallEnd {
                call: crate::provider::ToolCall {
                    id: id.into(),
                    name: name.into(),
                    arguments: arguments.into(),
                },
            });
            events
        };
        let mut events = call(
            read_id,
            "read",
            &[
                "{\"pa",
                "th\": \"src/",
                "lib.rs\"",
                ", \"offset\": 1",
                "20}",
            ],
            r#"{"path": "src/lib.rs", "offset": 120}"#,
        );
        events.extend(call(
            grep_id,
            "grep",
            &[
                "{\"pattern\"",
                ": \"fn pa",
                r#"rse\\(", "glob": "#,
                "\"*.rs\"}",
            ],
            r#"{"pattern": "fn parse\\(", "glob": "*.rs"}"#,
        ));
        events
    }

    /// Asserts that a recorded stream decodes to `expected` as one chunk, however it is
    /// chunked, and with CRLF line endings.
    pub fn assert_decodes_fixture<D: WireDecoder>(
        fixture: &str,
        new_decoder: impl Fn() -> D,
        expected: Vec<StreamEvent>,
    ) {
        let expected = Outcome::ok(expected);
        assert_eq!(decode_whole(fixture.as_bytes(), new_decoder()), expected);
        assert_chunking_invariant(fixture.as_bytes(), &new_decoder, &expected);
        let crlf = fixture.replace('\n', "\r\n");
        assert_eq!(
            decode_whole(crlf.as_bytes(), new_decoder()),
            expected,
            "CRLF"
        );
    }

    /// Decodes `input` as one chunk.
    pub fn decode_whole<D: WireDecoder>(input: &[u8], decoder: D) -> Outcome {
        run(vec![Ok(Bytes::copy_from_slice(input))], decoder)
    }

    /// Asserts that `input` decodes to `expected` however it is chunked: whole, split
    /// in two at every byte position, one byte at a time, and in random chunkings.
    pub fn assert_chunking_invariant<D: WireDecoder>(
        input: &[u8],
        new_decoder: impl Fn() -> D,
        expected: &Outcome,
    ) {
        let check = |chunks: Vec<&[u8]>, how: &str| {
            let body = chunks
                .into_iter()
                .map(|chunk| Ok(Bytes::copy_from_slice(chunk)))
                .collect();
            pretty_assertions::assert_eq!(&run(body, new_decoder()), expected, "{how}");
        };
        check(vec![input], "whole");
        for split in 0..=input.len() {
            let (head, tail) = input.split_at(split);
            check(vec![head, tail], &format!("split at byte {split}"));
        }
        check(input.chunks(1).collect(), "one byte at a time");
        for seed in 1..=50 {
            check(
                random_chunks(input, seed),
                &format!("random chunking {seed}"),
            );
        }
    }

    /// Cuts `input` into chunks of 1 to 64 bytes, reproducibly for a given seed.
    fn random_chunks(input: &[u8], seed: u64) -> Vec<&[u8]> {
        let mut state = seed;
        let mut rest = input;
        let mut chunks = Vec::new();
        while !rest.is_empty() {
            // xorshift64: enough randomness for chunk sizes, no extra crate.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let size = usize::try_from(state % 64).unwrap_or(0) + 1;
            let (chunk, tail) = rest.split_at(size.min(rest.len()));
            chunks.push(chunk);
            rest = tail;
        }
        chunks
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::testing::{Outcome, assert_chunking_invariant, run};
    use super::*;
    use crate::provider::{StopReason, Usage};

    /// A toy wire: `data: text` yields a text delta, `data: stop` finishes and
    /// `data: bad` is a decoding error.
    struct EchoWire;

    impl WireDecoder for EchoWire {
        const TERMINAL_EVENT: &'static str = "`stop` line";

        fn decode(
            &mut self,
            event: &SseEvent,
            out: &mut Vec<StreamEvent>,
        ) -> Result<Flow, ProviderError> {
            match event.data.as_str() {
                "stop" => {
                    out.push(finished());
                    Ok(Flow::Finished)
                }
                "bad" => Err(ProviderError::Malformed("bad line".into())),
                text => {
                    out.push(text_delta(text));
                    Ok(Flow::Continue)
                }
            }
        }
    }

    fn text_delta(text: &str) -> StreamEvent {
        StreamEvent::TextDelta { text: text.into() }
    }

    fn finished() -> StreamEvent {
        StreamEvent::Finished {
            stop_reason: StopReason::EndTurn,
            usage: Usage::default(),
        }
    }

    fn chunks(parts: &[&'static str]) -> Vec<Result<Bytes, ProviderError>> {
        parts.iter().map(|part| Ok(Bytes::from(*part))).collect()
    }

    #[test]
    fn yields_events_through_the_terminal_one_and_stops_reading() {
        let outcome = run(
            chunks(&["data: a\n\ndata: b\n", "\ndata: stop\n\ndata: after\n\n"]),
            EchoWire,
        );
        assert_eq!(
            outcome,
            Outcome::ok(vec![text_delta("a"), text_delta("b"), finished()])
        );
    }

    #[test]
    fn chunking_does_not_change_the_outcome() {
        assert_chunking_invariant(
            b"data: one\r\n\r\n: comment\r\ndata: two\r\ndata: lines\r\n\r\ndata: stop\r\n\r\n",
            || EchoWire,
            &Outcome::ok(vec![
                text_delta("one"),
                text_delta("two\nlines"),
                finished(),
            ]),
        );
    }

    #[test]
    fn a_body_ending_before_the_terminal_event_is_truncated() {
        let outcome = run(chunks(&["data: a\n\ndata: b\n"]), EchoWire);
        assert_eq!(
            outcome,
            Outcome::failed(
                vec![text_delta("a"), text_delta("b")],
                &ProviderError::Truncated("the body ended without the `stop` line".into())
            )
        );
    }

    #[test]
    fn an_unterminated_last_event_that_does_not_decode_is_a_cut() {
        let outcome = run(chunks(&["data: a\n\ndata: bad"]), EchoWire);
        assert_eq!(
            outcome,
            Outcome::failed(
                vec![text_delta("a")],
                &ProviderError::Truncated("the body ended without the `stop` line".into())
            )
        );
    }

    #[test]
    fn an_unterminated_last_event_at_a_clean_end_is_decoded() {
        for body in ["data: a\n\ndata: stop\n", "data: a\n\ndata: stop"] {
            assert_eq!(
                run(chunks(&[body]), EchoWire),
                Outcome::ok(vec![text_delta("a"), finished()]),
                "{body:?}"
            );
        }
    }

    #[test]
    fn a_body_read_error_ends_the_stream_after_the_events_before_it() {
        let body = vec![
            Ok(Bytes::from("data: a\n\n")),
            Err(ProviderError::Network("connection reset".into())),
            Ok(Bytes::from("data: stop\n\n")),
        ];
        assert_eq!(
            run(body, EchoWire),
            Outcome::failed(
                vec![text_delta("a")],
                &ProviderError::Network("connection reset".into())
            )
        );
    }

    #[test]
    fn an_endless_line_is_malformed_instead_of_filling_memory() {
        let endless = Bytes::from(format!("data: {}", "a".repeat(17 * 1024 * 1024)));
        let body = vec![Ok(Bytes::from("data: a\n\n")), Ok(endless)];
        assert_eq!(
            run(body, EchoWire),
            Outcome::failed(
                vec![text_delta("a")],
                &ProviderError::Malformed(
                    "a server-sent event grew beyond 16777216 bytes without ending".into()
                )
            )
        );
    }

    #[test]
    fn a_decoder_error_comes_after_the_events_decoded_before_it() {
        let outcome = run(
            chunks(&["data: a\n\ndata: bad\n\ndata: stop\n\n"]),
            EchoWire,
        );
        assert_eq!(
            outcome,
            Outcome::failed(
                vec![text_delta("a")],
                &ProviderError::Malformed("bad line".into())
            )
        );
    }
}
