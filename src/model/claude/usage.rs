//! Claude Code: what each line records.
//!
//! * An `assistant` line's `message.usage`: `input_tokens`, `output_tokens`,
//!   `cache_read_input_tokens`, `cache_creation_input_tokens`, under `message.model`.
//!   Claude Code writes one API reply as one line per content block, each carrying the
//!   reply's usage (CLAUDE-FORMAT.md §3.2). The reply is one request, billed once: its
//!   lines (same `message.id` and `requestId`) count once, with the usage of the line
//!   that has the most output tokens (the last such line on a tie), which is the
//!   final count of a streamed reply (an earlier line can carry a partial
//!   `output_tokens`). It is counted at the reply's first line, so the path to any
//!   line of the reply includes it. ccusage 20.0.24 takes the same line (measured on
//!   `tests/fixtures/usage/claude-priced`); older versions kept the first line and
//!   undercounted output (ccusage issues 901, 938).
//! * The file records no cost: it is the tokens priced with the table ([`super::prices`]);
//!   a model it lacks has an unknown cost. `<synthetic>` lines (errors Claude Code
//!   writes itself, no request) count nothing.
//! * **`cost-state`** (2.1.332, CLAUDE-FORMAT.md "2.1.332: what changed" §B): written
//!   at the end of each CLI process, it is Claude Code's own tally of that process's
//!   requests, started from the previous line's (so the last line is the running total
//!   of every process that wrote the file), and after `--fork-session` it starts from
//!   the tally of the session it was forked from. It also counts requests that no line
//!   records (the summary request of `/compact`; in the 2.1.332 samples, 4,436 input
//!   tokens of session `d01acf0b`). So it is no per-entry usage and it is never added
//!   to the lines' sum: the session's `usage` shows it beside that sum, as Claude
//!   Code's own word, with its cost (which also covers models the price table lacks).

use crate::model::core::session::{NIL, Session};
use crate::model::core::usage::prices::Prices;
use crate::model::core::usage::{CostState, Record, Source, Table, Tokens};
use serde_json::Value;
use std::collections::HashMap;

/// Fills `t.own`, `t.counted_at` and `t.cost_state` for a Claude Code session.
pub fn fill(s: &Session, prices: &Prices, t: &mut Table) {
    // (message.id, requestId) -> (first entry, best entry, its usage value)
    let mut groups: HashMap<(String, String), (u32, u32, u64, Record)> = HashMap::new();
    let mut order: Vec<(String, String)> = Vec::new();
    let mut members: HashMap<(String, String), Vec<u32>> = HashMap::new();
    let mut idx: Vec<u32> = (0..s.entries().len() as u32)
        .filter(|&i| s.entry(i).is_node())
        .collect();
    // Each file in line order (a side file's lines come after the main file's).
    idx.sort_by_key(|&i| (!s.in_main_file(i), s.entry(i).line));
    // Read in blocks, not one `pread` per line (see `Session::for_each_entry_bytes`).
    let usage = memchr::memmem::Finder::new(b"\"usage\"");
    s.for_each_entry_bytes(&idx, |i, bytes| {
        if usage.find(bytes).is_none() {
            return;
        }
        let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
            return;
        };
        let Some(r) = record(&v, prices) else {
            return;
        };
        let m = v.get("message");
        let mid = m
            .and_then(|m| m.get("id"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let key = if mid.is_empty() {
            // No id to group by: the line is a reply of its own.
            (format!("\0{i}"), String::new())
        } else {
            let req = v
                .get("requestId")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            (mid, req)
        };
        let out = r.tokens.output;
        members.entry(key.clone()).or_default().push(i);
        match groups.get_mut(&key) {
            None => {
                order.push(key.clone());
                groups.insert(key, (i, i, out, r));
            }
            Some(g) => {
                if out >= g.2 {
                    g.1 = i;
                    g.2 = out;
                    g.3 = r;
                }
            }
        }
    });
    for key in order {
        let (first, _best, _, r) = groups.remove(&key).expect("grouped");
        t.own[first as usize] = Some(r);
        if !key.0.starts_with('\0') {
            t.reply_keys.insert(first, key.clone());
        }
        for &m in &members[&key] {
            if m != first {
                t.counted_at[m as usize] = first;
            }
        }
    }
    t.cost_state = cost_state(s);
    debug_assert!(
        t.counted_at
            .iter()
            .all(|&c| c == NIL || (c as usize) < t.own.len())
    );
}

/// The record of one `assistant` line, if it has a usage (and is no `<synthetic>` line).
pub fn record(v: &Value, prices: &Prices) -> Option<Record> {
    if v.get("type").and_then(Value::as_str) != Some("assistant") {
        return None;
    }
    let m = v.get("message")?;
    let u = m.get("usage")?;
    if !u.is_object() {
        return None;
    }
    let model = m
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_string();
    if model == "<synthetic>" {
        return None;
    }
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    let tokens = Tokens {
        input: n("input_tokens"),
        output: n("output_tokens"),
        cache_read: n("cache_read_input_tokens"),
        cache_write: n("cache_creation_input_tokens"),
    };
    let cost = prices.rates(&model).map(|r| r.cost(&tokens));
    Some(Record {
        model,
        source: Source::Message,
        tokens,
        cost,
        recorded: false,
    })
}

/// The last `cost-state` line of the session file, read as Claude Code wrote it.
pub fn cost_state(s: &Session) -> Option<CostState> {
    let (v, lines) = last_cost_state_line(s)?;
    Some(cost_state_of(&v, lines))
}

/// The last `cost-state` line of the session file as written (in its key order), and
/// how many the file holds.
pub fn last_cost_state_line(s: &Session) -> Option<(Value, u32)> {
    // Through the descriptor the session was indexed from (no second open).
    let mut buf = vec![0u8; usize::try_from(s.scanned_bytes()).ok()?];
    s.read_exact_at(&mut buf, 0).ok()?;
    let mut last = None;
    let mut lines = 0u32;
    // Each line that holds the word, in order: found by one search over the whole
    // buffer (splitting a 100 MB file into lines first cost more than the rest).
    let mut done_to = 0;
    for at in memchr::memmem::find_iter(&buf, b"\"cost-state\"") {
        if at < done_to {
            continue; // a second hit in a line already read
        }
        let start = memchr::memrchr(b'\n', &buf[..at]).map_or(0, |n| n + 1);
        let end = memchr::memchr(b'\n', &buf[at..]).map_or(buf.len(), |n| at + n);
        done_to = end;
        let line = &buf[start..end];
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        if v.get("type").and_then(Value::as_str) != Some("cost-state") {
            continue;
        }
        lines += 1;
        last = Some(v);
    }
    Some((last?, lines))
}

fn cost_state_of(v: &Value, lines: u32) -> CostState {
    let mut tokens = Tokens::default();
    let mut models = Vec::new();
    if let Some(mu) = v.get("modelUsage").and_then(Value::as_object) {
        for (name, m) in mu {
            let n = |k: &str| m.get(k).and_then(Value::as_u64).unwrap_or(0);
            tokens.input += n("inputTokens");
            tokens.output += n("outputTokens");
            tokens.cache_read += n("cacheReadInputTokens");
            tokens.cache_write += n("cacheCreationInputTokens");
            models.push((
                name.clone(),
                m.get("costUSD").and_then(Value::as_f64).unwrap_or(0.0),
            ));
        }
    }
    CostState {
        cost: v.get("totalCostUSD").and_then(Value::as_f64).unwrap_or(0.0),
        tokens,
        models,
        unknown_model_cost: v
            .get("hasUnknownModelCost")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        lines,
    }
}
