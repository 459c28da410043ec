//! Codex: what a thread's requests cost, from the accounting lines Codex writes.
//!
//! Codex 0.171.0 writes two accounting lines per model request (CODEX-FORMAT §2),
//! right after the response's output items:
//!
//! * `token_usage_record`: `usage` is **that request's** tokens, `response_id` names
//!   it; `turn_token_usage` and `thread_token_usage` are running sums.
//! * `event_msg` `token_count`: `info.last_token_usage` is the same request's tokens
//!   again, `info.total_token_usage` the running sum. Codex also writes it when
//!   nothing was requested: at the start of some turns and after a compaction it
//!   repeats the last sum (`total_token_usage` unchanged, `last_token_usage` either
//!   the previous request's or a new context estimate), and with `info: null` it
//!   carries only rate limits.
//!
//! So a request is counted **once**, from its `token_usage_record`; a `token_count`
//! counts only when no record came before it since the last `token_count` (files of
//! Codex versions that write no records) and its running sum moved (a repeat moved
//! nothing). Running sums are never added up: they cover whatever Codex had in
//! memory, and summing them counts every request again at every turn.
//!
//! **Branches.** The running sums follow the history, not the file: a rewind page or a
//! fork continues from the sum at its `history_base` cut (measured: page
//! `…-0c87` of `own`'s thread `…-df11` starts at 13,457 + its own 13,549), and a
//! rewind to before the first prompt starts again from 0. That is the tree the
//! mount shows, so each record is counted at a node of that tree and every path sums
//! the records on it: a branch's cost is its turns', the turns it shares with
//! another branch (the base prefix of a page) are the same lines and count once in
//! the session, and the dead turns after a cut are a dead end. A record counts at
//! the first output item of its response (the reasoning or message the request
//! produced: the node the request's answer starts at, as [`super::agent`]'s
//! `request_of` walks back from it); the response's later outputs say where it is
//! counted. A record with no output before it counts at the next node.
//!
//! **Tokens.** OpenAI's `input_tokens` includes the cached ones, and
//! `output_tokens` includes `reasoning_output_tokens` (`total_tokens` = input +
//! output in every record of the fixtures). The core's tokens are disjoint, so input
//! is `input_tokens − cached_input_tokens − cache_write_input_tokens`, cache read
//! `cached_input_tokens`, cache write `cache_write_input_tokens`, output
//! `output_tokens` (reasoning included, as it is billed). The model is the last
//! `turn_context.model` (or `thread_settings_applied`'s) before the record in the
//! history; the file records no cost, so the tokens are priced with the core's table,
//! and a model the table lacks has an unknown cost.
//!
//! A subagent is a thread of its own (§6): its requests count in its own session.
//! A fork's session shows the parent's lines it inherits, so they count there too
//! (what it cost to get there); `sessionfs usage` counts such a line once over the
//! sessions it reads, keyed by its page and byte offset.

use super::page::LineKind;
use super::store::{Codex, LineRef, NodeIx, Reader};
use crate::model::core::usage::Tokens;
use serde_json::Value;
use std::collections::HashSet;

/// One request, as a thread's lines record it.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Where it counts: the first output of its response.
    pub node: NodeIx,
    /// The other outputs of its response (they say where it counts).
    pub also: Vec<NodeIx>,
    /// The accounting line.
    pub line: LineRef,
    pub model: String,
    pub tokens: Tokens,
    /// `response_id` of a `token_usage_record`.
    pub response_id: Option<String>,
}

/// Every request recorded in the history of thread `t`'s pages, each once. Only the
/// accounting lines and the turns' settings are read from the pages; a line that
/// cannot be read is left out.
pub fn requests(codex: &Codex, t: usize) -> Vec<Request> {
    let mut out = Vec::new();
    let mut seen: HashSet<LineRef> = HashSet::new();
    let mut reader = codex.reader();
    for &p in &codex.threads[t].pages {
        let h = codex.history(p, None);
        let mut walk = Walk::default();
        for r in h.lines() {
            let line = codex.line(r);
            if line.kind.is_node() {
                let Some(n) = codex.node_of(r) else { continue };
                walk.last = Some(n);
                for (lr, model, tokens, rid) in std::mem::take(&mut walk.waiting) {
                    if seen.insert(lr) {
                        out.push(request(codex, n, None, lr, model, tokens, rid));
                    }
                    walk.boundary = Some(n);
                }
                continue;
            }
            let Some((tokens, rid)) = walk.read(codex, r, &mut reader) else {
                continue;
            };
            let model = walk.model.clone().unwrap_or_else(|| "unknown".to_string());
            match walk.last {
                Some(n) => {
                    if seen.insert(r) {
                        out.push(request(codex, n, walk.boundary, r, model, tokens, rid));
                    }
                    walk.boundary = Some(n);
                }
                None => walk.waiting.push((r, model, tokens, rid)),
            }
        }
    }
    out.sort_by_key(|q| (q.line.page, q.line.line));
    out
}

