//! Entry points for the fuzz targets under `fuzz/` (run by `fuzz/run`, not by
//! `cargo test`): one function per parser that eats input duet does not control.
//!
//! Owns: turning raw fuzzer bytes into each parser's input and the invariants checked
//! beyond "does not panic" (chunking independence, all-or-none hunk application).
//! Does not own: the parsers themselves.
//! Invariant: every function accepts any bytes; a panic here is a bug in duet (or a
//! broken invariant), which is what the fuzzer looks for.

use std::path::Path;
use std::sync::LazyLock;

use bytes::Bytes;
use futures::StreamExt as _;

use crate::diff::{self, HunkId};
use crate::policy::{CommandContext, ProtectedPaths, TrackedFiles, classify};
use crate::provider::anthropic::AnthropicDecoder;
use crate::provider::openai_chat::OpenAiChatDecoder;
use crate::provider::openai_responses::ResponsesDecoder;
use crate::provider::{ArgumentsBuffer, ProviderError, SseDecoder, WireDecoder, decode_body};
use crate::tools::Registry;
use crate::tui::keymap::Keymap;
use crate::tui::theme::Theme;
use crate::tui::transcript::render_markdown;

/// Splits fuzzer input into a split point (its first byte) and the rest.
fn split_point(data: &[u8]) -> (usize, &[u8]) {
    match data.split_first() {
        Some((&first, rest)) => (usize::from(first) % (rest.len() + 1), rest),
        None => (0, data),
    }
}

/// The SSE decoder yields the same events whole and split in two.
pub fn sse(data: &[u8]) {
    let (at, body) = split_point(data);
    let whole = SseDecoder::new().push(body);
    let mut split = SseDecoder::new();
    let head = split.push(&body[..at]);
    let tail = split.push(&body[at..]);
    if let (Ok(whole), Ok(mut head), Ok(tail)) = (whole, head, tail) {
        head.extend(tail);
        assert_eq!(whole, head, "events depend on where the body was split");
    }
}

/// A wire decoder over arbitrary bytes, whole and split in two: same events, same end.
fn wire<D: WireDecoder>(data: &[u8], new_decoder: impl Fn() -> D) {
    let (at, body) = split_point(data);
    let whole = decode(vec![Bytes::copy_from_slice(body)], new_decoder());
    let split = decode(
        vec![
            Bytes::copy_from_slice(&body[..at]),
            Bytes::copy_from_slice(&body[at..]),
        ],
        new_decoder(),
    );
    assert_eq!(whole, split, "events depend on where the body was split");
}

fn decode<D: WireDecoder>(chunks: Vec<Bytes>, decoder: D) -> Vec<String> {
    let body = futures::stream::iter(chunks.into_iter().map(Ok::<_, ProviderError>));
    let stream = decode_body(body, decoder);
    futures::executor::block_on(stream.map(|item| format!("{item:?}")).collect())
}

pub fn anthropic_stream(data: &[u8]) {
    wire(data, AnthropicDecoder::default);
}

pub fn openai_chat_stream(data: &[u8]) {
    wire(data, OpenAiChatDecoder::default);
}

pub fn openai_responses_stream(data: &[u8]) {
    wire(data, ResponsesDecoder::default);
}

/// Streamed argument text, fragment by fragment, then the check every call passes
/// before it is scheduled, for each built-in tool.
pub fn tool_arguments(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut buffer = ArgumentsBuffer::default();
    for fragment in text.split_inclusive(['"', ',', '}']) {
        buffer.push(fragment);
        let _ = buffer.is_complete_object();
    }
    let arguments = buffer.into_text();
    let registry = Registry::core();
    for name in registry.names().chain(["no_such_tool"]) {
        let _ = registry.prepare(name, &arguments);
    }
}

/// Nothing is tracked; classification must not care for safety.
struct NothingTracked;

impl TrackedFiles for NothingTracked {
    fn is_tracked(&self, _path: &Path) -> bool {
        false
    }
}

