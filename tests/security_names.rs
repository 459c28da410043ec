//! Names and lines made from what a session holds (issue 27, points 8 and 10): ids,
//! labels, names, project and session names that cannot be file names as they are, or
//! that carry terminal escape sequences. Every one is listed, reachable and shown
//! escaped (`%` and its bytes percent-encoded for a name, `\u{1b}` in a line), never
//! raw: `ls`, `find`, `grep -r`, `cat name`, `tree`, `sessionfs grep` (with
//! `--sessions`), `usage` and `check`.

mod common;

use common::*;
use serde_json::json;
use sessionfs::view::{escape_id, unescape_name};
use std::fs;
use std::path::Path;

/// Bytes a terminal acts on: C0 controls but the newline, DEL, and C1 controls (in
/// their UTF-8 form).
fn has_terminal_controls(b: &[u8]) -> bool {
    b.iter().any(|&c| (c < 0x20 && c != b'\n') || c == 0x7f)
        || b.windows(2)
            .any(|w| w[0] == 0xc2 && (0x80..0xa0).contains(&w[1]))
}

/// Escape sequences a model could write into a title: set the window title, clear the
/// screen, a C1 CSI.
const TITLE: &str = "\u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}31m";

/// The attacker's ids: ones that are no file names, and ones that drive a terminal.
fn hostile_ids() -> Vec<String> {
    let mut v: Vec<String> = [
        "a/b",
        "..",
        ".",
        "",
        "nul\u{0}x",
        "line\nbreak",
        "-rf",
        "leaf",
        "reply",
        ".id",
        "Case",
        "case",
        "/../../etc",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.push("x".repeat(300));
    v.push(format!("t{TITLE}"));
    v
}

fn pi_line(v: serde_json::Value) -> String {
    format!("{v}\n")
}

/// A Pi session whose entries have the hostile ids (a chain), labels with `/`, a NUL
/// and an escape sequence, and a name that sets the terminal's title.
fn hostile_session(path: &Path) {
    let mut s = pi_line(
        json!({"type":"session","version":3,"id":"s","timestamp":"2026-01-05T09:00:00.000Z","cwd":"/p"}),
    );
    let mut parent = serde_json::Value::Null;
    for (k, id) in hostile_ids().iter().enumerate() {
        s.push_str(&pi_line(json!({
            "type":"message","id":id,"parentId":parent,
            "timestamp":format!("2026-01-05T09:00:{:02}.000Z", k),
            "message":{"role":"user","content":format!("hostile {TITLE} text {k}"),"timestamp":1}
        })));
        parent = json!(id);
    }
    // One label per entry, as in Pi.
    for (k, (label, target)) in [
        ("x/y", "Case"),
        ("nul\u{0}label", "case"),
        ("esc\u{1b}[31mred", "-rf"),
    ]
    .iter()
    .enumerate()
    {
        s.push_str(&pi_line(json!({
            "type":"label","id":format!("lab{k}"),"parentId":parent,
            "timestamp":"2026-01-05T09:01:00.000Z","targetId":target,"label":label
        })));
        parent = json!(format!("lab{k}"));
    }
    s.push_str(&pi_line(json!({
        "type":"session_info","id":"named","parentId":parent,
        "timestamp":"2026-01-05T09:02:00.000Z","name":format!("title {TITLE}")
    })));
    fs::write(path, s).unwrap();
}

#[test]
fn hostile_ids_labels_and_names_are_listed_escaped_and_reachable() {
    let dir = tempdir();
    let file = dir.path().join("hostile.jsonl");
    hostile_session(&file);
    let m = Mount::start(dir, file.clone(), &[]);
    let mnt = &m.mnt;
    // Every entry is reachable by its escaped name under .id/.
    for id in hostile_ids() {
        let name = escape_id(&id);
        assert!(!has_terminal_controls(name.as_bytes()), "{name:?}");
        assert!(mnt.join(".id").join(&name).is_dir(), "{id:?} as {name:?}");
        if name.starts_with('%') && !name.starts_with("%!") {
            assert_eq!(unescape_name(&name).as_deref(), Some(id.as_str()));
        }
    }
    // Two ids differing only in case are two entries.
    assert!(mnt.join(".id/Case").is_dir() && mnt.join(".id/case").is_dir());
    // `ls labels` lists each label (escaped), and each link reads.
    let labels = sh("ls labels", mnt).ok().stdout;
    assert_eq!(labels.lines().count(), 3, "{labels:?}");
    assert!(!has_terminal_controls(labels.as_bytes()), "{labels:?}");
    for l in labels.lines() {
        let t = fs::read_link(mnt.join("labels").join(l)).unwrap();
        let t = t.to_str().unwrap();
        assert!(
            ["../.id/Case", "../.id/case", "../.id/-rf"].contains(&t),
            "{l}: {t}"
        );
    }
    // Removing one by its listed name clears it.
    let first = labels.lines().next().unwrap().to_string();
    sh(&format!("rm 'labels/{first}'"), mnt).ok();
    assert_eq!(sh("ls labels", mnt).ok().stdout.lines().count(), 2);
    // What reaches a terminal: names (find, grep -rl, ls -R) and the lines sessionfs
    // composes (cat name, tree). A KIND file's text is the session's, shown as it is
    // (grep prints matched lines raw, as GNU grep does on any file).
    for script in [
        "find .",
        "grep -rl hostile .",
        "cat name",
        "cat tree",
        "ls -R .",
    ] {
        let out = run("sh", &["-c", script], mnt);
        assert!(
            !has_terminal_controls(out.stdout.as_bytes()),
            "{script}: {:?}",
            out.stdout
        );
    }
    assert!(
        fs::read_to_string(mnt.join("name"))
            .unwrap()
            .starts_with("title \\u{1b}]0;owned\\u{7}")
    );
    // The commands that read without a mount.
    let f = file.to_str().unwrap();
    for args in [
        vec!["grep", "-rl", "hostile", f],
        vec!["grep", "--sessions", "hostile", f],
        vec!["grep", "-c", "hostile", f],
        vec!["usage", "--by", "session", f],
        vec!["check", f],
    ] {
        let out = sessionfs(&args, m.dir());
        assert!(
            !has_terminal_controls(out.stdout.as_bytes())
                && !has_terminal_controls(out.stderr.as_bytes()),
            "{args:?}: {out:?}"
        );
    }
}

/// A Claude Code file named `..jsonl` (and `...jsonl`) is listed as `%.` (`%..`), not as
/// a second `.`, and reads; a Codex thread whose `cwd` holds a NUL is in a project that
/// can be entered.
#[test]
fn sessions_and_projects_named_after_no_file_name_are_reachable() {
    let dir = tempdir();
    let projects = dir.path().join("projects");
    let p = projects.join("-home-dev-src-qa");
    fs::create_dir_all(&p).unwrap();
    let src =
        fixture("../claude/projects/-home-dev-src-qa/034d3153-8c13-4469-9665-5948bffe2026.jsonl");
    fs::copy(&src, p.join("..jsonl")).unwrap();
    fs::copy(&src, p.join("...jsonl")).unwrap();
    fs::copy(&src, p.join("\u{1b}[31mred.jsonl")).unwrap();
    let m = Mount::sessions_dir(dir, Some(&projects), &[], &[]);
    let listed = sh("ls -a -- -home-dev-src-qa", &m.mnt).ok().stdout;
    let mut listed: Vec<&str> = listed.lines().collect();
    listed.sort();
    assert_eq!(
        listed,
        ["%%1B[31mred", "%.", "%..", ".", ".."],
        "{listed:?}"
    );
    for name in ["%.", "%..", "%%1B[31mred"] {
        let n = fs::read_to_string(m.mnt.join("-home-dev-src-qa").join(name).join("name")).unwrap();
        // Named as `claude --resume` names it: the last prompt typed (`last-prompt`).
        assert_eq!(n, "[[FORK2]] Again.\n", "{name}");
    }
    let g = sessionfs(&["grep", "-rl", "2+2", projects.to_str().unwrap()], m.dir());
    assert!(g.stdout.contains("-home-dev-src-qa/%./"), "{}", g.stdout);
    assert!(
        !has_terminal_controls(g.stdout.as_bytes()),
        "{:?}",
        g.stdout
    );
    drop(m);

    let dir = tempdir();
    let home = dir.path().join("codex");
    copy_tree(&fixture("../codex/own/codex-home"), &home);
    // Every thread's first page says it ran in a directory whose name holds a NUL.
    let mut changed = 0;
    for e in walk(&home.join("sessions")) {
        let text = fs::read_to_string(&e).unwrap();
        let Some((first, rest)) = text.split_once('\n') else {
            continue;
        };
        let mut v: serde_json::Value = serde_json::from_str(first).unwrap();
        if v["payload"]["cwd"].is_string() {
            v["payload"]["cwd"] = json!("/home/dev/nul\u{0}dir");
            fs::write(&e, format!("{v}\n{rest}")).unwrap();
            changed += 1;
        }
    }
    assert!(changed > 0);
    let m = Mount::sessions_dir(dir, Some(&home), &[], &[]);
    let projects = sh("ls", &m.mnt).ok().stdout;
    assert!(
        projects.lines().any(|l| l == "-home-dev-nul%00dir"),
        "{projects}"
    );
    let threads = sh("ls -- -home-dev-nul%00dir", &m.mnt).ok().stdout;
    assert!(threads.lines().count() > 0);
    let first = threads.lines().next().unwrap();
    sh(
        &format!("cat -- '-home-dev-nul%00dir/{first}/name'"),
        &m.mnt,
    )
    .ok();
}

/// The `.jsonl` files under `dir`, at any depth.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
    out
}
