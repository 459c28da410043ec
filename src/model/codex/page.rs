//! One page's lines, and its `session_meta`.
//!
//! Every line is compact JSON ending in `\n`: `{timestamp, ordinal, type, payload
//! [, metadata]}` (CODEX-FORMAT §2). Only complete lines count: a last line without its
//! `\n` is being written (or was torn by a crash) and Codex itself skips it (§10), so it
//! is kept apart as [`Page::torn_tail`] rather than guessed at. A line that is not JSON
//! is kept as [`LineKind::Broken`] so that `check` can name it, and skipped everywhere
//! else, as Codex skips it.

use serde_json::{Map, Value};
use std::sync::{Arc, OnceLock};

/// What a line is, by its `type` (§2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineKind {
    SessionMeta,
    /// Sent to the model (§5.1); a tree node (§3.4).
    ResponseItem,
    /// A compaction: replaces the history before it (§5.3); a tree node.
    Compacted,
    EventMsg,
    TurnContext,
    WorldState,
    TokenUsageRecord,
    /// A `type` this reader does not know: ignored, as Codex ignores it (§10).
    Other(String),
    /// Not a JSON object.
    Broken,
}

impl LineKind {
    fn of(t: &str) -> LineKind {
        match t {
            "session_meta" => LineKind::SessionMeta,
            "response_item" => LineKind::ResponseItem,
            "compacted" => LineKind::Compacted,
            "event_msg" => LineKind::EventMsg,
            "turn_context" => LineKind::TurnContext,
            "world_state" => LineKind::WorldState,
            "token_usage_record" => LineKind::TokenUsageRecord,
            other => LineKind::Other(other.to_string()),
        }
    }

    /// Whether the line is an entry of the tree (§3.4).
    pub fn is_node(&self) -> bool {
        matches!(self, LineKind::ResponseItem | LineKind::Compacted)
    }
}

/// One complete line of a page file.
///
/// The line is parsed when it is read ([`parse`]) only as far as the tree needs it:
/// its `type`, `ordinal` and whether it has a `timestamp`, every byte validated as
/// building its `serde_json::Value` would. The value itself is built the first time
/// something reads it ([`Line::value`]): a search that opens a thread to name its
/// hits reads no payload, and a mount reads those of the entries it is asked about.
#[derive(Debug, Clone)]
pub struct Line {
    /// Byte range in the page's (decompressed) bytes, the `\n` included in `end`.
    pub start: u64,
    pub end: u64,
    /// 1-based line number in the page file.
    pub number: usize,
    pub ordinal: Option<i64>,
    pub kind: LineKind,
    /// What the index asks of every line, read with it: `timestamp`, and the
    /// payload's `type`, `role` and `id`, each when it is a string.
    head: Box<check::Head>,
    /// The bytes read with the line (shared by the lines of one read) and where in
    /// them the line starts.
    src: Arc<[u8]>,
    at: usize,
    value: OnceLock<Value>,
}

impl Line {
    /// The whole line as parsed (`Value::Null` for a broken line).
    pub fn value(&self) -> &Value {
        self.value.get_or_init(|| {
            if self.kind == LineKind::Broken {
                return Value::Null;
            }
            let len = (self.end - self.start - 1) as usize;
            match serde_json::from_slice(&self.src[self.at..self.at + len]) {
                Ok(v @ Value::Object(_)) => v,
                // The line was checked when it was read.
                _ => Value::Null,
            }
        })
    }

    pub fn payload(&self) -> &Value {
        &self.value()["payload"]
    }

    /// `payload.type` (`message`, `reasoning`, `function_call`, …), `""` when it is
    /// not a string.
    pub fn payload_type(&self) -> &str {
        self.head.payload_type.as_deref().unwrap_or("")
    }

    /// `payload.type` when it is a string.
    pub fn payload_type_str(&self) -> Option<&str> {
        self.head.payload_type.as_deref()
    }

    /// `payload.role` when it is a string.
    pub fn payload_role(&self) -> Option<&str> {
        self.head.payload_role.as_deref()
    }

