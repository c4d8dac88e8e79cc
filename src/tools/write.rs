//! The `write` tool: create a file or replace one the model has read.
//!
//! Owns: the rules for whole-file writes (no blind overwrite, no directories) and the
//! created/replaced report.
//! Does not own: approval and the atomic write itself ([`super::files::apply_change`],
//! shared with `edit`).
//! Invariant: an existing file is only replaced if the model read or wrote it earlier
//! in this session, and only after approval.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use std::path::Path;

use super::describe::{self, CallInfo};
use super::files::{Change, apply_change, blocking, existing_file, read_bytes, refuse_if_stale};
use super::text::{count, human_size};
use super::{Tool, ToolCtx, ToolError, ToolOutput, Workspace, parse_args, schema_for};

/// Arguments of `write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    /// The file to create or replace, relative to the workspace root. Missing parent
    /// directories are created.
    path: String,
    /// The complete new content of the file.
    content: String,
}

pub struct Write;

#[async_trait::async_trait]
impl Tool for Write {
    fn name(&self) -> &'static str {
        "write"
    }

    fn description(&self) -> &'static str {
        "Create a file, or replace an existing file's whole content. An existing file must \
         have been read (with read) earlier in this session. Missing parent directories are \
         created. For changes to part of a file prefer edit, which does not resend the \
         whole file."
    }

    fn schema(&self) -> Value {
        schema_for::<WriteArgs>()
    }

    fn edits_files(&self) -> bool {
        true
    }

    fn describe(&self, args: &serde_json::Map<String, Value>) -> Option<CallInfo> {
        let path = describe::text(args, "path")?;
        Some(CallInfo::new(
            format!("write {path}"),
            vec![path.to_string()],
        ))
    }

    async fn run(&self, args: Value, ctx: &ToolCtx) -> Result<ToolOutput, ToolError> {
        let args: WriteArgs = parse_args(self.name(), args)?;
        let workspace = ctx.workspace.clone();
        let ledger = ctx.ledger.clone();
        let change = blocking(move || {
            let abs = workspace.resolve(&args.path)?;
            let display = workspace.display(&abs);
            let requested = workspace.link_route(&args.path, &abs);
            let (before, mode) = match existing_file(&workspace, &abs, &display)? {
                None => (None, None),
                Some(meta) => {
                    if !ledger.was_read(&abs) {
                        return Err(unread_refusal(&display));
                    }
                    refuse_if_stale(&ledger, &abs, &display)?;
                    (
                        Some(current_text(&workspace, &abs, &display)?),
                        Some(meta.mode()),
                    )
                }
            };
            Ok(Change {
                tool: "write",
                abs,
                display,
                requested,
                before,
                after: args.content,
                mode,
            })
        })
        .await?;

        let replaced = change.before.is_some();
        let display = change.display.clone();
        let lines = change.after.lines().count() as u64;
        let bytes = change.after.len() as u64;
        let landed = apply_change(ctx, change).await?;

        let verb = if replaced { "replaced" } else { "created" };
        Ok(landed.into_output(ToolOutput {
            content: format!(
                "{verb} `{display}` ({}, {}).",
                count(lines, "line"),
                human_size(bytes)
            ),
            summary: format!("{verb} {display} ({})", count(lines, "line")),
            checks: None,
        }))
    }
}

