//! What a lister read from a file's first lines, kept on disk between processes.
//!
//! `sessionfs grep` names every session it could answer from before it asks the
//! index which ones to read, and naming a session means reading its head: a Codex
//! page's first line (its `session_meta`, some 20 KB of instructions parsed for a
//! `cwd`), a Gemini CLI file's lines up to its first message. Over a home of ten
//! thousand sessions that is a fifth of a rare word's search, and it reads the same
//! bytes every time. A memo keeps each head (what the agent's reader made of it, as
//! JSON) under its file's key, so that the next process pays one `stat` for it.
//!
//! # Why a remembered head is never used for a file that changed
//!
//! A head is kept under its file's key as it was when it was read: device, inode,
//! size, mtime and ctime (to the nanosecond). Appending changes the size; rewriting in
//! place changes the ctime (and nothing sets a ctime back: `touch -d` sets it to now);
//! replacing the file changes the inode. A head is given back only when the key is
//! the file's key now, and only when it was read at least [`super::stamp::RACY`] after the file's
//! ctime: a change within the same tick of the file system's clock as the one before
//! it would keep the ctime, so a file changed that recently is read again (git's
//! "racy" entries). A head is kept only when the file's key after the reading is the
//! key before it: a file written meanwhile is not kept.
//!
//! What is kept must be a function of the file's bytes and its path alone: a reader
//! that also looks at another file (a folder's other files, a database) does not use
//! the memo. A folder's entries are such a function of the folder ([`super::listing`]
//! keeps them through [`get_bytes`], under the folder's key).
//!
//! # What it survives
//!
//! The memo is one file, `$XDG_CACHE_HOME/sessionfs/heads-1` (the search gives the
//! place: [`enable`]), written whole to a temporary file and renamed into place, and
//! ending with a checksum: a torn, garbled or foreign file is ignored and replaced.
//! It names the program that wrote it (the executable's size, mtime and inode): a new
//! build, whose readers may read heads otherwise, starts from nothing. Several
//! processes may write it; the last one's is kept, and each is whole. It holds at most
//! [`MAX_RECORDS`] heads (those used by the last process first). Without [`enable`]
//! (a mount, `SESSIONFS_CACHE=off`), nothing is kept and every head is read.
//!
//! Lock order: one mutex, held only to look up or insert a record (never while a
//! file is read or the memo written).

use super::fasthash::FastMap;
use parking_lot::Mutex;
use serde::{Serialize, de::DeserializeOwned};
use std::fs;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The most heads kept.
pub const MAX_RECORDS: usize = 200_000;
/// The longest memo file read.
const MAX_FILE: u64 = 256 << 20;
/// The start of the file; a new layout gets a new one.
const MAGIC: &[u8; 8] = b"SFSMEMO1";
/// The memo file's name in the cache directory.
pub const FILE_NAME: &str = "heads-1";

/// A file as it was when its head was read.
type Key = super::stamp::Stat;

#[derive(Debug, Clone)]
struct Record {
    key: Key,
    /// When the reading started.
    read_at: (i64, i64),
    /// The head, as JSON.
    value: Box<[u8]>,
    /// Looked up or stored by this process.
    used: bool,
}

impl Record {
    /// Whether the record may stand for a file whose key is `key` now.
    fn holds_for(&self, key: &Key) -> bool {
        self.key == *key && trusted(self.read_at, key.ctime)
    }
}

/// Whether a reading that started at `read_at` is past the racy margin of `ctime`.
fn trusted(read_at: (i64, i64), ctime: (i64, i64)) -> bool {
    super::stamp::past_racy(read_at, ctime)
}

#[derive(Default)]
struct State {
    /// By the reader's name and the path it was asked for.
    records: FastMap<(String, PathBuf), Record>,
    /// A record was added or replaced since the memo was loaded.
    dirty: bool,
}

/// The memo of this process, once [`enable`]d.
struct Memo {
    file: PathBuf,
    /// Which program's readers made the records.
    program: u64,
    state: OnceLock<Mutex<State>>,
}

static MEMO: OnceLock<Memo> = OnceLock::new();

/// Keeps heads in the file `file` for the rest of this process (the first call wins).
/// Its records are read when first needed.
pub fn enable(file: PathBuf) {
    let _ = MEMO.set(Memo::new(file));
}

/// The executable's identity: a new build reads heads afresh.
fn program_tag() -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    env!("CARGO_PKG_VERSION").hash(&mut h);
    if let Some(m) = std::env::current_exe()
        .ok()
        .and_then(|p| fs::metadata(p).ok())
    {
        (m.dev(), m.ino(), m.len(), m.mtime(), m.mtime_nsec()).hash(&mut h);
    }
    h.finish()
}

