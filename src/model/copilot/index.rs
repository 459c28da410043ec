//! A Copilot CLI session as a core [`Session`]: its `events.jsonl` is the session file,
//! every conversation event an entry (see [`super::events`] for which), everything else
//! read for what it means.
//!
//! **The tree.** The file is a log the CLI reads in file order (COPILOT-FORMAT.md §3):
//! the main agent's entries form one chain, each the child of the entry before it, and
//! `parentId` is not used (a wrong one changes nothing for the CLI, §10; `check` reports
//! it). A subagent's events (a top-level `agentId`, §6.5) form a chain of their own that
//! hangs under the main entry whose call started it (the `toolCallId` of its
//! `subagent.started`), flagged as a piece of that turn: shown, never a branch. A
//! `subagent.completed` belongs to the main chain, where the CLI reports it.
//!
//! **Ids.** An entry's id is its event's `id` (a UUID). The CLI loads a file whose ids
//! repeat (§10), and both events count: the later one is shown as `<id>:L<line>` so that
//! neither hides the other. A line without an `id` (which the CLI refuses, §10) is shown
//! as `line-<N>`.
//!
//! **The leaf** is the last entry of the file (§8: the CLI resumes after the last line,
//! and the bookkeeping after the last entry adds nothing to a context, §7).
//!
//! **Rewrites.** `/rewind` and the repair of a damaged file rewrite `events.jsonl`
//! (§6.1, §10): the core notices the shorter or changed file and indexes it again, as for
//! any agent. `workspace.yaml` (the name) is read again when it changes.

use super::context::Builder;
use super::events::{self, Ev, Line};
use super::home::{self, Workspace};
use crate::model::core::id::IdKey;
use crate::model::core::json_view::{Json, JsonObj, Tape};
use crate::model::core::scan::{LineError, LineHead};
use crate::model::core::session::{
    Header, NIL, NO_TIME, ProblemKind, Session, Severity, flags, malformed_reason,
};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

/// What an entry is, beyond the core's entry.
#[derive(Debug, Clone, Copy)]
pub struct Node {
    pub ev: Ev,
    /// A subagent's event (`agentId`).
    pub sub: bool,
    /// For a subagent's event: the last main entry before it (`NIL`: none).
    pub main_before: u32,
}

/// A bookkeeping line kept for what it means.
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    pub line: u32,
    pub offset: u64,
    pub len: u32,
    pub what: Line,
    /// A subagent's (`agentId`).
    pub sub: bool,
    /// Entries indexed before it (it lies between entry `entries - 1` and `entries`).
    pub entries: u32,
}

/// A subagent's chain.
#[derive(Debug, Clone, Copy)]
struct Chain {
    /// Its last entry (`NIL`: none yet).
    last: u32,
    /// The main entry it hangs under (`NIL`: not known).
    spawn: u32,
}

/// The index state of a Copilot CLI session. See the module docs.
#[derive(Debug, Default)]
pub struct Copilot {
    pub(crate) nodes: Vec<Node>,
    pub(crate) marks: Vec<Mark>,
    /// `assetId` → the line of its `session.binary_asset` (offset, length).
    pub(crate) assets: HashMap<String, (u64, u32)>,
    last_main: Option<u32>,
    chains: HashMap<String, Chain>,
    /// `agentId` → the `toolCallId` its `subagent.started` names.
    spawn_calls: HashMap<String, String>,
    /// The `id` of the file's last event (a reply's `parentId`).
    pub(crate) last_event_id: Option<String>,
    /// Every event id seen (entries and bookkeeping), for `parentId` checks.
    pub(crate) event_ids: HashSet<IdKey>,
    /// The first prompt of the main agent (the name when `workspace.yaml` has none).
    first_prompt: Option<String>,
    /// The CLI's working directory: the last `session.start`/`session.resume` `cwd`.
    pub(crate) cwd: String,
    pub(crate) workspace: Workspace,
    /// `workspace.yaml` as read: (inode, size, mtime ns).
    ws_sig: Option<(u64, u64, i64)>,
    pub(crate) name: Option<String>,
    /// `session.json`, made when first asked for after a scan (a search that only
    /// reads entries never needs it).
    pub(crate) session_json: parking_lot::Mutex<Option<std::sync::Arc<Vec<u8>>>>,
    /// The forks of this session and the session it was forked from, found in the home
    /// (see [`super::forks`]).
    pub(crate) links: super::forks::Links,
    /// The CLI's other ids of entries, for `.id/`: a message's `messageId` (the id the
    /// CLI's own records use), a tool result's `toolCallId`.
    pub(crate) aliases: HashMap<String, u32>,
}

