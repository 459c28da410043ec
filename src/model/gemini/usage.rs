//! Gemini CLI: what each record says a request used (GEMINI-FORMAT §2.2).
//!
//! A `gemini` record written live carries the response's `usageMetadata` as `tokens`
//! (`input` = `promptTokenCount`, cached tokens included; `output`; `cached`;
//! `thoughts`; `tool`, the tool-use prompt; `total`) and the `model` that answered:
//! one per model response. The copies a resume writes in `$set.messages` have no
//! tokens, and a record written again (its tool results) repeats the same ones: each
//! message counts once, with its last live record, which is the record its entry
//! shows. The CLI records no cost: tokens are priced with the table, as the Gemini API
//! bills them: input not read from the cache and the tool-use prompt at the input
//! rate, cached tokens at the cache-read rate, output and thoughts at the output rate
//! (so the four add up to the record's `total`).
//!
//! A subagent's replies count in its own entries, which hang under the call that ran
//! it: its cost adds to that call's running total, as a Claude Code subagent's does.

use super::index::Gemini;
use crate::model::core::session::Session;
use crate::model::core::usage::prices::Prices;
use crate::model::core::usage::{Record, Source, Table, Tokens};
use serde_json::Value;

/// The tokens a live `gemini` record holds, with its model.
pub fn record_tokens(v: &Value) -> Option<(String, Tokens)> {
    if v.get("type").and_then(Value::as_str) != Some("gemini") {
        return None;
    }
    let t = v.get("tokens")?.as_object()?;
    let n = |k: &str| {
        t.get(k)
            .and_then(Value::as_f64)
            .map_or(0, |x| x.max(0.0) as u64)
    };
    let (input, output, cached, thoughts, tool) = (
        n("input"),
        n("output"),
        n("cached"),
        n("thoughts"),
        n("tool"),
    );
    let model = v
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_string();
    Some((
        model,
        Tokens {
            input: input.saturating_sub(cached).saturating_add(tool),
            output: output.saturating_add(thoughts),
            cache_read: cached.min(input),
            cache_write: 0,
        },
    ))
}

/// Fills `t.own` (and the keys that name each reply in any file) for a Gemini CLI
/// session.
pub fn fill(s: &Session, g: &Gemini, prices: &Prices, t: &mut Table) {
    let idx: Vec<u32> = (0..s.entries().len() as u32)
        .filter(|&i| s.entry(i).is_node() && g.msg_of(s, i).is_some())
        .collect();
    let tokens = memchr::memmem::Finder::new(b"\"tokens\"");
    for i in idx {
        let Ok(bytes) = s.entry_bytes(i) else {
            continue;
        };
        if tokens.find(&bytes).is_none() {
            continue;
        }
        let Ok(v) = crate::model::core::js::parse_line(&bytes) else {
            continue;
        };
        let Some((model, tok)) = record_tokens(&v) else {
            continue;
        };
        let cost = prices.rates(&model).map(|r| r.cost(&tok));
        t.own[i as usize] = Some(Record {
            model,
            source: Source::Message,
            tokens: tok,
            cost,
            recorded: false,
        });
        // `--session-file` imports a session with its records' ids: the same reply
        // in two sessions is counted once.
        let ts = v
            .get("timestamp")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        t.reply_keys
            .insert(i, (format!("gemini:{}", s.id_string(i)), ts));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tokens_add_up_to_the_total() {
        let v = json!({"type":"gemini","model":"m",
            "tokens":{"input":11560,"output":48,"cached":1000,"thoughts":12,"tool":5,"total":11625}});
        let (m, t) = record_tokens(&v).unwrap();
        assert_eq!(m, "m");
        assert_eq!(t.total(), 11625);
        assert_eq!((t.input, t.output, t.cache_read), (10565, 60, 1000));
        assert!(record_tokens(&json!({"type":"user","tokens":{}})).is_none());
    }
}
