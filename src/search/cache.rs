//! An on-disk cache of hit-path maps ([`HitMap`]s: a format's map of a file's lines,
//! `crate::model::core::grep`), so that a second search of an unchanged big session
//! does not rebuild its map. What a map holds is its format's business (it writes and
//! reads its own bytes: [`HitMap::encode`], [`MapFormat::decode`]); the cache keeps
//! them, keyed by the file, checked, bounded and safe against crashes.
//!
//! Building the map costs a structural pass over every byte of the file; loading it
//! costs reading about 28 bytes a line and checking them. Only files of at least
//! [`MIN_SIZE`] are cached: below that the pass costs about what the trip to the
//! cache does. (At 8 MiB, an identifier found in 96 Pi sessions of 0.1 to 51 MB,
//! 4.5 MB the median, rebuilt the maps of all but the biggest at every search: 1 MiB
//! took the search's CPU from 0.61 to 0.52 s.)
//!
//! # Why a cached map is never used for a file that changed
//!
//! A map is stored under its file's key: device, inode, size, mtime and ctime (to the
//! nanosecond), and a hash of the file's first and last lines. Appending changes the
//! size; rewriting in place changes the mtime and ctime (and `touch -d` cannot set
//! ctime back); replacing the file (Pi and editors write a new file and rename it)
//! changes the inode. A map is read back only when the key stored with it is the key
//! of the open file now, byte for byte. A map is stored only when the key taken before
//! it was built is the key after: a file written during the build is not cached. And
//! the map covers exactly the key's size, so a line being written (no newline yet) is
//! in neither the map nor its key. Even so, a cached map is only a map: the lines on a
//! hit's path are still validated against the file as it is (the format's map does it).
//!
//! # What the cache survives
//!
//! * **Corruption.** Each file ends with a checksum of everything before it; a file
//!   that is short, garbled, of another version or for another key is ignored (and
//!   replaced by the next store), never trusted. The format checks the map's contents
//!   as it reads them (offsets in order and within the file, ids within their table)
//!   even when the checksum matches.
//! * **Crashes.** A map is written to a temporary file in the cache directory and
//!   renamed over the old one: a reader sees the old file or the new one, whole.
//! * **Growth.** The directory is bounded to [`MAX_BYTES`]: after a store, the files
//!   least recently used (by mtime, which a load refreshes) are removed until it fits.
//!   A file holds one map per session file (named by device and inode), so a session
//!   that grows replaces its map rather than adding one.
//!
//! # Where
//!
//! `$XDG_CACHE_HOME/sessionfs/hitpath-1` (`~/.cache/sessionfs/hitpath-1` when it is
//! unset or not absolute), never beside the sessions. `SESSIONFS_CACHE=off` turns it
//! off. Errors (a read-only home, a full disk) turn it off for that file, silently:
//! the cache only ever saves time.

use crate::model::core::grep::{HitMap, MapFormat};
use std::fs::{self, File, Metadata};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::SystemTime;

/// Files smaller than this are not cached.
pub const MIN_SIZE: u64 = 1 << 20;
/// The cache directory's bound.
pub const MAX_BYTES: u64 = 256 << 20;
/// The start of every cache file; a new layout gets a new one.
const MAGIC: &[u8; 8] = b"SFSHPv01";
/// How much of each end of a file the key hashes, at most.
const END_BYTES: u64 = 64 << 10;

/// Where maps are kept, and which files are worth it.
#[derive(Debug, Clone)]
pub struct Cache {
    dir: PathBuf,
    min_size: u64,
    max_bytes: u64,
}

/// What a map is stored under: its file as it was when the map was built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    ends: u64,
}

impl Key {
    /// The key of `f` now.
    pub fn of(f: &File) -> io::Result<Key> {
        let m = f.metadata()?;
        Key::with(f, &m)
    }

    fn with(f: &File, m: &Metadata) -> io::Result<Key> {
        Ok(Key {
            dev: m.dev(),
            ino: m.ino(),
            size: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
            ends: ends_hash(f, m.len())?,
        })
    }

    /// The size of the file it was taken of: the bytes a map under it covers.
    pub fn size(&self) -> u64 {
        self.size
    }

