//! The Codex prefilter never drops a line whose rendering matches.
//!
//! Random Codex pages are built line by line: messages of each role (typed, written by
//! Codex, with images, with a string `content`), reasoning (summaries, content,
//! encrypted only), calls with nested arguments written with random escapes inside the
//! JSON string that holds them (so `\\u0041` in the raw line is an `A` once rendered),
//! calls with a namespace or a non-JSON argument string, custom tool calls, outputs as
//! strings, as lists with images, missing or as objects, compactions with their
//! replacement history, payloads of unknown types or missing, and the lines that are
//! no entries (`event_msg`, `turn_context`, unknown types, broken lines). Their strings
//! are made of what JSON escapes, what the renderer adds, non-ASCII text, and are
//! written with random encodings (escapes `JSON.stringify` would not write, upper-case
//! hex, surrogate pairs, spaces between tokens).
//!
//! Every entry is rendered as the mount renders it (`model::codex::render::line_text`:
//! its KIND file and its images); patterns are cut from the rendered text and the
//! images (fixed strings, extended regexes with a wildcard, `-i`, `-w`), and every line
//! whose content files match must be among the lines the prefilter's raw scan selects.
//!
//! Compactions get a test of their own: their previews collapse whitespace, cut long
//! texts with `…` and make up labels, so their texts hold runs of spaces, tabs,
//! newlines and Unicode spaces, are empty, blank or long, their replacement
//! histories hold every kind of item the previews handle, and patterns are also cut
//! around what the previews make up (a collapsed space, a `…`, `meta: `, a count).
//! Without the decoration `" "`, `…`, `meta`, `unknown`, ` items]`, ` image(s)]` or the
//! heading, it fails within the default number of cases.
//!
//! The number of cases is `PROPTEST_CASES` (256 by default, so that the run of every
//! test stays short; `PROPTEST_CASES=100000` for the full run).

#[path = "common/props.rs"]
mod props;

use props::{Cut, Entry, Style, base64, cut, scanned};
use proptest::prelude::*;
use sessionfs::model::codex::search::CODEX;
use sessionfs::model::codex::{page, render};
use sessionfs::search::pattern::{Pattern, Syntax};
use sessionfs::search::prefilter::Prefilter;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

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
    "Read",
    "Bash",
    "error",
    "[call ",
    " (",
    ")]",
    "[output (",
    "null",
    "[image: ",
    "image-",
    ".png",
    "jpg",
    "…",
    "[reasoning: encrypted, no summary]",
    "[compaction: ",
    "[replacement history: ",
    " items]",
    "user: ",
    "<environment_context>",
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
    "é",
    "É",
    "ß",
    "ſ",
    "\u{212A}",
    "😀",
    "日本",
    "→",
    "—",
    "\u{2028}",
    "\u{FFFD}",
];

fn text() -> impl Strategy<Value = String> {
    props::text(PIECES, 10)
}

/// The JSON inside a call's arguments: escapes there are what raw bytes cannot see
/// through, so they are frequent.
fn inner_style() -> impl Strategy<Value = Style> {
    props::style(2, false)
}

/// The random parts of one line.
#[derive(Debug, Clone)]
struct Spec {
    kind: u8,
    a: String,
    b: String,
    n: i64,
    flag: bool,
    /// How the JSON inside a call's arguments string is written.
    inner: Style,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        0u8..KINDS,
        text(),
        text(),
        -2000i64..200000,
        any::<bool>(),
        inner_style(),
    )
        .prop_map(|(kind, a, b, n, flag, inner)| Spec {
            kind,
            a,
            b,
            n,
            flag,
            inner,
        })
}

/// How many kinds of line [`line`] writes.
const KINDS: u8 = 24;

/// A `response_item` line holding `payload`.
fn item(st: &Style, ordinal: usize, payload: String) -> String {
    st.object(&[
        ("timestamp", st.string("2026-12-01T19:38:28.000Z")),
        ("ordinal", ordinal.to_string()),
        ("type", st.string("response_item")),
        ("payload", payload),
    ])
}

fn text_block(st: &Style, ty: &str, t: &str) -> String {
    st.object(&[("type", st.string(ty)), ("text", st.string(t))])
}

