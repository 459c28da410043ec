//! A Codex thread as a core [`Session`]: the thread's pages, and the base pages its
//! history reads, are the session's sources; every `response_item` and `compacted`
//! line of them is an entry (CODEX-FORMAT §3.4).
//!
//! `Session::open` of any page of a thread indexes the whole thread: the page's
//! CODEX_HOME (`…/sessions/YYYY/MM/DD/FILE` → the home; a lone file: its own folder)
//! is searched for the thread's other pages (by file name, no file is read for that)
//! and for the pages their `history_base` links name, a fork's parent pages included.
//! The opened page is source 0; each other page is a source of its own: a plain file
//! read with `pread`, or the decompressed bytes of a `.jsonl.zst` page, with a byte
//! limit for a page of another thread of which only a prefix is history.
//!
//! Entry ids are the store's point ids (`<pageId>:<ordinal>`, see [`super::store`]);
//! `payload.id` finds an entry too. Parents are linked by id, as the store links them:
//! the node before in the page, a page's first node under the last node of its base
//! prefix, so the pages of one thread are siblings where their bases split.
//!
//! **Memory.** The agent keeps [`Codex`], the store's index of those pages: byte
//! ranges and what the tree needs of each line, never a line's bytes (see
//! [`super::page`]). A line is read from its page when something needs it: an entry's
//! content through the core's sources, the lines of a context or of the usage table
//! through the store's reader; a compressed page streams through its decompressor
//! ([`super::zst`]), never held whole. The state of Codex's database the agent keeps
//! is that of the threads it shows ([`State::load_for`]), never the whole `threads`
//! table. All of it is counted in [`Agent::heap_bytes`], which a sessions mount holds
//! against `--max-index-memory`.
//!
//! **Failure.** Nothing a page holds can take the process down: lines longer than
//! `--max-line` are passed over (`check` names them), a page that cannot be read
//! (unreadable, a decompression bomb, a window too large) is a problem of the session
//! and its lines are missing, and every buffer whose size comes from a file is
//! allocated fallibly (`core::input::grow`), so that memory that cannot be had is an
//! error of the session (`ERROR` in a sessions mount) rather than Rust's abort.
//!
//! **Live.** [`Agent::sources_moved`] looks at the pages indexed (grown, cut, gone to
//! their other form), the thread's day folders and today's (a new page: a TUI rewind,
//! or a reply at an earlier entry) and the database's modification time (the current
//! page moves); [`Agent::after_scan`] then reads the thread again and pushes the new
//! nodes, whose parents are always indexed before them.

use super::context::{context_at, preamble_at};
use super::files::{self, PageFile, PageName, Root};
use super::page::{self, Rec};
use super::store::{Codex, NodeIx, Page, Problem};
use super::{render, session, state::State};
use crate::model::core::agent::{Agent, SessionLink, SourcesMoved};
use crate::model::core::fork::{ForkError, ForkFile, Fresh};
use crate::model::core::format::Format;
use crate::model::core::id::IdKey;
use crate::model::core::reply::{AppendError, NewEntry, Write};
use crate::model::core::session::{
    LoadError, NIL, ProblemKind, Session, Severity, Source, SourceData,
};
use crate::model::core::text::Image;
use crate::model::core::usage::prices::Prices;
use crate::model::core::usage::{Record, Source as UsageSource, Table};
use serde_json::Value;
use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why a Codex thread's name is not written.
const NAME_REFUSED: &str =
    "a Codex thread's name is Codex's (`/rename` in the TUI); sessionfs does not write it";
/// Why a Codex thread shows no labels to set.
const LABELS_REFUSED: &str = "Codex threads have no labels";
/// Why the root `reply` of a thread is refused.
const ROOT_REPLY_REFUSED: &str = "a Codex thread has no reply at its root: reply under an entry";
/// Why `fork` is refused.
const FORK_REFUSED: &str = "sessionfs does not fork Codex threads yet: reply at the entry \
     instead (a new page of the thread, as a TUI rewind makes), or run `codex fork`";

/// Is `raw`, the first line of a file, a Codex `session_meta` line?
pub fn looks_like_codex(raw: &[u8]) -> bool {
    // The type is near the front: `{"timestamp":…,"ordinal":0,"type":"session_meta",`.
    let head = &raw[..raw.len().min(200)];
    if memchr::memmem::find(head, b"\"session_meta\"").is_none() {
        return false;
    }
    match serde_json::from_slice::<Value>(raw) {
        Ok(v) => v["type"] == "session_meta" && v["payload"].is_object(),
        Err(_) => false,
    }
}