    fn bytes(&self) -> [u8; 64] {
        let mut b = [0u8; 64];
        for (k, v) in [
            self.dev,
            self.ino,
            self.size,
            self.mtime.0 as u64,
            self.mtime.1 as u64,
            self.ctime.0 as u64,
            self.ctime.1 as u64,
            self.ends,
        ]
        .into_iter()
        .enumerate()
        {
            b[k * 8..k * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
        b
    }

    fn file_name(&self) -> String {
        format!("{:x}-{:x}.map", self.dev, self.ino)
    }
}

/// A hash of the first line and the last line of the first `size` bytes of `f` (each
/// cut to [`END_BYTES`]).
fn ends_hash(f: &File, size: u64) -> io::Result<u64> {
    let n = size.min(END_BYTES);
    let mut head = vec![0; n as usize];
    f.read_exact_at(&mut head, 0)?;
    let first = memchr::memchr(b'\n', &head).map_or(&head[..], |k| &head[..=k]);
    let mut tail = vec![0; n as usize];
    f.read_exact_at(&mut tail, size - n)?;
    let body = &tail[..tail.len().saturating_sub(1)];
    let last = &tail[memchr::memrchr(b'\n', body).map_or(0, |k| k + 1)..];
    Ok(checksum(first) ^ checksum(last).rotate_left(17))
}

/// A 64-bit hash of `b`, word by word: each step is a bijection of the state, so
/// two inputs of one length that differ in one word always differ.
fn checksum(b: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = 0x243F_6A88_85A3_08D3 ^ (b.len() as u64).wrapping_mul(K);
    let mut words = b.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        h = (h ^ w).wrapping_mul(K).rotate_left(29);
    }
    for &x in words.remainder() {
        h = (h ^ x as u64).wrapping_mul(K).rotate_left(29);
    }
    h ^ (h >> 31)
}

/// `$XDG_CACHE_HOME/sessionfs` (`~/.cache/sessionfs` when it is unset or not
/// absolute), where every cache of sessionfs lives; `None` when `SESSIONFS_CACHE` is
/// `off` (or `0`, `no`, `false`) or there is no home.
pub fn base_dir(
    switch: Option<&std::ffi::OsStr>,
    xdg: Option<&std::ffi::OsStr>,
    home: Option<&std::ffi::OsStr>,
) -> Option<PathBuf> {
    if switch.is_some_and(|s| matches!(s.to_str(), Some("off" | "0" | "no" | "false"))) {
        return None;
    }
    let base = match xdg.map(Path::new).filter(|p| p.is_absolute()) {
        Some(x) => x.to_path_buf(),
        None => Path::new(home.filter(|h| !h.is_empty())?).join(".cache"),
    };
    Some(base.join("sessionfs"))
}

/// [`base_dir`] from this process's environment.
pub fn base_dir_from_env() -> Option<PathBuf> {
    base_dir(
        std::env::var_os("SESSIONFS_CACHE").as_deref(),
        std::env::var_os("XDG_CACHE_HOME").as_deref(),
        std::env::var_os("HOME").as_deref(),
    )
}

impl Cache {
    /// The cache of this process, from the environment; `None` when it is off or has
    /// no home.
    pub fn global() -> Option<&'static Cache> {
        static CACHE: OnceLock<Option<Cache>> = OnceLock::new();
        CACHE
            .get_or_init(|| {
                Cache::from_env(
                    std::env::var_os("SESSIONFS_CACHE").as_deref(),
                    std::env::var_os("XDG_CACHE_HOME").as_deref(),
                    std::env::var_os("HOME").as_deref(),
                )
            })
            .as_ref()
    }

    fn from_env(
        switch: Option<&std::ffi::OsStr>,
        xdg: Option<&std::ffi::OsStr>,
        home: Option<&std::ffi::OsStr>,
    ) -> Option<Cache> {
        Some(Cache::at(base_dir(switch, xdg, home)?.join("hitpath-1")))
    }

    /// A cache in `dir` with the default bounds.
    pub fn at(dir: PathBuf) -> Cache {
        Cache {
            dir,
            min_size: MIN_SIZE,
            max_bytes: MAX_BYTES,
        }
    }

    /// The key under which `f`'s map would be kept, if `f` is worth caching.
    pub fn key(&self, f: &File) -> Option<Key> {
        let m = f.metadata().ok()?;
        if m.len() < self.min_size {
            return None;
        }
        Key::with(f, &m).ok()
    }

    /// The map stored under `key`, in `format`, if there is one, intact.
    pub fn load(&self, key: &Key, format: &dyn MapFormat) -> Option<Box<dyn HitMap>> {
        let p = self.dir.join(key.file_name());
        let f = crate::model::input::open_regular(&p).ok()?;
        let len = f.metadata().ok()?.len();
        if len > self.max_bytes {
            return None;
        }
        let mut bytes = vec![0; len as usize];
        f.read_exact_at(&mut bytes, 0).ok()?;
        let ix = decode(&bytes, key, format)?;
        // Used now: last to be evicted.
        let _ = f.set_modified(SystemTime::now());
        Some(ix)
    }

