//! Qwen Code's session files (CLI 0.24.4), as Qwen Code itself reads them.
//!
//! A Qwen Code session is one file,
//! `~/.qwen/projects/<sanitized cwd>/chats/<sessionId>.jsonl`, with no header. Every
//! line is a **record** with a `uuid` and a `parentUuid`: conversation messages (`user`,
//! `assistant`, `tool_result`, each with a Gemini-style `message {role, parts}`) and
//! bookkeeping (`system` records with a `subtype`: `attribution_snapshot`,
//! `ui_telemetry`, `chat_compression`, `rewind`, `custom_title`, …). All of them form
//! one tree by `parentUuid`: every record's parent is the record written before it on
//! its branch (QWEN-FORMAT.md §3). This folder is everything sessionfs knows about the
//! format:
//!
//! * [`head`] reads the fields of a record the index needs;
//! * this module turns a record into an index entry and keeps what only Qwen Code
//!   needs per entry ([`Node`]): its type, whether Qwen Code's loader takes it, whether
//!   it is a conversation record (one that can be the leaf), its `parentUuid` as
//!   written, and the fragments that repeat its uuid;
//! * [`history`] rebuilds what Qwen Code sends the model from a record: its chain,
//!   the API history (compressions replace what came before), the history as the chat
//!   curates and repairs it, and the OpenAI chat messages (`context.json`);
//!   [`media`] what it does to the media of that history before sending it, and
//!   [`modalities`] which media a model takes;
//! * [`render`] writes the KIND files, images, previews and the readable context, and
//!   [`prompt`] the system prompt and tools that context starts with;
//! * [`append`] writes a reply or a title the way Qwen Code does, [`fork`] a fork the
//!   way `--fork-session` does, [`usage`] reads the token records.
//!
//! # How the tree is shown
//!
//! Every record whose identity Qwen Code accepts (a non-empty string `uuid` and
//! `sessionId`, a string or `null` `parentUuid`) is an entry under its `parentUuid`,
//! linked once everything is indexed (a child may come before its parent). A record of
//! an unknown `type` is an entry too (Qwen Code skips it: records below it lose their
//! history). A line repeating an earlier record's uuid is no entry: it is a
//! *fragment* of that record, whose `message.parts` Qwen Code appends to the first
//! one's (§3.4). `rewind` leaves the abandoned records where they are, so a rewind is a
//! branch. A subagent's transcript
//! (`projects/<p>/subagents/<sessionId>/agent-<type>-<callId>.jsonl`) is indexed with
//! its session: its first record hangs under the `assistant` record whose
//! `functionCall` spawned it, as `agent-<agentId>`, and the whole of it is a piece of
//! that turn, not a branch. A dead end of bookkeeping records only (a title Qwen Code
//! rewrote under the prompt it followed) is a piece too.
//!
//! **The leaf** is Qwen Code's: the last record of the file, in file order, that Qwen
//! Code loads as a conversation record (any type; `system` records too, but for the
//! snapshot subtypes it keeps apart).
//!
//! # Guarantees
//!
//! Indexing never fails on a line: malformed lines and records Qwen Code would not
//! load become notes. Every walk keeps a visited set, so the leaf, the name and every
//! context are computed for any file, however damaged.

pub mod agent;
pub mod append;
pub mod catalog;
pub mod fork;
pub mod head;
pub mod history;
mod media;
mod modalities;
pub mod prompt;
pub mod render;
pub mod search;
pub mod usage;

use crate::model::core::id::{IdKey, IdTable};
use crate::model::core::kind::{KindId, KindTable};
use crate::model::core::scan::{Field, LineError};
use crate::model::core::session::{
    Entry, NIL, NO_TIME, ProblemKind, Session, Severity, flags as eflags,
};
use head::{Head, truthy};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The record types Qwen Code's loader knows (`RECORD_TYPES`); others are skipped.
pub const RECORD_TYPES: &[&str] = &["user", "assistant", "tool_result", "system"];

/// `system` subtypes that are no conversation records: never the leaf, never on a
/// chain (`NON_CONVERSATION_RECORD_SUBTYPES` and the artifact records).
pub const NON_CONVERSATION_SUBTYPES: &[&str] = &[
    "session_sources_snapshot",
    "managed_session_header_v1",
    "managed_session_event_v1",
    "managed_session_commit_v1",
    "session_artifact_event",
    "session_artifact_snapshot",
];

