//! A file as `stat` gives it, and the clock: what sessionfs's caches key a file by
//! (the search's index, [`super::memo`]), and the margin within which a file's times
//! do not yet tell a later change from the last one.
//!
//! Any write, truncation or `utimensat` sets a file's ctime to the current time, and
//! no user can set it back; but two changes within one tick of the file system's
//! clock get the same ctime. So what was read of a file is trusted on its `stat`
//! alone only when the reading started (or, for the index, ended and was checked)
//! at least [`RACY`] after the ctime: git's "racy" entries.

use std::os::unix::fs::MetadataExt;

/// An instant as (seconds, nanoseconds) since the epoch.
pub type Stamp = (i64, i64);

/// How long after a file's ctime a reading must be for the file to be trusted on its
/// `stat` alone.
pub const RACY: Stamp = (3, 0);

/// A file as `stat` sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime: Stamp,
    pub ctime: Stamp,
}

impl Stat {
    pub fn of(m: &std::fs::Metadata) -> Stat {
        Stat {
            dev: m.dev(),
            ino: m.ino(),
            size: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        }
    }
}

/// The clock now.
pub fn now() -> Stamp {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (d.as_secs() as i64, i64::from(d.subsec_nanos()))
}

pub fn plus(a: Stamp, b: Stamp) -> Stamp {
    let ns = a.1 + b.1;
    (a.0 + b.0 + ns / 1_000_000_000, ns % 1_000_000_000)
}

/// Whether a reading at `at` is past the racy margin of a file whose ctime is `ctime`.
pub fn past_racy(at: Stamp, ctime: Stamp) -> bool {
    at >= plus(ctime, RACY)
}
