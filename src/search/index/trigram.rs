//! The trigrams of a block: every three consecutive bytes of its lines' text, ASCII
//! letters folded to lower case, and of the printable runs of its decoded binary
//! content.
//!
//! * **Text.** A line is taken as bytes, whatever they encode; a trigram never spans
//!   two lines (a match never does) nor the edge of a payload (base64 text the
//!   format decodes into a binary file and shows nowhere as text: it is not in the
//!   postings, see below). Folding ASCII case makes the index smaller and lets one
//!   posting list answer both a case-sensitive query and a case-insensitive one; a
//!   non-ASCII letter is kept as its bytes, and a query with `-i` asks for each of
//!   its case variants ([`super::query`]).
//! * **Binary content.** An image is searched as grep searches a binary file, so a
//!   literal of the pattern may occur anywhere in its decoded bytes. Indexing all of
//!   them would cost a posting per byte (compressed image data is close to random).
//!   But a literal made of printable ASCII characters (and the two non-ASCII letters
//!   that `-i` folds onto ASCII ones, `ſ` and the Kelvin sign) can only occur inside a
//!   *run* of such bytes at least as long as itself, and in random bytes those runs
//!   are rare: about 3% of the bytes start a trigram inside a run of [`RUN_MIN`] or
//!   more. So the trigrams of those runs are indexed with the block's, and a literal
//!   of that kind and at least [`RUN_MIN`] bytes long is found through them; any
//!   other literal makes every line with binary content a candidate (the query
//!   says so, [`super::query::Lit::run_safe`]).

/// The shortest run of printable bytes of binary content whose trigrams are indexed.
pub const RUN_MIN: usize = 4;

/// Number of distinct trigrams (24 bits).
const SPACE: usize = 1 << 24;

/// A trigram as a number: its three bytes, folded, most significant first.
#[inline(always)]
pub fn tri(a: u8, b: u8, c: u8) -> u32 {
    (u32::from(a.to_ascii_lowercase()) << 16)
        | (u32::from(b.to_ascii_lowercase()) << 8)
        | u32::from(c.to_ascii_lowercase())
}

/// Whether a byte of binary content can be part of a run (printable ASCII).
#[inline(always)]
fn printable(b: u8) -> bool {
    (0x20..=0x7e).contains(&b)
}

/// The UTF-8 of the non-ASCII letters `-i` folds onto ASCII ones: `ſ` (U+017F, an
/// `s`) and the Kelvin sign (U+212A, a `k`). A run may hold them.
pub const FOLDED_ONTO_ASCII: [&[u8]; 2] = ["\u{17f}".as_bytes(), "\u{212a}".as_bytes()];

/// How many bytes of a run start at `b[0]`: 1 for a printable byte, the length of
/// one of [`FOLDED_ONTO_ASCII`], or 0 when no run goes on here.
#[inline(always)]
fn run_unit(b: &[u8]) -> usize {
    if printable(b[0]) {
        return 1;
    }
    FOLDED_ONTO_ASCII
        .iter()
        .find(|s| b.starts_with(s))
        .map_or(0, |s| s.len())
}

/// Whether a byte may be part of a run: printable, or any byte of the letters of
/// [`FOLDED_ONTO_ASCII`] (a test checks these are all of them).
#[inline(always)]
fn may_run(b: u8) -> bool {
    printable(b) | FOLDED_BYTES.iter().fold(false, |m, &f| m | (b == f))
}

/// Every byte of the letters of [`FOLDED_ONTO_ASCII`].
const FOLDED_BYTES: [u8; 5] = [0xC5, 0xBF, 0xE2, 0x84, 0xAA];

/// Bit k set when `may_run(look[k])`, for up to 64 bytes: 16 at a time with SSE2
/// compares (part of every x86-64), the rest one by one.
fn may_run_mask(look: &[u8]) -> u64 {
    let mut m = 0u64;
    let mut k = 0;
    #[cfg(target_arch = "x86_64")]
    while k + 16 <= look.len() {
        use std::arch::x86_64::*;
        let b: &[u8; 16] = look[k..k + 16].try_into().expect("16 bytes");
        // SAFETY: SSE2 is part of x86-64 (these calls need no feature check); the
        // load reads the 16 bytes of `b`, unaligned.
        let hit = unsafe {
            let v = _mm_loadu_si128(b.as_ptr().cast());
            // Printable: 0x20..=0x7E, as signed bytes (0x80 and up are negative).
            let mut hit = _mm_and_si128(
                _mm_cmpgt_epi8(v, _mm_set1_epi8(0x1F)),
                _mm_cmplt_epi8(v, _mm_set1_epi8(0x7F)),
            );
            for f in FOLDED_BYTES {
                hit = _mm_or_si128(hit, _mm_cmpeq_epi8(v, _mm_set1_epi8(f as i8)));
            }
            _mm_movemask_epi8(hit)
        };
        m |= u64::from(hit as u16) << k;
        k += 16;
    }
    for (j, &b) in look.iter().enumerate().skip(k) {
        m |= u64::from(may_run(b)) << j;
    }
    m
}

