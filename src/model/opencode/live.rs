//! Which sessions of an opencode database a commit touched.
//!
//! Every session lives in one database (§1), so to whoever watches files every commit
//! is a change of every session. Asking each loaded session whether its rows moved
//! costs in proportion to the sessions loaded (hundreds after an `ls` of a big
//! database), not to what changed. A [`Tracker`], one per database, turns each change
//! of the database into the set of sessions it touched, with a few cheap queries in
//! one snapshot:
//!
//! * the `session` table (id, parent, `time_updated`: small rows, a few thousand):
//!   sessions created, removed, or whose time moved (opencode moves it when it writes
//!   a turn, and so do sessionfs's replies and forks, §9.3);
//! * rows added to `message`, `part` and `event` since the last look, by rowid (an
//!   index range): their sessions. opencode logs every write of a session in `event`
//!   (§3.5), streaming updates of a part included, so rows it rewrites in place are
//!   told by their event;
//! * a session touched is also a change of its ancestors' (a subagent's rows show in
//!   the session that ran it).
//!
//! Each change is a numbered step. A session remembers the step its index is at
//! (`super::index`) and asks [`Tracker::since`] whether it was touched after it; the
//! mount asks which sessions were touched since it last asked
//! ([`Tracker::touched_since`]) and catches up only those.
//!
//! What cannot be told this way makes a step of "every session", where each session
//! compares its own fingerprint (row counts and times) as it did before there was a
//! tracker: the first look, a database without an event log (rows could change in
//! place unseen), a table whose largest rowid went down (rows deleted from its end:
//! the next insert reuses their rowids). And a session touched (or found changed by
//! its fingerprint) in the last [`HOT`] stays *hot*: it compares its fingerprint at
//! every change, in case a program other than opencode rewrites its rows in place
//! without an event.
//!
//! **Visibility.** What is visible is asked of SQLite: the tracker keeps one
//! read-only connection, and a look reads `PRAGMA data_version` inside the read
//! transaction of its queries (that snapshot's version); a later look whose
//! `data_version` (outside a transaction: what is visible now) is the same has nothing
//! to do. So a commit is never counted as looked at by queries that did not see it. A
//! commit's pages reach `-wal` before it is visible, and that write is what wakes the
//! watcher: when the `-wal` moved since the last look and nothing new is visible, the
//! watcher waits for the commit to become visible ([`Tracker::settle`], up to
//! [`SETTLE`]), rather than look too early and see it only at the next safety poll. The
//! `-wal` is noted only by a look that saw something new: a poll that finds nothing
//! new (a request's, the safety poll's catching up of a loaded session) may be made
//! while a commit's pages are written, and must not count them as seen, or the
//! watcher woken by them would not wait. This only saves time, it is not what makes a
//! commit listed: the `-wal`'s size and time cannot say which pages a snapshot holds
//! (a look made while a second commit's pages are being written counts them as
//! seen), and a commit may take longer than [`SETTLE`] to become visible (its sync
//! on a busy disk). What `settle` misses, the watcher's safety poll lists within a
//! second (`super::catalog::Sessions`'s `moved_since`).
//!
//! **Locks.** `marks` is held by the thread that looks at the database (one at a time;
//! another that wants to look waits, then sees the result); `log` only briefly, never
//! while querying. `marks` is taken before `log`, never the other way round. Neither is
//! held while anything is sent to the kernel.

use super::db;
use parking_lot::Mutex;
use rusqlite::Connection;
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

/// How long a session touched stays hot (compares its fingerprint at every change).
pub const HOT: Duration = Duration::from_secs(10);
/// How long the watcher waits for a commit whose pages are in `-wal` to become
/// visible (a commit syncs its pages first, which on a busy disk takes a while).
pub const SETTLE: Duration = Duration::from_secs(1);
/// Steps remembered; a session further behind compares its fingerprint.
const STEPS: usize = 256;
/// How far up the parents of a touched session are touched too.
const MAX_DEPTH: usize = 16;

/// What one step changed.
#[derive(Debug, Clone)]
enum Step {
    /// Cannot be told: every session may have changed.
    All,
    /// These sessions (and their ancestors) were touched.
    Some(HashSet<String>),
}

