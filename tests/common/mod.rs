//! The harness for tests that mount a session and use it through real programs.
//!
//! [`Mount::new`] copies a fixture into a fresh temporary directory, starts the built
//! `sessionfs mount FILE MNT` in the foreground as a child process, and waits (with a
//! deadline, polling) until the mount answers. Dropping the [`Mount`], also while a
//! test panics, unmounts it, stops the child and removes the directory. Nothing here
//! sleeps blindly: every wait polls a condition under a deadline.
//!
//! Stale mounts: mount points live in fresh temporary directories, so a mount left
//! behind by an earlier, killed run can never collide with a new one. Dead ones
//! ("Transport endpoint is not connected") under the temporary directory with this
//! harness's prefix are lazily unmounted the first time a mount is made, so that they
//! do not trouble tools that walk `/tmp` either.
#![allow(dead_code)]

use std::ffi::{CString, OsStr};
use std::fs;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Once;
use std::time::{Duration, Instant};

/// How long a mount may take to answer, a command to run, or a change to show: a
/// hang detector, not a speed limit. Generous, because a 2-core machine running
/// builds and other test binaries at once can be ten times slower than an idle one
/// (a `sh` reading a hundred contexts took over 20 s there); waits end as soon as
/// their condition holds, so passing tests never wait this long. Speed is measured
/// by the benchmarks in `scripts/`, never asserted by tests.
pub const DEADLINE: Duration = Duration::from_secs(120);

/// Prefix of every temporary directory this harness makes.
const PREFIX: &str = "sessionfs-test-";

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_sessionfs")
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sessions")
        .join(name)
}

/// A fresh temporary directory with the harness's prefix.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(PREFIX)
        .tempdir()
        .expect("creating a temporary directory")
}

/// Copies the directory `from` to `to`, with everything in it (a sessions directory,
/// a session's side folder).
pub fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &t);
        } else {
            fs::copy(e.path(), &t).unwrap();
        }
    }
}

/// A mounted session.
pub struct Mount {
    /// The temporary directory holding `file`, `mnt` and `stderr`; `None` once
    /// deliberately leaked (see `Drop`).
    dir: Option<tempfile::TempDir>,
    /// The session file (a copy of the fixture).
    pub file: PathBuf,
    /// The mount point.
    pub mnt: PathBuf,
    /// Where the child's standard error goes.
    pub stderr: PathBuf,
    child: Option<Child>,
}

impl Mount {
    /// Mounts a copy of `tests/fixtures/sessions/NAME`.
    pub fn new(name: &str) -> Mount {
        Mount::with_args(name, &[])
    }

    /// As [`new`](Self::new), with extra arguments for `sessionfs mount`.
    pub fn with_args(name: &str, args: &[&str]) -> Mount {
        let dir = tempdir();
        let file = dir.path().join(name);
        fs::copy(fixture(name), &file).expect("copying the fixture");
        Mount::start(dir, file, args)
    }

    /// Mounts `file`, which lives in `dir`, on `dir/mnt`.
    pub fn start(dir: tempfile::TempDir, file: PathBuf, args: &[&str]) -> Mount {
        Mount::start_with_env(dir, file, args, &[])
    }

    /// As [`with_args`](Self::with_args), with variables added to the environment of
    /// `sessionfs mount` (`RUST_LOG=debug` logs every request to [`stderr`](Self::stderr)).
    pub fn with_env(name: &str, args: &[&str], envs: &[(&str, &str)]) -> Mount {
        let dir = tempdir();
        let file = dir.path().join(name);
        fs::copy(fixture(name), &file).expect("copying the fixture");
        Mount::start_with_env(dir, file, args, envs)
    }

