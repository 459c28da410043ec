//! Codex threads through real mounts (LAYOUT.md "Codex threads", CODEX-FORMAT.md):
//! every point of every Codex fixture thread (`tests/fixtures/codex/{samples,own,own-zst}`)
//! read with `cat` through a mount of a copy of its Codex home equals the context Codex
//! 0.171.0 sends there (`contexts/*.contexts.json`); the leaf, names, `session.json`,
//! KIND files, `tree`, rewinds as branches, forks with their inherited history and their
//! links; the other ways to mount (the `sessions/` folder, one rollout file, the
//! every-agent mount with `CODEX_HOME`); lines and pages Codex writes while mounted;
//! replies through the mount, checked against the lines Codex accepted
//! (`tests/fixtures/codex/accepts`) and the database row; damaged threads.

mod common;

use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};

fn codex_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex")
}

/// A copy of fixture set `set`'s Codex home at `dir/.codex`. The samples come without
/// a database (their rows are in `state_5.threads.json`): one is made from Codex's
/// schema and those rows, so that every set is mounted as Codex left it.
fn home_copy(dir: &Path, set: &str) -> PathBuf {
    let home = dir.join(".codex");
    copy_tree(&codex_dir().join(set).join("codex-home"), &home);
    if !home.join("state_5.sqlite").exists() {
        make_db(&home);
    }
    home
}

fn make_db(home: &Path) {
    let schema = fs::read_to_string(codex_dir().join("state_5.schema.sql")).unwrap();
    let conn = rusqlite::Connection::open(home.join("state_5.sqlite")).unwrap();
    conn.execute_batch(&schema).unwrap();
    let rows: Value =
        serde_json::from_slice(&fs::read(home.join("state_5.threads.json")).unwrap()).unwrap();
    for t in rows["threads"].as_array().unwrap() {
        let obj = t.as_object().unwrap();
        let cols: Vec<&str> = obj.keys().map(String::as_str).collect();
        let sql = format!(
            "INSERT INTO threads ({}) VALUES ({})",
            cols.join(","),
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
                other => rusqlite::types::Value::Text(other.to_string()),
            })
            .collect();
        conn.execute(&sql, rusqlite::params_from_iter(vals))
            .unwrap();
    }
}

/// Every page file under `home/sessions`.
fn pages(home: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![home.join("sessions")];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The page of `home` whose file name ends with `tail` (`<threadId>.jsonl`,
/// `_<pageId>.jsonl`).
fn page(home: &Path, tail: &str) -> PathBuf {
    pages(home)
        .into_iter()
        .find(|p| p.to_string_lossy().ends_with(tail))
        .unwrap_or_else(|| panic!("no page *{tail}"))
}

/// The first line of a page (plain or zstd), parsed.
fn session_meta(path: &Path) -> Value {
    let bytes = fs::read(path).unwrap();
    let bytes = if path.extension().is_some_and(|x| x == "zst") {
        sessionfs::model::codex::files::decompress(&bytes[..], 1 << 30).unwrap()
    } else {
        bytes
    };
    let first = bytes.split(|&b| b == b'\n').next().unwrap();
    serde_json::from_slice(first).unwrap()
}

/// The project folder of a `cwd`, as LAYOUT.md says: every `/` and `.` becomes `-`.
fn project_of(cwd: &str) -> String {
    cwd.replace(['/', '.'], "-")
}

/// Thread id → its project folder, from its first page's `session_meta.cwd`.
fn projects(home: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for p in pages(home) {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let stem = name.trim_end_matches(".zst").trim_end_matches(".jsonl");
        let ids = &stem["rollout-2026-12-01T19-38-31-".len()..];
        if ids.contains('_') {
            continue; // a later page: its thread is named by its first page
        }
        let meta = session_meta(&p);
        out.insert(
            ids.to_string(),
            project_of(meta["payload"]["cwd"].as_str().unwrap()),
        );
    }
    out
}

/// Whether thread `id` has no plain first page, only a `.jsonl.zst` one.
fn compressed_only(home: &Path, id: &str) -> bool {
    let first: Vec<String> = pages(home)
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|n| n.contains(&format!("-{id}.jsonl")))
        .collect();
    first.iter().all(|n| n.ends_with(".zst"))
}

/// `contexts/<threadId>.contexts.json` of a set: thread id → point id → expected.
fn expected(set: &str) -> BTreeMap<String, serde_json::Map<String, Value>> {
    let dir = codex_dir()
        .join(set.trim_end_matches("-zst"))
        .join("contexts");
    let mut out = BTreeMap::new();
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let Some(thread) = name.strip_suffix(".contexts.json") else {
            continue;
        };
        let v: Value = serde_json::from_slice(&fs::read(&p).unwrap()).unwrap();
        out.insert(thread.to_string(), v.as_object().unwrap().clone());
    }
    out
}

fn without_id(v: &Value) -> Value {
    let mut v = v.clone();
    v.as_object_mut().unwrap().remove("id");
    v
}

/// Whether `got` (a `context.json` read through the mount) is Codex's `want`: every item
/// serialized the same (key order as stored), the items Codex inserted (`aborted`
/// outputs, whose ids are not derived) compared without their id. `None` when equal.
fn differs(got: &Value, want: &Value) -> Option<String> {
    let input = want["input"].as_array().unwrap();
    let inserted: Vec<usize> = want
        .get("inserted")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|i| i["index"].as_u64().unwrap() as usize)
                .collect()
        })
        .unwrap_or_default();
    let Some(got) = got.as_array() else {
        return Some("not a JSON array".into());
    };
    if got.len() != input.len() {
        return Some(format!("{} items, Codex sent {}", got.len(), input.len()));
    }
    for (i, (g, w)) in got.iter().zip(input).enumerate() {
        let same = if inserted.contains(&i) {
            without_id(g) == without_id(w)
                && g.as_object()
                    .unwrap()
                    .keys()
                    .eq(w.as_object().unwrap().keys())
        } else {
            // Serialized: the key order as stored counts too.
            serde_json::to_string(g).unwrap() == serde_json::to_string(w).unwrap()
        };
        if !same {
            return Some(format!("item {i}: {g} instead of {w}"));
        }
    }
    None
}

/// Mounts the Codex home `home` (in `dir`) as a sessions directory.
fn mount_home(dir: tempfile::TempDir, home: &Path) -> Mount {
    Mount::sessions_dir(dir, Some(home), &[], &[])
}

/// `cat` of every file in `files` (relative to `cwd`), in one shell: their texts.
fn cat_all(cwd: &Path, files: &[String]) -> Vec<String> {
    let script = files
        .iter()
        .map(|f| format!("cat '{f}' && printf '\\0'"))
        .collect::<Vec<_>>()
        .join(" && ");
    let out = sh(&script, cwd).ok();
    let mut parts: Vec<String> = out.stdout.split('\0').map(str::to_owned).collect();
    parts.pop();
    assert_eq!(parts.len(), files.len());
    parts
}

fn readlink(p: &Path) -> String {
    fs::read_link(p)
        .unwrap_or_else(|e| panic!("readlink {}: {e}", p.display()))
        .to_string_lossy()
        .into_owned()
}

/// The entry id a `leaf` or `branches/X` link names (its last component).
fn link_id(p: &Path) -> String {
    readlink(p).rsplit('/').next().unwrap().to_string()
}

