//! Mounting as a user other than root, as most people do: through `fusermount3`,
//! with `/dev/fuse` open to everyone (mode 0666, as udev makes it on standard systems).
//!
//! Each test mounts as that user and drives the mount as that user with the real tools:
//! a session file and a sessions directory mounted, `ls`, `grep -r`, `echo > reply`,
//! `ln -s` into `labels/`, `fusermount3 -u` and `sessionfs unmount`, and `sessionfs`
//! exiting cleanly after each; a busy mount that `sessionfs unmount` leaves alone; and
//! the message a user gets when `/dev/fuse` is closed to them.
//!
//! Who the user is. Run by a user other than root, the tests are that user. Run by
//! root, they switch (with `setpriv`) to `$SESSIONFS_TEST_USER` (a name or a uid;
//! default `nobody`). Nothing of the machine is changed: when `/dev/fuse` is closed to
//! the user, root gives each test a private mount namespace (a thread of its own, and
//! the processes it starts) in which `/dev/fuse` is a fresh node of the same device
//! with the mode the test needs (0666, or 0600 for the refusal).
//!
//! What cannot be run here (`fuse3` not installed, no such user, not root and no access
//! to `/dev/fuse`) is reported as `ignored, not run: REASON`, in `cargo test`'s own
//! format: this binary has a small runner of its own (`harness = false`) so that the
//! reason shows without `--nocapture`. With `SESSIONFS_REQUIRE_NORMAL_USER=1` (CI sets
//! it) every such test fails instead.

mod common;

use common::*;
use std::ffi::{CString, OsStr};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// Set (to anything but `0`) to make every test that cannot run fail.
const REQUIRE: &str = "SESSIONFS_REQUIRE_NORMAL_USER";
/// The user root switches to.
const USER: &str = "SESSIONFS_TEST_USER";
/// A second unprivileged user, for the test of `--allow-other` (another user of the
/// machine reading the first one's mount); default `nobody`.
const OTHER_USER: &str = "SESSIONFS_TEST_OTHER_USER";

// ---------------------------------------------------------------------------------
// The runner.

/// A test: `Err(reason)` when it cannot run here; a panic when it fails.
type Test = fn(&Env) -> Result<(), String>;

const TESTS: &[(&str, Test)] = &[
    (
        "a_session_file_mounted_by_a_user",
        a_session_file_mounted_by_a_user,
    ),
    (
        "a_sessions_directory_mounted_by_a_user",
        a_sessions_directory_mounted_by_a_user,
    ),
    (
        "background_mount_and_busy_unmount_by_a_user",
        background_mount_and_busy_unmount_by_a_user,
    ),
    (
        "dev_fuse_closed_to_the_user_is_named_with_the_fix",
        dev_fuse_closed_to_the_user_is_named_with_the_fix,
    ),
    (
        "allow_other_refuses_whom_the_disk_refuses",
        allow_other_refuses_whom_the_disk_refuses,
    ),
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let filters: Vec<&str> = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .map(String::as_str)
        .collect();
    let exact = args.iter().any(|a| a == "--exact");
    let chosen: Vec<&(&str, Test)> = TESTS
        .iter()
        .filter(|(n, _)| {
            filters.is_empty()
                || filters
                    .iter()
                    .any(|f| if exact { n == f } else { n.contains(f) })
        })
        .collect();
    if args.iter().any(|a| a == "--list") {
        for (n, _) in &chosen {
            println!("{n}: test");
        }
        return ExitCode::SUCCESS;
    }
    let required = std::env::var(REQUIRE).is_ok_and(|v| !v.is_empty() && v != "0");
    let start = Instant::now();
    println!("\nrunning {} tests", chosen.len());
    let env = Env::find();
    let (mut passed, mut failed, mut not_run) = (0, Vec::new(), 0);
    for (name, test) in &chosen {
        let outcome = match &env {
            Err(why) => Err(why.clone()),
            Ok(env) => match std::thread::scope(|s| s.spawn(|| test(env)).join()) {
                Ok(r) => r,
                Err(_) => {
                    println!("test {name} ... FAILED");
                    failed.push(name.to_string());
                    continue;
                }
            },
        };
        match outcome {
            Ok(()) => {
                println!("test {name} ... ok");
                passed += 1;
            }
            Err(why) if required => {
                println!("test {name} ... FAILED");
                eprintln!("{name}: cannot run, and {REQUIRE} is set: {why}");
                failed.push(name.to_string());
            }
            Err(why) => {
                println!("test {name} ... ignored, not run: {why}");
                not_run += 1;
            }
        }
    }
    if !failed.is_empty() {
        println!("\nfailures:");
        for f in &failed {
            println!("    {f}");
        }
    }
    println!(
        "\ntest result: {}. {passed} passed; {} failed; {not_run} ignored; 0 measured; {} \
         filtered out; finished in {:.2}s\n",
        if failed.is_empty() { "ok" } else { "FAILED" },
        failed.len(),
        TESTS.len() - chosen.len(),
        start.elapsed().as_secs_f64()
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(101)
    }
}

