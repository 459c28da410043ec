use super::*;
use serde_json::{Value, json};
use std::path::Path;

const T: &str = "01a2331d-9d4a-7781-acec-f35cf40a4d8b";
const NOW: i64 = 1_796_160_000_000; // 2026-12-01T21:20:00Z

struct Home {
    _dir: tempfile::TempDir,
    home: PathBuf,
    day: PathBuf,
}

fn line(ord: u64, ty: &str, payload: Value) -> String {
    let mut s = serde_json::to_string(&json!({
        "timestamp": "2026-12-01T19:38:28.000Z", "ordinal": ord, "type": ty, "payload": payload,
    }))
    .unwrap();
    s.push('\n');
    s
}

fn user(ord: u64, text: &str, order: u64) -> String {
    let v = json!({"timestamp": "2026-12-01T19:38:28.000Z", "ordinal": ord, "type": "response_item",
        "payload": {"type": "message", "id": format!("msg_{ord}"), "role": "user",
                    "content": [{"type": "input_text", "text": text}]},
        "metadata": {"history_sequence": ord, "sampled_through_sequence": ord, "user_input_order": order}});
    let mut s = serde_json::to_string(&v).unwrap();
    s.push('\n');
    s
}

fn assistant(ord: u64, text: &str) -> String {
    line(
        ord,
        "response_item",
        json!({"type": "message", "status": "completed", "id": format!("msg_a{ord}"), "role": "assistant",
               "content": [{"type": "output_text", "text": text, "annotations": []}]}),
    )
}

/// A home with one thread of two turns on its first page.
fn home() -> (Home, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join(".codex");
    let day = home.join("sessions/2026/12/01");
    fs::create_dir_all(&day).unwrap();
    let mut s = line(
        0,
        "session_meta",
        json!({"session_id": T, "id": T, "timestamp": "t0", "cwd": "/p", "originator": "codex_exec",
               "history_mode": "paginated", "context_window": {"window_id": "w"}}),
    );
    s += &line(
        1,
        "event_msg",
        json!({"type": "thread_settings_applied", "thread_id": T, "thread_settings": {"model": "m"}}),
    );
    s += &line(
        2,
        "turn_context",
        json!({"turn_id": "t1", "root_turn_id": "t1", "cwd": "/p", "model": "m"}),
    );
    s += &user(3, "one", 0);
    s += &assistant(4, "ONE");
    s += &line(5, "event_msg", json!({"type": "task_complete"}));
    s += &line(
        6,
        "turn_context",
        json!({"turn_id": "t2", "root_turn_id": "t2", "cwd": "/p", "model": "m2"}),
    );
    s += &user(7, "two", 1);
    s += &assistant(8, "TWO");
    s += &line(9, "event_msg", json!({"type": "task_complete"}));
    let page = day.join(format!("rollout-2026-12-01T19-38-28-{T}.jsonl"));
    fs::write(&page, s).unwrap();
    (
        Home {
            _dir: dir,
            home,
            day,
        },
        page,
    )
}

fn make_db(home: &Path, rollout: &Path) {
    let c = rusqlite::Connection::open(home.join(STATE_DB)).unwrap();
    c.execute_batch(
        "CREATE TABLE threads (id TEXT PRIMARY KEY, rollout_path TEXT NOT NULL, created_at INTEGER,
         updated_at INTEGER, updated_at_ms INTEGER, recency_at INTEGER, recency_at_ms INTEGER, title TEXT);",
    )
    .unwrap();
    c.execute(
        "INSERT INTO threads VALUES (?1, ?2, 1, 1, 1000, 1, 1000, 'one')",
        rusqlite::params![T, rollout.to_str().unwrap()],
    )
    .unwrap();
}

fn db_path_of(home: &Path) -> String {
    let c = rusqlite::Connection::open(home.join(STATE_DB)).unwrap();
    c.query_row("SELECT rollout_path FROM threads WHERE id=?1", [T], |r| {
        r.get(0)
    })
    .unwrap()
}

fn opts() -> Options {
    Options {
        now_ms: NOW,
        busy_timeout: Duration::from_millis(200),
        ..Options::default()
    }
}

fn at(page: &Path, ordinal: Option<u64>) -> Point {
    Point {
        page: page.to_path_buf(),
        ordinal,
        thread: None,
    }
}

