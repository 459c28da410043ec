//! Claude Code's session files (CLI 2.1.197), as Claude Code itself reads them.
//!
//! A Claude Code session is one file, `~/.claude/projects/<encoded cwd>/<sessionId>.jsonl`,
//! with no header. Lines with a `uuid` are **nodes** (`user`, `assistant`, `system`,
//! `attachment`) and form a tree through `parentUuid`; the others are **metadata**
//! (`last-prompt`, titles, `mode`, `queue-operation`, `file-history-snapshot`, …) that
//! feed the leaf and the name but belong to no branch. This module is everything
//! sessionfs knows about the format; the shared index ([`crate::model::core::session::Session`])
//! calls it through the seam described in [`crate::model::core::format`](mod@crate::model::core::format).
//!
//! * [`head`] reads the fields of a line the index needs;
//! * this module turns a line into an index entry (or metadata), and keeps what only
//!   Claude Code needs per node: its class, flags, `message.id`, the `parentUuid` as
//!   Claude Code's loader links it, the preserved lists of compaction boundaries, the
//!   `last-prompt` lines;
//! * [`loader`] rebuilds Claude Code's in-memory view of the file: the compaction
//!   re-link and drop, the current leaf and chain end, the chain of any entry, and the
//!   deserialisation that runs before a resume;
//! * [`api`] turns a chain into the messages sent to the model (`context.json`);
//! * [`render`] writes the KIND files, images, previews and the readable context;
//! * [`append`] writes a user line and a title the way Claude Code does.
//!
//! # How the tree is shown
//!
//! Every node is an entry, under its `parentUuid`, in file order of indexing but linked
//! only once everything is indexed (a child can come before its parent). A
//! `compact_boundary` (`parentUuid: null`) hangs under its `logicalParentUuid`, so a
//! file stays one tree across compactions; when that node is not in the file (a
//! 2.1.197 `/branch` copy starts at a boundary) the boundary is a root, without a
//! complaint. A boundary with a `parentUuid` (2.1.332's `/branch` copies the path from
//! the root and links the boundary to the line before it) hangs there. `progress` lines (older
//! builds) are not entries: a child of one hangs under the progress line's parent, as
//! in Claude Code's loader.
//!
//! One API reply is stored one content block per line, chained; parallel tool calls
//! then leave a dead end (the first calls' results hang under their own `tool_use`
//! line while the conversation goes on from the last). Such a dead end is marked as a
//! *piece* of its turn ([`mark_pieces`]): it is shown where the file puts it, but the
//! leaf count, `branches/` and `tree` do not present it as a branch.
//!
//! A subagent's transcript (`<session>/subagents/agent-<id>.jsonl`, [`Side`]) is indexed
//! with its session: its lines are entries of their own file (`file_of`), its first
//! line hangs under the `tool_use` line that spawned it (named by its `.meta.json`)
//! under the name `agent-<id>`, and the whole of it is a piece of that turn. Claude
//! Code's loader never sees those lines: [`loader`] keeps each file apart.
//!
//! # Guarantees
//!
//! Indexing never fails on a line: malformed, unknown and id-less lines become notes.
//! The loader stops on every cycle (its walks keep a visited set), so the leaf, the
//! name and every context are computed for any file, however damaged
//! (`tests.rs` mutates every fixture to check it). The context of every entry of the
//! fixtures equals what the current Claude Code, 2.1.332, sends (`tests.rs`: the files
//! 2.1.197 and 2.1.332 wrote); the rules that depend on the release are in [`rules`].
//!
//! # Limits
//!
//! The context is the one Claude Code builds for the model the chain's last reply used
//! (attachments as `role:"system"` messages, as for every model since Opus 4.8), as
//! the CLI does it for a print-mode resume; the system
//! prompt, tools and per-request reminders are not in the file and are not shown.
//! Attachment types are rendered for those the samples and the CLI's renderers cover
//! (see [`api`]); others are left out of contexts. A line without a `uuid` whose type
//! is a node type is ignored, as Claude Code ignores it. Claude Code reads files over
//! 5 MB only from their last compaction on; this loader reads the whole file, which
//! gives the same chain (everything before that compaction is dropped either way). A
//! context is built from the whole chain: its cost grows with the chain's length.

pub mod agent;
pub mod api;
pub mod append;
pub mod fork;
pub mod head;
pub mod loader;
mod messages;
mod nodes;
pub mod render;
pub mod rules;
pub mod search;
pub mod usage;

use crate::model::core::id::{IdKey, IdTable};
use crate::model::core::kind::{KindId, KindTable};
use crate::model::core::scan::{Field, LineError};
use crate::model::core::session::{
    Entry, NIL, NO_TIME, ProblemKind, Session, Severity, flags as eflags,
};
use head::{Head, is_true, truthy};
use std::sync::OnceLock;

use nodes::FileSig;
pub use nodes::{Class, LastPrompt, NO_MSG, Node, Preserved, Side, State, nflags};

fn file_sig(path: &std::path::Path) -> Option<FileSig> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    let mtime = m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128;
    Some((m.dev(), m.ino(), m.len(), mtime))
}

