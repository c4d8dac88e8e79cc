//! The scripted model server as a process of its own, for the whole-process benchmarks
//! (`bench/run`) and manual runs; the integration tests start the same server in-process.
//!
//! ```text
//! cargo run --release --example scripted_server -- --script FILE [--port N] [--log FILE]
//!     [--peer-workdir DIR] [--bodies DIR]
//! ```
//!
//! `--peer-workdir DIR` serves in peer mode (for `bench/peers`): the script, written in
//! duet's tool names, is mapped to the tools each request offers (Claude Code's, Codex's)
//! for an agent working in DIR, and side requests do not consume turns (see
//! `tests/common/scripted_server.rs`).
//!
//! Owns: the command line around [`ScriptedServer`] (the module is the tests' own, included
//! here, not copied): serving one script on every wire, the stdin commands, and the log.
//! Does not own: the server's behaviour (see `tests/common/scripted_server.rs`) or the
//! script format (`tests/common/script.rs`).
//! Invariant: the first line on stdout is the base URL (`http://127.0.0.1:PORT`; Anthropic
//! clients use it as is, OpenAI clients with `/v1` appended), printed once the server
//! listens. It serves until SIGTERM or SIGINT, then writes the log, lists any violations
//! on stderr, and exits 1 if there were some.
//!
//! Stdin takes one command a line: `release GATE` opens a gate.
//!
//! The log (`--log`) has one JSON object a line per request, in arrival order:
//! `{"request": 1, "wire": "anthropic", "path": "/v1/messages", "received_us": ...,
//! "first_byte_us": ..., "last_byte_us": ..., "bytes": 1234, "tools": 6, "side": null}`
//! with Unix times in microseconds (`null` when no stream was sent), the body's size, the
//! number of tools offered, and in peer mode why a request was a side request (`null` for
//! a step). Peer mode adds a line per probe of another path:
//! `{"probe": "HEAD /", "received_us": ...}`.

// The server is test code: it may unwrap and expect like the tests (see clippy.toml).
#[allow(clippy::expect_used, clippy::unwrap_used, dead_code)]
#[path = "../tests/common"]
mod common {
    pub mod script;
    pub mod scripted_server;
}

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context;
use clap::Parser;
use serde_json::{Value, json};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use common::script::Script;
use common::scripted_server::{RecordedRequest, RequestTiming, ScriptedServer};

/// Serves a script of model turns over the Anthropic and both OpenAI wires.
#[derive(Parser)]
struct Args {
    /// The script to serve (format: tests/common/script.rs).
    #[arg(long)]
    script: PathBuf,
    /// Port on 127.0.0.1; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Where to write one JSON line of timings per request on exit.
    #[arg(long)]
    log: Option<PathBuf>,
    /// Peer mode for an agent working in this directory (see the module doc).
    #[arg(long)]
    peer_workdir: Option<PathBuf>,
    /// Where to write each request's body on exit, as `request-N.json` (to see what an
    /// agent sends).
    #[arg(long)]
    bodies: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let text = std::fs::read_to_string(&args.script)
        .with_context(|| format!("cannot read script {}", args.script.display()))?;
    let script = Script::from_toml(&text)
        .with_context(|| format!("script {} is invalid", args.script.display()))?;
    let server = match args.peer_workdir {
        Some(workdir) => ScriptedServer::start_for_peers(script, args.port, workdir).await,
        None => ScriptedServer::start_on(script, args.port).await,
    };
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", server.anthropic_base_url())?;
    stdout.flush()?;
    drop(stdout);

    serve_until_signal(&server).await?;

    if let Some(path) = &args.log {
        write_log(
            path,
            &server.requests(),
            &server.timings(),
            &server.probes(),
        )
        .with_context(|| format!("cannot write the log {}", path.display()))?;
    }
    if let Some(dir) = &args.bodies {
        write_bodies(dir, &server.requests())
            .with_context(|| format!("cannot write the bodies to {}", dir.display()))?;
    }
    let violations = server.violations();
    drop(server);
    if violations.is_empty() {
        return Ok(());
    }
    eprintln!("the scripted server saw {} violation(s):", violations.len());
    for violation in &violations {
        eprintln!("  {violation}");
    }
    std::process::exit(1);
}

/// Follows stdin's commands until SIGTERM or SIGINT.
async fn serve_until_signal(server: &ScriptedServer) -> anyhow::Result<()> {
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut commands = stdin_lines();
    let mut stdin_open = true;
    loop {
        tokio::select! {
            _ = terminate.recv() => return Ok(()),
            _ = interrupt.recv() => return Ok(()),
            line = commands.recv(), if stdin_open => match line {
                Some(line) => follow(server, &line),
                None => stdin_open = false,
            },
        }
    }
}

/// Stdin's lines, read on a thread of their own (blocking reads); the channel closes
/// at end of input.
fn stdin_lines() -> mpsc::UnboundedReceiver<String> {
    let (lines_tx, lines_rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            let Ok(line) = line else { break };
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    lines_rx
}

fn follow(server: &ScriptedServer, line: &str) {
    match line.trim().split_once(' ') {
        Some(("release", gate)) => server.release(gate.trim()),
        _ if line.trim().is_empty() => {}
        _ => eprintln!("scripted server: unknown command `{line}` (known: release GATE)"),
    }
}

fn write_log(
    path: &PathBuf,
    requests: &[RecordedRequest],
    timings: &[RequestTiming],
    probes: &[(String, SystemTime)],
) -> std::io::Result<()> {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    for (request, timing) in requests.iter().zip(timings) {
        writeln!(file, "{}", log_line(request, timing))?;
    }
    for (probe, received) in probes {
        let line = json!({ "probe": probe, "received_us": unix_micros(*received) });
        writeln!(file, "{line}")?;
    }
    file.flush()
}

fn write_bodies(dir: &Path, requests: &[RecordedRequest]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (index, request) in requests.iter().enumerate() {
        let path = dir.join(format!("request-{}.json", index + 1));
        std::fs::write(path, serde_json::to_vec_pretty(&request.body)?)?;
    }
    Ok(())
}

fn log_line(request: &RecordedRequest, timing: &RequestTiming) -> Value {
    json!({
        "request": timing.request,
        "wire": request.wire.to_string(),
        "path": request.path,
        "received_us": unix_micros(timing.received),
        "first_byte_us": timing.first_byte_sent.map(unix_micros),
        "last_byte_us": timing.last_byte_sent.map(unix_micros),
        "bytes": request.bytes,
        "tools": request.tool_count(),
        "side": request.side,
    })
}

fn unix_micros(time: SystemTime) -> u128 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_micros())
}
