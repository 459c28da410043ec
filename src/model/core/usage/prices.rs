//! Prices per token, read from a table in LiteLLM's `model_prices_and_context_window.json`
//! format: an object whose keys are model names and whose values hold
//! `input_cost_per_token`, `output_cost_per_token`, `cache_creation_input_token_cost`,
//! `cache_read_input_token_cost`, and optionally the same four with
//! `_above_200k_tokens` (the rate of the tokens past 200,000 in one request). Keys
//! without `input_cost_per_token` or `output_cost_per_token` (LiteLLM's `sample_spec`,
//! our `sessionfs_snapshot`) are not models.
//!
//! sessionfs ships a trimmed snapshot (`prices.json` beside this file, its date in
//! `sessionfs_snapshot.date`); `--prices FILE` replaces it with any table of that format
//! (LiteLLM's whole file works as it is).
//!
//! [`Tokens`] is defined here (the usage sums re-export it) so that this file names
//! nothing above it.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, OnceLock, RwLock};

/// Token counts of one request or of a sum of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

impl Tokens {
    pub fn total(&self) -> u64 {
        // Saturating: a damaged file may hold any count, and a total is no reason to
        // panic.
        self.input
            .saturating_add(self.output)
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write)
    }
    pub(crate) fn add(&mut self, o: &Tokens) {
        self.input = self.input.saturating_add(o.input);
        self.output = self.output.saturating_add(o.output);
        self.cache_read = self.cache_read.saturating_add(o.cache_read);
        self.cache_write = self.cache_write.saturating_add(o.cache_write);
    }
}

/// The snapshot shipped with sessionfs.
pub const SNAPSHOT: &str = include_str!("prices.json");

/// Tokens past which a request's tokens are billed at the `_above_200k_tokens` rates.
pub const TIER: u64 = 200_000;

/// Input tokens (cached and cache writes included) past which OpenAI bills a whole
/// request at its long-context rates, the table's `_above_272k_tokens` ones
/// (developers.openai.com, each model's pricing: "for requests with more than 272K
/// input tokens, input and cache rates double and output costs 1.5 times the
/// short-context rate for the full request").
pub const LONG_CONTEXT: u64 = 272_000;

/// One model's rates, dollars per token.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Rates {
    pub input: f64,
    pub output: f64,
    pub cache_write: f64,
    pub cache_read: f64,
    /// The rates past [`TIER`] tokens, where the table has them.
    pub input_above: Option<f64>,
    pub output_above: Option<f64>,
    pub cache_write_above: Option<f64>,
    pub cache_read_above: Option<f64>,
    /// The whole request's rates when its input passes [`LONG_CONTEXT`] tokens,
    /// where the table has them (input, output, cache write, cache read).
    pub long_context: Option<[f64; 4]>,
}

impl Rates {
    /// The cost of one request's tokens. Each kind of token is billed on its own:
    /// the first [`TIER`] at the base rate, the rest at the tier's rate when the table
    /// has one (as ccusage does).
    pub fn cost(&self, t: &Tokens) -> f64 {
        if let Some([i, o, w, r]) = self.long_context
            && t.input
                .saturating_add(t.cache_read)
                .saturating_add(t.cache_write)
                > LONG_CONTEXT
        {
            return t.input as f64 * i
                + t.output as f64 * o
                + t.cache_write as f64 * w
                + t.cache_read as f64 * r;
        }
        fn part(n: u64, base: f64, above: Option<f64>) -> f64 {
            match above {
                Some(a) if n > TIER => TIER as f64 * base + (n - TIER) as f64 * a,
                _ => n as f64 * base,
            }
        }
        part(t.input, self.input, self.input_above)
            + part(t.output, self.output, self.output_above)
            + part(t.cache_write, self.cache_write, self.cache_write_above)
            + part(t.cache_read, self.cache_read, self.cache_read_above)
    }
}

/// A price table.
#[derive(Debug, Clone, Default)]
pub struct Prices {
    models: HashMap<String, Rates>,
    /// Where the table comes from, as the reports name it: `snapshot 2026-12-01`, or
    /// the file given with `--prices`.
    pub source: String,
}

