//! A persistent trigram index of session files, so that `sessionfs grep` reads only
//! the parts of a home that can hold a match, however many GB it holds, and prints
//! exactly what it prints without it.
//!
//! # What it is
//!
//! Each session file is cut into *blocks*: line-aligned byte ranges, packed into
//! *units* of about [`build::UNIT_TARGET`] bytes (a big file makes units of its own,
//! small files share one). For each unit the index keeps the set of its trigrams
//! ([`trigram`]): the raw bytes of its lines, ASCII case folded, with the base64 text
//! of images (*payloads*, about a third of the bytes of a real home) left out and
//! the printable runs of their decoded bytes put in. A match never spans a newline,
//! so a unit holding a line that can match holds every trigram of whatever the line
//! must contain. Posting lists, one per trigram, name the units; they live in
//! immutable *segments* ([`segment`]) listed by a *manifest* ([`store`]).
//!
//! Why blocks and not files (codesearch) or positions (zoekt): a session file is one
//! long append-only log, gigabytes for some users, so a file is too coarse (a hit
//! would mean reading the whole file), and positional postings cost about three times
//! the corpus, when this index must stay under a tenth of it. A unit of 128 KiB
//! bounds what a candidate costs to read (each hit reads its unit, and every image
//! line in it is decoded by the exact path) while keeping the index a few percent of
//! the sessions (half a MiB made an identifier found on 300 lines read 170 MB).
//!
//! # How a search uses it
//!
//! The search does not ask the index whether a line matches: it asks which parts of
//! a file its exact path would look at, and runs the exact path (prefilter, render,
//! match, print) on those parts only. The prefilter ([`super::prefilter`]) selects a
//! line for one of three reasons: (1) a fragment of the pattern, or a trigger of a
//! decoration it overlaps, occurs in the raw line; (2) the line is of a kind selected
//! whatever the text (an escape JSON.stringify would not write, a number written
//! otherwise, a line the format rewrites, a line lacking a key, a deeply nested line,
//! a line naming a spilled file); (3) a literal occurs in its decoded binary content.
//! The query ([`query`]) covers (1) with trigrams, (3) with the trigrams of the
//! decoded runs (or, for a literal that cannot be found that way, with every line that
//! has binary content), and (2) with *probes*: for each such kind, the index records
//! the lines of that kind one by one, so that a search reads those lines and not the
//! units around them. The candidates are the units the query selects and the lines of
//! the probes it needs; everything else is provably free of lines the prefilter would
//! select, apart from lines whose only occurrences lie in payloads, which the format
//! shows as no text. The index can only add candidates, never lose a hit, and
//! `tests/search_index_props.rs` compares searches with and without it.
//!
//! # Never stale: what "verified unchanged" costs and rests on
//!
//! Every search checks every file it answers from, before using any of its postings:
//!
//! * It `stat`s the file (one system call) and finds its entry by device and inode.
//!   The entry holds the file's size, mtime and ctime when its content was last read
//!   (to build or verify the index), and when that read ended (`verified_at`).
//! * **Unchanged**: same size, mtime and ctime (to the nanosecond), and the read ended
//!   at least [`RACY`] after the ctime. Then the file's bytes are what was indexed.
//!   Why that suffices: any write, truncation or `utimensat` sets ctime to the current
//!   time, and no user can set it back (only the clock itself, as root). A change after
//!   the read therefore gives a ctime later than the read, unless it happens within
//!   the timestamp granularity of the last change before it (the kernel's clock ticks,
//!   a second on some file systems): the *racy* case git's index knows. So an entry
//!   whose read ended less than [`RACY`] after its ctime is never trusted on its
//!   `stat`: its bytes are hashed again (below), and once a hash matches at a time past
//!   the margin, the entry is recorded as verified then. A file read while it was being
//!   written gives different `fstat`s before and after the read, and is not recorded.
//! * **Grown, rewritten, touched** (anything else with the same inode): the indexed
//!   prefix is read and hashed ([`hash`], at memory speed), and compared with the hash
//!   recorded. Equal: the prefix is unchanged, and only the bytes after it are indexed
//!   (an append costs a pass of hashing over the old bytes, which is cheap, and
//!   indexing of the new ones). Different: the file was rewritten in place (Claude Code
//!   does), and it is indexed again from its start under a new key; the old postings
//!   are never read again. A same-size rewrite with its mtime set back still changes
//!   the ctime, so it is hashed, and found.
//! * **Shorter than what is indexed, or a new inode** (a file replaced by a rename):
//!   indexed from its start. **Deleted**: not searched, and its entry is dropped at
//!   the next merge.
//! * The part after the indexed prefix (a line appended a millisecond before the
//!   search) is always scanned the exact way; so is every file the index does not
//!   cover (new, capped, of a format it does not know, covered by a segment that is
//!   missing or damaged). When in doubt, scan: correct, only slower.
//!
//! What this rests on: that the file system keeps ctime as POSIX says and that its
//! clock agrees with this machine's within [`RACY`] (true of local file systems; a
//! network file system whose server clock lags by more than that could hide a
//! rewrite made right after an index read), and that a 64-bit hash of the indexed
//! prefix does not collide for a rewrite of the same length (the hash guards against
//! accidents; a user crafting a collision of their own session fools only their own
//! search).
//!
//! # Incremental, bounded, disposable
//!
//! An append is indexed into a segment of its own (the new bytes only), by the next
//! search or, while a mount watches the file, by the mount's keeper thread
//! ([`super::fresh`]) a moment after it. When there are more than [`MAX_SEGMENTS`],
//! whichever refresh publishes next merges a run of the smallest segments into one
//! ([`tiers`]: a big segment joins only once the smaller ones add up to it, so a byte
//! is rewritten about `log2(index / 1 MiB)` times and a query opens at most
//! `max(8, 2 + log2(index / 1 MiB))` segments, 13 for the 2.4 GB index of a 40 GB
//! home), and all of them when half the index is dead ([`segment::merge`], streaming:
//! memory bounded by one page of each input and the output's dictionary). A refresh
//! that wrote several segments itself (a first build writes one per
//! [`build::SEGMENT_MEMORY`] of postings) publishes them merged into one, so that the
//! first merge due after a build takes the appends' small segments, not the build's
//! segments of like sizes (which the tiers would take whole: 3.2 s for the append of
//! 5 MB that came ninth after a 4.2 GB home's build of seven). Before any merge, the entries of files gone or replaced are dropped; a merge leaves out
//! the blocks of keys no entry names. A merge is written and placed like a segment
//! before the manifest that names it: a crash at any point leaves the old manifest,
//! whose segments are all still there, and the output unnamed, swept later. The index
//! lives under `$XDG_CACHE_HOME/sessionfs/index-1/`, never beside the sessions, and
//! `SESSIONFS_CACHE=off` turns it off; deleting it loses nothing. Its size is capped
//! ([`DEFAULT_CAP`], `SESSIONFS_INDEX_MAX`): files that come once it is full are
//! recorded as such and searched without it. Building holds, per thread, a 2 MiB
//! extractor and one line, and one segment under construction of at most
//! [`build::SEGMENT_MEMORY`]; a query holds the blocks table of each segment and the
//! posting lists it reads.

