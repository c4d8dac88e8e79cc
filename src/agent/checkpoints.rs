//! Checkpoints of each turn, and undoing turns.
//!
//! Owns: when the workspace is snapshotted — right before the first side effect of a
//! turn is allowed to run (a write, an edit or a shell command: [`CheckpointGate`] wraps
//! the approver every tool asks first), and again when a turn that took one ends — the
//! stack of turns that can be undone, and answering [`Command::Undo`].
//! Does not own: snapshots and restores themselves ([`crate::git::checkpoint`]), or
//! telling the model (the agent adds the note).
//! Invariant: a turn is undone only with both of its snapshots, newest turn first; an
//! undo that is refused leaves the files and the stack as they were.
//!
//! [`Command::Undo`]: super::protocol::Command::Undo

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::Mutex;

use crate::git::checkpoint::{Checkpoint, CheckpointError, CheckpointStore};
use crate::policy::{ApprovalRequest, Approver, Decision};
use crate::session::{Record, UndoableTurn};
use crate::tools::Workspace;

use super::approval::ApprovalDesk;
use super::events::EventSink;
use super::protocol::{CheckpointStage, Event, UndoScope};

/// A turn's snapshots, or why it has none.
enum TurnSnapshots {
    Taken(Checkpoint, Checkpoint),
    /// Taken by an earlier process of this session (`--resume`): commit ids, looked up
    /// when an undo needs them.
    Recorded {
        before: String,
        after: String,
    },
    Missing(String),
}

struct State {
    /// The current turn, counted from 1; 0 before the first.
    turn: u32,
    /// The current turn's before-snapshot, once its first side effect was allowed.
    before: Option<Result<Checkpoint, String>>,
    /// Turns that changed files (or may have, when a snapshot failed), oldest first.
    undoable: Vec<(u32, TurnSnapshots)>,
    /// Opened on first use, so a session that changes nothing creates nothing.
    store: Option<Result<Arc<CheckpointStore>, String>>,
}

/// What an undo reverted.
#[derive(Debug)]
pub(crate) struct Undone {
    pub(crate) turns: Vec<u32>,
    /// Workspace-relative, sorted.
    pub(crate) files: Vec<String>,
    /// The restored files, absolute.
    pub(crate) paths: Vec<PathBuf>,
    /// The files left as they are, workspace-relative, each with why.
    pub(crate) not_restored: Vec<(String, String)>,
}

pub(crate) struct Checkpoints {
    workspace: Arc<Workspace>,
    /// Where the snapshots of a workspace outside git are kept.
    private_repo: PathBuf,
    events: EventSink,
    state: Mutex<State>,
}

impl Checkpoints {
    pub(crate) fn new(workspace: Arc<Workspace>, private_repo: PathBuf, events: EventSink) -> Self {
        Self {
            workspace,
            private_repo,
            events,
            state: Mutex::new(State {
                turn: 0,
                before: None,
                undoable: Vec::new(),
                store: None,
            }),
        }
    }

    /// Starts the next turn; returns its number, counted from 1 in the session.
    pub(crate) async fn begin_turn(&self) -> u32 {
        let mut state = self.state.lock().await;
        state.turn += 1;
        state.before = None;
        state.turn
    }

    /// Continues a resumed session: turns are counted on from `turns_so_far`, and the
    /// recorded turns stay undoable.
    pub(crate) async fn restore(&self, turns_so_far: u32, recorded: Vec<UndoableTurn>) {
        let mut state = self.state.lock().await;
        let last_recorded = recorded.iter().map(|turn| turn.turn).max().unwrap_or(0);
        state.turn = turns_so_far.max(last_recorded);
        state.undoable = recorded
            .into_iter()
            .map(|turn| {
                let snapshots = TurnSnapshots::Recorded {
                    before: turn.before,
                    after: turn.after,
                };
                (turn.turn, snapshots)
            })
            .collect();
    }

    /// Takes the turn's before-snapshot unless it has one.
    pub(crate) async fn before_side_effect(&self) {
        let mut state = self.state.lock().await;
        if state.before.is_none() {
            let taken = self.snapshot(&mut state, CheckpointStage::Before).await;
            state.before = Some(taken);
        }
    }

    /// Takes the after-snapshot of a turn that took a before-snapshot, and makes the
    /// turn undoable if its files changed.
    pub(crate) async fn end_turn(&self) {
        let mut state = self.state.lock().await;
        let Some(before) = state.before.take() else {
            return;
        };
        let snapshots = match before {
            Ok(before) => match self.snapshot(&mut state, CheckpointStage::After).await {
                Ok(after) if after.same_files_as(&before) => return,
                Ok(after) => TurnSnapshots::Taken(before, after),
                Err(reason) => TurnSnapshots::Missing(reason),
            },
            Err(reason) => TurnSnapshots::Missing(reason),
        };
        let turn = state.turn;
        if let TurnSnapshots::Taken(before, after) = &snapshots {
            self.events
                .record(Record::TurnCheckpoints {
                    turn,
                    before: before.commit_id(),
                    after: after.commit_id(),
                })
                .await;
        }
        state.undoable.push((turn, snapshots));
    }