/// The agents' table's detection: a file whose first line is a `session_meta` line.
pub fn detect(raw: &[u8]) -> Option<Box<dyn Agent>> {
    looks_like_codex(raw).then(|| Box::<CodexThread>::default() as Box<dyn Agent>)
}

/// The longest first line read to recognise a compressed page (a `session_meta` line
/// holds the base instructions, about 20 KB).
const MAX_FIRST_LINE: u64 = 4 << 20;

/// The agents' table's detection of a file of no lines: a compressed page
/// (`….jsonl.zst`, CODEX-FORMAT §8) whose first decompressed line is a
/// `session_meta` line. Its bytes are zstd frames, so the core, which reads a
/// session file's lines, would find no header in it; the thread's agent reads it
/// decompressed instead ([`Agent::opaque_main_file`]). Only the first line is
/// decompressed here.
pub fn detect_compressed(path: &Path) -> Option<Box<dyn Agent>> {
    if path.extension().is_none_or(|e| e != "zst") {
        return None;
    }
    let line = files::first_line(path, MAX_FIRST_LINE)?;
    looks_like_codex(&line).then(|| {
        Box::new(CodexThread {
            main_compressed: true,
            ..CodexThread::default()
        }) as Box<dyn Agent>
    })
}

/// A page indexed: where it is, what was read of it, its source number.
#[derive(Debug, Clone)]
struct Indexed {
    path: PathBuf,
    /// The size of the file read (compressed size for a `.zst`).
    size: u64,
    dev_ino: (u64, u64),
    source: u16,
    /// Only bytes below this belong to the session (a base page of another thread).
    limit: Option<u64>,
}

/// The index state of a Codex thread. See the module docs.
#[derive(Debug, Default)]
pub struct CodexThread {
    thread_id: String,
    /// The Codex home, when the file lies in one.
    home: Option<PathBuf>,
    codex: Codex,
    /// The thread in [`Self::codex`].
    t: usize,
    /// Per entry: its node in [`Self::codex`].
    node_of: Vec<NodeIx>,
    /// Per node: its entry (`NIL` when not in this session).
    entry_of: Vec<u32>,
    /// Pages indexed, by page id.
    pages: HashMap<String, Indexed>,
    name: String,
    session_json: Vec<u8>,
    /// The database's signature when read (size, mtime of the db and its WAL).
    db_sig: Vec<(u64, i64)>,
    /// Folders looked at for new pages of the thread.
    dirs: Vec<PathBuf>,
    /// The forks made from the thread (see [`super::forks`]).
    fork_links: super::forks::Links,
    /// The opened page is a `.jsonl.zst`: the core reads none of it, and its nodes
    /// are read from its decompressed bytes (a source of their own, not source 0).
    main_compressed: bool,
}

impl CodexThread {
    /// The store of the thread's pages (for tests and tools).
    pub fn codex(&self) -> &Codex {
        &self.codex
    }

    /// The node of entry `i`.
    pub fn node(&self, i: u32) -> NodeIx {
        self.node_of[i as usize]
    }

    fn line(&self, i: u32) -> &Rec {
        self.codex.node_line(self.node_of[i as usize])
    }

    fn db_files(&self) -> Vec<PathBuf> {
        match &self.home {
            Some(h) => vec![
                h.join("state_5.sqlite"),
                h.join("state_5.sqlite-wal"),
                h.join("session_index.jsonl"),
            ],
            None => Vec::new(),
        }
    }

    fn db_signature(&self) -> Vec<(u64, i64)> {
        self.db_files()
            .iter()
            .map(|p| {
                std::fs::metadata(p)
                    .map(|m| (m.len(), m.mtime_nsec() + m.mtime() * 1_000_000_000))
                    .unwrap_or((0, 0))
            })
            .collect()
    }

    /// The folders where the thread's pages are, and today's day folder (a new page
    /// goes there).
    fn folders(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = Vec::new();
        let mut add = |p: PathBuf| {
            if !v.contains(&p) {
                v.push(p);
            }
        };
        for p in self.pages.values() {
            if let Some(d) = p.path.parent() {
                add(d.to_path_buf());
            }
        }
        if let Some(h) = &self.home {
            let today = crate::model::core::time::format_iso_ms(crate::model::core::time::now_ms());
            if today.len() >= 10 {
                add(h
                    .join("sessions")
                    .join(&today[0..4])
                    .join(&today[5..7])
                    .join(&today[8..10]));
            }
        }
        v
    }

