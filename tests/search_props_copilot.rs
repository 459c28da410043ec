//! The Copilot CLI prefilter never drops a line whose rendering matches.
//!
//! Random `events.jsonl` files are built line by line: prompts (plain, with a
//! non-image attachment, with an image whose bytes are in a `session.binary_asset`
//! line), replies (text, reasoning, calls with nested arguments, arguments as a string
//! or missing, nothing at all), tool results and errors (with the CLI's details),
//! compactions, interrupts, API errors, warnings, notices, a subagent's end (completed
//! or failed), events of other types shown as JSON, and the lines that are no entries
//! (a recorded system prompt, broken lines). Their strings are made of what JSON
//! escapes, what the renderer adds, non-ASCII text, and are written with random
//! encodings (escapes `JSON.stringify` would not write, upper-case hex, surrogate
//! pairs, spaces between tokens, numbers written otherwise).
//!
//! Every entry is rendered as the mount renders it
//! (`model::copilot::render::entry_text`: its KIND file and its images); patterns are
//! cut from the rendered text and the images (fixed strings, extended regexes with a
//! wildcard, `-i`, `-w`), and every line whose content files match must be among the
//! lines the prefilter's raw scan selects.
//!
//! The number of cases is `PROPTEST_CASES` (256 by default, so that the run of every
//! test stays short; `PROPTEST_CASES=100000` for the full run).

#[path = "common/props.rs"]
mod props;

use props::{Cut, Entry, Spec, Style, base64, cut, scanned};
use proptest::prelude::*;
use serde_json::Value;
use sessionfs::model::copilot::events::{Line, classify};
use sessionfs::model::copilot::render;
use sessionfs::model::copilot::search::COPILOT;
use sessionfs::search::prefilter::Prefilter;
use std::collections::HashMap;

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
    "view",
    "[result (",
    "[error (",
    ")]",
    "): ",
    "[call ",
    " (",
    "[details]",
    "[reasoning]",
    "(no content)",
    "[compaction",
    ": checkpoint ",
    " messages summarized",
    " -> ",
    " tokens",
    "[interrupted: ",
    " (HTTP ",
    "[warning ",
    "[info ",
    "[subagent ",
    " completed",
    " tool call",
    " ms",
    "[attachment ",
    "[image-",
    ".png",
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
    "\u{1b}",
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
    "1e3",
    "1,234",
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

/// How many kinds of line [`line`] writes.
const KINDS: u8 = 21;

fn spec() -> impl Strategy<Value = Spec> {
    props::spec(0u8..KINDS, text, -2000..2_000_000)
}

/// An event line of type `ty` with `data`.
fn event(st: &Style, k: usize, ty: &str, data: String, agent: bool) -> String {
    let mut f = vec![("type", st.string(ty)), ("data", data)];
    if agent {
        f.push(("agentId", st.string("ag-1")));
    }
    f.push(("id", st.string(&format!("00000000-0000-4000-8000-{k:012}"))));
    f.push(("timestamp", st.string("2026-12-05T07:30:42.162Z")));
    f.push(("parentId", "null".to_string()));
    st.object(&f)
}

