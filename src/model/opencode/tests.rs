//! The opencode model against the kit's samples and sessions
//! (`tests/fixtures/opencode/`, made by the real CLI 1.18.33).

use crate::model::core::input::locked_for_others;
use crate::model::core::session::Session;
use serde_json::Value;
use std::path::{Path, PathBuf};

pub(crate) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/opencode")
}

/// The database of a fixture set (`samples`, `own`, …).
pub(crate) fn db(set: &str) -> PathBuf {
    fixtures()
        .join(set)
        .join("home/.local/share/opencode/opencode.db")
}

/// The expected `context.json` of one point of the kit's `contexts/<sid>.json`: the
/// request's messages, or (opencode compacting first) the summary request without the
/// probe.
pub(crate) fn expected(point: &Value) -> Value {
    if point["compactsFirst"] == true {
        let req = &point["summaryRequest"];
        let probe = req["probe"].as_str().unwrap_or("");
        let mut msgs = req["messages"].clone();
        let content = msgs[0]["content"].as_str().unwrap_or("").to_string();
        let without = content.replacen(&format!("\n\n[User]: {probe}"), "", 1);
        msgs[0]["content"] = Value::String(without);
        return msgs;
    }
    point["messages"].clone()
}

/// Every point of every session of fixture set `set`: (session, point id, expected).
pub(crate) fn points(set: &str) -> Vec<(String, String, Value)> {
    let dir = fixtures().join(set).join("contexts");
    let mut out = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("ses_"))
        })
        .collect();
    files.sort();
    for f in files {
        let sid = f.file_stem().unwrap().to_string_lossy().into_owned();
        let v: Value = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
        for (k, p) in v.as_object().unwrap() {
            out.push((sid.clone(), k.clone(), expected(p)));
        }
    }
    out
}

fn open(set: &str, sid: &str) -> Session {
    Session::open(db(set).join(sid)).unwrap_or_else(|e| panic!("{sid}: {e}"))
}

