//! Writes through the mount, as an attacker and as a careless user would make them
//! (issue 27, points 9 and 10; issue 28, point 1):
//!
//! * A write that can be known to fail fails at `open`, where the shell sees it, and
//!   the file shows no write bit: a Codex thread's `name` and root `reply`, a refused
//!   fork (Codex's, a Claude Code entry a compaction hid), whose `fork` says why before
//!   anyone writes; the errno is `EACCES` ("Permission denied"), never "Read-only file
//!   system" on a mount that is not read-only. A refusal known only at close (a blank
//!   reply) keeps its errno and is said in the log; bytes that are not UTF-8 fail the
//!   write itself (`EILSEQ`), and are logged too.
//! * Only what writes makes a fork: a lock, a `fallocate`, a `truncate -s` of `fork`
//!   make none; `touch`, `: >` and `echo >` one each.
//! * `touch` of a file without a write bit fails, rather than succeeding and changing
//!   nothing.
//! * The FUSE calls nobody makes (truncate, `O_TRUNC`, writes at offsets, `O_APPEND`,
//!   `fallocate`, shared writable `mmap`, xattrs, `link`, rename over, `utimensat`,
//!   `chmod`, `chown`, `unlink`, `mkdir`, `rmdir`, `O_DIRECT`, locks) on every kind of
//!   file: each fails with its errno or does what `docs/LAYOUT.md` says, and no byte of
//!   the session file changes.
//! * A session cut under the mount answers `ESTALE` or `ENOENT`, never `EIO`.

mod common;

use common::*;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// The `.jsonl` files of `dir`.
fn sessions_in(dir: &Path) -> usize {
    fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".jsonl")
        })
        .count()
}

const CODEX_PARFAIL: &str = "01a233fd-8e4f-7f93-83c7-b38d978b73dc";

#[test]
fn writes_known_to_fail_fail_at_open_and_show_no_write_bit() {
    // A Codex thread: its name and root reply are Codex's own, and it cannot be forked.
    let dir = tempdir();
    let home = dir.path().join("codex");
    copy_tree(&fixture("../codex/own/codex-home"), &home);
    let m = Mount::sessions_dir(dir, Some(&home), &[], &[]);
    let t = m.mnt.join("-home-dev-src-parfail").join(CODEX_PARFAIL);
    let leaf = fs::read_link(t.join("leaf")).unwrap();
    let leaf = leaf.to_str().unwrap();
    let modes = sh(
        &format!("stat -c %A name reply {leaf}/fork {leaf}/reply"),
        &t,
    )
    .ok()
    .stdout;
    assert_eq!(modes, "-r--r--r--\n-r--r--r--\n-r--r--r--\n-rw-r--r--\n");
    let fork = fs::read_to_string(t.join(leaf).join("fork")).unwrap();
    assert!(
        fork.starts_with("error: sessionfs does not fork Codex threads"),
        "{fork}"
    );
    let pages_before = sh("find . -type f | sort | xargs md5sum", &home)
        .ok()
        .stdout;
    for script in [
        "echo X > name",
        "echo hi > reply",
        &format!("echo > {leaf}/fork"),
    ] {
        let out = run("bash", &["-c", script], &t);
        assert_ne!(out.code(), Some(0), "{script}: {out:?}");
        assert!(
            out.stderr.contains("Permission denied"),
            "{script}: {out:?}"
        );
    }
    assert_eq!(
        sh("find . -type f | sort | xargs md5sum", &home)
            .ok()
            .stdout,
        pages_before
    );
    // The log says why (the shell only shows the errno).
    let log = m.stderr_text();
    assert!(log.contains("the name refused (EACCES)"), "{log}");
    assert!(
        log.contains("a reply at the root refused (EACCES)"),
        "{log}"
    );
    drop(m);

    // A Claude Code entry a later compaction removed from what Claude Code loads.
    let dir = tempdir();
    let file = dir
        .path()
        .join("07d0e045-3cdc-4eca-a398-7147bce4b33f.jsonl");
    fs::copy(
        fixture("../claude/projects/-home-dev-src-qa").join(file.file_name().unwrap()),
        &file,
    )
    .unwrap();
    let m = Mount::start(dir, file.clone(), &[]);
    let hidden = m.mnt.join(".id/dea05485-9b9b-4770-b537-f793b08876ce");
    let why = fs::read_to_string(hidden.join("fork")).unwrap();
    assert!(
        why.starts_with("error: cannot fork dea05485") && why.contains("the compaction at line"),
        "{why}"
    );
    assert_eq!(sh("stat -c %A fork", &hidden).ok().stdout, "-r--r--r--\n");
    let out = run("bash", &["-c", "echo > fork"], &hidden);
    assert!(
        out.stderr.contains("Permission denied") && !out.stderr.contains("Read-only"),
        "{out:?}"
    );
    assert_eq!(
        sessions_in(file.parent().unwrap()),
        1,
        "no fork was written"
    );
    // A refusal known only at close keeps its errno, and is in the log.
    let before = fs::read(&file).unwrap();
    let out = run(
        "python3",
        &[
            "-c",
            "import os,sys\nfd=os.open('reply',os.O_WRONLY)\nos.write(fd,b'\\n\\n')\ntry:\n    os.close(fd)\nexcept OSError as e:\n    print(e.errno)",
        ],
        &m.mnt,
    );
    assert_eq!(out.stdout.trim(), libc::ENOMSG.to_string(), "{out:?}");
    assert_eq!(fs::read(&file).unwrap(), before);
    assert!(
        m.stderr_text().contains("refused (ENOMSG)"),
        "{}",
        m.stderr_text()
    );
    // Bytes that are not UTF-8 are refused by the write itself (EILSEQ), and logged.
    let out = run(
        "python3",
        &[
            "-c",
            "import os,sys\nfd=os.open('reply',os.O_WRONLY)\ntry:\n    os.write(fd,b'x\\xff\\xfe\\n')\nexcept OSError as e:\n    print(e.errno)\ntry:\n    os.close(fd)\nexcept OSError as e:\n    print('close', e.errno)",
        ],
        &m.mnt,
    );
    assert_eq!(
        out.stdout.lines().next(),
        Some(libc::EILSEQ.to_string().as_str()),
        "{out:?}"
    );
    assert_eq!(fs::read(&file).unwrap(), before);
    assert!(
        m.stderr_text().contains("refused (EILSEQ)"),
        "{}",
        m.stderr_text()
    );
}

