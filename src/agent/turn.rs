//! The turn loop: model call → tool calls → model call … until the model stops asking
//! for tools, the user interrupts, or a call fails.
//!
//! One step is one model call. While its response streams, complete tool calls start
//! at once (see [`ToolRuns`]), and commands keep being read: an interrupt cancels the
//! step, a user message is held and delivered at the start of the next step.
//!
//! A failed call is retried after a backoff that an interrupt cancels at once (see
//! [`Recovery`]). What the failed call streamed is dropped, unless some of its tool
//! calls were complete: those run to the end and are kept with their results, and the
//! turn goes on with the next step. A call whose arguments were cut (invalid JSON at the
//! output limit, or a stream that broke mid-call) is never run.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::mcp::McpHub;
use crate::policy::ApprovalMode;
use crate::provider::{
    Block, EventStream, ModelClient, ModelRequest, ProviderError, RetryPolicy, StopReason,
    StreamEvent, ToolCall, ToolResult, ToolSpec, Usage,
};
use crate::session::Record;
use crate::tools::{Concurrency, OutputChunk, OutputSink, Registry, ToolCtx};

use super::approval::ApprovalDesk;
use super::budget::SharedMeter;
use super::checkpoints::Checkpoints;
use super::compaction::Compactor;
use super::context;
use super::conversation::{AssistantDraft, Conversation};
use super::events::EventSink;
use super::prime::StreamedPaths;
use super::protocol::{Command, Event, MessageId, TurnOutcome};
use super::recovery::{AfterCutOff, AfterFailure, CallSite, Recovery};
use super::repetition::RepetitionGuard;
use super::tool_runs::{CancelReason, ToolRuns};
use crate::config::{Budget, ModelInfo};

/// How long running tools get to stop on their own after a cancel.
const CANCEL_GRACE: Duration = Duration::from_secs(3);

/// How a step ended.
pub(super) enum StepEnd {
    /// The response streamed to its end and every tool call in it has a result.
    Finished(StopReason),
    /// The model call failed. Complete tool calls it made have their results in the
    /// step's [`Response`].
    CallFailed(ProviderError),
    Interrupted,
    Shutdown,
}

/// What the turn loop does after a step.
enum Next {
    Step,
    End(TurnOutcome),
    Shutdown,
}

/// What one model call produced, before the turn loop decides whether it enters the
/// conversation.
#[derive(Default)]
struct Response {
    blocks: Vec<Block>,
    results: Vec<ToolResult>,
    /// Front ends were shown some of it (text, thinking, a call being written).
    shown: bool,
}

impl Response {
    fn has_calls(&self) -> bool {
        self.blocks
            .iter()
            .any(|block| matches!(block, Block::ToolCall(_)))
    }
}

/// The response of the current step as it streams in.
#[derive(Default)]
struct Reply {
    draft: AssistantDraft,
    /// A call whose arguments are not valid JSON, held back until something follows
    /// it: if the response stops at the output limit right after it, the limit cut it,
    /// and it is dropped instead of answered.
    held: Option<ToolCall>,
    /// Some call is complete (and submitted).
    has_calls: bool,
    shown: bool,
    /// Calls that edit files, watched for their path while their arguments stream.
    paths: StreamedPaths,
}

