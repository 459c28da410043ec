//! When a session was last active, by the agent's own clock: what "newest first" means
//! (`sessionfs grep --sessions`, `sessionfs usage`'s `lastActivity`, a session
//! directory's time in a mount, so `ls -t` lists the newest first).
//!
//! Why not the file's modification time: a copy, a backup restored, `git checkout` or
//! `rsync` without `-t` resets it, and a session of several files (a Codex thread's
//! pages) has several. Every agent writes the time into its own lines, so the newest
//! time written is read from the last lines of the session's files: cheap (one read
//! of the tail of each file, no index), the same whether the session is loaded or not,
//! and right after a copy. Each agent says which files ([`super::agent::Agent::
//! activity_files`]) and how a tail reads ([`super::agent::Agent::activity_in_tail`];
//! by default [`newest_timestamp`]: the JSON lines' top-level `timestamp`, which Pi,
//! Claude Code and Codex write on every line). A file whose tail holds no time falls
//! back to its modification time.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The first read of a file's tail; grown while no time is found in it, up to
/// [`MAX_TAIL`]. The last lines of a session are nearly always shorter.
const FIRST_TAIL: u64 = 4 << 10;

/// How many of the last lines that hold a time are compared (an agent may write a
/// few lines out of order; further back, the times are older).
const LINES_WITH_TIMES: usize = 8;
/// The most read of a tail: a file whose last mebibyte holds no time (one huge line)
/// falls back to its modification time.
const MAX_TAIL: u64 = 1 << 20;

/// The newest top-level `timestamp` of the last complete JSON lines of `tail` (of the
/// last [`LINES_WITH_TIMES`] that have one): an ISO 8601 string (as JavaScript's `Date`
/// reads it) or milliseconds since the epoch. A first line that may be cut (`tail` does
/// not start at the file's start) is for the caller to leave out.
pub fn newest_timestamp(tail: &[u8]) -> Option<i64> {
    #[derive(serde::Deserialize)]
    struct Line {
        timestamp: Option<serde_json::Value>,
    }
    let mut newest: Option<i64> = None;
    let mut seen = 0;
    for line in tail.rsplit(|&b| b == b'\n') {
        if seen == LINES_WITH_TIMES {
            break;
        }
        if line.len() < 2 || !line.starts_with(b"{") {
            continue;
        }
        // Cheap refusal first: most lines of a tail are long, few lack the key.
        if memchr::memmem::find(line, b"\"timestamp\"").is_none() {
            continue;
        }
        let Ok(l) = serde_json::from_slice::<Line>(line) else {
            continue;
        };
        let ms = match l.timestamp {
            Some(serde_json::Value::String(s)) => super::js::js_date_ms(&s),
            Some(serde_json::Value::Number(n)) => n.as_i64(),
            _ => None,
        };
        if let Some(ms) = ms {
            seen += 1;
            newest = Some(newest.map_or(ms, |n| n.max(ms)));
        }
    }
    newest
}

/// The newest time the last lines of the file at `path` hold, as `read` finds it in a
/// tail of complete lines (a first line the read may have cut is left out); `None`
/// when the file cannot be read or its last mebibyte holds none.
pub fn of_file(path: &Path, read: &dyn Fn(&[u8]) -> Option<i64>) -> Option<i64> {
    // A session file: regular, and never blocking (a FIFO put in its place).
    let f = super::input::open_regular(path).ok()?;
    let len = f.metadata().ok()?.len();
    let mut want = FIRST_TAIL;
    loop {
        let from = len.saturating_sub(want);
        let mut buf = vec![0u8; (len - from) as usize];
        read_exact_at(&f, &mut buf, from).ok()?;
        // Only complete lines: drop a torn last line, and a first line cut by `from`.
        let end = buf.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let start = if from == 0 {
            0
        } else {
            buf.iter().position(|&b| b == b'\n').map_or(end, |i| i + 1)
        };
        if start < end
            && let Some(t) = read(&buf[start..end])
        {
            return Some(t);
        }
        if from == 0 || want >= MAX_TAIL {
            return None;
        }
        want *= 4;
    }
}

fn read_exact_at(f: &File, buf: &mut [u8], at: u64) -> io::Result<()> {
    f.read_exact_at(buf, at)
}

/// The file's modification time in milliseconds since the epoch.
pub fn mtime_ms(path: &Path) -> Option<i64> {
    let t = std::fs::metadata(path).ok()?.modified().ok()?;
    let d = t.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(d.as_millis()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_of_the_lines_times() {
        let tail = b"{\"type\":\"a\",\"timestamp\":\"2026-12-01T10:00:00.000Z\"}\n\
            {\"type\":\"last-prompt\"}\n\
            {\"timestamp\":1796464099000}\n\
            {\"timestamp\":\"2026-12-01T09:00:00.000Z\",\"x\":{\"timestamp\":\"2030-01-01\"}}\n\
            not json \"timestamp\"\n";
        assert_eq!(newest_timestamp(tail), Some(1_796_464_099_000));
        assert_eq!(newest_timestamp(b"{\"type\":\"x\"}\n"), None);
        // Nested times are not the line's.
        assert_eq!(newest_timestamp(b"{\"message\":{\"timestamp\":5}}\n"), None);
    }

    #[test]
    fn a_tail_reads_complete_lines_only_and_grows_past_a_long_line() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.jsonl");
        let mut s = String::from("{\"timestamp\":\"2026-12-01T10:00:00.000Z\"}\n");
        // A 100 KB line with no time, then a torn line with a later time.
        s.push_str(&format!("{{\"pad\":\"{}\"}}\n", "x".repeat(100_000)));
        s.push_str("{\"timestamp\":\"2027-01-01T00:00:00.000Z\"");
        std::fs::write(&p, &s).unwrap();
        assert_eq!(
            of_file(&p, &newest_timestamp),
            crate::model::core::js::js_date_ms("2026-12-01T10:00:00.000Z")
        );
        std::fs::write(&p, "").unwrap();
        assert_eq!(of_file(&p, &newest_timestamp), None);
        assert_eq!(of_file(&d.path().join("none"), &newest_timestamp), None);
    }
}