#[test]
fn only_what_writes_makes_a_fork() {
    need_python3();
    let m = Mount::new("small.jsonl");
    let dir = m.file.parent().unwrap().to_path_buf();
    let at = m.mnt.join(".id/6c93bccf");
    // A lock, a fallocate, a truncate -s, an open for writing that writes nothing.
    let py = "import os,fcntl\n\
              fd=os.open('fork',os.O_WRONLY|os.O_APPEND)\n\
              fcntl.lockf(fd,fcntl.LOCK_EX)\n\
              fcntl.lockf(fd,fcntl.LOCK_UN)\n\
              os.close(fd)";
    run("python3", &["-c", py], &at).ok();
    let out = sh("fallocate -l 10 fork", &at);
    assert!(out.stderr.contains("Operation not supported"), "{out:?}");
    let out = sh("truncate -s 0 fork", &at);
    assert!(out.stderr.contains("Invalid argument"), "{out:?}");
    sh("flock fork true", &at).ok();
    assert_eq!(
        sessions_in(&dir),
        1,
        "a write-open that wrote nothing forked"
    );
    // What writes makes one each.
    sh("touch fork", &at).ok();
    assert_eq!(sessions_in(&dir), 2);
    sh(": > fork", &at).ok();
    assert_eq!(sessions_in(&dir), 3);
    sh("echo > fork", &at).ok();
    assert_eq!(sessions_in(&dir), 4);
    let last = fs::read_to_string(at.join("fork")).unwrap();
    assert!(Path::new(last.trim_end()).exists(), "{last}");
}

#[test]
fn touch_fails_on_files_without_a_write_bit() {
    let m = Mount::new("small.jsonl");
    let before = fs::read(&m.file).unwrap();
    for target in [
        "session.json",
        "tree",
        "cost",
        ".id/6c93bccf/entry.json",
        ".id/6c93bccf/context",
        ".",
        ".id/6c93bccf",
    ] {
        let out = sh(&format!("touch {target}"), &m.mnt);
        assert!(
            !out.status.success() && out.stderr.contains("Permission denied"),
            "touch {target}: {out:?}"
        );
    }
    // The files that are written accept it (cp -p ends with it), and nothing is
    // appended for it.
    sh("touch reply name .id/6c93bccf/reply", &m.mnt).ok();
    assert_eq!(fs::read(&m.file).unwrap(), before);
}

