//! The watcher thread: keeps the view in step with the session file on disk.
//!
//! Pi (or anything else) may append to the session file while it is mounted, and Pi
//! rewrites a file when it migrates an old format. The watcher notices and calls the
//! view's `refresh`, which catches up and sends the invalidations that make the change
//! visible.
//!
//! It uses inotify through `libc`:
//!
//! * on the file: `IN_MODIFY`, `IN_CLOSE_WRITE`, `IN_ATTRIB`, `IN_MOVE_SELF`,
//!   `IN_DELETE_SELF`;
//! * on its directory: `IN_CREATE`, `IN_MOVED_TO` and `IN_DELETE` for the file's name,
//!   so that a file replaced by a rename (how editors and migrations write) is
//!   followed: the watch moves to whatever file now has the name.
//!
//! * optionally (a Claude Code session, [`Watcher::spawn_with_side`]) on the session's
//!   side folder `<stem>/` and its `subagents/`: `IN_CREATE`, `IN_MOVED_TO`,
//!   `IN_MODIFY`, `IN_CLOSE_WRITE`, so that what a subagent writes shows up as what
//!   the session file gets, and so does a new `custom-title.json` there (the watches
//!   follow the folders as they are created).
//!
//! * optionally (a session over several files in several folders: a Codex thread's
//!   pages, [`Watcher::spawn_with_dirs`]) on each folder the session names:
//!   `IN_CREATE`, `IN_MOVED_TO`, `IN_MODIFY`, `IN_CLOSE_WRITE`, `IN_DELETE`, any of
//!   which refreshes. A folder not there yet is watched through its nearest existing
//!   parent (a new day folder appears), and the list is asked again after every
//!   refresh, so a page in a new folder is followed from then on.
//!
//! Bursts are coalesced: after an event the thread waits until the file has been quiet
//! for a few milliseconds (but never longer than a tenth of a second in all) and then
//! refreshes once. As a safety net against missed events (inotify does not see
//! changes made through NFS, say) it also refreshes once a second, events or not.
//!
//! Guarantees: the thread never panics and never ends on its own. A refresh that fails
//! (the file was deleted, or became unreadable) is logged as a warning once per
//! distinct error and otherwise ignored, so the mount keeps showing the last state it
//! read. If inotify is unavailable, the thread polls once a second. It stops promptly
//! when [`Watcher::stop`] is called or the [`Watcher`] is dropped.

use log::{debug, info, warn};
use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Timings of the watcher loop.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// Refresh after this long without any event.
    pub safety_poll: Duration,
    /// A burst of events is over once none arrived for this long.
    pub quiet: Duration,
    /// Refresh at the latest this long after the first event of a burst.
    pub max_delay: Duration,
}

impl Default for Timing {
    fn default() -> Timing {
        Timing {
            safety_poll: Duration::from_secs(1),
            quiet: Duration::from_millis(10),
            max_delay: Duration::from_millis(100),
        }
    }
}

const FILE_MASK: u32 = libc::IN_MODIFY
    | libc::IN_CLOSE_WRITE
    | libc::IN_ATTRIB
    | libc::IN_MOVE_SELF
    | libc::IN_DELETE_SELF;
const DIR_MASK: u32 = libc::IN_CREATE | libc::IN_MOVED_TO | libc::IN_DELETE | libc::IN_ONLYDIR;
/// On a side folder: new folders and files in it, and writes to its files.
const SIDE_MASK: u32 =
    libc::IN_CREATE | libc::IN_MOVED_TO | libc::IN_MODIFY | libc::IN_CLOSE_WRITE | libc::IN_ONLYDIR;

/// On a folder of a session's other files: anything in it.
const DIRS_MASK: u32 = libc::IN_CREATE
    | libc::IN_MOVED_TO
    | libc::IN_MODIFY
    | libc::IN_CLOSE_WRITE
    | libc::IN_DELETE
    | libc::IN_ONLYDIR;

/// The folders a session's files are in, asked again after each refresh.
pub type Dirs = Box<dyn Fn() -> Vec<PathBuf> + Send>;

/// A running watcher thread. Dropping it stops the thread and waits for it.
pub struct Watcher {
    stop: OwnedFd,
    handle: Option<JoinHandle<()>>,
}

