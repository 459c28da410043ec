//! Where the index lives, and how it changes without a reader ever seeing it half
//! changed.
//!
//! `$XDG_CACHE_HOME/sessionfs/index-1/` (`~/.cache/sessionfs/index-1/`) holds:
//!
//! * `manifest`: what the index covers. For each session file it has indexed, by
//!   device and inode: the file as it was when last verified (size, mtime, ctime,
//!   when it was read), how many of its bytes are indexed and their hash, its
//!   format, and the segments holding its blocks; and the list of segments with
//!   their lengths. It ends with a checksum of everything before it.
//! * `seg-N.six`: the segments ([`super::segment`]), never changed once written.
//! * `lock`: held (`flock`) by the one process that changes the index at a time.
//!
//! **Publishing.** A writer takes the lock, writes new segments under temporary
//! names and renames them into place, then writes the new manifest the same way and
//! renames it over the old one: a reader opens either the old manifest or the new
//! one, whole, and each names only complete segments. Segments no manifest names any
//! more are removed after the rename. A reader that opened the old manifest and then
//! finds one of its segments gone, short or garbled searches the files that segment
//! covered without the index: correct, only slower. The same holds after `kill -9` at
//! any point: what was not renamed into place is a temporary file, removed by the
//! next writer once it is an hour old.
//!
//! **Damage.** A manifest that is short, garbled, of another version or made for
//! other formats (its fingerprint, [`Manifest::fingerprint`]) is not used: the index
//! starts again empty, and the next writer replaces it.
//!
//! **Concurrent writers.** Only the lock holder writes. `sessionfs grep` tries the
//! lock and, when another process holds it, searches with what is published (and
//! scans the rest); `sessionfs index` waits for it.

use super::segment::damaged;
use crate::model::core::input;
use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"SFSIXM01";
/// The largest manifest read (a few hundred bytes per session file).
const MANIFEST_MAX: u64 = 4 << 30;

/// The directory's name under the cache directory: a new layout gets a new one.
pub const DIR_NAME: &str = "index-1";

pub use crate::model::core::stamp::Stamp;

/// What the index knows of one session file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The key of this version of the file's content in the segments: a new one is
    /// taken whenever the file is indexed again from its start.
    pub id: u64,
    pub dev: u64,
    pub ino: u64,
    /// Where it was last seen (to notice it gone).
    pub path: PathBuf,
    /// The file when it was last verified.
    pub size: u64,
    pub mtime: Stamp,
    pub ctime: Stamp,
    /// The clock when its content was last read (indexed or verified), after the read.
    pub verified_at: Stamp,
    /// Its first `covered` bytes (whole lines) are indexed.
    pub covered: u64,
    /// The hash of those bytes ([`super::hash`]).
    pub hash: u64,
    /// The name of its format, or empty when none is known (then it is not indexed).
    pub format: String,
    /// What else is known: [`Entry::CAPPED`].
    pub flags: u32,
    /// The segments holding its blocks.
    pub segs: Vec<u32>,
}

impl Entry {
    /// The index was full when the file came: it is searched without the index.
    pub const CAPPED: u32 = 1;
}

/// A segment the manifest names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegInfo {
    pub no: u32,
    pub len: u64,
}

/// The index's table of contents.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    /// What the index was built for: the formats and probes it knows (their
    /// definitions hashed). A manifest of another fingerprint is not used.
    pub fingerprint: u64,
    pub next_id: u64,
    pub next_seg: u32,
    pub segments: Vec<SegInfo>,
    pub entries: Vec<Entry>,
}

impl Manifest {
    /// The keys of blocks some entry names: a merge leaves out the others.
    pub fn live_keys(&self) -> HashSet<u64> {
        self.entries
            .iter()
            .filter(|e| e.id != 0)
            .map(|e| e.id)
            .collect()
    }

    /// An empty manifest for `fingerprint`.
    pub fn empty(fingerprint: u64) -> Manifest {
        Manifest {
            fingerprint,
            next_id: 1,
            next_seg: 1,
            ..Manifest::default()
        }
    }

