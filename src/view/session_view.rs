//! [`SessionView`]: one mounted session.
//!
//! Reads take the model's read lock; appends and refreshes take its write lock only
//! while they change the index. Rendered content (an entry's text and images, a
//! context, the tree) is computed on demand and kept in small caches, so `stat`, `open`
//! and `read` of the same file render it once; a context renders each of its two forms
//! only when that form is asked for. Kernel cache invalidations are computed from each
//! [`Change`] and handed to a sink (the adapter's notifier thread); the view itself
//! never calls into the kernel. Almost everything an entry shows is fixed once shown;
//! the exception is `edited-by`, which follows the edits appended and the leaf, so
//! every change compares the edits it names before and after and invalidates the
//! entries whose link appeared, moved or went.
//!
//! # Locks
//!
//! Several threads serve requests at once. The view's locks, in the order they are
//! taken (a thread holding one takes only locks further down the list):
//!
//! 1. `append_lock`: one append through this view at a time, for all of it: catching
//!    up with the file, writing the line, its `fdatasync`, indexing it.
//! 2. `state` (shared or exclusive): the index. Lookups, listings, rendering an entry
//!    or a context and drawing `tree` hold it shared. It is held exclusively only to
//!    change the index, briefly: indexing appended lines, or putting in place an index
//!    of a replaced file that was built with no lock held. Nothing waits for the disk
//!    under it but reads of the session file: the append's write and `fdatasync` happen
//!    with only `append_lock` held.
//! 3. The caches, one at a time: `state.tree` (held while `tree` is drawn, so that it
//!    is drawn once), `rendered`, `kind_sizes`, `contexts`, `label_inos`, `handles`.
//!    `handles` is never held while `state` is taken.
//! 4. A cached context's `messages` (held while one of its two forms is rendered, so
//!    that each is rendered once), taken with no cache lock held.
//!
//! The locks are fair: while a change waits for `state`, new readers wait behind it, so
//! drawing a large `tree` can hold up reads of this session for as long, never reads of
//! another session (each has its own view; see [`MultiView`](super::MultiView)).
//! Invalidations go down a channel that never blocks, to the notifier thread, which
//! talks to the kernel holding no lock of the view. They are queued before `state` is
//! let go (the sink's own lock is a leaf, taken last): whoever takes `state` after a
//! change finds the change's invalidations queued already. A writer's `flush` relies
//! on that when the watcher indexed its line first: it waits until everything queued
//! before it has reached the kernel (see `fuse::notify`), and that includes them.

use super::inode::{self as ino, MAX_IMAGES, Slot, decode_entry, entry_ino};
use super::names::{entry_name, escape_id, escape_name, is_image_name, unescape_name};
use super::{Attr, DirEntry, Error, FileKind, Invalidation, InvalidationSink, OpenMode, Result};
use crate::model::append::{
    NewEntry, Refused, merge, refuse_reply, refuse_written, sanitize_name, write_line,
};
use crate::model::core::content::{self, FULL_OUTPUT};
use crate::model::core::reply::Write;
use crate::model::core::session::{Change, NIL, Session};
use crate::model::input::Access;
use crate::model::time::now_ms;
use crate::model::{AppendError, LoadError, tree, usage};
use parking_lot::{Mutex, RwLock};
use std::collections::{HashMap, VecDeque};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How a session is mounted.
#[derive(Debug, Clone)]
pub struct Options {
    /// Refuse every write with `EROFS`.
    pub read_only: bool,
    /// Absolute path of the mount point (for symlinks too deep for a relative target).
    pub mount_point: PathBuf,
    /// Owner of every inode (the mounting user).
    pub uid: u32,
    pub gid: u32,
    /// Largest message accepted through `reply` (bytes), `EFBIG` past it.
    pub max_reply: usize,
    /// The session is one of a sessions directory's: a fork made through `fork`
    /// shows up beside it, and `fork` also names its directory in the mount.
    pub in_sessions_dir: bool,
}

impl Options {
    /// Defaults for tests and tools: writable, owned by the current user, 16 MiB limit.
    pub fn new(mount_point: impl Into<PathBuf>) -> Options {
        // SAFETY: getuid/getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        Options {
            read_only: false,
            mount_point: mount_point.into(),
            uid,
            gid,
            max_reply: 16 << 20,
            in_sessions_dir: false,
        }
    }
}

/// What `open` decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    pub fh: u64,
    /// The content cannot change: the kernel may keep its page cache across opens.
    pub keep_cache: bool,
    /// Bypass the page cache (files whose size is not known up front).
    pub direct_io: bool,
}

/// Cache lifetime of what never changes (an entry's files, its context).
const FOREVER: Duration = Duration::from_secs(365 * 24 * 3600);
/// Cache lifetime of what changes with appends (also invalidated explicitly).
const SHORT: Duration = Duration::from_secs(1);
/// Entries returned per readdir call; the kernel asks again from the next offset.
const READDIR_BATCH: usize = 512;
/// A size not known yet in `SessionView::kind_sizes`.
const UNKNOWN: u32 = u32::MAX;
/// The handle of reads that come without an `open` (see [`SessionView::read`]);
/// handles handed out start at 1.
pub const NO_HANDLE: u64 = 0;
/// Files open for writing at once (`EMFILE` past it).
const MAX_WRITERS: usize = 1024;
/// Memory for rendered KIND files kept for the next `stat` or `read`.
const RENDERED_CACHE_BYTES: usize = 4 << 20;
/// Memory for rendered contexts: one deep context is megabytes, and a listing needs
/// only the one being stat'ed and then read.
const CONTEXT_CACHE_BYTES: usize = 8 << 20;
/// Unwritten text held for all writers together (`EDQUOT` past it), so that many
/// writers at the size limit cannot exhaust memory.
const MAX_PENDING: usize = 256 << 20;

/// What a usage table was read from: inode base, reload generation, bytes and entries
/// indexed (a subagent's lines add entries, not bytes of the main file).
type UsageKey = (u64, u64, u64, usize);

/// Every inode the view can name.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Root,
    SessionJson,
    Name,
    Tree,
    RootReply,
    Leaf,
    Branches,
    Labels,
    IdDir,
    /// `cost` (false) or `cost.json` (true) at the root.
    Cost(bool),
    Label(String),
    E(u32, Slot),
    /// `forked-from` at the root: the entry of another session this one continues.
    ForkedFrom,
    /// `.id/ID/forks/SESSION`: a session that continues from entry ID.
    ForkMember(u32, String),
    /// `.id/PREFIX`: a link to the one entry whose id starts with PREFIX (as git
    /// takes a unique prefix of a commit id).
    IdPrefix(String),
}

/// The shortest prefix `.id/` resolves, as git's shortest abbreviation: shorter ones
/// would resolve the names shells and tools probe for.
const MIN_ID_PREFIX: usize = 4;

/// The key of a `.id/PREFIX` link among the label numbers (labels hold no NUL).
fn id_prefix_key(prefix: &str) -> String {
    format!("\0prefix/{prefix}")
}

/// An entry's rendered content file and images (and the full output a Claude Code
/// tool result spilled to a file of its own, shown as `full-output` in the slot of
/// the last image).
type Rendered = content::Content;

/// An entry's context: Pi's messages, and each form rendered when first asked for
/// (`cat context` never pays for `context.json`). The messages are dropped once both
/// forms are rendered.
struct Ctx {
    messages: Mutex<Option<Vec<serde_json::Value>>>,
    /// How its format reads a context (`Session::context_renderer`).
    readable: fn(&[serde_json::Value]) -> String,
    /// What the readable form shows before the messages (`Session::context_preamble`).
    preamble: Option<String>,
    text: std::sync::OnceLock<Arc<Vec<u8>>>,
    json: std::sync::OnceLock<Arc<Vec<u8>>>,
    /// What it is charged in the cache: twice the first form rendered.
    weight: usize,
}

impl Ctx {
    /// A context with `json` (or the readable form) rendered.
    fn new(
        messages: Vec<serde_json::Value>,
        readable: fn(&[serde_json::Value]) -> String,
        preamble: Option<String>,
        json: bool,
    ) -> Ctx {
        let c = Ctx {
            messages: Mutex::new(Some(messages)),
            readable,
            preamble,
            text: std::sync::OnceLock::new(),
            json: std::sync::OnceLock::new(),
            weight: 0,
        };
        let first = if json { c.json() } else { c.text() };
        Ctx {
            weight: 2 * first.len(),
            ..c
        }
    }

    fn text(&self) -> Arc<Vec<u8>> {
        self.text
            .get_or_init(|| {
                let readable = self.readable;
                let pre = self.preamble.as_deref().unwrap_or("");
                self.render(|m| format!("{pre}{}", readable(m)), &self.json)
            })
            .clone()
    }

    fn json(&self) -> Arc<Vec<u8>> {
        self.json
            .get_or_init(|| self.render(crate::model::core::text::context_json, &self.text))
            .clone()
    }

    fn render(
        &self,
        f: impl FnOnce(&[serde_json::Value]) -> String,
        other: &std::sync::OnceLock<Arc<Vec<u8>>>,
    ) -> Arc<Vec<u8>> {
        let mut messages = self.messages.lock();
        // Present until both forms exist, and this one does not yet.
        let out = f(messages.as_deref().unwrap_or_default());
        if other.get().is_some() {
            *messages = None;
        }
        Arc::new(out.into_bytes())
    }
}

/// What a cached value costs in memory.
trait Weight {
    fn bytes(&self) -> usize;
}

impl Weight for Rendered {
    fn bytes(&self) -> usize {
        self.text.len() + self.images.iter().map(|i| i.data.len()).sum::<usize>()
    }
}

impl Weight for Ctx {
    fn bytes(&self) -> usize {
        self.weight
    }
}

/// A small least-recently-used cache, bounded in entries and in bytes (the most
/// recent value is kept whatever its size: it is the one being read).
struct Lru<V> {
    cap: usize,
    max_bytes: usize,
    bytes: usize,
    map: HashMap<(u64, u32), Arc<V>>,
    order: VecDeque<(u64, u32)>,
}

impl<V: Weight> Lru<V> {
    fn new(cap: usize, max_bytes: usize) -> Self {
        Lru {
            cap,
            max_bytes,
            bytes: 0,
            map: HashMap::new(),
            order: VecDeque::new(),
        }
    }
    fn get(&mut self, k: (u64, u32)) -> Option<Arc<V>> {
        let v = self.map.get(&k)?.clone();
        if let Some(p) = self.order.iter().position(|x| *x == k) {
            self.order.remove(p);
        }
        self.order.push_back(k);
        Some(v)
    }
    fn put(&mut self, k: (u64, u32), v: Arc<V>) {
        self.bytes += v.bytes();
        match self.map.insert(k, v) {
            Some(old) => self.bytes -= old.bytes(),
            None => self.order.push_back(k),
        }
        while self.order.len() > self.cap.max(1)
            || (self.bytes > self.max_bytes && self.order.len() > 1)
        {
            if let Some(old) = self.order.pop_front()
                && let Some(v) = self.map.remove(&old)
            {
                self.bytes -= v.bytes();
            }
        }
    }
    fn clear(&mut self) {
        self.map.clear();
        self.order.clear();
        self.bytes = 0;
    }
    fn remove(&mut self, k: (u64, u32)) {
        if let Some(v) = self.map.remove(&k) {
            self.bytes -= v.bytes();
            self.order.retain(|x| *x != k);
        }
    }
}

struct State {
    s: Session,
    /// Inode generation base (see `inode`).
    base: u64,
    /// The drawing of `tree`, until the next change (filled under the read lock).
    tree: Mutex<TreeCache>,
}

/// What is known of the `tree` drawing since the last change.
#[derive(Default)]
struct TreeCache {
    /// Its size, once drawn.
    size: Option<u64>,
    /// The drawing while someone reads it (weak: a 100k-entry tree is 20 MB).
    drawn: Weak<Vec<u8>>,
    /// On a mount that answers no `open` (read-only), reads carry no handle to keep the
    /// drawing alive between them: the read that drew it holds it here, with the bytes
    /// served since, until as many bytes as it has were read (or the next change).
    held: Option<(Arc<Vec<u8>>, usize)>,
    /// The drawing, when at most [`KEEP_TREE_BYTES`], until the next change.
    kept: Option<Arc<Vec<u8>>>,
}

/// The largest `tree` drawing kept between opens.
const KEEP_TREE_BYTES: usize = 4 << 20;

/// The bytes of a file, shared with the cache they came from: no copy per open or read.
#[derive(Clone)]
enum Content {
    Bytes(Arc<Vec<u8>>),
    Kind(Arc<Rendered>),
    /// The n-th image (from 0).
    Image(Arc<Rendered>, usize),
}

impl std::ops::Deref for Content {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Content::Bytes(b) => b,
            Content::Kind(r) => &r.text,
            Content::Image(r, n) => &r.images[*n].data,
        }
    }
}

/// `size` bytes of `d` from `offset` (fewer at the end).
fn slice_of(d: &[u8], offset: u64, size: u32) -> Vec<u8> {
    let start = (offset as usize).min(d.len());
    let end = start.saturating_add(size as usize).min(d.len());
    d[start..end].to_vec()
}

enum WriteTarget {
    /// A user message under this entry id, or a new root.
    Reply(Option<String>),
    Name,
    /// `fork` of the entry with this id: the fork is made by the first write through
    /// the descriptor (or by opening it with `O_TRUNC`, or by `touch`), once; what is
    /// written is ignored. `made` once it was.
    Fork {
        id: String,
        made: bool,
    },
}

enum Handle {
    Read(Content),
    /// Opened for reading, nothing read through it yet: its contents are made by the
    /// first read that reaches us, in the inode generation `generation` (`ESTALE` if the
    /// file was reloaded since). The kernel keeps the pages of files it read, so most
    /// opens (all but a file's first) are never read through and cost no rendering.
    Unread {
        node: Node,
        generation: u64,
    },
    /// `tree`, opened once its drawing is known: drawn again on the first read that
    /// reaches us (the kernel serves the rest from its page cache), in the inode
    /// generation of the open.
    Tree(Option<Arc<Vec<u8>>>, u64),
    Write {
        target: WriteTarget,
        /// What the file holds for this descriptor from offset `start` on: the text
        /// written since the last append (for `name` opened without `O_TRUNC`, the
        /// name as `cat` shows it, then what was written).
        buf: Vec<u8>,
        start: u64,
        /// For `name`: how much of `buf` is the name as it was at the open, newline
        /// included, so that text written after it continues the name.
        base: usize,
        /// `O_APPEND`: every write goes at the end of `buf`.
        append: bool,
        /// Written to, or shortened with `ftruncate`, since the last append.
        changed: bool,
        /// Opened with `O_TRUNC`, and nothing appended since: closing `name` clears it.
        cleared: bool,
        /// Thread group that opened the file: only its flushes append (see `flush_from`).
        opener: Option<u32>,
        failed: Option<Error>,
    },
}