fn parse(bytes: &[u8]) -> Vec<Value> {
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect()
}

fn rollouts(h: &Home) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(&h.day)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

#[test]
fn leaf_appends_the_turn_with_the_next_ordinals() {
    let (h, page) = home();
    let old = fs::read(&page).unwrap();
    // The last response_item is ordinal 8; task_complete after it is bookkeeping, so a
    // reply at 8 is still at the leaf.
    make_db(&h.home, &page);
    let w = reply(&at(&page, Some(8)), "trois\nlignes ✓", &opts()).unwrap();
    assert_eq!(w.kind, WrittenKind::Appended { db: Updated::Times });
    let c = rusqlite::Connection::open(h.home.join(STATE_DB)).unwrap();
    let times: (i64, i64, i64, i64) = c
        .query_row(
            "SELECT updated_at, updated_at_ms, recency_at, recency_at_ms FROM threads WHERE id=?1",
            [T],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    assert_eq!(times, (NOW / 1000, NOW, NOW / 1000, NOW));
    assert_eq!(
        db_path_of(&h.home),
        page.to_str().unwrap(),
        "still the same page"
    );
    let new = fs::read(&page).unwrap();
    assert_eq!(&new[..old.len()], &old[..], "old bytes kept");
    assert_eq!(&new[old.len()..], &w.bytes[..]);
    assert_eq!(w.offset, old.len() as u64);
    let lines = parse(&w.bytes);
    let ords: Vec<u64> = lines
        .iter()
        .map(|l| l["ordinal"].as_u64().unwrap())
        .collect();
    assert_eq!(ords, [10, 11, 12, 13, 14, 15]);
    assert_eq!(lines[5]["payload"]["type"], "task_complete");
    assert_eq!(w.ordinal, 13);
    let item = &lines[3];
    assert_eq!(item["payload"]["content"][0]["text"], "trois\nlignes ✓");
    assert_eq!(item["payload"]["id"], w.message_id.as_str());
    assert_eq!(item["metadata"]["user_input_order"], 2);
    assert_eq!(item["metadata"]["history_sequence"], 8);
    // the last turn_context is the one copied
    assert_eq!(lines[2]["payload"]["model"], "m2");
    assert_eq!(lines[0]["payload"]["thread_id"], T);
    assert_eq!(rollouts(&h).len(), 1, "no other file");
}

#[test]
fn leaf_after_a_torn_line_starts_with_a_newline() {
    let (_h, page) = home();
    let mut f = OpenOptions::new().append(true).open(&page).unwrap();
    f.write_all(b"{\"timestamp\":\"x\",\"ordinal\":10,\"ty")
        .unwrap();
    drop(f);
    let old = fs::read(&page).unwrap();
    let o = Options {
        shape: Shape::Minimal,
        ..opts()
    };
    let w = reply(&at(&page, None), "after torn", &o).unwrap();
    assert_eq!(
        w.kind,
        WrittenKind::Appended {
            db: Updated::NoDatabase
        }
    );
    assert_eq!(w.bytes[0], b'\n');
    let new = fs::read(&page).unwrap();
    assert_eq!(&new[..old.len()], &old[..]);
    let l = parse(&w.bytes[1..]);
    assert_eq!(l.len(), 1);
    // the fragment has no ordinal: Codex continues from the last line that has one
    assert_eq!(l[0]["ordinal"], 10);
    let keys: Vec<_> = l[0].as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["timestamp", "ordinal", "type", "payload"]);
    assert!(new.ends_with(b"\n"));
}

