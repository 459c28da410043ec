//! Qwen Code sessions through real mounts (LAYOUT.md "Qwen Code sessions",
//! QWEN-FORMAT.md): every point of every Qwen Code fixture session
//! (`tests/fixtures/qwen/{samples,own}`, files the real CLI 0.24.4 wrote, and
//! hand-made ones) read with `cat` through a mount of a copy of its Qwen home equals
//! what the CLI sends there (`contexts/*.contexts.json`); the leaf, names,
//! `session.json`, KIND files, images, `tree`, rewinds as branches, subagents; the ways
//! to mount (the home, its `projects/`, one file, the every-agent mount with
//! `QWEN_HOME` or `~/.qwen`); lines and sessions the CLI writes while mounted; replies
//! and forks through the mount, checked against what the CLI accepted
//! (`tests/fixtures/qwen/accepts`); `cost`, `sessionfs usage`, `check`, `grep -r`.

mod common;

use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

fn qwen_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/qwen")
}

/// A copy of fixture set `set`'s Qwen home at `dir/.qwen`.
fn home_copy(dir: &Path, set: &str) -> PathBuf {
    let home = dir.join(".qwen");
    copy_tree(&qwen_dir().join(set).join("qwen-home"), &home);
    home
}

/// Every session file of a home: `(project, session id, path)`, sorted.
fn sessions(home: &Path) -> Vec<(String, String, PathBuf)> {
    let mut out = Vec::new();
    for p in fs::read_dir(home.join("projects")).unwrap() {
        let p = p.unwrap();
        let chats = p.path().join("chats");
        let Ok(rd) = fs::read_dir(&chats) else {
            continue;
        };
        for f in rd {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "jsonl") {
                out.push((
                    p.file_name().to_string_lossy().into_owned(),
                    f.file_stem().unwrap().to_string_lossy().into_owned(),
                    f,
                ));
            }
        }
    }
    out.sort();
    out
}

/// The CLI's contexts of set `set`: session id → point uuid → context.
fn expected(set: &str) -> BTreeMap<String, serde_json::Map<String, Value>> {
    expected_in(set, "contexts")
}

/// The contexts of set `set` in its folder `dir` (`contexts`, or `contexts-marker`:
/// the kit's contexts made the way /rewind continues, for the sessions where a later
/// line changes an earlier record; see src/model/qwen/tests.rs).
fn expected_in(set: &str, dir: &str) -> BTreeMap<String, serde_json::Map<String, Value>> {
    let mut out = BTreeMap::new();
    let Ok(rd) = fs::read_dir(qwen_dir().join(set).join(dir)) else {
        return out;
    };
    for e in rd {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let Some(sid) = name.strip_suffix(".contexts.json") else {
            continue;
        };
        let v: Value = serde_json::from_slice(&fs::read(&p).unwrap()).unwrap();
        out.insert(sid.to_string(), v.as_object().unwrap().clone());
    }
    out
}

