//! A whole sessions directory mounted at once (`sessionfs mount DIR MNT`, and
//! `sessionfs mount MNT` for Pi's own), used through real programs: listing projects
//! and sessions without indexing them, `grep -r` across sessions, a reply inside one,
//! sessions that appear and disappear while mounted, damaged files that explain
//! themselves, the memory bound, and `sessionfs check DIR`.
//!
//! Each test builds its own sessions directory in a temporary directory from copies
//! of the fixtures, named as Pi names them.

mod common;

use common::*;
use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};

const ALPHA: &str = "--home-dev-alpha--";
const BETA: &str = "--home-dev-beta--";
const GAMMA: &str = "--home-dev-gamma--";
/// The text planted in some sessions, for `grep -r`.
const MARKER: &str = "zebra-marker-7f3a";
/// The last entry of `small.jsonl`, under which markers are appended.
const SMALL_LEAF: &str = "76622e25";

/// A Pi-like session name: `<fileTs>_<uuid>`.
fn session_name(n: u32) -> String {
    format!(
        "2026-01-{:02}T09-{:02}-00-000Z_0193{:04x}-0000-7000-8000-{:012x}",
        1 + n % 28,
        n % 60,
        n,
        n * 7919
    )
}

fn damaged(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/damaged")
        .join(name)
}

/// The sessions directory a test mounts.
struct Tree {
    root: PathBuf,
    /// (project, session name) of every valid session.
    sessions: Vec<(String, String)>,
    /// The sessions with the marker in them.
    marked: Vec<(String, String)>,
    /// The damaged files: (project, session name, what `ERROR` must say).
    broken: Vec<(String, String, &'static str)>,
}

impl Tree {
    fn file(&self, project: &str, session: &str) -> PathBuf {
        self.root.join(project).join(format!("{session}.jsonl"))
    }
}

/// Appends a user message with `text` under `parent` to `file`.
fn append_user(file: &Path, id: &str, parent: &str, text: &str) {
    use std::io::Write;
    let line = format!(
        r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"2026-01-05T10:00:00.000Z","message":{{"role":"user","content":[{{"type":"text","text":"{text}"}}],"timestamp":1767607200000}}}}"#
    );
    let mut f = fs::OpenOptions::new().append(true).open(file).unwrap();
    writeln!(f, "{line}").unwrap();
}

/// Three projects, 31 valid sessions (6 with the marker), 2 damaged files, and files
/// that are not sessions at all.
fn build(dir: &Path) -> Tree {
    let root = dir.join("sessions");
    let mut t = Tree {
        root: root.clone(),
        sessions: Vec::new(),
        marked: Vec::new(),
        broken: Vec::new(),
    };
    let plan: [(&str, &[&str]); 3] = [
        (ALPHA, &["small.jsonl"; 14]),
        (
            BETA,
            &[
                "small.jsonl",
                "mixed.jsonl",
                "legacy-v2.jsonl",
                "small.jsonl",
                "legacy-v1.jsonl",
                "small.jsonl",
                "mixed.jsonl",
                "small.jsonl",
                "bushy.jsonl",
                "small.jsonl",
            ],
        ),
        (GAMMA, &["small.jsonl"; 7]),
    ];
    let mut n = 0;
    for (project, fixtures) in plan {
        fs::create_dir_all(root.join(project)).unwrap();
        for fx in fixtures {
            n += 1;
            let name = session_name(n);
            let file = root.join(project).join(format!("{name}.jsonl"));
            fs::copy(fixture(fx), &file).unwrap();
            if *fx == "small.jsonl" && n % 4 == 1 {
                append_user(&file, &format!("feed{n:04x}"), SMALL_LEAF, MARKER);
                t.marked.push((project.to_string(), name.clone()));
            }
            t.sessions.push((project.to_string(), name));
        }
    }
    for (fx, why) in [
        (
            "corrupt-header-line.jsonl",
            "not a Pi, Claude Code or Codex session",
        ),
        ("empty-file.jsonl", "empty"),
    ] {
        n += 1;
        let name = session_name(n);
        fs::copy(damaged(fx), t.file(GAMMA, &name)).unwrap();
        t.broken.push((GAMMA.to_string(), name, why));
    }
    // Not sessions: ignored.
    fs::write(root.join(GAMMA).join("notes.txt"), MARKER).unwrap();
    fs::create_dir(root.join(GAMMA).join("subdir")).unwrap();
    fs::write(root.join("README"), MARKER).unwrap();
    t
}

