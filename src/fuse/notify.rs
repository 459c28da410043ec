//! The notifier thread: sends the view's cache invalidations to the kernel.
//!
//! When the session changes (another program appended to it, or a write through the
//! mount did), the view sends [`Invalidation`]s down a channel. This thread owns the
//! `fuser::Notifier` and is the only place that talks to the kernel about them.
//!
//! It exists because an invalidation must never be sent from a request handler, nor
//! while holding a lock that handlers need: the kernel may call back into the
//! filesystem while the notification is in flight (to look up a name, say), and with
//! the handler waiting on the kernel and the kernel waiting on a handler the mount
//! deadlocks. Here nothing waits on this thread.
//!
//! One wait is allowed, bounded: a writer's close. After `echo … > reply` returns, an
//! `ls` must show the new entry, but the kernel answers `ls` from the listing it keeps
//! until the invalidation of that listing arrives. So the `flush` that appended puts a
//! [`Delivery`] mark behind its invalidations and waits, holding no lock, until this
//! thread has reached the mark or [`FLUSH_WAIT`] has passed. While a FLUSH is answered
//! the kernel holds no lock that an invalidation needs, and the bound turns any wait
//! this thread might itself be stuck in (a kernel lock held by a process whose request
//! waits for a busy FUSE thread) into a delay, never a deadlock.
//!
//! **Listings the kernel filled while a change was on its way.** The kernel keeps
//! each directory's listing (`opendir` answers `ENOSYS`, see `adapter`), and an
//! invalidation of the directory drops the pages that hold it. But a `READDIR` that
//! was answered before the view changed and whose entries the kernel copies into
//! those pages only after the invalidation arrived fills them again with the old
//! listing (the kernel's fill checks its own resets, not invalidations), and nothing
//! would ever drop it: a session or project that appeared would stay unlisted until
//! the next change of that directory. What the kernel does check, before it serves a
//! kept listing from its start, is the directory's mtime against the one it had when
//! the listing was filled (with `FUSE_AUTO_INVAL_DATA`, which the mount asks for).
//! So before it sends a directory's invalidation, this thread counts it
//! ([`Delivery::changed`]), and the adapter shows every directory's mtime with that
//! count in its nanoseconds below the microsecond ([`Delivery::dir_mtime`]): a
//! listing filled before the change carries the old count and is dropped at the
//! next `ls`. The times users read (to the microsecond: agents write milliseconds)
//! stay as the layout says.
//!
//! Pending invalidations are drained in batches and duplicates within a batch are
//! sent once. An `ENOENT` answer means the kernel had nothing cached for that inode or
//! name, which is the common case and not an error; other failures are logged at
//! debug level (after an unmount every notification fails, harmlessly).

use crate::model::core::fasthash::FastMap;
use crate::view::Invalidation;
use fuser::{INodeNo, Notifier};
use log::debug;
use parking_lot::{Condvar, Mutex};
use std::collections::HashSet;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How often the thread checks for a stop request while the channel is idle.
const IDLE_CHECK: Duration = Duration::from_millis(200);

/// The longest a writer's close waits for its invalidations to reach the kernel.
pub const FLUSH_WAIT: Duration = Duration::from_secs(2);

/// How far the notifier thread has got: lets a request wait until the invalidations
/// queued before it was made have been sent to the kernel. And how many times it has
/// told the kernel that each inode changed, which a directory's mtime carries (see
/// the module docs).
///
/// Its locks are leaves: `reached` is held only to read or raise it, `changes` only
/// to count or read one inode's number, and nothing else is taken under either. The
/// notifier never holds one while it talks to the kernel.
pub struct Delivery {
    tx: Sender<Invalidation>,
    next: AtomicU64,
    reached: Mutex<u64>,
    cv: Condvar,
    /// Invalidations sent per inode, modulo [`CHANGE_STEPS`] (an inode never
    /// invalidated has none).
    changes: Mutex<FastMap<u64, u16>>,
}

/// How many different nanosecond values a directory's mtime takes below its
/// microsecond: a kept listing is wrongly served only if exactly a multiple of this
/// many invalidations of its directory were sent while it was being filled.
const CHANGE_STEPS: u16 = 1000;
/// The most inodes counted; past it the counts start afresh (a listing being filled
/// at that moment may then be kept until its directory's next change).
const MAX_COUNTED: usize = 1 << 20;

impl Delivery {
    /// A delivery tracker that queues its marks on `tx`, the notifier's channel.
    pub fn new(tx: Sender<Invalidation>) -> Arc<Delivery> {
        Arc::new(Delivery {
            tx,
            next: AtomicU64::new(0),
            reached: Mutex::new(0),
            cv: Condvar::new(),
            changes: Mutex::new(FastMap::default()),
        })
    }

