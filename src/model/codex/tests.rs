//! Tests against the real CLI's files in tests/fixtures/codex/samples/ (written by Codex
//! 0.171.0, contexts captured by codex-oracle) and small files made here.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::files::{self, Root};
use super::page::LineKind;
use super::state::State;
use super::store::{Codex, Page, Problem};
use super::{context, render, session};

const QA: &str = "01a2331d-6282-7e72-8cca-35fb82ba4618";
const QA_FORK: &str = "01a2331d-68ff-76e1-bf99-c1ba471b9285";
const TOOLS: &str = "01a2331d-7684-7ac3-8b54-e807d81da7ce";
const IMG: &str = "01a2331d-7d10-7d21-8640-338a18f14f80";
const CMP: &str = "01a2331d-842d-7a91-acb4-94e87c72022a";
const SUB: &str = "01a2331d-8c4f-7360-85d8-b0cbe0ab0302";
const SUB_CHILD: &str = "01a2331d-8c96-72e0-ac04-cd237fd70dc8";
const TUI: &str = "01a2331d-9d4a-7781-acec-f35cf40a4d8b";
const TUI_P2: &str = "01a2331d-e874-78f0-936a-c859781591a5";

pub(super) fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex/samples")
}

pub(super) fn home() -> PathBuf {
    samples().join("codex-home")
}

fn day() -> PathBuf {
    home().join("sessions/2026/12/01")
}

/// The samples with the state Codex had: a state_5.sqlite made from the real schema and
/// the rows in state_5.threads.json.
fn with_db() -> (tempfile::TempDir, Codex) {
    let dir = tempfile::tempdir().unwrap();
    make_db(&dir.path().join("state_5.sqlite"));
    std::fs::copy(
        home().join("session_index.jsonl"),
        dir.path().join("session_index.jsonl"),
    )
    .unwrap();
    let state = State::load(dir.path());
    assert_eq!(state.db_error, None);
    let codex = Codex::load_with_state(&Root::of(&home()).unwrap(), state);
    (dir, codex)
}

pub(super) fn make_db(path: &Path) {
    let schema = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex/state_5.schema.sql"),
    )
    .unwrap();
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(&schema).unwrap();
    let rows: Value = serde_json::from_str(
        &std::fs::read_to_string(home().join("state_5.threads.json")).unwrap(),
    )
    .unwrap();
    for t in rows["threads"].as_array().unwrap() {
        let obj = t.as_object().unwrap();
        let cols: Vec<&String> = obj.keys().collect();
        let sql = format!(
            "INSERT INTO threads ({}) VALUES ({})",
            cols.iter()
                .map(|c| c.as_str())
                .collect::<Vec<_>>()
                .join(","),
            (1..=cols.len())
                .map(|i| format!("?{i}"))
                .collect::<Vec<_>>()
                .join(",")
        );
        let vals: Vec<rusqlite::types::Value> = obj
            .values()
            .map(|v| match v {
                Value::Null => rusqlite::types::Value::Null,
                Value::Number(n) => rusqlite::types::Value::Integer(n.as_i64().unwrap()),
                Value::String(s) => rusqlite::types::Value::Text(s.clone()),
                v => rusqlite::types::Value::Text(v.to_string()),
            })
            .collect();
        conn.execute(&sql, rusqlite::params_from_iter(vals))
            .unwrap();
    }
    for e in rows["thread_spawn_edges"].as_array().unwrap() {
        conn.execute(
            "INSERT INTO thread_spawn_edges VALUES (?1, ?2, ?3)",
            [
                e["parent_thread_id"].as_str().unwrap(),
                e["child_thread_id"].as_str().unwrap(),
                e["status"].as_str().unwrap(),
            ],
        )
        .unwrap();
    }
}

fn no_db() -> Codex {
    Codex::load_with_state(&Root::of(&home()).unwrap(), State::default())
}

/// A store of pages made here: each `(file name, bytes)` written to a folder, which
/// lives as long as the store is used.
fn built(pages: Vec<(String, String)>) -> (tempfile::TempDir, Codex) {
    let dir = tempfile::tempdir().unwrap();
    let read = pages
        .into_iter()
        .map(|(name, bytes)| {
            let path = dir.path().join(&name);
            std::fs::write(&path, bytes).unwrap();
            Page::read(files::PageFile {
                path,
                name: files::parse_file_name(&name).unwrap(),
            })
        })
        .collect();
    let codex = Codex::build(read, State::default());
    (dir, codex)
}

/// Node `n`'s line, read whole.
fn node(codex: &Codex, n: usize) -> super::page::Line {
    codex.read_node(n).unwrap()
}

// §1 file names

