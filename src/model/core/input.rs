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
//! * **Side files stay inside the agent's folder.** A session file is what the user (or
//!   a sessions directory's listing) names, and a symbolic link to it is followed (its
//!   target's owner and mode are then what the mount shows, see [`Access`]). Every other
//!   file a session reads (a Claude Code subagent's transcript, a spilled tool result,
//!   `custom-title.json`, a Codex thread's other pages, `session_index.jsonl`,
//!   `state_5.sqlite`, any new agent's) is opened with [`open_beneath`]: only a regular
//!   file, only if its path does not leave the agent's folder (a link inside the folder
//!   is fine, one that leads out of it is refused, as `openat2`'s `RESOLVE_BENEATH`
//!   decides), never blocking, and read with a bound ([`read_beneath`]). A session folder
//!   is data that may come from anywhere (a copied home, an archive, a repository's
//!   checked-in `.claude`): a link in it must not make the mount read `/etc/shadow`, and
//!   a FIFO in it must not hang a request. This is the one place that opens them:
//!   `model::architecture` fails when code elsewhere in the model opens a file to read.
//! * **Who may read what the mount shows** is what the disk says of the files it shows,
//!   [`Access`]: their owner, group and permission bits, from `fstat` of what was opened.

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};
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

/// Opens `path` for reading only if it is a regular file that lies inside `home`, the
/// folder its agent keeps the session's files in: the one way sessionfs opens a file a
/// session reads beside its own (see the module docs).
///
/// * `path` must be `home` joined with a relative path that does not climb (`..`);
///   otherwise it is refused (`EXDEV`, [`outside`]).
/// * Symbolic links on the way are followed only as long as they stay inside `home`
///   (`openat2` with `RESOLVE_BENEATH`): a link to `/etc/shadow`, or one that climbs
///   out, is refused. On a kernel without `openat2` (before Linux 5.6) no link is
///   followed at all (each component is opened with `O_NOFOLLOW`).
/// * It never blocks (`O_NONBLOCK`: a FIFO nobody writes, a device), and what was
///   opened is checked with `fstat`: a directory is `EISDIR`, anything else that is not
///   a regular file [`not_regular`].
pub fn open_beneath(home: &Path, path: &Path) -> io::Result<File> {
    let rel = path.strip_prefix(home).map_err(|_| outside(home, path))?;
    if rel.as_os_str().is_empty()
        || !rel
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(outside(home, path));
    }
    let flags = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
    let dir = open_dir(home)?;
    let fd = match openat2_beneath(&dir, rel, flags) {
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => open_no_links(dir, rel, flags),
        Err(e) if e.raw_os_error() == Some(libc::EXDEV) => Err(outside(home, path)),
        r => r,
    }?;
    let file = File::from(fd);
    let md = file.metadata()?;
    if md.is_dir() {
        return Err(io::Error::from_raw_os_error(libc::EISDIR));
    }
    if !md.is_file() {
        return Err(not_regular());
    }
    Ok(file)
}

/// Checks, without opening it, that `path` is a regular file inside `home` reached
/// through no symbolic link: what [`open_beneath`] checks, for a file another program
/// locks. SQLite's locks are POSIX locks, which belong to the process: closing any
/// descriptor of a database file drops every lock the process holds on it, those of
/// its SQLite connections included (a write in progress would then be open to another
/// writer). So a database that SQLite opens by name is checked with `fstatat` on the
/// folders that lead to it (opened `O_PATH`, whose close drops no lock), never opened
/// here. A directory is `EISDIR`, a device, FIFO or socket [`not_regular`], a link
/// [`outside`].
pub fn check_beneath(home: &Path, path: &Path) -> io::Result<()> {
    let rel = path.strip_prefix(home).map_err(|_| outside(home, path))?;
    let only_names = rel
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    let (Some(last), true) = (rel.file_name(), only_names) else {
        return Err(outside(home, path));
    };
    // The folders on the way, each opened `O_PATH` with no link followed.
    let folders = rel.parent().unwrap_or(Path::new(""));
    let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;
    let dir =
        open_no_links(open_dir(home)?, folders, flags).map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP | libc::ENOTDIR) => outside(home, path),
            _ => e,
        })?;
    let c =
        CString::new(last.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: `libc::stat` is plain data; zero is a valid value of every field.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor, C string and buffer; the result is checked.
    if unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            c.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    } != 0
    {
        return Err(io::Error::last_os_error());
    }
    match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => Ok(()),
        libc::S_IFDIR => Err(io::Error::from_raw_os_error(libc::EISDIR)),
        libc::S_IFLNK => Err(outside(home, path)),
        _ => Err(not_regular()),
    }
}

