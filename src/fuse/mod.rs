//! Serving a [`SessionView`](crate::view::SessionView) (or a
//! [`MultiView`](crate::view::MultiView) of a sessions directory) over FUSE, and the
//! `mount` command.
//!
//! This module is deliberately thin. Everything a mounted session *means* (names,
//! inode numbers, sizes, contents, what a write does) is decided by `crate::view`,
//! which knows nothing of FUSE. What lives here is only the machinery around it:
//!
//! * [`adapter`]: the `fuser::Filesystem` implementation. Each request is turned into
//!   one call on the view; `Ok` becomes the reply and `Err` becomes the errno that
//!   [`view::Error::errno`](crate::view::Error::errno) names. It holds no state of
//!   its own beyond the view and the mount's owner.
//! * [`notify`]: a thread that owns the kernel [`fuser::Notifier`] and sends the
//!   cache invalidations the view asks for. Invalidations are never sent from a
//!   request handler, because the kernel may call back into the filesystem while one
//!   is in flight and the mount would deadlock.
//! * [`watch`]: a thread that follows the session file with inotify (and a slow poll as
//!   a safety net) and asks the view to catch up whenever another program appends to
//!   it, replaces it or rewrites it.
//! * [`dir_watch`]: the same for a sessions directory mounted whole (a
//!   [`MultiView`](crate::view::MultiView)): one inotify instance on the directory and
//!   every project folder seen, reporting sessions and folders that come, go or change.
//! * [`mount`]: the `sessionfs mount` command: checks that reject a bad invocation
//!   with one clear sentence and a distinct exit status, the mount itself, clean
//!   unmounting on `SIGINT`/`SIGTERM`/`SIGHUP` or an external `umount`, and
//!   `--background`.
//! * [`unmount`]: the `sessionfs unmount` command.
//!
//! Guarantees: no user-caused condition (a bad path, a deleted session file, a
//! refused capability, an unmount at any moment) makes this code panic; and when the
//! process exits on its own accord the mount point is left unmounted.

pub mod adapter;
pub mod dir_watch;
pub mod mount;
pub mod notify;
pub mod unmount;
pub mod watch;
