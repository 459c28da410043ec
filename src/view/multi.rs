//! [`MultiView`]: a whole sessions directory, every session in it a [`SessionView`]
//! loaded when first entered.
//!
//! ```text
//! MOUNT/                      the sessions directory (Pi's, or any laid out the same way)
//! ├── .sessionfs-stats        hidden, lookup only: loaded sessions, bytes, evictions
//! ├── PROJECT/                one per folder, as on disk (e.g. `--home-dev-proj--`)
//! │   └── SESSION/            one per `SESSION.jsonl` in it: a SessionView's root
//! └── SESSION/                a `.jsonl` lying directly in the directory, the same way
//! ```
//!
//! # Laziness
//!
//! Listing the root or a project reads the directory and nothing else; `getattr` of a
//! session directory is the file's `stat` (its mtime, size 0). A session is indexed
//! ([`SessionView::open`]) only when something inside it is asked for: a lookup in
//! it, a listing of it, any of its inodes. A file that cannot be indexed becomes a
//! directory holding one file, `ERROR`, that says why. The request thread that indexes
//! runs at a lower priority meanwhile ([`crate::prio::Lowered`]), so that requests of
//! other sessions come first; those of the same session wait for the index anyway.
//!
//! # Inode numbers
//!
//! Numbers below `1 << 40` belong to this view: 1 the root, 2 the stats file, and
//! `16 + n` the n-th project folder seen (by name). Every session (a project and a
//! file name) gets a *slot* the first time it is seen, never reused within a mount,
//! and its inodes are `slot << 40 | (local ^ mix(slot))`, where `local` is the
//! [`SessionView`]'s own number (1 its root, i.e. the session directory; fixed files
//! 2..9; 10 `ERROR`; labels from 64; entries from `1 << 32`) and `mix` a hash that
//! spreads the sessions over the kernel's inode hash table (see [`slot_ino`]).
//!
//! # Eviction
//!
//! Each loaded session is charged its index ([`Session::heap_bytes`]) plus an
//! allowance for the view's render caches (its file size, at most 1 MiB). When the sum
//! passes `max_index_memory`, or more than `max_loaded` sessions are loaded (each keeps
//! its file open), the least recently used sessions are dropped, except those with open
//! files (on a read-only mount files are read without being opened: there the session
//! being read is the most recently used, the last to go). A dropped session is reloaded transparently when next used, and keeps its
//! numbers: the reloaded view starts from the old inode generation if the file is the
//! same one, only appended to (same device and inode, not shorter, the same bytes where
//! it used to end, and the same tree for the old entries), so every number the kernel
//! still holds names the same thing. Otherwise it starts past every number the old view
//! handed out, exactly as a [`SessionView`] does when its file is replaced: old numbers
//! answer `ESTALE`. Label symlinks are numbered per view in order of first use, so a
//! reloaded view's labels are moved past every label number handed out before.
//!
//! Dropping a session tells the kernel nothing: what it cached stays right, since the
//! numbers stay. When the file of a dropped session changes, the watcher's report
//! loads it again at once (without counting that as a use), which works out what the
//! kernel must forget (the listings that gained entries), as a loaded session would.
//!
//! # Live
//!
//! [`DirWatch`] is told about every directory worth watching (the root at once, each
//! project folder when first seen); the watcher reports names that changed in them
//! ([`MultiView::dir_changed`]). Listings and names are invalidated, loaded sessions
//! catch up with their files, deleted sessions are dropped.
//!
//! # Locks
//!
//! Requests are served by several threads at once, and a request for one session never
//! waits for work on another: indexing a session, catching up with its file before it
//! is dropped, and every request inside it hold that session's locks only. In the order
//! they are taken (a thread holding one takes only locks further down the list):
//!
//! 1. `SlotEntry::loading`, per session: held while the session is indexed
//!    (`load_locked`) or dropped (`unload`), so that a session is indexed once however
//!    many requests enter it together: the first indexes, the others wait here for its
//!    result. Eviction only tries it, and skips a session that another thread is
//!    loading or dropping. The watcher only tries it too (`session_changed`): when it
//!    is taken, the change is marked `pending`, and the thread holding it acts on the
//!    change once it lets go (`after_loading`), so the watcher never waits for an index.
//! 2. Under it, either the session's [`SessionView`] locks (see its docs; a view is
//!    called with no lock of this module held but its own session's `loading`), or
//! 3. `SlotEntry::state`, per session: what is loaded, the count of open files, the
//!    numbering kept across drops. Held briefly, never while indexing or calling a view.
//! 4. Leaves, held briefly, under which no other lock is taken but the invalidation
//!    sink: `containers`, `slots`, `loaded`, a folder's `listing`, `handles`, `watch`,
//!    `side_watches`,
//!    each view's invalidation receiver (held while what it held is sent on, so that
//!    invalidations reach the sink in the order the view made them); and last the
//!    sink.
//!
//! The hook told of sessions that changed ([`MultiView::on_session_changed`]) is
//! called with `loading` (1) held and takes no lock: it only hands the path on.
//!
//! The races this settles: two requests entering an unloaded session (one index, see
//! 1); an eviction racing a load (a session is in `loaded` only once its index is in
//! place, and an eviction takes `loading` with `try_lock`); an eviction racing a use
//! (it gives up when the session was used, or a file opened in it, while it caught up
//! with the file); a reload racing reads (a view catching up with a replaced file
//! builds the new index with no lock held, see [`SessionView::refresh`], and reads go
//! on meanwhile; a dropped session reloaded by the watcher is loaded under `loading`,
//! as by a request). Invalidations are only ever sent down channels that never block;
//! the notifier thread talks to the kernel holding no lock of the view.

use super::inode::{self as ino, ENTRY_BASE, LABEL_BASE, SLOTS, Slot, entry_ino};
use super::{
    Access, Attr, DirEntry, Error, FileKind, FsView, Invalidation, InvalidationSink, NO_HANDLE,
    OpenMode, Opened, Options, Result,
};
use super::{ROOT_INO, SessionView};
use crate::model::core::catalog::{file_of, folder_of};
use crate::model::sessions_dir::{self, is_side_folder_on_disk, session_stem, with_ext};
use crate::model::sessions_dir::{Catalog, Lister as CatalogLister, SessionRef};
use crate::model::{LoadError, NIL, Session};
use log::debug;
use parking_lot::{Mutex, RwLock};
use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs;
use std::hash::{Hash, Hasher};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The hidden statistics file at the root (answers lookups, never listed).
pub const STATS_NAME: &str = ".sessionfs-stats";
/// Its inode.
pub const STATS_INO: u64 = 2;
/// The one file in the directory of a session that cannot be shown.
pub const ERROR_NAME: &str = "ERROR";
pub use sessions_dir::SESSION_EXT;

/// Bits of an inode number below a session's slot.
pub const SLOT_SHIFT: u32 = 40;
const LOCAL_MASK: u64 = (1 << SLOT_SHIFT) - 1;
/// Slots available (numbered from 1).
const MAX_SLOTS: u64 = (1 << (64 - SLOT_SHIFT)) - 1;

/// The inode number of a session's inode: its slot above [`SLOT_SHIFT`], below it the
/// view's own number XORed with a hash of the slot. The kernel finds inodes in a hash
/// table keyed mostly by the low bits of the number: without the XOR, the same view
/// number in every session (each session directory is 1) would share one bucket, and
/// `find` over thousands of sessions spends its time walking that chain.
fn slot_ino(slot: u32, local: u64) -> u64 {
    (slot as u64) << SLOT_SHIFT | (local ^ slot_mix(slot))
}

/// The slot and the view's number of a number at or above `1 << SLOT_SHIFT`.
fn split_ino(i: u64) -> (u32, u64) {
    let slot = (i >> SLOT_SHIFT) as u32;
    (slot, (i & LOCAL_MASK) ^ slot_mix(slot))
}

fn slot_mix(slot: u32) -> u64 {
    (slot as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOT_SHIFT)
}
/// Project folder `n` (from 1) is inode `CONTAINER_BASE + n`.
const CONTAINER_BASE: u64 = 16;
/// `ERROR` inside a session's directory (a number no [`SessionView`] uses).
const ERROR_LOCAL: u64 = 10;
/// Cache lifetime of what can change (also invalidated explicitly).
const SHORT: Duration = Duration::from_secs(1);
/// Charged per loaded session for its render caches, at most.
const CACHE_ALLOWANCE: u64 = 1 << 20;
/// Entries returned per readdir call.
const READDIR_BATCH: usize = 512;
/// Entries returned per readdirplus call of a folder, each costing a `stat`: about
/// what fits the kernel's page-sized buffer (it asks again from where it stopped).
const READDIRPLUS_BATCH: usize = 32;

/// How a sessions directory is mounted.
#[derive(Debug, Clone)]
pub struct MultiOptions {
    /// Options for every session; `mount_point` is the mount's root.
    pub session: Options,
    /// Drop least recently used sessions once the loaded ones are charged more than
    /// this (bytes).
    pub max_index_memory: usize,
    /// Drop least recently used sessions once more than this many are loaded (each
    /// keeps its file open).
    pub max_loaded: usize,
}

impl MultiOptions {
    /// Defaults: writable, 256 MiB, 1024 sessions.
    pub fn new(mount_point: impl Into<PathBuf>) -> MultiOptions {
        MultiOptions {
            session: Options::new(mount_point),
            max_index_memory: 256 << 20,
            max_loaded: 1024,
        }
    }
}

/// Where a [`MultiView`] asks for directories to be watched. Implemented by the
/// watcher in `crate::fuse`; its calls must not call back into the view.
pub trait DirWatch: Send + Sync {
    /// Watch `path`, project `container` (0 is the root); report its changes through
    /// [`MultiView::dir_changed`]. Returns whether the watch is in place.
    fn watch_dir(&self, container: u32, path: &Path) -> bool;
}

/// Counters shown in `.sessionfs-stats`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    pub loaded: usize,
    pub charged_bytes: usize,
    pub max_index_memory: usize,
    pub max_loaded: usize,
    pub loads: u64,
    pub evictions: u64,
    pub sessions_seen: usize,
    pub projects_seen: usize,
}

/// What a folder of the mount is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The root of a directory mount: project folders and loose sessions.
    Root,
    /// The root of an all-agents mount: one folder per agent.
    Agents,
    /// An agent's sessions directory: laid out as a directory mount's root.
    Agent,
    /// A project folder: sessions.
    Project,
}

/// The root, an agent's folder, or a project folder.
struct Container {
    idx: u32,
    kind: Kind,
    /// The folder holding it (the root holds itself).
    parent: u32,
    parent_ino: u64,
    /// The folder's name in its parent; `None` for the root.
    name: Option<OsString>,
    path: PathBuf,
    /// The mount path of the folder.
    mount_path: PathBuf,
    ino: u64,
    watched: AtomicBool,
    /// The listing read at offset 0, for the calls that continue it.
    listing: Mutex<Option<Arc<Vec<Listed>>>>,
    /// How the folder is listed: as on disk, or from its agent's catalog.
    lister: Lister,
}

/// How a folder's content is found.
#[derive(Clone)]
enum Lister {
    /// Folders and `.jsonl` files on disk.
    Disk,
    /// The root of an agent that lists its sessions itself: its projects, from the
    /// catalog (`model::core::catalog`).
    CatalogRoot(Arc<CatalogRoot>),
    /// A project of such a root: its sessions, from the catalog.
    CatalogProject(Arc<CatalogRoot>),
}

/// The root of an agent that lists its sessions itself (a Codex `sessions/` folder:
/// projects made from its pages' `cwd`s): projects are not read from folders.
struct CatalogRoot {
    path: PathBuf,
    lister: Box<dyn CatalogLister>,
    /// The last scan; `None` once something changed on disk.
    catalog: Mutex<Option<Arc<Catalog>>>,
    /// How many times the catalog was forgotten ([`CatalogRoot::forget`]): a scan
    /// begun before the last time keeps nothing, since it may have missed what the
    /// change brought (a request's scan that started before a session file was
    /// created, and ended after the watcher's own scan, would otherwise hide the new
    /// session until the next change).
    generation: AtomicU64,
    /// The root folder's modification time at the last scan: a name missing from the
    /// scan is looked for again once the folder changed (a session made a moment ago,
    /// which the watcher has not reported yet).
    scanned_mtime: Mutex<Option<SystemTime>>,
}

impl CatalogRoot {
    /// Forgets the last scan after a change on disk: the next [`MultiView::catalog`]
    /// scans again, and no scan begun before this is kept.
    fn forget(&self) -> Option<Arc<Catalog>> {
        let mut cat = self.catalog.lock();
        self.generation.fetch_add(1, Ordering::SeqCst);
        cat.take()
    }
}

/// The watch of a session's own folder (a session whose file lies in a folder the
/// catalog does not watch, as Copilot CLI's `<id>/events.jsonl`) reports as this bit
/// and the session's slot, not as a folder of the view.
const SESSION_WATCH: u32 = 1 << 31;

/// The watch of a folder a loaded session reads besides its file's own (a subagent's
/// transcript's, [`SessionView`]'s `watched_dirs`) reports as this bit and the
/// folder's number in [`MultiView::side_watches`].
const SIDE_WATCH: u32 = 1 << 30;

/// See [`MultiView::side_watches`].
#[derive(Default)]
struct SideWatches {
    list: Vec<(u32, PathBuf)>,
    asked: HashSet<PathBuf>,
}

#[derive(Clone)]
struct Listed {
    name: OsString,
    ino: u64,
    kind: FileKind,
}

/// A session's last activity as read (ms; `None`: its files hold no time), with the
/// sizes and modification times (ns) of its files then.
type Activity = (Vec<(u64, i64)>, Option<i64>);

/// A session file, loaded or not.
struct SlotEntry {
    num: u32,
    container: Arc<Container>,
    container_ino: u64,
    /// The directory's name: the file name without `.jsonl` (a Codex thread's id).
    name: OsString,
    /// The file, where it is not `container/name.jsonl` (a Codex thread's first page,
    /// a session of a database: `DB/ID`).
    file: Mutex<Option<PathBuf>>,
    /// Its file's own folder is watched for it (see [`SESSION_WATCH`]).
    folder_watched: AtomicBool,
    /// When the session last changed, when its listing says it (a session of a
    /// database, whose file changes with every session): its directory's mtime.
    mtime: Mutex<Option<SystemTime>>,
    /// A session over several files (a Codex thread's pages): all of them, where its
    /// last activity is read; empty for a session of one file.
    files: Mutex<Vec<PathBuf>>,
    /// The session's last activity (ms; `None`: its files hold no time) and the
    /// sizes and modification times of its files when it was read
    /// (`model::agents::last_activity`): its directory's time in `stat`.
    activity: Mutex<Option<Activity>>,
    last_use: AtomicU64,
    /// The highest label number handed out for this slot, over every load.
    label_hwm: AtomicU64,
    /// Held while the session is indexed or dropped (see "Locks" in the module docs).
    loading: Mutex<()>,
    state: Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    loaded: Option<Arc<Loaded>>,
    failed: Option<Failed>,
    /// Open files through the loaded view: it is not dropped while there are any.
    handles: u32,
    /// Past every entry number handed out so far: the base of a load that cannot
    /// keep the old numbers.
    next_base: u64,
    /// What the last dropped view numbered, to keep it if the file is the same.
    kept: Option<Kept>,
    loads: u64,
    /// The watcher reported a change while another thread held `loading`: that thread
    /// acts on it once it lets go.
    pending: bool,
}