    /// Stores `ix`, built from `f` under `key`, if `f` has not changed since; then
    /// trims the directory to its bound. Errors are ignored: the cache is only a
    /// saving.
    pub fn store(&self, f: &File, key: &Key, ix: &dyn HitMap) {
        if Key::of(f).ok().as_ref() != Some(key) {
            return;
        }
        let bytes = encode(ix, key);
        if bytes.len() as u64 > self.max_bytes / 4 {
            return;
        }
        if self.write(&key.file_name(), &bytes).is_ok() {
            self.trim();
        }
    }

    fn write(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        crate::model::core::memo::private_dir(&self.dir)?;
        let tmp = self.dir.join(format!(
            ".tmp-{}-{:x}",
            std::process::id(),
            crate::model::id::random_u32()
        ));
        let done = File::create(&tmp)
            .and_then(|mut t| t.write_all(bytes))
            .and_then(|()| fs::rename(&tmp, self.dir.join(name)));
        if done.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        done
    }

    /// Removes the least recently used files until the directory fits its bound.
    fn trim(&self) {
        let Ok(rd) = fs::read_dir(&self.dir) else {
            return;
        };
        let mut files: Vec<(SystemTime, u64, PathBuf)> = rd
            .flatten()
            .filter_map(|e| {
                let m = e.metadata().ok()?;
                if !m.is_file() {
                    return None;
                }
                Some((m.modified().ok()?, m.len(), e.path()))
            })
            .collect();
        let mut total: u64 = files.iter().map(|f| f.1).sum();
        files.sort();
        for (_, len, p) in files {
            if total <= self.max_bytes {
                break;
            }
            if fs::remove_file(&p).is_ok() {
                total -= len;
            }
        }
    }
}

/// A cache file: [`MAGIC`], the key, the map as its format writes it, and the
/// checksum of all that.
fn encode(ix: &dyn HitMap, key: &Key) -> Vec<u8> {
    let payload = ix.encode();
    let mut b = Vec::with_capacity(8 + 64 + payload.len() + 8);
    b.extend_from_slice(MAGIC);
    b.extend_from_slice(&key.bytes());
    b.extend_from_slice(&payload);
    let sum = checksum(&b);
    b.extend_from_slice(&sum.to_le_bytes());
    b
}

