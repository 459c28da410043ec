//! Pi: what each entry records.
//!
//! * An assistant `message`: `message.usage` (`input`, `output`, `cacheRead`,
//!   `cacheWrite`) and the cost Pi recorded, `usage.cost.total`, under
//!   `provider/model`.
//! * A `usage` entry (Pi 1.6): a request Pi made on its own, outside the conversation
//!   (the idle cache warmer, PI-FORMAT.md §16.3). Its `usage` has the same shape. It is
//!   a request of its own, not a copy of a message's usage, so it adds to the total:
//!   nothing is counted twice.
//! * A `compaction` or `branch_summary` with `usage` (Pi 1.6 records the summary
//!   request's): also a request of its own.
//!
//! A usage without `cost` (very old files) is priced from the table, like Claude
//! Code's; an unknown model then has an unknown cost.
//!
//! Pi's `/fork` and `/clone` copy the path into a new file with the entries' ids and
//! timestamps (PI-FORMAT.md §9.5): `sessionfs usage` counts such a copy once over the
//! files it reads, keyed by id and timestamp (not for v1 files, whose ids are made up).

use crate::model::core::session::Session;
use crate::model::core::usage::prices::Prices;
use crate::model::core::usage::{Record, Source, Table, Tokens};
use serde_json::Value;

/// Fills `t.own` for every entry of a Pi session.
pub fn fill(s: &Session, prices: &Prices, t: &mut Table) {
    for i in 0..s.entries().len() as u32 {
        if !s.entry(i).is_node() {
            continue;
        }
        let Ok(bytes) = s.entry_bytes(i) else {
            continue;
        };
        if memchr::memmem::find(&bytes, b"\"usage\"").is_none() {
            continue;
        }
        let Ok(v) = s.entry_value(i) else { continue };
        t.own[i as usize] = record(&v, prices);
        // Pi's `/fork` and `/clone` copy entries into a new file with their ids and
        // timestamps: the same request, to be counted once over several files.
        if t.own[i as usize].is_some()
            && !s.is_v1()
            && let Some(ts) = v.get("timestamp").and_then(Value::as_str)
        {
            t.reply_keys
                .insert(i, (format!("pi:{}", s.id_string(i)), ts.to_string()));
        }
    }
}

/// The record of one Pi entry (as Pi holds it in memory, migrated), if it has one.
pub fn record(v: &Value, prices: &Prices) -> Option<Record> {
    let (u, model, source) = match v.get("type").and_then(Value::as_str)? {
        "message" => {
            let m = v.get("message")?;
            if m.get("role").and_then(Value::as_str) != Some("assistant") {
                return None;
            }
            (m.get("usage")?, model_of(m), Source::Message)
        }
        "usage" => (v.get("usage")?, model_of(v), Source::UsageEntry),
        "compaction" | "branch_summary" => (v.get("usage")?, model_of(v), Source::Summary),
        _ => return None,
    };
    if !u.is_object() {
        return None;
    }
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    let tokens = Tokens {
        input: n("input"),
        output: n("output"),
        cache_read: n("cacheRead"),
        cache_write: n("cacheWrite") + n("cacheWrite1h"),
    };
    let recorded = u
        .get("cost")
        .and_then(|c| c.get("total"))
        .and_then(Value::as_f64);
    let bare = model.rsplit_once('/').map_or(model.as_str(), |(_, m)| m);
    let cost = recorded.or_else(|| prices.rates(bare).map(|r| r.cost(&tokens)));
    Some(Record {
        model,
        source,
        tokens,
        cost,
        recorded: recorded.is_some(),
    })
}

/// `provider/model` as Pi names it (`model` alone without a provider; `unrecorded`
/// without either: a compaction or branch summary records no model).
fn model_of(v: &Value) -> String {
    let p = v.get("provider").and_then(Value::as_str);
    let m = v.get("model").and_then(Value::as_str);
    match (p, m) {
        (Some(p), Some(m)) => format!("{p}/{m}"),
        (None, Some(m)) => m.to_string(),
        _ => "unrecorded".to_string(),
    }
}
