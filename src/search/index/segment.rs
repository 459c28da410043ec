//! Segments: the immutable files that hold the index of some blocks.
//!
//! A segment holds, for the blocks it covers (each a line-aligned byte range of one
//! session file, named by the file's key in the manifest, [`super::store`]):
//!
//! * its **blocks**: key, unit, start and length;
//! * its **units**, the granularity of the postings: one or more consecutive blocks
//!   whose trigrams are one set (small files are packed into one unit, so that a
//!   home of many small sessions does not pay a posting list entry per file);
//! * the **posting lists**: for each trigram, the units holding it, sorted,
//!   delta-coded as varints, each list with its own checksum;
//! * a **dictionary** of the trigrams, sorted, in pages of [`DICT_PAGE`] entries each
//!   with its checksum, and a small index of the pages' first trigrams, so that a
//!   query reads only the pages and lists it needs;
//! * for each **probe** (a kind of line the exact path selects whatever the pattern's
//!   text, [`super::probe`]), the lines of that kind: block, start, length.
//!
//! Layout: a 128-byte header (magic, version, counts, section offsets, its checksum),
//! then blocks, probes, postings, dictionary pages, page index. Every section a
//! reader uses is checked against its checksum when read, and every offset against
//! the file's length: a segment that is short, garbled or of another version is
//! refused with [`damaged`], and the files it covers are searched without the index.
//! Segments are written to a temporary name and renamed into place
//! ([`super::store`]); a reader never sees one being written.

use super::hash::hash;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The first bytes of every segment; a new layout gets a new one.
pub const MAGIC: &[u8; 8] = b"SFSIXS01";
const HEADER: usize = 128;
/// Dictionary entries per page.
pub const DICT_PAGE: usize = 1024;
/// A dictionary entry: trigram, count, offset, length.
const DICT_ENTRY: usize = 4 + 4 + 8 + 4;
/// A block: key, unit, start, length.
const BLOCK: usize = 8 + 4 + 8 + 8;

/// The error for a segment (or manifest) that cannot be trusted.
pub fn damaged(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("damaged index: {what}"))
}

/// One block of a session file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockRec {
    /// The manifest's key of the file (one version of its content).
    pub key: u64,
    pub unit: u32,
    pub start: u64,
    pub len: u64,
}

/// A line a probe selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineRec {
    pub block: u32,
    /// Its start in the file.
    pub start: u64,
    /// Its length, without the newline.
    pub len: u64,
}

// ----- varints ---------------------------------------------------------------------

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(b: &[u8], at: &mut usize) -> io::Result<u64> {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let byte = *b
            .get(*at)
            .ok_or_else(|| damaged("a varint runs past its list"))?;
        *at += 1;
        if shift > 63 {
            return Err(damaged("a varint is too long"));
        }
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Ok(v);
        }
        shift += 7;
    }
}

/// A sorted list of units, delta-coded, with its checksum.
fn encode_list(units: &[u32], out: &mut Vec<u8>) {
    let start = out.len();
    let mut prev = None;
    for &u in units {
        put_varint(out, u64::from(u - prev.map_or(0, |p: u32| p + 1)));
        prev = Some(u);
    }
    let c = hash(&out[start..]) as u32;
    out.extend_from_slice(&c.to_le_bytes());
}

fn decode_list(b: &[u8], count: u32, nunits: u32) -> io::Result<Vec<u32>> {
    if b.len() < 4 {
        return Err(damaged("a posting list is short"));
    }
    let (body, sum) = b.split_at(b.len() - 4);
    if hash(body) as u32 != u32::from_le_bytes(sum.try_into().expect("4 bytes")) {
        return Err(damaged("a posting list's checksum"));
    }
    let mut out = Vec::with_capacity(count as usize);
    let mut at = 0;
    let mut next = 0u64;
    while at < body.len() {
        let u = next + get_varint(body, &mut at)?;
        if u >= u64::from(nunits) {
            return Err(damaged("a posting names no unit"));
        }
        out.push(u as u32);
        next = u + 1;
    }
    if out.len() != count as usize {
        return Err(damaged("a posting list's length"));
    }
    Ok(out)
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// `bytes` followed by their checksum.
fn sealed(mut bytes: Vec<u8>) -> Vec<u8> {
    let c = hash(&bytes);
    bytes.extend_from_slice(&c.to_le_bytes());
    bytes
}

/// `b` without its checksum, if the checksum is right.
fn unseal<'a>(b: &'a [u8], what: &str) -> io::Result<&'a [u8]> {
    if b.len() < 8 {
        return Err(damaged(what));
    }
    let (body, sum) = b.split_at(b.len() - 8);
    if hash(body) != le64(sum, 0) {
        return Err(damaged(what));
    }
    Ok(body)
}

