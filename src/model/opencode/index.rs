//! The index state of an opencode session: its messages are the core's entries.
//!
//! A session lives in opencode's database, not in a file of its own, so it is named
//! `DB/ID` (the database file, then the session id: `AgentTable::member`), and the core
//! reads none of the database itself (`Agent::opaque_main_file`): this agent reads
//! the session's rows in one snapshot ([`super::store`]), writes each message as one
//! line of JSON into memory ([`super::line`]) and pushes an entry per line, whose bytes
//! the core then reads back from that memory like any source's (a
//! [`Source`] of bytes).
//!
//! **The tree.** A session is a list (§3.2): each message's parent is the message
//! before it. Around that list:
//!
//! * the messages opencode deleted (the first prompt after an `/undo`, §3.4), rebuilt
//!   from its event log, hang where they were written: under the message before them
//!   that was still there when they were. They are branches, read-only: nothing can
//!   resume them;
//! * a subagent's session (§5.6) hangs under the assistant message whose `task` call
//!   ran it, its messages flagged as pieces of that turn (not branches of their own);
//! * messages hidden by a pending `/undo` (`session.revert`) stay where they are: the
//!   leaf is the message before them (§4), and the next prompt would delete them.
//!
//! **Live.** opencode writes rows in place while a reply streams (a part's text grows,
//! a message gets its completion time). `Agent::sources_moved` asks the database's
//! [`super::live::Tracker`] first whether a commit touched the session since the step
//! its index is at (a few queries per commit for every session, not per session); where
//! that cannot be told (or the session was touched lately), it compares a cheap
//! per-session fingerprint (row counts and latest `time_updated`); and only then reads
//! the session again. Messages
//! not indexed yet are appended; messages whose rows changed are rewritten in place
//! (`Session::rewrite_entry`); a message gone, or one placed before others, means the
//! session is read again from scratch (`SourcesMoved::Rewritten`). A session written
//! to in the last seconds is read again at every change of the database, so that two
//! writes within one millisecond (one `time_updated`) are not missed.
//!
//! **Memory.** The lines of the messages are the session's rows, about as many bytes;
//! they are kept in a few byte sources: each refresh adds one with the new lines, and
//! when stale bytes (rows rewritten since) outweigh live ones, or too many sources
//! pile up, they are packed into one again.

//!
//! `super::agent` implements the core's `Agent` on it; the files that render, build
//! contexts, count usage and write (`render`, `context`, `usage`, `write`) read it.

use super::db::DbError;
use super::line::{Extra, line_of, rows_hash};
use super::store::{self, Fingerprint, MessageRec, Origin, ProjectRow, SessionRow, Snapshot};
use crate::model::core::agent::SourcesMoved;
use crate::model::core::id::IdKey;
use crate::model::core::kind::KindId;
use crate::model::core::session::{
    LoadError, NO_TIME, ProblemKind, Session, Severity, Source, SourceData, flags,
};
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

/// A session written to this recently (ms) is read again at every change of the
/// database, its fingerprint notwithstanding.
const ACTIVE_MS: i64 = 5_000;
/// Byte sources kept before they are packed into one.
const MAX_CHUNKS: usize = 24;

/// Which session of the family an entry's message is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The session itself.
    Main,
    /// A message opencode deleted (from the event log).
    Deleted,
    /// A subagent's session (index into [`OpencodeSession::subagents`]).
    Subagent(u16),
}

/// The role of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
    Other,
}

/// What the agent keeps of an entry.
#[derive(Debug, Clone)]
pub struct Meta {
    pub id: String,
    pub session_id: String,
    pub part: Part,
    pub role: Role,
    pub created: i64,
    /// The message it hangs under.
    pub parent: Option<String>,
    /// [`rows_hash`] of the rows the line was made from.
    hash: u64,
    /// A row or part that is not JSON (§10).
    pub damaged: bool,
}