    /// The total length of its segments.
    pub fn bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.len).sum()
    }

    /// Entries by device and inode.
    pub fn by_inode(&self) -> crate::model::core::fasthash::FastMap<(u64, u64), usize> {
        self.entries
            .iter()
            .enumerate()
            .map(|(k, e)| ((e.dev, e.ino), k))
            .collect()
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(64 + self.entries.len() * 160);
        b.extend_from_slice(MAGIC);
        b.extend_from_slice(&self.fingerprint.to_le_bytes());
        b.extend_from_slice(&self.next_id.to_le_bytes());
        b.extend_from_slice(&self.next_seg.to_le_bytes());
        b.extend_from_slice(&(self.segments.len() as u32).to_le_bytes());
        for s in &self.segments {
            b.extend_from_slice(&s.no.to_le_bytes());
            b.extend_from_slice(&s.len.to_le_bytes());
        }
        b.extend_from_slice(&(self.entries.len() as u32).to_le_bytes());
        for e in &self.entries {
            for v in [e.id, e.dev, e.ino, e.size] {
                b.extend_from_slice(&v.to_le_bytes());
            }
            for (s, ns) in [e.mtime, e.ctime, e.verified_at] {
                b.extend_from_slice(&s.to_le_bytes());
                b.extend_from_slice(&ns.to_le_bytes());
            }
            b.extend_from_slice(&e.covered.to_le_bytes());
            b.extend_from_slice(&e.hash.to_le_bytes());
            b.extend_from_slice(&e.flags.to_le_bytes());
            b.extend_from_slice(&(e.format.len() as u32).to_le_bytes());
            b.extend_from_slice(e.format.as_bytes());
            let p = e.path.as_os_str().as_bytes();
            b.extend_from_slice(&(p.len() as u32).to_le_bytes());
            b.extend_from_slice(p);
            b.extend_from_slice(&(e.segs.len() as u32).to_le_bytes());
            for s in &e.segs {
                b.extend_from_slice(&s.to_le_bytes());
            }
        }
        let sum = super::hash::hash(&b);
        b.extend_from_slice(&sum.to_le_bytes());
        b
    }

    /// Reads [`Manifest::encode`]'s bytes back, if they are intact.
    pub fn decode(b: &[u8]) -> io::Result<Manifest> {
        let bad = || damaged("the manifest");
        let (body, sum) = b
            .split_at_checked(b.len().checked_sub(8).ok_or_else(bad)?)
            .ok_or_else(bad)?;
        if super::hash::hash(body).to_le_bytes() != sum {
            return Err(bad());
        }
        let mut r = Reader(body);
        if r.take(8)? != MAGIC {
            return Err(damaged("a manifest of another version"));
        }
        let mut m = Manifest {
            fingerprint: r.u64()?,
            next_id: r.u64()?,
            next_seg: r.u32()?,
            ..Manifest::default()
        };
        let nsegs = r.u32()? as usize;
        for _ in 0..nsegs {
            m.segments.push(SegInfo {
                no: r.u32()?,
                len: r.u64()?,
            });
        }
        let n = r.u32()? as usize;
        for _ in 0..n {
            let (id, dev, ino, size) = (r.u64()?, r.u64()?, r.u64()?, r.u64()?);
            let mtime = (r.i64()?, r.i64()?);
            let ctime = (r.i64()?, r.i64()?);
            let verified_at = (r.i64()?, r.i64()?);
            let (covered, hash, flags) = (r.u64()?, r.u64()?, r.u32()?);
            let fl = r.u32()? as usize;
            let format = String::from_utf8(r.take(fl)?.to_vec()).map_err(|_| bad())?;
            let pl = r.u32()? as usize;
            let path = PathBuf::from(std::ffi::OsStr::from_bytes(r.take(pl)?));
            let ns = r.u32()? as usize;
            if ns > m.segments.len() {
                return Err(bad());
            }
            let mut segs = Vec::with_capacity(ns);
            for _ in 0..ns {
                let s = r.u32()?;
                if !m.segments.iter().any(|x| x.no == s) {
                    return Err(damaged("the manifest names a segment it does not list"));
                }
                segs.push(s);
            }
            if covered > size || id >= m.next_id {
                return Err(bad());
            }
            m.entries.push(Entry {
                id,
                dev,
                ino,
                path,
                size,
                mtime,
                ctime,
                verified_at,
                covered,
                hash,
                format,
                flags,
                segs,
            });
        }
        if !r.0.is_empty() {
            return Err(bad());
        }
        Ok(m)
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> io::Result<&'a [u8]> {
        let (a, b) = self
            .0
            .split_at_checked(n)
            .ok_or_else(|| damaged("the manifest is short"))?;
        self.0 = b;
        Ok(a)
    }
    fn u64(&mut self) -> io::Result<u64> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    fn i64(&mut self) -> io::Result<i64> {
        Ok(self.u64()? as i64)
    }
    fn u32(&mut self) -> io::Result<u32> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
}

