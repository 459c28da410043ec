//! [`FsView`]: what the FUSE adapter needs from a view.
//!
//! Two views implement it: [`SessionView`] (one session file mounted on its own) and
//! [`MultiView`](super::MultiView) (a sessions directory, each session inside it a
//! `SessionView` loaded on demand). The adapter serves either through this trait and
//! knows nothing of which one it has.

use super::{Attr, DirEntry, OpenMode, Opened, Result, SessionView};
use std::ffi::OsStr;
use std::path::Path;

/// The filesystem operations of a view, by inode number. Every method takes `&self`:
/// state lives behind locks.
pub trait FsView: Send + Sync {
    fn lookup(&self, parent: u64, name: &OsStr) -> Result<Attr>;
    fn getattr(&self, ino: u64) -> Result<Attr>;
    /// `getattr` asked for by a read going past the size the kernel knows (see
    /// `SessionView::getattr_reading`).
    fn getattr_reading(&self, ino: u64) -> Result<Attr> {
        self.getattr(ino)
    }
    fn readlink(&self, ino: u64) -> Result<Vec<u8>>;
    /// Entries from `offset` on; each with the offset of the entry after it.
    fn readdir(&self, ino: u64, offset: u64) -> Result<Vec<(u64, DirEntry)>>;
    /// As `readdir`, with each entry's attributes.
    fn readdirplus(&self, ino: u64, offset: u64) -> Result<Vec<(u64, DirEntry, Attr)>>;
    /// `pid` is the calling thread as FUSE reports it (see `SessionView::flush_from`).
    /// A mount that answers no `open` (read-only) never calls it: its reads come with
    /// the handle [`NO_HANDLE`](super::NO_HANDLE).
    fn open_file(&self, ino: u64, mode: OpenMode, pid: Option<u32>) -> Result<Opened>;
    fn read(&self, ino: u64, fh: u64, offset: u64, size: u32) -> Result<Vec<u8>>;
    fn write(&self, ino: u64, fh: u64, offset: u64, data: &[u8]) -> Result<u32>;
    /// `setattr` with a size.
    fn truncate(&self, ino: u64, fh: Option<u64>, size: u64) -> Result<Attr>;
    /// `setattr` of times alone (`touch`) on a file that shows a write bit, by the
    /// process `pid`: what it does, if anything (on `fork`, it forks; see
    /// `SessionView::touch`).
    fn touch(&self, ino: u64, fh: Option<u64>, pid: Option<u32>) -> Result<()>;
    fn flush(&self, ino: u64, fh: u64, pid: Option<u32>) -> Result<()>;
    fn release(&self, ino: u64, fh: u64) -> Result<()>;
    fn symlink(&self, parent: u64, name: &OsStr, target: &Path) -> Result<Attr>;
    fn unlink(&self, parent: u64, name: &OsStr) -> Result<()>;
    /// `rename(2)` of `parent/name` to `newparent/newname`; `flags` are
    /// `renameat2(2)`'s (`RENAME_NOREPLACE`, `RENAME_EXCHANGE`).
    fn rename(
        &self,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
    ) -> Result<()>;
}

impl FsView for SessionView {
    fn lookup(&self, parent: u64, name: &OsStr) -> Result<Attr> {
        SessionView::lookup(self, parent, name)
    }
    fn getattr(&self, ino: u64) -> Result<Attr> {
        SessionView::getattr(self, ino)
    }
    fn getattr_reading(&self, ino: u64) -> Result<Attr> {
        SessionView::getattr_reading(self, ino)
    }
    fn readlink(&self, ino: u64) -> Result<Vec<u8>> {
        SessionView::readlink(self, ino)
    }
    fn readdir(&self, ino: u64, offset: u64) -> Result<Vec<(u64, DirEntry)>> {
        SessionView::readdir(self, ino, offset)
    }
    fn readdirplus(&self, ino: u64, offset: u64) -> Result<Vec<(u64, DirEntry, Attr)>> {
        SessionView::readdirplus(self, ino, offset)
    }
    fn open_file(&self, ino: u64, mode: OpenMode, pid: Option<u32>) -> Result<Opened> {
        SessionView::open_file_as(self, ino, mode, pid)
    }
    fn read(&self, ino: u64, fh: u64, offset: u64, size: u32) -> Result<Vec<u8>> {
        SessionView::read(self, ino, fh, offset, size)
    }
    fn write(&self, ino: u64, fh: u64, offset: u64, data: &[u8]) -> Result<u32> {
        SessionView::write(self, ino, fh, offset, data)
    }
    fn truncate(&self, ino: u64, fh: Option<u64>, size: u64) -> Result<Attr> {
        SessionView::truncate(self, ino, fh, size)
    }
    fn touch(&self, ino: u64, fh: Option<u64>, pid: Option<u32>) -> Result<()> {
        SessionView::touch(self, ino, fh, pid)
    }
    fn flush(&self, ino: u64, fh: u64, pid: Option<u32>) -> Result<()> {
        SessionView::flush_from(self, ino, fh, pid)
    }
    fn release(&self, ino: u64, fh: u64) -> Result<()> {
        SessionView::release(self, ino, fh)
    }
    fn symlink(&self, parent: u64, name: &OsStr, target: &Path) -> Result<Attr> {
        SessionView::symlink(self, parent, name, target)
    }
    fn unlink(&self, parent: u64, name: &OsStr) -> Result<()> {
        SessionView::unlink(self, parent, name)
    }
    fn rename(
        &self,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
    ) -> Result<()> {
        SessionView::rename(self, parent, name, newparent, newname, flags)
    }
}
