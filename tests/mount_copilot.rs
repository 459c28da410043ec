//! GitHub Copilot CLI sessions through real mounts (LAYOUT.md "Copilot CLI sessions",
//! COPILOT-FORMAT.md): every point of every fixture session
//! (`tests/fixtures/copilot/{samples,heldout,own}`) read with `cat` through a mount of a
//! copy of its Copilot home equals what Copilot CLI 1.0.102 sends there
//! (`contexts/*.contexts.json`); the leaf, names, `session.json`, KIND files, `tree`,
//! images, subagents, forks and their links both ways, rewinds; the other ways to mount
//! (the `session-state/` folder, one session folder, its `events.jsonl`, the every-agent
//! mount with `COPILOT_HOME`); lines the CLI writes and rewrites while mounted; replies
//! through the mount (at the leaf, and at an earlier entry as a new session, checked
//! against what the CLI took, `tests/fixtures/copilot/accepts`); damaged sessions.

mod common;

use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

fn copilot_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/copilot")
}

const QA: &str = "e902edca-53f4-4c9b-823d-4b1ffd102464";
const TOOLS: &str = "af0c8f8a-462d-460c-96cf-c48ed0d8c93e";
const TUI: &str = "d72afa6b-3331-4f96-8223-14668ac1ed3a";
const SUB: &str = "5e7eac31-06e1-4687-8dbf-7d3b44915ed8";
const IMAGE: &str = "01b0cb80-9d08-4336-b40c-a0df9579e52b";
const NAMED: &str = "143adfeb-68e1-46ef-9cd1-3bbdebc0df22";
const FORK_A: &str = "41a257bc-dc9d-4f00-ac6d-a12c4b0d90c0";
const FORK_B: &str = "a4b87966-6117-43e3-8975-c6fdc8b8875c";
const FORK_C: &str = "8e81fc2f-2f12-478c-8ddb-5c01b49bdd5a";
const IMGS: &str = "c00645c2-ec2c-4ad0-ba5e-4b757f7e5fbf";
const SUBPAR: &str = "752bd7da-7c65-4c01-a78e-401cedc60d40";

/// A copy of fixture set `set`'s Copilot home at `dir/.copilot`.
fn home_copy(dir: &Path, set: &str) -> PathBuf {
    let home = dir.join(".copilot");
    copy_tree(&copilot_dir().join(set).join("copilot-home"), &home);
    home
}

fn events(home: &Path, sid: &str) -> PathBuf {
    home.join("session-state").join(sid).join("events.jsonl")
}

/// The mount's project folder of a session: its `cwd`, `/` and `.` as `-`.
fn project_of(home: &Path, sid: &str) -> String {
    let ws =
        fs::read_to_string(home.join("session-state").join(sid).join("workspace.yaml")).unwrap();
    let cwd = ws
        .lines()
        .find_map(|l| l.strip_prefix("cwd: "))
        .unwrap()
        .trim_matches(|c| c == '\'' || c == '"');
    cwd.replace(['/', '.'], "-")
}

/// `contexts/<sessionId>.contexts.json` of a set: session id → point id → expected.
fn expected(set: &str) -> BTreeMap<String, serde_json::Map<String, Value>> {
    let mut out = BTreeMap::new();
    for e in fs::read_dir(copilot_dir().join(set).join("contexts")).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(sid) = name.strip_suffix(".contexts.json") else {
            continue;
        };
        let v: Value = serde_json::from_slice(&fs::read(e.path()).unwrap()).unwrap();
        out.insert(sid.to_string(), v.as_object().unwrap().clone());
    }
    out
}

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

/// The names in an entry's directory that are not its KIND file.
fn is_fixed(n: &str) -> bool {
    matches!(
        n,
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
    ) || n.starts_with("image-")
        // A child's link: an event id.
        || (n.len() == 36 && n.as_bytes()[8] == b'-')
}

/// What every fixture session of `set` reads through a mount of its home: every point's
/// `context.json` (serialised the same, key order included), the leaf, the `tree` line
/// of every point, its KIND file. Returns (sessions, points) checked.
fn every_point_reads_as_copilot_sends_it(set: &str) -> (usize, usize) {
    let dir = tempdir();
    let home = home_copy(dir.path(), set);
    let m = mount_home(dir, &home);
    let mut differ = Vec::new();
    let (mut sessions, mut points) = (0, 0);
    for (sid, points_of) in expected(set) {
        let project = project_of(&home, &sid);
        assert!(
            try_ls(&m.mnt.join(&project)).unwrap().contains(&sid),
            "{project} does not list {sid}"
        );
        sessions += 1;
        let sdir = m.mnt.join(&project).join(&sid);
        let leaf = link_id(&sdir.join("leaf"));
        let files: Vec<String> = points_of
            .iter()
            .map(|(p, v)| {
                if v.get("leaf") == Some(&Value::Bool(true)) {
                    "leaf/context.json".to_string()
                } else {
                    format!(".id/{p}/context.json")
                }
            })
            .collect();
        for ((p, want), text) in points_of.iter().zip(cat_all(&sdir, &files)) {
            points += 1;
            let got: Value = match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(e) => {
                    differ.push(format!("{sid} {p}: not JSON ({e}): {text:.200}"));
                    continue;
                }
            };
            let (g, w) = (
                serde_json::to_string(&got).unwrap(),
                serde_json::to_string(&want["messages"]).unwrap(),
            );
            if g != w {
                differ.push(format!("{sid} {p}:\n got  {g:.600}\n want {w:.600}"));
            }
            if want.get("leaf") == Some(&Value::Bool(true)) && leaf != *p {
                // The CLI's leaf is the file's last line; after the last conversation
                // event only notices (a rewind's, a fork's) may stand.
                let kind = try_ls(&sdir.join("leaf"))
                    .unwrap()
                    .into_iter()
                    .find(|n| !is_fixed(n))
                    .unwrap();
                assert_eq!(kind, "info", "{sid}: leaf {leaf}, the CLI's point {p}");
            }
        }
        let tree = fs::read_to_string(sdir.join("tree")).unwrap();
        for p in points_of.keys() {
            let d = sdir.join(".id").join(p);
            let kind: Vec<String> = try_ls(&d)
                .unwrap()
                .into_iter()
                .filter(|n| !is_fixed(n))
                .collect();
            assert_eq!(kind.len(), 1, "{sid} {p}: {kind:?}");
            let text = fs::read_to_string(d.join(&kind[0]))
                .unwrap_or_else(|e| panic!("{sid} {p} {}: {e}", kind[0]));
            assert!(!text.is_empty(), "{sid} {p}");
            assert!(tree.contains(p.as_str()), "{sid}: {p} not in tree:\n{tree}");
        }
    }
    assert!(
        differ.is_empty(),
        "{set}: {} of {points} contexts differ from Copilot CLI's:\n{}",
        differ.len(),
        differ.join("\n")
    );
    (sessions, points)
}