/// The name of an errno, for the log (`EACCES`), or its number.
fn errno_name(e: i32) -> String {
    let name = match e {
        libc::EACCES => "EACCES",
        libc::EROFS => "EROFS",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ENOENT => "ENOENT",
        libc::ESTALE => "ESTALE",
        libc::EEXIST => "EEXIST",
        libc::ENOSPC => "ENOSPC",
        libc::EINVAL => "EINVAL",
        libc::EIO => "EIO",
        libc::EBUSY => "EBUSY",
        libc::EILSEQ => "EILSEQ",
        libc::ENOMSG => "ENOMSG",
        libc::EFBIG => "EFBIG",
        libc::EDQUOT => "EDQUOT",
        _ => return format!("errno {e}"),
    };
    name.to_string()
}

/// The thread group (process) of thread `pid`, as FUSE reports the caller's thread.
fn tgid_of(pid: u32) -> u32 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Tgid:").and_then(|v| v.trim().parse().ok()))
        })
        .unwrap_or(pid)
}

/// One mounted session. All methods take `&self`; state is behind locks.
pub struct SessionView {
    /// The session file (the same path across reloads).
    path: PathBuf,
    opts: Options,
    state: RwLock<State>,
    /// Serializes appends made through this mount.
    append_lock: Mutex<()>,
    handles: Mutex<HashMap<u64, Handle>>,
    next_fh: AtomicU64,
    /// Bytes held in write buffers, all handles together.
    pending: AtomicU64,
    writers: AtomicU64,
    label_inos: Mutex<LabelInos>,
    rendered: Mutex<Lru<Rendered>>,
    /// The size of every content file rendered so far, by entry (`UNKNOWN` for the
    /// others), for the generation `base`: `stat` needs it long after the rendering
    /// has left `rendered` (a writable mount's kernel asks again after every read).
    kind_sizes: Mutex<(u64, Vec<u32>)>,
    contexts: Mutex<Lru<Ctx>>,
    /// The usage of every entry, for the state of the file it was read from
    /// (`UsageKey`): `cost` files are made from it.
    usage: Mutex<Option<(UsageKey, Arc<usage::Table>)>>,
    sink: InvalidationSink,
    /// What each entry's `fork` reads: the last fork made there (by entry id).
    forks: Mutex<HashMap<String, Vec<u8>>>,
    /// Session files forks created, not yet reported to a sessions-directory view.
    created: Mutex<Vec<PathBuf>>,
    /// The session's [`Access`] when last looked at by a refresh: a `chmod` or `chown`
    /// of its file makes the kernel forget what it cached (see `access_moved`).
    access: Mutex<Option<Access>>,
}

fn time_of(ms: i64) -> SystemTime {
    if ms == crate::model::core::session::NO_TIME {
        return UNIX_EPOCH;
    }
    if ms >= 0 {
        UNIX_EPOCH + Duration::from_millis(ms as u64)
    } else {
        UNIX_EPOCH
            .checked_sub(Duration::from_millis(ms.unsigned_abs()))
            .unwrap_or(UNIX_EPOCH)
    }
}

/// A session file that can no longer be indexed (cut to nothing, or to a torn
/// header, under the mount) no longer holds what the inodes of its last index name:
/// they are stale (`ESTALE`), as after a reload, not an I/O error.
fn load_err(e: LoadError) -> Error {
    match e {
        LoadError::Io(e) => e.into(),
        _ => Error::Stale,
    }
}

fn append_err(e: AppendError) -> Error {
    match e {
        AppendError::LegacyV1 => Error::Access,
        AppendError::NoSuchEntry(_) => Error::NotFound,
        AppendError::BadLabel(_) => Error::Invalid,
        other => Error::Io(other.errno()),
    }
}

/// Bytes an unprivileged writer may still use on the filesystem holding `path`, and
/// the filesystem's block size.
fn free_bytes(path: &Path) -> Option<(u64, u64)> {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a valid C string and `st` a valid out-pointer.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        (libc::statvfs(c.as_ptr(), &mut st) == 0)
            .then(|| (st.f_bavail as u64 * st.f_frsize as u64, st.f_frsize as u64))
    }
}

/// Is `buf` valid UTF-8 except possibly for an unfinished character at its end?
fn utf8_so_far(buf: &[u8]) -> bool {
    match std::str::from_utf8(buf) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none(),
    }
}

impl SessionView {
    /// Loads the session file; fails as [`Session::open`] does.
    pub fn open(path: &Path, opts: Options) -> std::result::Result<SessionView, LoadError> {
        SessionView::open_with_base(path, opts, 0)
    }

    /// As [`open`](Self::open), with entry inodes numbered from generation `base`
    /// (see `inode`). A caller that drops a view and opens the file again later
    /// passes the old view's [`inode_base`](Self::inode_base) when the file is
    /// unchanged (the same numbers name the same entries), or a base past every number
    /// the old view handed out when it changed (old numbers answer `ESTALE`).
    pub fn open_with_base(
        path: &Path,
        opts: Options,
        base: u64,
    ) -> std::result::Result<SessionView, LoadError> {
        let s = Session::open(path)?;
        let access = s.access().ok();
        Ok(SessionView {
            path: path.to_path_buf(),
            opts,
            state: RwLock::new(State {
                s,
                base,
                tree: Mutex::new(TreeCache::default()),
            }),
            append_lock: Mutex::new(()),
            handles: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            pending: AtomicU64::new(0),
            writers: AtomicU64::new(0),
            label_inos: Mutex::new(LabelInos::default()),
            rendered: Mutex::new(Lru::new(64, RENDERED_CACHE_BYTES)),
            kind_sizes: Mutex::new((base, Vec::new())),
            contexts: Mutex::new(Lru::new(16, CONTEXT_CACHE_BYTES)),
            usage: Mutex::new(None),
            sink: InvalidationSink::default(),
            forks: Mutex::new(HashMap::new()),
            created: Mutex::new(Vec::new()),
            access: Mutex::new(access),
        })
    }

    /// The current inode generation base. Every entry inode handed out so far is
    /// below `inode_base() + (entries + 1) * 64`, entries counted in the model now.
    pub fn inode_base(&self) -> u64 {
        self.state.read().base
    }

    /// The options this view was opened with.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// Runs `f` with the session model (for tools and tests).
    pub fn with_session<T>(&self, f: impl FnOnce(&Session) -> T) -> T {
        f(&self.state.read().s)
    }

    /// Where invalidations are sent (the adapter's notifier thread).
    pub fn set_invalidation_sink(&self, sink: Sender<Invalidation>) {
        self.sink.set(sink);
    }

    /// Catches up with the file (called by the watcher); sends invalidations.
    ///
    /// A file that was replaced or rewritten is indexed again from scratch outside the
    /// lock, so that reads go on from the old index meanwhile; the new index takes its
    /// place under the write lock only if no other reload did first.
    pub fn refresh(&self) -> Result<()> {
        let fresh = {
            let st = self.state.read();
            let generation = st.s.generation();
            let stale = st.s.needs_reload().map_err(load_err)?;
            drop(st);
            match stale {
                true => Some((generation, Session::open(&self.path).map_err(load_err)?)),
                false => None,
            }
        };
        let mut st = self.state.write();
        let before = Snapshot::take(&st);
        let mut change = match fresh {
            Some((generation, f)) if st.s.generation() == generation => st.s.replace_with(f),
            _ => Change::default(),
        };
        // Whatever was appended since (or everything, if another reload won).
        let more = st.s.refresh();
        if let Ok(m) = &more {
            merge(&mut change, m.clone());
        }
        if !change.is_empty() {
            let invs = self.apply_change(&mut st, &before, &change);
            // Queued before `state` is let go (see "Locks").
            self.sink.send(invs);
        }
        self.sink.send(self.access_moved(&st));
        more.map(|_| ()).map_err(load_err)
    }

    /// What the kernel must forget when the session file's owner, group or bits changed
    /// since the last look (a `chmod` under the mount): the attributes it holds may let
    /// someone in whom the disk now refuses. The names at the root are dropped (and
    /// with them everything cached below: a path walked afresh gets the new bits at
    /// each step), and the root's and fixed files' attributes.
    fn access_moved(&self, st: &State) -> Vec<Invalidation> {
        let Ok(now) = st.s.access() else {
            return Vec::new();
        };
        let before = self.access.lock().replace(now);
        if before.is_none_or(|b| b == now) {
            return Vec::new();
        }
        let mut invs: Vec<Invalidation> = [
            ino::ROOT,
            ino::SESSION_JSON,
            ino::NAME,
            ino::TREE,
            ino::ROOT_REPLY,
            ino::BRANCHES,
            ino::LABELS,
            ino::ID_DIR,
            ino::COST,
            ino::COST_JSON,
        ]
        .into_iter()
        .map(Invalidation::Inode)
        .collect();
        let s = &st.s;
        let names = s.roots().iter().map(|&r| entry_name(s, r)).chain(
            [
                "session.json",
                "name",
                "tree",
                "reply",
                "leaf",
                "branches",
                "labels",
                ".id",
                "cost",
                "cost.json",
            ]
            .map(String::from),
        );
        invs.extend(names.map(|name| Invalidation::Entry {
            parent: ino::ROOT,
            name: name.into(),
        }));
        invs
    }

    /// Catches up with lines appended to the file, if nothing holds the index right
    /// now; `false`, doing nothing, if something does, or if the file was replaced or
    /// rewritten (that takes a whole new index: see [`refresh`](Self::refresh)). For a
    /// caller that must not wait for this session's work (dropping it to make room).
    pub fn catch_up_if_idle(&self) -> bool {
        let Some(mut st) = self.state.try_write() else {
            return false;
        };
        if st.s.needs_reload().unwrap_or(true) {
            return false;
        }
        let before = Snapshot::take(&st);
        let Ok(change) = st.s.refresh() else {
            return false;
        };
        if !change.is_empty() {
            let invs = self.apply_change(&mut st, &before, &change);
            // Queued before `state` is let go (see "Locks").
            self.sink.send(invs);
        }
        self.sink.send(self.access_moved(&st));
        true
    }

    /// Updates caches after a change and lists the kernel caches it made stale.
    fn apply_change(
        &self,
        st: &mut State,
        before: &Snapshot,
        change: &Change,
    ) -> Vec<Invalidation> {
        let mut invs = vec![
            Invalidation::Inode(ino::COST),
            Invalidation::Inode(ino::COST_JSON),
            Invalidation::Inode(ino::TREE),
            Invalidation::Inode(ino::LEAF),
            Invalidation::Inode(ino::BRANCHES),
            Invalidation::Inode(ino::ROOT),
        ];
        *st.tree.lock() = TreeCache::default();
        if change.reloaded {
            // Every old inode is stale now: move the generation past all of them.
            st.base += (before.entries as u64 + 1) * ino::SLOTS;
            self.rendered.lock().clear();
            *self.kind_sizes.lock() = (st.base, Vec::new());
            self.contexts.lock().clear();
            for name in &before.root_names {
                invs.push(Invalidation::Entry {
                    parent: ino::ROOT,
                    name: name.into(),
                });
            }
            // Dropping a cached name drops everything cached below it (d_invalidate):
            // the old roots take the nested tree with them, `.id` every direct lookup.
            for fixed in [".id", "branches", "labels", "leaf"] {
                invs.push(Invalidation::Entry {
                    parent: ino::ROOT,
                    name: fixed.into(),
                });
            }
            invs.push(Invalidation::Inode(ino::SESSION_JSON));
            invs.push(Invalidation::Inode(ino::NAME));
            invs.push(Invalidation::Inode(ino::LABELS));
            for l in &before.labels {
                invs.push(Invalidation::Entry {
                    parent: ino::LABELS,
                    name: escape_name(l).into(),
                });
            }
            return invs;
        }
        if !change.rewritten.is_empty() {
            invs.extend(self.forget_rewritten(st, &change.rewritten));
        }
        let s = &st.s;
        if !s.contexts_settled() {
            // The old and the new leaf get new contexts; others may (short TTL).
            self.contexts.lock().clear();
            for l in [before.leaf, s.leaf()].into_iter().flatten() {
                for slot in [Slot::Context, Slot::ContextJson] {
                    invs.push(Invalidation::Inode(entry_ino(st.base, l, slot)));
                }
            }
        }
        for &p in &change.parents {
            if p == NIL {
                continue;
            }
            invs.push(Invalidation::Inode(entry_ino(st.base, p, Slot::NestedDir)));
            invs.push(Invalidation::Inode(entry_ino(st.base, p, Slot::FlatDir)));
            if s.entry(p).child_count == 1 {
                // It was a leaf: it is no longer a branch tip.
                invs.push(Invalidation::Entry {
                    parent: ino::BRANCHES,
                    name: entry_name(s, p).into(),
                });
            }
        }
        if change.rebuilt {
            // Entries may have moved between parents: every listing may be stale.
            for i in 0..s.entries().len() as u32 {
                if s.entry(i).is_node() && s.entry(i).child_count > 0 {
                    invs.push(Invalidation::Inode(entry_ino(st.base, i, Slot::NestedDir)));
                    invs.push(Invalidation::Inode(entry_ino(st.base, i, Slot::FlatDir)));
                }
            }
            // ... and cached names may now lead to entries that left (a duplicate id
            // replaced them) or moved: drop the cached nested tree and `.id`.
            for name in &before.root_names {
                invs.push(Invalidation::Entry {
                    parent: ino::ROOT,
                    name: name.into(),
                });
            }
            invs.push(Invalidation::Entry {
                parent: ino::ROOT,
                name: ".id".into(),
            });
        }
        if change.labels_changed {
            invs.push(Invalidation::Inode(ino::LABELS));
            for l in &before.labels {
                invs.push(Invalidation::Entry {
                    parent: ino::LABELS,
                    name: escape_name(l).into(),
                });
                // The same name may now point elsewhere (cached symlink target).
                invs.push(Invalidation::Inode(self.label_ino(l)));
            }
        }
        if change.name_changed {
            invs.push(Invalidation::Inode(ino::NAME));
        }
        // `edited-by` follows the edits and the leaf: wherever the edit it names
        // changed, it appeared or it went, the entry's listings, the cached name and
        // the link itself are stale.
        let after = s.edited_entries();
        let mut stale: Vec<u32> = before
            .edited
            .iter()
            .filter(|x| !after.contains(x))
            .chain(after.iter().filter(|x| !before.edited.contains(x)))
            .map(|&(t, _)| t)
            .collect();
        stale.sort_unstable();
        stale.dedup();
        for t in stale {
            for (dir, link) in [
                (Slot::NestedDir, Slot::EditedByLink),
                (Slot::FlatDir, Slot::EditedByFlatLink),
            ] {
                let d = entry_ino(st.base, t, dir);
                invs.push(Invalidation::Inode(d));
                invs.push(Invalidation::Entry {
                    parent: d,
                    name: "edited-by".into(),
                });
                invs.push(Invalidation::Inode(entry_ino(st.base, t, link)));
            }
        }
        invs
    }