/// What a load starts from, taken from the slot's state.
struct Plan {
    kept: Option<Kept>,
    next_base: u64,
    /// Loaded before: numbers handed out then must not name anything new.
    renumbered: bool,
}

/// A loaded session.
struct Loaded {
    view: SessionView,
    /// The view's invalidations, in its own numbers.
    rx: Mutex<Receiver<Invalidation>>,
    /// Added to the view's label numbers.
    label_off: u64,
    charge: usize,
}

/// A session that cannot be shown, and the file as it was then.
struct Failed {
    text: Arc<Vec<u8>>,
    stat: (u64, u64, u64, i64, i64),
    mtime: SystemTime,
    /// The file could not even be opened (no byte of it read): `ERROR` then says no
    /// more than `ls -l` of the folder does, and is shown with the folder's bits.
    unopened: bool,
}

/// The numbering of a dropped view and the file it indexed.
struct Kept {
    base: u64,
    dev_ino: (u64, u64),
    len: u64,
    /// The last bytes before `len`.
    tail: Vec<u8>,
    entries: usize,
    /// [`prefix_hash`] of those entries.
    hash: u64,
}

/// What a session slot has to offer.
enum Got {
    View(Arc<Loaded>),
    Failed(Arc<Vec<u8>>, SystemTime),
}

/// What an inode number is.
enum Node {
    Root,
    Stats,
    Container(Arc<Container>),
    SessionDir(Arc<SlotEntry>),
    ErrorFile(Arc<SlotEntry>),
    /// An inode of a session's view: (slot, mapped local number).
    Inner(Arc<SlotEntry>, u64),
}

struct Containers {
    list: Vec<Arc<Container>>,
    /// (parent folder, name) → folder.
    by_name: HashMap<(u32, OsString), u32>,
}

struct Slots {
    list: Vec<Arc<SlotEntry>>,
    by_key: HashMap<(u32, OsString), u32>,
}

/// What a mount does with the path of a session file seen to change
/// ([`MultiView::on_session_changed`]).
pub type SessionChanged = Box<dyn Fn(&Path) + Send + Sync>;

/// A mounted sessions directory. All methods take `&self`; state is behind locks.
pub struct MultiView {
    root: PathBuf,
    opts: MultiOptions,
    containers: RwLock<Containers>,
    slots: RwLock<Slots>,
    /// Slots with a loaded view.
    loaded: Mutex<HashSet<u32>>,
    charged: AtomicUsize,
    clock: AtomicU64,
    loads: AtomicU64,
    evictions: AtomicU64,
    sink: InvalidationSink,
    watch: Mutex<Option<Arc<dyn DirWatch>>>,
    /// Told of each session file seen to change ([`MultiView::on_session_changed`]).
    changed_hook: OnceLock<SessionChanged>,
    /// The folders watched for loaded sessions besides their files' own (see
    /// [`SIDE_WATCH`]): each one's slot and path, numbered by position, and the paths
    /// asked for already. Only grows (a folder gone is asked for again): at most one
    /// entry per side folder of a session loaded since the mount began.
    side_watches: Mutex<SideWatches>,
    /// Open handles of this view's own files (the stats file, `ERROR`).
    handles: Mutex<HashMap<u64, Arc<Vec<u8>>>>,
    next_fh: AtomicU64,
}

fn not_found_or(e: io::Error) -> Error {
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ENOTDIR) | Some(libc::ENAMETOOLONG) => Error::NotFound,
        _ => e.into(),
    }
}

fn mtime_of(md: &fs::Metadata) -> SystemTime {
    md.modified().unwrap_or(UNIX_EPOCH)
}

/// Hash of the tree shape of the first `n` entries: equal before and after an
/// append-only change, which keeps their indices, parents and offsets.
fn prefix_hash(s: &Session, n: usize) -> u64 {
    let mut h = DefaultHasher::new();
    for e in &s.entries()[..n.min(s.entries().len())] {
        (e.offset, e.len, e.parent, e.flags).hash(&mut h);
    }
    h.finish()
}

impl Container {
    /// Does it hold project folders (and loose sessions)?
    fn holds_projects(&self) -> bool {
        matches!(self.kind, Kind::Root | Kind::Agent)
    }
}

impl MultiView {
    /// A view of the sessions directory `root`. Reads nothing but `root`'s `stat`.
    /// The root of an agent that lists its sessions itself (a Codex home, or its
    /// `sessions/` folder) shows them by project, as its lister says.
    pub fn open(root: &Path, opts: MultiOptions) -> io::Result<MultiView> {
        let md = fs::metadata(root)?;
        // A database of sessions (opencode's) is a root its agent lists too.
        if !md.is_dir() && !sessions_dir::is_listed_root(root) {
            return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
        }
        let root = sessions_dir::root_of(root);
        Ok(Self::with_root(&root, Kind::Root, opts))
    }

    /// How the folder at `path` (the folder of agent `agent` in a mount of every
    /// agent) is listed: from its agent's catalog when the agent lists its sessions
    /// itself, else as on disk.
    fn lister_for(path: &Path, agent: Option<&str>) -> Lister {
        match sessions_dir::catalog_of(path, agent) {
            Some((_, lister, _)) => Lister::CatalogRoot(Arc::new(CatalogRoot {
                path: path.to_path_buf(),
                lister,
                catalog: Mutex::new(None),
                generation: AtomicU64::new(0),
                scanned_mtime: Mutex::new(None),
            })),
            None => Lister::Disk,
        }
    }

    /// A view of several agents' sessions directories, one folder each (`pi/`,
    /// `claude/`), each laid out as [`MultiView::open`] lays out its directory. Reads
    /// nothing but their `stat`s.
    pub fn open_agents(agents: &[(&str, PathBuf)], opts: MultiOptions) -> io::Result<MultiView> {
        for (_, p) in agents {
            if !fs::metadata(p)?.is_dir() && !sessions_dir::is_listed_root(p) {
                return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
            }
        }
        let root = agents.first().map(|(_, p)| p.clone()).unwrap_or_default();
        let v = Self::with_root(&root, Kind::Agents, opts);
        {
            let mut cs = v.containers.write();
            // The root lists the agents and nothing else: nothing on disk to watch.
            cs.list[0].watched.store(true, Ordering::Relaxed);
            for (name, path) in agents {
                let idx = cs.list.len() as u32;
                let c = Arc::new(Container {
                    idx,
                    kind: Kind::Agent,
                    parent: 0,
                    parent_ino: ROOT_INO,
                    name: Some(OsString::from(name)),
                    path: path.clone(),
                    mount_path: v.opts.session.mount_point.join(name),
                    ino: CONTAINER_BASE + idx as u64,
                    watched: AtomicBool::new(false),
                    listing: Mutex::new(None),
                    lister: Self::lister_for(path, Some(name)),
                });
                cs.list.push(c);
                cs.by_name.insert((0, OsString::from(name)), idx);
            }
        }
        Ok(v)
    }

    fn with_root(root: &Path, kind: Kind, opts: MultiOptions) -> MultiView {
        let root_c = Arc::new(Container {
            idx: 0,
            kind,
            parent: 0,
            parent_ino: ROOT_INO,
            name: None,
            path: root.to_path_buf(),
            mount_path: opts.session.mount_point.clone(),
            ino: ROOT_INO,
            watched: AtomicBool::new(false),
            listing: Mutex::new(None),
            lister: if kind == Kind::Root {
                Self::lister_for(root, None)
            } else {
                Lister::Disk
            },
        });
        MultiView {
            root: root.to_path_buf(),
            opts,
            containers: RwLock::new(Containers {
                list: vec![root_c],
                by_name: HashMap::new(),
            }),
            slots: RwLock::new(Slots {
                list: Vec::new(),
                by_key: HashMap::new(),
            }),
            loaded: Mutex::new(HashSet::new()),
            charged: AtomicUsize::new(0),
            clock: AtomicU64::new(0),
            loads: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            sink: InvalidationSink::default(),
            watch: Mutex::new(None),
            changed_hook: OnceLock::new(),
            side_watches: Mutex::new(SideWatches::default()),
            handles: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
        }
    }

    /// The sessions directory (the first agent's, for an all-agents view).
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn options(&self) -> &MultiOptions {
        &self.opts
    }

    /// Where invalidations are sent (the adapter's notifier thread).
    pub fn set_invalidation_sink(&self, sink: Sender<Invalidation>) {
        self.sink.set(sink);
    }

    /// Calls `f` with the path of each session file the watcher sees change (appended,
    /// rewritten, new), on the watcher's thread or on the thread that held the
    /// session's `loading` lock: `f` must not block (the mount hands the path on to
    /// the index keeper, `crate::search::fresh`). Set once; later calls are ignored.
    pub fn on_session_changed(&self, f: SessionChanged) {
        let _ = self.changed_hook.set(f);
    }

    fn tell_changed(&self, path: &Path) {
        if let Some(f) = self.changed_hook.get()
            && file_of(path) == path
        {
            f(path);
        }
    }

    /// Where directories to watch are announced; the root and every folder seen so far
    /// are announced at once.
    ///
    /// A catalog listed before (a request as the mount came up, before the watcher
    /// started) was read with nothing watching its folders: they are watched now, then
    /// it is read again, so that a change in between (a commit, a new session) is not
    /// missed until some later change, and no scan begun before is kept.
    pub fn set_dir_watch(&self, w: Arc<dyn DirWatch>) {
        *self.watch.lock() = Some(w.clone());
        let list: Vec<Arc<Container>> = self.containers.read().list.clone();
        for c in list {
            if let Lister::CatalogRoot(r) = &c.lister {
                let old = r.forget();
                if let Some(old) = &old {
                    for f in &old.folders {
                        w.watch_dir(c.idx, f);
                    }
                    self.catalog_renewed(&c, r, Some(old.clone()));
                    continue;
                }
            }
            self.ensure_watched(&c);
        }
    }

    fn ensure_watched(&self, c: &Container) {
        if let Lister::CatalogRoot(r) = &c.lister {
            // A catalog's folders appear as sessions do (Codex's day folders): every
            // scan watches the folders it found (adding a watch twice is harmless).
            if !c.watched.load(Ordering::Relaxed) {
                // A folder that cannot be read is reported by the listing that needs it.
                let _ = self.catalog(c, r);
            }
            return;
        }
        if c.watched.load(Ordering::Relaxed) {
            return;
        }
        let w = self.watch.lock().clone();
        if let Some(w) = w
            && w.watch_dir(c.idx, &c.path)
        {
            c.watched.store(true, Ordering::Relaxed);
        }
    }

    /// Watches the folders loaded session `e` reads besides its file's own (a
    /// subagent's transcripts', its `watched_dirs`), so that a change there is the
    /// session's change: it catches up, and the index keeper is told
    /// ([`MultiView::on_session_changed`]). Folders that do not exist yet are asked
    /// for again at its next change; folders a listing watches already (a project's,
    /// a catalog's) are left to it.
    fn watch_side_folders(&self, e: &SlotEntry, l: &Loaded) {
        let Some(w) = self.watch.lock().clone() else {
            return;
        };
        let path = e.path();
        let own = file_of(&path).parent().map(Path::to_path_buf);
        let mut dirs = l.view.with_session(|s| s.watched_dirs());
        dirs.retain(|d| Some(d) != own.as_ref());
        if dirs.is_empty() {
            return;
        }
        {
            let sw = self.side_watches.lock();
            dirs.retain(|d| !sw.asked.contains(d));
        }
        let catalog = match &e.container.lister {
            Lister::CatalogProject(r) => r.catalog.lock().clone(),
            _ => None,
        };
        dirs.retain(|d| {
            !catalog.as_ref().is_some_and(|c| c.folders.contains(d))
                && !self.containers.read().list.iter().any(|c| &c.path == d)
                && d.is_dir()
        });
        for d in dirs {
            let id = {
                let mut sw = self.side_watches.lock();
                if sw.list.len() as u32 >= SIDE_WATCH - 1 || !sw.asked.insert(d.clone()) {
                    continue;
                }
                sw.list.push((e.num, d.clone()));
                sw.list.len() as u32 - 1
            };
            if !w.watch_dir(SIDE_WATCH | id, &d) {
                self.side_watches.lock().asked.remove(&d);
            }
        }
    }

    /// The counters of `.sessionfs-stats`.
    pub fn stats(&self) -> Stats {
        let loaded = self.loaded.lock().len();
        let sessions_seen = self.slots.read().list.len();
        let projects_seen = self
            .containers
            .read()
            .list
            .iter()
            .filter(|c| c.kind == Kind::Project)
            .count();
        Stats {
            loaded,
            charged_bytes: self.charged.load(Ordering::Relaxed),
            max_index_memory: self.opts.max_index_memory,
            max_loaded: self.opts.max_loaded,
            loads: self.loads.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            sessions_seen,
            projects_seen,
        }
    }

    fn stats_text(&self) -> Vec<u8> {
        let s = self.stats();
        format!(
            "sessions_loaded {}\nloaded_bytes {}\nmax_index_memory {}\nmax_loaded {}\n\
             loads {}\nevictions {}\nsessions_seen {}\nprojects_seen {}\n",
            s.loaded,
            s.charged_bytes,
            s.max_index_memory,
            s.max_loaded,
            s.loads,
            s.evictions,
            s.sessions_seen,
            s.projects_seen
        )
        .into_bytes()
    }

    // ----- containers and slots ------------------------------------------------------

    fn container(&self, idx: u32) -> Option<Arc<Container>> {
        self.containers.read().list.get(idx as usize).cloned()
    }

    /// The project folder `name` in folder `parent`, known from now on.
    fn project(&self, parent: &Container, name: &OsStr) -> Arc<Container> {
        let key = (parent.idx, name.to_os_string());
        let known = {
            let cs = self.containers.read();
            cs.by_name.get(&key).map(|&i| cs.list[i as usize].clone())
        };
        if let Some(c) = known {
            self.ensure_watched(&c);
            return c;
        }
        let c = {
            let mut cs = self.containers.write();
            if let Some(&i) = cs.by_name.get(&key) {
                cs.list[i as usize].clone()
            } else {
                let idx = cs.list.len() as u32;
                let lister = match &parent.lister {
                    Lister::CatalogRoot(r) => Lister::CatalogProject(r.clone()),
                    _ => Lister::Disk,
                };
                let c = Arc::new(Container {
                    idx,
                    kind: Kind::Project,
                    parent: parent.idx,
                    parent_ino: parent.ino,
                    name: Some(name.to_os_string()),
                    path: parent.path.join(name),
                    mount_path: parent.mount_path.join(name),
                    ino: CONTAINER_BASE + idx as u64,
                    // A catalog's project is no folder on disk: its root's watches
                    // cover it.
                    watched: AtomicBool::new(matches!(lister, Lister::CatalogProject(_))),
                    listing: Mutex::new(None),
                    lister,
                });
                cs.list.push(c.clone());
                cs.by_name.insert(key, idx);
                self.sink.send(vec![Invalidation::Inode(STATS_INO)]);
                c
            }
        };
        self.ensure_watched(&c);
        c
    }

