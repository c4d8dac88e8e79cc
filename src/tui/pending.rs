//! Messages the user wrote while the agent was busy, until the model has them.
//!
//! A steering message goes to the agent at once and waits there for the next step; a
//! queued one waits here until the turn ends. Both stay visible — and can be taken
//! back — until delivered. Pure bookkeeping, tested alone.

pub use super::composer::PendingKind;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingMessage {
    pub text: String,
    pub kind: PendingKind,
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
    /// It is already with the agent: ask it to withdraw this text.
    AskAgent(String),
    Nothing,
}

impl Pending {
    pub fn messages(&self) -> &[PendingMessage] {
        &self.messages
    }

    pub fn push(&mut self, text: String, kind: PendingKind) {
        self.messages.push(PendingMessage { text, kind });
    }

    /// The agent delivered `text` to the model: the first steer with that text is done.
    pub fn delivered(&mut self, text: &str) -> bool {
        self.remove_first(|m| m.kind == PendingKind::Steer && m.text == text)
    }

    /// The agent confirmed it withdrew `text`.
    pub fn withdrawn(&mut self, text: &str) -> bool {
        self.remove_first(|m| m.kind == PendingKind::Steer && m.text == text)
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
                text,
            }) => Withdrawal::AskAgent(text.clone()),
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
    fn a_steer_stays_pending_until_delivered_exactly_once() {
        let mut pending = Pending::default();
        pending.push("also b".into(), PendingKind::Steer);
        pending.push("also b".into(), PendingKind::Steer);
        assert!(pending.delivered("also b"));
        assert_eq!(
            pending.messages().len(),
            1,
            "one delivery removes one message"
        );
        assert!(pending.delivered("also b"));
        assert!(!pending.delivered("also b"));
    }

    #[test]
    fn queued_messages_leave_in_order_when_the_turn_ends() {
        let mut pending = Pending::default();
        pending.push("first".into(), PendingKind::Queued);
        pending.push("steer".into(), PendingKind::Steer);
        pending.push("second".into(), PendingKind::Queued);
        assert_eq!(pending.next_queued().as_deref(), Some("first"));
        assert_eq!(pending.next_queued().as_deref(), Some("second"));
        assert_eq!(pending.next_queued(), None);
        assert_eq!(pending.messages().len(), 1);
    }

    #[test]
    fn withdrawing_a_queued_message_is_local_and_a_steer_asks_the_agent() {
        let mut pending = Pending::default();
        pending.push("steer".into(), PendingKind::Steer);
        pending.push("later".into(), PendingKind::Queued);
        assert_eq!(pending.withdraw_last(), Withdrawal::Removed("later".into()));
        assert_eq!(
            pending.withdraw_last(),
            Withdrawal::AskAgent("steer".into())
        );
        assert_eq!(pending.messages().len(), 1, "kept until the agent confirms");
        assert!(pending.withdrawn("steer"));
        assert_eq!(pending.withdraw_last(), Withdrawal::Nothing);
    }
}
