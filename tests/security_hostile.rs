//! Hostile sessions folders (issue 27, points 5, 6 and 10): what a copied home, an
//! archive or a repository's checked-in `.claude` may hold, tried as an attacker would,
//! through the every-agent mount and the commands that read without one.
//!
//! * Entries that are no regular file: FIFOs named like sessions, a link to
//!   `/dev/zero`, symbolic link loops, a directory loop. Nothing of them is listed,
//!   nothing blocks (`ls`, `ls -R`, `find`, `grep -r`, `sessionfs grep`, `usage`,
//!   `check`: each under the tests' deadline, a hang fails the test).
//! * Side files that lead out of the agent's folder or are FIFOs: a spilled tool result
//!   linked to a file outside (and to `/etc/shadow`), a subagent's transcript linked to
//!   a session elsewhere, Claude Code's `custom-title.json` and a `.meta.json` as FIFOs,
//!   Codex's `session_index.jsonl` and `state_5.sqlite` as FIFOs, and the database
//!   linked to `/etc/passwd`. Nothing outside is served, nothing blocks, a reply at a
//!   Codex leaf answers (it is refused, with the reason in the log) instead of hanging.

mod common;

use common::*;
use std::ffi::{CString, OsStr};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

fn mkfifo(p: &Path) {
    let c = CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(
        unsafe { libc::mkfifo(c.as_ptr(), 0o644) },
        0,
        "{}",
        p.display()
    );
}

/// Replaces `p` (if there) by a FIFO.
fn fifo_over(p: &Path) {
    let _ = fs::remove_file(p);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    mkfifo(p);
}

/// Replaces `p` (if there) by a symbolic link to `to`.
fn link_over(p: &Path, to: &Path) {
    let _ = fs::remove_file(p);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    symlink(to, p).unwrap();
}

const BIG: &str = "-home-dev-src-big";
const BIG_SID: &str = "5aa252c6-78fb-47ae-af22-e00c3a1b6282";
const SUB: &str = "-home-dev-src-sub";
const SUB_SID: &str = "b3730bc4-7f81-47f4-84e9-5fd6ab8f85ea";
const QA: &str = "-home-dev-src-qa";
const QA_SID: &str = "034d3153-8c13-4469-9665-5948bffe2026";
/// What the files outside the agents' folders hold: never to be seen through them.
const SECRET: &str = "TOPSECRET-daemon:x:1:1";

/// A home holding every agent's folder, each with hostile entries; its environment.
struct Home {
    dir: tempfile::TempDir,
    pi: PathBuf,
    claude: PathBuf,
    codex: PathBuf,
}

