//! The Claude Code prefilter never drops an entry whose rendering matches.
//!
//! Random Claude Code sessions are written to disk with the files beside them: lines
//! of every kind (user text and blocks, assistant replies split over several lines of
//! one `message.id`, thinking, tool calls and their results, images, errors and stop
//! reasons, meta lines and compact summaries, system lines of each subtype, compaction
//! boundaries, attachments of every type the renderer knows, progress and metadata
//! lines, lines of unknown types), a subagent's transcript under the tool call that
//! started it, and a tool result spilled to `tool-results/`. Their strings are made of
//! what JSON escapes, what the renderer adds, non-ASCII text and terminal escapes, and
//! are written half the time as Claude Code writes them, else with random encodings
//! (escapes `JSON.stringify` would not write, upper-case hex, surrogate pairs, spaces
//! between tokens), which make a line a candidate whatever the pattern.
//!
//! Every entry is rendered as the mount renders it; patterns are cut from the rendered
//! text, half of them from a spilled output's file (fixed strings, extended regexes
//! with a wildcard, `-i`, `-w`), and for each, `sessionfs grep -c` or `-n` with the
//! prefilter must print what it prints with every entry rendered: a dropped entry
//! would print a count of 0, or be missing. A spilled output's line is a candidate
//! only when its file holds the pattern's literals: a prefilter built without that
//! rule (`Rules::spilled: None`) fails here within 256 cases.
//!
//! The number of cases is `PROPTEST_CASES` (256 by default, so that the run of every
//! test stays short; `PROPTEST_CASES=100000` for the full run).

#[path = "common/props.rs"]
mod props;

use props::{Cut, Spec, Style, base64};
use proptest::prelude::*;
use sessionfs::model::Session;
use sessionfs::model::claude::search::CLAUDE;
use sessionfs::model::content::entry_content;
use sessionfs::search::grepfile::Mode;
use sessionfs::search::pattern::{Pattern, Syntax};
use sessionfs::search::prefilter::Prefilter;
use std::fs;
use std::path::Path;

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
    "tool result ",
    "part ",
    " of reply ",
    "turn took ",
    " messages",
    "[attachment ",
    "undefined",
    "(no content)",
    "sent as user text",
    "The following skills",
    "<system-reminder>\n",
    "\n</system-reminder>",
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

/// Random lines; a spilled result (kind 8) one time in six, so that most sessions
/// have one.
fn spec() -> impl Strategy<Value = Spec> {
    let kind = (0u8..KINDS + 6).prop_map(|k| if k >= KINDS { 8 } else { k });
    props::spec(kind, text, -2000..200000)
}

/// How many kinds of line [`node`] writes.
const KINDS: u8 = 30;

const SID: &str = "5e551011-0000-4000-8000-000000000001";