/// Whether another process sees a lock on the file at `path`: a child asks the kernel
/// (`fcntl(F_GETLK)` for a write lock over the whole file) and exits with the answer.
/// For the tests that SQLite's locks survive what we do to a database's files.
#[cfg(test)]
pub(crate) fn locked_for_others(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: between `fork` and `_exit` the child only makes system calls (no
    // allocation, no lock), which is what a child of a threaded process may do.
    unsafe {
        let pid = libc::fork();
        assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
        if pid == 0 {
            let fd = libc::open(c.as_ptr(), libc::O_RDONLY);
            if fd < 0 {
                libc::_exit(2);
            }
            let mut fl: libc::flock = std::mem::zeroed();
            fl.l_type = libc::F_WRLCK as _;
            fl.l_whence = libc::SEEK_SET as _;
            if libc::fcntl(fd, libc::F_GETLK, &mut fl) != 0 {
                libc::_exit(3);
            }
            libc::_exit(i32::from(fl.l_type != libc::F_UNLCK as libc::c_short));
        }
        let mut status = 0;
        assert_eq!(libc::waitpid(pid, &mut status, 0), pid);
        match libc::WEXITSTATUS(status) {
            0 => false,
            1 => true,
            e => panic!("the lock probe failed ({e})"),
        }
    }
}

/// [`open_beneath`] the folder of `homes` that holds `path` (the longest that does, by
/// its path): an agent whose files lie in several folders, each of which may itself be
/// a link (a Codex home whose `sessions/` lives on another disk), names them all.
pub fn open_beneath_any(homes: &[PathBuf], path: &Path) -> io::Result<File> {
    let home = homes
        .iter()
        .filter(|h| path.starts_with(h))
        .max_by_key(|h| h.as_os_str().len());
    match home {
        Some(h) => open_beneath(h, path),
        None => Err(outside(
            homes.first().map_or(Path::new("/"), PathBuf::as_path),
            path,
        )),
    }
}

/// The error [`open_beneath`] gives for a path that leads out of the agent's folder.
pub fn outside(home: &Path, path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "{} leads outside {} (a symbolic link out of the agent's folder is not followed)",
            path.display(),
            home.display()
        ),
    )
}

/// Reads the whole file at `path` ([`open_beneath`] `home`), refusing one of more than
/// `max` bytes rather than holding it (`EFBIG`).
pub fn read_beneath(home: &Path, path: &Path, max: u64) -> io::Result<Vec<u8>> {
    read_bounded(open_beneath(home, path)?, max)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {}", path.display(), io_message(&e))))
}

/// Reads `file` to its end, refusing more than `max` bytes (`EFBIG`).
pub fn read_bounded(file: File, max: u64) -> io::Result<Vec<u8>> {
    let hint = file.metadata().map_or(0, |m| m.len()).min(max) as usize;
    let mut out = Vec::with_capacity(hint);
    file.take(max.saturating_add(1)).read_to_end(&mut out)?;
    if out.len() as u64 > max {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!(
                "larger than {}, more than sessionfs reads of such a file",
                human_bytes(max)
            ),
        ));
    }
    Ok(out)
}