pub(crate) struct Agent {
    pub(crate) client: Arc<dyn ModelClient>,
    /// The tools of the current step: the built-in ones and those of ready MCP servers.
    pub(crate) tools: Registry,
    pub(crate) tool_specs: Vec<ToolSpec>,
    /// duet's own tools, offered in every step.
    pub(crate) builtin_tools: Registry,
    pub(crate) mcp: Arc<McpHub>,
    /// The hub's tool-list generation `tools` was built from.
    pub(crate) mcp_generation: u64,
    /// The environment block of the last request, while no step since could have
    /// changed what it says (see [`Agent::environment`]).
    pub(crate) environment: Option<String>,
    /// Template for every tool call's context; `cancel` is replaced per step.
    pub(crate) tool_ctx: ToolCtx,
    pub(crate) approvals: Arc<ApprovalDesk>,
    pub(crate) system: Vec<String>,
    pub(crate) workspace: PathBuf,
    pub(crate) outputs_dir: PathBuf,
    pub(crate) max_tokens: u32,
    pub(crate) retry: RetryPolicy,
    pub(crate) call_site: CallSite,
    pub(crate) events: EventSink,
    pub(crate) commands: mpsc::UnboundedReceiver<Command>,
    pub(crate) conversation: Conversation,
    /// User messages not yet delivered to the model.
    pub(crate) pending: Vec<(MessageId, String)>,
    pub(crate) session_usage: Usage,
    pub(crate) budget: Budget,
    pub(crate) model_info: ModelInfo,
    /// What the current task has spent; restarted by each user message that starts one.
    pub(crate) meter: SharedMeter,
    pub(crate) repetition: RepetitionGuard,
    pub(crate) checkpoints: Arc<Checkpoints>,
    pub(crate) compaction: Compactor,
}

impl Agent {
    /// Serves commands until shutdown or until every handle is dropped.
    pub(crate) async fn run(mut self) {
        while let Some(command) = self.commands.recv().await {
            match command {
                Command::UserMessage { id, text } => {
                    self.pending.push((id, text));
                    if self.run_turn().await.is_break() {
                        break;
                    }
                }
                Command::Interrupt => {} // nothing is running
                Command::Decide { call_id, .. } => {
                    tracing::debug!(call_id, "decision while idle: nothing waits");
                }
                Command::SetMode { mode } => self.set_mode(mode).await,
                Command::WithdrawMessage { id } => self.withdraw(id).await,
                Command::ClearConversation => {
                    self.conversation = Conversation::default();
                    self.events.emit(Event::ConversationCleared).await;
                }
                Command::Undo { scope } => self.undo(scope).await,
                Command::Shutdown => break,
            }
        }
        tracing::info!("agent stopped");
    }

    async fn run_turn(&mut self) -> std::ops::ControlFlow<()> {
        self.meter.restart(Instant::now());
        // The user may have changed the repository since the last turn.
        self.environment = None;
        self.repetition = RepetitionGuard::default();
        let mut recovery = Recovery::new(self.retry.clone(), self.max_tokens);
        let mut step = 0;
        self.checkpoints.begin_turn().await;
        let outcome = loop {
            self.report_external_changes().await;
            self.deliver_pending().await;
            if let Some(exhausted) = self.budget_exhausted() {
                break exhausted;
            }
            match self.compact_if_due().await {
                None => {}
                Some(StepEnd::Shutdown) => {
                    self.end_turn(TurnOutcome::Interrupted).await;
                    return std::ops::ControlFlow::Break(());
                }
                Some(_) => break TurnOutcome::Interrupted,
            }
            step += 1;
            self.meter.count_step();
            let (end, response) = self.step(step, recovery.output_limit()).await;
            self.report_explorer_usage().await;
            let ran_tools = response.has_calls();
            let next = match end {
                StepEnd::Finished(StopReason::MaxTokens) => {
                    self.after_cut_off(&mut recovery, response).await
                }
                StepEnd::Finished(stop_reason) => {
                    recovery.answer_complete();
                    // Some servers report `stop` although they called tools: the calls
                    // decide. A message typed during the final answer still reaches the
                    // model.
                    let more = ran_tools || !self.pending.is_empty();
                    self.record(response).await;
                    if more {
                        Next::Step
                    } else {
                        Next::End(TurnOutcome::Finished { stop_reason })
                    }
                }
                StepEnd::CallFailed(error) => {
                    self.after_failure(&mut recovery, &error, response).await
                }
                StepEnd::Interrupted => {
                    self.record(response).await;
                    Next::End(TurnOutcome::Interrupted)
                }
                StepEnd::Shutdown => {
                    self.record(response).await;
                    Next::Shutdown
                }
            };
            // A step whose tools ran feeds the budget and the loop detector, however its
            // call ended.
            let next = match next {
                Next::Step if ran_tools => match self.observe_step() {
                    Some(message) => Next::End(TurnOutcome::LoopDetected { message }),
                    None => Next::Step,
                },
                next => next,
            };
            match next {
                Next::Step => {}
                Next::End(outcome) => break outcome,
                Next::Shutdown => {
                    self.end_turn(TurnOutcome::Interrupted).await;
                    return std::ops::ControlFlow::Break(());
                }
            }
        };
        self.end_turn(outcome).await;
        std::ops::ControlFlow::Continue(())
    }

