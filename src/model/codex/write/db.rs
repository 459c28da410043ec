//! Codex's `state_5.sqlite`: which page of a thread is current (CODEX-FORMAT.md §4).
//!
//! This is someone else's database, open in Codex while it runs. We touch it the way
//! Codex does: through SQLite's own locking (never a copy-and-rename), with a busy
//! timeout so that a Codex write in progress delays us instead of failing us, and one
//! short write transaction (`BEGIN IMMEDIATE`, one `UPDATE`, `COMMIT`). The database is
//! never created: without it Codex takes the newest page by file name, which a new
//! page is.

use rusqlite::{Connection, OpenFlags, OptionalExtension, ffi};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The file name of Codex's state database inside its home.
pub const STATE_DB: &str = "state_5.sqlite";

/// A database failure: the errno for the caller and what went wrong.
#[derive(Debug)]
pub struct DbError {
    pub errno: i32,
    pub reason: String,
}

fn db_error(e: rusqlite::Error) -> DbError {
    let errno = match e.sqlite_error_code() {
        Some(ffi::ErrorCode::DatabaseBusy | ffi::ErrorCode::DatabaseLocked) => libc::EBUSY,
        Some(ffi::ErrorCode::ReadOnly) => libc::EROFS,
        Some(ffi::ErrorCode::PermissionDenied) => libc::EACCES,
        Some(ffi::ErrorCode::CannotOpen) => libc::EACCES,
        Some(ffi::ErrorCode::DiskFull) => libc::ENOSPC,
        _ => libc::EIO,
    };
    DbError {
        errno,
        reason: e.to_string(),
    }
}

/// The thread's row as the writer needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Current {
    /// No database: Codex takes the newest page by name.
    NoDatabase,
    /// A database without a row for the thread: the same.
    NoRow,
    /// `threads.rollout_path`.
    Path(PathBuf),
}

fn open(db: &Path, flags: OpenFlags, busy: Duration) -> Result<Connection, DbError> {
    // Only a regular file inside the home, never a link (see `check_db_files`).
    crate::model::codex::state::check_db_files(db).map_err(|e| DbError {
        errno: e.raw_os_error().unwrap_or(libc::EACCES),
        reason: format!(
            "{}: {}",
            db.display(),
            crate::model::core::input::io_message(&e)
        ),
    })?;
    let flags = flags | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let c = Connection::open_with_flags(db, flags).map_err(db_error)?;
    c.busy_timeout(busy).map_err(db_error)?;
    Ok(c)
}

/// Which page `threads.rollout_path` names for the thread, read only.
pub fn current(home: &Path, thread_id: &str, busy: Duration) -> Result<Current, DbError> {
    let db = home.join(STATE_DB);
    if !db.exists() {
        return Ok(Current::NoDatabase);
    }
    let c = open(&db, OpenFlags::SQLITE_OPEN_READ_ONLY, busy)?;
    let row: Option<Option<String>> = c
        .query_row(
            "SELECT rollout_path FROM threads WHERE id = ?1",
            [thread_id],
            |r| r.get(0),
        )
        .optional()
        .map_err(db_error)?;
    Ok(match row {
        Some(Some(p)) if !p.is_empty() => Current::Path(PathBuf::from(p)),
        _ => Current::NoRow,
    })
}

/// What the update did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Updated {
    NoDatabase,
    /// No row for the thread (Codex takes the newest page by name, and adds the row).
    NoRow,
    /// `threads.rollout_path` (and the times) now name the new page.
    RolloutPath,
    /// The row's times were set to now (an append at the leaf).
    Times,
    /// The times could not be set (why); the appended reply stands, Codex resumes it,
    /// only the picker's order waits for Codex's next write.
    TimesSkipped(String),
}

/// Makes `page` the thread's current page: `rollout_path`, and the times the picker
/// sorts by, in one transaction.
pub fn set_current(
    home: &Path,
    thread_id: &str,
    page: &Path,
    now_ms: i64,
    busy: Duration,
) -> Result<Updated, DbError> {
    let db = home.join(STATE_DB);
    if !db.exists() {
        return Ok(Updated::NoDatabase);
    }
    let mut c = open(&db, OpenFlags::SQLITE_OPEN_READ_WRITE, busy)?;
    let path = page.to_str().ok_or_else(|| DbError {
        errno: libc::EINVAL,
        reason: format!("the page path {} is not UTF-8", page.display()),
    })?;
    let tx = c
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(db_error)?;
    let n = tx
        .execute(
            "UPDATE threads SET rollout_path = ?1, updated_at = ?2, updated_at_ms = ?3, \
             recency_at = ?2, recency_at_ms = ?3 WHERE id = ?4",
            rusqlite::params![path, now_ms / 1000, now_ms, thread_id],
        )
        .map_err(db_error)?;
    tx.commit().map_err(db_error)?;
    Ok(if n == 0 {
        Updated::NoRow
    } else {
        Updated::RolloutPath
    })
}

/// After an append at the leaf: the row's times, which the picker and `resume --last`
/// sort by, set to now, as Codex sets them when a turn is written. Not needed to
/// resume, so a failure is reported, not fatal.
pub fn touch(home: &Path, thread_id: &str, now_ms: i64, busy: Duration) -> Updated {
    let db = home.join(STATE_DB);
    if !db.exists() {
        return Updated::NoDatabase;
    }
    let run = || -> Result<usize, DbError> {
        let mut c = open(&db, OpenFlags::SQLITE_OPEN_READ_WRITE, busy)?;
        let tx = c
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(db_error)?;
        let n = tx
            .execute(
                "UPDATE threads SET updated_at = ?1, updated_at_ms = ?2, recency_at = ?1, \
                 recency_at_ms = ?2 WHERE id = ?3",
                rusqlite::params![now_ms / 1000, now_ms, thread_id],
            )
            .map_err(db_error)?;
        tx.commit().map_err(db_error)?;
        Ok(n)
    };
    match run() {
        Ok(0) => Updated::NoRow,
        Ok(_) => Updated::Times,
        Err(e) => Updated::TimesSkipped(format!("{}: {}", db.display(), e.reason)),
    }
}
