//! Instruction files of the directories below the working directory (`packages/api/
//! AGENTS.md`), given to the model with the result of the first read, edit or write of
//! a file there, or with the first file the user mentions there (`@path`).
//!
//! Owns: which directories the model has been given the files of
//! ([`NestedInstructions`]), the block each file travels in, appending it to the result
//! of the call that led to it, and telling front ends ([`Event::InstructionsLoaded`]).
//! Does not own: finding and reading the files (`crate::instructions`, through the
//! workspace's handle: a link out of the workspace is refused there), the calls
//! themselves (`tool_runs.rs`).
//! Invariant: the files travel inside a tool result, never as a message of their own,
//! so the request stays valid on every wire; and a directory's files are given once
//! while the conversation holds them: what was given is read back from the
//! conversation whenever it is restored (`--resume`), compacted or cleared, so a file
//! whose block was compacted away is given again at the next call that needs it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::instructions::{self, InstructionFile};
use crate::provider::{Block, Message, Role};
use crate::tools::Workspace;

use super::protocol::Event;
use super::session::Agent;
use super::tool_runs::ToolRuns;

/// The built-in tool that reads files; the tools that edit files say so themselves.
const READ_TOOL: &str = "read";
/// How a block opens: `<instructions file="packages/api/AGENTS.md">`.
const BLOCK_OPENING: &str = "<instructions file=\"";
const BLOCK_CLOSING: &str = "</instructions>";

/// The directories below the workspace whose instruction files were looked for.
#[derive(Debug, Default)]
pub(crate) struct NestedInstructions {
    /// Relative to the workspace root. The root itself is never here: its files are
    /// in the system prompt from the start.
    looked_in: BTreeSet<PathBuf>,
}

impl NestedInstructions {
    /// What the conversation `messages` already gives the model: the directories of
    /// the files whose blocks its tool results carry. A tool output that happens to
    /// hold such a line counts too; the worst that does is hold back a file the
    /// repository's own content already stands beside.
    pub(crate) fn given_in(messages: &[Message]) -> Self {
        // Tool results carry the blocks of calls; the user's own messages those of
        // the files they mentioned (`@path`).
        let texts = messages.iter().flat_map(|message| {
            message.content.iter().filter_map(|block| match block {
                Block::ToolResult(result) => Some(result.content.as_str()),
                Block::Text { text } if message.role == Role::User => Some(text.as_str()),
                _ => None,
            })
        });
        let looked_in = texts
            .flat_map(str::lines)
            .filter_map(|line| line.strip_prefix(BLOCK_OPENING)?.strip_suffix("\">"))
            .filter_map(|file| Path::new(file).parent().map(Path::to_path_buf))
            .filter(|dir| !dir.as_os_str().is_empty())
            .collect();
        Self { looked_in }
    }

    /// The instruction files of the directories from the workspace root down to the
    /// directory of `file` (resolved inside the workspace) not looked in before, the
    /// outermost first; those directories count as looked in from now on.
    fn load_for(&mut self, workspace: &Workspace, file: &Path) -> Vec<InstructionFile> {
        let Some(dir) = file
            .strip_prefix(workspace.root())
            .ok()
            .and_then(Path::parent)
        else {
            return Vec::new();
        };
        let mut dirs: Vec<&Path> = dir
            .ancestors()
            .filter(|dir| !dir.as_os_str().is_empty())
            .collect();
        dirs.reverse();
        let mut files = Vec::new();
        for dir in dirs {
            if !self.looked_in.insert(dir.to_path_buf()) {
                continue;
            }
            let found = instructions::in_directory(workspace.handle(), dir);
            for skipped in found.skipped {
                tracing::warn!(file = %skipped.shown, why = %skipped.why, "instruction file not read");
            }
            files.extend(found.files);
        }
        files
    }
}

/// The block a nested file travels in, after the result of the call that led to it.
fn block(file: &InstructionFile) -> String {
    let dir = Path::new(&file.shown)
        .parent()
        .map(|dir| dir.display().to_string())
        .unwrap_or_default();
    format!(
        "{BLOCK_OPENING}{shown}\">\nInstructions for {dir} ({shown}), given once, with the \
         first call on a file there. Follow them for the files below {dir}; where they \
         conflict with instructions from higher up, these win.\n\n{text}\n{BLOCK_CLOSING}",
        shown = file.shown,
        text = file.text,
    )
}

