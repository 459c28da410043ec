//! What Copilot CLI's renderer adds to the text of its lines, for `sessionfs grep`'s
//! prefilter (`crate::model::core::grep` says what each part of a [`Rules`] is for).
//!
//! A session's KIND files ([`super::render::entry_text`]) are made of the event's own
//! strings plus:
//!
//! * **Made-up text**: the first lines in brackets of each kind (`[result (ID)]`,
//!   `[error (ID): CODE]`, `[details]`, `[reasoning]`, `[call NAME (ID): SUMMARY]`,
//!   `[compaction: checkpoint N (FILE), R of L messages summarized, A -> B tokens]`,
//!   `[interrupted: REASON]`, `[error TYPE (HTTP N)]`, `[warning TYPE]`, `[info TYPE]`,
//!   `[subagent NAME (AGENT) completed: …]`, `[TYPE]` of an event shown as JSON),
//!   `(no content)`, and a non-image attachment's `[attachment TYPE: PATH (MIME)]`:
//!   [`Decoration`]s with the raw-line conditions ([`Trigger`]s) under which they are
//!   written.
//! * **JSON written again**: a call's `arguments` and an unknown event's `data` are
//!   pretty-printed (`": `, indentation); their numbers are written as JavaScript does,
//!   and the counts of a compaction or a subagent's end with thousands separators
//!   ([`Rules::derived_numbers`]).
//! * **Images**: a prompt's image is decoded from another line of the same file (its
//!   `session.binary_asset`, stored once, before the first prompt naming it, named
//!   again by later prompts), which the raw scan of the prompt's line cannot look
//!   into: the prompt shows its image (`image-N.EXT`, the asset's base64 decoded) and
//!   a line `[image-N.EXT: PATH (MIME, SIZE bytes)]` with the asset's MIME type (else
//!   its own) and the decoded size. The asset lines are [`Held`] content: a prompt
//!   naming an asset is a candidate when its own line is one, or when an asset line of
//!   the file may match (its strings, or its decoded bytes); it is then left to the
//!   session (which reads the asset) rather than rendered from its line. A search for
//!   a literal no asset holds opens no session for its images.
//!
//! Every other line (bookkeeping: `session.start`, `system.message`, usage records, …)
//! has no KIND file: a candidate among them is dropped when its content is found empty
//! ([`Rules::line_content`]); each entry's KIND file follows from its own line, so
//! candidates are confirmed before the session is indexed.

use super::events::{self, Ev, Line};
use super::render;
use crate::model::core::content::Content;
use crate::model::core::grep::{Decoration, Held, HitPaths, Rules, Trigger, deco};
use crate::model::core::scan::LineHead;
use serde_json::Value;

const fn d(text: &'static str, when: &'static [Trigger]) -> Decoration {
    deco(text, when)
}

const fn m(r: &'static str) -> Trigger {
    Trigger::Matches(r)
}

