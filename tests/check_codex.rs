//! `sessionfs check` on damaged copies of the Codex samples' home (CODEX-FORMAT §10): a
//! missing base page, a response item without an ordinal, a torn last line and a line
//! that is not JSON are each reported on their thread, at their line, with exit
//! status 1; every thread is checked once (a rewind page with its thread, not as a
//! file of its own) and nothing else in the home is taken for a session; the files are
//! left byte for byte as they were.

use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

fn home_copy(dir: &Path) -> PathBuf {
    let home = dir.join("codex-home");
    common::copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex/samples/codex-home"),
        &home,
    );
    home
}

fn day(home: &Path) -> PathBuf {
    home.join("sessions/2026/12/01")
}

/// The page of thread or page `id` (the end of its file name).
fn page(home: &Path, id: &str) -> PathBuf {
    fs::read_dir(day(home))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_str().unwrap().ends_with(&format!("{id}.jsonl")))
        .unwrap_or_else(|| panic!("no page {id}"))
}

/// Runs `sessionfs check --json ARGS`: status, and per file (its name) the problems
/// as `(line, kind)`.
fn check(args: &[&Path]) -> (i32, BTreeMap<String, Vec<(u64, String)>>) {
    let out = Command::new(env!("CARGO_BIN_EXE_sessionfs"))
        .arg("check")
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut files = BTreeMap::new();
    for l in String::from_utf8(out.stdout).unwrap().lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        assert_eq!(v["format"], "codex", "{l}");
        let name = Path::new(v["file"].as_str().unwrap())
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let problems = v["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["line"].as_u64().unwrap(),
                    p["kind"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert!(
            files.insert(name, problems).is_none(),
            "a thread twice: {l}"
        );
    }
    (out.status.code().unwrap(), files)
}

fn snapshot(home: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fs::read_dir(day(home))
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            let b = fs::read(&p).unwrap();
            (p, b)
        })
        .collect()
}

const TOOLS: &str = "01a2331d-7684-7ac3-8b54-e807d81da7ce";
const APIERR: &str = "01a2331d-8edc-7a21-ae48-0d80604879c6";
const BIG: &str = "01a2331d-8169-7520-bc49-e4ff7b3bc5b9";
const TUI: &str = "01a2331d-9d4a-7781-acec-f35cf40a4d8b";
const TUI_PAGE2: &str = "01a2331d-e874-78f0-936a-c859781591a5";

#[test]
fn a_clean_home_is_one_report_per_thread_and_status_0() {
    let dir = tempfile::tempdir().unwrap();
    let home = home_copy(dir.path());
    for arg in [home.clone(), home.join("sessions")] {
        let (code, files) = check(&[&arg]);
        assert_eq!(code, 0, "{files:?}");
        // 11 threads; the TUI thread's second page is checked with its thread.
        assert_eq!(files.len(), 11, "{files:?}");
        assert!(files.values().all(|p| p.is_empty()), "{files:?}");
        assert!(!files.keys().any(|f| f.contains(TUI_PAGE2)));
    }
}

#[test]
fn damaged_threads_get_their_problems_at_their_lines() {
    let dir = tempfile::tempdir().unwrap();
    let home = home_copy(dir.path());
    // A line that is not JSON, after line 5 of the tools thread.
    let p = page(&home, TOOLS);
    let mut lines: Vec<String> = fs::read_to_string(&p)
        .unwrap()
        .split('\n')
        .map(str::to_string)
        .collect();
    lines.insert(5, "this is not json".into());
    fs::write(&p, lines.join("\n")).unwrap();
    // A response item without its ordinal (the first one after the session's start).
    let p = page(&home, APIERR);
    let mut lines: Vec<String> = fs::read_to_string(&p)
        .unwrap()
        .split('\n')
        .map(str::to_string)
        .collect();
    let k = (3..lines.len())
        .find(|&k| lines[k].contains(r#""type":"response_item""#))
        .unwrap();
    let without = regex::Regex::new(r#""ordinal":\d+,"#)
        .unwrap()
        .replace(&lines[k], "")
        .into_owned();
    assert_ne!(without, lines[k]);
    lines[k] = without;
    fs::write(&p, lines.join("\n")).unwrap();
    // A torn last line.
    let p = page(&home, BIG);
    let n = fs::read_to_string(&p).unwrap().lines().count();
    let mut b = fs::read(&p).unwrap();
    b.extend_from_slice(br#"{"timestamp":"2026-12-01T19:40:00.000Z","ordinal":99,"type":"resp"#);
    fs::write(&p, b).unwrap();
    // The rewind page's base page removed.
    fs::remove_file(page(&home, TUI)).unwrap();
    let before = snapshot(&home);

    let (code, files) = check(&[&home]);
    assert_eq!(code, 1, "{files:?}");
    let of = |id: &str| {
        files
            .iter()
            .find(|(f, _)| f.ends_with(&format!("{id}.jsonl")))
            .unwrap_or_else(|| panic!("no report for {id}: {files:?}"))
            .1
            .clone()
    };
    assert_eq!(of(TOOLS), [(6, "codex-broken-line".to_string())]);
    assert_eq!(
        of(APIERR),
        [(k as u64 + 1, "codex-missing-ordinal".to_string())]
    );
    assert_eq!(of(BIG), [(n as u64 + 1, "torn-last-line".to_string())]);
    // The thread now opens from its second page, which names the missing one.
    assert_eq!(of(TUI_PAGE2), [(0, "codex-missing-base".to_string())]);
    let damaged = files.values().filter(|p| !p.is_empty()).count();
    assert_eq!(damaged, 4, "{files:?}");
    assert_eq!(snapshot(&home), before, "check changed a file");

    // One page named alone is checked as its thread, with the same problems.
    let (code, files) = check(&[&page(&home, TOOLS)]);
    assert_eq!(code, 1);
    assert_eq!(
        files.into_values().collect::<Vec<_>>(),
        [[(6, "codex-broken-line".to_string())]]
    );
}

/// The text output names the file and the line, as for the other agents.
#[test]
fn text_output_names_the_page_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let home = home_copy(dir.path());
    let p = page(&home, TOOLS);
    let mut b = fs::read(&p).unwrap();
    b.extend_from_slice(b"not json either\n");
    fs::write(&p, b).unwrap();
    let n = fs::read_to_string(&p).unwrap().lines().count();
    let out = Command::new(env!("CARGO_BIN_EXE_sessionfs"))
        .arg("check")
        .arg(&home)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let want = format!("{}:{n}: warning: ", p.display());
    assert!(
        text.lines()
            .any(|l| l.starts_with(&want) && l.contains("not JSON")),
        "{text}"
    );
}
