//! What Claude Code's renderer adds to the text of its lines, for `sessionfs grep`'s
//! prefilter (`crate::model::core::grep` says what each part of a [`Rules`] is for).
//!
//! Claude Code's KIND files (`super::render::render_entry`, through
//! `crate::model::core::content`) are made of the line's own strings plus text from four other
//! places, each listed here so that only candidate lines are rendered:
//!
//! * **Made-up text** (headings, labels, placeholders, the sentences Claude Code sends
//!   for an attachment): [`Decoration`]s, each with the raw-line conditions
//!   ([`Trigger`]s) under which it can be written. Those of an attachment are keyed to
//!   its type, as its templates are (`super::api::attachment_messages`).
//! * **Numbers it computes**: an image's size and number, a turn's duration in
//!   seconds, the messages a compaction keeps, the line numbers of a file an
//!   attachment shows, a todo's position, a reply's part and part count
//!   (`[part N of M of reply ID]`, counted over the other lines of its `message.id`):
//!   [`Rules::derived_numbers`].
//! * **Other lines** (`extra`): a tool result names the tool of the call it answers,
//!   taken from its parent's line. [`Rules::parent_text`]: a line whose parent is a
//!   candidate is one too (the tool's name is a string of the parent's line, so a
//!   fragment of it is found there). The part header of a reply split over several
//!   lines takes only its count from the others (above); its id is the line's own.
//! * **Other files**: a subagent's transcript (`<session>/subagents/agent-*.jsonl`),
//!   whose entries are shown under the entry that spawned it, is scanned raw with the
//!   same prefilter ([`Rules::side_files`]); a tool result whose output was spilled to
//!   `<session>/tool-results/` (`persistedOutputPath`) has that file as `full-output`,
//!   searched as is, which the line does not hold: such a line is a candidate when
//!   that file holds one of the pattern's literals ([`Rules::spilled`]), the file
//!   found as the mount finds it (`super::full_output_path`). Its KIND file
//!   names the file with text of the line and decorations, as any other.
//!
//! Dropped text needs nothing: the `<system-reminder>` wrapper an attachment's text
//! loses leaves a piece of the line's string. Terminal escape sequences are dropped
//! only from `tree`'s previews, which are not searched.

use crate::model::core::grep::{Decoration, Rules, Spilled, Trigger, deco};
use crate::model::core::scan::LineHead;
use std::path::{Path, PathBuf};

const fn d(text: &'static str, when: &'static [Trigger]) -> Decoration {
    deco(text, when)
}

const fn m(r: &'static str) -> Trigger {
    Trigger::Matches(r)
}

/// A JSON string value `"V"` as the type of something (`"type":"V"` or any key).
macro_rules! ty {
    ($v:literal) => {
        &[Trigger::Matches(concat!("\"", $v, "\""))]
    };
}

