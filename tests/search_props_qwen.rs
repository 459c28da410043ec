//! The Qwen Code prefilter never drops an entry whose rendering matches.
//!
//! Random Qwen Code sessions are written to disk: records of every kind the renderer
//! knows (prompts, prompts Qwen Code wrote itself, answers of text, thoughts, calls
//! with JSON arguments, images and files, tool results of text, errors, JSON and
//! media, records without a message, `system` records of each subtype: a compression
//! with its contents, a rewind, a title, API responses, errors and tool calls with
//! their counts, snapshots, slash commands, unknown subtypes; records of unknown
//! types; a second line of a record, a fragment), chained, and a subagent's
//! transcript under the first call. Their strings are made of what JSON escapes, what
//! the renderer adds, numbers, non-ASCII text and terminal escapes, written half the
//! time as Qwen Code writes them, else with random encodings (escapes `JSON.stringify`
//! would not write, spaces between tokens, numbers in other forms), which make a line
//! a candidate whatever the pattern.
//!
//! Every entry is rendered as the mount renders it; patterns are cut from the rendered
//! text (fixed strings, extended regexes with a wildcard, `-i`, `-w`), and for each,
//! `sessionfs grep -c` or `-n` with the prefilter must print what it prints with every
//! entry rendered: a dropped entry would print a count of 0, or be missing.
//!
//! The number of cases is `PROPTEST_CASES` (256 by default; `PROPTEST_CASES=100000` for
//! the full run).

#[path = "common/props.rs"]
mod props;

use props::{Cut, Spec, Style, base64};
use proptest::prelude::*;
use sessionfs::model::Session;
use sessionfs::model::content::entry_content;
use sessionfs::model::qwen::search::QWEN;
use sessionfs::search::grepfile::Mode;
use sessionfs::search::pattern::{Pattern, Syntax};
use sessionfs::search::prefilter::Prefilter;
use std::fs;
use std::path::{Path, PathBuf};

/// Pieces strings are made of.
const PIECES: &[&str] = &[
    "a",
    "b",
    "e",
    "E",
    "x",
    "K",
    "of",
    "tool",
    "error",
    "[tool call ",
    "[tool result ",
    "[thinking]",
    "[image ",
    " bytes",
    "api response ",
    " tokens",
    "rewind",
    "(no content)",
    "notification",
    "<system-reminder>\n",
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
    "\": ",
    "1",
    "10",
    "0.5",
    "1e3",
    "1,000",
    "-",
    ".",
    "é",
    "É",
    "ß",
    "\u{212A}",
    "😀",
    "日本",
    "→",
    "—",
    "\u{2028}",
];

fn text() -> impl Strategy<Value = String> {
    props::text(PIECES, 10)
}

/// How many kinds of record [`record`] writes.
const KINDS: u8 = 24;

fn spec() -> impl Strategy<Value = Spec> {
    props::spec(0u8..KINDS, text, -2000..200_000)
}

const SID: &str = "5e551011-0000-4000-8000-00000000a0e1";

/// A 1×1 PNG.
fn png() -> Vec<u8> {
    let mut v = b"\x89PNG\r\n\x1a\n".to_vec();
    v.extend_from_slice(&[0, 0, 0, 13, b'I', b'H', b'D', b'R', 0, 0, 0, 1, 0, 0, 0, 1]);
    v
}