    /// Reverts the last undoable turn, or all of them. The error is a message for the
    /// user; nothing changed when it is returned.
    pub(crate) async fn undo(&self, scope: UndoScope) -> Result<Undone, String> {
        let mut state = self.state.lock().await;
        if state.undoable.is_empty() {
            return Err(
                "There is nothing to undo: no turn of this session changed files, \
                        or their changes are already undone."
                    .to_string(),
            );
        }
        let count = match scope {
            UndoScope::LastTurn => 1,
            UndoScope::All => state.undoable.len(),
        };
        let first = state.undoable.len() - count;
        let store = self.store(&mut state).await?;
        let mut turns = Vec::with_capacity(count);
        let mut pairs = Vec::with_capacity(count);
        for (turn, snapshots) in state.undoable[first..].iter().rev() {
            pairs.push(resolve(&store, *turn, snapshots)?);
            turns.push(*turn);
        }
        let undone = tokio::task::spawn_blocking(move || store.undo(&pairs))
            .await
            .map_err(|error| format!("Undo stopped unexpectedly: {error}"))?;
        let report = undone.map_err(|error| self.explain_undo_failure(error))?;
        state.undoable.truncate(first);
        turns.reverse();
        let paths: Vec<PathBuf> = report
            .restored
            .iter()
            .map(|rel| self.workspace.root().join(rel))
            .collect();
        let not_restored = report
            .not_restored
            .into_iter()
            .map(|(rel, why)| (self.display(&self.workspace.root().join(rel)), why))
            .collect();
        Ok(Undone {
            turns,
            files: paths.iter().map(|path| self.display(path)).collect(),
            paths,
            not_restored,
        })
    }

    fn explain_undo_failure(&self, error: CheckpointError) -> String {
        match error {
            CheckpointError::ChangedSince { paths } => {
                let names: Vec<String> = paths
                    .iter()
                    .map(|rel| self.display(&self.workspace.root().join(rel)))
                    .collect();
                format!(
                    "Nothing was undone: {} changed after duet's turn, and undoing would \
                     overwrite those changes. Revert them yourself first, or keep them.",
                    names.join(", ")
                )
            }
            CheckpointError::ThroughLink { paths } => {
                let names: Vec<String> = paths
                    .iter()
                    .map(|(rel, link)| {
                        format!(
                            "{} (through `{}`)",
                            self.display(&self.workspace.root().join(rel)),
                            self.display(&self.workspace.root().join(link))
                        )
                    })
                    .collect();
                format!(
                    "Nothing was undone: {} now {} through a symbolic link made after duet's \
                     turn, and undo never reads, writes or deletes through links. Remove the \
                     link (or put the directory back), then undo again.",
                    names.join(", "),
                    if paths.len() == 1 { "leads" } else { "lead" }
                )
            }
            other => format!("Undo failed: {other}"),
        }
    }

    fn display(&self, path: &Path) -> String {
        self.workspace.display(path)
    }

    /// Snapshots the workspace and reports it; the error is why there is no snapshot.
    async fn snapshot(
        &self,
        state: &mut State,
        stage: CheckpointStage,
    ) -> Result<Checkpoint, String> {
        let store = self.store(state).await?;
        let turn = state.turn;
        let label = match stage {
            CheckpointStage::Before => format!("before turn {turn}"),
            CheckpointStage::After => format!("after turn {turn}"),
        };
        let started = std::time::Instant::now();
        let taken = tokio::task::spawn_blocking(move || store.snapshot(&label))
            .await
            .map_err(|error| error.to_string())?;
        let checkpoint = taken.map_err(|error| {
            tracing::warn!(%error, turn, ?stage, "checkpoint failed");
            format!("the snapshot failed: {error}")
        })?;
        tracing::info!(turn, ?stage, elapsed = ?started.elapsed(), "checkpoint taken");
        self.events
            .emit(Event::CheckpointTaken {
                turn,
                stage,
                commit: checkpoint.commit_id(),
            })
            .await;
        Ok(checkpoint)
    }

    async fn store(&self, state: &mut State) -> Result<Arc<CheckpointStore>, String> {
        if state.store.is_none() {
            let root = self.workspace.root().to_path_buf();
            let private_repo = self.private_repo.clone();
            let opened =
                tokio::task::spawn_blocking(move || CheckpointStore::open(&root, &private_repo))
                    .await
                    .map_err(|error| error.to_string())
                    .and_then(|opened| opened.map_err(|error| error.to_string()))
                    .map(Arc::new)
                    .map_err(|error| format!("checkpoints are unavailable: {error}"));
            if let Err(error) = &opened {
                tracing::warn!(%error, "cannot open the checkpoint store");
            }
            state.store = Some(opened);
        }
        match &state.store {
            Some(store) => store.clone(),
            None => Err("checkpoints are unavailable".to_string()),
        }
    }
}