#[test]
fn earlier_point_makes_a_rewind_page_and_points_the_row_at_it() {
    let (h, page) = home();
    make_db(&h.home, &page);
    let old = fs::read(&page).unwrap();
    let w = reply(&at(&page, Some(4)), "autre chose", &opts()).unwrap();
    assert_eq!(
        w.kind,
        WrittenKind::NewPage {
            db: Updated::RolloutPath
        }
    );
    assert_eq!(fs::read(&page).unwrap(), old, "the old page is untouched");
    let name = w.path.file_name().unwrap().to_str().unwrap().to_string();
    let n = PageName::parse(&name).unwrap();
    assert_eq!(n.thread_id, T);
    assert_ne!(n.page_id, T);
    assert_eq!(n.ts, "2026-12-01T21-20-00");
    assert_eq!(fs::read(&w.path).unwrap(), w.bytes);
    let lines = parse(&w.bytes);
    let meta = &lines[0];
    assert_eq!(meta["type"], "session_meta");
    assert_eq!(meta["ordinal"], 6);
    let hb = &meta["payload"]["history_base"];
    assert_eq!(hb["thread_id"], T);
    // The answer (4) ends turn 1: the base keeps the turn's closing task_complete (5)
    // and ends where turn 2 starts (its turn_context, 6), as Codex's rewind does.
    assert_eq!(hb["end_ordinal_exclusive"], 6);
    let cut = old
        .split_inclusive(|&b| b == b'\n')
        .take(6)
        .map(|l| l.len())
        .sum::<usize>();
    assert_eq!(hb["end_byte_offset"], cut as u64);
    assert_eq!(meta["payload"]["id"], T);
    assert_eq!(meta["payload"]["timestamp"], "2026-12-01T21:20:00.000Z");
    let ords: Vec<u64> = lines
        .iter()
        .map(|l| l["ordinal"].as_u64().unwrap())
        .collect();
    assert_eq!(ords, [6, 7, 8, 9, 10, 11, 12]);
    // settings are those in force at the point (turn 1), not the later ones
    assert_eq!(lines[3]["payload"]["model"], "m");
    assert_eq!(lines[4]["metadata"]["user_input_order"], 1);
    assert_eq!(db_path_of(&h.home), w.path.to_str().unwrap());
}

#[test]
fn a_rewind_page_on_a_rewind_page_reads_the_base_chain() {
    let (h, page) = home();
    make_db(&h.home, &page);
    let w1 = reply(&at(&page, Some(4)), "page two", &opts()).unwrap();
    // At the leaf of page 2 now (it is current): appended there.
    let w2 = reply(&at(&w1.path, None), "leaf of page two", &opts()).unwrap();
    assert_eq!(w2.kind, WrittenKind::Appended { db: Updated::Times });
    assert_eq!(w2.path, w1.path);
    // An earlier point of page 2 (its user message): a page 3 based on page 2, whose
    // turn copies the settings found in page 1 through the chain.
    let o = Options {
        now_ms: NOW + 1000,
        ..opts()
    };
    let w3 = reply(&at(&w1.path, Some(w1.ordinal)), "page three", &o).unwrap();
    let l = parse(&w3.bytes);
    let p2 = PageName::parse(w1.path.file_name().unwrap().to_str().unwrap()).unwrap();
    assert_eq!(
        l[0]["payload"]["history_base"]["thread_id"],
        p2.page_id.as_str()
    );
    // The base carries over the reply's closing lines (item_completed,
    // task_complete) and the next turn's thread_settings_applied, up to its
    // task_started.
    assert_eq!(l[0]["ordinal"], w1.ordinal + 4);
    assert_eq!(l[3]["payload"]["model"], "m");
    assert_eq!(db_path_of(&h.home), w3.path.to_str().unwrap());
    // The end of page 1 is no longer current: a reply there is a new page too.
    let w4 = reply(
        &at(&page, None),
        "end of page one",
        &Options {
            now_ms: NOW + 2000,
            ..opts()
        },
    )
    .unwrap();
    assert!(matches!(w4.kind, WrittenKind::NewPage { .. }));
    assert_eq!(parse(&w4.bytes)[0]["ordinal"], 10);
    assert_eq!(rollouts(&h).len(), 4);
}

#[test]
fn without_a_database_the_newest_page_decides() {
    let (h, page) = home();
    let w1 = reply(&at(&page, Some(3)), "p2", &opts()).unwrap();
    assert_eq!(
        w1.kind,
        WrittenKind::NewPage {
            db: Updated::NoDatabase
        }
    );
    assert!(
        !h.home.join(STATE_DB).exists(),
        "the database is never created"
    );
    // page 1 is no longer the newest: its end is not the leaf
    let w2 = reply(
        &at(&page, None),
        "x",
        &Options {
            now_ms: NOW + 1000,
            ..opts()
        },
    )
    .unwrap();
    assert!(matches!(w2.kind, WrittenKind::NewPage { .. }));
    // a page newer than the clock (skew) with no row: refused, nothing left behind
    let before = rollouts(&h);
    let err = reply(
        &at(&page, Some(3)),
        "y",
        &Options {
            now_ms: NOW - 3_600_000,
            ..opts()
        },
    )
    .unwrap_err();
    assert_eq!(err.errno(), libc::EEXIST);
    assert_eq!(rollouts(&h), before);
}