/// What every fixture thread of `set` reads through a mount of its home: every point's
/// `context.json`, the leaf, the `tree` line of every point, its KIND file.
/// Returns (threads, points) checked.
fn every_point_reads_as_codex_sends_it(set: &str) -> (usize, usize) {
    let dir = tempdir();
    let home = home_copy(dir.path(), set);
    let projects = projects(&home);
    let m = mount_home(dir, &home);
    let mut differ = Vec::new();
    let (mut threads, mut points) = (0, 0);
    // The projects are those of the threads' cwds, each listing its threads.
    let mut want_projects: Vec<&String> = projects.values().collect();
    want_projects.sort();
    want_projects.dedup();
    let listed = try_ls(&m.mnt).unwrap();
    for p in &want_projects {
        assert!(listed.contains(p), "{p} not in {listed:?}");
    }
    for (thread, points_of) in expected(set) {
        // own-zst holds some of own's threads.
        let Some(project) = projects.get(&thread) else {
            assert!(set.ends_with("-zst"), "{set}: no page of {thread}");
            continue;
        };
        assert!(
            try_ls(&m.mnt.join(project)).unwrap().contains(&thread),
            "{project} does not list {thread}"
        );
        threads += 1;
        let tdir = m.mnt.join(project).join(&thread);
        let ids: Vec<&String> = points_of.keys().collect();
        let files: Vec<String> = ids
            .iter()
            .map(|p| format!(".id/{p}/context.json"))
            .collect();
        for ((p, text), want) in ids
            .iter()
            .zip(cat_all(&tdir, &files))
            .zip(points_of.values())
        {
            points += 1;
            let got: Value = match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(e) => {
                    differ.push(format!("{thread} {p}: not JSON ({e}): {text:.200}"));
                    continue;
                }
            };
            if let Some(why) = differs(&got, want) {
                differ.push(format!("{thread} {p} ({}): {why:.300}", want["via"]));
            }
            if want.get("leaf") == Some(&Value::Bool(true)) {
                assert_eq!(&link_id(&tdir.join("leaf")), *p, "{thread}: the leaf");
            }
        }
        // Every point has one KIND file that reads as text, and a line in `tree`.
        let tree = fs::read_to_string(tdir.join("tree")).unwrap();
        for p in &ids {
            let d = tdir.join(".id").join(p);
            let kind: Vec<String> = try_ls(&d)
                .unwrap()
                .into_iter()
                .filter(|n| {
                    !matches!(
                        n.as_str(),
                        "reply"
                            | "fork"
                            | "forks"
                            | "entry.json"
                            | "context"
                            | "context.json"
                            | "cost"
                            | "cost.json"
                            | "parent"
                            | "request"
                            | "request.json"
                    ) && !n.starts_with("image-")
                        // A child's link, `<pageId>:<ordinal>`.
                        && !n.contains(':')
                })
                .collect();
            assert_eq!(kind.len(), 1, "{thread} {p}: {kind:?}");
            let text = fs::read_to_string(d.join(&kind[0]))
                .unwrap_or_else(|e| panic!("{thread} {p} {}: {e}", kind[0]));
            assert!(!text.is_empty() || kind[0] == "reasoning", "{thread} {p}");
            assert!(
                tree.contains(p.as_str()),
                "{thread}: {p} not in tree:\n{tree}"
            );
        }
    }
    assert!(
        differ.is_empty(),
        "{set}: {} of {points} contexts differ from Codex's:\n{}",
        differ.len(),
        differ.join("\n")
    );
    (threads, points)
}

// §3, §5: every point of the kit's sample threads (exec, resume, fork, tools, images, a
// truncated output, compaction, a subagent, an API error, a TUI rewind and /compact).
#[test]
fn every_sample_point_reads_through_the_mount_as_codex_sends_it() {
    assert_eq!(every_point_reads_as_codex_sends_it("samples"), (11, 96));
}

// The same for sessionfs's own threads (a fork of a fork, rewinds inside a fork and
// across pages, parallel calls that fail, an interrupted turn, a compaction then a
// rewind) ...
#[test]
fn every_own_point_reads_through_the_mount_as_codex_sends_it() {
    let (threads, points) = every_point_reads_as_codex_sends_it("own");
    assert_eq!(threads, 10);
    assert!(points >= 124, "{points}");
}

// ... and with the base page of a fork chain compressed (§8): the thread whose only
// page it is opens from it, and the two forks that read it as their history read the
// same.
#[test]
fn a_compressed_page_reads_through_the_mount_as_its_plain_form() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "own-zst");
    assert!(compressed_only(&home, FF_A));
    drop(dir);
    let (threads, points) = every_point_reads_as_codex_sends_it("own-zst");
    assert_eq!(threads, 3);
    assert!(points > 0);
}

// §8: a thread whose only page is compressed is entered like any (no ERROR), and when
// Codex makes the page plain and appends to it, the new line shows up.
#[test]
fn a_compressed_only_thread_opens_and_follows_codex_making_it_plain() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "own-zst");
    let zst = page(&home, &format!("{FF_A}.jsonl.zst"));
    let m = mount_home(dir, &home);
    let t = m.mnt.join("-home-dev-src-forkfork").join(FF_A);
    let listed = try_ls(&t).unwrap();
    assert!(!listed.contains(&"ERROR".to_string()), "{listed:?}");
    assert_eq!(link_id(&t.join("leaf")), format!("{FF_A}:32"));
    let tree = fs::read_to_string(t.join("tree")).unwrap();
    assert!(tree.contains("[[QA1]] What is 2+2?"), "{tree}");
    assert!(
        fs::read_to_string(t.join("cost"))
            .unwrap()
            .contains("session: tokens 30,809 ")
    );
    // Codex resumes it: the plain page written, the compressed one removed, then a line
    // appended.
    let plain = zst.with_extension("");
    let mut bytes = sessionfs::model::codex::files::read_page(&zst).unwrap();
    fs::write(&plain, &bytes).unwrap();
    fs::remove_file(&zst).unwrap();
    bytes.extend_from_slice(user_line(36, "[[LIVE]] after the swap").as_bytes());
    fs::write(&plain, &bytes).unwrap();
    let want = format!("{FF_A}:36");
    assert!(
        wait_until(DEADLINE, || fs::read_link(t.join("leaf"))
            .is_ok_and(|l| l.to_string_lossy().ends_with(&want))),
        "the leaf stayed {}",
        link_id(&t.join("leaf"))
    );
    assert_eq!(
        fs::read_to_string(t.join(format!(".id/{want}/user"))).unwrap(),
        "[[LIVE]] after the swap\n"
    );
}