/// Writes one line of kind `x.kind`, a node with `uuid` under `parent`, as Claude
/// Code writes them. Returns the line.
fn node(x: &Spec, uuid: &str, parent: Option<&str>, st: &Style) -> String {
    let s = |v: &str| st.string(v);
    let (a, b, n, flag) = (x.a.as_str(), x.b.as_str(), x.n, x.flag);
    let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
    let head = |ty: &str| {
        vec![
            ("parentUuid", parent.clone()),
            ("isSidechain", "false".into()),
            ("type", format!("\"{ty}\"")),
            ("uuid", format!("\"{uuid}\"")),
            ("timestamp", "\"2026-12-01T06:11:38.093Z\"".into()),
            ("sessionId", format!("\"{SID}\"")),
        ]
    };
    let text_block = |t: &str| st.object(&[("type", s("text")), ("text", s(t))]);
    let image = |data: &str, mime: String| {
        st.object(&[
            ("type", s("image")),
            (
                "source",
                st.object(&[
                    ("type", s("base64")),
                    ("media_type", mime),
                    ("data", s(data)),
                ]),
            ),
        ])
    };
    let user = |content: String, extra: Vec<(&'static str, String)>| {
        let mut f = head("user");
        f.push((
            "message",
            st.object(&[("role", s("user")), ("content", content)]),
        ));
        f.extend(extra);
        st.object(&f)
    };
    let assistant = |blocks: Vec<String>, extra: Vec<(&'static str, String)>| {
        let mut f = head("assistant");
        f.push((
            "message",
            st.object(&[
                ("id", s(if flag { "msg_01" } else { "msg_02" })),
                ("role", s("assistant")),
                ("model", s("claude-opus-5-5")),
                ("content", st.array(blocks)),
                (
                    "stop_reason",
                    match n % 4 {
                        0 => s("max_tokens"),
                        1 => s("end_turn"),
                        2 => "null".into(),
                        _ => s(b),
                    },
                ),
            ]),
        ));
        f.extend(extra);
        st.object(&f)
    };
    let attachment = |a_obj: String, extra: Vec<(&'static str, String)>| {
        let mut f = head("attachment");
        f.push(("attachment", a_obj));
        f.extend(extra);
        st.object(&f)
    };
    let system = |fields: Vec<(&'static str, String)>| {
        let mut f = head("system");
        f.extend(fields);
        st.object(&f)
    };
    let list = |items: &[&str]| st.array(items.iter().map(|i| s(i)).collect());
    match x.kind {
        0 => user(s(a), vec![]),
        1 => user(st.array(vec![text_block(a), text_block(b)]), vec![]),
        2 => user(s(a), vec![("isMeta", "true".into())]),
        3 => user(s(a), vec![("isCompactSummary", flag.to_string())]),
        4 => assistant(vec![text_block(a)], vec![]),
        5 => assistant(
            vec![st.object(&[
                (
                    "type",
                    s(if flag {
                        "thinking"
                    } else {
                        "redacted_thinking"
                    }),
                ),
                ("thinking", s(a)),
                ("signature", s("sig")),
            ])],
            vec![],
        ),
        // A tool call: its result is the next line (kind 7 under it).
        6 => assistant(
            vec![st.object(&[
                ("type", s(if flag { "tool_use" } else { "mcp_tool_use" })),
                ("id", s("toolu_01")),
                ("name", s(a)),
                (
                    "input",
                    st.object(&[("command", s(b)), ("n", st.number(n)), ("l", list(&[a]))]),
                ),
            ])],
            vec![],
        ),
        7 => user(
            st.array(vec![st.object(&[
                ("type", s("tool_result")),
                ("tool_use_id", s("toolu_01")),
                (
                    "content",
                    if flag {
                        s(b)
                    } else {
                        st.array(vec![
                            text_block(b),
                            image(&base64(a.as_bytes()), s("image/png")),
                        ])
                    },
                ),
                ("is_error", flag.to_string()),
            ])]),
            vec![("toolUseResult", st.object(&[("stdout", s(b))]))],
        ),
        // A spilled tool result: its full output is in tool-results/.
        8 => user(
            st.array(vec![st.object(&[
                ("type", s("tool_result")),
                ("tool_use_id", s("toolu_01")),
                ("content", s(a)),
            ])]),
            vec![(
                "toolUseResult",
                st.object(&[(
                    "persistedOutputPath",
                    s(&format!(
                        "/home/dev/.claude/x/{SID}/tool-results/out-{uuid}.txt"
                    )),
                )]),
            )],
        ),
        9 => user(
            st.array(vec![
                text_block(a),
                image(
                    &base64(b.as_bytes()),
                    if flag { s("image/jpeg") } else { st.number(n) },
                ),
            ]),
            vec![],
        ),
        10 => assistant(
            vec![text_block(a)],
            vec![("isApiErrorMessage", "true".into())],
        ),
        11 => user("null".into(), vec![]),
        12 => assistant(vec![text_block(if flag { "" } else { " \n" })], vec![]),
        13 => system(vec![
            ("subtype", s("turn_duration")),
            ("durationMs", st.number(n)),
            (
                "messageCount",
                if flag {
                    st.number(n / 7)
                } else {
                    "null".into()
                },
            ),
        ]),
        14 => system(vec![
            ("subtype", s("compact_boundary")),
            ("content", s(a)),
            (
                "compactMetadata",
                st.object(&[
                    ("trigger", s(b)),
                    ("preTokens", st.number(n)),
                    (
                        "preservedMessages",
                        st.object(&[(
                            "uuids",
                            list(&["u1", "u2", "u3"][..n.rem_euclid(4) as usize]),
                        )]),
                    ),
                ]),
            ),
        ]),
        15 => system(vec![("subtype", s(a)), ("content", s(b))]),
        16 => system(vec![("subtype", s("informational")), ("level", s(a))]),
        17 => attachment(
            st.object(&[
                ("type", s("agent_listing_delta")),
                ("addedLines", list(&[a, b])),
                ("removedTypes", list(&[b])),
                ("isInitial", flag.to_string()),
                ("showConcurrencyNote", "true".into()),
            ]),
            vec![],
        ),
        18 => attachment(
            st.object(&[("type", s("skill_listing")), ("content", s(a))]),
            vec![],
        ),
        19 => attachment(
            st.object(&[
                (
                    "type",
                    s(if flag {
                        "task_reminder"
                    } else {
                        "todo_reminder"
                    }),
                ),
                (
                    "content",
                    st.array(vec![st.object(&[
                        ("id", st.number(n)),
                        ("status", s(a)),
                        ("subject", s(b)),
                        ("content", s(b)),
                    ])]),
                ),
            ]),
            vec![],
        ),
        20 => attachment(
            st.object(&[
                ("type", s(if flag { "file" } else { "new_file" })),
                ("filename", s(a)),
                ("truncated", (n % 2 == 0).to_string()),
                (
                    "content",
                    if n % 3 == 0 {
                        st.object(&[
                            ("type", s("image")),
                            (
                                "file",
                                st.object(&[
                                    ("base64", s(&base64(b.as_bytes()))),
                                    ("type", s("image/gif")),
                                ]),
                            ),
                        ])
                    } else {
                        st.object(&[
                            ("type", s("text")),
                            (
                                "file",
                                st.object(&[("content", s(b)), ("startLine", st.number(n % 50))]),
                            ),
                        ])
                    },
                ),
            ]),
            vec![],
        ),
        21 => {
            let ty = [
                "compact_file_reference",
                "opened_file_in_ide",
                "agent_mention",
                "date_change",
                "critical_system_reminder",
            ][(n.unsigned_abs() % 5) as usize];
            attachment(
                st.object(&[
                    ("type", s(ty)),
                    ("filename", s(a)),
                    ("agentType", s(b)),
                    ("newDate", s(b)),
                    ("content", s(a)),
                ]),
                vec![],
            )
        }
        22 => attachment(
            st.object(&[
                ("type", s("nested_memory")),
                ("content", st.object(&[("path", s(a)), ("content", s(b))])),
            ]),
            vec![],
        ),
        23 => attachment(
            st.object(&[
                (
                    "type",
                    s(if flag {
                        "plan_file_reference"
                    } else {
                        "hook_stopped_continuation"
                    }),
                ),
                ("planFilePath", s(a)),
                ("planContent", s(b)),
                ("hookName", s(a)),
                ("message", s(b)),
            ]),
            vec![],
        ),
        24 => attachment(
            st.object(&[
                ("type", s("hook_additional_context")),
                ("hookName", s(a)),
                ("content", list(&[b, a])),
            ]),
            vec![],
        ),
        25 => attachment(
            st.object(&[
                ("type", s("queued_command")),
                (
                    "prompt",
                    if flag {
                        st.array(vec![
                            text_block(a),
                            image(&base64(b.as_bytes()), s("image/webp")),
                        ])
                    } else {
                        s(a)
                    },
                ),
            ]),
            vec![],
        ),
        // 2.1.332: the texts sent, stored with the line.
        26 => attachment(
            st.object(&[("type", s(a)), ("x", st.number(n))]),
            vec![
                (
                    "rendered",
                    st.array(vec![st.object(&[(
                        "content",
                        if flag {
                            s(&format!("<system-reminder>\n{b}\n</system-reminder>"))
                        } else {
                            st.array(vec![text_block(b)])
                        },
                    )])]),
                ),
                (
                    "renderedRole",
                    s(if n % 2 == 0 { "user" } else { "system" }),
                ),
            ],
        ),
        27 => attachment(
            st.object(&[
                ("type", s("prompt_snapshot")),
                ("cliPrefix", s(a)),
                ("systemPrompt", list(&[b, a])),
                (
                    "tools",
                    st.array(vec![st.object(&[
                        ("name", s(a)),
                        (
                            "schema",
                            st.object(&[
                                ("description", s(b)),
                                (
                                    "input_schema",
                                    st.object(&[
                                        ("type", s("object")),
                                        (
                                            "properties",
                                            st.object(&[(
                                                "p",
                                                st.object(&[
                                                    ("type", s(b)),
                                                    ("description", s(a)),
                                                    ("maxLength", st.number(n)),
                                                ]),
                                            )]),
                                        ),
                                        ("required", list(&["p"])),
                                    ]),
                                ),
                            ]),
                        ),
                    ])]),
                ),
                ("fastMode", flag.to_string()),
            ]),
            vec![],
        ),
        28 => attachment(
            st.object(&[("type", s(a)), ("data", s(b)), ("n", st.number(n))]),
            vec![],
        ),
        _ => {
            let mut f = head(if flag { "mystery" } else { "summary" });
            f.push(("summary", s(a)));
            f.push(("n", st.number(n)));
            st.object(&f)
        }
    }
}

