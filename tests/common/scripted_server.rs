//! The scripted model server: the "model" every integration test talks to.
//!
//! Owns: a real HTTP server on 127.0.0.1 (random port) that answers
//! `POST /v1/messages` (Anthropic), `POST /v1/chat/completions` (OpenAI chat) and
//! `POST /v1/responses` (OpenAI Responses) with the
//! turns of a [`Script`] (format: see [`duet::provider::replay::script`]), in the providers'
//! documented wire formats; the record of every request; the reasoning items it sent
//! on the Responses wire (which must come back verbatim); when it received each request
//! and streamed its answer ([`RequestTiming`]); and the violations it saw.
//! Does not own: what a test asserts — it records and checks, the test decides.
//! Invariant: the N-th accepted model request (either wire) is answered by turn N.
//! A request the real API would reject (see [`validate`]), a request after the last
//! turn, and a request to any other path are each recorded as a violation and answered
//! with an error in the provider's format; rejected requests consume no turn.
//!
//! Peer mode ([`ScriptedServer::start_for_peers`], for `bench/peers`) plays the same
//! script to another agent: each turn's duet tool calls are mapped to the tools the
//! request offers ([`peers`]), and side requests (no tools offered, or not the tools of a
//! known agent, as in a title request; token counting; `HEAD /` and other probes) get a
//! benign answer without consuming a turn; they are
//! recorded ([`RecordedRequest::side`]) but not validated, since they are not part of
//! the task's conversation. The relaxed checks of peer mode are [`validate::Mode::Peer`].
//!
//! The server runs on its own thread and tokio runtime, so it keeps streaming while the
//! test blocks (on a child process, say) and its pauses take real time even when the
//! test's runtime has paused time.
//!
//! ```ignore
//! let server = ScriptedServer::start(Script::load("read_three_files")).await;
//! // ... point duet at server.base_url(wire) and run it ...
//! server.wait_for_gate("before-third").await;
//! server.release("before-third");
//! assert_eq!(server.requests().len(), 2);
//! server.assert_no_violations();
//! ```

pub mod peers;
mod render;
pub mod validate;

use std::collections::{BTreeMap, HashSet};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, post};
use axum::serve::ListenerExt;
pub use duet::provider::Wire;
use serde_json::Value;
use tokio::sync::{oneshot, watch};

use crate::common::script::{Script, StatusTurn, StreamTurn, Turn};
use render::{Emit, ReplyContext};

/// How long [`ScriptedServer::wait_for_gate`] waits before failing the test.
const GATE_WAIT: Duration = Duration::from_secs(10);
/// Time given to the HTTP layer to write out what precedes a gate or a cut, so a
/// reached gate means the earlier bytes are on the socket, and a cut comes mid-body.
const FLUSH_GRACE: Duration = Duration::from_millis(20);
/// The real Anthropic API accepts request bodies up to 32 MB.
const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

/// A running scripted server; shuts down when dropped.
pub struct ScriptedServer {
    address: SocketAddr,
    shared: Arc<Shared>,
    runtime: tokio::runtime::Handle,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// When the server received one model request and streamed its answer. Wall-clock
/// times, so they line up with other processes' logs (the benchmarks' use).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestTiming {
    /// 1-based, as in [`ScriptedServer::requests`].
    pub request: usize,
    pub received: SystemTime,
    /// When the first byte of a streamed answer was handed to the connection; `None`
    /// for an answer that is not a stream (an HTTP error) or has no bytes yet.
    pub first_byte_sent: Option<SystemTime>,
    /// When the stream ended (its last byte handed over, or the scripted cut).
    pub last_byte_sent: Option<SystemTime>,
}

/// One request as the server received it.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedRequest {
    pub wire: Wire,
    pub path: String,
    /// Header names are lowercase; repeated headers are joined with ", ".
    pub headers: BTreeMap<String, String>,
    /// `Value::Null` when the body was not JSON (which is also a violation).
    pub body: Value,
    /// Size of the body as received, in bytes.
    pub bytes: usize,
    /// Peer mode: why this was a side request, answered without consuming a turn
    /// (`None` for a step of the script).
    pub side: Option<&'static str>,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }

    /// How many tools the request offers the model.
    pub fn tool_count(&self) -> usize {
        self.body
            .get("tools")
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
    }
}

impl ScriptedServer {
    /// Starts a server that answers with `script`'s turns, on a free port.
    pub async fn start(script: Script) -> ScriptedServer {
        Self::start_on(script, 0).await
    }

