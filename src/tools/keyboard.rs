//! The user's keys on their way to a running command: a front end sends them by call
//! id, and the tool running that call's command receives them.
//!
//! Owns: which running calls can be typed into, and routing keys to them. Does not
//! own: what keys mean to the command (the shell's terminal), or which keys a person
//! pressed (the front end).
//! Invariant: keys reach only a call that is running and attached; once its tool
//! returns, keys sent for it are dropped and [`Keyboards::send`] says so.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::mpsc;

use crate::shell::UserKeys;

/// The calls that can be typed into now. Cloned into every tool call's context; all
/// clones share one table.
#[derive(Clone, Debug, Default)]
pub struct Keyboards {
    attached: Arc<Mutex<HashMap<String, Attachment>>>,
}

/// One attachment's sending end, with a number telling it from a later one for the
/// same call id.
#[derive(Debug)]
struct Attachment {
    number: u64,
    sender: mpsc::UnboundedSender<UserKeys>,
}

static NEXT_ATTACHMENT: AtomicU64 = AtomicU64::new(1);

impl Keyboards {
    /// Makes `call_id` reachable until the returned attachment is dropped. A second
    /// attachment for the same id replaces the first.
    pub fn attach(&self, call_id: &str) -> AttachedKeyboard {
        let (sender, keys) = mpsc::unbounded_channel();
        let number = NEXT_ATTACHMENT.fetch_add(1, Ordering::Relaxed);
        self.table()
            .insert(call_id.to_string(), Attachment { number, sender });
        AttachedKeyboard {
            keys,
            number,
            call_id: call_id.to_string(),
            keyboards: self.clone(),
        }
    }

    /// Passes `keys` to the running call `call_id`; false when no such call takes keys.
    pub fn send(&self, call_id: &str, keys: UserKeys) -> bool {
        self.table()
            .get(call_id)
            .is_some_and(|attachment| attachment.sender.send(keys).is_ok())
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, Attachment>> {
        // The table holds no invariant a panicking holder could break halfway.
        self.attached.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A running call's end of the keyboard: its keys, until dropped.
#[derive(Debug)]
pub struct AttachedKeyboard {
    pub keys: mpsc::UnboundedReceiver<UserKeys>,
    number: u64,
    call_id: String,
    keyboards: Keyboards,
}

impl Drop for AttachedKeyboard {
    fn drop(&mut self) {
        let mut table = self.keyboards.table();
        // Only this attachment's own entry: a later one for the same id stays.
        if table
            .get(&self.call_id)
            .is_some_and(|attachment| attachment.number == self.number)
        {
            table.remove(&self.call_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_reach_an_attached_call_until_it_detaches() {
        let keyboards = Keyboards::default();
        assert!(!keyboards.send("call-1", UserKeys::Focus));
        let mut attached = keyboards.clone().attach("call-1");
        assert!(keyboards.send("call-1", UserKeys::Type(b"y\r".to_vec())));
        assert!(!keyboards.send("call-2", UserKeys::Focus));
        assert_eq!(
            attached.keys.try_recv().ok(),
            Some(UserKeys::Type(b"y\r".to_vec()))
        );
        drop(attached);
        assert!(!keyboards.send("call-1", UserKeys::Focus));
    }

    #[test]
    fn an_old_attachment_dropped_late_leaves_the_new_one() {
        let keyboards = Keyboards::default();
        let old = keyboards.attach("call-1");
        let mut new = keyboards.attach("call-1");
        drop(old);
        assert!(keyboards.send("call-1", UserKeys::Release));
        assert_eq!(new.keys.try_recv().ok(), Some(UserKeys::Release));
    }
}