    /// Entries rewritten in place (a database row updated as its agent wrote it): what
    /// was rendered of them is dropped, and the kernel forgets their files (content,
    /// images, `entry.json`, listings, the names their KIND may have had) and the
    /// contexts and costs of everything below them, which include them.
    fn forget_rewritten(&self, st: &State, rewritten: &[u32]) -> Vec<Invalidation> {
        let s = &st.s;
        let mut invs = Vec::new();
        {
            let mut r = self.rendered.lock();
            let mut k = self.kind_sizes.lock();
            for &i in rewritten {
                r.remove((st.base, i));
                if k.0 == st.base
                    && let Some(sz) = k.1.get_mut(i as usize)
                {
                    *sz = UNKNOWN;
                }
            }
        }
        let kinds: Vec<String> = (0..s.kinds().len())
            .map(|k| s.kinds().name(k as u16).to_string())
            .collect();
        let mut below: Vec<u32> = Vec::new();
        for &i in rewritten {
            if i as usize >= s.entries().len() {
                continue;
            }
            let mut slots = vec![Slot::Kind, Slot::EntryJson, Slot::NestedDir, Slot::FlatDir];
            slots.extend((1..=MAX_IMAGES).map(Slot::Image));
            for slot in slots {
                invs.push(Invalidation::Inode(entry_ino(st.base, i, slot)));
            }
            for dir in [Slot::NestedDir, Slot::FlatDir] {
                for k in &kinds {
                    invs.push(Invalidation::Entry {
                        parent: entry_ino(st.base, i, dir),
                        name: k.into(),
                    });
                }
            }
            let mut stack = vec![i];
            while let Some(j) = stack.pop() {
                below.push(j);
                stack.extend(s.children(j));
            }
        }
        below.sort_unstable();
        below.dedup();
        for j in below {
            for slot in [Slot::Context, Slot::ContextJson, Slot::Cost, Slot::CostJson] {
                invs.push(Invalidation::Inode(entry_ino(st.base, j, slot)));
            }
        }
        invs
    }

    // ----- naming ------------------------------------------------------------------

    fn decode(&self, st: &State, i: u64) -> Result<Node> {
        let n = match i {
            ino::ROOT => Node::Root,
            ino::SESSION_JSON => Node::SessionJson,
            ino::NAME => Node::Name,
            ino::TREE => Node::Tree,
            // A read-only mount has nothing to write, hence no `reply` files.
            ino::ROOT_REPLY if !self.opts.read_only => Node::RootReply,
            ino::LEAF => Node::Leaf,
            ino::BRANCHES => Node::Branches,
            ino::LABELS => Node::Labels,
            ino::ID_DIR => Node::IdDir,
            ino::COST => Node::Cost(false),
            ino::COST_JSON => Node::Cost(true),
            ino::FORKED_FROM if self.fork_links() && st.s.forked_from().is_some() => {
                Node::ForkedFrom
            }
            _ => match decode_entry(st.base, i) {
                None => {
                    let labels = self.label_inos.lock();
                    let name = labels
                        .by_name
                        .iter()
                        .find(|(_, v)| **v == i)
                        .map(|(k, _)| k.clone());
                    match name {
                        Some(ref n) if let Some(prefix) = n.strip_prefix("\0prefix/") => {
                            Self::by_id_prefix(&st.s, prefix).ok_or(Error::NotFound)?;
                            Node::IdPrefix(prefix.to_string())
                        }
                        Some(ref n) if let Some((idx, session)) = fork_member_of_key(n) => {
                            if !self.fork_links()
                                || !st.s.forks_at(idx).iter().any(|f| f.session == session)
                            {
                                return Err(Error::NotFound);
                            }
                            Node::ForkMember(idx, session.to_string())
                        }
                        Some(n) if st.s.labels().iter().any(|(l, _)| *l == n) => Node::Label(n),
                        _ => return Err(Error::NotFound),
                    }
                }
                Some(Err(())) => return Err(Error::Stale),
                Some(Ok((idx, slot))) => {
                    let s = &st.s;
                    if idx as usize >= s.entries().len() || !s.entry(idx).is_node() {
                        return Err(Error::NotFound);
                    }
                    let e = s.entry(idx);
                    let ok = match slot {
                        Slot::ParentLink | Slot::ChildLink => e.parent != NIL,
                        Slot::Reply | Slot::ReplyLink | Slot::Fork | Slot::ForkLink => {
                            !self.opts.read_only
                        }
                        Slot::EditedByLink | Slot::EditedByFlatLink => s.edited_by(idx).is_some(),
                        Slot::RequestLink
                        | Slot::RequestJsonLink
                        | Slot::RequestFlatLink
                        | Slot::RequestJsonFlatLink => s.request_of(idx).is_some(),
                        Slot::ForksDir | Slot::ForksLink => {
                            self.fork_links() && !s.forks_at(idx).is_empty()
                        }
                        _ => true,
                    };
                    if !ok {
                        return Err(Error::NotFound);
                    }
                    Node::E(idx, slot)
                }
            },
        };
        Ok(n)
    }

    fn label_ino(&self, name: &str) -> u64 {
        let mut m = self.label_inos.lock();
        let LabelInos { by_name, handed } = &mut *m;
        *by_name.entry(name.to_string()).or_insert_with(|| {
            *handed += 1;
            ino::LABEL_BASE + *handed - 1
        })
    }

    /// Whether `forked-from` and `forks/` are shown: only in a sessions mount, where
    /// the other sessions they lead to are (a session mounted alone has no neighbours).
    fn fork_links(&self) -> bool {
        self.opts.in_sessions_dir
    }

    /// The inode of `.id/ID/forks/SESSION`: numbered from the labels' counter, under a
    /// key no label name can be (labels hold no NUL).
    fn fork_member_ino(&self, idx: u32, session: &str) -> u64 {
        self.label_ino(&format!("\0forks/{idx}/{session}"))
    }

    /// The target of `forked-from`, from the session's directory: the parent's entry
    /// directory, through its project (`../../PROJECT/SESSION/.id/ENTRY`). Project and
    /// session are named as the sessions mount lists them, the entry as its `.id/` does.
    fn forked_from_target(s: &Session) -> Result<Vec<u8>> {
        let f = s.forked_from().ok_or(Error::NotFound)?;
        let entry = f.entry.as_deref().ok_or(Error::NotFound)?;
        let mut t = String::from("../");
        if let Some(folder) = &f.folder {
            t.push_str("../");
            t.push_str(folder);
            t.push('/');
        }
        t.push_str(&f.session);
        t.push_str("/.id/");
        t.push_str(&escape_id(entry));
        Ok(t.into_bytes())
    }

    /// The target of `.id/ID/forks/SESSION`: that session's directory, from four levels
    /// down in this one (`forks/`, `ID/`, `.id/`, this session).
    fn fork_member_target(s: &Session, idx: u32, session: &str) -> Result<Vec<u8>> {
        let f = s
            .forks_at(idx)
            .into_iter()
            .find(|f| f.session == session)
            .ok_or(Error::NotFound)?;
        let mut t = String::from("../../../../");
        if let Some(folder) = &f.folder {
            t.push_str("../");
            t.push_str(folder);
            t.push('/');
        }
        t.push_str(&f.session);
        Ok(t.into_bytes())
    }

    /// The entry a file name in a directory of entries (root, `.id`, a nested entry)
    /// stands for.
    /// The one entry whose id (or name in the mount) starts with `prefix`, at least
    /// [`MIN_ID_PREFIX`] characters; `None` when none or several do.
    fn by_id_prefix(s: &Session, prefix: &str) -> Option<u32> {
        if prefix.chars().count() < MIN_ID_PREFIX || prefix.contains('/') {
            return None;
        }
        let mut found = None;
        for i in 0..s.entries().len() as u32 {
            if s.entry(i).is_node() && entry_name(s, i).starts_with(prefix) {
                if found.is_some() {
                    return None;
                }
                found = Some(i);
            }
        }
        found
    }

    fn entry_by_name(s: &Session, name: &str, candidates: Option<u32>) -> Option<u32> {
        if let Some(id) = unescape_name(name) {
            return s.find(&id);
        }
        // A long id: find it by its hashed name among the candidates.
        let matches = |i: u32| entry_name(s, i) == name;
        match candidates {
            Some(NIL) => s.roots().iter().copied().find(|&r| matches(r)),
            Some(p) => s.children(p).find(|&c| matches(c)),
            None => (0..s.entries().len() as u32).find(|&i| s.entry(i).is_node() && matches(i)),
        }
    }

    /// Fixed names of an entry directory, in listing order.
    fn entry_files(&self, st: &State, idx: u32, flat: bool) -> Result<Vec<(String, Slot)>> {
        let s = &st.s;
        let mut v = vec![(s.kind_name(idx).to_string(), Slot::Kind)];
        let r = self.rendered(st, idx)?;
        for (n, im) in r
            .images
            .iter()
            .enumerate()
            .take(r.images_shown(MAX_IMAGES as usize))
        {
            v.push((
                format!("image-{}.{}", n + 1, im.ext),
                Slot::Image(n as u32 + 1),
            ));
        }
        if r.full_output.is_some() {
            v.push((FULL_OUTPUT.into(), Slot::Image(MAX_IMAGES)));
        }
        if !self.opts.read_only {
            // In the nested tree, a link to the flat one: `grep -r` and `find -type f`
            // do not open an empty file in every entry, and `echo … > reply` follows it.
            v.push((
                "reply".into(),
                if flat { Slot::Reply } else { Slot::ReplyLink },
            ));
            v.push((
                "fork".into(),
                if flat { Slot::Fork } else { Slot::ForkLink },
            ));
        }
        if self.fork_links() && !s.forks_at(idx).is_empty() {
            v.push((
                "forks".into(),
                if flat {
                    Slot::ForksDir
                } else {
                    Slot::ForksLink
                },
            ));
        }
        let edited = s.edited_by(idx).is_some();
        if flat {
            v.push(("entry.json".into(), Slot::EntryJson));
            v.push(("context".into(), Slot::Context));
            v.push(("context.json".into(), Slot::ContextJson));
            v.push(("cost".into(), Slot::Cost));
            v.push(("cost.json".into(), Slot::CostJson));
            if s.entry(idx).parent != NIL {
                v.push(("parent".into(), Slot::ParentLink));
            }
            if edited {
                v.push(("edited-by".into(), Slot::EditedByFlatLink));
            }
        } else {
            v.push(("entry.json".into(), Slot::EntryJsonLink));
            v.push(("context".into(), Slot::ContextLink));
            v.push(("context.json".into(), Slot::ContextJsonLink));
            v.push(("cost".into(), Slot::CostLink));
            v.push(("cost.json".into(), Slot::CostJsonLink));
            if edited {
                v.push(("edited-by".into(), Slot::EditedByLink));
            }
        }
        if s.request_of(idx).is_some() {
            let (text, json) = if flat {
                (Slot::RequestFlatLink, Slot::RequestJsonFlatLink)
            } else {
                (Slot::RequestLink, Slot::RequestJsonLink)
            };
            v.push(("request".into(), text));
            v.push(("request.json".into(), json));
        }
        Ok(v)
    }

    fn rendered(&self, st: &State, idx: u32) -> Result<Arc<Rendered>> {
        let key = (st.base, idx);
        if let Some(r) = self.rendered.lock().get(key) {
            return Ok(r);
        }
        let r = content::entry_content(&st.s, idx)?;
        if let Ok(len) = u32::try_from(r.text.len())
            && len != UNKNOWN
        {
            let mut k = self.kind_sizes.lock();
            if k.0 != st.base {
                *k = (st.base, Vec::new());
            }
            let i = idx as usize;
            if k.1.len() <= i {
                k.1.resize(i + 1, UNKNOWN);
            }
            k.1[i] = len;
        }
        let r = Arc::new(r);
        self.rendered.lock().put(key, r.clone());
        Ok(r)
    }

    /// The size of entry `idx`'s content file: remembered once rendered (see
    /// `kind_sizes`), rendered otherwise.
    fn kind_size(&self, st: &State, idx: u32) -> Result<u64> {
        {
            let k = self.kind_sizes.lock();
            if k.0 == st.base
                && let Some(&n) = k.1.get(idx as usize)
                && n != UNKNOWN
            {
                return Ok(n as u64);
            }
        }
        Ok(self.rendered(st, idx)?.text.len() as u64)
    }

    /// Entry `idx`'s context, built (and `context.json` or, with `json` false, the
    /// readable `context` rendered) when not cached.
    fn context(&self, st: &State, idx: u32, json: bool) -> Result<Arc<Ctx>> {
        let key = (st.base, idx);
        if let Some(c) = self.contexts.lock().get(key) {
            return Ok(c);
        }
        let messages = st.s.context_messages(idx)?;
        let preamble = st.s.context_preamble(idx);
        let c = Arc::new(Ctx::new(messages, st.s.context_renderer(), preamble, json));
        self.contexts.lock().put(key, c.clone());
        Ok(c)
    }

