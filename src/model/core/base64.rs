//! Base64 decoding with the leniency of Node's `Buffer.from(s, "base64")`.
//!
//! Pi stores image blocks as base64 written by Node, and Node reads them back
//! with a decoder that never fails. This module decodes the same way, so an
//! image that Pi could send to a model yields the same bytes here:
//!
//! * both alphabets are accepted (`+/` and the URL-safe `-_`);
//! * characters outside the alphabet (whitespace, line breaks, junk) are
//!   skipped;
//! * decoding stops at the first `=`, so padding is optional and anything
//!   after it is ignored;
//! * a final group of 2 or 3 characters gives 1 or 2 bytes, and a single
//!   leftover character is dropped.
//!
//! [`decoded_len`] gives the length [`decode`] would produce without
//! allocating.

/// Each byte's value in the alphabet, [`SKIP`] for a character outside it, [`END`]
/// for `=`.
const TABLE: [u8; 256] = {
    let mut t = [SKIP; 256];
    let mut i = 0;
    while i < 26 {
        t[b'A' as usize + i] = i as u8;
        t[b'a' as usize + i] = 26 + i as u8;
        i += 1;
    }
    let mut d = 0;
    while d < 10 {
        t[b'0' as usize + d] = 52 + d as u8;
        d += 1;
    }
    t[b'+' as usize] = 62;
    t[b'-' as usize] = 62;
    t[b'/' as usize] = 63;
    t[b'_' as usize] = 63;
    t[b'=' as usize] = END;
    t
};
const SKIP: u8 = 0xFF;
const END: u8 = 0xFE;

/// Decodes `s`; never fails (see the module documentation).
pub fn decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    // Whole groups of characters of the alphabet, the common case, written into a
    // buffer sized for them: 32 characters (24 bytes) at a time, with one test of
    // all their values, then 4 at a time.
    let mut out = vec![0u8; b.len() / 4 * 3];
    let (mut i, mut o) = bulk(b, &mut out);
    let group = |t: &[u8]| -> (u8, u32) {
        let (a, c, d, e) = (
            TABLE[t[0] as usize],
            TABLE[t[1] as usize],
            TABLE[t[2] as usize],
            TABLE[t[3] as usize],
        );
        let v = (u32::from(a) << 18) | (u32::from(c) << 12) | (u32::from(d) << 6) | u32::from(e);
        (a | c | d | e, v)
    };
    while let (Some(src), Some(dst)) = (b.get(i..i + 32), out.get_mut(o..o + 24)) {
        let mut bad = 0u8;
        let mut v = [0u32; 8];
        for (g, t) in src.chunks_exact(4).enumerate() {
            let (f, w) = group(t);
            bad |= f;
            v[g] = w;
        }
        if bad & 0xC0 != 0 {
            break;
        }
        for (d, w) in dst.chunks_exact_mut(3).zip(v) {
            d.copy_from_slice(&[(w >> 16) as u8, (w >> 8) as u8, w as u8]);
        }
        i += 32;
        o += 24;
    }
    while let (Some(src), Some(dst)) = (b.get(i..i + 4), out.get_mut(o..o + 3)) {
        let (f, w) = group(src);
        if f & 0xC0 != 0 {
            break;
        }
        dst.copy_from_slice(&[(w >> 16) as u8, (w >> 8) as u8, w as u8]);
        i += 4;
        o += 3;
    }
    out.truncate(o);
    // The rest one character at a time: skipping what is not in the alphabet, stopping
    // at `=`.
    let mut acc: u32 = 0;
    let mut n = 0;
    for &c in &b[i..] {
        let v = TABLE[c as usize];
        if v == END {
            break;
        }
        if v == SKIP {
            continue;
        }
        acc = (acc << 6) | u32::from(v);
        n += 1;
        if n == 4 {
            out.extend_from_slice(&[(acc >> 16) as u8, (acc >> 8) as u8, acc as u8]);
            acc = 0;
            n = 0;
        }
    }
    match n {
        2 => out.push((acc >> 4) as u8),
        3 => out.extend_from_slice(&[(acc >> 10) as u8, (acc >> 2) as u8]),
        _ => {}
    }
    out
}

/// Decodes the longest prefix of `b` made of whole blocks of 32 characters of the
/// alphabets, into `out` from its start: how many characters and bytes that was.
/// With AVX2, 32 characters at an instruction (images are most of the bytes decoded:
/// a search renders every image of a line it shows); elsewhere nothing, and
/// [`decode`]'s own loops do it all.
#[inline]
fn bulk(b: &[u8], out: &mut [u8]) -> (usize, usize) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above; std keeps the answer).
        return unsafe { bulk_avx2(b, out) };
    }
    let _ = (b, out);
    (0, 0)
}

