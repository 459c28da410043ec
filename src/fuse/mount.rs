//! The `sessionfs mount` command.
//!
//! [`run`] checks the invocation, loads the session (or, given a directory or no
//! source at all, sets up a [`MultiView`] of a sessions directory, which loads nothing
//! yet), mounts it, and serves it until the mount goes away, which happens when
//!
//! * the process receives `SIGINT`, `SIGTERM` or `SIGHUP`: it unmounts (lazily if the
//!   mount is busy), waits briefly for the kernel to end the session, and exits 0;
//! * someone runs `umount MOUNTPOINT`: the session ends and the process exits 0.
//!
//! Before mounting, every condition a user can cause is checked and reported as one
//! sentence prefixed with `sessionfs: `, with an exit status of its own (see
//! [`exit`]). Nothing is mounted when a check fails. That includes a user other than
//! root who cannot open `/dev/fuse` (which `fusermount3` opens with the user's rights):
//! the message names the device and the fix, not the mount point.
//!
//! In the foreground, once the mount is served, one line on standard error says what
//! is mounted where and how to unmount it. A sessions directory with no session in it
//! is mounted with a warning (in either mode): most often it is the wrong directory.
//!
//! With `--background` the command re-executes itself without that flag in a new
//! session (`setsid`), with standard input, output and error on `/dev/null` (the log
//! goes to `--log FILE` if given), and returns once the mount answers: with status 0
//! (and nothing printed but that warning), or with the child's error message and exit
//! status. The child reports through a pipe whose descriptor it is given in the
//! environment (`SESSIONFS_READY_FD`, [`take_ready_fd`]: no option a user would see
//! in `--help` or be offered by completion).

use super::adapter::Adapter;
use super::dir_watch::DirWatcher;
use super::notify::{Delivery, NotifierThread};
use super::watch::Watcher;
use crate::model::{LoadError, sessions_dir};
use crate::view::{FsView, MultiOptions, MultiView, Options, STATS_NAME, SessionView};
use fuser::{Config, MountOption, Session, SessionACL, SessionUnmounter};
use log::{debug, info, warn};
use std::ffi::CString;
use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// Exit statuses of `sessionfs mount`.
pub mod exit {
    /// The mount failed for another reason, or the session ended with an error.
    pub const FAILED: u8 = 1;
    /// The command line was wrong (reported, and exited with, by the argument parser).
    #[allow(dead_code)]
    pub const USAGE: u8 = 2;
    /// The session file or sessions directory cannot be read: missing, not permitted,
    /// or (a directory) holding the mount point.
    pub const FILE: u8 = 3;
    /// The file is not a Pi, Claude Code or Codex session (or is empty).
    pub const NOT_A_SESSION: u8 = 4;
    /// The mount point is missing or not a directory.
    pub const MOUNT_POINT: u8 = 5;
    /// The mount point is not empty.
    pub const NOT_EMPTY: u8 = 6;
    /// The mount point is already a mount point (or a dead FUSE mount).
    pub const MOUNTED: u8 = 7;
    /// `/dev/fuse` is missing: no FUSE in this kernel or container.
    pub const NO_FUSE: u8 = 8;
    /// Not permitted to mount: not root, and no `fusermount3` or no access to
    /// `/dev/fuse`.
    pub const NOT_PERMITTED: u8 = 9;
}

/// The exit-status table, as shown in `sessionfs mount --help`.
pub const EXIT_STATUS_HELP: &str = "\
Exit status:
  0  unmounted cleanly (signal or umount), or --background: the mount is ready
  1  the mount failed for another reason, or the session ended with an error
  2  bad command line
  3  FILE or DIR cannot be read (missing, not permitted), or DIR holds MOUNTPOINT
  4  FILE is not a Pi, Claude Code or Codex session (or is empty)
  5  MOUNTPOINT is missing or not a directory
  6  MOUNTPOINT is not empty
  7  MOUNTPOINT is already a mount point (or a dead FUSE mount)
  8  /dev/fuse is missing (no FUSE in this kernel or container)
  9  not permitted to mount (non-root users need fusermount3, and read and write
     access to /dev/fuse)";

/// Threads serving FUSE requests, each reading from its own clone of the FUSE device.
/// A slow request (indexing a session entered for the first time, drawing `tree`, a
/// reply's `fdatasync`) then holds up its own thread only: requests for other files and
/// other sessions are served by the others (the view's locks are per session, see
/// `crate::view`). Tools that walk a mount send one request at a time, so more
/// threads do not make them faster: one, two and four threads gave the same `grep -r`
/// times on the 100k-entry session, within the noise of a loaded 2-CPU machine. Four
/// leave room for three slow requests at once.
const FUSE_THREADS: usize = 4;

/// How long `--background` waits for the mount to answer.
const BACKGROUND_DEADLINE: Duration = Duration::from_secs(10);
/// How long shutdown waits for the kernel to end a lazily unmounted, busy session.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// What `sessionfs mount` was asked to do.
#[derive(Debug, Clone)]
pub struct MountArgs {
    /// A session file or a sessions directory; `None`: Pi's sessions directory.
    pub file: Option<PathBuf>,
    pub mount_point: PathBuf,
    pub read_only: bool,
    pub allow_other: bool,
    pub background: bool,
    /// Largest message accepted through `reply`, in bytes.
    pub max_reply: usize,
    /// With a sessions directory: the memory bound on loaded sessions, in bytes.
    pub max_index_memory: usize,
    /// With `--background`: where the child's log goes.
    pub log: Option<PathBuf>,
    /// `--prices FILE` (already loaded into the process; passed on to a background
    /// child, which loads it again).
    pub prices: Option<PathBuf>,
    /// Set in the `--background` child: where to report readiness or failure.
    pub ready_fd: Option<i32>,
}

