//! Replies Codex resumes: a user message written into a Codex thread at any point, so
//! that `codex resume` (the picker, `exec resume <id>`, `--last`) continues from it
//! (CODEX-FORMAT.md §9; measured with the oracle's `accepts.sh`, outputs in
//! `tests/fixtures/codex/accepts/`).
//!
//! A point is one line of one page file (`<pageId>:<ordinal>`). Two cases:
//!
//! * **At the leaf** — the point is on the thread's current page (§4) and no
//!   `response_item` or `compacted` line follows it there (bookkeeping lines after it
//!   change nothing Codex sends): the turn's lines are appended to that page, ordinals
//!   continuing from the last line's (§3.3). An unterminated last line gets a `\n`
//!   first, as Codex does (§10). Then the row's `updated_at`/`recency_at` are set to
//!   now, as Codex does when it writes a turn, so the picker and `resume --last` see the
//!   thread as the latest; that is not needed to resume, so if the database is busy the
//!   reply stands and `Written` says the times were skipped.
//! * **At an earlier point** (or at the end of a page that is not current) — a new page
//!   of the same thread, `rollout-<now>-<threadId>_<newPageId>.jsonl`, shaped like a TUI
//!   rewind: `session_meta` copied from the thread's first page with `history_base`
//!   ending right after the point's line, then the turn; and `threads.rollout_path`
//!   names the new page.
//!
//! **Why a rewind page and not a fork.** A rewind page keeps the reply in the same
//! thread, as the TUI's own rewind does: one entry in the picker, one session directory
//! in the mount, the reply a branch of that session's tree beside the old one (the old
//! page keeps every byte, so nothing is lost and the old branch stays a path). A fork
//! is a new thread with its own row, listed separately in the picker and in the mount;
//! that is what `sessionfs fork` is for, asked for explicitly, not what answering an
//! earlier message in a conversation means. Both are taken by Codex (§9.2); the rewind
//! also touches the database less (one column of an existing row instead of a new row
//! copied from the parent's).
//!
//! **Why the whole turn and not the minimal line.** Codex takes a single
//! `response_item` line (§9.1), and `exec resume` sends the same request either way
//! (both measured, `accepts/leaf-exec*.json`). But the TUI does not: resumed with
//! `codex resume`, it did **not show** a reply written as the single line, and showed
//! the whole turn (`scripts/codex-tui-transcript`: `leaf-minimal NOT shown`,
//! `leaf-turn shown`, `earlier-turn shown`) — its transcript is rebuilt from the
//! `event_msg` lines, not from `response_item`s. So we write what Codex itself writes
//! for a user turn (`Shape::Turn`): the copied `thread_settings_applied` and
//! `turn_context` keep the settings the next resume compares against (so it writes no
//! spurious update), `metadata.user_input_order`/`history_sequence` keep Codex's
//! counters in sequence, and `item_completed UserMessage` is what the TUI shows. The
//! turn is then closed with a `task_complete` without an answer: left open (as Codex
//! leaves it until the model answers), the TUI showed "Conversation interrupted" under
//! the message; closed, it shows the message and waits for the user. `Shape::Minimal`
//! stays available.
//!
//! **Order, so that Codex can always resume.** A new page is written whole under a
//! new name (`O_EXCL`), fsynced, its folder fsynced, and only then does the database
//! row point at it. If the database update fails (busy past the timeout, read-only,
//! no such column in a future schema), the new file is removed and the reply fails
//! with the errno and a message naming the database and the reason. A crash between
//! the two steps leaves a complete page no row names, which Codex ignores (the row
//! still names the old page) — never a row naming a missing or partial file. Existing
//! bytes are never modified: appends are one `O_APPEND` write of complete lines.

mod db;
mod pages;
mod turn;

pub use db::{STATE_DB, Updated};
pub use turn::Shape;

use pages::{Page, PageName};
use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where a reply goes: after the line with `ordinal` of the page file `page`, or at
/// the page's end when `ordinal` is `None`, in thread `thread` (`None`: the page's
/// own thread).
///
/// A fork's history starts with its parent's page (`history_base`), so an entry a
/// fork inherited lies on a page of another thread. A reply there continues the
/// fork, not the parent: `thread` names the fork, and the reply is a new page of the
/// fork based on the parent's page, as a TUI rewind inside the fork writes (the
/// parent's files and row are not touched).
#[derive(Debug, Clone)]
pub struct Point {
    pub page: PathBuf,
    pub ordinal: Option<u64>,
    pub thread: Option<String>,
}

