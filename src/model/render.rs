//! Readable text for session entries, and JSON written as JavaScript writes it.
//!
//! Everything a person reads through the mount is produced here: the KIND
//! file of an entry ([`kind_name`], [`render_entry`]), its decoded images
//! ([`images`]), the one-line previews of the `tree` file ([`preview`]), and
//! the readable and JSON forms of a context ([`render_context`],
//! [`context_json`]). All functions are pure and deterministic, so a file's
//! size can be computed by rendering it.
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
//!   [`PREVIEW_CHARS`] characters.
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

use serde_json::Value;

use super::base64;
use super::context::{js_number, js_truthy};

/// `s` unless `n` is 1.
fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The maximum length of a [`preview`], in characters.
pub const PREVIEW_CHARS: usize = 100;

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
/// `context.json`, `parent`) or starts with `image-` gets a leading `_`. It
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
    super::kind::sanitize(raw)
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
/// * `compaction`: a `[compaction: N tokens before, kept from ID]` line, then
///   the summary; `branch_summary`: `[branch summary from ID]`, then the
///   summary.
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
                header.push_str(&format!("kept from {}", text_of(Some(k))));
            }
            header.push_str("]\n");
            header + &text_of(entry.get("summary"))
        }
        Some("branch_summary") => {
            let mut header = String::from("[branch summary");
            if let Some(from) = entry.get("fromId").filter(|v| !v.is_null()) {
                header.push_str(&format!(" from {}", text_of(Some(from))));
            }
            header.push_str("]\n");
            header + &text_of(entry.get("summary"))
        }
        Some("label") => label_text(entry),
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

fn label_text(entry: &Value) -> String {
    let target = text_of(entry.get("targetId"));
    if js_truthy(entry.get("label")) {
        format!("label {} → {target}", text_of(entry.get("label")))
    } else {
        format!("label cleared → {target}")
    }
}

/// Ends `s` with exactly the newline it needs; an empty `s` becomes `"\n"`.
pub(crate) fn finish(mut s: String) -> String {
    if !s.ends_with('\n') {
        s.push('\n');
    }
    s
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
                chunks.push(tail.join("\n"));
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

/// One string per content block (a string content is one block).
fn content_chunks(content: Option<&Value>, link: bool, n_image: &mut usize) -> Vec<String> {
    match content {
        None | Some(Value::Null) => vec![],
        Some(Value::Array(blocks)) => blocks
            .iter()
            .map(|b| block_text(b, link, n_image))
            .collect(),
        Some(other) => vec![text_of(Some(other))],
    }
}

fn block_text(block: &Value, link: bool, n_image: &mut usize) -> String {
    match block.get("type").and_then(Value::as_str) {
        Some("text") => text_of(block.get("text")),
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
                format!(
                    "[image {n}: {mime}, {len} byte{} → image-{n}.{ext}]",
                    plural(len)
                )
            } else {
                format!("[image {n}: {mime}, {len} byte{}]", plural(len))
            }
        }
        Some("thinking") => {
            let thinking = text_of(block.get("thinking"));
            let head = if js_truthy(block.get("redacted")) {
                "[thinking, redacted]"
            } else {
                "[thinking]"
            };
            if thinking.is_empty() {
                head.to_string()
            } else {
                format!("{head}\n{thinking}")
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
            s
        }
        _ => match block {
            Value::String(s) => s.clone(),
            other => js_stringify_pretty(other),
        },
    }
}

/// Joins blocks with a blank line between them; each block ends in `\n`.
pub(crate) fn join_chunks(chunks: &[String]) -> String {
    let mut out = String::new();
    for (i, chunk) in chunks.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(chunk);
        if !chunk.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// A string as is; `null`/missing as empty; anything else as JSON.
fn text_of(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => js_stringify(other),
    }
}

fn type_str(entry: &Value) -> Option<&str> {
    entry.get("type").and_then(Value::as_str)
}

/// A decoded image block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// `png`, `jpg`, `gif`, `webp`, or `bin` for any other `mimeType`.
    pub ext: &'static str,
    /// The decoded bytes.
    pub data: Vec<u8>,
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

