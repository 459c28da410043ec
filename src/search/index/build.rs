//! Indexing the bytes of session files: lines into blocks, blocks into units, units
//! into a segment being built.
//!
//! A file is read once, in 1 MiB pieces, from where its index stops to its last
//! complete line (a line being written, without its newline yet, is left for the
//! next time). Each line is handed to its format ([`LineRules`]), which says where its
//! payloads are and which probes select it; its text (payloads left out) and the
//! printable runs of its decoded payloads go into the trigrams of the unit being
//! filled. A unit is closed when its blocks come to [`UNIT_TARGET`] bytes, so a big
//! file makes units of its own and small files share one. A line longer than
//! [`LONG_LINE`] is not held: the index of the file stops before it, and the exact
//! path reads the rest of the file at every search. (Probe [`HUGE`], which every query
//! asks for, holds the long lines an index of an earlier build read through.)
//!
//! Memory: per thread, the extractor (2 MiB), one piece of the file and the line being
//! read (up to [`LONG_LINE`]); shared, the segment being built, which is written out
//! once it holds [`SEGMENT_MEMORY`] bytes.

use super::hash::Hasher;
use super::segment::Builder;
use super::trigram::Extractor;
use std::fs::File;
use std::io;
use std::ops::Range;
use std::os::unix::fs::FileExt;

/// Bytes of blocks per unit (a unit is the granularity of the postings, and what a
/// query reads when the unit is a candidate).
pub const UNIT_TARGET: u64 = 128 << 10;
/// A line longer than this is recorded under [`HUGE`] rather than indexed.
pub const LONG_LINE: usize = 64 << 20;
/// The probe every query asks for: lines too long to index.
pub const HUGE: usize = 0;
/// A segment being built is written once it holds about this much memory.
pub const SEGMENT_MEMORY: usize = 96 << 20;
const PIECE: usize = 1 << 20;

/// What the format says of one line.
#[derive(Debug, Default, Clone)]
pub struct LineFacts {
    /// Byte ranges the format shows as no text (base64 payloads): left out of the
    /// text's trigrams. Sorted, not overlapping.
    pub hide: Vec<Range<usize>>,
    /// The line's binary content files (decoded images): their printable runs are
    /// indexed ([`super::trigram`]).
    pub binary: Vec<Vec<u8>>,
    /// The probes that select the line (never [`HUGE`]).
    pub probes: Vec<u16>,
    /// The text the format shows for the line where it is not the line's own bytes
    /// (a line it rewrites): indexed as text too, so that a query finds the line's
    /// block by what it shows.
    pub shown: Vec<Vec<u8>>,
}

impl LineFacts {
    fn clear(&mut self) {
        self.hide.clear();
        self.binary.clear();
        self.probes.clear();
        self.shown.clear();
    }
}

/// How one format's lines are read for the index.
pub trait LineRules: Sync {
    /// Fills `facts` for a complete line, given with its newline (ranges count from
    /// the line's start).
    fn line(&self, line: &[u8], facts: &mut LineFacts);
}

/// What a thread is filling: the unit's trigrams and blocks, and its probe lines.
pub struct Pending {
    ex: Extractor,
    bytes: u64,
    /// (key, start, len) of each block.
    blocks: Vec<(u64, u64, u64)>,
    /// (block in `blocks`, probe, start, len).
    lines: Vec<(usize, usize, u64, u64)>,
    facts: LineFacts,
}

impl Default for Pending {
    fn default() -> Pending {
        Pending::new()
    }
}

impl Pending {
    pub fn new() -> Pending {
        Pending {
            ex: Extractor::new(),
            bytes: 0,
            blocks: Vec::new(),
            lines: Vec::new(),
            facts: LineFacts::default(),
        }
    }

    fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Adds a line of file `key` at `start`, given with its newline.
    fn line(&mut self, key: u64, start: u64, line_nl: &[u8], rules: &dyn LineRules) {
        let line = &line_nl[..line_nl.len() - 1];
        let len = line.len() as u64;
        match self.blocks.last_mut() {
            Some(b) if b.0 == key && b.1 + b.2 == start => b.2 += len + 1,
            _ => self.blocks.push((key, start, len + 1)),
        }
        self.bytes += len + 1;
        let block = self.blocks.len() - 1;
        self.facts.clear();
        rules.line(line_nl, &mut self.facts);
        let mut at = 0;
        for p in &self.facts.hide {
            if p.start < at || p.end > line.len() || p.start > p.end {
                // A format that gives bad ranges gets none left out.
                self.ex.text(line);
                at = usize::MAX;
                break;
            }
            self.ex.text(&line[at..p.start]);
            at = p.end;
        }
        if at != usize::MAX {
            self.ex.text(&line[at..]);
        }
        for data in &self.facts.binary {
            self.ex.binary(data);
        }
        for text in &self.facts.shown {
            self.ex.text(text);
        }
        for &k in &self.facts.probes {
            if k as usize != HUGE {
                self.lines.push((block, k as usize, start, len));
            }
        }
    }

