//! The opencode prefilter never drops a message whose rendering matches.
//!
//! Random opencode sessions are written into a database with opencode 1.18.33's schema
//! (taken from the sample fixture's database): messages of each role, with an error,
//! as a compaction summary, or damaged (data that is no JSON object); parts of every
//! type the renderer knows (text, synthetic and ignored text, reasoning, images and
//! other files as data URLs, tool calls completed with an exit code, an image
//! attachment or a pruned output, failed, pending, compactions, patches, subtasks,
//! agents, retries, step parts), parts of unknown types and damaged parts; a subagent's
//! session under a `task` call; a pending `/undo` (`session.revert`) that hides the
//! last messages; messages opencode deleted, kept only in the `event` table. Their
//! strings are made of what JSON escapes, what the renderer adds, non-ASCII text and
//! terminal escapes, and the rows' data is written half the time as opencode's
//! `JSON.stringify` writes it, else with random encodings (escapes it would not write,
//! upper-case hex, surrogate pairs, spaces between tokens).
//!
//! Every message is rendered as the mount renders it; patterns are cut from its KIND
//! files and images (fixed strings, extended regexes with a wildcard, `-i`, `-w`), and
//! for each, `sessionfs grep -c` or `-n` over `DB/SESSION` with the prefilter must
//! print what it prints with every message rendered. A prefilter whose triggers need
//! opencode's own spacing (`"synthetic":true`) fails here within the default number of
//! cases.
//!
//! The number of cases is `PROPTEST_CASES` (256 by default, so that the run of every
//! test stays short; `PROPTEST_CASES=100000` for the full run). Each case writes a new
//! database, and sessionfs keeps one descriptor of every database file it has seen for
//! the life of the process (`opencode::db::held`: closing one would drop the SQLite
//! locks of the process's connections), so a run needs a descriptor per case: it
//! raises its limit of open files to the hard limit, and refuses at once a number of
//! cases that limit cannot hold ([`cases`]) rather than fail midway on `EMFILE`.

#[path = "common/props.rs"]
mod props;

use props::{Cut, Style, base64};
use proptest::prelude::*;
use rusqlite::Connection;
use sessionfs::model::Session;
use sessionfs::model::content::entry_content;
use sessionfs::model::opencode::search::OPENCODE;
use sessionfs::search::grepfile::Mode;
use sessionfs::search::pattern::{Pattern, Syntax};
use sessionfs::search::rules;
use std::path::{Path, PathBuf};

/// Pieces strings are made of.
const PIECES: &[&str] = &[
    "a",
    "b",
    "e",
    "E",
    "x",
    "K",
    "s",
    "of",
    "bash",
    "task",
    "error",
    "[tool call ",
    "[tool result ",
    " (",
    ")]",
    "): ",
    "[image ",
    " bytes → image-",
    ".png",
    "[reasoning]",
    "[synthetic]",
    "[compaction: ",
    "automatic",
    "[patch: ",
    "[subagent session ",
    "[deleted by opencode",
    "[hidden by /undo",
    "(no content)",
    "data:",
    "\": ",
    "\\u0041",
    "\\/",
    "u00e9",
    " ",
    "  ",
    "\"",
    "\\",
    "/",
    "\n",
    "\t",
    "\r",
    "\u{0}",
    "\u{1b}[1m",
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    ": ",
    "1",
    "10",
    "0.5",
    "1e3",
    "-",
    ".",
    "é",
    "É",
    "ß",
    "ſ",
    "\u{212A}",
    "😀",
    "日本",
    "→",
    "\u{2028}",
    "\u{FFFD}",
];

fn text() -> impl Strategy<Value = String> {
    props::text(PIECES, 10)
}

/// The random parts of one part.
type PartSpec = props::Spec;

/// How many kinds of part [`part`] writes.
const PART_KINDS: u8 = 22;

fn part_spec() -> impl Strategy<Value = PartSpec> {
    props::spec(0u8..PART_KINDS, text, -2000..200000)
}

