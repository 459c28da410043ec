//! The paths of a few hits in a big Pi session, without indexing it.
//!
//! A hit's path in the mount is its ancestors' ids, root first. Learning it through
//! `Session` costs the whole index: every line's JSON validated by the
//! field scanner (`model::scan`), when only the lines on the hit's path decide where
//! it is. This module builds a cheap map instead, `id → (parentId, line)`, from one
//! pass over the raw bytes that reads only the top-level `type`, `id` and `parentId`
//! (a structural pass over quotes, backslashes and braces, 64 bytes at a time
//! (`core::structure`), that reads those fields as Pi's writer leaves them: plain
//! strings, each key once), then walks each hit's ancestors through that map and
//! validates only the lines it walks, with the index's own scanner.
//!
//! A search hands the map the lines its raw scan reads, from the block of the first
//! hit on ([`MapBuild`], `crate::search::session`), so that a big file with a hit is
//! read once (the bytes before that block twice). The search reaches this module only
//! through the format's rules ([`MAP`], a [`MapFormat`]: `crate::model::core::grep`).
//!
//! The map of a big file is kept on disk between searches (`crate::search::cache`,
//! which stores what [`HitMap::encode`] writes and [`MapFormat::decode`] reads), keyed
//! so that it is never used for a file that changed; a second search of an unchanged
//! session reads its map instead of building it. The map covers the bytes the file
//! had when it was opened for it (its key's size): a line still being written (no
//! newline yet) is in neither, and is never a hit's ancestor.
//!
//! Used only for files of Pi's current format (a header on line 1, version 3 or
//! later, whose lines render on their own). A line the pass cannot read so (an id
//! not a plain string, a key written with an escape, `type`, `id` or `parentId`
//! twice, a line longer than the bound on lines) is asked of the index's scanner:
//! blank or malformed, it is no entry and is skipped; anything else sends the whole
//! file to the full index, as does every doubt below.
//!
//! # Why the paths are the full index's
//!
//! The full index's entries are the lines that parse as JSON objects, other than the
//! header and later `session` lines; the map's are every line whose three fields the
//! pass reads (except `session` lines), parsed or not. So the map holds every entry of the index,
//! with the same type, id and parentId, plus the malformed lines the index skips:
//!
//! * For a line that parses, the fields the pass reads are the parsed ones: they hold
//!   no escape, and a second top-level `type`, `id` or `parentId` key (or a top-level
//!   key with an escape, which could spell one) sends the file to the full index, as
//!   does an id or parentId whose bytes are not UTF-8 (Node would replace them, and
//!   two ids could become one). The pass is exact on valid JSON; on a malformed line
//!   it may read anything, and that line is no entry.
//! * A line the pass cannot read is skipped only when the index's scanner says it is
//!   blank or malformed: no entry either way.
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
//! tests below compare these paths with the index's on random damaged files, and the
//! block-wise structural pass with a byte-wise one (`memchr` from string to string,
//! the pass this module began with) on random valid and damaged lines: escapes,
//! quotes and braces at every position of a block, long lines, `\r` before the end.

use crate::model::core::grep::{Doubt, HitMap, HitPath, LineSource, MapBuilder, MapFormat};
use crate::model::core::id::{IdBuild, IdKey, IdTable};
use crate::model::core::input;
use crate::model::core::js::js_date_ms;
use crate::model::core::kind::KindTable;
use crate::model::core::scan::{Field, LineError, LineHead};
use crate::model::core::session::NO_TIME;
use crate::model::core::structure::{self, Escapes, prefix_xor};
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// A line that may be an entry, as its bytes lay it out.
#[derive(Debug, Clone, Copy)]
pub struct RawLine {
    pub offset: u64,
    pub len: u32,
    pub id: IdKey,
    /// `IdKey::NONE` for `null`.
    pub parent: IdKey,
}

/// The top-level `type`, `id` and `parentId` of a line.
struct Layout<'a> {
    ty: &'a str,
    id: &'a str,
    /// `None` for `null` or a missing key.
    parent: Option<&'a str>,
}

/// The top-level `type`, `id` and `parentId` of `b`, read by a structural pass over
/// its quotes, backslashes and braces ([`structure`], 64 bytes at a time): exact on
/// valid JSON (on a malformed line the answer does not matter, see the module docs).
/// `None` unless the line is an object whose `type` and `id` are strings and whose
/// `parentId` is a string, `null` or missing, each without escapes and in UTF-8, no
/// top-level key occurs twice among those three, and no top-level key holds an
/// escape (which could spell one of them).
///
/// Depth counts objects only: in valid JSON a string followed by `:` is a key of the
/// innermost object, and arrays nest within objects in balance, so the structural
/// bytes are quotes and braces. Reading stops where the first object closes.
fn layout(b: &[u8]) -> Option<Layout<'_>> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("popcnt")
        && std::arch::is_x86_feature_detected!("bmi1")
    {
        // SAFETY: the CPU has the features `layout_avx2` is compiled for.
        return unsafe { layout_avx2(b) };
    }
    layout_with::<false>(b)
}

/// [`layout`] compiled for CPUs with AVX2, POPCNT and BMI1 (one instruction for each
/// count of bits and each lowest set bit).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt,bmi1")]
fn layout_avx2(b: &[u8]) -> Option<Layout<'_>> {
    layout_with::<true>(b)
}

