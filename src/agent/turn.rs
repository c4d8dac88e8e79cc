//! The turn loop: model call → tool calls → model call … until the model stops asking
//! for tools, the user interrupts, or a call fails.
//!
//! One step is one model call. While its response streams, complete tool calls start
//! at once (see [`ToolRuns`]), and commands keep being read: an interrupt cancels the
//! step, a user message is held and delivered at the start of the next step.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::provider::{
    EventStream, ModelClient, ModelRequest, ProviderError, StopReason, StreamEvent, ToolSpec, Usage,
};
use crate::session::Record;
use crate::tools::{OutputChunk, OutputSink, Registry, ToolCtx};

use super::approval::ApprovalDesk;
use super::budget::{self, TaskMeter};
use super::context;
use super::conversation::{AssistantDraft, Conversation};
use super::events::EventSink;
use super::protocol::{Command, Event, TurnOutcome};
use super::repetition::RepetitionGuard;
use super::tool_runs::{CancelReason, ToolRuns};
use crate::config::{Budget, ModelInfo};

/// How long running tools get to stop on their own after a cancel.
const CANCEL_GRACE: Duration = Duration::from_secs(3);

/// How a step ended.
enum StepEnd {
    /// Tools ran; the model needs their results.
    ToolsRan,
    Finished(StopReason),
    Interrupted,
    Failed(String),
    Shutdown,
}

pub(crate) struct Agent {
    pub(crate) client: Arc<dyn ModelClient>,
    pub(crate) tools: Registry,
    pub(crate) tool_specs: Vec<ToolSpec>,
    /// Template for every tool call's context; `cancel` is replaced per step.
    pub(crate) tool_ctx: ToolCtx,
    pub(crate) approvals: Arc<ApprovalDesk>,
    pub(crate) system: Vec<String>,
    pub(crate) workspace: PathBuf,
    pub(crate) outputs_dir: PathBuf,
    pub(crate) max_tokens: u32,
    pub(crate) events: EventSink,
    pub(crate) commands: mpsc::UnboundedReceiver<Command>,
    pub(crate) conversation: Conversation,
    /// User messages not yet delivered to the model.
    pub(crate) pending: Vec<String>,
    pub(crate) session_usage: Usage,
    pub(crate) budget: Budget,
    pub(crate) model_info: ModelInfo,
    /// What the current task has spent; restarted by each user message that starts one.
    pub(crate) meter: TaskMeter,
    pub(crate) repetition: RepetitionGuard,
}

impl Agent {
    /// Serves commands until shutdown or until every handle is dropped.
    pub(crate) async fn run(mut self) {
        while let Some(command) = self.commands.recv().await {
            match command {
                Command::UserMessage { text } => {
                    self.pending.push(text);
                    if self.run_turn().await.is_break() {
                        break;
                    }
                }
                Command::Interrupt => {} // nothing is running
                Command::Decide { call_id, .. } => {
                    tracing::debug!(call_id, "decision while idle: nothing waits");
                }
                Command::SetMode { mode } => self.approvals.set_mode(mode).await,
                Command::WithdrawMessage { text } => self.withdraw(text).await,
                Command::ClearConversation => {
                    self.conversation = Conversation::default();
                    self.events.emit(Event::ConversationCleared).await;
                }
                Command::Shutdown => break,
            }
        }
        tracing::info!("agent stopped");
    }

