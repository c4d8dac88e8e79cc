//! Messages the user wrote while the agent was busy, until the model has them.
//!
//! A steering message goes to the agent at once and waits there for the next step; a
//! queued one waits here until the turn ends. Both stay visible — and can be taken
//! back — until delivered. Pure bookkeeping, tested alone.

pub use super::composer::PendingKind;
use crate::agent::MessageId;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingMessage {
    pub text: String,
    pub kind: PendingKind,
    /// The id it was sent to the agent under (steers); queued ones have none yet.
    pub id: Option<MessageId>,
}

#[derive(Debug, Default)]
pub struct Pending {
    messages: Vec<PendingMessage>,
}

/// What taking back the newest pending message requires.
#[derive(Debug, PartialEq, Eq)]
pub enum Withdrawal {
    /// It was only held here: removed; the text goes back to the input.
    Removed(String),
    /// It is already with the agent: ask it to withdraw the message with this id.
    AskAgent(MessageId),
    Nothing,
}

impl Pending {
    pub fn messages(&self) -> &[PendingMessage] {
        &self.messages
    }

    /// Holds a message to send when the turn ends.
    pub fn queue(&mut self, text: String) {
        self.messages.push(PendingMessage {
            text,
            kind: PendingKind::Queued,
            id: None,
        });
    }

    /// Records a steer sent to the agent as message `id`.
    pub fn steer(&mut self, id: MessageId, text: String) {
        self.messages.push(PendingMessage {
            text,
            kind: PendingKind::Steer,
            id: Some(id),
        });
    }

    /// The agent delivered message `id` to the model.
    pub fn delivered(&mut self, id: MessageId) -> bool {
        self.remove_first(|m| m.id == Some(id))
    }

    /// The agent confirmed it withdrew message `id`.
    pub fn withdrawn(&mut self, id: MessageId) -> bool {
        self.remove_first(|m| m.id == Some(id))
    }

    /// The next queued message to send now that the turn ended.
    pub fn next_queued(&mut self) -> Option<String> {
        let index = self
            .messages
            .iter()
            .position(|m| m.kind == PendingKind::Queued)?;
        Some(self.messages.remove(index).text)
    }

    /// Takes back the newest pending message.
    pub fn withdraw_last(&mut self) -> Withdrawal {
        match self.messages.last() {
            None => Withdrawal::Nothing,
            Some(PendingMessage {
                kind: PendingKind::Queued,
                ..
            }) => match self.messages.pop() {
                Some(message) => Withdrawal::Removed(message.text),
                None => Withdrawal::Nothing,
            },
            Some(PendingMessage {
                kind: PendingKind::Steer,
                id: Some(id),
                ..
            }) => Withdrawal::AskAgent(*id),
            Some(PendingMessage {
                kind: PendingKind::Steer,
                id: None,
                ..
            }) => Withdrawal::Nothing,
        }
    }

    fn remove_first(&mut self, matches: impl Fn(&PendingMessage) -> bool) -> bool {
        match self.messages.iter().position(matches) {
            Some(index) => {
                self.messages.remove(index);
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn a_steer_stays_pending_until_its_own_delivery() {
        let mut pending = Pending::default();
        pending.steer(1, "also b".into());
        pending.steer(2, "also b".into());
        assert!(pending.delivered(2));
        assert_eq!(
            pending.messages().len(),
            1,
            "one delivery removes one message"
        );
        assert_eq!(pending.messages()[0].id, Some(1), "the other one stays");
        assert!(!pending.delivered(2));
        assert!(pending.delivered(1));
    }

    #[test]
    fn queued_messages_leave_in_order_when_the_turn_ends() {
        let mut pending = Pending::default();
        pending.queue("first".into());
        pending.steer(1, "steer".into());
        pending.queue("second".into());
        assert_eq!(pending.next_queued().as_deref(), Some("first"));
        assert_eq!(pending.next_queued().as_deref(), Some("second"));
        assert_eq!(pending.next_queued(), None);
        assert_eq!(pending.messages().len(), 1);
    }

    #[test]
    fn withdrawing_a_queued_message_is_local_and_a_steer_asks_the_agent() {
        let mut pending = Pending::default();
        pending.steer(7, "steer".into());
        pending.queue("later".into());
        assert_eq!(pending.withdraw_last(), Withdrawal::Removed("later".into()));
        assert_eq!(pending.withdraw_last(), Withdrawal::AskAgent(7));
        assert_eq!(pending.messages().len(), 1, "kept until the agent confirms");
        assert!(pending.withdrawn(7));
        assert_eq!(pending.withdraw_last(), Withdrawal::Nothing);
    }
}
