//! One session's rows, read in one snapshot (OPENCODE-FORMAT.md §2, §3).
//!
//! A session is its `session` row, its `message` rows in the order opencode reads them
//! (`time_created`, then `id`: §3.1) and each message's `part` rows by `id`. Besides
//! those, [`read_session`] reads:
//!
//! * the sessions its subagents ran in (`session.parent_id`, §5.6), with their rows, so
//!   that a subagent shows inside the session that ran it;
//! * the messages opencode deleted (the first prompt after an `/undo` deletes the
//!   hidden ones, §3.4): the `event` table keeps every `message.updated.1` and
//!   `message.part.updated.1` it wrote for them, so they are rebuilt from the last event
//!   of each (§3.5). Only a session with a `message.removed.1` event is looked at that
//!   closely; for the others that is one indexed query.
//!
//! Nothing here interprets a message: rows are kept as opencode stored them (`data` as
//! its text), for the agent to index and render.

use super::db::{self, DbError};
use rusqlite::{Connection, OptionalExtension, types::ValueRef};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// How deep subagents of subagents are followed.
const MAX_SUBAGENT_DEPTH: usize = 8;

/// A `session` row: the columns a reader needs, and all of them as JSON.
#[derive(Debug, Clone, Default)]
pub struct SessionRow {
    pub id: String,
    pub project_id: String,
    pub parent_id: Option<String>,
    pub directory: String,
    pub title: String,
    pub revert: Option<String>,
    pub permission: Option<String>,
    pub time_created: i64,
    pub time_updated: i64,
    pub time_compacting: Option<i64>,
    /// Every column, by name, with the values SQLite holds (text as text).
    pub columns: Map<String, Value>,
}

/// A `project` row (the columns shown).
#[derive(Debug, Clone, Default)]
pub struct ProjectRow {
    pub id: String,
    pub worktree: String,
    pub vcs: Option<String>,
    pub name: Option<String>,
}

/// A `part` row, or a part rebuilt from the event log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartRec {
    pub id: String,
    pub time_created: i64,
    pub data: String,
}

/// Where a message comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A row of `message`.
    Row,
    /// Deleted by opencode; rebuilt from the `event` table (`seq` of its removal).
    Deleted { removed_seq: i64 },
}

/// A message with its parts, in the order opencode reads them.
#[derive(Debug, Clone)]
pub struct MessageRec {
    pub id: String,
    pub session_id: String,
    pub time_created: i64,
    pub time_updated: i64,
    /// `message.data` as stored (for a deleted message: its last event's `info`, as
    /// JSON text).
    pub data: String,
    pub parts: Vec<PartRec>,
    pub origin: Origin,
    /// The `seq` of the first event that wrote it, when the session's event log was
    /// read (to place the branches of deleted messages).
    pub created_seq: Option<i64>,
}

/// A session's rows at one moment.
#[derive(Debug, Clone, Default)]
pub struct SessionRows {
    pub row: SessionRow,
    /// Its rows, in order (§3.1).
    pub messages: Vec<MessageRec>,
    /// Messages opencode deleted, from the event log, in the order of §3.1.
    pub deleted: Vec<MessageRec>,
    /// `part` rows of the session whose message is not there (§10: ignored).
    pub orphan_parts: usize,
}

/// A session and everything shown with it, read in one snapshot.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub main: SessionRows,
    pub project: Option<ProjectRow>,
    /// The sessions its subagents ran in, subagents' subagents too, oldest first.
    pub subagents: Vec<SessionRows>,
    pub fingerprint: Fingerprint,
}

/// What changes when a session's rows change: per table, the row count and the latest
/// `time_updated` (opencode sets it on every write of a row), over the session and its
/// subagents; and the session row's own `time_updated`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fingerprint {
    pub sessions: Vec<(String, i64)>,
    pub messages: (i64, i64),
    pub parts: (i64, i64),
}

impl Fingerprint {
    /// The latest write it saw, in ms.
    pub fn latest(&self) -> i64 {
        self.messages
            .1
            .max(self.parts.1)
            .max(self.sessions.iter().map(|s| s.1).max().unwrap_or(0))
    }
}