#[test]
fn a_busy_database_fails_the_reply_and_leaves_nothing() {
    let (h, page) = home();
    make_db(&h.home, &page);
    let lock = rusqlite::Connection::open(h.home.join(STATE_DB)).unwrap();
    // A writer holds the database (readers may still read it, as in Codex's WAL mode):
    // the new page is written, the row cannot be, and the page is removed again.
    lock.execute_batch("BEGIN IMMEDIATE").unwrap();
    let before = rollouts(&h);
    let old = fs::read(&page).unwrap();
    let err = reply(&at(&page, Some(4)), "busy", &opts()).unwrap_err();
    assert_eq!(err.errno(), libc::EBUSY, "{err}");
    let msg = err.to_string();
    assert!(msg.contains("state_5.sqlite"), "{msg}");
    assert!(msg.contains("try again"), "{msg}");
    assert_eq!(rollouts(&h), before, "the new page was removed");
    assert_eq!(fs::read(&page).unwrap(), old);
    // At the leaf the database only gets the times: the reply stands without them.
    let w = reply(&at(&page, None), "busy leaf", &opts()).unwrap();
    match &w.kind {
        WrittenKind::Appended {
            db: Updated::TimesSkipped(why),
        } => assert!(why.contains("state_5.sqlite"), "{why}"),
        k => panic!("{k:?}"),
    }
    assert!(fs::read(&page).unwrap().starts_with(&old));
    lock.execute_batch("ROLLBACK").unwrap();
    // Locked even for readers: which page is current cannot be known; nothing written.
    let old = fs::read(&page).unwrap();
    lock.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let err = reply(&at(&page, None), "x", &opts()).unwrap_err();
    assert_eq!(err.errno(), libc::EBUSY, "{err}");
    assert_eq!(fs::read(&page).unwrap(), old);
    assert_eq!(rollouts(&h), before);
    lock.execute_batch("ROLLBACK").unwrap();
    drop(lock);
    assert_eq!(db_path_of(&h.home), page.to_str().unwrap());
}

#[test]
fn a_database_codex_cannot_take_fails_cleanly() {
    let (h, page) = home();
    // A schema without the columns we set (a future Codex): the UPDATE fails.
    let c = rusqlite::Connection::open(h.home.join(STATE_DB)).unwrap();
    c.execute_batch("CREATE TABLE threads (id TEXT PRIMARY KEY, rollout_path TEXT);")
        .unwrap();
    c.execute(
        "INSERT INTO threads VALUES (?1, ?2)",
        rusqlite::params![T, page.to_str().unwrap()],
    )
    .unwrap();
    drop(c);
    let before = rollouts(&h);
    let err = reply(&at(&page, Some(4)), "x", &opts()).unwrap_err();
    assert_eq!(err.errno(), libc::EIO);
    assert!(err.to_string().contains("no such column"), "{err}");
    assert_eq!(rollouts(&h), before);
    // Not a database at all.
    fs::write(
        h.home.join(STATE_DB),
        b"this is not sqlite, just text long enough\n",
    )
    .unwrap();
    let err = reply(&at(&page, Some(4)), "x", &opts()).unwrap_err();
    assert!(err.to_string().contains("state_5.sqlite"), "{err}");
    assert_eq!(rollouts(&h), before);
}

#[test]
fn bad_points_say_what_is_wrong() {
    let (h, page) = home();
    let e = reply(&at(&page, Some(99)), "x", &opts()).unwrap_err();
    assert_eq!(e.errno(), libc::ENOENT);
    assert!(e.to_string().contains("ordinal 99"), "{e}");
    let zst = h
        .day
        .join(format!("rollout-2026-12-01T19-38-28-{T}.jsonl.zst"));
    fs::write(&zst, b"x").unwrap();
    let e = reply(&at(&zst, None), "x", &opts()).unwrap_err();
    assert_eq!(e.errno(), libc::EOPNOTSUPP);
    let stray = h
        .home
        .join(format!("rollout-2026-12-01T19-38-28-{T}.jsonl"));
    fs::copy(&page, &stray).unwrap();
    let e = reply(&at(&stray, None), "x", &opts()).unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL);
    let e = reply(&at(&h.day.join("nope.jsonl"), None), "x", &opts()).unwrap_err();
    assert_eq!(e.errno(), libc::ENOENT);
    let odd = h.day.join("notes.jsonl");
    fs::write(&odd, b"{}\n").unwrap();
    let e = reply(&at(&odd, None), "x", &opts()).unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL);
    assert!(e.to_string().contains("rollout"), "{e}");
}

