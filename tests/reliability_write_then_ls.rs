//! A reply is listed as soon as the command that wrote it has returned.
//!
//! `sh -c 'echo … > reply'` followed at once by `ls` must show the new entry, in the
//! entry's nested directory, in its `.id/` directory, and (for a new root) at the
//! root, on a single-session mount and on a sessions mount. The kernel keeps
//! directory listings (directories are opened without asking the mount), so this
//! holds only if the listing cached before the write is forgotten before `close`
//! returns. Each round lists the directory first, so that the kernel holds its listing
//! when the reply is written, and many rounds are run, since a miss is a race.

mod common;

use common::*;
use std::fs;
use std::path::Path;

/// Rounds per directory; `SESSIONFS_WRITE_LS_ROUNDS` overrides.
fn rounds() -> u64 {
    env_num("SESSIONFS_WRITE_LS_ROUNDS", 60)
}

/// The id of the last entry of a session file.
fn last_id(file: &Path) -> String {
    let text = fs::read_to_string(file).unwrap();
    let line = text.lines().last().unwrap();
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    v["id"].as_str().unwrap().to_owned()
}

/// Writes a reply in `dir` (a path relative to `mnt`) and lists `dir` in the same
/// script, `rounds` times; fails on the first listing without the new entry.
fn write_then_ls(mnt: &Path, file: &Path, dir: &str, rounds: u64) {
    let mut misses = Vec::new();
    for i in 0..rounds {
        let out = sh(
            &format!("cd './{dir}' && ls -1a > /dev/null && echo 'round {i}' > reply && ls -1a"),
            mnt,
        )
        .ok();
        let id = last_id(file);
        if !out.stdout.lines().any(|l| l == id) {
            misses.push(i);
        }
    }
    assert!(
        misses.is_empty(),
        "{dir}: the new entry was missing from `ls` right after the write in rounds \
         {misses:?} of {rounds}"
    );
}

/// The path of the entry with id `id` in the nested tree of the session at `root`,
/// relative to `root` (`./A/B/ID`).
fn nested_path(root: &Path, id: &str) -> String {
    let out = run("find", &[".", "-type", "d", "-name", id], root).ok();
    let path = out.stdout.lines().next().expect("the entry is in the tree");
    path.to_owned()
}

fn exercise(mnt: &Path, session_dir: &str, file: &Path) {
    let at = |p: &str| match session_dir {
        "" => p.to_owned(),
        s => format!("{s}/{p}"),
    };
    // A new root, listed at the session's root.
    write_then_ls(mnt, file, &at("."), rounds());
    // Replies under one entry: its children, listed in its nested directory...
    let parent = last_id(file);
    let nested = nested_path(&mnt.join(at(".")), &parent);
    write_then_ls(mnt, file, &at(&nested), rounds());
    // ... and in its `.id/` directory.
    write_then_ls(mnt, file, &at(&format!(".id/{parent}")), rounds());
}

#[test]
fn a_reply_is_listed_when_the_write_returns_single_session() {
    let m = Mount::new("small.jsonl");
    exercise(&m.mnt, "", &m.file);
}

#[test]
fn a_reply_is_listed_when_the_write_returns_sessions_mount() {
    let dir = tempdir();
    let root = dir.path().join("sessions");
    let project = root.join("--home-dev-proj--");
    fs::create_dir_all(&project).unwrap();
    let file = project.join("small.jsonl");
    fs::copy(fixture("small.jsonl"), &file).unwrap();
    fs::copy(fixture("linear.jsonl"), project.join("linear.jsonl")).unwrap();
    let m = Mount::sessions_dir(dir, Some(&root), &[], &[]);
    exercise(&m.mnt, "--home-dev-proj--/small", &file);
}

/// The kernel serves a directory listing it keeps only while the directory's mtime is
/// the one it kept it with, and it may refill that listing from a READDIR answered
/// just before a change. So the mount moves a directory's time below the microsecond
/// with each change of its listing it tells the kernel of (`fuse::notify`), leaving
/// the time users read (to the microsecond) as the layout gives it. Checked here
/// through the kernel: `stat` of an entry's directory before and after replies add
/// children to it.
#[test]
fn a_directory_s_time_moves_below_the_microsecond_when_its_listing_changes() {
    use std::os::unix::fs::MetadataExt;
    let m = Mount::new("small.jsonl");
    let parent = last_id(&m.file);
    let dir = m.mnt.join(nested_path(&m.mnt, &parent));
    let time = |d: &Path| {
        let md = fs::metadata(d).unwrap();
        (md.mtime(), md.mtime_nsec())
    };
    let micros = |t: (i64, i64)| (t.0, t.1 / 1000);
    let mut before = time(&dir);
    for round in 0..3 {
        let out = sh(&format!("echo 'round {round}' > reply && ls -1a"), &dir).ok();
        let child = last_id(&m.file);
        assert!(
            out.stdout.lines().any(|l| l == child),
            "round {round}: {out:?}"
        );
        // The kernel keeps attributes for a second at most; the change is told at once.
        let mut now = before;
        assert!(
            wait_until(DEADLINE, || {
                now = time(&dir);
                now != before
            }),
            "round {round}: the directory's time stayed {before:?} after a child was added"
        );
        assert_eq!(
            micros(now),
            micros(before),
            "round {round}: only the nanoseconds below the microsecond move"
        );
        before = now;
    }
}
