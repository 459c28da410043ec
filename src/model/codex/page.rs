//! One page's lines, and its `session_meta`.
//!
//! Every line is compact JSON ending in `\n`: `{timestamp, ordinal, type, payload
//! [, metadata]}` (CODEX-FORMAT §2). Only complete lines count: a last line without its
//! `\n` is being written (or was torn by a crash) and Codex itself skips it (§10), so it
//! is kept apart as [`Index::torn_tail`] rather than guessed at. A line that is not JSON
//! is counted as damaged so that `check` can name it, and skipped everywhere else, as
//! Codex skips it.
//!
//! **An index of byte ranges.** A page is read once, a bounded buffer at a time
//! (`core::input`: a line longer than `--max-line` is passed without being held, a
//! compressed page streams out of its decompressor, [`super::zst`]), and what is kept
//! of it is an [`Index`]: per line that matters ([`Rec`]) where it lies and what the
//! tree, the contexts and the usage table ask of it without reading it (its kind,
//! ordinal, time, and the payload's `type` and `role`, interned). Lines that are no
//! entry and no accounting (`world_state`, most `event_msg`s, unknown types, damaged
//! lines) keep nothing but their count. A line's JSON is read again from the file when
//! something needs it (`store::Codex::read`), one line at a time. So what a page costs
//! is its index, some 60 bytes a kept line, plus, while a line is read, that line.
//!
//! [`Line`] is one line read whole, with its bytes, parsed when first asked: what the
//! renderers and the search take.

use crate::model::core::input;
use serde_json::Value;
use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// What a line is, by its `type` (§2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    Other,
    /// Not a JSON object.
    Broken,
}

impl LineKind {
    pub fn of(t: &str) -> LineKind {
        match t {
            "session_meta" => LineKind::SessionMeta,
            "response_item" => LineKind::ResponseItem,
            "compacted" => LineKind::Compacted,
            "event_msg" => LineKind::EventMsg,
            "turn_context" => LineKind::TurnContext,
            "world_state" => LineKind::WorldState,
            "token_usage_record" => LineKind::TokenUsageRecord,
            _ => LineKind::Other,
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
            let bytes = &self.src[self.at..self.at + len];
            // Too many values to build (`input::check_values`): as if it had none.
            if input::check_values(bytes).is_err() {
                return Value::Null;
            }
            match serde_json::from_slice(bytes) {
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
    pub history_base: Option<HistoryBase>,
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
            history_base,
        })
    }

    /// The fields of the `session_meta` line `bytes` (without its `\n`), when it is one.
    pub fn of_line(bytes: &[u8]) -> Option<SessionMeta> {
        SessionMeta::from_payload(&payload_of_meta_line(bytes)?)
    }

    /// Whether the thread is a subagent's (§6).
    pub fn is_subagent(&self) -> bool {
        self.source.get("subagent").is_some() || self.thread_source.as_deref() == Some("subagent")
    }
}

/// The `payload` of a `session_meta` line (without its `\n`), as the page parser reads
/// it; `None` for another line.
pub fn payload_of_meta_line(bytes: &[u8]) -> Option<Value> {
    input::check_values(bytes).ok()?;
    match serde_json::from_slice::<Value>(bytes) {
        Ok(mut v) if v["type"] == "session_meta" => Some(v["payload"].take()),
        _ => None,
    }
}

