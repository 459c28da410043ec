//! Bad input, mounted: each file below is mounted for real; the mount must come up
//! (or refuse with a clear message), `find` and `grep -r` over the whole mount must
//! finish without errors, the entries must read, and the session file must be byte
//! for byte what it was. The files are generated here (a 100 MB line is not a fixture).

mod common;

use common::{DEADLINE, Mount, tempdir};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const HEADER: &str = r#"{"type":"session","version":3,"id":"bad-input","timestamp":"2026-01-05T09:00:00.000Z","cwd":"/p"}"#;

fn user(id: &str, parent: Option<&str>, text: &str) -> String {
    let p = parent
        .map(|p| serde_json::to_string(p).unwrap())
        .unwrap_or_else(|| "null".into());
    format!(
        r#"{{"type":"message","id":{},"parentId":{p},"timestamp":"2026-01-05T09:00:01.000Z","message":{{"role":"user","content":[{{"type":"text","text":{}}}],"timestamp":1}}}}"#,
        serde_json::to_string(id).unwrap(),
        serde_json::to_string(text).unwrap()
    )
}

/// Runs a shell script until it ends; returns (exit code, stdout, stderr). It fails
/// the test as hung when, for `limit`, neither the script's processes nor the mount
/// (`mount_pid`) used any CPU: a deadlock, not a slow machine. (`find` over 50,000
/// nested levels needs minutes of CPU on a loaded machine; a fixed limit on the whole
/// run failed there with nothing wrong.)
fn sh_within(script: &str, cwd: &Path, limit: Duration, mount_pid: u32) -> (i32, String, String) {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let (o, e) = (dir.path().join("out"), dir.path().join("err"));
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&o).unwrap())
        .stderr(std::fs::File::create(&e).unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    let group = child.id();
    let mut used = cpu_ticks(group, mount_pid);
    let mut progress = Instant::now();
    let mut checked = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if checked.elapsed() >= Duration::from_secs(1) {
            checked = Instant::now();
            let now = cpu_ticks(group, mount_pid);
            if now != used {
                (used, progress) = (now, Instant::now());
            }
        }
        if progress.elapsed() > limit {
            // SAFETY: signals the process group this test made.
            unsafe { libc::kill(-(group as i32), libc::SIGKILL) };
            child.wait().ok();
            panic!("HANG: `{script}` used no CPU, nor did the mount, for {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (
        status.code().unwrap_or(-1),
        std::fs::read_to_string(o).unwrap_or_default(),
        std::fs::read_to_string(e).unwrap_or_default(),
    )
}

/// CPU time (clock ticks, user and system) used so far by the processes of process
/// group `group` and by process `pid`.
fn cpu_ticks(group: u32, pid: u32) -> u64 {
    let mut total = 0;
    for d in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(stat) = std::fs::read_to_string(d.path().join("stat")) else {
            continue;
        };
        // Fields after the command name, which is in parentheses and may hold spaces.
        let Some((head, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        let this: u32 = head
            .split_whitespace()
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        // rest: state(0) ppid(1) pgrp(2) … utime(11) stime(12).
        let in_group = f.get(2).and_then(|g| g.parse::<u32>().ok()) == Some(group);
        if in_group || this == pid {
            let t = |k: usize| f.get(k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            total += t(11) + t(12);
        }
    }
    total
}

/// Mounts `text` as a session, checks that find and grep -r finish cleanly, runs
/// `more` on the mount, and checks the file is unchanged.
fn mounted(text: &[u8], limit: Duration, more: impl FnOnce(&Mount)) {
    mounted_with(text, &[], limit, more)
}

/// As [`mounted`], with more arguments for `sessionfs mount`.
fn mounted_with(text: &[u8], args: &[&str], limit: Duration, more: impl FnOnce(&Mount)) {
    let dir = tempdir();
    let file: PathBuf = dir.path().join("s.jsonl");
    std::fs::write(&file, text).unwrap();
    let m = Mount::start(dir, file.clone(), args);
    let (code, out, err) = sh_within("find . | wc -l", &m.mnt, limit, m.pid());
    assert_eq!((code, err.as_str()), (0, ""), "find failed");
    assert!(
        out.trim().parse::<u64>().unwrap() > 8,
        "find saw almost nothing: {out}"
    );
    let (code, _, err) = sh_within("grep -r -c zzzzqqqq . > /dev/null", &m.mnt, limit, m.pid());
    assert!(code == 0 || code == 1, "grep -r failed ({code}): {err}");
    assert_eq!(err, "", "grep -r printed errors");
    more(&m);
    assert!(
        std::fs::read(&file).unwrap() == text,
        "the session file changed"
    );
    assert_eq!(
        m.stderr_text().matches("panicked").count(),
        0,
        "{}",
        m.stderr_text()
    );
}

#[test]
fn a_100_mb_line() {
    let big: String = "lorem ipsum dolor sit amet ".repeat(100 << 20 >> 5) + "NEEDLE-AT-THE-END";
    let text = format!(
        "{HEADER}\n{}\n{}\n",
        user("aaaaaaa1", None, &big),
        user("aaaaaaa2", Some("aaaaaaa1"), "after")
    );
    // Past the default bound on a line (64 MiB): reported as too long and skipped,
    // never read whole; its child is a root.
    let dir = tempdir();
    let file = dir.path().join("s.jsonl");
    std::fs::write(&file, &text).unwrap();
    let (code, out, _) = sh_within(
        &format!("{} check s.jsonl", common::bin()),
        dir.path(),
        DEADLINE,
        0,
    );
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("s.jsonl:2: warning: line of 84.")
            && out.contains(
                " MiB, longer than the 64 MiB a line may hold (--max-line): skipped, not read"
            ),
        "{out}"
    );
    assert!(
        out.contains("s.jsonl:3: warning: parent aaaaaaa1 is not in the file"),
        "{out}"
    );
    // Under a bound above it, it reads as any entry.
    let args = ["--max-line", "128MiB"];
    mounted_with(text.as_bytes(), &args, DEADLINE, |m| {
        let (code, out, _) = sh_within(
            "wc -c < aaaaaaa1/user; grep -c NEEDLE-AT-THE-END aaaaaaa1/user",
            &m.mnt,
            DEADLINE,
            m.pid(),
        );
        assert_eq!(code, 0);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].trim().parse::<usize>().unwrap() > big.len());
        assert_eq!(lines[1], "1");
        assert!(m.path("aaaaaaa1/aaaaaaa2/user").exists());
    });
}

