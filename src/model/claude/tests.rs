//! The Claude Code model against Claude Code itself: every fixture session and the
//! expected context of every entry, captured with `context.sh` by each release that
//! has rules in [`super::rules`] (`scripts/claude-goldens`):
//!
//! * `tests/fixtures/claude/projects`: files Claude Code 2.1.197 wrote (and 2.1.197
//!   TUI runs); goldens `contexts-2.1.197/` and `contexts-2.1.332/` (the current CLI
//!   resuming the old files);
//! * `tests/fixtures/claude-2.1.332/projects`: files 2.1.332 wrote; goldens
//!   `contexts-2.1.332/`.

use super::rules::{self, Rules};
use crate::model::core::session::Session;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude")
}

/// A fixture set (`tests/fixtures/<set>`) and the release whose goldens to read.
type Golden = (&'static str, &'static Rules);

/// Every set of goldens, the current release's first.
const GOLDENS: &[Golden] = &[
    ("claude", rules::CURRENT),
    ("claude-2.1.332", rules::CURRENT),
    ("claude", &rules::V2_1_197),
    ("claude-replies", rules::CURRENT),
];

/// Every main session file of a fixture set, with its expected contexts by a release.
fn sessions_of(set: &str, rules: &Rules) -> Vec<(PathBuf, serde_json::Map<String, Value>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(set);
    let mut out = Vec::new();
    let mut projects: Vec<_> = std::fs::read_dir(root.join("projects"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    projects.sort();
    for p in projects {
        let mut files: Vec<_> = std::fs::read_dir(&p)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|f| f.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        files.sort();
        for f in files {
            let sid = f.file_stem().unwrap().to_string_lossy().into_owned();
            let ctx = root
                .join(format!("contexts-{}", rules.version))
                .join(format!("{sid}.contexts.json"));
            let v: Value = serde_json::from_slice(&std::fs::read(&ctx).unwrap_or_else(|e| {
                panic!("{}: {e} (scripts/claude-goldens makes it)", ctx.display())
            }))
            .unwrap();
            out.push((f, v.as_object().unwrap().clone()));
        }
    }
    out
}

/// The 2.1.197 files with the current release's goldens (leaf, names, …).
fn sessions() -> Vec<(PathBuf, serde_json::Map<String, Value>)> {
    sessions_of("claude", rules::CURRENT)
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 600 {
        format!(
            "{}…",
            &s[..s.char_indices().nth(600).map_or(s.len(), |c| c.0)]
        )
    } else {
        s
    }
}

/// Compares every entry of a golden set; returns (checked, failures).
fn compare(set: &str, rules: &Rules) -> (usize, Vec<String>) {
    let mut checked = 0;
    let mut failures = Vec::new();
    for (file, expected) in sessions_of(set, rules) {
        let s = Session::open(&file).unwrap();
        let st = s.claude().expect("a Claude Code file");
        for (uuid, exp) in &expected {
            let Some(want) = exp["messages"].as_array() else {
                continue; // the CLI refused the entry (an "error" golden)
            };
            let i = s.find(uuid).unwrap_or_else(|| panic!("{uuid} not indexed"));
            let got = super::context_by(&s, st, i, rules).unwrap();
            checked += 1;
            if got != *want {
                let k = got
                    .iter()
                    .zip(want)
                    .position(|(a, b)| a != b)
                    .unwrap_or(got.len().min(want.len()));
                failures.push(format!(
                    "{} {uuid} (via {}): {} messages, want {}; first difference at {k}:\n  got  {}\n  want {}",
                    file.file_name().unwrap().to_string_lossy(),
                    exp["via"],
                    got.len(),
                    want.len(),
                    got.get(k).map(short).unwrap_or_default(),
                    want.get(k).map(short).unwrap_or_default(),
                ));
            }
        }
    }
    (checked, failures)
}

fn assert_all_equal(set: &str, rules: &Rules, at_least: usize) {
    let (checked, failures) = compare(set, rules);
    eprintln!(
        "{set} by Claude Code {}: {} of {checked} contexts equal",
        rules.version,
        checked - failures.len()
    );
    assert!(
        failures.is_empty(),
        "{set} by {}: {} of {checked} contexts differ:\n{}",
        rules.version,
        failures.len(),
        failures.join("\n")
    );
    assert!(checked >= at_least, "only {checked} contexts checked");
}

// CLAUDE-FORMAT.md §8 and "2.1.332: what changed" §D: the files 2.1.197 wrote, as the
// current CLI sends them.
#[test]
fn every_context_of_the_old_files_is_the_current_clis() {
    assert_all_equal(GOLDENS[0].0, GOLDENS[0].1, 220);
}

// The files 2.1.332 wrote (attachments with their text, metadata lines, task
// notifications, compaction), every node.
#[test]
fn every_context_of_the_new_files_is_the_current_clis() {
    assert_all_equal(GOLDENS[1].0, GOLDENS[1].1, 227);
}

// LAYOUT.md `reply`: a reply written through the mount before the last compaction is
// re-parented by Claude Code's loader; every entry of those files, the reply's own
// context (summary, preserved messages, the reply) included, is what the CLI sends.
#[test]
fn every_context_of_the_replies_is_the_current_clis() {
    assert_all_equal(GOLDENS[3].0, GOLDENS[3].1, 40);
}

// The rules of 2.1.197 still give what 2.1.197 sent: the common code is checked
// against both releases.
#[test]
fn every_context_by_the_old_rules_is_2_1_197s() {
    assert_all_equal(GOLDENS[2].0, GOLDENS[2].1, 220);
}

#[test]
fn the_leaf_is_the_chain_end() {
    for (file, expected) in sessions() {
        let s = Session::open(&file).unwrap();
        let want: Vec<&String> = expected
            .iter()
            .filter(|(_, v)| v.get("leaf") == Some(&Value::Bool(true)))
            .map(|(k, _)| k)
            .collect();
        assert_eq!(want.len(), 1, "{file:?}");
        let got = s.leaf().map(|l| s.id_string(l));
        assert_eq!(got.as_deref(), Some(want[0].as_str()), "{file:?}");
    }
}

fn open(project: &str, sid: &str) -> Session {
    Session::open(
        fixtures()
            .join("projects")
            .join(project)
            .join(format!("{sid}.jsonl")),
    )
    .unwrap()
}

// §7: the title rule, on every fixture.
#[test]
fn names_follow_the_title_rule() {
    let want = [
        (
            "-home-dev-src-qa",
            "07d0e045-3cdc-4eca-a398-7147bce4b33f",
            "[[AFTERCOMPACT]] What do you remember?",
        ),
        (
            "-home-dev-src-named",
            "0b0898a8-e004-4c82-a942-53f14841e021",
            "Named demo session",
        ),
        (
            "-home-dev-src-tui",
            "f484a23c-c413-49b1-97b1-05298240ac81",
            "TUI rewind demo",
        ),
        (
            "-home-dev-src-tui",
            "9a35a251-e6e4-429e-b75c-cb5cb7ce24f3",
            "tui-branch",
        ),
        (
            "-home-dev-src-ooo",
            "77c2960e-2b1c-41fb-bd8f-544d351b3a47",
            "Colour questions and a small edit",
        ),
    ];
    for (p, sid, name) in want {
        assert_eq!(open(p, sid).name(), Some(name), "{sid}");
    }
    // Commands, caveats and meta lines are no first prompt; tags are stripped.
    assert_eq!(
        super::strip_tags("<a>x</a>\nhello <b k=\"v\">y</b> world"),
        "hello  world"
    );
    assert_eq!(super::strip_tags("a < b and <c"), "a < b and <c");
}

// §2.1: what each line is, as a KIND name; metadata lines are no entries.
#[test]
fn kinds_name_what_each_line_is() {
    let s = open("-home-dev-src-qa", "07d0e045-3cdc-4eca-a398-7147bce4b33f");
    let kind = |u: &str| s.kind_name(s.find(u).unwrap()).to_string();
    assert_eq!(kind("dea05485-9b9b-4770-b537-f793b08876ce"), "user");
    assert_eq!(kind("79843ce0-43c8-4cbb-ba73-49c98d6885c5"), "attachment");
    assert_eq!(kind("50facd4b-6f50-4c08-b77e-009931aad30f"), "assistant");
    assert_eq!(
        kind("6f9480dc-8eed-49d4-b949-04168390e388"),
        "compact_boundary"
    );
    assert_eq!(
        kind("5bf08a8a-a782-4efe-97b2-397c1c20d131"),
        "compactSummary"
    );
    assert_eq!(kind("2d899f99-151e-4011-a18a-fd607accc44e"), "meta");
    // 47 lines, 24 nodes: queue-operation, last-prompt and mode lines are not entries.
    assert_eq!(s.entries().len(), 24);
    let t = open(
        "-home-dev-src-tools",
        "644750c6-819f-4bc1-8d96-f535db009ee8",
    );
    assert_eq!(
        t.kind_name(t.find("4967d9be-a165-443c-8ea3-fec8f1859fd0").unwrap()),
        "toolResult"
    );
    let u = open("-home-dev-src-tui", "f484a23c-c413-49b1-97b1-05298240ac81");
    assert_eq!(
        u.kind_name(u.find("0786694c-7130-42df-8f34-094b85349791").unwrap()),
        "turn_duration"
    );
    assert_eq!(
        u.kind_name(u.find("4d3fc26a-82b7-4f25-b0be-c2824b751da4").unwrap()),
        "local_command"
    );
}

// §3.1, §3.3: a boundary hangs under its logical parent; a first turn written out of
// order is linked as the tree says.
#[test]
fn links_follow_claude_codes_tree() {
    let s = open("-home-dev-src-qa", "07d0e045-3cdc-4eca-a398-7147bce4b33f");
    let b = s.find("6f9480dc-8eed-49d4-b949-04168390e388").unwrap();
    assert_eq!(
        s.id_string(s.parent(b).unwrap()),
        "ee114c09-369b-4471-9866-941ad39def54"
    );
    assert_eq!(s.roots().len(), 1);
    let o = open("-home-dev-src-ooo", "77c2960e-2b1c-41fb-bd8f-544d351b3a47");
    let a = o.find("774c292c-eef2-4b49-953b-7882fd5e548b").unwrap();
    assert_eq!(
        o.id_string(o.parent(a).unwrap()),
        "f757f2fc-254a-4249-bdd6-fcfb36ba4f80"
    );
    assert_eq!(
        o.id_string(o.roots()[0]),
        "f5a74cb4-4e85-47a4-93d8-ef1e3e69d3aa"
    );
    assert!(o.problems().is_empty(), "{:?}", o.problems());
    // The /branch copy's boundary points at its own descendant: a root, no complaint.
    let c = open("-home-dev-src-tui", "9a35a251-e6e4-429e-b75c-cb5cb7ce24f3");
    assert!(c.problems().is_empty(), "{:?}", c.problems());
}

// §3.4: the dead end of parallel tool calls is a piece of its turn, not a branch.
#[test]
fn parallel_tool_results_are_pieces() {
    use crate::model::core::session::flags;
    let s = open(
        "-home-dev-src-tools",
        "644750c6-819f-4bc1-8d96-f535db009ee8",
    );
    let piece = |u: &str| s.entry(s.find(u).unwrap()).flags & flags::PIECE != 0;
    assert!(piece("40f08c07-2bf2-4a07-8c32-9593750315ba"));
    assert!(piece("c10351dd-4be7-44e2-b5f1-76a3cbd4376b"));
    assert!(!piece("9e9f862a-7cb9-4318-97fb-bfb96c9bda9c"));
    assert_eq!((s.leaf_count(), s.branch_point_count()), (1, 0));
    assert_eq!(s.leaves().len(), 1);
}

// §9: the reply line's shape, and the last-prompt it needs off the chain end.
#[test]
fn reply_lines_take_claude_codes_shape() {
    use crate::model::core::reply::NewEntry;
    let s = open(
        "-home-dev-src-forkbranch",
        "0e2eb63c-9c5f-432a-89ee-f32abc7b1bc4",
    );
    let leaf = s.id_string(s.leaf().unwrap());
    let (uuid, bytes) = s
        .build_line(
            &NewEntry::Reply {
                parent: Some(&leaf),
                text: "hi",
            },
            1_767_603_614_749,
        )
        .unwrap();
    let text = String::from_utf8(bytes).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    let v: Value = serde_json::from_str(text.trim_end()).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "parentUuid",
            "isSidechain",
            "promptId",
            "type",
            "message",
            "uuid",
            "timestamp",
            "userType",
            "entrypoint",
            "cwd",
            "sessionId",
            "version",
            "gitBranch"
        ]
    );
    assert_eq!(v["uuid"], uuid.as_str());
    assert_eq!(v["timestamp"], "2026-01-05T09:00:14.749Z");
    assert_eq!(v["message"]["content"], "hi");
    // Off the chain end: the last-prompt follows, in the same write.
    let (uuid, bytes) = s
        .build_line(
            &NewEntry::Reply {
                parent: Some("bc6d00c6-f6df-4fd9-8d7c-557cd1e6fb6c"),
                text: "back",
            },
            0,
        )
        .unwrap();
    let lines: Vec<Value> = String::from_utf8(bytes)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["type"], "last-prompt");
    assert_eq!(lines[1]["leafUuid"], uuid.as_str());
    // A name is the custom-title and agent-name pair.
    let (_, bytes) = s.build_line(&NewEntry::Name(" two\nlines "), 0).unwrap();
    assert_eq!(
        String::from_utf8(bytes).unwrap(),
        "{\"type\":\"custom-title\",\"customTitle\":\"two lines\",\"sessionId\":\"0e2eb63c-9c5f-432a-89ee-f32abc7b1bc4\"}\n\
         {\"type\":\"agent-name\",\"agentName\":\"two lines\",\"sessionId\":\"0e2eb63c-9c5f-432a-89ee-f32abc7b1bc4\"}\n"
    );
    // Claude Code has no labels.
    assert!(
        s.build_line(
            &NewEntry::Label {
                target: &leaf,
                label: Some("x")
            },
            0
        )
        .is_err()
    );
}