// Usage (LAYOUT.md "Usage", Codex): each request once, from its token_usage_record, at
// its response's first output; a branch sums its own turns, as Codex's own running sum
// does; the rewound turns are dead ends; `sessionfs usage` agrees.
#[test]
fn cost_sums_each_codex_request_once_per_branch() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "own");
    let first_page = page(&home, &format!("{TUI2}.jsonl"));
    let m = mount_home(dir, &home);
    let t = m.mnt.join("-home-dev-src-tui2").join(TUI2);
    let cost = fs::read_to_string(t.join("cost")).unwrap();
    for want in [
        "session: tokens 93,173 (input 92,769, output 404, cache read 0, cache write 0), cost $0.1200, 7 requests",
        "current branch (01a233fe-67a5-7ce3-936c-a4ebae3b2ab1:26): tokens 25,302 ",
        "dead ends: tokens 67,871 ",
        "branch 01a233fe-0c87-77b1-a70c-2d30532613c3:33: tokens 40,643 ",
        "model gpt-5-codex: tokens 93,173 ",
    ] {
        assert!(cost.contains(want), "no {want:?} in:\n{cost}");
    }
    // The first answer: its request counted there, 13,457 tokens (Codex's own count).
    let answer = fs::read_to_string(t.join(format!(".id/{TUI2}:10/cost"))).unwrap();
    assert!(
        answer.starts_with(&format!(
            "id: {TUI2}:10\nentry: message gpt-5-codex, tokens 13,457 (input 13,410, output 47,"
        )),
        "{answer}"
    );
    // The second: reasoning then an answer; the request counts at the reasoning.
    let answer2 = fs::read_to_string(t.join(format!(".id/{TUI2}:22/cost"))).unwrap();
    assert!(
        answer2.starts_with(&format!(
            "id: {TUI2}:22\nentry: part of a reply counted at {TUI2}:20"
        )),
        "{answer2}"
    );
    assert!(answer2.contains("to here: tokens 27,048 "), "{answer2}");
    let leaf: Value =
        serde_json::from_str(&fs::read_to_string(t.join("leaf/cost.json")).unwrap()).unwrap();
    assert_eq!(leaf["toHere"]["totalTokens"], 25_302);
    // The grep users run finds the figures.
    let out = sh("grep -r 'dead ends' .", &t).ok();
    assert!(
        out.stdout.contains("dead ends: tokens 67,871"),
        "{}",
        out.stdout
    );
    // `sessionfs usage` of the page agrees.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sessionfs"))
        .args(["usage", "--json"])
        .arg(&first_page)
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["totals"]["totalTokens"], 93_173, "{v}");
}

const TUI: &str = "01a2331d-9d4a-7781-acec-f35cf40a4d8b";
const QA: &str = "01a2331d-6282-7e72-8cca-35fb82ba4618";
const QA_FORK: &str = "01a2331d-68ff-76e1-bf99-c1ba471b9285";
const OWN: &str = "01a23400-e6d3-71a0-9a66-4dd95b7695d2";
const OWN_FORK: &str = "01a23400-f640-7c03-91ec-79c99c0b6e60";
const PARFAIL: &str = "01a233fd-8e4f-7f93-83c7-b38d978b73dc";
const FF_A: &str = "01a233fc-f62c-79e0-b2f3-257e7f73df38";
const FF_B: &str = "01a233fd-2142-7c21-82a7-deda48f72fc4";
const TUI2: &str = "01a233fd-df11-70f1-ad16-33bfb8c9f2c5";

// §7: `name` is the thread's name in state_5.sqlite, else its title (the first prompt);
// `session.json` is the thread's first `session_meta` payload.
#[test]
fn name_and_session_json_come_from_codex_state_and_session_meta() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let m = mount_home(dir, &home);
    let tui = m.mnt.join("-home-dev-src-tui").join(TUI);
    assert_eq!(
        fs::read_to_string(tui.join("name")).unwrap(),
        "TUI rewind demo\n"
    );
    let qa = m.mnt.join("-home-dev-src-qa").join(QA);
    assert_eq!(
        fs::read_to_string(qa.join("name")).unwrap(),
        "[[QA1]] What is 2+2?\n"
    );
    let meta: Value = serde_json::from_slice(&fs::read(qa.join("session.json")).unwrap()).unwrap();
    assert_eq!(meta["id"], QA, "{meta}");
    assert_eq!(meta["cwd"], "/home/dev/src/qa", "{meta}");
    assert_eq!(meta["cli_version"], "0.171.0", "{meta}");
}

// §5.6: an image the user sent is decoded beside the message's text, which names it.
#[test]
fn images_are_decoded_beside_their_message() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let m = mount_home(dir, &home);
    let e = m
        .mnt
        .join("-home-dev-src-image/01a2331d-7d10-7d21-8640-338a18f14f80/.id")
        .join("01a2331d-7d10-7d21-8640-338a18f14f80:7");
    let text = fs::read_to_string(e.join("user")).unwrap();
    assert!(text.contains("[image: image-1.png]"), "{text}");
    let png = fs::read(e.join("image-1.png")).unwrap();
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n"),
        "{:?}",
        &png[..8.min(png.len())]
    );
}

/// The point id of the last `response_item`/`compacted` line of `base` within its first
/// `offset` bytes: where a page with that `history_base` hangs (§3.4).
fn base_end_point(base: &Path, offset: u64) -> String {
    let bytes = fs::read(base).unwrap();
    let name = base.file_name().unwrap().to_string_lossy().into_owned();
    // `rollout-<stamp>-<threadId>[_<pageId>].jsonl`: the page id is the last uuid.
    let ids = &name.trim_end_matches(".jsonl")["rollout-2026-12-01T19-38-31-".len()..];
    let page_id = ids.rsplit('_').next().unwrap();
    let mut at = 0u64;
    let mut last = None;
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        at += line.len() as u64;
        if at > offset {
            break;
        }
        let v: Value = serde_json::from_slice(line).unwrap();
        if v["type"] == "response_item" || v["type"] == "compacted" {
            last = Some(format!("{page_id}:{}", v["ordinal"]));
        }
    }
    last.unwrap()
}

// §3.4: the TUI thread's rewind page branches off where its base ends: its first entry's
// parent is the base's last entry within `end_byte_offset`, both branches are listed in
// `branches/`, and the leaf is on the current (rewind) page.
#[test]
fn a_rewind_page_is_a_branch_where_its_base_ends() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let rewind = page(
        &home,
        &format!("{TUI}_01a2331d-e874-78f0-936a-c859781591a5.jsonl"),
    );
    let base = page(&home, &format!("{TUI}.jsonl"));
    let hb = session_meta(&rewind)["payload"]["history_base"].clone();
    let fork_point = base_end_point(&base, hb["end_byte_offset"].as_u64().unwrap());
    let m = mount_home(dir, &home);
    let t = m.mnt.join("-home-dev-src-tui").join(TUI);
    let branches = try_ls(&t.join("branches")).unwrap();
    assert_eq!(branches.len(), 2, "{branches:?}");
    // The first entry of the rewind page hangs under fork_point, beside the dead branch.
    let children: Vec<String> = try_ls(&t.join(".id").join(&fork_point))
        .unwrap()
        .into_iter()
        .filter(|n| n.contains(':'))
        .collect();
    assert_eq!(children.len(), 2, "{fork_point}: {children:?}");
    assert!(
        children
            .iter()
            .any(|c| c.starts_with("01a2331d-e874-78f0-936a-c859781591a5:")),
        "{children:?}"
    );
    assert!(link_id(&t.join("leaf")).starts_with("01a2331d-e874-78f0-936a-c859781591a5:"));
    // Each branch link leads to an entry directory with a context.
    for b in branches {
        let ctx = t.join("branches").join(&b).join("context.json");
        let v: Value = serde_json::from_slice(&fs::read(&ctx).unwrap()).unwrap();
        assert!(v.as_array().is_some_and(|a| !a.is_empty()), "{b}");
    }
}

