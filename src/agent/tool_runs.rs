//! Running the tool calls of one model response.
//!
//! Calls are submitted as soon as the stream completes them; [`Schedule`] decides when
//! each may start; each runs in its own task so a slow or crashing tool affects only its
//! own result. Every submitted call ends with exactly one result: its output, its error,
//! or a note that it was cancelled — never nothing. A call identical to an earlier one of
//! the same response (same tool, same arguments, no call that may change anything in
//! between) does not run again: it gets the earlier call's result.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use serde_json::Value;
use tokio::task::{AbortHandle, JoinError};

use crate::provider::{ToolCall, ToolResult};
use crate::tools::truncate::{ClipLimits, clip};
use crate::tools::{Concurrency, Tool, ToolCtx, ToolError, ToolOutput};

use super::hooks::AgentHooks;
use super::protocol::Event;
use super::scheduler::Schedule;

/// A validated call: the tool and its parsed arguments.
pub(crate) type Job = (Arc<dyn Tool>, Value);

/// Why unfinished calls are being cancelled; the text goes to the model.
#[derive(Clone, Copy, Debug)]
pub(crate) enum CancelReason {
    UserInterrupt,
    ResponseFailed,
}

impl CancelReason {
    fn explain(self) -> &'static str {
        match self {
            CancelReason::UserInterrupt => "the user interrupted",
            CancelReason::ResponseFailed => "the model's response failed",
        }
    }
}

struct Slot {
    call: ToolCall,
    /// The tool's name and normalised arguments, for valid calls.
    fingerprint: Option<String>,
    /// The earlier identical call whose result this one receives.
    duplicate_of: Option<usize>,
    /// The call may change things, so identical calls after it must run again.
    exclusive: bool,
    job: Option<Job>,
    /// The tool edits files (see [`Tool::edits_files`]).
    edits_files: bool,
    result: Option<ToolResult>,
    abort: Option<AbortHandle>,
}

struct Finished {
    index: usize,
    /// The call's outcome, and what its hooks had to tell the user.
    outcome: Result<(Result<ToolOutput, ToolError>, Vec<Event>), JoinError>,
}

pub(crate) struct ToolRuns {
    ctx: ToolCtx,
    outputs_dir: PathBuf,
    schedule: Schedule,
    slots: Vec<Slot>,
    running: FuturesUnordered<BoxFuture<'static, Finished>>,
    /// The PreToolUse and PostToolUse hooks every call goes through.
    hooks: Option<Arc<AgentHooks>>,
}

impl ToolRuns {
    /// `ctx` is the template every call's context is cloned from; its cancellation token
    /// is cancelled for all calls at once.
    pub(crate) fn new(ctx: ToolCtx, outputs_dir: PathBuf) -> Self {
        Self {
            ctx,
            outputs_dir,
            schedule: Schedule::default(),
            slots: Vec::new(),
            running: FuturesUnordered::new(),
            hooks: None,
        }
    }

    /// Runs each call through `hooks`: before it (which may refuse it, or have it ask
    /// the user) and after it (which may add to its result).
    pub(crate) fn with_hooks(mut self, hooks: Option<Arc<AgentHooks>>) -> Self {
        self.hooks = hooks;
        self
    }

    /// Adds a complete call. A call that failed validation is answered at once, and so
    /// is a duplicate of a call that already ended; the returned events report those
    /// answers.
    pub(crate) fn submit(&mut self, call: ToolCall, job: Result<Job, ToolError>) -> Vec<Event> {
        match job {
            Ok(job) => {
                let fingerprint = format!("{}\u{0}{}", job.0.name(), job.1);
                if let Some(original) = self.same_call_since_last_change(&fingerprint) {
                    return self.submit_duplicate(call, original);
                }
                let concurrency = job.0.concurrency();
                self.schedule.add(concurrency);
                self.slots.push(Slot {
                    call,
                    exclusive: concurrency == Concurrency::Exclusive,
                    fingerprint: Some(fingerprint),
                    duplicate_of: None,
                    edits_files: job.0.edits_files(),
                    job: Some(job),
                    result: None,
                    abort: None,
                });
                Vec::new()
            }
            Err(error) => {
                let index = self.push_idle_slot(call, None);
                self.answer(index, Err(error))
            }
        }
    }