// ----- writing ---------------------------------------------------------------------

/// A posting list being built: units are added in increasing order.
#[derive(Default)]
struct Building {
    last: Option<u32>,
    count: u32,
    bytes: Vec<u8>,
}

/// The posting lists being built, by trigram: a page of 256 slots for each value of
/// a trigram's first two bytes (made when first needed), each slot naming its list.
/// A unit's trigrams come sorted, so one unit's lookups walk the pages in order,
/// where a hash table would send each to a random place; and the lists come out
/// sorted by trigram without a sort.
struct Lists {
    pages: Vec<Option<Box<[u32; 256]>>>,
    /// The lists, in the order their trigrams first came; a slot holds an index
    /// here plus one (0: no list).
    items: Vec<Building>,
    /// Pages made.
    made: usize,
}

impl Lists {
    fn new() -> Lists {
        Lists {
            pages: (0..1 << 16).map(|_| None).collect(),
            items: Vec::new(),
            made: 0,
        }
    }

    /// The list of trigram `t` (under 2^24), made empty if there is none.
    #[inline]
    fn get(&mut self, t: u32) -> &mut Building {
        let page = self.pages[(t >> 8) as usize].get_or_insert_with(|| {
            self.made += 1;
            Box::new([0; 256])
        });
        let slot = &mut page[(t & 0xFF) as usize];
        if *slot == 0 {
            self.items.push(Building::default());
            *slot = self.items.len() as u32;
        }
        &mut self.items[*slot as usize - 1]
    }

    fn len(&self) -> usize {
        self.items.len()
    }

    /// Memory the pages take.
    fn page_bytes(&self) -> usize {
        self.pages.len() * 8 + self.made * 1024
    }

    /// The lists with their trigrams, sorted by trigram.
    fn into_sorted(self) -> Vec<(u32, Building)> {
        let mut items: Vec<Option<Building>> = self.items.into_iter().map(Some).collect();
        let mut out = Vec::with_capacity(items.len());
        for (p, page) in self.pages.iter().enumerate() {
            let Some(page) = page else { continue };
            for (k, &slot) in page.iter().enumerate() {
                if slot != 0 {
                    let l = items[slot as usize - 1].take().expect("one slot per list");
                    out.push((((p << 8) | k) as u32, l));
                }
            }
        }
        out
    }
}

/// A segment being built in memory, then written once ([`Builder::write`]).
pub struct Builder {
    blocks: Vec<BlockRec>,
    nunits: u32,
    lists: Lists,
    probes: Vec<Vec<LineRec>>,
    postings: usize,
    /// Bytes of the lists' encodings.
    list_bytes: usize,
    lines: usize,
}

impl Builder {
    /// A builder for `nprobes` kinds of probe lines.
    pub fn new(nprobes: usize) -> Builder {
        Builder {
            blocks: Vec::new(),
            nunits: 0,
            lists: Lists::new(),
            probes: vec![Vec::new(); nprobes],
            postings: 0,
            list_bytes: 0,
            lines: 0,
        }
    }

    /// Starts a unit holding the (sorted, distinct) `trigrams`; returns its number.
    pub fn add_unit(&mut self, trigrams: &[u32]) -> u32 {
        let u = self.nunits;
        self.nunits += 1;
        for &t in trigrams {
            let l = self.lists.get(t);
            let d = u - l.last.map_or(0, |p| p + 1);
            let before = l.bytes.len();
            put_varint(&mut l.bytes, u64::from(d));
            self.list_bytes += l.bytes.len() - before;
            l.last = Some(u);
            l.count += 1;
        }
        self.postings += trigrams.len();
        u
    }

