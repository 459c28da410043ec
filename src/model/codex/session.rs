//! A thread as a session: `session.json`, its name, and the bookkeeping lines read for
//! what they mean (turns, models, token usage).

use serde_json::{Map, Value};

use super::page::LineKind;
use super::render;
use super::store::{Codex, NodeIx};
use std::io;

/// The `session_meta` fields `session.json` leaves out: the base instructions (tens of
/// kilobytes, shown first in `context` instead, §5.5).
pub const OMITTED_META_KEYS: &[&str] = &["base_instructions"];

/// `session.json`: the first page's `session_meta.payload` in its stored key order,
/// without [`OMITTED_META_KEYS`], plus what sessionfs knows beyond the file:
/// `pages` (the thread's page files, oldest first) and `current_page` (§4). The
/// payload is read from the page.
pub fn session_json(codex: &Codex, t: usize) -> io::Result<Value> {
    let mut out = Map::new();
    if let Some(p) = codex.meta_page(t)
        && let Some(Value::Object(m)) = codex.meta_payload(p)?
    {
        for (k, v) in m {
            if !OMITTED_META_KEYS.contains(&k.as_str()) {
                out.insert(k, v);
            }
        }
    }
    let th = &codex.threads[t];
    let name = |p: usize| {
        Value::String(
            codex.pages[p]
                .file
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        )
    };
    out.insert(
        "pages".to_string(),
        Value::Array(th.pages.iter().map(|&p| name(p)).collect()),
    );
    out.insert("current_page".to_string(), name(th.current_page));
    Ok(Value::Object(out))
}

/// The thread's name as Codex's picker shows it ([`super::state::State::name`]: its
/// name, else its `preview`), else (no row: a thread Codex has not listed yet) the
/// first prompt typed in its whole history, as `preview` would hold it, else its id.
pub fn name(codex: &Codex, t: usize) -> String {
    let id = &codex.threads[t].id;
    if let Some(n) = codex.state.name(id) {
        return n.to_string();
    }
    first_prompt(codex, t).unwrap_or_else(|| id.clone())
}

/// The first prompt a user typed in the thread's history: a fork's is the one it
/// inherited from its parent (as Codex's `preview`, §7), read from the parent's page.
/// Only user messages are read.
pub fn first_prompt(codex: &Codex, t: usize) -> Option<String> {
    let th = &codex.threads[t];
    let earliest = th.first_page.or_else(|| th.pages.first().copied())?;
    let hist = codex.history(earliest, None);
    let mut reader = codex.reader();
    hist.lines().find_map(|r| {
        let l = codex.line(r);
        if l.kind != LineKind::ResponseItem
            || l.meta_user
            || codex.payload_type(r) != Some("message")
            || codex.payload_role(r) != Some("user")
        {
            return None;
        }
        let v = reader.value(r).ok()?;
        render::typed_prompt(&v["payload"])
    })
}

/// The turn a node belongs to, from the bookkeeping lines before it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Turn {
    /// `turn_context.turn_id` (or `task_started.turn_id`).
    pub turn_id: Option<String>,
    /// `turn_context.model`.
    pub model: Option<String>,
    /// The `token_usage_record.usage` of that turn's requests so far, one per request.
    pub usage: Vec<Value>,
}

/// The turn of node `n`: the last `turn_context`/`task_started` before it in its
/// history, and the token records of that turn found anywhere in the history up to the
/// node's page end.
pub fn turn_at(codex: &Codex, n: NodeIx) -> io::Result<Turn> {
    let r = codex.nodes[n];
    let hist = codex.history(r.page, None);
    let mut turn = Turn::default();
    let mut past = false;
    let mut reader = codex.reader();
    for lr in hist.lines() {
        let line = codex.line(lr);
        let event = codex.payload_type(lr);
        match line.kind {
            LineKind::TurnContext if !past => {
                let p = reader.value(lr)?;
                let p = &p["payload"];
                let id = p["turn_id"].as_str().map(str::to_string);
                if id != turn.turn_id {
                    turn.usage.clear();
                }
                turn.turn_id = id;
                turn.model = p["model"].as_str().map(str::to_string);
            }
            LineKind::EventMsg if !past && event == Some("task_started") => {
                let p = reader.value(lr)?;
                let id = p["payload"]["turn_id"].as_str().map(str::to_string);
                if id != turn.turn_id {
                    turn.usage.clear();
                    turn.model = None;
                }
                turn.turn_id = id;
            }
            LineKind::TokenUsageRecord => {
                let mut p = reader.value(lr)?;
                let p = &mut p["payload"];
                if turn.turn_id.is_some() && p["turn_id"].as_str() == turn.turn_id.as_deref() {
                    turn.usage.push(p["usage"].take());
                } else if past {
                    // A record of a later turn: this node's turn is over.
                    break;
                }
            }
            _ => {}
        }
        if lr == r {
            past = true;
        }
    }
    Ok(turn)
}