impl Home {
    fn new() -> Home {
        let dir = tempdir();
        let root = dir.path();
        fs::write(root.join("secret"), format!("{SECRET}\n")).unwrap();
        // Pi: FIFOs named like sessions, /dev/zero, loops, beside one good session.
        let pi = root.join("pi");
        let s = pi.join("sessions");
        fs::create_dir_all(s.join("proj")).unwrap();
        fs::copy(fixture("small.jsonl"), s.join("proj/good.jsonl")).unwrap();
        for f in ["fifo-top.jsonl", "proj/fifo.jsonl", "proj/.jsonl"] {
            mkfifo(&s.join(f));
        }
        symlink("/dev/zero", s.join("proj/zero.jsonl")).unwrap();
        symlink("fifo.jsonl", s.join("proj/to-fifo.jsonl")).unwrap();
        symlink("loop2.jsonl", s.join("proj/loop1.jsonl")).unwrap();
        symlink("loop1.jsonl", s.join("proj/loop2.jsonl")).unwrap();
        symlink("self.jsonl", s.join("proj/self.jsonl")).unwrap();
        symlink("..", s.join("proj/up")).unwrap();
        symlink(".", s.join("again")).unwrap();
        fs::create_dir(s.join("proj/dir.jsonl")).unwrap();
        // Claude Code: side files out of the folder, and FIFOs.
        let claude = root.join("claude");
        let p = claude.join("projects");
        copy_tree(&fixture("../claude/projects"), &p);
        let big = p.join(BIG).join(BIG_SID);
        link_over(
            &big.join("tool-results/b64cy0vmt.txt"),
            &root.join("secret"),
        );
        let subagents = p.join(SUB).join(SUB_SID).join("subagents");
        fifo_over(&subagents.join("agent-acfbc9cb8be5d6a1d.meta.json"));
        mkfifo(&subagents.join("agent-fifo.jsonl"));
        // A subagent transcript linked to a session elsewhere (with the secret in it).
        let outside = root.join("outside-agent.jsonl");
        let text = fs::read_to_string(subagents.join("agent-acfbc9cb8be5d6a1d.jsonl"))
            .unwrap()
            .replace("\"content\":\"", &format!("\"content\":\"{SECRET} "));
        fs::write(&outside, text).unwrap();
        symlink(&outside, subagents.join("agent-elsewhere.jsonl")).unwrap();
        fifo_over(&p.join(QA).join(QA_SID).join("custom-title.json"));
        // Codex: its name index and its database as FIFOs.
        let codex = root.join("codex");
        copy_tree(&fixture("../codex/own/codex-home"), &codex);
        fifo_over(&codex.join("session_index.jsonl"));
        fifo_over(&codex.join("state_5.sqlite"));
        Home {
            dir,
            pi,
            claude,
            codex,
        }
    }

    fn env(&self) -> Vec<(&'static str, &OsStr)> {
        vec![
            ("HOME", self.dir.path().as_os_str()),
            ("PI_CODING_AGENT_DIR", self.pi.as_os_str()),
            ("CLAUDE_CONFIG_DIR", self.claude.as_os_str()),
            ("CODEX_HOME", self.codex.as_os_str()),
        ]
    }

    /// `sessionfs ARGS` in this home's environment.
    fn sessionfs(&self, args: &[&str]) -> Output {
        let mut c = std::process::Command::new(bin());
        c.args(args).current_dir(self.dir.path()).envs(self.env());
        run_command(c)
    }
}

#[test]
fn hostile_entries_never_block_or_leak_through_the_every_agent_mount() {
    let home = Home::new();
    let env = home.env();
    let root = home.dir.path().to_path_buf();
    let m = Mount::sessions_dir(tempdir(), None, &[], &env);
    let mnt = &m.mnt;
    // Every command returns (run under the deadline: a hang fails the test).
    assert_eq!(sh("ls", mnt).ok().stdout, "claude\ncodex\npi\n");
    sh("ls -R . >/dev/null", mnt).ok();
    sh("find . >/dev/null", mnt).ok();
    sh("cat */*/*/name >/dev/null", mnt);
    // Nothing but the good session is listed among the Pi entries.
    assert_eq!(sh("ls pi/proj", mnt).ok().stdout, "good\n");
    // Nothing outside the agents' folders is served, by grep -r or anything else.
    let g = sh(&format!("grep -r '{SECRET}' ."), mnt);
    assert_eq!(g.code(), Some(1), "{g:?}");
    assert!(g.stdout.is_empty(), "{}", g.stdout);
    // The spilled output linked out of the folder is not shown; its entry says why.
    let big = mnt.join("claude").join(BIG).join(BIG_SID);
    let full = sh("find . -name full-output", &big).ok().stdout;
    assert!(full.is_empty(), "{full}");
    let why = sh("grep -rl 'b64cy0vmt.txt (not shown' .", &big)
        .ok()
        .stdout;
    assert!(!why.is_empty());
    // The session whose title file is a FIFO, and the one whose subagent's files are
    // FIFOs and a link out, read; the linked transcript is not among its entries.
    sh(&format!("cat claude/{QA}/{QA_SID}/name"), mnt).ok();
    let sub = mnt.join("claude").join(SUB).join(SUB_SID);
    let tree = sh("cat tree", &sub).ok().stdout;
    assert!(
        !tree.contains("agent-elsewhere") && !tree.contains("agent-fifo"),
        "{tree}"
    );
    assert!(tree.contains("agent-acfbc9cb8be5d6a1d"), "{tree}");
    // Codex threads read without their name index and database.
    let names = sh("cat codex/*/*/name", mnt).ok().stdout;
    assert!(!names.is_empty());
    // The commands that read without a mount: the same, none blocking.
    let g = home.sessionfs(&["grep", "-rn", SECRET]);
    assert_eq!(g.code(), Some(1), "{g:?}");
    assert!(g.stdout.is_empty(), "{}", g.stdout);
    home.sessionfs(&["usage"]);
    // `check` reads what its user names, as that user (no one else's permissions are
    // at stake): it only has to return.
    for dir in [
        home.pi.join("sessions"),
        home.claude.join("projects"),
        home.codex.clone(),
    ] {
        home.sessionfs(&["check", dir.to_str().unwrap()]);
    }
    assert!(m.is_mounted());
    drop(root);
}

