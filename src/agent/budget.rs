//! Budgets: what one task has spent, and whether the next model call may be sent.
//!
//! Owns: the per-task meter (steps, wall time, tokens, dollars) and the check made
//! **before** each model call. Does not own: the limits (`config::Budget`) or prices
//! (`config::ModelInfo`).
//! Invariant: a call that would pass a limit is never sent. What a call will cost is
//! unknown until it returns, so the check charges the next call at least the prompt of
//! the previous one (the conversation only grows); the answer's own tokens can still
//! carry a task a little past a token or cost limit, never a step limit.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::config::{Budget, ModelInfo};
use crate::provider::Usage;

use super::protocol::{BudgetLimit, BudgetReport};

/// What the current task has spent so far.
#[derive(Debug)]
pub(crate) struct TaskMeter {
    started: Instant,
    steps: u32,
    usage: Usage,
    /// The prompt of the latest call: the least the next call will send again.
    last_prompt: Usage,
    tools_run: u32,
    files_changed: Vec<String>,
}

/// A limit the next call would pass.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Exhausted {
    pub(crate) limit: BudgetLimit,
    /// "30 of 30 steps", "$0.52 spent of $0.50", ...
    pub(crate) detail: String,
}

impl TaskMeter {
    pub(crate) fn start(now: Instant) -> Self {
        Self {
            started: now,
            steps: 0,
            usage: Usage::default(),
            last_prompt: Usage::default(),
            tools_run: 0,
            files_changed: Vec::new(),
        }
    }

    pub(crate) fn count_step(&mut self) {
        self.steps += 1;
    }

    pub(crate) fn add_usage(&mut self, call: &Usage) {
        self.usage += *call;
        self.last_prompt = Usage {
            output_tokens: 0,
            ..*call
        };
    }

    /// A sub-loop's call: it counts against the task, but its prompt is not what the
    /// task's next call sends again.
    fn add_delegated_usage(&mut self, call: &Usage) {
        self.usage += *call;
    }

    pub(crate) fn count_tool_run(&mut self) {
        self.tools_run += 1;
    }

    pub(crate) fn note_file_changed(&mut self, path: &str) {
        if !self.files_changed.iter().any(|known| known == path) {
            self.files_changed.push(path.to_string());
        }
    }

    /// Whether another model call may be sent now.
    pub(crate) fn check(
        &self,
        budget: &Budget,
        model: &ModelInfo,
        now: Instant,
    ) -> Result<(), Exhausted> {
        if self.steps >= budget.max_steps {
            return Err(Exhausted {
                limit: BudgetLimit::Steps,
                detail: format!("{} of {} model calls made", self.steps, budget.max_steps),
            });
        }
        let elapsed = now.saturating_duration_since(self.started);
        if let Some(max_wall) = budget.max_wall
            && elapsed >= max_wall
        {
            return Err(Exhausted {
                limit: BudgetLimit::WallTime,
                detail: format!(
                    "{} of {} elapsed",
                    format_duration(elapsed),
                    format_duration(max_wall)
                ),
            });
        }
        if let Some(max_tokens) = budget.max_total_tokens {
            let spent = total_tokens(&self.usage);
            let projected = spent + total_tokens(&self.last_prompt);
            if projected > max_tokens {
                return Err(Exhausted {
                    limit: BudgetLimit::Tokens,
                    detail: format!(
                        "{spent} tokens spent of {max_tokens}; the next call would send at \
                         least {} more",
                        total_tokens(&self.last_prompt)
                    ),
                });
            }
        }
        if let (Some(max_cost), Some(prices)) = (budget.max_cost_usd, model.prices) {
            let spent = prices.cost(&self.usage);
            let next = prices.prompt_cost(&self.last_prompt);
            if spent + next > max_cost {
                return Err(Exhausted {
                    limit: BudgetLimit::Cost,
                    detail: format!(
                        "${spent:.4} spent of ${max_cost:.2}; the next call would cost at \
                         least ${next:.4}"
                    ),
                });
            }
        }
        Ok(())
    }

    /// The report that ends a task stopped by `exhausted`.
    pub(crate) fn report(
        &self,
        exhausted: Exhausted,
        model: &ModelInfo,
        now: Instant,
        last_message: Option<String>,
    ) -> BudgetReport {
        BudgetReport {
            limit: exhausted.limit,
            detail: exhausted.detail,
            steps: self.steps,
            elapsed_ms: duration_ms(now.saturating_duration_since(self.started)),
            tokens: total_tokens(&self.usage),
            cost_usd: model.prices.map(|prices| prices.cost(&self.usage)),
            tools_run: self.tools_run,
            files_changed: self.files_changed.clone(),
            last_message,
        }
    }
}

