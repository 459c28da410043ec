//! The lines of a user turn, as Codex writes them when a turn starts (CODEX-FORMAT.md
//! §9.1), and the `session_meta` of a new page (§3.2, §9.2).
//!
//! Keys are written in Codex's order (serde_json keeps insertion order here), compact,
//! one line each, ending in `\n`.

use crate::model::core::id::uuid_string;
use crate::model::core::time::format_iso_ms;
use serde_json::{Map, Value, json};

/// Which lines a reply writes; see the module doc of `codex::write` for why `Turn` is the
/// default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Shape {
    /// What Codex writes when a user turn starts: `thread_settings_applied` (a copy of
    /// the last), `task_started`, `turn_context` (a copy of the last, new turn id), the
    /// `response_item` user message with its `internal_…` and `metadata`, and
    /// `item_completed UserMessage`; then `task_complete` without an answer, which
    /// closes the turn.
    #[default]
    Turn,
    /// Only the `response_item` user message with `timestamp` and `ordinal`: the
    /// smallest line Codex takes.
    Minimal,
}

/// A UUIDv7 for `ms`, as Codex's ids are (thread, page, turn and message ids).
pub fn uuid7(ms: i64) -> String {
    let mut b = [0u8; 16];
    random_bytes(&mut b);
    let ms = (ms.max(0) as u64).to_be_bytes();
    b[..6].copy_from_slice(&ms[2..8]);
    b[6] = 0x70 | (b[6] & 0x0f);
    b[8] = 0x80 | (b[8] & 0x3f);
    uuid_string(&b)
}

fn random_bytes(b: &mut [u8]) {
    let mut got = 0;
    while got < b.len() {
        // SAFETY: the pointer and length name the unfilled tail of `b`.
        let n = unsafe { libc::getrandom(b[got..].as_mut_ptr().cast(), b.len() - got, 0) };
        if n > 0 {
            got += n as usize;
        } else if n < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            // No kernel randomness: the time-ordered part still makes ids distinct
            // enough for one writer; mix in the address and the clock.
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos() as u64;
            for (i, x) in b[got..].iter_mut().enumerate() {
                *x = (t >> ((i % 8) * 8)) as u8 ^ (i as u8).wrapping_mul(151);
            }
            return;
        }
    }
}

/// What the history before the reply holds that the new lines copy or count.
#[derive(Debug, Default)]
pub struct Before {
    pub turn_context: Option<Value>,
    pub settings_applied: Option<Value>,
    pub history_sequence: u64,
    pub sampled_through_sequence: u64,
    pub user_input_order: Option<u64>,
}

impl Before {
    pub fn of(history: &[Value]) -> Before {
        let mut b = Before::default();
        for d in history {
            let p = d.get("payload");
            match d.get("type").and_then(Value::as_str) {
                Some("turn_context") => b.turn_context = p.cloned(),
                Some("event_msg")
                    if p.and_then(|p| p.get("type")).and_then(Value::as_str)
                        == Some("thread_settings_applied") =>
                {
                    b.settings_applied = p.cloned()
                }
                _ => {}
            }
            if let Some(md) = d.get("metadata") {
                if let Some(h) = md.get("history_sequence").and_then(Value::as_u64) {
                    b.history_sequence = b.history_sequence.max(h);
                }
                if let Some(s) = md.get("sampled_through_sequence").and_then(Value::as_u64) {
                    b.sampled_through_sequence = s;
                }
                if let Some(o) = md.get("user_input_order").and_then(Value::as_u64) {
                    b.user_input_order = Some(b.user_input_order.map_or(o, |x| x.max(o)));
                }
            }
        }
        b
    }
}

