//! How many committed-but-hidden lines of streamed text to reveal on a tick.
//!
//! Owns: the pacing decision only (a pure function of queue length, pace and the
//! clock passed in). Does not own: the queue itself, markdown, or rendering.
//! Invariant: one decision never reveals more than [`MAX_BATCH`] lines, and a queue
//! is never left waiting without a deadline.
//!
//! Smooth pace shows one line per [`SMOOTH_INTERVAL`], so ordinary streaming reads as
//! typing rather than jumps. When the backlog reaches [`ENTER_CATCH_UP`] lines the
//! policy switches to catch-up: every [`CATCH_UP_INTERVAL`] it reveals a share of the
//! backlog (at most [`MAX_BATCH`], so a burst of thousands of lines is drained over a
//! few frames instead of stalling one). It returns to smooth only once the backlog is
//! down to [`EXIT_CATCH_UP`] lines; the gap between the two thresholds keeps the pace
//! from flapping when the backlog hovers around one of them.

use std::time::{Duration, Instant};

/// One line per this interval in smooth pace (about 33 lines a second).
pub const SMOOTH_INTERVAL: Duration = Duration::from_millis(30);
/// One batch per frame in catch-up pace.
pub const CATCH_UP_INTERVAL: Duration = Duration::from_millis(16);
/// A backlog of this many lines switches to catch-up.
pub const ENTER_CATCH_UP: usize = 12;
/// Catch-up ends once the backlog is down to this many lines.
pub const EXIT_CATCH_UP: usize = 3;
/// A catch-up batch reveals this share of the backlog (1/4), so a small backlog still
/// drains over a few frames rather than in one jump.
const CATCH_UP_SHARE: usize = 4;
/// The most lines one decision reveals: bounds the markdown and wrapping work a frame
/// can be asked to do.
pub const MAX_BATCH: usize = 200;

/// How fast the queue is being revealed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    Smooth,
    CatchUp,
}

/// The pacing state: the current pace and when the next reveal is allowed.
#[derive(Clone, Debug)]
pub struct ChunkPolicy {
    pace: Pace,
    /// No reveal before this instant; `None` until the first reveal.
    next_at: Option<Instant>,
}

impl Default for ChunkPolicy {
    fn default() -> Self {
        Self::new()
    }
}

impl ChunkPolicy {
    pub fn new() -> Self {
        Self {
            pace: Pace::Smooth,
            next_at: None,
        }
    }

    #[cfg(test)]
    pub fn pace(&self) -> Pace {
        self.pace
    }

    /// How many of the `queued` lines to reveal at `now` (0 when it is not yet time).
    pub fn decide(&mut self, queued: usize, now: Instant) -> usize {
        self.pace = next_pace(self.pace, queued);
        if queued == 0 || self.next_at.is_some_and(|at| now < at) {
            return 0;
        }
        let reveal = match self.pace {
            Pace::Smooth => 1,
            Pace::CatchUp => queued.div_ceil(CATCH_UP_SHARE).clamp(2, MAX_BATCH),
        }
        .min(queued);
        self.next_at = Some(now + self.interval());
        reveal
    }

    /// When `decide` would next reveal something from a queue of `queued` lines.
    pub fn next_deadline(&self, queued: usize, now: Instant) -> Option<Instant> {
        if queued == 0 {
            return None;
        }
        Some(self.next_at.map_or(now, |at| at.max(now)))
    }

    /// Everything is revealed at once (the stream ended): returns `queued` and resets
    /// the pace for the next stream.
    pub fn drain(&mut self, queued: usize) -> usize {
        *self = Self::new();
        queued
    }

    fn interval(&self) -> Duration {
        match self.pace {
            Pace::Smooth => SMOOTH_INTERVAL,
            Pace::CatchUp => CATCH_UP_INTERVAL,
        }
    }
}

