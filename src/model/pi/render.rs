//! Readable text for session entries, and JSON written as JavaScript writes it.
//!
//! Everything a person reads through the mount is produced here: the KIND
//! file of an entry ([`kind_name`], [`render_entry`]), its decoded images
//! ([`images`]), the one-line previews of the `tree` file ([`preview`], and
//! [`preview_line`] straight from a line's bytes), and the readable and JSON
//! forms of a context ([`render_context`], [`context_json`]). All functions are
//! pure and deterministic, so a file's size can be computed by rendering it; an
//! entry's KIND file depends on that entry alone.
//!
//! Guarantees:
//!
//! * [`render_entry`] never returns an empty string and always ends in `\n`.
//!   Message text appears verbatim (nothing is escaped or wrapped); markers
//!   that this module adds are whole lines in square brackets, such as
//!   `[thinking]`, `[tool call NAME (ID)]`, `[error]` or
//!   `[image 1: image/png, 1234 bytes → image-1.png]`.
//! * The `N`-th image placeholder of [`render_entry`] and the `N`-th element
//!   of [`images`] describe the same image block.
//! * [`preview`] is a single line: no control characters, at most
//!   [`PREVIEW_CHARS`] characters. [`preview_line`] of a line's bytes equals
//!   [`preview`] of the line parsed (one generic implementation over
//!   [`crate::model::core::json_view::Json`] serves both).
//! * `render_context(ms)` is the concatenation of
//!   [`render_context_message`] over `ms`, and `context_json(ms)` is
//!   `"[\n"`, the [`js_stringify`] of each message joined with `",\n"`, and
//!   `"\n]\n"` (`"[]\n"` when empty), so sizes can be computed per message.
//! * [`js_stringify`] is `JSON.stringify`: same key order (array-index keys
//!   such as `"2"` first, ascending, as JavaScript objects order them), same
//!   escaping (`\u2028`/`\u2029` and non-ASCII raw, other control characters
//!   as `\u00xx`), same numbers (`5.0` is `5`, `1e21` is `1e+21`, `-0` is
//!   `0`, ties between two shortest forms go to the even digit as in
//!   ECMAScript). A line Pi wrote, parsed with `serde_json` and stringified
//!   again, comes back byte for byte, provided `serde_json` parses floats
//!   exactly: without its `float_roundtrip` feature it may read a value such
//!   as `0.10222200000000001` one ulp off, and the output then differs.

#[allow(unused_imports)]
pub use crate::model::core::js::*;
#[allow(unused_imports)]
pub use crate::model::core::text::*;
use serde_json::Value;

use crate::model::core::base64;
use crate::model::core::json_view::{Json, JsonObj, Tape};
use std::borrow::Cow;

/// `s` unless `n` is 1.
fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// File name of the KIND file.
///
/// It is the message role for `message` entries (`user`, `assistant`,
/// `toolResult`, `bashExecution`, `custom`, or whatever unknown role;
/// `message` when there is no role), otherwise the entry type
/// (`model_change`, `compaction`, `branch_summary`, `label`, `session_info`,
/// `custom_message`, `custom`, `thinking_level_change`, or the unknown type;
/// `entry` when there is none).
///
/// The name is always a safe file name: `/` and control characters become
/// `_`, it is at most 255 bytes, and a name that is empty, `.`, `..`, one of
/// the other names in an entry directory (`reply`, `entry.json`, `context`,
/// `context.json`, `parent`, `edited-by`) or starts with `image-` gets a leading `_`. It
/// can still equal a child entry's id, which the caller must handle.
pub fn kind_name(entry: &Value) -> String {
    let raw = match type_str(entry) {
        Some("message") => match entry.get("message").and_then(|m| m.get("role")) {
            Some(Value::String(role)) => role.clone(),
            Some(other) => text_of(Some(other)),
            None => "message".to_string(),
        },
        Some(t) => t.to_string(),
        None => match entry.get("type") {
            None | Some(Value::Null) => "entry".to_string(),
            other => text_of(other),
        },
    };
    sanitize_file_name(&raw)
}

fn sanitize_file_name(raw: &str) -> String {
    crate::model::core::kind::sanitize(raw)
}

/// The KIND file's text: never empty, always ending in `\n`.
///
/// * `user`, `custom` (and unknown roles with `content`), `custom_message`:
///   the content. Text blocks verbatim, images as a placeholder line.
/// * `assistant`: the blocks in order, separated by blank lines; thinking
///   after a `[thinking]` line (`[thinking, redacted]` when redacted), text
///   as is, each tool call as `[tool call NAME (ID)]` followed by its
///   arguments as indented JSON. Then `[error] MESSAGE` if there is an
///   `errorMessage`, and `[stop reason: R]` for `error`, `aborted` or `length`.
/// * `toolResult`: its content, after an `[error]` line when `isError`.
/// * `bashExecution`: `$ COMMAND`, the output, then `[exit code N]` (or
///   `[cancelled]`), `[output truncated…]` and `[excluded from context]`
///   as they apply.
/// * `system` (Pi 1.6): a `[system message: …]` line saying what it sets (see
///   [`system_summary`]), then its text under `[text]`, each section under
///   `[section NAME]` (`[section NAME removed]` for a `null` one), each tool it
///   removes as `[tool NAME removed]`, and each tool it adds under `[tool NAME]`:
///   the description, then `parameters:` with one line per property
///   (`name (type, required): description`, other schema keywords as JSON).
/// * `compaction`: a `[compaction: N tokens before, kept from ID]` line
///   (`keeps nothing` when it keeps nothing), then the summary, then, when it
///   carries a `systemMessage`, `[with the system prompt: …]`;
///   `branch_summary`: `[branch summary from ID]`, then the summary.
/// * `context_edit`: `[context edit of ID: removes it from the context]`, or
///   `[context edit of ID: its content in the context becomes]` and the new
///   content (images as placeholders, as for messages).
/// * `usage`: `[usage KIND: provider/model]`, its note, the tokens and the cost.
/// * `model_change`: `provider/modelId`; `thinking_level_change`: the level;
///   `label`: `label NAME → TARGET` or `label cleared → TARGET`;
///   `session_info`: the name (`(name cleared)` for an empty one); `custom`:
///   its `customType`, then its `data` as indented JSON.
/// * Anything else, including a `message` entry without a message object:
///   the whole entry as indented JSON.
///
/// Where a string is expected and something else is found, it is written as
/// JSON. Content that ends in `\n` gets no extra newline.
pub fn render_entry(entry: &Value) -> String {
    let text = match type_str(entry) {
        Some("message") => match entry.get("message") {
            Some(m @ Value::Object(_)) => render_message(m, true),
            _ => js_stringify_pretty(entry),
        },
        Some("model_change") => {
            format!(
                "{}/{}",
                text_of(entry.get("provider")),
                text_of(entry.get("modelId"))
            )
        }
        Some("thinking_level_change") => text_of(entry.get("thinkingLevel")),
        Some("compaction") => {
            let mut header = String::from("[compaction");
            let tokens = entry.get("tokensBefore").filter(|v| !v.is_null());
            let kept = entry.get("firstKeptEntryId").filter(|v| !v.is_null());
            if let Some(t) = tokens {
                header.push_str(&format!(": {} tokens before", text_of(Some(t))));
            }
            if let Some(k) = kept {
                header.push_str(if tokens.is_some() { ", " } else { ": " });
                if k.is_string() && Some(k) == entry.get("id") {
                    header.push_str("keeps nothing");
                } else {
                    header.push_str(&format!("kept from {}", text_of(Some(k))));
                }
            }
            header.push_str("]\n");
            let mut text = header + &text_of(entry.get("summary"));
            if let Some(sys) = entry.get("systemMessage").filter(|v| js_truthy(Some(v))) {
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&format!(
                    "\n[with the system prompt: {}]",
                    system_summary(sys)
                ));
            }
            text
        }
        Some("context_edit") => render_context_edit(entry),
        Some("usage") => render_usage(entry),
        Some("branch_summary") => {
            let mut header = String::from("[branch summary");
            if let Some(from) = entry.get("fromId").filter(|v| !v.is_null()) {
                header.push_str(&format!(" from {}", text_of(Some(from))));
            }
            header.push_str("]\n");
            header + &text_of(entry.get("summary"))
        }
        Some("label") => match entry.as_object() {
            Some(o) => label_text(&o),
            None => js_stringify_pretty(entry),
        },
        Some("session_info") => {
            if js_truthy(entry.get("name")) {
                text_of(entry.get("name"))
            } else {
                "(name cleared)".to_string()
            }
        }
        Some("custom_message") => {
            let mut n = 0;
            let body = join_chunks(&content_chunks(entry.get("content"), true, &mut n));
            if body.is_empty() {
                "(no content)".to_string()
            } else {
                body
            }
        }
        Some("custom") => {
            let mut s = text_of(entry.get("customType"));
            if let Some(data) = entry.get("data") {
                s.push('\n');
                s.push_str(&js_stringify_pretty(data));
            }
            s
        }
        _ => js_stringify_pretty(entry),
    };
    finish(text)
}