/// The subtypes Qwen Code 0.24.4 knows (`KNOWN_RECORD_SUBTYPES`): another is accepted,
/// and noted.
pub const KNOWN_SUBTYPES: &[&str] = &[
    "chat_compression",
    "slash_command",
    "ui_telemetry",
    "at_command",
    "attribution_snapshot",
    "notification",
    "background_task_completed",
    "cron",
    "mid_turn_user_message",
    "realtime_message",
    "custom_title",
    "parent_session",
    "rewind",
    "agent_bootstrap",
    "agent_launch_prompt",
    "agent_retry",
    "agent_session_ready",
    "file_history_snapshot",
    "session_source",
    "session_model",
    "omni_recall",
    "session_sources_snapshot",
    "branch_checkpoint",
    "goal_state",
    "goal_runtime",
    "goal_turn_end",
    "turn_result",
    "session_artifact_event",
    "session_artifact_snapshot",
    "managed_session_header_v1",
    "managed_session_event_v1",
    "managed_session_commit_v1",
];

/// How many of the first records the session picker reads for the first prompt
/// (`MAX_PROMPT_SCAN_LINES`).
const PROMPT_SCAN_RECORDS: u32 = 10;

/// The record's `type`, as far as sessionfs tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RType {
    User,
    Assistant,
    ToolResult,
    System,
    /// A type Qwen Code does not know: it skips the record.
    Other,
}

/// Bits of [`Node::flags`].
pub mod nflags {
    /// Qwen Code's loader takes the record as a conversation record: it can be the
    /// leaf and be on a chain.
    pub const CONVERSATION: u16 = 1;
    /// A `message` that is an object.
    pub const MESSAGE: u16 = 2;
    /// A `chat_compression` whose `compressedHistory` is there (truthy).
    pub const COMPRESSION: u16 = 4;
    /// `provenance: "system"` and subtype `notification`.
    pub const NOTIFICATION: u16 = 8;
    /// A line of a subagent's transcript.
    pub const SIDE: u16 = 16;
    /// A `system` record that only keeps books (not a compression, not a rewind): it
    /// joins its neighbours in `tree`, and a dead end of them is no branch.
    pub const BOOKKEEPING: u16 = 32;
    /// A `system`/`rewind` marker.
    pub const REWIND: u16 = 64;
    /// Some `message.parts[].functionCall`.
    pub const CALLS: u16 = 128;
}

/// What only Qwen Code needs to know of an entry.
#[derive(Debug, Clone)]
pub struct Node {
    pub rtype: RType,
    pub flags: u16,
    /// `subtype`, interned in [`State::subtypes`] (0: none).
    pub subtype: u16,
    /// `parentUuid` as written (the tree may hang a subagent's root elsewhere).
    pub parent: IdKey,
    /// The line's source: 0 the session file, `k` its `k`-th subagent transcript.
    pub file: u16,
}

impl Node {
    pub fn has(&self, f: u16) -> bool {
        self.flags & f != 0
    }
    /// A record Qwen Code's loader takes (its type is one it knows).
    pub fn is_loaded(&self) -> bool {
        self.rtype != RType::Other
    }
    pub fn is_conversation(&self) -> bool {
        self.has(nflags::CONVERSATION)
    }
}

/// Another line with the uuid of an earlier record: Qwen Code appends its parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fragment {
    pub file: u16,
    pub offset: u64,
    pub len: u32,
    pub line: u32,
}

/// A subagent's transcript, indexed with its session.
#[derive(Debug, Clone)]
pub struct Side {
    pub path: PathBuf,
    pub dev_ino: (u64, u64),
    /// Bytes of it indexed (the end of a complete line).
    pub scanned: u64,
    pub next_line: u32,
    /// `agent-<agentId>.jsonl` without `agent-` and `.jsonl`.
    pub agent_id: String,
    /// The call that spawned it (`toolUseId` of its `.meta.json`).
    pub tool_use_id: Option<String>,
    /// Its first root has been hung under its call.
    pub rooted: bool,
}