/// `context.json` of every point equals what opencode sends there.
fn contexts_equal_the_kits(set: &str) {
    let mut n = 0;
    let mut bad = Vec::new();
    let mut sessions: std::collections::HashMap<String, Session> = Default::default();
    for (sid, point, want) in points(set) {
        let s = sessions
            .entry(sid.clone())
            .or_insert_with(|| open(set, &sid));
        let i = if point.starts_with("ses_") {
            s.leaf().unwrap_or_else(|| panic!("{sid}: no leaf"))
        } else {
            s.find(&point)
                .unwrap_or_else(|| panic!("{sid}: no entry {point}"))
        };
        let got = Value::Array(s.context_messages(i).unwrap());
        n += 1;
        if got != want {
            bad.push(format!(
                "{sid} {point}:\n  got  {}\n  want {}",
                serde_json::to_string(&got).unwrap(),
                serde_json::to_string(&want).unwrap()
            ));
        }
    }
    assert!(n > 0);
    assert!(
        bad.is_empty(),
        "{} of {n} differ:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn every_samples_context_is_the_clis() {
    contexts_equal_the_kits("samples");
}

#[test]
fn sessions_index_as_lists_with_their_leaf_and_name() {
    let s = open("samples", "ses_dbae8e944ffe1iTjYgNIN5rQxf");
    assert_eq!(s.entries().len(), 6);
    assert_eq!(s.name(), Some("Arithmetic questions"));
    assert_eq!(
        s.id_string(s.leaf().unwrap()),
        "msg_2451820c1001lwr11tSyGYxacp"
    );
    assert_eq!(s.leaf_count(), 1);
    let kinds: Vec<&str> = (0..6).map(|i| s.kind_name(i)).collect();
    assert_eq!(
        kinds,
        [
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant"
        ]
    );
}

#[test]
fn a_pending_undo_leaves_the_leaf_before_it() {
    let s = open("samples", "ses_dbadbd855ffeOOXs20we3SIYnB");
    assert_eq!(
        s.id_string(s.leaf().unwrap()),
        "msg_245247aff001Mi8idqx3FjqJxN"
    );
    let (text, _) = s
        .render(s.find("msg_245248f8e001MHaL67Xfk7n20c").unwrap())
        .unwrap();
    assert!(text.starts_with("[hidden by /undo"), "{text}");
}

#[test]
fn the_deleted_turn_is_a_branch_from_the_event_log() {
    let s = open("samples", "ses_dbadde9c4ffemsGYRQGq7lJzZJ");
    // 12 rows, and the [[QA3]] turn opencode deleted.
    assert_eq!(s.entries().len(), 14);
    let qa3 = s.find("msg_245229be60014VwPX8KUOT9qAy").unwrap();
    assert_eq!(
        s.id_string(s.parent(qa3).unwrap()),
        "msg_2452288260012P8tZ3yXcGcSFO"
    );
    assert_eq!(s.leaf_count(), 2);
    let (text, _) = s.render(qa3).unwrap();
    assert!(text.starts_with("[deleted by opencode"), "{text}");
    assert!(text.contains("[[QA3]] Subtract 5."), "{text}");
    // Its answer hangs under it; the turn after the undo under the message before.
    let ans = s.find("msg_245229c03001i0JGVVYGeBnAkn").unwrap();
    assert_eq!(s.parent(ans), Some(qa3));
    let after = s.find("msg_24522bf78001TxmKPNGxQB3IlQ").unwrap();
    assert_eq!(s.parent(after), s.parent(qa3));
    assert!(s.refuse_reply_at(Some(ans)).is_some());
}

#[test]
fn a_subagent_shows_under_its_task_call() {
    let s = open("samples", "ses_dbae1429affeubJprCpecc8aB6");
    assert_eq!(s.entries().len(), 6);
    let first = s.find("msg_2451f6494001E2M9P7uTpadGqc").unwrap();
    assert_eq!(
        s.id_string(s.parent(first).unwrap()),
        "msg_2451f040b001btSobUUqOdXF6M"
    );
    assert!(s.is_piece(first));
    assert_eq!(
        s.id_string(s.leaf().unwrap()),
        "msg_2451f91b9001bamZPb6MQv1pMj"
    );
    let (text, _) = s.render(first).unwrap();
    assert!(
        text.starts_with("[subagent session ses_dbae09d1cffepQuxIalhCyIBRh"),
        "{text}"
    );
}

#[test]
fn forks_are_found_by_their_content() {
    let fork = open("samples", "ses_dbae7bc51ffeYfEt65TYF2lXHA");
    let from = fork.forked_from().expect("a fork");
    assert_eq!(from.session, "ses_dbae8e944ffe1iTjYgNIN5rQxf");
    assert_eq!(
        from.entry.as_deref(),
        Some("msg_2451820c1001lwr11tSyGYxacp")
    );
    assert_eq!(from.folder.as_deref(), Some("-home-dev-src-qa"));
    let src = open("samples", "ses_dbae8e944ffe1iTjYgNIN5rQxf");
    let at = src.find("msg_2451820c1001lwr11tSyGYxacp").unwrap();
    let forks = src.forks_at(at);
    assert_eq!(forks.len(), 1);
    assert_eq!(forks[0].session, "ses_dbae7bc51ffeYfEt65TYF2lXHA");
    // The TUI's fork at an earlier prompt.
    let tui = open("samples", "ses_dbadcea81ffelIfnVcZ7htx1uF");
    assert_eq!(
        tui.forked_from().unwrap().entry.as_deref(),
        Some("msg_24522e6a3001jjSf6posbqXMxE")
    );
}

#[test]
fn images_are_decoded() {
    let s = open("samples", "ses_dbae53ce7fferW73D3XUXL5sAW");
    let (text, images) = s.render(0).unwrap();
    assert_eq!(images.len(), 1, "{text}");
    assert_eq!(images[0].ext, "png");
    assert!(images[0].data.starts_with(b"\x89PNG"));
    assert!(text.contains("→ image-1.png]"), "{text}");
}

/// A copy of fixture set `set`'s database in WAL mode, as opencode keeps it.
pub(crate) fn wal_copy(set: &str) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("opencode.db");
    std::fs::copy(db(set), &p).unwrap();
    let c = rusqlite::Connection::open(&p).unwrap();
    c.execute_batch("PRAGMA journal_mode=WAL").unwrap();
    (d, p)
}

