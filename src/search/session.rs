//! Searching one session file: the raw scan, then the entries it selects, rendered.
//!
//! 1. The file is read in 256 KiB blocks; its first lines say its format
//!    ([`rules::detect`]), whose [`Prefilter`] picks candidate lines in each block.
//!    Until the file has a candidate left, a line its format shows nowhere
//!    ([`Rules::shown`]: Claude Code's metadata) is dropped: a file whose only
//!    candidates are such lines is not opened.
//! 2. Where the format renders a line on its own ([`Rules::line_content`]), each
//!    candidate is rendered and searched there and then, and dropped without a match;
//!    only what grep found is kept (the lines to print), not the content.
//! 3. Where the format places hits without the index ([`Rules::hit_paths`]), the
//!    hits' paths come from there: a map of the file's lines and the validation of
//!    the lines on them (Pi's current format; the scan begins that map at the first
//!    hit and feeds it the blocks it reads after, [`EarlyMap`], and the map is kept in
//!    the [`Cache`]), or the lines before the hits (a one-page Codex thread); the full
//!    index only when that doubts. Otherwise a file with candidates left is indexed
//!    ([`open`]); the candidates become nodes
//!    (by offset and length: a line that is not an entry, or changed since, is not
//!    one). The tree is walked in the mount's order and each selected node printed,
//!    those not rendered yet rendered now. Without a prefilter, every node is.
//!
//! The search sees a session through [`Searchable`]: its nodes in the order `grep -r`
//! meets them through a mount, each node's directory name, id and KIND name, and its
//! content files. [`open`] is where a file's format is decided: every agent's format
//! is one behind [`Session`], and its entries' content comes from
//! [`content::entry_content`], as the mount's does. A format's rules
//! ([`super::rules`], the agent's own) add what its content takes from elsewhere:
//! other files whose lines are entries of the session are scanned raw too
//! ([`Rules::side_files`]: a Claude Code session's subagents, a Codex thread's other
//! pages and base pages), and the children of a candidate are rendered with it
//! ([`Rules::parent_text`]). A candidate of a side file is matched to its node by
//! file path and offset (`nodes_by_path`). A format no agent's rules claim is found
//! by no [`rules::detect`] and searched without prefilter: slowly, but with the right
//! hits.

use super::cache::{Cache, Key};
use super::grepfile::{self, Found, Mode};
use super::output::Printer;
use super::pattern::Pattern;
use super::prefilter::{HeldScan, Prefilter};
use super::rules::{self, Rules};
use crate::model::core::content::{self, Content, FULL_OUTPUT};
use crate::model::core::grep::{
    DirectPaths, HitMap, HitPath, HitPaths, MapBuilder, MapFormat, PATH_MAX,
};
use crate::model::core::input;
use crate::model::core::session::{LoadError, Session};
use crate::model::sessions_dir::io_message as io_msg;
use crate::view::{MAX_IMAGES, entry_name, escape_id};
use serde_json::json;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// A session as the search sees it.
pub trait Searchable {
    /// The nodes of the line that starts at byte `offset` of the file and is `len`
    /// bytes long (without its newline): the node that is the line, or those whose
    /// bytes lie inside it (a Gemini CLI `$set.messages` line holds whole records, each
    /// the content of an entry); none for a line that holds no node.
    fn nodes_in(&self, offset: u64, len: usize) -> Vec<u32>;
    /// The nodes of `lines`, each `(file, offset, len)` (see [`Self::nodes_in`]):
    /// file 0 is the session file, `k` the side file `sides[k - 1]` (its format's
    /// [`Rules::side_files`]).
    fn nodes_at(&self, sides: &[PathBuf], lines: &[(usize, u64, usize)]) -> Vec<Vec<u32>> {
        let _ = sides;
        lines
            .iter()
            .map(|&(f, o, l)| {
                if f == 0 {
                    self.nodes_in(o, l)
                } else {
                    Vec::new()
                }
            })
            .collect()
    }
    /// Every node in pre-order (a node's own files, then its children in order, as
    /// `grep -r` walks the mount), with its depth (roots are 0).
    fn preorder(&self, f: &mut dyn FnMut(u32, usize));
    /// The name of the node's directory in the mount.
    fn dir_name(&self, i: u32) -> String;
    /// The node's id.
    fn id(&self, i: u32) -> String;
    /// The name of its KIND file.
    fn kind(&self, i: u32) -> &str;
    /// The session's name, as its `name` file shows it.
    fn session_name(&self) -> Option<String>;
    /// When it was last active, by the agent's own clock, and the file that says so
    /// (`Session::last_activity`): `--sessions` sorts by it.
    fn last_activity(&self) -> Option<(i64, PathBuf)>;
    /// Whether it is the tip of a branch, as the mount's `branches/` lists them.
    fn is_leaf(&self, i: u32) -> bool;
    /// Whether it is a piece of a turn (a dead end of parallel tool calls, a
    /// subagent's line), whose branches are those of its nearest ancestor that is not.
    fn is_piece(&self, i: u32) -> bool;
    /// Its KIND file's text and its images, exactly as the mount serves them.
    fn content(&self, i: u32) -> io::Result<Content>;
    /// A side file the content names (`full-output`), read as the mount reads it
    /// (`Session::read_side`: inside the agent's folder, a regular file, bounded).
    fn read_side(&self, p: &Path, max: u64) -> io::Result<Vec<u8>> {
        input::read_beneath(p.parent().unwrap_or(Path::new(".")), p, max)
    }
}

impl Searchable for Session {
    fn read_side(&self, p: &Path, max: u64) -> io::Result<Vec<u8>> {
        Session::read_side(self, p, max)
    }

    fn session_name(&self) -> Option<String> {
        self.name().map(str::to_string)
    }

    fn last_activity(&self) -> Option<(i64, PathBuf)> {
        Session::last_activity(self)
    }

    fn nodes_in(&self, offset: u64, len: usize) -> Vec<u32> {
        let end = offset + len as u64;
        let inside = |e: &crate::model::core::session::Entry| {
            e.is_node() && e.offset >= offset && e.offset + e.len as u64 <= end
        };
        if self.has_side_files() {
            // Lines of other files (a Claude Code session's subagents) are indexed
            // too, so offsets are not in order.
            return (0..self.entries().len() as u32)
                .filter(|&i| self.in_main_file(i) && inside(self.entry(i)))
                .collect::<Vec<_>>()
                .or_owner(|| self.line_owner(0, offset));
        }
        let from = self.entries().partition_point(|e| e.offset < offset);
        self.entries()[from..]
            .iter()
            .take_while(|e| e.offset < end)
            .enumerate()
            .filter(|(_, e)| inside(e))
            .map(|(k, _)| (from + k) as u32)
            .collect::<Vec<_>>()
            // A line that shows in another entry's files (a fragment).
            .or_owner(|| self.line_owner(0, offset))
    }

    fn nodes_at(&self, sides: &[PathBuf], lines: &[(usize, u64, usize)]) -> Vec<Vec<u32>> {
        // A session of several files (offsets not in order) is matched through one map
        // of every node's place, not a walk over the nodes per line (`nodes_in`): a
        // Codex page of a million lines, all candidates, took hours that way.
        if sides.is_empty() && !self.has_side_files() {
            return lines
                .iter()
                .map(|&(f, o, l)| {
                    if f == 0 {
                        self.nodes_in(o, l)
                    } else {
                        Vec::new()
                    }
                })
                .collect();
        }
        nodes_by_path(self, sides, lines)
    }