// ---------------------------------------------------------------------------------
// The user, the device, and running things as the user.

struct Env {
    uid: u32,
    gid: u32,
    /// Root runs commands through `setpriv`; a normal user runs them directly.
    switch: bool,
    /// Whether the user can open the machine's `/dev/fuse` for reading and writing.
    dev_open: bool,
    /// `/dev/fuse`'s device number, for nodes made in private namespaces.
    rdev: u64,
    /// The binary under test, copied where the user can run it.
    bin: PathBuf,
    _dir: tempfile::TempDir,
}

impl Env {
    fn find() -> Result<Env, String> {
        let helper = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]
            .iter()
            .map(|d| Path::new(d).join("fusermount3"))
            .find(|p| p.exists())
            .ok_or("fusermount3 is not installed (apt-get install fuse3)")?;
        let m = fs::metadata(&helper).map_err(|e| format!("{}: {e}", helper.display()))?;
        if m.uid() != 0 || m.mode() & 0o4000 == 0 {
            return Err(format!("{} is not setuid root", helper.display()));
        }
        let dev = fs::metadata("/dev/fuse").map_err(|e| format!("/dev/fuse: {e}"))?;
        let (uid, gid, switch) = if is_root() {
            let who = std::env::var(USER).unwrap_or_else(|_| "nobody".into());
            let (uid, gid) = user_ids(&who).ok_or(format!(
                "no user {who:?} to switch to (set {USER} to an unprivileged user)"
            ))?;
            if uid == 0 {
                return Err(format!("{USER}={who} is root"));
            }
            for tool in ["setpriv", "unshare"] {
                let ok = Command::new(tool)
                    .arg("--version")
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success());
                if !ok {
                    return Err(format!("{tool} (util-linux) is missing"));
                }
            }
            (uid, gid, true)
        } else {
            // SAFETY: getuid/getgid cannot fail.
            unsafe { (libc::getuid(), libc::getgid(), false) }
        };
        let dev_open = if switch {
            let bits = if dev.uid() == uid {
                0o600
            } else if dev.gid() == gid {
                0o060
            } else {
                0o006
            };
            dev.mode() & bits == bits
        } else {
            let c = CString::new("/dev/fuse").unwrap();
            // SAFETY: `c` is a valid C string.
            unsafe { libc::access(c.as_ptr(), libc::R_OK | libc::W_OK) == 0 }
        };
        let dir = tempdir();
        let bin = dir.path().join("sessionfs");
        fs::copy(common::bin(), &bin).map_err(|e| format!("copying the binary: {e}"))?;
        for p in [dir.path(), &bin] {
            fs::set_permissions(p, fs::Permissions::from_mode(0o755)).unwrap();
        }
        Ok(Env {
            uid,
            gid,
            switch,
            dev_open,
            rdev: dev.rdev(),
            bin,
            _dir: dir,
        })
    }

    /// A command that runs `program args` as the user, in `cwd`.
    fn command(&self, cwd: &Path, program: &OsStr, args: &[&OsStr]) -> Command {
        let mut c = if self.switch {
            let mut c = Command::new("setpriv");
            c.arg(format!("--reuid={}", self.uid))
                .arg(format!("--regid={}", self.gid))
                .arg("--clear-groups")
                .arg(program);
            c
        } else {
            Command::new(program)
        };
        c.args(args).current_dir(cwd).env("HOME", cwd);
        c
    }

    /// `sh -c SCRIPT` as the user, in `cwd`.
    fn sh(&self, cwd: &Path, script: &str) -> Output {
        run_command(self.command(cwd, "sh".as_ref(), &["-c".as_ref(), script.as_ref()]))
    }

    /// `sessionfs ARGS` as the user, in `cwd`.
    fn sessionfs(&self, cwd: &Path, args: &[&str]) -> Output {
        let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        run_command(self.command(cwd, self.bin.as_os_str(), &args))
    }

    /// A fresh directory owned by the user, holding copies of the fixtures `files`
    /// (`(fixture, name)`, the name may have a folder) and an empty `mnt`.
    fn dir(&self, files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempdir();
        fs::create_dir(d.path().join("mnt")).unwrap();
        for (fixture, name) in files {
            let to = d.path().join(name);
            fs::create_dir_all(to.parent().unwrap()).unwrap();
            fs::copy(common::fixture(fixture), &to).unwrap();
        }
        self.give(d.path());
        d
    }

    /// Makes `p` and everything under it the user's.
    fn give(&self, p: &Path) {
        let c = CString::new(p.as_os_str().as_bytes()).unwrap();
        // SAFETY: `c` is a valid C string.
        assert_eq!(unsafe { libc::lchown(c.as_ptr(), self.uid, self.gid) }, 0);
        if p.is_dir() && !p.is_symlink() {
            for e in fs::read_dir(p).unwrap() {
                self.give(&e.unwrap().path());
            }
        }
    }

    /// Runs `f`, with `/dev/fuse` of mode `mode` if the machine's is not already what
    /// the test needs (`open`: whether the user must be able to open it).
    fn with_dev_fuse<T: Send>(
        &self,
        open: bool,
        f: impl FnOnce() -> T + Send,
    ) -> Result<T, String> {
        if self.dev_open == open {
            return Ok(f());
        }
        if !is_root() {
            return Err(if open {
                "/dev/fuse is closed to you (standard systems make it 0666, with udev); run \
                 as root, the tests give the user one in a private mount namespace"
            } else {
                "/dev/fuse is open to you, and only root can give you one that is not (in a \
                 private mount namespace)"
            }
            .to_string());
        }
        let mode = if open { 0o666 } else { 0o600 };
        let rdev = self.rdev;
        Ok(std::thread::scope(|s| {
            s.spawn(move || {
                let _ns = PrivateDevFuse::make(mode, rdev);
                f()
            })
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e))
        }))
    }
}