    /// `payload.id` when it is a string.
    pub fn payload_id(&self) -> Option<&str> {
        self.head.payload_id.as_deref()
    }

    pub fn timestamp(&self) -> Option<&str> {
        self.head.timestamp.as_deref()
    }

    /// The line's bytes, without its `\n` (for a look at a key without building its
    /// value).
    pub fn bytes(&self) -> &[u8] {
        &self.src[self.at..self.at + (self.end - self.start - 1) as usize]
    }
}

/// `session_meta.history_base` (§3.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryBase {
    /// The *page* id of the base page (named `thread_id` in the file: a first page's page
    /// id is its thread id).
    pub page_id: String,
    pub end_ordinal_exclusive: Option<i64>,
    /// Only the complete lines within `[0, end_byte_offset)` of the base are inherited:
    /// the bytes decide, not the ordinal (§3.1, measured).
    pub end_byte_offset: u64,
}

/// The fields of a page's `session_meta` this module uses (§2, §6).
#[derive(Debug, Clone, Default)]
pub struct SessionMeta {
    /// `payload.id`: the thread id (the same on every page of a thread).
    pub thread_id: String,
    /// `payload.session_id`: a subagent's is its parent's thread id (§6).
    pub session_id: Option<String>,
    pub cwd: Option<String>,
    pub timestamp: Option<String>,
    pub originator: Option<String>,
    pub cli_version: Option<String>,
    pub model_provider: Option<String>,
    /// `"exec"`, `"vscode"`, or `{"subagent":{…}}` (§2, §6).
    pub source: Value,
    pub thread_source: Option<String>,
    pub agent_nickname: Option<String>,
    pub parent_thread_id: Option<String>,
    pub forked_from_id: Option<String>,
    pub forked_from_ordinal_exclusive: Option<i64>,
    /// `base_instructions.text`: the first item Codex sends (§5.5).
    pub base_instructions: Option<String>,
    pub history_base: Option<HistoryBase>,
    /// The whole payload, for `session.json`.
    pub payload: Map<String, Value>,
}

impl SessionMeta {
    pub fn from_payload(p: &Value) -> Option<SessionMeta> {
        let obj = p.as_object()?;
        let s = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_string);
        let thread_id = s("id")?;
        let history_base = obj.get("history_base").and_then(|hb| {
            Some(HistoryBase {
                page_id: hb["thread_id"].as_str()?.to_string(),
                end_ordinal_exclusive: hb["end_ordinal_exclusive"].as_i64(),
                end_byte_offset: hb["end_byte_offset"].as_u64()?,
            })
        });
        // A subagent's parent is named at the top level and inside `source` (§6).
        let parent_thread_id = s("parent_thread_id").or_else(|| {
            obj.get("source")?["subagent"]["thread_spawn"]["parent_thread_id"]
                .as_str()
                .map(str::to_string)
        });
        Some(SessionMeta {
            thread_id,
            session_id: s("session_id"),
            cwd: s("cwd"),
            timestamp: s("timestamp"),
            originator: s("originator"),
            cli_version: s("cli_version"),
            model_provider: s("model_provider"),
            source: obj.get("source").cloned().unwrap_or(Value::Null),
            thread_source: s("thread_source"),
            agent_nickname: s("agent_nickname"),
            parent_thread_id,
            forked_from_id: s("forked_from_id"),
            forked_from_ordinal_exclusive: obj
                .get("forked_from_ordinal_exclusive")
                .and_then(Value::as_i64),
            base_instructions: obj
                .get("base_instructions")
                .and_then(|b| b["text"].as_str())
                .map(str::to_string),
            history_base,
            payload: obj.clone(),
        })
    }

    /// Whether the thread is a subagent's (§6).
    pub fn is_subagent(&self) -> bool {
        self.source.get("subagent").is_some() || self.thread_source.as_deref() == Some("subagent")
    }
}

/// A parsed page file.
#[derive(Debug, Clone, Default)]
pub struct Lines {
    pub lines: Vec<Line>,
    /// Bytes after the last `\n` (a line being written, or torn).
    pub torn_tail: Option<(u64, u64)>,
    /// The first `session_meta` line's fields (the page's first line in Codex's files).
    pub meta: Option<SessionMeta>,
    /// Total bytes read.
    pub len: u64,
}

