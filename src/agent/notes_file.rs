//! The workspace's notes file (`.duet/notes.md`, where `duet exec --done` has the
//! model keep its plan and what is already done), carried through compaction.
//!
//! Owns: reading the file (through a handle of the workspace root: a link planted there
//! is not followed, so nothing outside the workspace reaches the conversation), bounding
//! it, the wording of the text that carries it, and retiring the copies an earlier
//! compaction left.
//! Does not own: when compaction happens ([`super::compaction`]) or the file itself
//! (the model writes it; `exec::done` starts it).
//! Invariant: after a compaction the conversation holds the file's current contents
//! once, and older copies only as a one-line stub. Only user text blocks change, so
//! every tool call keeps its one result.

use std::path::Path;

use crate::beneath::Root;
use crate::provider::{Block, Message, Role};

/// The notes file, relative to the workspace.
pub const NOTES_FILE: &str = ".duet/notes.md";

/// The most characters of the notes the model is given again; the rest stays in the
/// file, which the model can read.
const NOTES_LIMIT: usize = 8_000;

/// Leads the text that carries the notes.
const NOTES_HEADER: &str = "[The notes file .duet/notes.md as it is now, read again after \
    the conversation was compacted: your plan and what is already done.]\n\n";

/// What an older copy of the notes becomes.
const RETIRED_COPY: &str = "[An older copy of .duet/notes.md was here; the current one \
    follows later in the conversation.]";

/// The notes file's contents as the model gets them after a compaction, or `None` when
/// the workspace has no notes (or they are empty or unreadable).
pub(crate) async fn read(workspace: &Path) -> Option<String> {
    let workspace = workspace.to_path_buf();
    let read = tokio::task::spawn_blocking(move || {
        let root = Root::open(&workspace).map_err(|error| error.to_string())?;
        match root.read(Path::new(NOTES_FILE)) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(error) if error.is_not_found() => Ok(None),
            Err(error) => Err(error.to_string()),
        }
    })
    .await;
    let bytes = match read {
        Ok(Ok(Some(bytes))) => bytes,
        Ok(Ok(None)) => return None,
        Ok(Err(error)) => {
            tracing::warn!(%error, "cannot read the notes file");
            return None;
        }
        Err(error) => {
            tracing::warn!(%error, "reading the notes file stopped");
            return None;
        }
    };
    let contents = String::from_utf8(bytes).ok()?;
    (!contents.trim().is_empty()).then(|| format!("{NOTES_HEADER}{}", bounded(&contents)))
}

/// `text` when it has at most [`NOTES_LIMIT`] characters; otherwise its first and last
/// halves of that around a line that says how much was cut and where the rest is.
fn bounded(text: &str) -> String {
    let chars = text.chars().count();
    if chars <= NOTES_LIMIT {
        return text.to_string();
    }
    let half = NOTES_LIMIT / 2;
    let byte_at = |nth: usize| {
        text.char_indices()
            .nth(nth)
            .map_or(text.len(), |(at, _)| at)
    };
    let (head_end, tail_start) = (byte_at(half), byte_at(chars - half));
    format!(
        "{}\n[… {} characters cut from the middle; read {NOTES_FILE} for all of it]\n{}",
        &text[..head_end],
        chars - 2 * half,
        &text[tail_start..]
    )
}

/// Replaces every copy of the notes in `messages` by a one-line stub.
pub(crate) fn retire_copies(messages: &mut [Message]) {
    for message in messages
        .iter_mut()
        .filter(|message| message.role == Role::User)
    {
        for block in &mut message.content {
            if let Block::Text { text } = block
                && text.starts_with(NOTES_HEADER)
            {
                *text = RETIRED_COPY.to_string();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn short_notes_are_given_whole() {
        assert_eq!(bounded("# plan\n- done: a\n"), "# plan\n- done: a\n");
    }

    #[test]
    fn long_notes_keep_head_and_tail_and_say_what_was_cut() {
        let text = format!("{}{}", "é".repeat(NOTES_LIMIT), "z".repeat(10));
        let kept = bounded(&text);
        let half = NOTES_LIMIT / 2;
        assert!(kept.starts_with(&"é".repeat(half)), "{kept}");
        assert!(kept.ends_with(&format!("{}{}", "é".repeat(half - 10), "z".repeat(10))));
        assert!(kept.contains("[… 10 characters cut from the middle; read .duet/notes.md"));
    }

    #[tokio::test]
    async fn missing_or_empty_notes_give_nothing() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()).await, None);
        std::fs::create_dir(dir.path().join(".duet")).unwrap();
        std::fs::write(dir.path().join(NOTES_FILE), "  \n").unwrap();
        assert_eq!(read(dir.path()).await, None);
        std::fs::write(dir.path().join(NOTES_FILE), "- [x] step one\n").unwrap();
        assert_eq!(
            read(dir.path()).await,
            Some(format!("{NOTES_HEADER}- [x] step one\n"))
        );
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn notes_that_are_a_link_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("id_rsa");
        std::fs::write(&secret, "PRIVATE KEY\n").unwrap();
        std::fs::create_dir(dir.path().join(".duet")).unwrap();
        std::os::unix::fs::symlink(&secret, dir.path().join(NOTES_FILE)).unwrap();
        assert_eq!(read(dir.path()).await, None);
        std::fs::remove_file(dir.path().join(NOTES_FILE)).unwrap();
        std::fs::remove_dir(dir.path().join(".duet")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join(".duet")).unwrap();
        std::fs::write(outside.path().join("notes.md"), "PRIVATE\n").unwrap();
        assert_eq!(read(dir.path()).await, None);
    }

    #[test]
    fn older_copies_become_a_stub_and_nothing_else_changes() {
        let mut messages = vec![
            Message::user_text(format!("{NOTES_HEADER}old plan")),
            Message {
                role: Role::Assistant,
                content: vec![Block::Text {
                    text: format!("{NOTES_HEADER}quoted by the model"),
                }],
            },
        ];
        retire_copies(&mut messages);
        assert_eq!(
            messages[0].content,
            [Block::Text {
                text: RETIRED_COPY.into()
            }]
        );
        assert_eq!(
            messages[1].content,
            [Block::Text {
                text: format!("{NOTES_HEADER}quoted by the model")
            }]
        );
    }
}
