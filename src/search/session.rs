//! Searching one session file: the raw scan, then the entries it selects, rendered.
//!
//! The search sees a session through [`Searchable`]: its nodes in the order `grep -r`
//! meets them through a mount, each node's directory name, id and KIND name, and its
//! content files. [`open`] is where a file's format is decided; a second format plugs
//! in by implementing [`Searchable`] (or by being one more format behind
//! [`Session`]) and listing its decorations in [`super::rules`].

use super::grepfile::{self, Found, Mode};
use super::output::Printer;
use super::pattern::Pattern;
use super::prefilter::Prefilter;
use super::rules::{self, Rules};
use crate::model::content::{self, Content};
use crate::model::{LoadError, Session};
use crate::view::{MAX_IMAGES, entry_name};
use serde_json::json;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// A session as the search sees it.
pub trait Searchable {
    /// The node whose line starts at byte `offset` of the file, if that line is one.
    fn node_at(&self, offset: u64) -> Option<u32>;
    /// Every node in pre-order (a node's own files, then its children in order, as
    /// `grep -r` walks the mount), with its depth (roots are 0).
    fn preorder(&self, f: &mut dyn FnMut(u32, usize));
    /// The name of the node's directory in the mount.
    fn dir_name(&self, i: u32) -> String;
    /// The node's id.
    fn id(&self, i: u32) -> String;
    /// The name of its KIND file.
    fn kind(&self, i: u32) -> &str;
    /// Whether it has no children (the tip of a branch).
    fn is_leaf(&self, i: u32) -> bool;
    /// Its KIND file's text and its images, exactly as the mount serves them.
    fn content(&self, i: u32) -> io::Result<Content>;
}

impl Searchable for Session {
    fn node_at(&self, offset: u64) -> Option<u32> {
        let i = self
            .entries()
            .binary_search_by_key(&offset, |e| e.offset)
            .ok()?;
        self.entries()[i].is_node().then_some(i as u32)
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
        self.entry(i).child_count == 0
    }

    fn content(&self, i: u32) -> io::Result<Content> {
        content::entry_content(self, i)
    }
}

/// Opens a session file for searching: the format seam.
pub fn open(path: &Path) -> Result<Box<dyn Searchable>, LoadError> {
    Ok(Box::new(Session::open(path)?))
}