    /// Whether the task's budget forbids the next model call, with the report that ends it.
    fn budget_exhausted(&self) -> Option<TurnOutcome> {
        let now = Instant::now();
        let exhausted = self
            .meter
            .check(&self.budget, &self.model_info, now)
            .err()?;
        tracing::info!(?exhausted, "budget exhausted");
        let last_message = self.conversation.last_assistant_text().map(tail_of_text);
        Some(TurnOutcome::BudgetExhausted {
            report: self
                .meter
                .report(exhausted, &self.model_info, now, last_message),
        })
    }

    /// Books the step that just ran its tools against the budget and the loop detector;
    /// returns why the task must stop, if it must.
    fn observe_step(&mut self) -> Option<String> {
        let (calls, results) = self.conversation.last_exchange();
        if calls
            .iter()
            .any(|call| self.may_change_workspace(&call.name))
        {
            self.environment = None;
        }
        for call in &calls {
            self.meter.count_tool_run();
            let edits = self
                .tools
                .get(&call.name)
                .is_some_and(|tool| tool.edits_files());
            let landed = results
                .iter()
                .any(|result| result.call_id == call.id && !result.is_error);
            if edits
                && landed
                && let Some(path) = self.tools.describe(&call.name, &call.arguments).path()
            {
                self.meter.note_file_changed(path);
            }
        }
        let verdict = self.repetition.observe(calls, results);
        if let Some(message) = &verdict {
            tracing::warn!(%message, "loop detected");
        }
        verdict
    }

    /// Keeps what a failed call completed, then retries after the backoff or gives up.
    /// Without complete tool calls the response is dropped, so a retry sends the same
    /// conversation again.
    async fn after_failure(
        &mut self,
        recovery: &mut Recovery,
        error: &ProviderError,
        response: Response,
    ) -> Next {
        let discarded = !response.has_calls() && response.shown;
        if response.has_calls() {
            self.record(response).await;
        }
        match recovery.after_failure(error, &self.call_site, fastrand::f64()) {
            AfterFailure::Retry {
                attempt,
                max_attempts,
                delay,
                reason,
            } => {
                tracing::info!(attempt, ?delay, %reason, "retrying the model call");
                self.events
                    .emit(Event::Retrying {
                        attempt,
                        max_attempts,
                        delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                        reason,
                        discarded,
                    })
                    .await;
                self.back_off(delay).await
            }
            AfterFailure::GiveUp(message) => Next::End(TurnOutcome::Failed { message }),
        }
    }

    /// An answer stopped at the output limit: asks again with a higher limit, or keeps
    /// it and asks the model to continue, or gives up.
    async fn after_cut_off(&mut self, recovery: &mut Recovery, response: Response) -> Next {
        match recovery.after_cut_off(response.has_calls()) {
            AfterCutOff::AskAgain { from, to } => {
                tracing::info!(from, to, "answer cut off: asking again with a higher limit");
                self.events
                    .emit(Event::Retrying {
                        attempt: 1,
                        max_attempts: 1,
                        delay_ms: 0,
                        reason: format!(
                            "the answer reached the output limit of {from} tokens; asking again \
                             with {to}"
                        ),
                        discarded: response.shown,
                    })
                    .await;
                Next::Step
            }
            AfterCutOff::Continue { note } => {
                tracing::info!("answer cut off: asking the model to continue");
                self.record(response).await;
                self.events
                    .record(Record::User { text: note.clone() })
                    .await;
                self.conversation.push_user_text(note);
                Next::Step
            }
            AfterCutOff::GiveUp(message) => {
                self.record(response).await;
                Next::End(TurnOutcome::Failed { message })
            }
        }
    }