// §3–§7: every point of the kit's 13 samples (Q&A and resumes, tools in parallel, an
// image, a long output, a subagent, an API error, a name, a TUI rewind and /compact, a
// /fork, an interrupt, a rewind that restores files).
#[test]
fn every_sample_point_reads_through_the_mount_as_copilot_sends_it() {
    assert_eq!(every_point_reads_as_copilot_sends_it("samples"), (13, 95));
}

// The kit's held-out scenarios: three parallel calls that fail, three rewinds in a row, a
// rewind past a compaction, a long session with a rewind and a compaction.
#[test]
fn every_heldout_point_reads_through_the_mount_as_copilot_sends_it() {
    assert_eq!(every_point_reads_as_copilot_sends_it("heldout"), (4, 75));
}

// Ours: two compactions, a fork of a fork and a rewind of the session they came from, a
// repaired torn tail, two images, two subagents at once, an interrupted tool call.
#[test]
fn every_own_point_reads_through_the_mount_as_copilot_sends_it() {
    assert_eq!(every_point_reads_as_copilot_sends_it("own"), (8, 66));
}

// §7, LAYOUT.md: the readable `context` shows the system prompt the CLI recorded for the
// request, then the tools of its mode, then one `## ROLE` heading per message.
#[test]
fn the_readable_context_shows_the_system_prompt_and_tools_first() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let m = mount_home(dir, &home);
    let t = m.mnt.join("-home-dev-src-tools").join(TOOLS);
    let ctx = fs::read_to_string(t.join("leaf/context")).unwrap();
    assert!(
        ctx.starts_with("## system\n[the system prompt recorded on line 3,"),
        "{ctx:.300}"
    );
    assert!(ctx.contains("You are running in non-interactive mode"));
    let tools = ctx.find("\n## tools\n").expect("## tools");
    let user = ctx.find("\n## user\n").expect("## user");
    assert!(tools < user);
    assert!(ctx[tools..user].contains("[the 17 tools Copilot CLI 1.0.102 sends in prompt mode"));
    assert!(ctx[tools..user].contains("[tool bash]\n"));
    assert!(ctx.contains("## tool (view, call_tools_02)\n# Notes\n- one\n"));
    assert!(
        ctx.trim_end()
            .ends_with("created new.txt, edited hello.txt.")
    );
    // An interactive session: the interactive prompt, and `ask_user` among 18 tools.
    let tui = m.mnt.join("-home-dev-src-tui").join(TUI);
    let ctx =
        fs::read_to_string(tui.join(".id/7e9fb7ec-c3c3-4967-864a-72e4fc572489/context")).unwrap();
    assert!(ctx.contains("You are an interactive tool"), "{ctx:.300}");
    assert!(ctx.contains("[the 18 tools Copilot CLI 1.0.102 sends interactively"));
    assert!(ctx.contains("[tool ask_user]"));
    // After the compaction, the summary opens the messages.
    assert!(ctx.contains("## user\nSome of the conversation history has been summarized"));
    // `request` of an answer is the context of the entry it answered.
    let req = fs::read_link(t.join(".id/c048964b-f098-4df5-9602-2fd38258290c/request")).unwrap();
    assert_eq!(
        req.to_string_lossy(),
        "../ccdd93b7-e0dd-4b63-aff2-cde199476e4f/context"
    );
}