/// Qwen Code's index state for one session file.
#[derive(Debug, Default)]
pub struct State {
    pub nodes: Vec<Node>,
    pub subtypes: Vec<Box<str>>,
    pub session_id: Option<String>,
    /// A record naming another session id (Qwen Code refuses such a file): its line.
    pub other_session: Option<(u32, String)>,
    pub first_ts: i64,
    /// The last conversation record of the session file (the entry of the first line
    /// of its uuid).
    pub last_conv: Option<u32>,
    /// Fragments of an entry, by entry.
    pub fragments: HashMap<u32, Vec<Fragment>>,
    /// The entry each fragment's line joins, by `(source, offset)`.
    pub fragment_of: HashMap<(u16, u64), u32>,
    /// The last `custom_title` of the session file: `(customTitle, entry)`.
    pub title: Option<(String, u32)>,
    /// The first prompt the picker shows (from the first records).
    pub first_prompt: Option<String>,
    /// Records of the session file seen so far (for the picker's first records).
    records_seen: u32,
    pub sides: Vec<Side>,
    /// `functionCall` id → the uuid of the record that made the call (session file).
    calls: HashMap<String, IdKey>,
    /// `functionCall` id → the entry that made the call first (session file): its
    /// name in `.id/` too.
    call_entries: HashMap<String, u32>,
    aliases: HashMap<u32, String>,
    by_alias: HashMap<String, u32>,
}

/// Does this first parsed line say the file is a Qwen Code session? Its records carry
/// a `uuid` and a Gemini-style message (`message.parts`), or Qwen Code's own keys
/// (`provenance`, `systemPayload`), or a type only Qwen Code writes (`tool_result`).
/// A Claude Code line has a `uuid` too, but a message with `content`, and none of the
/// others.
pub fn looks_like_qwen(raw: &[u8]) -> bool {
    let Ok(h) = Head::parse(raw) else {
        return false;
    };
    if !matches!(h.uuid, Field::Str(_)) || !matches!(h.session_id, Field::Str(_)) {
        return false;
    }
    h.parts_array
        || !matches!(h.provenance, Field::Missing)
        || h.payload_object
        || h.ty.as_str() == Some("tool_result")
}

/// What indexing a line gives the shared index.
#[derive(Debug)]
pub enum Outcome {
    /// A record: the entry to add, and perhaps a note about it.
    Entry {
        id: IdKey,
        parent_id: IdKey,
        ts: i64,
        kind: KindId,
        flags: u8,
        note: Option<(Severity, ProblemKind)>,
    },
    /// A fragment of the entry named (no entry of its own).
    Fragment(u32, Option<(Severity, ProblemKind)>),
    /// Not an entry, and worth a note.
    Note(Severity, ProblemKind),
}

fn agent_problem(code: &'static str, what: String) -> ProblemKind {
    ProblemKind::Agent { code, what }
}

impl State {
    /// The subtype of entry `i` (`""` for none).
    pub fn subtype(&self, i: u32) -> &str {
        self.nodes
            .get(i as usize)
            .map_or("", |n| &self.subtypes[n.subtype as usize])
    }

    pub fn node(&self, i: u32) -> Option<&Node> {
        self.nodes.get(i as usize)
    }

    fn intern_subtype(&mut self, s: &str) -> u16 {
        if self.subtypes.is_empty() {
            self.subtypes.push("".into());
        }
        if let Some(k) = self.subtypes.iter().position(|x| &**x == s) {
            return k as u16;
        }
        if self.subtypes.len() >= u16::MAX as usize {
            return 0;
        }
        self.subtypes.push(s.into());
        (self.subtypes.len() - 1) as u16
    }

    /// The name entry `i` is shown under instead of its uuid.
    pub fn alias(&self, i: u32) -> Option<&str> {
        self.aliases.get(&i).map(String::as_str)
    }

    /// The entry shown under `name` instead of its uuid (a subagent's first record),
    /// or the answer that made the tool call `name`.
    pub fn by_alias(&self, name: &str) -> Option<u32> {
        self.by_alias
            .get(name)
            .or_else(|| self.call_entries.get(name))
            .copied()
    }