impl Memo {
    fn new(file: PathBuf) -> Memo {
        Memo {
            file,
            program: program_tag(),
            state: OnceLock::new(),
        }
    }

    fn state(&self) -> &Mutex<State> {
        self.state.get_or_init(|| {
            Mutex::new(State {
                records: read_file(&self.file)
                    .and_then(|b| decode(&b, self.program))
                    .unwrap_or_default(),
                dirty: false,
            })
        })
    }
}

/// What `read` makes of the file at `path`, as the reader named `reader` read it:
/// from the memo when it holds a reading of the file as it is now, else read (and
/// kept, when the memo is on and the file did not change meanwhile).
pub fn get<T: Serialize + DeserializeOwned>(
    reader: &str,
    path: &Path,
    read: impl FnOnce() -> T,
) -> T {
    match MEMO.get() {
        Some(m) => m.get(reader, path, read),
        None => read(),
    }
}

/// [`get`] for a reader that makes bytes of its own encoding and may fail: a failure
/// is given back and never kept (the next process tries again, and says why). With
/// the memo on, a path that cannot be `stat`ed fails with that error, unread: what
/// is read this way (a folder) cannot be read without being `stat`ed.
pub fn get_bytes(
    reader: &str,
    path: &Path,
    read: impl FnOnce() -> std::io::Result<Vec<u8>>,
) -> std::io::Result<Vec<u8>> {
    match MEMO.get() {
        Some(m) => {
            // One failed `stat` for a folder that is not there (most of a search's
            // side folders), not a `stat` and an `open`.
            let before = fs::metadata(path)?;
            m.fetch(reader, path, &before, true, read)
        }
        None => read(),
    }
}

/// Writes the memo back if this process added to it (errors ignored: the memo only
/// saves time).
pub fn save() {
    if let Some(m) = MEMO.get() {
        m.save();
    }
}

impl Memo {
    fn get<T: Serialize + DeserializeOwned>(
        &self,
        reader: &str,
        path: &Path,
        read: impl FnOnce() -> T,
    ) -> T {
        let read = std::cell::Cell::new(Some(read));
        let fresh = std::cell::RefCell::new(None);
        let read_now = || {
            let v = read.take().expect("read once")();
            let json = serde_json::to_vec(&v);
            *fresh.borrow_mut() = Some(v);
            json.map_err(|_| ())
        };
        let Ok(before) = fs::metadata(path) else {
            return read.take().expect("not read yet")();
        };
        let got = self.fetch(reader, path, &before, true, read_now);
        if fresh.borrow().is_none()
            && let Ok(json) = got
            && let Ok(v) = serde_json::from_slice::<T>(&json)
        {
            return v;
        }
        if fresh.borrow().is_none() {
            // A record this reader cannot read (another version's): read, and
            // replace it.
            let _ = self.fetch(reader, path, &before, false, read_now);
        }
        fresh.into_inner().expect("read")
    }

    /// The bytes `read` makes of the file at `path`, whose metadata was `before` just
    /// now: the record's when it holds for the file as it is (and `lookup`), else read
    /// and kept (when the file did not change meanwhile and `read` succeeded).
    fn fetch<E>(
        &self,
        reader: &str,
        path: &Path,
        before: &fs::Metadata,
        lookup: bool,
        read: impl FnOnce() -> Result<Vec<u8>, E>,
    ) -> Result<Vec<u8>, E> {
        let key = Key::of(before);
        let id = (reader.to_string(), path.to_path_buf());
        if lookup {
            let mut st = self.state().lock();
            if let Some(r) = st.records.get_mut(&id)
                && r.holds_for(&key)
            {
                r.used = true;
                return Ok(r.value.to_vec());
            }
        }
        let read_at = super::stamp::now();
        let value = read()?;
        let unchanged = fs::metadata(path).is_ok_and(|m| Key::of(&m) == key);
        // A reading still within the racy margin would not be trusted: not worth a
        // write.
        if unchanged && trusted(read_at, key.ctime) {
            let mut st = self.state().lock();
            st.records.insert(
                id,
                Record {
                    key,
                    read_at,
                    value: value.clone().into_boxed_slice(),
                    used: true,
                },
            );
            st.dirty = true;
        }
        Ok(value)
    }