// §1, LAYOUT.md: `name` is what the CLI's picker shows (workspace.yaml), `session.json`
// the session.start data with the workspace; KIND files read as text.
#[test]
fn names_session_json_and_kind_files() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let m = mount_home(dir, &home);
    let name = |p: &str, s: &str| fs::read_to_string(m.mnt.join(p).join(s).join("name")).unwrap();
    assert_eq!(name("-home-dev-src-tui", TUI), "TUI rewind demo\n");
    assert_eq!(name("-home-dev-src-named", NAMED), "Arithmetic by name\n");
    assert_eq!(name("-home-dev-src-qa", QA), "[[QA1]] What is 2+2?\n");
    let sj: Value = serde_json::from_slice(
        &fs::read(
            m.mnt
                .join("-home-dev-src-tui")
                .join(TUI)
                .join("session.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(sj["format"], "copilot");
    assert_eq!(sj["sessionId"], TUI);
    assert_eq!(sj["copilotVersion"], "1.0.102");
    assert_eq!(sj["workspace"]["name"], "TUI rewind demo");
    assert_eq!(sj["workspace"]["user_named"], true);
    assert_eq!(sj["workspace"]["summary_count"], 1);
    let t = m.mnt.join("-home-dev-src-tools").join(TOOLS);
    let read =
        |id: &str, kind: &str| fs::read_to_string(t.join(".id").join(id).join(kind)).unwrap();
    // Reasoning, text, a call.
    let a = read("c8c0ff01-fe1e-4004-8f00-a13ee2db7b6e", "assistant");
    assert!(a.starts_with("[reasoning]\nI will look at the files first.\n\nLet me look at the project.\n\n[call bash (call_tools_01): List files and read hello.txt]\n{\n"), "{a}");
    // A tool result, with the CLI's details.
    let r = read("efc390de-49e7-426d-b324-c23eb61986f1", "toolResult");
    assert!(
        r.starts_with("[result (call_tools_02)]\n# Notes\n- one\n[details]\ndiff --git"),
        "{r}"
    );
    // `.id/` also takes the CLI's other ids: a message's `messageId`, a result's call id.
    let line = |id: &str| fs::read(t.join(".id").join(id).join("entry.json")).unwrap();
    assert_eq!(
        line("b2945dfb-6704-40f9-a9bb-7feda5008c33"),
        line("c8c0ff01-fe1e-4004-8f00-a13ee2db7b6e")
    );
    assert_eq!(
        line("call_tools_02"),
        line("efc390de-49e7-426d-b324-c23eb61986f1")
    );
    assert!(!t.join(".id/no-such-id").exists());
    // A tool error.
    let dir = tempdir();
    let home = home_copy(dir.path(), "heldout");
    let m2 = mount_home(dir, &home);
    let pf = m2
        .mnt
        .join("-home-dev-src-parfail/fc32edd7-ea06-47c6-9b68-69963b1ffd01");
    let e =
        fs::read_to_string(pf.join(".id/cac56697-ed1e-4337-8e1d-811a6185bdc7/toolResult")).unwrap();
    assert_eq!(
        e,
        "[error (call_pf_03): failure]\nTool 'no_such_tool' does not exist.\n"
    );
    // The other kinds: an abort, an API error, a rewind's notice, a compaction.
    let intr = m
        .mnt
        .join("-home-dev-src-interrupt/267e40f0-7bfe-4b9b-bf57-c7d300419f2b");
    assert_eq!(
        fs::read_to_string(intr.join(".id/b891c081-7856-4949-9461-6a63c43c9b17/abort")).unwrap(),
        "[interrupted: user_abort]\n"
    );
    let ae = m
        .mnt
        .join("-home-dev-src-apierr/9ad2c9de-0dea-4bfa-a604-ea9d74458f65");
    assert_eq!(
        fs::read_to_string(ae.join(".id/1b2c29d8-43c4-49bd-86c8-dccb04d739fb/error")).unwrap(),
        "[error query (HTTP 400)]\n400 fake: this request is rejected\n"
    );
    let tui = m.mnt.join("-home-dev-src-tui").join(TUI);
    assert_eq!(
        fs::read_to_string(tui.join(".id/4b3a4602-f4e6-4416-ad4a-1da1da089012/info")).unwrap(),
        "[info rewind]\nRewound the conversation. Your files were left unchanged.\n"
    );
    let c = fs::read_to_string(tui.join(".id/2afdeea8-10a7-4d62-aca1-03f27a51e1e8/compaction"))
        .unwrap();
    assert!(c.starts_with("[compaction: checkpoint 1 (001-arithmetic-questions.md), 5 of 6 messages summarized, 12,440 -> 12,428 tokens]\n<overview>"), "{c}");
    // `tree`: one line per entry, the leaf marked.
    let tree = fs::read_to_string(t.join("tree")).unwrap();
    assert_eq!(tree.lines().count(), 13);
    assert!(tree.lines().last().unwrap().ends_with("← leaf"), "{tree}");
    assert!(tree.contains("call view /home/dev/src/tools/notes.md, bash wc -l hello.txt"));
}

// §6.4: an image a prompt attached is decoded from its `session.binary_asset`, beside the
// prompt, and named on the prompt's own line; two images in one prompt are two files.
#[test]
fn images_are_decoded_from_their_assets() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let m = mount_home(dir, &home);
    let u = m
        .mnt
        .join("-home-dev-src-image")
        .join(IMAGE)
        .join(".id/b8267c0b-77a5-4ca0-aff6-f339817b92e9");
    let png = fs::read(u.join("image-1.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(png.len(), 88);
    assert_eq!(
        fs::read_to_string(u.join("user")).unwrap(),
        "[[IMG]] What is in this image?\n[image-1.png: /home/dev/src/image/pic.png (image/png, 88 bytes)]\n"
    );
    drop(m);
    let dir = tempdir();
    let home = home_copy(dir.path(), "own");
    let m = mount_home(dir, &home);
    let s = m.mnt.join("-home-dev-src-imgs").join(IMGS);
    let first = fs::read_to_string(s.join("tree"))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    let id = first.split(' ').next().unwrap();
    let names = try_ls(&s.join(".id").join(id)).unwrap();
    assert!(
        names.contains(&"image-1.png".into()) && names.contains(&"image-2.png".into()),
        "{names:?}"
    );
    let a = fs::read(s.join(".id").join(id).join("image-1.png")).unwrap();
    let b = fs::read(s.join(".id").join(id).join("image-2.png")).unwrap();
    assert_ne!(a, b);
}

// §6.5: a subagent's events hang under the call that started it, one chain per
// subagent; they are no branch, and their context is the main agent's at that point.
#[test]
fn subagents_hang_under_their_call_and_are_no_branch() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let m = mount_home(dir, &home);
    let s = m.mnt.join("-home-dev-src-sub").join(SUB);
    let call = s.join(".id/a3b416f3-1d8d-42a9-9f79-597bfa0d8146");
    let kids = try_ls(&call).unwrap();
    // The subagent's prompt and the task's result both hang under the call.
    assert!(
        kids.contains(&"cb3f8c9f-91b7-446e-863a-a5ad70102a76".into()),
        "{kids:?}"
    );
    assert!(
        kids.contains(&"1024302a-9ca9-406e-a620-22a3dc2a45bd".into()),
        "{kids:?}"
    );
    assert_eq!(try_ls(&s.join("branches")).unwrap().len(), 1);
    assert_eq!(
        link_id(&s.join("leaf")),
        "0f784699-70ad-4211-a176-d69ea1495834"
    );
    let tree = fs::read_to_string(s.join("tree")).unwrap();
    assert!(tree.contains("(subagent) user: [[SUBTASK]]"), "{tree}");
    assert_eq!(
        fs::read_to_string(s.join(".id/37267643-28ad-42b4-878c-aa9059d0af08/subagent")).unwrap(),
        "[subagent counter (general-purpose) completed: 1 tool call, 23,369 tokens, 202 ms]\n"
    );
    drop(m);
    // Two subagents at once: two chains under the one call message.
    let dir = tempdir();
    let home = home_copy(dir.path(), "own");
    let m = mount_home(dir, &home);
    let s = m.mnt.join("-home-dev-src-subpar").join(SUBPAR);
    let tree = fs::read_to_string(s.join("tree")).unwrap();
    assert!(tree.contains("(subagent) user: [[SUBTASK]]"), "{tree}");
    assert!(tree.contains("(subagent) user: [[SUBHELLO]]"), "{tree}");
    assert_eq!(try_ls(&s.join("branches")).unwrap().len(), 1, "{tree}");
}

// §6.2, §6.1: a fork links to the entry of its parent it continues from, and that entry
// lists it in `forks/`; after the parent was rewound, the link goes to the last entry
// both still hold; a fork of a fork links to the middle session.
#[test]
fn forks_link_both_ways_even_after_the_parent_was_rewound() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "own");
    let m = mount_home(dir, &home);
    let p = m.mnt.join("-home-dev-src-forkrew");
    assert_eq!(
        readlink(&p.join(FORK_B).join("forked-from")),
        format!("../../-home-dev-src-forkrew/{FORK_A}/.id/6d688fae-d118-421a-b9fd-72c0f49129f0")
    );
    assert_eq!(
        readlink(&p.join(FORK_C).join("forked-from")),
        format!("../../-home-dev-src-forkrew/{FORK_B}/.id/1dd19c23-ac67-491b-907a-20159c7cb94c")
    );
    assert!(!p.join(FORK_A).join("forked-from").exists());
    let at = p
        .join(FORK_A)
        .join(".id/6d688fae-d118-421a-b9fd-72c0f49129f0/forks");
    assert_eq!(try_ls(&at).unwrap(), vec![FORK_B.to_string()]);
    // Through the link: the fork, and its copy of the turns the rewind deleted.
    let tree = fs::read_to_string(at.join(FORK_B).join("tree")).unwrap();
    assert!(tree.contains("user: [[QA3]] Subtract 5."), "{tree}");
    assert!(
        !fs::read_to_string(p.join(FORK_A).join("tree"))
            .unwrap()
            .contains("[[QA3]]")
    );
    assert_eq!(
        try_ls(
            &p.join(FORK_B)
                .join(".id/1dd19c23-ac67-491b-907a-20159c7cb94c/forks")
        )
        .unwrap(),
        vec![FORK_C.to_string()]
    );
    // The parent keeps one branch: what its file holds.
    assert_eq!(try_ls(&p.join(FORK_A).join("branches")).unwrap().len(), 1);
}