impl Prices {
    /// Parses a table in LiteLLM's format. `source` names it in reports.
    pub fn parse(text: &str, source: &str) -> Result<Prices, String> {
        let v: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| format!("not a JSON price table (LiteLLM's format): {e}"))?;
        let obj = v.as_object().ok_or(
            "not a price table: LiteLLM's format is a JSON object of model names".to_string(),
        )?;
        let mut models = HashMap::new();
        for (name, e) in obj {
            let num = |k: &str| e.get(k).and_then(serde_json::Value::as_f64);
            let (Some(input), Some(output)) =
                (num("input_cost_per_token"), num("output_cost_per_token"))
            else {
                continue;
            };
            models.insert(
                name.clone(),
                Rates {
                    input,
                    output,
                    cache_write: num("cache_creation_input_token_cost").unwrap_or(0.0),
                    cache_read: num("cache_read_input_token_cost").unwrap_or(0.0),
                    input_above: num("input_cost_per_token_above_200k_tokens"),
                    output_above: num("output_cost_per_token_above_200k_tokens"),
                    cache_write_above: num("cache_creation_input_token_cost_above_200k_tokens"),
                    cache_read_above: num("cache_read_input_token_cost_above_200k_tokens"),
                    long_context: match (
                        num("input_cost_per_token_above_272k_tokens"),
                        num("output_cost_per_token_above_272k_tokens"),
                    ) {
                        (Some(i), Some(o)) => Some([
                            i,
                            o,
                            num("cache_creation_input_token_cost_above_272k_tokens").unwrap_or(0.0),
                            num("cache_read_input_token_cost_above_272k_tokens").unwrap_or(0.0),
                        ]),
                        _ => None,
                    },
                },
            );
        }
        if models.is_empty() {
            return Err(
                "no model in it has input_cost_per_token and output_cost_per_token \
                 (LiteLLM's model_prices_and_context_window.json format)"
                    .into(),
            );
        }
        let source = match obj
            .get("sessionfs_snapshot")
            .and_then(|s| s.get("date"))
            .and_then(|d| d.as_str())
        {
            Some(d) if source == "snapshot" => format!("snapshot {d}"),
            _ => source.to_string(),
        };
        Ok(Prices { models, source })
    }

    /// Reads a table from a file (`--prices FILE`).
    pub fn load(path: &Path) -> Result<Prices, String> {
        // LiteLLM's whole table is about 1.5 MB.
        let text = crate::model::core::input::open_regular(path)
            .and_then(|f| crate::model::core::input::read_bounded(f, 64 << 20))
            .and_then(|b| {
                String::from_utf8(b)
                    .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
            })
            .map_err(|e| {
                format!(
                    "{}: {}",
                    path.display(),
                    crate::model::core::input::io_message(&e)
                )
            })?;
        Prices::parse(&text, &path.display().to_string())
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The shipped snapshot.
    pub fn snapshot() -> Prices {
        Prices::parse(SNAPSHOT, "snapshot").expect("the shipped price snapshot parses")
    }

    /// The rates of `model`: its own entry, else the entry under a provider prefix
    /// (`anthropic/`, `openai/`, `gemini/`), else the name without a provider prefix
    /// or a date suffix (`-20250929`). No looser match: a wrong price is worse than an
    /// unknown one.
    pub fn rates(&self, model: &str) -> Option<&Rates> {
        if let Some(r) = self.models.get(model) {
            return Some(r);
        }
        for p in ["anthropic/", "openai/", "gemini/"] {
            if let Some(r) = self.models.get(&format!("{p}{model}")) {
                return Some(r);
            }
        }
        if let Some((_, rest)) = model.split_once('/') {
            return self.rates(rest);
        }
        let (stem, tail) = model.rsplit_once('-')?;
        if tail.len() == 8 && tail.bytes().all(|b| b.is_ascii_digit()) {
            return self.models.get(stem);
        }
        None
    }

    pub fn len(&self) -> usize {
        self.models.len()
    }

    pub fn is_empty(&self) -> bool {
        self.models.is_empty()
    }
}

fn global_cell() -> &'static RwLock<Option<Arc<Prices>>> {
    static G: OnceLock<RwLock<Option<Arc<Prices>>>> = OnceLock::new();
    G.get_or_init(|| RwLock::new(None))
}

