//! When to draw, and when to take the agent's output.
//!
//! Nothing draws directly: whatever changes the screen calls [`FrameScheduler::request`],
//! and the event loop draws when [`FrameScheduler::due`] says so. Fifty requests within
//! one frame interval make one draw, draws are at most [`MAX_FPS`] per second, and with
//! nothing requested the loop sleeps (no timer ticks while idle). Pure bookkeeping on
//! explicit instants, so it is tested without a terminal or a clock. It also counts the
//! frames drawn, which the event loop logs for the benchmarks (`bench/run`).
//!
//! The agent's output is taken in batches, at most [`OUTPUT_FPS`] times a second: a
//! model streams a hundred small deltas a second, and waking, handling and drawing for
//! each costs far more than the eye gains (text typing out at 30 frames a second looks
//! the same). So once it has taken them, the loop leaves the agent's events waiting
//! until [`FrameScheduler::output_due`]; keys and resizes still draw at up to
//! [`MAX_FPS`]. The interval counts from the last take, not the last frame: events that
//! changed nothing on screen draw no frame, and must not open the gate for every
//! event after them.
//! The gate applies only while output is flowing (some was taken in the last
//! [`OUTPUT_FLOWING`]): when none is (a spinner turning while a tool runs), the next
//! event is taken as it comes, and the loop does not wake once more after every frame
//! just to find the channel empty.

use std::time::{Duration, Instant};

/// The most frames per second ever drawn.
pub const MAX_FPS: u32 = 120;

/// How often, at most, the agent's output is taken and drawn.
pub const OUTPUT_FPS: u32 = 30;

/// Output taken this recently means more is on its way: later events wait for the
/// output interval. Longer than the gaps between a model's deltas.
pub const OUTPUT_FLOWING: Duration = Duration::from_millis(250);

#[derive(Debug)]
pub struct FrameScheduler {
    interval: Duration,
    output_interval: Duration,
    last_draw: Option<Instant>,
    requested: bool,
    drawn: u64,
    /// When the agent's events were last taken.
    last_output: Option<Instant>,
}

impl Default for FrameScheduler {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(1) / MAX_FPS,
            output_interval: Duration::from_secs(1) / OUTPUT_FPS,
            last_draw: None,
            requested: false,
            drawn: 0,
            last_output: None,
        }
    }
}

impl FrameScheduler {
    /// Something on screen changed; a frame should follow.
    pub fn request(&mut self) {
        self.requested = true;
    }

    /// When the requested frame may be drawn; `None` when nothing is requested.
    pub fn deadline(&self) -> Option<Instant> {
        if !self.requested {
            return None;
        }
        Some(match self.last_draw {
            Some(last) => last + self.interval,
            // Never drawn: as soon as possible. `Instant` has no zero, so "now" is
            // represented by the earliest instant the caller can compare with.
            None => Instant::now(),
        })
    }

    /// Whether a frame should be drawn at `now`.
    pub fn due(&self, now: Instant) -> bool {
        self.requested
            && self
                .last_draw
                .is_none_or(|last| now >= last + self.interval)
    }

    /// Whether the agent's waiting events should be taken at `now`: at once when no
    /// output is flowing, else once an output interval has passed since the last take.
    pub fn output_due(&self, now: Instant) -> bool {
        self.output_deadline(now).is_none()
    }

    /// When the agent's events may be taken next; `None` when they may be now.
    pub fn output_deadline(&self, now: Instant) -> Option<Instant> {
        self.last_output
            .filter(|taken| now.saturating_duration_since(*taken) < OUTPUT_FLOWING)
            .map(|taken| taken + self.output_interval)
            .filter(|deadline| *deadline > now)
    }

    /// When an animation due at `wanted` (the next streamed line revealed, a spinner
    /// turning) should wake the loop: while output is flowing, no sooner than the next
    /// output frame, so that streaming wakes the loop once a frame for both instead of
    /// on two interleaved clocks.
    pub fn animation_deadline(&self, wanted: Instant, now: Instant) -> Instant {
        self.output_deadline(now)
            .map_or(wanted, |output| wanted.max(output))
    }

    /// Records that the agent's events were taken at `now`.
    pub fn output_taken(&mut self, now: Instant) {
        self.last_output = Some(now);
    }