    /// Pages of the thread in `dirs` not indexed yet.
    fn new_pages_in(&self, dirs: &[PathBuf]) -> bool {
        dirs.iter().any(|d| {
            let Ok(rd) = std::fs::read_dir(d) else {
                return false;
            };
            rd.flatten().any(|e| {
                e.file_name()
                    .to_str()
                    .and_then(files::parse_file_name)
                    .is_some_and(|n| {
                        n.thread_id == self.thread_id && !self.pages.contains_key(&n.page_id)
                    })
            })
        })
    }

    /// The page files of the session: the thread's pages, and the pages their
    /// histories read, each indexed (or why it could not be read).
    fn read_pages(&mut self, main: &Path) -> Result<Vec<Page>, LoadError> {
        // A compressed page Codex has made plain (§8): the plain one is read, and
        // followed, from now on.
        let main = &match files::other_form(main) {
            Some(plain) if self.main_compressed && !main.exists() && plain.exists() => plain,
            _ => main.to_path_buf(),
        };
        let main_name = main
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(files::parse_file_name);
        let main_name = match main_name {
            Some(n) => n,
            // A rollout file renamed: its thread id from its `session_meta`.
            None => {
                let id = files::first_line(main, crate::model::core::input::max_line() as u64)
                    .and_then(|l| page::SessionMeta::of_line(&l))
                    .map(|m| m.thread_id)
                    .filter(|id| !id.is_empty())
                    .ok_or_else(|| LoadError::NotASession {
                        line: 1,
                        reason: "a Codex session_meta line without a thread id".into(),
                    })?;
                PageName {
                    ts: String::new(),
                    thread_id: id.clone(),
                    page_id: id,
                    compressed: self.main_compressed,
                }
            }
        };
        self.thread_id = main_name.thread_id.clone();
        let root = Root::File(main.to_path_buf());
        self.home = root.codex_home();
        // The first time, the whole home is listed (names only); after that the pages
        // indexed (in whichever form they are now) and the thread's folders, unless a
        // base page is not among them.
        let mut full = self.pages.is_empty();
        let mut pool = if full {
            self.full_pool(main)
        } else {
            self.known_pool()
        };
        pool.remove(&main_name.page_id);
        // The indexes read before, kept: a page that grew is read on from where it
        // ended. (Nothing below fails: the store is rebuilt from them.)
        let mut old: HashMap<PathBuf, page::Index> = std::mem::take(&mut self.codex.pages)
            .into_iter()
            .filter(|p| p.read_error.is_none())
            .map(|p| (p.file.path, p.index))
            .collect();
        let main_file = PageFile {
            path: main.to_path_buf(),
            name: main_name.clone(),
        };
        let first = load(&mut old, main_file);
        if let Some(e) = &first.read_error {
            // The opened page itself cannot be read: the session cannot be shown.
            return Err(LoadError::Io(io::Error::other(e.clone())));
        }
        let mut out = vec![first];
        let mine: Vec<String> = pool.ids_of_thread(&self.thread_id);
        for id in mine {
            if let Some(f) = pool.remove(&id) {
                out.push(load(&mut old, f));
            }
        }
        // The bases, recursively (a fork's parent pages, their bases, ...).
        let mut k = 0;
        while k < out.len() {
            let base = out[k]
                .index
                .meta
                .as_ref()
                .and_then(|m| m.history_base.as_ref())
                .map(|hb| hb.page_id.clone());
            if let Some(id) = base
                && !out.iter().any(|p| p.file.name.page_id == id)
            {
                if !full && !pool.contains_key(&id) {
                    full = true;
                    let known: HashSet<String> =
                        out.iter().map(|p| p.file.name.page_id.clone()).collect();
                    pool = self.full_pool(main);
                    pool.taken = known;
                }
                if let Some(f) = pool.remove(&id) {
                    out.push(load(&mut old, f));
                }
            }
            k += 1;
        }
        Ok(out)
    }
}

impl CodexThread {
    /// Every page of the home (or of the lone file's folder), by page id.
    fn full_pool(&self, main: &Path) -> Pool {
        let root = match &self.home {
            Some(h) => Root::Home(h.clone()),
            None => Root::Dir(main.parent().unwrap_or(Path::new(".")).to_path_buf()),
        };
        Pool {
            all: files::discover_by_id(&root),
            taken: HashSet::new(),
        }
    }

