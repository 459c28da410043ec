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

use crate::model::id::IdKey;
use crate::model::session::Session;
use serde_json::Value;

/// Parses a line as Pi does: `JSON.parse` of the UTF-8-decoded text.
pub fn parse_line(bytes: &[u8]) -> Result<Value, String> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => Ok(v),
        Err(e) => {
            if std::str::from_utf8(bytes).is_ok() {
                return Err(e.to_string());
            }
            let fixed = String::from_utf8_lossy(bytes);
            serde_json::from_str(&fixed).map_err(|e| e.to_string())
        }
    }
}

/// The derived id of the v1 entry at index `idx`: 8 hex digits from a hash of the
/// session id and `idx`, re-drawn while `taken` says it is in use.
pub fn v1_id(session_id: &str, idx: u32, taken: impl Fn(IdKey) -> bool) -> IdKey {
    let mut attempt: u32 = 0;
    loop {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in session_id
            .bytes()
            .chain(idx.to_le_bytes())
            .chain(attempt.to_le_bytes())
        {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        // Fold to 32 bits (xor-shift mixes the high bits in).
        h ^= h >> 29;
        h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h ^= h >> 32;
        let k = IdKey::from_u32(h as u32);
        if !taken(k) {
            return k;
        }
        attempt += 1;
    }
}

/// Applies Pi's migrations to entry `i` of `s`, in place.
pub fn migrate_entry(s: &Session, i: u32, v: &mut Value) {
    let version = s.header().version;
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
                && let Some(target) = s.v1_entry_at_parsed(idx as usize)
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
