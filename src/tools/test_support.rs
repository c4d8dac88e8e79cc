//! Test fixture shared by the tool tests: a temporary workspace with a [`ToolCtx`].
//!
//! Owns: building contexts with a given approval mode and small file helpers.
//! Does not own: any assertion about tool behaviour.
//! Invariant: each fixture has its own temp directory, removed when it is dropped.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::lint::{LintConfig, Linter};
use crate::policy::{ApprovalMode, ModeApprover, Policy, PolicyConfig};
use crate::shell::{Shell, ShellConfig};

use super::{OutputSink, ReadLedger, Tool, ToolCtx, ToolError, ToolOutput, Workspace};

pub(crate) struct Fixture {
    // Held so the directory lives as long as the fixture.
    _dir: tempfile::TempDir,
    pub ctx: ToolCtx,
}

impl Fixture {
    /// A workspace where every change is approved.
    pub fn new() -> Self {
        Self::with_mode(ApprovalMode::Auto)
    }

    pub fn with_mode(mode: ApprovalMode) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        let root = workspace.root().to_path_buf();
        let ctx = ToolCtx {
            workspace: Arc::new(workspace),
            ledger: Arc::new(ReadLedger::default()),
            approver: Arc::new(ModeApprover::new(
                mode,
                Policy::new(&root, PolicyConfig::default()),
            )),
            shell: Arc::new(Shell::new(&root, ShellConfig::default())),
            linter: Arc::new(Linter::new(&root, LintConfig::default())),
            output: OutputSink::default(),
            keyboards: Default::default(),
            call_id: "call_test".into(),
            cancel: CancellationToken::new(),
        };
        Self { _dir: dir, ctx }
    }

    /// The canonical workspace root.
    pub fn root(&self) -> &Path {
        self.ctx.workspace.root()
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.root().join(relative)
    }

    /// Creates `relative` (and its parents) with `content`.
    pub fn file(&self, relative: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    pub fn bytes(&self, relative: &str) -> Vec<u8> {
        std::fs::read(self.path(relative)).unwrap()
    }

    pub fn text(&self, relative: &str) -> String {
        std::fs::read_to_string(self.path(relative)).unwrap()
    }

    /// Marks `relative` as read, as a successful `read` call would.
    pub fn mark_read(&self, relative: &str) {
        self.ctx.ledger.record_read(&self.path(relative));
    }

    pub async fn call(&self, tool: &dyn Tool, args: Value) -> Result<ToolOutput, ToolError> {
        tool.run(args, &self.ctx).await
    }

    /// Runs a call that must succeed and returns its content.
    pub async fn ok(&self, tool: &dyn Tool, args: Value) -> String {
        match self.call(tool, args).await {
            Ok(output) => output.content,
            Err(error) => panic!("expected success, got {error:?}"),
        }
    }
}

/// The message of a [`ToolError::Refused`]; panics on anything else.
pub(crate) fn refused(result: Result<ToolOutput, ToolError>) -> String {
    match result {
        Err(ToolError::Refused(message)) => message,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// The message of a [`ToolError::InvalidArguments`]; panics on anything else.
pub(crate) fn invalid(result: Result<ToolOutput, ToolError>) -> String {
    match result {
        Err(ToolError::InvalidArguments(message)) => message,
        other => panic!("expected invalid arguments, got {other:?}"),
    }
}
