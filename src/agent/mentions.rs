//! `@path` mentions in the user's message: the files they name, attached to it.
//!
//! Owns: reading each mentioned file (or its lines) when the message is delivered,
//! the text that carries them to the model, and the event that tells the front end
//! what was attached. Does not own: the token grammar ([`crate::mention`]) or reading
//! files (the read tool).
//! Invariant: a mention is read by the read tool, as the model's reads are: beneath
//! the workspace, never out through a link, binary and huge files refused, and the
//! file counted as read. What is attached joins the same user message, after its text,
//! and the session transcript records it, so a resumed session sends it again.

use serde_json::json;

use crate::mention::{Mention, mentions};

use super::protocol::{Event, MessageId};
use super::session::Agent;

impl Agent {
    /// Attaches the files `text` mentions to the message just delivered.
    pub(super) async fn attach_mentions(&mut self, id: MessageId, text: &str) {
        let mut found = mentions(text);
        found.dedup_by(|a, b| a.path == b.path && a.lines == b.lines);
        if found.is_empty() {
            return;
        }
        let mut blocks = Vec::new();
        let mut files = Vec::new();
        let mut problems = Vec::new();
        let mut attached_paths = Vec::new();
        for mention in &found {
            let label = label(mention);
            match self.read_mention(id, mention).await {
                Ok(content) => {
                    blocks.push(format!(
                        "<file path=\"{label}\">\n{}\n</file>",
                        content.trim_end()
                    ));
                    files.push(label);
                    attached_paths.push(mention.path.clone());
                }
                Err(reason) if looks_like_a_path(&mention.path) => {
                    problems.push(format!("@{label} was not attached: {reason}"));
                }
                // `@property`, `@alice`: a word with an `@`, not meant as a file.
                Err(_) => {}
            }
        }
        if files.is_empty() && problems.is_empty() {
            return;
        }
        // As for the model's own reads: a directory's instructions come with the first
        // file there.
        let instructions = self
            .nested_instructions_for_mentions(&mention_call_id(id), attached_paths)
            .await;
        blocks.extend(instructions);
        let mut note = String::from("Files the user mentioned in this message, attached:");
        for block in &blocks {
            note.push_str("\n\n");
            note.push_str(block);
        }
        for problem in &problems {
            note.push_str("\n\n");
            note.push_str(problem);
        }
        self.add_note(note).await;
        self.events
            .emit(Event::FilesAttached {
                id,
                files,
                problems,
            })
            .await;
    }

    /// The mentioned file (or its lines) as the read tool shows it to the model.
    async fn read_mention(&self, id: MessageId, mention: &Mention) -> Result<String, String> {
        let mut arguments = json!({ "path": mention.path });
        if let Some((start, end)) = mention.lines {
            arguments["offset"] = json!(start);
            arguments["limit"] = json!(end.saturating_sub(start) + 1);
        }
        let (tool, arguments) = self
            .tools
            .registry()
            .prepare("read", &arguments.to_string())
            .map_err(|error| error.to_string())?;
        let mut ctx = self.tool_ctx.clone();
        ctx.call_id = mention_call_id(id);
        tool.run(arguments, &ctx)
            .await
            .map(|output| output.content)
            .map_err(|error| error.to_string())
    }
}

/// The call id the reads of message `id`'s mentions run under.
fn mention_call_id(id: MessageId) -> String {
    format!("mention-{id}")
}

/// `src/a.rs` or `src/a.rs:10-40`.
fn label(mention: &Mention) -> String {
    match mention.lines {
        Some((start, end)) if start == end => format!("{}:{start}", mention.path),
        Some((start, end)) => format!("{}:{start}-{end}", mention.path),
        None => mention.path.clone(),
    }
}

/// Whether a token that named no readable file was meant as one: it has a directory
/// or an extension. `@property` and `@alice` were not.
fn looks_like_a_path(path: &str) -> bool {
    path.contains('/') || path.contains('.')
}