fn value_json(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::from(i),
        ValueRef::Real(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        ValueRef::Text(t) => Value::String(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::String(String::from_utf8_lossy(b).into_owned()),
    }
}

fn text(m: &Map<String, Value>, k: &str) -> Option<String> {
    m.get(k).and_then(Value::as_str).map(str::to_string)
}

fn int(m: &Map<String, Value>, k: &str) -> Option<i64> {
    m.get(k).and_then(Value::as_i64)
}

/// The `session` row `id`, if there is one.
pub fn session_row(c: &Connection, id: &str) -> rusqlite::Result<Option<SessionRow>> {
    let mut stmt = c.prepare("SELECT * FROM session WHERE id = ?1")?;
    let names: Vec<String> = stmt.column_names().map(|s| s.to_string()).collect();
    stmt.query_row([id], |r| {
        let mut columns = Map::new();
        for (k, n) in names.iter().enumerate() {
            columns.insert(n.clone(), value_json(r.get_ref(k)?));
        }
        Ok(row_of(columns))
    })
    .optional()
}

fn row_of(columns: Map<String, Value>) -> SessionRow {
    SessionRow {
        id: text(&columns, "id").unwrap_or_default(),
        project_id: text(&columns, "project_id").unwrap_or_default(),
        parent_id: text(&columns, "parent_id"),
        directory: text(&columns, "directory").unwrap_or_default(),
        title: text(&columns, "title").unwrap_or_default(),
        revert: text(&columns, "revert"),
        permission: text(&columns, "permission"),
        time_created: int(&columns, "time_created").unwrap_or(0),
        time_updated: int(&columns, "time_updated").unwrap_or(0),
        time_compacting: int(&columns, "time_compacting"),
        columns,
    }
}

/// The `project` row `id`, if there is one.
pub fn project_row(c: &Connection, id: &str) -> rusqlite::Result<Option<ProjectRow>> {
    c.query_row(
        "SELECT id, worktree, vcs, name FROM project WHERE id = ?1",
        [id],
        |r| {
            Ok(ProjectRow {
                id: r.get(0)?,
                worktree: r.get(1)?,
                vcs: r.get(2)?,
                name: r.get(3)?,
            })
        },
    )
    .optional()
}

/// The ids of the sessions whose `parent_id` is `id`, oldest first.
fn child_ids(c: &Connection, id: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt =
        c.prepare("SELECT id FROM session WHERE parent_id = ?1 ORDER BY time_created, id")?;
    let ids = stmt.query_map([id], |r| r.get::<_, String>(0))?;
    ids.collect()
}

/// `id` and its subagents' sessions, depth first, parents before children.
fn family(c: &Connection, id: &str) -> rusqlite::Result<Vec<String>> {
    let mut out = vec![id.to_string()];
    let mut seen: HashSet<String> = out.iter().cloned().collect();
    let mut level = vec![id.to_string()];
    for _ in 0..MAX_SUBAGENT_DEPTH {
        let mut next = Vec::new();
        for p in &level {
            for k in child_ids(c, p)? {
                if seen.insert(k.clone()) {
                    next.push(k);
                }
            }
        }
        if next.is_empty() {
            break;
        }
        out.extend(next.iter().cloned());
        level = next;
    }
    Ok(out)
}

/// The [`Fingerprint`] of the sessions `ids`.
pub fn fingerprint_of(c: &Connection, ids: &[String]) -> rusqlite::Result<Fingerprint> {
    let mut f = Fingerprint::default();
    for id in ids {
        let t: Option<i64> = c
            .query_row(
                "SELECT time_updated FROM session WHERE id = ?1",
                [id],
                |r| r.get(0),
            )
            .optional()?;
        f.sessions.push((id.clone(), t.unwrap_or(-1)));
        let (n, m): (i64, Option<i64>) = c.query_row(
            "SELECT count(*), max(time_updated) FROM message WHERE session_id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        f.messages.0 += n;
        f.messages.1 = f.messages.1.max(m.unwrap_or(0));
        let (n, m): (i64, Option<i64>) = c.query_row(
            "SELECT count(*), max(time_updated) FROM part WHERE session_id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        f.parts.0 += n;
        f.parts.1 = f.parts.1.max(m.unwrap_or(0));
    }
    Ok(f)
}

/// The fingerprint of session `id` and its subagents now (one snapshot).
pub fn read_fingerprint(db_path: &Path, id: &str) -> Result<Option<Fingerprint>, DbError> {
    db::read(db_path, |c| {
        if session_row(c, id)?.is_none() {
            return Ok(None);
        }
        let ids = family(c, id)?;
        fingerprint_of(c, &ids).map(Some)
    })
}

/// The rows of session `id` (messages in order, parts by id, deleted messages).
fn rows_of(c: &Connection, row: SessionRow, has_events: bool) -> rusqlite::Result<SessionRows> {
    let id = row.id.clone();
    let mut messages = Vec::new();
    {
        let mut stmt = c.prepare(
            "SELECT id, time_created, time_updated, data FROM message \
             WHERE session_id = ?1 ORDER BY time_created, id",
        )?;
        let rows = stmt.query_map([&id], |r| {
            Ok(MessageRec {
                id: r.get(0)?,
                session_id: id.clone(),
                time_created: r.get(1)?,
                time_updated: r.get(2)?,
                data: text_col(r, 3)?,
                parts: Vec::new(),
                origin: Origin::Row,
                created_seq: None,
            })
        })?;
        for m in rows {
            messages.push(m?);
        }
    }
    let mut index: HashMap<String, usize> = HashMap::with_capacity(messages.len());
    for (k, m) in messages.iter().enumerate() {
        index.insert(m.id.clone(), k);
    }
    let mut orphan_parts = 0;
    {
        let mut stmt = c.prepare(
            "SELECT id, message_id, time_created, data FROM part \
             WHERE session_id = ?1 ORDER BY message_id, id",
        )?;
        let rows = stmt.query_map([&id], |r| {
            Ok((
                r.get::<_, String>(1)?,
                PartRec {
                    id: r.get(0)?,
                    time_created: r.get(2)?,
                    data: text_col(r, 3)?,
                },
            ))
        })?;
        for p in rows {
            let (mid, p) = p?;
            match index.get(&mid) {
                Some(&k) => messages[k].parts.push(p),
                None => orphan_parts += 1,
            }
        }
    }
    let mut out = SessionRows {
        row,
        messages,
        deleted: Vec::new(),
        orphan_parts,
    };
    if has_events {
        read_deleted(c, &mut out)?;
    }
    Ok(out)
}

/// A text column that may hold bytes that are not UTF-8 (kept, lossily).
fn text_col(r: &rusqlite::Row<'_>, k: usize) -> rusqlite::Result<String> {
    Ok(match r.get_ref(k)? {
        ValueRef::Text(t) | ValueRef::Blob(t) => String::from_utf8_lossy(t).into_owned(),
        ValueRef::Null => String::new(),
        ValueRef::Integer(i) => i.to_string(),
        ValueRef::Real(f) => f.to_string(),
    })
}

/// The messages opencode deleted from the session, rebuilt from its event log (§3.5):
/// each from the last `message.updated.1` event of its id, with the parts of its last
/// `message.part.updated.1` events (less those a `message.part.removed.1` removed). Also
/// notes, for every message, the `seq` of the event that first wrote it.
fn read_deleted(c: &Connection, rows: &mut SessionRows) -> rusqlite::Result<()> {
    let sid = rows.row.id.clone();
    let mut removed: HashMap<String, i64> = HashMap::new();
    {
        let mut stmt = c.prepare(
            "SELECT seq, data FROM event WHERE aggregate_id = ?1 AND type = 'message.removed.1'",
        )?;
        let evs = stmt.query_map([&sid], |r| Ok((r.get::<_, i64>(0)?, text_col(r, 1)?)))?;
        for e in evs {
            let (seq, data) = e?;
            if let Ok(v) = serde_json::from_str::<Value>(&data)
                && let Some(m) = v.get("messageID").and_then(Value::as_str)
            {
                removed.insert(m.to_string(), seq);
            }
        }
    }
    let live: HashSet<String> = rows.messages.iter().map(|m| m.id.clone()).collect();
    removed.retain(|id, _| !live.contains(id));
    if removed.is_empty() {
        return Ok(());
    }
    // Every write of the session's messages and parts, in order.
    let mut infos: HashMap<String, (i64, Value)> = HashMap::new();
    let mut first_seq: HashMap<String, i64> = HashMap::new();
    let mut parts: HashMap<String, Vec<(String, Value)>> = HashMap::new();
    let mut stmt = c.prepare(
        "SELECT seq, type, data FROM event WHERE aggregate_id = ?1 AND type IN \
         ('message.updated.1', 'message.part.updated.1', 'message.part.removed.1') ORDER BY seq",
    )?;
    let evs = stmt.query_map([&sid], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, text_col(r, 2)?))
    })?;
    for e in evs {
        let (seq, ty, data) = e?;
        let Ok(v) = serde_json::from_str::<Value>(&data) else {
            continue;
        };
        match ty.as_str() {
            "message.updated.1" => {
                let Some(info) = v.get("info") else { continue };
                let Some(id) = info.get("id").and_then(Value::as_str) else {
                    continue;
                };
                first_seq.entry(id.to_string()).or_insert(seq);
                if removed.contains_key(id) {
                    infos.insert(id.to_string(), (seq, info.clone()));
                }
            }
            "message.part.updated.1" => {
                let Some(part) = v.get("part") else { continue };
                let (Some(mid), Some(pid)) = (
                    part.get("messageID").and_then(Value::as_str),
                    part.get("id").and_then(Value::as_str),
                ) else {
                    continue;
                };
                if !removed.contains_key(mid) {
                    continue;
                }
                let list = parts.entry(mid.to_string()).or_default();
                match list.iter_mut().find(|(p, _)| p == pid) {
                    Some(slot) => slot.1 = part.clone(),
                    None => list.push((pid.to_string(), part.clone())),
                }
            }
            "message.part.removed.1" => {
                if let (Some(mid), Some(pid)) = (
                    v.get("messageID").and_then(Value::as_str),
                    v.get("partID").and_then(Value::as_str),
                ) && let Some(list) = parts.get_mut(mid)
                {
                    list.retain(|(p, _)| p != pid);
                }
            }
            _ => {}
        }
    }
    for m in rows.messages.iter_mut() {
        m.created_seq = first_seq.get(&m.id).copied();
    }
    let mut deleted = Vec::new();
    for (id, removed_seq) in removed {
        let Some((_, info)) = infos.remove(&id) else {
            // Its content was never logged: nothing to show.
            continue;
        };
        let created = info
            .get("time")
            .and_then(|t| t.get("created"))
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let mut ps: Vec<(String, Value)> = parts.remove(&id).unwrap_or_default();
        ps.sort_by(|a, b| a.0.cmp(&b.0));
        deleted.push(MessageRec {
            id: id.clone(),
            session_id: sid.clone(),
            time_created: created,
            time_updated: created,
            data: strip_ids(info, &["id", "sessionID"]),
            parts: ps
                .into_iter()
                .map(|(pid, p)| PartRec {
                    id: pid,
                    time_created: created,
                    data: strip_ids(p, &["id", "sessionID", "messageID"]),
                })
                .collect(),
            origin: Origin::Deleted { removed_seq },
            created_seq: first_seq.get(&id).copied(),
        });
    }
    deleted.sort_by(|a, b| (a.time_created, &a.id).cmp(&(b.time_created, &b.id)));
    rows.deleted = deleted;
    Ok(())
}