/// What a session learns from [`Tracker::since`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Since {
    /// Untouched since that step.
    Same,
    /// Touched: read it again.
    Touched,
    /// Cannot be told (or the session is hot): compare its fingerprint.
    Check,
}

/// What the last look saw.
#[derive(Default)]
struct Marks {
    /// The connection looks are made on (opened at the first look, dropped on an
    /// error), and the `data_version` of the last look's snapshot.
    conn: Option<Connection>,
    version: Option<i64>,
    /// The `-wal`'s size and time before the last look that saw something new (or
    /// when [`Tracker::settle`] last gave up waiting).
    wal: (u64, i64),
    /// Session id → (`time_updated`, `parent_id`).
    sessions: HashMap<String, (i64, Option<String>)>,
    /// Largest rowid of `message`, `part`, `event`.
    max: [i64; 3],
}

#[derive(Default)]
struct Log {
    step: u64,
    steps: VecDeque<(u64, Step)>,
    hot: HashMap<String, Instant>,
}

/// The changes of one database (see the module docs).
pub struct Tracker {
    db: PathBuf,
    marks: Mutex<Marks>,
    log: Mutex<Log>,
}

impl std::fmt::Debug for Tracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tracker({}, step {})", self.db.display(), self.step())
    }
}

/// The tracker of database `db` (one per path in the process, kept while in use).
pub fn tracker(db: &Path) -> Arc<Tracker> {
    static ALL: OnceLock<Mutex<HashMap<PathBuf, Weak<Tracker>>>> = OnceLock::new();
    let mut all = ALL.get_or_init(Default::default).lock();
    if let Some(t) = all.get(db).and_then(Weak::upgrade) {
        return t;
    }
    all.retain(|_, w| w.strong_count() > 0);
    let t = Arc::new(Tracker {
        db: db.to_path_buf(),
        marks: Mutex::new(Marks::default()),
        log: Mutex::new(Log::default()),
    });
    all.insert(db.to_path_buf(), Arc::downgrade(&t));
    t
}

/// What one look read, in one snapshot.
struct Looked {
    sessions: HashMap<String, (i64, Option<String>)>,
    max: [i64; 3],
    has_events: bool,
    /// Sessions of rows past the previous largest rowids.
    added: HashSet<String>,
}

const TABLES: [(&str, &str); 3] = [
    ("message", "session_id"),
    ("part", "session_id"),
    ("event", "aggregate_id"),
];

fn look(c: &Connection, before: &[i64; 3], first: bool) -> rusqlite::Result<Looked> {
    let mut sessions = HashMap::new();
    {
        let mut stmt = c.prepare("SELECT id, time_updated, parent_id FROM session")?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                (r.get::<_, i64>(1)?, r.get::<_, Option<String>>(2)?),
            ))
        })?;
        for row in rows {
            let (id, v) = row?;
            sessions.insert(id, v);
        }
    }
    let has_events = !db::columns(c, "event")?.is_empty();
    let mut max = [0i64; 3];
    let mut added = HashSet::new();
    for (k, (table, col)) in TABLES.iter().enumerate() {
        if k == 2 && !has_events {
            continue;
        }
        max[k] = c
            .query_row(&format!("SELECT max(rowid) FROM {table}"), [], |r| {
                r.get::<_, Option<i64>>(0)
            })?
            .unwrap_or(0);
        if !first && max[k] > before[k] {
            let mut stmt = c.prepare(&format!(
                "SELECT DISTINCT {col} FROM {table} WHERE rowid > ?1"
            ))?;
            let rows = stmt.query_map([before[k]], |r| r.get::<_, Option<String>>(0))?;
            for row in rows {
                if let Some(id) = row? {
                    added.insert(id);
                }
            }
        }
    }
    Ok(Looked {
        sessions,
        max,
        has_events,
        added,
    })
}

/// Runs `f` in one read transaction of `c`.
fn in_snapshot<T>(
    c: &Connection,
    f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    c.execute_batch("BEGIN DEFERRED")?;
    let r = f(c);
    // Ends the read transaction whatever happened (it has nothing to keep).
    let _ = c.execute_batch("COMMIT");
    r
}