    /// Starts a server that answers with `script`'s turns on 127.0.0.1:`port` (0: any
    /// free port).
    pub async fn start_on(script: Script, port: u16) -> ScriptedServer {
        Self::launch(Shared::new(script, None), port).await
    }

    /// Starts a server in peer mode (see the module doc) on 127.0.0.1:`port` (0: any
    /// free port): `workdir` is the agent's working directory, against which relative
    /// paths of the script resolve for agents that want absolute ones.
    pub async fn start_for_peers(script: Script, port: u16, workdir: PathBuf) -> ScriptedServer {
        Self::launch(Shared::new(script, Some(workdir)), port).await
    }

    async fn launch(shared: Shared, port: u16) -> ScriptedServer {
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port))
            .expect("bind the scripted server to 127.0.0.1");
        listener
            .set_nonblocking(true)
            .expect("make the scripted server's listener non-blocking");
        let address = listener.local_addr().expect("scripted server address");
        let shared = Arc::new(shared);
        let (ready_tx, ready_rx) = oneshot::channel();
        let (shutdown_tx, shutdown_rx) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name(format!("scripted-server-{}", address.port()))
            .spawn({
                let shared = Arc::clone(&shared);
                move || serve(listener, shared, ready_tx, shutdown_rx)
            })
            .expect("spawn the scripted server thread");
        let runtime = ready_rx
            .await
            .expect("the scripted server thread failed to start");
        ScriptedServer {
            address,
            shared,
            runtime,
            shutdown: Some(shutdown_tx),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`, as the Anthropic SDK takes it (clients POST
    /// `{base}/v1/messages`).
    pub fn anthropic_base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// `http://127.0.0.1:PORT/v1`, as the OpenAI SDK takes it (clients POST
    /// `{base}/chat/completions`).
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    /// The base URL for `wire`, for tests that run the same scenario on every wire.
    /// Both OpenAI wires share the SDK's base (`{base}/responses` for Responses).
    pub fn base_url(&self, wire: Wire) -> String {
        match wire {
            Wire::Anthropic => self.anthropic_base_url(),
            Wire::OpenAiChat | Wire::OpenAiResponses => self.openai_base_url(),
        }
    }

    /// Every request to a model endpoint so far, in arrival order (rejected ones too).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.log().requests.clone()
    }

    /// When each request so far arrived and its answer was streamed, in arrival order.
    pub fn timings(&self) -> Vec<RequestTiming> {
        self.shared.log().timings.clone()
    }

    /// Peer mode: the requests to other paths than the model endpoints (`HEAD /`,
    /// `GET /v1/models`, ...), answered benignly, as (method and path, when received).
    pub fn probes(&self) -> Vec<(String, SystemTime)> {
        self.shared.log().probes.clone()
    }

    /// Everything the server objected to so far, each naming the request it concerns.
    pub fn violations(&self) -> Vec<String> {
        self.shared.log().violations.clone()
    }

    /// Fails the test, listing them, if the server saw any violation.
    #[track_caller]
    pub fn assert_no_violations(&self) {
        let violations = self.violations();
        assert!(
            violations.is_empty(),
            "the scripted server saw {} violation(s):\n  {}",
            violations.len(),
            violations.join("\n  ")
        );
    }

    /// Opens gate `gate`: a stream waiting there continues, and one that reaches it
    /// later passes straight through. Gates stay open.
    pub fn release(&self, gate: &str) {
        self.shared.gates.send_modify(|board| {
            board.released.insert(gate.to_owned());
        });
    }

    /// Resolves once a stream has reached gate `gate` (everything before it has been
    /// written to the socket); fails the test if that takes more than 10 s. Await it.
    #[track_caller]
    pub fn wait_for_gate(&self, gate: &str) -> impl Future<Output = ()> + Send + 'static {
        let mut board = self.shared.gates.subscribe();
        let name = gate.to_owned();
        let shared = Arc::clone(&self.shared);
        let caller = std::panic::Location::caller();
        // The deadline runs on the server's runtime: real time, whatever the test's
        // runtime does with its clock.
        let waited = self.runtime.spawn(async move {
            let reached = board.wait_for(|board| board.reached.contains(&name));
            tokio::time::timeout(GATE_WAIT, reached).await.is_ok()
        });
        let gate = gate.to_owned();
        async move {
            match waited.await {
                Ok(true) => {}
                Ok(false) => {
                    let log = shared.log();
                    panic!(
                        "{caller}: the scripted server did not reach gate `{gate}` within {GATE_WAIT:?}; \
                         requests so far: {}, violations: {:?}",
                        log.requests.len(),
                        log.violations
                    )
                }
                Err(err) => panic!(
                    "{caller}: the scripted server stopped while waiting for gate `{gate}`: {err}"
                ),
            }
        }
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            // Dropping the server's runtime ends in-flight streams, so this is quick.
            let _ = thread.join();
        }
    }
}