    /// Waits `delay` before a retry; an interrupt or shutdown ends the turn at once.
    async fn back_off(&mut self, delay: Duration) -> Next {
        tokio::select! {
            () = tokio::time::sleep(delay) => Next::Step,
            end = self.wait_for_cancel() => match end {
                StepEnd::Shutdown => Next::Shutdown,
                _ => Next::End(TurnOutcome::Interrupted),
            },
        }
    }

    /// Adds a response to the conversation and the session transcript.
    async fn record(&mut self, response: Response) {
        self.events
            .record(Record::Step {
                assistant: response.blocks.clone(),
                results: response.results.clone(),
            })
            .await;
        self.conversation
            .push_step(response.blocks, response.results);
    }

    async fn end_turn(&mut self, outcome: TurnOutcome) {
        if let Err(problem) = self.conversation.check_pairing() {
            // A bug, not a user error: log loudly; the request validators in tests catch it.
            tracing::error!(%problem, "conversation lost call/result pairing");
        }
        self.checkpoints.end_turn().await;
        self.events.emit(Event::TurnEnd { outcome }).await;
    }

    /// A new approval mode; `read-only` also makes the workspace read-only in the
    /// sandbox for every command from now on (the shell is replaced before its next
    /// command), so a command the classifier misjudged still cannot write.
    async fn set_mode(&mut self, mode: ApprovalMode) {
        self.approvals.set_mode(mode).await;
        self.tool_ctx
            .shell
            .sandbox()
            .set_workspace_read_only(mode == ApprovalMode::ReadOnly);
    }

    async fn withdraw(&mut self, id: MessageId) {
        if let Some(index) = self.pending.iter().position(|(pending, _)| *pending == id) {
            let (id, text) = self.pending.remove(index);
            self.events.emit(Event::MessageWithdrawn { id, text }).await;
        }
    }

    async fn deliver_pending(&mut self) {
        for (id, text) in std::mem::take(&mut self.pending) {
            self.conversation.push_user_text(text.clone());
            self.events
                .emit(Event::UserMessageDelivered { id, text })
                .await;
        }
    }

    /// Offers the tools of MCP servers that became ready, and stops offering those of
    /// servers that failed, since the last model call. Unchanged, the list stays
    /// byte-identical (prompt caching depends on it).
    fn refresh_tools(&mut self) {
        let generation = self.mcp.generation();
        if generation == self.mcp_generation {
            return;
        }
        self.mcp_generation = generation;
        self.tools = self
            .mcp
            .tools()
            .into_iter()
            .fold(self.builtin_tools.clone(), Registry::with);
        self.tool_specs = self.tools.specs();
    }

    /// Whether a call of the tool `name` may change the workspace or its git state:
    /// anything but the tools that may run in parallel, which only look.
    fn may_change_workspace(&self, name: &str) -> bool {
        self.tools
            .get(name)
            .is_none_or(|tool| tool.concurrency() == Concurrency::Exclusive)
    }

    /// The environment block for the next request. It is worked out (git status
    /// included, which takes a while in a large repository) at a turn's first step and
    /// after a step that ran a tool which may change files; steps that only read reuse
    /// the last one.
    async fn environment(&mut self) -> String {
        if let Some(block) = &self.environment {
            return block.clone();
        }
        let workspace = self.workspace.clone();
        let block = tokio::task::spawn_blocking(move || context::environment_block(&workspace))
            .await
            .unwrap_or_else(|error| {
                tracing::warn!(%error, "environment block failed");
                String::new()
            });
        self.environment = Some(block.clone());
        block
    }

    async fn request(&mut self, max_tokens: u32) -> ModelRequest {
        let environment = self.environment().await;
        ModelRequest {
            system: self.system.clone(),
            tools: self.tool_specs.clone(),
            messages: self.conversation.messages().to_vec(),
            volatile_context: Some(environment).filter(|text| !text.is_empty()),
            max_tokens,
        }
    }

