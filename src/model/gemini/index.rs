//! The replay of a session file, and the tree it holds (GEMINI-FORMAT §3).
//!
//! The CLI replays a file into one ordered list, the **active list**: a record whose
//! id is in the list replaces it in place, a new id is appended, `$rewindTo X` drops X
//! and everything after it (everything when X is unknown), `$set.messages` replaces
//! the whole list. Nothing is ever removed from the file, so the records a rewind or a
//! `$set` dropped are still there: they are the abandoned branches.
//!
//! Every message ever in the list is an entry (a **point**), except the user records
//! the CLI never sends from the file (`<session_context>`, a slash command: see
//! [`super::line::is_ignored_text`]). A point's parent is the point before it in the
//! list, in the last state of the file that holds it.
//!
//! **Versions.** A message's place in the list changes only when a line touches it: its
//! own record (a streamed update, its tool results), or a `$set.messages` that lists it
//! (every resume writes the whole history again). A rewind or a `$set` that leaves it
//! out does not change what comes before it; it only ends its stay. So each touch is
//! a [`Ver`]: the record the list holds for the message from that line on, and the
//! message before it. The path of a message M as the file held it at any line L is the
//! chain of the latest versions made at or before L, from M's back to the start
//! ([`Gemini::path_at`]); for M's own context, L is the last line at which M was in
//! the list ([`Replay::last_line`]). No state of the list is ever copied.
//!
//! **What an entry shows.** An entry's directory shows the record's last *live*
//! version: a message line the CLI wrote as it happened, with its thoughts, token
//! counts, model and tool calls with their results. The copies a resume writes in
//! `$set.messages` have none of that (and a new timestamp each time), so they are
//! shown only for messages that exist in no other form (the `<id>_response` records a
//! resume derives, a compression's summary). A resume thus changes no entry's content,
//! only, where its copy reorders the list, a parent; a message written again live (its
//! tool results arriving) becomes a new entry under the same id, and the old one leaves
//! the tree, as a duplicate id does in any session.
//!
//! **Subagents** (`chats/<sessionId>/<subagentId>.jsonl`, §6) are replayed the same
//! way, each in a replay of its own ([`FileState`]); the first point of one hangs
//! under the entry whose `invoke_agent` call ran it (`toolCalls[].agentId`).

use super::line::{self, Flavor, Kind};
use crate::model::core::id::{IdBuild, IdKey};
use crate::model::core::json_view::{Json, JsonObj, Raw, Tape};
use crate::model::core::kind::KindId;
use crate::model::core::scan::{LineError, LineHead};
use crate::model::core::session::{
    Entry, Header, NIL, NO_TIME, ProblemKind, Session, Severity, flags,
};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::PathBuf;

/// Where a record's bytes lie: a file of the session (0: the session file, `n`: the
/// session's source `n`), the byte range, and the line they are on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loc {
    pub file: u16,
    pub off: u64,
    pub len: u32,
    pub line: u32,
}

/// One stay of a message in the active list, from line `loc.line` on: the record the
/// list holds for it, and the message before it (`NONE` at the head).
#[derive(Debug, Clone, Copy)]
pub struct Ver {
    pub loc: Loc,
    pub pred: IdKey,
}

/// A message of a file.
#[derive(Debug, Clone)]
pub struct Msg {
    /// Every touch, in file order.
    pub vers: Vec<Ver>,
    /// The line that last took it out of the active list; 0 while it is in it.
    pub gone: u32,
    /// The record its directory shows (see the module docs).
    pub shown: Loc,
    pub shown_live: bool,
    /// The shown record's time, ms.
    pub ts: i64,
    pub flavor: Flavor,
    pub kind: KindId,
    /// An entry (see the module docs); decided by its first record.
    pub point: bool,
    /// Its entry while it is one, else `NIL`.
    pub entry: u32,
}

/// The replay of one file.
#[derive(Debug, Default, Clone)]
pub struct Replay {
    /// The active list after the last line.
    pub active: Vec<IdKey>,
    pos: HashMap<IdKey, u32, IdBuild>,
    pub msgs: HashMap<IdKey, Msg, IdBuild>,
    /// The metadata as the CLI merges it: every metadata line and `$set`, without
    /// `messages`.
    pub meta: Map<String, Value>,
    /// The first user record the CLI counts (`firstUserMessage`).
    pub first_user: Option<Loc>,
    /// The points in the order they first appeared.
    pub order: Vec<IdKey>,
    /// Lines read.
    pub lines: u32,
}

