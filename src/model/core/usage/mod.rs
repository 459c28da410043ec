//! Tokens and cost: of every entry, of the path from the root to it, of every branch
//! and of a whole session.
//!
//! What a line records is read per agent (`pi/usage.rs`, `claude/usage.rs`,
//! `codex/usage.rs`, through `Agent::fill_usage`); everything else (the
//! summing, the path totals, branches, dead ends, the text and JSON shown) is here and
//! the same for every agent.
//!
//! * **Per entry**, a [`Record`]: the request's tokens (input, output, cache read,
//!   cache write), its model, and its cost: the cost the file records (Pi), or the
//!   tokens priced with a LiteLLM-format table ([`prices`]; Claude Code). A model the
//!   table does not know gives no cost: the usage says the cost is unknown, and sums
//!   carry that on (`$1.20 + unknown`), never counting it as zero.
//! * **Running total** of an entry: the records on the path from its root to it, plus
//!   the subagents (Claude Code) spawned on that path: what it cost to get there.
//! * **Session**: every record of the file (and of its subagents), the current branch
//!   (the running total at the leaf), each branch (at each tip), and the dead ends:
//!   everything not on the current branch.

mod of_session;
pub mod prices;
pub mod report;

use crate::model::core::format::Format;
pub use prices::Tokens;
use std::fmt::Write as _;

/// Where a record comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// An assistant message (Pi), a reply (Claude Code, counted once per API reply).
    Message,
    /// A Pi 1.6 `usage` entry: a request Pi made besides the conversation (cache
    /// warming), which no message records.
    UsageEntry,
    /// The summary request of a Pi compaction or branch summary.
    Summary,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Message => "message",
            Source::UsageEntry => "usage entry",
            Source::Summary => "summary",
        }
    }
}

/// One request's usage, as an entry records it.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub model: String,
    pub source: Source,
    pub tokens: Tokens,
    /// Dollars; `None` when the file records none and the price table does not know
    /// the model.
    pub cost: Option<f64>,
    /// Whether the cost is the one the file records (else it is priced from the table).
    pub recorded: bool,
}

/// A sum of records.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage {
    pub tokens: Tokens,
    /// The cost of the requests whose cost is known.
    pub cost: f64,
    pub requests: u64,
    /// Requests whose cost is unknown (a model the price table lacks).
    pub unpriced: u64,
    /// The unknown models, sorted.
    pub unpriced_models: Vec<String>,
    /// Models the price table lacks whose cost is the agent's own record (Claude
    /// Code's `cost-state`), sorted: see [`Usage::price_from_own_count`].
    pub own_cost_models: Vec<String>,
}

impl Usage {
    pub fn add_record(&mut self, r: &Record) {
        self.tokens.add(&r.tokens);
        self.requests += 1;
        match r.cost {
            Some(c) => self.cost += c,
            None => {
                self.unpriced += 1;
                if let Err(i) = self.unpriced_models.binary_search(&r.model) {
                    self.unpriced_models.insert(i, r.model.clone());
                }
            }
        }
    }

    pub fn add(&mut self, o: &Usage) {
        self.tokens.add(&o.tokens);
        self.cost += o.cost;
        self.requests += o.requests;
        self.unpriced += o.unpriced;
        for m in &o.unpriced_models {
            if let Err(i) = self.unpriced_models.binary_search(m) {
                self.unpriced_models.insert(i, m.clone());
            }
        }
        for m in &o.own_cost_models {
            if let Err(i) = self.own_cost_models.binary_search(m) {
                self.own_cost_models.insert(i, m.clone());
            }
        }
    }

    /// A whole session's usage whose requests of models the price table lacks are
    /// priced by the agent's own record instead: Claude Code's `cost-state` holds its
    /// own cost of each model over the session (`modelUsage.MODEL.costUSD`). Only
    /// when it prices every such model (it knew their prices: no
    /// `hasUnknownModelCost`), and only for a whole session (the record is not per
    /// branch, and after `--fork-session` it includes the source's). Returns whether
    /// it did.
    pub fn price_from_own_count(&mut self, own: &CostState) -> bool {
        if self.unpriced == 0 || own.unknown_model_cost {
            return false;
        }
        let cost_of = |m: &str| own.models.iter().find(|(n, _)| n == m).map(|(_, c)| *c);
        let Some(costs) = self
            .unpriced_models
            .iter()
            .map(|m| cost_of(m))
            .collect::<Option<Vec<f64>>>()
        else {
            return false;
        };
        self.cost += costs.iter().sum::<f64>();
        self.unpriced = 0;
        self.own_cost_models = std::mem::take(&mut self.unpriced_models);
        true
    }

    /// The cost as people read it: `$0.0123`, `unknown` (no request priced),
    /// `$0.0123 + unknown` (some not).
    pub fn cost_text(&self) -> String {
        if self.unpriced == 0 {
            dollars(self.cost)
        } else if self.unpriced == self.requests {
            "unknown".into()
        } else {
            format!("{} + unknown", dollars(self.cost))
        }
    }