    async fn step(&mut self, number: u32, max_tokens: u32) -> (StepEnd, Response) {
        self.events.emit(Event::StepStarted { step: number }).await;
        self.conversation.repair();
        self.refresh_tools();
        let request = self.request(max_tokens).await;
        let client = Arc::clone(&self.client);
        let opened = tokio::select! {
            opened = client.stream(&request) => opened,
            end = self.wait_for_cancel() => return (end, Response::default()),
        };
        tracing::info!(
            step = number,
            messages = request.messages.len(),
            max_tokens,
            "model call sent"
        );
        let stream = match opened {
            Ok(stream) => stream,
            Err(error) => {
                tracing::warn!(%error, "model call failed before streaming");
                return (StepEnd::CallFailed(error), Response::default());
            }
        };
        let (output_tx, mut output_rx) = mpsc::unbounded_channel();
        let mut ctx = self.tool_ctx.clone();
        ctx.cancel = CancellationToken::new();
        ctx.output = OutputSink::new(output_tx);
        let mut runs = ToolRuns::new(ctx, self.outputs_dir.clone());
        let mut reply = Reply::default();
        let end = self
            .drive(stream, &mut reply, &mut runs, &mut output_rx)
            .await;
        let end = match end {
            StepEnd::Interrupted | StepEnd::Shutdown => {
                self.cancel_runs(&mut runs, CancelReason::UserInterrupt)
                    .await;
                end
            }
            StepEnd::CallFailed(_) if !runs.all_done() => {
                self.cancel_runs(&mut runs, CancelReason::ResponseFailed)
                    .await;
                end
            }
            StepEnd::CallFailed(_) | StepEnd::Finished(_) => {
                match self.run_turn_checks(&mut runs).await {
                    Some(interrupted) => interrupted,
                    None => end,
                }
            }
        };
        let response = Response {
            blocks: reply.draft.into_blocks(),
            results: runs.into_results(),
            shown: reply.shown,
        };
        (end, response)
    }

    /// Runs the project-wide checks once after a batch that edited files, and appends
    /// their report to the batch's last edit. An interrupt meanwhile skips them and
    /// ends the step.
    async fn run_turn_checks(&mut self, runs: &mut ToolRuns) -> Option<StepEnd> {
        let call_id = runs.last_edit()?;
        let linter = Arc::clone(&self.tool_ctx.linter);
        let report = tokio::select! {
            report = linter.turn_checks() => report?,
            end = self.wait_for_cancel() => {
                runs.append_to_result(&call_id, "project checks: skipped (interrupted)");
                return Some(end);
            }
        };
        runs.append_to_result(&call_id, &report);
        self.events
            .emit(Event::ChecksReported { call_id, report })
            .await;
        None
    }

    /// Reads the stream and tool completions until both are done or the step is cut.
    async fn drive(
        &mut self,
        mut stream: EventStream,
        reply: &mut Reply,
        runs: &mut ToolRuns,
        output: &mut mpsc::UnboundedReceiver<OutputChunk>,
    ) -> StepEnd {
        // How the step ends once the tools still running are done.
        let mut stream_end: Option<StepEnd> = None;
        loop {
            if runs.all_done()
                && let Some(end) = stream_end.take()
            {
                return end;
            }
            tokio::select! {
                command = self.commands.recv() => {
                    if let Some(end) = self.on_command_during_step(command).await {
                        return end;
                    }
                }
                item = stream.next(), if stream_end.is_none() => {
                    let failure = match item {
                        Some(Ok(event)) => {
                            if let Some(stop) = self.on_stream_event(event, reply, runs).await {
                                stream_end = Some(StepEnd::Finished(stop));
                            }
                            None
                        }
                        Some(Err(error)) => Some(error),
                        None => Some(ProviderError::Truncated(
                            "the response ended without a stop reason".to_string(),
                        )),
                    };
                    if let Some(error) = failure {
                        tracing::warn!(%error, "model stream failed");
                        // Complete calls of a call that will be retried run to the end,
                        // so their results can be kept.
                        let keep_running = reply.has_calls && error.is_transient();
                        let end = StepEnd::CallFailed(error);
                        if !keep_running {
                            return end;
                        }
                        stream_end = Some(end);
                    }
                }
                events = runs.next_finished(), if runs.has_running() => {
                    self.forward_output(output).await;
                    for event in events {
                        self.events.emit(event).await;
                    }
                    self.start_ready(runs).await;
                }
                Some(chunk) = output.recv() => {
                    self.events
                        .emit(Event::ToolOutputDelta { call_id: chunk.call_id, text: chunk.text })
                        .await;
                }
            }
        }
    }