fn mount(args: &[&str]) -> (Mount, Tree) {
    let dir = tempdir();
    let t = build(dir.path());
    let root = t.root.clone();
    (Mount::sessions_dir(dir, Some(&root), args, &[]), t)
}

fn ls(dir: &Path) -> Vec<String> {
    try_ls(dir).unwrap_or_else(|| panic!("ls {} failed", dir.display()))
}

/// `.sessionfs-stats` as (name, value) pairs.
fn stats(m: &Mount) -> std::collections::HashMap<String, u64> {
    fs::read_to_string(m.path(".sessionfs-stats"))
        .unwrap()
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

/// `./PROJECT/SESSION`: project folders start with `--`, which commands would take
/// for an option.
fn rel(project: &str, session: &str) -> String {
    format!("./{project}/{session}")
}

// ---------------------------------------------------------------------------------

#[test]
fn ls_shows_projects_and_sessions_without_indexing_them() {
    let (m, t) = mount(&[]);
    assert_eq!(ls(&m.mnt), vec![ALPHA, BETA, GAMMA]);
    for project in [ALPHA, BETA, GAMMA] {
        let want: BTreeSet<String> = t
            .sessions
            .iter()
            .map(|(p, s)| (p, s))
            .chain(t.broken.iter().map(|(p, s, _)| (p, s)))
            .filter(|(p, _)| *p == project)
            .map(|(_, s)| s.clone())
            .collect();
        let got: BTreeSet<String> = ls(&m.path(project)).into_iter().collect();
        assert_eq!(got, want, "{project}");
    }
    // `ls -l` (readdirplus, getattr of every session directory) and `find` down to
    // the sessions read no session file.
    run("ls", &["-l", "--", ALPHA, BETA, GAMMA], &m.mnt).ok();
    let out = run("find", &[".", "-maxdepth", "2"], &m.mnt).ok();
    assert_eq!(out.stdout.lines().count(), 1 + 3 + t.sessions.len() + 2);
    let st = stats(&m);
    assert_eq!(st["sessions_loaded"], 0, "{st:?}");
    assert_eq!(st["loads"], 0, "{st:?}");
    // A session directory carries the session's last activity: the newest time its
    // file's lines hold (read from its last lines, without indexing it), not the
    // file's modification time.
    let (p, s) = &t.sessions[3];
    let newest = fs::read_to_string(t.file(p, s))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| {
            v["timestamp"]
                .as_str()
                .and_then(sessionfs::model::core::js::js_date_ms)
        })
        .max()
        .unwrap();
    let got = fs::metadata(m.path(&rel(p, s)))
        .unwrap()
        .modified()
        .unwrap();
    let want = std::time::UNIX_EPOCH + std::time::Duration::from_millis(newest as u64);
    assert_eq!(got, want);
    assert_ne!(
        fs::metadata(t.file(p, s)).unwrap().modified().unwrap(),
        want,
        "the fixture's file time differs from its last activity"
    );
    assert_eq!(stats(&m)["loads"], 0, "reading it indexed nothing");
    // Entering one indexes that one.
    let names = ls(&m.path(&rel(p, s)));
    for n in ["session.json", "tree", "reply", "leaf", "branches", ".id"] {
        assert!(names.contains(&n.to_string()), "{n} missing from {names:?}");
    }
    assert_eq!(stats(&m)["sessions_loaded"], 1);
    // The stats file is hidden.
    assert!(!ls(&m.mnt).contains(&".sessionfs-stats".to_string()));
}

