//! The mount through real programs: listing, reading, writing, signals, unmounting,
//! `--background`, and the checks that refuse a bad invocation.
//!
//! Each test mounts its own copy of a fixture (see `common`), so tests run in
//! parallel and never touch the fixtures themselves.

mod common;

use common::*;
use std::ffi::OsStr;
use std::fs;
use std::path::Path;

const ROOT: &str = "e8dfd932";
const CHILD: &str = "87720854";

fn lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn json(line: &str) -> serde_json::Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

// ---------------------------------------------------------------------------------
// Reading.

#[test]
fn ls_shows_the_fixed_names_and_the_roots() {
    let m = Mount::new("small.jsonl");
    let out = run("ls", &["-1"], &m.mnt).ok();
    let names: Vec<&str> = out.stdout.lines().collect();
    for n in [
        "branches",
        "labels",
        "leaf",
        "name",
        "reply",
        "session.json",
        "tree",
        ROOT,
    ] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    // `ls -l` goes through readdirplus/getattr for every name.
    let out = run("ls", &["-l"], &m.mnt).ok();
    assert!(out.stdout.contains("session.json"), "{}", out.stdout);
}

#[test]
fn cat_session_json_is_the_header_line() {
    let m = Mount::new("small.jsonl");
    let header = lines(&m.file).remove(0);
    let out = run("cat", &["session.json"], &m.mnt).ok();
    assert_eq!(out.stdout.trim_end_matches('\n'), header);
}

#[test]
fn an_entry_is_a_directory_with_its_content_and_links() {
    let m = Mount::new("small.jsonl");
    let out = run("ls", &["-1", ROOT], &m.mnt).ok();
    let names: Vec<&str> = out.stdout.lines().collect();
    for n in [
        "model_change",
        "reply",
        "entry.json",
        "context",
        "context.json",
        CHILD,
    ] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    let out = run("cat", &[format!("{ROOT}/model_change")], &m.mnt).ok();
    assert_eq!(out.stdout, "anthropic/claude-sonnet-4-5\n");
    // entry.json is a symlink into .id/, and reads as the entry's line.
    let out = run("readlink", &[format!("{ROOT}/entry.json")], &m.mnt).ok();
    assert!(
        out.stdout
            .trim_end()
            .ends_with(&format!(".id/{ROOT}/entry.json")),
        "{}",
        out.stdout
    );
    let out = run("cat", &[format!("{ROOT}/entry.json")], &m.mnt).ok();
    assert_eq!(out.stdout.trim_end_matches('\n'), lines(&m.file)[1]);
    // So is reply (writing through it appends: echo_into_an_entrys_reply_appends_a_child).
    let out = run("readlink", &[format!("{ROOT}/reply")], &m.mnt).ok();
    assert_eq!(out.stdout.trim_end(), format!("../.id/{ROOT}/reply"));
    let kind = |p: String| fs::symlink_metadata(m.path(&p)).unwrap().file_type();
    assert!(kind(format!("{ROOT}/reply")).is_symlink());
    assert!(kind(format!(".id/{ROOT}/reply")).is_file());
    // `cd` and a relative path work the same as a path from the root.
    let out = sh(
        &format!("cd {ROOT}/{CHILD} && cat thinking_level_change"),
        &m.mnt,
    )
    .ok();
    assert!(!out.stdout.is_empty());
}

