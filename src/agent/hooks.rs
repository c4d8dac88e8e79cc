//! The agent's side of hooks: what each event's hooks are given, and what their
//! outcome does to the call, the message or the turn.
//!
//! Owns: the event inputs in Claude Code's shapes (`tool_name`, `tool_input`,
//! `tool_response`, `prompt`, `stop_hook_active`, ...), refusing a call or a message
//! a hook blocked, passing a hook's `ask` or trusted `allow` to the approval desk,
//! adding what hooks say for the model to its result or message, and the stop a hook
//! asked for. Does not own: running hooks or reading their replies (`crate::hooks`).
//! Invariant: a block always reaches the model (a refused call's result, feedback on
//! a result) or the user (a refused message); a hook's notices always reach the user.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use crate::hooks::{self, HookEvent, Hooks, Outcome};
use crate::tools::{ToolError, ToolOutput};

use super::approval::{ApprovalDesk, HookSays};
use super::protocol::Event;

/// How many times Stop hooks may send the model back to work in one turn: a hook that
/// always blocks must not keep a turn going for ever.
pub(crate) const MAX_STOP_CONTINUATIONS: usize = 3;

/// The session's hooks, as the agent uses them.
pub(crate) struct AgentHooks {
    hooks: Hooks,
    desk: Arc<ApprovalDesk>,
    workspace: PathBuf,
    /// A tool's hook said `continue: false`: the turn stops after this step.
    halt: Mutex<Option<String>>,
}

/// What the hooks made of a user's message.
pub(crate) enum PromptVerdict {
    /// Send it, with this added for the model.
    Send { context: Vec<String> },
    /// Do not send it; the reason is for the user.
    Refuse { reason: String },
}

impl AgentHooks {
    /// `None` when there are no hooks: then nothing of this runs.
    pub(crate) fn new(
        hooks: Hooks,
        desk: Arc<ApprovalDesk>,
        workspace: PathBuf,
    ) -> Option<Arc<AgentHooks>> {
        if hooks.is_empty() {
            return None;
        }
        let agent_hooks = Arc::new(AgentHooks {
            hooks,
            desk: Arc::clone(&desk),
            workspace,
            halt: Mutex::new(None),
        });
        // Weak: the desk must not keep the hooks (which hold the desk) alive.
        let weak = Arc::downgrade(&agent_hooks);
        desk.on_ask(Box::new(move |message| {
            if let Some(hooks) = weak.upgrade() {
                hooks.notify(message);
            }
        }));
        Some(agent_hooks)
    }

    /// PreToolUse: a block refuses the call (the model gets the reason); `ask` and a
    /// trusted `allow` go to the approval desk for this call.
    pub(crate) async fn before_tool(
        &self,
        tool: &str,
        args: &Value,
        call_id: &str,
        notices: &mut Vec<Event>,
    ) -> Result<(), ToolError> {
        // Some servers reuse call ids (`call_0`): nothing said of an earlier call
        // carries over to this one.
        self.desk.forget_hook(call_id);
        if !self.hooks.any(HookEvent::PreToolUse, Some(tool)) {
            return Ok(());
        }
        let input = self.tool_fields(tool, args, call_id);
        let outcome = self
            .hooks
            .run(HookEvent::PreToolUse, Some(tool), input)
            .await;
        notices.extend(notice_events(&outcome));
        self.note_halt(&outcome);
        if let Some(reason) = outcome.block {
            return Err(ToolError::Refused(format!(
                "A PreToolUse hook refused this call: {reason}"
            )));
        }
        if outcome.ask {
            let why = "a PreToolUse hook asks you to decide".to_string();
            self.desk.hook_says(call_id, HookSays::Ask { why });
        } else if outcome.allow {
            self.desk.hook_says(call_id, HookSays::Allow);
        }
        Ok(())
    }

    /// PostToolUse: what the hooks say for the model (a block's reason, exit 2's
    /// stderr, `additionalContext`) is added to the call's result.
    pub(crate) async fn after_tool(
        &self,
        tool: &str,
        args: &Value,
        call_id: &str,
        outcome: &mut Result<ToolOutput, ToolError>,
        notices: &mut Vec<Event>,
    ) {
        self.desk.forget_hook(call_id);
        if !self.hooks.any(HookEvent::PostToolUse, Some(tool)) {
            return;
        }
        let mut input = self.tool_fields(tool, args, call_id);
        let response = match &*outcome {
            Ok(output) => json!({"output": output.content, "success": true}),
            Err(error) => json!({"error": error.to_string(), "success": false}),
        };
        if let Value::Object(fields) = &mut input {
            fields.insert("tool_response".into(), response);
        }
        let hooked = self
            .hooks
            .run(HookEvent::PostToolUse, Some(tool), input)
            .await;
        notices.extend(notice_events(&hooked));
        self.note_halt(&hooked);
        let mut feedback: Vec<String> = hooked.block.into_iter().collect();
        feedback.extend(hooked.context);
        if feedback.is_empty() {
            return;
        }
        let note = format!("\n\nPostToolUse hook feedback:\n{}", feedback.join("\n"));
        match outcome {
            Ok(output) => output.content.push_str(&note),
            Err(error) => {
                *error = match error {
                    ToolError::InvalidArguments(text) => {
                        ToolError::InvalidArguments(format!("{text}{note}"))
                    }
                    ToolError::Refused(text) => ToolError::Refused(format!("{text}{note}")),
                    ToolError::Failed(text) => ToolError::Failed(format!("{text}{note}")),
                }
            }
        }
    }