/// One record of kind `x.kind` with `uuid` under `parent`, as Qwen Code writes it.
fn record(x: &Spec, uuid: &str, parent: Option<&str>, st: &Style) -> String {
    let s = |v: &str| st.string(v);
    let (a, b, n, flag) = (x.a.as_str(), x.b.as_str(), x.n, x.flag);
    let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
    let head = |ty: &str, provenance: &str| {
        vec![
            ("uuid", format!("\"{uuid}\"")),
            ("parentUuid", parent.clone()),
            ("sessionId", format!("\"{SID}\"")),
            ("timestamp", "\"2026-12-05T07:27:18.046Z\"".into()),
            ("type", format!("\"{ty}\"")),
            ("provenance", s(provenance)),
            ("cwd", s("/home/dev/src/qa")),
            ("version", s("0.24.4")),
        ]
    };
    let msg = |role: &str, parts: Vec<String>| {
        st.object(&[("role", s(role)), ("parts", st.array(parts))])
    };
    let text_part = |t: &str| st.object(&[("text", s(t))]);
    let args = || {
        st.object(&[
            ("command", s(a)),
            ("n", st.number(n)),
            ("list", st.array(vec![s(b), st.number(n / 7)])),
        ])
    };
    let call = |id: &str| {
        st.object(&[(
            "functionCall",
            st.object(&[("id", s(id)), ("name", s(b)), ("args", args())]),
        )])
    };
    let image = |mime: &str| {
        st.object(&[(
            "inlineData",
            st.object(&[("mimeType", s(mime)), ("data", s(&base64(&png())))]),
        )])
    };
    let response = |resp: String, parts: Option<String>| {
        let mut f = vec![("id", s("call_1")), ("name", s(a)), ("response", resp)];
        if let Some(p) = parts {
            f.push(("parts", p));
        }
        st.object(&[("functionResponse", st.object(&f))])
    };
    let with = |mut f: Vec<(&'static str, String)>, more: Vec<(&'static str, String)>| {
        f.extend(more);
        st.object(&f)
    };
    let system = |sub: &str, payload: String| {
        with(
            head("system", "system"),
            vec![("subtype", s(sub)), ("systemPayload", payload)],
        )
    };
    let telemetry = |ev: Vec<(&'static str, String)>| {
        system("ui_telemetry", st.object(&[("uiEvent", st.object(&ev))]))
    };
    match x.kind {
        0 => with(
            head("user", "real_user"),
            vec![("message", msg("user", vec![text_part(a)]))],
        ),
        1 => with(
            head("user", "system"),
            vec![
                ("subtype", s(if flag { "notification" } else { b })),
                ("message", msg("user", vec![text_part(a)])),
            ],
        ),
        2 => with(
            head("assistant", "assistant_output"),
            vec![
                ("model", s("qwen3-coder-plus")),
                (
                    "message",
                    msg(
                        "model",
                        vec![
                            st.object(&[("text", s(b)), ("thought", "true".into())]),
                            text_part(a),
                        ],
                    ),
                ),
                (
                    "usageMetadata",
                    st.object(&[("promptTokenCount", st.number(n))]),
                ),
            ],
        ),
        3 => with(
            head("assistant", "assistant_output"),
            vec![("message", msg("model", vec![text_part(a), call("call_1")]))],
        ),
        4 => with(
            head("tool_result", "tool_result"),
            vec![(
                "message",
                msg("user", vec![response(st.object(&[("output", s(b))]), None)]),
            )],
        ),
        5 => with(
            head("tool_result", "tool_result"),
            vec![(
                "message",
                msg("user", vec![response(st.object(&[("error", s(b))]), None)]),
            )],
        ),
        6 => with(
            head("tool_result", "tool_result"),
            vec![(
                "message",
                msg(
                    "user",
                    vec![response(
                        st.object(&[("result", args()), ("count", st.number(n))]),
                        Some(st.array(vec![image("image/png"), text_part(a)])),
                    )],
                ),
            )],
        ),
        7 => with(
            head("user", "real_user"),
            vec![(
                "message",
                msg(
                    "user",
                    vec![
                        text_part(a),
                        image(if flag {
                            "image/jpeg"
                        } else {
                            "application/pdf"
                        }),
                        st.object(&[(
                            "fileData",
                            st.object(&[("mimeType", s("text/plain")), ("fileUri", s(b))]),
                        )]),
                    ],
                ),
            )],
        ),
        8 => with(head("assistant", "assistant_output"), vec![]),
        9 => with(
            head("user", "real_user"),
            vec![("message", if flag { s(a) } else { "null".into() })],
        ),
        10 => system(
            "chat_compression",
            st.object(&[
                (
                    "info",
                    st.object(&[
                        ("originalTokenCount", st.number(n)),
                        ("newTokenCount", st.number(n / 3)),
                        ("triggerReason", s(if flag { "manual" } else { b })),
                    ]),
                ),
                (
                    "compressedHistory",
                    if flag {
                        st.array(vec![
                            msg("user", vec![text_part(a)]),
                            msg("model", vec![text_part(b), call("call_2")]),
                        ])
                    } else {
                        "null".into()
                    },
                ),
            ]),
        ),
        11 => system("rewind", st.object(&[("truncatedCount", st.number(n))])),
        12 => system(
            "custom_title",
            st.object(&[
                ("customTitle", s(a)),
                ("titleSource", s(if flag { "manual" } else { b })),
            ]),
        ),
        13 => telemetry(vec![
            ("event.name", s("qwen-code.api_response")),
            ("model", s(b)),
            ("input_token_count", st.number(n)),
            ("output_token_count", st.number(n / 11)),
            ("cached_content_token_count", st.number(n / 5)),
            ("duration_ms", st.number(n / 3)),
            ("response_text", s(a)),
        ]),
        14 => telemetry(vec![
            ("event.name", s("qwen-code.api_error")),
            ("model", s(b)),
            ("error_message", s(a)),
            (
                "status_code",
                if flag { st.number(n) } else { "null".into() },
            ),
        ]),
        15 => telemetry(vec![
            ("event.name", s("qwen-code.tool_call")),
            ("call_id", s(b)),
            ("function_name", s(a)),
            ("status", s("success")),
            ("duration_ms", st.number(n)),
        ]),
        16 => telemetry(vec![("event.name", s(a))]),
        17 => system(
            "attribution_snapshot",
            st.object(&[(
                "snapshot",
                st.object(&[("promptCount", st.number(n)), ("note", s(a))]),
            )]),
        ),
        18 => system(
            "slash_command",
            st.object(&[("phase", s("invocation")), ("rawCommand", s(a))]),
        ),
        19 => system(b, st.object(&[("x", s(a)), ("n", st.number(n))])),
        20 => with(
            head("future_record", "system"),
            vec![("payload", st.object(&[("a", s(a)), ("n", st.number(n))]))],
        ),
        21 => with(
            head("system", "system"),
            vec![("systemPayload", st.object(&[("a", s(a))]))],
        ),
        22 => with(
            head("assistant", "assistant_output"),
            vec![(
                "message",
                msg(
                    "model",
                    vec![
                        st.object(&[("thoughtSignature", s(a))]),
                        st.object(&[("executableCode", st.object(&[("code", s(b))]))]),
                    ],
                ),
            )],
        ),
        _ => with(
            head("user", "real_user"),
            vec![(
                "message",
                msg("user", vec![st.object(&[("text", st.number(n))])]),
            )],
        ),
    }
}