#[test]
fn stat_sizes_match_what_is_read() {
    let m = Mount::new("small.jsonl");
    // `tree` is the exception: drawn on demand, its size is 0 until it is read.
    let out = sh("stat -c %s tree; wc -c < tree; stat -c %s tree", &m.mnt).ok();
    let sizes: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(sizes[0], "0", "tree before its first read");
    assert_eq!(sizes[1], sizes[2], "tree after its first read");
    // `cost` is not: its size is exact from the first `stat` (`ls -l` reads the
    // session's usage once).
    let out = sh(
        "stat -c %s cost; wc -c < cost; stat -c %s cost.json; wc -c < cost.json",
        &m.mnt,
    )
    .ok();
    let sizes: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(sizes[0], sizes[1], "cost before its first read");
    assert_ne!(sizes[0], "0");
    assert_eq!(sizes[2], sizes[3], "cost.json");
    let script = r#"find . -type f | while IFS= read -r f; do
        s=$(stat -c %s "$f"); n=$(wc -c < "$f")
        [ "$s" = "$n" ] || echo "$f: stat says $s, read $n"
    done"#;
    let out = sh(script, &m.mnt).ok();
    assert_eq!(out.stdout, "", "sizes differ:\n{}", out.stdout);
    let out = sh("find . -type f | wc -l", &m.mnt).ok();
    assert!(
        out.stdout.trim().parse::<u32>().unwrap() > 30,
        "{}",
        out.stdout
    );
}

#[test]
fn grep_r_finds_a_message() {
    let m = Mount::new("small.jsonl");
    let out = run("grep", &["-rl", "claude-sonnet-4-5", "."], &m.mnt).ok();
    assert!(
        out.stdout
            .lines()
            .any(|l| l.ends_with(&format!("{ROOT}/model_change"))),
        "{}",
        out.stdout
    );
}

// ---------------------------------------------------------------------------------
// Writing.

/// `grep -r` opens every regular file it finds, and nothing else: the content files
/// and the root's files, no `reply` per entry (those are links in the nested tree).
#[test]
fn grep_r_opens_only_the_files_it_must_read() {
    let m = Mount::with_env("small.jsonl", &[], &[("RUST_LOG", "debug")]);
    let files = run("find", &[".", "-type", "f"], &m.mnt).ok().stdout;
    let files: Vec<&str> = files.lines().collect();
    assert!(
        files.contains(&"./reply") && files.contains(&"./tree"),
        "{files:?}"
    );
    let nested_replies = files
        .iter()
        .filter(|f| f.ends_with("/reply") && **f != "./reply");
    assert_eq!(nested_replies.count(), 0, "{files:?}");
    let before = m.requests().get("OPEN").copied().unwrap_or(0);
    run("grep", &["-r", "-c", "no-such-text", "."], &m.mnt);
    let opens = m.requests().get("OPEN").copied().unwrap_or(0) - before;
    assert_eq!(opens, files.len(), "{files:?}");
}

#[test]
fn echo_into_an_entrys_reply_appends_a_child() {
    let m = Mount::new("small.jsonl");
    let n = lines(&m.file).len();
    sh(
        &format!("echo 'hello from the test' > {ROOT}/{CHILD}/reply"),
        &m.mnt,
    )
    .ok();
    let all = lines(&m.file);
    assert_eq!(all.len(), n + 1);
    let e = json(all.last().unwrap());
    assert_eq!(e["type"], "message");
    assert_eq!(e["parentId"], CHILD);
    assert_eq!(e["message"]["role"], "user");
    assert_eq!(e["message"]["content"][0]["text"], "hello from the test");
    let id = e["id"].as_str().unwrap().to_owned();
    // The new directory is visible at once, content and all.
    let out = run("ls", &["-1", &format!("{ROOT}/{CHILD}")], &m.mnt).ok();
    assert!(
        out.stdout.lines().any(|l| l == id),
        "{id} not in {}",
        out.stdout
    );
    let out = run("cat", &[format!("{ROOT}/{CHILD}/{id}/user")], &m.mnt).ok();
    assert_eq!(out.stdout, "hello from the test\n");
}

