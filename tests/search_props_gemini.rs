//! The Gemini CLI prefilter never drops a line whose entries' rendering matches.
//!
//! Random session files are built line by line, as the CLI writes them and as it
//! might: prompts (text parts, a string content, an `@file` image or other
//! `inlineData`, file data, code and its result, video metadata), tool rounds' user
//! records (outputs, errors, other responses), replies written live (a string
//! content, thoughts, tool calls with nested arguments, statuses and subagents, their
//! results) and as a resume rewrites them (thought and `functionCall` parts),
//! notices (`info`, `error`, `warning`), records of a type the CLI does not know, a
//! compression's summary, slash commands (no entries), `$set.messages` lines holding
//! several records (the only place some entries' records are), rewinds, metadata
//! changes and broken lines. A record's id is sometimes one written before (the
//! record replaces it). Strings are made of what JSON escapes, what the renderer adds
//! and non-ASCII text, written with random encodings.
//!
//! The file is indexed as the mount indexes it (`Session::open`), every entry rendered
//! as the mount renders it (its KIND file and images); patterns are cut from that
//! (fixed strings, extended regexes with a wildcard, `-i`, `-w`), and the line that
//! holds each entry whose content files match must be among the lines the prefilter's
//! raw scan selects.
//!
//! The number of cases is `PROPTEST_CASES` (256 by default; `PROPTEST_CASES=100000`
//! for the full run).

#[path = "common/props.rs"]
mod props;

use props::{Cut, Entry, Style, base64, cut, scanned};
use proptest::prelude::*;
use sessionfs::model::core::content::entry_content;
use sessionfs::model::gemini::search::GEMINI;
use sessionfs::model::session::Session;
use sessionfs::search::pattern::{Pattern, Syntax};
use sessionfs::search::prefilter::Prefilter;

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
    "run_shell_command",
    "error",
    "[tool call ",
    "[tool result ",
    " (",
    ")]",
    "[thinking]",
    "**",
    "[image ",
    "image-",
    ".png",
    "jpg",
    "→",
    "<session_context>",
    "<state_snapshot>",
    "/",
    "?",
    "\\u0041",
    "u00e9",
    " ",
    "  ",
    "\"",
    "\\",
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
    "\": ",
    "1",
    "10",
    "0.5",
    "-",
    ".",
    "é",
    "É",
    "ß",
    "\u{212A}",
    "😀",
    "日本",
    "—",
    "\u{2028}",
    "\u{FFFD}",
];

fn text() -> impl Strategy<Value = String> {
    props::text(PIECES, 10)
}

/// The random parts of one line.
#[derive(Debug, Clone)]
struct Spec {
    kind: u8,
    a: String,
    b: String,
    n: i64,
    flag: bool,
    /// Which earlier id a record takes instead of a new one, if any.
    reuse: Option<usize>,
    /// Records of a `$set.messages` line.
    inner: Vec<(u8, bool)>,
}

/// How many kinds of line [`line`] writes.
const KINDS: u8 = 20;
/// How many kinds of record [`record`] writes.
const RECORDS: u8 = 14;

fn spec() -> impl Strategy<Value = Spec> {
    (
        0u8..KINDS,
        text(),
        text(),
        -2000i64..200000,
        any::<bool>(),
        prop::option::weighted(0.2, 0usize..20),
        prop::collection::vec((0u8..RECORDS, any::<bool>()), 1..4),
    )
        .prop_map(|(kind, a, b, n, flag, reuse, inner)| Spec {
            kind,
            a,
            b,
            n,
            flag,
            reuse,
            inner,
        })
}

