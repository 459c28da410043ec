//! Fuzzing the line reader, the index, the renderers and the context builder, as a
//! proptest over mutated Pi sessions (the corpus is the fixtures' own lines). No input
//! may panic, hang or lose a valid line; every node must stay reachable; every entry
//! must render. CI runs a short pass; `scripts/fuzz` runs a long one
//! (`FUZZ_CASES=200000 cargo test --release --test fuzz_lines`).

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use sessionfs::model::{Session, render, tree};
use std::path::Path;

fn corpus() -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut lines = Vec::new();
    for sub in ["sessions", "damaged"] {
        for e in std::fs::read_dir(dir.join(sub)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "jsonl") {
                let data = std::fs::read(&p).unwrap();
                // Keep lines short enough for fast cases; long ones are cut (a mutation).
                lines.extend(
                    data.split(|&b| b == b'\n')
                        .take(60)
                        .map(|l| l[..l.len().min(2000)].to_vec()),
                );
            }
        }
    }
    lines
}

#[derive(Debug, Clone)]
enum Mutation {
    Keep,
    Truncate(usize),
    Flip(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Splice(usize, usize),
    SwapIds(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let junk = prop_oneof![
        Just(b"\n".to_vec()),
        Just(b"\"".to_vec()),
        Just(b"\\".to_vec()),
        Just(b"{".to_vec()),
        Just(b"}".to_vec()),
        Just(b"\r".to_vec()),
        Just(vec![0xff]),
        Just(vec![0xef, 0xbb, 0xbf]),
        Just(b"\"parentId\":\"".to_vec()),
        Just(b"\"id\":\"aaaaaaa1\",".to_vec()),
        Just(b"\"type\":\"session\",".to_vec()),
        Just(b"\\u0000".to_vec()),
        Just(b"\\ud800".to_vec()),
        proptest::collection::vec(any::<u8>(), 1..8),
    ];
    prop_oneof![
        4 => Just(Mutation::Keep),
        1 => any::<usize>().prop_map(Mutation::Truncate),
        2 => (any::<usize>(), any::<u8>()).prop_map(|(a, b)| Mutation::Flip(a, b)),
        2 => (any::<usize>(), junk).prop_map(|(a, j)| Mutation::Insert(a, j)),
        1 => (any::<usize>(), 1usize..20).prop_map(|(a, n)| Mutation::Delete(a, n)),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::Splice(a, b)),
        1 => any::<usize>().prop_map(Mutation::SwapIds),
    ]
}

fn apply(line: &[u8], m: &Mutation, other: &[u8]) -> Vec<u8> {
    let mut l = line.to_vec();
    let at = |x: usize, len: usize| if len == 0 { 0 } else { x % (len + 1) };
    match m {
        Mutation::Keep => {}
        Mutation::Truncate(n) => l.truncate(at(*n, l.len())),
        Mutation::Flip(i, b) => {
            if !l.is_empty() {
                let i = i % l.len();
                l[i] ^= b;
            }
        }
        Mutation::Insert(i, j) => {
            let i = at(*i, l.len());
            l.splice(i..i, j.iter().copied());
        }
        Mutation::Delete(i, n) => {
            let i = at(*i, l.len());
            let end = (i + n).min(l.len());
            l.drain(i..end);
        }
        Mutation::Splice(i, j) => {
            let i = at(*i, l.len());
            let j = at(*j, other.len());
            l.truncate(i);
            l.extend_from_slice(&other[j..]);
        }
        Mutation::SwapIds(i) => {
            // Point this line's parentId at another line's id (cycles, self-parents).
            let s = String::from_utf8_lossy(&l).into_owned();
            let o = String::from_utf8_lossy(other).into_owned();
            if let (Some(p), Some(id)) = (s.find("\"parentId\":\""), o.find("\"id\":\"")) {
                let id_val: String = o[id + 6..].chars().take_while(|&c| c != '"').collect();
                let end = s[p + 12..].find('"').map(|e| p + 12 + e).unwrap_or(s.len());
                let _ = i;
                l = format!("{}{}{}", &s[..p + 12], id_val, &s[end..]).into_bytes();
            }
        }
    }
    l
}

#[test]
fn mutated_sessions_never_break_the_model() {
    let corpus = corpus();
    let cases: u32 = std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let n = corpus.len();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.jsonl");
    let strategy = (
        0..n,
        proptest::collection::vec((0..n, mutation(), 0..n), 0..40),
        any::<bool>(),
    );
    runner
        .run(&strategy, |(header, lines, newline_at_end)| {
            // A valid header first most of the time (sessions), sometimes a corpus line.
            let mut text: Vec<u8> = if header % 4 == 0 {
                corpus[header].clone()
            } else {
                br#"{"type":"session","version":3,"id":"fuzz","timestamp":"2026-01-05T09:00:00.000Z","cwd":"/p"}"#.to_vec()
            };
            text.push(b'\n');
            for (i, m, j) in &lines {
                text.extend(apply(&corpus[*i], m, &corpus[*j]));
                text.push(b'\n');
            }
            if !newline_at_end {
                text.pop();
            }
            std::fs::write(&path, &text).unwrap();
            let s = match Session::open(&path) {
                Ok(s) => s,
                Err(_) => return Ok(()), // not a session: a clear error is the right answer
            };
            // Every complete line that parses as a JSON object after the header is an entry.
            let complete = if newline_at_end { &text[..] } else { &text[..text.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1)] };
            let objects = complete
                .split(|&b| b == b'\n')
                .skip(s.header().line as usize)
                .filter(|l| {
                    matches!(sessionfs::model::migrate::parse_line(l), Ok(serde_json::Value::Object(o))
                        if o.get("type").and_then(|t| t.as_str()) != Some("session"))
                })
                .count();
            // serde_json's depth limit may reject what the head reader accepts; never the reverse.
            prop_assert!(s.entries().len() >= objects, "lost a valid line: {} < {}", s.entries().len(), objects);
            let mut seen = 0usize;
            s.walk_preorder(|_, _| seen += 1);
            prop_assert_eq!(seen, s.entries().iter().filter(|e| e.is_node()).count());
            for i in 0..s.entries().len() as u32 {
                if let Ok(v) = s.entry_value(i) {
                    let text = render::render_entry(&v);
                    prop_assert!(text.ends_with('\n'));
                    let _ = render::images(&v);
                    let p = render::preview(&v);
                    prop_assert!(!p.contains('\n'));
                    // The tree's previews come from the bytes, without building the
                    // entry: the same text (v3 lines; older ones are migrated first).
                    if s.header().version >= 3 {
                        let line = s.entry_bytes(i).unwrap();
                        prop_assert_eq!(render::preview_line(&line), Some(p));
                    }
                }
                if s.entry(i).is_node() {
                    let ctx = s.llm_context(i).unwrap();
                    let _ = render::render_context(&ctx.messages);
                    let _ = render::context_json(&ctx.messages);
                }
            }
            let fast = tree::render_tree(&s).unwrap();
            prop_assert!(fast == tree::render_tree_parsing_every_entry(&s).unwrap());
            Ok(())
        })
        .unwrap();
}
