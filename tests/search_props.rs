//! The prefilter never drops a line whose rendering matches.
//!
//! Random entries of every kind, their strings full of what JSON escapes, what the
//! renderer adds and what case folding changes, are written as raw lines with random
//! encodings (escapes as `JSON.stringify` writes them or not, `\/`, upper-case hex,
//! surrogate pairs, numbers written otherwise, spaces between tokens). Each is
//! rendered as the mount renders it; patterns are cut from the rendered lines
//! (fixed strings, extended regexes with a wildcard, `-i`, `-w`), and whenever a
//! pattern matches the rendered text, the prefilter built for it must select the raw
//! line.

#[path = "common/props.rs"]
mod props;

use props::{Cut, Style, base64};
use proptest::prelude::*;
use sessionfs::model::pi::search::PI;
use sessionfs::model::{migrate, render};
use sessionfs::search::grepfile::{self, Mode};
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
    "read",
    "error",
    "Error",
    "tool call ",
    "call",
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
    "-",
    ".",
    "+",
    "é",
    "É",
    "ß",
    "ſ",
    "\u{212A}",
    "😀",
    "日本",
    "→",
    " → ",
    "[error]",
    "(no content)",
    "exit code ",
    "[thinking]",
    "label ",
    "tokens before",
    "$ ",
    "\u{2028}",
    "\u{FFFD}",
];

fn text() -> impl Strategy<Value = String> {
    props::text(PIECES, 12)
}

/// A raw line of one of Pi's kinds, its content from `a`, `b`, `n`.
fn line(kind: u8, a: &str, b: &str, n: i64, flag: bool, st: &Style) -> String {
    let s = |x: &str| st.string(x);
    let head = |ty: &str| {
        vec![
            ("type", s(ty)),
            ("id", s("abcd1234")),
            ("parentId", "null".to_string()),
            ("timestamp", s("2026-01-05T09:00:00.000Z")),
        ]
    };
    let message = |m: String| {
        let mut f = head("message");
        f.push(("message", m));
        st.object(&f)
    };
    let blocks = |bs: Vec<String>| format!("[{}]", bs.join(st.comma()));
    let text_block = |t: &str| st.object(&[("type", s("text")), ("text", s(t))]);
    match kind {
        0 => message(st.object(&[("role", s("user")), ("content", s(a))])),
        1 => message(st.object(&[
            ("role", s("user")),
            ("content", blocks(vec![text_block(a), text_block(b)])),
        ])),
        2 => message(st.object(&[
            ("role", s("assistant")),
            (
                "content",
                blocks(vec![
                    st.object(&[("type", s("thinking")), ("thinking", s(a))]),
                    text_block(b),
                    st.object(&[
                        ("type", s("toolCall")),
                        ("id", s("call_1")),
                        ("name", s(a)),
                        (
                            "arguments",
                            st.object(&[
                                ("command", s(b)),
                                ("n", st.number(n)),
                                ("list", blocks(vec![st.number(n), s(a)])),
                            ]),
                        ),
                    ]),
                ]),
            ),
            ("stopReason", s(if flag { "error" } else { "stop" })),
            ("errorMessage", if flag { s(b) } else { "null".into() }),
        ])),
        3 => message(st.object(&[
            ("role", s("toolResult")),
            ("toolName", s(a)),
            ("content", blocks(vec![text_block(b)])),
            ("isError", flag.to_string()),
        ])),
        4 => message(st.object(&[
            ("role", s("bashExecution")),
            ("command", s(a)),
            ("output", s(b)),
            ("exitCode", st.number(n)),
            ("cancelled", (n % 3 == 0).to_string()),
            ("truncated", flag.to_string()),
            ("fullOutputPath", s(a)),
        ])),
        5 => message(st.object(&[("role", s("user"))])),
        6 => {
            let mut f = head("compaction");
            f.push(("summary", s(a)));
            f.push(("firstKeptEntryId", s(b)));
            f.push(("tokensBefore", st.number(n)));
            st.object(&f)
        }
        7 => {
            let mut f = head("custom");
            f.push(("customType", s(a)));
            f.push((
                "data",
                st.object(&[("k", s(b)), ("n", st.number(n)), ("b", flag.to_string())]),
            ));
            st.object(&f)
        }
        8 => {
            let mut f = head("mystery");
            f.push(("note", s(a)));
            f.push(("count", st.number(n)));
            st.object(&f)
        }
        9 => {
            let mut f = head("label");
            f.push(("targetId", s(a)));
            f.push(("label", if flag { s(b) } else { "null".into() }));
            st.object(&f)
        }
        10 => {
            let mut f = head("model_change");
            f.push(("provider", s(a)));
            f.push(("modelId", s(b)));
            st.object(&f)
        }
        11 => {
            let mut f = head("session_info");
            f.push(("name", s(if flag { a } else { "" })));
            st.object(&f)
        }
        12 => {
            let mime = if flag { "image/jpeg" } else { "image/svg+xml" };
            let data = base64(b.as_bytes());
            message(st.object(&[
                ("role", s("user")),
                (
                    "content",
                    blocks(vec![
                        text_block(a),
                        st.object(&[
                            ("type", s("image")),
                            ("data", s(&data)),
                            ("mimeType", s(mime)),
                        ]),
                        st.object(&[
                            ("type", s("image")),
                            ("data", s(&data)),
                            ("mimeType", st.number(n)),
                        ]),
                    ]),
                ),
            ]))
        }
        13 => {
            let mut f = head("branch_summary");
            f.push(("fromId", s(a)));
            f.push(("summary", s(b)));
            st.object(&f)
        }
        _ => {
            let mut f = head("custom_message");
            f.push(("customType", s(a)));
            f.push(("content", if flag { s(b) } else { "[]".into() }));
            st.object(&f)
        }
    }
}

