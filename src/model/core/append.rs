//! Appending entries to a session file, for every agent.
//!
//! The agent builds the line ([`Agent::build_line`](super::agent::Agent::build_line);
//! Pi's, for instance, with Pi's key order and `JSON.stringify`'s serialization), and
//! it is written with a single `write(2)` on an `O_APPEND` descriptor, so that it cannot
//! interleave with lines Pi appends at the same time; then `fdatasync`. Before that:
//!
//! * the index catches up with what other writers appended ([`Session::refresh`]), so
//!   ids stay unique and `name`/labels hang under the real last entry;
//! * if the file does not end in `\n` (a torn write), the line is preceded by one, so
//!   the new entry does not glue onto the fragment. A line another process is still
//!   writing can look torn for a moment (a large write becomes visible a page at a
//!   time), so the tail must stay unchanged for 100 ms before it is believed torn;
//!   only a writer stalled mid-`write` for longer than that makes the newline land
//!   after a complete line, as a blank line (which Pi skips), never as a glued one;
//! * space is reserved with `fallocate` first where the filesystem supports it, so a
//!   full disk fails before any byte is written; should a write still come up short,
//!   the fragment is cut off again (or, failing that, terminated) so that no partial
//!   line remains for the next writer to glue onto.
//!
//! Pi's v1 files are refused: their ids exist only in memory (see `pi::migrate`).

pub use crate::model::core::id::random_u32;
pub use crate::model::core::reply::{
    AppendError, NewEntry, Refused, js_trim, refuse_reply, refuse_written, sanitize_name,
};
use crate::model::core::session::{Change, Session};
use crate::model::core::time::now_ms;
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, Instant};

impl Session {
    /// Builds the line for `what` (with its `\n`) and returns it with the new id.
    /// Does not catch up with the file; [`Session::append`] does.
    pub fn build_line(
        &self,
        what: &NewEntry<'_>,
        now: i64,
    ) -> Result<(String, Vec<u8>), AppendError> {
        self.build_after(what, now, &[])
    }

    /// As [`build_line`](Self::build_line), for a line that follows the lines of
    /// `batch` (their new ids, in order) in the same write: its id differs from
    /// theirs, and a `name` or label entry hangs under the last of them, since that
    /// will be the last entry of the file when it is read.
    fn build_after(
        &self,
        what: &NewEntry<'_>,
        now: i64,
        batch: &[String],
    ) -> Result<(String, Vec<u8>), AppendError> {
        self.agent().build_line(self, what, now, batch)
    }

    /// Catches up with the file, appends `what`, syncs, and indexes it.
    /// Returns the new entry's id and everything that changed since the last refresh.
    pub fn append(&mut self, what: &NewEntry<'_>) -> Result<(String, Change), AppendError> {
        let (mut ids, change) = self.append_all(std::slice::from_ref(what))?;
        Ok((ids.pop().unwrap_or_default(), change))
    }