    /// Counts an invalidation of `ino`, before it is sent (a `GETATTR` the kernel sends
    /// after it must see the new count).
    fn changed(&self, ino: u64) {
        let mut c = self.changes.lock();
        if c.len() >= MAX_COUNTED && !c.contains_key(&ino) {
            c.clear();
        }
        let n = c.entry(ino).or_insert(0);
        *n = (*n + 1) % CHANGE_STEPS;
    }

    /// The mtime to show for directory `ino` whose view time is `shown`: `shown` with
    /// its nanoseconds below the microsecond moved by the invalidations sent for it.
    pub fn dir_mtime(&self, ino: u64, shown: SystemTime) -> SystemTime {
        let Some(&n) = self.changes.lock().get(&ino) else {
            return shown;
        };
        with_change_count(shown, n)
    }

    /// Waits until everything queued on the channel before this call has been sent to
    /// the kernel, for at most `bound`. `false` if the bound passed first (or the
    /// notifier is gone). The caller must hold no lock.
    pub fn wait_sent(&self, bound: Duration) -> bool {
        // Anything queued before the number was taken lies before every mark with
        // this number or a higher one, whatever order the marks are queued in.
        let n = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        if self.tx.send(Invalidation::Mark(n)).is_err() {
            return false;
        }
        let deadline = Instant::now() + bound;
        let mut r = self.reached.lock();
        while *r < n {
            if self.cv.wait_until(&mut r, deadline).timed_out() {
                return *r >= n;
            }
        }
        true
    }

    /// The notifier reached mark `n`.
    fn reach(&self, n: u64) {
        let mut r = self.reached.lock();
        if n > *r {
            *r = n;
        }
        self.cv.notify_all();
    }
}

/// A running notifier thread. Dropping it stops the thread and waits for it.
pub struct NotifierThread {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl NotifierThread {
    /// Starts a thread that sends each invalidation received on `rx` to the kernel
    /// through `notifier`, and reports the marks it reaches to `delivery`. The thread
    /// ends when [`stop`](Self::stop) is called or every sender is gone.
    pub fn spawn(
        notifier: Notifier,
        rx: Receiver<Invalidation>,
        delivery: Arc<Delivery>,
    ) -> io::Result<NotifierThread> {
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("sessionfs-notify".into())
            .spawn(move || run(&notifier, &rx, &stop2, &delivery))?;
        Ok(NotifierThread {
            stop,
            handle: Some(handle),
        })
    }

