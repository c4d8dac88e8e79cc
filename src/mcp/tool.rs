//! One MCP tool as a duet [`Tool`]: named `server__tool`, asking the approver before
//! every call, bounded by the server's call timeout, its result mapped to text.

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, CallToolResult, Tool as RemoteTool};
use serde_json::Value;

use crate::policy::{Action, Decision, ExternalCall, ToolRule};
use crate::tools::{Concurrency, Tool, ToolCtx, ToolError, ToolOutput};

use super::config::ServerConfig;
use super::results::map_result;
use super::supervisor::ServerLink;

/// Providers accept tool names of at most this many characters.
const MAX_NAME_CHARS: usize = 64;

/// A server's tool as the model sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolShape {
    /// `server__tool`, with characters providers refuse replaced by `_`.
    pub exposed: String,
    /// The name on the server.
    pub remote: String,
    pub description: String,
    pub schema: Value,
    pub rule: ToolRule,
    /// The server marks it read-only and the user's config trusts that mark.
    pub read_only: bool,
}

/// The shapes of `tools`; a tool whose name is too long, or clashes with an earlier
/// one once made safe, is left out (and logged).
pub fn shapes(config: &ServerConfig, tools: &[RemoteTool]) -> Vec<ToolShape> {
    let mut shapes: Vec<ToolShape> = Vec::with_capacity(tools.len());
    for tool in tools {
        let exposed = format!("{}__{}", config.name, safe_name(&tool.name));
        if exposed.chars().count() > MAX_NAME_CHARS
            || shapes.iter().any(|known| known.exposed == exposed)
        {
            tracing::warn!(server = config.name, tool = %tool.name, "MCP tool left out: its name is too long or clashes");
            continue;
        }
        let marked_read_only = tool
            .annotations
            .as_ref()
            .and_then(|annotations| annotations.read_only_hint)
            .unwrap_or(false);
        shapes.push(ToolShape {
            exposed,
            remote: tool.name.to_string(),
            description: describe(&config.name, tool),
            schema: object_schema(tool),
            rule: config.rule_for(&tool.name),
            read_only: marked_read_only && config.parallel_read_only,
        });
    }
    shapes
}

fn safe_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn describe(server: &str, tool: &RemoteTool) -> String {
    let text = tool
        .description
        .as_deref()
        .or(tool.title.as_deref())
        .unwrap_or("(no description)");
    format!("[from MCP server `{server}`] {text}")
}

/// The input schema, as an object schema even when the server left out `type`.
fn object_schema(tool: &RemoteTool) -> Value {
    let mut schema = (*tool.input_schema).clone();
    schema
        .entry("type")
        .or_insert_with(|| Value::String("object".into()));
    Value::Object(schema)
}

/// A ready server's tool.
pub(crate) struct McpTool {
    shape: ToolShape,
    link: Arc<ServerLink>,
}

impl McpTool {
    pub(crate) fn new(shape: ToolShape, link: Arc<ServerLink>) -> Self {
        Self { shape, link }
    }

    fn external_call(&self) -> ExternalCall {
        ExternalCall {
            server: self.link.name().to_string(),
            tool: self.shape.remote.clone(),
            rule: self.shape.rule,
            read_only: self.shape.read_only,
        }
    }

    /// Asks the approver; `Err` says why the call is not made.
    async fn approve(&self, args: &Value, ctx: &ToolCtx) -> Result<(), ToolError> {
        let action = Action::CallExternalTool {
            call: self.external_call(),
            arguments: args.to_string(),
        };
        let reason = match ctx.approve(action).await {
            None => {
                return Err(ToolError::Failed(format!(
                    "`{}` was interrupted by the user before it was called.",
                    self.shape.exposed
                )));
            }
            Some(Decision::Approve) => return Ok(()),
            Some(Decision::Reject { reason } | Decision::ApproveHunks { reason, .. }) => reason,
            Some(Decision::Edited { .. }) => Some("the user answered with an edit instead".into()),
        };
        Err(ToolError::Refused(format!(
            "the tool was not called: {}",
            reason.as_deref().unwrap_or("the user rejected it")
        )))
    }