/// The lines of a `written.txt` of `accepts/` that are JSON (the events).
fn accepted_events(case: &str) -> Vec<Value> {
    fs::read_to_string(
        copilot_dir()
            .join("accepts")
            .join(format!("{case}.written.txt")),
    )
    .unwrap()
    .lines()
    .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    .collect()
}

/// The key paths of a JSON value (`data.content`, `id`, …), in order: a line's shape.
fn shape(v: &Value) -> Vec<String> {
    fn walk(v: &Value, at: &str, out: &mut Vec<String>) {
        if let Value::Object(m) = v {
            for (k, x) in m {
                let p = if at.is_empty() {
                    k.clone()
                } else {
                    format!("{at}.{k}")
                };
                out.push(p.clone());
                walk(x, &p, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(v, "", &mut out);
    out
}

// §9, LAYOUT.md "Copilot CLI sessions": a reply at the leaf appends one user.message, the
// line the CLI took (`accepts/leaf-qa`), whose parentId is the file's last line; the leaf
// moves to it, its context ends with it.
#[test]
fn a_reply_at_the_leaf_appends_the_line_the_cli_takes() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let f = events(&home, QA);
    let old = fs::read(&f).unwrap();
    let last_id = serde_json::from_slice::<Value>(
        old.trim_ascii_end().rsplit(|&b| b == b'\n').next().unwrap(),
    )
    .unwrap()["id"]
        .clone();
    let m = mount_home(dir, &home);
    let s = m.mnt.join("-home-dev-src-qa").join(QA);
    let text = "[[APPENDED]] through the mount: é — 日本語";
    sh(&format!("echo '{text}' > leaf/reply"), &s).ok();
    let now = fs::read(&f).unwrap();
    assert_eq!(&now[..old.len()], &old[..], "old bytes changed");
    let added: Vec<Value> = now[old.len()..]
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    assert_eq!(added.len(), 1);
    let line = &added[0];
    assert_eq!(shape(line), shape(&accepted_events("leaf-qa")[0]));
    assert_eq!(line["parentId"], last_id);
    assert_eq!(line["data"]["content"], text);
    let tc = line["data"]["transformedContent"].as_str().unwrap();
    assert!(
        tc.starts_with("<current_datetime>")
            && tc.ends_with(&format!("</current_datetime>\n\n{text}")),
        "{tc}"
    );
    let id = line["id"].as_str().unwrap().to_string();
    assert!(
        wait_until(DEADLINE, || fs::read_link(s.join("leaf"))
            .is_ok_and(|l| l.to_string_lossy().ends_with(&id))),
        "the leaf is not {id}"
    );
    assert_eq!(
        fs::read_to_string(s.join("leaf/user")).unwrap(),
        format!("{text}\n")
    );
    let ctx: Value =
        serde_json::from_slice(&fs::read(s.join("leaf/context.json")).unwrap()).unwrap();
    assert_eq!(ctx.as_array().unwrap().last().unwrap()["content"], tc);
    // No new session.
    assert_eq!(
        fs::read_dir(home.join("session-state")).unwrap().count(),
        13
    );
}

// §9, §6.2: a reply at an earlier entry writes what /fork writes, cut at the entry, plus
// the reply (the shape the CLI took, `accepts/assistant-qa`): a new session folder with
// the events up to the entry, same ids, the fork notice, the reply, and workspace.yaml;
// the session replied in is untouched, and links to the new one at once.
#[test]
fn a_reply_at_an_earlier_entry_writes_a_new_session_as_fork_does() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let f = events(&home, QA);
    let old = fs::read(&f).unwrap();
    let m = mount_home(dir, &home);
    let p = m.mnt.join("-home-dev-src-qa");
    let s = p.join(QA);
    let at = "0c888d44-54dd-4f1b-ab40-d237104209da";
    let text = "[[EARLIER]] a reply at an earlier entry";
    sh(&format!("echo '{text}' > .id/{at}/reply"), &s).ok();
    assert_eq!(fs::read(&f).unwrap(), old, "the session replied in changed");
    let new: Vec<String> = fs::read_dir(home.join("session-state"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.len() == 36 && !expected("samples").contains_key(n))
        .collect();
    assert_eq!(new.len(), 1, "{new:?}");
    let nid = &new[0];
    // Listed in `forks/` of the entry at once, and reachable through the link.
    assert_eq!(
        try_ls(&s.join(".id").join(at).join("forks")).unwrap(),
        vec![nid.clone()]
    );
    let fork = s.join(".id").join(at).join("forks").join(nid);
    assert_eq!(link_id(&fork.join("leaf")), {
        let ev = fs::read_to_string(events(&home, nid)).unwrap();
        let last: Value = serde_json::from_str(ev.lines().last().unwrap()).unwrap();
        last["id"].as_str().unwrap().to_string()
    });
    assert_eq!(
        fs::read_to_string(fork.join("leaf/user")).unwrap(),
        format!("{text}\n")
    );
    assert_eq!(
        readlink(&p.join(nid).join("forked-from")),
        format!("../../-home-dev-src-qa/{QA}/.id/{at}")
    );
    assert_eq!(
        fs::read_to_string(p.join(nid).join("name")).unwrap(),
        "[[QA1]] What is 2+2? (fork)\n"
    );
    // The events: the source's up to the entry, same ids; the notice; the reply.
    let src: Vec<Value> = String::from_utf8(old)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let cut = src.iter().position(|e| e["id"] == at).unwrap() + 1;
    let got: Vec<Value> = fs::read_to_string(events(&home, nid))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(got.len(), cut + 2);
    for (g, w) in got.iter().zip(&src[..cut]) {
        assert_eq!(g["id"], w["id"]);
        assert_eq!(g["type"], w["type"]);
    }
    assert_eq!(got[0]["data"]["sessionId"], nid.as_str());
    assert!(got[0]["data"].get("remoteSteerable").is_none());
    let want = accepted_events("assistant-qa");
    let (notice, reply) = (&got[cut], &got[cut + 1]);
    assert_eq!(shape(notice), shape(&want[want.len() - 2]));
    assert_eq!(shape(reply), shape(&want[want.len() - 1]));
    assert_eq!(
        notice["data"]["message"],
        format!(
            "Forked from \"[[QA1]] What is 2+2?\" ({QA}) as \"[[QA1]] What is 2+2? (fork)\" ({nid})."
        )
    );
    assert_eq!(notice["parentId"], at);
    assert_eq!(reply["parentId"], notice["id"]);
    assert_eq!(reply["data"]["content"], text);
    // workspace.yaml, in the keys and order /fork writes.
    let ws =
        fs::read_to_string(home.join("session-state").join(nid).join("workspace.yaml")).unwrap();
    let keys: Vec<&str> = ws.lines().map(|l| l.split(':').next().unwrap()).collect();
    assert_eq!(
        keys,
        [
            "id",
            "summary_count",
            "fork_count",
            "cwd",
            "client_name",
            "name",
            "user_named",
            "created_at",
            "updated_at"
        ]
    );
    assert!(ws.contains("name: '[[QA1]] What is 2+2? (fork)'\n"), "{ws}");
}

// `fork` writes the same folder without a reply; `cat fork` names it; a root reply, a
// name and labels are refused (a session holds one conversation; the name is the CLI's).
#[test]
fn fork_writes_a_session_folder_and_the_rest_is_refused() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let m = mount_home(dir, &home);
    let p = m.mnt.join("-home-dev-src-qa");
    let s = p.join(QA);
    let at = "7954ade0-25e4-469b-ae20-5c0872e6168d";
    let out = sh(&format!(": > .id/{at}/fork && cat .id/{at}/fork"), &s).ok();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{out:?}");
    let nid = lines[0].rsplit('/').next().unwrap();
    assert!(
        Path::new(lines[0]).join("events.jsonl").is_file(),
        "{}",
        lines[0]
    );
    assert!(Path::new(lines[0]).join("workspace.yaml").is_file());
    assert_eq!(lines[1], p.join(nid).to_string_lossy());
    assert_eq!(link_id(&Path::new(lines[1]).join("leaf")), {
        // The fork notice is the new session's last entry: the fork waits for a prompt.
        let ev = fs::read_to_string(Path::new(lines[0]).join("events.jsonl")).unwrap();
        let last: Value = serde_json::from_str(ev.lines().last().unwrap()).unwrap();
        assert_eq!(last["data"]["infoType"], "fork");
        last["id"].as_str().unwrap().to_string()
    });
    let ctx: Value =
        serde_json::from_slice(&fs::read(Path::new(lines[1]).join("leaf/context.json")).unwrap())
            .unwrap();
    assert_eq!(ctx, expected("samples")[QA][at]["messages"]);
    // A root reply fails at open, and its file shows no write bit.
    let out = sh("echo hi > reply", &s);
    assert!(
        !out.status.success() && out.stderr.contains("Permission denied"),
        "{out:?}"
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        fs::metadata(s.join("reply")).unwrap().permissions().mode() & 0o222,
        0
    );
    // The name and labels are refused; nothing is written.
    let before = fs::read(events(&home, QA)).unwrap();
    assert!(write_then_close(&s.join("name"), b"renamed\n").is_err());
    let out = sh(&format!("ln -s .id/{at} labels/x"), &s);
    assert!(!out.status.success(), "{out:?}");
    assert_eq!(fs::read(events(&home, QA)).unwrap(), before);
}

// The CLI's own lock: a reply at the leaf while a Copilot CLI process has the session
// open is refused at open (EBUSY), and nothing is written; at an earlier entry it is
// taken (a new session).
#[test]
fn a_reply_at_the_leaf_is_refused_while_the_cli_holds_the_session() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let sdir = home.join("session-state").join(QA);
    // This test's own process stands for the CLI: alive, and "copilot" is in its name.
    let me = std::process::id();
    assert!(
        fs::read_to_string(format!("/proc/{me}/cmdline"))
            .unwrap()
            .contains("copilot")
    );
    fs::write(sdir.join(format!("inuse.{me}.lock")), me.to_string()).unwrap();
    let before = fs::read(events(&home, QA)).unwrap();
    let m = mount_home(dir, &home);
    let s = m.mnt.join("-home-dev-src-qa").join(QA);
    let out = sh("echo hi > leaf/reply", &s);
    assert!(
        !out.status.success() && out.stderr.contains("busy"),
        "{out:?}"
    );
    assert_eq!(fs::read(events(&home, QA)).unwrap(), before);
    sh(
        "echo hi > .id/0c888d44-54dd-4f1b-ab40-d237104209da/reply",
        &s,
    )
    .ok();
    // Its lock gone (the CLI exited), the reply is taken.
    fs::remove_file(sdir.join(format!("inuse.{me}.lock"))).unwrap();
    sh("echo hi > leaf/reply", &s).ok();
    assert!(fs::read(events(&home, QA)).unwrap().len() > before.len());
}

/// Appends `lines` to `file` with one write, as the CLI appends.
fn append(file: &Path, lines: &str) {
    let mut f = fs::OpenOptions::new().append(true).open(file).unwrap();
    std::io::Write::write_all(&mut f, lines.as_bytes()).unwrap();
}

// §8, §6.1, §1: lines the CLI appends show up; a /rewind (the file cut and a notice
// appended, rewritten in place or replaced) is followed; a new session folder appears in
// its project; a rename (workspace.yaml rewritten) changes `name`.
#[test]
fn what_the_cli_writes_and_rewrites_while_mounted_shows_up() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    // The tools session is held back and made by "the CLI" once mounted.
    let held = dir.path().join("held");
    fs::rename(home.join("session-state").join(TOOLS), &held).unwrap();
    let f = events(&home, QA);
    let m = mount_home(dir, &home);
    let s = m.mnt.join("-home-dev-src-qa").join(QA);
    assert_eq!(
        link_id(&s.join("leaf")),
        "58b8cabc-c472-4659-a1d6-0c500de412ce"
    );
    // Appended: a prompt and its answer, as a resume writes them.
    let user = r#"{"type":"user.message","data":{"content":"[[LIVE]] appended"},"id":"11111111-1111-4111-8111-111111111111","timestamp":"2026-12-05T08:00:00.000Z","parentId":"483919c2-e0b6-4001-bddf-a121b3f9b504"}"#;
    let answer = r#"{"type":"assistant.message","data":{"messageId":"m","content":"Live answer."},"id":"22222222-2222-4222-8222-222222222222","timestamp":"2026-12-05T08:00:01.000Z","parentId":"11111111-1111-4111-8111-111111111111"}"#;
    let t0 = std::time::Instant::now();
    append(&f, &format!("{user}\n"));
    assert!(
        wait_until(DEADLINE, || link_id(&s.join("leaf"))
            == "11111111-1111-4111-8111-111111111111"),
        "the appended prompt is not the leaf"
    );
    // Printed, not asserted (as in mount_layout): an idle machine shows it at once.
    println!("appended line visible after {:?}", t0.elapsed());
    append(&f, &format!("{answer}\n"));
    assert!(wait_until(DEADLINE, || link_id(&s.join("leaf"))
        == "22222222-2222-4222-8222-222222222222"));
    assert_eq!(
        fs::read_to_string(s.join("leaf/assistant")).unwrap(),
        "Live answer.\n"
    );
    // A /rewind to before [[QA3]]: the file is cut before its prompt, a notice appended.
    let text = fs::read_to_string(&f).unwrap();
    let keep: Vec<&str> = text.lines().take(16).collect();
    let notice = r#"{"type":"session.info","data":{"message":"Rewound the conversation. Your files were left unchanged.","infoType":"rewind"},"id":"33333333-3333-4333-8333-333333333333","timestamp":"2026-12-05T08:01:00.000Z","parentId":"x"}"#;
    // Replaced by a rename, as an atomic rewrite does.
    let tmp = f.with_extension("tmp");
    fs::write(&tmp, format!("{}\n{notice}\n", keep.join("\n"))).unwrap();
    fs::rename(&tmp, &f).unwrap();
    assert!(
        wait_until(DEADLINE, || try_ls(&s).is_some_and(|_| fs::read_link(
            s.join("leaf")
        )
        .is_ok_and(|l| l
            .to_string_lossy()
            .ends_with("33333333-3333-4333-8333-333333333333")))),
        "the rewind was not followed"
    );
    let tree = fs::read_to_string(s.join("tree")).unwrap();
    assert!(
        !tree.contains("[[QA3]]") && !tree.contains("[[LIVE]]"),
        "{tree}"
    );
    assert_eq!(try_ls(&s.join("branches")).unwrap().len(), 1);
    // Cut again in place (truncated and rewritten), shorter still.
    let keep: Vec<&str> = text.lines().take(9).collect();
    fs::write(&f, format!("{}\n", keep.join("\n"))).unwrap();
    assert!(
        wait_until(DEADLINE, || fs::read_link(s.join("leaf")).is_ok_and(|l| l
            .to_string_lossy()
            .ends_with("7954ade0-25e4-469b-ae20-5c0872e6168d"))),
        "the cut in place was not followed"
    );
    // A new session folder appears in its project.
    let tp = m.mnt.join("-home-dev-src-tools");
    assert!(
        !try_ls(&m.mnt)
            .unwrap()
            .contains(&"-home-dev-src-tools".to_string())
    );
    fs::rename(&held, home.join("session-state").join(TOOLS)).unwrap();
    assert!(
        wait_until(DEADLINE, || try_ls(&tp)
            .is_some_and(|l| l == [TOOLS.to_string()])),
        "the new session is not listed"
    );
    // A rename in the CLI rewrites workspace.yaml: `name` follows.
    let ws = home.join("session-state").join(QA).join("workspace.yaml");
    let renamed = fs::read_to_string(&ws)
        .unwrap()
        .replace("name: '[[QA1]] What is 2+2?'", "name: Renamed live")
        .replace("user_named: false", "user_named: true");
    let tmp = ws.with_extension("tmp");
    fs::write(&tmp, renamed).unwrap();
    fs::rename(&tmp, &ws).unwrap();
    assert!(
        wait_until(DEADLINE, || fs::read_to_string(s.join("name"))
            .is_ok_and(|n| n == "Renamed live\n")),
        "the name did not follow"
    );
}