// What each KIND file says.
#[test]
fn kind_files_read_as_text() {
    let s = open(
        "-home-dev-src-tools",
        "644750c6-819f-4bc1-8d96-f535db009ee8",
    );
    let text = |u: &str| s.render(s.find(u).unwrap()).unwrap().0;
    assert_eq!(
        text("b9540dde-a36b-4473-951f-480e6d4b460c"),
        "[part 1 of 3 of reply msg_014kVIhzIb0cVN9LCYVFujj6]\n[thinking]\nThe user wants me to inspect the project and make edits. I will list the files first.\n"
    );
    assert_eq!(
        text("2482d8ff-9286-4247-9e3c-113de2a5974c"),
        "[tool result Read (toolu_tools_07)]\n[error]\nFile does not exist. Note: your current working directory is /home/dev/src/tools.\n"
    );
    assert!(
        text("71bfada6-7fd7-4b80-8f38-a95852ed5382")
            .starts_with("[attachment task_reminder]\nThe task tools haven't been used recently.")
    );
    let u = open("-home-dev-src-tui", "f484a23c-c413-49b1-97b1-05298240ac81");
    let d = u.find("0786694c-7130-42df-8f34-094b85349791").unwrap();
    let v = u.entry_value(d).unwrap();
    assert_eq!(
        u.render(d).unwrap().0,
        format!(
            "turn took {:.1} s, {} messages\n",
            v["durationMs"].as_f64().unwrap() / 1000.0,
            v["messageCount"]
        )
    );
}

