//! The `[budget]` table: limits on one task (one user message and everything the agent
//! does for it).
//!
//! Owns: the limits as the user writes them and their precedence (command-line flags
//! over the config file over the defaults). Does not own: measuring or enforcing them
//! (`agent/`).

use std::time::Duration;

use serde::Deserialize;

/// Model calls per task unless configured: far more than a task needs, and a stop for
/// an agent that runs away.
pub const DEFAULT_MAX_STEPS: u32 = 200;

/// Limits on one task, as the config file or the command line gives them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetSection {
    /// Model calls.
    pub max_steps: Option<u32>,
    /// Wall-clock seconds since the task started.
    pub max_wall_secs: Option<u64>,
    /// Tokens sent and received over all calls (every call re-sends the prompt).
    pub max_total_tokens: Option<u64>,
    /// US dollars, priced with the model table (`[models]`).
    pub max_cost_usd: Option<f64>,
}

impl BudgetSection {
    /// `self` with the limits `over` sets replaced.
    pub fn overlaid(self, over: &BudgetSection) -> BudgetSection {
        BudgetSection {
            max_steps: over.max_steps.or(self.max_steps),
            max_wall_secs: over.max_wall_secs.or(self.max_wall_secs),
            max_total_tokens: over.max_total_tokens.or(self.max_total_tokens),
            max_cost_usd: over.max_cost_usd.or(self.max_cost_usd),
        }
    }

    pub fn resolve(&self) -> Budget {
        Budget {
            max_steps: self.max_steps.unwrap_or(DEFAULT_MAX_STEPS),
            max_wall: self.max_wall_secs.map(Duration::from_secs),
            max_total_tokens: self.max_total_tokens,
            max_cost_usd: self.max_cost_usd,
        }
    }
}

/// The limits in force for every task of a session.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    pub max_steps: u32,
    pub max_wall: Option<Duration>,
    pub max_total_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
}

impl Default for Budget {
    fn default() -> Self {
        BudgetSection::default().resolve()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_override_the_file_limit_by_limit() {
        let file = BudgetSection {
            max_steps: Some(10),
            max_cost_usd: Some(1.0),
            ..BudgetSection::default()
        };
        let flags = BudgetSection {
            max_cost_usd: Some(0.5),
            max_wall_secs: Some(60),
            ..BudgetSection::default()
        };
        let budget = file.overlaid(&flags).resolve();
        assert_eq!(budget.max_steps, 10);
        assert_eq!(budget.max_cost_usd, Some(0.5));
        assert_eq!(budget.max_wall, Some(Duration::from_secs(60)));
        assert_eq!(budget.max_total_tokens, None);
    }

    #[test]
    fn steps_are_always_limited() {
        assert_eq!(Budget::default().max_steps, DEFAULT_MAX_STEPS);
    }
}
