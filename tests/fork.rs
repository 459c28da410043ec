//! Forking a branch into a session of its own (`sessionfs fork`, `model::fork`), compared
//! with what the agents themselves write:
//!
//! * Pi: `tests/fixtures/fork/pi-forks.json`, made by Pi 1.6.0's `createBranchedSession`
//!   (`scripts/pi-fork-goldens.mjs`), forks of entries of every Pi fixture, each checked
//!   there to open in Pi 1.6 with the source's context at its leaf;
//! * Claude Code: `tests/fixtures/claude/forks/`, made by the real CLI's
//!   `--resume-session-at X --fork-session` (`scripts/claude-fork-fixtures.py`), with the
//!   kit's `accepts.sh` and `context.sh` results for our fork of the same entry.

mod common;

use common::{bin, tempdir};
use serde_json::Value;
use sessionfs::model::Session;
use sessionfs::model::fork::{self, ForkError, Fresh};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn ms(iso: &str) -> i64 {
    sessionfs::model::context::js_date_ms(iso).expect("an ISO timestamp")
}

#[test]
fn pi_forks_are_byte_for_byte_what_pi_1_6_writes() {
    let goldens: Value =
        serde_json::from_slice(&fs::read(repo("tests/fixtures/fork/pi-forks.json")).unwrap())
            .unwrap();
    let forks = goldens["forks"].as_array().unwrap();
    assert!(forks.len() >= 30, "the goldens cover every Pi fixture");
    let mut sources = std::collections::HashSet::new();
    for g in forks {
        let src = g["source"].as_str().unwrap();
        sources.insert(src.to_string());
        let entry = g["entry"].as_str().unwrap();
        assert_eq!(
            g["piOpensIt"], true,
            "{src} @ {entry}: Pi 1.6 opened Pi's fork"
        );
        assert_eq!(
            g["contextAtLeafEqualsSourceAtEntry"], true,
            "{src} @ {entry}"
        );
        let dir = tempdir();
        let copy = dir.path().join(Path::new(src).file_name().unwrap());
        fs::copy(repo(src), &copy).unwrap();
        let s = Session::open(&copy).unwrap();
        let i = fork::find_entry(&s, entry).unwrap();
        let fresh = Fresh {
            session_id: g["sessionId"].as_str().unwrap().into(),
            now_ms: ms(g["timestamp"].as_str().unwrap()),
            prompt_id: String::new(),
            label_ids: g["labelIds"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect(),
        };
        let f = fork::plan(&s, i, &fresh).unwrap();
        assert_eq!(f.dir, dir.path(), "{src} @ {entry}: beside the source");
        assert_eq!(
            f.file_name,
            g["fileName"].as_str().unwrap(),
            "{src} @ {entry}"
        );
        let text = String::from_utf8(f.bytes.clone()).unwrap();
        let (header, body) = text.split_once('\n').unwrap();
        let quoted = serde_json::to_string(copy.to_str().unwrap()).unwrap();
        let expected_header = g["header"]
            .as_str()
            .unwrap()
            .replace("@SOURCE@", &quoted[1..quoted.len() - 1]);
        assert_eq!(header, expected_header, "{src} @ {entry}: the header");
        let want = g["body"].as_str().unwrap();
        if body != want {
            for (k, (a, b)) in body.lines().zip(want.lines()).enumerate() {
                assert_eq!(a, b, "{src} @ {entry}: line {} of the fork", k + 2);
            }
            panic!(
                "{src} @ {entry}: {} lines, Pi wrote {}",
                body.lines().count(),
                want.lines().count()
            );
        }
    }
    // Every fixture Pi can fork (v1 files are refused, below).
    for f in fs::read_dir(repo("tests/fixtures/sessions")).unwrap() {
        let name = f.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".jsonl") && !name.starts_with("legacy-v1") {
            assert!(
                sources.contains(&format!("tests/fixtures/sessions/{name}")),
                "no fork golden for {name}"
            );
        }
    }
}

/// Our own check over every entry of several files: the fork opens, its leaf is where
/// the branch ended, and its context there is the source's context at the entry.
#[test]
fn every_entry_forks_with_the_same_context_at_the_leaf() {
    for name in [
        "small.jsonl",
        "tour.jsonl",
        "legacy-v2.jsonl",
        "real-1.6-bugfix.jsonl",
    ] {
        let dir = tempdir();
        let src = dir.path().join(name);
        fs::copy(common::fixture(name), &src).unwrap();
        let s = Session::open(&src).unwrap();
        for i in 0..s.entries().len() as u32 {
            if !s.entry(i).is_node() {
                continue;
            }
            let f = fork::plan(&s, i, &Fresh::random(s.format())).unwrap();
            let out = dir.path().join("fork.jsonl");
            fs::write(&out, &f.bytes).unwrap();
            let t = Session::open(&out).unwrap();
            assert!(t.problems().is_empty(), "{name} @ {}", s.id_string(i));
            let leaf = t.leaf().unwrap();
            assert_eq!(
                t.llm_context(leaf).unwrap(),
                s.llm_context(i).unwrap(),
                "{name} @ {}",
                s.id_string(i)
            );
            fs::remove_file(&out).unwrap();
        }
    }
}