/// A subagent's session shown inside this one.
#[derive(Debug, Clone)]
pub struct Subagent {
    pub id: String,
    pub title: String,
    /// Its `permission` rules.
    pub permission: Option<String>,
    /// The entry of the assistant message whose `task` call ran it, if found.
    pub spawned_by: Option<String>,
}

/// The index state of an opencode session. See the module docs.
#[derive(Debug)]
pub struct OpencodeSession {
    /// The database.
    pub db: PathBuf,
    /// The session id.
    pub sid: String,
    pub(crate) metas: Vec<Meta>,
    pub(crate) by_msg: HashMap<String, u32>,
    /// Byte sources in use (numbers), their live bytes, and all their bytes.
    chunks: Vec<u16>,
    free_chunks: Vec<u16>,
    live_bytes: u64,
    pub(crate) total_bytes: u64,
    /// The session row, its project, its subagents.
    pub row: SessionRow,
    pub project: Option<ProjectRow>,
    pub subagents: Vec<Subagent>,
    pub(crate) fingerprint: Fingerprint,
    /// The database's changes ([`super::live`]).
    tracker: Arc<super::live::Tracker>,
    /// The tracker's step the index is at, and a snapshot `sources_moved` read (at a
    /// step) for the next `after_scan`.
    pub(crate) seen: Mutex<(u64, Option<(u64, Snapshot)>)>,
    pub(crate) name: String,
    pub(crate) session_json: Vec<u8>,
    /// The message before `revert.messageID` (the leaf while an `/undo` is pending),
    /// and the revert's message itself.
    pub(crate) revert: Option<String>,
    /// Forks of this session, and the session it was forked from (§5.3).
    pub forks: super::forks::Family,
}

impl OpencodeSession {
    pub fn new(db: PathBuf, sid: String) -> OpencodeSession {
        OpencodeSession {
            tracker: super::live::tracker(&db),
            db,
            sid,
            metas: Vec::new(),
            by_msg: HashMap::new(),
            chunks: Vec::new(),
            free_chunks: Vec::new(),
            live_bytes: 0,
            total_bytes: 0,
            row: SessionRow::default(),
            project: None,
            subagents: Vec::new(),
            fingerprint: Fingerprint::default(),
            seen: Mutex::new((0, None)),
            name: String::new(),
            session_json: Vec::new(),
            revert: None,
            forks: Default::default(),
        }
    }

    /// What the agent keeps of entry `i`.
    pub fn meta(&self, i: u32) -> &Meta {
        &self.metas[i as usize]
    }

    /// Every entry's meta, in entry order.
    pub fn metas(&self) -> &[Meta] {
        &self.metas
    }

    /// The entry of message `id`.
    pub fn entry_of(&self, id: &str) -> Option<u32> {
        self.by_msg.get(id).copied()
    }

    /// The entries of the session itself (not deleted, not a subagent's), in order.
    pub fn main_entries(&self) -> Vec<u32> {
        (0..self.metas.len() as u32)
            .filter(|&i| self.metas[i as usize].part == Part::Main)
            .collect()
    }

    /// The message `revert.messageID` names, while an `/undo` is pending.
    pub fn revert_message(&self) -> Option<&str> {
        self.revert.as_deref()
    }

    /// The session's own last message (the leaf when no `/undo` is pending).
    pub fn last_main(&self) -> Option<u32> {
        (0..self.metas.len() as u32)
            .rev()
            .find(|&i| self.metas[i as usize].part == Part::Main)
    }

    /// The session row's `directory`.
    pub fn directory(&self) -> &str {
        &self.row.directory
    }

    /// The permission rules of subagent `k`'s session.
    pub fn subagent_permission(&self, k: usize) -> Option<String> {
        self.subagents.get(k).and_then(|s| s.permission.clone())
    }

    fn read_snapshot(&self) -> Result<Snapshot, LoadError> {
        match store::read_session(&self.db, &self.sid) {
            Ok(Some(s)) => Ok(s),
            Ok(None) => Err(LoadError::Io(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "{}: no session {} in this opencode database",
                    self.db.display(),
                    self.sid
                ),
            ))),
            Err(e) => Err(LoadError::Io(io::Error::from_raw_os_error_with(e))),
        }
    }
}