    /// Records not used by this process go first when there are too many.
    fn save(&self) {
        let Some(state) = self.state.get() else {
            return;
        };
        let bytes = {
            let mut st = state.lock();
            if !st.dirty {
                return;
            }
            st.dirty = false;
            let mut keep: Vec<(&(String, PathBuf), &Record)> = st.records.iter().collect();
            if keep.len() > MAX_RECORDS {
                keep.sort_by_key(|(_, r)| !r.used);
                keep.truncate(MAX_RECORDS);
            }
            encode(&keep, self.program)
        };
        let _ = write_whole(&self.file, &bytes);
    }
}

/// The memo file's bytes, through the core's opener (a regular file only, never
/// blocking), at most [`MAX_FILE`] of them (a longer file fails its checksum).
fn read_file(file: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut b = Vec::new();
    super::input::open_regular(file)
        .ok()?
        .take(MAX_FILE)
        .read_to_end(&mut b)
        .ok()?;
    Some(b)
}

/// Makes `dir` (a cache's folder, and the folders above it it creates) readable by
/// its owner alone, as the XDG spec asks of the folders it creates: a cache holds the
/// paths, names and words of someone's sessions, which the disk shows no one else. A
/// folder that is already there and is the user's loses its group's and others'
/// rights (an index made before this rule).
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let m = fs::metadata(dir)?;
    // SAFETY: geteuid has no preconditions.
    if m.mode() & 0o077 != 0 && m.uid() == unsafe { libc::geteuid() } {
        fs::set_permissions(dir, fs::Permissions::from_mode(m.mode() & 0o700))?;
    }
    Ok(())
}

fn write_whole(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = file.parent().unwrap_or(Path::new("."));
    private_dir(dir)?;
    let tmp = dir.join(format!(
        ".tmp-heads-{}-{:x}",
        std::process::id(),
        super::id::random_u32()
    ));
    let done = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes))
        .and_then(|()| fs::rename(&tmp, file));
    if done.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    done
}

