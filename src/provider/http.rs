//! The HTTP layer shared by the wire clients: the configured `reqwest` client, the
//! streaming POST, and the mapping of transport failures to [`ProviderError`]s.
//!
//! Owns: TLS setup, timeouts (including the idle watchdog), the user agent, turning
//! non-2xx answers into [`ProviderError::Http`] (with the provider's own message), and
//! classifying body read errors.
//! Does not own: request bodies, headers specific to a wire, or decoding the stream.
//! Invariant: a response handed back by [`Transport::post_streaming`] has a 2xx status.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::channel::oneshot;
use futures::future::{BoxFuture, FutureExt, Shared};
use futures::{Stream, StreamExt};
use reqwest::header::{self, HeaderMap, HeaderValue};
use serde::Serialize;

use super::stream::{WireDecoder, decode_body};
use super::{EventStream, ProviderError};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a response may go without sending a byte unless configured. Models can
/// think silently for a while, but providers send pings, so this long a silence means a
/// dead connection.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

const USER_AGENT: &str = concat!("duet/", env!("CARGO_PKG_VERSION"));

/// How much of an error body is read, and how much of raw (non-JSON) text is kept.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;
const MAX_ERROR_MESSAGE_CHARS: usize = 500;

/// The HTTP client every model client shares, and the idle watchdog it enforces: a
/// response (headers or body) silent for `idle_timeout` fails with
/// [`ProviderError::Idle`].
///
/// Building the client loads the system's trust store (every certificate under
/// `/etc/ssl/certs`), which takes longer than drawing duet's first frame. So it is
/// built on a thread of its own while duet starts, and the first request waits for it
/// (by then it is long ready: a person is typing).
#[derive(Clone)]
pub struct Transport {
    http: Shared<BoxFuture<'static, Result<reqwest::Client, String>>>,
    idle_timeout: Duration,
    /// The size of the last request body, to size the next one.
    last_body_bytes: Arc<AtomicUsize>,
}

/// Room for what a step adds to the next request before its buffer must grow.
const BODY_HEADROOM: usize = 64 * 1024;

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport")
            .field("ready", &self.http.peek().is_some())
            .field("idle_timeout", &self.idle_timeout)
            .finish()
    }
}

impl Transport {
    /// Starts building the client; a failure to build it is the first request's error.
    pub fn new(idle_timeout: Duration) -> Self {
        let (built_tx, built_rx) = oneshot::channel();
        let build = move || {
            let _ = built_tx.send(build_client(idle_timeout));
        };
        if let Err(error) = std::thread::Builder::new()
            .name("duet-http-setup".into())
            .spawn(build)
        {
            tracing::warn!("cannot start the HTTP setup thread: {error}");
        }
        let http = built_rx
            .map(|built| {
                built.unwrap_or_else(|_| {
                    Err("the HTTP client could not be set up (no thread)".into())
                })
            })
            .boxed()
            .shared();
        Self {
            http,
            idle_timeout,
            last_body_bytes: Arc::default(),
        }
    }

    async fn client(&self) -> Result<reqwest::Client, ProviderError> {
        self.http.clone().await.map_err(ProviderError::Setup)
    }

    /// POSTs `body` as JSON to `url` and decodes the streamed answer with `decoder`.
    pub async fn stream_events<D: WireDecoder>(
        &self,
        url: &str,
        headers: HeaderMap,
        body: &impl Serialize,
        decoder: D,
    ) -> Result<EventStream, ProviderError> {
        // Sized from the last request (each is the last one plus a step): one large
        // block per request instead of a doubling chain of them, which glibc's malloc
        // would keep resident in its per-thread heaps as the session grows.
        let mut encoded =
            Vec::with_capacity(self.last_body_bytes.load(Ordering::Relaxed) + BODY_HEADROOM);
        serde_json::to_writer(&mut encoded, body)
            .map_err(|err| ProviderError::Setup(format!("cannot encode the request: {err}")))?;
        self.last_body_bytes.store(encoded.len(), Ordering::Relaxed);
        let body = encoded;
        let response = self.post_streaming(url, headers, body).await?;
        Ok(decode_body(self.body_stream(response), decoder))
    }

    /// POSTs `body` (JSON) to `url` and returns the response once its status is known
    /// to be a success. `headers` come on top of the JSON and SSE content headers.
    pub async fn post_streaming(
        &self,
        url: &str,
        mut headers: HeaderMap,
        body: Vec<u8>,
    ) -> Result<reqwest::Response, ProviderError> {
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        let response = self
            .client()
            .await?
            .post(url)
            .headers(headers)
            .body(body)
            .send()
            .await
            .map_err(|err| {
                // A connect timeout is a connection failure; any other timeout is the
                // server going silent before its headers.
                if err.is_timeout() && !err.is_connect() {
                    ProviderError::Idle(self.idle_timeout)
                } else {
                    ProviderError::Connect {
                        url: url.to_owned(),
                        detail: describe(err),
                    }
                }
            })?;
        if response.status().is_success() {
            return Ok(response);
        }
        Err(http_error(url, response).await)
    }