#[test]
fn echo_into_the_root_reply_appends_a_root() {
    let m = Mount::new("small.jsonl");
    // Get `tree` and `leaf` into the kernel's caches first: they must be invalidated.
    // The first `cat` draws the tree; later ones are served from the kernel's page
    // cache, which the append must drop.
    let tree_before = run("cat", &["tree"], &m.mnt).ok().stdout;
    for _ in 0..2 {
        assert_eq!(run("cat", &["tree"], &m.mnt).ok().stdout, tree_before);
    }
    run("readlink", &["leaf"], &m.mnt).ok();
    sh("echo 'a new start' > reply", &m.mnt).ok();
    let e = json(lines(&m.file).last().unwrap());
    assert_eq!(e["parentId"], serde_json::Value::Null);
    let id = e["id"].as_str().unwrap().to_owned();
    let out = run("ls", &["-1"], &m.mnt).ok();
    assert!(
        out.stdout.lines().any(|l| l == id),
        "{id} not in {}",
        out.stdout
    );
    let tree = run("cat", &["tree"], &m.mnt).ok().stdout;
    assert!(
        !tree_before.contains(&id) && tree.contains(&id),
        "{id} not in the tree:\n{tree}"
    );
    let leaf = run("readlink", &["leaf"], &m.mnt).ok().stdout;
    assert!(leaf.trim_end().ends_with(&id), "leaf -> {leaf}, not {id}");
}

/// The mount carries nothing to execute, no devices or set-uid files, and keeps no
/// access times (they would cost a GETATTR per cached file); `--read-only` is `ro`.
#[test]
fn mount_options_are_nosuid_nodev_noexec_noatime() {
    let m = Mount::new("small.jsonl");
    let opts = mount_options(&m.mnt).expect("the mount is in /proc/mounts");
    let opts: Vec<&str> = opts.split(',').collect();
    for want in [
        "rw",
        "nosuid",
        "nodev",
        "noexec",
        "noatime",
        "default_permissions",
    ] {
        assert!(opts.contains(&want), "{want} missing from {opts:?}");
    }
    let ro = Mount::with_args("small.jsonl", &["--read-only"]);
    let opts = mount_options(&ro.mnt).expect("the mount is in /proc/mounts");
    assert!(opts.split(',').any(|o| o == "ro"), "{opts}");
}

#[test]
fn read_only_mount_refuses_writes() {
    let m = Mount::with_args("small.jsonl", &["--read-only"]);
    let before = fs::read(&m.file).unwrap();
    let out = sh("echo hi > reply", &m.mnt);
    assert!(!out.status.success());
    assert!(
        out.stderr.contains("Read-only file system"),
        "{}",
        out.stderr
    );
    assert_eq!(fs::read(&m.file).unwrap(), before);
}

/// A read-only mount has no `reply` files, and the kernel opens, closes and reads its
/// files without an OPEN, RELEASE or FLUSH round trip each (ENOSYS at the first OPEN
/// and FLUSH tells it none are needed); everything reads as on a writable mount.
#[test]
fn read_only_mount_reads_everything_without_opening_files() {
    let rw = Mount::new("medium.jsonl");
    let ro = Mount::with_env("medium.jsonl", &["--read-only"], &[("RUST_LOG", "debug")]);
    let all = |m: &Mount| run("grep", &["-r", "", "."], &m.mnt).ok().stdout;
    let (a, b) = (all(&rw), all(&ro));
    assert!(a.contains("./tree:") && a.lines().count() > 10_000);
    assert_eq!(
        a, b,
        "grep -r '' . differs between the writable and read-only mounts"
    );
    for _ in 0..2 {
        assert_eq!(
            run("cat", &["tree"], &ro.mnt).ok().stdout,
            run("cat", &["tree"], &rw.mnt).ok().stdout
        );
    }
    let replies = |m: &Mount| {
        run("find", &[".", "-name", "reply"], &m.mnt)
            .ok()
            .stdout
            .lines()
            .count()
    };
    assert!(replies(&rw) > 1000);
    assert_eq!(replies(&ro), 0);
    let deep = run(
        "find",
        &[".", "-name", "context", "-path", "*/.id/*"],
        &ro.mnt,
    );
    assert!(deep.ok().stdout.is_empty(), ".id lists nothing");
    let leaf = fs::read_link(ro.path("leaf")).unwrap();
    let ctx = |m: &Mount| fs::read(m.path(&format!("{}/context.json", leaf.display()))).unwrap();
    assert_eq!(ctx(&ro), ctx(&rw));
    let n = ro.requests();
    assert!(n.get("READ").is_some_and(|&r| r > 1000), "{n:?}");
    assert!(n.get("OPEN").copied().unwrap_or(0) <= 1, "{n:?}");
    assert!(n.get("FLUSH").copied().unwrap_or(0) <= 1, "{n:?}");
    assert_eq!(n.get("RELEASE"), None, "{n:?}");
}