fn read_json(p: &Path) -> Value {
    let bytes = fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn link_id(p: &Path) -> String {
    let t = fs::read_link(p).unwrap();
    t.file_name().unwrap().to_string_lossy().into_owned()
}

/// Mounts the Qwen home `home` (inside `dir`) on `dir/mnt`.
fn mount_home(dir: tempfile::TempDir, home: &Path) -> Mount {
    Mount::sessions_dir(dir, Some(home), &[], &[])
}

/// Compares every point of set `set` through a mount; returns the number compared.
fn compare_through_mount(set: &str) -> usize {
    let dir = tempdir();
    let home = home_copy(dir.path(), set);
    let want = expected(set);
    let marker = expected_in(set, "contexts-marker");
    let all = sessions(&home);
    let m = mount_home(dir, &home);
    let mut n = 0;
    let mut bad = Vec::new();
    for (project, sid, _) in &all {
        let Some(points) = want.get(sid) else {
            continue;
        };
        let sdir = m.mnt.join(project).join(sid);
        for (uuid, c) in points {
            if c.get("leaf") == Some(&Value::Bool(true)) {
                let got = read_json(&sdir.join("leaf/context.json"));
                n += 1;
                if &got != c.get("messages").unwrap() {
                    bad.push(format!("{sid} leaf ({})", link_id(&sdir.join("leaf"))));
                }
                // Filed under the last point of the leaf's chain: when that is not
                // the leaf (the leaf's line is a fragment), only the leaf compares.
                if link_id(&sdir.join("leaf")) != *uuid {
                    continue;
                }
            }
            let c = match marker.get(sid).and_then(|m| m.get(uuid)) {
                Some(mc) if mc.get("leaf") != Some(&Value::Bool(true)) => mc,
                _ => c,
            };
            let got = read_json(&sdir.join(".id").join(uuid).join("context.json"));
            n += 1;
            if &got != c.get("messages").unwrap() {
                bad.push(format!("{sid} {uuid}"));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{set}: {} of {n} differ: {bad:?}",
        bad.len()
    );
    n
}

// §7, §8: context.json at every point, through a mount, equals the CLI's request.
#[test]
fn every_point_of_the_samples_reads_through_a_mount_as_the_cli_sends_it() {
    let n = compare_through_mount("samples");
    assert!(n >= 95, "{n}");
}

#[test]
fn every_point_of_our_own_sessions_reads_through_a_mount_as_the_cli_sends_it() {
    let n = compare_through_mount("own");
    assert!(n >= 500, "{n}");
}

const TUI: &str = "ab26e059-d2bb-4356-aa61-e2c897840e8e";
const SUB: &str = "e6a934ba-9ed2-4941-ad32-5542939b7ed7";
const IMAGE: &str = "1c03298f-7067-46ce-ba1e-832217ad0eb3";
const QA: &str = "c92ec0dd-72ea-4c32-a140-a63b5518c2f3";
const QA_FORK: &str = "d42673f8-17c3-4b42-bb21-8878b1a0e78b";

// §2, §3, §4, §5, §6: what a session shows: name, leaf, branches of a rewind, tree,
// KIND files, session.json, images, subagents.
#[test]
fn a_tui_session_shows_its_rewind_as_a_branch_and_its_records_as_files() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let m = mount_home(dir, &home);
    let tui = m.mnt.join("-home-dev-src-tui").join(TUI);
    assert_eq!(
        fs::read_to_string(tui.join("name")).unwrap(),
        "TUI rewind demo\n"
    );
    // The leaf is the last conversation record: the title /rename wrote last.
    assert_eq!(
        link_id(&tui.join("leaf")),
        "9048ba85-0c50-483e-9c7c-e3344af1a478"
    );
    // The rewind left the third turn as a branch; the title the resume wrote again
    // under its prompt is a dead end of bookkeeping, no branch.
    let mut branches = try_ls(&tui.join("branches")).unwrap();
    branches.sort();
    assert_eq!(
        branches,
        vec![
            "9048ba85-0c50-483e-9c7c-e3344af1a478".to_string(),
            "c3f53323-bd3b-4cef-8988-6e17372adefa".to_string()
        ]
    );
    let tree = fs::read_to_string(tui.join("tree")).unwrap();
    assert!(
        tree.contains("└─ 5df0a451-8ead-499a-9ec3-4accdbcf3724 rewind: 2 entries dropped"),
        "{tree}"
    );
    assert!(tree.contains("records ×3 to 8c52cb5b-b130-432a-9a0d-c76b3a06157f: attribution snapshot; file history snapshot; api response qwen3-coder-plus 20,426 tokens"), "{tree}");
    assert!(tree.contains("title TUI rewind demo  ← leaf"), "{tree}");
    // The nested tree: each record under its parent.
    assert!(tui.join("050f7d54-1fea-4252-8978-b410667f06a3/8ea3f632-6c56-4d0b-bf44-dcac0573a3c6/37c6793d-e86b-4f70-809b-bf7a498bb76e").is_dir());
    let id = tui.join(".id");
    assert_eq!(
        fs::read_to_string(id.join("5df0a451-8ead-499a-9ec3-4accdbcf3724/rewind")).unwrap(),
        "[rewind: 2 history entries dropped; the conversation goes on from the record before]\n"
    );
    let comp = fs::read_to_string(id.join("97b671dd-a14e-4814-9a37-ef34e536b2b1/chat_compression"))
        .unwrap();
    assert!(
        comp.starts_with("[compression (manual): 20,517 → 18,037 tokens]\n"),
        "{comp}"
    );
    assert!(
        comp.contains("## model\nGot it. Thanks for the additional context!\n"),
        "{comp}"
    );
    let a = fs::read_to_string(id.join("ad5212b1-c0f9-47ca-afca-6922486ac5a5/assistant")).unwrap();
    assert_eq!(
        a,
        "[thinking]\nThe user continues the chain: 4 * 3.\n\n4 × 3 = 12.\n"
    );
    assert_eq!(
        fs::read_to_string(tui.join("session.json")).unwrap(),
        format!(
            "{{\"format\":\"qwen-code\",\"sessionId\":\"{TUI}\",\"cwd\":\"/home/dev/src/tui\",\"version\":\"0.24.4\",\"gitBranch\":null,\"timestamp\":\"2026-12-05T07:33:14.055Z\"}}\n"
        )
    );
    // request: what the model saw when it wrote an answer.
    let req = id.join("86d2f4ef-733d-4319-a6d4-c8c7a3682cca/request.json");
    let ctx = read_json(&req);
    assert_eq!(ctx.as_array().unwrap().last().unwrap()["role"], "user");
    // The readable context: the system prompt and the tools first, then the messages.
    let text = fs::read_to_string(id.join("86d2f4ef-733d-4319-a6d4-c8c7a3682cca/context")).unwrap();
    assert!(
        text.starts_with("[system prompt: made by Qwen Code 0.24.4 at every run"),
        "{}",
        &text[..200]
    );
    assert!(text.contains("\n[tools: 10 offered by that run]\n[tool agent]\n"));
    assert!(
        text.ends_with("## user\n[[QA4]] Add one.\n\n## assistant\n7 + 1 = 8.\n\n"),
        "{}",
        &text[text.len() - 300..]
    );

    // A tool result, a call.
    let tools = m
        .mnt
        .join("-home-dev-src-tools/a086a06b-36a5-4262-88dc-c564acbafcfe/.id");
    let r =
        fs::read_to_string(tools.join("ed92d6d2-52bb-49b3-907c-8d2c6580c50c/toolResult")).unwrap();
    assert!(
        r.starts_with("[tool result edit (") && r.contains("[error]\n"),
        "{r}"
    );
    let call =
        fs::read_to_string(tools.join("50f3b32f-3915-4591-adee-a921c18d9fea/assistant")).unwrap();
    assert!(call.contains("[tool call read_file ("), "{call}");
    // A call's id names the answer that made it.
    let id = call
        .split("[tool call read_file (")
        .nth(1)
        .unwrap()
        .split(')')
        .next()
        .unwrap();
    assert_eq!(
        fs::read_to_string(tools.join(id).join("assistant")).unwrap(),
        call
    );

    // The image of a prompt, decoded.
    let img = m
        .mnt
        .join("-home-dev-src-image")
        .join(IMAGE)
        .join(".id/13ee2bcd-b16e-4cd4-ac74-5c6e014b0f00");
    let user = fs::read_to_string(img.join("user")).unwrap();
    assert!(
        user.contains("[image 1: image/jpeg, 349 bytes → image-1.jpg]"),
        "{user}"
    );
    let jpg = fs::read(img.join("image-1.jpg")).unwrap();
    assert_eq!(&jpg[..3], b"\xff\xd8\xff");

    // A subagent: inside the session, under the call that spawned it, no branch, no reply.
    let sub = m.mnt.join("-home-dev-src-sub").join(SUB);
    let call = sub.join(".id/aeb417d5-adf7-4bbb-b61d-dfb26e7238ca");
    assert!(
        try_ls(&call)
            .unwrap()
            .contains(&"agent-general-purpose-call_sub_01".to_string())
    );
    assert_eq!(
        try_ls(&sub.join("branches")).unwrap(),
        vec!["dedb7ffa-91ef-4bd0-bc10-83d1185964c6".to_string()]
    );
    let agent = sub.join(".id/agent-general-purpose-call_sub_01");
    assert_eq!(
        fs::read_to_string(agent.join("user")).unwrap(),
        "[[SUBTASK]] Count the files in the current folder.\n"
    );
    let out = sh(
        "echo hi > .id/agent-general-purpose-call_sub_01/reply",
        &sub,
    );
    assert_ne!(out.code(), Some(0), "a subagent's reply must be refused");
    let note =
        fs::read_to_string(sub.join(".id/a2b0f2a9-80ec-4df7-9094-9b7a92ff7844/notification"))
            .unwrap();
    assert!(
        note.starts_with("[notification]\n<task-notification>"),
        "{note}"
    );

    // A fork made by --fork-session: a session of its own, its records copied.
    let fork = m.mnt.join("-home-dev-src-qa").join(QA_FORK);
    assert!(
        fs::read_to_string(fork.join("session.json"))
            .unwrap()
            .contains(&format!("\"forkedFrom\":{{\"sessionId\":\"{QA}\""))
    );
}

// §1: the home, its projects/ folder and one file mount; `sessionfs mount MNT` shows
// qwen/ beside the other agents (QWEN_HOME, or ~/.qwen).
#[test]
fn the_home_its_projects_folder_one_file_and_the_every_agent_mount() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let projects = home.join("projects");
    let m = Mount::sessions_dir(dir, Some(&projects), &[], &[]);
    assert_eq!(
        try_ls(&m.mnt.join("-home-dev-src-qa")).unwrap(),
        vec![QA.to_string(), QA_FORK.to_string()]
    );
    // A project's other files (subagents/, memory) are no sessions.
    assert_eq!(
        try_ls(&m.mnt.join("-home-dev-src-sub")).unwrap(),
        vec![SUB.to_string()]
    );
    drop(m);

    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let file = home
        .join("projects/-home-dev-src-tui/chats")
        .join(format!("{TUI}.jsonl"));
    let m = Mount::start(dir, file, &[]);
    assert_eq!(
        fs::read_to_string(m.mnt.join("name")).unwrap(),
        "TUI rewind demo\n"
    );
    let want = &expected("samples")[TUI];
    let (_, leaf) = want
        .iter()
        .find(|(_, v)| v.get("leaf") == Some(&Value::Bool(true)))
        .unwrap();
    assert_eq!(
        &read_json(&m.mnt.join("leaf/context.json")),
        leaf.get("messages").unwrap()
    );
    drop(m);

    // QWEN_HOME names the home.
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let h = dir.path().join("elsewhere");
    fs::create_dir_all(&h).unwrap();
    let m = Mount::sessions_dir(
        dir,
        None,
        &[],
        &[("HOME", h.as_os_str()), ("QWEN_HOME", home.as_os_str())],
    );
    let top = try_ls(&m.mnt).unwrap();
    assert!(top.contains(&"qwen".to_string()), "{top:?}");
    assert_eq!(
        fs::read_to_string(m.mnt.join("qwen/-home-dev-src-tui").join(TUI).join("name")).unwrap(),
        "TUI rewind demo\n"
    );
    drop(m);

    // The default: ~/.qwen.
    let dir = tempdir();
    home_copy(dir.path(), "samples");
    let h = dir.path().to_path_buf();
    let m = Mount::sessions_dir(dir, None, &[], &[("HOME", h.as_os_str())]);
    let top = try_ls(&m.mnt).unwrap();
    assert!(top.contains(&"qwen".to_string()), "{top:?}");
    assert!(
        try_ls(&m.mnt.join("qwen/-home-dev-src-image"))
            .unwrap()
            .contains(&IMAGE.to_string())
    );
}

/// A user record as Qwen Code appends it for a typed prompt.
fn user_record(sid: &str, uuid: &str, parent: &str, text: &str) -> String {
    let v = serde_json::json!({
        "uuid": uuid, "parentUuid": parent, "sessionId": sid,
        "timestamp": "2026-12-06T10:00:00.000Z", "type": "user", "provenance": "real_user",
        "cwd": "/home/dev/src/qa", "version": "0.24.4",
        "message": {"role": "user", "parts": [{"text": text}]}
    });
    format!("{v}\n")
}

fn append(p: &Path, s: &str) {
    use std::io::Write;
    let mut f = fs::OpenOptions::new().append(true).open(p).unwrap();
    f.write_all(s.as_bytes()).unwrap();
}

// §1 (live): records the CLI appends show up, and so do new sessions and projects.
#[test]
fn records_and_sessions_qwen_code_writes_while_mounted_show_up() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let m = mount_home(dir, &home);
    let qa = m.mnt.join("-home-dev-src-qa").join(QA);
    let file = home
        .join("projects/-home-dev-src-qa/chats")
        .join(format!("{QA}.jsonl"));
    assert_eq!(
        link_id(&qa.join("leaf")),
        "ae870b86-e915-40e9-8f12-d8e33f914441"
    );
    let new = "0000aaaa-0000-4000-8000-000000000001";
    append(
        &file,
        &user_record(
            QA,
            new,
            "ae870b86-e915-40e9-8f12-d8e33f914441",
            "[[LIVE]] appended",
        ),
    );
    assert!(wait_until(DEADLINE, || fs::read_link(qa.join("leaf"))
        .is_ok_and(|l| l.ends_with(new))));
    assert_eq!(
        fs::read_to_string(qa.join(".id").join(new).join("user")).unwrap(),
        "[[LIVE]] appended\n"
    );
    // A title: the name follows.
    let t = serde_json::json!({"uuid": "0000aaaa-0000-4000-8000-000000000002", "parentUuid": new,
        "sessionId": QA, "timestamp": "2026-12-06T10:00:01.000Z", "type": "system", "provenance": "system",
        "cwd": "/home/dev/src/qa", "version": "0.24.4", "subtype": "custom_title",
        "systemPayload": {"customTitle": "Live title", "titleSource": "manual"}});
    append(&file, &format!("{t}\n"));
    assert!(wait_until(DEADLINE, || fs::read_to_string(qa.join("name"))
        .is_ok_and(|n| n == "Live title\n")));
    // A new session in the project.
    let sid = "0000bbbb-0000-4000-8000-000000000003";
    let chats = home.join("projects/-home-dev-src-qa/chats");
    fs::write(
        chats.join(format!("{sid}.jsonl")),
        user_record(
            sid,
            "0000bbbb-0000-4000-8000-000000000004",
            "",
            "[[NEW]] a new session",
        )
        .replace("\"parentUuid\":\"\"", "\"parentUuid\":null"),
    )
    .unwrap();
    let proj = m.mnt.join("-home-dev-src-qa");
    assert!(wait_until(DEADLINE, || try_ls(&proj)
        .is_some_and(|l| l.contains(&sid.to_string()))));
    assert_eq!(
        fs::read_to_string(proj.join(sid).join("name")).unwrap(),
        "[[NEW]] a new session\n"
    );
    // A new project: its folder, then its chats/ and a session in it.
    let p = home.join("projects/-home-dev-src-brandnew");
    fs::create_dir_all(&p).unwrap();
    assert!(wait_until(DEADLINE, || try_ls(&m.mnt).is_some_and(
        |l| l.contains(&"-home-dev-src-brandnew".to_string())
    )));
    assert_eq!(
        try_ls(&m.mnt.join("-home-dev-src-brandnew")).unwrap(),
        Vec::<String>::new()
    );
    fs::create_dir_all(p.join("chats")).unwrap();
    let sid2 = "0000cccc-0000-4000-8000-000000000005";
    fs::write(
        p.join("chats").join(format!("{sid2}.jsonl")),
        user_record(
            sid2,
            "0000cccc-0000-4000-8000-000000000006",
            "",
            "[[FRESH]] first",
        )
        .replace("\"parentUuid\":\"\"", "\"parentUuid\":null"),
    )
    .unwrap();
    let np = m.mnt.join("-home-dev-src-brandnew");
    assert!(wait_until(DEADLINE, || try_ls(&np)
        .is_some_and(|l| l == vec![sid2.to_string()])));
}