    /// The response body as a stream whose errors are already [`ProviderError`]s:
    /// [`ProviderError::Idle`] after `idle_timeout` of silence, otherwise
    /// [`ProviderError::Network`].
    pub fn body_stream(
        &self,
        response: reqwest::Response,
    ) -> impl Stream<Item = Result<Bytes, ProviderError>> + Send + 'static {
        let idle_timeout = self.idle_timeout;
        response.bytes_stream().map(move |chunk| {
            chunk.map_err(|err| {
                if err.is_timeout() {
                    ProviderError::Idle(idle_timeout)
                } else {
                    ProviderError::Network(describe(err))
                }
            })
        })
    }
}

fn build_client(idle_timeout: Duration) -> Result<reqwest::Client, String> {
    install_crypto_provider();
    reqwest::Client::builder()
        .user_agent(USER_AGENT)
        .connect_timeout(CONNECT_TIMEOUT)
        // Applies to every read, so it fires after `idle_timeout` without a byte,
        // however long the whole response takes.
        .read_timeout(idle_timeout)
        .build()
        .map_err(|err| format!("cannot build the HTTP client: {}", describe(err)))
}

/// reqwest is built without a rustls crypto provider, so the process needs a default.
fn install_crypto_provider() {
    // An error only says a provider is already installed (by an earlier call or by
    // the embedding program), which is what we need.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A header value carrying a secret (kept out of debug output).
pub fn secret_header(value: &str) -> Result<HeaderValue, ProviderError> {
    let mut value = HeaderValue::from_str(value).map_err(|_| {
        ProviderError::Setup(
            "the API key contains characters that cannot be sent in an HTTP header; check it for stray whitespace or quotes".into(),
        )
    })?;
    value.set_sensitive(true);
    Ok(value)
}

async fn http_error(url: &str, mut response: reqwest::Response) -> ProviderError {
    let status = response.status();
    let retry_after = retry_after(response.headers());
    let mut body = Vec::new();
    // A failure while reading the error body leaves us with what arrived; the status
    // is the error that matters.
    while body.len() < MAX_ERROR_BODY_BYTES {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) | Err(_) => break,
        }
    }
    ProviderError::Http {
        url: url.to_owned(),
        status: status.as_u16(),
        message: error_message(&String::from_utf8_lossy(&body), status),
        retry_after,
    }
}

/// The message to show for an error body: the provider's own message when the body is
/// one of the known JSON error shapes, else the (shortened) body text.
fn error_message(body: &str, status: reqwest::StatusCode) -> String {
    if let Some(message) = json_error_message(body) {
        return message;
    }
    let text = body.trim();
    if text.is_empty() {
        return status
            .canonical_reason()
            .unwrap_or("no error message")
            .to_owned();
    }
    truncate_chars(text, MAX_ERROR_MESSAGE_CHARS)
}

/// Reads `{"type":"error","error":{"type","message"}}` (Anthropic),
/// `{"error":{"message",...}}` (OpenAI and compatible servers) and `{"error":"..."}`
/// (some local servers).
fn json_error_message(body: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    let error = ErrorParts::of(value.get("error")?);
    error.message.or(error.kind)
}

/// The kind and message of a provider's JSON error object (the value of its `error`
/// key), in any of the shapes providers use.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ErrorParts {
    /// `type` (Anthropic, OpenAI), else `code`.
    pub kind: Option<String>,
    pub message: Option<String>,
}

impl ErrorParts {
    pub fn of(error: &serde_json::Value) -> Self {
        if let Some(message) = error.as_str() {
            return Self {
                kind: None,
                message: Some(message.to_owned()),
            };
        }
        let text = |key: &str| match error.get(key)? {
            serde_json::Value::String(text) => Some(text.clone()),
            serde_json::Value::Number(number) => Some(number.to_string()),
            _ => None,
        };
        Self {
            kind: text("type").or_else(|| text("code")),
            message: text("message"),
        }
    }
}

/// Reads `retry-after-ms` (sent by OpenAI) or `retry-after` in seconds. The HTTP-date
/// form of `retry-after` is not used by model APIs and is ignored.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let seconds = |name: &str, scale: f64| {
        let value = headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()?;
        Duration::try_from_secs_f64(value * scale).ok()
    };
    seconds("retry-after-ms", 0.001).or_else(|| seconds("retry-after", 1.0))
}

