//! A running mount keeps the index ([`super::index`]) fresh for the sessions it
//! watches, so that the next `sessionfs grep` finds their new lines already indexed
//! instead of scanning them.
//!
//! The mount's watchers (`crate::fuse::watch`, `crate::fuse::dir_watch`) already learn,
//! from inotify, which session files changed: an append, a rewrite, a new file. They
//! hand each such path to a [`Keeper`], which is all they do here: a send on a channel,
//! which never blocks and takes no lock a request could hold. The keeper's own thread
//! gathers the paths until the changes have been quiet for [`QUIET`] (at most
//! [`MAX_DELAY`] after the first), then brings the index up to date for them and their
//! side files exactly as a search of them would ([`super::indexed::refresh_paths`]:
//! the indexed prefix verified, only the new bytes indexed into a segment of their own,
//! segments merged when there are too many, the manifest published by rename).
//!
//! Why a thread of its own, off every request: indexing reads and hashes files and
//! writes segments; nobody waits for it (a search that comes first scans the unindexed
//! bytes itself, and is exact either way), so it runs at the helpers' priority
//! ([`crate::prio::helper`]): slowed by requests, never starving. It takes the index's
//! writers' lock without waiting (a `sessionfs grep` or `sessionfs index` writing at
//! the same moment wins; what the keeper leaves is indexed by the next change or
//! search), and holds no lock of the view's. Lock order: the keeper's thread holds only
//! the index's `flock`, and the search's own locks under it; the watchers hold none of
//! the keeper's (the channel is lock-free for senders).
//!
//! A path told of again is indexed again only if it changed since the round that
//! indexed it all, or one of its side files did (or a file was added to their
//! folders): a session's side files grow while its own file does not (a subagent
//! running), and the watchers tell of the session either way (the mount of one
//! session watches its side folders; a mount of every agent those of a session
//! entered, `crate::view::MultiView`).
//!
//! Bounded: at most [`MAX_PATHS`] distinct paths wait at a time (more are dropped: the
//! next search indexes them); each round reads only what changed (plus a hash of the
//! indexed prefix of a file that grew, at memory speed).
//!
//! Off with `SESSIONFS_CACHE=off` or `SESSIONFS_INDEX=off`: then [`Keeper::start`]
//! starts nothing and nothing is written.

use super::index::Stat;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A burst of changes is over once none came for this long.
pub const QUIET: Duration = Duration::from_millis(500);
/// A round starts at the latest this long after the first change of a burst.
pub const MAX_DELAY: Duration = Duration::from_secs(3);
/// The most paths waiting at a time.
pub const MAX_PATHS: usize = 10_000;

enum Msg {
    Changed(PathBuf),
    Stop,
}

/// The thread that indexes what the mount saw change. Dropping it stops the thread.
pub struct Keeper {
    tx: Sender<Msg>,
    handle: Option<JoinHandle<()>>,
}