    /// Adds a block of the last unit; returns its number.
    pub fn add_block(&mut self, key: u64, start: u64, len: u64) -> u32 {
        assert!(self.nunits > 0, "a block belongs to a unit");
        self.blocks.push(BlockRec {
            key,
            unit: self.nunits - 1,
            start,
            len,
        });
        self.blocks.len() as u32 - 1
    }

    /// Records that `probe` selects the line `start..start+len` of `block` (lines are
    /// added in block order, and in order within a block).
    pub fn add_line(&mut self, block: u32, probe: usize, start: u64, len: u64) {
        self.probes[probe].push(LineRec { block, start, len });
        self.lines += 1;
    }

    /// About how much memory the builder holds.
    pub fn memory(&self) -> usize {
        self.lists.len() * 64
            + self.lists.page_bytes()
            + self.list_bytes * 2
            + self.blocks.len() * BLOCK
            + self.lines * 24
    }

    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    pub fn blocks(&self) -> &[BlockRec] {
        &self.blocks
    }

    /// Writes the segment to `path` (created); returns its length.
    pub fn write(self, path: &Path) -> io::Result<u64> {
        let lists = self.lists.into_sorted();
        let mut w = Writer::create(path, &self.blocks, self.nunits, &self.probes)?;
        for (t, mut l) in lists {
            let c = hash(&l.bytes) as u32;
            l.bytes.extend_from_slice(&c.to_le_bytes());
            w.list_encoded(t, l.count, &l.bytes)?;
        }
        w.finish()
    }
}

/// Writes a segment section by section: blocks and probes first, then posting lists
/// in trigram order, then the dictionary.
struct Writer {
    out: BufWriter<File>,
    file: File,
    at: u64,
    nblocks: u32,
    nunits: u32,
    nprobes: u32,
    blocks_off: u64,
    probes_off: u64,
    post_off: u64,
    dict: Vec<u8>,
    ndict: u32,
}

impl Writer {
    fn create(
        path: &Path,
        blocks: &[BlockRec],
        nunits: u32,
        probes: &[Vec<LineRec>],
    ) -> io::Result<Writer> {
        let file = File::create(path)?;
        let mut out = BufWriter::with_capacity(1 << 20, file.try_clone()?);
        out.write_all(&[0u8; HEADER])?;
        let mut at = HEADER as u64;
        let blocks_off = at;
        let mut b = Vec::with_capacity(blocks.len() * BLOCK);
        for r in blocks {
            b.extend_from_slice(&r.key.to_le_bytes());
            b.extend_from_slice(&r.unit.to_le_bytes());
            b.extend_from_slice(&r.start.to_le_bytes());
            b.extend_from_slice(&r.len.to_le_bytes());
        }
        let b = sealed(b);
        out.write_all(&b)?;
        at += b.len() as u64;
        // Probes: a table of (offset from the section's data, length), then the lists.
        let probes_off = at;
        let mut data = Vec::new();
        let mut table = Vec::new();
        for lines in probes {
            let start = data.len();
            let mut prev: Option<LineRec> = None;
            for l in lines {
                match prev {
                    Some(p) if p.block == l.block => {
                        put_varint(&mut data, 0);
                        put_varint(&mut data, l.start - p.start);
                    }
                    _ => {
                        put_varint(
                            &mut data,
                            u64::from(l.block - prev.map_or(0, |p| p.block)) + 1,
                        );
                        put_varint(&mut data, l.start);
                    }
                }
                put_varint(&mut data, l.len);
                prev = Some(*l);
            }
            let c = hash(&data[start..]) as u32;
            data.extend_from_slice(&c.to_le_bytes());
            table.extend_from_slice(&(start as u64).to_le_bytes());
            table.extend_from_slice(&((data.len() - start) as u32).to_le_bytes());
        }
        let table = sealed(table);
        out.write_all(&table)?;
        out.write_all(&data)?;
        at += (table.len() + data.len()) as u64;
        Ok(Writer {
            out,
            file,
            at,
            nblocks: blocks.len() as u32,
            nunits,
            nprobes: probes.len() as u32,
            blocks_off,
            probes_off,
            post_off: at,
            dict: Vec::new(),
            ndict: 0,
        })
    }