/// The calls, made with Python's `os` (and `libc` for `fallocate` and `mmap`), each
/// printing `PATH OP RESULT` (`ok` or the errno's name).
const CALLS: &str = r#"
import os, errno, sys, fcntl, ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
def fail():
    e = ctypes.get_errno()
    raise OSError(e, os.strerror(e))
def on_fd(p, flags, f):
    fd = os.open(p, flags)
    try: f(fd)
    finally: os.close(fd)
def fallocate(fd):
    if libc.fallocate(fd, 0, ctypes.c_long(0), ctypes.c_long(10)) != 0: fail()
def mmap_shared(fd):
    a = libc.mmap(None, 4096, 3, 1, fd, 0)
    if a is None or a == ctypes.c_void_p(-1).value: fail()
    libc.munmap(ctypes.c_void_p(a), ctypes.c_size_t(4096))
def lock(fd):
    fcntl.flock(fd, fcntl.LOCK_EX); fcntl.flock(fd, fcntl.LOCK_UN)
calls = {
 "truncate": lambda p: os.truncate(p, 0),
 "grow": lambda p: os.truncate(p, 4096),
 "o_trunc": lambda p: on_fd(p, os.O_WRONLY | os.O_TRUNC, lambda fd: None),
 "o_append": lambda p: on_fd(p, os.O_WRONLY | os.O_APPEND, lambda fd: os.write(fd, b"")),
 "pwrite": lambda p: on_fd(p, os.O_WRONLY, lambda fd: os.pwrite(fd, b"x", 100)),
 "fallocate": lambda p: on_fd(p, os.O_WRONLY, fallocate),
 "mmap_write": lambda p: on_fd(p, os.O_RDWR, mmap_shared),
 "setxattr": lambda p: os.setxattr(p, "user.x", b"1", follow_symlinks=False),
 "removexattr": lambda p: os.removexattr(p, "user.x", follow_symlinks=False),
 "link": lambda p: os.link(p, "hardlink", follow_symlinks=False),
 "rename_over": lambda p: os.rename(p, "tree" if p != "tree" else "session.json"),
 "utime": lambda p: os.utime(p, follow_symlinks=False),
 "chmod": lambda p: os.chmod(p, 0o777),
 "chown": lambda p: os.chown(p, 1, 1, follow_symlinks=False),
 "unlink": lambda p: os.unlink(p),
 "mkdir_in": lambda p: os.mkdir(os.path.join(p, "d")),
 "rmdir": lambda p: os.rmdir(p),
 "o_direct": lambda p: on_fd(p, os.O_RDONLY | os.O_DIRECT, lambda fd: None),
 "lock": lambda p: on_fd(p, os.O_RDONLY, lock),
}
for p in sys.argv[1:]:
    for name, f in calls.items():
        try:
            f(p); r = "ok"
        except OSError as e:
            r = errno.errorcode.get(e.errno, str(e.errno))
        print(p, name, r)
"#;

/// Runs [`CALLS`] on `paths` (relative to `cwd`): `(path, call) -> result`.
fn calls(cwd: &Path, paths: &[&str]) -> BTreeMap<(String, String), String> {
    let mut args = vec!["-c", CALLS];
    args.extend_from_slice(paths);
    let out = run("python3", &args, cwd).ok();
    out.stdout
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            ((f[0].to_string(), f[1].to_string()), f[2].to_string())
        })
        .collect()
}

