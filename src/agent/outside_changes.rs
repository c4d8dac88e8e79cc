//! Telling the model what happened outside its view: the user undid its changes, or
//! files it read changed on disk since.
//!
//! Owns: answering [`Command::Undo`] for the agent and the wording of both notes.
//! Does not own: the undo itself ([`super::checkpoints`]) or noticing changes
//! ([`crate::tools::ReadLedger`]).
//! Invariant: each note joins the conversation as user text — and the session
//! transcript as such, so a resumed session replays it — so the model's next request
//! carries it and every later one keeps it; a change is noted once.
//!
//! [`Command::Undo`]: super::protocol::Command::Undo

use std::sync::Arc;

use crate::session::Record;

use super::protocol::{Event, UndoScope};
use super::session::Agent;

impl Agent {
    /// Reverts the last turn's changes or the whole session's, between turns.
    pub(super) async fn undo(&mut self, scope: UndoScope) {
        let undone = match self.checkpoints.undo(scope).await {
            Ok(undone) => undone,
            Err(message) => {
                self.events.emit(Event::UndoFailed { message }).await;
                return;
            }
        };
        // The model hears about these files from the undo note, not as changes on disk.
        for path in &undone.paths {
            self.tool_ctx.ledger.mark_reported(path);
        }
        if !undone.files.is_empty() || !undone.not_restored.is_empty() {
            self.add_note(undone_note(scope, &undone.files, &undone.not_restored))
                .await;
        }
        self.events
            .emit(Event::Undone {
                turns: undone.turns,
                files: undone.files,
            })
            .await;
        if !undone.not_restored.is_empty() {
            self.events
                .emit(Event::UndoFailed {
                    message: not_restored_message(&undone.not_restored),
                })
                .await;
        }
    }

    pub(super) async fn refuse_undo_during_turn(&self) {
        self.events
            .emit(Event::UndoFailed {
                message: "Nothing was undone: a turn is running. Wait for it to end, or \
                          interrupt it, then undo."
                    .to_string(),
            })
            .await;
    }

    /// Tells the model which files it read changed on disk since, before its next step.
    pub(super) async fn report_external_changes(&mut self) {
        let ledger = Arc::clone(&self.tool_ctx.ledger);
        let changed = tokio::task::spawn_blocking(move || ledger.take_unreported_changes())
            .await
            .unwrap_or_else(|error| {
                tracing::warn!(%error, "checking for changed files failed");
                Vec::new()
            });
        if changed.is_empty() {
            return;
        }
        let files: Vec<String> = changed
            .iter()
            .map(|path| self.tool_ctx.workspace.display(path))
            .collect();
        tracing::info!(?files, "files changed on disk since the model read them");
        self.add_note(changed_note(&files)).await;
    }

    /// Adds a note the model reads with its next request, and records it.
    pub(super) async fn add_note(&mut self, note: String) {
        self.events
            .record(Record::User { text: note.clone() })
            .await;
        self.conversation.push_user_text(note);
    }
}

fn undone_note(scope: UndoScope, files: &[String], not_restored: &[(String, String)]) -> String {
    let whose = match scope {
        UndoScope::LastTurn => "the changes of your most recent turn that changed files",
        UndoScope::All => "all your changes in this session",
    };
    let mut note = if files.is_empty() {
        format!("The user undid {whose}, but no file could be restored.")
    } else {
        format!(
            "The user undid {whose}: {} {} back as {} before.",
            files.join(", "),
            if files.len() == 1 { "is" } else { "are" },
            if files.len() == 1 {
                "it was"
            } else {
                "they were"
            },
        )
    };
    if !not_restored.is_empty() {
        note.push(' ');
        note.push_str(&not_restored_message(not_restored));
    }
    note.push_str(" Read a file again before changing it.");
    note
}

/// The files an undo left as they are, and why.
fn not_restored_message(not_restored: &[(String, String)]) -> String {
    let listed: Vec<String> = not_restored
        .iter()
        .map(|(file, why)| format!("{file} ({why})"))
        .collect();
    format!("Not restored: {}.", listed.join("; "))
}

fn changed_note(files: &[String]) -> String {
    let (these, them) = if files.len() == 1 {
        ("This file", "it")
    } else {
        ("These files", "them")
    };
    format!(
        "{these} changed on disk since you last read {them} (the user or a command changed \
         {them}): {}. Edits based on what you read before will be refused; read {them} \
         again first.",
        files.join(", "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_name_the_files_in_plain_words() {
        assert_eq!(
            undone_note(UndoScope::LastTurn, &["a.rs".into(), "b.rs".into()], &[]),
            "The user undid the changes of your most recent turn that changed files: a.rs, \
             b.rs are back as they were before. Read a file again before changing it."
        );
        assert_eq!(
            undone_note(UndoScope::All, &["a.rs".into()], &[]),
            "The user undid all your changes in this session: a.rs is back as it was before. \
             Read a file again before changing it."
        );
        assert_eq!(
            undone_note(
                UndoScope::LastTurn,
                &["a.rs".into()],
                &[("vendor/x/config".into(), "it is git metadata".into())]
            ),
            "The user undid the changes of your most recent turn that changed files: a.rs is \
             back as it was before. Not restored: vendor/x/config (it is git metadata). Read a \
             file again before changing it."
        );
        assert_eq!(
            changed_note(&["src/a.rs".into()]),
            "This file changed on disk since you last read it (the user or a command changed \
             it): src/a.rs. Edits based on what you read before will be refused; read it again \
             first."
        );
    }
}
