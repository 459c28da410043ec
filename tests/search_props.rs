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

use proptest::prelude::*;
use sessionfs::model::{migrate, render};
use sessionfs::search::grepfile::{self, Mode};
use sessionfs::search::pattern::{Pattern, Syntax};
use sessionfs::search::prefilter::Prefilter;
use sessionfs::search::rules::PI;

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
    prop::collection::vec(prop::sample::select(PIECES), 0..12).prop_map(|v| v.concat())
}

/// How a value is written.
#[derive(Debug, Clone)]
struct Style {
    /// Per character: 0 as JSON.stringify, 1 `\u` lower-case, 2 `\u` upper-case.
    escapes: Vec<u8>,
    spaced: bool,
    number_form: u8,
}

fn style() -> impl Strategy<Value = Style> {
    (
        prop::collection::vec(prop::sample::select(vec![0u8, 0, 0, 0, 0, 0, 1, 2]), 64),
        prop::bool::weighted(0.2),
        0u8..6,
    )
        .prop_map(|(escapes, spaced, number_form)| Style {
            escapes,
            spaced,
            number_form,
        })
}

impl Style {
    fn string(&self, s: &str) -> String {
        let mut out = String::from("\"");
        for (k, c) in s.chars().enumerate() {
            let how = self.escapes[k % self.escapes.len()];
            let u = |out: &mut String, c: char, upper: bool| {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    if upper {
                        out.push_str(&format!("\\u{:04X}", unit));
                    } else {
                        out.push_str(&format!("\\u{:04x}", unit));
                    }
                }
            };
            match (c, how) {
                ('/', 1 | 2) => out.push_str("\\/"),
                (_, 1) => u(&mut out, c, false),
                (_, 2) => u(&mut out, c, true),
                ('"', _) => out.push_str("\\\""),
                ('\\', _) => out.push_str("\\\\"),
                ('\n', _) => out.push_str("\\n"),
                ('\r', _) => out.push_str("\\r"),
                ('\t', _) => out.push_str("\\t"),
                ('\u{8}', _) => out.push_str("\\b"),
                ('\u{c}', _) => out.push_str("\\f"),
                (c, _) if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                (c, _) => out.push(c),
            }
        }
        out.push('"');
        out
    }

    fn number(&self, n: i64) -> String {
        match self.number_form {
            0 | 1 => n.to_string(),
            2 => format!("{n}.0"),
            3 => format!("{n}e0"),
            4 => format!("{}.{}e1", n / 10, (n % 10).abs()),
            _ => format!("{n}.50"),
        }
    }

    fn colon(&self) -> &'static str {
        if self.spaced { ": " } else { ":" }
    }

    fn comma(&self) -> &'static str {
        if self.spaced { ", " } else { "," }
    }

    fn object(&self, fields: &[(&str, String)]) -> String {
        let body: Vec<String> = fields
            .iter()
            .map(|(k, v)| format!("{}{}{v}", self.string(k), self.colon()))
            .collect();
        format!("{{{}}}", body.join(self.comma()))
    }
}

/// Standard base64 with padding.
fn base64(b: &[u8]) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in b.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for k in 0..4 {
            if k <= c.len() {
                out.push(A[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
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

/// A pattern cut from the rendered text: its place, length and options.
#[derive(Debug, Clone)]
struct Cut {
    line: usize,
    start: usize,
    len: usize,
    icase: bool,
    word: bool,
    /// Replace the middle character by `.` (an extended regex).
    wildcard: bool,
}

fn cut() -> impl Strategy<Value = Cut> {
    (
        any::<usize>(),
        any::<usize>(),
        1usize..14,
        any::<bool>(),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.3),
    )
        .prop_map(|(line, start, len, icase, word, wildcard)| Cut {
            line,
            start,
            len,
            icase,
            word,
            wildcard,
        })
}

fn check(raw: &str, cuts: &[Cut]) -> Result<(), TestCaseError> {
    let Ok(v) = migrate::parse_line(raw.as_bytes()) else {
        return Ok(());
    };
    let rendered = render::render_entry(&v);
    let images = render::images(&v);
    let lines: Vec<&str> = rendered.split('\n').filter(|l| !l.is_empty()).collect();
    if lines.is_empty() {
        return Ok(());
    }
    for c in cuts {
        let chars: Vec<char> = lines[c.line % lines.len()].chars().collect();
        let start = c.start % chars.len();
        let lit: String = chars[start..(start + c.len).min(chars.len())]
            .iter()
            .collect();
        let (pat, syntax) = if c.wildcard && lit.chars().count() >= 3 {
            let mid = lit.chars().count() / 2;
            let esc = |s: String| regex::escape(&s);
            let a: String = lit.chars().take(mid).collect();
            let b: String = lit.chars().skip(mid + 1).collect();
            (format!("{}.{}", esc(a), esc(b)), Syntax::Extended)
        } else {
            (lit.clone(), Syntax::Fixed)
        };
        let Ok(p) = Pattern::new(&pat, syntax, c.icase, c.word) else {
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
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn the_prefilter_keeps_every_line_whose_rendering_matches(
        kind in 0u8..15,
        a in text(),
        b in text(),
        n in -2000i64..200000,
        flag in any::<bool>(),
        st in style(),
        cuts in prop::collection::vec(cut(), 1..8),
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