/// The current content for the approval diff. A file that became binary since it was
/// read is shown lossily rather than blocking a replacement the model was allowed.
fn current_text(workspace: &Workspace, abs: &Path, display: &str) -> Result<String, ToolError> {
    let bytes = read_bytes(workspace, abs, display)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn unread_refusal(display: &str) -> ToolError {
    ToolError::Refused(format!(
        "`{display}` already exists and has not been read in this session, so writing \
         would overwrite content you have not seen. Call read on `{display}` first, then \
         write again (or use edit to change part of it)."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::ApprovalMode;
    use crate::tools::test_support::{Fixture, refused};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[tokio::test]
    async fn creates_a_new_file_with_parents() {
        let fx = Fixture::new();
        let output = fx
            .call(
                &Write,
                json!({"path": "a/b/new.txt", "content": "one\ntwo\n"}),
            )
            .await
            .unwrap();
        assert_eq!(
            output,
            ToolOutput {
                content: "created `a/b/new.txt` (2 lines, 8 bytes).".into(),
                summary: "created a/b/new.txt (2 lines)".into(),
                checks: None,
            }
        );
        assert_eq!(fx.text("a/b/new.txt"), "one\ntwo\n");
    }

    #[tokio::test]
    async fn overwriting_an_unread_file_is_refused() {
        let fx = Fixture::new();
        fx.file("notes.md", "precious\n");
        let message = refused(
            fx.call(&Write, json!({"path": "notes.md", "content": "oops"}))
                .await,
        );
        assert!(message.contains("has not been read"), "{message}");
        assert!(
            message.contains("Call read on `notes.md` first"),
            "{message}"
        );
        assert_eq!(fx.text("notes.md"), "precious\n");
    }

    #[tokio::test]
    async fn overwriting_after_a_read_is_allowed() {
        let fx = Fixture::new();
        fx.file("notes.md", "old\n");
        fx.mark_read("notes.md");
        let content = fx
            .ok(&Write, json!({"path": "notes.md", "content": "new\n"}))
            .await;
        assert_eq!(content, "replaced `notes.md` (1 line, 4 bytes).");
        assert_eq!(fx.text("notes.md"), "new\n");
    }

    #[tokio::test]
    async fn overwriting_a_file_changed_since_the_read_is_refused() {
        let fx = Fixture::new();
        fx.file("notes.md", "old\n");
        fx.mark_read("notes.md");
        fx.file("notes.md", "the user's newer notes\n");
        let message = refused(
            fx.call(&Write, json!({"path": "notes.md", "content": "mine"}))
                .await,
        );
        assert!(
            message.contains("changed on disk since you read it"),
            "{message}"
        );
        assert_eq!(fx.text("notes.md"), "the user's newer notes\n");
    }

    #[tokio::test]
    async fn a_file_the_model_wrote_can_be_written_again() {
        let fx = Fixture::new();
        fx.ok(&Write, json!({"path": "a.txt", "content": "1"}))
            .await;
        fx.ok(&Write, json!({"path": "a.txt", "content": "2"}))
            .await;
        assert_eq!(fx.text("a.txt"), "2");
    }

    #[tokio::test]
    async fn directories_are_refused() {
        let fx = Fixture::new();
        fx.file("src/lib.rs", "");
        let message = refused(
            fx.call(&Write, json!({"path": "src", "content": "x"}))
                .await,
        );
        assert!(message.contains("is a directory"), "{message}");
    }

    #[tokio::test]
    async fn read_only_mode_leaves_files_untouched() {
        let fx = Fixture::with_mode(ApprovalMode::ReadOnly);
        fx.file("a.txt", b"original\r\n\xff");
        fx.mark_read("a.txt");
        let message = refused(
            fx.call(&Write, json!({"path": "a.txt", "content": "new"}))
                .await,
        );
        assert!(message.contains("read-only mode"), "{message}");
        assert_eq!(fx.bytes("a.txt"), b"original\r\n\xff");

        let message = refused(
            fx.call(&Write, json!({"path": "new/dir/b.txt", "content": "new"}))
                .await,
        );
        assert!(message.contains("`new/dir/b.txt`"), "{message}");
        assert!(!fx.path("new").exists(), "parent directories were created");
    }

    #[tokio::test]
    async fn paths_outside_the_workspace_are_refused() {
        let fx = Fixture::new();
        let message = refused(
            fx.call(&Write, json!({"path": "../x.txt", "content": "x"}))
                .await,
        );
        assert!(message.contains("outside the workspace"), "{message}");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn writing_through_a_symlinked_directory_outside_is_refused() {
        let fx = Fixture::new();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), fx.path("out")).unwrap();
        let message = refused(
            fx.call(&Write, json!({"path": "out/x.txt", "content": "x"}))
                .await,
        );
        assert!(message.contains("symbolic link"), "{message}");
        assert!(!outside.path().join("x.txt").exists());
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn replacing_keeps_permissions() {
        use std::os::unix::fs::PermissionsExt as _;
        let fx = Fixture::new();
        let path = fx.file("run.sh", "#!/bin/sh\n");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        fx.mark_read("run.sh");
        fx.ok(
            &Write,
            json!({"path": "run.sh", "content": "#!/bin/sh\necho hi\n"}),
        )
        .await;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
    }
}
