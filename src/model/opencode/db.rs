//! Opening opencode's database, which opencode has open and writes while we read.
//!
//! opencode keeps every session in one SQLite database in WAL mode
//! (OPENCODE-FORMAT.md §1). We never touch its bytes ourselves, and never copy the `.db`
//! file without its `-wal` (recent writes live there until a checkpoint): everything
//! goes through SQLite, whose locking is what keeps two programs on one database safe.
//!
//! * **Reading**: a read-only connection (`SQLITE_OPEN_READ_ONLY`, `mode=ro`) with a
//!   short busy timeout, and every read of a session in one read transaction
//!   ([`read`]), so that what is shown is one consistent snapshot even while opencode
//!   commits. In WAL mode a reader never blocks a writer: opencode never waits for us.
//!   A read-only connection does not checkpoint either, so reading changes nothing on
//!   disk. Transactions are short (one session's rows), so a checkpoint is never held
//!   off for long.
//! * **Writing** (`super::write`): a read-write connection with a longer busy
//!   timeout, and one `BEGIN IMMEDIATE … COMMIT` transaction per reply or fork, as
//!   opencode's own writes are transactions: a reader (opencode included) sees all of
//!   it or nothing. `BEGIN IMMEDIATE` takes the write lock before anything is read,
//!   so the rows we write follow from the rows as they are when we write.
//! * **Following changes**: a commit writes its pages to `-wal`, then makes them
//!   visible by moving the WAL index in `-shm`: a reader that starts after that sees
//!   the commit, one that starts before does not. What is visible is asked of SQLite
//!   (`PRAGMA data_version` on a connection kept for it, `super::live`), never read
//!   from `-shm` or guessed from the `-wal`'s size and time: its pages are written
//!   before they are visible (a change noticed then and taken as seen would be
//!   missed), and a log restarted after a checkpoint is rewritten in place, keeping its
//!   size, within one tick of the file clock (the same mtime). Nor is `-shm` ever opened
//!   here: closing any descriptor of a file drops every POSIX lock the process holds on
//!   it, SQLite's own included (a reply's write lock, a reader's mark). The watchers
//!   follow writes to the `-wal` to know when to look.
//! * **The database file itself** is opened outside SQLite once per file, to read
//!   its header and give a session its owner and mode, and that descriptor is never
//!   closed ([`held`]), for the same reason.
//!
//! `rusqlite` with its `bundled` SQLite (as for Codex's `state_5.sqlite`): no system
//! library needed, and a SQLite that knows WAL.

use rusqlite::{Connection, OpenFlags, ffi};
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a read waits for a lock (a checkpoint that resets the WAL) before failing.
pub const READ_BUSY: Duration = Duration::from_millis(500);
/// How long a write waits for opencode's write lock (opencode itself waits 5 s).
pub const WRITE_BUSY: Duration = Duration::from_millis(2000);
/// How long `open` of a `reply` waits to learn whether the database can be written.
pub const PROBE_BUSY: Duration = Duration::from_millis(200);

/// The file name of opencode's database in its data folder (release builds; a
/// development build names it `opencode-<channel>.db`).
pub const DB_NAME: &str = "opencode.db";