impl Replay {
    /// The last line at which message `m` is in the active list.
    pub fn last_line(&self, m: &Msg) -> u32 {
        if m.gone == 0 { self.lines } else { m.gone - 1 }
    }

    /// The version of `id` the list held right after line `at`.
    pub fn ver_at(&self, id: IdKey, at: u32) -> Option<&Ver> {
        let m = self.msgs.get(&id)?;
        let k = m.vers.partition_point(|v| v.loc.line <= at);
        k.checked_sub(1).map(|k| &m.vers[k])
    }

    /// The metadata's string `key`.
    pub fn meta_str(&self, key: &str) -> Option<&str> {
        self.meta.get(key).and_then(Value::as_str)
    }

    /// The last point of the active list: where a plain `--resume` continues.
    pub fn leaf(&self) -> Option<IdKey> {
        self.active
            .iter()
            .rev()
            .copied()
            .find(|id| self.msgs.get(id).is_some_and(|m| m.point))
    }
}

/// A file of the session: the session file (0) or a subagent's (`n`: source `n`).
#[derive(Debug, Clone)]
pub struct FileState {
    pub path: PathBuf,
    pub replay: Replay,
    /// Bytes read (the end of the last complete line) and the file's identity then,
    /// for a subagent's file (the core reads the session file).
    pub scanned: u64,
    pub dev_ino: (u64, u64),
}

/// A line's problem, as `check` reports it.
fn agent_problem(code: &'static str, what: String) -> ProblemKind {
    ProblemKind::Agent { code, what }
}

/// The index state of a Gemini CLI session. See the module docs.
#[derive(Debug, Default)]
pub struct Gemini {
    pub files: Vec<FileState>,
    /// A subagent's session id → the message whose tool call ran it.
    pub invokers: HashMap<String, IdKey>,
    /// The subagents' first points, shown as `agent-<sessionId>`: entry → alias.
    pub aliases: HashMap<u32, String>,
    pub alias_of: HashMap<String, u32>,
    /// `name`, as the CLI's session browser shows the session.
    pub name: Option<String>,
    pub session_json: Vec<u8>,
    /// The session file's first metadata line was seen.
    header_seen: bool,
}

impl Gemini {
    /// Indexes one line of file `f` (`raw`, at `off`, line `line_no`).
    pub fn index_line(&mut self, s: &mut Session, f: usize, raw: &[u8], off: u64, line_no: u32) {
        self.files[f].replay.lines = line_no;
        let note = f == 0;
        match LineHead::parse(raw) {
            Ok(_) => {}
            Err(LineError::Blank) => {
                if note {
                    s.note(line_no, Severity::Note, ProblemKind::Blank);
                }
                return;
            }
            Err(LineError::Malformed(m)) => {
                if note {
                    let m = crate::model::core::session::malformed_reason(raw, m);
                    s.note(line_no, Severity::Warning, ProblemKind::Malformed(m));
                }
                return;
            }
            Err(LineError::NotAnObject) => {
                if note {
                    s.note(line_no, Severity::Warning, ProblemKind::NotAnObject);
                }
                return;
            }
        }
        let Some(tape) = Tape::new(raw) else {
            return;
        };
        match line::kind_of(tape.root()) {
            Kind::Rewind(id) => {
                let known = s
                    .ids
                    .get(&id)
                    .filter(|k| self.files[f].replay.pos.contains_key(k));
                if known.is_none() && note {
                    s.note(
                        line_no,
                        Severity::Note,
                        agent_problem(
                            "gemini-rewind-unknown",
                            format!(
                                "$rewindTo names {id:?}, which is not in the conversation \
                                 here: the CLI empties the conversation"
                            ),
                        ),
                    );
                }
                self.rewind(f, known, line_no);
            }
            Kind::Record(r) => {
                self.record(s, f, raw, off, line_no, r, true, None);
            }
            Kind::Set(o) => {
                if let Some(list) = o.get("messages").and_then(|m| m.items()) {
                    self.set_messages(s, f, raw, off, line_no, list);
                }
                self.merge_meta(f, &o);
            }
            Kind::Meta(o) => {
                if f == 0 && !self.header_seen {
                    self.header_seen = true;
                    let sid = o
                        .get("sessionId")
                        .and_then(|v| v.as_str())
                        .unwrap_or_default()
                        .into_owned();
                    let ts = o
                        .get("startTime")
                        .and_then(|v| v.as_str())
                        .and_then(|t| crate::model::core::js::js_date_ms(&t))
                        .unwrap_or(NO_TIME);
                    s.header = Header {
                        offset: off,
                        len: raw.len() as u32,
                        line: line_no,
                        session_id: sid,
                        version: 3,
                        timestamp_ms: ts,
                    };
                }
                self.merge_meta(f, &o);
                if let Some(list) = o.get("messages").and_then(|m| m.items()) {
                    let mut pred = self.files[f].replay.active.last().copied();
                    for m in list {
                        if let Some(k) = self.record(s, f, raw, off, line_no, m, false, pred) {
                            pred = Some(k);
                        }
                    }
                }
            }
            Kind::Other => {
                if note {
                    s.note(
                        line_no,
                        Severity::Warning,
                        agent_problem(
                            "gemini-unknown-line",
                            "a JSON line of no kind the CLI knows (no string $rewindTo or \
                             id, no object $set, no string sessionId and projectHash): \
                             skipped by Gemini CLI"
                                .into(),
                        ),
                    );
                }
            }
        }
    }