/// A failure to report: a sentence and an exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    fn new(code: u8, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Runs `sessionfs mount`; returns the exit status.
pub fn run(args: MountArgs) -> ExitCode {
    return_freed_memory();
    let result = if args.background {
        run_background(&args)
    } else {
        let mut ready = args.ready_fd.and_then(ReadyPipe::adopt);
        let r = mount_and_serve(&args, &mut ready);
        if let (Err(f), Some(pipe)) = (&r, ready) {
            pipe.fail(&f.message);
        }
        r
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("sessionfs: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

/// A mount lives for hours and renders files of every size, a deep context being
/// megabytes. glibc raises its mmap threshold each time such a buffer is freed, so
/// that later large buffers come from the heap, where freeing them leaves the pages
/// resident: after a `grep -r` the process kept about 12 MiB it no longer used. A fixed
/// threshold keeps buffers over 256 KiB in their own mappings, returned on free.
fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 10);
    }
}

/// Parses a byte count: digits with an optional `K`, `M` or `G` (powers of 1024),
/// optionally followed by `iB` or `B`: `16777216`, `16M`, `16MiB`.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let n: usize = num
        .parse()
        .map_err(|_| format!("{s:?} is not a byte count"))?;
    let mult: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(format!("{s:?}: unknown unit (use K, M or G)")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("{s:?} is too large"))
}

// ---------------------------------------------------------------------------------
// Checks before mounting.

/// What the checks established.
struct Checked {
    /// The session file, or the sessions directory (absolute); with no source, the
    /// first agent's directory.
    file: PathBuf,
    /// How to name it to the user: as given, or Pi's sessions directory.
    shown: String,
    /// Whether `file` is a sessions directory.
    dir: bool,
    /// With no source: every agent's sessions directory found, by folder name.
    agents: Option<Vec<(&'static str, PathBuf)>>,
    mount_point: PathBuf,
}

fn preflight(args: &MountArgs) -> Result<Checked, Failure> {
    let (file, dir, agents) = match &args.file {
        Some(f) => {
            let (file, dir) = check_source(f)?;
            (file, dir, None)
        }
        None => {
            let agents = check_agents()?;
            (agents[0].1.clone(), true, Some(agents))
        }
    };
    let mount_point = check_mount_point(&args.mount_point)?;
    let dirs: Vec<&PathBuf> = match &agents {
        Some(a) => a.iter().map(|(_, p)| p).collect(),
        None if dir => vec![&file],
        None => Vec::new(),
    };
    for d in dirs {
        if mount_point.starts_with(d) {
            return Err(Failure::new(
                exit::FILE,
                format!(
                    "{} is a directory that holds the mount point {}; mount it elsewhere",
                    args.file.as_deref().unwrap_or(d).display(),
                    args.mount_point.display()
                ),
            ));
        }
    }
    check_fuse_device(Path::new("/dev/fuse"))?;
    check_permitted()?;
    check_fuse_access(Path::new("/dev/fuse"))?;
    let shown = match (&args.file, &agents) {
        (Some(f), _) => f.display().to_string(),
        (None, Some(a)) => sessions_dir::agents_shown(a),
        (None, None) => file.display().to_string(),
    };
    Ok(Checked {
        shown,
        file,
        dir,
        agents,
        mount_point,
    })
}

/// Every agent's sessions directory on this machine, for `sessionfs mount MOUNTPOINT`
/// ([`sessions_dir::agents`]), canonical.
fn check_agents() -> Result<Vec<(&'static str, PathBuf)>, Failure> {
    let mut found = sessions_dir::agents().map_err(|m| Failure::new(exit::FILE, m))?;
    for (_, d) in &mut found {
        *d = fs::canonicalize(&*d)
            .map_err(|e| Failure::new(exit::FILE, format!("{}: {}", d.display(), io_msg(&e))))?;
    }
    Ok(found)
}

/// A session file or a sessions directory: its absolute path, and whether it is a
/// directory.
fn check_source(file: &Path) -> Result<(PathBuf, bool), Failure> {
    let shown = file.display();
    if let Err(e) = fs::metadata(file)
        && e.kind() == io::ErrorKind::NotFound
    {
        return Err(Failure::new(
            exit::FILE,
            format!("{shown}: no such file or directory"),
        ));
    }
    // The check every command makes of what it is given to read.
    let is_dir = crate::model::input::argument(file).map_err(|r| Failure::new(exit::FILE, r.0))?
        == crate::model::input::Argument::Dir;
    // A database of sessions (opencode's) is mounted as a sessions directory.
    let is_dir = is_dir || sessions_dir::is_listed_root(file);
    // A session kept in a database (`DB/ID`): the database's real path, then the id.
    let canonical = |f: &Path| match (crate::model::core::catalog::file_of(f), f.file_name()) {
        (c, Some(name)) if c != f => fs::canonicalize(&c).map(|c| c.join(name)),
        _ => fs::canonicalize(f),
    };
    let abs = canonical(file)
        .map_err(|e| Failure::new(exit::FILE, format!("{shown}: {}", io_msg(&e))))?;
    // A session that is a folder (Copilot CLI's `session-state/<id>/`): its file, alone.
    if is_dir && let Some(f) = crate::model::sessions_dir::session_folder_file(&abs) {
        return Ok((f, false));
    }
    if abs.is_dir() {
        fs::read_dir(&abs)
            .map_err(|e| Failure::new(exit::FILE, format!("{shown}: {}", io_msg(&e))))?;
    }
    Ok((abs, is_dir))
}

/// Lets the process keep one descriptor per loaded session: raises the soft limit on
/// open files to the hard one, and returns how many sessions may be loaded at once.
fn sessions_loadable() -> usize {
    // SAFETY: getrlimit/setrlimit on a live struct.
    let soft = unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            1024
        } else {
            if r.rlim_cur < r.rlim_max {
                let want = libc::rlimit {
                    rlim_cur: r.rlim_max,
                    rlim_max: r.rlim_max,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &want) == 0 {
                    r.rlim_cur = r.rlim_max;
                }
            }
            r.rlim_cur
        }
    };
    (soft.saturating_sub(256) / 2).clamp(16, 4096) as usize
}