/// `base_instructions.text` of a `session_meta` payload: the first item Codex sends
/// (§5.5).
pub fn instructions_of(payload: &Value) -> Option<String> {
    payload["base_instructions"]["text"]
        .as_str()
        .map(str::to_string)
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
/// Whether a raw line (without its `\n`) is an entry of the tree, as [`parse_line`]
/// decides it: a JSON object whose `type` is a node's ([`LineKind::is_node`]). No
/// other line is shown in any KIND file (a line's KIND file follows from the line
/// alone, [`super::render::line_text`]): the search's index indexes nothing of them
/// (`Rules::shown`).
pub fn shown(line: &[u8]) -> bool {
    check::head(line).is_some_and(|h| LineKind::of(h.ty.as_deref().unwrap_or("")).is_node())
}

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
    use crate::model::core::strict::{self, FromMap, I64, Obj, Reader, Skip, Str, Unsure};
    use serde::de::{Deserialize, Deserializer, MapAccess};

    /// What `parse_line` reads of a line: each as `Value`'s indexing reads it
    /// (`v["type"].as_str()`, `v["ordinal"].as_i64()`, `v["payload"]["id"]`…).
    #[derive(Debug, Default, Clone, PartialEq)]
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

    /// The line's head, or `None` when it is not a JSON object: read by the fast
    /// reader, and by serde when that one is not sure (`core::strict`).
    pub fn head(line: &[u8]) -> Option<Head> {
        match fast(line) {
            Ok(h) => Some(h),
            Err(Unsure) => by_serde(line),
        }
    }

    /// The head through serde alone (what [`head`] falls back to).
    pub fn by_serde(line: &[u8]) -> Option<Head> {
        serde_json::from_slice::<Obj<Head>>(line).ok()?.0
    }

    pub(super) fn fast(line: &[u8]) -> Result<Head, Unsure> {
        let own = |s: Option<std::borrow::Cow<'_, str>>| s.map(|c| c.into_owned());
        let mut h = Head::default();
        Reader::object_line(line, |k: &[u8], r: &mut Reader<'_>| {
            match k {
                b"type" => h.ty = own(r.str()?),
                b"ordinal" => h.ordinal = r.i64()?,
                b"timestamp" => h.timestamp = own(r.str()?),
                b"payload" => {
                    // The last `payload` is the one a `Value` keeps.
                    let mut p = Payload::default();
                    r.object(&mut |k: &[u8], r: &mut Reader<'_>| {
                        match k {
                            b"type" => p.ty = own(r.str()?),
                            b"role" => p.role = own(r.str()?),
                            b"id" => p.id = own(r.str()?),
                            _ => r.skip()?,
                        }
                        Ok(())
                    })?;
                    h.payload_type = p.ty;
                    h.payload_role = p.role;
                    h.payload_id = p.id;
                }
                _ => r.skip()?,
            }
            Ok(())
        })?;
        Ok(h)
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

/// A line of a page as the [`Index`] keeps it: where it lies and what is asked of it
/// without reading it. Never its bytes.
#[derive(Debug, Clone, Copy)]
pub struct Rec {
    /// Byte range in the page's (decompressed) bytes, the `\n` included in `end`.
    pub start: u64,
    pub end: u64,
    /// 1-based line number in the page file.
    pub number: u64,
    pub ordinal: Option<i64>,
    /// `timestamp` as a JavaScript date (ms), `NO_TIME` when it is none.
    pub ts: i64,
    /// Whether the line has a string `timestamp` (Codex ignores a line without, §10).
    pub has_ts: bool,
    pub kind: LineKind,
    /// The point id takes the line number: no ordinal, or one the page used before
    /// (`store::point_id`); set by the store.
    pub by_line: bool,
    /// `payload.type` and `payload.role` in the page's symbols (0: not a string).
    ty: u32,
    role: u32,
    /// A user message Codex wrote itself ([`is_meta_user`]): its KIND is `meta`.
    pub meta_user: bool,
    /// An assistant message answering a compaction request
    /// (`render::is_compaction_output`): its KIND is `compaction_summary`.
    pub compaction_output: bool,
    /// `payload.id` hashed ([`alias_hash`]), 0 when it is not a string.
    pub alias: u64,
    /// The store's node for this line (`NO_NODE`: none).
    pub node: u32,
}

/// Texts Codex puts in user-role messages itself (§2, §5.3, §5.6, §6).
const META_PREFIXES: &[&str] = &[
    "<environment_context>",
    "<turn_aborted>",
    "<subagent_notification>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "Another language model started to solve this problem",
];

