//! What Qwen Code's renderer adds to the text of its records, for `sessionfs grep`'s
//! prefilter (`crate::model::core::grep` says what each part of a [`Rules`] is for).
//!
//! Qwen Code's KIND files (`super::render::render_entry`, the parts through
//! `crate::model::core::genai`) are made of the record's own strings plus:
//!
//! * **made-up text**: the markers of parts (`[thinking]`, `[tool call NAME (ID)]`,
//!   `[tool result NAME (ID)]`, `[error]`, image placeholders), a user record's
//!   `[SUBTYPE]`, what a `system` record says of itself (a compression's heading and
//!   the `## ROLE` of its contents, a rewind's, a title's, an API response's line),
//!   JSON shown indented (a call's arguments, a response that is no text, a payload):
//!   [`Decoration`]s, each with the raw-line conditions ([`Trigger`]s) under which it
//!   is written;
//! * **numbers it computes**: an image's number and size, counts with thousands
//!   separators (`20,517 tokens`): [`Rules::derived_numbers`] (numbers of indented
//!   JSON are the line's own, written as JavaScript writes them: the prefilter knows
//!   those);
//! * **other lines**: a fragment (a later line with the uuid of an earlier record) adds
//!   its parts to the first line's KIND file. The fragment's line holds them, but the
//!   hit is shown under the first line's entry: the search renders a candidate's entry
//!   from the index, which joins them;
//! * **other files**: a subagent's transcript
//!   (`projects/<p>/subagents/<sessionId>/agent-*.jsonl`), shown under the call that
//!   spawned it, is scanned raw with the same rules ([`Rules::side_files`]).

use crate::model::core::grep::{Decoration, Rules, Trigger, deco};
use crate::model::core::scan::LineHead;
use std::path::{Path, PathBuf};

const fn d(text: &'static str, when: &'static [Trigger]) -> Decoration {
    deco(text, when)
}

const fn m(r: &'static str) -> Trigger {
    Trigger::Matches(r)
}

/// A key or value `"V"` in the line.
macro_rules! has {
    ($v:literal) => {
        &[Trigger::Matches(concat!("\"", $v, "\""))]
    };
}