    /// Whether answer `idx`'s request held more than the context of the entry it
    /// answered (`Session::request_tail`: a Codex compaction summary's request ended
    /// with the compaction prompt). Then `.id/ID/request` and `request.json` are files
    /// of their own, and the nested `request` links lead to them.
    fn request_is_file(st: &State, idx: u32) -> bool {
        st.s.request_of(idx).is_some() && !st.s.request_tail(idx).is_empty()
    }

    /// Such a request: the context of the entry answered, then what followed it.
    fn request_ctx(&self, st: &State, idx: u32, json: bool) -> Result<Arc<Ctx>> {
        let r = st.s.request_of(idx).ok_or(Error::NotFound)?;
        let mut messages = st.s.context_messages(r)?;
        messages.extend(st.s.request_tail(idx));
        let preamble = st.s.context_preamble(r);
        Ok(Arc::new(Ctx::new(
            messages,
            st.s.context_renderer(),
            preamble,
            json,
        )))
    }

    /// The `tree` file, rendered once per change of the session.
    /// With `hold`, a drawing made now is kept until it has been read whole (see
    /// [`TreeCache::held`]).
    /// The usage of every entry of the session as it is now (read once per state of
    /// the file, with the process's price table).
    fn usage_table(&self, st: &State) -> Arc<usage::Table> {
        let s = &st.s;
        let key = (
            st.base,
            s.generation(),
            s.scanned_bytes(),
            s.entries().len(),
        );
        let mut c = self.usage.lock();
        if let Some((k, t)) = &*c
            && *k == key
        {
            return t.clone();
        }
        let t = Arc::new(usage::Table::build(s, &usage::prices::global()));
        *c = Some((key, t.clone()));
        t
    }

    fn is_cost(node: &Node) -> bool {
        matches!(
            node,
            Node::Cost(_) | Node::E(_, Slot::Cost | Slot::CostJson)
        )
    }

    /// A `cost` file's attributes. Its size is exact from the first `stat`: `ls -l`
    /// reads the session's usage once (the table is then kept for every `cost` of the
    /// session until the file changes), as `cat` would; a size of 0 until then would
    /// read as an empty file.
    fn cost_attr(
        &self,
        st: &State,
        node: &Node,
        mtime: SystemTime,
        i: u64,
        access: Access,
    ) -> Result<Attr> {
        let (size, ttl) = (self.cost_bytes(st, node)?.len() as u64, SHORT);
        Ok(Attr::shown(
            i,
            FileKind::File,
            size,
            mtime,
            ttl,
            access,
            false,
        ))
    }

    /// What a `cost` file holds (root: the session; in an entry: the entry and the
    /// total to it).
    fn cost_bytes(&self, st: &State, node: &Node) -> Result<Vec<u8>> {
        let t = self.usage_table(st);
        let s = &st.s;
        Ok(match *node {
            Node::Cost(false) => t.session_text(s),
            Node::Cost(true) => t.session_json(s),
            Node::E(idx, Slot::Cost) => t.entry_text(s, idx),
            Node::E(idx, Slot::CostJson) => t.entry_json(s, idx),
            _ => return Err(Error::Invalid),
        }
        .into_bytes())
    }

    fn tree_bytes(&self, st: &State, hold: bool) -> Result<Arc<Vec<u8>>> {
        let mut cache = st.tree.lock();
        if let Some(t) = cache.drawn.upgrade() {
            return Ok(t);
        }
        let t = Arc::new(tree::render_tree(&st.s)?);
        cache.size = Some(t.len() as u64);
        cache.drawn = Arc::downgrade(&t);
        // Every open reads through us: a drawing of moderate size is kept until the
        // next change, so that `cat tree` twice draws once.
        if t.len() <= KEEP_TREE_BYTES {
            cache.kept = Some(t.clone());
        }
        if hold {
            cache.held = Some((t.clone(), 0));
        }
        Ok(t)
    }

    /// What `name` reads: the session's name, one line, its control characters
    /// escaped (`\u{1b}`): a title can be written by the model (Claude Code's
    /// `ai-title`) and must not drive the terminal of whoever `cat`s it.
    fn name_bytes(s: &Session) -> Vec<u8> {
        match s.name() {
            Some(n) => format!("{}\n", crate::model::core::text::escape_controls(n)).into_bytes(),
            None => Vec::new(),
        }
    }

    /// The target of a symlink in entry `idx`'s nested directory to `.id/ID/file`.
    fn symlink_to_id(&self, st: &State, idx: u32, file: &str) -> Vec<u8> {
        let id = entry_name(&st.s, idx);
        self.link_from_nested(st, idx, &format!("{id}/{file}"))
    }

    /// The target of a symlink in entry `idx`'s nested directory to `.id/REST`:
    /// relative (one `../` per level), or through the mount point where that would
    /// pass the kernel's limit.
    fn link_from_nested(&self, st: &State, idx: u32, rest: &str) -> Vec<u8> {
        let depth = st.s.depth(idx);
        let rel_len = depth * 3 + 4 + rest.len();
        if rel_len < 4000 {
            let mut t = "../".repeat(depth);
            t.push_str(".id/");
            t.push_str(rest);
            t.into_bytes()
        } else {
            let mut p = self.opts.mount_point.clone().into_os_string().into_vec();
            p.extend_from_slice(format!("/.id/{rest}").as_bytes());
            p
        }
    }

    /// The `request` (`request.json` with `json`) link of answer `idx`, from its nested
    /// directory or from `.id/`: to the `context` of the entry it answered.
    fn request_link(&self, st: &State, idx: u32, flat: bool, json: bool) -> Result<Vec<u8>> {
        let r = st.s.request_of(idx).ok_or(Error::NotFound)?;
        if Self::request_is_file(st, idx) {
            if flat {
                return Err(Error::Invalid);
            }
            let file = if json { "request.json" } else { "request" };
            return Ok(self.symlink_to_id(st, idx, file));
        }
        let file = if json { "context.json" } else { "context" };
        let id = entry_name(&st.s, r);
        Ok(if flat {
            format!("../{id}/{file}").into_bytes()
        } else {
            self.link_from_nested(st, idx, &format!("{id}/{file}"))
        })
    }

    /// The `edited-by` link of entry `idx`, from its nested directory or from `.id/`.
    fn edited_by_link(&self, st: &State, idx: u32, flat: bool) -> Result<Vec<u8>> {
        let e = st.s.edited_by(idx).ok_or(Error::NotFound)?;
        let id = entry_name(&st.s, e);
        Ok(if flat {
            format!("../{id}").into_bytes()
        } else {
            self.link_from_nested(st, idx, &id)
        })
    }

    // ----- attributes -------------------------------------------------------------

    /// Whether the mount writes through `w` here: not on a read-only mount, and only
    /// where the agent would take it ([`Session::refusal`]).
    fn writes(&self, s: &Session, w: Write) -> bool {
        !self.opts.read_only && s.refusal(w).is_none()
    }

    fn attr_of(&self, st: &State, i: u64, node: &Node) -> Result<Attr> {
        let s = &st.s;
        // Who may do what: the session's owner, group and bits, for every inode.
        let access = s.access()?;
        let last_ts = s
            .leaf()
            .map(|l| s.entry(l).ts)
            .unwrap_or(s.header().timestamp_ms);
        let header_time = time_of(s.header().timestamp_ms);
        let dir = |mtime, writes, ttl| Attr::shown(i, FileKind::Dir, 0, mtime, ttl, access, writes);
        let file = |size, mtime, writes, ttl| {
            Attr::shown(i, FileKind::File, size, mtime, ttl, access, writes)
        };
        let link =
            |size, mtime, ttl| Attr::shown(i, FileKind::Symlink, size, mtime, ttl, access, false);
        Ok(match node {
            Node::Root => dir(header_time, false, SHORT),
            Node::SessionJson => file(s.session_json_len(), header_time, false, FOREVER),
            Node::Name => file(
                Self::name_bytes(s).len() as u64,
                time_of(last_ts),
                self.writes(s, Write::Name),
                SHORT,
            ),
            // Drawing the tree means reading every entry of the session: not something
            // an `ls` of the root should pay for. Its size is known once it has been
            // drawn (0 before; see `open_file_as` for how reads still get all of it).
            Node::Tree => {
                let size = st.tree.lock().size.unwrap_or(0);
                // Not cached by the kernel: the size changes when it is first read.
                file(size, time_of(last_ts), false, Duration::ZERO)
            }
            Node::RootReply => file(0, header_time, self.writes(s, Write::Reply(None)), FOREVER),
            Node::Leaf => {
                let l = s.leaf().ok_or(Error::NotFound)?;
                let t = format!(".id/{}", entry_name(s, l));
                link(t.len() as u64, time_of(last_ts), SHORT)
            }
            Node::Branches => dir(time_of(last_ts), false, SHORT),
            // Claude Code and Codex have no labels: their `labels/` is empty and read-only.
            Node::Labels => dir(time_of(last_ts), self.writes(s, Write::Label), SHORT),
            Node::IdDir => dir(header_time, false, FOREVER),
            // Changes with every append: read afresh (see `open_file_as`).
            Node::Cost(_) => self.cost_attr(st, node, time_of(last_ts), i, access)?,
            Node::ForkedFrom => link(
                Self::forked_from_target(s)?.len() as u64,
                header_time,
                FOREVER,
            ),
            Node::ForkMember(idx, session) => link(
                Self::fork_member_target(s, *idx, session)?.len() as u64,
                time_of(s.entry(*idx).ts),
                SHORT,
            ),
            // A later entry can make the prefix ambiguous: short-lived.
            Node::IdPrefix(prefix) => {
                let e = Self::by_id_prefix(s, prefix).ok_or(Error::NotFound)?;
                link(entry_name(s, e).len() as u64, time_of(s.entry(e).ts), SHORT)
            }
            Node::Label(name) => {
                let (_, target) = s.label_entry(name).ok_or(Error::NotFound)?;
                let t = format!("../.id/{}", entry_name(s, target));
                let (_, le) = s.label_entry(name).ok_or(Error::NotFound)?;
                link(t.len() as u64, time_of(s.entry(le).ts), SHORT)
            }
            Node::E(idx, slot) => {
                let idx = *idx;
                let mtime = time_of(s.entry(idx).ts);
                let context_ttl = if s.contexts_settled() { FOREVER } else { SHORT };
                match slot {
                    Slot::NestedDir => dir(mtime, false, FOREVER),
                    Slot::FlatDir => dir(mtime, false, FOREVER),
                    // Forks are made after the entry: its listing grows.
                    Slot::ForksDir => dir(mtime, false, SHORT),
                    Slot::Kind => file(self.kind_size(st, idx)?, mtime, false, FOREVER),
                    Slot::Image(n) => {
                        let r = self.rendered(st, idx)?;
                        if *n == MAX_IMAGES
                            && let Some(p) = &r.full_output
                        {
                            // A file of its own: its size, and its own bits too.
                            let md = s.open_side(p)?.metadata()?;
                            let own = access.narrowed_by(Access::of(&md));
                            return Ok(Attr::shown(
                                i,
                                FileKind::File,
                                md.len(),
                                mtime,
                                FOREVER,
                                own,
                                false,
                            ));
                        }
                        let im = r.images.get(*n as usize - 1).ok_or(Error::NotFound)?;
                        file(im.data.len() as u64, mtime, false, FOREVER)
                    }
                    Slot::Reply => file(0, mtime, self.writes(s, Write::Reply(Some(idx))), FOREVER),
                    Slot::EntryJson => file(s.entry(idx).len as u64 + 1, mtime, false, FOREVER),
                    Slot::Context => file(
                        self.context(st, idx, false)?.text().len() as u64,
                        mtime,
                        false,
                        context_ttl,
                    ),
                    Slot::ContextJson => file(
                        self.context(st, idx, true)?.json().len() as u64,
                        mtime,
                        false,
                        context_ttl,
                    ),
                    // A Claude Code reply still being written changes the usage of its
                    // first line and the totals below it: short-lived.
                    Slot::Cost | Slot::CostJson => self.cost_attr(st, node, mtime, i, access)?,
                    Slot::EntryJsonLink
                    | Slot::ContextLink
                    | Slot::ContextJsonLink
                    | Slot::CostLink
                    | Slot::CostJsonLink
                    | Slot::ReplyLink
                    | Slot::ForkLink
                    | Slot::ForksLink => {
                        let file = slot.file_in_id().ok_or(Error::Invalid)?;
                        link(
                            self.symlink_to_id(st, idx, file).len() as u64,
                            mtime,
                            FOREVER,
                        )
                    }
                    // What it reads changes with every fork: never cached.
                    Slot::Fork => file(
                        self.fork_text(s, idx).len() as u64,
                        mtime,
                        self.writes(s, Write::Fork(idx)),
                        Duration::ZERO,
                    ),
                    Slot::ParentLink => {
                        let p = s.entry(idx).parent;
                        link(3 + entry_name(s, p).len() as u64, mtime, FOREVER)
                    }
                    Slot::ChildLink => link(3 + entry_name(s, idx).len() as u64, mtime, FOREVER),
                    Slot::BranchLink => link(7 + entry_name(s, idx).len() as u64, mtime, SHORT),
                    // A request of its own (see `request_is_file`): a file in `.id/ID/`.
                    Slot::RequestFlatLink | Slot::RequestJsonFlatLink
                        if Self::request_is_file(st, idx) =>
                    {
                        let json = *slot == Slot::RequestJsonFlatLink;
                        let c = self.request_ctx(st, idx, json)?;
                        let len = if json { c.json().len() } else { c.text().len() };
                        file(len as u64, mtime, false, context_ttl)
                    }
                    // The request an answer answered never changes.
                    Slot::RequestLink
                    | Slot::RequestJsonLink
                    | Slot::RequestFlatLink
                    | Slot::RequestJsonFlatLink => {
                        let flat =
                            matches!(slot, Slot::RequestFlatLink | Slot::RequestJsonFlatLink);
                        let json =
                            matches!(slot, Slot::RequestJsonLink | Slot::RequestJsonFlatLink);
                        let t = self.request_link(st, idx, flat, json)?;
                        link(t.len() as u64, mtime, FOREVER)
                    }
                    // Which edit it names follows the leaf: short-lived, and invalidated.
                    Slot::EditedByLink | Slot::EditedByFlatLink => {
                        let flat = *slot == Slot::EditedByFlatLink;
                        let t = self.edited_by_link(st, idx, flat)?;
                        let e = s.edited_by(idx).ok_or(Error::NotFound)?;
                        link(t.len() as u64, time_of(s.entry(e).ts), SHORT)
                    }
                }
            }
        })
    }