/// The most read of a small side file (`custom-title.json`, a subagent's
/// `.meta.json`): a few hundred bytes in practice.
const SMALL_SIDE_FILE: u64 = 1 << 20;

/// Reads `side`, a file beside the session file `session`, only inside the session
/// file's folder, only a regular file, at most `max` bytes
/// ([`crate::model::core::input::read_beneath`]). For the search, which reads side
/// files without a session; an indexed session uses `Session::read_side`, the same.
pub fn read_side_of(
    session: &std::path::Path,
    side: &std::path::Path,
    max: u64,
) -> std::io::Result<Vec<u8>> {
    let home = session.parent().unwrap_or(std::path::Path::new("."));
    crate::model::core::input::read_beneath(home, side, max)
}

/// `<dir>/<sessionId>/custom-title.json` beside the session file `path`.
pub fn title_file_path(path: &std::path::Path) -> std::path::PathBuf {
    path.with_extension("").join("custom-title.json")
}

/// The `customTitle` of a `custom-title.json` (`{"customTitle","by","at"}`); `None`
/// for a file that is not such an object (it is Claude Code's, not ours to judge).
fn parse_title_file(bytes: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    v.get("customTitle")?.as_str().map(str::to_string)
}

/// What indexing a line gives the shared index.
#[derive(Debug)]
pub enum Outcome {
    /// A node: the entry to add, and perhaps a note about it.
    Entry {
        id: IdKey,
        parent_id: IdKey,
        ts: i64,
        kind: KindId,
        flags: u8,
        note: Option<(Severity, ProblemKind)>,
    },
    /// Not an entry (metadata, a progress line).
    Skip,
    /// Not an entry, and worth a note.
    Note(Severity, ProblemKind),
}

/// Metadata line types Claude Code reads or writes: 2.1.197's `Ncc` table and what
/// 2.1.332 added. A line of one of these types is no entry and no problem.
pub const METADATA_TYPES: &[&str] = &[
    "summary",
    "custom-title",
    "ended-by-model",
    "ai-title",
    "last-prompt",
    "tag",
    "relocated",
    "agent-name",
    "agent-color",
    "agent-setting",
    "pr-link",
    "frame-link",
    "bridge-session",
    "file-history-snapshot",
    "attribution-snapshot",
    "speculation-accept",
    "mode",
    "permission-mode",
    "isolation-latch",
    "worktree-state",
    "queue-operation",
    "content-replacement",
    "fork-context-ref",
    "marble-origami-commit",
    "marble-origami-snapshot",
    "marble-origami-reset",
    // Written by 2.1.332 (CLAUDE-FORMAT.md "2.1.332: what changed", B): request
    // records, costs, tools used, file backups; none is part of the tree.
    "atis-latch",
    "api-request-shape",
    "api-request-blob",
    "api-request",
    "cost-state",
    "tools-used",
    "file-history-delta",
    // Read or written by the 2.1.332 binary, not produced in any run.
    "repl-mode",
    "session-owner",
    "memory-mode",
    "hybrid-organization",
    "derived-from",
    "data-flow-records",
];

/// Node line types.
pub const NODE_TYPES: &[&str] = &["user", "assistant", "system", "attachment"];

/// Does this first parsed line say the file is a Claude Code session? A Pi file's first
/// line is its `session` header; a Claude Code file starts with a node or a metadata
/// line (a `uuid`, a `sessionId`, or a known type).
pub fn looks_like_claude(raw: &[u8]) -> bool {
    let Ok(h) = Head::parse(raw) else {
        return false;
    };
    let ty = h.ty.as_str();
    if ty == Some("session") {
        return false;
    }
    matches!(h.uuid, Field::Str(_))
        || matches!(h.session_id, Field::Str(_))
        || ty.is_some_and(|t| METADATA_TYPES.contains(&t) || t == "progress")
}

/// A line's `uuid`, when it names one (a non-empty string).
fn uuid_of<'h>(h: &'h Head<'_>) -> Option<&'h str> {
    match &h.uuid {
        Field::Str(u) if !u.is_empty() => Some(u),
        _ => None,
    }
}

/// Whether a raw line (without its `\n`) is an entry, as [`State::index_line`]
/// decides it: it parses, names a `uuid`, and is no `progress` line. No other line
/// is shown in any KIND file: metadata lines (titles, the last prompt, a request's
/// `api-request-*` records) feed the leaf and the name, and an entry's rendering
/// ([`extra`]) takes text only from entries (its parent's tool call, the other
/// parts of its reply) and from files beside the session. The search drops such
/// lines from its candidates (`Rules::shown`).
pub fn shown(raw: &[u8]) -> bool {
    Head::parse(raw).is_ok_and(|h| h.ty.as_str() != Some("progress") && uuid_of(&h).is_some())
}

impl State {
    /// Has `custom-title.json` beside the session file `path` changed (appeared,
    /// gone, rewritten) since [`read_title_file`](Self::read_title_file) read it?
    pub fn title_file_moved(&self, path: &std::path::Path) -> bool {
        file_sig(&title_file_path(path)) != self.title_file_sig
    }

