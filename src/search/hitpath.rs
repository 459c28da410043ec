//! The paths of a few hits in a big Pi session, without indexing it.
//!
//! A hit's path in the mount is its ancestors' ids, root first. Learning it through
//! [`crate::model::Session`] costs the whole index: every line's JSON validated by the
//! field scanner (`model::scan`), when only the lines on the hit's path decide where
//! it is. This module builds a cheap map instead, `id → (parentId, line)`, from one
//! pass over the raw bytes, reading the three fields where Pi's writer puts them
//! (`JSON.stringify` of an entry starts `{"type":"T","id":"I","parentId":"P"` or
//! `…,"parentId":null`), then walks each hit's ancestors through that map and
//! validates only the lines it walks, with the index's own scanner.
//!
//! Used only for files of Pi's current format (a header on line 1, version 3 or
//! later, whose lines render on their own); any line this module cannot read as the
//! writer lays it out (another key order, an escape in the type or an id, an id not
//! in UTF-8, a line longer than the bound on lines, a blank line indented with
//! something else) sends the whole file to the full index, as does every doubt below.
//!
//! # Why the paths are the full index's
//!
//! The full index's entries are the lines that parse as JSON objects, other than the
//! header and later `session` lines; the map's are every line laid out as above
//! (except `session` lines), parsed or not. So the map holds every entry of the index,
//! with the same type, id and parentId, plus the malformed lines the index skips:
//!
//! * For a line that parses, the fields read from the layout are the parsed ones:
//!   they hold no escape, and a second top-level `type`, `id` or `parentId` key (or a
//!   top-level key with an escape, which could spell one) sends the file to the full
//!   index. Keys are found by a structural pass that skips strings, which is exact on
//!   valid JSON; on a malformed line it may be wrong, and that line is no entry.
//! * A malformed line could change a hit's path only if its id is on that path: as
//!   the ancestor itself, or as a later line with the ancestor's id, which the map
//!   takes for the ancestor (later wins, as in the index) while the index keeps the
//!   earlier, valid line. Either way the map's line for that id is the malformed
//!   line, it is on the walked path, and validating it fails: the file goes to the
//!   full index. A malformed line whose id is on no walked path changes no walked
//!   step: for every id on the path, the map's (latest) line is valid, so it is the
//!   index's latest entry with that id too; an id missing from the map is missing
//!   from the index.
//! * The walk then does what the index does: a null or missing `parentId` is a root,
//!   a self-parent is a root, a parent not in the file makes an orphan root, and in a
//!   cycle the member earliest in the file becomes a root (the index breaks every
//!   cycle so; a cycle's members are all on the walk). A hit on a line a later line
//!   shadows (same id) is no node, if that later line validates.
//! * The mount lists roots in file order and siblings by (timestamp, file order);
//!   two hits are ordered at the first node where their paths part, whose lines were
//!   both validated, so their timestamps are the index's.
//!
//! `tests/search.rs` compares `sessionfs grep` with `grep -r` through a mount; the
//! tests below compare these paths with the index's on random damaged files.

use crate::model::context::js_date_ms;
use crate::model::id::{IdBuild, IdKey, IdTable};
use crate::model::input;
use crate::model::kind::KindTable;
use crate::model::scan::{Field, LineHead};
use crate::model::session::NO_TIME;
use crate::view::escape_id;
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// A line that may be an entry, as its bytes lay it out.
#[derive(Debug, Clone, Copy)]
struct RawLine {
    offset: u64,
    len: u32,
    id: IdKey,
    /// `IdKey::NONE` for `null`.
    parent: IdKey,
}

/// The fields of a line laid out as Pi's writer lays them out.
struct Layout<'a> {
    ty: &'a str,
    id: &'a str,
    parent: Option<&'a str>,
    /// Where the rest of the top-level object starts (after `parentId`'s value).
    rest: usize,
}

/// A string value without escapes, in UTF-8, from `b[at..]` up to its closing quote;
/// and the position after it.
fn plain_str(b: &[u8], at: usize) -> Option<(&str, usize)> {
    let len = memchr::memchr2(b'"', b'\\', b.get(at..)?)?;
    if b[at + len] != b'"' {
        return None;
    }
    let s = std::str::from_utf8(&b[at..at + len]).ok()?;
    Some((s, at + len + 1))
}