impl Copilot {
    /// The entry's node.
    pub fn node(&self, i: u32) -> Node {
        self.nodes[i as usize]
    }

    /// The session's folder.
    pub fn folder(s: &Session) -> PathBuf {
        s.path()
            .parent()
            .map(|p| p.to_path_buf())
            .unwrap_or_default()
    }

    /// The main entries whose events make the context at entry `i`, in file order: the
    /// path to `i` (a main entry), or to the last main entry before it (a subagent's).
    pub fn history(&self, s: &Session, i: u32) -> Vec<u32> {
        let n = self.nodes[i as usize];
        let end = if n.sub { n.main_before } else { i };
        if end == NIL {
            return Vec::new();
        }
        s.path_to(end)
            .into_iter()
            .filter(|&j| !self.nodes[j as usize].sub)
            .collect()
    }

    /// The messages of the context at entry `i` (see [`super::context`]).
    pub fn context_at(&self, s: &Session, i: u32) -> io::Result<Vec<Value>> {
        let path = self.history(s, i);
        let start = path
            .iter()
            .rposition(|&j| self.nodes[j as usize].ev == Ev::Compaction)
            .unwrap_or(0);
        let assets = |id: &str| self.asset(s, id);
        let mut b = Builder::new(&assets);
        // The prompts a compaction lists: every prompt before it.
        let before: Vec<u32> = path[..start]
            .iter()
            .copied()
            .filter(|&j| self.nodes[j as usize].ev == Ev::User)
            .collect();
        let mut err = None;
        s.for_each_entry_bytes(&before, |_, bytes| match parse(bytes) {
            Ok(v) => b.prompt_before(&v),
            Err(e) => err = Some(e),
        });
        let rest: Vec<u32> = path[start..]
            .iter()
            .copied()
            .filter(|&j| {
                matches!(
                    self.nodes[j as usize].ev,
                    Ev::User | Ev::Assistant | Ev::ToolResult | Ev::Compaction | Ev::Abort
                )
            })
            .collect();
        s.for_each_entry_bytes(&rest, |j, bytes| match parse(bytes) {
            Ok(v) => b.push(self.nodes[j as usize].ev, &v),
            Err(e) => err = Some(e),
        });
        if let Some(e) = err {
            return Err(e);
        }
        Ok(b.finish())
    }

    /// An image's MIME type and base64 data, from its `session.binary_asset` line.
    pub fn asset(&self, s: &Session, id: &str) -> Option<(String, String)> {
        let &(off, len) = self.assets.get(id)?;
        let mut buf = vec![0u8; len as usize];
        s.read_exact_at(&mut buf, off).ok()?;
        let v = parse(&buf).ok()?;
        let d = v.get("data")?;
        Some((
            d.get("mimeType")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            d.get("data")?.as_str()?.to_string(),
        ))
    }

    /// The bookkeeping line of kind `what` of the main agent that the request made from
    /// entry `i` carried: the last one before the first main entry after `i` (or before
    /// the end of the file).
    pub fn mark_for(&self, i: u32, what: Line) -> Option<Mark> {
        let next_main = (i as usize + 1..self.nodes.len())
            .find(|&j| !self.nodes[j].sub)
            .unwrap_or(self.nodes.len()) as u32;
        self.marks
            .iter()
            .rev()
            .find(|m| m.what == what && !m.sub && m.entries <= next_main)
            .copied()
    }