/// The full output of a spilled tool result (kind 8) of line `uuid`, in
/// `tool-results/` beside the session: text the line does not hold (and the line's,
/// on another line of the file). Without `flag`, the line names a file that is not
/// there (the mount shows none).
fn spill(dir: &Path, x: &Spec, uuid: &str) {
    if x.kind != 8 || !x.flag {
        return;
    }
    let out = dir.join(SID).join("tool-results");
    fs::create_dir_all(&out).unwrap();
    fs::write(
        out.join(format!("out-{uuid}.txt")),
        format!("{}\n{}", x.b, x.a),
    )
    .unwrap();
}

/// A session directory: the session file (its lines chained, a reply of two lines of
/// one `message.id`, a progress and a metadata line), a subagent's transcript under
/// the first tool call, and the spilled results' full outputs.
fn write_session(dir: &Path, specs: &[Spec], side: &[Spec], st: &Style) {
    let mut lines = Vec::new();
    let mut parent: Option<String> = None;
    let mut spawner: Option<String> = None;
    for (k, x) in specs.iter().enumerate() {
        let uuid = format!("00000000-0000-4000-8000-{k:012}");
        lines.push(node(x, &uuid, parent.as_deref(), st));
        spill(dir, x, &uuid);
        if x.kind == 6 && spawner.is_none() {
            spawner = Some(uuid.clone());
        }
        if k == 1 {
            lines.push(format!(
                "{{\"type\":\"progress\",\"uuid\":\"p-{uuid}\",\"parentUuid\":\"{uuid}\",\"data\":{}}}",
                st.string(&x.b)
            ));
        }
        parent = Some(uuid);
    }
    lines.push(format!(
        "{{\"type\":\"last-prompt\",\"lastPrompt\":{},\"sessionId\":\"{SID}\"}}",
        st.string(&specs[0].a)
    ));
    fs::write(dir.join(format!("{SID}.jsonl")), lines.join("\n") + "\n").unwrap();
    if let Some(spawner) = spawner
        && !side.is_empty()
    {
        let sub = dir.join(SID).join("subagents");
        fs::create_dir_all(&sub).unwrap();
        fs::write(
            sub.join("agent-a1.meta.json"),
            r#"{"agentType":"general-purpose","description":"d","toolUseId":"toolu_01"}"#,
        )
        .unwrap();
        let _ = spawner;
        let mut lines = Vec::new();
        let mut parent: Option<String> = None;
        for (k, x) in side.iter().enumerate() {
            let uuid = format!("00000000-0000-4000-9000-{k:012}");
            spill(dir, x, &uuid);
            let l = node(x, &uuid, parent.as_deref(), st)
                .replacen("\"isSidechain\":false", "\"isSidechain\":true", 1)
                .replacen("\"isSidechain\": false", "\"isSidechain\": true", 1);
            lines.push(l);
            parent = Some(uuid);
        }
        fs::write(sub.join("agent-a1.jsonl"), lines.join("\n") + "\n").unwrap();
    }
}

