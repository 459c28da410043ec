//! Pi 1.6's entries through a real mount, with the programs people use: the system
//! prompt found by `grep -r`, the readable forms of system messages, context edits and
//! usage entries, and the `edited-by` link that leads from an entry to the edit that
//! changes it (docs/LAYOUT.md), following the leaf and appends as they come.
//!
//! Every wait has a deadline (`wait_until`); nothing sleeps blindly.

mod common;

use common::*;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Mounts a copy of a file with the given lines.
fn mount_lines(lines: &[String]) -> Mount {
    let dir = tempdir();
    let file = dir.path().join("s.jsonl");
    fs::write(&file, lines.join("\n") + "\n").unwrap();
    Mount::start(dir, file, &[])
}

fn ts(n: u32) -> String {
    format!("2026-11-24T09:00:{n:02}.000Z")
}

fn line(v: serde_json::Value) -> String {
    serde_json::to_string(&v).unwrap()
}

fn header() -> String {
    r#"{"type":"session","version":3,"id":"0199aaaa-0000-7000-8000-000000000001","timestamp":"2026-11-24T09:00:00.000Z","cwd":"/home/dev/proj"}"#.to_string()
}

fn msg(id: &str, parent: &str, n: u32, m: serde_json::Value) -> String {
    line(
        serde_json::json!({"type":"message","id":id,"parentId":parent,"timestamp":ts(n),"message":m}),
    )
}

fn edit(id: &str, parent: &str, n: u32, target: &str, replacement: serde_json::Value) -> String {
    line(
        serde_json::json!({"type":"context_edit","id":id,"parentId":parent,"timestamp":ts(n),"targetId":target,"replacement":replacement}),
    )
}

/// model_change → system → user u1 → assistant a1, then two branches from a1: the
/// edit e1 of a1 and a user u2 below it (branch A); a user b1 and the edit e2 of a1
/// below it (branch B, the last line: the leaf).
fn two_edits() -> Vec<String> {
    vec![
        header(),
        line(
            serde_json::json!({"type":"model_change","id":"m1","parentId":null,"timestamp":ts(1),"provider":"anthropic","modelId":"claude-sonnet-4-5"}),
        ),
        msg(
            "s1",
            "m1",
            2,
            serde_json::json!({"role":"system","content":"","sections":{"preamble":"You are a careful helper."},"timestamp":2,
                "toolsAdded":[{"name":"read","description":"Read a file.","parameters":{"type":"object","required":["path"],"properties":{"path":{"type":"string","description":"Where"}}}}]}),
        ),
        msg(
            "u1",
            "s1",
            3,
            serde_json::json!({"role":"user","content":"question","timestamp":3}),
        ),
        msg(
            "a1",
            "u1",
            4,
            serde_json::json!({"role":"assistant","content":[{"type":"text","text":"answer"}],"provider":"anthropic","model":"claude-sonnet-4-5","stopReason":"stop","timestamp":4}),
        ),
        edit(
            "e1",
            "a1",
            5,
            "a1",
            serde_json::json!({"content":"edited on A"}),
        ),
        msg(
            "u2",
            "e1",
            6,
            serde_json::json!({"role":"user","content":"on branch A","timestamp":6}),
        ),
        msg(
            "b1",
            "a1",
            7,
            serde_json::json!({"role":"user","content":"on branch B","timestamp":7}),
        ),
        edit("e2", "b1", 8, "a1", serde_json::Value::Null),
    ]
}

fn readlink(p: &Path) -> Option<String> {
    fs::read_link(p)
        .ok()
        .map(|t| t.to_string_lossy().into_owned())
}