    pub fn getattr(&self, i: u64) -> Result<Attr> {
        let st = self.state.read();
        let node = self.decode(&st, i)?;
        self.attr_of(&st, i, &node)
    }

    /// `getattr` asked for by a read going past the size the kernel knows (the request
    /// names the open file). On a mount that answers no `open`, this is where `tree`
    /// learns its size: it is drawn now (and held for the reads that follow).
    pub fn getattr_reading(&self, i: u64) -> Result<Attr> {
        let st = self.state.read();
        let node = self.decode(&st, i)?;
        if node == Node::Tree && st.tree.lock().size.is_none() {
            self.tree_bytes(&st, true)?;
        }
        if Self::is_cost(&node) {
            self.usage_table(&st);
        }
        self.attr_of(&st, i, &node)
    }

    pub fn lookup(&self, parent: u64, name: &OsStr) -> Result<Attr> {
        let st = self.state.read();
        let (i, node) = self.lookup_node(&st, parent, name)?;
        self.attr_of(&st, i, &node)
    }

    fn lookup_node(&self, st: &State, parent: u64, name: &OsStr) -> Result<(u64, Node)> {
        let s = &st.s;
        let pnode = self.decode(st, parent)?;
        let name = name.to_str().ok_or(Error::NotFound)?;
        let found = match pnode {
            Node::Root => match name {
                "session.json" => Some((ino::SESSION_JSON, Node::SessionJson)),
                "name" => Some((ino::NAME, Node::Name)),
                "tree" => Some((ino::TREE, Node::Tree)),
                "reply" if !self.opts.read_only => Some((ino::ROOT_REPLY, Node::RootReply)),
                "leaf" if s.leaf().is_some() => Some((ino::LEAF, Node::Leaf)),
                "branches" => Some((ino::BRANCHES, Node::Branches)),
                "labels" => Some((ino::LABELS, Node::Labels)),
                ".id" => Some((ino::ID_DIR, Node::IdDir)),
                "cost" => Some((ino::COST, Node::Cost(false))),
                "cost.json" => Some((ino::COST_JSON, Node::Cost(true))),
                "forked-from" if self.fork_links() && s.forked_from().is_some() => {
                    Some((ino::FORKED_FROM, Node::ForkedFrom))
                }
                _ => Self::entry_by_name(s, name, Some(NIL))
                    .filter(|&e| s.entry(e).parent == NIL)
                    .map(|e| {
                        (
                            entry_ino(st.base, e, Slot::NestedDir),
                            Node::E(e, Slot::NestedDir),
                        )
                    }),
            },
            Node::IdDir => match Self::entry_by_name(s, name, None) {
                Some(e) => Some((
                    entry_ino(st.base, e, Slot::FlatDir),
                    Node::E(e, Slot::FlatDir),
                )),
                // A unique prefix of an id: a link to the entry.
                None => Self::by_id_prefix(s, name).map(|_| {
                    (
                        self.label_ino(&id_prefix_key(name)),
                        Node::IdPrefix(name.to_string()),
                    )
                }),
            },
            // Only tips are listed, but any entry resolves: a tip that just got a
            // child must not vanish between a reader's readdir and its stat.
            Node::Branches => Self::entry_by_name(s, name, None).map(|e| {
                (
                    entry_ino(st.base, e, Slot::BranchLink),
                    Node::E(e, Slot::BranchLink),
                )
            }),
            Node::Labels => {
                Self::label_named(s, name).map(|label| (self.label_ino(&label), Node::Label(label)))
            }
            Node::E(idx, Slot::ForksDir) => s
                .forks_at(idx)
                .into_iter()
                .find(|f| f.session == name)
                .map(|f| {
                    (
                        self.fork_member_ino(idx, &f.session),
                        Node::ForkMember(idx, f.session),
                    )
                }),
            Node::E(idx, slot @ (Slot::NestedDir | Slot::FlatDir)) => {
                let flat = slot == Slot::FlatDir;
                let fixed = self.entry_files(st, idx, flat)?;
                if let Some((_, sl)) = fixed.iter().find(|(n, _)| n == name) {
                    Some((entry_ino(st.base, idx, *sl), Node::E(idx, *sl)))
                } else if is_image_name(name) {
                    None
                } else {
                    Self::entry_by_name(s, name, Some(idx))
                        .filter(|&c| s.entry(c).parent == idx)
                        .map(|c| {
                            if flat {
                                (
                                    entry_ino(st.base, c, Slot::ChildLink),
                                    Node::E(c, Slot::ChildLink),
                                )
                            } else {
                                (
                                    entry_ino(st.base, c, Slot::NestedDir),
                                    Node::E(c, Slot::NestedDir),
                                )
                            }
                        })
                }
            }
            Node::E(..)
            | Node::SessionJson
            | Node::Name
            | Node::Tree
            | Node::Cost(_)
            | Node::RootReply
            | Node::Leaf
            | Node::Label(_)
            | Node::ForkedFrom
            | Node::ForkMember(..)
            | Node::IdPrefix(_) => {
                return Err(Error::NotDir);
            }
        };
        found.ok_or(Error::NotFound)
    }

    pub fn readlink(&self, i: u64) -> Result<Vec<u8>> {
        let st = self.state.read();
        let s = &st.s;
        let node = self.decode(&st, i)?;
        let id_of = |e: u32| entry_name(s, e);
        Ok(match node {
            Node::Leaf => format!(".id/{}", id_of(s.leaf().ok_or(Error::NotFound)?)).into_bytes(),
            Node::Label(name) => {
                let (t, _) = s.label_entry(&name).ok_or(Error::NotFound)?;
                format!("../.id/{}", id_of(t)).into_bytes()
            }
            Node::ForkedFrom => Self::forked_from_target(s)?,
            Node::ForkMember(idx, session) => Self::fork_member_target(s, idx, &session)?,
            Node::IdPrefix(prefix) => {
                id_of(Self::by_id_prefix(s, &prefix).ok_or(Error::NotFound)?).into_bytes()
            }
            Node::E(idx, slot) => match slot {
                _ if let Some(file) = slot.file_in_id() => self.symlink_to_id(&st, idx, file),
                Slot::ParentLink => format!("../{}", id_of(s.entry(idx).parent)).into_bytes(),
                Slot::ChildLink => format!("../{}", id_of(idx)).into_bytes(),
                Slot::BranchLink => format!("../.id/{}", id_of(idx)).into_bytes(),
                Slot::EditedByLink => self.edited_by_link(&st, idx, false)?,
                Slot::EditedByFlatLink => self.edited_by_link(&st, idx, true)?,
                Slot::RequestLink => self.request_link(&st, idx, false, false)?,
                Slot::RequestJsonLink => self.request_link(&st, idx, false, true)?,
                Slot::RequestFlatLink => self.request_link(&st, idx, true, false)?,
                Slot::RequestJsonFlatLink => self.request_link(&st, idx, true, true)?,
                _ => return Err(Error::Invalid),
            },
            _ => return Err(Error::Invalid),
        })
    }

    // ----- listings ---------------------------------------------------------------

    /// The whole listing from `offset`, at most `READDIR_BATCH` entries.
    fn listing(&self, st: &State, i: u64, offset: u64) -> Result<Vec<(u64, DirEntry)>> {
        let s = &st.s;
        let node = self.decode(st, i)?;
        let mut l = Lister {
            off: offset as usize,
            pos: 0,
            out: Vec::new(),
        };
        let parent_of_dir = match &node {
            Node::E(idx, Slot::NestedDir) => match s.entry(*idx).parent {
                NIL => ino::ROOT,
                p => entry_ino(st.base, p, Slot::NestedDir),
            },
            Node::E(_, Slot::FlatDir) => ino::ID_DIR,
            Node::E(idx, Slot::ForksDir) => entry_ino(st.base, *idx, Slot::FlatDir),
            _ => ino::ROOT,
        };
        match node {
            Node::Root
            | Node::IdDir
            | Node::Branches
            | Node::Labels
            | Node::E(_, Slot::NestedDir | Slot::FlatDir | Slot::ForksDir) => {
                l.push(i, FileKind::Dir, ".".into());
                l.push(parent_of_dir, FileKind::Dir, "..".into());
            }
            _ => return Err(Error::NotDir),
        }
        match node {
            Node::Root => {
                let fixed: [(&str, u64, FileKind); 11] = [
                    ("session.json", ino::SESSION_JSON, FileKind::File),
                    ("name", ino::NAME, FileKind::File),
                    ("tree", ino::TREE, FileKind::File),
                    ("cost", ino::COST, FileKind::File),
                    ("cost.json", ino::COST_JSON, FileKind::File),
                    ("reply", ino::ROOT_REPLY, FileKind::File),
                    ("leaf", ino::LEAF, FileKind::Symlink),
                    ("branches", ino::BRANCHES, FileKind::Dir),
                    ("labels", ino::LABELS, FileKind::Dir),
                    (".id", ino::ID_DIR, FileKind::Dir),
                    ("forked-from", ino::FORKED_FROM, FileKind::Symlink),
                ];
                for (n, fi, k) in fixed {
                    if (n == "leaf" && s.leaf().is_none())
                        || (n == "reply" && self.opts.read_only)
                        || (n == "forked-from" && !(self.fork_links() && s.forked_from().is_some()))
                    {
                        continue;
                    }
                    if !l.push(fi, k, n.into()) {
                        return Ok(l.out);
                    }
                }
                l.push_entries(s, st.base, s.roots(), Slot::NestedDir, FileKind::Dir);
            }
            Node::IdDir => {}
            Node::Branches => {
                l.push_entries(s, st.base, &s.leaves(), Slot::BranchLink, FileKind::Symlink);
            }
            Node::Labels => {
                let mut names: Vec<&str> = s.labels().into_iter().map(|(l, _)| l).collect();
                names.dedup();
                let skip = l.skip(names.len());
                for name in names.into_iter().skip(skip) {
                    let li = self.label_ino(name);
                    if !l.push(li, FileKind::Symlink, escape_name(name).into()) {
                        break;
                    }
                }
            }
            Node::E(idx, Slot::ForksDir) => {
                let forks = s.forks_at(idx);
                let skip = l.skip(forks.len());
                for f in forks.into_iter().skip(skip) {
                    let fi = self.fork_member_ino(idx, &f.session);
                    if !l.push(fi, FileKind::Symlink, f.session.into()) {
                        break;
                    }
                }
            }
            Node::E(idx, slot) => {
                let flat = slot == Slot::FlatDir;
                let files = self.entry_files(st, idx, flat)?;
                for (n, sl) in files {
                    let kind = match sl {
                        Slot::RequestFlatLink | Slot::RequestJsonFlatLink
                            if Self::request_is_file(st, idx) =>
                        {
                            FileKind::File
                        }
                        Slot::EntryJsonLink
                        | Slot::ContextLink
                        | Slot::ContextJsonLink
                        | Slot::CostLink
                        | Slot::CostJsonLink
                        | Slot::ReplyLink
                        | Slot::ForkLink
                        | Slot::ForksLink
                        | Slot::ParentLink
                        | Slot::EditedByLink
                        | Slot::EditedByFlatLink
                        | Slot::RequestLink
                        | Slot::RequestJsonLink
                        | Slot::RequestFlatLink
                        | Slot::RequestJsonFlatLink => FileKind::Symlink,
                        Slot::ForksDir => FileKind::Dir,
                        _ => FileKind::File,
                    };
                    if !l.push(entry_ino(st.base, idx, sl), kind, n.into()) {
                        return Ok(l.out);
                    }
                }
                let mut kids = s.children(idx);
                let skip = l.off.saturating_sub(l.pos);
                for _ in 0..skip {
                    if kids.next().is_none() {
                        break;
                    }
                    l.pos += 1;
                }
                for c in kids {
                    let name = entry_name(s, c);
                    let (slot, kind) = if flat {
                        (Slot::ChildLink, FileKind::Symlink)
                    } else {
                        (Slot::NestedDir, FileKind::Dir)
                    };
                    if !l.push(entry_ino(st.base, c, slot), kind, name.into()) {
                        break;
                    }
                }
            }
            _ => unreachable!("checked above"),
        }
        Ok(l.out)
    }

    /// Entries from `offset` on; each with the offset of the entry after it.
    pub fn readdir(&self, i: u64, offset: u64) -> Result<Vec<(u64, DirEntry)>> {
        let st = self.state.read();
        self.listing(&st, i, offset)
    }

    /// As `readdir`, with each entry's attributes (for readdirplus).
    pub fn readdirplus(&self, i: u64, offset: u64) -> Result<Vec<(u64, DirEntry, Attr)>> {
        let st = self.state.read();
        let list = self.listing(&st, i, offset)?;
        let mut out = Vec::with_capacity(list.len());
        for (off, d) in list {
            let node = self.decode(&st, d.ino)?;
            let a = self.attr_of(&st, d.ino, &node)?;
            out.push((off, d, a));
        }
        Ok(out)
    }

    // ----- files --------------------------------------------------------------------

    fn new_fh(&self, h: Handle) -> u64 {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        self.handles.lock().insert(fh, h);
        fh
    }

    /// `write`: opened for writing; `truncate`: `O_TRUNC`.
    pub fn open_file(&self, i: u64, write: bool, truncate: bool) -> Result<Opened> {
        let mode = OpenMode {
            write,
            truncate,
            append: false,
        };
        self.open_file_as(i, mode, None)
    }