fn checksum(b: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    b.hash(&mut h);
    h.finish()
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

fn put_stamp(out: &mut Vec<u8>, s: (i64, i64)) {
    out.extend_from_slice(&s.0.to_le_bytes());
    out.extend_from_slice(&s.1.to_le_bytes());
}

fn encode(records: &[(&(String, PathBuf), &Record)], program: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + records.len() * 256);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&program.to_le_bytes());
    out.extend_from_slice(&(records.len() as u64).to_le_bytes());
    for ((reader, path), r) in records {
        put_bytes(&mut out, reader.as_bytes());
        put_bytes(&mut out, path.as_os_str().as_bytes());
        for n in [r.key.dev, r.key.ino, r.key.size] {
            out.extend_from_slice(&n.to_le_bytes());
        }
        put_stamp(&mut out, r.key.mtime);
        put_stamp(&mut out, r.key.ctime);
        put_stamp(&mut out, r.read_at);
        put_bytes(&mut out, &r.value);
    }
    let sum = checksum(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// A reader over the memo file's bytes; every read is checked.
struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.b.len() < n {
            return None;
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        Some(h)
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn stamp(&mut self) -> Option<(i64, i64)> {
        Some((self.i64()?, self.i64()?))
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = u32::from_le_bytes(self.take(4)?.try_into().ok()?) as usize;
        self.take(n)
    }
}

/// The records of a memo file written by the program `program`; `None` for a file
/// that is not whole, not ours, or another program's.
fn decode(b: &[u8], program: u64) -> Option<FastMap<(String, PathBuf), Record>> {
    let body_len = b.len().checked_sub(8)?;
    let (body, sum) = b.split_at(body_len);
    if checksum(body) != u64::from_le_bytes(sum.try_into().ok()?) {
        return None;
    }
    let mut r = Reader { b: body };
    if r.take(MAGIC.len())? != MAGIC || r.u64()? != program {
        return None;
    }
    let n = r.u64()?;
    let mut out =
        FastMap::with_capacity_and_hasher((n as usize).min(MAX_RECORDS), Default::default());
    for _ in 0..n {
        let reader = std::str::from_utf8(r.bytes()?).ok()?.to_string();
        let path = PathBuf::from(std::ffi::OsStr::from_bytes(r.bytes()?));
        let key = Key {
            dev: r.u64()?,
            ino: r.u64()?,
            size: r.u64()?,
            mtime: r.stamp()?,
            ctime: r.stamp()?,
        };
        let read_at = r.stamp()?;
        let value = r.bytes()?.into();
        out.insert(
            (reader, path),
            Record {
                key,
                read_at,
                value,
                used: false,
            },
        );
    }
    r.b.is_empty().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(read_at: (i64, i64)) -> Record {
        Record {
            key: Key {
                dev: 1,
                ino: 2,
                size: 3,
                mtime: (4, 5),
                ctime: (100, 500),
            },
            read_at,
            value: b"{\"a\":1}".to_vec().into_boxed_slice(),
            used: true,
        }
    }

    #[test]
    fn a_reading_within_the_racy_margin_is_not_trusted() {
        let r = record((102, 0));
        assert!(!r.holds_for(&r.key));
        let r = record((103, 499));
        assert!(!r.holds_for(&r.key));
        let r = record((103, 500));
        assert!(r.holds_for(&r.key));
        let mut other = r.key;
        other.ctime = (200, 0);
        assert!(!r.holds_for(&other), "another ctime");
        let mut other = r.key;
        other.ino = 9;
        assert!(!r.holds_for(&other), "another inode");
        let mut other = r.key;
        other.size = 4;
        assert!(!r.holds_for(&other), "another size");
        let mut other = r.key;
        other.mtime = (4, 6);
        assert!(!r.holds_for(&other), "another mtime");
    }

    #[test]
    fn the_file_round_trips_and_refuses_damage() {
        let id = ("reader".to_string(), PathBuf::from("/a/b.jsonl"));
        let r = record((200, 0));
        let bytes = encode(&[(&id, &r)], 77);
        let back = decode(&bytes, 77).expect("whole");
        let got = &back[&id];
        assert_eq!(got.key, r.key);
        assert_eq!(got.read_at, r.read_at);
        assert_eq!(got.value, r.value);
        assert!(!got.used);
        assert!(decode(&bytes, 78).is_none(), "another program's");
        for cut in [0, 1, 8, bytes.len() / 2, bytes.len() - 1] {
            assert!(decode(&bytes[..cut], 77).is_none(), "cut at {cut}");
        }
        for at in [0, 9, 20, bytes.len() / 2, bytes.len() - 3] {
            let mut bad = bytes.clone();
            bad[at] ^= 0x40;
            assert!(decode(&bad, 77).is_none(), "byte {at} changed");
        }
    }

    /// The process-wide memo: a head is read once, given back while its file is as it
    /// was, read again once the file changes (a same-size rewrite with the mtime set
    /// back included), and kept across processes through the file.
    #[test]
    fn heads_are_read_again_when_their_file_changes() {
        let d = tempfile::tempdir().unwrap();
        let memo_file = d.path().join("cache/heads-1");
        let memo = Memo::new(memo_file.clone());
        let f = d.path().join("s.jsonl");
        fs::write(&f, "one\n").unwrap();
        // Past the racy margin: the file's times set back (ctime stays now, so the
        // first reading is racy and read again).
        let reads = std::cell::Cell::new(0);
        let read = || {
            reads.set(reads.get() + 1);
            fs::read_to_string(&f).unwrap()
        };
        assert_eq!(memo.get("t", &f, read), "one\n");
        assert_eq!(memo.get("t", &f, read), "one\n");
        assert_eq!(reads.get(), 2, "a file changed just now is read each time");
        // A record as a reading 10 s after the change would leave it.
        {
            let key = Key::of(&fs::metadata(&f).unwrap());
            memo.state().lock().records.insert(
                ("t".into(), f.clone()),
                Record {
                    key,
                    read_at: (key.ctime.0 + 10, 0),
                    value: serde_json::to_vec("one\n").unwrap().into_boxed_slice(),
                    used: true,
                },
            );
            memo.state().lock().dirty = true;
        }
        assert_eq!(memo.get("t", &f, read), "one\n");
        assert_eq!(reads.get(), 2, "kept");
        // Another reader's head of the same file is its own.
        assert_eq!(memo.get("u", &f, || 7u32), 7);
        // A same-size rewrite, mtime set back: the ctime moved.
        let m = fs::metadata(&f).unwrap();
        fs::write(&f, "two\n").unwrap();
        let t = std::time::UNIX_EPOCH
            + std::time::Duration::new(m.mtime() as u64, m.mtime_nsec() as u32);
        fs::File::options()
            .write(true)
            .open(&f)
            .unwrap()
            .set_modified(t)
            .unwrap();
        assert_eq!(memo.get("t", &f, read), "two\n");
        assert_eq!(reads.get(), 3);
        // Saved and read back: the kept record survives (the file's own was racy).
        memo.save();
        assert!(memo_file.is_file());
        let back = decode(&fs::read(&memo_file).unwrap(), memo.program).unwrap();
        assert!(back.contains_key(&("t".to_string(), f.clone())));
    }
}