/// What is printed, and how.
pub struct Search {
    pub pattern: Pattern,
    pub mode: Mode,
    pub json: bool,
    pub printer: Printer,
    /// The prefilter of each known format, by [`Rules::name`].
    pub prefilters: Vec<(&'static str, Prefilter)>,
}

impl Search {
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
}

/// What searching one file gave.
#[derive(Debug, Default)]
pub struct Outcome {
    pub chunks: Vec<Chunk>,
    pub matched: bool,
    pub error: bool,
}

impl Outcome {
    fn failed(path: &Path, what: impl std::fmt::Display) -> Outcome {
        Outcome {
            chunks: vec![Chunk::Err(format!("{}: {what}", path.display()))],
            matched: false,
            error: true,
        }
    }
}

/// Size of the reads of the raw scan.
const BLOCK: usize = 4 << 20;

/// The raw scan: offsets of the candidate lines, or `None` when every entry must be
/// rendered (a format the prefilter does not know).
fn scan(path: &Path, search: &Search, buf: &mut Vec<u8>) -> io::Result<Option<Vec<u64>>> {
    let mut f = File::open(path)?;
    if buf.len() < BLOCK {
        buf.resize(BLOCK, 0);
    }
    let mut filled = 0;
    let mut base = 0u64;
    let mut out = Vec::new();
    let mut prefilter: Option<&Prefilter> = None;
    loop {
        if filled == buf.len() {
            // A line longer than the buffer.
            let n = buf.len() * 2;
            buf.resize(n, 0);
        }
        let n = match f.read(&mut buf[filled..]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            // An unterminated last line is not an entry yet.
            return Ok(prefilter.map(|_| out));
        }
        filled += n;
        let Some(last_nl) = memchr::memrchr(b'\n', &buf[..filled]) else {
            continue;
        };
        let whole = last_nl + 1;
        let p = match prefilter {
            Some(p) => p,
            None => {
                let Some(r) = rules::detect(&buf[..whole]) else {
                    return Ok(None);
                };
                let p = search.prefilter(r);
                if p.selects_everything() {
                    return Ok(None);
                }
                prefilter = Some(p);
                p
            }
        };
        p.scan(&buf[..whole], base, &mut out);
        buf.copy_within(whole..filled, 0);
        filled -= whole;
        base += whole as u64;
    }
}

/// Searches one session file.
pub fn search_file(job: &Job, search: &Search, buf: &mut Vec<u8>) -> Outcome {
    let candidates = match scan(&job.path, search, buf) {
        Ok(c) => c,
        Err(e) => return Outcome::failed(&job.path, io_msg(&e)),
    };
    if candidates.as_ref().is_some_and(|c| c.is_empty()) && search.mode != Mode::Count {
        return Outcome::default();
    }
    let s = match open(&job.path) {
        Ok(s) => s,
        Err(LoadError::Io(e)) => return Outcome::failed(&job.path, io_msg(&e)),
        Err(e) if job.explicit => return Outcome::failed(&job.path, e),
        // Not a session: the mount shows an ERROR file, not entries.
        Err(_) => return Outcome::default(),
    };
    let selected: Option<Vec<u32>> = candidates.map(|c| {
        let mut v: Vec<u32> = c.iter().filter_map(|&o| s.node_at(o)).collect();
        v.sort_unstable();
        v.dedup();
        v
    });
    walk(job, search, &*s, selected.as_deref())
}

fn io_msg(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// The nodes in pre-order with their depths.
fn order_of(s: &dyn Searchable) -> Vec<(u32, u32)> {
    let mut order = Vec::new();
    s.preorder(&mut |i, d| order.push((i, d as u32)));
    order
}

/// Walks the tree, searching the selected nodes (all with `None`) and printing.
fn walk(job: &Job, search: &Search, s: &dyn Searchable, selected: Option<&[u32]>) -> Outcome {
    let mut o = Outcome::default();
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
    let is_selected = |i: u32| selected.is_none_or(|sel| sel.binary_search(&i).is_ok());
    // The directory path of the current node, built lazily.
    let mut stack: Vec<u32> = Vec::new();
    let mut path = job.prefix.clone();
    let mut lens: Vec<usize> = vec![path.len()];
    let mut valid = 0;
    let mut out = Vec::new();
    for (pos, &(i, d)) in order.iter().enumerate() {
        let d = d as usize;
        stack.truncate(d);
        stack.push(i);
        valid = valid.min(d);
        let wanted = is_selected(i);
        if !wanted && search.mode != Mode::Count {
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
        let c = if wanted {
            match s.content(i) {
                Ok(c) => Some(c),
                Err(e) => {
                    o.chunks.push(Chunk::Out(std::mem::take(&mut out)));
                    o.chunks.push(Chunk::Err(format!(
                        "{}: entry {}: {}",
                        job.path.display(),
                        s.id(i),
                        io_msg(&e)
                    )));
                    o.error = true;
                    continue;
                }
            }
        } else {
            None
        };
        let kind = s.kind(i).to_string();
        let mut files: Vec<(String, &[u8])> = Vec::new();
        match &c {
            Some(c) => {
                files.push((kind.clone(), &c.text));
                for (n, im) in c.images.iter().enumerate().take(MAX_IMAGES as usize) {
                    files.push((content::image_name(c, n), &im.data));
                }
            }
            None => files.push((kind.clone(), &[])),
        }
        for (name, bytes) in files {
            let found = grepfile::grep(&search.pattern, bytes, search.mode);
            path.truncate(dir_len);
            path.push(b'/');
            path.extend_from_slice(name.as_bytes());
            if found.count > 0 {
                o.matched = true;
            }
            if search.json {
                if found.count > 0 {
                    let leaf_ids: Vec<String> = {
                        let end = ends.as_ref().unwrap()[pos];
                        let a = leaves.partition_point(|&p| p < pos);
                        let b = leaves.partition_point(|&p| p < end);
                        leaves[a..b].iter().map(|&p| s.id(order[p].0)).collect()
                    };
                    json_hits(
                        &mut out, job, s, i, &kind, &name, &path, &leaf_ids, bytes, &found,
                    );
                }
                continue;
            }
            match search.mode {
                Mode::List if found.count > 0 => search.printer.list(&mut out, &path),
                Mode::List => {}
                Mode::Count => search.printer.count(&mut out, &path, found.count),
                Mode::Lines => {
                    for l in &found.lines {
                        search.printer.line(
                            &mut out,
                            &path,
                            l.number,
                            &bytes[l.start..l.end],
                            &search.pattern,
                        );
                    }
                    if found.binary {
                        o.chunks.push(Chunk::Out(std::mem::take(&mut out)));
                        o.chunks.push(Chunk::Err(format!(
                            "{}: binary file matches",
                            String::from_utf8_lossy(&path)
                        )));
                    }
                }
            }
        }
        path.truncate(dir_len);
    }
    if !out.is_empty() {
        o.chunks.push(Chunk::Out(out));
    }
    o
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

/// One JSON object per matching line (one for a binary file that matches).
#[allow(clippy::too_many_arguments)]
fn json_hits(
    out: &mut Vec<u8>,
    job: &Job,
    s: &dyn Searchable,
    i: u32,
    kind: &str,
    file: &str,
    path: &[u8],
    leaves: &[String],
    bytes: &[u8],
    found: &Found,
) {
    let session_root = String::from_utf8_lossy(&job.prefix);
    let id_path = if session_root.is_empty() {
        format!(".id/{}/{file}", s.dir_name(i))
    } else {
        format!("{session_root}/.id/{}/{file}", s.dir_name(i))
    };
    let base = json!({
        "session": job.path.to_string_lossy(),
        "entry": s.id(i),
        "leaves": leaves,
        "kind": kind,
        "file": file,
        "path": String::from_utf8_lossy(path),
        "id_path": id_path,
    });
    let mut emit = |line: Option<u64>, text: Option<&[u8]>| {
        let mut v = base.clone();
        let m = v.as_object_mut().unwrap();
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
