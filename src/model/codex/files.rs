//! Page files: their names, where they live, and their bytes.
//!
//! A page is `rollout-<ts>-<threadId>.jsonl` (a thread's first page, whose page id is the
//! thread id) or `rollout-<ts>-<threadId>_<pageId>.jsonl` (a later page), optionally
//! compressed as `….jsonl.zst` (CODEX-FORMAT §1, §8). The timestamp is when the page was
//! made, `YYYY-MM-DDTHH-MM-SS`, so `(timestamp, page id)` orders a thread's pages and
//! "newest by file name" is a string comparison of that pair (§4).
//!
//! Codex may replace a page by its compressed form (and back) at any time, so when both
//! names exist the plain file wins, as Codex's own readers prefer it (§8); a reader that
//! finds one missing tries the other ([`read_page`]).

use crate::model::core::listing;
use std::collections::HashMap;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

pub use super::open::open_page;

/// What a page's file name says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageName {
    /// `YYYY-MM-DDTHH-MM-SS`, the page's creation time (UTC).
    pub ts: String,
    pub thread_id: String,
    /// The thread id for a first page, the `_<pageId>` part otherwise.
    pub page_id: String,
    /// `.jsonl.zst` rather than `.jsonl`.
    pub compressed: bool,
}

impl PageName {
    /// [`parse_file_name`].
    pub fn parse(name: &str) -> Option<PageName> {
        parse_file_name(name)
    }

    /// The sort key of "newest by file name" (§4): timestamp, then page id (a UUIDv7,
    /// so it sorts by time too).
    pub fn order_key(&self) -> (&str, &str) {
        (&self.ts, &self.page_id)
    }

    /// The plain file name, whichever form this name has.
    pub fn plain_name(&self) -> String {
        if self.page_id == self.thread_id {
            format!("rollout-{}-{}.jsonl", self.ts, self.thread_id)
        } else {
            format!(
                "rollout-{}-{}_{}.jsonl",
                self.ts, self.thread_id, self.page_id
            )
        }
    }
}

/// One page file found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageFile {
    pub path: PathBuf,
    pub name: PageName,
}

/// Parses `rollout-<ts>-<uuid>[_<uuid>].jsonl[.zst]`; anything else is not a page.
pub fn parse_file_name(name: &str) -> Option<PageName> {
    let (stem, compressed) = if let Some(s) = name.strip_suffix(".jsonl.zst") {
        (s, true)
    } else {
        (name.strip_suffix(".jsonl")?, false)
    };
    let rest = stem.strip_prefix("rollout-")?;
    // The timestamp is fixed width: 2026-12-01T19-38-13 (19 characters).
    if rest.len() < 20 || !rest.is_char_boundary(19) || rest.as_bytes()[19] != b'-' {
        return None;
    }
    let (ts, ids) = (&rest[..19], &rest[20..]);
    if !is_timestamp(ts) {
        return None;
    }
    let (thread_id, page_id) = match ids.split_once('_') {
        Some((t, p)) => (t, p),
        None => (ids, ids),
    };
    if !is_uuid(thread_id) || !is_uuid(page_id) {
        return None;
    }
    Some(PageName {
        ts: ts.to_string(),
        thread_id: thread_id.to_string(),
        page_id: page_id.to_string(),
        compressed,
    })
}

fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 19
        && b.iter().enumerate().all(|(i, &c)| match i {
            4 | 7 | 13 | 16 => c == b'-',
            10 => c == b'T',
            _ => c.is_ascii_digit(),
        })
}

/// A UUID in its 8-4-4-4-12 hex form (any version: ids are UUIDv7 in practice).
pub fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, &c)| match i {
            8 | 13 | 18 | 23 => c == b'-',
            _ => c.is_ascii_digit() || (b'a'..=b'f').contains(&c),
        })
}

/// The folders under which a mount looks for pages, given what the user named: a Codex
/// home (its `sessions/` and `archived_sessions/`), a `sessions/` folder (or any folder:
/// it is searched as is), or one rollout file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Root {
    Home(PathBuf),
    Dir(PathBuf),
    File(PathBuf),
}

impl Root {
    /// Classifies `path`. A folder is a Codex home when it holds `sessions/` or
    /// `state_5.sqlite`.
    pub fn of(path: &Path) -> io::Result<Root> {
        let md = fs::metadata(path)?;
        if md.is_file() {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if parse_file_name(name).is_none() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "{} is not a Codex rollout file (expected rollout-<time>-<thread id>.jsonl)",
                        path.display()
                    ),
                ));
            }
            return Ok(Root::File(path.to_path_buf()));
        }
        if path.join("sessions").is_dir() || path.join("state_5.sqlite").is_file() {
            Ok(Root::Home(path.to_path_buf()))
        } else {
            Ok(Root::Dir(path.to_path_buf()))
        }
    }

    /// The Codex home this root belongs to, when one can be named: the home itself, the
    /// parent of a `sessions/` folder, or the home above `sessions/YYYY/MM/DD/FILE`.
    pub fn codex_home(&self) -> Option<PathBuf> {
        match self {
            Root::Home(h) => Some(h.clone()),
            Root::Dir(d) => home_above(d),
            Root::File(f) => home_above(f.parent()?),
        }
    }
}