/// The committed results of scripts/qwen-accepts.
fn accepts() -> Vec<Value> {
    read_json(&qwen_dir().join("accepts/results.json"))
        .as_array()
        .unwrap()
        .clone()
}

// §9: a reply through the mount at the leaf and at an earlier record of every kind is
// what the CLI resumes (scripts/qwen-accepts ran the real CLI on each; its results are
// committed). Here the same replies are written again through a mount: the same
// records (bar their fresh uuids and time), and the new entry's context.json is the
// request the CLI sent. A name (§6.7) too: the CLI's session list shows it, and the
// CLI continues from the same leaf.
#[test]
fn replies_through_the_mount_are_what_qwen_code_resumes() {
    let results = accepts();
    assert!(results.len() >= 25, "{}", results.len());
    for r in &results {
        assert_eq!(r["ok"], Value::Bool(true), "{r}");
    }
    for r in results
        .iter()
        .filter(|r| r["what"] == "reply" || r["what"] == "name")
    {
        let case = r["case"].as_str().unwrap();
        let naming = r["what"] == "name";
        let dir = tempdir();
        let home = home_copy(dir.path(), "own");
        let rel = r["session"]
            .as_str()
            .unwrap()
            .strip_prefix("qwen-home/")
            .unwrap();
        let file = home.join(rel);
        let before = fs::read(&file).unwrap();
        let m = Mount::start(dir, file.clone(), &[]);
        let entry = r["entry"].as_str().unwrap();
        let at = match entry {
            "leaf" => m.mnt.join("leaf"),
            "root" => m.mnt.clone(),
            e => m.mnt.join(".id").join(e),
        };
        let cmd = if naming {
            "echo 'A name given through sessionfs' > name".to_string()
        } else {
            let text = format!("[[APPENDED]] {case}: written through the sessionfs mount");
            format!("echo '{text}' > '{}/reply'", at.display())
        };
        let out = sh(&cmd, &m.mnt);
        assert_eq!(out.code(), Some(0), "{case}: {}", out.stderr);
        let after = fs::read(&file).unwrap();
        assert!(
            after.starts_with(&before),
            "{case}: the file was not only appended to"
        );
        let added: Vec<Value> = String::from_utf8(after[before.len()..].to_vec())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        // What the accepted file holds after the same write.
        let accepted = qwen_dir()
            .join("accepts")
            .join(case)
            .join(file.file_name().unwrap());
        let acc = fs::read(&accepted).unwrap();
        let acc_added: Vec<Value> = String::from_utf8(acc[before.len()..].to_vec())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(added.len(), acc_added.len(), "{case}");
        for (a, b) in added.iter().zip(&acc_added) {
            let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
            assert_eq!(keys(a), keys(b), "{case}");
            for k in [
                "type",
                "subtype",
                "sessionId",
                "cwd",
                "version",
                "provenance",
                "message",
                "systemPayload",
            ] {
                assert_eq!(a.get(k), b.get(k), "{case}: {k}");
            }
        }
        if naming {
            // The name shows, and the leaf the CLI continues from is unchanged.
            assert_eq!(
                fs::read_to_string(m.mnt.join("name")).unwrap(),
                "A name given through sessionfs\n"
            );
            let ctx = read_json(&m.mnt.join("leaf/context.json"));
            assert_eq!(&ctx, &r["request"], "{case}: the leaf's context.json");
            continue;
        }
        // The new entry's context is what the CLI sent, and it is the leaf.
        let new = added.last().unwrap()["uuid"].as_str().unwrap().to_string();
        let ctx = read_json(&m.mnt.join(".id").join(&new).join("context.json"));
        assert_eq!(
            &ctx, &r["request"],
            "{case}: context.json of the reply is not what the CLI sent"
        );
        assert_eq!(
            link_id(&m.mnt.join("leaf")),
            new,
            "{case}: the reply is the leaf"
        );
    }
}