    fn note_envelope(s: &mut Session, line_no: u32, what: String) {
        s.note(
            line_no,
            Severity::Warning,
            ProblemKind::Agent {
                code: "refused-envelope",
                what: format!(
                    "Copilot CLI refuses to load the whole session because of this line: {what}"
                ),
            },
        );
    }

    /// The main entry whose reply made call `call`, searched backwards.
    fn spawning_entry(&self, s: &Session, call: &str) -> Option<u32> {
        let needle = format!("\"toolCallId\":{}", serde_json::to_string(call).ok()?);
        let finder = memchr::memmem::Finder::new(needle.as_bytes());
        (0..self.nodes.len() as u32).rev().take(10_000).find(|&j| {
            let n = self.nodes[j as usize];
            n.ev == Ev::Assistant
                && !n.sub
                && s.entry_bytes(j).is_ok_and(|b| finder.find(&b).is_some())
        })
    }

    fn index(&mut self, s: &mut Session, raw: &[u8], h: &LineHead<'_>, off: u64, line_no: u32) {
        let len = raw.len() as u32;
        let ty = h.ty.as_str().unwrap_or("");
        // The envelope the CLI insists on (§10).
        let id = h.id.as_str();
        match id {
            Some(x) if events::is_uuid(x) => {}
            Some(_) => Self::note_envelope(s, line_no, "`id` must be a UUID string".into()),
            None => Self::note_envelope(
                s,
                line_no,
                "`id` must be a UUID string (it has none)".into(),
            ),
        }
        let ts = h.timestamp.as_str();
        if !ts.is_some_and(events::is_iso_with_zone) {
            Self::note_envelope(
                s,
                line_no,
                "`timestamp` must be an ISO 8601 date-time string with a timezone offset".into(),
            );
        }
        if ty.is_empty() {
            s.note(
                line_no,
                Severity::Warning,
                ProblemKind::UnknownType(String::new()),
            );
        }
        // `parentId` is not followed (§3), but one naming no event is damage worth telling,
        // except on the compaction call's debug events, whose parents are not in the file.
        if let Some(p) = h.parent_id.as_str()
            && !ty.starts_with("model.")
            && !s.ids.get(p).is_some_and(|k| self.event_ids.contains(&k))
        {
            s.note(
                line_no,
                Severity::Note,
                ProblemKind::Agent {
                    code: "unknown-parent",
                    what: format!(
                        "parentId {p} names no earlier event of the file (Copilot CLI reads the file in order and does not follow parentId: nothing changes)"
                    ),
                },
            );
        }
        if let Some(x) = id {
            let k = s.ids.intern(x);
            self.event_ids.insert(k);
            self.last_event_id = Some(x.to_string());
        }
        let agent = agent_id(raw);
        let what = events::classify(ty);
        let ev = match what {
            Line::Entry(ev) => ev,
            other => {
                self.bookkeeping(s, raw, other, agent.as_deref(), off, line_no);
                return;
            }
        };
        // An entry.
        let idx = s.entries.len() as u32;
        let sub = agent.is_some() && ev != Ev::SubagentEnd;
        let mut fl = 0u8;
        let key = match id {
            Some(x) => {
                let k = s.ids.intern(x);
                match s.by_id.get(&k) {
                    Some(&first) => {
                        let first_line = s.entries[first as usize].line;
                        let alias = format!("{x}:L{line_no}");
                        s.note(
                            line_no,
                            Severity::Warning,
                            ProblemKind::Agent {
                                code: "duplicate-id",
                                what: format!(
                                    "id {x} is also on line {first_line}; Copilot CLI reads both events, so both are shown (this one as {alias})"
                                ),
                            },
                        );
                        s.ids.intern(&alias)
                    }
                    None => k,
                }
            }
            None => {
                fl |= flags::NO_ID;
                s.ids.intern(&format!("line-{line_no}"))
            }
        };
        let parent = if sub {
            let a = agent.clone().unwrap_or_default();
            let chain = self.chains.get(&a).copied().unwrap_or(Chain {
                last: NIL,
                spawn: NIL,
            });
            let spawn = if chain.spawn == NIL && chain.last == NIL {
                self.spawn_calls
                    .get(&a)
                    .and_then(|c| self.spawning_entry(s, c))
                    .or(self.last_main)
                    .unwrap_or(NIL)
            } else {
                chain.spawn
            };
            fl |= flags::PIECE;
            let p = if chain.last != NIL { chain.last } else { spawn };
            self.chains.insert(a, Chain { last: idx, spawn });
            p
        } else {
            self.last_main.unwrap_or(NIL)
        };
        let parent_key = if parent == NIL {
            IdKey::NONE
        } else {
            s.entries[parent as usize].id
        };
        if ev == Ev::Unknown {
            s.note(
                line_no,
                Severity::Note,
                ProblemKind::UnknownType(ty.to_string()),
            );
        }
        let kind_name = if ev == Ev::Unknown { ty } else { ev.kind() };
        let kind = s.kinds.intern_named(ty, "", kind_name);
        let t = ts
            .and_then(crate::model::core::js::js_date_ms)
            .unwrap_or(NO_TIME);
        s.register_id(key, idx, line_no);
        s.push_entry(off, len, line_no, key, parent_key, t, kind, fl);
        self.nodes.push(Node {
            ev,
            sub,
            main_before: self.last_main.unwrap_or(NIL),
        });
        let other_id = match ev {
            Ev::User | Ev::Assistant => Some("messageId"),
            Ev::ToolResult => Some("toolCallId"),
            _ => None,
        };
        if let Some(key) = other_id
            && let Some(alias) = Tape::new(raw).and_then(|t| {
                t.root()
                    .obj()
                    .and_then(|o| o.get("data"))
                    .and_then(|d| d.obj())
                    .and_then(|d| d.get(key))
                    .and_then(|a| a.as_str().map(|c| c.into_owned()))
            })
            && !alias.is_empty()
        {
            self.aliases.entry(alias).or_insert(idx);
        }
        if !sub {
            self.last_main = Some(idx);
            if ev == Ev::User && self.first_prompt.is_none() {
                self.first_prompt = parse(raw).ok().and_then(|v| {
                    v.pointer("/data/content")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                });
            }
        }
    }