#[test]
fn the_calls_nobody_makes_fail_with_their_errno_and_change_no_byte() {
    need_python3();
    let m = Mount::new("small.jsonl");
    let before = fs::read(&m.file).unwrap();
    let leaf = fs::read_link(m.path("leaf")).unwrap();
    let id = leaf.file_name().unwrap().to_str().unwrap().to_string();
    let kind = format!(".id/{id}/assistant");
    let files = [
        "session.json",
        "tree",
        "cost",
        kind.as_str(),
        &format!(".id/{id}/entry.json"),
        &format!(".id/{id}/context"),
        &format!(".id/{id}/cost"),
    ];
    let dirs = [".", ".id", &format!(".id/{id}"), "labels", "branches"];
    let mut paths: Vec<&str> = files.to_vec();
    paths.extend_from_slice(&dirs);
    let got = calls(&m.mnt, &paths);
    let mut wrong = Vec::new();
    for ((p, call), r) in &got {
        let dir = dirs.contains(&p.as_str());
        let want: &[&str] = match call.as_str() {
            // A local lock, as on any filesystem; a read bypassing the page cache.
            "lock" => &["ok"],
            "o_direct" if !dir => &["ok"],
            "o_direct" => &["EINVAL"],
            "chmod" | "chown" => &["EPERM"],
            "setxattr" => &["EOPNOTSUPP", "ENOTSUP"],
            "removexattr" => &["ENODATA"],
            "mkdir_in" if dir => &["EACCES"],
            "mkdir_in" | "rmdir" if !dir => &["ENOTDIR"],
            "rmdir" => &["EACCES", "EINVAL", "EBUSY"],
            "link" if dir => &["EPERM"],
            "rename_over" if dir => &["ENOTDIR", "EBUSY"],
            "unlink" if dir => &["EISDIR"],
            "utime" | "link" | "rename_over" | "unlink" => &["EACCES"],
            _ if dir => &["EISDIR", "EACCES"],
            // Every way of writing a file that is not written: refused at open.
            _ => &["EACCES"],
        };
        if !want.contains(&r.as_str()) {
            wrong.push(format!("{call} {p}: {r}, not {want:?}"));
        }
    }
    assert!(got.len() >= 19 * paths.len(), "{got:?}");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(fs::read(&m.file).unwrap(), before, "a byte changed");

    // The files that are written: what LAYOUT.md says each call does, nothing else.
    let got = calls(&m.mnt, &["reply", &format!(".id/{id}/reply")]);
    for ((p, call), r) in &got {
        let want = match call.as_str() {
            // Emptying an empty file, and opens that write nothing: nothing appended.
            "truncate" | "o_trunc" | "o_append" | "o_direct" | "lock" | "utime" => "ok",
            // Padding nobody wrote, at the end or at an offset past it.
            "grow" | "pwrite" => "EINVAL",
            "fallocate" => "EOPNOTSUPP",
            // A file whose handle bypasses the page cache cannot be mapped shared.
            "mmap_write" => "ENODEV",
            "setxattr" => "EOPNOTSUPP",
            "removexattr" => "ENODATA",
            "chmod" | "chown" => "EPERM",
            "mkdir_in" | "rmdir" => "ENOTDIR",
            _ => "EACCES",
        };
        if r != want && !(want == "EOPNOTSUPP" && r == "ENOTSUP") {
            wrong.push(format!("{call} {p}: {r}, not {want}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(fs::read(&m.file).unwrap(), before, "a byte changed");
    // `name`: `truncate` and `O_TRUNC` clear it, as documented: one empty name line
    // appended (the second would not change it), the old bytes intact.
    calls(&m.mnt, &["name"]);
    let after = fs::read(&m.file).unwrap();
    assert!(after.starts_with(&before));
    let added: Vec<serde_json::Value> = std::str::from_utf8(&after[before.len()..])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(added.len(), 1, "{added:?}");
    assert_eq!(added[0]["type"], "session_info");
    assert_eq!(added[0]["name"], "");
}

/// A session cut short under the mount (to nothing, to a torn header, to half) while
/// files of it are open, a reply is being written and `grep -r` walks it: errors are
/// `ESTALE` or `ENOENT`, as documented, never `EIO`.
#[test]
fn a_session_cut_under_the_mount_answers_estale_or_enoent_never_eio() {
    let m = Mount::new("small.jsonl");
    let full = fs::read(&m.file).unwrap();
    for cut in [0usize, 100, 3000, full.len() / 2] {
        fs::write(&m.file, &full).unwrap();
        // The mount has caught up with the whole file again.
        assert!(wait_until(DEADLINE, || m.path(".id/76622e25").exists()));
        let script = format!(
            "exec 7> .id/76622e25/reply; exec 8< .id/6c93bccf/context; \
             truncate -s {cut} '{file}'; \
             echo hi >&7; exec 7>&-; cat <&8 >/dev/null; exec 8<&-; \
             cat .id/76622e25/user >/dev/null; grep -r x . >/dev/null; true",
            file = m.file.display()
        );
        let out = run("bash", &["-c", &script], &m.mnt);
        assert!(
            !out.stderr.contains("Input/output error"),
            "cut to {cut}: {}",
            out.stderr
        );
    }
    assert!(!m.stderr_text().contains("(EIO)"), "{}", m.stderr_text());
}