// The readable `context` starts with the base instructions (§5.5), then the items, each
// under the `## ROLE` heading every agent's `context` has (LAYOUT.md).
#[test]
fn the_readable_context_shows_the_instructions_first() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let m = mount_home(dir, &home);
    let t = m.mnt.join("-home-dev-src-qa").join(QA);
    let text = fs::read_to_string(t.join("leaf/context")).unwrap();
    let instr = text.find("You are").expect("the instructions");
    let prompt = text.find("[[QA1]] What is 2+2?").expect("the first prompt");
    assert!(instr < prompt, "{text:.2000}");
    // Each part under a `## ` heading, as in every agent's `context`.
    assert!(text.starts_with("## instructions\n"), "{text:.200}");
    assert!(
        text.contains("\n## user\n[[QA1]] What is 2+2?\n"),
        "{text:.2000}"
    );
}

// A fork is a session of its own that shows its whole history, the inherited part read
// from its parent's bytes; `forked-from` at its root leads to the parent's entry it
// forked after, whose `forks/` leads back to the fork (LAYOUT.md "Forks").
#[test]
fn a_fork_shows_its_inherited_history_and_links_to_its_parent() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "own");
    let fork_page = page(&home, &format!("{OWN_FORK}.jsonl"));
    let parent_page = page(&home, &format!("{OWN}.jsonl"));
    let hb = session_meta(&fork_page)["payload"]["history_base"].clone();
    let origin = base_end_point(&parent_page, hb["end_byte_offset"].as_u64().unwrap());
    let m = mount_home(dir, &home);
    let proj = m.mnt.join("-home-dev-src-own");
    let fork = proj.join(OWN_FORK);
    // The parent's first prompt is in the fork's tree and its entry in the fork's .id/.
    let tree = fs::read_to_string(fork.join("tree")).unwrap();
    assert!(tree.contains(&format!("{OWN}:7")), "{tree}");
    let prompt = fs::read_to_string(fork.join(format!(".id/{OWN}:7/user"))).unwrap();
    assert!(prompt.starts_with("[[LOOP]] Héllo wörld"), "{prompt}");
    // fork → parent.
    let from = fork.join("forked-from");
    let target = readlink(&from);
    assert!(target.ends_with(&format!("{OWN}/.id/{origin}")), "{target}");
    assert!(!target.starts_with('/'), "{target}: relative");
    let kinds = try_ls(&from).unwrap();
    assert!(kinds.contains(&"assistant".to_string()), "{kinds:?}");
    // parent → fork.
    let forks = proj.join(OWN).join(".id").join(&origin).join("forks");
    assert_eq!(try_ls(&forks).unwrap(), vec![OWN_FORK.to_string()]);
    let back = forks.join(OWN_FORK);
    assert!(!readlink(&back).starts_with('/'));
    assert_eq!(
        fs::read_to_string(back.join("name")).unwrap(),
        "[[OWN2]] Deux, in the TUI.\n"
    );
    // The nested directory of the origin shows the same `forks`.
    let nested = try_ls(&fork.join("forked-from").join("forks")).unwrap();
    assert_eq!(nested, vec![OWN_FORK.to_string()]);
    // A thread that is no fork has no `forked-from`; an entry without forks no `forks`.
    assert!(!proj.join(OWN).join("forked-from").exists());
    assert!(!proj.join(OWN).join(format!(".id/{OWN}:7/forks")).exists());
    // The fork of a fork leads to the middle thread, from which the first is reached.
    let ff = m.mnt.join("-home-dev-src-forkfork");
    let mid = "01a233fd-2142-7c21-82a7-deda48f72fc4";
    let last = "01a233fd-3568-7183-be4b-3d742dd8012f";
    assert!(readlink(&ff.join(last).join("forked-from")).contains(&format!("{mid}/.id/")));
    assert!(readlink(&ff.join(mid).join("forked-from")).contains(&format!("{FF_A}/.id/")));
}

// §1: the `sessions/` folder mounts like its home; one rollout file mounts alone, with
// the pages its history reads (a fork's parent page); `sessionfs mount MNT` shows
// `codex/` beside the other agents when CODEX_HOME has sessions.
#[test]
fn the_sessions_folder_one_rollout_file_and_the_every_agent_mount() {
    // sessions/
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let sessions = home.join("sessions");
    let m = Mount::sessions_dir(dir, Some(&sessions), &[], &[]);
    let qa = m.mnt.join("-home-dev-src-qa");
    assert_eq!(
        try_ls(&qa).unwrap(),
        vec![QA.to_string(), QA_FORK.to_string()]
    );
    assert!(
        fs::read_to_string(m.mnt.join("-home-dev-src-tui").join(TUI).join("name"))
            .unwrap()
            .starts_with("TUI rewind demo")
    );
    drop(m);

    // One rollout file: the fork's first page. Its inherited entries read from the
    // parent's page, which the mount finds beside it.
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let file = page(&home, &format!("{QA_FORK}.jsonl"));
    let want = expected("samples");
    let m = Mount::start(dir, file, &[]);
    let leaf = link_id(&m.mnt.join("leaf"));
    let (lp, lw) = want[QA_FORK]
        .iter()
        .find(|(_, v)| v.get("leaf") == Some(&Value::Bool(true)))
        .unwrap();
    assert_eq!(&leaf, lp);
    let got: Value =
        serde_json::from_slice(&fs::read(m.mnt.join("leaf/context.json")).unwrap()).unwrap();
    assert_eq!(differs(&got, lw), None);
    // The parent's first prompt, inherited.
    assert!(m.mnt.join(format!(".id/{QA}:7")).is_dir());
    let tree = fs::read_to_string(m.mnt.join("tree")).unwrap();
    assert!(tree.contains("[[QA1]] What is 2+2?"), "{tree}");
    drop(m);

    // The every-agent mount: codex/ beside pi/.
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let pi = dir.path().join("pi-agent");
    fs::create_dir_all(pi.join("sessions/--w--")).unwrap();
    fs::copy(
        fixture("small.jsonl"),
        pi.join(
            "sessions/--w--/2026-01-01T00-00-00-000Z_aaaaaaaa-0000-0000-0000-000000000001.jsonl",
        ),
    )
    .unwrap();
    let h = dir.path().to_path_buf();
    let m = Mount::sessions_dir(
        dir,
        None,
        &[],
        &[
            ("HOME", h.as_os_str()),
            ("PI_CODING_AGENT_DIR", pi.as_os_str()),
            ("CODEX_HOME", home.as_os_str()),
        ],
    );
    assert_eq!(try_ls(&m.mnt).unwrap(), vec!["codex", "pi"]);
    let tui = m.mnt.join("codex/-home-dev-src-tui").join(TUI);
    assert_eq!(
        fs::read_to_string(tui.join("name")).unwrap(),
        "TUI rewind demo\n"
    );
    // A fork's links work from inside codex/ too.
    let back = m
        .mnt
        .join("codex/-home-dev-src-qa")
        .join(QA_FORK)
        .join("forked-from");
    assert!(try_ls(&back).is_some(), "{}", readlink(&back));
}

/// A `response_item` user line as Codex takes it (§9.1), with `ordinal`.
fn user_line(ordinal: u64, text: &str) -> String {
    let v = serde_json::json!({
        "timestamp": "2026-12-02T01:00:00.000Z",
        "ordinal": ordinal,
        "type": "response_item",
        "payload": {"type": "message", "role": "user",
                    "content": [{"type": "input_text", "text": text}]}
    });
    format!("{v}\n")
}