/// The text blocks of a message's `content` (`input_text`/`output_text`).
pub fn message_texts(p: &Value) -> Vec<&str> {
    p["content"]
        .as_array()
        .map(|c| c.iter().filter_map(|b| b["text"].as_str()).collect())
        .unwrap_or_default()
}

/// Whether a user message was written by Codex rather than typed.
pub fn is_meta_user(p: &Value) -> bool {
    let texts = message_texts(p);
    let Some(first) = texts.first() else {
        return false;
    };
    let t = first.trim_start();
    META_PREFIXES.iter().any(|m| t.starts_with(m))
}

/// A `payload.id` as the index keeps it: a hash (keyed per process, so that no file
/// can be made to collide), never 0. A match is checked against the line itself.
pub fn alias_hash(id: &str) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static KEYS: OnceLock<std::collections::hash_map::RandomState> = OnceLock::new();
    let mut h = KEYS.get_or_init(Default::default).build_hasher();
    h.write(id.as_bytes());
    h.finish() | 1
}

/// [`Rec::node`] of a line that is no node.
pub const NO_NODE: u32 = u32::MAX;

/// The `event_msg` types something reads: the turn (`task_started`), the model
/// (`thread_settings_applied`) and the accounting (`token_count`).
const READ_EVENTS: &[&str] = &["task_started", "token_count", "thread_settings_applied"];

/// What is wrong with a line, for `check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Damage {
    /// Not a JSON object (Codex skips it, §10).
    Broken { line: u64 },
    /// Longer than `--max-line`: skipped, never held.
    TooLong { line: u64, bytes: u64 },
}

/// The most damaged lines an index lists (the others are counted).
pub const MAX_DAMAGE: usize = 1000;

/// Strings a page's lines share (`payload.type`, `payload.role`), each kept once.
#[derive(Debug, Clone, Default)]
struct Syms {
    names: Vec<Box<str>>,
    by_name: HashMap<Box<str>, u32>,
}

impl Syms {
    fn intern(&mut self, s: Option<&str>) -> u32 {
        let Some(s) = s else { return 0 };
        if let Some(&k) = self.by_name.get(s) {
            return k;
        }
        self.names.push(s.into());
        let k = self.names.len() as u32;
        self.by_name.insert(s.into(), k);
        k
    }

    fn get(&self, k: u32) -> Option<&str> {
        k.checked_sub(1).map(|i| &*self.names[i as usize])
    }

    fn heap_bytes(&self) -> usize {
        self.names.iter().map(|n| 2 * (n.len() + 40)).sum()
    }
}

/// A page's index: its lines by byte range (see the module doc).
#[derive(Debug, Clone, Default)]
pub struct Index {
    /// The lines kept, in file order: entries (`response_item`, `compacted`) and what
    /// the turn and the usage table read (`turn_context`, `token_usage_record`, the
    /// `event_msg`s of [`READ_EVENTS`]).
    pub recs: Vec<Rec>,
    /// The first `session_meta` line's fields (the page's first line in Codex's files).
    pub meta: Option<SessionMeta>,
    /// That line's byte range (its `\n` included).
    pub meta_range: Option<(u64, u64)>,
    /// Bytes after the last `\n` (a line being written, or torn).
    pub torn_tail: Option<(u64, u64)>,
    /// The torn tail is longer than `--max-line`: its end is searched for from where
    /// it was left when the page grows.
    pub long_tail: bool,
    /// Bytes read: the end of the last complete line.
    pub len: u64,
    /// Complete lines read.
    pub lines: u64,
    /// Damaged lines, the first [`MAX_DAMAGE`] of them, and how many more.
    pub damage: Vec<Damage>,
    pub more_damage: u64,
    syms: Syms,
}