    /// Opens a file as `open(2)` with `mode` would, knowing the calling thread (FUSE's
    /// `pid`), so that only the opening process's `close` appends what was written.
    ///
    /// A writer of `name` opened without `O_TRUNC` starts from the current name, as a
    /// file would: `>>` continues it, a write at offset 0 overwrites its start. With
    /// `O_TRUNC` it starts empty, and closing it clears the name even if nothing was
    /// written (`: > name`). A writer of `reply` always starts empty.
    pub fn open_file_as(&self, i: u64, mode: OpenMode, pid: Option<u32>) -> Result<Opened> {
        let st = self.state.read();
        let node = self.decode(&st, i)?;
        if mode.write {
            let (target, w) = match &node {
                Node::RootReply => (WriteTarget::Reply(None), Write::Reply(None)),
                Node::E(idx, Slot::Reply) => (
                    WriteTarget::Reply(Some(st.s.id_string(*idx))),
                    Write::Reply(Some(*idx)),
                ),
                Node::Name => (WriteTarget::Name, Write::Name),
                Node::E(idx, Slot::Fork) => (
                    WriteTarget::Fork {
                        id: st.s.id_string(*idx),
                        made: false,
                    },
                    Write::Fork(*idx),
                ),
                Node::Root | Node::IdDir | Node::Branches | Node::Labels => {
                    return Err(Error::IsDir);
                }
                Node::E(_, Slot::NestedDir | Slot::FlatDir) => return Err(Error::IsDir),
                _ => {
                    return Err(self.refusal());
                }
            };
            if self.opts.read_only {
                return Err(Error::ReadOnly);
            }
            // Known to fail: fails here, where the shell sees it (the file shows no
            // write bit, and the kernel says the same to everyone but root).
            if let Some(why) = st.s.refusal(w) {
                self.log_refused_open(&target, &why);
                if let WriteTarget::Fork { id, .. } = &target {
                    self.forks
                        .lock()
                        .insert(id.clone(), format!("error: {why}\n").into_bytes());
                }
                return Err(Error::Access);
            }
            // What only now can say (the agent's database is busy, or the agent is
            // writing to the session itself): the open fails with the agent's errno.
            if let Write::Reply(at) = w
                && let Some(r) = st.s.refuse_reply_at(at)
            {
                log::info!("{}: reply refused at open: {r}", self.path.display());
                return Err(Error::Io(r.errno()));
            }
            if let WriteTarget::Fork { id, .. } = &target {
                let id = id.clone();
                drop(st);
                return self.open_fork(id, mode, pid);
            }
            // What the agent knows already cannot be written (another program holds the
            // session): refused at `open`, which the shell reports.
            if let WriteTarget::Reply(p) = &target {
                let at = p.as_deref().and_then(|id| st.s.find(id));
                if let Some((errno, why)) = st.s.reply_refusal(at) {
                    log::warn!("{}: a reply refused: {why}", self.path.display());
                    return Err(Error::Io(errno));
                }
            }
            if self.writers.fetch_add(1, Ordering::Relaxed) as usize >= MAX_WRITERS {
                self.writers.fetch_sub(1, Ordering::Relaxed);
                return Err(Error::TooManyOpen);
            }
            let buf = match target {
                WriteTarget::Name if !mode.truncate => Self::name_bytes(&st.s),
                _ => Vec::new(),
            };
            self.pending.fetch_add(buf.len() as u64, Ordering::Relaxed);
            let fh = self.new_fh(Handle::Write {
                target,
                base: buf.len(),
                buf,
                start: 0,
                append: mode.append,
                changed: false,
                cleared: mode.truncate,
                opener: pid.map(tgid_of),
                failed: None,
            });
            return Ok(Opened {
                fh,
                keep_cache: false,
                direct_io: true,
            });
        }
        if node == Node::Tree {
            // Every read of a descriptor comes to us (direct I/O) and is cut from the
            // one drawing it started with: the kernel's pages cannot mix drawings.
            // They could: its pages of the old drawing outlive a change until the
            // invalidation lands, while the size it serves them up to is the new one
            // (attributes are never cached), and a reply to a read made just before
            // a change can refill them after it. Drawn before: the drawing is taken
            // on the first read (kept for a while, see `tree_bytes`). Not drawn yet:
            // draw it now, so that its size is known (the kernel asked for it as 0 at
            // lookup).
            let drawn = st.tree.lock().size.is_some();
            let h = match drawn {
                true => Handle::Tree(None, st.base),
                false => Handle::Tree(Some(self.tree_bytes(&st, false)?), st.base),
            };
            return Ok(Opened {
                fh: self.new_fh(h),
                keep_cache: false,
                direct_io: true,
            });
        }
        if let Node::E(idx, Slot::Fork) = node {
            let text = self.fork_text(&st.s, idx);
            return Ok(Opened {
                fh: self.new_fh(Handle::Read(Content::Bytes(Arc::new(text)))),
                keep_cache: false,
                direct_io: true,
            });
        }
        if Self::is_cost(&node) {
            // Its size is known once the session's usage is read (see `cost_attr`), but
            // the kernel may still hold the 0 it was told at lookup: attributes with no
            // lifetime pass for valid until the clock ticks, and a `cat` that looks the
            // file up, opens it and reads within one tick was served nothing. So, as
            // `tree`'s, every read of the descriptor comes to us (direct I/O), cut from
            // the text made now.
            let text = self.cost_bytes(&st, &node)?;
            return Ok(Opened {
                fh: self.new_fh(Handle::Read(Content::Bytes(Arc::new(text)))),
                keep_cache: false,
                direct_io: true,
            });
        }
        let keep_cache = match node {
            // Its text changes with the session: read afresh at every open. So does
            // `session.json`'s when the file is replaced (a fixed inode, unlike an
            // entry's: the kernel could keep the old text past the reload).
            Node::Name
            | Node::SessionJson
            | Node::Cost(_)
            | Node::E(_, Slot::Cost | Slot::CostJson) => false,
            Node::RootReply
            | Node::E(_, Slot::Kind | Slot::Image(_) | Slot::Reply | Slot::EntryJson) => true,
            // A Claude Code context can change as lines are appended.
            Node::E(_, Slot::Context | Slot::ContextJson) => st.s.contexts_settled(),
            Node::E(idx, Slot::RequestFlatLink | Slot::RequestJsonFlatLink)
                if Self::request_is_file(&st, idx) =>
            {
                st.s.contexts_settled()
            }
            Node::Root
            | Node::IdDir
            | Node::Branches
            | Node::Labels
            | Node::E(_, Slot::NestedDir | Slot::FlatDir) => return Err(Error::IsDir),
            _ => return Err(Error::Invalid),
        };
        Ok(Opened {
            fh: self.new_fh(Handle::Unread {
                node,
                generation: st.base,
            }),
            keep_cache,
            direct_io: false,
        })
    }

    /// What reading `node` gives (`tree` aside). Whether the kernel may keep it across
    /// opens is decided where it is opened.
    fn contents(&self, st: &State, node: &Node) -> Result<Content> {
        let bytes = |b: Vec<u8>| Content::Bytes(Arc::new(b));
        Ok(match *node {
            Node::SessionJson => bytes(st.s.session_json()?),
            Node::Name => bytes(Self::name_bytes(&st.s)),
            Node::RootReply | Node::E(_, Slot::Reply) => bytes(Vec::new()),
            Node::E(idx, Slot::Fork) => bytes(self.fork_text(&st.s, idx)),
            Node::E(idx, Slot::Kind) => Content::Kind(self.rendered(st, idx)?),
            Node::E(idx, Slot::Image(n)) => {
                let r = self.rendered(st, idx)?;
                if n == MAX_IMAGES
                    && let Some(p) = &r.full_output
                {
                    let max = crate::model::core::input::max_line() as u64;
                    return Ok(bytes(st.s.read_side(p, max)?));
                }
                let k = n as usize - 1;
                if k >= r.images.len() {
                    return Err(Error::NotFound);
                }
                Content::Image(r, k)
            }
            Node::E(idx, Slot::EntryJson) => {
                let mut b = st.s.entry_bytes(idx)?;
                b.push(b'\n');
                bytes(b)
            }
            Node::E(idx, Slot::Context) => Content::Bytes(self.context(st, idx, false)?.text()),
            Node::E(idx, Slot::ContextJson) => Content::Bytes(self.context(st, idx, true)?.json()),
            Node::E(idx, Slot::RequestFlatLink) if Self::request_is_file(st, idx) => {
                Content::Bytes(self.request_ctx(st, idx, false)?.text())
            }
            Node::E(idx, Slot::RequestJsonFlatLink) if Self::request_is_file(st, idx) => {
                Content::Bytes(self.request_ctx(st, idx, true)?.json())
            }
            Node::Cost(_) | Node::E(_, Slot::Cost | Slot::CostJson) => {
                bytes(self.cost_bytes(st, node)?)
            }
            Node::Root
            | Node::IdDir
            | Node::Branches
            | Node::Labels
            | Node::E(_, Slot::NestedDir | Slot::FlatDir) => return Err(Error::IsDir),
            _ => return Err(Error::Invalid),
        })
    }

    /// `read`. `fh` 0 is a read with no handle: on a mount that answers no `open`
    /// (read-only), the file is found by its inode.
    pub fn read(&self, i: u64, fh: u64, offset: u64, size: u32) -> Result<Vec<u8>> {
        if fh == NO_HANDLE {
            return self.read_unopened(i, offset, size);
        }
        let generation = {
            let h = self.handles.lock();
            match h.get(&fh) {
                Some(Handle::Read(d)) => return Ok(slice_of(d, offset, size)),
                Some(Handle::Tree(Some(d), _)) => return Ok(slice_of(d, offset, size)),
                // Opened for reading and writing: what this descriptor holds.
                Some(Handle::Write { buf, start, .. }) => {
                    return Ok(match offset.checked_sub(*start) {
                        Some(rel) => slice_of(buf, rel, size),
                        None => Vec::new(),
                    });
                }
                Some(Handle::Unread { node, generation }) => {
                    let (node, generation) = (node.clone(), *generation);
                    drop(h);
                    // Not under the handles' lock: rendering takes the session's.
                    let data = {
                        let st = self.state.read();
                        if st.base != generation {
                            return Err(Error::Stale);
                        }
                        self.contents(&st, &node)?
                    };
                    let out = slice_of(&data, offset, size);
                    if let Some(h @ Handle::Unread { .. }) = self.handles.lock().get_mut(&fh) {
                        *h = Handle::Read(data);
                    }
                    return Ok(out);
                }
                Some(Handle::Tree(None, generation)) => *generation,
                None => return Err(Error::Io(libc::EBADF)),
            }
        };
        // Not under the handles' lock: drawing takes the session's.
        let t = {
            let st = self.state.read();
            // The kernel served the start of this descriptor from its pages, drawn
            // before the file was replaced: the rest must not come from the new one.
            if st.base != generation && offset > 0 {
                return Err(Error::Stale);
            }
            self.tree_bytes(&st, false)?
        };
        let out = slice_of(&t, offset, size);
        if let Some(Handle::Tree(d @ None, _)) = self.handles.lock().get_mut(&fh) {
            *d = Some(t);
        }
        Ok(out)
    }

    fn read_unopened(&self, i: u64, offset: u64, size: u32) -> Result<Vec<u8>> {
        let st = self.state.read();
        let node = self.decode(&st, i)?;
        if node != Node::Tree {
            return Ok(slice_of(&self.contents(&st, &node)?, offset, size));
        }
        let t = self.tree_bytes(&st, true)?;
        let out = slice_of(&t, offset, size);
        let mut cache = st.tree.lock();
        if let Some((held, served)) = &mut cache.held
            && Arc::ptr_eq(held, &t)
        {
            *served += out.len();
            if *served >= held.len() {
                cache.held = None;
            }
        }
        Ok(out)
    }

    /// Writes `data` into what the descriptor holds. With `O_APPEND` it goes at the
    /// end, whatever offset the kernel gives (it counts from the size it last saw,
    /// which need not be ours). Otherwise at `offset`: over what is there, or right
    /// after it; a write further on would leave a gap that only padding could fill,
    /// and nothing the user did not write may reach the session, so it fails with
    /// `EINVAL` (and the descriptor appends nothing, as after any failed write).
    pub fn write(&self, _i: u64, fh: u64, offset: u64, data: &[u8]) -> Result<u32> {
        // `fork`: the first write makes the fork (once); what is written is ignored,
        // whatever its bytes.
        let is_fork = matches!(
            self.handles.lock().get(&fh),
            Some(Handle::Write {
                target: WriteTarget::Fork { .. },
                ..
            })
        );
        if is_fork {
            self.fork_on_write(fh)?;
            return Ok(data.len() as u32);
        }
        let mut h = self.handles.lock();
        let Some(Handle::Write {
            target,
            buf,
            start,
            append,
            changed,
            failed,
            ..
        }) = h.get_mut(&fh)
        else {
            return Err(Error::Io(libc::EBADF));
        };
        if let Some(e) = failed {
            return Err(e.clone());
        }
        let fail = |failed: &mut Option<Error>, e: Error| {
            *failed = Some(e.clone());
            Err(e)
        };
        // Offsets count from the open; text before `start` was appended already.
        let at = if *append {
            buf.len()
        } else {
            match offset.checked_sub(*start) {
                Some(rel) if rel <= buf.len() as u64 => rel as usize,
                _ => return fail(failed, Error::Invalid),
            }
        };
        let end = at + data.len();
        if end > self.opts.max_reply {
            return fail(failed, Error::TooBig);
        }
        if buf.len() < end {
            let grow = (end - buf.len()) as u64;
            if self.pending.fetch_add(grow, Ordering::Relaxed) + grow > MAX_PENDING as u64 {
                self.pending.fetch_sub(grow, Ordering::Relaxed);
                return fail(failed, Error::Quota);
            }
        }
        let over = (buf.len() - at).min(data.len());
        buf[at..at + over].copy_from_slice(&data[..over]);
        buf.extend_from_slice(&data[over..]);
        *changed = true;
        // Text, or nothing: the descriptor appends nothing once refused.
        let refused = refuse_written(data).or((!utf8_so_far(buf)).then_some(Refused::NotUtf8));
        if let Some(r) = refused {
            self.log_refusal(target, r);
            return fail(failed, Error::NotUtf8);
        }
        // A full disk must show in write(2): the shell ignores errors from close.
        // (The append itself reserves its space first; this is the early warning.)
        // Free space counts whole blocks; the file's last block may hold a little more.
        if free_bytes(&self.path).is_some_and(|(free, block)| (buf.len() as u64) > free + block) {
            return fail(failed, Error::Io(libc::ENOSPC));
        }
        Ok(data.len() as u32)
    }

