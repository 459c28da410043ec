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

/// Where a path has a compaction, `llm_context` reads only the entries that decide the
/// context. For every entry of every fixture (the goldens' sessions, the damaged
/// files, the example) it must agree with the plain way, which parses the whole path;
/// and the fixtures must exercise the shortcut (paths with compactions) plenty.
#[test]
fn the_compaction_shortcut_agrees_with_reading_the_whole_path() {
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in [
        "tests/fixtures/sessions",
        "tests/fixtures/damaged",
        "examples",
    ] {
        for e in std::fs::read_dir(root().join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "jsonl") {
                files.push(p);
            }
        }
    }
    files.sort();
    let (mut compared, mut with_compaction) = (0, 0);
    for f in &files {
        let Ok(s) = Session::open(f) else { continue };
        // Every entry of the small files; every 7th and every leaf of the big ones
        // (building each context twice is quadratic in the depth in a debug build).
        let step = if s.entries().len() < 500 { 1 } else { 7 };
        let leaves: std::collections::HashSet<u32> = s.leaves().into_iter().collect();
        for i in 0..s.entries().len() as u32 {
            if !s.entry(i).is_node() || (i % step != 0 && !leaves.contains(&i)) {
                continue;
            }
            let fast = s.llm_context(i).unwrap();
            let full = s.llm_context_reading_whole_path(i).unwrap();
            assert_eq!(fast, full, "{}: entry {}", f.display(), s.id_string(i));
            compared += 1;
            if s.header().version >= 3
                && s.path_to(i).iter().any(|&p| s.kind_name(p) == "compaction")
            {
                with_compaction += 1;
            }
        }
    }
    eprintln!("{compared} entries compared, {with_compaction} with a compaction on the path");
    assert!(compared > 1_000, "only {compared} entries compared");
    assert!(
        with_compaction > 250,
        "only {with_compaction} paths with a compaction"
    );
}

/// The cases the shortcut must hand over to the plain way, or get right itself, in
/// one hand-made session: settings before the compaction, an over-nested setting
/// after a good one, two compactions, a kept range with an older compaction in it,
/// and a `firstKeptEntryId` that is not on the path. (Duplicate ids are in the damaged
/// fixtures above.)
#[test]
fn the_compaction_shortcut_on_hand_made_edge_cases() {
    let d = tempfile::tempdir().unwrap();
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    let ts = |n: u32| format!("2026-01-01T00:00:{n:02}.000Z");
    let user = |id: &str, parent: &str, n: u32, text: &str| {
        format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{}","message":{{"role":"user","content":"{text}","timestamp":{n}}}}}"#,
            ts(n)
        )
    };
    let asst = |id: &str, parent: &str, n: u32, model: &str| {
        format!(
            r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"{}","message":{{"role":"assistant","content":[{{"type":"text","text":"a{n}"}}],"provider":"p","model":"{model}","usage":{{}},"stopReason":"stop","timestamp":{n}}}}}"#,
            ts(n)
        )
    };
    let tlc = |id: &str, parent: &str, n: u32, level: &str| {
        format!(
            r#"{{"type":"thinking_level_change","id":"{id}","parentId":"{parent}","timestamp":"{}","thinkingLevel":{level}}}"#,
            ts(n)
        )
    };
    let comp = |id: &str, parent: &str, n: u32, kept: &str| {
        format!(
            r#"{{"type":"compaction","id":"{id}","parentId":"{parent}","timestamp":"{}","summary":"s{n}","firstKeptEntryId":"{kept}","tokensBefore":1}}"#,
            ts(n)
        )
    };
    let lines = [
        r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#.to_string(),
        user("a1", "null", 1, "first"),
        asst("a2", "a1", 2, "m-early"),
        tlc("a3", "a2", 3, "\"high\""),
        user("a4", "\"a3\"", 4, "kept from here"),
        comp("c1", "a4", 5, "a4"),
        user("a6", "\"c1\"", 6, "after one"),
        // An over-nested thinking level after a good one: Pi skips nothing, we cannot
        // parse it, and the plain way drops it; so must the shortcut.
        tlc("a7", "a6", 7, &deep),
        comp("c2", "a7", 8, "a4"),
        user("a9", "\"c2\"", 9, "after two"),
        // A branch: compaction keeping an id that is not on its path.
        comp("c3", "a2", 10, "a9"),
        user("b1", "\"c3\"", 11, "after three"),
        asst("b2", "b1", 12, "m-late"),
    ];
    let p = d.path().join("edge.jsonl");
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    let s = Session::open(&p).unwrap();
    let mut compared = 0;
    for i in 0..s.entries().len() as u32 {
        if s.entry(i).is_node() {
            assert_eq!(
                s.llm_context(i).unwrap(),
                s.llm_context_reading_whole_path(i).unwrap(),
                "entry {}",
                s.id_string(i)
            );
            compared += 1;
        }
    }
    assert_eq!(compared, 12);
    // After the second compaction: its summary, the kept range from a4 (with the first
    // compaction's summary in it), the thinking level from before both.
    let context_of = |id: &str| {
        let i = (0..s.entries().len() as u32)
            .find(|&i| s.id_string(i) == id)
            .unwrap();
        let c = s.llm_context(i).unwrap();
        let text = serde_json::to_string(&c.messages).unwrap();
        (c, text)
    };
    let (c, text) = context_of("a9");
    assert_eq!(c.thinking_level, "high");
    assert_eq!(c.model.unwrap()["modelId"], "m-early");
    for want in ["s8", "kept from here", "s5", "after one", "after two"] {
        assert!(text.contains(want), "{want} missing from {text}");
    }
    assert!(!text.contains("first"), "{text}");
    // On the branch, the kept id is not on the path: the summary and what follows.
    let (c, text) = context_of("b2");
    assert_eq!(c.thinking_level, "off");
    assert_eq!(c.model.unwrap()["modelId"], "m-late");
    assert!(
        text.contains("s10") && text.contains("after three"),
        "{text}"
    );
    assert!(!text.contains("first") && !text.contains("a2"), "{text}");
}