/// Mutated Claude Code files (lines dropped, shuffled, duplicated, cut, parents
/// pointed anywhere, which makes cycles): the index, leaf, name, tree, every KIND file
/// and every context are computed without a panic or a hang.
#[test]
fn mutated_files_never_panic_or_hang() {
    let mut seed: u64 = 0x5eed_cafe;
    let mut rnd = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n.max(1) as u64) as usize
    };
    let dir = tempfile::tempdir().unwrap();
    for (file, _) in sessions() {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let uuids: Vec<String> = lines
            .iter()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|v| v.get("uuid").and_then(Value::as_str).map(str::to_string))
            .collect();
        for round in 0..12 {
            let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            for _ in 0..1 + rnd(4) {
                let k = rnd(out.len());
                match rnd(6) {
                    0 => {
                        out.remove(k);
                    }
                    1 => {
                        let j = rnd(out.len());
                        out.swap(k, j);
                    }
                    2 => {
                        let l = out[k].clone();
                        out.insert(rnd(out.len()), l);
                    }
                    3 => {
                        let cut = rnd(out[k].len());
                        out[k].truncate(cut);
                    }
                    _ => {
                        if let Ok(mut v) = serde_json::from_str::<Value>(&out[k])
                            && v.get("uuid").is_some()
                            && !uuids.is_empty()
                        {
                            let key = if rnd(4) == 0 {
                                "logicalParentUuid"
                            } else {
                                "parentUuid"
                            };
                            v[key] = Value::String(uuids[rnd(uuids.len())].clone());
                            out[k] = v.to_string();
                        }
                    }
                }
                if out.is_empty() {
                    break;
                }
            }
            let p = dir.path().join(format!("m{round}.jsonl"));
            std::fs::write(&p, out.join("\n") + "\n").unwrap();
            let Ok(s) = Session::open(&p) else { continue };
            let _ = (s.leaf(), s.name().map(str::to_string), s.leaves());
            let _ = crate::model::core::tree::render_tree(&s).unwrap();
            for i in 0..s.entries().len() as u32 {
                if !s.entry(i).is_node() {
                    continue;
                }
                let _ = s.render(i);
                let _ = s.context_files(i).unwrap();
            }
        }
    }
}