#[test]
fn rows_added_and_rewritten_in_place_are_followed() {
    let (_d, p) = wal_copy("samples");
    let sid = "ses_dbae8e944ffe1iTjYgNIN5rQxf";
    let mut s = Session::open(p.join(sid)).unwrap();
    let c = rusqlite::Connection::open(&p).unwrap();
    let now = crate::model::core::time::now_ms();
    c.execute(
        "INSERT INTO message VALUES ('msg_fffffffffff1aaaaaaaaaaaaaa', ?1, ?2, ?2, ?3)",
        rusqlite::params![sid, now, r#"{"role":"user","time":{"created":1}}"#],
    )
    .unwrap();
    c.execute(
        "INSERT INTO part VALUES ('prt_fffffffffff2aaaaaaaaaaaaaa', 'msg_fffffffffff1aaaaaaaaaaaaaa', ?1, ?2, ?2, ?3)",
        rusqlite::params![sid, now, r#"{"type":"text","text":"one"}"#],
    )
    .unwrap();
    let ch = s.refresh().unwrap();
    assert_eq!(ch.new_entries, 6..7);
    let i = s.find("msg_fffffffffff1aaaaaaaaaaaaaa").unwrap();
    assert_eq!(s.render(i).unwrap().0, "one\n");
    c.execute(
        "UPDATE part SET data = ?1, time_updated = ?2 WHERE id = 'prt_fffffffffff2aaaaaaaaaaaaaa'",
        rusqlite::params![r#"{"type":"text","text":"one two"}"#, now + 1],
    )
    .unwrap();
    let ch = s.refresh().unwrap();
    assert_eq!(ch.rewritten, vec![i]);
    assert!(ch.new_entries.is_empty());
    assert_eq!(s.render(i).unwrap().0, "one two\n");
    // Unchanged: nothing.
    assert!(s.refresh().unwrap().is_empty());
    // A message deleted: read again from scratch.
    c.execute(
        "DELETE FROM message WHERE id = 'msg_fffffffffff1aaaaaaaaaaaaaa'",
        [],
    )
    .unwrap();
    let ch = s.refresh().unwrap();
    assert!(ch.reloaded);
    assert_eq!(s.entries().len(), 6);
}

#[test]
fn writes_of_other_connections_are_followed() {
    let (_d, p) = wal_copy("samples");
    let sid = "ses_dbae8e944ffe1iTjYgNIN5rQxf";
    let mut s = Session::open(p.join(sid)).unwrap();
    let now = crate::model::core::time::now_ms();
    {
        let c = rusqlite::Connection::open(&p).unwrap();
        c.execute(
            "INSERT INTO message VALUES ('msg_fffffffffff1aaaaaaaaaaaaaa', ?1, ?2, ?2, ?3)",
            rusqlite::params![sid, now, r#"{"role":"user","time":{"created":1}}"#],
        )
        .unwrap();
        c.execute(
            "INSERT INTO part VALUES ('prt_fffffffffff2aaaaaaaaaaaaaa', 'msg_fffffffffff1aaaaaaaaaaaaaa', ?1, ?2, ?2, ?3)",
            rusqlite::params![sid, now, r#"{"type":"text","text":"one"}"#],
        )
        .unwrap();
    }
    let ch = s.refresh().unwrap();
    assert_eq!(ch.new_entries, 6..7);
    {
        let c = rusqlite::Connection::open(&p).unwrap();
        c.execute(
            "UPDATE part SET data = ?1, time_updated = ?2 WHERE id = 'prt_fffffffffff2aaaaaaaaaaaaaa'",
            rusqlite::params![r#"{"type":"text","text":"one two"}"#, now + 1],
        )
        .unwrap();
    }
    let ch = s.refresh().unwrap();
    let i = s.find("msg_fffffffffff1aaaaaaaaaaaaaa").unwrap();
    assert_eq!(ch.rewritten, vec![i]);
    assert_eq!(s.render(i).unwrap().0, "one two\n");
}

/// A commit that leaves the `-wal` as long as it was and with the same modification
/// time (a log restarted after a checkpoint, rewritten in place within one tick of the
/// file clock) is followed: what says a commit is visible is the WAL index, not the
/// `-wal` file's size and time.
#[test]
fn a_commit_that_leaves_the_wal_as_long_and_as_old_is_followed() {
    let (_d, p) = wal_copy("samples");
    let sid = "ses_dbae8e944ffe1iTjYgNIN5rQxf";
    let wal = super::db::wal_of(&p);
    let w = rusqlite::Connection::open(&p).unwrap();
    w.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; CREATE TABLE scratch (x BLOB)",
    )
    .unwrap();
    // A long log, checkpointed: the next commit starts it again from its first frame.
    for _ in 0..40 {
        w.execute("INSERT INTO scratch VALUES (zeroblob(8000))", [])
            .unwrap();
    }
    w.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
        .unwrap();
    let mut s = Session::open(p.join(sid)).unwrap();
    let len = std::fs::metadata(&wal).unwrap().len();
    let now = crate::model::core::time::now_ms();
    let commit = |k: i64| {
        let (m, pt) = (
            format!("msg_fffffffff00{k}aaaaaaaaaaaaaa"),
            format!("prt_fffffffff00{k}aaaaaaaaaaaaaa"),
        );
        w.execute_batch("BEGIN IMMEDIATE").unwrap();
        w.execute(
            "INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
            rusqlite::params![m, sid, now + k, r#"{"role":"user","time":{"created":1}}"#],
        )
        .unwrap();
        w.execute(
            "INSERT INTO part VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
            rusqlite::params![pt, m, sid, now + k, r#"{"type":"text","text":"live"}"#],
        )
        .unwrap();
        w.execute_batch("COMMIT").unwrap();
        m
    };
    let a = commit(1);
    assert_eq!(
        std::fs::metadata(&wal).unwrap().len(),
        len,
        "the log restarted"
    );
    s.refresh().unwrap();
    assert!(s.find(&a).is_some());
    let mtime = std::fs::metadata(&wal).unwrap().modified().unwrap();
    let b = commit(2);
    assert_eq!(std::fs::metadata(&wal).unwrap().len(), len);
    std::fs::File::options()
        .write(true)
        .open(&wal)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    s.refresh().unwrap();
    assert!(s.find(&b).is_some(), "the second commit is seen");
}

#[test]
fn every_own_context_is_the_clis() {
    contexts_equal_the_kits("own");
}

/// The problems `check` reports of a session of the damaged set: (line, code).
fn codes(sid: &str) -> Vec<(u32, &'static str)> {
    let s = open("damaged", sid);
    s.problems()
        .iter()
        .filter_map(|p| match &p.what {
            crate::model::core::session::ProblemKind::Agent { code, .. } => Some((p.line, *code)),
            _ => None,
        })
        .collect()
}

#[test]
fn damage_is_reported_and_read_as_opencode_reads_it() {
    // A message that is not JSON: reported; opencode cannot continue past it.
    assert_eq!(
        codes("ses_dbae8e944ffe1iTjYgNIN5rQxf"),
        [(7, "damaged-row")]
    );
    let s = open("damaged", "ses_dbae8e944ffe1iTjYgNIN5rQxf");
    let bad = s.find("msg_2455c3301001damagedXXXXXXX").unwrap();
    assert_eq!(s.kind_name(bad), "damaged");
    assert!(s.context_messages(bad).unwrap().is_empty());
    assert!(
        s.context_preamble(bad)
            .unwrap()
            .starts_with("[opencode cannot continue here: message msg_2455c3301001damagedXXXXXXX")
    );
    // Before it, the contexts are as ever.
    assert_eq!(s.context_messages(bad - 1).unwrap().len(), 6);
    // A part that is not JSON; a part of no message.
    assert_eq!(
        codes("ses_dbae75725ffegfhIFKCRhR1guE"),
        [(0, "orphan-parts"), (1, "damaged-row")]
    );
    // A user message without parts is not sent; an answer to no message is sent in its
    // place (§10).
    assert_eq!(
        codes("ses_dbae6dea9ffezw5HanhHce7tlj"),
        [(6, "empty-message"), (7, "dangling-parent")]
    );
    let s = open("damaged", "ses_dbae6dea9ffezw5HanhHce7tlj");
    let ctx = s.context_messages(s.leaf().unwrap()).unwrap();
    let last = ctx.last().unwrap();
    assert_eq!(last["content"], "an answer to no message");
    assert_eq!(ctx[ctx.len() - 2]["role"], "assistant");
    // A role nobody writes; a revert naming nothing (nothing hidden: the last message
    // is the leaf); a session with no messages; a subagent whose task call is gone; an
    // answer opencode never finished.
    assert_eq!(
        codes("ses_dbae53ce7fferW73D3XUXL5sAW"),
        [(5, "unknown-role")]
    );
    let s = open("damaged", "ses_dbae026d1ffeLz2m5hXN4RYc9V");
    assert_eq!(
        codes("ses_dbae026d1ffeLz2m5hXN4RYc9V"),
        [(0, "revert-missing")]
    );
    assert_eq!(s.leaf(), Some(5));
    let s = open("damaged", "ses_dbae3fbe9ffeDaBrC7I3kJYLGP");
    assert_eq!((s.entries().len(), s.leaf()), (0, None));
    assert_eq!(
        codes("ses_dbae1429affeubJprCpecc8aB6"),
        [(0, "subagent-unplaced")]
    );
    assert_eq!(
        open("damaged", "ses_dbae1429affeubJprCpecc8aB6")
            .roots()
            .len(),
        2
    );
    assert_eq!(
        codes("ses_dbac926adffe9v8l6m35Fwx3vu"),
        [(9, "unfinished-answer")]
    );
    let s = open("damaged", "ses_dbac926adffe9v8l6m35Fwx3vu");
    // A pending tool part is sent as interrupted.
    let ctx = s.context_messages(s.leaf().unwrap()).unwrap();
    assert_eq!(
        ctx.last().unwrap()["content"],
        "[Tool execution was interrupted]"
    );
}

#[test]
fn every_reply_written_through_the_mount_was_resumed_by_the_cli() {
    let dir = fixtures().join("accepts");
    let cases = std::fs::read_to_string(dir.join("cases.tsv")).unwrap();
    let mut n = 0;
    for line in cases
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let name = line.split('\t').next().unwrap();
        let r: Value =
            serde_json::from_slice(&std::fs::read(dir.join(format!("{name}.json"))).unwrap())
                .unwrap();
        assert_eq!(r["ok"], true, "{name}: {r}");
        for k in [
            "endsWithAppendedText",
            "historyMatches",
            "rowsKept",
            "listed",
        ] {
            assert_eq!(r[k], true, "{name}: {k}");
        }
        n += 1;
    }
    assert_eq!(n, 18);
}

// The sessions sessionfs wrote (replies at the leaf, forks at every kind of message)
// read as opencode sends them.
#[test]
fn every_context_of_the_sessions_sessionfs_wrote_is_the_clis() {
    contexts_equal_the_kits("accepts");
}

/// A row's shape: its JSON's keys, recursively, with the values of `keep`.
fn shape(v: &Value, keep: &[&str]) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| {
                    let x = if keep.contains(&k.as_str()) {
                        x.clone()
                    } else {
                        shape(x, keep)
                    };
                    (k.clone(), x)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|x| shape(x, keep)).collect()),
        _ => Value::Null,
    }
}

/// The rows of a session: (message data shapes, part data shapes, session columns
/// that are null).
fn rows_of(db: &Path, sid: &str) -> (Vec<Value>, Vec<Value>, Vec<String>) {
    let c = rusqlite::Connection::open(db).unwrap();
    let mut stmt = c
        .prepare("SELECT data FROM message WHERE session_id = ?1 ORDER BY time_created, id")
        .unwrap();
    let keep = ["role", "type", "agent", "modelID", "providerID"];
    let msgs = stmt
        .query_map([sid], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|d| shape(&serde_json::from_str(&d.unwrap()).unwrap(), &keep))
        .collect();
    let mut stmt = c
        .prepare("SELECT p.data FROM part p JOIN message m ON m.id = p.message_id WHERE p.session_id = ?1 ORDER BY m.time_created, m.id, p.id")
        .unwrap();
    let parts = stmt
        .query_map([sid], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|d| shape(&serde_json::from_str(&d.unwrap()).unwrap(), &keep))
        .collect();
    let row = crate::model::opencode::store::session_row(&c, sid)
        .unwrap()
        .unwrap();
    let nulls = row
        .columns
        .iter()
        .filter(|(_, v)| v.is_null())
        .map(|(k, _)| k.clone())
        .collect();
    (msgs, parts, nulls)
}

// What the writer writes now has the shape of what the CLI accepted (ids, times,
// slugs and texts apart).
#[test]
fn replies_still_write_what_the_cli_accepted() {
    let written: Value =
        serde_json::from_slice(&std::fs::read(fixtures().join("accepts/written.json")).unwrap())
            .unwrap();
    let accepted_db = db("accepts");
    for (case, src, at) in [
        ("leaf-qa", "ses_dbae8e944ffe1iTjYgNIN5rQxf", None),
        (
            "at-tool-step",
            "ses_dbae75725ffegfhIFKCRhR1guE",
            Some("msg_24518cf6c001SjrmOdVrk2a5UV"),
        ),
        ("leaf-tuiundo", "ses_dbadbd855ffeOOXs20we3SIYnB", None),
    ] {
        let (_d, p) = wal_copy("samples");
        let s = Session::open(p.join(src)).unwrap();
        let parent = match at {
            Some(m) => m.to_string(),
            None => s.id_string(s.leaf().unwrap()),
        };
        s.write_reply(Some(&parent), "x").unwrap().unwrap();
        let target = if at.is_none() && case == "leaf-qa" {
            src.to_string()
        } else {
            // The newest session: the fork.
            let c = rusqlite::Connection::open(&p).unwrap();
            c.query_row(
                "SELECT id FROM session ORDER BY time_created DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .unwrap()
        };
        let want = rows_of(&accepted_db, written[case].as_str().unwrap());
        let got = rows_of(&p, &target);
        assert_eq!(got.0, want.0, "{case}: messages");
        assert_eq!(got.1, want.1, "{case}: parts");
        assert_eq!(got.2, want.2, "{case}: the session's null columns");
    }
}

/// What each session records of its own requests (`session.tokens_*`, opencode's
/// running count over the session's message rows) equals what sessionfs counts at the
/// entries of that session's rows: the session's own messages (a fork's copies
/// included, as opencode's count of a fork includes them), and each subagent's
/// messages against the subagent's own row. Messages opencode deleted are in no row's
/// count (opencode counts the rows it keeps) and are left out here.
#[test]
fn every_sessions_tokens_are_those_opencode_counted() {
    use super::index::{OpencodeSession, Part};
    use crate::model::core::usage::Table;
    use crate::model::core::usage::prices::{Prices, Tokens};
    use std::collections::BTreeMap;
    let mut checked = 0;
    for set in ["samples", "own", "accepts"] {
        let conn = rusqlite::Connection::open_with_flags(
            db(set),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        let mut rows: BTreeMap<String, (Tokens, f64)> = BTreeMap::new();
        let mut q = conn
            .prepare(
                "SELECT id, tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, \
                 tokens_cache_write, cost FROM session",
            )
            .unwrap();
        for r in q
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    Tokens {
                        input: r.get::<_, i64>(1)? as u64,
                        output: (r.get::<_, i64>(2)? + r.get::<_, i64>(3)?) as u64,
                        cache_read: r.get::<_, i64>(4)? as u64,
                        cache_write: r.get::<_, i64>(5)? as u64,
                    },
                    r.get::<_, f64>(6)?,
                ))
            })
            .unwrap()
        {
            let (id, t, cost) = r.unwrap();
            rows.insert(id, (t, cost));
        }
        for l in super::catalog::list(&db(set)).unwrap() {
            let s = open(set, &l.id);
            let a = s
                .agent()
                .as_any()
                .downcast_ref::<OpencodeSession>()
                .unwrap();
            let t = Table::build(&s, &Prices::snapshot());
            let mut counted: BTreeMap<String, (Tokens, f64)> = BTreeMap::new();
            for (i, m) in a.metas().iter().enumerate() {
                if m.part == Part::Deleted {
                    continue;
                }
                let slot = counted.entry(m.session_id.clone()).or_default();
                if let Some(r) = &t.own[i] {
                    slot.0.add(&r.tokens);
                    slot.1 += r.cost.unwrap_or(0.0);
                }
            }
            for (sid, (tokens, cost)) in counted {
                let (want, want_cost) = &rows[&sid];
                assert_eq!(&tokens, want, "{set} {sid} (in {})", l.id);
                assert!(
                    (cost - want_cost).abs() < 1e-9,
                    "{set} {sid}: {cost} {want_cost}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 35, "only {checked} sessions checked");
}

/// A connection as opencode opens its database (its `Database` service: WAL,
/// `synchronous = NORMAL`, `busy_timeout = 5000`, `foreign_keys = ON`).
fn as_opencode(p: &Path) -> rusqlite::Connection {
    let c = rusqlite::Connection::open(p).unwrap();
    c.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
         PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON;",
    )
    .unwrap();
    c
}

/// Replies go through SQLite's locking as opencode's writes do: while opencode holds
/// the write lock, a reply waits (its busy timeout) and then fails with `EBUSY`,
/// leaving nothing; while opencode commits turn after turn into another session, every
/// reply and every one of opencode's rows lands, none waiting past its busy timeout.
#[test]
fn replies_take_turns_with_opencodes_writes() {
    let (_d, p) = wal_copy("samples");
    let qa = "ses_dbae8e944ffe1iTjYgNIN5rQxf";
    let other = "ses_dbae75725ffegfhIFKCRhR1guE";
    let count = |sid: &str| -> i64 {
        rusqlite::Connection::open(&p)
            .unwrap()
            .query_row(
                "SELECT count(*) FROM message WHERE session_id = ?1",
                [sid],
                |r| r.get(0),
            )
            .unwrap()
    };
    let (qa0, other0) = (count(qa), count(other));
    // opencode holds the write lock: the reply fails with EBUSY, nothing written.
    {
        let mut oc = as_opencode(&p);
        let tx = oc
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .unwrap();
        let s = Session::open(p.join(qa)).unwrap();
        let leaf = s.id_string(s.leaf().unwrap());
        let e = s.write_reply(Some(&leaf), "blocked").unwrap().unwrap_err();
        assert_eq!(e.errno(), libc::EBUSY, "{e}");
        assert!(e.to_string().contains("busy"), "{e}");
        drop(tx);
    }
    assert_eq!(count(qa), qa0);
    // opencode writing turns into another session meanwhile.
    const TURNS: i64 = 40;
    const REPLIES: i64 = 10;
    let writer = {
        let p = p.clone();
        std::thread::spawn(move || {
            let mut oc = as_opencode(&p);
            let base = (crate::model::core::time::now_ms() << 12) & 0xffff_ffff_ffff;
            for k in 0..TURNS {
                let tx = oc.transaction().unwrap();
                let (m, pt) = (
                    format!("msg_{:012x}oooooooooooooo", base + 2 * k + 1),
                    format!("prt_{:012x}oooooooooooooo", base + 2 * k + 2),
                );
                tx.execute(
                    "INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
                    rusqlite::params![
                        m,
                        other,
                        1_900_000_000_000i64 + k,
                        r#"{"role":"user","time":{"created":1}}"#
                    ],
                )
                .unwrap();
                tx.execute(
                    "INSERT INTO part VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                    rusqlite::params![
                        pt,
                        m,
                        other,
                        1_900_000_000_000i64 + k,
                        r#"{"type":"text","text":"opencode"}"#
                    ],
                )
                .unwrap();
                tx.execute(
                    "UPDATE session SET time_updated = ?1 WHERE id = ?2",
                    rusqlite::params![1_900_000_000_000i64 + k, other],
                )
                .unwrap();
                tx.commit().unwrap();
            }
        })
    };
    let mut s = Session::open(p.join(qa)).unwrap();
    for k in 0..REPLIES {
        s.refresh().unwrap();
        let leaf = s.id_string(s.leaf().unwrap());
        s.write_reply(Some(&leaf), &format!("reply {k}"))
            .unwrap()
            .unwrap_or_else(|e| panic!("reply {k}: {e}"));
    }
    writer.join().unwrap();
    assert_eq!(count(qa), qa0 + REPLIES);
    assert_eq!(count(other), other0 + TURNS);
    // Every reply is a message and its part, in order, at the leaf.
    s.refresh().unwrap();
    assert_eq!(
        s.render(s.leaf().unwrap()).unwrap().0,
        format!("reply {}\n", REPLIES - 1)
    );
}

/// SQLite's locks are POSIX locks, the process's on the file: closing any descriptor
/// of the database would drop those of our connections. Reading the header, finding
/// the database of a folder, and opening and dropping a session of it leave a
/// connection's lock in place.
#[test]
fn the_database_is_never_closed_under_our_connections() {
    let (_d, p) = wal_copy("samples");
    let c = super::db::open_read(&p).unwrap();
    let n: i64 = c
        .query_row("SELECT count(*) FROM session", [], |r| r.get(0))
        .unwrap();
    assert!(n > 0);
    // In WAL mode an open connection keeps its shared lock between reads.
    assert!(locked_for_others(&p), "the connection holds no lock");
    assert!(super::db::is_sqlite(&p));
    assert!(locked_for_others(&p), "lost by reading the header");
    assert_eq!(super::catalog::db_of(&p), Some(p.clone()));
    assert_eq!(super::catalog::db_of(p.parent().unwrap()), Some(p.clone()));
    assert!(locked_for_others(&p), "lost by finding the database");
    for _ in 0..2 {
        let s = Session::open(p.join("ses_dbae8e944ffe1iTjYgNIN5rQxf")).unwrap();
        assert!(!s.entries.is_empty());
        assert!(locked_for_others(&p), "lost by opening a session");
        drop(s);
        assert!(locked_for_others(&p), "lost by dropping a session");
    }
    drop(c);
    assert!(
        !locked_for_others(&p),
        "still locked once the connection is closed"
    );
}
