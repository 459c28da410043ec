//! opencode sessions through real mounts (LAYOUT.md "opencode sessions",
//! OPENCODE-FORMAT.md): every point of every fixture session
//! (`tests/fixtures/opencode/{samples,own}`, made by the real CLI 1.18.33) read with
//! `cat` through a mount of a copy of its database equals what opencode sends there
//! (the kit's `contexts/*.json`); the leaf, names, `session.json`, KIND files, `tree`,
//! deleted turns as branches, subagents, forks and their links; the ways to mount (a
//! HOME, the data folder, the database, one session, the every-agent mount with
//! `OPENCODE_DB`); rows opencode writes while mounted; replies and forks through the
//! mount, and the refusals at `open`.

mod common;

use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn oc_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/opencode")
}

/// A copy of fixture set `set`'s HOME at `dir/home`: its database, in WAL mode as
/// opencode keeps it (the fixtures are checkpointed into one file).
fn home_copy(dir: &Path, set: &str) -> PathBuf {
    let home = dir.join("home");
    copy_tree(&oc_dir().join(set).join("home"), &home);
    let db = home.join(".local/share/opencode/opencode.db");
    let c = rusqlite::Connection::open(&db).unwrap();
    let mode: String = c
        .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    db
}

/// The expected `context.json` of one point of the kit (the summary request, less
/// the probe, where opencode compacts first).
fn expected_of(point: &Value) -> Value {
    if point["compactsFirst"] == true {
        let req = &point["summaryRequest"];
        let probe = req["probe"].as_str().unwrap();
        let mut msgs = req["messages"].clone();
        let content = msgs[0]["content"].as_str().unwrap().to_string();
        msgs[0]["content"] =
            Value::String(content.replacen(&format!("\n\n[User]: {probe}"), "", 1));
        return msgs;
    }
    point["messages"].clone()
}

/// Session id → (point → the kit's point) of fixture set `set`.
fn expected(set: &str) -> BTreeMap<String, serde_json::Map<String, Value>> {
    let mut out = BTreeMap::new();
    for e in fs::read_dir(oc_dir().join(set).join("contexts")).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("ses_") {
            continue;
        }
        let v: Value = serde_json::from_slice(&fs::read(&p).unwrap()).unwrap();
        out.insert(
            name.trim_end_matches(".json").to_string(),
            v.as_object().unwrap().clone(),
        );
    }
    out
}

/// Session id → its project folder in the mount, from the database.
fn projects(db: &Path) -> BTreeMap<String, String> {
    let c = rusqlite::Connection::open(db).unwrap();
    let mut stmt = c
        .prepare(
            "SELECT s.id, s.directory, p.worktree, s.parent_id FROM session s \
             LEFT JOIN project p ON p.id = s.project_id",
        )
        .unwrap();
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, Option<String>>(3)?,
            ))
        })
        .unwrap();
    let mut out = BTreeMap::new();
    for r in rows {
        let (id, dir, worktree, parent) = r.unwrap();
        if parent.is_some() {
            continue;
        }
        let base = match worktree {
            Some(w) if w != "/" => w,
            _ => dir,
        };
        out.insert(id, base.replace(['/', '.'], "-"));
    }
    out
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