/// The index's directory.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

/// The writers' lock, held while it lives.
pub struct Lock {
    _file: File,
}

impl Store {
    /// The index of this process's environment (`None` with `SESSIONFS_CACHE=off` or
    /// no home).
    pub fn from_env() -> Option<Store> {
        Some(Store::at(
            crate::search::cache::base_dir_from_env()?.join(DIR_NAME),
        ))
    }

    pub fn at(dir: PathBuf) -> Store {
        Store { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn manifest_path(&self) -> PathBuf {
        self.dir.join("manifest")
    }

    pub fn seg_path(&self, no: u32) -> PathBuf {
        self.dir.join(format!("seg-{no}.six"))
    }

    /// A fresh temporary name in the directory.
    pub fn temp_path(&self) -> PathBuf {
        self.dir.join(format!(
            ".tmp-{}-{:08x}",
            std::process::id(),
            crate::model::id::random_u32()
        ))
    }

    /// The published manifest: `Ok(None)` when there is none, an error when it cannot
    /// be read or trusted.
    pub fn read_manifest(&self) -> io::Result<Option<Manifest>> {
        // Through the core's opener: a FIFO or a device put in its place is refused, not
        // waited on.
        let read = input::open_regular(&self.manifest_path())
            .and_then(|f| input::read_bounded(f, MANIFEST_MAX));
        match read {
            Ok(b) => Manifest::decode(&b).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Takes the writers' lock: waiting for it with `wait`, else `None` when another
    /// process holds it.
    pub fn lock(&self, wait: bool) -> io::Result<Option<Lock>> {
        // Its owner's alone: the manifest names the sessions, the segments hold
        // their words.
        crate::model::core::memo::private_dir(&self.dir)?;
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.dir.join("lock"))?;
        let op = if wait {
            libc::LOCK_EX
        } else {
            libc::LOCK_EX | libc::LOCK_NB
        };
        loop {
            // SAFETY: flock on a descriptor this function owns.
            let r = unsafe { libc::flock(f.as_raw_fd(), op) };
            if r == 0 {
                return Ok(Some(Lock { _file: f }));
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EWOULDBLOCK) => return Ok(None),
                _ => return Err(e),
            }
        }
    }

    /// One more than the highest number of a segment in the directory (1 if none).
    pub fn first_free_segment(&self) -> u32 {
        fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name();
                name.to_str()?
                    .strip_prefix("seg-")?
                    .strip_suffix(".six")?
                    .parse::<u32>()
                    .ok()
            })
            .max()
            .map_or(1, |n| n.saturating_add(1))
    }

    /// Renames the finished file `tmp` into place as segment `no`.
    pub fn place_segment(&self, tmp: &Path, no: u32, _lock: &Lock) -> io::Result<()> {
        fs::rename(tmp, self.seg_path(no))
    }