    /// As [`start`](Self::start), with variables added to the environment.
    pub fn start_with_env(
        dir: tempfile::TempDir,
        file: PathBuf,
        args: &[&str],
        envs: &[(&str, &str)],
    ) -> Mount {
        let mut cmd = Command::new(bin());
        cmd.arg("mount")
            .arg(&file)
            .arg(dir.path().join("mnt"))
            .args(args)
            .envs(envs.iter().copied());
        Mount::launch(dir, file, cmd, answers)
    }

    /// How many requests of each kind (`OPEN`, `READ`, …) the mount received so far,
    /// from its debug log: the mount must have been made with `RUST_LOG=debug`.
    pub fn requests(&self) -> std::collections::HashMap<String, usize> {
        let mut n = std::collections::HashMap::new();
        for line in self.stderr_text().lines() {
            let Some(rest) = line
                .split_once("fuser::request: FUSE(")
                .or_else(|| line.split_once("fuser::request] FUSE("))
                .map(|(_, r)| r)
            else {
                continue;
            };
            // `  6) ino 0x0000000000000001 LOOKUP name "tree" thread=fuser-1`
            if let Some(op) = rest.split_whitespace().nth(3) {
                *n.entry(op.to_string()).or_insert(0) += 1;
            }
        }
        n
    }

    /// Starts `cmd`, a `sessionfs mount` onto `dir/mnt` (created here), with its stderr
    /// kept in `dir/stderr`, and waits until `ready(mnt)` or the process exits (which
    /// fails the test with what it printed).
    fn launch(
        dir: tempfile::TempDir,
        file: PathBuf,
        mut cmd: Command,
        ready: impl Fn(&Path) -> bool,
    ) -> Mount {
        clean_stale_mounts();
        let mnt = dir.path().join("mnt");
        fs::create_dir(&mnt).expect("creating the mount point");
        let stderr = dir.path().join("stderr");
        let err = fs::File::create(&stderr).expect("creating the stderr file");
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err)
            .spawn()
            .expect("starting sessionfs");
        let mut m = Mount {
            dir: Some(dir),
            file,
            mnt,
            stderr,
            child: Some(child),
        };
        let ok = wait_until(DEADLINE, || {
            if let Some(Ok(Some(_))) = m.child.as_mut().map(Child::try_wait) {
                return true; // exited: reported below
            }
            ready(&m.mnt)
        });
        if let Some(Ok(Some(status))) = m.child.as_mut().map(Child::try_wait) {
            panic!(
                "sessionfs mount exited early ({status}): {}",
                m.stderr_text()
            );
        }
        assert!(
            ok,
            "the mount did not answer within {DEADLINE:?}: {}",
            m.stderr_text()
        );
        m
    }

    /// A path inside the mount.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.mnt.join(rel)
    }

    /// The temporary directory holding the session file and the mount point.
    pub fn dir(&self) -> &Path {
        self.dir
            .as_ref()
            .map(|d| d.path())
            .unwrap_or_else(|| self.mnt.parent().unwrap())
    }

    /// What the child wrote to standard error so far.
    pub fn stderr_text(&self) -> String {
        fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("child").id()
    }

    /// Sends `sig` to the sessionfs process.
    pub fn signal(&self, sig: i32) {
        // SAFETY: plain syscall on our own child.
        unsafe { libc::kill(self.pid() as i32, sig) };
    }

    /// Waits for the sessionfs process to exit; `None` if it did not in time.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let child = self.child.as_mut()?;
        let mut status = None;
        wait_until(limit, || {
            status = child.try_wait().ok().flatten();
            status.is_some()
        });
        if status.is_some() {
            self.child = None;
        }
        status
    }

    /// Whether the mount point is (still) a mount point.
    pub fn is_mounted(&self) -> bool {
        is_mount_point(&self.mnt)
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if is_mount_point(&self.mnt) || is_dead_mount(&self.mnt) {
            unmount(&self.mnt);
        }
        if let Some(mut child) = self.child.take() {
            // After the unmount the process ends by itself; if not, end it.
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                match child.try_wait() {
                    Ok(Some(_)) => break,
                    Ok(None) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(10))
                    }
                    _ => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break;
                    }
                }
            }
        }
        // Removing the directory while something is still mounted in it would walk
        // into the mount: leave the directory behind instead.
        if is_mount_point(&self.mnt) || is_dead_mount(&self.mnt) {
            unmount(&self.mnt);
            if is_mount_point(&self.mnt) {
                eprintln!(
                    "warning: {} is still mounted; leaving it",
                    self.mnt.display()
                );
                if let Some(d) = self.dir.take() {
                    let _ = d.keep();
                }
            }
        }
    }
}