    /// Sends the call. Fails at once when the server is down, and when the server
    /// fails the call, overruns its timeout or the user interrupts.
    async fn call(&self, args: Value, ctx: &ToolCtx) -> Result<CallToolResult, ToolError> {
        let peer = self.link.ready_peer().map_err(ToolError::Failed)?;
        let mut params = CallToolRequestParams::new(self.shape.remote.clone());
        if let Value::Object(arguments) = args {
            params = params.with_arguments(arguments);
        }
        let timeout = self.link.config().call_timeout;
        let exposed = &self.shape.exposed;
        tokio::select! {
            outcome = tokio::time::timeout(timeout, peer.call_tool(params)) => match outcome {
                Ok(Ok(result)) => Ok(result),
                Ok(Err(error)) => Err(ToolError::Failed(self.link.call_failed(&error))),
                Err(_) => Err(ToolError::Failed(format!(
                    "`{exposed}` did not answer within its timeout of {}s, so duet stopped \
                     waiting (the server may still finish it). Try a smaller request, or do \
                     without it.",
                    timeout.as_secs_f64()
                ))),
            },
            () = ctx.cancel.cancelled() => Err(ToolError::Failed(format!(
                "`{exposed}` was interrupted by the user; the server may have finished the \
                 call anyway."
            ))),
        }
    }
}

#[async_trait::async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.shape.exposed
    }

    fn description(&self) -> &str {
        &self.shape.description
    }

    fn schema(&self) -> Value {
        self.shape.schema.clone()
    }

    fn concurrency(&self) -> Concurrency {
        if self.shape.read_only {
            Concurrency::Shared
        } else {
            Concurrency::Exclusive
        }
    }

    async fn run(&self, args: Value, ctx: &ToolCtx) -> Result<ToolOutput, ToolError> {
        self.approve(&args, ctx).await?;
        let mapped = map_result(&self.call(args, ctx).await?);
        if mapped.is_error {
            return Err(ToolError::Failed(mapped.text));
        }
        let summary = format!("{} · {}", self.link.name(), first_line(&mapped.text));
        Ok(ToolOutput {
            content: mapped.text,
            summary,
            checks: None,
        })
    }
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use pretty_assertions::assert_eq;
    use rmcp::model::ToolAnnotations;
    use serde_json::json;

    use super::*;
    use crate::mcp::config::{Source, Transport};

    fn server(parallel_read_only: bool) -> ServerConfig {
        ServerConfig {
            name: "files".into(),
            transport: Transport::Http {
                url: "http://localhost/mcp".into(),
            },
            call_timeout: Duration::from_secs(1),
            enabled: true,
            default_rule: ToolRule::Ask,
            tool_rules: [("peek".to_string(), ToolRule::Allow)].into(),
            parallel_read_only,
            source: Source::User(PathBuf::from("/cfg.toml")),
        }
    }

    fn remote(name: &str, read_only: Option<bool>) -> RemoteTool {
        let schema = json!({"properties": {"path": {"type": "string"}}});
        let Value::Object(schema) = schema else {
            unreachable!()
        };
        let mut tool = RemoteTool::new(name.to_string(), "Reads a file.", schema);
        tool.annotations = read_only.map(|flag| ToolAnnotations::new().read_only(flag));
        tool
    }

    #[test]
    fn names_are_namespaced_and_made_safe() {
        let tools = [
            remote("peek", Some(true)),
            remote("read.file", None),
            remote("read_file", None),
            remote(&"x".repeat(70), None),
        ];
        let shapes = shapes(&server(true), &tools);
        let names: Vec<_> = shapes.iter().map(|s| s.exposed.as_str()).collect();
        assert_eq!(names, ["files__peek", "files__read_file"]);
        assert_eq!(shapes[1].remote, "read.file");
        assert_eq!(shapes[0].rule, ToolRule::Allow);
        assert_eq!(shapes[1].rule, ToolRule::Ask);
        assert_eq!(shapes[0].schema["type"], "object");
        assert_eq!(
            shapes[0].description,
            "[from MCP server `files`] Reads a file."
        );
    }

    #[test]
    fn read_only_needs_the_mark_and_the_users_trust() {
        let tools = [remote("peek", Some(true)), remote("poke", Some(false))];
        let trusted: Vec<bool> = shapes(&server(true), &tools)
            .iter()
            .map(|s| s.read_only)
            .collect();
        assert_eq!(trusted, [true, false]);
        let untrusted: Vec<bool> = shapes(&server(false), &tools)
            .iter()
            .map(|s| s.read_only)
            .collect();
        assert_eq!(untrusted, [false, false]);
    }
}
