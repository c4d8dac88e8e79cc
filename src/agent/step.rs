//! One step: a model call, streamed, with its tool calls started as soon as each is
//! complete.
//!
//! Owns: reading the response stream (text, thinking, calls being written), submitting
//! each complete call to [`ToolRuns`], forwarding tool output while it runs, the
//! project-wide checks after a batch of edits, and cancelling the runs on an interrupt
//! or a failed call. Does not own: what happens after the step (`turn.rs`).
//! Invariant: every complete call of the response has exactly one result in the step's
//! [`Response`]; a call whose arguments the output limit may have cut is never run.
//!
//! While the response streams, commands keep being read: an interrupt cancels the
//! step, a user message is held and delivered at the start of the next step.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::provider::{
    Block, EventStream, ProviderError, StopReason, StreamEvent, ToolCall, ToolResult,
};
use crate::session::Record;
use crate::tools::{Live, OutputChunk, OutputSink};

use super::conversation::AssistantDraft;
use super::prime::StreamedPaths;
use super::protocol::Event;
use super::session::Agent;
use super::tool_runs::{CancelReason, ToolRuns};
use super::turn::Turn;

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

/// What one model call produced, before the turn loop decides whether it enters the
/// conversation.
#[derive(Default)]
pub(super) struct Response {
    pub(super) blocks: Vec<Block>,
    pub(super) results: Vec<ToolResult>,
    /// Front ends were shown some of it (text, thinking, a call being written).
    pub(super) shown: bool,
}

impl Response {
    pub(super) fn has_calls(&self) -> bool {
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

impl Agent {
    /// Makes the turn's next model call and runs the tools it asks for.
    pub(super) async fn step(&mut self, turn: &mut Turn) -> (StepEnd, Response) {
        self.events
            .emit(Event::StepStarted {
                turn: turn.number,
                step: turn.steps,
            })
            .await;
        self.conversation.repair();
        // The session's first request waits a moment for MCP servers still starting,
        // so that it can offer their tools; an interrupt does not wait for them.
        if let Some(servers_ready) = self.tools.first_wait() {
            tokio::select! {
                () = servers_ready => {}
                end = self.wait_for_cancel() => return (end, Response::default()),
            }
        }
        self.tools.refresh();
        let request = self.request(turn).await;
        let client = Arc::clone(&self.client);
        let opened = tokio::select! {
            opened = client.stream(&request) => opened,
            end = self.wait_for_cancel() => return (end, Response::default()),
        };
        tracing::info!(
            turn = turn.number,
            step = turn.steps,
            messages = request.messages.len(),
            max_tokens = request.max_tokens,
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
        let mut runs = ToolRuns::new(ctx, self.outputs_dir.clone()).with_hooks(self.hooks.clone());
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
        self.give_nested_instructions(&mut runs).await;
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
                    self.events.emit(live_event(chunk)).await;
                }
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
                if self.tools.edits_files(&name) {
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
                info: self.tools.registry().describe(&call.name, &call.arguments),
            })
            .await;
        let job = self.tools.registry().prepare(&call.name, &call.arguments);
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
            self.events.emit(live_event(chunk)).await;
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
}

/// What a front end shows of a running call.
fn live_event(chunk: OutputChunk) -> Event {
    let call_id = chunk.call_id;
    match chunk.live {
        Live::Output(text) => Event::ToolOutputDelta { call_id, text },
        Live::WaitingForInput { program, line } => Event::CommandWaitingForInput {
            call_id,
            program,
            line,
        },
    }
}

/// Whether the output limit may have cut `call`: its arguments are not JSON. Empty
/// arguments mean "no arguments" to some servers, and are not cut.
fn may_be_cut(call: &ToolCall) -> bool {
    let text = call.arguments.trim();
    !text.is_empty() && serde_json::from_str::<serde::de::IgnoredAny>(text).is_err()
}