/// The uid and gid of user `who` (a name or a number).
fn user_ids(who: &str) -> Option<(u32, u32)> {
    let c = CString::new(who).ok()?;
    // SAFETY: getpwnam/getpwuid return a pointer to static storage or null; read at once.
    unsafe {
        let mut pw = libc::getpwnam(c.as_ptr());
        if pw.is_null()
            && let Ok(n) = who.parse::<u32>()
        {
            pw = libc::getpwuid(n);
        }
        (!pw.is_null()).then(|| ((*pw).pw_uid, (*pw).pw_gid))
    }
}

/// This thread's own mount namespace, in which `/dev/fuse` is a new node of the same
/// device with another mode. The namespace goes when its last process does; dropping
/// this undoes the mounts first so that the temporary directory can be removed.
struct PrivateDevFuse {
    dir: Option<tempfile::TempDir>,
}

fn check(what: &str, r: libc::c_int) {
    assert!(r == 0, "{what}: {}", std::io::Error::last_os_error());
}

fn cstr(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).unwrap()
}

impl PrivateDevFuse {
    fn make(mode: u32, rdev: u64) -> PrivateDevFuse {
        PrivateDevFuse::make_with(mode, rdev, None)
    }

    /// As [`make`](Self::make), and with `fuse_conf` as `/etc/fuse.conf` (bound over
    /// the machine's, which must exist) in the namespace too.
    fn make_with(mode: u32, rdev: u64, fuse_conf: Option<&str>) -> PrivateDevFuse {
        let dir = tempdir();
        let devdir = dir.path().join("dev");
        fs::create_dir(&devdir).unwrap();
        let node = devdir.join("fuse");
        let none = std::ptr::null::<libc::c_char>();
        // SAFETY: plain syscalls with valid C strings (or null where allowed).
        unsafe {
            check("unshare(CLONE_NEWNS)", libc::unshare(libc::CLONE_NEWNS));
            let root = cstr(Path::new("/"));
            check(
                "making mounts private",
                libc::mount(
                    none,
                    root.as_ptr(),
                    none,
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ),
            );
            let tmpfs = CString::new("tmpfs").unwrap();
            check(
                "mounting a tmpfs for the node",
                libc::mount(
                    tmpfs.as_ptr(),
                    cstr(&devdir).as_ptr(),
                    tmpfs.as_ptr(),
                    0,
                    std::ptr::null(),
                ),
            );
            check(
                "mknod",
                libc::mknod(
                    cstr(&node).as_ptr(),
                    libc::S_IFCHR | mode,
                    rdev as libc::dev_t,
                ),
            );
            check("chmod", libc::chmod(cstr(&node).as_ptr(), mode));
            check(
                "binding the node over /dev/fuse",
                libc::mount(
                    cstr(&node).as_ptr(),
                    cstr(Path::new("/dev/fuse")).as_ptr(),
                    none,
                    libc::MS_BIND,
                    std::ptr::null(),
                ),
            );
            if let Some(conf) = fuse_conf {
                let f = devdir.join("fuse.conf");
                fs::write(&f, conf).unwrap();
                check("chmod fuse.conf", libc::chmod(cstr(&f).as_ptr(), 0o644));
                check(
                    "binding fuse.conf over /etc/fuse.conf",
                    libc::mount(
                        cstr(&f).as_ptr(),
                        cstr(Path::new("/etc/fuse.conf")).as_ptr(),
                        none,
                        libc::MS_BIND,
                        std::ptr::null(),
                    ),
                );
            }
        }
        PrivateDevFuse { dir: Some(dir) }
    }
}

