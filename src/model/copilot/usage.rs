//! Copilot CLI: what each request cost, from the session's own token records
//! (COPILOT-FORMAT.md §11).
//!
//! * Every model call writes a `session.usage_record` (`usage {model, inputTokens,
//!   outputTokens, cacheReadTokens, cacheWriteTokens, cost, …}`) right before the
//!   `assistant.message` it produced. It is counted **once**, at that message: the first
//!   reply of the same agent (the main one, or a subagent) after the record; a record with
//!   no reply after it (a call that failed) counts at the next entry, else at the last one.
//!   A subagent's records count at its own entries, which hang inside the session.
//! * The `/compact` call writes no record: its usage is `compactionTokensUsed` of the
//!   `session.compaction_complete`, counted there (source "summary").
//! * `session.shutdown` sums one process's calls (`modelMetrics`): never added (a resume's
//!   process starts from zero, and a rewind deletes the records of the turns it removes).
//! * `usage.cost` is not dollars: it is Copilot's premium-request count (0 for the BYOK
//!   providers of the samples). So the tokens are priced with the core's table; a model
//!   the table lacks has an unknown cost. Copilot names Anthropic's models with dots
//!   (`claude-sonnet-4.5`): the table's name (`claude-sonnet-4-5`) is tried too.
//! * The four token counts are taken as disjoint (input without the cached part), as the
//!   records' fields are named; no run of the samples read from a cache to tell.

use super::events::{Ev, Line};
use super::index::{Copilot, Mark, parse};
use crate::model::core::session::Session;
use crate::model::core::usage::prices::Prices;
use crate::model::core::usage::{Record, Source, Table, Tokens};
use serde_json::Value;

fn n(v: &Value, k: &str) -> u64 {
    v.get(k)
        .and_then(|x| x.as_u64().or_else(|| x.as_f64().map(|f| f.max(0.0) as u64)))
        .unwrap_or(0)
}

/// A usage object (`usage_record.usage`, `compactionTokensUsed`) as tokens, and its model.
pub fn tokens_of(u: &Value) -> (String, Tokens) {
    (
        u.get("model")
            .and_then(Value::as_str)
            .unwrap_or("unrecorded")
            .to_string(),
        Tokens {
            input: n(u, "inputTokens"),
            output: n(u, "outputTokens"),
            cache_read: n(u, "cacheReadTokens"),
            cache_write: n(u, "cacheWriteTokens"),
        },
    )
}

/// The price of `tokens` for Copilot's `model`.
fn price(prices: &Prices, model: &str, tokens: &Tokens) -> Option<f64> {
    if let Some(r) = prices.rates(model) {
        return Some(r.cost(tokens));
    }
    if model.starts_with("claude-") && model.contains('.') {
        return prices
            .rates(&model.replace('.', "-"))
            .map(|r| r.cost(tokens));
    }
    None
}

fn add(t: &mut Table, i: u32, r: Record) {
    match &mut t.own[i as usize] {
        Some(old) => {
            old.tokens.add(&r.tokens);
            old.cost = old.cost.zip(r.cost).map(|(a, b)| a + b);
        }
        slot @ None => *slot = Some(r),
    }
}

/// Fills `t.own` (and the keys that count a request copied into a fork once).
pub fn fill(s: &Session, c: &Copilot, prices: &Prices, t: &mut Table) {
    t.side_files_are_subagents = false;
    let count = c.nodes.len() as u32;
    if count == 0 {
        return;
    }
    let records: Vec<&Mark> = c.marks.iter().filter(|m| m.what == Line::Usage).collect();
    for m in records {
        let mut buf = vec![0u8; m.len as usize];
        if s.read_exact_at(&mut buf, m.offset).is_err() {
            continue;
        }
        let Ok(v) = parse(&buf) else { continue };
        let Some(u) = v.pointer("/data/usage") else {
            continue;
        };
        let (model, tokens) = tokens_of(u);
        let at = (m.entries..count)
            .find(|&j| {
                let nd = c.node(j);
                nd.ev == Ev::Assistant && nd.sub == m.sub
            })
            .or_else(|| (m.entries < count).then_some(m.entries))
            .unwrap_or(count - 1);
        let cost = price(prices, &model, &tokens);
        add(
            t,
            at,
            Record {
                model,
                source: Source::Message,
                tokens,
                cost,
                recorded: false,
            },
        );
        // The request's own id: the same in a fork's copy of the line.
        let key = u
            .get("apiCallId")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| v.get("id").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_default();
        t.reply_keys
            .entry(at)
            .or_insert_with(|| ("copilot".to_string(), key));
    }
    let comps: Vec<u32> = (0..count)
        .filter(|&i| c.node(i).ev == Ev::Compaction)
        .collect();
    s.for_each_entry_bytes(&comps, |i, bytes| {
        let Ok(v) = parse(bytes) else { return };
        let Some(u) = v.pointer("/data/compactionTokensUsed") else {
            return;
        };
        let (model, tokens) = tokens_of(u);
        let cost = price(prices, &model, &tokens);
        add(
            t,
            i,
            Record {
                model,
                source: Source::Summary,
                tokens,
                cost,
                recorded: false,
            },
        );
        let key = v
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        t.reply_keys
            .entry(i)
            .or_insert_with(|| ("copilot".to_string(), key));
    });
}