/// Compiling the default protected-path globs costs far more than classifying one
/// command; a fuzzer that did it per input would spend its time there.
static PROTECTED: LazyLock<ProtectedPaths> = LazyLock::new(ProtectedPaths::default);

pub fn shell_command(data: &[u8]) {
    let command = String::from_utf8_lossy(data);
    let context = CommandContext {
        root: Path::new("/repo"),
        cwd: Path::new("/repo/src"),
        tracked: &NothingTracked,
        protected: &PROTECTED,
    };
    let _ = classify(&command, &context);
}

/// A change (before and after split at the first NUL, before missing if the input
/// starts with one) and a mask of hunks to accept: all gives after, none gives before,
/// any subset applies.
pub fn diff_apply(data: &[u8]) {
    let (mask, rest) = match data.split_first() {
        Some((&mask, rest)) => (mask, rest),
        None => (0, data),
    };
    let text = String::from_utf8_lossy(rest);
    let (before, after) = match text.split_once('\0') {
        Some(("", after)) => (None, after),
        Some((before, after)) => (Some(before), after),
        None => (Some(text.as_ref()), ""),
    };
    let all: Vec<HunkId> = diff::hunks(before, after)
        .into_iter()
        .map(|hunk| hunk.id)
        .collect();
    let chosen: Vec<HunkId> = all
        .iter()
        .enumerate()
        .filter(|(i, _)| mask.rotate_right(*i as u32 % 8) & 1 == 1)
        .map(|(_, id)| id.clone())
        .collect();
    let applied = |ids: &[HunkId]| match diff::apply(before, after, ids) {
        Ok(applied) => applied.text,
        Err(error) => panic!("the change's own hunks were refused: {error}"),
    };
    assert_eq!(applied(&all).as_deref(), Some(after));
    assert_eq!(applied(&[]).as_deref(), before);
    let _ = applied(&chosen);
    let _ = diff::unified("f", before, after);
}

pub fn markdown(data: &[u8]) {
    let source = String::from_utf8_lossy(data);
    let _ = render_markdown(&source, &Theme::new(true));
}

pub fn keymap(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = Keymap::with_overrides(Path::new("keymap.toml"), &text);
}

pub fn config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = crate::config::parse_file(Path::new("config.toml"), &text);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each entry point takes the inputs the seed corpora start from, and edge cases.
    #[test]
    fn every_entry_point_takes_seeds_and_edge_cases() {
        let inputs: &[&[u8]] = &[
            b"",
            b"\x00",
            b"\xff\xfe",
            b"\x05event: message_start\ndata: {\"type\":\"message_start\"}\r\n\r\n",
            b"\x03data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n",
            b"\x07event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\n",
            b"{\"path\": \"src/main.rs\", \"offset\": 3}",
            b"rm -rf $(echo /) && ls | xargs cat > out.txt",
            b"\x05a\nb\nc\n\x00a\nB\nc\nd",
            b"\x01\x00new file\n",
            b"# Title\n\n```rust\nfn main() {}\n```\n- item *em* `code`\n",
            b"[global]\n\"ctrl-x\" = \"quit\"\n",
            b"provider = \"anthropic\"\nmodel = 3\n",
        ];
        for input in inputs {
            sse(input);
            anthropic_stream(input);
            openai_chat_stream(input);
            openai_responses_stream(input);
            tool_arguments(input);
            shell_command(input);
            diff_apply(input);
            markdown(input);
            keymap(input);
            config(input);
        }
    }

    #[test]
    fn a_split_body_is_checked_against_the_whole() {
        let input = b"\x10data: {\"choices\":[{\"delta\":{\"content\":\"h\xc3\xa9\"}}]}\n\n";
        let (at, body) = split_point(input);
        assert_eq!(at, 16);
        assert_eq!(body.len(), input.len() - 1);
        openai_chat_stream(input);
    }
}