impl Watcher {
    /// Starts watching `path`, calling `refresh` after it changes (and once a second
    /// regardless). `refresh` runs on the watcher's thread; its errors are logged.
    ///
    /// Changes made before this returns may go unseen until the next safety poll: a
    /// caller that read the file earlier should refresh once itself afterwards.
    pub fn spawn<F, E>(path: &Path, refresh: F) -> io::Result<Watcher>
    where
        F: FnMut() -> Result<(), E> + Send + 'static,
        E: std::fmt::Display,
    {
        Watcher::spawn_with(path, Timing::default(), refresh)
    }

    /// As [`spawn`](Self::spawn), with other timings.
    pub fn spawn_with<F, E>(path: &Path, timing: Timing, refresh: F) -> io::Result<Watcher>
    where
        F: FnMut() -> Result<(), E> + Send + 'static,
        E: std::fmt::Display,
    {
        Watcher::spawn_inner(path, timing, false, refresh)
    }

    /// As [`spawn`](Self::spawn), also watching the session's side folder
    /// (`<stem>/subagents/`, where Claude Code writes its subagents' transcripts).
    pub fn spawn_with_side<F, E>(path: &Path, refresh: F) -> io::Result<Watcher>
    where
        F: FnMut() -> Result<(), E> + Send + 'static,
        E: std::fmt::Display,
    {
        Watcher::spawn_inner(path, Timing::default(), true, refresh)
    }

    /// As [`spawn`](Self::spawn), also watching the folders `dirs` names (a Codex
    /// thread's day folders, where its pages grow and new pages appear).
    pub fn spawn_with_dirs<F, E>(path: &Path, dirs: Dirs, refresh: F) -> io::Result<Watcher>
    where
        F: FnMut() -> Result<(), E> + Send + 'static,
        E: std::fmt::Display,
    {
        Watcher::spawn_full(path, Timing::default(), false, Some(dirs), refresh)
    }

    fn spawn_inner<F, E>(path: &Path, timing: Timing, side: bool, refresh: F) -> io::Result<Watcher>
    where
        F: FnMut() -> Result<(), E> + Send + 'static,
        E: std::fmt::Display,
    {
        Watcher::spawn_full(path, timing, side, None, refresh)
    }

