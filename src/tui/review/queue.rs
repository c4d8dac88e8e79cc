//! The requests waiting for a decision, in arrival order, and the commands the user
//! allowed for the rest of the session.
//!
//! Owns: order (first come, first reviewed), removal from anywhere, and the session's
//! allow list.
//! Does not own: what a review looks like or what a decision is.
//! Invariant: no two waiting requests share a `call_id`; the front is the one on screen.

use std::collections::{HashSet, VecDeque};

use super::command_panel::CommandReview;
use super::edit_panel::EditReview;

pub(super) enum Review {
    Edit(Box<EditReview>),
    Command(CommandReview),
}

pub(super) struct Pending {
    pub(super) call_id: String,
    /// Which rule asks, as the policy worded it.
    pub(super) why: String,
    pub(super) review: Review,
}

#[derive(Default)]
pub(super) struct Queue {
    waiting: VecDeque<Pending>,
    /// Exact command texts approved for the session.
    allowed: HashSet<String>,
}

impl Queue {
    /// Adds `pending` at the back; a request re-sent under a waiting `call_id` replaces
    /// the old one where it stands.
    pub(super) fn push(&mut self, pending: Pending) {
        match self.position(&pending.call_id) {
            Some(at) => self.waiting[at] = pending,
            None => self.waiting.push_back(pending),
        }
    }

    /// Takes out the request of `call_id`, with the place it had (0 = on screen).
    pub(super) fn remove(&mut self, call_id: &str) -> Option<(usize, Pending)> {
        let at = self.position(call_id)?;
        self.waiting.remove(at).map(|pending| (at, pending))
    }

    pub(super) fn get(&self, call_id: &str) -> Option<&Pending> {
        self.waiting
            .iter()
            .find(|pending| pending.call_id == call_id)
    }

    fn position(&self, call_id: &str) -> Option<usize> {
        self.waiting
            .iter()
            .position(|pending| pending.call_id == call_id)
    }

    pub(super) fn front(&self) -> Option<&Pending> {
        self.waiting.front()
    }

    pub(super) fn front_mut(&mut self) -> Option<&mut Pending> {
        self.waiting.front_mut()
    }

    pub(super) fn len(&self) -> usize {
        self.waiting.len()
    }

    pub(super) fn allow(&mut self, command: &str) {
        self.allowed.insert(command.to_string());
    }

    pub(super) fn is_allowed(&self, command: &str) -> bool {
        self.allowed.contains(command)
    }

    /// Call ids front to back, for tests.
    #[cfg(test)]
    pub(super) fn call_ids(&self) -> Vec<&str> {
        self.waiting
            .iter()
            .map(|pending| pending.call_id.as_str())
            .collect()
    }
}
