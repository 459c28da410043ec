//! What Codex's own database says about threads: the current page, names, subagents.
//!
//! `$CODEX_HOME/state_5.sqlite` belongs to Codex, which writes it while we read. So it
//! is opened read-only (`SQLITE_OPEN_READ_ONLY` and the `mode=ro` URI), with a short busy
//! timeout, and read in single statements in autocommit mode: no transaction outlives one
//! query, so Codex is never locked out by us. Whatever goes wrong (no file, a locked or
//! corrupt database, a schema without the columns we expect) gives [`State::default`]
//! plus the reason, and the caller falls back: names from `session_index.jsonl` (the last
//! line of an id wins, CODEX-FORMAT §7), else the first prompt; the current page the
//! newest by file name (§4).
//!
//! `rusqlite` with its `bundled` SQLite: the reader must work on machines without a
//! system libsqlite3 (CI among them), and the WAL-mode database Codex writes needs a
//! SQLite that knows WAL, which any bundled one does.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use serde_json::Value;

/// How long one query waits for Codex's write lock before we fall back.
pub const BUSY_TIMEOUT: Duration = Duration::from_millis(200);

/// One `threads` row (the columns we read; §4, §7, §6).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadRow {
    pub id: String,
    /// The current page (§4).
    pub rollout_path: String,
    pub title: Option<String>,
    pub name: Option<String>,
    /// The first prompt of the thread's whole history (a fork's: the one it
    /// inherited), which the picker shows when the thread has no name (§7).
    pub preview: Option<String>,
    /// As stored: `exec`, `vscode`, or the JSON of a subagent source.
    pub source: Option<String>,
    pub cwd: Option<String>,
}

/// One `thread_spawn_edges` row (§6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnEdge {
    pub parent_thread_id: String,
    pub child_thread_id: String,
    pub status: String,
}

/// What was read from `state_5.sqlite` and `session_index.jsonl`.
#[derive(Debug, Clone, Default)]
pub struct State {
    pub threads: HashMap<String, ThreadRow>,
    pub spawn_edges: Vec<SpawnEdge>,
    /// `session_index.jsonl`: thread id → its last `thread_name`.
    pub index_names: HashMap<String, String>,
    /// Why the database could not be used, when it could not (the fallback is in use).
    pub db_error: Option<String>,
}

impl State {
    /// Reads the state of the Codex home `home`, every thread of it. Never fails: see
    /// the module doc.
    pub fn load(home: &Path) -> State {
        State::load_some(home, None)
    }

    /// [`State::load`] for the threads `ids` only: their rows, the spawn edges that
    /// name one of them, their names. What a thread's session keeps: the state of the
    /// threads it shows, never a copy of the whole table (a home holds thousands of
    /// threads, and each loaded session would otherwise hold them all).
    pub fn load_for(home: &Path, ids: &[&str]) -> State {
        State::load_some(home, Some(ids))
    }

    fn load_some(home: &Path, ids: Option<&[&str]>) -> State {
        let mut state = State {
            index_names: read_session_index_of(&home.join("session_index.jsonl"), ids),
            ..State::default()
        };
        match read_db(&home.join("state_5.sqlite"), ids) {
            Ok((threads, edges)) => {
                state.threads = threads;
                state.spawn_edges = edges;
            }
            Err(e) => state.db_error = Some(e),
        }
        state
    }

    /// Approximate heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        let o = |s: &Option<String>| s.as_ref().map_or(0, |s| s.len());
        let rows: usize = self
            .threads
            .iter()
            .map(|(k, r)| {
                k.len()
                    + r.id.len()
                    + r.rollout_path.len()
                    + o(&r.title)
                    + o(&r.name)
                    + o(&r.source)
                    + o(&r.cwd)
                    + std::mem::size_of::<ThreadRow>()
                    + 48
            })
            .sum();
        let edges: usize = self
            .spawn_edges
            .iter()
            .map(|e| {
                e.parent_thread_id.len()
                    + e.child_thread_id.len()
                    + e.status.len()
                    + std::mem::size_of::<SpawnEdge>()
            })
            .sum();
        let names: usize = self
            .index_names
            .iter()
            .map(|(k, v)| k.len() + v.len() + 64)
            .sum();
        rows + edges + names + self.db_error.as_ref().map_or(0, String::len)
    }

    /// The current page's path as the database names it, if it has a row.
    pub fn rollout_path(&self, thread_id: &str) -> Option<PathBuf> {
        self.threads
            .get(thread_id)
            .map(|r| PathBuf::from(&r.rollout_path))
    }
}

