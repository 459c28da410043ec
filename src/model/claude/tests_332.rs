//! The model against files Claude Code 2.1.332 wrote (`tests/fixtures/claude-332`, made
//! by the oracle kit's `run_all.sh sdkrw withdrawn localgc tui`): the leaf after every
//! checkpoint form, rewound branches, the `/branch` copy from the root, the in-place
//! rewrite, the new line types and attachments, `custom-title.json`.
//!
//! The chain ends below are what the CLI itself reported (`context.sh FILE`:
//! `chainEnd`, the node its next prompt hangs under), for each whole file and for the
//! file cut right after a checkpoint line (`head -N`); `None` where it starts a new root.

use crate::model::core::session::ProblemKind;
use crate::model::core::session::Session;
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-332")
}

const SDK_ENDED: &str = "sdkrw/50cee541-76fb-4ed6-a159-76f22b85d42a.jsonl";
const SDK_CONTINUED: &str = "sdkrw/87a77255-fd32-496c-b576-c47f11c2c8c1.jsonl";
const SDK_RESUMED: &str = "sdkrw/ea9e3a48-7029-47c9-880d-e49e6421986f.jsonl";
const WITHDRAWN: &str = "withdrawn/0b082ba5-8298-406b-917d-4d2a32f1ec81.jsonl";
const TUI: &str = "tui/c48daa91-9a5a-438f-a10f-a0ba4c44bc63.jsonl";
const TUI_BRANCH: &str = "tui/88182d24-0746-4661-953b-4b7763ac29f5.jsonl";
const LOCAL_GC: &str = "localgc/51f201e9-e473-4f58-8ad4-ab540b2739e9.jsonl";

const ALL: &[&str] = &[
    SDK_ENDED,
    SDK_CONTINUED,
    SDK_RESUMED,
    WITHDRAWN,
    TUI,
    TUI_BRANCH,
    LOCAL_GC,
];

/// The first `lines` lines of a fixture, as a session file of the same name in a
/// temporary folder (with its side folder when it has one).
fn prefix(rel: &str, lines: usize) -> (tempfile::TempDir, PathBuf) {
    let src = dir().join(rel);
    let text = std::fs::read_to_string(&src).unwrap();
    let cut: String = text.split_inclusive('\n').take(lines).collect();
    let t = tempfile::tempdir().unwrap();
    let dst = t.path().join(src.file_name().unwrap());
    std::fs::write(&dst, cut).unwrap();
    (t, dst)
}

fn chain_end(s: &Session) -> Option<String> {
    s.leaf().map(|l| s.id_string(l))
}

#[test]
fn every_checkpoint_gives_the_clis_chain_end() {
    // (file, lines read (0: all), the CLI's chain end)
    let cases: &[(&str, usize, Option<&str>)] = &[
        // The SDK's rewind: `rewound`/`cutUuid` naming the assistant before the cut
        // prompt, then the exit's unflagged line naming the same: its prompt_snapshot.
        (SDK_ENDED, 0, Some("49264726-0d34-459b-8367-ea0a8233e5f1")),
        // Right after the flagged line only.
        (
            SDK_CONTINUED,
            35,
            Some("a5cb66fe-3c15-4509-b2bd-33f8d91de870"),
        ),
        // Prompts after the rewind continue from the cut.
        (
            SDK_CONTINUED,
            0,
            Some("a377fc9c-6ca7-4a5c-8f23-13407af6d028"),
        ),
        (SDK_RESUMED, 0, Some("1900cd04-b9cb-4826-a9b5-2e5413287ca9")),
        // The withdrawn checkpoint: no chain end (the next prompt is a new root)...
        (WITHDRAWN, 31, None),
        // ...and after that new root, its own chain.
        (WITHDRAWN, 0, Some("77f57b6f-720a-439f-8760-fede0b5d1de2")),
        // The TUI's checkpoint with a nil leaf, right after each rewind's prompt.
        (TUI, 54, Some("caca5394-5e2b-432b-9e24-ce2fe795f08a")),
        (TUI, 79, Some("643f5285-1d45-43b1-93b9-a3bb8522fb3c")),
        (TUI, 0, Some("96432a89-4c84-4a22-a3ba-0a271732d87e")),
        (TUI_BRANCH, 0, Some("49f89244-3f12-440d-8171-f5157724e8f7")),
        // The in-place rewrite.
        (LOCAL_GC, 0, Some("1dfc3e21-229b-43a6-853e-7bc708c30c1f")),
    ];
    for &(rel, lines, want) in cases {
        let s = if lines == 0 {
            Session::open(dir().join(rel)).unwrap()
        } else {
            let (_t, p) = prefix(rel, lines);
            Session::open(&p).unwrap()
        };
        assert_eq!(chain_end(&s).as_deref(), want, "{rel} (lines: {lines})");
    }
}