    /// The slots of sessions `names` in container `c`, made where missing.
    fn slots_for(&self, c: &Arc<Container>, names: &[OsString]) -> Vec<Arc<SlotEntry>> {
        {
            let s = self.slots.read();
            if let Some(v) = names
                .iter()
                .map(|n| {
                    s.by_key
                        .get(&(c.idx, n.clone()))
                        .map(|&k| s.list[k as usize - 1].clone())
                })
                .collect::<Option<Vec<_>>>()
            {
                return v;
            }
        }
        let mut s = self.slots.write();
        let mut out = Vec::with_capacity(names.len());
        let mut known = 0;
        for n in names {
            let key = (c.idx, n.clone());
            if let Some(&k) = s.by_key.get(&key) {
                out.push(s.list[k as usize - 1].clone());
                known += 1;
                continue;
            }
            if s.list.len() as u64 >= MAX_SLOTS {
                // 16 million sessions seen in one mount: no numbers left for more.
                break;
            }
            let num = s.list.len() as u32 + 1;
            let e = Arc::new(SlotEntry {
                num,
                container: c.clone(),
                container_ino: c.ino,
                name: n.clone(),
                file: Mutex::new(None),
                folder_watched: AtomicBool::new(false),
                mtime: Mutex::new(None),
                files: Mutex::new(Vec::new()),
                activity: Mutex::new(None),
                last_use: AtomicU64::new(0),
                label_hwm: AtomicU64::new(0),
                loading: Mutex::new(()),
                state: Mutex::new(SlotState::default()),
            });
            s.list.push(e.clone());
            s.by_key.insert(key, num);
            out.push(e);
        }
        if out.len() > known {
            self.sink.send(vec![Invalidation::Inode(STATS_INO)]);
        }
        out
    }

    fn slot(&self, num: u32) -> Option<Arc<SlotEntry>> {
        if num == 0 {
            return None;
        }
        self.slots.read().list.get(num as usize - 1).cloned()
    }

    fn known_slot(&self, container: u32, name: &OsStr) -> Option<Arc<SlotEntry>> {
        let s = self.slots.read();
        s.by_key
            .get(&(container, name.to_os_string()))
            .map(|&k| s.list[k as usize - 1].clone())
    }

    fn node(&self, i: u64) -> Result<Node> {
        match i {
            ROOT_INO => return Ok(Node::Root),
            STATS_INO => return Ok(Node::Stats),
            _ => {}
        }
        if i >> SLOT_SHIFT == 0 {
            if i <= CONTAINER_BASE {
                return Err(Error::NotFound);
            }
            let c = self
                .container((i - CONTAINER_BASE) as u32)
                .ok_or(Error::NotFound)?;
            return Ok(Node::Container(c));
        }
        let (slot, local) = split_ino(i);
        let e = self.slot(slot).ok_or(Error::NotFound)?;
        Ok(match local {
            ino::ROOT => Node::SessionDir(e),
            ERROR_LOCAL => Node::ErrorFile(e),
            local => Node::Inner(e, local),
        })
    }

    // ----- numbering -------------------------------------------------------------------

    /// A view's inode number as this mount's.
    fn to_global(e: &SlotEntry, l: &Loaded, local: u64) -> Result<u64> {
        let mapped = if local < LABEL_BASE {
            local
        } else if local < ENTRY_BASE {
            let m = local + l.label_off;
            if m >= ENTRY_BASE {
                return Err(Error::Io(libc::EOVERFLOW));
            }
            e.label_hwm.fetch_max(m, Ordering::Relaxed);
            m
        } else if local > LOCAL_MASK {
            return Err(Error::Io(libc::EOVERFLOW));
        } else {
            local
        };
        Ok(slot_ino(e.num, mapped))
    }

    /// This mount's number (its part below the slot) as the view's.
    fn to_local(l: &Loaded, mapped: u64) -> Result<u64> {
        if (LABEL_BASE..ENTRY_BASE).contains(&mapped) {
            if mapped < LABEL_BASE + l.label_off {
                return Err(Error::Stale);
            }
            return Ok(mapped - l.label_off);
        }
        Ok(mapped)
    }

    fn translate_inv(e: &SlotEntry, l: &Loaded, inv: Invalidation) -> Option<Invalidation> {
        Some(match inv {
            Invalidation::Inode(i) => Invalidation::Inode(Self::to_global(e, l, i).ok()?),
            Invalidation::Entry { parent, name } => Invalidation::Entry {
                parent: Self::to_global(e, l, parent).ok()?,
                name,
            },
            Invalidation::Mark(n) => Invalidation::Mark(n),
        })
    }

    /// Sends on what the view asked to invalidate, holding the view's receiver until it
    /// is sent: a thread that finds the receiver empty knows that what was in it is
    /// queued on the sink ahead of anything it queues next (a writer's flush mark).
    fn forward(&self, e: &SlotEntry, l: &Loaded) {
        let rx = l.rx.lock();
        let invs: Vec<Invalidation> = rx
            .try_iter()
            .filter_map(|i| Self::translate_inv(e, l, i))
            .collect();
        self.sink.send(invs);
    }

    fn attr_out(e: &SlotEntry, l: &Loaded, mut a: Attr) -> Result<Attr> {
        a.ino = Self::to_global(e, l, a.ino)?;
        Ok(a)
    }

    // ----- loading and dropping ------------------------------------------------------

    fn touch(&self, e: &SlotEntry) {
        let t = self.clock.fetch_add(1, Ordering::Relaxed) + 1;
        e.last_use.store(t, Ordering::Relaxed);
    }

    /// The slot's view, loading it if needed (and then dropping others over the
    /// bound), or why it cannot be shown.
    fn get(&self, e: &Arc<SlotEntry>) -> Result<Got> {
        self.touch(e);
        self.get_inner(e, true)
    }

    fn get_inner(&self, e: &Arc<SlotEntry>, used: bool) -> Result<Got> {
        if let Some(l) = &e.state.lock().loaded {
            return Ok(Got::View(l.clone()));
        }
        // One load per session at a time: a second request for the same session waits
        // here for the first one's index, holding nothing that another session needs.
        let guard = e.loading.lock();
        // Requests of other sessions first: see `crate::prio`.
        let lowered = crate::prio::Lowered::new(crate::prio::LOAD_NICE);
        let got = self.load_locked(e);
        drop(lowered);
        drop(guard);
        self.after_loading(e);
        if matches!(got, Ok(Got::View(_))) {
            self.evict(if used { e.num } else { 0 });
        }
        got
    }

    /// Called by whoever held `e.loading`, once released: a change the watcher reported
    /// meanwhile (and could not act on, see `session_changed`) is acted on now.
    fn after_loading(&self, e: &Arc<SlotEntry>) {
        let pending = e.state.lock().pending;
        if pending {
            self.session_changed(e);
        }
    }

    /// The slot's view, loading it now if needed; the caller holds `e.loading`. The file
    /// is indexed with no lock held but that one.
    fn load_locked(&self, e: &Arc<SlotEntry>) -> Result<Got> {
        let md = fs::metadata(file_of(&e.path())).map_err(not_found_or)?;
        if !md.is_file() {
            return Err(Error::NotFound);
        }
        let stat = (md.dev(), md.ino(), md.len(), md.mtime(), md.mtime_nsec());
        let mut invs = Vec::new();
        let plan = {
            let mut st = e.state.lock();
            if let Some(l) = &st.loaded {
                return Ok(Got::View(l.clone()));
            }
            if let Some(f) = &st.failed {
                if f.stat == stat {
                    return Ok(Got::Failed(f.text.clone(), f.mtime));
                }
                // The file changed since: try again, and let the kernel forget `ERROR`.
                st.failed = None;
                invs.extend(Self::forget_error(e));
            }
            Plan {
                kept: st.kept.take(),
                next_base: st.next_base,
                renumbered: st.loads > 0,
            }
        };
        let built = self.build(e, plan, &md);
        let got = {
            let mut st = e.state.lock();
            match built {
                Ok((l, more)) => {
                    invs.extend(more);
                    st.loads += 1;
                    st.loaded = Some(l.clone());
                    self.loaded.lock().insert(e.num);
                    self.charged.fetch_add(l.charge, Ordering::Relaxed);
                    self.loads.fetch_add(1, Ordering::Relaxed);
                    invs.push(Invalidation::Inode(STATS_INO));
                    debug!(
                        "loaded {} (slot {}, {} bytes charged)",
                        e.path().display(),
                        e.num,
                        l.charge
                    );
                    Ok(Got::View(l))
                }
                Err(LoadError::Io(err)) if err.kind() == io::ErrorKind::NotFound => {
                    Err(Error::NotFound)
                }
                Err(err) => {
                    let reason = match &err {
                        LoadError::Io(io) => format!("cannot read the session file: {io}"),
                        other => other.to_string(),
                    };
                    debug!("{}: {reason}", e.path().display());
                    let text =
                        Arc::new(format!("{reason}\nfile: {}\n", e.path().display()).into_bytes());
                    let mtime = mtime_of(&md);
                    st.failed = Some(Failed {
                        text: text.clone(),
                        stat,
                        mtime,
                        unopened: matches!(err, LoadError::Io(_)),
                    });
                    Ok(Got::Failed(text, mtime))
                }
            }
        };
        self.sink.send(invs);
        if let Ok(Got::View(l)) = &got {
            self.watch_side_folders(e, l);
        }
        got
    }

    /// What the kernel may hold of a slot's `ERROR` file, which is about to change.
    fn forget_error(e: &SlotEntry) -> [Invalidation; 3] {
        let dir = slot_ino(e.num, ino::ROOT);
        [
            Invalidation::Inode(dir),
            Invalidation::Entry {
                parent: dir,
                name: ERROR_NAME.into(),
            },
            Invalidation::Inode(slot_ino(e.num, ERROR_LOCAL)),
        ]
    }

    /// Indexes the session with the right numbering (see the module docs), with no
    /// lock held; the view and the invalidations its numbering calls for.
    fn build(
        &self,
        e: &SlotEntry,
        plan: Plan,
        md: &fs::Metadata,
    ) -> std::result::Result<(Arc<Loaded>, Vec<Invalidation>), LoadError> {
        let mut opts = self.opts.session.clone();
        opts.mount_point = e.container.mount_path.join(&e.name);
        opts.in_sessions_dir = true;
        let kept = plan.kept.filter(|k| k.still_prefix_of(&e.path()));
        let mut view = SessionView::open_with_base(
            &e.path(),
            opts.clone(),
            kept.as_ref().map_or(plan.next_base, |k| k.base),
        )?;
        let mut local_invs = Vec::new();
        let mut renumbered = plan.renumbered;
        if let Some(k) = &kept {
            let same = view.with_session(|s| {
                s.entries().len() >= k.entries && prefix_hash(s, k.entries) == k.hash
            });
            if same {
                renumbered = false;
                // Entries appended while the session was not loaded: their parents'
                // listings, and everything at the top that follows the end.
                view.with_session(|s| {
                    let n = s.entries().len();
                    if n == k.entries {
                        return;
                    }
                    local_invs.extend(
                        [
                            ino::ROOT,
                            ino::TREE,
                            ino::LEAF,
                            ino::BRANCHES,
                            ino::LABELS,
                            ino::COST,
                            ino::COST_JSON,
                        ]
                        .map(Invalidation::Inode),
                    );
                    local_invs.push(Invalidation::Inode(ino::NAME));
                    for i in k.entries..n {
                        match s.entry(i as u32).parent {
                            NIL => {}
                            p => {
                                for slot in [Slot::NestedDir, Slot::FlatDir] {
                                    local_invs
                                        .push(Invalidation::Inode(entry_ino(k.base, p, slot)));
                                }
                            }
                        }
                    }
                });
            } else {
                view = SessionView::open_with_base(&e.path(), opts, plan.next_base)?;
            }
        }
        let (tx, rx) = channel();
        view.set_invalidation_sink(tx);
        let heap = view.with_session(|s| s.heap_bytes());
        let charge = heap + md.len().min(CACHE_ALLOWANCE) as usize;
        let hwm = e.label_hwm.load(Ordering::Relaxed);
        let label_off = if hwm >= LABEL_BASE {
            hwm + 1 - LABEL_BASE
        } else {
            0
        };
        let l = Arc::new(Loaded {
            view,
            rx: Mutex::new(rx),
            label_off,
            charge,
        });
        let mut invs: Vec<Invalidation> = local_invs
            .into_iter()
            .filter_map(|i| Self::translate_inv(e, &l, i))
            .collect();
        if renumbered {
            // Numbers from before are stale now: let the kernel forget the session's
            // names (a process inside it gets ESTALE, as when a file is replaced).
            invs.push(Invalidation::Entry {
                parent: e.container_ino,
                name: e.name.clone(),
            });
        }
        Ok((l, invs))
    }

    /// Drops the slot's view if `may(state)` holds before and after; the caller holds
    /// `e.loading`. Returns the invalidations to send, and whether it was dropped.
    ///
    /// With `keep` (an eviction), its numbering is kept for a reload of the same file,
    /// and the kernel keeps what it cached: the numbers stay valid (a shell inside the
    /// session, its `getcwd` included, carries on), and a change to the file meanwhile
    /// reloads the session to say what changed (see `session_changed`). Without (the
    /// file is gone), the kernel is told to forget the session's names.
    ///
    /// The view catches up with the file first, outside the slot's state lock and only
    /// if nothing else holds its index: requests that got the view meanwhile go on
    /// using it, and one that opened a file in it (or, for an eviction, used it) makes
    /// `may` fail the second time. So an eviction never waits for work in the session
    /// it drops (drawing its `tree`, say): the request that made room goes on.
    fn unload(
        &self,
        e: &SlotEntry,
        keep: bool,
        may: impl Fn(&SlotState) -> bool,
    ) -> (Vec<Invalidation>, bool) {
        let l = {
            let st = e.state.lock();
            match &st.loaded {
                Some(l) if may(&st) => l.clone(),
                _ => return (Vec::new(), false),
            }
        };
        // The file as it is now, then catch up: the view then covers at least this. An
        // eviction does not wait for that: a view in use right now (its index locked),
        // or whose file was replaced (a whole new index), is not dropped this time.
        let before = Kept::stamp(&e.path());
        if keep && !l.view.catch_up_if_idle() {
            return (Vec::new(), false);
        }
        let mut invs: Vec<Invalidation> =
            l.rx.lock()
                .try_iter()
                .filter_map(|i| Self::translate_inv(e, &l, i))
                .collect();
        let base = l.view.inode_base();
        let (n, hash) = l
            .view
            .with_session(|s| (s.entries().len(), prefix_hash(s, s.entries().len())));
        let mut st = e.state.lock();
        let same = st.loaded.as_ref().is_some_and(|x| Arc::ptr_eq(x, &l));
        if !same || !may(&st) {
            return (invs, false);
        }
        st.loaded = None;
        st.next_base = st.next_base.max(base + (n as u64 + 1) * SLOTS);
        st.kept = match (keep, before) {
            (true, Some((dev_ino, len, tail))) => Some(Kept {
                base,
                dev_ino,
                len,
                tail,
                entries: n,
                hash,
            }),
            _ => None,
        };
        self.loaded.lock().remove(&e.num);
        self.charged.fetch_sub(l.charge, Ordering::Relaxed);
        invs.push(Invalidation::Inode(STATS_INO));
        if !keep {
            invs.push(Invalidation::Entry {
                parent: e.container_ino,
                name: e.name.clone(),
            });
        }
        debug!("dropped {} (slot {})", e.path().display(), e.num);
        (invs, true)
    }

    fn over_bound(&self) -> bool {
        self.charged.load(Ordering::Relaxed) > self.opts.max_index_memory
            || self.loaded.lock().len() > self.opts.max_loaded
    }

