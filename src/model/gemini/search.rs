//! What Gemini CLI's renderer adds to the text of its records, for `sessionfs grep`'s
//! prefilter (`crate::model::core::grep` says what each part of a [`Rules`] is for).
//!
//! An entry's KIND file (`super::render`, with the parts of `core::genai`) is made of
//! the strings of one record plus text from these places, each listed here with the
//! raw-line conditions ([`Trigger`]s) under which it is written:
//!
//! * markers: `[thinking]` and the `**SUBJECT** ` of a live record's thoughts,
//!   `[tool call NAME (ID)]`, `[status: …]`, `[subagent agent-…]`, `[tool result NAME
//!   (ID)]`, `[error]`, `[image N: MIME, LEN bytes → image-N.EXT]` (or `[file N: …]`,
//!   `unknown type`), `[file data: URI (MIME)]`, `[code …]`, `[code result …]`,
//!   `[video metadata]`, the heading of a compaction's summary, `(no content)`;
//! * pretty-printed JSON: a call's arguments, a response that is not just an output
//!   or an error, a record of a type the CLI does not know;
//! * numbers it computes: an image's number and decoded length ([`Rules::derived_numbers`]);
//! * decoded images (`inlineData`): binary content files ([`Rules::binary_content`]).
//!
//! **A line is not always one entry.** A `$set.messages` line holds whole records
//! (every resume writes the history again), and the entries whose only record is such
//! a copy (the `<id>_response` records a resume derives, a compression's summary) show
//! it: their bytes lie inside the line. The search takes every entry inside a
//! candidate line (`search::session`). Which record an entry shows follows from the
//! replay (GEMINI-FORMAT §3), never from a line alone: there is no
//! [`Rules::line_content`], and hits are placed through the index.
//!
//! **Subagents** (`chats/<sessionId>/*.jsonl`) are entries of their session: scanned
//! with it ([`Rules::side_files`]).

use super::line::{self, Kind};
use crate::model::core::grep::{Decoration, Rules, Trigger, deco};
use crate::model::core::json_view::{Json, JsonObj, Tape};
use crate::model::core::scan::LineHead;
use std::path::{Path, PathBuf};

const fn d(text: &'static str, when: &'static [Trigger]) -> Decoration {
    deco(text, when)
}

const fn m(r: &'static str) -> Trigger {
    Trigger::Matches(r)
}