/// Renders a message object (an entry's `message`, or a context message).
/// `link` names the image file beside the KIND file in placeholders.
fn render_message(m: &Value, link: bool) -> String {
    let role = m.get("role").and_then(Value::as_str);
    let mut n_image = 0;
    let body = match role {
        Some("assistant") => {
            let mut chunks = content_chunks(m.get("content"), link, &mut n_image);
            let mut tail = Vec::new();
            if js_truthy(m.get("errorMessage")) {
                tail.push(format!("[error] {}", text_of(m.get("errorMessage"))));
            }
            if let Some(reason @ ("error" | "aborted" | "length")) =
                m.get("stopReason").and_then(Value::as_str)
            {
                tail.push(format!("[stop reason: {reason}]"));
            }
            if !tail.is_empty() {
                chunks.push(tail.join("\n").into());
            }
            join_chunks(&chunks)
        }
        Some("toolResult") => {
            let body = join_chunks(&content_chunks(m.get("content"), link, &mut n_image));
            if js_truthy(m.get("isError")) {
                format!("[error]\n{body}")
            } else {
                body
            }
        }
        Some("bashExecution") => render_bash(m),
        Some("system") => render_system(m, link),
        Some(_) if m.get("content").is_some() => {
            join_chunks(&content_chunks(m.get("content"), link, &mut n_image))
        }
        Some("user" | "custom") => String::new(),
        _ => js_stringify_pretty(m),
    };
    if body.is_empty() {
        "(no content)\n".to_string()
    } else {
        finish(body)
    }
}

fn render_bash(m: &Value) -> String {
    let mut s = format!("$ {}\n", text_of(m.get("command")));
    let output = text_of(m.get("output"));
    if !output.is_empty() {
        s.push_str(&output);
        if !output.ends_with('\n') {
            s.push('\n');
        }
    }
    if js_truthy(m.get("cancelled")) {
        s.push_str("[cancelled]\n");
    } else if let Some(code) = m.get("exitCode").filter(|v| !v.is_null()) {
        s.push_str(&format!("[exit code {}]\n", text_of(Some(code))));
    }
    if js_truthy(m.get("truncated")) {
        if js_truthy(m.get("fullOutputPath")) {
            s.push_str(&format!(
                "[output truncated; full output: {}]\n",
                text_of(m.get("fullOutputPath"))
            ));
        } else {
            s.push_str("[output truncated]\n");
        }
    }
    if js_truthy(m.get("excludeFromContext")) {
        s.push_str("[excluded from context]\n");
    }
    s
}

/// A system message as a person reads it: a line saying what it sets, then its text,
/// each section under its name, each tool it removes, and each tool it adds with its
/// description and parameters.
fn render_system(m: &Value, link: bool) -> String {
    let mut parts = vec![format!("[system message: {}]", system_summary(m))];
    let mut n_image = 0;
    let text = join_chunks(&content_chunks(m.get("content"), link, &mut n_image));
    if !text.trim().is_empty() {
        parts.push(format!("[text]\n{text}"));
    }
    if let Some(Value::Object(sections)) = m.get("sections") {
        for (name, v) in sections {
            parts.push(match v {
                Value::Null => format!("[section {name} removed]"),
                Value::String(s) => format!("[section {name}]\n{s}"),
                other => format!("[section {name}]\n{}", js_stringify_pretty(other)),
            });
        }
    } else if let Some(other) = m.get("sections").filter(|v| !v.is_null()) {
        parts.push(format!("[sections]\n{}", js_stringify_pretty(other)));
    }
    for t in m.get("toolsRemoved").into_iter().flat_map(items) {
        parts.push(format!("[tool {} removed]", text_of(t.get("name"))));
    }
    for t in m.get("toolsAdded").into_iter().flat_map(items) {
        parts.push(render_tool(t));
    }
    join_chunks(&parts)
}

/// `context_edit`: which entry it edits, and what becomes of it in the context.
fn render_context_edit(entry: &Value) -> String {
    let target = text_of(entry.get("targetId"));
    match entry.get("replacement") {
        None => format!("[context edit of {target}: no replacement, so Pi cannot apply it]"),
        Some(Value::Null) => format!("[context edit of {target}: removes it from the context]"),
        Some(r) => match r.get("content") {
            Some(c) => {
                let mut n = 0;
                let body = join_chunks(&content_chunks(Some(c), true, &mut n));
                let body = if body.is_empty() {
                    "(no content)\n".to_string()
                } else {
                    body
                };
                format!("[context edit of {target}: its content in the context becomes]\n{body}")
            }
            None => format!(
                "[context edit of {target}: a replacement without content, which leaves it without content]\n{}",
                js_stringify_pretty(r)
            ),
        },
    }
}

/// `usage`: what the request was for, the model, its tokens and its cost.
fn render_usage(entry: &Value) -> String {
    let mut s = format!(
        "[usage {}: {}]\n",
        text_of(entry.get("kind")),
        provider_model(entry.get("provider"), entry.get("model"))
    );
    if let Some(note) = entry.get("note").filter(|v| js_truthy(Some(v))) {
        s.push_str(&text_of(Some(note)));
        s.push('\n');
    }
    match entry.get("usage") {
        Some(u @ Value::Object(_)) => {
            let n = |k: &str| u.get(k).map(|v| text_of(Some(v)));
            let tokens: Vec<String> = [
                ("input", "input"),
                ("output", "output"),
                ("cacheRead", "cache read"),
                ("cacheWrite", "cache write"),
                ("totalTokens", "total"),
            ]
            .iter()
            .filter_map(|(k, name)| n(k).map(|v| format!("{v} {name}")))
            .collect();
            if !tokens.is_empty() {
                s.push_str(&format!("tokens: {}\n", tokens.join(", ")));
            }
            if let Some(cost @ Value::Object(_)) = u.get("cost") {
                let c = |k: &str| cost.get(k).map(|v| text_of(Some(v)));
                let parts: Vec<String> = [
                    ("input", "input"),
                    ("output", "output"),
                    ("cacheRead", "cache read"),
                    ("cacheWrite", "cache write"),
                ]
                .iter()
                .filter_map(|(k, name)| c(k).map(|v| format!("{v} {name}")))
                .collect();
                s.push_str(&format!(
                    "cost: ${}",
                    c("total").unwrap_or_else(|| "?".into())
                ));
                if !parts.is_empty() {
                    s.push_str(&format!(" ({})", parts.join(", ")));
                }
                s.push('\n');
            }
        }
        Some(other) => s.push_str(&js_stringify_pretty(other)),
        None => {}
    }
    s
}

fn provider_model(provider: Option<&Value>, model: Option<&Value>) -> String {
    let (p, m) = (text_of(provider), text_of(model));
    match (p.is_empty(), m.is_empty()) {
        (false, false) => format!("{p}/{m}"),
        (true, false) => m,
        (false, true) => p,
        (true, true) => String::new(),
    }
}

/// One string per content block (a string content is one block). Text is borrowed,
/// not copied: a context's text is mostly these blocks.
fn content_chunks<'a>(
    content: Option<&'a Value>,
    link: bool,
    n_image: &mut usize,
) -> Vec<Cow<'a, str>> {
    match content {
        None | Some(Value::Null) => vec![],
        Some(Value::Array(blocks)) => blocks
            .iter()
            .map(|b| block_text(b, link, n_image))
            .collect(),
        Some(other) => vec![text_cow(Some(other))],
    }
}

/// [`text_of`], borrowing a string.
fn text_cow(v: Option<&Value>) -> Cow<'_, str> {
    match v {
        Some(Value::String(s)) => Cow::Borrowed(s),
        other => Cow::Owned(text_of(other)),
    }
}