/// Runs the server on this thread's own runtime until `shutdown` fires.
fn serve(
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
    ready: oneshot::Sender<tokio::runtime::Handle>,
    shutdown: oneshot::Receiver<()>,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("scripted server: cannot build its runtime: {err}");
            return;
        }
    };
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::from_std(listener) {
            Ok(listener) => listener.tap_io(|tcp| {
                // Small SSE events must leave at once, not wait for Nagle.
                let _ = tcp.set_nodelay(true);
            }),
            Err(err) => {
                eprintln!("scripted server: cannot use its listener: {err}");
                return;
            }
        };
        let _ = ready.send(tokio::runtime::Handle::current());
        let app = router(shared);
        tokio::select! {
            result = axum::serve(listener, app).into_future() => {
                if let Err(err) = result {
                    eprintln!("scripted server stopped: {err}");
                }
            }
            _ = shutdown => {}
        }
    });
}

fn router(shared: Arc<Shared>) -> Router {
    let models = Router::new()
        .route("/v1/messages", post(anthropic))
        .route("/v1/chat/completions", post(openai))
        .route("/v1/responses", post(openai_responses));
    let router = if shared.peer_workdir.is_some() {
        models
            .route("/v1/messages/count_tokens", post(count_tokens))
            .fallback(any(probe))
            .method_not_allowed_fallback(probe)
    } else {
        models
            .fallback(unexpected)
            .method_not_allowed_fallback(unexpected)
    };
    router
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(shared)
}

/// State shared by the test's handle and the request handlers.
struct Shared {
    script: Script,
    /// Peer mode: the agent's working directory (see [`ScriptedServer::start_for_peers`]).
    peer_workdir: Option<PathBuf>,
    next_turn: AtomicUsize,
    log: Mutex<Log>,
    gates: watch::Sender<GateBoard>,
    reasoning: Mutex<validate::ReasoningLedger>,
}

#[derive(Default)]
struct Log {
    requests: Vec<RecordedRequest>,
    /// One per request, in the same order.
    timings: Vec<RequestTiming>,
    violations: Vec<String>,
    /// Peer mode: requests to other paths, answered benignly.
    probes: Vec<(String, SystemTime)>,
}

#[derive(Default)]
struct GateBoard {
    reached: HashSet<String>,
    released: HashSet<String>,
}

impl Shared {
    fn new(script: Script, peer_workdir: Option<PathBuf>) -> Self {
        Self {
            script,
            peer_workdir,
            next_turn: AtomicUsize::new(0),
            log: Mutex::new(Log::default()),
            gates: watch::Sender::new(GateBoard::default()),
            reasoning: Mutex::new(validate::ReasoningLedger::default()),
        }
    }

