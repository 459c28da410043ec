//! The index of one session file.
//!
//! A [`Session`] reads a session file once, front to back, and keeps per entry only
//! what the tree needs: id, parent, kind, timestamp and the byte range of its line
//! (64 bytes an entry, plus the id map). Content is read back from the file with
//! `pread` and parsed only when asked for ([`Session::entry_value`]), so the index of a
//! 100 MB session fits in a few MB.
//!
//! Loading is tolerant in the way Pi is, and stricter where Pi is unsafe:
//!
//! * blank, malformed and non-object lines are skipped (and reported by `check`);
//! * the first line that parses says whose file it is: a Pi header (`type:
//!   "session"`, string `id`) or a line an agent's detection recognises, otherwise
//!   [`LoadError::NotASession`]; the file is never written to. From there on the
//!   agent indexes every line ([`super::agent::Agent::index_line`]; Pi's in
//!   `crate::model::pi::index`) and keeps what only it needs; the session keeps the
//!   entries, the tree, the problems and the neutral [`Header`];
//! * a last line without `\n` is not yet written: it is neither indexed nor an error,
//!   and is picked up once its newline arrives;
//! * duplicate ids: the later entry wins, the earlier one leaves the tree;
//! * a missing parent, a self-parent, or a parent cycle makes an entry a root, so
//!   walking to the root always ends (Pi hangs on cycles);
//! * v1 and v2 files are migrated in memory as Pi does (Pi's index and
//!   `crate::model::pi::migrate`); v1 entries get ids derived from the session id and
//!   their position, the same on every load.
//!
//! [`Session::refresh`] catches up with lines appended since, or reloads the file when
//! it was replaced, truncated or rewritten.
//!
//! The file is read 4 MiB at a time (`Reading`). Parsing a line's head is most of an
//! index's time and depends on that line alone, so when the agent reads lines by
//! their [`LineHead`] (Pi), a read's lines are parsed on two threads and indexed on
//! this one in file order (`scan::each_head`): everything that
//! depends on the lines before (ids, duplicates, v1 positions, labels, the tree) is
//! done exactly as a line-by-line pass does it, which `parallel_index_tests` (Pi's
//! agent) checks on random and damaged files.

use crate::model::core::fork_file::{ForkError, ForkFile, Fresh};
pub use crate::model::core::format::Format;
use crate::model::core::id::{IdBuild, IdKey, IdTable};
use crate::model::core::input::{Access, Line};
use crate::model::core::kind::{KindId, KindTable};
pub use crate::model::core::problem::{EditProblem, LoadError, Problem, ProblemKind, Severity};
use crate::model::core::reply::{AppendError, NewEntry, Write};
use crate::model::core::scan::{LineError, LineHead};
use crate::model::core::text::Image;
use crate::model::core::usage::Table;
use crate::model::core::usage::prices::Prices;
use serde_json::Value;
use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

/// "No entry": the parent of a root, the end of a sibling list.
pub const NIL: u32 = u32::MAX;

/// Lines of a context that add up to this many bytes are parsed on two cores.
const PARALLEL_PARSE_BYTES: usize = 64 << 10;

/// Lines parsed by [`parse_lines`] and what is left to take.
struct ParseWork {
    bufs: Vec<Vec<u8>>,
    /// Each line: its buffer, where it starts there, its length.
    lines: Vec<(usize, usize, usize)>,
    /// Runs of lines taken one at a time, by either thread.
    chunks: Vec<std::ops::Range<usize>>,
    next: std::sync::atomic::AtomicUsize,
}

impl ParseWork {
    /// Takes the next run of lines not yet taken.
    fn take(&self) -> Option<usize> {
        let c = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        (c < self.chunks.len()).then_some(c)
    }

    fn parse(&self, c: usize) -> Vec<Option<serde_json::Value>> {
        self.lines[self.chunks[c].clone()]
            .iter()
            .map(|&(b, at, len)| {
                crate::model::core::js::parse_line(&self.bufs[b][at..at + len]).ok()
            })
            .collect()
    }
}

/// Each line parsed (`None`: nested too deep to build). Lines parse independently:
/// when they add up to [`PARALLEL_PARSE_BYTES`], a helper thread takes runs of them
/// too, as this one does. The helper runs at background priority ([`crate::prio`]):
/// this thread never waits for it, not even for a run it took (once this one has
/// nothing left to take, it parses again whatever the helper has not handed back).
pub(crate) fn parse_lines(
    bufs: Vec<Vec<u8>>,
    lines: Vec<(usize, usize, usize)>,
) -> Vec<Option<serde_json::Value>> {
    /// About this many bytes of lines to a run.
    const RUN: usize = 16 << 10;
    let total: usize = lines.iter().map(|l| l.2).sum();
    let mut chunks = Vec::new();
    let (mut from, mut size) = (0, 0);
    for (i, l) in lines.iter().enumerate() {
        size += l.2;
        if size >= RUN || i + 1 == lines.len() {
            chunks.push(from..i + 1);
            (from, size) = (i + 1, 0);
        }
    }
    let n = chunks.len();
    let work = std::sync::Arc::new(ParseWork {
        bufs,
        lines,
        chunks,
        next: std::sync::atomic::AtomicUsize::new(0),
    });
    let (tx, rx) = std::sync::mpsc::channel();
    if total >= PARALLEL_PARSE_BYTES && crate::model::core::scan::second_cpu() {
        let w = work.clone();
        // Without a thread, this one parses everything.
        let _ = std::thread::Builder::new()
            .name("context-parse".into())
            .spawn(move || {
                crate::prio::background();
                while let Some(c) = w.take() {
                    if tx.send((c, w.parse(c))).is_err() {
                        break;
                    }
                }
            });
    } else {
        drop(tx);
    }
    let mut done: Vec<Option<Vec<Option<serde_json::Value>>>> = (0..n).map(|_| None).collect();
    let mut mine = 0;
    while let Some(c) = work.take() {
        done[c] = Some(work.parse(c));
        mine += 1;
    }
    // What the helper has handed back; the rest (a run it is still on, or one it took
    // and was not given a CPU for) is parsed here below.
    for _ in mine..n {
        match rx.try_recv() {
            Ok((c, v)) => done[c] = Some(v),
            Err(_) => break,
        }
    }
    done.into_iter()
        .enumerate()
        .flat_map(|(c, d)| d.unwrap_or_else(|| work.parse(c)))
        .collect()
}

/// Timestamp value for a timestamp JavaScript cannot parse (`NaN`).
pub const NO_TIME: i64 = i64::MIN;

/// One parsed, non-header line of the file, in file order.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Byte offset of the line in the file.
    pub offset: u64,
    /// Length of the line, without its `\n`.
    pub len: u32,
    /// 1-based line number in the file.
    pub line: u32,
    pub id: IdKey,
    /// The `parentId` as written (`NONE` for null or missing).
    pub parent_id: IdKey,
    /// Entry timestamp in ms, or [`NO_TIME`].
    pub ts: i64,
    pub kind: KindId,
    pub flags: u8,
    /// The source the line is in: 0 for the session file, `n` for
    /// [`Session::source`]`(n)` (see [`Source`]).
    pub file: u16,
    /// Resolved tree links (entry indices), valid unless [`flags::SHADOWED`].
    pub parent: u32,
    pub first_child: u32,
    pub last_child: u32,
    pub next_sibling: u32,
    pub child_count: u32,
    /// Entries on the path from the root to here, inclusive (roots are 1).
    pub depth: u32,
}

/// Bits of [`Entry::flags`].
pub mod flags {
    /// A later entry has the same id; this one is not in the tree.
    pub const SHADOWED: u8 = 1;
    /// The entry has no string `id` on disk (and is not from a v1 file).
    pub const NO_ID: u8 = 2;
    /// Root because its parent is not in the file.
    pub const ORPHAN: u8 = 4;
    /// Root because it is its own parent.
    pub const SELF_PARENT: u8 = 8;
    /// Root because it closed a parent cycle.
    pub const CYCLE: u8 = 16;
    /// The `type` is not one the format knows (for Pi, one Pi 1.6 knows).
    pub const UNKNOWN_TYPE: u8 = 32;
    /// A parent that is not in the file is no problem: the entry is a root without a
    /// complaint (a Claude Code compaction boundary whose logical parent was not copied).
    pub const SOFT_PARENT: u8 = 64;
    /// Hangs off a fork only because of how the file stores one turn (the dead end of
    /// parallel tool calls in Claude Code): shown, but not a branch.
    pub const PIECE: u8 = 128;
}

impl Entry {
    pub fn is_node(&self) -> bool {
        self.flags & flags::SHADOWED == 0
    }

    /// An entry of line `line` at `offset`, not linked yet.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        offset: u64,
        len: u32,
        line: u32,
        id: IdKey,
        parent_id: IdKey,
        ts: i64,
        kind: KindId,
        flags: u8,
    ) -> Entry {
        Entry {
            offset,
            len,
            line,
            id,
            parent_id,
            ts,
            kind,
            flags,
            file: 0,
            parent: NIL,
            first_child: NIL,
            last_child: NIL,
            next_sibling: NIL,
            child_count: 0,
            depth: 1,
        }
    }
}

/// Another file a session's entries live in, beside the session file (source 0):
/// a Claude Code subagent's transcript, a Codex thread's other pages. The agent adds
/// them while it scans ([`Session::add_source`]); an entry names its source in
/// [`Entry::file`], and [`Session::entry_bytes`] reads its line from there, by the
/// same byte offsets whatever the source's representation.
///
/// A session with no file of its own (rows of a database, named `DB/ID`: see
/// [`AgentTable::member`]) is bytes in memory only: its agent writes each record as a
/// line into [`SourceData::Bytes`] sources and its entries index those. The core
/// needs nothing else to show it, search it or cache what it rendered; what a file
/// of lines never does, a record changing in place, is [`Session::rewrite_entry`].
/// Why bytes and not a new kind of source that reads rows: every reader of an entry
/// (render, `entry.json`, grep's prefilter, the fork and usage code) takes a line of
/// JSON, and a row's `data` is JSON already; one line per record keeps them all
/// agent-neutral, for a cost of about the rows' size for a session in use (and
/// nothing for the sessions only listed).
#[derive(Debug, Clone)]
pub struct Source {
    pub data: SourceData,
    /// Only bytes `[0, limit)` belong to the session (a Codex page whose history is
    /// the first bytes of another page); `None`: the whole file.
    pub limit: Option<u64>,
}

/// Where a [`Source`]'s bytes are.
#[derive(Debug, Clone)]
pub enum SourceData {
    /// A plain file, read with `pread` when a line is needed.
    File(PathBuf),
    /// Bytes held in memory, for the file named.
    Bytes(PathBuf, std::sync::Arc<[u8]>),
    /// Bytes an agent reads for the file named, by offset (a compressed Codex page,
    /// decompressed as far as the bytes asked for: never held whole).
    Reader(PathBuf, std::sync::Arc<dyn ReadRange>),
}

/// How an agent reads a [`SourceData::Reader`]'s bytes.
pub trait ReadRange: std::fmt::Debug + Send + Sync {
    /// The `len` bytes at `offset` of the (decoded) file at `path`.
    fn read_range(&self, path: &Path, offset: u64, len: u32) -> io::Result<Vec<u8>>;
}

impl Source {
    /// The whole plain file at `path`.
    pub fn file(path: impl Into<PathBuf>) -> Source {
        Source {
            data: SourceData::File(path.into()),
            limit: None,
        }
    }

    /// The file (or the file the bytes were read from).
    pub fn path(&self) -> &Path {
        match &self.data {
            SourceData::File(p) | SourceData::Bytes(p, _) | SourceData::Reader(p, _) => p,
        }
    }

    /// The `len` bytes at `offset`, which must lie below the limit. A plain file is
    /// opened inside the agent's folders `homes` ([`input::open_beneath_any`]), each
    /// time.
    ///
    /// [`input::open_beneath_any`]: crate::model::core::input::open_beneath_any
    pub fn read(&self, homes: &[PathBuf], offset: u64, len: u32) -> io::Result<Vec<u8>> {
        let end = offset + len as u64;
        if self.limit.is_some_and(|l| end > l) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: bytes {offset}..{end} lie past the part of the file the session uses",
                    self.path().display()
                ),
            ));
        }
        match &self.data {
            SourceData::File(p) => {
                let mut buf = Vec::new();
                crate::model::core::input::grow(&mut buf, len as usize)?;
                crate::model::core::input::open_beneath_any(homes, p)?
                    .read_exact_at(&mut buf, offset)?;
                Ok(buf)
            }
            SourceData::Reader(p, r) => r.read_range(p, offset, len),
            SourceData::Bytes(p, b) => b
                .get(offset as usize..end as usize)
                .map(<[u8]>::to_vec)
                .ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("{}: bytes {offset}..{end} are not there", p.display()),
                    )
                }),
        }
    }
}