/// Collects the distinct trigrams of one block at a time. Holds a bit per possible
/// trigram (2 MiB), so one is made per thread and reused.
pub struct Extractor {
    seen: Vec<u64>,
    list: Vec<u32>,
    /// Room for [`sort_trigrams`].
    scratch: Vec<u32>,
}

impl Default for Extractor {
    fn default() -> Extractor {
        Extractor::new()
    }
}

impl Extractor {
    pub fn new() -> Extractor {
        Extractor {
            seen: vec![0; SPACE / 64],
            list: Vec::new(),
            scratch: Vec::new(),
        }
    }

    #[inline(always)]
    fn add(&mut self, t: u32) {
        let w = &mut self.seen[(t >> 6) as usize];
        let bit = 1u64 << (t & 63);
        if *w & bit == 0 {
            *w |= bit;
            self.list.push(t);
        }
    }

    /// Adds the trigrams of `s`, a piece of text (none spanning its ends).
    pub fn text(&mut self, s: &[u8]) {
        if s.len() < 3 {
            return;
        }
        let mut t =
            (u32::from(s[0].to_ascii_lowercase()) << 8) | u32::from(s[1].to_ascii_lowercase());
        for &b in &s[2..] {
            t = ((t << 8) | u32::from(b.to_ascii_lowercase())) & 0xFF_FFFF;
            self.add(t);
        }
    }

    /// Adds the trigrams of the runs of `data`, decoded binary content, at least
    /// [`RUN_MIN`] bytes long.
    ///
    /// Most bytes of an image end a run at once, and looking at each in turn costs a
    /// mispredicted branch every few bytes. So the bytes that may be in a run
    /// ([`may_run`]) are first marked 64 at a time, without branches, to find the
    /// next [`RUN_MIN`] of them in a row; only the stretch of such bytes around them
    /// is read run by run ([`Extractor::runs`]). That finds the same runs: a run lies
    /// within one stretch, and a stretch begins after a byte that is in no run, where
    /// the reading one byte at a time begins afresh too.
    pub fn binary(&mut self, data: &[u8]) {
        let n = data.len();
        let mut at = 0;
        while at + RUN_MIN <= n {
            let look = &data[at..(at + 64).min(n)];
            let m = may_run_mask(look);
            // Bit k: the RUN_MIN bytes from k on may all be in a run.
            let mut w = m;
            for s in 1..RUN_MIN {
                w &= m >> s;
            }
            if w == 0 {
                // Every start up to `look.len() - RUN_MIN` was looked at.
                at += look.len() - (RUN_MIN - 1);
                continue;
            }
            let p = at + w.trailing_zeros() as usize;
            let mut r = p + RUN_MIN;
            while r < n && may_run(data[r]) {
                r += 1;
            }
            self.runs(&data[p..r]);
            at = r + 1;
        }
    }

    /// [`Extractor::binary`] one unit of a run ([`run_unit`]) at a time.
    fn runs(&mut self, data: &[u8]) {
        let mut i = 0;
        while i < data.len() {
            let start = i;
            while i < data.len() {
                let n = run_unit(&data[i..]);
                if n == 0 {
                    break;
                }
                i += n;
            }
            if i - start >= RUN_MIN {
                self.text(&data[start..i]);
            }
            if i == start {
                i += 1;
            }
        }
    }

    /// The distinct trigrams added since the last call, sorted; the extractor is then
    /// empty again.
    pub fn take(&mut self) -> Vec<u32> {
        for &t in &self.list {
            self.seen[(t >> 6) as usize] = 0;
        }
        // The next unit likely holds about as many.
        let room = self.list.len();
        let mut v = std::mem::replace(&mut self.list, Vec::with_capacity(room));
        sort_trigrams(&mut v, &mut self.scratch);
        v
    }