    /// Adds the list of `t`, `count` units, already encoded with its checksum.
    fn list_encoded(&mut self, t: u32, count: u32, bytes: &[u8]) -> io::Result<()> {
        self.dict.extend_from_slice(&t.to_le_bytes());
        self.dict.extend_from_slice(&count.to_le_bytes());
        self.dict
            .extend_from_slice(&(self.at - self.post_off).to_le_bytes());
        self.dict
            .extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        self.ndict += 1;
        self.out.write_all(bytes)?;
        self.at += bytes.len() as u64;
        Ok(())
    }

    fn list(&mut self, t: u32, units: &[u32]) -> io::Result<()> {
        let mut b = Vec::with_capacity(units.len() + 4);
        encode_list(units, &mut b);
        self.list_encoded(t, units.len() as u32, &b)
    }

    fn finish(mut self) -> io::Result<u64> {
        let dict_off = self.at;
        let mut index = Vec::new();
        for page in self.dict.chunks(DICT_PAGE * DICT_ENTRY) {
            index.extend_from_slice(&page[..4]);
            let p = sealed(page.to_vec());
            self.out.write_all(&p)?;
            self.at += p.len() as u64;
        }
        let dictidx_off = self.at;
        let index = sealed(index);
        self.out.write_all(&index)?;
        self.at += index.len() as u64;
        self.out.flush()?;
        drop(self.out);
        let mut h = Vec::with_capacity(HEADER);
        h.extend_from_slice(MAGIC);
        for v in [self.nblocks, self.nunits, self.nprobes, self.ndict] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        for v in [
            self.blocks_off,
            self.probes_off,
            self.post_off,
            dict_off,
            dictidx_off,
            self.at,
        ] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        h.resize(HEADER - 8, 0);
        let c = hash(&h);
        h.extend_from_slice(&c.to_le_bytes());
        self.file.write_all_at(&h, 0)?;
        Ok(self.at)
    }
}

// ----- reading ---------------------------------------------------------------------

/// A segment open for queries. Its blocks and probe table are read (and checked) when
/// it is opened; dictionary pages and posting lists when a query asks for them.
pub struct Segment {
    file: File,
    pub blocks: Vec<BlockRec>,
    pub nunits: u32,
    nprobes: u32,
    probe_table: Vec<(u64, u32)>,
    probe_data: u64,
    post_off: u64,
    dict_off: u64,
    ndict: u32,
    page_firsts: Vec<u32>,
    pages: HashMap<usize, Vec<u8>>,
    len: u64,
}

