//! What Pi's renderer adds to the text of its lines, for `sessionfs grep`'s prefilter
//! (`crate::model::core::grep` says what each part of a [`Rules`] is for), and where
//! a hit is without the full index ([`super::hitpath`]).
//!
//! Pi's KIND files are its lines' own strings plus headings and placeholders
//! (`[thinking]`, `[tool call NAME (ID)]`, `(no content)`), numbers it computes (an
//! image's size), file extensions derived from a MIME type, and one-line summaries of
//! system messages that collapse whitespace (always candidates). Files of format
//! version 3, the current one, render each line on its own, so a candidate is
//! confirmed before the file is indexed, and a file's hits are placed by a map of ids
//! built from its raw lines; older versions are migrated when read (v2 renames a
//! role; v1 derives ids from positions, which then appear in rendered text), so their
//! lines need the session.

use crate::model::core::grep::{Decoration, HitPaths, Rules, Trigger, deco};
use crate::model::core::scan::{Field, LineHead};

const THINKING: &[Trigger] = &[Trigger::Matches(r#""thinking""#)];
const TOOL_CALL: &[Trigger] = &[Trigger::Matches(r#""toolCall""#)];
const ERROR_MESSAGE: &[Trigger] = &[Trigger::Matches(r#""errorMessage""#)];
const STOP_REASON: &[Trigger] = &[Trigger::Matches(
    r#""stopReason"[ \t\r]*:[ \t\r]*"(?:error|aborted|length)""#,
)];
/// `isError` with any value but `false` (the renderer tests JavaScript truthiness).
const IS_ERROR: &[Trigger] = &[Trigger::Matches(
    r#""isError"[ \t\r]*:[ \t\r]*(?:[^f \t\r]|f[^a])"#,
)];
const BASH: &[Trigger] = &[Trigger::Matches(r#""bashExecution""#)];
const IMAGE: &[Trigger] = &[Trigger::Matches(r#""image""#)];
const COMPACTION: &[Trigger] = &[Trigger::Matches(r#""compaction""#)];
const BRANCH_SUMMARY: &[Trigger] = &[Trigger::Matches(r#""branch_summary""#)];
const MODEL_CHANGE: &[Trigger] = &[Trigger::Matches(r#""model_change""#)];
const LABEL: &[Trigger] = &[Trigger::Matches(r#""label""#)];
const SESSION_INFO: &[Trigger] = &[Trigger::Matches(r#""session_info""#)];
/// No content: `content` null, `[]`, or missing.
const NO_CONTENT: &[Trigger] = &[
    Trigger::Matches(r#""content"[ \t\r]*:[ \t\r]*(?:null|\[[ \t\r]*\])"#),
    Trigger::Lacks(r#""content""#),
];
/// Pi 1.6's `context_edit` and `usage` entries.
const CONTEXT_EDIT: &[Trigger] = &[Trigger::Matches(r#""context_edit""#)];
/// `"usage"` as a value (the entry's type), not as the key every assistant message has.
const USAGE: &[Trigger] = &[Trigger::Matches(r#""usage"[ \t\r]*[,}\]]"#)];
/// Pi 1.6's system messages (`"role":"system"`), and the system prompt a compaction
/// records (`"systemMessage"`): their one-line summaries (`[system message: text
/// "…"; sections …; tools +…]`) collapse whitespace and cut the text short, so the
/// rendered text is not the line's. Both hold a string starting `"system`, a literal
/// the scan finds in the same pass as the fragment.
const REWRITTEN: &[Trigger] = &[Trigger::Matches(r#""system"#)];
/// An entry nested past the JSON parser's limit of 128 levels.
const TOO_DEEP: &[Trigger] = &[Trigger::Openers(128)];
/// An entry of more values than a line may hold parsed (`input::check_values`).
const TOO_MANY: &[Trigger] = &[Trigger::Longer(crate::model::core::input::COUNTED_FROM)];

/// Image numbers and sizes; the line numbers of entries too deep to be built.
const DERIVED_NUMBERS: &[Trigger] = &[
    Trigger::Matches(r#""image""#),
    Trigger::Openers(128),
    Trigger::Longer(crate::model::core::input::COUNTED_FROM),
];

const fn d(text: &'static str, when: &'static [Trigger]) -> Decoration {
    deco(text, when)
}

/// Pi's KIND files (`super::render::render_entry`, through `super::content`).
const PI_DECORATIONS: &[Decoration] = &[
    // Indented JSON (tool-call arguments, custom data, unknown entries): the
    // space after a key's colon and the indentation are the only text added.
    d("\": ", &[]),
    d("\n  ", &[]),
    // assistant
    d("[thinking]", THINKING),
    d("[thinking, redacted]", THINKING),
    d("[tool call ", TOOL_CALL),
    d(" (", TOOL_CALL),
    d(")]", TOOL_CALL),
    d("[error] ", ERROR_MESSAGE),
    d("[stop reason: ", STOP_REASON),
    // toolResult
    d("[error]\n", IS_ERROR),
    // bashExecution
    d("$ ", BASH),
    d("[cancelled]", BASH),
    d("[exit code ", BASH),
    d("[output truncated; full output: ", BASH),
    d("[output truncated]", BASH),
    d("[excluded from context]", BASH),
    // image placeholders: `[image N: MIME, SIZE bytes → image-N.EXT]`
    d("[image ", IMAGE),
    d(": ", IMAGE),
    d(", ", IMAGE),
    d(" bytes → image-", IMAGE),
    d(" byte → image-", IMAGE),
    // `[image N: unknown type, …`: declared with what stands around it, so that a
    // word starting with `e` or ending in `u` does not read every image line.
    d(": unknown type, ", IMAGE),
    // The extension always stands between `.` and `]`: declared with them, a word
    // ending in `g` or starting with `n` does not read every image line.
    d(".png]", IMAGE),
    d(".jpg]", IMAGE),
    d(".gif]", IMAGE),
    d(".webp]", IMAGE),
    d(".bin]", IMAGE),
    // compaction, branch_summary
    d("[compaction: ", COMPACTION),
    d(" tokens before, kept from ", COMPACTION),
    d(" tokens before]", COMPACTION),
    d("[compaction: kept from ", COMPACTION),
    d("[compaction]", COMPACTION),
    d(" tokens before", COMPACTION),
    d(", keeps nothing]", COMPACTION),
    d(": keeps nothing]", COMPACTION),
    d("[branch summary from ", BRANCH_SUMMARY),
    d("[branch summary]", BRANCH_SUMMARY),
    // model_change: `provider/modelId`
    d("/", MODEL_CHANGE),
    // label
    d("label ", LABEL),
    d(" → ", LABEL),
    d("label cleared → ", LABEL),
    // session_info
    d("(name cleared)", SESSION_INFO),
    // context_edit (Pi 1.6); its replacement's content is rendered as a message's
    d("[context edit of ", CONTEXT_EDIT),
    d(": removes it from the context]", CONTEXT_EDIT),
    d(": no replacement, so Pi cannot apply it]", CONTEXT_EDIT),
    d(": its content in the context becomes]", CONTEXT_EDIT),
    d(
        ": a replacement without content, which leaves it without content]",
        CONTEXT_EDIT,
    ),
    // usage (Pi 1.6): `[usage KIND: PROVIDER/MODEL]`, the note, then
    // `tokens: N input, N output, N cache read, N cache write, N total` and
    // `cost: $T (N input, …)`
    d("[usage ", USAGE),
    d(": ", USAGE),
    d("/", USAGE),
    d("tokens: ", USAGE),
    d(" input", USAGE),
    d(" output", USAGE),
    d(" cache read", USAGE),
    d(" cache write", USAGE),
    d(" total", USAGE),
    d(", ", USAGE),
    d("cost: $", USAGE),
    d("cost: $?", USAGE),
    d(" (", USAGE),
    d(")", USAGE),
    // any message or custom_message without content
    d("(no content)", NO_CONTENT),
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

/// Pi's sessions of format version 3, the current one: entries are read as written.
pub static PI: Rules = Rules {
    name: "pi",
    decorations: PI_DECORATIONS,
    derived_numbers: DERIVED_NUMBERS,
    always: REWRITTEN,
    binary_content: IMAGE,
    line_content: Some(super::content::line_content),
    derived_ids: false,
    side_files: None,
    parent_text: false,
    spilled: None,
    no_entries_before: None,
    hit_paths: Some(HitPaths::Map(&super::hitpath::MAP)),
    alone: Some(super::content::line_content),
    held: None,
    shown: None,
};

/// Pi's sessions of format version 2: entries are migrated when read (a role
/// renamed), so a line's content is known only through its session.
pub static PI_V2: Rules = Rules {
    name: "pi-v2",
    decorations: PI_DECORATIONS,
    derived_numbers: DERIVED_NUMBERS,
    always: REWRITTEN,
    binary_content: IMAGE,
    line_content: None,
    derived_ids: false,
    side_files: None,
    parent_text: false,
    spilled: None,
    no_entries_before: None,
    hit_paths: None,
    alone: Some(super::content::line_content),
    held: None,
    shown: None,
};

/// Pi's sessions of format version 1 (no ids on disk): entries get ids derived from
/// their position when read, and those appear in rendered text (a compaction's `kept
/// from ID`, the indented JSON of an entry type Pi does not know).
pub static PI_V1: Rules = Rules {
    name: "pi-v1",
    decorations: PI_DECORATIONS,
    derived_numbers: DERIVED_NUMBERS,
    always: REWRITTEN,
    binary_content: IMAGE,
    line_content: None,
    derived_ids: true,
    side_files: None,
    parent_text: false,
    spilled: None,
    no_entries_before: None,
    hit_paths: None,
    alone: Some(super::content::line_content),
    held: None,
    shown: None,
};

/// The rules of a file whose first parsed line is `line` (read as `head`), if it is a
/// Pi header: by its version, as `Session::open` reads it (a version that is not a
/// number is current).
pub fn detect(_line: &[u8], head: &LineHead) -> Option<&'static Rules> {
    if !head.is_header() {
        return None;
    }
    match head.version {
        Field::Num(n) if n >= 3.0 => Some(&PI),
        Field::Num(n) if n >= 2.0 => Some(&PI_V2),
        Field::Str(_) | Field::Other { .. } => Some(&PI),
        _ => Some(&PI_V1),
    }
}