/// What identifies the session, whoever wrote it: its id, time and format version,
/// and the byte range of its header line when it has one (`len` 0 otherwise). The
/// agent fills it in while indexing (Pi from its header line).
#[derive(Debug, Clone)]
pub struct Header {
    pub offset: u64,
    pub len: u32,
    pub line: u32,
    pub session_id: String,
    /// `version`, with Pi's default of 1. Non-numeric versions count as current.
    pub version: u32,
    pub timestamp_ms: i64,
}

/// What a [`Session::refresh`] changed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Change {
    /// The file was replaced or rewritten and indexed from scratch.
    pub reloaded: bool,
    /// Entries added (indices into [`Session::entries`]).
    pub new_entries: std::ops::Range<u32>,
    /// Nodes whose child list changed (`NIL` stands for the root list).
    pub parents: Vec<u32>,
    /// The tree was rebuilt (a duplicate id or an adopted orphan): anything may have moved.
    pub rebuilt: bool,
    pub labels_changed: bool,
    pub name_changed: bool,
    /// Entries whose bytes changed in place, keeping their id, place and parent (a
    /// database row updated as its agent writes it: see [`Session::rewrite_entry`]).
    /// Their content and the contexts below them are stale.
    pub rewritten: Vec<u32>,
}

impl Change {
    pub fn is_empty(&self) -> bool {
        !self.reloaded
            && self.new_entries.is_empty()
            && !self.name_changed
            && self.rewritten.is_empty()
    }
}

const MAX_PROBLEMS: usize = 10_000;
/// A UTF-8 byte order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";
/// Why a line that starts with [`BOM`] is skipped.
const BOM_BEFORE_HEADER: &str = "a session header behind a byte order mark (BOM, the bytes \
     EF BB BF at the start of the file), which JSON does not allow, so Pi cannot read it; \
     remove those three bytes";
const BOM_BEFORE_LINE: &str = "the line starts with a byte order mark (BOM, the bytes \
     EF BB BF), which JSON does not allow";
const FINGERPRINT: u64 = 64;

/// Why a line that does not parse is skipped: JSON.parse takes a byte order mark for a
/// stray character, so say so.
pub fn malformed_reason(raw: &[u8], m: String) -> String {
    match raw.strip_prefix(BOM) {
        Some(rest) if LineHead::parse(rest).is_ok_and(|h| h.is_header()) => {
            BOM_BEFORE_HEADER.to_string()
        }
        Some(_) => BOM_BEFORE_LINE.to_string(),
        None => m,
    }
}

/// The index of one session file. See the module docs.
#[derive(Debug)]
pub struct Session {
    pub(crate) path: PathBuf,
    pub(crate) file: SessionFile,
    pub(crate) dev_ino: (u64, u64),
    pub(crate) header: Header,
    pub(crate) entries: Vec<Entry>,
    pub(crate) ids: IdTable,
    pub(crate) by_id: HashMap<IdKey, u32, IdBuild>,
    pub(crate) kinds: KindTable,
    pub(crate) roots: Vec<u32>,
    /// Parent ids that orphans are waiting for.
    pub(crate) missing_parents: HashSet<IdKey, IdBuild>,
    pub(crate) branch_points: u32,
    pub(crate) leaves: u32,
    /// Bytes of the file indexed so far (always the end of a complete line).
    pub(crate) scanned: u64,
    pub(crate) next_line: u32,
    pub(crate) problems: Vec<Problem>,
    pub(crate) problems_dropped: u64,
    /// Length of an unterminated last line, if any.
    pub(crate) tail: u64,
    pub(crate) generation: u64,
    /// The last bytes indexed, to notice a file rewritten in place.
    pub(crate) fingerprint: Vec<u8>,
    /// A duplicate id was seen since the last link pass: relink everything.
    pub(crate) relink: bool,
    /// The file's agent, and what only that agent needs (see [`super::agent`]).
    pub(crate) agent: Box<dyn Agent>,
    /// The other files entries live in: `sources[n - 1]` is source `n`.
    pub(crate) sources: Vec<Source>,
    /// How the file's agent is chosen, again on a reload.
    pub(crate) table: &'static AgentTable,
    /// How the file is read and its lines parsed (tests change it).
    pub(crate) reading: Reading,
    /// Batches still to parse on one thread, the helper having been short of CPU.
    pub(crate) alone: u32,
    /// Entries rewritten in place since the last refresh ([`Session::rewrite_entry`]).
    pub(crate) rewritten: Vec<u32>,
    /// The agent's folders: every other file of the session is opened inside one of
    /// them ([`Session::open_side`]). The session file's own folder unless the agent
    /// says otherwise ([`Session::set_homes`]).
    pub(crate) homes: Vec<PathBuf>,
    /// What the other files of the session allow, each as it was when last indexed
    /// (see [`Session::access`]), without repeats.
    pub(crate) sources_access: Vec<Access>,
}

/// How [`Session`] reads its file: the size of each read, whose lines are handed on
/// as one batch, and from how many bytes a batch's lines are parsed on two threads
/// (see [`crate::model::core::scan::parse_heads`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reading {
    pub(crate) chunk: usize,
    pub(crate) parallel_from: usize,
    /// The bytes of lines either thread takes at a time.
    pub(crate) run: usize,
    /// Whether a batch whose helper parsed little makes the next ones parsed by one
    /// thread (see `Session::index_batch`).
    pub(crate) back_off: bool,
}

impl Default for Reading {
    fn default() -> Reading {
        Reading {
            // Large enough that starting the helper thread once a batch costs little,
            // small enough to stay in the caches a second time for indexing.
            chunk: 4 << 20,
            parallel_from: crate::model::core::scan::PARALLEL_HEADS_BYTES,
            run: crate::model::core::scan::RUN_BYTES,
            back_off: true,
        }
    }
}

impl Session {
    /// Loads and indexes the session file at `path`, choosing its agent with `detect`
    /// when its first line is no Pi header (`Session::open` passes the agents' table).
    pub fn open_with(
        path: impl AsRef<Path>,
        table: &'static AgentTable,
    ) -> Result<Session, LoadError> {
        Session::open_reading(path, table, Reading::default())
    }

    /// [`Session::open_with`], reading the file as `reading` says.
    pub(crate) fn open_reading(
        path: impl AsRef<Path>,
        table: &'static AgentTable,
        reading: Reading,
    ) -> Result<Session, LoadError> {
        let path = path.as_ref().to_path_buf();
        // A session kept with others in one file (a database) is opened through that
        // file; its agent reads it (see `AgentTable::member`).
        let member = (table.member)(&path);
        let file_path = member.as_ref().map_or(path.as_path(), |m| m.file.as_path());
        let file = match &member {
            // Held by its agent, borrowed: never closed here (see `Member::held`).
            Some(m) => SessionFile::Borrowed(m.held),
            // A device or a FIFO is refused, never read (or waited on).
            None => SessionFile::Own(crate::model::core::input::open_regular(file_path)?),
        };
        // The folder of the file read: for a session kept in a database (`DB/ID`),
        // the database's folder.
        let home = file_path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        let md = file.metadata()?;
        let mut s = Session {
            path,
            file,
            dev_ino: (md.dev(), md.ino()),
            header: Header {
                offset: 0,
                len: 0,
                line: 0,
                session_id: String::new(),
                version: 3,
                timestamp_ms: NO_TIME,
            },
            entries: Vec::new(),
            ids: IdTable::default(),
            by_id: HashMap::default(),
            kinds: KindTable::default(),
            roots: Vec::new(),
            missing_parents: HashSet::default(),
            branch_points: 0,
            leaves: 0,
            scanned: 0,
            next_line: 1,
            problems: Vec::new(),
            problems_dropped: 0,
            tail: 0,
            generation: 0,
            fingerprint: Vec::new(),
            relink: false,
            agent: (table.first)(),
            sources: Vec::new(),
            table,
            reading,
            alone: 0,
            rewritten: Vec::new(),
            homes: Vec::new(),
            sources_access: Vec::new(),
        };
        s.homes = vec![home];
        if let Some(m) = member {
            s.agent = m.agent;
        } else if let Some(a) = (table.opaque)(&s.path) {
            s.agent = a;
        }
        crate::model::core::problem::unless_panic(&s.path.clone(), || s.scan(true))?;
        s.entries.shrink_to_fit();
        Ok(s)
    }