impl Segment {
    /// Opens the segment at `path`, which must be `len` bytes long.
    pub fn open(path: &Path, len: u64) -> io::Result<Segment> {
        let file = crate::model::core::input::open_regular(path)?;
        let real = file.metadata()?.len();
        if real != len || len < HEADER as u64 {
            return Err(damaged("a segment's length"));
        }
        let mut h = [0u8; HEADER];
        file.read_exact_at(&mut h, 0)?;
        if &h[..8] != MAGIC {
            return Err(damaged("a segment of another version"));
        }
        let h = unseal(&h, "a segment's header")?;
        let (nblocks, nunits, nprobes, ndict) = (le32(h, 8), le32(h, 12), le32(h, 16), le32(h, 20));
        let offs: Vec<u64> = (0..6).map(|k| le64(h, 24 + 8 * k)).collect();
        let (blocks_off, probes_off, post_off, dict_off, dictidx_off, end) =
            (offs[0], offs[1], offs[2], offs[3], offs[4], offs[5]);
        if end != len
            || !(HEADER as u64 <= blocks_off
                && blocks_off <= probes_off
                && probes_off <= post_off
                && post_off <= dict_off
                && dict_off <= dictidx_off
                && dictidx_off <= end)
        {
            return Err(damaged("a segment's sections"));
        }
        let read = |off: u64, n: u64| -> io::Result<Vec<u8>> {
            if off.checked_add(n).is_none_or(|e| e > len) || n > 1 << 32 {
                return Err(damaged("a section past the end"));
            }
            let mut b = vec![0u8; n as usize];
            file.read_exact_at(&mut b, off)?;
            Ok(b)
        };
        let nb = u64::from(nblocks) * BLOCK as u64 + 8;
        if blocks_off + nb > probes_off {
            return Err(damaged("a segment's blocks"));
        }
        let braw = read(blocks_off, nb)?;
        let b = unseal(&braw, "a segment's blocks")?;
        let mut blocks = Vec::with_capacity(nblocks as usize);
        for k in 0..nblocks as usize {
            let at = k * BLOCK;
            let r = BlockRec {
                key: le64(b, at),
                unit: le32(b, at + 8),
                start: le64(b, at + 12),
                len: le64(b, at + 20),
            };
            if r.unit >= nunits || blocks.last().is_some_and(|p: &BlockRec| p.unit > r.unit) {
                return Err(damaged("a block's unit"));
            }
            blocks.push(r);
        }
        let nt = u64::from(nprobes) * 12 + 8;
        let traw = read(probes_off, nt)?;
        let t = unseal(&traw, "a segment's probes")?;
        let probe_data = probes_off + nt;
        let mut probe_table = Vec::with_capacity(nprobes as usize);
        for k in 0..nprobes as usize {
            let (off, n) = (le64(t, k * 12), le32(t, k * 12 + 8));
            if probe_data + off + u64::from(n) > post_off {
                return Err(damaged("a probe list past its section"));
            }
            probe_table.push((off, n));
        }
        let npages = (ndict as usize).div_ceil(DICT_PAGE);
        let iraw = read(dictidx_off, npages as u64 * 4 + 8)?;
        let idx = unseal(&iraw, "a segment's dictionary index")?;
        let page_firsts: Vec<u32> = (0..npages).map(|k| le32(idx, k * 4)).collect();
        if dict_off + (ndict as u64) * DICT_ENTRY as u64 + npages as u64 * 8 != dictidx_off {
            return Err(damaged("a segment's dictionary"));
        }
        Ok(Segment {
            file,
            blocks,
            nunits,
            nprobes,
            probe_table,
            probe_data,
            post_off,
            dict_off,
            ndict,
            page_firsts,
            pages: HashMap::new(),
            len,
        })
    }

    /// Dictionary page `p`, checked.
    fn read_page(&self, p: usize) -> io::Result<Vec<u8>> {
        let entries = (self.ndict as usize - p * DICT_PAGE).min(DICT_PAGE);
        let off = self.dict_off + (p * (DICT_PAGE * DICT_ENTRY + 8)) as u64;
        let n = entries * DICT_ENTRY + 8;
        let mut b = vec![0u8; n];
        self.file.read_exact_at(&mut b, off)?;
        let body = unseal(&b, "a dictionary page")?.to_vec();
        if le32(&body, 0) != self.page_firsts[p] {
            return Err(damaged("a dictionary page's first trigram"));
        }
        if body
            .chunks_exact(DICT_ENTRY)
            .zip(body.chunks_exact(DICT_ENTRY).skip(1))
            .any(|(a, b)| le32(a, 0) >= le32(b, 0))
        {
            return Err(damaged("a dictionary page out of order"));
        }
        Ok(body)
    }

    /// The list a dictionary entry describes.
    fn read_list(&self, e: &[u8]) -> io::Result<Vec<u32>> {
        let (count, off, l) = (le32(e, 4), le64(e, 8), le32(e, 16));
        let at = self
            .post_off
            .checked_add(off)
            .ok_or_else(|| damaged("a posting offset"))?;
        if at + u64::from(l) > self.dict_off.min(self.len) {
            return Err(damaged("a posting list past its section"));
        }
        let mut b = vec![0u8; l as usize];
        self.file.read_exact_at(&mut b, at)?;
        decode_list(&b, count, self.nunits)
    }

