//! The agent between turns: what lasts the whole session, and the commands it serves.
//!
//! Owns: the session's state ([`Agent`]: the model client, the tools, the
//! conversation, the approval desk, checkpoints, usage and the command channel), and
//! answering commands while no turn runs. Does not own: what happens inside a turn
//! (`turn.rs`, `step.rs`), whose state is a [`super::turn::Turn`] made for each one.
//! Invariant: nothing here is reset by hand when a turn starts; what a turn needs
//! fresh is built with it.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc;

use crate::config::{Budget, ModelInfo};
use crate::policy::ApprovalMode;
use crate::provider::{ModelClient, RetryPolicy, Usage};
use crate::tools::ToolCtx;

use super::approval::ApprovalDesk;
use super::budget::SharedMeter;
use super::checkpoints::Checkpoints;
use super::compaction::Compactor;
use super::conversation::Conversation;
use super::events::EventSink;
use super::hooks::{AgentHooks, PromptVerdict};
use super::nested_instructions::NestedInstructions;
use super::protocol::{Command, Event, MessageId};
use super::recovery::CallSite;
use super::step::StepEnd;
use super::tool_set::ToolSet;
use super::user_command::Ran;

/// A user message not yet delivered to the model.
pub(crate) struct Pending {
    pub(crate) id: MessageId,
    pub(crate) text: String,
    /// Paths of images to attach.
    pub(crate) images: Vec<String>,
}

pub(crate) struct Agent {
    pub(crate) client: Arc<dyn ModelClient>,
    pub(crate) tools: ToolSet,
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
    pub(crate) pending: Vec<Pending>,
    pub(crate) session_usage: Usage,
    pub(crate) budget: Budget,
    pub(crate) model_info: ModelInfo,
    /// What the current task has spent; restarted by each user message that starts one.
    /// Shared with the explore tool, which spends from the same task.
    pub(crate) meter: SharedMeter,
    pub(crate) checkpoints: Arc<Checkpoints>,
    pub(crate) compaction: Compactor,
    /// The session's hooks; `None` when there are none.
    pub(crate) hooks: Option<Arc<AgentHooks>>,
    /// The instruction files of directories below the workspace given so far.
    pub(crate) nested_instructions: NestedInstructions,
}

impl Agent {
    /// Serves commands until shutdown or until every handle is dropped.
    pub(crate) async fn run(mut self) {
        while let Some(command) = self.commands.recv().await {
            match command {
                Command::UserMessage { id, text, images } => {
                    self.pending.push(Pending { id, text, images });
                    if self.run_turn().await.is_break() {
                        break;
                    }
                }
                Command::Interrupt => {} // nothing is running
                Command::Decide { call_id, .. } => {
                    tracing::debug!(call_id, "decision while idle: nothing waits");
                }
                Command::TypeIntoCommand { call_id, .. } => {
                    tracing::debug!(call_id, "keys while idle: no command runs");
                }
                Command::SetMode { mode } => self.set_mode(mode).await,
                Command::WithdrawMessage { id } => self.withdraw(id).await,
                Command::ClearConversation => {
                    self.conversation = Conversation::default();
                    self.nested_instructions = NestedInstructions::default();
                    self.events.emit(Event::ConversationCleared).await;
                }
                Command::Undo { scope } => self.undo(scope).await,
                Command::Compact { focus } => {
                    if let Some(StepEnd::Shutdown) = self.compact_now(focus).await {
                        break;
                    }
                    if self.turn_for_waiting_messages().await.is_break() {
                        break;
                    }
                }
                Command::RunUserCommand { id, command } => {
                    if let Ran::Shutdown = self.run_user_command(id, command).await {
                        break;
                    }
                    if self.turn_for_waiting_messages().await.is_break() {
                        break;
                    }
                }
                Command::Shutdown => break,
            }
        }
        if let Some(hooks) = &self.hooks {
            for notice in hooks.on_session_end().await {
                self.events.emit(notice).await;
            }
        }
        tracing::info!("agent stopped");
    }

    /// Runs the SessionStart hooks: what they print joins the model's instructions.
    pub(crate) async fn start_hooks(&mut self, resumed: bool) {
        let Some(hooks) = &self.hooks else {
            return;
        };
        let (context, notices) = hooks.on_session_start(resumed).await;
        for notice in notices {
            self.events.emit(notice).await;
        }
        if !context.is_empty() {
            self.system.push(format!(
                "# Session context\n\nThe user's SessionStart hooks give you this:\n\n{}",
                context.join("\n\n")
            ));
        }
    }

    /// Messages sent while the agent was busy outside a turn (a summary, the user's
    /// command) start their turn now; breaks when the agent must stop.
    async fn turn_for_waiting_messages(&mut self) -> std::ops::ControlFlow<()> {
        if self.pending.is_empty() {
            return std::ops::ControlFlow::Continue(());
        }
        self.run_turn().await
    }

    /// A new approval mode; `read-only` also makes the workspace read-only in the
    /// sandbox for every command from now on (the shell is replaced before its next
    /// command), so a command the classifier misjudged still cannot write.
    pub(super) async fn set_mode(&mut self, mode: ApprovalMode) {
        self.approvals.set_mode(mode).await;
        self.tool_ctx
            .shell
            .sandbox()
            .set_workspace_read_only(mode == ApprovalMode::ReadOnly);
    }

    pub(super) async fn withdraw(&mut self, id: MessageId) {
        if let Some(index) = self.pending.iter().position(|pending| pending.id == id) {
            let Pending { id, text, .. } = self.pending.remove(index);
            self.events.emit(Event::MessageWithdrawn { id, text }).await;
        }
    }

    /// Gives the waiting messages to the model; false when there were some and the
    /// UserPromptSubmit hooks refused every one.
    pub(super) async fn deliver_pending(&mut self) -> bool {
        let waiting = std::mem::take(&mut self.pending);
        let any_waiting = !waiting.is_empty();
        let mut delivered = false;
        for Pending { id, text, images } in waiting {
            let mut context = Vec::new();
            if let Some(hooks) = &self.hooks {
                let (verdict, notices) = hooks.on_prompt(&text).await;
                for notice in notices {
                    self.events.emit(notice).await;
                }
                match verdict {
                    PromptVerdict::Refuse { reason } => {
                        tracing::info!(%reason, "a UserPromptSubmit hook refused a message");
                        // Taken back: the front end returns it to the user.
                        self.events.emit(Event::MessageWithdrawn { id, text }).await;
                        continue;
                    }
                    PromptVerdict::Send { context: added } => context = added,
                }
            }
            delivered = true;
            self.conversation.push_user_text(text.clone());
            self.events
                .emit(Event::UserMessageDelivered {
                    id,
                    text: text.clone(),
                })
                .await;
            for added in context {
                self.add_note(format!(
                    "(Added by the user's UserPromptSubmit hook:)\n{added}"
                ))
                .await;
            }
            self.attach_images(id, &images).await;
            self.attach_mentions(id, &text).await;
        }
        delivered || !any_waiting
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

    /// Adds what explorations spent since the last report to the session's totals.
    /// Their calls are not the conversation's, so the context gauge is left as it is.
    pub(super) async fn report_explorer_usage(&mut self) {
        let spent = self.meter.take_unreported();
        if spent == Usage::default() {
            return;
        }
        self.session_usage += spent;
        let session = self.session_usage;
        self.events
            .emit(Event::Usage {
                call: spent,
                session,
                session_cost_usd: self.model_info.prices.map(|prices| prices.cost(&session)),
                context_used: None,
            })
            .await;
    }
}