fn image_block(st: &Style, url: &str) -> String {
    st.object(&[
        ("type", st.string("input_image")),
        ("image_url", st.string(url)),
    ])
}

fn message(st: &Style, role: &str, blocks: Vec<String>) -> String {
    st.object(&[
        ("type", st.string("message")),
        ("id", st.string("msg_1")),
        ("role", st.string(role)),
        ("content", st.array(blocks)),
    ])
}

/// Writes one line of kind `x.kind`, as Codex writes them (and some it might).
fn line(x: &Spec, ordinal: usize, st: &Style) -> String {
    let s = |v: &str| st.string(v);
    let (a, b, n, flag) = (x.a.as_str(), x.b.as_str(), x.n, x.flag);
    let png = format!(
        "data:image/{};base64,{}",
        if flag { "png" } else { "jpeg" },
        base64(b.as_bytes())
    );
    let payload = match x.kind {
        0 => message(
            st,
            "user",
            vec![
                text_block(st, "input_text", a),
                text_block(st, "input_text", b),
            ],
        ),
        1 => st.object(&[
            ("type", s("message")),
            ("status", s("completed")),
            ("id", s("msg_2")),
            ("role", s("assistant")),
            (
                "content",
                st.array(vec![st.object(&[
                    ("type", s("output_text")),
                    ("text", s(a)),
                    ("annotations", st.array(vec![])),
                ])]),
            ),
        ]),
        2 => message(
            st,
            "developer",
            vec![
                text_block(st, "input_text", &format!("<permissions instructions>{a}")),
                text_block(st, "input_text", b),
            ],
        ),
        3 => message(
            st,
            "user",
            vec![text_block(
                st,
                "input_text",
                &format!("<environment_context>\n  <cwd>{a}</cwd>"),
            )],
        ),
        4 => st.object(&[
            ("type", s("reasoning")),
            ("id", s("rs_1")),
            (
                "summary",
                st.array(vec![
                    text_block(st, "summary_text", a),
                    text_block(st, "summary_text", b),
                ]),
            ),
            ("content", "null".to_string()),
            ("encrypted_content", s("gAAA")),
        ]),
        5 => st.object(&[
            ("type", s("reasoning")),
            ("id", s("rs_2")),
            ("summary", st.array(vec![])),
            ("content", "null".to_string()),
            ("encrypted_content", s(a)),
        ]),
        6 => st.object(&[
            ("type", s("reasoning")),
            ("summary", st.array(vec![])),
            (
                "content",
                st.array(vec![text_block(st, "reasoning_text", a)]),
            ),
        ]),
        7 | 8 => {
            // Nested JSON, written with its own escapes, inside the arguments string.
            let inner = &x.inner;
            let args = inner.object(&[
                ("cmd", inner.string(a)),
                ("n", inner.number(n)),
                (
                    "list",
                    inner.array(vec![
                        inner.string(b),
                        inner.object(&[("k", inner.string(a))]),
                        inner.number(n),
                    ]),
                ),
                ("empty", inner.object(&[])),
            ]);
            let mut f = vec![
                ("type", s("function_call")),
                ("status", s("completed")),
                ("id", s("fc_1")),
                ("name", s(if flag { "exec_command" } else { b })),
            ];
            if x.kind == 8 {
                f.push(("namespace", s("multi_agent_v1")));
            }
            f.push(("arguments", s(&args)));
            f.push(("call_id", s(&format!("call_{b}"))));
            st.object(&f)
        }
        9 => st.object(&[
            ("type", s("function_call")),
            ("name", s("shell")),
            ("arguments", s(a)),
            ("call_id", s("call_9")),
        ]),
        10 => st.object(&[
            ("type", s("custom_tool_call")),
            ("name", s(b)),
            ("input", s(&format!("{{\"x\":{}}}", x.inner.string(a)))),
            ("call_id", s("call_10")),
        ]),
        11 => st.object(&[
            ("type", s("function_call_output")),
            ("id", s("fco_1")),
            ("call_id", s(b)),
            (
                "output",
                s(&format!(
                    "Chunk ID: 1\nProcess exited with code {n}\nOutput:\n{a}"
                )),
            ),
        ]),
        12 => st.object(&[
            ("type", s("function_call_output")),
            ("call_id", s("call_12")),
            (
                "output",
                st.array(vec![text_block(st, "input_text", a), image_block(st, &png)]),
            ),
        ]),
        13 => {
            let mut f = vec![("type", s("custom_tool_call_output")), ("call_id", s(a))];
            if flag {
                f.push(("output", st.object(&[("k", s(b)), ("n", st.number(n))])));
            }
            st.object(&f)
        }
        14 => message(
            st,
            "user",
            vec![
                text_block(
                    st,
                    "input_text",
                    &format!("<image name=[Image #1] path=\"{a}\">"),
                ),
                image_block(st, &png),
                text_block(st, "input_text", "</image>"),
                text_block(st, "input_text", b),
            ],
        ),
        15 => message(
            st,
            "user",
            vec![
                image_block(st, &format!("https://example.com/{a}{b}{a}{b}{a}{b}{a}")),
                image_block(st, &format!("data:{a};base64,{}", base64(a.as_bytes()))),
            ],
        ),
        16 => st.object(&[
            ("type", s("message")),
            ("role", s(if flag { "user" } else { "assistant" })),
            ("content", s(a)),
        ]),
        17 => st.object(&[
            ("type", s("x_future_item")),
            ("a", s(a)),
            ("n", st.number(n)),
            ("l", st.array(vec![s(b)])),
        ]),
        18 => {
            if flag {
                "null".to_string()
            } else {
                st.string(a)
            }
        }
        19 => {
            let rh = st.array(vec![
                message(st, "user", vec![text_block(st, "input_text", b)]),
                st.object(&[
                    ("type", s("function_call")),
                    ("name", s(a)),
                    (
                        "arguments",
                        s(&format!("{{\"cmd\":{}}}", x.inner.string(b))),
                    ),
                    ("call_id", s("c")),
                ]),
                st.object(&[
                    ("type", s("function_call_output")),
                    ("call_id", s(a)),
                    ("output", s(b)),
                ]),
                st.object(&[
                    ("type", s("reasoning")),
                    ("summary", st.array(vec![text_block(st, "summary_text", a)])),
                ]),
            ]);
            return st.object(&[
                ("timestamp", s("2026-12-01T19:38:28.000Z")),
                ("ordinal", ordinal.to_string()),
                ("type", s("compacted")),
                (
                    "payload",
                    st.object(&[
                        (
                            "message",
                            s(&format!(
                                "Another language model started to solve this problem\n\n{a}"
                            )),
                        ),
                        ("replacement_history", rh),
                    ]),
                ),
            ]);
        }
        20 => {
            return st.object(&[
                ("timestamp", s("t")),
                ("ordinal", ordinal.to_string()),
                ("type", s("event_msg")),
                (
                    "payload",
                    st.object(&[("type", s("task_complete")), ("last_agent_message", s(a))]),
                ),
            ]);
        }
        21 => {
            return st.object(&[
                ("type", s("turn_context")),
                ("payload", st.object(&[("cwd", s(a)), ("model", s(b))])),
            ]);
        }
        22 => return st.object(&[("type", s("x_future_line")), ("payload", s(a))]),
        _ => return format!("{{not json {a}"),
    };
    if x.kind == 18 && !flag {
        // No payload at all.
        return st.object(&[
            ("type", s("response_item")),
            ("ordinal", ordinal.to_string()),
        ]);
    }
    item(st, ordinal, payload)
}

