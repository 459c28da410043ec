//! `sessionfs check` on each of Pi's damaged-file cases (tests/fixtures/damaged, made
//! as `pi-edge-cases.mjs` makes them): the right problems with their line numbers, the
//! right exit status, no hang, and the file left byte for byte as it was.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn damaged(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/damaged")
        .join(format!("{name}.jsonl"))
}

/// Runs `sessionfs check --json` with a deadline; returns (status, one JSON per file).
fn check(files: &[PathBuf]) -> (i32, Vec<Value>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sessionfs"))
        .arg("check")
        .arg("--json")
        .args(files)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(120) {
            child.kill().ok();
            panic!("sessionfs check hung on {files:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let out = child.wait_with_output().unwrap();
    let reports = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (status.code().unwrap(), reports)
}

/// A case: its name, the exit status, and the problems (kind, line) it must report.
type Case = (&'static str, i32, &'static [(&'static str, u64)]);

const CASES: &[Case] = &[
    ("baseline", 0, &[]),
    (
        "blank-and-garbage-lines",
        1,
        &[
            ("blank", 2),
            ("blank", 4),
            ("malformed", 5),
            ("malformed", 7),
        ],
    ),
    ("crlf-line-endings", 0, &[("crlf", 1)]),
    ("corrupt-header-line", 1, &[]),
    ("header-not-first", 1, &[]),
    ("bom-before-header", 1, &[]),
    ("empty-file", 1, &[]),
    ("unknown-entry-type-as-leaf", 0, &[("unknown-type", 5)]),
    ("label-is-last-line", 0, &[]),
    ("orphan-parent-missing", 1, &[("orphan", 5)]),
    ("duplicate-id", 1, &[("duplicate-id", 5)]),
    (
        "duplicate-id-forming-cycle",
        1,
        &[("duplicate-id", 5), ("cycle", 4)],
    ),
    ("self-parent", 1, &[("self-parent", 5)]),
    ("parent-cycle", 1, &[("cycle", 5)]),
    ("entry-missing-id", 1, &[("missing-id", 5)]),
    ("children-out-of-timestamp-order", 0, &[]),
    (
        "trailing-partial-line-then-append",
        1,
        &[("torn-last-line", 5)],
    ),
    (
        "no-final-newline-then-append",
        1,
        &[("unterminated-last-line", 4)],
    ),
    ("second-compaction-keeps-range-containing-first", 0, &[]),
    ("compaction-firstkept-not-on-path", 0, &[]),
    ("empty-branch-summary-skipped", 0, &[]),
    ("message-with-null-content", 0, &[]),
    ("label-dangling-target", 1, &[("label-target-missing", 5)]),
    ("invalid-utf8-in-string", 0, &[]),
    ("duplicate-json-keys", 0, &[]),
    ("three-roots", 0, &[]),
    ("id-with-slash", 0, &[]),
    ("id-dotdot", 0, &[]),
    ("id-reply", 0, &[]),
    ("id-empty-string", 0, &[]),
    // Pi 1.6: its kinds are known, edits that cannot work are warnings, odd ones notes.
    ("1-6-usage-is-leaf", 0, &[]),
    ("1-6-system-message-in-context", 0, &[]),
    ("1-6-context-edit-null-on-system-message", 0, &[]),
    ("1-6-context-edit-on-other-branch", 0, &[]),
    ("1-6-compaction-retain-none", 0, &[]),
    (
        "1-6-context-edit-target-missing",
        1,
        &[("context-edit-target-missing", 6)],
    ),
    (
        "1-6-context-edit-before-its-target-on-path",
        0,
        &[("context-edit-before-target", 6)],
    ),
    (
        "1-6-context-edit-replacement-on-system-message",
        0,
        &[("context-edit-no-effect", 6)],
    ),
];

#[test]
fn each_damaged_case_gets_its_problems_and_status() {
    for (case, status, want) in CASES {
        let f = damaged(case);
        let before = std::fs::read(&f).unwrap();
        let (code, reports) = check(std::slice::from_ref(&f));
        assert_eq!(code, *status, "{case}: exit status; report {reports:?}");
        let r = &reports[0];
        assert_eq!(r["ok"], *status == 0, "{case}");
        let got: Vec<(String, u64)> = r["problems"]
            .as_array()
            .map(|ps| {
                ps.iter()
                    .map(|p| {
                        (
                            p["kind"].as_str().unwrap().to_string(),
                            p["line"].as_u64().unwrap(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        for (kind, line) in *want {
            assert!(
                got.contains(&(kind.to_string(), *line)),
                "{case}: expected {kind} on line {line}, got {got:?}"
            );
        }
        if *status == 0 {
            assert!(
                r["problems"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|p| p["severity"] == "note"),
                "{case}: {r}"
            );
        }
        assert_eq!(
            std::fs::read(&f).unwrap(),
            before,
            "{case}: the file must not change"
        );
    }
}

#[test]
fn files_that_are_not_sessions_say_why() {
    for case in [
        "corrupt-header-line",
        "header-not-first",
        "bom-before-header",
        "empty-file",
    ] {
        let (code, reports) = check(&[damaged(case)]);
        assert_eq!(code, 1, "{case}");
        assert_eq!(reports[0]["session"], false, "{case}");
        let e = reports[0]["error"].as_str().unwrap();
        assert!(
            e.contains("not a Pi, Claude Code or Codex session") || e.contains("empty"),
            "{case}: {e}"
        );
    }
}

#[test]
fn unreadable_files_are_status_2_and_the_worst_status_wins() {
    let dir = tempfile::tempdir().unwrap();
    let (code, reports) = check(&[dir.path().join("missing.jsonl")]);
    assert_eq!(code, 2);
    assert_eq!(reports[0]["readable"], false);
    let (code, _) = check(&[dir.path().to_path_buf()]);
    assert_eq!(code, 2, "a directory is unreadable as a session");
    let (code, reports) = check(&[
        damaged("baseline"),
        damaged("self-parent"),
        dir.path().join("missing"),
    ]);
    assert_eq!(code, 2);
    assert_eq!(reports.len(), 3);
}

#[test]
fn text_output_names_file_and_line() {
    let out = Command::new(env!("CARGO_BIN_EXE_sessionfs"))
        .arg("check")
        .arg(damaged("parent-cycle"))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("parent-cycle.jsonl:5: warning: parent cycle"),
        "{text}"
    );
    assert!(
        text.contains(": 1 problem: v3, 5 entries, 2 roots,"),
        "{text}"
    );
}

/// `sessionfs check FILE` as text, on a file holding `bytes`.
fn check_text(bytes: &[u8]) -> String {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("f.jsonl");
    std::fs::write(&f, bytes).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sessionfs"))
        .arg("check")
        .arg(&f)
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

const HEADER: &str =
    r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-05T09:00:00.000Z","cwd":"/"}"#;

#[test]
fn counts_of_one_are_singular() {
    let one = format!(
        "{HEADER}\n{}\n",
        r#"{"type":"message","id":"a","parentId":"gone","timestamp":"2026-01-05T09:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#
    );
    let text = check_text(one.as_bytes());
    assert!(
        text.ends_with(
            ": 1 problem: v3, 1 entry, 1 root, 1 leaf, 0 branch points, deepest path 1 (to a)\n"
        ),
        "{text}"
    );
}

#[test]
fn a_file_that_is_not_a_session_is_named_at_the_right_line() {
    // A plain text file of one line: line 1, not 2.
    let text = check_text(b"just some text\n");
    assert!(
        text.contains(
            "error: not a Pi, Claude Code or Codex session: line 1: not JSON, and no line of the file is a session header"
        ),
        "{text}"
    );
    let text = check_text(b"\n\nsome text\nmore\n");
    assert!(text.contains(": line 3: not JSON"), "{text}");
    // A header behind a byte order mark: the BOM is named, not the line after it.
    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend_from_slice(HEADER.as_bytes());
    bom.extend_from_slice(b"\n{\"type\":\"model_change\",\"id\":\"m\",\"parentId\":null}\n");
    let text = check_text(&bom);
    assert!(
        text.contains(
            "error: not a Pi, Claude Code or Codex session: line 1: a session header behind a byte order mark (BOM, \
             the bytes EF BB BF at the start of the file), which JSON does not allow, so Pi \
             cannot read it; remove those three bytes"
        ),
        "{text}"
    );
}

#[test]
fn summary_counts_match_pi() {
    // small.jsonl: Pi's getTree reports 33 entries, 4 leaves, 3 branch points, 1 root.
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sessions/small.jsonl");
    let (code, r) = check(&[f]);
    assert_eq!(code, 0);
    assert_eq!(
        (
            r[0]["entries"].as_u64(),
            r[0]["leaves"].as_u64(),
            r[0]["branchPoints"].as_u64(),
            r[0]["roots"].as_u64()
        ),
        (Some(33), Some(4), Some(3), Some(1))
    );
}

/// Sessions written by Pi 1.6 are clean: no unknown types, no problem with their
/// edits (the retries Pi omitted, the extension-style edits, the tour's).
#[test]
fn pi_16_sessions_are_clean() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sessions");
    let files: Vec<PathBuf> = [
        "tour",
        "real-1.6-bugfix",
        "real-1.6-overflow",
        "real-1.6-edits",
        "real-1.6-generator",
    ]
    .iter()
    .map(|n| dir.join(format!("{n}.jsonl")))
    .collect();
    let (code, reports) = check(&files);
    assert_eq!(code, 0, "{reports:?}");
    for r in &reports {
        assert_eq!(r["problems"], serde_json::json!([]), "{r}");
    }
}

/// A malformed edit, an edit on another branch, one without a target and one without
/// a replacement are warnings with their line numbers.
#[test]
fn broken_context_edits_are_reported() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("s.jsonl");
    let lines = [
        r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#,
        r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"a","timestamp":1}}"#,
        r#"{"type":"message","id":"u2","parentId":"u1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"user","content":"b","timestamp":2}}"#,
        r#"{"type":"message","id":"u3","parentId":"u1","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"user","content":"c","timestamp":3}}"#,
        r#"{"type":"context_edit","id":"e1","parentId":"u3","timestamp":"2026-01-01T00:00:04.000Z","targetId":"u2","replacement":null}"#,
        r#"{"type":"context_edit","id":"e2","parentId":"e1","timestamp":"2026-01-01T00:00:05.000Z","targetId":"u1","replacement":{"content":5}}"#,
        r#"{"type":"context_edit","id":"e3","parentId":"e2","timestamp":"2026-01-01T00:00:06.000Z","replacement":null}"#,
        r#"{"type":"context_edit","id":"e4","parentId":"e3","timestamp":"2026-01-01T00:00:07.000Z","targetId":"u1"}"#,
    ];
    std::fs::write(&f, lines.join("\n") + "\n").unwrap();
    let (code, r) = check(&[f]);
    assert_eq!(code, 1);
    let got: Vec<(String, u64)> = r[0]["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["kind"].as_str().unwrap().to_string(),
                p["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("context-edit-off-branch".to_string(), 5),
            ("context-edit-malformed-replacement".to_string(), 6),
            ("context-edit-no-target".to_string(), 7),
            ("context-edit-no-replacement".to_string(), 8),
        ]
    );
    let msg = r[0]["problems"][0]["message"].as_str().unwrap();
    assert_eq!(
        msg,
        "context edit of u2, which is not on its branch: it changes nothing"
    );
}

// `check` says how to repair a torn last line (a crash mid-write): the `truncate -s`
// that drops it and keeps every whole line; run as printed, the file checks clean and
// its whole lines are as they were.
#[test]
fn a_torn_last_line_comes_with_the_truncate_that_repairs_it() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("torn session.jsonl");
    let whole = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sessions/small.jsonl"),
    )
    .unwrap();
    let mut bytes = whole.clone();
    bytes.extend_from_slice(br#"{"type":"message","id":"torn0001","parentId":"#);
    std::fs::write(&f, &bytes).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sessionfs"))
        .arg("check")
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let cmd = text
        .lines()
        .find_map(|l| {
            l.split_once("to drop it, once no agent writes the file: ")
                .map(|x| x.1)
        })
        .unwrap_or_else(|| panic!("no repair in {text}"));
    assert_eq!(
        cmd,
        format!("truncate -s {} '{}'", whole.len(), f.display())
    );
    let (_, json) = check(std::slice::from_ref(&f));
    let p = json[0]["problems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == "torn-last-line")
        .unwrap();
    assert_eq!(p["repair"], cmd);
    let sh = Command::new("sh").arg("-c").arg(cmd).output().unwrap();
    assert!(sh.status.success(), "{sh:?}");
    assert_eq!(std::fs::read(&f).unwrap(), whole);
    let (code, _) = check(&[f]);
    assert_eq!(code, 0);
}