    /// Drops least recently used sessions (never `keep`, nor any with open files, nor
    /// one being loaded or dropped by another thread) until the loaded ones fit the
    /// bounds.
    fn evict(&self, keep: u32) {
        if !self.over_bound() {
            return;
        }
        let mut cands: Vec<(u64, Arc<SlotEntry>)> = {
            let loaded: Vec<u32> = self.loaded.lock().iter().copied().collect();
            let slots = self.slots.read();
            loaded
                .into_iter()
                .filter(|&s| s != keep)
                .filter_map(|s| slots.list.get(s as usize - 1).cloned())
                .map(|e| (e.last_use.load(Ordering::Relaxed), e))
                .collect()
        };
        cands.sort_by_key(|(t, _)| *t);
        let mut freed = 0;
        for (t, e) in cands {
            if !self.over_bound() {
                break;
            }
            let Some(guard) = e.loading.try_lock() else {
                continue;
            };
            let (invs, dropped) = self.unload(&e, true, |st| {
                st.handles == 0 && e.last_use.load(Ordering::Relaxed) == t
            });
            drop(guard);
            self.sink.send(invs);
            self.after_loading(&e);
            if dropped {
                self.evictions.fetch_add(1, Ordering::Relaxed);
                freed += 1;
            }
        }
        if freed > 0 {
            trim_heap();
        }
    }

    // ----- attributes --------------------------------------------------------------

    /// A folder's attributes: its own on disk; a catalog's project's are its root's.
    fn container_attr(&self, c: &Container) -> Result<Attr> {
        match &c.lister {
            Lister::CatalogProject(r) => self.dir_attr(c.ino, &folder_of(&r.path)),
            _ => self.dir_attr(c.ino, &folder_of(&c.path)),
        }
    }

    /// A folder of the sessions directory: the folder's own owner, group and bits (read
    /// and search only: the mount never writes there).
    fn dir_attr(&self, ino: u64, path: &Path) -> Result<Attr> {
        let md = fs::metadata(path).map_err(not_found_or)?;
        if !md.is_dir() {
            return Err(Error::NotFound);
        }
        Ok(Attr::shown(
            ino,
            FileKind::Dir,
            0,
            mtime_of(&md),
            SHORT,
            Access::of(&md),
            false,
        ))
    }

    /// A session's directory, from its file's `stat` alone (the file's owner, group and
    /// bits); once the session is indexed, the view's own root (narrowed by the other
    /// files it shows, see `Session::access`).
    fn session_dir_attr(&self, e: &SlotEntry) -> Result<Attr> {
        let md = fs::metadata(file_of(&e.path())).map_err(not_found_or)?;
        if !md.is_file() {
            return Err(Error::NotFound);
        }
        let mtime = Self::session_time(e, &md);
        let (loaded, failed) = {
            let st = e.state.lock();
            (st.loaded.clone(), st.failed.is_some())
        };
        if failed {
            // Its `ERROR`'s bits (see `failed_access`).
            return Ok(Attr::shown(
                slot_ino(e.num, ino::ROOT),
                FileKind::Dir,
                0,
                mtime,
                SHORT,
                self.failed_access(e),
                false,
            ));
        }
        if let Some(l) = loaded
            && let Ok(a) = l.view.getattr(ino::ROOT)
        {
            return Ok(Attr {
                ino: slot_ino(e.num, ino::ROOT),
                mtime,
                ttl: SHORT,
                ..a
            });
        }
        Ok(self.session_dir_attr_of(e, &md))
    }

    /// A session's directory before it is indexed: its file's owner, group and bits;
    /// a file the mounting user may not read at all will be an `ERROR` with its folder's
    /// bits (see `failed_access`), and is shown so from the start, so that the user
    /// can enter it and read why.
    fn session_dir_attr_of(&self, e: &SlotEntry, md: &fs::Metadata) -> Attr {
        let readable = std::ffi::CString::new(file_of(&e.path()).as_os_str().as_bytes())
            // SAFETY: a valid C string; access(2) only looks.
            .is_ok_and(|c| unsafe { libc::access(c.as_ptr(), libc::R_OK) } == 0);
        let access = if readable {
            Access::of(md)
        } else {
            fs::metadata(&e.container.path).map_or(
                Access {
                    mode: 0o400,
                    ..self.own_access()
                },
                |m| Access::of(&m),
            )
        };
        Attr::shown(
            slot_ino(e.num, ino::ROOT),
            FileKind::Dir,
            0,
            Self::session_time(e, md),
            SHORT,
            access,
            false,
        )
    }