impl OpencodeSession {
    /// Brings the index up to the database (the core's `after_scan`).
    pub(crate) fn catch_up(&mut self, s: &mut Session) -> Result<(), LoadError> {
        // The tracker's step before the read: what it saw, the read sees too, and a
        // commit after it is a later step.
        let step = self.tracker.step();
        let stashed = self.seen.lock().1.take();
        let snap = match stashed {
            Some((at, snap)) if at == step => snap,
            _ => self.read_snapshot()?,
        };
        self.apply(s, snap)?;
        self.seen.lock().0 = step;
        Ok(())
    }

    /// Whether the session's rows changed since they were indexed (the core's
    /// `sources_moved`); a snapshot read to tell is kept for [`Self::catch_up`].
    pub(crate) fn moved(&self) -> SourcesMoved {
        use super::live::Since;
        let Some(step) = self.tracker.poll() else {
            // Unreadable right now: the next change (or the safety poll) asks again;
            // what is shown stays.
            return SourcesMoved::No;
        };
        let mut seen = self.seen.lock();
        if seen.1.as_ref().is_some_and(|(at, _)| *at == step) {
            // Read already, for the `after_scan` to come.
            return SourcesMoved::Grew;
        }
        seen.1 = None;
        if seen.0 == step {
            return SourcesMoved::No;
        }
        match self.tracker.since(seen.0, &self.sid) {
            Since::Same => {
                seen.0 = step;
                return SourcesMoved::No;
            }
            Since::Touched => {}
            Since::Check => {
                let fp = match store::read_fingerprint(&self.db, &self.sid) {
                    // Busy or unreadable right now: the next change (or the safety
                    // poll) asks again; what is shown stays.
                    Err(_) => return SourcesMoved::No,
                    Ok(None) => return SourcesMoved::Rewritten,
                    Ok(Some(fp)) => fp,
                };
                let active = fp.latest() >= crate::model::core::time::now_ms() - ACTIVE_MS;
                if fp == self.fingerprint && !active {
                    seen.0 = step;
                    return SourcesMoved::No;
                }
                if fp != self.fingerprint {
                    // Written to: checked again at every change for a while.
                    self.tracker.heat(&self.sid);
                }
            }
        }
        let snap = match self.read_snapshot() {
            Ok(s) => s,
            Err(LoadError::Io(e)) if e.kind() == io::ErrorKind::NotFound => {
                return SourcesMoved::Rewritten;
            }
            Err(_) => return SourcesMoved::No,
        };
        if !self.still_prefix(&snap) {
            return SourcesMoved::Rewritten;
        }
        seen.1 = Some((step, snap));
        SourcesMoved::Grew
    }
}

/// An `io::Error` carrying a [`DbError`]'s errno and words.
trait FromDb {
    fn from_raw_os_error_with(e: DbError) -> io::Error;
}

impl FromDb for io::Error {
    fn from_raw_os_error_with(e: DbError) -> io::Error {
        let kind = io::Error::from_raw_os_error(e.errno).kind();
        io::Error::new(kind, e.reason)
    }
}

/// A message to index, in the order entries are pushed.
struct Planned<'a> {
    rec: &'a MessageRec,
    parent: Option<String>,
    part: Part,
    /// What its line holds besides its rows.
    extra: Extra,
}

/// The role of a message's data, whether it is a compaction request (a user message
/// with a `compaction` part) or summary (`summary: true`).
fn classify(rec: &MessageRec) -> (Role, &'static str) {
    let v: Value = serde_json::from_str(&rec.data).unwrap_or(Value::Null);
    let role = match v.get("role").and_then(Value::as_str) {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        _ => Role::Other,
    };
    let kind = match role {
        Role::User => {
            let compaction = rec.parts.iter().any(|p| {
                p.data.contains("\"compaction\"")
                    && serde_json::from_str::<Value>(&p.data)
                        .is_ok_and(|v| v.get("type").and_then(Value::as_str) == Some("compaction"))
            });
            if compaction { "compaction" } else { "user" }
        }
        Role::Assistant if v.get("summary").and_then(Value::as_bool) == Some(true) => "summary",
        Role::Assistant => "assistant",
        Role::Other if v.is_null() => "damaged",
        Role::Other => "message",
    };
    (role, kind)
}