    /// `setattr` with a size: `ftruncate` of a descriptor (the shell's `>` on a kernel
    /// without atomic `O_TRUNC`, `truncate -s`), or `truncate(2)` of a path.
    ///
    /// Shortening what a descriptor holds counts as a change, so that its close
    /// appends: `truncate -s 0 name` clears the name. A path truncated with no
    /// descriptor has no close to wait for: a shorter `name` is appended at once. A
    /// size past the end would need padding, and fails with `EINVAL`.
    pub fn truncate(&self, i: u64, fh: Option<u64>, size: u64) -> Result<Attr> {
        let current_name = {
            let st = self.state.read();
            let node = self.decode(&st, i)?;
            match node {
                Node::RootReply | Node::Name | Node::E(_, Slot::Reply) => {
                    if self.opts.read_only {
                        return Err(Error::ReadOnly);
                    }
                    let w = match node {
                        Node::RootReply => Write::Reply(None),
                        Node::E(idx, _) => Write::Reply(Some(idx)),
                        _ => Write::Name,
                    };
                    if st.s.refusal(w).is_some() {
                        return Err(Error::Access);
                    }
                }
                // A fork is made by writing, not by sizing: `truncate -s` of `fork` would
                // succeed doing nothing. Only a descriptor that forked when it was opened
                // with `O_TRUNC` may be cut to 0 (what a kernel without atomic `O_TRUNC`
                // sends for `> fork`).
                Node::E(_, Slot::Fork) => {
                    let forked = fh.is_some_and(|fh| {
                        matches!(
                            self.handles.lock().get(&fh),
                            Some(Handle::Write {
                                target: WriteTarget::Fork { made: true, .. },
                                ..
                            })
                        )
                    });
                    drop(st);
                    if forked && size == 0 {
                        return self.getattr(i);
                    }
                    return Err(Error::Invalid);
                }
                Node::Root
                | Node::IdDir
                | Node::Branches
                | Node::Labels
                | Node::E(_, Slot::NestedDir | Slot::FlatDir) => {
                    return Err(Error::IsDir);
                }
                _ => {
                    return Err(self.refusal());
                }
            }
            (node == Node::Name).then(|| Self::name_bytes(&st.s))
        };
        if let Some(fh) = fh {
            // The handles' lock is let go before `getattr` takes the session's.
            let cut = match self.handles.lock().get_mut(&fh) {
                Some(Handle::Write {
                    buf,
                    start,
                    base,
                    changed,
                    ..
                }) => {
                    let end = *start + buf.len() as u64;
                    if size > end {
                        Some(Err(Error::Invalid))
                    } else {
                        // Text before `start` was appended already; the rest can be cut.
                        let keep = size.saturating_sub(*start) as usize;
                        self.pending
                            .fetch_sub((buf.len() - keep) as u64, Ordering::Relaxed);
                        buf.truncate(keep);
                        *start = (*start).min(size);
                        if keep < *base {
                            *base = 0;
                        }
                        if size < end {
                            *changed = true;
                        }
                        Some(Ok(()))
                    }
                }
                _ => None,
            };
            if let Some(r) = cut {
                return r.and_then(|()| self.getattr(i));
            }
        }
        match current_name {
            Some(name) => {
                let size = usize::try_from(size).unwrap_or(usize::MAX);
                if size > name.len() {
                    return Err(Error::Invalid);
                }
                if size < name.len() {
                    let kept = std::str::from_utf8(&name[..size]).map_err(|_| Error::Invalid)?;
                    self.append_name(kept)?;
                }
            }
            // A reply holds nothing until written.
            None if size > 0 => return Err(Error::Invalid),
            None => {}
        }
        self.getattr(i)
    }

    /// Appends what was written through `fh`; returns once it is on disk.
    pub fn flush(&self, i: u64, fh: u64) -> Result<()> {
        self.flush_from(i, fh, None)
    }

    /// `flush`, called when any copy of the descriptor is closed. Only a close by the
    /// process that opened the file appends (when the caller is known): a child that
    /// inherited the descriptor and exits (`{ echo a; true; echo b; } > reply`) must
    /// not cut the message in two. Text written after an append starts a new entry.
    ///
    /// `name` opened with `O_TRUNC` and closed with nothing written is cleared, at the
    /// opener's last close of it: a shell closes its first descriptor of the file as
    /// soon as it has copied it onto standard output, before anything is written (in
    /// `: > name` and `echo x > name` alike), and that close, made while the process
    /// still holds the file, must not clear the name. (The last close of all, the
    /// release, clears it in any case.)
    pub fn flush_from(&self, _i: u64, fh: u64, pid: Option<u32>) -> Result<()> {
        let (target, text) = {
            let mut h = self.handles.lock();
            let Some(Handle::Write {
                target,
                buf,
                start,
                base,
                changed,
                cleared,
                opener,
                failed,
                ..
            }) = h.get_mut(&fh)
            else {
                return Ok(());
            };
            if let (Some(o), Some(p)) = (*opener, pid)
                && tgid_of(p) != o
            {
                return Ok(());
            }
            if failed.is_some() {
                return Ok(());
            }
            if !*changed {
                let clear = *cleared
                    && matches!(target, WriteTarget::Name)
                    && !pid.is_some_and(|p| self.still_holds_name(p));
                if !clear {
                    return Ok(());
                }
            }
            self.pending.fetch_sub(buf.len() as u64, Ordering::Relaxed);
            *start += buf.len() as u64;
            *changed = false;
            *cleared = false;
            let mut bytes = std::mem::take(buf);
            // Text written after the name's own newline continues the name: the
            // newline only ends the line `cat name` shows.
            if *base > 0 && bytes.len() > *base && bytes[*base - 1] == b'\n' {
                bytes.remove(*base - 1);
            }
            *base = 0;
            let text = match String::from_utf8(bytes) {
                Ok(t) => t,
                // A character cut short by the close.
                Err(_) => {
                    self.log_refusal(target, Refused::NotUtf8);
                    return Err(Error::NotUtf8);
                }
            };
            let target = match target {
                WriteTarget::Reply(p) => WriteTarget::Reply(p.clone()),
                WriteTarget::Name => WriteTarget::Name,
                WriteTarget::Fork { .. } => return Ok(()),
            };
            (target, text)
        };
        let text = text.strip_suffix('\n').unwrap_or(&text);
        let what = match &target {
            WriteTarget::Reply(Some(id)) => format!("the reply to {id}"),
            WriteTarget::Reply(None) => "a reply at the root".to_string(),
            _ => "the name".to_string(),
        };
        match target {
            WriteTarget::Reply(parent) => {
                if let Some(r) = refuse_reply(text) {
                    self.log_refusal(&WriteTarget::Reply(parent.clone()), r);
                    return Err(Error::Blank);
                }
                if text.is_empty() {
                    return Ok(());
                }
                self.append(&NewEntry::Reply {
                    parent: parent.as_deref(),
                    text,
                })
            }
            WriteTarget::Name => self.append_name(text),
            WriteTarget::Fork { .. } => Ok(String::new()),
        }
        .map(|_| ())
        .inspect_err(|e| {
            // Known only at close, which the shell ignores: the log says it.
            log::warn!(
                "{}: {what} failed ({}) when its file was closed; nothing appended",
                self.path.display(),
                errno_name(e.errno())
            );
        })
    }

    /// Says in the log why text written through a descriptor appends nothing (the
    /// writer sees only an errno).
    fn log_refusal(&self, target: &WriteTarget, r: Refused) {
        let file = match target {
            WriteTarget::Reply(Some(id)) => format!("the reply to {id}"),
            WriteTarget::Reply(None) => "a reply at the root".to_string(),
            WriteTarget::Name => "the name".to_string(),
            WriteTarget::Fork { id, .. } => format!("the fork at {id}"),
        };
        let errno = if r == Refused::Blank {
            "ENOMSG"
        } else {
            "EILSEQ"
        };
        log::warn!(
            "{}: {file} refused ({errno}): {}; nothing appended",
            self.path.display(),
            r.reason()
        );
    }

    /// Says in the log why a write was refused when it was opened (the shell shows
    /// only the errno, `EACCES`).
    fn log_refused_open(&self, target: &WriteTarget, why: &str) {
        let file = match target {
            WriteTarget::Reply(Some(id)) => format!("a reply to {id}"),
            WriteTarget::Reply(None) => "a reply at the root".to_string(),
            WriteTarget::Name => "the name".to_string(),
            WriteTarget::Fork { id, .. } => format!("a fork at {id}"),
        };
        log::warn!(
            "{}: {file} refused (EACCES): {why}; nothing written",
            self.path.display()
        );
    }