    fn preorder(&self, f: &mut dyn FnMut(u32, usize)) {
        self.walk_preorder(f)
    }

    fn dir_name(&self, i: u32) -> String {
        entry_name(self, i)
    }

    fn id(&self, i: u32) -> String {
        self.id_string(i)
    }

    fn kind(&self, i: u32) -> &str {
        self.kind_name(i)
    }

    fn is_leaf(&self, i: u32) -> bool {
        self.is_tip(i)
    }

    fn is_piece(&self, i: u32) -> bool {
        Session::is_piece(self, i)
    }

    fn content(&self, i: u32) -> io::Result<Content> {
        content::entry_content(self, i)
    }
}

/// [`Searchable::nodes_at`] for a session whose entries lie in several files (a Codex
/// thread's pages and the base pages its history reads, a Claude Code session's
/// subagents): by file path ([`Session::entry_file`]) and offset, so that the index's
/// numbering of its files does not matter.
fn nodes_by_path(s: &Session, sides: &[PathBuf], lines: &[(usize, u64, usize)]) -> Vec<Vec<u32>> {
    // Paths compared as the file system resolves them: the index and the scan may
    // name a page differently (relative, through a link).
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    // Each file of the index once, by its number.
    let mut files: std::collections::HashMap<u16, Option<PathBuf>> =
        std::collections::HashMap::new();
    // Per file of the index, by its number, its nodes by offset: (offset, len, node).
    let mut by_file: std::collections::HashMap<u16, Vec<(u64, usize, u32)>> =
        std::collections::HashMap::new();
    for i in 0..s.entries().len() as u32 {
        let e = s.entry(i);
        if !e.is_node() {
            continue;
        }
        let p = files
            .entry(e.file)
            .or_insert_with(|| s.entry_file(i).map(|p| real(&p)));
        if p.is_some() {
            by_file
                .entry(e.file)
                .or_default()
                .push((e.offset, e.len as usize, i));
        }
    }
    for v in by_file.values_mut() {
        v.sort_unstable();
    }
    // The index's number of each file scanned.
    let numbers: Vec<Option<u16>> = std::iter::once(real(s.path()))
        .chain(sides.iter().map(|p| real(p)))
        .map(|p| {
            files
                .iter()
                .find(|(_, f)| f.as_ref() == Some(&p))
                .map(|(&n, _)| n)
        })
        .collect();
    lines
        .iter()
        .map(|&(f, o, l)| {
            let Some(n) = numbers.get(f).copied().flatten() else {
                return Vec::new();
            };
            let Some(v) = by_file.get(&n) else {
                return Vec::new();
            };
            let end = o + l as u64;
            let from = v.partition_point(|&(off, _, _)| off < o);
            v[from..]
                .iter()
                .take_while(|&&(off, _, _)| off < end)
                .filter(|&&(off, len, _)| off + len as u64 <= end)
                .map(|&(_, _, i)| i)
                .collect::<Vec<_>>()
                // A line that shows in another entry's files (a fragment).
                .or_owner(|| s.line_owner(n, o))
        })
        .collect()
}

/// The entries a line shows in, else the one entry that shows it though it is no
/// entry of its own (a fragment: [`Session::line_owner`]).
trait OrOwner {
    fn or_owner(self, owner: impl FnOnce() -> Option<u32>) -> Self;
}

impl OrOwner for Vec<u32> {
    fn or_owner(self, owner: impl FnOnce() -> Option<u32>) -> Self {
        if self.is_empty() {
            owner().into_iter().collect()
        } else {
            self
        }
    }
}

/// Opens a session file for searching: the format seam.
pub fn open(path: &Path) -> Result<Box<dyn Searchable>, LoadError> {
    log::trace!("opening {}", path.display());
    Ok(Box::new(Session::open(path)?))
}

/// What is printed, and how.
pub struct Search {
    pub pattern: Pattern,
    pub mode: Mode,
    pub json: bool,
    pub printer: Printer,
    /// `--sessions`: nothing per line; one [`Chunk::Session`] per session with a hit.
    pub sessions: bool,
    /// The prefilter of each known format, by [`Rules::name`].
    pub prefilters: Vec<(&'static str, Prefilter)>,
    /// The scans of files several sessions read, for the rest of the search.
    pub scans: Scans,
    /// What the index ([`super::index`]) says each file's search must read; `None`:
    /// every file is read whole.
    pub plans: Option<super::indexed::Planned>,
}

/// The raw scans of files that several sessions show (a Codex thread's pages are the
/// base pages of its forks and of its later pages): each such file is scanned, and
/// its candidates rendered, once per search, whichever session meets it first. Only
/// formats whose files' scans depend on the file alone (with side files, without
/// spilled files) are kept, and only while their results stay within a budget.
#[derive(Default)]
pub struct Scans {
    done: parking_lot::Mutex<std::collections::HashMap<PathBuf, std::sync::Arc<Shared>>>,
    /// Bytes of results kept.
    kept: std::sync::atomic::AtomicUsize,
}

/// One file's scan: its format and candidates (numbered as a session file, 0).
struct Shared {
    rules: &'static Rules,
    candidates: Vec<Candidate>,
}

/// The most [`Scans`] keeps of rendered results, over all files.
const SCANS_BUDGET: usize = 64 << 20;

impl Scans {
    fn shareable(r: &Rules) -> bool {
        r.side_files.is_some() && r.spilled.is_none()
    }

    fn get(&self, path: &Path) -> Option<std::sync::Arc<Shared>> {
        self.done.lock().get(path).cloned()
    }

    fn put(&self, path: &Path, rules: &'static Rules, c: &[Candidate]) {
        use std::sync::atomic::Ordering;
        let size: usize = c
            .iter()
            .map(|c| {
                64 + c
                    .results
                    .iter()
                    .flatten()
                    .map(|r| r.bytes.len() + 64)
                    .sum::<usize>()
            })
            .sum();
        if self.kept.fetch_add(size, Ordering::Relaxed) + size > SCANS_BUDGET {
            self.kept.fetch_sub(size, Ordering::Relaxed);
            return;
        }
        let candidates = c
            .iter()
            .map(|c| Candidate {
                file: 0,
                ..c.clone()
            })
            .collect();
        self.done.lock().insert(
            path.to_path_buf(),
            std::sync::Arc::new(Shared { rules, candidates }),
        );
    }
}

impl Search {
    /// The prefilter of format `r`.
    pub fn prefilter_of(&self, r: &Rules) -> &Prefilter {
        self.prefilter(r)
    }

