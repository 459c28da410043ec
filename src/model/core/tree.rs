//! The `tree` file: the whole session drawn as Pi's `/tree` draws it.
//!
//! One line per entry in pre-order, children in Pi's order (by timestamp). As in Pi's
//! tree selector, a chain of single children stays in one column and indentation grows
//! only where the tree forks (and for the first generation after a fork), with `├─`/`└─`
//! connectors and `│` gutters; several roots hang off an invisible common root. Each
//! line gives the id, a one-line preview of the entry (see `Session::preview`),
//! the label if any, the `context_edit` that edits it if any (see
//! [`Session::edited_by`]), and marks the leaf (where Pi resumes). Every entry has its
//! line, `usage` and `context_edit` entries included (Pi's `/tree` hides them).
//!
//! Drawing reads the file once, front to back in large chunks, and takes each
//! preview straight from the line's bytes ([`Agent::preview_of_line`](crate::model::core::agent::Agent::preview_of_line)) without
//! building the entry; legacy files (v1, v2), whose entries are migrated when read, go
//! through [`Session::entry_value`] instead. The previews of a large file are found on
//! every core (a run of the file each), then the tree is drawn on one. Claude Code's
//! entries are parsed one by one ([`Session::preview`]): their previews are not Pi's,
//! and a subagent's lines are in files of their own.
//!
//! A chain of Claude Code attachments (the environment, model, tools, date, … that
//! 2.1.332 writes for every first prompt of a process) is drawn as one line: the first
//! one's id, `attachments ×N to LAST-ID:`, and what each one is
//! ([`Session::joins_tree_runs`]). The leaf and any entry with more than one child end
//! such a run, so every branch point and the leaf keep a line of their own.
//!
//! Indentation is drawn up to [`MAX_INDENT`] columns; a line deeper than that draws
//! those and the count of the rest (`┄N┄`), so that no line outgrows a screen and
//! the file stays linear in the entries.
//!
//! A child that is a piece of its parent's turn ([`flags::PIECE`]: the dead end
//! parallel tool calls leave in a Claude Code file) is drawn in its parent's column,
//! before the real children, so that one turn reads as one turn and not as a fork.

use crate::model::core::format::Format;
use crate::model::core::session::{Session, flags};
use crate::model::core::text::{PREVIEW_CHARS, escape_controls, has_controls, truncate_chars};
use std::io;

/// How much of the file one read takes.
const CHUNK: usize = 1 << 20;

/// Every node's preview, by entry index.
struct Previews {
    /// The previews of a run of entries, from the first entry of the run on, one run
    /// per thread that found them, in order.
    texts: Vec<(usize, String)>,
    /// Where each entry's preview lies in the text of its run.
    spans: Vec<(u32, u32)>,
}

impl Previews {
    fn get(&self, i: u32) -> &str {
        let (start, len) = self.spans[i as usize];
        let text = self
            .texts
            .iter()
            .rev()
            .find(|(first, _)| *first <= i as usize)
            .map_or("", |(_, t)| t.as_str());
        text.get(start as usize..(start + len) as usize)
            .unwrap_or_default()
    }

    fn len(&self) -> usize {
        self.texts.iter().map(|(_, t)| t.len()).sum()
    }
}

/// Files smaller than this are drawn on one thread.
const PARALLEL_BYTES: u64 = 8 << 20;

/// How previews are found: parsing every entry, or from the bytes on this many threads.
#[derive(Clone, Copy)]
enum Mode {
    Parse,
    Bytes(usize),
}