/// Pieces of the texts of compactions: words, the whitespace the previews collapse
/// (runs, tabs, newlines, Unicode spaces), and what the previews write themselves.
const COMPACTION_PIECES: &[&str] = &[
    "a",
    "be",
    "x",
    "K",
    "word",
    "follows",
    "items",
    "é",
    "日本",
    "😀",
    " ",
    "  ",
    "   ",
    "\t",
    "\t\t",
    "\n",
    "\n\n",
    " \t\n ",
    "\r\n",
    "\u{a0}",
    "\u{2028}",
    "\u{3000}",
    "…",
    "-",
    "- ",
    ".",
    "?",
    ": ",
    "null",
    "call ",
    "output ",
    "[",
    "]",
    "Output:\n",
    "<environment_context>",
    "1",
    "0.5",
];

/// A text of a compaction: empty, whitespace only, short, or long enough for the
/// previews to cut it (at 60 or 70 characters, with `…`).
fn compaction_text() -> impl Strategy<Value = String> {
    let ws = prop::collection::vec(
        prop::sample::select(&[" ", "  ", "\t", "\n", "\n\n", "\u{a0}", "\u{2028}"][..]),
        1..6,
    )
    .prop_map(|v| v.concat());
    prop_oneof![
        1 => Just(String::new()),
        1 => ws,
        4 => props::text(COMPACTION_PIECES, 12),
        3 => prop::collection::vec(prop::sample::select(COMPACTION_PIECES), 20..60)
            .prop_map(|v| v.concat()),
        1 => (props::text(COMPACTION_PIECES, 4), 15usize..40)
            .prop_map(|(w, n)| format!("{w} ").repeat(n)),
    ]
}