impl Drop for PrivateDevFuse {
    fn drop(&mut self) {
        if let Some(d) = self.dir.take() {
            // SAFETY: plain syscalls with valid C strings.
            unsafe {
                libc::umount2(cstr(Path::new("/etc/fuse.conf")).as_ptr(), libc::MNT_DETACH);
                libc::umount2(cstr(Path::new("/dev/fuse")).as_ptr(), libc::MNT_DETACH);
                libc::umount2(cstr(&d.path().join("dev")).as_ptr(), libc::MNT_DETACH);
            }
        }
    }
}

/// The type of what is mounted at `p`, as this thread sees it.
fn mounted_type(p: &Path) -> Option<String> {
    let info = fs::read_to_string("/proc/thread-self/mountinfo").ok()?;
    let want = p.to_string_lossy().replace(' ', "\\040");
    info.lines().rev().find_map(|l| {
        let f: Vec<&str> = l.split(' ').collect();
        let sep = f.iter().position(|x| *x == "-")?;
        (f.get(4) == Some(&want.as_str())).then(|| f[sep + 1].to_string())
    })
}

/// A `sessionfs mount` running as the user in the foreground.
struct UserMount {
    child: Option<Child>,
    mnt: PathBuf,
    stderr: PathBuf,
}

impl UserMount {
    /// Starts `sessionfs ARGS` as the user in `dir` and waits until `ready` (a path
    /// inside the mount) answers the user.
    fn start(env: &Env, dir: &Path, args: &[&str], ready: &str) -> UserMount {
        let stderr = dir.join("stderr");
        let err = fs::File::create(&stderr).unwrap();
        let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        let child = env
            .command(dir, env.bin.as_os_str(), &args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err)
            .spawn()
            .unwrap();
        let mut m = UserMount {
            child: Some(child),
            mnt: dir.join("mnt"),
            stderr,
        };
        let ok = wait_until(DEADLINE, || {
            if let Some(Ok(Some(_))) = m.child.as_mut().map(Child::try_wait) {
                return true;
            }
            mounted_type(&m.mnt).is_some()
        });
        if let Some(Ok(Some(status))) = m.child.as_mut().map(Child::try_wait) {
            panic!("sessionfs mount exited early ({status}): {}", m.said());
        }
        assert!(ok, "not mounted within {DEADLINE:?}: {}", m.said());
        assert_eq!(mounted_type(&m.mnt).as_deref(), Some("fuse.sessionfs"));
        env.sh(dir, &format!("test -e 'mnt/{ready}'")).ok();
        m
    }