/// The lines whose rendering is `(no content)` when what they show is blank: user
/// and assistant lines, system lines (a subtype without text) and attachments.
const MAY_BE_BLANK: &[Trigger] = &[m(r#""(?:user|assistant|system|attachment)""#)];
const ASSISTANT: &[Trigger] = &[m(r#""assistant""#)];
const META: &[Trigger] = ty!("isMeta");
const COMPACT_SUMMARY: &[Trigger] = ty!("isCompactSummary");
const API_ERROR: &[Trigger] = ty!("isApiErrorMessage");
const STOP_REASON: &[Trigger] = ty!("stop_reason");
const THINKING: &[Trigger] = &[m(r#"thinking""#)];
/// `tool_use`, `server_tool_use`, `mcp_tool_use`.
const TOOL_USE: &[Trigger] = &[m(r#"tool_use""#)];
const TOOL_RESULT: &[Trigger] = ty!("tool_result");
const IS_ERROR: &[Trigger] = ty!("is_error");
const IMAGE: &[Trigger] = ty!("image");
const PERSISTED: &[Trigger] = ty!("persistedOutputPath");
const TURN_DURATION: &[Trigger] = ty!("turn_duration");
const COMPACT_BOUNDARY: &[Trigger] = ty!("compact_boundary");
const ATTACHMENT: &[Trigger] = ty!("attachment");
const RENDERED_ROLE: &[Trigger] = ty!("renderedRole");
const PROMPT_SNAPSHOT: &[Trigger] = ty!("prompt_snapshot");
const AGENT_LISTING: &[Trigger] = ty!("agent_listing_delta");
const SKILL_LISTING: &[Trigger] = ty!("skill_listing");
const TASK_REMINDER: &[Trigger] = ty!("task_reminder");
const TODO_REMINDER: &[Trigger] = ty!("todo_reminder");
/// `file` and `new_file` attachments (the Read tool's call and result).
const FILE: &[Trigger] = &[m(r#""(?:new_)?file""#)];
const COMPACT_FILE_REFERENCE: &[Trigger] = ty!("compact_file_reference");
const NESTED_MEMORY: &[Trigger] = ty!("nested_memory");
const OPENED_FILE: &[Trigger] = ty!("opened_file_in_ide");
const PLAN_FILE: &[Trigger] = ty!("plan_file_reference");
const AGENT_MENTION: &[Trigger] = ty!("agent_mention");
const DATE_CHANGE: &[Trigger] = ty!("date_change");
const HOOK_CONTEXT: &[Trigger] = ty!("hook_additional_context");
const HOOK_STOPPED: &[Trigger] = ty!("hook_stopped_continuation");
/// An entry nested past the JSON parser's limit of 128 levels.
const TOO_DEEP: &[Trigger] = &[Trigger::Openers(128)];
/// An entry of more values than a line may hold parsed (`input::check_values`).
const TOO_MANY: &[Trigger] = &[Trigger::Longer(crate::model::core::input::COUNTED_FROM)];

/// Claude Code's KIND files (`super::render`, `super::api`).
const DECORATIONS: &[Decoration] = &[
    // Indented JSON (tool inputs, unknown lines and attachments, settings).
    d("\": ", &[]),
    d("\n  ", &[]),
    // A line whose text is blank.
    d("(no content)", MAY_BE_BLANK),
    // user
    d("[meta]", META),
    d("[compact summary]", COMPACT_SUMMARY),
    d("[full output: tool-results/", PERSISTED),
    d(" (as full-output)]", PERSISTED),
    // assistant: a reply split over several lines, errors, stop reasons
    d("[part ", ASSISTANT),
    d(" of ", ASSISTANT),
    d(" of reply ", ASSISTANT),
    d("]", ASSISTANT),
    d(
        "[error: the request failed; Claude Code does not send this reply]",
        API_ERROR,
    ),
    d("[stop reason: ", STOP_REASON),
    d("]", STOP_REASON),
    // blocks
    d("[thinking]", THINKING),
    d("[thinking, redacted]", THINKING),
    d("[tool call ", TOOL_USE),
    d(" (", TOOL_USE),
    d(")]", TOOL_USE),
    d("[tool result ", TOOL_RESULT),
    d(" (", TOOL_RESULT),
    d("(", TOOL_RESULT),
    d(")]", TOOL_RESULT),
    d("[error]", IS_ERROR),
    // images: `[image N: MIME, SIZE bytes → image-N.EXT]`, `[image N: MIME, SIZE bytes]`
    d("[image ", IMAGE),
    d(": ", IMAGE),
    d(", ", IMAGE),
    d(" bytes → image-", IMAGE),
    d(" bytes]", IMAGE),
    // an image without a type: `[image N: unknown type, …`, declared with what stands
    // around it, so that a word starting with `e` or ending in `u` does not read
    // every image line
    d(": unknown type, ", IMAGE),
    // The extension always stands between `.` and `]`: declared with them, a word
    // ending in `g` or starting with `n` does not read every image line.
    d(".png]", IMAGE),
    d(".jpg]", IMAGE),
    d(".gif]", IMAGE),
    d(".webp]", IMAGE),
    d(".bin]", IMAGE),
    // system. The decorations that start or end with a letter are declared with what
    // always stands beside them (a line end, punctuation), so that a word starting or
    // ending with that letter does not read every such line: a match never spans a
    // line end, and a fragment holds no punctuation. A turn's duration starts its
    // file: `turn took 1.5 s\n` or `turn took 1.5 s, 12 messages\n`.
    d("\nturn took ", TURN_DURATION),
    d(" s\n", TURN_DURATION),
    d(" s, ", TURN_DURATION),
    d(", ", TURN_DURATION),
    d(" messages\n", TURN_DURATION),
    d(".", TURN_DURATION),
    // `[compaction: T trigger, N tokens before, K messages kept]` (each part when
    // known), or `[compaction]`.
    d("[compaction: ", COMPACT_BOUNDARY),
    d("[compaction]", COMPACT_BOUNDARY),
    d(": ", COMPACT_BOUNDARY),
    d(" trigger, ", COMPACT_BOUNDARY),
    d(" trigger]", COMPACT_BOUNDARY),
    d(" tokens before, ", COMPACT_BOUNDARY),
    d(" tokens before]", COMPACT_BOUNDARY),
    d(" messages kept]", COMPACT_BOUNDARY),
    d(", ", COMPACT_BOUNDARY),
    d("]", COMPACT_BOUNDARY),
    // attachments: the heading, how it is sent, the wrapper of the texts
    d("[attachment ", ATTACHMENT),
    d("]", ATTACHMENT),
    // (each ends its heading, declared with its bracket)
    d(": not sent to the model]", ATTACHMENT),
    d(", sent as user text]", RENDERED_ROLE),
    d(", sent as system text]", RENDERED_ROLE),
    d("<system-reminder>", ATTACHMENT),
    d("</system-reminder>", ATTACHMENT),
    // a field the template wants and the attachment lacks (JavaScript's `${undefined}`)
    d("undefined", ATTACHMENT),
    // prompt_snapshot (2.1.332)
    d(
        "[attachment prompt_snapshot: not sent to the model; the system prompt and tools of the requests from here]",
        PROMPT_SNAPSHOT,
    ),
    d("[prompt prefix]", PROMPT_SNAPSHOT),
    d("[system prompt]", PROMPT_SNAPSHOT),
    d("[settings]", PROMPT_SNAPSHOT),
    d("[tool ", PROMPT_SNAPSHOT),
    d("]", PROMPT_SNAPSHOT),
    // (`core::text::render_tool`; those starting or ending with a letter declared with
    // what stands beside them: a line end, a bracket)
    d("\nparameters: none\n", PROMPT_SNAPSHOT),
    d("\nparameters:\n", PROMPT_SNAPSHOT),
    d(" (", PROMPT_SNAPSHOT),
    d(", required)", PROMPT_SNAPSHOT),
    d(")", PROMPT_SNAPSHOT),
    d(": ", PROMPT_SNAPSHOT),
    d("(any)", PROMPT_SNAPSHOT),
    d("(any, ", PROMPT_SNAPSHOT),
    d("|", PROMPT_SNAPSHOT),
    // a parameter's other schema keywords, after its description
    d(" {", PROMPT_SNAPSHOT),
    d("\n  schema: ", PROMPT_SNAPSHOT),
    d("\nconstrained sampling: ", PROMPT_SNAPSHOT),
    // agent_listing_delta
    d("Available agent types for the Agent tool:", AGENT_LISTING),
    d(
        "New agent types are now available for the Agent tool:",
        AGENT_LISTING,
    ),
    d(
        "The following agent types are no longer available:",
        AGENT_LISTING,
    ),
    d("- ", AGENT_LISTING),
    d(
        "This is ambient context \u{2014} do not narrate it to the user unless they ask or it is directly relevant to their request.",
        AGENT_LISTING,
    ),
    d(
        "When you launch multiple agents for independent work, send them in a single message with multiple tool uses so they run concurrently.",
        AGENT_LISTING,
    ),
    // skill_listing
    d(
        "The following skills are available for use with the Skill tool:",
        SKILL_LISTING,
    ),
    // task_reminder: `#ID. [STATUS] SUBJECT`
    d(
        "The task tools haven't been used recently. If you're working on tasks that would benefit from tracking progress, consider using TaskCreate to add new tasks and TaskUpdate to update task status (set to in_progress when starting, completed when done). Also consider cleaning up the task list if it has become stale. Only use these if relevant to the current work. This is just a gentle reminder - ignore if not applicable.",
        TASK_REMINDER,
    ),
    d("Here are the existing tasks:", TASK_REMINDER),
    d("#", TASK_REMINDER),
    d(". [", TASK_REMINDER),
    d("] ", TASK_REMINDER),
    // todo_reminder: `[N. [STATUS] CONTENT…]`
    d(
        "The TodoWrite tool hasn't been used recently. If you're working on tasks that would benefit from tracking progress, consider using the TodoWrite tool to track progress. Also consider cleaning up the todo list if has become stale and no longer matches what you are working on. Only use it if it's relevant to the current work. This is just a gentle reminder - ignore if not applicable.",
        TODO_REMINDER,
    ),
    d(
        "Here are the existing contents of your todo list:",
        TODO_REMINDER,
    ),
    d("[", TODO_REMINDER),
    d(". [", TODO_REMINDER),
    d("] ", TODO_REMINDER),
    d("]", TODO_REMINDER),
    // file, new_file: the Read tool's call and its numbered lines
    d("Called the Read tool with the following input: ", FILE),
    d("{\"file_path\":", FILE),
    d("}", FILE),
    d("Result of calling the Read tool:", FILE),
    d("\t", FILE),
    d("Note: The file ", FILE),
    d(
        " was too large and has been truncated to the first 2000 lines. Don't tell the user about this truncation. Use Read to read more of the file if you need.",
        FILE,
    ),
    // compact_file_reference
    d("Note: ", COMPACT_FILE_REFERENCE),
    d(
        " was read before the last conversation was summarized, but the contents are too large to include. Use Read tool if you need to access it.",
        COMPACT_FILE_REFERENCE,
    ),
    // nested_memory
    d("Contents of ", NESTED_MEMORY),
    d(":", NESTED_MEMORY),
    // opened_file_in_ide
    d("The user opened the file ", OPENED_FILE),
    d(
        " in the IDE. This may or may not be related to the current task.",
        OPENED_FILE,
    ),
    // plan_file_reference
    d("A plan file exists from plan mode at: ", PLAN_FILE),
    d("Plan contents:", PLAN_FILE),
    d(
        "If this plan is relevant to the current work and not already complete, continue working on it.",
        PLAN_FILE,
    ),
    // agent_mention
    d(
        "The user has expressed a desire to invoke the agent \"",
        AGENT_MENTION,
    ),
    d(
        "\". Please invoke the agent appropriately, passing in the required context to it. ",
        AGENT_MENTION,
    ),
    // date_change
    d("The date has changed. Today's date is now ", DATE_CHANGE),
    d(
        ". DO NOT mention this to the user explicitly because they are already aware.",
        DATE_CHANGE,
    ),
    // hooks
    d(" hook additional context: ", HOOK_CONTEXT),
    d(" hook stopped continuation: ", HOOK_STOPPED),
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

/// Numbers the renderer computes: image numbers and sizes, a turn's duration, the
/// messages a compaction keeps, a reply's parts, the line numbers of a file shown by
/// an attachment and a todo's position, the line number of an entry too deep.
const DERIVED_NUMBERS: &[Trigger] = &[
    m(r#""image""#),
    m(r#""turn_duration""#),
    m(r#""compact_boundary""#),
    m(r#""assistant""#),
    m(r#""(?:new_)?file""#),
    m(r#""todo_reminder""#),
    Trigger::Openers(128),
    Trigger::Longer(crate::model::core::input::COUNTED_FROM),
];

/// Claude Code's session files (no header; recognised by their first line as the
/// index recognises them).
pub static CLAUDE: Rules = Rules {
    name: "claude",
    decorations: DECORATIONS,
    derived_numbers: DERIVED_NUMBERS,
    derived_ids: false,
    always: &[],
    binary_content: IMAGE,
    line_content: None,
    side_files: Some(side_files),
    parent_text: true,
    spilled: Some(Spilled {
        place: PERSISTED,
        file: spilled_file,
        any: any_spilled,
    }),
    no_entries_before: None,
    hit_paths: None,
    alone: Some(alone),
    held: None,
    shown: Some(super::shown),
};

/// A line's KIND file and images from the line alone (a tool result's tool name and
/// a reply's part numbers, which come from other lines, left out): for the index.
fn alone(line: &[u8]) -> Option<crate::model::core::content::Content> {
    let v = crate::model::core::js::parse_line(line).ok()?;
    let x = super::render::Extra::default();
    Some(crate::model::core::content::Content {
        text: super::render::render_entry(&v, &x).into_bytes(),
        images: super::render::images(&v),
        full_output: None,
    })
}

/// The rules of a file whose first parsed line is `line`, if it is a Claude Code line
/// (which has no header: recognised as the index recognises it,
/// [`super::looks_like_claude`]).
pub fn detect(line: &[u8], _head: &LineHead) -> Option<&'static Rules> {
    super::looks_like_claude(line).then_some(&CLAUDE)
}

/// The full output a tool result's line shows (`full-output`), found as the mount
/// finds it; `Err` for a line that does not parse (the index may still read it: it
/// is then a candidate).
fn spilled_file(session: &Path, line: &[u8]) -> Result<Option<PathBuf>, ()> {
    let v: serde_json::Value = serde_json::from_slice(line).map_err(|_| ())?;
    Ok(super::full_output_path(session, &v))
}

/// Whether the session may show a spilled full output: its `tool-results/` folder is
/// there. Without it [`super::full_output_path`] finds no file for any line, and
/// [`spilled_file`]'s `Err` depends on the line alone (it does not parse).
fn any_spilled(session: &Path) -> bool {
    session.with_extension("").join("tool-results").exists()
}

/// The subagent transcripts whose entries the session shows.
fn side_files(path: &Path) -> Vec<PathBuf> {
    super::side_files(path)
}
