//! SCAFFOLD: replaced by the tools work.
use serde_json::Value;

use super::{Tool, ToolCtx, ToolError, ToolOutput};

pub struct Read;

#[async_trait::async_trait]
impl Tool for Read {
    fn name(&self) -> &'static str {
        "read"
    }

    fn description(&self) -> &'static str {
        "scaffold"
    }

    fn schema(&self) -> Value {
        serde_json::json!({"type": "object", "properties": {}})
    }

    async fn run(&self, _args: Value, _ctx: &ToolCtx) -> Result<ToolOutput, ToolError> {
        Err(ToolError::Failed("scaffold".into()))
    }
}
