//! What Claude Code's index keeps per node and per file: [`Class`], [`Node`] and its
//! [`nflags`], [`LastPrompt`], [`Preserved`], [`State`], [`Side`]. Its own file, naming
//! none of its siblings, because the loader reads these and `claude/mod.rs` (which
//! re-exports them) names the loader: with them in `mod.rs` the two would name each
//! other.

use crate::model::core::id::{IdBuild, IdKey};
use std::collections::HashMap;
use std::sync::OnceLock;

/// What a node is, for Claude Code's loader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    User,
    Assistant,
    System,
    Attachment,
    /// A line with a `uuid` and a type Claude Code does not load: shown, never sent.
    Other,
}

/// Bits of [`Node::flags`].
pub mod nflags {
    pub const SIDECHAIN: u16 = 1;
    pub const META: u16 = 2;
    pub const COMPACT_SUMMARY: u16 = 4;
    /// `message.content[0]` is a `tool_result` block.
    pub const TOOL_RESULT_FIRST: u16 = 8;
    /// Some block of `message.content` is a `tool_result`.
    pub const TOOL_RESULT_ANY: u16 = 16;
    /// The line has a truthy `toolUseResult`.
    pub const TOOL_USE_RESULT: u16 = 32;
    pub const API_ERROR: u16 = 64;
    /// `system` with subtype `compact_boundary`.
    pub const BOUNDARY: u16 = 128;
    /// `system` with subtype `local_command`.
    pub const LOCAL_COMMAND: u16 = 256;
    /// `message.content` is an array.
    pub const CONTENT_ARRAY: u16 = 512;
}

/// Per-entry facts only Claude Code needs (parallel to the session's entries).
#[derive(Debug, Clone, Copy)]
pub struct Node {
    pub class: Class,
    pub flags: u16,
    /// `message.id` of an assistant line, interned; [`NO_MSG`] otherwise.
    pub msg_id: u32,
    /// `parentUuid` as Claude Code's loader links it (a progress parent replaced by its
    /// own parent; a boundary's `null`), which for a boundary differs from the tree.
    pub parent: IdKey,
}

/// No `message.id`.
pub const NO_MSG: u32 = u32::MAX;

impl Node {
    pub fn has(&self, f: u16) -> bool {
        self.flags & f != 0
    }
    /// `user` or `assistant`: a message of the conversation.
    pub fn is_message(&self) -> bool {
        matches!(self.class, Class::User | Class::Assistant)
    }
    /// One of the four types Claude Code's loader keeps.
    pub fn is_loaded(&self) -> bool {
        !matches!(self.class, Class::Other)
    }
}

/// A `last-prompt` line.
#[derive(Debug, Clone, Copy)]
pub struct LastPrompt {
    pub line: u32,
    /// `leafUuid` when it is a non-empty string.
    pub leaf: Option<IdKey>,
    /// `leafUuid: null`.
    pub null_leaf: bool,
    pub explicit: bool,
    pub rewound: bool,
}

/// The preserved messages a compaction boundary lists (`compactMetadata`).
#[derive(Debug, Clone, Default)]
pub struct Preserved {
    /// `preservedMessages`: anchor and uuids, in order.
    pub list: Option<(IdKey, Vec<IdKey>)>,
    /// `preservedMessages.allUuids`.
    pub all: Vec<IdKey>,
    /// `preservedSegment`: head, anchor, tail.
    pub segment: Option<(IdKey, IdKey, IdKey)>,
}

impl Preserved {
    pub(crate) fn is_some(&self) -> bool {
        self.list.is_some() || self.segment.is_some()
    }
}

/// Everything the index keeps about a Claude Code file besides the shared entries.
#[derive(Debug, Default)]
pub struct State {
    pub nodes: Vec<Node>,
    pub(crate) msg_ids: HashMap<Box<str>, u32>,
    /// `progress` uuid → the parent its children are given (Claude Code's `M` map).
    pub(crate) progress: HashMap<IdKey, IdKey, IdBuild>,
    pub prompts: Vec<LastPrompt>,
    /// Boundaries that list preserved messages, by entry index.
    pub preserved: HashMap<u32, Preserved, IdBuild>,
    /// The last title line of each kind.
    pub agent_name: Option<String>,
    pub custom_title: Option<String>,
    pub ai_title: Option<String>,
    /// The `lastPrompt` of the last `last-prompt` line that has one: the last prompt
    /// typed, which Claude Code's picker shows for a session without a title.
    pub last_prompt: Option<String>,
    /// `customTitle` of the side file `<sessionId>/custom-title.json` (2.1.332 writes
    /// it with `/rename` and `/branch NAME`), and the file's identity when read.
    pub title_file: Option<String>,
    pub(crate) title_file_sig: Option<FileSig>,
    /// `summary` lines by `leafUuid`.
    pub summaries: HashMap<IdKey, String, IdBuild>,
    /// The first `sessionId` seen on a line.
    pub session_id: Option<String>,
    /// Timestamp of the first line that has one (ms).
    pub first_ts: i64,
    /// The chain end, computed when first asked for after a change.
    pub(crate) chain_end: OnceLock<Option<u32>>,
    /// The title, likewise.
    pub(crate) name: OnceLock<Option<String>>,
    /// Subagent transcripts indexed with the session; entry `i` is from
    /// `sides[file_of[i] - 1]` (0: the session file itself).
    pub sides: Vec<Side>,
    pub file_of: Vec<u16>,
    /// `tool_use` id → the uuid of the assistant line that holds it.
    pub(crate) tool_uses: HashMap<String, IdKey>,
    /// The lines of each reply (`message.id`), in file order.
    pub(crate) replies: HashMap<u32, Vec<u32>, IdBuild>,
    /// Entries shown under another name than their uuid (a subagent's first line is
    /// `agent-<id>`), both ways.
    pub(crate) aliases: HashMap<u32, String>,
    pub(crate) by_alias: HashMap<String, u32>,
}

/// A subagent's transcript, `<session>/subagents/agent-<agentId>.jsonl`, indexed with
/// its session: its lines are entries of the session's index (of their own file), and
/// its first root hangs under the line whose `tool_use` spawned it (from its
/// `.meta.json`), named `agent-<agentId>`.
///
/// The file is opened when it is read, not kept open: a session with many subagents
/// must not hold as many descriptors (a directory mount keeps one per loaded session).
#[derive(Debug)]
pub struct Side {
    pub path: std::path::PathBuf,
    pub dev_ino: (u64, u64),
    /// Bytes indexed (the end of a complete line).
    pub scanned: u64,
    pub next_line: u32,
    pub agent_id: String,
    /// The `tool_use` that spawned it.
    pub tool_use_id: Option<String>,
    /// Its first root was attached to the spawning line.
    pub rooted: bool,
}

/// What tells a small side file's versions apart: device, inode, size, mtime (ns).
pub(crate) type FileSig = (u64, u64, u64, i128);
