//! Requests first: the CPU priority of the threads sessionfs starts.
//!
//! A mount answers the kernel on fuser's session threads (`FUSE_THREADS` of them, see
//! `fuse::mount`). Everything else it does is work that a request may or may not be
//! waiting for, and on a 2-core machine that work competes for the very CPUs the
//! request threads need: a `cat` in one session used to take up to 55 ms while another
//! session of 100k entries was indexed, though it held none of that session's locks.
//! So each kind of thread gets a priority according to who waits for it:
//!
//! | thread | who waits for it | priority |
//! |---|---|---|
//! | fuser's session threads | the kernel, a user | normal (nice 0, `SCHED_OTHER`) |
//! | a session thread while it indexes a session ([`Lowered`]) | the request that entered that session, and others for it | lowered for the load ([`LOAD_NICE`]), only where it can be raised back |
//! | `context-parse`, the second core of a context's parse | nobody: its caller never waits for a run it took (it parses the run again) | [`background`] |
//! | tree drawing's helpers | the `tree` read, at the end of the scope | [`helper`] (a nice level: slowed, never starved) |
//! | the watchers (`sessionfs-watch`, `sessionfs-dirwatch`) | requests of a session the watcher reloads (under its `loading` lock) | [`helper`] |
//! | the index keeper (`sessionfs-index`, `crate::search::fresh`) | no request; a `sessionfs index` waiting for the index's lock while it writes | [`helper`] |
//! | `sessionfs grep`'s workers | the user of that command, and no request unless a mount is up | [`search_policy`] |
//!
//! Why not `SCHED_IDLE` everywhere: an idle-policy thread runs only when a CPU has
//! nothing else to do, so on a machine kept busy by a build it may not run for
//! seconds. Fine for work nobody waits for; a priority inversion for work a request
//! waits for (a request blocked on a lock that an idle thread holds waits for the
//! build). Those threads get a nice level instead: the scheduler still gives them a
//! share (a nice 10 thread gets about a tenth of a CPU against one busy nice 0 thread),
//! but a waking request thread preempts them.
//!
//! Why only where it can be raised back: lowering a thread's priority is always
//! allowed, raising it again needs root or an `RLIMIT_NICE` of at least 20. A session
//! thread that could not be raised back would answer every later request at the
//! lowered priority, so without that right an index is built at normal priority.
//!
//! `sessionfs grep` is a command a user waits for, but not the mount's requests: at
//! `SCHED_IDLE` it takes every CPU nobody else wants and gives way at once to a mount
//! answering a `cat` (the benchmark's median read during a grep went from 4.5 times
//! the peer's to 1.0). The price: on a machine kept busy by a build it runs only in
//! the gaps (a search of 1 GB took 9 times grep's time beside a test build). So it
//! gives way only when there is a mount to give way to: its workers run at
//! `SCHED_IDLE` while a sessionfs mount is up in its mount namespace
//! (`/proc/self/mountinfo`), at normal priority otherwise ([`search_policy`]);
//! `SESSIONFS_BACKGROUND` decides when it is set.
//!
//! The policy of [`background`] threads can be changed for measuring with the
//! environment variable `SESSIONFS_BACKGROUND`: `idle` (the default: `SCHED_IDLE`),
//! `batch` (`SCHED_BATCH`), `nice` or `nice:N` (nice N, default 19), `off`.
//! `scripts/bench-sessions` (the `isolation` workload) measures them.
//!
//! All of this is per thread: on Linux `sched_setscheduler(0, ..)` and
//! `setpriority(PRIO_PROCESS, tid, ..)` apply to the calling thread only.

use std::sync::OnceLock;

/// The nice level of [`helper`] threads.
pub const HELPER_NICE: i32 = 10;
/// The nice level of a session thread while it indexes a session ([`Lowered`]).
pub const LOAD_NICE: i32 = 10;

/// What [`background`] does to the calling thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// `SCHED_IDLE`: runs only on a CPU that has nothing else to run.
    Idle,
    /// `SCHED_BATCH`: a normal share, but never preempts others on wakeup.
    Batch,
    /// `SCHED_OTHER` at this nice level.
    Nice(i32),
    /// Left as it is.
    Off,
}

impl Policy {
    /// Reads `SESSIONFS_BACKGROUND`'s value; `None` for one that means nothing.
    pub fn parse(s: &str) -> Option<Policy> {
        match s.trim() {
            "" | "idle" => Some(Policy::Idle),
            "batch" => Some(Policy::Batch),
            "nice" => Some(Policy::Nice(19)),
            "off" | "none" => Some(Policy::Off),
            s => {
                let n: i32 = s.strip_prefix("nice:")?.parse().ok()?;
                (0..=19).contains(&n).then_some(Policy::Nice(n))
            }
        }
    }
}