    fn prefilter(&self, r: &Rules) -> &Prefilter {
        &self
            .prefilters
            .iter()
            .find(|(n, _)| *n == r.name)
            .expect("a prefilter for every format")
            .1
    }
}

/// A session file to search.
#[derive(Debug, Clone)]
pub struct Job {
    pub path: PathBuf,
    /// Printed before each path (`PROJECT/SESSION`, or empty), without a final `/`.
    pub prefix: Vec<u8>,
    /// Named on the command line: not being a session is an error.
    pub explicit: bool,
}

/// Output of one file, in order.
#[derive(Debug)]
pub enum Chunk {
    Out(Vec<u8>),
    /// A message for standard error (without the program name).
    Err(String),
    /// With `--sessions`: a session that matched.
    Session(SessionHits),
}

/// A session with matches, for `--sessions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionHits {
    /// Its path as the mount shows it (`PROJECT/SESSION`, `pi/PROJECT/SESSION`), or the
    /// file for a session file given on the command line (mounted on its own).
    pub path: String,
    /// The session file: for a session of several files (a Codex thread's pages), the
    /// one its last activity is in.
    pub file: PathBuf,
    pub name: Option<String>,
    /// Its last activity (ms since the epoch), by the agent's own clock.
    pub last_ms: i64,
    /// Matching lines, over all its content files (as `grep -rc` would add up).
    pub hits: u64,
}

/// How searching one file went.
#[derive(Debug, Default, Clone, Copy)]
pub struct Report {
    pub matched: bool,
    pub error: bool,
    /// Matching lines (counted with `--sessions`).
    pub hits: u64,
}

/// Output is handed on in pieces of about this size.
const CHUNK: usize = 256 << 10;

/// Size of the reads of the raw scan: small enough for the data to stay in the CPU's
/// cache between the read and the scan (a line longer than this grows the buffer, up
/// to the bound on lines, `model::input::max_line`).
const BLOCK: usize = 256 << 10;

/// What grep found in one content file of an entry.
#[derive(Clone)]
struct FileResult {
    /// `None` for the KIND file (named by the index), else `image-N.EXT`.
    image: Option<String>,
    found: Found,
    /// The file's bytes, kept only when lines of it are printed.
    bytes: Vec<u8>,
}

/// Searches an entry's content files: its KIND file, its images, and the full output
/// its format keeps apart (`full-output`), in the order its directory lists them.
fn results_of(
    c: Content,
    search: &Search,
    session: Option<&dyn Searchable>,
) -> io::Result<Vec<FileResult>> {
    let keep = |found: &Found, bytes: Vec<u8>| {
        if found.lines.is_empty() {
            Vec::new()
        } else {
            bytes
        }
    };
    let shown = c.images_shown(MAX_IMAGES as usize);
    let mut v = Vec::with_capacity(2 + shown);
    let found = grepfile::grep(&search.pattern, &c.text, search.mode);
    let bytes = keep(&found, c.text);
    v.push(FileResult {
        image: None,
        found,
        bytes,
    });
    for (n, im) in c.images.into_iter().enumerate().take(shown) {
        let found = grepfile::grep(&search.pattern, &im.data, search.mode);
        v.push(FileResult {
            image: Some(format!("image-{}.{}", n + 1, im.ext)),
            bytes: keep(&found, im.data),
            found,
        });
    }
    if let Some(p) = c.full_output {
        // A side file: opened as the mount opens it (inside the session's folder,
        // only a regular file, bounded).
        let max = input::max_line() as u64;
        let data = match session {
            Some(s) => s.read_side(&p, max)?,
            None => input::read_beneath(p.parent().unwrap_or(Path::new(".")), &p, max)?,
        };
        let found = grepfile::grep(&search.pattern, &data, search.mode);
        v.push(FileResult {
            image: Some(FULL_OUTPUT.to_string()),
            bytes: keep(&found, data),
            found,
        });
    }
    Ok(v)
}

/// A line the raw scan selected, with what its content files hold when the format
/// gives them from the line alone.
#[derive(Clone)]
struct Candidate {
    /// 0: the session file; `k`: its `k`-th side file.
    file: usize,
    offset: u64,
    len: usize,
    results: Option<Vec<FileResult>>,
}

/// The line of `file` at `offset` (`len` bytes, `line` when it could be read) as a
/// candidate: searched already where its format renders it alone
/// ([`Rules::line_content`]), and then dropped when it shows no hit (unless every line
/// is counted).
fn candidate(
    r: &Rules,
    search: &Search,
    file: usize,
    offset: u64,
    len: usize,
    line: Option<&[u8]>,
) -> Option<Candidate> {
    let results = line
        .and_then(|l| r.line_content.and_then(|lc| lc(l)))
        .and_then(|c| results_of(c, search, None).ok());
    if let Some(rs) = &results
        && search.mode != Mode::Count
        && rs.iter().all(|r| r.found.count == 0)
    {
        return None;
    }
    Some(Candidate {
        file,
        offset,
        len,
        results,
    })
}

/// What the raw scan of a session selected.
struct Scanned {
    rules: &'static Rules,
    candidates: Vec<Candidate>,
    /// The side files scanned ([`Rules::side_files`]), numbered from 1 in
    /// [`Candidate::file`].
    sides: Vec<PathBuf>,
    /// The session file as the scan read it (`None` when the search had scanned it
    /// already, for another session: never a Pi file, whose hits take [`hit_paths`]).
    file: Option<File>,
    /// Its hit-path map, begun by the scan.
    early: EarlyMap,
}

/// The hit-path map of a session file (its format's [`HitPaths::Map`]), begun by its
/// raw scan at the first hit and built from the blocks the scan reads after it, so
/// that a big file with a hit is read once rather than twice (the bytes before the
/// hit are read again for the map; hits are rarely far in). Only where the fast path
/// may follow ([`map_fits`]): a search without a hit builds nothing.
enum EarlyMap {
    /// Not begun: no hit yet.
    Idle(&'static dyn MapFormat),
    /// Not to be begun: the fast path cannot follow.
    Off,
    /// Loaded from the cache.
    Cached(Box<dyn HitMap>),
    /// Being built, under the cache key taken before it was begun.
    Building(Box<dyn MapBuilder>, Option<Key>),
}

/// The map format of `rules`, when its hits are placed by a map.
fn map_format(rules: &Rules) -> Option<&'static dyn MapFormat> {
    match rules.hit_paths {
        Some(HitPaths::Map(m)) => Some(m),
        _ => None,
    }
}

impl EarlyMap {
    /// For a session file in `rules`' format searched by `search`.
    fn new(search: &Search, rules: &Rules) -> EarlyMap {
        match map_format(rules) {
            Some(m) if output_is_paths(search) => EarlyMap::Idle(m),
            _ => EarlyMap::Off,
        }
    }

    /// After the scan of the complete lines `lines`, at byte `base` of `f`, which
    /// selected `new`.
    fn after_block(&mut self, f: &File, lines: &[u8], base: u64, new: &[Candidate]) {
        if new.iter().any(|c| c.results.is_none()) {
            // A candidate that needs the index: the fast path will not follow.
            *self = EarlyMap::Off;
            return;
        }
        match self {
            EarlyMap::Building(m, _) => m.feed(lines, base),
            EarlyMap::Idle(format) if !new.is_empty() => {
                *self = EarlyMap::begin(*format, f, base + lines.len() as u64);
            }
            _ => {}
        }
    }