#[test]
fn invalid_utf8_inside_a_line() {
    let line = user("aaaaaaa1", None, "before @@ after");
    let mut text = format!("{HEADER}\n{line}").into_bytes();
    let at = text.windows(2).position(|w| w == b"@@").unwrap();
    text.splice(at..at + 2, [0xff, 0xfe]);
    text.push(b'\n');
    mounted(&text, DEADLINE, |m| {
        let t = std::fs::read_to_string(m.path("aaaaaaa1/user")).unwrap();
        assert!(t.contains("before \u{FFFD}\u{FFFD} after"), "{t:?}");
        let raw = std::fs::read(m.path(".id/aaaaaaa1/entry.json")).unwrap();
        assert!(
            raw.windows(2).any(|w| w == [0xff, 0xfe]),
            "entry.json must be byte for byte"
        );
    });
}

#[test]
fn deeply_nested_json() {
    let depth = 100_000;
    let nested = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let odd = format!(
        r#"{{"type":"custom","customType":"x","data":{nested},"id":"aaaaaaa2","parentId":"aaaaaaa1","timestamp":"2026-01-05T09:00:02.000Z"}}"#
    );
    let text = format!(
        "{HEADER}\n{}\n{odd}\n{}\n",
        user("aaaaaaa1", None, "root"),
        user("aaaaaaa3", Some("aaaaaaa2"), "below")
    );
    mounted(text.as_bytes(), DEADLINE, |m| {
        let t = std::fs::read_to_string(m.path("aaaaaaa1/aaaaaaa2/custom")).unwrap();
        assert!(t.contains("cannot be shown"), "{t}");
        // The context below it still builds (the odd entry contributes nothing).
        let ctx = std::fs::read_to_string(m.path(".id/aaaaaaa3/context")).unwrap();
        assert!(ctx.contains("below"), "{ctx}");
    });
}