    /// The units holding trigram `t`, sorted.
    pub fn list(&mut self, t: u32) -> io::Result<Vec<u32>> {
        let p = match self.page_firsts.partition_point(|&f| f <= t) {
            0 => return Ok(Vec::new()),
            k => k - 1,
        };
        if !self.pages.contains_key(&p) {
            let b = self.read_page(p)?;
            self.pages.insert(p, b);
        }
        let page = &self.pages[&p];
        let (mut lo, mut hi) = (0, page.len() / DICT_ENTRY);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match le32(page, mid * DICT_ENTRY).cmp(&t) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    let e = page[mid * DICT_ENTRY..(mid + 1) * DICT_ENTRY].to_vec();
                    return self.read_list(&e);
                }
            }
        }
        Ok(Vec::new())
    }

    /// The lines probe `p` selects, in block order.
    pub fn probe_lines(&self, p: usize) -> io::Result<Vec<LineRec>> {
        let Some(&(off, n)) = self.probe_table.get(p) else {
            return Ok(Vec::new());
        };
        let mut b = vec![0u8; n as usize];
        self.file.read_exact_at(&mut b, self.probe_data + off)?;
        if b.len() < 4 {
            return Err(damaged("a probe list is short"));
        }
        let (body, sum) = b.split_at(b.len() - 4);
        if hash(body) as u32 != le32(sum, 0) {
            return Err(damaged("a probe list's checksum"));
        }
        let mut out = Vec::new();
        let mut at = 0;
        let mut prev: Option<LineRec> = None;
        while at < body.len() {
            let step = get_varint(body, &mut at)?;
            let x = get_varint(body, &mut at)?;
            let len = get_varint(body, &mut at)?;
            let (block, start) = match (step, prev) {
                (0, Some(p)) => (p.block, p.start.checked_add(x)),
                (0, None) => return Err(damaged("a probe list's first line")),
                (s, p) => (
                    u32::try_from(u64::from(p.map_or(0, |p| p.block)) + s - 1)
                        .map_err(|_| damaged("a probe's block"))?,
                    Some(x),
                ),
            };
            let start = start.ok_or_else(|| damaged("a probe's line"))?;
            let Some(b) = self.blocks.get(block as usize) else {
                return Err(damaged("a probe names no block"));
            };
            if start < b.start || start + len > b.start + b.len {
                return Err(damaged("a probe's line outside its block"));
            }
            let l = LineRec { block, start, len };
            out.push(l);
            prev = Some(l);
        }
        Ok(out)
    }

    pub fn nprobes(&self) -> usize {
        self.nprobes as usize
    }
}

/// Reads a segment's lists in trigram order, a page at a time (for merging).
struct Cursor<'a> {
    s: &'a Segment,
    page: usize,
    entries: Vec<u8>,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn new(s: &'a Segment) -> Cursor<'a> {
        Cursor {
            s,
            page: 0,
            entries: Vec::new(),
            at: 0,
        }
    }

    /// The next trigram, if any.
    fn peek(&mut self) -> io::Result<Option<u32>> {
        while self.at >= self.entries.len() {
            if self.page >= self.s.page_firsts.len() {
                return Ok(None);
            }
            self.entries = self.s.read_page(self.page)?;
            self.page += 1;
            self.at = 0;
        }
        Ok(Some(le32(&self.entries, self.at)))
    }

    /// The list of the trigram [`Cursor::peek`] gave, and on to the next.
    fn take(&mut self) -> io::Result<Vec<u32>> {
        let e = &self.entries[self.at..self.at + DICT_ENTRY];
        let l = self.s.read_list(e)?;
        self.at += DICT_ENTRY;
        Ok(l)
    }
}