    /// Indexes one line of source `side` (0: the session file) as entry `next`.
    /// `by_id` finds the entry of a uuid seen before.
    #[allow(clippy::too_many_arguments)]
    pub fn index_line(
        &mut self,
        raw: &[u8],
        line: u32,
        off: u64,
        next: u32,
        side: u16,
        ids: &mut IdTable,
        kinds: &mut KindTable,
        by_id: &dyn Fn(IdKey) -> Option<u32>,
    ) -> Outcome {
        let h = match Head::parse(raw) {
            Ok(h) => h,
            Err(LineError::Blank) => return Outcome::Note(Severity::Note, ProblemKind::Blank),
            Err(LineError::Malformed(m)) => {
                return Outcome::Note(Severity::Warning, ProblemKind::Malformed(m));
            }
            Err(LineError::NotAnObject) => {
                return Outcome::Note(Severity::Warning, ProblemKind::NotAnObject);
            }
        };
        // Qwen Code's validation: a record without these is skipped.
        let uuid = h.uuid.as_str().filter(|u| !u.is_empty());
        let sid = h.session_id.as_str().filter(|u| !u.is_empty());
        let parent_ok = matches!(h.parent_uuid, Field::Str(_) | Field::Null);
        let (Some(uuid), Some(sid), true) = (uuid, sid, parent_ok) else {
            let what = if uuid.is_none() {
                "a record without a uuid: Qwen Code skips it".to_string()
            } else if sid.is_none() {
                "a record without a sessionId: Qwen Code skips it".to_string()
            } else {
                "a record whose parentUuid is neither a string nor null: Qwen Code skips it"
                    .to_string()
            };
            return Outcome::Note(
                Severity::Warning,
                agent_problem("qwen-invalid-record", what),
            );
        };
        let ts = h
            .timestamp
            .as_str()
            .and_then(crate::model::core::js::js_date_ms)
            .unwrap_or(NO_TIME);
        let mut note = None;
        if side == 0 {
            if self.first_ts == 0 && ts != NO_TIME {
                self.first_ts = ts;
            }
            match &self.session_id {
                None => self.session_id = Some(sid.to_string()),
                Some(s) if s != sid && self.other_session.is_none() => {
                    self.other_session = Some((line, sid.to_string()));
                    note = Some((
                        Severity::Warning,
                        agent_problem(
                            "qwen-mixed-session-ids",
                            format!(
                                "a record of another session ({sid}, the file's is {s}): \
                                 Qwen Code refuses to load a file that mixes session ids"
                            ),
                        ),
                    ));
                }
                _ => {}
            }
        }
        let ty = h.ty.as_str().unwrap_or("");
        let rtype = match ty {
            "user" => RType::User,
            "assistant" => RType::Assistant,
            "tool_result" => RType::ToolResult,
            "system" => RType::System,
            _ => RType::Other,
        };
        let subtype = h.subtype.as_str().unwrap_or("");
        if !subtype.is_empty() && !KNOWN_SUBTYPES.contains(&subtype) && note.is_none() {
            note = Some((
                Severity::Note,
                agent_problem(
                    "qwen-unknown-subtype",
                    format!("unknown subtype {subtype:?} (loaded as it is)"),
                ),
            ));
        }
        let conversation = rtype != RType::Other
            && !(rtype == RType::System && NON_CONVERSATION_SUBTYPES.contains(&subtype));
        let id = ids.intern(uuid);
        if let Some(first) =
            by_id(id).filter(|&f| self.nodes.get(f as usize).is_some_and(|n| n.file == side))
        {
            // A fragment: Qwen Code appends its parts to the first record's.
            self.fragment_of.insert((side, off), first);
            self.fragments.entry(first).or_default().push(Fragment {
                file: side,
                offset: off,
                len: raw.len() as u32,
                line,
            });
            if side == 0 && conversation {
                self.last_conv = Some(first);
            }
            return Outcome::Fragment(
                first,
                Some((
                    Severity::Note,
                    agent_problem(
                        "qwen-fragment",
                        format!(
                            "a second line of record {uuid}: Qwen Code appends its parts to \
                             the first line's (a fragment, shown there)"
                        ),
                    ),
                )),
            );
        }
        let parent = match h.parent_uuid.as_str() {
            Some(p) if !p.is_empty() => ids.intern(p),
            _ => IdKey::NONE,
        };
        let mut nf = 0u16;
        if conversation {
            nf |= nflags::CONVERSATION;
        }
        if h.message_object {
            nf |= nflags::MESSAGE;
        }
        if rtype == RType::System && subtype == "chat_compression" && truthy(&h.compressed_history)
        {
            nf |= nflags::COMPRESSION;
        }
        if h.provenance.as_str() == Some("system") && subtype == "notification" {
            nf |= nflags::NOTIFICATION;
        }
        if rtype == RType::System && subtype == "rewind" {
            nf |= nflags::REWIND;
        }
        if rtype == RType::System && !matches!(subtype, "chat_compression" | "rewind") {
            nf |= nflags::BOOKKEEPING;
        }
        if side != 0 {
            nf |= nflags::SIDE;
        }
        if !h.call_ids.is_empty() {
            nf |= nflags::CALLS;
            if side == 0 {
                for c in &h.call_ids {
                    self.calls.insert(c.clone(), id);
                    self.call_entries.entry(c.clone()).or_insert(next);
                }
            }
        }
        if side == 0 && conversation {
            self.last_conv = Some(next);
        }
        if side == 0 {
            self.records_seen += 1;
            if self.first_prompt.is_none()
                && self.records_seen <= PROMPT_SCAN_RECORDS
                && rtype == RType::User
                && h.subtype == Field::Missing
            {
                self.first_prompt = head::first_prompt(raw);
            }
            if rtype == RType::System && subtype == "custom_title" {
                // The session list shows the last one; an empty title is none.
                let t = head::custom_title(raw);
                self.title = t.map(|t| (t, next));
            }
        }
        let st = self.intern_subtype(subtype);
        let name = kind_of(rtype, ty, subtype);
        let kind = kinds.intern_named(ty, subtype, &name);
        let mut flags = 0u8;
        if rtype == RType::Other {
            flags |= eflags::UNKNOWN_TYPE;
            note = Some((Severity::Note, ProblemKind::UnknownType(ty.to_string())));
        }
        let mut parent_id = parent;
        if side != 0 {
            let sd = &mut self.sides[side as usize - 1];
            if !sd.rooted && parent.is_none() {
                // The subagent's first record hangs under the call that spawned it.
                sd.rooted = true;
                let alias = format!("agent-{}", sd.agent_id);
                if let Some(&spawner) = sd.tool_use_id.as_ref().and_then(|t| self.calls.get(t)) {
                    parent_id = spawner;
                }
                self.by_alias.insert(alias.clone(), next);
                self.aliases.insert(next, alias);
                flags |= eflags::SOFT_PARENT;
            }
        }
        debug_assert_eq!(self.nodes.len(), next as usize);
        self.nodes.push(Node {
            rtype,
            flags: nf,
            subtype: st,
            parent,
            file: side,
        });
        Outcome::Entry {
            id,
            parent_id,
            ts,
            kind,
            flags,
            note,
        }
    }