    /// Merges the members of a metadata line or a `$set` (but `messages`) into the
    /// metadata of file `f`, as the CLI does.
    fn merge_meta(&mut self, f: usize, o: &crate::model::core::json_view::RawObj<'_>) {
        let meta = &mut self.files[f].replay.meta;
        for (k, v) in o.members() {
            if k == "messages" {
                continue;
            }
            if let Ok(v) = crate::model::core::js::parse_line(v.bytes()) {
                meta.insert(k.into_owned(), v);
            }
        }
    }

    /// `$rewindTo`: drops `to` and everything after it (`None`: everything).
    fn rewind(&mut self, f: usize, to: Option<IdKey>, line_no: u32) {
        let r = &mut self.files[f].replay;
        let from = to.and_then(|k| r.pos.get(&k).copied()).unwrap_or(0) as usize;
        for id in r.active.drain(from..) {
            r.pos.remove(&id);
            if let Some(m) = r.msgs.get_mut(&id) {
                m.gone = line_no;
            }
        }
    }

    /// `$set.messages`: the list becomes these records.
    fn set_messages<'a>(
        &mut self,
        s: &mut Session,
        f: usize,
        raw: &'a [u8],
        off: u64,
        line_no: u32,
        list: impl Iterator<Item = Raw<'a>>,
    ) {
        self.rewind(f, None, line_no);
        let mut pred = None;
        let mut skipped = 0;
        for m in list {
            match self.record(s, f, raw, off, line_no, m, false, pred) {
                Some(k) => pred = Some(k),
                None => skipped += 1,
            }
        }
        if skipped > 0 && f == 0 {
            s.note(
                line_no,
                Severity::Warning,
                agent_problem(
                    "gemini-not-a-record",
                    format!(
                        "$set.messages holds {skipped} element(s) without a string id: no \
                         message records, skipped by Gemini CLI"
                    ),
                ),
            );
        }
    }

    /// A record `r` of line `line_no` (at `off`, whose bytes are `raw`) enters the
    /// active list: in place when its id is there, else at the end. `live`: a message
    /// line of its own (not a copy in a `$set`). `pred_hint`: unused for records that
    /// are already in the list; otherwise the list's tail. Returns its id key.
    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        s: &mut Session,
        f: usize,
        raw: &[u8],
        off: u64,
        line_no: u32,
        r: Raw<'_>,
        live: bool,
        _pred_hint: Option<IdKey>,
    ) -> Option<IdKey> {
        let head = line::rec_head(r)?;
        let key = s.ids.intern(&head.id);
        if head.flavor == Flavor::Other && f == 0 {
            s.note(
                line_no,
                Severity::Warning,
                ProblemKind::UnknownType(head.ty.as_deref().unwrap_or_default().to_string()),
            );
        }
        let loc = Loc {
            file: f as u16,
            off: off + line::offset_in(raw, r.bytes()) as u64,
            len: r.bytes().len() as u32,
            line: line_no,
        };
        let rp = &mut self.files[f].replay;
        let pred = match rp.pos.get(&key) {
            Some(&p) => p
                .checked_sub(1)
                .map_or(IdKey::NONE, |q| rp.active[q as usize]),
            None => {
                let tail = rp.active.last().copied().unwrap_or(IdKey::NONE);
                rp.pos.insert(key, rp.active.len() as u32);
                rp.active.push(key);
                tail
            }
        };
        if head.ty.as_deref() == Some("user") && !head.ignored && rp.first_user.is_none() {
            rp.first_user = Some(loc);
        }
        for a in &head.agents {
            self.invokers.insert(a.clone(), key);
        }
        let rp = &mut self.files[f].replay;
        let ts = head.ts.unwrap_or(NO_TIME);
        let mut shown_moved = false;
        match rp.msgs.get_mut(&key) {
            Some(m) => {
                m.vers.push(Ver { loc, pred });
                m.gone = 0;
                if live {
                    shown_moved = m.shown != loc;
                    m.shown = loc;
                    m.shown_live = true;
                    m.ts = ts;
                    m.flavor = head.flavor;
                    m.kind = kind_of(s, &head);
                }
            }
            None => {
                let point = !(head.ty.as_deref() == Some("user") && head.ignored);
                let kind = kind_of(s, &head);
                rp.msgs.insert(
                    key,
                    Msg {
                        vers: vec![Ver { loc, pred }],
                        gone: 0,
                        shown: loc,
                        shown_live: live,
                        ts,
                        flavor: head.flavor,
                        kind,
                        point,
                        entry: NIL,
                    },
                );
                if point {
                    rp.order.push(key);
                }
            }
        }
        self.settle(s, f, key, shown_moved);
        Some(key)
    }

    /// The point before message `key` of file `f` in the list as it is now (`NONE`
    /// at the head), passing over messages that are no points.
    fn point_pred(&self, f: usize, key: IdKey) -> IdKey {
        let rp = &self.files[f].replay;
        let Some(mut p) = rp
            .msgs
            .get(&key)
            .and_then(|m| m.vers.last())
            .map(|v| v.pred)
        else {
            return IdKey::NONE;
        };
        // Each step goes one place towards the head of the list.
        for _ in 0..=rp.active.len() {
            match rp.msgs.get(&p) {
                Some(m) if m.point => return p,
                Some(m) => p = m.vers.last().map_or(IdKey::NONE, |v| v.pred),
                None => return IdKey::NONE,
            }
        }
        IdKey::NONE
    }

    /// Brings the entry of message `key` of file `f` up to date after a touch: made
    /// when it is new, made again when the record it shows moved (`shown_moved`), its
    /// parent changed in place otherwise.
    fn settle(&mut self, s: &mut Session, f: usize, key: IdKey, shown_moved: bool) {
        let Some(m) = self.files[f].replay.msgs.get(&key) else {
            return;
        };
        if !m.point {
            return;
        }
        let mut parent = self.point_pred(f, key);
        let mut fl = 0;
        if parent.is_none() && f > 0 {
            // A subagent's first point hangs under the call that ran it, when that is
            // known (see `link_subagents`).
            if let Some(&inv) = self.files[f]
                .replay
                .meta_str("sessionId")
                .and_then(|sid| self.invokers.get(sid))
            {
                parent = inv;
                fl |= flags::SOFT_PARENT;
            }
        }
        let m = &self.files[f].replay.msgs[&key];
        let (shown, ts, kind, old) = (m.shown, m.ts, m.kind, m.entry);
        if old != NIL && !shown_moved {
            let e = &mut s.entries[old as usize];
            if e.parent_id != parent {
                e.parent_id = parent;
                e.flags = (e.flags & !flags::SOFT_PARENT) | fl;
                s.relink = true;
            }
            return;
        }
        let idx = s.entries.len() as u32;
        if let Some(&prev) = s.by_id.get(&key) {
            s.entries[prev as usize].flags |= flags::SHADOWED;
            s.relink = true;
        }
        s.by_id.insert(key, idx);
        let mut e = Entry::new(shown.off, shown.len, shown.line, key, parent, ts, kind, fl);
        e.file = shown.file;
        s.entries.push(e);
        if let Some(m) = self.files[f].replay.msgs.get_mut(&key) {
            m.entry = idx;
        }
    }
}

/// The kind (KIND file name) of a record.
fn kind_of(s: &mut Session, head: &line::RecHead<'_>) -> KindId {
    let ty = head.ty.as_deref().unwrap_or("");
    let name = match head.flavor {
        Flavor::Other if !ty.is_empty() => ty,
        fl => fl.name(),
    };
    s.kinds.intern_named(ty, head.flavor.name(), name)
}
