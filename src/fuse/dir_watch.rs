//! The watcher of a sessions directory: keeps a [`MultiView`] in step with the disk.
//!
//! One inotify instance watches the sessions directory and every project folder the
//! view has seen (the view announces them through [`DirWatch`]). Watching folders is
//! enough for everything, sessions included: a folder's watch reports events on the
//! files in it, by name.
//!
//! * `IN_CREATE`, `IN_DELETE`, `IN_MOVED_FROM`, `IN_MOVED_TO`: a project or a session
//!   appeared or went away (also a session replaced by a rename, as Pi's migrations
//!   write): listings and names are invalidated, a loaded session catches up or is
//!   dropped.
//! * `IN_MODIFY`, `IN_CLOSE_WRITE`, `IN_ATTRIB`: a session's file changed: a loaded
//!   one catches up (appends appear), one that could not be shown is tried again.
//! * `IN_IGNORED` (the folder was deleted or its file system unmounted), `IN_MOVE_SELF`:
//!   the folder's watch is gone; the view watches it again if it comes back.
//! * `IN_Q_OVERFLOW`: events were lost: every listing is invalidated and every loaded
//!   session catches up.
//!
//! As in [`watch`](super::watch), bursts are coalesced (a few milliseconds of quiet,
//! at most a tenth of a second). Every second, events or not, the loaded sessions
//! catch up anyway, and a listing that can tell cheaply whether it changed (a
//! database's) is read again if it did, as a safety net ([`MultiView::safety_poll`]). The thread never panics, and stops promptly when
//! the [`DirWatcher`] is stopped or dropped. Without inotify only the safety net runs.

use super::watch::Timing;
use crate::view::{DirWatch, MultiView};
use log::{debug, warn};
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

const MASK: u32 = libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_MODIFY
    | libc::IN_CLOSE_WRITE
    | libc::IN_ATTRIB
    | libc::IN_MOVE_SELF
    | libc::IN_ONLYDIR;
const LISTING: u32 = libc::IN_CREATE | libc::IN_DELETE | libc::IN_MOVED_FROM | libc::IN_MOVED_TO;

/// The inotify instance and which folder each watch is, shared by the view (which
/// adds watches) and the thread (which reads events).
struct Watches {
    /// `None` when inotify is unavailable.
    fd: Option<OwnedFd>,
    by_wd: Mutex<HashMap<i32, u32>>,
}

impl DirWatch for Watches {
    fn watch_dir(&self, container: u32, path: &Path) -> bool {
        let Some(fd) = &self.fd else { return false };
        let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
            return false;
        };
        // SAFETY: `c` is a valid C string; the result is checked.
        let wd = unsafe { libc::inotify_add_watch(fd.as_raw_fd(), c.as_ptr(), MASK) };
        if wd < 0 {
            debug!(
                "watching {}: {}",
                path.display(),
                io::Error::last_os_error()
            );
            return false;
        }
        self.by_wd.lock().insert(wd, container);
        true
    }
}

/// A running watcher thread. Dropping it stops the thread and waits for it.
pub struct DirWatcher {
    stop: OwnedFd,
    handle: Option<JoinHandle<()>>,
}

impl DirWatcher {
    /// Starts watching `view`'s directory (and every folder it sees from now on).
    pub fn spawn(view: Arc<MultiView>) -> io::Result<DirWatcher> {
        DirWatcher::spawn_with(view, Timing::default())
    }

    /// As [`spawn`](Self::spawn), with other timings.
    pub fn spawn_with(view: Arc<MultiView>, timing: Timing) -> io::Result<DirWatcher> {
        // SAFETY: plain syscall; the result is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nobody else.
        let stop = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: plain syscall; the result is checked.
        let ifd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC | libc::IN_NONBLOCK) };
        let ifd = if ifd < 0 {
            warn!(
                "cannot watch {} for changes ({}); checking loaded sessions every {:?} instead",
                view.root().display(),
                io::Error::last_os_error(),
                timing.safety_poll
            );
            None
        } else {
            // SAFETY: `ifd` was just created and is owned by nobody else.
            Some(unsafe { OwnedFd::from_raw_fd(ifd) })
        };
        let watches = Arc::new(Watches {
            fd: ifd,
            by_wd: Mutex::new(HashMap::new()),
        });
        // The root (and anything seen already) is watched when this returns.
        view.set_dir_watch(watches.clone());
        let stop_fd = stop.as_raw_fd();
        let handle = std::thread::Builder::new()
            .name("sessionfs-dirwatch".into())
            .spawn(move || {
                crate::prio::helper();
                run(&view, &watches, timing, stop_fd)
            })?;
        Ok(DirWatcher {
            stop,
            handle: Some(handle),
        })
    }

    /// Stops the thread and waits for it.
    pub fn stop(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to an eventfd we own.
        let n = unsafe { libc::write(self.stop.as_raw_fd(), (&one as *const u64).cast(), 8) };
        if n != 8 {
            debug!(
                "dir watcher: signalling stop: {}",
                io::Error::last_os_error()
            );
        }
        if let Some(h) = self.handle.take()
            && h.join().is_err()
        {
            warn!("the sessions directory watcher panicked");
        }
    }
}

