//! Compact entry ids.
//!
//! Pi's entry ids are almost always 8 lowercase hex digits (the first 8 characters of a
//! UUID), so an id is kept as a `u64` key: the hex value itself for those, and an index
//! into an interning table for anything else (a full UUID fallback, a hand-written id,
//! a name that is not even a valid file name). This keeps the per-entry index small
//! (see the memory budget in `session`), while any string Pi accepts is still an id.

use std::collections::HashMap;

/// A hasher for [`IdKey`]s: hex ids are already uniformly random, so one multiply
/// mixes enough (SipHash cost a tenth of indexing time).
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0 ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// `HashMap`/`HashSet` state for [`IdKey`] keys.
pub type IdBuild = std::hash::BuildHasherDefault<IdHasher>;

/// An entry id, interned. Equal ids have equal keys within one [`IdTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IdKey(u64);

const INTERNED: u64 = 1 << 62;

impl IdKey {
    /// No id at all: `parentId` null or missing, or an entry without `id`.
    pub const NONE: IdKey = IdKey(u64::MAX);

    pub fn is_none(self) -> bool {
        self == IdKey::NONE
    }

    /// The key of an 8-lowercase-hex id, without touching any table.
    pub fn from_hex8(s: &str) -> Option<IdKey> {
        let b = s.as_bytes();
        if b.len() != 8 {
            return None;
        }
        let mut v: u64 = 0;
        for &c in b {
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                _ => return None,
            };
            v = (v << 4) | d as u64;
        }
        Some(IdKey(v))
    }

    pub fn from_u32(v: u32) -> IdKey {
        IdKey(v as u64)
    }

    /// The raw value, for hashing into derived ids.
    pub fn raw(self) -> u64 {
        self.0
    }
}

/// Interning table for ids that are not 8 lowercase hex digits.
#[derive(Default, Debug, Clone)]
pub struct IdTable {
    strings: Vec<Box<str>>,
    lookup: HashMap<Box<str>, u32>,
}

impl IdTable {
    /// Returns the key for `s`, interning it if needed.
    pub fn intern(&mut self, s: &str) -> IdKey {
        if let Some(k) = IdKey::from_hex8(s) {
            return k;
        }
        if let Some(&i) = self.lookup.get(s) {
            return IdKey(INTERNED | i as u64);
        }
        let i = self.strings.len() as u32;
        self.strings.push(s.into());
        self.lookup.insert(s.into(), i);
        IdKey(INTERNED | i as u64)
    }

    /// Returns the key for `s` if `s` is a known id (or a hex id), without interning.
    pub fn get(&self, s: &str) -> Option<IdKey> {
        if let Some(k) = IdKey::from_hex8(s) {
            return Some(k);
        }
        self.lookup.get(s).map(|&i| IdKey(INTERNED | i as u64))
    }

    /// The id as a string. `NONE` has no string.
    pub fn resolve(&self, k: IdKey) -> Option<std::borrow::Cow<'_, str>> {
        if k.is_none() {
            None
        } else if k.0 & INTERNED != 0 {
            Some(std::borrow::Cow::Borrowed(
                &self.strings[(k.0 & !INTERNED) as usize],
            ))
        } else {
            Some(std::borrow::Cow::Owned(format!("{:08x}", k.0)))
        }
    }

    /// Appends the id `k` stands for to `out` (as [`IdTable::resolve`] spells it, without
    /// allocating); `false` for [`IdKey::NONE`].
    pub fn write_to(&self, k: IdKey, out: &mut Vec<u8>) -> bool {
        if k.is_none() {
            false
        } else if k.0 & INTERNED != 0 {
            out.extend_from_slice(self.strings[(k.0 & !INTERNED) as usize].as_bytes());
            true
        } else {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            for shift in (0..8).rev() {
                out.push(HEX[((k.0 >> (shift * 4)) & 0xf) as usize]);
            }
            true
        }
    }

    /// Bytes held by the interned strings and their lookup table (approximate).
    pub fn heap_bytes(&self) -> usize {
        self.strings.iter().map(|s| s.len() * 2 + 48).sum::<usize>()
    }
}

/// A UUID's 16 bytes as text, `8-4-4-4-12` lowercase hex digits, as the agents write
/// them (Claude Code's line and session ids, Pi's session ids).
pub fn uuid_string(b: &[u8; 16]) -> String {
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// A random `u32` from the kernel.
pub fn random_u32() -> u32 {
    let mut b = [0u8; 4];
    // SAFETY: the buffer is valid for 4 bytes.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), 4, 0) };
    if n != 4 {
        // Practically unreachable; fall back to the clock mixed with the pid.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos() as u64;
        return (t ^ (t >> 32) ^ std::process::id() as u64) as u32;
    }
    u32::from_ne_bytes(b)
}

/// The derived id of the v1 entry at index `idx`: 8 hex digits from a hash of the
/// session id and `idx`, re-drawn while `taken` says it is in use.
pub fn v1_id(session_id: &str, idx: u32, taken: impl Fn(IdKey) -> bool) -> IdKey {
    let mut attempt: u32 = 0;
    loop {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in session_id
            .bytes()
            .chain(idx.to_le_bytes())
            .chain(attempt.to_le_bytes())
        {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        // Fold to 32 bits (xor-shift mixes the high bits in).
        h ^= h >> 29;
        h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h ^= h >> 32;
        let k = IdKey::from_u32(h as u32);
        if !taken(k) {
            return k;
        }
        attempt += 1;
    }
}

/// A UUID v7 (RFC 9562) for the time `ms`, as Pi 1.6 makes session ids.
pub fn uuid_v7(ms: i64) -> String {
    let mut b = [0u8; 16];
    for chunk in b.chunks_mut(4) {
        chunk.copy_from_slice(&random_u32().to_ne_bytes());
    }
    let ms = ms.max(0) as u64;
    b[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
    b[6] = (b[6] & 0x0f) | 0x70;
    b[8] = (b[8] & 0x3f) | 0x80;
    uuid_string(&b)
}

/// A random UUID v4, as Claude Code's and Codex's `randomUUID()` make them.
pub fn uuid_v4() -> String {
    let mut b = [0u8; 16];
    for chunk in b.chunks_mut(4) {
        chunk.copy_from_slice(&random_u32().to_ne_bytes());
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    uuid_string(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_ids_need_no_table() {
        let t = IdTable::default();
        let k = IdKey::from_hex8("0a1b2c3d").unwrap();
        assert_eq!(t.resolve(k).unwrap(), "0a1b2c3d");
        assert_eq!(IdKey::from_hex8("0A1B2C3D"), None);
        assert_eq!(IdKey::from_hex8("0a1b2c3"), None);
    }

    #[test]
    fn other_ids_are_interned_once() {
        let mut t = IdTable::default();
        let a = t.intern("reply");
        let b = t.intern("../x");
        assert_ne!(a, b);
        assert_eq!(t.intern("reply"), a);
        assert_eq!(t.get("../x"), Some(b));
        assert_eq!(t.get("nope"), None);
        assert_eq!(t.resolve(b).unwrap(), "../x");
        assert_eq!(t.intern(""), t.get("").unwrap());
    }
}
