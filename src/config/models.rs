//! What duet knows about a model: its context window and its prices.
//!
//! Owns: the built-in table (`assets/models.toml`), the `[models."name"]` overrides of
//! the config file, the longest-prefix lookup, and turning token usage into dollars.
//! Does not own: counting tokens (the provider reports them) or enforcing budgets
//! (`agent/`).
//! Invariant: an unknown model has no prices and no context window — duet shows no
//! number rather than a guessed one.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::provider::Usage;

const BUILT_IN: &str = include_str!("../../assets/models.toml");

/// One entry of the table, as written in `assets/models.toml` or the config file.
/// Prices are US dollars per million tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelEntry {
    pub context_window: Option<u64>,
    pub input: Option<f64>,
    pub output: Option<f64>,
    pub cache_read: Option<f64>,
    pub cache_write: Option<f64>,
    /// Whether the model takes images; `false` makes duet refuse to attach one.
    pub images: Option<bool>,
}

impl ModelEntry {
    /// `self` with the fields `over` sets replaced.
    fn overlaid(self, over: &ModelEntry) -> ModelEntry {
        ModelEntry {
            context_window: over.context_window.or(self.context_window),
            input: over.input.or(self.input),
            output: over.output.or(self.output),
            cache_read: over.cache_read.or(self.cache_read),
            cache_write: over.cache_write.or(self.cache_write),
            images: over.images.or(self.images),
        }
    }
}

/// Prices of one model, in US dollars per million tokens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prices {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

impl Prices {
    /// What `usage` costs, in US dollars.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let per_token = |count: u64, price: f64| count as f64 * price / 1_000_000.0;
        per_token(usage.input_tokens, self.input)
            + per_token(usage.output_tokens, self.output)
            + per_token(usage.cache_read_tokens, self.cache_read)
            + per_token(usage.cache_write_tokens, self.cache_write)
    }

    /// What sending `usage`'s prompt again would cost, output excluded.
    pub fn prompt_cost(&self, usage: &Usage) -> f64 {
        self.cost(&Usage {
            output_tokens: 0,
            ..*usage
        })
    }
}

/// What is known about the model of this session.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ModelInfo {
    /// Tokens the model can take in one call (prompt and answer).
    pub context_window: Option<u64>,
    /// `None` when the price of the model is unknown.
    pub prices: Option<Prices>,
    /// Whether the model takes images, where known (`images` in the models table).
    pub takes_images: Option<bool>,
}

impl ModelInfo {
    /// The share of the context window a prompt of `usage` fills, 0 to 1 (more when the
    /// provider let a prompt overflow the configured window).
    pub fn context_used(&self, usage: &Usage) -> Option<f32> {
        let window = self.context_window.filter(|&window| window > 0)?;
        Some((usage.prompt_tokens() as f64 / window as f64) as f32)
    }
}

/// The `[models]` table: entries keyed by model-name prefix.
pub type ModelTable = BTreeMap<String, ModelEntry>;

/// The built-in table. It is part of the binary, so a broken one is a build defect that
/// the unit tests catch; at run time it degrades to "nothing known".
fn built_in() -> ModelTable {
    toml::from_str(BUILT_IN).unwrap_or_else(|error| {
        tracing::error!(%error, "assets/models.toml does not parse");
        ModelTable::new()
    })
}

/// What is known about `model`: the longest built-in prefix, overlaid by the longest
/// configured prefix.
pub fn lookup(model: &str, configured: &ModelTable) -> ModelInfo {
    let base = longest_prefix(&built_in(), model).unwrap_or_default();
    let entry = match longest_prefix(configured, model) {
        Some(over) => base.overlaid(&over),
        None => base,
    };
    ModelInfo {
        context_window: entry.context_window,
        prices: prices_of(&entry),
        takes_images: entry.images,
    }
}

fn longest_prefix(table: &ModelTable, model: &str) -> Option<ModelEntry> {
    table
        .iter()
        .filter(|(prefix, _)| model.starts_with(prefix.as_str()))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, entry)| *entry)
}