/// `sessionfs grep PATTERN` over the session in `dir` ([`props::grep`]).
fn grep(dir: &Path, p: &Pattern, mode: Mode, prefiltered: bool) -> Vec<u8> {
    let file = dir.join(format!("{SID}.jsonl"));
    props::grep(&file, &CLAUDE, p, mode, prefiltered)
}

/// One case: the session written, every content file of every entry rendered, and
/// for each cut (with `-c` or not, from a full output or any file) the search with
/// the prefilter printing what it prints with every entry rendered.
fn check(
    specs: &[Spec],
    side: &[Spec],
    st: &Style,
    cuts: &[(Cut, bool, bool)],
) -> Result<(), TestCaseError> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write_session(dir, specs, side, st);
    let file = dir.join(format!("{SID}.jsonl"));
    props::detected(&fs::read(&file).unwrap(), &CLAUDE)?;
    let Ok(s) = Session::open(&file) else {
        return Ok(());
    };
    // Every content file of every entry: its KIND file and its full output.
    let mut texts: Vec<Vec<u8>> = Vec::new();
    let mut outputs: Vec<Vec<u8>> = Vec::new();
    for i in 0..s.entries().len() as u32 {
        if !s.entry(i).is_node() {
            continue;
        }
        let c = entry_content(&s, i).unwrap();
        texts.push(c.text);
        if let Some(p) = c.full_output {
            outputs.push(fs::read(p).unwrap());
        }
    }
    let all: Vec<&[u8]> = texts.iter().chain(&outputs).map(Vec::as_slice).collect();
    let outputs: Vec<&[u8]> = outputs.iter().map(Vec::as_slice).collect();
    for (c, counted, from_output) in cuts {
        // Half the patterns from a full output (what its line does not hold), if any.
        let from = if *from_output && !outputs.is_empty() {
            &outputs
        } else {
            &all
        };
        props::check_search(&file, &CLAUDE, from, c, *counted, "an entry", &|| {
            format!("session:\n{}", fs::read_to_string(&file).unwrap())
        })?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: props::cases(256), ..ProptestConfig::default() })]

    #[test]
    fn the_claude_code_prefilter_keeps_every_entry_whose_rendering_matches(
        specs in prop::collection::vec(spec(), 1..8),
        side in prop::collection::vec(spec(), 0..3),
        st in props::plain_or_style(),
        cuts in prop::collection::vec((props::cut(), any::<bool>(), any::<bool>()), 1..5),
    ) {
        check(&specs, &side, &st, &cuts)?;
    }
}