    /// Starts indexing the subagent transcript at `path` as source `k` (its number).
    pub fn add_side(&mut self, s: &Session, path: PathBuf) -> std::io::Result<u16> {
        use std::os::unix::fs::MetadataExt;
        let md = std::fs::metadata(&path)?;
        let stem = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let stem = stem.strip_suffix(".jsonl").unwrap_or(&stem);
        let agent_id = stem.strip_prefix("agent-").unwrap_or(stem).to_string();
        // A `.meta.json` is a few hundred bytes.
        let tool_use_id = s
            .read_side(&meta_path(&path), 1 << 20)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| {
                v.get("toolUseId")
                    .and_then(|t| t.as_str())
                    .map(str::to_string)
            });
        if self.sides.len() >= u16::MAX as usize - 1 {
            return Err(std::io::Error::other("too many subagent transcripts"));
        }
        self.sides.push(Side {
            path,
            dev_ino: (md.dev(), md.ino()),
            scanned: 0,
            next_line: 1,
            agent_id,
            tool_use_id,
            rooted: false,
        });
        Ok(self.sides.len() as u16)
    }

    pub fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.fragments.len() * 64
            + self.calls.len() * 64
            + self.call_entries.len() * 48
            + self.aliases.len() * 64
    }
}

/// `agent-X.meta.json` beside `agent-X.jsonl`.
pub fn meta_path(path: &Path) -> PathBuf {
    path.with_extension("meta.json")
}