    fn bookkeeping(
        &mut self,
        s: &mut Session,
        raw: &[u8],
        what: Line,
        agent: Option<&str>,
        off: u64,
        line_no: u32,
    ) {
        let len = raw.len() as u32;
        let entries = s.entries.len() as u32;
        let mark = Mark {
            line: line_no,
            offset: off,
            len,
            what,
            sub: agent.is_some(),
            entries,
        };
        match what {
            Line::Start | Line::Resume => {
                let v = parse(raw).ok();
                let d = v.as_ref().and_then(|v| v.get("data"));
                if let Some(c) = d
                    .and_then(|d| d.pointer("/context/cwd"))
                    .and_then(Value::as_str)
                {
                    self.cwd = c.to_string();
                }
                if what == Line::Start && s.header.len == 0 {
                    let d = d.cloned().unwrap_or(Value::Null);
                    s.header = Header {
                        offset: off,
                        len,
                        line: line_no,
                        session_id: d
                            .get("sessionId")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        version: d.get("version").and_then(Value::as_u64).unwrap_or(1) as u32,
                        timestamp_ms: d
                            .get("startTime")
                            .and_then(Value::as_str)
                            .and_then(crate::model::core::js::js_date_ms)
                            .unwrap_or(NO_TIME),
                    };
                }
                self.marks.push(mark);
            }
            Line::Asset => {
                if let Some(id) = Tape::new(raw).and_then(|t| {
                    t.root()
                        .obj()
                        .and_then(|o| o.get("data"))
                        .and_then(|d| d.obj())
                        .and_then(|d| d.get("assetId"))
                        .and_then(|a| a.as_str().map(|c| c.into_owned()))
                }) {
                    self.assets.insert(id, (off, len));
                }
            }
            Line::SubagentStart => {
                if let (Some(a), Ok(v)) = (agent, parse(raw))
                    && let Some(c) = v.pointer("/data/toolCallId").and_then(Value::as_str)
                {
                    self.spawn_calls.insert(a.to_string(), c.to_string());
                }
            }
            Line::System | Line::Usage | Line::ModelChange => self.marks.push(mark),
            _ => {}
        }
    }