impl Index {
    /// Takes the page's next complete line in (lines come in file order).
    pub fn push(&mut self, line: input::Line<'_>) {
        self.lines += 1;
        let number = self.lines;
        let (bytes, offset) = match line {
            input::Line::Whole { bytes, offset } => (bytes, offset),
            input::Line::TooLong { offset, len } => {
                self.len = offset + len + 1;
                self.damaged(Damage::TooLong {
                    line: number,
                    bytes: len,
                });
                return;
            }
        };
        let end = offset + bytes.len() as u64 + 1;
        self.len = end;
        let Some(head) = check::head(bytes) else {
            self.damaged(Damage::Broken { line: number });
            return;
        };
        let kind = LineKind::of(head.ty.as_deref().unwrap_or(""));
        let keep = match kind {
            LineKind::ResponseItem
            | LineKind::Compacted
            | LineKind::TurnContext
            | LineKind::TokenUsageRecord => true,
            LineKind::EventMsg => head
                .payload_type
                .as_deref()
                .is_some_and(|t| READ_EVENTS.contains(&t)),
            LineKind::SessionMeta => {
                if self.meta.is_none() {
                    self.meta = SessionMeta::of_line(bytes);
                    if self.meta.is_some() {
                        self.meta_range = Some((offset, end));
                    }
                }
                false
            }
            _ => false,
        };
        if !keep {
            return;
        }
        let meta_user = kind == LineKind::ResponseItem
            && head.payload_type.as_deref() == Some("message")
            && head.payload_role.as_deref() == Some("user")
            && input::check_values(bytes).is_ok()
            && serde_json::from_slice::<Value>(bytes).is_ok_and(|v| is_meta_user(&v["payload"]));
        // Only a line that says so is read whole.
        let compaction_output = kind == LineKind::ResponseItem
            && head.payload_type.as_deref() == Some("message")
            && head.payload_role.as_deref() == Some("assistant")
            && memchr::memmem::find(bytes, b"\"compaction_output\"").is_some()
            && input::check_values(bytes).is_ok()
            && serde_json::from_slice::<Value>(bytes)
                .is_ok_and(|v| v["metadata"]["compaction_output"] == true);
        let ts = head
            .timestamp
            .as_deref()
            .and_then(crate::model::core::js::js_date_ms)
            .unwrap_or(crate::model::core::session::NO_TIME);
        let rec = Rec {
            start: offset,
            end,
            number,
            ordinal: head.ordinal,
            ts,
            has_ts: head.timestamp.is_some(),
            kind,
            by_line: false,
            ty: self.syms.intern(head.payload_type.as_deref()),
            role: self.syms.intern(head.payload_role.as_deref()),
            meta_user,
            compaction_output,
            alias: head.payload_id.as_deref().map_or(0, alias_hash),
            node: NO_NODE,
        };
        self.recs.push(rec);
    }

    /// Takes what follows the last complete line in.
    pub fn tail(&mut self, t: &input::Tail) {
        self.len = t.offset;
        self.torn_tail = (t.len > 0).then_some((t.offset, t.offset + t.len));
        self.long_tail = t.len > 0 && t.bytes.is_none() && t.len as usize > input::max_line();
    }

    fn damaged(&mut self, d: Damage) {
        if self.damage.len() < MAX_DAMAGE {
            self.damage.push(d);
        } else {
            self.more_damage += 1;
        }
    }

    /// `payload.type` of a line, when it is a string.
    pub fn payload_type(&self, r: &Rec) -> Option<&str> {
        self.syms.get(r.ty)
    }

    /// `payload.role` of a line, when it is a string.
    pub fn payload_role(&self, r: &Rec) -> Option<&str> {
        self.syms.get(r.role)
    }

    /// How many of the lines kept lie within `[0, offset)` (§3.1).
    pub fn count_within(&self, offset: u64) -> usize {
        self.recs.partition_point(|l| l.end <= offset)
    }

    /// The line kept whose 1-based number is `number`.
    pub fn by_number(&self, number: u64) -> Option<usize> {
        self.recs.binary_search_by_key(&number, |r| r.number).ok()
    }