    /// UserPromptSubmit: a block refuses the message; what the hooks print is added
    /// to it for the model.
    pub(crate) async fn on_prompt(&self, text: &str) -> (PromptVerdict, Vec<Event>) {
        let outcome = self
            .hooks
            .run(HookEvent::UserPromptSubmit, None, json!({ "prompt": text }))
            .await;
        let notices = notice_events(&outcome);
        let verdict = match outcome.block.or(outcome.stop) {
            Some(reason) => PromptVerdict::Refuse { reason },
            None => PromptVerdict::Send {
                context: outcome.context,
            },
        };
        (verdict, notices)
    }

    /// Stop: the turn is about to end. `Some(reason)` when a hook sends the model back
    /// to work; `active` says a Stop hook already did so in this turn.
    pub(crate) async fn on_stop(&self, active: bool) -> (Option<String>, Vec<Event>) {
        if !self.hooks.any(HookEvent::Stop, None) {
            return (None, Vec::new());
        }
        let outcome = self
            .hooks
            .run(HookEvent::Stop, None, json!({ "stop_hook_active": active }))
            .await;
        let notices = notice_events(&outcome);
        // `continue: false` means stop, whatever else was said.
        let go_on = outcome.block.filter(|_| outcome.stop.is_none());
        (go_on, notices)
    }

    /// SessionStart: what the hooks print for the model's context.
    pub(crate) async fn on_session_start(&self, resumed: bool) -> (Vec<String>, Vec<Event>) {
        if !self.hooks.any(HookEvent::SessionStart, None) {
            return (Vec::new(), Vec::new());
        }
        let source = if resumed { "resume" } else { "startup" };
        let outcome = self
            .hooks
            .run(HookEvent::SessionStart, None, json!({ "source": source }))
            .await;
        let notices = notice_events(&outcome);
        (outcome.context, notices)
    }

    /// SessionEnd: told, nothing asked.
    pub(crate) async fn on_session_end(&self) -> Vec<Event> {
        if !self.hooks.any(HookEvent::SessionEnd, None) {
            return Vec::new();
        }
        let outcome = self
            .hooks
            .run(HookEvent::SessionEnd, None, json!({ "reason": "other" }))
            .await;
        notice_events(&outcome)
    }

    /// Notification: duet is calling the user (an approval waits). Runs on its own, so
    /// the approval is shown at once.
    pub(crate) fn notify(self: &Arc<Self>, message: String) {
        if !self.hooks.any(HookEvent::Notification, None) {
            return;
        }
        let hooks = Arc::clone(self);
        tokio::spawn(async move {
            let input = json!({
                "message": message,
                "notification_type": "permission_prompt",
            });
            let outcome = hooks.hooks.run(HookEvent::Notification, None, input).await;
            for notice in outcome.notices {
                tracing::info!(hook = %notice.hook, text = %notice.text, "notification hook");
            }
        });
    }

    /// The stop a tool's hook asked for, once.
    pub(crate) fn take_halt(&self) -> Option<String> {
        self.halt
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    fn note_halt(&self, outcome: &Outcome) {
        if let Some(reason) = &outcome.stop {
            self.halt
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get_or_insert_with(|| reason.clone());
        }
    }

    fn tool_fields(&self, tool: &str, args: &Value, call_id: &str) -> Value {
        json!({
            "tool_name": hooks::claude_name(tool).unwrap_or_else(|| tool.to_string()),
            "duet_tool_name": tool,
            "tool_input": hooks::tool_input(args, &self.workspace),
            "tool_use_id": call_id,
        })
    }
}

/// The events that tell the user what the hooks said.
pub(crate) fn notice_events(outcome: &Outcome) -> Vec<Event> {
    outcome
        .notices
        .iter()
        .map(|notice| Event::HookNotice {
            hook_event: notice.event.name().to_string(),
            hook: notice.hook.clone(),
            text: notice.text.clone(),
            warning: notice.warning,
        })
        .collect()
}
