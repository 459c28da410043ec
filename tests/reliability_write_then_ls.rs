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