fn last_ordinal(page: &Path) -> u64 {
    let text = fs::read_to_string(page).unwrap();
    let last = text.lines().last().unwrap();
    serde_json::from_str::<Value>(last).unwrap()["ordinal"]
        .as_u64()
        .unwrap()
}

// Live (§1, LAYOUT.md "Live"): a line Codex appends to the current page and a new page
// (a TUI rewind) written while mounted show up: the new entry, the new leaf.
#[test]
fn lines_and_pages_codex_writes_while_mounted_show_up() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "own");
    // tui2's fourth page, the current one, is held back and written once mounted.
    let p4 = page(&home, "_01a233fe-67a5-7ce3-936c-a4ebae3b2ab1.jsonl");
    let held = dir.path().join("held.jsonl");
    fs::rename(&p4, &held).unwrap();
    // forkfork's fork of a fork too, written once mounted.
    let mid = "01a233fd-2142-7c21-82a7-deda48f72fc4";
    let last = "01a233fd-3568-7183-be4b-3d742dd8012f";
    let fork_page = page(&home, &format!("{last}.jsonl"));
    let origin = base_end_point(
        &page(&home, &format!("{mid}.jsonl")),
        session_meta(&fork_page)["payload"]["history_base"]["end_byte_offset"]
            .as_u64()
            .unwrap(),
    );
    let held_fork = dir.path().join("held-fork.jsonl");
    fs::rename(&fork_page, &held_fork).unwrap();
    let cur = page(&home, &format!("{PARFAIL}.jsonl"));
    let m = mount_home(dir, &home);
    // A line appended to parfail's page.
    let t = m.mnt.join("-home-dev-src-parfail").join(PARFAIL);
    let before = link_id(&t.join("leaf"));
    let n = last_ordinal(&cur) + 1;
    let mut f = fs::OpenOptions::new().append(true).open(&cur).unwrap();
    std::io::Write::write_all(&mut f, user_line(n, "[[LIVE]] appended").as_bytes()).unwrap();
    drop(f);
    let want = format!("{PARFAIL}:{n}");
    assert!(
        wait_until(DEADLINE, || fs::read_link(t.join("leaf"))
            .is_ok_and(|l| l.to_string_lossy().ends_with(&want))),
        "the leaf stayed {before}"
    );
    assert_eq!(
        fs::read_to_string(t.join(format!(".id/{want}/user"))).unwrap(),
        "[[LIVE]] appended\n"
    );
    // tui2's page 4 appears: the leaf moves to it, and its branch is listed.
    let t2 = m.mnt.join("-home-dev-src-tui2").join(TUI2);
    let branches = try_ls(&t2.join("branches")).unwrap().len();
    fs::rename(&held, &p4).unwrap();
    assert!(
        wait_until(DEADLINE, || fs::read_link(t2.join("leaf")).is_ok_and(|l| l
            .to_string_lossy()
            .contains("01a233fe-67a5-7ce3-936c-a4ebae3b2ab1:"))),
        "the new page did not become the leaf"
    );
    assert!(try_ls(&t2.join("branches")).unwrap().len() > branches);
    // The fork appears in its project, and in `forks/` of the entry it continues.
    let ff = m.mnt.join("-home-dev-src-forkfork");
    let forks = ff.join(mid).join(".id").join(&origin).join("forks");
    assert!(!forks.exists());
    fs::rename(&held_fork, &fork_page).unwrap();
    assert!(
        wait_until(DEADLINE, || try_ls(&ff)
            .is_some_and(|l| l.contains(&last.to_string()))),
        "the fork is not listed"
    );
    assert!(
        wait_until(DEADLINE, || try_ls(&forks) == Some(vec![last.to_string()])),
        "the fork is not in {}",
        forks.display()
    );
    assert!(readlink(&ff.join(last).join("forked-from")).ends_with(&format!("{mid}/.id/{origin}")));
}