/// The before/after pair of `turn`, or why it cannot be undone.
fn resolve(
    store: &CheckpointStore,
    turn: u32,
    snapshots: &TurnSnapshots,
) -> Result<(Checkpoint, Checkpoint), String> {
    let no_checkpoint = |reason: &str| {
        format!(
            "Nothing was undone: turn {turn} has no checkpoint ({reason}), so its changes \
             cannot be reverted."
        )
    };
    match snapshots {
        TurnSnapshots::Taken(before, after) => Ok((*before, *after)),
        TurnSnapshots::Recorded { before, after } => {
            let find = |id: &str| {
                store.find(id).map_err(|error| {
                    no_checkpoint(&format!(
                        "snapshot {id} is no longer in the repository: {error}"
                    ))
                })
            };
            Ok((find(before)?, find(after)?))
        }
        TurnSnapshots::Missing(reason) => Err(no_checkpoint(reason)),
    }
}

/// The approver tools see: the approval desk decides, and a decision that lets a side
/// effect run first makes sure the turn has its before-snapshot.
pub(crate) struct CheckpointGate {
    pub(crate) desk: Arc<ApprovalDesk>,
    pub(crate) checkpoints: Arc<Checkpoints>,
}

#[async_trait::async_trait]
impl Approver for CheckpointGate {
    async fn decide(&self, request: ApprovalRequest) -> Decision {
        let decision = self.desk.decide(request).await;
        if !matches!(decision, Decision::Reject { .. }) {
            self.checkpoints.before_side_effect().await;
        }
        decision
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use tokio::sync::mpsc;

    use super::*;

    struct Fixture {
        dir: tempfile::TempDir,
        checkpoints: Checkpoints,
        events: mpsc::Receiver<Event>,
    }

    impl Fixture {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let workspace = Arc::new(Workspace::new(dir.path()).unwrap());
            let (sender, events) = mpsc::channel(64);
            let checkpoints = Checkpoints::new(
                workspace,
                dir.path().join(".state/checkpoints.git"),
                EventSink::new(sender),
            );
            std::fs::write(dir.path().join(".gitignore"), ".state/\n").unwrap();
            Self {
                dir,
                checkpoints,
                events,
            }
        }

        fn write(&self, content: &str) {
            std::fs::write(self.dir.path().join("a.txt"), content).unwrap();
        }

        fn read(&self) -> String {
            std::fs::read_to_string(self.dir.path().join("a.txt")).unwrap()
        }

        /// A turn whose one side effect writes `content`.
        async fn turn(&self, content: &str) {
            self.checkpoints.begin_turn().await;
            self.checkpoints.before_side_effect().await;
            self.write(content);
            self.checkpoints.before_side_effect().await;
            self.checkpoints.end_turn().await;
        }
    }

    #[tokio::test]
    async fn repeated_undo_walks_back_turn_by_turn() {
        let mut fx = Fixture::new();
        fx.write("v0\n");
        fx.turn("v1\n").await;
        fx.checkpoints.begin_turn().await; // a turn without side effects
        fx.checkpoints.end_turn().await;
        fx.turn("v2\n").await;

        let undone = fx.checkpoints.undo(UndoScope::LastTurn).await.unwrap();
        assert_eq!(
            (undone.turns, undone.files),
            (vec![3], vec!["a.txt".into()])
        );
        assert_eq!(fx.read(), "v1\n");
        let undone = fx.checkpoints.undo(UndoScope::LastTurn).await.unwrap();
        assert_eq!(undone.turns, [1]);
        assert_eq!(fx.read(), "v0\n");
        assert!(fx.checkpoints.undo(UndoScope::All).await.is_err());

        let mut taken = Vec::new();
        while let Ok(event) = fx.events.try_recv() {
            if let Event::CheckpointTaken { turn, stage, .. } = event {
                taken.push((turn, stage));
            }
        }
        use CheckpointStage::{After, Before};
        assert_eq!(taken, [(1, Before), (1, After), (3, Before), (3, After)]);
    }

    #[tokio::test]
    async fn undo_all_reverts_every_turn_at_once() {
        let fx = Fixture::new();
        fx.write("v0\n");
        fx.turn("v1\n").await;
        fx.turn("v2\n").await;
        let undone = fx.checkpoints.undo(UndoScope::All).await.unwrap();
        assert_eq!(undone.turns, [1, 2]);
        assert_eq!(fx.read(), "v0\n");
    }

    #[tokio::test]
    async fn a_turn_that_changed_nothing_is_not_undoable() {
        let fx = Fixture::new();
        fx.write("v0\n");
        fx.turn("v0\n").await;
        let message = fx.checkpoints.undo(UndoScope::LastTurn).await.unwrap_err();
        assert!(message.contains("nothing to undo"), "{message}");
    }
}