/// The session the `task` call of `part` (a part's data) ran in, if it is one.
fn task_session(part: &str) -> Option<String> {
    if !part.contains("\"task\"") {
        return None;
    }
    let v: Value = serde_json::from_str(part).ok()?;
    if v.get("type")? != "tool" || v.get("tool")? != "task" {
        return None;
    }
    let state = v.get("state")?;
    if let Some(s) = state
        .get("metadata")
        .and_then(|m| m.get("sessionId"))
        .and_then(Value::as_str)
    {
        return Some(s.to_string());
    }
    let out = state.get("output").and_then(Value::as_str)?;
    let at = out.find("<task id=\"")? + "<task id=\"".len();
    let end = out[at..].find('"')?;
    Some(out[at..at + end].to_string())
}

/// The entries a snapshot makes, in push order: the session's messages, the deleted
/// ones, then each subagent's (see the module docs for their parents).
fn plan(snap: &Snapshot) -> (Vec<Planned<'_>>, Vec<Subagent>) {
    let mut out = Vec::new();
    let main = &snap.main;
    let mut prev: Option<&str> = None;
    let hidden_from = revert_message(&main.row)
        .and_then(|r| main.messages.iter().position(|m| m.id == r))
        .unwrap_or(usize::MAX);
    for (k, m) in main.messages.iter().enumerate() {
        out.push(Planned {
            rec: m,
            parent: prev.map(str::to_string),
            part: Part::Main,
            extra: Extra {
                hidden: k >= hidden_from,
                ..Extra::default()
            },
        });
        prev = Some(&m.id);
    }
    if !main.deleted.is_empty() {
        // All of the session's messages in the order of §3.1: a deleted one hangs
        // under the nearest one before it that was still there when it was written.
        let mut all: Vec<&MessageRec> = main.messages.iter().chain(&main.deleted).collect();
        all.sort_by(|a, b| (a.time_created, &a.id).cmp(&(b.time_created, &b.id)));
        for (k, m) in all.iter().enumerate() {
            if m.origin == Origin::Row {
                continue;
            }
            let parent = all[..k].iter().rev().find(|n| match n.origin {
                Origin::Row => true,
                Origin::Deleted { removed_seq } => match m.created_seq {
                    Some(c) => removed_seq > c,
                    None => true,
                },
            });
            let seq = match m.origin {
                Origin::Deleted { removed_seq } => removed_seq,
                Origin::Row => 0,
            };
            out.push(Planned {
                rec: m,
                parent: parent.map(|n| n.id.clone()),
                part: Part::Deleted,
                extra: Extra {
                    deleted: Some(seq),
                    ..Extra::default()
                },
            });
        }
    }
    // Which message ran each subagent's session.
    let mut spawner: HashMap<String, String> = HashMap::new();
    for rows in std::iter::once(main).chain(&snap.subagents) {
        for m in &rows.messages {
            for p in &m.parts {
                if let Some(sid) = task_session(&p.data) {
                    spawner.entry(sid).or_insert_with(|| m.id.clone());
                }
            }
        }
    }
    let mut subs = Vec::new();
    for (k, rows) in snap.subagents.iter().enumerate() {
        let spawned_by = spawner.get(&rows.row.id).cloned();
        subs.push(Subagent {
            id: rows.row.id.clone(),
            title: rows.row.title.clone(),
            permission: rows.row.permission.clone(),
            spawned_by: spawned_by.clone(),
        });
        let mut prev = spawned_by;
        for (j, m) in rows.messages.iter().enumerate() {
            out.push(Planned {
                rec: m,
                parent: prev.clone(),
                part: Part::Subagent(k.min(u16::MAX as usize) as u16),
                extra: Extra {
                    subagent: (j == 0).then(|| (rows.row.id.clone(), rows.row.title.clone())),
                    ..Extra::default()
                },
            });
            prev = Some(m.id.clone());
        }
    }
    (out, subs)
}