fn block_text<'a>(block: &'a Value, link: bool, n_image: &mut usize) -> Cow<'a, str> {
    match block.get("type").and_then(Value::as_str) {
        Some("text") => text_cow(block.get("text")),
        Some("image") => {
            *n_image += 1;
            let n = *n_image;
            let mime = match block.get("mimeType") {
                Some(Value::String(s)) => s.clone(),
                None | Some(Value::Null) => "unknown type".to_string(),
                other => text_of(other),
            };
            let len = block
                .get("data")
                .and_then(Value::as_str)
                .map_or(0, base64::decoded_len);
            if link {
                let ext = image_ext(block.get("mimeType"));
                Cow::Owned(format!(
                    "[image {n}: {mime}, {len} byte{} → image-{n}.{ext}]",
                    plural(len)
                ))
            } else {
                Cow::Owned(format!("[image {n}: {mime}, {len} byte{}]", plural(len)))
            }
        }
        Some("thinking") => {
            let thinking = text_cow(block.get("thinking"));
            let head = if js_truthy(block.get("redacted")) {
                "[thinking, redacted]"
            } else {
                "[thinking]"
            };
            if thinking.is_empty() {
                Cow::Borrowed(head)
            } else {
                Cow::Owned(cat(&[head, "\n", &thinking]))
            }
        }
        Some("toolCall") => {
            let mut s = format!(
                "[tool call {} ({})]",
                text_of(block.get("name")),
                text_of(block.get("id"))
            );
            if let Some(args) = block.get("arguments") {
                s.push('\n');
                s.push_str(&js_stringify_pretty(args));
            }
            Cow::Owned(s)
        }
        _ => match block {
            Value::String(s) => Cow::Borrowed(s),
            other => Cow::Owned(js_stringify_pretty(other)),
        },
    }
}

fn type_str(entry: &Value) -> Option<&str> {
    entry.get("type").and_then(Value::as_str)
}

/// The image blocks of an entry, in order, decoded.
///
/// Images are looked for in the content of a `message` entry (any role but
/// `bashExecution`) and of a `custom_message` entry. Decoding never fails:
/// it is as lenient as Node's `Buffer.from(data, "base64")` (see
/// [`base64`]), so every image block yields exactly one [`Image`] (empty
/// when `data` is missing or not a string), and the numbering matches the
/// placeholders of [`render_entry`].
pub fn images(entry: &Value) -> Vec<Image> {
    let content = match type_str(entry) {
        Some("message") => match entry.get("message") {
            Some(m @ Value::Object(_))
                if m.get("role").and_then(Value::as_str) != Some("bashExecution") =>
            {
                m.get("content")
            }
            _ => None,
        },
        Some("custom_message") => entry.get("content"),
        Some("context_edit") => entry.get("replacement").and_then(|r| r.get("content")),
        _ => None,
    };
    let Some(Value::Array(blocks)) = content else {
        return vec![];
    };
    blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("image"))
        .map(|b| Image {
            ext: image_ext(b.get("mimeType")),
            data: b
                .get("data")
                .and_then(Value::as_str)
                .map_or_else(Vec::new, base64::decode),
        })
        .collect()
}

/// A one-line preview for the `tree` overview, starting with the kind:
/// `user: add a --verbose flag`, `assistant: Let me look… → read src/cli.ts`,
/// `toolResult read: import …`, `bashExecution: $ ls`,
/// `model_change anthropic/claude-sonnet-4-5`, `thinking_level_change high`,
/// `label plan-b → 55667788`, `compaction: SUMMARY`,
/// `system: sections preamble, tools, cwd; tools +read, +bash`,
/// `context_edit → 1234abcd: removed`, `usage cache_warm anthropic/claude: 5 tokens, $0.001`, ….
///
/// Whitespace runs and control characters become one space, and the result
/// is cut to [`PREVIEW_CHARS`] characters, ending in `…` when cut. Of each string
/// only as much is read as the preview can show.
pub fn preview(entry: &Value) -> String {
    preview_of(entry)
}

/// [`preview`] of the entry on a line, read from its bytes without building it (see
/// [`super::json_view`]); the same text. `None` when the line is not one JSON value.
pub fn preview_line(line: &[u8]) -> Option<String> {
    Tape::new(line).map(|t| preview_of(t.root()))
}

/// How much of the text blocks of one entry a preview gathers, at most.
const PREVIEW_GATHER: usize = 16 * 1024;

/// A string as is, as far as a preview shows it (see [`Json::str_visible`]);
/// `null`/missing as empty; anything else as JSON (cut).
fn jtext<'a, J: Json<'a>>(v: Option<J>) -> Cow<'a, str> {
    match v {
        None => Cow::Borrowed(""),
        Some(v) if v.is_null() => Cow::Borrowed(""),
        Some(v) => match v.str_visible(PREVIEW_CHARS + 1) {
            Some(s) => s,
            None => Cow::Owned(jtext_json(v)),
        },
    }
}

fn jtruthy<'a, J: Json<'a>>(v: Option<J>) -> bool {
    v.is_some_and(|v| v.truthy())
}

fn jstr<'a, J: Json<'a>>(v: Option<J>) -> Option<std::borrow::Cow<'a, str>> {
    v.and_then(|v| v.as_str())
}

/// Appends to a preview's text while it is shorter than [`PREVIEW_GATHER`].
fn push_capped(out: &mut String, s: &str) {
    if out.len() < PREVIEW_GATHER {
        out.push_str(s);
    }
}

fn preview_of<'a, J: Json<'a>>(entry: J) -> String {
    let Some(e) = entry.obj() else {
        return "entry".to_string();
    };
    let ty = jstr(e.get("type"));
    let raw = match ty.as_deref() {
        Some("message") => match e.get("message").and_then(|m| m.obj()) {
            Some(m) => message_preview(&m),
            None => "message".to_string(),
        },
        Some("custom_message") => {
            format!(
                "custom_message {}: {}",
                jtext(e.get("customType")),
                content_preview(e.get("content"))
            )
        }
        Some("compaction") => format!("compaction: {}", jtext(e.get("summary"))),
        Some("branch_summary") => {
            if jtruthy(e.get("summary")) {
                format!("branch_summary: {}", jtext(e.get("summary")))
            } else {
                "branch_summary (empty)".to_string()
            }
        }
        Some("model_change") => format!(
            "model_change {}/{}",
            jtext(e.get("provider")),
            jtext(e.get("modelId"))
        ),
        Some("thinking_level_change") => {
            format!("thinking_level_change {}", jtext(e.get("thinkingLevel")))
        }
        Some("label") => label_text(&e),
        Some("session_info") => {
            if jtruthy(e.get("name")) {
                format!("session_info {}", jtext(e.get("name")))
            } else {
                "session_info (name cleared)".to_string()
            }
        }
        Some("custom") => format!("custom {}", jtext(e.get("customType"))),
        Some("context_edit") => {
            let what = match e.get("replacement") {
                None => "(no replacement)".to_string(),
                Some(r) if r.is_null() => "removed".to_string(),
                Some(r) => match r.obj().and_then(|r| r.get("content")) {
                    Some(c) => content_preview(Some(c)),
                    None => "(no content)".to_string(),
                },
            };
            format!("context_edit → {}: {what}", jtext(e.get("targetId")))
        }
        Some("usage") => {
            let mut s = format!(
                "usage {} {}",
                jtext(e.get("kind")),
                provider_model_of(e.get("provider"), e.get("model"))
            );
            if let Some(u) = e.get("usage").and_then(|u| u.obj()) {
                let mut parts = Vec::new();
                if let Some(t) = u.get("totalTokens") {
                    parts.push(format!("{} tokens", jtext(Some(t))));
                }
                if let Some(c) = u
                    .get("cost")
                    .and_then(|c| c.obj())
                    .and_then(|c| c.get("total"))
                {
                    parts.push(format!("${}", jtext(Some(c))));
                }
                if !parts.is_empty() {
                    s.push_str(": ");
                    s.push_str(&parts.join(", "));
                }
            }
            s
        }
        Some(t) => t.to_string(),
        None => match e.get("type") {
            None => "entry".to_string(),
            Some(t) if t.is_null() => "entry".to_string(),
            Some(t) => sanitize_file_name(&t.stringify()),
        },
    };
    one_line_cut(&raw, PREVIEW_CHARS)
}

fn label_text<'a, O: JsonObj<'a>>(e: &O) -> String
where
    O::Val: Json<'a>,
{
    let target = jtext(e.get("targetId"));
    if jtruthy(e.get("label")) {
        format!("label {} → {target}", jtext(e.get("label")))
    } else {
        format!("label cleared → {target}")
    }
}

fn provider_model_of<'a, J: Json<'a>>(provider: Option<J>, model: Option<J>) -> String {
    let (p, m) = (jtext(provider), jtext(model));
    match (p.is_empty(), m.is_empty()) {
        (false, false) => format!("{p}/{m}"),
        (true, false) => m.into_owned(),
        (false, true) => p.into_owned(),
        (true, true) => String::new(),
    }
}