    /// The log survives a panicking test thread: its content is still the truth.
    fn log(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records `request`, received at `received`, and returns its 1-based number.
    fn record(&self, request: RecordedRequest, received: SystemTime) -> usize {
        let mut log = self.log();
        log.requests.push(request);
        let number = log.requests.len();
        log.timings.push(RequestTiming {
            request: number,
            received,
            first_byte_sent: None,
            last_byte_sent: None,
        });
        number
    }

    /// Notes that request `number`'s stream sent a byte (`ended`: its last) just now.
    fn mark_sent(&self, number: usize, ended: bool) {
        let now = SystemTime::now();
        let mut log = self.log();
        let Some(timing) = log.timings.get_mut(number - 1) else {
            return;
        };
        timing.first_byte_sent.get_or_insert(now);
        if ended {
            timing.last_byte_sent = Some(now);
        }
    }

    fn reasoning(&self) -> MutexGuard<'_, validate::ReasoningLedger> {
        self.reasoning
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn violation(&self, what: String) {
        self.log().violations.push(what);
    }

    /// The next turn and its 1-based number, or `None` once the script is exhausted.
    fn take_turn(&self) -> (usize, Option<&Turn>) {
        let index = self.next_turn.fetch_add(1, Ordering::SeqCst);
        (index + 1, self.script.turns().get(index))
    }

    async fn pass_gate(&self, name: &str) {
        tokio::time::sleep(FLUSH_GRACE).await;
        self.gates.send_modify(|board| {
            board.reached.insert(name.to_owned());
        });
        let mut board = self.gates.subscribe();
        // The sender lives in `self`, so this only ends when the gate is released.
        let _ = board.wait_for(|board| board.released.contains(name)).await;
    }
}

async fn anthropic(
    state: State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(Wire::Anthropic, state, uri, headers, body)
}

async fn openai(state: State<Arc<Shared>>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    answer(Wire::OpenAiChat, state, uri, headers, body)
}

async fn openai_responses(
    state: State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(Wire::OpenAiResponses, state, uri, headers, body)
}

/// Records, checks and answers one model request.
fn answer(
    wire: Wire,
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let received = SystemTime::now();
    let (json, mut problems) = match serde_json::from_slice::<Value>(&body) {
        Ok(json) => (json, Vec::new()),
        Err(err) => (Value::Null, vec![format!("the body is not JSON: {err}")]),
    };
    // Peer mode: a step of the task (in the dialect of the tools offered) or a side
    // request; known before a turn is taken, so a side request consumes none.
    let peer = shared
        .peer_workdir
        .as_ref()
        .map(|workdir| (peers::classify(uri.path(), &json), workdir));
    let side = match &peer {
        Some((peers::Request::Side(why), _)) => Some(*why),
        _ => None,
    };
    let mode = match peer {
        Some(_) => validate::Mode::Peer,
        None => validate::Mode::Duet,
    };
    if side.is_none() {
        problems.extend(validate::headers(wire, &headers));
        if !json.is_null() {
            problems.extend(validate::body(wire, &json, mode));
        }
        if wire == Wire::OpenAiResponses {
            problems.extend(shared.reasoning().check(&json));
        }
    }
    let number = shared.record(
        RecordedRequest {
            wire,
            path: uri.path().to_owned(),
            headers: header_map(&headers),
            body: json.clone(),
            bytes: body.len(),
            side,
        },
        received,
    );
    let label = format!("request {number} ({wire} POST {})", uri.path());
    if side.is_some() {
        return side_response(shared, number, wire, &json);
    }
    if !problems.is_empty() {
        for problem in &problems {
            shared.violation(format!("{label}: {problem}"));
        }
        return error_response(wire, StatusCode::BAD_REQUEST, &problems.join("; "), None);
    }
    match shared.take_turn() {
        (_, Some(Turn::Status(turn))) => status_response(wire, turn),
        (turn_number, Some(Turn::Stream(turn))) => {
            let context = reply_context(turn_number, &json);
            let turn = match &peer {
                None | Some((peers::Request::Side(_), _)) => turn.clone(),
                Some((peers::Request::Step(dialect), workdir)) => {
                    match peers::map_turn(turn, dialect, workdir) {
                        Ok(mapped) => mapped,
                        Err(err) => {
                            // The script asks for what the peer cannot do: a broken bench.
                            shared.violation(format!("{label}: {err}"));
                            return error_response(
                                wire,
                                StatusCode::BAD_REQUEST,
                                &err.to_string(),
                                None,
                            );
                        }
                    }
                }
            };
            if wire == Wire::OpenAiResponses {
                shared
                    .reasoning()
                    .record(&render::responses_output(&turn, &context));
            }
            stream_response(Arc::clone(&shared), number, wire, &turn, &context)
        }
        (turn_number, None) => {
            let message = format!(
                "scripted server: the script is exhausted (it has {} turn(s); this request would need turn {turn_number})",
                shared.script.turns().len()
            );
            shared.violation(format!("{label}: {message}"));
            error_response(wire, StatusCode::BAD_REQUEST, &message, None)
        }
    }
}

fn reply_context(turn_number: usize, request: &Value) -> ReplyContext {
    ReplyContext {
        turn_number,
        model: request["model"].as_str().unwrap_or_default().to_owned(),
        include_usage: request["stream_options"]["include_usage"] == Value::Bool(true),
        created: unix_seconds(),
        custom_tools: peers::offered_tools(request)
            .into_iter()
            .filter(|tool| tool.custom)
            .map(|tool| tool.name)
            .collect(),
    }
}

/// Peer mode: a short text answer to a side request, streamed if it asked for a stream.
fn side_response(shared: Arc<Shared>, number: usize, wire: Wire, request: &Value) -> Response {
    let turn = peers::text_turn(SIDE_ANSWER);
    // Turn 0: ids that no step of the script uses.
    let context = reply_context(0, request);
    if request["stream"] == Value::Bool(true) {
        stream_response(shared, number, wire, &turn, &context)
    } else {
        axum::Json(render::complete_text(wire, SIDE_ANSWER, &context)).into_response()
    }
}

/// What a side request is told (a title generator gets a usable title out of it).
const SIDE_ANSWER: &str = "Scripted task";

/// Peer mode: counts tokens of a request without consuming a turn.
async fn count_tokens(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let json = serde_json::from_slice::<Value>(&body).unwrap_or(Value::Null);
    shared.record(
        RecordedRequest {
            wire: Wire::Anthropic,
            path: uri.path().to_owned(),
            headers: header_map(&headers),
            body: json.clone(),
            bytes: body.len(),
            side: Some("token count"),
        },
        SystemTime::now(),
    );
    axum::Json(peers::count_tokens_body(&json)).into_response()
}

/// Peer mode: any other request (`HEAD /`, `GET /v1/models`, ...) is answered with an
/// empty success and noted.
async fn probe(State(shared): State<Arc<Shared>>, method: Method, uri: Uri) -> Response {
    shared
        .log()
        .probes
        .push((format!("{method} {uri}"), SystemTime::now()));
    let empty_list = serde_json::json!({ "object": "list", "data": [] });
    (StatusCode::OK, axum::Json(empty_list)).into_response()
}

async fn unexpected(State(shared): State<Arc<Shared>>, method: Method, uri: Uri) -> StatusCode {
    shared.violation(format!(
        "unexpected request {method} {uri}: the model endpoints are POST /v1/messages, POST /v1/chat/completions and POST /v1/responses"
    ));
    StatusCode::NOT_FOUND
}

fn header_map(headers: &HeaderMap) -> BTreeMap<String, String> {
    let mut map: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in headers {
        let value = String::from_utf8_lossy(value.as_bytes());
        map.entry(name.as_str().to_owned())
            .and_modify(|joined| {
                joined.push_str(", ");
                joined.push_str(&value);
            })
            .or_insert_with(|| value.into_owned());
    }
    map
}

fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

fn status_response(wire: Wire, turn: &StatusTurn) -> Response {
    let status = StatusCode::from_u16(turn.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let default_message =
        status
            .canonical_reason()
            .map(str::to_owned)
            .unwrap_or_else(|| match turn.status {
                529 => "Overloaded".to_owned(),
                other => format!("scripted HTTP {other}"),
            });
    let message = turn.message.clone().unwrap_or(default_message);
    error_response(wire, status, &message, turn.retry_after)
}

fn error_response(
    wire: Wire,
    status: StatusCode,
    message: &str,
    retry_after: Option<u64>,
) -> Response {
    let body = render::error_body(wire, status.as_u16(), message);
    let mut response = (status, axum::Json(body)).into_response();
    if let Some(seconds) = retry_after {
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// Streams request `number`'s answer, noting when its bytes leave.
fn stream_response(
    shared: Arc<Shared>,
    number: usize,
    wire: Wire,
    turn: &StreamTurn,
    context: &ReplyContext,
) -> Response {
    let emits = render::stream(wire, turn, context).into_iter();
    let body = futures::stream::unfold((emits, shared), move |(mut emits, shared)| async move {
        loop {
            // The body is polled for its next piece once the previous one is handed
            // to the connection, so the end is noted after the last byte left.
            let Some(emit) = emits.next() else {
                shared.mark_sent(number, true);
                return None;
            };
            match emit {
                Emit::Send(bytes) => {
                    shared.mark_sent(number, false);
                    return Some((Ok(bytes), (emits, shared)));
                }
                Emit::Pause(duration) => tokio::time::sleep(duration).await,
                Emit::Gate(name) => shared.pass_gate(&name).await,
                Emit::Cut => {
                    // Let what came before reach the client, then break the connection.
                    tokio::time::sleep(FLUSH_GRACE).await;
                    shared.mark_sent(number, true);
                    let cut = std::io::Error::other("scripted cut: connection dropped");
                    return Some((Err(cut), (emits, shared)));
                }
            }
        }
    });
    (
        [
            (CONTENT_TYPE, "text/event-stream"),
            (CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(body),
    )
        .into_response()
}
