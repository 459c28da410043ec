//! How a Codex page is opened, by everything that reads one (the index, the range
//! reader, the zstd stream, forks): in a file of its own, below both `files` and `zst`,
//! which each need it.

use std::fs;
use std::io;
use std::path::Path;

/// Opens a page: only a regular file, never waiting (a FIFO named like a page), and
/// inside its `sessions/` (or `archived_sessions/`) folder when it lies in one (which
/// may itself be a link; a link out of it is not followed, see
/// [`crate::model::core::input::open_beneath`]).
pub fn open_page(path: &Path) -> io::Result<fs::File> {
    let folder = path.ancestors().skip(1).find(|a| {
        a.file_name()
            .is_some_and(|n| n == "sessions" || n == "archived_sessions")
    });
    match folder {
        Some(f) => crate::model::core::input::open_beneath(f, path),
        None => crate::model::core::input::open_regular(path),
    }
}