#[test]
fn a_session_reads_as_in_the_single_session_mount() {
    let (m, t) = mount(&[]);
    let (p, s) = &t.sessions[0];
    let header = fs::read_to_string(t.file(p, s)).unwrap();
    let header = header.lines().next().unwrap();
    let out = run("cat", &[format!("./{p}/{s}/session.json")], &m.mnt).ok();
    assert_eq!(out.stdout.trim_end(), header);
    let out = run("cat", &[format!("./{p}/{s}/e8dfd932/model_change")], &m.mnt).ok();
    assert_eq!(out.stdout, "anthropic/claude-sonnet-4-5\n");
    // Symlinks resolve inside the session.
    let out = run("readlink", &["-f", &format!("./{p}/{s}/leaf")], &m.mnt).ok();
    assert!(
        out.stdout
            .trim()
            .starts_with(m.path(p).join(s).to_str().unwrap()),
        "{}",
        out.stdout
    );
    let out = run("cat", &[format!("./{p}/{s}/leaf/entry.json")], &m.mnt).ok();
    assert!(out.stdout.starts_with('{'), "{}", out.stdout);
    // `..` of a session is its project.
    let out = sh(&format!("cd './{p}/{s}' && cd .. && pwd"), &m.mnt).ok();
    assert_eq!(out.stdout.trim(), m.path(p).to_str().unwrap());
}

#[test]
fn grep_r_finds_each_hit_once_across_sessions() {
    let (m, t) = mount(&[]);
    let out = run("grep", &["-rl", MARKER, "."], &m.mnt);
    assert_eq!(out.code(), Some(0), "{out:?}");
    assert_eq!(out.stderr, "", "grep -r printed errors");
    let mut per_session: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for line in out.stdout.lines() {
        let parts: Vec<&str> = line.trim_start_matches("./").split('/').collect();
        assert!(parts.len() >= 3, "a hit outside a session: {line}");
        per_session
            .entry(format!("{}/{}", parts[0], parts[1]))
            .or_default()
            .push(parts[2..].join("/"));
    }
    let want: BTreeSet<String> = t.marked.iter().map(|(p, s)| format!("{p}/{s}")).collect();
    assert!(want.len() >= 5);
    assert_eq!(
        per_session.keys().cloned().collect::<BTreeSet<_>>(),
        want,
        "{}",
        out.stdout
    );
    for (session, files) in &per_session {
        // The entry's own `user` file, and the tree's one-line preview: nothing twice.
        let users: Vec<&String> = files.iter().filter(|f| f.ends_with("/user")).collect();
        assert_eq!(users.len(), 1, "{session}: {files:?}");
        assert!(files.contains(&"tree".to_string()), "{session}: {files:?}");
        assert_eq!(files.len(), 2, "{session}: {files:?}");
    }
    // Every session was read; none is read twice at once past the bound.
    let st = stats(&m);
    assert!(st["loads"] >= t.sessions.len() as u64, "{st:?}");
}

