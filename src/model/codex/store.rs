//! All the pages of a Codex home, grouped into threads and linked into one tree.
//!
//! A page's conversation is its `history_base` prefix (the complete lines within bytes
//! `[0, end_byte_offset)` of the base page, resolved the same way, also across threads
//! for forks) followed by its own lines (CODEX-FORMAT §3.1). Nothing is copied between
//! files, so the tree is built from links alone (§3.4): every `response_item` and
//! `compacted` line of every page is a node; its parent is the node before it in the same
//! page, and a page's first node hangs under the last node of its base prefix. Rewind
//! pages of one thread therefore branch where their bases end, and a fork's first page
//! hangs under the parent thread's node it forked after.
//!
//! **Ids.** A node's id is its point id `<pageId>:<ordinal>` (§3.3): it is what
//! `codex-oracle` and the samples call a point, it can be typed, it never changes once
//! the line is written (appends add ids, never move them), and it is unique even though
//! ordinals repeat inside a thread and across forks. `payload.id` is unique too but
//! optional (§9.1: a line without it is taken) and long (`msg_<uuid7>`, `fc_<32 chars>`),
//! so it is kept as an alias ([`Codex::find`] accepts both). A line without an ordinal,
//! or with one its page already used (a damaged file, §10), gets `<pageId>:L<line>`.

//!
//! **Memory.** Nothing here holds a line's bytes: each page is a `page::Index` of byte
//! ranges, and a line's JSON is read from its file when asked ([`Codex::read`],
//! [`Reader`]). Point ids are not kept as strings but made from the page id and the
//! line ([`Codex::id`]), and found again through each page's ordinals; a `payload.id`
//! is kept as a hash, checked against the line when it is looked up. The tree is three
//! arrays of node numbers. So a thread costs some 100 bytes a node beyond the core's
//! index, however long its lines.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use super::files::{self, PageFile, Root};
use super::page::{self, Index, Line, LineKind, NO_NODE, Rec};
use super::state::State;
use serde_json::Value;

/// One page: its file and its index.
#[derive(Debug, Clone)]
pub struct Page {
    pub file: PageFile,
    pub index: Index,
    /// Why the page could not be read (then it has no lines).
    pub read_error: Option<String>,
}

impl Page {
    pub fn page_id(&self) -> &str {
        &self.file.name.page_id
    }
    pub fn thread_id(&self) -> &str {
        &self.file.name.thread_id
    }

    /// Reads page `file` whole into an index; a page that cannot be read has none and
    /// says why.
    pub fn read(file: PageFile) -> Page {
        Page::read_on(file, None)
    }

    /// [`Page::read`], going on from `old` (this page as read before) when the page
    /// has only grown since: plain, and not shorter than what was read.
    pub fn read_on(file: PageFile, old: Option<Index>) -> Page {
        let compressed = file.name.compressed;
        let old = old.filter(|o| {
            !compressed && std::fs::metadata(&file.path).is_ok_and(|m| m.len() >= o.len)
        });
        match Index::read(&file.path, compressed, old) {
            Ok(index) => Page {
                file,
                index,
                read_error: None,
            },
            Err(e) => Page {
                read_error: Some(crate::model::core::input::io_message(&e)),
                file,
                index: Index::default(),
            },
        }
    }

    /// The `len` bytes at `offset` of the page (decompressed for a `.jsonl.zst`).
    fn bytes(&self, file: Option<&File>, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        if self.file.name.compressed {
            return super::zst::Pages::read(&self.file.path, offset, len);
        }
        let mut buf = Vec::new();
        crate::model::core::input::grow(&mut buf, len)?;
        match file {
            Some(f) => f.read_exact_at(&mut buf, offset)?,
            None => super::files::open_page(&self.file.path)?.read_exact_at(&mut buf, offset)?,
        }
        Ok(buf)
    }
}

/// The id of a node line of page `page_id`: `PAGE:ORDINAL`, or `PAGE:L<line>` for a
/// line without an ordinal or with one the page used already (`seen`: the ordinals of
/// the page's node lines before it).
pub fn point_id(page_id: &str, l: &Line, seen: &mut HashSet<i64>) -> String {
    match l.ordinal {
        Some(o) if seen.insert(o) => format!("{page_id}:{o}"),
        _ => format!("{page_id}:L{}", l.number),
    }
}