#[test]
fn bad_replies_fail_in_write_with_a_readable_error() {
    let m = Mount::with_args("small.jsonl", &["--max-reply", "10"]);
    let before = fs::read(&m.file).unwrap();
    // bash reports errors from write(2), and ignores those from close(2).
    let out = run(
        "bash",
        &["-c", "echo 'more than ten bytes' > reply"],
        &m.mnt,
    );
    assert!(!out.status.success());
    assert!(out.stderr.contains("File too large"), "{}", out.stderr);
    let out = run("bash", &["-c", "printf '\\xff\\xfe' > reply"], &m.mnt);
    assert!(!out.status.success());
    assert!(
        out.stderr.contains("Invalid or incomplete multibyte"),
        "{}",
        out.stderr
    );
    assert_eq!(fs::read(&m.file).unwrap(), before);
    run("bash", &["-c", "echo short > reply"], &m.mnt).ok();
    let e = json(lines(&m.file).last().unwrap());
    assert_eq!(e["message"]["content"][0]["text"], "short");
}

#[test]
fn the_tree_cannot_be_edited_but_touch_works() {
    let m = Mount::new("small.jsonl");
    let before = fs::read(&m.file).unwrap();
    for script in [
        "mkdir newdir",
        "echo x > newfile",
        &format!("rmdir {ROOT}"),
        "mv tree tree2",
    ] {
        let out = sh(script, &m.mnt);
        assert!(!out.status.success(), "{script} succeeded");
    }
    let out = sh("mkdir newdir", &m.mnt);
    assert!(out.stderr.contains("Permission denied"), "{}", out.stderr);
    // touch sets times, which are accepted and ignored; opening reply without
    // writing appends nothing.
    sh("touch reply", &m.mnt).ok();
    // chmod to another mode is refused; restating the mode is fine.
    let mode = run("stat", &["-c", "%a", "tree"], &m.mnt)
        .ok()
        .stdout
        .trim()
        .to_owned();
    let out = run("chmod", &["777", "tree"], &m.mnt);
    assert!(out.stderr.contains("Operation not permitted"), "{out:?}");
    run("chmod", &[mode.as_str(), "tree"], &m.mnt).ok();
    assert_eq!(fs::read(&m.file).unwrap(), before);
}

#[test]
fn appends_by_another_program_appear() {
    appends_appear(&[]);
}

/// A read-only mount has no handles for the kernel to keep files by: what it cached of
/// `tree` and `name` must still be dropped when the file changes.
#[test]
fn appends_by_another_program_appear_on_a_read_only_mount() {
    appends_appear(&["--read-only"]);
}

fn appends_appear(args: &[&str]) {
    let m = Mount::with_args("small.jsonl", args);
    // Get `tree` and `leaf` into the kernel's caches first: they must be invalidated.
    run("cat", &["tree"], &m.mnt).ok();
    run("readlink", &["leaf"], &m.mnt).ok();
    let line = format!(
        r#"{{"type":"message","id":"abcdef01","parentId":"{ROOT}","timestamp":"2026-01-05T10:00:00.000Z","message":{{"role":"user","content":[{{"type":"text","text":"from outside"}}],"timestamp":1767607200000}}}}"#
    );
    sh(
        &format!("printf '%s\\n' '{line}' >> '{}'", m.file.display()),
        m.dir(),
    )
    .ok();
    let dir = m.path(ROOT);
    let seen = wait_until(DEADLINE, || {
        fs::read_dir(&dir)
            .is_ok_and(|mut d| d.any(|e| e.is_ok_and(|e| e.file_name() == "abcdef01")))
    });
    assert!(seen, "abcdef01 did not appear under {ROOT}");
    let tree = m.path("tree");
    assert!(
        wait_until(DEADLINE, || fs::read_to_string(&tree)
            .is_ok_and(|t| t.contains("abcdef01"))),
        "abcdef01 did not appear in the tree"
    );
    let leaf = m.path("leaf");
    assert!(
        wait_until(DEADLINE, || fs::read_link(&leaf)
            .is_ok_and(|l| l.ends_with("abcdef01"))),
        "leaf did not move to abcdef01: {:?}",
        fs::read_link(&leaf)
    );
    let out = run("cat", &[format!("{ROOT}/abcdef01/user")], &m.mnt).ok();
    assert_eq!(out.stdout, "from outside\n");
}