/// The current task's meter, shared with the sub-loops that spend on the task's behalf
/// (see `explore`): their model calls, tokens and tool runs count against the same
/// limits as the task's own.
#[derive(Clone, Debug)]
pub(crate) struct SharedMeter {
    inner: Arc<Mutex<TaskMeter>>,
    /// Sub-loop usage not yet added to the session's totals; kept across tasks.
    unreported: Arc<Mutex<Usage>>,
}

impl SharedMeter {
    pub(crate) fn start(now: Instant) -> Self {
        Self {
            inner: Arc::new(Mutex::new(TaskMeter::start(now))),
            unreported: Arc::default(),
        }
    }

    /// Starts a new task in place, so every holder sees the new meter.
    pub(crate) fn restart(&self, now: Instant) {
        *self.lock() = TaskMeter::start(now);
    }

    pub(crate) fn count_step(&self) {
        self.lock().count_step();
    }

    pub(crate) fn add_usage(&self, call: &Usage) {
        self.lock().add_usage(call);
    }

    /// Books a sub-loop's call on the task, and keeps it for the session's totals
    /// (see [`Self::take_unreported`]).
    pub(crate) fn add_delegated_usage(&self, call: &Usage) {
        self.lock().add_delegated_usage(call);
        *lock(&self.unreported) += *call;
    }

    /// The sub-loop usage booked since the last call, for the session's totals.
    pub(crate) fn take_unreported(&self) -> Usage {
        std::mem::take(&mut *lock(&self.unreported))
    }

    pub(crate) fn count_tool_run(&self) {
        self.lock().count_tool_run();
    }

    pub(crate) fn note_file_changed(&self, path: &str) {
        self.lock().note_file_changed(path);
    }

    pub(crate) fn check(
        &self,
        budget: &Budget,
        model: &ModelInfo,
        now: Instant,
    ) -> Result<(), Exhausted> {
        self.lock().check(budget, model, now)
    }

    pub(crate) fn report(
        &self,
        exhausted: Exhausted,
        model: &ModelInfo,
        now: Instant,
        last_message: Option<String>,
    ) -> BudgetReport {
        self.lock().report(exhausted, model, now, last_message)
    }

    /// The model calls the step limit still allows.
    pub(crate) fn steps_left(&self, budget: &Budget) -> u32 {
        budget.max_steps.saturating_sub(self.lock().steps)
    }

    fn lock(&self) -> MutexGuard<'_, TaskMeter> {
        lock(&self.inner)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // The meter holds plain counters: a panic mid-update leaves nothing half-done that
    // matters more than stopping the task would.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn total_tokens(usage: &Usage) -> u64 {
    usage.input_tokens + usage.output_tokens + usage.cache_read_tokens + usage.cache_write_tokens
}