/// §8.1 `FAe`/`Xsm` on damaged files, against Claude Code's own requests
/// (`tests/fixtures/claude/damaged-contexts-<version>`): a missing parent is bridged to the
/// newest line written at most 5 s before it, not further; a cycle stops the walk.
#[test]
fn damaged_files_contexts_are_claude_codes() {
    for rules in [rules::CURRENT, &rules::V2_1_197] {
        let mut checked = 0;
        for case in ["missing-parent-bridged", "parent-cycle"] {
            let file = fixtures().join("damaged").join(format!("{case}.jsonl"));
            let exp = fixtures()
                .join(format!("damaged-contexts-{}", rules.version))
                .join(format!("{case}.contexts.json"));
            let expected: Value = serde_json::from_slice(&std::fs::read(exp).unwrap()).unwrap();
            let s = Session::open(&file).unwrap();
            let st = s.claude().expect("a Claude Code file");
            for (uuid, exp) in expected.as_object().unwrap() {
                if exp.get("messages").is_none() {
                    continue; // the CLI refused the entry
                }
                let i = s.find(uuid).unwrap_or_else(|| panic!("{uuid} not indexed"));
                let got = super::context_by(&s, st, i, rules).unwrap();
                assert_eq!(
                    Value::Array(got),
                    exp["messages"],
                    "{} {case} {uuid} (via {})",
                    rules.version,
                    exp["via"]
                );
                if exp.get("leaf") == Some(&Value::Bool(true)) {
                    assert_eq!(s.id_string(s.leaf().unwrap()), *uuid, "{case}: leaf");
                }
                checked += 1;
            }
        }
        // 2.1.197's goldens hold the damaged lines and the leaf; later ones every node.
        assert!(checked >= 8, "{}: {checked}", rules.version);
    }
}

