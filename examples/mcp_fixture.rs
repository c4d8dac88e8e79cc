//! A small MCP server over stdio for duet's tests (`tests/suite/mcp.rs`).
//!
//! Tools: `echo {text}`, `add {a, b}`, `peek` (marked read-only), `fail` (an error
//! result), `sleep {ms}` (answers after `ms` milliseconds), `crash` (the process
//! exits in the middle of the call) and `env {name}` (the variable's value, or
//! `(unset)`). `--start-delay-ms N` waits before speaking, like a
//! server that is slow to start. `--http` serves streamable HTTP on a free local port
//! instead of stdio, and prints the endpoint's URL as the first line on stdout.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};

struct Fixture;

fn tool(name: &'static str, description: &'static str, properties: Value) -> Tool {
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), properties);
    Tool::new(name, description, schema)
}

fn tools() -> Vec<Tool> {
    let mut peek = tool("peek", "Looks without touching.", json!({}));
    peek.annotations = Some(ToolAnnotations::new().read_only(true));
    vec![
        tool(
            "echo",
            "Says the text back.",
            json!({"text": {"type": "string"}}),
        ),
        tool(
            "add",
            "Adds two integers.",
            json!({"a": {"type": "integer"}, "b": {"type": "integer"}}),
        ),
        peek,
        tool("fail", "Always reports an error.", json!({})),
        tool(
            "sleep",
            "Answers after `ms` milliseconds.",
            json!({"ms": {"type": "integer"}}),
        ),
        tool("crash", "Exits the server mid-call.", json!({})),
        tool(
            "env",
            "The value of an environment variable.",
            json!({"name": {"type": "string"}}),
        ),
    ]
}

fn argument(request: &CallToolRequestParams, name: &str) -> Option<Value> {
    request.arguments.as_ref()?.get(name).cloned()
}

fn integer(request: &CallToolRequestParams, name: &str) -> Result<i64, ErrorData> {
    argument(request, name)
        .and_then(|value| value.as_i64())
        .ok_or_else(|| ErrorData::invalid_params(format!("`{name}` must be an integer"), None))
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text =
            |text: String| Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into());
        match request.name.as_ref() {
            "echo" => {
                let said = argument(&request, "text").unwrap_or(Value::Null);
                text(said.as_str().unwrap_or_default().to_string())
            }
            "add" => text((integer(&request, "a")? + integer(&request, "b")?).to_string()),
            "peek" => text("nothing changed".to_string()),
            "fail" => Ok(CallToolResult::error(vec![ContentBlock::text("it went wrong")]).into()),
            "sleep" => {
                let ms = integer(&request, "ms")?;
                tokio::time::sleep(Duration::from_millis(u64::try_from(ms).unwrap_or(0))).await;
                text("slept".to_string())
            }
            "env" => {
                let name = argument(&request, "name").unwrap_or(Value::Null);
                let value = std::env::var(name.as_str().unwrap_or_default());
                text(value.unwrap_or_else(|_| "(unset)".to_string()))
            }
            "crash" => {
                eprintln!("fixture: crashing as asked");
                std::process::exit(3);
            }
            other => Err(ErrorData::invalid_params(
                format!("no tool `{other}`"),
                None,
            )),
        }
    }
}

/// How the fixture was asked to run.
struct Options {
    start_delay: Duration,
    http: bool,
}

fn options() -> anyhow::Result<Options> {
    let mut options = Options {
        start_delay: Duration::ZERO,
        http: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--start-delay-ms", Some(ms)) => {
                options.start_delay = Duration::from_millis(ms.parse()?)
            }
            ("--http", None) => options.http = true,
            _ => anyhow::bail!("usage: mcp_fixture [--start-delay-ms N | --http]"),
        }
    }
    Ok(options)
}

async fn serve_http() -> anyhow::Result<()> {
    let service = StreamableHttpService::new(
        || Ok(Fixture),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("http://{}/mcp", listener.local_addr()?);
    axum::serve(listener, router).await?;
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let options = options()?;
    tokio::time::sleep(options.start_delay).await;
    eprintln!("fixture: serving");
    if options.http {
        return serve_http().await;
    }
    Fixture
        .serve(rmcp::transport::stdio())
        .await?
        .waiting()
        .await?;
    Ok(())
}