    /// The pages indexed, each in the form it has now (a `.zst` made plain), and the
    /// pages in the thread's folders (a new page), by page id.
    fn known_pool(&self) -> Pool {
        let mut found = Vec::new();
        let mut add = |path: PathBuf| {
            if let Some(name) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(files::parse_file_name)
            {
                found.push(PageFile { path, name });
            }
        };
        for p in self.pages.values() {
            add(p.path.clone());
            if let Some(o) = files::other_form(&p.path)
                && o.exists()
            {
                add(o);
            }
        }
        for d in &self.dirs {
            let Ok(rd) = std::fs::read_dir(d) else {
                continue;
            };
            for e in rd.flatten() {
                add(e.path());
            }
        }
        found.retain(|f| f.path.exists());
        Pool {
            all: Arc::new(
                files::dedupe(found)
                    .into_iter()
                    .map(|f| (f.name.page_id.clone(), f))
                    .collect(),
            ),
            taken: HashSet::new(),
        }
    }
}

/// Pages to index from, by page id, each taken once. The home's whole listing is
/// shared, not copied, between the threads a search opens (`files::discover_by_id`).
struct Pool {
    all: Arc<HashMap<String, PageFile>>,
    /// Page ids taken (or not to be taken).
    taken: HashSet<String>,
}

impl Pool {
    fn remove(&mut self, id: &str) -> Option<PageFile> {
        if !self.taken.insert(id.to_string()) {
            return None;
        }
        self.all.get(id).cloned()
    }

    fn contains_key(&self, id: &str) -> bool {
        !self.taken.contains(id) && self.all.contains_key(id)
    }

    /// The pages of thread `t` not taken, in no particular order.
    fn ids_of_thread(&self, t: &str) -> Vec<String> {
        self.all
            .values()
            .filter(|f| f.name.thread_id == t && !self.taken.contains(&f.name.page_id))
            .map(|f| f.name.page_id.clone())
            .collect()
    }
}

/// Page `f`: its index read before, caught up with what was appended since (a plain
/// page that only grew), or read now.
fn load(old: &mut HashMap<PathBuf, page::Index>, f: PageFile) -> Page {
    let before = old.remove(&f.path);
    Page::read_on(f, before)
}

fn dev_ino_size(p: &Path) -> Option<((u64, u64), u64)> {
    std::fs::metadata(p)
        .ok()
        .map(|m| ((m.dev(), m.ino()), m.len()))
}

/// A Codex [`Problem`] as the core's `check` reports it: `(line, kind)`.
fn problem_kind(p: &Problem) -> (u32, ProblemKind) {
    let (line, code) = match p {
        Problem::MissingBase { .. } => (0, "codex-missing-base"),
        Problem::BaseCycle { .. } => (0, "codex-base-cycle"),
        Problem::Unreadable { .. } => (0, "codex-unreadable"),
        Problem::BrokenLine { line, .. } => (*line as u32, "codex-broken-line"),
        Problem::TornTail { .. } => (0, "codex-torn-line"),
        Problem::MissingOrdinal { line, .. } => (*line as u32, "codex-missing-ordinal"),
        Problem::TooLong { line, .. } => (*line as u32, "codex-line-too-long"),
    };
    (
        line,
        ProblemKind::Agent {
            code,
            what: p.to_string(),
        },
    )
}

