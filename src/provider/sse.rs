//! Server-Sent Events decoding, byte by byte, as the WHATWG HTML spec describes it.
//!
//! Owns: splitting a byte stream into lines (LF, CRLF or CR, split anywhere across
//! chunks), interpreting the `event` and `data` fields, and dispatching events.
//! Does not own: what an event's data means (the wire decoders) or reading the body.
//! Invariant: the events produced do not depend on how the input was chunked, and the
//! decoder never holds more than its byte limit of one pending event.

use std::borrow::Cow;

/// The largest event (its pending line plus data lines so far) the decoder buffers. Far
/// above anything a model API sends in one event, yet a bound on a runaway line.
const DEFAULT_MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

const BYTE_ORDER_MARK: &[u8] = b"\xEF\xBB\xBF";

/// One dispatched event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, if one was given (the spec's default type is `message`).
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Why the decoder gave up.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    #[error("a server-sent event grew beyond {limit} bytes without ending")]
    EventTooLarge { limit: usize },
}

/// Incremental SSE decoder: feed it body chunks, get back the events they complete.
#[derive(Debug)]
pub struct SseDecoder {
    /// Bytes of the current, not yet terminated line.
    line: Vec<u8>,
    /// The previous chunk ended in `\r`; a `\n` opening the next one belongs to it.
    after_cr: bool,
    /// No line has been completed yet (a leading byte order mark is skipped there).
    at_stream_start: bool,
    pending: PendingEvent,
    max_event_bytes: usize,
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::with_limit(DEFAULT_MAX_EVENT_BYTES)
    }
}

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// A decoder that fails once one event needs more than `max_event_bytes` of buffer.
    pub fn with_limit(max_event_bytes: usize) -> Self {
        Self {
            line: Vec::new(),
            after_cr: false,
            at_stream_start: true,
            pending: PendingEvent::default(),
            max_event_bytes,
        }
    }

    /// Consumes `bytes` and returns the events completed by them, in order. Bytes of an
    /// unfinished line or event are kept for the next call.
    pub fn push(&mut self, mut bytes: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        let mut events = Vec::new();
        while let Some(&first) = bytes.first() {
            if std::mem::take(&mut self.after_cr) && first == b'\n' {
                bytes = &bytes[1..];
                continue;
            }
            let Some(end) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') else {
                self.extend_line(bytes)?;
                break;
            };
            self.extend_line(&bytes[..end])?;
            self.after_cr = bytes[end] == b'\r';
            bytes = &bytes[end + 1..];
            if let Some(event) = self.finish_line()? {
                events.push(event);
            }
        }
        Ok(events)
    }

    /// The event left when the body ends cleanly without the blank line that would
    /// dispatch it (`data: [DONE]` as the very last line): the browser's parser drops
    /// it, but servers that end their bodies so mean it, and it is complete. A partial
    /// last line counts as a line.
    pub fn finish(&mut self) -> Result<Option<SseEvent>, SseError> {
        let mut event = None;
        if !self.line.is_empty() {
            event = self.finish_line()?;
        }
        Ok(event.or_else(|| self.pending.dispatch()))
    }

    fn extend_line(&mut self, bytes: &[u8]) -> Result<(), SseError> {
        self.line.extend_from_slice(bytes);
        self.check_size()
    }

    fn check_size(&self) -> Result<(), SseError> {
        if self.line.len() + self.pending.data.len() > self.max_event_bytes {
            return Err(SseError::EventTooLarge {
                limit: self.max_event_bytes,
            });
        }
        Ok(())
    }

    fn finish_line(&mut self) -> Result<Option<SseEvent>, SseError> {
        let mut line = self.line.as_slice();
        if std::mem::take(&mut self.at_stream_start) {
            line = line.strip_prefix(BYTE_ORDER_MARK).unwrap_or(line);
        }
        let event = self.pending.apply_line(line);
        self.line.clear();
        self.check_size()?;
        Ok(event)
    }
}