fn home_above(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|a| {
            a.file_name()
                .is_some_and(|n| n == "sessions" || n == "archived_sessions")
        })
        .and_then(|s| s.parent())
        .map(Path::to_path_buf)
}

/// How deep below a sessions folder pages are looked for: `YYYY/MM/DD/` is 3, one
/// more level tolerates a stray folder without walking a whole disk.
const MAX_DEPTH: usize = 4;

/// Whether [`discover`] lists each folder once per process (see [`list_once`]).
static LIST_ONCE: AtomicBool = AtomicBool::new(false);

/// Makes [`discover`] list each home or folder once for the rest of the process. For
/// a reader that takes the files as they are when it starts and is then done
/// (`sessionfs grep`): opening a thread lists the whole home (its pages and the
/// pages its history reads may be in any day's folder), which a search that opens
/// hundreds of threads of one home would otherwise do hundreds of times. Never for
/// the mount, which must see pages appear.
pub fn list_once() {
    LIST_ONCE.store(true, Ordering::Relaxed);
}

/// Whether [`list_once`] was called: files are taken as they are when the process
/// started reading them.
pub fn listing_once() -> bool {
    LIST_ONCE.load(Ordering::Relaxed)
}

/// Every page under `root`, one per page id: the plain file when both forms exist
/// (§8). Unreadable folders are skipped (their pages are simply not there); order is by
/// path, so results do not depend on the order `readdir` returns.
pub fn discover(root: &Root) -> Vec<PageFile> {
    static LISTED: Shared<Vec<PageFile>> = OnceLock::new();
    match shared_key(root) {
        Some(key) => once_per(&LISTED, key, || list(root)),
        None => list(root),
    }
}

/// Results kept for the rest of the process once [`list_once`] was called, by root.
type Shared<V> = OnceLock<Mutex<HashMap<(bool, PathBuf), Arc<OnceLock<V>>>>>;

/// The key of `root` in a [`Shared`] map, when results are kept.
fn shared_key(root: &Root) -> Option<(bool, PathBuf)> {
    match root {
        Root::Home(h) if listing_once() => Some((true, h.clone())),
        Root::Dir(d) if listing_once() => Some((false, d.clone())),
        _ => None,
    }
}

/// `make()`'s result for `key`, made once: the workers of a search that ask at the
/// same time wait for the first one's listing rather than each listing the home.
fn once_per<V: Clone>(map: &Shared<V>, key: (bool, PathBuf), make: impl FnOnce() -> V) -> V {
    let slot = {
        let mut m = map
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        m.entry(key).or_default().clone()
    };
    slot.get_or_init(make).clone()
}

/// [`discover`] by page id, shared: a search opens many threads of one home, and each
/// looks its pages up in the whole listing.
pub fn discover_by_id(root: &Root) -> Arc<HashMap<String, PageFile>> {
    static BY_ID: Shared<Arc<HashMap<String, PageFile>>> = OnceLock::new();
    let by_id = |v: Vec<PageFile>| {
        Arc::new(
            v.into_iter()
                .map(|f| (f.name.page_id.clone(), f))
                .collect::<HashMap<_, _>>(),
        )
    };
    match shared_key(root) {
        Some(key) => once_per(&BY_ID, key, || by_id(discover(root))),
        None => by_id(list(root)),
    }
}

/// [`discover`], reading the folders.
fn list(root: &Root) -> Vec<PageFile> {
    let mut found = Vec::new();
    match root {
        Root::File(f) => {
            if let Some(name) = f
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(parse_file_name)
            {
                found.push(PageFile {
                    path: f.clone(),
                    name,
                });
            }
        }
        Root::Home(h) => {
            walk(&h.join("sessions"), 0, &mut found);
            walk(&h.join("archived_sessions"), 0, &mut found);
        }
        Root::Dir(d) => walk(d, 0, &mut found),
    }
    dedupe(found)
}

fn walk(dir: &Path, depth: usize, out: &mut Vec<PageFile>) {
    let Ok(rd) = listing::read_dir(dir) else {
        return;
    };
    for e in rd {
        let ft = e.kind();
        if ft.is_dir() {
            if depth < MAX_DEPTH {
                walk(e.path(), depth + 1, out);
            }
        } else if ft.is_file()
            && let Some(name) = e.file_name().to_str().and_then(parse_file_name)
        {
            out.push(PageFile {
                path: e.into_path(),
                name,
            });
        }
    }
}