pub(crate) fn image_ext(mime: Option<&Value>) -> &'static str {
    let Some(mime) = mime.and_then(Value::as_str) else {
        return "bin";
    };
    let essence = mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match essence.as_str() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        _ => "bin",
    }
}

/// A one-line preview for the `tree` overview, starting with the kind:
/// `user: add a --verbose flag`, `assistant: Let me look… → read src/cli.ts`,
/// `toolResult read: import …`, `bashExecution: $ ls`,
/// `model_change anthropic/claude-sonnet-4-5`, `thinking_level_change high`,
/// `label plan-b → 55667788`, `compaction: SUMMARY`, ….
///
/// Whitespace runs and control characters become one space, and the result
/// is cut to [`PREVIEW_CHARS`] characters, ending in `…` when cut.
pub fn preview(entry: &Value) -> String {
    let raw = match type_str(entry) {
        Some("message") => match entry.get("message") {
            Some(m @ Value::Object(_)) => message_preview(m),
            _ => "message".to_string(),
        },
        Some("custom_message") => {
            format!(
                "custom_message {}: {}",
                text_of(entry.get("customType")),
                content_preview(entry.get("content"))
            )
        }
        Some("compaction") => format!("compaction: {}", text_of(entry.get("summary"))),
        Some("branch_summary") => {
            if js_truthy(entry.get("summary")) {
                format!("branch_summary: {}", text_of(entry.get("summary")))
            } else {
                "branch_summary (empty)".to_string()
            }
        }
        Some("model_change") => format!(
            "model_change {}/{}",
            text_of(entry.get("provider")),
            text_of(entry.get("modelId"))
        ),
        Some("thinking_level_change") => {
            format!(
                "thinking_level_change {}",
                text_of(entry.get("thinkingLevel"))
            )
        }
        Some("label") => label_text(entry),
        Some("session_info") => {
            if js_truthy(entry.get("name")) {
                format!("session_info {}", text_of(entry.get("name")))
            } else {
                "session_info (name cleared)".to_string()
            }
        }
        Some("custom") => format!("custom {}", text_of(entry.get("customType"))),
        Some(t) => t.to_string(),
        None => kind_name(entry),
    };
    truncate_chars(&one_line(&raw), PREVIEW_CHARS)
}

fn message_preview(m: &Value) -> String {
    let role = match m.get("role") {
        Some(Value::String(r)) => r.clone(),
        None => "message".to_string(),
        other => text_of(other),
    };
    match role.as_str() {
        "assistant" => {
            let mut text = String::new();
            let mut thinking = String::new();
            let mut tools = String::new();
            if let Some(Value::Array(blocks)) = m.get("content") {
                for b in blocks {
                    match b.get("type").and_then(Value::as_str) {
                        Some("text") => {
                            text.push(' ');
                            text.push_str(&text_of(b.get("text")));
                        }
                        Some("thinking") => {
                            thinking.push(' ');
                            thinking.push_str(&text_of(b.get("thinking")));
                        }
                        Some("toolCall") => {
                            tools.push_str(" → ");
                            tools.push_str(&tool_call_summary(b));
                        }
                        _ => {}
                    }
                }
            } else if let Some(Value::String(s)) = m.get("content") {
                text = s.clone();
            }
            let mut text = one_line(&text);
            if text.is_empty() && tools.is_empty() && !one_line(&thinking).is_empty() {
                text = format!("[thinking] {}", one_line(&thinking));
            }
            let mut tail = one_line(&tools);
            if js_truthy(m.get("errorMessage")) {
                tail.push_str(&format!(
                    " [error] {}",
                    one_line(&text_of(m.get("errorMessage")))
                ));
            } else if m.get("stopReason").and_then(Value::as_str) == Some("aborted") {
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
                (_, true) => format!("{prefix}{text}"),
                (true, false) => format!("{prefix}{tail}"),
                (false, false) => format!("{prefix}{text} {tail}"),
            }
        }
        "toolResult" => {
            let name = text_of(m.get("toolName"));
            let name = if name.is_empty() {
                String::new()
            } else {
                format!(" {name}")
            };
            let err = if js_truthy(m.get("isError")) {
                " [error]"
            } else {
                ""
            };
            format!(
                "toolResult{name}{err}: {}",
                content_preview(m.get("content"))
            )
        }
        "bashExecution" => format!("bashExecution: $ {}", text_of(m.get("command"))),
        "custom" => format!(
            "custom {}: {}",
            text_of(m.get("customType")),
            content_preview(m.get("content"))
        ),
        _ => format!("{role}: {}", content_preview(m.get("content"))),
    }
}