    /// Approximate heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.recs.capacity() * std::mem::size_of::<Rec>()
            + self.damage.capacity() * std::mem::size_of::<Damage>()
            + self.syms.heap_bytes()
            + self.meta.as_ref().map_or(0, SessionMeta::heap_bytes)
    }

    /// Reads the page `file` (plain, or decompressed as a stream) into an index: from
    /// its start, or, for a plain page, on from `old` (the index of its first bytes,
    /// when the page has only grown since).
    pub fn read(path: &Path, compressed: bool, old: Option<Index>) -> io::Result<Index> {
        let max = input::max_line();
        if compressed {
            let mut ix = Index::default();
            let tail = input::read_stream_lines::<io::Error>(
                super::zst::Stream::open(path)?,
                max,
                1 << 20,
                |lines| {
                    lines.iter().for_each(|&l| ix.push(l));
                    Ok(())
                },
            )?;
            ix.tail(&tail);
            ix.recs.shrink_to_fit();
            return Ok(ix);
        }
        let f = super::files::open_page(path)?;
        let mut ix = old.unwrap_or_default();
        let from = ix.len;
        let long = ix.torn_tail.filter(|_| ix.long_tail).map(|(a, b)| b - a);
        let tail = input::read_line_batches::<io::Error>(&f, from, long, max, 1 << 20, |lines| {
            lines.iter().for_each(|&l| ix.push(l));
            Ok(())
        })?;
        ix.tail(&tail);
        ix.recs.shrink_to_fit();
        Ok(ix)
    }
}

impl SessionMeta {
    /// Approximate heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        let s = |o: &Option<String>| o.as_ref().map_or(0, |s| s.len());
        std::mem::size_of::<SessionMeta>()
            + self.thread_id.len()
            + s(&self.session_id)
            + s(&self.cwd)
            + s(&self.timestamp)
            + s(&self.originator)
            + s(&self.cli_version)
            + s(&self.model_provider)
            + s(&self.thread_source)
            + s(&self.agent_nickname)
            + s(&self.parent_thread_id)
            + s(&self.forked_from_id)
            + 256
            + self.history_base.as_ref().map_or(0, |h| h.page_id.len())
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

    /// How fast the head of a line is read, through serde and by [`check::head`],
    /// over the pages under `$SESSIONFS_BENCH_CODEX` (a `sessions` folder), with both
    /// answers compared on every line:
    /// `SESSIONFS_BENCH_CODEX=… cargo test --release --lib page::tests::head_rate -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn head_rate() {
        use std::time::{Duration, Instant};
        let Some(dir) = std::env::var_os("SESSIONFS_BENCH_CODEX") else {
            eprintln!("set SESSIONFS_BENCH_CODEX to a Codex `sessions` folder");
            return;
        };
        let files = crate::model::core::scan::tests::jsonl_files(Path::new(&dir));
        let (mut bytes, mut lines, mut unsure, mut broken) = (0usize, 0usize, 0usize, 0usize);
        let (mut old, mut new) = (Duration::ZERO, Duration::ZERO);
        for f in &files {
            let src = std::fs::read(f).unwrap();
            let ls: Vec<&[u8]> = src.split(|&b| b == b'\n').collect();
            let ls = &ls[..ls.len() - 1];
            bytes += ls.iter().map(|l| l.len() + 1).sum::<usize>();
            lines += ls.len();
            let t = Instant::now();
            let a: Vec<_> = ls.iter().map(|l| check::by_serde(l)).collect();
            old += t.elapsed();
            let t = Instant::now();
            let b: Vec<_> = ls.iter().map(|l| check::head(l)).collect();
            new += t.elapsed();
            for (l, (a, b)) in ls.iter().zip(a.iter().zip(&b)) {
                assert_eq!(a, b, "{}: {}", f.display(), String::from_utf8_lossy(l));
                broken += a.is_none() as usize;
                unsure += check::fast(l).is_err() as usize;
            }
        }
        let mb = bytes as f64 / 1e6;
        eprintln!(
            "{} pages, {lines} lines, {mb:.0} MB ({broken} refused, {unsure} left to serde): \
             serde {:.0} MB/s, head {:.0} MB/s ({:.2}x)",
            files.len(),
            mb / old.as_secs_f64(),
            mb / new.as_secs_f64(),
            old.as_secs_f64() / new.as_secs_f64(),
        );
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