/// Reads [`encode`]'s bytes back, if they are intact, for `key` and in `format`.
fn decode(b: &[u8], key: &Key, format: &dyn MapFormat) -> Option<Box<dyn HitMap>> {
    let (body, sum) = b.split_at_checked(b.len().checked_sub(8)?)?;
    if checksum(body).to_le_bytes() != sum {
        return None;
    }
    let (magic, rest) = body.split_at_checked(8)?;
    let (k, payload) = rest.split_at_checked(64)?;
    if magic != MAGIC || k != key.bytes() {
        return None;
    }
    format.decode(payload, key.size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::core::grep::{HitPaths, LineSource};
    use std::fs::OpenOptions;

    /// The map format of Pi's current files, whose sessions these tests write.
    fn pi_map() -> &'static dyn MapFormat {
        match crate::search::rules::named("pi").and_then(|r| r.hit_paths) {
            Some(HitPaths::Map(m)) => m,
            _ => panic!("Pi's rules place hits with a map"),
        }
    }

    /// The map of the first `size` bytes of `f`, built.
    fn build(f: &File, size: u64) -> Box<dyn HitMap> {
        let mut b = pi_map().builder(size);
        b.read(f, size, &mut Vec::new()).unwrap();
        b.finish().unwrap()
    }

    const HEADER: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/x"}"#;

    /// A session of `n` entries in one chain (ids `a0000000` on, one odd id that the
    /// table interns), each line padded to the same length.
    fn session(n: u32, pad: &str) -> String {
        let mut s = format!("{HEADER}\n");
        for i in 0..n {
            let id = if i == 3 {
                "not-hex".to_string()
            } else {
                format!("{:08x}", 0xa000_0000u32 + i)
            };
            let parent = match i {
                0 => "null".to_string(),
                4 => "\"not-hex\"".to_string(),
                _ => format!("\"{:08x}\"", 0xa000_0000u32 + i - 1),
            };
            s.push_str(&format!(
                r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2025-01-01T00:00:00.000Z","message":{{"role":"user","content":"{pad}"}}}}"#
            ));
            s.push('\n');
        }
        s
    }

    /// A cache that takes files of any size, in a temporary directory.
    fn cache(dir: &Path) -> Cache {
        Cache {
            dir: dir.join("cache"),
            min_size: 0,
            max_bytes: MAX_BYTES,
        }
    }

    /// What a search would do: the cached map if its key is the file's, else one
    /// built and stored. Returns the map and whether it came from the cache.
    fn lookup(c: &Cache, f: &File) -> (Box<dyn HitMap>, bool) {
        let key = c.key(f).unwrap();
        if let Some(ix) = c.load(&key, pi_map()) {
            return (ix, true);
        }
        let ix = build(f, key.size());
        c.store(f, &key, &*ix);
        (ix, false)
    }

    /// The path of the line at `offset` (its directory names).
    fn path_at(ix: &dyn HitMap, f: &File, text: &str, nth: usize) -> Vec<String> {
        let line = text.lines().nth(nth).unwrap();
        let offset = text.lines().take(nth).map(|l| l.len() + 1).sum::<usize>() as u64;
        let mut src: &File = f;
        let src: &mut dyn LineSource = &mut src;
        let got = ix.paths(&[(offset, line.len())], src).unwrap().unwrap();
        got.into_iter().next().unwrap().dirs
    }

    #[test]
    fn a_map_round_trips_and_is_served_while_the_file_is_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        let text = session(50, "hello");
        fs::write(&p, &text).unwrap();
        let c = cache(dir.path());
        let f = File::open(&p).unwrap();
        let (built, hit) = lookup(&c, &f);
        assert!(!hit);
        let (loaded, hit) = lookup(&c, &f);
        assert!(hit, "the second lookup is served from the cache");
        assert_eq!(built.lines(), loaded.lines());
        for n in [1, 4, 5, 50] {
            assert_eq!(
                path_at(&*built, &f, &text, n),
                path_at(&*loaded, &f, &text, n)
            );
        }
        assert_eq!(path_at(&*loaded, &f, &text, 5)[3], "not-hex");
        // Nothing is written beside the session.
        let beside: Vec<_> = fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(beside.len(), 2, "{beside:?}");
    }

    #[test]
    fn a_changed_file_is_never_served_from_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        let c = cache(dir.path());
        let text = session(20, "aaaa");
        fs::write(&p, &text).unwrap();
        lookup(&c, &File::open(&p).unwrap());
        assert!(lookup(&c, &File::open(&p).unwrap()).1);

        // Appended: a complete line, then one being written (no newline yet).
        let mut a = OpenOptions::new().append(true).open(&p).unwrap();
        a.write_all(b"{\"type\":\"message\",\"id\":\"b0000000\",\"parentId\":\"a0000013\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n").unwrap();
        let f = File::open(&p).unwrap();
        let (ix, hit) = lookup(&c, &f);
        assert!(!hit, "appended");
        assert_eq!(ix.lines(), 21);
        a.write_all(b"{\"type\":\"message\",\"id\":\"b0000001\"")
            .unwrap();
        let (ix, hit) = lookup(&c, &File::open(&p).unwrap());
        assert!(!hit, "a line being written");
        assert_eq!(ix.lines(), 21, "the line being written is no entry");
        a.write_all(b",\"parentId\":\"b0000000\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"message\":{\"role\":\"user\",\"content\":\"y\"}}\n").unwrap();
        let (ix, hit) = lookup(&c, &File::open(&p).unwrap());
        assert!(!hit, "the line finished");
        assert_eq!(ix.lines(), 22);

        // Rewritten in place, same size, first and last lines kept, mtime set back:
        // the ctime still differs.
        let before = fs::metadata(&p).unwrap();
        let mut bytes = fs::read(&p).unwrap();
        let third = bytes.len() / 3;
        let at = third + memchr::memmem::find(&bytes[third..], b"aaaa").unwrap();
        bytes[at] = b'b';
        std::thread::sleep(std::time::Duration::from_millis(20));
        let w = OpenOptions::new().write(true).open(&p).unwrap();
        w.write_all_at(&bytes, 0).unwrap();
        w.set_modified(before.modified().unwrap()).unwrap();
        drop(w);
        let after = fs::metadata(&p).unwrap();
        assert_eq!(
            (after.len(), after.mtime_nsec()),
            (before.len(), before.mtime_nsec())
        );
        assert!(
            !lookup(&c, &File::open(&p).unwrap()).1,
            "rewritten in place"
        );
        assert!(lookup(&c, &File::open(&p).unwrap()).1);

        // Same size, another mtime.
        let w = OpenOptions::new().write(true).open(&p).unwrap();
        w.set_modified(SystemTime::UNIX_EPOCH).unwrap();
        drop(w);
        assert!(!lookup(&c, &File::open(&p).unwrap()).1, "another mtime");

        // Replaced by another file (another inode) of the same size.
        let q = dir.path().join("new.jsonl");
        fs::write(&q, fs::read(&p).unwrap()).unwrap();
        fs::rename(&q, &p).unwrap();
        assert!(!lookup(&c, &File::open(&p).unwrap()).1, "replaced");
    }

    #[test]
    fn the_key_sees_the_first_and_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        fs::write(&p, session(5, "aaaa")).unwrap();
        let k1 = Key::of(&File::open(&p).unwrap()).unwrap();
        let mut b = fs::read(&p).unwrap();
        let n = b.len();
        b[n - 5] = b'x';
        let f = OpenOptions::new().read(true).write(true).open(&p).unwrap();
        f.write_all_at(&b, 0).unwrap();
        let m = f.metadata().unwrap();
        let k2 = Key::of(&f).unwrap();
        assert_ne!(k1.ends, k2.ends);
        assert_eq!(k1.size, m.len());
    }

    #[test]
    fn a_damaged_cache_file_is_ignored_and_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        let text = session(30, "hello");
        fs::write(&p, &text).unwrap();
        let c = cache(dir.path());
        let f = File::open(&p).unwrap();
        let key = c.key(&f).unwrap();
        lookup(&c, &f);
        let stored = c.dir.join(key.file_name());
        let good = fs::read(&stored).unwrap();
        let mut damaged: Vec<Vec<u8>> = vec![
            Vec::new(),
            good[..good.len() / 2].to_vec(),
            good[..good.len() - 1].to_vec(),
            b"garbage".to_vec(),
        ];
        for at in [0, 9, 80, 100, good.len() / 2, good.len() - 1] {
            let mut g = good.clone();
            g[at] ^= 0x40;
            damaged.push(g);
        }
        // Valid checksum, wrong contents: offsets out of order.
        let mut g = good[..good.len() - 8].to_vec();
        let first_line = 8 + 64 + 16;
        g[first_line..first_line + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        let sum = checksum(&g);
        g.extend_from_slice(&sum.to_le_bytes());
        damaged.push(g);
        for (n, bad) in damaged.iter().enumerate() {
            fs::write(&stored, bad).unwrap();
            assert!(
                c.load(&key, pi_map()).is_none(),
                "damaged file {n} was trusted"
            );
            let (ix, hit) = lookup(&c, &f);
            assert!(!hit);
            assert_eq!(path_at(&*ix, &f, &text, 30).len(), 30);
            assert_eq!(fs::read(&stored).unwrap(), good, "rebuilt");
        }
        // Another key's map is not this file's.
        let mut other = key.clone();
        other.size += 1;
        assert!(c.load(&other, pi_map()).is_none());
    }

    #[test]
    fn the_directory_is_bounded_oldest_first() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = cache(dir.path());
        let mut names = Vec::new();
        for n in 0..6 {
            let p = dir.path().join(format!("s{n}.jsonl"));
            fs::write(&p, session(40, "x")).unwrap();
            let f = File::open(&p).unwrap();
            names.push(c.key(&f).unwrap().file_name());
            if n == 0 {
                let one = {
                    lookup(&c, &f);
                    fs::metadata(c.dir.join(&names[0])).unwrap().len()
                };
                // Room for four maps and a half (a map over a quarter of the bound
                // is not stored at all).
                c.max_bytes = one * 9 / 2;
                continue;
            }
            // Each map older than the next.
            std::thread::sleep(std::time::Duration::from_millis(20));
            lookup(&c, &f);
        }
        let kept: Vec<bool> = names.iter().map(|n| c.dir.join(n).exists()).collect();
        assert_eq!(kept, [false, false, true, true, true, true]);
    }

    #[test]
    fn the_environment_chooses_the_directory_or_turns_it_off() {
        use std::ffi::OsStr;
        let on = |s, x, h| Cache::from_env(s, x, h).map(|c| c.dir);
        let x = Some(OsStr::new("/x"));
        let h = Some(OsStr::new("/home/u"));
        assert_eq!(
            on(None, x, h),
            Some(PathBuf::from("/x/sessionfs/hitpath-1"))
        );
        assert_eq!(
            on(None, Some(OsStr::new("rel")), h),
            Some(PathBuf::from("/home/u/.cache/sessionfs/hitpath-1"))
        );
        assert_eq!(on(Some(OsStr::new("off")), x, h), None);
        assert_eq!(on(None, None, None), None);
    }
}