    fn said(&self) -> String {
        fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Waits for the process to exit, and checks it exited 0 having said nothing
    /// but that it mounted.
    fn exits_cleanly(&mut self) {
        let mut child = self.child.take().unwrap();
        let mut status = None;
        wait_until(DEADLINE, || {
            status = child.try_wait().ok().flatten();
            status.is_some()
        });
        let said = self.said();
        assert!(
            status.is_some_and(|s| s.success()),
            "sessionfs did not exit 0 after the unmount: {status:?}: {said}"
        );
        assert!(
            said.lines().all(|l| l.starts_with("sessionfs: mounted ")),
            "sessionfs said more than where it mounted: {said}"
        );
        assert!(mounted_type(&self.mnt).is_none(), "still mounted");
    }
}

impl Drop for UserMount {
    fn drop(&mut self) {
        if mounted_type(&self.mnt).is_some() {
            let c = cstr(&self.mnt);
            // SAFETY: `c` is a valid C string.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
        if let Some(mut c) = self.child.take() {
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline && matches!(c.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The lines appended to `file` since `before`, parsed.
fn appended(file: &Path, before: &[u8]) -> Vec<serde_json::Value> {
    let after = fs::read(file).unwrap();
    assert!(after.starts_with(before), "earlier bytes changed");
    std::str::from_utf8(&after[before.len()..])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

// ---------------------------------------------------------------------------------
// The tests.

/// small.jsonl: 22776346 has no label; 8e38ccf6 neither; the name is "Oracle session 1".
const ENTRY: &str = "22776346";
const BARE: &str = "8e38ccf6";

fn a_session_file_mounted_by_a_user(env: &Env) -> Result<(), String> {
    env.with_dev_fuse(true, || {
        let d = env.dir(&[("small.jsonl", "s.jsonl")]);
        let dir = d.path();
        let file = dir.join("s.jsonl");
        let mut m = UserMount::start(env, dir, &["mount", "s.jsonl", "mnt"], "session.json");
        let ls = env.sh(dir, "ls mnt").ok().stdout;
        for name in [
            "session.json",
            "name",
            "tree",
            "reply",
            "labels",
            "e8dfd932",
        ] {
            assert!(ls.lines().any(|l| l == name), "{name} missing: {ls}");
        }
        if env.switch {
            // Made without --allow-other: root is kept out, by the kernel.
            let out = run("ls", &["mnt"], dir);
            assert!(!out.status.success(), "root could enter: {out:?}");
        }
        let hits = env.sh(dir, "grep -rl 'Oracle session 1' mnt").ok().stdout;
        assert!(hits.lines().any(|l| l == "mnt/name"), "{hits}");
        let before = fs::read(&file).unwrap();
        env.sh(dir, &format!("echo 'from a user' > mnt/.id/{ENTRY}/reply"))
            .ok();
        let link = env
            .sh(
                dir,
                &format!("ln -s {BARE} mnt/labels/mine && readlink mnt/labels/mine"),
            )
            .ok()
            .stdout;
        assert_eq!(link, format!("../.id/{BARE}\n"));
        let new = appended(&file, &before);
        assert_eq!(new.len(), 2, "{new:?}");
        assert_eq!(new[0]["parentId"], ENTRY);
        assert_eq!(new[0]["message"]["content"][0]["text"], "from a user");
        assert_eq!(new[1]["type"], "label");
        assert_eq!(new[1]["label"], "mine");
        assert_eq!(
            fs::metadata(&file).unwrap().uid(),
            env.uid,
            "the file stays the user's"
        );
        env.sh(dir, "fusermount3 -u mnt").ok();
        m.exits_cleanly();
    })
}

fn a_sessions_directory_mounted_by_a_user(env: &Env) -> Result<(), String> {
    env.with_dev_fuse(true, || {
        let d = env.dir(&[
            ("small.jsonl", "sessions/--home-u-p--/a.jsonl"),
            ("small.jsonl", "sessions/--home-u-p--/b.jsonl"),
        ]);
        let dir = d.path();
        let mut m = UserMount::start(env, dir, &["mount", "sessions", "mnt"], ".sessionfs-stats");
        assert_eq!(env.sh(dir, "ls mnt").ok().stdout, "--home-u-p--\n");
        assert_eq!(env.sh(dir, "ls mnt/--home-u-p--").ok().stdout, "a\nb\n");
        let hits = env.sh(dir, "grep -rl 'Oracle session 1' mnt").ok().stdout;
        for s in ["a", "b"] {
            let want = format!("mnt/--home-u-p--/{s}/name");
            assert!(hits.lines().any(|l| l == want), "{want}: {hits}");
        }
        let b = dir.join("sessions/--home-u-p--/b.jsonl");
        let before = fs::read(&b).unwrap();
        env.sh(
            dir,
            &format!(
                "echo 'into b' > mnt/--home-u-p--/b/.id/{ENTRY}/reply && \
                 ln -s {BARE} mnt/--home-u-p--/b/labels/here"
            ),
        )
        .ok();
        let new = appended(&b, &before);
        assert_eq!(new.len(), 2, "{new:?}");
        assert_eq!(new[0]["message"]["content"][0]["text"], "into b");
        assert_eq!(new[1]["label"], "here");
        // Unmounted with sessionfs itself, which goes through fusermount3 here.
        let out = env.sessionfs(dir, &["unmount", "mnt"]);
        assert!(out.status.success() && out.stderr.is_empty(), "{out:?}");
        m.exits_cleanly();
    })
}

/// The processes whose command line holds `arg`.
fn pids_with_arg(arg: &Path) -> Vec<u32> {
    let want = arg.as_os_str().as_bytes();
    fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|&b| b == 0).any(|a| a == want))
        })
        .collect()
}

fn background_mount_and_busy_unmount_by_a_user(env: &Env) -> Result<(), String> {
    env.with_dev_fuse(true, || {
        let d = env.dir(&[("small.jsonl", "s.jsonl")]);
        let dir = d.path();
        let mnt = dir.join("mnt");
        // The mount point as an absolute path, to find the background process by.
        let out = env.sessionfs(
            dir,
            &["mount", "--background", "s.jsonl", mnt.to_str().unwrap()],
        );
        let _guard = UserMount {
            child: None,
            mnt: mnt.clone(),
            stderr: dir.join("none"),
        };
        // It says once, on stderr, what it mounted where, and nothing else.
        let said = &out.stderr;
        assert!(out.status.success(), "{out:?}");
        assert_eq!(said.lines().count(), 1, "{said}");
        assert!(
            said.starts_with("sessionfs: mounted ") && said.contains("sessionfs unmount"),
            "{said}"
        );
        assert_eq!(mounted_type(&mnt).as_deref(), Some("fuse.sessionfs"));
        assert_eq!(pids_with_arg(&mnt).len(), 1, "one background process");
        // A shell of the user's inside the mount keeps it busy.
        let mut busy = env
            .command(
                dir,
                "sh".as_ref(),
                &["-c".as_ref(), "cd mnt && exec sleep 60".as_ref()],
            )
            .spawn()
            .unwrap();
        let inside = wait_until(DEADLINE, || {
            fs::read_link(format!("/proc/{}/cwd", busy.id())).is_ok_and(|c| c == mnt)
        });
        assert!(inside, "the busy shell never got inside");
        let out = env.sessionfs(dir, &["unmount", "mnt"]);
        assert_eq!(out.code(), Some(1), "{out:?}");
        assert_eq!(
            out.stderr,
            format!(
                "sessionfs: mnt is busy: a program is using it (a shell whose current \
                 directory is inside it, or an open file); leave it and try again, or detach \
                 it now with: sessionfs unmount --lazy {}\n",
                mnt.display()
            )
        );
        assert!(mounted_type(&mnt).is_some(), "a busy mount was unmounted");
        let _ = busy.kill();
        let _ = busy.wait();
        let out = env.sessionfs(dir, &["unmount", "mnt"]);
        assert!(out.status.success() && out.stderr.is_empty(), "{out:?}");
        assert!(mounted_type(&mnt).is_none());
        // The background process serving it is gone too.
        let gone = wait_until(DEADLINE, || pids_with_arg(&mnt).is_empty());
        assert!(gone, "the background sessionfs is still running");
    })
}

fn dev_fuse_closed_to_the_user_is_named_with_the_fix(env: &Env) -> Result<(), String> {
    env.with_dev_fuse(false, || {
        let d = env.dir(&[("small.jsonl", "s.jsonl")]);
        let dir = d.path();
        let out = env.sessionfs(dir, &["mount", "s.jsonl", "mnt"]);
        assert_eq!(out.code(), Some(9), "{out:?}");
        assert_eq!(
            out.stderr,
            "sessionfs: cannot open /dev/fuse (mode 0600): Permission denied; users other \
             than root need read and write access to it, which most systems give everyone \
             (mode 0666, set by udev); as root: chmod 0666 /dev/fuse\n"
        );
        assert!(mounted_type(&dir.join("mnt")).is_none());
        // --background says the same, with the same status.
        let out = env.sessionfs(dir, &["mount", "--background", "s.jsonl", "mnt"]);
        assert_eq!(out.code(), Some(9), "{out:?}");
        assert!(out.stderr.contains("cannot open /dev/fuse"), "{out:?}");
    })
}

/// Issue 27, point 1: with `--allow-other`, another user of the machine reads through
/// the mount exactly what the disk lets them read. The user mounts their sessions
/// directory (through `fusermount3`, `user_allow_other` set in a private copy of
/// `/etc/fuse.conf`); a second unprivileged user then tries every session with `cat`,
/// `ls` and `head`, on disk and through the mount, and must get the same answer each
/// time: a `0600` session, a folder of `0700`, a session linked to a `0600` file of its
/// owner's elsewhere (its target's bits), a `0640` one of the second user's group; and
/// writes nobody but the owner may make.
fn allow_other_refuses_whom_the_disk_refuses(env: &Env) -> Result<(), String> {
    if !env.switch {
        return Err("needs root, to run as two users".into());
    }
    let who = std::env::var(OTHER_USER).unwrap_or_else(|_| "nobody".into());
    let (ouid, ogid) = user_ids(&who).ok_or(format!(
        "no user {who:?} to be the second user (set {OTHER_USER} to an unprivileged user)"
    ))?;
    if ouid == 0 || ouid == env.uid {
        return Err(format!(
            "{OTHER_USER}={who} must be neither root nor {USER}"
        ));
    }
    if !Path::new("/etc/fuse.conf").exists() {
        return Err("/etc/fuse.conf is missing (the fuse3 package ships one)".into());
    }
    let other = Env {
        uid: ouid,
        gid: ogid,
        switch: true,
        dev_open: env.dev_open,
        rdev: env.rdev,
        bin: env.bin.clone(),
        _dir: tempdir(),
    };
    let rdev = env.rdev;
    std::thread::scope(|s| {
        s.spawn(|| {
            // Its own namespace: /dev/fuse open to the user, and user_allow_other.
            let _ns = PrivateDevFuse::make_with(0o666, rdev, Some("user_allow_other\n"));
            two_users(env, &other);
        })
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e))
    });
    Ok(())
}

fn two_users(env: &Env, other: &Env) {
    let d = env.dir(&[
        ("small.jsonl", "sessions/proj/open.jsonl"),
        ("small.jsonl", "sessions/proj/secret.jsonl"),
        ("small.jsonl", "sessions/proj/group.jsonl"),
        ("small.jsonl", "sessions/hidden/inside.jsonl"),
        ("small.jsonl", "elsewhere/target.jsonl"),
    ]);
    let dir = d.path();
    let sessions = dir.join("sessions");
    std::os::unix::fs::symlink(
        dir.join("elsewhere/target.jsonl"),
        sessions.join("proj/linked.jsonl"),
    )
    .unwrap();
    env.give(&sessions.join("proj/linked.jsonl"));
    let mode = |rel: &str, m: u32| {
        fs::set_permissions(dir.join(rel), fs::Permissions::from_mode(m)).unwrap()
    };
    // The other user may walk to the mount point and the folders, as on any machine.
    for (rel, m) in [
        (".", 0o755),
        ("mnt", 0o755),
        ("sessions", 0o755),
        ("sessions/proj", 0o755),
        ("elsewhere", 0o755),
        ("sessions/proj/open.jsonl", 0o644),
        ("sessions/proj/secret.jsonl", 0o600),
        ("sessions/proj/group.jsonl", 0o640),
        ("sessions/hidden", 0o700),
        ("elsewhere/target.jsonl", 0o600),
    ] {
        mode(rel, m);
    }
    // group.jsonl belongs to the second user's group.
    let c = cstr(&sessions.join("proj/group.jsonl"));
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::chown(c.as_ptr(), env.uid, other.gid) }, 0);
    let mut m = UserMount::start(
        env,
        dir,
        &["mount", "--allow-other", "sessions", "mnt"],
        ".sessionfs-stats",
    );
    let may = |who: &Env, script: &str| who.sh(dir, script).status.success();
    // Every session: the same answer on disk and through the mount, for both users.
    for (name, other_reads) in [
        ("open", true),
        ("secret", false),
        ("group", true),
        ("linked", false),
    ] {
        let disk = format!("cat sessions/proj/{name}.jsonl >/dev/null");
        assert!(may(env, &disk), "the owner cannot read {name} on disk");
        assert_eq!(may(other, &disk), other_reads, "{name} on disk");
        for script in [
            format!("cat mnt/proj/{name}/session.json >/dev/null"),
            format!("ls mnt/proj/{name} >/dev/null"),
            format!("head -c 100 mnt/proj/{name}/tree >/dev/null"),
            format!("cat mnt/proj/{name}/name >/dev/null"),
            format!("grep -r -q Oracle mnt/proj/{name}"),
        ] {
            assert!(may(env, &script), "the owner: {script}");
            assert_eq!(
                may(other, &script),
                other_reads,
                "the second user: {script} (the disk says {other_reads})"
            );
        }
        // Owner, group and bits are the file's (a link: its target's).
        let shown = env
            .sh(dir, &format!("stat -c '%u %g %a' mnt/proj/{name} mnt/proj/{name}/session.json mnt/proj/{name}/reply"))
            .ok()
            .stdout;
        let (gid, dir_bits, file_bits, reply_bits) = match name {
            "open" => (env.gid, "555", "444", "644"),
            "group" => (other.gid, "550", "440", "640"),
            _ => (env.gid, "500", "400", "600"),
        };
        assert_eq!(
            shown,
            format!(
                "{u} {gid} {dir_bits}\n{u} {gid} {file_bits}\n{u} {gid} {reply_bits}\n",
                u = env.uid
            ),
            "{name}"
        );
    }
    // A session the owner cannot read (root's, 0600): its ERROR says so, to whoever may
    // list the folder (what `ls -l` of it shows on disk), and nothing of its content.
    // The same for a session linked to such a file elsewhere: the target decides.
    let rootonly = sessions.join("proj/rootonly.jsonl");
    fs::copy(common::fixture("small.jsonl"), &rootonly).unwrap();
    fs::set_permissions(&rootonly, fs::Permissions::from_mode(0o600)).unwrap();
    let roots = dir.join("elsewhere/roots.jsonl");
    fs::copy(common::fixture("small.jsonl"), &roots).unwrap();
    fs::set_permissions(&roots, fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink(&roots, sessions.join("proj/rootlink.jsonl")).unwrap();
    for name in ["rootonly", "rootlink"] {
        for who in [env, other] {
            let e = who
                .sh(
                    dir,
                    &format!("ls mnt/proj/{name} && cat mnt/proj/{name}/ERROR"),
                )
                .ok()
                .stdout;
            assert!(
                e.starts_with("ERROR\ncannot read the session file: Permission denied"),
                "{name}: {e}"
            );
            assert!(!e.contains("Oracle"), "{name}: {e}");
        }
    }
    // A folder the other user cannot list on disk, they cannot list through the mount.
    assert!(!may(other, "ls sessions/hidden >/dev/null"));
    assert!(!may(other, "ls mnt/hidden >/dev/null"));
    assert!(!may(other, "cat mnt/hidden/inside/session.json >/dev/null"));
    assert!(may(env, "cat mnt/hidden/inside/session.json >/dev/null"));
    // Writing: the disk lets only the owner write, and so does the mount.
    let open = sessions.join("proj/open.jsonl");
    let before = fs::read(&open).unwrap();
    let out = other.sh(
        dir,
        &format!("echo intruder > mnt/proj/open/.id/{ENTRY}/reply"),
    );
    assert!(
        !out.status.success() && out.stderr.contains("Permission denied"),
        "{out:?}"
    );
    assert!(!may(other, "echo x > mnt/proj/open/name"));
    assert!(!may(
        other,
        &format!("touch mnt/proj/open/.id/{ENTRY}/fork")
    ));
    assert_eq!(fs::read(&open).unwrap(), before, "the second user wrote");
    env.sh(dir, &format!("echo mine > mnt/proj/open/.id/{ENTRY}/reply"))
        .ok();
    assert_eq!(appended(&open, &before).len(), 1);
    // A chmod on disk shows at once.
    mode("sessions/proj/open.jsonl", 0o600);
    let gone = wait_until(DEADLINE, || {
        !may(other, "cat mnt/proj/open/session.json >/dev/null")
    });
    assert!(gone, "the second user still reads a session made 0600");
    env.sh(dir, "fusermount3 -u mnt").ok();
    m.exits_cleanly();
}
