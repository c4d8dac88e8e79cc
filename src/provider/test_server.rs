//! The local HTTP server the wire clients' tests talk to, and the requests they send it.
//!
//! Owns: serving a router on 127.0.0.1 ([`serve`]); a fixture server that answers
//! each POST with the [`Reply`] its caller picks from the request body and records
//! every request it was sent ([`TestServer`]), so a test asserts on headers and body
//! after the call instead of inside a handler; the plain transport, endpoint,
//! request and blocks the three wires' tests build ([`say_hi`] sends the simplest),
//! and the HTTP error they compare.
//! Does not own: decoding recorded streams however they are chunked
//! (`stream::testing`), or any wire's own expectations (its fixture, its headers, its
//! request body): those stay in the wire's tests.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Response, StatusCode};
use axum::routing::post;
use serde_json::Value;

use super::http::{DEFAULT_IDLE_TIMEOUT, Transport};
use super::stream::testing::{Outcome, collect};
use super::{
    Block, Endpoint, Message, ModelClient, ModelRequest, ProviderError, Role, ToolCall, ToolResult,
    Wire,
};

/// Serves `router` on a free port of 127.0.0.1 until the test's runtime ends.
pub async fn serve(router: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    addr
}

/// One request the [`TestServer`] was sent.
#[derive(Clone, Debug)]
pub struct Sent {
    pub headers: HeaderMap,
    /// The body, parsed as JSON (every wire sends JSON).
    pub body: Value,
}

impl Sent {
    /// Asserts that each named header was sent with the given value.
    pub fn assert_headers(&self, expected: &[(&str, &str)]) {
        for (name, value) in expected {
            let sent = self.headers.get(*name).map(|sent| sent.to_str().unwrap());
            assert_eq!(sent, Some(*value), "header {name}");
        }
    }
}

/// What the [`TestServer`] answers one request with.
#[derive(Clone, Debug)]
pub struct Reply {
    status: StatusCode,
    headers: Vec<(&'static str, &'static str)>,
    body: String,
}

impl Reply {
    /// A successful event stream: the recorded `fixture`, as `text/event-stream`.
    pub fn stream(fixture: &str) -> Self {
        Self {
            status: StatusCode::OK,
            headers: vec![("content-type", "text/event-stream")],
            body: fixture.to_owned(),
        }
    }

    /// A refusal: `status` with the API's error `body`.
    pub fn error(status: StatusCode, body: impl Into<String>) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// The same reply with one more header.
    pub fn with_header(mut self, name: &'static str, value: &'static str) -> Self {
        self.headers.push((name, value));
        self
    }

    fn into_response(self) -> Response<Body> {
        let mut response = Response::builder().status(self.status);
        for (name, value) in self.headers {
            response = response.header(name, value);
        }
        response.body(Body::from(self.body)).unwrap()
    }
}

/// A server that answers POSTs to one path with the [`Reply`] its caller picks from the
/// request body, and records every request, in order.
pub struct TestServer {
    addr: SocketAddr,
    sent: Arc<Mutex<Vec<Sent>>>,
}

impl TestServer {
    /// Starts serving POSTs to `path`, each answered with `reply(&body)`.
    pub async fn start(
        path: &str,
        reply: impl Fn(&Value) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let sent = Arc::new(Mutex::new(Vec::new()));
        let reply = Arc::new(reply);
        let recorded = sent.clone();
        let router = Router::new().route(
            path,
            post(move |headers: HeaderMap, body: String| async move {
                let body: Value = serde_json::from_str(&body).unwrap();
                let answer = reply(&body);
                recorded.lock().unwrap().push(Sent { headers, body });
                answer.into_response()
            }),
        );
        Self {
            addr: serve(router).await,
            sent,
        }
    }

    /// The server's URL with `path` after the authority (`/v1`, `/v1/`, `/`).
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Every request so far, in the order they came.
    pub fn sent(&self) -> Vec<Sent> {
        self.sent.lock().unwrap().clone()
    }

    /// The one request so far; panics unless there was exactly one.
    pub fn only_request(&self) -> Sent {
        let sent = self.sent();
        assert_eq!(sent.len(), 1, "{sent:?}");
        sent.into_iter().next().unwrap()
    }
}

/// Sends `client` a one-message request ("hi") and drains the stream it answers with;
/// an error before the stream (connection, HTTP status) comes back as the error.
pub async fn say_hi(client: &dyn ModelClient) -> Result<Outcome, ProviderError> {
    let stream = client
        .stream(&request(vec![Message::user_text("hi")]))
        .await?;
    Ok(collect(stream).await)
}

/// A transport with the default idle timeout.
pub fn transport() -> Transport {
    Transport::new(DEFAULT_IDLE_TIMEOUT)
}

/// The endpoint of `model` on `wire` at `base_url`.
pub fn endpoint(wire: Wire, base_url: String, api_key: Option<&str>, model: &str) -> Endpoint {
    Endpoint {
        wire,
        base_url,
        api_key: api_key.map(str::to_owned),
        model: model.into(),
    }
}

/// A request for `messages` with no system prompt, tools or volatile context, and a
/// 2048-token limit.
pub fn request(messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        system: Vec::new(),
        tools: Vec::new(),
        messages,
        volatile_context: None,
        max_tokens: 2048,
    }
}

/// A message of `role` with `content`.
pub fn message(role: Role, content: Vec<Block>) -> Message {
    Message { role, content }
}

/// A text block.
pub fn text(text: &str) -> Block {
    Block::Text { text: text.into() }
}

/// A tool call block.
pub fn call(id: &str, name: &str, arguments: &str) -> Block {
    Block::ToolCall(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    })
}

/// A tool result block answering `call_id`.
pub fn result(call_id: &str, content: &str, is_error: bool) -> Block {
    Block::ToolResult(ToolResult {
        call_id: call_id.into(),
        content: content.into(),
        is_error,
    })
}

/// The error a refused request comes back as, with `status` and the API's `message`.
pub fn http_error(status: u16, message: &str) -> ProviderError {
    ProviderError::Http {
        url: "u".into(),
        status,
        message: message.into(),
        retry_after: None,
    }
}
