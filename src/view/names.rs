//! How entry ids become file names, and back.
//!
//! An id is used as its own name when it can be one. Otherwise (it is empty, `.` or
//! `..`, holds `/`, NUL or another control character, is longer than a name may be,
//! starts with `%`, or equals one of the fixed names of the layout) it is shown
//! escaped: `%` followed by the id with `%`, `/` and every control character
//! percent-encoded (its UTF-8 bytes). Plain names never start with `%`, so the mapping
//! is one-to-one and [`unescape_name`] inverts it. A control character is escaped
//! because a name reaches terminals raw (`find`, `grep -r` and `sessionfs grep` print
//! paths as they are): a newline would cut a path in two, an escape sequence drive
//! the terminal. Label names ([`escape_name`]) follow the same rule, without the
//! layout's fixed names.

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
    name_needs_escape(id) || RESERVED.contains(&id) || is_image_name(id)
}

/// A string that cannot be a file name as it is (see the module docs).
fn name_needs_escape(s: &str) -> bool {
    s.is_empty()
        || s == "."
        || s == ".."
        || s.starts_with('%')
        || s.contains('/')
        || s.chars().any(char::is_control)
        || s.len() > MAX_NAME
}

/// The file name for a name of the session's (a label's): itself when it can be one,
/// else escaped as ids are ([`escape_id`], without the layout's fixed names, which
/// mean nothing in `labels/`).
pub fn escape_name(s: &str) -> String {
    if !name_needs_escape(s) {
        return s.to_string();
    }
    percent_escaped(s)
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
    percent_escaped(id)
}

/// `%` and `s` with `%`, `/`, a leading `!` and control characters percent-encoded;
/// [`long_name`] when that is too long a name.
fn percent_escaped(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 4);
    out.push('%');
    for (i, c) in s.chars().enumerate() {
        match c {
            '!' if i == 0 => out.push_str("%21"),
            '%' => out.push_str("%25"),
            '/' => out.push_str("%2F"),
            c if c.is_control() => {
                let mut b = [0u8; 4];
                for byte in c.encode_utf8(&mut b).bytes() {
                    out.push_str(&format!("%{byte:02X}"));
                }
            }
            c => out.push(c),
        }
    }
    if out.len() > MAX_NAME {
        long_name(s)
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
        .filter(|&c| c != '/' && c != '%' && !c.is_control())
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
            "line\nbreak",
            "\u{1b}]0;owned\u{7}",
            "csi\u{9b}31m",
        ] {
            let n = escape_id(id);
            assert!(n.starts_with('%'), "{id:?} -> {n:?}");
            assert!(!n.contains('/') && !n.chars().any(char::is_control) && n != "." && n != "..");
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
