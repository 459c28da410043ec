//! The filesystem view: what every inode of a mounted session is.
//!
//! This layer decides names, inode numbers, attributes, directory listings, file
//! contents, symlink targets and what a write means, as plain Rust over the
//! [`crate::model`]. It knows nothing of FUSE: the adapter in `crate::fuse` calls these
//! methods and turns `Ok` into a reply and `Err` into an errno. Everything here can be
//! tested without a mount.
//!
//! The layout is the contract in `docs/LAYOUT.md`.

mod fs_view;
mod inode;
mod multi;
mod names;
mod session_view;

pub use fs_view::FsView;
pub use inode::{Ino, MAX_IMAGES};
pub use multi::{
    DirWatch, ERROR_NAME, MultiOptions, MultiView, SESSION_EXT, SLOT_SHIFT, STATS_INO, STATS_NAME,
    Stats,
};
pub use names::{entry_name, escape_id, unescape_name};
pub use session_view::{NO_HANDLE, Opened, Options, SessionView};

pub use crate::model::input::Access;
use std::ffi::OsString;
use std::time::{Duration, SystemTime};

/// The root directory's inode.
pub const ROOT_INO: u64 = 1;

/// What kind of inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Dir,
    File,
    Symlink,
}

/// Attributes of an inode, without FUSE types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attr {
    pub ino: u64,
    pub kind: FileKind,
    pub size: u64,
    pub mtime: SystemTime,
    /// Permission bits (e.g. 0o444).
    pub perm: u16,
    /// Owner and group.
    pub uid: u32,
    pub gid: u32,
    pub nlink: u32,
    /// How long the kernel may cache these attributes and the name that led here.
    pub ttl: Duration,
}

impl Attr {
    /// The attributes of an inode that shows what `access` describes: the one rule
    /// for who may do what in the mount. Every file and directory of a session carries
    /// the session's owner, group and permission bits (the model's [`Access`]: its
    /// file's, narrowed by the other files it shows), so that with `--allow-other` the
    /// kernel (`default_permissions`) refuses exactly whom the disk refuses. A file
    /// keeps the read bits; a directory gets search with read; write bits only where
    /// `writes` (the mount writes there and the agent would take it, see
    /// `Session::refusal`). A symbolic link is `0777`, as links are; only its owner
    /// matters. A sessions directory's own folders carry the folder's bits the same
    /// way (they are never written).
    pub fn shown(
        ino: u64,
        kind: FileKind,
        size: u64,
        mtime: SystemTime,
        ttl: Duration,
        access: Access,
        writes: bool,
    ) -> Attr {
        let perm = match kind {
            FileKind::Dir => access.dir_mode(writes),
            FileKind::File => access.file_mode(writes),
            FileKind::Symlink => 0o777,
        };
        Attr {
            ino,
            kind,
            size,
            mtime,
            perm,
            uid: access.uid,
            gid: access.gid,
            nlink: 1,
            ttl,
        }
    }
}

/// How a file is opened for writing: the `open(2)` flags a view needs to know.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenMode {
    /// Opened for writing (`O_WRONLY` or `O_RDWR`).
    pub write: bool,
    /// `O_TRUNC`: the file starts empty, and is emptied even if nothing is written.
    pub truncate: bool,
    /// `O_APPEND`: every write goes at the end of what this descriptor holds.
    pub append: bool,
}

/// One directory entry in a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    pub ino: u64,
    pub kind: FileKind,
    pub name: OsString,
}

/// Where a view sends its invalidations: the adapter's notifier thread, once it is set
/// (nowhere before, as in tests that do not look).
#[derive(Default)]
pub(crate) struct InvalidationSink(
    parking_lot::Mutex<Option<std::sync::mpsc::Sender<Invalidation>>>,
);

impl InvalidationSink {
    pub(crate) fn set(&self, tx: std::sync::mpsc::Sender<Invalidation>) {
        *self.0.lock() = Some(tx);
    }

    pub(crate) fn send(&self, invs: Vec<Invalidation>) {
        if invs.is_empty() {
            return;
        }
        if let Some(tx) = &*self.0.lock() {
            for i in invs {
                let _ = tx.send(i);
            }
        }
    }
}

/// Kernel cache entries that a change to the session made stale. The adapter sends
/// them from a thread of its own, never from inside a request handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalidation {
    /// Attributes and cached data of this inode.
    Inode(u64),
    /// The name `name` in directory `parent`.
    Entry { parent: u64, name: OsString },
    /// Not an invalidation but a point in their stream: the notifier reports having
    /// sent everything queued before it (see `fuse::notify::Delivery`). Views never
    /// make one; they pass it on unchanged.
    Mark(u64),
}

/// Errors a view operation answers with; each maps to one errno.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    NotFound,
    /// An inode from before the session file was reloaded.
    Stale,
    NotDir,
    IsDir,
    /// Not allowed on this inode (writing a read-only file, creating files in an entry).
    Access,
    /// Read-only mount, or a v1 session.
    ReadOnly,
    /// Text written to `reply`/`name` is not UTF-8, or holds a NUL.
    NotUtf8,
    /// A reply of whitespace only: no message (`ENOMSG`).
    Blank,
    /// More than the reply size limit.
    TooBig,
    /// All writers together hold more unwritten text than the mount allows.
    Quota,
    /// Too many files open for writing at once.
    TooManyOpen,
    Exists,
    Invalid,
    NotSupported,
    /// I/O error reading or writing the session file (errno).
    Io(i32),
}

impl Error {
    pub fn errno(&self) -> i32 {
        match self {
            Error::NotFound => libc::ENOENT,
            Error::Stale => libc::ESTALE,
            Error::NotDir => libc::ENOTDIR,
            Error::IsDir => libc::EISDIR,
            Error::Access => libc::EACCES,
            Error::ReadOnly => libc::EROFS,
            Error::NotUtf8 => libc::EILSEQ,
            Error::Blank => libc::ENOMSG,
            Error::TooBig => libc::EFBIG,
            Error::Quota => libc::EDQUOT,
            Error::TooManyOpen => libc::EMFILE,
            Error::Exists => libc::EEXIST,
            Error::Invalid => libc::EINVAL,
            Error::NotSupported => libc::ENOSYS,
            Error::Io(e) => *e,
        }
    }
}

impl From<std::io::Error> for Error {
    /// The errno of an I/O error; one made by sessionfs (no errno) by its kind. A read
    /// past the end of a file that was cut under the mount (the bytes an inode shows
    /// are gone) is `ESTALE`, as for an inode from before a reload, never `EIO`.
    fn from(e: std::io::Error) -> Self {
        use std::io::ErrorKind as K;
        if let Some(n) = e.raw_os_error() {
            return Error::Io(n);
        }
        match e.kind() {
            K::UnexpectedEof => Error::Stale,
            K::NotFound => Error::NotFound,
            K::PermissionDenied => Error::Access,
            K::FileTooLarge => Error::TooBig,
            K::InvalidInput => Error::Invalid,
            _ => Error::Io(libc::EIO),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