/// The raw scan's candidate lines of `raw` (by number), for the session file
/// `session` (`None`: a scan that does not know where the session is).
fn scanned(pf: &Prefilter, raw: &[u8], session: Option<&Path>) -> Vec<usize> {
    let mut out = Vec::new();
    pf.scan_in(raw, 0, &mut out, session, None);
    let starts: Vec<u64> = std::iter::once(0)
        .chain(
            raw.iter()
                .enumerate()
                .filter(|(_, c)| **c == b'\n')
                .map(|(k, _)| k as u64 + 1),
        )
        .collect();
    out.iter()
        .map(|o| starts.iter().position(|s| s == o).unwrap())
        .collect()
}

/// The comparison sees a dropped entry: a prefilter that ignores the tool name a
/// result takes from its call's line finds fewer.
#[test]
fn the_check_can_fail() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = |kind: u8, a: &str, b: &str| Spec {
        kind,
        a: a.into(),
        b: b.into(),
        n: 1,
        flag: true,
    };
    write_session(
        tmp.path(),
        &[
            spec(0, "hi", ""),
            spec(6, "Zebratool", "ls"),
            spec(7, "", "out"),
        ],
        &[],
        &props::plain(),
    );
    let p = Pattern::new("Zebratool", Syntax::Fixed, false, false).unwrap();
    let all = grep(tmp.path(), &p, Mode::Count, false);
    let text = String::from_utf8_lossy(&all);
    assert!(text.contains("/toolResult:1\n"), "{text}");
    assert_eq!(all, grep(tmp.path(), &p, Mode::Count, true));
    // The raw scan alone selects only the call's line: the result's entry is found
    // only because the children of a candidate are rendered (`Rules::parent_text`).
    let raw = fs::read(tmp.path().join(format!("{SID}.jsonl"))).unwrap();
    let pf = Prefilter::new(&p.required, &CLAUDE, false, false);
    assert_eq!(
        scanned(&pf, &raw, None),
        [1],
        "only the tool call's line holds the name"
    );
}