impl Tracker {
    /// The step the tracker is at (no look at the database). A read that starts after
    /// this returns sees at least what that step saw.
    pub fn step(&self) -> u64 {
        self.log.lock().step
    }

    /// Waits, up to [`SETTLE`], for a commit being written to become visible: while the
    /// `-wal` moved since the last look that saw something new and nothing new is
    /// visible. For the watcher,
    /// which is woken by the write of the pages, before the commit is visible; never
    /// holds a lock while it waits.
    pub fn settle(&self) {
        let until = Instant::now() + SETTLE;
        loop {
            let now = Instant::now();
            if !self.unseen(now >= until) {
                return;
            }
            if now >= until {
                // Given up: the pages written so far are not waited for again (they may
                // be a transaction rolled back); the safety poll sees them if they
                // become visible.
                return;
            }
            // Every millisecond at first, then every 5.
            let waited = SETTLE.saturating_sub(until - now);
            std::thread::sleep(Duration::from_millis(if waited.as_millis() < 50 {
                1
            } else {
                5
            }));
        }
    }

    /// Whether pages were written to the `-wal` since the last look that saw something
    /// new while nothing new is visible: a commit being written. With `give_up`, such
    /// pages count as seen from now on.
    fn unseen(&self, give_up: bool) -> bool {
        let mut marks = self.marks.lock();
        let (Some(c), Some(v)) = (&marks.conn, marks.version) else {
            return false;
        };
        let wal = db::wal_stat(&self.db);
        let unseen = wal != marks.wal && db::data_version(c).ok() == Some(v);
        if unseen && give_up {
            marks.wal = wal;
        }
        unseen
    }

    /// Looks at the database if what is visible changed since the last look, and
    /// records what changed as a new step; the step it is at then. `None` when the
    /// database cannot be read now: nothing is recorded, the next look tries again.
    pub fn poll(&self) -> Option<u64> {
        let mut marks = self.marks.lock();
        // The `-wal` before what is visible: pages written in between are seen as
        // written and not visible by the next `settle`. Noted only if the look sees
        // something new (see the module docs).
        let wal = db::wal_stat(&self.db);
        if marks.conn.is_none() {
            // A new connection counts its versions afresh: the next look tells nothing.
            marks.version = None;
            marks.conn = db::open_read(&self.db).ok();
        }
        let before = marks.max;
        let first = marks.version.is_none();
        let c = marks.conn.as_ref()?;
        let looked = match db::data_version(c) {
            Ok(v) if Some(v) == marks.version => return Some(self.step()),
            Ok(_) => in_snapshot(c, |c| {
                let v = db::data_version(c)?;
                look(c, &before, first).map(|l| (v, l))
            }),
            Err(e) => Err(e),
        };
        let (version, seen) = match looked {
            Ok(x) => x,
            Err(_) => {
                marks.conn = None;
                return None;
            }
        };
        let step = if first || !seen.has_events || (0..3).any(|k| seen.max[k] < before[k]) {
            Step::All
        } else {
            let mut touched = seen.added;
            for (id, v) in &seen.sessions {
                if marks.sessions.get(id) != Some(v) {
                    touched.insert(id.clone());
                }
            }
            for id in marks.sessions.keys() {
                if !seen.sessions.contains_key(id) {
                    touched.insert(id.clone());
                }
            }
            // Their ancestors, by the parents now and before.
            let mut up: Vec<String> = touched.iter().cloned().collect();
            for _ in 0..MAX_DEPTH {
                let mut next = Vec::new();
                for id in &up {
                    let parents = [&seen.sessions, &marks.sessions]
                        .into_iter()
                        .filter_map(|m| m.get(id).and_then(|v| v.1.clone()));
                    for p in parents {
                        if touched.insert(p.clone()) {
                            next.push(p);
                        }
                    }
                }
                if next.is_empty() {
                    break;
                }
                up = next;
            }
            Step::Some(touched)
        };
        marks.version = Some(version);
        marks.wal = wal;
        marks.sessions = seen.sessions;
        marks.max = seen.max;
        let mut log = self.log.lock();
        log.step += 1;
        let n = log.step;
        let now = Instant::now();
        if let Step::Some(t) = &step {
            for id in t {
                log.hot.insert(id.clone(), now + HOT);
            }
        }
        log.hot.retain(|_, until| *until > now);
        log.steps.push_back((n, step));
        while log.steps.len() > STEPS {
            log.steps.pop_front();
        }
        Some(n)
    }