impl OpencodeSession {
    /// Brings the index up to `snap`: new messages pushed, changed ones rewritten.
    /// Everything indexed is in `snap` with the same parent (`sources_moved` made
    /// sure, or this is the first read).
    fn apply(&mut self, s: &mut Session, snap: Snapshot) -> Result<(), LoadError> {
        let (planned, subs) = plan(&snap);
        let mut pending: Vec<(usize, String, Role, &'static str, bool)> = Vec::new();
        // (planned index, line, role, kind name, damaged) for new and changed ones.
        for (k, p) in planned.iter().enumerate() {
            let h = rows_hash(p.rec, &p.extra);
            if let Some(&i) = self.by_msg.get(&p.rec.id)
                && self.metas[i as usize].hash == h
            {
                continue;
            }
            let (line, damaged) = line_of(p.rec, &p.extra);
            let (role, kind) = classify(p.rec);
            pending.push((k, line, role, kind, damaged));
        }
        if !pending.is_empty() {
            let mut bytes = Vec::with_capacity(pending.iter().map(|x| x.1.len() + 1).sum());
            let mut at = Vec::with_capacity(pending.len());
            for (_, line, ..) in &pending {
                at.push(bytes.len() as u64);
                bytes.extend_from_slice(line.as_bytes());
                bytes.push(b'\n');
            }
            let n = self.add_chunk(s, bytes)?;
            for ((k, line, role, kind, damaged), off) in pending.into_iter().zip(at) {
                let p = &planned[k];
                let kid = self.kind_id(s, kind);
                let len = line.len() as u32;
                let meta = Meta {
                    id: p.rec.id.clone(),
                    session_id: p.rec.session_id.clone(),
                    part: p.part,
                    role,
                    created: p.rec.time_created,
                    parent: p.parent.clone(),
                    hash: rows_hash(p.rec, &p.extra),
                    damaged,
                };
                match self.by_msg.get(&p.rec.id) {
                    Some(&i) => {
                        self.live_bytes = self.live_bytes - s.entry(i).len as u64 + len as u64;
                        s.rewrite_entry(i, n, off, len, kid);
                        self.metas[i as usize] = meta;
                    }
                    None => {
                        let i = s.entries().len() as u32;
                        let id = s.ids.intern(&p.rec.id);
                        let parent = p
                            .parent
                            .as_deref()
                            .map_or(IdKey::NONE, |pid| s.ids.intern(pid));
                        let mut fl = 0;
                        if matches!(p.part, Part::Subagent(_)) {
                            fl |= flags::PIECE;
                        }
                        let ts = if p.rec.time_created > 0 {
                            p.rec.time_created
                        } else {
                            NO_TIME
                        };
                        s.push_entry(off, len, i + 1, id, parent, ts, kid, fl);
                        s.entries.last_mut().expect("just pushed").file = n;
                        s.register_id(id, i, i + 1);
                        self.live_bytes += len as u64;
                        self.by_msg.insert(p.rec.id.clone(), i);
                        self.metas.push(meta);
                    }
                }
            }
            self.repack_if_worth_it(s)?;
        }
        self.subagents = subs;
        self.note_rows(s, &snap);
        self.fingerprint = snap.fingerprint.clone();
        self.row = snap.main.row.clone();
        s.header.session_id = self.sid.clone();
        s.header.timestamp_ms = self.row.time_created;
        self.project = snap.project.clone();
        let revert = revert_message(&self.row);
        self.revert = revert;
        self.name = self.row.title.clone();
        self.session_json = super::info::session_json(&self.row, self.project.as_ref());
        self.forks = super::forks::Family::read(&self.db, &self.row, &snap);
        Ok(())
    }

    fn kind_id(&self, s: &mut Session, kind: &str) -> KindId {
        s.kinds.intern_named(kind, kind, kind)
    }

    /// Adds `bytes` as a byte source of the session: its number.
    fn add_chunk(&mut self, s: &mut Session, bytes: Vec<u8>) -> Result<u16, LoadError> {
        self.total_bytes += bytes.len() as u64;
        let src = Source {
            data: SourceData::Bytes(s.path().to_path_buf(), Arc::from(bytes)),
            limit: None,
        };
        let n = match self.free_chunks.pop() {
            Some(n) => {
                s.replace_source(n, src);
                n
            }
            None => s.add_source(src)?,
        };
        self.chunks.push(n);
        Ok(n)
    }

    /// Packs every entry's bytes into one source when stale bytes (rows rewritten
    /// since) outweigh live ones, or too many sources pile up.
    fn repack_if_worth_it(&mut self, s: &mut Session) -> Result<(), LoadError> {
        let stale = self.total_bytes.saturating_sub(self.live_bytes);
        if self.chunks.len() <= MAX_CHUNKS && stale <= self.live_bytes.max(1 << 20) {
            return Ok(());
        }
        let n = s.entries().len() as u32;
        let mut bytes = Vec::with_capacity(self.live_bytes as usize + n as usize);
        let mut at = Vec::with_capacity(n as usize);
        for i in 0..n {
            let b = s.entry_bytes(i)?;
            at.push((bytes.len() as u64, b.len() as u32));
            bytes.extend_from_slice(&b);
            bytes.push(b'\n');
        }
        let old = std::mem::take(&mut self.chunks);
        let keep = old[0];
        for &c in &old[1..] {
            s.replace_source(
                c,
                Source {
                    data: SourceData::Bytes(s.path().to_path_buf(), Arc::from(Vec::new())),
                    limit: None,
                },
            );
            self.free_chunks.push(c);
        }
        self.total_bytes = bytes.len() as u64;
        self.live_bytes = at.iter().map(|a| a.1 as u64).sum();
        s.replace_source(
            keep,
            Source {
                data: SourceData::Bytes(s.path().to_path_buf(), Arc::from(bytes)),
                limit: None,
            },
        );
        self.chunks.push(keep);
        for (i, (off, len)) in at.into_iter().enumerate() {
            s.move_entry(i as u32, keep, off, len);
        }
        Ok(())
    }

    /// Notes what `check` reports about the rows besides damaged ones.
    fn note_rows(&self, s: &mut Session, snap: &Snapshot) {
        const CODES: &[&str] = &[
            "orphan-parts",
            "subagent-unplaced",
            "damaged-row",
            "empty-message",
            "unknown-role",
            "dangling-parent",
            "unfinished-answer",
            "revert-missing",
        ];
        s.problems.retain(
            |p| !matches!(&p.what, ProblemKind::Agent { code, .. } if CODES.contains(code)),
        );
        let now = crate::model::core::time::now_ms();
        for rows in std::iter::once(&snap.main).chain(&snap.subagents) {
            let ids: std::collections::HashSet<&str> =
                rows.messages.iter().map(|m| m.id.as_str()).collect();
            let last = rows.messages.last().map(|m| m.id.as_str());
            for m in &rows.messages {
                let Some(&i) = self.by_msg.get(&m.id) else {
                    continue;
                };
                let line = i + 1;
                let mut note = |severity, code: &'static str, what: String| {
                    s.note(line, severity, ProblemKind::Agent { code, what })
                };
                let v: Option<Value> = serde_json::from_str(&m.data).ok();
                let damaged_part = m
                    .parts
                    .iter()
                    .any(|p| !serde_json::from_str::<Value>(&p.data).is_ok_and(|v| v.is_object()));
                if !v.as_ref().is_some_and(Value::is_object) || damaged_part {
                    note(Severity::Warning, "damaged-row", damaged_text(m));
                    continue;
                }
                let v = v.unwrap_or(Value::Null);
                let role = v.get("role").and_then(Value::as_str).unwrap_or("");
                match role {
                    "user" if m.parts.is_empty() => note(
                        Severity::Note,
                        "empty-message",
                        format!(
                            "user message {} has no parts: opencode does not send it",
                            m.id
                        ),
                    ),
                    "user" => {}
                    "assistant" => {
                        if let Some(p) = v.get("parentID").and_then(Value::as_str)
                            && !ids.contains(p)
                        {
                            note(
                                Severity::Note,
                                "dangling-parent",
                                format!(
                                    "assistant message {}: its parentID {p} names no message \
                                     (opencode does not use it: the message is sent in its place)",
                                    m.id
                                ),
                            );
                        }
                        let unfinished = v.get("time").and_then(|t| t.get("completed")).is_none()
                            && v.get("error").is_none_or(Value::is_null);
                        if unfinished
                            && (Some(m.id.as_str()) != last || m.time_updated < now - 600_000)
                        {
                            note(
                                Severity::Note,
                                "unfinished-answer",
                                format!(
                                    "assistant message {} was never finished (no completion \
                                     time, no error): opencode stopped while writing it",
                                    m.id
                                ),
                            );
                        }
                    }
                    other => note(
                        Severity::Warning,
                        "unknown-role",
                        format!(
                            "message {} has the role {other:?}, which opencode neither writes \
                             nor sends",
                            m.id
                        ),
                    ),
                }
            }
        }
        if let Some(r) = revert_message(&snap.main.row)
            && !snap.main.messages.iter().any(|m| m.id == r)
        {
            s.note(
                0,
                Severity::Note,
                ProblemKind::Agent {
                    code: "revert-missing",
                    what: format!(
                        "the pending /undo names message {r}, which is not in the session: \
                         nothing is hidden"
                    ),
                },
            );
        }
        let orphans: usize = std::iter::once(&snap.main)
            .chain(&snap.subagents)
            .map(|r| r.orphan_parts)
            .sum();
        if orphans > 0 {
            s.note(
                0,
                Severity::Note,
                ProblemKind::Agent {
                    code: "orphan-parts",
                    what: format!(
                        "{orphans} part row{} of the session belong to no message of it \
                         (opencode ignores them, §10)",
                        if orphans == 1 { "" } else { "s" }
                    ),
                },
            );
        }
        for sub in &self.subagents {
            if sub.spawned_by.is_none() {
                s.note(
                    0,
                    Severity::Note,
                    ProblemKind::Agent {
                        code: "subagent-unplaced",
                        what: format!(
                            "subagent session {} ({}) is named by no task call of the \
                             session: shown as a root",
                            sub.id, sub.title
                        ),
                    },
                );
            }
        }
    }

    /// Whether every indexed entry is in `snap`, with the same parent (else the
    /// session must be read again from scratch).
    fn still_prefix(&self, snap: &Snapshot) -> bool {
        let (planned, _) = plan(snap);
        let parents: HashMap<&str, Option<&str>> = planned
            .iter()
            .map(|p| (p.rec.id.as_str(), p.parent.as_deref()))
            .collect();
        self.metas
            .iter()
            .all(|m| parents.get(m.id.as_str()) == Some(&m.parent.as_deref()))
    }
}

fn damaged_text(m: &MessageRec) -> String {
    if serde_json::from_str::<Value>(&m.data).is_ok_and(|v| v.is_object()) {
        format!(
            "a part of message {} is not a JSON object; opencode cannot read it",
            m.id
        )
    } else {
        format!(
            "message {}: its data is not JSON; opencode fails to continue this session \
             (\"Unexpected server error\", §10) until the row is repaired or deleted",
            m.id
        )
    }
}

/// `revert.messageID` of a session row, if a revert is pending.
fn revert_message(row: &SessionRow) -> Option<String> {
    let v: Value = serde_json::from_str(row.revert.as_deref()?).ok()?;
    v.get("messageID")
        .and_then(Value::as_str)
        .map(str::to_string)
}