/// A record of kind `kind` with id `id`.
fn record(kind: u8, id: &str, x: &Spec, flag: bool, st: &Style) -> String {
    let s = |v: &str| st.string(v);
    let (a, b, n) = (x.a.as_str(), x.b.as_str(), x.n);
    let head = |ty: &str| {
        vec![
            ("id", s(id)),
            ("timestamp", s("2026-12-05T07:36:24.000Z")),
            ("type", s(ty)),
        ]
    };
    let text_part = |t: &str| st.object(&[("text", s(t))]);
    let fr = |name: &str, response: String| {
        st.object(&[(
            "functionResponse",
            st.object(&[
                ("id", s(&format!("{name}__call_{b}"))),
                ("name", s(name)),
                ("response", response),
            ]),
        )])
    };
    let mut f = match kind {
        0 => {
            let mut f = head("user");
            f.push(("content", st.array(vec![text_part(a), text_part(b)])));
            f
        }
        1 => {
            let mut f = head("user");
            f.push(("content", s(a)));
            f
        }
        2 => {
            let mut f = head("user");
            let response = if flag {
                st.object(&[("output", s(a))])
            } else {
                st.object(&[("error", s(a))])
            };
            f.push((
                "content",
                st.array(vec![
                    fr("run_shell_command", response),
                    fr(b, st.object(&[("output", s(b)), ("n", st.number(n))])),
                ]),
            ));
            f
        }
        3 => {
            let mut f = head("user");
            let mime = if flag { "image/png" } else { "application/pdf" };
            f.push((
                "content",
                st.array(vec![
                    text_part(a),
                    st.object(&[(
                        "inlineData",
                        st.object(&[("mimeType", s(mime)), ("data", s(&base64(b.as_bytes())))]),
                    )]),
                    text_part("\n--- End of content ---"),
                ]),
            ));
            f
        }
        4 => {
            let mut f = head("user");
            f.push((
                "content",
                st.array(vec![
                    st.object(&[(
                        "fileData",
                        st.object(&[("fileUri", s(a)), ("mimeType", s(b))]),
                    )]),
                    st.object(&[(
                        "executableCode",
                        st.object(&[("language", s("PYTHON")), ("code", s(a))]),
                    )]),
                    st.object(&[(
                        "codeExecutionResult",
                        st.object(&[("outcome", s("OUTCOME_OK")), ("output", s(b))]),
                    )]),
                    st.object(&[("videoMetadata", st.object(&[("fps", st.number(n))]))]),
                    st.number(n),
                    "null".to_string(),
                ]),
            ));
            f
        }
        5 => {
            let mut f = head("gemini");
            f.push(("content", s(a)));
            f.push((
                "thoughts",
                st.array(vec![st.object(&[
                    ("subject", s(if flag { b } else { "" })),
                    ("description", s(a)),
                    ("timestamp", s("t")),
                ])]),
            ));
            f.push((
                "tokens",
                st.object(&[
                    ("input", st.number(n)),
                    ("output", st.number(2)),
                    ("total", st.number(n)),
                ]),
            ));
            f.push(("model", s("gemini-3.8-flash")));
            f
        }
        6 => {
            let mut f = head("gemini");
            f.push(("content", s(if flag { "" } else { b })));
            f.push(("thoughts", st.array(vec![])));
            let mut call = vec![
                ("id", s(&format!("{a}__call_1"))),
                ("name", s(a)),
                (
                    "args",
                    st.object(&[
                        ("command", s(b)),
                        ("n", st.number(n)),
                        (
                            "list",
                            st.array(vec![s(a), st.object(&[("k", s(b))]), st.number(n)]),
                        ),
                        ("empty", st.object(&[])),
                    ]),
                ),
                (
                    "result",
                    st.array(vec![fr(a, st.object(&[("output", s(b))]))]),
                ),
                ("status", s(if flag { "success" } else { "error" })),
            ];
            if flag {
                call.push(("agentId", s(b)));
            }
            f.push(("toolCalls", st.array(vec![st.object(&call)])));
            f
        }
        7 => {
            let mut f = head("gemini");
            f.push((
                "content",
                st.array(vec![
                    st.object(&[("text", s(a)), ("thought", "true".into())]),
                    text_part(b),
                    st.object(&[(
                        "functionCall",
                        st.object(&[
                            ("id", s("x__1")),
                            ("name", s(b)),
                            ("args", st.object(&[("p", s(a))])),
                        ]),
                    )]),
                ]),
            ));
            f
        }
        8 => {
            let ty = ["info", "error", "warning"][(n.unsigned_abs() % 3) as usize];
            let mut f = head(ty);
            f.push(("content", s(if flag { a } else { "" })));
            f
        }
        9 => {
            let mut f = head("x_future_type");
            f.push(("content", s(a)));
            f.push(("n", st.number(n)));
            f
        }
        10 => {
            let mut f = head("user");
            f.push((
                "content",
                st.array(vec![text_part(&format!(
                    "<state_snapshot>\n{a}\n</state_snapshot>"
                ))]),
            ));
            f
        }
        11 => {
            let mut f = head("user");
            f.push(("content", st.array(vec![text_part(&format!("/{a}"))])));
            f
        }
        12 => {
            let mut f = head("gemini");
            f.push(("content", "null".to_string()));
            f
        }
        _ => {
            let mut f = vec![("id", s(id)), ("type", st.number(n))];
            f.push(("content", s(a)));
            f
        }
    };
    if kind == 0 && flag {
        f.push(("displayContent", st.array(vec![text_part(b)])));
    }
    st.object(&f)
}