/// Whether `mnt` is a mount point answering for a session.
pub fn answers(mnt: &Path) -> bool {
    is_mount_point(mnt) && fs::metadata(mnt.join("session.json")).is_ok()
}

/// Whether `p` is a mount point (its device differs from its parent's).
pub fn is_mount_point(p: &Path) -> bool {
    let (Ok(m), Some(parent)) = (fs::metadata(p), p.parent()) else {
        return false;
    };
    fs::metadata(parent).is_ok_and(|pm| pm.dev() != m.dev())
}

/// Whether `p` is a FUSE mount whose server is gone.
pub fn is_dead_mount(p: &Path) -> bool {
    matches!(fs::metadata(p), Err(e) if e.raw_os_error() == Some(libc::ENOTCONN))
}

/// Unmounts `p` lazily; as root with umount2(2), else with `fusermount3 -u -z`.
pub fn unmount(p: &Path) {
    let c = CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a valid C string.
    if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } == 0 {
        return;
    }
    let _ = Command::new("fusermount3")
        .args([OsStr::new("-u"), OsStr::new("-z"), p.as_os_str()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Lazily unmounts dead sessionfs mounts that earlier runs left under the
/// temporary directory. Live mounts (perhaps another run's, right now) are left alone.
pub fn clean_stale_mounts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let Ok(info) = fs::read_to_string("/proc/self/mountinfo") else {
            return;
        };
        let tmp = std::env::temp_dir();
        for line in info.lines() {
            let fields: Vec<&str> = line.split(' ').collect();
            let Some(sep) = fields.iter().position(|f| *f == "-") else {
                continue;
            };
            let (Some(point), Some(source)) = (fields.get(4), fields.get(sep + 2)) else {
                continue;
            };
            let point = PathBuf::from(unescape_mountinfo(point));
            let ours = *source == "sessionfs"
                && point.starts_with(&tmp)
                && point.to_string_lossy().contains(PREFIX);
            if ours && is_dead_mount(&point) {
                unmount(&point);
            }
        }
    });
}

