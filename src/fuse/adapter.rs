//! The `fuser::Filesystem` implementation: a translation layer and nothing more.
//!
//! Every handler makes one call on the view ([`FsView`]) and turns its answer into a
//! reply: `Ok` into the reply's payload (attributes with the TTL, owner, group and mode
//! the view chose, generation 0, a block size of 4096), `Err` into the errno that
//! [`view::Error::errno`] names, logged at debug level.
//!
//! A few requests have no counterpart in the view, and are answered here:
//!
//! * `setattr` without a size: timestamps are accepted (and kept nowhere) on a file
//!   that shows a write bit, so that `touch fork` forks and `cp -p` into `reply`
//!   succeeds, and refused with `EACCES` everywhere else (a `touch` that reports
//!   success and changes nothing would be a lie); a `chmod` or `chown` that would
//!   change anything is refused with `EPERM` (the mode and owner of every inode are
//!   the session file's, and pretending to change them would be a lie the next `stat`
//!   exposes), while one that restates the current values succeeds.
//! * `create`, `mknod`, `mkdir`, `rmdir` and `link`: the tree is derived from the
//!   session file and cannot be edited this way. They fail with `EROFS` on a read-only
//!   mount and `EACCES` otherwise. (`rename` goes to the view, which relabels within
//!   `labels/` and refuses the rest the same way.)
//! * `forget`: a no-op. Inode numbers are computed from the session, not reference
//!   counted, so the kernel forgetting one frees nothing.
//! * extended attributes: there are none (`ENODATA`, empty list, `ENOTSUP` to set).
//! * `statfs`: a filesystem with no free space, 4096-byte blocks and 255-byte names.
//! * `fsync`: succeeds without doing anything; a reply is appended and synced when its
//!   file is closed, as the layout promises.
//!
//! A writer's `flush` is answered only once the notifier thread has sent the
//! invalidations the view queued for it (bounded by `notify::FLUSH_WAIT`): the kernel
//! keeps directory listings, and an `ls` right after `echo … > reply` must not be
//! answered from the one cached before the write. See `notify` for why that wait
//! cannot deadlock.
//!
//! A panic inside a handler is caught at the request's boundary ([`guard`]): the request
//! fails with `EIO` and the mount goes on.
//!
//! A directory's mtime is the view's with the count of invalidations sent for it in
//! its nanoseconds below the microsecond (`notify` says why: the kernel checks it
//! before it serves a listing it kept).
//!
//! On a read-only mount, `open` and `flush` answer `ENOSYS`: the kernel then opens,
//! closes and releases files without asking (no OPEN, FLUSH or RELEASE round trips),
//! keeps their pages across opens, and reads them with handle 0, which the view serves
//! by inode. `opendir` answers `ENOSYS` on every mount, for the same saving on
//! directories.

use super::notify::{Delivery, FLUSH_WAIT};
use crate::view::{self, Attr, FileKind, FsView, OpenMode};
use log::{debug, error};
use std::ffi::OsStr;
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

use fuser::{
    AccessFlags, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation,
    INodeNo, InitFlags, KernelConfig, LockOwner, OpenAccMode, OpenFlags, PollEvents, PollFlags,
    PollNotifier, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory,
    ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyLseek, ReplyOpen, ReplyPoll, ReplyStatfs,
    ReplyWrite, ReplyXattr, Request, TimeOrNow, WriteFlags,
};

/// Block size reported in `stat` (`st_blksize`) and `statfs`.
const BLKSIZE: u32 = 4096;

/// Called once when the session ends (see [`Adapter::on_destroy`]).
type DestroyHook = Box<dyn FnOnce() + Send + Sync>;

/// Serves one view (a [`SessionView`](crate::view::SessionView), or a
/// [`MultiView`](crate::view::MultiView) of a sessions directory) to the kernel.
pub struct Adapter {
    view: Arc<dyn FsView>,
    read_only: bool,
    on_destroy: Option<DestroyHook>,
    /// Where a writer's `flush` waits for its invalidations (see `notify`).
    delivery: Option<Arc<Delivery>>,
}