#[test]
fn file_names_parse() {
    let n = files::parse_file_name(
        "rollout-2026-12-01T19-38-47-01a2331d-9d4a-7781-acec-f35cf40a4d8b_01a2331d-e874-78f0-936a-c859781591a5.jsonl",
    )
    .unwrap();
    assert_eq!(n.ts, "2026-12-01T19-38-47");
    assert_eq!(n.thread_id, TUI);
    assert_eq!(n.page_id, TUI_P2);
    assert!(!n.compressed);
    let z = files::parse_file_name(&format!("rollout-2026-12-01T19-38-13-{QA}.jsonl.zst")).unwrap();
    assert!(z.compressed);
    assert_eq!(z.page_id, QA);
    assert_eq!(
        z.plain_name(),
        format!("rollout-2026-12-01T19-38-13-{QA}.jsonl")
    );
    for bad in [
        "rollout-2026-12-01T19-38-13-nope.jsonl",
        &format!("rollout-2026-12-01-{QA}.jsonl"),
        &format!("rollout-2026-12-01T19-38-13-{QA}.json"),
        &format!("x-2026-12-01T19-38-13-{QA}.jsonl"),
        &format!("rollout-2026-12-01T19-38-13-{QA}_.jsonl"),
        "rollout-é.jsonl",
    ] {
        assert_eq!(files::parse_file_name(bad), None, "{bad}");
    }
}

#[test]
fn discovery_of_home_dir_and_file() {
    let all = files::discover(&Root::of(&home()).unwrap());
    assert_eq!(all.len(), 12);
    let dir = files::discover(&Root::of(&home().join("sessions")).unwrap());
    assert_eq!(dir, all);
    let one = day().join(format!("rollout-2026-12-01T19-38-13-{QA}.jsonl"));
    let root = Root::of(&one).unwrap();
    assert_eq!(root.codex_home(), Some(home()));
    assert_eq!(files::discover(&root).len(), 1);
    // A fork's file alone brings its parent's page from the home it lies in.
    let fork = day().join(format!("rollout-2026-12-01T19-38-15-{QA_FORK}.jsonl"));
    let codex = Codex::load(&Root::of(&fork).unwrap());
    assert_eq!(codex.pages.len(), 2);
    assert_eq!(codex.problems, []);
    let t = codex.thread(QA_FORK).unwrap();
    assert_eq!(codex.thread_nodes(t).len(), 13);
    let tui2 = day().join(format!("rollout-2026-12-01T19-38-47-{TUI}_{TUI_P2}.jsonl"));
    assert_eq!(Codex::load(&Root::of(&tui2).unwrap()).pages.len(), 2);
    assert_eq!(
        Root::of(&home().join("sessions")).unwrap().codex_home(),
        Some(home())
    );
    let not = Root::of(&home().join("config.toml")).unwrap_err();
    assert!(
        not.to_string().contains("not a Codex rollout file"),
        "{not}"
    );
}

// §8 compressed pages

fn zst(bytes: &[u8]) -> Vec<u8> {
    ruzstd::encoding::compress_to_vec(bytes, ruzstd::encoding::CompressionLevel::Fastest)
}

#[test]
fn compressed_pages_read_and_plain_preferred() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("sessions/2026/12/01");
    std::fs::create_dir_all(&d).unwrap();
    let name = format!("rollout-2026-12-01T19-38-13-{QA}.jsonl");
    let bytes = std::fs::read(day().join(&name)).unwrap();
    std::fs::write(d.join(format!("{name}.zst")), zst(&bytes)).unwrap();
    let root = Root::of(tmp.path()).unwrap();
    let found = files::discover(&root);
    assert_eq!(found.len(), 1);
    assert!(found[0].name.compressed);
    assert_eq!(files::read_page(&found[0].path).unwrap(), bytes);
    let codex = Codex::load(&root);
    let t = codex.thread(QA).unwrap();
    assert_eq!(
        render::line_text(&node(&codex, codex.leaf(t).unwrap())).text,
        "12 − 5 = 7.\n"
    );

    // Both forms: the plain one wins.
    std::fs::write(d.join(&name), &bytes).unwrap();
    let found = files::discover(&root);
    assert_eq!(found.len(), 1);
    assert!(!found[0].name.compressed);
    // Named one way, present the other: followed.
    std::fs::remove_file(d.join(&name)).unwrap();
    assert_eq!(files::read_page(&d.join(&name)).unwrap(), bytes);
    // The bound holds.
    let err = files::read_page_bounded(&d.join(format!("{name}.zst")), 1000).unwrap_err();
    assert!(err.to_string().contains("more than 1000 bytes"), "{err}");
    // Garbage is an error, not a panic.
    std::fs::write(d.join(format!("{name}.zst")), b"not zstd at all").unwrap();
    assert!(files::read_page(&d.join(format!("{name}.zst"))).is_err());
}

#[test]
fn multi_frame_zst() {
    let mut two = zst(b"a\n");
    two.extend(zst(b"b\n"));
    assert_eq!(files::decompress(&two[..], 100).unwrap(), b"a\nb\n");
}

// §3.1 history_base

#[test]
fn fork_history_reads_the_parent_bytes() {
    let codex = no_db();
    let fork = codex.page(QA_FORK).unwrap();
    let h = codex.history(fork, None);
    assert_eq!(h.error, None);
    let parent = codex.page(QA).unwrap();
    let from_parent = h.lines().filter(|r| r.page == parent).count();
    assert_eq!(
        from_parent,
        codex.pages[parent].index.recs.len(),
        "all of the parent's lines (end_byte_offset = its size)"
    );
    assert_eq!(
        h.len(),
        codex.pages[parent].index.recs.len() + codex.pages[fork].index.recs.len()
    );
    // Ordinals continue: each once, rising, up to 57.
    let ords: Vec<i64> = h.lines().map(|r| codex.line(r).ordinal.unwrap()).collect();
    assert!(ords.windows(2).all(|w| w[0] < w[1]), "{ords:?}");
    assert!(*ords.last().unwrap() <= 57 && ords.len() > 30, "{ords:?}");
}