/// How to write.
#[derive(Debug, Clone)]
pub struct Options {
    pub shape: Shape,
    /// How long to wait for Codex's lock on `state_5.sqlite`.
    pub busy_timeout: Duration,
    /// The clock (milliseconds since the epoch) for timestamps, ids and file names.
    pub now_ms: i64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            shape: Shape::Turn,
            busy_timeout: Duration::from_secs(5),
            now_ms: crate::model::core::time::now_ms(),
        }
    }
}

/// What was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WrittenKind {
    /// Lines appended to the current page; `db` says whether the row's times followed.
    Appended { db: Updated },
    /// A new page of the thread (a rewind's shape), made current.
    NewPage { db: Updated },
}

#[derive(Debug, Clone)]
pub struct Written {
    pub kind: WrittenKind,
    /// The file written to (the current page, or the new page).
    pub path: PathBuf,
    /// Where the new bytes start in it (0 for a new page).
    pub offset: u64,
    /// The new bytes.
    pub bytes: Vec<u8>,
    pub thread_id: String,
    /// The user message's `payload.id` and its line's ordinal.
    pub message_id: String,
    pub ordinal: u64,
}

/// A reply that could not be written. Nothing was left behind.
#[derive(Debug)]
pub struct ReplyError {
    errno: i32,
    message: String,
}

impl ReplyError {
    fn new(errno: i32, message: impl Into<String>) -> ReplyError {
        ReplyError {
            errno,
            message: message.into(),
        }
    }

    fn io(what: &str, path: &Path, e: io::Error) -> ReplyError {
        let errno = e.raw_os_error().unwrap_or(match e.kind() {
            io::ErrorKind::NotFound => libc::ENOENT,
            io::ErrorKind::InvalidInput => libc::EINVAL,
            _ => libc::EIO,
        });
        if e.raw_os_error().is_some() && e.get_ref().is_none() {
            ReplyError::new(errno, format!("{what} {}: {e}", path.display()))
        } else {
            ReplyError::new(errno, e.to_string())
        }
    }

    /// The errno for the write(2) that asked for the reply.
    pub fn errno(&self) -> i32 {
        self.errno
    }
}

impl std::fmt::Display for ReplyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ReplyError {}

/// Writes `text` as a user message at `at`, as described in the module doc.
pub fn reply(at: &Point, text: &str, opts: &Options) -> Result<Written, ReplyError> {
    let page_path =
        fs::canonicalize(&at.page).map_err(|e| ReplyError::io("cannot open", &at.page, e))?;
    let (sessions, home) = pages::roots_of(&page_path).ok_or_else(|| {
        ReplyError::new(
            libc::EINVAL,
            format!(
                "{} is not inside a Codex home (expected <CODEX_HOME>/sessions/YYYY/MM/DD/rollout-….jsonl)",
                page_path.display()
            ),
        )
    })?;
    let page = Page::read(&page_path).map_err(|e| {
        if e.raw_os_error() == Some(libc::EOPNOTSUPP) {
            ReplyError::new(
                libc::EOPNOTSUPP,
                format!(
                    "{} is compressed (.jsonl.zst): the reply writer reads plain pages only \
                     (codex makes a compressed current page plain again when it resumes the thread)",
                    page_path.display()
                ),
            )
        } else {
            ReplyError::io("cannot read", &page_path, e)
        }
    })?;
    let idx = match at.ordinal {
        None => page.lines.len().checked_sub(1),
        Some(o) => Some(page.index_of_ordinal(o).ok_or_else(|| {
            ReplyError::new(
                libc::ENOENT,
                format!("no line with ordinal {o} in {}", page_path.display()),
            )
        })?),
    };
    let Some(idx) = idx else {
        return Err(ReplyError::new(
            libc::EINVAL,
            format!(
                "{} has no complete line to reply after",
                page_path.display()
            ),
        ));
    };
    let all =
        pages::all_pages(&sessions).map_err(|e| ReplyError::io("cannot list", &sessions, e))?;
    let by_id: HashMap<String, PathBuf> = all
        .iter()
        .map(|(p, n)| (n.page_id.clone(), p.clone()))
        .collect();
    let thread = at
        .thread
        .clone()
        .unwrap_or_else(|| page.name.thread_id.clone());
    if thread != page.name.thread_id {
        // An entry the fork `thread` inherited: a new page of the fork, never a line
        // in the parent's page. The fork reads the parent's page only up to its
        // base's offset: the cut stays within it.
        let limit = pages::read_limit(&thread, &page.name.page_id, &all)
            .map_err(|e| ReplyError::io("cannot read the history of", &page.path, e))?
            .filter(|&l| l >= page.lines[idx].end)
            .ok_or_else(|| {
                ReplyError::new(
                    libc::EINVAL,
                    format!(
                        "thread {thread} does not continue from line {} of {}: reply in the \
                         thread that holds it",
                        idx + 1,
                        page_path.display()
                    ),
                )
            })?;
        return new_page(
            &home, &sessions, &thread, page, idx, limit, &by_id, text, opts,
        );
    }
    let at_end = !page.lines[idx + 1..].iter().any(|l| l.is_node());
    if at_end && is_current(&home, &page, &all, opts)? {
        append_at_leaf(&home, page, &by_id, text, opts)
    } else {
        let limit = page.len;
        new_page(
            &home, &sessions, &thread, page, idx, limit, &by_id, text, opts,
        )
    }
}

