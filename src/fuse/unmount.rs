//! The `sessionfs unmount` command.
//!
//! [`run`] finds MOUNTPOINT in `/proc/self/mountinfo`, checks that what is mounted
//! there is a sessionfs mount (type `fuse.sessionfs`, or `fuse` with the source
//! `sessionfs`, as a mount made by root is listed), and unmounts it: with
//! `umount2(2)` as root, and otherwise with `fusermount3 -u` (or `fusermount -u`), the
//! setuid helper through which users mount and unmount their own FUSE mounts. The
//! `sessionfs mount` process serving it sees its session end and exits 0.
//!
//! Guarantees: nothing but a sessionfs mount is ever unmounted, whatever path is
//! given; every failure is one sentence on standard error, starting with
//! `sessionfs: `, with an exit status of its own (see [`EXIT_STATUS_HELP`]). A busy
//! mount is left mounted unless `--lazy` asks to detach it.

use std::ffi::CString;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

/// The exit-status table, as shown in `sessionfs unmount --help`.
pub const EXIT_STATUS_HELP: &str = "\
Exit status:
  0  unmounted
  1  could not unmount: busy (see --lazy), or another failure
  2  bad command line
  5  MOUNTPOINT is not a mount point, or not a sessionfs mount";

/// The file system type of a sessionfs mount made through `fusermount3`.
const FSTYPE: &str = "fuse.sessionfs";
/// The source of every sessionfs mount.
const SOURCE: &str = "sessionfs";

/// Runs `sessionfs unmount`; returns the exit status.
pub fn run(mount_point: &Path, lazy: bool) -> ExitCode {
    match unmount(mount_point, lazy) {
        Ok(()) => ExitCode::SUCCESS,
        Err((code, message)) => {
            eprintln!("sessionfs: {message}");
            ExitCode::from(code)
        }
    }
}

fn unmount(mp: &Path, lazy: bool) -> Result<(), (u8, String)> {
    let shown = mp.display();
    let abs = absolute(mp).map_err(|e| (5, format!("{shown}: {}", io_msg(&e))))?;
    let mounts = fs::read("/proc/self/mountinfo").map_err(|e| {
        (
            1,
            format!("cannot read /proc/self/mountinfo: {}", io_msg(&e)),
        )
    })?;
    let Some((fstype, source)) = mounted_type(&mounts, &abs) else {
        return Err((5, format!("{shown} is not a mount point")));
    };
    let ours = fstype == FSTYPE || (fstype.starts_with("fuse") && source == SOURCE);
    if !ours {
        return Err((
            5,
            format!("{shown} is not a sessionfs mount (it is {fstype}); not unmounting it"),
        ));
    }
    let busy = || {
        let again = super::mount::shell_word(&abs);
        format!(
            "{shown} is busy: a program is using it (a shell whose current directory is \
             inside it, or an open file); leave it and try again, or detach it now with: \
             sessionfs unmount --lazy {again}"
        )
    };
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        let c = CString::new(abs.as_os_str().as_bytes())
            .map_err(|_| (5, format!("{shown} is not a mount point")))?;
        let flags = if lazy { libc::MNT_DETACH } else { 0 };
        // SAFETY: `c` is a valid C string.
        if unsafe { libc::umount2(c.as_ptr(), flags) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::EBUSY) => (1, busy()),
            _ => (1, format!("cannot unmount {shown}: {}", io_msg(&e))),
        });
    }
    let helper = ["fusermount3", "fusermount"]
        .into_iter()
        .find(|h| {
            Command::new(h)
                .arg("-V")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok()
        })
        .ok_or_else(|| {
            (
                1,
                format!(
                    "cannot unmount {shown}: users other than root unmount with \
                     fusermount3, from the fuse3 package, which is not installed"
                ),
            )
        })?;
    let mut cmd = Command::new(helper);
    cmd.arg("-u");
    if lazy {
        cmd.arg("-z");
    }
    let out = cmd
        .arg(&abs)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output()
        .map_err(|e| (1, format!("cannot run {helper}: {}", io_msg(&e))))?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    let said = said.trim();
    if said.contains("busy") {
        return Err((1, busy()));
    }
    Err((
        1,
        format!(
            "cannot unmount {shown}: {}",
            if said.is_empty() {
                format!("{helper} failed ({})", out.status)
            } else {
                said.to_string()
            }
        ),
    ))
}