// §6.8: a fork through the mount is what --fork-session writes; the CLI resumed it.
#[test]
fn a_fork_through_the_mount_is_a_session_of_its_own() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let m = mount_home(dir, &home);
    let qa = m.mnt.join("-home-dev-src-qa").join(QA);
    let at = qa.join(".id/e1bbaf02-8414-4398-a5e7-95c83b08b2d8");
    let out = sh("echo > fork", &at);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let said = fs::read_to_string(at.join("fork")).unwrap();
    let mut lines = said.lines();
    let path = PathBuf::from(lines.next().unwrap());
    let shown = PathBuf::from(lines.next().unwrap());
    assert_eq!(
        path.parent().unwrap(),
        home.join("projects/-home-dev-src-qa/chats")
    );
    let text = fs::read_to_string(&path).unwrap();
    let recs: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let sid = path.file_stem().unwrap().to_string_lossy().into_owned();
    assert_eq!(recs.len(), 8);
    for (k, r) in recs.iter().enumerate() {
        assert_eq!(r["sessionId"], Value::String(sid.clone()));
        assert_eq!(r["forkedFrom"]["sessionId"], QA);
        assert_eq!(r["forkedFrom"]["messageUuid"], r["uuid"]);
        let parent = if k == 0 {
            Value::Null
        } else {
            recs[k - 1]["uuid"].clone()
        };
        assert_eq!(r["parentUuid"], parent);
    }
    assert_eq!(
        recs.last().unwrap()["uuid"],
        "e1bbaf02-8414-4398-a5e7-95c83b08b2d8"
    );
    // Listed at once, and its leaf's context is the source's at the entry.
    assert!(try_ls(&shown).is_some());
    assert_eq!(
        read_json(&shown.join("leaf/context.json")),
        read_json(&at.join("context.json"))
    );
    // The CLI resumed forks made this way (scripts/qwen-accepts).
    let forks: Vec<Value> = accepts()
        .into_iter()
        .filter(|r| r["what"] == "fork")
        .collect();
    assert!(forks.len() >= 2);
    assert!(forks.iter().all(|r| r["ok"] == Value::Bool(true)));
    // A subagent's record cannot be forked: the open fails.
    let sub = m
        .mnt
        .join("-home-dev-src-sub")
        .join(SUB)
        .join(".id/agent-general-purpose-call_sub_01");
    let out = sh("echo > fork", &sub);
    assert_ne!(out.code(), Some(0));
    assert!(
        fs::read_to_string(sub.join("fork"))
            .unwrap()
            .starts_with("error: ")
    );
}