/// Writes one line of kind `x.kind` (and, for an image, its asset line first), as the
/// CLI writes them (and some it might).
fn line(x: &Spec, k: usize, st: &Style) -> String {
    let s = |v: &str| st.string(v);
    let (a, b, n, flag) = (x.a.as_str(), x.b.as_str(), x.n, x.flag);
    let e = |ty: &str, data: String| event(st, k, ty, data, flag && k.is_multiple_of(3));
    match x.kind {
        0 => e(
            "user.message",
            st.object(&[
                ("content", s(a)),
                (
                    "transformedContent",
                    s(&format!("<current_datetime>x</current_datetime>\n\n{a}")),
                ),
                ("messageId", s(b)),
            ]),
        ),
        1 => {
            let att = if flag {
                st.object(&[
                    ("type", s("file")),
                    ("path", s(b)),
                    ("mimeType", s("text/plain")),
                ])
            } else {
                st.object(&[("type", s(a)), ("n", st.number(n))])
            };
            e(
                "user.message",
                st.object(&[("content", s(a)), ("attachments", st.array(vec![att]))]),
            )
        }
        2 => {
            let asset = format!("sha256:{k}");
            let bytes = format!("\u{89}PNG\r\n{b}");
            let asset_line = event(
                st,
                k + 1000,
                "session.binary_asset",
                st.object(&[
                    ("assetId", s(&asset)),
                    ("type", s("image")),
                    ("mimeType", s(if flag { "image/png" } else { "image/jpeg" })),
                    ("data", s(&base64(bytes.as_bytes()))),
                ]),
                false,
            );
            let att = st.object(&[
                ("type", s("file")),
                ("path", s(b)),
                ("assetId", s(&asset)),
                ("mimeType", s("image/png")),
                ("byteLength", st.number(n)),
            ]);
            format!(
                "{asset_line}\n{}",
                e(
                    "user.message",
                    st.object(&[("content", s(a)), ("attachments", st.array(vec![att]))])
                )
            )
        }
        3 => e(
            "assistant.message",
            st.object(&[
                ("content", s(a)),
                ("reasoningText", s(b)),
                ("toolRequests", st.array(vec![])),
            ]),
        ),
        4 | 5 => {
            let args = if x.kind == 4 {
                st.object(&[
                    ("command", s(a)),
                    ("n", st.number(n)),
                    (
                        "nested",
                        st.array(vec![s(b), st.number(n / 7), "null".into()]),
                    ),
                ])
            } else if flag {
                s(a)
            } else {
                "null".into()
            };
            let mut req = vec![
                ("toolCallId", s(b)),
                ("name", s(if flag { "bash" } else { a })),
                ("arguments", args),
            ];
            req.push(("type", s("function")));
            if flag {
                req.push(("intentionSummary", s(b)));
            }
            e(
                "assistant.message",
                st.object(&[
                    ("content", s(if x.kind == 5 { a } else { "" })),
                    ("toolRequests", st.array(vec![st.object(&req)])),
                ]),
            )
        }
        6 => {
            let mut r = vec![("content", s(a))];
            if flag {
                r.push(("detailedContent", s(&format!("\ndiff --git {b}"))));
            }
            e(
                "tool.execution_complete",
                st.object(&[
                    ("toolCallId", s(b)),
                    ("success", "true".into()),
                    ("result", st.object(&r)),
                ]),
            )
        }
        7 => e(
            "tool.execution_complete",
            st.object(&[
                ("toolCallId", s(a)),
                ("success", "false".into()),
                (
                    "error",
                    st.object(&[
                        ("message", s(b)),
                        ("code", s(if flag { "failure" } else { a })),
                    ]),
                ),
            ]),
        ),
        8 => e(
            "session.compaction_complete",
            st.object(&[
                ("success", "true".into()),
                ("preCompactionMessagesLength", st.number(n.abs() + 3)),
                ("messagesRemoved", st.number(n.abs())),
                ("preCompactionTokens", st.number(n.abs() * 7)),
                ("postCompactionTokens", st.number(n.abs() / 3)),
                ("summaryContent", s(a)),
                ("checkpointNumber", st.number(n.abs() % 9)),
                (
                    "checkpointPath",
                    s(&format!("/h/.copilot/session-state/x/checkpoints/{b}.md")),
                ),
            ]),
        ),
        9 => e("abort", st.object(&[("reason", s(a))])),
        10 => e(
            "session.error",
            st.object(&[
                ("errorType", s(a)),
                ("message", s(b)),
                ("statusCode", st.number(n)),
            ]),
        ),
        11 => e(
            "session.warning",
            st.object(&[("warningType", s(a)), ("message", s(b))]),
        ),
        12 => e(
            "session.info",
            st.object(&[("infoType", s(a)), ("message", s(b))]),
        ),
        13 => e(
            "subagent.completed",
            st.object(&[
                ("toolCallId", s("c")),
                ("agentName", s(b)),
                ("agentDisplayName", s(a)),
                ("totalToolCalls", st.number(n.abs() % 3)),
                ("totalTokens", st.number(n.abs())),
                ("durationMs", st.number(n.abs() * 3)),
            ]),
        ),
        14 => e(
            "subagent.failed",
            st.object(&[
                ("agentName", s(a)),
                ("agentDisplayName", s(b)),
                (
                    "error",
                    if flag {
                        s(a)
                    } else {
                        st.object(&[("message", s(b)), ("n", st.number(n))])
                    },
                ),
            ]),
        ),
        15 => e(
            "system.notification",
            st.object(&[("text", s(a)), ("n", st.number(n))]),
        ),
        16 => e(
            if flag {
                "x.future_event"
            } else {
                "session.truncation"
            },
            st.object(&[("a", s(a)), ("n", st.number(n))]),
        ),
        17 => e(
            "system.message",
            st.object(&[("role", s("system")), ("content", s(a))]),
        ),
        18 => e(
            "assistant.message",
            st.object(&[("content", s("")), ("toolRequests", st.array(vec![]))]),
        ),
        19 => e(
            "session.usage_record",
            st.object(&[(
                "usage",
                st.object(&[("model", s(a)), ("inputTokens", st.number(n))]),
            )]),
        ),
        _ => format!("{{not json {a}"),
    }
}