impl Keeper {
    /// Starts the thread, unless the index is off (`SESSIONFS_CACHE=off`,
    /// `SESSIONFS_INDEX=off`, no home to keep it in) or the thread cannot start.
    pub fn start() -> Option<Keeper> {
        if !super::indexed::enabled() {
            return None;
        }
        let (tx, rx) = mpsc::channel::<Msg>();
        let handle = std::thread::Builder::new()
            .name("sessionfs-index".into())
            .spawn(move || {
                crate::prio::helper();
                let mut waiting: BTreeSet<PathBuf> = BTreeSet::new();
                // Each file as the last round that indexed it all found it, with its
                // side files and their folders.
                let mut last: HashMap<PathBuf, Seen> = HashMap::new();
                loop {
                    // The first change of a burst (or the end).
                    match rx.recv() {
                        Ok(Msg::Changed(p)) => {
                            waiting.insert(p);
                        }
                        Ok(Msg::Stop) | Err(_) => return,
                    }
                    let first = Instant::now();
                    loop {
                        let left = MAX_DELAY.saturating_sub(first.elapsed());
                        if left.is_zero() {
                            break;
                        }
                        match rx.recv_timeout(left.min(QUIET)) {
                            Ok(Msg::Changed(p)) => {
                                if waiting.len() < MAX_PATHS {
                                    waiting.insert(p);
                                }
                            }
                            Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                            Err(RecvTimeoutError::Timeout) => break,
                        }
                    }
                    // Only what changed since the last round saw it (a watcher's
                    // safety net tells of files that did not change), side files
                    // included (a subagent's transcript grows, its session file not).
                    let mut paths: Vec<PathBuf> = Vec::new();
                    let mut seen: Vec<Seen> = Vec::new();
                    for p in std::mem::take(&mut waiting) {
                        let Ok(md) = std::fs::metadata(&p) else {
                            last.remove(&p);
                            continue;
                        };
                        if !md.is_file() {
                            continue;
                        }
                        let now = Seen::now(&md, last.get(&p));
                        if last.get(&p) != Some(&now) {
                            seen.push(now);
                            paths.push(p);
                        }
                    }
                    if paths.is_empty() {
                        continue;
                    }
                    let t = Instant::now();
                    let report = super::indexed::refresh_paths(&paths);
                    if let Some((r, sides)) = &report
                        && r.left == 0
                    {
                        if last.len() + paths.len() > MAX_PATHS {
                            last.clear();
                        }
                        let sides: HashMap<&PathBuf, &Vec<PathBuf>> =
                            sides.iter().map(|(p, s)| (p, s)).collect();
                        for (p, now) in paths.iter().zip(seen) {
                            let s = sides.get(p).map_or(&[][..], |s| s.as_slice());
                            last.insert(p.clone(), now.with_sides(s));
                        }
                    }
                    if let Some((r, _)) = report {
                        log::debug!(
                            "index: kept fresh for {} changed files in {:?}: {} indexed ({} bytes), {} left",
                            paths.len(),
                            t.elapsed(),
                            r.indexed,
                            r.bytes,
                            r.left
                        );
                    }
                }
            })
            .map_err(|e| log::debug!("index: the keeper thread did not start: {e}"))
            .ok()?;
        Some(Keeper {
            tx,
            handle: Some(handle),
        })
    }

    /// `path` (a session file, or one of its side files) changed: index it soon.
    /// Never blocks.
    pub fn changed(&self, path: &Path) {
        let _ = self.tx.send(Msg::Changed(path.to_path_buf()));
    }
}

/// A session file as a round saw it before indexing it: its `stat`, and that of each
/// side file and side folder the round before found (a folder's changes when a side
/// file is added to it). A side file found by the last round but not seen before it
/// has no `stat` yet, so that the next change indexes it again: what it was when
/// indexed is not known.
#[derive(PartialEq, Eq)]
struct Seen {
    file: Stat,
    sides: Vec<(PathBuf, Option<Stat>)>,
}

impl Seen {
    /// A session file whose metadata is `md`, and what `before` knew of its side files, now.
    fn now(md: &std::fs::Metadata, before: Option<&Seen>) -> Seen {
        let sides = before.map_or_else(Vec::new, |b| {
            b.sides
                .iter()
                .map(|(q, _)| (q.clone(), std::fs::metadata(q).ok().map(|m| Stat::of(&m))))
                .collect()
        });
        Seen {
            file: Stat::of(md),
            sides,
        }
    }

    /// As seen now, with the side files a round found (`sides`) and their folders.
    fn with_sides(self, sides: &[PathBuf]) -> Seen {
        let mut want: Vec<PathBuf> = Vec::new();
        for s in sides {
            if let Some(d) = s.parent()
                && !want.iter().any(|w| w == d)
            {
                want.push(d.to_path_buf());
            }
        }
        want.extend(sides.iter().cloned());
        let known: HashMap<PathBuf, Option<Stat>> = self.sides.into_iter().collect();
        Seen {
            file: self.file,
            sides: want
                .into_iter()
                .map(|q| {
                    let st = known.get(&q).copied().flatten();
                    (q, st)
                })
                .collect(),
        }
    }
}

impl Drop for Keeper {
    /// Asks the thread to stop. A round in progress is not waited for: it ends on its
    /// own, or with the process, which the index survives at any point as it survives
    /// `kill -9` (`super::index::store`), so that an unmount never waits for indexing.
    fn drop(&mut self) {
        let _ = self.tx.send(Msg::Stop);
        if let Some(h) = self.handle.take()
            && h.is_finished()
            && h.join().is_err()
        {
            log::warn!("the index keeper thread panicked");
        }
    }
}
