//! Conformance with Pi: for every golden made by Pi 1.6.0's own code (see
//! tests/fixtures/README.md), the context sessionfs builds for every entry of the
//! session must equal what Pi's `buildSessionContext` + `convertToLlm` returned, byte
//! for byte once written as `JSON.stringify` writes it, and so must the path from the
//! root.
//!
//! Targets are matched by line number, which also covers v1 files (Pi gives their
//! entries random ids; sessionfs derives its own).

mod goldens;

use goldens::Goldens;
use serde_json::Value;
use sessionfs::model::Session;
use sessionfs::model::render::js_stringify;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn check_golden(name: &str) -> usize {
    let g = Goldens::load(name);
    let s = Session::open(goldens::session_file(name)).unwrap();
    let by_line = |line: u32| -> u32 {
        s.entries()
            .iter()
            .position(|e| e.line == line && e.is_node())
            .unwrap_or_else(|| panic!("{name}: no entry on line {line}")) as u32
    };
    let mut n = 0;
    let mut lines = std::collections::HashSet::new();
    for (k, t) in g.targets.iter().enumerate() {
        let idx = by_line(t.line);
        let what = format!(
            "{name}: golden line {} (entry on line {}, target {:?})",
            k + 1,
            t.line,
            t.target
        );
        if t.target.is_none() {
            assert_eq!(
                Some(idx),
                s.leaf(),
                "{what}: the default target is the leaf"
            );
        } else {
            lines.insert(t.line);
            if !s.is_v1() {
                assert_eq!(t.target.as_deref(), Some(&*s.id_string(idx)), "{what}: id");
            }
        }
        let ctx = s.llm_context(idx).unwrap();
        assert_eq!(
            ctx.thinking_level, t.thinking_level,
            "{what}: thinkingLevel"
        );
        assert_eq!(
            ctx.model.clone().unwrap_or(Value::Null),
            t.model,
            "{what}: model"
        );
        let want = g.message_texts(t);
        assert_eq!(ctx.messages.len(), want.len(), "{what}: message count");
        for (i, (a, b)) in ctx.messages.iter().zip(&want).enumerate() {
            assert_eq!(js_stringify(a), *b, "{what}: message {i}");
        }
        // The path, as line numbers (ids differ for v1): its length and the entry
        // before the target; over all targets that is every path.
        let path = s.path_to(idx);
        assert_eq!(path.len(), t.path_length, "{what}: path length");
        let parent_line = (path.len() > 1).then(|| s.entry(path[path.len() - 2]).line);
        assert_eq!(parent_line, t.parent_line, "{what}: parent on the path");
        n += 1;
    }
    // Every entry has its golden.
    for i in 0..s.entries().len() as u32 {
        if s.entry(i).is_node() {
            assert!(
                lines.contains(&s.entry(i).line),
                "{name}: entry {} on line {} has no golden",
                s.id_string(i),
                s.entry(i).line
            );
        }
    }
    n
}

/// One test per golden, named after it.
#[test]
fn every_golden_matches() {
    let names = goldens::names();
    assert!(names.len() >= 20, "only {} goldens", names.len());
    let mut failed = Vec::new();
    for name in &names {
        let r = std::panic::catch_unwind(|| check_golden(name));
        match r {
            Ok(n) => eprintln!("{name}: {n} contexts equal Pi 1.6.0's"),
            Err(e) => {
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                failed.push(format!("{name}: {msg}"));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

/// Every session fixture (and the demo) has goldens.
#[test]
fn every_fixture_has_goldens() {
    let names = goldens::names();
    for dir in ["tests/fixtures/sessions", "examples"] {
        for e in std::fs::read_dir(root().join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "jsonl") {
                let n = p.file_stem().unwrap().to_str().unwrap().to_string();
                assert!(names.contains(&n), "{}: no golden", p.display());
            }
        }
    }
}

/// `llm_context` reads only the entries that decide the context (those the latest
/// compaction keeps, without system messages and older compactions, and only the kinds
/// that give messages or edits). For every entry of every fixture (the goldens'
/// sessions, Pi 1.6's real sessions and tour, the damaged files, the example) it must
/// agree with the plain way, which parses the whole path; and the fixtures must
/// exercise the shortcut plenty: paths with compactions, with system messages and with
/// context edits.
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
    let (mut compared, mut with_compaction, mut with_system, mut with_edit) = (0, 0, 0, 0);
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
            let on_path = |kind: &str| s.path_to(i).iter().any(|&p| s.kind_name(p) == kind);
            if s.header().version >= 3 && on_path("compaction") {
                with_compaction += 1;
            }
            with_system += usize::from(on_path("system"));
            with_edit += usize::from(on_path("context_edit"));
        }
    }
    eprintln!(
        "{compared} entries compared; on the path: {with_compaction} a compaction, \
         {with_system} a system message, {with_edit} a context edit"
    );
    assert!(compared > 1_000, "only {compared} entries compared");
    assert!(
        with_compaction > 250,
        "only {with_compaction} paths with a compaction"
    );
    assert!(
        with_system > 150,
        "only {with_system} paths with a system message"
    );
    assert!(with_edit > 80, "only {with_edit} paths with a context edit");
}

