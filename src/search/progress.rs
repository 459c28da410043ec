//! The progress line of work that may take a while (building the index): shown on
//! standard error once the work has taken more than a second, when standard error is
//! a terminal (or `SESSIONFS_PROGRESS=1`), updated in place, and ended with what was
//! done.

use super::index::Progress;
use parking_lot::{Condvar, Mutex};
use std::io::{IsTerminal, Write};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Whether progress is shown.
fn shown() -> bool {
    match std::env::var("SESSIONFS_PROGRESS").ok().as_deref() {
        Some("1" | "on" | "yes") => true,
        Some(_) => false,
        None => std::io::stderr().is_terminal(),
    }
}

/// `n` bytes as a short figure: `512 KB`, `3.4 MB`, `1.25 GB`.
pub fn bytes(n: u64) -> String {
    let n = n as f64;
    if n >= 1e9 {
        format!("{:.2} GB", n / 1e9)
    } else if n >= 1e6 {
        format!("{:.1} MB", n / 1e6)
    } else {
        format!("{:.0} KB", n / 1e3)
    }
}

/// Runs `work`, showing its progress as `sessionfs: WHAT: DONE of TOTAL (N%)` once it
/// has run for a second.
pub fn showing<T>(what: &str, work: impl FnOnce(&Progress) -> T) -> T {
    let p = Progress::default();
    if !shown() {
        return work(&p);
    }
    let finished = Mutex::new(false);
    let wake = Condvar::new();
    let start = Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut printed = false;
            let mut f = finished.lock();
            loop {
                let wait = if printed {
                    Duration::from_millis(250)
                } else {
                    Duration::from_secs(1)
                };
                let _ = wake.wait_for(&mut f, wait);
                let (done, total) = (
                    p.done.load(Ordering::Relaxed),
                    p.total.load(Ordering::Relaxed),
                );
                if *f {
                    if printed {
                        eprintln!(
                            "\rsessionfs: {what}: {} in {:.1} s          ",
                            bytes(total),
                            start.elapsed().as_secs_f64()
                        );
                    }
                    return;
                }
                if total > 0 {
                    let pct = (done.min(total) * 100) / total.max(1);
                    eprint!(
                        "\rsessionfs: {what}: {} of {} ({pct}%)   ",
                        bytes(done.min(total)),
                        bytes(total)
                    );
                    let _ = std::io::stderr().flush();
                    printed = true;
                }
            }
        });
        let r = work(&p);
        *finished.lock() = true;
        wake.notify_all();
        r
    })
}