// §1: a Copilot home, its session-state/ folder, one session folder, its events.jsonl,
// and copilot/ in the every-agent mount (COPILOT_HOME).
#[test]
fn the_home_its_session_state_one_session_and_the_every_agent_mount() {
    // session-state/
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let m = Mount::sessions_dir(dir, Some(&home.join("session-state")), &[], &[]);
    let listed = try_ls(&m.mnt).unwrap();
    assert!(
        listed.contains(&"-home-dev-src-tui".to_string()),
        "{listed:?}"
    );
    assert_eq!(
        try_ls(&m.mnt.join("-home-dev-src-tuifork")).unwrap(),
        vec![
            "1d454d2d-f43a-424c-999f-b086faf1cb56".to_string(),
            "4dd125e9-76d7-476c-8f81-d85f6275dab8".to_string()
        ]
    );
    drop(m);
    // One session folder, and its events.jsonl: the session alone.
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let folder = home.join("session-state").join(TUI);
    let m = Mount::start(dir, folder, &[]);
    assert_eq!(
        fs::read_to_string(m.mnt.join("name")).unwrap(),
        "TUI rewind demo\n"
    );
    assert!(
        m.mnt
            .join(".id/2afdeea8-10a7-4d62-aca1-03f27a51e1e8/compaction")
            .is_file()
    );
    drop(m);
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let m = Mount::start(dir, events(&home, TUI), &[]);
    assert_eq!(
        fs::read_to_string(m.mnt.join("name")).unwrap(),
        "TUI rewind demo\n"
    );
    // Alone, a session shows no links to others.
    assert!(!m.mnt.join("forked-from").exists());
    drop(m);
    // The every-agent mount: copilot/ beside pi/.
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
            ("COPILOT_HOME", home.as_os_str()),
        ],
    );
    let top = try_ls(&m.mnt).unwrap();
    assert!(
        top.contains(&"copilot".to_string()) && top.contains(&"pi".to_string()),
        "{top:?}"
    );
    let tui = m.mnt.join("copilot/-home-dev-src-tui").join(TUI);
    assert_eq!(
        fs::read_to_string(tui.join("name")).unwrap(),
        "TUI rewind demo\n"
    );
    // Links work from inside copilot/ too.
    let back = m
        .mnt
        .join("copilot/-home-dev-src-tuifork/1d454d2d-f43a-424c-999f-b086faf1cb56/forked-from");
    assert!(try_ls(&back).is_some(), "{}", readlink(&back));
    drop(m);
    // ~/.copilot found without COPILOT_HOME.
    let dir = tempdir();
    let h = dir.path().to_path_buf();
    copy_tree(
        &copilot_dir().join("samples/copilot-home"),
        &h.join(".copilot"),
    );
    let m = Mount::sessions_dir(dir, None, &[], &[("HOME", h.as_os_str())]);
    assert!(try_ls(&m.mnt).unwrap().contains(&"copilot".to_string()));
}