/// `(type, payload.type)` of each line of `bytes`.
fn shapes(bytes: &[u8]) -> Vec<(String, String)> {
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            let v: Value = serde_json::from_slice(l).unwrap();
            (
                v["type"].as_str().unwrap().to_string(),
                v["payload"]["type"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn ordinals(bytes: &[u8]) -> Vec<u64> {
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            serde_json::from_slice::<Value>(l).unwrap()["ordinal"]
                .as_u64()
                .unwrap()
        })
        .collect()
}

fn accepted(case: &str) -> Vec<u8> {
    fs::read(codex_dir().join(format!("accepts/{case}.written.jsonl"))).unwrap()
}

fn rollout_path(home: &Path, thread: &str) -> String {
    let conn = rusqlite::Connection::open_with_flags(
        home.join("state_5.sqlite"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    conn.query_row(
        "SELECT rollout_path FROM threads WHERE id = ?1",
        [thread],
        |r| r.get(0),
    )
    .unwrap()
}

// §9.1, LAYOUT.md "Replies": `echo … > reply` at the leaf appends to the current page
// the lines Codex resumed in `accepts/leaf-exec` (same kinds, ordinals continuing), the
// old bytes untouched; the mount shows the new entry as the leaf.
#[test]
fn a_reply_at_the_leaf_appends_what_codex_resumes() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "own");
    let cur = page(&home, &format!("{PARFAIL}.jsonl"));
    let old = fs::read(&cur).unwrap();
    let m = mount_home(dir, &home);
    let t = m.mnt.join("-home-dev-src-parfail").join(PARFAIL);
    let text = "[[APPENDED]] through the mount: é — 日本語";
    sh(&format!("echo '{text}' > leaf/reply"), &t).ok();
    let now = fs::read(&cur).unwrap();
    assert_eq!(&now[..old.len()], &old[..], "old bytes changed");
    let added = &now[old.len()..];
    assert_eq!(shapes(added), shapes(&accepted("leaf-exec")));
    let last = *ordinals(&old).last().unwrap();
    let want: Vec<u64> = (last + 1..).take(shapes(added).len()).collect();
    assert_eq!(ordinals(added), want);
    let user = added
        .split(|&b| b == b'\n')
        .map(|l| serde_json::from_slice::<Value>(l).unwrap_or_default())
        .find(|v| v["type"] == "response_item")
        .unwrap();
    assert_eq!(user["payload"]["role"], "user");
    assert_eq!(user["payload"]["content"][0]["text"], text);
    // The mount shows it: the leaf is the new entry, its context ends with it.
    let id = format!("{PARFAIL}:{}", user["ordinal"]);
    assert!(
        wait_until(DEADLINE, || fs::read_link(t.join("leaf"))
            .is_ok_and(|l| l.to_string_lossy().ends_with(&id))),
        "the leaf is not {id}"
    );
    assert_eq!(
        fs::read_to_string(t.join(format!(".id/{id}/user"))).unwrap(),
        format!("{text}\n")
    );
    let ctx: Value =
        serde_json::from_slice(&fs::read(t.join("leaf/context.json")).unwrap()).unwrap();
    assert_eq!(
        ctx.as_array().unwrap().last().unwrap()["content"][0]["text"],
        text
    );
    // The current page is still the current page.
    assert!(rollout_path(&home, PARFAIL).ends_with(&format!("{PARFAIL}.jsonl")));
}

// §9.2, LAYOUT.md "Replies": a reply at an earlier entry writes a new page shaped like a
// TUI rewind (the lines of `accepts/rewind-page1`), based on the entry's page up to the
// start of the next turn (the answer's turn closes with its token_usage_record,
// token_count and task_complete, which the base keeps, as Codex's own rewind does), and
// makes it current in state_5.sqlite; the mount shows the new branch and its leaf, whose
// `cost` counts the turn's request as Codex's running sum does.
#[test]
fn a_reply_at_an_earlier_entry_writes_a_rewind_page_made_current() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "own");
    let first = page(&home, &format!("{FF_A}.jsonl"));
    let old = fs::read(&first).unwrap();
    let before = pages(&home);
    let m = mount_home(dir, &home);
    let t = m.mnt.join("-home-dev-src-forkfork").join(FF_A);
    let branches = try_ls(&t.join("branches")).unwrap().len();
    let point = format!("{FF_A}:10");
    let text = "[[APPENDED]] at an earlier entry";
    sh(&format!("echo '{text}' > '.id/{point}/reply'"), &t).ok();
    assert_eq!(fs::read(&first).unwrap(), old, "the base page changed");
    let new: Vec<PathBuf> = pages(&home)
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    assert_eq!(new.len(), 1, "{new:?}");
    let name = new[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("rollout-") && name.contains(&format!("-{FF_A}_")),
        "{name}"
    );
    let bytes = fs::read(&new[0]).unwrap();
    assert_eq!(shapes(&bytes), shapes(&accepted("rewind-page1")));
    let meta: Value = serde_json::from_slice(bytes.split(|&b| b == b'\n').next().unwrap()).unwrap();
    let hb = &meta["payload"]["history_base"];
    assert_eq!(hb["thread_id"], FF_A);
    // Ordinals 11-14 (token_usage_record, token_count, task_complete, the next turn's
    // thread_settings_applied) stay in the base; 15 is the next turn's task_started.
    assert_eq!(hb["end_ordinal_exclusive"], 15);
    let mut end = 0;
    let mut sum = None;
    for l in old.split_inclusive(|&b| b == b'\n') {
        let v: Value = serde_json::from_slice(l).unwrap();
        if v["ordinal"] == 15 {
            break;
        }
        end += l.len() as u64;
        if v["type"] == "token_usage_record" {
            sum = v["payload"]["thread_token_usage"]["total_tokens"].as_u64();
        }
    }
    assert_eq!(hb["end_byte_offset"], end);
    assert_eq!(meta["ordinal"], 15);
    assert_eq!(meta["payload"]["id"], FF_A);
    // Current in the database (the row names the new file by its full path).
    assert_eq!(rollout_path(&home, FF_A), new[0].to_string_lossy());
    // The mount: a new branch whose leaf is the reply, under the entry replied to.
    let page_id = name
        .trim_end_matches(".jsonl")
        .rsplit('_')
        .next()
        .unwrap()
        .to_string();
    assert!(
        wait_until(DEADLINE, || fs::read_link(t.join("leaf"))
            .is_ok_and(|l| l.to_string_lossy().contains(&page_id))),
        "the leaf is not on the new page"
    );
    assert_eq!(try_ls(&t.join("branches")).unwrap().len(), branches + 1);
    assert_eq!(
        fs::read_to_string(t.join("leaf/user")).unwrap(),
        format!("{text}\n")
    );
    let parent = link_id(&t.join("leaf/parent"));
    assert_eq!(parent, point);
    // What the new branch cost so far is Codex's own running sum at the cut.
    let cost = fs::read_to_string(t.join("leaf/cost")).unwrap();
    let to_here = cost.lines().find(|l| l.starts_with("to here:")).unwrap();
    let sum = sum.unwrap().to_string();
    let sum = sum
        .as_bytes()
        .rchunks(3)
        .rev()
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect::<Vec<_>>()
        .join(",");
    assert!(
        to_here.contains(&format!("tokens {sum} ")),
        "{to_here} (Codex: {sum})"
    );
}

// LAYOUT.md "Replies": in a fork's directory, a reply at an entry the fork inherited
// from its parent's page continues the fork: a new page of the fork (named by the
// fork's thread id, its `session_meta` the fork's) based on the parent's page, cut
// where the fork's own base ends; the parent's files and row are untouched, and the
// fork's leaf is the reply. Codex resumed the same lines (`accepts/fork-inherited`).
#[test]
fn a_reply_at_an_inherited_entry_of_a_fork_continues_the_fork() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "own");
    let parent_page = page(&home, &format!("{FF_A}.jsonl"));
    let old = fs::read(&parent_page).unwrap();
    let parent_row = rollout_path(&home, FF_A);
    let before = pages(&home);
    let m = mount_home(dir, &home);
    let proj = m.mnt.join("-home-dev-src-forkfork");
    let a = proj.join(FF_A);
    let b = proj.join(FF_B);
    let a_leaf = readlink(&a.join("leaf"));
    let point = format!("{FF_A}:20");
    assert!(b.join(".id").join(&point).is_dir(), "B inherits {point}");
    let text = "[[APPENDED]] in the fork, at an inherited entry";
    sh(&format!("echo '{text}' > '.id/{point}/reply'"), &b).ok();
    assert_eq!(
        fs::read(&parent_page).unwrap(),
        old,
        "the parent's page changed"
    );
    assert_eq!(
        rollout_path(&home, FF_A),
        parent_row,
        "the parent's row changed"
    );
    let new: Vec<PathBuf> = pages(&home)
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    assert_eq!(new.len(), 1, "{new:?}");
    let name = new[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.contains(&format!("-{FF_B}_")),
        "a page of the fork: {name}"
    );
    let bytes = fs::read(&new[0]).unwrap();
    assert_eq!(shapes(&bytes), shapes(&accepted("fork-inherited")));
    let meta: Value = serde_json::from_slice(bytes.split(|&b| b == b'\n').next().unwrap()).unwrap();
    assert_eq!(meta["payload"]["id"], FF_B);
    assert_eq!(meta["payload"]["forked_from_id"], FF_A);
    let hb = &meta["payload"]["history_base"];
    assert_eq!(hb["thread_id"], FF_A);
    // B was forked at ordinal 24 of A: A's later lines are not B's history.
    assert_eq!(hb["end_ordinal_exclusive"], 24);
    assert_eq!(rollout_path(&home, FF_B), new[0].to_string_lossy());
    let page_id = name
        .trim_end_matches(".jsonl")
        .rsplit('_')
        .next()
        .unwrap()
        .to_string();
    assert!(
        wait_until(DEADLINE, || fs::read_link(b.join("leaf"))
            .is_ok_and(|l| l.to_string_lossy().contains(&page_id))),
        "the fork's leaf is not on its new page"
    );
    assert_eq!(
        fs::read_to_string(b.join("leaf/user")).unwrap(),
        format!("{text}\n")
    );
    assert_eq!(link_id(&b.join("leaf/parent")), point);
    assert_eq!(readlink(&a.join("leaf")), a_leaf, "the parent's leaf moved");
    let reply_id = link_id(&b.join("leaf"));
    assert!(
        !a.join(".id").join(&reply_id).exists(),
        "the reply shows in the parent"
    );
}