    /// Adds a line too long to index.
    fn huge(&mut self, key: u64, start: u64, len: u64) {
        match self.blocks.last_mut() {
            Some(b) if b.0 == key && b.1 + b.2 == start => b.2 += len + 1,
            _ => self.blocks.push((key, start, len + 1)),
        }
        self.bytes += len + 1;
        self.lines.push((self.blocks.len() - 1, HUGE, start, len));
    }

    /// The unit, ready to be added to a segment: its trigrams sorted, its lines in
    /// block order. What takes time is done here, so that threads sharing a
    /// [`Builder`] hold its lock only for [`Sealed::add_to`].
    pub fn seal(&mut self) -> Sealed {
        let trigrams = self.ex.take();
        if self.is_empty() {
            return Sealed::default();
        }
        // Lines in block order, as the builder wants them.
        self.lines.sort_by_key(|&(blk, p, s, _)| (blk, p, s));
        self.bytes = 0;
        Sealed {
            trigrams,
            blocks: std::mem::take(&mut self.blocks),
            lines: std::mem::take(&mut self.lines),
        }
    }

    pub fn full(&self) -> bool {
        self.bytes >= UNIT_TARGET
    }
}

/// A unit [`Pending::seal`] made ready for a segment.
#[derive(Default)]
pub struct Sealed {
    trigrams: Vec<u32>,
    /// (key, start, len) of each block.
    blocks: Vec<(u64, u64, u64)>,
    /// (block in `blocks`, probe, start, len), in block order.
    lines: Vec<(usize, usize, u64, u64)>,
}

impl Sealed {
    /// Adds the unit to `b`; returns the keys of its blocks.
    pub fn add_to(self, b: &mut Builder) -> Vec<u64> {
        if self.blocks.is_empty() {
            return Vec::new();
        }
        b.add_unit(&self.trigrams);
        let mut ids = Vec::with_capacity(self.blocks.len());
        let mut keys = Vec::new();
        for &(key, start, len) in &self.blocks {
            ids.push(b.add_block(key, start, len));
            keys.push(key);
        }
        for &(blk, p, s, l) in &self.lines {
            b.add_line(ids[blk], p, s, l);
        }
        keys.dedup();
        keys
    }
}

/// What [`read_lines`] hands over for each line at its offset: its bytes with the
/// newline, or the length of a line too long to hold.
pub type EachLine<'a> = dyn FnMut(u64, Result<&[u8], u64>) + 'a;

/// A file's lines from `from` on, up to `to` (its size when looked at): each complete
/// line is handed to `each` with its newline, and hashed into `h`; a line longer than
/// [`LONG_LINE`] stops the reading before it. Returns where the last complete line
/// ends (the next indexing starts there).
pub fn read_lines(
    f: &File,
    from: u64,
    to: u64,
    h: &mut Hasher,
    each: &mut EachLine<'_>,
) -> io::Result<u64> {
    let mut buf: Vec<u8> = Vec::new();
    // The file offset of buf[0].
    let mut base = from;
    let mut end = from;
    loop {
        if base + buf.len() as u64 >= to {
            return Ok(end);
        }
        if buf.len() > LONG_LINE {
            // A line too long: what the index covers of the file ends before it. The
            // exact path reads the rest at every search, as it does without the index
            // (it skips such a line); reading through it here would cost its whole
            // length, gigabytes for a line that never ends, at every refresh.
            return Ok(end);
        }
        let have = buf.len();
        let want = ((to - base - have as u64) as usize).min(PIECE.max(have));
        buf.resize(have + want, 0);
        let n = read_at(f, &mut buf[have..], base + have as u64)?;
        buf.truncate(have + n);
        if n == 0 {
            return Ok(end);
        }
        let mut s = 0;
        for nl in memchr::memchr_iter(b'\n', &buf[have..]).map(|i| i + have) {
            each(base + s as u64, Ok(&buf[s..=nl]));
            s = nl + 1;
        }
        if s > 0 {
            h.update(&buf[..s]);
            end = base + s as u64;
            buf.drain(..s);
            base = end;
        }
    }
}

