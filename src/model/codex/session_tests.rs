//! A Codex thread through the core's `Session` (the agents' table's `Session::open`):
//! every point of every fixture, leaves, ids, refresh after appends and new pages,
//! replies.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::agent::CodexThread;
use super::files::{self, Root};
use super::tests::{home as samples_home, make_db, samples};
use crate::model::core::format::Format;
use crate::model::core::session::{ProblemKind, Session};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex")
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if e.file_type().unwrap().is_dir() {
            copy_tree(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

/// The samples' home in a temporary folder, with the database Codex had.
fn samples_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("codex-home");
    copy_tree(&samples_home(), &home);
    make_db(&home.join("state_5.sqlite"));
    (dir, home)
}

/// The pages of `home`, by thread id.
fn pages_by_thread(home: &Path) -> HashMap<String, Vec<PathBuf>> {
    let mut m: HashMap<String, Vec<PathBuf>> = HashMap::new();
    for f in files::discover(&Root::Home(home.to_path_buf())) {
        m.entry(f.name.thread_id).or_default().push(f.path);
    }
    for v in m.values_mut() {
        v.sort();
    }
    m
}

fn strip_id(v: &Value) -> Value {
    let mut v = v.clone();
    v.as_object_mut().unwrap().remove("id");
    v
}

/// Opens every thread of `home` with `contexts` and compares each point's context.
/// Returns (threads, points, leaves).
fn check_home(home: &Path, contexts: &Path, only_present: bool) -> (usize, usize, usize) {
    let pages = pages_by_thread(home);
    let (mut threads, mut points, mut leaves) = (0, 0, 0);
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
        let Some(thread_pages) = pages.get(thread_id) else {
            assert!(only_present, "no pages of {thread_id}");
            continue;
        };
        // Only plain pages open as a session (the core reads its own file raw).
        let Some(page) = thread_pages
            .iter()
            .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        else {
            continue;
        };
        threads += 1;
        let s = Session::open(page).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
        assert_eq!(s.format(), Format::Codex);
        let expected: serde_json::Map<String, Value> =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for (point, want) in &expected {
            let i = s
                .find(point)
                .unwrap_or_else(|| panic!("{}: no entry {point}", page.display()));
            assert_eq!(&s.id_string(i), point);
            let got = s.context_messages(i).unwrap();
            let want_input = want["input"].as_array().unwrap();
            let inserted: Vec<usize> = want
                .get("inserted")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|x| x["index"].as_u64().unwrap() as usize)
                        .collect()
                })
                .unwrap_or_default();
            assert_eq!(got.len(), want_input.len(), "{point}: item count");
            for (k, (g, w)) in got.iter().zip(want_input).enumerate() {
                if inserted.contains(&k) {
                    assert_eq!(strip_id(g), strip_id(w), "{point} item {k}");
                } else {
                    assert_eq!(g.to_string(), w.to_string(), "{point} item {k}");
                }
            }
            // context.json holds the same items; the readable context starts with the
            // base instructions.
            let (text, json) = s.context_files(i).unwrap();
            let back: Vec<Value> = serde_json::from_str(&json).unwrap();
            assert_eq!(back, got, "{point}: context.json");
            assert!(text.starts_with("## instructions\nYou are"), "{point}");
            if want.get("leaf") == Some(&Value::Bool(true)) {
                assert_eq!(s.leaf(), Some(i), "{point} is the leaf");
                leaves += 1;
            }
            points += 1;
        }
        // Every entry renders and previews.
        for i in 0..s.entries().len() as u32 {
            s.render(i).unwrap();
            s.preview(i).unwrap();
        }
        assert!(!s.session_json().unwrap().is_empty());
        assert!(s.name().is_some_and(|n| !n.is_empty()));
    }
    (threads, points, leaves)
}

#[test]
fn every_sample_point_through_session() {
    let (_d, home) = samples_copy();
    let (threads, points, leaves) = check_home(&home, &samples().join("contexts"), false);
    assert_eq!((threads, points, leaves), (11, 96, 11));
}