/// The random parts of one message.
#[derive(Debug, Clone)]
struct MsgSpec {
    /// 0 user, 1 assistant, 2 assistant with an error, 3 a compaction summary, 4
    /// damaged (data that is not JSON), 5 of an unknown role.
    kind: u8,
    a: String,
    b: String,
    parts: Vec<PartSpec>,
}

fn msg_spec() -> impl Strategy<Value = MsgSpec> {
    (
        prop::sample::select(vec![0u8, 0, 1, 1, 1, 2, 3, 4, 5]),
        text(),
        text(),
        prop::collection::vec(part_spec(), 0..4),
    )
        .prop_map(|(kind, a, b, parts)| MsgSpec { kind, a, b, parts })
}

/// A whole case: the session's messages, a subagent's, how many of the last
/// messages a pending `/undo` hides, how many opencode deleted (from the event log).
#[derive(Debug, Clone)]
struct Case {
    msgs: Vec<MsgSpec>,
    sub: Vec<MsgSpec>,
    sub_title: String,
    hidden: usize,
    deleted: Vec<MsgSpec>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(msg_spec(), 1..6),
        prop::collection::vec(msg_spec(), 0..3),
        text(),
        0usize..3,
        prop::collection::vec(msg_spec(), 0..3),
    )
        .prop_map(|(msgs, sub, sub_title, hidden, deleted)| Case {
            msgs,
            sub,
            sub_title,
            hidden,
            deleted,
        })
}

const SID: &str = "ses_00000000000000000000000001";
const SUB: &str = "ses_00000000000000000000000002";
const CREATED: i64 = 1_796_455_470_780;

fn msg_id(session: u8, k: usize) -> String {
    format!("msg_{session}{k:025}")
}

/// A data URL of `mime` holding `b`.
fn data_url(mime: &str, b: &str) -> String {
    format!("data:{mime};base64,{}", base64(b.as_bytes()))
}