    /// The index of an earlier call with this fingerprint, unless a call that may change
    /// something (an exclusive one) comes after it: then running again may give another
    /// answer.
    fn same_call_since_last_change(&self, fingerprint: &str) -> Option<usize> {
        for (index, slot) in self.slots.iter().enumerate().rev() {
            if slot.fingerprint.as_deref() == Some(fingerprint) {
                return Some(index);
            }
            if slot.exclusive {
                return None;
            }
        }
        None
    }

    /// Adds `call`, identical to the call at `original`: it never runs, and gets the
    /// original's result when that ends (now, if it already has).
    fn submit_duplicate(&mut self, call: ToolCall, original: usize) -> Vec<Event> {
        tracing::info!(call_id = %call.id, "identical call in one response: runs once");
        let index = self.push_idle_slot(call, Some(original));
        match self.slots[original].result.clone() {
            Some(result) => vec![self.copy_result(index, &result)],
            None => Vec::new(),
        }
    }

    /// Adds a call that never runs; its answer comes from elsewhere.
    fn push_idle_slot(&mut self, call: ToolCall, duplicate_of: Option<usize>) -> usize {
        let index = self.schedule.add_done();
        self.slots.push(Slot {
            call,
            exclusive: false,
            fingerprint: None,
            duplicate_of,
            job: None,
            edits_files: false,
            result: None,
            abort: None,
        });
        index
    }

    /// Starts every call the schedule allows; returns a `ToolRunBegin` for each.
    pub(crate) fn start_ready(&mut self) -> Vec<Event> {
        let mut started = Vec::new();
        for index in self.schedule.start_ready() {
            let Some(slot) = self.slots.get_mut(index) else {
                continue;
            };
            let Some((tool, args)) = slot.job.take() else {
                continue;
            };
            let mut ctx = self.ctx.clone();
            ctx.call_id = slot.call.id.clone();
            let hooks = self.hooks.clone();
            let task = tokio::spawn(async move {
                let Some(hooks) = hooks else {
                    return (run_tool(tool.as_ref(), args, &ctx).await, Vec::new());
                };
                let mut notices = Vec::new();
                if let Err(refusal) = hooks
                    .before_tool(tool.name(), &args, &ctx.call_id, &mut notices)
                    .await
                {
                    return (Err(refusal), notices);
                }
                let mut outcome = run_tool(tool.as_ref(), args.clone(), &ctx).await;
                hooks
                    .after_tool(tool.name(), &args, &ctx.call_id, &mut outcome, &mut notices)
                    .await;
                (outcome, notices)
            });
            slot.abort = Some(task.abort_handle());
            self.running.push(Box::pin(async move {
                Finished {
                    index,
                    outcome: task.await,
                }
            }));
            started.push(Event::ToolRunBegin {
                call_id: slot.call.id.clone(),
            });
        }
        started
    }

    pub(crate) fn has_running(&self) -> bool {
        !self.running.is_empty()
    }

    pub(crate) fn all_done(&self) -> bool {
        self.schedule.all_done()
    }

    /// Waits for the next running call to end and records its result (and its
    /// duplicates'). Pending forever when nothing runs, so it can sit in a `select!`
    /// guarded by [`Self::has_running`].
    pub(crate) async fn next_finished(&mut self) -> Vec<Event> {
        match self.running.next().await {
            Some(finished) => self.record(finished),
            None => std::future::pending().await,
        }
    }

    /// Cancels every call that has not ended. Running calls get `grace` to stop on their
    /// own (a call that completes keeps its real result, so the model learns what really
    /// happened); the rest are aborted. Returns the events of every answer given.
    pub(crate) async fn cancel(&mut self, reason: CancelReason, grace: Duration) -> Vec<Event> {
        self.ctx.cancel.cancel();
        let mut events = Vec::new();
        let deadline = tokio::time::Instant::now() + grace;
        while let Ok(Some(finished)) = tokio::time::timeout_at(deadline, self.running.next()).await
        {
            events.extend(self.record(finished));
        }
        self.running.clear();
        for index in 0..self.slots.len() {
            if self.slots[index].result.is_some() {
                continue;
            }
            let note = if self.schedule.is_running(index) {
                if let Some(abort) = &self.slots[index].abort {
                    abort.abort();
                }
                format!(
                    "Stopped: {} while this call was running; it may have partly run.",
                    reason.explain()
                )
            } else {
                format!("Not run: {} before this call started.", reason.explain())
            };
            events.extend(self.answer(index, Err(ToolError::Failed(note))));
        }
        events
    }