/// What a system message sets, in one line: its text (if any), the sections it
/// sets (a removed one as `-name`), the tools it adds (`+name`) and removes
/// (`-name`): `sections preamble, tools, cwd; tools +read, +bash`.
pub fn system_summary<'a, J: Json<'a>>(m: J) -> String {
    match m.obj() {
        Some(m) => system_summary_obj(&m),
        None => "not an object".to_string(),
    }
}

fn message_preview<'a, O: JsonObj<'a>>(m: &O) -> String
where
    O::Val: Json<'a>,
{
    let role = match m.get("role") {
        None => Cow::Borrowed("message"),
        Some(r) => match r.as_str() {
            Some(r) => r,
            None => jtext(Some(r)),
        },
    };
    match &*role {
        "assistant" => {
            let mut text = String::new();
            let mut thinking = String::new();
            let mut tools = String::new();
            let content = m.get("content");
            if let Some(blocks) = content.and_then(|c| c.items()) {
                for b in blocks {
                    let Some(b) = b.obj() else { continue };
                    match jstr(b.get("type")).as_deref() {
                        Some("text") => {
                            push_capped(&mut text, " ");
                            push_capped(&mut text, &jtext(b.get("text")));
                        }
                        Some("thinking") => {
                            push_capped(&mut thinking, " ");
                            push_capped(&mut thinking, &jtext(b.get("thinking")));
                        }
                        Some("toolCall") => {
                            push_capped(&mut tools, " → ");
                            push_capped(&mut tools, &tool_call_summary(&b));
                        }
                        _ => {}
                    }
                }
            } else if let Some(c) = content.filter(|c| c.is_string()) {
                text = jtext(Some(c)).into_owned();
            }
            let mut text = one_line(&text);
            if text.is_empty() && tools.is_empty() && !one_line(&thinking).is_empty() {
                text = format!("[thinking] {}", one_line(&thinking));
            }
            let mut tail = one_line(&tools);
            if jtruthy(m.get("errorMessage")) {
                tail.push_str(&format!(
                    " [error] {}",
                    one_line(&jtext(m.get("errorMessage")))
                ));
            } else if jstr(m.get("stopReason")).as_deref() == Some("aborted") {
                tail.push_str(" (aborted)");
            }
            let tail = tail.trim().to_string();
            if text.is_empty() && tail.is_empty() {
                return "assistant: (no content)".to_string();
            }
            // Leave room for the tool calls: cut the text first.
            let prefix = "assistant: ";
            let room = PREVIEW_CHARS
                .saturating_sub(prefix.len() + tail.chars().count() + 1)
                .max(24);
            let text = truncate_chars(&text, room);
            match (text.is_empty(), tail.is_empty()) {
                (_, true) => cat(&[prefix, &text]),
                (true, false) => cat(&[prefix, &tail]),
                (false, false) => cat(&[prefix, &text, " ", &tail]),
            }
        }
        "toolResult" => {
            let name = jtext(m.get("toolName"));
            let space = if name.is_empty() { "" } else { " " };
            let err = if jtruthy(m.get("isError")) {
                " [error]"
            } else {
                ""
            };
            cat(&[
                "toolResult",
                space,
                &name,
                err,
                ": ",
                &content_preview(m.get("content")),
            ])
        }
        "bashExecution" => format!("bashExecution: $ {}", jtext(m.get("command"))),
        "custom" => format!(
            "custom {}: {}",
            jtext(m.get("customType")),
            content_preview(m.get("content"))
        ),
        "system" => {
            // `m` is the message object; summarize it through its members.
            format!("system: {}", system_summary_obj(m))
        }
        _ => cat(&[&role, ": ", &content_preview(m.get("content"))]),
    }
}

fn system_summary_obj<'a, O: JsonObj<'a>>(m: &O) -> String
where
    O::Val: Json<'a>,
{
    let mut parts = Vec::new();
    let text = content_preview(m.get("content"));
    if !one_line(&text).is_empty() {
        parts.push(format!("text \"{}\"", truncate_chars(&one_line(&text), 40)));
    }
    if let Some(sections) = m.get("sections").and_then(|s| s.obj()) {
        let names: Vec<String> = sections
            .members()
            .into_iter()
            .map(|(k, v)| {
                if v.is_null() {
                    format!("-{k}")
                } else {
                    k.into_owned()
                }
            })
            .collect();
        if !names.is_empty() {
            parts.push(format!("sections {}", names.join(", ")));
        }
    }
    let mut tools = Vec::new();
    for (key, sign) in [("toolsAdded", '+'), ("toolsRemoved", '-')] {
        for t in m.get(key).and_then(|v| v.items()).into_iter().flatten() {
            tools.push(format!(
                "{sign}{}",
                jtext(t.obj().and_then(|t| t.get("name")))
            ));
        }
    }
    if !tools.is_empty() {
        parts.push(format!("tools {}", tools.join(", ")));
    }
    if parts.is_empty() {
        "empty".to_string()
    } else {
        parts.join("; ")
    }
}

/// Text blocks joined by spaces, images as `[image]`.
fn content_preview<'a, J: Json<'a>>(content: Option<J>) -> String {
    match content.and_then(|c| c.items()) {
        Some(blocks) => {
            let mut out = String::new();
            let mut first = true;
            for b in blocks {
                let Some(b) = b.obj() else { continue };
                let part = match jstr(b.get("type")).as_deref() {
                    Some("text") => jtext(b.get("text")),
                    Some("image") => Cow::Borrowed("[image]"),
                    _ => continue,
                };
                if !first {
                    push_capped(&mut out, " ");
                }
                first = false;
                push_capped(&mut out, &part);
            }
            out
        }
        None => jtext(content).into_owned(),
    }
}

fn tool_call_summary<'a, O: JsonObj<'a>>(block: &O) -> String
where
    O::Val: Json<'a>,
{
    let name = jtext(block.get("name"));
    let args = block.get("arguments");
    let args_obj = args.and_then(|a| a.obj());
    let arg = |k: &str| {
        args_obj
            .as_ref()
            .and_then(|a| a.get(k))
            .filter(|v| v.truthy())
    };
    let path = || jtext(arg("path").or_else(|| arg("file_path")));
    let detail: Cow<'_, str> = match &*name {
        "read" | "write" | "edit" => path(),
        "bash" => jtext(arg("command")),
        "grep" => Cow::Owned(format!(
            "/{}/ in {}",
            jtext(arg("pattern")),
            arg("path").map_or(".".into(), |p| jtext(Some(p)))
        )),
        "find" => Cow::Owned(format!(
            "{} in {}",
            jtext(arg("pattern")),
            arg("path").map_or(".".into(), |p| jtext(Some(p)))
        )),
        "ls" => arg("path").map_or(".".into(), |p| jtext(Some(p))),
        _ => Cow::Owned(args.map(jtext_json).unwrap_or_default()),
    };
    if detail.is_empty() {
        name.into_owned()
    } else {
        cat(&[&name, " ", &detail])
    }
}

/// The parts, one after the other (what `format!` does, without parsing a format).
fn cat(parts: &[&str]) -> String {
    let mut out = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    for p in parts {
        out.push_str(p);
    }
    out
}

/// Any value as JSON, cut to a kilobyte.
fn jtext_json<'a, J: Json<'a>>(v: J) -> String {
    let mut s = v.stringify();
    let mut cut = 1024.min(s.len());
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.truncate(cut);
    s
}

/// The readable `context`: [`render_context_message`] of each message,
/// concatenated. Empty for no messages.
pub fn render_context(messages: &[Value]) -> String {
    let mut out = String::new();
    for m in messages {
        push_context_message(&mut out, m);
    }
    out
}

/// One message of the readable `context`: a heading line naming the role
/// (`## user`, `## assistant (anthropic/claude-sonnet-4-5)`,
/// `## toolResult (read)`), the message rendered as in [`render_entry`]
/// (image placeholders without a file name), and a blank line.
pub fn render_context_message(m: &Value) -> String {
    let mut out = String::new();
    push_context_message(&mut out, m);
    out
}

/// [`render_context_message`], added to `out`.
fn push_context_message(out: &mut String, m: &Value) {
    out.push_str("## ");
    out.push_str(&context_heading(m));
    out.push('\n');
    match m {
        Value::Object(_) => out.push_str(&render_message(m, false)),
        other => out.push_str(&finish(js_stringify_pretty(other))),
    }
    out.push('\n');
}