/// The match counts of every golden set by every release's rules (the figures of
/// the report): `cargo test --lib model::claude::tests::match_counts -- --ignored --nocapture`.
#[test]
#[ignore]
fn match_counts() {
    for (set, goldens) in [
        ("claude", "2.1.332"),
        ("claude-2.1.332", "2.1.332"),
        ("claude", "2.1.197"),
        ("claude-replies", "2.1.332"),
    ] {
        for r in rules::ALL {
            let want = rules::of(goldens).unwrap();
            // The goldens of `want`, the contexts by `r`.
            let mut checked = 0;
            let mut equal = 0;
            for (file, expected) in sessions_of(set, want) {
                let s = Session::open(&file).unwrap();
                let st = s.claude().expect("a Claude Code file");
                for (uuid, exp) in &expected {
                    let Some(w) = exp["messages"].as_array() else {
                        continue;
                    };
                    let i = s.find(uuid).unwrap();
                    checked += 1;
                    if super::context_by(&s, st, i, r).unwrap() == *w {
                        equal += 1;
                    }
                }
            }
            eprintln!(
                "{set}, goldens of {goldens}, rules of {}: {equal} of {checked} equal",
                r.version
            );
        }
    }
}

/// Every `*.jsonl` under the Claude Code fixture sets but a subagent's transcript.
fn every_fixture_file() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = crate::model::core::scan::tests::fixture_files()
        .into_iter()
        .filter(|p| {
            let s = p.to_string_lossy();
            s.contains("/tests/fixtures/claude") && !s.contains("/subagents/")
        })
        .collect();
    out.sort();
    out
}