/// The lines of the turn, ordinals from `ordinal`; returns them and the message id.
pub fn user_turn(
    before: &Before,
    thread_id: &str,
    text: &str,
    ordinal: u64,
    now_ms: i64,
    shape: Shape,
) -> (Vec<Value>, String) {
    let ts = format_iso_ms(now_ms);
    let turn = uuid7(now_ms);
    let mid = format!("msg_{}", uuid7(now_ms));
    let mut item = json!({
        "type": "message",
        "id": mid,
        "role": "user",
        "content": [{"type": "input_text", "text": text}],
    });
    if shape == Shape::Minimal {
        let line =
            json!({"timestamp": ts, "ordinal": ordinal, "type": "response_item", "payload": item});
        return (vec![line], mid);
    }
    item["internal_chat_message_metadata_passthrough"] = json!({
        "turn_id": turn,
        "create_time": now_ms as f64 / 1000.0,
        "content_item_kinds": ["user.text"],
        "content_item_metadata": [{"provenance": {"type": "user"}}],
    });
    let mut out: Vec<(&str, Value, Option<Value>)> = Vec::new();
    if let Some(Value::Object(s)) = &before.settings_applied {
        let mut s = s.clone();
        s.insert("thread_id".into(), Value::String(thread_id.into()));
        out.push(("event_msg", Value::Object(s), None));
    }
    out.push((
        "event_msg",
        json!({
            "type": "task_started",
            "turn_attribution": {
                "turn_id": turn, "turn_trigger": "user", "parent_turn_id": null,
                "initiating_agent_path": null, "root_turn_id": turn,
            },
            "turn_id": turn,
            "root_turn_id": turn,
            "started_at": now_ms / 1000,
            "model_context_window": 258400,
            "collaboration_mode_kind": "default",
        }),
        None,
    ));
    if let Some(Value::Object(tc)) = &before.turn_context {
        let mut tc = tc.clone();
        tc.insert("turn_id".into(), Value::String(turn.clone()));
        tc.insert("root_turn_id".into(), Value::String(turn.clone()));
        out.push(("turn_context", Value::Object(tc), None));
    }
    let metadata = json!({
        "history_sequence": before.history_sequence + 1,
        "sampled_through_sequence": before.sampled_through_sequence,
        "retained_source": {
            "id": {"message_id": mid, "turn_id": turn, "role": "user"},
            "revision": format!("retained_{}", uuid7(now_ms)),
            "complete": true,
        },
        "client_authored": false,
        "user_input_order": before.user_input_order.map_or(0, |o| o + 1),
        "mcp_attribution": {"status": "none"},
        "model_search_state": "unused",
    });
    out.push(("response_item", item, Some(metadata)));
    out.push((
        "event_msg",
        json!({
            "type": "item_completed",
            "thread_id": thread_id,
            "turn_id": turn,
            "item": {
                "type": "UserMessage",
                "id": uuid7(now_ms),
                "content": [{"type": "text", "text": text, "text_elements": []}],
            },
            "started_at_ms": now_ms,
            "completed_at_ms": now_ms,
        }),
        None,
    ));
    // Closed, with no answer: left open, the TUI shows the turn as "Conversation
    // interrupted" on resume (scripts/codex-tui-transcript); closed, it shows the
    // message and waits. `exec resume` sends the same request either way.
    out.push((
        "event_msg",
        json!({
            "type": "task_complete",
            "root_turn_id": turn,
            "turn_id": turn,
            "last_agent_message": null,
            "started_at": now_ms / 1000,
            "completed_at": now_ms / 1000,
            "duration_ms": 0,
        }),
        None,
    ));
    let lines = out
        .into_iter()
        .enumerate()
        .map(|(k, (ty, payload, md))| {
            let mut l = Map::new();
            l.insert("timestamp".into(), Value::String(ts.clone()));
            l.insert("ordinal".into(), Value::from(ordinal + k as u64));
            l.insert("type".into(), Value::String(ty.into()));
            l.insert("payload".into(), payload);
            if let Some(md) = md {
                l.insert("metadata".into(), md);
            }
            Value::Object(l)
        })
        .collect();
    (lines, mid)
}

/// The `session_meta` payload of a new page of the thread: the first page's with a new
/// `timestamp` and its `history_base` replaced (placed right after `history_mode`). That
/// is exactly what the TUI's rewind writes, also in a forked thread, where
/// `forked_from_id` and `forked_from_ordinal_exclusive` stay (measured:
/// `tests/fixtures/codex/own`, thread `own`, the fork's second page).
pub fn page_meta(
    first: &Map<String, Value>,
    base_page_id: &str,
    end_ordinal_exclusive: u64,
    end_byte_offset: u64,
    now_ms: i64,
) -> Value {
    let base = json!({
        "thread_id": base_page_id,
        "end_ordinal_exclusive": end_ordinal_exclusive,
        "end_byte_offset": end_byte_offset,
    });
    let mut p = Map::new();
    for (k, v) in first {
        match k.as_str() {
            "history_base" => {}
            "timestamp" => {
                p.insert(k.clone(), Value::String(format_iso_ms(now_ms)));
            }
            "history_mode" => {
                p.insert(k.clone(), v.clone());
                p.insert("history_base".into(), base.clone());
            }
            _ => {
                p.insert(k.clone(), v.clone());
            }
        }
    }
    p.entry("history_base").or_insert(base);
    Value::Object(p)
}