// ---------------------------------------------------------------------------------
// Ending: signals and external unmounts.

#[test]
fn signals_unmount_and_exit_zero() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let mut m = Mount::new("small.jsonl");
        m.signal(sig);
        let status = m.wait_exit(DEADLINE);
        assert!(
            status.is_some_and(|s| s.success()),
            "signal {sig}: {status:?}: {}",
            m.stderr_text()
        );
        assert!(!m.is_mounted(), "signal {sig}: still mounted");
        assert!(!is_dead_mount(&m.mnt), "signal {sig}: left a dead mount");
    }
}

#[test]
fn sigint_while_the_mount_is_busy_still_exits() {
    let mut m = Mount::new("small.jsonl");
    // A process whose working directory is inside the mount keeps it busy.
    let mut busy = std::process::Command::new("sleep")
        .arg("60")
        .current_dir(m.path(ROOT))
        .spawn()
        .unwrap();
    m.signal(libc::SIGINT);
    let status = m.wait_exit(DEADLINE);
    let _ = busy.kill();
    let _ = busy.wait();
    assert!(
        status.is_some_and(|s| s.success()),
        "{status:?}: {}",
        m.stderr_text()
    );
    assert!(!m.is_mounted());
}

#[test]
fn an_external_umount_ends_the_process() {
    let mut m = Mount::new("small.jsonl");
    let mnt = m.mnt.clone();
    if is_root() {
        run("umount", &[&mnt], m.dir()).ok();
    } else {
        run("fusermount3", &[OsStr::new("-u"), mnt.as_os_str()], m.dir()).ok();
    }
    let status = m.wait_exit(DEADLINE);
    assert!(
        status.is_some_and(|s| s.success()),
        "{status:?}: {}",
        m.stderr_text()
    );
}

#[test]
fn a_dead_mount_is_reported_and_then_cleaned_up() {
    let mut m = Mount::new("small.jsonl");
    // SIGKILL leaves the mount behind with nobody serving it.
    m.signal(libc::SIGKILL);
    assert!(m.wait_exit(DEADLINE).is_some());
    // Until the cached attributes of the root expire, stat still answers.
    assert!(
        wait_until(DEADLINE, || is_dead_mount(&m.mnt)),
        "expected a dead mount at {}",
        m.mnt.display()
    );
    let args = [OsStr::new("mount"), m.file.as_os_str(), m.mnt.as_os_str()];
    let out = sessionfs(&args, m.dir());
    assert_refused(&out, 7, "dead FUSE mount");
    let mnt = m.mnt.clone();
    drop(m);
    assert!(!is_dead_mount(&mnt) && !is_mount_point(&mnt));
}

#[test]
fn the_harness_unmounts_when_a_test_panics() {
    let mut mnt = None;
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let m = Mount::new("small.jsonl");
        mnt = Some(m.mnt.clone());
        panic!("on purpose, to test the harness");
    }));
    assert!(r.is_err());
    let mnt = mnt.unwrap();
    assert!(!is_mount_point(&mnt) && !is_dead_mount(&mnt));
    assert!(!mnt.exists(), "the temporary directory was left behind");
}

// ---------------------------------------------------------------------------------
// --background.

/// Unmounts a mount made with --background when dropped.
struct Unmount<'a>(&'a Path);

