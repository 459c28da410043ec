//! Claude Code sessions through real mounts, driven with the shell tools.
//!
//! Fixtures: `tests/fixtures/claude/projects` (sessions written by Claude Code 2.1.197,
//! laid out as `~/.claude/projects`), `tests/fixtures/claude/contexts-2.1.332` (what the current CLI
//! sends when continuing from each entry) and `tests/fixtures/claude/damaged`.

mod common;

use common::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude")
}

/// A copy of the fixture projects in a fresh directory, mounted as a directory:
/// `sessionfs mount PROJECTS MNT`. Returns the mount and the copy's path.
fn mount_projects() -> (Mount, PathBuf) {
    let dir = tempdir();
    let projects = dir.path().join("projects");
    copy_tree(&fixtures().join("projects"), &projects);
    (
        Mount::sessions_dir(dir, Some(&projects), &[], &[]),
        projects,
    )
}

/// A copy of one fixture session (with its side folder) mounted alone.
fn mount_session(project: &str, sid: &str) -> Mount {
    let dir = tempdir();
    let src = fixtures().join("projects").join(project);
    let file = dir.path().join(format!("{sid}.jsonl"));
    fs::copy(src.join(format!("{sid}.jsonl")), &file).unwrap();
    if src.join(sid).is_dir() {
        copy_tree(&src.join(sid), &dir.path().join(sid));
    }
    Mount::start(dir, file, &[])
}

