//! Forking: a branch of a session, from its root to one entry, copied into a new
//! session file of its own, the way the agent that wrote the file forks.
//!
//! [`plan`] computes the new file (its directory, name and bytes) from the session and
//! the entry; it reads the source and never writes it. [`write_new`] then creates the
//! file so that nobody ever sees half of it: the bytes go to a hidden temporary file in
//! the same directory, are synced, and are linked under the final name (which must not
//! exist yet), and the directory is synced.
//!
//! * **Pi** (1.6.0's `/fork` "at" an entry, `SessionManager.createBranchedSession`,
//!   PI-FORMAT.md §9.5 and §16.6): a new header (version 3, a UUID v7 id, the time,
//!   the source's `cwd`, `parentSession` = the source's absolute path); then every
//!   entry on the path from the root to the entry, as Pi holds it in memory (migrated
//!   from v2), without its `label` entries, keeping its id, re-chained so that each
//!   entry's `parentId` is the entry before it (`null` for the first); a compaction
//!   whose `firstKeptEntryId` named a dropped label names the next kept entry; then
//!   one fresh `label` entry for each entry of the path that still has a label (in
//!   the order Pi's label map holds them, with the label's own timestamp), chained
//!   after the last entry. Every line is `JSON.stringify` of that object. The file is
//!   `<timestamp with : and . as ->_<id>.jsonl` beside the source.
//!   Refused: a v1 file (its ids exist only in sessionfs's memory), an entry without
//!   an id, and a path through a parent cycle or a self-parent (Pi's `getBranch`
//!   would loop forever on it).
//! * **Claude Code** (2.1.332's `claude --resume SID --resume-session-at ENTRY
//!   --fork-session`, measured with the real CLI, `scripts/claude-fork-measure.py`):
//!   the chain Claude Code loads and cuts after the entry (the parallel-tool pieces
//!   pulled in, the attachments on it; the compaction re-link applied), each line with
//!   the new `sessionId`, a `promptId` (where the line has one) replaced by one fresh
//!   id, `entrypoint` (where present) `sdk-cli` (print mode's), `slug` left out, the
//!   usage of the messages the last compaction preserves zeroed (as Claude Code holds
//!   them), and `requestSessionId` (the source session's id) added at the end of an
//!   assistant line that lacks it; then a `last-prompt` naming the entry, so that
//!   `claude --resume` continues from it. No metadata line is copied. The file is
//!   `<new uuid>.jsonl` beside the source. An entry on another branch is forked as
//!   after a rewind to it. Refused: a subagent's line, a line Claude Code does not
//!   load, and an entry that a later compaction removed from what Claude Code loads.

pub use crate::model::core::fork_file::{ForkError, ForkFile, Fresh};
use crate::model::core::format::Format;
pub use crate::model::core::id::uuid_v7;
use crate::model::core::session::{Session, flags};
use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

/// The entry named `id`: its exact id (or, for Claude Code, a subagent's
/// `agent-<id>`), else the one entry whose id starts with `id`.
pub fn find_entry(s: &Session, id: &str) -> Result<u32, ForkError> {
    if let Some(i) = s.find(id) {
        return Ok(i);
    }
    if id.is_empty() {
        return Err(ForkError::NoSuchEntry(id.into()));
    }
    let mut hits = Vec::new();
    for (i, e) in s.entries().iter().enumerate() {
        if e.is_node() && e.flags & flags::NO_ID == 0 {
            let full = s.id_string(i as u32);
            if full.starts_with(id) {
                hits.push((i as u32, full));
            }
        }
    }
    match hits.len() {
        0 => Err(ForkError::NoSuchEntry(id.into())),
        1 => Ok(hits[0].0),
        _ => Err(ForkError::Ambiguous {
            prefix: id.into(),
            ids: hits.into_iter().map(|(_, f)| f).collect(),
        }),
    }
}

/// The new session file that forking `s` at entry `i` makes (see the module docs).
pub fn plan(s: &Session, i: u32, fresh: &Fresh) -> Result<ForkFile, ForkError> {
    s.agent().fork(s, i, fresh)
}

/// Forks `s` at entry `i` with fresh random values and writes the new file: its path
/// (for a session that is a folder, the new folder's).
pub fn fork(s: &Session, i: u32) -> Result<PathBuf, ForkError> {
    // An agent whose fork is a new session in its own store writes it itself.
    if let Some(made) = s.write_fork(i) {
        return made;
    }
    let f = plan(s, i, &Fresh::random(s.format()))?;
    Ok(write_fork(&f, mode_of(s.format()))?)
}

/// Writes what [`plan`] made, whole or not at all: the new file ([`write_new`]), or for a
/// `FOLDER/NAME` file name the new folder with the file and the [`ForkFile::extra`] files
/// ([`write_new_folder`]). Returns [`ForkFile::made_path`].
pub fn write_fork(f: &ForkFile, mode: u32) -> io::Result<PathBuf> {
    match f.file_name.split_once('/') {
        None => write_new(&f.dir, &f.file_name, &f.bytes, mode),
        Some((folder, name)) => {
            let mut files: Vec<(&str, &[u8])> = vec![(name, &f.bytes)];
            files.extend(f.extra.iter().map(|(n, b)| (n.as_str(), b.as_slice())));
            write_new_folder(&f.dir, folder, &files, mode)
        }
    }
}