/// The cases the shortcut must hand over to the plain way, or get right itself, in
/// one hand-made session: settings before the compaction, an over-nested setting
/// after a good one, two compactions, a kept range with an older compaction in it
/// (which Pi 1.6 lets contribute nothing, edited or not), and a `firstKeptEntryId`
/// that is not on the path; and Pi 1.6's kinds: system messages in the kept range
/// (dropped) and after the compaction (kept), edits inside the kept range, before it
/// (no effect) and on the latest compaction, and a retain-none compaction. (Duplicate
/// ids are in the damaged fixtures above.)
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
    let sys = |id: &str, parent: &str, n: u32, text: &str| {
        format!(
            r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"{}","message":{{"role":"system","content":"{text}","timestamp":{n}}}}}"#,
            ts(n)
        )
    };
    let edit = |id: &str, parent: &str, n: u32, target: &str, replacement: &str| {
        format!(
            r#"{{"type":"context_edit","id":"{id}","parentId":"{parent}","timestamp":"{}","targetId":"{target}","replacement":{replacement}}}"#,
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
        // Pi 1.6: a system prompt and a patch, edits inside and before the kept range,
        // an edit of the older compaction and one of the latest.
        sys("s1", "a9", 13, "prompt"),
        user("d1", "\"s1\"", 14, "to be removed"),
        edit("e1", "d1", 15, "d1", "null"),
        user("d2", "\"e1\"", 16, "to be replaced"),
        edit("e2", "d2", 17, "d2", r#"{"content":"replaced"}"#),
        sys("s2", "e2", 18, "patch"),
        user("d3", "\"s2\"", 19, "kept"),
        edit("e3", "d3", 20, "c1", r#"{"content":"no effect"}"#),
        comp("c4", "e3", 21, "d2"),
        sys("s3", "c4", 22, "patch after"),
        user("d4", "\"s3\"", 23, "after four"),
        edit("e4", "d4", 24, "c4", "null"),
        // Retain-none on a branch of its own.
        comp("c5", "d3", 25, "c5"),
        user("d5", "\"c5\"", 26, "after five"),
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
    assert_eq!(compared, 26);
    // After the second compaction: its summary, the kept range from a4 (the first
    // compaction inside it contributes nothing in Pi 1.6), the thinking level from
    // before both.
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
    for want in ["s8", "kept from here", "after one", "after two"] {
        assert!(text.contains(want), "{want} missing from {text}");
    }
    assert!(!text.contains("first") && !text.contains("s5"), "{text}");
    // On the branch, the kept id is not on the path: the summary and what follows.
    let (c, text) = context_of("b2");
    assert_eq!(c.thinking_level, "off");
    assert_eq!(c.model.unwrap()["modelId"], "m-late");
    assert!(
        text.contains("s10") && text.contains("after three"),
        "{text}"
    );
    assert!(!text.contains("first") && !text.contains("a2"), "{text}");
    // After the fourth compaction, whose kept range holds the edits: the edit before
    // the range does nothing (d1 is outside it anyway), e2 applies, the patch inside
    // the range is dropped, the one after it kept, and e4 removes the compaction.
    let roles = |c: &sessionfs::model::session::LlmContext| -> Vec<String> {
        c.messages
            .iter()
            .map(|m| {
                let t = match &m["content"] {
                    Value::String(s) => s.clone(),
                    Value::Array(b) => b[0]["text"].as_str().unwrap_or("").to_string(),
                    _ => String::new(),
                };
                format!(
                    "{}:{}",
                    m["role"].as_str().unwrap(),
                    t.lines().last().unwrap_or("")
                )
            })
            .collect()
    };
    let (c, _) = context_of("s3");
    assert_eq!(
        roles(&c),
        [
            "user:</summary>",
            "user:replaced",
            "user:kept",
            "system:patch after"
        ]
    );
    let (c, _) = context_of("e4");
    assert_eq!(
        roles(&c),
        [
            "user:replaced",
            "user:kept",
            "system:patch after",
            "user:after four"
        ]
    );
    // Before c4: the system prompt and the patch are there, d1 removed, d2 replaced;
    // e3 on the older compaction does nothing.
    let (c, _) = context_of("e3");
    assert_eq!(
        roles(&c),
        [
            "user:</summary>",
            "user:kept from here",
            "user:after one",
            "user:after two",
            "system:prompt",
            "user:replaced",
            "system:patch",
            "user:kept"
        ]
    );
    // Retain-none: the summary and what follows.
    let (c, _) = context_of("d5");
    assert_eq!(roles(&c), ["user:</summary>", "user:after five"]);
}

/// The tree is drawn from the lines' bytes, without building the entries; it must be
/// the tree drawn from the parsed entries, for every fixture.
#[test]
fn the_tree_drawn_from_bytes_equals_the_tree_drawn_from_values() {
    let mut n = 0;
    for dir in [
        "tests/fixtures/sessions",
        "tests/fixtures/damaged",
        "examples",
    ] {
        for e in std::fs::read_dir(root().join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_none_or(|x| x != "jsonl") {
                continue;
            }
            let Ok(s) = Session::open(&p) else { continue };
            let fast = sessionfs::model::tree::render_tree(&s).unwrap();
            let slow = sessionfs::model::tree::render_tree_parsing_every_entry(&s).unwrap();
            // A large file's previews are found by several threads, each in a run of
            // the file: any number of runs gives the same tree.
            for threads in [2, 3, 7] {
                let parts = sessionfs::model::tree::render_tree_on_threads(&s, threads).unwrap();
                assert!(parts == fast, "{}: {threads} threads", p.display());
            }
            assert!(
                fast == slow,
                "{}: trees differ:\n{}\n---\n{}",
                p.display(),
                String::from_utf8_lossy(&fast),
                String::from_utf8_lossy(&slow)
            );
            n += 1;
        }
    }
    assert!(n > 50, "{n} files");
}