/// The project folder of a session file `<project>/chats/<id>.jsonl` (none for a file
/// that lies elsewhere: its subagents, if any, are not where Qwen Code puts them).
pub fn project_of(path: &Path) -> Option<&Path> {
    let chats = path.parent()?;
    (chats.file_name()? == "chats").then(|| chats.parent())?
}

/// The subagent transcripts of the session file `path`:
/// `<project>/subagents/<sessionId>/agent-*.jsonl`, sorted.
pub fn side_files(path: &Path) -> Vec<PathBuf> {
    let (Some(project), Some(stem)) = (project_of(path), path.file_stem()) else {
        return Vec::new();
    };
    let dir = project.join("subagents").join(stem);
    let Ok(rd) = crate::model::core::listing::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .into_iter()
        .filter(|e| {
            e.file_name().to_str().is_some_and(|n| {
                n.starts_with("agent-") && n.ends_with(".jsonl") && !n.ends_with(".meta.jsonl")
            }) && e.is_file()
        })
        .map(|e| e.into_path())
        .collect();
    out.sort();
    out
}

/// The folder subagent transcripts of `path` appear in.
pub fn side_dir(path: &Path) -> Option<PathBuf> {
    let stem = path.file_stem()?;
    Some(path.parent()?.parent()?.join("subagents").join(stem))
}

/// The KIND file name of a record (its kind is keyed by its type and subtype).
fn kind_of(rtype: RType, ty: &str, subtype: &str) -> String {
    match rtype {
        RType::User if subtype.is_empty() => "user".into(),
        RType::Assistant => "assistant".into(),
        RType::ToolResult => "toolResult".into(),
        RType::System if subtype.is_empty() => "system".into(),
        RType::User | RType::System => subtype.to_string(),
        RType::Other if ty.is_empty() => "entry".into(),
        RType::Other => ty.to_string(),
    }
}

/// Marks the pieces of the tree that are no branch of the conversation: a subagent's
/// records, and a dead end of bookkeeping records only (not the leaf) that leaves a
/// record with other children. Recounts the leaves and branch points without them.
pub fn mark_pieces(entries: &mut [Entry], nodes: &[Node], leaf: Option<u32>) -> (u32, u32) {
    for (i, e) in entries.iter_mut().enumerate() {
        e.flags &= !eflags::PIECE;
        if nodes.get(i).is_some_and(|n| n.file != 0) {
            e.flags |= eflags::PIECE;
        }
    }
    let n = entries.len().min(nodes.len());
    let mut run = Vec::new();
    for tip in 0..n {
        let e = &entries[tip];
        if !e.is_node() || e.child_count != 0 || e.flags & eflags::PIECE != 0 {
            continue;
        }
        if Some(tip as u32) == leaf || !nodes[tip].has(nflags::BOOKKEEPING) {
            continue;
        }
        // Up through bookkeeping records with one child, to a record with others.
        run.clear();
        let mut cur = tip as u32;
        let forked = loop {
            run.push(cur);
            let p = entries[cur as usize].parent;
            if p == NIL {
                break false;
            }
            if entries[p as usize].child_count > 1 {
                break true;
            }
            if !nodes
                .get(p as usize)
                .is_some_and(|n| n.has(nflags::BOOKKEEPING))
                || Some(p) == leaf
            {
                break false;
            }
            cur = p;
        };
        if forked {
            for &r in &run {
                entries[r as usize].flags |= eflags::PIECE;
            }
        }
    }
    let (mut leaves, mut branch_points) = (0, 0);
    for e in entries.iter() {
        if !e.is_node() || e.flags & eflags::PIECE != 0 {
            continue;
        }
        let mut real = 0;
        let mut c = e.first_child;
        while c != NIL {
            if entries[c as usize].flags & eflags::PIECE == 0 {
                real += 1;
            }
            c = entries[c as usize].next_sibling;
        }
        match real {
            0 => leaves += 1,
            1 => {}
            _ => branch_points += 1,
        }
    }
    (leaves, branch_points)
}

#[cfg(test)]
mod tests;