/// Where a new page's history ends when it continues after line `idx` of `page`:
/// the end of that line, carried over the bookkeeping lines that follow it up to the
/// next entry or the next turn's `task_started` (never past byte `limit`), as
/// `(end_byte_offset, end_ordinal_exclusive)`.
///
/// Why: a reply after the last item of a turn is what Codex's own rewind to the next
/// prompt makes, and that rewind keeps the turn's closing lines (`token_usage_record`,
/// `token_count`, `task_complete`: CODEX-FORMAT.md §3.2, the base ends at the next
/// turn's `task_started`). Cut before them, the new branch would lose the record of the
/// turn's last request: Codex's `thread_token_usage` there would no longer count it,
/// while the branch's `cost` does. Inside a turn the same holds for the record of the
/// request whose output the point is. A line without an ordinal ends the carry (its
/// place in Codex's count is unknown).
fn cut_after(page: &Page, idx: usize, limit: u64) -> Option<(u64, u64)> {
    let point = &page.lines[idx];
    let mut end = (point.end, point.ordinal()? + 1);
    for l in &page.lines[idx + 1..] {
        if l.end > limit || l.is_node() || l.is_turn_start() {
            break;
        }
        let Some(o) = l.ordinal() else { break };
        end = (l.end, o + 1);
    }
    Some(end)
}

/// Whether `page` is its thread's current page (§4): `threads.rollout_path`, else the
/// newest page by file name.
fn is_current(
    home: &Path,
    page: &Page,
    all: &[(PathBuf, PageName)],
    opts: &Options,
) -> Result<bool, ReplyError> {
    let db = home.join(STATE_DB);
    let cur = db::current(home, &page.name.thread_id, opts.busy_timeout).map_err(|e| {
        ReplyError::new(
            e.errno,
            format!(
                "cannot read {}: {} (is Codex holding it? try again)",
                db.display(),
                e.reason
            ),
        )
    })?;
    if let db::Current::Path(p) = cur {
        let named = p.file_name().and_then(|n| n.to_str()).map(plain_name);
        let ours = page
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .map(plain_name);
        return Ok(named.is_some() && named == ours);
    }
    let newest = all
        .iter()
        .filter(|(_, n)| n.thread_id == page.name.thread_id)
        .max_by(|a, b| a.1.order_key().cmp(&b.1.order_key()));
    Ok(newest.is_some_and(|(_, n)| n.page_id == page.name.page_id))
}

fn plain_name(n: &str) -> &str {
    n.strip_suffix(".zst").unwrap_or(n)
}