/// Mountinfo escapes space, tab, newline and backslash as octal.
fn unescape_mountinfo(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Polls `cond` every few milliseconds until it holds or `limit` passes; returns
/// whether it held.
pub fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The outcome of a command.
#[derive(Debug)]
pub struct Output {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// Panics with everything known unless the command succeeded.
    #[track_caller]
    pub fn ok(self) -> Output {
        assert!(self.status.success(), "command failed: {self:#?}");
        self
    }
}

/// Runs `cmd args` in `cwd` with no input; kills it after [`DEADLINE`] (a hung
/// mount must fail the test, not hang it).
pub fn run<S: AsRef<OsStr>>(cmd: impl AsRef<OsStr>, args: &[S], cwd: &Path) -> Output {
    let mut c = Command::new(cmd.as_ref());
    c.args(args).current_dir(cwd);
    run_command(c)
}

/// `ls -1a DIR` without `.` and `..`, or `None` when `ls` fails: for waiting on a
/// listing to change. While the mount reloads a session file that was replaced, a path
/// the kernel still has cached can answer ESTALE (its old inode is gone) for the few
/// milliseconds until the notifier has dropped the old names.
pub fn try_ls(dir: &Path) -> Option<Vec<String>> {
    let out = run("ls", &[OsStr::new("-1a"), dir.as_os_str()], Path::new("/"));
    out.status.success().then(|| {
        out.stdout
            .lines()
            .filter(|l| *l != "." && *l != "..")
            .map(str::to_owned)
            .collect()
    })
}

/// Runs a `sh -c` script in `cwd`.
pub fn sh(script: &str, cwd: &Path) -> Output {
    run("sh", &["-c", script], cwd)
}

/// Runs a prepared command with no input, capturing its output, under [`DEADLINE`].
pub fn run_command(mut c: Command) -> Output {
    let what = format!("{c:?}");
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {what}: {e}"));
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let err_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let mut status = None;
    let finished = wait_until(DEADLINE, || {
        status = child.try_wait().ok().flatten();
        status.is_some()
    });
    if !finished {
        let _ = child.kill();
        let _ = child.wait();
        panic!("{what} did not finish within {DEADLINE:?}");
    }
    let stdout = String::from_utf8_lossy(&out_t.join().unwrap()).into_owned();
    let stderr = String::from_utf8_lossy(&err_t.join().unwrap()).into_owned();
    Output {
        status: status.unwrap(),
        stdout,
        stderr,
    }
}

/// `sessionfs ARGS` under [`DEADLINE`].
pub fn sessionfs<S: AsRef<OsStr>>(args: &[S], cwd: &Path) -> Output {
    run(bin(), args, cwd)
}

/// Whether we run as root (some tests need it to set up their conditions).
pub fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Opens `path` for writing (with `O_TRUNC`, as the shell's `>` does), writes all of
/// `data`, and closes it, returning the first error, *including one from `close(2)`*
/// (where a reply's append is reported; `std::fs::File` ignores that one).
pub fn write_then_close(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: plain syscalls on a descriptor opened and closed here; buffers are valid.
    unsafe {
        let fd = libc::open(c.as_ptr(), libc::O_WRONLY | libc::O_TRUNC | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut done = 0;
        while done < data.len() {
            let n = libc::write(fd, data[done..].as_ptr().cast(), data.len() - done);
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                libc::close(fd);
                return Err(e);
            }
            done += n as usize;
        }
        if libc::close(fd) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Whether `/proc/mounts` lists `p` as a mount point.
pub fn in_proc_mounts(p: &Path) -> bool {
    mount_options(p).is_some()
}

/// The options `/proc/mounts` gives for the mount on `p` (`rw,nosuid,…`), if any.
pub fn mount_options(p: &Path) -> Option<String> {
    let want = p.to_string_lossy();
    let mounts = fs::read_to_string("/proc/mounts").ok()?;
    mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split(' ').collect();
        (f.len() > 3 && unescape_mountinfo(f[1]) == want).then(|| f[3].to_owned())
    })
}

// ---------------------------------------------------------------------------------
// Mounts of a whole sessions directory.

impl Mount {
    /// Mounts the sessions directory `sessions` (normally inside `dir`) on `dir/mnt`:
    /// `sessionfs mount SESSIONS MNT ARGS`. With `sessions` `None`, runs
    /// `sessionfs mount MNT ARGS` (Pi's sessions directory, found through `envs`).
    /// Waits until the mount answers for its `.sessionfs-stats`.
    pub fn sessions_dir(
        dir: tempfile::TempDir,
        sessions: Option<&Path>,
        args: &[&str],
        envs: &[(&str, &OsStr)],
    ) -> Mount {
        let mut cmd = Command::new(bin());
        cmd.arg("mount");
        if let Some(s) = sessions {
            cmd.arg(s);
        }
        cmd.arg(dir.path().join("mnt"))
            .args(args)
            .envs(envs.iter().copied());
        let file = sessions.map_or_else(|| dir.path().to_path_buf(), Path::to_path_buf);
        Mount::launch(dir, file, cmd, |mnt| {
            is_mount_point(mnt) && fs::metadata(mnt.join(".sessionfs-stats")).is_ok()
        })
    }
}

/// A number from the environment (the stress knobs), or `default`.
pub fn env_num(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

/// The run's seed: `SESSIONFS_STRESS_SEED`, else from the clock (printed, to replay).
pub fn seed() -> u64 {
    let s = env_num(
        "SESSIONFS_STRESS_SEED",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
            % 1_000_000_007,
    );
    eprintln!("seed {s} (SESSIONFS_STRESS_SEED={s} replays it)");
    s
}

/// Fails clearly when python3, which drives the writer processes, is missing.
pub fn need_python3() {
    let ok = Command::new("python3")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "these tests need python3 for their writer processes");
}

/// The README's `console` block that holds `marker`.
pub fn readme_console_block(marker: &str) -> String {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    readme
        .split("```console\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .find(|b| b.contains(marker))
        .unwrap_or_else(|| panic!("a console block with {marker:?} in the README"))
        .to_string()
}

/// `s` with every id that is not in `known` (8 hex digits, or a UUID, standing alone
/// or inside a word such as `.id/ID`) written `ID`: ids a new reply gets are random.
fn mask_new_ids(s: &str, known: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        let is_id_byte = |c: u8| c.is_ascii_hexdigit() || c == b'-';
        let starts_word = i == 0 || !b[i - 1].is_ascii_alphanumeric();
        if starts_word && b[i].is_ascii_hexdigit() {
            let mut j = i;
            while j < b.len() && is_id_byte(b[j]) {
                j += 1;
            }
            let run = &s[i..j];
            let ends_word = j == b.len() || !b[j].is_ascii_alphanumeric();
            let uuid = run.len() == 36
                && run
                    .bytes()
                    .enumerate()
                    .all(|(k, c)| matches!(k, 8 | 13 | 18 | 23) == (c == b'-'));
            let short = run.len() == 8 && !run.contains('-');
            if ends_word && (uuid || short) && !known.contains(run) {
                out.push_str("ID");
                i = j;
                continue;
            }
        }
        let c = s[i..].chars().next().unwrap();
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// Runs a README console example with bash, one `$ ` command at a time (in `cwd`,
/// with `env`, `sessionfs` on the `PATH`, each `/tmp/` replaced by `tmp`), then
/// unmounts whatever of `mounts` is still mounted, and checks that each command
/// printed what the example shows: its lines in order (a line `…` stands for lines
/// left out; without one, exactly those lines), `ls` word by word in any order. An id
/// that is not in `known` (a new reply's) stands for any id.
pub fn check_console_example(
    block: &str,
    cwd: &Path,
    env: &[(&str, &OsStr)],
    tmp: &str,
    mounts: &[PathBuf],
    known: &str,
) {
    let mut steps: Vec<(String, Vec<String>)> = Vec::new();
    for l in block.lines() {
        match l.strip_prefix("$ ") {
            Some(c) => steps.push((c.to_string(), Vec::new())),
            None => steps.last_mut().unwrap().1.push(l.to_string()),
        }
    }
    let mut script = String::from("set -u\n");
    for (i, (c, _)) in steps.iter().enumerate() {
        script.push_str(&format!(
            "{}\necho '@@step {i}@@'\n",
            c.replace("/tmp/", tmp)
        ));
    }
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(&script).current_dir(cwd).env(
        "PATH",
        format!(
            "{}:{}",
            Path::new(bin()).parent().unwrap().display(),
            std::env::var("PATH").unwrap_or_default()
        ),
    );
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run_command(cmd);
    for m in mounts {
        if is_mount_point(m) {
            unmount(m);
        }
    }
    assert!(out.status.success(), "{}", out.stderr);
    let words = |s: &str| -> Vec<String> {
        mask_new_ids(s, known)
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    // The text before marker k is command k's output.
    let mut rest = out.stdout.as_str();
    for (i, (c, want)) in steps.iter().enumerate() {
        let marker = format!("@@step {i}@@\n");
        let (got, after) = rest.split_once(&marker).expect("every step ran");
        rest = after;
        // The command without a trailing comment.
        let c = c
            .split_once("  #")
            .map_or(c.as_str(), |(c, _)| c)
            .trim_end();
        let is_ls = c == "ls" || c.ends_with("&& ls") || c.starts_with("ls ");
        if is_ls {
            let mut w: Vec<String> = want.iter().flat_map(|l| words(l)).collect();
            let mut g = words(got);
            w.sort();
            g.sort();
            assert_eq!(g, w, "{c}");
            continue;
        }
        let got_lines: Vec<String> = got.lines().map(|l| mask_new_ids(l, known)).collect();
        let mut at = 0;
        for w in want {
            if w == "…" {
                continue;
            }
            let w = mask_new_ids(w, known);
            let found = got_lines[at..].iter().position(|g| *g == w);
            assert!(
                found.is_some(),
                "`{c}`: the README shows {w:?}, which it does not print (printed:\n{got})"
            );
            at += found.unwrap() + 1;
        }
        if !want.iter().any(|w| w == "…") {
            assert_eq!(got_lines.len(), want.len(), "`{c}` printed:\n{got}");
        }
    }
}

/// Appends `line` and its newline to `path`, as an agent appends one line.
pub fn append_line(path: &Path, line: &str) {
    use std::io::Write;
    let mut f = fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(line.as_bytes()).unwrap();
    f.write_all(b"\n").unwrap();
}

/// The `covers:` line of what `sessionfs index --status FILE` printed.
pub fn covers_line(status: &Output) -> String {
    status
        .stdout
        .lines()
        .find(|l| l.starts_with("covers:"))
        .unwrap_or_default()
        .to_string()
}

/// Standard base64 with padding, for the tests' lines.
pub use sessionfs::model::core::base64::encode as base64;

/// A PNG-like image whose bytes hold `text`.
pub fn png_with(text: &str) -> Vec<u8> {
    let mut png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x01".to_vec();
    png.extend_from_slice(text.as_bytes());
    png.extend_from_slice(b"\x00\xff\x10 tail");
    png
}

/// The session of Copilot CLI's `own` fixture home with two images, below the home.
pub const HELD_IMAGES_SESSION: &str =
    "session-state/c00645c2-ec2c-4ad0-ba5e-4b757f7e5fbf/events.jsonl";

/// Changes the assets of [`HELD_IMAGES_SESSION`] at `f` (its images are held by lines
/// of their own, `session.binary_asset`): the asset a later prompt names too (stored
/// before the first prompt) is stored again after both prompts with bytes holding
/// `qzheld-after` (the later line is the one shown), and the other asset's bytes are
/// replaced where they are by bytes holding `qzheld-before`.
pub fn held_images_session(f: &Path) {
    let text = fs::read_to_string(f).unwrap();
    let data = regex::Regex::new(r#""data":"iVBOR[A-Za-z0-9+/]*={0,2}""#).unwrap();
    let mut out = String::new();
    let mut shared = None;
    for line in text.lines() {
        if line.contains(r#""type":"session.binary_asset""#) && line.contains("sha256:2af4") {
            shared = Some(line.to_string());
            out.push_str(line);
        } else if line.contains(r#""type":"session.binary_asset""#) {
            let to = format!(r#""data":"{}""#, base64(&png_with("qzheld-before")));
            out.push_str(&data.replace(line, to.as_str()));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    let to = format!(r#""data":"{}""#, base64(&png_with("qzheld-after")));
    let shared = shared.expect("the shared asset");
    let again = data.replace(&shared, to.as_str());
    out.push_str(&again.replace(r#""id":"31847b99"#, r#""id":"31847b90"#));
    out.push('\n');
    fs::write(f, out).unwrap();
}
