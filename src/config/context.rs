//! The `[context]` table: when the agent compacts a conversation that fills the model's
//! context window.
//!
//! Owns: the settings as the user writes them, their defaults and their validation.
//! Does not own: measuring the context or compacting it (`agent/`).

use serde::Deserialize;

use super::{ConfigError, ModelInfo};

/// The share of the context window the last prompt may fill before compaction, unless
/// configured: late enough to be rare, early enough to leave room for the next answer.
pub const DEFAULT_COMPACT_AT: f64 = 0.8;

/// The newest model calls whose tool results are never pruned, unless configured.
pub const DEFAULT_KEEP_RECENT_STEPS: usize = 4;

/// The `[context]` table as written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextSection {
    /// `false` turns compaction off.
    pub compact: Option<bool>,
    /// The share of the window (above 0, at most 1) that triggers compaction.
    pub compact_at: Option<f64>,
    /// Prompt tokens that trigger compaction when the model's window is unknown; unset,
    /// such a model is never compacted.
    pub compact_at_tokens: Option<u64>,
    /// Model calls, newest first, whose tool results stay whole (at least 1).
    pub keep_recent_steps: Option<usize>,
}

/// When and how much the agent compacts, resolved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Compaction {
    pub enabled: bool,
    pub compact_at: f64,
    pub compact_at_tokens: Option<u64>,
    pub keep_recent_steps: usize,
}

impl Default for Compaction {
    fn default() -> Self {
        Self {
            enabled: true,
            compact_at: DEFAULT_COMPACT_AT,
            compact_at_tokens: None,
            keep_recent_steps: DEFAULT_KEEP_RECENT_STEPS,
        }
    }
}

impl Compaction {
    /// The prompt size, in tokens, at which a conversation with `model` is compacted;
    /// `None` when it never is.
    pub fn threshold(&self, model: &ModelInfo) -> Option<u64> {
        if !self.enabled {
            return None;
        }
        match model.context_window.filter(|&window| window > 0) {
            // Truncation is intended: the threshold is a whole number of tokens.
            Some(window) => Some((window as f64 * self.compact_at) as u64),
            None => self.compact_at_tokens,
        }
    }
}

impl ContextSection {
    pub fn resolve(&self) -> Result<Compaction, ConfigError> {
        let default = Compaction::default();
        let compact_at = self.compact_at.unwrap_or(default.compact_at);
        if !(compact_at > 0.0 && compact_at <= 1.0) {
            return Err(ConfigError::BadSetting {
                setting: "context.compact_at",
                message: format!("must be above 0 and at most 1, not {compact_at}"),
            });
        }
        let keep_recent_steps = self.keep_recent_steps.unwrap_or(default.keep_recent_steps);
        if keep_recent_steps == 0 {
            return Err(ConfigError::BadSetting {
                setting: "context.keep_recent_steps",
                message: "must be at least 1: the step in progress is never compacted".into(),
            });
        }
        Ok(Compaction {
            enabled: self.compact.unwrap_or(default.enabled),
            compact_at,
            compact_at_tokens: self.compact_at_tokens,
            keep_recent_steps,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(tokens: u64) -> ModelInfo {
        ModelInfo {
            context_window: Some(tokens),
            prices: None,
            takes_images: None,
        }
    }

    #[test]
    fn the_threshold_is_a_share_of_the_window() {
        let compaction = ContextSection::default().resolve().unwrap();
        assert_eq!(compaction.threshold(&window(200_000)), Some(160_000));
    }

    #[test]
    fn an_unknown_window_uses_the_token_count_or_never_compacts() {
        let unknown = ModelInfo::default();
        let default = ContextSection::default().resolve().unwrap();
        assert_eq!(default.threshold(&unknown), None);
        let counted = ContextSection {
            compact_at_tokens: Some(50_000),
            ..ContextSection::default()
        }
        .resolve()
        .unwrap();
        assert_eq!(counted.threshold(&unknown), Some(50_000));
    }

    #[test]
    fn compaction_can_be_turned_off() {
        let off = ContextSection {
            compact: Some(false),
            ..ContextSection::default()
        }
        .resolve()
        .unwrap();
        assert_eq!(off.threshold(&window(200_000)), None);
    }

    #[test]
    fn out_of_range_settings_are_refused_by_name() {
        for compact_at in [0.0, 1.5, f64::NAN] {
            let error = ContextSection {
                compact_at: Some(compact_at),
                ..ContextSection::default()
            }
            .resolve()
            .unwrap_err();
            assert!(
                error.to_string().starts_with("context.compact_at:"),
                "{error}"
            );
        }
        let error = ContextSection {
            keep_recent_steps: Some(0),
            ..ContextSection::default()
        }
        .resolve()
        .unwrap_err();
        assert!(
            error.to_string().starts_with("context.keep_recent_steps:"),
            "{error}"
        );
    }
}