#[test]
fn rewind_history_cuts_at_the_byte_offset() {
    let codex = no_db();
    let p2 = codex.page(TUI_P2).unwrap();
    let p1 = codex.page(TUI).unwrap();
    let h = codex.history(p2, None);
    let base: Vec<_> = h.lines().filter(|r| r.page == p1).collect();
    assert_eq!(codex.line(base[base.len() - 1]).ordinal, Some(24));
    assert_eq!(codex.line(base[base.len() - 1]).end, 60575);
}

/// The base's offset is honoured to the byte: a line the offset cuts into is dropped
/// (§3.1, measured), and a chain of three pages resolves recursively.
#[test]
fn offsets_decide_and_chains_resolve() {
    let t = "01a2331d-0000-7000-8000-000000000001";
    let p2 = "01a2331d-0000-7000-8000-000000000002";
    let p3 = "01a2331d-0000-7000-8000-000000000003";
    let meta = |hb: Option<(&str, u64)>| {
        let hb = hb.map_or(String::new(), |(p, o)| {
            format!(r#","history_base":{{"thread_id":"{p}","end_ordinal_exclusive":1,"end_byte_offset":{o}}}"#)
        });
        format!(
            r#"{{"timestamp":"t","ordinal":0,"type":"session_meta","payload":{{"id":"{t}","cwd":"/p"{hb}}}}}"#
        ) + "\n"
    };
    let item = |o: i64, text: &str| {
        format!(
            r#"{{"timestamp":"t","ordinal":{o},"type":"response_item","payload":{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{text}"}}]}}}}"#
        ) + "\n"
    };
    let page1 = meta(None) + &item(1, "a") + &item(2, "b") + &item(3, "c");
    let a_end = (meta(None).len() + item(1, "a").len()) as u64;
    // Page 2 takes page 1 up to 1 byte into "b": only "a" is inherited.
    let page2 = meta(Some((t, a_end + 1))) + &item(2, "x");
    let page2_len = page2.len() as u64;
    let page3 = meta(Some((p2, page2_len))) + &item(3, "y");
    let pf = |ts: &str, page: &str| {
        if page == t {
            format!("rollout-{ts}-{t}.jsonl")
        } else {
            format!("rollout-{ts}-{t}_{page}.jsonl")
        }
    };
    let (_dir, codex) = built(vec![
        (pf("2026-12-01T00-00-01", t), page1),
        (pf("2026-12-01T00-00-02", p2), page2),
        (pf("2026-12-01T00-00-03", p3), page3),
    ]);
    let th = codex.thread(t).unwrap();
    let leaf = codex.leaf(th).unwrap();
    assert_eq!(codex.id(leaf), format!("{p3}:3"));
    let ctx = context::context_at(&codex, leaf).unwrap();
    let texts: Vec<&str> = ctx
        .input
        .iter()
        .map(|v| v["content"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["a", "x", "y"]);
    // The tree: "x" hangs under "a", beside "b"; "y" under "x".
    let a = codex.find(&format!("{t}:1")).unwrap();
    let x = codex.find(&format!("{p2}:2")).unwrap();
    let b = codex.find(&format!("{t}:2")).unwrap();
    assert_eq!(codex.parent(x), Some(a));
    assert_eq!(codex.children(a), [b, x]);
    assert_eq!(
        codex.parent(codex.find(&format!("{p3}:3")).unwrap()),
        Some(x)
    );
    assert_eq!(codex.thread_nodes(th).len(), 5);
}

#[test]
fn missing_base_is_reported_not_fatal() {
    let tmp = tempfile::tempdir().unwrap();
    let name = format!("rollout-2026-12-01T19-38-15-{QA_FORK}.jsonl");
    std::fs::copy(day().join(&name), tmp.path().join(&name)).unwrap();
    let codex = Codex::load(&Root::of(tmp.path()).unwrap());
    assert_eq!(
        codex.problems,
        [Problem::MissingBase {
            page: QA_FORK.into(),
            base: QA.into()
        }]
    );
    let p = codex.page(QA_FORK).unwrap();
    let h = codex.history(p, None);
    assert!(matches!(h.error, Some(Problem::MissingBase { .. })));
    assert_eq!(codex.pages[p].index.lines, 22);
    assert_eq!(
        h.len(),
        codex.pages[p].index.recs.len(),
        "its own lines are still read"
    );
    let t = codex.thread(QA_FORK).unwrap();
    let leaf = codex.leaf(t).unwrap();
    assert!(codex.problems[0].to_string().contains("missing"));
    // Its first node is a root.
    assert_eq!(
        codex
            .thread_nodes(t)
            .iter()
            .filter(|&&n| codex.parent(n).is_none())
            .count(),
        1
    );
    let ctx = context::context_at(&codex, leaf).unwrap();
    assert_eq!(ctx.input.len(), 4);
    assert!(matches!(ctx.error, Some(Problem::MissingBase { .. })));
}

#[test]
fn damaged_lines_are_reported_and_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let name = format!("rollout-2026-12-01T19-38-13-{QA}.jsonl");
    let mut bytes = std::fs::read(day().join(&name)).unwrap();
    let whole = bytes.len();
    bytes.extend_from_slice(b"not json\n");
    bytes.extend_from_slice(br#"{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[]}}"#);
    bytes.push(b'\n');
    let torn = br#"{"timestamp":"t","ordinal":99,"type":"respo"#;
    bytes.extend_from_slice(torn);
    std::fs::write(tmp.path().join(&name), &bytes).unwrap();
    let codex = Codex::load(&Root::of(tmp.path()).unwrap());
    assert_eq!(
        codex.problems,
        [
            Problem::BrokenLine {
                page: QA.into(),
                line: 37
            },
            Problem::MissingOrdinal {
                page: QA.into(),
                line: 38
            },
            Problem::TornTail {
                page: QA.into(),
                bytes: torn.len() as u64,
                at: (bytes.len() - torn.len()) as u64,
                file: tmp.path().join(&name).display().to_string(),
            },
        ]
    );
    let p = codex.page(QA).unwrap();
    let ix = &codex.pages[p].index;
    assert_eq!(ix.lines, 38);
    assert_eq!(ix.recs.last().unwrap().number, 38);
    let last = ix.recs.last().unwrap();
    assert_eq!(last.start as usize, whole + b"not json\n".len());
    assert!(ix.recs[ix.recs.len() - 2].end as usize <= whole);
    // The line without an ordinal gets a line-number id.
    assert!(codex.find(&format!("{QA}:L38")).is_some());
}

// §3.3, §3.4 the tree and ids

#[test]
fn rewind_pages_branch_where_their_base_ends() {
    let codex = no_db();
    let p2 = codex.page(TUI_P2).unwrap();
    let t = codex.thread(TUI).unwrap();
    let first_own = codex.nodes.iter().position(|r| r.page == p2).unwrap();
    let parent = codex.parent(first_own).unwrap();
    assert_eq!(codex.nodes[parent].page, codex.page(TUI).unwrap());
    assert!(codex.node_line(parent).ordinal.unwrap() < 25);
    // The dead branch of page 1 (ordinals >= 25) is the sibling.
    let kids = codex.children(parent);
    assert_eq!(kids.len(), 2);
    assert!(kids.iter().any(|&k| codex.nodes[k].page == p2));
    // Every node of both pages is in the session; the leaf is on page 2 (newest).
    let all = codex.thread_nodes(t);
    let count = codex
        .nodes
        .iter()
        .filter(|r| codex.pages[r.page].thread_id() == TUI)
        .count();
    assert_eq!(all.len(), count);
    assert_eq!(codex.nodes[codex.leaf(t).unwrap()].page, p2);
    assert!(!codex.threads[t].current_from_state);
}

#[test]
fn forks_hang_under_the_parent_node() {
    let codex = no_db();
    let fork = codex.thread(QA_FORK).unwrap();
    let parent = codex.thread(QA).unwrap();
    let origin = codex.fork_origin(fork).unwrap();
    assert_eq!(origin, codex.leaf(parent).unwrap());
    assert_eq!(codex.forks_at(origin), [fork]);
    assert_eq!(codex.fork_origin(parent), None);
    // The fork's session shows its whole history, the inherited part included.
    let nodes = codex.thread_nodes(fork);
    assert_eq!(nodes.len(), 9 + 4);
    assert_eq!(codex.parent(nodes[0]), None);
    for w in nodes.windows(2) {
        assert_eq!(codex.parent(w[1]), Some(w[0]), "a linear history");
    }
}

#[test]
fn ids_are_point_ids_with_payload_id_aliases() {
    let codex = no_db();
    let n = codex.find(&format!("{TOOLS}:13")).unwrap();
    assert_eq!(codex.id(n), format!("{TOOLS}:13"));
    assert_eq!(codex.find("fc_d666ii9qyo7ibvg7qkuk3oniu8qanieh"), Some(n));
    // Unique over all samples.
    let mut seen = std::collections::HashSet::new();
    for i in 0..codex.nodes.len() {
        assert!(seen.insert(codex.id(i).to_string()));
    }
}

// §4 current page, §6 subagents, §7 names: the state

#[test]
fn state_names_current_pages_and_spawn_edges() {
    let (_dir, codex) = with_db();
    let t = codex.thread(TUI).unwrap();
    assert!(codex.threads[t].current_from_state);
    assert_eq!(codex.pages[codex.threads[t].current_page].page_id(), TUI_P2);
    assert_eq!(session::name(&codex, t), "TUI rewind demo");
    assert_eq!(
        session::name(&codex, codex.thread(QA).unwrap()),
        "[[QA1]] What is 2+2?"
    );
    assert_eq!(codex.state.spawn_edges.len(), 1);
    assert_eq!(codex.state.spawn_edges[0].parent_thread_id, SUB);
    assert_eq!(codex.state.spawn_edges[0].child_thread_id, SUB_CHILD);
    let sub = codex.thread(SUB).unwrap();
    assert_eq!(codex.subagents(sub), [codex.thread(SUB_CHILD).unwrap()]);
    // Without the database, the child's session_meta names its parent.
    let no = no_db();
    assert_eq!(
        no.subagents(no.thread(SUB).unwrap()),
        [no.thread(SUB_CHILD).unwrap()]
    );
    let row = &codex.state.threads[QA];
    assert_eq!(row.cwd.as_deref(), Some("/home/dev/src/qa"));
    assert_eq!(row.source.as_deref(), Some("exec"));
}

/// A row naming an older page wins over the newest file (§4, measured).
#[test]
fn state_row_naming_an_older_page_wins() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state_5.sqlite");
    make_db(&db);
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute(
        "UPDATE threads SET rollout_path = ?1 WHERE id = ?2",
        [
            format!("/elsewhere/rollout-2026-12-01T19-38-28-{TUI}.jsonl"),
            TUI.to_string(),
        ],
    )
    .unwrap();
    drop(conn);
    let codex = Codex::load_with_state(&Root::of(&home()).unwrap(), State::load(dir.path()));
    let t = codex.thread(TUI).unwrap();
    assert_eq!(codex.pages[codex.threads[t].current_page].page_id(), TUI);
    let leaf = codex.leaf(t).unwrap();
    assert_eq!(codex.nodes[leaf].page, codex.page(TUI).unwrap());
}

#[test]
fn missing_or_corrupt_db_falls_back() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        home().join("session_index.jsonl"),
        dir.path().join("session_index.jsonl"),
    )
    .unwrap();
    let s = State::load(dir.path());
    assert!(s.db_error.as_deref().unwrap().contains("does not exist"));
    assert_eq!(
        s.name(TUI),
        Some("TUI rewind demo"),
        "the last line of an id wins"
    );
    std::fs::write(dir.path().join("state_5.sqlite"), b"this is not a database").unwrap();
    let s = State::load(dir.path());
    assert!(s.db_error.is_some());
    let codex = Codex::load_with_state(&Root::of(&home()).unwrap(), s);
    // No row: names from the index, else the first prompt of the whole history (a
    // fork's is the one it inherited, as Codex's picker shows it); newest page current.
    assert_eq!(
        session::name(&codex, codex.thread(TUI).unwrap()),
        "TUI rewind demo"
    );
    assert_eq!(
        session::name(&codex, codex.thread(QA_FORK).unwrap()),
        "[[QA1]] What is 2+2?"
    );
    assert_eq!(
        session::name(&codex, codex.thread(IMG).unwrap()),
        "[[IMG]] What is in this image?"
    );
}

