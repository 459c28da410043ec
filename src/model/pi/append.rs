//! Pi's lines for a reply, a name or a label: Pi's key order (`type, id, parentId,
//! timestamp, payload`), serialized as `JSON.stringify` would (one line, no spaces,
//! non-ASCII raw). Writing them is the core's ([`crate::model::core::append`]).
//!
//! v1 files are refused: their ids exist only in memory (see [`super::migrate`]).

use crate::model::core::reply::{AppendError, NewEntry, sanitize_name};
use crate::model::core::session::Session;
use crate::model::core::time::format_iso_ms;
use serde_json::{Value, json};
use std::io;

/// Pi's line for `what` (see [`Session::build_line`]).
pub(crate) fn build_pi_line(
    s: &Session,
    what: &NewEntry<'_>,
    now: i64,
    batch: &[String],
) -> Result<(String, Vec<u8>), AppendError> {
    if s.is_v1() {
        return Err(AppendError::LegacyV1);
    }
    let id = loop {
        let id = s.new_id();
        if !batch.contains(&id) {
            break id;
        }
    };
    let ts = format_iso_ms(now);
    let leaf_id = || -> Value {
        if let Some(last) = batch.last() {
            return Value::String(last.clone());
        }
        match s.leaf() {
            Some(l) if !s.entry(l).id.is_none() => Value::String(s.id_string(l)),
            _ => Value::Null,
        }
    };
    let v = match what {
        NewEntry::Reply { parent, text } => {
            let parent = match parent {
                Some(p) => {
                    let n = s
                        .find(p)
                        .ok_or_else(|| AppendError::NoSuchEntry(p.to_string()))?;
                    Value::String(s.id_string(n))
                }
                None => Value::Null,
            };
            json!({
                "type": "message",
                "id": id,
                "parentId": parent,
                "timestamp": ts,
                "message": {
                    "role": "user",
                    "content": [{"type": "text", "text": text}],
                    "timestamp": now,
                },
            })
        }
        NewEntry::Name(name) => json!({
            "type": "session_info",
            "id": id,
            "parentId": leaf_id(),
            "timestamp": ts,
            "name": sanitize_name(name),
        }),
        NewEntry::Label { target, label } => {
            let n = s
                .find(target)
                .ok_or_else(|| AppendError::NoSuchEntry(target.to_string()))?;
            let target = s.id_string(n);
            let mut v = json!({
                "type": "label",
                "id": id,
                "parentId": leaf_id(),
                "timestamp": ts,
                "targetId": target,
            });
            if let Some(l) = label {
                if l.is_empty() || l.contains(['\n', '\r']) {
                    return Err(AppendError::BadLabel(l.to_string()));
                }
                v["label"] = Value::String(l.to_string());
            }
            v
        }
    };
    let mut line = serde_json::to_vec(&v).map_err(|e| AppendError::Io(io::Error::other(e)))?;
    line.push(b'\n');
    Ok((id, line))
}
