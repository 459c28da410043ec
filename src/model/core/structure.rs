//! Where a line's strings and braces are, 64 bytes at a time.
//!
//! The hit path's map ([`super::hitpath`]) needs three top-level fields of every line
//! of a big session, and the only way to know which keys are top-level is to follow
//! the line's structure to its end: most of a Pi line is its `message` object, whose
//! strings may hold any quote, brace or backslash. Jumping from one of those bytes to
//! the next with `memchr` costs a call per string, about 0.6 GB/s on Pi's lines. This
//! module classifies 64 bytes at once instead, in the manner of the first stage of
//! simdjson (Langdale and Lemire, "Parsing Gigabytes of JSON per Second"), written
//! here from that paper's description:
//!
//! 1. one bit per byte for `"`, `\`, `{` and `}` ([`classify`]: SSE2 on x86-64, where
//!    it is always present, else eight bytes at a time in a `u64`);
//! 2. the bytes an odd run of backslashes escapes ([`Escapes`]), so the quotes that
//!    open and close strings are the others;
//! 3. the bytes inside strings, a prefix XOR of those quotes ([`prefix_xor`]), carried
//!    from one block to the next;
//! 4. the braces outside strings.
//!
//! A block whose every byte is nested two objects deep or more (the depth at its
//! start, less its closing braces, is still 2 or more) holds no top-level key and is
//! passed over with two popcounts; only the few blocks where the depth reaches 1 are
//! walked bit by bit. The answer is exact on valid JSON, which is all the map's
//! reasoning needs (see [`super::hitpath`]): there, a backslash only occurs in a
//! string, and escapes what follows it.

/// The bytes of one block that are `"`, `\`, `{` or `}`: bit `i` is byte `i`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Masks {
    pub quote: u64,
    pub backslash: u64,
    pub open: u64,
    pub close: u64,
}

/// Classifies 64 bytes.
#[inline]
pub fn classify(b: &[u8; 64]) -> Masks {
    #[cfg(target_arch = "x86_64")]
    {
        classify_sse2(b)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        classify_swar(b)
    }
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn classify_sse2(b: &[u8; 64]) -> Masks {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
    };
    let mut m = Masks::default();
    // SAFETY: SSE2 is part of every x86-64 target, so these intrinsics are present;
    // `b` holds 64 bytes, so each unaligned 16-byte load at 16k (k < 4) is within it.
    unsafe {
        let q = _mm_set1_epi8(b'"' as i8);
        let s = _mm_set1_epi8(b'\\' as i8);
        let o = _mm_set1_epi8(b'{' as i8);
        let c = _mm_set1_epi8(b'}' as i8);
        for k in 0..4 {
            let v = _mm_loadu_si128(b.as_ptr().add(16 * k).cast::<__m128i>());
            let at = 16 * k;
            m.quote |= (_mm_movemask_epi8(_mm_cmpeq_epi8(v, q)) as u16 as u64) << at;
            m.backslash |= (_mm_movemask_epi8(_mm_cmpeq_epi8(v, s)) as u16 as u64) << at;
            m.open |= (_mm_movemask_epi8(_mm_cmpeq_epi8(v, o)) as u16 as u64) << at;
            m.close |= (_mm_movemask_epi8(_mm_cmpeq_epi8(v, c)) as u16 as u64) << at;
        }
    }
    m
}

/// The same with AVX2, 32 bytes at a compare.
///
/// # Safety
///
/// The CPU must have AVX2 (`is_x86_feature_detected!("avx2")`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub fn classify_avx2(b: &[u8; 64]) -> Masks {
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_set1_epi8,
    };
    let q = _mm256_set1_epi8(b'"' as i8);
    let s = _mm256_set1_epi8(b'\\' as i8);
    let o = _mm256_set1_epi8(b'{' as i8);
    let c = _mm256_set1_epi8(b'}' as i8);
    let mut m = Masks::default();
    for k in 0..2 {
        // SAFETY: `b` holds 64 bytes, so each unaligned 32-byte load at 32k (k < 2) is
        // within it.
        let v = unsafe { _mm256_loadu_si256(b.as_ptr().add(32 * k).cast::<__m256i>()) };
        let at = 32 * k;
        m.quote |= (_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, q)) as u32 as u64) << at;
        m.backslash |= (_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, s)) as u32 as u64) << at;
        m.open |= (_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, o)) as u32 as u64) << at;
        m.close |= (_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, c)) as u32 as u64) << at;
    }
    m
}