/// What a walk along one history knows at a line.
#[derive(Default)]
struct Walk {
    last: Option<NodeIx>,
    /// The last node of the previous request's response: the next response's outputs
    /// come after it (a compaction's summary follows the last answer directly).
    boundary: Option<NodeIx>,
    model: Option<String>,
    /// The last `token_count`'s running sum.
    total: Option<Value>,
    /// A `token_usage_record` came since the last `token_count`.
    recorded: bool,
    /// Records before any node, for the next node.
    waiting: Vec<(LineRef, String, Tokens, Option<String>)>,
}

impl Walk {
    /// Takes a bookkeeping line in; a request's tokens if it records one to count.
    fn read(
        &mut self,
        codex: &Codex,
        r: LineRef,
        reader: &mut Reader<'_>,
    ) -> Option<(Tokens, Option<String>)> {
        let kind = codex.line(r).kind;
        let event = codex.payload_type(r);
        let wanted = match kind {
            LineKind::TurnContext | LineKind::TokenUsageRecord => true,
            LineKind::EventMsg => matches!(event, Some("thread_settings_applied" | "token_count")),
            _ => false,
        };
        if !wanted {
            return None;
        }
        let v = match reader.value(r) {
            Ok(v) => v,
            Err(e) => {
                log::debug!("{e}");
                return None;
            }
        };
        let p = &v["payload"];
        match kind {
            LineKind::TurnContext => {
                self.set_model(&p["model"]);
                None
            }
            LineKind::EventMsg if p["type"] == "thread_settings_applied" => {
                self.set_model(&p["thread_settings"]["model"]);
                None
            }
            LineKind::TokenUsageRecord => {
                self.recorded = true;
                let rid = p["response_id"].as_str().map(str::to_string);
                tokens(&p["usage"]).map(|t| (t, rid))
            }
            LineKind::EventMsg if p["type"] == "token_count" => {
                let info = &p["info"];
                if !info.is_object() {
                    return None;
                }
                let total = info["total_token_usage"].clone();
                let moved = !total.is_null() && self.total.as_ref() != Some(&total);
                if !total.is_null() {
                    self.total = Some(total);
                }
                let recorded = std::mem::take(&mut self.recorded);
                if !moved || recorded {
                    return None;
                }
                tokens(&info["last_token_usage"]).map(|t| (t, None))
            }
            _ => None,
        }
    }

    fn set_model(&mut self, v: &Value) {
        if let Some(m) = v.as_str().filter(|m| !m.is_empty()) {
            self.model = Some(m.to_string());
        }
    }
}

/// The core's tokens of a Codex usage object (see the module doc), if it is one.
pub fn tokens(u: &Value) -> Option<Tokens> {
    if !u.is_object() {
        return None;
    }
    let n = |k: &str| u[k].as_u64().unwrap_or(0);
    let cache_read = n("cached_input_tokens");
    let cache_write = n("cache_write_input_tokens");
    Some(Tokens {
        input: n("input_tokens").saturating_sub(cache_read + cache_write),
        output: n("output_tokens"),
        cache_read,
        cache_write,
    })
}

/// The request recorded at `line`, whose last output before it is node `last`; its
/// first output comes after `boundary`.
fn request(
    codex: &Codex,
    last: NodeIx,
    boundary: Option<NodeIx>,
    line: LineRef,
    model: String,
    tokens: Tokens,
    response_id: Option<String>,
) -> Request {
    // Back from the last output to the response's first one.
    let mut first = last;
    let mut also = Vec::new();
    if is_output(codex, last) && Some(last) != boundary {
        while let Some(p) = codex.parent(first) {
            if Some(p) == boundary || !is_output(codex, p) {
                break;
            }
            also.push(first);
            first = p;
        }
    }
    also.reverse();
    Request {
        node: first,
        also,
        line,
        model,
        tokens,
        response_id,
    }
}

/// Is node `n` a model output (what a response holds)? From what the index keeps of
/// its line: its payload's `type`, and a message's `role`.
pub fn is_output(codex: &Codex, n: NodeIx) -> bool {
    let r = codex.nodes[n];
    if codex.line(r).kind != LineKind::ResponseItem {
        return false;
    }
    match codex.payload_type(r).unwrap_or("") {
        "message" => codex.payload_role(r) == Some("assistant"),
        "reasoning"
        | "function_call"
        | "custom_tool_call"
        | "local_shell_call"
        | "web_search_call"
        | "image_generation_call"
        | "tool_search_call" => true,
        _ => false,
    }
}