pub mod build;
pub mod hash;
pub mod query;
pub mod segment;
pub mod store;
pub mod tiers;
pub mod trigram;

use crate::model::core::fasthash::{FastMap, FastSet};
use build::{LineRules, Pending};
use hash::Hasher;
use parking_lot::Mutex;
use query::Q;
use segment::{Builder, Segment};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use store::{Entry, Manifest, SegInfo, Stamp, Store};

/// How long after its ctime a file's read must end for the file to be trusted on
/// its `stat` alone (see the module docs; the same margin as every cache's).
pub use crate::model::core::stamp::RACY;
/// Candidate ranges of a file closer than this are read as one.
pub const GAP: u64 = 16 << 10;
/// A merge is due once there are more than this many segments ([`tiers`] says which).
pub const MAX_SEGMENTS: usize = 8;
/// The index's bound, by default: 16 GiB (a tenth of 160 GB of sessions).
pub const DEFAULT_CAP: u64 = 16 << 30;

/// A test's hook into writing the index (debug builds only): with
/// `SESSIONFS_INDEX_CRASH=POINT` (or `POINT@N`, its `N`th time), the process kills
/// itself with `SIGKILL` when it reaches `POINT`, as `kill -9` would, so that a test
/// can stop a writer between any two of its steps: `segment` (a segment written under
/// its temporary name), `segment-placed` (renamed into place, the manifest not yet
/// changed), `merged` (a merge's output written, not placed), `merge-placed` (renamed
/// into place, the manifest still naming the segments merged), `publish` (every
/// segment placed, the manifest about to be written), `manifest-written` (the new
/// manifest written under its temporary name), `manifest-renamed` (renamed over the
/// old one, the segments it no longer names not yet removed). `tests/search_index.rs`
/// stops writers at each and checks that no search answers wrongly afterwards.
#[inline]
pub(crate) fn crash_point(point: &str) {
    #[cfg(debug_assertions)]
    {
        static HITS: AtomicU64 = AtomicU64::new(0);
        let Some(want) = std::env::var_os("SESSIONFS_INDEX_CRASH") else {
            return;
        };
        let want = want.to_string_lossy();
        let (name, nth) = match want.split_once('@') {
            Some((n, k)) => (n, k.parse::<u64>().unwrap_or(1)),
            None => (&*want, 1),
        };
        if name == point && HITS.fetch_add(1, Ordering::SeqCst) + 1 == nth {
            // SAFETY: plain system calls on this process.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
        }
    }
    #[cfg(not(debug_assertions))]
    let _ = point;
}

/// A test's setting from the environment variable `name` (debug builds only; release
/// builds always take `default`).
fn debug_setting<T: std::str::FromStr>(name: &str, default: T) -> T {
    #[cfg(debug_assertions)]
    if let Some(n) =
        std::env::var_os(name).and_then(|v| v.to_str().and_then(|v| v.parse::<T>().ok()))
    {
        return n;
    }
    #[cfg(not(debug_assertions))]
    let _ = name;
    default
}

/// How many bytes of postings a build holds before it writes them as a segment
/// ([`build::SEGMENT_MEMORY`]); in debug builds `SESSIONFS_INDEX_SEGMENT_MEMORY`, so
/// that a test's small home is built in several segments.
fn segment_memory() -> usize {
    debug_setting("SESSIONFS_INDEX_SEGMENT_MEMORY", build::SEGMENT_MEMORY)
}

/// The floor of the merge policy ([`tiers::FLOOR`]); in debug builds,
/// `SESSIONFS_INDEX_MERGE_FLOOR=BYTES` sets it, so that a test's small index has
/// segments on both sides of it and makes partial merges.
fn merge_floor() -> u64 {
    debug_setting("SESSIONFS_INDEX_MERGE_FLOOR", tiers::FLOOR)
}

/// What the index must be told about formats; the search provides it
/// ([`super::indexed`]).
pub trait Formats: Sync {
    /// Changes whenever what the index records changes (the probes, the formats'
    /// rules): an index of another fingerprint is rebuilt.
    fn fingerprint(&self) -> u64;
    /// The number of probes, [`build::HUGE`] included.
    fn nprobes(&self) -> usize;
    /// The format of the file at `path` whose first read's complete lines are
    /// `head`, if the index knows it.
    fn detect(&self, path: &Path, head: &[u8]) -> Option<&'static str>;
    /// How lines of format `name` are read.
    fn lines(&self, name: &str) -> Option<&dyn LineRules>;
}

pub use crate::model::core::stamp::{Stat, now};

impl Stat {
    /// Size, mtime and ctime as an entry recorded them.
    fn same_as(&self, e: &Entry) -> bool {
        self.size == e.size && self.mtime == e.mtime && self.ctime == e.ctime
    }
}