    // ----- accessors -------------------------------------------------------------

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The agent's folders, inside which the session's other files are opened (the
    /// session file's folder, or what the agent set: a Codex home and its pages'
    /// folders).
    pub fn homes(&self) -> &[PathBuf] {
        &self.homes
    }

    /// Says which folders the session's other files lie in (an agent whose files are
    /// spread over a home of its own: Codex's database in its home, its pages in
    /// `sessions/`, which may be a link to another disk). A file is opened inside the
    /// longest of them that holds it; links inside that folder are followed only as
    /// long as they stay in it.
    pub fn set_homes(&mut self, homes: Vec<PathBuf>) {
        if !homes.is_empty() {
            self.homes = homes;
        }
    }

    /// Opens a file the session reads beside its own (a side file: a subagent's
    /// transcript, a spilled tool result, a title file, another page), only inside
    /// the agent's folder, only a regular file, never blocking: see
    /// [`input::open_beneath`](crate::model::core::input::open_beneath). Every agent
    /// opens its side files through this (or [`Session::read_side`]).
    pub fn open_side(&self, path: &Path) -> io::Result<File> {
        crate::model::core::input::open_beneath_any(&self.homes, path)
    }

    /// Reads a side file whole ([`Session::open_side`]), refusing one of more than
    /// `max` bytes.
    pub fn read_side(&self, path: &Path, max: u64) -> io::Result<Vec<u8>> {
        crate::model::core::input::read_bounded(self.open_side(path)?, max).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "{}: {}",
                    path.display(),
                    crate::model::core::input::io_message(&e)
                ),
            )
        })
    }

    /// Who may read the session, as the disk says ([`Access`]): the session file's
    /// owner, group and mode, from `fstat` of the descriptor it was opened on (so a
    /// session file that is a symbolic link gives its target's, and a `chmod` shows at
    /// once), narrowed by the other files whose lines it shows, as they were when last
    /// indexed.
    pub fn access(&self) -> io::Result<Access> {
        let own = Access::of(&self.file.metadata()?);
        Ok(self
            .sources_access
            .iter()
            .fold(own, |a, &other| a.narrowed_by(other)))
    }

    /// [`Session::access`] of the other files alone, read again: each source opened as
    /// it is read, and `fstat`ed. A source that cannot be opened shows nothing, and
    /// counts for nothing.
    fn read_sources_access(&self) -> Vec<Access> {
        let mut out: Vec<Access> = Vec::new();
        for src in &self.sources {
            let Ok(f) = self.open_side(src.path()) else {
                continue;
            };
            let Ok(md) = f.metadata() else { continue };
            let a = Access::of(&md);
            if !out.contains(&a) {
                out.push(a);
            }
        }
        out
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The header line, byte for byte (without its line ending).
    pub fn header_bytes(&self) -> io::Result<Vec<u8>> {
        self.read_range(self.header.offset, self.header.len)
    }

    /// `true` for files older than format v2, whose ids exist only in memory (Pi's).
    pub fn is_v1(&self) -> bool {
        self.agent.is_v1()
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn entry(&self, i: u32) -> &Entry {
        &self.entries[i as usize]
    }

    pub fn ids(&self) -> &IdTable {
        &self.ids
    }

    pub fn kinds(&self) -> &KindTable {
        &self.kinds
    }

    /// The kind (content file) name of entry `i`.
    /// For an answer of the model (an assistant message), the entry whose context is
    /// the request it answered: what the model saw when it wrote it. In a Pi session
    /// the entry's parent; in a Claude Code session the parent of the first line of its
    /// reply (a reply spans several lines). `None` for any other entry, and for an
    /// answer at a root (it answered nothing in this file).
    pub fn request_of(&self, i: u32) -> Option<u32> {
        self.agent.request_of(self, i)
    }

    /// The session this one continues from, and its entry (see [`Agent::forked_from`]).
    pub fn forked_from(&self) -> Option<SessionLink> {
        self.agent.forked_from(self)
    }

    /// The sessions that continue from entry `i` (see [`Agent::forks_at`]).
    pub fn forks_at(&self, i: u32) -> Vec<SessionLink> {
        if i as usize >= self.entries().len() {
            return Vec::new();
        }
        self.agent.forks_at(self, i)
    }

    pub fn kind_name(&self, i: u32) -> &str {
        self.kinds.name(self.entries[i as usize].kind)
    }

    /// The id of entry `i` as a string; entries without an id get `line-N`.
    pub fn id_string(&self, i: u32) -> String {
        let e = &self.entries[i as usize];
        match self.ids.resolve(e.id) {
            Some(s) => s.into_owned(),
            None => format!("line-{}", e.line),
        }
    }

    /// The node with this id (or, for formats that show some entries under another
    /// name, that name: a Claude Code subagent's `agent-<id>`).
    pub fn find(&self, id: &str) -> Option<u32> {
        if let Some(i) = self.ids.get(id).and_then(|k| self.by_id.get(&k)) {
            return Some(*i);
        }
        self.agent.find_alias(id)
    }

    /// Why the mount would refuse write `w` before anything is written, if it would
    /// ([`Agent::refuses`]): the reason, for the log and for `cat fork`.
    pub fn refusal(&self, w: Write) -> Option<String> {
        self.agent.refuses(self, w)
    }

    /// Can a reply be appended under entry `i`? Not under a Claude Code subagent's
    /// line (Claude Code does not resume subagents), nor a line Claude Code does not
    /// load.
    pub fn can_reply_at(&self, i: u32) -> bool {
        self.agent.can_reply_at(self, i)
    }

    /// Why a reply under entry `parent` (`None`: at the root) cannot be written now, known
    /// before anything is written: the errno for `open` and why (see
    /// [`Agent::reply_refusal`]).
    pub fn reply_refusal(&self, parent: Option<u32>) -> Option<(i32, String)> {
        self.agent.reply_refusal(self, parent)
    }

    /// Whether lines of other files are indexed with the session's own (a Claude Code
    /// session's subagents): then entries are not in offset order.
    pub fn has_side_files(&self) -> bool {
        self.agent.has_side_files()
    }

    /// Whether entry `i` is a line of the session file itself (not of a side file).
    pub fn in_main_file(&self, i: u32) -> bool {
        self.entries[i as usize].file == 0
    }

    /// Whether entry `i` is a subagent's (see [`Agent::is_subagent`]): its usage counts
    /// where the subagent was spawned.
    pub fn is_subagent(&self, i: u32) -> bool {
        self.agent.is_subagent(self, i)
    }

    /// The name entry `i` is shown under instead of its id, if any.
    pub fn alias(&self, i: u32) -> Option<&str> {
        self.agent.alias(i)
    }

    /// The entry whose files show the line of source `file` (0: the session file) at
    /// `offset`, when that line is no entry of its own (see [`Agent::line_owner`]).
    pub fn line_owner(&self, file: u16, offset: u64) -> Option<u32> {
        self.agent.line_owner(file, offset)
    }

    /// The node with this id key.
    pub fn find_key(&self, k: IdKey) -> Option<u32> {
        self.by_id.get(&k).copied()
    }

    /// Root nodes, in file order (Pi's `getTree`).
    pub fn roots(&self) -> &[u32] {
        &self.roots
    }

    /// Children of a node in Pi's order (timestamp, then file order).
    pub fn children(&self, i: u32) -> Children<'_> {
        Children {
            s: self,
            next: self.entries[i as usize].first_child,
        }
    }

    pub fn parent(&self, i: u32) -> Option<u32> {
        let p = self.entries[i as usize].parent;
        (p != NIL).then_some(p)
    }

    /// Where the agent resumes, and a new message attaches: for Pi the last entry in
    /// file order; for Claude Code the chain end (its leaf rule, CLAUDE-FORMAT.md §6).
    pub fn leaf(&self) -> Option<u32> {
        self.agent.leaf(self)
    }

    /// The file's format.
    pub fn format(&self) -> Format {
        self.agent.format()
    }

    /// The file's agent (see [`super::agent`]).
    pub fn agent(&self) -> &dyn Agent {
        &*self.agent
    }

    /// Runs `f` with the file's agent taken out of the session, so that an agent's
    /// hook can change both its own state and the index.
    pub(crate) fn with_agent<R>(&mut self, f: impl FnOnce(&mut dyn Agent, &mut Session) -> R) -> R {
        let mut a = std::mem::replace(&mut self.agent, Box::new(Lent));
        let r = f(&mut *a, self);
        self.agent = a;
        r
    }

    /// Nodes without children, in pre-order: the tips of branches (the dead ends a
    /// turn leaves in the file, [`flags::PIECE`], are not tips).
    pub fn leaves(&self) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.leaves as usize);
        self.walk_preorder(|i, _| {
            if self.is_tip(i) {
                out.push(i);
            }
        });
        out
    }

    /// Whether node `i` is the tip of a branch, as [`Session::leaves`] lists them.
    pub fn is_tip(&self, i: u32) -> bool {
        let e = &self.entries[i as usize];
        e.child_count == 0 && e.flags & flags::PIECE == 0
    }

    /// Whether node `i` is a piece of a turn rather than a way of its own (a dead end
    /// parallel tool calls leave, a Claude Code subagent's line): the branches it
    /// belongs to are those of its nearest ancestor that is not a piece.
    /// Whether entry `i` is drawn in `tree` on one line with a chain of such entries
    /// it starts or continues: a Claude Code attachment.
    pub fn joins_tree_runs(&self, i: u32) -> bool {
        self.agent.joins_tree_runs(i)
    }

    /// What a run of entries [`Session::joins_tree_runs`] joins is called in `tree`.
    pub fn tree_run_noun(&self) -> &'static str {
        self.agent.tree_run_noun()
    }

    pub fn is_piece(&self, i: u32) -> bool {
        self.entries[i as usize].flags & flags::PIECE != 0
    }

    pub fn leaf_count(&self) -> u32 {
        self.leaves
    }

    pub fn branch_point_count(&self) -> u32 {
        self.branch_points
    }

    pub fn node_count(&self) -> usize {
        self.by_id.len()
            + self
                .entries
                .iter()
                .filter(|e| e.flags & flags::NO_ID != 0)
                .count()
    }

    /// Live labels: `(label, target node)`, sorted by label. Dangling targets are left out.
    pub fn labels(&self) -> Vec<(&str, u32)> {
        self.agent.labels(self)
    }

    /// The label on a node, if any.
    pub fn label_of(&self, i: u32) -> Option<&str> {
        self.agent.label_of(self, i)
    }

    /// The live label `name`: `(target node, label entry)`. Pi allows one label per
    /// entry but the same label on several entries; then the one set last is meant.
    pub fn label_entry(&self, name: &str) -> Option<(u32, u32)> {
        self.agent.label_entry(self, name)
    }

    /// The `context_edit` entries that target node `i`, in file order (those that are
    /// nodes themselves).
    pub fn edits_of(&self, i: u32) -> Vec<u32> {
        self.agent.edits_of(self, i)
    }

    /// The edit that stands for node `i`'s edits: of those on the path to the leaf
    /// (where Pi resumes), the last one, which is the one Pi applies there when its
    /// compaction keeps it; otherwise the latest one in the file.
    pub fn edited_by(&self, i: u32) -> Option<u32> {
        let edits = self.edits_of(i);
        let latest = *edits.last()?;
        let leaf = self.leaf()?;
        let on_leaf_path = |x: u32| {
            let d = self.entries[x as usize].depth;
            let mut cur = leaf;
            while cur != NIL && self.entries[cur as usize].depth > d {
                cur = self.entries[cur as usize].parent;
            }
            cur == x
        };
        Some(
            edits
                .iter()
                .copied()
                .filter(|&x| on_leaf_path(x))
                .max_by_key(|&x| self.entries[x as usize].depth)
                .unwrap_or(latest),
        )
    }

    /// Every edited node with the edit [`Session::edited_by`] names, by node.
    pub fn edited_entries(&self) -> Vec<(u32, u32)> {
        let mut v: Vec<(u32, u32)> = self
            .agent
            .edited_targets(self)
            .into_iter()
            .filter_map(|t| self.edited_by(t).map(|e| (t, e)))
            .collect();
        v.sort_unstable();
        v
    }

    /// The session name: for Pi the latest `session_info` (an empty name clears it);
    /// for Claude Code its title rule (CLAUDE-FORMAT.md §7).
    pub fn name(&self) -> Option<&str> {
        self.agent.name(self)
    }

    /// The `session_info` entry behind [`Session::name`] (Pi's).
    pub fn name_entry(&self) -> Option<u32> {
        self.agent.name_entry()
    }

    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    pub fn problems_dropped(&self) -> u64 {
        self.problems_dropped
    }

    /// Bytes indexed (the end of the last complete line).
    pub fn scanned_bytes(&self) -> u64 {
        self.scanned
    }

    /// Length of an unterminated last line (0 when the file ends in `\n`).
    pub fn tail_bytes(&self) -> u64 {
        self.tail
    }

    /// Bumped on every reload; indices from an older generation are meaningless.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Root-first path to `i` (inclusive). Always terminates: the tree has no cycles.
    pub fn path_to(&self, i: u32) -> Vec<u32> {
        let mut v = Vec::new();
        let mut cur = i;
        while cur != NIL {
            v.push(cur);
            cur = self.entries[cur as usize].parent;
        }
        v.reverse();
        v
    }

    /// Number of entries on the path from the root to `i`, inclusive.
    pub fn depth(&self, i: u32) -> usize {
        self.entries[i as usize].depth as usize
    }

    /// Visits every node in pre-order (roots in file order, children in Pi's order),
    /// with the node's depth (0 for roots). Iterative: any depth is fine.
    pub fn walk_preorder(&self, mut f: impl FnMut(u32, usize)) {
        let mut stack: Vec<(u32, usize)> = self.roots.iter().rev().map(|&r| (r, 0)).collect();
        let mut kids = Vec::new();
        while let Some((n, d)) = stack.pop() {
            f(n, d);
            kids.clear();
            kids.extend(self.children(n));
            for &c in kids.iter().rev() {
                stack.push((c, d + 1));
            }
        }
    }

    /// Approximate heap bytes held by the index.
    pub fn heap_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<Entry>()
            + self.by_id.capacity() * (std::mem::size_of::<(IdKey, u32)>() + 1)
            + self.ids.heap_bytes()
            + self.roots.capacity() * 4
            + self.problems.capacity() * std::mem::size_of::<Problem>()
            + self.agent.heap_bytes()
    }

    // ----- content -----------------------------------------------------------------

    /// The raw bytes of entry `i`'s line (without `\n`; a trailing `\r` is kept).
    pub fn entry_bytes(&self, i: u32) -> io::Result<Vec<u8>> {
        let e = &self.entries[i as usize];
        if e.file != 0 {
            return self.sources[e.file as usize - 1].read(&self.homes, e.offset, e.len);
        }
        self.read_range(e.offset, e.len)
    }

    /// Calls `f(i, bytes)` for each entry of `order`, in that order, with the bytes
    /// [`Session::entry_bytes`] would return; an entry whose bytes cannot be read is
    /// left out, as a failed `entry_bytes` would be. For a pass over the whole session
    /// (the usage table): a run of entries that lie one after the other in one file is
    /// read in one block of up to [`Session::BLOCK`] bytes, not one `pread` per entry,
    /// which at 100k entries cost more than everything done with the bytes.
    pub fn for_each_entry_bytes(&self, order: &[u32], mut f: impl FnMut(u32, &[u8])) {
        // One buffer for every block: a fresh one each time costs its page faults.
        let mut buf = Vec::new();
        let mut k = 0;
        while k < order.len() {
            let first = &self.entries[order[k] as usize];
            let start = first.offset;
            let mut end = start + first.len as u64;
            let mut run = k + 1;
            while let Some(&j) = order.get(run) {
                let e = &self.entries[j as usize];
                let e_end = e.offset + e.len as u64;
                // Forward, close (header lines and skipped entries between are read
                // too), in the same file, and the block stays small.
                if e.file != first.file
                    || e.offset < end
                    || e.offset - end > Self::GAP
                    || e_end - start > Self::BLOCK
                {
                    break;
                }
                end = e_end;
                run += 1;
            }
            match self.read_block(first.file, start, (end - start) as u32, &mut buf) {
                Ok(block) => {
                    for &j in &order[k..run] {
                        let e = &self.entries[j as usize];
                        let at = (e.offset - start) as usize;
                        f(j, &block[at..at + e.len as usize]);
                    }
                }
                // One of them could not be read (the file shrank): each on its own.
                Err(_) => {
                    for &j in &order[k..run] {
                        if let Ok(b) = self.entry_bytes(j) {
                            f(j, &b);
                        }
                    }
                }
            }
            k = run;
        }
    }

    /// The most bytes [`Session::for_each_entry_bytes`] reads at once (a longer line
    /// is read alone): small enough to stay in cache while its lines are parsed.
    const BLOCK: u64 = 1 << 20;
    /// The most bytes of no wanted entry it reads rather than start another block.
    const GAP: u64 = 64 << 10;

    /// `len` bytes at `offset` of file `file` (0: the session file, into `buf`; else
    /// a source, read as it reads).
    fn read_block<'b>(
        &self,
        file: u16,
        offset: u64,
        len: u32,
        buf: &'b mut Vec<u8>,
    ) -> io::Result<std::borrow::Cow<'b, [u8]>> {
        if file != 0 {
            return self.sources[file as usize - 1]
                .read(&self.homes, offset, len)
                .map(std::borrow::Cow::Owned);
        }
        if buf.len() < len as usize {
            buf.resize(len as usize, 0);
        }
        let b = &mut buf[..len as usize];
        self.file.read_exact_at(b, offset)?;
        Ok(std::borrow::Cow::Borrowed(b))
    }

    /// Adds a source (another file of the session, see [`Source`]): its number, for
    /// [`Entry::file`] of the entries the agent then pushes from it.
    pub fn add_source(&mut self, src: Source) -> Result<u16, LoadError> {
        if self.sources.len() >= u16::MAX as usize {
            return Err(LoadError::Io(io::Error::other(format!(
                "{}: more than {} files in one session",
                self.path.display(),
                u16::MAX
            ))));
        }
        self.sources.push(src);
        Ok(self.sources.len() as u16)
    }

    /// Moves entry `i`'s bytes to `len` bytes at `offset` of source `file`, the same
    /// record as before in another place (sources repacked): nothing the view shows
    /// changes.
    pub fn move_entry(&mut self, i: u32, file: u16, offset: u64, len: u32) {
        let e = &mut self.entries[i as usize];
        (e.file, e.offset, e.len) = (file, offset, len);
    }

    /// Entry `i` was rewritten in place by its agent (a database row updated): its
    /// bytes are now `len` bytes at `offset` of source `file`, its kind `kind`; its id,
    /// parent and place in the tree stay. The next [`Change`] lists it in
    /// [`Change::rewritten`], so that what was shown of it, and the contexts below
    /// it, are read again.
    pub fn rewrite_entry(&mut self, i: u32, file: u16, offset: u64, len: u32, kind: KindId) {
        self.move_entry(i, file, offset, len);
        self.entries[i as usize].kind = kind;
        self.rewritten.push(i);
    }

    /// Source `n` (from 1; 0 is the session file itself).
    pub fn source(&self, n: u16) -> Option<&Source> {
        n.checked_sub(1).and_then(|k| self.sources.get(k as usize))
    }

    /// Replaces source `n` by the same bytes in another representation (a `.zst`
    /// page by its plain `.jsonl`), or by a longer limit: the entries' offsets stay
    /// valid. Returns the old source.
    pub fn replace_source(&mut self, n: u16, src: Source) -> Option<Source> {
        let k = n.checked_sub(1)? as usize;
        let slot = self.sources.get_mut(k)?;
        Some(std::mem::replace(slot, src))
    }

    /// Fills `buf` from the file at `offset` (lines lie where [`Entry::offset`] says).
    pub fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }

    fn read_range(&self, offset: u64, len: u32) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; len as usize];
        self.file.read_exact_at(&mut buf, offset)?;
        Ok(buf)
    }

    /// Entry `i` parsed and migrated to the current format, as Pi holds it in memory.
    pub fn entry_value(&self, i: u32) -> io::Result<serde_json::Value> {
        let bytes = self.entry_bytes(i)?;
        let mut v = crate::model::core::js::parse_line(&bytes).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("line {}: {e}", self.entries[i as usize].line),
            )
        })?;
        self.agent.migrate(self, i, &mut v);
        Ok(v)
    }

    // ----- what the view shows, by format ---------------------------------------------------

    /// `session.json`: the header line for Pi; for Claude Code, whose files have no
    /// header, a small object made from the file ([`crate::model::claude::session_json`]).
    pub fn session_json(&self) -> io::Result<Vec<u8>> {
        self.agent.session_json(self)
    }

    /// Does an entry's context stay what it is once computed? For Pi, yes: it follows
    /// from the entry's path alone. For Claude Code, no: the chain end gets the resume
    /// context, and a parallel tool result written later joins the contexts of its turn.
    pub fn contexts_settled(&self) -> bool {
        self.agent.contexts_settled()
    }

    /// The size of [`Session::session_json`], without reading the header line.
    pub fn session_json_len(&self) -> u64 {
        self.agent.session_json_len(self)
    }

    /// The KIND file's text and the decoded images of entry `i`. An entry nested too
    /// deep to build is an `InvalidData` error.
    pub fn render(&self, i: u32) -> io::Result<(String, Vec<Image>)> {
        let v = self.entry_value(i)?;
        Ok(self.agent.render(self, i, &v))
    }

    /// The file holding the full output of entry `i`, when its format keeps it apart
    /// (a Claude Code tool result spilled to `<session>/tool-results/`).
    pub fn full_output(&self, i: u32) -> Option<PathBuf> {
        self.agent.full_output(self, i)
    }

    /// The one-line preview of entry `i` in `tree`.
    pub fn preview(&self, i: u32) -> io::Result<String> {
        let v = self.entry_value(i)?;
        Ok(self.agent.preview(self, i, &v))
    }

    /// The messages of the context at entry `i`: what `context.json` holds
    /// ([`crate::model::pi::render::context_json`]) and [`Session::context_renderer`] reads.
    pub fn context_messages(&self, i: u32) -> io::Result<Vec<serde_json::Value>> {
        self.agent.context_messages(self, i)
    }

    /// How this format's contexts read as text (`context`).
    pub fn context_renderer(&self) -> fn(&[serde_json::Value]) -> String {
        self.agent.context_renderer()
    }

    /// What the readable `context` of entry `i` shows before its messages (Codex's
    /// base instructions; nothing for Pi and Claude Code).
    pub fn context_preamble(&self, i: u32) -> Option<String> {
        self.agent.context_preamble(self, i)
    }

    /// When the session was last active, by the agent's own clock: the newest time
    /// its files' last lines hold (see [`super::activity`]), and the file that holds it;
    /// a file without one counts with its modification time.
    pub fn last_activity(&self) -> Option<(i64, PathBuf)> {
        let agent = &*self.agent;
        activity_of(&agent.activity_files(self), &|t| agent.activity_in_tail(t))
    }

    /// What answer `i`'s request held after the context of its [`Session::request_of`]
    /// entry (see [`Agent::request_tail`]); empty for an ordinary answer, whose
    /// `request` is that entry's context.
    pub fn request_tail(&self, i: u32) -> Vec<serde_json::Value> {
        self.agent.request_tail(self, i)
    }

    /// Whether labels can be set through the mount ([`Agent::labels_writable`]).
    pub fn labels_writable(&self) -> bool {
        self.agent.labels_writable()
    }

    /// Whether the session writes in a folder beside its file
    /// ([`Agent::writes_side_folder`]).
    pub fn writes_side_folder(&self) -> bool {
        self.agent.writes_side_folder()
    }

    /// The file entry `i`'s line is in: the session file, or another file of the
    /// session ([`Agent::entry_file`]). `None` for a line held in memory.
    pub fn entry_file(&self, i: u32) -> Option<PathBuf> {
        if self.entries[i as usize].file == 0 {
            return Some(self.path.clone());
        }
        self.agent.entry_file(self, i)
    }

    /// The context at entry `i`, as text (`context`) and as messages (`context.json`).
    pub fn context_files(&self, i: u32) -> io::Result<(String, String)> {
        let messages = self.context_messages(i)?;
        let mut text = self.context_preamble(i).unwrap_or_default();
        text.push_str(&self.context_renderer()(&messages));
        Ok((text, crate::model::core::text::context_json(&messages)))
    }

    /// The folders to watch for changes of this session: the session file's folder,
    /// and for a session over several files (a Codex thread's pages in several day
    /// folders) theirs too.
    pub fn watched_dirs(&self) -> Vec<PathBuf> {
        self.agent.watched_dirs(self)
    }

    /// Writes a reply with the agent's own writer, when it has one (see
    /// [`Agent::write_reply`]); `None`: append [`Agent::build_line`]'s line to the
    /// session file. Returns the new entry's id; the caller refreshes the index.
    pub fn write_reply(
        &self,
        parent: Option<&str>,
        text: &str,
    ) -> Option<Result<String, crate::model::core::reply::AppendError>> {
        self.agent.write_reply(self, parent, text)
    }

    /// Why a reply under entry `i` cannot be written now (see
    /// [`Agent::refuse_reply_at`]).
    pub fn refuse_reply_at(&self, i: Option<u32>) -> Option<AppendError> {
        self.agent.refuse_reply_at(self, i)
    }

    /// Forks at entry `i` with the agent's own writer, when it has one (see
    /// [`Agent::write_fork`]).
    pub fn write_fork(&self, i: u32) -> Option<Result<PathBuf, ForkError>> {
        self.agent.write_fork(self, i)
    }

    // ----- loading -------------------------------------------------------------------

    /// Catches up with the file: indexes lines appended since the last call, or reloads
    /// the file if it was replaced, truncated or rewritten. A missing file is an error
    /// and leaves the index as it was.
    pub fn refresh(&mut self) -> Result<Change, LoadError> {
        if self.needs_reload()? {
            let fresh = Session::open_reading(&self.path, self.table, self.reading)?;
            return Ok(self.replace_with(fresh));
        }
        // A file of no lines is its agent's to follow (it may even be gone, made
        // plain by the program that wrote it): the agent says what moved.
        let main_same = self.agent.opaque_main_file()
            || std::fs::metadata(&self.path)?.len() == self.scanned + self.tail;
        if main_same && self.agent.sources_moved(self) == SourcesMoved::No {
            return Ok(Change::default());
        }
        let before = self.entries.len() as u32;
        let name_before = self.name_entry();
        let labels_before = self.agent.labels_mark();
        let path = self.path.clone();
        let scanned = crate::model::core::problem::unless_panic(&path, || self.scan(false));
        let (rebuilt, parents) = match scanned {
            Ok(r) => r,
            // What the scan had built is not to be trusted: index the file again.
            Err(e) if e.is_panic() => {
                let fresh = Session::open_reading(&self.path, self.table, self.reading)?;
                return Ok(self.replace_with(fresh));
            }
            Err(e) => return Err(e),
        };
        let after = self.entries.len() as u32;
        // Claude Code's metadata lines (titles, `last-prompt`) are no entries, yet move
        // the name and the leaf.
        let meta_moved = self.agent.meta_moves();
        Ok(Change {
            reloaded: false,
            new_entries: before..after,
            parents,
            rebuilt,
            labels_changed: self.agent.labels_mark() != labels_before
                || (before..after)
                    .any(|i| self.kinds.entry_type(self.entries[i as usize].kind) == "label"),
            name_changed: meta_moved || self.name_entry() != name_before,
            rewritten: std::mem::take(&mut self.rewritten),
        })
    }

    /// Whether the file was replaced, truncated or rewritten since it was indexed, so
    /// that [`refresh`](Self::refresh) would index it again from scratch. A caller that
    /// must not hold up readers of this index meanwhile can index the file itself
    /// ([`Session::open`]) and hand the result to [`replace_with`](Self::replace_with).
    pub fn needs_reload(&self) -> Result<bool, LoadError> {
        if self.agent.opaque_main_file() {
            return Ok(self.agent.sources_moved(self) == SourcesMoved::Rewritten);
        }
        let md = std::fs::metadata(&self.path)?;
        let replaced = (md.dev(), md.ino()) != self.dev_ino;
        let shrunk = !replaced && md.len() < self.scanned + self.tail;
        // A subagent transcript replaced or cut starts the index again, as the file does.
        Ok(replaced
            || shrunk
            || !self.fingerprint_matches()?
            || self.agent.sources_moved(self) == SourcesMoved::Rewritten)
    }

    /// Takes `fresh`, a new index of the same file, in place of this one: a reload.
    pub fn replace_with(&mut self, fresh: Session) -> Change {
        let generation = self.generation + 1;
        *self = fresh;
        self.generation = generation;
        Change {
            reloaded: true,
            new_entries: 0..self.entries.len() as u32,
            rebuilt: true,
            labels_changed: true,
            name_changed: true,
            parents: Vec::new(),
            rewritten: Vec::new(),
        }
    }

    /// Are the header and the bytes just before `scanned` still what they were?
    /// (Pi's rewrites of a legacy file change the header; an append changes neither.)
    fn fingerprint_matches(&self) -> io::Result<bool> {
        match self.read_fingerprint() {
            Ok(f) => Ok(f == self.fingerprint),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn read_fingerprint(&self) -> io::Result<Vec<u8>> {
        let head = (self.header.len as u64).min(FINGERPRINT);
        let tail = self.scanned.min(FINGERPRINT);
        let mut buf = vec![0u8; (head + tail) as usize];
        self.file
            .read_exact_at(&mut buf[..head as usize], self.header.offset)?;
        self.file
            .read_exact_at(&mut buf[head as usize..], self.scanned - tail)?;
        Ok(buf)
    }

    fn take_fingerprint(&mut self) -> io::Result<()> {
        self.fingerprint = self.read_fingerprint()?;
        Ok(())
    }

    /// The file is not a session: `reason`, found at `line`, unless a line skipped
    /// before it explains more (a header behind a byte order mark), or no line of the
    /// file was JSON at all (`json` false: then the first line that is not).
    fn refused(&self, line: u32, reason: String, json: bool) -> LoadError {
        let skipped = self.problems.iter().find_map(|p| match &p.what {
            ProblemKind::Malformed(m) if p.line < line || !json => Some((p.line, m)),
            _ => None,
        });
        match skipped {
            Some((l, m)) if m == BOM_BEFORE_HEADER || m == BOM_BEFORE_LINE => {
                LoadError::NotASession {
                    line: l,
                    reason: m.clone(),
                }
            }
            Some((l, _)) if !json => LoadError::NotASession {
                line: l,
                reason: "not JSON, and no line of the file is a session header".into(),
            },
            _ => LoadError::NotASession { line, reason },
        }
    }

    pub(crate) fn note(&mut self, line: u32, severity: Severity, what: ProblemKind) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(Problem {
                line,
                severity,
                what,
            });
        } else {
            self.problems_dropped += 1;
        }
    }

    /// Reads from `scanned` to the end of the file and indexes every complete line.
    /// Returns whether the tree was rebuilt and which parents gained children.
    fn scan(&mut self, initial: bool) -> Result<(bool, Vec<u32>), LoadError> {
        self.problems.retain(|p| {
            !matches!(
                p.what,
                ProblemKind::UnterminatedLastLine { .. }
                    | ProblemKind::TooLong { ended: false, .. }
            )
        });
        let first_new = self.entries.len();
        let opaque = self.agent.opaque_main_file();
        let mut header_found = !initial || opaque;
        let file = self.file.try_clone()?;
        let max = crate::model::core::input::max_line();
        // An unterminated line too long to hold, met last time, is not read again.
        let long_tail = (self.tail > max as u64).then_some(self.tail);
        let tail = if opaque {
            // Its agent reads it (after_scan): its bytes are no lines.
            crate::model::core::input::Tail {
                offset: 0,
                len: 0,
                bytes: Some(Vec::new()),
            }
        } else {
            crate::model::core::input::read_line_batches(
                &file,
                self.scanned,
                long_tail,
                max,
                self.reading.chunk,
                |lines| self.index_batch(lines, &mut header_found, max),
            )?
        };
        self.scanned = tail.offset;
        self.tail = tail.len;
        self.take_fingerprint()?;
        if initial && !header_found {
            if self.tail == 0 && self.next_line == 1 {
                return Err(LoadError::Empty);
            }
            let too_long = |what: &str| {
                format!(
                    "{what} of {} (longer than the {} a line may hold), and no header",
                    crate::model::core::input::human_bytes(self.tail),
                    crate::model::core::input::human_bytes(max as u64)
                )
            };
            let (line, reason) = if tail.bytes.is_none() && self.next_line == 1 {
                (1, too_long("the file holds one unterminated line"))
            } else if tail.bytes.is_none() {
                (self.next_line, too_long("an unterminated last line"))
            } else if self.tail > 0 && self.next_line == 1 {
                (
                    1,
                    "the file holds one unterminated line and no header".into(),
                )
            } else if self.tail > 0 {
                (
                    self.next_line,
                    "an unterminated last line, and no header before it".into(),
                )
            } else {
                (1, "every line is blank".into())
            };
            // Any line that parsed would have been judged a header or not already.
            return Err(self.refused(line, reason, false));
        }
        match &tail.bytes {
            _ if self.tail == 0 => {}
            Some(b) => {
                let parses = LineHead::parse(b).is_ok();
                let line = self.next_line;
                self.note(
                    line,
                    Severity::Warning,
                    ProblemKind::UnterminatedLastLine {
                        bytes: self.tail,
                        parses,
                        at: self.scanned,
                    },
                );
            }
            None => {
                let line = self.next_line;
                self.note(
                    line,
                    Severity::Warning,
                    ProblemKind::TooLong {
                        bytes: self.tail,
                        limit: max as u64,
                        ended: false,
                    },
                );
            }
        }
        self.with_agent(|a, s| a.after_scan(s))?;
        if !self.sources.is_empty() {
            self.sources_access = self.read_sources_access();
        }
        // Link the new entries into the tree.
        let new = first_new as u32..self.entries.len() as u32;
        if initial {
            self.relink = false;
            self.rebuild_tree();
            self.with_agent(|a, s| a.after_link(s));
            return Ok((true, Vec::new()));
        }
        // Linking one entry at a time is right only when every new entry's parent is
        // already linked: no new entry adopts an old orphan, and none names a parent
        // further down in this batch (which could even close a cycle). Otherwise
        // relink everything.
        let in_order = new.clone().all(|i| {
            let e = &self.entries[i as usize];
            let adopts = !e.id.is_none() && self.missing_parents.contains(&e.id);
            let forward = self.by_id.get(&e.parent_id).is_some_and(|&p| p >= i);
            !adopts && !forward
        });
        if self.relink || !in_order {
            self.relink = false;
            self.rebuild_tree();
            self.with_agent(|a, s| a.after_link(s));
            return Ok((true, Vec::new()));
        }
        let mut parents = Vec::new();
        for i in new {
            let p = self.attach(i);
            parents.push(p);
        }
        parents.sort_unstable();
        parents.dedup();
        self.with_agent(|a, s| a.after_link(s));
        Ok((false, parents))
    }

    /// Indexes a batch of complete lines. Once the file's agent is known and it reads
    /// lines by their [`LineHead`] alone ([`Agent::indexes_heads`]), the batch's heads
    /// are parsed first, on two threads when it is large
    /// ([`crate::model::core::scan::parse_heads`]), and handed to the agent in file
    /// order: the index is the one a line-by-line pass builds.
    fn index_batch(
        &mut self,
        lines: &[Line<'_>],
        header_found: &mut bool,
        max: usize,
    ) -> Result<(), LoadError> {
        let mut i = 0;
        while i < lines.len() && !(*header_found && self.agent.indexes_heads()) {
            self.index_one(&lines[i], header_found, max)?;
            i += 1;
        }
        let rest = &lines[i..];
        if rest.is_empty() {
            return Ok(());
        }
        let r = self.reading;
        let parallel_from = if self.alone > 0 {
            self.alone -= 1;
            usize::MAX
        } else {
            r.parallel_from
        };
        let shared =
            crate::model::core::scan::each_head(rest, parallel_from, r.run, |line, head| {
                match (*line, head) {
                    (Line::Whole { bytes, offset }, Some(head)) => {
                        let line_no = self.start_line(bytes);
                        self.with_agent(|a, s| a.index_head(s, bytes, head, offset, line_no));
                    }
                    (Line::Whole { bytes, offset }, None) => {
                        // each_head parses every whole line; this arm only keeps the
                        // match whole.
                        let line_no = self.start_line(bytes);
                        self.with_agent(|a, s| a.index_line(s, bytes, offset, line_no));
                    }
                    (Line::TooLong { len, .. }, _) => self.note_too_long(len, max),
                }
            });
        // A helper that parsed under a quarter of the runs had little CPU to spare (a
        // busy machine): then stopping it at the end of each batch (it must be given
        // a CPU to see that it should stop) costs more than it parses, and two threads
        // take more CPU than one. The next batches are parsed on this thread alone.
        if r.back_off && shared.runs >= 4 && shared.helped * 4 < shared.runs {
            self.alone = 8;
        }
        Ok(())
    }

    fn index_one(
        &mut self,
        line: &Line<'_>,
        header_found: &mut bool,
        max: usize,
    ) -> Result<(), LoadError> {
        match *line {
            Line::Whole { bytes, offset } => self.index_line(bytes, offset, header_found),
            Line::TooLong { len, .. } => {
                self.note_too_long(len, max);
                Ok(())
            }
        }
    }

    /// A complete line of `len` bytes, longer than `max`: passed over.
    fn note_too_long(&mut self, len: u64, max: usize) {
        let line = self.next_line;
        self.next_line += 1;
        self.note(
            line,
            Severity::Warning,
            ProblemKind::TooLong {
                bytes: len,
                limit: max as u64,
                ended: true,
            },
        );
    }

    /// Numbers the next line and notes a CRLF line ending near the top.
    fn start_line(&mut self, raw: &[u8]) -> u32 {
        let line_no = self.next_line;
        self.next_line += 1;
        if raw.last() == Some(&b'\r') && line_no <= 2 {
            self.note(line_no, Severity::Note, ProblemKind::Crlf);
        }
        line_no
    }

    fn index_line(
        &mut self,
        raw: &[u8],
        off: u64,
        header_found: &mut bool,
    ) -> Result<(), LoadError> {
        let line_no = self.start_line(raw);
        if *header_found {
            self.with_agent(|a, s| a.index_line(s, raw, off, line_no));
            return Ok(());
        }
        // The first line that parses says whose file this is.
        let head = match LineHead::parse(raw) {
            Ok(h) => h,
            Err(LineError::Blank) => {
                self.note(line_no, Severity::Note, ProblemKind::Blank);
                return Ok(());
            }
            Err(LineError::Malformed(m)) => {
                let m = malformed_reason(raw, m);
                self.note(line_no, Severity::Warning, ProblemKind::Malformed(m));
                return Ok(());
            }
            Err(LineError::NotAnObject) => {
                return Err(self.refused(
                    line_no,
                    "the first JSON line is not an object".into(),
                    true,
                ));
            }
        };
        if !self.agent.accepts_first_line(raw) {
            match (self.table.detect)(raw) {
                Some(agent) => self.agent = agent,
                None => {
                    let reason = match head.ty.as_str() {
                        Some("session") => "the header has no string \"id\"".to_string(),
                        Some(t) => format!("the first JSON line has type {t:?}, not \"session\""),
                        None => "the first JSON line has no \"type\"".to_string(),
                    };
                    return Err(self.refused(line_no, reason, true));
                }
            }
        }
        *header_found = true;
        self.with_agent(|a, s| {
            a.begin(s);
            a.index_line(s, raw, off, line_no);
        });
        Ok(())
    }

    /// Makes `idx` the node with `id`; an earlier entry with the same id leaves the tree.
    #[inline(always)]
    pub(crate) fn register_id(&mut self, id: IdKey, idx: u32, line_no: u32) {
        if id.is_none() {
            return;
        }
        if let Some(&prev) = self.by_id.get(&id) {
            let first_line = self.entries[prev as usize].line;
            self.entries[prev as usize].flags |= flags::SHADOWED;
            self.relink = true;
            let id_s = self.ids.resolve(id).unwrap_or_default().into_owned();
            self.note(
                line_no,
                Severity::Warning,
                ProblemKind::DuplicateId {
                    id: id_s,
                    first_line,
                },
            );
        }
        self.by_id.insert(id, idx);
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn push_entry(
        &mut self,
        offset: u64,
        len: u32,
        line: u32,
        id: IdKey,
        parent_id: IdKey,
        ts: i64,
        kind: KindId,
        flags: u8,
    ) {
        self.entries.push(Entry::new(
            offset, len, line, id, parent_id, ts, kind, flags,
        ));
    }

    /// The node an entry's `parentId` resolves to, and why it is a root otherwise.
    fn resolve_parent(&self, i: u32) -> (u32, u8) {
        let e = &self.entries[i as usize];
        if e.parent_id.is_none() {
            return (NIL, 0);
        }
        if e.parent_id == e.id {
            return (NIL, flags::SELF_PARENT);
        }
        match self.by_id.get(&e.parent_id) {
            Some(&p) => (p, 0),
            None if e.flags & flags::SOFT_PARENT != 0 => (NIL, 0),
            // A message a compaction keeps, whose parent Claude Code's in-place rewrite
            // (2.1.332) dropped with everything else before the boundary: a root by
            // design, not damage.
            None if self.agent.root_is_fine(e.id) => (NIL, 0),
            None => (NIL, flags::ORPHAN),
        }
    }

    /// Rebuilds every tree link from the entries (after load, or a duplicate id).
    fn rebuild_tree(&mut self) {
        const ROOT_REASONS: u8 = flags::ORPHAN | flags::SELF_PARENT | flags::CYCLE;
        self.roots.clear();
        self.missing_parents.clear();
        let n = self.entries.len();
        for i in 0..n {
            let (p, why) = if self.entries[i].is_node() {
                self.resolve_parent(i as u32)
            } else {
                (NIL, 0)
            };
            let e = &mut self.entries[i];
            e.flags &= !ROOT_REASONS;
            e.flags |= why;
            e.parent = p;
            e.first_child = NIL;
            e.last_child = NIL;
            e.next_sibling = NIL;
            e.child_count = 0;
        }
        self.break_cycles();
        // Children sorted by (timestamp, file order): one sort, then link.
        let mut kids: Vec<(u32, i64, u32)> = Vec::with_capacity(n);
        for i in 0..n {
            let e = &self.entries[i];
            if !e.is_node() {
                continue;
            }
            if e.parent == NIL {
                self.roots.push(i as u32);
                if e.flags & flags::ORPHAN != 0 {
                    self.missing_parents.insert(e.parent_id);
                }
            } else {
                kids.push((e.parent, e.ts, i as u32));
            }
        }
        kids.sort_unstable();
        for &(p, _, c) in &kids {
            let pe = &mut self.entries[p as usize];
            let last = pe.last_child;
            pe.last_child = c;
            pe.child_count += 1;
            if last == NIL {
                pe.first_child = c;
            } else {
                self.entries[last as usize].next_sibling = c;
            }
        }
        self.recount();
        self.compute_depths();
        self.report_tree_problems();
    }

    fn compute_depths(&mut self) {
        let mut stack: Vec<(u32, u32)> = self.roots.iter().map(|&r| (r, 1)).collect();
        while let Some((n, d)) = stack.pop() {
            self.entries[n as usize].depth = d;
            let mut c = self.entries[n as usize].first_child;
            while c != NIL {
                stack.push((c, d + 1));
                c = self.entries[c as usize].next_sibling;
            }
        }
    }

    /// Makes one member of every parent cycle a root (the earliest in the file).
    fn break_cycles(&mut self) {
        let n = self.entries.len();
        // 0 = unvisited, 1 = on the current walk, 2 = done.
        let mut color = vec![0u8; n];
        let mut walk: Vec<u32> = Vec::new();
        for start in 0..n {
            if color[start] != 0 || !self.entries[start].is_node() {
                continue;
            }
            walk.clear();
            let mut cur = start as u32;
            loop {
                if cur == NIL || color[cur as usize] == 2 {
                    break;
                }
                if color[cur as usize] == 1 {
                    // Cycle: the walk from `cur` onwards.
                    let pos = walk.iter().position(|&w| w == cur).unwrap_or(0);
                    let cycle = &walk[pos..];
                    // A link the format calls soft (a Claude Code boundary to its
                    // logical parent) gives way first, without a complaint: a
                    // `/branch` copy re-parents what its boundary points to.
                    let soft = cycle
                        .iter()
                        .copied()
                        .find(|&c| self.entries[c as usize].flags & flags::SOFT_PARENT != 0);
                    if let Some(s) = soft {
                        self.entries[s as usize].parent = NIL;
                        break;
                    }
                    let first = *cycle.iter().min().unwrap_or(&cur);
                    let ids: Vec<String> = cycle.iter().map(|&c| self.id_string(c)).collect();
                    let line = self.entries[first as usize].line;
                    self.entries[first as usize].parent = NIL;
                    self.entries[first as usize].flags |= flags::CYCLE;
                    self.note(line, Severity::Warning, ProblemKind::Cycle { ids });
                    break;
                }
                color[cur as usize] = 1;
                walk.push(cur);
                cur = self.entries[cur as usize].parent;
            }
            for &w in &walk {
                color[w as usize] = 2;
            }
        }
    }

    fn recount(&mut self) {
        self.leaves = 0;
        self.branch_points = 0;
        for e in &self.entries {
            if !e.is_node() {
                continue;
            }
            match e.child_count {
                0 => self.leaves += 1,
                1 => {}
                _ => self.branch_points += 1,
            }
        }
    }

    fn report_tree_problems(&mut self) {
        // Re-derive orphan/self-parent/label problems from scratch after a rebuild.
        self.problems.retain(|p| {
            !matches!(
                p.what,
                ProblemKind::Orphan { .. }
                    | ProblemKind::SelfParent
                    | ProblemKind::LabelTargetMissing { .. }
            )
        });
        let mut found = Vec::new();
        for e in &self.entries {
            if !e.is_node() {
                continue;
            }
            if e.flags & flags::ORPHAN != 0 {
                let parent = self
                    .ids
                    .resolve(e.parent_id)
                    .unwrap_or_default()
                    .into_owned();
                found.push((e.line, ProblemKind::Orphan { parent }));
            }
            if e.flags & flags::SELF_PARENT != 0 {
                found.push((e.line, ProblemKind::SelfParent));
            }
        }
        self.agent.tree_problems(self, &mut found);
        for (line, what) in found {
            self.note(line, Severity::Warning, what);
        }
        self.problems.sort_by_key(|p| p.line);
    }

    /// Links one new entry (appended after the initial load) into the tree.
    /// Returns the parent whose child list changed (`NIL` for the root list).
    fn attach(&mut self, i: u32) -> u32 {
        let (p, why) = self.resolve_parent(i);
        {
            let e = &mut self.entries[i as usize];
            e.parent = p;
            e.flags |= why;
        }
        self.leaves += 1;
        if p == NIL {
            self.roots.push(i);
            let e = &self.entries[i as usize];
            if why & flags::ORPHAN != 0 {
                let (line, pid) = (e.line, e.parent_id);
                self.missing_parents.insert(pid);
                let parent = self.ids.resolve(pid).unwrap_or_default().into_owned();
                self.note(line, Severity::Warning, ProblemKind::Orphan { parent });
            } else if why & flags::SELF_PARENT != 0 {
                let line = e.line;
                self.note(line, Severity::Warning, ProblemKind::SelfParent);
            }
            return NIL;
        }
        self.entries[i as usize].depth = self.entries[p as usize].depth + 1;
        let ts = self.entries[i as usize].ts;
        let count = self.entries[p as usize].child_count;
        match count {
            0 => self.leaves -= 1,
            1 => self.branch_points += 1,
            _ => {}
        }
        let last = self.entries[p as usize].last_child;
        if last == NIL || self.entries[last as usize].ts <= ts {
            // The common case: the newest child goes last.
            if last == NIL {
                self.entries[p as usize].first_child = i;
            } else {
                self.entries[last as usize].next_sibling = i;
            }
            self.entries[p as usize].last_child = i;
        } else {
            // Insert before the first sibling with a later timestamp.
            let mut prev = NIL;
            let mut cur = self.entries[p as usize].first_child;
            while cur != NIL && self.entries[cur as usize].ts <= ts {
                prev = cur;
                cur = self.entries[cur as usize].next_sibling;
            }
            self.entries[i as usize].next_sibling = cur;
            if prev == NIL {
                self.entries[p as usize].first_child = i;
            } else {
                self.entries[prev as usize].next_sibling = i;
            }
        }
        self.entries[p as usize].child_count += 1;
        p
    }

    /// Allocates a fresh 8-hex id not used in the file.
    pub fn new_id(&self) -> String {
        loop {
            let v = crate::model::core::id::random_u32();
            let k = IdKey::from_u32(v);
            if !self.by_id.contains_key(&k) {
                return format!("{v:08x}");
            }
        }
    }
}

/// Iterator over a node's children.
pub struct Children<'a> {
    s: &'a Session,
    next: u32,
}