    /// Stops the thread (dropping whatever is still queued) and waits for it.
    pub fn stop(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take()
            && h.join().is_err()
        {
            debug!("notifier thread panicked");
        }
    }
}

impl Drop for NotifierThread {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// `t` with its nanoseconds below the microsecond moved by `n` (modulo
/// [`CHANGE_STEPS`]); the microseconds and above unchanged.
fn with_change_count(t: SystemTime, n: u16) -> SystemTime {
    let steps = u32::from(CHANGE_STEPS);
    let (base, sub) = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (
            d - Duration::from_nanos(u64::from(d.subsec_nanos() % steps)),
            d.subsec_nanos() % steps,
        ),
        // Before 1970: left as it is.
        Err(_) => return t,
    };
    let sub = (sub + u32::from(n)) % steps;
    UNIX_EPOCH + base + Duration::from_nanos(u64::from(sub))
}

/// The thread's body.
fn run(notifier: &Notifier, rx: &Receiver<Invalidation>, stop: &AtomicBool, delivery: &Delivery) {
    drain_loop(rx, stop, |inv| match inv {
        Invalidation::Mark(n) => delivery.reach(*n),
        Invalidation::Inode(ino) => {
            delivery.changed(*ino);
            send(notifier, inv);
        }
        Invalidation::Entry { .. } => send(notifier, inv),
    });
}

/// Receives invalidations until stopped or disconnected, handing each batch to `sink`
/// without duplicates. Separate from [`run`] so that it can be tested without a mount.
fn drain_loop(rx: &Receiver<Invalidation>, stop: &AtomicBool, mut sink: impl FnMut(&Invalidation)) {
    let mut batch = Vec::new();
    let mut seen = HashSet::new();
    loop {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        match rx.recv_timeout(IDLE_CHECK) {
            Ok(first) => batch.push(first),
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return,
        }
        batch.extend(rx.try_iter());
        for inv in batch.drain(..) {
            if stop.load(Ordering::SeqCst) {
                return;
            }
            if seen.insert(key(&inv)) {
                sink(&inv);
            }
        }
        seen.clear();
    }
}

/// `Invalidation` as a hashable value, for deduplicating a batch.
#[derive(PartialEq, Eq, Hash)]
enum Key {
    Inode(u64),
    Entry(u64, std::ffi::OsString),
    Mark(u64),
}

fn key(inv: &Invalidation) -> Key {
    match inv {
        Invalidation::Inode(ino) => Key::Inode(*ino),
        Invalidation::Entry { parent, name } => Key::Entry(*parent, name.clone()),
        Invalidation::Mark(n) => Key::Mark(*n),
    }
}

fn send(notifier: &Notifier, inv: &Invalidation) {
    let result = match inv {
        Invalidation::Inode(ino) => notifier.inval_inode(INodeNo(*ino), 0, 0),
        Invalidation::Entry { parent, name } => notifier.inval_entry(INodeNo(*parent), name),
        Invalidation::Mark(_) => return,
    };
    match result {
        Ok(()) => {}
        // Nothing cached for it: nothing to invalidate.
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => debug!("invalidating {inv:?}: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;
    use std::sync::mpsc::channel;

    #[test]
    fn drains_dedups_and_ends_when_senders_are_gone() {
        let (tx, rx) = channel();
        let e = |p: u64, n: &str| Invalidation::Entry {
            parent: p,
            name: OsString::from(n),
        };
        for inv in [
            Invalidation::Inode(5),
            e(1, "a"),
            Invalidation::Inode(5),
            e(1, "a"),
            e(2, "a"),
        ] {
            tx.send(inv).unwrap();
        }
        drop(tx);
        let stop = AtomicBool::new(false);
        let mut got = Vec::new();
        drain_loop(&rx, &stop, |inv| got.push(inv.clone()));
        assert_eq!(got, vec![Invalidation::Inode(5), e(1, "a"), e(2, "a")]);
    }

    #[test]
    fn a_mark_is_reached_once_what_was_queued_before_it_is_sent() {
        let (tx, rx) = channel();
        let d = Delivery::new(tx.clone());
        tx.send(Invalidation::Inode(7)).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(Mutex::new(Vec::new()));
        let t = {
            let (d, stop, sent) = (Arc::clone(&d), Arc::clone(&stop), Arc::clone(&sent));
            std::thread::spawn(move || {
                drain_loop(&rx, &stop, |inv| match inv {
                    Invalidation::Mark(n) => d.reach(*n),
                    other => sent.lock().push(other.clone()),
                })
            })
        };
        assert!(d.wait_sent(Duration::from_secs(30)));
        assert_eq!(*sent.lock(), vec![Invalidation::Inode(7)]);
        stop.store(true, Ordering::SeqCst);
        t.join().unwrap();
    }

    #[test]
    fn a_wait_for_a_stuck_notifier_ends_at_its_bound() {
        let (tx, _rx) = channel();
        let d = Delivery::new(tx);
        let t = Instant::now();
        assert!(!d.wait_sent(Duration::from_millis(50)));
        assert!(t.elapsed() >= Duration::from_millis(50));
    }

    #[test]
    fn a_directory_s_mtime_moves_below_the_microsecond_with_each_change() {
        let (tx, _rx) = channel();
        let d = Delivery::new(tx);
        let t = UNIX_EPOCH + Duration::new(1_764_000_000, 123_456_999);
        // Never invalidated: as the view shows it.
        assert_eq!(d.dir_mtime(9, t), t);
        let mut seen = HashSet::new();
        for _ in 0..CHANGE_STEPS - 1 {
            d.changed(9);
            let m = d.dir_mtime(9, t);
            assert!(seen.insert(m), "{m:?} shown twice");
            let (a, b) = (
                t.duration_since(UNIX_EPOCH).unwrap(),
                m.duration_since(UNIX_EPOCH).unwrap(),
            );
            assert_eq!(a.as_micros(), b.as_micros(), "the microseconds stay");
            assert_ne!(m, t);
        }
        // Another inode is not moved by 9's changes.
        assert_eq!(d.dir_mtime(10, t), t);
        // A time before 1970 is left alone.
        let old = UNIX_EPOCH - Duration::from_secs(5);
        assert_eq!(d.dir_mtime(9, old), old);
    }

    #[test]
    fn stops_on_request_while_idle() {
        let (_tx, rx) = channel::<Invalidation>();
        let stop = AtomicBool::new(true);
        drain_loop(&rx, &stop, |_| panic!("nothing was sent"));
    }
}