    /// Indexes one line (`head` is `LineHead::parse(raw)`).
    pub fn index_head_of(
        &mut self,
        s: &mut Session,
        raw: &[u8],
        head: &Result<LineHead<'_>, LineError>,
        off: u64,
        line_no: u32,
    ) {
        match head {
            Ok(h) => self.index(s, raw, h, off, line_no),
            Err(LineError::Blank) => s.note(line_no, Severity::Note, ProblemKind::Blank),
            Err(LineError::Malformed(m)) => {
                let m = malformed_reason(raw, m.clone());
                s.note(line_no, Severity::Warning, ProblemKind::Malformed(m));
            }
            Err(LineError::NotAnObject) => {
                s.note(line_no, Severity::Warning, ProblemKind::NotAnObject)
            }
        }
    }

    /// Whether `workspace.yaml` changed since it was read.
    pub fn workspace_moved(&self, s: &Session) -> bool {
        workspace_sig(&Self::folder(s)) != self.ws_sig
    }

    /// The main `session.info` entries (where a fork notice is).
    pub fn infos(&self) -> Vec<u32> {
        (0..self.nodes.len() as u32)
            .filter(|&i| self.nodes[i as usize].ev == Ev::Info && !self.nodes[i as usize].sub)
            .collect()
    }

    /// Reads `workspace.yaml` again if it changed; whether it did.
    pub fn read_workspace(&mut self, s: &Session) -> bool {
        let dir = Self::folder(s);
        let sig = workspace_sig(&dir);
        if sig == self.ws_sig {
            return false;
        }
        self.ws_sig = sig;
        self.workspace = home::read_workspace(&dir).unwrap_or_default();
        true
    }

    /// The name, from `workspace.yaml` or the first prompt.
    pub fn update_name(&mut self) {
        self.name = self
            .workspace
            .name()
            .map(str::to_string)
            .or_else(|| {
                self.first_prompt
                    .as_deref()
                    .map(|p| crate::model::core::text::one_line_cut(p, 200))
            })
            .filter(|n| !n.is_empty());
    }
}

/// `workspace.yaml`'s signature: (inode, size, mtime ns).
fn workspace_sig(dir: &std::path::Path) -> Option<(u64, u64, i64)> {
    std::fs::metadata(dir.join(home::WORKSPACE))
        .ok()
        .map(|m| (m.ino(), m.len(), m.mtime() * 1_000_000_000 + m.mtime_nsec()))
}

/// A line parsed as `JSON.parse` reads it.
pub fn parse(bytes: &[u8]) -> io::Result<Value> {
    crate::model::core::js::parse_line(bytes)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// The top-level `agentId` of a line, when it has one (a subagent's event).
pub(crate) fn agent_id(raw: &[u8]) -> Option<String> {
    memchr::memmem::find(raw, b"\"agentId\"")?;
    let t = Tape::new(raw)?;
    let id = t.root().obj()?.get("agentId")?.as_str()?.into_owned();
    Some(id)
}
