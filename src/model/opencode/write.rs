//! Replies and forks written into opencode's database, as opencode writes them
//! (OPENCODE-FORMAT.md §9, measured with the kit's `accepts.sh`).
//!
//! * **At the leaf** (the session's last message, no `/undo` pending): a `message` row
//!   (`{"role":"user","time":{"created"},"agent","model"}`, agent and model those of
//!   the last user message) and its `part` row (`{"type":"text","text"}`), then the
//!   session's `time_updated` (opencode's pickers sort by it). `opencode run --session`
//!   then sends the written message, followed by its new prompt.
//! * **At an earlier message** (or one hidden by a pending `/undo`, which opencode's
//!   next prompt would delete with anything written after it): a fork, as opencode's
//!   `Session.fork` writes one: a new session (a new descending id and slug, the title
//!   `<title> (fork #N)`, the source's directory, path, workspace and metadata, no
//!   permission rules, agent, model or revert, times now, its tokens and cost the sums
//!   of the copied answers as opencode's running count makes them), copies of the messages up to
//!   and including that one (new ascending ids, each its source's `time_created`,
//!   `parentID` remapped to the copies) with copies of their parts (new ids, the same
//!   data, a compaction's `tail_start_id` remapped), then the turn as at a leaf.
//!   Nothing of the source session changes.
//!
//! Everything one reply writes is one `BEGIN IMMEDIATE … COMMIT` transaction of a
//! read-write connection with a busy timeout (`super::db`): SQLite's own locking, as
//! opencode's writes use it, so neither program can see the other's half-written
//! rows, and a failure leaves nothing. Ids are opencode's (§2.1), made after the last
//! message's so that a new message sorts last.
//!
//! **Refused at `open`** (the shell's redirection fails, nothing written): never
//! written ([`fixed_refusal`], [`fork_refusal`]: the file shows no write bit and the
//! mount answers `EACCES`): a reply at the root (a session starts with `opencode
//! run`), under a message opencode deleted (only its event log keeps it) or a
//! subagent's (opencode runs a subagent from its `task` call); not now ([`refusal`],
//! asked at every `open`), with its errno: while opencode is writing a reply in the
//! session (`EBUSY`: its last message is an unfinished answer, or a compaction is
//! running), or when the database cannot be written now (`EBUSY` while opencode holds
//! its write lock past [`db::PROBE_BUSY`], `EACCES`/`EROFS`).

use super::db::{self, DbError};
use super::index::{OpencodeSession, Part};
use crate::model::core::fork::ForkError;
use crate::model::core::js::js_stringify;
use crate::model::core::reply::AppendError;
use crate::model::core::session::Session;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior};
use serde_json::{Map, Value, json};
use std::path::PathBuf;

/// An answer still being written is taken for opencode at work for this long after
/// its last write (ms); an older one was left by an opencode that stopped.
const BUSY_FOR_MS: i64 = 10 * 60 * 1000;

fn refused(errno: i32, message: String) -> AppendError {
    AppendError::Refused { errno, message }
}

fn from_db(e: DbError) -> AppendError {
    refused(e.errno, e.reason)
}

/// Why a reply under entry `i` (`None`: the root) cannot be written now.
pub fn refusal(a: &OpencodeSession, s: &Session, i: Option<u32>) -> Option<AppendError> {
    fixed_refusal(a, s, i).or_else(|| probe(a).err())
}

/// Why a reply under entry `i` (`None`: the root) can never be written, whatever the
/// database's state.
pub fn fixed_refusal(a: &OpencodeSession, s: &Session, i: Option<u32>) -> Option<AppendError> {
    let Some(i) = i else {
        return Some(refused(
            libc::EOPNOTSUPP,
            "an opencode session starts with `opencode run`: write to an entry's reply \
             (at the leaf it continues the session, earlier it forks it)"
                .into(),
        ));
    };
    match a.meta(i).part {
        Part::Deleted => {
            return Some(refused(
                libc::EROFS,
                format!(
                    "message {} was deleted by opencode (an /undo, then a new prompt); it is \
                     shown from opencode's event log and no agent can continue from it",
                    s.id_string(i)
                ),
            ));
        }
        Part::Subagent(_) => {
            return Some(refused(
                libc::EOPNOTSUPP,
                format!(
                    "message {} is a subagent's: opencode runs a subagent from its task call \
                     and never resumes it; reply in the session that ran it",
                    s.id_string(i)
                ),
            ));
        }
        Part::Main => {}
    }
    None
}