    /// The id of the last call that successfully edited a file, if any.
    pub(crate) fn last_edit(&self) -> Option<String> {
        self.slots
            .iter()
            .rev()
            .find(|slot| slot.edits_files && slot.result.as_ref().is_some_and(|r| !r.is_error))
            .map(|slot| slot.call.id.clone())
    }

    /// The calls that ran and succeeded, in the order the model made them; a call that
    /// got another's result is not among them.
    pub(crate) fn succeeded(&self) -> impl Iterator<Item = &ToolCall> {
        self.slots
            .iter()
            .filter(|slot| {
                slot.duplicate_of.is_none() && slot.result.as_ref().is_some_and(|r| !r.is_error)
            })
            .map(|slot| &slot.call)
    }

    /// Appends `text` to the result of `call_id` (the batch's project checks ride on
    /// its last edit, nested instructions on the call that reached their directory).
    pub(crate) fn append_to_result(&mut self, call_id: &str, text: &str) {
        let result = self
            .slots
            .iter_mut()
            .filter_map(|slot| slot.result.as_mut())
            .find(|result| result.call_id == call_id);
        if let Some(result) = result {
            result.content.push_str("\n\n");
            result.content.push_str(text);
        }
    }

    /// Every call's result, in the order the model made the calls.
    pub(crate) fn into_results(self) -> Vec<ToolResult> {
        self.slots
            .into_iter()
            .filter_map(|slot| slot.result)
            .collect()
    }

    fn record(&mut self, finished: Finished) -> Vec<Event> {
        let mut notices = Vec::new();
        let outcome = match finished.outcome {
            Ok((outcome, hook_notices)) => {
                notices = hook_notices;
                outcome
            }
            Err(error) if error.is_panic() => {
                // Where it panicked is logged by the panic hook (target `duet::panic`).
                let call = self.slots.get(finished.index).map(|slot| &slot.call);
                tracing::error!(
                    call_id = call.map_or("", |call| call.id.as_str()),
                    tool = call.map_or("", |call| call.name.as_str()),
                    panic = %panic_text(error.into_panic().as_ref()),
                    "a tool crashed"
                );
                Err(ToolError::Failed(
                    "The tool crashed (a bug in duet, logged). Try another approach.".to_string(),
                ))
            }
            Err(_) => Err(ToolError::Failed(
                "The tool was stopped before it finished.".to_string(),
            )),
        };
        if let Err(error) = &outcome {
            tracing::debug!(index = finished.index, %error, "tool call failed");
        }
        notices.extend(self.answer(finished.index, outcome));
        notices
    }

    /// Records the result of the call at `index`, and gives it to the call's duplicates.
    fn answer(&mut self, index: usize, outcome: Result<ToolOutput, ToolError>) -> Vec<Event> {
        self.schedule.finish(index);
        let (text, summary, checks, is_error) = match outcome {
            Ok(output) => (output.content, output.summary, output.checks, false),
            Err(error) => {
                let text = error.to_string();
                (text.clone(), first_line(&text), None, true)
            }
        };
        // Indices come from this schedule, which grows with `slots`.
        let slot = &mut self.slots[index];
        let content = clip(
            &text,
            ClipLimits::default(),
            &self.outputs_dir,
            &slot.call.id,
        );
        let result = ToolResult {
            call_id: slot.call.id.clone(),
            content: content.clone(),
            is_error,
        };
        slot.result = Some(result.clone());
        let mut events = vec![Event::ToolRunEnd {
            call_id: slot.call.id.clone(),
            is_error,
            summary,
            output: content,
            checks,
        }];
        let duplicates: Vec<usize> = (0..self.slots.len())
            .filter(|&other| {
                self.slots[other].duplicate_of == Some(index) && self.slots[other].result.is_none()
            })
            .collect();
        for duplicate in duplicates {
            events.push(self.copy_result(duplicate, &result));
        }
        events
    }