impl Adapter {
    /// An adapter for `view` (which says who owns each inode, [`Attr::uid`]). With
    /// `read_only`, requests that would edit the tree fail with `EROFS` rather than
    /// `EACCES`.
    pub fn new(view: Arc<dyn FsView>, read_only: bool) -> Adapter {
        Adapter {
            view,
            read_only,
            on_destroy: None,
            delivery: None,
        }
    }

    /// Makes each writer's `flush` wait (bounded, holding no lock) until the notifier
    /// thread behind `delivery` has sent the invalidations its append made: the
    /// kernel's cached listings are forgotten before `close` returns, so an `ls` right
    /// after `echo … > reply` shows the new entry.
    pub fn with_delivery(mut self, delivery: Arc<Delivery>) -> Adapter {
        self.delivery = Some(delivery);
        self
    }

    /// Runs `hook` when the session ends, before fuser's own clean-up. The mount
    /// command uses it to take the unmount into its own hands, so that an unmount
    /// racing the kernel's is not reported as a failure.
    pub fn on_destroy(mut self, hook: impl FnOnce() + Send + Sync + 'static) -> Adapter {
        self.on_destroy = Some(Box::new(hook));
        self
    }

    fn file_attr(&self, a: &Attr) -> FileAttr {
        // A directory's time carries the invalidations sent for it, so that the kernel
        // drops a listing it filled while one was on its way (see `notify`).
        let mtime = match (&self.delivery, a.kind) {
            (Some(d), FileKind::Dir) => d.dir_mtime(a.ino, a.mtime),
            _ => a.mtime,
        };
        FileAttr {
            ino: INodeNo(a.ino),
            size: a.size,
            blocks: a.size.div_ceil(512),
            atime: mtime,
            mtime,
            ctime: mtime,
            crtime: mtime,
            kind: file_type(a.kind),
            perm: a.perm,
            nlink: a.nlink,
            uid: a.uid,
            gid: a.gid,
            rdev: 0,
            blksize: BLKSIZE,
            flags: 0,
        }
    }

    fn reply_entry(&self, a: &Attr, reply: ReplyEntry) {
        reply.entry_with_ttls(&a.ttl, &a.ttl, &self.file_attr(a), Generation(0));
    }

    /// The errno for requests that would edit the tree's shape.
    fn refuse_edit(&self, op: &str, parent: INodeNo, name: &OsStr) -> Errno {
        let (errno, why) = if self.read_only {
            (Errno::EROFS, "the mount is read-only")
        } else {
            (Errno::EACCES, "the tree is derived from the session file")
        };
        debug!("{op}(parent {parent}, {name:?}): refused: {why}");
        errno
    }
}

fn file_type(k: FileKind) -> FileType {
    match k {
        FileKind::Dir => FileType::Directory,
        FileKind::File => FileType::RegularFile,
        FileKind::Symlink => FileType::Symlink,
    }
}

/// Runs one request's handler. A panic in it (a bug, never an input: every failure an
/// input can cause is an error of its own) is caught here, logged, and the request
/// answered `EIO` (fuser answers `EIO` for a reply dropped unsent, which unwinding
/// does): without this, the panic would end the FUSE thread that served it, and four
/// such requests the whole mount. The view's locks are `parking_lot`'s, which unwinding
/// releases without poisoning them, so the other requests go on. (A session whose
/// indexing panics is an `ERROR` file already: `Session::open` turns the panic into
/// its load error.)
fn guard(op: &str, handler: impl FnOnce()) {
    if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(handler)) {
        let why = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(no message)".into());
        error!(
            "{op}: the request failed inside sessionfs ({why}), answered EIO; please report this bug"
        );
    }
}

/// Logs a failed request at debug level and gives its errno.
fn errno(op: std::fmt::Arguments<'_>, e: &view::Error) -> Errno {
    debug!("{op}: {e:?}");
    Errno::from_i32(e.errno())
}