impl Agent {
    /// The instruction files not given yet of the directories down to each of `paths`
    /// (as the model names them), by key; read off the async threads.
    async fn load_nested<K: Send + 'static>(
        &mut self,
        paths: Vec<(K, String)>,
    ) -> Vec<(K, Vec<InstructionFile>)> {
        let workspace = Arc::clone(&self.tool_ctx.workspace);
        let mut nested = std::mem::take(&mut self.nested_instructions);
        let loading = tokio::task::spawn_blocking(move || {
            let given: Vec<(K, Vec<InstructionFile>)> = paths
                .into_iter()
                .filter_map(|(key, path)| {
                    // The path as the tool resolved it; one outside the workspace (a
                    // saved output) has no directory here.
                    let file = workspace.resolve(&path).ok()?;
                    let files = nested.load_for(&workspace, &file);
                    (!files.is_empty()).then_some((key, files))
                })
                .collect();
            (nested, given)
        });
        match loading.await {
            Ok((nested, given)) => {
                self.nested_instructions = nested;
                given
            }
            Err(error) => {
                tracing::warn!(%error, "nested instructions not loaded");
                self.nested_instructions =
                    NestedInstructions::given_in(self.conversation.messages());
                Vec::new()
            }
        }
    }

    /// The blocks of the instruction files not given yet for the files the user
    /// mentioned (`paths`), to attach with them, and the files' names; the front end
    /// is told under `call_id`.
    pub(super) async fn nested_instructions_for_mentions(
        &mut self,
        call_id: &str,
        paths: Vec<String>,
    ) -> Vec<String> {
        let keyed = paths.into_iter().map(|path| ((), path)).collect();
        let files: Vec<InstructionFile> = self
            .load_nested(keyed)
            .await
            .into_iter()
            .flat_map(|((), files)| files)
            .collect();
        if files.is_empty() {
            return Vec::new();
        }
        let blocks = files.iter().map(block).collect();
        self.events
            .emit(Event::InstructionsLoaded {
                call_id: call_id.to_string(),
                files: files.into_iter().map(|file| file.shown).collect(),
            })
            .await;
        blocks
    }

    /// Appends to the results of the step's reads, edits and writes that succeeded the
    /// instruction files of the directories they reached first, and reports them.
    pub(super) async fn give_nested_instructions(&mut self, runs: &mut ToolRuns) {
        let touched: Vec<(String, String)> = runs
            .succeeded()
            .filter(|call| call.name == READ_TOOL || self.tools.edits_files(&call.name))
            .filter_map(|call| {
                let info = self.tools.registry().describe(&call.name, &call.arguments);
                Some((call.id.clone(), info.path()?.to_string()))
            })
            .collect();
        if touched.is_empty() {
            return;
        }
        for (call_id, files) in self.load_nested(touched).await {
            let blocks: Vec<String> = files.iter().map(block).collect();
            runs.append_to_result(&call_id, &blocks.join("\n\n"));
            self.events
                .emit(Event::InstructionsLoaded {
                    call_id,
                    files: files.into_iter().map(|file| file.shown).collect(),
                })
                .await;
        }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::provider::{Block, ToolResult};

    fn instruction(shown: &str, text: &str) -> InstructionFile {
        InstructionFile {
            origin: instructions::Origin::Project,
            path: PathBuf::from("/w").join(shown),
            shown: shown.into(),
            bytes: text.len() as u64,
            text: text.into(),
        }
    }

    #[test]
    fn a_block_names_its_file_and_directory_and_is_found_again_in_the_conversation() {
        let text = block(&instruction("packages/api/AGENTS.md", "Use pnpm."));
        assert!(
            text.starts_with(
                "<instructions file=\"packages/api/AGENTS.md\">\nInstructions for packages/api \
                 (packages/api/AGENTS.md), given once"
            ),
            "{text}"
        );
        assert!(text.ends_with("\n\nUse pnpm.\n</instructions>"), "{text}");

        let result = ToolResult {
            call_id: "c1".into(),
            content: format!("     1\tcode\n\n{text}"),
            is_error: false,
        };
        let messages = [
            Message::user_text(BLOCK_OPENING.to_string() + "in/a/message.md\">"),
            Message {
                role: crate::provider::Role::User,
                content: vec![Block::ToolResult(result)],
            },
        ];
        let given = NestedInstructions::given_in(&messages);
        assert_eq!(
            given.looked_in.into_iter().collect::<Vec<_>>(),
            [PathBuf::from("in/a"), PathBuf::from("packages/api")],
            "a mention's block travels in the user's message"
        );
    }

    #[test]
    fn each_directory_down_to_the_file_is_looked_in_once() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("a/b/c")).unwrap();
        std::fs::write(root.join("AGENTS.md"), "root, given at the start").unwrap();
        std::fs::write(root.join("a/AGENTS.md"), "for a").unwrap();
        std::fs::write(root.join("a/b/c/CLAUDE.md"), "for c").unwrap();
        let workspace = Workspace::new(&root).unwrap();
        let mut nested = NestedInstructions::default();

        let shown = |files: Vec<InstructionFile>| -> Vec<String> {
            files.into_iter().map(|file| file.shown).collect()
        };
        assert_eq!(
            shown(nested.load_for(&workspace, &root.join("top.txt"))),
            Vec::<String>::new()
        );
        assert_eq!(
            shown(nested.load_for(&workspace, &root.join("a/b/c/x.rs"))),
            ["a/AGENTS.md", "a/b/c/CLAUDE.md"]
        );
        assert_eq!(
            shown(nested.load_for(&workspace, &root.join("a/b/y.rs"))),
            Vec::<String>::new()
        );
        assert_eq!(
            shown(nested.load_for(&workspace, &PathBuf::from("/elsewhere/z.rs"))),
            Vec::<String>::new()
        );
    }
}