/// The replies `scripts/codex-accepts` wrote with this writer and the real Codex CLI
/// resumed: every report says ok, and the writer still writes the same lines (ids,
/// times and the scratch paths apart).
#[test]
fn accepted_shapes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex");
    let cases = fs::read_to_string(root.join("accepts/cases.tsv")).unwrap();
    let mut n = 0;
    for row in cases
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let f: Vec<&str> = row.split('\t').collect();
        let (name, page, ord, prep, shape) = (f[0], f[1], f[2], f[3], f[4]);
        let report: Value =
            serde_json::from_slice(&fs::read(root.join(format!("accepts/{name}.json"))).unwrap())
                .unwrap();
        assert_eq!(report["ok"], true, "{name}: {report}");
        assert_eq!(report["reply"]["ok"], true, "{name}: {report}");
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join(".codex");
        copy_tree(&root.join("own/codex-home"), &home);
        let p = find_page(&home.join("sessions"), page);
        if prep == "tear" {
            let b = fs::read(&p).unwrap();
            let body = &b[..b.len() - 1];
            let start = body.iter().rposition(|&c| c == b'\n').map_or(0, |i| i + 1);
            fs::write(&p, &b[..start + (b.len() - start) / 2]).unwrap();
        }
        let text = format!("[[APPENDED]] sessionfs reply ({name}): é — 日本語\nsecond line");
        let o = Options {
            shape: if shape == "minimal" {
                Shape::Minimal
            } else {
                Shape::Turn
            },
            ..Options::default()
        };
        let ordinal = if ord == "end" {
            None
        } else {
            Some(ord.parse().unwrap())
        };
        let mut point = at(&p, ordinal);
        point.thread = f.get(6).map(|t| t.to_string());
        let w = reply(&point, &text, &o).unwrap();
        let want = fs::read(root.join(format!("accepts/{name}.written.jsonl"))).unwrap();
        let (got, want) = (shape_of(&w.bytes), shape_of(&want));
        assert_eq!(got.len(), want.len(), "{name}: number of lines");
        for (i, (g, e)) in got.iter().zip(&want).enumerate() {
            if g != e {
                let cut = |v: &Value| v.to_string().chars().take(400).collect::<String>();
                panic!(
                    "{name}: line {i} differs from the accepted one\n got: {}\nwant: {}",
                    cut(g),
                    cut(e)
                );
            }
        }
        if let WrittenKind::NewPage { db } = &w.kind {
            assert_eq!(*db, Updated::RolloutPath, "{name}");
            let c = rusqlite::Connection::open(home.join(STATE_DB)).unwrap();
            let rp: String = c
                .query_row(
                    "SELECT rollout_path FROM threads WHERE id=?1",
                    [&w.thread_id],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(Path::new(&rp), w.path, "{name}");
        }
        n += 1;
    }
    assert!(n >= 10, "{n} cases");
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to.join(e.file_name()));
        } else {
            fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

fn find_page(dir: &Path, part: &str) -> PathBuf {
    fn walk(dir: &Path, part: &str) -> Option<PathBuf> {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let found = if p.is_dir() {
                walk(&p, part)
            } else {
                p.to_str().unwrap().ends_with(part).then_some(p)
            };
            if found.is_some() {
                return found;
            }
        }
        None
    }
    walk(dir, part).unwrap_or_else(|| panic!("no page *{part} under {}", dir.display()))
}