/// A spilled result's line is selected for what its full output holds, which the
/// line does not: only by looking into the file it names, where the mount finds it.
#[test]
fn a_spilled_output_is_looked_into() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = |kind: u8, a: &str, b: &str, flag: bool| Spec {
        kind,
        a: a.into(),
        b: b.into(),
        n: 1,
        flag,
    };
    write_session(
        tmp.path(),
        &[
            spec(0, "hi", "", true),
            spec(0, "there", "", true),
            spec(8, "head of the output", "Zebra in the file", true),
            spec(8, "a result", "Zebra nowhere", false),
        ],
        &[],
        &props::plain(),
    );
    let session = tmp.path().join(format!("{SID}.jsonl"));
    let raw = fs::read(&session).unwrap();
    let p = Pattern::new("zebra", Syntax::Fixed, true, false).unwrap();
    let all = grep(tmp.path(), &p, Mode::Lines, false);
    let text = String::from_utf8_lossy(&all);
    assert!(
        text.contains("/full-output:1:Zebra in the file\n"),
        "{text}"
    );
    assert_eq!(all, grep(tmp.path(), &p, Mode::Lines, true));
    let pf = Prefilter::new(&p.required, &CLAUDE, true, false);
    // Lines: two user lines, a progress line, the two results, the last prompt.
    assert_eq!(scanned(&pf, &raw, Some(&session)), [3], "the file is read");
    // Found where the mount finds it: beside another session file, it is not.
    let elsewhere = tmp.path().join("elsewhere.jsonl");
    assert!(scanned(&pf, &raw, Some(&elsewhere)).is_empty());
    // Without the session's place, or with -c (every file listed), both are kept.
    assert_eq!(scanned(&pf, &raw, None), [3, 4]);
    let counting = Prefilter::new(&p.required, &CLAUDE, true, true);
    assert_eq!(scanned(&counting, &raw, Some(&session)), [3, 4]);
    // A file without the pattern's literals leaves its line out.
    let q = Pattern::new("giraffe", Syntax::Fixed, false, false).unwrap();
    let pf = Prefilter::new(&q.required, &CLAUDE, false, false);
    assert!(scanned(&pf, &raw, Some(&session)).is_empty());
}