// §10: every damaged session mounts (an empty file is a directory holding `ERROR`), reads
// up to its damage, and `sessionfs check` says what the CLI does with it
// (`damaged/expected.json`, from the real CLI).
#[test]
fn damaged_sessions_mount_and_check_says_what_the_cli_does() {
    let exp: Value =
        serde_json::from_slice(&fs::read(copilot_dir().join("damaged/expected.json")).unwrap())
            .unwrap();
    let sessions = exp["sessions"].as_object().unwrap();
    let dir = tempdir();
    let home = home_copy(dir.path(), "damaged");
    let check = |sid: &str| {
        let out = sessionfs(
            &[
                std::ffi::OsStr::new("check"),
                events(&home, sid).as_os_str(),
            ],
            dir.path(),
        );
        (out.code(), format!("{}{}", out.stdout, out.stderr))
    };
    let said = |name: &str| check(sessions[name].as_str().unwrap());
    // What the CLI refuses, check reports as a warning; what it takes, as a note at most.
    for name in ["no-id-user", "no-timestamp-user", "no-start"] {
        assert_ne!(exp["cli"][name]["rc"], 0, "{name}");
        let (code, text) = said(name);
        assert_eq!(code, Some(1), "{name}: {text}");
        assert!(text.contains("Copilot CLI refuses"), "{name}: {text}");
    }
    for name in ["torn-last-line", "garbage-middle"] {
        assert_eq!(
            exp["cli"][name]["backups"].as_array().unwrap().len(),
            1,
            "{name}"
        );
        let (_, text) = said(name);
        assert!(text.contains("backup-before-recovery"), "{name}: {text}");
    }
    for name in [
        "unknown-type",
        "missing-parent",
        "null-parent",
        "blank-line",
        "crlf",
        "only-start",
    ] {
        assert_eq!(exp["cli"][name]["rc"], 0, "{name}");
        let (code, text) = said(name);
        assert_eq!(code, Some(0), "{name}: {text}");
    }
    let (code, text) = said("duplicate-id");
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("both are shown"), "{text}");
    let (code, text) = said("empty-file");
    assert_eq!(code, Some(1), "{text}");
    // Mounted: each reads; where the CLI sent messages, the leaf's context is those.
    let m = mount_home(dir, &home);
    let project = m.mnt.join("-home-dev-src-qa");
    for (name, sid) in sessions {
        let sid = sid.as_str().unwrap();
        let s = project.join(sid);
        let listed = try_ls(&s).unwrap_or_else(|| panic!("{name}: cannot list"));
        if name == "empty-file" {
            assert_eq!(listed, ["ERROR"], "{name}");
            continue;
        }
        let msgs = &exp["cli"][name.as_str()]["messages"];
        if msgs.is_array() && name != "only-start" {
            let got: Value =
                serde_json::from_slice(&fs::read(s.join("leaf/context.json")).unwrap()).unwrap();
            assert_eq!(&got, msgs, "{name}");
        }
    }
}