/// The policy of [`background`] threads (`SESSIONFS_BACKGROUND`, else `idle`).
pub fn background_policy() -> Policy {
    static P: OnceLock<Policy> = OnceLock::new();
    *P.get_or_init(|| match std::env::var("SESSIONFS_BACKGROUND") {
        Err(_) => Policy::Idle,
        Ok(v) => Policy::parse(&v).unwrap_or_else(|| {
            log::warn!(
                "SESSIONFS_BACKGROUND={v:?} means nothing (use idle, batch, nice, nice:N \
                 or off): using idle"
            );
            Policy::Idle
        }),
    })
}

/// Puts the calling thread at the background policy: for threads that no request
/// waits for. Call it first thing on the thread.
pub fn background() {
    apply(background_policy());
}

/// The policy of `sessionfs grep`'s workers: `SESSIONFS_BACKGROUND`'s when it is set;
/// else [`Policy::Idle`] while a sessionfs mount is up (its requests come first) and
/// [`Policy::Off`] when none is (nothing to give way to: a search beside a build is
/// not starved). Read once per search.
pub fn search_policy() -> Policy {
    if std::env::var_os("SESSIONFS_BACKGROUND").is_some() {
        return background_policy();
    }
    match std::fs::read_to_string("/proc/self/mountinfo") {
        Ok(m) if !names_a_mount(&m) => Policy::Off,
        // Not knowing is taken as a mount being up.
        _ => Policy::Idle,
    }
}

/// Whether the text of a `/proc/self/mountinfo` lists a sessionfs mount: after the
/// ` - ` separator, file system type `fuse.sessionfs` (mounted through `fusermount3`)
/// or `fuse` with the source `sessionfs` (mounted by root).
fn names_a_mount(mountinfo: &str) -> bool {
    mountinfo.lines().any(|l| {
        let Some((_, rest)) = l.split_once(" - ") else {
            return false;
        };
        let mut f = rest.split(' ');
        match (f.next(), f.next()) {
            (Some("fuse.sessionfs"), _) => true,
            (Some(t), Some("sessionfs")) => t == "fuse" || t.starts_with("fuse."),
            _ => false,
        }
    })
}

/// Puts the calling thread at policy `p` (see [`search_policy`]).
pub fn set(p: Policy) {
    apply(p);
}

/// Puts the calling thread at nice [`HELPER_NICE`]: for threads a request may end up
/// waiting for, which must be slowed by requests but never starved.
pub fn helper() {
    apply(Policy::Nice(HELPER_NICE));
}

fn apply(p: Policy) {
    let r = match p {
        Policy::Off => return,
        Policy::Idle => set_policy(libc::SCHED_IDLE),
        Policy::Batch => set_policy(libc::SCHED_BATCH),
        // A thread that is lower already stays where it is.
        Policy::Nice(n) if nice() >= n => return,
        Policy::Nice(n) => set_nice(n),
    };
    if let Err(e) = r {
        log::debug!("cannot lower this thread's priority ({p:?}): {e}");
    }
}

fn set_policy(policy: libc::c_int) -> std::io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread; `param` outlives the call.
    if unsafe { libc::sched_setscheduler(0, policy, &param) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn tid() -> libc::id_t {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as libc::id_t }
}

/// The calling thread's nice level.
pub fn nice() -> i32 {
    // getpriority can return -1 as a value: errno tells.
    // SAFETY: plain system calls on the calling thread.
    unsafe {
        *libc::__errno_location() = 0;
        let n = libc::getpriority(libc::PRIO_PROCESS, tid());
        if n == -1 && *libc::__errno_location() != 0 {
            0
        } else {
            n
        }
    }
}