/// One item of a compaction's replacement history: its kind (every kind
/// `render::item_preview` handles, and items that are no objects), texts, a flag.
type Item = props::Spec;

/// How many kinds of item [`history_item`] writes.
const ITEM_KINDS: u8 = 22;

fn history_item() -> impl Strategy<Value = Item> {
    props::spec(0u8..ITEM_KINDS, compaction_text, -2000..200000)
}

/// A compaction line: its message and replacement history.
#[derive(Debug, Clone)]
struct Compaction {
    message: String,
    items: Vec<Item>,
    /// No `replacement_history` at all.
    no_history: bool,
    inner: Style,
}

fn compaction() -> impl Strategy<Value = Compaction> {
    (
        compaction_text(),
        prop::collection::vec(history_item(), 0..7),
        prop::bool::weighted(0.05),
        inner_style(),
    )
        .prop_map(|(message, items, no_history, inner)| Compaction {
            message,
            items,
            no_history,
            inner,
        })
}

/// Writes one item of a replacement history.
fn history_item_json(x: &Item, st: &Style, inner: &Style) -> String {
    let s = |v: &str| st.string(v);
    let (a, b, n, flag) = (x.a.as_str(), x.b.as_str(), x.n, x.flag);
    let png = format!(
        "data:image/{};base64,{}",
        if flag { "png" } else { "jpeg" },
        base64(b.as_bytes())
    );
    let url = format!("https://example.com/{a}{b}{a}");
    match x.kind {
        0 => {
            let mut blocks = vec![text_block(st, "input_text", a)];
            if flag {
                blocks.push(image_block(st, &png));
                blocks.push(image_block(st, &url));
            }
            blocks.push(text_block(st, "input_text", b));
            message(st, "user", blocks)
        }
        1 => message(st, "assistant", vec![text_block(st, "output_text", a)]),
        2 => message(
            st,
            "developer",
            vec![
                text_block(st, "input_text", a),
                text_block(st, "input_text", b),
            ],
        ),
        // No role: `unknown`.
        3 => st.object(&[
            ("type", s("message")),
            ("content", st.array(vec![text_block(st, "output_text", a)])),
        ]),
        // Written by Codex: `meta`.
        4 => message(
            st,
            "user",
            vec![text_block(
                st,
                "input_text",
                &format!("{}<environment_context>{a}", if flag { "  \n" } else { "" }),
            )],
        ),
        // A role that is no string, or a string content: `unknown`, no text.
        5 => st.object(&[
            ("type", s("message")),
            ("role", if flag { st.number(n) } else { s(a) }),
            ("content", if flag { s(b) } else { st.array(vec![]) }),
        ]),
        6 | 7 => {
            let key = if x.kind == 6 { "cmd" } else { "command" };
            let args = inner.object(&[(key, inner.string(a)), ("n", inner.number(n))]);
            let mut f = vec![("type", s("function_call")), ("name", s(b))];
            if flag {
                f.push(("namespace", s("multi_agent_v1")));
            }
            f.push(("arguments", s(&args)));
            f.push(("call_id", s("c1")));
            st.object(&f)
        }
        8 => st.object(&[
            ("type", s("function_call")),
            ("name", s("shell")),
            ("arguments", s(a)),
            ("call_id", s(b)),
        ]),
        // No name: `?`; a namespace: `NS.?`.
        9 => {
            let mut f = vec![("type", s("function_call"))];
            if flag {
                f.push(("namespace", s(b)));
            }
            f.push(("arguments", s(&inner.object(&[("cmd", inner.string(a))]))));
            st.object(&f)
        }
        // A `cmd` that is no string, and arguments without one: JSON re-written.
        10 => {
            let cmd = if flag {
                inner.array(vec![inner.string(a), inner.number(n), inner.string(b)])
            } else {
                inner.number(n)
            };
            let args = inner.object(&[("cmd", cmd)]);
            st.object(&[
                ("type", s("function_call")),
                ("name", s("exec")),
                ("arguments", s(&args)),
            ])
        }
        11 => {
            let args = if flag {
                inner.object(&[("path", inner.string(a)), ("n", inner.number(n))])
            } else {
                inner.string(a)
            };
            st.object(&[
                ("type", s("function_call")),
                ("name", s("read")),
                ("arguments", s(&args)),
            ])
        }
        12 => st.object(&[
            ("type", s("custom_tool_call")),
            ("name", s(b)),
            ("input", s(a)),
        ]),
        13 => st.object(&[
            ("type", s("function_call_output")),
            ("call_id", s(b)),
            (
                "output",
                s(&if flag {
                    format!("Chunk ID: 1\nProcess exited with code {n}\nOutput:\n{a}")
                } else {
                    a.to_string()
                }),
            ),
        ]),
        14 => st.object(&[
            ("type", s("function_call_output")),
            ("call_id", s("c14")),
            (
                "output",
                st.array(vec![
                    text_block(st, "input_text", a),
                    image_block(st, if flag { &png } else { &url }),
                    text_block(st, "input_text", b),
                ]),
            ),
        ]),
        15 => {
            let mut f = vec![("type", s("function_call_output")), ("call_id", s(a))];
            if flag {
                f.push(("output", st.object(&[("k", s(b))])));
            }
            st.object(&f)
        }
        16 => st.object(&[
            ("type", s("custom_tool_call_output")),
            ("call_id", s(b)),
            ("output", s(a)),
        ]),
        17 => st.object(&[
            ("type", s("reasoning")),
            (
                "summary",
                st.array(vec![
                    text_block(st, "summary_text", a),
                    text_block(st, "summary_text", b),
                ]),
            ),
            (
                "content",
                if flag {
                    st.array(vec![text_block(st, "reasoning_text", b)])
                } else {
                    "null".to_string()
                },
            ),
        ]),
        18 => st.object(&[
            ("type", s("reasoning")),
            ("summary", st.array(vec![])),
            ("content", "null".to_string()),
            ("encrypted_content", s(a)),
        ]),
        // A type the previews do not know: the item re-written as compact JSON.
        19 => st.object(&[
            ("type", s(if flag { "web_search_call" } else { b })),
            ("status", s("completed")),
            ("action", st.object(&[("query", s(a)), ("n", st.number(n))])),
        ]),
        // Items that are no objects.
        20 => match n % 3 {
            0 => s(a),
            1 => st.number(n),
            _ => "null".to_string(),
        },
        _ => st.object(&[("text", s(a)), ("n", st.number(n))]),
    }
}

