//! opencode's sessions as a mount lists them: by project, one directory per session.
//!
//! Every session of every project is a row of one table (§1), so listing is one query
//! of `session` (joined with `project` for its worktree), never a read of messages: a
//! database of thousands of sessions lists in a few milliseconds, and nothing of a
//! session is loaded until it is entered.
//!
//! * A **project folder** is named after the project's worktree, the way Claude Code
//!   names its project folders (`/home/dev/src/tui` → `-home-dev-src-tui`): in a git
//!   repository every session of the repository is there, whatever subfolder it ran in
//!   (`session.path`). Sessions outside git all belong to opencode's `global` project
//!   (worktree `/`); they are grouped by their own directory instead.
//! * A **session directory** is named by the session id (`ses_…`). opencode's ids
//!   descend with time (§2.1), so `ls` lists a project's newest session first, as
//!   opencode's picker does. Its `name` file holds the title the picker shows.
//! * Subagents' sessions (`parent_id` set) are not listed: they show inside the
//!   session that ran them.
//!
//! Where the database is: `$OPENCODE_DB` (absolute, or relative to the data folder),
//! else `opencode.db` in opencode's data folder, `$XDG_DATA_HOME/opencode` or
//! `~/.local/share/opencode` (§1, as opencode 1.18.33 resolves them).

use super::db::{self, DB_NAME, DbError};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// A session as a listing shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub id: String,
    /// Its project folder.
    pub folder: String,
    pub title: String,
    pub time_updated: i64,
}

/// The project folder of a session: its project's worktree, or its own directory for
/// a session outside git (see the module docs).
pub fn folder_name(worktree: Option<&str>, directory: &str) -> OsString {
    let base = match worktree {
        Some(w) if !w.is_empty() && w != "/" => w,
        _ => directory,
    };
    OsString::from(crate::model::core::text::path_folder_name(base))
}

/// Every session of `db` that is not a subagent's, newest first.
pub fn list(db_path: &Path) -> Result<Vec<Listed>, DbError> {
    db::read(db_path, |c| {
        let mut stmt = c.prepare(
            "SELECT s.id, s.title, s.time_updated, s.directory, p.worktree FROM session s \
             LEFT JOIN project p ON p.id = s.project_id WHERE s.parent_id IS NULL \
             ORDER BY s.id",
        )?;
        let rows = stmt.query_map([], |r| {
            let worktree: Option<String> = r.get(4)?;
            let dir: String = r.get(3)?;
            Ok(Listed {
                id: r.get(0)?,
                title: r.get(1)?,
                time_updated: r.get(2)?,
                folder: folder_name(worktree.as_deref(), &dir)
                    .to_string_lossy()
                    .into_owned(),
            })
        })?;
        rows.collect()
    })
}

/// [`list`] by project folder.
pub fn by_folder(db_path: &Path) -> Result<BTreeMap<String, Vec<Listed>>, DbError> {
    let mut out: BTreeMap<String, Vec<Listed>> = BTreeMap::new();
    for l in list(db_path)? {
        out.entry(l.folder.clone()).or_default().push(l);
    }
    Ok(out)
}

/// `$HOME`, when set and not empty.
fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// opencode's data folder: `$XDG_DATA_HOME/opencode` (an absolute `XDG_DATA_HOME`),
/// else `~/.local/share/opencode`.
pub fn data_dir() -> Option<PathBuf> {
    match std::env::var_os("XDG_DATA_HOME").map(PathBuf::from) {
        Some(x) if x.is_absolute() => Some(x.join("opencode")),
        _ => home().map(|h| h.join(".local/share/opencode")),
    }
}

/// The database opencode uses: `$OPENCODE_DB` (absolute, or relative to the data
/// folder), else `opencode.db` in the data folder.
pub fn default_db() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("OPENCODE_DB").filter(|d| !d.is_empty()) {
        let p = PathBuf::from(d);
        return if p.is_absolute() {
            Some(p)
        } else {
            data_dir().map(|dd| dd.join(p))
        };
    }
    data_dir().map(|d| d.join(DB_NAME))
}

/// The opencode database `path` names: the file itself, a data folder holding
/// `opencode.db`, or a HOME holding `.local/share/opencode/opencode.db`.
pub fn db_of(path: &Path) -> Option<PathBuf> {
    let md = std::fs::metadata(path).ok()?;
    if md.is_file() {
        return (db::is_sqlite(path) && holds_sessions_table(path)).then(|| path.to_path_buf());
    }
    [
        path.join(DB_NAME),
        path.join(".local/share/opencode").join(DB_NAME),
    ]
    .into_iter()
    .find(|cand| cand.is_file() && db::is_sqlite(cand))
}

/// Whether the SQLite file `path` has opencode's `session` and `message` tables.
fn holds_sessions_table(path: &Path) -> bool {
    db::read(path, |c| {
        Ok(!db::columns(c, "session")?.is_empty() && !db::columns(c, "message")?.is_empty())
    })
    .unwrap_or(false)
}

