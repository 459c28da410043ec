//! The mount's fork gesture, driven with the shell: `echo > fork` (or `touch fork`, or
//! `: > fork`) in an entry's directory writes a new session file beside the source, and
//! `cat fork` then gives its path (and, in a sessions directory, its directory in the
//! mount, which is there at once).

mod common;

use common::{Mount, copy_tree, sh, tempdir};
use sessionfs::model::Session;
use std::fs;
use std::path::{Path, PathBuf};

fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    v.sort();
    v
}

#[test]
fn echo_to_fork_writes_pis_fork_and_cat_fork_names_it() {
    let m = Mount::new("small.jsonl");
    let dir = m.file.parent().unwrap().to_path_buf();
    let before = fs::read(&m.file).unwrap();
    // `fork` is listed in an entry's directory (a link, as `reply` is) and reads empty.
    let out = sh("ls .id/6c93bccf && cat .id/6c93bccf/fork | wc -c", &m.mnt).ok();
    assert!(out.stdout.lines().any(|l| l == "fork"), "{}", out.stdout);
    assert!(out.stdout.ends_with("0\n"), "{}", out.stdout);
    // Through the nested tree's link.
    let nested = sh("find . -name 6c93bccf -type d | head -1", &m.mnt).ok();
    let entry = m.mnt.join(nested.stdout.trim());
    let link = fs::read_link(entry.join("fork")).unwrap();
    assert!(
        link.to_str().unwrap().ends_with(".id/6c93bccf/fork"),
        "{link:?}"
    );
    let out = sh("echo > fork && cat fork", &entry).ok();
    let made = PathBuf::from(out.stdout.trim_end());
    assert_eq!(made.parent(), Some(dir.as_path()), "{}", out.stdout);
    assert_eq!(
        out.stdout.lines().count(),
        1,
        "a single-file mount: the path only"
    );
    let src = Session::open(&m.file).unwrap();
    let f = Session::open(&made).unwrap();
    let i = src.find("6c93bccf").unwrap();
    assert_eq!(
        f.llm_context(f.leaf().unwrap()).unwrap(),
        src.llm_context(i).unwrap()
    );
    // `touch` and `: >` make one more each; the source is never written.
    sh("touch .id/6c93bccf/fork && : > .id/6c93bccf/fork", &m.mnt).ok();
    assert_eq!(jsonl_files(&dir).len(), 4, "the source and three forks");
    assert_eq!(fs::read(&m.file).unwrap(), before);
    // `cat fork` names the latest.
    let last = sh("cat .id/6c93bccf/fork", &m.mnt).ok().stdout;
    assert!(Path::new(last.trim_end()).exists());
    assert_ne!(last, out.stdout);
    // `grep -r` does not see it (a link in the nested tree; `.id/` lists nothing).
    let stem = made.file_stem().unwrap().to_str().unwrap();
    let g = sh(&format!("grep -rl {stem} . | head -3"), &m.mnt);
    assert!(g.stdout.trim().is_empty(), "{}", g.stdout);
}

#[test]
fn a_fork_that_cannot_be_made_fails_and_says_why() {
    let m = Mount::new("legacy-v1.jsonl");
    let dir = m.file.parent().unwrap().to_path_buf();
    // Known before anyone tries: `fork` shows no write bit and already says why.
    let before = sh(
        "cd \"$(readlink -f leaf)\" && stat -c %A fork && cat fork",
        &m.mnt,
    )
    .ok();
    assert!(
        before.stdout.starts_with("-r--r--r--\nerror: cannot fork")
            && before.stdout.contains("format v1"),
        "{}",
        before.stdout
    );
    let out = sh("cd \"$(readlink -f leaf)\" && echo > fork", &m.mnt);
    assert_ne!(out.code(), Some(0));
    // Not "Read-only file system": the mount is not read-only; the fork is refused.
    assert!(out.stderr.contains("Permission denied"), "{}", out.stderr);
    let why = sh("cat \"$(readlink -f leaf)\"/fork", &m.mnt).ok().stdout;
    assert!(
        why.starts_with("error: cannot fork") && why.contains("format v1"),
        "{why}"
    );
    assert_eq!(jsonl_files(&dir).len(), 1, "nothing written");
}