    async fn run_turn(&mut self) -> std::ops::ControlFlow<()> {
        self.meter = TaskMeter::start(Instant::now());
        self.repetition = RepetitionGuard::default();
        let mut step = 0;
        let outcome = loop {
            self.deliver_pending().await;
            if let Some(exhausted) = self.budget_exhausted() {
                break exhausted;
            }
            step += 1;
            self.meter.count_step();
            match self.step(step).await {
                StepEnd::ToolsRan => match self.observe_step() {
                    Some(message) => break TurnOutcome::LoopDetected { message },
                    None => continue,
                },
                // A message typed during the final answer still reaches the model.
                StepEnd::Finished(_) if !self.pending.is_empty() => continue,
                StepEnd::Finished(stop_reason) => break TurnOutcome::Finished { stop_reason },
                StepEnd::Interrupted => break TurnOutcome::Interrupted,
                StepEnd::Failed(message) => break TurnOutcome::Failed { message },
                StepEnd::Shutdown => {
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
                && let Some(path) = path_argument(&call.arguments)
            {
                self.meter.note_file_changed(&path);
            }
        }
        let verdict = self.repetition.observe(calls, results);
        if let Some(message) = &verdict {
            tracing::warn!(%message, "loop detected");
        }
        verdict
    }

    async fn end_turn(&mut self, outcome: TurnOutcome) {
        if let Err(problem) = self.conversation.check_pairing() {
            // A bug, not a user error: log loudly; the request validators in tests catch it.
            tracing::error!(%problem, "conversation lost call/result pairing");
        }
        self.events.emit(Event::TurnEnd { outcome }).await;
    }

    async fn withdraw(&mut self, text: String) {
        if let Some(index) = self.pending.iter().position(|pending| *pending == text) {
            self.pending.remove(index);
            self.events.emit(Event::MessageWithdrawn { text }).await;
        }
    }

    async fn deliver_pending(&mut self) {
        for text in std::mem::take(&mut self.pending) {
            self.conversation.push_user_text(text.clone());
            self.events.emit(Event::UserMessageDelivered { text }).await;
        }
    }

    async fn request(&self) -> ModelRequest {
        let workspace = self.workspace.clone();
        let environment =
            tokio::task::spawn_blocking(move || context::environment_block(&workspace))
                .await
                .unwrap_or_else(|error| {
                    tracing::warn!(%error, "environment block failed");
                    String::new()
                });
        ModelRequest {
            system: self.system.clone(),
            tools: self.tool_specs.clone(),
            messages: self.conversation.messages().to_vec(),
            volatile_context: Some(environment).filter(|text| !text.is_empty()),
            max_tokens: self.max_tokens,
        }
    }

    async fn step(&mut self, number: u32) -> StepEnd {
        self.events.emit(Event::StepStarted { step: number }).await;
        self.conversation.repair();
        let request = self.request().await;
        let client = Arc::clone(&self.client);
        let opened = tokio::select! {
            opened = client.stream(&request) => opened,
            end = self.wait_for_cancel() => return end,
        };
        tracing::info!(
            step = number,
            messages = request.messages.len(),
            "model call sent"
        );
        let stream = match opened {
            Ok(stream) => stream,
            Err(error) => {
                tracing::warn!(%error, "model call failed before streaming");
                return StepEnd::Failed(describe_failure(&error));
            }
        };
        let (output_tx, mut output_rx) = mpsc::unbounded_channel();
        let mut ctx = self.tool_ctx.clone();
        ctx.cancel = CancellationToken::new();
        ctx.output = OutputSink::new(output_tx);
        let mut runs = ToolRuns::new(ctx, self.outputs_dir.clone());
        let mut draft = AssistantDraft::default();
        let end = self
            .drive(stream, &mut draft, &mut runs, &mut output_rx)
            .await;
        let end = match end {
            StepEnd::Interrupted | StepEnd::Shutdown => {
                self.cancel_runs(&mut runs, CancelReason::UserInterrupt)
                    .await;
                end
            }
            StepEnd::Failed(_) => {
                self.cancel_runs(&mut runs, CancelReason::ResponseFailed)
                    .await;
                end
            }
            StepEnd::ToolsRan | StepEnd::Finished(_) => match self.run_turn_checks(&mut runs).await
            {
                Some(interrupted) => interrupted,
                None => end,
            },
        };
        let results = runs.into_results();
        let ran_tools = !results.is_empty();
        let assistant = draft.into_blocks();
        self.events
            .record(Record::Step {
                assistant: assistant.clone(),
                results: results.clone(),
            })
            .await;
        self.conversation.push_step(assistant, results);
        match end {
            // Some servers report `stop` although they called tools: the calls decide.
            StepEnd::Finished(_) if ran_tools => StepEnd::ToolsRan,
            end => end,
        }
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
        draft: &mut AssistantDraft,
        runs: &mut ToolRuns,
        output: &mut mpsc::UnboundedReceiver<OutputChunk>,
    ) -> StepEnd {
        let mut stop_reason: Option<StopReason> = None;
        loop {
            if let Some(stop) = &stop_reason
                && runs.all_done()
            {
                return StepEnd::Finished(stop.clone());
            }
            tokio::select! {
                command = self.commands.recv() => {
                    if let Some(end) = self.on_command_during_step(command).await {
                        return end;
                    }
                }
                item = stream.next(), if stop_reason.is_none() => match item {
                    Some(Ok(event)) => {
                        if let Some(stop) = self.on_stream_event(event, draft, runs).await {
                            stop_reason = Some(stop);
                        }
                    }
                    Some(Err(error)) => {
                        tracing::warn!(%error, "model stream failed");
                        return StepEnd::Failed(describe_failure(&error));
                    }
                    None => {
                        return StepEnd::Failed(
                            "the model's response ended without a stop reason".to_string(),
                        );
                    }
                },
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
            Some(Command::UserMessage { text }) => {
                self.pending.push(text);
                None
            }
            Some(Command::Decide { call_id, decision }) => {
                self.approvals.settle(&call_id, decision).await;
                None
            }
            Some(Command::SetMode { mode }) => {
                self.approvals.set_mode(mode).await;
                None
            }
            Some(Command::WithdrawMessage { text }) => {
                self.withdraw(text).await;
                None
            }
            Some(Command::ClearConversation) => {
                tracing::debug!("clear ignored while a turn runs");
                None
            }
            Some(Command::Interrupt) => Some(StepEnd::Interrupted),
            Some(Command::Shutdown) | None => Some(StepEnd::Shutdown),
        }
    }

    /// Waits for a command that cancels the step, holding user messages for later.
    async fn wait_for_cancel(&mut self) -> StepEnd {
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
        draft: &mut AssistantDraft,
        runs: &mut ToolRuns,
    ) -> Option<StopReason> {
        match event {
            StreamEvent::TextDelta { text } => {
                draft.push_text(&text);
                self.events.emit(Event::TextDelta { text }).await;
            }
            StreamEvent::ThinkingDelta { text } => {
                draft.push_thinking(&text);
                self.events.emit(Event::ThinkingDelta { text }).await;
            }
            StreamEvent::ThinkingSignature { signature } => draft.sign_thinking(signature),
            StreamEvent::RedactedThinking { data } => draft.push_redacted_thinking(data),
            StreamEvent::ToolCallStart { id, name } => {
                self.events
                    .emit(Event::ToolCallBegin { call_id: id, name })
                    .await;
            }
            StreamEvent::ToolCallArgsDelta { .. } => {}
            StreamEvent::ToolCallEnd { call } => {
                let call = draft.push_call(call);
                let blocks = draft.take_settled();
                self.events.record(Record::AssistantPart { blocks }).await;
                self.events
                    .emit(Event::ToolCallReady {
                        call_id: call.id.clone(),
                        name: call.name.clone(),
                        arguments: call.arguments.clone(),
                    })
                    .await;
                let job = self.tools.prepare(&call.name, &call.arguments);
                for answer in runs.submit(call, job) {
                    self.events.emit(answer).await;
                }
                self.start_ready(runs).await;
            }
            StreamEvent::Finished { stop_reason, usage } => {
                tracing::info!(?stop_reason, ?usage, "model response finished");
                self.record_usage(usage).await;
                return Some(stop_reason);
            }
        }
        None
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

    async fn record_usage(&mut self, call: Usage) {
        budget::add(&mut self.session_usage, &call);
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
fn path_argument(arguments: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(arguments).ok()?;
    value.get("path")?.as_str().map(str::to_string)
}

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

/// A failure message for the user: what failed, and what to check.
fn describe_failure(error: &ProviderError) -> String {
    let hint = match error {
        ProviderError::Connect { .. } => " Is the server running and the base URL right?",
        ProviderError::Http {
            status: 401 | 403, ..
        } => " Check the API key.",
        ProviderError::Http { status: 404, .. } => " Check the model name and the base URL.",
        _ => "",
    };
    format!("model call failed: {error}.{hint}")
}