    /// Begins the map of `f` (from the cache, or from its lines up to byte `to`, read
    /// again, after the key is taken).
    fn begin(format: &'static dyn MapFormat, f: &File, to: u64) -> EarlyMap {
        let cache = Cache::global();
        let key = cache.and_then(|c| c.key(f));
        if let Some(ix) = cache.zip(key.as_ref()).and_then(|(c, k)| c.load(k, format)) {
            return EarlyMap::Cached(ix);
        }
        // The map covers the bytes the key describes (a line written since is in
        // neither).
        let size = match &key {
            Some(k) => k.size(),
            None => match f.metadata() {
                Ok(m) => m.len(),
                Err(_) => return EarlyMap::Off,
            },
        };
        let mut m = format.builder(size);
        if m.read(f, to, &mut Vec::new()).is_err() {
            return EarlyMap::Off;
        }
        EarlyMap::Building(m, key)
    }

    /// A line the scan passed without handing it over (longer than the bound).
    fn skipped_line(&mut self) {
        if let EarlyMap::Building(m, _) = self {
            m.refuse();
        }
    }
}

/// The raw scan of a session file and its side files: the candidate lines, or `None`
/// when every entry must be rendered (a format the prefilter does not know).
fn scan(path: &Path, search: &Search, buf: &mut Vec<u8>) -> io::Result<Option<Scanned>> {
    let mut early = EarlyMap::Off;
    let Some((rules, p, mut candidates, file)) =
        scan_once(path, path, search, buf, None, 0, Some(&mut early))?
    else {
        return Ok(None);
    };
    // As this search listed them, or listed now.
    let sides = match search
        .plans
        .as_ref()
        .and_then(|pl| pl.sides_of(path, rules))
    {
        Some(s) => s.to_vec(),
        None => rules.side_files.map_or_else(Vec::new, |f| f(path)),
    };
    // A compressed page (Codex's `.jsonl.zst`) cannot be scanned raw: every entry of
    // the session is rendered.
    if sides
        .iter()
        .any(|p| p.extension().is_some_and(|e| e == "zst"))
    {
        return Ok(None);
    }
    for (k, side) in sides.iter().enumerate() {
        // One that cannot be read is not indexed either.
        if let Ok(Some((_, _, c, _))) =
            scan_once(side, path, search, buf, Some((rules, p)), k + 1, None)
        {
            candidates.extend(c);
        }
    }
    Ok(Some(Scanned {
        rules,
        candidates,
        sides,
        file,
        early,
    }))
}

/// A format and its prefilter.
type Format<'a> = (&'static Rules, &'a Prefilter);

/// What the raw scan of one file found: its format, the candidates, and the file as
/// the scan read it (`None` when the search had scanned it already, [`Scans`]).
type FileScan<'a> = (&'static Rules, &'a Prefilter, Vec<Candidate>, Option<File>);

/// [`scan_file`], or its result when the search has scanned the file already (for
/// another session, [`Scans`]).
fn scan_once<'a>(
    path: &Path,
    session: &Path,
    search: &'a Search,
    buf: &mut Vec<u8>,
    format: Option<Format<'a>>,
    file: usize,
    early: Option<&mut EarlyMap>,
) -> io::Result<Option<FileScan<'a>>> {
    // In the format the file is read in: the session's, or (for a session file) the
    // one its name and first line surely say.
    if let Some(sh) = search.scans.get(path)
        && match format {
            Some((r, _)) => std::ptr::eq(r, sh.rules),
            None => rules::known(path).is_some_and(|r| std::ptr::eq(r, sh.rules)),
        }
    {
        let c = sh
            .candidates
            .iter()
            .map(|c| Candidate { file, ..c.clone() })
            .collect();
        return Ok(Some((sh.rules, search.prefilter(sh.rules), c, None)));
    }
    let scanned = scan_file(path, session, search, buf, format, file, early)?;
    if let Some((r, _, c, _)) = &scanned
        && Scans::shareable(r)
    {
        search.scans.put(path, r, c);
    }
    Ok(scanned)
}

/// The raw scan of one file of the session file `session` (itself or a side file),
/// in `format` or the one its first lines say: the
/// candidate lines (numbered `file`), or `None` when every entry must be rendered (a
/// format the prefilter does not know). Where the format gives a line's content from
/// the line alone, candidates are searched here, and those without a match are
/// dropped (with `-c`, every entry is printed and all are kept). With `early`, the
/// session file's hit-path map is begun at the first hit ([`EarlyMap`]).
fn scan_file<'a>(
    path: &Path,
    session: &Path,
    search: &'a Search,
    buf: &mut Vec<u8>,
    mut format: Option<Format<'a>>,
    file: usize,
    mut early: Option<&mut EarlyMap>,
) -> io::Result<Option<FileScan<'a>>> {
    // Nothing to read, as the index found the file at the start of the search: not
    // even opened.
    if let Some(r) = search.plans.as_ref().and_then(|pl| pl.nothing_in(path))
        && format.is_none_or(|(f, _)| std::ptr::eq(f, r))
        && !search.prefilter(r).selects_everything()
    {
        return Ok(Some((r, search.prefilter(r), Vec::new(), None)));
    }
    // A device or a FIFO is refused, never read (or waited on).
    let f = input::open_regular(path)?;
    if buf.len() < BLOCK {
        buf.resize(BLOCK, 0);
    }
    if format.is_none()
        && let Some(r) = rules::known(path)
    {
        let p = search.prefilter(r);
        if p.selects_everything() {
            return Ok(None);
        }
        format = Some((r, p));
        if let Some(e) = early.as_deref_mut() {
            *e = EarlyMap::new(search, r);
        }
    }
    let mut out = Vec::new();
    // Bytes the format knows hold no entry ([`Rules::no_entries_before`]) are passed
    // over: the scan begins at the `\n` that must end them, and from the start of the
    // file if it is not there.
    let passing = |format: Option<Format>| {
        format
            .and_then(|(r, _)| r.no_entries_before)
            .and_then(|at| at(path))
            .filter(|&n| n > 0)
    };
    // With the index: the parts of the file it names, then the bytes it does not
    // cover ([`super::indexed`]). Its plan holds only for the file as it verified it.
    if let Some(plan) = search
        .plans
        .as_ref()
        .and_then(|pl| super::indexed::plan_for(pl, &f))
    {
        let planned = match format {
            Some((r, _)) => (r.name == plan.format).then_some(r),
            None => rules::named(&plan.format),
        };
        if let Some(r) = planned {
            let p = search.prefilter(r);
            if p.selects_everything() {
                return Ok(None);
            }
            if format.is_none()
                && let Some(e) = early.as_deref_mut()
            {
                *e = EarlyMap::new(search, r);
            }
            format = Some((r, p));
            let mut held = HeldScan::default();
            let skip = match passing(format) {
                Some(n) => {
                    let mut nl = [0u8];
                    let at_newline = f.read_exact_at(&mut nl, n - 1).is_ok() && nl[0] == b'\n';
                    if at_newline { n } else { 0 }
                }
                None => 0,
            };
            for &(a, b) in &plan.ranges {
                let a = a.max(skip);
                if a < b {
                    scan_span(
                        &f,
                        session,
                        search,
                        buf,
                        &mut format,
                        file,
                        None,
                        a,
                        Some(b),
                        None,
                        &mut out,
                        &mut held,
                    )?;
                }
            }
            scan_span(
                &f,
                session,
                search,
                buf,
                &mut format,
                file,
                None,
                plan.covered.max(skip),
                None,
                None,
                &mut out,
                &mut held,
            )?;
            // A line holding binary content that lines naming it show may match: those
            // lines are candidates, and the plan read only some of them (it reads the
            // holding lines that may match, not every naming line). Read the file whole.
            let whole = plan.covered <= skip
                || plan
                    .ranges
                    .first()
                    .is_some_and(|&(a, b)| a <= skip && b >= plan.covered);
            if !held.may || whole {
                settle_held(&f, r, search, file, held, &mut out);
                return Ok(format.map(|(r, p)| (r, p, out, Some(f))));
            }
            out.clear();
        }
    }
    let passing = passing(format);
    let base = passing.map_or(0, |n| n - 1);
    let mut held = HeldScan::default();
    if !scan_span(
        &f,
        session,
        search,
        buf,
        &mut format,
        file,
        early.as_deref_mut(),
        base,
        None,
        passing,
        &mut out,
        &mut held,
    )? {
        return Ok(None);
    }
    if let Some((r, _)) = format {
        let before = out.len();
        settle_held(&f, r, search, file, held, &mut out);
        if out.len() > before
            && let Some(e) = early
        {
            // Candidates the map was not fed with: the full index places them.
            *e = EarlyMap::Off;
        }
    }
    Ok(format.map(|(r, p)| (r, p, out, Some(f))))
}