/// Whether the session can be written now: opencode is not writing a reply in it, and
/// the database's write lock can be had (taken and let go at once).
fn probe(a: &OpencodeSession) -> Result<(), AppendError> {
    let mut c = db::open_write(&a.db, db::PROBE_BUSY).map_err(from_db)?;
    let tx = c
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| from_db(db::db_error(&a.db, e)))?;
    let busy = busy_in(&tx, &a.sid).map_err(|e| from_db(db::db_error(&a.db, e)))?;
    drop(tx);
    match busy {
        Some(why) => Err(refused(libc::EBUSY, why)),
        None => Ok(()),
    }
}

/// Why opencode is at work in session `sid` right now, if it is.
fn busy_in(c: &Connection, sid: &str) -> rusqlite::Result<Option<String>> {
    let compacting: Option<Option<i64>> = c
        .query_row(
            "SELECT time_compacting FROM session WHERE id = ?1",
            [sid],
            |r| r.get(0),
        )
        .optional()?;
    match compacting {
        None => return Ok(Some(format!("there is no session {sid} any more"))),
        Some(Some(_)) => {
            return Ok(Some(format!(
                "opencode is compacting session {sid} right now; try again when it is done"
            )));
        }
        Some(None) => {}
    }
    let last: Option<(String, String, i64)> = c
        .query_row(
            "SELECT id, data, time_updated FROM message WHERE session_id = ?1 \
             ORDER BY time_created DESC, id DESC LIMIT 1",
            [sid],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    let Some((id, data, updated)) = last else {
        return Ok(None);
    };
    let v: Value = serde_json::from_str(&data).unwrap_or(Value::Null);
    let unfinished = v.get("role").and_then(Value::as_str) == Some("assistant")
        && v.get("time").and_then(|t| t.get("completed")).is_none()
        && v.get("error").is_none_or(Value::is_null);
    let recent = updated >= crate::model::core::time::now_ms() - BUSY_FOR_MS;
    Ok((unfinished && recent).then(|| {
        format!(
            "opencode is writing a reply in session {sid} right now (its last message, {id}, \
             is an unfinished answer); try again when it is done"
        )
    }))
}

/// Makes opencode's ids (§2.1): `PREFIX_` + 12 hex digits of `ms * 4096 + counter`
/// (inverted for sessions) + 14 base62 characters. Each id is past the one before
/// and past `floor`.
struct Ids {
    next: u64,
}

const B62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const MASK48: u64 = (1 << 48) - 1;

fn random_tail() -> String {
    (0..14)
        .map(|_| B62[(crate::model::core::id::random_u32() % 62) as usize] as char)
        .collect()
}

/// The 48-bit value of an ascending id (`msg_2450da7ff001…` → `0x2450da7ff001`).
fn id_value(id: &str) -> Option<u64> {
    let hex = id.split_once('_')?.1.get(..12)?;
    u64::from_str_radix(hex, 16).ok()
}

impl Ids {
    fn new(now_ms: i64, floor: Option<&str>) -> Ids {
        let base = ((now_ms.max(0) as u64) << 12) + 1;
        // The floor's 48 bits, in the same era as now's.
        let after = floor
            .and_then(id_value)
            .map_or(0, |v| (base & !MASK48 | v) + 1);
        Ids {
            next: base.max(after),
        }
    }
    fn take(&mut self) -> u64 {
        let v = self.next & MASK48;
        self.next += 1;
        v
    }
    fn ascending(&mut self, prefix: &str) -> String {
        format!("{prefix}_{:012x}{}", self.take(), random_tail())
    }
    fn descending(&mut self, prefix: &str) -> String {
        format!("{prefix}_{:012x}{}", !self.take() & MASK48, random_tail())
    }
}

/// A slug as opencode's (two random words), for a new session.
fn slug() -> String {
    const A: &[&str] = &[
        "brave", "calm", "clever", "cosmic", "crisp", "eager", "gentle", "glowing", "happy",
        "hidden", "kind", "misty", "neon", "proud", "quiet", "silent", "swift", "tidy", "witty",
    ];
    const N: &[&str] = &[
        "canyon", "comet", "falcon", "forest", "garden", "harbor", "island", "meadow", "orchid",
        "planet", "river", "rocket", "star", "tiger", "valley", "willow",
    ];
    let r = crate::model::core::id::random_u32() as usize;
    format!("{}-{}", A[r % A.len()], N[(r / A.len()) % N.len()])
}

/// A message row of the session, in order.
struct Row {
    id: String,
    time_created: i64,
    data: String,
}

fn rows(c: &Connection, sid: &str) -> rusqlite::Result<Vec<Row>> {
    let mut stmt = c.prepare(
        "SELECT id, time_created, data FROM message WHERE session_id = ?1 \
         ORDER BY time_created, id",
    )?;
    let r = stmt.query_map([sid], |r| {
        Ok(Row {
            id: r.get(0)?,
            time_created: r.get(1)?,
            data: r.get(2)?,
        })
    })?;
    r.collect()
}

/// The user message data of a turn written after `upto` (the agent and model of the
/// last user message among them).
fn user_data(upto: &[Row], now: i64) -> String {
    let last = upto.iter().rev().find_map(|r| {
        let v: Value = serde_json::from_str(&r.data).ok()?;
        (v.get("role").and_then(Value::as_str) == Some("user")).then_some(v)
    });
    let mut d = Map::new();
    d.insert("role".into(), json!("user"));
    d.insert("time".into(), json!({"created": now}));
    let agent = last
        .as_ref()
        .and_then(|v| v.get("agent").cloned())
        .unwrap_or_else(|| json!("build"));
    d.insert("agent".into(), agent);
    if let Some(m) = last
        .as_ref()
        .and_then(|v| v.get("model"))
        .filter(|m| m.is_object())
    {
        d.insert("model".into(), m.clone());
    }
    js_stringify(&Value::Object(d))
}

/// Inserts the user turn (a message and its text part) into session `sid`.
fn insert_turn(
    c: &Connection,
    sid: &str,
    ids: &mut Ids,
    now: i64,
    data: &str,
    text: &str,
) -> rusqlite::Result<String> {
    let mid = ids.ascending("msg");
    let pid = ids.ascending("prt");
    c.execute(
        "INSERT INTO message (id, session_id, time_created, time_updated, data) \
         VALUES (?1, ?2, ?3, ?3, ?4)",
        rusqlite::params![mid, sid, now, data],
    )?;
    let part = js_stringify(&json!({"type": "text", "text": text}));
    c.execute(
        "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) \
         VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
        rusqlite::params![pid, mid, sid, now, part],
    )?;
    Ok(mid)
}

/// What went wrong inside a write transaction.
enum Failed {
    Db(rusqlite::Error),
    Refused(i32, String),
}

impl From<rusqlite::Error> for Failed {
    fn from(e: rusqlite::Error) -> Self {
        Failed::Db(e)
    }
}

/// The cost and tokens (input, output, reasoning, cache read, cache write) of the
/// answers among `rows`, summed as opencode's running count of a session sums them
/// (OPENCODE-FORMAT.md §8).
fn sums(rows: &[Row]) -> (f64, [i64; 5]) {
    let mut cost = 0.0;
    let mut t = [0i64; 5];
    for r in rows {
        let Ok(v) = serde_json::from_str::<Value>(&r.data) else {
            continue;
        };
        if v.get("role").and_then(Value::as_str) != Some("assistant") {
            continue;
        }
        cost += v.get("cost").and_then(Value::as_f64).unwrap_or(0.0);
        let n = |path: &[&str]| {
            path.iter()
                .try_fold(&v["tokens"], |v, k| v.get(k))
                .and_then(Value::as_i64)
                .unwrap_or(0)
        };
        for (k, path) in [
            &["input"][..],
            &["output"],
            &["reasoning"],
            &["cache", "read"],
            &["cache", "write"],
        ]
        .iter()
        .enumerate()
        {
            t[k] += n(path);
        }
    }
    (cost, t)
}

/// Copies session `sid`'s messages up to and including `upto` into a new session, as
/// opencode's fork does: the new session's id.
fn fork_rows(
    c: &Connection,
    sid: &str,
    rows: &[Row],
    ids: &mut Ids,
    now: i64,
) -> Result<String, Failed> {
    let src: Map<String, Value> = {
        let mut stmt = c.prepare("SELECT * FROM session WHERE id = ?1")?;
        let names: Vec<String> = stmt.column_names().map(|s| s.to_string()).collect();
        stmt.query_row([sid], |r| {
            let mut m = Map::new();
            for (k, n) in names.iter().enumerate() {
                let v = match r.get_ref(k)? {
                    rusqlite::types::ValueRef::Null => Value::Null,
                    rusqlite::types::ValueRef::Integer(i) => json!(i),
                    rusqlite::types::ValueRef::Real(f) => json!(f),
                    rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                        json!(String::from_utf8_lossy(t))
                    }
                };
                m.insert(n.clone(), v);
            }
            Ok(m)
        })?
    };
    let g = |k: &str| src.get(k).cloned().unwrap_or(Value::Null);
    let title = super::forks::fork_title(src.get("title").and_then(Value::as_str).unwrap_or(""));
    let new_sid = ids.descending("ses");
    let cols = db::columns(c, "session")?;
    let mut names = Vec::new();
    let mut vals: Vec<Value> = Vec::new();
    let mut set = |k: &str, v: Value| {
        if cols.iter().any(|c| c == k) {
            names.push(k.to_string());
            vals.push(v);
        }
    };
    set("id", json!(new_sid));
    set("project_id", g("project_id"));
    set("workspace_id", g("workspace_id"));
    set("parent_id", Value::Null);
    set("slug", json!(slug()));
    set("directory", g("directory"));
    set("path", g("path"));
    set("title", json!(title));
    set("version", g("version"));
    set("metadata", g("metadata"));
    // opencode's fork writes each copy as an updated message, and its running count
    // adds every copied answer's usage: a fork starts with the sums of its copies.
    let (cost, tokens) = sums(rows);
    set("cost", json!(cost));
    for (t, n) in [
        "tokens_input",
        "tokens_output",
        "tokens_reasoning",
        "tokens_cache_read",
        "tokens_cache_write",
    ]
    .into_iter()
    .zip(tokens)
    {
        set(t, json!(n));
    }
    set("time_created", json!(now));
    set("time_updated", json!(now));
    let sql = format!(
        "INSERT INTO session ({}) VALUES ({})",
        names.join(", "),
        (1..=names.len())
            .map(|k| format!("?{k}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let params: Vec<rusqlite::types::Value> = vals
        .into_iter()
        .map(|v| match v {
            Value::Null => rusqlite::types::Value::Null,
            Value::Number(n) if n.is_i64() => {
                rusqlite::types::Value::Integer(n.as_i64().unwrap_or(0))
            }
            Value::Number(n) => rusqlite::types::Value::Real(n.as_f64().unwrap_or(0.0)),
            Value::String(t) => rusqlite::types::Value::Text(t),
            other => rusqlite::types::Value::Text(other.to_string()),
        })
        .collect();
    c.execute(&sql, rusqlite::params_from_iter(params))?;
    // The copies: ids first, so that `parentID` can name them.
    let mut map: std::collections::HashMap<&str, String> = Default::default();
    for r in rows {
        map.insert(&r.id, ids.ascending("msg"));
    }
    let mut parts_stmt = c.prepare("SELECT data FROM part WHERE message_id = ?1 ORDER BY id")?;
    for r in rows {
        let mut v: Value = serde_json::from_str(&r.data).map_err(|_| {
            Failed::Refused(
                libc::EIO,
                format!(
                    "message {} of the session is not JSON (a damaged row): it cannot be \
                     copied into a fork, and opencode cannot continue the session either",
                    r.id
                ),
            )
        })?;
        if v.get("role").and_then(Value::as_str) == Some("assistant")
            && let Some(p) = v.get("parentID").and_then(Value::as_str)
            && let Some(np) = map.get(p)
        {
            v["parentID"] = json!(np);
        }
        let new_id = &map[r.id.as_str()];
        c.execute(
            "INSERT INTO message (id, session_id, time_created, time_updated, data) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
            rusqlite::params![new_id, new_sid, r.time_created, now, js_stringify(&v)],
        )?;
        let parts: Vec<String> = parts_stmt
            .query_map([&r.id], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for p in parts {
            let mut data = p;
            if data.contains("tail_start_id")
                && let Ok(mut pv) = serde_json::from_str::<Value>(&data)
                && pv.get("type").and_then(Value::as_str) == Some("compaction")
                && let Some(t) = pv.get("tail_start_id").and_then(Value::as_str)
            {
                if let Some(nt) = map.get(t) {
                    pv["tail_start_id"] = json!(nt);
                }
                data = js_stringify(&pv);
            }
            c.execute(
                "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) \
                 VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                rusqlite::params![ids.ascending("prt"), new_id, new_sid, now, data],
            )?;
        }
    }
    Ok(new_sid)
}

/// What one write does: `Some(text)` writes the turn too.
fn write(
    a: &OpencodeSession,
    at_id: &str,
    text: Option<&str>,
) -> Result<(String, Option<String>), Failed> {
    let mut c =
        db::open_write(&a.db, db::WRITE_BUSY).map_err(|e| Failed::Refused(e.errno, e.reason))?;
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    if text.is_some()
        && let Some(why) = busy_in(&tx, &a.sid)?
    {
        return Err(Failed::Refused(libc::EBUSY, why));
    }
    let all = rows(&tx, &a.sid)?;
    let Some(k) = all.iter().position(|r| r.id == at_id) else {
        return Err(Failed::Refused(
            libc::ENOENT,
            format!("message {at_id} is not in session {} any more", a.sid),
        ));
    };
    let revert: Option<String> = tx
        .query_row("SELECT revert FROM session WHERE id = ?1", [&a.sid], |r| {
            r.get(0)
        })
        .optional()?
        .flatten();
    let now = crate::model::core::time::now_ms().max(all.last().map_or(0, |r| r.time_created));
    let last_id = all.last().map(|r| r.id.as_str());
    let mut ids = Ids::new(now, last_id);
    let upto = &all[..=k];
    let at_leaf = k + 1 == all.len() && revert.is_none();
    let (target, mid) = if at_leaf && text.is_some() {
        (a.sid.clone(), None)
    } else {
        (fork_rows(&tx, &a.sid, upto, &mut ids, now)?, None::<String>)
    };
    let mid = match text {
        Some(t) => Some(insert_turn(
            &tx,
            &target,
            &mut ids,
            now,
            &user_data(upto, now),
            t,
        )?),
        None => mid,
    };
    tx.execute(
        "UPDATE session SET time_updated = ?1 WHERE id = ?2",
        rusqlite::params![now, target],
    )?;
    tx.commit()?;
    Ok((target, mid))
}

fn entry_id(s: &Session, parent: Option<&str>) -> Result<u32, AppendError> {
    let p = parent.ok_or_else(|| {
        refused(
            libc::EOPNOTSUPP,
            "an opencode session starts with `opencode run`: write to an entry's reply".into(),
        )
    })?;
    s.find(p)
        .ok_or_else(|| AppendError::NoSuchEntry(p.to_string()))
}

/// Writes a user turn under message `parent`: at the leaf, or as a fork (see the module
/// docs). The new message's id.
pub fn reply(
    a: &OpencodeSession,
    s: &Session,
    parent: Option<&str>,
    text: &str,
) -> Result<String, AppendError> {
    let i = entry_id(s, parent)?;
    if let Some(r) = refusal(a, s, Some(i)).filter(|r| r.errno() != libc::EBUSY) {
        return Err(r);
    }
    let id = a.meta(i).id.clone();
    match write(a, &id, Some(text)) {
        Ok((_, Some(mid))) => Ok(mid),
        Ok((_, None)) => Err(refused(libc::EIO, "nothing was written".into())),
        Err(Failed::Refused(errno, m)) => Err(refused(errno, m)),
        Err(Failed::Db(e)) => Err(from_db(db::db_error(&a.db, e))),
    }
}

/// Why the session can never be forked at entry `i`.
pub fn fork_refusal(a: &OpencodeSession, s: &Session, i: u32) -> Option<ForkError> {
    match a.meta(i).part {
        Part::Main => None,
        Part::Deleted => Some(ForkError::Refused(format!(
            "message {} was deleted by opencode; only its event log keeps it, and opencode \
             cannot fork from it",
            s.id_string(i)
        ))),
        Part::Subagent(_) => Some(ForkError::Unsupported(format!(
            "message {} is a subagent's: fork the session that ran it",
            s.id_string(i)
        ))),
    }
}

/// Forks the session at entry `i`: a new session holding copies of its messages up to
/// and including `i`'s. Its path (`DB/ses_…`).
pub fn fork(a: &OpencodeSession, s: &Session, i: u32) -> Result<PathBuf, ForkError> {
    if let Some(e) = fork_refusal(a, s, i) {
        return Err(e);
    }
    let id = a.meta(i).id.clone();
    match write(a, &id, None) {
        Ok((sid, _)) => Ok(a.db.join(sid)),
        Err(Failed::Refused(errno, message)) => Err(ForkError::Failed { errno, message }),
        Err(Failed::Db(e)) => {
            let d = db::db_error(&a.db, e);
            Err(ForkError::Failed {
                errno: d.errno,
                message: d.reason,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_opencodes() {
        let mut ids = Ids::new(1796454852607, None);
        let m = ids.ascending("msg");
        assert!(m.starts_with("msg_2450da7ff001"), "{m}");
        assert_eq!(m.len(), 30);
        let s = ids.descending("ses");
        assert_eq!(&s[..16], "ses_dbaf25800ffd");
        // After a later id of the same millisecond.
        let mut ids = Ids::new(1796454852607, Some("msg_2450da7ff005aaaaaaaaaaaaaa"));
        assert!(ids.ascending("msg").starts_with("msg_2450da7ff006"));
    }
}
