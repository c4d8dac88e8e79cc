//! Reading a session file back: the header, what the conversation went through, and a
//! few facts for listings.

use std::collections::BTreeMap;
use std::path::Path;

use super::SessionError;
use super::record::{FORMAT_VERSION, Header, Record};
use crate::provider::{Block, Message, ToolResult, Usage};

/// One change to the conversation, in the order it happened. Replaying them with the
/// agent's own rules rebuilds the conversation the model saw.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// User text (a task or a steering message).
    User(String),
    /// An image attached to the user's message (`Block::Image`).
    UserImage(Block),
    /// One model response and the answers to its calls. For a step cut short by a
    /// killed process, whatever parts were recorded (calls may lack their results).
    Step {
        assistant: Vec<Block>,
        results: Vec<ToolResult>,
    },
    /// The conversation was compacted into exactly these messages; the changes before
    /// are superseded.
    Compacted(Vec<Message>),
}

/// A session as recorded.
#[derive(Clone, Debug, PartialEq)]
pub struct Session {
    pub header: Header,
    /// The conversation's changes since the last clear.
    pub changes: Vec<Change>,
    /// The one-line summary of each tool result, by call id (for display).
    pub summaries: BTreeMap<String, String>,
    /// Tokens used by every model call of the session.
    pub usage: Usage,
    /// Turns started, including one cut short by a killed process.
    pub turns: usize,
    /// The first user message of the session, even if cleared later.
    pub first_message: Option<String>,
    /// Turns whose changes can still be undone, oldest first.
    pub undoable: Vec<UndoableTurn>,
}

/// A recorded turn that changed files: its snapshots as git commit ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UndoableTurn {
    pub turn: u32,
    pub before: String,
    pub after: String,
}

/// Reads the session at `path`. A line that cannot be read (torn by a killed process,
/// or from a newer duet) is skipped with a warning; only an unreadable file or a
/// missing or foreign header is an error.
pub fn load(path: &Path) -> Result<Session, SessionError> {
    let text = std::fs::read_to_string(path).map_err(|source| SessionError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse(path, &text)
}

fn parse(path: &Path, text: &str) -> Result<Session, SessionError> {
    let mut lines = text.lines().enumerate();
    let not_a_session = |reason: String| SessionError::NotASession {
        path: path.to_path_buf(),
        reason,
    };
    let (_, first) = lines
        .next()
        .ok_or_else(|| not_a_session("the file is empty".into()))?;
    let header: Header = serde_json::from_str(first)
        .map_err(|error| not_a_session(format!("bad header: {error}")))?;
    if header.format > FORMAT_VERSION {
        return Err(SessionError::NewerFormat {
            path: path.to_path_buf(),
            found: header.format,
        });
    }
    let mut rebuild = Rebuild::new(header);
    for (index, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Record>(line) {
            Ok(record) => rebuild.apply(record),
            Err(error) => tracing::warn!(
                path = %path.display(),
                line = index + 1,
                %error,
                "skipping an unreadable session record"
            ),
        }
    }
    Ok(rebuild.finish())
}

/// The session being rebuilt record by record.
struct Rebuild {
    session: Session,
    /// Parts of the step in progress, not yet confirmed by a `Step` record.
    partial: Option<PartialStep>,
    turn_open: bool,
}

#[derive(Default)]
struct PartialStep {
    assistant: Vec<Block>,
    results: Vec<ToolResult>,
}

impl Rebuild {
    fn new(header: Header) -> Self {
        Self {
            session: Session {
                header,
                changes: Vec::new(),
                summaries: BTreeMap::new(),
                usage: Usage::default(),
                turns: 0,
                first_message: None,
                undoable: Vec::new(),
            },
            partial: None,
            turn_open: false,
        }
    }

    fn apply(&mut self, record: Record) {
        match record {
            Record::User { text } => {
                self.close_partial();
                if !self.turn_open {
                    self.turn_open = true;
                    self.session.turns += 1;
                }
                self.session
                    .first_message
                    .get_or_insert_with(|| text.clone());
                self.session.changes.push(Change::User(text));
            }
            Record::UserImage { media_type, data } => {
                self.session
                    .changes
                    .push(Change::UserImage(Block::Image { media_type, data }));
            }
            Record::AssistantPart { blocks } => {
                let partial = self.partial.get_or_insert_with(PartialStep::default);
                partial.assistant.extend(blocks);
            }
            Record::ToolResult { result, summary } => {
                self.session
                    .summaries
                    .insert(result.call_id.clone(), summary);
                let partial = self.partial.get_or_insert_with(PartialStep::default);
                partial.results.push(result);
            }
            Record::Step { assistant, results } => {
                self.partial = None;
                self.session
                    .changes
                    .push(Change::Step { assistant, results });
            }
            Record::Cleared => {
                self.partial = None;
                self.session.changes.clear();
                self.session.summaries.clear();
            }
            Record::Compacted { messages } => {
                // Compaction happens between steps, and restates every step before it.
                self.partial = None;
                self.session.changes.clear();
                self.session.changes.push(Change::Compacted(messages));
            }
            Record::Resumed { .. } => {
                // The previous process may have died mid-step: what it recorded of
                // that step is all there will ever be.
                self.close_partial();
                self.turn_open = false;
            }
            Record::TurnEnd { .. } => {
                self.close_partial();
                self.turn_open = false;
            }
            Record::Usage { usage } => self.session.usage += usage,
            Record::TurnCheckpoints {
                turn,
                before,
                after,
            } => self.session.undoable.push(UndoableTurn {
                turn,
                before,
                after,
            }),
            Record::Undone { turns } => self
                .session
                .undoable
                .retain(|undoable| !turns.contains(&undoable.turn)),
            Record::Approval { .. } | Record::ModeChanged { .. } => {}
            Record::Unknown => tracing::debug!("skipping a session record of an unknown kind"),
        }
    }

    /// Keeps the parts of a step that never got its `Step` record.
    fn close_partial(&mut self) {
        if let Some(PartialStep { assistant, results }) = self.partial.take()
            && !assistant.is_empty()
        {
            self.session
                .changes
                .push(Change::Step { assistant, results });
        }
    }

    fn finish(mut self) -> Session {
        self.close_partial();
        self.session
    }
}