// The CLI writes compact JSON; a line written otherwise (spaces around `:`) is read
// the same, so the triggers allow them. (A type spelled with escapes makes its line a
// candidate anyway: the prefilter's rule for escapes JavaScript would not write.)
const ASSISTANT: &[Trigger] = &[m(r#""type"\s*:\s*"assistant\.message""#)];
const CALLS: &[Trigger] = &[m(r#""toolRequests"\s*:\s*\["#)];
const REASONING: &[Trigger] = &[m(r#""reasoningText""#)];
const RESULT: &[Trigger] = &[m(r#""type"\s*:\s*"tool\.execution_complete""#)];
const DETAILS: &[Trigger] = &[m(r#""detailedContent""#)];
const COMPACTION: &[Trigger] = &[m(r#""type"\s*:\s*"session\.compaction_complete""#)];
const ABORT: &[Trigger] = &[m(r#""type"\s*:\s*"abort""#)];
const ERROR: &[Trigger] = &[m(r#""type"\s*:\s*"session\.error""#)];
const WARNING: &[Trigger] = &[m(r#""type"\s*:\s*"session\.warning""#)];
const INFO: &[Trigger] = &[m(r#""type"\s*:\s*"session\.info""#)];
const SUBAGENT: &[Trigger] = &[m(r#""type"\s*:\s*"subagent\.(?:completed|failed)""#)];
const ATTACHMENTS: &[Trigger] = &[m(r#""attachments"\s*:\s*\[\s*\{"#)];
/// A prompt naming an image asset (an asset's own line names itself too). A key
/// spelled with escapes makes its line a candidate anyway.
const NAMES_ASSET: &[Trigger] = &[m(r#""assetId""#)];
/// An image asset's line.
const ASSET: &[Trigger] = &[m(r#""type"\s*:\s*"session\.binary_asset""#)];
/// Events shown as `[TYPE]` and their data as JSON: those of no other kind (any line
/// may be one; the brackets are never in a fragment anyway).
const AS_JSON: &[Trigger] = &[];
/// An entry nested past the JSON parser's limit of 128 levels.
const TOO_DEEP: &[Trigger] = &[Trigger::Openers(128)];

/// Copilot CLI's KIND files (`super::render::entry_text`).
const DECORATIONS: &[Decoration] = &[
    // pretty-printed JSON (a call's arguments, an event's data)
    d("\": ", &[]),
    d("\n  ", &[]),
    // user: a non-image attachment
    d("[attachment ", ATTACHMENTS),
    d(": ", ATTACHMENTS),
    d(" (", ATTACHMENTS),
    d(")]", ATTACHMENTS),
    d("]", ATTACHMENTS),
    d("?", ATTACHMENTS),
    // user: an image, `[image-N.EXT: PATH (MIME, SIZE bytes)]`
    d("[image-", NAMES_ASSET),
    d(".png: ", NAMES_ASSET),
    d(".jpg: ", NAMES_ASSET),
    d(".gif: ", NAMES_ASSET),
    d(".webp: ", NAMES_ASSET),
    d(".bin: ", NAMES_ASSET),
    d(" (", NAMES_ASSET),
    d(", ", NAMES_ASSET),
    d(" bytes)]", NAMES_ASSET),
    // assistant: reasoning, calls, nothing at all
    d("[reasoning]", REASONING),
    d("(no content)", ASSISTANT),
    d("[call ", CALLS),
    d(" (", CALLS),
    d(")", CALLS),
    d(": ", CALLS),
    d("]", CALLS),
    // tool results
    d("[result (", RESULT),
    d("[error (", RESULT),
    d(")]", RESULT),
    d("): ", RESULT),
    d("]", RESULT),
    d("[details]", DETAILS),
    // compaction
    d("[compaction", COMPACTION),
    d(": checkpoint ", COMPACTION),
    d(" (", COMPACTION),
    d(")", COMPACTION),
    d(", ", COMPACTION),
    d(" of ", COMPACTION),
    d(" messages summarized", COMPACTION),
    d(" -> ", COMPACTION),
    d(" tokens", COMPACTION),
    d("]", COMPACTION),
    // notices
    d("[interrupted: ", ABORT),
    d("]", ABORT),
    d("[error ", ERROR),
    d(" (HTTP ", ERROR),
    d(")]", ERROR),
    d("]", ERROR),
    d("[warning ", WARNING),
    d("]", WARNING),
    d("[info ", INFO),
    d("]", INFO),
    // a subagent's end
    d("[subagent ", SUBAGENT),
    d(" (", SUBAGENT),
    d(")", SUBAGENT),
    d(" completed", SUBAGENT),
    d(" failed", SUBAGENT),
    d(": ", SUBAGENT),
    d(" tool call", SUBAGENT),
    d("s", SUBAGENT),
    d(", ", SUBAGENT),
    d(" tokens", SUBAGENT),
    d(" ms", SUBAGENT),
    d("]", SUBAGENT),
    // an event shown as JSON
    d("[", AS_JSON),
    d("]", AS_JSON),
    // an entry too deeply nested to be built (model::content)
    d("[this entry cannot be shown: line ", TOO_DEEP),
    d(": recursion limit exceeded at line ", TOO_DEEP),
    d(" column ", TOO_DEEP),
    d("; its raw line is in entry.json]", TOO_DEEP),
];

/// Counts with thousands separators (a compaction, a subagent's end), an image's
/// number and size, and the line number of an entry too deep. (Numbers of JSON written again, a call's arguments or
/// an event's data, are objects of the line, written as JavaScript does: the prefilter
/// selects the lines whose numbers are written otherwise by itself.)
const DERIVED_NUMBERS: &[Trigger] = &[
    COMPACTION[0],
    SUBAGENT[0],
    NAMES_ASSET[0],
    Trigger::Openers(128),
];

/// Copilot CLI's `events.jsonl` (recognised by its first line, an event).
pub static COPILOT: Rules = Rules {
    name: "copilot",
    decorations: DECORATIONS,
    derived_numbers: DERIVED_NUMBERS,
    derived_ids: false,
    always: &[],
    binary_content: &[],
    line_content: Some(line_content),
    side_files: None,
    parent_text: false,
    spilled: None,
    no_entries_before: None,
    hit_paths: Some(HitPaths::Direct(super::hitpath::paths)),
    // No binary content in a line's own entry: images are held by asset lines.
    alone: None,
    held: Some(Held {
        names: NAMES_ASSET,
        holds: ASSET,
    }),
    shown: Some(shown),
};

/// Whether a line may be shown: every line but those the index files as bookkeeping
/// (`super::index`, by the same head: the system prompt a request carried, 61% of the
/// bench home's Copilot CLI bytes; token records; the `model.*` and other events of
/// no conversation). Every KIND file follows from its own line and the assets it
/// names (`super::render`), and an asset line stays shown. A line whose head does
/// not parse is kept.
pub fn shown(line: &[u8]) -> bool {
    LineHead::parse(line).map_or(true, |h| {
        !matches!(
            events::classify(h.ty.as_str().unwrap_or("")),
            Line::System | Line::Usage | Line::Other
        )
    })
}

/// The rules of a file whose first parsed line is `line` (read as `head`), if it is a
/// Copilot CLI event (as the agents' table detects it).
pub fn detect(line: &[u8], head: &LineHead) -> Option<&'static Rules> {
    let ty = head.ty.as_str()?;
    if matches!(events::classify(ty), Line::Entry(Ev::Unknown)) {
        return None;
    }
    super::agent::looks_like_copilot(line).then_some(&COPILOT)
}

/// A line's KIND file, from the line alone: empty for a line that is no entry; `None`
/// for a prompt with an image (its session reads the asset) or a line that does not
/// parse into a value (nested too deep: the session says what is shown).
fn line_content(line: &[u8]) -> Option<Content> {
    let v: Value = crate::model::core::js::parse_line(line).ok()?;
    let ty = v.get("type").and_then(Value::as_str).unwrap_or("");
    let Line::Entry(ev) = events::classify(ty) else {
        return Some(Content {
            text: Vec::new(),
            images: Vec::new(),
            full_output: None,
        });
    };
    let images = v
        .pointer("/data/attachments")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(super::context::is_image));
    if images {
        return None;
    }
    let (text, _) = render::entry_text(ev, &v, &|_| None);
    Some(Content {
        text: text.into_bytes(),
        images: Vec::new(),
        full_output: None,
    })
}
