//! A folder's entries, kept between searches while the folder is as it was.
//!
//! `sessionfs grep` lists every agent's folders before it asks the index anything:
//! over a home of ten thousand sessions that is some eight thousand folders (a Codex
//! day, a Copilot CLI session, a Claude Code session's `subagents/`), each an `open`,
//! two `getdents` and a `close`, most of them of folders that have not changed since
//! the last search. A listing is a function of the folder alone, so [`read_dir`]
//! keeps it in the heads' memo ([`super::memo`]) under the folder's
//! [`super::stamp::Stat`], and the next search pays one `stat` for it.
//!
//! # Why a kept listing is never used for a folder that changed
//!
//! Creating, removing or renaming an entry changes its folder's mtime and ctime (and
//! a folder's rights, its ctime), and nothing sets a ctime back; a folder replaced is
//! another inode. The memo gives a listing back only for the folder's key as it is
//! now, read past the racy margin of its ctime, and keeps one only when the folder's
//! key after the reading is the key before it ([`super::memo`] says why each rule).
//! A file's type cannot change without its name leaving the folder; a link's target
//! can, so a link is kept as a link and followed by the caller. A failure (a folder
//! gone or refused) is never kept. Without the memo (a mount, `SESSIONFS_CACHE=off`)
//! every folder is read.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// What an entry is, as the folder says it (a link is not followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    /// A device, a FIFO, a socket.
    Other,
}

impl Kind {
    pub fn is_file(self) -> bool {
        self == Kind::File
    }
    pub fn is_dir(self) -> bool {
        self == Kind::Dir
    }
    pub fn is_symlink(self) -> bool {
        self == Kind::Symlink
    }

    fn of(ft: std::fs::FileType) -> Kind {
        if ft.is_symlink() {
            Kind::Symlink
        } else if ft.is_dir() {
            Kind::Dir
        } else if ft.is_file() {
            Kind::File
        } else {
            Kind::Other
        }
    }

    fn byte(self) -> u8 {
        match self {
            Kind::File => b'f',
            Kind::Dir => b'd',
            Kind::Symlink => b'l',
            Kind::Other => b'o',
        }
    }

    fn from_byte(b: u8) -> Option<Kind> {
        Some(match b {
            b'f' => Kind::File,
            b'd' => Kind::Dir,
            b'l' => Kind::Symlink,
            b'o' => Kind::Other,
            _ => return None,
        })
    }
}

/// One entry of a folder: its path (the folder joined with its name) and its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    path: PathBuf,
    kind: Kind,
}

impl Entry {
    pub fn path(&self) -> &Path {
        &self.path
    }
    pub fn into_path(self) -> PathBuf {
        self.path
    }
    pub fn file_name(&self) -> &OsStr {
        self.path.file_name().unwrap_or_default()
    }
    /// Its kind, a link not followed.
    pub fn kind(&self) -> Kind {
        self.kind
    }
    /// Its kind, a link followed (`None`: a dangling or refused link).
    pub fn kind_followed(&self) -> Option<Kind> {
        match self.kind {
            Kind::Symlink => std::fs::metadata(&self.path)
                .ok()
                .map(|m| Kind::of(m.file_type())),
            k => Some(k),
        }
    }
    /// A regular file, or a link to one.
    pub fn is_file(&self) -> bool {
        self.kind_followed() == Some(Kind::File)
    }
    /// A folder, or a link to one.
    pub fn is_dir(&self) -> bool {
        self.kind_followed() == Some(Kind::Dir)
    }
}

/// The memo's name for listings.
const READER: &str = "listing";

/// The entries of the folder `dir`, in the order the file system gives them (sort
/// them for an order). An entry that vanishes or cannot be examined while the folder
/// is read is left out, as `read_dir(dir)?.flatten()` with a `file_type` leaves it.
pub fn read_dir(dir: &Path) -> io::Result<Vec<Entry>> {
    let bytes = super::memo::get_bytes(READER, dir, || read_now(dir).map(|v| encode(&v)))?;
    match decode(dir, &bytes) {
        Some(v) => Ok(v),
        // Not ours (damaged in a way the checksum missed): read again.
        None => read_now(dir),
    }
}

fn read_now(dir: &Path) -> io::Result<Vec<Entry>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let Ok(e) = e else { continue };
        let Ok(ft) = e.file_type() else { continue };
        out.push(Entry {
            path: e.path(),
            kind: Kind::of(ft),
        });
    }
    Ok(out)
}

/// Each entry as its kind's byte, its name, and a NUL (which no name holds).
fn encode(v: &[Entry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * 48);
    for e in v {
        out.push(e.kind.byte());
        out.extend_from_slice(e.file_name().as_bytes());
        out.push(0);
    }
    out
}

fn decode(dir: &Path, b: &[u8]) -> Option<Vec<Entry>> {
    let mut out = Vec::new();
    let mut rest = b;
    while !rest.is_empty() {
        let end = memchr::memchr(0, rest)?;
        let (&k, name) = rest[..end].split_first()?;
        if name.is_empty() || name.contains(&b'/') || name == b"." || name == b".." {
            return None;
        }
        out.push(Entry {
            path: dir.join(OsString::from_vec(name.to_vec())),
            kind: Kind::from_byte(k)?,
        });
        rest = &rest[end + 1..];
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn names(v: &[Entry]) -> Vec<(String, Kind)> {
        let mut n: Vec<(String, Kind)> = v
            .iter()
            .map(|e| (e.file_name().to_string_lossy().into_owned(), e.kind()))
            .collect();
        n.sort_by(|a, b| a.0.cmp(&b.0));
        n
    }

    #[test]
    fn entries_round_trip_through_their_encoding() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("a.jsonl"), "").unwrap();
        fs::create_dir(d.path().join("sub")).unwrap();
        std::os::unix::fs::symlink("a.jsonl", d.path().join("link")).unwrap();
        std::os::unix::fs::symlink("nowhere", d.path().join("dangling")).unwrap();
        let odd = OsStr::from_bytes(b"caf\xe9 \n.jsonl");
        fs::write(d.path().join(odd), "").unwrap();
        let v = read_now(d.path()).unwrap();
        let back = decode(d.path(), &encode(&v)).unwrap();
        assert_eq!(back, v);
        assert!(back.iter().any(|e| e.file_name() == odd));
        let n = names(&v);
        assert_eq!(n.len(), 5);
        let link = v.iter().find(|e| e.file_name() == "link").unwrap();
        assert_eq!(link.kind(), Kind::Symlink);
        assert!(link.is_file());
        let dangling = v.iter().find(|e| e.file_name() == "dangling").unwrap();
        assert!(!dangling.is_file() && !dangling.is_dir());
        assert!(v.iter().find(|e| e.file_name() == "sub").unwrap().is_dir());
        for bad in [&b"fx"[..], b"x\0", b"f\0", b"fa/b\0", b"f..\0", b"qa\0"] {
            assert!(decode(d.path(), bad).is_none(), "{bad:?}");
        }
        assert_eq!(decode(d.path(), b"").unwrap(), Vec::new());
    }

    #[test]
    fn a_missing_folder_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        let e = read_dir(&d.path().join("nope")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }
}
