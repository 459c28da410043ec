//! A fast 64-bit hash of bytes, for the index's checksums and its record of what a
//! file held when it was indexed.
//!
//! Not a cryptographic hash: it guards against damage (a torn write, a flipped
//! bit, a file of another version) and against a file that changed under the index,
//! not against someone crafting a collision with their own session file, which
//! would only fool their own search. Four independent lanes of 8 bytes each take a
//! 32-byte stripe per step, so it runs at memory speed; every step is a bijection of
//! the lane's state, so two inputs of one length that differ in one 8-byte word
//! always differ before the final mix.

const P1: u64 = 0x9E37_79B9_7F4A_7C15;
const P2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const P3: u64 = 0x1656_67B1_9E37_79F9;
const STRIPE: usize = 32;

/// A streaming hash: [`Hasher::update`] any number of times, then [`Hasher::finish`].
/// The result depends only on the bytes given, not on how they were split.
#[derive(Clone)]
pub struct Hasher {
    lanes: [u64; 4],
    /// Bytes of an incomplete stripe.
    pending: [u8; STRIPE],
    npending: usize,
    len: u64,
}

impl Default for Hasher {
    fn default() -> Hasher {
        Hasher::new()
    }
}

#[inline(always)]
fn step(lane: u64, w: u64) -> u64 {
    (lane ^ w.wrapping_mul(P2)).rotate_left(31).wrapping_mul(P1)
}

impl Hasher {
    pub fn new() -> Hasher {
        Hasher {
            lanes: [P1, P2, P3, P1 ^ P2],
            pending: [0; STRIPE],
            npending: 0,
            len: 0,
        }
    }

    #[inline(always)]
    fn stripe(lanes: &mut [u64; 4], s: &[u8]) {
        for (k, lane) in lanes.iter_mut().enumerate() {
            let w = u64::from_le_bytes(s[k * 8..k * 8 + 8].try_into().expect("8 bytes"));
            *lane = step(*lane, w);
        }
    }

    pub fn update(&mut self, mut b: &[u8]) {
        self.len += b.len() as u64;
        if self.npending > 0 {
            let take = (STRIPE - self.npending).min(b.len());
            self.pending[self.npending..self.npending + take].copy_from_slice(&b[..take]);
            self.npending += take;
            b = &b[take..];
            if self.npending < STRIPE {
                return;
            }
            let p = self.pending;
            Self::stripe(&mut self.lanes, &p);
            self.npending = 0;
        }
        let mut chunks = b.chunks_exact(STRIPE);
        let mut lanes = self.lanes;
        for s in &mut chunks {
            Self::stripe(&mut lanes, s);
        }
        self.lanes = lanes;
        let rest = chunks.remainder();
        self.pending[..rest.len()].copy_from_slice(rest);
        self.npending = rest.len();
    }

    pub fn finish(&self) -> u64 {
        let mut h = self.len.wrapping_mul(P3);
        for (k, &l) in self.lanes.iter().enumerate() {
            h = (h ^ l.rotate_left(k as u32 * 13))
                .wrapping_mul(P1)
                .rotate_left(27);
        }
        let mut tail = self.pending[..self.npending].chunks(8);
        for w in &mut tail {
            let mut b = [0u8; 8];
            b[..w.len()].copy_from_slice(w);
            h = step(h, u64::from_le_bytes(b)) ^ (w.len() as u64);
        }
        h ^= h >> 33;
        h = h.wrapping_mul(P2);
        h ^= h >> 29;
        h = h.wrapping_mul(P3);
        h ^ (h >> 32)
    }
}

/// The hash of `b`.
pub fn hash(b: &[u8]) -> u64 {
    let mut h = Hasher::new();
    h.update(b);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_does_not_matter() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + i / 13) as u8).collect();
        let whole = hash(&data);
        for cut in [0, 1, 7, 31, 32, 33, 64, 100, 999, 1000] {
            for cut2 in [cut, (cut + 5).min(1000), 1000] {
                let mut h = Hasher::new();
                h.update(&data[..cut]);
                h.update(&data[cut..cut2]);
                h.update(&data[cut2..]);
                assert_eq!(h.finish(), whole, "{cut} {cut2}");
            }
        }
    }

    #[test]
    fn one_byte_changes_it() {
        let data = vec![b'x'; 300];
        let base = hash(&data);
        for at in 0..300 {
            let mut d = data.clone();
            d[at] = b'y';
            assert_ne!(hash(&d), base, "{at}");
        }
        assert_ne!(hash(&data[..299]), base);
        assert_ne!(hash(b""), hash(b"\0"));
        assert_ne!(hash(b"\0"), hash(b"\0\0"));
    }
}