const THOUGHT: &[Trigger] = has!("thought");
const CALL: &[Trigger] = has!("functionCall");
const RESPONSE: &[Trigger] = has!("functionResponse");
const INLINE: &[Trigger] = has!("inlineData");
const FILE: &[Trigger] = has!("fileData");
const CODE: &[Trigger] = has!("executableCode");
const CODE_RESULT: &[Trigger] = has!("codeExecutionResult");
const VIDEO: &[Trigger] = has!("videoMetadata");
const SUBTYPE: &[Trigger] = has!("subtype");
const SYSTEM: &[Trigger] = has!("system");
const COMPRESSION: &[Trigger] = has!("chat_compression");
const REWIND: &[Trigger] = has!("rewind");
const TITLE: &[Trigger] = has!("custom_title");
const TELEMETRY: &[Trigger] = has!("ui_telemetry");
/// A record whose `message` is missing or no object.
const NO_MESSAGE: &[Trigger] = &[
    Trigger::Lacks("\"message\""),
    m(r#""message"\s*:\s*[^{\s]"#),
];
/// A record nested past the JSON parser's limit of 128 levels.
const TOO_DEEP: &[Trigger] = &[Trigger::Openers(128)];

/// Qwen Code's KIND files (`super::render`, `crate::model::core::genai`).
const DECORATIONS: &[Decoration] = &[
    // Indented JSON (a call's arguments, a response that is no text, a payload, an
    // unknown part or record), anywhere.
    d("\": ", &[]),
    d("\n  ", &[]),
    d("(no content)", &[]),
    d("[unknown record type: Qwen Code skips it]", &[]),
    // parts
    d("[thinking]", THOUGHT),
    d("[tool call ", CALL),
    d(" (", CALL),
    d(")]", CALL),
    d("[tool result ", RESPONSE),
    d(" (", RESPONSE),
    d(")]", RESPONSE),
    d("[error]", RESPONSE),
    // `[image N: MIME, SIZE bytes → image-N.EXT]`, `[file N: …]` for other data
    d("[image ", INLINE),
    d("[file ", INLINE),
    d(" ", INLINE),
    d(": ", INLINE),
    d(", ", INLINE),
    d(" bytes → image-", INLINE),
    d(" bytes]", INLINE),
    // `[image N: unknown type, …`: declared with what stands around it, so that a
    // word starting with `e` or ending in `u` does not read every image line.
    d(": unknown type, ", INLINE),
    // The extension always stands between `.` and `]`: declared with them, a word
    // ending in `g` or starting with `n` does not read every image line.
    d(".png]", INLINE),
    d(".jpg]", INLINE),
    d(".gif]", INLINE),
    d(".webp]", INLINE),
    d(".bin]", INLINE),
    // `[file data: URI (MIME)]`
    d("[file data: ", FILE),
    d(" (", FILE),
    d(")]", FILE),
    d("]", FILE),
    // `[code LANGUAGE]`, `[code result OUTCOME]`, `[video metadata]`
    d("[code ", CODE),
    d("]", CODE),
    d("[code result ", CODE_RESULT),
    d("]", CODE_RESULT),
    d("[video metadata]", VIDEO),
    d(
        "[no message: Qwen Code sends nothing for this record]",
        NO_MESSAGE,
    ),
    // a user record's `[SUBTYPE]`, a system record's `[SUBTYPE]` and `[system]`
    d("[", SUBTYPE),
    d("]", SUBTYPE),
    d("[system]", SYSTEM),
    // chat_compression
    d("[compression", COMPRESSION),
    d(" (", COMPRESSION),
    d(")", COMPRESSION),
    d(": ", COMPRESSION),
    d(" → ", COMPRESSION),
    d(" tokens]", COMPRESSION),
    d("?", COMPRESSION),
    d(",", COMPRESSION),
    d("[the history from here on starts with these ", COMPRESSION),
    d(" contents]", COMPRESSION),
    d("## ", COMPRESSION),
    d(
        "[no compressed history: Qwen Code does not use it]",
        COMPRESSION,
    ),
    // rewind
    d("[rewind: ", REWIND),
    d(
        " history entries dropped; the conversation goes on from the record before]",
        REWIND,
    ),
    // custom_title
    d("[title", TITLE),
    d(", ", TITLE),
    d("]", TITLE),
    // ui_telemetry
    d("[api response ", TELEMETRY),
    d(": input ", TELEMETRY),
    d(" (cached ", TELEMETRY),
    d("), output ", TELEMETRY),
    d(" (thoughts ", TELEMETRY),
    d("), ", TELEMETRY),
    d(" ms]", TELEMETRY),
    d("[api error ", TELEMETRY),
    d(" (status ", TELEMETRY),
    d(")]", TELEMETRY),
    d("[tool call ", TELEMETRY),
    d(" (", TELEMETRY),
    d("): ", TELEMETRY),
    d(", ", TELEMETRY),
    d("[telemetry ", TELEMETRY),
    d("]", TELEMETRY),
    d("[ui_telemetry]", TELEMETRY),
    d("?", TELEMETRY),
    d(",", TELEMETRY),
    // an entry too deeply nested to be built (model::content)
    d("[this entry cannot be shown: line ", TOO_DEEP),
    d(": recursion limit exceeded at line ", TOO_DEEP),
    d(" column ", TOO_DEEP),
    d("; its raw line is in entry.json]", TOO_DEEP),
];

/// Lines where numbers are written that are not the line's own digits: images (their
/// number and size), counts with separators (compressions, API responses: in
/// `systemPayload`), the line number of an entry too deep. (The numbers of JSON shown
/// indented, a call's arguments or a response, are the line's own, written as
/// JavaScript does: the prefilter selects by itself the lines whose numbers are written
/// otherwise, `1.0` as `1`, `1e2` as `100`.)
const DERIVED_NUMBERS: &[Trigger] = &[
    m(r#""inlineData""#),
    m(r#""systemPayload""#),
    Trigger::Openers(128),
];

/// Qwen Code's session files (no header; recognised by their first line as the index
/// recognises them).
pub static QWEN: Rules = Rules {
    name: "qwen-code",
    decorations: DECORATIONS,
    derived_numbers: DERIVED_NUMBERS,
    derived_ids: false,
    always: &[],
    binary_content: INLINE,
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

/// The rules of a file whose first parsed line is `line`, if it is Qwen Code's.
pub fn detect(line: &[u8], _head: &LineHead) -> Option<&'static Rules> {
    super::looks_like_qwen(line).then_some(&QWEN)
}

/// The subagent transcripts whose records the session shows.
fn side_files(path: &Path) -> Vec<PathBuf> {
    super::side_files(path)
}
