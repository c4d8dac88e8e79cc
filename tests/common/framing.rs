//! The ways real servers end a stream differently from the wire's rules, applied to a
//! captured body: without the terminal event, and with the last event unterminated.
//! Shared by the decoders' replay (`src/provider/captures.rs`, which includes this
//! file) and the replay through `duet exec` (`tests/suite/real_servers.rs`).

/// `body` of `wire` without its terminal event, ending cleanly where it began, as
/// servers that never send it end theirs; `None` on a wire whose terminal event is the
/// only place the answer says it finished (Responses), or without one.
pub fn without_terminal_event(wire: &str, body: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(body).expect("a capture is UTF-8");
    let start = match wire {
        "openai-chat" => text.rfind("data: [DONE]")?,
        "anthropic" => text
            .rfind("event: message_stop")
            .or_else(|| text.rfind("data: {\"type\":\"message_stop\""))?,
        _ => return None,
    };
    Some(body[..start].to_vec())
}

/// `body` with its last event left unterminated (no blank line after it).
pub fn unterminated(body: &[u8]) -> Vec<u8> {
    let end = body
        .iter()
        .rposition(|byte| !matches!(byte, b'\n' | b'\r'))
        .map_or(0, |last| last + 1);
    body[..end].to_vec()
}