fn read_at(f: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    loop {
        match f.read_at(buf, at) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Indexes file `key`'s lines in `from..to` into `pend` (submitting full units to
/// `submit`), hashing them into `h`. Returns where the indexed bytes end.
#[allow(clippy::too_many_arguments)]
pub fn index_range(
    f: &File,
    key: u64,
    from: u64,
    to: u64,
    rules: &dyn LineRules,
    h: &mut Hasher,
    pend: &mut Pending,
    submit: &mut dyn FnMut(&mut Pending),
) -> io::Result<u64> {
    read_lines(f, from, to, h, &mut |start, line| {
        match line {
            Ok(l) => pend.line(key, start, l, rules),
            Err(len) => pend.huge(key, start, len),
        }
        if pend.full() {
            submit(pend);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::super::segment::Segment;
    use super::*;

    struct Plain;
    impl LineRules for Plain {
        fn line(&self, line: &[u8], facts: &mut LineFacts) {
            // `"b64":"…"` is a payload; a line with `!` is selected by probe 1.
            if let Some(k) = memchr::memmem::find(line, b"\"b64\":\"") {
                let s = k + 7;
                if let Some(e) = memchr::memchr(b'"', &line[s..]) {
                    facts.hide.push(s..s + e);
                    let b64 = String::from_utf8_lossy(&line[s..s + e]).into_owned();
                    facts.binary.push(crate::model::core::base64::decode(&b64));
                }
            }
            if line.contains(&b'!') {
                facts.probes.push(1);
            }
        }
    }

    #[test]
    fn lines_and_hash() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, b"one\ntwo\nthree").unwrap();
        let f = File::open(&p).unwrap();
        let mut h = Hasher::new();
        let mut got = Vec::new();
        let end = read_lines(&f, 0, 13, &mut h, &mut |s, l| {
            got.push((s, l.unwrap().to_vec()))
        })
        .unwrap();
        assert_eq!(end, 8);
        assert_eq!(got, vec![(0, b"one\n".to_vec()), (4, b"two\n".to_vec())]);
        assert_eq!(h.finish(), super::super::hash::hash(b"one\ntwo\n"));
        // From the middle.
        let mut h = Hasher::new();
        got.clear();
        let end = read_lines(&f, 4, 13, &mut h, &mut |s, l| {
            got.push((s, l.unwrap().to_vec()))
        })
        .unwrap();
        assert_eq!((end, got.len()), (8, 1));
    }

    #[test]
    fn units_blocks_probes_payloads() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        let b64 = "aGVsbG8gd29ybGQ="; // "hello world"
        let text = format!("{{\"t\":\"alpha\"}}\n{{\"b64\":\"{b64}\"}}\nbeta!\n");
        std::fs::write(&p, &text).unwrap();
        let f = File::open(&p).unwrap();
        let mut pend = Pending::new();
        let mut b = Builder::new(2);
        let mut h = Hasher::new();
        let end = index_range(
            &f,
            5,
            0,
            text.len() as u64,
            &Plain,
            &mut h,
            &mut pend,
            &mut |p| {
                p.seal().add_to(&mut Builder::new(2));
            },
        )
        .unwrap();
        assert_eq!(end, text.len() as u64);
        assert_eq!(pend.seal().add_to(&mut b), vec![5]);
        let s = d.path().join("s");
        let n = b.write(&s).unwrap();
        let mut seg = Segment::open(&s, n).unwrap();
        let t = |a: &[u8; 3]| super::super::trigram::tri(a[0], a[1], a[2]);
        assert_eq!(seg.list(t(b"alp")).unwrap(), vec![0]);
        // The decoded payload's runs are in; its base64 text is not.
        assert_eq!(seg.list(t(b"wor")).unwrap(), vec![0]);
        assert_eq!(seg.list(t(b"agv")).unwrap(), Vec::<u32>::new());
        let lines = seg.probe_lines(1).unwrap();
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].len, 5);
        assert_eq!(seg.blocks.len(), 1);
        assert_eq!(seg.blocks[0].len, text.len() as u64);
    }
}