fn check(raw: &str, cuts: &[Cut]) -> Result<(), TestCaseError> {
    let Ok(v) = migrate::parse_line(raw.as_bytes()) else {
        return Ok(());
    };
    let rendered = render::render_entry(&v);
    let images = render::images(&v);
    for c in cuts {
        let Some((pat, p)) = c.pattern(&[rendered.as_bytes()]) else {
            continue;
        };
        let found = grepfile::grep(&p, rendered.as_bytes(), Mode::Count).count
            + images
                .iter()
                .map(|im| grepfile::grep(&p, &im.data, Mode::Count).count)
                .sum::<u64>();
        if found == 0 {
            continue;
        }
        let pf = Prefilter::new(&p.required, &PI, c.icase, false);
        let mut out = Vec::new();
        pf.scan(format!("{raw}\n").as_bytes(), 0, &mut out);
        prop_assert!(
            out == [0],
            "the prefilter dropped a line that matches {pat:?} (-i {}, -w {}, fragments {:?})\nraw: {raw}\nrendered:\n{rendered}",
            c.icase,
            c.word,
            pf.fragments
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: props::cases(256), ..ProptestConfig::default() })]

    #[test]
    fn the_prefilter_keeps_every_line_whose_rendering_matches(
        kind in 0u8..15,
        a in text(),
        b in text(),
        n in -2000i64..200000,
        flag in any::<bool>(),
        st in props::style(6, true),
        cuts in prop::collection::vec(props::cut(), 1..8),
    ) {
        let raw = line(kind, &a, &b, n, flag, &st);
        check(&raw, &cuts)?;
    }
}

/// The property holds for the checks above: a rendering that matches only through
/// what the prefilter must account for is caught.
#[test]
fn the_check_can_fail() {
    let raw = r#"{"type":"message","message":{"role":"user","content":"caf\u00e9"}}"#;
    let v = migrate::parse_line(raw.as_bytes()).unwrap();
    assert_eq!(render::render_entry(&v), "café\n");
    // A prefilter that ignored escapes would miss this; the real one does not.
    let cuts = [Cut {
        text: 0,
        line: 0,
        start: 0,
        len: 4,
        icase: false,
        word: false,
        wildcard: false,
    }];
    check(raw, &cuts).unwrap();
    let p = Pattern::new("café", Syntax::Fixed, false, false).unwrap();
    let pf = Prefilter::new(&p.required, &PI, false, false);
    let mut out = Vec::new();
    pf.scan(b"{\"content\":\"cafe\"}\n", 0, &mut out);
    assert!(out.is_empty(), "a line without the text is not a candidate");
}