/// The fields gathered since the last dispatch.
#[derive(Debug, Default)]
struct PendingEvent {
    event_type: String,
    /// Every `data` value followed by `\n`, as the spec's data buffer.
    data: String,
}

impl PendingEvent {
    /// Interprets one complete line; a blank line dispatches the event.
    fn apply_line(&mut self, line: &[u8]) -> Option<SseEvent> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(b":") {
            return None;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match field {
            b"event" => self.event_type = utf8(value).into_owned(),
            b"data" => {
                self.data.push_str(&utf8(value));
                self.data.push('\n');
            }
            // `id` and `retry` only matter to reconnecting browsers; other fields are
            // ignored by the spec.
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event_type = std::mem::take(&mut self.event_type);
        let mut data = std::mem::take(&mut self.data);
        if data.is_empty() {
            return None;
        }
        data.pop();
        Some(SseEvent {
            event: (!event_type.is_empty()).then_some(event_type),
            data,
        })
    }
}

fn utf8(bytes: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn event(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_owned),
            data: data.to_owned(),
        }
    }

    fn decode_whole(input: &[u8]) -> Vec<SseEvent> {
        SseDecoder::new().push(input).unwrap()
    }

    fn decode_in_chunks<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> Vec<SseEvent> {
        let mut decoder = SseDecoder::new();
        chunks
            .into_iter()
            .flat_map(|chunk| decoder.push(chunk).unwrap())
            .collect()
    }

    /// Decodes `input` whole, split in two at every position, and byte by byte, and
    /// checks every way yields `expected`.
    fn assert_decodes_to(input: &[u8], expected: &[SseEvent]) {
        assert_eq!(decode_whole(input), expected, "whole input");
        for split in 0..=input.len() {
            let (head, tail) = input.split_at(split);
            assert_eq!(decode_in_chunks([head, tail]), expected, "split at {split}");
        }
        assert_eq!(
            decode_in_chunks(input.chunks(1)),
            expected,
            "one byte at a time"
        );
    }

    #[test]
    fn decodes_named_events_and_plain_data() {
        assert_decodes_to(
            b"event: message_start\ndata: {\"a\":1}\n\ndata: plain\n\n",
            &[
                event(Some("message_start"), "{\"a\":1}"),
                event(None, "plain"),
            ],
        );
    }

    #[test]
    fn accepts_lf_crlf_and_cr_line_endings_even_mixed() {
        let expected = [event(Some("x"), "one"), event(None, "two")];
        assert_decodes_to(b"event: x\ndata: one\n\ndata: two\n\n", &expected);
        assert_decodes_to(b"event: x\r\ndata: one\r\n\r\ndata: two\r\n\r\n", &expected);
        assert_decodes_to(b"event: x\rdata: one\r\rdata: two\r\r", &expected);
        assert_decodes_to(b"event: x\r\ndata: one\r\rdata: two\n\r\n", &expected);
    }

    #[test]
    fn ignores_comments_and_unused_fields() {
        assert_decodes_to(
            b": ping\n:\nid: 7\nretry: 1000\nfoo: bar\ndata: kept\n: trailing comment\n\n",
            &[event(None, "kept")],
        );
    }

    #[test]
    fn joins_multiple_data_lines_with_newlines() {
        assert_decodes_to(
            b"data: first\ndata:second\ndata\ndata:  indented\n\n",
            &[event(None, "first\nsecond\n\n indented")],
        );
    }

    #[test]
    fn strips_only_one_space_after_the_colon() {
        assert_decodes_to(b"data:no space\n\n", &[event(None, "no space")]);
        assert_decodes_to(b"data:   three\n\n", &[event(None, "  three")]);
        assert_decodes_to(b"event:e\ndata: x\n\n", &[event(Some("e"), "x")]);
    }

    #[test]
    fn does_not_dispatch_events_without_data() {
        assert_decodes_to(b"event: lonely\n\n\n\nid: 3\n\n", &[]);
        // The event type does not leak into the next event.
        assert_decodes_to(b"event: lonely\n\ndata: next\n\n", &[event(None, "next")]);
    }

    #[test]
    fn an_empty_data_field_still_dispatches() {
        assert_decodes_to(b"data:\n\n", &[event(None, "")]);
        assert_decodes_to(b"data\n\n", &[event(None, "")]);
    }

    #[test]
    fn keeps_an_unterminated_event_pending() {
        let mut decoder = SseDecoder::new();
        assert_eq!(decoder.push(b"data: partial\n").unwrap(), vec![]);
        assert_eq!(decoder.push(b"\n").unwrap(), vec![event(None, "partial")]);
        assert_eq!(decoder.push(b"data: never finished\n").unwrap(), vec![]);
    }

    #[test]
    fn a_cr_at_the_end_of_a_chunk_ends_the_line_at_once() {
        let mut decoder = SseDecoder::new();
        assert_eq!(decoder.push(b"data: x\r").unwrap(), vec![]);
        assert_eq!(decoder.push(b"\r").unwrap(), vec![event(None, "x")]);
        // An empty push does not forget the pending CR.
        assert_eq!(decoder.push(b"data: y\r").unwrap(), vec![]);
        assert_eq!(decoder.push(b"").unwrap(), vec![]);
        assert_eq!(decoder.push(b"\n\n").unwrap(), vec![event(None, "y")]);
    }

    #[test]
    fn decodes_multibyte_utf8_split_anywhere() {
        assert_decodes_to(
            "event: ünï\ndata: héllo wörld — 日本語 🦀\n\n".as_bytes(),
            &[event(Some("ünï"), "héllo wörld — 日本語 🦀")],
        );
    }

    #[test]
    fn replaces_invalid_utf8() {
        assert_decodes_to(b"data: a\xFFb\n\n", &[event(None, "a\u{FFFD}b")]);
    }

    #[test]
    fn skips_a_leading_byte_order_mark_only() {
        assert_decodes_to(b"\xEF\xBB\xBFdata: x\n\n", &[event(None, "x")]);
        // Elsewhere it is part of the line, which then names no known field.
        assert_decodes_to(b"data: x\n\n\xEF\xBB\xBFdata: y\n\n", &[event(None, "x")]);
    }

    #[test]
    fn fails_on_an_event_beyond_the_limit() {
        let mut decoder = SseDecoder::with_limit(16);
        assert_eq!(decoder.push(b"data: 0123456789").unwrap(), vec![]);
        assert_eq!(
            decoder.push(b"abc"),
            Err(SseError::EventTooLarge { limit: 16 })
        );

        let mut decoder = SseDecoder::with_limit(16);
        assert_eq!(
            decoder.push(b"data: 01234\ndata: 56789\n"),
            Err(SseError::EventTooLarge { limit: 16 })
        );
    }

    #[test]
    fn the_limit_applies_per_event() {
        let mut decoder = SseDecoder::with_limit(16);
        for _ in 0..100 {
            assert_eq!(
                decoder.push(b"data: 0123456789\n\n").unwrap(),
                vec![event(None, "0123456789")]
            );
        }
    }

    #[test]
    fn an_event_left_unterminated_at_the_end_is_given_by_finish() {
        for body in [
            &b"data: x\n\ndata: [DONE]\n"[..],
            b"data: x\n\ndata: [DONE]",
        ] {
            let mut decoder = SseDecoder::new();
            assert_eq!(decoder.push(body).unwrap(), vec![event(None, "x")]);
            assert_eq!(decoder.finish().unwrap(), Some(event(None, "[DONE]")));
            assert_eq!(decoder.finish().unwrap(), None);
        }
        let mut decoder = SseDecoder::new();
        decoder.push(b"data: x\n\n: a comment").unwrap();
        assert_eq!(decoder.finish().unwrap(), None);
    }
}