/// A database Codex holds locked: we wait at most the busy timeout, then fall back, and
/// never take a lock Codex would wait on.
#[test]
fn busy_db_falls_back_quickly() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state_5.sqlite");
    make_db(&db);
    let writer = rusqlite::Connection::open(&db).unwrap();
    writer.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let s = State::load(dir.path());
    assert!(
        s.db_error.as_deref().unwrap().contains("locked"),
        "{:?}",
        s.db_error
    );
    writer.execute_batch("COMMIT").unwrap();
    // Our read took no lock that outlives it: Codex can write right after.
    let s = State::load(dir.path());
    assert_eq!(s.db_error, None);
    let w2 = rusqlite::Connection::open(&db).unwrap();
    w2.execute_batch("BEGIN EXCLUSIVE; UPDATE threads SET title='x'; COMMIT")
        .unwrap();
}

/// SQLite's locks are POSIX locks, the process's on the file: closing any descriptor
/// of the database or its `-wal`/`-shm` would drop those of our own connections (a
/// reply's write transaction on another thread). Checking the files (as every open of
/// the database, reading or writing, does first) and reading the state leave a
/// connection's locks in place.
#[test]
fn the_state_database_is_never_closed_under_our_connections() {
    use crate::model::core::input::locked_for_others;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state_5.sqlite");
    make_db(&db);
    let writer = rusqlite::Connection::open(&db).unwrap();
    writer.execute_batch("PRAGMA journal_mode=WAL").unwrap();
    let shm = dir.path().join("state_5.sqlite-shm");
    // In WAL mode an open connection keeps its shared lock on the database between
    // transactions; a write transaction holds its lock on `-shm`.
    writer
        .execute_batch("BEGIN IMMEDIATE; UPDATE threads SET title = 'held'")
        .unwrap();
    assert!(locked_for_others(&db), "the connection holds no lock");
    assert!(locked_for_others(&shm), "the transaction holds no lock");
    super::state::check_db_files(&db).unwrap();
    assert!(locked_for_others(&db), "lost by checking the files");
    assert!(locked_for_others(&shm), "lost by checking the files");
    let s = State::load(dir.path());
    assert_eq!(s.db_error, None);
    assert!(locked_for_others(&db), "lost by reading the state");
    assert!(locked_for_others(&shm), "lost by reading the state");
    writer.execute_batch("COMMIT").unwrap();
}