    /// How many distinct trigrams were added since the last [`Extractor::take`].
    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// Sorts trigrams (values under 2^24): a unit has tens of thousands, which three
/// passes of counting a byte each (a radix sort) sort in about a third of the time a
/// comparison sort takes. `tmp` is room reused from one call to the next.
fn sort_trigrams(v: &mut Vec<u32>, tmp: &mut Vec<u32>) {
    if v.len() < 1024 {
        v.sort_unstable();
        return;
    }
    debug_assert!(v.iter().all(|&t| t < 1 << 24));
    tmp.clear();
    tmp.resize(v.len(), 0);
    for shift in [0, 8, 16] {
        let mut at = [0usize; 256];
        for &t in v.iter() {
            at[(t >> shift) as usize & 0xFF] += 1;
        }
        let mut sum = 0;
        for a in at.iter_mut() {
            let n = *a;
            *a = sum;
            sum += n;
        }
        for &t in v.iter() {
            let d = (t >> shift) as usize & 0xFF;
            tmp[at[d]] = t;
            at[d] += 1;
        }
        std::mem::swap(v, tmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigrams_sorted_as_a_comparison_sort_does() {
        let mut seed = 0x1234_abcdu64;
        let mut tmp = Vec::new();
        for len in [0, 1, 5, 1023, 1024, 1025, 5000, 70_000] {
            let mut v: Vec<u32> = (0..len)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (seed >> 40) as u32
                })
                .collect();
            let mut want = v.clone();
            want.sort_unstable();
            sort_trigrams(&mut v, &mut tmp);
            assert_eq!(v, want, "{len}");
        }
    }

    #[test]
    fn the_mask_marks_what_may_run() {
        let all: Vec<u8> = (0..=255).collect();
        for look in all
            .chunks(64)
            .chain(all[7..70].chunks(63))
            .chain([&all[250..]])
        {
            let m = may_run_mask(look);
            for (k, &b) in look.iter().enumerate() {
                assert_eq!(m >> k & 1 == 1, may_run(b), "byte {b:#x}");
            }
            assert_eq!(
                m >> look.len().min(63),
                u64::from(look.len() == 64 && may_run(look[63]))
            );
        }
    }

    #[test]
    fn binary_finds_the_runs_the_reference_finds() {
        for letter in FOLDED_ONTO_ASCII {
            assert!(letter.iter().all(|&b| may_run(b)), "{letter:?}");
        }
        let mut seed = 0x5851_f42d_4c95_7f2du64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize
        };
        let (mut fast, mut slow) = (Extractor::new(), Extractor::new());
        for case in 0..3000 {
            let mut data = Vec::new();
            // Now and then several looks of 64 bytes long.
            let pieces = if case % 10 == 0 { 400 } else { next() % 60 };
            for _ in 0..pieces {
                match next() % 7 {
                    0 => data.extend_from_slice(FOLDED_ONTO_ASCII[next() % 2]),
                    // A lead byte without the rest of its letter.
                    1 => data.push([0xC5, 0xE2][next() % 2]),
                    2 => data.extend((0..next() % 9).map(|_| b'a' + (next() % 26) as u8)),
                    3 => data.push((next() % 256) as u8),
                    4 => data.extend_from_slice(&FOLDED_ONTO_ASCII[next() % 2][..1 + next() % 2]),
                    // A byte that goes on a letter alone.
                    5 => data.push([0xBF, 0x84, 0xAA][next() % 3]),
                    _ => data.push(0),
                }
            }
            fast.binary(&data);
            slow.runs(&data);
            assert_eq!(fast.take(), slow.take(), "{data:?}");
        }
    }

    fn trigrams(s: &[u8]) -> Vec<u32> {
        let mut e = Extractor::new();
        e.text(s);
        e.take()
    }

    #[test]
    fn distinct_folded_sorted() {
        assert_eq!(trigrams(b"ab"), Vec::<u32>::new());
        assert_eq!(trigrams(b"aBc"), vec![tri(b'a', b'b', b'c')]);
        let v = trigrams(b"abcabcABC");
        assert_eq!(v.len(), 3);
        assert!(v.windows(2).all(|w| w[0] < w[1]));
        // Non-ASCII bytes are kept as they are.
        let e = "é".as_bytes();
        assert_eq!(trigrams(&[b'x', e[0], e[1]]), vec![tri(b'x', e[0], e[1])]);
        // Reuse starts empty.
        let mut x = Extractor::new();
        x.text(b"hello");
        assert_eq!(x.take().len(), 3);
        x.text(b"hel");
        assert_eq!(x.take(), vec![tri(b'h', b'e', b'l')]);
    }

    #[test]
    fn binary_runs() {
        let mut e = Extractor::new();
        // Runs of 3 are not indexed; of 4 they are.
        e.binary(&[0, b'a', b'b', b'c', 0, b'w', b'x', b'y', b'z', 1]);
        assert_eq!(e.take(), vec![tri(b'w', b'x', b'y'), tri(b'x', b'y', b'z')]);
        // The Kelvin sign and the long s continue a run.
        let mut d = b"\x01ab".to_vec();
        d.extend_from_slice("\u{212a}".as_bytes());
        d.push(0);
        e.binary(&d);
        let k = "\u{212a}".as_bytes();
        assert_eq!(
            e.take(),
            vec![
                tri(b'a', b'b', k[0]),
                tri(b'b', k[0], k[1]),
                tri(k[0], k[1], k[2])
            ]
        );
        // A lone continuation byte does not.
        e.binary(&[b'a', b'b', 0x84, b'c', b'd']);
        assert!(e.take().is_empty());
        e.binary(b"");
        e.binary(b"abcd");
        assert_eq!(e.take().len(), 2);
    }
}