/// What the previews of a compaction make up: a cut anchored at one of these (its
/// first character) takes what is around it, where the raw line differs most from
/// the rendering (a collapsed run of whitespace, the `…` of a cut, a made-up label).
const MADE_UP: &[&str] = &[
    " ",
    "…",
    "meta: ",
    "unknown: ",
    " image(s)]",
    " items]",
    "[compaction: ",
    "[replacement history: ",
    "- ",
    ": ",
    "call ",
    "output ",
    "reasoning: ",
    "?",
    ".",
    "null",
    "[image: ",
];

/// A pattern cut around something the previews make up: which text, which
/// occurrence of which of [`MADE_UP`], how many characters before and after it (on
/// its line), `-i`, `-w`.
#[derive(Debug, Clone)]
struct Anchored {
    text: usize,
    at: usize,
    before: usize,
    after: usize,
    icase: bool,
    word: bool,
}

fn anchored() -> impl Strategy<Value = Anchored> {
    (
        (any::<usize>(), any::<usize>()),
        0usize..7,
        0usize..9,
        any::<bool>(),
        prop::bool::weighted(0.2),
    )
        .prop_map(|((text, at), before, after, icase, word)| Anchored {
            text,
            at,
            before,
            after,
            icase,
            word,
        })
}

impl Anchored {
    /// The fixed string cut from one of `texts`; `None` for a text where the
    /// previews made nothing up.
    fn source(&self, texts: &[&[u8]]) -> Option<Source> {
        let text = String::from_utf8_lossy(texts.get(self.text % texts.len().max(1))?);
        let chars: Vec<char> = text.chars().collect();
        // Which of them first (a rare label is as likely as a space), then which
        // occurrence.
        let mut kinds: Vec<Vec<usize>> = MADE_UP
            .iter()
            .map(|m| {
                let m: Vec<char> = m.chars().collect();
                (0..chars.len())
                    .filter(|&k| chars[k..].starts_with(&m))
                    .collect()
            })
            .collect();
        kinds.retain(|starts: &Vec<usize>| !starts.is_empty());
        let starts = kinds.get(self.at % kinds.len().max(1))?;
        let at = starts[(self.at / kinds.len()) % starts.len()];
        let line_start = chars[..at]
            .iter()
            .rposition(|&c| c == '\n')
            .map_or(0, |k| k + 1);
        let line_end = chars[at..]
            .iter()
            .position(|&c| c == '\n')
            .map_or(chars.len(), |k| at + k);
        let s = at.saturating_sub(self.before).max(line_start);
        let e = (at + 1 + self.after).min(line_end);
        let lit: String = chars[s..e.max(s)].iter().collect();
        (!lit.is_empty()).then_some((lit, Syntax::Fixed, self.icase, self.word))
    }
}