fn duration_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn format_duration(duration: Duration) -> String {
    let secs = duration.as_secs();
    if secs >= 60 {
        format!("{}m{:02}s", secs / 60, secs % 60)
    } else {
        format!("{secs}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Prices;

    fn usage(input: u64, output: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        }
    }

    fn unlimited() -> Budget {
        Budget {
            max_steps: u32::MAX,
            max_wall: None,
            max_total_tokens: None,
            max_cost_usd: None,
        }
    }

    const PRICED: ModelInfo = ModelInfo {
        context_window: Some(100_000),
        prices: Some(Prices {
            input: 1.0,
            output: 10.0,
            cache_read: 0.1,
            cache_write: 1.25,
        }),
        takes_images: None,
    };

    #[test]
    fn the_step_limit_stops_exactly_at_the_limit() {
        let now = Instant::now();
        let budget = Budget {
            max_steps: 2,
            ..unlimited()
        };
        let mut meter = TaskMeter::start(now);
        for _ in 0..2 {
            assert_eq!(meter.check(&budget, &PRICED, now), Ok(()));
            meter.count_step();
        }
        let exhausted = meter.check(&budget, &PRICED, now).unwrap_err();
        assert_eq!(exhausted.limit, BudgetLimit::Steps);
        assert_eq!(exhausted.detail, "2 of 2 model calls made");
    }

    #[test]
    fn wall_time_counts_from_the_start_of_the_task() {
        let start = Instant::now();
        let budget = Budget {
            max_wall: Some(Duration::from_secs(90)),
            ..unlimited()
        };
        let meter = TaskMeter::start(start);
        assert_eq!(
            meter.check(&budget, &PRICED, start + Duration::from_secs(89)),
            Ok(())
        );
        let exhausted = meter
            .check(&budget, &PRICED, start + Duration::from_secs(90))
            .unwrap_err();
        assert_eq!(exhausted.limit, BudgetLimit::WallTime);
        assert_eq!(exhausted.detail, "1m30s of 1m30s elapsed");
    }

    #[test]
    fn a_call_whose_prompt_alone_would_pass_the_token_limit_is_not_sent() {
        let now = Instant::now();
        let budget = Budget {
            max_total_tokens: Some(2_500),
            ..unlimited()
        };
        let mut meter = TaskMeter::start(now);
        meter.add_usage(&usage(1_000, 100));
        // 1100 spent + at least 1000 again = 2100: fits.
        assert_eq!(meter.check(&budget, &PRICED, now), Ok(()));
        meter.add_usage(&usage(1_200, 100));
        // 2400 spent + 1200 = 3600: would pass 2500.
        let exhausted = meter.check(&budget, &PRICED, now).unwrap_err();
        assert_eq!(exhausted.limit, BudgetLimit::Tokens);
    }

    #[test]
    fn the_cost_limit_charges_the_next_call_its_prompt() {
        let now = Instant::now();
        let budget = Budget {
            max_cost_usd: Some(0.03),
            ..unlimited()
        };
        let mut meter = TaskMeter::start(now);
        // $0.01 input + $0.001 output.
        meter.add_usage(&usage(10_000, 100));
        assert_eq!(meter.check(&budget, &PRICED, now), Ok(()));
        meter.add_usage(&usage(10_000, 100));
        // $0.022 spent + $0.01 for the next prompt > $0.03.
        let exhausted = meter.check(&budget, &PRICED, now).unwrap_err();
        assert_eq!(exhausted.limit, BudgetLimit::Cost);
        assert!(exhausted.detail.starts_with("$0.0220 spent of $0.03"));
    }

    #[test]
    fn an_unpriced_model_is_never_stopped_by_cost() {
        let now = Instant::now();
        let budget = Budget {
            max_cost_usd: Some(0.0),
            ..unlimited()
        };
        let mut meter = TaskMeter::start(now);
        meter.add_usage(&usage(1_000_000, 1_000_000));
        assert_eq!(meter.check(&budget, &ModelInfo::default(), now), Ok(()));
    }

    #[test]
    fn a_shared_meter_sums_every_holder_and_restarts_for_all() {
        let now = Instant::now();
        let budget = Budget {
            max_steps: 3,
            ..unlimited()
        };
        let meter = SharedMeter::start(now);
        let sub_loop = meter.clone();
        meter.count_step();
        sub_loop.count_step();
        sub_loop.add_usage(&usage(100, 10));
        assert_eq!(meter.steps_left(&budget), 1);
        meter.count_step();
        let exhausted = meter.check(&budget, &PRICED, now).unwrap_err();
        assert_eq!(exhausted.limit, BudgetLimit::Steps);
        assert_eq!(meter.report(exhausted, &PRICED, now, None).tokens, 110);
        meter.restart(now);
        assert_eq!(sub_loop.steps_left(&budget), 3);
    }

    #[test]
    fn delegated_usage_counts_but_does_not_set_the_next_prompt() {
        let now = Instant::now();
        let budget = Budget {
            max_total_tokens: Some(2_000),
            ..unlimited()
        };
        let meter = SharedMeter::start(now);
        meter.add_usage(&usage(500, 0));
        // A large sub-loop prompt: spent, but not what the task sends next.
        meter.add_delegated_usage(&usage(1_200, 0));
        // 1700 spent + the task's own 500 again = 2200.
        assert_eq!(
            meter.check(&budget, &PRICED, now).unwrap_err().limit,
            BudgetLimit::Tokens
        );
        meter.restart(now);
        assert_eq!(meter.take_unreported(), usage(1_200, 0));
        assert_eq!(meter.take_unreported(), Usage::default());
    }

    #[test]
    fn the_report_says_what_was_spent_and_done() {
        let now = Instant::now();
        let mut meter = TaskMeter::start(now);
        meter.count_step();
        meter.add_usage(&usage(1_000, 100));
        meter.count_tool_run();
        meter.note_file_changed("src/a.rs");
        meter.note_file_changed("src/a.rs");
        let exhausted = Exhausted {
            limit: BudgetLimit::Steps,
            detail: "1 of 1 model calls made".into(),
        };
        let report = meter.report(
            exhausted,
            &PRICED,
            now + Duration::from_millis(1500),
            Some("Half way.".into()),
        );
        assert_eq!(report.steps, 1);
        assert_eq!(report.elapsed_ms, 1500);
        assert_eq!(report.tokens, 1_100);
        assert_eq!(report.tools_run, 1);
        assert_eq!(report.files_changed, vec!["src/a.rs".to_string()]);
        assert!((report.cost_usd.unwrap() - 0.002).abs() < 1e-9);
        assert_eq!(report.last_message.as_deref(), Some("Half way."));
    }
}