#[test]
fn a_v1_file_is_refused_and_nothing_is_written() {
    let dir = tempdir();
    let src = dir.path().join("legacy-v1.jsonl");
    fs::copy(common::fixture("legacy-v1.jsonl"), &src).unwrap();
    let s = Session::open(&src).unwrap();
    let leaf = s.leaf().unwrap();
    let e = fork::plan(&s, leaf, &Fresh::random(s.format())).unwrap_err();
    assert!(matches!(e, ForkError::Refused(_)));
    assert!(e.to_string().contains("format v1"), "{e}");
    let id = s.id_string(leaf);
    let out = Command::new(bin())
        .args(["fork", src.to_str().unwrap(), &id])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("format v1") && err.contains("Open it in Pi"),
        "{err}"
    );
    assert_eq!(
        fs::read_dir(dir.path()).unwrap().count(),
        1,
        "nothing written"
    );
}

fn sessionfs_fork(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(bin()).arg("fork").args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_command_prints_the_new_file_and_never_touches_the_source() {
    let dir = tempdir();
    let src = dir.path().join("small.jsonl");
    fs::copy(common::fixture("small.jsonl"), &src).unwrap();
    let before = fs::read(&src).unwrap();
    let mtime = fs::metadata(&src).unwrap().mtime_nsec();
    // A unique prefix is enough.
    let (code, out, err) = sessionfs_fork(&[src.to_str().unwrap(), "6c93b"]);
    assert_eq!(code, Some(0), "{err}");
    let made = PathBuf::from(out.trim_end());
    assert_eq!(made.parent(), Some(dir.path()));
    let name = made.file_name().unwrap().to_str().unwrap();
    // <ISO time with : and . as ->_<uuid v7>.jsonl, as Pi names it.
    assert!(
        name.ends_with(".jsonl") && name.len() == 24 + 1 + 36 + 6,
        "{name}"
    );
    assert_eq!(&name[10..11], "T");
    let t = Session::open(&made).unwrap();
    let header: Value = serde_json::from_slice(&t.header_bytes().unwrap()).unwrap();
    assert_eq!(header["parentSession"], src.to_str().unwrap());
    assert_eq!(header["id"].as_str().unwrap(), &name[25..61]);
    assert_eq!(t.id_string(t.leaf().unwrap()).len(), 8);
    assert_eq!(fs::read(&src).unwrap(), before, "the source is unchanged");
    assert_eq!(fs::metadata(&src).unwrap().mtime_nsec(), mtime);
    // Two forks of one entry are two sessions.
    let (code, out2, _) = sessionfs_fork(&[src.to_str().unwrap(), "6c93bccf"]);
    assert_eq!(code, Some(0));
    assert_ne!(out2, out);
    // Only the two new files and the source; no temporary file left.
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 3);
}