fn set_nice(n: i32) -> std::io::Result<()> {
    // SAFETY: a plain system call on the calling thread.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid(), n) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Whether this process may raise a thread's priority back to `to` after lowering it:
/// root, or an `RLIMIT_NICE` that allows `to` (the kernel's rule: nice `n` needs a
/// limit of at least `20 - n`).
fn can_raise_to(to: i32) -> bool {
    // SAFETY: geteuid has no preconditions; `lim` outlives getrlimit.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: as above.
    if unsafe { libc::getrlimit(libc::RLIMIT_NICE, &mut lim) } != 0 {
        return false;
    }
    lim.rlim_cur == libc::RLIM_INFINITY || lim.rlim_cur >= (20 - to) as libc::rlim_t
}

/// The calling thread at a lower priority until dropped: for a session thread that
/// does long work a request is waiting for (indexing a session), so that requests
/// for other sessions come first. Does nothing where the priority could not be
/// raised back (see the module docs), or when the thread is at `nice` or lower
/// already.
pub struct Lowered {
    /// The nice level to go back to, if lowered.
    was: Option<i32>,
}

impl Lowered {
    pub fn new(nice_level: i32) -> Lowered {
        // 19 is the lowest there is (the kernel takes any higher level as 19): a
        // thread already there is not lowered, and nothing is undone after.
        let nice_level = nice_level.min(19);
        let was = nice();
        if was >= nice_level || !can_raise_to(was) {
            return Lowered { was: None };
        }
        match set_nice(nice_level) {
            Ok(()) => Lowered { was: Some(was) },
            Err(e) => {
                log::debug!("cannot lower this thread's priority for a load: {e}");
                Lowered { was: None }
            }
        }
    }

    /// Whether the thread was lowered.
    pub fn is_lowered(&self) -> bool {
        self.was.is_some()
    }
}

impl Drop for Lowered {
    fn drop(&mut self) {
        if let Some(was) = self.was
            && let Err(e) = set_nice(was)
        {
            log::warn!("cannot raise a session thread back to nice {was} after a load: {e}");
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_sessionfs_mount_is_told_from_mountinfo() {
        let other = "36 35 98:0 / /mnt rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n\
                     40 35 0:42 / /home/u/m rw,nosuid,nodev - fuse.sshfs host: rw";
        assert!(!super::names_a_mount(other));
        let ours = format!(
            "{other}\n41 35 0:45 / /tmp/m rw,nosuid,nodev,relatime - fuse.sessionfs sessionfs rw,user_id=0"
        );
        assert!(super::names_a_mount(&ours));
        // As root mounts it.
        assert!(super::names_a_mount(
            "45 27 0:40 / /tmp/m rw,nosuid - fuse sessionfs rw,user_id=0,group_id=0"
        ));
        // A mount point named like the type is not one.
        assert!(!super::names_a_mount(
            "42 35 0:46 / /tmp/fuse.sessionfs rw - tmpfs fuse.sessionfs rw"
        ));
    }

    use super::*;

    #[test]
    fn policies_parse() {
        assert_eq!(Policy::parse("idle"), Some(Policy::Idle));
        assert_eq!(Policy::parse(""), Some(Policy::Idle));
        assert_eq!(Policy::parse("batch"), Some(Policy::Batch));
        assert_eq!(Policy::parse("nice"), Some(Policy::Nice(19)));
        assert_eq!(Policy::parse("nice:5"), Some(Policy::Nice(5)));
        assert_eq!(Policy::parse("off"), Some(Policy::Off));
        assert_eq!(Policy::parse("nice:20"), None);
        assert_eq!(Policy::parse("nice:-1"), None);
        assert_eq!(Policy::parse("fast"), None);
    }

    fn policy_of_this_thread() -> libc::c_int {
        // SAFETY: pid 0 is the calling thread.
        unsafe { libc::sched_getscheduler(0) }
    }

    #[test]
    fn background_and_helper_apply_to_the_calling_thread_only() {
        let before = (policy_of_this_thread(), nice());
        std::thread::spawn(move || {
            helper();
            assert_eq!(nice(), before.1.max(HELPER_NICE));
            set_policy(libc::SCHED_IDLE).unwrap();
            assert_eq!(policy_of_this_thread(), libc::SCHED_IDLE);
        })
        .join()
        .unwrap();
        assert_eq!((policy_of_this_thread(), nice()), before);
    }

    #[test]
    fn lowered_goes_back_when_dropped_or_does_nothing() {
        std::thread::spawn(|| {
            // The tests may run niced already, up to 19, the lowest there is.
            let before = nice();
            {
                let l = Lowered::new(before + 3);
                if l.is_lowered() {
                    assert_eq!(nice(), (before + 3).min(19));
                } else {
                    // Not allowed to raise it back: then never lowered at all.
                    assert_eq!(nice(), before);
                }
            }
            assert_eq!(nice(), before);
            // Already that low: nothing to do, nothing undone.
            let l = Lowered::new(before);
            assert!(!l.is_lowered());
        })
        .join()
        .unwrap();
    }
}