/// A spilled tool result linked to `/etc/shadow`, the issue's own example: not shown,
/// not searched (`grep -r` through the mount and `sessionfs grep`).
#[test]
fn a_tool_result_linked_to_etc_shadow_is_never_served() {
    if fs::metadata("/etc/shadow").is_err() {
        eprintln!("skipped: no /etc/shadow here");
        return;
    }
    let dir = tempdir();
    let projects = dir.path().join("projects");
    copy_tree(
        &fixture("../claude/projects").join(BIG),
        &projects.join(BIG),
    );
    let spilled = projects
        .join(BIG)
        .join(BIG_SID)
        .join("tool-results/b64cy0vmt.txt");
    link_over(&spilled, Path::new("/etc/shadow"));
    let g = sessionfs(
        &["grep", "-rn", "root:", projects.to_str().unwrap()],
        dir.path(),
    );
    assert!(!g.stdout.contains("full-output"), "{}", g.stdout);
    let m = Mount::sessions_dir(dir, Some(&projects), &[], &[]);
    let s = m.mnt.join(BIG).join(BIG_SID);
    assert!(sh("find . -name full-output", &s).ok().stdout.is_empty());
    let g = sh("grep -rl 'root:' .", &s);
    assert!(!g.stdout.contains("full-output"), "{}", g.stdout);
    let why = sh("grep -rh 'b64cy0vmt.txt (not shown' .", &s).ok().stdout;
    assert!(why.contains("leads outside"), "{why}");
}