fn check_mount_point(mp: &Path) -> Result<PathBuf, Failure> {
    let shown = mp.display();
    let meta = match fs::metadata(mp) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(Failure::new(
                exit::MOUNT_POINT,
                format!("{shown}: no such directory (create it with mkdir first)"),
            ));
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => {
            return Err(Failure::new(
                exit::MOUNTED,
                format!(
                    "{shown} is a dead FUSE mount (its server is gone); \
                     clear it with: umount -l {shown}"
                ),
            ));
        }
        Err(e) => {
            return Err(Failure::new(
                exit::MOUNT_POINT,
                format!("{shown}: {}", io_msg(&e)),
            ));
        }
    };
    if !meta.is_dir() {
        // `sessionfs mount MOUNTPOINT FILE`: the two swapped.
        let hint = if meta.is_file() {
            "; the mount point comes last: sessionfs mount FILE|DIR MOUNTPOINT"
        } else {
            ""
        };
        return Err(Failure::new(
            exit::MOUNT_POINT,
            format!("{shown} is not a directory{hint}"),
        ));
    }
    let abs = fs::canonicalize(mp)
        .map_err(|e| Failure::new(exit::MOUNT_POINT, format!("{shown}: {}", io_msg(&e))))?;
    let mounted = match abs.parent() {
        None => true,
        Some(parent) => match fs::metadata(parent) {
            Ok(p) => p.dev() != meta.dev() || p.ino() == meta.ino(),
            Err(_) => false,
        },
    };
    if mounted {
        return Err(Failure::new(
            exit::MOUNTED,
            format!("{shown} is already a mount point; unmount it or choose another directory"),
        ));
    }
    let mut entries = fs::read_dir(&abs)
        .map_err(|e| Failure::new(exit::MOUNT_POINT, format!("{shown}: {}", io_msg(&e))))?;
    if entries.next().is_some() {
        return Err(Failure::new(
            exit::NOT_EMPTY,
            format!("{shown} is not empty; mount on an empty directory"),
        ));
    }
    Ok(abs)
}

fn check_fuse_device(dev: &Path) -> Result<(), Failure> {
    if fs::symlink_metadata(dev).is_err() {
        return Err(Failure::new(
            exit::NO_FUSE,
            format!(
                "{} is missing: this kernel or container has no FUSE \
                 (try `modprobe fuse`, or give the container --device /dev/fuse)",
                dev.display()
            ),
        ));
    }
    Ok(())
}

/// A user other than root mounts through `fusermount3`, which opens `/dev/fuse` with
/// the user's own rights: without read and write access it fails, and the kernel's
/// "Permission denied" would seem to be about the mount point.
fn check_fuse_access(dev: &Path) -> Result<(), Failure> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return Ok(());
    }
    let Ok(c) = CString::new(dev.as_os_str().as_bytes()) else {
        return Ok(());
    };
    // SAFETY: `c` is a valid C string.
    if unsafe { libc::access(c.as_ptr(), libc::R_OK | libc::W_OK) } == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    let mode = fs::metadata(dev)
        .map(|m| format!(" (mode {:04o})", m.permissions().mode() & 0o7777))
        .unwrap_or_default();
    Err(Failure::new(
        exit::NOT_PERMITTED,
        format!(
            "cannot open {shown}{mode}: {}; users other than root need read and write \
             access to it, which most systems give everyone (mode 0666, set by udev); \
             as root: chmod 0666 {shown}",
            io_msg(&e),
            shown = dev.display(),
        ),
    ))
}

fn check_permitted() -> Result<(), Failure> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 || fusermount_available() {
        return Ok(());
    }
    Err(Failure::new(
        exit::NOT_PERMITTED,
        "not permitted to mount: non-root users need fusermount3 from the fuse3 package",
    ))
}