#[test]
fn a_reply_appends_to_the_right_file() {
    let (m, t) = mount(&[]);
    let (p, s) = t.sessions[5].clone();
    let before: Vec<(PathBuf, Vec<u8>)> = t
        .sessions
        .iter()
        .map(|(p, s)| t.file(p, s))
        .map(|f| (f.clone(), fs::read(&f).unwrap()))
        .collect();
    sh(
        &format!("echo 'hello from the mount' > './{p}/{s}/reply'"),
        &m.mnt,
    )
    .ok();
    sh(
        &format!("echo 'a child' > './{p}/{s}/e8dfd932/reply'"),
        &m.mnt,
    )
    .ok();
    let target = t.file(&p, &s);
    for (f, old) in before {
        let now = fs::read(&f).unwrap();
        if f == target {
            assert!(now.starts_with(&old));
            let added = String::from_utf8(now[old.len()..].to_vec()).unwrap();
            let lines: Vec<&str> = added.lines().collect();
            assert_eq!(lines.len(), 2, "{added}");
            assert!(lines[0].contains(r#""parentId":null"#), "{added}");
            assert!(lines[0].contains("hello from the mount"), "{added}");
            assert!(lines[1].contains(r#""parentId":"e8dfd932""#), "{added}");
        } else {
            assert_eq!(now, old, "{} changed", f.display());
        }
    }
    // The new root is there at once.
    let names = ls(&m.path(&rel(&p, &s)));
    let out = run("cat", &[format!("./{p}/{s}/tree")], &m.mnt).ok();
    assert!(
        out.stdout.contains("hello from the mount"),
        "{}",
        out.stdout
    );
    assert!(names.len() >= 10, "{names:?}");
}

#[test]
fn sessions_and_projects_come_and_go_while_mounted() {
    let (m, t) = mount(&[]);
    // Look first, so that the kernel has the listings cached.
    let before = ls(&m.path(ALPHA));
    assert_eq!(ls(&m.mnt), vec![ALPHA, BETA, GAMMA]);
    // A reader inside another session, with a file open.
    let (bp, bs) = t.sessions.iter().find(|(p, _)| p == BETA).unwrap().clone();
    let mut held = fs::File::open(m.path(&format!("./{bp}/{bs}/session.json"))).unwrap();

    // A new session file.
    let new = session_name(999);
    fs::copy(fixture("small.jsonl"), t.file(ALPHA, &new)).unwrap();
    assert!(
        wait_until(DEADLINE, || try_ls(&m.path(ALPHA))
            .is_some_and(|n| n.contains(&new))),
        "{new} did not appear"
    );
    assert!(m.path(&format!("./{ALPHA}/{new}/session.json")).exists());

    // A deleted one.
    let (_, gone) = t.sessions.iter().find(|(p, _)| p == ALPHA).unwrap().clone();
    assert!(before.contains(&gone));
    ls(&m.path(&rel(ALPHA, &gone))); // indexed, so that dropping it is exercised
    fs::remove_file(t.file(ALPHA, &gone)).unwrap();
    assert!(
        wait_until(DEADLINE, || try_ls(&m.path(ALPHA))
            .is_some_and(|n| !n.contains(&gone))),
        "{gone} did not disappear"
    );
    assert!(!m.path(&rel(ALPHA, &gone)).exists());

    // A new project folder, then a session in it.
    let proj = "--home-dev-delta--";
    fs::create_dir(t.root.join(proj)).unwrap();
    assert!(
        wait_until(DEADLINE, || try_ls(&m.mnt)
            .is_some_and(|n| n.contains(&proj.to_string()))),
        "{proj} did not appear"
    );
    assert!(ls(&m.path(proj)).is_empty());
    let s = session_name(1000);
    fs::copy(fixture("small.jsonl"), t.file(proj, &s)).unwrap();
    assert!(
        wait_until(DEADLINE, || try_ls(&m.path(proj))
            .is_some_and(|n| n.contains(&s))),
        "{s} did not appear in the new project"
    );
    // And the project goes away again.
    fs::remove_file(t.file(proj, &s)).unwrap();
    fs::remove_dir(t.root.join(proj)).unwrap();
    assert!(
        wait_until(DEADLINE, || try_ls(&m.mnt)
            .is_some_and(|n| !n.contains(&proj.to_string()))),
        "{proj} did not disappear"
    );

    // The reader elsewhere noticed nothing.
    use std::io::Read;
    let mut got = String::new();
    held.read_to_string(&mut got).unwrap();
    assert!(got.starts_with(r#"{"type":"session""#), "{got}");
    let out = run("grep", &["-rlq", "sonnet", "."], &m.path(&rel(&bp, &bs)));
    assert_eq!(out.code(), Some(0), "{out:?}");
}

#[test]
fn appends_by_another_program_appear_in_a_mounted_session() {
    let (m, t) = mount(&[]);
    let (p, s) = t.sessions[1].clone();
    let dir = m.path(&rel(&p, &s));
    assert!(!ls(&dir).contains(&"cafe0001".to_string()));
    ls(&dir.join("e8dfd932"));
    append_user(&t.file(&p, &s), "cafe0001", "e8dfd932", "appended by pi");
    assert!(
        wait_until(DEADLINE, || try_ls(&dir.join("e8dfd932"))
            .is_some_and(|n| n.contains(&"cafe0001".to_string()))),
        "the appended entry did not appear"
    );
    let out = run("cat", &["e8dfd932/cafe0001/user"], &dir).ok();
    assert_eq!(out.stdout, "appended by pi\n");
}

/// Writes to a file every few milliseconds until dropped (and waits for the writer).
struct Busy {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Busy {
    fn writing(file: PathBuf) -> Busy {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut n = 0u64;
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                n += 1;
                let _ = fs::write(&file, format!("{n}\n"));
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        });
        Busy {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn a_change_no_event_reports_appears_while_the_folders_keep_changing() {
    // A session linked to a file outside the sessions directory: appends to that file
    // reach no watched folder, and only the watcher's safety net (every loaded session
    // catches up once a second) shows them. It must run while another file of a
    // project changes every 20 ms, as the files of an agent at work do.
    let dir = tempdir();
    let t = build(dir.path());
    let (p, s) = t.sessions[1].clone();
    let outside = dir.path().join("elsewhere");
    fs::create_dir(&outside).unwrap();
    let target = outside.join("linked.jsonl");
    fs::rename(t.file(&p, &s), &target).unwrap();
    std::os::unix::fs::symlink(&target, t.file(&p, &s)).unwrap();
    let root = t.root.clone();
    let m = Mount::sessions_dir(dir, Some(&root), &[], &[]);
    let session = m.path(&rel(&p, &s));
    ls(&session.join("e8dfd932"));
    // Every project folder listed, so that each is watched.
    for project in ls(&m.mnt) {
        let _ = try_ls(&m.mnt.join(&project));
    }
    let _busy = Busy::writing(root.join(GAMMA).join("notes.txt"));
    append_user(&target, "cafe0001", "e8dfd932", "appended through a link");
    assert!(
        wait_until(DEADLINE, || try_ls(&session.join("e8dfd932"))
            .is_some_and(|n| n.contains(&"cafe0001".to_string()))),
        "the append to the linked file was not shown while the folders kept changing"
    );
}

#[test]
fn a_damaged_file_explains_itself() {
    let (m, t) = mount(&[]);
    // The project lists every file, damaged or not.
    let names = ls(&m.path(GAMMA));
    for (_, s, _) in &t.broken {
        assert!(names.contains(s), "{s} missing from {names:?}");
    }
    assert!(!names.iter().any(|n| n.contains("notes") || n == "subdir"));
    for (p, s, why) in &t.broken {
        assert_eq!(ls(&m.path(&rel(p, s))), vec!["ERROR"], "{s}");
        let text = fs::read_to_string(m.path(&format!("./{p}/{s}/ERROR"))).unwrap();
        assert!(text.contains(why), "{s}: {text}");
        assert!(text.contains(&format!("{s}.jsonl")), "{text}");
        // Writing there is refused; the directory is not a session.
        assert!(!m.path(&format!("./{p}/{s}/session.json")).exists());
    }
    // `grep -r` over the project reads them without errors.
    let out = run(
        "grep",
        &["-r", "-c", "not a Pi, Claude Code or Codex session", "."],
        &m.path(GAMMA),
    );
    assert_eq!(out.stderr, "", "{out:?}");
    // The empty file becomes a session when Pi writes its header: shown at once.
    let (p, s, _) = t.broken.iter().find(|b| b.2 == "empty").unwrap().clone();
    fs::copy(fixture("small.jsonl"), t.file(&p, &s)).unwrap();
    assert!(
        wait_until(DEADLINE, || try_ls(&m.path(&rel(&p, &s)))
            .is_some_and(|n| n.contains(&"session.json".to_string()))),
        "the repaired session was not shown"
    );
    assert!(!m.path(&format!("./{p}/{s}/ERROR")).exists());
}

#[test]
fn the_memory_bound_drops_and_reloads_sessions() {
    let (m, t) = mount(&["--max-index-memory", "1"]);
    let (p0, s0) = t.sessions[0].clone();
    // A shell inside one session keeps working after it is dropped and reloaded.
    let script = format!(
        "cd './{p0}/{s0}/e8dfd932' && before=$(ls | tr '\\n' ' ') && \
         for d in ../../../*/*/; do [ -e \"$d/ERROR\" ] && continue; \
         cat \"$d/session.json\" >/dev/null || exit 1; done && \
         after=$(ls | tr '\\n' ' ') && [ \"$before\" = \"$after\" ] && \
         pwd -P >/dev/null && cat model_change"
    );
    let out = sh(&script, &m.mnt);
    assert_eq!(out.code(), Some(0), "{out:?}");
    assert_eq!(out.stdout, "anthropic/claude-sonnet-4-5\n");
    assert_eq!(out.stderr, "");
    let st = stats(&m);
    assert!(st["sessions_loaded"] <= 1, "{st:?}");
    assert!(st["evictions"] >= t.sessions.len() as u64 - 1, "{st:?}");

    // `grep -r` under the bound finds what it finds without one.
    let out = run("grep", &["-rl", MARKER, "."], &m.mnt);
    assert_eq!(out.stderr, "", "{out:?}");
    let sessions: BTreeSet<String> = out
        .stdout
        .lines()
        .map(|l| {
            l.trim_start_matches("./")
                .splitn(3, '/')
                .take(2)
                .collect::<Vec<_>>()
                .join("/")
        })
        .collect();
    let want: BTreeSet<String> = t.marked.iter().map(|(p, s)| format!("{p}/{s}")).collect();
    assert_eq!(sessions, want);
    assert_eq!(out.stdout.lines().count(), 2 * want.len(), "{}", out.stdout);
    assert!(stats(&m)["sessions_loaded"] <= 1);

    // A file open for writing keeps its session loaded until it is closed.
    let (p1, s1) = t.sessions[1].clone();
    let script = format!(
        "exec 3>'./{p1}/{s1}/reply' && cat './{p0}/{s0}/session.json' >/dev/null && \
         cat './{p0}/{s0}/tree' >/dev/null && echo 'held open' >&3 && exec 3>&-"
    );
    sh(&script, &m.mnt).ok();
    let text = fs::read_to_string(t.file(&p1, &s1)).unwrap();
    assert!(text.lines().last().unwrap().contains("held open"), "{text}");
}

/// A read-only sessions mount reads files without opening them (the kernel keeps their
/// pages), so what changes must be dropped from its caches: `.sessionfs-stats` after
/// each load and drop, `ERROR` when the file is repaired.
#[test]
fn a_read_only_sessions_mount_reads_without_opening_and_stays_current() {
    let dir = tempdir();
    let t = build(dir.path());
    let root = t.root.clone();
    let args = ["--read-only", "--max-index-memory", "1"];
    let m = Mount::sessions_dir(
        dir,
        Some(&root),
        &args,
        &[("RUST_LOG", OsStr::new("debug"))],
    );
    assert_eq!(stats(&m)["loads"], 0);
    let (p0, s0) = t.sessions[0].clone();
    let (p1, s1) = t.sessions[1].clone();
    fs::read(m.path(&format!("./{p0}/{s0}/session.json"))).unwrap();
    assert_eq!(stats(&m)["loads"], 1);
    fs::read(m.path(&format!("./{p1}/{s1}/tree"))).unwrap();
    let st = stats(&m);
    assert_eq!((st["loads"], st["evictions"]), (2, 1), "{st:?}");
    // `grep -r` finds what it finds on a writable mount: no `reply` files, nothing else.
    let out = run("grep", &["-rl", MARKER, "."], &m.mnt);
    assert_eq!(out.stderr, "", "{out:?}");
    assert_eq!(
        out.stdout.lines().count(),
        2 * t.marked.len(),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("reply"));
    // A damaged file shows why, and then the session once it is repaired.
    let (p, s, why) = t.broken.iter().find(|b| b.2 == "empty").unwrap().clone();
    let err = m.path(&format!("./{p}/{s}/ERROR"));
    assert!(fs::read_to_string(&err).unwrap().contains(why));
    fs::copy(fixture("small.jsonl"), t.file(&p, &s)).unwrap();
    assert!(
        wait_until(DEADLINE, || try_ls(&m.path(&rel(&p, &s)))
            .is_some_and(|n| n.contains(&"session.json".to_string()))),
        "the repaired session was not shown"
    );
    let n = m.requests();
    assert!(n.get("READ").is_some_and(|&r| r > 10), "{n:?}");
    assert!(n.get("OPEN").copied().unwrap_or(0) <= 1, "{n:?}");
    assert_eq!(n.get("RELEASE"), None, "{n:?}");
}

#[test]
fn appends_to_a_dropped_session_appear() {
    let (m, t) = mount(&["--max-index-memory", "1"]);
    let (p, s) = t.sessions[0].clone();
    let (p2, s2) = t.sessions[1].clone();
    let dir = m.path(&rel(&p, &s)).join("e8dfd932");
    // Listed (and cached by the kernel), then dropped by loading another session.
    let before = ls(&dir);
    run("cat", &[format!("./{p2}/{s2}/tree")], &m.mnt).ok();
    let st = stats(&m);
    assert_eq!(st["sessions_loaded"], 1, "{st:?}");
    append_user(&t.file(&p, &s), "cafe0002", "e8dfd932", "while dropped");
    // The watcher loads it again by itself, to tell the kernel what changed.
    assert!(
        wait_until(DEADLINE, || stats(&m)["loads"] > st["loads"]),
        "the dropped session was not reloaded after the append"
    );
    assert!(
        wait_until(DEADLINE, || try_ls(&dir)
            .is_some_and(|n| n.contains(&"cafe0002".to_string()))),
        "the entry appended to a dropped session did not appear"
    );
    assert_eq!(ls(&dir).len(), before.len() + 1);
    let out = run("cat", &["cafe0002/user"], &dir).ok();
    assert_eq!(out.stdout, "while dropped\n");
}

#[test]
fn mounts_pis_own_sessions_directory_by_default() {
    // With no source, every agent found gets a folder: here only Pi (HOME has no
    // ~/.claude/projects), as `pi/`.
    let dir = tempdir();
    let home = dir.path().to_path_buf();
    let agent = dir.path().join("agent");
    let sessions = agent.join("sessions");
    fs::create_dir_all(sessions.join(ALPHA)).unwrap();
    fs::copy(
        fixture("small.jsonl"),
        sessions
            .join(ALPHA)
            .join(format!("{}.jsonl", session_name(1))),
    )
    .unwrap();
    // A loose session directly in the directory is shown at the top.
    fs::copy(
        fixture("small.jsonl"),
        sessions.join(format!("{}.jsonl", session_name(2))),
    )
    .unwrap();
    let m = Mount::sessions_dir(
        dir,
        None,
        &[],
        &[
            ("PI_CODING_AGENT_DIR", agent.as_os_str()),
            ("HOME", home.as_os_str()),
        ],
    );
    assert_eq!(ls(&m.mnt), vec!["pi".to_string()]);
    assert_eq!(ls(&m.path("pi")), vec![ALPHA.to_string(), session_name(2)]);
    assert_eq!(ls(&m.path(&format!("pi/{ALPHA}"))), vec![session_name(1)]);
    assert!(
        m.path(&format!("pi/{}/session.json", session_name(2)))
            .exists()
    );
}

#[test]
fn refuses_a_missing_sessions_directory() {
    let dir = tempdir();
    fs::create_dir(dir.path().join("mnt")).unwrap();
    let mut c = std::process::Command::new(bin());
    c.args(["mount", "mnt"])
        .env("PI_CODING_AGENT_DIR", dir.path().join("nope"))
        .current_dir(dir.path());
    let out = run_command(c);
    assert_eq!(out.code(), Some(3), "{out:?}");
    assert!(out.stderr.starts_with("sessionfs: "), "{out:?}");
    assert!(out.stderr.contains("does not exist"), "{out:?}");
    assert!(out.stderr.contains("nope/sessions"), "{out:?}");
    // `~` in PI_CODING_AGENT_DIR is the home directory.
    let mut c = std::process::Command::new(bin());
    c.args(["mount", "mnt"])
        .env("HOME", dir.path())
        .env("PI_CODING_AGENT_DIR", "~/agent")
        .current_dir(dir.path());
    let out = run_command(c);
    assert_eq!(out.code(), Some(3), "{out:?}");
    let want = dir.path().join("agent/sessions");
    assert!(out.stderr.contains(want.to_str().unwrap()), "{out:?}");
    // A sessions directory may not hold its own mount point.
    fs::create_dir_all(dir.path().join("s/mnt2")).unwrap();
    let out = sessionfs(&["mount", "s", "s/mnt2"], dir.path());
    assert_eq!(out.code(), Some(3), "{out:?}");
    assert!(out.stderr.contains("holds the mount point"), "{out:?}");
}

#[test]
fn background_mount_of_a_directory() {
    let dir = tempdir();
    let t = build(dir.path());
    let mnt = dir.path().join("mnt");
    fs::create_dir(&mnt).unwrap();
    let out = sessionfs(
        &[
            OsStr::new("mount"),
            OsStr::new("--background"),
            t.root.as_os_str(),
            mnt.as_os_str(),
        ],
        dir.path(),
    );
    assert_eq!(out.code(), Some(0), "{out:?}");
    let guard = scopeguard(&mnt);
    assert_eq!(ls(&mnt), vec![ALPHA, BETA, GAMMA]);
    drop(guard);
}

/// Unmounts `mnt` when dropped (for mounts made with --background).
struct Unmount(PathBuf);
impl Drop for Unmount {
    fn drop(&mut self) {
        unmount(&self.0);
        wait_until(DEADLINE, || !is_mount_point(&self.0));
    }
}
fn scopeguard(mnt: &Path) -> Unmount {
    Unmount(mnt.to_path_buf())
}

#[test]
fn check_dir_checks_every_session_file() {
    let dir = tempdir();
    let t = build(dir.path());
    let out = sessionfs(
        &[
            OsStr::new("check"),
            OsStr::new("--json"),
            t.root.as_os_str(),
        ],
        dir.path(),
    );
    assert_eq!(out.code(), Some(1), "{out:?}");
    let reports: Vec<serde_json::Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(reports.len(), t.sessions.len() + t.broken.len());
    let files: Vec<&str> = reports
        .iter()
        .map(|r| r["file"].as_str().unwrap())
        .collect();
    let mut sorted = files.clone();
    sorted.sort();
    assert_eq!(files, sorted, "reports in path order");
    assert!(files.iter().all(|f| f.ends_with(".jsonl")));
    let bad = reports.iter().filter(|r| r["session"] == false).count();
    assert_eq!(bad, t.broken.len());
    // Text reports: one summary or error line per file.
    let out = sessionfs(
        &[OsStr::new("check"), t.root.join(ALPHA).as_os_str()],
        dir.path(),
    );
    assert_eq!(out.code(), Some(0), "{out:?}");
    assert_eq!(
        out.stdout.lines().filter(|l| l.contains(": ok: ")).count(),
        t.sessions.iter().filter(|(p, _)| p == ALPHA).count()
    );
}