/// The entries on the way from the root to `i`, as uuids.
fn path_ids(s: &Session, i: u32) -> Vec<String> {
    s.path_to(i).into_iter().map(|k| s.id_string(k)).collect()
}

#[test]
fn a_rewound_branch_stays_browsable() {
    let s = Session::open(dir().join(SDK_CONTINUED)).unwrap();
    // The cut prompt and everything after it are still entries, on a branch of their
    // own beside the conversation that went on from the cut.
    let cut = s
        .find("a352f650-3d3a-42b9-b79f-03d75fcf68ab")
        .expect("the cut prompt is an entry");
    let old_tip = s
        .find("36ffc0ec-3c85-4d3f-a9dc-ed39ceed79aa")
        .expect("old answer");
    assert!(path_ids(&s, old_tip).contains(&s.id_string(cut)));
    assert!(
        s.leaves().contains(&old_tip),
        "the rewound branch's tip is a branch"
    );
    let leaf = s.leaf().unwrap();
    assert!(!path_ids(&s, leaf).contains(&s.id_string(cut)));
    // Both branches hang under the same node: the chain end before the cut prompt.
    let fork = s.parent(cut).unwrap();
    assert!(path_ids(&s, leaf).contains(&s.id_string(fork)));
    assert_eq!(s.leaf_count(), 2);
    let tree = String::from_utf8(crate::model::core::tree::render_tree(&s).unwrap()).unwrap();
    assert!(
        tree.contains("[[REW2]] Second question: another colour."),
        "{tree}"
    );
    assert!(tree.contains("[[REW2b]] Second question again"), "{tree}");
}

#[test]
fn a_withdrawn_checkpoint_leaves_the_first_root_browsable() {
    let s = Session::open(dir().join(WITHDRAWN)).unwrap();
    assert_eq!(s.roots().len(), 2);
    let first = s.roots()[0];
    assert_eq!(s.id_string(first), "47df6458-6425-4aa9-a7b6-7a18d479fc55");
    let leaf = s.leaf().unwrap();
    assert_eq!(
        path_ids(&s, leaf)[0],
        "64d1b507-316e-44e5-a49c-5f11b7ebebcd"
    );
    assert_eq!(s.leaf_count(), 2);
}

#[test]
fn a_branch_copy_reads_from_the_root() {
    // `/branch` after a compaction: the copy starts at the first prompt, and its
    // boundary is linked to the line before it; one conversation, one root.
    let s = Session::open(dir().join(TUI_BRANCH)).unwrap();
    assert_eq!(s.roots().len(), 1, "one root");
    assert!(s.problems().is_empty(), "{:?}", s.problems());
    let leaf = s.leaf().unwrap();
    let path = path_ids(&s, leaf);
    assert_eq!(path[0], "0266083b-6532-4b1c-afe1-ac0e0d227ff3");
    let b = s.find("e50ea723-9080-46eb-81a5-f526781bfc59").unwrap();
    assert_eq!(s.kind_name(b), "compact_boundary");
    assert_eq!(
        s.id_string(s.parent(b).unwrap()),
        "643f5285-1d45-43b1-93b9-a3bb8522fb3c"
    );
    assert!(path.contains(&s.id_string(b)));
    assert_eq!(s.name(), Some("tui-branch"));
}