#[test]
fn every_fixture_point_through_session() {
    for set in ["own", "own-zst"] {
        let home = fixtures().join(set).join("codex-home");
        let contexts = fixtures().join("own/contexts");
        let (threads, points, leaves) = check_home(&home, &contexts, set == "own-zst");
        assert!(
            threads > 0 && points > 0 && leaves == threads,
            "{set}: {threads} {points} {leaves}"
        );
        eprintln!("{set}: {threads} threads, {points} points");
    }
}

/// Opening any page of a thread gives the same thread: the same entries, the same leaf.
#[test]
fn any_page_opens_the_whole_thread() {
    let (_d, home) = samples_copy();
    let pages = pages_by_thread(&home);
    let tui = &pages["01a2331d-9d4a-7781-acec-f35cf40a4d8b"];
    assert!(tui.len() >= 2, "{tui:?}");
    let mut seen = None;
    for p in tui {
        let s = Session::open(p).unwrap();
        let mut ids: Vec<String> = (0..s.entries().len() as u32)
            .map(|i| s.id_string(i))
            .collect();
        ids.sort();
        let leaf = s.leaf().map(|l| s.id_string(l));
        // Pages of one thread are branches: more than one tip.
        assert!(s.leaf_count() >= 2, "{}", s.leaf_count());
        match &seen {
            None => seen = Some((ids, leaf)),
            Some(x) => assert_eq!(x, &(ids, leaf)),
        }
    }
}

/// A fork's session holds its parent's history up to the fork, read from the parent's
/// page, and no later line of the parent.
#[test]
fn a_fork_shows_its_inherited_history() {
    let (_d, home) = samples_copy();
    let pages = pages_by_thread(&home);
    let fork = &pages["01a2331d-68ff-76e1-bf99-c1ba471b9285"][0];
    let s = Session::open(fork).unwrap();
    let parent = "01a2331d-6282-7e72-8cca-35fb82ba4618";
    let inherited = (0..s.entries().len() as u32)
        .filter(|&i| s.id_string(i).starts_with(parent))
        .count();
    assert!(inherited > 0);
    // One root: the parent's first node; the fork's nodes hang below the inherited ones.
    assert_eq!(s.roots().len(), 1);
    assert!(s.id_string(s.roots()[0]).starts_with(parent));
    let leaf = s.leaf().unwrap();
    assert!(s.id_string(leaf).starts_with("01a2331d-68ff"));
    assert!(s.path_to(leaf).len() > inherited);
    // payload.id finds an entry too.
    let a = s.agent().as_any().downcast_ref::<CodexThread>().unwrap();
    let n = a.node(leaf);
    let pid = a.codex().read_node(n).unwrap().payload()["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(s.find(&pid), Some(leaf));
}

/// An assistant item answered the request made after the last input before its
/// response.
#[test]
fn request_of_an_answer_is_the_last_input_before_it() {
    let (_d, home) = samples_copy();
    let pages = pages_by_thread(&home);
    let s = Session::open(&pages["01a2331d-7684-7ac3-8b54-e807d81da7ce"][0]).unwrap();
    let mut answered = 0;
    for i in 0..s.entries().len() as u32 {
        if let Some(r) = s.request_of(i) {
            answered += 1;
            assert!(s.request_of(r).is_none(), "a request is an input");
            assert!(s.path_to(i).contains(&r));
        }
    }
    assert!(answered > 0);
}

fn append(path: &Path, bytes: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(bytes.as_bytes()).unwrap();
}

/// Lines appended to a page, and a new page of the thread, show up on refresh.
#[test]
fn refresh_follows_appends_and_new_pages() {
    let (_d, home) = samples_copy();
    let pages = pages_by_thread(&home);
    let qa = pages["01a2331d-6282-7e72-8cca-35fb82ba4618"][0].clone();
    let mut s = Session::open(&qa).unwrap();
    let before = s.entries().len();
    let leaf = s.leaf().unwrap();
    let last_ord = std::fs::read_to_string(&qa)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["ordinal"].as_i64())
        .max()
        .unwrap();
    append(
        &qa,
        &format!(
            "{{\"timestamp\":\"2026-12-01T20:00:00.000Z\",\"ordinal\":{},\"type\":\"response_item\",\"payload\":{{\"type\":\"message\",\"id\":\"msg_x1\",\"role\":\"user\",\"content\":[{{\"type\":\"input_text\",\"text\":\"appended\"}}]}}}}\n",
            last_ord + 1
        ),
    );
    let c = s.refresh().unwrap();
    assert_eq!(c.new_entries.len(), 1);
    assert_eq!(s.entries().len(), before + 1);
    let new = s.find("msg_x1").unwrap();
    assert_eq!(s.parent(new), Some(leaf));
    assert_eq!(s.leaf(), Some(new));
    let ctx = s.context_messages(new).unwrap();
    assert_eq!(ctx.last().unwrap()["content"][0]["text"], "appended");

    // A reply at an earlier entry: a new page, made current; the session catches up.
    let first_user = (0..s.entries().len() as u32)
        .find(|&i| s.kind_name(i) == "user")
        .unwrap();
    let id = s
        .write_reply(Some(&s.id_string(first_user)), "from sessionfs")
        .unwrap()
        .unwrap();
    let c = s.refresh().unwrap();
    assert!(!c.new_entries.is_empty());
    let r = s.find(&id).unwrap_or_else(|| panic!("no entry {id}"));
    assert_eq!(s.parent(r), Some(first_user));
    assert_eq!(s.leaf(), Some(r));
    assert!(s.children(first_user).count() >= 2);
    let ctx = s.context_messages(r).unwrap();
    assert_eq!(ctx.last().unwrap()["content"][0]["text"], "from sessionfs");
    // The new page's folder is watched.
    assert!(!s.watched_dirs().is_empty());

    // A reply at the leaf appends to the current (new) page.
    let id2 = s
        .write_reply(Some(&s.id_string(r)), "again")
        .unwrap()
        .unwrap();
    s.refresh().unwrap();
    let r2 = s.find(&id2).unwrap();
    assert_eq!(s.parent(r2), Some(r));
    assert_eq!(s.leaf(), Some(r2));
}

