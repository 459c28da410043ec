//! What Codex's renderer adds to the text of its lines, for `sessionfs grep`'s
//! prefilter (`crate::model::core::grep` says what each part of a [`Rules`] is for).
//!
//! A Codex thread's KIND files (`super::render::line_text`) are made of the
//! line's own strings plus text from these places, each listed here so that only
//! candidate lines are rendered:
//!
//! * **Made-up text**: the headings `[call NS.NAME (CALL_ID)]` (`?` for a call
//!   without a name) and `[output (CALL_ID)]`, an image's `[image: image-N.EXT]` (its
//!   extension derived from the MIME type: `jpg`, `bin`) or `[image: URL…]` for a URL
//!   that is not a `data:` one (cut at 80 characters), `[reasoning: encrypted, no
//!   summary]`, `null` for an output or payload that is missing, and the indentation of
//!   pretty-printed JSON: [`Decoration`]s, each with the raw-line conditions
//!   ([`Trigger`]s) under which it is written.
//! * **JSON inside a JSON string**: a call's `arguments` (and a custom tool's `input`)
//!   are a JSON *string* holding JSON, which the renderer parses and pretty-prints. The
//!   raw line holds that JSON escaped once more: what the inner JSON spells with an
//!   escape (`\u00e9`, `\u0041`, `\/`) is written `\\u00e9`, `\\u0041`, `\\/` in the
//!   raw line, and rendered as `é`, `A`, `/`. Raw bytes cannot see through that: the
//!   existing escape check (prefilter rule 4) takes `\\u` for an escaped backslash
//!   followed by a `u`. So a line holding `\\u` or `\\/` is always a candidate
//!   ([`Rules::always`]; they are rare). The inner escapes of `"`, `\` and control
//!   characters are written back the same way by the pretty-printer, and a fragment
//!   never holds those characters. Numbers of the inner JSON are re-written (`1.50` →
//!   `1.5`): a fragment with a digit also selects call lines ([`Rules::derived_numbers`]).
//! * **A compaction** (`compacted`) renders its replacement history as one-line
//!   previews: labels (`user: `, `call NS.NAME: `, `output CALL_ID: `, …), whitespace
//!   collapsed (a message's texts joined by a space) and text cut with `…`, JSON
//!   re-written compactly. None of that puts a fragment (no whitespace, JSON
//!   punctuation or escape) in the text that the line does not hold, except where
//!   it overlaps the labels, a space or the `…`: those are decorations of compaction
//!   lines. (A compaction was always a candidate; rendering each, some 14 KB of JSON
//!   built per line, was a fifth of a search for a word found nowhere.)
//! * **Decoded images**: binary content files, found by decoding the base64 of a
//!   `"image_url":"data:…;base64,…"` string ([`Rules::binary_content`]).
//!
//! Lines that are not entries (`session_meta`, `event_msg`, `turn_context`,
//! `world_state`, token records, unknown types, broken lines) have no KIND file: a
//! candidate among them is dropped when its content is found empty
//! ([`Rules::line_content`]), and the index indexes nothing of them ([`page::shown`]:
//! 70% of the bytes of the bench's threads: the 20 KB `session_meta` of each page,
//! `turn_context`, the settings, `event_msg`s and token records). A line's KIND file follows from the line alone, so
//! candidates are searched before the thread is indexed; those with images are left to
//! the session, which names their files as the mount does.
//!
//! A thread is several files: the scan reads every page of the thread and the base pages
//! its history reads (a rewind's or a fork's, [`Rules::side_files`]). A compressed page
//! (`.jsonl.zst`) cannot be scanned raw: a thread with one is searched without the
//! prefilter.
//!
//! **What a search costs beyond the scan** (measured with `perf` on
//! `scripts/bench-grep-codex`'s home of 1,848 pages): every page starts with a
//! `session_meta` line of some 20 KB (the base instructions). It is read and walked
//! once per page and search (`codex::head`): the catalog takes the `cwd` from it (on
//! every CPU), the scan the format ([`surely_codex`], no second detection) and the
//! side files the `history_base` ([`base_of`]); the scan then passes over it
//! ([`Rules::no_entries_before`]). A page several threads show (a thread's first page
//! is the base of its forks and rewinds) is scanned once per search
//! (`session::Scans`). A one-page thread with a hit is not opened: its hits' paths are
//! read from the lines before them ([`super::hitpath`]). A thread of several
//! pages with a hit is indexed whole; with `codex::files::list_once` the threads a
//! search opens share one listing of the home. What is left, for a word found
//! nowhere: the head pass (reading each first line and validating it) and the scan.