#[test]
fn state_never_writes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state_5.sqlite");
    make_db(&db);
    let before = std::fs::read(&db).unwrap();
    let _ = State::load(dir.path());
    assert_eq!(std::fs::read(&db).unwrap(), before);
    assert!(!dir.path().join("state_5.sqlite-journal").exists());
}

// §5 contexts: every point of every sample thread

fn strip_id(v: &Value) -> Value {
    let mut v = v.clone();
    v.as_object_mut().unwrap().remove("id");
    v
}

/// What [`check_contexts`] compared.
#[derive(Debug, Default, PartialEq, Eq)]
struct Compared {
    threads: usize,
    points: usize,
    leaves: usize,
    /// Synthetic `aborted` outputs, compared without their id (context.rs).
    inserted: usize,
}

/// Compares our context at every point of `contexts/*.contexts.json` with Codex's.
fn check_contexts(codex: &Codex, contexts: &Path, only_present: bool) -> Compared {
    let mut c = Compared::default();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(contexts)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    for path in paths {
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let Some(thread_id) = name.strip_suffix(".contexts.json") else {
            continue;
        };
        if only_present && codex.thread(thread_id).is_none() {
            continue;
        }
        c.threads += 1;
        let t = codex
            .thread(thread_id)
            .unwrap_or_else(|| panic!("no thread {thread_id}"));
        let expected: serde_json::Map<String, Value> =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for (point, want) in &expected {
            let n = codex
                .find(point)
                .unwrap_or_else(|| panic!("no node {point}"));
            let got = context::context_at(codex, n).unwrap();
            let want_input = want["input"].as_array().unwrap();
            let want_inserted: Vec<usize> = want
                .get("inserted")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|i| i["index"].as_u64().unwrap() as usize)
                        .collect()
                })
                .unwrap_or_default();
            assert_eq!(got.inserted, want_inserted, "{point}: inserted");
            assert_eq!(got.input.len(), want_input.len(), "{point}: item count");
            for (i, (g, w)) in got.input.iter().zip(want_input).enumerate() {
                if want_inserted.contains(&i) {
                    assert_eq!(strip_id(g), strip_id(w), "{point} item {i}");
                    assert_eq!(
                        g.as_object().unwrap().keys().collect::<Vec<_>>(),
                        w.as_object().unwrap().keys().collect::<Vec<_>>()
                    );
                    c.inserted += 1;
                } else {
                    // Serialized equal: key order as stored.
                    assert_eq!(g.to_string(), w.to_string(), "{point} item {i}");
                }
            }
            if want.get("leaf") == Some(&Value::Bool(true)) {
                assert_eq!(codex.leaf(t), Some(n), "{point} is the leaf");
                c.leaves += 1;
            }
            let text = got.instructions.as_deref().unwrap();
            assert!(text.starts_with("You are"), "{point}");
            c.points += 1;
        }
    }
    c
}