/// A live reply's thoughts, or a thought part.
const THOUGHT: &[Trigger] = &[m(r#""thought"#)];
/// Tool calls: a live reply's `toolCalls`, a `functionCall` part.
const CALL: &[Trigger] = &[m(r#""toolCalls"|"functionCall""#)];
const STATUS: &[Trigger] = &[m(r#""status""#)];
const AGENT: &[Trigger] = &[m(r#""agentId""#)];
const RESPONSE: &[Trigger] = &[m(r#""functionResponse""#)];
const IMAGE: &[Trigger] = &[m(r#""inlineData""#)];
const FILE_DATA: &[Trigger] = &[m(r#""fileData""#)];
const CODE: &[Trigger] = &[m(r#""executableCode""#)];
const CODE_RESULT: &[Trigger] = &[m(r#""codeExecutionResult""#)];
const VIDEO: &[Trigger] = &[m(r#""videoMetadata""#)];
const COMPACTION: &[Trigger] = &[m(r#"<state_snapshot>"#)];
/// An entry nested past the JSON parser's limit of 128 levels.
const TOO_DEEP: &[Trigger] = &[Trigger::Openers(128)];

/// Gemini CLI's KIND files (`super::render`, `core::genai::part_chunk`).
const DECORATIONS: &[Decoration] = &[
    // pretty-printed JSON (arguments, responses, a record of an unknown type, a part
    // that is no text)
    d("\": ", &[]),
    d("\n  ", &[]),
    // an entry with nothing to show
    d("(no content)", &[]),
    // thinking: `[thinking]`, `**SUBJECT** DESCRIPTION`
    d("[thinking]", THOUGHT),
    d("**", THOUGHT),
    d(" ", THOUGHT),
    // `[tool call NAME (ID)]`, its status and subagent
    d("[tool call ", CALL),
    d(" (", CALL),
    d(")]", CALL),
    d("[status: ", STATUS),
    d("]", STATUS),
    d("[subagent agent-", AGENT),
    d("]", AGENT),
    // `[tool result NAME (ID)]`, `[error]`
    d("[tool result ", RESPONSE),
    d(" (", RESPONSE),
    d(")]", RESPONSE),
    d("[error]", RESPONSE),
    // `[image N: MIME, LEN bytes → image-N.EXT]`, `[file N: …]`
    d("[image ", IMAGE),
    d("[file ", IMAGE),
    d(": ", IMAGE),
    d(", ", IMAGE),
    d(" bytes", IMAGE),
    d(" → image-", IMAGE),
    d(".", IMAGE),
    // The extension always stands between `.` and `]`: declared with them, a word
    // ending in `g` or starting with `n` does not read every image line.
    d(".jpg]", IMAGE),
    d(".bin]", IMAGE),
    d("]", IMAGE),
    // `[image N: unknown type, …`: declared with what stands around it, so that a
    // word starting with `e` or ending in `u` does not read every image line.
    d(": unknown type, ", IMAGE),
    // `[file data: URI (MIME)]`
    d("[file data: ", FILE_DATA),
    d(" (", FILE_DATA),
    d(")]", FILE_DATA),
    d("]", FILE_DATA),
    // `[code LANGUAGE]`, `[code result OUTCOME]`
    d("[code ", CODE),
    d("]", CODE),
    d("[code result ", CODE_RESULT),
    d("]", CODE_RESULT),
    d("[video metadata]", VIDEO),
    // the summary a compression starts the history from
    d(
        "[compaction: the history after it starts over from this summary]",
        COMPACTION,
    ),
    // an entry too deeply nested to be built (model::content)
    d("[this entry cannot be shown: line ", TOO_DEEP),
    d(": recursion limit exceeded at line ", TOO_DEEP),
    d(" column ", TOO_DEEP),
    d("; its raw line is in entry.json]", TOO_DEEP),
];

/// Image numbers and decoded lengths; the line number of an entry too deep.
const DERIVED_NUMBERS: &[Trigger] = &[m(r#""inlineData""#), Trigger::Openers(128)];

/// Gemini CLI's session files.
pub static GEMINI: Rules = Rules {
    name: "gemini-cli",
    decorations: DECORATIONS,
    derived_numbers: DERIVED_NUMBERS,
    derived_ids: false,
    always: &[],
    binary_content: IMAGE,
    line_content: None,
    side_files: Some(side_files),
    parent_text: false,
    spilled: None,
    no_entries_before: None,
    hit_paths: None,
    // No renderer of a line alone: the search's index keeps the base64 of a line
    // where binary content may be in its postings, and indexes the decoded bytes
    // of each string as the prefilter decodes them.
    alone: None,
    held: None,
    shown: None,
};

/// The rules of a file whose first parsed line is `line`, if it is Gemini CLI's (as
/// the index recognises it, [`super::agent::looks_like_gemini`]).
pub fn detect(line: &[u8], _head: &LineHead) -> Option<&'static Rules> {
    super::agent::looks_like_gemini(line).then_some(&GEMINI)
}

/// The subagents' files of the session file `path`: `chats/<sessionId>/*.jsonl`, the
/// session id read from its metadata line (the first line that has one).
pub fn side_files(path: &Path) -> Vec<PathBuf> {
    // The session id is the file's first lines' alone: kept between searches while the
    // file is as it was (`core::memo`), a `stat` rather than an `open` and a read.
    match crate::model::core::memo::get("gemini-side-sid", path, || side_session_id(path)) {
        Some(sid) => super::files::subagent_files(path, &sid),
        None => Vec::new(),
    }
}

/// The session id whose subagents' folder a session file's search reads: its
/// metadata's `sessionId` (`None` for a subagent's own file, or none in its first
/// lines).
fn side_session_id(path: &Path) -> Option<String> {
    use std::io::{BufRead, BufReader};
    let f = crate::model::core::input::open_regular(path).ok()?;
    let mut r = BufReader::new(f);
    let mut buf = Vec::new();
    // The metadata line is the first; a damaged file may have it a little later.
    for _ in 0..8 {
        buf.clear();
        if !matches!(r.read_until(b'\n', &mut buf), Ok(n) if n > 0) {
            break;
        }
        let raw = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let Some(t) = Tape::new(raw) else { continue };
        if let Kind::Meta(o) = line::kind_of(t.root()) {
            if o.get("kind").and_then(|k| k.as_str()).as_deref() == Some("subagent") {
                return None;
            }
            if let Some(sid) = o.get("sessionId").and_then(|v| v.as_str()) {
                return Some(sid.into_owned());
            }
        }
    }
    None
}
