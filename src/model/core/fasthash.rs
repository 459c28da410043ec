//! A fast hasher for the maps a search fills with every file it lists (paths, device
//! and inode pairs): tens of thousands of insertions and lookups per search, where
//! the standard library's SipHash was a tenth of a rare word's CPU.
//!
//! The keys are the user's own paths and numbers the kernel gave, in maps that live
//! for one process; no one else chooses them, so the flooding attacks SipHash guards
//! against do not apply. The mixing is the multiply-rotate scheme of rustc's
//! `FxHasher`: one multiplication per eight bytes.

use std::hash::{BuildHasherDefault, Hasher};

const K: u64 = 0xf135_7aea_2e62_a9c5;

#[derive(Default, Clone, Copy)]
pub struct FastHasher {
    h: u64,
}

impl FastHasher {
    #[inline]
    fn add(&mut self, w: u64) {
        self.h = (self.h ^ w).wrapping_mul(K).rotate_left(26);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, mut b: &[u8]) {
        while b.len() >= 8 {
            self.add(u64::from_le_bytes(b[..8].try_into().expect("8 bytes")));
            b = &b[8..];
        }
        if b.len() >= 4 {
            self.add(u32::from_le_bytes(b[..4].try_into().expect("4 bytes")) as u64);
            b = &b[4..];
        }
        for &c in b {
            self.add(c as u64);
        }
    }
    #[inline]
    fn write_u8(&mut self, n: u8) {
        self.add(n as u64);
    }
    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.add(n as u64);
    }
    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }
    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        // The last step's high bits are the well-mixed ones; hashbrown takes its
        // control byte from the top seven.
        self.h.rotate_left(20).wrapping_mul(K)
    }
}

/// A `HashMap` with [`FastHasher`].
pub type FastMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<FastHasher>>;
/// A `HashSet` with [`FastHasher`].
pub type FastSet<K> = std::collections::HashSet<K, BuildHasherDefault<FastHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash};
    use std::path::Path;

    fn h<T: Hash>(t: &T) -> u64 {
        BuildHasherDefault::<FastHasher>::default().hash_one(t)
    }

    #[test]
    fn keys_that_differ_hash_apart() {
        let mut seen = std::collections::HashSet::new();
        for dev in 0..20u64 {
            for ino in 0..500u64 {
                assert!(seen.insert(h(&(dev, ino))), "({dev}, {ino})");
            }
        }
        let mut seen = std::collections::HashSet::new();
        for k in 0..10_000 {
            let p = format!(
                "/home/u/.codex/sessions/2026/12/{:02}/rollout-{k}.jsonl",
                k % 31
            );
            assert!(seen.insert(h(&Path::new(&p))), "{p}");
        }
        // Equal paths hash equal, however they are spelled.
        assert_eq!(h(&Path::new("/a/b/c")), h(&Path::new("/a//b/c/")));
        // The top bits vary (hashbrown's control byte).
        let tops: std::collections::HashSet<u64> = (0..1000u64).map(|k| h(&k) >> 57).collect();
        assert!(tops.len() > 100, "{}", tops.len());
        let mut m: FastMap<(u64, u64), u32> = FastMap::default();
        m.insert((1, 2), 3);
        assert_eq!(m[&(1, 2)], 3);
    }
}
