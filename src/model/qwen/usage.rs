//! Qwen Code: what each record records of tokens (QWEN-FORMAT.md §11).
//!
//! Qwen Code writes every API call it makes as a `system`/`ui_telemetry` record whose
//! `uiEvent` is `qwen-code.api_response` (`model`, `input_token_count`,
//! `output_token_count`, `cached_content_token_count`, `thoughts_token_count`,
//! `response_id`): the main conversation's calls (each also in its `assistant`
//! record's `usageMetadata`), a subagent's calls (also in the subagent's own
//! transcript) and the compression calls, which no `assistant` record holds. So a
//! request counts **once**, at its `api_response` record, and neither the
//! `usageMetadata` of an answer nor a subagent's transcript adds to it. A file without
//! any `api_response` record (written with them off) counts its answers'
//! `usageMetadata` instead, and its subagents' answers under the call that spawned
//! them.
//!
//! OpenAI-style counts: the input includes the cached tokens (input is
//! `input_token_count` minus `cached_content_token_count`, cache read the cached
//! ones), the output includes the thoughts. Qwen Code records no cost: the tokens are
//! priced with the table (by the model's name, then as `dashscope/NAME`); a model the
//! table lacks has an unknown cost. A fork copies the records of its chain with their
//! `response_id`: `sessionfs usage` over both files counts them once.

use super::{RType, State};
use crate::model::core::session::Session;
use crate::model::core::usage::prices::Prices;
use crate::model::core::usage::{Record, Source, Table, Tokens};
use serde_json::Value;

fn price(prices: &Prices, model: &str, tokens: &Tokens) -> Option<f64> {
    prices
        .rates(model)
        .or_else(|| prices.rates(&format!("dashscope/{model}")))
        .map(|r| r.cost(tokens))
}

fn num(v: &Value, k: &str) -> u64 {
    v.get(k)
        .and_then(Value::as_f64)
        .filter(|n| n.is_finite() && *n > 0.0)
        .map_or(0, |n| n as u64)
}

/// The request an `api_response` record records, and its `response_id`.
pub fn api_response(v: &Value, prices: &Prices) -> Option<(Record, String)> {
    let ev = v.get("systemPayload")?.get("uiEvent")?;
    if ev.get("event.name").and_then(Value::as_str) != Some("qwen-code.api_response") {
        return None;
    }
    let model = ev
        .get("model")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .unwrap_or("unknown")
        .to_string();
    let input = num(ev, "input_token_count");
    let cached = num(ev, "cached_content_token_count");
    let tokens = Tokens {
        input: input.saturating_sub(cached),
        output: num(ev, "output_token_count"),
        cache_read: cached,
        cache_write: 0,
    };
    let cost = price(prices, &model, &tokens);
    let id = ev
        .get("response_id")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    Some((
        Record {
            model,
            source: Source::Message,
            tokens,
            cost,
            recorded: false,
        },
        id,
    ))
}

/// The request an `assistant` record's `usageMetadata` records.
pub fn answer(v: &Value, prices: &Prices) -> Option<Record> {
    let u = v.get("usageMetadata").filter(|u| u.is_object())?;
    let model = v
        .get("model")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .unwrap_or("unknown")
        .to_string();
    let input = num(u, "promptTokenCount");
    let cached = num(u, "cachedContentTokenCount");
    let tokens = Tokens {
        input: input.saturating_sub(cached),
        output: num(u, "candidatesTokenCount"),
        cache_read: cached,
        cache_write: 0,
    };
    let cost = price(prices, &model, &tokens);
    Some(Record {
        model,
        source: Source::Message,
        tokens,
        cost,
        recorded: false,
    })
}

/// Fills `t.own` and `t.reply_keys` for a Qwen Code session.
pub fn fill(s: &Session, st: &State, prices: &Prices, t: &mut Table) {
    let n = s.entries().len().min(st.nodes.len());
    let main: Vec<u32> = (0..n as u32)
        .filter(|&i| s.entry(i).is_node() && st.nodes[i as usize].file == 0)
        .filter(|&i| {
            matches!(
                (st.nodes[i as usize].rtype, st.subtype(i)),
                (RType::System, "ui_telemetry")
            )
        })
        .collect();
    let finder = memchr::memmem::Finder::new(b"qwen-code.api_response");
    let mut any = false;
    s.for_each_entry_bytes(&main, |i, bytes| {
        if finder.find(bytes).is_none() {
            return;
        }
        let Ok(v) = crate::model::core::js::parse_line(bytes) else {
            return;
        };
        if let Some((r, id)) = api_response(&v, prices) {
            any = true;
            t.own[i as usize] = Some(r);
            if !id.is_empty() {
                t.reply_keys.insert(i, (id, String::new()));
            }
        }
    });
    if any {
        return;
    }
    // No telemetry: the answers' own counts, subagents' included.
    let answers: Vec<u32> = (0..n as u32)
        .filter(|&i| s.entry(i).is_node() && st.nodes[i as usize].rtype == RType::Assistant)
        .collect();
    for i in answers {
        if let Ok(v) = s.entry_value(i)
            && let Some(r) = answer(&v, prices)
        {
            t.own[i as usize] = Some(r);
        }
    }
}