/// A part's data, as opencode writes it (without the ids, which are columns).
fn part(x: &PartSpec, st: &Style, sub: Option<&str>) -> String {
    let s = |v: &str| st.string(v);
    let (a, b, n, flag) = (x.a.as_str(), x.b.as_str(), x.n, x.flag);
    let input = st.object(&[
        ("command", s(b)),
        ("n", st.number(n)),
        ("list", st.array(vec![s(a)])),
    ]);
    let time = st.object(&[
        ("start", st.number(CREATED)),
        ("end", st.number(CREATED + 5)),
    ]);
    match x.kind {
        0 | 1 => st.object(&[("type", s("text")), ("text", s(a))]),
        2 => st.object(&[
            ("type", s("text")),
            ("text", s(a)),
            ("synthetic", if flag { "true".into() } else { "1".into() }),
        ]),
        3 => st.object(&[
            ("type", s("text")),
            ("text", s(a)),
            ("ignored", "true".into()),
        ]),
        4 => st.object(&[("type", s("reasoning")), ("text", s(a)), ("time", time)]),
        5 => st.object(&[
            ("type", s("file")),
            ("mime", s(if flag { "image/png" } else { "image/webp" })),
            ("filename", s(a)),
            (
                "url",
                s(&data_url(
                    if flag {
                        "image/png"
                    } else {
                        "application/octet-stream"
                    },
                    b,
                )),
            ),
        ]),
        6 => st.object(&[
            ("type", s("file")),
            ("mime", s("text/plain")),
            ("url", s(&data_url("text/plain", b))),
        ]),
        7 => st.object(&[
            ("type", s("file")),
            ("mime", s("image/png")),
            ("filename", s(a)),
            ("url", s(&format!("data:image/png,{b}"))),
        ]),
        8 | 9 => {
            let mut state = vec![
                ("status", s("completed")),
                ("input", input),
                ("output", s(b)),
                ("title", s(a)),
                (
                    "metadata",
                    st.object(&[("exit", st.number(n % 300)), ("output", s(a))]),
                ),
            ];
            if flag {
                state.push((
                    "time",
                    st.object(&[
                        ("start", st.number(CREATED)),
                        ("end", st.number(CREATED + 1)),
                        ("compacted", st.number(CREATED + 2)),
                    ]),
                ));
            } else {
                state.push((
                    "attachments",
                    st.array(vec![st.object(&[
                        ("type", s("file")),
                        ("mime", s("image/jpeg")),
                        ("filename", s(b)),
                        ("url", s(&data_url("image/jpeg", a))),
                    ])]),
                ));
            }
            st.object(&[
                ("type", s("tool")),
                ("callID", s(&format!("call_{a}"))),
                ("tool", s(a)),
                ("state", st.object(&state)),
            ])
        }
        10 => st.object(&[
            ("type", s("tool")),
            ("callID", s("call_2")),
            ("tool", s("bash")),
            (
                "state",
                st.object(&[
                    ("status", s("error")),
                    ("input", input),
                    ("error", s(b)),
                    ("time", time),
                ]),
            ),
        ]),
        11 => st.object(&[
            ("type", s("tool")),
            ("callID", s("call_3")),
            ("tool", s(a)),
            (
                "state",
                st.object(&[
                    ("status", s(if flag { "pending" } else { "" })),
                    ("input", input),
                ]),
            ),
        ]),
        12 => st.object(&[("type", s("tool")), ("callID", s("call_4")), ("tool", s(b))]),
        13 => st.object(&[
            ("type", s("compaction")),
            ("auto", flag.to_string()),
            ("overflow", (!flag).to_string()),
        ]),
        14 => st.object(&[
            ("type", s("patch")),
            ("hash", s("0123abcd")),
            ("files", st.array(vec![s(a), s(b), st.number(n)])),
        ]),
        15 => st.object(&[("type", s("step-start")), ("snapshot", s(a))]),
        16 => st.object(&[
            ("type", s("step-finish")),
            ("reason", s(a)),
            ("cost", st.number(n)),
            (
                "tokens",
                st.object(&[("input", st.number(n)), ("output", st.number(1))]),
            ),
        ]),
        17 => st.object(&[
            ("type", s("subtask")),
            ("prompt", s(a)),
            ("description", s(b)),
            ("agent", s("general")),
        ]),
        18 => st.object(&[("type", s("agent")), ("name", s(a))]),
        19 => st.object(&[
            ("type", s("retry")),
            ("attempt", st.number(n)),
            (
                "error",
                st.object(&[("name", s(a)), ("data", st.object(&[("message", s(b))]))]),
            ),
        ]),
        20 => st.object(&[
            ("type", s(&format!("x{a}"))),
            ("value", s(b)),
            ("n", st.number(n)),
        ]),
        // A damaged part: its data is not a JSON object.
        _ => {
            if flag {
                format!("not json {a}")
            } else {
                st.array(vec![s(b)])
            }
        }
    }
    .pipe(|p| match sub {
        // The task call that ran the subagent.
        Some(sub) if x.kind == 0 => st.object(&[
            ("type", s("tool")),
            ("callID", s("call_task")),
            ("tool", s("task")),
            (
                "state",
                st.object(&[
                    ("status", s("completed")),
                    (
                        "input",
                        st.object(&[("description", s(a)), ("prompt", s(b))]),
                    ),
                    ("output", s(&format!("<task id=\"{sub}\">{b}</task>"))),
                    ("metadata", st.object(&[("sessionId", s(sub))])),
                    ("title", s(a)),
                ]),
            ),
        ]),
        _ => p,
    })
}

trait Pipe: Sized {
    fn pipe<T>(self, f: impl FnOnce(Self) -> T) -> T {
        f(self)
    }
}
impl<T> Pipe for T {}