#[test]
fn edited_by_leads_to_the_edit_on_the_leafs_branch_and_follows_the_leaf() {
    let m = mount_lines(&two_edits());
    let a1 = "m1/s1/u1/a1";
    // The leaf (e2) is on branch B: a1's edit there is e2.
    let out = run("ls", &["-1"], &m.path(a1)).ok();
    assert!(
        out.stdout.lines().any(|l| l == "edited-by"),
        "{}",
        out.stdout
    );
    assert_eq!(
        readlink(&m.path(&format!("{a1}/edited-by"))).as_deref(),
        Some("../../../../.id/e2")
    );
    assert_eq!(
        readlink(&m.path(".id/a1/edited-by")).as_deref(),
        Some("../e2")
    );
    let out = run("cat", &[&format!("{a1}/edited-by/context_edit")], &m.mnt).ok();
    assert_eq!(
        out.stdout,
        "[context edit of a1: removes it from the context]\n"
    );
    // Entries nobody edits have no such link.
    assert!(!m.path("m1/s1/u1/edited-by").exists());
    assert!(
        !run("ls", &["-1"], &m.path("m1/s1/u1"))
            .ok()
            .stdout
            .contains("edited-by")
    );
    // The tree says it too.
    let tree = fs::read_to_string(m.path("tree")).unwrap();
    assert!(
        tree.contains("a1 assistant: answer  [edited by e2]"),
        "{tree}"
    );
    assert!(tree.contains("e1 context_edit → a1: edited on A"), "{tree}");
    assert!(
        tree.contains("e2 context_edit → a1: removed  ← leaf"),
        "{tree}"
    );
    assert!(
        tree.contains("s1 system: sections preamble; tools +read"),
        "{tree}"
    );

    // A reply on branch A moves the leaf there: a1's link now leads to e1.
    let out = sh("echo 'back on A' > reply", &m.path(&format!("{a1}/e1/u2")));
    assert!(out.status.success(), "{}", out.stderr);
    let link = m.path(&format!("{a1}/edited-by"));
    assert!(
        wait_until(DEADLINE, || readlink(&link).as_deref()
            == Some("../../../../.id/e1")),
        "edited-by is {:?}",
        readlink(&link)
    );
    assert_eq!(
        readlink(&m.path(".id/a1/edited-by")).as_deref(),
        Some("../e1")
    );
    let out = run("cat", &["edited-by/context_edit"], &m.path(a1)).ok();
    assert_eq!(
        out.stdout,
        "[context edit of a1: its content in the context becomes]\nedited on A\n"
    );
    // ... and the context there has a1 as edited.
    let ctx = run("cat", &["context"], &m.path(&format!("{a1}/e1/u2"))).ok();
    assert!(ctx.stdout.contains("\nedited on A\n"), "{}", ctx.stdout);
    assert!(!ctx.stdout.contains("\nanswer\n"), "{}", ctx.stdout);
}

#[test]
fn an_edit_appended_by_pi_shows_on_its_target_at_once() {
    let m = mount_lines(&two_edits());
    let u1 = m.path("m1/s1/u1");
    // Seen once, so the kernel may have cached the listing and the missing name.
    assert!(!run("ls", &["-1"], &u1).ok().stdout.contains("edited-by"));
    assert!(!u1.join("edited-by").exists());
    // Pi appends an edit of u1 (below the leaf, as Pi does).
    let mut f = fs::OpenOptions::new().append(true).open(&m.file).unwrap();
    writeln!(
        f,
        "{}",
        edit(
            "e3",
            "e2",
            9,
            "u1",
            serde_json::json!({"content":"question, edited"})
        )
    )
    .unwrap();
    drop(f);
    assert!(
        wait_until(DEADLINE, || u1.join("edited-by").exists()),
        "no edited-by in u1"
    );
    assert!(
        wait_until(DEADLINE, || run("ls", &["-1"], &u1)
            .ok()
            .stdout
            .lines()
            .any(|l| l == "edited-by")),
        "ls does not list edited-by"
    );
    assert_eq!(
        readlink(&u1.join("edited-by")).as_deref(),
        Some("../../../.id/e3")
    );
    let out = run("cat", &["edited-by/context_edit"], &u1).ok();
    assert!(out.stdout.contains("question, edited"), "{}", out.stdout);
}