/// What a file needs before its postings can be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Its bytes are what was indexed.
    Fresh,
    /// Its indexed prefix must be hashed and compared.
    Verify,
    /// It must be indexed from its start.
    New,
}

/// The decision of the module docs, for a file that `stat` gives as `st`, whose entry
/// (by device and inode) is `e`.
pub fn verdict(e: Option<&Entry>, st: &Stat) -> Verdict {
    let Some(e) = e else { return Verdict::New };
    if (e.dev, e.ino) != (st.dev, st.ino) || st.size < e.covered {
        return Verdict::New;
    }
    if st.same_as(e) && crate::model::core::stamp::past_racy(e.verified_at, e.ctime) {
        return Verdict::Fresh;
    }
    Verdict::Verify
}

/// What a refresh did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Files whose postings this process may use.
    pub trusted: usize,
    /// Files indexed (from their start, or their new bytes).
    pub indexed: usize,
    /// Bytes read to index them.
    pub bytes: u64,
    /// Files left to scanning: another process held the lock, the cap was reached,
    /// or they changed while being read.
    pub left: usize,
    /// The index was published anew.
    pub published: bool,
}

/// Progress of a refresh: bytes to read, bytes read.
#[derive(Debug, Default)]
pub struct Progress {
    pub total: AtomicU64,
    pub done: AtomicU64,
}

/// How a refresh may go.
pub struct Options<'a> {
    /// Wait for another writer to finish (else search with what is published).
    pub wait: bool,
    /// The index's bound, in bytes.
    pub cap: u64,
    pub threads: usize,
    /// Counters a caller may show.
    pub progress: Option<&'a Progress>,
    /// Index nothing new (verify only): a search with the index read-only.
    pub read_only: bool,
}

/// The index, as published when opened, and what this process has verified of it.
pub struct Index {
    store: Store,
    manifest: Manifest,
    fingerprint: u64,
    /// Entries this process has checked against their files, with the `stat` seen.
    trusted: FastMap<(u64, u64), (usize, Stat)>,
    /// Why the published index was not used, if it was not.
    pub ignored: Option<String>,
    /// What `stat` gave for each path the refreshes looked at.
    /// (Keyed by the path's bytes: every lookup names a file as the refresh was
    /// given it, and hashing bytes is cheaper than hashing a path's components.)
    seen: FastMap<std::ffi::OsString, Stat>,
}

/// The part of a file a search must read, by device and inode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePlan {
    /// The file as it was verified: the plan holds only while `fstat` says the same.
    pub stat: Stat,
    /// Its format's name.
    pub format: String,
    /// Bytes `0..covered` are indexed; the rest is read whole.
    pub covered: u64,
    /// The ranges of `0..covered` to read, sorted, apart, each whole lines.
    pub ranges: Vec<(u64, u64)>,
}

/// What a query needs of one format: the units (trigrams) and the probes.
#[derive(Debug, Clone)]
pub struct Spec {
    pub q: Q,
    /// The probes whose lines are candidates.
    pub probes: Vec<usize>,
    /// The probes whose lines are candidates in the files the guard of
    /// [`Index::plans`] keeps (by device and inode) only.
    pub guarded: Vec<usize>,
}

/// Plans by device and inode.
pub type Plans = FastMap<(u64, u64), FilePlan>;