#[test]
fn the_command_says_what_is_wrong() {
    let dir = tempdir();
    let src = dir.path().join("small.jsonl");
    fs::copy(common::fixture("small.jsonl"), &src).unwrap();
    let s = src.to_str().unwrap();
    let (code, _, err) = sessionfs_fork(&[s, "zzzz"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("no entry \"zzzz\""), "{err}");
    let (code, _, err) = sessionfs_fork(&[s, "6"]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("start of several entry ids") && err.contains("6c93bccf"),
        "{err}"
    );
    let (code, _, err) = sessionfs_fork(&[dir.path().to_str().unwrap(), "6c93bccf"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("is a directory"), "{err}");
    let fifo = dir.path().join("pipe.jsonl");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let (code, _, err) = sessionfs_fork(&[fifo.to_str().unwrap(), "6c93bccf"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("neither a regular file nor a directory"),
        "{err}"
    );
    let (code, _, err) = sessionfs_fork(&[dir.path().join("nope.jsonl").to_str().unwrap(), "x"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("No such file"), "{err}");
    // Nothing was written by any of them.
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
}

#[test]
fn a_parent_cycle_on_the_path_is_refused() {
    let src = repo("tests/fixtures/damaged/parent-cycle.jsonl");
    let s = Session::open(&src).unwrap();
    let cyc = (0..s.entries().len() as u32)
        .find(|&i| s.entry(i).flags & sessionfs::model::session::flags::CYCLE != 0)
        .expect("a cycle in the fixture");
    let e = fork::plan(&s, cyc, &Fresh::random(s.format())).unwrap_err();
    assert!(e.to_string().contains("parent cycle"), "{e}");
}

// ----- Claude Code ---------------------------------------------------------------------

fn claude_cases() -> Vec<(String, Value)> {
    let dir = repo("tests/fixtures/claude/forks");
    let mut out: Vec<(String, Value)> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let name = p.file_stem().unwrap().to_str().unwrap().to_string();
            (
                name,
                serde_json::from_slice(&fs::read(&p).unwrap()).unwrap(),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn claude_forks_copy_the_chain_as_the_cli_does() {
    let cases = claude_cases();
    assert!(cases.len() >= 8);
    for (name, c) in cases {
        let src = repo(c["source"].as_str().unwrap());
        let s = Session::open(&src).unwrap();
        let entry = c["entry"].as_str().unwrap();
        let i = fork::find_entry(&s, entry).unwrap();
        let fresh = Fresh {
            session_id: c["cliSessionId"].as_str().unwrap().into(),
            now_ms: 0,
            prompt_id: c["cliPromptId"][0].as_str().unwrap().into(),
            label_ids: Vec::new(),
        };
        let f = fork::plan(&s, i, &fresh).unwrap();
        assert_eq!(f.file_name, format!("{}.jsonl", fresh.session_id));
        assert_eq!(f.dir, src.parent().unwrap());
        let ours: Vec<&[u8]> = f
            .bytes
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .collect();
        // The CLI's copies of source lines, in its order (its new turn left out).
        let cli = fs::read(repo(&format!(
            "tests/fixtures/claude/forks/{name}.cli.jsonl"
        )))
        .unwrap();
        let copies: Vec<&[u8]> = cli
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .collect();
        let copied_rows = c["cliLines"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r.get("copy").is_some())
            .count();
        assert_eq!(copies.len(), copied_rows, "{name}");
        assert!(!copies.is_empty(), "{name}");
        assert_eq!(
            ours.len(),
            copies.len() + 1,
            "{name}: the copied chain and one last-prompt line"
        );
        for (k, (a, b)) in ours.iter().zip(&copies).enumerate() {
            assert_eq!(
                String::from_utf8_lossy(a),
                String::from_utf8_lossy(b),
                "{name}: copied line {}",
                k + 1
            );
        }
        let last: Value = serde_json::from_slice(ours[ours.len() - 1]).unwrap();
        assert_eq!(last["type"], "last-prompt");
        assert_eq!(last["leafUuid"], entry);
        assert_eq!(last["sessionId"], fresh.session_id.as_str());
        // What the kit measured on our fork of the same entry.
        assert_eq!(c["accepts"]["ok"], true, "{name}: the CLI resumes our fork");
    }
}

#[test]
fn claude_forks_have_the_context_of_the_entry_where_claude_code_keeps_it() {
    for (name, c) in claude_cases() {
        // At an unanswered tool call Claude Code itself resumes differently from how it
        // continues after the call (it adds an interruption result); see the fixture.
        if name == "tools-tool-call" {
            assert_eq!(c["contextAtForkLeafEqualsSourceAtEntry"], false);
            continue;
        }
        assert_eq!(c["contextAtForkLeafEqualsSourceAtEntry"], true, "{name}");
    }
}

#[test]
fn claude_entries_claude_code_cannot_resume_at_are_refused() {
    let qa = repo(
        "tests/fixtures/claude/projects/-home-dev-src-qa/07d0e045-3cdc-4eca-a398-7147bce4b33f.jsonl",
    );
    let s = Session::open(&qa).unwrap();
    // Before the compaction, on the other branch: Claude Code no longer loads it.
    let i = fork::find_entry(&s, "9c6300d5").unwrap();
    let e = fork::plan(&s, i, &Fresh::random(s.format())).unwrap_err();
    assert!(e.to_string().contains("compaction at line 33"), "{e}");
    // A subagent's line.
    let sub = repo(
        "tests/fixtures/claude/projects/-home-dev-src-sub/b3730bc4-7f81-47f4-84e9-5fd6ab8f85ea.jsonl",
    );
    let s = Session::open(&sub).unwrap();
    let agent = (0..s.entries().len() as u32)
        .find(|&i| s.alias(i).is_some())
        .expect("a subagent");
    let e = fork::plan(&s, agent, &Fresh::random(s.format())).unwrap_err();
    assert!(e.to_string().contains("subagent"), "{e}");
}
