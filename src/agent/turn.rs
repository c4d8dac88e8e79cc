//! The turn loop: model call → tool calls → model call … until the model stops asking
//! for tools, the user interrupts, a budget or the loop detector stops it, or a call
//! fails for good.
//!
//! Owns: a turn's own state ([`Turn`], made when a user message starts one, so nothing
//! is reset by hand), what follows each step (recording it, retrying a failed call,
//! asking again after a cut-off answer), and the commands that arrive while a turn
//! runs. Does not own: one model call and its tool runs (`step.rs`), what lasts the
//! session (`session.rs`).
//! Invariant: every event of a turn comes between its [`Event::TurnStarted`] and its
//! [`Event::TurnEnd`], which carry the same number.
//!
//! A failed call is retried after a backoff that an interrupt cancels at once (see
//! [`Recovery`]). What the failed call streamed is dropped, unless some of its tool
//! calls were complete: those run to the end and are kept with their results, and the
//! turn goes on with the next step. A call whose arguments were cut (invalid JSON at the
//! output limit, or a stream that broke mid-call) is never run.

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use crate::provider::{ModelRequest, ProviderError, StopReason};
use crate::session::Record;
use crate::shell::UserKeys;

use super::context;
use super::hooks::MAX_STOP_CONTINUATIONS;
use super::protocol::{Command, CommandInput, Event, TurnOutcome};
use super::recovery::{AfterCutOff, AfterFailure, Recovery};
use super::repetition::RepetitionGuard;
use super::session::Agent;
use super::step::{Response, StepEnd};

/// What the turn loop does after a step.
enum Next {
    Step,
    End(TurnOutcome),
    Shutdown,
}

/// What a turn needs fresh: made when a user message starts it, dropped when it ends.
pub(super) struct Turn {
    /// Counted from 1 in the session; a resumed session counts on.
    pub(super) number: u32,
    /// Model calls so far, counted from 1.
    pub(super) steps: u32,
    recovery: Recovery,
    /// Stops a model that keeps making the same calls.
    repetition: RepetitionGuard,
    /// The environment block of the last request, while no step since could have
    /// changed what it says (see [`Agent::request`]). `None` at the start: the user
    /// may have changed the repository since the last turn.
    environment: Option<String>,
    /// How many times Stop hooks sent the model back to work in this turn.
    stop_continuations: usize,
}

impl Turn {
    fn new(number: u32, recovery: Recovery) -> Self {
        Self {
            number,
            steps: 0,
            recovery,
            repetition: RepetitionGuard::default(),
            environment: None,
            stop_continuations: 0,
        }
    }
}

