//! The agent's side of the policy hook: the approval desk.
//!
//! Tools ask the desk before a side effect. The desk assesses the action once (the
//! command's class, the protected paths it touches) and judges it under the current
//! mode; when the mode says "ask", it files the request, reports
//! [`Event::ApprovalNeeded`] with the class and reasons, and waits for the front end's
//! [`Command::Decide`] — tools never see the UI. An interrupt withdraws every waiting
//! request; a mode switch re-judges them from their assessment.
//!
//! [`Command::Decide`]: super::protocol::Command::Decide

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::oneshot;

use crate::diff;
use crate::policy::{
    Action, ApprovalMode, ApprovalRequest, Approver, Assessment, CommandClass, Decision, Policy,
    TrackedFiles, Verdict,
};

use super::events::EventSink;
use super::protocol::{ApprovalView, Event, HunkView};

/// What a withdrawn request answers the tool.
const WITHDRAWN: &str = "the user interrupted before deciding, so nothing was done";

struct Waiting {
    assessment: Assessment,
    reply: oneshot::Sender<Decision>,
}

/// What a PreToolUse hook said of a call, for the desk to apply to its verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum HookSays {
    /// A person decides, whatever the mode allows; `why` is shown to them.
    Ask { why: String },
    /// A trusted hook lets it through without asking, unless a protected path is
    /// involved (those need a person) or the policy refuses it.
    Allow,
}

pub(crate) struct ApprovalDesk {
    mode: Mutex<ApprovalMode>,
    policy: Arc<Policy>,
    tracked: Arc<dyn TrackedFiles>,
    waiting: Mutex<HashMap<String, Waiting>>,
    /// What hooks said of calls still running, by call id.
    hook_says: Mutex<HashMap<String, HookSays>>,
    /// Told when a request starts waiting for a person (the Notification hooks).
    on_ask: Mutex<Option<OnAsk>>,
    events: EventSink,
}

/// What the desk calls, with a message for the user, when a request starts waiting.
pub(crate) type OnAsk = Box<dyn Fn(String) + Send + Sync>;

impl ApprovalDesk {
    pub(crate) fn new(
        mode: ApprovalMode,
        policy: Policy,
        tracked: Arc<dyn TrackedFiles>,
        events: EventSink,
    ) -> Self {
        Self {
            mode: Mutex::new(mode),
            policy: Arc::new(policy),
            tracked,
            waiting: Mutex::new(HashMap::new()),
            hook_says: Mutex::new(HashMap::new()),
            on_ask: Mutex::new(None),
            events,
        }
    }

    /// Calls `on_ask` whenever a request starts waiting for a person.
    pub(crate) fn on_ask(&self, on_ask: OnAsk) {
        *lock(&self.on_ask) = Some(on_ask);
    }

    /// Applies what a hook said to the approvals of call `call_id` until
    /// [`Self::forget_hook`].
    pub(crate) fn hook_says(&self, call_id: &str, says: HookSays) {
        lock(&self.hook_says).insert(call_id.to_string(), says);
    }

    pub(crate) fn forget_hook(&self, call_id: &str) {
        lock(&self.hook_says).remove(call_id);
    }