/// [`bulk`] with AVX2: each block of 32 characters is mapped to its 32 values by
/// ranges (`A-Z`, `a-z`, `0-9`, `+` or `-`, `/` or `_`); a block with any other
/// character (`=`, whitespace, junk) ends the run, left to the scalar loops. The
/// values are packed four to three bytes and stored 32 bytes at a time, of which 24
/// count, so a block is decoded only while `out` has 32 bytes of room.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn bulk_avx2(b: &[u8], out: &mut [u8]) -> (usize, usize) {
    use std::arch::x86_64::*;
    let (mut i, mut o) = (0, 0);
    let range = |v: __m256i, lo: u8, hi: u8| {
        // Bytes from 0x80 are negative as `i8`: below every bound here.
        _mm256_and_si256(
            _mm256_cmpgt_epi8(v, _mm256_set1_epi8(lo as i8 - 1)),
            _mm256_cmpgt_epi8(_mm256_set1_epi8(hi as i8 + 1), v),
        )
    };
    let eq = |v: __m256i, c: u8| _mm256_cmpeq_epi8(v, _mm256_set1_epi8(c as i8));
    while i + 32 <= b.len() && o + 32 <= out.len() {
        // SAFETY: 32 bytes at `i` are in `b`, and 32 at `o` in `out` (the loop's test).
        let v = unsafe { _mm256_loadu_si256(b.as_ptr().add(i).cast()) };
        let up = range(v, b'A', b'Z');
        let low = range(v, b'a', b'z');
        let digit = range(v, b'0', b'9');
        let s62 = _mm256_or_si256(eq(v, b'+'), eq(v, b'-'));
        let s63 = _mm256_or_si256(eq(v, b'/'), eq(v, b'_'));
        let any = _mm256_or_si256(
            _mm256_or_si256(up, low),
            _mm256_or_si256(digit, _mm256_or_si256(s62, s63)),
        );
        if _mm256_movemask_epi8(any) != -1 {
            break;
        }
        let shift = _mm256_or_si256(
            _mm256_or_si256(
                _mm256_and_si256(up, _mm256_set1_epi8(-(b'A' as i8))),
                _mm256_and_si256(low, _mm256_set1_epi8(26 - b'a' as i8)),
            ),
            _mm256_and_si256(digit, _mm256_set1_epi8(52 - b'0' as i8)),
        );
        let mut val = _mm256_add_epi8(v, shift);
        val = _mm256_blendv_epi8(val, _mm256_set1_epi8(62), s62);
        val = _mm256_blendv_epi8(val, _mm256_set1_epi8(63), s63);
        // [a, b, c, d] → a·64 + b and c·64 + d, then (a·64 + b)·4096 + (c·64 + d):
        // the three bytes of each group, low byte first, in each 32-bit lane.
        let pairs = _mm256_maddubs_epi16(val, _mm256_set1_epi32(0x0140_0140));
        let words = _mm256_madd_epi16(pairs, _mm256_set1_epi32(0x0001_1000));
        let order = _mm256_setr_epi8(
            2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1, 2, 1, 0, 6, 5, 4, 10, 9, 8, 14,
            13, 12, -1, -1, -1, -1,
        );
        let lanes = _mm256_shuffle_epi8(words, order);
        let packed = _mm256_permutevar8x32_epi32(lanes, _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 7, 7));
        // SAFETY: see the load.
        unsafe { _mm256_storeu_si256(out.as_mut_ptr().add(o).cast(), packed) };
        i += 32;
        o += 24;
    }
    (i, o)
}

/// The number of bytes [`decode`] returns for `s`.
/// Whether `c` is of either alphabet (`=` is not), without branches, so that a loop
/// over a long string of them becomes vector compares.
#[inline(always)]
pub fn in_alphabet(c: u8) -> bool {
    let letter = (c | 0x20).wrapping_sub(b'a') < 26;
    let digit = c.wrapping_sub(b'0') < 10;
    letter | digit | (c == b'+') | (c == b'/') | (c == b'-') | (c == b'_')
}

pub fn decoded_len(s: &str) -> usize {
    // The characters of the alphabet before the first `=`: an image of hundreds of
    // KB is counted a run of 255 bytes at a time into a byte, without branches (the
    // compiler makes vector compares of it).
    let b = s.as_bytes();
    let b = &b[..memchr::memchr(b'=', b).unwrap_or(b.len())];
    let n: usize = b
        .chunks(255)
        .map(|run| {
            let k = run
                .iter()
                .fold(0u8, |k, &c| k.wrapping_add(u8::from(in_alphabet(c))));
            usize::from(k)
        })
        .sum();
    n / 4 * 3 + [0, 0, 1, 2][n % 4]
}