/// What every fixture session of `set` reads through a mount of its database: every
/// point's `context.json` (the leaf through `leaf/`), the `tree` line and KIND file of
/// every point. Returns (sessions, points) checked.
fn every_point_reads_as_opencode_sends_it(set: &str) -> (usize, usize) {
    let dir = tempdir();
    let db = home_copy(dir.path(), set);
    let projects = projects(&db);
    let m = Mount::sessions_dir(dir, Some(&db), &[], &[]);
    let mut differ = Vec::new();
    let (mut sessions, mut points) = (0, 0);
    let listed = try_ls(&m.mnt).unwrap();
    for (sid, points_of) in expected(set) {
        let Some(project) = projects.get(&sid) else {
            // A subagent's session: read inside the session that ran it, below.
            continue;
        };
        assert!(listed.contains(project), "{project} not in {listed:?}");
        assert!(
            try_ls(&m.mnt.join(project)).unwrap().contains(&sid),
            "{project} does not list {sid}"
        );
        sessions += 1;
        let sdir = m.mnt.join(project).join(&sid);
        let ids: Vec<&String> = points_of.keys().collect();
        let files: Vec<String> = ids
            .iter()
            .map(|p| {
                if p.starts_with("ses_") {
                    "leaf/context.json".to_string()
                } else {
                    format!(".id/{p}/context.json")
                }
            })
            .collect();
        for ((p, text), want) in ids
            .iter()
            .zip(cat_all(&sdir, &files))
            .zip(points_of.values())
        {
            points += 1;
            let got: Value = match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(e) => {
                    differ.push(format!("{sid} {p}: not JSON ({e}): {text:.200}"));
                    continue;
                }
            };
            if got != expected_of(want) {
                differ.push(format!(
                    "{sid} {p}:\n got  {:.400}\n want {:.400}",
                    got.to_string(),
                    expected_of(want).to_string()
                ));
            }
            if want.get("leaf") == Some(&Value::Bool(true)) {
                let leaf = want["point"]["message"].as_str().unwrap();
                assert_eq!(link_id(&sdir.join("leaf")), leaf, "{sid}: the leaf");
            }
        }
        let tree = fs::read_to_string(sdir.join("tree")).unwrap();
        for p in ids.iter().filter(|p| p.starts_with("msg_")) {
            let d = sdir.join(".id").join(p);
            let kind: Vec<String> = try_ls(&d)
                .unwrap()
                .into_iter()
                .filter(|n| {
                    matches!(
                        n.as_str(),
                        "user" | "assistant" | "compaction" | "summary" | "damaged"
                    )
                })
                .collect();
            assert_eq!(kind.len(), 1, "{sid} {p}: {kind:?}");
            let text = fs::read_to_string(d.join(&kind[0])).unwrap();
            assert!(text.ends_with('\n'), "{sid} {p}");
            assert!(tree.contains(p.as_str()), "{sid}: {p} not in tree:\n{tree}");
        }
    }
    assert!(
        differ.is_empty(),
        "{set}: {} of {points} contexts differ from opencode's:\n{}",
        differ.len(),
        differ.join("\n")
    );
    (sessions, points)
}

// §3–§7: every point of the kit's samples (run, resume, --continue, --fork, tools,
// parallel and failing calls, images, a truncated output, automatic and TUI
// compaction, an API error, a TUI undo, a pending undo, an interrupt); the subagent's
// own session is checked through the session that ran it (below).
#[test]
fn every_sample_point_reads_through_the_mount_as_opencode_sends_it() {
    let (sessions, points) = every_point_reads_as_opencode_sends_it("samples");
    assert_eq!(sessions, 14);
    assert!(points >= 113, "{points}");
}

const QA: &str = "ses_dbae8e944ffe1iTjYgNIN5rQxf";
const QA_FORK: &str = "ses_dbae7bc51ffeYfEt65TYF2lXHA";
const TUI: &str = "ses_dbadde9c4ffemsGYRQGq7lJzZJ";
const TUIUNDO: &str = "ses_dbadbd855ffeOOXs20we3SIYnB";
const SUB: &str = "ses_dbae1429affeubJprCpecc8aB6";
const SUB_CHILD: &str = "ses_dbae09d1cffepQuxIalhCyIBRh";

#[test]
fn a_subagent_reads_inside_the_session_that_ran_it() {
    let dir = tempdir();
    let db = home_copy(dir.path(), "samples");
    let m = Mount::sessions_dir(dir, Some(&db), &[], &[]);
    let proj = m.mnt.join("-home-dev-src-sub");
    // Listed: the session, not the subagent's own.
    assert_eq!(try_ls(&proj).unwrap(), vec![SUB.to_string()]);
    let sdir = proj.join(SUB);
    let want = &expected("samples")[SUB_CHILD];
    for (p, point) in want {
        let file = if p.starts_with("ses_") {
            // The subagent's last message.
            format!(
                ".id/{}/context.json",
                point["point"]["message"].as_str().unwrap()
            )
        } else {
            format!(".id/{p}/context.json")
        };
        let got: Value = serde_json::from_slice(&fs::read(sdir.join(&file)).unwrap()).unwrap();
        assert_eq!(got, expected_of(point), "{p}");
    }
    // It hangs under the task call, and is no branch of its own.
    let task = "msg_2451f040b001btSobUUqOdXF6M";
    let first = "msg_2451f6494001E2M9P7uTpadGqc";
    assert_eq!(link_id(&sdir.join(".id").join(first).join("parent")), task);
    assert_eq!(try_ls(&sdir.join("branches")).unwrap().len(), 1);
    let user = fs::read_to_string(sdir.join(".id").join(first).join("user")).unwrap();
    assert!(
        user.starts_with(&format!("[subagent session {SUB_CHILD}")),
        "{user}"
    );
    // Its requests count where it was spawned.
    let cost = fs::read_to_string(sdir.join("cost")).unwrap();
    assert!(cost.starts_with("session: tokens "), "{cost}");
    assert!(cost.contains("4 requests"), "{cost}");
}