impl Filesystem for Adapter {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        // Each capability is asked for on its own, so that a kernel lacking one still
        // gets the others. Refusals only cost speed (readdirplus) or an extra
        // `setattr` before a truncating open (atomic O_TRUNC), both handled.
        for (name, caps) in [
            (
                "readdirplus",
                InitFlags::FUSE_DO_READDIRPLUS | InitFlags::FUSE_READDIRPLUS_AUTO,
            ),
            ("atomic O_TRUNC", InitFlags::FUSE_ATOMIC_O_TRUNC),
            // Symlink targets are cached; the view invalidates those that change.
            ("cached symlinks", InitFlags::FUSE_CACHE_SYMLINKS),
            // A file whose mtime changed has its cached pages dropped when the kernel
            // next fetches its attributes. Without it only a size change does, and
            // `.sessionfs-stats` (same length, new counters) would be read stale from
            // the cache on a read-only mount. Files with long TTLs cost no extra
            // request: the kernel fetches attributes on a read only once they expired.
            ("auto data invalidation", InitFlags::FUSE_AUTO_INVAL_DATA),
        ] {
            if let Err(missing) = config.add_capabilities(caps) {
                debug!("init: the kernel does not offer {name} ({missing:?}); going without");
            }
        }
        Ok(())
    }

    fn destroy(&mut self) {
        debug!("destroy: the session ended");
        if let Some(hook) = self.on_destroy.take() {
            hook();
        }
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        guard("lookup", || match self.view.lookup(parent.0, name) {
            Ok(a) => self.reply_entry(&a, reply),
            Err(e) => reply.error(errno(format_args!("lookup({parent}, {name:?})"), &e)),
        });
    }

    fn forget(&self, _req: &Request, _ino: INodeNo, _nlookup: u64) {}

    fn getattr(&self, _req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        guard("getattr", || {
            // With a handle, the kernel is about to read past the size it knows.
            let a = match fh {
                Some(_) => self.view.getattr_reading(ino.0),
                None => self.view.getattr(ino.0),
            };
            match a {
                Ok(a) => reply.attr(&a.ttl, &self.file_attr(&a)),
                Err(e) => reply.error(errno(format_args!("getattr({ino})"), &e)),
            }
        });
    }

    fn setattr(
        &self,
        req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        guard("setattr", || {
            // The permission bits and the owner are computed; only restating them is
            // fine. Checked first, so that a refused request changes nothing.
            if mode.is_some() || uid.is_some() || gid.is_some() {
                let a = match self.view.getattr(ino.0) {
                    Ok(a) => a,
                    Err(e) => return reply.error(errno(format_args!("setattr({ino})"), &e)),
                };
                let mode_changes = mode.is_some_and(|m| (m & 0o7777) as u16 != a.perm);
                let owner_changes =
                    uid.is_some_and(|u| u != a.uid) || gid.is_some_and(|g| g != a.gid);
                if mode_changes || owner_changes {
                    debug!(
                        "setattr({ino}, mode {mode:?}, uid {uid:?}, gid {gid:?}): refused: \
                         modes and owners are computed by sessionfs"
                    );
                    return reply.error(Errno::EPERM);
                }
            }
            // A size truncates. Times alone (`touch`) change nothing the mount keeps:
            // they are accepted on a file that shows a write bit (`touch fork` forks,
            // `cp -p` into `reply` must not fail at its end) and refused on every other,
            // which would otherwise report a success that did nothing.
            let touched = mtime.is_some() || atime.is_some();
            let result = match size {
                Some(size) => self.view.truncate(ino.0, fh.map(|f| f.0), size),
                None if touched => match self.view.getattr(ino.0) {
                    Ok(a) if a.kind == FileKind::File && a.perm & 0o222 != 0 => self
                        .view
                        .touch(ino.0, fh.map(|f| f.0), Some(req.pid()))
                        .and_then(|()| self.view.getattr(ino.0)),
                    Ok(_) => {
                        debug!("setattr({ino}, times): refused: nothing to write there");
                        return reply.error(if self.read_only {
                            Errno::EROFS
                        } else {
                            Errno::EACCES
                        });
                    }
                    Err(e) => Err(e),
                },
                None => self.view.getattr(ino.0),
            };
            let a = match result {
                Ok(a) => a,
                Err(e) => {
                    return reply.error(errno(format_args!("setattr({ino}, size {size:?})"), &e));
                }
            };
            reply.attr(&a.ttl, &self.file_attr(&a));
        });
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        guard("readlink", || match self.view.readlink(ino.0) {
            Ok(target) => reply.data(&target),
            Err(e) => reply.error(errno(format_args!("readlink({ino})"), &e)),
        });
    }

    fn mknod(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        _mode: u32,
        _umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        guard("mknod", || {
            reply.error(self.refuse_edit("mknod", parent, name));
        });
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        _mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        guard("mkdir", || {
            reply.error(self.refuse_edit("mkdir", parent, name));
        });
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        guard("unlink", || match self.view.unlink(parent.0, name) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(format_args!("unlink({parent}, {name:?})"), &e)),
        });
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        guard("rmdir", || {
            reply.error(self.refuse_edit("rmdir", parent, name));
        });
    }

    fn symlink(
        &self,
        _req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        guard("symlink", || {
            match self.view.symlink(parent.0, link_name, target) {
                Ok(a) => self.reply_entry(&a, reply),
                Err(e) => reply.error(errno(
                    format_args!("symlink({parent}, {link_name:?} -> {target:?})"),
                    &e,
                )),
            }
        });
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        guard("rename", || {
            match self
                .view
                .rename(parent.0, name, newparent.0, newname, flags.bits())
            {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(errno(
                    format_args!("rename({parent}, {name:?} -> {newparent}, {newname:?})"),
                    &e,
                )),
            }
        });
    }

    fn link(
        &self,
        _req: &Request,
        _ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        guard("link", || {
            reply.error(self.refuse_edit("link", newparent, newname));
        });
    }

    fn opendir(&self, _req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        guard("opendir", || {
            // ENOSYS tells the kernel that directories need no open (it remembers this for
            // the whole mount): it then sends neither OPENDIR nor RELEASEDIR again, two of
            // the five requests a directory costs `find` and `grep -r`, and opens every
            // directory as if we had answered FOPEN_KEEP_CACHE | FOPEN_CACHE_DIR. Listings
            // may be cached: the view invalidates a directory whenever its listing changes
            // (see `view::Invalidation`), and a vanished directory fails in READDIR.
            reply.error(Errno::ENOSYS);
        });
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        guard("open", || {
            if self.read_only {
                // Nothing can be written (the kernel refuses it on a read-only mount before
                // asking), so files need no handle: ENOSYS tells the kernel so, and it never
                // sends OPEN or RELEASE again. It then keeps every file's pages across opens
                // (as FOPEN_KEEP_CACHE would), and its reads come with handle 0
                // (`view::NO_HANDLE`): the view finds the file by its inode.
                reply.error(Errno::ENOSYS);
                return;
            }
            let mode = OpenMode {
                write: flags.acc_mode() != OpenAccMode::O_RDONLY,
                truncate: flags.0 & libc::O_TRUNC != 0,
                append: flags.0 & libc::O_APPEND != 0,
            };
            let write = mode.write;
            match self.view.open_file(ino.0, mode, Some(req.pid())) {
                Ok(o) => {
                    let mut f = FopenFlags::empty();
                    if o.keep_cache {
                        f |= FopenFlags::FOPEN_KEEP_CACHE;
                    }
                    if o.direct_io {
                        f |= FopenFlags::FOPEN_DIRECT_IO;
                    }
                    if !write {
                        // Nothing happens on a reader's close: spare the FLUSH round trip.
                        f |= FopenFlags::FOPEN_NOFLUSH;
                    }
                    reply.opened(FileHandle(o.fh), f);
                }
                Err(e) => reply.error(errno(format_args!("open({ino}, {mode:?})"), &e)),
            }
        });
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        guard("read", || match self.view.read(ino.0, fh.0, offset, size) {
            Ok(data) => reply.data(&data),
            Err(e) => reply.error(errno(
                format_args!("read({ino}, fh {fh}, offset {offset}, size {size})"),
                &e,
            )),
        });
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        guard("write", || {
            match self.view.write(ino.0, fh.0, offset, data) {
                Ok(n) => reply.written(n),
                Err(e) => reply.error(errno(
                    format_args!(
                        "write({ino}, fh {fh}, offset {offset}, {} bytes)",
                        data.len()
                    ),
                    &e,
                )),
            }
        });
    }

    fn flush(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        guard("flush", || {
            if self.read_only {
                // Files opened without OPEN (see `open`) get a FLUSH at every close, until
                // this ENOSYS: the kernel then stops sending them.
                reply.error(Errno::ENOSYS);
                return;
            }
            let r = self.view.flush(ino.0, fh.0, Some(req.pid()));
            // Only writers flush (readers' files are opened with FOPEN_NOFLUSH). The view
            // has queued what its append made stale; the kernel holds no lock while it
            // waits for this FLUSH, and the view's locks are all let go.
            if let Some(d) = &self.delivery
                && !d.wait_sent(FLUSH_WAIT)
            {
                debug!("flush({ino}): invalidations not sent within {FLUSH_WAIT:?}");
            }
            match r {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(errno(format_args!("flush({ino}, fh {fh})"), &e)),
            }
        });
    }

    fn release(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        guard("release", || match self.view.release(ino.0, fh.0) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(format_args!("release({ino}, fh {fh})"), &e)),
        });
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        guard("fsync", || {
            reply.ok();
        });
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        guard("readdir", || match self.view.readdir(ino.0, offset) {
            Ok(entries) => {
                for (next, e) in entries {
                    if reply.add(INodeNo(e.ino), next, file_type(e.kind), &e.name) {
                        break;
                    }
                }
                reply.ok();
            }
            Err(e) => reply.error(errno(format_args!("readdir({ino}, offset {offset})"), &e)),
        });
    }

    fn readdirplus(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        guard("readdirplus", || {
            match self.view.readdirplus(ino.0, offset) {
                Ok(entries) => {
                    for (next, e, a) in entries {
                        let attr = self.file_attr(&a);
                        if reply.add(INodeNo(e.ino), next, &e.name, &a.ttl, &attr, Generation(0)) {
                            break;
                        }
                    }
                    reply.ok();
                }
                Err(e) => reply.error(errno(
                    format_args!("readdirplus({ino}, offset {offset})"),
                    &e,
                )),
            }
        });
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        guard("fsyncdir", || {
            reply.ok();
        });
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        guard("statfs", || {
            reply.statfs(0, 0, 0, 0, 0, BLKSIZE, 255, BLKSIZE);
        });
    }

    fn setxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _value: &[u8],
        _flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        guard("setxattr", || {
            reply.error(if self.read_only {
                Errno::EROFS
            } else {
                Errno::from_i32(libc::ENOTSUP)
            });
        });
    }

    fn getxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _size: u32,
        reply: ReplyXattr,
    ) {
        guard("getxattr", || {
            reply.error(Errno::from_i32(libc::ENODATA));
        });
    }

    fn listxattr(&self, _req: &Request, _ino: INodeNo, size: u32, reply: ReplyXattr) {
        guard("listxattr", || {
            if size == 0 {
                reply.size(0)
            } else {
                reply.data(&[])
            }
        });
    }

    fn removexattr(&self, _req: &Request, _ino: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        guard("removexattr", || {
            reply.error(if self.read_only {
                Errno::EROFS
            } else {
                Errno::from_i32(libc::ENODATA)
            });
        });
    }

    fn access(&self, _req: &Request, _ino: INodeNo, _mask: AccessFlags, reply: ReplyEmpty) {
        guard("access", || {
            // Not called with `default_permissions`, which every mount uses: the kernel
            // checks the permission bits itself.
            reply.ok();
        });
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        _mode: u32,
        _umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        guard("create", || {
            reply.error(self.refuse_edit("create", parent, name));
        });
    }

    fn poll(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _ph: PollNotifier,
        _events: PollEvents,
        _flags: PollFlags,
        reply: ReplyPoll,
    ) {
        guard("poll", || {
            // ENOSYS makes the kernel treat every file as always ready, and stop asking.
            reply.error(Errno::ENOSYS);
        });
    }

    fn lseek(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: i64,
        _whence: i32,
        reply: ReplyLseek,
    ) {
        guard("lseek", || {
            // ENOSYS makes the kernel seek on its own (files have no holes), and stop asking.
            reply.error(Errno::ENOSYS);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A handler that panics is answered (its reply dropped: EIO) and the thread goes on.
    #[test]
    fn a_panicking_handler_does_not_end_its_thread() {
        struct Reply(std::sync::Arc<std::sync::atomic::AtomicBool>);
        impl Drop for Reply {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reply = Reply(dropped.clone());
        guard("lookup", move || {
            let _r = reply;
            panic!("a bug");
        });
        assert!(dropped.load(std::sync::atomic::Ordering::SeqCst));
        let mut ran = false;
        guard("getattr", || ran = true);
        assert!(ran);
    }
}