// §3.1, §10: a thread whose base page is missing and a page whose last line is torn
// mount without a panic; the damage is reported by `sessionfs check` and in the mount
// (the thread's ERROR file, or the torn line left out), and the rest reads.
#[test]
fn a_damaged_thread_mounts_with_the_damage_reported() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "own");
    // The middle thread of forkfork loses its first page: the last fork's base is gone.
    fs::remove_file(page(&home, "01a233fd-2142-7c21-82a7-deda48f72fc4.jsonl")).unwrap();
    // parfail's page is torn: half its last line, without its newline.
    let cur = page(&home, &format!("{PARFAIL}.jsonl"));
    let whole = fs::read(&cur).unwrap();
    let start = whole[..whole.len() - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    let cut = start + (whole.len() - start) / 2;
    fs::write(&cur, &whole[..cut]).unwrap();
    let out = sessionfs(&[OsStr::new("check"), home.as_os_str()], dir.path());
    assert_ne!(out.code(), Some(0), "{out:?}");
    let said = format!("{}{}", out.stdout, out.stderr);
    assert!(
        said.contains("01a233fd-2142-7c21-82a7-deda48f72fc4"),
        "{said}"
    );
    let m = mount_home(dir, &home);
    let ff = m.mnt.join("-home-dev-src-forkfork");
    let last = ff.join("01a233fd-3568-7183-be4b-3d742dd8012f");
    let listed = try_ls(&last).unwrap();
    if listed == ["ERROR"] {
        let e = fs::read_to_string(last.join("ERROR")).unwrap();
        assert!(e.contains("01a233fd-2142-7c21-82a7-deda48f72fc4"), "{e}");
    } else {
        // Its own entries read; what it inherits from the lost page cannot.
        let tree = fs::read_to_string(last.join("tree")).unwrap();
        assert!(tree.contains("FORK3"), "{tree}");
    }
    // The torn thread reads up to its last whole line.
    let t = m.mnt.join("-home-dev-src-parfail").join(PARFAIL);
    let tree = fs::read_to_string(t.join("tree")).unwrap();
    assert!(!tree.is_empty());
    assert!(fs::read(t.join("leaf/context.json")).is_ok());
    assert!(m.is_mounted());
}

// §1: threads `codex archive` moved to `$CODEX_HOME/archived_sessions/` are listed in
// their projects and read like the others; a fork whose parent was archived still
// reads its inherited history from there.
#[test]
fn archived_threads_are_listed_and_read() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "own");
    let archived_day = home.join("archived_sessions/2026/12/01");
    fs::create_dir_all(&archived_day).unwrap();
    for thread in [PARFAIL, OWN] {
        let p = page(&home, &format!("{thread}.jsonl"));
        fs::rename(&p, archived_day.join(p.file_name().unwrap())).unwrap();
    }
    let m = mount_home(dir, &home);
    let want = expected("own");
    for (project, thread) in [
        ("-home-dev-src-parfail", PARFAIL),
        ("-home-dev-src-own", OWN),
        ("-home-dev-src-own", OWN_FORK),
    ] {
        let pdir = m.mnt.join(project);
        let listed = try_ls(&pdir).unwrap_or_default();
        assert!(
            listed.contains(&thread.to_string()),
            "{project}: {listed:?}"
        );
        let t = pdir.join(thread);
        let (leaf, point) = want[thread]
            .iter()
            .find(|(_, v)| v.get("leaf") == Some(&Value::Bool(true)))
            .unwrap();
        assert_eq!(&link_id(&t.join("leaf")), leaf, "{thread}");
        let got: Value = serde_json::from_str(
            &fs::read_to_string(t.join(format!(".id/{leaf}/context.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(differs(&got, point), None, "{thread}");
    }
}

/// The newest `timestamp` of the lines of the page files `pages`, and the page.
fn newest_line(pages: &[PathBuf]) -> (i64, PathBuf) {
    let mut best = (i64::MIN, PathBuf::new());
    for p in pages {
        for l in fs::read(p).unwrap().split(|&b| b == b'\n') {
            let Ok(v) = serde_json::from_slice::<Value>(l) else {
                continue;
            };
            if let Some(t) = v["timestamp"]
                .as_str()
                .and_then(sessionfs::model::core::js::js_date_ms)
                && t >= best.0
            {
                best = (t, p.clone());
            }
        }
    }
    best
}

/// Every page file of `thread` in `home`.
fn pages_of(home: &Path, thread: &str) -> Vec<PathBuf> {
    pages(home)
        .into_iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().contains(thread))
        .filter(|p| {
            // Its own pages: the thread id right after the time, not a fork's base.
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.get(28..64) == Some(thread)
        })
        .collect()
}

/// Sets every file under `dir` to the same old modification time (what a copy, a
/// restore or a checkout does to them, in one way or another).
fn reset_times(dir: &Path) {
    sh(
        "find . -type f -exec touch -m -d '2020-01-01 00:00:00' {} +",
        dir,
    )
    .ok();
}

// docs/LAYOUT.md "Codex threads", docs/COMMANDS.md `--sessions`: "newest first" is the
// thread's newest activity by Codex's own clock, over all its pages (tui2 has four),
// not a page's modification time: after the files' times were reset, the thread's
// directory carries the newest time its pages' lines hold, `ls -t` lists by it, and
// `sessionfs grep --sessions` prints it, its `--json` naming the page that holds it.
#[test]
fn newest_first_is_each_threads_newest_line_over_all_its_pages() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "own");
    reset_times(&home);
    let (want, newest_page) = newest_line(&pages_of(&home, TUI2));
    let first_page = page(&home, &format!("{TUI2}.jsonl"));
    assert_ne!(
        newest_page, first_page,
        "the fixture's newest line is on a later page"
    );
    // Without a mount.
    let out = sessionfs(
        &[
            "grep",
            "--sessions",
            "--json",
            "-F",
            "[[QA1]]",
            home.to_str().unwrap(),
        ],
        dir.path(),
    )
    .ok();
    let rows: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let row = rows
        .iter()
        .find(|r| r["path"].as_str().unwrap().ends_with(TUI2))
        .unwrap_or_else(|| panic!("no {TUI2} in {rows:?}"));
    let iso = sessionfs::model::core::time::format_iso_ms(want);
    assert_eq!(row["last_activity"], iso.as_str());
    assert_eq!(row["session"], newest_page.to_str().unwrap());
    let times: Vec<i64> = rows
        .iter()
        .map(|r| {
            sessionfs::model::core::js::js_date_ms(r["last_activity"].as_str().unwrap()).unwrap()
        })
        .collect();
    assert!(
        times.windows(2).all(|w| w[0] >= w[1]),
        "not newest first: {times:?}"
    );
    // Through a mount: the thread directory's time, and `ls -t` by it.
    let m = mount_home(dir, &home);
    let proj = m.mnt.join("-home-dev-src-tui2");
    let st = sh(&format!("stat -c %Y {TUI2}"), &proj).ok();
    assert_eq!(st.stdout.trim().parse::<i64>().unwrap(), want / 1000);
    let all = sh("ls -td -- */*", &m.mnt).ok();
    let listed: Vec<&str> = all.stdout.lines().collect();
    assert!(listed.len() > 5, "{listed:?}");
    let mut by_time: Vec<(i64, String)> = listed
        .iter()
        .map(|p| {
            let id = p.rsplit('/').next().unwrap();
            (newest_line(&pages_of(&home, id)).0 / 1000, p.to_string())
        })
        .collect();
    let got = by_time.clone();
    by_time.sort_by_key(|x| std::cmp::Reverse(x.0));
    let secs = |v: &[(i64, String)]| v.iter().map(|x| x.0).collect::<Vec<_>>();
    assert_eq!(secs(&got), secs(&by_time), "ls -t order: {listed:?}");
}