fn truncate_chars(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// The error and its causes on one line; reqwest's own message alone ("error sending
/// request") hides the reason (refused, DNS, TLS, timeout).
fn describe(err: reqwest::Error) -> String {
    // The URL is reported separately where it matters.
    let err = err.without_url();
    let mut text = String::new();
    let mut current: Option<&dyn std::error::Error> = Some(&err);
    while let Some(err) = current {
        let part = err.to_string();
        if !text.contains(&part) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&part);
        }
        current = err.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::body::Body;
    use axum::http::{Response, StatusCode};
    use axum::routing::post;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;
    use crate::provider::test_server::{Reply, TestServer, serve, transport};

    /// The body's items up to and including its first error (reqwest keeps returning
    /// errors after a timeout, so reading on would never end).
    async fn read_until_error(
        body: impl Stream<Item = Result<Bytes, ProviderError>>,
    ) -> Vec<Result<Bytes, ProviderError>> {
        let mut body = std::pin::pin!(body);
        let mut items = Vec::new();
        while let Some(item) = body.next().await {
            let failed = item.is_err();
            items.push(item);
            if failed {
                break;
            }
        }
        items
    }

    #[test]
    fn reads_the_anthropic_error_shape() {
        let body = json!({
            "type": "error",
            "error": {"type": "overloaded_error", "message": "Overloaded"}
        });
        assert_eq!(
            error_message(&body.to_string(), StatusCode::from_u16(529).unwrap()),
            "Overloaded"
        );
    }

    #[test]
    fn reads_the_openai_error_shape() {
        let body = json!({
            "error": {
                "message": "Rate limit reached for gpt-4o",
                "type": "requests",
                "param": null,
                "code": "rate_limit_exceeded"
            }
        });
        assert_eq!(
            error_message(&body.to_string(), StatusCode::TOO_MANY_REQUESTS),
            "Rate limit reached for gpt-4o"
        );
    }

    #[test]
    fn reads_a_plain_string_error_and_a_type_without_message() {
        assert_eq!(
            error_message(r#"{"error":"model 'x' not found"}"#, StatusCode::NOT_FOUND),
            "model 'x' not found"
        );
        assert_eq!(
            error_message(r#"{"error":{"type":"api_error"}}"#, StatusCode::BAD_GATEWAY),
            "api_error"
        );
    }

    #[test]
    fn falls_back_to_the_body_text_then_the_status() {
        assert_eq!(
            error_message("  <html>Bad Gateway</html>\n", StatusCode::BAD_GATEWAY),
            "<html>Bad Gateway</html>"
        );
        assert_eq!(
            error_message(r#"{"detail":"nope"}"#, StatusCode::BAD_REQUEST),
            r#"{"detail":"nope"}"#
        );
        assert_eq!(
            error_message("", StatusCode::SERVICE_UNAVAILABLE),
            "Service Unavailable"
        );
    }

    #[test]
    fn truncates_long_raw_bodies_on_a_character_boundary() {
        let body = "é".repeat(MAX_ERROR_MESSAGE_CHARS + 10);
        let message = error_message(&body, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(message, format!("{}…", "é".repeat(MAX_ERROR_MESSAGE_CHARS)));
    }

    #[test]
    fn parses_retry_after_headers() {
        let headers = |pairs: &[(&'static str, &'static str)]| {
            let mut map = HeaderMap::new();
            for (name, value) in pairs {
                map.insert(*name, HeaderValue::from_static(value));
            }
            map
        };
        assert_eq!(
            retry_after(&headers(&[("retry-after", "7")])),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            retry_after(&headers(&[
                ("retry-after", "7"),
                ("retry-after-ms", "1500")
            ])),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            retry_after(&headers(&[(
                "retry-after",
                "Wed, 21 Oct 2015 07:28:00 GMT"
            )])),
            None
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "-3")])), None);
        assert_eq!(retry_after(&headers(&[])), None);
    }

    #[tokio::test]
    async fn a_non_success_status_becomes_an_http_error() {
        let server = TestServer::start("/v1/messages", |_| {
            Reply::error(
                StatusCode::TOO_MANY_REQUESTS,
                r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your rate limit"}}"#,
            )
            .with_header("retry-after", "12")
        })
        .await;
        let url = server.url("/v1/messages");
        let err = transport()
            .post_streaming(&url, HeaderMap::new(), b"{}".to_vec())
            .await
            .unwrap_err();
        let ProviderError::Http {
            url: error_url,
            status,
            message,
            retry_after,
        } = err
        else {
            panic!("expected an HTTP error, got {err:?}");
        };
        assert_eq!(error_url, url);
        assert_eq!(status, 429);
        assert_eq!(message, "Number of requests has exceeded your rate limit");
        assert_eq!(retry_after, Some(Duration::from_secs(12)));
    }

    #[tokio::test]
    async fn sends_json_and_streams_a_successful_body() {
        let router = Router::new().route(
            "/echo",
            post(|headers: axum::http::HeaderMap, body: String| async move {
                let seen = format!(
                    "{} {} {} {}",
                    headers[header::CONTENT_TYPE].to_str().unwrap(),
                    headers[header::ACCEPT].to_str().unwrap(),
                    headers[header::USER_AGENT].to_str().unwrap(),
                    body
                );
                Response::new(Body::from(seen))
            }),
        );
        let url = format!("http://{}/echo", serve(router).await);
        let transport = transport();
        let response = transport
            .post_streaming(&url, HeaderMap::new(), b"{\"a\":1}".to_vec())
            .await
            .unwrap();
        let chunks: Vec<_> = transport.body_stream(response).collect().await;
        let body: Vec<u8> = chunks
            .into_iter()
            .flat_map(|chunk| chunk.unwrap().to_vec())
            .collect();
        assert_eq!(
            String::from_utf8(body).unwrap(),
            format!("application/json text/event-stream {USER_AGENT} {{\"a\":1}}")
        );
    }

    #[tokio::test]
    async fn an_unreachable_server_is_a_connect_error() {
        // Bind then drop a listener to get a local port nobody listens on.
        let addr = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap()
            .local_addr()
            .unwrap();
        let url = format!("http://{addr}/v1/messages");
        let err = transport()
            .post_streaming(&url, HeaderMap::new(), Vec::new())
            .await
            .unwrap_err();
        assert!(
            matches!(&err, ProviderError::Connect { url: error_url, detail } if *error_url == url && !detail.is_empty()),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn a_body_cut_mid_stream_is_a_network_error() {
        let router = Router::new().route(
            "/cut",
            post(|| async {
                let first = futures::stream::once(async {
                    Ok::<_, std::io::Error>(Bytes::from("data: first\n\n"))
                });
                // Fail only after the headers and first chunk went out.
                let failure = futures::stream::once(async {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    Err(std::io::Error::other("upstream went away"))
                });
                Response::new(Body::from_stream(first.chain(failure)))
            }),
        );
        let url = format!("http://{}/cut", serve(router).await);
        let transport = transport();
        let response = transport
            .post_streaming(&url, HeaderMap::new(), Vec::new())
            .await
            .unwrap();
        let items = read_until_error(transport.body_stream(response)).await;
        assert_eq!(items.len(), 2, "{items:?}");
        assert_eq!(items[0].as_ref().unwrap(), &Bytes::from("data: first\n\n"));
        assert!(
            matches!(&items[1], Err(ProviderError::Network(_))),
            "{:?}",
            items[1]
        );
    }

    #[tokio::test]
    async fn a_silent_body_is_an_idle_error() {
        let router = Router::new().route(
            "/stall",
            post(|| async {
                let first = futures::stream::once(async {
                    Ok::<_, std::io::Error>(Bytes::from("data: first\n\n"))
                });
                Response::new(Body::from_stream(first.chain(futures::stream::pending())))
            }),
        );
        let url = format!("http://{}/stall", serve(router).await);
        let timeout = Duration::from_millis(200);
        let transport = Transport::new(timeout);
        let response = transport
            .post_streaming(&url, HeaderMap::new(), Vec::new())
            .await
            .unwrap();
        let items = read_until_error(transport.body_stream(response)).await;
        assert_eq!(items.len(), 2, "{items:?}");
        assert!(
            matches!(items[1], Err(ProviderError::Idle(idle)) if idle == timeout),
            "{:?}",
            items[1]
        );
    }

    #[tokio::test]
    async fn a_server_silent_before_its_headers_is_idle_not_unreachable() {
        let router = Router::new().route(
            "/slow",
            post(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                "late"
            }),
        );
        let url = format!("http://{}/slow", serve(router).await);
        let timeout = Duration::from_millis(200);
        let err = Transport::new(timeout)
            .post_streaming(&url, HeaderMap::new(), Vec::new())
            .await
            .unwrap_err();
        assert!(
            matches!(err, ProviderError::Idle(idle) if idle == timeout),
            "{err:?}"
        );
    }

    #[test]
    fn rejects_api_keys_that_cannot_be_headers() {
        assert!(secret_header("sk-ant-123").unwrap().is_sensitive());
        assert!(matches!(
            secret_header("sk-ant\n123"),
            Err(ProviderError::Setup(_))
        ));
    }
}