    /// The mode's verdict, made stricter (or, by a trusted hook, looser where no
    /// protected path is involved) by what a hook said of the call.
    fn judge(&self, call_id: &str, assessment: &Assessment) -> Verdict {
        let verdict = self.policy.judge(self.mode(), assessment);
        let says = lock(&self.hook_says).get(call_id).cloned();
        match (verdict, says) {
            (Verdict::Allow, Some(HookSays::Ask { why })) => Verdict::Ask { why },
            (Verdict::Ask { .. }, Some(HookSays::Allow))
                if assessment.protected_paths().is_empty() =>
            {
                Verdict::Allow
            }
            (verdict, _) => verdict,
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
                decided_alone(self.judge(call_id, &waiting.assessment))
                    .map(|d| (call_id.clone(), d))
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
        // The calls are being cancelled: what hooks said of them goes too.
        lock(&self.hook_says).clear();
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

    /// Classifies the action off the async threads: it may read the git index.
    async fn assess(&self, action: &Action) -> Assessment {
        let policy = Arc::clone(&self.policy);
        let tracked = Arc::clone(&self.tracked);
        let action = action.clone();
        tokio::task::spawn_blocking(move || policy.assess(&action, tracked.as_ref()))
            .await
            .unwrap_or_else(|error| std::panic::resume_unwind(error.into_panic()))
    }

    async fn ask(&self, request: ApprovalRequest, assessment: Assessment, why: String) -> Decision {
        let (reply, answer) = oneshot::channel();
        let view = view_of(&request.action, &assessment);
        if let Some(on_ask) = lock(&self.on_ask).as_ref() {
            on_ask(format!("duet needs your permission: {why}"));
        }
        lock(&self.waiting).insert(request.call_id.clone(), Waiting { assessment, reply });
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
        let assessment = self.assess(&request.action).await;
        match self.judge(&request.call_id, &assessment) {
            Verdict::Ask { why } => self.ask(request, assessment, why).await,
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

fn view_of(action: &Action, assessment: &Assessment) -> ApprovalView {
    let protected = assessment.protected_paths().to_vec();
    match action {
        Action::WriteFile {
            display,
            requested,
            before,
            after,
            ..
        } => ApprovalView::Edit {
            path: display.clone(),
            requested: requested.clone(),
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
            protected,
        },
        Action::RunCommand { command, cwd, .. } => {
            let (class, reasons) = match assessment {
                Assessment::Command(classification) => {
                    (classification.class, classification.reasons.clone())
                }
                // An assessment always matches its action; a mismatch would be a bug,
                // and asking about an unknown command is the safe way to show it.
                Assessment::Write { .. } | Assessment::External(_) => {
                    (CommandClass::Unknown, Vec::new())
                }
            };
            ApprovalView::Command {
                command: command.clone(),
                cwd: cwd.clone(),
                class,
                reasons,
                protected,
            }
        }
        Action::CallExternalTool { call, arguments } => ApprovalView::ExternalTool {
            server: call.server.clone(),
            tool: call.tool.clone(),
            arguments: arguments.clone(),
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
    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    use pretty_assertions::assert_eq;
    use tokio::sync::mpsc;

    use super::*;
    use crate::policy::{PolicyConfig, Protection, Reason};

    const ROOT: &str = "/repo";

    struct NothingTracked;

    impl TrackedFiles for NothingTracked {
        fn is_tracked(&self, _path: &Path) -> bool {
            false
        }
    }

    fn desk(mode: ApprovalMode) -> (Arc<ApprovalDesk>, mpsc::Receiver<Event>) {
        let (tx, rx) = mpsc::channel(64);
        let policy = Policy::new(Path::new(ROOT), PolicyConfig::default());
        let desk = ApprovalDesk::new(mode, policy, Arc::new(NothingTracked), EventSink::new(tx));
        (Arc::new(desk), rx)
    }

    fn run(call_id: &str, command: &str) -> ApprovalRequest {
        ApprovalRequest {
            call_id: call_id.into(),
            action: Action::RunCommand {
                command: command.into(),
                cwd: "./".into(),
                dir: PathBuf::from(ROOT),
            },
        }
    }

    /// A command every mode but auto asks about.
    fn command(call_id: &str) -> ApprovalRequest {
        run(call_id, "cargo fmt")
    }

    fn write(call_id: &str, path: &str) -> ApprovalRequest {
        ApprovalRequest {
            call_id: call_id.into(),
            action: Action::WriteFile {
                path: Path::new(ROOT).join(path),
                display: path.into(),
                requested: None,
                before: Some("old\n".into()),
                after: "new\n".into(),
            },
        }
    }

    async fn next_needed(rx: &mut mpsc::Receiver<Event>) -> (String, String, ApprovalView) {
        loop {
            if let Some(Event::ApprovalNeeded {
                call_id,
                why,
                request,
            }) = rx.recv().await
            {
                return (call_id, why, request);
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
        assert_eq!(next_needed(&mut rx).await.0, "c1");
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
    async fn the_question_carries_the_class_and_the_reasons() {
        let (desk, mut rx) = desk(ApprovalMode::Auto);
        tokio::spawn({
            let desk = Arc::clone(&desk);
            async move { desk.decide(run("c1", "git status && rm -rf target")).await }
        });
        let (_, why, view) = next_needed(&mut rx).await;
        assert_eq!(
            why,
            "auto mode asks before a destructive command: `rm -rf target` deletes target and \
             everything in it"
        );
        assert_eq!(
            view,
            ApprovalView::Command {
                command: "git status && rm -rf target".into(),
                cwd: "./".into(),
                class: CommandClass::Destructive,
                reasons: vec![Reason {
                    part: "rm -rf target".into(),
                    class: CommandClass::Destructive,
                    why: "deletes target and everything in it".into(),
                }],
                protected: Vec::new(),
            }
        );
    }

    #[tokio::test]
    async fn read_only_commands_run_without_asking_in_ask_mode() {
        let (desk, mut rx) = desk(ApprovalMode::Ask);
        assert_eq!(
            desk.decide(run("c1", "git status")).await,
            Decision::Approve
        );
        assert_eq!(
            desk.decide(run("c2", "ls | xargs cat")).await,
            Decision::Approve
        );
        drop(desk);
        while let Some(event) = rx.recv().await {
            assert!(!matches!(event, Event::ApprovalNeeded { .. }), "{event:?}");
        }
    }

    #[tokio::test]
    async fn a_protected_edit_asks_even_in_auto_mode_and_a_mode_switch_does_not_release_it() {
        let (desk, mut rx) = desk(ApprovalMode::Auto);
        let asking = tokio::spawn({
            let desk = Arc::clone(&desk);
            async move { desk.decide(write("c1", "Cargo.lock")).await }
        });
        let (call_id, why, view) = next_needed(&mut rx).await;
        assert!(why.contains("Cargo.lock is protected (lockfile)"), "{why}");
        let ApprovalView::Edit { protected, .. } = view else {
            panic!("expected an edit approval");
        };
        assert_eq!(
            protected,
            [Protection {
                path: "Cargo.lock".into(),
                why: "lockfile".into(),
            }]
        );
        desk.set_mode(ApprovalMode::Auto).await;
        assert!(
            !asking.is_finished(),
            "only a person approves a protected change"
        );
        desk.settle(&call_id, Decision::Approve).await;
        assert_eq!(asking.await.unwrap(), Decision::Approve);

        assert_eq!(
            desk.decide(write("c2", "src/lib.rs")).await,
            Decision::Approve,
            "ordinary edits still apply in auto mode"
        );
    }

    #[tokio::test]
    async fn a_hook_can_make_a_call_ask_and_only_a_trusted_allow_skips_asking() {
        let (auto, mut auto_events) = desk(ApprovalMode::Auto);
        let why = "a PreToolUse hook asks you to decide".to_string();
        auto.hook_says("c1", HookSays::Ask { why });
        let asking = tokio::spawn({
            let auto = Arc::clone(&auto);
            async move { auto.decide(write("c1", "src/lib.rs")).await }
        });
        let (call_id, why, _) = next_needed(&mut auto_events).await;
        assert!(why.contains("hook"), "{why}");
        auto.set_mode(ApprovalMode::Auto).await;
        assert!(!asking.is_finished(), "a mode switch does not release it");
        auto.settle(&call_id, Decision::Approve).await;
        asking.await.unwrap();

        let (ask, mut ask_events) = desk(ApprovalMode::Ask);
        ask.hook_says("c2", HookSays::Allow);
        assert_eq!(ask.decide(command("c2")).await, Decision::Approve);
        ask.hook_says("c3", HookSays::Allow);
        let protected = tokio::spawn({
            let ask = Arc::clone(&ask);
            async move { ask.decide(write("c3", "Cargo.lock")).await }
        });
        let (call_id, _, _) = next_needed(&mut ask_events).await;
        assert_eq!(call_id, "c3", "a protected path still needs a person");
        // An interrupt forgets what hooks said: the same call id asks again.
        ask.withdraw_all().await;
        protected.await.unwrap();
        let again = tokio::spawn({
            let ask = Arc::clone(&ask);
            async move { ask.decide(command("c2")).await }
        });
        let (call_id, _, _) = next_needed(&mut ask_events).await;
        assert_eq!(call_id, "c2");
        ask.withdraw_all().await;
        again.await.unwrap();
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
        let decision = desk.decide(run("c1", "rm -rf target")).await;
        assert!(matches!(decision, Decision::Reject { reason: Some(_) }));
        drop(desk);
        while let Some(event) = rx.recv().await {
            assert!(!matches!(event, Event::ApprovalNeeded { .. }), "{event:?}");
        }
    }
}