/// Lines as bytes: compact JSON, each ending in `\n`.
pub fn to_bytes(lines: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for l in lines {
        // A Value always serialises.
        serde_json::to_writer(&mut out, l).expect("serialising a JSON value");
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid7_is_time_ordered_and_versioned() {
        let a = uuid7(1_796_153_893_510);
        assert!(a.starts_with("01a2331d-6286-7"), "{a}");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"), "{a}");
        assert_ne!(uuid7(1), uuid7(1));
    }

    #[test]
    fn turn_copies_settings_and_counts_on() {
        let hist = vec![
            json!({"type": "turn_context", "payload": {"turn_id": "old", "root_turn_id": "old", "cwd": "/p"}}),
            json!({"type": "event_msg", "payload": {"type": "thread_settings_applied", "thread_id": "t", "thread_settings": {}}}),
            json!({"type": "response_item", "payload": {}, "metadata": {"history_sequence": 7, "sampled_through_sequence": 5, "user_input_order": 2}}),
        ];
        let b = Before::of(&hist);
        let (lines, mid) = user_turn(&b, "t", "hé\nthere", 40, 1_796_153_893_510, Shape::Turn);
        let types: Vec<_> = lines
            .iter()
            .map(|l| {
                let t = l["type"].as_str().unwrap();
                match l["payload"]["type"].as_str() {
                    Some(p) if t == "event_msg" => p.to_string(),
                    _ => t.to_string(),
                }
            })
            .collect();
        assert_eq!(
            types,
            [
                "thread_settings_applied",
                "task_started",
                "turn_context",
                "response_item",
                "item_completed",
                "task_complete"
            ]
        );
        let ords: Vec<_> = lines
            .iter()
            .map(|l| l["ordinal"].as_u64().unwrap())
            .collect();
        assert_eq!(ords, [40, 41, 42, 43, 44, 45]);
        assert_eq!(
            lines[5]["payload"]["turn_id"],
            lines[1]["payload"]["turn_id"]
        );
        let turn = lines[1]["payload"]["turn_id"].as_str().unwrap();
        assert_eq!(lines[2]["payload"]["turn_id"], turn);
        assert_eq!(lines[2]["payload"]["cwd"], "/p");
        assert_eq!(lines[3]["payload"]["id"], mid.as_str());
        assert_eq!(lines[3]["payload"]["content"][0]["text"], "hé\nthere");
        assert_eq!(lines[3]["metadata"]["history_sequence"], 8);
        assert_eq!(lines[3]["metadata"]["user_input_order"], 3);
        assert_eq!(lines[0]["timestamp"], "2026-12-01T19:38:13.510Z");
        let bytes = to_bytes(&lines);
        assert_eq!(bytes.iter().filter(|&&c| c == b'\n').count(), 6);
        let (min, _) = user_turn(&b, "t", "x", 9, 0, Shape::Minimal);
        assert_eq!(min.len(), 1);
        let keys: Vec<_> = min[0].as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["timestamp", "ordinal", "type", "payload"]);
    }

    #[test]
    fn page_meta_keeps_fork_fields_and_replaces_the_base() {
        let first = json!({"session_id": "t", "id": "t", "forked_from_id": "p", "forked_from_ordinal_exclusive": 3,
            "timestamp": "old", "history_mode": "paginated", "history_base": {"thread_id": "p"}, "context_window": {}});
        let m = page_meta(first.as_object().unwrap(), "page", 12, 3456, 0);
        let keys: Vec<_> = m.as_object().unwrap().keys().cloned().collect();
        assert_eq!(
            keys,
            [
                "session_id",
                "id",
                "forked_from_id",
                "forked_from_ordinal_exclusive",
                "timestamp",
                "history_mode",
                "history_base",
                "context_window"
            ]
        );
        assert_eq!(m["history_base"]["end_byte_offset"], 3456);
        assert_eq!(m["history_base"]["thread_id"], "page");
        assert_eq!(m["timestamp"], "1970-01-01T00:00:00.000Z");
        assert_eq!(m["forked_from_id"], "p");
    }
}
