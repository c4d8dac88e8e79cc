//! Which tool calls of one model response may start now.
//!
//! Calls arrive in the order the model streams them. A [`Concurrency::Shared`] call may
//! start as soon as no exclusive call before it is unfinished; an
//! [`Concurrency::Exclusive`] call starts only when every call before it has finished.
//! So reads run in parallel with each other, writes run alone and in order, and a read
//! that follows a write sees the write. Pure bookkeeping, no I/O: tested on its own.

use crate::tools::Concurrency;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Waiting,
    Running,
    Done,
}

#[derive(Debug, Default)]
pub(crate) struct Schedule {
    slots: Vec<(Concurrency, State)>,
}

impl Schedule {
    /// Adds a call that must run; returns its index.
    pub(crate) fn add(&mut self, concurrency: Concurrency) -> usize {
        self.slots.push((concurrency, State::Waiting));
        self.slots.len() - 1
    }

    /// Adds a call that is already answered (it failed validation and never runs).
    pub(crate) fn add_done(&mut self) -> usize {
        self.slots.push((Concurrency::Shared, State::Done));
        self.slots.len() - 1
    }

    /// Marks every call that may start now as running and returns their indices.
    pub(crate) fn start_ready(&mut self) -> Vec<usize> {
        let mut ready = Vec::new();
        let mut exclusive_unfinished_before = false;
        let mut all_done_before = true;
        for (index, (concurrency, state)) in self.slots.iter_mut().enumerate() {
            let may_start = match concurrency {
                Concurrency::Shared => !exclusive_unfinished_before,
                Concurrency::Exclusive => all_done_before,
            };
            if *state == State::Waiting && may_start {
                *state = State::Running;
                ready.push(index);
            }
            if *state != State::Done {
                all_done_before = false;
                if *concurrency == Concurrency::Exclusive {
                    exclusive_unfinished_before = true;
                }
            }
        }
        ready
    }

    pub(crate) fn finish(&mut self, index: usize) {
        if let Some(slot) = self.slots.get_mut(index) {
            slot.1 = State::Done;
        }
    }

    pub(crate) fn is_running(&self, index: usize) -> bool {
        matches!(self.slots.get(index), Some((_, State::Running)))
    }

    pub(crate) fn all_done(&self) -> bool {
        self.slots.iter().all(|(_, state)| *state == State::Done)
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use Concurrency::{Exclusive, Shared};

    fn schedule(kinds: &[Concurrency]) -> Schedule {
        let mut schedule = Schedule::default();
        for &kind in kinds {
            schedule.add(kind);
        }
        schedule
    }

    #[test]
    fn shared_calls_all_start_together() {
        let mut s = schedule(&[Shared, Shared, Shared]);
        assert_eq!(s.start_ready(), [0, 1, 2]);
        assert_eq!(s.start_ready(), Vec::<usize>::new());
    }

    #[test]
    fn exclusive_calls_run_one_at_a_time_in_order() {
        let mut s = schedule(&[Exclusive, Exclusive]);
        assert_eq!(s.start_ready(), [0]);
        assert_eq!(s.start_ready(), Vec::<usize>::new());
        s.finish(0);
        assert_eq!(s.start_ready(), [1]);
        s.finish(1);
        assert!(s.all_done());
    }

    #[test]
    fn a_write_waits_for_earlier_reads_and_later_reads_wait_for_it() {
        let mut s = schedule(&[Shared, Exclusive, Shared]);
        assert_eq!(s.start_ready(), [0]);
        s.finish(0);
        assert_eq!(s.start_ready(), [1]);
        assert!(!s.is_running(2));
        s.finish(1);
        assert_eq!(s.start_ready(), [2]);
    }

    #[test]
    fn calls_added_while_others_run_start_when_allowed() {
        let mut s = Schedule::default();
        s.add(Shared);
        assert_eq!(s.start_ready(), [0]);
        s.add(Shared);
        assert_eq!(
            s.start_ready(),
            [1],
            "a second read starts while the first runs"
        );
        s.add(Exclusive);
        assert_eq!(s.start_ready(), Vec::<usize>::new());
        s.finish(1);
        s.finish(0);
        assert_eq!(s.start_ready(), [2]);
    }

    #[test]
    fn answered_calls_never_block_or_start() {
        let mut s = Schedule::default();
        s.add_done();
        s.add(Exclusive);
        assert_eq!(s.start_ready(), [1]);
        s.finish(1);
        assert!(s.all_done());
    }
}