    /// Reads `custom-title.json` beside the session file `path` if it changed;
    /// whether it did. A file that cannot be read or parsed gives no title.
    pub fn read_title_file(&mut self, path: &std::path::Path) -> bool {
        let p = title_file_path(path);
        let sig = file_sig(&p);
        if sig == self.title_file_sig {
            return false;
        }
        self.title_file_sig = sig;
        self.title_file = sig
            .and_then(|_| read_side_of(path, &p, SMALL_SIDE_FILE).ok())
            .and_then(|b| parse_title_file(&b));
        self.changed();
        true
    }

    /// Does a compaction boundary of the file list `id` among the messages it keeps?
    pub fn is_preserved(&self, id: IdKey) -> bool {
        self.preserved
            .values()
            .any(|p| p.all.contains(&id) || p.list.as_ref().is_some_and(|(_, u)| u.contains(&id)))
    }

    /// The interned `message.id`.
    fn msg_id(&mut self, s: &str) -> u32 {
        if let Some(&k) = self.msg_ids.get(s) {
            return k;
        }
        let k = self.msg_ids.len() as u32;
        self.msg_ids.insert(s.into(), k);
        k
    }

    /// Forgets the chain end (after any change to the index).
    pub fn changed(&mut self) {
        self.chain_end = OnceLock::new();
        self.name = OnceLock::new();
    }

    /// The title, computed once per change by `f`.
    pub fn name_with(&self, f: impl FnOnce() -> Option<String>) -> Option<&str> {
        self.name.get_or_init(f).as_deref()
    }

    /// The chain end, computed once per change by `f`.
    pub fn chain_end_with(&self, f: impl FnOnce() -> Option<u32>) -> Option<u32> {
        *self.chain_end.get_or_init(f)
    }