    /// Answers the duplicate at `index` with `original`'s result.
    fn copy_result(&mut self, index: usize, original: &ToolResult) -> Event {
        let slot = &mut self.slots[index];
        let content = format!(
            "Same call as {}, which ran once; its result:\n{}",
            original.call_id, original.content
        );
        slot.result = Some(ToolResult {
            call_id: slot.call.id.clone(),
            content: content.clone(),
            is_error: original.is_error,
        });
        Event::ToolRunEnd {
            call_id: slot.call.id.clone(),
            is_error: original.is_error,
            summary: format!("same as {}", original.call_id),
            output: content,
            checks: None,
        }
    }
}

/// Runs one call, marking its start and end for `bench/run`, which times the harness
/// around each call from these (`DUET_LOG=duet::steps=debug`).
async fn run_tool(tool: &dyn Tool, args: Value, ctx: &ToolCtx) -> Result<ToolOutput, ToolError> {
    tracing::debug!(target: "duet::steps", call_id = %ctx.call_id, "tool started");
    let outcome = tool.run(args, ctx).await;
    tracing::debug!(target: "duet::steps", call_id = %ctx.call_id, "tool finished");
    outcome
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(120) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

/// The text a panic was raised with.
pub(crate) fn panic_text(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(a panic without a message)")
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use pretty_assertions::assert_eq;

    use super::*;
    use crate::tools::test_support::Fixture;

    /// A tool whose behaviour each test picks.
    struct Probe {
        concurrency: Concurrency,
        behaviour: Behaviour,
        runs: Arc<AtomicUsize>,
    }

    #[derive(Clone, Copy)]
    enum Behaviour {
        Answer,
        /// Returns as soon as the call is cancelled.
        StopOnCancel,
        /// Ignores cancellation entirely.
        Hang,
        Panic,
    }

    #[async_trait::async_trait]
    impl Tool for Probe {
        fn name(&self) -> &'static str {
            "probe"
        }

        fn description(&self) -> &'static str {
            "test tool"
        }

        fn schema(&self) -> Value {
            serde_json::json!({"type": "object"})
        }

        fn concurrency(&self) -> Concurrency {
            self.concurrency
        }

        async fn run(&self, _args: Value, ctx: &ToolCtx) -> Result<ToolOutput, ToolError> {
            self.runs.fetch_add(1, Ordering::SeqCst);
            match self.behaviour {
                Behaviour::Answer => {}
                Behaviour::StopOnCancel => ctx.cancel.cancelled().await,
                Behaviour::Hang => std::future::pending::<()>().await,
                Behaviour::Panic => panic!("probe panicked on purpose"),
            }
            Ok(ToolOutput {
                content: format!("ran {}", ctx.call_id),
                summary: "ran".into(),
                checks: None,
            })
        }
    }

    struct Harness {
        runs: ToolRuns,
        count: Arc<AtomicUsize>,
        _fixture: Fixture,
        _outputs: tempfile::TempDir,
    }

    impl Harness {
        fn new() -> Self {
            let fixture = Fixture::new();
            let outputs = tempfile::tempdir().unwrap();
            Self {
                runs: ToolRuns::new(fixture.ctx.clone(), outputs.path().to_path_buf()),
                count: Arc::new(AtomicUsize::new(0)),
                _fixture: fixture,
                _outputs: outputs,
            }
        }

        fn submit(&mut self, id: &str, concurrency: Concurrency, behaviour: Behaviour) {
            let tool = Arc::new(Probe {
                concurrency,
                behaviour,
                runs: Arc::clone(&self.count),
            });
            let call = ToolCall {
                id: id.into(),
                name: "probe".into(),
                arguments: "{}".into(),
            };
            assert_eq!(
                self.runs
                    .submit(call, Ok((tool, serde_json::json!({ "id": id })))),
                Vec::new()
            );
        }

        fn started(&mut self) -> Vec<String> {
            self.runs
                .start_ready()
                .into_iter()
                .map(|event| match event {
                    Event::ToolRunBegin { call_id } => call_id,
                    other => panic!("unexpected {other:?}"),
                })
                .collect()
        }
    }

    fn summary(results: &[ToolResult]) -> Vec<(&str, bool, &str)> {
        results
            .iter()
            .map(|r| (r.call_id.as_str(), r.is_error, r.content.as_str()))
            .collect()
    }

    #[tokio::test]
    async fn results_come_back_in_call_order_whatever_order_calls_finish_in() {
        let mut h = Harness::new();
        h.submit("slow", Concurrency::Shared, Behaviour::StopOnCancel);
        h.submit("fast", Concurrency::Shared, Behaviour::Answer);
        assert_eq!(h.started(), ["slow", "fast"]);
        h.runs.next_finished().await; // "fast" ends first; "slow" waits for a cancel
        let events = h
            .runs
            .cancel(CancelReason::UserInterrupt, Duration::from_secs(5))
            .await;
        assert_eq!(events.len(), 1);
        let results = h.runs.into_results();
        assert_eq!(
            summary(&results),
            [("slow", false, "ran slow"), ("fast", false, "ran fast")]
        );
    }

    #[tokio::test]
    async fn a_failed_validation_is_answered_at_once_and_blocks_nothing() {
        let mut h = Harness::new();
        let call = ToolCall {
            id: "bad".into(),
            name: "nope".into(),
            arguments: "{".into(),
        };
        let answer = h
            .runs
            .submit(call, Err(ToolError::InvalidArguments("fix it".into())));
        assert!(matches!(
            answer.as_slice(),
            [Event::ToolRunEnd { is_error: true, .. }]
        ));
        h.submit("next", Concurrency::Exclusive, Behaviour::Answer);
        assert_eq!(h.started(), ["next"]);
    }

    #[tokio::test(start_paused = true)]
    async fn cancel_answers_every_call_truthfully() {
        let mut h = Harness::new();
        h.submit("polite", Concurrency::Shared, Behaviour::StopOnCancel);
        h.submit("stuck", Concurrency::Shared, Behaviour::Hang);
        h.submit("queued", Concurrency::Exclusive, Behaviour::Answer);
        assert_eq!(h.started(), ["polite", "stuck"]);
        let events = h
            .runs
            .cancel(CancelReason::UserInterrupt, Duration::from_secs(3))
            .await;
        assert_eq!(events.len(), 3);
        assert!(h.runs.all_done());
        let results = h.runs.into_results();
        let results = summary(&results);
        assert_eq!(results[0], ("polite", false, "ran polite"));
        assert_eq!(
            results[1],
            (
                "stuck",
                true,
                "Stopped: the user interrupted while this call was running; it may have partly run."
            )
        );
        assert_eq!(
            results[2],
            (
                "queued",
                true,
                "Not run: the user interrupted before this call started."
            )
        );
        assert_eq!(
            h.count.load(Ordering::SeqCst),
            2,
            "the queued call never ran"
        );
    }

    /// Held by every test that crashes a tool. tracing caches each call site's interest
    /// when the site is first hit; a site first hit on another thread while the log test
    /// installs its subscriber can keep an interest computed without it, and the log
    /// test then sees nothing. One crash at a time closes that window.
    static TOOL_CRASHES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

    #[tokio::test]
    async fn a_panicking_tool_fails_alone() {
        let _one_crash_at_a_time = TOOL_CRASHES.lock().await;
        let mut h = Harness::new();
        h.submit("boom", Concurrency::Shared, Behaviour::Panic);
        h.submit("fine", Concurrency::Shared, Behaviour::Answer);
        h.started();
        h.runs.next_finished().await;
        h.runs.next_finished().await;
        assert!(h.runs.all_done());
        let results = h.runs.into_results();
        assert!(results[0].is_error);
        assert!(
            results[0].content.contains("crashed"),
            "{}",
            results[0].content
        );
        assert_eq!(summary(&results)[1], ("fine", false, "ran fine"));
    }

    /// Log lines written while it lives, for "it is in the log" assertions.
    #[derive(Clone, Default)]
    struct CapturedLog(Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for CapturedLog {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl CapturedLog {
        fn text(&self) -> String {
            String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
        }
    }

    #[tokio::test]
    async fn a_tool_crash_is_in_the_log_with_its_call_and_message() {
        let _one_crash_at_a_time = TOOL_CRASHES.lock().await;
        let log = CapturedLog::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer({
                let log = log.clone();
                move || log.clone()
            })
            .with_ansi(false)
            .finish();
        // The test's runtime runs the tool's task on this thread, where this applies.
        let _logging = tracing::subscriber::set_default(subscriber);
        let mut h = Harness::new();
        h.submit("boom", Concurrency::Shared, Behaviour::Panic);
        h.started();
        h.runs.next_finished().await;
        let text = log.text();
        for needle in [
            "ERROR",
            "a tool crashed",
            "boom",
            "probe",
            "probe panicked on purpose",
        ] {
            assert!(text.contains(needle), "{needle:?} not in the log:\n{text}");
        }
    }

    #[test]
    fn a_panic_gives_its_text() {
        let payload = std::panic::catch_unwind(|| panic!("count {}", 3)).unwrap_err();
        assert_eq!(panic_text(payload.as_ref()), "count 3");
        let payload = std::panic::catch_unwind(|| std::panic::panic_any(7)).unwrap_err();
        assert_eq!(panic_text(payload.as_ref()), "(a panic without a message)");
    }

    fn probe(runs: &Arc<AtomicUsize>) -> Arc<dyn Tool> {
        Arc::new(Probe {
            concurrency: Concurrency::Shared,
            behaviour: Behaviour::Answer,
            runs: Arc::clone(runs),
        })
    }

    fn probe_call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "probe".into(),
            arguments: r#"{"path": "a"}"#.into(),
        }
    }

    #[tokio::test]
    async fn identical_calls_run_once_and_share_the_result() {
        let mut h = Harness::new();
        let args = serde_json::json!({"path": "a"});
        h.runs
            .submit(probe_call("first"), Ok((probe(&h.count), args.clone())));
        h.runs
            .submit(probe_call("second"), Ok((probe(&h.count), args.clone())));
        assert_eq!(h.started(), ["first"]);
        let events = h.runs.next_finished().await;
        assert_eq!(events.len(), 2, "{events:?}");
        assert!(h.runs.all_done());
        // A third copy, after the original ended, is answered at once.
        let late = h
            .runs
            .submit(probe_call("third"), Ok((probe(&h.count), args)));
        assert!(
            matches!(late.as_slice(), [Event::ToolRunEnd { call_id, .. }] if call_id == "third")
        );
        assert_eq!(h.count.load(Ordering::SeqCst), 1, "ran once");
        let results = h.runs.into_results();
        assert_eq!(results.len(), 3);
        assert_eq!(results[0].content, "ran first");
        for copy in &results[1..] {
            assert_eq!(
                copy.content,
                "Same call as first, which ran once; its result:\nran first"
            );
        }
    }

    #[tokio::test]
    async fn an_identical_call_after_a_change_runs_again() {
        let mut h = Harness::new();
        let args = serde_json::json!({"path": "a"});
        h.runs
            .submit(probe_call("test-1"), Ok((probe(&h.count), args.clone())));
        h.submit("edit", Concurrency::Exclusive, Behaviour::Answer);
        h.runs
            .submit(probe_call("test-2"), Ok((probe(&h.count), args)));
        while !h.runs.all_done() {
            h.started();
            h.runs.next_finished().await;
        }
        assert_eq!(h.count.load(Ordering::SeqCst), 3, "every call ran");
    }

    #[tokio::test(start_paused = true)]
    async fn a_duplicate_of_a_cancelled_call_is_cancelled_with_it() {
        let mut h = Harness::new();
        let stuck: Arc<dyn Tool> = Arc::new(Probe {
            concurrency: Concurrency::Shared,
            behaviour: Behaviour::Hang,
            runs: Arc::clone(&h.count),
        });
        let args = serde_json::json!({"path": "a"});
        h.runs
            .submit(probe_call("first"), Ok((Arc::clone(&stuck), args.clone())));
        h.runs.submit(probe_call("second"), Ok((stuck, args)));
        h.started();
        let events = h
            .runs
            .cancel(CancelReason::UserInterrupt, Duration::from_secs(1))
            .await;
        assert_eq!(events.len(), 2);
        let results = h.runs.into_results();
        assert!(results.iter().all(|result| result.is_error));
        assert!(results[1].content.contains("Same call as first"));
    }
}