#[test]
fn every_line_type_2_1_332_writes_is_known() {
    let mut files: Vec<PathBuf> = ALL.iter().map(|r| dir().join(r)).collect();
    // The samples the issue measured, as committed with their goldens.
    let samples =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-2.1.332/projects");
    let before = files.len();
    for p in std::fs::read_dir(&samples).unwrap().flatten() {
        for f in std::fs::read_dir(p.path()).into_iter().flatten().flatten() {
            if f.path().extension().is_some_and(|x| x == "jsonl") {
                files.push(f.path());
            }
        }
    }
    assert!(files.len() > before, "no samples in {samples:?}");
    for f in files {
        let s = Session::open(&f).unwrap();
        for p in s.problems() {
            assert!(
                !matches!(
                    p.what,
                    ProblemKind::UnknownLine(_) | ProblemKind::UnknownType(_)
                ),
                "{f:?}:{}: {:?}",
                p.line,
                p.what
            );
        }
    }
}

#[test]
fn custom_title_json_names_the_session() {
    // A file whose title lines are gone (an in-place rewrite drops what came before
    // its boundary), and the side file `/rename` wrote.
    let (t, p) = prefix(SDK_ENDED, 40);
    let text = std::fs::read_to_string(&p).unwrap();
    let mut s = Session::open(&p).unwrap();
    // Untitled: the last prompt typed (`last-prompt`), as Claude Code's picker shows it.
    assert_eq!(s.name(), Some("[[REW3]] Third question: one more colour."));
    let side = t.path().join("50cee541-76fb-4ed6-a159-76f22b85d42a");
    std::fs::create_dir(&side).unwrap();
    let title = side.join("custom-title.json");
    std::fs::write(
        &title,
        r#"{"customTitle":"Colours","by":"user","at":"2026-12-01T20:44:03.116Z"}"#,
    )
    .unwrap();
    s.refresh().unwrap();
    assert_eq!(s.name(), Some("Colours"));
    // Rewritten by the next `/rename`: followed.
    std::fs::write(
        &title,
        r#"{"customTitle":"Colours, again","by":"user","at":"2026-12-01T20:45:03.116Z"}"#,
    )
    .unwrap();
    s.refresh().unwrap();
    assert_eq!(s.name(), Some("Colours, again"));
    // A `custom-title` line wins (Claude Code writes both; the line is the session's).
    let sid = "50cee541-76fb-4ed6-a159-76f22b85d42a";
    let line = format!(
        "{{\"type\":\"custom-title\",\"customTitle\":\"From the line\",\"sessionId\":\"{sid}\"}}\n"
    );
    std::fs::write(&p, format!("{text}{line}")).unwrap();
    s.refresh().unwrap();
    assert_eq!(s.name(), Some("From the line"));
    // Junk in the side file is no title.
    std::fs::write(&p, &text).unwrap();
    std::fs::write(&title, b"{not json").unwrap();
    let s = Session::open(&p).unwrap();
    assert_eq!(s.name(), Some("[[REW3]] Third question: one more colour."));
    // The fixture's own side file, with its `custom-title` lines.
    let s = Session::open(dir().join(TUI)).unwrap();
    assert_eq!(s.name(), Some("TUI rewind demo"));
}