/// Codex's database as a FIFO, then as a link to `/etc/passwd` (and a corrupt one): the
/// threads read, with names from the pages; a reply at a leaf answers at once, either
/// written or refused with an errno (the reason in the log), never waiting for a writer.
#[test]
fn codex_side_files_that_are_fifos_or_links_never_block_a_reply() {
    for db in ["fifo", "passwd", "wal-fifo", "corrupt"] {
        let dir = tempdir();
        let codex = dir.path().join("codex");
        copy_tree(&fixture("../codex/own/codex-home"), &codex);
        let path = codex.join("state_5.sqlite");
        match db {
            "fifo" => fifo_over(&path),
            "passwd" => link_over(&path, Path::new("/etc/passwd")),
            "wal-fifo" => mkfifo(&codex.join("state_5.sqlite-wal")),
            _ => fs::write(&path, "this is not a database").unwrap(),
        }
        fifo_over(&codex.join("session_index.jsonl"));
        let m = Mount::sessions_dir(dir, Some(&codex), &[], &[]);
        let t = m.mnt.join("-home-dev-src-parfail").join(PARFAIL);
        assert!(!sh("cat name", &t).ok().stdout.is_empty(), "{db}");
        let out = sh("echo 'from a hostile home' > leaf/reply", &t);
        if !out.status.success() {
            assert!(!out.stderr.is_empty(), "{db}: {out:?}");
        }
        // A reply at an earlier entry writes a new page in today's folder and names
        // it in the database: refused here, it leaves nothing behind, not even the
        // folder, and the log says why (the shell ignores the failed close).
        let today = codex_day_folder(&codex);
        let fresh = !today.exists();
        let parent = fs::read_link(t.join("leaf/parent")).unwrap();
        let parent = parent.file_name().unwrap().to_str().unwrap().to_string();
        let before = fs::read_dir(codex.join("sessions")).unwrap().count();
        sh(&format!("echo 'earlier' > '.id/{parent}/reply'"), &t);
        let made_page = fs::read_to_string(t.join("tree"))
            .unwrap()
            .contains("earlier");
        if !made_page {
            assert!(
                !fresh || !today.exists(),
                "{db}: an empty day folder was left"
            );
            assert_eq!(
                fs::read_dir(codex.join("sessions")).unwrap().count(),
                before
            );
            assert!(
                m.stderr_text().contains("reply refused"),
                "{db}: {}",
                m.stderr_text()
            );
        }
        assert!(m.is_mounted(), "{db}");
    }
}

/// Today's day folder of a Codex home, where a new page goes.
fn codex_day_folder(home: &Path) -> PathBuf {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    // Civil date from days since the epoch (UTC).
    let z = now.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    home.join("sessions")
        .join(format!("{y:04}"))
        .join(format!("{m:02}"))
        .join(format!("{d:02}"))
}

const PARFAIL: &str = "01a233fd-8e4f-7f93-83c7-b38d978b73dc";

/// Codex's database naming, as a thread's current page, a file outside the Codex home
/// (`/etc/passwd`, or a rollout file elsewhere holding a secret): only pages found in
/// the home are read, the row only chooses among them; the thread reads as without
/// the row, and nothing of the file outside is served.
#[test]
fn a_rollout_path_outside_the_codex_home_is_never_read() {
    let dir = tempdir();
    let codex = dir.path().join("codex");
    copy_tree(&fixture("../codex/own/codex-home"), &codex);
    let outside = dir.path().join("elsewhere");
    fs::create_dir_all(&outside).unwrap();
    let conn = rusqlite::Connection::open(codex.join("state_5.sqlite")).unwrap();
    let ids: Vec<String> = conn
        .prepare("SELECT id FROM threads")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(ids.len() > 1);
    for (k, id) in ids.iter().enumerate() {
        let target = if k % 2 == 0 {
            PathBuf::from("/etc/passwd")
        } else {
            // Named as the thread's own page would be, with a secret in it.
            let p = outside.join(format!("rollout-2026-12-01T00-00-00-{id}.jsonl"));
            fs::write(&p, format!("{{\"type\":\"session_meta\",\"payload\":{{\"id\":\"{id}\",\"cwd\":\"{SECRET}\"}}}}\n")).unwrap();
            p
        };
        conn.execute(
            "UPDATE threads SET rollout_path = ?1 WHERE id = ?2",
            rusqlite::params![target.to_str().unwrap(), id],
        )
        .unwrap();
    }
    drop(conn);
    let m = Mount::sessions_dir(dir, Some(&codex), &[], &[]);
    let g = sh(&format!("grep -rl -e '{SECRET}' -e 'root:x:0' ."), &m.mnt);
    assert!(g.stdout.is_empty(), "{}", g.stdout);
    let leaves = sh(
        "cat ./*/*/leaf/context >/dev/null && ls -d ./*/*/leaf",
        &m.mnt,
    )
    .ok();
    assert!(!leaves.stdout.is_empty());
    let g = sessionfs(&["grep", "-rl", SECRET, codex.to_str().unwrap()], m.dir());
    assert!(g.stdout.is_empty(), "{}", g.stdout);
}