/// Makes the naming lines `held` keeps waiting candidates of `f` (numbered `file`, in
/// `r`'s format), when a line holding binary content they may show may match (rule 9
/// of [`super::prefilter`]): each read again and, where the format renders it alone,
/// searched (and dropped without a match). A line that cannot be read again (the
/// file was cut since) is left to its session.
fn settle_held(
    f: &File,
    r: &Rules,
    search: &Search,
    file: usize,
    held: HeldScan,
    out: &mut Vec<Candidate>,
) {
    if !held.may || held.waiting.is_empty() {
        return;
    }
    for (offset, len) in held.waiting {
        let mut line = vec![0; len];
        let line = f.read_exact_at(&mut line, offset).ok().map(|()| &line[..]);
        out.extend(candidate(r, search, file, offset, len, line));
    }
    out.sort_by_key(|c| c.offset);
    out.dedup_by_key(|c| c.offset);
}

/// Scans the lines of `f` from `base` (a line's start, or with `passing` the `\n`
/// before the first line that may be an entry) to `end` (the end of a line, or the
/// end of the file), in `format` or the one its first lines say, adding the
/// candidates to `out`; `false` when no format the prefilter knows can be told.
/// With `early`, the session file's hit-path map is begun at the first hit
/// ([`EarlyMap`]).
#[allow(clippy::too_many_arguments)]
fn scan_span<'a>(
    f: &File,
    session: &Path,
    search: &'a Search,
    buf: &mut Vec<u8>,
    format: &mut Option<Format<'a>>,
    file: usize,
    mut early: Option<&mut EarlyMap>,
    mut base: u64,
    end: Option<u64>,
    mut passing: Option<u64>,
    out: &mut Vec<Candidate>,
    held: &mut HeldScan,
) -> io::Result<bool> {
    let max = input::max_line();
    let mut filled = 0;
    let mut offsets = Vec::new();
    loop {
        if filled == buf.len() {
            if filled > max {
                // A line longer than the bound is no entry (the index skips it too):
                // pass it without holding it.
                let (line_end, ended) = input::skip_line(f, base + filled as u64)?;
                if let Some(e) = early.as_deref_mut() {
                    e.skipped_line();
                }
                if !ended || end.is_some_and(|e| line_end >= e) {
                    return Ok(true);
                }
                base = line_end;
                filled = 0;
                continue;
            }
            // A line longer than the buffer, up to one byte past the bound.
            let n = (buf.len() * 2).min(max + 1);
            buf.resize(n, 0);
        }
        let room = match end {
            Some(e) => (e.saturating_sub(base + filled as u64) as usize).min(buf.len() - filled),
            None => buf.len() - filled,
        };
        let mut n = if room == 0 {
            0
        } else {
            match f.read_at(&mut buf[filled..filled + room], base + filled as u64) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        if passing.take().is_some() {
            if n > 0 && buf[0] == b'\n' {
                buf.copy_within(1..n, 0);
                n -= 1;
                base += 1;
            } else {
                base = 0;
                continue;
            }
        }
        if n == 0 {
            // An unterminated last line is not an entry yet.
            return Ok(true);
        }
        filled += n;
        let Some(last_nl) = memchr::memrchr(b'\n', &buf[..filled]) else {
            continue;
        };
        let whole = last_nl + 1;
        let (r, p) = match *format {
            Some(rp) => rp,
            None => {
                let Some(r) = rules::detect(&buf[..whole]) else {
                    return Ok(false);
                };
                let p = search.prefilter(r);
                if p.selects_everything() {
                    return Ok(false);
                }
                if let Some(e) = early.as_deref_mut() {
                    *e = EarlyMap::new(search, r);
                }
                *format = Some((r, p));
                (r, p)
            }
        };
        offsets.clear();
        let waited = held.waiting.len();
        p.scan_in(&buf[..whole], 0, &mut offsets, Some(session), Some(held));
        for w in &mut held.waiting[waited..] {
            w.0 += base;
        }
        let had = out.len();
        for &o in &offsets {
            let start = o as usize;
            let end = start + memchr::memchr(b'\n', &buf[start..whole]).expect("whole lines");
            let line = &buf[start..end];
            // A line the format shows nowhere is no candidate; asked only until the
            // file has one (`Rules::shown`).
            if out.is_empty() && r.shown.is_some_and(|shown| !shown(line)) {
                continue;
            }
            out.extend(candidate(r, search, file, base + o, line.len(), Some(line)));
        }
        if let Some(e) = early.as_deref_mut() {
            e.after_block(f, &buf[..whole], base, &out[had..]);
        }
        buf.copy_within(whole..filled, 0);
        filled -= whole;
        base += whole as u64;
    }
}

/// Searches one session file, handing its output to `emit` in order.
pub fn search_file(
    job: &Job,
    search: &Search,
    buf: &mut Vec<u8>,
    emit: &mut dyn FnMut(Chunk),
) -> Report {
    let failed = |emit: &mut dyn FnMut(Chunk), what: String| {
        emit(Chunk::Err(format!("{}: {what}", job.path.display())));
        Report {
            matched: false,
            error: true,
            hits: 0,
        }
    };
    // Nothing to read in the file nor its side files, as the index found them at the
    // start of the search: nothing to open. (`-c` prints a count for every entry.)
    if search.mode != Mode::Count
        && let Some(r) = search
            .plans
            .as_ref()
            .and_then(|pl| pl.nothing_at_all(&job.path))
        && !search.prefilter(r).selects_everything()
    {
        return Report::default();
    }
    // A session kept with others in one file (a database): its lines are in memory
    // once it is read, and are scanned there.
    if crate::model::core::catalog::file_of(&job.path) != job.path {
        return search_in_memory(job, search, emit);
    }
    let scanned = scan(&job.path, search, buf);
    if buf.len() > 4 * BLOCK {
        // A long line grew the buffer: give the room back before the next file.
        buf.truncate(BLOCK);
        buf.shrink_to_fit();
    }
    let scanned = match scanned {
        Ok(c) => c,
        Err(e) => return failed(emit, io_msg(&e)),
    };
    if scanned.as_ref().is_some_and(|c| c.candidates.is_empty()) && search.mode != Mode::Count {
        return Report::default();
    }
    // Hits placed without the index, where the format allows it.
    let scanned = match scanned {
        Some(Scanned {
            rules,
            candidates,
            sides,
            file: Some(file),
            early,
        }) if sides.is_empty() && map_fits(search, rules, &candidates) => {
            let format = map_format(rules).expect("a format with a map");
            match hit_paths(
                search,
                candidates,
                &file,
                format,
                early,
                &job.prefix,
                buf,
                emit,
            ) {
                Ok(Ok(report)) => return report,
                Ok(Err(candidates)) => Some(Scanned {
                    rules,
                    candidates,
                    sides,
                    file: Some(file),
                    early: EarlyMap::Off,
                }),
                Err(e) => return failed(emit, io_msg(&e)),
            }
        }
        Some(Scanned {
            rules,
            candidates,
            sides,
            file,
            early,
        }) if sides.is_empty() && direct_fits(search, rules, &candidates).is_some() => {
            let direct = direct_fits(search, rules, &candidates).expect("checked");
            let f = match file {
                Some(f) => f,
                None => match input::open_regular(&job.path) {
                    Ok(f) => f,
                    Err(e) => return failed(emit, io_msg(&e)),
                },
            };
            match direct_hit_paths(search, direct, candidates, &job.path, f, &job.prefix, emit) {
                Ok(Ok(report)) => return report,
                Ok(Err((candidates, f))) => Some(Scanned {
                    rules,
                    candidates,
                    sides,
                    file: Some(f),
                    early,
                }),
                Err(e) => return failed(emit, io_msg(&e)),
            }
        }
        other => other,
    };
    let s = match open(&job.path) {
        Ok(s) => s,
        Err(LoadError::Io(e)) => return failed(emit, io_msg(&e)),
        Err(e) if job.explicit => return failed(emit, e.to_string()),
        // Not a session: the mount shows an ERROR file, not entries.
        Err(_) => return Report::default(),
    };
    let parent_text = scanned.as_ref().is_some_and(|c| c.rules.parent_text);
    let selected = scanned.map(|c| {
        let lines: Vec<(usize, u64, usize)> = c
            .candidates
            .iter()
            .map(|c| (c.file, c.offset, c.len))
            .collect();
        let nodes = s.nodes_at(&c.sides, &lines);
        let mut v: Vec<(u32, Option<Vec<FileResult>>)> = c
            .candidates
            .into_iter()
            .zip(nodes)
            .flat_map(|(c, n)| n.into_iter().map(move |i| (i, c.results.clone())))
            .collect();
        v.sort_unstable_by_key(|(i, _)| *i);
        v.dedup_by_key(|(i, _)| *i);
        v
    });
    let report = walk(job, search, &*s, selected, parent_text, emit);
    if search.sessions && report.hits > 0 {
        // The agent's own clock, not the file's time (a copy resets that), and for a
        // session of several files (a Codex thread's pages) the newest of them.
        let (last_ms, file) = s.last_activity().unwrap_or_else(|| (0, job.path.clone()));
        let path = if job.prefix.is_empty() {
            job.path.display().to_string()
        } else {
            String::from_utf8_lossy(&job.prefix).into_owned()
        };
        emit(Chunk::Session(SessionHits {
            path,
            file,
            name: s.session_name(),
            last_ms,
            hits: report.hits,
        }));
    }
    report
}

/// Searches a session that is no file of its own (a session of a database, `DB/ID`):
/// it is read (`Session::open`), its entries' lines, which the index holds in memory,
/// are scanned with its format's prefilter ([`rules::known`] by its path), and only
/// the candidates are rendered. The same text is searched as through a mount: the
/// lines are what the mount's entries show.
fn search_in_memory(job: &Job, search: &Search, emit: &mut dyn FnMut(Chunk)) -> Report {
    let s = match Session::open(&job.path) {
        Ok(s) => s,
        Err(e) => {
            let what = match &e {
                LoadError::Io(e) => io_msg(e),
                other => other.to_string(),
            };
            if !job.explicit && !matches!(e, LoadError::Io(_)) {
                return Report::default();
            }
            emit(Chunk::Err(format!("{}: {what}", job.path.display())));
            return Report {
                matched: false,
                error: true,
                hits: 0,
            };
        }
    };
    let selected = rules::known(&job.path).and_then(|r| {
        let p = search.prefilter(r);
        if p.selects_everything() {
            return None;
        }
        // Every node's line, one after the other, each ending in `\n`.
        let nodes: Vec<u32> = (0..s.entries().len() as u32)
            .filter(|&i| s.entry(i).is_node())
            .collect();
        let mut buf = Vec::new();
        let mut starts = Vec::with_capacity(nodes.len());
        s.for_each_entry_bytes(&nodes, |i, b| {
            starts.push((buf.len() as u64, i));
            buf.extend_from_slice(b);
            buf.push(b'\n');
        });
        let mut offsets = Vec::new();
        p.scan_in(&buf, 0, &mut offsets, Some(&job.path), None);
        let mut picked: Vec<(u32, Option<Vec<FileResult>>)> = offsets
            .iter()
            .filter_map(|o| {
                let k = starts
                    .partition_point(|(start, _)| start <= o)
                    .checked_sub(1)?;
                Some((starts[k].1, None))
            })
            .collect();
        picked.sort_unstable_by_key(|(i, _)| *i);
        picked.dedup_by_key(|(i, _)| *i);
        Some(picked)
    });
    if selected.as_ref().is_some_and(Vec::is_empty) && search.mode != Mode::Count {
        return Report::default();
    }
    let report = walk(job, search, &s, selected, false, emit);
    if search.sessions && report.hits > 0 {
        // The newest message: when the session was last written to.
        let last_ms = s.entries().iter().map(|e| e.ts).max().unwrap_or(0).max(0);
        let path = if job.prefix.is_empty() {
            job.path.display().to_string()
        } else {
            String::from_utf8_lossy(&job.prefix).into_owned()
        };
        emit(Chunk::Session(SessionHits {
            path,
            file: job.path.clone(),
            name: s.session_name(),
            last_ms,
            hits: report.hits,
        }));
    }
    report
}

/// The nodes in pre-order with their depths.
fn order_of(s: &dyn Searchable) -> Vec<(u32, u32)> {
    let mut order = Vec::new();
    s.preorder(&mut |i, d| order.push((i, d as u32)));
    order
}

/// Walks the tree, searching the selected nodes (all with `None`), and with
/// `parent_text` the children of selected nodes ([`Rules::parent_text`]), and printing.
fn walk(
    job: &Job,
    search: &Search,
    s: &dyn Searchable,
    mut selected: Option<Vec<(u32, Option<Vec<FileResult>>)>>,
    parent_text: bool,
    emit: &mut dyn FnMut(Chunk),
) -> Report {
    let mut report = Report::default();
    let order = order_of(s);
    // With --json: for each position, the end of its subtree, and the leaf positions.
    let ends = search.json.then(|| subtree_ends(&order));
    let leaves: Vec<usize> = if search.json {
        (0..order.len())
            .filter(|&p| s.is_leaf(order[p].0))
            .collect()
    } else {
        Vec::new()
    };
    // The directory path of the current node, built lazily.
    let mut stack: Vec<u32> = Vec::new();
    // The position in `order` of each node of `stack`.
    let mut stack_pos: Vec<usize> = Vec::new();
    // Whether each node of `stack` was selected by the scan.
    let mut picked: Vec<bool> = Vec::new();
    let mut path = job.prefix.clone();
    let mut lens: Vec<usize> = vec![path.len()];
    let mut valid = 0;
    let mut out = Vec::new();
    for (pos, &(i, d)) in order.iter().enumerate() {
        let d = d as usize;
        stack.truncate(d);
        stack.push(i);
        stack_pos.truncate(d);
        stack_pos.push(pos);
        valid = valid.min(d);
        // Whether the node is searched, and its results if the scan has them.
        let (wanted, known) = match selected.as_mut() {
            None => (true, None),
            Some(sel) => match sel.binary_search_by_key(&i, |(n, _)| *n) {
                Ok(k) => (true, sel[k].1.take()),
                Err(_) => (parent_text && d > 0 && picked[d - 1], None),
            },
        };
        picked.truncate(d);
        picked.push(
            selected
                .as_ref()
                .is_none_or(|sel| sel.binary_search_by_key(&i, |(n, _)| *n).is_ok()),
        );
        if !wanted && search.mode != Mode::Count {
            continue;
        }
        let results = match known {
            Some(r) => r,
            None if !wanted => vec![FileResult {
                image: None,
                found: Found::default(),
                bytes: Vec::new(),
            }],
            None => match s.content(i).and_then(|c| results_of(c, search, Some(s))) {
                Ok(r) => r,
                Err(e) => {
                    emit(Chunk::Out(std::mem::take(&mut out)));
                    emit(Chunk::Err(format!(
                        "{}: entry {}: {}",
                        job.path.display(),
                        s.id(i),
                        io_msg(&e)
                    )));
                    report.error = true;
                    continue;
                }
            },
        };
        if search.mode != Mode::Count && results.iter().all(|r| r.found.count == 0) {
            continue;
        }
        // Materialise the path down to this node.
        for (k, &node) in stack.iter().enumerate().skip(valid) {
            path.truncate(lens[k]);
            if !path.is_empty() {
                path.push(b'/');
            }
            path.extend_from_slice(s.dir_name(node).as_bytes());
            lens.truncate(k + 1);
            lens.push(path.len());
        }
        valid = stack.len();
        let dir_len = path.len();
        let kind = s.kind(i).to_string();
        for r in &results {
            let name = r.image.as_deref().unwrap_or(&kind);
            // Past PATH_MAX, the entry's `.id/` path (see `PATH_MAX`): what the mount
            // could open, and output that grows with the entries, not their depth.
            let short = (dir_len + 1 + name.len() >= PATH_MAX)
                .then(|| id_path(&job.prefix, &s.dir_name(i), name));
            path.truncate(dir_len);
            path.push(b'/');
            path.extend_from_slice(name.as_bytes());
            let path = match &short {
                Some(p) => p,
                None => &path,
            };
            let found = &r.found;
            if found.count > 0 {
                report.matched = true;
            }
            if search.sessions {
                report.hits += found.count;
                continue;
            }
            if search.json {
                if found.count > 0 {
                    // A piece of a turn is on the branches of the turn it belongs to.
                    let at = (0..stack.len())
                        .rev()
                        .find(|&k| !s.is_piece(stack[k]))
                        .map_or(pos, |k| stack_pos[k]);
                    let end = ends.as_ref().expect("computed with --json")[at];
                    let a = leaves.partition_point(|&p| p < at);
                    let b = leaves.partition_point(|&p| p < end);
                    // At most MAX_LEAVES of them: a hit near the root of a session of
                    // many branches would otherwise list them all, each hit again.
                    let leaf_ids: Vec<String> = leaves[a..b]
                        .iter()
                        .take(MAX_LEAVES)
                        .map(|&p| s.id(order[p].0))
                        .collect();
                    let hit = Hit {
                        job,
                        entry: s.id(i),
                        dir_name: s.dir_name(i),
                        kind: &kind,
                        file: name,
                        path,
                        leaves: &leaf_ids,
                        more_leaves: (b - a).saturating_sub(leaf_ids.len()),
                    };
                    json_hits(&mut out, &hit, &r.bytes, found);
                }
            } else {
                print_plain(search, path, r, &mut out, emit);
            }
            if out.len() >= CHUNK {
                emit(Chunk::Out(std::mem::take(&mut out)));
            }
        }
        path.truncate(dir_len);
    }
    if !out.is_empty() {
        emit(Chunk::Out(out));
    }
    report
}

/// Prints what grep found in one content file at `path` as `grep -r` prints it
/// (not `--json`, not `--sessions`).
fn print_plain(
    search: &Search,
    path: &[u8],
    r: &FileResult,
    out: &mut Vec<u8>,
    emit: &mut dyn FnMut(Chunk),
) {
    let found = &r.found;
    match search.mode {
        Mode::List if found.count > 0 => search.printer.list(out, path),
        Mode::List => {}
        Mode::Count => search.printer.count(out, path, found.count),
        Mode::Lines => {
            for l in &found.lines {
                search.printer.line(
                    out,
                    path,
                    l.number,
                    &r.bytes[l.start..l.end],
                    &search.pattern,
                );
            }
            if found.binary {
                emit(Chunk::Out(std::mem::take(out)));
                emit(Chunk::Err(format!(
                    "{}: binary file matches",
                    String::from_utf8_lossy(path)
                )));
            }
        }
    }
}

/// Whether the output needs nothing but the hits' paths: not `-c`, which prints
/// every entry, nor `--json` or `--sessions`, which need the tree's leaves or the name.
fn output_is_paths(search: &Search) -> bool {
    search.mode != Mode::Count && !search.json && !search.sessions
}

/// Whether a file's hits can be placed by its format's map ([`HitPaths::Map`]):
/// every candidate already searched (so every one left is a hit), and output that
/// needs nothing but the hits' paths.
fn map_fits(search: &Search, r: &Rules, c: &[Candidate]) -> bool {
    output_is_paths(search) && map_format(r).is_some() && c.iter().all(|c| c.results.is_some())
}

/// Prints a file's hits from their paths alone, in the mount's order, with the map
/// the scan began (`early`) or one built now; gives the candidates back when the file
/// needs its index.
#[allow(clippy::too_many_arguments)]
fn hit_paths(
    search: &Search,
    c: Vec<Candidate>,
    f: &File,
    format: &'static dyn MapFormat,
    early: EarlyMap,
    prefix: &[u8],
    buf: &mut Vec<u8>,
    emit: &mut dyn FnMut(Chunk),
) -> io::Result<Result<Report, Vec<Candidate>>> {
    let cache = Cache::global();
    let ix = match early {
        EarlyMap::Cached(ix) => ix,
        EarlyMap::Building(mut m, key) => {
            // The scan stops at the end it saw: what is left of the bytes the map
            // covers, if the file was shorter then, is read now.
            m.read(f, u64::MAX, buf)?;
            let Some(ix) = m.finish() else {
                return Ok(Err(c));
            };
            if let (Some(c), Some(k)) = (cache, &key) {
                c.store(f, k, &*ix);
            }
            ix
        }
        EarlyMap::Idle(_) | EarlyMap::Off => match map_now(f, format, cache, buf)? {
            Some(ix) => ix,
            None => return Ok(Err(c)),
        },
    };
    let hits: Vec<(u64, usize)> = c.iter().map(|c| (c.offset, c.len)).collect();
    let Ok(paths) = ix.paths(&hits, &mut &*f)? else {
        return Ok(Err(c));
    };
    Ok(Ok(print_hit_paths(search, c, paths, prefix, emit)))
}

/// Prints the candidates `c` at their paths (in the order of `paths`, the mount's).
fn print_hit_paths(
    search: &Search,
    c: Vec<Candidate>,
    paths: Vec<HitPath>,
    prefix: &[u8],
    emit: &mut dyn FnMut(Chunk),
) -> Report {
    let mut results: Vec<Option<Vec<FileResult>>> = c.into_iter().map(|c| c.results).collect();
    let mut report = Report::default();
    let mut out = Vec::new();
    for hp in paths {
        let Some(rs) = results[hp.hit].take() else {
            continue;
        };
        let mut path = prefix.to_vec();
        for d in &hp.dirs {
            if !path.is_empty() {
                path.push(b'/');
            }
            // Named as the mount names an entry's directory.
            path.extend_from_slice(escape_id(d).as_bytes());
        }
        let dir_len = path.len();
        let own = hp.dirs.last().map(|d| escape_id(d)).unwrap_or_default();
        for r in &rs {
            path.truncate(dir_len);
            path.push(b'/');
            let name = r.image.as_deref().unwrap_or(&hp.kind);
            path.extend_from_slice(name.as_bytes());
            if hp.deep || path.len() >= PATH_MAX {
                path = id_path(prefix, &own, name);
            }
            report.matched |= r.found.count > 0;
            print_plain(search, &path, r, &mut out, emit);
            if out.len() >= CHUNK {
                emit(Chunk::Out(std::mem::take(&mut out)));
            }
        }
    }
    if !out.is_empty() {
        emit(Chunk::Out(out));
    }
    report
}

/// The function that places a file's hits from the lines before them
/// ([`HitPaths::Direct`]), when its format has one, each candidate's content is known
/// from its line, every candidate is in the file itself, and nothing but the hits'
/// paths is printed.
fn direct_fits(search: &Search, r: &Rules, c: &[Candidate]) -> Option<DirectPaths> {
    let Some(HitPaths::Direct(f)) = r.hit_paths else {
        return None;
    };
    (output_is_paths(search) && c.iter().all(|c| c.results.is_some() && c.file == 0)).then_some(f)
}

/// Prints a file's hits from their paths read from the lines before them; gives the
/// candidates (and the file) back when the session needs its index.
fn direct_hit_paths(
    search: &Search,
    direct: DirectPaths,
    c: Vec<Candidate>,
    path: &Path,
    f: File,
    prefix: &[u8],
    emit: &mut dyn FnMut(Chunk),
) -> io::Result<Result<Report, (Vec<Candidate>, File)>> {
    let hits: Vec<(u64, usize)> = c.iter().map(|c| (c.offset, c.len)).collect();
    match direct(path, &f, &hits)? {
        Some(paths) => Ok(Ok(print_hit_paths(search, c, paths, prefix, emit))),
        None => Ok(Err((c, f))),
    }
}

/// The hit-path map of `f` in `format`, from the cache or built now (a file the scan
/// began no map for); `None` when the file needs its index.
fn map_now(
    f: &File,
    format: &'static dyn MapFormat,
    cache: Option<&Cache>,
    buf: &mut Vec<u8>,
) -> io::Result<Option<Box<dyn HitMap>>> {
    let key = cache.and_then(|c| c.key(f));
    if let Some(ix) = cache.zip(key.as_ref()).and_then(|(c, k)| c.load(k, format)) {
        return Ok(Some(ix));
    }
    // The map covers the bytes the key describes (a line written since is in
    // neither).
    let size = match &key {
        Some(k) => k.size(),
        None => f.metadata()?.len(),
    };
    let mut m = format.builder(size);
    let read = m.read(f, size, buf);
    if buf.len() > 4 * BLOCK {
        buf.truncate(BLOCK);
        buf.shrink_to_fit();
    }
    read?;
    let Some(ix) = m.finish() else {
        return Ok(None);
    };
    if let (Some(c), Some(k)) = (cache, &key) {
        c.store(f, k, &*ix);
    }
    Ok(Some(ix))
}

/// For each pre-order position, the position after its subtree.
fn subtree_ends(order: &[(u32, u32)]) -> Vec<usize> {
    let mut ends = vec![order.len(); order.len()];
    let mut open: Vec<usize> = Vec::new();
    for (p, &(_, d)) in order.iter().enumerate() {
        while let Some(&q) = open.last() {
            if order[q].1 >= d {
                ends[q] = p;
                open.pop();
            } else {
                break;
            }
        }
        open.push(p);
    }
    ends
}

/// The most leaves a `--json` hit lists (`more_leaves` counts the others).
const MAX_LEAVES: usize = 100;

/// `PREFIX/.id/DIR/FILE`: an entry's file by the path that is short at any depth.
fn id_path(prefix: &[u8], dir: &str, file: &str) -> Vec<u8> {
    let mut p = prefix.to_vec();
    if !p.is_empty() {
        p.push(b'/');
    }
    p.extend_from_slice(b".id/");
    p.extend_from_slice(dir.as_bytes());
    p.push(b'/');
    p.extend_from_slice(file.as_bytes());
    p
}

/// A content file with a match, for `--json`.
struct Hit<'a> {
    job: &'a Job,
    entry: String,
    dir_name: String,
    kind: &'a str,
    file: &'a str,
    path: &'a [u8],
    leaves: &'a [String],
    /// The leaves past the first [`MAX_LEAVES`], not listed.
    more_leaves: usize,
}