fn layout(b: &[u8]) -> Option<Layout<'_>> {
    const TYPE: &[u8] = b"{\"type\":\"";
    const ID: &[u8] = b",\"id\":\"";
    const PARENT: &[u8] = b",\"parentId\":";
    if !b.starts_with(TYPE) {
        return None;
    }
    let (ty, at) = plain_str(b, TYPE.len())?;
    if !b[at..].starts_with(ID) {
        return None;
    }
    let (id, at) = plain_str(b, at + ID.len())?;
    if !b[at..].starts_with(PARENT) {
        return None;
    }
    let at = at + PARENT.len();
    let (parent, rest) = if b[at..].starts_with(b"null") {
        (None, at + 4)
    } else if b.get(at) == Some(&b'"') {
        let (p, rest) = plain_str(b, at + 1)?;
        (Some(p), rest)
    } else {
        return None;
    };
    Some(Layout {
        ty,
        id,
        parent,
        rest,
    })
}

/// Whether the top-level object from `from` on (inside it, after a value) has no key
/// `type`, `id` or `parentId`, nor a key with an escape. Exact on valid JSON; on a
/// malformed line the answer does not matter (see the module docs).
fn other_keys_plain(b: &[u8], from: usize) -> bool {
    let mut depth = 1usize;
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let start = i + 1;
                let mut j = start;
                let end = loop {
                    match memchr::memchr2(b'"', b'\\', &b[j..]) {
                        Some(k) if b[j + k] == b'\\' => j += k + 2,
                        Some(k) => break j + k,
                        None => return true,
                    }
                    if j >= b.len() {
                        return true;
                    }
                };
                if depth == 1 {
                    let mut m = end + 1;
                    while m < b.len() && matches!(b[m], b' ' | b'\t' | b'\r' | b'\n') {
                        m += 1;
                    }
                    if b.get(m) == Some(&b':') {
                        let key = &b[start..end];
                        if key.contains(&b'\\')
                            || key == b"type"
                            || key == b"id"
                            || key == b"parentId"
                        {
                            return false;
                        }
                    }
                }
                i = end + 1;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return true;
                }
            }
            _ => {}
        }
        i += 1;
    }
    true
}

/// The map of one file: every line that may be an entry, and the latest line of
/// each id.
pub struct RawIndex {
    lines: Vec<RawLine>,
    ids: IdTable,
    by_id: HashMap<IdKey, u32, IdBuild>,
}

/// Size of the reads that build the map.
const BLOCK: usize = 256 << 10;

/// What one line of the file is to the map.
enum Read {
    Entry(RawLine),
    /// A line the index does not take as an entry either way.
    Skip,
    /// Not laid out as expected: the file needs the full index.
    Refuse,
}

impl RawIndex {
    /// Builds the map of `f` from its complete lines (an unterminated last line is
    /// no entry), reading it in blocks through `buf`. `None` when a line is not as
    /// Pi's writer lays it out, or the header on line 1 is not of version 3 or later.
    pub fn build(f: &File, buf: &mut Vec<u8>) -> io::Result<Option<RawIndex>> {
        let max = input::max_line();
        if buf.len() < BLOCK {
            buf.resize(BLOCK, 0);
        }
        let mut ix = RawIndex {
            lines: Vec::new(),
            ids: IdTable::default(),
            by_id: HashMap::default(),
        };
        let (mut filled, mut base, mut line_no) = (0usize, 0u64, 0u64);
        loop {
            if filled == buf.len() {
                if filled > max {
                    return Ok(None);
                }
                let n = (buf.len() * 2).min(max + 1);
                buf.resize(n, 0);
            }
            let n = match f.read_at(&mut buf[filled..], base + filled as u64) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if n == 0 {
                return Ok((line_no > 0).then_some(ix));
            }
            filled += n;
            let mut start = 0;
            while let Some(len) = memchr::memchr(b'\n', &buf[start..filled]) {
                let line = &buf[start..start + len];
                line_no += 1;
                if line.len() > max {
                    return Ok(None);
                }
                let offset = base + start as u64;
                if line_no == 1 {
                    if !is_v3_header(line) {
                        return Ok(None);
                    }
                } else {
                    match ix.read_line(line, offset) {
                        Read::Entry(l) => {
                            let k = ix.lines.len() as u32;
                            ix.by_id.insert(l.id, k);
                            ix.lines.push(l);
                        }
                        Read::Skip => {}
                        Read::Refuse => return Ok(None),
                    }
                }
                start += len + 1;
            }
            buf.copy_within(start..filled, 0);
            filled -= start;
            base += start as u64;
        }
    }