    /// Approximate heap bytes.
    pub fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.msg_ids.len() * 64
            + self.progress.len() * 24
            + self.prompts.capacity() * std::mem::size_of::<LastPrompt>()
            + self.preserved.len() * 128
    }

    /// Indexes one line that parsed as JSON (or did not). `next` is the index the
    /// entry would get, `line` its line number.
    pub fn index_line(
        &mut self,
        raw: &[u8],
        line: u32,
        next: u32,
        side: u16,
        ids: &mut IdTable,
        kinds: &mut KindTable,
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
        let ts = h
            .timestamp
            .as_str()
            .and_then(crate::model::core::js::js_date_ms)
            .unwrap_or(NO_TIME);
        if side == 0 && self.first_ts == 0 && ts != NO_TIME {
            self.first_ts = ts;
        }
        if side == 0
            && self.session_id.is_none()
            && let Some(sid) = h.session_id.as_str()
        {
            self.session_id = Some(sid.to_string());
        }
        let ty = h.ty.as_str().unwrap_or("");
        let uuid = uuid_of(&h);
        if ty == "progress" {
            if let Some(u) = uuid {
                // Claude Code's `M`: a progress line's children go to its parent.
                let p = self.loader_parent(&h.parent_uuid, ids);
                let k = ids.intern(u);
                self.progress.insert(k, p);
            }
            return Outcome::Skip;
        }
        let Some(uuid) = uuid else {
            if side != 0 {
                // A subagent's metadata says nothing about the session.
                return Outcome::Skip;
            }
            return self.index_metadata(&h, ty, line, ids);
        };
        let class = match ty {
            "user" => Class::User,
            "assistant" => Class::Assistant,
            "system" => Class::System,
            "attachment" => Class::Attachment,
            _ => Class::Other,
        };
        let id = ids.intern(uuid);
        let parent = self.loader_parent(&h.parent_uuid, ids);
        let mut nf = 0u16;
        let set = |nf: &mut u16, on: bool, f: u16| {
            if on {
                *nf |= f;
            }
        };
        set(
            &mut nf,
            truthy(&h.is_sidechain) || side != 0,
            nflags::SIDECHAIN,
        );
        set(&mut nf, truthy(&h.is_meta), nflags::META);
        set(
            &mut nf,
            truthy(&h.is_compact_summary),
            nflags::COMPACT_SUMMARY,
        );
        set(
            &mut nf,
            h.content.first_is_tool_result,
            nflags::TOOL_RESULT_FIRST,
        );
        set(&mut nf, h.content.any_tool_result, nflags::TOOL_RESULT_ANY);
        set(&mut nf, truthy(&h.tool_use_result), nflags::TOOL_USE_RESULT);
        set(&mut nf, truthy(&h.is_api_error), nflags::API_ERROR);
        set(&mut nf, h.content.is_array, nflags::CONTENT_ARRAY);
        let subtype = h.subtype.as_str().unwrap_or("");
        let boundary = class == Class::System && subtype == "compact_boundary";
        set(&mut nf, boundary, nflags::BOUNDARY);
        set(
            &mut nf,
            class == Class::System && subtype == "local_command",
            nflags::LOCAL_COMMAND,
        );
        let msg_id = match (class, h.msg_id.as_str()) {
            (Class::Assistant, Some(m)) if !m.is_empty() => self.msg_id(m),
            _ => NO_MSG,
        };
        if class == Class::Assistant
            && let Some(t) = &h.content.tool_use_id
        {
            self.tool_uses.insert(t.clone(), id);
        }
        if msg_id != NO_MSG {
            self.replies.entry(msg_id).or_default().push(next);
        }
        // The tree shows a boundary under the node the conversation continued from.
        // A boundary that names a parent of its own (2.1.332's `/branch` copies the
        // path from the root, the boundary linked to the line before it) stays there:
        // its logical parent is a line after it in that copy.
        let mut flags = 0u8;
        let mut parent_id = parent;
        if boundary {
            if parent.is_none()
                && let Some(l) = h.logical_parent_uuid.as_str().filter(|l| !l.is_empty())
            {
                parent_id = ids.intern(l);
                flags |= eflags::SOFT_PARENT;
            }
            if let Some(p) = preserved_of(raw, ids).filter(Preserved::is_some) {
                self.preserved.insert(next, p);
            }
        }
        let (kind_key, kind_name) = kind_of(class, ty, subtype, nf);
        let kind = kinds.intern_named(ty, &kind_key, &kind_name);
        let mut note = None;
        if class == Class::Other {
            flags |= eflags::UNKNOWN_TYPE;
            note = Some((Severity::Note, ProblemKind::UnknownType(ty.to_string())));
        }
        debug_assert_eq!(self.nodes.len(), next as usize);
        self.nodes.push(Node {
            class,
            flags: nf,
            msg_id,
            parent,
        });
        self.file_of.push(side);
        if side != 0 {
            let sd = &mut self.sides[side as usize - 1];
            if !sd.rooted && parent.is_none() {
                // The subagent's first line hangs under the call that spawned it.
                sd.rooted = true;
                let alias = format!("agent-{}", sd.agent_id);
                if let Some(&spawner) = sd.tool_use_id.as_ref().and_then(|t| self.tool_uses.get(t))
                {
                    parent_id = spawner;
                }
                self.by_alias.insert(alias.clone(), next);
                self.aliases.insert(next, alias);
                flags |= eflags::SOFT_PARENT;
            }
        }
        Outcome::Entry {
            id,
            parent_id,
            ts,
            kind,
            flags,
            note,
        }
    }

    /// `parentUuid` as the loader links it: a progress parent becomes the progress
    /// line's own parent (as far as known when the line is read, as in Claude Code).
    fn loader_parent(&self, f: &Field<'_>, ids: &mut IdTable) -> IdKey {
        match f.as_str().filter(|p| !p.is_empty()) {
            Some(p) => {
                let k = ids.intern(p);
                self.progress.get(&k).copied().unwrap_or(k)
            }
            None => IdKey::NONE,
        }
    }

    fn index_metadata(&mut self, h: &Head<'_>, ty: &str, line: u32, ids: &mut IdTable) -> Outcome {
        let string = |f: &Field<'_>| f.as_str().map(str::to_string);
        match ty {
            "last-prompt" => {
                let leaf = h
                    .leaf_uuid
                    .as_str()
                    .filter(|l| !l.is_empty())
                    .map(|l| ids.intern(l));
                self.prompts.push(LastPrompt {
                    line,
                    leaf,
                    null_leaf: matches!(h.leaf_uuid, Field::Null),
                    explicit: is_true(&h.explicit),
                    rewound: is_true(&h.rewound),
                });
                if let Some(p) = h.last_prompt.as_str().filter(|p| !p.trim().is_empty()) {
                    self.last_prompt = Some(p.to_string());
                }
            }
            "custom-title" if truthy(&h.session_id) => {
                self.custom_title = string(&h.custom_title);
            }
            "agent-name" if truthy(&h.session_id) => self.agent_name = string(&h.agent_name),
            "ai-title" if truthy(&h.session_id) => self.ai_title = string(&h.ai_title),
            "summary" => {
                if let (Some(l), Some(s)) = (
                    h.leaf_uuid.as_str().filter(|l| !l.is_empty()),
                    h.summary.as_str(),
                ) {
                    let k = ids.intern(l);
                    self.summaries.insert(k, s.to_string());
                }
            }
            t if METADATA_TYPES.contains(&t) => {}
            t if NODE_TYPES.contains(&t) => {
                return Outcome::Note(Severity::Warning, ProblemKind::MissingId);
            }
            t => return Outcome::Note(Severity::Note, ProblemKind::UnknownLine(t.to_string())),
        }
        Outcome::Skip
    }

    pub fn node(&self, i: u32) -> &Node {
        &self.nodes[i as usize]
    }

    /// Which file entry `i` is from: 0 the session file, `k` its `k`-th subagent.
    pub fn file_of(&self, i: u32) -> u16 {
        self.file_of.get(i as usize).copied().unwrap_or(0)
    }

    /// The name entry `i` is shown under instead of its uuid.
    pub fn alias(&self, i: u32) -> Option<&str> {
        self.aliases.get(&i).map(String::as_str)
    }

    /// The entry shown under `name` instead of its uuid.
    pub fn by_alias(&self, name: &str) -> Option<u32> {
        self.by_alias.get(name).copied()
    }

    /// Starts indexing the subagent transcript at `path` (`agent-<id>.jsonl`) with this
    /// session; its `.meta.json` names the call that spawned it. Returns its file number.
    pub fn add_side(
        &mut self,
        session: &std::path::Path,
        path: std::path::PathBuf,
    ) -> std::io::Result<u16> {
        use std::os::unix::fs::MetadataExt;
        let home = session.parent().unwrap_or(std::path::Path::new("."));
        let md = crate::model::core::input::open_beneath(home, &path)?.metadata()?;
        let stem = path
            .file_stem()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let agent_id = stem.strip_prefix("agent-").unwrap_or(&stem).to_string();
        let tool_use_id = read_side_of(session, &path.with_extension("meta.json"), SMALL_SIDE_FILE)
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
}

