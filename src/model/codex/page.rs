//! One page's lines, and its `session_meta`.
//!
//! Every line is compact JSON ending in `\n`: `{timestamp, ordinal, type, payload
//! [, metadata]}` (CODEX-FORMAT §2). Only complete lines count: a last line without its
//! `\n` is being written (or was torn by a crash) and Codex itself skips it (§10), so it
//! is kept apart as [`Page::torn_tail`] rather than guessed at. A line that is not JSON
//! is kept as [`LineKind::Broken`] so that `check` can name it, and skipped everywhere
//! else, as Codex skips it.

use serde_json::{Map, Value};

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
#[derive(Debug, Clone)]
pub struct Line {
    /// Byte range in the page's (decompressed) bytes, the `\n` included in `end`.
    pub start: u64,
    pub end: u64,
    /// 1-based line number in the page file.
    pub number: usize,
    pub ordinal: Option<i64>,
    pub has_timestamp: bool,
    pub kind: LineKind,
    /// The whole line as parsed (`Value::Null` for a broken line).
    pub value: Value,
}

impl Line {
    pub fn payload(&self) -> &Value {
        &self.value["payload"]
    }

    /// `payload.type` (`message`, `reasoning`, `function_call`, …).
    pub fn payload_type(&self) -> &str {
        self.payload()["type"].as_str().unwrap_or("")
    }

    pub fn timestamp(&self) -> Option<&str> {
        self.value["timestamp"].as_str()
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
    let mut start = 0usize;
    let mut number = 0usize;
    while start < bytes.len() {
        let Some(nl) = memchr::memchr(b'\n', &bytes[start..]) else {
            out.torn_tail = Some((start as u64, bytes.len() as u64));
            break;
        };
        let end = start + nl + 1;
        number += 1;
        let text = &bytes[start..start + nl];
        let line = parse_line(text, start as u64, end as u64, number);
        if out.meta.is_none() && line.kind == LineKind::SessionMeta {
            out.meta = SessionMeta::from_payload(line.payload());
        }
        out.lines.push(line);
        start = end;
    }
    out
}

fn parse_line(text: &[u8], start: u64, end: u64, number: usize) -> Line {
    let value: Value = match serde_json::from_slice(text) {
        Ok(v @ Value::Object(_)) => v,
        _ => {
            return Line {
                start,
                end,
                number,
                ordinal: None,
                has_timestamp: false,
                kind: LineKind::Broken,
                value: Value::Null,
            };
        }
    };
    Line {
        start,
        end,
        number,
        ordinal: value["ordinal"].as_i64(),
        has_timestamp: value["timestamp"].is_string(),
        kind: LineKind::of(value["type"].as_str().unwrap_or("")),
        value,
    }
}

/// The index of the last line that ends at or before `offset`: the lines within
/// `[0, offset)` are `lines[..count_within(lines, offset)]` (§3.1).
pub fn count_within(lines: &[Line], offset: u64) -> usize {
    lines.partition_point(|l| l.end <= offset)
}