fn previews(s: &Session, mode: Mode) -> io::Result<Previews> {
    let n = s.entries().len();
    let threads = match mode {
        _ if s.format() != Format::Pi || s.header().version < 3 || n == 0 => {
            return Ok(previews_of_range(s, 0, n, true));
        }
        Mode::Parse => return Ok(previews_of_range(s, 0, n, true)),
        Mode::Bytes(t) => t,
    };
    if threads < 2 {
        return Ok(previews_of_range(s, 0, n, false));
    }
    // Previews are independent: split the file in runs of about equal bytes, one per
    // thread, and join what each found.
    let total = s.scanned_bytes();
    let mut bounds = vec![0usize];
    for k in 1..threads as u64 {
        let at = total * k / threads as u64;
        let i = s.entries().partition_point(|e| e.offset < at);
        if i > *bounds.last().unwrap_or(&0) && i < n {
            bounds.push(i);
        }
    }
    bounds.push(n);
    let parts: Vec<Previews> = std::thread::scope(|scope| {
        // This thread draws the first run itself; helpers, below the request threads
        // (`crate::prio`), the others.
        let handles: Vec<_> = bounds
            .windows(2)
            .skip(1)
            .map(|w| {
                let (a, b) = (w[0], w[1]);
                scope.spawn(move || {
                    crate::prio::helper();
                    previews_of_range(s, a, b, false)
                })
            })
            .collect();
        let first = previews_of_range(s, bounds[0], bounds[1], false);
        std::iter::once(first)
            .chain(
                handles
                    .into_iter()
                    .map(|h| h.join().expect("a thread drawing previews panicked")),
            )
            .collect()
    });
    // Each run keeps its own text: only the spans are joined.
    let mut out = Previews {
        texts: Vec::with_capacity(parts.len()),
        spans: Vec::with_capacity(n),
    };
    for p in parts {
        out.texts.extend(p.texts);
        out.spans.extend(p.spans);
    }
    Ok(out)
}

/// The previews of entries `a..b` (spans from `a`), reading their lines in large
/// chunks; with `parse`, every entry parsed and migrated instead.
fn previews_of_range(s: &Session, a: usize, b: usize, parse: bool) -> Previews {
    let mut out = Previews {
        texts: vec![(a, String::with_capacity((b - a) * 64))],
        spans: vec![(0, 0); b - a],
    };
    let put = |out: &mut Previews, i: usize, p: &str| {
        let text = &mut out.texts[0].1;
        let start = text.len() as u32;
        text.push_str(p);
        out.spans[i - a] = (start, p.len() as u32);
    };
    // Parsed and migrated; a line the index accepted but serde_json cannot build
    // (nested too deep, a lone surrogate: JSON.parse takes both) is read from its bytes.
    let slow = |i: u32| match s.preview(i) {
        Ok(p) => p,
        Err(_) => (s.format() == Format::Pi)
            .then(|| {
                s.entry_bytes(i)
                    .ok()
                    .and_then(|b| s.agent().preview_of_line(&b))
            })
            .flatten()
            .unwrap_or_else(|| format!("{} (unreadable)", s.kind_name(i))),
    };
    if parse {
        for i in a..b {
            if s.entry(i as u32).is_node() {
                put(&mut out, i, &slow(i as u32));
            }
        }
        return out;
    }
    let mut buf: Vec<u8> = Vec::new();
    let mut i = a;
    while i < b {
        // Entries are in file order: read a run of them that fits one chunk at once.
        let start = s.entry(i as u32).offset;
        let mut j = i;
        while j < b {
            let e = s.entry(j as u32);
            let end = e.offset + e.len as u64;
            if j > i && end - start > CHUNK as u64 {
                break;
            }
            j += 1;
        }
        let last = s.entry(j as u32 - 1);
        let span = (last.offset + last.len as u64 - start) as usize;
        buf.resize(span, 0);
        if s.read_exact_at(&mut buf, start).is_err() {
            // The file changed under us: each entry says for itself what it can.
            for k in i..j {
                if s.entry(k as u32).is_node() {
                    put(&mut out, k, &slow(k as u32));
                }
            }
            i = j;
            continue;
        }
        for k in i..j {
            let e = s.entry(k as u32);
            if !e.is_node() {
                continue;
            }
            let at = (e.offset - start) as usize;
            let line = &buf[at..at + e.len as usize];
            match s.agent().preview_of_line(line) {
                Some(p) => put(&mut out, k, &p),
                None => put(&mut out, k, &slow(k as u32)),
            }
        }
        i = j;
    }
    out
}

/// For each position, whether an open fork above draws a bar there (`None`: no fork
/// at that position).
type Gutters = std::rc::Rc<Vec<Option<bool>>>;

struct Frame {
    node: u32,
    indent: usize,
    just_branched: bool,
    show_connector: bool,
    is_last: bool,
    gutters: Gutters,
    virtual_root_child: bool,
}

/// Renders the whole tree. Reads every line once; a large file on every core.
pub fn render_tree(s: &Session) -> io::Result<Vec<u8>> {
    let threads = if s.scanned_bytes() < PARALLEL_BYTES {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |t| t.get().min(8))
    };
    draw(s, previews(s, Mode::Bytes(threads))?)
}