/// Splits `bytes` into complete lines and parses each.
pub fn parse(bytes: &[u8]) -> Lines {
    let mut out = Lines {
        len: bytes.len() as u64,
        ..Lines::default()
    };
    let src: Arc<[u8]> = Arc::from(bytes);
    let mut start = 0usize;
    let mut number = 0usize;
    while start < bytes.len() {
        let Some(nl) = memchr::memchr(b'\n', &bytes[start..]) else {
            out.torn_tail = Some((start as u64, bytes.len() as u64));
            break;
        };
        let end = start + nl + 1;
        number += 1;
        let line = parse_line(&src, start, end, number);
        if out.meta.is_none() && line.kind == LineKind::SessionMeta {
            out.meta = SessionMeta::from_payload(line.payload());
        }
        out.lines.push(line);
        start = end;
    }
    out
}

/// Line `number` of the bytes `src`, at `[start, end)` (its `\n` included).
pub fn parse_line(src: &Arc<[u8]>, start: usize, end: usize, number: usize) -> Line {
    let head = check::head(&src[start..end - 1]);
    Line {
        start: start as u64,
        end: end as u64,
        number,
        ordinal: head.as_ref().and_then(|h| h.ordinal),
        kind: match &head {
            Some(h) => LineKind::of(h.ty.as_deref().unwrap_or("")),
            None => LineKind::Broken,
        },
        head: Box::new(head.unwrap_or_default()),
        src: src.clone(),
        at: start,
        value: OnceLock::new(),
    }
}

/// Reading a line's top-level fields while validating the rest without building it
/// (`core::strict`): the line is accepted exactly when `serde_json::from_slice::<Value>`
/// accepts it as an object, and each field is what `Value`'s indexing gives.
mod check {
    use crate::model::core::strict::{self, FromMap, I64, Obj, Skip, Str};
    use serde::de::{Deserialize, Deserializer, MapAccess};

    /// What `parse_line` reads of a line: each as `Value`'s indexing reads it
    /// (`v["type"].as_str()`, `v["ordinal"].as_i64()`, `v["payload"]["id"]`…).
    #[derive(Debug, Default, Clone)]
    pub struct Head {
        /// `type`, when it is a string.
        pub ty: Option<String>,
        /// `ordinal`, when it is an integer that fits an `i64`.
        pub ordinal: Option<i64>,
        /// `timestamp`, when it is a string.
        pub timestamp: Option<String>,
        /// `payload.type`, `payload.role`, `payload.id`, when `payload` is an object
        /// and each is a string.
        pub payload_type: Option<String>,
        pub payload_role: Option<String>,
        pub payload_id: Option<String>,
    }

    /// The line's head, or `None` when it is not a JSON object.
    pub fn head(line: &[u8]) -> Option<Head> {
        serde_json::from_slice::<Obj<Head>>(line).ok()?.0
    }

    /// The keys read, at the top and in `payload`.
    enum Key {
        Type,
        Ordinal,
        Timestamp,
        Payload,
        Role,
        Id,
        Other,
    }