impl Index {
    /// The index in `store` for `fingerprint`: the published one, or an empty one when
    /// there is none or it cannot be used (damaged, another version, another
    /// fingerprint; [`Index::ignored`] says why).
    pub fn open(store: Store, fingerprint: u64) -> Index {
        let (manifest, ignored) = match store.read_manifest() {
            Ok(Some(m)) if m.fingerprint == fingerprint => (m, None),
            Ok(Some(_)) => (
                Manifest::empty(fingerprint),
                Some("it was built for other formats".to_string()),
            ),
            Ok(None) => (Manifest::empty(fingerprint), None),
            Err(e) => (Manifest::empty(fingerprint), Some(e.to_string())),
        };
        Index {
            store,
            manifest,
            fingerprint,
            trusted: FastMap::default(),
            ignored,
            seen: FastMap::default(),
        }
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// What `stat` gave for `path` when a refresh looked at it.
    pub fn stat_seen(&self, path: &Path) -> Option<Stat> {
        self.seen.get(path.as_os_str()).copied()
    }

    /// The format of each file this process has verified, by device and inode.
    pub fn formats_by_inode(&self) -> FastMap<(u64, u64), String> {
        self.trusted
            .iter()
            .filter(|(_, (k, _))| !self.manifest.entries[*k].format.is_empty())
            .map(|(key, (k, _))| (*key, self.manifest.entries[*k].format.clone()))
            .collect()
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Brings the index up to date for `files` (and checks each), as far as `opts`
    /// allows: afterwards, [`Index::plans`] covers the files whose postings can be
    /// used. Errors of one file leave it to scanning; an error writing the index
    /// leaves the published one as it was.
    pub fn refresh(&mut self, files: &[PathBuf], formats: &dyn Formats, opts: &Options) -> Report {
        let mut report = Report::default();
        let by_inode = self.manifest.by_inode();
        // Look at every file; keep those needing work.
        let mut work: Vec<Work> = Vec::new();
        let mut seen = FastSet::default();
        // The `stat`s (a path lookup each, most of the time of a refresh that finds
        // everything fresh) on the search's threads.
        let stats = crate::search::walk::par_map(files, opts.threads, |p| {
            std::fs::metadata(p)
                .ok()
                .filter(|md| md.is_file())
                .map(|md| Stat::of(&md))
        });
        for (p, st) in files.iter().zip(stats) {
            let Some(st) = st else {
                continue;
            };
            self.seen.insert(p.as_os_str().to_os_string(), st);
            if !seen.insert((st.dev, st.ino)) {
                continue;
            }
            let e = by_inode.get(&(st.dev, st.ino)).copied();
            let v = verdict(e.map(|k| &self.manifest.entries[k]), &st);
            match (v, e) {
                (Verdict::Fresh, Some(k)) => {
                    self.trusted.insert((st.dev, st.ino), (k, st));
                }
                _ => work.push(Work {
                    path: p.clone(),
                    st,
                    entry: e,
                    verdict: v,
                }),
            }
        }
        if let Some(pr) = opts.progress {
            pr.total
                .store(work.iter().map(|w| w.st.size).sum(), Ordering::Relaxed);
        }
        if work.is_empty() {
            report.trusted = self.trusted.len();
            return report;
        }
        let lock = if opts.read_only {
            None
        } else {
            self.store.lock(opts.wait).ok().flatten()
        };
        if lock.is_some() {
            // Another writer may have published since: start from its manifest.
            if let Ok(Some(m)) = self.store.read_manifest()
                && m.fingerprint == self.fingerprint
                && m != self.manifest
            {
                self.manifest = m;
                self.trusted.clear();
                drop(lock);
                return self.refresh(files, formats, opts);
            }
        }
        if lock.is_some() {
            // Never a number a segment on disk has: a manifest started afresh (the old
            // one damaged, or made for other formats) counts from 1, and a reader still
            // holding the old one must find its segments whole or gone, never another
            // segment under their name.
            self.manifest.next_seg = self.manifest.next_seg.max(self.store.first_free_segment());
        }
        let outcome = self.work(work, formats, opts, lock.as_ref(), &mut report);
        if let (Some(lock), Some((updates, new_segs))) = (lock.as_ref(), outcome) {
            if let Err(e) = self.publish(updates, new_segs, lock) {
                // What was verified stays verified; what was built is not used.
                log::debug!("index: not published: {e}");
            } else {
                report.published = true;
            }
        }
        report.trusted = self.trusted.len();
        report
    }

    /// Verifies and indexes `work`; returns the entries to publish and the segments
    /// written (with a lock), after recording in `trusted` what may be used.
    fn work(
        &mut self,
        work: Vec<Work>,
        formats: &dyn Formats,
        opts: &Options,
        lock: Option<&store::Lock>,
        report: &mut Report,
    ) -> Option<(Vec<Update>, Vec<SegInfo>)> {
        let writing = lock.is_some();
        let shared = Shared {
            segs: Mutex::new(SegState {
                builder: Builder::new(formats.nprobes()),
                no: self.manifest.next_seg,
                written: Vec::new(),
                keys: HashMap::new(),
                error: None,
            }),
            budget: AtomicU64::new(opts.cap.saturating_sub(self.manifest.bytes())),
            next_id: AtomicU64::new(self.manifest.next_id),
            updates: Mutex::new(Vec::new()),
            store: &self.store,
            nprobes: formats.nprobes(),
        };
        let next = AtomicUsize::new(0);
        let entries = &self.manifest.entries;
        let threads = opts.threads.clamp(1, work.len());
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    let mut pend = Pending::new();
                    loop {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        let Some(w) = work.get(k) else { break };
                        let e = w.entry.map(|i| &entries[i]);
                        let u = one_file(w, e, formats, writing, &mut pend, &shared, opts.progress);
                        shared.updates.lock().push(u);
                    }
                    shared.submit(&mut pend);
                });
            }
        });
        let mut segs = shared.segs.into_inner();
        if writing && !segs.builder.is_empty() && segs.error.is_none() {
            let b = std::mem::replace(&mut segs.builder, Builder::new(formats.nprobes()));
            let no = segs.no;
            match write_segment(&self.store, b, no) {
                Ok(info) => segs.written.push(info),
                Err(e) => segs.error = Some(e),
            }
            segs.no += 1;
        }
        let mut updates = shared.updates.into_inner();
        self.manifest.next_id = shared.next_id.into_inner();
        self.manifest.next_seg = segs.no;
        if let Some(e) = &segs.error {
            log::debug!("index: a segment could not be written: {e}");
        }
        let failed = segs.error.is_some();
        // Which segments each key's new blocks went to.
        for u in &mut updates {
            if let Update::Indexed { key, segs: s, .. } = u {
                *s = segs.keys.get(key).cloned().unwrap_or_default();
            }
        }
        for u in &updates {
            match u {
                Update::Verified { st, entry, .. } => {
                    self.trusted.insert((st.dev, st.ino), (*entry, *st));
                }
                Update::Indexed { st, bytes, .. } => {
                    report.indexed += 1;
                    report.bytes += bytes;
                    // Trusted once published.
                    let _ = st;
                }
                Update::Left => report.left += 1,
                Update::Unknown { .. } | Update::Capped { .. } => {}
            }
        }
        if !writing || failed {
            report.left += updates
                .iter()
                .filter(|u| matches!(u, Update::Indexed { .. }))
                .count();
            return None;
        }
        Some((updates, segs.written))
    }

    /// Applies `updates` to the manifest, merges segments if there are too many, and
    /// publishes it.
    fn publish(
        &mut self,
        updates: Vec<Update>,
        new_segs: Vec<SegInfo>,
        lock: &store::Lock,
    ) -> io::Result<()> {
        let mut m = self.manifest.clone();
        m.segments.extend(new_segs.iter().copied());
        let mut by_inode = m.by_inode();
        let mut trusted_after: Vec<((u64, u64), Stat)> = Vec::new();
        for u in updates {
            let u_kind = match u {
                Update::Capped { .. } => Kind::Capped,
                _ => Kind::Other,
            };
            match u {
                Update::Verified { st, entry, at } => {
                    let e = &mut m.entries[entry];
                    e.size = st.size;
                    e.mtime = st.mtime;
                    e.ctime = st.ctime;
                    e.verified_at = at;
                }
                Update::Indexed {
                    st,
                    new,
                    key,
                    covered,
                    hash,
                    format,
                    at,
                    segs,
                    path,
                    ..
                } => {
                    let mut e = Entry {
                        id: key,
                        dev: st.dev,
                        ino: st.ino,
                        path,
                        size: st.size,
                        mtime: st.mtime,
                        ctime: st.ctime,
                        verified_at: at,
                        covered,
                        hash,
                        format,
                        flags: 0,
                        segs: Vec::new(),
                    };
                    match by_inode.get(&(st.dev, st.ino)) {
                        Some(&k) => {
                            if !new {
                                e.segs = m.entries[k].segs.clone();
                            }
                            for s in segs {
                                if !e.segs.contains(&s) {
                                    e.segs.push(s);
                                }
                            }
                            m.entries[k] = e;
                        }
                        None => {
                            e.segs = segs;
                            by_inode.insert((st.dev, st.ino), m.entries.len());
                            m.entries.push(e);
                        }
                    }
                    trusted_after.push(((st.dev, st.ino), st));
                }
                Update::Unknown { st, path, at } | Update::Capped { st, path, at } => {
                    let capped = matches!(u_kind, Kind::Capped);
                    let e = Entry {
                        id: 0,
                        dev: st.dev,
                        ino: st.ino,
                        path,
                        size: st.size,
                        mtime: st.mtime,
                        ctime: st.ctime,
                        verified_at: at,
                        covered: 0,
                        hash: hash::hash(b""),
                        format: String::new(),
                        flags: if capped { Entry::CAPPED } else { 0 },
                        segs: Vec::new(),
                    };
                    match by_inode.get(&(st.dev, st.ino)) {
                        Some(&k) => m.entries[k] = e,
                        None => {
                            by_inode.insert((st.dev, st.ino), m.entries.len());
                            m.entries.push(e);
                        }
                    }
                }
                Update::Left => {}
            }
        }
        // A refresh that wrote several segments (a first build writes one per
        // `SEGMENT_MEMORY` of postings, of like sizes) publishes them as one: left
        // apart, the tiers would take them all at the first merge due, and the append
        // whose publish that is would pay for rewriting the whole build. Merging them
        // now costs the refresh a pass over what it has just written.
        if new_segs.len() >= 2 {
            let run: Vec<usize> = (m.segments.len() - new_segs.len()..m.segments.len()).collect();
            let live = m.live_keys();
            let inputs = run
                .iter()
                .map(|&k| {
                    let s = m.segments[k];
                    Segment::open(&self.store.seg_path(s.no), s.len)
                })
                .collect::<io::Result<Vec<Segment>>>()?;
            self.merge_run(&mut m, lock, &run, inputs, &live)?;
        }
        if m.segments.len() > MAX_SEGMENTS {
            self.merge(&mut m, lock)?;
        }
        crash_point("publish");
        self.store.publish(&m, lock)?;
        self.manifest = m;
        // Entries may have moved (a merge drops some): find each again.
        let by_inode = self.manifest.by_inode();
        let old = std::mem::take(&mut self.trusted);
        for (k, (_, st)) in old
            .into_iter()
            .chain(trusted_after.into_iter().map(|(k, st)| (k, (0, st))))
        {
            if let Some(&i) = by_inode.get(&k) {
                self.trusted.insert(k, (i, st));
            }
        }
        Ok(())
    }

    /// Merges the segments [`tiers::plan`] picks into one (a run of the smallest, or
    /// all of them), leaving out the blocks no entry names; drops first the entries of
    /// files that are gone.
    fn merge(&mut self, m: &mut Manifest, lock: &store::Lock) -> io::Result<()> {
        // Nothing is read unless the lengths alone call for a merge: a publish that
        // only verified files, over a staircase of segments none of which joins the
        // smaller ones, costs no `stat` of every entry.
        let lens: Vec<tiers::Seg> = m
            .segments
            .iter()
            .map(|s| tiers::Seg {
                len: s.len,
                dead: 0,
            })
            .collect();
        if tiers::plan(&lens, MAX_SEGMENTS, merge_floor()).is_none() {
            return Ok(());
        }
        // Entries of files gone (or replaced) are dropped.
        m.entries.retain(|e| {
            std::fs::metadata(&e.path).is_ok_and(|md| md.dev() == e.dev && md.ino() == e.ino)
        });
        let live = m.live_keys();
        // Every segment's block table (what a query reads of each): how much of it
        // indexes bytes no entry names any more.
        let mut opened = Vec::with_capacity(m.segments.len());
        let mut sizes = Vec::with_capacity(m.segments.len());
        for s in &m.segments {
            let seg = Segment::open(&self.store.seg_path(s.no), s.len)?;
            let (all, dead) = seg.blocks.iter().fold((0u64, 0u64), |(a, d), b| {
                let gone = if live.contains(&b.key) { 0 } else { b.len };
                (a + b.len, d + gone)
            });
            let dead = if all == 0 {
                s.len
            } else {
                (u128::from(s.len) * u128::from(dead) / u128::from(all)) as u64
            };
            sizes.push(tiers::Seg { len: s.len, dead });
            opened.push(Some(seg));
        }
        let Some(run) = tiers::plan(&sizes, MAX_SEGMENTS, merge_floor()) else {
            return Ok(());
        };
        let inputs: Vec<Segment> = run
            .iter()
            .map(|&k| opened[k].take().expect("each segment once"))
            .collect();
        drop(opened);
        self.merge_run(m, lock, &run, inputs, &live)
    }

    /// Merges the segments at positions `run` of `m` (ascending), open as `inputs`,
    /// into one that takes the place of the first, keeping the blocks of the keys
    /// in `live`.
    fn merge_run(
        &mut self,
        m: &mut Manifest,
        lock: &store::Lock,
        run: &[usize],
        inputs: Vec<Segment>,
        live: &HashSet<u64>,
    ) -> io::Result<()> {
        let nprobes = inputs.iter().map(Segment::nprobes).max().unwrap_or(0);
        let tmp = self.store.temp_path();
        let len = segment::merge(
            &inputs,
            &|k| live.contains(&k),
            build::UNIT_TARGET,
            nprobes,
            &tmp,
        );
        drop(inputs);
        let len = match len {
            Ok(l) => l,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(e);
            }
        };
        crash_point("merged");
        let no = m.next_seg;
        m.next_seg += 1;
        self.store.place_segment(&tmp, no, lock)?;
        crash_point("merge-placed");
        let merged: HashSet<u32> = run.iter().map(|&k| m.segments[k].no).collect();
        log::debug!(
            "index: merged {} of {} segments ({} bytes) into segment {no} ({len} bytes)",
            run.len(),
            m.segments.len(),
            run.iter().map(|&k| m.segments[k].len).sum::<u64>()
        );
        // The output takes the place of the oldest segment of the run.
        let first = run[0];
        let mut segments = Vec::with_capacity(m.segments.len() + 1 - run.len());
        for (k, s) in m.segments.iter().enumerate() {
            if k == first {
                segments.push(SegInfo { no, len });
            } else if !merged.contains(&s.no) {
                segments.push(*s);
            }
        }
        m.segments = segments;
        for e in &mut m.entries {
            if e.id == 0 {
                e.segs.clear();
            } else if e.segs.iter().any(|s| merged.contains(s)) {
                e.segs.retain(|s| !merged.contains(s));
                e.segs.push(no);
            }
        }
        Ok(())
    }

    /// For each trusted file of a format `spec` has a query for, the ranges of its
    /// indexed bytes a search must read. Files left out are read whole. The lines of
    /// a spec's `guarded` probes are read in the files `guard` keeps, given their
    /// format and device and inode.
    /// Segments are read on up to `threads` threads.
    pub fn plans(
        &self,
        spec: &dyn Fn(&str) -> Option<Spec>,
        guard: &(dyn Fn(&str, (u64, u64)) -> bool + Sync),
        threads: usize,
    ) -> Plans {
        // Entries by key, of trusted files only.
        let mut by_key: FastMap<u64, (usize, Stat)> = FastMap::default();
        for &(k, st) in self.trusted.values() {
            let e = &self.manifest.entries[k];
            if e.id != 0 && !e.format.is_empty() && e.flags & Entry::CAPPED == 0 {
                by_key.insert(e.id, (k, st));
            }
        }
        let formats: HashSet<&str> = by_key
            .values()
            .map(|&(k, _)| self.manifest.entries[k].format.as_str())
            .collect();
        let specs: HashMap<&str, Spec> = formats
            .into_iter()
            .filter_map(|f| Some((f, spec(f)?)))
            .collect();
        // Each segment's candidates: (key, start, end).
        let mut ranges: FastMap<u64, Vec<(u64, u64)>> = FastMap::default();
        let mut bad: HashSet<u32> = HashSet::new();
        // Each segment on a thread of its own (a rare word's query is mostly posting
        // lists read and intersected, segment by segment).
        let per_segment = crate::search::walk::par_map(&self.manifest.segments, threads, |s| {
            Segment::open(&self.store.seg_path(s.no), s.len).and_then(|mut seg| {
                let mut out: Vec<(u64, u64, u64)> = Vec::new();
                let mut cache = Cached {
                    seg: &mut seg,
                    lists: FastMap::default(),
                };
                let mut per_format: Vec<(&str, query::Units, Vec<Probe>)> = Vec::new();
                for (f, sp) in &specs {
                    let units = query::eval(&sp.q, &mut cache)?;
                    let mut probes: Vec<Probe> = sp
                        .probes
                        .iter()
                        .map(|&k| (k, false))
                        .chain(sp.guarded.iter().map(|&k| (k, true)))
                        .chain([(build::HUGE, false)])
                        .collect();
                    probes.sort_unstable();
                    probes.dedup_by_key(|p| p.0);
                    per_format.push((f, units, probes));
                }
                let seg = cache.seg;
                for (f, units, probes) in &per_format {
                    let ok = |key: u64| {
                        by_key
                            .get(&key)
                            .is_some_and(|&(k, _)| self.manifest.entries[k].format == *f)
                    };
                    let guarded = |key: u64| {
                        by_key
                            .get(&key)
                            .is_some_and(|&(_, st)| guard(f, (st.dev, st.ino)))
                    };
                    match units {
                        query::Units::All => {
                            for b in seg.blocks.iter().filter(|b| ok(b.key)) {
                                out.push((b.key, b.start, b.start + b.len));
                            }
                        }
                        query::Units::Some(us) => {
                            // Blocks are in unit order: each candidate unit's blocks
                            // are found by bisection, not by a pass over every block
                            // (a rare word's handful of units among tens of thousands).
                            let mut lo = 0;
                            for &u in us {
                                lo += seg.blocks[lo..].partition_point(|b| b.unit < u);
                                for b in seg.blocks[lo..].iter().take_while(|b| b.unit == u) {
                                    if ok(b.key) {
                                        out.push((b.key, b.start, b.start + b.len));
                                    }
                                }
                            }
                        }
                    }
                    for &(k, g) in probes {
                        let mut kept: FastMap<u64, bool> = FastMap::default();
                        for l in seg.probe_lines(k)? {
                            let key = seg.blocks[l.block as usize].key;
                            let keep =
                                ok(key) && (!g || *kept.entry(key).or_insert_with(|| guarded(key)));
                            if keep {
                                out.push((key, l.start, l.start + l.len + 1));
                            }
                        }
                    }
                }
                Ok(out)
            })
        });
        for (s, r) in self.manifest.segments.iter().zip(per_segment) {
            match r {
                Ok(v) => {
                    for (key, a, b) in v {
                        ranges.entry(key).or_default().push((a, b));
                    }
                }
                Err(e) => {
                    log::debug!("index: segment {} not used: {e}", s.no);
                    bad.insert(s.no);
                }
            }
        }
        let mut plans = Plans::default();
        let mut read: HashMap<&str, (usize, u64, u64)> = HashMap::new();
        for (key, (k, st)) in by_key {
            let e = &self.manifest.entries[k];
            if !specs.contains_key(e.format.as_str()) || e.segs.iter().any(|s| bad.contains(s)) {
                continue;
            }
            let mut r = ranges.remove(&key).unwrap_or_default();
            r.sort_unstable();
            let mut merged: Vec<(u64, u64)> = Vec::with_capacity(r.len());
            for (a, b) in r {
                let b = b.min(e.covered);
                if a >= b {
                    continue;
                }
                // Ranges start and end at line boundaries, so the bytes between two
                // are whole lines: reading them too is correct, and cheaper than a
                // read of its own for each small range.
                match merged.last_mut() {
                    Some(last) if a <= last.1 + GAP => last.1 = last.1.max(b),
                    _ => merged.push((a, b)),
                }
            }
            // Most of the file: read it in one pass.
            let want: u64 = merged.iter().map(|(a, b)| b - a).sum();
            if want > e.covered / 4 * 3 {
                merged = vec![(0, e.covered)];
            }
            let r = read.entry(e.format.as_str()).or_default();
            r.0 += 1;
            r.1 += merged.iter().map(|(a, b)| b - a).sum::<u64>();
            r.2 += e.covered;
            plans.insert(
                (st.dev, st.ino),
                FilePlan {
                    stat: st,
                    format: e.format.clone(),
                    covered: e.covered,
                    ranges: merged,
                },
            );
        }
        for (f, (n, bytes, covered)) in read {
            log::debug!("index: {f}: {n} files, {bytes} of {covered} bytes to read");
        }
        plans
    }
}