/// The pace for a backlog of `queued` lines, with hysteresis between the thresholds.
fn next_pace(current: Pace, queued: usize) -> Pace {
    match current {
        Pace::Smooth if queued >= ENTER_CATCH_UP => Pace::CatchUp,
        Pace::CatchUp if queued <= EXIT_CATCH_UP => Pace::Smooth,
        pace => pace,
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn ms(base: Instant, millis: u64) -> Instant {
        base + Duration::from_millis(millis)
    }

    #[test]
    fn smooth_pace_reveals_one_line_per_interval() {
        let start = Instant::now();
        let mut policy = ChunkPolicy::new();
        assert_eq!(policy.decide(3, start), 1, "the first line shows at once");
        assert_eq!(policy.decide(2, ms(start, 10)), 0, "too early for the next");
        assert_eq!(policy.next_deadline(2, ms(start, 10)), Some(ms(start, 30)));
        assert_eq!(policy.decide(2, ms(start, 30)), 1);
        assert_eq!(policy.decide(1, ms(start, 60)), 1);
        assert_eq!(policy.pace(), Pace::Smooth);
    }

    #[test]
    fn a_backlog_switches_to_catch_up_and_drains_in_bounded_batches() {
        let start = Instant::now();
        let mut policy = ChunkPolicy::new();
        let mut queued = 5_000;
        let mut now = start;
        let mut frames: u32 = 0;
        while queued > EXIT_CATCH_UP {
            let revealed = policy.decide(queued, now);
            assert!(revealed <= MAX_BATCH, "batch of {revealed} lines");
            assert!(revealed > 0, "a due decision with a backlog reveals lines");
            assert_eq!(policy.pace(), Pace::CatchUp);
            queued -= revealed;
            now = policy.next_deadline(queued, now).unwrap();
            frames += 1;
        }
        assert!(
            frames as usize >= 5_000 / MAX_BATCH,
            "drained in {frames} frames"
        );
        assert!(
            frames < 60,
            "a burst drains within a second: {frames} frames"
        );
        assert_eq!(now - start, CATCH_UP_INTERVAL * frames);
    }

    #[test]
    fn pace_has_hysteresis() {
        let start = Instant::now();
        let mut policy = ChunkPolicy::new();
        policy.decide(ENTER_CATCH_UP - 1, start);
        assert_eq!(policy.pace(), Pace::Smooth, "below the entry threshold");
        policy.decide(ENTER_CATCH_UP, ms(start, 30));
        assert_eq!(policy.pace(), Pace::CatchUp);
        // Between the thresholds the pace stays what it was, in both directions.
        policy.decide(EXIT_CATCH_UP + 1, ms(start, 60));
        assert_eq!(policy.pace(), Pace::CatchUp);
        policy.decide(EXIT_CATCH_UP, ms(start, 90));
        assert_eq!(policy.pace(), Pace::Smooth);
        policy.decide(EXIT_CATCH_UP + 1, ms(start, 120));
        assert_eq!(policy.pace(), Pace::Smooth);
    }

    #[test]
    fn catch_up_batches_are_a_share_of_the_backlog() {
        let start = Instant::now();
        let mut policy = ChunkPolicy::new();
        assert_eq!(policy.decide(40, start), 10);
        assert_eq!(policy.decide(30, ms(start, 16)), 8);
        assert_eq!(policy.decide(4_000, ms(start, 32)), MAX_BATCH);
    }

    #[test]
    fn drain_reveals_everything_and_resets() {
        let start = Instant::now();
        let mut policy = ChunkPolicy::new();
        policy.decide(100, start);
        assert_eq!(policy.pace(), Pace::CatchUp);
        assert_eq!(policy.drain(97), 97);
        assert_eq!(policy.pace(), Pace::Smooth);
        assert_eq!(policy.decide(1, start), 1, "no leftover deadline");
    }

    #[test]
    fn an_empty_queue_has_no_deadline() {
        let start = Instant::now();
        let mut policy = ChunkPolicy::new();
        assert_eq!(policy.next_deadline(0, start), None);
        policy.decide(1, start);
        assert_eq!(policy.next_deadline(0, ms(start, 5)), None);
        assert_eq!(policy.next_deadline(1, ms(start, 50)), Some(ms(start, 50)));
    }

    #[test]
    fn decisions_depend_only_on_queue_pace_and_clock() {
        let start = Instant::now();
        let run = || {
            let mut policy = ChunkPolicy::new();
            [40, 31, 3, 2, 20, 0, 1]
                .iter()
                .enumerate()
                .map(|(i, &queued)| policy.decide(queued, ms(start, 20 * i as u64)))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(), run());
    }
}
