//! The agent's side of the policy hook: the approval desk.
//!
//! Tools ask the desk before a side effect. The desk judges the action under the current
//! mode; when the mode says "ask", it files the request, reports
//! [`Event::ApprovalNeeded`], and waits for the front end's [`Command::Decide`] — tools
//! never see the UI. An interrupt withdraws every waiting request; a mode switch
//! re-judges them.
//!
//! [`Command::Decide`]: super::protocol::Command::Decide

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio::sync::oneshot;

use crate::diff;
use crate::policy::{Action, ApprovalMode, ApprovalRequest, Approver, Decision, Verdict, judge};

use super::events::EventSink;
use super::protocol::{ApprovalView, Event, HunkView};

/// What a withdrawn request answers the tool.
const WITHDRAWN: &str = "the user interrupted before deciding, so nothing was done";

struct Waiting {
    action: Action,
    reply: oneshot::Sender<Decision>,
}

pub(crate) struct ApprovalDesk {
    mode: Mutex<ApprovalMode>,
    waiting: Mutex<HashMap<String, Waiting>>,
    events: EventSink,
}

impl ApprovalDesk {
    pub(crate) fn new(mode: ApprovalMode, events: EventSink) -> Self {
        Self {
            mode: Mutex::new(mode),
            waiting: Mutex::new(HashMap::new()),
            events,
        }
    }

    pub(crate) fn mode(&self) -> ApprovalMode {
        *lock(&self.mode)
    }

    /// Switches the mode and settles every waiting request the new mode decides alone.
    pub(crate) async fn set_mode(&self, mode: ApprovalMode) {
        *lock(&self.mode) = mode;
        self.events.emit(Event::ModeChanged { mode }).await;
        let settled: Vec<(String, Decision)> = lock(&self.waiting)
            .iter()
            .filter_map(|(call_id, waiting)| {
                decided_alone(judge(mode, &waiting.action)).map(|d| (call_id.clone(), d))
            })
            .collect();
        for (call_id, decision) in settled {
            self.settle(&call_id, decision).await;
        }
    }

    /// Delivers the user's decision; false when nothing waits under `call_id` (it was
    /// withdrawn or already settled).
    pub(crate) async fn settle(&self, call_id: &str, decision: Decision) -> bool {
        let Some(waiting) = lock(&self.waiting).remove(call_id) else {
            tracing::debug!(call_id, "decision for a request that no longer waits");
            return false;
        };
        // The tool may have been cancelled meanwhile; then nobody needs the answer.
        let _ = waiting.reply.send(decision.clone());
        self.events
            .emit(Event::ApprovalClosed {
                call_id: call_id.to_string(),
                decision: Some(decision),
            })
            .await;
        true
    }

    /// Withdraws every waiting request (the user interrupted).
    pub(crate) async fn withdraw_all(&self) {
        let withdrawn: Vec<String> = lock(&self.waiting).drain().map(|(id, _)| id).collect();
        for call_id in withdrawn {
            self.events
                .emit(Event::ApprovalClosed {
                    call_id,
                    decision: None,
                })
                .await;
        }
    }

    async fn ask(&self, request: ApprovalRequest, why: String) -> Decision {
        let (reply, answer) = oneshot::channel();
        let view = view_of(&request.action);
        lock(&self.waiting).insert(
            request.call_id.clone(),
            Waiting {
                action: request.action,
                reply,
            },
        );
        self.events
            .emit(Event::ApprovalNeeded {
                call_id: request.call_id,
                why,
                request: view,
            })
            .await;
        answer.await.unwrap_or(Decision::Reject {
            reason: Some(WITHDRAWN.into()),
        })
    }
}

#[async_trait::async_trait]
impl Approver for ApprovalDesk {
    async fn decide(&self, request: ApprovalRequest) -> Decision {
        if let Action::WriteFile {
            display,
            before,
            after,
            ..
        } = &request.action
        {
            self.events
                .emit(Event::EditProposed {
                    call_id: request.call_id.clone(),
                    path: display.clone(),
                    diff: diff::unified(display, before.as_deref(), after),
                })
                .await;
        }
        match judge(self.mode(), &request.action) {
            Verdict::Ask { why } => self.ask(request, why).await,
            verdict => decided_alone(verdict).unwrap_or(Decision::Reject { reason: None }),
        }
    }
}

/// The decision a verdict makes without a person, if it makes one.
fn decided_alone(verdict: Verdict) -> Option<Decision> {
    match verdict {
        Verdict::Allow => Some(Decision::Approve),
        Verdict::Deny { reason } => Some(Decision::Reject {
            reason: Some(reason),
        }),
        Verdict::Ask { .. } => None,
    }
}