impl Iterator for Children<'_> {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        if self.next == NIL {
            return None;
        }
        let c = self.next;
        self.next = self.s.entries[c as usize].next_sibling;
        Some(c)
    }
}

// The agent trait and what it names: here, with the session it takes, so that
// neither file names the other (see `super::agent`).

/// What an agent's other files did since they were indexed (see
/// [`Agent::sources_moved`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourcesMoved {
    No,
    Grew,
    Rewritten,
}

/// How a session gets its agent: the agents' table above the core and the agents
/// (`crate::model::agents::TABLE`) fills it in; the session keeps it, so that a reload
/// chooses the same way.
#[derive(Debug)]
pub struct AgentTable {
    /// The agent of a file whose first line is a Pi header, or that is empty so far.
    pub first: fn() -> Box<dyn Agent>,
    /// The agent for a file whose first parsed line is `raw` and no Pi header;
    /// `None` when no agent recognises it.
    pub detect: fn(&[u8]) -> Option<Box<dyn Agent>>,
    /// The agent of a file whose bytes are no lines (a compressed Codex page), by
    /// its name and what it decompresses to; `None` for a file of lines. Such a file
    /// is not scanned: its agent reads it (see [`Agent::opaque_main_file`]).
    pub opaque: fn(&Path) -> Option<Box<dyn Agent>>,
    /// A session kept with others in one file (an agent's database), named
    /// `CONTAINER/NAME` as if that file were a folder: the container file and the
    /// agent that reads the session from it; `None` for a path that names a file.
    /// The session's path stays `CONTAINER/NAME`; its source 0 is the container,
    /// which the core never reads ([`Agent::opaque_main_file`]).
    pub member: fn(&Path) -> Option<Member>,
}