fn nonempty(s: &Option<String>) -> Option<&str> {
    s.as_deref().filter(|s| !s.trim().is_empty())
}

impl State {
    /// The name Codex's picker (`codex resume`) shows for the thread: the name a user
    /// gave it (`threads.name`, which the TUI sets to the first prompt and `/rename`
    /// changes; the name index `session_index.jsonl` holds the same), else its
    /// `preview`, the first prompt of its whole history: for a fork the prompt it
    /// inherited, not its own first one (`threads.title`, which the picker does not
    /// show). Measured with Codex 0.171.0: `tests/fixtures/codex/pickers` (§7).
    pub fn name(&self, thread_id: &str) -> Option<&str> {
        let row = self.threads.get(thread_id);
        row.and_then(|r| nonempty(&r.name))
            .or_else(|| {
                self.index_names
                    .get(thread_id)
                    .map(String::as_str)
                    .filter(|s| !s.trim().is_empty())
            })
            .or_else(|| row.and_then(|r| nonempty(&r.preview)))
    }
}

type Tables = (HashMap<String, ThreadRow>, Vec<SpawnEdge>);

/// Refuses the database at `path` unless it (and its `-wal` and `-shm`, when they are
/// there) is a regular file inside the Codex home, its folder, reached through no
/// link: SQLite opens them by name and would wait forever on a FIFO, and follow a link
/// anywhere. Checked right before each open, and the open itself follows no link
/// (`SQLITE_OPEN_NOFOLLOW`). Checked without opening them
/// ([`crate::model::core::input::check_beneath`]): closing a descriptor of one would
/// drop the POSIX locks of every SQLite connection of this process on it (a reply's
/// write transaction on another thread among them).
pub fn check_db_files(path: &Path) -> std::io::Result<()> {
    let home = path.parent().unwrap_or(Path::new("."));
    crate::model::core::input::check_beneath(home, path)?;
    for ext in ["-wal", "-shm"] {
        let mut p = path.as_os_str().to_os_string();
        p.push(ext);
        match crate::model::core::input::check_beneath(home, Path::new(&p)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

fn read_db(path: &Path, ids: Option<&[&str]>) -> Result<Tables, String> {
    match check_db_files(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("{} does not exist", path.display()));
        }
        Err(e) => {
            return Err(format!(
                "{}: {}",
                path.display(),
                crate::model::core::input::io_message(&e)
            ));
        }
        Ok(()) => {}
    }
    let uri = format!("file:{}?mode=ro", uri_escape(&path.to_string_lossy()));
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let err = |e: rusqlite::Error| format!("{}: {e}", path.display());
    let conn = Connection::open_with_flags(uri, flags).map_err(err)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
    let cols = columns(&conn, "threads").map_err(err)?;
    if !cols.iter().any(|c| c == "id") || !cols.iter().any(|c| c == "rollout_path") {
        return Err(format!(
            "{}: table threads has no id/rollout_path (a Codex version this reader does not know)",
            path.display()
        ));
    }
    let pick = |c: &str| {
        if cols.iter().any(|x| x == c) {
            c.to_string()
        } else {
            format!("NULL AS {c}")
        }
    };
    let sql = format!(
        "SELECT id, rollout_path, {}, {}, {}, {}, {} FROM threads{}",
        pick("title"),
        pick("name"),
        pick("source"),
        pick("cwd"),
        pick("preview"),
        if ids.is_some() { " WHERE id = ?1" } else { "" }
    );
    let mut stmt = conn.prepare(&sql).map_err(err)?;
    let row = |r: &rusqlite::Row<'_>| {
        Ok(ThreadRow {
            id: r.get(0)?,
            rollout_path: r.get(1)?,
            title: r.get(2)?,
            name: r.get(3)?,
            source: r.get(4)?,
            cwd: r.get(5)?,
            preview: r.get(6)?,
        })
    };
    let mut threads = HashMap::new();
    let mut keep = |r: rusqlite::Result<ThreadRow>| -> Result<(), String> {
        let r = r.map_err(err)?;
        threads.insert(r.id.clone(), r);
        Ok(())
    };
    match ids {
        None => {
            for r in stmt.query_map([], row).map_err(err)? {
                keep(r)?;
            }
        }
        Some(ids) => {
            for id in ids {
                for r in stmt.query_map([id], row).map_err(err)? {
                    keep(r)?;
                }
            }
        }
    }
    let mut edges = Vec::new();
    if !columns(&conn, "thread_spawn_edges")
        .map_err(err)?
        .is_empty()
    {
        let sql = format!(
            "SELECT parent_thread_id, child_thread_id, status FROM thread_spawn_edges{}",
            if ids.is_some() {
                " WHERE parent_thread_id = ?1 OR child_thread_id = ?1"
            } else {
                ""
            }
        );
        let mut stmt = conn.prepare(&sql).map_err(err)?;
        let edge = |r: &rusqlite::Row<'_>| {
            Ok(SpawnEdge {
                parent_thread_id: r.get(0)?,
                child_thread_id: r.get(1)?,
                status: r.get(2)?,
            })
        };
        let mut seen = std::collections::HashSet::new();
        let mut keep = |e: rusqlite::Result<SpawnEdge>| -> Result<(), String> {
            let e = e.map_err(err)?;
            if seen.insert((
                e.parent_thread_id.clone(),
                e.child_thread_id.clone(),
                e.status.clone(),
            )) {
                edges.push(e);
            }
            Ok(())
        };
        match ids {
            None => {
                for e in stmt.query_map([], edge).map_err(err)? {
                    keep(e)?;
                }
            }
            Some(ids) => {
                for id in ids {
                    for e in stmt.query_map([id], edge).map_err(err)? {
                        keep(e)?;
                    }
                }
            }
        }
    }
    Ok((threads, edges))
}