    /// A session directory's time is the session's last activity, by the agent's own
    /// clock (the newest time its files' last lines hold: `model::core::activity`), so
    /// that `ls -t` and `ls -l` list the newest first whatever a copy did to the files'
    /// times; read again when a file's size or time changes, and the file's
    /// modification time when they hold none. A listing that knows the time better
    /// (a session of a database, whose file changes with every session) gives it.
    fn session_time(e: &SlotEntry, md: &fs::Metadata) -> SystemTime {
        if let Some(t) = *e.mtime.lock() {
            return t;
        }
        Self::activity(e)
            .map(|ms| UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64))
            .unwrap_or_else(|| mtime_of(md))
    }

    /// The session's last activity (see [`Self::session_time`]), kept while its files
    /// keep their sizes and times.
    fn activity(e: &SlotEntry) -> Option<i64> {
        let files = {
            let f = e.files.lock();
            if f.is_empty() {
                vec![e.path()]
            } else {
                f.clone()
            }
        };
        let sig: Vec<(u64, i64)> = files
            .iter()
            .map(|p| {
                fs::metadata(p)
                    .map(|m| (m.len(), m.mtime() * 1_000_000_000 + m.mtime_nsec()))
                    .unwrap_or((0, 0))
            })
            .collect();
        if let Some((old, ms)) = &*e.activity.lock()
            && *old == sig
        {
            return *ms;
        }
        let ms = crate::model::agents::last_activity(&files).map(|(ms, _)| ms);
        *e.activity.lock() = Some((sig, ms));
        ms
    }

    /// The mounting user's own: what this view shows of itself (the stats file, the
    /// root of an all-agents mount).
    fn own_access(&self) -> Access {
        Access {
            uid: self.opts.session.uid,
            gid: self.opts.session.gid,
            mode: 0o444,
        }
    }

    /// Who may read what a session that cannot be shown shows (its directory and
    /// `ERROR`): its file's owner, group and bits; the mounting user alone when the file
    /// cannot even be looked at.
    ///
    /// A file that could not be opened at all (the mounting user may not read it) gives
    /// its folder's bits instead: its `ERROR` holds the file's path and why, no more
    /// than whoever may list the folder on disk sees, so the mounting user is told why
    /// the session is not shown rather than refused its `ERROR` too. A file that was
    /// read but is no session keeps its own bits (the reason may quote it).
    fn failed_access(&self, e: &SlotEntry) -> Access {
        let unopened = e.state.lock().failed.as_ref().is_some_and(|f| f.unopened);
        let path = if unopened {
            e.container.path.clone()
        } else {
            file_of(&e.path())
        };
        match fs::metadata(&path) {
            Ok(md) => Access::of(&md),
            Err(_) => Access {
                mode: 0o400,
                ..self.own_access()
            },
        }
    }

    fn error_attr(&self, e: &SlotEntry, text: &[u8], mtime: SystemTime) -> Attr {
        Attr::shown(
            slot_ino(e.num, ERROR_LOCAL),
            FileKind::File,
            text.len() as u64,
            mtime,
            SHORT,
            self.failed_access(e),
            false,
        )
    }

    /// The counters change under the kernel's feet, and on a read-only mount it keeps
    /// the file's pages across opens (no OPEN to answer `FOPEN_DIRECT_IO` to): the
    /// notifier's invalidation after a load or an eviction may arrive after the next
    /// read. So the attributes are never cached (a zero TTL makes the kernel ask before
    /// every read) and carry a new mtime each time, which with `FUSE_AUTO_INVAL_DATA`
    /// (see the adapter's `init`) makes the kernel drop the cached page: a read right
    /// after a load shows it.
    fn stats_attr(&self) -> Attr {
        Attr::shown(
            STATS_INO,
            FileKind::File,
            self.stats_text().len() as u64,
            SystemTime::now(),
            Duration::ZERO,
            self.own_access(),
            false,
        )
    }

    fn refuse_write(&self) -> Error {
        if self.opts.session.read_only {
            Error::ReadOnly
        } else {
            Error::Access
        }
    }

    // ----- listings ------------------------------------------------------------------

    /// Reads a folder: project folders and loose sessions at the root, sessions in a
    /// project, as [`sessions_dir::list`] lists them (sorted by name; a folder hides a
    /// loose session of the same name), the same listing `sessionfs grep` walks.
    fn read_listing(&self, c: &Arc<Container>) -> Result<Vec<Listed>> {
        if c.kind == Kind::Agents {
            return Ok(self
                .containers
                .read()
                .list
                .iter()
                .filter(|a| a.kind == Kind::Agent)
                .map(|a| Listed {
                    name: a.name.clone().unwrap_or_default(),
                    ino: a.ino,
                    kind: FileKind::Dir,
                })
                .collect());
        }
        match &c.lister {
            Lister::Disk => {}
            Lister::CatalogRoot(r) => {
                let cat = self.catalog(c, r)?;
                return Ok(cat
                    .projects
                    .keys()
                    .map(|d| Listed {
                        name: d.clone(),
                        ino: self.project(c, d).ino,
                        kind: FileKind::Dir,
                    })
                    .collect());
            }
            Lister::CatalogProject(r) => {
                let root = self.container(c.parent).ok_or(Error::NotFound)?;
                let cat = self.catalog(&root, r)?;
                let name = c.name.clone().unwrap_or_default();
                let sessions = cat.projects.get(&name).ok_or(Error::NotFound)?;
                return Ok(self
                    .catalog_slots(c, sessions)
                    .into_iter()
                    .map(|e| Listed {
                        name: e.name.clone(),
                        ino: slot_ino(e.num, ino::ROOT),
                        kind: FileKind::Dir,
                    })
                    .collect());
            }
        }
        let listing = sessions_dir::list(&c.path, c.holds_projects()).map_err(not_found_or)?;
        let (dirs, files) = (listing.projects, listing.sessions);
        let mut out = Vec::with_capacity(dirs.len() + files.len());
        for d in &dirs {
            let p = self.project(c, d);
            out.push(Listed {
                name: d.clone(),
                ino: p.ino,
                kind: FileKind::Dir,
            });
        }
        for e in self.slots_for(c, &files) {
            out.push(Listed {
                name: e.name.clone(),
                ino: slot_ino(e.num, ino::ROOT),
                kind: FileKind::Dir,
            });
        }
        Ok(out)
    }

    /// The sessions of a catalog root `c` by project, scanned again after a change;
    /// every folder found is watched.
    fn catalog(&self, c: &Container, r: &CatalogRoot) -> Result<Arc<Catalog>> {
        if let Some(cat) = &*r.catalog.lock() {
            return Ok(cat.clone());
        }
        let generation = r.generation.load(Ordering::SeqCst);
        let mtime = fs::metadata(&r.path).ok().map(|m| mtime_of(&m));
        let cat = Arc::new(r.lister.scan().map_err(not_found_or)?);
        let w = self.watch.lock().clone();
        if let Some(w) = w {
            let mut all = true;
            for f in &cat.folders {
                all &= w.watch_dir(c.idx, f);
            }
            c.watched.store(all, Ordering::Relaxed);
        }
        // Kept only if nothing changed on disk since the scan began; either way it is
        // at least as new as the request.
        let mut kept = r.catalog.lock();
        if r.generation.load(Ordering::SeqCst) == generation {
            *kept = Some(cat.clone());
            drop(kept);
            *r.scanned_mtime.lock() = mtime;
        }
        Ok(cat)
    }

    /// The slots of a catalog's sessions in project `c`, their files noted. A session
    /// whose file lies in a folder the catalog does not watch (a folder of its own, as a
    /// Copilot CLI session's) has that folder watched for it: its changes are its own.
    fn catalog_slots(&self, c: &Arc<Container>, sessions: &[SessionRef]) -> Vec<Arc<SlotEntry>> {
        let names: Vec<OsString> = sessions.iter().map(|t| t.name.clone()).collect();
        let slots = self.slots_for(c, &names);
        let w = self.watch.lock().clone();
        let root = self.container(c.parent);
        let cat = root.as_ref().and_then(|r| match &r.lister {
            Lister::CatalogRoot(cr) => cr.catalog.lock().clone(),
            _ => None,
        });
        for (e, t) in slots.iter().zip(sessions) {
            {
                let mut f = e.file.lock();
                if f.as_ref() != Some(&t.path) {
                    *f = Some(t.path.clone());
                }
            }
            if let (Some(w), Some(dir)) = (&w, t.path.parent())
                && !e.folder_watched.load(Ordering::Relaxed)
                && cat
                    .as_ref()
                    .is_some_and(|cat| !cat.folders.iter().any(|f| f == dir))
                && w.watch_dir(SESSION_WATCH | e.num, dir)
            {
                e.folder_watched.store(true, Ordering::Relaxed);
            }
            *e.mtime.lock() = t.mtime;
            let mut p = e.files.lock();
            if *p != t.files {
                *p = t.files.clone();
            }
        }
        slots
    }

    fn container_listing(&self, c: &Arc<Container>, offset: u64) -> Result<Vec<(u64, DirEntry)>> {
        let list = if offset == 0 {
            None
        } else {
            c.listing.lock().clone()
        };
        let list = match list {
            Some(l) => l,
            None => {
                let l = Arc::new(self.read_listing(c)?);
                *c.listing.lock() = Some(l.clone());
                l
            }
        };
        let mut out = Vec::new();
        let dots = [
            Listed {
                name: ".".into(),
                ino: c.ino,
                kind: FileKind::Dir,
            },
            Listed {
                name: "..".into(),
                ino: c.parent_ino,
                kind: FileKind::Dir,
            },
        ];
        for (pos, l) in dots
            .iter()
            .chain(list.iter())
            .enumerate()
            .skip(offset as usize)
        {
            out.push((
                pos as u64 + 1,
                DirEntry {
                    ino: l.ino,
                    kind: l.kind,
                    name: l.name.clone(),
                },
            ));
            if out.len() >= READDIR_BATCH {
                break;
            }
        }
        Ok(out)
    }

    // ----- changes on disk -------------------------------------------------------------

    /// Something happened to `name` in folder `container` (0: the root): with
    /// `listing`, it was created, deleted or renamed; otherwise its content or
    /// attributes changed. Called by the watcher.
    pub fn dir_changed(&self, container: u32, name: &OsStr, listing: bool) {
        if container & (SESSION_WATCH | SIDE_WATCH) == SIDE_WATCH {
            // In a folder a loaded session reads besides its file's own: that session
            // changed (a subagent's transcript appended, a new one written).
            let side = self
                .side_watches
                .lock()
                .list
                .get((container & !SIDE_WATCH) as usize)
                .cloned();
            if let Some(e) = side.and_then(|(num, _)| self.slot(num)) {
                self.session_changed(&e);
            }
            return;
        }
        if container & SESSION_WATCH != 0 {
            // In a session's own folder: that session changed (a Copilot CLI session's
            // events.jsonl appended or rewritten, its workspace.yaml rewritten).
            if let Some(e) = self.slot(container & !SESSION_WATCH) {
                self.session_changed(&e);
            }
            return;
        }
        let Some(c) = self.container(container) else {
            return;
        };
        if let Lister::CatalogRoot(r) = &c.lister {
            self.catalog_changed(&c, r, name, listing);
            return;
        }
        if let Lister::CatalogProject(r) = &c.lister {
            // A session made through the mount (a fork of a session of a database):
            // the root is listed again.
            if let Some(root) = self.container(c.parent) {
                self.catalog_changed(&root, r, name, true);
            }
            return;
        }
        let mut invs = Vec::new();
        let mut rewatch = None;
        if listing {
            *c.listing.lock() = None;
            invs.push(Invalidation::Inode(c.ino));
            let md = fs::metadata(c.path.join(name)).ok();
            let is_dir = md.as_ref().is_some_and(|m| m.is_dir());
            let is_file = md.as_ref().is_some_and(|m| m.is_file());
            // Names that are still there keep their numbers: the kernel's entries for
            // them stay right. Names that went (or changed from a session to a project
            // folder) are forgotten.
            if c.holds_projects() {
                let project = {
                    let cs = self.containers.read();
                    cs.by_name
                        .get(&(c.idx, name.to_os_string()))
                        .map(|&i| cs.list[i as usize].clone())
                };
                if let Some(p) = &project {
                    *p.listing.lock() = None;
                    invs.push(Invalidation::Inode(p.ino));
                    if is_dir {
                        // It may be a new folder under the old name: watch it again.
                        p.watched.store(false, Ordering::Relaxed);
                        rewatch = project.clone();
                    }
                }
                if !(is_dir && project.is_some()) {
                    invs.push(Invalidation::Entry {
                        parent: c.ino,
                        name: name.to_os_string(),
                    });
                }
            }
            if let Some(stem) = session_stem(name)
                && !is_file
            {
                invs.push(Invalidation::Entry {
                    parent: c.ino,
                    name: stem,
                });
            }
        }
        self.sink.send(invs);
        if let Some(p) = rewatch {
            self.ensure_watched(&p);
        }
        if session_stem(name).is_some() {
            // A session not entered yet changes too (a new one is written).
            let p = c.path.join(name);
            if fs::metadata(&p).is_ok_and(|m| m.is_file()) {
                self.tell_changed(&p);
            }
        }
        if let Some(stem) = session_stem(name)
            && let Some(e) = self.known_slot(container, &stem)
        {
            self.session_changed(&e);
        }
    }

    /// Something happened to `name` in one of a catalog root's folders. A new or
    /// gone file or folder means a new scan (new folders are watched by it, and the
    /// listings of the root and its projects are invalidated); a file of a session
    /// that changed, appeared or went ([`CatalogLister::session_of`]) makes the
    /// session catch up (a new Codex page is a rewind).
    fn catalog_changed(&self, c: &Arc<Container>, r: &CatalogRoot, name: &OsStr, listing: bool) {
        if r.lister.changes_every_session(name) {
            self.catalog_changed_all(c, r);
            return;
        }
        // A file of a session not listed yet (hidden: a Codex thread its picker left
        // empty): its first line lists it. With no catalog now (forgotten, a scan not
        // kept, or one under way that may have read the file before this change), the
        // session may be such a one: listed again, or the kernel would keep the
        // listing it has, without the session, until the next change.
        let listing = listing
            || r.lister.session_of(name).is_some_and(|s| {
                r.catalog
                    .lock()
                    .as_ref()
                    .is_none_or(|cat| cat.hidden.contains(&s))
            });
        let mut invs = Vec::new();
        // A write can make a file a session (see `Lister::changes_listing`).
        let listing = listing || r.lister.changes_listing(name);
        if listing {
            let old = r.forget();
            // The scan watches new folders at once: a folder made for a new session
            // (a Codex day folder) must not wait for someone to list the mount.
            let cat = self.catalog(c, r).ok();
            // Sessions the scan found that the last one did not (their folder came
            // with them, or before its watch): told of, as their files are new.
            if let (Some(old), Some(new)) = (&old, &cat)
                && self.changed_hook.get().is_some()
            {
                let before: HashSet<&OsStr> = old
                    .projects
                    .values()
                    .flatten()
                    .map(|t| t.name.as_os_str())
                    .collect();
                for t in new.projects.values().flatten() {
                    if !before.contains(t.name.as_os_str()) {
                        for f in std::iter::once(&t.path).chain(&t.files) {
                            if fs::metadata(f).is_ok_and(|m| m.is_file()) {
                                self.tell_changed(f);
                            }
                        }
                    }
                }
            }
            *c.listing.lock() = None;
            invs.push(Invalidation::Inode(c.ino));
            let projects: Vec<Arc<Container>> = self
                .containers
                .read()
                .list
                .iter()
                .filter(|p| p.parent == c.idx && p.idx != c.idx)
                .cloned()
                .collect();
            for p in projects {
                *p.listing.lock() = None;
                invs.push(Invalidation::Inode(p.ino));
                let name = p.name.clone().unwrap_or_default();
                let gone = cat
                    .as_ref()
                    .is_some_and(|cat| !cat.projects.contains_key(&name));
                if gone {
                    invs.push(Invalidation::Entry {
                        parent: c.ino,
                        name,
                    });
                }
                // Threads that went: forget their names.
                if let Some(cat) = &cat {
                    let here = cat.projects.get(p.name.as_deref().unwrap_or_default());
                    let s = self.slots.read();
                    for e in s.list.iter().filter(|e| e.container.idx == p.idx) {
                        if here.is_none_or(|v| !v.iter().any(|t| t.name == e.name)) {
                            invs.push(Invalidation::Entry {
                                parent: p.ino,
                                name: e.name.clone(),
                            });
                        }
                    }
                }
            }
        }
        self.sink.send(invs);
        let Some(session) = r.lister.session_of(name) else {
            return;
        };
        // The file that changed is told of whether its session was entered or not
        // (a session with no slot yet is not told of below).
        if self.changed_hook.get().is_some() {
            let cat = r.catalog.lock().clone();
            if let Some(t) = cat.as_ref().and_then(|cat| cat.find(&session)) {
                let file = t
                    .files
                    .iter()
                    .find(|f| f.file_name() == Some(name))
                    .unwrap_or(&t.path);
                if fs::metadata(file).is_ok_and(|m| m.is_file()) {
                    self.tell_changed(file);
                }
            }
        }
        let slots: Vec<Arc<SlotEntry>> = self
            .slots
            .read()
            .list
            .iter()
            .filter(|e| {
                e.name == session
                    && matches!(&e.container.lister, Lister::CatalogProject(p) if std::ptr::eq(&**p, r))
            })
            .cloned()
            .collect();
        for e in slots {
            if listing && let Some(cat) = r.catalog.lock().clone() {
                // The file a session is opened from may have changed (a Codex first
                // page compressed, or written after a later one).
                if let Some(t) = cat.find(&session) {
                    *e.file.lock() = Some(t.path.clone());
                }
            }
            self.session_changed(&e);
        }
    }

    /// A file every session of catalog root `c` lives in changed (a database): the
    /// listing is read again and what changed in it invalidated (projects and sessions
    /// that came or went, sessions whose time moved), and every loaded session of the
    /// root catches up, or only those the lister says changed
    /// ([`CatalogLister::sessions_changed`]).
    fn catalog_changed_all(&self, c: &Arc<Container>, r: &CatalogRoot) {
        let old = r.forget();
        self.catalog_renewed(c, r, old);
    }

    /// [`catalog_changed_all`](Self::catalog_changed_all) once the catalog `old` was
    /// forgotten.
    fn catalog_renewed(&self, c: &Arc<Container>, r: &CatalogRoot, old: Option<Arc<Catalog>>) {
        let new = self.catalog(c, r).ok();
        let projects: Vec<Arc<Container>> = self
            .containers
            .read()
            .list
            .iter()
            .filter(|p| p.parent == c.idx && p.idx != c.idx)
            .cloned()
            .collect();
        let mut invs = Vec::new();
        if old.as_deref() != new.as_deref() {
            *c.listing.lock() = None;
            invs.push(Invalidation::Inode(c.ino));
            for p in &projects {
                let pname = p.name.clone().unwrap_or_default();
                let before = old.as_ref().and_then(|o| o.projects.get(&pname));
                let after = new.as_ref().and_then(|n| n.projects.get(&pname));
                if before == after {
                    continue;
                }
                *p.listing.lock() = None;
                invs.push(Invalidation::Inode(p.ino));
                if after.is_none() {
                    invs.push(Invalidation::Entry {
                        parent: c.ino,
                        name: pname.clone(),
                    });
                }
                let s = self.slots.read();
                for e in s.list.iter().filter(|e| e.container.idx == p.idx) {
                    match after.and_then(|v| v.iter().find(|t| t.name == e.name)) {
                        None => invs.push(Invalidation::Entry {
                            parent: p.ino,
                            name: e.name.clone(),
                        }),
                        Some(t) => {
                            let mut m = e.mtime.lock();
                            if *m != t.mtime {
                                *m = t.mtime;
                                invs.push(Invalidation::Inode(slot_ino(e.num, ino::ROOT)));
                            }
                        }
                    }
                }
            }
        }
        self.sink.send(invs);
        // Only the sessions the change concerns, when the lister can tell.
        let only: Option<HashSet<OsString>> =
            r.lister.sessions_changed().map(|v| v.into_iter().collect());
        let loaded: Vec<Arc<SlotEntry>> = {
            let ids: Vec<u32> = self.loaded.lock().iter().copied().collect();
            let s = self.slots.read();
            ids.into_iter()
                .filter_map(|k| s.list.get(k as usize - 1).cloned())
                .filter(|e| projects.iter().any(|p| p.idx == e.container.idx))
                .filter(|e| only.as_ref().is_none_or(|o| o.contains(&e.name)))
                .collect()
        };
        for e in loaded {
            self.session_changed(&e);
        }
    }

    /// The watch on folder `container` ended (it was deleted or moved away).
    pub fn dir_gone(&self, container: u32) {
        if container & (SESSION_WATCH | SIDE_WATCH) == SIDE_WATCH {
            // Asked for again when its session next changes.
            let mut sw = self.side_watches.lock();
            if let Some((_, d)) = sw.list.get((container & !SIDE_WATCH) as usize).cloned() {
                sw.asked.remove(&d);
            }
            return;
        }
        if container & SESSION_WATCH != 0 {
            // A session's own folder went (or moved): the session went with it; a folder
            // of that name made again is watched when its project is listed again.
            if let Some(e) = self.slot(container & !SESSION_WATCH) {
                e.folder_watched.store(false, Ordering::Relaxed);
                self.session_changed(&e);
            }
            return;
        }
        let Some(c) = self.container(container) else {
            return;
        };
        c.watched.store(false, Ordering::Relaxed);
        *c.listing.lock() = None;
        if let Some(name) = &c.name {
            if let Some(p) = self.container(c.parent) {
                *p.listing.lock() = None;
            }
            self.sink.send(vec![
                Invalidation::Inode(c.parent_ino),
                Invalidation::Entry {
                    parent: c.parent_ino,
                    name: name.clone(),
                },
            ]);
        }
    }

    /// A session's file changed, appeared or went away. Never waits for a load or a
    /// drop of the same session in another thread: that thread acts on the change when
    /// it is done (`after_loading`).
    fn session_changed(&self, e: &Arc<SlotEntry>) {
        loop {
            e.state.lock().pending = true;
            let Some(guard) = e.loading.try_lock() else {
                return;
            };
            e.state.lock().pending = false;
            let loaded_now = self.session_changed_locked(e);
            drop(guard);
            if loaded_now {
                self.evict(0);
            }
            if !e.state.lock().pending {
                return;
            }
        }
    }

    /// `session_changed` with `e.loading` held; whether the session was loaded.
    fn session_changed_locked(&self, e: &Arc<SlotEntry>) -> bool {
        let dir = slot_ino(e.num, ino::ROOT);
        let mut invs = vec![Invalidation::Inode(dir)];
        let path = e.path();
        let md = fs::metadata(file_of(&path)).ok().filter(|m| m.is_file());
        let exists = md.is_some();
        if exists {
            self.tell_changed(&path);
        }
        let (loaded, reload, drop_it) = {
            let mut st = e.state.lock();
            if !exists {
                st.failed = None;
                // Gone: nothing to keep; a new file by that name starts afresh.
                st.kept = None;
                (None, false, st.handles == 0 && st.loaded.is_some())
            } else {
                // Dropped earlier, so the kernel may still hold its numbers and cached
                // listings: load it to tell the kernel what changed.
                let reload =
                    st.loaded.is_none()
                        && st.kept.as_ref().zip(md.as_ref()).is_some_and(|(k, m)| {
                            (m.dev(), m.ino()) != k.dev_ino || m.len() != k.len
                        });
                if st.failed.is_some() {
                    // It may have become a session: try again when next entered.
                    st.failed = None;
                    invs.extend(Self::forget_error(e));
                }
                (st.loaded.clone(), reload, false)
            }
        };
        if drop_it {
            invs.extend(self.unload(e, false, |st| st.handles == 0).0);
        }
        self.sink.send(invs);
        if let Some(l) = loaded {
            if let Err(err) = l.view.refresh() {
                debug!("refreshing {}: {err:?}", e.path().display());
            }
            self.forward(e, &l);
            // A side folder may have appeared (a session's first subagent).
            self.watch_side_folders(e, &l);
        } else if reload {
            // Without counting it as a use: it is the first to be dropped again.
            match self.load_locked(e) {
                Ok(Got::View(_)) => return true,
                Ok(Got::Failed(..)) => {}
                Err(err) => debug!("reloading {}: {err:?}", e.path().display()),
            }
        }
        false
    }

    /// Catches up every loaded session with its file (the watcher's safety net).
    pub fn refresh_loaded(&self) {
        let loaded: Vec<u32> = self.loaded.lock().iter().copied().collect();
        for s in loaded {
            let Some(e) = self.slot(s) else { continue };
            let l = e.state.lock().loaded.clone();
            if let Some(l) = l {
                if let Err(err) = l.view.refresh() {
                    debug!("refreshing {}: {err:?}", e.path().display());
                }
                self.forward(&e, &l);
            }
        }
    }

    /// The watcher's safety net, once a second whatever the events: catalogs that can tell
    /// cheaply whether they changed ([`CatalogLister::moved_since`]: a database's) are
    /// read again if they did, and every loaded session catches up with its file.
    pub fn safety_poll(&self) {
        let list: Vec<Arc<Container>> = self.containers.read().list.clone();
        for c in &list {
            if let Lister::CatalogRoot(r) = &c.lister {
                let shown = r.catalog.lock().clone();
                if shown.is_some_and(|cat| r.lister.moved_since(&cat)) {
                    debug!("{}: changed unannounced; listed again", r.path.display());
                    self.catalog_changed_all(c, r);
                }
            }
        }
        self.refresh_loaded();
    }

    /// Forgets every listing, catalogs included, and catches up every loaded session
    /// (after the watcher lost events).
    pub fn rescan(&self) {
        let list: Vec<Arc<Container>> = self.containers.read().list.clone();
        let mut invs = Vec::new();
        for c in &list {
            *c.listing.lock() = None;
            invs.push(Invalidation::Inode(c.ino));
        }
        self.sink.send(invs);
        for c in &list {
            if let Lister::CatalogRoot(r) = &c.lister {
                self.catalog_changed_all(c, r);
            }
        }
        self.refresh_loaded();
    }

    fn own_open(&self, data: Vec<u8>) -> Opened {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        self.handles.lock().insert(fh, Arc::new(data));
        Opened {
            fh,
            keep_cache: false,
            direct_io: true,
        }
    }

    fn own_read(&self, fh: u64, offset: u64, size: u32) -> Result<Vec<u8>> {
        let h = self.handles.lock();
        let d = h.get(&fh).ok_or(Error::Io(libc::EBADF))?;
        let start = (offset as usize).min(d.len());
        let end = start.saturating_add(size as usize).min(d.len());
        Ok(d[start..end].to_vec())
    }

    /// A fork made through the view of `e` is a new session beside it: shown now.
    fn show_created(&self, e: &SlotEntry, l: &Loaded) {
        // A catalog's project is no folder: its root's listing changed.
        let c = match e.container.lister {
            Lister::CatalogProject(_) => e.container.parent,
            _ => e.container.idx,
        };
        for p in l.view.take_created() {
            if let Some(n) = p.file_name() {
                self.dir_changed(c, n, true);
            }
        }
    }

    /// Runs `f` on the view of `e`, then forwards its invalidations.
    fn in_view<T>(&self, e: &Arc<SlotEntry>, f: impl FnOnce(&Loaded) -> Result<T>) -> Result<T> {
        match self.get(e)? {
            Got::View(l) => {
                let r = f(&l);
                self.forward(e, &l);
                r
            }
            Got::Failed(..) => Err(Error::Stale),
        }
    }
}