/// The search drops a candidate line its format shows nowhere (`Rules::shown`), so
/// `shown` must keep every line that is an entry: every node of every fixture session
/// (its subagents' lines too) is shown, and so is any line with a `uuid`; the lines
/// it drops are there (2.1.332's `api-request-*`, 38 KB each), and the lines at the
/// edge (a `progress` line, an empty or non-string `uuid`, a line cut short) are
/// decided as the loader decides them.
#[test]
fn every_entry_line_is_shown_and_only_metadata_is_not() {
    let (nodes, dropped) = crate::model::core::grep::shown_check::every_entry_shown(
        &every_fixture_file(),
        super::shown,
    );
    assert!(
        nodes > 1000 && dropped > 100,
        "{nodes} nodes, {dropped} lines dropped"
    );

    let edges: &[(&str, bool)] = &[
        (
            r#"{"type":"user","uuid":"e1","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"qz"}}"#,
            true,
        ),
        (
            r#"{"type":"api-request-blob","sessionId":"s","hash":"h","message":{"role":"user","content":"qz"}}"#,
            false,
        ),
        (
            r#"{"type":"api-request-shape","sessionId":"s","shapeHash":"h","shape":{"system":[{"type":"text","text":"qz"}]}}"#,
            false,
        ),
        (
            r#"{"type":"progress","uuid":"e2","parentUuid":"e1","data":{"text":"qz"}}"#,
            false,
        ),
        (
            r#"{"type":"user","uuid":"","parentUuid":"e1","message":{"role":"user","content":"qz"}}"#,
            false,
        ),
        (
            r#"{"type":"user","uuid":7,"parentUuid":"e1","message":{"role":"user","content":"qz"}}"#,
            false,
        ),
        (
            r#"{"type":"user","parentUuid":"e1","message":{"role":"user","content":"qz"}}"#,
            false,
        ),
        (
            r#"{"type":"api-request","uuid":"e3","parentUuid":"e1","data":"qz"}"#,
            true,
        ),
        (
            r#"{"uuid":"e4","parentUuid":"e3","message":{"content":"qz"}}"#,
            true,
        ),
        (
            r#"{"type":"user","uuid":"e5","parentUuid":"e4","message":{"content":"#,
            false,
        ),
        (
            r#"{"type":"user","uuid":"e6","type":"progress","parentUuid":"e4"}"#,
            false,
        ),
        (
            r#"{"type":"progress","uuid":"e7","type":"user","parentUuid":"e4","message":{"content":"qz"}}"#,
            true,
        ),
        ("qz", false),
    ];
    // An entry nested past serde's limit of 128 levels is one ("[this entry cannot
    // be shown: …]"), and so is an entry of more values than a line may hold parsed.
    let deep = format!(
        r#"{{"type":"user","uuid":"e8","parentUuid":"e4","message":{{"content":{}"qz"{}}}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    let many = format!(
        r#"{{"type":"user","uuid":"e9","parentUuid":"e4","message":{{"content":[{}0]}}}}"#,
        "0,".repeat(crate::model::core::input::COUNTED_FROM)
    );
    let edges: Vec<(&str, bool)> = edges
        .iter()
        .copied()
        .chain([(deep.as_str(), true), (many.as_str(), true)])
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let f = dir
        .path()
        .join("00000000-0000-4000-8000-000000000001.jsonl");
    let text: String = edges.iter().map(|(l, _)| format!("{l}\n")).collect();
    std::fs::write(&f, text).unwrap();
    let s = Session::open(&f).unwrap();
    let entries: Vec<u32> = s
        .entries()
        .iter()
        .filter(|e| e.is_node())
        .map(|e| e.line)
        .collect();
    for (n, (line, want)) in edges.iter().enumerate() {
        assert_eq!(super::shown(line.as_bytes()), *want, "{line}");
        let entry = entries.contains(&(n as u32 + 1));
        assert!(!entry || *want, "{line}: an entry, not shown");
    }
    assert_eq!(
        entries.len(),
        edges.iter().filter(|e| e.1).count(),
        "{entries:?}"
    );
}