/// Index of a page in [`Codex::pages`].
pub type PageIx = usize;
/// Index of a node in [`Codex::nodes`].
pub type NodeIx = usize;

/// A line of a page, by position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LineRef {
    pub page: PageIx,
    pub line: usize,
}

/// A thread: its pages, oldest first, and which one is current (§4).
#[derive(Debug, Clone)]
pub struct Thread {
    pub id: String,
    pub pages: Vec<PageIx>,
    /// The page whose id is the thread id, when present.
    pub first_page: Option<PageIx>,
    pub current_page: PageIx,
    /// Whether `state_5.sqlite` chose the current page (else: newest by file name).
    pub current_from_state: bool,
}

/// What is wrong with the files, for `check` (never a panic).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// A page names a base page that is not there: Codex refuses to resume it
    /// ("missing source rollout", §3.1, §10).
    MissingBase {
        page: String,
        base: String,
    },
    /// `history_base` links that loop back.
    BaseCycle {
        page: String,
    },
    Unreadable {
        path: String,
        error: String,
    },
    /// A line that is not JSON (Codex skips it, §10).
    BrokenLine {
        page: String,
        line: usize,
    },
    /// Bytes after the last `\n` (a torn last line, or one being written).
    TornTail {
        page: String,
        bytes: u64,
        /// Where they start, and the page's file: `truncate -s AT FILE` drops them.
        at: u64,
        file: String,
    },
    /// A line longer than `--max-line`: skipped, never held.
    TooLong {
        page: String,
        line: usize,
        bytes: u64,
    },
    /// A `response_item`/`compacted` line without an ordinal (a last line without one
    /// makes Codex refuse to resume, §10).
    MissingOrdinal {
        page: String,
        line: usize,
    },
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::MissingBase { page, base } => write!(
                f,
                "page {page}: its history_base names page {base}, which is missing; Codex cannot resume it until that file is restored"
            ),
            Problem::BaseCycle { page } => {
                write!(
                    f,
                    "page {page}: its history_base chain loops back on itself"
                )
            }
            Problem::Unreadable { path, error } => write!(f, "{path}: cannot read: {error}"),
            Problem::BrokenLine { page, line } => {
                write!(f, "page {page} line {line}: not JSON (Codex skips it)")
            }
            Problem::TornTail {
                page,
                bytes,
                at,
                file,
            } => write!(
                f,
                "page {page}: {bytes} bytes after the last line end (a torn or unfinished \
                 line); to drop them once Codex is done with it: truncate -s {at} '{file}'"
            ),
            Problem::MissingOrdinal { page, line } => {
                write!(f, "page {page} line {line}: no ordinal")
            }
            Problem::TooLong { page, line, bytes } => write!(
                f,
                "page {page} line {line}: {}, longer than the {} a line may hold (--max-line): skipped, not read",
                crate::model::core::input::human_bytes(*bytes),
                crate::model::core::input::human_bytes(crate::model::core::input::max_line() as u64)
            ),
        }
    }
}

/// A page's history: the lines Codex reads for it, in order (§3.1), as runs of the
/// lines kept of each page (never a copy of them).
#[derive(Debug, Clone, Default)]
pub struct History {
    /// `(page, n)`: the first `n` lines kept of `page`; the oldest page first.
    pub runs: Vec<(PageIx, usize)>,
    /// Set when the chain of bases could not be followed to its end: `runs` then holds
    /// what could be read (the pages from the break on).
    pub error: Option<Problem>,
}