impl Drop for Unmount<'_> {
    fn drop(&mut self) {
        if is_mount_point(self.0) || is_dead_mount(self.0) {
            unmount(self.0);
        }
    }
}

/// Pids of processes whose command line holds `arg`.
fn pids_with_arg(arg: &Path) -> Vec<u32> {
    let want = arg.as_os_str().as_encoded_bytes();
    let mut pids = Vec::new();
    for e in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmd) = fs::read(e.path().join("cmdline"))
            && cmd.split(|&b| b == 0).any(|a| a == want)
        {
            pids.push(pid);
        }
    }
    pids
}

#[test]
fn background_returns_once_the_mount_answers() {
    let dir = tempdir();
    let file = dir.path().join("small.jsonl");
    fs::copy(fixture("small.jsonl"), &file).unwrap();
    let mnt = dir.path().join("mnt");
    fs::create_dir(&mnt).unwrap();
    let _guard = Unmount(&mnt);
    let args = [
        OsStr::new("mount"),
        OsStr::new("--background"),
        file.as_os_str(),
        mnt.as_os_str(),
    ];
    let out = sessionfs(&args, dir.path());
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, "");
    // Said once, as the foreground mount says it (mount_usability checks the words).
    assert_eq!(
        out.stderr.matches("sessionfs: mounted ").count(),
        1,
        "{out:?}"
    );
    assert_eq!(out.stderr.lines().count(), 1, "{out:?}");
    // No waiting: it answers as soon as the command returns.
    assert!(answers(&mnt));
    let out = run("cat", &["session.json"], &mnt).ok();
    assert!(out.stdout.contains("\"type\":\"session\""));
    // The background process ends when the mount is unmounted.
    assert_eq!(pids_with_arg(&mnt).len(), 1);
    unmount(&mnt);
    assert!(
        wait_until(DEADLINE, || pids_with_arg(&mnt).is_empty()),
        "the background process is still running"
    );
}