#[test]
fn every_sample_point_has_codex_context() {
    let (_dir, codex) = with_db();
    assert_eq!(
        check_contexts(&codex, &samples().join("contexts"), false),
        Compared {
            threads: 11,
            points: 96,
            leaves: 11,
            inserted: 11
        }
    );
}

/// Every other fixture set under tests/fixtures/codex/ with a `codex-home/` and
/// `contexts/` (its own `state_5.sqlite`, read-only), and each `X-zst/` variant (pages
/// compressed) against `X/contexts/`.
#[test]
fn every_fixture_point_has_codex_context() {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex");
    let mut sets: Vec<PathBuf> = std::fs::read_dir(&base)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("codex-home").is_dir() && !p.ends_with("samples"))
        .collect();
    sets.sort();
    for set in sets {
        let name = set.file_name().unwrap().to_string_lossy().into_owned();
        let (contexts, variant) = match name.strip_suffix("-zst") {
            Some(plain) => (base.join(plain).join("contexts"), true),
            None => (set.join("contexts"), false),
        };
        if !contexts.is_dir() {
            continue;
        }
        let home = set.join("codex-home");
        let state = State::load(&home);
        assert_eq!(state.db_error, None, "{name}");
        let codex = Codex::load_with_state(&Root::of(&home).unwrap(), state);
        assert_eq!(codex.problems, [], "{name}");
        let c = check_contexts(&codex, &contexts, variant);
        assert!(c.points > 0 && c.leaves == c.threads, "{name}: {c:?}");
        if variant {
            assert!(codex.pages.iter().any(|p| p.file.name.compressed), "{name}");
        }
        eprintln!("{name}: {c:?}");
    }
}

#[test]
fn every_node_of_the_samples_is_a_point() {
    let codex = no_db();
    let mut expected = 0;
    for e in std::fs::read_dir(samples().join("contexts")).unwrap() {
        let path = e.unwrap().path();
        if path.to_string_lossy().ends_with(".contexts.json") {
            let m: HashMap<String, Value> =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            expected += m.len();
        }
    }
    assert_eq!(codex.nodes.len(), expected);
}

#[test]
fn aborted_output_is_inserted_after_its_call() {
    let items = vec![
        serde_json::json!({"type":"function_call","call_id":"c2"}),
        serde_json::json!({"type":"function_call","call_id":"c3"}),
        serde_json::json!({"type":"function_call_output","call_id":"c2","output":"ok"}),
    ];
    let (out, ins) = context::insert_aborted(items);
    assert_eq!(ins, [2]);
    assert_eq!(
        out[2].to_string(),
        r#"{"type":"function_call_output","id":"fco_aborted_c3","call_id":"c3","output":"aborted"}"#
    );
}

