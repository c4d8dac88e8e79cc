//! Looks for model servers running on this machine, for the "nothing configured"
//! screens: Ollama, llama.cpp, vLLM and LM Studio on their default ports.
//!
//! Owns: the list of default local servers, asking each for its models
//! (`GET {base}/models`, the OpenAI-compatible listing all four serve), and the
//! deadline that bounds the whole search.
//! Does not own: choosing or saving a server (the setup screens and [`super::init`]).
//! Invariant: every probe runs at once and none outlives the deadline, so a server that
//! accepts a connection and never answers costs at most the deadline, and results are
//! delivered as they arrive rather than after the slowest.

use std::time::Duration;

use serde::Deserialize;
use tokio::sync::mpsc;

/// How long the whole search may take.
pub const PROBE_DEADLINE: Duration = Duration::from_millis(300);

/// A server that may be running locally.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalServer {
    /// What usually listens there, e.g. "Ollama".
    pub name: &'static str,
    /// The OpenAI-compatible base URL, e.g. `http://127.0.0.1:11434/v1`.
    pub base_url: String,
}

impl LocalServer {
    pub fn new(name: &'static str, base_url: impl Into<String>) -> Self {
        Self {
            name,
            base_url: base_url.into(),
        }
    }

    /// The servers on their default ports.
    pub fn defaults() -> Vec<Self> {
        [
            ("Ollama", 11434),
            ("llama.cpp", 8080),
            ("vLLM", 8000),
            ("LM Studio", 1234),
        ]
        .into_iter()
        .map(|(name, port)| Self::new(name, format!("http://127.0.0.1:{port}/v1")))
        .collect()
    }
}

/// A server that answered, with the models it serves (possibly none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundServer {
    pub server: LocalServer,
    pub models: Vec<String>,
}

/// The OpenAI-compatible model listing: `{"data": [{"id": "..."}]}`.
#[derive(Deserialize)]
struct ModelList {
    data: Vec<ModelId>,
}

#[derive(Deserialize)]
struct ModelId {
    id: String,
}

/// Starts probing every server at once. Each server that answers arrives on the
/// receiver as soon as it does; the channel closes when all have answered, failed or
/// run out of time (`deadline` from now).
pub fn spawn_probes(servers: Vec<LocalServer>, deadline: Duration) -> mpsc::Receiver<FoundServer> {
    let (found_tx, found_rx) = mpsc::channel(servers.len().max(1));
    let client = match http_client(deadline) {
        Ok(client) => client,
        Err(error) => {
            tracing::warn!("cannot probe local model servers: {error}");
            return found_rx;
        }
    };
    for server in servers {
        let client = client.clone();
        let found_tx = found_tx.clone();
        tokio::spawn(async move {
            let answer = tokio::time::timeout(deadline, list_models(&client, &server)).await;
            if let Ok(Some(models)) = answer {
                let _ = found_tx.send(FoundServer { server, models }).await;
            }
        });
    }
    found_rx
}

/// Probes every server and returns those that answered within `deadline`, in the
/// order of `servers`.
pub async fn probe_all(servers: Vec<LocalServer>, deadline: Duration) -> Vec<FoundServer> {
    let order = servers.clone();
    let mut results = spawn_probes(servers, deadline);
    let mut found = Vec::new();
    while let Some(server) = results.recv().await {
        found.push(server);
    }
    found.sort_by_key(|found| order.iter().position(|server| *server == found.server));
    found
}

fn http_client(deadline: Duration) -> reqwest::Result<reqwest::Client> {
    // reqwest is built without a rustls crypto provider; the probes speak plain HTTP,
    // but building a client needs one installed. An error means one already is.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(deadline)
        // A proxy from the environment must not see (or answer for) localhost probes.
        .no_proxy()
        .build()
}

/// The models `server` lists, or `None` when it is not there or not a model server.
async fn list_models(client: &reqwest::Client, server: &LocalServer) -> Option<Vec<String>> {
    let url = format!("{}/models", server.base_url.trim_end_matches('/'));
    let response = client.get(&url).send().await.ok()?;
    if !response.status().is_success() {
        tracing::debug!("{url} answered {}", response.status());
        return None;
    }
    let body = response.bytes().await.ok()?;
    let list: ModelList = serde_json::from_slice(&body).ok()?;
    Some(list.data.into_iter().map(|model| model.id).collect())
}

#[cfg(test)]
pub(crate) mod test_support {
    //! Stand-ins for local model servers.

    use std::net::SocketAddr;

    /// An OpenAI-compatible server listing `models`; returns its `/v1` base URL.
    pub async fn serve_models(models: &[&str]) -> String {
        let data: Vec<_> = models
            .iter()
            .map(|id| serde_json::json!({"id": id, "object": "model"}))
            .collect();
        let body = serde_json::json!({"object": "list", "data": data}).to_string();
        let app = axum::Router::new().route(
            "/v1/models",
            axum::routing::get(move || {
                let body = body.clone();
                async move { ([("content-type", "application/json")], body) }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("http://{addr}/v1")
    }

    /// A port that accepts connections and never answers; the listener must be kept
    /// alive as long as the port is probed.
    pub fn silent_port() -> (std::net::TcpListener, SocketAddr) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        (listener, addr)
    }

    /// A port nothing listens on.
    pub fn closed_port() -> SocketAddr {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::test_support::{closed_port, serve_models, silent_port};
    use super::*;

    #[test]
    fn the_defaults_are_the_usual_ports() {
        let urls: Vec<_> = LocalServer::defaults()
            .into_iter()
            .map(|server| server.base_url)
            .collect();
        assert_eq!(
            urls,
            [
                "http://127.0.0.1:11434/v1",
                "http://127.0.0.1:8080/v1",
                "http://127.0.0.1:8000/v1",
                "http://127.0.0.1:1234/v1"
            ]
        );
    }

    #[tokio::test]
    async fn servers_that_answer_are_listed_with_their_models_in_order() {
        let ollama = serve_models(&["qwen2.5-coder", "llama3"]).await;
        let empty = serve_models(&[]).await;
        let (_held, silent) = silent_port();
        let servers = vec![
            LocalServer::new("Ollama", ollama.clone()),
            LocalServer::new("vLLM", format!("http://{silent}/v1")),
            LocalServer::new("llama.cpp", format!("http://{}/v1", closed_port())),
            LocalServer::new("LM Studio", empty.clone()),
        ];
        let found = probe_all(servers, Duration::from_millis(200)).await;
        assert_eq!(
            found,
            [
                FoundServer {
                    server: LocalServer::new("Ollama", ollama),
                    models: vec!["qwen2.5-coder".into(), "llama3".into()],
                },
                FoundServer {
                    server: LocalServer::new("LM Studio", empty),
                    models: Vec::new(),
                },
            ]
        );
    }

    #[tokio::test]
    async fn an_answer_arrives_before_a_silent_server_gives_up() {
        let (_held, silent) = silent_port();
        let ollama = serve_models(&["m"]).await;
        // The silent server would hold the search for the whole (long) deadline; the
        // answering one is delivered first all the same.
        let mut results = spawn_probes(
            vec![
                LocalServer::new("vLLM", format!("http://{silent}/v1")),
                LocalServer::new("Ollama", ollama),
            ],
            Duration::from_secs(30),
        );
        let first = results.recv().await.unwrap();
        assert_eq!(first.server.name, "Ollama");
    }
}