/// A session kept in a container file ([`AgentTable::member`]).
pub struct Member {
    /// The container file.
    pub file: PathBuf,
    /// The container, opened by its agent once and kept open for the life of the
    /// process: the session reads its metadata through it and never closes it. A
    /// container may be a database the process also holds locks on through other
    /// connections, and those (POSIX) locks belong to the process and the file:
    /// closing *any* descriptor of the file would drop them all.
    pub held: &'static File,
    /// The agent that reads the session from it.
    pub agent: Box<dyn Agent>,
}

/// The descriptor a [`Session`] reads its file through: its own, or its container's,
/// held by the agent and borrowed ([`Member::held`]). Cloning a borrowed one copies
/// the borrow, never duplicates (and later closes) the descriptor.
#[derive(Debug)]
pub(crate) enum SessionFile {
    Own(File),
    Borrowed(&'static File),
}

impl std::ops::Deref for SessionFile {
    type Target = File;
    fn deref(&self) -> &File {
        match self {
            SessionFile::Own(f) => f,
            SessionFile::Borrowed(f) => f,
        }
    }
}

impl SessionFile {
    fn try_clone(&self) -> io::Result<SessionFile> {
        Ok(match self {
            SessionFile::Own(f) => SessionFile::Own(f.try_clone()?),
            SessionFile::Borrowed(f) => SessionFile::Borrowed(f),
        })
    }
}

/// Another session, as a sessions mount lists it: for the links between a session and
/// the sessions that continue it (a Codex fork, made by Codex, reads its parent's
/// bytes as its own history; see [`Agent::forked_from`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionLink {
    /// The session's id: its directory's name in its project.
    pub session: String,
    /// The project folder a sessions mount lists it in (`None`: at the top).
    pub folder: Option<String>,
    /// An entry of that session (its id), where one is meant.
    pub entry: Option<String>,
}