/// The permission bits the agent gives its session files (before the umask).
pub fn mode_of(format: Format) -> u32 {
    match format {
        Format::Pi => 0o666,
        _ => 0o600,
    }
}

/// `path` made absolute (against the current directory) and normalised lexically, as
/// Node's `path.resolve` does: symbolic links are not followed.
pub fn lexical_absolute(path: &Path) -> io::Result<PathBuf> {
    let abs = std::path::absolute(path)?;
    let mut out = PathBuf::from("/");
    for c in abs.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    Ok(out)
}

// ----- writing -------------------------------------------------------------------------

/// Creates `dir/name` holding `bytes`, all at once: written to a hidden temporary file
/// in `dir` (`O_EXCL`), synced, linked under `name` (which fails with `EEXIST` if it
/// exists: nothing is ever replaced), and the directory synced. No reader sees a part
/// of the file under `name`; on failure nothing is left behind.
pub fn write_new(dir: &Path, name: &str, bytes: &[u8], mode: u32) -> io::Result<PathBuf> {
    let target = dir.join(name);
    let mut tmp;
    let mut file: File;
    loop {
        tmp = dir.join(format!(
            ".{name}.{:08x}.tmp",
            crate::model::core::id::random_u32()
        ));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(libc::O_CLOEXEC)
            .open(&tmp)
        {
            Ok(f) => {
                file = f;
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    let res = (|| {
        file.write_all(bytes)?;
        file.sync_all()?;
        let a = CString::new(tmp.as_os_str().as_bytes())?;
        let b = CString::new(target.as_os_str().as_bytes())?;
        // SAFETY: both are valid NUL-terminated paths.
        if unsafe { libc::link(a.as_ptr(), b.as_ptr()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    })();
    let _ = std::fs::remove_file(&tmp);
    res?;
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(target)
}

/// Creates the folder `dir/name` holding `files` (name, bytes), all at once: written into
/// a hidden temporary folder in `dir`, each file synced, then renamed to `name`, which
/// must not exist yet (`EEXIST`: nothing is ever replaced), and `dir` synced. No reader
/// sees the folder partly written; on failure nothing is left behind. The folder gets
/// mode `0700` with a file mode of `0600` (`0755` with `0644` for a wider `mode`).
pub fn write_new_folder(
    dir: &Path,
    name: &str,
    files: &[(&str, &[u8])],
    mode: u32,
) -> io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let target = dir.join(name);
    let folder_mode = if mode & 0o077 == 0 { 0o700 } else { 0o755 };
    let mut tmp;
    loop {
        tmp = dir.join(format!(
            ".{name}.{:08x}.tmp",
            crate::model::core::id::random_u32()
        ));
        match std::fs::DirBuilder::new().mode(folder_mode).create(&tmp) {
            Ok(()) => break,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    let res = (|| {
        for (n, bytes) in files {
            let mut f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode)
                .custom_flags(libc::O_CLOEXEC)
                .open(tmp.join(n))?;
            f.write_all(bytes)?;
            f.sync_all()?;
        }
        File::open(&tmp)?.sync_all()?;
        let a = CString::new(tmp.as_os_str().as_bytes())?;
        let b = CString::new(target.as_os_str().as_bytes())?;
        // SAFETY: both are valid NUL-terminated paths; AT_FDCWD resolves them as given.
        let r = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                a.as_ptr(),
                libc::AT_FDCWD,
                b.as_ptr(),
                libc::RENAME_NOREPLACE,
            )
        };
        if r != 0 {
            let e = io::Error::last_os_error();
            // A file system without RENAME_NOREPLACE: a plain rename of a folder onto a
            // name that exists fails anyway unless it is an empty folder, checked first.
            if e.raw_os_error() == Some(libc::EINVAL) && !target.exists() {
                std::fs::rename(&tmp, &target)?;
                return Ok(());
            }
            return Err(e);
        }
        Ok(())
    })();
    if res.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    res?;
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_new_folder_never_replaces() {
        let d = tempfile::tempdir().unwrap();
        let p =
            write_new_folder(d.path(), "s1", &[("a", b"one\n"), ("b", b"two\n")], 0o600).unwrap();
        assert_eq!(std::fs::read(p.join("a")).unwrap(), b"one\n");
        assert_eq!(std::fs::read(p.join("b")).unwrap(), b"two\n");
        let e = write_new_folder(d.path(), "s1", &[("a", b"x\n")], 0o600).unwrap_err();
        assert!(matches!(
            e.raw_os_error(),
            Some(libc::EEXIST) | Some(libc::ENOTEMPTY)
        ));
        assert_eq!(std::fs::read(p.join("a")).unwrap(), b"one\n");
        // Nothing left behind.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn uuid_v7_carries_the_time() {
        let u = uuid_v7(0x0123_4567_89ab);
        assert_eq!(&u[..13], "01234567-89ab");
        assert_eq!(&u[14..15], "7");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"));
    }

    #[test]
    fn write_new_never_replaces() {
        let d = tempfile::tempdir().unwrap();
        let p = write_new(d.path(), "a.jsonl", b"one\n", 0o600).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"one\n");
        let e = write_new(d.path(), "a.jsonl", b"two\n", 0o600).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&p).unwrap(), b"one\n");
        // Nothing left behind.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }
}
