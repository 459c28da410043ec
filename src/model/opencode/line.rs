//! A message as one line of JSON: the bytes an entry's byte range covers.
//!
//! The core indexes byte ranges (see `core::session::Source`); a message of opencode is
//! a `message` row and its `part` rows. Each message is written once into memory as
//! the object opencode's own API returns for it (`MessageV2.WithParts`,
//! OPENCODE-FORMAT.md §2):
//!
//! ```text
//! {"info":{"id":"msg_…","sessionID":"ses_…",…the row's data…},
//!  "parts":[{"id":"prt_…","sessionID":"ses_…","messageID":"msg_…",…the part's data…},…]}
//! ```
//!
//! The ids go in front of each `data`, whose own text follows byte for byte (so a
//! search of the line finds what the row holds, escapes and all). A `data` that is not
//! a JSON object (a damaged row, §10) cannot be spliced: the message's `info` is its
//! ids alone and the text is kept as a string under `"damaged"`; such a part is kept
//! the same way in `"damagedParts"`.
//!
//! What the mount shows of a message because of where it is, when the rows of other
//! sessions say it, goes into the line too ([`Extra`]), so that everything a KIND file
//! shows is in its line or made up by the renderer (what `sessionfs grep`'s prefilter
//! relies on): `"deleted"` for a message opencode deleted (from its event log),
//! `"subagent"` (the subagent's session id and title) on the first message of a
//! subagent's session, `"hidden":true` on a message a pending `/undo` hides (the
//! session's `revert`: when it moves, the lines of the messages it hid or hides are
//! written again).

use super::store::MessageRec;
use serde_json::Value;
use std::hash::{Hash, Hasher};

/// Whether `data` is the text of a JSON object, which the line can splice.
fn object_text(data: &str) -> Option<&str> {
    let t = data.trim();
    if !t.starts_with('{') {
        return None;
    }
    match serde_json::from_str::<Value>(t) {
        Ok(Value::Object(_)) => Some(t),
        _ => None,
    }
}

fn push_json_str(out: &mut String, s: &str) {
    crate::model::core::js::write_json(out, &Value::String(s.to_string()), None, 0);
}

/// `{"k1":"v1",…` followed by the rest of `obj` (an object's text).
fn splice(out: &mut String, ids: &[(&str, &str)], obj: &str) {
    out.push('{');
    for (k, (name, val)) in ids.iter().enumerate() {
        if k > 0 {
            out.push(',');
        }
        push_json_str(out, name);
        out.push(':');
        push_json_str(out, val);
    }
    let inner = obj[1..obj.len() - 1].trim();
    if !inner.is_empty() {
        out.push(',');
        out.push_str(inner);
    }
    out.push('}');
}

/// What a message's line holds besides its rows (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Extra {
    /// Deleted by opencode (the `seq` of its removal in the event log).
    pub deleted: Option<i64>,
    /// The first message of a subagent's session: its id and title.
    pub subagent: Option<(String, String)>,
    /// Hidden by a pending `/undo`.
    pub hidden: bool,
}

/// The line of message `m` (see the module docs), and whether its data was damaged.
pub fn line_of(m: &MessageRec, extra: &Extra) -> (String, bool) {
    let mut out = String::with_capacity(
        m.data.len() + m.parts.iter().map(|p| p.data.len() + 96).sum::<usize>() + 96,
    );
    out.push_str("{\"info\":");
    let info = object_text(&m.data);
    splice(
        &mut out,
        &[("id", &m.id), ("sessionID", &m.session_id)],
        info.unwrap_or("{}"),
    );
    out.push_str(",\"parts\":[");
    let mut bad_parts = Vec::new();
    let mut first = true;
    for p in &m.parts {
        match object_text(&p.data) {
            Some(obj) => {
                if !first {
                    out.push(',');
                }
                first = false;
                splice(
                    &mut out,
                    &[
                        ("id", &p.id),
                        ("sessionID", &m.session_id),
                        ("messageID", &m.id),
                    ],
                    obj,
                );
            }
            None => bad_parts.push(p),
        }
    }
    out.push(']');
    if let Some(seq) = extra.deleted {
        out.push_str(&format!(",\"deleted\":{{\"removedSeq\":{seq}}}"));
    }
    if let Some((id, title)) = &extra.subagent {
        out.push_str(",\"subagent\":{\"id\":");
        push_json_str(&mut out, id);
        out.push_str(",\"title\":");
        push_json_str(&mut out, title);
        out.push('}');
    }
    if extra.hidden {
        out.push_str(",\"hidden\":true");
    }
    if info.is_none() {
        out.push_str(",\"damaged\":");
        push_json_str(&mut out, &m.data);
    }
    if !bad_parts.is_empty() {
        out.push_str(",\"damagedParts\":[");
        for (k, p) in bad_parts.iter().enumerate() {
            if k > 0 {
                out.push(',');
            }
            out.push_str("{\"id\":");
            push_json_str(&mut out, &p.id);
            out.push_str(",\"data\":");
            push_json_str(&mut out, &p.data);
            out.push('}');
        }
        out.push(']');
    }
    out.push('}');
    (out, info.is_none() || !bad_parts.is_empty())
}

/// A hash of what a message's line is made of: equal hashes, equal lines.
pub fn rows_hash(m: &MessageRec, extra: &Extra) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    extra.hash(&mut h);
    m.id.hash(&mut h);
    m.session_id.hash(&mut h);
    m.data.hash(&mut h);
    for p in &m.parts {
        p.id.hash(&mut h);
        p.data.hash(&mut h);
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::opencode::store::{Origin, PartRec};

    fn msg(data: &str, parts: &[&str]) -> MessageRec {
        MessageRec {
            id: "msg_1".into(),
            session_id: "ses_1".into(),
            time_created: 1,
            time_updated: 1,
            data: data.into(),
            parts: parts
                .iter()
                .enumerate()
                .map(|(k, d)| PartRec {
                    id: format!("prt_{k}"),
                    time_created: 1,
                    data: d.to_string(),
                })
                .collect(),
            origin: Origin::Row,
            created_seq: None,
        }
    }

    #[test]
    fn rows_are_spliced_byte_for_byte() {
        let (l, bad) = line_of(
            &msg(
                r#"{"role":"user","time":{"created":1}}"#,
                &[r#"{"type":"text","text":"a\u00e9\"b"}"#, "{}"],
            ),
            &Extra::default(),
        );
        assert!(!bad);
        assert_eq!(
            l,
            r#"{"info":{"id":"msg_1","sessionID":"ses_1","role":"user","time":{"created":1}},"parts":[{"id":"prt_0","sessionID":"ses_1","messageID":"msg_1","type":"text","text":"a\u00e9\"b"},{"id":"prt_1","sessionID":"ses_1","messageID":"msg_1"}]}"#
        );
        let v: Value = serde_json::from_str(&l).unwrap();
        assert_eq!(v["parts"][0]["text"], "aé\"b");
    }

    #[test]
    fn damaged_rows_are_kept_as_text() {
        let (l, bad) = line_of(
            &msg("{not json", &["[1]", r#"{"type":"text","text":"x"}"#]),
            &Extra::default(),
        );
        assert!(bad);
        let v: Value = serde_json::from_str(&l).unwrap();
        assert_eq!(v["info"]["id"], "msg_1");
        assert_eq!(v["damaged"], "{not json");
        assert_eq!(v["parts"].as_array().unwrap().len(), 1);
        assert_eq!(v["damagedParts"][0]["data"], "[1]");
    }
}