    /// Appends several entries with one `write(2)`, so that they land together or
    /// not at all (a relabelling that moves a label from one entry to another is two
    /// label lines, and must never stop halfway). Each `name` or label entry hangs
    /// under the one before it, as it would if they were appended one by one.
    /// Returns the new ids in order.
    pub fn append_all(
        &mut self,
        whats: &[NewEntry<'_>],
    ) -> Result<(Vec<String>, Change), AppendError> {
        let mut change = self.refresh()?;
        // An agent that writes its replies itself (Codex): written, then indexed.
        if let [NewEntry::Reply { parent, text }] = whats
            && let Some(written) = self.write_reply(*parent, text)
        {
            let id = written?;
            let more = self.refresh()?;
            merge(&mut change, more);
            return Ok((vec![id], change));
        }
        let (ids, lines) = self.build_all(whats, now_ms())?;
        if lines.is_empty() {
            return Ok((ids, change));
        }
        write_line(self.path(), &lines)?;
        let more = self.refresh()?;
        merge(&mut change, more);
        Ok((ids, change))
    }

    /// The lines [`append_all`](Self::append_all) writes for `whats` (each `\n`-ended,
    /// one after the other) and their new ids, without catching up with the file or
    /// writing anything: for a caller that writes them itself with [`write_line`].
    pub fn build_all(
        &self,
        whats: &[NewEntry<'_>],
        now: i64,
    ) -> Result<(Vec<String>, Vec<u8>), AppendError> {
        let mut ids = Vec::with_capacity(whats.len());
        let mut lines = Vec::new();
        for what in whats {
            let (id, line) = self.build_after(what, now, &ids)?;
            ids.push(id);
            lines.extend_from_slice(&line);
        }
        Ok((ids, lines))
    }
}

/// Folds a later change into an earlier one.
pub fn merge(a: &mut Change, b: Change) {
    if b.reloaded {
        *a = b;
        return;
    }
    if a.new_entries.is_empty() {
        a.new_entries = b.new_entries;
    } else if !b.new_entries.is_empty() {
        a.new_entries.end = b.new_entries.end;
    }
    a.parents.extend(b.parents);
    a.parents.sort_unstable();
    a.parents.dedup();
    a.rebuilt |= b.rebuilt;
    a.labels_changed |= b.labels_changed;
    a.name_changed |= b.name_changed;
    a.rewritten.extend(b.rewritten);
    a.rewritten.sort_unstable();
    a.rewritten.dedup();
}

/// Appends complete lines (ending in `\n`) to the file at `path` with one `write(2)`,
/// durably.
/// See the module docs for what happens on a torn tail or a full disk.
pub fn write_line(path: &Path, line: &[u8]) -> io::Result<()> {
    debug_assert!(line.ends_with(b"\n"));
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: plain syscalls on a descriptor we own and close below.
    unsafe {
        let fd = libc::open(
            c.as_ptr(),
            // Read access too: the last byte is read to see whether a newline is missing.
            libc::O_RDWR | libc::O_APPEND | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let r = write_line_fd(fd, line);
        libc::close(fd);
        r
    }
}

/// How long the end of the file must stay put, without a final newline, before it is
/// taken for a torn line rather than a line another process is still writing.
const TAIL_SETTLE: Duration = Duration::from_millis(100);
/// How long to wait at most for a file that keeps growing without ever ending in `\n`.
const TAIL_PATIENCE: Duration = Duration::from_secs(2);

#[cfg(test)]
thread_local! {
    /// [`TAIL_SETTLE`] and [`TAIL_PATIENCE`] as a test of this thread sets them: a test
    /// of the waiting itself must not depend on how soon a loaded machine schedules the
    /// other writer.
    static TAIL_WAITS: std::cell::Cell<(Duration, Duration)> =
        const { std::cell::Cell::new((TAIL_SETTLE, TAIL_PATIENCE)) };
}

/// How long the tail must settle, and how long growth is waited for at most.
fn tail_waits() -> (Duration, Duration) {
    #[cfg(test)]
    return TAIL_WAITS.with(|w| w.get());
    #[cfg(not(test))]
    (TAIL_SETTLE, TAIL_PATIENCE)
}

/// The file's size once its end has settled, and whether it then ends in a newline (or
/// is empty), so that a line appended now starts a line of its own.
///
/// A writer's `write(2)` becomes visible to readers a page at a time: while Pi appends
/// a 300 KB line, the file can be seen ending mid-line for a moment, although the line
/// will be whole before our `O_APPEND` write lands. Taking that for a torn tail would
/// put a blank line into the file. So a missing newline is only believed once the size
/// has stayed the same for [`TAIL_SETTLE`] (or after [`TAIL_PATIENCE`] of growth).
/// Errs when the last byte cannot be read: not knowing how the file ends, writing could
/// glue onto a fragment.
unsafe fn settled_tail(fd: i32) -> io::Result<(u64, bool)> {
    let (settle, patience) = tail_waits();
    let start = Instant::now();
    let mut stable_since = start;
    let mut size = None;
    loop {
        // SAFETY: `fd` is open; `st` is plain data filled by the kernel.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let now_size = st.st_size as u64;
        if size != Some(now_size) {
            size = Some(now_size);
            stable_since = Instant::now();
        }
        if now_size == 0 {
            return Ok((0, true));
        }
        let mut last = 0u8;
        // SAFETY: `fd` is open; the buffer is one valid byte.
        if unsafe { libc::pread(fd, (&mut last as *mut u8).cast(), 1, (now_size - 1) as i64) } != 1
        {
            return Err(io::Error::last_os_error());
        }
        if last == b'\n' {
            return Ok((now_size, true));
        }
        let now = Instant::now();
        if now.duration_since(stable_since) >= settle || now.duration_since(start) >= patience {
            return Ok((now_size, false));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

unsafe fn write_line_fd(fd: i32, line: &[u8]) -> io::Result<()> {
    // SAFETY (whole fn): `fd` is an open descriptor; buffers are valid for their lengths.
    unsafe {
        let (size, ends_line) = settled_tail(fd)?;
        let mut buf: Vec<u8> = Vec::with_capacity(line.len() + 1);
        if !ends_line {
            buf.push(b'\n');
        }
        buf.extend_from_slice(line);
        // Reserve the blocks first: a full disk then fails before anything is written.
        if libc::fallocate(fd, libc::FALLOC_FL_KEEP_SIZE, size as i64, buf.len() as i64) != 0 {
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::ENOSPC) | Some(libc::EDQUOT) | Some(libc::EFBIG) => return Err(e),
                _ => {} // not supported here: go ahead and write
            }
        }
        let n = loop {
            let n = libc::write(fd, buf.as_ptr().cast(), buf.len());
            if n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            break n;
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if (n as usize) < buf.len() {
            let err = io::Error::from_raw_os_error(libc::ENOSPC);
            // Cut our fragment off if nobody wrote after it; otherwise end it with a
            // newline so that it stays a malformed line of its own.
            let end = libc::lseek(fd, 0, libc::SEEK_CUR);
            let mut st2: libc::stat = std::mem::zeroed();
            if end >= 0
                && libc::fstat(fd, &mut st2) == 0
                && st2.st_size == end
                && libc::ftruncate(fd, end - n as i64) == 0
            {
                libc::fdatasync(fd);
                return Err(err);
            }
            let nl = b"\n";
            libc::write(fd, nl.as_ptr().cast(), 1);
            libc::fdatasync(fd);
            return Err(err);
        }
        if libc::fdatasync(fd) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn a_reply_is_text_or_nothing() {
        assert_eq!(refuse_reply(""), None);
        assert_eq!(refuse_reply("hi\n"), None);
        assert_eq!(refuse_reply(" \n\t\u{a0}\u{feff}"), Some(Refused::Blank));
        assert_eq!(refuse_reply("\n"), Some(Refused::Blank));
        assert_eq!(refuse_written(b"a\0b"), Some(Refused::Nul));
        assert_eq!(refuse_written("é\t\x1b[0m".as_bytes()), None);
    }

    #[test]
    fn a_line_never_glues_onto_a_torn_tail() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.jsonl");
        std::fs::write(&p, "{\"a\":1}\n{\"torn\":").unwrap();
        write_line(&p, b"{\"b\":2}\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "{\"a\":1}\n{\"torn\":\n{\"b\":2}\n"
        );
        write_line(&p, b"{\"c\":3}\n").unwrap();
        assert!(
            std::fs::read_to_string(&p)
                .unwrap()
                .ends_with("{\"b\":2}\n{\"c\":3}\n")
        );
        let e = std::fs::File::create(d.path().join("e.jsonl")).unwrap();
        drop(e);
        write_line(&d.path().join("e.jsonl"), b"x\n").unwrap();
        assert_eq!(std::fs::read(d.path().join("e.jsonl")).unwrap(), b"x\n");
    }

    #[test]
    fn a_line_still_being_written_is_waited_for_not_cut() {
        // Another process's line is visible in part (as a large write is, a page at a
        // time) and completed 30 ms later: ours must follow it with no blank line. The
        // wait is made long here, so that the other writer's 30 ms fall within it however
        // late a loaded machine runs that thread (the test is of the waiting, not its length).
        TAIL_WAITS.with(|w| w.set((Duration::from_secs(60), Duration::from_secs(60))));
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.jsonl");
        std::fs::write(&p, "{\"a\":1}\n{\"pi\":").unwrap();
        let p2 = p.clone();
        let finisher = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            let mut f = std::fs::OpenOptions::new().append(true).open(&p2).unwrap();
            std::io::Write::write_all(&mut f, b"2}\n").unwrap();
        });
        write_line(&p, b"{\"b\":3}\n").unwrap();
        finisher.join().unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "{\"a\":1}\n{\"pi\":2}\n{\"b\":3}\n"
        );
    }

    #[test]
    fn entries_appended_together_land_in_one_write_chained_under_each_other() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.jsonl");
        std::fs::write(
            &p,
            concat!(
                r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-05T09:00:00.000Z","cwd":"/"}"#,
                "\n",
                r#"{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-05T09:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#,
                "\n",
            ),
        )
        .unwrap();
        let mut s = Session::open(&p).unwrap();
        let (ids, change) = s
            .append_all(&[
                NewEntry::Label {
                    target: "a",
                    label: Some("x"),
                },
                NewEntry::Name("n"),
            ])
            .unwrap();
        assert_eq!(ids.len(), 2);
        assert_ne!(ids[0], ids[1]);
        assert!(change.labels_changed && change.name_changed);
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .skip(2)
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0]["parentId"], "a");
        assert_eq!(lines[0]["id"], ids[0].as_str());
        assert_eq!(lines[1]["parentId"], ids[0].as_str());
        assert_eq!(s.name(), Some("n"));
        assert_eq!(s.id_string(s.leaf().unwrap()), ids[1]);
        // A bad entry anywhere in the batch: nothing is written.
        let before = std::fs::read(&p).unwrap();
        let r = s.append_all(&[
            NewEntry::Name("m"),
            NewEntry::Label {
                target: "missing",
                label: None,
            },
        ]);
        assert!(matches!(r, Err(AppendError::NoSuchEntry(_))));
        assert_eq!(std::fs::read(&p).unwrap(), before);
    }

    #[test]
    fn names_are_sanitized_like_pi() {
        assert_eq!(sanitize_name("  a\r\n\nb \n"), "a b");
        assert_eq!(sanitize_name("\n"), "");
        assert_eq!(sanitize_name("x\ty"), "x\ty");
    }
}