/// The session file (records chained, a fragment of the second record), and a
/// subagent's transcript under the first record of kind 3 (a call).
fn write_session(dir: &Path, specs: &[Spec], side: &[Spec], st: &Style) -> PathBuf {
    let chats = dir.join("projects/-home-dev-src-qa/chats");
    fs::create_dir_all(&chats).unwrap();
    let mut lines = Vec::new();
    let mut parent: Option<String> = None;
    let mut spawner = false;
    for (k, x) in specs.iter().enumerate() {
        let uuid = format!("00000000-0000-4000-8000-{k:012}");
        lines.push(record(x, &uuid, parent.as_deref(), st));
        spawner |= x.kind == 3;
        parent = Some(uuid);
    }
    if specs.len() > 1 && specs[1].flag {
        // A fragment: the second record's uuid again, its parts joined to it.
        let uuid = "00000000-0000-4000-8000-000000000001";
        let x = Spec {
            kind: 0,
            ..specs[0].clone()
        };
        lines.push(record(
            &x,
            uuid,
            Some("00000000-0000-4000-8000-000000000000"),
            st,
        ));
    }
    let file = chats.join(format!("{SID}.jsonl"));
    fs::write(&file, lines.join("\n") + "\n").unwrap();
    if spawner && !side.is_empty() {
        let sub = dir.join("projects/-home-dev-src-qa/subagents").join(SID);
        fs::create_dir_all(&sub).unwrap();
        fs::write(
            sub.join("agent-general-purpose-call_1.meta.json"),
            r#"{"agentType":"general-purpose","toolUseId":"call_1"}"#,
        )
        .unwrap();
        let mut lines = Vec::new();
        let mut parent: Option<String> = None;
        for (k, x) in side.iter().enumerate() {
            let uuid = format!("00000000-0000-4000-9000-{k:012}");
            lines.push(record(x, &uuid, parent.as_deref(), st));
            parent = Some(uuid);
        }
        fs::write(
            sub.join("agent-general-purpose-call_1.jsonl"),
            lines.join("\n") + "\n",
        )
        .unwrap();
    }
    file
}