/// Every main session: (project, session id, expected contexts).
fn sessions() -> Vec<(String, String, serde_json::Map<String, Value>)> {
    let mut out = Vec::new();
    for p in fs::read_dir(fixtures().join("projects")).unwrap() {
        let p = p.unwrap();
        for f in fs::read_dir(p.path()).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_none_or(|x| x != "jsonl") {
                continue;
            }
            let sid = f.file_stem().unwrap().to_string_lossy().into_owned();
            let ctx = fixtures().join(format!("contexts-2.1.332/{sid}.contexts.json"));
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

fn lines_of(file: &Path) -> Vec<Value> {
    fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn keys(v: &Value) -> Vec<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

// CLAUDE-FORMAT §5, §6, §8: the context of every entry, read with `cat` through a
// directory mount, equals what Claude Code 2.1.332 sends (220 entries, 17 sessions).
#[test]
fn every_expected_context_reads_equal_through_the_mount() {
    let (m, _) = mount_projects();
    let mut checked = 0;
    for (project, sid, expected) in sessions() {
        // One `cat` per session, of every entry's context.json, NUL-separated.
        let uuids: Vec<&String> = expected.keys().collect();
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
            assert_eq!(
                &got, &expected[*u]["messages"],
                "{project}/{sid}: context.json of {u} (via {})",
                expected[*u]["via"]
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 220);
}

// §6: `leaf` is the chain end Claude Code would attach a new prompt to.
#[test]
fn leaf_is_the_chain_end() {
    let (m, _) = mount_projects();
    for (project, sid, expected) in sessions() {
        let want = expected
            .iter()
            .find(|(_, v)| v.get("leaf") == Some(&Value::Bool(true)))
            .map(|(k, _)| k.clone())
            .unwrap();
        let out = run("readlink", &[format!("./{project}/{sid}/leaf")], &m.mnt).ok();
        assert_eq!(out.stdout.trim(), format!(".id/{want}"), "{sid}");
    }
}

// §2.1, §3.1: every node is a directory under its parent; the readable context names
// the roles; `grep -r` sees each line once (a subagent's lines included), never a
// symlinked view.
#[test]
fn grep_r_finds_each_line_once() {
    let (m, projects) = mount_projects();
    // Markers written once each in the prompts of the scenarios.
    for marker in [
        "[[TOOLS]]",
        "[[IMG2]]",
        "[[BRANCH1]]",
        "[[SUBTASK]]",
        "[[REW3b]]",
    ] {
        let out = run("grep", &["-rlF", marker, "."], &m.mnt);
        assert_eq!(out.code(), Some(0), "{out:?}");
        let hits: BTreeSet<String> = out
            .stdout
            .lines()
            .filter(|l| !l.ends_with("/tree") && !l.ends_with("/name"))
            .map(str::to_string)
            .collect();
        // How many node lines of the fixtures hold the marker in what their KIND file
        // shows: every line with it in `message` (the prompt, a tool call's input).
        let mut want = 0;
        for f in walk(&projects) {
            for l in fs::read_to_string(&f).unwrap().lines() {
                let v: Value = serde_json::from_str(l).unwrap();
                if v.get("uuid").is_some()
                    && v.get("message").is_some_and(|msg| {
                        let c = msg.get("content").unwrap();
                        let shown: Vec<&Value> = match c {
                            Value::Array(bs) => bs
                                .iter()
                                .filter(|b| {
                                    b["type"] != "tool_result"
                                        || !b.to_string().contains("agentId:")
                                })
                                .collect(),
                            other => vec![other],
                        };
                        shown.iter().any(|x| x.to_string().contains(marker))
                    })
                {
                    want += 1;
                }
            }
        }
        assert_eq!(hits.len(), want, "{marker}: {hits:#?}");
        for h in &hits {
            assert!(!h.contains("/.id/"), "{h}");
        }
    }
    // Each KIND file of a line is found once: no hit appears twice.
    let out = run("grep", &["-rl", "\\[\\[", "."], &m.mnt).ok();
    let all: Vec<&str> = out.stdout.lines().collect();
    let set: BTreeSet<&str> = all.iter().copied().collect();
    assert_eq!(all.len(), set.len());
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
    out
}

// §9: a reply written with the shell is a user line in Claude Code's shape and key
// order, under the entry written to; under an entry that is not the chain end it is
// followed by a `last-prompt` naming it, so that `claude --resume` continues there.
#[test]
fn a_reply_lands_in_claude_codes_shape() {
    let m = mount_session(
        "-home-dev-src-tools",
        "644750c6-819f-4bc1-8d96-f535db009ee8",
    );
    let before = fs::read(&m.file).unwrap();
    let leaf = "ad8b588c-631c-411f-9f86-3717ad0a4ee7";
    sh(
        &format!("echo 'Written through the mount: what is 6*7?' > .id/{leaf}/reply"),
        &m.mnt,
    )
    .ok();
    let after = fs::read(&m.file).unwrap();
    assert!(after.starts_with(&before), "the old bytes changed");
    let new = lines_of(&m.file);
    let line = new.last().unwrap();
    assert_eq!(
        keys(line),
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
    assert_eq!(line["parentUuid"], leaf);
    assert_eq!(line["type"], "user");
    assert_eq!(
        line["message"],
        serde_json::json!({"role": "user", "content": "Written through the mount: what is 6*7?"})
    );
    assert_eq!(line["cwd"], "/home/dev/src/tools");
    assert_eq!(line["sessionId"], "644750c6-819f-4bc1-8d96-f535db009ee8");
    assert_eq!(line["isSidechain"], false);
    let uuid = line["uuid"].as_str().unwrap().to_string();
    assert_eq!(uuid.len(), 36);
    // At the chain end: one line, no last-prompt.
    assert_eq!(
        new.len(),
        lines_of(
            &fixtures()
                .join("projects/-home-dev-src-tools/644750c6-819f-4bc1-8d96-f535db009ee8.jsonl")
        )
        .len()
            + 1
    );
    // It is the new leaf, and its directory is there.
    let out = run("readlink", &["leaf"], &m.mnt).ok();
    assert_eq!(out.stdout.trim(), format!(".id/{uuid}"));
    assert!(m.path(&format!(".id/{leaf}/{uuid}/user")).exists());

    // Under an earlier entry: a new branch, named by a last-prompt line.
    let first = "8b261133-62e1-43f7-9a29-5e952ad31b70";
    sh(&format!("echo 'A new branch' > .id/{first}/reply"), &m.mnt).ok();
    let new = lines_of(&m.file);
    let (l, lp) = (&new[new.len() - 2], &new[new.len() - 1]);
    assert_eq!(l["parentUuid"], first);
    assert_eq!(keys(lp), ["type", "lastPrompt", "leafUuid", "sessionId"]);
    assert_eq!(lp["type"], "last-prompt");
    assert_eq!(lp["leafUuid"], l["uuid"]);
    assert_eq!(lp["lastPrompt"], "A new branch");
    let out = run("readlink", &["leaf"], &m.mnt).ok();
    assert_eq!(
        out.stdout.trim(),
        format!(".id/{}", l["uuid"].as_str().unwrap())
    );
    // The context there ends with the new prompt.
    let out = run("cat", &["leaf/context.json"], &m.mnt).ok();
    let ctx: Value = serde_json::from_str(&out.stdout).unwrap();
    let last = ctx.as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "assistant", "{ctx}");
    assert_eq!(last["content"][0]["text"], "No response requested.");
    // A reply to a subagent's line, or a label, is refused; nothing is written.
    let size = fs::metadata(&m.file).unwrap().len();
    let out = sh(
        "ln -s .id/8b261133-62e1-43f7-9a29-5e952ad31b70 labels/x",
        &m.mnt,
    );
    assert_ne!(out.code(), Some(0));
    assert!(
        out.stderr.contains("Operation not supported"),
        "{}",
        out.stderr
    );
    assert_eq!(fs::metadata(&m.file).unwrap().len(), size);
}

// §7: writing `name` appends the `custom-title` and `agent-name` pair `/rename`
// writes; the name follows the title rule.
#[test]
fn name_writes_a_title() {
    let m = mount_session("-home-dev-src-qa", "07d0e045-3cdc-4eca-a398-7147bce4b33f");
    let out = run("cat", &["name"], &m.mnt).ok();
    assert_eq!(out.stdout, "[[AFTERCOMPACT]] What do you remember?\n");
    sh("echo 'Arithmetic, compacted' > name", &m.mnt).ok();
    let new = lines_of(&m.file);
    let (a, b) = (&new[new.len() - 2], &new[new.len() - 1]);
    assert_eq!(keys(a), ["type", "customTitle", "sessionId"]);
    assert_eq!(a["customTitle"], "Arithmetic, compacted");
    assert_eq!(keys(b), ["type", "agentName", "sessionId"]);
    assert_eq!(b["agentName"], "Arithmetic, compacted");
    let ok = wait_until(DEADLINE, || {
        fs::read_to_string(m.path("name")).is_ok_and(|n| n == "Arithmetic, compacted\n")
    });
    assert!(ok, "{:?}", fs::read_to_string(m.path("name")));
}

// §3.3: lines another program appends show up; a child written before its parent
// is a root until the parent arrives, then moves under it.
#[test]
fn live_appends_show_up_even_a_child_before_its_parent() {
    let m = mount_session("-home-dev-src-qa", "034d3153-8c13-4469-9665-5948bffe2026");
    let leaf = "6e149d9b-2a54-4780-b03f-b3c8888586ee";
    let parent = "00000000-0000-4000-8000-00000000aaaa";
    let child = "00000000-0000-4000-8000-00000000bbbb";
    let line = |uuid: &str, p: &str, text: &str, ts: &str| {
        format!(
            "{{\"parentUuid\":\"{p}\",\"isSidechain\":false,\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"{text}\"}},\"uuid\":\"{uuid}\",\"timestamp\":\"{ts}\",\"sessionId\":\"034d3153-8c13-4469-9665-5948bffe2026\"}}\n"
        )
    };
    let append = |s: &str| {
        let mut f = fs::OpenOptions::new().append(true).open(&m.file).unwrap();
        f.write_all(s.as_bytes()).unwrap();
    };
    append(&line(
        child,
        parent,
        "[[CHILD]] written first",
        "2026-12-01T07:00:02.000Z",
    ));
    let started = std::time::Instant::now();
    assert!(wait_until(DEADLINE, || {
        try_ls(&m.mnt).is_some_and(|l| l.contains(&child.to_string()))
    }));
    eprintln!("child visible after {:?}", started.elapsed());
    append(&line(
        parent,
        leaf,
        "[[PARENT]] written second",
        "2026-12-01T07:00:01.000Z",
    ));
    assert!(wait_until(DEADLINE, || {
        try_ls(&m.path(&format!(".id/{parent}"))).is_some_and(|l| l.contains(&child.to_string()))
    }));
    assert!(wait_until(DEADLINE, || {
        try_ls(&m.mnt).is_some_and(|l| !l.contains(&child.to_string()))
    }));
    let out = run("cat", &[format!(".id/{child}/user")], &m.mnt).ok();
    assert_eq!(out.stdout, "[[CHILD]] written first\n");
    // The leaf rule starts from the last node line of the file (the parent), since it
    // descends from the last `last-prompt`'s leaf: Claude Code would resume there.
    let out = run("readlink", &["leaf"], &m.mnt).ok();
    assert_eq!(out.stdout.trim(), format!(".id/{parent}"));
    // A torn line waits for its newline.
    append("{\"parentUuid\":\"");
    std::thread::sleep(Duration::from_millis(50));
    let out = run("readlink", &["leaf"], &m.mnt).ok();
    assert_eq!(out.stdout.trim(), format!(".id/{parent}"));
}

// §3.4: the dead end of parallel tool calls is shown where the file puts it, but is
// no branch: `branches/` has one tip, and `tree` draws the turn in one column.
#[test]
fn parallel_tool_results_are_not_branches() {
    let m = mount_session(
        "-home-dev-src-tools",
        "644750c6-819f-4bc1-8d96-f535db009ee8",
    );
    let a2 = "38f1cab0-3979-405c-a99e-a3e747d60c38";
    let mut kids = try_ls(&m.path(&format!(".id/{a2}"))).unwrap();
    kids.retain(|k| k.contains('-') && k.len() == 36);
    kids.sort();
    assert_eq!(
        kids,
        [
            "40f08c07-2bf2-4a07-8c32-9593750315ba",
            "9e9f862a-7cb9-4318-97fb-bfb96c9bda9c"
        ]
    );
    assert_eq!(
        try_ls(&m.path("branches")).unwrap(),
        ["ad8b588c-631c-411f-9f86-3717ad0a4ee7"]
    );
    let tree = run("cat", &["tree"], &m.mnt).ok().stdout;
    assert!(!tree.contains('├'), "{tree}");
    // The streaming split reads without guessing.
    let out = run("cat", &[format!(".id/{a2}/assistant")], &m.mnt).ok();
    assert!(
        out.stdout
            .starts_with("[part 2 of 3 of reply msg_01TjI5qXswWX6gSSKjZOurfm]\n[tool call Read (toolu_tools_02)]\n"),
        "{}",
        out.stdout
    );
    // The result names its tool.
    let out = run(
        "cat",
        &[".id/9e9f862a-7cb9-4318-97fb-bfb96c9bda9c/toolResult"],
        &m.mnt,
    )
    .ok();
    assert!(
        out.stdout
            .starts_with("[tool result Read (toolu_tools_02)]\n1\thello world"),
        "{}",
        out.stdout
    );
}

// §10: a subagent's transcript is reachable from the call that spawned it, as
// `agent-<id>/`; a spilled tool result reads in full as `full-output`.
#[test]
fn subagents_and_spilled_results_are_reachable() {
    let m = mount_session("-home-dev-src-sub", "b3730bc4-7f81-47f4-84e9-5fd6ab8f85ea");
    let call = ".id/2e0521f0-4eaa-434a-b9fc-4e79b6b6ff6b";
    let names = try_ls(&m.path(call)).unwrap();
    assert!(
        names.contains(&"agent-acfbc9cb8be5d6a1d".to_string()),
        "{names:?}"
    );
    let out = run(
        "cat",
        &[format!("{call}/agent-acfbc9cb8be5d6a1d/user")],
        &m.mnt,
    )
    .ok();
    assert_eq!(
        out.stdout,
        "[[SUBTASK]] Count the files in /home/dev/src/sub and report the number.\n"
    );
    let out = run("find", &[".", "-name", "assistant"], &m.mnt).ok();
    assert_eq!(out.stdout.lines().count(), 3 + 3, "{}", out.stdout);
    // Its tips are not branches of the conversation.
    assert_eq!(try_ls(&m.path("branches")).unwrap().len(), 1);
    drop(m);

    let m = mount_session("-home-dev-src-big", "5aa252c6-78fb-47ae-af22-e00c3a1b6282");
    let r = ".id/e2a2da42-924e-4be1-add5-26f05d70d245";
    let full = fixtures().join(
        "projects/-home-dev-src-big/5aa252c6-78fb-47ae-af22-e00c3a1b6282/tool-results/b64cy0vmt.txt",
    );
    let out = run("cat", &[format!("{r}/full-output")], &m.mnt).ok();
    assert_eq!(out.stdout.as_bytes(), fs::read(&full).unwrap());
    let out = run("grep", &["-rlx", "99999", "."], &m.mnt).ok();
    assert_eq!(out.stdout.lines().count(), 1, "{}", out.stdout);
    assert!(out.stdout.trim().ends_with("/full-output"));
}

// §10: images are decoded, from a user line and from a tool result.
#[test]
fn images_are_decoded() {
    let m = mount_session(
        "-home-dev-src-image",
        "ee13ce71-80fd-4fb9-9b6c-ce5d2ab4f03d",
    );
    let u = ".id/f7fa5bd8-dba9-4475-b56a-79b418213a1e";
    let out = run("cat", &[format!("{u}/user")], &m.mnt).ok();
    assert!(out.stdout.contains("→ image-1.png]"), "{}", out.stdout);
    let png = fs::read(m.path(&format!("{u}/image-1.png"))).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
    let out = run("file", &[format!("{u}/image-1.png")], &m.mnt);
    if out.status.success() {
        assert!(
            out.stdout.contains("PNG image data, 16 x 16"),
            "{}",
            out.stdout
        );
    }
    drop(m);
    let m = mount_session(
        "-home-dev-src-image",
        "fe0aa437-1a8e-45c4-895c-bef4143e6bc9",
    );
    let png = fs::read(m.path(".id/fee999c8-1e8b-46a0-af26-318bf010274b/image-1.png")).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
}

// §2: KIND files are named by what each line is.
#[test]
fn kind_files_name_what_each_line_is() {
    let (m, _) = mount_projects();
    let out = run(
        "find",
        &[
            ".", "-type", "f", "-not", "-name", "reply", "-not", "-name", "image-*",
        ],
        &m.mnt,
    )
    .ok();
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    for l in out.stdout.lines() {
        let name = l.rsplit('/').next().unwrap();
        *kinds.entry(name.to_string()).or_default() += 1;
    }
    for k in [
        "user",
        "assistant",
        "toolResult",
        "meta",
        "compactSummary",
        "attachment",
        "turn_duration",
        "local_command",
        "compact_boundary",
        "full-output",
        "session.json",
        "name",
        "tree",
    ] {
        assert!(kinds.contains_key(k), "no {k} file: {kinds:?}");
    }
}

// Torn lines, unknown types, missing parents, cycles, duplicates, garbage: each file
// mounts, walks and greps without a hang, and is never written to.
#[test]
fn damaged_claude_files_mount() {
    for e in fs::read_dir(fixtures().join("damaged")).unwrap() {
        let src = e.unwrap().path();
        let name = src.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = fs::read(&src).unwrap();
        let dir = tempdir();
        let file = dir.path().join(&name);
        fs::write(&file, &bytes).unwrap();
        if bytes.is_empty() {
            // Refused, as an empty Pi file is; never written to.
            let mnt = dir.path().join("mnt");
            fs::create_dir(&mnt).unwrap();
            let out = sessionfs(
                &[OsStr::new("mount"), file.as_os_str(), mnt.as_os_str()],
                dir.path(),
            );
            assert_eq!(out.code(), Some(4), "{out:?}");
            assert_eq!(fs::read(&file).unwrap(), bytes);
            continue;
        }
        let m = Mount::start(dir, file.clone(), &[]);
        run("find", &["."], &m.mnt).ok();
        let out = run("grep", &["-r", "-c", "[[", "."], &m.mnt);
        assert!(out.code().is_some(), "{name}: {out:?}");
        let out = sh(
            "cat tree leaf/context leaf/context.json > /dev/null 2>&1; cat tree",
            &m.mnt,
        );
        assert!(
            out.status.success() || name == "metadata-only.jsonl",
            "{name}: {out:?}"
        );
        assert_eq!(fs::read(&m.file).unwrap(), bytes, "{name} was written to");
        drop(m);
    }
}

// A progress line (older builds) is no entry: its child hangs under its parent.
#[test]
fn progress_lines_are_skipped_and_their_children_reparented() {
    let dir = tempdir();
    let file = dir.path().join("unknown-types.jsonl");
    fs::copy(fixtures().join("damaged/unknown-types.jsonl"), &file).unwrap();
    let m = Mount::start(dir, file, &[]);
    let leaf = "6e149d9b-2a54-4780-b03f-b3c8888586ee";
    let kids = try_ls(&m.path(&format!(".id/{leaf}"))).unwrap();
    assert!(
        kids.contains(&"00000000-0000-4000-8000-000000000004".to_string()),
        "{kids:?}"
    );
    assert!(
        kids.contains(&"00000000-0000-4000-8000-000000000002".to_string()),
        "{kids:?}"
    );
    assert!(!m.path(".id/00000000-0000-4000-8000-000000000003").exists());
    let out = run(
        "cat",
        &[".id/00000000-0000-4000-8000-000000000002/future_node"],
        &m.mnt,
    )
    .ok();
    assert!(out.stdout.contains("\"payload\""), "{}", out.stdout);
}

// `sessionfs mount MOUNTPOINT` shows every agent found, one folder each, each laid out
// as its directory mount; `labels/` of a Claude Code session is empty and read-only.
#[test]
fn all_agents_side_by_side() {
    let dir = tempdir();
    let home = dir.path().join("home");
    let pi = home.join(".pi/agent/sessions/--home-dev-cli--");
    fs::create_dir_all(&pi).unwrap();
    fs::copy(
        fixture("small.jsonl"),
        pi.join("2026-01-05T09-00-00-000Z_0193.jsonl"),
    )
    .unwrap();
    copy_tree(&fixtures().join("projects"), &home.join(".claude/projects"));
    let m = Mount::sessions_dir(
        dir,
        None,
        &[],
        &[
            ("HOME", home.as_os_str()),
            ("PI_CODING_AGENT_DIR", home.join(".pi/agent").as_os_str()),
        ],
    );
    assert_eq!(try_ls(&m.mnt).unwrap(), ["claude", "pi"]);
    assert_eq!(try_ls(&m.path("pi")).unwrap(), ["--home-dev-cli--"]);
    // Side folders and memory/ are no projects or sessions.
    assert_eq!(
        try_ls(&m.path("claude/-home-dev-src-tui")).unwrap(),
        [
            "9a35a251-e6e4-429e-b75c-cb5cb7ce24f3",
            "f484a23c-c413-49b1-97b1-05298240ac81"
        ]
    );
    assert_eq!(
        try_ls(&m.path("claude/-home-dev-src-sub")).unwrap(),
        ["b3730bc4-7f81-47f4-84e9-5fd6ab8f85ea"]
    );
    let s = "claude/-home-dev-src-tui/f484a23c-c413-49b1-97b1-05298240ac81";
    let out = run("cat", &[format!("{s}/name")], &m.mnt).ok();
    assert_eq!(out.stdout, "TUI rewind demo\n");
    let out = run("cat", &[format!("{s}/session.json")], &m.mnt).ok();
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["format"], "claude-code");
    assert_eq!(v["sessionId"], "f484a23c-c413-49b1-97b1-05298240ac81");
    assert_eq!(v["cwd"], "/home/dev/src/tui");
    assert!(try_ls(&m.path(&format!("{s}/labels"))).unwrap().is_empty());
    let out = sh(&format!("ln -s ../.id/x {s}/labels/y"), &m.mnt);
    assert_ne!(out.code(), Some(0));
    let out = run("grep", &["-rl", "[[REW2b]]", "."], &m.mnt).ok();
    assert!(
        out.stdout
            .lines()
            .any(|l| l.starts_with(&format!("./{s}/"))),
        "{}",
        out.stdout
    );
    // A Pi session next to it reads as before.
    let out = run(
        "cat",
        &["pi/--home-dev-cli--/2026-01-05T09-00-00-000Z_0193/name"],
        &m.mnt,
    );
    assert!(out.status.success(), "{out:?}");
}

// §10, live: a subagent Claude Code starts while the session is mounted shows up under
// the call that spawned it, and its lines as they are written.
#[test]
fn a_subagent_written_live_shows_up() {
    let m = mount_session("-home-dev-src-sub", "b3730bc4-7f81-47f4-84e9-5fd6ab8f85ea");
    let side = m
        .dir()
        .join("b3730bc4-7f81-47f4-84e9-5fd6ab8f85ea/subagents");
    fs::write(
        side.join("agent-b000000000000001.meta.json"),
        r#"{"agentType":"general-purpose","description":"Again","toolUseId":"toolu_sub_01","spawnDepth":1}"#,
    )
    .unwrap();
    let line = |uuid: &str, parent: &str, text: &str| {
        let p = if parent.is_empty() {
            "null".to_string()
        } else {
            format!("\"{parent}\"")
        };
        format!(
            "{{\"parentUuid\":{p},\"isSidechain\":true,\"agentId\":\"b000000000000001\",\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"{text}\"}},\"uuid\":\"{uuid}\",\"timestamp\":\"2026-12-01T07:10:00.000Z\",\"sessionId\":\"b3730bc4-7f81-47f4-84e9-5fd6ab8f85ea\"}}\n"
        )
    };
    let file = side.join("agent-b000000000000001.jsonl");
    fs::write(
        &file,
        line(
            "00000000-0000-4000-8000-0000000000c1",
            "",
            "[[LIVESUB]] first",
        ),
    )
    .unwrap();
    let call = ".id/2e0521f0-4eaa-434a-b9fc-4e79b6b6ff6b";
    let started = std::time::Instant::now();
    assert!(wait_until(DEADLINE, || {
        try_ls(&m.path(call)).is_some_and(|l| l.contains(&"agent-b000000000000001".to_string()))
    }));
    eprintln!("new subagent visible after {:?}", started.elapsed());
    let mut f = fs::OpenOptions::new().append(true).open(&file).unwrap();
    f.write_all(
        line(
            "00000000-0000-4000-8000-0000000000c2",
            "00000000-0000-4000-8000-0000000000c1",
            "[[LIVESUB]] second",
        )
        .as_bytes(),
    )
    .unwrap();
    let started = std::time::Instant::now();
    assert!(wait_until(DEADLINE, || {
        fs::read_to_string(m.path(&format!(
            "{call}/agent-b000000000000001/00000000-0000-4000-8000-0000000000c2/user"
        )))
        .is_ok_and(|t| t == "[[LIVESUB]] second\n")
    }));
    eprintln!("subagent line visible after {:?}", started.elapsed());
    // A reply in a subagent is refused: Claude Code does not resume subagents.
    let size = fs::metadata(&m.file).unwrap().len();
    let out = sh(
        &format!("echo no > {call}/agent-b000000000000001/reply"),
        &m.mnt,
    );
    assert_ne!(out.code(), Some(0), "{out:?}");
    assert_eq!(fs::metadata(&m.file).unwrap().len(), size);
}

// `sessionfs check` on Claude Code files: every fixture session is clean (a subagent's
// transcript too, as a file of its own), and each damage is reported by kind.
#[test]
fn check_reports_claude_code_files() {
    let projects = fixtures().join("projects");
    let out = sessionfs(
        &["check".as_ref(), "--json".as_ref(), projects.as_os_str()],
        Path::new("/"),
    );
    assert_eq!(out.code(), Some(0), "{out:?}");
    let reports: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // 17 sessions, and the subagent's transcript as a file of its own.
    assert_eq!(reports.len(), 18, "{}", out.stdout);
    for r in &reports {
        assert_eq!(r["format"], "claude-code", "{r}");
        assert_eq!(r["ok"], true, "{r}");
    }
    let want = [
        ("torn-last-line.jsonl", "torn-last-line"),
        ("unknown-types.jsonl", "unknown-type"),
        ("missing-parent.jsonl", "orphan"),
        ("parent-cycle.jsonl", "cycle"),
        ("duplicate-uuid.jsonl", "duplicate-id"),
        ("garbage-lines.jsonl", "malformed"),
    ];
    for (f, kind) in want {
        let p = fixtures().join("damaged").join(f);
        let out = sessionfs(
            &["check".as_ref(), "--json".as_ref(), p.as_os_str()],
            Path::new("/"),
        );
        let r: Value = serde_json::from_str(out.stdout.lines().next().unwrap()).unwrap();
        let kinds: Vec<&str> = r["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["kind"].as_str().unwrap())
            .collect();
        assert!(kinds.contains(&kind), "{f}: {kinds:?}");
        assert!(!out.stdout.contains("Pi hangs"), "{}", out.stdout);
    }
}

// $CLAUDE_CONFIG_DIR moves Claude Code's sessions; a missing one named there is refused.
#[test]
fn claude_config_dir_moves_the_claude_folder() {
    let dir = tempdir();
    let home = dir.path().join("home");
    fs::create_dir_all(&home).unwrap();
    let config = dir.path().join("cc");
    copy_tree(
        &fixtures().join("projects/-home-dev-src-qa"),
        &config.join("projects/-home-dev-src-qa"),
    );
    let m = Mount::sessions_dir(
        dir,
        None,
        &[],
        &[
            ("HOME", home.as_os_str()),
            ("CLAUDE_CONFIG_DIR", config.as_os_str()),
        ],
    );
    assert_eq!(try_ls(&m.mnt).unwrap(), ["claude"]);
    assert_eq!(try_ls(&m.path("claude")).unwrap(), ["-home-dev-src-qa"]);
    drop(m);

    let dir = tempdir();
    fs::create_dir(dir.path().join("mnt")).unwrap();
    let mut c = std::process::Command::new(bin());
    c.args(["mount", "mnt"])
        .env("HOME", dir.path())
        .env("CLAUDE_CONFIG_DIR", dir.path().join("nope"))
        .current_dir(dir.path());
    let out = run_command(c);
    assert_eq!(out.code(), Some(3), "{out:?}");
    assert!(out.stderr.contains("nope/projects"), "{out:?}");
    assert!(out.stderr.contains("does not exist"), "{out:?}");
}

// §8.2: the chain end's context has the lines Claude Code adds on load (2.1.332: "No
// response requested." after a chain that ends with a user line, here a reply); once
// another line is the chain end, the old one's context (read through the same mount,
// cached by the kernel before) no longer has them.
#[test]
fn the_old_leafs_context_follows_a_new_leaf() {
    let m = mount_session(
        "-home-dev-src-named",
        "28fe034c-de2b-4380-a754-780c56c83251",
    );
    sh("echo 'One more question' > leaf/reply", &m.mnt).ok();
    let leaf = run("readlink", &["leaf"], &m.mnt).ok().stdout;
    let leaf = format!("{}/context.json", leaf.trim());
    let ctx = |m: &Mount| -> Value {
        serde_json::from_str(&run("cat", &[&leaf], &m.mnt).ok().stdout).unwrap()
    };
    let before = ctx(&m);
    let texts = |v: &Value| v.to_string();
    assert!(
        texts(&before).contains("No response requested."),
        "{before}"
    );
    // A new conversation at the root becomes the chain end.
    sh("echo 'Another start' > reply", &m.mnt).ok();
    let ok = wait_until(DEADLINE, || {
        !texts(&ctx(&m)).contains("No response requested.")
    });
    assert!(ok, "{}", ctx(&m));
    assert!(texts(&ctx(&m)).contains("One more question"));
    assert!(!texts(&ctx(&m)).contains("Continue from where you left off."));
}

/// The text of every bundled session the README's examples copy (`scripts/demo-home`):
/// an id in it is known, any other (a reply's) stands for any id.
fn demo_home_text() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut known = fs::read_to_string(root.join("examples/demo.jsonl")).unwrap();
    let mut dirs = vec![
        fixtures().join("projects/-home-dev-src-tools"),
        fixtures().join("projects/-home-dev-src-tui"),
        root.join("tests/fixtures/codex/samples/codex-home/sessions/2026/12/01"),
    ];
    while let Some(d) = dirs.pop() {
        for f in fs::read_dir(&d).unwrap() {
            let f = f.unwrap().path();
            if f.is_file() {
                known.push_str(&fs::read_to_string(f).unwrap_or_default());
            }
        }
    }
    known
}

/// The README's example of every agent's sessions on one machine prints what the
/// README shows, run command by command from the clone as the README says (it makes
/// its home of every agent with `scripts/demo-home` and points the four variables at
/// it): the demo as a Pi session, two Claude Code projects, three Codex threads. The
/// reply it writes lands in the copy, and `leaf` follows it (its new id stands for any
/// id).
#[test]
fn the_readme_example_of_every_agent_prints_what_the_readme_shows() {
    let dir = tempdir();
    let tmp = format!("{}/", dir.path().display());
    let home = dir.path().join("home");
    fs::create_dir_all(&home).unwrap();
    let block = readme_console_block("~/mnt/agents");
    check_console_example(
        &block,
        Path::new(env!("CARGO_MANIFEST_DIR")),
        &[("HOME", home.as_os_str())],
        &tmp,
        &[home.join("mnt/agents")],
        &demo_home_text(),
    );
    // The reply went to the Claude Code session, in its shape.
    let file = dir.path().join(
        "agents-home/.claude/projects/-home-dev-src-tui/f484a23c-c413-49b1-97b1-05298240ac81.jsonl",
    );
    let text = fs::read_to_string(file).unwrap();
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert!(
        last["type"] == "last-prompt" || last["message"]["content"] == "Back to green: why?",
        "{last}"
    );
    assert!(text.contains("\"content\":\"Back to green: why?\""));
}

/// The README's searches without a mount print what it shows, on fresh copies of the
/// bundled sessions (`scripts/demo-home`, every agent's).
#[test]
fn the_readme_searches_without_a_mount_print_what_the_readme_shows() {
    let dir = tempdir();
    let tmp = format!("{}/", dir.path().display());
    let home = dir.path().join("home");
    fs::create_dir_all(&home).unwrap();
    let block = readme_console_block("sessionfs grep --sessions");
    check_console_example(
        &block,
        Path::new(env!("CARGO_MANIFEST_DIR")),
        &[("HOME", home.as_os_str())],
        &tmp,
        &[],
        &demo_home_text(),
    );
}

/// A Claude Code session being written, line by line, in the every-agent mount: each
/// line Claude Code wrote (prompts, pieces of replies, two rewinds, a `/rename`, a
/// compaction and the metadata between them) is appended to a session the mount has
/// already loaded, and its directory must show up. Each line waits with a deadline (a
/// hang detector); the delays are printed, not asserted. Then the session reads as when mounted whole: name, leaf and
/// the context of every entry Claude Code's own requests cover.
#[test]
fn a_session_being_written_shows_each_line_as_it_is_written() {
    let (project, sid) = ("-home-dev-src-tui", "f484a23c-c413-49b1-97b1-05298240ac81");
    let dir = tempdir();
    let home = dir.path().join("home");
    let proj = home.join(".claude/projects").join(project);
    fs::create_dir_all(&proj).unwrap();
    let whole =
        fs::read_to_string(fixtures().join(format!("projects/{project}/{sid}.jsonl"))).unwrap();
    let lines: Vec<&str> = whole.split_inclusive('\n').collect();
    // The first turn is there when the mount starts; the rest is written live.
    let start = 10;
    let file = proj.join(format!("{sid}.jsonl"));
    fs::write(&file, lines[..start].concat()).unwrap();
    let m = Mount::sessions_dir(
        dir,
        None,
        &[],
        &[
            ("HOME", home.as_os_str()),
            ("CLAUDE_CONFIG_DIR", home.join(".claude").as_os_str()),
        ],
    );
    let s = format!("claude/{project}/{sid}");
    assert_eq!(try_ls(&m.mnt).unwrap(), ["claude"]);
    // Loaded before the writing starts.
    let first = "8a8178c9-70e3-4231-91b7-8fd931381205";
    assert!(try_ls(&m.path(&s)).unwrap().contains(&first.to_string()));
    let mut delays = Vec::new();
    let mut f = fs::OpenOptions::new().append(true).open(&file).unwrap();
    for l in &lines[start..] {
        let v: Value = serde_json::from_str(l).unwrap();
        let t0 = std::time::Instant::now();
        f.write_all(l.as_bytes()).unwrap();
        let Some(uuid) = v.get("uuid").and_then(Value::as_str) else {
            continue;
        };
        let at = m.path(&format!("{s}/.id/{uuid}"));
        let seen = wait_until(DEADLINE, || fs::metadata(&at).is_ok());
        let d = t0.elapsed();
        assert!(seen, "{uuid} did not show up within {DEADLINE:?}");
        delays.push(d);
    }
    drop(f);
    delays.sort();
    let median = delays[delays.len() / 2];
    eprintln!(
        "{} lines: median {median:?}, max {:?}",
        delays.len(),
        delays.last().unwrap()
    );
    // Printed, not asserted: on a loaded machine a line can take seconds to show,
    // and a test must not fail for that.
    // What the whole file shows when mounted at once.
    let ok = wait_until(DEADLINE, || {
        fs::read_to_string(m.path(&format!("{s}/name"))).is_ok_and(|n| n == "TUI rewind demo\n")
    });
    assert!(ok, "{:?}", fs::read_to_string(m.path(&format!("{s}/name"))));
    let expected = sessions()
        .into_iter()
        .find(|(_, id, _)| id == sid)
        .unwrap()
        .2;
    let leaf = expected
        .iter()
        .find(|(_, v)| v.get("leaf") == Some(&Value::Bool(true)))
        .map(|(k, _)| k.clone())
        .unwrap();
    let ok = wait_until(DEADLINE, || {
        fs::read_link(m.path(&format!("{s}/leaf")))
            .is_ok_and(|l| l == Path::new(&format!(".id/{leaf}")))
    });
    assert!(ok, "{:?}", fs::read_link(m.path(&format!("{s}/leaf"))));
    for (u, want) in &expected {
        let text = fs::read_to_string(m.path(&format!("{s}/.id/{u}/context.json"))).unwrap();
        let got: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(&got, &want["messages"], "context.json of {u}");
    }
}

/// A Claude Code line that kept a terminal's colours (`/compact`'s stdout) shows in
/// `tree` without them: no ESC, and no `[2m` left behind by a dropped one.
#[test]
fn tree_previews_leave_terminal_escapes_out() {
    let m = mount_session("-home-dev-src-tui", "9a35a251-e6e4-429e-b75c-cb5cb7ce24f3");
    let raw = fs::read_to_string(&m.file).unwrap();
    assert!(raw.contains(r"\u001b[2mCompacted"), "the fixture changed");
    let tree = run("cat", &["tree"], &m.mnt).ok().stdout;
    let line = tree
        .lines()
        .find(|l| l.contains("e7143d30-5328-42d4-bba7-1aa0b64d607f"))
        .expect("the /compact output in tree");
    assert!(
        line.ends_with(
            "user: <local-command-stdout>Compacted (ctrl+o to see full summary)</local-command-stdout>"
        ),
        "{line:?}"
    );
    assert!(!tree.contains('\x1b') && !tree.contains("[2m"), "{tree}");
    // The entry's own text keeps them: only previews leave them out.
    let dir = m.path(".id/e7143d30-5328-42d4-bba7-1aa0b64d607f");
    let text = fs::read_to_string(dir.join("user")).unwrap();
    assert!(text.contains("\x1b[2mCompacted"), "{text:?}");
}

/// An answer's `request` is the context the model answered: for a reply that spans
/// several lines (one `message.id`), every line links the context before the first.
#[test]
fn an_answer_links_the_request_it_answered() {
    let (project, sid) = (
        "-home-dev-src-tools",
        "644750c6-819f-4bc1-8d96-f535db009ee8",
    );
    let m = mount_session(project, sid);
    let lines: Vec<Value> = fs::read_to_string(&m.file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let by: BTreeMap<&str, &Value> = lines
        .iter()
        .filter_map(|l| Some((l.get("uuid")?.as_str()?, l)))
        .collect();
    let msg_id = |l: &Value| l["message"]["id"].as_str().map(str::to_string);
    let mut answers = 0;
    let mut spanning = 0;
    for l in &lines {
        let Some(uuid) = l.get("uuid").and_then(Value::as_str) else {
            continue;
        };
        let flat = m.path(&format!(".id/{uuid}"));
        if l["type"] != "assistant" {
            assert!(
                fs::symlink_metadata(flat.join("request")).is_err(),
                "{uuid}"
            );
            continue;
        }
        // The first line of the reply, then its parent: the request.
        let mut first = l;
        while let Some(p) = first["parentUuid"].as_str().and_then(|p| by.get(p))
            && p["type"] == "assistant"
            && msg_id(p) == msg_id(l)
        {
            first = p;
        }
        if !std::ptr::eq(first, l) {
            spanning += 1;
        }
        let Some(req) = first["parentUuid"].as_str() else {
            continue;
        };
        answers += 1;
        let link = fs::read_link(flat.join("request")).unwrap();
        assert_eq!(link, Path::new(&format!("../{req}/context")), "{uuid}");
        let link = fs::read_link(flat.join("request.json")).unwrap();
        assert_eq!(link, Path::new(&format!("../{req}/context.json")), "{uuid}");
        // Read through the link with cat: the request's own context.
        let got = run("cat", &[format!(".id/{uuid}/request")], &m.mnt)
            .ok()
            .stdout;
        let want = run("cat", &[format!(".id/{req}/context")], &m.mnt)
            .ok()
            .stdout;
        assert_eq!(got, want, "{uuid}");
        let got = run("cat", &[format!(".id/{uuid}/request.json")], &m.mnt)
            .ok()
            .stdout;
        let want = run("cat", &[format!(".id/{req}/context.json")], &m.mnt)
            .ok()
            .stdout;
        assert_eq!(got, want, "{uuid}");
    }
    assert!(answers >= 4 && spanning >= 1, "{answers} {spanning}");
}