#[test]
fn undo_forks_names_and_session_json() {
    let dir = tempdir();
    let db = home_copy(dir.path(), "samples");
    let m = Mount::sessions_dir(dir, Some(&db), &[], &[]);
    // The turn /undo removed and the next prompt deleted: a branch, from the event log.
    let tui = m.mnt.join("-home-dev-src-tui").join(TUI);
    let branches = try_ls(&tui.join("branches")).unwrap();
    assert_eq!(
        branches,
        vec![
            "msg_245229c03001i0JGVVYGeBnAkn",
            "msg_245236f80001SgNXB0JD3jyczy"
        ]
    );
    let deleted = tui.join(".id/msg_245229be60014VwPX8KUOT9qAy/user");
    let text = fs::read_to_string(&deleted).unwrap();
    assert!(text.starts_with("[deleted by opencode"), "{text}");
    assert_eq!(
        fs::read_to_string(tui.join("name")).unwrap(),
        "Renamed in the TUI\n"
    );
    let sj: Value = serde_json::from_slice(&fs::read(tui.join("session.json")).unwrap()).unwrap();
    assert_eq!(sj["id"], TUI);
    assert_eq!(sj["project"]["worktree"], "/home/dev/src/tui");
    let tree = fs::read_to_string(tui.join("tree")).unwrap();
    assert!(tree.contains("[deleted] [[QA3]] Subtract 5."), "{tree}");
    assert!(tree.contains("compaction: [compaction]"), "{tree}");
    // A pending /undo: the leaf is the message before the revert.
    let undo = m.mnt.join("-home-dev-src-tuiundo").join(TUIUNDO);
    assert_eq!(
        link_id(&undo.join("leaf")),
        "msg_245247aff001Mi8idqx3FjqJxN"
    );
    // A fork links to where it came from, and its source lists it.
    let qa = m.mnt.join("-home-dev-src-qa");
    let from = qa.join(QA_FORK).join("forked-from");
    assert!(readlink(&from).ends_with(&format!("{QA}/.id/msg_2451820c1001lwr11tSyGYxacp")));
    assert!(from.is_dir());
    let forks = try_ls(&qa.join(QA).join(".id/msg_2451820c1001lwr11tSyGYxacp/forks")).unwrap();
    assert_eq!(forks, vec![QA_FORK.to_string()]);
    // Images, decoded.
    let img = m
        .mnt
        .join("-home-dev-src-image/ses_dbae53ce7fferW73D3XUXL5sAW/.id/msg_2451aca49001kphFnU0SiZ3NLl/image-1.png");
    assert!(fs::read(img).unwrap().starts_with(b"\x89PNG"));
    // The readable context: what opencode adds first, then the messages.
    let ctx = fs::read_to_string(qa.join(QA).join("leaf/context")).unwrap();
    assert!(ctx.starts_with("[system]\n"), "{ctx}");
    assert!(
        ctx.contains(
            "[tools] bash, edit, glob, grep, read, skill, task, todowrite, webfetch, write"
        ),
        "{ctx}"
    );
    assert!(ctx.contains("## user\n\"[[QA1]] What is 2+2?\"\n"), "{ctx}");
    // An answer's `request` is the context it answered: its user message's (`parent`).
    let leaf = qa.join(QA).join("leaf");
    assert_eq!(
        fs::read(leaf.join("request.json")).unwrap(),
        fs::read(leaf.join("parent/context.json")).unwrap()
    );
    assert!(
        fs::read_to_string(leaf.join("request"))
            .unwrap()
            .starts_with("[system]\n")
    );
    // Where opencode compacts first, the context says so.
    let cmp = m.mnt.join("-home-dev-src-compact/ses_dbae387fdffeiNDOydtH0BXklh/.id/msg_2451c91a0001J2WkRCzSeMjcA2/context");
    let text = fs::read_to_string(cmp).unwrap();
    assert!(
        text.starts_with("[opencode compacts first: the last answer used 97006 tokens"),
        "{text}"
    );
}

