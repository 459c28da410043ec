//! What an opencode session records of its requests (OPENCODE-FORMAT.md §8).
//!
//! Every assistant message is one request: `tokens {input, output, reasoning, cache
//! {read, write}}` (input without the cached part, output without the reasoning) and
//! the `cost` opencode computed from the provider's prices. A summary of a compaction
//! is a request too (its own message); the title request is not stored. Reasoning
//! tokens are billed as output, so they count as output here.
//!
//! The cost is opencode's own. Where it recorded `0` for a request that used tokens
//! (a provider whose prices opencode was not given), the request is priced from the
//! price table when the table knows the model; otherwise opencode's `0` stands. A
//! request copied into a fork keeps its `time` and tokens, which name it
//! ([`Table::reply_keys`]), so `sessionfs usage` counts it once.

use super::index::{OpencodeSession, Role};
use crate::model::core::session::Session;
use crate::model::core::usage::prices::{Prices, Tokens};
use crate::model::core::usage::{Record, Source, Table};
use serde_json::Value;

/// The request an assistant message `info` records, and the key that names it.
pub fn record_of(info: &Value, prices: &Prices) -> Option<(Record, (String, String))> {
    let tokens = info.get("tokens")?;
    let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    let cache = tokens.get("cache");
    let t = Tokens {
        input: n(tokens.get("input")),
        output: n(tokens.get("output")).saturating_add(n(tokens.get("reasoning"))),
        cache_read: n(cache.and_then(|c| c.get("read"))),
        cache_write: n(cache.and_then(|c| c.get("write"))),
    };
    let provider = info.get("providerID").and_then(Value::as_str).unwrap_or("");
    let model_id = info.get("modelID").and_then(Value::as_str).unwrap_or("");
    let model = if provider.is_empty() {
        model_id.to_string()
    } else {
        format!("{provider}/{model_id}")
    };
    let recorded = info.get("cost").and_then(Value::as_f64);
    let (cost, was_recorded) = match recorded {
        Some(c) if c > 0.0 => (Some(c), true),
        _ if t.total() == 0 => (Some(recorded.unwrap_or(0.0)), true),
        _ => match prices.rates(&model) {
            Some(r) => (Some(r.cost(&t)), false),
            None => (Some(recorded.unwrap_or(0.0)), true),
        },
    };
    let source = if info.get("summary").and_then(Value::as_bool) == Some(true) {
        Source::Summary
    } else {
        Source::Message
    };
    let time = info.get("time");
    let created = time.and_then(|t| t.get("created")).map(|v| v.to_string());
    let completed = time.and_then(|t| t.get("completed")).map(|v| v.to_string());
    Some((
        Record {
            model,
            source,
            tokens: t,
            cost,
            recorded: was_recorded,
        },
        (
            format!(
                "opencode:{}:{provider}/{model_id}",
                created.unwrap_or_default()
            ),
            format!(
                "{}:{}",
                completed.unwrap_or_default(),
                crate::model::core::js::js_stringify(tokens)
            ),
        ),
    ))
}

/// Fills `t` with every assistant message's request.
pub fn fill(a: &OpencodeSession, s: &Session, prices: &Prices, t: &mut Table) {
    for (i, m) in a.metas().iter().enumerate() {
        if m.role != Role::Assistant {
            continue;
        }
        let Ok(v) = s.entry_value(i as u32) else {
            continue;
        };
        let Some((r, key)) = v.get("info").and_then(|info| record_of(info, prices)) else {
            continue;
        };
        t.own[i] = Some(r);
        t.reply_keys.insert(i as u32, key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// opencode's own cost stands; a request it recorded at 0 that used tokens is
    /// priced from the table when the table knows the model, else its 0 stands;
    /// reasoning counts as output.
    #[test]
    fn opencodes_cost_else_the_table() {
        let prices = Prices::snapshot();
        let info = |provider: &str, model: &str, cost: f64| {
            json!({"role":"assistant","providerID":provider,"modelID":model,"cost":cost,
                   "time":{"created":1,"completed":2},
                   "tokens":{"input":1000,"output":200,"reasoning":50,"cache":{"read":300,"write":0}}})
        };
        let (r, _) = record_of(&info("anthropic", "claude-sonnet-4-5", 0.25), &prices).unwrap();
        assert_eq!(r.cost, Some(0.25));
        assert!(r.recorded);
        assert_eq!(r.tokens.output, 250);
        assert_eq!(r.model, "anthropic/claude-sonnet-4-5");
        let (r, _) = record_of(&info("anthropic", "claude-sonnet-4-5", 0.0), &prices).unwrap();
        let rates = prices.rates("anthropic/claude-sonnet-4-5").unwrap();
        assert_eq!(r.cost, Some(rates.cost(&r.tokens)));
        assert!(r.cost.unwrap() > 0.0);
        assert!(!r.recorded);
        let (r, _) = record_of(&info("fake", "fake-model", 0.0), &prices).unwrap();
        assert_eq!(r.cost, Some(0.0));
        assert!(r.recorded);
    }
}