/// Writes a compaction line.
fn compaction_line(c: &Compaction, ordinal: usize, st: &Style) -> String {
    let s = |v: &str| st.string(v);
    let mut payload = vec![("message", s(&c.message))];
    if !c.no_history {
        let items = c
            .items
            .iter()
            .map(|x| history_item_json(x, st, &c.inner))
            .collect();
        payload.push(("replacement_history", st.array(items)));
    }
    st.object(&[
        ("timestamp", s("2026-12-01T19:38:28.000Z")),
        ("ordinal", ordinal.to_string()),
        ("type", s("compacted")),
        ("payload", st.object(&payload)),
    ])
}

/// A page: its `session_meta`, then the lines.
fn page_bytes(specs: &[Spec], st: &Style) -> Vec<u8> {
    let mut out = String::from(
        r#"{"timestamp":"2026-12-01T19:38:28.000Z","ordinal":0,"type":"session_meta","payload":{"id":"01a2331d-9d4a-7781-acec-f35cf40a4d8b","cwd":"/home/dev/src/p"}}"#,
    );
    out.push('\n');
    for (k, x) in specs.iter().enumerate() {
        out.push_str(&line(x, k + 1, st));
        out.push('\n');
    }
    out.into_bytes()
}

/// How many compiled patterns and prefilters are kept (see [`compiled`]).
const KEPT: usize = 4096;

/// A pattern and its Codex prefilter, by pattern text, `-E`, `-i` and `-w`.
type Compiled = HashMap<(String, bool, bool, bool), Option<Rc<(Pattern, Prefilter)>>>;

thread_local! {
    /// Patterns and their prefilters, by what they are built from. Cuts of the
    /// renderer's text repeat often (`a`, `(`, `null`, a heading), and compiling the
    /// pattern's two regexes and the prefilter's is most of a case's cost: each is
    /// built once per distinct input (up to [`KEPT`], then the cache starts over).
    static COMPILED: RefCell<Compiled> = RefCell::new(HashMap::new());
}

/// The pattern `pat` and its Codex prefilter, or `None` for a pattern grep refuses.
fn compiled(
    pat: &str,
    syntax: Syntax,
    icase: bool,
    word: bool,
) -> Option<Rc<(Pattern, Prefilter)>> {
    let key = (pat.to_string(), syntax == Syntax::Extended, icase, word);
    if let Some(c) = COMPILED.with(|m| m.borrow().get(&key).cloned()) {
        return c;
    }
    let c = Pattern::new(pat, syntax, icase, word).ok().map(|p| {
        let pf = Prefilter::new(&p.required, &CODEX, p.ignore_case, false);
        Rc::new((p, pf))
    });
    COMPILED.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() >= KEPT {
            m.clear();
        }
        m.insert(key, c.clone());
    });
    c
}

