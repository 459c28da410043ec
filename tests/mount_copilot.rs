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