/// Standard base64 with padding. sessionfs itself only decodes: this is what the
/// unit and integration tests write images with, in one place.
pub fn encode(b: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::new();
    for c in b.chunks(3) {
        let v = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            s.push(if i <= c.len() {
                A[((v >> (18 - 6 * i)) & 63) as usize] as char
            } else {
                '='
            });
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_node() {
        // Buffer.from(s, "base64") in Node 20.
        let cases: &[(&str, &[u8])] = &[
            ("aGVsbG8=", b"hello"),
            ("aGVsbG8", b"hello"),
            ("aGVs bG8=\n", b"hello"),
            ("aGVsbG8=aGVsbG8=", b"hello"),
            ("aGV=sbG8", b"he"),
            ("a", b""),
            ("ab", &[105]),
            ("abc", &[105, 183]),
            ("a-_b", &[107, 239, 219]),
            ("a+/b", &[107, 239, 219]),
            ("!!aGVsbG8", b"hello"),
            ("aGVsbG8===x", b"hello"),
            ("", b""),
            ("====", b""),
            ("YQ", b"a"),
            ("YQ==YQ", b"a"),
        ];
        for (s, want) in cases {
            assert_eq!(decode(s), *want, "{s:?}");
            assert_eq!(decoded_len(s), want.len(), "{s:?}");
        }
    }

    /// The decoder as first written, one character at a time: [`decode`] must agree.
    fn reference(s: &str) -> Vec<u8> {
        let sextet = |c: u8| match c {
            b'A'..=b'Z' => Some(c - b'A'),
            b'a'..=b'z' => Some(c - b'a' + 26),
            b'0'..=b'9' => Some(c - b'0' + 52),
            b'+' | b'-' => Some(62),
            b'/' | b'_' => Some(63),
            _ => None,
        };
        let mut out = Vec::new();
        let (mut acc, mut n) = (0u32, 0);
        for v in s.bytes().take_while(|&c| c != b'=').filter_map(sextet) {
            acc = (acc << 6) | u32::from(v);
            n += 1;
            if n == 4 {
                out.extend_from_slice(&[(acc >> 16) as u8, (acc >> 8) as u8, acc as u8]);
                acc = 0;
                n = 0;
            }
        }
        match n {
            2 => out.push((acc >> 4) as u8),
            3 => out.extend_from_slice(&[(acc >> 10) as u8, (acc >> 2) as u8]),
            _ => {}
        }
        out
    }

    #[test]
    fn agrees_with_the_reference() {
        let pieces = [
            "QUJD", "ab", "=", " ", "\n", "-_", "+/", "!", "Zm9v", "é", "A",
        ];
        let mut seed = 0x1234_5678u64;
        for k in 0..20_000 {
            let mut s = String::new();
            // Some strings long enough to be counted in several runs.
            let pieces_n = if k % 50 == 0 {
                300 + seed % 700
            } else {
                seed % 12
            };
            for _ in 0..pieces_n {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                s.push_str(pieces[(seed >> 33) as usize % pieces.len()]);
            }
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            assert_eq!(decode(&s), reference(&s), "{s:?}");
            assert_eq!(decoded_len(&s), reference(&s).len(), "{s:?}");
        }
    }

    /// Long runs of the alphabet (decoded 32 characters at a time) broken at every
    /// place by a character outside it, a `=`, or one of the other alphabet.
    #[test]
    fn long_runs_broken_anywhere() {
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut seed = 0x9e37_79b9u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize
        };
        for len in [0, 3, 31, 32, 33, 64, 95, 96, 97, 200, 331] {
            let clean: String = (0..len).map(|_| alphabet[next() % 64] as char).collect();
            assert_eq!(decode(&clean), reference(&clean), "{clean:?}");
            for at in 0..=len {
                for junk in ["\n", " ", "=", "-", "_", "é", "!"] {
                    let mut s = clean.clone();
                    s.insert_str(at, junk);
                    assert_eq!(decode(&s), reference(&s), "{s:?}");
                    assert_eq!(decoded_len(&s), reference(&s).len(), "{s:?}");
                }
            }
        }
    }

    #[test]
    fn all_byte_values() {
        // "AAECAwQF…" is base64 of 0..=255.
        let bytes: Vec<u8> = (0..=255).collect();
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut enc = String::new();
        for chunk in bytes.chunks(3) {
            let b = [
                chunk[0],
                *chunk.get(1).unwrap_or(&0),
                *chunk.get(2).unwrap_or(&0),
            ];
            let v = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            for i in 0..=chunk.len() {
                enc.push(alphabet[((v >> (18 - 6 * i)) & 63) as usize] as char);
            }
        }
        assert_eq!(decode(&enc), bytes);
    }
}
