//! Hostile input against every command that reads a session, with its cost measured:
//! `check`, `grep`, `index` (building the search index, in a cache of the test's own),
//! and `mount` followed by `find` and `grep -r` through the mount, on
//! `/dev/zero`, a FIFO nobody writes, `/proc/self/status`, a 4 GB sparse file, a header
//! plus a 2 GB unterminated line, and a session holding a 1 GB line.
//!
//! Each command must finish, or refuse, within [`DEADLINE`] (generous: it takes a
//! second or two on an idle machine; the bound is for a hang, not for speed), with
//! a peak RSS under [`PEAK_RSS_KB`] (the default bound on a line, 64 MiB, plus room
//! for the program itself: what a file costs is its index plus one line, never its
//! length), and no file may change (size, mtime and a hash of its first and last MiB).
//!
//! The peak is the process's `VmHWM` (a high-water mark): polled every few
//! milliseconds for `check` and `grep`, read once `find` and `grep -r` are done for the
//! mount. The big files are sparse
//! where zeros do (holes cost no disk and no time), and the 1 GB line is real bytes,
//! written in 64 MiB writes; all are removed with their temporary directory.

mod common;

use common::{Mount, tempdir};
use std::fs::{self, File};
use std::hash::{DefaultHasher, Hasher};
use std::io::Write;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one command may take before it counts as hung.
const DEADLINE: Duration = Duration::from_secs(120);
/// The largest peak RSS allowed for any command, in KiB: 64 MiB (the line bound) +
/// 136 MiB. Measured (debug build): 70 to 80 MiB on the big files, 5 MiB on the others.
const PEAK_RSS_KB: u64 = 200 << 10;

const HEADER: &str = r#"{"type":"session","version":3,"id":"hostile","timestamp":"2026-01-05T09:00:00.000Z","cwd":"/p"}"#;

fn user(id: &str, parent: Option<&str>, text: &str) -> String {
    let p = parent
        .map(|p| format!("\"{p}\""))
        .unwrap_or_else(|| "null".into());
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{p},"timestamp":"2026-01-05T09:00:01.000Z","message":{{"role":"user","content":[{{"type":"text","text":"{text}"}}],"timestamp":1}}}}"#
    )
}

/// What a finished command did.
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
    /// Peak resident set size, KiB.
    peak_kb: u64,
    took: Duration,
}

