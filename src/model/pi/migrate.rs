//! Legacy formats, migrated in memory exactly as Pi migrates them on open.
//!
//! Pi rewrites a v1 or v2 file the first time it opens it (PI-FORMAT.md §11). sessionfs
//! never does: it reads the file as it is and applies the same changes to each entry
//! when the entry is read.
//!
//! * v1 → v2: every entry gets an `id` and a `parentId` (the previous entry), making one
//!   chain in file order; a compaction's `firstKeptEntryIndex` (an index into the parsed
//!   lines, header = 0) becomes `firstKeptEntryId`. Pi draws random ids here, so a v1
//!   file would show different paths on every mount; sessionfs derives each id from the
//!   session id and the entry's position instead ([`v1_id`]): stable across mounts.
//! * v2 → v3: role `hookMessage` becomes `custom`.

use super::index::Index;
pub use crate::model::core::id::v1_id;
#[allow(unused_imports)]
pub use crate::model::core::js::*;
use crate::model::core::session::Session;
use serde_json::Value;

/// Applies Pi's migrations to entry `i` of `s` (whose Pi index state is `ix`), in
/// place.
pub fn migrate_entry(ix: &Index, s: &Session, i: u32, v: &mut Value) {
    let version = ix.version;
    if version >= 3 {
        return;
    }
    let Some(obj) = v.as_object_mut() else { return };
    if version < 2 {
        obj.insert("id".into(), Value::String(s.id_string(i)));
        let parent = if i == 0 {
            Value::Null
        } else {
            Value::String(s.id_string(i - 1))
        };
        obj.insert("parentId".into(), parent);
        if obj.get("type").and_then(Value::as_str) == Some("compaction")
            && let Some(idx) = obj.get("firstKeptEntryIndex").and_then(Value::as_f64)
        {
            if idx >= 0.0
                && idx.fract() == 0.0
                && let Some(target) = ix.v1_entry_at_parsed(idx as usize)
            {
                obj.insert(
                    "firstKeptEntryId".into(),
                    Value::String(s.id_string(target)),
                );
            }
            obj.shift_remove("firstKeptEntryIndex");
        }
    }
    if obj.get("type").and_then(Value::as_str) == Some("message")
        && let Some(m) = obj.get_mut("message").and_then(Value::as_object_mut)
        && m.get("role").and_then(Value::as_str) == Some("hookMessage")
    {
        m.insert("role".into(), Value::String("custom".into()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_ids_are_stable_and_distinct() {
        let a = v1_id("s", 0, |_| false);
        assert_eq!(a, v1_id("s", 0, |_| false));
        assert_ne!(a, v1_id("s", 1, |_| false));
        assert_ne!(a, v1_id("t", 0, |_| false));
        let b = v1_id("s", 0, |k| k == a);
        assert_ne!(a, b);
    }

    #[test]
    fn parse_line_replaces_invalid_utf8() {
        let v = parse_line(b"{\"a\":\"x\xFFy\"}").unwrap();
        assert_eq!(v["a"], "x\u{FFFD}y");
        assert!(parse_line(b"{\"a\":").is_err());
    }
}