/// One agent's format, and its own index state. See the module docs.
pub trait Agent: std::fmt::Debug + Send + Sync + 'static {
    /// Which agent.
    fn format(&self) -> Format;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;

    /// Kept for agents written against it; every agent indexes its own lines through
    /// [`Agent::index_line`], whatever this says.
    fn indexes_lines(&self) -> bool {
        false
    }
    /// Indexes one line of the session file (`line_no` from 1, at `off`).
    fn index_line(&mut self, _s: &mut Session, _raw: &[u8], _off: u64, _line_no: u32) {}
    /// Whether this agent reads a line by its [`LineHead`] alone: then the core may
    /// parse a batch of lines ahead (on two threads) and hand each line to
    /// [`Agent::index_head`] instead of [`Agent::index_line`].
    fn indexes_heads(&self) -> bool {
        false
    }
    /// [`Agent::index_line`] given `head`, which is `LineHead::parse(raw)`.
    fn index_head(
        &mut self,
        s: &mut Session,
        raw: &[u8],
        _head: &Result<LineHead<'_>, LineError>,
        off: u64,
        line_no: u32,
    ) {
        self.index_line(s, raw, off, line_no);
    }
    /// Called when the agent was detected, before its first line is indexed.
    fn begin(&mut self, _s: &mut Session) {}
    /// After the session file's new lines: index the other files of the session.
    fn after_scan(&mut self, _s: &mut Session) -> Result<(), LoadError> {
        Ok(())
    }
    /// Have the other files of the session changed since they were indexed?
    fn sources_moved(&self, _s: &Session) -> SourcesMoved {
        SourcesMoved::No
    }
    /// After the tree links changed: what the agent derives from them.
    fn after_link(&mut self, _s: &mut Session) {}
    /// Whether an entry whose parent is missing (`id` is its id key) is a root by
    /// design rather than damage.
    fn root_is_fine(&self, _id: super::id::IdKey) -> bool {
        false
    }
    /// Whether metadata lines (no entries) can move the name and the leaf, so that a
    /// refresh always reports them changed.
    fn meta_moves(&self) -> bool {
        false
    }
    /// Whether lines of other files are indexed with the session's own.
    fn has_side_files(&self) -> bool {
        false
    }
    /// Whether entry `i` is a subagent's rather than the session's own: by default, an
    /// entry of a side file when the agent has side files (a Claude Code subagent's
    /// transcript); an agent whose subagents' entries are told otherwise (rows of
    /// another session of the same database) says so.
    fn is_subagent(&self, s: &Session, i: u32) -> bool {
        s.has_side_files() && !s.in_main_file(i)
    }
    /// Whether the session file's bytes are no lines (a compressed Codex page, chosen
    /// by [`AgentTable::opaque`]): the core then reads none of it, and the agent
    /// indexes it in [`Agent::after_scan`].
    fn opaque_main_file(&self) -> bool {
        false
    }

    /// Migrates a parsed entry to the form the agent holds in memory.
    fn migrate(&self, _s: &Session, _i: u32, _v: &mut Value) {}
    fn leaf(&self, s: &Session) -> Option<u32>;
    fn name<'a>(&'a self, s: &'a Session) -> Option<&'a str>;
    fn session_json(&self, s: &Session) -> io::Result<Vec<u8>>;
    fn session_json_len(&self, s: &Session) -> u64;
    fn contexts_settled(&self) -> bool;
    fn render(&self, s: &Session, i: u32, v: &Value) -> (String, Vec<Image>);
    fn preview(&self, s: &Session, i: u32, v: &Value) -> String;
    /// The preview of an entry straight from its line's bytes, for an agent whose
    /// entries need no building (`tree` of a large file reads its lines in runs).
    /// `None` when the line must be built ([`Agent::preview`]).
    fn preview_of_line(&self, _raw: &[u8]) -> Option<String> {
        None
    }
    fn full_output(&self, _s: &Session, _i: u32) -> Option<PathBuf> {
        None
    }
    fn context_messages(&self, s: &Session, i: u32) -> io::Result<Vec<Value>>;
    fn context_renderer(&self) -> fn(&[Value]) -> String;
    fn request_of(&self, s: &Session, i: u32) -> Option<u32>;
    /// What the request that answer `i` answered held after the context of
    /// [`Agent::request_of`]'s entry, when it held more than that context: messages the
    /// agent sent without writing them as entries (Codex's compaction prompt after the
    /// history, for a `/compact` summary). Empty (the default) for an ordinary answer.
    fn request_tail(&self, _s: &Session, _i: u32) -> Vec<Value> {
        Vec::new()
    }
    fn can_reply_at(&self, _s: &Session, _i: u32) -> bool {
        true
    }
    /// Why a reply under entry `parent` (`None`: at the root) cannot be written now, when
    /// that is known before anything is written (a Copilot CLI process holds the
    /// session's lock): the errno to answer `open` with, and why. `None`: go ahead.
    fn reply_refusal(&self, _s: &Session, _parent: Option<u32>) -> Option<(i32, String)> {
        None
    }
    fn joins_tree_runs(&self, _i: u32) -> bool {
        false
    }
    /// What a run of entries joined on one `tree` line is called (`attachments ×N`).
    fn tree_run_noun(&self) -> &'static str {
        "attachments"
    }
    fn alias(&self, _i: u32) -> Option<&str> {
        None
    }
    /// The entry a line that is no entry of its own belongs to, by its source (0: the
    /// session file) and offset: a fragment (a later line of a Qwen Code record, whose
    /// parts join the record's first line) shows in that entry's files.
    fn line_owner(&self, _file: u16, _offset: u64) -> Option<u32> {
        None
    }
    fn find_alias(&self, _id: &str) -> Option<u32> {
        None
    }
    /// The line for `what` (with its `\n`) and its new id, after the lines of `batch`.
    fn build_line(
        &self,
        s: &Session,
        what: &NewEntry<'_>,
        now: i64,
        batch: &[String],
    ) -> Result<(String, Vec<u8>), AppendError>;
    /// Fills the usage table with what the entries record (tokens, cost).
    fn fill_usage(&self, s: &Session, prices: &Prices, t: &mut Table);
    /// The new session file that forking at entry `i` makes, as the agent forks.
    fn fork(&self, s: &Session, i: u32, fresh: &Fresh) -> Result<ForkFile, ForkError>;
    /// For a session that continues another one's history in place (a Codex fork: its
    /// first page reads the parent's bytes), that session and the entry of it this
    /// one continues from. `None` for a session of its own (a Pi or Claude Code fork is
    /// a copy, which names no entry of a session still there).
    fn forked_from(&self, _s: &Session) -> Option<SessionLink> {
        None
    }
    /// The sessions that continue from entry `i` this way (each's `entry` is `None`).
    fn forks_at(&self, _s: &Session, _i: u32) -> Vec<SessionLink> {
        Vec::new()
    }
    fn heap_bytes(&self) -> usize {
        0
    }

    /// Whether `raw`, the first line of a file that parses, is this agent's: asked of
    /// the table's `first` agent before the table's `detect`.
    fn accepts_first_line(&self, _raw: &[u8]) -> bool {
        false
    }
    /// Whether the file's entries have ids only in memory (Pi's v1), so that nothing
    /// may be appended.
    fn is_v1(&self) -> bool {
        false
    }
    /// Live labels, `(label, target node)`, sorted by label.
    fn labels<'a>(&'a self, _s: &'a Session) -> Vec<(&'a str, u32)> {
        Vec::new()
    }
    fn label_of<'a>(&'a self, _s: &'a Session, _i: u32) -> Option<&'a str> {
        None
    }
    /// The live label `name`: `(target node, label entry)`.
    fn label_entry(&self, _s: &Session, _name: &str) -> Option<(u32, u32)> {
        None
    }
    /// Something that changes whenever a label is set or cleared (a refresh compares
    /// it before and after).
    fn labels_mark(&self) -> (usize, Option<u32>) {
        (0, None)
    }
    /// The entries that edit node `i`, in file order.
    fn edits_of(&self, _s: &Session, _i: u32) -> Vec<u32> {
        Vec::new()
    }
    /// The nodes some entry edits.
    fn edited_targets(&self, _s: &Session) -> Vec<u32> {
        Vec::new()
    }
    /// The entry that set the session's name, when a line does.
    fn name_entry(&self) -> Option<u32> {
        None
    }
    /// Problems of the agent's own that the tree's links decide, after the tree was
    /// rebuilt: `(line, what)`.
    fn tree_problems(&self, _s: &Session, _found: &mut Vec<(u32, ProblemKind)>) {}
    /// Writes a reply itself, for an agent whose reply is not one line appended to the
    /// session file (Codex: the current page, or a new page and its database row),
    /// under the entry with id `parent` (`None`: at the root). Returns the new entry's
    /// id. `None`: the core's path ([`Agent::build_line`], appended to the session
    /// file).
    fn write_reply(
        &self,
        _s: &Session,
        _parent: Option<&str>,
        _text: &str,
    ) -> Option<Result<String, AppendError>> {
        None
    }
    /// Why the mount would refuse write `w`, when that can be known before anything
    /// is written (the file then shows no write bit, and opening it for writing fails
    /// at once, where the shell sees it); `None` when it would be taken, or can only be
    /// known once tried. The default asks the agent's own writers, with placeholders,
    /// what they would say: [`Agent::build_line`] (refusing with
    /// [`AppendError::Unsupported`]), [`Agent::can_reply_at`], and [`Agent::fork`]
    /// (refusing with [`ForkError::Refused`] or [`ForkError::Unsupported`]). An agent
    /// whose answer is cheaper than planning a whole fork, or that writes its replies
    /// itself ([`Agent::write_reply`]), answers on its own.
    fn refuses(&self, s: &Session, w: Write) -> Option<String> {
        if self.is_v1() && !matches!(w, Write::Fork(_)) {
            return Some(AppendError::LegacyV1.to_string());
        }
        let probe = |what: NewEntry<'_>| match self.build_line(s, &what, 0, &[]) {
            Err(AppendError::Unsupported(why)) => Some(why.to_string()),
            _ => None,
        };
        match w {
            Write::Reply(Some(i)) => (!self.can_reply_at(s, i)).then(|| {
                let id = s.id_string(i);
                probe(NewEntry::Reply {
                    parent: Some(&id),
                    text: "x",
                })
                .unwrap_or_else(|| {
                    format!("{id} cannot be replied to: its agent does not resume from it")
                })
            }),
            Write::Reply(None) => probe(NewEntry::Reply {
                parent: None,
                text: "x",
            }),
            Write::Name => probe(NewEntry::Name("x")),
            Write::Label if !self.labels_writable() => Some(format!(
                "{} sessions have no labels",
                self.format().program()
            )),
            Write::Label => probe(NewEntry::Label {
                target: "",
                label: Some("x"),
            }),
            Write::Fork(i) => match self.fork(s, i, &Fresh::random(self.format())) {
                Err(e @ (ForkError::Refused(_) | ForkError::Unsupported(_))) => Some(e.to_string()),
                _ => None,
            },
        }
    }
    /// The folders whose changes can change the session: the session file's own, and
    /// for a session over several files theirs (and where new ones appear).
    fn watched_dirs(&self, s: &Session) -> Vec<PathBuf> {
        s.path()
            .parent()
            .map(|p| p.to_path_buf())
            .into_iter()
            .collect()
    }
    /// What the readable `context` of entry `i` shows before its messages (Codex's
    /// base instructions), if anything.
    fn context_preamble(&self, _s: &Session, _i: u32) -> Option<String> {
        None
    }
    /// Why a reply under entry `i` (`None`: at the root) cannot be written now, known
    /// before anything is: asked when `reply` is opened for writing, so that the
    /// shell's `open` fails with the errno (a database that is busy, a session its
    /// agent is writing to). `None`: go ahead.
    fn refuse_reply_at(&self, _s: &Session, _i: Option<u32>) -> Option<AppendError> {
        None
    }
    /// Forks at entry `i` itself, for an agent whose fork is no new file beside the
    /// session (a new session in its database): the new session's path. `None`: the
    /// core writes the file [`Agent::fork`] plans.
    fn write_fork(&self, _s: &Session, _i: u32) -> Option<Result<PathBuf, ForkError>> {
        None
    }
    /// The files whose last lines say when the session was last active
    /// ([`super::activity`]): the session file (default), or a session over several
    /// files its own ones (a Codex thread's pages, not the parent pages a fork reads).
    fn activity_files(&self, s: &Session) -> Vec<PathBuf> {
        vec![s.path().to_path_buf()]
    }
    /// The newest time the agent wrote in `tail`, complete lines at the end of one of
    /// [`Agent::activity_files`] (ms since the epoch). The default reads the JSON
    /// lines' top-level `timestamp` ([`super::activity::newest_timestamp`]); an agent
    /// that keeps its times elsewhere reads them here. It is called on an agent that
    /// indexed nothing too (a mount's listing reads every session's time this way).
    fn activity_in_tail(&self, tail: &[u8]) -> Option<i64> {
        super::activity::newest_timestamp(tail)
    }
    /// Whether labels can be set through the mount (its `labels/` folder is writable;
    /// Pi's label entries). An agent without labels shows `labels/` empty and read-only.
    fn labels_writable(&self) -> bool {
        false
    }
    /// Whether the session writes in a folder named after its file, beside it
    /// (`<stem>/`: Claude Code's subagents and custom title): a mount of the session
    /// alone watches that folder too.
    fn writes_side_folder(&self) -> bool {
        false
    }
    /// The file entry `i`'s line is in, when it is not the session file: by default
    /// the session's source `Entry::file` ([`Session::add_source`]); an agent that
    /// reads other files itself (Claude Code's subagents) says which.
    fn entry_file(&self, s: &Session, i: u32) -> Option<PathBuf> {
        s.source(s.entry(i).file)
            .map(|src| src.path().to_path_buf())
    }
}