/// `v`'s JSON text without the ids opencode adds when it reads a row (the row's
/// `data` does not hold them).
fn strip_ids(v: Value, keys: &[&str]) -> String {
    match v {
        Value::Object(mut m) => {
            for k in keys {
                m.shift_remove(*k);
            }
            crate::model::core::js::js_stringify(&Value::Object(m))
        }
        other => crate::model::core::js::js_stringify(&other),
    }
}

/// Reads session `id` with its subagents and deleted messages in one snapshot.
/// `Ok(None)` when there is no such session.
pub fn read_session(db_path: &Path, id: &str) -> Result<Option<Snapshot>, DbError> {
    db::read(db_path, |c| {
        let Some(row) = session_row(c, id)? else {
            return Ok(None);
        };
        let has_events = !db::columns(c, "event")?.is_empty();
        let project = project_row(c, &row.project_id)?;
        let ids = family(c, id)?;
        let fingerprint = fingerprint_of(c, &ids)?;
        let main = rows_of(c, row, has_events)?;
        let mut subagents = Vec::new();
        for k in ids.iter().skip(1) {
            if let Some(r) = session_row(c, k)? {
                subagents.push(rows_of(c, r, has_events)?);
            }
        }
        Ok(Some(Snapshot {
            main,
            project,
            subagents,
            fingerprint,
        }))
    })
}
