//! What sessionfs agrees to read, and how much of it at once.
//!
//! * **Only regular files and directories.** A device (`/dev/zero`), a FIFO or a socket
//!   named on the command line is refused by [`argument`] with the message `mount`
//!   gives (`X is neither a regular file nor a directory`); every command that reads a
//!   session calls it on its arguments (and exits 2 on a refusal, as grep does). Inside
//!   a directory such files are skipped. [`open_regular`] opens without blocking and
//!   checks the descriptor too, so a path swapped for a FIFO after [`argument`] looked
//!   at it still cannot hang a reader.
//! * **Lines have a bound.** A line longer than [`max_line`] bytes (64 MiB unless the
//!   command line says otherwise, `--max-line`) is never held in memory: readers stream
//!   past it with [`skip_line`], a fixed-size buffer at a time, and report it as too
//!   long. So the memory a file costs is its index plus at most one line of
//!   [`max_line`] bytes, whatever the file holds.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The default [`max_line`]: 64 MiB.
pub const DEFAULT_MAX_LINE: usize = 64 << 20;
/// The largest [`max_line`] that can be set: 1 GiB (a line's length is kept in 32 bits).
pub const MAX_MAX_LINE: usize = 1 << 30;
/// The smallest: 1 MiB (a session's ordinary lines must fit).
pub const MIN_MAX_LINE: usize = 1 << 20;
/// The buffer [`skip_line`] reads through.
const SKIP_BUF: usize = 1 << 20;

static MAX_LINE: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_LINE);

/// The longest line read (bytes, without its `\n`); longer ones are skipped as too long.
pub fn max_line() -> usize {
    MAX_LINE.load(Ordering::Relaxed)
}

/// Sets [`max_line`] for the whole process (the command line's `--max-line`), clamped
/// to [`MIN_MAX_LINE`]..=[`MAX_MAX_LINE`].
pub fn set_max_line(bytes: usize) {
    MAX_LINE.store(bytes.clamp(MIN_MAX_LINE, MAX_MAX_LINE), Ordering::Relaxed);
}

/// Checks a `--max-line` value (bytes), refusing one outside
/// [`MIN_MAX_LINE`]..=[`MAX_MAX_LINE`].
pub fn valid_max_line(n: usize) -> Result<usize, String> {
    if !(MIN_MAX_LINE..=MAX_MAX_LINE).contains(&n) {
        return Err(format!(
            "{n} bytes: a line bound must lie between 1MiB and 1GiB ({MIN_MAX_LINE} to {MAX_MAX_LINE} bytes)"
        ));
    }
    Ok(n)
}

/// `n` bytes the way a limit is written: `64 MiB`, `1.5 GiB`, `512 KiB`, `10 bytes`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (size, unit) in UNITS {
        if n >= size {
            let whole = n / size;
            let tenths = (n % size) * 10 / size;
            return if tenths == 0 {
                format!("{whole} {unit}")
            } else {
                format!("{whole}.{tenths} {unit}")
            };
        }
    }
    format!("{n} bytes")
}

/// What a command-line argument names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Argument {
    File,
    Dir,
}

/// Why an argument is refused: the message, which names the path, as `mount` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The check every command makes of a path named on its command line (a session file
/// or a directory of them), before reading anything: it must exist and be a regular
/// file or a directory (symbolic links followed). A device, FIFO or socket is refused
/// with `PATH is neither a regular file nor a directory`: reading `/dev/zero` never
/// ends, and opening a FIFO nobody writes never returns. Commands exit 2 on a
/// refusal (`mount` keeps its own exit status for a bad source).
pub fn argument(path: &Path) -> Result<Argument, Refusal> {
    let shown = path.display();
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Ok(Argument::Dir),
        Ok(m) if m.is_file() => Ok(Argument::File),
        // A session kept with others in one file (`DB/ID`, see
        // `core::session::AgentTable::member`): the session is what is read.
        Err(e)
            if e.raw_os_error() == Some(libc::ENOTDIR)
                && path
                    .parent()
                    .is_some_and(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file())) =>
        {
            Ok(Argument::File)
        }
        Ok(_) => Err(Refusal(format!(
            "{shown} is neither a regular file nor a directory"
        ))),
        Err(e) => Err(Refusal(format!("{shown}: {}", io_message(&e)))),
    }
}