    fn read_line(&mut self, line: &[u8], offset: u64) -> Read {
        let Some(l) = layout(line) else {
            return if line.iter().all(u8::is_ascii_whitespace) {
                Read::Skip
            } else {
                Read::Refuse
            };
        };
        if !other_keys_plain(line, l.rest) {
            return Read::Refuse;
        }
        if l.ty == "session" {
            // A second header, or a malformed line: no entry either way.
            return Read::Skip;
        }
        let id = self.ids.intern(l.id);
        let parent = l.parent.map_or(IdKey::NONE, |p| self.ids.intern(p));
        Read::Entry(RawLine {
            offset,
            len: line.len() as u32,
            id,
            parent,
        })
    }
}

/// Whether `line` is a session header of version 3 or later, as the index reads one.
fn is_v3_header(line: &[u8]) -> bool {
    let Ok(h) = LineHead::parse(line) else {
        return false;
    };
    h.is_header()
        && match h.version {
            Field::Num(n) => n >= 3.0,
            Field::Str(_) | Field::Other { .. } => true,
            Field::Missing | Field::Null => false,
        }
}

/// A line on a walked path, validated.
#[derive(Debug, Clone)]
struct Valid {
    ts: i64,
    kind: String,
    name: String,
}

/// Where a hit is in the mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HitPath {
    /// Which of the hits asked about.
    pub hit: usize,
    /// The directory names from the root down to the hit's.
    pub dirs: Vec<String>,
    /// The name of its KIND file.
    pub kind: String,
}

/// The file needs the full index (a doubt on a walked line).
#[derive(Debug)]
pub struct Doubt;

/// Reads lines of the file for validation.
pub trait LineSource {
    fn line(&mut self, offset: u64, len: u32) -> io::Result<Vec<u8>>;
}

impl LineSource for &File {
    fn line(&mut self, offset: u64, len: u32) -> io::Result<Vec<u8>> {
        let mut v = vec![0; len as usize];
        self.read_exact_at(&mut v, offset)?;
        Ok(v)
    }
}

impl LineSource for &[u8] {
    fn line(&mut self, offset: u64, len: u32) -> io::Result<Vec<u8>> {
        let s = offset as usize;
        self.get(s..s + len as usize)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))
    }
}

impl RawIndex {
    /// Builds the map of a file held in memory (tests).
    #[cfg(test)]
    pub fn from_bytes(bytes: &[u8]) -> Option<RawIndex> {
        let dir = tempfile::tempdir().ok()?;
        let p = dir.path().join("s.jsonl");
        std::fs::write(&p, bytes).ok()?;
        let f = File::open(&p).ok()?;
        RawIndex::build(&f, &mut Vec::new()).ok()?
    }

    /// Validates line `k` of the map with the index's scanner: it must parse, with
    /// the type, id and parentId its layout shows.
    fn validate(
        &self,
        k: u32,
        src: &mut dyn LineSource,
        kinds: &mut KindTable,
    ) -> io::Result<Result<Valid, Doubt>> {
        let l = self.lines[k as usize];
        let bytes = src.line(l.offset, l.len)?;
        let (Ok(head), Some(lay)) = (LineHead::parse(&bytes), layout(&bytes)) else {
            return Ok(Err(Doubt));
        };
        let parent_same = match (lay.parent, &head.parent_id) {
            (None, Field::Null) => true,
            (Some(p), Field::Str(s)) => p == s,
            _ => false,
        };
        if head.ty.as_str() != Some(lay.ty)
            || head.id.as_str() != Some(lay.id)
            || !parent_same
            || self.ids.get(lay.id) != Some(l.id)
        {
            return Ok(Err(Doubt));
        }
        let kind = kinds.intern(Some(lay.ty), head.role.as_str(), false);
        Ok(Ok(Valid {
            ts: head
                .timestamp
                .as_str()
                .and_then(js_date_ms)
                .unwrap_or(NO_TIME),
            kind: kinds.name(kind).to_string(),
            name: escape_id(lay.id),
        }))
    }