#[test]
fn a_read_only_mount_has_no_fork() {
    let m = Mount::with_args("small.jsonl", &["--read-only"]);
    let out = sh("ls .id/6c93bccf", &m.mnt).ok();
    assert!(!out.stdout.lines().any(|l| l == "fork"), "{}", out.stdout);
    let out = sh("echo > .id/6c93bccf/fork", &m.mnt);
    assert_ne!(out.code(), Some(0));
    assert!(
        out.stderr.contains("Read-only file system"),
        "{}",
        out.stderr
    );
    assert_eq!(jsonl_files(m.file.parent().unwrap()).len(), 1);
}

#[test]
fn in_a_sessions_directory_the_fork_is_there_at_once() {
    let dir = tempdir();
    let sessions = dir.path().join("sessions");
    fs::create_dir_all(sessions.join("--home-dev-proj--")).unwrap();
    fs::copy(
        common::fixture("tour.jsonl"),
        sessions.join("--home-dev-proj--/tour.jsonl"),
    )
    .unwrap();
    let m = Mount::sessions_dir(dir, Some(&sessions), &[], &[]);
    let proj = m.mnt.join("--home-dev-proj--");
    assert_eq!(common::try_ls(&proj).unwrap(), vec!["tour"]);
    let out = sh(
        "echo > tour/.id/8ccd862a/fork && cat tour/.id/8ccd862a/fork",
        &proj,
    )
    .ok();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", out.stdout);
    let file = Path::new(lines[0]);
    assert_eq!(file.parent().unwrap(), sessions.join("--home-dev-proj--"));
    let in_mount = Path::new(lines[1]);
    assert_eq!(in_mount.parent().unwrap(), proj);
    // Listed, and entered, right away: no waiting for the directory watcher.
    let ls = common::try_ls(&proj).unwrap();
    assert_eq!(ls.len(), 2, "{ls:?}");
    let leaf = fs::read_link(in_mount.join("leaf")).unwrap();
    assert!(leaf.to_str().unwrap().starts_with(".id/"), "{leaf:?}");
    let ctx = fs::read(in_mount.join("leaf/context")).unwrap();
    assert_eq!(
        ctx,
        fs::read(proj.join("tour/.id/8ccd862a/context")).unwrap()
    );
    // The fork's own entries fork too.
    let out = sh("echo > leaf/fork && cat leaf/fork", in_mount).ok();
    assert_eq!(out.stdout.lines().count(), 2);
    assert_eq!(common::try_ls(&proj).unwrap().len(), 3);
}

#[test]
fn claude_code_sessions_fork_through_the_mount_too() {
    let dir = tempdir();
    let projects = dir.path().join("projects");
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude/projects"),
        &projects,
    );
    let m = Mount::sessions_dir(dir, Some(&projects), &[], &[]);
    let proj = m.mnt.join("-home-dev-src-tools");
    let out = sh(
        "echo > 644750c6-819f-4bc1-8d96-f535db009ee8/leaf/fork && \
         cat 644750c6-819f-4bc1-8d96-f535db009ee8/leaf/fork",
        &proj,
    )
    .ok();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", out.stdout);
    let name = Path::new(lines[0]).file_name().unwrap().to_str().unwrap();
    assert_eq!(name.len(), 36 + 6, "<uuid>.jsonl: {name}");
    let in_mount = Path::new(lines[1]);
    let ctx_fork = fs::read_to_string(in_mount.join("leaf/context.json")).unwrap();
    let ctx_src =
        fs::read_to_string(proj.join("644750c6-819f-4bc1-8d96-f535db009ee8/leaf/context.json"))
            .unwrap();
    assert_eq!(ctx_fork, ctx_src);
    // A subagent's line cannot be forked: Claude Code does not resume subagents.
    let sub = m
        .mnt
        .join("-home-dev-src-sub/b3730bc4-7f81-47f4-84e9-5fd6ab8f85ea");
    let agent = sh("find . -type d -name 'agent-*' | head -1", &sub)
        .ok()
        .stdout;
    let agent = Path::new(agent.trim())
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let out = sh(&format!("echo > .id/{agent}/fork"), &sub);
    assert_ne!(out.code(), Some(0), "{}", out.stdout);
    let why = fs::read_to_string(sub.join(".id").join(&agent).join("fork")).unwrap();
    assert!(why.contains("subagent"), "{why}");
}
