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

use std::collections::{HashMap, HashSet};

use super::files::{self, PageFile, Root};
use super::page::{self, Line, LineKind, Lines};
use super::state::State;

/// One page: its file and its lines.
#[derive(Debug, Clone)]
pub struct Page {
    pub file: PageFile,
    pub lines: Lines,
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
        }
    }
}

/// A page's history: the lines Codex reads for it, in order (§3.1).
#[derive(Debug, Clone, Default)]
pub struct History {
    pub lines: Vec<LineRef>,
    /// Set when the chain of bases could not be followed to its end: `lines` then holds
    /// what could be read (the pages from the break on).
    pub error: Option<Problem>,
}

/// Every page of a Codex home (or folder, or file), as threads and a tree.
#[derive(Debug, Default)]
pub struct Codex {
    pub pages: Vec<Page>,
    pub threads: Vec<Thread>,
    pub state: State,
    /// The nodes (entry lines), in page order then file order.
    pub nodes: Vec<LineRef>,
    pub problems: Vec<Problem>,
    page_by_id: HashMap<String, PageIx>,
    thread_by_id: HashMap<String, usize>,
    node_at: HashMap<LineRef, NodeIx>,
    ids: Vec<String>,
    by_id: HashMap<String, NodeIx>,
    parent: Vec<Option<NodeIx>>,
    /// Per page: the last node of its base prefix (where its own nodes hang).
    base_last: Vec<Option<NodeIx>>,
    /// Per thread: its leaf.
    leaves: Vec<Option<NodeIx>>,
    children: Vec<Vec<NodeIx>>,
}

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
        let read = |file: PageFile| match files::read_page(&file.path) {
            Ok(bytes) => (file, Ok(bytes)),
            Err(e) => (file, Err(e.to_string())),
        };
        let pages = match (root, root.codex_home()) {
            (Root::File(_), Some(home)) => {
                let mut pool: HashMap<String, PageFile> = files::discover(&Root::Home(home))
                    .into_iter()
                    .map(|f| (f.name.page_id.clone(), f))
                    .collect();
                let mut out = Vec::new();
                let mut next = files::discover(root).into_iter().next();
                while let Some(file) = next.take() {
                    pool.remove(&file.name.page_id);
                    let (file, bytes) = read(file);
                    let base = bytes
                        .as_ref()
                        .ok()
                        .and_then(|b| page::parse(b).meta?.history_base.map(|hb| hb.page_id));
                    out.push((file, bytes));
                    next = base.and_then(|id| pool.remove(&id));
                }
                out
            }
            _ => files::discover(root).into_iter().map(read).collect(),
        };
        Codex::build(pages, state)
    }

    /// Builds from pages already read (bytes or the error reading them).
    pub fn build(pages: Vec<(PageFile, Result<Vec<u8>, String>)>, state: State) -> Codex {
        let pages = pages
            .into_iter()
            .map(|(file, bytes)| {
                let (lines, read_error) = match bytes {
                    Ok(b) => (page::parse(&b), None),
                    Err(e) => (Lines::default(), Some(e)),
                };
                Page {
                    file,
                    lines,
                    read_error,
                }
            })
            .collect();
        Codex::build_parsed(pages, state)
    }

    /// Builds from pages already parsed (a refresh keeps the lines it has read).
    pub fn build_parsed(pages: Vec<Page>, state: State) -> Codex {
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

    fn collect_problems(&mut self) {
        for p in &self.pages {
            let id = p.page_id().to_string();
            if let Some(e) = &p.read_error {
                self.problems.push(Problem::Unreadable {
                    path: p.file.path.display().to_string(),
                    error: e.clone(),
                });
            }
            for l in &p.lines.lines {
                if l.kind == LineKind::Broken {
                    self.problems.push(Problem::BrokenLine {
                        page: id.clone(),
                        line: l.number,
                    });
                } else if l.kind.is_node() && l.ordinal.is_none() {
                    self.problems.push(Problem::MissingOrdinal {
                        page: id.clone(),
                        line: l.number,
                    });
                }
            }
            if let Some((a, b)) = p.lines.torn_tail {
                self.problems.push(Problem::TornTail {
                    page: id.clone(),
                    bytes: b - a,
                    at: a,
                    file: p.file.path.display().to_string(),
                });
            }
            if let Some(hb) = p.lines.meta.as_ref().and_then(|m| m.history_base.as_ref())
                && !self.page_by_id.contains_key(&hb.page_id)
            {
                self.problems.push(Problem::MissingBase {
                    page: id.clone(),
                    base: hb.page_id.clone(),
                });
            }
        }
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
        for (pi, p) in self.pages.iter().enumerate() {
            let mut seen = HashSet::new();
            for (li, l) in p.lines.lines.iter().enumerate() {
                if !l.kind.is_node() {
                    continue;
                }
                let r = LineRef { page: pi, line: li };
                let id = point_id(p.page_id(), l, &mut seen);
                let ix = self.nodes.len();
                self.nodes.push(r);
                self.node_at.insert(r, ix);
                self.by_id.insert(id.clone(), ix);
                self.ids.push(id);
            }
        }
        // Aliases second, so a point id always wins over a payload id that looks alike.
        for (ix, r) in self.nodes.iter().enumerate() {
            if let Some(pid) = self.pages[r.page].lines.lines[r.line].payload_id() {
                self.by_id.entry(pid.to_string()).or_insert(ix);
            }
        }
    }

    fn link_tree(&mut self) {
        self.parent = vec![None; self.nodes.len()];
        self.children = vec![Vec::new(); self.nodes.len()];
        self.base_last = (0..self.pages.len())
            .map(|p| self.compute_base_last(p))
            .collect();
        for pi in 0..self.pages.len() {
            let mut prev = self.base_last[pi];
            for li in 0..self.pages[pi].lines.lines.len() {
                if let Some(&n) = self.node_at.get(&LineRef { page: pi, line: li }) {
                    self.parent[n] = prev;
                    if let Some(p) = prev {
                        self.children[p].push(n);
                    }
                    prev = Some(n);
                }
            }
        }
    }

    /// The last node of page `p`'s base prefix (where its own nodes hang), if any.
    pub fn base_last_node(&self, p: PageIx) -> Option<NodeIx> {
        self.base_last[p]
    }

    fn compute_base_last(&self, p: PageIx) -> Option<NodeIx> {
        let hb = self.pages[p].lines.meta.as_ref()?.history_base.as_ref()?;
        let &base = self.page_by_id.get(&hb.page_id)?;
        let h = self.history(base, Some(hb.end_byte_offset));
        // A loop of bases would make a loop of parents: such a page is a root.
        if matches!(h.error, Some(Problem::BaseCycle { .. })) {
            return None;
        }
        h.lines
            .iter()
            .rev()
            .find_map(|r| self.node_at.get(r).copied())
    }

    /// The lines Codex reads for page `p`, cut to the complete lines within
    /// `[0, cut)` of `p`'s own bytes when `cut` is given (§3.1).
    pub fn history(&self, p: PageIx, cut: Option<u64>) -> History {
        let mut chain: Vec<(PageIx, Option<u64>)> = vec![(p, cut)];
        let mut seen = HashSet::from([p]);
        let mut error = None;
        let mut at = p;
        while let Some(hb) = self.pages[at]
            .lines
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
        let mut lines = Vec::new();
        for &(pg, cut) in chain.iter().rev() {
            let all = &self.pages[pg].lines.lines;
            let n = cut.map_or(all.len(), |c| page::count_within(all, c));
            lines.extend((0..n).map(|line| LineRef { page: pg, line }));
        }
        History { lines, error }
    }

    /// The history up to and including node `n`'s line.
    pub fn history_at(&self, n: NodeIx) -> History {
        let r = self.nodes[n];
        let end = self.line(r).end;
        self.history(r.page, Some(end))
    }

    pub fn line(&self, r: LineRef) -> &Line {
        &self.pages[r.page].lines.lines[r.line]
    }

    pub fn node_line(&self, n: NodeIx) -> &Line {
        self.line(self.nodes[n])
    }

    /// The node's id (`<pageId>:<ordinal>`, see the module doc).
    pub fn id(&self, n: NodeIx) -> &str {
        &self.ids[n]
    }

    /// A node by its id or by its `payload.id`.
    pub fn find(&self, id: &str) -> Option<NodeIx> {
        self.by_id.get(id).copied()
    }

    pub fn node_of(&self, r: LineRef) -> Option<NodeIx> {
        self.node_at.get(&r).copied()
    }

    pub fn parent(&self, n: NodeIx) -> Option<NodeIx> {
        self.parent[n]
    }

    /// Children in file order, the pages oldest first.
    pub fn children(&self, n: NodeIx) -> &[NodeIx] {
        &self.children[n]
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
        h.lines.iter().rev().find_map(|r| self.node_of(*r))
    }

    /// Every node a thread's session shows: the nodes of the histories of all its pages
    /// (a fork's inherited part included), in pre-order of the tree.
    pub fn thread_nodes(&self, t: usize) -> Vec<NodeIx> {
        let mut set = HashSet::new();
        for &p in &self.threads[t].pages {
            for r in self.history(p, None).lines {
                if let Some(n) = self.node_of(r) {
                    set.insert(n);
                }
            }
        }
        let mut roots: Vec<NodeIx> = set
            .iter()
            .copied()
            .filter(|&n| self.parent[n].is_none_or(|p| !set.contains(&p)))
            .collect();
        roots.sort_unstable();
        let mut out = Vec::with_capacity(set.len());
        let mut stack: Vec<NodeIx> = roots.into_iter().rev().collect();
        while let Some(n) = stack.pop() {
            out.push(n);
            for &c in self.children[n].iter().rev() {
                if set.contains(&c) {
                    stack.push(c);
                }
            }
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
        let th = &self.threads[t];
        th.first_page
            .into_iter()
            .chain(th.pages.iter().copied())
            .find_map(|p| self.pages[p].lines.meta.as_ref())
    }
}