/// The lines the prefilter selects (their start offsets).
fn selected(bytes: &[u8], p: &Pattern) -> Vec<u64> {
    let pf = Prefilter::new(&p.required, &CODEX, p.ignore_case, false);
    scanned(bytes, &pf)
}

fn check(specs: &[Spec], st: &Style, cuts: &[Cut]) -> Result<(), TestCaseError> {
    check_page(&page_bytes(specs, st), cuts)
}

/// Checks every cut against every entry of the page `bytes`.
fn check_page(bytes: &[u8], cuts: &[Cut]) -> Result<(), TestCaseError> {
    check_sources(bytes, &|texts| {
        cuts.iter()
            .filter_map(|c| {
                let (pat, syntax) = c.source(texts)?;
                Some((pat, syntax, c.icase, c.word))
            })
            .collect()
    })
}

/// A pattern, its syntax, `-i` and `-w`.
type Source = (String, Syntax, bool, bool);

/// Checks every pattern `sources` draws from the page's rendered texts against every
/// entry of the page `bytes`.
fn check_sources(
    bytes: &[u8],
    sources: &dyn Fn(&[&[u8]]) -> Vec<Source>,
) -> Result<(), TestCaseError> {
    props::detected(bytes, &CODEX)?;
    let parsed = page::parse(bytes);
    // Every entry: its start, its KIND file and its images.
    let mut entries: Vec<Entry> = Vec::new();
    for l in parsed.lines.iter().filter(|l| l.kind.is_node()) {
        let r = render::line_text(l);
        let mut files = vec![r.text.into_bytes()];
        files.extend(r.images.into_iter().map(|i| i.bytes));
        entries.push((l.start, files));
    }
    if entries.is_empty() {
        return Ok(());
    }
    // Patterns are cut from any content file of any entry.
    for (pat, syntax, icase, word) in sources(&props::texts(&entries)) {
        let Some(compiled) = compiled(&pat, syntax, icase, word) else {
            continue;
        };
        let (p, pf) = &*compiled;
        let shown = format!("{pat:?} (-i {icase}, -w {word})");
        props::check_entry_lines(bytes, &entries, p, pf, &shown)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: props::cases(256), ..ProptestConfig::default() })]

    #[test]
    fn the_codex_prefilter_keeps_every_line_whose_rendering_matches(
        specs in prop::collection::vec(spec(), 1..8),
        st in props::spaced_or_style(),
        cuts in prop::collection::vec(cut(), 1..5),
    ) {
        check(&specs, &st, &cuts)?;
    }

    /// Compactions alone (with, now and then, one other line): their previews
    /// collapse whitespace, cut long texts with `…` and label every kind of item,
    /// and the patterns are cut from that rendering.
    #[test]
    fn the_codex_prefilter_keeps_every_compaction_whose_rendering_matches(
        compactions in prop::collection::vec(compaction(), 1..3),
        other in prop::option::weighted(0.2, spec()),
        st in props::spaced_or_style(),
        cuts in prop::collection::vec(cut(), 1..5),
        around in prop::collection::vec(anchored(), 1..9),
    ) {
        let mut page = String::from_utf8(page_bytes(&[], &st)).unwrap();
        for (k, c) in compactions.iter().enumerate() {
            page.push_str(&compaction_line(c, k + 1, &st));
            page.push('\n');
        }
        if let Some(x) = &other {
            page.push_str(&line(x, compactions.len() + 1, &st));
            page.push('\n');
        }
        check_page(page.as_bytes(), &cuts)?;
        check_sources(page.as_bytes(), &|texts| {
            around.iter().filter_map(|a| a.source(texts)).collect()
        })?;
    }
}