    /// Makes session `sid` hot: it was found changed by its fingerprint, where the
    /// tracker could not tell (its rows may go on changing in place).
    pub fn heat(&self, sid: &str) {
        self.log
            .lock()
            .hot
            .insert(sid.to_string(), Instant::now() + HOT);
    }

    /// Whether session `sid` was touched after step `at`.
    pub fn since(&self, at: u64, sid: &str) -> Since {
        let log = self.log.lock();
        if at >= log.step {
            return Since::Same;
        }
        let mut all = log.steps.front().is_none_or(|(n, _)| *n > at + 1);
        for (_, step) in log.steps.iter().filter(|(n, _)| *n > at) {
            match step {
                Step::All => all = true,
                Step::Some(t) if t.contains(sid) => return Since::Touched,
                Step::Some(_) => {}
            }
        }
        if all || log.hot.get(sid).is_some_and(|u| *u > Instant::now()) {
            return Since::Check;
        }
        Since::Same
    }

    /// The sessions touched after step `at`, hot ones included, and the step now;
    /// `None` for the sessions when that cannot be told (every session may have).
    pub fn touched_since(&self, at: u64) -> (u64, Option<HashSet<String>>) {
        let log = self.log.lock();
        if at >= log.step {
            return (log.step, Some(HashSet::new()));
        }
        if log.steps.front().is_none_or(|(n, _)| *n > at + 1) {
            return (log.step, None);
        }
        let now = Instant::now();
        let mut out: HashSet<String> = log
            .hot
            .iter()
            .filter(|(_, u)| **u > now)
            .map(|(id, _)| id.clone())
            .collect();
        for (_, step) in log.steps.iter().filter(|(n, _)| *n > at) {
            match step {
                Step::All => return (log.step, None),
                Step::Some(t) => out.extend(t.iter().cloned()),
            }
        }
        (log.step, Some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(p: &Path, sql: &str) {
        let c = Connection::open(p).unwrap();
        c.execute_batch(sql).unwrap();
    }

    #[test]
    fn a_commit_touches_the_sessions_of_its_rows_and_their_parents() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("opencode.db");
        std::fs::copy(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/opencode/samples/home/.local/share/opencode/opencode.db"),
            &p,
        )
        .unwrap();
        let keep = Connection::open(&p).unwrap();
        keep.execute_batch("PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0")
            .unwrap();
        let (sub, parent): (String, String) = keep
            .query_row(
                "SELECT id, parent_id FROM session WHERE parent_id IS NOT NULL LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        let other: String = keep
            .query_row(
                "SELECT id FROM session WHERE parent_id IS NULL AND id != ?1 LIMIT 1",
                [&parent],
                |r| r.get(0),
            )
            .unwrap();
        let t = tracker(&p);
        let first = t.poll().unwrap();
        // The first look cannot tell.
        assert_eq!(t.since(0, "ses_x"), Since::Check);
        assert_eq!(t.poll().unwrap(), first, "nothing visible changed");
        // A part added to the subagent's session: it and its parent are touched.
        write(
            &p,
            &format!(
                "INSERT INTO part SELECT 'prt_fffffffffff9zzzzzzzzzzzzzz', message_id, \
                 session_id, time_created, time_updated, data FROM part \
                 WHERE session_id = '{sub}' LIMIT 1"
            ),
        );
        let s1 = t.poll().unwrap();
        assert_eq!(s1, first + 1);
        assert_eq!(t.since(first, &sub), Since::Touched);
        assert_eq!(t.since(first, &parent), Since::Touched);
        assert_eq!(t.since(first, &other), Since::Same);
        assert_eq!(t.since(s1, &sub), Since::Same);
        let (now, touched) = t.touched_since(first);
        assert_eq!(now, s1);
        let touched = touched.unwrap();
        assert!(touched.contains(&sub) && touched.contains(&parent));
        assert!(!touched.contains(&other));
        // An event logged for a session (opencode's rewrite of a row in place).
        write(
            &p,
            &format!(
                "INSERT INTO event (id, aggregate_id, seq, type, data) VALUES \
                 ('evt_fffffffffff9zzzzzzzzzzzzzz', '{other}', 100000, 'x', '{{}}')"
            ),
        );
        let s2 = t.poll().unwrap();
        assert_eq!(t.since(s1, &other), Since::Touched);
        // The session row's time moved.
        write(
            &p,
            &format!("UPDATE session SET time_updated = time_updated + 1 WHERE id = '{parent}'"),
        );
        let s3 = t.poll().unwrap();
        assert_eq!(t.since(s2, &parent), Since::Touched);
        // Rows deleted from the end of a table: cannot be told.
        write(
            &p,
            "DELETE FROM event WHERE id = 'evt_fffffffffff9zzzzzzzzzzzzzz'",
        );
        let s4 = t.poll().unwrap();
        assert_eq!(t.touched_since(s3), (s4, None));
        assert_eq!(t.since(s3, &other), Since::Check);
        // A session touched lately (hot) compares its fingerprint at any change.
        let never: String = keep
            .query_row(
                "SELECT id FROM session WHERE parent_id IS NULL AND id NOT IN (?1, ?2) LIMIT 1",
                [&parent, &other],
                |r| r.get(0),
            )
            .unwrap();
        write(
            &p,
            &format!(
                "INSERT INTO event (id, aggregate_id, seq, type, data) VALUES \
                 ('evt_fffffffffff8zzzzzzzzzzzzzz', '{other}', 100001, 'x', '{{}}')"
            ),
        );
        let s5 = t.poll().unwrap();
        assert_eq!(t.since(s4, &other), Since::Touched);
        assert_eq!(t.since(s4, &parent), Since::Check);
        assert_eq!(t.since(s4, &never), Since::Same);
        let touched = t.touched_since(s4).1.unwrap();
        assert!(touched.contains(&other) && touched.contains(&parent));
        assert!(!touched.contains(&never));
        assert_eq!(t.touched_since(s5), (s5, Some(HashSet::new())));
    }

    /// A poll made while a commit's pages are being written (a request's, the safety
    /// poll's) sees nothing new and leaves them unseen: the watcher those pages woke
    /// still waits for the commit to become visible, rather than list too early.
    #[test]
    fn pages_written_and_not_visible_stay_unseen_until_a_look_sees_them() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("opencode.db");
        std::fs::copy(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/opencode/samples/home/.local/share/opencode/opencode.db"),
            &p,
        )
        .unwrap();
        let keep = Connection::open(&p).unwrap();
        keep.execute_batch("PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0")
            .unwrap();
        let touch = "UPDATE session SET time_updated = time_updated + 1 WHERE id = \
                     (SELECT id FROM session LIMIT 1)";
        // The `-wal` holds pages (written through the connection kept open: the last
        // one closed would checkpoint them away).
        keep.execute_batch(touch).unwrap();
        let t = tracker(&p);
        let s0 = t.poll().unwrap();
        assert!(!t.unseen(false));
        // A commit's pages are written, not visible yet: the `-wal` moved.
        let moved = |secs| {
            let f = std::fs::File::options()
                .write(true)
                .open(db::wal_of(&p))
                .unwrap();
            f.set_modified(std::time::SystemTime::now() + Duration::from_secs(secs))
                .unwrap();
        };
        moved(10);
        assert!(t.unseen(false));
        assert_eq!(t.poll(), Some(s0), "nothing new is visible");
        assert!(t.unseen(false), "a poll that saw nothing new saw no pages");
        // The commit is visible: settle waits no more, and the look sees it.
        keep.execute_batch(touch).unwrap();
        assert!(!t.unseen(false));
        t.settle();
        assert_eq!(t.poll(), Some(s0 + 1));
        assert!(!t.unseen(false));
        // Pages that never become visible (a transaction rolled back) are waited for
        // once: given up on, they count as seen.
        moved(20);
        assert!(t.unseen(false));
        assert!(t.unseen(true));
        assert!(!t.unseen(false));
        assert_eq!(t.poll(), Some(s0 + 1));
    }
}