impl SlotEntry {
    /// The session file.
    fn path(&self) -> PathBuf {
        if let Some(f) = &*self.file.lock() {
            return f.clone();
        }
        self.container.path.join(with_ext(&self.name))
    }
}

impl Kept {
    /// `(dev, ino)`, length and last bytes of the file now.
    fn stamp(path: &Path) -> Option<((u64, u64), u64, Vec<u8>)> {
        let f = crate::model::input::open_regular(path).ok()?;
        let md = f.metadata().ok()?;
        let len = md.len();
        let k = len.min(64);
        let mut tail = vec![0; k as usize];
        f.read_exact_at(&mut tail, len - k).ok()?;
        Some(((md.dev(), md.ino()), len, tail))
    }

    /// Is the file at `path` still this one, only appended to?
    fn still_prefix_of(&self, path: &Path) -> bool {
        let Ok(f) = crate::model::input::open_regular(path) else {
            return false;
        };
        let Ok(md) = f.metadata() else { return false };
        if (md.dev(), md.ino()) != self.dev_ino || md.len() < self.len {
            return false;
        }
        let k = self.tail.len() as u64;
        let mut now = vec![0; k as usize];
        f.read_exact_at(&mut now, self.len - k).is_ok() && now == self.tail
    }
}

/// Gives freed memory back to the system after sessions were dropped.
fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory at the top of the heap.
    unsafe {
        libc::malloc_trim(0);
    }
}

impl FsView for MultiView {
    fn lookup(&self, parent: u64, name: &OsStr) -> Result<Attr> {
        match self.node(parent)? {
            Node::Root => {
                if name == STATS_NAME {
                    return Ok(self.stats_attr());
                }
                let root = self.container(0).ok_or(Error::NotFound)?;
                self.lookup_in(&root, name)
            }
            Node::Container(c) => self.lookup_in(&c, name),
            Node::SessionDir(e) => match self.get(&e)? {
                Got::Failed(text, mtime) => {
                    if name == ERROR_NAME {
                        Ok(self.error_attr(&e, &text, mtime))
                    } else {
                        Err(Error::NotFound)
                    }
                }
                Got::View(l) => {
                    let a = l.view.lookup(ino::ROOT, name);
                    self.forward(&e, &l);
                    Self::attr_out(&e, &l, a?)
                }
            },
            Node::Inner(e, local) => self.in_view(&e, |l| {
                let a = l.view.lookup(Self::to_local(l, local)?, name)?;
                Self::attr_out(&e, l, a)
            }),
            Node::Stats | Node::ErrorFile(_) => Err(Error::NotDir),
        }
    }

    fn getattr_reading(&self, i: u64) -> Result<Attr> {
        match self.node(i)? {
            Node::Inner(e, local) => self.in_view(&e, |l| {
                let a = l.view.getattr_reading(Self::to_local(l, local)?)?;
                Self::attr_out(&e, l, a)
            }),
            _ => self.getattr(i),
        }
    }

    fn getattr(&self, i: u64) -> Result<Attr> {
        match self.node(i)? {
            Node::Root if self.container(0).is_some_and(|r| r.kind == Kind::Agents) => {
                Ok(self.agents_root_attr())
            }
            Node::Root => self.dir_attr(ROOT_INO, &folder_of(&self.root)),
            Node::Stats => Ok(self.stats_attr()),
            Node::Container(c) => self.container_attr(&c),
            Node::SessionDir(e) => self.session_dir_attr(&e),
            Node::ErrorFile(e) => match self.get(&e)? {
                Got::Failed(text, mtime) => Ok(self.error_attr(&e, &text, mtime)),
                Got::View(_) => Err(Error::Stale),
            },
            Node::Inner(e, local) => self.in_view(&e, |l| {
                let a = l.view.getattr(Self::to_local(l, local)?)?;
                Self::attr_out(&e, l, a)
            }),
        }
    }

    fn readlink(&self, i: u64) -> Result<Vec<u8>> {
        match self.node(i)? {
            Node::Inner(e, local) => {
                self.in_view(&e, |l| l.view.readlink(Self::to_local(l, local)?))
            }
            _ => Err(Error::Invalid),
        }
    }

    fn readdir(&self, i: u64, offset: u64) -> Result<Vec<(u64, DirEntry)>> {
        match self.node(i)? {
            Node::Root => {
                let root = self.container(0).ok_or(Error::NotFound)?;
                self.container_listing(&root, offset)
            }
            Node::Container(c) => {
                self.ensure_watched(&c);
                self.container_listing(&c, offset)
            }
            Node::SessionDir(e) => match self.get(&e)? {
                Got::Failed(..) => {
                    let dir = slot_ino(e.num, ino::ROOT);
                    let all = [
                        (dir, FileKind::Dir, "."),
                        (e.container_ino, FileKind::Dir, ".."),
                        (slot_ino(e.num, ERROR_LOCAL), FileKind::File, ERROR_NAME),
                    ];
                    Ok(all
                        .iter()
                        .enumerate()
                        .skip(offset as usize)
                        .map(|(k, &(ino, kind, name))| {
                            (
                                k as u64 + 1,
                                DirEntry {
                                    ino,
                                    kind,
                                    name: name.into(),
                                },
                            )
                        })
                        .collect())
                }
                Got::View(l) => {
                    let list = l.view.readdir(ino::ROOT, offset);
                    self.forward(&e, &l);
                    self.entries_out(&e, &l, list?, true)
                }
            },
            Node::Inner(e, local) => self.in_view(&e, |l| {
                let list = l.view.readdir(Self::to_local(l, local)?, offset)?;
                self.entries_out(&e, l, list, false)
            }),
            Node::Stats | Node::ErrorFile(_) => Err(Error::NotDir),
        }
    }

    fn readdirplus(&self, i: u64, offset: u64) -> Result<Vec<(u64, DirEntry, Attr)>> {
        let plus_inner = |e: &Arc<SlotEntry>, l: &Loaded, local: u64, top: bool| {
            let list = l.view.readdirplus(local, offset)?;
            let mut out = Vec::with_capacity(list.len());
            for (off, mut d, a) in list {
                let a = Self::attr_out(e, l, a)?;
                d.ino = if top && d.name == ".." {
                    e.container_ino
                } else {
                    a.ino
                };
                out.push((off, d, a));
            }
            Ok(out)
        };
        match self.node(i)? {
            Node::SessionDir(e) => match self.get(&e)? {
                Got::View(l) => {
                    let r = plus_inner(&e, &l, ino::ROOT, true);
                    self.forward(&e, &l);
                    r
                }
                Got::Failed(text, mtime) => {
                    let list = self.readdir(i, offset)?;
                    Ok(list
                        .into_iter()
                        .map(|(off, d)| {
                            let a = if d.kind == FileKind::File {
                                self.error_attr(&e, &text, mtime)
                            } else {
                                Attr::shown(
                                    d.ino,
                                    FileKind::Dir,
                                    0,
                                    mtime,
                                    SHORT,
                                    self.failed_access(&e),
                                    false,
                                )
                            };
                            (off, d, a)
                        })
                        .collect())
                }
            },
            Node::Inner(e, local) => {
                self.in_view(&e, |l| plus_inner(&e, l, Self::to_local(l, local)?, false))
            }
            Node::Root | Node::Container(_) => {
                let mut out = Vec::new();
                let mut next = offset;
                // An empty answer ends the listing: go on past names that went away.
                while out.is_empty() {
                    let mut list = self.readdir(i, next)?;
                    if list.is_empty() {
                        break;
                    }
                    list.truncate(READDIRPLUS_BATCH);
                    for (off, d) in list {
                        next = off;
                        let a = if d.ino >> SLOT_SHIFT != 0 && d.name != "." && d.name != ".." {
                            match self.slot(split_ino(d.ino).0) {
                                Some(e) => self.session_dir_attr(&e),
                                None => Err(Error::NotFound),
                            }
                        } else {
                            self.getattr(d.ino)
                        };
                        // A name that went away since the listing was read: left out.
                        match a {
                            Ok(a) => out.push((off, d, a)),
                            Err(Error::NotFound) => {}
                            Err(e) => return Err(e),
                        }
                    }
                }
                Ok(out)
            }
            Node::Stats | Node::ErrorFile(_) => Err(Error::NotDir),
        }
    }

    fn open_file(&self, i: u64, mode: OpenMode, pid: Option<u32>) -> Result<Opened> {
        let write = mode.write;
        match self.node(i)? {
            Node::Root | Node::Container(_) | Node::SessionDir(_) => Err(Error::IsDir),
            Node::Stats => {
                if write {
                    return Err(self.refuse_write());
                }
                Ok(self.own_open(self.stats_text()))
            }
            Node::ErrorFile(e) => {
                if write {
                    return Err(self.refuse_write());
                }
                match self.get(&e)? {
                    Got::Failed(text, _) => Ok(self.own_open(text.to_vec())),
                    Got::View(_) => Err(Error::Stale),
                }
            }
            Node::Inner(e, local) => {
                // Counted before the view is asked, so that it cannot be dropped
                // between the open and the count.
                let l = match self.get(&e)? {
                    Got::View(l) => l,
                    Got::Failed(..) => return Err(Error::Stale),
                };
                {
                    let st = &mut e.state.lock();
                    let same = st.loaded.as_ref().is_some_and(|x| Arc::ptr_eq(x, &l));
                    if !same {
                        return Err(Error::Stale);
                    }
                    st.handles += 1;
                }
                let r = Self::to_local(&l, local).and_then(|lo| l.view.open_file_as(lo, mode, pid));
                if r.is_err() {
                    e.state.lock().handles -= 1;
                }
                self.forward(&e, &l);
                if write {
                    self.show_created(&e, &l);
                }
                r
            }
        }
    }

    fn read(&self, i: u64, fh: u64, offset: u64, size: u32) -> Result<Vec<u8>> {
        if fh == NO_HANDLE {
            // A mount that answers no `open`: by inode, loading the session if needed.
            let data = match self.node(i)? {
                Node::Stats => self.stats_text(),
                Node::ErrorFile(e) => match self.get(&e)? {
                    Got::Failed(text, _) => text.to_vec(),
                    Got::View(_) => return Err(Error::Stale),
                },
                Node::Inner(e, local) => {
                    return self.in_view(&e, |l| {
                        l.view.read(Self::to_local(l, local)?, fh, offset, size)
                    });
                }
                _ => return Err(Error::IsDir),
            };
            let start = (offset as usize).min(data.len());
            let end = start.saturating_add(size as usize).min(data.len());
            return Ok(data[start..end].to_vec());
        }
        match self.node(i)? {
            Node::Stats | Node::ErrorFile(_) => self.own_read(fh, offset, size),
            Node::Inner(e, local) => {
                let l = e
                    .state
                    .lock()
                    .loaded
                    .clone()
                    .ok_or(Error::Io(libc::EBADF))?;
                l.view.read(Self::to_local(&l, local)?, fh, offset, size)
            }
            _ => Err(Error::IsDir),
        }
    }

    fn write(&self, i: u64, fh: u64, offset: u64, data: &[u8]) -> Result<u32> {
        match self.node(i)? {
            Node::Inner(e, local) => {
                let l = e
                    .state
                    .lock()
                    .loaded
                    .clone()
                    .ok_or(Error::Io(libc::EBADF))?;
                let r = l.view.write(Self::to_local(&l, local)?, fh, offset, data);
                self.show_created(&e, &l);
                r
            }
            _ => Err(Error::Io(libc::EBADF)),
        }
    }

    fn touch(&self, i: u64, fh: Option<u64>, pid: Option<u32>) -> Result<()> {
        match self.node(i)? {
            Node::Inner(e, local) => self.in_view(&e, |l| {
                let r = l.view.touch(Self::to_local(l, local)?, fh, pid);
                self.show_created(&e, l);
                r
            }),
            _ => Ok(()),
        }
    }

    fn truncate(&self, i: u64, fh: Option<u64>, size: u64) -> Result<Attr> {
        match self.node(i)? {
            Node::Root | Node::Container(_) | Node::SessionDir(_) => Err(Error::IsDir),
            Node::Stats | Node::ErrorFile(_) => Err(self.refuse_write()),
            Node::Inner(e, local) => self.in_view(&e, |l| {
                let a = l.view.truncate(Self::to_local(l, local)?, fh, size)?;
                Self::attr_out(&e, l, a)
            }),
        }
    }

    fn flush(&self, i: u64, fh: u64, pid: Option<u32>) -> Result<()> {
        match self.node(i)? {
            Node::Inner(e, local) => {
                let Some(l) = e.state.lock().loaded.clone() else {
                    return Ok(());
                };
                let r = l.view.flush_from(Self::to_local(&l, local)?, fh, pid);
                self.forward(&e, &l);
                r
            }
            _ => Ok(()),
        }
    }

    fn release(&self, i: u64, fh: u64) -> Result<()> {
        match self.node(i)? {
            Node::Stats | Node::ErrorFile(_) => {
                self.handles.lock().remove(&fh);
                Ok(())
            }
            Node::Inner(e, local) => {
                let Some(l) = e.state.lock().loaded.clone() else {
                    return Ok(());
                };
                let r = Self::to_local(&l, local).and_then(|lo| l.view.release(lo, fh));
                {
                    let mut st = e.state.lock();
                    st.handles = st.handles.saturating_sub(1);
                }
                self.forward(&e, &l);
                // Sessions that could not be dropped while this file was open can be
                // now (this one, just used, stays).
                self.evict(e.num);
                r
            }
            _ => Ok(()),
        }
    }

    fn symlink(&self, parent: u64, name: &OsStr, target: &Path) -> Result<Attr> {
        match self.node(parent)? {
            Node::Inner(e, local) => self.in_view(&e, |l| {
                let a = l.view.symlink(Self::to_local(l, local)?, name, target)?;
                Self::attr_out(&e, l, a)
            }),
            Node::SessionDir(e) => self.in_view(&e, |l| {
                let a = l.view.symlink(ino::ROOT, name, target)?;
                Self::attr_out(&e, l, a)
            }),
            _ => Err(self.refuse_write()),
        }
    }

    fn unlink(&self, parent: u64, name: &OsStr) -> Result<()> {
        match self.node(parent)? {
            Node::Inner(e, local) => {
                self.in_view(&e, |l| l.view.unlink(Self::to_local(l, local)?, name))
            }
            Node::SessionDir(e) => self.in_view(&e, |l| l.view.unlink(ino::ROOT, name)),
            _ => Err(self.refuse_write()),
        }
    }