/// The same with `u64` arithmetic, for every target (and the test of the other).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn classify_swar(b: &[u8; 64]) -> Masks {
    const LOW: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const ONES: u64 = 0x0101_0101_0101_0101;
    /// One bit per byte of `w` equal to `c`, in byte order.
    fn eq(w: u64, c: u8) -> u64 {
        let x = w ^ (ONES * c as u64);
        // The high bit of each byte that is zero, exactly (no borrow between bytes).
        let z = !(((x & LOW) + LOW) | x | LOW);
        // Gather the eight high bits into one byte: bit 8i+7 lands on bit 56+i.
        ((z >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56
    }
    let mut m = Masks::default();
    for (k, w) in b.chunks_exact(8).enumerate() {
        let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        let at = 8 * k;
        m.quote |= eq(w, b'"') << at;
        m.backslash |= eq(w, b'\\') << at;
        m.open |= eq(w, b'{') << at;
        m.close |= eq(w, b'}') << at;
    }
    m
}

/// Bit `i` is the XOR of bits `0..=i` of `x`: with `x` the quotes that delimit
/// strings, the bytes from each opening quote up to (not including) its closing one.
#[inline]
pub fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

const ODD: u64 = 0xaaaa_aaaa_aaaa_aaaa;

/// Which bytes a backslash escapes, block after block: the byte after an odd run of
/// backslashes (the run's last backslash escapes it; a run of two is one escaped
/// backslash). A run may cross into the next block.
#[derive(Debug, Default, Clone, Copy)]
pub struct Escapes {
    /// 1 when the first byte of the next block is escaped.
    carry: u64,
}

impl Escapes {
    /// The escaped bytes of a block whose backslashes are `backslash`.
    #[inline]
    pub fn next(&mut self, backslash: u64) -> u64 {
        if backslash == 0 {
            return std::mem::take(&mut self.carry);
        }
        // A backslash that is escaped itself starts nothing.
        let starts = backslash & !self.carry;
        // Adding each run's first backslash to the run carries past its end: the
        // subtraction below, against alternating bits, leaves 1s on the bytes that
        // follow an odd run (whatever the parity of the position it starts at).
        let code = (((starts << 1) | ODD).wrapping_sub(starts)) ^ ODD;
        let escaped = code ^ (backslash | self.carry);
        let escape = code & backslash;
        self.carry = escape >> 63;
        escaped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The bytes a backslash escapes, one byte at a time (the definition).
    fn escaped_ref(bytes: &[u8]) -> Vec<bool> {
        let mut out = vec![false; bytes.len()];
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'\\' {
                if i + 1 < bytes.len() {
                    out[i + 1] = true;
                }
                i += 2;
            } else {
                i += 1;
            }
        }
        out
    }

    /// Each byte of `v`: its offset, whether [`Escapes`] fed block by block says it is
    /// escaped, and whether [`escaped_ref`] does.
    fn escapes_by_block(v: &[u8]) -> Vec<(usize, bool, bool)> {
        let want = escaped_ref(v);
        let mut e = Escapes::default();
        let mut out = Vec::with_capacity(v.len());
        for (k, chunk) in v.chunks(64).enumerate() {
            let mut block = [0u8; 64];
            block[..chunk.len()].copy_from_slice(chunk);
            let got = e.next(classify(&block).backslash);
            for i in 0..chunk.len() {
                out.push((64 * k + i, got >> i & 1 == 1, want[64 * k + i]));
            }
        }
        out
    }

    fn masks_ref(b: &[u8; 64]) -> Masks {
        let mut m = Masks::default();
        for (i, &c) in b.iter().enumerate() {
            let bit = 1u64 << i;
            match c {
                b'"' => m.quote |= bit,
                b'\\' => m.backslash |= bit,
                b'{' => m.open |= bit,
                b'}' => m.close |= bit,
                _ => {}
            }
        }
        m
    }

    /// Bytes drawn mostly from the four classes, so that runs and neighbours are
    /// common, and some of every other value (the SWAR compare must not borrow).
    fn byte() -> impl Strategy<Value = u8> {
        prop_oneof![
            3 => Just(b'\\'),
            2 => Just(b'"'),
            1 => Just(b'{'),
            1 => Just(b'}'),
            3 => any::<u8>(),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        #[test]
        fn classify_matches_the_bytes(v in proptest::collection::vec(byte(), 64)) {
            let b: &[u8; 64] = v.as_slice().try_into().unwrap();
            let want = masks_ref(b);
            prop_assert_eq!(classify(b), want);
            prop_assert_eq!(classify_swar(b), want);
        }

        /// Escapes found block by block, runs crossing block edges, are the ones found
        /// byte by byte.
        #[test]
        fn escapes_match_the_definition(v in proptest::collection::vec(byte(), 0..400)) {
            for (at, got, want) in escapes_by_block(&v) {
                prop_assert_eq!(got, want, "byte {} of {:?}", at, v);
            }
        }

        #[test]
        fn prefix_xor_is_the_running_parity(x in any::<u64>()) {
            let mut p = 0;
            for i in 0..64 {
                p ^= x >> i & 1;
                prop_assert_eq!(prefix_xor(x) >> i & 1, p);
            }
        }
    }

    #[test]
    fn long_runs_of_backslashes_across_blocks() {
        for run in 0..200 {
            for lead in [0, 1, 62, 63] {
                let mut v = vec![b'a'; lead];
                v.extend(std::iter::repeat_n(b'\\', run));
                v.extend_from_slice(b"\"xx");
                for (at, got, want) in escapes_by_block(&v) {
                    assert_eq!(got, want, "run {run} lead {lead} byte {at}");
                }
            }
        }
    }
}