/// A segment's posting lists, each read once per query.
/// A probe, and whether its lines are read only where the guard of [`Index::plans`]
/// says.
type Probe = (usize, bool);

struct Cached<'a> {
    seg: &'a mut Segment,
    lists: FastMap<u32, Vec<u32>>,
}

impl query::Lists for Cached<'_> {
    fn list(&mut self, t: u32) -> io::Result<Vec<u32>> {
        if let Some(l) = self.lists.get(&t) {
            return Ok(l.clone());
        }
        let l = self.seg.list(t)?;
        self.lists.insert(t, l.clone());
        Ok(l)
    }
}

/// A file to verify or index.
struct Work {
    path: PathBuf,
    st: Stat,
    entry: Option<usize>,
    verdict: Verdict,
}

/// What was learnt of one file.
enum Update {
    /// Its indexed prefix is unchanged (hashed again at `at`); nothing new to index.
    Verified { st: Stat, entry: usize, at: Stamp },
    /// Indexed: from its start (`new`, under a new key) or its new bytes.
    Indexed {
        st: Stat,
        new: bool,
        key: u64,
        covered: u64,
        hash: u64,
        format: String,
        at: Stamp,
        segs: Vec<u32>,
        path: PathBuf,
        bytes: u64,
    },
    /// Of no format the index knows (yet).
    Unknown { st: Stat, path: PathBuf, at: Stamp },
    /// Not indexed: the index is full.
    Capped { st: Stat, path: PathBuf, at: Stamp },
    /// Left to scanning this time (changed while read, unreadable, no lock).
    Left,
}

