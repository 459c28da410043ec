//! What Claude Code 2.1.332 (the current CLI) sends, read through real mounts with `cat`:
//! the context of every node of every session 2.1.332 wrote (the files 2.1.197 wrote are
//! read the same way by `mount_claude.rs`), against the goldens `scripts/claude-goldens`
//! captured with the CLI (`tests/fixtures/<set>/contexts-2.1.332/`); the readable
//! `context` with the attachment texts where the model gets them; and a reply written
//! before the last compaction, whose context is the one Claude Code re-parents it to.

mod common;

use common::*;
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};

/// The release the goldens of these tests are from (`rules::CURRENT`).
const CURRENT: &str = "2.1.332";

fn set_dir(set: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(set)
}

/// A copy of a fixture set's projects mounted as a sessions directory.
fn mount_set(set: &str) -> Mount {
    let dir = tempdir();
    let projects = dir.path().join("projects");
    copy_tree(&set_dir(set).join("projects"), &projects);
    Mount::sessions_dir(dir, Some(&projects), &[], &[])
}

/// Every main session of a set: (project, session id, expected contexts).
fn sessions(set: &str) -> Vec<(String, String, serde_json::Map<String, Value>)> {
    let mut out = Vec::new();
    for p in fs::read_dir(set_dir(set).join("projects")).unwrap() {
        let p = p.unwrap();
        for f in fs::read_dir(p.path()).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_none_or(|x| x != "jsonl") {
                continue;
            }
            let sid = f.file_stem().unwrap().to_string_lossy().into_owned();
            let ctx = set_dir(set).join(format!("contexts-{CURRENT}/{sid}.contexts.json"));
            let v: Value = serde_json::from_slice(&fs::read(ctx).unwrap()).unwrap();
            out.push((
                p.file_name().to_string_lossy().into_owned(),
                sid,
                v.as_object().unwrap().clone(),
            ));
        }
    }
    out.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    out
}

/// `cat` of every entry's `context.json` through the mount equals the CLI's.
fn every_context_reads_equal(set: &str, at_least: usize) {
    let m = mount_set(set);
    let mut checked = 0;
    let mut differ = Vec::new();
    for (project, sid, expected) in sessions(set) {
        let uuids: Vec<&String> = expected
            .iter()
            .filter(|(_, v)| v.get("messages").is_some())
            .map(|(k, _)| k)
            .collect();
        // One shell per session, one `cat` per entry, NUL-separated.
        let script = uuids
            .iter()
            .map(|u| format!("cat './{project}/{sid}/.id/{u}/context.json' && printf '\\0'"))
            .collect::<Vec<_>>()
            .join(" && ");
        let out = sh(&script, &m.mnt).ok();
        let parts: Vec<&str> = out.stdout.split('\0').collect();
        for (u, text) in uuids.iter().zip(&parts) {
            let got: Value = serde_json::from_str(text)
                .unwrap_or_else(|e| panic!("{sid} {u}: not JSON ({e}): {text}"));
            checked += 1;
            if got != expected[*u]["messages"] {
                differ.push(format!("{project}/{sid} {u} (via {})", expected[*u]["via"]));
            }
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {checked} contexts differ from Claude Code {CURRENT}'s:\n{}",
        differ.len(),
        differ.join("\n")
    );
    assert!(checked >= at_least, "only {checked} contexts read");
}

// §C, §D on the files 2.1.332 wrote: attachments with their stored texts, the
// attribution in front of the user group, output_config, task notifications, the
// compaction's attachments; every node, attachments and metadata-bearing turns included.
#[test]
fn every_context_of_the_new_files_reads_as_the_current_cli_sends_it() {
    every_context_reads_equal("claude-2.1.332", 227);
}

// §C/§D: the readable `context` shows the attachment texts the model got, where it got
// them: the attribution at the head of the first user message, the environment, model
// and date in the system message after it; nothing of `prompt_snapshot` or
// `session_context`.
#[test]
fn the_readable_context_shows_the_attachment_texts_in_place() {
    let m = mount_set("claude-2.1.332");
    let qa = "./-home-dev-src-qa/d01acf0b-9e63-4d85-aae9-b6c73faa23e4";
    // The second answer of the first branch (before the compaction): the first turn
    // with its attachments, then one more turn.
    let out = run(
        "cat",
        &[format!(
            "{qa}/.id/9dd3adca-be50-4928-92c9-6c6657838d36/context"
        )],
        &m.mnt,
    )
    .ok();
    let text = out.stdout;
    let order = [
        "## user",
        "Attribution for git commits",
        "[[QA1]] What is 2+2?",
        "## system",
        "# Environment",
        "Primary working directory: /home/dev/src/qa",
        "Today's date is",
        "## assistant",
        "2 + 2 = 4.",
        "## user",
        "[[QA2]] Multiply that by 3.",
        "## assistant",
    ];
    let mut at = 0;
    for piece in order {
        let Some(k) = text[at..].find(piece) else {
            panic!("{piece:?} missing after byte {at} of the context:\n{text}");
        };
        at += k + piece.len();
    }
    assert!(!text.contains("prompt_snapshot"), "{text}");
    assert!(!text.contains("systemPrompt"), "{text}");
    // context.json says the same, as the CLI sends it.
    let json = run(
        "cat",
        &[format!(
            "{qa}/.id/9dd3adca-be50-4928-92c9-6c6657838d36/context.json"
        )],
        &m.mnt,
    )
    .ok();
    let v: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v[1]["role"], "system");
    assert_eq!(v[1]["output_config"]["effort"], "medium");
}