impl Agent for CodexThread {
    fn format(&self) -> Format {
        Format::Codex
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    /// The lines of the opened page are read by [`Agent::after_scan`] with the
    /// thread's other pages.
    fn indexes_lines(&self) -> bool {
        true
    }
    fn index_line(&mut self, _s: &mut Session, _raw: &[u8], _off: u64, _line_no: u32) {}

    fn has_side_files(&self) -> bool {
        true
    }

    fn opaque_main_file(&self) -> bool {
        self.main_compressed
    }

    /// The database names the current page and the name: a change there moves the
    /// leaf and the name without a new entry.
    fn meta_moves(&self) -> bool {
        true
    }

    fn after_scan(&mut self, s: &mut Session) -> Result<(), LoadError> {
        let main = s.path().to_path_buf();
        let pages = self.read_pages(&main)?;
        // The thread's other pages, its database and name index are opened inside
        // its home.
        if let Some(h) = &self.home {
            s.set_homes(vec![
                h.clone(),
                h.join("sessions"),
                h.join("archived_sessions"),
            ]);
        }
        // The state of the threads shown (this one, the threads whose pages its
        // history reads), not the whole table.
        let state = match self.home.as_deref() {
            Some(h) => {
                let mut ids: Vec<&str> = pages.iter().map(|p| p.thread_id()).collect();
                ids.sort_unstable();
                ids.dedup();
                State::load_for(h, &ids)
            }
            None => State::default(),
        };
        self.codex = Codex::build(pages, state);
        let Some(t) = self.codex.thread(&self.thread_id) else {
            return Err(LoadError::NotASession {
                line: 1,
                reason: "no Codex thread in the file".into(),
            });
        };
        self.t = t;
        let nodes = self.codex.thread_nodes(t);
        let mut in_session = vec![false; self.codex.nodes.len()];
        for &n in &nodes {
            in_session[n] = true;
        }
        // Sources: the opened page is 0; the others by page id.
        let main_page = self
            .codex
            .pages
            .iter()
            .position(|p| p.file.path == main)
            .map(|p| self.codex.pages[p].page_id().to_string());
        let mut limits: HashMap<usize, u64> = HashMap::new();
        for &n in &nodes {
            let r = self.codex.nodes[n];
            let e = limits.entry(r.page).or_insert(0);
            *e = (*e).max(self.codex.line(r).end);
        }
        let mut page_source: HashMap<usize, u16> = HashMap::new();
        for (pi, p) in self.codex.pages.iter().enumerate() {
            let id = p.page_id().to_string();
            let own = p.thread_id() == self.thread_id;
            let limit = if own { None } else { limits.get(&pi).copied() };
            if !own && limit.is_none() {
                continue;
            }
            let (dev_ino, size) = dev_ino_size(&p.file.path).unwrap_or(((0, 0), 0));
            if Some(&id) == main_page.as_ref() && !self.main_compressed {
                page_source.insert(pi, 0);
                self.pages.insert(
                    id,
                    Indexed {
                        path: p.file.path.clone(),
                        size,
                        dev_ino,
                        source: 0,
                        limit: None,
                    },
                );
                continue;
            }
            let data = if p.file.name.compressed {
                SourceData::Reader(p.file.path.clone(), Arc::new(CompressedPage))
            } else {
                SourceData::File(p.file.path.clone())
            };
            let src = Source { data, limit };
            let n = match self.pages.get(&id) {
                Some(old) => {
                    if old.path != p.file.path || old.limit != limit {
                        s.replace_source(old.source, src);
                    }
                    old.source
                }
                None => s.add_source(src)?,
            };
            page_source.insert(pi, n);
            self.pages.insert(
                id,
                Indexed {
                    path: p.file.path.clone(),
                    size,
                    dev_ino,
                    source: n,
                    limit,
                },
            );
        }
        // Entries: the nodes not indexed yet, in pre-order (a parent before its
        // children, so that appended nodes link one at a time). Per node its entry.
        self.entry_of = vec![NIL; self.codex.nodes.len()];
        for &n in &nodes {
            let id = self.codex.id(n);
            let key = s.ids.intern(&id);
            if let Some(i) = s.find_key(key) {
                self.entry_of[n] = i;
                continue;
            }
            let parent = match self.codex.parent(n) {
                Some(p) if in_session[p] => s.ids.intern(&self.codex.id(p)),
                _ => IdKey::NONE,
            };
            let r = self.codex.nodes[n];
            let (ty, kind_name) = self.codex.kind_key(n);
            let kind = s.kinds.intern_named(&ty, &kind_name, &kind_name);
            let line = self.codex.line(r);
            let idx = s.entries.len() as u32;
            let line_no = u32::try_from(line.number).unwrap_or(u32::MAX);
            s.register_id(key, idx, line_no);
            s.push_entry(
                line.start,
                (line.end - line.start).saturating_sub(1) as u32,
                line_no,
                key,
                parent,
                line.ts,
                kind,
                0,
            );
            if let Some(&src) = page_source.get(&r.page) {
                s.entries[idx as usize].file = src;
            }
            self.entry_of[n] = idx;
        }
        // Per entry its node.
        self.node_of = vec![usize::MAX; s.entries.len()];
        for (n, &i) in self.entry_of.iter().enumerate() {
            if i != NIL {
                self.node_of[i as usize] = n;
            }
        }
        // What `check` reports: the store's problems of these pages.
        s.problems
            .retain(|p| !matches!(p.what, ProblemKind::Agent { .. }));
        let own_pages: HashSet<String> = self.pages.keys().cloned().collect();
        for p in &self.codex.problems {
            let page = match p {
                Problem::MissingBase { page, .. }
                | Problem::BaseCycle { page }
                | Problem::BrokenLine { page, .. }
                | Problem::TornTail { page, .. }
                | Problem::TooLong { page, .. }
                | Problem::MissingOrdinal { page, .. } => Some(page.as_str()),
                Problem::Unreadable { .. } => None,
            };
            if page.is_some_and(|pg| !own_pages.contains(pg)) {
                continue;
            }
            // The core reports the opened page's torn last line and its lines too long
            // itself.
            if !self.main_compressed
                && matches!(p, Problem::TornTail { page, .. } | Problem::TooLong { page, .. }
                    if Some(page) == main_page.as_ref())
            {
                continue;
            }
            let (line, what) = problem_kind(p);
            s.note(line, Severity::Warning, what);
        }
        if self.codex.more_problems > 0 {
            s.note(
                0,
                Severity::Warning,
                ProblemKind::Agent {
                    code: "codex-more-problems",
                    what: format!(
                        "{} more problems in the thread's pages, not listed",
                        self.codex.more_problems
                    ),
                },
            );
        }
        self.name = session::name(&self.codex, t);
        let mut j = serde_json::to_vec(&session::session_json(&self.codex, t)?)
            .map_err(|e| LoadError::Io(io::Error::other(e)))?;
        j.push(b'\n');
        self.session_json = j;
        self.db_sig = self.db_signature();
        self.dirs = self.folders();
        Ok(())
    }

    fn sources_moved(&self, _s: &Session) -> SourcesMoved {
        let mut moved = SourcesMoved::No;
        for p in self.pages.values() {
            if p.source == 0 {
                continue;
            }
            match dev_ino_size(&p.path) {
                // Gone: replaced by its other form (a `.zst` made plain), or removed.
                None => moved = SourcesMoved::Grew,
                Some((di, size)) => {
                    let cut = match p.limit {
                        Some(l) => size < l && p.path.extension().is_none_or(|e| e != "zst"),
                        None => size < p.size,
                    };
                    if cut || (di != p.dev_ino && p.limit.is_none() && size < p.size) {
                        return SourcesMoved::Rewritten;
                    }
                    if size != p.size && p.limit.is_none() {
                        moved = SourcesMoved::Grew;
                    }
                }
            }
        }
        if moved == SourcesMoved::No
            && (self.db_signature() != self.db_sig || self.new_pages_in(&self.dirs))
        {
            moved = SourcesMoved::Grew;
        }
        moved
    }

    fn leaf(&self, _s: &Session) -> Option<u32> {
        let n = self.codex.leaf(self.t)?;
        let e = *self.entry_of.get(n)?;
        (e != NIL).then_some(e)
    }

    fn name<'a>(&'a self, _s: &'a Session) -> Option<&'a str> {
        Some(&self.name)
    }

    fn session_json(&self, _s: &Session) -> io::Result<Vec<u8>> {
        Ok(self.session_json.clone())
    }

    fn session_json_len(&self, _s: &Session) -> u64 {
        self.session_json.len() as u64
    }

    /// No: the leaf moves with the current page, and a thread's context is read from
    /// the store, which a refresh rebuilds.
    fn contexts_settled(&self) -> bool {
        false
    }

    fn render(&self, _s: &Session, i: u32, v: &Value) -> (String, Vec<Image>) {
        let r = render::node_text(self.line(i).kind, &v["payload"]);
        let images = r
            .images
            .into_iter()
            .map(|im| Image {
                ext: ext_of(&im.name),
                data: im.bytes,
            })
            .collect();
        (r.text, images)
    }

    fn preview(&self, _s: &Session, i: u32, v: &Value) -> String {
        render::node_preview(
            self.line(i).kind,
            &v["payload"],
            self.line(i).compaction_output,
        )
    }

    /// The request's `input` (the base instructions apart, see
    /// [`Agent::context_preamble`]).
    fn context_messages(&self, _s: &Session, i: u32) -> io::Result<Vec<Value>> {
        let c = context_at(&self.codex, self.node_of[i as usize])?;
        Ok(c.input)
    }

    fn context_preamble(&self, _s: &Session, i: u32) -> Option<String> {
        // Only the first page's instructions and the history's error: the items were
        // built for `context.json` already.
        let (instructions, error) = match preamble_at(&self.codex, self.node_of[i as usize]) {
            Ok(p) => p,
            Err(e) => return Some(format!("[the instructions cannot be read: {e}]\n\n")),
        };
        let mut s = String::new();
        if let Some(ins) = instructions {
            s.push_str("## instructions\n");
            s.push_str(&ins);
            s.push_str("\n\n");
        }
        if let Some(e) = error {
            s.push_str(&format!("[incomplete history: {e}]\n\n"));
        }
        (!s.is_empty()).then_some(s)
    }

    fn context_renderer(&self) -> fn(&[Value]) -> String {
        render_items
    }

    /// A model output (an assistant message, reasoning, a tool call) answered the
    /// request made after the last input item before its response's first output.
    fn request_of(&self, s: &Session, i: u32) -> Option<u32> {
        let out = |i: u32| super::usage::is_output(&self.codex, self.node_of[i as usize]);
        if !out(i) {
            return None;
        }
        // A compaction summary answered the whole history before it, the last answer
        // included, and the compaction prompt (see `request_tail`).
        if self.line(i).compaction_output {
            let p = s.entry(i).parent;
            return (p != NIL).then_some(p);
        }
        let mut cur = s.entry(i).parent;
        while cur != NIL && out(cur) {
            cur = s.entry(cur).parent;
        }
        (cur != NIL).then_some(cur)
    }

    /// A compaction summary's request held Codex's compaction prompt after the history
    /// (measured: `tests/fixtures/codex/pickers/compact-requests`, §5.3).
    fn request_tail(&self, _s: &Session, i: u32) -> Vec<Value> {
        if self.line(i).compaction_output {
            vec![super::context::compaction_prompt_item()]
        } else {
            Vec::new()
        }
    }

    fn alias(&self, _i: u32) -> Option<&str> {
        None
    }

    fn find_alias(&self, id: &str) -> Option<u32> {
        let n = self.codex.find_alias(id)?;
        let e = *self.entry_of.get(n)?;
        (e != NIL).then_some(e)
    }

    fn build_line(
        &self,
        _s: &Session,
        what: &NewEntry<'_>,
        _now: i64,
        _batch: &[String],
    ) -> Result<(String, Vec<u8>), AppendError> {
        Err(AppendError::Unsupported(match what {
            NewEntry::Reply { .. } => "a Codex reply is written by the Codex writer",
            NewEntry::Name(_) => NAME_REFUSED,
            NewEntry::Label { .. } => LABELS_REFUSED,
        }))
    }

    fn write_reply(
        &self,
        s: &Session,
        parent: Option<&str>,
        text: &str,
    ) -> Option<Result<String, AppendError>> {
        Some(match parent {
            Some(id) => match s.find(id) {
                Some(p) => self.reply(s, Some(p), text),
                None => Err(AppendError::NoSuchEntry(id.to_string())),
            },
            None => self.reply(s, None, text),
        })
    }

    /// Each request once, at the first output of its response (see
    /// [`super::usage`]); the thread's other pages are no subagent transcripts.
    fn fill_usage(&self, _s: &Session, prices: &Prices, t: &mut Table) {
        t.side_files_are_subagents = false;
        for q in super::usage::requests(&self.codex, self.t) {
            let Some(&i) = self.entry_of.get(q.node).filter(|&&i| i != NIL) else {
                continue;
            };
            let cost = prices.rates(&q.model).map(|r| r.cost(&q.tokens));
            let r = Record {
                model: q.model,
                source: UsageSource::Message,
                tokens: q.tokens,
                cost,
                recorded: false,
            };
            match &mut t.own[i as usize] {
                // Two requests with no output between them (a failed one): one entry
                // holds both.
                Some(old) => {
                    old.tokens.add(&r.tokens);
                    old.cost = old.cost.zip(r.cost).map(|(a, b)| a + b);
                }
                slot @ None => *slot = Some(r),
            }
            let page = self.codex.pages[q.line.page].page_id();
            let start = self.codex.line(q.line).start;
            t.reply_keys
                .entry(i)
                .or_insert_with(|| (format!("codex:{page}"), start.to_string()));
            for n in q.also {
                if let Some(&j) = self.entry_of.get(n)
                    && j != NIL
                    && j != i
                    && t.own[j as usize].is_none()
                {
                    t.counted_at[j as usize] = i;
                }
            }
        }
    }

    fn fork(&self, _s: &Session, _i: u32, _fresh: &Fresh) -> Result<ForkFile, ForkError> {
        Err(ForkError::Unsupported(FORK_REFUSED.into()))
    }

    /// The root reply, the name, labels and forks are Codex's own (nothing sessionfs
    /// writes): refused before anything is written.
    fn refuses(&self, _s: &Session, w: Write) -> Option<String> {
        Some(match w {
            Write::Reply(None) => ROOT_REPLY_REFUSED.into(),
            Write::Reply(Some(_)) => return None,
            Write::Name => NAME_REFUSED.into(),
            Write::Label => LABELS_REFUSED.into(),
            Write::Fork(_) => FORK_REFUSED.into(),
        })
    }

    fn forked_from(&self, _s: &Session) -> Option<SessionLink> {
        super::forks::forked_from(&self.codex, self.t)
    }

    fn forks_at(&self, _s: &Session, i: u32) -> Vec<SessionLink> {
        match self.node_of.get(i as usize) {
            Some(&n) if n != usize::MAX => {
                self.fork_links
                    .at(&self.codex, self.t, self.home.as_deref(), n)
            }
            _ => Vec::new(),
        }
    }

    fn heap_bytes(&self) -> usize {
        self.codex.heap_bytes()
            + self.node_of.capacity() * 8
            + self.entry_of.capacity() * 4
            + self.pages.len() * (std::mem::size_of::<Indexed>() + 160)
            + self.session_json.capacity()
            + self.name.capacity()
            + self
                .dirs
                .iter()
                .map(|d| d.as_os_str().len() + 24)
                .sum::<usize>()
    }

    /// The thread's own pages: its activity is the newest line of any of them (a
    /// rewind page, or an older page a reply went on from), never a parent's page a
    /// fork reads.
    fn activity_files(&self, s: &Session) -> Vec<PathBuf> {
        let pages: Vec<PathBuf> = self
            .codex
            .threads
            .get(self.t)
            .map(|t| {
                t.pages
                    .iter()
                    .map(|&p| self.codex.pages[p].file.path.clone())
                    .collect()
            })
            .unwrap_or_default();
        if pages.is_empty() {
            vec![s.path().to_path_buf()]
        } else {
            pages
        }
    }

    fn watched_dirs(&self, s: &Session) -> Vec<PathBuf> {
        let mut v = self.dirs.clone();
        if let Some(h) = &self.home
            && !v.contains(h)
        {
            // The database and session_index.jsonl: the current page and the name.
            v.push(h.clone());
        }
        if v.is_empty() {
            v.extend(s.path().parent().map(Path::to_path_buf));
        }
        v
    }
}

impl CodexThread {
    /// A reply under entry `parent` through [`super::write::reply`]: appended at the
    /// leaf, or a new page of the thread at an earlier entry.
    fn reply(&self, s: &Session, parent: Option<u32>, text: &str) -> Result<String, AppendError> {
        let Some(p) = parent else {
            return Err(AppendError::Unsupported(ROOT_REPLY_REFUSED));
        };
        let n = self.node_of[p as usize];
        if n == usize::MAX {
            return Err(AppendError::NoSuchEntry(s.id_string(p)));
        }
        let r = self.codex.nodes[n];
        let page = &self.codex.pages[r.page];
        let line = *self.codex.line(r);
        let point = super::write::Point {
            page: page.file.path.clone(),
            ordinal: line.ordinal.and_then(|o| u64::try_from(o).ok()),
            // An entry a fork inherited lies on its parent's page: the reply continues
            // this thread (the fork) all the same.
            thread: Some(self.thread_id.clone()),
        };
        let w =
            super::write::reply(&point, text, &super::write::Options::default()).map_err(|e| {
                AppendError::Refused {
                    errno: e.errno(),
                    message: e.to_string(),
                }
            })?;
        let page_id = w
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(files::parse_file_name)
            .map(|n| n.page_id)
            .unwrap_or_default();
        Ok(format!("{page_id}:{}", w.ordinal))
    }
}

/// A compressed page as a core source: its lines decompressed as far as each read
/// needs ([`super::zst::Pages`]).
#[derive(Debug)]
struct CompressedPage;

impl crate::model::core::session::ReadRange for CompressedPage {
    fn read_range(&self, path: &Path, offset: u64, len: u32) -> io::Result<Vec<u8>> {
        super::zst::Pages::read(path, offset, len as usize)
    }
}

/// `image-N.png` → `png` (a core image's extension).
fn ext_of(name: &str) -> &'static str {
    match name.rsplit('.').next().unwrap_or("") {
        "png" => "png",
        "jpg" | "jpeg" => "jpg",
        "gif" => "gif",
        "webp" => "webp",
        _ => "bin",
    }
}

/// The readable `context` after the preamble: each item under `## KIND`, as its KIND
/// file reads (the headings every agent's `context` has).
fn render_items(items: &[Value]) -> String {
    let mut s = String::new();
    for v in items {
        s.push_str(&format!("## {}\n", render::item_kind(v)));
        s.push_str(&render::item_text(v).text);
        if !s.ends_with('\n') {
            s.push('\n');
        }
        s.push('\n');
    }
    s
}