    impl<'de> Deserialize<'de> for Key {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
            strict::key(d, |k| match k {
                "type" => Key::Type,
                "ordinal" => Key::Ordinal,
                "timestamp" => Key::Timestamp,
                "payload" => Key::Payload,
                "role" => Key::Role,
                "id" => Key::Id,
                _ => Key::Other,
            })
        }
    }

    fn owned(s: Str<'_>) -> Option<String> {
        s.0.map(|c| c.into_owned())
    }

    impl<'de> FromMap<'de> for Head {
        fn from_map<A: MapAccess<'de>>(mut a: A) -> Result<Head, A::Error> {
            let mut h = Head::default();
            while let Some(k) = a.next_key::<Key>()? {
                match k {
                    Key::Type => h.ty = owned(a.next_value()?),
                    Key::Ordinal => h.ordinal = a.next_value::<I64>()?.0,
                    Key::Timestamp => h.timestamp = owned(a.next_value()?),
                    Key::Payload => {
                        // The last `payload` is the one a `Value` keeps.
                        let p = a.next_value::<Obj<Payload>>()?.0.unwrap_or_default();
                        h.payload_type = p.ty;
                        h.payload_role = p.role;
                        h.payload_id = p.id;
                    }
                    Key::Role | Key::Id | Key::Other => {
                        a.next_value::<Skip>()?;
                    }
                }
            }
            Ok(h)
        }
    }

    /// What is read of `payload`.
    #[derive(Default)]
    struct Payload {
        ty: Option<String>,
        role: Option<String>,
        id: Option<String>,
    }

    impl<'de> FromMap<'de> for Payload {
        fn from_map<A: MapAccess<'de>>(mut a: A) -> Result<Payload, A::Error> {
            let mut p = Payload::default();
            while let Some(k) = a.next_key::<Key>()? {
                match k {
                    Key::Type => p.ty = owned(a.next_value()?),
                    Key::Role => p.role = owned(a.next_value()?),
                    Key::Id => p.id = owned(a.next_value()?),
                    _ => {
                        a.next_value::<Skip>()?;
                    }
                }
            }
            Ok(p)
        }
    }
}

/// The index of the last line that ends at or before `offset`: the lines within
/// `[0, offset)` are `lines[..count_within(lines, offset)]` (§3.1).
pub fn count_within(lines: &[Line], offset: u64) -> usize {
    lines.partition_point(|l| l.end <= offset)
}

#[cfg(test)]
mod tests {
    //! [`check::head`] against building the line's `Value`, on random valid and
    //! damaged lines: the same lines accepted, the same fields read.

    use super::*;
    use proptest::prelude::*;

    /// What the index read of a line before it was read lazily: from its `Value`.
    fn by_value(line: &[u8]) -> Option<[Option<String>; 6]> {
        let v: Value = match serde_json::from_slice(line) {
            Ok(v @ Value::Object(_)) => v,
            _ => return None,
        };
        let s = |v: &Value| v.as_str().map(str::to_string);
        Some([
            s(&v["type"]),
            v["ordinal"].as_i64().map(|n| n.to_string()),
            s(&v["timestamp"]),
            s(&v["payload"]["type"]),
            s(&v["payload"]["role"]),
            s(&v["payload"]["id"]),
        ])
    }

    fn by_check(line: &[u8]) -> Option<[Option<String>; 6]> {
        let h = check::head(line)?;
        Some([
            h.ty,
            h.ordinal.map(|n| n.to_string()),
            h.timestamp,
            h.payload_type,
            h.payload_role,
            h.payload_id,
        ])
    }