    /// Handles a command that arrives mid-step; returns how the step ends, if it does.
    async fn on_command_during_step(&mut self, command: Option<Command>) -> Option<StepEnd> {
        match command {
            Some(Command::UserMessage { id, text }) => {
                self.pending.push((id, text));
                None
            }
            Some(Command::Decide { call_id, decision }) => {
                self.approvals.settle(&call_id, decision).await;
                None
            }
            Some(Command::SetMode { mode }) => {
                self.set_mode(mode).await;
                None
            }
            Some(Command::WithdrawMessage { id }) => {
                self.withdraw(id).await;
                None
            }
            Some(Command::ClearConversation) => {
                tracing::debug!("clear ignored while a turn runs");
                None
            }
            Some(Command::Undo { .. }) => {
                self.refuse_undo_during_turn().await;
                None
            }
            Some(Command::Interrupt) => Some(StepEnd::Interrupted),
            Some(Command::Shutdown) | None => Some(StepEnd::Shutdown),
        }
    }

    /// Waits for a command that cancels the step, holding user messages for later.
    pub(super) async fn wait_for_cancel(&mut self) -> StepEnd {
        loop {
            let command = self.commands.recv().await;
            if let Some(end) = self.on_command_during_step(command).await {
                return end;
            }
        }
    }

    async fn on_stream_event(
        &mut self,
        event: StreamEvent,
        reply: &mut Reply,
        runs: &mut ToolRuns,
    ) -> Option<StopReason> {
        if !matches!(
            event,
            StreamEvent::Finished { .. } | StreamEvent::Notice { .. }
        ) {
            // Something follows the held call, so the limit did not cut it.
            self.release_held(reply, runs).await;
        }
        match event {
            StreamEvent::TextDelta { text } => {
                reply.shown = true;
                reply.draft.push_text(&text);
                self.events.emit(Event::TextDelta { text }).await;
            }
            StreamEvent::ThinkingDelta { text } => {
                reply.shown = true;
                reply.draft.push_thinking(&text);
                self.events.emit(Event::ThinkingDelta { text }).await;
            }
            StreamEvent::Notice { text } => self.events.emit(Event::ProviderNotice { text }).await,
            StreamEvent::ThinkingSignature { signature } => reply.draft.sign_thinking(signature),
            StreamEvent::RedactedThinking { data } => reply.draft.push_redacted_thinking(data),
            StreamEvent::ReasoningItem { item } => reply.draft.push_reasoning_item(item),
            StreamEvent::ToolCallStart { id, name } => {
                reply.shown = true;
                if self.tools.get(&name).is_some_and(|tool| tool.edits_files()) {
                    reply.paths.watch(&id);
                }
                self.events
                    .emit(Event::ToolCallBegin { call_id: id, name })
                    .await;
            }
            StreamEvent::ToolCallArgsDelta { id, fragment } => {
                if let Some(path) = reply.paths.push(&id, &fragment) {
                    self.parse_ahead(path);
                }
            }
            StreamEvent::ToolCallEnd { call } if may_be_cut(&call) => reply.held = Some(call),
            StreamEvent::ToolCallEnd { call } => self.submit_call(call, reply, runs).await,
            StreamEvent::Finished { stop_reason, usage } => {
                tracing::info!(?stop_reason, ?usage, "model response finished");
                if stop_reason == StopReason::MaxTokens {
                    if let Some(call) = reply.held.take() {
                        tracing::info!(call_id = call.id, "dropped a call cut by the output limit");
                    }
                } else {
                    self.release_held(reply, runs).await;
                }
                self.record_usage(usage).await;
                return Some(stop_reason);
            }
        }
        None
    }