/// The newest time `read` finds in the tails of `files`, and its file; a file whose
/// tail holds none counts with its modification time (see [`super::activity`]).
pub fn activity_of(
    files: &[PathBuf],
    read: &dyn Fn(&[u8]) -> Option<i64>,
) -> Option<(i64, PathBuf)> {
    files
        .iter()
        .filter_map(|f| {
            super::activity::of_file(f, read)
                .or_else(|| super::activity::mtime_ms(f))
                .map(|t| (t, f.clone()))
        })
        .max_by_key(|(t, _)| *t)
}

/// Stands in for a session's agent while that agent's `&mut self` hook runs with the
/// session (see `Session::with_agent`); never seen outside it.
#[derive(Debug)]
pub(crate) struct Lent;

impl Agent for Lent {
    fn format(&self) -> Format {
        Format::Pi
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn leaf(&self, _: &Session) -> Option<u32> {
        None
    }
    fn name<'a>(&'a self, _: &'a Session) -> Option<&'a str> {
        None
    }
    fn session_json(&self, _: &Session) -> io::Result<Vec<u8>> {
        Ok(Vec::new())
    }
    fn session_json_len(&self, _: &Session) -> u64 {
        0
    }
    fn contexts_settled(&self) -> bool {
        false
    }
    fn render(&self, _: &Session, _: u32, _: &Value) -> (String, Vec<Image>) {
        (String::new(), Vec::new())
    }
    fn preview(&self, _: &Session, _: u32, _: &Value) -> String {
        String::new()
    }
    fn context_messages(&self, _: &Session, _: u32) -> io::Result<Vec<Value>> {
        Ok(Vec::new())
    }
    fn context_renderer(&self) -> fn(&[Value]) -> String {
        |_| String::new()
    }
    fn request_of(&self, _: &Session, _: u32) -> Option<u32> {
        None
    }
    fn build_line(
        &self,
        _: &Session,
        _: &NewEntry<'_>,
        _: i64,
        _: &[String],
    ) -> Result<(String, Vec<u8>), AppendError> {
        Err(AppendError::Io(io::Error::other("no agent")))
    }
    fn fill_usage(&self, _: &Session, _: &Prices, _: &mut Table) {}
    fn fork(&self, _: &Session, _: u32, _: &Fresh) -> Result<ForkFile, ForkError> {
        Err(ForkError::Refused("no agent".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const H: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-05T09:00:00.000Z","cwd":"/p"}"#;

    fn e(id: &str, parent: Option<&str>, sec: u32) -> String {
        let p = parent.map(|p| format!("\"{p}\"")).unwrap_or("null".into());
        format!(
            r#"{{"type":"message","id":"{id}","parentId":{p},"timestamp":"2026-01-05T09:00:{sec:02}.000Z","message":{{"role":"user","content":"u {id}","timestamp":1}}}}"#
        )
    }

    #[test]
    fn parse_lines_returns_every_line_in_order_whoever_parsed_it() {
        // Past PARALLEL_PARSE_BYTES, in many runs: the helper (at background priority)
        // takes some, this thread the rest and whatever the helper did not hand back.
        let mut buf = Vec::new();
        let mut lines = Vec::new();
        for k in 0..4000 {
            let at = buf.len();
            if k % 997 == 5 {
                buf.extend_from_slice(b"{not json");
            } else {
                buf.extend_from_slice(
                    format!(r#"{{"k":{k},"pad":"{}"}}"#, "x".repeat(40)).as_bytes(),
                );
            }
            lines.push((0, at, buf.len() - at));
        }
        assert!(buf.len() > PARALLEL_PARSE_BYTES * 2);
        let out = parse_lines(vec![buf], lines);
        assert_eq!(out.len(), 4000);
        for (k, v) in out.iter().enumerate() {
            if k % 997 == 5 {
                assert!(v.is_none(), "line {k}");
            } else {
                assert_eq!(v.as_ref().unwrap()["k"], k, "line {k}");
            }
        }
    }

    fn file(text: &str) -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.jsonl");
        std::fs::write(&p, text).unwrap();
        (d, p)
    }

    fn ids(s: &Session, v: impl IntoIterator<Item = u32>) -> Vec<String> {
        v.into_iter().map(|i| s.id_string(i)).collect()
    }

    #[test]
    fn children_in_timestamp_order_and_leaf_is_last_line() {
        let text = [
            H,
            &e("a", None, 1),
            &e("c", Some("a"), 9),
            &e("b", Some("a"), 5),
            "",
        ]
        .join("\n");
        let (_d, p) = file(&text);
        let s = Session::open(&p).unwrap();
        assert_eq!(ids(&s, s.children(s.find("a").unwrap())), ["b", "c"]);
        assert_eq!(s.id_string(s.leaf().unwrap()), "b");
        assert_eq!((s.leaf_count(), s.branch_point_count()), (2, 1));
    }

    #[test]
    fn bad_headers_are_errors_and_the_file_is_untouched() {
        for text in [
            "",
            "{\"type\":\"message\",\"id\":\"x\"}\n",
            "\u{feff}{\"type\":\"session\",\"id\":\"s\"}\n",
            "[]\n",
            "{\"type\":\"session\"}\n",
        ] {
            let (_d, p) = file(text);
            let r = Session::open(&p);
            assert!(r.is_err(), "{text:?}");
            assert_eq!(std::fs::read_to_string(&p).unwrap(), text);
        }
        let (_d, p) = file(&format!("\n  \nnot json\n{H}\n{}\n", e("a", None, 1)));
        let s = Session::open(&p).unwrap();
        assert_eq!(s.entries().len(), 1);
        assert_eq!(s.header().line, 4);
    }

    #[test]
    fn cycles_self_parents_and_orphans_become_roots() {
        let text = [
            H,
            &e("a", None, 1),
            &e("s", Some("s"), 2),
            &e("x", Some("y"), 3),
            &e("y", Some("x"), 4),
            &e("o", Some("gone"), 5),
            "",
        ]
        .join("\n");
        let (_d, p) = file(&text);
        let s = Session::open(&p).unwrap();
        assert_eq!(ids(&s, s.roots().iter().copied()), ["a", "s", "x", "o"]);
        assert_eq!(ids(&s, s.path_to(s.find("y").unwrap())), ["x", "y"]);
        let kinds: Vec<_> = s
            .problems()
            .iter()
            .map(|p| std::mem::discriminant(&p.what))
            .collect();
        assert!(kinds.contains(&std::mem::discriminant(&ProblemKind::SelfParent)));
        assert!(
            s.problems()
                .iter()
                .any(|p| matches!(p.what, ProblemKind::Cycle { .. }))
        );
        assert!(
            s.problems()
                .iter()
                .any(|p| matches!(&p.what, ProblemKind::Orphan { parent } if parent == "gone"))
        );
    }

    #[test]
    fn duplicate_ids_later_wins() {
        let text = [
            H,
            &e("a", None, 1),
            &e("b", Some("a"), 2),
            &e("b", Some("a"), 3),
            "",
        ]
        .join("\n");
        let (_d, p) = file(&text);
        let s = Session::open(&p).unwrap();
        let b = s.find("b").unwrap();
        assert_eq!(s.entry(b).line, 4);
        assert_eq!(s.children(s.find("a").unwrap()).count(), 1);
    }

    #[test]
    fn torn_tail_waits_for_its_newline() {
        let full = e("b", Some("a"), 2);
        let text = format!("{H}\n{}\n{}", e("a", None, 1), &full[..30]);
        let (_d, p) = file(&text);
        let mut s = Session::open(&p).unwrap();
        assert_eq!(s.entries().len(), 1);
        assert_eq!(s.tail_bytes(), 30);
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(format!("{}\n", &full[30..]).as_bytes())
            .unwrap();
        let c = s.refresh().unwrap();
        assert_eq!(c.new_entries, 1..2);
        assert!(!c.reloaded);
        assert_eq!(s.tail_bytes(), 0);
        assert_eq!(s.id_string(s.leaf().unwrap()), "b");
    }

    #[test]
    fn refresh_adopts_orphans_and_follows_rewrites() {
        let text = format!("{H}\n{}\n", e("o", Some("later"), 1));
        let (_d, p) = file(&text);
        let mut s = Session::open(&p).unwrap();
        assert_eq!(s.roots().len(), 1);
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(format!("{}\n", e("later", None, 2)).as_bytes())
            .unwrap();
        let c = s.refresh().unwrap();
        assert!(c.rebuilt);
        assert_eq!(ids(&s, s.roots().iter().copied()), ["later"]);
        // Rewritten in place, same length, new header: noticed through the fingerprint.
        let text2 = format!(
            "{}\n{}\n",
            H.replace("\"s1\"", "\"s2\""),
            e("p", Some("later"), 1)
        );
        std::fs::write(&p, format!("{text2}{}\n", e("later", None, 2))).unwrap();
        let c = s.refresh().unwrap();
        assert!(c.reloaded);
        assert!(s.find("p").is_some() && s.find("o").is_none());
        assert_eq!(s.generation(), 1);
    }

    #[test]
    fn labels_and_name_resolve_over_the_whole_file() {
        let lab = |id: &str, t: &str, l: Option<&str>| match l {
            Some(l) => format!(
                r#"{{"type":"label","id":"{id}","parentId":"a","timestamp":"2026-01-05T09:00:09.000Z","targetId":"{t}","label":"{l}"}}"#
            ),
            None => format!(
                r#"{{"type":"label","id":"{id}","parentId":"a","timestamp":"2026-01-05T09:00:09.000Z","targetId":"{t}"}}"#
            ),
        };
        let info = |id: &str, n: &str| {
            format!(
                r#"{{"type":"session_info","id":"{id}","parentId":"a","timestamp":"2026-01-05T09:00:09.000Z","name":"{n}"}}"#
            )
        };
        let text = [
            H,
            &e("a", None, 1),
            &lab("l1", "a", Some("x")),
            &info("i1", " hi "),
            &lab("l2", "a", None),
            &lab("l3", "a", Some("y")),
            "",
        ]
        .join("\n");
        let (_d, p) = file(&text);
        let s = Session::open(&p).unwrap();
        assert_eq!(s.labels(), vec![("y", s.find("a").unwrap())]);
        assert_eq!(s.name(), Some("hi"));
        let text = [H, &e("a", None, 1), &info("i1", "n"), &info("i2", ""), ""].join("\n");
        let (_d, p) = file(&text);
        assert_eq!(Session::open(&p).unwrap().name(), None);
    }

    #[test]
    fn v1_entries_chain_in_file_order() {
        let h1 = r#"{"type":"session","id":"old","timestamp":"2025-01-05T09:00:00.000Z","cwd":"/p","provider":"x","modelId":"y"}"#;
        let m = |t: &str| {
            format!(
                r#"{{"type":"message","timestamp":"2025-01-05T09:00:0{t}.000Z","message":{{"role":"user","content":"m{t}","timestamp":1}}}}"#
            )
        };
        let c = r#"{"type":"compaction","timestamp":"2025-01-05T09:00:05.000Z","summary":"S","firstKeptEntryIndex":2,"tokensBefore":5}"#;
        let text = [h1, &m("1"), "garbage", &m("2"), c, ""].join("\n");
        let (_d, p) = file(&text);
        let s = Session::open(&p).unwrap();
        assert!(s.is_v1());
        assert_eq!(s.path_to(2), vec![0, 1, 2]);
        let v = s.entry_value(2).unwrap();
        assert_eq!(v["firstKeptEntryId"], s.id_string(1).as_str());
        assert!(v.get("firstKeptEntryIndex").is_none());
        assert_eq!(v["parentId"], s.id_string(1).as_str());
    }
}
