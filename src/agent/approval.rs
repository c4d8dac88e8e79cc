//! The agent's side of the policy hook: reports each proposed edit as an event, then
//! lets the approval mode decide. A later issue adds asking the user over the command
//! channel here, without tools noticing.

use crate::diff;
use crate::policy::{Action, ApprovalRequest, Approver, Decision, ModeApprover};

use super::events::EventSink;
use super::protocol::Event;

pub(crate) struct ReportingApprover {
    pub(crate) policy: ModeApprover,
    pub(crate) events: EventSink,
}

#[async_trait::async_trait]
impl Approver for ReportingApprover {
    async fn decide(&self, request: ApprovalRequest) -> Decision {
        match &request.action {
            Action::WriteFile {
                display,
                before,
                after,
                ..
            } => {
                self.events
                    .emit(Event::EditProposed {
                        call_id: request.call_id.clone(),
                        path: display.clone(),
                        diff: diff::unified(display, before.as_deref(), after),
                    })
                    .await;
            }
            Action::RunCommand { .. } => {}
        }
        self.policy.decide(request).await
    }
}