    /// Parses the file at `path` (as the model gave it) in the background, so that the
    /// check after the edit still streaming in parses only what it changed. A path
    /// outside the workspace is left alone: the call will be refused.
    fn parse_ahead(&self, path: String) {
        let workspace = Arc::clone(&self.tool_ctx.workspace);
        let linter = Arc::clone(&self.tool_ctx.linter);
        tokio::task::spawn_blocking(move || {
            if let Ok(abs) = workspace.resolve(&path) {
                tracing::debug!(file = %abs.display(), "parsing a file ahead of its edit");
                linter.prime_now(&abs);
            }
        });
    }

    /// Adds a complete call to the reply and starts it (or answers it at once when it
    /// cannot run).
    async fn submit_call(&self, call: ToolCall, reply: &mut Reply, runs: &mut ToolRuns) {
        let call = reply.draft.push_call(call);
        reply.has_calls = true;
        let blocks = reply.draft.take_settled();
        self.events.record(Record::AssistantPart { blocks }).await;
        self.events
            .emit(Event::ToolCallReady {
                call_id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
                info: self.tools.describe(&call.name, &call.arguments),
            })
            .await;
        let job = self.tools.prepare(&call.name, &call.arguments);
        for answer in runs.submit(call, job) {
            self.events.emit(answer).await;
        }
        self.start_ready(runs).await;
    }

    /// Submits the held call: it was not cut, just invalid, and the model is told so.
    async fn release_held(&self, reply: &mut Reply, runs: &mut ToolRuns) {
        if let Some(call) = reply.held.take() {
            self.submit_call(call, reply, runs).await;
        }
    }

    /// Emits output already sent by tools, so a call's last output precedes its end.
    async fn forward_output(&self, output: &mut mpsc::UnboundedReceiver<OutputChunk>) {
        while let Ok(chunk) = output.try_recv() {
            self.events
                .emit(Event::ToolOutputDelta {
                    call_id: chunk.call_id,
                    text: chunk.text,
                })
                .await;
        }
    }

    async fn start_ready(&self, runs: &mut ToolRuns) {
        for event in runs.start_ready() {
            self.events.emit(event).await;
        }
    }

    async fn cancel_runs(&self, runs: &mut ToolRuns, reason: CancelReason) {
        self.approvals.withdraw_all().await;
        for event in runs.cancel(reason, CANCEL_GRACE).await {
            self.events.emit(event).await;
        }
    }

    pub(super) async fn record_usage(&mut self, call: Usage) {
        self.compaction.observe(&call);
        self.session_usage += call;
        self.meter.add_usage(&call);
        let session = self.session_usage;
        let session_cost_usd = self.model_info.prices.map(|prices| prices.cost(&session));
        let context_used = self.model_info.context_used(&call);
        self.events
            .emit(Event::Usage {
                call,
                session,
                session_cost_usd,
                context_used,
            })
            .await;
    }
}

/// The `path` argument of a file tool's call.
/// The end of the model's last text, enough to say where it was.
fn tail_of_text(text: &str) -> String {
    const MAX_CHARS: usize = 600;
    let text = text.trim();
    let count = text.chars().count();
    match text.char_indices().nth(count.saturating_sub(MAX_CHARS)) {
        Some((start, _)) if start > 0 => format!("…{}", &text[start..]),
        _ => text.to_string(),
    }
}

/// Whether the output limit may have cut `call`: its arguments are not JSON. Empty
/// arguments mean "no arguments" to some servers, and are not cut.
fn may_be_cut(call: &ToolCall) -> bool {
    let text = call.arguments.trim();
    !text.is_empty() && serde_json::from_str::<serde::de::IgnoredAny>(text).is_err()
}