/// A message's data, as opencode writes it.
fn message(x: &MsgSpec, st: &Style, parent: Option<&str>, created: i64) -> String {
    let s = |v: &str| st.string(v);
    let time = st.object(&[("created", st.number(created))]);
    let model = st.object(&[("providerID", s("fake")), ("modelID", s("fake-model"))]);
    let assistant = |extra: Vec<(&'static str, String)>| {
        let mut f = vec![
            ("role", s("assistant")),
            (
                "time",
                st.object(&[
                    ("created", st.number(created)),
                    ("completed", st.number(created + 1)),
                ]),
            ),
            ("parentID", s(parent.unwrap_or(""))),
            ("modelID", s("fake-model")),
            ("providerID", s("fake")),
            ("mode", s("build")),
            ("agent", s("build")),
            (
                "path",
                st.object(&[
                    ("cwd", s("/home/dev/src/qa")),
                    ("root", s("/home/dev/src/qa")),
                ]),
            ),
            ("cost", st.number(0)),
            (
                "tokens",
                st.object(&[
                    ("input", st.number(10)),
                    ("output", st.number(2)),
                    ("reasoning", st.number(0)),
                    (
                        "cache",
                        st.object(&[("read", st.number(0)), ("write", st.number(0))]),
                    ),
                ]),
            ),
            ("finish", s("stop")),
        ];
        f.extend(extra);
        st.object(&f)
    };
    match x.kind {
        0 => st.object(&[
            ("role", s("user")),
            ("time", time),
            ("agent", s("build")),
            ("model", model),
        ]),
        1 => assistant(vec![]),
        2 => assistant(vec![(
            "error",
            st.object(&[
                ("name", s(&x.a)),
                ("data", st.object(&[("message", s(&x.b))])),
            ]),
        )]),
        3 => assistant(vec![("summary", "true".into())]),
        4 => format!("{{\"role\":\"user\" {}", x.a),
        _ => st.object(&[("role", s(&x.a)), ("time", time)]),
    }
}

/// The rows of `msgs` in session `sid`: `(id, created, data, parts)`.
type Rows = Vec<(String, i64, String, Vec<(String, String)>)>;

fn rows(msgs: &[MsgSpec], st: &Style, session: u8, first: usize, sub: Option<&str>) -> Rows {
    let mut out: Rows = Vec::new();
    let mut parent: Option<String> = None;
    for (k, x) in msgs.iter().enumerate() {
        let k = first + k;
        let id = msg_id(session, k);
        let created = CREATED + 1000 * k as i64;
        let data = message(x, st, parent.as_deref(), created);
        let parts = x
            .parts
            .iter()
            .enumerate()
            .map(|(j, p)| {
                let sub = (k == first && j == 0).then_some(sub).flatten();
                (format!("prt_{session}{k:012}{j:012}"), part(p, st, sub))
            })
            .collect();
        if x.kind == 0 {
            parent = Some(id.clone());
        }
        out.push((id, created, data, parts));
    }
    out
}

