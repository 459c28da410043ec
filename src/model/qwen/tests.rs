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
        let s = Session::open(&path).unwrap();
        for (uuid, c) in want.as_object().unwrap() {
            let i = s
                .find(uuid)
                .unwrap_or_else(|| panic!("{sid}: no entry {uuid}"));
            let got = s.context_messages(i).unwrap();
            let got = serde_json::to_string(&Value::Array(got)).unwrap();
            let exp = serde_json::to_string(&c["messages"]).unwrap();
            n += 1;
            if got != exp {
                bad.push(format!("{sid} {uuid}:\n  got  {got}\n  want {exp}"));
            }
            if c.get("leaf") == Some(&Value::Bool(true)) {
                let l = s.leaf().expect("a leaf");
                let at_leaf =
                    serde_json::to_string(&Value::Array(s.context_messages(l).unwrap())).unwrap();
                if at_leaf != exp {
                    bad.push(format!("{sid} leaf {}: context differs", s.id_string(l)));
                }
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