/// The high-water mark of `pid`'s resident memory (`VmHWM`), KiB; `None` once it has
/// exited (or before it has a memory of its own).
fn vm_hwm(pid: u32) -> Option<u64> {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Runs `sessionfs ARGS` in `cwd`, polling its peak RSS (`VmHWM`: a high-water mark,
/// so a peak between two polls is not missed, only one in its last few milliseconds);
/// kills it and fails after [`DEADLINE`]. (`ru_maxrss` would count the test process's
/// own memory too: Linux carries it over into the child's across `exec`.)
fn measure(args: &[&str], cwd: &Path) -> Ran {
    let out = tempfile::tempdir().unwrap();
    let (o, e) = (out.path().join("out"), out.path().join("err"));
    let start = Instant::now();
    let mut child = Command::new(common::bin())
        .args(args)
        .current_dir(cwd)
        .env("XDG_CACHE_HOME", out.path().join("cache"))
        .env_remove("SESSIONFS_CACHE")
        .env_remove("SESSIONFS_INDEX")
        .stdin(Stdio::null())
        .stdout(File::create(&o).unwrap())
        .stderr(File::create(&e).unwrap())
        .spawn()
        .unwrap();
    let mut peak_kb = 0;
    let status = loop {
        // Read before asking whether it exited: the last reading is its last moment.
        if let Some(kb) = vm_hwm(child.id()) {
            peak_kb = peak_kb.max(kb);
        }
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > DEADLINE {
            child.kill().ok();
            child.wait().ok();
            panic!("sessionfs {args:?} did not finish within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Ran {
        code: status.code().unwrap_or(-1),
        stdout: fs::read_to_string(o).unwrap_or_default(),
        stderr: fs::read_to_string(e).unwrap_or_default(),
        peak_kb,
        took: start.elapsed(),
    }
}

/// A file's size, mtime and a hash of its first and last MiB: enough to see a change.
fn stamp(p: &Path) -> Option<(u64, i64, i64, u64)> {
    let md = fs::metadata(p).ok().filter(|m| m.is_file())?;
    let f = File::open(p).unwrap();
    let mut h = DefaultHasher::new();
    let n = (1u64 << 20).min(md.len());
    let mut buf = vec![0u8; n as usize];
    if md.len() > 0 {
        f.read_exact_at(&mut buf, 0).unwrap();
        h.write(&buf);
        f.read_exact_at(&mut buf, md.len() - n).unwrap();
        h.write(&buf);
    }
    Some((md.len(), md.mtime(), md.mtime_nsec(), h.finish()))
}

#[track_caller]
fn within_bounds(what: &str, r: &Ran) {
    eprintln!(
        "{what}: exit {}, {:.1} s, peak RSS {} MiB",
        r.code,
        r.took.as_secs_f64(),
        r.peak_kb >> 10
    );
    assert!(
        r.peak_kb < PEAK_RSS_KB,
        "{what}: peak RSS {} KiB, over {PEAK_RSS_KB} KiB",
        r.peak_kb
    );
    assert!(!r.stderr.contains("panicked"), "{what}: {}", r.stderr);
}

/// What each command should do with one input.
struct Expect {
    /// `check`: exit status and a piece of its output (stdout and stderr).
    check: (i32, &'static str),
    /// `grep PATTERN`: exit status and a piece of its output.
    grep: (&'static str, i32, &'static str),
    /// `mount`: `Err((exit status, piece of the refusal))`, or `Ok(a path the mount
    /// must show)`.
    mount: Result<&'static str, (i32, &'static str)>,
}

/// Runs every command on `input`, in `dir`, and checks each against `want`, its
/// deadline and the memory bound, and that `input` did not change.
fn every_command(dir: &Path, input: &Path, want: Expect) {
    let before = stamp(input);
    let arg = input.to_str().unwrap();

    let r = measure(&["check", arg], dir);
    within_bounds(&format!("check {arg}"), &r);
    let said = format!("{}{}", r.stdout, r.stderr);
    assert_eq!(r.code, want.check.0, "check {arg}: {said}");
    assert!(said.contains(want.check.1), "check {arg}: {said}");

    let (pattern, code, piece) = want.grep;
    let r = measure(&["grep", pattern, arg], dir);
    within_bounds(&format!("grep {pattern} {arg}"), &r);
    let said = format!("{}{}", r.stdout, r.stderr);
    assert_eq!(r.code, code, "grep {arg}: {said}");
    assert!(said.contains(piece), "grep {arg}: {said}");

    // The index refuses what is no file, and indexes what it can of the rest (a file
    // it cannot index is left to be read whole by the search), in the same bounded
    // memory.
    let r = measure(&["index", arg], dir);
    within_bounds(&format!("index {arg}"), &r);
    let said = format!("{}{}", r.stdout, r.stderr);
    let refused = piece.contains(NEITHER);
    assert_eq!(r.code, if refused { 2 } else { 0 }, "index {arg}: {said}");
    if refused {
        assert!(r.stderr.contains(NEITHER), "index {arg}: {said}");
    }

    match want.mount {
        Err((code, refusal)) => {
            let mnt = tempdir();
            let r = measure(&["mount", arg, mnt.path().to_str().unwrap()], dir);
            within_bounds(&format!("mount {arg}"), &r);
            assert_eq!(r.code, code, "mount {arg}: {}", r.stderr);
            assert!(r.stderr.contains(refusal), "mount {arg}: {}", r.stderr);
        }
        Ok(shown) => {
            let tmp = tempdir();
            let m = Mount::start(tmp, input.to_path_buf(), &[]);
            for script in ["find . | wc -l", "grep -r -c zzzzqqqq . | wc -l"] {
                let out = common::sh(script, &m.mnt);
                assert!(
                    out.status.success() && out.stderr.is_empty(),
                    "{script} through the mount of {arg}: {out:?}"
                );
            }
            assert!(m.path(shown).exists(), "{shown} on the mount of {arg}");
            let hwm = vm_hwm(m.pid()).expect("VmHWM of the mount");
            let r = Ran {
                code: 0,
                stdout: String::new(),
                stderr: m.stderr_text(),
                peak_kb: hwm,
                took: Duration::ZERO,
            };
            within_bounds(&format!("mount {arg}, find, grep -r"), &r);
        }
    }
    assert_eq!(stamp(input), before, "{arg} changed");
}

const NEITHER: &str = "is neither a regular file nor a directory";

#[test]
fn dev_zero_is_refused_by_every_command() {
    let dir = tempdir();
    every_command(
        dir.path(),
        Path::new("/dev/zero"),
        Expect {
            check: (
                2,
                "sessionfs: /dev/zero is neither a regular file nor a directory",
            ),
            grep: (
                "x",
                2,
                "sessionfs: /dev/zero is neither a regular file nor a directory",
            ),
            mount: Err((
                3,
                "sessionfs: /dev/zero is neither a regular file nor a directory",
            )),
        },
    );
}

#[test]
fn a_fifo_nobody_writes_is_refused_by_every_command() {
    let dir = tempdir();
    let fifo = dir.path().join("s.jsonl");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    every_command(
        dir.path(),
        Path::new("s.jsonl"),
        Expect {
            check: (
                2,
                "sessionfs: s.jsonl is neither a regular file nor a directory",
            ),
            grep: ("x", 2, NEITHER),
            mount: Err((3, NEITHER)),
        },
    );
    // Inside a directory it is skipped, as before.
    let r = measure(&["check", "."], dir.path());
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(r.stdout.contains("no .jsonl file"), "{}", r.stdout);
}

#[test]
fn proc_self_status_is_no_session() {
    let dir = tempdir();
    every_command(
        dir.path(),
        Path::new("/proc/self/status"),
        Expect {
            check: (1, "not a Pi, Claude Code or Codex session: line 1"),
            grep: ("x", 2, "not a Pi, Claude Code or Codex session"),
            mount: Err((4, "not a Pi, Claude Code or Codex session")),
        },
    );
}

#[test]
fn a_4_gb_sparse_file() {
    let dir = tempdir();
    let p = dir.path().join("sparse.jsonl");
    File::create(&p).unwrap().set_len(4 << 30).unwrap();
    every_command(
        dir.path(),
        &p,
        Expect {
            check: (
                1,
                "one unterminated line of 4 GiB (longer than the 64 MiB a line may hold)",
            ),
            grep: ("x", 2, "longer than the 64 MiB a line may hold"),
            mount: Err((4, "longer than the 64 MiB a line may hold")),
        },
    );
}

#[test]
fn a_header_and_a_2_gb_unterminated_line() {
    let dir = tempdir();
    let p = dir.path().join("torn.jsonl");
    let mut f = File::create(&p).unwrap();
    let first = user("aaaaaaa1", None, "before the flood");
    write!(f, "{HEADER}\n{first}\n{{\"type\":\"message\",\"text\":\"").unwrap();
    // The rest of the line: 2 GB of zeros, as a hole.
    let at = f.metadata().unwrap().len();
    f.set_len(at + (2 << 30)).unwrap();
    drop(f);
    every_command(
        dir.path(),
        &p,
        Expect {
            check: (
                1,
                "torn.jsonl:3: warning: last line (2 GiB so far, no final newline) is longer than the 64 MiB",
            ),
            grep: ("flood", 0, "aaaaaaa1/user:before the flood"),
            mount: Ok("aaaaaaa1/user"),
        },
    );
}

#[test]
fn a_1_gb_line() {
    let dir = tempdir();
    let p = dir.path().join("long.jsonl");
    let mut f = File::create(&p).unwrap();
    let (first, last) = (
        user("aaaaaaa1", None, "first"),
        user("aaaaaaa3", Some("aaaaaaa1"), "after the long line"),
    );
    // An entry whose text is 1 GiB of `a`, written 64 MiB at a time.
    let long = user("aaaaaaa2", Some("aaaaaaa1"), "@");
    let (before, after) = long.split_once('@').unwrap();
    write!(f, "{HEADER}\n{first}\n{before}").unwrap();
    let chunk = vec![b'a'; 64 << 20];
    for _ in 0..16 {
        f.write_all(&chunk).unwrap();
    }
    write!(f, "{after}\n{last}\n").unwrap();
    drop(f);
    every_command(
        dir.path(),
        &p,
        Expect {
            check: (
                1,
                "long.jsonl:3: warning: line of 1 GiB, longer than the 64 MiB a line may hold (--max-line): skipped, not read",
            ),
            grep: ("after the", 0, "aaaaaaa1/aaaaaaa3/user:after the long line"),
            mount: Ok("aaaaaaa1/aaaaaaa3/user"),
        },
    );
}

/// The bound moves with `--max-line`: a 3 MiB line is read whole under the default,
/// and skipped under `--max-line 1MiB`, by every command alike.
#[test]
fn max_line_sets_the_bound() {
    let dir = tempdir();
    let p: PathBuf = dir.path().join("s.jsonl");
    let big = "x".repeat(3 << 20);
    let text = format!(
        "{HEADER}\n{}\n{}\n",
        user("aaaaaaa1", None, &format!("big {big}")),
        user("aaaaaaa2", Some("aaaaaaa1"), "small")
    );
    fs::write(&p, &text).unwrap();
    let r = measure(&["check", "s.jsonl"], dir.path());
    assert_eq!(r.code, 0, "{}", r.stdout);
    let r = measure(&["check", "--max-line", "1MiB", "s.jsonl"], dir.path());
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stdout
            .contains("s.jsonl:2: warning: line of 3 MiB, longer than the 1 MiB"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("parent aaaaaaa1 is not in the file"),
        "{}",
        r.stdout
    );
    let r = measure(&["grep", "-l", "big", "s.jsonl"], dir.path());
    assert_eq!((r.code, r.stdout.as_str()), (0, "aaaaaaa1/user\n"));
    let r = measure(
        &["grep", "--max-line", "1M", "-c", "small", "s.jsonl"],
        dir.path(),
    );
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, "aaaaaaa2/user:1\n"),
        "{}",
        r.stderr
    );
    let r = measure(&["check", "--max-line", "1", "s.jsonl"], dir.path());
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("between 1MiB and 1GiB"), "{}", r.stderr);
    let m = Mount::start(tempdir(), p.clone(), &["--max-line", "1MiB"]);
    assert!(m.path("aaaaaaa2/user").exists());
    assert!(!m.path("aaaaaaa1").exists());
    drop(m);
    assert_eq!(fs::read_to_string(&p).unwrap(), text);
}