    /// Records that a frame was drawn at `now`.
    pub fn drawn(&mut self, now: Instant) {
        self.last_draw = Some(now);
        self.requested = false;
        self.drawn += 1;
    }

    /// How many frames were drawn so far.
    pub fn count(&self) -> u64 {
        self.drawn
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_requested_means_no_deadline_and_no_draw() {
        let frames = FrameScheduler::default();
        assert_eq!(frames.deadline(), None);
        assert!(!frames.due(Instant::now()));
    }

    #[test]
    fn many_requests_in_one_interval_make_one_frame() {
        let mut frames = FrameScheduler::default();
        let start = Instant::now();
        frames.request();
        assert!(frames.due(start));
        frames.drawn(start);
        for _ in 0..50 {
            frames.request();
        }
        let soon = start + Duration::from_millis(2);
        assert!(!frames.due(soon), "too soon after the last frame");
        let next = frames.deadline().unwrap();
        assert_eq!(next, start + Duration::from_secs(1) / MAX_FPS);
        assert!(frames.due(next));
        frames.drawn(next);
        assert!(
            !frames.due(next + Duration::from_secs(1)),
            "nothing new requested"
        );
    }

    #[test]
    fn output_is_taken_at_most_once_an_output_interval() {
        let mut frames = FrameScheduler::default();
        let start = Instant::now();
        assert!(
            frames.output_due(start),
            "nothing taken yet: take output now"
        );
        assert_eq!(frames.output_deadline(start), None);
        frames.output_taken(start);
        frames.request();
        frames.drawn(start);
        let output_interval = Duration::from_secs(1) / OUTPUT_FPS;
        let soon = start + Duration::from_secs(1) / MAX_FPS;
        assert!(!frames.output_due(soon), "a key may draw now, output waits");
        assert_eq!(frames.output_deadline(soon), Some(start + output_interval));
        assert!(frames.output_due(start + output_interval));
        assert_eq!(frames.output_deadline(start + output_interval), None);
    }

    #[test]
    fn output_waits_for_its_interval_only_while_it_is_flowing() {
        let mut frames = FrameScheduler::default();
        let start = Instant::now();
        let output_interval = Duration::from_secs(1) / OUTPUT_FPS;
        // A spinner frame with no output for a while: no output deadline to wake for.
        frames.request();
        frames.drawn(start);
        let soon = start + Duration::from_millis(1);
        assert!(frames.output_due(soon));
        assert_eq!(frames.output_deadline(soon), None);
        // Output is taken: the next waits for the interval, whether or not a frame
        // was drawn for it (text queued behind hidden lines draws none).
        frames.output_taken(soon);
        assert_eq!(
            frames.output_deadline(soon + Duration::from_millis(20)),
            Some(soon + output_interval)
        );
        // Once nothing has come for a while, the gate is open again.
        let quiet = soon + OUTPUT_FLOWING;
        assert_eq!(frames.output_deadline(quiet), None);
        assert!(frames.output_due(quiet));
    }

    #[test]
    fn animations_wait_for_the_output_frame_while_output_flows() {
        let mut frames = FrameScheduler::default();
        let start = Instant::now();
        let output_interval = Duration::from_secs(1) / OUTPUT_FPS;
        let spinner = start + Duration::from_millis(5);
        // Nothing flowing: an animation wakes the loop when it wants to.
        frames.request();
        frames.drawn(start);
        assert_eq!(frames.animation_deadline(spinner, start), spinner);
        // Flowing: it waits for the output frame, and a later wish is kept.
        frames.output_taken(start);
        assert_eq!(
            frames.animation_deadline(spinner, start),
            start + output_interval
        );
        let late = start + output_interval * 2;
        assert_eq!(frames.animation_deadline(late, start), late);
    }

    #[test]
    fn each_drawn_frame_is_counted_once() {
        let mut frames = FrameScheduler::default();
        assert_eq!(frames.count(), 0);
        let start = Instant::now();
        frames.request();
        frames.drawn(start);
        // Requests alone draw nothing.
        frames.request();
        frames.request();
        assert_eq!(frames.count(), 1);
        frames.drawn(start + Duration::from_secs(1));
        assert_eq!(frames.count(), 2);
    }
}
