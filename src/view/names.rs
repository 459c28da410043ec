//! How entry ids become file names, and back.
//!
//! An id is used as its own name when it can be one. Otherwise (it is empty, `.` or
//! `..`, holds `/` or NUL, is longer than a name may be, starts with `%`, or equals one
//! of the fixed names of the layout) it is shown escaped: `%` followed by the id with
//! `%`, `/` and NUL percent-encoded. Plain names never start with `%`, so the mapping
//! is one-to-one and [`unescape_name`] inverts it.

use crate::model::Session;

/// Names that mean something else in an entry directory or at the root.
pub const RESERVED: &[&str] = &[
    "reply",
    "fork",
    "forks",
    "forked-from",
    "entry.json",
    "context",
    "context.json",
    "cost",
    "cost.json",
    "parent",
    "request",
    "request.json",
    "session.json",
    "name",
    "tree",
    "leaf",
    "branches",
    "labels",
    ".id",
    // Content file names (LAYOUT "KIND").
    "user",
    "assistant",
    "toolResult",
    "bashExecution",
    "custom",
    "message",
    "model_change",
    "thinking_level_change",
    "compaction",
    "branch_summary",
    "custom_message",
    "label",
    "session_info",
    "entry",
];

const MAX_NAME: usize = 255;

fn needs_escape(id: &str) -> bool {
    id.is_empty()
        || id == "."
        || id == ".."
        || id.starts_with('%')
        || id.contains(['/', '\0'])
        || id.len() > MAX_NAME
        || RESERVED.contains(&id)
        || is_image_name(id)
}

/// `image-N.EXT`, the names of image files.
pub fn is_image_name(s: &str) -> bool {
    s.strip_prefix("image-")
        .and_then(|r| r.split_once('.'))
        .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The file name for an entry id. When even the escaped form would be longer than
/// 255 bytes, a shortened name with a hash ([`long_name`]).
pub fn escape_id(id: &str) -> String {
    if !needs_escape(id) {
        return id.to_string();
    }
    let mut out = String::with_capacity(id.len() + 4);
    out.push('%');
    for (i, c) in id.chars().enumerate() {
        match c {
            '!' if i == 0 => out.push_str("%21"),
            '%' => out.push_str("%25"),
            '/' => out.push_str("%2F"),
            '\0' => out.push_str("%00"),
            c => out.push(c),
        }
    }
    if out.len() > MAX_NAME {
        long_name(id)
    } else {
        out
    }
}

/// The name of entry `i`'s directory: its escaped id ([`escape_id`]) or the name its
/// format gives it (a Claude Code subagent's `agent-<id>`), or `%!line-N` for an
/// entry without an id.
pub fn entry_name(s: &Session, i: u32) -> String {
    if let Some(a) = s.alias(i) {
        return escape_id(a);
    }
    if s.entry(i).id.is_none() {
        format!("%!line-{}", s.entry(i).line)
    } else {
        escape_id(&s.id_string(i))
    }
}

/// Name for an id whose escaped form is too long: `%!` + a prefix + a hash.
pub fn long_name(id: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let prefix: String = id
        .chars()
        .filter(|&c| c != '/' && c != '\0' && c != '%')
        .scan(0usize, |n, c| {
            *n += c.len_utf8();
            (*n <= 200).then_some(c)
        })
        .collect();
    format!("%!{prefix}~{h:016x}")
}

/// The id a name stands for; `None` for a name no id maps to, or a long-id name
/// (`%!…`, which the caller resolves by comparing names).
pub fn unescape_name(name: &str) -> Option<String> {
    let Some(rest) = name.strip_prefix('%') else {
        return Some(name.to_string());
    };
    if rest.starts_with('!') {
        return None;
    }
    let b = rest.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = rest.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_ids_are_their_own_names() {
        assert_eq!(escape_id("0a1b2c3d"), "0a1b2c3d");
        assert_eq!(unescape_name("0a1b2c3d").unwrap(), "0a1b2c3d");
    }

    #[test]
    fn awkward_ids_round_trip() {
        for id in [
            "",
            ".",
            "..",
            "a/b",
            "reply",
            "user",
            "%x",
            "image-1.png",
            "nul\0x",
            "%25",
            "%!x",
        ] {
            let n = escape_id(id);
            assert!(n.starts_with('%'), "{id:?} -> {n:?}");
            assert!(!n.contains('/') && !n.contains('\0') && n != "." && n != "..");
            assert_eq!(unescape_name(&n).as_deref(), Some(id), "{n:?}");
        }
    }

    #[test]
    fn long_ids_get_a_hashed_name() {
        let id = "x".repeat(400);
        let n = escape_id(&id);
        assert!(n.len() <= 255 && n.starts_with("%!"));
        assert_eq!(unescape_name(&n), None);
        assert_ne!(long_name(&id), long_name(&"x".repeat(401)));
    }
}