/// [`layout`], its blocks classified with AVX2 when `AVX2` (only from [`layout_avx2`]).
#[inline(always)]
fn layout_with<const AVX2: bool>(b: &[u8]) -> Option<Layout<'_>> {
    if b.first() != Some(&b'{') {
        return None;
    }
    let mut fields = Fields::default();
    let mut esc = Escapes::default();
    // All ones while the previous block ended inside a string.
    let mut in_str = 0u64;
    let mut depth = 0usize;
    // The start of the depth-1 string being read, and the slot whose value it is.
    let (mut str_start, mut value_of) = (0usize, None::<usize>);
    let mut tail = [0u8; 64];
    let mut base = 0;
    'blocks: while base < b.len() {
        let block: &[u8; 64] = match b.get(base..base + 64) {
            Some(s) => s.try_into().expect("64 bytes"),
            None => {
                // The last bytes, padded with zeros (which are none of the four).
                let rest = &b[base..];
                tail[..rest.len()].copy_from_slice(rest);
                tail[rest.len()..].fill(0);
                &tail
            }
        };
        #[cfg(target_arch = "x86_64")]
        let m = if AVX2 {
            // SAFETY: `AVX2` is true only in `layout_avx2`, run on CPUs with AVX2.
            unsafe { structure::classify_avx2(block) }
        } else {
            structure::classify(block)
        };
        #[cfg(not(target_arch = "x86_64"))]
        let m = structure::classify(block);
        let quote = m.quote & !esc.next(m.backslash);
        let inside = prefix_xor(quote) ^ in_str;
        in_str = ((inside as i64) >> 63) as u64;
        let (open, close) = (m.open & !inside, m.close & !inside);
        let mut bits = quote | open | close;
        if depth >= 2 {
            // Quotes matter only where the depth is 1: pass over the block, or the part
            // of it, that is two objects deep or more.
            match back_to_top(depth, open, close) {
                Ok(d) => {
                    depth = d;
                    base += 64;
                    continue;
                }
                Err(i) => {
                    depth = 1;
                    bits &= !(2u64 << i).wrapping_sub(1);
                }
            }
        }
        while bits != 0 {
            let i = bits.trailing_zeros() as usize;
            let bit = 1u64 << i;
            bits &= bits - 1;
            let at = base + i;
            if open & bit != 0 {
                depth += 1;
            } else if close & bit != 0 {
                depth -= 1;
                if depth == 0 {
                    break 'blocks;
                }
            } else if depth == 1 {
                if inside & bit != 0 {
                    str_start = at + 1;
                } else if let Some(slot) = value_of.take() {
                    fields.set(slot, Some(value_str(&b[str_start..at])?))?;
                } else {
                    value_of = fields.key(b, str_start, at)?;
                }
            }
        }
        base += 64;
    }
    if in_str != 0 && depth != 0 {
        return None; // a string left open
    }
    Some(Layout {
        ty: fields.ty?,
        id: fields.id?,
        parent: fields.parent.flatten(),
    })
}

/// The depth after a block entered at `depth` (2 or more) whose braces outside
/// strings are `open` and `close`, or `Err(i)` when its brace at `i` closes an
/// object back to depth 1.
#[inline(always)]
fn back_to_top(depth: usize, open: u64, close: u64) -> Result<usize, u32> {
    let closes = close.count_ones() as usize;
    if depth >= 2 + closes {
        return Ok(depth + open.count_ones() as usize - closes);
    }
    let (mut braces, mut d) = (open | close, depth);
    while braces != 0 {
        let i = braces.trailing_zeros();
        braces &= braces - 1;
        if open >> i & 1 != 0 {
            d += 1;
        } else {
            d -= 1;
            if d == 1 {
                return Err(i);
            }
        }
    }
    Ok(d)
}

/// The three fields [`layout`] reads, as it meets them.
#[derive(Default)]
struct Fields<'a> {
    ty: Option<&'a str>,
    id: Option<&'a str>,
    parent: Option<Option<&'a str>>,
}

impl<'a> Fields<'a> {
    /// Sets the field of `slot` (0 `type`, 1 `id`, 2 `parentId`); `None` if it was set.
    fn set(&mut self, slot: usize, v: Option<&'a str>) -> Option<()> {
        match slot {
            0 if self.ty.is_none() => self.ty = Some(v?),
            1 if self.id.is_none() => self.id = Some(v?),
            2 if self.parent.is_none() => self.parent = Some(v),
            _ => return None,
        }
        Some(())
    }

    /// The top-level string `b[start..end]` (its closing quote at `end`): when it is
    /// a key of one of the three fields, the slot whose value is the next string, or
    /// `None` inside when that value is `null` (set here). `None` outside when the
    /// line is not laid out as [`layout`] reads.
    fn key(&mut self, b: &'a [u8], start: usize, end: usize) -> Option<Option<usize>> {
        let ws = |c: &u8| matches!(c, b' ' | b'\t' | b'\r' | b'\n');
        let mut m = end + 1;
        while b.get(m).is_some_and(ws) {
            m += 1;
        }
        if b.get(m) != Some(&b':') {
            return Some(None); // a value
        }
        let slot = match &b[start..end] {
            b"type" => 0,
            b"id" => 1,
            b"parentId" => 2,
            key if has_backslash(key) => return None,
            _ => return Some(None),
        };
        m += 1;
        while b.get(m).is_some_and(ws) {
            m += 1;
        }
        match b.get(m) {
            // The quote opening the value is the next structural byte.
            Some(b'"') => Some(Some(slot)),
            _ if slot == 2 && b[m..].starts_with(b"null") => {
                self.set(2, None)?;
                Some(None)
            }
            _ => None,
        }
    }
}

/// A field's value: no escape, UTF-8.
#[inline]
fn value_str(v: &[u8]) -> Option<&str> {
    if has_backslash(v) {
        return None;
    }
    if v.is_ascii() {
        // SAFETY: ASCII is UTF-8.
        return Some(unsafe { std::str::from_utf8_unchecked(v) });
    }
    std::str::from_utf8(v).ok()
}

/// Whether a short string (a key, an id) holds a backslash: a plain loop, cheaper
/// than a call to `memchr` at these lengths.
#[inline]
#[allow(clippy::manual_contains)] // `contains` calls core's memchr: slower at 8 bytes
fn has_backslash(v: &[u8]) -> bool {
    v.iter().any(|&c| c == b'\\')
}

/// The map of one file: every line that may be an entry, and the latest line of
/// each id.
pub struct RawIndex {
    lines: Vec<RawLine>,
    ids: IdTable,
    by_id: HashMap<IdKey, u32, IdBuild>,
}

/// Size of the reads that build the map.
/// (In the tests, 64 bytes: lines straddle reads and outgrow the buffer.)
const BLOCK: usize = if cfg!(test) { 64 } else { 256 << 10 };

/// What one line of the file is to the map.
enum Read {
    Entry(RawLine),
    /// A line the index does not take as an entry either way.
    Skip,
    /// Not laid out as expected: the file needs the full index.
    Refuse,
}

impl RawIndex {
    /// The lines of the map, in file order (for the cache).
    pub fn lines(&self) -> &[RawLine] {
        &self.lines
    }

    /// The id a key of the map stands for (for the cache).
    pub fn id_str(&self, k: IdKey) -> Option<String> {
        self.ids.resolve(k).map(|s| s.into_owned())
    }