#[test]
fn attachments_say_what_they_are() {
    let s = Session::open(dir().join(WITHDRAWN)).unwrap();
    let by_type = |t: &str| -> u32 {
        (0..s.entries().len() as u32)
            .find(|&i| {
                s.kind_name(i) == "attachment"
                    && s.entry_value(i).unwrap()["attachment"]["type"] == t
            })
            .unwrap_or_else(|| panic!("{t}"))
    };
    let text = |t: &str| s.render(by_type(t)).unwrap().0;
    let prev = |t: &str| s.preview(by_type(t)).unwrap();
    let env = text("environment");
    assert!(
        env.starts_with("[attachment environment, sent as system text]\n# Environment\n"),
        "{env}"
    );
    assert!(env.contains(" - Platform: linux\n"), "{env}");
    assert!(!env.contains("system-reminder"), "{env}");
    assert!(
        prev("environment")
            .starts_with("attachment environment /work/kits/i17b-root/src/withdrawn (linux, bash"),
        "{}",
        prev("environment")
    );
    assert_eq!(
        text("model"),
        "[attachment model, sent as system text]\nYou are powered by the model named Opus 5.5. The exact model ID is claude-opus-5-5. Assistant knowledge cutoff is June 2026.\n"
    );
    assert_eq!(prev("model"), "attachment model claude-opus-5-5 (Opus 5.5)");
    assert!(prev("deferred_tools_delta").starts_with("attachment tools +CronCreate +CronDelete"));
    assert!(text("deferred_tools_delta").contains("\nWebSearch\n"));
    assert!(prev("agent_listing_delta").starts_with("attachment agents +claude +Explore"));
    assert!(prev("skill_listing").starts_with("attachment skills dataviz, "));
    assert_eq!(prev("date"), "attachment date 2026-12-01");
    assert_eq!(prev("remote_session_change"), "attachment git attribution");
    assert!(text("remote_session_change").starts_with(
        "[attachment remote_session_change, sent as user text]\nAttribution for git commits"
    ));
    assert_eq!(
        text("session_context"),
        "[attachment session_context: not sent to the model]\n{\n  \"type\": \"session_context\",\n  \"context\": {}\n}\n"
    );
    let snap = text("prompt_snapshot");
    assert!(
        snap.starts_with("[attachment prompt_snapshot: not sent to the model; the system prompt and tools of the requests from here]\n"),
        "{snap}"
    );
    assert!(snap.contains("\n[system prompt]\n"), "{snap}");
    // The first turn's snapshot records the tools too, each read as a declaration.
    let with_tools = (0..s.entries().len() as u32)
        .map(|i| s.render(i).unwrap().0)
        .find(|t| t.starts_with("[attachment prompt_snapshot") && t.contains("\n[tool Bash]\n"))
        .expect("a snapshot with its tools");
    let bash = &with_tools[with_tools.find("\n[tool Bash]\n").unwrap()..];
    assert!(
        bash.contains("\nparameters:\n  command (string, required): "),
        "{bash}"
    );
}

#[test]
fn a_run_of_attachments_is_one_tree_line() {
    let s = Session::open(dir().join(WITHDRAWN)).unwrap();
    let tree = String::from_utf8(crate::model::core::tree::render_tree(&s).unwrap()).unwrap();
    let lines: Vec<&str> = tree.lines().collect();
    // Per root: the prompt, the nine attachments on one line, the answer, and so on.
    let run = lines
        .iter()
        .find(|l| l.contains("740f4676-"))
        .expect("the first run");
    assert!(run.contains("attachments ×9 to 1062e8ea-"), "{run}");
    for gist in [
        "environment /work/kits/i17b-root/src/withdrawn",
        "; model claude-opus-5-5 (Opus 5.5); tools +CronCreate",
        "; agents +claude",
        "; skills dataviz",
        "; session_context; date 2026-12-01; git attribution; prompt snapshot (not sent)",
    ] {
        assert!(run.contains(gist), "{gist} in {run}");
    }
    // The run's line names its first and last entries; the ones between are entries
    // as before (directories `find` and `grep -r` see), only without a line.
    for (u, n) in [("740f4676-", 1), ("1062e8ea-", 1), ("e2735d4b-", 0)] {
        assert!(
            s.entries()
                .iter()
                .any(|e| s.ids().resolve(e.id).is_some_and(|x| x.starts_with(u)))
        );
        assert_eq!(lines.iter().filter(|l| l.contains(u)).count(), n, "{u}");
    }
    // The leaf keeps a line of its own, marked.
    let leaf = s.id_string(s.leaf().unwrap());
    let leaf_line = lines.iter().find(|l| l.contains(&leaf)).unwrap();
    assert!(leaf_line.ends_with("← leaf"), "{leaf_line}");
    // 29 entries on far fewer lines.
    assert_eq!(s.node_count(), 29);
    assert!(lines.len() <= 13, "{tree}");
}

#[test]
fn an_in_place_rewrite_reads_as_claude_codes_view() {
    // The preserved answer comes first, its parent gone with the lines before the
    // boundary: a root, and no damage to report.
    let s = Session::open(dir().join(LOCAL_GC)).unwrap();
    assert!(s.problems().is_empty(), "{:?}", s.problems());
    assert_eq!(s.roots().len(), 1);
    let root = s.roots()[0];
    assert_eq!(s.kind_name(root), "assistant");
    let leaf = s.leaf().unwrap();
    assert_eq!(s.path_to(leaf)[0], root);
}