#[derive(Clone, Copy)]
enum Kind {
    Capped,
    Other,
}

/// The segment being built, shared by the threads.
struct SegState {
    builder: Builder,
    /// Its number.
    no: u32,
    written: Vec<SegInfo>,
    /// The segments each key's blocks went to.
    keys: HashMap<u64, Vec<u32>>,
    error: Option<io::Error>,
}

struct Shared<'a> {
    segs: Mutex<SegState>,
    /// Bytes the index may still grow by (estimated as it is built).
    budget: AtomicU64,
    next_id: AtomicU64,
    updates: Mutex<Vec<Update>>,
    store: &'a Store,
    nprobes: usize,
}

impl Shared<'_> {
    /// Moves a thread's unit into the segment being built, writing the segment out
    /// when it is big enough.
    fn submit(&self, pend: &mut Pending) {
        let unit = pend.seal();
        let mut s = self.segs.lock();
        let before = s.builder.memory();
        let keys = unit.add_to(&mut s.builder);
        let grew = s.builder.memory().saturating_sub(before) as u64;
        let _ = self
            .budget
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                Some(b.saturating_sub(grew))
            });
        let no = s.no;
        for k in keys {
            let v = s.keys.entry(k).or_default();
            if !v.contains(&no) {
                v.push(no);
            }
        }
        if s.builder.memory() >= segment_memory() && s.error.is_none() {
            let b = std::mem::replace(&mut s.builder, Builder::new(self.nprobes));
            match write_segment(self.store, b, no) {
                Ok(info) => s.written.push(info),
                Err(e) => s.error = Some(e),
            }
            s.no += 1;
        }
    }
}