/// The schema of opencode 1.18.33's database, from the sample fixture's.
fn schema() -> Vec<String> {
    let c = Connection::open(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/opencode/samples/home/.local/share/opencode/opencode.db"),
    )
    .unwrap();
    let mut q = c
        .prepare("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'")
        .unwrap();
    q.query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Writes the case's database in `dir`; returns its path.
fn write_db(dir: &Path, c: &Case, st: &Style) -> PathBuf {
    thread_local! {
        static SCHEMA: Vec<String> = schema();
    }
    let db = dir.join("opencode.db");
    let mut conn = Connection::open(&db).unwrap();
    conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;")
        .unwrap();
    let conn = conn.transaction().unwrap();
    SCHEMA.with(|sql| {
        for s in sql {
            conn.execute_batch(s).unwrap();
        }
    });
    conn.execute(
        "INSERT INTO project (id, worktree, vcs, time_created, time_updated, sandboxes) \
         VALUES ('p1', '/home/dev/src/qa', 'git', ?1, ?1, '[]')",
        [CREATED],
    )
    .unwrap();
    let sub = (!c.sub.is_empty() && !c.msgs[0].parts.is_empty()).then_some(SUB);
    let main = rows(&c.msgs, st, 1, 0, sub);
    let deleted = rows(&c.deleted, st, 1, c.msgs.len(), None);
    let subs = rows(&c.sub, st, 2, 0, None);
    let revert = (c.hidden > 0 && c.hidden < main.len())
        .then(|| format!("{{\"messageID\":\"{}\"}}", main[main.len() - c.hidden].0));
    let session = |id: &str, parent: Option<&str>, title: &str, revert: Option<&str>| {
        conn.execute(
            "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, \
             revert, time_created, time_updated) \
             VALUES (?1, 'p1', ?2, 'happy-planet', '/home/dev/src/qa', ?3, '1.18.33', ?4, ?5, ?6)",
            rusqlite::params![id, parent, title, revert, CREATED, CREATED + 100_000],
        )
        .unwrap();
    };
    session(SID, None, "a session", revert.as_deref());
    if let Some(sub) = sub {
        session(sub, Some(SID), &c.sub_title, None);
    }
    let insert = |sid: &str, rows: &Rows| {
        for (id, created, data, parts) in rows {
            conn.execute(
                "INSERT INTO message (id, session_id, time_created, time_updated, data) \
                 VALUES (?1, ?2, ?3, ?3, ?4)",
                rusqlite::params![id, sid, created, data],
            )
            .unwrap();
            for (pid, p) in parts {
                conn.execute(
                    "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) \
                     VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                    rusqlite::params![pid, id, sid, created, p],
                )
                .unwrap();
            }
        }
    };
    insert(SID, &main);
    if sub.is_some() {
        insert(SUB, &subs);
    }
    // The deleted messages: only in the event log, as opencode writes it (an event's
    // data is the object opencode serialized, so only an object's data is logged).
    conn.execute(
        "INSERT INTO event_sequence (aggregate_id, seq) VALUES (?1, 0)",
        [SID],
    )
    .unwrap();
    let mut seq = 0;
    let mut event = |ty: &str, data: String| {
        seq += 1;
        conn.execute(
            "INSERT INTO event (id, aggregate_id, seq, type, data) VALUES (?1, ?2, ?3, ?4, ?5)",
            rusqlite::params![format!("evt_{seq:08}"), SID, seq, ty, data],
        )
        .unwrap();
    };
    let with_ids = |data: &str, ids: &[(&str, &str)]| -> Option<String> {
        let mut v: serde_json::Map<String, serde_json::Value> = serde_json::from_str(data).ok()?;
        for (k, id) in ids {
            v.insert(k.to_string(), serde_json::Value::String(id.to_string()));
        }
        Some(serde_json::Value::Object(v).to_string())
    };
    for (id, _, data, parts) in &deleted {
        let Some(info) = with_ids(data, &[("id", id), ("sessionID", SID)]) else {
            continue;
        };
        event(
            "message.updated.1",
            format!("{{\"sessionID\":\"{SID}\",\"info\":{info}}}"),
        );
        for (pid, p) in parts {
            if let Some(part) = with_ids(p, &[("id", pid), ("sessionID", SID), ("messageID", id)]) {
                event(
                    "message.part.updated.1",
                    format!("{{\"sessionID\":\"{SID}\",\"part\":{part}}}"),
                );
            }
        }
        event(
            "message.removed.1",
            format!("{{\"sessionID\":\"{SID}\",\"messageID\":\"{id}\"}}"),
        );
    }
    conn.commit().unwrap();
    db
}

/// `sessionfs grep PATTERN DB/SESSION` ([`props::grep`]).
fn grep(session: &Path, p: &Pattern, mode: Mode, prefiltered: bool) -> Vec<u8> {
    props::grep(session, &OPENCODE, p, mode, prefiltered)
}

/// One case: the database written, every content file of every message rendered, and
/// for each cut (with `-c` or not) the search with the prefilter printing what it
/// prints with every message rendered.
fn check(c: &Case, st: &Style, cuts: &[(Cut, bool)]) -> Result<(), TestCaseError> {
    let tmp = tempfile::tempdir().unwrap();
    let db = write_db(tmp.path(), c, st);
    let session = db.join(SID);
    prop_assert_eq!(rules::known(&session).map(|r| r.name), Some(OPENCODE.name));
    let s = Session::open(&session).map_err(|e| TestCaseError::fail(format!("{e}")))?;
    let mut texts: Vec<Vec<u8>> = Vec::new();
    let mut kinds = Vec::new();
    for i in 0..s.entries().len() as u32 {
        if !s.entry(i).is_node() {
            continue;
        }
        kinds.push(s.kind_name(i).to_string());
        let content = entry_content(&s, i).unwrap();
        texts.push(content.text);
        texts.extend(content.images.into_iter().map(|im| im.data));
    }
    let all: Vec<&[u8]> = texts.iter().map(Vec::as_slice).collect();
    let context = || {
        let texts: Vec<_> = texts.iter().map(|t| String::from_utf8_lossy(t)).collect();
        format!("messages: {kinds:?}\ntexts:\n{}", texts.join("\n----\n"))
    };
    for (cut, counted) in cuts {
        props::check_search(
            &session,
            &OPENCODE,
            &all,
            cut,
            *counted,
            "a message",
            &context,
        )?;
    }
    Ok(())
}

/// The number of cases ([`props::cases`]), once the limit of open files is raised to
/// hold a descriptor per case's database (see the module docs), with room for the
/// descriptors a case uses while it runs.
fn cases() -> u32 {
    const ROOM: u64 = 512;
    let n = props::cases(256);
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit with a valid struct, before any case runs.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut r), 0);
        if r.rlim_cur < r.rlim_max {
            r.rlim_cur = r.rlim_max;
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &r), 0);
        }
    }
    assert!(
        u64::from(n) + ROOM <= r.rlim_cur,
        "PROPTEST_CASES={n}: every case's database keeps a descriptor open for the life \
         of the test process (opencode::db::held), and the limit of open files is {} \
         (hard limit): raise it (`ulimit -Hn`, as root) or run at most {} cases per run",
        r.rlim_cur,
        r.rlim_cur.saturating_sub(ROOM)
    );
    n
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn the_opencode_prefilter_keeps_every_message_whose_rendering_matches(
        c in case(),
        st in props::plain_or_style(),
        cuts in prop::collection::vec((props::cut(), any::<bool>()), 1..5),
    ) {
        check(&c, &st, &cuts)?;
    }
}

