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

/// Collects the distinct trigrams of one block at a time. Holds a bit per possible
/// trigram (2 MiB), so one is made per thread and reused.
pub struct Extractor {
    seen: Vec<u64>,
    list: Vec<u32>,
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
    pub fn binary(&mut self, data: &[u8]) {
        let mut i = 0;
        while i < data.len() {
            let start = i;
            // A printable byte goes on a run; only the lead bytes of
            // `FOLDED_ONTO_ASCII` need [`run_unit`] (most bytes of an image are
            // neither, and end a run at once).
            while let Some(&b) = data.get(i) {
                let n = if printable(b) {
                    1
                } else if FOLDED_ONTO_ASCII.iter().any(|f| f[0] == b) {
                    run_unit(&data[i..])
                } else {
                    0
                };
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
        let mut v = std::mem::take(&mut self.list);
        v.sort_unstable();
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The runs of `data` one unit at a time through [`run_unit`]: what
    /// [`Extractor::binary`] must find, however it goes faster.
    fn binary_reference(e: &mut Extractor, data: &[u8]) {
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
                e.text(&data[start..i]);
            }
            if i == start {
                i += 1;
            }
        }
    }

    #[test]
    fn binary_finds_the_runs_the_reference_finds() {
        let mut seed = 0x5851_f42d_4c95_7f2du64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize
        };
        let (mut fast, mut slow) = (Extractor::new(), Extractor::new());
        for _ in 0..3000 {
            let mut data = Vec::new();
            for _ in 0..next() % 60 {
                match next() % 6 {
                    0 => data.extend_from_slice(FOLDED_ONTO_ASCII[next() % 2]),
                    // A lead byte without the rest of its letter.
                    1 => data.push([0xC5, 0xE2][next() % 2]),
                    2 => data.extend((0..next() % 9).map(|_| b'a' + (next() % 26) as u8)),
                    3 => data.push((next() % 256) as u8),
                    4 => data.extend_from_slice(&FOLDED_ONTO_ASCII[next() % 2][..1 + next() % 2]),
                    _ => data.push(0),
                }
            }
            fast.binary(&data);
            binary_reference(&mut slow, &data);
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