impl Agent {
    /// Runs one turn, from the user message that starts it to its outcome; breaks when
    /// the agent must stop.
    pub(super) async fn run_turn(&mut self) -> ControlFlow<()> {
        // The budget counts per task; the meter is shared with the explore tool, so it
        // is restarted rather than made anew.
        self.meter.restart(Instant::now());
        let number = self.checkpoints.begin_turn().await;
        let mut turn = Turn::new(number, Recovery::new(self.retry.clone(), self.max_tokens));
        self.events.emit(Event::TurnStarted { turn: number }).await;
        let outcome = loop {
            self.report_external_changes().await;
            if !self.deliver_pending().await && turn.steps == 0 {
                break TurnOutcome::StoppedByHook {
                    reason: "a UserPromptSubmit hook refused the message".to_string(),
                };
            }
            if let Some(exhausted) = self.budget_exhausted() {
                break exhausted;
            }
            match self.compact_if_due().await {
                None => {}
                Some(StepEnd::Shutdown) => {
                    self.end_turn(&turn, TurnOutcome::Interrupted).await;
                    return ControlFlow::Break(());
                }
                Some(_) => break TurnOutcome::Interrupted,
            }
            turn.steps += 1;
            self.meter.count_step();
            let (end, response) = self.step(&mut turn).await;
            self.report_explorer_usage().await;
            let ran_tools = response.has_calls();
            let next = match end {
                StepEnd::Finished(StopReason::MaxTokens) => {
                    self.after_cut_off(&mut turn.recovery, response).await
                }
                StepEnd::Finished(stop_reason) => {
                    turn.recovery.answer_complete();
                    // Some servers report `stop` although they called tools: the calls
                    // decide. A message typed during the final answer still reaches the
                    // model.
                    let more = ran_tools || !self.pending.is_empty();
                    self.record(response).await;
                    // The Stop hooks run only when the model would end its turn.
                    if more || self.stop_hooks_continue(&mut turn).await {
                        Next::Step
                    } else {
                        Next::End(TurnOutcome::Finished { stop_reason })
                    }
                }
                StepEnd::CallFailed(error) => {
                    self.after_failure(&mut turn.recovery, &error, response)
                        .await
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
                Next::Step if ran_tools => match self.observe_step(&mut turn) {
                    Some(message) => Next::End(TurnOutcome::LoopDetected { message }),
                    None => Next::Step,
                },
                next => next,
            };
            // A tool's hook that said `continue: false` ends the turn after its step.
            let next = match (
                next,
                self.hooks.as_ref().and_then(|hooks| hooks.take_halt()),
            ) {
                (Next::Step | Next::End(TurnOutcome::Finished { .. }), Some(reason)) => {
                    Next::End(TurnOutcome::StoppedByHook { reason })
                }
                (next, _) => next,
            };
            match next {
                Next::Step => {}
                Next::End(outcome) => break outcome,
                Next::Shutdown => {
                    self.end_turn(&turn, TurnOutcome::Interrupted).await;
                    return ControlFlow::Break(());
                }
            }
        };
        self.end_turn(&turn, outcome).await;
        ControlFlow::Continue(())
    }

    /// Runs the Stop hooks as the model ends its turn; true when one sends it back to
    /// work (its reason is given to the model), at most [`MAX_STOP_CONTINUATIONS`]
    /// times a turn.
    async fn stop_hooks_continue(&mut self, turn: &mut Turn) -> bool {
        let Some(hooks) = self.hooks.clone() else {
            return false;
        };
        let (go_on, notices) = hooks.on_stop(turn.stop_continuations > 0).await;
        for notice in notices {
            self.events.emit(notice).await;
        }
        let Some(reason) = go_on else {
            return false;
        };
        if turn.stop_continuations >= MAX_STOP_CONTINUATIONS {
            self.events
                .emit(Event::HookNotice {
                    hook_event: "Stop".to_string(),
                    hook: String::new(),
                    text: format!(
                        "the turn ends anyway: Stop hooks sent the model back \
                         {MAX_STOP_CONTINUATIONS} times already"
                    ),
                    warning: true,
                })
                .await;
            return false;
        }
        turn.stop_continuations += 1;
        self.add_note(format!(
            "A Stop hook of the user's says the work is not done yet; continue:\n{reason}"
        ))
        .await;
        true
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
    fn observe_step(&mut self, turn: &mut Turn) -> Option<String> {
        let (calls, results) = self.conversation.last_exchange();
        if calls
            .iter()
            .any(|call| self.tools.may_change_workspace(&call.name))
        {
            turn.environment = None;
        }
        for call in &calls {
            self.meter.count_tool_run();
            let edits = self.tools.edits_files(&call.name);
            let landed = results
                .iter()
                .any(|result| result.call_id == call.id && !result.is_error);
            if edits
                && landed
                && let Some(path) = self
                    .tools
                    .registry()
                    .describe(&call.name, &call.arguments)
                    .path()
            {
                self.meter.note_file_changed(path);
            }
        }
        let verdict = turn.repetition.observe(calls, results);
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

    async fn end_turn(&mut self, turn: &Turn, outcome: TurnOutcome) {
        if let Err(problem) = self.conversation.check_pairing() {
            // A bug, not a user error: log loudly; the request validators in tests catch it.
            tracing::error!(%problem, "conversation lost call/result pairing");
        }
        self.checkpoints.end_turn().await;
        self.events
            .emit(Event::TurnEnd {
                turn: turn.number,
                outcome,
            })
            .await;
    }

    /// after a step that ran a tool which may change files; steps that only read reuse
    /// the last one.
    async fn environment(&self, turn: &mut Turn) -> String {
        if let Some(block) = &turn.environment {
            return block.clone();
        }
        let workspace = self.workspace.clone();
        let block = tokio::task::spawn_blocking(move || context::environment_block(&workspace))
            .await
            .unwrap_or_else(|error| {
                tracing::warn!(%error, "environment block failed");
                String::new()
            });
        turn.environment = Some(block.clone());
        block
    }

    /// The request of the turn's next model call.
    pub(super) async fn request(&self, turn: &mut Turn) -> ModelRequest {
        let mut environment = self.environment(turn).await;
        context::note_servers_starting(&mut environment, &self.tools.servers_starting());
        ModelRequest {
            system: self.system.clone(),
            tools: self.tools.specs().to_vec(),
            messages: self.conversation.messages().to_vec(),
            volatile_context: Some(environment).filter(|text| !text.is_empty()),
            max_tokens: turn.recovery.output_limit(),
        }
    }

    /// Handles a command that arrives mid-step; returns how the step ends, if it does.
    pub(super) async fn on_command_during_step(
        &mut self,
        command: Option<Command>,
    ) -> Option<StepEnd> {
        match command {
            Some(Command::UserMessage { id, text, images }) => {
                self.pending
                    .push(super::session::Pending { id, text, images });
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
            Some(Command::Compact { .. }) => {
                let reason = "a turn is running; compact once it ends".to_string();
                self.events.emit(Event::CompactionSkipped { reason }).await;
                None
            }
            Some(Command::RunUserCommand { id, command }) => {
                self.refuse_user_command_during_turn(id, command).await;
                None
            }
            Some(Command::TypeIntoCommand { call_id, input }) => {
                self.type_into_command(&call_id, input);
                None
            }
            Some(Command::Interrupt) => Some(StepEnd::Interrupted),
            Some(Command::Shutdown) | None => Some(StepEnd::Shutdown),
        }
    }

    /// Passes the user's keys to the running command `call_id`.
    fn type_into_command(&self, call_id: &str, input: CommandInput) {
        let keys = match input {
            CommandInput::Focus => UserKeys::Focus,
            CommandInput::Release => UserKeys::Release,
            CommandInput::Text { text } => UserKeys::Type(text.into_bytes()),
        };
        if !self.tool_ctx.keyboards.send(call_id, keys) {
            // It ended while the keys were on their way.
            tracing::debug!(call_id, "keys for a command that no longer runs dropped");
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