    fn rename(
        &self,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
    ) -> Result<()> {
        // Within one session only (its `labels/`); the view refuses the rest.
        let local = |n: Node| match n {
            Node::Inner(e, local) => Some((e, Some(local))),
            Node::SessionDir(e) => Some((e, None)),
            _ => None,
        };
        let (Some((e, from)), Some((e2, to))) =
            (local(self.node(parent)?), local(self.node(newparent)?))
        else {
            return Err(self.refuse_write());
        };
        if !Arc::ptr_eq(&e, &e2) {
            return Err(self.refuse_write());
        }
        self.in_view(&e, |l| {
            let map = |x: Option<u64>| x.map_or(Ok(ino::ROOT), |x| Self::to_local(l, x));
            l.view.rename(map(from)?, name, map(to)?, newname, flags)
        })
    }
}

impl MultiView {
    /// A name in folder `c`: an agent's folder, a project folder or a session.
    fn lookup_in(&self, c: &Arc<Container>, name: &OsStr) -> Result<Attr> {
        match c.kind {
            Kind::Agents => {
                let a = {
                    let cs = self.containers.read();
                    cs.by_name
                        .get(&(0, name.to_os_string()))
                        .map(|&i| cs.list[i as usize].clone())
                };
                let a = a.ok_or(Error::NotFound)?;
                self.container_attr(&a)
            }
            _ if !matches!(c.lister, Lister::Disk) => {
                // An agent that lists its sessions itself: the catalog decides.
                let mut list = self.read_listing(c)?;
                if !list.iter().any(|l| l.name == name)
                    && let Lister::CatalogProject(r) = &c.lister
                    && fs::metadata(&r.path).ok().map(|m| mtime_of(&m)) != *r.scanned_mtime.lock()
                {
                    // A session made a moment ago (a fork, a reply at an earlier entry)
                    // that the watcher has not reported yet: scan again now.
                    r.forget();
                    *c.listing.lock() = None;
                    list = self.read_listing(c)?;
                }
                let l = list
                    .iter()
                    .find(|l| l.name == name)
                    .ok_or(Error::NotFound)?;
                if l.ino >> SLOT_SHIFT == 0 {
                    let p = self.project(c, name);
                    return self.container_attr(&p);
                }
                let e = self.slot(split_ino(l.ino).0).ok_or(Error::NotFound)?;
                self.session_dir_attr(&e)
            }
            Kind::Root | Kind::Agent => {
                if name.is_empty() || name.as_bytes().contains(&b'/') {
                    return Err(Error::NotFound);
                }
                let p = c.path.join(name);
                if fs::metadata(&p).is_ok_and(|m| m.is_dir())
                    && !is_side_folder_on_disk(&c.path, name)
                {
                    let pc = self.project(c, name);
                    return self.dir_attr(pc.ino, &pc.path);
                }
                self.session_in(c, name)
            }
            Kind::Project => self.session_in(c, name),
        }
    }

    /// The root of an all-agents mount: its newest agent folder's time.
    fn agents_root_attr(&self) -> Attr {
        let mtime = self
            .containers
            .read()
            .list
            .iter()
            .filter(|c| c.kind == Kind::Agent)
            .filter_map(|c| fs::metadata(&c.path).ok())
            .map(|m| mtime_of(&m))
            .max()
            .unwrap_or(UNIX_EPOCH);
        Attr::shown(
            ROOT_INO,
            FileKind::Dir,
            0,
            mtime,
            SHORT,
            self.own_access(),
            false,
        )
    }

    /// The session `name` in folder `c`, if its file is there; with its directory's
    /// attributes.
    fn session_in(&self, c: &Arc<Container>, name: &OsStr) -> Result<Attr> {
        if name.is_empty() || name.as_bytes().contains(&b'/') {
            return Err(Error::NotFound);
        }
        let md = fs::metadata(c.path.join(with_ext(name))).map_err(not_found_or)?;
        if !md.is_file() {
            return Err(Error::NotFound);
        }
        if c.holds_projects()
            && fs::metadata(c.path.join(name)).is_ok_and(|m| m.is_dir())
            && !is_side_folder_on_disk(&c.path, name)
        {
            // A project folder of the same name hides it.
            return Err(Error::NotFound);
        }
        let e = self
            .slots_for(c, &[name.to_os_string()])
            .pop()
            .ok_or(Error::Io(libc::EOVERFLOW))?;
        self.session_dir_attr(&e)
    }

    /// A view's listing in this mount's numbers; `..` of the session's root is its
    /// folder.
    fn entries_out(
        &self,
        e: &SlotEntry,
        l: &Loaded,
        list: Vec<(u64, DirEntry)>,
        top: bool,
    ) -> Result<Vec<(u64, DirEntry)>> {
        list.into_iter()
            .map(|(off, mut d)| {
                d.ino = if top && d.name == ".." {
                    e.container_ino
                } else {
                    Self::to_global(e, l, d.ino)?
                };
                Ok((off, d))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::time::Duration;

    const P: &str = "--home-dev-p--";

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name)
    }

    /// A sessions directory with project `P` holding `a`, `b`, `c` (small.jsonl) and
    /// `bad` (not a session); the view has a tiny memory bound.
    fn setup(bound: usize) -> (tempfile::TempDir, MultiView) {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("sessions");
        fs::create_dir_all(root.join(P)).unwrap();
        for s in ["a", "b", "c"] {
            fs::copy(
                fixture("sessions/small.jsonl"),
                root.join(P).join(format!("{s}.jsonl")),
            )
            .unwrap();
        }
        fs::copy(
            fixture("damaged/corrupt-header-line.jsonl"),
            root.join(P).join("bad.jsonl"),
        )
        .unwrap();
        fs::write(root.join(P).join("notes.txt"), "x").unwrap();
        let mut o = MultiOptions::new(d.path().join("mnt"));
        o.max_index_memory = bound;
        let v = MultiView::open(&root, o).unwrap();
        (d, v)
    }

    fn names(v: &MultiView, ino: u64) -> Vec<String> {
        v.readdir(ino, 0)
            .unwrap()
            .into_iter()
            .map(|(_, d)| d.name.to_string_lossy().into_owned())
            .filter(|n| n != "." && n != "..")
            .collect()
    }

    fn look(v: &MultiView, parent: u64, name: &str) -> u64 {
        v.lookup(parent, OsStr::new(name))
            .unwrap_or_else(|e| panic!("{name}: {e:?}"))
            .ino
    }

    /// A Codex home: thread T in project /w/a (two pages, two days), U in /w/b.
    fn codex_home() -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let home = d.path().join(".codex");
        fs::create_dir_all(&home).unwrap();
        fs::write(home.join("session_index.jsonl"), "").unwrap();
        (d, home)
    }

    const T: &str = "01a2331d-9d4a-7781-acec-f35cf40a4d8b";
    const U: &str = "01a2331d-6282-7e72-8cca-35fb82ba4618";

    fn codex_page(home: &Path, day: &str, name: &str, thread: &str, cwd: &str) -> PathBuf {
        let dir = home.join("sessions").join(day);
        fs::create_dir_all(&dir).unwrap();
        let meta = serde_json::json!({"timestamp":"2026-12-01T19:38:28.000Z","ordinal":0,
            "type":"session_meta","payload":{"id":thread,"cwd":cwd}});
        // A line after the session_meta: a thread of that line alone is empty, and
        // not listed (as Codex's picker does not list it).
        let user = serde_json::json!({"timestamp":"2026-12-01T19:38:29.000Z","ordinal":1,
            "type":"response_item","payload":{"type":"message","role":"user","content":[]}});
        let p = dir.join(name);
        fs::write(&p, format!("{meta}\n{user}\n")).unwrap();
        p
    }

    #[test]
    fn codex_threads_are_listed_by_project() {
        let (d, home) = codex_home();
        let first = codex_page(
            &home,
            "2026/12/01",
            &format!("rollout-2026-12-01T19-38-28-{T}.jsonl"),
            T,
            "/w/a",
        );
        codex_page(
            &home,
            "2026/12/02",
            &format!("rollout-2026-12-02T08-00-00-{T}_{U}.jsonl"),
            T,
            "/w/a",
        );
        let v = MultiView::open(&home, MultiOptions::new(d.path().join("mnt"))).unwrap();
        assert_eq!(v.root(), home.join("sessions"));
        assert_eq!(names(&v, ROOT_INO), vec!["-w-a"]);
        let a = look(&v, ROOT_INO, "-w-a");
        assert_eq!(names(&v, a), vec![T]);
        let t = look(&v, a, T);
        assert_eq!(v.getattr(t).unwrap().kind, FileKind::Dir);
        assert_eq!(v.getattr(a).unwrap().kind, FileKind::Dir);
        assert!(matches!(v.lookup(a, OsStr::new(U)), Err(Error::NotFound)));
        assert!(matches!(
            v.lookup(ROOT_INO, OsStr::new("2026")),
            Err(Error::NotFound)
        ));
        let e = v.slot(split_ino(t).0).unwrap();
        assert_eq!(e.path(), first);
        // A new thread in a new day folder: the watcher reports the folder, then the
        // file; the next listing shows it.
        codex_page(
            &home,
            "2026/12/03",
            &format!("rollout-2026-12-03T08-00-00-{U}.jsonl"),
            U,
            "/w/b",
        );
        let root = v.container(0).unwrap();
        v.dir_changed(root.idx, OsStr::new("03"), true);
        assert_eq!(names(&v, ROOT_INO), vec!["-w-a", "-w-b"]);
        let b = look(&v, ROOT_INO, "-w-b");
        assert_eq!(names(&v, b), vec![U]);
    }

    /// An empty thread's first line lists it, and the root's listing is invalidated,
    /// even when the change comes while the catalog is forgotten (a scan not kept, or
    /// one under way): the kernel keeps listings until told.
    #[test]
    fn an_empty_thread_s_first_line_lists_it_when_the_catalog_is_forgotten() {
        let (d, home) = codex_home();
        let dir = home.join("sessions/2026/12/01");
        fs::create_dir_all(&dir).unwrap();
        let page = dir.join(format!("rollout-2026-12-01T19-38-28-{T}.jsonl"));
        let meta = serde_json::json!({"timestamp":"2026-12-01T19:38:28.000Z","ordinal":0,
            "type":"session_meta","payload":{"id":T,"cwd":"/w/a"}});
        fs::write(&page, format!("{meta}\n")).unwrap();
        let v = MultiView::open(&home, MultiOptions::new(d.path().join("mnt"))).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        v.set_invalidation_sink(tx);
        assert!(
            names(&v, ROOT_INO).is_empty(),
            "the empty thread is not listed"
        );
        let root = v.container(0).unwrap();
        let Lister::CatalogRoot(r) = &root.lister else {
            panic!("a Codex home is listed by its catalog")
        };
        r.forget();
        let user = serde_json::json!({"timestamp":"2026-12-01T19:38:29.000Z","ordinal":1,
            "type":"response_item","payload":{"type":"message","role":"user","content":[]}});
        fs::OpenOptions::new()
            .append(true)
            .open(&page)
            .unwrap()
            .write_all(format!("{user}\n").as_bytes())
            .unwrap();
        v.dir_changed(root.idx, page.file_name().unwrap(), false);
        let sent: Vec<Invalidation> = rx.try_iter().collect();
        assert!(
            sent.contains(&Invalidation::Inode(ROOT_INO)),
            "the root's listing is not invalidated: {sent:?}"
        );
        assert_eq!(names(&v, ROOT_INO), vec!["-w-a"]);
    }

