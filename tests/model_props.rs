//! Property tests for the session index: random mixes of valid, malformed, blank, CRLF
//! and torn lines, random parents (cycles, self-parents, orphans, duplicates included).
//! No valid line may be lost, nothing may panic or hang, every node must be reachable
//! from a root, and indexing a file in pieces must equal indexing it whole.

use proptest::prelude::*;
use sessionfs::model::Session;
use std::io::Write;

const HEADER: &str = r#"{"type":"session","version":3,"id":"prop","timestamp":"2026-01-05T09:00:00.000Z","cwd":"/p"}"#;

#[derive(Debug, Clone)]
enum Line {
    Valid {
        id: u8,
        parent: Option<u8>,
        sec: u8,
        crlf: bool,
    },
    Malformed(String),
    Blank,
}

fn line() -> impl Strategy<Value = Line> {
    prop_oneof![
        6 => (0u8..24, proptest::option::of(0u8..26), 0u8..60, proptest::bool::weighted(0.1))
            .prop_map(|(id, parent, sec, crlf)| Line::Valid { id, parent, sec, crlf }),
        1 => "[^\n]{0,40}".prop_map(Line::Malformed),
        1 => Just(Line::Blank),
    ]
}

fn id(n: u8) -> String {
    format!("{:08x}", 0xa000_0000u32 + n as u32)
}

fn render(l: &Line) -> String {
    match l {
        Line::Valid {
            id: i,
            parent,
            sec,
            crlf,
        } => {
            let p = parent
                .map(|p| format!("\"{}\"", id(p)))
                .unwrap_or_else(|| "null".into());
            format!(
                "{{\"type\":\"message\",\"id\":\"{}\",\"parentId\":{p},\"timestamp\":\"2026-01-05T09:00:{sec:02}.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"x\",\"timestamp\":1}}}}{}",
                id(*i),
                if *crlf { "\r" } else { "" }
            )
        }
        Line::Malformed(s) => s.clone(),
        Line::Blank => "   ".into(),
    }
}

fn shape(s: &Session) -> Vec<(String, Option<String>, Vec<String>)> {
    (0..s.entries().len() as u32)
        .filter(|&i| s.entry(i).is_node())
        .map(|i| {
            (
                s.id_string(i),
                s.parent(i).map(|p| s.id_string(p)),
                s.children(i).map(|c| s.id_string(c)).collect(),
            )
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256),
        ..ProptestConfig::default()
    })]

    #[test]
    fn no_valid_line_is_lost(lines in proptest::collection::vec(line(), 0..60), torn in 0usize..80, cut in 0.0f64..1.0) {
        let mut text = format!("{HEADER}\n");
        let mut valid_lines = Vec::new();
        for (n, l) in lines.iter().enumerate() {
            let r = render(l);
            // A malformed line that happens to be valid JSON is not what we meant.
            if let Line::Malformed(s) = l && serde_json::from_str::<serde_json::Value>(s).is_ok() {
                text.push_str("garbage\n");
                continue;
            }
            if let Line::Valid { id: i, .. } = l {
                valid_lines.push((n as u32 + 2, id(*i)));
            }
            text.push_str(&r);
            text.push('\n');
        }
        // A torn tail: a prefix of a valid line, without its newline.
        let tail = render(&Line::Valid { id: 99, parent: None, sec: 0, crlf: false });
        let torn = torn.min(tail.len() - 1);
        text.push_str(&tail[..torn]);

        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        std::fs::write(&p, &text).unwrap();
        let s = Session::open(&p).unwrap();

        // Every valid line is an entry, in order; nothing else is.
        let got: Vec<(u32, String)> = s.entries().iter().enumerate().map(|(i, e)| (e.line, s.id_string(i as u32))).collect();
        prop_assert_eq!(&got, &valid_lines);
        prop_assert_eq!(s.tail_bytes(), torn as u64);
        // The last occurrence of an id wins.
        for (line, i) in &valid_lines {
            let last = valid_lines.iter().rev().find(|(_, j)| j == i).unwrap().0;
            let n = s.find(i).unwrap();
            prop_assert_eq!(s.entry(n).line, last, "line {}", line);
        }
        // Every node is reachable from a root exactly once; every path ends.
        let mut seen = 0usize;
        s.walk_preorder(|_, _| seen += 1);
        let nodes = s.entries().iter().filter(|e| e.is_node()).count();
        prop_assert_eq!(seen, nodes);
        for i in 0..s.entries().len() as u32 {
            if s.entry(i).is_node() {
                prop_assert!(s.path_to(i).len() <= nodes);
                prop_assert_eq!(s.depth(i), s.path_to(i).len());
            }
        }

        // Indexing in two pieces gives the same tree.
        let cut = ((text.len() as f64) * cut) as usize;
        let cut = (0..=cut).rev().find(|&c| text.is_char_boundary(c) && c > HEADER.len()).unwrap_or(HEADER.len() + 1);
        let p2 = dir.path().join("t.jsonl");
        std::fs::write(&p2, &text[..cut]).unwrap();
        let mut s2 = Session::open(&p2).unwrap();
        std::fs::OpenOptions::new().append(true).open(&p2).unwrap().write_all(&text.as_bytes()[cut..]).unwrap();
        let c = s2.refresh().unwrap();
        prop_assert!(!c.reloaded);
        prop_assert_eq!(shape(&s2), shape(&s));
        prop_assert_eq!(s2.roots().iter().map(|&r| s2.id_string(r)).collect::<Vec<_>>(), s.roots().iter().map(|&r| s.id_string(r)).collect::<Vec<_>>());
        prop_assert_eq!(s2.leaf_count(), s.leaf_count());
        for i in 0..s2.entries().len() as u32 {
            if s2.entry(i).is_node() {
                prop_assert_eq!(s2.depth(i), s2.path_to(i).len());
            }
        }
        prop_assert_eq!(s2.branch_point_count(), s.branch_point_count());
    }
}