#[test]
fn background_reports_the_childs_error_and_status() {
    let dir = tempdir();
    let file = dir.path().join("bad.jsonl");
    fs::write(&file, "{\"hello\":\"world\"}\n").unwrap();
    let mnt = dir.path().join("mnt");
    fs::create_dir(&mnt).unwrap();
    let _guard = Unmount(&mnt);
    let out = sessionfs(&["mount", "--background", "bad.jsonl", "mnt"], dir.path());
    assert_eq!(out.code(), Some(4), "{out:?}");
    assert!(out.stderr.starts_with("sessionfs: "), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("not a Pi, Claude Code or Codex session"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(!is_mount_point(&mnt));
}

// ---------------------------------------------------------------------------------
// Checks before mounting: one line, a distinct status, nothing mounted.

/// A directory with a copy of small.jsonl and an empty `mnt`.
fn scratch() -> tempfile::TempDir {
    let dir = tempdir();
    fs::copy(fixture("small.jsonl"), dir.path().join("small.jsonl")).unwrap();
    fs::create_dir(dir.path().join("mnt")).unwrap();
    dir
}

#[track_caller]
fn assert_refused(out: &Output, code: i32, needle: &str) {
    assert_eq!(out.code(), Some(code), "{out:?}");
    assert!(out.stderr.starts_with("sessionfs: "), "{out:?}");
    assert!(
        out.stderr.contains(needle),
        "expected {needle:?} in {:?}",
        out.stderr
    );
    assert_eq!(out.stderr.lines().count(), 1, "{:?}", out.stderr);
    assert_eq!(out.stdout, "");
}

#[test]
fn refuses_a_missing_file() {
    let d = scratch();
    assert_refused(
        &sessionfs(&["mount", "nope.jsonl", "mnt"], d.path()),
        3,
        "no such file",
    );
    assert_refused(
        &sessionfs(&["mount", "mnt", "mnt"], d.path()),
        3,
        "is a directory",
    );
}

#[test]
fn refuses_a_file_that_is_not_a_session() {
    let d = scratch();
    fs::write(d.path().join("bad.jsonl"), "{\"hello\":\"world\"}\n").unwrap();
    assert_refused(
        &sessionfs(&["mount", "bad.jsonl", "mnt"], d.path()),
        4,
        "not a Pi, Claude Code or Codex session",
    );
    fs::write(d.path().join("empty.jsonl"), "").unwrap();
    assert_refused(
        &sessionfs(&["mount", "empty.jsonl", "mnt"], d.path()),
        4,
        "empty",
    );
}

#[test]
fn refuses_a_bad_mount_point() {
    let d = scratch();
    assert_refused(
        &sessionfs(&["mount", "small.jsonl", "nope"], d.path()),
        5,
        "no such directory",
    );
    assert_refused(
        &sessionfs(&["mount", "small.jsonl", "small.jsonl"], d.path()),
        5,
        "not a directory",
    );
    fs::write(d.path().join("mnt/x"), "").unwrap();
    assert_refused(
        &sessionfs(&["mount", "small.jsonl", "mnt"], d.path()),
        6,
        "not empty",
    );
}

#[test]
fn refuses_a_mount_point_that_is_already_mounted() {
    if !is_root() {
        eprintln!("skipped: needs root to mount a tmpfs");
        return;
    }
    let d = scratch();
    let mnt = d.path().join("mnt");
    run("mount", &["-t", "tmpfs", "none", "mnt"], d.path()).ok();
    let _guard = Unmount(&mnt);
    assert_refused(
        &sessionfs(&["mount", "small.jsonl", "mnt"], d.path()),
        7,
        "already a mount point",
    );
}

#[test]
fn refuses_when_dev_fuse_is_missing() {
    if !is_root() {
        eprintln!("skipped: needs root for a private mount namespace");
        return;
    }
    let d = scratch();
    // A private mount namespace with an empty /dev.
    let probe = run(
        "unshare",
        &["-m", "--propagation", "private", "true"],
        d.path(),
    );
    if !probe.status.success() {
        eprintln!("skipped: unshare -m does not work here: {}", probe.stderr);
        return;
    }
    let script = format!(
        "mount -t tmpfs none /dev && exec '{}' mount small.jsonl mnt",
        bin()
    );
    let out = run(
        "unshare",
        &["-m", "--propagation", "private", "sh", "-c", &script],
        d.path(),
    );
    assert_refused(&out, 8, "/dev/fuse is missing");
}

#[test]
fn refuses_a_user_without_fusermount3() {
    if !is_root() {
        eprintln!("skipped: needs root to become another user");
        return;
    }
    let d = scratch();
    for p in [d.path(), &d.path().join("mnt")] {
        fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    }
    if [
        "/bin/fusermount3",
        "/sbin/fusermount3",
        "/usr/bin/fusermount3",
        "/usr/sbin/fusermount3",
    ]
    .iter()
    .any(|p| Path::new(p).exists())
    {
        eprintln!("skipped: fusermount3 is installed");
        return;
    }
    let Some(setpriv) = ["/usr/bin/setpriv", "/bin/setpriv"]
        .into_iter()
        .find(|p| Path::new(p).exists())
    else {
        eprintln!("skipped: no setpriv");
        return;
    };
    let mut c = std::process::Command::new(setpriv);
    c.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        bin(),
        "mount",
        "small.jsonl",
        "mnt",
    ])
    .current_dir(d.path())
    .env("PATH", "/nonexistent")
    .env_remove("FUSERMOUNT_PATH");
    let out = run_command(c);
    assert_refused(
        &out,
        9,
        "non-root users need fusermount3 from the fuse3 package",
    );
}

#[test]
fn a_bad_command_line_is_status_2_and_help_lists_the_statuses() {
    let d = scratch();
    let out = sessionfs(&["mount", "small.jsonl"], d.path());
    assert_eq!(out.code(), Some(2), "{out:?}");
    let out = sessionfs(&["mount", "--help"], d.path()).ok();
    assert!(out.stdout.contains("Exit status:"), "{}", out.stdout);
    assert!(out.stdout.contains("9  not permitted"), "{}", out.stdout);
}
