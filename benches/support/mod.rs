//! What the benches share: short criterion settings, and a comparison of one duet
//! operation against a baseline measured in the same run, printed as a ratio and
//! checked against the operation's goal.
//!
//! Owns: timing both sides (through criterion, so its usual report still appears),
//! the median per-iteration time of each side's measured samples, and the summary line.
//! Does not own: what is measured (each bench file) or any assertion on time: a missed
//! goal is reported, never a failure.
//! Invariant: only the samples criterion measures count; its warm-up calls (which come
//! first, then exactly `SAMPLE_SIZE` measured calls) are left out of the median.

use std::cell::RefCell;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;

/// Measured samples per benchmark: few, so the whole suite runs in about a minute.
const SAMPLE_SIZE: usize = 20;

/// Criterion with short warm-up and measurement times; command-line options (a
/// filter, `--test`, ...) still apply.
pub fn criterion() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args()
}

/// What duet's figure should reach.
// Each bench binary compiles this module on its own and uses only some goals.
#[allow(dead_code)]
#[derive(Clone, Copy, Debug)]
pub enum Goal {
    /// The baseline takes at least this many times as long as duet.
    FasterBy(f64),
    /// duet takes at most this many times as long as the baseline.
    SlowerBy(f64),
    /// duet takes at most this long per operation.
    AtMost(Duration),
}

impl Goal {
    fn is_met(self, duet: Duration, baseline: Duration) -> bool {
        match self {
            Self::FasterBy(factor) => baseline.as_secs_f64() >= factor * duet.as_secs_f64(),
            Self::SlowerBy(factor) => duet.as_secs_f64() <= factor * baseline.as_secs_f64(),
            Self::AtMost(limit) => duet <= limit,
        }
    }

    fn describe(self) -> String {
        match self {
            Self::FasterBy(factor) => format!("≥ {factor}× faster than the baseline"),
            Self::SlowerBy(factor) => format!("≤ {factor}× the baseline's time"),
            Self::AtMost(limit) => format!("≤ {}", millis(limit)),
        }
    }
}

/// Benchmarks `duet` and `baseline` as the criterion group `what`, then prints one
/// line: both medians, their ratio and whether `goal` was met. Prints no summary when
/// a side was filtered out or criterion ran in test mode (too few samples).
pub fn compare<D, B>(
    criterion: &mut Criterion,
    what: &str,
    goal: Goal,
    mut duet: impl FnMut() -> D,
    mut baseline: impl FnMut() -> B,
) {
    let duet_times = RefCell::new(Vec::new());
    let baseline_times = RefCell::new(Vec::new());
    let mut group = criterion.benchmark_group(what);
    group.sample_size(SAMPLE_SIZE);
    group.bench_function("duet", |b| {
        b.iter_custom(|iters| time_each(iters, &duet_times, &mut duet));
    });
    group.bench_function("baseline", |b| {
        b.iter_custom(|iters| time_each(iters, &baseline_times, &mut baseline));
    });
    group.finish();
    let medians = (
        measured_median(&duet_times.borrow()),
        measured_median(&baseline_times.borrow()),
    );
    if let (Some(duet), Some(baseline)) = medians {
        println!("{}", summary(what, goal, duet, baseline));
    }
}

/// Runs `routine` `iters` times, records the mean time of one run and returns the total.
fn time_each<R>(
    iters: u64,
    times: &RefCell<Vec<Duration>>,
    routine: &mut impl FnMut() -> R,
) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        black_box(routine());
    }
    let elapsed = start.elapsed();
    let runs = u32::try_from(iters.max(1)).unwrap_or(u32::MAX);
    times.borrow_mut().push(elapsed / runs);
    elapsed
}

/// The median of the last `SAMPLE_SIZE` recorded times (the measured samples), or
/// `None` when fewer were recorded.
fn measured_median(times: &[Duration]) -> Option<Duration> {
    let first_measured = times.len().checked_sub(SAMPLE_SIZE)?;
    let mut measured = times[first_measured..].to_vec();
    measured.sort_unstable();
    measured.get(measured.len() / 2).copied()
}

fn summary(what: &str, goal: Goal, duet: Duration, baseline: Duration) -> String {
    let ratio = duet.as_secs_f64() / baseline.as_secs_f64();
    let verdict = if goal.is_met(duet, baseline) {
        "met"
    } else {
        "MISSED"
    };
    format!(
        "summary: {what}: duet {}, baseline {}, duet/baseline {ratio:.3} ({:.1}× {}); goal {}: {verdict}",
        millis(duet),
        millis(baseline),
        if ratio <= 1.0 { 1.0 / ratio } else { ratio },
        if ratio <= 1.0 { "faster" } else { "slower" },
        goal.describe(),
    )
}

fn millis(duration: Duration) -> String {
    format!("{:.3} ms", duration.as_secs_f64() * 1000.0)
}