/// The pickers fixture (`scripts/codex-pickers`): what `codex resume --all
/// --include-non-interactive` listed, newest first: each row's name, as the picker
/// prints it (without its time column and its `●` mark).
fn picker_rows() -> Vec<String> {
    let screen = fs::read_to_string(codex_dir().join("pickers/picker.txt")).unwrap();
    screen
        .lines()
        .filter(|l| l.contains(" ago "))
        .map(|l| {
            let rest = l.split(" ago ").nth(1).unwrap().trim();
            rest.trim_start_matches('●').trim().to_string()
        })
        .collect()
}

// docs/LAYOUT.md "Codex threads": the mount lists, names and orders threads as Codex's
// own picker does (measured: tests/fixtures/codex/pickers): a fork is named by the first
// prompt it inherited (Codex's `preview`), a TUI thread by its name; the empty thread
// the picker left (a page of its session_meta alone, no row) is listed nowhere (the
// mount, `sessionfs grep`, `sessionfs usage`) until its first line comes.
#[test]
fn threads_are_listed_named_and_ordered_as_codex_resume_shows_them() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "pickers");
    let rows = picker_rows();
    assert_eq!(rows.len(), 3, "{rows:?}");
    let threads: Value =
        serde_json::from_slice(&fs::read(codex_dir().join("pickers/threads.json")).unwrap())
            .unwrap();
    let empty_page = pages(&home)
        .into_iter()
        .find(|p| fs::read(p).unwrap().iter().filter(|&&b| b == b'\n').count() == 1)
        .expect("the fixture has an empty thread");
    let empty_id = session_meta(&empty_page)["payload"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let u = sessionfs(&["usage", "--json", home.to_str().unwrap()], dir.path()).ok();
    assert!(
        !u.stdout.contains(&empty_id),
        "usage lists the empty thread"
    );
    let g = sessionfs(&["grep", "-c", "", home.to_str().unwrap()], dir.path());
    assert!(!g.stdout.contains(&empty_id), "grep lists the empty thread");
    let m = mount_home(dir, &home);
    let all = sh("ls -td -- */*", &m.mnt).ok();
    let listed: Vec<String> = all.stdout.lines().map(str::to_string).collect();
    assert!(!listed.iter().any(|p| p.contains(&empty_id)), "{listed:?}");
    assert!(
        !try_ls(&m.mnt)
            .unwrap()
            .contains(&"-home-dev-src-empty".to_string())
    );
    // The same names, in the same order (the picker's: last updated first).
    let names = cat_all(
        &m.mnt,
        &listed
            .iter()
            .map(|p| format!("./{p}/name"))
            .collect::<Vec<_>>(),
    );
    let names: Vec<String> = names.iter().map(|n| n.trim_end().to_string()).collect();
    assert_eq!(names, rows, "ls -t order and names: {listed:?}");
    let ids: Vec<&str> = listed
        .iter()
        .map(|p| p.rsplit('/').next().unwrap())
        .collect();
    let order: Vec<&str> = threads
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids, order,
        "the picker's order (threads.json: updated_at desc)"
    );
    // Codex writes the first prompt: the thread is listed.
    let user = "{\"timestamp\":\"2026-12-05T10:00:00.000Z\",\"ordinal\":1,\"type\":\"response_item\",\
        \"payload\":{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"hi\"}]}}\n";
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(&empty_page)
        .unwrap();
    std::io::Write::write_all(&mut f, user.as_bytes()).unwrap();
    drop(f);
    assert!(
        wait_until(DEADLINE, || sh("ls -d -- */*", &m.mnt)
            .stdout
            .contains(&empty_id)),
        "the thread did not appear after its first line"
    );
}

// docs/LAYOUT.md "Codex threads": the model's answer to `/compact` is marked as such
// (KIND `compaction_summary`, and so in `tree`), and its `request` is what Codex sent
// for it: the history up to the last answer, then Codex's compaction prompt (the
// request the real CLI sent: tests/fixtures/codex/pickers/compact-requests), not an
// earlier entry's context.
#[test]
fn a_compaction_summary_is_marked_and_its_request_is_what_codex_sent() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "pickers");
    let sent: Value = {
        let d = codex_dir().join("pickers/compact-requests");
        let f = fs::read_dir(&d).unwrap().next().unwrap().unwrap().path();
        serde_json::from_slice(&fs::read(f).unwrap()).unwrap()
    };
    // The first item is the base instructions, which context.json leaves out.
    let input = sent["body"]["input"].as_array().unwrap()[1..].to_vec();
    let m = mount_home(dir, &home);
    let proj = m.mnt.join("-home-dev-src-tuiq");
    let t = try_ls(&proj).unwrap().pop().unwrap();
    let t = proj.join(t);
    let found = sh("find . -name compaction_summary", &t).ok();
    let path = found
        .stdout
        .lines()
        .next()
        .expect("a compaction_summary entry")
        .to_string();
    let entry = t.join(Path::new(&path).parent().unwrap());
    let text = fs::read_to_string(entry.join("compaction_summary")).unwrap();
    assert!(text.starts_with("Summary:"), "{text}");
    let tree = fs::read_to_string(t.join("tree")).unwrap();
    assert!(tree.contains("compaction_summary: Summary:"), "{tree}");
    let got: Value =
        serde_json::from_slice(&fs::read(entry.join("request.json")).unwrap()).unwrap();
    assert_eq!(got.as_array().unwrap(), &input, "request.json");
    // The readable form ends with the prompt; both are files in .id/ID/, linked from
    // the nested directory.
    let req = fs::read_to_string(entry.join("request")).unwrap();
    assert!(
        req.trim_end().ends_with("seamlessly continue the work."),
        "{req}"
    );
    let id = entry.file_name().unwrap();
    let flat = t.join(".id").join(id);
    assert!(
        fs::symlink_metadata(flat.join("request"))
            .unwrap()
            .is_file()
    );
    assert_eq!(
        readlink(&entry.join("request.json")),
        readlink(&entry.join("cost")).replace("cost", "request.json")
    );
}

// LAYOUT.md, `.id/`: a prefix that several ids share (a Codex page's entries all start
// with its page id) resolves to nothing; a whole id wins over the longer ids it starts.
#[test]
fn an_ambiguous_id_prefix_is_not_there() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "own");
    let m = mount_home(dir, &home);
    let t = m.mnt.join("-home-dev-src-forkfork").join(FF_A);
    let amb = sh(&format!("ls .id/{FF_A}:1"), &t);
    assert_ne!(
        amb.code(),
        Some(0),
        "{FF_A}:1 is :10, :11, …: {}",
        amb.stdout
    );
    assert!(fs::read_link(t.join(format!(".id/{}", &FF_A[..12]))).is_err());
    // `:3` is an id of its own, and the start of `:30` and `:32`.
    let one = sh(&format!("cat .id/{FF_A}:3/meta"), &t).ok();
    assert!(
        one.stdout.starts_with("<environment_context>"),
        "{}",
        one.stdout
    );
}