use super::{files, head, page, render};
use crate::model::core::content::Content;
use crate::model::core::grep::{Decoration, HitPaths, Rules, Trigger, deco};
use crate::model::core::scan::LineHead;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const fn d(text: &'static str, when: &'static [Trigger]) -> Decoration {
    deco(text, when)
}

const fn m(r: &'static str) -> Trigger {
    Trigger::Matches(r)
}

/// `function_call` and `custom_tool_call` (not their outputs).
const CALL: &[Trigger] = &[m(r#""(?:function|custom_tool)_call""#)];
const OUTPUT: &[Trigger] = &[m(r#""(?:function|custom_tool)_call_output""#)];
const REASONING: &[Trigger] = &[m(r#""reasoning""#)];
const IMAGE: &[Trigger] = &[m(r#""image_url""#)];
/// A line whose payload (or an output) is missing or `null`; an unknown payload type
/// is pretty-printed whole.
const NULL_OR_UNKNOWN: &[Trigger] = &[m(r#"null"#), Trigger::Lacks(r#""payload""#)];
/// An escape inside JSON held in a JSON string (see the module docs).
const ALWAYS: &[Trigger] = &[m(r#"\\\\[u/]"#)];
/// A compaction (its replacement history's previews).
const COMPACTED: &[Trigger] = &[m(r#""compacted""#)];
/// An entry nested past the JSON parser's limit of 128 levels.
const TOO_DEEP: &[Trigger] = &[Trigger::Openers(128)];
/// An entry of more values than a line may hold parsed (`input::check_values`).
const TOO_MANY: &[Trigger] = &[Trigger::Longer(crate::model::core::input::COUNTED_FROM)];

/// Codex's KIND files (`super::render`).
const DECORATIONS: &[Decoration] = &[
    // pretty-printed JSON (a call's arguments, an unknown payload)
    d("\": ", &[]),
    d("\n  ", &[]),
    // function_call, custom_tool_call: `[call NS.NAME (CALL_ID)]`
    d("[call ", CALL),
    d(".", CALL),
    d("?", CALL),
    d(" (", CALL),
    d(")]", CALL),
    // function_call_output: `[output (CALL_ID)]`, `null` for a missing output
    d("[output (", OUTPUT),
    d(")]", OUTPUT),
    d("null", OUTPUT),
    d("null", NULL_OR_UNKNOWN),
    // reasoning without a summary
    d("[reasoning: encrypted, no summary]", REASONING),
    // images: `[image: image-N.EXT]`, `[image: URL…]`
    d("[image: ", IMAGE),
    d("]", IMAGE),
    d("image-", IMAGE),
    d(".", IMAGE),
    // The extension always stands between `.` and `]`: declared with them, a word
    // ending in `g` or starting with `n` does not read every image line.
    d(".jpg]", IMAGE),
    d(".bin]", IMAGE),
    d("…", IMAGE),
    // compacted: its heading, then one preview per item of its replacement history,
    // `- KIND: TEXT`, `- call NAME: ARGS`, `- output CALL_ID: TEXT`, `- reasoning:
    // TEXT`, `- TYPE: JSON`, a message's images counted ` [N image(s)]`; each text
    // with its whitespace collapsed (the texts of a message joined by a space) and cut
    // with `…`; a kind made up for a message without a role (`unknown`) or one Codex
    // wrote (`meta`), a call without a name (`?`), a missing output (`null`). Within
    // one text, a fragment (no whitespace, JSON punctuation or escapes) is the line's.
    d(
        "[compaction: what follows replaces the history before it]",
        COMPACTED,
    ),
    d("[replacement history: ", COMPACTED),
    d(" items]", COMPACTED),
    d("- ", COMPACTED),
    d(": ", COMPACTED),
    d(" ", COMPACTED),
    d("…", COMPACTED),
    d(" [", COMPACTED),
    d(" image(s)]", COMPACTED),
    d("call ", COMPACTED),
    d("output ", COMPACTED),
    d("reasoning: ", COMPACTED),
    d("meta", COMPACTED),
    d("unknown", COMPACTED),
    d("?", COMPACTED),
    d(".", COMPACTED),
    d("null", COMPACTED),
    // an entry too deeply nested to be built (model::content)
    d("[this entry cannot be shown: line ", TOO_DEEP),
    d(": recursion limit exceeded at line ", TOO_DEEP),
    d(" column ", TOO_DEEP),
    d("; its raw line is in entry.json]", TOO_DEEP),
    // an entry of too many values to be built (`input::check_values`)
    d("[this entry cannot be shown: line ", TOO_MANY),
    d(": ", TOO_MANY),
    d(" values, more than a line may hold parsed (", TOO_MANY),
    d("; --max-line raises it)", TOO_MANY),
    d("; its raw line is in entry.json]", TOO_MANY),
];

/// Image numbers; the numbers of a call's arguments, re-written by the pretty-printer;
/// a compaction's item count; the line number of an entry too deep.
const DERIVED_NUMBERS: &[Trigger] = &[
    m(r#""image_url""#),
    m(r#""(?:function|custom_tool)_call""#),
    m(r#""compacted""#),
    Trigger::Openers(128),
    Trigger::Longer(crate::model::core::input::COUNTED_FROM),
];

/// Codex's page files (recognised by their first line, a `session_meta`).
pub static CODEX: Rules = Rules {
    name: "codex",
    decorations: DECORATIONS,
    derived_numbers: DERIVED_NUMBERS,
    derived_ids: false,
    always: ALWAYS,
    binary_content: IMAGE,
    line_content: Some(line_content),
    side_files: Some(side_files),
    parent_text: false,
    spilled: None,
    no_entries_before: Some(meta_end),
    hit_paths: Some(HitPaths::Direct(super::hitpath::paths)),
    alone: Some(alone),
    held: None,
    shown: Some(page::shown),
};

/// A line's KIND file and images from the line alone: for the index.
fn alone(line: &[u8]) -> Option<Content> {
    let mut b = Vec::with_capacity(line.len() + 1);
    b.extend_from_slice(line);
    b.push(b'\n');
    let parsed = page::parse(&b);
    let l = parsed.lines.first()?;
    let r = render::line_text(l);
    Some(Content {
        text: r.text.into_bytes(),
        images: r
            .images
            .into_iter()
            .map(|im| crate::model::core::text::Image {
                ext: "bin",
                data: im.bytes,
            })
            .collect(),
        full_output: None,
    })
}

/// The rules of a file whose first parsed line is `line` (read as `head`), if it is a
/// Codex page's `session_meta` ([`is_codex_head`]).
pub fn detect(line: &[u8], head: &LineHead) -> Option<&'static Rules> {
    is_codex_head(line, head).then_some(&CODEX)
}

/// The rules of the file at `path` when it is surely a Codex page ([`surely_codex`]).
pub fn known(path: &Path) -> Option<&'static Rules> {
    surely_codex(path).then_some(&CODEX)
}

/// A search begins: each Codex home is listed once for it, not once per thread
/// opened (`files::list_once`).
pub fn begin() {
    files::list_once();
}

/// Whether `line`, a file's first parsed line, read as `head`, is a Codex
/// `session_meta`: its top-level `type`, which the scan has read already (the line,
/// some 20 KB of instructions, is not parsed a second time), in a line of valid UTF-8
/// (`head` reads invalid bytes as U+FFFD; the index refuses them).
pub fn is_codex_head(line: &[u8], head: &LineHead) -> bool {
    head.ty.as_str() == Some("session_meta") && std::str::from_utf8(line).is_ok()
}

/// A line's KIND file, from the line alone: empty for a line that is no entry; `None`
/// for one with images (its session names them).
fn line_content(line: &[u8]) -> Option<Content> {
    // A line of too many values to build: the session says so, with its line number.
    crate::model::core::input::check_values(line).ok()?;
    let mut b = Vec::with_capacity(line.len() + 1);
    b.extend_from_slice(line);
    b.push(b'\n');
    let parsed = page::parse(&b);
    let l = parsed.lines.first()?;
    if !l.kind.is_node() {
        return Some(Content {
            text: Vec::new(),
            images: Vec::new(),
            full_output: None,
        });
    }
    let r = render::line_text(l);
    if !r.images.is_empty() {
        return None;
    }
    Some(Content {
        text: r.text.into_bytes(),
        images: Vec::new(),
        full_output: None,
    })
}

/// The pages of a Codex home, found once per process (a search walks each home once).
#[derive(Default)]
struct Home {
    /// Page id → its file.
    by_page: HashMap<String, PathBuf>,
    /// Thread id → its pages.
    by_thread: HashMap<String, Vec<PathBuf>>,
}

fn home_of(dir: &Path) -> std::sync::Arc<Home> {
    // One listing per home and search: the workers that meet the home at once wait
    // for the first one's listing rather than each making its own.
    type Slot = std::sync::Arc<OnceLock<std::sync::Arc<Home>>>;
    static HOMES: OnceLock<Mutex<HashMap<PathBuf, Slot>>> = OnceLock::new();
    let homes = HOMES.get_or_init(Default::default);
    let slot = homes.lock().entry(dir.to_path_buf()).or_default().clone();
    slot.get_or_init(|| list_home(dir)).clone()
}

fn list_home(dir: &Path) -> std::sync::Arc<Home> {
    let root = if dir.join("sessions").is_dir() {
        files::Root::Home(dir.to_path_buf())
    } else {
        files::Root::Dir(dir.to_path_buf())
    };
    let mut home = Home::default();
    for f in files::discover(&root) {
        home.by_page.insert(f.name.page_id.clone(), f.path.clone());
        home.by_thread
            .entry(f.name.thread_id.clone())
            .or_default()
            .push(f.path);
    }
    std::sync::Arc::new(home)
}

/// The page id a page's `session_meta.history_base` names, if any (as
/// `page::SessionMeta` reads it: `payload.history_base.thread_id`, with an
/// `end_byte_offset`), from its first line, read once per search (`codex::head`; a
/// compressed page is decompressed as far as that line, never whole).
fn base_of(path: &Path) -> Option<String> {
    head::head(path).base.clone()
}

/// Whether the file at `path` is surely a Codex page, from its name and its first
/// line as the search has read it already (`codex::head`, read once per search: the
/// catalog read it for the thread's project): then its format need not be detected
/// from its first line again. `false` says nothing.
pub fn surely_codex(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "jsonl")
        && files::listing_once()
        && path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(files::parse_file_name)
            .is_some()
        && head::head(path).surely_meta
}

/// The end of a page's first line when the search has read it as surely a
/// `session_meta` line (`codex::head`): no entry, so the scan need not read it again.
fn meta_end(path: &Path) -> Option<u64> {
    files::listing_once()
        .then(|| head::head(path).meta_len)
        .flatten()
}

/// The other files whose lines a thread opened from `path` shows: the thread's other
/// pages, and the base pages their histories read, recursively (a fork's parent).
fn side_files(path: &Path) -> Vec<PathBuf> {
    let Some(name) = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(files::parse_file_name)
    else {
        return Vec::new();
    };
    // `HOME/sessions/YYYY/MM/DD/page`, or pages in any folder below a `sessions/`.
    let top = path
        .ancestors()
        .find(|a| {
            a.file_name()
                .is_some_and(|n| n == "sessions" || n == "archived_sessions")
        })
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .or_else(|| path.parent().map(Path::to_path_buf));
    let Some(top) = top else {
        return Vec::new();
    };
    let home = home_of(&top);
    let mut seen: HashSet<PathBuf> = HashSet::from([path.to_path_buf()]);
    let mut out = Vec::new();
    let mut todo: Vec<PathBuf> = vec![path.to_path_buf()];
    for p in home.by_thread.get(&name.thread_id).into_iter().flatten() {
        if seen.insert(p.clone()) {
            out.push(p.clone());
            todo.push(p.clone());
        }
    }
    while let Some(p) = todo.pop() {
        if let Some(b) = base_of(&p).and_then(|id| home.by_page.get(&id))
            && seen.insert(b.clone())
        {
            out.push(b.clone());
            todo.push(b.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads() {
        let head = |l: &[u8]| LineHead::parse(l).is_ok_and(|h| is_codex_head(l, &h));
        assert!(head(
            br#"{"timestamp":"t","ordinal":0,"type":"session_meta","payload":{}}"#
        ));
        assert!(head(br#"{"type":"session_m\u0065ta","payload":{}}"#));
        assert!(!head(br#"{"type":"session","id":"x"}"#));
        assert!(!head(br#"{"payload":{"type":"session_meta"}}"#));
        assert!(!head(b"not json"));
        assert!(!head(
            b"{\"type\":\"session_meta\",\"payload\":{\"a\":\"\xff\"}}"
        ));
    }

    #[test]
    fn line_content_of_entries_and_bookkeeping() {
        let call = br#"{"timestamp":"t","ordinal":3,"type":"response_item","payload":{"type":"function_call","name":"exec","arguments":"{\"cmd\":\"ls\"}","call_id":"c1"}}"#;
        let c = line_content(call).unwrap();
        assert_eq!(
            String::from_utf8(c.text).unwrap(),
            "[call exec (c1)]\n{\n  \"cmd\": \"ls\"\n}\n"
        );
        let ev = br#"{"timestamp":"t","ordinal":4,"type":"event_msg","payload":{"type":"task_started"}}"#;
        assert!(line_content(ev).unwrap().text.is_empty());
        let img = br#"{"timestamp":"t","ordinal":5,"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,aGk="}]}}"#;
        assert!(line_content(img).is_none());
    }
}