    fn spawn_full<F, E>(
        path: &Path,
        timing: Timing,
        side: bool,
        dirs: Option<Dirs>,
        refresh: F,
    ) -> io::Result<Watcher>
    where
        F: FnMut() -> Result<(), E> + Send + 'static,
        E: std::fmt::Display,
    {
        // SAFETY: plain syscall; the result is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nobody else.
        let stop = unsafe { OwnedFd::from_raw_fd(fd) };
        // The watches are in place when this returns: a change made from now on is
        // seen.
        let lp = Loop::new(path.to_path_buf(), timing, side, dirs, stop.as_raw_fd());
        let handle = std::thread::Builder::new()
            .name("sessionfs-watch".into())
            .spawn(move || {
                crate::prio::helper();
                let mut refresh = refresh;
                lp.run(&mut refresh)
            })?;
        Ok(Watcher {
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
            debug!("watcher: signalling stop: {}", io::Error::last_os_error());
        }
        if let Some(h) = self.handle.take()
            && h.join().is_err()
        {
            warn!("the session file watcher panicked");
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// What a batch of inotify events means.
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    /// Something happened to the session file: refresh.
    changed: bool,
    /// The name may now lead to another file (or none): move the file watch.
    rewatch: bool,
}

impl std::ops::BitOrAssign for Seen {
    fn bitor_assign(&mut self, o: Seen) {
        self.changed |= o.changed;
        self.rewatch |= o.rewatch;
    }
}

enum Wake {
    Stop,
    Timeout,
    Events,
}

struct Loop {
    path: PathBuf,
    timing: Timing,
    stop: RawFd,
    inotify: Option<Inotify>,
    last_error: Option<String>,
    dirs: Option<Dirs>,
}

impl Loop {
    fn new(path: PathBuf, timing: Timing, side: bool, dirs: Option<Dirs>, stop: RawFd) -> Loop {
        let inotify = match Inotify::new(&path, side) {
            Ok(mut i) => {
                if let Some(d) = &dirs {
                    i.watch_dirs(d());
                }
                Some(i)
            }
            Err(e) => {
                warn!(
                    "cannot watch {} for changes ({e}); checking it every {:?} instead",
                    path.display(),
                    timing.safety_poll
                );
                None
            }
        };
        Loop {
            path,
            timing,
            stop,
            inotify,
            last_error: None,
            dirs,
        }
    }

    fn run<E: std::fmt::Display>(mut self, refresh: &mut dyn FnMut() -> Result<(), E>) {
        // The safety net runs once per `safety_poll` whatever the events: a folder
        // whose other files keep changing would otherwise keep it from ever running.
        let mut polled = Instant::now();
        loop {
            match self.wait(self.timing.safety_poll.saturating_sub(polled.elapsed())) {
                Wake::Stop => return,
                Wake::Timeout => {}
                Wake::Events => {
                    let mut seen = self.read_events();
                    let start = Instant::now();
                    loop {
                        let left = self.timing.max_delay.saturating_sub(start.elapsed());
                        if left.is_zero() {
                            break;
                        }
                        match self.wait(left.min(self.timing.quiet)) {
                            Wake::Stop => return,
                            Wake::Timeout => break,
                            Wake::Events => seen |= self.read_events(),
                        }
                    }
                    if seen.rewatch
                        && let Some(i) = &mut self.inotify
                    {
                        i.rewatch();
                    }
                    if seen.changed {
                        // Read just now: the safety net's next turn is a second away.
                        self.refresh(refresh);
                        polled = Instant::now();
                    }
                }
            }
            if polled.elapsed() >= self.timing.safety_poll {
                if let Some(i) = &mut self.inotify {
                    i.rewatch();
                }
                self.refresh(refresh);
                polled = Instant::now();
            }
        }
    }

    fn refresh<E: std::fmt::Display>(&mut self, refresh: &mut dyn FnMut() -> Result<(), E>) {
        let r = refresh();
        // The session may now span another folder (a new page in a new day folder).
        if let (Some(d), Some(i)) = (&self.dirs, &mut self.inotify) {
            i.watch_dirs(d());
        }
        match r {
            Ok(()) => {
                if self.last_error.take().is_some() {
                    info!("{} can be read again", self.path.display());
                }
            }
            Err(e) => {
                let msg = e.to_string();
                if self.last_error.as_deref() == Some(&msg) {
                    debug!("refreshing from {}: {msg}", self.path.display());
                } else {
                    warn!(
                        "refreshing from {} failed: {msg}; the mount keeps showing what it read last",
                        self.path.display()
                    );
                    self.last_error = Some(msg);
                }
            }
        }
    }

    /// Waits for the stop signal, an inotify event, or `timeout`.
    fn wait(&self, timeout: Duration) -> Wake {
        let mut fds = [
            libc::pollfd {
                fd: self.stop,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: self.inotify.as_ref().map_or(-1, |i| i.fd.as_raw_fd()),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as i32;
        // SAFETY: `fds` is a live array of two pollfds; a negative fd is ignored.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
        if n < 0 {
            // EINTR, or something odd: treat as a timeout, which is always safe.
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

    fn read_events(&mut self) -> Seen {
        match &mut self.inotify {
            Some(i) => i.read(),
            None => Seen::default(),
        }
    }
}

/// An inotify instance watching one file and its directory.
struct Inotify {
    fd: OwnedFd,
    path: CString,
    dir: CString,
    name: OsString,
    file_wd: Option<i32>,
    /// Device and inode of the file `file_wd` watches.
    file_id: Option<(u64, u64)>,
    dir_wd: Option<i32>,
    /// The side folder `<stem>/` and its `subagents/`, when watched, and their watches.
    side: Option<(CString, CString)>,
    side_name: OsString,
    side_wd: Option<i32>,
    sub_wd: Option<i32>,
    /// Watches on the session's other folders (or their nearest existing parents).
    extra_wds: Vec<i32>,
}

impl Inotify {
    fn new(path: &Path, side: bool) -> io::Result<Inotify> {
        // SAFETY: plain syscall; the result is checked.
        let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC | libc::IN_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let cstr = |p: &OsStr| {
            CString::new(p.as_bytes())
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path holds a NUL byte"))
        };
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let mut i = Inotify {
            fd,
            path: cstr(path.as_os_str())?,
            dir: cstr(dir.as_os_str())?,
            name: path
                .file_name()
                .map(OsStr::to_os_string)
                .unwrap_or_default(),
            file_wd: None,
            file_id: None,
            dir_wd: None,
            side: None,
            side_name: path
                .file_stem()
                .map(OsStr::to_os_string)
                .unwrap_or_default(),
            side_wd: None,
            sub_wd: None,
            extra_wds: Vec::new(),
        };
        if side {
            let folder = path.with_extension("");
            i.side = Some((
                cstr(folder.as_os_str())?,
                cstr(folder.join("subagents").as_os_str())?,
            ));
        }
        i.rewatch();
        Ok(i)
    }

    fn add_watch(&self, path: &CString, mask: u32) -> io::Result<i32> {
        // SAFETY: `path` is a valid C string; the result is checked.
        let wd = unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), path.as_ptr(), mask) };
        if wd < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(wd)
        }
    }

    /// Watches each folder of `dirs`, or, for one not there yet, its nearest existing
    /// parent (so that its creation is seen). Watches already there are kept.
    fn watch_dirs(&mut self, dirs: Vec<PathBuf>) {
        for d in dirs {
            for a in d.ancestors().take(4) {
                let Ok(c) = CString::new(a.as_os_str().as_bytes()) else {
                    break;
                };
                if let Ok(wd) = self.add_watch(&c, DIRS_MASK | libc::IN_MASK_ADD) {
                    if !self.extra_wds.contains(&wd) {
                        self.extra_wds.push(wd);
                    }
                    break;
                }
            }
        }
    }

    /// Makes sure the directory is watched and the file watch is on the file that
    /// has the name now.
    fn rewatch(&mut self) {
        if self.dir_wd.is_none() {
            match self.add_watch(&self.dir, DIR_MASK) {
                Ok(wd) => self.dir_wd = Some(wd),
                Err(e) => debug!("watching directory {:?}: {e}", self.dir),
            }
        }
        if let Some((folder, sub)) = &self.side {
            // Adding a watch on a path already watched returns the same descriptor.
            if let Ok(wd) = self.add_watch(folder, SIDE_MASK) {
                self.side_wd = Some(wd);
            }
            if let Ok(wd) = self.add_watch(sub, SIDE_MASK) {
                self.sub_wd = Some(wd);
            }
        }
        let path = Path::new(OsStr::from_bytes(self.path.as_bytes()));
        let id = match std::fs::metadata(path) {
            Ok(m) => (m.dev(), m.ino()),
            // No file by that name now: keep whatever watch there is, and wait for
            // the directory to report a new one.
            Err(_) => return,
        };
        if self.file_wd.is_some() && self.file_id == Some(id) {
            return;
        }
        match self.add_watch(&self.path, FILE_MASK) {
            Ok(wd) => {
                if let Some(old) = self.file_wd.filter(|&old| old != wd) {
                    // SAFETY: plain syscall; failure (the watch is already gone) is fine.
                    unsafe { libc::inotify_rm_watch(self.fd.as_raw_fd(), old) };
                }
                debug!("watching {:?} (inode {})", self.path, id.1);
                self.file_wd = Some(wd);
                self.file_id = Some(id);
            }
            Err(e) => debug!("watching {:?}: {e}", self.path),
        }
    }

    /// Reads every pending event.
    fn read(&mut self) -> Seen {
        #[repr(C, align(8))]
        struct Buf([u8; 8192]);
        let mut buf = Buf([0; 8192]);
        let mut seen = Seen::default();
        loop {
            // SAFETY: reads at most `buf.0.len()` bytes into a live buffer.
            let n =
                unsafe { libc::read(self.fd.as_raw_fd(), buf.0.as_mut_ptr().cast(), buf.0.len()) };
            if n <= 0 {
                // EAGAIN (drained), EINTR, or an error: in every case the next poll
                // will tell.
                return seen;
            }
            seen |= self.parse(&buf.0[..n as usize]);
        }
    }

    fn parse(&mut self, mut bytes: &[u8]) -> Seen {
        const HEADER: usize = std::mem::size_of::<libc::inotify_event>();
        let mut seen = Seen::default();
        while bytes.len() >= HEADER {
            // SAFETY: at least HEADER bytes remain; the read is unaligned-safe.
            let ev: libc::inotify_event =
                unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast()) };
            let end = (HEADER + ev.len as usize).min(bytes.len());
            let raw_name = &bytes[HEADER..end];
            let name = &raw_name[..raw_name
                .iter()
                .position(|&b| b == 0)
                .unwrap_or(raw_name.len())];
            bytes = &bytes[end..];
            seen |= self.classify(ev.wd, ev.mask, name);
        }
        seen
    }

    fn classify(&mut self, wd: i32, mask: u32, name: &[u8]) -> Seen {
        if mask & libc::IN_Q_OVERFLOW != 0 {
            return Seen {
                changed: true,
                rewatch: true,
            };
        }
        if Some(wd) == self.file_wd {
            if mask & libc::IN_IGNORED != 0 {
                self.file_wd = None;
                self.file_id = None;
            }
            let moved = mask & (libc::IN_MOVE_SELF | libc::IN_DELETE_SELF | libc::IN_IGNORED);
            return Seen {
                changed: true,
                rewatch: moved != 0,
            };
        }
        if Some(wd) == self.dir_wd {
            if mask & libc::IN_IGNORED != 0 {
                self.dir_wd = None;
                return Seen {
                    changed: false,
                    rewatch: true,
                };
            }
            if name == self.name.as_bytes() {
                return Seen {
                    changed: true,
                    rewatch: true,
                };
            }
            if self.side.is_some() && name == self.side_name.as_bytes() {
                // The side folder appeared: watch it.
                return Seen {
                    changed: false,
                    rewatch: true,
                };
            }
        }
        if self.side.is_some() && Some(wd) == self.side_wd {
            if mask & libc::IN_IGNORED != 0 {
                self.side_wd = None;
            }
            // `subagents/` appeared: watch it, and read whatever it already holds.
            // `custom-title.json` (the title 2.1.332 also keeps there) changed.
            return Seen {
                changed: name == b"subagents" || name == b"custom-title.json",
                rewatch: true,
            };
        }
        if self.side.is_some() && Some(wd) == self.sub_wd {
            if mask & libc::IN_IGNORED != 0 {
                self.sub_wd = None;
            }
            return Seen {
                changed: true,
                rewatch: mask & libc::IN_IGNORED != 0,
            };
        }
        if self.extra_wds.contains(&wd) {
            if mask & libc::IN_IGNORED != 0 {
                self.extra_wds.retain(|&w| w != wd);
            }
            return Seen {
                changed: true,
                rewatch: false,
            };
        }
        // An old file watch we already replaced, or another file in the directory.
        Seen::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn fast() -> Timing {
        Timing {
            safety_poll: Duration::from_secs(3600),
            quiet: Duration::from_millis(10),
            max_delay: Duration::from_millis(50),
        }
    }

    fn wait_for(deadline: Duration, cond: impl Fn() -> bool) -> bool {
        let end = Instant::now() + deadline;
        while Instant::now() < end {
            if cond() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        cond()
    }

    fn counting(path: &Path, timing: Timing) -> (Watcher, Arc<AtomicUsize>) {
        let count = Arc::new(AtomicUsize::new(0));
        let c = Arc::clone(&count);
        let w = Watcher::spawn_with(path, timing, move || -> Result<(), String> {
            c.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
        .unwrap();
        (w, count)
    }

    /// A session over several folders: a write in another folder refreshes, and so
    /// does a file in a folder made after the watch started.
    #[test]
    fn follows_the_sessions_other_folders() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, "a\n").unwrap();
        let other = dir.path().join("other");
        std::fs::create_dir(&other).unwrap();
        let later = dir.path().join("later/day");
        let dirs = vec![other.clone(), later.clone()];
        let count = Arc::new(AtomicUsize::new(0));
        let c = Arc::clone(&count);
        let w = Watcher::spawn_full(
            &path,
            fast(),
            false,
            Some(Box::new(move || dirs.clone())),
            move || -> Result<(), String> {
                c.fetch_add(1, Ordering::SeqCst);
                Ok(())
            },
        )
        .unwrap();
        std::fs::write(other.join("page.jsonl"), "x\n").unwrap();
        assert!(wait_for(Duration::from_secs(5), || count
            .load(Ordering::SeqCst)
            >= 1));
        let before = count.load(Ordering::SeqCst);
        std::fs::create_dir_all(&later).unwrap();
        // The folder's creation is seen through its parent; then the folder is watched.
        assert!(wait_for(Duration::from_secs(5), || count
            .load(Ordering::SeqCst)
            > before));
        std::thread::sleep(Duration::from_millis(100));
        let before = count.load(Ordering::SeqCst);
        std::fs::write(later.join("page2.jsonl"), "y\n").unwrap();
        assert!(wait_for(Duration::from_secs(5), || count
            .load(Ordering::SeqCst)
            > before));
        w.stop();
    }

    #[test]
    fn follows_appends_and_replacement() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, "a\n").unwrap();
        let (w, count) = counting(&path, fast());

        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"b\n").unwrap();
        drop(f);
        assert!(wait_for(Duration::from_secs(5), || count
            .load(Ordering::SeqCst)
            >= 1));

        // Replace the file by renaming another over it, then append to the new one:
        // the watch must have moved to the new inode.
        let tmp = dir.path().join("s.tmp");
        std::fs::write(&tmp, "c\n").unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        let before = {
            assert!(wait_for(Duration::from_secs(5), || count
                .load(Ordering::SeqCst)
                >= 2));
            // Let the burst settle so that the next count is the append's alone.
            std::thread::sleep(Duration::from_millis(200));
            count.load(Ordering::SeqCst)
        };
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"d\n").unwrap();
        drop(f);
        assert!(wait_for(Duration::from_secs(5), || count
            .load(Ordering::SeqCst)
            > before));
        w.stop();
    }

    #[test]
    fn coalesces_bursts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, "").unwrap();
        let timing = Timing {
            max_delay: Duration::from_millis(500),
            quiet: Duration::from_millis(100),
            ..fast()
        };
        let (w, count) = counting(&path, timing);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        for _ in 0..50 {
            f.write_all(b"x\n").unwrap();
        }
        drop(f);
        assert!(wait_for(Duration::from_secs(5), || count
            .load(Ordering::SeqCst)
            >= 1));
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            count.load(Ordering::SeqCst) <= 2,
            "refreshed {} times",
            count.load(Ordering::SeqCst)
        );
        w.stop();
    }

    #[test]
    fn the_safety_net_runs_while_the_folder_keeps_changing() {
        // Other files made and removed in the session's folder every 5 ms (another
        // session's, an agent's lock files): their events wake the watcher, and the
        // safety net's refresh must still come once per poll.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, "a\n").unwrap();
        let timing = Timing {
            safety_poll: Duration::from_millis(100),
            ..fast()
        };
        let (w, count) = counting(&path, timing);
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let busy = {
            let stop = Arc::clone(&stop);
            let other = dir.path().join("other.jsonl");
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let _ = std::fs::write(&other, "b\n");
                    let _ = std::fs::remove_file(&other);
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
        };
        let n = count.load(Ordering::SeqCst);
        let polled = wait_for(Duration::from_secs(30), || {
            count.load(Ordering::SeqCst) >= n + 3
        });
        stop.store(true, Ordering::SeqCst);
        busy.join().unwrap();
        w.stop();
        assert!(polled, "no safety refresh while the folder kept changing");
    }

    #[test]
    fn survives_deletion_and_polls() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, "a\n").unwrap();
        let timing = Timing {
            safety_poll: Duration::from_millis(50),
            ..fast()
        };
        let count = Arc::new(AtomicUsize::new(0));
        let c = Arc::clone(&count);
        let p = path.clone();
        let w = Watcher::spawn_with(&path, timing, move || {
            c.fetch_add(1, Ordering::SeqCst);
            std::fs::metadata(&p).map(|_| ())
        })
        .unwrap();
        std::fs::remove_file(&path).unwrap();
        let n = count.load(Ordering::SeqCst);
        assert!(wait_for(Duration::from_secs(5), || count
            .load(Ordering::SeqCst)
            >= n + 3));
        // A new file under the name is picked up.
        std::fs::write(&path, "b\n").unwrap();
        let n = count.load(Ordering::SeqCst);
        assert!(wait_for(Duration::from_secs(5), || count
            .load(Ordering::SeqCst)
            > n));
        w.stop();
    }

    #[test]
    fn stops_promptly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing.jsonl");
        let (w, _count) = counting(
            &path,
            Timing {
                safety_poll: Duration::from_secs(3600),
                ..fast()
            },
        );
        let t = Instant::now();
        drop(w);
        assert!(t.elapsed() < Duration::from_secs(1));
    }
}