/// A database failure: the errno for a filesystem caller and what went wrong.
#[derive(Debug, Clone)]
pub struct DbError {
    pub errno: i32,
    pub reason: String,
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

/// `e` with its errno: a busy or locked database is `EBUSY`, and so on.
pub fn db_error(db: &Path, e: rusqlite::Error) -> DbError {
    let errno = match e.sqlite_error_code() {
        Some(ffi::ErrorCode::DatabaseBusy | ffi::ErrorCode::DatabaseLocked) => libc::EBUSY,
        Some(ffi::ErrorCode::ReadOnly) => libc::EROFS,
        Some(ffi::ErrorCode::PermissionDenied | ffi::ErrorCode::CannotOpen) => libc::EACCES,
        Some(ffi::ErrorCode::DiskFull) => libc::ENOSPC,
        Some(ffi::ErrorCode::NotADatabase | ffi::ErrorCode::DatabaseCorrupt) => libc::EIO,
        _ => libc::EIO,
    };
    let what = match errno {
        libc::EBUSY => format!(
            "{}: the database is busy (opencode is writing to it); try again in a moment",
            db.display()
        ),
        _ => format!("{}: {e}", db.display()),
    };
    DbError {
        errno,
        reason: what,
    }
}

/// Escapes what a SQLite URI path cannot hold as is.
fn uri_escape(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        match c {
            '?' | '#' | '%' => out.push_str(&format!("%{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// A read-only connection to `db` with [`READ_BUSY`].
pub fn open_read(db: &Path) -> Result<Connection, DbError> {
    let uri = format!("file:{}?mode=ro", uri_escape(&db.to_string_lossy()));
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let c = Connection::open_with_flags(uri, flags).map_err(|e| db_error(db, e))?;
    c.busy_timeout(READ_BUSY).map_err(|e| db_error(db, e))?;
    Ok(c)
}

/// A read-write connection to `db` (which must exist: it is never created) with
/// `busy` as its busy timeout.
pub fn open_write(db: &Path, busy: Duration) -> Result<Connection, DbError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let c = Connection::open_with_flags(db, flags).map_err(|e| db_error(db, e))?;
    c.busy_timeout(busy).map_err(|e| db_error(db, e))?;
    // As opencode sets it: rows of a deleted message go with it.
    c.execute_batch("PRAGMA foreign_keys = ON")
        .map_err(|e| db_error(db, e))?;
    Ok(c)
}

/// Runs `f` inside one read transaction of a read-only connection: one snapshot of
/// the database however long `f` takes, whatever opencode commits meanwhile.
pub fn read<T>(
    db: &Path,
    f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
) -> Result<T, DbError> {
    let c = open_read(db)?;
    c.execute_batch("BEGIN DEFERRED")
        .map_err(|e| db_error(db, e))?;
    let r = f(&c);
    // Ends the read transaction whatever happened (a read-only one has nothing to keep).
    let _ = c.execute_batch("COMMIT");
    r.map_err(|e| db_error(db, e))
}

/// The `-wal` file of `db`.
pub fn wal_of(db: &Path) -> PathBuf {
    let mut p = db.as_os_str().to_os_string();
    p.push("-wal");
    PathBuf::from(p)
}

/// Size and mtime (ns) of `p`; zeros when it is not there.
fn stat(p: &Path) -> (u64, i64) {
    std::fs::metadata(p)
        .map(|m| (m.len(), m.mtime() * 1_000_000_000 + m.mtime_nsec()))
        .unwrap_or((0, 0))
}

/// The size and modification time (ns) of `db`'s `-wal`: it moves when a commit's
/// pages are written, before the commit is visible. Zeros when it holds no pages
/// (there is none, or an empty one: as a reader's first look makes it, or a
/// checkpoint truncates it).
pub fn wal_stat(db: &Path) -> (u64, i64) {
    match stat(&wal_of(db)) {
        (0, _) => (0, 0),
        s => s,
    }
}

/// The `PRAGMA data_version` of connection `c`: it moves whenever another connection
/// commits, and inside a read transaction it is that transaction's snapshot's.
pub fn data_version(c: &Connection) -> rusqlite::Result<i64> {
    c.query_row("PRAGMA data_version", [], |r| r.get(0))
}

/// Whether `path` is a SQLite database (by its first 16 bytes, read through the
/// descriptor [`held`] keeps).
pub fn is_sqlite(path: &Path) -> bool {
    held(path).is_some()
}

/// The descriptors of the databases seen, by device and inode, each opened once and
/// never closed: see [`held`].
static HELD: parking_lot::Mutex<Vec<((u64, u64), &'static File)>> =
    parking_lot::Mutex::new(Vec::new());

/// The descriptor of the SQLite database at `path`, opened the first time its file
/// (device and inode) is seen and kept open for the life of the process; `None` when
/// `path` is no regular file or no SQLite database.
///
/// SQLite on Unix locks a database with POSIX advisory locks, which belong to the
/// process and the file, not to a descriptor: closing *any* descriptor of the file
/// drops every lock the process holds on it, those of its SQLite connections
/// included (SQLite's "How To Corrupt An SQLite Database File", §2.2). The live
/// tracker's connection and a reply's write transaction hold such locks while
/// sessions are opened and listed; were one dropped, opencode closing its last
/// connection would checkpoint and delete the `-wal` under ours (a reply written
/// into it lost). So the database file is only ever opened here, once, and a
/// session borrows this descriptor ([`crate::model::core::session::Member::held`]).
/// The cost is one descriptor per database file seen (opencode has one).
///
/// A file found not to be a database is closed at once: no connection of ours holds
/// a lock on it (we connect only to files this said were databases, and SQLite
/// releases its lock on a file whose header it refuses).
pub fn held(path: &Path) -> Option<&'static File> {
    let md = std::fs::metadata(path).ok()?;
    if !md.is_file() {
        return None;
    }
    let mut held = HELD.lock();
    let find = |held: &[((u64, u64), &'static File)], key| {
        held.iter().find(|(k, _)| *k == key).map(|&(_, f)| f)
    };
    if let Some(f) = find(&held, (md.dev(), md.ino())) {
        return Some(f);
    }
    let f = crate::model::core::input::open_regular(path).ok()?;
    let md = f.metadata().ok()?;
    let key = (md.dev(), md.ino());
    if let Some(known) = find(&held, key) {
        // Replaced by a file already held between the `stat` and the `open`: this
        // descriptor is of a database we may hold locks on, so it is not closed.
        std::mem::forget(f);
        return Some(known);
    }
    let mut head = [0u8; 16];
    if f.read_exact_at(&mut head, 0).is_err() || &head != b"SQLite format 3\0" {
        return None;
    }
    let f: &'static File = Box::leak(Box::new(f));
    held.push((key, f));
    Some(f)
}

/// The column names of `table` (empty when there is no such table).
pub fn columns(c: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = c.prepare("SELECT name FROM pragma_table_info(?1)")?;
    let names = stmt.query_map([table], |r| r.get::<_, String>(0))?;
    names.collect()
}