    /// The map of `lines` (in file order), whose ids `ids` interned (from the cache).
    pub fn from_parts(lines: Vec<RawLine>, ids: IdTable) -> RawIndex {
        let mut by_id = HashMap::with_capacity_and_hasher(lines.len(), IdBuild::default());
        for (k, l) in lines.iter().enumerate() {
            by_id.insert(l.id, k as u32);
        }
        RawIndex { lines, ids, by_id }
    }

    /// Builds the map of the first `size` bytes of `f` from their complete lines (an
    /// unterminated last line is no entry), reading them in blocks through `buf`.
    /// `None` when a line is not as Pi's writer lays it out, or the header on line 1
    /// is not of version 3 or later.
    pub fn build(f: &File, size: u64, buf: &mut Vec<u8>) -> io::Result<Option<RawIndex>> {
        let mut m = MapBuild::new(size);
        m.read(f, size, buf)?;
        Ok(m.finish())
    }

    fn read_line(&mut self, line: &[u8], offset: u64) -> Read {
        let Some(l) = layout(line) else {
            // Rare: the index says whether the line is an entry.
            return match LineHead::parse(line) {
                Err(LineError::Blank | LineError::Malformed(_)) => Read::Skip,
                _ => Read::Refuse,
            };
        };
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

/// A map being built from a file's complete lines, handed to it in file order: by
/// [`RawIndex::build`], or by the raw scan of a search from the blocks it reads, so
/// that a big file with a hit is read once ([`super::session`]).
pub struct MapBuild {
    ix: RawIndex,
    /// The bytes the map covers: lines whose newline is at `size` or past it are
    /// not taken.
    size: u64,
    /// The offset of the next line to take.
    next: u64,
    line_no: u64,
    /// A line not laid out as Pi's writer lays it out: no map.
    refused: bool,
    /// Every line the map covers is taken.
    full: bool,
}

impl MapBuild {
    /// A map of the first `size` bytes of a file.
    pub fn new(size: u64) -> MapBuild {
        MapBuild {
            ix: RawIndex {
                lines: Vec::new(),
                ids: IdTable::default(),
                by_id: HashMap::default(),
            },
            size,
            next: 0,
            line_no: 0,
            refused: false,
            full: false,
        }
    }

    /// Whether the map is refused already (the file needs the full index).
    pub fn refused(&self) -> bool {
        self.refused
    }

    /// No map: a line the feeder could not hand over (longer than the bound).
    pub fn refuse(&mut self) {
        self.refused = true;
    }

    /// The offset of the next line to hand over.
    pub fn next(&self) -> u64 {
        self.next
    }

    /// Takes the complete lines `lines` (each ending with a newline), which start at
    /// byte `base` of the file, where the previous ones ended.
    pub fn feed(&mut self, lines: &[u8], base: u64) {
        if self.refused || self.full {
            return;
        }
        if base != self.next {
            // Lines missing in between: the map would not be the file's.
            self.refused = true;
            return;
        }
        let max = input::max_line();
        let mut start = 0;
        while let Some(len) = memchr::memchr(b'\n', &lines[start..]) {
            let offset = base + start as u64;
            if offset + len as u64 >= self.size {
                // Past the bytes the map covers: nothing more is taken.
                self.full = true;
                return;
            }
            let line = &lines[start..start + len];
            self.line_no += 1;
            if line.len() > max {
                self.refused = true;
                return;
            }
            if self.line_no == 1 {
                if !is_v3_header(line) {
                    self.refused = true;
                    return;
                }
            } else {
                match self.ix.read_line(line, offset) {
                    Read::Entry(l) => {
                        let k = self.ix.lines.len() as u32;
                        self.ix.by_id.insert(l.id, k);
                        self.ix.lines.push(l);
                    }
                    Read::Skip => {}
                    Read::Refuse => {
                        self.refused = true;
                        return;
                    }
                }
            }
            start += len + 1;
        }
        debug_assert_eq!(start, lines.len(), "whole lines");
        self.next = base + start as u64;
    }

    /// Reads the file from where the lines handed over end up to byte `to` (or the
    /// end of the bytes the map covers), in blocks through `buf`, and takes its
    /// complete lines.
    pub fn read(&mut self, f: &File, to: u64, buf: &mut Vec<u8>) -> io::Result<()> {
        let max = input::max_line();
        if buf.len() < BLOCK {
            buf.resize(BLOCK, 0);
        }
        let through = to >= self.size;
        let to = to.min(self.size);
        let mut filled = 0usize;
        while !self.refused && !self.full && self.next < to {
            if filled == buf.len() {
                if filled > max {
                    self.refused = true;
                    break;
                }
                let n = (buf.len() * 2).min(max + 1);
                buf.resize(n, 0);
            }
            let at = self.next + filled as u64;
            let room = (buf.len() - filled).min(to.saturating_sub(at) as usize);
            let n = match f.read_at(&mut buf[filled..filled + room], at) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if n == 0 {
                break; // the file is shorter now, or its last line unterminated
            }
            filled += n;
            let Some(last) = memchr::memrchr(b'\n', &buf[..filled]) else {
                continue;
            };
            let whole = last + 1;
            let base = self.next;
            self.feed(&buf[..whole], base);
            buf.copy_within(whole..filled, 0);
            filled -= whole;
        }
        if through {
            // Every complete line the map covers is taken: lines handed over later
            // (by a scan that read past `size`) are not.
            self.full = true;
        }
        Ok(())
    }

    /// The map, unless a line refused it or there was none.
    pub fn finish(self) -> Option<RawIndex> {
        (!self.refused && self.line_no > 0).then_some(self.ix)
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

impl RawIndex {
    /// Builds the map of a file held in memory (tests).
    #[cfg(test)]
    pub fn from_bytes(bytes: &[u8]) -> Option<RawIndex> {
        let dir = tempfile::tempdir().ok()?;
        let p = dir.path().join("s.jsonl");
        std::fs::write(&p, bytes).ok()?;
        let f = File::open(&p).ok()?;
        RawIndex::build(&f, bytes.len() as u64, &mut Vec::new()).ok()?
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
            (None, Field::Null | Field::Missing) => true,
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
            name: lay.id.to_string(),
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
        let mut check =
            |k: u32, valid: &mut HashMap<u32, Valid>| -> io::Result<Result<(), Doubt>> {
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
        // Each line met on a hit's way to its root is resolved once: `up` holds its
        // parent in the tree (`ROOT` for a root), so that hits sharing ancestors walk
        // them once (a chain of every hit's ancestors, built per hit, was quadratic in
        // the depth).
        const ROOT: u32 = u32::MAX;
        let mut up: HashMap<u32, u32> = HashMap::new();
        // The first hit on each line, by line.
        let mut hit_at: HashMap<u32, usize> = HashMap::new();
        let mut walk: Vec<u32> = Vec::new();
        let mut on_walk: HashMap<u32, usize> = HashMap::new();
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
            hit_at.entry(k).or_insert(h);
            if up.contains_key(&k) {
                continue;
            }
            walk.clear();
            on_walk.clear();
            walk.push(k);
            on_walk.insert(k, 0);
            let mut cur = k;
            let last_up = loop {
                let c = self.lines[cur as usize];
                if c.parent.is_none() || c.parent == c.id {
                    break ROOT;
                }
                let Some(&p) = self.by_id.get(&c.parent) else {
                    break ROOT; // an orphan: a root
                };
                if let Err(d) = check(p, &mut valid)? {
                    return Ok(Err(d));
                }
                if up.contains_key(&p) {
                    break p;
                }
                if on_walk.contains_key(&p) {
                    break p; // a cycle: settled below
                }
                on_walk.insert(p, walk.len());
                walk.push(p);
                cur = p;
            };
            for w in walk.windows(2) {
                up.insert(w[0], w[1]);
            }
            up.insert(cur, last_up);
            if let Some(&pos) = on_walk.get(&last_up) {
                // A cycle: its earliest member in the file is a root.
                let root = walk[pos..].iter().copied().min().expect("a member");
                up.insert(root, ROOT);
            }
        }
        // Pre-order: roots in file order, siblings by (timestamp, file order); an
        // ancestor before its descendants.
        let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
        let mut roots: Vec<u32> = Vec::new();
        for (&k, &p) in &up {
            if p == ROOT {
                roots.push(k);
            } else {
                children.entry(p).or_default().push(k);
            }
        }
        roots.sort_unstable();
        for c in children.values_mut() {
            c.sort_unstable_by_key(|&k| (valid[&k].ts, k));
        }
        let mut out = Vec::with_capacity(hit_at.len());
        // The walk: (line, whether its children were pushed), the names down to it and
        // their bytes (each with its slash).
        let mut stack: Vec<(u32, usize)> = roots.iter().rev().map(|&r| (r, 0)).collect();
        let mut names: Vec<&str> = Vec::new();
        let mut bytes: Vec<usize> = vec![0];
        while let Some((k, depth)) = stack.pop() {
            names.truncate(depth);
            bytes.truncate(depth + 1);
            let name = valid[&k].name.as_str();
            names.push(name);
            bytes.push(bytes[depth] + name.len() + 1);
            if let Some(&h) = hit_at.get(&k) {
                out.push(HitPath::of_chain(
                    h,
                    names.iter().map(|n| n.to_string()),
                    bytes[depth + 1],
                    valid[&k].kind.clone(),
                ));
            }
            if let Some(c) = children.get(&k) {
                stack.extend(c.iter().rev().map(|&c| (c, depth + 1)));
            }
        }
        Ok(Ok(out))
    }
}

/// Pi's map, as the search asks for it ([`MapFormat`]).
pub struct PiMap;

/// The map format of Pi's current files, for its rules (`super::search::PI`).
pub static MAP: PiMap = PiMap;

impl MapFormat for PiMap {
    fn builder(&self, size: u64) -> Box<dyn MapBuilder> {
        Box::new(MapBuild::new(size))
    }

    fn decode(&self, payload: &[u8], size: u64) -> Option<Box<dyn HitMap>> {
        decode(payload, size).map(|ix| Box::new(ix) as Box<dyn HitMap>)
    }
}

impl MapBuilder for MapBuild {
    fn feed(&mut self, lines: &[u8], base: u64) {
        MapBuild::feed(self, lines, base)
    }

    fn refuse(&mut self) {
        MapBuild::refuse(self)
    }

    fn read(&mut self, f: &File, to: u64, buf: &mut Vec<u8>) -> io::Result<()> {
        MapBuild::read(self, f, to, buf)
    }

    fn finish(self: Box<Self>) -> Option<Box<dyn HitMap>> {
        MapBuild::finish(*self).map(|ix| Box::new(ix) as Box<dyn HitMap>)
    }
}

impl HitMap for RawIndex {
    fn paths(
        &self,
        hits: &[(u64, usize)],
        src: &mut dyn LineSource,
    ) -> io::Result<Result<Vec<HitPath>, Doubt>> {
        RawIndex::paths(self, hits, src)
    }

    fn encode(&self) -> Vec<u8> {
        encode(self)
    }

    fn lines(&self) -> usize {
        self.lines.len()
    }
}

/// Bytes of one line in a stored map.
const LINE_BYTES: usize = 8 + 4 + 8 + 8;

/// A stored map: the number of lines and of interned ids, the lines, the interned ids
/// (each its length and bytes). The cache adds its own header, the file's key, and a
/// checksum of everything.
fn encode(ix: &RawIndex) -> Vec<u8> {
    let lines = ix.lines();
    // The interned ids, in the order the table numbered them (each is some line's id
    // or parent: the map interns nothing else).
    let mut keys: Vec<IdKey> = lines
        .iter()
        .flat_map(|l| [l.id, l.parent])
        .filter(|k| !k.is_none() && k.raw() >= 1 << 32)
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let strings: Vec<String> = keys
        .iter()
        .map(|&k| ix.id_str(k).unwrap_or_default())
        .collect();
    let mut b = Vec::with_capacity(16 + lines.len() * LINE_BYTES + strings.len() * 40);
    b.extend_from_slice(&(lines.len() as u64).to_le_bytes());
    b.extend_from_slice(&(strings.len() as u64).to_le_bytes());
    for l in lines {
        b.extend_from_slice(&l.offset.to_le_bytes());
        b.extend_from_slice(&l.len.to_le_bytes());
        b.extend_from_slice(&l.id.raw().to_le_bytes());
        b.extend_from_slice(&l.parent.raw().to_le_bytes());
    }
    for s in &strings {
        b.extend_from_slice(&(s.len() as u32).to_le_bytes());
        b.extend_from_slice(s.as_bytes());
    }
    b
}

/// Reads [`encode`]'s bytes back, if they are intact and within the first `size`
/// bytes of the file. Checked as they are read (offsets in order and within the file,
/// ids within their table), whatever the cache's checksum said.
fn decode(b: &[u8], size: u64) -> Option<RawIndex> {
    let mut r = Reader(b);
    let n_lines = usize::try_from(r.u64()?).ok()?;
    let n_strings = usize::try_from(r.u64()?).ok()?;
    if n_lines.checked_mul(LINE_BYTES)? > r.0.len() {
        return None;
    }
    let mut raw = Vec::with_capacity(n_lines);
    for _ in 0..n_lines {
        raw.push((r.u64()?, r.u32()?, r.u64()?, r.u64()?));
    }
    let mut ids = IdTable::default();
    let mut interned = Vec::with_capacity(n_strings.min(r.0.len() / 4));
    for _ in 0..n_strings {
        let n = r.u32()? as usize;
        let s = std::str::from_utf8(r.take(n)?).ok()?;
        if IdKey::from_hex8(s).is_some() {
            return None; // never interned
        }
        interned.push(ids.intern(s));
    }
    if !r.0.is_empty() {
        return None;
    }
    // An id's raw value: a hex id's value (below 2^32), or the interning table's flag
    // and index, as `IdTable` makes them; checked against the table just rebuilt.
    let id_of = |v: u64| -> Option<IdKey> {
        if v == IdKey::NONE.raw() {
            Some(IdKey::NONE)
        } else if v < 1 << 32 {
            Some(IdKey::from_u32(v as u32))
        } else {
            let first = interned.first()?.raw();
            let k = *interned.get(usize::try_from(v.checked_sub(first)?).ok()?)?;
            (k.raw() == v).then_some(k)
        }
    };
    let mut lines = Vec::with_capacity(n_lines);
    let mut end = 0u64;
    for (offset, len, id, parent) in raw {
        // In order, not overlapping, within the file the key describes.
        if offset < end {
            return None;
        }
        end = offset.checked_add(len as u64)?.checked_add(1)?;
        if end > size {
            return None;
        }
        let id = id_of(id).filter(|k| !k.is_none())?;
        lines.push(RawLine {
            offset,
            len,
            id,
            parent: id_of(parent)?,
        });
    }
    Some(RawIndex::from_parts(lines, ids))
}

/// Reads a stored map's fields in order; `None` past its end.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (a, b) = self.0.split_at_checked(n)?;
        self.0 = b;
        Some(a)
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::core::session::Session;
    use proptest::prelude::*;

    /// The node whose line is at `offset`, `len` bytes long, as the index has it.
    fn node_at(s: &Session, offset: u64, len: usize) -> Option<u32> {
        let i = s
            .entries()
            .binary_search_by_key(&offset, |e| e.offset)
            .ok()?;
        let e = &s.entries()[i];
        (e.is_node() && e.len as usize == len).then_some(i as u32)
    }

    const HEADER: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/x"}"#;

    /// One random line: an entry (ids from a small pool, so that duplicates, cycles,
    /// self-parents and orphans are common), or damage.
    #[derive(Debug, Clone)]
    enum L {
        Entry {
            ty: u8,
            id: u8,
            parent: Option<u8>,
            ts: u8,
            nested: bool,
        },
        /// An entry cut short (malformed).
        Cut {
            id: u8,
            parent: Option<u8>,
            at: u8,
        },
        /// An entry whose fields read well, malformed after them.
        BadTail {
            id: u8,
            parent: Option<u8>,
        },
        /// Valid JSON with a second `id` key after the message.
        DupKey {
            id: u8,
            other: u8,
        },
        /// An id written with an escape.
        Escaped {
            id: u8,
        },
        /// Another key order.
        Reordered {
            id: u8,
        },
        Blank,
        ExtraHeader,
    }

    fn id(n: u8) -> String {
        format!("{:08x}", 0xa000_0000u32 + n as u32)
    }

    fn entry(ty: u8, i: u8, parent: Option<u8>, ts: u8, nested: bool) -> String {
        let p = parent.map_or("null".to_string(), |p| format!("\"{}\"", id(p)));
        let ty = ["message", "model_change", "label", "custom", "session_info"][ty as usize % 5];
        let inner = if nested {
            r#"{"role":"assistant","content":[{"type":"toolCall","id":"zz","name":"x","arguments":{"id":"q","type":"session"}}]}"#
        } else {
            r#"{"role":"user","content":"hi"}"#
        };
        format!(
            r#"{{"type":"{ty}","id":"{}","parentId":{p},"timestamp":"2025-01-01T00:00:{:02}.000Z","message":{inner}}}"#,
            id(i),
            ts % 3
        )
    }

    /// A session file of `lines` after the header, and with `torn` a last line cut
    /// short (no newline).
    fn file(lines: &[L], torn: bool) -> String {
        let mut f = format!("{HEADER}\n");
        for l in lines {
            f.push_str(&text(l));
            f.push('\n');
        }
        if torn {
            f.push_str(&entry(0, 1, Some(0), 0, false)[..50]);
        }
        f
    }

    fn text(l: &L) -> String {
        match *l {
            L::Entry {
                ty,
                id: i,
                parent,
                ts,
                nested,
            } => entry(ty, i, parent, ts, nested),
            L::Cut { id: i, parent, at } => {
                let e = entry(0, i, parent, 0, false);
                let at = 60 + at as usize % (e.len() - 60);
                e[..at].to_string()
            }
            L::BadTail { id: i, parent } => {
                let e = entry(0, i, parent, 2, false);
                format!("{},}}", &e[..e.len() - 1])
            }
            L::DupKey { id: i, other } => {
                let e = entry(0, i, None, 0, false);
                format!("{},\"id\":\"{}\"}}", &e[..e.len() - 1], id(other))
            }
            L::Escaped { id: i } => entry(0, i, None, 1, false).replacen("\"a", "\"\\u0061", 1),
            L::Reordered { id: i } => format!(
                r#"{{"id":"{}","type":"message","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{{"role":"user","content":"x"}}}}"#,
                id(i)
            ),
            L::Blank => "  ".to_string(),
            L::ExtraHeader => HEADER.to_string(),
        }
    }

    fn line() -> impl Strategy<Value = L> {
        let n = 0u8..12;
        prop_oneof![
            40 => (0u8..5, n.clone(), proptest::option::weighted(0.85, 0u8..14), 0u8..3, any::<bool>())
                .prop_map(|(ty, id, parent, ts, nested)| L::Entry { ty, id, parent, ts, nested }),
            6 => (n.clone(), proptest::option::of(0u8..12), any::<u8>())
                .prop_map(|(id, parent, at)| L::Cut { id, parent, at }),
            4 => (n.clone(), proptest::option::of(0u8..12))
                .prop_map(|(id, parent)| L::BadTail { id, parent }),
            1 => (n.clone(), n.clone()).prop_map(|(id, other)| L::DupKey { id, other }),
            1 => n.clone().prop_map(|id| L::Escaped { id }),
            1 => n.clone().prop_map(|id| L::Reordered { id }),
            1 => Just(L::Blank),
            1 => Just(L::ExtraHeader),
        ]
    }

    /// The structural pass as it was written first, one `memchr` call per string:
    /// the reference the block-wise [`layout`] must agree with on valid JSON.
    fn layout_ref(b: &[u8]) -> Option<Layout<'_>> {
        fn string_end(b: &[u8], mut at: usize) -> Option<usize> {
            loop {
                let k = memchr::memchr2(b'"', b'\\', b.get(at..)?)?;
                if b[at + k] == b'"' {
                    return Some(at + k);
                }
                at += k + 2;
            }
        }
        if b.first() != Some(&b'{') {
            return None;
        }
        let (mut ty, mut id, mut parent): (Option<&str>, Option<&str>, Option<Option<&str>>) =
            (None, None, None);
        let ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
        let mut depth = 1usize;
        let mut i = 1;
        while let Some(k) = memchr::memchr3(b'"', b'{', b'}', &b[i.min(b.len())..]) {
            i += k;
            match b[i] {
                b'"' => {
                    let start = i + 1;
                    let end = string_end(b, start)?;
                    i = end + 1;
                    if depth != 1 {
                        continue;
                    }
                    let mut m = i;
                    while b.get(m).is_some_and(ws) {
                        m += 1;
                    }
                    if b.get(m) != Some(&b':') {
                        continue;
                    }
                    let key = &b[start..end];
                    if key.contains(&b'\\') {
                        return None;
                    }
                    let slot = match key {
                        b"type" => 0,
                        b"id" => 1,
                        b"parentId" => 2,
                        _ => continue,
                    };
                    m += 1;
                    while b.get(m).is_some_and(ws) {
                        m += 1;
                    }
                    let value = if b.get(m) == Some(&b'"') {
                        let e = string_end(b, m + 1)?;
                        let v = &b[m + 1..e];
                        if v.contains(&b'\\') {
                            return None;
                        }
                        i = e + 1;
                        Some(std::str::from_utf8(v).ok()?)
                    } else if b[m..].starts_with(b"null") && slot == 2 {
                        i = m + 4;
                        None
                    } else {
                        return None;
                    };
                    match slot {
                        0 if ty.is_none() => ty = value,
                        1 if id.is_none() => id = value,
                        2 if parent.is_none() => parent = Some(value),
                        _ => return None,
                    }
                    continue;
                }
                b'{' => depth += 1,
                _ => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
            }
            i += 1;
        }
        Some(Layout {
            ty: ty?,
            id: id?,
            parent: parent.flatten(),
        })
    }

    /// A JSON value, for the structural pass's comparison with its reference.
    #[derive(Debug, Clone)]
    enum J {
        Str(String),
        Num(u32),
        Null,
        Arr(Vec<J>),
        Obj(Vec<(String, J)>),
    }

    /// Strings whose escapes, quotes, braces and lengths put every kind of byte at
    /// every position of a 64-byte block.
    fn jstr() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            4 => "[a-z]{0,70}",
            2 => Just("\\".to_string()),
            2 => Just("\"".to_string()),
            1 => Just("{".to_string()),
            1 => Just("}".to_string()),
            1 => Just("\\\\\"".to_string()),
            1 => Just("\n\t\u{1}".to_string()),
            1 => Just("é😀".to_string()),
            1 => Just("type".to_string()),
            1 => Just("\":\"id\"".to_string()),
        ];
        proptest::collection::vec(piece, 0..6).prop_map(|v| v.concat())
    }