/// The comparison sees a dropped message: a marker the renderer writes for a row's
/// flag is found only because its trigger holds on the line, however the row spaces it.
#[test]
fn the_check_can_fail() {
    let spec = |kind: u8, a: &str| PartSpec {
        kind,
        a: a.into(),
        b: String::new(),
        n: 1,
        flag: true,
    };
    let c = Case {
        msgs: vec![MsgSpec {
            kind: 0,
            a: String::new(),
            b: String::new(),
            parts: vec![spec(2, "made by opencode")],
        }],
        sub: vec![],
        sub_title: String::new(),
        hidden: 0,
        deleted: vec![],
    };
    let spaced = Style {
        spaced: true,
        ..props::plain()
    };
    let tmp = tempfile::tempdir().unwrap();
    let session = write_db(tmp.path(), &c, &spaced).join(SID);
    let p = Pattern::new("[synthetic]", Syntax::Fixed, false, false).unwrap();
    let all = grep(&session, &p, Mode::Lines, false);
    assert!(
        String::from_utf8_lossy(&all).contains(":1:[synthetic]\n"),
        "{}",
        String::from_utf8_lossy(&all)
    );
    assert_eq!(all, grep(&session, &p, Mode::Lines, true));
    // The line holds `"synthetic": true`: a trigger spelled `"synthetic":true` would
    // not hold there, and the message would be dropped.
    let line = Session::open(&session).unwrap();
    let mut raw = Vec::new();
    line.for_each_entry_bytes(&[0], |_, b| raw.extend_from_slice(b));
    assert!(
        String::from_utf8_lossy(&raw).contains("\"synthetic\": true"),
        "{}",
        String::from_utf8_lossy(&raw)
    );
    assert!(!sessionfs::model::core::grep::Trigger::Matches(r#""synthetic":true"#).holds(&raw));
}