    #[test]
    fn labels_are_renamed_within_a_session_only() {
        let (d, v) = setup(256 << 20);
        let p = look(&v, ROOT_INO, P);
        let (a, b) = (look(&v, p, "a"), look(&v, p, "b"));
        let (la, lb) = (look(&v, a, "labels"), look(&v, b, "labels"));
        let os = OsStr::new;
        v.rename(la, os("alt-2"), la, os("renamed"), 0).unwrap();
        look(&v, la, "renamed");
        assert!(v.lookup(la, os("alt-2")).is_err());
        let text = fs::read_to_string(d.path().join("sessions").join(P).join("a.jsonl")).unwrap();
        assert!(
            text.lines()
                .last()
                .unwrap()
                .contains(r#""label":"renamed""#)
        );
        // Into another session's labels/, or out of labels/: refused.
        let err = |r: Result<()>| r.unwrap_err().errno();
        assert_eq!(
            err(v.rename(la, os("renamed"), lb, os("x"), 0)),
            libc::EACCES
        );
        assert_eq!(
            err(v.rename(la, os("renamed"), a, os("x"), 0)),
            libc::EACCES
        );
        assert_eq!(err(v.rename(p, os("a"), p, os("z"), 0)), libc::EACCES);
        look(&v, lb, "alt-2");
    }

    #[test]
    fn listing_reads_no_session() {
        let (_d, v) = setup(256 << 20);
        assert_eq!(names(&v, ROOT_INO), vec![P]);
        let p = look(&v, ROOT_INO, P);
        assert_eq!(names(&v, p), vec!["a", "b", "bad", "c"]);
        let plus = v.readdirplus(p, 0).unwrap();
        assert_eq!(plus.len(), 6);
        assert!(plus.iter().all(|(_, _, a)| a.kind == FileKind::Dir));
        let a = look(&v, p, "a");
        assert_eq!(split_ino(a), (1, ino::ROOT));
        assert_eq!(v.getattr(a).unwrap().size, 0);
        assert_eq!(v.stats().loads, 0);
        assert_eq!(look(&v, ROOT_INO, STATS_NAME), STATS_INO);
        assert!(v.lookup(p, OsStr::new("notes")).is_err());
        assert!(v.lookup(p, OsStr::new("a.jsonl")).is_err());
        // Entering one loads that one.
        assert!(names(&v, a).contains(&"session.json".to_string()));
        assert_eq!(v.stats().loaded, 1);
    }

    #[test]
    fn numbers_survive_a_drop_and_an_append() {
        let (d, v) = setup(1);
        let p = look(&v, ROOT_INO, P);
        let a = look(&v, p, "a");
        let root = look(&v, a, "e8dfd932");
        let child = look(&v, root, "87720854");
        let kind = look(&v, root, "model_change");
        assert_eq!(split_ino(root).0, split_ino(a).0);
        // Loading b drops a.
        let b = look(&v, p, "b");
        look(&v, b, "e8dfd932");
        let st = v.stats();
        assert_eq!((st.loaded, st.evictions), (1, 1));
        // a comes back with the same numbers.
        assert_eq!(v.getattr(child).unwrap().ino, child);
        assert_eq!(look(&v, a, "e8dfd932"), root);
        assert_eq!(look(&v, root, "87720854"), child);
        // Appended while dropped: still the same numbers, and the new entry is there.
        look(&v, b, "e8dfd932");
        let file = d.path().join("sessions").join(P).join("a.jsonl");
        let mut f = fs::OpenOptions::new().append(true).open(&file).unwrap();
        writeln!(
            f,
            r#"{{"type":"message","id":"cafe0001","parentId":"e8dfd932","timestamp":"2026-01-05T10:00:00.000Z","message":{{"role":"user","content":[{{"type":"text","text":"hi"}}],"timestamp":1767607200000}}}}"#
        )
        .unwrap();
        drop(f);
        let (tx, rx) = channel();
        v.set_invalidation_sink(tx);
        assert_eq!(v.getattr(kind).unwrap().ino, kind);
        assert_eq!(look(&v, root, "87720854"), child);
        let new = look(&v, root, "cafe0001");
        assert!(split_ino(new).1 > split_ino(child).1);
        // The kernel was told that e8dfd932's listing changed.
        let invs: Vec<Invalidation> = rx.try_iter().collect();
        assert!(invs.contains(&Invalidation::Inode(root)), "{invs:?}");
    }

    #[test]
    fn a_file_replaced_while_dropped_gets_new_numbers() {
        let (d, v) = setup(1);
        let p = look(&v, ROOT_INO, P);
        let a = look(&v, p, "a");
        let root = look(&v, a, "e8dfd932");
        let labels = look(&v, a, "labels");
        let label_names = names(&v, labels);
        assert!(!label_names.is_empty());
        let label = look(&v, labels, &label_names[0]);
        let b = look(&v, p, "b");
        look(&v, b, "e8dfd932");
        // Replace a.jsonl by another file with the same content: a new inode.
        let dir = d.path().join("sessions").join(P);
        fs::copy(fixture("sessions/small.jsonl"), dir.join("tmp")).unwrap();
        fs::rename(dir.join("tmp"), dir.join("a.jsonl")).unwrap();
        assert_eq!(v.getattr(root), Err(Error::Stale));
        let root2 = look(&v, a, "e8dfd932");
        assert!(split_ino(root2).1 > split_ino(root).1);
        // Labels are renumbered past every number handed out.
        assert_eq!(v.getattr(label), Err(Error::Stale));
        let label2 = look(&v, labels, &label_names[0]);
        assert!(split_ino(label2).1 > split_ino(label).1, "{label2} {label}");
        assert_eq!(v.readlink(label2).unwrap(), v.readlink(label2).unwrap());
        // The session directory itself keeps its number.
        assert_eq!(look(&v, p, "a"), a);
    }

    #[test]
    fn a_damaged_file_has_an_error_file_until_it_is_repaired() {
        let (d, v) = setup(256 << 20);
        let p = look(&v, ROOT_INO, P);
        let bad = look(&v, p, "bad");
        assert_eq!(names(&v, bad), vec![ERROR_NAME]);
        let err = look(&v, bad, ERROR_NAME);
        let o = v.open_file(err, OpenMode::default(), None).unwrap();
        let text = String::from_utf8(v.read(err, o.fh, 0, 4096).unwrap()).unwrap();
        v.release(err, o.fh).unwrap();
        assert!(
            text.starts_with("not a Pi, Claude Code or Codex session: line "),
            "{text}"
        );
        assert!(text.contains("bad.jsonl"), "{text}");
        assert_eq!(v.getattr(err).unwrap().size, text.len() as u64);
        let write = OpenMode {
            write: true,
            ..OpenMode::default()
        };
        assert!(v.open_file(err, write, None).is_err());
        let file = d.path().join("sessions").join(P).join("bad.jsonl");
        fs::copy(fixture("sessions/small.jsonl"), &file).unwrap();
        v.dir_changed(1, OsStr::new("bad.jsonl"), false);
        assert!(names(&v, bad).contains(&"session.json".to_string()));
        assert!(v.getattr(err).is_err());
    }

    #[test]
    fn open_files_keep_their_session_loaded() {
        let (d, v) = setup(1);
        let p = look(&v, ROOT_INO, P);
        let a = look(&v, p, "a");
        let reply = look(&v, a, "reply");
        let trunc = OpenMode {
            write: true,
            truncate: true,
            append: false,
        };
        let o = v.open_file(reply, trunc, None).unwrap();
        v.write(reply, o.fh, 0, b"written while others load\n")
            .unwrap();
        for s in ["b", "c"] {
            let s = look(&v, p, s);
            look(&v, s, "tree");
        }
        assert_eq!(v.stats().loaded, 2, "a stays, with its open file");
        v.release(reply, o.fh).unwrap();
        let text = fs::read_to_string(d.path().join("sessions").join(P).join("a.jsonl")).unwrap();
        assert!(text.contains("written while others load"));
        let c = look(&v, p, "c");
        look(&v, c, "tree");
        assert_eq!(v.stats().loaded, 1);
    }

    #[test]
    fn deleted_and_created_files_follow_the_disk() {
        let (d, v) = setup(256 << 20);
        let (tx, rx) = channel();
        v.set_invalidation_sink(tx);
        let p = look(&v, ROOT_INO, P);
        let a = look(&v, p, "a");
        look(&v, a, "tree");
        let dir = d.path().join("sessions").join(P);
        fs::remove_file(dir.join("a.jsonl")).unwrap();
        v.dir_changed(1, OsStr::new("a.jsonl"), true);
        assert_eq!(v.stats().loaded, 0);
        assert!(v.lookup(p, OsStr::new("a")).is_err());
        assert_eq!(names(&v, p), vec!["b", "bad", "c"]);
        let invs: Vec<Invalidation> = rx.try_iter().collect();
        assert!(invs.contains(&Invalidation::Inode(p)), "{invs:?}");
        assert!(invs.contains(&Invalidation::Entry {
            parent: p,
            name: "a".into()
        }));
        fs::copy(fixture("sessions/small.jsonl"), dir.join("new.jsonl")).unwrap();
        assert!(names(&v, p).contains(&"new".to_string()));
        // A name reappearing keeps its slot.
        fs::copy(fixture("sessions/small.jsonl"), dir.join("a.jsonl")).unwrap();
        assert_eq!(look(&v, p, "a"), a);
    }

    /// Runs `f` on another thread and gives its result, or `None` if it takes longer
    /// than `limit` (a request that waits on the wrong lock would hang forever).
    fn within<T: Send + 'static>(
        limit: Duration,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Option<T> {
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(limit).ok()
    }

    const LIMIT: Duration = Duration::from_secs(20);

    #[test]
    fn a_session_being_loaded_holds_up_only_requests_for_itself() {
        let (_d, v) = setup(256 << 20);
        let v = Arc::new(v);
        let p = look(&v, ROOT_INO, P);
        let a = look(&v, p, "a");
        let b = look(&v, p, "b");
        look(&v, b, "e8dfd932");
        // Another thread is indexing `a` (it holds a's load lock).
        let slot_a = v.slot(split_ino(a).0).unwrap();
        let indexing = slot_a.loading.lock();
        // Requests in `b`, already loaded, and in `c`, not yet, go through meanwhile.
        let v2 = v.clone();
        let done = within(LIMIT, move || {
            let root = look(&v2, b, "e8dfd932");
            let kind = look(&v2, root, "model_change");
            let o = v2.open_file(kind, OpenMode::default(), None).unwrap();
            let text = v2.read(kind, o.fh, 0, 4096).unwrap();
            v2.release(kind, o.fh).unwrap();
            let c = look(&v2, p, "c");
            names(&v2, c);
            text
        });
        assert!(done.is_some_and(|t| !t.is_empty()), "b and c waited for a");
        // A request in `a` waits for that index, then gets it.
        let v3 = v.clone();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let _ = tx.send(look(&v3, a, "e8dfd932"));
        });
        assert!(
            rx.try_recv().is_err(),
            "a lookup in a did not wait for its index"
        );
        drop(indexing);
        assert!(rx.recv_timeout(LIMIT).is_ok());
        // One index each, however the requests interleaved.
        assert_eq!(v.stats().loads, 3);
    }

    #[test]
    fn two_requests_entering_a_session_index_it_once() {
        let (_d, v) = setup(256 << 20);
        let v = Arc::new(v);
        let p = look(&v, ROOT_INO, P);
        let a = look(&v, p, "a");
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let v = v.clone();
                std::thread::spawn(move || look(&v, a, "e8dfd932"))
            })
            .collect();
        let inos: Vec<u64> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert!(inos.windows(2).all(|w| w[0] == w[1]));
        assert_eq!(v.stats().loads, 1);
    }

    #[test]
    fn the_watcher_never_waits_for_a_load_and_its_change_is_not_lost() {
        let (d, v) = setup(256 << 20);
        let v = Arc::new(v);
        let p = look(&v, ROOT_INO, P);
        let a = look(&v, p, "a");
        let root = look(&v, a, "e8dfd932");
        let slot_a = v.slot(split_ino(a).0).unwrap();
        let busy = slot_a.loading.lock();
        // Appended while another thread holds a's load lock: the watcher reports it and
        // returns at once.
        let file = d.path().join("sessions").join(P).join("a.jsonl");
        let mut f = fs::OpenOptions::new().append(true).open(&file).unwrap();
        writeln!(
            f,
            r#"{{"type":"message","id":"cafe0002","parentId":"e8dfd932","timestamp":"2026-01-05T10:00:00.000Z","message":{{"role":"user","content":[{{"type":"text","text":"hi"}}],"timestamp":1767607200000}}}}"#
        )
        .unwrap();
        drop(f);
        let v2 = v.clone();
        assert!(
            within(LIMIT, move || v2.dir_changed(
                1,
                OsStr::new("a.jsonl"),
                false
            ))
            .is_some(),
            "the watcher waited for the load lock"
        );
        assert!(slot_a.state.lock().pending);
        // The holder acts on it when it lets go.
        drop(busy);
        v.after_loading(&slot_a);
        assert!(!slot_a.state.lock().pending);
        assert!(names(&v, root).contains(&"cafe0002".to_string()));
    }

    #[test]
    fn eviction_skips_a_session_another_thread_is_loading_or_dropping() {
        let (_d, v) = setup(1);
        let p = look(&v, ROOT_INO, P);
        let a = look(&v, p, "a");
        look(&v, a, "e8dfd932");
        let slot_a = v.slot(split_ino(a).0).unwrap();
        let busy = slot_a.loading.lock();
        // Loading b would drop a (the bound holds one session), but a is busy.
        let b = look(&v, p, "b");
        look(&v, b, "e8dfd932");
        assert_eq!((v.stats().loaded, v.stats().evictions), (2, 0));
        drop(busy);
        // The next load that finds the mount over its bound drops it.
        let c = look(&v, p, "c");
        look(&v, c, "e8dfd932");
        assert_eq!(v.stats().loaded, 1);
    }

    #[test]
    fn eviction_does_not_wait_for_work_in_the_session_it_would_drop() {
        let (_d, v) = setup(1);
        let v = Arc::new(v);
        let p = look(&v, ROOT_INO, P);
        let a = look(&v, p, "a");
        look(&v, a, "e8dfd932");
        let la = v
            .slot(split_ino(a).0)
            .unwrap()
            .state
            .lock()
            .loaded
            .clone()
            .unwrap();
        // Something long is going on in a (its index is held, as while `tree` is drawn).
        let (busy_tx, busy_rx) = channel();
        let (done_tx, done_rx) = channel::<()>();
        let worker = std::thread::spawn(move || {
            la.view.with_session(|_| {
                busy_tx.send(()).unwrap();
                let _ = done_rx.recv();
            })
        });
        busy_rx.recv().unwrap();
        // Entering b would drop a to stay under the bound: b is served at once, and a
        // stays for now.
        let v2 = v.clone();
        assert!(
            within(LIMIT, move || {
                let b = look(&v2, p, "b");
                look(&v2, b, "e8dfd932")
            })
            .is_some(),
            "entering b waited for work in a"
        );
        assert_eq!((v.stats().loaded, v.stats().evictions), (2, 0));
        done_tx.send(()).unwrap();
        worker.join().unwrap();
        let c = look(&v, p, "c");
        look(&v, c, "e8dfd932");
        assert_eq!(v.stats().loaded, 1);
    }

    /// A copy of opencode's sample database, kept open in WAL mode as opencode keeps
    /// it, and a view of it.
    fn opencode_view() -> (tempfile::TempDir, PathBuf, rusqlite::Connection, MultiView) {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("opencode.db");
        fs::copy(
            fixture("opencode/samples/home/.local/share/opencode/opencode.db"),
            &db,
        )
        .unwrap();
        let keep = rusqlite::Connection::open(&db).unwrap();
        keep.execute_batch("PRAGMA journal_mode=WAL").unwrap();
        let v = MultiView::open(&db, MultiOptions::new(d.path().join("mnt"))).unwrap();
        (d, db, keep, v)
    }

    /// The project folder of opencode's session `QA`, and that session.
    const OC_QA: (&str, &str) = ("-home-dev-src-qa", "ses_dbae8e944ffe1iTjYgNIN5rQxf");

    /// A session made in the database (a copy of `QA`'s row under id `sid`).
    fn opencode_session(c: &rusqlite::Connection, sid: &str) {
        c.execute_batch(&format!(
            "CREATE TEMP TABLE s AS SELECT * FROM session WHERE id = '{}'; \
             UPDATE s SET id = '{sid}'; INSERT INTO session SELECT * FROM s; DROP TABLE s",
            OC_QA.1
        ))
        .unwrap();
    }

    /// A watch that notes what it was asked to watch.
    #[derive(Default)]
    struct Noted(Mutex<Vec<PathBuf>>);

    impl DirWatch for Noted {
        fn watch_dir(&self, _container: u32, path: &Path) -> bool {
            self.0.lock().push(path.to_path_buf());
            true
        }
    }

    /// A request lists the database as the mount comes up, before the watcher is
    /// started: the watcher watches its folder all the same, and what was committed in
    /// between is listed.
    #[test]
    fn a_database_listed_before_the_watcher_started_is_watched() {
        let (_d, db, keep, v) = opencode_view();
        let qa = look(&v, ROOT_INO, OC_QA.0);
        let before = names(&v, qa);
        assert!(before.iter().any(|n| n == OC_QA.1), "{before:?}");
        opencode_session(&keep, "ses_0000000000001aaaaaaaaaaaaa");
        let w = Arc::new(Noted::default());
        v.set_dir_watch(w.clone());
        let watched = w.0.lock().clone();
        assert!(
            watched.iter().any(|p| Some(p.as_path()) == db.parent()),
            "{watched:?}"
        );
        let after = names(&v, qa);
        assert_eq!(after.len(), before.len() + 1, "{after:?}");
    }

    /// The watcher was woken by a commit's pages before the commit was visible, and
    /// listed what was visible then; no event comes after. The safety poll lists it.
    #[test]
    fn a_commit_listed_too_early_is_listed_at_the_safety_poll() {
        let (_d, db, keep, v) = opencode_view();
        v.set_dir_watch(Arc::new(Noted::default()));
        let qa = look(&v, ROOT_INO, OC_QA.0);
        let before = names(&v, qa);
        let wal = OsString::from(format!("{}-wal", db.file_name().unwrap().to_string_lossy()));
        v.dir_changed(0, &wal, false);
        assert_eq!(names(&v, qa), before);
        opencode_session(&keep, "ses_0000000000001aaaaaaaaaaaaa");
        assert_eq!(names(&v, qa), before, "listed again with no event");
        v.safety_poll();
        let after = names(&v, qa);
        assert_eq!(after.len(), before.len() + 1, "{after:?}");
        // Nothing more: the safety poll lists nothing again.
        let cat = match &v.container(0).unwrap().lister {
            Lister::CatalogRoot(r) => r.catalog.lock().clone().unwrap(),
            _ => unreachable!("a database is a catalog"),
        };
        v.safety_poll();
        let again = match &v.container(0).unwrap().lister {
            Lister::CatalogRoot(r) => r.catalog.lock().clone().unwrap(),
            _ => unreachable!("a database is a catalog"),
        };
        assert!(Arc::ptr_eq(&cat, &again), "read again with nothing changed");
    }
}