fn append_at_leaf(
    home: &Path,
    page: Page,
    by_id: &HashMap<String, PathBuf>,
    text: &str,
    opts: &Options,
) -> Result<Written, ReplyError> {
    let path = page.path.clone();
    let mut f = OpenOptions::new()
        .read(true)
        .append(true)
        .open(&path)
        .map_err(|e| ReplyError::io("cannot open", &path, e))?;
    // The page may have grown since it was read (Codex running): read it again from
    // the open file until the size holds still, so the ordinal follows the real last
    // line and a torn tail is seen.
    let mut page = page;
    for _ in 0..3 {
        let len = f
            .seek(SeekFrom::End(0))
            .map_err(|e| ReplyError::io("cannot read", &path, e))?;
        if len == page.len {
            break;
        }
        let mut bytes = Vec::new();
        f.seek(SeekFrom::Start(0))
            .and_then(|_| f.read_to_end(&mut bytes))
            .map_err(|e| ReplyError::io("cannot read", &path, e))?;
        page = Page::from_bytes(path.clone(), page.name.clone(), &bytes);
    }
    let ordinal = page.next_ordinal().ok_or_else(|| {
        ReplyError::new(
            libc::EINVAL,
            format!(
                "{} has no line with an ordinal; Codex cannot resume it either",
                path.display()
            ),
        )
    })?;
    let history = pages::history(&page, page.len, by_id)
        .map_err(|e| ReplyError::io("cannot read the history of", &path, e))?;
    let before = turn::Before::of(&history);
    let (lines, message_id) = turn::user_turn(
        &before,
        &page.name.thread_id,
        text,
        ordinal,
        opts.now_ms,
        opts.shape,
    );
    let msg_ordinal = message_ordinal(&lines);
    let mut bytes = Vec::new();
    if page.torn() {
        bytes.push(b'\n');
    }
    bytes.extend(turn::to_bytes(&lines));
    // One write of complete lines at the end (O_APPEND): existing bytes are never
    // touched, and a concurrent appender cannot interleave inside our lines.
    f.write_all(&bytes)
        .and_then(|_| f.sync_data())
        .map_err(|e| ReplyError::io("cannot append to", &path, e))?;
    Ok(Written {
        kind: WrittenKind::Appended {
            db: db::touch(home, &page.name.thread_id, opts.now_ms, opts.busy_timeout),
        },
        offset: page.len,
        path,
        bytes,
        thread_id: page.name.thread_id,
        message_id,
        ordinal: msg_ordinal,
    })
}

fn message_ordinal(lines: &[serde_json::Value]) -> u64 {
    lines
        .iter()
        .find(|l| l["type"] == "response_item")
        .and_then(|l| l["ordinal"].as_u64())
        .unwrap_or(0)
}

/// `fs::create_dir_all(dir)`, returning the folders it made, deepest last.
fn create_folders(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let missing: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|a| !a.exists())
        .map(Path::to_path_buf)
        .collect();
    fs::create_dir_all(dir)?;
    Ok(missing.into_iter().rev().collect())
}