    /// Whether process `pid` still holds this session's `name` open through a
    /// descriptor. Its descriptors are read from `/proc` as paths, which asks the
    /// mount nothing; a process that cannot be looked at, or sees the mount at another
    /// path (another mount namespace), holds nothing as far as this can tell.
    fn still_holds_name(&self, pid: u32) -> bool {
        let name = self.opts.mount_point.join("name");
        let Ok(fds) = std::fs::read_dir(format!("/proc/{}/fd", tgid_of(pid))) else {
            return false;
        };
        fds.flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|t| t == name))
    }

    /// The last close: anything still unwritten is appended now.
    pub fn release(&self, i: u64, fh: u64) -> Result<()> {
        let r = self.flush_from(i, fh, None);
        if let Some(Handle::Write { buf, .. }) = self.handles.lock().remove(&fh) {
            self.pending.fetch_sub(buf.len() as u64, Ordering::Relaxed);
            self.writers.fetch_sub(1, Ordering::Relaxed);
        }
        r
    }

    /// Appends an entry as [`Session::append`] does and sends the invalidations: catch
    /// up with the file, build the line, write and sync it, index it. The write and its
    /// `fdatasync` happen with only `append_lock` held, so readers of the session are
    /// not held up by the disk.
    fn append(&self, what: &NewEntry<'_>) -> Result<String> {
        self.append_all(|_| Ok(vec![what.clone()]))
            .map(|mut ids| ids.pop().unwrap_or_default())
    }

    /// Sets the session name, unless it is already `text` (sanitized as Pi does): a
    /// name written again, or `: > name` with no name set, appends nothing.
    fn append_name(&self, text: &str) -> Result<String> {
        let want = sanitize_name(text);
        self.append_all(|s| {
            Ok(if s.name().unwrap_or("") == want {
                Vec::new()
            } else {
                vec![NewEntry::Name(&want)]
            })
        })
        .map(|mut ids| ids.pop().unwrap_or_default())
    }

    /// Catches up with the file, asks `plan` what to append given the session as it
    /// is now, and appends it with one write (nothing if the plan is empty), all under
    /// the append lock so that the plan cannot go stale before it is written. Sends
    /// the resulting invalidations. Returns the new ids in order.
    fn append_all<T: ToEntry>(
        &self,
        plan: impl FnOnce(&Session) -> Result<Vec<T>>,
    ) -> Result<Vec<String>> {
        if self.opts.read_only {
            return Err(Error::ReadOnly);
        }
        let _serial = self.append_lock.lock();
        // Catch up first (a replaced file is indexed again outside the index's lock).
        self.refresh()?;
        // Plan and build the lines from the session as it is now, sharing the index.
        let (ids, lines) = {
            let st = self.state.read();
            let planned = plan(&st.s)?;
            let whats: Vec<NewEntry<'_>> = planned.iter().map(ToEntry::to_entry).collect();
            // An agent that writes its replies itself (Codex: the current page, or a
            // new page and its database row): written, then indexed.
            if let [NewEntry::Reply { parent, text }] = whats.as_slice()
                && let Some(written) = st.s.write_reply(*parent, text)
            {
                let id = written.map_err(|e| {
                    // The shell ignores the close that fails: the log says why.
                    let errno = errno_name(e.errno());
                    log::warn!(
                        "{}: reply refused ({errno}): {e}; nothing written",
                        self.path.display()
                    );
                    append_err(e)
                })?;
                drop(st);
                self.refresh()?;
                return Ok(vec![id]);
            }
            st.s.build_all(&whats, now_ms()).map_err(append_err)?
        };
        if lines.is_empty() {
            return Ok(ids);
        }
        // Written and synced with only the append lock held: reads of the session go on
        // meanwhile. Then indexed.
        write_line(&self.path, &lines)?;
        self.refresh()?;
        Ok(ids)
    }

    /// Opens `fork` of entry `id` for writing. The fork is made by what writes: a
    /// truncating open (`: > fork`, `echo > fork`: made now, so that a failure fails the
    /// open, where the shell sees it), the first `write(2)` through the descriptor, or
    /// `touch` (see [`SessionView::touch`]); an open that writes nothing (a lock, a
    /// `fallocate`, a `truncate -s`) makes none. Each fork is one new session file,
    /// beside the source (see [`crate::model::fork`]); `fork` then reads its path, or
    /// why it could not be made.
    fn open_fork(&self, id: String, mode: OpenMode, pid: Option<u32>) -> Result<Opened> {
        if self.writers.fetch_add(1, Ordering::Relaxed) as usize >= MAX_WRITERS {
            self.writers.fetch_sub(1, Ordering::Relaxed);
            return Err(Error::TooManyOpen);
        }
        let made = if mode.truncate {
            if let Err(e) = self.make_fork(&id) {
                self.writers.fetch_sub(1, Ordering::Relaxed);
                return Err(e);
            }
            true
        } else {
            false
        };
        let fh = self.new_fh(Handle::Write {
            target: WriteTarget::Fork { id, made },
            base: 0,
            buf: Vec::new(),
            start: 0,
            append: false,
            changed: false,
            cleared: false,
            opener: pid.map(tgid_of),
            failed: None,
        });
        Ok(Opened {
            fh,
            keep_cache: false,
            direct_io: true,
        })
    }

    /// Forks the session at the entry with id `id` (see [`crate::model::fork`]):
    /// planned under the index's lock, written (and synced) with no lock held. What
    /// `fork` reads afterwards says where, or why not.
    fn make_fork(&self, id: &str) -> Result<()> {
        use crate::model::fork;
        if self.opts.read_only {
            return Err(Error::ReadOnly);
        }
        // An agent whose fork is a new session in its own store writes it itself
        // (under the read lock: its writer reads the store, never this index's file).
        let (planned, mode, own) = {
            let st = self.state.read();
            let s = &st.s;
            let idx = s.find(id).ok_or(Error::Stale)?;
            match s.write_fork(idx) {
                Some(made) => (None, 0, Some(made)),
                None => (
                    Some(fork::plan(s, idx, &fork::Fresh::random(s.format()))),
                    fork::mode_of(s.format()),
                    None,
                ),
            }
        };
        let made = match (own, planned) {
            (Some(made), _) => made,
            (None, Some(planned)) => planned.and_then(|f| Ok(fork::write_fork(&f, mode)?)),
            (None, None) => unreachable!("a fork is planned or written"),
        };
        let (text, result) = match made {
            Ok(path) => {
                let mut t = format!("{}\n", path.display());
                if self.opts.in_sessions_dir
                    && let (Some(dir), Some(stem)) =
                        (self.opts.mount_point.parent(), path.file_stem())
                {
                    t.push_str(&format!("{}\n", dir.join(stem).display()));
                }
                self.created.lock().push(path);
                (t, Ok(()))
            }
            Err(e) => {
                log::warn!(
                    "{}: fork of {id} failed ({}): {e}",
                    self.path.display(),
                    errno_name(e.errno())
                );
                let errno = match &e {
                    // Known only now (the chain, say): refused as a known refusal is.
                    fork::ForkError::Refused(_) | fork::ForkError::Unsupported(_) => Error::Access,
                    other => Error::Io(other.errno()),
                };
                (format!("error: {e}\n"), Err(errno))
            }
        };
        self.forks.lock().insert(id.to_string(), text.into_bytes());
        result
    }

    /// The fork of a descriptor of `fork` opened without `O_TRUNC`, made by its first
    /// write or `touch`: once per descriptor. `Ok(false)` when it was made already.
    fn fork_on_write(&self, fh: u64) -> Result<bool> {
        let id = {
            let mut h = self.handles.lock();
            match h.get_mut(&fh) {
                Some(Handle::Write {
                    target: WriteTarget::Fork { id, made },
                    failed,
                    ..
                }) => {
                    if let Some(e) = failed {
                        return Err(e.clone());
                    }
                    if *made {
                        return Ok(false);
                    }
                    *made = true;
                    id.clone()
                }
                _ => return Ok(false),
            }
        };
        // Not under the handles' lock: forking takes the session's.
        let r = self.make_fork(&id);
        if let Err(e) = &r
            && let Some(Handle::Write { failed, .. }) = self.handles.lock().get_mut(&fh)
        {
            *failed = Some(e.clone());
        }
        r.map(|()| true)
    }

    /// `touch` (a `setattr` of times alone) of inode `i`, by the process `pid`: on
    /// `fork`, it forks (`touch fork` opens it first, writing nothing, then sets its
    /// times: the fork is made once, by the descriptor that process opened, if it has
    /// one). Elsewhere it changes nothing; whether it is allowed at all the mode bits
    /// say (the adapter refuses it on a file without a write bit).
    pub fn touch(&self, i: u64, fh: Option<u64>, pid: Option<u32>) -> Result<()> {
        let node = {
            let st = self.state.read();
            self.decode(&st, i)?
        };
        let Node::E(idx, Slot::Fork) = node else {
            return Ok(());
        };
        let caller = pid.map(tgid_of);
        let ino_id = {
            let st = self.state.read();
            st.s.id_string(idx)
        };
        // The descriptor this process opened on this `fork`, not forked yet.
        let open = fh.or_else(|| {
            let h = self.handles.lock();
            h.iter().find_map(|(k, v)| match v {
                Handle::Write {
                    target: WriteTarget::Fork { id, made: false },
                    opener,
                    ..
                } if *id == ino_id && (caller.is_none() || *opener == caller) => Some(*k),
                _ => None,
            })
        });
        match open {
            Some(fh) => self.fork_on_write(fh).map(|_| ()),
            None => self.make_fork(&ino_id),
        }
    }

    /// What `fork` of entry `idx` reads: the path of the last fork made there through
    /// this mount (and, in a sessions directory, its directory in the mount), or
    /// `error: WHY` when it failed, or would be refused; empty before the first.
    fn fork_text(&self, s: &Session, idx: u32) -> Vec<u8> {
        if let Some(t) = self.forks.lock().get(&s.id_string(idx)) {
            return t.clone();
        }
        // A fork that would be refused says why before anyone tries.
        match s.refusal(Write::Fork(idx)) {
            Some(why) if !self.opts.read_only => format!("error: {why}\n").into_bytes(),
            _ => Vec::new(),
        }
    }

    /// The session files forks made since the last call (for a sessions-directory
    /// view, which shows them at once).
    pub fn take_created(&self) -> Vec<PathBuf> {
        std::mem::take(&mut *self.created.lock())
    }

    fn refusal(&self) -> Error {
        if self.opts.read_only {
            Error::ReadOnly
        } else {
            Error::Access
        }
    }

    /// `ln -s TARGET labels/NAME`: labels the entry named by TARGET's last component
    /// (an id, or a path into the mount). Pi keeps one label per entry, so a label the
    /// entry had before is replaced. A name in use is `EEXIST`.
    pub fn symlink(&self, parent: u64, name: &OsStr, target: &Path) -> Result<Attr> {
        if parent != ino::LABELS {
            return Err(self.refusal());
        }
        let name = name.to_str().ok_or(Error::NotUtf8)?;
        let last = target
            .as_os_str()
            .as_bytes()
            .split(|&b| b == b'/')
            .rfind(|c| !c.is_empty() && *c != b".")
            .ok_or(Error::Invalid)?;
        let last = std::str::from_utf8(last).map_err(|_| Error::NotFound)?;
        self.append_all(|s| {
            if s.label_entry(name).is_some() {
                return Err(Error::Exists);
            }
            let e = Self::entry_by_name(s, last, None).ok_or(Error::NotFound)?;
            Ok(vec![Labelling::set(s.id_string(e), name)])
        })?;
        self.lookup(ino::LABELS, OsStr::new(name))
    }

    /// `rm labels/NAME`: clears the label (every entry carrying it).
    pub fn unlink(&self, parent: u64, name: &OsStr) -> Result<()> {
        if parent != ino::LABELS {
            return Err(self.refusal());
        }
        let name = name.to_str().ok_or(Error::NotFound)?;
        self.append_all(|s| {
            let label = Self::label_named(s, name).ok_or(Error::NotFound)?;
            let holders = Self::holders(s, &label);
            if holders.is_empty() {
                return Err(Error::NotFound);
            }
            Ok(holders
                .into_iter()
                .map(|t| Labelling::clear(s.id_string(t)))
                .collect())
        })?;
        Ok(())
    }

    /// `mv labels/FROM labels/TO`, and so `ln -sfn TARGET labels/TO` (GNU `ln` makes
    /// the link under a temporary name, then renames it over TO).
    ///
    /// The entry labelled FROM is labelled TO instead (one label per entry: FROM goes).
    /// If TO was on another entry, that entry loses it, as a file renamed over another
    /// replaces it. Both label lines are written with one `write(2)`, so a relabelling
    /// never stops halfway: no failure leaves a label lost or doubled. A rename onto
    /// itself does nothing. `RENAME_NOREPLACE` refuses an existing TO (`EEXIST`);
    /// `RENAME_EXCHANGE` swaps the two labels. Out of `labels/`, or into another
    /// directory, renames are refused like every other edit of the tree.
    pub fn rename(
        &self,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
    ) -> Result<()> {
        if parent != ino::LABELS || newparent != ino::LABELS {
            return Err(self.refusal());
        }
        let exchange = flags & libc::RENAME_EXCHANGE != 0;
        let noreplace = flags & libc::RENAME_NOREPLACE != 0;
        if flags & !(libc::RENAME_EXCHANGE | libc::RENAME_NOREPLACE) != 0 || (exchange && noreplace)
        {
            return Err(Error::Invalid);
        }
        let from = name.to_str().ok_or(Error::NotFound)?;
        let to = newname.to_str().ok_or(Error::NotUtf8)?;
        let mut from = from.to_string();
        self.append_all(|s| {
            from = Self::label_named(s, &from).ok_or(Error::NotFound)?;
            let from = from.as_str();
            let (a, _) = s.label_entry(from).ok_or(Error::NotFound)?;
            if from == to {
                return Ok(Vec::new());
            }
            let holders = Self::holders(s, to);
            if noreplace && !holders.is_empty() {
                return Err(Error::Exists);
            }
            let mut plan = vec![Labelling::set(s.id_string(a), to)];
            if exchange {
                let (b, _) = s.label_entry(to).ok_or(Error::NotFound)?;
                plan.push(Labelling::set(s.id_string(b), from));
            } else {
                plan.extend(
                    holders
                        .into_iter()
                        .map(|t| Labelling::clear(s.id_string(t))),
                );
            }
            Ok(plan)
        })?;
        let mut m = self.label_inos.lock();
        let moved = m.by_name.remove(&from);
        let replaced = m.by_name.remove(to);
        if let Some(n) = moved {
            m.by_name.insert(to.to_string(), n);
        }
        if let (true, Some(n)) = (exchange, replaced) {
            m.by_name.insert(from, n);
        }
        Ok(())
    }

    /// The label a name in `labels/` stands for: the label of that name, else the one
    /// it is the escaped name of (a label holding `/` or a control character is
    /// listed escaped, see [`escape_name`]).
    fn label_named(s: &Session, name: &str) -> Option<String> {
        if s.label_entry(name).is_some() {
            return Some(name.to_string());
        }
        let label = unescape_name(name)?;
        s.label_entry(&label).map(|_| label)
    }

    /// The entries carrying label `name` (usually one; Pi allows it on several).
    fn holders(s: &Session, name: &str) -> Vec<u32> {
        s.labels()
            .into_iter()
            .filter(|(l, _)| *l == name)
            .map(|(_, t)| t)
            .collect()
    }
}

/// Inode numbers of label symlinks, given by name in order of first use and never
/// reused. A renamed label keeps its number under its new name, as a renamed file
/// keeps its inode: the kernel moves its cached name over after a `rename`.
/// The entry index and session of a fork member's key in [`LabelInos`] (see
/// [`SessionView::fork_member_ino`]); `None` for a label's name.
fn fork_member_of_key(key: &str) -> Option<(u32, &str)> {
    let rest = key.strip_prefix("\0forks/")?;
    let (idx, session) = rest.split_once('/')?;
    Some((idx.parse().ok()?, session))
}

#[derive(Default)]
struct LabelInos {
    by_name: HashMap<String, u64>,
    /// Numbers handed out so far.
    handed: u64,
}

/// What [`SessionView::append_all`] can append: an entry, or something that names one.
trait ToEntry {
    fn to_entry(&self) -> NewEntry<'_>;
}

impl ToEntry for NewEntry<'_> {
    fn to_entry(&self) -> NewEntry<'_> {
        self.clone()
    }
}

/// A label line, owning the ids it names (worked out under the session's lock).
struct Labelling {
    target: String,
    label: Option<String>,
}

impl Labelling {
    fn set(target: String, label: &str) -> Labelling {
        Labelling {
            target,
            label: Some(label.to_string()),
        }
    }

    fn clear(target: String) -> Labelling {
        Labelling {
            target,
            label: None,
        }
    }
}

impl ToEntry for Labelling {
    fn to_entry(&self) -> NewEntry<'_> {
        NewEntry::Label {
            target: &self.target,
            label: self.label.as_deref(),
        }
    }
}

/// Builds one page of a listing: entries before `off` are counted, not kept.
struct Lister {
    off: usize,
    pos: usize,
    out: Vec<(u64, DirEntry)>,
}

impl Lister {
    /// Adds an entry; `false` once the page is full.
    fn push(&mut self, ino: u64, kind: FileKind, name: OsString) -> bool {
        if self.pos >= self.off {
            self.out
                .push(((self.pos + 1) as u64, DirEntry { ino, kind, name }));
        }
        self.pos += 1;
        self.out.len() < READDIR_BATCH
    }

    /// Adds one name per entry of `entries` (from where this page starts), as `slot`.
    fn push_entries(
        &mut self,
        s: &Session,
        base: u64,
        entries: &[u32],
        slot: Slot,
        kind: FileKind,
    ) {
        let skip = self.skip(entries.len());
        for &e in &entries[skip..] {
            if !self.push(entry_ino(base, e, slot), kind, entry_name(s, e).into()) {
                break;
            }
        }
    }

    /// Skips the part of the next `n` entries that lies before `off`; returns how many.
    fn skip(&mut self, n: usize) -> usize {
        let k = self.off.saturating_sub(self.pos).min(n);
        self.pos += k;
        k
    }
}

/// What the kernel may have cached by name before a change.
struct Snapshot {
    entries: usize,
    /// The leaf, whose context changes with it where contexts are not settled.
    leaf: Option<u32>,
    root_names: Vec<String>,
    labels: Vec<String>,
    /// Edited entries and the edit each `edited-by` names.
    edited: Vec<(u32, u32)>,
}

impl Snapshot {
    fn take(st: &State) -> Snapshot {
        let s = &st.s;
        Snapshot {
            entries: s.entries().len(),
            leaf: s.leaf(),
            root_names: s.roots().iter().map(|&r| entry_name(s, r)).collect(),
            labels: s.labels().into_iter().map(|(l, _)| l.to_string()).collect(),
            edited: s.edited_entries(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(n: usize) -> Arc<Ctx> {
        Arc::new(Ctx {
            messages: Mutex::new(None),
            readable: crate::model::core::text::context_json,
            preamble: None,
            text: std::sync::OnceLock::new(),
            json: std::sync::OnceLock::new(),
            weight: n,
        })
    }

    #[test]
    fn the_cache_is_bounded_in_bytes_but_keeps_the_newest() {
        let mut c: Lru<Ctx> = Lru::new(16, 100);
        c.put((0, 1), ctx(40));
        c.put((0, 2), ctx(40));
        assert!(c.get((0, 1)).is_some(), "80 bytes fit");
        // 120 bytes: the least recently used one (2, since 1 was just read) goes.
        c.put((0, 3), ctx(40));
        assert!(c.get((0, 2)).is_none());
        assert!(c.get((0, 1)).is_some() && c.get((0, 3)).is_some());
        assert_eq!(c.bytes, 80);
        // A value over the whole budget evicts everything else but is kept itself.
        c.put((0, 4), ctx(500));
        assert_eq!(c.map.len(), 1);
        assert!(c.get((0, 4)).is_some());
        // Replacing a value accounts for the old one.
        c.put((0, 4), ctx(10));
        assert_eq!(c.bytes, 10);
        c.clear();
        assert_eq!((c.bytes, c.map.len(), c.order.len()), (0, 0, 0));
    }

    #[test]
    fn the_cache_is_bounded_in_entries() {
        let mut c: Lru<Ctx> = Lru::new(2, usize::MAX);
        for k in 0..5 {
            c.put((0, k), ctx(1));
        }
        assert_eq!(c.map.len(), 2);
        assert!(c.get((0, 3)).is_some() && c.get((0, 4)).is_some());
    }
}