/// `p` as an absolute path naming the mount point itself: its parent's real path
/// joined with its last component. The mount point is not resolved itself: that would
/// ask the mount, which may be dead, or closed to us.
fn absolute(p: &Path) -> io::Result<PathBuf> {
    let p = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()?.join(p)
    };
    // `.` and `..` at the end: resolve the whole path (the mount answers for itself).
    let last = p.components().next_back();
    match last {
        Some(Component::Normal(name)) => {
            let parent = p.parent().unwrap_or(Path::new("/"));
            Ok(fs::canonicalize(parent)?.join(name))
        }
        _ => fs::canonicalize(&p),
    }
}

/// The file system type and source mounted at `mp` (the topmost mount there), from
/// the contents of a `mountinfo` file.
fn mounted_type(mountinfo: &[u8], mp: &Path) -> Option<(String, String)> {
    let want = mp.as_os_str().as_bytes();
    let mut found = None;
    for line in mountinfo.split(|&b| b == b'\n') {
        let fields: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
        let Some(sep) = fields.iter().position(|f| *f == b"-") else {
            continue;
        };
        let (Some(point), Some(fstype), Some(source)) =
            (fields.get(4), fields.get(sep + 1), fields.get(sep + 2))
        else {
            continue;
        };
        if unescape(point) == want {
            let text = |b: &[u8]| String::from_utf8_lossy(&unescape(b)).into_owned();
            found = Some((text(fstype), text(source)));
        }
    }
    found
}

/// Mountinfo escapes space, tab, newline and backslash as `\NNN` (octal).
fn unescape(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let octal = |b: u8| (b'0'..=b'7').contains(&b);
        if s[i] == b'\\' && i + 3 < s.len() && s[i + 1..i + 4].iter().all(|&b| octal(b)) {
            out.push((s[i + 1] - b'0') * 64 + (s[i + 2] - b'0') * 8 + (s[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    out
}

/// An io::Error as a sentence fragment, without Rust's "(os error N)" suffix.
fn io_msg(e: &io::Error) -> String {
    super::mount::io_msg(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_topmost_mount_and_its_type() {
        let info = b"22 1 0:21 / /proc rw - proc proc rw\n\
            40 22 0:40 / /tmp/a\\040b rw,nosuid - fuse.sessionfs sessionfs rw,user_id=0\n\
            41 40 0:41 / /tmp/x rw - tmpfs none rw\n\
            42 41 0:42 / /tmp/x rw - fuse sessionfs rw\n";
        let found = |p: &str| mounted_type(info, Path::new(p));
        let pair = |a: &str, b: &str| Some((a.to_string(), b.to_string()));
        assert_eq!(found("/tmp/a b"), pair(FSTYPE, SOURCE));
        assert_eq!(found("/proc"), pair("proc", "proc"));
        assert_eq!(found("/tmp/x"), pair("fuse", SOURCE));
        assert_eq!(found("/tmp"), None);
    }

    #[test]
    fn refuses_what_is_not_a_sessionfs_mount() {
        let d = tempfile::tempdir().unwrap();
        let err = unmount(d.path(), false).unwrap_err();
        assert_eq!(err.0, 5);
        assert!(err.1.ends_with("is not a mount point"), "{}", err.1);
        let err = unmount(Path::new("/proc"), false).unwrap_err();
        assert_eq!(
            err,
            (
                5,
                "/proc is not a sessionfs mount (it is proc); not unmounting it".into()
            )
        );
    }
}