/// Opens a write of `path` as a shell's `>` does: the errno of a refusal at `open`.
fn open_errno(path: &Path) -> Option<i32> {
    fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .err()
        .and_then(|e| e.raw_os_error())
}

/// The ids of the messages of session `sid`, in order.
fn message_ids(db: &Path, sid: &str) -> Vec<String> {
    let c = rusqlite::Connection::open(db).unwrap();
    let mut stmt = c
        .prepare("SELECT id FROM message WHERE session_id = ?1 ORDER BY time_created, id")
        .unwrap();
    stmt.query_map([sid], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// The sessions of the project of session `sid` that the mount lists (not a
/// subagent's).
fn project_sessions(db: &Path, sid: &str) -> Vec<String> {
    let c = rusqlite::Connection::open(db).unwrap();
    let mut stmt = c
        .prepare(
            "SELECT id FROM session WHERE parent_id IS NULL AND project_id = \
             (SELECT project_id FROM session WHERE id = ?1) ORDER BY id",
        )
        .unwrap();
    stmt.query_map([sid], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn replies_are_written_as_opencode_writes_them() {
    let dir = tempdir();
    let db = home_copy(dir.path(), "samples");
    let m = Mount::sessions_dir(dir, Some(&db), &[], &[]);
    let qa = m.mnt.join("-home-dev-src-qa");
    let before = message_ids(&db, QA);
    // At the leaf: a message and its part, the session's time.
    sh("echo '[[QA4]] Add 1.' > leaf/reply", &qa.join(QA)).ok();
    let after = message_ids(&db, QA);
    assert_eq!(after.len(), before.len() + 1);
    assert_eq!(&after[..before.len()], &before[..]);
    let c = rusqlite::Connection::open(&db).unwrap();
    let (data, part, updated): (String, String, i64) = c
        .query_row(
            "SELECT m.data, p.data, s.time_updated FROM message m JOIN part p ON p.message_id = m.id \
             JOIN session s ON s.id = m.session_id WHERE m.id = ?1",
            [after.last().unwrap()],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    let d: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(d["role"], "user");
    assert_eq!(d["agent"], "build");
    assert_eq!(d["model"]["modelID"], "fake-model");
    assert_eq!(part, r#"{"type":"text","text":"[[QA4]] Add 1."}"#);
    assert_eq!(d["time"]["created"].as_i64().unwrap(), updated);
    // It shows as the new leaf.
    assert!(wait_until(DEADLINE, || {
        fs::read_link(qa.join(QA).join("leaf")).is_ok_and(|l| {
            l.to_string_lossy()
                .ends_with(after.last().unwrap().as_str())
        })
    }));
    // Earlier: a fork, beside it; the source unchanged.
    let n = try_ls(&qa).unwrap().len();
    sh(
        "echo '[[EARLY]] Again from the first answer.' > .id/msg_245173073001D9R3UeZhqJCJeW/reply",
        &qa.join(QA),
    )
    .ok();
    assert_eq!(message_ids(&db, QA), after);
    let listed = wait_until(DEADLINE, || try_ls(&qa).unwrap().len() == n + 1);
    assert!(
        listed,
        "the fork is not listed: {:?} (sessions of the project in the database: {:?}); \
         the mount said: {}",
        try_ls(&qa),
        project_sessions(&db, QA),
        m.stderr_text()
    );
    let fork = try_ls(&qa)
        .unwrap()
        .into_iter()
        .find(|s| s != QA && s != QA_FORK)
        .unwrap();
    let fork_ids = message_ids(&db, &fork);
    assert_eq!(fork_ids.len(), 3);
    assert_eq!(
        fs::read_to_string(qa.join(&fork).join("name")).unwrap(),
        "Arithmetic questions (fork #1)\n"
    );
    let ctx: Value =
        serde_json::from_slice(&fs::read(qa.join(&fork).join("leaf/context.json")).unwrap())
            .unwrap();
    assert_eq!(
        ctx,
        serde_json::json!([
            {"role": "user", "content": "\"[[QA1]] What is 2+2?\""},
            {"role": "assistant", "content": "2 + 2 = 4."},
            {"role": "user", "content": "[[EARLY]] Again from the first answer."}
        ])
    );
    assert!(
        readlink(&qa.join(&fork).join("forked-from"))
            .ends_with(&format!("{QA}/.id/msg_245173073001D9R3UeZhqJCJeW"))
    );
}

#[test]
fn what_cannot_be_written_fails_at_open() {
    let dir = tempdir();
    let db = home_copy(dir.path(), "samples");
    let m = Mount::sessions_dir(dir, Some(&db), &[], &[]);
    let tui = m.mnt.join("-home-dev-src-tui").join(TUI);
    // What is never written shows no write bit and is refused at open (EACCES):
    // a message opencode deleted (only its event log keeps it), the root (a session
    // starts with `opencode run`), the name (opencode's title).
    for refused in [
        tui.join(".id/msg_245229c03001i0JGVVYGeBnAkn/reply"),
        tui.join(".id/msg_245229c03001i0JGVVYGeBnAkn/fork"),
        tui.join("reply"),
        tui.join("name"),
    ] {
        assert_eq!(open_errno(&refused), Some(libc::EACCES), "{refused:?}");
        assert_eq!(
            fs::metadata(&refused).unwrap().permissions().mode() & 0o222,
            0,
            "{refused:?}"
        );
    }
    // A subagent's message.
    let sub = m.mnt.join("-home-dev-src-sub").join(SUB);
    assert_eq!(
        open_errno(&sub.join(".id/msg_2451f81480017lUlbu6N2KDv1J/reply")),
        Some(libc::EACCES)
    );
    // The database locked by a writer: EBUSY, and nothing written.
    let qa = m.mnt.join("-home-dev-src-qa").join(QA);
    assert!(qa.join("leaf/reply").exists());
    let before = message_ids(&db, QA);
    let mut c = rusqlite::Connection::open(&db).unwrap();
    let tx = c
        .transaction_with_behavior(rusqlite::TransactionBehavior::Exclusive)
        .unwrap();
    assert_eq!(open_errno(&qa.join("leaf/reply")), Some(libc::EBUSY));
    drop(tx);
    drop(c);
    assert_eq!(message_ids(&db, QA), before);
    // opencode writing an answer in the session: EBUSY.
    let c = rusqlite::Connection::open(&db).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    c.execute(
        "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?3, ?4)",
        rusqlite::params![
            format!("msg_{:012x}zzzzzzzzzzzzzz", (now << 12) + 1),
            QA,
            now,
            r#"{"role":"assistant","time":{"created":1},"parentID":"x","modelID":"fake-model","providerID":"fake","mode":"build","agent":"build","path":{"cwd":"/","root":"/"},"cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}}}"#
        ],
    )
    .unwrap();
    assert!(wait_until(DEADLINE, || open_errno(&qa.join("leaf/reply"))
        == Some(libc::EBUSY)));
}

/// Many quick commits into a loaded session, each as opencode writes it (one
/// transaction: a message, its part, the session's time), most of them landing while
/// the mount is still catching up with the ones before: each shows up, the last one
/// included. The `-wal` is kept as long and as old as it was (the log restarted after
/// a checkpoint and rewritten in place, within one tick of the file clock), so that
/// only what makes a commit visible tells it apart: a commit must never be taken as
/// seen because the `-wal` looked as it did when its rows were not visible yet.
#[test]
fn quick_commits_all_show_up_even_where_the_wal_looks_unchanged() {
    let dir = tempdir();
    let db = home_copy(dir.path(), "samples");
    let wal = {
        let mut p = db.as_os_str().to_os_string();
        p.push("-wal");
        PathBuf::from(p)
    };
    let w = rusqlite::Connection::open(&db).unwrap();
    w.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; CREATE TABLE scratch (x BLOB)",
    )
    .unwrap();
    // A long log, checkpointed: the commits below rewrite it from its first frame.
    for _ in 0..300 {
        w.execute("INSERT INTO scratch VALUES (zeroblob(8000))", [])
            .unwrap();
    }
    w.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
        .unwrap();
    let len = fs::metadata(&wal).unwrap().len();
    let mtime = fs::metadata(&wal).unwrap().modified().unwrap();
    let m = Mount::sessions_dir(dir, Some(&db), &[], &[]);
    let qa = m.mnt.join("-home-dev-src-qa").join(QA);
    assert!(fs::read_to_string(qa.join("tree")).is_ok());
    let leaf_is =
        |id: &str| fs::read_link(qa.join("leaf")).is_ok_and(|l| l.to_string_lossy().ends_with(id));
    let last: i64 = w
        .query_row(
            "SELECT max(time_created) FROM message WHERE session_id = ?1",
            [QA],
            |r| r.get(0),
        )
        .unwrap();
    let mut pinned = 0;
    let mut ids = Vec::new();
    for k in 1..=40i64 {
        let t = last + k;
        let id = format!("{:012x}", ((t << 12) + 1) & 0xffff_ffff_ffff);
        let (msg, part) = (
            format!("msg_{id}quick{k:09}"),
            format!("prt_{id}quick{k:09}"),
        );
        w.execute_batch("BEGIN IMMEDIATE").unwrap();
        w.execute(
            "INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
            rusqlite::params![msg, QA, t, format!(r#"{{"role":"user","time":{{"created":{t}}},"agent":"build","model":{{"providerID":"fake","modelID":"fake-model"}}}}"#)],
        )
        .unwrap();
        w.execute(
            "INSERT INTO part VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
            rusqlite::params![
                part,
                msg,
                QA,
                t,
                format!(r#"{{"type":"text","text":"quick {k}"}}"#)
            ],
        )
        .unwrap();
        w.execute(
            "UPDATE session SET time_updated = ?1 WHERE id = ?2",
            rusqlite::params![t, QA],
        )
        .unwrap();
        w.execute_batch("COMMIT").unwrap();
        ids.push(msg.clone());
        if fs::metadata(&wal).unwrap().len() == len {
            fs::File::options()
                .write(true)
                .open(&wal)
                .unwrap()
                .set_modified(mtime)
                .unwrap();
            pinned += 1;
        }
        // Every fifth commit is waited for; the others land while the mount catches up.
        if k % 5 == 0 {
            assert!(
                wait_until(DEADLINE, || leaf_is(&msg)),
                "commit {k} never showed"
            );
        }
    }
    assert!(
        pinned > 0,
        "the log never restarted: the test shows nothing"
    );
    for (k, msg) in ids.iter().enumerate() {
        let text = fs::read_to_string(qa.join(".id").join(msg).join("user"));
        assert_eq!(
            text.ok(),
            Some(format!("quick {}\n", k + 1)),
            "commit {}",
            k + 1
        );
    }
}

#[test]
fn rows_opencode_writes_while_mounted_show_up() {
    let dir = tempdir();
    let db = home_copy(dir.path(), "samples");
    let m = Mount::sessions_dir(dir, Some(&db), &[], &[]);
    let qa = m.mnt.join("-home-dev-src-qa").join(QA);
    let tree = fs::read_to_string(qa.join("tree")).unwrap();
    assert!(!tree.contains("streamed"));
    // opencode's writes: a user message, an assistant message whose text part grows in
    // place, then its completion.
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch("PRAGMA journal_mode=WAL").unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let id = |k: i64| format!("{:012x}", ((now << 12) + k) & 0xffff_ffff_ffff);
    let (u, a, pu, pa) = (
        format!("msg_{}aaaaaaaaaaaaaa", id(1)),
        format!("msg_{}bbbbbbbbbbbbbb", id(3)),
        format!("prt_{}cccccccccccccc", id(2)),
        format!("prt_{}dddddddddddddd", id(4)),
    );
    c.execute(
        "INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
        rusqlite::params![u, QA, now, format!(r#"{{"role":"user","time":{{"created":{now}}},"agent":"build","model":{{"providerID":"fake","modelID":"fake-model"}}}}"#)],
    )
    .unwrap();
    c.execute(
        "INSERT INTO part VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
        rusqlite::params![pu, u, QA, now, r#"{"type":"text","text":"live question"}"#],
    )
    .unwrap();
    let leaf_is =
        |id: &str| fs::read_link(qa.join("leaf")).is_ok_and(|l| l.to_string_lossy().ends_with(id));
    assert!(wait_until(DEADLINE, || leaf_is(&u)));
    let adata = format!(
        r#"{{"parentID":"{u}","role":"assistant","mode":"build","agent":"build","path":{{"cwd":"/home/dev/src/qa","root":"/home/dev/src/qa"}},"cost":0,"tokens":{{"input":0,"output":0,"reasoning":0,"cache":{{"read":0,"write":0}}}},"modelID":"fake-model","providerID":"fake","time":{{"created":{}}}}}"#,
        now + 1
    );
    c.execute(
        "INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
        rusqlite::params![a, QA, now + 1, adata],
    )
    .unwrap();
    c.execute(
        "INSERT INTO part VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
        rusqlite::params![pa, a, QA, now + 1, r#"{"type":"text","text":"streamed"}"#],
    )
    .unwrap();
    let kind = qa.join(".id").join(&a).join("assistant");
    assert!(wait_until(DEADLINE, || fs::read_to_string(&kind)
        .is_ok_and(|t| t == "streamed\n")));
    // The part grows in place (the same row, rewritten).
    c.execute(
        "UPDATE part SET data = ?1, time_updated = ?2 WHERE id = ?3",
        rusqlite::params![
            r#"{"type":"text","text":"streamed, then more"}"#,
            now + 2,
            pa
        ],
    )
    .unwrap();
    assert!(wait_until(DEADLINE, || fs::read_to_string(&kind)
        .is_ok_and(|t| t == "streamed, then more\n")));
    let ctx = qa.join(".id").join(&a).join("context.json");
    assert!(wait_until(DEADLINE, || fs::read_to_string(&ctx)
        .is_ok_and(|t| t.contains("streamed, then more"))));
    // A title set meanwhile.
    c.execute(
        "UPDATE session SET title = 'Retitled', time_updated = ?1 WHERE id = ?2",
        rusqlite::params![now + 3, QA],
    )
    .unwrap();
    assert!(wait_until(DEADLINE, || fs::read_to_string(qa.join("name"))
        .is_ok_and(|t| t == "Retitled\n")));
    // A new session appears in its project.
    drop(m);
}

#[test]
fn a_home_the_data_folder_one_session_and_the_every_agent_mount() {
    // A HOME holding .local/share/opencode/opencode.db, and the data folder.
    for rel in ["home", "home/.local/share/opencode"] {
        let dir = tempdir();
        home_copy(dir.path(), "samples");
        let src = dir.path().join(rel);
        let m = Mount::sessions_dir(dir, Some(&src), &[], &[]);
        assert!(
            try_ls(&m.mnt)
                .unwrap()
                .contains(&"-home-dev-src-qa".to_string()),
            "{rel}"
        );
    }
    // One session of the database, alone.
    let dir = tempdir();
    let db = home_copy(dir.path(), "samples");
    let m = Mount::start(dir, db.join(QA), &[]);
    assert_eq!(
        fs::read_to_string(m.mnt.join("name")).unwrap(),
        "Arithmetic questions\n"
    );
    assert_eq!(
        link_id(&m.mnt.join("leaf")),
        "msg_2451820c1001lwr11tSyGYxacp"
    );
    // ...followed live.
    sh("echo 'and more' > leaf/reply", &m.mnt).ok();
    assert!(wait_until(DEADLINE, || fs::read_to_string(
        m.mnt.join("tree")
    )
    .is_ok_and(|t| t.contains("and more"))));
    drop(m);
    // The every-agent mount: opencode/ beside the others, found at its default place
    // (HOME) and through OPENCODE_DB.
    let dir = tempdir();
    home_copy(dir.path(), "samples");
    let h = dir.path().join("home");
    let none = std::ffi::OsStr::new("");
    let m = Mount::sessions_dir(
        dir,
        None,
        &[],
        &[
            ("HOME", h.as_os_str()),
            ("PI_CODING_AGENT_DIR", none),
            ("CLAUDE_CONFIG_DIR", none),
            ("CODEX_HOME", none),
            ("OPENCODE_DB", none),
            ("XDG_DATA_HOME", none),
        ],
    );
    assert!(try_ls(&m.mnt).unwrap().contains(&"opencode".to_string()));
    let qa = m.mnt.join("opencode/-home-dev-src-qa").join(QA);
    assert_eq!(
        fs::read_to_string(qa.join("name")).unwrap(),
        "Arithmetic questions\n"
    );
    drop(m);
    let dir = tempdir();
    let moved = dir.path().join("elsewhere.db");
    let db = home_copy(dir.path(), "samples");
    fs::rename(&db, &moved).unwrap();
    let h = dir.path().join("nohome");
    let m = Mount::sessions_dir(
        dir,
        None,
        &[],
        &[
            ("HOME", h.as_os_str()),
            ("PI_CODING_AGENT_DIR", std::ffi::OsStr::new("")),
            ("CLAUDE_CONFIG_DIR", std::ffi::OsStr::new("")),
            ("CODEX_HOME", std::ffi::OsStr::new("")),
            ("OPENCODE_DB", moved.as_os_str()),
        ],
    );
    assert_eq!(try_ls(&m.mnt).unwrap(), vec!["opencode"]);
    assert!(
        m.mnt
            .join("opencode/-home-dev-src-qa")
            .join(QA)
            .join("leaf")
            .exists()
    );
    let _ = Duration::ZERO;
}

// sessionfs's own sessions from the kit: a fork of a fork and the source continued
// after both, three runs of 20 chained tool calls, a TUI /compact undone with the
// turn after it (the deleted compaction a branch), then resumed.
#[test]
fn every_own_point_reads_through_the_mount_as_opencode_sends_it() {
    let (sessions, points) = every_point_reads_as_opencode_sends_it("own");
    assert_eq!(sessions, 5);
    assert!(points >= 100, "{points}");
}

/// `sessionfs check`, `usage` and `fork` take opencode's database or one session of it
/// (`DB/ses_…`), as they take another agent's files.
#[test]
fn check_usage_and_fork_take_the_database() {
    use std::ffi::OsStr;
    let dir = tempdir();
    let db = home_copy(dir.path(), "samples");
    let out = sessionfs(&[OsStr::new("check"), db.as_os_str()], dir.path());
    assert_eq!(out.code(), Some(0), "{out:?}");
    // The damaged set: reported, with the message at fault.
    let bad_dir = tempdir();
    let bad = home_copy(bad_dir.path(), "damaged");
    let out = sessionfs(&[OsStr::new("check"), bad.as_os_str()], bad_dir.path());
    assert_ne!(out.code(), Some(0), "{out:?}");
    let said = format!("{}{}", out.stdout, out.stderr);
    assert!(said.contains("msg_2455c3301001damagedXXXXXXX"), "{said}");
    // usage of one session: the tokens opencode counted for it.
    let one = db.join(QA);
    let out = sessionfs(
        &[OsStr::new("usage"), OsStr::new("--json"), one.as_os_str()],
        dir.path(),
    )
    .ok();
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let c = rusqlite::Connection::open(&db).unwrap();
    let counted: i64 = c
        .query_row(
            "SELECT tokens_input + tokens_output + tokens_reasoning + tokens_cache_read \
             + tokens_cache_write FROM session WHERE id = ?1",
            [QA],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(v["totals"]["totalTokens"], counted, "{v}");
    // fork at an answer: a new session of the database, holding copies up to it, and
    // the tokens of the copies as opencode's own fork counts them.
    let before = message_ids(&db, QA);
    let out = sessionfs(
        &[
            OsStr::new("fork"),
            one.as_os_str(),
            OsStr::new("msg_245173073001D9R3UeZhqJCJeW"),
        ],
        dir.path(),
    )
    .ok();
    let made = PathBuf::from(out.stdout.trim());
    assert_eq!(made.parent(), Some(db.as_path()), "{out:?}");
    let sid = made.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(message_ids(&db, &sid).len(), 2);
    assert_eq!(message_ids(&db, QA), before);
    let (title, input): (String, i64) = c
        .query_row(
            "SELECT title, tokens_input FROM session WHERE id = ?1",
            [&sid],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(title, "Arithmetic questions (fork #1)");
    let copied: i64 = c
        .query_row(
            "SELECT json_extract(data, '$.tokens.input') FROM message WHERE id = ?1",
            ["msg_245173073001D9R3UeZhqJCJeW"],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(input, copied);
}