/// One file per page id, the plain one preferred, sorted by path.
pub fn dedupe(found: Vec<PageFile>) -> Vec<PageFile> {
    // Sorted as `Path::cmp` sorts, by components, but each path turned once into bytes
    // that compare the same way (its components joined by NUL, which sorts before
    // every byte of a name; the paths differ only in names read from folders, never
    // `.` or `..`): comparing paths splits them again each time, which
    // was most of what opening a thread of a home of thousands of pages cost (the
    // whole home is listed, see `agent`).
    let order = {
        use std::os::unix::ffi::OsStrExt;
        let mut keyed: Vec<(Vec<u8>, usize)> = found
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let mut k = Vec::with_capacity(f.path.as_os_str().len());
                for (n, c) in f.path.components().enumerate() {
                    if n > 0 {
                        k.push(0);
                    }
                    k.extend_from_slice(c.as_os_str().as_bytes());
                }
                (k, i)
            })
            .collect();
        keyed.sort();
        keyed.into_iter().map(|(_, i)| i).collect::<Vec<usize>>()
    };
    let mut slots: Vec<Option<PageFile>> = found.into_iter().map(Some).collect();
    let found: Vec<PageFile> = order
        .into_iter()
        .map(|i| slots[i].take().expect("each index once"))
        .collect();
    let mut best: HashMap<String, usize> = HashMap::new();
    let mut keep = vec![true; found.len()];
    for (i, f) in found.iter().enumerate() {
        match best.get(&f.name.page_id) {
            Some(&j) => {
                // The plain file wins; between two of the same form, the first by path.
                if found[j].name.compressed && !f.name.compressed {
                    keep[j] = false;
                    best.insert(f.name.page_id.clone(), i);
                } else {
                    keep[i] = false;
                }
            }
            None => {
                best.insert(f.name.page_id.clone(), i);
            }
        }
    }
    found
        .into_iter()
        .zip(keep)
        .filter_map(|(f, k)| k.then_some(f))
        .collect()
}

/// Reads a page's bytes whole, decompressing a `.jsonl.zst` (at most to its
/// allowance, `zst::allowance`). When the named file is gone, the other form is tried:
/// Codex swaps a page between plain and compressed without notice (§1, §8). For tests
/// and tools only: the index never holds a page (`page::Index::read`).
pub fn read_page(path: &Path) -> io::Result<Vec<u8>> {
    read_page_bounded(path, u64::MAX)
}

/// [`read_page`], failing past `limit` bytes (and past a compressed page's allowance).
pub fn read_page_bounded(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    match read_one(path, limit) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => match other_form(path) {
            Some(other) => read_one(&other, limit).map_err(|e2| {
                if e2.kind() == io::ErrorKind::NotFound {
                    e
                } else {
                    e2
                }
            }),
            None => Err(e),
        },
        r => r,
    }
}

/// `x.jsonl` ↔ `x.jsonl.zst`.
pub fn other_form(path: &Path) -> Option<PathBuf> {
    let s = path.to_str()?;
    Some(match s.strip_suffix(".zst") {
        Some(plain) => PathBuf::from(plain),
        None => PathBuf::from(format!("{s}.zst")),
    })
}

fn read_one(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let f = open_page(path)?;
    let len = f.metadata()?.len();
    let compressed = path.extension().is_some_and(|e| e == "zst");
    let too_big = |limit: u64| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: holds more than {limit} bytes", path.display()),
        )
    };
    if !compressed {
        if len > limit {
            return Err(too_big(limit));
        }
        let mut out = Vec::new();
        crate::model::core::input::grow(&mut out, len as usize)?;
        out.clear();
        (&f).take(limit).read_to_end(&mut out)?;
        return Ok(out);
    }
    decompress(f, limit.min(super::zst::allowance(len)))
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// Decompresses a zstd stream (all its frames, as `zstd -d` does), failing past `limit`
/// bytes.
pub fn decompress(src: impl Read, limit: u64) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    super::zst::Stream::new(src, limit).read_to_end(&mut out)?;
    Ok(out)
}

/// The first line of a page (without its `\n`), decompressed when the page is a
/// `.jsonl.zst`, read only up to `max` bytes; `None` when it cannot be read or has no
/// `\n` within them. What the catalog (`cwd`) and the agents' table (is it Codex?)
/// need of a page, without reading the rest.
pub fn first_line(path: &Path, max: u64) -> Option<Vec<u8>> {
    let src: Box<dyn Read> = if path.extension().is_some_and(|e| e == "zst") {
        Box::new(super::zst::Stream::open(path).ok()?)
    } else {
        Box::new(open_page(path).ok()?)
    };
    let mut r = src.take(max);
    // Read as far as the line goes, not much further: a `session_meta` line is some
    // 20 KB, a page often not three times that, and every page's first line is read.
    let mut line: Vec<u8> = Vec::with_capacity(32 << 10);
    let mut searched = 0;
    loop {
        if line.len() == line.capacity() {
            line.try_reserve(line.capacity()).ok()?;
        }
        let end = line.len();
        let room = line.capacity() - end;
        line.resize(end + room, 0);
        let n = loop {
            match r.read(&mut line[end..]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                n => break n.ok(),
            }
        };
        line.truncate(end + n.unwrap_or(0));
        match n {
            None | Some(0) => return None,
            Some(_) => {}
        }
        if let Some(i) = memchr::memchr(b'\n', &line[searched..]) {
            line.truncate(searched + i);
            return Some(line);
        }
        searched = line.len();
    }
}