/// `home` as a directory descriptor to open beneath (a link naming `home` itself is
/// followed: the agent's folder is what the user or the environment named).
fn open_dir(home: &Path) -> io::Result<OwnedFd> {
    let c = CString::new(home.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: `c` is a valid C string; the result is checked.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `openat2(dir, rel, flags, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`.
fn openat2_beneath(dir: &OwnedFd, rel: &Path, flags: i32) -> io::Result<OwnedFd> {
    let c = CString::new(rel.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: `open_how` is plain data; zero is a valid value of every field.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = flags as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;
    loop {
        // SAFETY: valid descriptor, C string and `open_how` of the size passed.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dir.as_raw_fd(),
                c.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        if fd >= 0 {
            // SAFETY: a descriptor the kernel just gave us.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) });
        }
        let e = io::Error::last_os_error();
        // The kernel asks to try again when a rename raced the lookup.
        if e.raw_os_error() != Some(libc::EAGAIN) && e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Without `openat2`: each component opened with `O_NOFOLLOW` from the last, so that no
/// link is followed at all.
fn open_no_links(mut dir: OwnedFd, rel: &Path, flags: i32) -> io::Result<OwnedFd> {
    let parts: Vec<&std::ffi::OsStr> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    for (k, part) in parts.iter().enumerate() {
        let last = k + 1 == parts.len();
        let c = CString::new(part.as_bytes())
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        let f = if last {
            flags | libc::O_NOFOLLOW
        } else {
            libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC
        };
        // SAFETY: valid descriptor and C string; the result is checked.
        let fd = unsafe { libc::openat(dir.as_raw_fd(), c.as_ptr(), f) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor the kernel just gave us.
        dir = unsafe { OwnedFd::from_raw_fd(fd) };
    }
    Ok(dir)
}

/// Who may read what the mount shows of a session, as the disk says: the owner, the
/// group and the permission bits of its files, from `fstat` of what was opened (a
/// session file that is a symbolic link: its target's). A session over several files
/// (a Codex thread's pages, a Claude Code session's subagent transcripts) takes the
/// session file's owner and group, and each class (owner, group, others) may read it
/// only if it may read every one of its files ([`Access::narrowed_by`]); its write
/// bits are the session file's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    pub uid: u32,
    pub gid: u32,
    /// The permission bits (`0o777` at most).
    pub mode: u16,
}

impl Access {
    /// The file's, from its metadata.
    pub fn of(md: &std::fs::Metadata) -> Access {
        Access {
            uid: md.uid(),
            gid: md.gid(),
            mode: (md.mode() & 0o777) as u16,
        }
    }

    /// These bits, where each class keeps its read bit only if it may also read the
    /// file `other` describes. A file of the same owner and group is compared class by
    /// class; for one of another owner or group it is unknown which of its classes a
    /// user of ours falls in, so only what every user may do counts (its owner, group
    /// and others bits all allowing it).
    pub fn narrowed_by(self, other: Access) -> Access {
        let read = if (other.uid, other.gid) == (self.uid, self.gid) {
            other.mode & 0o444
        } else {
            let all = other.mode & (other.mode >> 3) & (other.mode >> 6) & 0o4;
            all * 0o111
        };
        Access {
            mode: self.mode & (read | 0o333),
            ..self
        }
    }

    /// The bits of a regular file shown with this access: its read bits, and its write
    /// bits where `writes` (the mount writes there).
    pub fn file_mode(self, writes: bool) -> u16 {
        self.mode & if writes { 0o666 } else { 0o444 }
    }

    /// The bits of a directory: read and search for every class that may read, and
    /// write where `writes`.
    pub fn dir_mode(self, writes: bool) -> u16 {
        let r = self.mode & 0o444;
        let w = if writes { self.mode & 0o222 } else { 0 };
        r | (r >> 2) | w
    }
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
            grow(&mut buf, want)?;
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

/// Resizes `buf` to `len` bytes (zeros), failing with `OutOfMemory` rather than
/// aborting the process when the memory cannot be had: the size comes from the input
/// (a line's length, up to [`max_line`]), and Rust aborts on a failed allocation, which
/// a mount must never do for one file (see `docs/INPUT.md`).
pub fn grow(buf: &mut Vec<u8>, len: usize) -> io::Result<()> {
    if len > buf.len() {
        buf.try_reserve_exact(len - buf.len()).map_err(|_| {
            io::Error::new(
                io::ErrorKind::OutOfMemory,
                format!("cannot allocate {} to read a line", human_bytes(len as u64)),
            )
        })?;
    }
    buf.resize(len, 0);
    Ok(())
}

/// [`read_line_batches`] for a stream (a decompressor) rather than a file: its
/// complete lines from its start, in batches, a line longer than `max` bytes handed on
/// as [`Line::TooLong`] without being held, and what follows the last `\n` as the
/// [`Tail`] (its bytes are not kept). Offsets count the stream's bytes. Memory: one
/// line of at most `max` bytes plus one read of `chunk`, whatever the stream holds.
pub fn read_stream_lines<E: From<io::Error>>(
    mut src: impl io::Read,
    max: usize,
    chunk: usize,
    mut each: impl FnMut(&[Line<'_>]) -> Result<(), E>,
) -> Result<Tail, E> {
    let chunk = chunk.max(1);
    let mut buf: Vec<u8> = Vec::new();
    // `buf[..filled]` holds the stream's bytes from offset `base`, no `\n` among them.
    let mut filled = 0usize;
    let mut base = 0u64;
    // Passing a line longer than `max` that starts at `base`: how much of it was read.
    let mut passing: Option<u64> = None;
    loop {
        if passing.is_none() && filled == buf.len() {
            if filled > max {
                // One line longer than the bound: pass it without keeping it.
                passing = Some(filled as u64);
                filled = 0;
                buf.truncate(chunk);
                buf.shrink_to_fit();
            } else {
                let want = (buf.len() * 2).max(chunk).min(max + 1);
                grow(&mut buf, want)?;
            }
        }
        if passing.is_some() && buf.len() < chunk {
            grow(&mut buf, chunk)?;
        }
        let at = if passing.is_some() { 0 } else { filled };
        let n = match src.read(&mut buf[at..]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        if n == 0 {
            break;
        }
        let scan_from = if let Some(passed) = passing {
            let Some(i) = memchr::memchr(b'\n', &buf[..n]) else {
                passing = Some(passed + n as u64);
                continue;
            };
            each(&[Line::TooLong {
                offset: base,
                len: passed + i as u64,
            }])?;
            base += passed + i as u64 + 1;
            passing = None;
            buf.copy_within(i + 1..n, 0);
            filled = n - i - 1;
            0
        } else {
            filled += n;
            at
        };
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
            buf.truncate(chunk.max(filled));
            buf.shrink_to_fit();
        }
    }
    if let Some(passed) = passing {
        return Ok(Tail {
            offset: base,
            len: passed,
            bytes: None,
        });
    }
    Ok(Tail {
        offset: base,
        len: filled as u64,
        bytes: None,
    })
}

/// Lines this long or shorter are always parsed (what their values take is bounded by
/// about 80 times their length); longer ones are counted first ([`check_values`]).
pub const COUNTED_FROM: usize = 1 << 20;

/// About what one JSON value takes once parsed (`serde_json::Value` in an ordered map,
/// its key included): measured, 165 bytes a key on a line of 4.5 million keys.
const VALUE_BYTES: usize = 160;

/// The most values a line may hold to be parsed: as many as fit [`max_line`] bytes
/// once parsed (about 400,000 under the default 64 MiB).
pub fn max_values() -> usize {
    max_line() / VALUE_BYTES
}

/// Refuses a line whose parsed form would take more than [`max_line`] bytes: a line of
/// millions of small values (`{"k1":1,"k2":1,…}`) takes some 15 times its length once
/// parsed, so a line within the bound could cost a gigabyte. Counts the values of a
/// line longer than [`COUNTED_FROM`] (one pass, strings skipped); the message names
/// the count and the bound, which `--max-line` moves.
pub fn check_values(line: &[u8]) -> Result<(), String> {
    if line.len() <= COUNTED_FROM {
        return Ok(());
    }
    let n = count_values(line);
    let max = max_values();
    if n > max {
        return Err(format!(
            "{n} values, more than a line may hold parsed ({max}; --max-line raises it)"
        ));
    }
    Ok(())
}

/// An upper bound on the values of a JSON text: one, and one more for each `,`, `[`
/// and `{` outside strings.
fn count_values(line: &[u8]) -> usize {
    let count = |seg: &[u8]| {
        seg.iter()
            .filter(|&&b| b == b',' || b == b'[' || b == b'{')
            .count()
    };
    let mut n = 1;
    let mut at = 0;
    while at < line.len() {
        let Some(q) = memchr::memchr(b'"', &line[at..]) else {
            n += count(&line[at..]);
            break;
        };
        n += count(&line[at..at + q]);
        // The string: to its closing quote, escapes passed.
        let mut i = at + q + 1;
        loop {
            match memchr::memchr2(b'"', b'\\', &line[i.min(line.len())..]) {
                None => return n,
                Some(k) if line[i + k] == b'\\' => i += k + 2,
                Some(k) => {
                    i += k + 1;
                    break;
                }
            }
        }
        at = i;
    }
    n
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
    use std::os::unix::ffi::OsStrExt;

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

    fn mkfifo(p: &Path) {
        let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    /// The attacker's side files: links out of the folder, a FIFO, `/dev/zero`, loops,
    /// a directory; none opens, none blocks, each says why.
    /// A database's files are checked as `open_beneath` would refuse them, without
    /// being opened: a regular file inside the folder passes; a link (even to a file
    /// inside), a folder on the way that is a link, a FIFO, a device, a folder, a path
    /// out of the folder, and a missing file do not.
    #[test]
    fn files_checked_beneath_without_opening() {
        use std::os::unix::fs::symlink;
        let d = tempfile::tempdir().unwrap();
        let home = d.path().join("home");
        std::fs::create_dir_all(home.join("sub")).unwrap();
        std::fs::write(home.join("db"), "x").unwrap();
        std::fs::write(home.join("sub/db"), "x").unwrap();
        std::fs::write(d.path().join("secret"), "x").unwrap();
        symlink("db", home.join("inside")).unwrap();
        symlink(d.path().join("secret"), home.join("abs")).unwrap();
        symlink("/dev/zero", home.join("zero")).unwrap();
        symlink(home.join("sub"), home.join("linked")).unwrap();
        mkfifo(&home.join("fifo"));
        let check = |name: &str| check_beneath(&home, &home.join(name));
        assert!(check("db").is_ok());
        assert!(check("sub/db").is_ok());
        for bad in ["inside", "abs", "zero", "linked/db"] {
            let e = check(bad).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{bad}: {e}");
            assert!(e.to_string().contains("leads outside"), "{bad}: {e}");
        }
        assert_eq!(
            check("fifo").unwrap_err().to_string(),
            "neither a regular file nor a directory"
        );
        assert_eq!(check("sub").unwrap_err().raw_os_error(), Some(libc::EISDIR));
        assert_eq!(check("nope").unwrap_err().kind(), io::ErrorKind::NotFound);
        assert_eq!(
            check_beneath(&home, &d.path().join("secret"))
                .unwrap_err()
                .kind(),
            io::ErrorKind::PermissionDenied
        );
        assert_eq!(
            check_beneath(&home, &home.join("../secret"))
                .unwrap_err()
                .kind(),
            io::ErrorKind::PermissionDenied
        );
    }

    #[test]
    fn side_files_open_only_inside_the_agents_folder() {
        use std::os::unix::fs::symlink;
        let d = tempfile::tempdir().unwrap();
        let home = d.path().join("home");
        let side = home.join("sid/tool-results");
        std::fs::create_dir_all(&side).unwrap();
        std::fs::write(side.join("ok.txt"), "fine").unwrap();
        std::fs::write(d.path().join("secret"), "shadow").unwrap();
        symlink(d.path().join("secret"), side.join("abs.txt")).unwrap();
        symlink("../../../secret", side.join("rel.txt")).unwrap();
        symlink("ok.txt", side.join("inside.txt")).unwrap();
        symlink("/dev/zero", side.join("zero.txt")).unwrap();
        symlink("loop.txt", side.join("loop.txt")).unwrap();
        symlink("/proc/self/root/etc/passwd", side.join("magic.txt")).unwrap();
        mkfifo(&side.join("fifo.txt"));
        symlink("fifo.txt", side.join("to-fifo.txt")).unwrap();
        symlink("/", home.join("sid/up")).unwrap();
        let open = |name: &str| open_beneath(&home, &side.join(name));
        assert_eq!(read_bounded(open("ok.txt").unwrap(), 100).unwrap(), b"fine");
        assert_eq!(
            read_bounded(open("inside.txt").unwrap(), 100).unwrap(),
            b"fine"
        );
        for bad in ["abs.txt", "rel.txt", "magic.txt", "zero.txt"] {
            let e = open(bad).unwrap_err();
            assert!(
                e.kind() == io::ErrorKind::PermissionDenied
                    || e.raw_os_error() == Some(libc::ELOOP),
                "{bad}: {e}"
            );
        }
        assert_eq!(
            open("loop.txt").unwrap_err().raw_os_error(),
            Some(libc::ELOOP)
        );
        for fifo in ["fifo.txt", "to-fifo.txt"] {
            let e = open(fifo).unwrap_err();
            assert_eq!(e.to_string(), "neither a regular file nor a directory");
        }
        assert_eq!(
            open_beneath(&home, &home.join("sid"))
                .unwrap_err()
                .raw_os_error(),
            Some(libc::EISDIR)
        );
        assert!(open_beneath(&home, &home.join("sid/up/etc/passwd")).is_err());
        assert!(open_beneath(&home, &home.join("sid/../../secret")).is_err());
        assert!(open_beneath(&home, &d.path().join("secret")).is_err());
        // Bounded: a file past the bound is refused, not held.
        std::fs::write(side.join("big.txt"), vec![b'x'; 1000]).unwrap();
        let e = read_beneath(&home, &side.join("big.txt"), 999).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge, "{e}");
        assert_eq!(
            read_beneath(&home, &side.join("big.txt"), 1000)
                .unwrap()
                .len(),
            1000
        );
        // Without openat2, no link at all is followed.
        let no_links = |rel: &str| {
            let flags = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC;
            open_no_links(open_dir(&home).unwrap(), Path::new(rel), flags)
        };
        assert!(no_links("sid/tool-results/ok.txt").is_ok());
        assert!(no_links("sid/tool-results/inside.txt").is_err());
        assert!(no_links("sid/up/etc/passwd").is_err());
    }

    #[test]
    fn access_takes_what_every_file_allows() {
        let a = |uid, gid, mode| Access { uid, gid, mode };
        let own = a(1000, 1000, 0o644);
        assert_eq!(own.file_mode(false), 0o444);
        assert_eq!(own.file_mode(true), 0o644);
        assert_eq!(own.dir_mode(false), 0o555);
        assert_eq!(a(1000, 1000, 0o640).dir_mode(true), 0o750);
        assert_eq!(a(1000, 1000, 0o600).dir_mode(false), 0o500);
        // Another file of the same owner: class by class.
        assert_eq!(own.narrowed_by(a(1000, 1000, 0o600)).mode, 0o600);
        assert_eq!(own.narrowed_by(a(1000, 1000, 0o664)).mode, 0o644);
        // Of another owner: only what everyone may.
        assert_eq!(own.narrowed_by(a(1001, 1000, 0o644)).mode, 0o644);
        assert_eq!(own.narrowed_by(a(1001, 1000, 0o640)).mode, 0o200);
        assert_eq!(own.narrowed_by(a(1000, 1001, 0o604)).mode, 0o200);
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
    fn a_line_of_too_many_values_is_refused_before_it_is_parsed() {
        let small = br#"{"a":[1,2,{"b":"x,y,[{"}],"c":"\",{"}"#;
        assert_eq!(count_values(small), 7);
        assert!(check_values(small).is_ok());
        let many: Vec<u8> = std::iter::once(b'{')
            .chain((0..600_000).flat_map(|k| format!("\"k{k}\":1,").into_bytes()))
            .chain(*b"\"z\":0}")
            .collect();
        assert!(many.len() > COUNTED_FROM);
        let e = check_values(&many).unwrap_err();
        assert!(
            e.starts_with("600002 values, more than a line may hold parsed"),
            "{e}"
        );
        // As long, but one string: parsed.
        let text = format!("{{\"t\":\"{}\"}}", ",".repeat(COUNTED_FROM * 2));
        assert!(check_values(text.as_bytes()).is_ok());
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