/// Text blocks joined by spaces, images as `[image]`.
fn content_preview(content: Option<&Value>) -> String {
    match content {
        Some(Value::Array(blocks)) => {
            let parts: Vec<String> = blocks
                .iter()
                .filter_map(|b| match b.get("type").and_then(Value::as_str) {
                    Some("text") => Some(text_of(b.get("text"))),
                    Some("image") => Some("[image]".to_string()),
                    _ => None,
                })
                .collect();
            parts.join(" ")
        }
        other => text_of(other),
    }
}

fn tool_call_summary(block: &Value) -> String {
    let name = text_of(block.get("name"));
    let args = block.get("arguments");
    let arg = |k: &str| args.and_then(|a| a.get(k)).filter(|v| js_truthy(Some(v)));
    let path = || text_of(arg("path").or_else(|| arg("file_path")));
    let detail = match name.as_str() {
        "read" | "write" | "edit" => path(),
        "bash" => text_of(arg("command")),
        "grep" => format!(
            "/{}/ in {}",
            text_of(arg("pattern")),
            arg("path").map_or(".".into(), |p| text_of(Some(p)))
        ),
        "find" => format!(
            "{} in {}",
            text_of(arg("pattern")),
            arg("path").map_or(".".into(), |p| text_of(Some(p)))
        ),
        "ls" => arg("path").map_or(".".into(), |p| text_of(Some(p))),
        _ => args.map(js_stringify).unwrap_or_default(),
    };
    if detail.is_empty() {
        name
    } else {
        format!("{name} {detail}")
    }
}

/// Collapses whitespace and control characters into single spaces, trimmed.
/// `s` on one line (runs of whitespace and control characters become one space).
/// Previews are cut to [`PREVIEW_CHARS`] later, so only a prefix is worth building.
pub(crate) fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(4 * PREVIEW_CHARS));
    let mut pending_space = false;
    for c in s.chars() {
        if out.len() > 4 * PREVIEW_CHARS {
            break;
        }
        if c.is_whitespace() || c.is_control() {
            pending_space = !out.is_empty();
        } else {
            if pending_space {
                out.push(' ');
                pending_space = false;
            }
            out.push(c);
        }
    }
    out
}

pub(crate) fn truncate_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    out.push('…');
    out
}

/// The readable `context`: [`render_context_message`] of each message,
/// concatenated. Empty for no messages.
pub fn render_context(messages: &[Value]) -> String {
    messages.iter().map(render_context_message).collect()
}

/// One message of the readable `context`: a heading line naming the role
/// (`## user`, `## assistant (anthropic/claude-sonnet-4-5)`,
/// `## toolResult (read)`), the message rendered as in [`render_entry`]
/// (image placeholders without a file name), and a blank line.
pub fn render_context_message(m: &Value) -> String {
    let mut out = String::from("## ");
    out.push_str(&context_heading(m));
    out.push('\n');
    match m {
        Value::Object(_) => out.push_str(&render_message(m, false)),
        other => out.push_str(&finish(js_stringify_pretty(other))),
    }
    out.push('\n');
    out
}