    /// One line: `tokens 1,234 (input 1,000, output 34, cache read 200, cache write 0), cost $0.0123, 3 requests`.
    pub fn line(&self) -> String {
        let t = &self.tokens;
        let mut s = format!(
            "tokens {} (input {}, output {}, cache read {}, cache write {}), cost {}, {} request{}",
            group(t.total()),
            group(t.input),
            group(t.output),
            group(t.cache_read),
            group(t.cache_write),
            self.cost_text(),
            self.requests,
            if self.requests == 1 { "" } else { "s" }
        );
        if !self.unpriced_models.is_empty() {
            let _ = write!(s, " (no price for {})", self.unpriced_models.join(", "));
        }
        if !self.own_cost_models.is_empty() {
            let _ = write!(
                s,
                " ({} at the agent's own recorded cost)",
                self.own_cost_models.join(", ")
            );
        }
        s
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "inputTokens": self.tokens.input,
            "outputTokens": self.tokens.output,
            "cacheReadTokens": self.tokens.cache_read,
            "cacheCreationTokens": self.tokens.cache_write,
            "totalTokens": self.tokens.total(),
            "cost": if self.unpriced == self.requests && self.requests > 0 {
                serde_json::Value::Null
            } else {
                serde_json::json!(round(self.cost))
            },
            "costComplete": self.unpriced == 0,
            "requests": self.requests,
            "unpricedRequests": self.unpriced,
            "unpricedModels": self.unpriced_models,
            "ownCostModels": self.own_cost_models,
        })
    }
}

/// Dollars with four decimals below a dollar, two above.
pub fn dollars(c: f64) -> String {
    if c.abs() >= 1.0 {
        format!("${c:.2}")
    } else {
        format!("${c:.4}")
    }
}

/// Rounds away float noise (`0.12232000000000001` → `0.12232`) for JSON.
pub fn round(c: f64) -> f64 {
    (c * 1e10).round() / 1e10
}

/// `1234567` → `1,234,567`.
pub fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// What Claude Code's own `cost-state` line says (2.1.332): its tally of the CLI
/// processes that wrote the file. See Claude Code's `usage::cost_state`.
#[derive(Debug, Clone, PartialEq)]
pub struct CostState {
    /// `totalCostUSD` of the last `cost-state` line.
    pub cost: f64,
    /// Its tokens summed over `modelUsage`.
    pub tokens: Tokens,
    /// `(model, costUSD)` of its `modelUsage`.
    pub models: Vec<(String, f64)>,
    /// `hasUnknownModelCost`.
    pub unknown_model_cost: bool,
    /// How many `cost-state` lines the file holds.
    pub lines: u32,
}

/// The usage of every entry of one session, and what follows from it.
#[derive(Debug, Clone)]
pub struct Table {
    /// Per entry index: the record this entry is where it is counted, if any.
    pub own: Vec<Option<Record>>,
    /// Per entry index: the entry where a record of a line of the same reply is
    /// counted (Claude Code's lines after the first of one reply).
    pub counted_at: Vec<u32>,
    /// Per entry index: the usage of the subagents whose transcripts hang under it.
    pub side: Vec<Usage>,
    pub cost_state: Option<CostState>,
    /// Per entry where a request is counted, what names the request in any file
    /// (Claude Code: `message.id` and `requestId`; Pi: the entry's id and timestamp),
    /// to count a request copied into other sessions (forks) once.
    pub reply_keys: std::collections::HashMap<u32, (String, String)>,
    pub format: Format,
    pub prices_source: String,
    /// Whether the session's other files are subagent transcripts whose usage adds to
    /// the entry they hang under (Claude Code). An agent whose other files are pages
    /// of the same conversation (Codex) clears it: their entries are branches.
    pub side_files_are_subagents: bool,
    /// The running totals, made when first asked (see `of_session.rs`).
    pub(crate) running: std::sync::OnceLock<Running>,
}

impl Table {
    /// The usage counted at entry `i` itself.
    pub fn own_usage(&self, i: u32) -> Usage {
        let mut u = Usage::default();
        if let Some(r) = &self.own[i as usize] {
            u.add_record(r);
        }
        u
    }

    /// Everything the session records, subagents included.
    pub fn total(&self) -> Usage {
        let mut u = Usage::default();
        for r in self.own.iter().flatten() {
            u.add_record(r);
        }
        u
    }

    /// The session's total by model, sorted by model.
    pub fn by_model(&self) -> Vec<(String, Usage)> {
        let mut m: std::collections::BTreeMap<&str, Usage> = Default::default();
        for r in self.own.iter().flatten() {
            m.entry(&r.model).or_default().add_record(r);
        }
        m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }

    /// The session's total by source.
    pub fn by_source(&self) -> Vec<(Source, Usage)> {
        let mut v: Vec<(Source, Usage)> = Vec::new();
        for r in self.own.iter().flatten() {
            match v.iter_mut().find(|(s, _)| *s == r.source) {
                Some((_, u)) => u.add_record(r),
                None => {
                    let mut u = Usage::default();
                    u.add_record(r);
                    v.push((r.source, u));
                }
            }
        }
        v
    }

    fn price_note(&self) -> String {
        match self.format {
            Format::Pi => format!(
                "as recorded in the file (the table, {}, only for a record without a cost)",
                self.prices_source
            ),
            Format::Opencode => format!(
                "as opencode recorded it (the table, {}, only for a request it recorded no cost for)",
                self.prices_source
            ),
            _ => self.prices_source.clone(),
        }
    }
}

/// Unknown models a running total tells apart by a bit each (the others are read from
/// the path when asked).
pub(crate) const MODEL_BITS: usize = 63;
/// The bit of a total that met a model past [`MODEL_BITS`].
pub(crate) const OVERFLOW: u64 = 1 << 63;

/// A running total: [`Usage`] without its list of unknown models, which are bits.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sum {
    pub(crate) tokens: Tokens,
    pub(crate) cost: f64,
    pub(crate) requests: u64,
    pub(crate) unpriced: u64,
    /// Bit `b`: the session's `b`-th unknown model ([`Running::models`]).
    pub(crate) models: u64,
}

/// The running total of every entry, from the root to it (`of_session.rs` makes it).
#[derive(Debug, Clone)]
pub(crate) struct Running {
    pub(crate) at: Vec<Sum>,
    pub(crate) models: Vec<String>,
}

#[cfg(test)]
mod tests;