impl Drop for DirWatcher {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// What a burst of events asks for.
#[derive(Default)]
struct Batch {
    /// (folder, name) -> whether the listing changed (else only the content).
    names: HashMap<(u32, OsString), bool>,
    gone: HashSet<u32>,
    overflow: bool,
}

enum Wake {
    Stop,
    Timeout,
    Events,
}

fn run(view: &MultiView, w: &Watches, timing: Timing, stop: RawFd) {
    let ifd = w.fd.as_ref().map_or(-1, |f| f.as_raw_fd());
    // The safety net runs once per `safety_poll` whatever the events: a folder that
    // keeps changing (an agent writing a line every few hundred milliseconds) would
    // otherwise keep it from ever running, and a change no event reports from ever
    // being shown.
    let mut polled = Instant::now();
    loop {
        match wait(
            stop,
            ifd,
            timing.safety_poll.saturating_sub(polled.elapsed()),
        ) {
            Wake::Stop => return,
            Wake::Timeout => {}
            Wake::Events => {
                let mut batch = Batch::default();
                read_events(w, &mut batch);
                let start = Instant::now();
                loop {
                    let left = timing.max_delay.saturating_sub(start.elapsed());
                    if left.is_zero() {
                        break;
                    }
                    match wait(stop, ifd, left.min(timing.quiet)) {
                        Wake::Stop => return,
                        Wake::Timeout => break,
                        Wake::Events => read_events(w, &mut batch),
                    }
                }
                dispatch(view, batch);
            }
        }
        if polled.elapsed() >= timing.safety_poll {
            view.safety_poll();
            polled = Instant::now();
        }
    }
}

fn dispatch(view: &MultiView, b: Batch) {
    if b.overflow {
        debug!("inotify queue overflowed: rescanning");
        view.rescan();
    }
    for c in b.gone {
        view.dir_gone(c);
    }
    for ((c, name), listing) in b.names {
        view.dir_changed(c, &name, listing);
    }
}

/// Waits for the stop signal, an inotify event, or `timeout`.
fn wait(stop: RawFd, ifd: RawFd, timeout: std::time::Duration) -> Wake {
    let mut fds = [
        libc::pollfd {
            fd: stop,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: ifd,
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as i32;
    // SAFETY: `fds` is a live array of two pollfds; a negative fd is ignored.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
    if n < 0 {
        return Wake::Timeout;
    }
    if fds[0].revents != 0 {
        Wake::Stop
    } else if fds[1].revents != 0 {
        Wake::Events
    } else {
        Wake::Timeout
    }
}

fn read_events(w: &Watches, batch: &mut Batch) {
    let Some(fd) = &w.fd else { return };
    #[repr(C, align(8))]
    struct Buf([u8; 16384]);
    let mut buf = Buf([0; 16384]);
    loop {
        // SAFETY: reads at most `buf.0.len()` bytes into a live buffer.
        let n = unsafe { libc::read(fd.as_raw_fd(), buf.0.as_mut_ptr().cast(), buf.0.len()) };
        if n <= 0 {
            return;
        }
        parse(w, &buf.0[..n as usize], batch);
    }
}

fn parse(w: &Watches, mut bytes: &[u8], batch: &mut Batch) {
    const HEADER: usize = std::mem::size_of::<libc::inotify_event>();
    while bytes.len() >= HEADER {
        // SAFETY: at least HEADER bytes remain; the read is unaligned-safe.
        let ev: libc::inotify_event = unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast()) };
        let end = (HEADER + ev.len as usize).min(bytes.len());
        let raw = &bytes[HEADER..end];
        let name = &raw[..raw.iter().position(|&b| b == 0).unwrap_or(raw.len())];
        bytes = &bytes[end..];
        if ev.mask & libc::IN_Q_OVERFLOW != 0 {
            batch.overflow = true;
            continue;
        }
        let container = {
            let mut m = w.by_wd.lock();
            let c = m.get(&ev.wd).copied();
            if ev.mask & libc::IN_IGNORED != 0 {
                m.remove(&ev.wd);
            }
            c
        };
        let Some(c) = container else { continue };
        if ev.mask & (libc::IN_IGNORED | libc::IN_MOVE_SELF) != 0 {
            if ev.mask & libc::IN_MOVE_SELF != 0
                && let Some(fd) = &w.fd
            {
                // The folder moved away: its watch would follow it under another name.
                // SAFETY: plain syscall; failure (already gone) is fine.
                unsafe { libc::inotify_rm_watch(fd.as_raw_fd(), ev.wd) };
            }
            batch.gone.insert(c);
            continue;
        }
        if name.is_empty() {
            continue;
        }
        let listing = ev.mask & LISTING != 0;
        let slot = batch
            .names
            .entry((c, OsStr::from_bytes(name).to_os_string()))
            .or_insert(false);
        *slot |= listing;
    }
}