/// Merges `inputs` into a new segment at `path`: their blocks in order, those whose
/// key `keep` refuses left out (with their units when nothing of them is left, and
/// their probe lines), and consecutive units packed into one while their blocks come
/// to less than `unit_target` bytes. Returns its length.
pub fn merge(
    inputs: &[Segment],
    keep: &dyn Fn(u64) -> bool,
    unit_target: u64,
    nprobes: usize,
    path: &Path,
) -> io::Result<u64> {
    let mut blocks = Vec::new();
    // For each input, its old block -> new block, and old unit -> new unit.
    let mut block_map: Vec<Vec<Option<u32>>> = Vec::new();
    let mut unit_map: Vec<Vec<Option<u32>>> = Vec::new();
    let mut next_unit: u32 = 0;
    // The size of the unit being packed (None: no unit open).
    let mut open: Option<u64> = None;
    for s in inputs.iter() {
        let mut bm = vec![None; s.blocks.len()];
        let mut um = vec![None; s.nunits as usize];
        let mut k = 0;
        while k < s.blocks.len() {
            let u = s.blocks[k].unit;
            let end = k + s.blocks[k..].iter().take_while(|b| b.unit == u).count();
            let kept: Vec<usize> = (k..end).filter(|&i| keep(s.blocks[i].key)).collect();
            if !kept.is_empty() {
                let size: u64 = kept.iter().map(|&i| s.blocks[i].len).sum();
                let nu = match open {
                    Some(acc) if acc + size <= unit_target => {
                        open = Some(acc + size);
                        next_unit - 1
                    }
                    _ => {
                        next_unit += 1;
                        open = Some(size);
                        next_unit - 1
                    }
                };
                um[u as usize] = Some(nu);
                for i in kept {
                    bm[i] = Some(blocks.len() as u32);
                    blocks.push(BlockRec {
                        unit: nu,
                        ..s.blocks[i]
                    });
                }
            }
            k = end;
        }
        block_map.push(bm);
        unit_map.push(um);
    }
    let mut probes: Vec<Vec<LineRec>> = vec![Vec::new(); nprobes];
    for (si, s) in inputs.iter().enumerate() {
        for (p, lines) in probes.iter_mut().enumerate().take(s.nprobes()) {
            for l in s.probe_lines(p)? {
                if let Some(nb) = block_map[si][l.block as usize] {
                    lines.push(LineRec { block: nb, ..l });
                }
            }
        }
    }
    let mut w = Writer::create(path, &blocks, next_unit, &probes)?;
    // Every input's lists, merged in trigram order, a page at a time.
    let mut cursors: Vec<Cursor> = inputs.iter().map(Cursor::new).collect();
    loop {
        let mut t: Option<u32> = None;
        for c in cursors.iter_mut() {
            if let Some(x) = c.peek()? {
                t = Some(t.map_or(x, |t| t.min(x)));
            }
        }
        let Some(t) = t else { break };
        let mut units: Vec<u32> = Vec::new();
        for (si, c) in cursors.iter_mut().enumerate() {
            if c.peek()? != Some(t) {
                continue;
            }
            for u in c.take()? {
                if let Some(nu) = unit_map[si].get(u as usize).copied().flatten()
                    && units.last() != Some(&nu)
                {
                    units.push(nu);
                }
            }
        }
        if !units.is_empty() {
            w.list(t, &units)?;
        }
    }
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(dir: &Path, name: &str) -> (std::path::PathBuf, u64) {
        let mut b = Builder::new(2);
        b.add_unit(&[1, 5, 9]);
        b.add_block(7, 0, 100);
        b.add_line(0, 0, 10, 5);
        b.add_line(0, 1, 20, 5);
        b.add_line(0, 1, 40, 5);
        b.add_block(8, 0, 50);
        b.add_unit(&[5, 10]);
        b.add_block(7, 100, 300);
        b.add_line(2, 0, 150, 2);
        let p = dir.join(name);
        let n = b.write(&p).unwrap();
        (p, n)
    }

    #[test]
    fn write_and_read_back() {
        let d = tempfile::tempdir().unwrap();
        let (p, n) = sample(d.path(), "a");
        let mut s = Segment::open(&p, n).unwrap();
        assert_eq!(s.blocks.len(), 3);
        assert_eq!(s.nunits, 2);
        assert_eq!(s.list(5).unwrap(), vec![0, 1]);
        assert_eq!(s.list(1).unwrap(), vec![0]);
        assert_eq!(s.list(10).unwrap(), vec![1]);
        assert_eq!(s.list(2).unwrap(), Vec::<u32>::new());
        assert_eq!(s.list(0).unwrap(), Vec::<u32>::new());
        assert_eq!(s.list(99).unwrap(), Vec::<u32>::new());
        assert_eq!(
            s.probe_lines(0).unwrap(),
            vec![
                LineRec {
                    block: 0,
                    start: 10,
                    len: 5
                },
                LineRec {
                    block: 2,
                    start: 150,
                    len: 2
                }
            ]
        );
        assert_eq!(s.probe_lines(1).unwrap().len(), 2);
        assert!(Segment::open(&p, n + 1).is_err());
    }

    #[test]
    fn many_pages() {
        let d = tempfile::tempdir().unwrap();
        let mut b = Builder::new(0);
        for u in 0..50u32 {
            let ts: Vec<u32> = (0..3000u32).filter(|t| t % (u + 1) == 0).collect();
            b.add_unit(&ts);
            b.add_block(u64::from(u), 0, 10);
        }
        let p = d.path().join("s");
        let n = b.write(&p).unwrap();
        let mut s = Segment::open(&p, n).unwrap();
        for t in [0u32, 1, 6, 1023, 1024, 2047, 2999, 3000] {
            let want: Vec<u32> = (0..50u32)
                .filter(|u| t < 3000 && t % (u + 1) == 0)
                .collect();
            assert_eq!(s.list(t).unwrap(), want, "{t}");
        }
    }

    #[test]
    fn damage_is_refused_never_trusted() {
        let d = tempfile::tempdir().unwrap();
        let (p, n) = sample(d.path(), "a");
        let good = std::fs::read(&p).unwrap();
        // Every single-byte change is either refused at open or by the read that
        // uses the changed byte; the answers that do come back are the right ones.
        for at in 0..good.len() {
            let mut bad = good.clone();
            bad[at] ^= 0x41;
            std::fs::write(&p, &bad).unwrap();
            let Ok(mut s) = Segment::open(&p, n) else {
                continue;
            };
            for (t, want) in [
                (5u32, vec![0u32, 1]),
                (1, vec![0]),
                (10, vec![1]),
                (9, vec![0]),
            ] {
                if let Ok(l) = s.list(t) {
                    assert_eq!(l, want, "byte {at}, trigram {t}");
                }
            }
            for (pr, want) in [(0usize, 2usize), (1, 2)] {
                if let Ok(l) = s.probe_lines(pr) {
                    assert_eq!(l.len(), want, "byte {at}, probe {pr}");
                }
            }
        }
        // Truncated anywhere: refused (the manifest gives the length).
        for cut in [0, 8, 100, good.len() - 1] {
            std::fs::write(&p, &good[..cut]).unwrap();
            assert!(Segment::open(&p, cut as u64).is_err());
        }
    }

    #[test]
    fn merge_keeps_drops_and_packs() {
        let d = tempfile::tempdir().unwrap();
        let (p1, n1) = sample(d.path(), "a");
        let mut b = Builder::new(2);
        b.add_unit(&[5, 77]);
        b.add_block(9, 0, 10);
        b.add_line(0, 1, 3, 1);
        let p2 = d.path().join("b");
        let n2 = b.write(&p2).unwrap();
        let inputs = vec![
            Segment::open(&p1, n1).unwrap(),
            Segment::open(&p2, n2).unwrap(),
        ];
        let out = d.path().join("m");
        // Drop key 8; pack units up to 1000 bytes: everything is one unit.
        let n = merge(&inputs, &|k| k != 8, 1000, 2, &out).unwrap();
        let mut m = Segment::open(&out, n).unwrap();
        assert_eq!(m.blocks.len(), 3);
        assert!(m.blocks.iter().all(|b| b.unit == 0 && b.key != 8));
        assert_eq!(m.list(77).unwrap(), vec![0]);
        assert_eq!(m.list(5).unwrap(), vec![0]);
        assert_eq!(m.probe_lines(1).unwrap().len(), 3);
        // No packing: units stay apart.
        let out2 = d.path().join("m2");
        let n = merge(&inputs, &|_| true, 0, 2, &out2).unwrap();
        let mut m = Segment::open(&out2, n).unwrap();
        assert_eq!(m.nunits, 3);
        assert_eq!(m.list(5).unwrap(), vec![0, 1, 2]);
        assert_eq!(m.list(10).unwrap(), vec![1]);
        assert_eq!(m.probe_lines(1).unwrap()[2].block, 3);
    }
}