    /// Scalars, with the numbers and strings where a reader could differ from
    /// `Value`: out of range, negative zero, floats, lone surrogates, escapes.
    fn scalar() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "0",
            "-0",
            "7",
            "-3",
            "1.0",
            "1e400",
            "-1e400",
            "9223372036854775807",
            "9223372036854775808",
            "18446744073709551616",
            "1e2",
            "0.5e-400",
            "01",
            "-",
            "true",
            "false",
            "null",
            "nul",
            "\"\"",
            "\"x\"",
            "\"message\"",
            "\"user\"",
            "\"response_item\"",
            "\"compacted\"",
            "\"a\\u0041\"",
            "\"\\ud800\"",
            "\"\\ud83d\\ude00\"",
            "\"\\udc00x\"",
            "\"\\u00e9\"",
            "\"tab\\t\"",
            "\"bad\\x\"",
            "\"ctl\u{1}\"",
            "\"\u{e9}\"",
            "\"unterminated",
        ])
        .prop_map(str::to_string)
    }

    fn key() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "\"type\"",
            "\"ordinal\"",
            "\"timestamp\"",
            "\"payload\"",
            "\"role\"",
            "\"id\"",
            "\"content\"",
            "\"typ\\u0065\"",
            "\"\\u0069d\"",
            "\"x\"",
        ])
        .prop_map(str::to_string)
    }

    fn value() -> impl Strategy<Value = String> {
        scalar().prop_recursive(6, 48, 5, |inner| {
            prop_oneof![
                prop::collection::vec((key(), inner.clone()), 0..5).prop_map(|kv| {
                    let f: Vec<String> = kv.into_iter().map(|(k, v)| format!("{k}:{v}")).collect();
                    format!("{{{}}}", f.join(","))
                }),
                prop::collection::vec(inner, 0..4).prop_map(|v| format!("[{}]", v.join(","))),
            ]
        })
    }

    /// A line: mostly an object of the keys the index reads, then damaged at random
    /// (a byte replaced, inserted or cut, invalid UTF-8, nesting past the limit).
    /// A top-level key: mostly those the index reads.
    fn top_key() -> impl Strategy<Value = String> {
        prop_oneof![
            3 => prop::sample::select(vec!["\"type\"", "\"ordinal\"", "\"timestamp\""])
                .prop_map(str::to_string),
            2 => Just("\"payload\"".to_string()),
            1 => key(),
        ]
    }

    /// A top-level value: a payload-like object half the time.
    fn top_value() -> impl Strategy<Value = String> {
        prop_oneof![
            2 => scalar(),
            1 => prop::collection::vec((key(), scalar()), 0..4).prop_map(|kv| {
                let f: Vec<String> = kv.into_iter().map(|(k, v)| format!("{k}:{v}")).collect();
                format!("{{{}}}", f.join(","))
            }),
            1 => value(),
        ]
    }

    fn line() -> impl Strategy<Value = Vec<u8>> {
        let obj = prop::collection::vec((top_key(), top_value()), 0..7).prop_map(|kv| {
            let f: Vec<String> = kv.into_iter().map(|(k, v)| format!("{k}:{v}")).collect();
            format!("{{{}}}", f.join(","))
        });
        (obj, 0..8u8, any::<prop::sample::Index>(), any::<u8>()).prop_map(|(s, how, at, b)| {
            let mut v = s.into_bytes();
            let i = at.index(v.len().max(1)).min(v.len());
            match how {
                0 => v.insert(i, b),
                1 if i < v.len() => v[i] = b,
                2 => v.truncate(i),
                3 => v.splice(i..i, [0xff, 0xfe]).for_each(drop),
                4 => {
                    let deep = format!("{}1{}", "[".repeat(130), "]".repeat(130));
                    let mut w = format!("{{\"type\":\"x\",\"d\":{deep}").into_bytes();
                    w.extend_from_slice(b"}");
                    v = w;
                }
                5 => v.extend_from_slice(b" x"),
                _ => {}
            }
            v
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(
            std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(2048)
        ))]
        #[test]
        fn the_lazy_head_reads_what_the_value_reads(l in line()) {
            prop_assert_eq!(by_check(&l), by_value(&l), "{}", String::from_utf8_lossy(&l));
        }
    }

    #[test]
    fn the_cases_the_value_refuses() {
        for l in [
            &br#"{"type":"x","n":1e400}"#[..],
            br#"{"type":"\ud800"}"#,
            b"{\"type\":\"\xff\"}",
            br#"{"type":"x"} x"#,
            br#"[1]"#,
            br#"{"ordinal":9223372036854775808}"#,
            br#"{"ordinal":9223372036854775807}"#,
            br#"{"ordinal":-0}"#,
            br#"{"ordinal":1.0}"#,
        ] {
            assert_eq!(by_check(l), by_value(l), "{}", String::from_utf8_lossy(l));
        }
        let deep = format!("{{\"a\":{}1{}}}", "[".repeat(127), "]".repeat(127));
        assert_eq!(by_check(deep.as_bytes()), by_value(deep.as_bytes()));
        let deeper = format!("{{\"a\":{}1{}}}", "[".repeat(128), "]".repeat(128));
        assert_eq!(by_check(deeper.as_bytes()), None);
        assert_eq!(by_value(deeper.as_bytes()), None);
        // Last value wins, as in a `Value`'s map.
        let dup = br#"{"type":"a","type":"b","payload":{"id":"x"},"payload":7}"#;
        assert_eq!(by_check(dup), by_value(dup));
        assert_eq!(by_check(dup).unwrap()[0].as_deref(), Some("b"));
    }
}