impl History {
    /// The lines, in order.
    pub fn lines(&self) -> impl DoubleEndedIterator<Item = LineRef> + '_ {
        self.runs
            .iter()
            .flat_map(|&(page, n)| (0..n).map(move |line| LineRef { page, line }))
    }

    /// The page the history starts in.
    pub fn first_page(&self) -> Option<PageIx> {
        self.runs.first().map(|r| r.0)
    }

    pub fn len(&self) -> usize {
        self.runs.iter().map(|r| r.1).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// "No node" in the tree's arrays.
const NIL: u32 = u32::MAX;

/// Every page of a Codex home (or folder, or file), as threads and a tree.
#[derive(Debug, Default)]
pub struct Codex {
    pub pages: Vec<Page>,
    pub threads: Vec<Thread>,
    pub state: State,
    /// The nodes (entry lines), in page order then file order.
    pub nodes: Vec<LineRef>,
    pub problems: Vec<Problem>,
    /// Problems not listed in `problems` (past [`MAX_PROBLEMS`]).
    pub more_problems: u64,
    page_by_id: HashMap<String, PageIx>,
    thread_by_id: HashMap<String, usize>,
    /// Per page: `(ordinal, node)` of the nodes whose point id is their ordinal, sorted.
    by_ordinal: Vec<Vec<(i64, u32)>>,
    /// `(payload id hash, node)`, sorted.
    aliases: Vec<(u64, u32)>,
    parent: Vec<u32>,
    first_child: Vec<u32>,
    next_sibling: Vec<u32>,
    /// Per page: the last node of its base prefix (where its own nodes hang).
    base_last: Vec<Option<NodeIx>>,
    /// Per thread: its leaf.
    leaves: Vec<Option<NodeIx>>,
}

/// The most problems a store lists.
pub const MAX_PROBLEMS: usize = 10_000;

impl Codex {
    /// Discovers and reads every page under `root`, with the state of its Codex home.
    pub fn load(root: &Root) -> Codex {
        let state = root
            .codex_home()
            .map(|h| State::load(&h))
            .unwrap_or_default();
        Codex::load_with_state(root, state)
    }

    /// [`Codex::load`] with a state read elsewhere (or [`State::default`]: no database).
    ///
    /// A single rollout file brings the pages its history reads (§3.1: its base pages,
    /// recursively, also a fork's parent) from the Codex home it lies in, so that a fork
    /// mounted alone still shows its whole history; the other pages of the home are left
    /// out.
    pub fn load_with_state(root: &Root, state: State) -> Codex {
        let pages = match (root, root.codex_home()) {
            (Root::File(_), Some(home)) => {
                let mut pool: HashMap<String, PageFile> = files::discover(&Root::Home(home))
                    .into_iter()
                    .map(|f| (f.name.page_id.clone(), f))
                    .collect();
                let mut out: Vec<Page> = Vec::new();
                let mut next = files::discover(root).into_iter().next();
                while let Some(file) = next.take() {
                    pool.remove(&file.name.page_id);
                    let page = Page::read(file);
                    let base = page
                        .index
                        .meta
                        .as_ref()
                        .and_then(|m| m.history_base.as_ref())
                        .map(|hb| hb.page_id.clone());
                    out.push(page);
                    next = base.and_then(|id| pool.remove(&id));
                }
                out
            }
            _ => files::discover(root).into_iter().map(Page::read).collect(),
        };
        Codex::build(pages, state)
    }

    /// Builds from pages already read (a refresh keeps the indexes it has read).
    pub fn build(pages: Vec<Page>, state: State) -> Codex {
        let mut me = Codex {
            state,
            pages,
            ..Codex::default()
        };
        me.pages
            .sort_by(|a, b| a.file.name.order_key().cmp(&b.file.name.order_key()));
        for (i, p) in me.pages.iter().enumerate() {
            me.page_by_id.insert(p.page_id().to_string(), i);
        }
        me.collect_problems();
        me.group_threads();
        me.index_nodes();
        me.link_tree();
        me.leaves = (0..me.threads.len()).map(|t| me.compute_leaf(t)).collect();
        me
    }

    fn problem(&mut self, p: Problem) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(p);
        } else {
            self.more_problems += 1;
        }
    }

    fn collect_problems(&mut self) {
        let mut found = Vec::new();
        let mut more = 0;
        for p in &self.pages {
            let id = p.page_id().to_string();
            if let Some(e) = &p.read_error {
                found.push(Problem::Unreadable {
                    path: p.file.path.display().to_string(),
                    error: e.clone(),
                });
            }
            for d in &p.index.damage {
                found.push(match *d {
                    page::Damage::Broken { line } => Problem::BrokenLine {
                        page: id.clone(),
                        line: line as usize,
                    },
                    page::Damage::TooLong { line, bytes } => Problem::TooLong {
                        page: id.clone(),
                        line: line as usize,
                        bytes,
                    },
                });
            }
            more += p.index.more_damage;
            for l in &p.index.recs {
                if l.kind.is_node() && l.ordinal.is_none() {
                    found.push(Problem::MissingOrdinal {
                        page: id.clone(),
                        line: l.number as usize,
                    });
                }
            }
            if let Some((a, b)) = p.index.torn_tail {
                found.push(Problem::TornTail {
                    page: id.clone(),
                    bytes: b - a,
                    at: a,
                    file: p.file.path.display().to_string(),
                });
            }
            if let Some(hb) = p.index.meta.as_ref().and_then(|m| m.history_base.as_ref())
                && !self.page_by_id.contains_key(&hb.page_id)
            {
                found.push(Problem::MissingBase {
                    page: id.clone(),
                    base: hb.page_id.clone(),
                });
            }
        }
        for p in found {
            self.problem(p);
        }
        self.more_problems += more;
    }

    fn group_threads(&mut self) {
        let mut order: Vec<String> = Vec::new();
        let mut members: HashMap<String, Vec<PageIx>> = HashMap::new();
        for (i, p) in self.pages.iter().enumerate() {
            let t = p.thread_id().to_string();
            if !members.contains_key(&t) {
                order.push(t.clone());
            }
            members.entry(t).or_default().push(i);
        }
        for id in order {
            let pages = members.remove(&id).unwrap_or_default();
            let first_page = pages
                .iter()
                .copied()
                .find(|&p| self.pages[p].page_id() == id);
            let from_state = self.state.rollout_path(&id).and_then(|rp| {
                let rp_plain = rp
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(files::parse_file_name)
                    .map(|n| n.plain_name());
                pages.iter().copied().find(|&p| {
                    let f = &self.pages[p].file;
                    f.path == rp || Some(f.name.plain_name()) == rp_plain
                })
            });
            // Pages are sorted by (timestamp, page id): the last is the newest (§4).
            let newest = *pages.last().expect("a thread has a page");
            self.thread_by_id.insert(id.clone(), self.threads.len());
            self.threads.push(Thread {
                id,
                first_page,
                current_page: from_state.unwrap_or(newest),
                current_from_state: from_state.is_some(),
                pages,
            });
        }
    }

    fn index_nodes(&mut self) {
        let mut by_ordinal = Vec::with_capacity(self.pages.len());
        let mut aliases = Vec::new();
        for (pi, p) in self.pages.iter_mut().enumerate() {
            let mut seen = HashSet::new();
            let mut ords = Vec::new();
            for (li, l) in p.index.recs.iter_mut().enumerate() {
                if !l.kind.is_node() {
                    continue;
                }
                let ix = self.nodes.len() as u32;
                self.nodes.push(LineRef { page: pi, line: li });
                l.node = ix;
                match l.ordinal {
                    Some(o) if seen.insert(o) => {
                        l.by_line = false;
                        ords.push((o, ix));
                    }
                    _ => l.by_line = true,
                }
                if l.alias != 0 {
                    aliases.push((l.alias, ix));
                }
            }
            ords.sort_unstable();
            ords.shrink_to_fit();
            by_ordinal.push(ords);
        }
        aliases.sort_unstable();
        self.by_ordinal = by_ordinal;
        self.aliases = aliases;
    }

    fn link_tree(&mut self) {
        let n = self.nodes.len();
        self.parent = vec![NIL; n];
        self.first_child = vec![NIL; n];
        self.next_sibling = vec![NIL; n];
        let mut last_child = vec![NIL; n];
        self.base_last = (0..self.pages.len())
            .map(|p| self.compute_base_last(p))
            .collect();
        for pi in 0..self.pages.len() {
            let mut prev = self.base_last[pi].map_or(NIL, |p| p as u32);
            for l in &self.pages[pi].index.recs {
                if l.node == NO_NODE {
                    continue;
                }
                let c = l.node;
                self.parent[c as usize] = prev;
                if prev != NIL {
                    let p = prev as usize;
                    match last_child[p] {
                        NIL => self.first_child[p] = c,
                        lc => self.next_sibling[lc as usize] = c,
                    }
                    last_child[p] = c;
                }
                prev = c;
            }
        }
    }

    /// The last node of page `p`'s base prefix (where its own nodes hang), if any.
    pub fn base_last_node(&self, p: PageIx) -> Option<NodeIx> {
        self.base_last[p]
    }

    fn compute_base_last(&self, p: PageIx) -> Option<NodeIx> {
        let hb = self.pages[p].index.meta.as_ref()?.history_base.as_ref()?;
        let &base = self.page_by_id.get(&hb.page_id)?;
        let h = self.history(base, Some(hb.end_byte_offset));
        // A loop of bases would make a loop of parents: such a page is a root.
        if matches!(h.error, Some(Problem::BaseCycle { .. })) {
            return None;
        }
        h.lines().rev().find_map(|r| self.node_of(r))
    }

    /// The lines Codex reads for page `p`, cut to the complete lines within
    /// `[0, cut)` of `p`'s own bytes when `cut` is given (§3.1).
    pub fn history(&self, p: PageIx, cut: Option<u64>) -> History {
        let mut chain: Vec<(PageIx, Option<u64>)> = vec![(p, cut)];
        let mut seen = HashSet::from([p]);
        let mut error = None;
        let mut at = p;
        while let Some(hb) = self.pages[at]
            .index
            .meta
            .as_ref()
            .and_then(|m| m.history_base.as_ref())
        {
            let Some(&base) = self.page_by_id.get(&hb.page_id) else {
                error = Some(Problem::MissingBase {
                    page: self.pages[at].page_id().to_string(),
                    base: hb.page_id.clone(),
                });
                break;
            };
            if !seen.insert(base) {
                error = Some(Problem::BaseCycle {
                    page: self.pages[at].page_id().to_string(),
                });
                break;
            }
            chain.push((base, Some(hb.end_byte_offset)));
            at = base;
        }
        let runs = chain
            .iter()
            .rev()
            .map(|&(pg, cut)| {
                let ix = &self.pages[pg].index;
                (pg, cut.map_or(ix.recs.len(), |c| ix.count_within(c)))
            })
            .collect();
        History { runs, error }
    }

    /// The history up to and including node `n`'s line.
    pub fn history_at(&self, n: NodeIx) -> History {
        let r = self.nodes[n];
        let end = self.line(r).end;
        self.history(r.page, Some(end))
    }

    /// What the index keeps of a line.
    pub fn line(&self, r: LineRef) -> &Rec {
        &self.pages[r.page].index.recs[r.line]
    }

    pub fn node_line(&self, n: NodeIx) -> &Rec {
        self.line(self.nodes[n])
    }

    /// `payload.type` of a line, when it is a string.
    pub fn payload_type(&self, r: LineRef) -> Option<&str> {
        let ix = &self.pages[r.page].index;
        ix.payload_type(&ix.recs[r.line])
    }

    /// `payload.role` of a line, when it is a string.
    pub fn payload_role(&self, r: LineRef) -> Option<&str> {
        let ix = &self.pages[r.page].index;
        ix.payload_role(&ix.recs[r.line])
    }

    /// The KIND type and name of node `n` (as `render::kind_key` gives them).
    pub fn kind_key(&self, n: NodeIx) -> (String, String) {
        let r = self.nodes[n];
        let l = self.line(r);
        let ty = match l.kind {
            LineKind::Compacted => "compacted",
            _ => self.payload_type(r).unwrap_or(""),
        };
        let name = super::render::kind_name(
            l.kind,
            self.payload_type(r),
            self.payload_role(r),
            l.meta_user,
            l.compaction_output,
        );
        (ty.to_string(), name)
    }

    /// Line `r`, read from its page and parsed.
    pub fn read(&self, r: LineRef) -> io::Result<Value> {
        self.reader().value(r)
    }

    /// Node `n`'s line read whole, as the renderers take it.
    pub fn read_node(&self, n: NodeIx) -> io::Result<Line> {
        let r = self.nodes[n];
        let mut bytes = self.reader().bytes(r)?;
        bytes.push(b'\n');
        let len = bytes.len();
        let number = usize::try_from(self.line(r).number).unwrap_or(usize::MAX);
        Ok(page::parse_line(&bytes.into(), 0, len, number))
    }

    /// A reader of lines, for reading many: it keeps the last page's file open.
    pub fn reader(&self) -> Reader<'_> {
        Reader {
            codex: self,
            open: None,
        }
    }

    /// The node's id (`<pageId>:<ordinal>`, see the module doc).
    pub fn id(&self, n: NodeIx) -> String {
        let r = self.nodes[n];
        let l = self.line(r);
        let page = self.pages[r.page].page_id();
        match l.ordinal {
            Some(o) if !l.by_line => format!("{page}:{o}"),
            _ => format!("{page}:L{}", l.number),
        }
    }

    /// A node by its id or by its `payload.id`.
    pub fn find(&self, id: &str) -> Option<NodeIx> {
        self.find_point(id).or_else(|| self.find_alias(id))
    }

    /// A node by its point id.
    pub fn find_point(&self, id: &str) -> Option<NodeIx> {
        let (page, rest) = id.rsplit_once(':')?;
        let &p = self.page_by_id.get(page)?;
        if let Some(num) = rest.strip_prefix('L') {
            // Digits only, as the id was written.
            if num.is_empty() || num.starts_with('0') || !num.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let ix = &self.pages[p].index;
            let l = &ix.recs[ix.by_number(num.parse().ok()?)?];
            return (l.node != NO_NODE && l.by_line).then_some(l.node as usize);
        }
        let o: i64 = rest.parse().ok()?;
        if o.to_string() != rest {
            return None;
        }
        let ords = &self.by_ordinal[p];
        let k = ords.binary_search_by_key(&o, |x| x.0).ok()?;
        Some(ords[k].1 as usize)
    }

    /// A node by its `payload.id` (the first in node order, as a map filled in node
    /// order keeps it), checked against its line.
    pub fn find_alias(&self, id: &str) -> Option<NodeIx> {
        let h = page::alias_hash(id);
        let from = self.aliases.partition_point(|a| a.0 < h);
        let mut reader = self.reader();
        self.aliases[from..]
            .iter()
            .take_while(|a| a.0 == h)
            .map(|a| a.1 as usize)
            .find(|&n| {
                reader
                    .value(self.nodes[n])
                    .is_ok_and(|v| v["payload"]["id"].as_str() == Some(id))
            })
    }

    /// The node of a line, when it is one.
    pub fn node_of(&self, r: LineRef) -> Option<NodeIx> {
        let n = self.line(r).node;
        (n != NO_NODE).then_some(n as usize)
    }

    pub fn parent(&self, n: NodeIx) -> Option<NodeIx> {
        let p = self.parent[n];
        (p != NIL).then_some(p as usize)
    }

    /// Children in file order, the pages oldest first.
    pub fn children(&self, n: NodeIx) -> Vec<NodeIx> {
        let mut out = Vec::new();
        let mut c = self.first_child[n];
        while c != NIL {
            out.push(c as usize);
            c = self.next_sibling[c as usize];
        }
        out
    }

    /// The thread a node's line was written in.
    pub fn thread_of_node(&self, n: NodeIx) -> usize {
        self.thread_by_id[self.pages[self.nodes[n].page].thread_id()]
    }

    pub fn thread(&self, id: &str) -> Option<usize> {
        self.thread_by_id.get(id).copied()
    }

    pub fn page(&self, page_id: &str) -> Option<PageIx> {
        self.page_by_id.get(page_id).copied()
    }

    /// The thread's leaf: the last node of its current page's history (§4).
    pub fn leaf(&self, t: usize) -> Option<NodeIx> {
        self.leaves[t]
    }

    fn compute_leaf(&self, t: usize) -> Option<NodeIx> {
        let h = self.history(self.threads[t].current_page, None);
        h.lines().rev().find_map(|r| self.node_of(r))
    }

    /// Every node a thread's session shows: the nodes of the histories of all its pages
    /// (a fork's inherited part included), in pre-order of the tree.
    pub fn thread_nodes(&self, t: usize) -> Vec<NodeIx> {
        let mut set = vec![false; self.nodes.len()];
        let mut count = 0usize;
        for &p in &self.threads[t].pages {
            for r in self.history(p, None).lines() {
                if let Some(n) = self.node_of(r)
                    && !set[n]
                {
                    set[n] = true;
                    count += 1;
                }
            }
        }
        let roots: Vec<NodeIx> = (0..self.nodes.len())
            .filter(|&n| set[n] && self.parent(n).is_none_or(|p| !set[p]))
            .collect();
        let mut out = Vec::with_capacity(count);
        let mut stack: Vec<NodeIx> = roots.into_iter().rev().collect();
        let mut kids = Vec::new();
        while let Some(n) = stack.pop() {
            out.push(n);
            kids.clear();
            let mut c = self.first_child[n];
            while c != NIL {
                if set[c as usize] {
                    kids.push(c as usize);
                }
                c = self.next_sibling[c as usize];
            }
            stack.extend(kids.iter().rev());
        }
        out
    }

    /// For a fork (or a subagent whose page has a base in another thread): the parent
    /// thread's node its first page continues from.
    pub fn fork_origin(&self, t: usize) -> Option<NodeIx> {
        let first = self.threads[t].first_page?;
        let n = self.base_last_node(first)?;
        (self.thread_of_node(n) != t).then_some(n)
    }

    /// The threads forked right after node `n` (their first page continues from it).
    pub fn forks_at(&self, n: NodeIx) -> Vec<usize> {
        let home = self.thread_of_node(n);
        (0..self.threads.len())
            .filter(|&t| t != home && self.fork_origin(t) == Some(n))
            .collect()
    }

    /// The subagent threads spawned by thread `t`: by `thread_spawn_edges` (§6), or by
    /// their `session_meta.parent_thread_id` when the database has no edge.
    pub fn subagents(&self, t: usize) -> Vec<usize> {
        let id = &self.threads[t].id;
        (0..self.threads.len())
            .filter(|&c| {
                let cid = &self.threads[c].id;
                self.state
                    .spawn_edges
                    .iter()
                    .any(|e| &e.parent_thread_id == id && &e.child_thread_id == cid)
                    || self
                        .meta(c)
                        .and_then(|m| m.parent_thread_id.as_ref())
                        .is_some_and(|p| p == id)
            })
            .collect()
    }

    /// The `session_meta` of a thread's first page (else of its oldest page).
    pub fn meta(&self, t: usize) -> Option<&page::SessionMeta> {
        self.meta_page(t)
            .and_then(|p| self.pages[p].index.meta.as_ref())
    }

    /// The page whose `session_meta` [`Codex::meta`] reads.
    pub fn meta_page(&self, t: usize) -> Option<PageIx> {
        let th = &self.threads[t];
        th.first_page
            .into_iter()
            .chain(th.pages.iter().copied())
            .find(|&p| self.pages[p].index.meta.is_some())
    }

    /// The `payload` of page `p`'s `session_meta` line, read from the page.
    pub fn meta_payload(&self, p: PageIx) -> io::Result<Option<Value>> {
        let page = &self.pages[p];
        let Some((a, b)) = page.index.meta_range else {
            return Ok(None);
        };
        let bytes = page.bytes(None, a, (b - a - 1) as usize)?;
        Ok(page::payload_of_meta_line(&bytes))
    }

    /// Approximate heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        let pages: usize = self
            .pages
            .iter()
            .map(|p| {
                std::mem::size_of::<Page>()
                    + p.index.heap_bytes()
                    + p.file.path.as_os_str().len()
                    + 3 * p.file.name.page_id.len()
            })
            .sum();
        let ords: usize = self.by_ordinal.iter().map(|v| v.capacity() * 16 + 24).sum();
        pages
            + ords
            + self.nodes.capacity() * std::mem::size_of::<LineRef>()
            + self.aliases.capacity() * 16
            + (self.parent.capacity() + self.first_child.capacity() + self.next_sibling.capacity())
                * 4
            + self.threads.len() * (std::mem::size_of::<Thread>() + 96)
            + self.problems.capacity() * (std::mem::size_of::<Problem>() + 48)
            + self.state.heap_bytes()
    }
}