fn view_of(action: &Action) -> ApprovalView {
    match action {
        Action::WriteFile {
            display,
            before,
            after,
            ..
        } => ApprovalView::Edit {
            path: display.clone(),
            before: before.clone(),
            after: after.clone(),
            diff: diff::unified(display, before.as_deref(), after),
            hunks: diff::hunks(before.as_deref(), after)
                .into_iter()
                .map(|hunk| HunkView {
                    text: hunk.to_unified(),
                    header: hunk.header,
                    id: hunk.id,
                })
                .collect(),
        },
        Action::RunCommand { command, cwd } => ApprovalView::Command {
            command: command.clone(),
            cwd: cwd.clone(),
        },
    }
}

/// A poisoned lock only means another thread panicked mid-update of plain data; the
/// map and mode are still usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use pretty_assertions::assert_eq;
    use tokio::sync::mpsc;

    use super::*;

    fn desk(mode: ApprovalMode) -> (Arc<ApprovalDesk>, mpsc::Receiver<Event>) {
        let (tx, rx) = mpsc::channel(64);
        (Arc::new(ApprovalDesk::new(mode, EventSink::new(tx))), rx)
    }

    fn command(call_id: &str) -> ApprovalRequest {
        ApprovalRequest {
            call_id: call_id.into(),
            action: Action::RunCommand {
                command: "cargo test".into(),
                cwd: ".".into(),
            },
        }
    }

    async fn next_needed(rx: &mut mpsc::Receiver<Event>) -> String {
        loop {
            if let Some(Event::ApprovalNeeded { call_id, .. }) = rx.recv().await {
                return call_id;
            }
        }
    }

    #[tokio::test]
    async fn ask_waits_for_the_users_decision() {
        let (desk, mut rx) = desk(ApprovalMode::Ask);
        let asking = tokio::spawn({
            let desk = Arc::clone(&desk);
            async move { desk.decide(command("c1")).await }
        });
        assert_eq!(next_needed(&mut rx).await, "c1");
        let reject = Decision::Reject {
            reason: Some("not now".into()),
        };
        assert!(desk.settle("c1", reject.clone()).await);
        assert_eq!(asking.await.unwrap(), reject);
        assert!(
            !desk.settle("c1", Decision::Approve).await,
            "settled only once"
        );
    }

    #[tokio::test]
    async fn interrupt_withdraws_waiting_requests() {
        let (desk, mut rx) = desk(ApprovalMode::Ask);
        let asking = tokio::spawn({
            let desk = Arc::clone(&desk);
            async move { desk.decide(command("c1")).await }
        });
        next_needed(&mut rx).await;
        desk.withdraw_all().await;
        let Decision::Reject {
            reason: Some(reason),
        } = asking.await.unwrap()
        else {
            panic!("a withdrawn request must be a rejection");
        };
        assert!(reason.contains("interrupted"), "{reason}");
        let closed = rx.recv().await;
        assert_eq!(
            closed,
            Some(Event::ApprovalClosed {
                call_id: "c1".into(),
                decision: None
            })
        );
    }

    #[tokio::test]
    async fn switching_to_auto_releases_what_waits() {
        let (desk, mut rx) = desk(ApprovalMode::Ask);
        let asking = tokio::spawn({
            let desk = Arc::clone(&desk);
            async move { desk.decide(command("c1")).await }
        });
        next_needed(&mut rx).await;
        desk.set_mode(ApprovalMode::AutoEdit).await;
        assert!(!asking.is_finished(), "auto-edit still asks for commands");
        desk.set_mode(ApprovalMode::Auto).await;
        assert_eq!(asking.await.unwrap(), Decision::Approve);
        assert_eq!(desk.mode(), ApprovalMode::Auto);
    }

    #[tokio::test]
    async fn modes_that_decide_alone_never_ask() {
        let (desk, mut rx) = desk(ApprovalMode::ReadOnly);
        let mut request = command("c1");
        request.action = Action::RunCommand {
            command: "rm -rf target".into(),
            cwd: ".".into(),
        };
        let decision = desk.decide(request).await;
        assert!(matches!(decision, Decision::Reject { reason: Some(_) }));
        drop(desk);
        while let Some(event) = rx.recv().await {
            assert!(!matches!(event, Event::ApprovalNeeded { .. }), "{event:?}");
        }
    }
}