/// The table this process prices with: the one given with `--prices`, else the
/// snapshot.
pub fn global() -> Arc<Prices> {
    if let Some(p) = global_cell().read().expect("prices lock").as_ref() {
        return p.clone();
    }
    let mut g = global_cell().write().expect("prices lock");
    g.get_or_insert_with(|| Arc::new(Prices::snapshot()))
        .clone()
}

/// Sets the table of this process (`--prices FILE`).
pub fn set_global(p: Prices) {
    *global_cell().write().expect("prices lock") = Some(Arc::new(p));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_snapshot_parses_and_has_a_date() {
        let p = Prices::snapshot();
        assert!(p.source.starts_with("snapshot 20"), "{}", p.source);
        assert!(p.rates("claude-opus-4-8").is_some());
        assert!(p.rates("sessionfs_snapshot").is_none());
    }

    #[test]
    fn lookups_take_prefixes_and_dates_off_but_nothing_looser() {
        let p = Prices::parse(
            r#"{"claude-x":{"input_cost_per_token":1e-6,"output_cost_per_token":2e-6},
                "openai/gpt-y":{"input_cost_per_token":1e-6,"output_cost_per_token":2e-6}}"#,
            "t",
        )
        .unwrap();
        assert!(p.rates("claude-x").is_some());
        assert!(p.rates("anthropic/claude-x").is_some());
        assert!(p.rates("claude-x-20250101").is_some());
        assert!(p.rates("gpt-y").is_some());
        assert!(p.rates("claude-x-2").is_none());
        assert!(p.rates("claude").is_none());
    }

    #[test]
    fn tokens_past_200k_take_the_tier_rate_each_kind_on_its_own() {
        let r = Rates {
            input: 1.0,
            output: 10.0,
            input_above: Some(2.0),
            ..Rates::default()
        };
        let t = Tokens {
            input: 200_010,
            output: 300_000,
            ..Tokens::default()
        };
        assert_eq!(r.cost(&t), 200_000.0 + 20.0 + 3_000_000.0);
    }

    // OpenAI's long context: past 272K input tokens (cached and written included),
    // the whole request at the long-context rates; at 272K exactly, the short ones.
    #[test]
    fn past_272k_input_tokens_the_whole_request_takes_the_long_context_rates() {
        let p = Prices::snapshot();
        let r = p.rates("gpt-6.2-sol").unwrap();
        let short = Tokens {
            input: 172_000,
            cache_read: 100_000,
            output: 1_000,
            ..Tokens::default()
        };
        let want = 172_000.0 * 2e-6 + 100_000.0 * 1e-7 + 1_000.0 * 1e-5;
        assert!((r.cost(&short) - want).abs() < 1e-12);
        let long = Tokens {
            input: 172_001,
            ..short
        };
        let want = 172_001.0 * 4e-6 + 100_000.0 * 2e-7 + 1_000.0 * 1.5e-5;
        assert!((r.cost(&long) - want).abs() < 1e-12);
    }

    // Every model a supported agent uses by default has a price, each with its source.
    #[test]
    fn the_agents_default_models_are_priced_with_their_source() {
        let p = Prices::snapshot();
        let v: serde_json::Value = serde_json::from_str(SNAPSHOT).unwrap();
        let defaults = v["sessionfs_snapshot"]["defaults"].as_object().unwrap();
        for model in defaults.values().filter_map(|m| m.as_str()) {
            if model.contains(' ') {
                continue; // an agent that records its own cost
            }
            assert!(p.rates(model).is_some(), "{model}");
            assert!(v[model]["sessionfs_source"].is_string(), "{model}");
            assert!(v[model]["sessionfs_checked"].is_string(), "{model}");
        }
    }

    #[test]
    fn a_table_without_models_is_refused_with_the_format_named() {
        let e = Prices::parse(r#"{"a":{"x":1}}"#, "t").unwrap_err();
        assert!(e.contains("LiteLLM"), "{e}");
        assert!(Prices::parse("[1]", "t").unwrap_err().contains("LiteLLM"));
    }
}