/// A missing base page, a torn line and a line without ordinal are in `check`'s
/// report.
#[test]
fn check_reports_codex_problems() {
    let (_d, home) = samples_copy();
    let pages = pages_by_thread(&home);
    let fork = pages["01a2331d-68ff-76e1-bf99-c1ba471b9285"][0].clone();
    append(
        &fork,
        "{\"timestamp\":\"2026-12-01T20:00:00.000Z\",\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"user\",\"content\":[]}}\nnot json\n{\"torn",
    );
    // The parent's page gone: the fork's base is missing.
    for p in &pages["01a2331d-6282-7e72-8cca-35fb82ba4618"] {
        std::fs::remove_file(p).unwrap();
    }
    let s = Session::open(&fork).unwrap();
    let codes: Vec<&str> = s
        .problems()
        .iter()
        .filter_map(|p| match &p.what {
            ProblemKind::Agent { code, .. } => Some(*code),
            _ => None,
        })
        .collect();
    assert!(codes.contains(&"codex-missing-base"), "{codes:?}");
    assert!(codes.contains(&"codex-missing-ordinal"), "{codes:?}");
    assert!(codes.contains(&"codex-broken-line"), "{codes:?}");
    assert!(
        s.problems()
            .iter()
            .any(|p| matches!(p.what, ProblemKind::UnterminatedLastLine { .. })),
        "{:?}",
        s.problems()
    );
}

