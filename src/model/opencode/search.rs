//! What opencode's renderer adds to the text of its lines, for `sessionfs grep`'s
//! prefilter (`crate::model::core::grep` says what each part of a [`Rules`] is for).
//!
//! An opencode session is no file: its lines are the messages as the index writes
//! them into memory (`super::line`: each message's rows, byte for byte, and what the
//! mount shows of it because of other rows: `"deleted"`, `"subagent"`). The search
//! reads those lines, once the session is read, and prefilters them with these rules
//! before rendering the candidates (`crate::search`: a session that lives in a file
//! with others).
//!
//! A KIND file (`super::render::render`) is made of the line's own strings plus:
//!
//! * **Made-up text**: markers (`[reasoning]`, `[synthetic]`, `[tool call NAME
//!   (CALL_ID)]`, `[tool result …]`, `[tool error …]`, `[exit N]`, `[compaction:
//!   automatic]`, `[patch: …]`, `[error NAME: MESSAGE]`, `[compaction summary]`,
//!   `[image N: …]`, `[file …]`, `[deleted by opencode …]`, `[subagent session …]`,
//!   `[hidden by /undo …]`, `[damaged …]`), each keyed to the raw text that makes it appear; the indentation
//!   of pretty-printed JSON (a tool's input); `(no content)`.
//! * **Numbers it computes**: an image's number and size ([`Rules::derived_numbers`]).
//! * **Decoded images**: binary content files ([`Rules::binary_content`]).
//!
//! JSON strings are written back with the escapes opencode's `JSON.stringify` used
//! (a tool's input, re-indented), so a fragment found in the rendering is found in the
//! line.

use crate::model::core::grep::{Decoration, Rules, Trigger, deco};
use crate::model::core::scan::LineHead;
use std::path::Path;

const fn d(text: &'static str, when: &'static [Trigger]) -> Decoration {
    deco(text, when)
}

const fn m(r: &'static str) -> Trigger {
    Trigger::Matches(r)
}

const ANY: &[Trigger] = &[];
const HIDDEN: &[Trigger] = &[m(r#""hidden":true"#)];
const DELETED: &[Trigger] = &[m(r#""deleted":\{"#)];
const SUBAGENT: &[Trigger] = &[m(r#""subagent":\{"#)];
const DAMAGED: &[Trigger] = &[m(r#""damaged":"#)];
const DAMAGED_PARTS: &[Trigger] = &[m(r#""damagedParts":"#)];
const ERROR: &[Trigger] = &[m(r#""error""#)];
const SUMMARY: &[Trigger] = &[m(r#""summary""#)];
const SYNTHETIC: &[Trigger] = &[m(r#""synthetic""#)];
const IGNORED: &[Trigger] = &[m(r#""ignored""#)];
const REASONING: &[Trigger] = &[m(r#""reasoning""#)];
const DATA_URL: &[Trigger] = &[m(r#""data:"#)];
const FILE: &[Trigger] = &[m(r#""file""#)];
const TOOL: &[Trigger] = &[m(r#""tool""#)];
const EXIT: &[Trigger] = &[m(r#""exit""#)];
const COMPACTED: &[Trigger] = &[m(r#""compacted""#)];
const COMPACTION: &[Trigger] = &[m(r#""compaction""#)];
const PATCH: &[Trigger] = &[m(r#""patch""#)];
const SUBTASK: &[Trigger] = &[m(r#""subtask""#)];
const AGENT: &[Trigger] = &[m(r#""agent""#)];
const RETRY: &[Trigger] = &[m(r#""retry""#)];

/// opencode's KIND files (`super::render`).
const DECORATIONS: &[Decoration] = &[
    // Pretty-printed JSON (a tool's input, an unknown part).
    d("\": ", ANY),
    d("\n  ", ANY),
    d("(no content)", ANY),
    // An unknown part type.
    d("[part ", ANY),
    d("]", ANY),
    d(
        "[hidden by /undo: opencode deletes this message at the next prompt (/redo brings it back)]",
        HIDDEN,
    ),
    // Where the message is.
    d(
        "[deleted by opencode: an /undo, then a new prompt, removed this message; shown from opencode's event log; no agent can continue from it]",
        DELETED,
    ),
    d("[subagent session ", SUBAGENT),
    d(": ", SUBAGENT),
    d("]", SUBAGENT),
    d(
        "[damaged: the message's data is not JSON; opencode cannot continue the session]",
        DAMAGED,
    ),
    d("[damaged part ", DAMAGED_PARTS),
    d(": not a JSON object]", DAMAGED_PARTS),
    // The message.
    d("[error ", ERROR),
    d(": ", ERROR),
    d("]", ERROR),
    d("[compaction summary]", SUMMARY),
    // Parts.
    d("[synthetic]", SYNTHETIC),
    d("[ignored]", IGNORED),
    d("[reasoning]", REASONING),
    d("[image ", DATA_URL),
    d(": ", DATA_URL),
    d(", ", DATA_URL),
    d(" bytes → image-", DATA_URL),
    // The extension always stands between `.` and `]`: declared with them, a word
    // ending in `g` or starting with `n` does not read every image line.
    d(".png]", DATA_URL),
    d(".jpg]", DATA_URL),
    d(".gif]", DATA_URL),
    d(".webp]", DATA_URL),
    d(".bin]", DATA_URL),
    d("]", DATA_URL),
    d("[file ", FILE),
    d("(unnamed)", FILE),
    d(": ", FILE),
    d(", ", FILE),
    d(" bytes]", FILE),
    d("[tool call ", TOOL),
    d(" (", TOOL),
    d(")]", TOOL),
    d("[tool result ", TOOL),
    d("[tool error ", TOOL),
    d("[tool ", TOOL),
    d("): ", TOOL),
    d("no state", TOOL),
    d("]", TOOL),
    d("[exit ", EXIT),
    d("]", EXIT),
    d(
        "[output pruned by opencode: sent as \"[Old tool result content cleared]\"]",
        COMPACTED,
    ),
    d("[compaction: ", COMPACTION),
    d("automatic", COMPACTION),
    d("/compact", COMPACTION),
    d(", after a request too large for the model", COMPACTION),
    d("]", COMPACTION),
    d("[patch: ", PATCH),
    d(", ", PATCH),
    d("]", PATCH),
    d("[subtask]", SUBTASK),
    d("[agent ", AGENT),
    d("]", AGENT),
    d("[retry ", RETRY),
    d("]", RETRY),
];

/// opencode's messages (`super::render`).
pub static OPENCODE: Rules = Rules {
    name: "opencode",
    decorations: DECORATIONS,
    // An image's number and size.
    derived_numbers: &[m(r#""data:"#), m(r#""file""#)],
    derived_ids: false,
    always: &[],
    binary_content: &[m(r#""data:"#)],
    line_content: None,
    side_files: None,
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

/// The rules of a session whose path names it in an opencode database (`DB/ses_…`).
pub fn known(path: &Path) -> Option<&'static Rules> {
    let name = path.file_name()?.to_str()?;
    let db = path.parent()?;
    (name.starts_with("ses_") && std::fs::metadata(db).is_ok_and(|m| m.is_file()))
        .then_some(&OPENCODE)
}

/// The rules of a line that is an opencode message as the index writes it.
pub fn detect(line: &[u8], _head: &LineHead) -> Option<&'static Rules> {
    line.starts_with(br#"{"info":{"id":"msg_"#)
        .then_some(&OPENCODE)
}