// LAYOUT.md `reply`, CLAUDE-FORMAT.md "2.1.332" §H: a reply at an entry before the last
// compaction. Claude Code's loader drops everything before the boundary that it does
// not preserve and re-parents the reply to the last preserved message: the model gets
// the summary, the preserved messages, then the reply. The new entry's context.json,
// read right after the write, is exactly what the CLI sent for the same reply
// (`tests/fixtures/claude-replies`, made by writing this reply through the mount and
// resuming the file with `context.sh`), and every entry of those files reads as the CLI
// sends it.
#[test]
fn a_reply_before_the_compaction_reads_as_the_cli_reparents_it() {
    let sid = "d01acf0b-9e63-4d85-aae9-b6c73faa23e4";
    let text = "[[APPENDED]] Written at 4x3=12 of a 2.1.332 file, before the compaction";
    let dir = tempdir();
    let file = dir.path().join(format!("{sid}.jsonl"));
    fs::copy(
        set_dir("claude-2.1.332").join(format!("projects/-home-dev-src-qa/{sid}.jsonl")),
        &file,
    )
    .unwrap();
    let m = Mount::start(dir, file, &[]);
    // 4 x 3 = 12, on the first branch, before the compaction.
    sh(
        &format!("echo '{text}' > .id/9dd3adca-be50-4928-92c9-6c6657838d36/reply"),
        &m.mnt,
    )
    .ok();
    let leaf = run("readlink", &["leaf"], &m.mnt).ok().stdout;
    let leaf = leaf.trim().trim_start_matches(".id/").to_string();
    let got: Value = serde_json::from_str(
        &run("cat", &[format!(".id/{leaf}/context.json")], &m.mnt)
            .ok()
            .stdout,
    )
    .unwrap();
    let golden: Value = serde_json::from_slice(
        &fs::read(
            set_dir("claude-replies").join(format!("contexts-{CURRENT}/{sid}.contexts.json")),
        )
        .unwrap(),
    )
    .unwrap();
    let want = golden
        .as_object()
        .unwrap()
        .values()
        .find(|v| v.get("leaf") == Some(&Value::Bool(true)))
        .unwrap();
    assert_eq!(got, want["messages"], "context.json of the reply {leaf}");
    // What the model gets: the summary, the preserved answer, the reply; not the
    // history of the entry it was written under (2 + 2 = 4, 4 x 3 = 12).
    let msgs = got.as_array().unwrap();
    assert!(
        msgs[0]["content"]
            .as_str()
            .unwrap()
            .starts_with("This session is being continued")
    );
    let all = got.to_string();
    assert!(all.contains("(branch) Second turn on the branch."), "{all}");
    assert!(all.contains(text), "{all}");
    assert!(!all.contains("[[QA2]] Multiply that by 3."), "{all}");
    drop(m);
    every_context_reads_equal("claude-replies", 40);
}
