//! The Claude Code model against Claude Code itself: every fixture session
//! (`tests/fixtures/claude/projects`) and the expected context of every entry
//! (`tests/fixtures/claude/contexts`, captured with `context.sh`).

use crate::model::Session;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude")
}

/// Every main session file of the fixtures, with its expected contexts.
fn sessions() -> Vec<(PathBuf, serde_json::Map<String, Value>)> {
    let mut out = Vec::new();
    let mut projects: Vec<_> = std::fs::read_dir(fixtures().join("projects"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    projects.sort();
    for p in projects {
        let mut files: Vec<_> = std::fs::read_dir(&p)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|f| f.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        files.sort();
        for f in files {
            let sid = f.file_stem().unwrap().to_string_lossy().into_owned();
            let ctx = fixtures()
                .join("contexts")
                .join(format!("{sid}.contexts.json"));
            let v: Value = serde_json::from_slice(&std::fs::read(ctx).unwrap()).unwrap();
            out.push((f, v.as_object().unwrap().clone()));
        }
    }
    out
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 600 {
        format!(
            "{}…",
            &s[..s.char_indices().nth(600).map_or(s.len(), |c| c.0)]
        )
    } else {
        s
    }
}

#[test]
fn every_expected_context_is_equal() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for (file, expected) in sessions() {
        let s = Session::open(&file).unwrap();
        let st = s.claude().expect("a Claude Code file");
        for (uuid, exp) in &expected {
            let i = s.find(uuid).unwrap_or_else(|| panic!("{uuid} not indexed"));
            let got = super::context(&s, st, i).unwrap();
            let want = exp["messages"].as_array().unwrap();
            checked += 1;
            if got != *want {
                let k = got
                    .iter()
                    .zip(want)
                    .position(|(a, b)| a != b)
                    .unwrap_or(got.len().min(want.len()));
                failures.push(format!(
                    "{} {uuid} (via {}): {} messages, want {}; first difference at {k}:\n  got  {}\n  want {}",
                    file.file_name().unwrap().to_string_lossy(),
                    exp["via"],
                    got.len(),
                    want.len(),
                    got.get(k).map(short).unwrap_or_default(),
                    want.get(k).map(short).unwrap_or_default(),
                ));
            }
        }
    }
    assert!(checked >= 220, "only {checked} contexts checked");
    assert!(
        failures.is_empty(),
        "{} of {checked} contexts differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn the_leaf_is_the_chain_end() {
    for (file, expected) in sessions() {
        let s = Session::open(&file).unwrap();
        let want: Vec<&String> = expected
            .iter()
            .filter(|(_, v)| v.get("leaf") == Some(&Value::Bool(true)))
            .map(|(k, _)| k)
            .collect();
        assert_eq!(want.len(), 1, "{file:?}");
        let got = s.leaf().map(|l| s.id_string(l));
        assert_eq!(got.as_deref(), Some(want[0].as_str()), "{file:?}");
    }
}