/// Removes the folders [`create_folders`] made, deepest first, each only if it is
/// still empty (another writer may have put a page there meanwhile).
fn remove_folders(made: &[PathBuf]) {
    for d in made.iter().rev() {
        if fs::remove_dir(d).is_err() {
            break;
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn new_page(
    home: &Path,
    sessions: &Path,
    thread_id: &str,
    page: Page,
    idx: usize,
    limit: u64,
    by_id: &HashMap<String, PathBuf>,
    text: &str,
    opts: &Options,
) -> Result<Written, ReplyError> {
    let point = &page.lines[idx];
    let (end_off, end_ord) = cut_after(&page, idx, limit).ok_or_else(|| {
        ReplyError::new(
            libc::EINVAL,
            format!(
                "the line at byte {} of {} has no ordinal to continue from",
                point.start,
                page.path.display()
            ),
        )
    })?;
    let thread_id = thread_id.to_string();
    // The new page's session_meta is the first page's (§9.2). Every page of a thread
    // carries the same one apart from `timestamp` and `history_base`, so when the first
    // page cannot be read here (compressed, §8) another plain page of the thread stands
    // in for it: the point's own page when it is the thread's.
    let plain = |p: &PathBuf| !p.to_string_lossy().ends_with(".zst");
    let stand_in = by_id
        .get(thread_id.as_str())
        .filter(|p| plain(p))
        .or_else(|| {
            by_id.values().filter(|p| plain(p)).find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .and_then(PageName::parse)
                    .is_some_and(|n| n.thread_id == thread_id)
            })
        });
    let first = match stand_in {
        Some(p) if *p != page.path => {
            Some(Page::read(p).map_err(|e| ReplyError::io("cannot read", p, e))?)
        }
        _ => None,
    };
    let own_page = (page.name.thread_id == thread_id).then_some(&page);
    let first_meta = first
        .as_ref()
        .or(own_page)
        .and_then(|f| f.meta())
        .ok_or_else(|| {
            ReplyError::new(
                libc::EINVAL,
                format!(
                    "no readable page of thread {thread_id} starts with a session_meta line \
                     (near {})",
                    page.path.display()
                ),
            )
        })?
        .clone();
    let history = pages::history(&page, end_off, by_id)
        .map_err(|e| ReplyError::io("cannot read the history of", &page.path, e))?;
    let before = turn::Before::of(&history);
    let now = opts.now_ms;
    let meta = turn::page_meta(&first_meta, &page.name.page_id, end_ord, end_off, now);
    let mut meta_line = serde_json::Map::new();
    meta_line.insert(
        "timestamp".into(),
        serde_json::Value::String(crate::model::core::time::format_iso_ms(now)),
    );
    meta_line.insert("ordinal".into(), end_ord.into());
    meta_line.insert("type".into(), "session_meta".into());
    meta_line.insert("payload".into(), meta);
    let (turn_lines, message_id) =
        turn::user_turn(&before, &thread_id, text, end_ord + 1, now, opts.shape);
    let mut lines = vec![serde_json::Value::Object(meta_line)];
    lines.extend(turn_lines);
    let bytes = turn::to_bytes(&lines);

    let iso = crate::model::core::time::format_iso_ms(now);
    let day = sessions.join(&iso[0..4]).join(&iso[5..7]).join(&iso[8..10]);
    // The day's folders made for this page go again with it when the reply fails: a
    // failed reply leaves nothing behind, not even an empty day folder.
    let made = create_folders(&day).map_err(|e| ReplyError::io("cannot create", &day, e))?;
    let stamp = iso[..19].replace(':', "-");
    let new_id = turn::uuid7(now);
    let path = day.join(format!("rollout-{stamp}-{thread_id}_{new_id}.jsonl"));
    write_new_file(&path, &bytes).map_err(|e| {
        let _ = fs::remove_file(&path);
        remove_folders(&made);
        ReplyError::io("cannot write", &path, e)
    })?;
    let db_path = home.join(STATE_DB);
    let updated = match db::set_current(home, &thread_id, &path, now, opts.busy_timeout) {
        Ok(u) => u,
        Err(e) => {
            let removed = fs::remove_file(&path).and_then(|_| sync_dir(&day));
            remove_folders(&made);
            let mut msg = format!(
                "cannot make the new page current in {}: {}; the reply was not written",
                db_path.display(),
                e.reason
            );
            if e.errno == libc::EBUSY {
                msg.push_str(" (Codex held the database longer than the timeout: try again)");
            }
            if let Err(r) = removed {
                msg.push_str(&format!(
                    "; removing {} failed too ({r}): delete it by hand",
                    path.display()
                ));
            }
            return Err(ReplyError::new(e.errno, msg));
        }
    };
    if updated == Updated::NoRow || updated == Updated::NoDatabase {
        // Codex then takes the newest page by name: make sure that is ours.
        let newer = pages::all_pages(sessions)
            .map_err(|e| ReplyError::io("cannot list", sessions, e))?
            .into_iter()
            .filter(|(_, n)| n.thread_id == thread_id)
            .max_by(|a, b| a.1.order_key().cmp(&b.1.order_key()));
        if newer.is_some_and(|(p, _)| p != path) {
            let _ = fs::remove_file(&path);
            remove_folders(&made);
            return Err(ReplyError::new(
                libc::EEXIST,
                format!(
                    "thread {thread_id} has no row in {} and a page newer than now (clock skew?): \
                     Codex would not resume the new page; the reply was not written",
                    db_path.display()
                ),
            ));
        }
    }
    Ok(Written {
        kind: WrittenKind::NewPage { db: updated },
        ordinal: message_ordinal(&lines),
        path,
        offset: 0,
        bytes,
        thread_id,
        message_id,
    })
}

fn write_new_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = OpenOptions::new().write(true).create_new(true).open(path)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    sync_dir(path.parent().unwrap_or(Path::new(".")))
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests;