fn context_heading(m: &Value) -> String {
    let role = match m.get("role") {
        Some(Value::String(r)) => r.clone(),
        None => "message".to_string(),
        other => text_of(other),
    };
    let detail = match role.as_str() {
        "assistant" => provider_model(m.get("provider"), m.get("model")),
        "toolResult" => text_of(m.get("toolName")),
        _ => String::new(),
    };
    let heading = if detail.is_empty() {
        role
    } else {
        format!("{role} ({detail})")
    };
    one_line(&heading)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msg(m: Value) -> Value {
        json!({"type":"message","id":"aaaaaaa1","parentId":null,"timestamp":"2026-01-05T09:00:00.000Z","message":m})
    }

    const PNG_B64: &str = "iVBORw0KGgo="; // 8 bytes: the PNG signature

    #[test]
    fn kind_names() {
        assert_eq!(
            kind_name(&msg(json!({"role":"user","content":"x"}))),
            "user"
        );
        assert_eq!(kind_name(&msg(json!({"role":"toolResult"}))), "toolResult");
        assert_eq!(kind_name(&msg(json!({"role":"a/b"}))), "a_b");
        assert_eq!(kind_name(&msg(json!({"role":""}))), "_");
        assert_eq!(kind_name(&msg(json!({"role":".."}))), "_..");
        assert_eq!(kind_name(&msg(json!({"role":"."}))), "_.");
        assert_eq!(kind_name(&msg(json!({"role":"reply"}))), "_reply");
        assert_eq!(
            kind_name(&msg(json!({"role":"image-1.png"}))),
            "_image-1.png"
        );
        assert_eq!(kind_name(&msg(json!({"role":"a\nb\0"}))), "a_b_");
        assert_eq!(kind_name(&msg(json!({"content":"x"}))), "message");
        assert_eq!(kind_name(&msg(json!({"role":5}))), "5");
        assert_eq!(kind_name(&json!({"type":"message"})), "message");
        assert_eq!(kind_name(&json!({"type":"model_change"})), "model_change");
        assert_eq!(kind_name(&json!({"type":"context.json"})), "_context.json");
        assert_eq!(kind_name(&json!({"type":"x/y"})), "x_y");
        assert_eq!(kind_name(&json!({"id":"x"})), "entry");
        assert_eq!(kind_name(&json!({"type":{"a":1}})), "{\"a\":1}");
        let long = "é".repeat(200);
        let k = kind_name(&json!({"type": long}));
        assert!(k.len() <= 255 && k.chars().all(|c| c == 'é'));
    }

    #[test]
    fn user_text_and_images() {
        let e = msg(json!({"role":"user","content":[
            {"type":"text","text":"look at this"},
            {"type":"image","data":PNG_B64,"mimeType":"image/png"},
            {"type":"image","data":"/9j/","mimeType":"image/jpeg"}
        ],"timestamp":1}));
        assert_eq!(
            render_entry(&e),
            "look at this\n\n[image 1: image/png, 8 bytes → image-1.png]\n\n[image 2: image/jpeg, 3 bytes → image-2.jpg]\n"
        );
        let imgs = images(&e);
        assert_eq!(imgs.len(), 2);
        assert_eq!(
            imgs[0],
            Image {
                ext: "png",
                data: b"\x89PNG\r\n\x1a\n".to_vec()
            }
        );
        assert_eq!(imgs[1].ext, "jpg");
        assert_eq!(
            render_entry(&msg(json!({"role":"user","content":"plain\n"}))),
            "plain\n"
        );
        assert_eq!(
            render_entry(&msg(json!({"role":"user","content":"plain"}))),
            "plain\n"
        );
        assert_eq!(
            render_entry(&msg(json!({"role":"user","content":"two\n\n"}))),
            "two\n\n"
        );
        assert_eq!(
            render_entry(&msg(json!({"role":"user","content":[]}))),
            "(no content)\n"
        );
        assert_eq!(
            render_entry(&msg(json!({"role":"user","content":null}))),
            "(no content)\n"
        );
        assert_eq!(
            render_entry(&msg(json!({"role":"user","content":""}))),
            "\n"
        );
    }

    #[test]
    fn image_ext_and_undecodable_data() {
        for (mime, ext) in [
            ("image/gif", "gif"),
            ("image/webp", "webp"),
            ("IMAGE/PNG", "png"),
            ("image/jpg", "jpg"),
            ("image/bmp", "bin"),
        ] {
            let e = msg(
                json!({"role":"toolResult","content":[{"type":"image","data":"!!!","mimeType":mime}]}),
            );
            assert_eq!(images(&e), vec![Image { ext, data: vec![] }]);
        }
        let e = msg(json!({"role":"user","content":[{"type":"image"}]}));
        assert_eq!(
            images(&e),
            vec![Image {
                ext: "bin",
                data: vec![]
            }]
        );
        assert_eq!(
            render_entry(&e),
            "[image 1: unknown type, 0 bytes → image-1.bin]\n"
        );
        let e = json!({"type":"custom_message","customType":"c","content":[{"type":"image","data":PNG_B64,"mimeType":"image/png"}],"display":true});
        assert_eq!(images(&e).len(), 1);
        assert_eq!(
            render_entry(&e),
            "[image 1: image/png, 8 bytes → image-1.png]\n"
        );
        assert!(images(&json!({"type":"custom","data":{"content":[{"type":"image"}]}})).is_empty());
    }

    #[test]
    fn assistant_blocks() {
        let e = msg(json!({"role":"assistant","content":[
            {"type":"thinking","thinking":"Need the parser.","thinkingSignature":"sig"},
            {"type":"thinking","thinking":"","thinkingSignature":"opaque","redacted":true},
            {"type":"text","text":"Let me look."},
            {"type":"toolCall","id":"toolu_01","name":"read","arguments":{"path":"src/cli.ts","2":true}}
        ],"provider":"anthropic","model":"claude","stopReason":"toolUse","timestamp":1}));
        assert_eq!(
            render_entry(&e),
            "[thinking]\nNeed the parser.\n\n[thinking, redacted]\n\nLet me look.\n\n[tool call read (toolu_01)]\n{\n  \"2\": true,\n  \"path\": \"src/cli.ts\"\n}\n"
        );
    }

    #[test]
    fn assistant_error_and_stop_reason() {
        let e = msg(
            json!({"role":"assistant","content":[{"type":"text","text":"partial"}],
                           "stopReason":"error","errorMessage":"overloaded"}),
        );
        assert_eq!(
            render_entry(&e),
            "partial\n\n[error] overloaded\n[stop reason: error]\n"
        );
        let e = msg(json!({"role":"assistant","content":[],"stopReason":"aborted"}));
        assert_eq!(render_entry(&e), "[stop reason: aborted]\n");
        let e = msg(
            json!({"role":"assistant","content":[{"type":"text","text":"x"}],"stopReason":"length"}),
        );
        assert_eq!(render_entry(&e), "x\n\n[stop reason: length]\n");
        let e = msg(json!({"role":"assistant","content":[],"stopReason":"stop"}));
        assert_eq!(render_entry(&e), "(no content)\n");
    }

    #[test]
    fn tool_results() {
        let e = msg(
            json!({"role":"toolResult","toolCallId":"t","toolName":"read","content":[{"type":"text","text":"ENOENT"}],"isError":true}),
        );
        assert_eq!(render_entry(&e), "[error]\nENOENT\n");
        let e = msg(
            json!({"role":"toolResult","toolName":"read","content":[{"type":"text","text":"ok\n"}],"isError":false}),
        );
        assert_eq!(render_entry(&e), "ok\n");
    }

    #[test]
    fn bash_executions() {
        let e = msg(
            json!({"role":"bashExecution","command":"ls","output":"a\nb","exitCode":0,"cancelled":false,"truncated":false}),
        );
        assert_eq!(render_entry(&e), "$ ls\na\nb\n[exit code 0]\n");
        let e = msg(
            json!({"role":"bashExecution","command":"make","output":"","exitCode":2,"cancelled":false,
                           "truncated":true,"fullOutputPath":"/tmp/out","excludeFromContext":true}),
        );
        assert_eq!(
            render_entry(&e),
            "$ make\n[exit code 2]\n[output truncated; full output: /tmp/out]\n[excluded from context]\n"
        );
        let e = msg(
            json!({"role":"bashExecution","command":"sleep 9","output":"x\n","cancelled":true,"truncated":true}),
        );
        assert_eq!(
            render_entry(&e),
            "$ sleep 9\nx\n[cancelled]\n[output truncated]\n"
        );
    }

    #[test]
    fn other_entry_types() {
        let e = json!({"type":"model_change","provider":"anthropic","modelId":"claude-sonnet-4-5"});
        assert_eq!(render_entry(&e), "anthropic/claude-sonnet-4-5\n");
        assert_eq!(
            render_entry(&json!({"type":"thinking_level_change","thinkingLevel":"high"})),
            "high\n"
        );
        let e = json!({"type":"compaction","summary":"Goal: X","firstKeptEntryId":"8e38ccf6","tokensBefore":45678});
        assert_eq!(
            render_entry(&e),
            "[compaction: 45678 tokens before, kept from 8e38ccf6]\nGoal: X\n"
        );
        assert_eq!(
            render_entry(&json!({"type":"compaction"})),
            "[compaction]\n"
        );
        let e = json!({"type":"branch_summary","fromId":"65ebe60d","summary":"Tried A.\n"});
        assert_eq!(
            render_entry(&e),
            "[branch summary from 65ebe60d]\nTried A.\n"
        );
        assert_eq!(
            render_entry(&json!({"type":"branch_summary","fromId":"root","summary":""})),
            "[branch summary from root]\n"
        );
        assert_eq!(
            render_entry(&json!({"type":"label","targetId":"55667788","label":"plan-b"})),
            "label plan-b → 55667788\n"
        );
        assert_eq!(
            render_entry(&json!({"type":"label","targetId":"55667788"})),
            "label cleared → 55667788\n"
        );
        assert_eq!(
            render_entry(&json!({"type":"label","targetId":"55667788","label":""})),
            "label cleared → 55667788\n"
        );
        assert_eq!(
            render_entry(&json!({"type":"session_info","name":"refactor"})),
            "refactor\n"
        );
        assert_eq!(
            render_entry(&json!({"type":"session_info","name":""})),
            "(name cleared)\n"
        );
        assert_eq!(
            render_entry(
                &json!({"type":"custom_message","customType":"n","content":"hello","display":true})
            ),
            "hello\n"
        );
        assert_eq!(
            render_entry(&json!({"type":"custom","customType":"ext","data":{"a":[1,2],"b":{}}})),
            "ext\n{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {}\n}\n"
        );
        assert_eq!(
            render_entry(&json!({"type":"custom","customType":"ext"})),
            "ext\n"
        );
        assert_eq!(
            render_entry(&json!({"type":"future","x":[]})),
            "{\n  \"type\": \"future\",\n  \"x\": []\n}\n"
        );
        assert_eq!(
            render_entry(&json!({"type":"message","message":null})),
            "{\n  \"type\": \"message\",\n  \"message\": null\n}\n"
        );
        assert_eq!(
            render_entry(&msg(json!({"role":"weird"}))),
            "{\n  \"role\": \"weird\"\n}\n"
        );
        assert_eq!(
            render_entry(&msg(json!({"role":"weird","content":"hi"}))),
            "hi\n"
        );
        assert_eq!(
            render_entry(&msg(
                json!({"role":"custom","customType":"c","content":[{"type":"text","text":"c"}]})
            )),
            "c\n"
        );
    }

    #[test]
    fn system_messages_read_as_a_prompt() {
        let initial = msg(json!({"role":"system","content":"",
            "sections":{"preamble":"You are a helper.","tools":"<tools>\n- read: Read\n</tools>"},
            "timestamp":1,
            "toolsAdded":[{"name":"read","description":"Read a file.",
                "parameters":{"type":"object","required":["path"],"properties":{
                    "path":{"type":"string","description":"Path to read"},
                    "limit":{"type":"number"},
                    "mode":{"type":["string","null"],"enum":["a","b"],"description":"How"}},
                  "additionalProperties":false},
                "constrainedSampling":{"type":"json_schema"}},
              {"name":"noop","description":"Nothing.","parameters":{"type":"object","properties":{}}},
              {"name":"raw","parameters":{"anyOf":[{"type":"string"}]}}]}));
        assert_eq!(
            render_entry(&initial),
            "[system message: sections preamble, tools; tools +read, +noop, +raw]\n\
             \n\
             [section preamble]\n\
             You are a helper.\n\
             \n\
             [section tools]\n\
             <tools>\n- read: Read\n</tools>\n\
             \n\
             [tool read]\n\
             Read a file.\n\
             parameters:\n  \
             path (string, required): Path to read\n  \
             limit (number)\n  \
             mode (string|null): How {\"enum\":[\"a\",\"b\"]}\n  \
             schema: {\"additionalProperties\":false}\n\
             constrained sampling: {\"type\":\"json_schema\"}\n\
             \n\
             [tool noop]\n\
             Nothing.\n\
             parameters: none\n\
             \n\
             [tool raw]\n\
             parameters:\n\
             {\n  \"anyOf\": [\n    {\n      \"type\": \"string\"\n    }\n  ]\n}\n"
        );
        let patch = msg(json!({"role":"system","content":"Also be brief.",
            "sections":{"skills":"<skills>\nx\n</skills>","cwd":null},"timestamp":2,
            "toolsRemoved":[{"name":"bash"}]}));
        assert_eq!(
            render_entry(&patch),
            "[system message: text \"Also be brief.\"; sections skills, -cwd; tools -bash]\n\
             \n\
             [text]\n\
             Also be brief.\n\
             \n\
             [section skills]\n\
             <skills>\nx\n</skills>\n\
             \n\
             [section cwd removed]\n\
             \n\
             [tool bash removed]\n"
        );
        // In the context, under its heading: what the model got.
        let m = initial["message"].clone();
        let c = render_context_message(&m);
        assert!(
            c.starts_with("## system\n[system message: sections preamble, tools;"),
            "{c}"
        );
        assert!(c.contains("[section preamble]\nYou are a helper.\n"), "{c}");
        assert!(c.contains("[tool read]\nRead a file.\n"), "{c}");
    }

    #[test]
    fn context_edits_usage_and_compactions_of_pi_16() {
        let e = |r: Value| json!({"type":"context_edit","id":"e1","parentId":"x","targetId":"a1b2c3d4","replacement":r});
        assert_eq!(
            render_entry(&e(Value::Null)),
            "[context edit of a1b2c3d4: removes it from the context]\n"
        );
        assert_eq!(
            render_entry(&e(json!({"content":"Edited answer."}))),
            "[context edit of a1b2c3d4: its content in the context becomes]\nEdited answer.\n"
        );
        let with_image = e(
            json!({"content":[{"type":"text","text":"chart:"},{"type":"image","data":PNG_B64,"mimeType":"image/png"}]}),
        );
        assert_eq!(
            render_entry(&with_image),
            "[context edit of a1b2c3d4: its content in the context becomes]\nchart:\n\n[image 1: image/png, 8 bytes → image-1.png]\n"
        );
        assert_eq!(images(&with_image).len(), 1);
        assert_eq!(
            render_entry(&json!({"type":"context_edit","targetId":"a1b2c3d4"})),
            "[context edit of a1b2c3d4: no replacement, so Pi cannot apply it]\n"
        );
        assert_eq!(
            render_entry(&e(json!("oops"))),
            "[context edit of a1b2c3d4: a replacement without content, which leaves it without content]\n\"oops\"\n"
        );
        let usage = json!({"type":"usage","id":"u1","kind":"cache_warm","provider":"anthropic","model":"claude-sonnet-4-5",
            "usage":{"input":0,"output":1,"cacheRead":2104,"cacheWrite":0,"totalTokens":2105,
                     "cost":{"input":0,"output":0.0000125,"cacheRead":0.0006312,"cacheWrite":0,"total":0.0006437}},
            "note":"extension override"});
        assert_eq!(
            render_entry(&usage),
            "[usage cache_warm: anthropic/claude-sonnet-4-5]\n\
             extension override\n\
             tokens: 0 input, 1 output, 2104 cache read, 0 cache write, 2105 total\n\
             cost: $0.0006437 (0 input, 0.0000125 output, 0.0006312 cache read, 0 cache write)\n"
        );
        let c = json!({"type":"compaction","id":"c1","summary":"S","firstKeptEntryId":"c1","tokensBefore":1234,
            "systemMessage":{"role":"system","content":"","sections":{"preamble":"P"},"toolsAdded":[{"name":"read"}],"timestamp":1}});
        assert_eq!(
            render_entry(&c),
            "[compaction: 1234 tokens before, keeps nothing]\nS\n\n[with the system prompt: sections preamble; tools +read]\n"
        );
    }

    #[test]
    fn every_rendering_is_nonempty_and_ends_in_newline() {
        let es = [
            json!({}),
            json!({"type":"thinking_level_change"}),
            json!({"type":"model_change"}),
            json!({"type":"session_info"}),
            json!({"type":"custom"}),
            json!({"type":"custom_message"}),
            json!({"type":"label"}),
            msg(json!({})),
            msg(json!({"role":"bashExecution"})),
            msg(json!({"role":"toolResult"})),
            msg(json!({"role":"assistant"})),
        ];
        for e in es {
            let r = render_entry(&e);
            assert!(!r.is_empty() && r.ends_with('\n'), "{e} -> {r:?}");
        }
    }

    #[test]
    fn previews() {
        let cases = [
            (
                msg(
                    json!({"role":"user","content":[{"type":"text","text":"add a --verbose\nflag"},{"type":"image","data":""}]}),
                ),
                "user: add a --verbose flag [image]",
            ),
            (
                msg(json!({"role":"user","content":"  hi\t there  "})),
                "user: hi there",
            ),
            (
                msg(
                    json!({"role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"Let me look."},
                {"type":"toolCall","id":"t","name":"read","arguments":{"path":"src/cli.ts"}}]}),
                ),
                "assistant: Let me look. → read src/cli.ts",
            ),
            (
                msg(
                    json!({"role":"assistant","content":[{"type":"toolCall","id":"t","name":"bash","arguments":{"command":"ls -la"}},
                {"type":"toolCall","id":"u","name":"grep","arguments":{"pattern":"fn main"}}]}),
                ),
                "assistant: → bash ls -la → grep /fn main/ in .",
            ),
            (
                msg(
                    json!({"role":"assistant","content":[{"type":"toolCall","id":"t","name":"mytool","arguments":{"a":1}}]}),
                ),
                "assistant: → mytool {\"a\":1}",
            ),
            (
                msg(json!({"role":"assistant","content":[],"stopReason":"aborted"})),
                "assistant: (aborted)",
            ),
            (
                msg(
                    json!({"role":"assistant","content":[],"stopReason":"error","errorMessage":"boom\nbad"}),
                ),
                "assistant: [error] boom bad",
            ),
            (
                msg(
                    json!({"role":"assistant","content":[{"type":"thinking","thinking":"just thinking"}]}),
                ),
                "assistant: [thinking] just thinking",
            ),
            (
                msg(json!({"role":"assistant","content":[]})),
                "assistant: (no content)",
            ),
            (
                msg(
                    json!({"role":"toolResult","toolName":"read","content":[{"type":"text","text":"import {\n x }"}],"isError":false}),
                ),
                "toolResult read: import { x }",
            ),
            (
                msg(
                    json!({"role":"toolResult","toolName":"bash","content":[{"type":"text","text":"nope"}],"isError":true}),
                ),
                "toolResult bash [error]: nope",
            ),
            (
                msg(json!({"role":"bashExecution","command":"git status"})),
                "bashExecution: $ git status",
            ),
            (
                msg(json!({"role":"custom","customType":"x","content":"y"})),
                "custom x: y",
            ),
            (msg(json!({"role":"odd","content":"y"})), "odd: y"),
            (json!({"type":"message"}), "message"),
            (
                json!({"type":"model_change","provider":"anthropic","modelId":"claude-sonnet-4-5"}),
                "model_change anthropic/claude-sonnet-4-5",
            ),
            (
                json!({"type":"thinking_level_change","thinkingLevel":"medium"}),
                "thinking_level_change medium",
            ),
            (
                json!({"type":"label","targetId":"55667788","label":"plan-b"}),
                "label plan-b → 55667788",
            ),
            (
                json!({"type":"label","targetId":"55667788"}),
                "label cleared → 55667788",
            ),
            (
                json!({"type":"session_info","name":"my session"}),
                "session_info my session",
            ),
            (
                json!({"type":"session_info","name":""}),
                "session_info (name cleared)",
            ),
            (
                json!({"type":"compaction","summary":"Goal:\n- X"}),
                "compaction: Goal: - X",
            ),
            (
                json!({"type":"branch_summary","summary":"went A"}),
                "branch_summary: went A",
            ),
            (
                json!({"type":"branch_summary","summary":""}),
                "branch_summary (empty)",
            ),
            (
                json!({"type":"custom","customType":"state","data":{}}),
                "custom state",
            ),
            (
                json!({"type":"custom_message","customType":"note","content":[{"type":"text","text":"hi"}]}),
                "custom_message note: hi",
            ),
            (json!({"type":"future_thing"}), "future_thing"),
            (json!({"id":"x"}), "entry"),
            (json!({"type":{"a":1}}), "{\"a\":1}"),
            (json!(["not an object"]), "entry"),
            (
                msg(
                    json!({"role":"system","content":"","sections":{"preamble":"P","cwd":"<cwd>\n/x\n</cwd>"},
                           "toolsAdded":[{"name":"read","description":"r","parameters":{}},{"name":"bash"}]}),
                ),
                "system: sections preamble, cwd; tools +read, +bash",
            ),
            (
                msg(
                    json!({"role":"system","content":"Also be brief.","sections":{"skills":"S","cwd":null},
                           "toolsRemoved":[{"name":"bash"}]}),
                ),
                "system: text \"Also be brief.\"; sections skills, -cwd; tools -bash",
            ),
            (msg(json!({"role":"system","content":""})), "system: empty"),
            (
                json!({"type":"context_edit","targetId":"a1b2c3d4","replacement":null}),
                "context_edit → a1b2c3d4: removed",
            ),
            (
                json!({"type":"context_edit","targetId":"a1b2c3d4","replacement":{"content":[{"type":"text","text":"Edited\nanswer."}]}}),
                "context_edit → a1b2c3d4: Edited answer.",
            ),
            (
                json!({"type":"context_edit","targetId":"a1b2c3d4","replacement":{"content":"short"}}),
                "context_edit → a1b2c3d4: short",
            ),
            (
                json!({"type":"context_edit","targetId":"a1b2c3d4"}),
                "context_edit → a1b2c3d4: (no replacement)",
            ),
            (
                json!({"type":"usage","kind":"cache_warm","provider":"anthropic","model":"claude-sonnet-4-5",
                       "usage":{"input":0,"output":1,"cacheRead":2104,"cacheWrite":0,"totalTokens":2105,
                                "cost":{"input":0,"output":0.0000125,"cacheRead":0.0006312,"cacheWrite":0,"total":0.0006437}}}),
                "usage cache_warm anthropic/claude-sonnet-4-5: 2105 tokens, $0.0006437",
            ),
            (
                json!({"type":"usage","kind":"cache_warm"}),
                "usage cache_warm",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(preview(&e), want, "{e}");
            // The same from the line's bytes, without building it.
            let line = js_stringify(&e);
            assert_eq!(
                preview_line(line.as_bytes()).as_deref(),
                Some(want),
                "{line}"
            );
        }
    }

    #[test]
    fn previews_of_odd_lines_agree_between_bytes_and_values() {
        let lines = [
            r#"{"type":"message","message":{"role":"user","content":"dup"},"type":"label","label":"later wins","targetId":1}"#,
            r#"{ "type" : "message" , "message" : { "role" : "assistant" , "content" : [ { "type" : "text" , "text" : "a\u00e9\n\"q\"" } ] } }"#,
            r#"{"type":"message","message":{"role":["x"],"content":[{"type":"image"},{"type":"text","text":5}]}}"#,
            r#"{"type":"message","message":{"role":"toolResult","toolName":null,"content":{"weird":true},"isError":"yes"}}"#,
            r#"{"type":"session_info","name":0}"#,
            r#"{"type":"compaction","summary":12.50}"#,
            r#"{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","name":"grep","arguments":{"pattern":"x","path":""}},{"type":"toolCall","name":"z","arguments":[1,{"b":"c"}]}]}}"#,
            r#"{"type":"message","message":{"role":"system","sections":{"a":"1","a":null,"b":"2"},"toolsAdded":"nope"}}"#,
        ];
        for l in lines {
            let v: Value = serde_json::from_str(l).unwrap();
            assert_eq!(preview_line(l.as_bytes()), Some(preview(&v)), "{l}");
        }
        // Invalid UTF-8 inside a string reads as U+FFFD either way.
        let mut l = br#"{"type":"message","message":{"role":"user","content":"bad "#.to_vec();
        l.extend_from_slice(b"\xff\xfe end\"}}");
        let v = crate::model::pi::migrate::parse_line(&l).unwrap();
        assert_eq!(preview_line(&l), Some(preview(&v)));
        // A long text is read only as far as the preview needs.
        let long = format!(
            "{{\"type\":\"compaction\",\"summary\":\"{}\"}}",
            "é".repeat(100_000)
        );
        let v: Value = serde_json::from_str(&long).unwrap();
        assert_eq!(preview_line(long.as_bytes()), Some(preview(&v)));
    }

    #[test]
    fn one_line_collapses_blanks_and_stops_after_n_characters() {
        fn reference(s: &str, n: usize) -> String {
            let mut out = String::new();
            let mut pending = false;
            for c in s.chars() {
                if out.chars().count() >= n {
                    break;
                }
                if c.is_whitespace() || c.is_control() {
                    pending = !out.is_empty();
                } else {
                    if pending {
                        out.push(' ');
                        pending = false;
                        if out.chars().count() >= n {
                            break;
                        }
                    }
                    out.push(c);
                }
            }
            out
        }
        for s in [
            "",
            " ",
            "a",
            "  a  b  ",
            "a\n\tb\x7fc\x01d",
            "word ".repeat(40).as_str(),
            "é à\u{2028}ü",
            "  日本 語  ",
            "x\u{85}y",
            "ab cd ef gh",
            // Runs longer than a word of bytes, ended by each kind of byte.
            "abcdefghijklmnopqrstuvwxyz0123456789 ABCDEFGHIJKLMNOPQRSTUVWXYZ",
            "abcdefghijklmn\x7fopqrstuvwxyz\x1f0123456789~~~~~~~~!!!!!!!!",
            "abcdefghijkémnopqrstuvwxyz\u{a0}0123456789abcdefgh\u{2028}x",
            "  \t\n  abcdefghijklmnopqrstuvwxyz  \r\n  ",
        ] {
            for n in 0..s.len() + 2 {
                assert_eq!(one_line_n(s, n), reference(s, n), "{s:?} {n}");
            }
            assert_eq!(one_line_n(s, 500), reference(s, 500), "{s:?}");
        }
    }

    #[test]
    fn previews_leave_terminal_escapes_out_whole() {
        let cases = [
            ("\x1b[2mdim\x1b[22m text", "dim text"),
            ("\x1b[38;5;196mred\x1b[0m", "red"),
            ("a\u{9b}1;2mb", "ab"),
            (
                "\x1b]8;;https://x.org\x07link\x1b]8;;\x1b\\ end",
                "link end",
            ),
            ("\x1b(Bplain\x1b=", "plain"),
            ("é\x1b[1mbold\x1b[m", "ébold"),
            ("cut at the end \x1b[", "cut at the end"),
            ("lone \x1b", "lone"),
            ("no escapes at all", "no escapes at all"),
        ];
        for (s, want) in cases {
            assert_eq!(one_line(s), want, "{s:?}");
        }
        // Cut after stripping: the escapes take no room in the preview.
        let s = format!("{}{}", "\x1b[2m".repeat(50), "x".repeat(10));
        assert_eq!(one_line_n(&s, 5), "xxxxx");
    }

    #[test]
    fn truncate_chars_cuts_past_max_characters() {
        fn reference(s: &str, max: usize) -> String {
            if s.chars().count() <= max {
                return s.to_string();
            }
            let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
            let trimmed = out.trim_end().len();
            out.truncate(trimmed);
            out.push('…');
            out
        }
        for s in [
            "",
            "a",
            "ab c",
            "abcdef",
            "é",
            "éé",
            "éàü ö",
            "a é b",
            "日本語テキスト",
        ] {
            for max in 0..10 {
                assert_eq!(truncate_chars(s, max), reference(s, max), "{s:?} {max}");
            }
        }
    }

    #[test]
    fn preview_is_one_short_line() {
        let long = "word ".repeat(100) + "\u{2028}\r\n\x1b[31m";
        let p = preview(&msg(json!({"role":"user","content":long})));
        assert_eq!(p.chars().count(), PREVIEW_CHARS);
        assert!(p.ends_with('…'));
        assert!(!p.chars().any(char::is_control));
        // Long text leaves room for the tool calls.
        let e = msg(
            json!({"role":"assistant","content":[{"type":"text","text":long},
            {"type":"toolCall","id":"t","name":"read","arguments":{"path":"src/cli.ts"}}]}),
        );
        let p = preview(&e);
        assert!(p.ends_with("… → read src/cli.ts"), "{p}");
        assert!(p.chars().count() <= PREVIEW_CHARS);
    }

    #[test]
    fn context_rendering() {
        let ms = vec![
            json!({"role":"user","content":[{"type":"text","text":"hi"},{"type":"image","data":PNG_B64,"mimeType":"image/png"}],"timestamp":1}),
            json!({"role":"assistant","content":[{"type":"text","text":"hello"}],"provider":"anthropic","model":"claude-sonnet-4-5","stopReason":"stop"}),
            json!({"role":"toolResult","toolName":"read","content":[{"type":"text","text":"data"}],"isError":false}),
        ];
        let text = render_context(&ms);
        assert_eq!(
            text,
            "## user\nhi\n\n[image 1: image/png, 8 bytes]\n\n## assistant (anthropic/claude-sonnet-4-5)\nhello\n\n## toolResult (read)\ndata\n\n"
        );
        let concat: String = ms.iter().map(render_context_message).collect();
        assert_eq!(text, concat);
        assert_eq!(render_context(&[]), "");
        assert_eq!(
            render_context_message(&json!({"role":"assistant","content":[]})),
            "## assistant\n(no content)\n\n"
        );
        assert_eq!(
            render_context_message(&json!({"role":"a\nb"})),
            "## a b\n{\n  \"role\": \"a\\nb\"\n}\n\n"
        );
    }

    #[test]
    fn context_json_shape() {
        assert_eq!(context_json(&[]), "[]\n");
        let ms = vec![
            json!({"role":"user","content":"a"}),
            json!({"role":"user","content":"b"}),
        ];
        assert_eq!(
            context_json(&ms),
            "[\n{\"role\":\"user\",\"content\":\"a\"},\n{\"role\":\"user\",\"content\":\"b\"}\n]\n"
        );
        let parsed: Value = serde_json::from_str(&context_json(&ms)).unwrap();
        assert_eq!(parsed, Value::Array(ms));
    }

    #[test]
    fn stringify_like_javascript() {
        // Outputs of Node 20's JSON.stringify(JSON.parse(input)).
        let cases = [
            (
                r#"{"b":1,"10":2,"2":3,"4294967295":4,"4294967294":6,"01":5,"-1":7,"a":{"x":1,"x":2,"y":3,"x":4}}"#,
                r#"{"2":3,"10":2,"4294967294":6,"b":1,"4294967295":4,"01":5,"-1":7,"a":{"x":4,"y":3}}"#,
            ),
            (
                r#"[-0,1e21,1e-7,123e-20,5.0,0.30000000000000004,9007199254740994,1.7976931348623157e308,5e-324,100,1e20]"#,
                r#"[0,1e+21,1e-7,1.23e-18,5,0.30000000000000004,9007199254740994,1.7976931348623157e+308,5e-324,100,100000000000000000000]"#,
            ),
            (
                "\"\\u2028\\u2029\\u0000\\u001f\\u007f\\b\\f\\n\\r\\t\\\"\\\\\\/\\ud800\\udc00é\"",
                "\"\u{2028}\u{2029}\\u0000\\u001f\u{7f}\\b\\f\\n\\r\\t\\\"\\\\/\u{10000}é\"",
            ),
            ("{}", "{}"),
            ("[]", "[]"),
            (
                "[[],{},null,true,false,\"\"]",
                "[[],{},null,true,false,\"\"]",
            ),
        ];
        for (input, want) in cases {
            let v: Value = serde_json::from_str(input).unwrap();
            assert_eq!(js_stringify(&v), want, "{input}");
        }
        // Built directly: serde_json without its `float_roundtrip` feature may
        // parse such a literal one ulp off.
        assert_eq!(
            js_stringify(&json!(123456789012345680000.0)),
            "123456789012345680000"
        );
    }

    #[test]
    fn stringify_pretty_like_javascript() {
        // JSON.stringify(v, null, 2) in Node 20.
        let v = json!({"a":[1,{"b":null}],"c":{},"d":[],"e":"x"});
        assert_eq!(
            js_stringify_pretty(&v),
            "{\n  \"a\": [\n    1,\n    {\n      \"b\": null\n    }\n  ],\n  \"c\": {},\n  \"d\": [],\n  \"e\": \"x\"\n}"
        );
        assert_eq!(js_stringify_pretty(&json!("s")), "\"s\"");
    }
}