/// The error [`open_regular`] gives for what is not a regular file.
pub fn not_regular() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "neither a regular file nor a directory",
    )
}

/// Opens `path` for reading only if it is a regular file (a directory is `EISDIR`, a
/// device, FIFO or socket [`not_regular`]). Opened with `O_NONBLOCK`, which regular
/// files ignore, so that a FIFO nobody writes cannot hang the open.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let md = file.metadata()?;
    if md.is_dir() {
        return Err(io::Error::from_raw_os_error(libc::EISDIR));
    }
    if !md.is_file() {
        return Err(not_regular());
    }
    Ok(file)
}

/// Reads `file` from `pos` until just past the next `\n`, through a fixed buffer, and
/// returns that offset and `true`; or where the file ended and `false` (the line has
/// no end yet). What it reads is not kept: this is how a line longer than
/// [`max_line`] is passed.
///
/// A hole of a sparse file reads as zeros, which hold no `\n`: it is stepped over
/// (`SEEK_DATA`) without being read, so passing 4 GB of holes costs nothing.
pub fn skip_line(file: &File, mut pos: u64) -> io::Result<(u64, bool)> {
    let mut buf = vec![0u8; SKIP_BUF];
    loop {
        match next_data(file, pos) {
            Some(Some(data)) => pos = pos.max(data),
            // Only a hole is left: the file ends without a newline.
            Some(None) => return Ok((file.metadata()?.len().max(pos), false)),
            None => {}
        }
        let n = match file.read_at(&mut buf, pos) {
            Ok(0) => return Ok((pos, false)),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if let Some(i) = memchr::memchr(b'\n', &buf[..n]) {
            return Ok((pos + i as u64 + 1, true));
        }
        pos += n as u64;
    }
}

/// Where the next byte of data at or after `pos` is (`lseek(SEEK_DATA)`): `Some(None)`
/// when only a hole is left, `None` when the filesystem cannot say (read on then).
/// Uses no file offset of `file`'s (everything here reads with `pread`).
fn next_data(file: &File, pos: u64) -> Option<Option<u64>> {
    let at = libc::off_t::try_from(pos).ok()?;
    // SAFETY: lseek on a descriptor `file` owns; it moves only the descriptor's offset,
    // which no reader here uses.
    let r = unsafe { libc::lseek(file.as_raw_fd(), at, libc::SEEK_DATA) };
    if r >= 0 {
        return Some(Some(r as u64));
    }
    match io::Error::last_os_error().raw_os_error() {
        Some(libc::ENXIO) => Some(None),
        _ => None,
    }
}

/// One line met by [`read_lines`].
#[derive(Debug, Clone, Copy)]
pub enum Line<'a> {
    /// A complete line of at most [`max_line`] bytes, without its `\n`, and where it
    /// starts in the file.
    Whole { bytes: &'a [u8], offset: u64 },
    /// A complete line longer than [`max_line`]: where it starts and its length
    /// (without its `\n`). Its bytes were never held.
    TooLong { offset: u64, len: u64 },
}

/// What follows the last complete line [`read_lines`] met: a line without its `\n`
/// yet (or nothing, `len` 0).
#[derive(Debug)]
pub struct Tail {
    /// Where it starts: the end of the last complete line.
    pub offset: u64,
    pub len: u64,
    /// Its bytes, unless it is longer than [`max_line`].
    pub bytes: Option<Vec<u8>>,
}

/// Reads `file` from `from` to its end, a bounded buffer at a time, and hands each
/// complete line to `each` in order; lines longer than `max` bytes (callers pass
/// [`max_line`]) are passed over. Memory: one line of at most `max` bytes plus a 1 MiB
/// read, whatever the file holds. `long_tail`, when a previous call ended
/// on a [`Tail`] too long to hold, is that tail's length: the search for its end
/// resumes there instead of reading it again.
pub fn read_lines<E: From<io::Error>>(
    file: &File,
    from: u64,
    long_tail: Option<u64>,
    max: usize,
    mut each: impl FnMut(Line<'_>) -> Result<(), E>,
) -> Result<Tail, E> {
    read_line_batches(file, from, long_tail, max, 1 << 20, |lines| {
        lines.iter().try_for_each(|&l| each(l))
    })
}

/// [`read_lines`], handing on the complete lines of each read of `chunk` bytes at once
/// (in order, never an empty batch), so that a caller may work on a batch's lines
/// side by side. Memory: one line of at most `max` bytes plus one read of `chunk`.
pub fn read_line_batches<E: From<io::Error>>(
    file: &File,
    from: u64,
    long_tail: Option<u64>,
    max: usize,
    chunk: usize,
    mut each: impl FnMut(&[Line<'_>]) -> Result<(), E>,
) -> Result<Tail, E> {
    let chunk = chunk.max(1);
    // The first read need not be larger than what the file holds (and one byte, to
    // see its end): zeroing a whole `chunk` for a small file costs more than reading
    // it (a search opens hundreds of small Codex pages). The file may grow meanwhile:
    // the buffer grows as it always does.
    let first = file
        .metadata()
        .map_or(chunk, |m| {
            (m.len().saturating_sub(from) as usize).saturating_add(1)
        })
        .clamp(1, chunk);
    // `buf[..filled]` holds file bytes from offset `base`; complete lines are handed
    // on straight out of it and only the unfinished last line is moved.
    let mut buf: Vec<u8> = Vec::new();
    let mut first = Some(first);
    let mut filled = 0usize;
    let mut base = from;
    // The unfinished line at `base` is too long and known to run at least to here.
    let mut passing = long_tail.map(|l| from + l);
    loop {
        if let Some(at) = passing.take() {
            let (end, ended) = skip_line(file, at)?;
            if !ended {
                return Ok(Tail {
                    offset: base,
                    len: end - base,
                    bytes: None,
                });
            }
            each(&[Line::TooLong {
                offset: base,
                len: end - 1 - base,
            }])?;
            base = end;
            filled = 0;
            continue;
        }
        if filled == buf.len() {
            if filled > max {
                // One line longer than the bound: pass it without keeping it.
                passing = Some(base + filled as u64);
                continue;
            }
            // Grow to hold the line, never past one byte more than the bound.
            let want = match first.take() {
                Some(n) => n.min(max + 1),
                None => (buf.len() * 2).max(chunk).min(max + 1),
            };
            buf.resize(want, 0);
        }
        let n = match file.read_at(&mut buf[filled..], base + filled as u64) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        if n == 0 {
            break;
        }
        let scan_from = filled;
        filled += n;
        let mut start = 0usize;
        let mut search = scan_from;
        let mut lines = Vec::new();
        while let Some(nl) = memchr::memchr(b'\n', &buf[search..filled]) {
            let end = search + nl;
            let offset = base + start as u64;
            if end - start > max {
                lines.push(Line::TooLong {
                    offset,
                    len: (end - start) as u64,
                });
            } else {
                lines.push(Line::Whole {
                    bytes: &buf[start..end],
                    offset,
                });
            }
            start = end + 1;
            search = start;
        }
        if !lines.is_empty() {
            each(&lines)?;
        }
        drop(lines);
        buf.copy_within(start..filled, 0);
        filled -= start;
        base += start as u64;
        if buf.len() > chunk && filled < chunk / 2 {
            // A long line has passed: give its room back.
            buf.truncate(chunk);
            buf.shrink_to_fit();
        }
    }
    if filled > max {
        return Ok(Tail {
            offset: base,
            len: filled as u64,
            bytes: None,
        });
    }
    buf.truncate(filled);
    Ok(Tail {
        offset: base,
        len: filled as u64,
        bytes: Some(buf),
    })
}

/// An I/O error as one phrase (`No such file or directory`), without Rust's
/// `(os error N)`.
pub fn io_message(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn arguments_that_are_not_files_or_directories_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(argument(dir.path()), Ok(Argument::Dir));
        let f = dir.path().join("s.jsonl");
        std::fs::write(&f, "x").unwrap();
        assert_eq!(argument(&f), Ok(Argument::File));
        let fifo = dir.path().join("fifo.jsonl");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(
            argument(&fifo).unwrap_err().0,
            format!(
                "{} is neither a regular file nor a directory",
                fifo.display()
            )
        );
        assert_eq!(
            argument(Path::new("/dev/zero")).unwrap_err().0,
            "/dev/zero is neither a regular file nor a directory"
        );
        assert_eq!(
            argument(&dir.path().join("nope")).unwrap_err().0,
            format!(
                "{}: No such file or directory",
                dir.path().join("nope").display()
            )
        );
        // Opening does not wait for a writer, and refuses.
        let e = open_regular(&fifo).unwrap_err();
        assert_eq!(e.to_string(), "neither a regular file nor a directory");
        assert_eq!(
            open_regular(dir.path()).unwrap_err().raw_os_error(),
            Some(libc::EISDIR)
        );
        assert!(open_regular(Path::new("/dev/zero")).is_err());
        assert!(open_regular(&f).is_ok());
    }

    #[test]
    fn skip_line_stops_after_the_newline_or_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let mut f = File::create(&p).unwrap();
        let long = vec![b'a'; 3 * SKIP_BUF + 5];
        f.write_all(&long).unwrap();
        f.write_all(b"\nnext\nlast").unwrap();
        drop(f);
        let f = File::open(&p).unwrap();
        let after = long.len() as u64 + 1;
        assert_eq!(skip_line(&f, 0).unwrap(), (after, true));
        assert_eq!(skip_line(&f, after).unwrap(), (after + 5, true));
        assert_eq!(skip_line(&f, after + 5).unwrap(), (after + 9, false));
    }

    #[test]
    fn read_lines_passes_lines_over_the_bound_without_holding_them() {
        let max = 3000;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let mut text = b"first\n".to_vec();
        text.extend(std::iter::repeat_n(b'a', max));
        text.push(b'\n');
        text.extend(std::iter::repeat_n(b'b', max + 1));
        text.extend_from_slice(b"\nlast\n");
        let tail_at = text.len() as u64;
        text.extend(std::iter::repeat_n(b'c', max + 10));
        std::fs::write(&p, &text).unwrap();
        let f = File::open(&p).unwrap();
        let mut seen = Vec::new();
        let tail = read_lines::<io::Error>(&f, 0, None, max, |l| {
            seen.push(match l {
                Line::Whole { bytes, offset } => (offset, bytes.len() as u64, true),
                Line::TooLong { offset, len } => (offset, len, false),
            });
            Ok(())
        })
        .unwrap();
        let m = max as u64;
        assert_eq!(
            seen,
            vec![
                (0, 5, true),
                (6, m, true),
                (7 + m, m + 1, false),
                (9 + 2 * m, 4, true)
            ]
        );
        assert_eq!((tail.offset, tail.len), (tail_at, m + 10));
        assert!(tail.bytes.is_none());
        // The tail gets its newline: resumed where it was left.
        let mut more = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        more.write_all(b"cc\nend").unwrap();
        let mut seen = Vec::new();
        let tail = read_lines::<io::Error>(&f, tail_at, Some(m + 10), max, |l| {
            if let Line::TooLong { offset, len } = l {
                seen.push((offset, len));
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, vec![(tail_at, m + 12)]);
        assert_eq!(tail.bytes.as_deref(), Some(&b"end"[..]));
    }

    #[test]
    fn holes_are_passed_without_reading_them() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sparse");
        let f = File::create(&p).unwrap();
        f.set_len(8 << 30).unwrap();
        f.write_all_at(b"x\ny", 8 << 30).unwrap();
        let f = File::open(&p).unwrap();
        let t = std::time::Instant::now();
        assert_eq!(skip_line(&f, 0).unwrap(), ((8 << 30) + 2, true));
        assert_eq!(
            skip_line(&f, (8 << 30) + 2).unwrap(),
            ((8 << 30) + 3, false)
        );
        let g = File::create(dir.path().join("hole-at-end")).unwrap();
        g.set_len(1 << 30).unwrap();
        assert_eq!(skip_line(&g, 0).unwrap(), (1 << 30, false));
        // Not a timing assertion: 9 GiB read as zeros would take tens of seconds,
        // long enough for a reader of the test to notice; this only logs it.
        eprintln!("passed 9 GiB of holes in {:?}", t.elapsed());
    }

    #[test]
    fn sizes_read_as_limits() {
        assert_eq!(human_bytes(64 << 20), "64 MiB");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
        assert_eq!(human_bytes(100), "100 bytes");
        assert!(valid_max_line(1).is_err());
        assert!(valid_max_line(2 << 30).is_err());
        assert_eq!(valid_max_line(2 << 20), Ok(2 << 20));
    }
}