#[test]
fn compaction_replaces_what_precedes_it() {
    let codex = no_db();
    let t = codex.thread(CMP).unwrap();
    let nodes = codex.thread_nodes(t);
    let c = *nodes
        .iter()
        .find(|&&n| codex.node_line(n).kind == LineKind::Compacted)
        .unwrap();
    let ctx = context::context_at(&codex, c).unwrap();
    let rh = node(&codex, c).payload()["replacement_history"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(ctx.input.len(), rh);
    assert!(
        ctx.input
            .iter()
            .all(|v| v.get(context::INTERNAL_KEY).is_none())
    );
    // The line before (the summary) still has the old history plus the summary.
    let before = context::context_at(&codex, codex.parent(c).unwrap()).unwrap();
    assert!(before.input.len() > rh);
}

#[test]
fn readable_context_starts_with_the_instructions() {
    let codex = no_db();
    let t = codex.thread(QA_FORK).unwrap();
    let ctx = context::context_at(&codex, codex.leaf(t).unwrap()).unwrap();
    let text = ctx.to_text();
    assert!(text.starts_with("## instructions\nYou are a coding agent"));
    assert!(text.contains("## user\n[[QA1]] What is 2+2?\n"));
    assert!(text.contains("## meta\n<environment_context>"));
    assert!(text.ends_with("## assistant\n(fork) Second turn in the fork.\n\n"));
    let json = ctx.to_json();
    let back: Vec<Value> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, ctx.input);
}

// §2, §5.6, §6 rendering

#[test]
fn kinds_texts_and_previews() {
    let codex = no_db();
    let kind_of = |id: &str| render::line_kind(&node(&codex, codex.find(id).unwrap()));
    let text_of = |id: &str| render::line_text(&node(&codex, codex.find(id).unwrap())).text;
    let preview_of = |id: &str| render::preview(&node(&codex, codex.find(id).unwrap()));
    assert_eq!(kind_of(&format!("{TOOLS}:2")), "developer");
    assert_eq!(kind_of(&format!("{TOOLS}:3")), "meta");
    assert_eq!(kind_of(&format!("{TOOLS}:7")), "user");
    assert_eq!(kind_of(&format!("{TOOLS}:10")), "reasoning");
    assert_eq!(kind_of(&format!("{TOOLS}:12")), "assistant");
    assert_eq!(kind_of(&format!("{TOOLS}:13")), "function_call");
    assert_eq!(kind_of(&format!("{TOOLS}:16")), "function_call_output");
    assert_eq!(
        text_of(&format!("{TOOLS}:10")),
        "I will look at the files first.\n"
    );
    let call = text_of(&format!("{TOOLS}:13"));
    assert!(
        call.starts_with("[call exec_command (call_tools_01)]\n{\n  \""),
        "{call}"
    );
    let out = text_of(&format!("{TOOLS}:16"));
    assert!(
        out.starts_with("[output (call_tools_01)]\nChunk ID:"),
        "{out}"
    );
    assert_eq!(
        preview_of(&format!("{TOOLS}:7")),
        "user: [[TOOLS]] Inspect the project and show a failure."
    );
    assert!(preview_of(&format!("{TOOLS}:13")).starts_with("call exec_command: "));
    assert!(preview_of(&format!("{TOOLS}:16")).starts_with("output call_tools_01: "));
    // Every node has a non-empty kind, text and a one-line preview.
    for n in 0..codex.nodes.len() {
        let l = &node(&codex, n);
        assert!(!render::line_kind(l).is_empty());
        // What the index keeps gives the same KIND as the line read whole.
        assert_eq!(codex.kind_key(n).1, render::line_kind(l), "{}", codex.id(n));
        assert_eq!(
            codex.kind_key(n).0,
            render::kind_key(l).0,
            "{}",
            codex.id(n)
        );
        assert!(
            !render::line_text(l).text.trim().is_empty(),
            "{}",
            codex.id(n)
        );
        let p = render::preview(l);
        assert!(!p.contains('\n') && p.chars().count() <= 120, "{p}");
    }
    // The subagent's spawn call shows its namespace.
    let sub = codex.thread(SUB).unwrap();
    assert!(codex.thread_nodes(sub).iter().any(|&n| {
        render::line_text(&node(&codex, n))
            .text
            .starts_with("[call multi_agent_v1.spawn_agent")
    }));
}