/// A file: a `session.start`, then the lines.
fn file_bytes(specs: &[Spec], st: &Style) -> Vec<u8> {
    let mut out = String::from(
        r#"{"type":"session.start","data":{"sessionId":"s","version":1,"producer":"copilot-agent","copilotVersion":"1.0.102","context":{"cwd":"/p"}},"id":"00000000-0000-4000-8000-100000000000","timestamp":"2026-12-05T07:30:42.000Z","parentId":null}"#,
    );
    out.push('\n');
    for (k, x) in specs.iter().enumerate() {
        out.push_str(&line(x, k + 1, st));
        out.push('\n');
    }
    out.into_bytes()
}

/// Every entry of `bytes`: its start and its content files, rendered as the mount
/// renders them.
fn entries(bytes: &[u8]) -> Vec<Entry> {
    let mut assets: HashMap<String, (String, String)> = HashMap::new();
    let mut out = Vec::new();
    let mut start = 0u64;
    for raw in bytes.split_inclusive(|&b| b == b'\n') {
        let at = start;
        start += raw.len() as u64;
        let raw = raw.strip_suffix(b"\n").unwrap_or(raw);
        let Ok(v) = sessionfs::model::core::js::parse_line(raw) else {
            continue;
        };
        // JSON that is no object (a bare `1`) is a malformed line to the index: no entry.
        if !v.is_object() {
            continue;
        }
        let ty = v.get("type").and_then(Value::as_str).unwrap_or("");
        if ty == "session.binary_asset" {
            let d = &v["data"];
            assets.insert(
                d["assetId"].as_str().unwrap_or("").to_string(),
                (
                    d["mimeType"].as_str().unwrap_or("").to_string(),
                    d["data"].as_str().unwrap_or("").to_string(),
                ),
            );
        }
        let Line::Entry(ev) = classify(ty) else {
            continue;
        };
        let (text, images) = render::entry_text(ev, &v, &|id| assets.get(id).cloned());
        let mut files = vec![text.into_bytes()];
        files.extend(images.into_iter().map(|i| i.data));
        out.push((at, files));
    }
    out
}

/// The property ([`props::check_entries`]) for the file `bytes`.
fn check(bytes: &[u8], cuts: &[Cut]) -> Result<(), TestCaseError> {
    props::detected(bytes, &COPILOT)?;
    props::check_entries(bytes, &COPILOT, &entries(bytes), cuts)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: props::cases(256), ..ProptestConfig::default() })]

    #[test]
    fn the_copilot_prefilter_keeps_every_line_whose_rendering_matches(
        specs in prop::collection::vec(spec(), 1..8),
        st in props::spaced_or_style(),
        cuts in prop::collection::vec(cut(), 1..5),
    ) {
        check(&file_bytes(&specs, &st), &cuts)?;
    }
}

/// The check sees a dropped line: without the decorations of a tool result, a pattern
/// made of its heading selects nothing.
#[test]
fn the_check_can_fail() {
    let x = Spec {
        kind: 6,
        a: "out".into(),
        b: "call_9".into(),
        n: 1,
        flag: false,
    };
    let bytes = file_bytes(&[x], &props::plain());
    let p = sessionfs::search::pattern::Pattern::new(
        "[result (call_9)]",
        sessionfs::search::pattern::Syntax::Fixed,
        false,
        false,
    )
    .unwrap();
    let with = scanned(&bytes, &Prefilter::new(&p.required, &COPILOT, false, false));
    assert_eq!(with.len(), 1, "{with:?}");
    let bare = sessionfs::model::core::grep::Rules {
        decorations: &[],
        ..COPILOT
    };
    let p2 = sessionfs::search::pattern::Pattern::new(
        "[result (",
        sessionfs::search::pattern::Syntax::Fixed,
        false,
        false,
    )
    .unwrap();
    let without = scanned(&bytes, &Prefilter::new(&p2.required, &bare, false, false));
    assert!(without.is_empty(), "{without:?}");
}