/// A base page kept as `.jsonl.zst` is read from its decompressed bytes; when Codex
/// replaces it by its plain `.jsonl`, a refresh reads the plain file at the same
/// offsets.
#[test]
fn a_compressed_base_page_made_plain_is_followed() {
    use crate::model::core::session::SourceData;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("codex-home");
    copy_tree(&fixtures().join("own-zst/codex-home"), &home);
    let pages = pages_by_thread(&home);
    let zst = pages["01a233fc-f62c-79e0-b2f3-257e7f73df38"][0].clone();
    assert!(zst.to_string_lossy().ends_with(".jsonl.zst"));
    let fork = pages["01a233fd-2142-7c21-82a7-deda48f72fc4"][0].clone();
    let mut s = Session::open(&fork).unwrap();
    let from_zst: Vec<u32> = (0..s.entries().len() as u32)
        .filter(|&i| s.entry(i).file != 0)
        .collect();
    assert!(!from_zst.is_empty());
    let src = s.entry(from_zst[0]).file;
    assert!(matches!(
        s.source(src).unwrap().data,
        SourceData::Reader(..)
    ));
    let before: Vec<(Vec<u8>, Vec<Value>)> = (0..s.entries().len() as u32)
        .map(|i| (s.entry_bytes(i).unwrap(), s.context_messages(i).unwrap()))
        .collect();
    // Codex makes it plain: the plain file written, the compressed one removed.
    let plain = zst.with_extension("");
    std::fs::write(&plain, files::read_page(&zst).unwrap()).unwrap();
    std::fs::remove_file(&zst).unwrap();
    s.refresh().unwrap();
    assert!(matches!(&s.source(src).unwrap().data, SourceData::File(p) if *p == plain));
    let after: Vec<(Vec<u8>, Vec<Value>)> = (0..s.entries().len() as u32)
        .map(|i| (s.entry_bytes(i).unwrap(), s.context_messages(i).unwrap()))
        .collect();
    assert_eq!(before, after);
}

/// What sessionfs does not write into a Codex thread fails with its errno and a
/// reason, and writes nothing.
#[test]
fn refusals_have_their_errno() {
    use crate::model::core::fork::{Fresh, plan};
    use crate::model::core::reply::NewEntry;
    let (_d, home) = samples_copy();
    let pages = pages_by_thread(&home);
    let qa = pages["01a2331d-6282-7e72-8cca-35fb82ba4618"][0].clone();
    let bytes = std::fs::read(&qa).unwrap();
    let s = Session::open(&qa).unwrap();
    let leaf = s.leaf().unwrap();
    let e = plan(&s, leaf, &Fresh::random(s.format())).unwrap_err();
    assert_eq!(e.errno(), libc::EOPNOTSUPP, "{e}");
    let e = s.write_reply(None, "x").unwrap().unwrap_err();
    assert_eq!(e.errno(), libc::EOPNOTSUPP, "{e}");
    let e = s.write_reply(Some("nope:1"), "x").unwrap().unwrap_err();
    assert_eq!(e.errno(), libc::ENOENT, "{e}");
    let e = s.build_all(&[NewEntry::Name("n")], 0).unwrap_err();
    assert_eq!(e.errno(), libc::EOPNOTSUPP, "{e}");
    assert_eq!(std::fs::read(&qa).unwrap(), bytes);
}

/// `Session::append` of a reply goes through the Codex writer too.
#[test]
fn append_of_a_reply_uses_the_codex_writer() {
    use crate::model::core::reply::NewEntry;
    let (_d, home) = samples_copy();
    let pages = pages_by_thread(&home);
    let mut s = Session::open(&pages["01a2331d-7684-7ac3-8b54-e807d81da7ce"][0]).unwrap();
    let leaf = s.leaf().unwrap();
    let leaf_id = s.id_string(leaf);
    let (id, change) = s
        .append(&NewEntry::Reply {
            parent: Some(&leaf_id),
            text: "at the leaf",
        })
        .unwrap();
    assert_eq!(change.new_entries.len(), 1);
    let i = s.find(&id).unwrap();
    assert_eq!(s.parent(i), Some(leaf));
    assert_eq!(s.leaf(), Some(i));
}
