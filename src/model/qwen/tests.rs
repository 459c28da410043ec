//! Qwen Code's format against the real CLI's files and contexts
//! (`tests/fixtures/qwen/`, made by `scripts/qwen-fixtures` with Qwen Code 0.24.4).

use crate::model::core::session::Session;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/qwen")
}

/// Every session file under `dir` (`projects/*/chats/*.jsonl`), sorted.
pub(super) fn sessions(home: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(projects) = std::fs::read_dir(home.join("projects")) else {
        return out;
    };
    for p in projects.flatten() {
        let Ok(chats) = std::fs::read_dir(p.path().join("chats")) else {
            continue;
        };
        for f in chats.flatten() {
            let path = f.path();
            if path.extension().is_some_and(|e| e == "jsonl") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Compares every point of every session of a fixture set with the CLI's contexts:
/// `(points compared, mismatches)`.
///
/// The kit's contexts (`contexts/`) are what the CLI sends after the file is cut
/// right after the point: what it sent then. Where a later line changes an earlier
/// record (a fragment of it, a parent that closes a cycle), what it sends on a reply
/// there now differs; `contexts-marker/` holds, for such sessions, the kit's contexts
/// made the way `/rewind` continues (the whole file, a rewind marker under the
/// point), and those are what `context.json` must equal. The leaf's context is filed
/// under the last point of its chain, which is not the leaf when the leaf's own line
/// is a fragment: then it is compared at the leaf only.
fn compare_set(set: &Path) -> (usize, Vec<String>) {
    let mut n = 0;
    let mut bad = Vec::new();
    for path in sessions(&set.join("qwen-home")) {
        let sid = path.file_stem().unwrap().to_string_lossy().into_owned();
        let ctx_path = set.join("contexts").join(format!("{sid}.contexts.json"));
        let Ok(text) = std::fs::read_to_string(&ctx_path) else {
            continue;
        };
        let want: Value = serde_json::from_str(&text).unwrap();
        let marker: Option<Value> = std::fs::read_to_string(
            set.join("contexts-marker")
                .join(format!("{sid}.contexts.json")),
        )
        .ok()
        .map(|t| serde_json::from_str(&t).unwrap());
        let s = Session::open(&path).unwrap();
        let leaf = s.leaf().expect("a leaf");
        let at_leaf =
            serde_json::to_string(&Value::Array(s.context_messages(leaf).unwrap())).unwrap();
        for (uuid, c) in want.as_object().unwrap() {
            let i = s
                .find(uuid)
                .unwrap_or_else(|| panic!("{sid}: no entry {uuid}"));
            let exp = serde_json::to_string(&c["messages"]).unwrap();
            if c.get("leaf") == Some(&Value::Bool(true)) {
                n += 1;
                if at_leaf != exp {
                    bad.push(format!(
                        "{sid} leaf {}:\n  got  {at_leaf}\n  want {exp}",
                        s.id_string(leaf)
                    ));
                }
                if i != leaf {
                    continue;
                }
            }
            let exp = match marker.as_ref().and_then(|m| m.get(uuid)) {
                Some(m) if m.get("leaf") != Some(&Value::Bool(true)) => {
                    serde_json::to_string(&m["messages"]).unwrap()
                }
                _ => exp,
            };
            let got = serde_json::to_string(&Value::Array(s.context_messages(i).unwrap())).unwrap();
            n += 1;
            if got != exp {
                bad.push(format!("{sid} {uuid}:\n  got  {got}\n  want {exp}"));
            }
        }
    }
    (n, bad)
}

#[test]
fn every_point_of_the_samples_reads_as_the_cli_sends_it() {
    let (n, bad) = compare_set(&fixtures().join("samples"));
    assert!(n >= 95, "only {n} points compared");
    assert!(
        bad.is_empty(),
        "{} of {n} differ:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// Our own run of every scenario (tui2, long and mix too) and the hand-made edge
/// sessions of scripts/qwen-edge.py (`tests/fixtures/qwen/own`).
#[test]
fn every_point_of_our_own_sessions_reads_as_the_cli_sends_it() {
    let (n, bad) = compare_set(&fixtures().join("own"));
    assert!(n >= 480, "only {n} points compared");
    assert!(
        bad.is_empty(),
        "{} of {n} differ:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// The damaged files (`tests/fixtures/qwen/damaged`): where the CLI loads the file, the
/// leaf's context is what it sends; where it refuses it, `check` says why.
#[test]
fn damaged_files_read_as_the_cli_reads_them() {
    let set = fixtures().join("damaged");
    let want: Value =
        serde_json::from_slice(&std::fs::read(set.join("contexts.json")).unwrap()).unwrap();
    let mut seen = 0;
    for path in sessions(&set.join("qwen-home")) {
        let sid = path.file_stem().unwrap().to_string_lossy().into_owned();
        let w = &want[&sid];
        let name = w["name"].as_str().unwrap();
        seen += 1;
        let report = crate::model::core::check::check(&path);
        let text = crate::model::core::check::to_text(&path, &report);
        match w.get("messages") {
            Some(m) => {
                let s = Session::open(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
                let l = s.leaf().unwrap_or_else(|| panic!("{name}: no leaf"));
                let got =
                    serde_json::to_string(&Value::Array(s.context_messages(l).unwrap())).unwrap();
                assert_eq!(got, serde_json::to_string(m).unwrap(), "{name}");
            }
            None => match name {
                "empty" => assert!(Session::open(&path).is_err(), "{name}"),
                "mixed-session-ids" => {
                    assert!(
                        text.contains("refuses to load a file that mixes session ids"),
                        "{text}"
                    )
                }
                other => panic!("{other}: the CLI refused it, and no test says why"),
            },
        }
        let expect: &[&str] = match name {
            "torn-last-line" => &["torn last line"],
            "garbage-line" => &["malformed line, skipped by Qwen Code"],
            "not-an-object-and-blank" => &["JSON that is not an object", "blank line"],
            "record-without-session-id" => &[
                "without a sessionId: Qwen Code skips it",
                "is not in the file",
            ],
            "orphan-tail" => &["is not in the file"],
            "self-parent-tail" => &["its own parent"],
            "crlf" => &["CRLF"],
            _ => &[],
        };
        for e in expect {
            assert!(text.contains(e), "{name}: no {e:?} in\n{text}");
        }
    }
    assert!(seen >= 9, "only {seen} damaged files");
}

/// The system prompt shown first in `context`: the measured base prompt for the model,
/// then the context files Qwen Code appends, as the real CLI sent them (the kit's
/// samples, made with each model family).
#[test]
fn the_system_prompt_is_the_one_the_cli_sends() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("h");
    let qh = home.join(".qwen");
    let cwd = home.join("src/qa");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(&qh).unwrap();
    let lang = fixtures().join("own/qwen-home/output-language.md");
    std::fs::copy(&lang, qh.join("output-language.md")).unwrap();
    let files = super::prompt::context_files(&qh, &home, &cwd);
    assert!(
        files.starts_with("--- Context from: ../../.qwen/output-language.md ---\n"),
        "{files}"
    );
    // What the CLI sent for the qa sample (non-interactive, default approval mode).
    let set = fixtures().join("own");
    let ctx: Value = serde_json::from_slice(
        &std::fs::read(set.join("contexts").join(qa_contexts(&set))).unwrap(),
    )
    .unwrap();
    let (_, c) = ctx.as_object().unwrap().iter().next().unwrap();
    let sent = std::fs::read_to_string(
        set.join("contexts")
            .join(c["system"]["file"].as_str().unwrap()),
    )
    .unwrap();
    let ours = format!(
        "{}\n\n---\n\n{}",
        super::prompt::base_prompt("qwen3-coder-plus"),
        files
    );
    assert_eq!(ours, sent);
    let tools_sent: Value = serde_json::from_slice(
        &std::fs::read(
            set.join("contexts")
                .join(c["tools"]["file"].as_str().unwrap()),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        serde_json::to_string(super::prompt::tools("qwen3-coder-plus")).unwrap(),
        serde_json::to_string(&tools_sent).unwrap()
    );
}

/// The contexts file of the `qa` session of a set (its first, unforked one).
fn qa_contexts(set: &Path) -> String {
    let qa = set.join("qwen-home/projects/-home-dev-src-qa/chats");
    let mut names: Vec<String> = std::fs::read_dir(&qa)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".jsonl"))
        .collect();
    names.sort();
    for n in names {
        let text = std::fs::read_to_string(qa.join(&n)).unwrap();
        if !text.contains("forkedFrom") {
            return format!("{}.contexts.json", n.trim_end_matches(".jsonl"));
        }
    }
    panic!("no qa session");
}