/// Writes `b` as segment `no`.
fn write_segment(store: &Store, b: Builder, no: u32) -> io::Result<SegInfo> {
    std::fs::create_dir_all(store.dir())?;
    let tmp = store.temp_path();
    let r = b.write(&tmp).and_then(|len| {
        crash_point("segment");
        // The lock is held by the refresh that called this.
        std::fs::rename(&tmp, store.seg_path(no))?;
        crash_point("segment-placed");
        Ok(len)
    });
    match r {
        Ok(len) => Ok(SegInfo { no, len }),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Hashes `f`'s first `n` bytes.
fn hash_prefix(f: &File, n: u64, progress: Option<&Progress>) -> io::Result<Hasher> {
    let mut h = Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut at = 0u64;
    while at < n {
        let want = ((n - at) as usize).min(buf.len());
        let got = f.read_at(&mut buf[..want], at)?;
        if got == 0 {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
        h.update(&buf[..got]);
        at += got as u64;
        if let Some(p) = progress {
            p.done.fetch_add(got as u64 / 8, Ordering::Relaxed);
        }
    }
    Ok(h)
}

/// The complete lines of a file's first read, as the search reads them to tell its
/// format (up to 256 KiB, or to the end of the first line if it is longer).
pub fn head(f: &File, size: u64) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; (256usize << 10).min(size as usize)];
    let mut n = 0;
    loop {
        if n == buf.len() {
            if memchr::memchr(b'\n', &buf).is_some()
                || buf.len() as u64 >= size.min(build::LONG_LINE as u64)
            {
                break;
            }
            let grow = (buf.len() * 2).min(size as usize).min(build::LONG_LINE);
            buf.resize(grow, 0);
        }
        let got = f.read_at(&mut buf[n..], n as u64)?;
        if got == 0 {
            break;
        }
        n += got;
    }
    buf.truncate(n);
    let whole = memchr::memrchr(b'\n', &buf).map_or(0, |k| k + 1);
    buf.truncate(whole);
    Ok(buf)
}

/// Verifies and indexes one file.
fn one_file(
    w: &Work,
    e: Option<&Entry>,
    formats: &dyn Formats,
    writing: bool,
    pend: &mut Pending,
    shared: &Shared,
    progress: Option<&Progress>,
) -> Update {
    let r = (|| -> io::Result<Update> {
        let f = crate::model::core::input::open_regular(&w.path)?;
        if Stat::of(&f.metadata()?) != w.st {
            return Ok(Update::Left);
        }
        let unchanged_after =
            |f: &File| -> io::Result<bool> { Ok(Stat::of(&f.metadata()?) == w.st) };
        // Verify what is indexed.
        let mut from_start = w.verdict == Verdict::New;
        let mut h = Hasher::new();
        if let (Verdict::Verify, Some(e)) = (w.verdict, e) {
            h = hash_prefix(&f, e.covered, progress)?;
            if h.finish() != e.hash || e.format.is_empty() {
                from_start = true;
                h = Hasher::new();
            } else if w.st.size == e.size || !writing {
                // Nothing new (or nothing may be written): verified as it is.
                if !unchanged_after(&f)? {
                    return Ok(Update::Left);
                }
                return Ok(Update::Verified {
                    st: w.st,
                    entry: w.entry.expect("an entry"),
                    at: now(),
                });
            }
        }
        if !writing {
            return Ok(Update::Left);
        }
        let (format, key, from) = if from_start {
            let head = head(&f, w.st.size)?;
            let Some(name) = formats.detect(&w.path, &head) else {
                if !unchanged_after(&f)? {
                    return Ok(Update::Left);
                }
                return Ok(Update::Unknown {
                    st: w.st,
                    path: w.path.clone(),
                    at: now(),
                });
            };
            (
                name.to_string(),
                shared.next_id.fetch_add(1, Ordering::Relaxed),
                0,
            )
        } else {
            let e = e.expect("an entry to append to");
            (e.format.clone(), e.id, e.covered)
        };
        // About a tenth of the bytes: refused once the index is full.
        let estimate = (w.st.size - from) / 10;
        if shared.budget.load(Ordering::Relaxed) < estimate {
            return Ok(Update::Capped {
                st: w.st,
                path: w.path.clone(),
                at: now(),
            });
        }
        let Some(rules) = formats.lines(&format) else {
            return Ok(Update::Left);
        };
        let covered =
            build::index_range(&f, key, from, w.st.size, rules, &mut h, pend, &mut |p| {
                shared.submit(p);
            })?;
        if let Some(p) = progress {
            p.done.fetch_add(w.st.size - from, Ordering::Relaxed);
        }
        if !unchanged_after(&f)? {
            return Ok(Update::Left);
        }
        Ok(Update::Indexed {
            st: w.st,
            new: from_start,
            key,
            covered,
            hash: h.finish(),
            format,
            at: now(),
            segs: Vec::new(),
            path: w.path.clone(),
            bytes: w.st.size - from,
        })
    })();
    r.unwrap_or_else(|e| {
        log::debug!("index: {}: {e}", w.path.display());
        Update::Left
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Entry {
        Entry {
            id: 1,
            dev: 1,
            ino: 2,
            path: PathBuf::from("/x"),
            size: 100,
            mtime: (10, 0),
            ctime: (20, 5),
            verified_at: (30, 0),
            covered: 90,
            hash: 0,
            format: "pi".into(),
            flags: 0,
            segs: vec![],
        }
    }

    fn stat() -> Stat {
        Stat {
            dev: 1,
            ino: 2,
            size: 100,
            mtime: (10, 0),
            ctime: (20, 5),
        }
    }

    #[test]
    fn verdicts() {
        let e = entry();
        assert_eq!(verdict(None, &stat()), Verdict::New);
        assert_eq!(verdict(Some(&e), &stat()), Verdict::Fresh);
        // Appended, rewritten (even with the mtime set back: ctime moves), touched.
        for st in [
            Stat {
                size: 120,
                ..stat()
            },
            Stat {
                ctime: (40, 0),
                ..stat()
            },
            Stat {
                mtime: (11, 0),
                ..stat()
            },
        ] {
            assert_eq!(verdict(Some(&e), &st), Verdict::Verify, "{st:?}");
        }
        // Shorter than what is indexed, another inode.
        assert_eq!(
            verdict(Some(&e), &Stat { size: 50, ..stat() }),
            Verdict::New
        );
        assert_eq!(verdict(Some(&e), &Stat { ino: 3, ..stat() }), Verdict::New);
        // Read within the racy margin of its last change: never trusted on stat.
        for at in [(20, 5), (21, 0), (23, 4)] {
            let racy = Entry {
                verified_at: at,
                ..entry()
            };
            assert_eq!(verdict(Some(&racy), &stat()), Verdict::Verify, "{at:?}");
        }
        let settled = Entry {
            verified_at: (23, 5),
            ..entry()
        };
        assert_eq!(verdict(Some(&settled), &stat()), Verdict::Fresh);
    }
}