#[test]
fn images_are_decoded() {
    let codex = no_db();
    let t = codex.thread(IMG).unwrap();
    let mut images = 0;
    for n in codex.thread_nodes(t) {
        let r = render::line_text(&node(&codex, n));
        for img in &r.images {
            assert!(img.bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{}", img.name);
            assert!(r.text.contains(&format!("[image: {}]", img.name)));
            images += 1;
        }
    }
    assert_eq!(images, 2);
}

#[test]
fn compacted_reads_with_its_summary() {
    let codex = no_db();
    let t = codex.thread(CMP).unwrap();
    let c = *codex
        .thread_nodes(t)
        .iter()
        .find(|&&n| codex.node_line(n).kind == LineKind::Compacted)
        .unwrap();
    let l = &node(&codex, c);
    assert_eq!(render::line_kind(l), "compacted");
    let text = render::line_text(l).text;
    assert!(text.contains("Another language model started to solve this problem"));
    assert!(text.contains("[replacement history: "));
    assert!(render::preview(l).starts_with("compacted: "));
}

// Bookkeeping: turns, models, usage

#[test]
fn turns_models_and_usage() {
    let codex = no_db();
    let turn = session::turn_at(&codex, codex.find(&format!("{TOOLS}:37")).unwrap()).unwrap();
    assert_eq!(turn.model.as_deref(), Some("gpt-5-codex"));
    assert_eq!(
        turn.turn_id.as_deref(),
        Some("01a2331d-7698-7822-89d3-e9a8513217f9")
    );
    assert_eq!(
        turn.usage.len(),
        5,
        "one token record per request of the tool loop"
    );
    // Two turns of one thread are told apart.
    let t1 = session::turn_at(&codex, codex.find(&format!("{QA}:10")).unwrap()).unwrap();
    let t2 = session::turn_at(&codex, codex.find(&format!("{QA}:20")).unwrap()).unwrap();
    assert_ne!(t1.turn_id, t2.turn_id);
    assert_eq!(t1.usage.len(), 1);
}

// session.json

#[test]
fn session_json_from_session_meta() {
    let (_dir, codex) = with_db();
    let t = codex.thread(TUI).unwrap();
    let s = session::session_json(&codex, t).unwrap();
    let keys: Vec<&str> = s.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(&keys[..3], ["account_scoped", "session_id", "id"]);
    assert!(!keys.contains(&"base_instructions"));
    assert_eq!(s["id"], TUI);
    assert_eq!(s["pages"].as_array().unwrap().len(), 2);
    assert!(s["current_page"].as_str().unwrap().contains(TUI_P2));
    let sub = codex.thread(SUB_CHILD).unwrap();
    let m = codex.meta(sub).unwrap();
    assert!(m.is_subagent());
    assert_eq!(m.parent_thread_id.as_deref(), Some(SUB));
    assert_eq!(
        session::session_json(&codex, sub).unwrap()["agent_nickname"],
        "Arendt"
    );
}

/// A page whose base chain loops (never written by Codex; a hand-edited file) is
/// reported, and its own lines still read.
#[test]
fn base_cycles_are_reported() {
    let t = "01a2331d-0000-7000-8000-000000000001";
    let p2 = "01a2331d-0000-7000-8000-000000000002";
    let line = |hb: &str, o: i64| {
        format!(
            r#"{{"timestamp":"t","ordinal":0,"type":"session_meta","payload":{{"id":"{t}","history_base":{{"thread_id":"{hb}","end_byte_offset":100000}}}}}}
{{"timestamp":"t","ordinal":{o},"type":"response_item","payload":{{"type":"message","role":"user","content":[{{"type":"input_text","text":"x"}}]}}}}
"#
        )
    };
    let (_dir, codex) = built(vec![
        (
            format!("rollout-2026-12-01T00-00-01-{t}.jsonl"),
            line(p2, 1),
        ),
        (
            format!("rollout-2026-12-01T00-00-02-{t}_{p2}.jsonl"),
            line(t, 2),
        ),
    ]);
    let h = codex.history(codex.page(p2).unwrap(), None);
    assert!(matches!(h.error, Some(Problem::BaseCycle { .. })), "{h:?}");
    assert_eq!(h.len(), 2);
    let leaf = codex.leaf(codex.thread(t).unwrap()).unwrap();
    assert_eq!(context::context_at(&codex, leaf).unwrap().input.len(), 2);
    // No loop of parents: both pages are roots.
    for n in 0..codex.nodes.len() {
        assert_eq!(codex.parent(n), None);
    }
    assert_eq!(codex.thread_nodes(codex.thread(t).unwrap()).len(), 2);
}

/// The search's index indexes nothing of a line that is no entry (`page::shown`), so
/// every entry must be shown: every node of every thread of the fixtures (their base
/// pages' lines too), and a line that is not is there to drop (`session_meta`,
/// `turn_context`, `event_msg`s, token records).
#[test]
fn every_entry_line_is_shown() {
    let mut files = crate::model::core::scan::tests::jsonl_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex"),
    );
    files.sort();
    let (nodes, dropped) =
        crate::model::core::grep::shown_check::every_entry_shown(&files, super::page::shown);
    assert!(
        nodes > 500 && dropped > 500,
        "{nodes} nodes, {dropped} lines dropped"
    );
    for (line, want) in [
        (
            r#"{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[]}}"#,
            true,
        ),
        (
            r#"{"timestamp":"t","type":"compacted","payload":{"message":"m"}}"#,
            true,
        ),
        (
            r#"{"timestamp":"t","type":"turn_context","payload":{"cwd":"/x"}}"#,
            false,
        ),
        (
            r#"{"timestamp":"t","type":"event_msg","payload":{"type":"agent_message","message":"m"}}"#,
            false,
        ),
        (
            r#"{"type":"response_item","type":"world_state","payload":{}}"#,
            false,
        ),
        (
            r#"{"type":"world_state","type":"response_item","payload":{}}"#,
            true,
        ),
        (r#"{"type":"response_item","payload":"#, false),
    ] {
        assert_eq!(super::page::shown(line.as_bytes()), want, "{line}");
    }
}