#[test]
fn ids_that_are_not_file_names() {
    let ids = ["a/b", "..", ".", "", "reply", "user", "%x", "image-1.png"];
    let mut text = format!("{HEADER}\n{}\n", user("aaaaaaa1", None, "root"));
    let mut parent = "aaaaaaa1".to_string();
    for id in ids {
        writeln!(text, "{}", user(id, Some(&parent), &format!("id {id:?}"))).unwrap();
        parent = id.to_string();
    }
    writeln!(text, "{}", user("bbbbbbb1", Some("image-1.png"), "last")).unwrap();
    let long = "L".repeat(400);
    writeln!(text, "{}", user(&long, Some("aaaaaaa1"), "long id")).unwrap();
    mounted(text.as_bytes(), DEADLINE, |m| {
        let names = [
            "%a%2Fb",
            "%..",
            "%.",
            "%",
            "%reply",
            "%user",
            "%%25x",
            "%image-1.png",
        ];
        let mut path = m.path("aaaaaaa1");
        for (id, name) in ids.iter().zip(names) {
            path = path.join(name);
            let t = std::fs::read_to_string(path.join("user"))
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(t.contains(&format!("id {id:?}")), "{t}");
            assert!(m.path(".id").join(name).join("user").exists(), ".id/{name}");
        }
        assert!(path.join("bbbbbbb1/user").exists());
        let parent = std::fs::read_link(m.path(".id/bbbbbbb1/parent")).unwrap();
        assert_eq!(parent, Path::new("../%image-1.png"));
        let long_dir = std::fs::read_dir(m.path("aaaaaaa1"))
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().into_string().unwrap())
            .find(|n| n.starts_with("%!"))
            .expect("a name for the long id");
        assert!(long_dir.len() <= 255);
        assert!(m.path(".id").join(&long_dir).join("user").exists());
    });
}

#[test]
fn a_label_on_an_entry_that_does_not_exist() {
    let label = r#"{"type":"label","id":"aaaaaaa2","parentId":"aaaaaaa1","timestamp":"2026-01-05T09:00:02.000Z","targetId":"nothere1","label":"ghost"}"#;
    let text = format!("{HEADER}\n{}\n{label}\n", user("aaaaaaa1", None, "root"));
    mounted(text.as_bytes(), DEADLINE, |m| {
        assert_eq!(std::fs::read_dir(m.path("labels")).unwrap().count(), 0);
        assert!(
            std::fs::read_to_string(m.path("aaaaaaa1/aaaaaaa2/label"))
                .unwrap()
                .contains("nothere1")
        );
    });
}

#[test]
fn ten_thousand_roots() {
    let mut text = format!("{HEADER}\n");
    for i in 0..10_000u32 {
        writeln!(
            text,
            "{}",
            user(
                &format!("{:08x}", 0x2000_0000 + i),
                None,
                &format!("root {i}")
            )
        )
        .unwrap();
    }
    mounted(text.as_bytes(), DEADLINE, |m| {
        let (_, out, _) = sh_within("ls | wc -l", &m.mnt, DEADLINE, m.pid());
        assert_eq!(out.trim(), "10009"); // 10,000 roots and 9 fixed names (ls hides .id)
        assert_eq!(
            std::fs::read_dir(m.path("branches")).unwrap().count(),
            10_000
        );
    });
}

#[test]
fn a_50000_deep_chain() {
    let mut text = format!("{HEADER}\n");
    let mut parent: Option<String> = None;
    for i in 0..50_000u32 {
        let id = format!("{:08x}", 0x1000_0000 + i);
        writeln!(text, "{}", user(&id, parent.as_deref(), &format!("m{i}"))).unwrap();
        parent = Some(id);
    }
    // find over 50,000 nested levels is quadratic in find itself (it keeps the whole
    // path): about half a minute on a native tree of the same shape, minutes on a
    // loaded machine. `sh_within` fails only when nothing moves.
    mounted(text.as_bytes(), DEADLINE, |m| {
        let leaf = parent.unwrap();
        let ctx = std::fs::read_to_string(m.path(&format!(".id/{leaf}/context"))).unwrap();
        assert!(ctx.contains("m0\n") && ctx.contains("m49999\n"));
        let link = std::fs::read_link(m.path(&format!(".id/{leaf}/parent"))).unwrap();
        assert_eq!(link, Path::new("../1000c34e"));
        // The nested symlinks at that depth point through the mount's absolute path.
        let (code, out, err) = sh_within(
            &format!("cd .id/{leaf} && readlink parent && cat context.json | head -c 1"),
            &m.mnt,
            DEADLINE,
            m.pid(),
        );
        assert_eq!((code, err.as_str()), (0, ""), "{out}");
    });
}