/// Whether a change to `name` in the database's folder can change its sessions: the
/// database or its `-wal` (each commit writes one of them).
pub fn concerns(db_path: &Path, name: &std::ffi::OsStr) -> bool {
    let Some(db_name) = db_path.file_name() else {
        return false;
    };
    let mut wal = db_name.to_os_string();
    wal.push("-wal");
    name == db_name || name == wal
}

/// How the agents' table finds and lists opencode's sessions: the database a path
/// names ([`db_of`]) is the root, listed by [`Sessions`].
pub const CATALOG: crate::model::core::catalog::CatalogOf =
    crate::model::core::catalog::CatalogOf {
        root_of: db_of,
        holds_sessions,
        lister,
    };

/// Whether the database holds a session.
fn holds_sessions(db: &Path) -> std::io::Result<bool> {
    db::read(db, |c| {
        c.query_row("SELECT EXISTS (SELECT 1 FROM session)", [], |r| r.get(0))
    })
    .map_err(|e| std::io::Error::new(std::io::Error::from_raw_os_error(e.errno).kind(), e.reason))
}

fn lister(db: &Path) -> Box<dyn crate::model::core::catalog::Lister> {
    Box::new(Sessions::new(db))
}

/// An opencode database as a mount lists it (see the module docs).
pub struct Sessions {
    pub db: PathBuf,
    tracker: std::sync::Arc<super::live::Tracker>,
    /// The tracker's step of the last [`Lister::sessions_changed`].
    told: parking_lot::Mutex<u64>,
    /// The last listing and the tracker's step it was read at.
    listed: parking_lot::Mutex<Option<(u64, crate::model::core::catalog::Catalog)>>,
}

impl Sessions {
    pub fn new(db: &Path) -> Sessions {
        let tracker = super::live::tracker(db);
        let told = tracker.step();
        Sessions {
            db: db.to_path_buf(),
            tracker,
            told: parking_lot::Mutex::new(told),
            listed: parking_lot::Mutex::new(None),
        }
    }
}

impl crate::model::core::catalog::Lister for Sessions {
    /// Read again only when the database's tracker saw a change.
    fn scan(&self) -> std::io::Result<crate::model::core::catalog::Catalog> {
        use crate::model::core::catalog::{Catalog, SessionRef};
        // Unreadable by the tracker right now: listed afresh, and not kept.
        let step = self.tracker.poll();
        if let Some((at, cat)) = &*self.listed.lock()
            && Some(*at) == step
        {
            return Ok(cat.clone());
        }
        let by = by_folder(&self.db).map_err(|e| {
            std::io::Error::new(std::io::Error::from_raw_os_error(e.errno).kind(), e.reason)
        })?;
        let mut cat = Catalog {
            folders: self
                .db
                .parent()
                .map(Path::to_path_buf)
                .into_iter()
                .collect(),
            ..Catalog::default()
        };
        for (folder, list) in by {
            let mut v: Vec<SessionRef> = list
                .into_iter()
                .map(|l| SessionRef {
                    path: self.db.join(&l.id),
                    name: OsString::from(l.id),
                    mtime: Some(
                        std::time::UNIX_EPOCH
                            + std::time::Duration::from_millis(l.time_updated.max(0) as u64),
                    ),
                    files: Vec::new(),
                })
                .collect();
            v.sort_by(|a, b| a.name.cmp(&b.name));
            cat.projects.insert(OsString::from(folder), v);
        }
        if let Some(step) = step {
            *self.listed.lock() = Some((step, cat.clone()));
        }
        Ok(cat)
    }

    /// The sessions the commits since the last call touched (their subagents' rows
    /// included), and those touched lately; `None` when the tracker cannot tell.
    fn sessions_changed(&self) -> Option<Vec<OsString>> {
        let mut told = self.told.lock();
        let (now, touched) = self.tracker.touched_since(*told);
        *told = now;
        touched.map(|t| t.into_iter().map(OsString::from).collect())
    }

    /// Whether a commit was made since the listing `shown` was read: the tracker
    /// looks (a `PRAGMA data_version` when nothing changed), and what was last read at
    /// the step it is at now is compared with what is shown (a listing read by a scan
    /// that was not the last one kept could differ). Unreadable right now: `false`, the
    /// next poll asks again.
    fn moved_since(&self, shown: &crate::model::core::catalog::Catalog) -> bool {
        let Some(step) = self.tracker.poll() else {
            return false;
        };
        match &*self.listed.lock() {
            Some((at, cat)) => *at != step || cat != shown,
            None => true,
        }
    }

    /// No file of one session: a change to the database is any session's.
    fn session_of(&self, _changed: &std::ffi::OsStr) -> Option<OsString> {
        None
    }

    /// The database or its `-wal`. Asked by the watcher first, on its own thread: a
    /// commit whose pages are being written is waited for here (up to
    /// [`super::live::SETTLE`]), so that the scan that follows sees it.
    fn changes_every_session(&self, changed: &std::ffi::OsStr) -> bool {
        let yes = concerns(&self.db, changed);
        if yes {
            self.tracker.settle();
        }
        yes
    }
}