/// The subagent transcripts of the session file `path`:
/// `<dir>/<stem>/subagents/agent-*.jsonl`, sorted.
pub fn side_files(path: &std::path::Path) -> Vec<std::path::PathBuf> {
    let dir = path.with_extension("").join("subagents");
    let Ok(rd) = crate::model::core::listing::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<std::path::PathBuf> = rd
        .into_iter()
        .filter(|e| {
            e.path().extension().is_some_and(|x| x == "jsonl")
                && e.file_name().to_string_lossy().starts_with("agent-")
                && e.is_file()
        })
        .map(|e| e.into_path())
        .collect();
    out.sort();
    out
}

/// The full output a tool result spilled to `<session>/tool-results/`, if the line
/// names one (`toolUseResult.persistedOutputPath`, looked up beside this session
/// file whatever directory the path was written in) and it opens as a side file
/// ([`full_output_status`]).
pub fn full_output_path(
    session: &std::path::Path,
    v: &serde_json::Value,
) -> Option<std::path::PathBuf> {
    full_output_status(session, v)?.ok()
}

/// The spilled full output a tool result's line names, when there is such a file:
/// its path, or why it is not shown (it is no regular file, or a link out of the
/// session's folder, [`crate::model::core::input::open_beneath`]). `None` when the
/// line names none or the file is not there.
pub fn full_output_status(
    session: &std::path::Path,
    v: &serde_json::Value,
) -> Option<Result<std::path::PathBuf, String>> {
    let p = v
        .get("toolUseResult")
        .and_then(|t| t.get("persistedOutputPath"))
        .and_then(serde_json::Value::as_str)?;
    let name = std::path::Path::new(p).file_name()?;
    let local = session.with_extension("").join("tool-results").join(name);
    let home = session.parent().unwrap_or(std::path::Path::new("."));
    match crate::model::core::input::open_beneath(home, &local) {
        Ok(_) => Some(Ok(local)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => Some(Err(format!(
            "{} (not shown: {})",
            name.to_string_lossy(),
            crate::model::core::input::io_message(&e)
        ))),
    }
}

/// The context at entry `i`: what Claude Code sends when a new prompt follows it (the
/// plain `--resume` context at the chain end). Empty when Claude Code would not reach
/// the entry (a line it does not load).
pub fn context(s: &Session, st: &State, i: u32) -> std::io::Result<Vec<serde_json::Value>> {
    context_by(s, st, i, rules::CURRENT)
}

/// [`context`] by the rules of one release ([`rules`]).
pub fn context_by(
    s: &Session,
    st: &State,
    i: u32,
    rules: &rules::Rules,
) -> std::io::Result<Vec<serde_json::Value>> {
    if !st.nodes.get(i as usize).is_some_and(Node::is_loaded) {
        return Ok(Vec::new());
    }
    let x = if Some(i) == s.leaf() { None } else { Some(i) };
    Ok(match loader::chain_messages(s, st, x, rules)? {
        Some(chain) => api::context(chain, rules),
        None => Vec::new(),
    })
}

/// The entry whose context Claude Code sent when the model wrote assistant line `i`:
/// the parent of the first line of its reply. The lines of one reply (one
/// `message.id`) hang one under another, with the results of its tool calls possibly
/// between them; they are all one answer to one request. `None` for any other line,
/// or a reply at a root.
pub fn request_of(s: &Session, st: &State, i: u32) -> Option<u32> {
    let nd = st.nodes.get(i as usize)?;
    if nd.class != Class::Assistant {
        return None;
    }
    let node = |j: u32| st.nodes.get(j as usize);
    let same_reply = |j: u32| {
        nd.msg_id != NO_MSG
            && node(j).is_some_and(|n| n.class == Class::Assistant && n.msg_id == nd.msg_id)
    };
    let tool_result =
        |j: u32| node(j).is_some_and(|n| n.class == Class::User && n.has(nflags::TOOL_RESULT_ANY));
    let mut first = i;
    loop {
        let p = s.entry(first).parent;
        if p == NIL {
            return None;
        }
        if same_reply(p) {
            first = p;
            continue;
        }
        let gp = s.entry(p).parent;
        if tool_result(p) && gp != NIL && same_reply(gp) {
            first = gp;
            continue;
        }
        return Some(p);
    }
}

/// What rendering entry `i` needs from its neighbours: the tool a result answers, the
/// part of its reply an assistant line is.
pub fn extra(s: &Session, st: &State, i: u32, v: &serde_json::Value) -> render::Extra {
    let mut x = render::Extra::default();
    let Some(nd) = st.nodes.get(i as usize) else {
        return x;
    };
    if nd.class == Class::Assistant && nd.msg_id != NO_MSG {
        let parts: Vec<u32> = st
            .replies
            .get(&nd.msg_id)
            .map(|v| {
                v.iter()
                    .copied()
                    .filter(|&j| s.entry(j).is_node())
                    .collect()
            })
            .unwrap_or_default();
        if parts.len() > 1 {
            let p = parts.iter().position(|&j| j == i).unwrap_or(0) + 1;
            let id = v
                .get("message")
                .and_then(|m| m.get("id"))
                .and_then(serde_json::Value::as_str)
                .unwrap_or("")
                .to_string();
            x.part = Some((p, parts.len(), id));
        }
    }
    if nd.has(nflags::TOOL_USE_RESULT)
        && let Some(status) = full_output_status(s.path(), v)
    {
        x.full_output = match status {
            Ok(p) => p
                .file_name()
                .map(|n| format!("{} (as full-output)", n.to_string_lossy())),
            Err(why) => Some(why),
        };
    }
    if nd.has(nflags::TOOL_RESULT_ANY) {
        let want: Vec<&str> = v
            .get("message")
            .and_then(|m| m.get("content"))
            .and_then(serde_json::Value::as_array)
            .map(|bs| {
                bs.iter()
                    .filter_map(|b| b.get("tool_use_id").and_then(serde_json::Value::as_str))
                    .collect()
            })
            .unwrap_or_default();
        if let Some(p) = s.parent(i)
            && let Ok(pv) = s.entry_value(p)
            && let Some(bs) = pv
                .get("message")
                .and_then(|m| m.get("content"))
                .and_then(serde_json::Value::as_array)
        {
            x.tool_name = bs
                .iter()
                .find(|b| {
                    b.get("id")
                        .and_then(serde_json::Value::as_str)
                        .is_some_and(|id| want.contains(&id))
                })
                .and_then(|b| b.get("name"))
                .and_then(serde_json::Value::as_str)
                .map(str::to_string);
        }
    }
    x
}

/// `session.json` of a Claude Code file: it has no header line, so sessionfs makes
/// one object from the file: `{"format":"claude-code","sessionId","cwd","version",
/// "gitBranch","timestamp"}` (from the first node that has them; the timestamp is the
/// first line's).
pub fn session_json(s: &Session, st: &State) -> String {
    let mut cwd = serde_json::Value::Null;
    let mut version = serde_json::Value::Null;
    let mut branch = serde_json::Value::Null;
    for i in 0..st.nodes.len().min(s.entries().len()) as u32 {
        if !st.nodes[i as usize].is_loaded() {
            continue;
        }
        if let Ok(v) = s.entry_value(i) {
            cwd = v.get("cwd").cloned().unwrap_or(serde_json::Value::Null);
            version = v.get("version").cloned().unwrap_or(serde_json::Value::Null);
            branch = v
                .get("gitBranch")
                .cloned()
                .unwrap_or(serde_json::Value::Null);
            break;
        }
    }
    let ts = match s.header().timestamp_ms {
        NO_TIME => serde_json::Value::Null,
        ms => serde_json::Value::String(crate::model::core::time::format_iso_ms(ms)),
    };
    let v = serde_json::json!({
        "format": "claude-code",
        "sessionId": s.header().session_id,
        "cwd": cwd,
        "version": version,
        "gitBranch": branch,
        "timestamp": ts,
    });
    let mut out = crate::model::core::js::js_stringify(&v);
    out.push('\n');
    out
}

/// The name Claude Code's picker (`claude --resume`) shows: `agent-name` ‖
/// `custom-title` (the line, else the side file `custom-title.json`) ‖ `ai-title` ‖ the
/// `summary` of the leaf ‖ the last prompt typed (`lastPrompt` of the last
/// `last-prompt` line that has one: the picker showed it, not the first prompt, for an
/// untitled session, measured with 2.1.332 in `tests/fixtures/claude-332/pickers`) ‖
/// the first prompt of the current chain (a file without `last-prompt` lines, as older
/// releases wrote them: Claude Code's title rule `_2e`) ‖ the first 8 characters of
/// the session id; XML-like tags removed, trimmed, on one line of at most 200
/// characters.
pub fn title(s: &Session, st: &State) -> Option<String> {
    let pick = |o: &Option<String>| o.as_ref().filter(|t| !t.is_empty()).cloned();
    let leaf = s.leaf();
    let summary = leaf.and_then(|l| {
        let chain = loader::current_chain(s, st);
        let leaf_msg = chain
            .iter()
            .rev()
            .find(|&&c| st.nodes[c as usize].is_message())
            .copied()
            .unwrap_or(l);
        st.summaries.get(&s.entry(leaf_msg).id).cloned()
    });
    let t = pick(&st.agent_name)
        .or_else(|| pick(&st.custom_title))
        // The side file outlives the line when an in-place rewrite drops it.
        .or_else(|| pick(&st.title_file))
        .or_else(|| pick(&st.ai_title))
        .or_else(|| summary.filter(|x| !x.is_empty()))
        .or_else(|| {
            let p = st.last_prompt.as_deref()?;
            let stripped = strip_tags(&one_line_200(p)).trim().to_string();
            (!stripped.is_empty()).then_some(stripped)
        })
        .or_else(|| {
            let p = first_prompt(s, st)?;
            let stripped = strip_tags(&p).trim().to_string();
            (!stripped.is_empty()).then_some(stripped)
        })
        .or_else(|| {
            let sid = &s.header().session_id;
            (!sid.is_empty()).then(|| sid.chars().take(8).collect())
        })?;
    let out = strip_tags(&t);
    let out = if out.trim().is_empty() { t } else { out };
    let out = out.trim().to_string();
    (!out.is_empty()).then_some(out)
}

/// `jVo`/`NQt`: the first thing the user typed on the current chain, on one line, cut
/// at 200 characters.
fn first_prompt(s: &Session, st: &State) -> Option<String> {
    for i in loader::current_chain(s, st) {
        let nd = &st.nodes[i as usize];
        if nd.class != Class::User || nd.has(nflags::META) || nd.has(nflags::COMPACT_SUMMARY) {
            continue;
        }
        let Ok(v) = s.entry_value(i) else { continue };
        let texts: Vec<String> = match v.get("message").and_then(|m| m.get("content")) {
            Some(serde_json::Value::String(t)) => vec![t.clone()],
            Some(serde_json::Value::Array(bs)) => bs
                .iter()
                .filter(|b| b.get("type").and_then(serde_json::Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(serde_json::Value::as_str))
                .filter(|t| !t.is_empty())
                .map(str::to_string)
                .collect(),
            _ => continue,
        };
        for t in texts {
            // Slash commands (built in, as far as sessionfs can tell) are skipped.
            if tag_content(&t, "command-name").is_some() {
                continue;
            }
            if let Some(b) = tag_content(&t, "bash-input") {
                return Some(one_line_200(&format!("! {b}")));
            }
            let lead = t.trim_start();
            if lead.starts_with("[Request interrupted by user") || starts_with_tag(lead) {
                continue;
            }
            return Some(one_line_200(&t));
        }
    }
    None
}

fn one_line_200(t: &str) -> String {
    let n = t.replace('\n', " ");
    let n = n.trim();
    if n.chars().count() > 200 {
        let cut: String = n.chars().take(200).collect();
        format!("{}\u{2026}", cut.trim())
    } else {
        n.to_string()
    }
}

/// `<x` or `<x>` with a lowercase tag name at the start.
fn starts_with_tag(t: &str) -> bool {
    let mut c = t.chars();
    c.next() == Some('<') && c.next().is_some_and(|x| x.is_ascii_lowercase()) && {
        let rest: String = t[2..]
            .chars()
            .take_while(|x| x.is_alphanumeric() || *x == '_' || *x == '-')
            .collect();
        let after = &t[2 + rest.len()..];
        after.starts_with('>') || after.starts_with(char::is_whitespace)
    }
}

/// The text inside the first `<tag>…</tag>`.
fn tag_content<'a>(t: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let a = t.find(&open)? + open.len();
    let b = t[a..].find(&close)? + a;
    let inner = &t[a..b];
    (!inner.is_empty()).then_some(inner)
}

/// `GHs`: `<tag …>…</tag>` (and one newline after) removed.
fn strip_tags(t: &str) -> String {
    let mut out = String::with_capacity(t.len());
    let mut rest = t;
    while let Some(p) = rest.find('<') {
        out.push_str(&rest[..p]);
        let after = &rest[p + 1..];
        let name: String = after
            .chars()
            .enumerate()
            .take_while(|(k, c)| {
                if *k == 0 {
                    c.is_ascii_lowercase()
                } else {
                    c.is_alphanumeric() || *c == '_' || *c == '-'
                }
            })
            .map(|(_, c)| c)
            .collect();
        let tail = &after[name.len()..];
        let head_end = if name.is_empty() {
            None
        } else if tail.starts_with('>') {
            Some(0)
        } else if tail.starts_with(char::is_whitespace) {
            tail.find('>')
        } else {
            None
        };
        match head_end {
            Some(h) => {
                let body = &tail[h + 1..];
                let close = format!("</{name}>");
                match body.find(&close) {
                    Some(c) => {
                        let mut next = &body[c + close.len()..];
                        next = next.strip_prefix('\n').unwrap_or(next);
                        rest = next;
                    }
                    None => {
                        out.push('<');
                        rest = after;
                    }
                }
            }
            None => {
                out.push('<');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `(key, file name)` of a node's kind.
fn kind_of(class: Class, ty: &str, subtype: &str, nf: u16) -> (String, String) {
    let (k, n): (&str, &str) = match class {
        Class::User if nf & nflags::COMPACT_SUMMARY != 0 => ("compactSummary", "compactSummary"),
        Class::User if nf & (nflags::TOOL_RESULT_FIRST | nflags::TOOL_RESULT_ANY) != 0 => {
            ("toolResult", "toolResult")
        }
        Class::User if nf & nflags::META != 0 => ("meta", "meta"),
        Class::User => ("user", "user"),
        Class::Assistant => ("assistant", "assistant"),
        Class::System if subtype.is_empty() => ("", "system"),
        Class::System => (subtype, subtype),
        Class::Attachment => ("", "attachment"),
        Class::Other => ("", if ty.is_empty() { "entry" } else { ty }),
    };
    (k.to_string(), n.to_string())
}

/// The preserved lists of a `compact_boundary` line (parsed whole: boundaries are rare).
fn preserved_of(raw: &[u8], ids: &mut IdTable) -> Option<Preserved> {
    let v: serde_json::Value = serde_json::from_slice(raw).ok()?;
    let meta = v.get("compactMetadata")?;
    let key = |v: Option<&serde_json::Value>, ids: &mut IdTable| -> Option<IdKey> {
        v.and_then(|x| x.as_str()).map(|s| ids.intern(s))
    };
    let mut p = Preserved::default();
    if let Some(pm) = meta.get("preservedMessages").filter(|x| js_truthy_value(x)) {
        let anchor = key(pm.get("anchorUuid"), ids).unwrap_or(IdKey::NONE);
        let mut keys = |k: &str| -> Vec<IdKey> {
            pm.get(k)
                .and_then(|u| u.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str())
                        .map(|s| ids.intern(s))
                        .collect()
                })
                .unwrap_or_default()
        };
        let uuids = keys("uuids");
        p.all = keys("allUuids");
        p.list = Some((anchor, uuids));
    }
    if let Some(seg) = meta.get("preservedSegment").filter(|x| js_truthy_value(x)) {
        let head = key(seg.get("headUuid"), ids).unwrap_or(IdKey::NONE);
        let anchor = key(seg.get("anchorUuid"), ids).unwrap_or(IdKey::NONE);
        let tail = key(seg.get("tailUuid"), ids).unwrap_or(IdKey::NONE);
        p.segment = Some((head, anchor, tail));
    }
    Some(p)
}

fn js_truthy_value(v: &serde_json::Value) -> bool {
    crate::model::core::js::js_truthy(Some(v))
}

/// Marks the dead ends that parallel tool calls leave ([`eflags::PIECE`]): at an
/// assistant line with children, a child whose whole subtree belongs to the same reply
/// (assistant lines of the same `message.id`, and tool results hanging under them) is a
/// piece of that turn, unless it is the only way on. When every child is such a piece,
/// the one holding the line written last is the way on (Claude Code continues from the
/// result written last).
///
/// A subagent's transcript (hung under the call that spawned it) is a piece too: it
/// belongs to that turn, and its tips are no branches of the conversation.
pub fn mark_pieces(entries: &mut [Entry], nodes: &[Node], file_of: &[u16]) {
    for (i, e) in entries.iter_mut().enumerate() {
        e.flags &= !eflags::PIECE;
        if file_of.get(i).is_some_and(|&f| f != 0) {
            e.flags |= eflags::PIECE;
        }
    }
    let n = entries.len().min(nodes.len());
    let mut kids: Vec<u32> = Vec::new();
    let mut pure: Vec<(u32, bool, u32)> = Vec::new();
    for p in 0..n {
        let e = &entries[p];
        if !e.is_node()
            || e.child_count < 2
            || nodes[p].class != Class::Assistant
            || e.flags & eflags::PIECE != 0
        {
            continue;
        }
        let m = nodes[p].msg_id;
        if m == NO_MSG {
            continue;
        }
        kids.clear();
        let mut c = e.first_child;
        while c != NIL {
            kids.push(c);
            c = entries[c as usize].next_sibling;
        }
        pure.clear();
        for &k in &kids {
            let (is_pure, last) = subtree_in_turn(entries, nodes, k, m);
            pure.push((k, is_pure, last));
        }
        let pieces: Vec<u32> = if pure.iter().all(|x| x.1) {
            let keep = pure.iter().max_by_key(|x| x.2).map(|x| x.0);
            pure.iter()
                .filter(|x| Some(x.0) != keep)
                .map(|x| x.0)
                .collect()
        } else {
            pure.iter().filter(|x| x.1).map(|x| x.0).collect()
        };
        for k in pieces {
            mark_subtree(entries, k);
        }
    }
}

/// Does the subtree at `k` hold only lines of reply `m` and their tool results? And the
/// largest entry index in it. Stops at the first line that is not: the way on holds the
/// rest of the conversation, which is not walked.
fn subtree_in_turn(entries: &[Entry], nodes: &[Node], k: u32, m: u32) -> (bool, u32) {
    let mut stack = vec![k];
    let mut last = k;
    while let Some(x) = stack.pop() {
        last = last.max(x);
        let nd = &nodes[x as usize];
        let e = &entries[x as usize];
        let own = match nd.class {
            Class::Assistant => nd.msg_id == m,
            Class::User => {
                nd.has(nflags::TOOL_RESULT_ANY)
                    && e.parent != NIL
                    && nodes[e.parent as usize].class == Class::Assistant
                    && nodes[e.parent as usize].msg_id == m
            }
            _ => false,
        };
        if !own {
            return (false, last);
        }
        let mut c = e.first_child;
        while c != NIL {
            stack.push(c);
            c = entries[c as usize].next_sibling;
        }
    }
    (true, last)
}

fn mark_subtree(entries: &mut [Entry], k: u32) {
    let mut stack = vec![k];
    while let Some(x) = stack.pop() {
        entries[x as usize].flags |= eflags::PIECE;
        let mut c = entries[x as usize].first_child;
        while c != NIL {
            stack.push(c);
            c = entries[c as usize].next_sibling;
        }
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_332;
