//! The attacker's list, sizes (issue 27, point 10): many sessions in one project, an
//! entry with 100,000 children. Each is mounted and walked with the tools users use;
//! every command returns, the counts are exact, and the mount's memory stays under a
//! bound that does not grow with the input (its indexes are evicted past
//! `--max-index-memory`). A JSON line nested 100,000 deep, 10,000 roots and a
//! 50,000-deep chain are in `tests/reliability_input.rs`.
//!
//! `SESSIONFS_SCALE_SESSIONS` sets how many one-line sessions the project holds
//! (default 5,000: a debug build enters and greps 10,000 through the mount in about 30
//! and 50 seconds on a busy two-core machine, too near a command's deadline under load;
//! docs/RELIABILITY.md gives runs with 20,000 and 1,000,000).

mod common;

use common::*;
use std::fs;
use std::io::Write;

/// The mount's peak resident memory so far (KiB).
fn peak_kib(pid: u32) -> u64 {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap()
}

const HEADER: &str =
    r#"{"type":"session","version":3,"id":"ID","timestamp":"2026-01-05T09:00:00.000Z","cwd":"/p"}"#;

#[test]
fn many_one_line_sessions_in_one_project() {
    let n = env_num("SESSIONFS_SCALE_SESSIONS", 5_000) as usize;
    let dir = tempdir();
    let sessions = dir.path().join("sessions");
    let p = sessions.join("--home-dev-p--");
    fs::create_dir_all(&p).unwrap();
    for k in 0..n {
        let id = format!("s{k:07}");
        fs::write(
            p.join(format!("{id}.jsonl")),
            format!("{}\n", HEADER.replace("ID", &id)),
        )
        .unwrap();
    }
    let m = Mount::sessions_dir(dir, Some(&sessions), &["--max-index-memory", "16M"], &[]);
    let listed = sh("ls -- --home-dev-p-- | wc -l", &m.mnt).ok().stdout;
    assert_eq!(listed.trim(), n.to_string());
    sh("ls -l -- --home-dev-p-- >/dev/null", &m.mnt).ok();
    // Every session entered: each has its fixed files and no entry.
    let names = sh(
        "find . -mindepth 3 -maxdepth 3 -name session.json | wc -l",
        &m.mnt,
    )
    .ok()
    .stdout;
    assert_eq!(names.trim(), n.to_string());
    let g = sh("grep -rl s0000001 . | head -3", &m.mnt).ok().stdout;
    assert!(g.contains("session.json") || g.is_empty(), "{g}");
    let peak = peak_kib(m.pid());
    eprintln!("{n} sessions: the mount peaked at {peak} KiB");
    // Indexes are evicted past 16 MiB: what stays is the numbering and the listing of
    // every session seen (about 600 bytes each: 590 MB for 1,000,000) and the process.
    let bound = 200 * 1024 + n as u64;
    assert!(
        peak < bound,
        "the mount peaked at {peak} KiB for {n} sessions"
    );
    // The commands that read without a mount.
    let s = sessions.to_str().unwrap();
    for args in [vec!["grep", "-rl", "nothing-here", s], vec!["usage", s]] {
        let out = sessionfs(&args, m.dir());
        assert!(out.code().is_some_and(|c| c <= 1), "{args:?}: {out:?}");
    }
}

#[test]
fn an_entry_with_100000_children() {
    const N: usize = 100_000;
    let dir = tempdir();
    let file = dir.path().join("wide.jsonl");
    let mut f = std::io::BufWriter::new(fs::File::create(&file).unwrap());
    writeln!(f, "{}", HEADER.replace("ID", "wide")).unwrap();
    writeln!(
        f,
        r#"{{"type":"message","id":"root","parentId":null,"timestamp":"2026-01-05T09:00:00.000Z","message":{{"role":"user","content":"q","timestamp":1}}}}"#
    )
    .unwrap();
    for k in 0..N {
        writeln!(
            f,
            r#"{{"type":"message","id":"c{k:06}","parentId":"root","timestamp":"2026-01-05T09:00:01.000Z","message":{{"role":"user","content":"child {k}","timestamp":1}}}}"#
        )
        .unwrap();
    }
    drop(f);
    let before = fs::read(&file).unwrap();
    let m = Mount::start(dir, file.clone(), &[]);
    let kids = sh("ls root | grep -c '^c[0-9]'", &m.mnt).ok().stdout;
    assert_eq!(kids.trim(), N.to_string());
    let leaves = sh("ls branches | wc -l", &m.mnt).ok().stdout;
    assert_eq!(leaves.trim(), N.to_string());
    let lines = sh("wc -l < tree", &m.mnt).ok().stdout;
    assert_eq!(lines.trim(), (N + 1).to_string());
    // Listed with their attributes (readdirplus), and each reachable.
    let top = sh("find . -maxdepth 2 | wc -l", &m.mnt).ok().stdout;
    assert!(top.trim().parse::<usize>().unwrap() > N, "{top}");
    let one = fs::read_to_string(m.mnt.join(".id/c099999/user")).unwrap();
    assert_eq!(one, "child 99999\n");
    let g = sessionfs(
        &["grep", "-l", "child 99999", file.to_str().unwrap()],
        m.dir(),
    )
    .ok()
    .stdout;
    assert_eq!(g, "root/c099999/user\n");
    // The index and one drawing of the tree: tens of MiB, not the square of the width.
    let peak = peak_kib(m.pid());
    eprintln!("an entry with {N} children: the mount peaked at {peak} KiB");
    assert!(peak < 600 * 1024, "the mount peaked at {peak} KiB");
    assert_eq!(fs::read(&file).unwrap(), before);
}
