//! Conformance with Pi: for every golden file made by Pi's own code (see
//! tests/fixtures/README.md), the context sessionfs builds for each target entry must
//! equal, value for value, what Pi 0.81.1's `buildSessionContext` + `convertToLlm`
//! returned, and so must the path from the root.
//!
//! Targets are matched by line number, which also covers v1 files (Pi gives their
//! entries random ids; sessionfs derives its own).

use serde_json::Value;
use sessionfs::model::Session;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn session_file(name: &str) -> PathBuf {
    let p = root()
        .join("tests/fixtures/sessions")
        .join(format!("{name}.jsonl"));
    if p.exists() {
        p
    } else {
        root().join("examples").join(format!("{name}.jsonl"))
    }
}

fn check_golden(name: &str) -> usize {
    let golden = root()
        .join("tests/fixtures/golden")
        .join(format!("{name}.contexts.jsonl"));
    let text =
        std::fs::read_to_string(&golden).unwrap_or_else(|e| panic!("{}: {e}", golden.display()));
    let s = Session::open(session_file(name)).unwrap();
    let by_line = |line: u64| -> u32 {
        s.entries()
            .iter()
            .position(|e| e.line as u64 == line && e.is_node())
            .unwrap_or_else(|| panic!("{name}: no entry on line {line}")) as u32
    };
    let mut n = 0;
    for (k, l) in text.lines().enumerate() {
        let g: Value = serde_json::from_str(l).unwrap();
        let line = g["line"].as_u64().unwrap();
        let idx = by_line(line);
        if g["target"].is_null() {
            assert_eq!(
                Some(idx),
                s.leaf(),
                "{name}: the default target is the leaf"
            );
        }
        let ctx = s.llm_context(idx).unwrap();
        let what = format!(
            "{name}: golden line {} (entry on line {line}, target {})",
            k + 1,
            g["target"]
        );
        assert_eq!(
            ctx.thinking_level,
            g["thinkingLevel"].as_str().unwrap(),
            "{what}: thinkingLevel"
        );
        assert_eq!(
            ctx.model.clone().unwrap_or(Value::Null),
            g["model"],
            "{what}: model"
        );
        let want = g["messages"].as_array().unwrap();
        assert_eq!(ctx.messages.len(), want.len(), "{what}: message count");
        for (i, (a, b)) in ctx.messages.iter().zip(want).enumerate() {
            assert_eq!(a, b, "{what}: message {i}");
        }
        // The path, as line numbers (ids differ for v1).
        let path_lines: Vec<u64> = s
            .path_to(idx)
            .iter()
            .map(|&p| s.entry(p).line as u64)
            .collect();
        if let Some(pl) = g.get("pathLines").and_then(Value::as_array) {
            let want: Vec<u64> = pl.iter().map(|v| v.as_u64().unwrap()).collect();
            assert_eq!(path_lines, want, "{what}: path");
        } else {
            let want: Vec<String> = g["pathIds"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect();
            let got: Vec<String> = s.path_to(idx).iter().map(|&p| s.id_string(p)).collect();
            assert_eq!(got, want, "{what}: path");
        }
        n += 1;
    }
    n
}

macro_rules! golden {
    ($($test:ident => $name:literal),* $(,)?) => {$(
        #[test]
        fn $test() {
            let n = check_golden($name);
            assert!(n > 0, "no targets in {}", $name);
        }
    )*};
}

golden! {
    small => "small",
    medium => "medium",
    bushy => "bushy",
    linear => "linear",
    mixed => "mixed",
    legacy_v1 => "legacy-v1",
    legacy_v1_b => "legacy-v1-b",
    legacy_v2 => "legacy-v2",
    legacy_v2_b => "legacy-v2-b",
    demo => "demo",
}

/// Every leaf of every session has a golden target.
#[test]
fn every_leaf_is_covered() {
    for name in [
        "small",
        "medium",
        "bushy",
        "linear",
        "mixed",
        "legacy-v1",
        "legacy-v1-b",
        "legacy-v2",
        "legacy-v2-b",
        "demo",
    ] {
        let golden = root()
            .join("tests/fixtures/golden")
            .join(format!("{name}.contexts.jsonl"));
        let text = std::fs::read_to_string(&golden).unwrap();
        let lines: std::collections::HashSet<u64> = text
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["line"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        let s = Session::open(session_file(name)).unwrap();
        for l in s.leaves() {
            assert!(
                lines.contains(&(s.entry(l).line as u64)),
                "{name}: leaf {} has no golden",
                s.id_string(l)
            );
        }
    }
}