    fn jvalue() -> impl Strategy<Value = J> {
        let leaf = prop_oneof![
            jstr().prop_map(J::Str),
            any::<u32>().prop_map(J::Num),
            Just(J::Null),
        ];
        leaf.prop_recursive(4, 40, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(J::Arr),
                proptest::collection::vec((prop_oneof![3 => jstr(), 1 => Just("id".to_string()), 1 => Just("type".to_string())], inner), 0..5)
                    .prop_map(J::Obj),
            ]
        })
    }

    /// Writes `v` as JSON, with whitespace from `ws` (cycled) between tokens.
    fn write_json(v: &J, ws: &[&str], k: &mut usize, out: &mut String) {
        let space = |out: &mut String, k: &mut usize| {
            if !ws.is_empty() {
                out.push_str(ws[*k % ws.len()]);
                *k += 1;
            }
        };
        match v {
            J::Str(s) => out.push_str(&serde_json::to_string(s).unwrap()),
            J::Num(n) => out.push_str(&n.to_string()),
            J::Null => out.push_str("null"),
            J::Arr(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    space(out, k);
                    write_json(x, ws, k, out);
                }
                out.push(']');
            }
            J::Obj(o) => {
                out.push('{');
                for (i, (key, x)) in o.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    space(out, k);
                    out.push_str(&serde_json::to_string(key).unwrap());
                    space(out, k);
                    out.push(':');
                    space(out, k);
                    write_json(x, ws, k, out);
                }
                space(out, k);
                out.push('}');
            }
        }
    }

    /// A line as Pi writes one (or nearly): the three fields among other keys, in any
    /// order, some of them null, nested objects holding the same key names.
    fn jline() -> impl Strategy<Value = String> {
        let field = |name: &'static str| {
            prop_oneof![
                3 => "[0-9a-f]{8}".prop_map(move |v| Some((name.to_string(), J::Str(v)))),
                1 => jstr().prop_map(move |v| Some((name.to_string(), J::Str(v)))),
                1 => Just(Some((name.to_string(), J::Null))),
                1 => Just(None),
            ]
        };
        (
            field("type"),
            field("id"),
            field("parentId"),
            proptest::collection::vec((jstr(), jvalue()), 0..5),
            any::<u64>(),
            prop_oneof![
                Just(vec![]),
                Just(vec![" "]),
                Just(vec!["", " ", "\t", "\r", "  "])
            ],
            any::<bool>(),
            0usize..64,
        )
            .prop_map(|(t, i, p, rest, order, ws, crlf, pad)| {
                let mut keys: Vec<(String, J)> = rest;
                if pad > 0 {
                    // Shifts where the block edges fall.
                    keys.insert(0, ("pad".to_string(), J::Str("x".repeat(pad))));
                }
                for (n, f) in [t, i, p].into_iter().enumerate() {
                    if let Some(f) = f {
                        let at = (order >> (8 * n)) as usize % (keys.len() + 1);
                        keys.insert(at, f);
                    }
                }
                let mut out = String::new();
                write_json(&J::Obj(keys), &ws, &mut 0, &mut out);
                if crlf {
                    out.push('\r');
                }
                out
            })
    }

    fn fields(l: Option<Layout<'_>>) -> Option<(&str, &str, Option<&str>)> {
        l.map(|l| (l.ty, l.id, l.parent))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

        /// On valid JSON the block-wise pass reads what the reference reads, wherever
        /// the block edges fall (a leading pad shifts them).
        #[test]
        fn layout_is_the_references_on_valid_json(line in jline()) {
            prop_assert!(serde_json::from_str::<serde_json::Value>(&line).is_ok(), "{}", line);
            let b = line.as_bytes();
            let want = fields(layout_ref(b));
            prop_assert_eq!(fields(layout(b)), want, "{}", line);
            // And without AVX2 (SSE2 or SWAR), whatever this CPU has.
            prop_assert_eq!(fields(layout_with::<false>(b)), want, "{}", line);
        }

        /// Damaged lines: never a panic, and where the index's scanner takes the line,
        /// the reference's answer.
        #[test]
        fn layout_on_damaged_lines(line in jline(), cut in any::<usize>(), junk in proptest::collection::vec(prop_oneof![Just(b'"'), Just(b'\\'), Just(b'{'), Just(b'}'), any::<u8>()], 0..4), at in any::<usize>()) {
            let mut b = line.into_bytes();
            let cut = cut % (b.len() + 1);
            b.truncate(cut.max(1));
            let at = at % (b.len() + 1);
            for (k, &j) in junk.iter().enumerate() {
                b.insert((at + k).min(b.len()), j);
            }
            let got = fields(layout(&b));
            prop_assert_eq!(got, fields(layout_with::<false>(&b)));
            if LineHead::parse(&b).is_ok() && serde_json::from_slice::<serde_json::Value>(&b).is_ok() {
                prop_assert_eq!(got, fields(layout_ref(&b)));
            }
        }
    }

    /// Throughput of the structural pass over a big session (`SESSIONFS_BENCH_FILE`),
    /// against the reference: `cargo test --release --lib hitpath::tests::layout_speed
    /// -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn layout_speed() {
        let Ok(p) = std::env::var("SESSIONFS_BENCH_FILE") else {
            return;
        };
        let bytes = std::fs::read(p).unwrap();
        let lines: Vec<&[u8]> = bytes.split(|&c| c == b'\n').collect();
        for (name, f) in [
            ("blocks", layout as fn(&[u8]) -> Option<Layout<'_>>),
            ("reference", layout_ref),
        ] {
            let t = std::time::Instant::now();
            let mut n = 0usize;
            for _ in 0..5 {
                for l in &lines {
                    n += f(l).map_or(0, |l| l.id.len());
                }
            }
            let dt = t.elapsed().as_secs_f64() / 5.0;
            eprintln!(
                "{name}: {:.1} ms, {:.2} GB/s ({n})",
                dt * 1e3,
                bytes.len() as f64 / dt / 1e9
            );
        }
        let t = std::time::Instant::now();
        let ix = RawIndex::from_bytes(&bytes).unwrap();
        eprintln!(
            "build: {:.1} ms, {} lines",
            t.elapsed().as_secs_f64() * 1e3,
            ix.lines.len()
        );
    }

    /// What the fast path decided for one file.
    #[derive(Debug, Default)]
    struct Tally {
        refused: usize,
        doubted: usize,
        answered: usize,
    }

    /// Every line of `file` asked alone, then all at once: the fast path's answer,
    /// when it gives one, is the index's.
    fn compare(file: &str, tally: &mut Tally) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        std::fs::write(&p, file).unwrap();
        let s = Session::open(&p).unwrap();
        let Some(ix) = RawIndex::from_bytes(file.as_bytes()) else {
            tally.refused += 1;
            return;
        };
        let mut lines = Vec::new();
        let mut off = 0;
        for l in file.split_inclusive('\n') {
            if l.ends_with('\n') {
                lines.push((off as u64, l.len() - 1));
            }
            off += l.len();
        }
        let expect = |i: u32| {
            let dirs: Vec<String> = s.path_to(i).iter().map(|&a| s.id_string(a)).collect();
            let bytes = dirs.iter().map(|d| d.len() + 1).sum();
            HitPath::of_chain(0, dirs.into_iter(), bytes, s.kind_name(i).to_string())
        };
        let step = lines.len() / 200 + 1;
        for &(o, len) in lines.iter().step_by(step) {
            let mut src: &[u8] = file.as_bytes();
            match ix.paths(&[(o, len)], &mut src).unwrap() {
                Err(Doubt) => tally.doubted += 1,
                Ok(got) => {
                    tally.answered += 1;
                    let want: Vec<HitPath> = node_at(&s, o, len).map(expect).into_iter().collect();
                    assert_eq!(got, want, "line at {o} of\n{file}");
                }
            }
        }
        let mut src: &[u8] = file.as_bytes();
        if let Ok(got) = ix.paths(&lines, &mut src).unwrap() {
            let mut want = Vec::new();
            s.walk_preorder(|i, _| {
                let e = s.entry(i);
                if let Some(h) = lines.iter().position(|&(o, _)| o == e.offset) {
                    want.push(HitPath {
                        hit: h,
                        ..expect(i)
                    });
                }
            });
            assert_eq!(got, want, "all lines of\n{file}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]
        #[test]
        fn paths_are_the_indexs(lines in proptest::collection::vec(line(), 0..40), torn in any::<bool>()) {
            let f = file(&lines, torn);
            compare(&f, &mut Tally::default());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        /// A map begun after a prefix read again (`MapBuild::read` up to a line end)
        /// and fed the rest in blocks of whole lines, as the raw scan feeds it, is the
        /// map `RawIndex::build` makes of the same bytes; so is one that covers fewer
        /// bytes (`size` inside a line) and is fed past them.
        #[test]
        fn a_map_fed_in_blocks_is_the_built_one(
            lines in proptest::collection::vec(line(), 0..40),
            cuts in proptest::collection::vec(any::<usize>(), 0..6),
            short in any::<usize>(),
            torn in any::<bool>(),
        ) {
            let f = file(&lines, torn);
            let bytes = f.as_bytes();
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("s.jsonl");
            std::fs::write(&p, bytes).unwrap();
            let file = File::open(&p).unwrap();
            let ends: Vec<usize> = bytes.iter().enumerate().filter(|(_, c)| **c == b'\n').map(|(i, _)| i + 1).collect();
            let mut at: Vec<usize> = cuts.iter().map(|c| ends[c % ends.len()]).collect();
            at.sort_unstable();
            at.dedup();
            for size in [bytes.len(), short % (bytes.len() + 1)] {
                let want = RawIndex::build(&file, size as u64, &mut Vec::new()).unwrap();
                let mut m = MapBuild::new(size as u64);
                let first = at.first().copied().unwrap_or(ends[ends.len() - 1]);
                m.read(&file, first as u64, &mut Vec::new()).unwrap();
                let mut from = first;
                for &to in at.iter().skip(1).chain(std::iter::once(ends.last().unwrap())) {
                    if to > from {
                        m.feed(&bytes[from..to], from as u64);
                        from = to;
                    }
                }
                m.read(&file, u64::MAX, &mut Vec::new()).unwrap();
                let got = m.finish();
                let key = |ix: &RawIndex| {
                    ix.lines.iter().map(|l| (l.offset, l.len, ix.ids.resolve(l.id).map(|s| s.into_owned()), ix.ids.resolve(l.parent).map(|s| s.into_owned()), ix.by_id[&l.id])).collect::<Vec<_>>()
                };
                prop_assert_eq!(got.as_ref().map(key), want.as_ref().map(key), "size {}", size);
            }
        }
    }

    /// The random files above exercise every branch: most files are answered, some
    /// lines doubted, some files refused.
    #[test]
    fn the_comparison_exercises_every_outcome() {
        use proptest::strategy::ValueTree;
        use proptest::test_runner::TestRunner;
        let mut runner = TestRunner::deterministic();
        let mut t = Tally::default();
        for _ in 0..200 {
            let lines = proptest::collection::vec(line(), 0..40)
                .new_tree(&mut runner)
                .unwrap()
                .current();
            compare(&file(&lines, false), &mut t);
        }
        assert!(
            t.refused > 10 && t.doubted > 100 && t.answered > 1000,
            "{t:?}"
        );
    }

    /// The committed Pi sessions of the current format: their hits' paths are the
    /// index's, and most files are answered without it.
    #[test]
    fn fixtures_paths_are_the_indexs() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = vec![root.join("examples/demo.jsonl")];
        for sub in ["sessions", "damaged", "search"] {
            for e in std::fs::read_dir(root.join("tests/fixtures").join(sub)).unwrap() {
                let p = e.unwrap().path();
                if p.extension().is_some_and(|x| x == "jsonl") {
                    files.push(p);
                }
            }
        }
        let mut t = Tally::default();
        for f in files {
            let bytes = std::fs::read(&f).unwrap();
            let (Ok(text), Ok(_)) = (std::str::from_utf8(&bytes), Session::open(&f)) else {
                continue;
            };
            compare(text, &mut t);
        }
        assert!(t.answered > 1000 && t.answered > 2 * t.refused, "{t:?}");
    }

    #[test]
    fn walked_damage_is_doubted_and_the_rest_answered() {
        let a = entry(0, 1, None, 0, false);
        let b = entry(0, 2, Some(1), 0, false);
        let c = entry(0, 3, Some(2), 0, true);
        // A malformed line with b's id, after b: b's latest line is malformed.
        let bad_b = text(&L::BadTail {
            id: 2,
            parent: Some(1),
        });
        // A line cut inside its fields is no entry, and read as none.
        let cut = &b[..70];
        let f = format!("{HEADER}\n{a}\n{b}\n{cut}\n{bad_b}\n{c}\n");
        let ix = RawIndex::from_bytes(f.as_bytes()).unwrap();
        let c_at = (f.find(&c).unwrap() as u64, c.len());
        let a_at = (f.find(&a).unwrap() as u64, a.len());
        let mut src: &[u8] = f.as_bytes();
        assert!(ix.paths(&[c_at], &mut src).unwrap().is_err());
        let got = ix.paths(&[a_at], &mut src).unwrap().unwrap();
        assert_eq!(got[0].dirs, [id(1)]);
        let f = format!("{HEADER}\n{a}\n{b}\n{cut}\n{c}\n");
        let ix = RawIndex::from_bytes(f.as_bytes()).unwrap();
        let c_at = (f.find(&c).unwrap() as u64, c.len());
        let mut src: &[u8] = f.as_bytes();
        let got = ix.paths(&[c_at], &mut src).unwrap().unwrap();
        assert_eq!(got[0].dirs, [id(1), id(2), id(3)]);
        assert_eq!(got[0].kind, "assistant");
        // A second id key, even in a line on no path, sends the file to the index.
        let dup = text(&L::DupKey { id: 5, other: 2 });
        assert!(RawIndex::from_bytes(format!("{HEADER}\n{a}\n{dup}\n").as_bytes()).is_none());
        // Nested ids and types are not top-level keys.
        assert!(RawIndex::from_bytes(format!("{HEADER}\n{c}\n").as_bytes()).is_some());
        // Another header version, or none on line 1.
        let v2 = HEADER.replace("\"version\":3", "\"version\":2");
        assert!(RawIndex::from_bytes(format!("{v2}\n{a}\n").as_bytes()).is_none());
        assert!(RawIndex::from_bytes(format!("\n{HEADER}\n{a}\n").as_bytes()).is_none());
    }
}