    /// The paths of the hits (each a line by its offset and length, without its
    /// newline), in the order `grep -r` meets them through a mount; hits on lines that
    /// are no node are left out. `Err(Doubt)`: ask the full index.
    pub fn paths(
        &self,
        hits: &[(u64, usize)],
        src: &mut dyn LineSource,
    ) -> io::Result<Result<Vec<HitPath>, Doubt>> {
        let mut kinds = KindTable::default();
        let mut valid: HashMap<u32, Valid> = HashMap::new();
        let mut check = |k: u32, valid: &mut HashMap<u32, Valid>| -> io::Result<Result<(), Doubt>> {
            if valid.contains_key(&k) {
                return Ok(Ok(()));
            }
            match self.validate(k, src, &mut kinds)? {
                Ok(v) => {
                    valid.insert(k, v);
                    Ok(Ok(()))
                }
                Err(d) => Ok(Err(d)),
            }
        };
        // Each hit's chain of map lines, root first.
        let mut chains: Vec<(usize, Vec<u32>)> = Vec::new();
        for (h, &(offset, len)) in hits.iter().enumerate() {
            let Ok(k) = self.lines.binary_search_by_key(&offset, |l| l.offset) else {
                continue; // the header, a skipped line, or a file that changed
            };
            let l = self.lines[k];
            if l.len as usize != len {
                continue;
            }
            let k = k as u32;
            if let Err(d) = check(k, &mut valid)? {
                return Ok(Err(d));
            }
            let latest = self.by_id[&l.id];
            if latest != k {
                // Shadowed by a later line with its id, if that one is an entry.
                if let Err(d) = check(latest, &mut valid)? {
                    return Ok(Err(d));
                }
                continue;
            }
            let mut chain = vec![k];
            let mut at: HashMap<u32, usize> = HashMap::from([(k, 0)]);
            let mut cur = k;
            loop {
                let c = self.lines[cur as usize];
                if c.parent.is_none() || c.parent == c.id {
                    break;
                }
                let Some(&p) = self.by_id.get(&c.parent) else {
                    break; // an orphan: a root
                };
                if let Err(d) = check(p, &mut valid)? {
                    return Ok(Err(d));
                }
                if let Some(&pos) = at.get(&p) {
                    // A cycle: its earliest member in the file is a root.
                    let root = chain[pos..].iter().copied().min().expect("a member");
                    let end = chain.iter().position(|&x| x == root).expect("on the chain");
                    chain.truncate(end + 1);
                    break;
                }
                at.insert(p, chain.len());
                chain.push(p);
                cur = p;
            }
            chain.reverse();
            chains.push((h, chain));
        }
        // Pre-order: roots in file order, siblings by (timestamp, file order); an
        // ancestor before its descendants.
        let key = |depth: usize, k: u32| {
            if depth == 0 {
                (i64::MIN, k)
            } else {
                (valid[&k].ts, k)
            }
        };
        chains.sort_by(|(_, a), (_, b)| {
            for (d, (x, y)) in a.iter().zip(b).enumerate() {
                if x != y {
                    return key(d, *x).cmp(&key(d, *y));
                }
            }
            a.len().cmp(&b.len())
        });
        chains.dedup_by(|(_, a), (_, b)| a == b);
        Ok(Ok(chains
            .into_iter()
            .map(|(hit, chain)| HitPath {
                hit,
                kind: valid[chain.last().expect("the hit")].kind.clone(),
                dirs: chain.iter().map(|k| valid[k].name.clone()).collect(),
            })
            .collect()))
    }
}
