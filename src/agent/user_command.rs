//! `!command`: the user's own command, run in the session's shell between turns.
//!
//! Owns: answering [`Command::RunUserCommand`]: running the command through the shell
//! tool (so it gets the same shell, sandbox, time limit, output cleaning and clipping
//! as the model's commands), its events, and the note that gives its result to the
//! model with the next message. Does not own: running commands (`tools::shell`,
//! `shell/`).
//! Invariant: the user's command is never put to the approval rules (the user typed
//! it) but is never run outside the sandbox either; it runs only while no turn runs,
//! and its result joins the conversation (and the session transcript) as user text,
//! so the model's next request carries it.
//!
//! [`Command::RunUserCommand`]: super::protocol::Command::RunUserCommand

use std::sync::Arc;

use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::policy::{ApprovalRequest, Approver, Decision};
use crate::tools::{Live, OutputSink, ToolOutput};

use super::protocol::{Event, MessageId, user_command_call_id};
use super::session::Agent;
use super::step::StepEnd;

/// Approves everything: the command is the user's own.
struct UsersOwn;

#[async_trait::async_trait]
impl Approver for UsersOwn {
    async fn decide(&self, _request: ApprovalRequest) -> Decision {
        Decision::Approve
    }
}

/// How a user's command ended, for the agent's loop.
pub(super) enum Ran {
    Done,
    /// The user shut the agent down meanwhile.
    Shutdown,
}

impl Agent {
    /// Runs `command` in the session's shell; Esc (an interrupt) stops it. Messages sent
    /// meanwhile wait for the next turn.
    pub(super) async fn run_user_command(&mut self, id: MessageId, command: String) -> Ran {
        self.events
            .emit(Event::UserCommandStarted {
                id,
                command: command.clone(),
            })
            .await;
        let (output_tx, mut output_rx) = mpsc::unbounded_channel();
        let mut ctx = self.tool_ctx.clone();
        ctx.cancel = CancellationToken::new();
        ctx.output = OutputSink::new(output_tx);
        ctx.approver = Arc::new(UsersOwn);
        ctx.call_id = user_command_call_id(id);
        let cancel = ctx.cancel.clone();
        let arguments = json!({ "command": command }).to_string();
        let prepared = self.tools.registry().prepare("shell", &arguments);
        let run = async move {
            let (tool, arguments) = prepared?;
            tool.run(arguments, &ctx).await
        };
        tokio::pin!(run);
        let mut shutdown = false;
        let outcome = loop {
            tokio::select! {
                outcome = &mut run => break outcome,
                Some(chunk) = output_rx.recv() => {
                    self.events.emit(live_event(id, chunk.live)).await;
                }
                command = self.commands.recv(), if !cancel.is_cancelled() => {
                    match self.on_command_during_step(command).await {
                        Some(StepEnd::Shutdown) => {
                            shutdown = true;
                            cancel.cancel();
                        }
                        Some(_) => cancel.cancel(),
                        None => {}
                    }
                }
            }
        };
        while let Ok(chunk) = output_rx.try_recv() {
            self.events.emit(live_event(id, chunk.live)).await;
        }
        let (is_error, summary, output) = match outcome {
            Ok(ToolOutput {
                content, summary, ..
            }) => (false, summary, content),
            Err(error) => {
                let text = error.to_string();
                let first = text.lines().next().unwrap_or_default().to_string();
                (true, first, text)
            }
        };
        self.add_note(user_command_note(&command, &output)).await;
        self.events
            .emit(Event::UserCommandEnded {
                id,
                is_error,
                summary,
                output,
            })
            .await;
        if shutdown { Ran::Shutdown } else { Ran::Done }
    }

    /// A `!command` that came while a turn runs: the shell is the model's until the turn
    /// ends.
    pub(super) async fn refuse_user_command_during_turn(&self, id: MessageId, command: String) {
        let refusal = "Not run: a turn is running and the shell is the model's until it \
                       ends. Wait for it, or interrupt it (Esc), then run the command again."
            .to_string();
        self.events
            .emit(Event::UserCommandStarted { id, command })
            .await;
        self.events
            .emit(Event::UserCommandEnded {
                id,
                is_error: true,
                summary: "not run: a turn is running".to_string(),
                output: refusal,
            })
            .await;
    }
}

/// What the model is told of a user's command: that it was the user's, and its result
/// as the shell tool words it.
fn user_command_note(command: &str, result: &str) -> String {
    format!(
        "The user ran a command in the session's shell themselves (not a call of \
         yours):\n$ {command}\n{result}"
    )
}

/// What a front end shows of the user's running command.
fn live_event(id: MessageId, live: Live) -> Event {
    match live {
        Live::Output(text) => Event::UserCommandOutput { id, text },
        Live::WaitingForInput { program, line } => Event::CommandWaitingForInput {
            call_id: user_command_call_id(id),
            program,
            line,
        },
    }
}
