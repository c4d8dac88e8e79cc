use std::time::Duration;

/// Why a model call failed. Whether to retry is a `match` on these variants, never
/// string parsing (see [`ProviderError::is_transient`] in `retry.rs`).
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The request never got an HTTP response (DNS, refused connection, TLS, timeout).
    #[error("could not reach {url}: {detail}")]
    Connect { url: String, detail: String },
    /// The server answered with a non-success status before streaming.
    #[error("{url} answered HTTP {status}: {message}")]
    Http {
        url: String,
        status: u16,
        message: String,
        retry_after: Option<Duration>,
    },
    /// The provider sent an `error` event in the middle of the stream.
    #[error("the provider reported an error mid-stream: {kind}: {message}")]
    Api { kind: String, message: String },
    /// Bytes that do not follow the wire format (bad JSON, unknown block index, ...).
    #[error("the provider sent malformed data: {0}")]
    Malformed(String),
    /// The connection closed before the stream's terminal event.
    #[error("the response stream ended before the model finished ({0})")]
    Truncated(String),
    /// Reading the body failed after streaming started.
    #[error("network error while streaming: {0}")]
    Network(String),
    /// No bytes arrived for too long.
    #[error("no data from the provider for {} s", .0.as_secs())]
    Idle(Duration),
    /// The replayed session cannot answer this request (it is past the script's last
    /// turn, or breaks the tool-call/result pairing a real API would reject).
    #[error("the replayed model cannot answer: {0}")]
    Replay(String),
    /// The client could not be built or the request could not be encoded.
    #[error("invalid provider setup: {0}")]
    Setup(String),
}