    /// Publishes `m`: written aside, renamed over the manifest; then removes the
    /// segments it does not name, and temporary files an hour old.
    pub fn publish(&self, m: &Manifest, _lock: &Lock) -> io::Result<()> {
        let tmp = self.temp_path();
        let done = File::create(&tmp)
            .and_then(|mut f| f.write_all(&m.encode()))
            .and_then(|()| {
                super::crash_point("manifest-written");
                fs::rename(&tmp, self.manifest_path())
            });
        if done.is_err() {
            let _ = fs::remove_file(&tmp);
            return done;
        }
        super::crash_point("manifest-renamed");
        self.sweep(m);
        Ok(())
    }

    /// Removes segments `m` does not name and stale temporary files.
    fn sweep(&self, m: &Manifest) {
        let Ok(rd) = fs::read_dir(&self.dir) else {
            return;
        };
        let now = std::time::SystemTime::now();
        for e in rd.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            let old_temp = name.starts_with(".tmp-")
                && e.metadata()
                    .ok()
                    .and_then(|md| md.modified().ok())
                    .and_then(|t| now.duration_since(t).ok())
                    .is_some_and(|d| d.as_secs() > 3600);
            let unnamed = name
                .strip_prefix("seg-")
                .and_then(|n| n.strip_suffix(".six"))
                .and_then(|n| n.parse::<u32>().ok())
                .is_some_and(|no| !m.segments.iter().any(|s| s.no == no));
            if old_temp || unnamed {
                let _ = fs::remove_file(e.path());
            }
        }
    }

    /// Removes the whole index; returns the bytes it held.
    pub fn remove(&self) -> io::Result<u64> {
        let mut freed = 0;
        match fs::read_dir(&self.dir) {
            Ok(rd) => {
                for e in rd.flatten() {
                    freed += e.metadata().map(|m| m.len()).unwrap_or(0);
                    fs::remove_file(e.path())?;
                }
                fs::remove_dir(&self.dir)?;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        Ok(freed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: u64) -> Entry {
        Entry {
            id,
            dev: 1,
            ino: id + 10,
            path: PathBuf::from(format!("/x/{id}.jsonl")),
            size: 100,
            mtime: (1, 2),
            ctime: (3, 4),
            verified_at: (5, 6),
            covered: 90,
            hash: 77,
            format: "pi".into(),
            flags: 0,
            segs: vec![1],
        }
    }

    #[test]
    fn manifest_round_trip_and_damage() {
        let mut m = Manifest::empty(42);
        m.segments.push(SegInfo { no: 1, len: 500 });
        m.entries.push(entry(1));
        m.entries.push(entry(2));
        m.next_id = 3;
        let b = m.encode();
        assert_eq!(Manifest::decode(&b).unwrap(), m);
        for cut in 0..b.len() {
            assert!(Manifest::decode(&b[..cut]).is_err());
        }
        for at in 0..b.len() {
            let mut x = b.clone();
            x[at] ^= 1;
            assert!(Manifest::decode(&x).is_err(), "{at}");
        }
    }

    #[test]
    fn publish_sweeps_and_locks() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::at(d.path().join("ix"));
        assert_eq!(s.read_manifest().unwrap(), None);
        let lock = s.lock(false).unwrap().unwrap();
        // A second writer does not get it.
        assert!(s.lock(false).unwrap().is_none());
        fs::write(s.seg_path(7), b"old").unwrap();
        let mut m = Manifest::empty(1);
        let tmp = s.temp_path();
        fs::write(&tmp, b"new").unwrap();
        s.place_segment(&tmp, 8, &lock).unwrap();
        assert_eq!(s.first_free_segment(), 9);
        m.segments.push(SegInfo { no: 8, len: 3 });
        s.publish(&m, &lock).unwrap();
        assert!(!s.seg_path(7).exists());
        assert!(s.seg_path(8).exists());
        assert_eq!(s.read_manifest().unwrap(), Some(m));
        drop(lock);
        assert!(s.lock(false).unwrap().is_some());
        fs::write(s.manifest_path(), b"garbage").unwrap();
        assert!(s.read_manifest().is_err());
        assert!(s.remove().unwrap() > 0);
        assert!(!s.dir().exists());
    }
}