fn columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
    let names = stmt.query_map([table], |r| r.get::<_, String>(0))?;
    names.collect()
}

/// Escapes what a SQLite URI path cannot hold as is.
fn uri_escape(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        match c {
            '?' | '#' | '%' => out.push_str(&format!("%{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// `session_index.jsonl`: `{"id","thread_name","updated_at"}` per line; the last line of
/// an id wins (§7). Broken lines are skipped.
pub fn read_session_index(path: &Path) -> HashMap<String, String> {
    read_session_index_of(path, None)
}

/// [`read_session_index`], keeping the names of `ids` only (all without). Read a
/// bounded buffer at a time, as any file: the index only grows.
fn read_session_index_of(path: &Path, ids: Option<&[&str]>) -> HashMap<String, String> {
    let mut names = HashMap::new();
    let home = path.parent().unwrap_or(Path::new("."));
    let Ok(f) = crate::model::core::input::open_beneath(home, path) else {
        return names;
    };
    let max = crate::model::core::input::max_line();
    let mut take = |bytes: &[u8]| {
        // Each line without a `\r` before its `\n`, as `str::lines` cuts it.
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
            return;
        };
        if let (Some(id), Some(name)) = (v["id"].as_str(), v["thread_name"].as_str())
            && ids.is_none_or(|ids| ids.contains(&id))
        {
            names.insert(id.to_string(), name.to_string());
        }
    };
    let read = crate::model::core::input::read_lines::<std::io::Error>(&f, 0, None, max, |l| {
        if let crate::model::core::input::Line::Whole { bytes, .. } = l {
            take(bytes);
        }
        Ok(())
    });
    if let Ok(tail) = read
        && let Some(b) = tail.bytes
    {
        take(&b);
    }
    names
}
