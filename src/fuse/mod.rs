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
//! * `crate::search::fresh`: the index keeper, a thread told by the watchers (a send on
//!   a channel, never blocking) which session files changed, that indexes their new
//!   bytes for `sessionfs grep` off every request; none with `SESSIONFS_CACHE=off` or
//!   `SESSIONFS_INDEX=off`.
//! * [`mount`]: the `sessionfs mount` command: checks that reject a bad invocation
//!   with one clear sentence and a distinct exit status, the mount itself, clean
//!   unmounting on `SIGINT`/`SIGTERM`/`SIGHUP` or an external `umount`, and
//!   `--background`.
//! * [`unmount`]: the `sessionfs unmount` command.
//!
//! # Threads and their priorities: requests first
//!
//! The kernel's requests are answered on fuser's session threads (four, see
//! [`mount`]), at normal priority. Every other thread the mount starts does work that
//! must not make a request of another session wait for a CPU, so it runs lower
//! ([`crate::prio`] has the table and the reasons):
//!
//! * a session thread that indexes a session (a request entered it) runs at nice
//!   [`LOAD_NICE`](crate::prio::LOAD_NICE) for the load, and back at normal
//!   priority after it, where the process may raise it back (root, or an
//!   `RLIMIT_NICE` of 20): a request of another session preempts it;
//! * the parse helper of a context (`context-parse`) runs at `SCHED_IDLE`: the
//!   request thread never waits for it (it parses again what the helper has not
//!   handed back), so an idle helper can slow nothing;
//! * tree drawing's helpers, the [`watch`] and [`dir_watch`] threads run at nice
//!   [`HELPER_NICE`](crate::prio::HELPER_NICE), not `SCHED_IDLE`: a request can wait
//!   for them (the `tree` read joins its helpers; a request of a session the watcher
//!   reloads waits on that session's `loading` lock), and an idle-policy thread holding
//!   what a request waits for would make the request wait for every other program on
//!   the machine (a priority inversion). A nice level slows them, never starves them.
//! * the index keeper (`sessionfs-index`) runs at nice
//!   [`HELPER_NICE`](crate::prio::HELPER_NICE) too: nobody waits for it, but it holds
//!   the index's writers' lock while it writes, which a `sessionfs index` waits for;
//! * the [`notify`] thread stays at normal priority: the kernel's caches go stale
//!   until it runs.
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