/// `sessionfs grep PATTERN` over the session file ([`props::grep`]).
fn grep(file: &Path, p: &Pattern, mode: Mode, prefiltered: bool) -> Vec<u8> {
    props::grep(file, &QWEN, p, mode, prefiltered)
}

/// One case: the session written, every entry rendered, and for each cut (with `-c`
/// or not) the search with the prefilter printing what it prints with every entry
/// rendered.
fn check(
    specs: &[Spec],
    side: &[Spec],
    st: &Style,
    cuts: &[(Cut, bool)],
) -> Result<(), TestCaseError> {
    let tmp = tempfile::tempdir().unwrap();
    let file = write_session(tmp.path(), specs, side, st);
    props::detected(&fs::read(&file).unwrap(), &QWEN)?;
    let Ok(s) = Session::open(&file) else {
        return Ok(());
    };
    let mut texts: Vec<Vec<u8>> = Vec::new();
    for i in 0..s.entries().len() as u32 {
        if s.entry(i).is_node() {
            texts.push(entry_content(&s, i).unwrap().text);
        }
    }
    let all: Vec<&[u8]> = texts.iter().map(Vec::as_slice).collect();
    for (c, counted) in cuts {
        props::check_search(&file, &QWEN, &all, c, *counted, "an entry", &|| {
            format!("session:\n{}", fs::read_to_string(&file).unwrap())
        })?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: props::cases(256), ..ProptestConfig::default() })]

    #[test]
    fn the_qwen_code_prefilter_keeps_every_entry_whose_rendering_matches(
        specs in prop::collection::vec(spec(), 1..8),
        side in prop::collection::vec(spec(), 0..3),
        st in props::plain_or_style(),
        cuts in prop::collection::vec((props::cut(), any::<bool>()), 1..5),
    ) {
        check(&specs, &side, &st, &cuts)?;
    }
}

/// The comparison sees a dropped entry: a prefilter without the rules' decorations
/// misses a rewind's heading.
#[test]
fn the_check_can_fail() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = |kind: u8, a: &str| Spec {
        kind,
        a: a.into(),
        b: "x".into(),
        n: 3,
        flag: true,
    };
    let file = write_session(
        tmp.path(),
        &[spec(0, "hi"), spec(11, "")],
        &[],
        &props::plain(),
    );
    let p = Pattern::new("history entries dropped", Syntax::Fixed, false, false).unwrap();
    let all = grep(&file, &p, Mode::Count, false);
    assert!(
        String::from_utf8_lossy(&all).contains("/rewind:1\n"),
        "{}",
        String::from_utf8_lossy(&all)
    );
    assert_eq!(all, grep(&file, &p, Mode::Count, true));
    let bare = sessionfs::model::core::grep::Rules {
        decorations: &[],
        ..QWEN
    };
    let raw = fs::read(&file).unwrap();
    let pf = Prefilter::new(&p.required, &bare, false, false);
    let mut out = Vec::new();
    pf.scan_in(&raw, 0, &mut out, None, None);
    assert!(
        out.is_empty(),
        "without its decorations the rewind's line is no candidate"
    );
}