fn context_heading(m: &Value) -> String {
    let role = match m.get("role") {
        Some(Value::String(r)) => r.clone(),
        None => "message".to_string(),
        other => text_of(other),
    };
    let detail = match role.as_str() {
        "assistant" => {
            let provider = text_of(m.get("provider"));
            let model = text_of(m.get("model"));
            match (provider.is_empty(), model.is_empty()) {
                (false, false) => format!("{provider}/{model}"),
                (true, false) => model,
                (false, true) => provider,
                (true, true) => String::new(),
            }
        }
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

/// `context.json`: `"[\n"`, each message as [`js_stringify`] joined with
/// `",\n"`, then `"\n]\n"`; `"[]\n"` for no messages.
pub fn context_json(messages: &[Value]) -> String {
    if messages.is_empty() {
        return "[]\n".to_string();
    }
    let mut out = String::from("[\n");
    for (i, m) in messages.iter().enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        write_json(&mut out, m, None, 0);
    }
    out.push_str("\n]\n");
    out
}

/// Exactly JavaScript's `JSON.stringify(v)`.
pub fn js_stringify(v: &Value) -> String {
    let mut out = String::new();
    write_json(&mut out, v, None, 0);
    out
}

/// JavaScript's `JSON.stringify(v, null, 2)`.
pub fn js_stringify_pretty(v: &Value) -> String {
    let mut out = String::new();
    write_json(&mut out, v, Some("  "), 0);
    out
}

fn newline_indent(out: &mut String, indent: &str, depth: usize) {
    out.push('\n');
    for _ in 0..depth {
        out.push_str(indent);
    }
}

fn write_json(out: &mut String, v: &Value, indent: Option<&str>, depth: usize) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&js_number(n)),
        Value::String(s) => write_json_string(out, s),
        Value::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if let Some(ind) = indent {
                    newline_indent(out, ind, depth + 1);
                }
                write_json(out, item, indent, depth + 1);
            }
            if let Some(ind) = indent {
                newline_indent(out, ind, depth);
            }
            out.push(']');
        }
        Value::Object(map) => {
            if map.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push('{');
            let mut first = true;
            let mut member = |out: &mut String, k: &str, v: &Value| {
                if !first {
                    out.push(',');
                }
                first = false;
                if let Some(ind) = indent {
                    newline_indent(out, ind, depth + 1);
                }
                write_json_string(out, k);
                out.push(':');
                if indent.is_some() {
                    out.push(' ');
                }
                write_json(out, v, indent, depth + 1);
            };
            // JavaScript objects list array-index keys first, ascending.
            if map.keys().any(|k| array_index(k).is_some()) {
                let mut indexed: Vec<(u32, &String, &Value)> = map
                    .iter()
                    .filter_map(|(k, v)| array_index(k).map(|i| (i, k, v)))
                    .collect();
                indexed.sort_by_key(|(i, _, _)| *i);
                for (_, k, v) in indexed {
                    member(out, k, v);
                }
                for (k, v) in map.iter().filter(|(k, _)| array_index(k).is_none()) {
                    member(out, k, v);
                }
            } else {
                for (k, v) in map {
                    member(out, k, v);
                }
            }
            if let Some(ind) = indent {
                newline_indent(out, ind, depth);
            }
            out.push('}');
        }
    }
}

/// The index if `k` is a canonical array index (`0` to `4294967294`).
fn array_index(k: &str) -> Option<u32> {
    let b = k.as_bytes();
    if b.is_empty()
        || b.len() > 10
        || !b.iter().all(u8::is_ascii_digit)
        || (b[0] == b'0' && b.len() > 1)
    {
        return None;
    }
    let v: u64 = k.parse().ok()?;
    (v < u64::from(u32::MAX)).then_some(v as u32)
}

fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: Option<&str> = match b {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            b'\n' => Some("\\n"),
            b'\r' => Some("\\r"),
            b'\t' => Some("\\t"),
            0x08 => Some("\\b"),
            0x0c => Some("\\f"),
            0x00..=0x1f => None,
            _ => continue,
        };
        out.push_str(&s[start..i]);
        match esc {
            Some(e) => out.push_str(e),
            None => out.push_str(&format!("\\u{b:04x}")),
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
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
        ];
        for (e, want) in cases {
            assert_eq!(preview(&e), want, "{e}");
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