/// Reads lines of a [`Codex`]'s pages, keeping the last page's file open.
pub struct Reader<'a> {
    codex: &'a Codex,
    open: Option<(PageIx, File)>,
}

impl Reader<'_> {
    /// The bytes of line `r`, without its `\n`.
    pub fn bytes(&mut self, r: LineRef) -> io::Result<Vec<u8>> {
        let page = &self.codex.pages[r.page];
        let l = self.codex.line(r);
        let len = (l.end - l.start - 1) as usize;
        if !page.file.name.compressed && self.open.as_ref().is_none_or(|o| o.0 != r.page) {
            self.open = Some((r.page, super::files::open_page(&page.file.path)?));
        }
        let file = self.open.as_ref().filter(|o| o.0 == r.page).map(|o| &o.1);
        page.bytes(file, l.start, len)
    }

    /// Line `r`, parsed (the whole line: its `payload` is `["payload"]`).
    pub fn value(&mut self, r: LineRef) -> io::Result<Value> {
        let bytes = self.bytes(r)?;
        crate::model::core::input::check_values(&bytes)
            .map_err(|e| e.to_string())
            .and_then(|()| serde_json::from_slice::<Value>(&bytes).map_err(|e| e.to_string()))
            .map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{} line {}: {e}",
                        self.codex.pages[r.page].file.path.display(),
                        self.codex.line(r).number
                    ),
                )
            })
    }
}