/// One JSON object per matching line (one for a binary file that matches).
fn json_hits(out: &mut Vec<u8>, h: &Hit, bytes: &[u8], found: &Found) {
    let id_path = id_path(&h.job.prefix, &h.dir_name, h.file);
    let mut base = json!({
        "session": h.job.path.to_string_lossy(),
        "entry": h.entry,
        "leaves": h.leaves,
        "kind": h.kind,
        "file": h.file,
        "path": String::from_utf8_lossy(h.path),
        "id_path": String::from_utf8_lossy(&id_path),
    });
    if h.more_leaves > 0 {
        base["more_leaves"] = json!(h.more_leaves);
    }
    let mut emit = |line: Option<u64>, text: Option<&[u8]>| {
        let mut v = base.clone();
        let m = v.as_object_mut().expect("an object");
        m.insert("line".into(), json!(line));
        m.insert(
            "text".into(),
            json!(text.map(|t| String::from_utf8_lossy(t).into_owned())),
        );
        if line.is_none() {
            m.insert("binary".into(), json!(true));
        }
        out.extend_from_slice(v.to_string().as_bytes());
        out.push(b'\n');
    };
    for l in &found.lines {
        emit(Some(l.number), Some(&bytes[l.start..l.end]));
    }
    if found.binary {
        emit(None, None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subtree_ends_follow_depths() {
        // a(0) b(1) c(2) d(1) e(0)
        let order = [(0, 0), (1, 1), (2, 2), (3, 1), (4, 0)];
        assert_eq!(subtree_ends(&order), [4, 3, 3, 4, 5]);
    }
}