// §11: `cost` counts each usage record once, at the reply it paid for; a compaction's
// call at the compaction; `sessionfs usage` of a home counts a request a fork copied once.
#[test]
fn cost_counts_each_request_once() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let m = mount_home(dir, &home);
    let t = m.mnt.join("-home-dev-src-tools").join(TOOLS);
    let cost = fs::read_to_string(t.join("cost")).unwrap();
    assert!(cost.starts_with("session: tokens 74,216 (input 73,916, output 300, cache read 0, cache write 0), cost unknown, 6 requests"), "{cost}");
    let c: Value = serde_json::from_slice(
        &fs::read(t.join(".id/c8c0ff01-fe1e-4004-8f00-a13ee2db7b6e/cost.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(c["entry"]["usage"]["requests"], 1);
    assert_eq!(c["entry"]["model"], "fake-model");
    let tui = m.mnt.join("-home-dev-src-tui").join(TUI);
    let c: Value = serde_json::from_slice(
        &fs::read(tui.join(".id/2afdeea8-10a7-4d62-aca1-03f27a51e1e8/cost.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(c["entry"]["source"], "summary");
    assert_eq!(c["entry"]["usage"]["inputTokens"], 15805);
    drop(m);
    let dir = tempdir();
    let home = home_copy(dir.path(), "own");
    let out = sessionfs(
        &[
            std::ffi::OsStr::new("usage"),
            std::ffi::OsStr::new("--json"),
            home.as_os_str(),
        ],
        dir.path(),
    )
    .ok();
    let u: Value = serde_json::from_str(&out.stdout).unwrap();
    let rows = u["sessions"].as_array().unwrap();
    let b = rows.iter().find(|r| r["sessionId"] == FORK_B).unwrap();
    assert!(
        b["copiedFromOtherSessions"]["requests"].as_u64().unwrap() > 0,
        "{b}"
    );
    assert_eq!(b["agent"], "copilot");
    // Every request once over the home: the sessions' own, without the copies.
    let own: u64 = rows.iter().map(|r| r["requests"].as_u64().unwrap()).sum();
    assert_eq!(u["totals"]["requests"].as_u64().unwrap(), own);
}

// §10, §6.1, LAYOUT.md: the copy the CLI kept when it repaired a torn file still holds
// the turn a later /rewind deleted. The session's `session.json` names it; mounted, it
// reads as a session, and a reply at its leaf makes a new session (the copy is never
// written), which the CLI resumes from there.
#[test]
fn a_repair_backup_holds_what_a_rewind_deleted_and_a_reply_there_is_a_new_session() {
    const TORN: &str = "f5590a53-b675-42d8-8357-088553581a71";
    let dir = tempdir();
    let home = home_copy(dir.path(), "own");
    let folder = home.join("session-state").join(TORN);
    let backup = fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("backup-before-recovery-"))
        .unwrap();
    let sj: Value = serde_json::from_slice(&{
        let m = mount_home(tempdir(), &home);
        fs::read(
            m.mnt
                .join("-home-dev-src-torn")
                .join(TORN)
                .join("session.json"),
        )
        .unwrap()
    })
    .unwrap();
    assert_eq!(
        sj["backups"][0].as_str().unwrap(),
        backup.file_name().unwrap().to_str().unwrap()
    );
    let before = fs::read(&backup).unwrap();
    let m = Mount::start(dir, backup.clone(), &[]);
    let tree = fs::read_to_string(m.mnt.join("tree")).unwrap();
    assert!(tree.contains("user: [[QA2]] Multiply by 3."), "{tree}");
    assert!(
        !fs::read_to_string(events(&home, TORN))
            .unwrap()
            .contains("[[QA2]]")
    );
    let n = fs::read_dir(home.join("session-state")).unwrap().count();
    sh("echo '[[BACK]] from the backup' > leaf/reply", &m.mnt).ok();
    assert_eq!(fs::read(&backup).unwrap(), before, "the backup was written");
    assert_eq!(
        fs::read_dir(home.join("session-state")).unwrap().count(),
        n + 1
    );
}

/// The JSON lines and the facts a `written.txt` of `accepts/` records: the appended line
/// (at a leaf), or the new session's `workspace.yaml` keys, its line count and its first
/// and last two lines.
struct Written {
    lines: Vec<Value>,
    count: Option<usize>,
    ws_keys: Vec<String>,
}

fn written(case: &str) -> Written {
    let text = fs::read_to_string(
        copilot_dir()
            .join("accepts")
            .join(format!("{case}.written.txt")),
    )
    .unwrap();
    let count = text.lines().find_map(|l| {
        l.strip_prefix("events.jsonl: ")
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
    });
    let ws_keys = text
        .split("\n\n")
        .next()
        .filter(|b| b.starts_with("workspace.yaml:"))
        .map(|b| {
            b.lines()
                .skip(1)
                .map(|l| l.split(':').next().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default();
    Written {
        lines: accepted_events(case),
        count,
        ws_keys,
    }
}

// §9, Deliver 4: every case of `accepts/cases.tsv` (a reply at every kind of entry, at
// leaves, in a fork, in a repaired session and its backup; a `fork`) is one the real CLI
// took (its recorded result), and what the mount writes for it now is what was recorded:
// at a leaf the same appended line (its keys), elsewhere a new session folder of the same
// length whose first and last two lines and workspace.yaml have the same keys.
#[test]
fn every_accepts_case_the_cli_took_is_what_the_mount_writes_now() {
    let tsv = fs::read_to_string(copilot_dir().join("accepts/cases.tsv")).unwrap();
    let mut kinds = std::collections::BTreeSet::new();
    for row in tsv.lines().skip(1) {
        let cols: Vec<&str> = row.split('\t').collect();
        let (case, set, action) = (cols[0], cols[1], cols[5]);
        assert_eq!(cols[6], "ok", "{row}");
        let result: Value = serde_json::from_slice(
            &fs::read(copilot_dir().join("accepts").join(format!("{case}.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(result["ok"], true, "{case}: {result}");
        let sid = result["session"].as_str().unwrap().to_string();
        let entry = result["entry"].as_str().unwrap().to_string();
        kinds.insert(cols[4].split(' ').next().unwrap().to_string());

        let dir = tempdir();
        let home = home_copy(dir.path(), set);
        let state = home.join("session-state");
        let before: std::collections::BTreeSet<String> = fs::read_dir(&state)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        let old = fs::read(events(&home, &sid)).unwrap();
        let text = format!("[[ACCEPTS {case}]] a reply written through the mount");
        let (_m, target) = if entry == "backup" {
            let backup = fs::read_dir(state.join(&sid))
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| p.to_string_lossy().contains("backup-before-recovery-"))
                .unwrap();
            let m = Mount::start(dir, backup, &[]);
            let t = m.mnt.join("leaf");
            (m, t)
        } else {
            let m = mount_home(dir, &home);
            let s = m.mnt.join(project_of(&home, &sid)).join(&sid);
            let t = if entry == "leaf" {
                s.join("leaf")
            } else {
                s.join(".id").join(&entry)
            };
            (m, t)
        };
        let cmd = if action == "fork" {
            ": > fork".to_string()
        } else {
            format!("echo '{text}' > reply")
        };
        sh(&cmd, &target).ok();
        let want = written(case);
        let new: Vec<String> = fs::read_dir(&state)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !before.contains(n))
            .collect();
        if entry == "leaf" {
            assert!(new.is_empty(), "{case}: {new:?}");
            let now = fs::read(events(&home, &sid)).unwrap();
            assert_eq!(&now[..old.len()], &old[..], "{case}");
            let added: Vec<Value> = now[old.len()..]
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .map(|l| serde_json::from_slice(l).unwrap())
                .collect();
            assert_eq!(added.len(), 1, "{case}");
            assert_eq!(shape(&added[0]), shape(&want.lines[0]), "{case}");
            continue;
        }
        assert_eq!(fs::read(events(&home, &sid)).unwrap(), old, "{case}");
        assert_eq!(new.len(), 1, "{case}: {new:?}");
        let got: Vec<Value> = fs::read_to_string(events(&home, &new[0]))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(Some(got.len()), want.count, "{case}");
        let n = got.len();
        for (g, w) in [&got[0], &got[n - 2], &got[n - 1]]
            .into_iter()
            .zip(&want.lines)
        {
            assert_eq!(shape(g), shape(w), "{case}");
            assert_eq!(g["type"], w["type"], "{case}");
        }
        let ws = fs::read_to_string(state.join(&new[0]).join("workspace.yaml")).unwrap();
        let keys: Vec<String> = ws
            .lines()
            .map(|l| l.split(':').next().unwrap().to_string())
            .collect();
        assert_eq!(keys, want.ws_keys, "{case}");
    }
    // Every kind of entry was replied at.
    for k in [
        "user",
        "assistant",
        "toolResult",
        "compaction",
        "info",
        "abort",
        "error",
        "subagent",
    ] {
        assert!(kinds.contains(k), "no case replies at {k}: {kinds:?}");
    }
}