/// The lines with every UUID, timestamp and clock reading replaced by a placeholder.
fn shape_of(bytes: &[u8]) -> Vec<Value> {
    let uuid =
        regex::Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").unwrap();
    let time = regex::Regex::new(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$").unwrap();
    fn walk(v: &mut Value, uuid: &regex::Regex, time: &regex::Regex) {
        match v {
            Value::String(s) => {
                let t = uuid.replace_all(s, "<uuid>").into_owned();
                *s = if time.is_match(&t) {
                    "<time>".into()
                } else {
                    t
                };
            }
            Value::Array(a) => a.iter_mut().for_each(|x| walk(x, uuid, time)),
            Value::Object(m) => {
                for (k, x) in m.iter_mut() {
                    if matches!(
                        k.as_str(),
                        "create_time"
                            | "started_at"
                            | "completed_at"
                            | "started_at_ms"
                            | "completed_at_ms"
                    ) {
                        *x = Value::from(0);
                    } else {
                        walk(x, uuid, time);
                    }
                }
            }
            _ => {}
        }
    }
    bytes
        .split_inclusive(|&b| b == b'\n')
        .map(|l| {
            let mut v = serde_json::from_slice::<Value>(l).unwrap_or(Value::Null);
            walk(&mut v, &uuid, &time);
            v
        })
        .collect()
}

/// The fixture databases are Codex's own schema with exactly the fixture threads, every
/// row naming a page that is there (as `/home/dev/.codex/…`), and open read-only with no
/// side files (rollback journal, not WAL).
#[test]
fn fixture_databases_name_their_pages() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex");
    for (dir, threads) in [("own", 10), ("own-zst", 3)] {
        let home = root.join(dir).join("codex-home");
        let c = rusqlite::Connection::open_with_flags(
            home.join(STATE_DB),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        let mode: String = c
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "delete", "{dir}");
        let migrations: i64 = c
            .query_row("SELECT count(*) FROM _sqlx_migrations", [], |r| r.get(0))
            .unwrap();
        assert!(
            migrations > 0,
            "{dir}: Codex refuses a database without them"
        );
        let mut st = c.prepare("SELECT id, rollout_path FROM threads").unwrap();
        let rows: Vec<(String, String)> = st
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(rows.len(), threads, "{dir}");
        for (id, path) in rows {
            let rel = path.strip_prefix("/home/dev/.codex/").unwrap();
            let plain = home.join(rel);
            let zst = home.join(format!("{rel}.zst"));
            assert!(plain.exists() || zst.exists(), "{dir}: {path}");
            assert!(rel.contains(&id), "{dir}: {path}");
        }
    }
    // own-zst's oldest page is only compressed (zstd's magic number), the plain one in own/
    let day = root.join("own-zst/codex-home/sessions/2026/12/01");
    let zst: Vec<PathBuf> = fs::read_dir(&day)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "zst"))
        .collect();
    assert_eq!(zst.len(), 1);
    assert_eq!(&fs::read(&zst[0]).unwrap()[..4], &[0x28, 0xb5, 0x2f, 0xfd]);
    let name = zst[0].file_name().unwrap().to_str().unwrap();
    assert!(!day.join(name.trim_end_matches(".zst")).exists());
    assert!(
        root.join("own/codex-home/sessions/2026/12/01")
            .join(name.trim_end_matches(".zst"))
            .exists()
    );
}

#[test]
fn a_compressed_first_page_does_not_stop_replies_on_later_pages() {
    let (h, page) = home();
    make_db(&h.home, &page);
    let w1 = reply(&at(&page, Some(4)), "page two", &opts()).unwrap();
    // Codex's compression worker replaced page 1 by page 1.zst (content irrelevant here).
    let zst = page.with_extension("jsonl.zst");
    fs::rename(&page, &zst).unwrap();
    let w2 = reply(&at(&w1.path, None), "leaf of page two", &opts()).unwrap();
    assert_eq!(w2.kind, WrittenKind::Appended { db: Updated::Times });
    let l = parse(&w2.bytes);
    assert_eq!(
        l[2]["payload"]["model"], "m",
        "settings from page two's own lines"
    );
    let w3 = reply(
        &at(&w1.path, Some(w1.ordinal)),
        "page three",
        &Options {
            now_ms: NOW + 1000,
            ..opts()
        },
    )
    .unwrap();
    let m = &parse(&w3.bytes)[0]["payload"];
    assert_eq!(m["id"], T);
    assert_eq!(m["cwd"], "/p", "session_meta taken from page two");
    assert!(m["history_base"].is_object());
}