// §11: cost counts each API call once, from its api_response record; usage too.
#[test]
fn cost_and_usage_count_each_request_once() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let tui = home
        .join("projects/-home-dev-src-tui/chats")
        .join(format!("{TUI}.jsonl"));
    let out = sessionfs(&["usage", "--json", tui.to_str().unwrap()], dir.path()).ok();
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let s = &v["sessions"][0];
    // 6 answers and the two requests of /compress.
    assert_eq!(s["requests"], 8, "{s}");
    assert_eq!(
        s["inputTokens"].as_u64().unwrap() + s["outputTokens"].as_u64().unwrap(),
        141_621
    );
    // A fork's copied requests count once over both files.
    let qa = home.join("projects/-home-dev-src-qa/chats");
    let out = sessionfs(&["usage", "--json", qa.to_str().unwrap()], dir.path()).ok();
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let total: u64 = v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(total, 6, "{v}");
    let m = mount_home(dir, &home);
    let cost = fs::read_to_string(m.mnt.join("-home-dev-src-tui").join(TUI).join("cost")).unwrap();
    assert!(cost.starts_with("session: tokens 141,621"), "{cost}");
    assert!(cost.contains("dead ends: tokens 20,513"), "{cost}");
}

// §10: check reports what the CLI would lose; the damaged files mount.
#[test]
fn check_reports_damaged_files_and_they_still_mount() {
    let dir = tempdir();
    let home = dir.path().join(".qwen");
    copy_tree(&qwen_dir().join("damaged/qwen-home"), &home);
    let out = sessionfs(&["check", home.to_str().unwrap()], dir.path());
    assert_eq!(out.code(), Some(1), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("Qwen Code refuses to load a file that mixes session ids"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("Qwen Code sends nothing before it"),
        "{}",
        out.stdout
    );
    let m = mount_home(dir, &home);
    let d = m.mnt.join("-home-dev-src-damaged");
    let want: Value = read_json(&qwen_dir().join("damaged/contexts.json"));
    for (sid, w) in want.as_object().unwrap() {
        match w.get("messages") {
            Some(msgs) => assert_eq!(
                &read_json(&d.join(sid).join("leaf/context.json")),
                msgs,
                "{}",
                w["name"]
            ),
            None if w["name"] == "empty" => {
                assert!(
                    fs::read_to_string(d.join(sid).join("ERROR"))
                        .unwrap()
                        .contains("empty")
                )
            }
            None => {}
        }
    }
}

// grep -r through the mount finds a prompt in its KIND file.
#[test]
fn grep_r_finds_where_something_was_said() {
    let dir = tempdir();
    let home = home_copy(dir.path(), "samples");
    let m = mount_home(dir, &home);
    let out = run(
        "grep",
        &["-rl", "AFTERCOMPACT", "."],
        &m.mnt.join("-home-dev-src-tui"),
    );
    let hits: Vec<&str> = out.stdout.lines().collect();
    assert!(
        hits.iter()
            .any(|h| h.ends_with("/2fa38120-89f6-42f0-9910-58d85f3d2972/user")),
        "{hits:?}"
    );
}