#[test]
fn grep_finds_the_system_prompt_and_the_tools_of_a_real_session() {
    let dir = tempdir();
    let file = dir.path().join("s.jsonl");
    fs::copy(
        repo().join("tests/fixtures/sessions/real-1.6-overflow.jsonl"),
        &file,
    )
    .unwrap();
    let m = Mount::start(dir, file, &[]);
    // A phrase of the appended system prompt, one of AGENTS.md, one of a tool's
    // description: all in the session's first `system` file (and the compaction's
    // context carries the prompt again, but contexts are symlinks grep does not follow).
    for phrase in [
        "Answer in British English.",
        "Never add dependencies.",
        "Search file contents for a pattern",
    ] {
        let out = run("grep", &["-rlF", "--", phrase, "."], &m.mnt);
        assert!(out.status.success(), "{phrase}: {}", out.stderr);
        let hits: Vec<&str> = out.stdout.lines().collect();
        assert!(
            hits.iter().any(|h| h.ends_with("/system")),
            "{phrase}: {hits:?}"
        );
    }
    // The readable context of the leaf starts with what the model got first: the
    // system message, with its sections and tools.
    let ctx = run("cat", &["leaf/context"], &m.mnt).ok();
    assert!(ctx.stdout.starts_with("## system\n[system message: sections preamble, tools, rules, docs, addendum, project_context, cwd; tools +read, +grep, +find, +ls, +bash]\n"), "{}", &ctx.stdout[..300.min(ctx.stdout.len())]);
    assert!(
        ctx.stdout.contains("[tool grep]\n"),
        "no tools in the context"
    );
    // The patch that narrowed the tools says so.
    let out = run("grep", &["-rlF", "--", "[tool bash removed]", "."], &m.mnt).ok();
    assert!(
        out.stdout.lines().any(|h| h.ends_with("/system")),
        "{}",
        out.stdout
    );
    // Every kind shows in the tree, the usage and edit entries too.
    let tree = fs::read_to_string(m.path("tree")).unwrap();
    assert!(tree.contains(" context_edit → "), "{tree}");
    assert!(
        tree.contains(" system: sections tools, rules; tools -find, -ls, -bash"),
        "{tree}"
    );
}

#[test]
fn usage_and_context_edit_files_read_as_text() {
    let dir = tempdir();
    let file = dir.path().join("s.jsonl");
    fs::copy(
        repo().join("tests/fixtures/sessions/real-1.6-bugfix.jsonl"),
        &file,
    )
    .unwrap();
    let m = Mount::start(dir, file, &[]);
    // The leaf is the usage entry the idle cache warmer appended.
    let out = run("cat", &["leaf/usage"], &m.mnt).ok();
    assert!(
        out.stdout
            .starts_with("[usage cache_warm: faux/faux-small]\ntokens: "),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("cost: $"), "{}", out.stdout);
    // Pi's own edit after the retried 503.
    let out = run("grep", &["-rlF", "--", "[context edit of ", "."], &m.mnt).ok();
    let hits: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert!(hits[0].ends_with("/context_edit"), "{hits:?}");
    let text = fs::read_to_string(m.mnt.join(hits[0])).unwrap();
    assert!(text.ends_with(": removes it from the context]\n"), "{text}");
    // Its target, the failed reply, links back to it.
    let target_dir = Path::new(hits[0]).parent().unwrap().parent().unwrap();
    let link = readlink(&m.mnt.join(target_dir).join("edited-by")).unwrap();
    assert!(
        link.ends_with(&format!(
            ".id/{}",
            Path::new(hits[0])
                .parent()
                .unwrap()
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
        )),
        "{link}"
    );
}

/// The README's console example of the demo session shows what the demo really
/// prints: each command's output lines, as shown (a line `…` stands for lines left
/// out; `ls` is compared word by word, and an id that only a new reply has is any
/// id). (tests/cli_docs.rs checks that the example runs and leaves the clone clean.)
#[test]
fn the_readme_example_prints_what_the_readme_shows() {
    let block = readme_console_block("cp examples/demo.jsonl");
    let d = tempdir();
    let tmp = format!("{}/", d.path().display());
    let known = fs::read_to_string(repo().join("examples/demo.jsonl")).unwrap();
    check_console_example(&block, &repo(), &[], &tmp, &[d.path().join("s")], &known);
}