/// The check sees a dropped line: an escape inside the JSON of a call's arguments
/// spells a letter the raw line does not hold, and without the rule that makes such
/// lines candidates the scan would not select it.
#[test]
fn the_check_can_fail() {
    let plain = props::plain();
    let inner = Style {
        escapes: vec![1],
        ..props::plain()
    };
    let x = Spec {
        kind: 7,
        a: "Zebra".into(),
        b: "b".into(),
        n: 1,
        flag: true,
        inner,
    };
    let bytes = page_bytes(&[x], &plain);
    let raw = String::from_utf8_lossy(&bytes);
    assert!(!raw.contains("Zebra") && raw.contains("\\\\u005a"), "{raw}");
    let parsed = page::parse(&bytes);
    let l = parsed.lines.iter().find(|l| l.kind.is_node()).unwrap();
    assert!(render::line_text(l).text.contains("\"cmd\": \"Zebra\""));
    let p = Pattern::new("Zebra", Syntax::Fixed, false, false).unwrap();
    assert_eq!(selected(&bytes, &p), [l.start]);
    // Only the rule for escaped escapes selects it: its trigger is what finds it.
    assert!(
        CODEX
            .always
            .iter()
            .any(|t| t.holds(&bytes[l.start as usize..]))
    );
    let mut without = Vec::new();
    let pf = Prefilter::new(&p.required, &sessionfs::model::pi::search::PI, false, false);
    pf.scan(&bytes, 0, &mut without);
    assert!(!without.contains(&l.start));
}

/// A compaction's previews re-space, cut and label the texts of its replacement
/// history: every piece of its rendered text, searched as a fixed string, selects
/// the line (the decorations of compaction lines cover what the previews make up).
#[test]
fn compaction_previews_select_their_line() {
    let long = "word ".repeat(20);
    let items = serde_json::json!([
        {"type":"message","role":"user","content":[
            {"type":"input_text","text":"alpha  beta\n\ngamma"},
            {"type":"input_text","text":"delta"},
            {"type":"input_image","image_url":"data:image/png;base64,aGk="}]},
        {"type":"message","content":[{"type":"output_text","text":"no role here"}]},
        {"type":"message","role":"user","content":[
            {"type":"input_text","text":"<environment_context>\n  <cwd>/w</cwd>"}]},
        {"type":"message","role":"assistant","content":[{"type":"output_text","text":long}]},
        {"type":"function_call","name":"exec","namespace":"shell",
         "arguments":"{\"cmd\": \"ls  -la\\n| wc\"}","call_id":"c1"},
        {"type":"function_call","arguments":"{\"path\": \"x y\", \"n\": [1,  2]}","call_id":"c2"},
        {"type":"custom_tool_call","name":"apply","input":"not json  at all"},
        {"type":"function_call_output","call_id":"c1","output":"Exit: 0\nOutput:\nfile one\nfile two"},
        {"type":"function_call_output","call_id":"c2"},
        {"type":"function_call_output","call_id":"c3","output":[{"type":"input_text","text":"list out"}]},
        {"type":"reasoning","summary":[{"type":"summary_text","text":"thinking  hard"}]},
        {"type":"reasoning","encrypted_content":"zz"},
        {"type":"web_search_call","status":"completed","action":{"query":"q  r"}},
        {"payload_without_type":true}
    ]);
    let line = serde_json::json!({"timestamp":"t","ordinal":9,"type":"compacted",
        "payload":{"message":"summary\n\nof  it","replacement_history":items}})
    .to_string();
    let text = String::from_utf8(
        (CODEX.line_content.expect("Codex lines render alone"))(line.as_bytes())
            .unwrap()
            .text,
    )
    .unwrap();
    assert!(
        text.contains("call shell.exec: ls -la | wc") && text.contains('…'),
        "{text}"
    );
    let mut bytes = line.clone().into_bytes();
    bytes.push(b'\n');
    let chars: Vec<char> = text.chars().collect();
    let mut tried = 0;
    for len in [2, 3, 4, 6, 9, 14] {
        for s in 0..chars.len().saturating_sub(len) {
            let lit: String = chars[s..s + len].iter().collect();
            if lit.contains('\n') {
                continue;
            }
            let p = Pattern::new(&lit, Syntax::Fixed, false, false).unwrap();
            let pf = Prefilter::new(&p.required, &CODEX, false, false);
            let mut sel = Vec::new();
            pf.scan(&bytes, 0, &mut sel);
            assert_eq!(sel, [0], "{lit:?} in {text}");
            tried += 1;
        }
    }
    assert!(tried > 500);
}