/// Writes one line of kind `x.kind`. `ids` are the record ids written so far.
fn line(x: &Spec, ids: &mut Vec<String>, st: &Style) -> String {
    let s = |v: &str| st.string(v);
    let next_id = |reuse: Option<usize>, ids: &mut Vec<String>| match reuse {
        Some(k) if !ids.is_empty() => ids[k % ids.len()].clone(),
        _ => {
            let id = format!("r{}", ids.len());
            ids.push(id.clone());
            id
        }
    };
    match x.kind {
        k if k < RECORDS => {
            let id = next_id(x.reuse, ids);
            record(k, &id, x, x.flag, st)
        }
        14 | 15 => {
            let recs: Vec<String> = x
                .inner
                .iter()
                .enumerate()
                .map(|(j, &(k, fl))| {
                    let reuse = if fl { x.reuse.map(|r| r + j) } else { None };
                    let id = next_id(reuse, ids);
                    record(k, &id, x, fl, st)
                })
                .collect();
            let mut items = recs;
            if x.kind == 15 {
                items.push(s(&x.a));
                items.push(st.number(x.n));
            }
            st.object(&[(
                "$set",
                st.object(&[("messages", st.array(items)), ("lastUpdated", s("t"))]),
            )])
        }
        16 => {
            let to = match x.reuse {
                Some(k) if !ids.is_empty() => ids[k % ids.len()].clone(),
                _ => x.a.clone(),
            };
            st.object(&[("$rewindTo", s(&to))])
        }
        17 => st.object(&[(
            "$set",
            st.object(&[("lastUpdated", s(&x.a)), ("summary", s(&x.b))]),
        )]),
        18 => st.object(&[
            ("sessionId", s("sid")),
            ("projectHash", s("h")),
            ("startTime", s("2026-12-05T07:36:23.934Z")),
            ("kind", s("main")),
        ]),
        _ => format!("{{not json {}", x.a),
    }
}

/// A whole file: the metadata line, then the lines of `specs`.
fn file_bytes(specs: &[Spec], st: &Style) -> Vec<u8> {
    let mut out = String::from(
        r#"{"sessionId":"0a0b0c0d-0000-4000-8000-000000000001","projectHash":"h","startTime":"2026-12-05T07:36:23.934Z","lastUpdated":"2026-12-05T07:36:23.934Z","kind":"main"}"#,
    );
    out.push('\n');
    let mut ids = Vec::new();
    for x in specs {
        out.push_str(&line(x, &mut ids, st));
        out.push('\n');
    }
    out.into_bytes()
}

/// Every entry of the file `bytes`: the start of the line its record is in, and its
/// content files, as the mount serves them.
fn entries(bytes: &[u8]) -> Vec<Entry> {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("session-2026-12-05T07-36-0a0b0c0d.jsonl");
    std::fs::write(&p, bytes).unwrap();
    let s = Session::open(&p).unwrap();
    let mut out = Vec::new();
    for i in 0..s.entries().len() as u32 {
        let e = s.entry(i);
        if !e.is_node() {
            continue;
        }
        let start = bytes[..e.offset as usize]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |k| k + 1) as u64;
        let c = entry_content(&s, i).unwrap();
        let mut files = vec![c.text];
        files.extend(c.images.into_iter().map(|im| im.data));
        out.push((start, files));
    }
    out
}

/// The property ([`props::check_entries`]) for the file `specs` make.
fn check(specs: &[Spec], st: &Style, cuts: &[Cut]) -> Result<(), TestCaseError> {
    let bytes = file_bytes(specs, st);
    props::detected(&bytes, &GEMINI)?;
    props::check_entries(&bytes, &GEMINI, &entries(&bytes), cuts)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: props::cases(256), ..ProptestConfig::default() })]

    #[test]
    fn the_gemini_prefilter_keeps_every_line_whose_entries_match(
        specs in prop::collection::vec(spec(), 1..10),
        st in props::spaced_or_style(),
        cuts in prop::collection::vec(cut(), 1..5),
    ) {
        check(&specs, &st, &cuts)?;
    }
}

/// The check sees a dropped line: the `**` a live reply's thought subject is shown
/// with is not in its line, and without the decoration of thought lines the scan would
/// not select it.
#[test]
fn the_check_can_fail() {
    let line = r#"{"id":"g1","timestamp":"2026-12-05T07:36:24.000Z","type":"gemini","content":"ok","thoughts":[{"subject":"Plan","description":"look first","timestamp":"t"}]}"#;
    let bytes = format!(
        "{}\n{line}\n",
        r#"{"sessionId":"0a0b0c0d-0000-4000-8000-000000000001","projectHash":"h","kind":"main"}"#
    )
    .into_bytes();
    let e = entries(&bytes);
    assert!(String::from_utf8_lossy(&e[0].1[0]).contains("**Plan** look"));
    let p = Pattern::new("**Plan** look", Syntax::Fixed, false, false).unwrap();
    let pf = Prefilter::new(&p.required, &GEMINI, false, false);
    assert!(scanned(&bytes, &pf).contains(&e[0].0));
    let without = Prefilter::new(&p.required, &sessionfs::model::pi::search::PI, false, false);
    assert!(!scanned(&bytes, &without).contains(&e[0].0));
}