/// Whether fuser will find a mount helper (it looks on `PATH`, then in `/sbin` and
/// `/bin`, unless `FUSERMOUNT_PATH` names one).
fn fusermount_available() -> bool {
    if std::env::var_os("FUSERMOUNT_PATH").is_some() {
        return true;
    }
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.extend([PathBuf::from("/sbin"), PathBuf::from("/bin")]);
    dirs.iter().any(|d| {
        ["fusermount3", "fusermount"].iter().any(|name| {
            fs::metadata(d.join(name))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// The warning for a sessions directory that holds no session (see
/// [`sessions_dir::no_sessions`]), saying who will fill it.
fn no_sessions_warning(dir: &Path, shown: &str) -> Option<String> {
    sessions_dir::no_sessions(dir, shown).map(|w| {
        format!(
            "{w}; they will appear in the mount as {} writes them",
            sessions_dir::agent_of(dir)
        )
    })
}

/// [`no_sessions_warning`] for a mount of every agent: only when none of them holds a
/// session.
fn no_agent_sessions_warning(agents: &[(&'static str, PathBuf)]) -> Option<String> {
    let programs = sessions_dir::agent_programs(agents);
    let verb = if agents.len() == 1 { "writes" } else { "write" };
    sessions_dir::no_agent_sessions(agents)
        .map(|w| format!("{w}; they will appear in the mount as {programs} {verb} them"))
}

/// What a mount says once it is ready: what is mounted where, and how to unmount it.
fn mounted_message(shown: &str, mount_point: &Path) -> String {
    format!(
        "mounted {shown} on {}; unmount with: sessionfs unmount {}",
        mount_point.display(),
        shell_word(mount_point)
    )
}

/// `p` as one word for a shell: as it is when that is safe, else in single quotes.
pub(crate) fn shell_word(p: &Path) -> String {
    let s = p.to_string_lossy();
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+,:@%".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// An io::Error as a sentence fragment, without Rust's "(os error N)" suffix.
pub(crate) fn io_msg(e: &io::Error) -> String {
    match e.raw_os_error() {
        // SAFETY: strerror returns a pointer to a static (or thread-local) C string.
        Some(code) => unsafe { std::ffi::CStr::from_ptr(libc::strerror(code)) }
            .to_string_lossy()
            .into_owned(),
        None => e.to_string(),
    }
}

// ---------------------------------------------------------------------------------
// Mounting and serving.

fn mount_and_serve(args: &MountArgs, ready: &mut Option<ReadyPipe>) -> Result<(), Failure> {
    let checked = preflight(args)?;
    if ready.is_some() {
        // A background child holds no directory busy; every path is absolute now.
        let _ = std::env::set_current_dir("/");
    }

    // SAFETY: getuid and getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let opts = Options {
        read_only: args.read_only,
        mount_point: checked.mount_point.clone(),
        uid,
        gid,
        max_reply: args.max_reply,
        in_sessions_dir: false,
    };
    let shown = args.file.as_deref().unwrap_or(&checked.file).display();
    let (tx, rx) = std::sync::mpsc::channel();
    let delivery = Delivery::new(tx.clone());
    let (view, served): (Arc<dyn FsView>, Served) = if checked.dir {
        let mopts = MultiOptions {
            session: opts,
            max_index_memory: args.max_index_memory,
            max_loaded: sessions_loadable(),
        };
        let multi = match &checked.agents {
            Some(agents) => MultiView::open_agents(agents, mopts),
            None => MultiView::open(&checked.file, mopts),
        }
        .map_err(|e| Failure::new(exit::FILE, format!("{shown}: {}", io_msg(&e))))?;
        let warning = match &checked.agents {
            Some(a) => no_agent_sessions_warning(a),
            None => no_sessions_warning(&checked.file, &checked.shown),
        };
        if ready.is_none()
            && let Some(w) = warning
        {
            eprintln!("sessionfs: warning: {w}");
        }
        let multi = Arc::new(multi);
        multi.set_invalidation_sink(tx);
        (multi.clone(), Served::All(multi))
    } else {
        let one = SessionView::open(&checked.file, opts).map_err(|e| {
            let code = match e {
                LoadError::Io(_) => exit::FILE,
                _ => exit::NOT_A_SESSION,
            };
            let msg = match &e {
                LoadError::Io(io) => io_msg(io),
                other => other.to_string(),
            };
            Failure::new(code, format!("{shown}: {msg}"))
        })?;
        let one = Arc::new(one);
        one.set_invalidation_sink(tx);
        (one.clone(), Served::One(one))
    };

    // After the load (whose freed buffers are trimmed as before), before the threads
    // that answer the kernel exist.
    pad_thread_heaps();

    // Handlers go in before the mount exists, so that no signal can leave it behind.
    let signals = Signals::install().map_err(|e| {
        Failure::new(
            exit::FAILED,
            format!("cannot install signal handlers: {}", io_msg(&e)),
        )
    })?;

    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::FSName("sessionfs".into()),
        MountOption::Subtype("sessionfs".into()),
        MountOption::DefaultPermissions,
        MountOption::NoExec,
        MountOption::NoSuid,
        MountOption::NoDev,
        // Access times mean nothing here, and keeping them costs a GETATTR each time a
        // cached file is opened and stat'ed again (every file of a second `grep -r`).
        MountOption::NoAtime,
    ];
    if args.read_only {
        config.mount_options.push(MountOption::RO);
    }
    config.n_threads = Some(FUSE_THREADS);
    config.clone_fd = true;
    config.acl = if args.allow_other {
        SessionACL::All
    } else {
        SessionACL::Owner
    };

    // fuser unmounts when the session ends, and warns when that fails, which it does
    // whenever the kernel is a moment ahead (after `umount MOUNTPOINT`). The unmounter
    // lives in this slot instead, taken by whoever ends the session first.
    let slot: UnmountSlot = Arc::new(parking_lot::Mutex::new(None));
    let hook_slot = Arc::clone(&slot);
    let hook_mp = checked.mount_point.clone();
    let adapter = Adapter::new(view, args.read_only)
        .with_delivery(Arc::clone(&delivery))
        .on_destroy(move || unmount(&hook_slot, &hook_mp));
    let mut session = Session::new(adapter, &checked.mount_point, &config).map_err(|e| {
        Failure::new(
            exit::FAILED,
            format!(
                "cannot mount on {}: {}",
                args.mount_point.display(),
                io_msg(&e)
            ),
        )
    })?;
    info!(
        "mounted {} on {}",
        checked.file.display(),
        checked.mount_point.display()
    );

    // From here on the mount exists: every exit path below unmounts.
    *slot.lock() = Some(session.unmount_callable());
    let served = serve(
        session,
        (rx, delivery),
        &served,
        &checked,
        &signals,
        ready,
        &slot,
    );
    unmount(&slot, &checked.mount_point);
    served
}

/// How much more than it needs a thread's malloc heap grows by at a time.
const HEAP_PAD: i32 = 4 << 20;

/// Lets each request thread's malloc heap grow in steps of [`HEAP_PAD`] instead of
/// glibc's 128 KiB.
///
/// glibc gives every thread that allocates its own arena, and grows an arena's heap
/// with one `mprotect` per step. The first `context` read in a fresh mount builds a
/// few MB of JSON values on a request thread whose arena is new: about 500 `mprotect`
/// calls, each splitting and merging the heap's mapping, a quarter of that request's
/// CPU time at the deepest leaf of a 100k-entry session (`scripts/measure-tree-context`;
/// perf showed the time in `sysmalloc` and `mprotect_fixup`). With the pad a new
/// arena starts with 4 MB of address space made usable in one call. Only touched pages
/// cost memory: what a trim keeps in a heap grows by at most the pad, which is why this
/// runs after the session is loaded, not before the load's buffers are freed.
///
/// Setting the pad also freezes glibc's mmap threshold where the load left it, which
/// is what it would mostly stay at anyway.
fn pad_thread_heaps() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a malloc parameter; no allocation is in flight here
    // that depends on it.
    if unsafe { libc::mallopt(libc::M_TOP_PAD, HEAP_PAD) } != 1 {
        debug!("mallopt(M_TOP_PAD) refused; thread heaps grow in glibc's steps");
    }
}

/// What is mounted, for the watcher.
enum Served {
    One(Arc<SessionView>),
    All(Arc<MultiView>),
}

/// The running watcher of either kind.
enum AnyWatcher {
    One(Watcher),
    All(DirWatcher),
}

impl AnyWatcher {
    fn stop(self) {
        match self {
            AnyWatcher::One(w) => w.stop(),
            AnyWatcher::All(w) => w.stop(),
        }
    }
}

/// Runs the session and its helper threads until a signal or an external unmount.
fn serve(
    session: Session<Adapter>,
    // The views' invalidations, and where the notifier reports its progress.
    (rx, delivery): (
        std::sync::mpsc::Receiver<crate::view::Invalidation>,
        Arc<Delivery>,
    ),
    served: &Served,
    checked: &Checked,
    signals: &Signals,
    ready: &mut Option<ReadyPipe>,
    unmounter: &UnmountSlot,
) -> Result<(), Failure> {
    let fail = |what: &str, e: io::Error| {
        Failure::new(
            exit::FAILED,
            format!("cannot start the {what} thread: {}", io_msg(&e)),
        )
    };
    // The notifier must be taken before the session starts running.
    let notify_thread =
        NotifierThread::spawn(session.notifier(), rx, delivery).map_err(|e| fail("notifier", e))?;
    let (done_rx, done_tx) = pipe(true).map_err(|e| fail("session", e))?;
    let session_thread = std::thread::Builder::new()
        .name("sessionfs-fuse".into())
        .spawn(move || {
            let result = session.run();
            let _ = write_all(done_tx.as_raw_fd(), b"x");
            result
        })
        .map_err(|e| fail("session", e))?;
    // What the watchers see change is indexed for `sessionfs grep`, off the requests
    // (none with SESSIONFS_CACHE=off or SESSIONFS_INDEX=off).
    let keeper = crate::search::fresh::Keeper::start().map(Arc::new);
    let watcher = match served {
        Served::One(view) => {
            let v = Arc::clone(view);
            let container = crate::model::core::catalog::file_of(&checked.file);
            // A session of a database is no file the index covers.
            let k = keeper.clone().filter(|_| container == checked.file);
            let file = checked.file.clone();
            let refresh = move || {
                let r = v
                    .refresh()
                    .map_err(|e| io_msg(&io::Error::from_raw_os_error(e.errno())));
                if let Some(k) = &k {
                    k.changed(&file);
                }
                r
            };
            // A session that writes beside its file (Claude Code's subagents).
            let dirs = view.with_session(|s| s.watched_dirs());
            let w = if container != checked.file {
                // A session of a database: the database, and its folder (its `-wal`).
                let v = Arc::clone(view);
                let dirs = Box::new(move || v.with_session(|s| s.watched_dirs()));
                Watcher::spawn_with_dirs(&container, dirs, refresh)
            } else if view.with_session(|s| s.writes_side_folder()) {
                Watcher::spawn_with_side(&checked.file, refresh)
            } else if dirs.len() > 1 {
                // A session over files in several folders (a Codex thread's pages).
                let v = Arc::clone(view);
                let dirs = Box::new(move || v.with_session(|s| s.watched_dirs()));
                Watcher::spawn_with_dirs(&checked.file, dirs, refresh)
            } else {
                Watcher::spawn(&checked.file, refresh)
            }
            .map_err(|e| fail("watcher", e))?;
            // Catch up with whatever was appended between loading and watching.
            if let Err(e) = view.refresh() {
                debug!("refreshing after mounting: {e:?}");
            }
            AnyWatcher::One(w)
        }
        Served::All(view) => {
            if let Some(k) = keeper.clone() {
                view.on_session_changed(Box::new(move |p| k.changed(p)));
            }
            AnyWatcher::All(DirWatcher::spawn(Arc::clone(view)).map_err(|e| fail("watcher", e))?)
        }
    };

    match ready.take() {
        Some(pipe) => pipe.ready(),
        // In the foreground, say once what is where, and how to end it (in the
        // background, the parent says it once the mount answers).
        None => eprintln!(
            "sessionfs: {} (or Ctrl-C here)",
            mounted_message(&checked.shown, &checked.mount_point)
        ),
    }

    // Wait for a signal, or for the session to end (external umount).
    let mut ended = false;
    loop {
        match poll_readable(&[signals.fd(), done_rx.as_raw_fd()], None) {
            Ok(r) if r[1] => {
                ended = true;
                break;
            }
            Ok(r) if r[0] => {
                let sig = signals.drain();
                info!(
                    "received {}; unmounting {}",
                    signal_name(sig),
                    checked.mount_point.display()
                );
                break;
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                warn!("waiting for signals: {e}; unmounting");
                break;
            }
        }
    }
    watcher.stop();

    let mut result = Ok(());
    if !ended {
        // Unmount now so that the kernel ends the session; if the mount is busy the
        // unmount is lazy, and the kernel gets a moment to finish it.
        unmount(unmounter, &checked.mount_point);
        let deadline = Instant::now() + SHUTDOWN_GRACE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match poll_readable(&[signals.fd(), done_rx.as_raw_fd()], Some(left)) {
                Ok(r) if r[1] => {
                    ended = true;
                    break;
                }
                Ok(r) if r[0] => {
                    signals.drain();
                    break; // a second signal: stop waiting
                }
                Ok(_) if left.is_zero() => break,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if !ended {
            warn!(
                "{} is still in use; exiting anyway (programs still inside it will see \
                 \"Transport endpoint is not connected\")",
                checked.mount_point.display()
            );
        }
    }
    if ended {
        match session_thread.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                result = Err(Failure::new(
                    exit::FAILED,
                    format!("the FUSE session ended with an error: {}", io_msg(&e)),
                ))
            }
            Err(_) => {
                result = Err(Failure::new(
                    exit::FAILED,
                    "the FUSE session thread panicked",
                ))
            }
        }
    }
    notify_thread.stop();
    result
}

/// Where the session's unmounter waits for whoever ends the session first.
type UnmountSlot = Arc<parking_lot::Mutex<Option<SessionUnmounter>>>;

/// Unmounts through fuser (which uses fusermount3 when not root), with a lazy
/// unmount as the fallback when the mount is busy. Only the first call does
/// anything; an unmount the kernel already finished is not an error.
fn unmount(slot: &UnmountSlot, mp: &Path) {
    // Taken out first: the lock is not held across the unmount.
    let Some(mut unmounter) = slot.lock().take() else {
        return;
    };
    let Err(e) = unmounter.unmount() else { return };
    if e.raw_os_error() == Some(libc::EINVAL) {
        debug!("{} was already unmounted", mp.display());
        return;
    }
    debug!("unmounting {}: {e}; detaching lazily", mp.display());
    let Ok(c) = CString::new(mp.as_os_str().as_bytes()) else {
        return;
    };
    // SAFETY: `c` is a valid C string.
    if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINVAL) {
            warn!("cannot unmount {}: {e}", mp.display());
        }
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

// ---------------------------------------------------------------------------------
// Signals, through a self-pipe.

/// The write end of the signal pipe, for the handler.
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(sig: libc::c_int) {
    let fd = SIGNAL_PIPE.load(Ordering::Relaxed);
    if fd >= 0 {
        // SAFETY: write(2) and errno access are async-signal-safe; the byte is live.
        unsafe {
            let saved = *libc::__errno_location();
            let b = sig as u8;
            libc::write(fd, (&b as *const u8).cast(), 1);
            *libc::__errno_location() = saved;
        }
    }
}

/// `SIGINT`, `SIGTERM` and `SIGHUP`, delivered as bytes on a pipe.
struct Signals {
    read: OwnedFd,
    _write: OwnedFd,
}

impl Drop for Signals {
    fn drop(&mut self) {
        // The pipe is about to close: from now on the handler drops signals rather
        // than write to a descriptor number that may be reused.
        SIGNAL_PIPE.store(-1, Ordering::SeqCst);
    }
}

impl Signals {
    fn install() -> io::Result<Signals> {
        let (read, write) = pipe(true)?;
        SIGNAL_PIPE.store(write.as_raw_fd(), Ordering::SeqCst);
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: a zeroed sigaction is valid; the handler is async-signal-safe.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                sa.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut sa.sa_mask);
                if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
        }
        Ok(Signals {
            read,
            _write: write,
        })
    }

    fn fd(&self) -> RawFd {
        self.read.as_raw_fd()
    }

    /// Empties the pipe; returns the last signal received (0 if none).
    fn drain(&self) -> i32 {
        let mut last = 0;
        let mut buf = [0u8; 64];
        loop {
            // SAFETY: reads into a live buffer from a non-blocking pipe we own.
            let n = unsafe { libc::read(self.fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                return last;
            }
            last = i32::from(buf[n as usize - 1]);
        }
    }
}

// ---------------------------------------------------------------------------------
// --background.

fn run_background(args: &MountArgs) -> Result<(), Failure> {
    let fail = |what: &str, e: io::Error| {
        Failure::new(
            exit::FAILED,
            format!(
                "cannot start the background process: {what}: {}",
                io_msg(&e)
            ),
        )
    };
    let (ready_rx, ready_tx) = pipe(false).map_err(|e| fail("pipe", e))?;
    // The child must find the descriptor above standard input, output and error.
    let ready_tx = if ready_tx.as_raw_fd() < 3 {
        // SAFETY: duplicates a descriptor we own; the result is checked.
        let fd = unsafe { libc::fcntl(ready_tx.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
        if fd < 0 {
            return Err(fail("pipe", io::Error::last_os_error()));
        }
        // SAFETY: `fd` is new and ours.
        unsafe { OwnedFd::from_raw_fd(fd) }
    } else {
        ready_tx
    };
    let ready_fd = ready_tx.as_raw_fd();

    let exe = std::env::current_exe().map_err(|e| fail("finding sessionfs itself", e))?;
    let mut cmd = Command::new(exe);
    cmd.arg("mount");
    if let Some(file) = &args.file {
        cmd.arg(file);
    }
    cmd.arg(&args.mount_point);
    if args.read_only {
        cmd.arg("--read-only");
    }
    if args.allow_other {
        cmd.arg("--allow-other");
    }
    cmd.arg("--max-reply").arg(args.max_reply.to_string());
    cmd.arg("--max-index-memory")
        .arg(args.max_index_memory.to_string());
    cmd.arg("--max-line")
        .arg(crate::model::input::max_line().to_string());
    if let Some(p) = &args.prices {
        cmd.arg("--prices").arg(p);
    }
    cmd.env(READY_FD_VAR, ready_fd.to_string());
    cmd.stdin(Stdio::null()).stdout(Stdio::null());
    match &args.log {
        Some(path) => {
            let f = fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| {
                    Failure::new(exit::FAILED, format!("{}: {}", path.display(), io_msg(&e)))
                })?;
            cmd.stderr(f);
        }
        None => {
            cmd.stderr(Stdio::null());
        }
    }
    // SAFETY: setsid and fcntl are async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::fcntl(ready_fd, libc::F_SETFD, 0) < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().map_err(|e| fail("spawn", e))?;
    drop(ready_tx);

    let deadline = Instant::now() + BACKGROUND_DEADLINE;
    let report = read_report(&ready_rx, deadline);
    match report {
        Report::Ready => {}
        Report::Failed(msg) => {
            let code = wait_child(&mut child, Duration::from_secs(2))
                .and_then(|s| s.code())
                .and_then(|c| u8::try_from(c).ok())
                .filter(|&c| c != 0)
                .unwrap_or(exit::FAILED);
            return Err(Failure::new(code, msg));
        }
        Report::Silent => {
            let status = wait_child(&mut child, Duration::from_secs(2));
            return Err(Failure::new(
                exit::FAILED,
                match status {
                    Some(s) => {
                        format!("the background process ended ({s}) before the mount was ready")
                    }
                    None => "the background process closed its report pipe without a word".into(),
                },
            ));
        }
        Report::TimedOut => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Failure::new(
                exit::FAILED,
                format!(
                    "the mount was not ready within {} s; gave up",
                    BACKGROUND_DEADLINE.as_secs()
                ),
            ));
        }
    }

    // The child says the mount exists; check that it answers.
    let mp = &args.mount_point;
    let answers = || {
        let (Ok(m), Some(parent)) = (
            fs::metadata(mp),
            fs::canonicalize(mp)
                .ok()
                .and_then(|a| a.parent().map(Path::to_path_buf)),
        ) else {
            return false;
        };
        let Ok(p) = fs::metadata(parent) else {
            return false;
        };
        // A session answers for `session.json`, a sessions directory for its stats.
        m.dev() != p.dev()
            && (fs::metadata(mp.join("session.json")).is_ok()
                || fs::metadata(mp.join(STATS_NAME)).is_ok())
    };
    loop {
        if answers() {
            let agents = match &args.file {
                Some(_) => None,
                None => check_agents().ok(),
            };
            let warning = match (&args.file, &agents) {
                (Some(f), _) if f.is_dir() => no_sessions_warning(f, &f.display().to_string()),
                (Some(_), _) => None,
                (None, a) => a.as_deref().and_then(no_agent_sessions_warning),
            };
            if let Some(w) = warning {
                eprintln!("sessionfs: warning: {w}");
            }
            // As the foreground mount says it, once: what is where, how to end it.
            let shown = match (&args.file, &agents) {
                (Some(f), _) => f.display().to_string(),
                (None, Some(a)) => sessions_dir::agents_shown(a),
                (None, None) => "the agents' sessions".to_string(),
            };
            let abs = fs::canonicalize(mp).unwrap_or_else(|_| mp.clone());
            eprintln!("sessionfs: {}", mounted_message(&shown, &abs));
            return Ok(());
        }
        if Instant::now() >= deadline {
            // SAFETY: plain syscall on our child's pid.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let _ = wait_child(&mut child, Duration::from_secs(3));
            return Err(Failure::new(
                exit::FAILED,
                format!(
                    "{} was mounted but did not answer within {} s; unmounted it again",
                    mp.display(),
                    BACKGROUND_DEADLINE.as_secs()
                ),
            ));
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(Failure::new(
                exit::FAILED,
                format!("the background process ended ({status}) right after mounting"),
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

enum Report {
    Ready,
    Failed(String),
    /// The pipe closed with nothing in it: the child died.
    Silent,
    TimedOut,
}

fn read_report(rx: &OwnedFd, deadline: Instant) -> Report {
    let mut got = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match poll_readable(&[rx.as_raw_fd()], Some(left)) {
            Ok(r) if r[0] => {}
            Ok(_) if left.is_zero() => return Report::TimedOut,
            Ok(_) => continue,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return Report::Silent,
        }
        let mut buf = [0u8; 4096];
        // SAFETY: reads into a live buffer from a pipe we own.
        let n = unsafe { libc::read(rx.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Report::Silent;
        }
        if n == 0 {
            return match got.first() {
                Some(b'R') => Report::Ready,
                Some(b'E') => Report::Failed(String::from_utf8_lossy(&got[1..]).into_owned()),
                _ => Report::Silent,
            };
        }
        got.extend_from_slice(&buf[..n as usize]);
        if got.first() == Some(&b'R') {
            return Report::Ready;
        }
    }
}

fn wait_child(
    child: &mut std::process::Child,
    limit: Duration,
) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => return None,
        }
    }
}

/// The environment variable that names the report pipe's descriptor to the
/// background child.
const READY_FD_VAR: &str = "SESSIONFS_READY_FD";

/// The report pipe's descriptor a `--background` parent gave this process, taken out
/// of the environment (so that nothing this process starts inherits the name).
pub fn take_ready_fd() -> Option<i32> {
    let v = std::env::var(READY_FD_VAR).ok()?;
    // SAFETY: no other thread runs yet (called at the start of `mount`).
    unsafe { std::env::remove_var(READY_FD_VAR) };
    v.parse().ok()
}

/// The child's end of the report pipe.
struct ReadyPipe(fs::File);

impl ReadyPipe {
    /// Takes ownership of the descriptor named by `SESSIONFS_READY_FD`, if it is open.
    fn adopt(fd: i32) -> Option<ReadyPipe> {
        // SAFETY: F_GETFD only inspects the descriptor.
        if fd < 3 || unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
            return None;
        }
        // SAFETY: the parent gave us this descriptor for us alone; keep it from
        // leaking into anything we run.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
        // SAFETY: as above: it is open and nobody else in this process owns it.
        Some(ReadyPipe(unsafe { fs::File::from_raw_fd(fd) }))
    }

    fn ready(mut self) {
        let _ = self.0.write_all(b"R");
    }

    fn fail(mut self, message: &str) {
        let _ = self.0.write_all(format!("E{message}").as_bytes());
    }
}

// ---------------------------------------------------------------------------------
// Small wrappers over libc.

/// A pipe, close-on-exec; `nonblocking` for both ends. Returns (read, write).
fn pipe(nonblocking: bool) -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    let flags = libc::O_CLOEXEC | if nonblocking { libc::O_NONBLOCK } else { 0 };
    // SAFETY: `fds` is a live array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), flags) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and ours.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn write_all(fd: RawFd, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: the descriptor is borrowed for the duration of the write only.
    let mut f = std::mem::ManuallyDrop::new(unsafe { fs::File::from_raw_fd(fd) });
    f.write_all(bytes)
}

/// Waits until one of `fds` is readable (or hung up), or `timeout` passes.
fn poll_readable(fds: &[RawFd], timeout: Option<Duration>) -> io::Result<Vec<bool>> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ms = match timeout {
        None => -1,
        Some(t) => t.as_millis().min(i32::MAX as u128) as i32,
    };
    // SAFETY: `pfds` is a live array of `pfds.len()` pollfds.
    let n = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, ms) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(pfds.iter().map(|p| p.revents != 0).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("16777216"), Ok(16 << 20));
        assert_eq!(parse_size("16M"), Ok(16 << 20));
        assert_eq!(parse_size("16MiB"), Ok(16 << 20));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert!(parse_size("").is_err());
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("-1").is_err());
    }

    #[test]
    fn mount_point_checks() {
        let d = tempfile::tempdir().unwrap();
        let missing = d.path().join("nope");
        assert_eq!(
            check_mount_point(&missing).unwrap_err().code,
            exit::MOUNT_POINT
        );
        let file = d.path().join("f");
        fs::write(&file, "x").unwrap();
        assert_eq!(
            check_mount_point(&file).unwrap_err().code,
            exit::MOUNT_POINT
        );
        assert_eq!(
            check_mount_point(d.path()).unwrap_err().code,
            exit::NOT_EMPTY
        );
        let empty = d.path().join("empty");
        fs::create_dir(&empty).unwrap();
        assert_eq!(
            check_mount_point(&empty).unwrap(),
            fs::canonicalize(&empty).unwrap()
        );
        assert_eq!(
            check_mount_point(Path::new("/")).unwrap_err().code,
            exit::MOUNTED
        );
        assert_eq!(
            check_mount_point(Path::new("/proc")).unwrap_err().code,
            exit::MOUNTED
        );
    }

    #[test]
    fn file_checks() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(
            check_source(&d.path().join("nope")).unwrap_err().code,
            exit::FILE
        );
        assert_eq!(
            check_source(d.path()).unwrap(),
            (fs::canonicalize(d.path()).unwrap(), true)
        );
        assert!(check_fuse_device(&d.path().join("fuse")).is_err());
    }
}
