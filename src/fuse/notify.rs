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
//! Pending invalidations are drained in batches and duplicates within a batch are
//! sent once. An `ENOENT` answer means the kernel had nothing cached for that inode or
//! name, which is the common case and not an error; other failures are logged at
//! debug level (after an unmount every notification fails, harmlessly).

use crate::view::Invalidation;
use fuser::{INodeNo, Notifier};
use log::debug;
use std::collections::HashSet;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the thread checks for a stop request while the channel is idle.
const IDLE_CHECK: Duration = Duration::from_millis(200);

/// A running notifier thread. Dropping it stops the thread and waits for it.
pub struct NotifierThread {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl NotifierThread {
    /// Starts a thread that sends each invalidation received on `rx` to the kernel
    /// through `notifier`. The thread ends when [`stop`](Self::stop) is called or every
    /// sender is gone.
    pub fn spawn(notifier: Notifier, rx: Receiver<Invalidation>) -> io::Result<NotifierThread> {
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("sessionfs-notify".into())
            .spawn(move || run(&notifier, &rx, &stop2))?;
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

/// The thread's body.
fn run(notifier: &Notifier, rx: &Receiver<Invalidation>, stop: &AtomicBool) {
    drain_loop(rx, stop, |inv| send(notifier, inv));
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
}

fn key(inv: &Invalidation) -> Key {
    match inv {
        Invalidation::Inode(ino) => Key::Inode(*ino),
        Invalidation::Entry { parent, name } => Key::Entry(*parent, name.clone()),
    }
}

fn send(notifier: &Notifier, inv: &Invalidation) {
    let result = match inv {
        Invalidation::Inode(ino) => notifier.inval_inode(INodeNo(*ino), 0, 0),
        Invalidation::Entry { parent, name } => notifier.inval_entry(INodeNo(*parent), name),
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
    fn stops_on_request_while_idle() {
        let (_tx, rx) = channel::<Invalidation>();
        let stop = AtomicBool::new(true);
        drain_loop(&rx, &stop, |_| panic!("nothing was sent"));
    }
}