/// Prices need at least input and output; cache prices default to the input price.
fn prices_of(entry: &ModelEntry) -> Option<Prices> {
    let input = entry.input?;
    Some(Prices {
        input,
        output: entry.output?,
        cache_read: entry.cache_read.unwrap_or(input),
        cache_write: entry.cache_write.unwrap_or(input),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: cache_read,
            cache_write_tokens: cache_write,
        }
    }

    #[test]
    fn the_built_in_table_parses_and_every_entry_has_a_window_and_prices() {
        let table: ModelTable = toml::from_str(BUILT_IN).expect("assets/models.toml parses");
        assert!(table.len() >= 10);
        for (name, entry) in &table {
            assert!(entry.context_window.is_some(), "{name} has no window");
            assert!(prices_of(entry).is_some(), "{name} has no prices");
        }
    }

    #[test]
    fn the_longest_matching_prefix_wins() {
        let none = ModelTable::new();
        let opus_4_5 = lookup("claude-opus-4-5-20251101", &none);
        let opus_4_1 = lookup("claude-opus-4-1", &none);
        assert_eq!(opus_4_5.prices.map(|p| p.input), Some(5.0));
        assert_eq!(opus_4_1.prices.map(|p| p.input), Some(15.0));
        assert_eq!(
            lookup("gpt-5-mini", &none).prices.map(|p| p.input),
            Some(0.25)
        );
        assert_eq!(lookup("gpt-5", &none).prices.map(|p| p.input), Some(1.25));
    }

    #[test]
    fn an_unknown_model_has_no_numbers() {
        let info = lookup("qwen2.5-coder", &ModelTable::new());
        assert_eq!(info, ModelInfo::default());
        assert_eq!(info.context_used(&usage(1000, 0, 0, 0)), None);
    }

    #[test]
    fn configured_entries_override_field_by_field_and_add_models() {
        let configured: ModelTable = toml::from_str(
            r#"
            ["claude-sonnet-4"]
            input = 2.0
            ["qwen"]
            context_window = 32768
            input = 0.0
            output = 0.0
            "#,
        )
        .expect("parses");
        let sonnet = lookup("claude-sonnet-4-5", &configured);
        let prices = sonnet.prices.expect("known");
        assert_eq!((prices.input, prices.output), (2.0, 15.0));
        assert_eq!(sonnet.context_window, Some(200_000));
        let qwen = lookup("qwen2.5-coder", &configured);
        assert_eq!(qwen.context_window, Some(32_768));
        assert_eq!(qwen.prices.map(|p| p.cost(&usage(10, 10, 0, 0))), Some(0.0));
    }

    #[test]
    fn cost_prices_each_kind_of_token() {
        let prices = Prices {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
        };
        let cost = prices.cost(&usage(1_000_000, 100_000, 2_000_000, 400_000));
        assert!((cost - (3.0 + 1.5 + 0.6 + 1.5)).abs() < 1e-9, "{cost}");
        let prompt = prices.prompt_cost(&usage(1_000_000, 100_000, 0, 0));
        assert!((prompt - 3.0).abs() < 1e-9, "{prompt}");
    }

    #[test]
    fn cache_prices_default_to_the_input_price() {
        let prices = prices_of(&ModelEntry {
            input: Some(2.0),
            output: Some(8.0),
            ..ModelEntry::default()
        })
        .expect("complete");
        assert_eq!((prices.cache_read, prices.cache_write), (2.0, 2.0));
        assert_eq!(
            prices_of(&ModelEntry {
                input: Some(2.0),
                ..ModelEntry::default()
            }),
            None
        );
    }

    #[test]
    fn context_used_counts_the_whole_prompt() {
        let info = ModelInfo {
            context_window: Some(200_000),
            prices: None,
            takes_images: None,
        };
        let used = info
            .context_used(&usage(10_000, 5_000, 80_000, 10_000))
            .expect("window known");
        assert!((used - 0.5).abs() < 1e-6, "{used}");
    }
}