/// [`render_tree`] with every entry parsed and migrated (the way legacy files are
/// drawn): what drawing from the bytes must agree with (tests compare the two).
#[doc(hidden)]
pub fn render_tree_parsing_every_entry(s: &Session) -> io::Result<Vec<u8>> {
    draw(s, previews(s, Mode::Parse)?)
}

/// [`render_tree`] with the previews found by `threads` threads, whatever the size.
#[doc(hidden)]
pub fn render_tree_on_threads(s: &Session, threads: usize) -> io::Result<Vec<u8>> {
    draw(s, previews(s, Mode::Bytes(threads))?)
}

fn draw(s: &Session, previews: Previews) -> io::Result<Vec<u8>> {
    let edited: std::collections::HashMap<u32, u32> = s.edited_entries().into_iter().collect();
    let mut out: Vec<u8> = Vec::with_capacity(previews.len() + s.entries().len() * 24);
    let roots = s.roots();
    let multiple_roots = roots.len() > 1;
    let leaf = s.leaf();
    let empty = std::rc::Rc::new(Vec::new());
    let mut stack: Vec<Frame> = Vec::new();
    for (i, &r) in roots.iter().enumerate().rev() {
        stack.push(Frame {
            node: r,
            indent: usize::from(multiple_roots),
            just_branched: multiple_roots,
            show_connector: multiple_roots,
            is_last: i == roots.len() - 1,
            gutters: empty.clone(),
            virtual_root_child: multiple_roots,
        });
    }
    let mut kids: Vec<u32> = Vec::new();
    let mut pieces: Vec<u32> = Vec::new();
    let mut run: Vec<u32> = Vec::new();
    // The gutters of the last line drawn, and what they were drawn for.
    let mut prefix: Vec<u8> = Vec::new();
    let mut prefix_of: Option<(Gutters, usize, isize, bool)> = None;
    while let Some(f) = stack.pop() {
        let display_indent = if multiple_roots {
            f.indent.saturating_sub(1)
        } else {
            f.indent
        };
        let connector = f.show_connector && !f.virtual_root_child;
        let connector_pos = if connector {
            display_indent as isize - 1
        } else {
            -1
        };
        // A chain of single children shares its gutters: draw them once per run.
        let same = prefix_of.as_ref().is_some_and(|(g, d, c, l)| {
            std::rc::Rc::ptr_eq(g, &f.gutters)
                && *d == display_indent
                && *c == connector_pos
                && *l == f.is_last
        });
        if !same {
            prefix.clear();
            for level in 0..display_indent.min(MAX_INDENT) {
                if let Some(&Some(show)) = f.gutters.get(level) {
                    prefix.extend_from_slice(if show { "│  " } else { "   " }.as_bytes());
                } else if connector && level as isize == connector_pos {
                    prefix.extend_from_slice(if f.is_last { "└─ " } else { "├─ " }.as_bytes());
                } else {
                    prefix.extend_from_slice(b"   ");
                }
            }
            if display_indent > MAX_INDENT {
                // The columns past the cap, counted: the line keeps its length.
                let hidden = display_indent - MAX_INDENT;
                prefix.extend_from_slice(format!("┄{hidden}┄ ").as_bytes());
                if connector {
                    prefix.extend_from_slice(if f.is_last { "└─ " } else { "├─ " }.as_bytes());
                }
            }
            // Holding the gutters keeps their address from being reused by others.
            prefix_of = Some((f.gutters.clone(), display_indent, connector_pos, f.is_last));
        }
        out.extend_from_slice(&prefix);
        let id_at = out.len();
        if let Some(a) = s.alias(f.node) {
            out.extend_from_slice(a.as_bytes());
        } else if !s.ids().write_to(s.entry(f.node).id, &mut out) {
            out.extend_from_slice(s.id_string(f.node).as_bytes());
        }
        // An id is the file's, not ours to print raw: a NUL, a newline or a
        // terminal escape in it is shown escaped (the previews are made one line).
        if has_controls(&out[id_at..]) {
            let id = String::from_utf8_lossy(&out[id_at..]).into_owned();
            out.truncate(id_at);
            out.extend_from_slice(escape_controls(&id).as_bytes());
        }
        out.push(b' ');
        // A run of entries drawn as one line (Claude Code's attachments, Qwen Code's
        // bookkeeping records): the first
        // entry's id, then what each of them is.
        run.clear();
        run.push(f.node);
        if s.joins_tree_runs(f.node) && Some(f.node) != leaf {
            while let Some(c) = only_child(s, *run.last().expect("non-empty"))
                && s.joins_tree_runs(c)
                && Some(c) != leaf
            {
                run.push(c);
            }
        }
        if run.len() > 1 {
            let last = *run.last().expect("non-empty");
            let mut line = format!("{} ×{} to ", s.tree_run_noun(), run.len());
            line.push_str(&escape_controls(&match s.alias(last) {
                Some(a) => a.to_string(),
                None => s.id_string(last),
            }));
            line.push_str(": ");
            let gists: Vec<String> = run
                .iter()
                .map(|&m| {
                    let p = previews.get(m);
                    truncate_chars(p.strip_prefix("attachment ").unwrap_or(p), RUN_ITEM_CHARS)
                })
                .collect();
            line.push_str(&gists.join("; "));
            out.extend_from_slice(truncate_chars(&one_line(&line), RUN_CHARS).as_bytes());
        } else {
            out.extend_from_slice(previews.get(f.node).as_bytes());
        }
        let f = Frame {
            node: *run.last().expect("non-empty"),
            ..f
        };
        if let Some(l) = s.label_of(f.node) {
            out.extend_from_slice(format!("  [label: {}]", one_line(l)).as_bytes());
        }
        if let Some(&e) = (!edited.is_empty()).then(|| edited.get(&f.node)).flatten() {
            out.extend_from_slice(
                format!("  [edited by {}]", escape_controls(&s.id_string(e))).as_bytes(),
            );
        }
        if Some(f.node) == leaf {
            out.extend_from_slice("  ← leaf".as_bytes());
        }
        out.push(b'\n');

        kids.clear();
        pieces.clear();
        for c in s.children(f.node) {
            if s.entry(c).flags & flags::PIECE != 0 {
                pieces.push(c);
            } else {
                kids.push(c);
            }
        }
        let multiple = kids.len() > 1;
        let child_indent = if multiple || (f.just_branched && f.indent > 0) {
            f.indent + 1
        } else {
            f.indent
        };
        let current_display = if multiple_roots {
            f.indent.saturating_sub(1)
        } else {
            f.indent
        };
        let gutters = if connector && current_display <= MAX_INDENT {
            let mut g = (*f.gutters).clone();
            let at = current_display.saturating_sub(1);
            if g.len() <= at {
                g.resize(at + 1, None);
            }
            // The first fork that claimed a position keeps it.
            g[at].get_or_insert(!f.is_last);
            std::rc::Rc::new(g)
        } else {
            f.gutters.clone()
        };
        for (i, &c) in kids.iter().enumerate().rev() {
            stack.push(Frame {
                node: c,
                indent: child_indent,
                just_branched: multiple,
                show_connector: multiple,
                is_last: i == kids.len() - 1,
                gutters: gutters.clone(),
                virtual_root_child: false,
            });
        }
        // Pieces of this turn: in this node's column, drawn first.
        let single_indent = if f.just_branched && f.indent > 0 {
            f.indent + 1
        } else {
            f.indent
        };
        for &c in pieces.iter().rev() {
            stack.push(Frame {
                node: c,
                indent: single_indent,
                just_branched: false,
                show_connector: false,
                is_last: true,
                gutters: gutters.clone(),
                virtual_root_child: false,
            });
        }
    }
    Ok(out)
}

/// The most columns of indentation drawn: deeper lines draw these and then the count
/// of the others (`┄N┄`), so that a line's length, and the gutters kept for it, stay
/// bounded however deep the forks go (a tree forking at each of 100,000 levels drew
/// lines of 300,000 bytes, and kept gutters growing with the square of the depth).
pub const MAX_INDENT: usize = 64;

/// The longest line a run of entries drawn as one gets (characters).
const RUN_CHARS: usize = 4 * PREVIEW_CHARS;
/// The most one entry of such a run takes of it.
const RUN_ITEM_CHARS: usize = 48;

/// The one child of `i`, if it has exactly one (a piece of a turn counts).
fn only_child(s: &Session, i: u32) -> Option<u32> {
    let mut it = s.children(i);
    let c = it.next()?;
    it.next().is_none().then_some(c)
}

fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}
