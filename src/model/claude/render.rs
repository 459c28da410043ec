//! Readable text for Claude Code lines and contexts.
//!
//! The same conventions as Pi's [`crate::model::pi::render`]: message text verbatim,
//! markers as whole lines in square brackets, every KIND file ending in `\n`, images as
//! placeholders naming their `image-N.EXT` file, tool calls with their input as
//! indented JSON. What is particular to Claude Code:
//!
//! * one reply is stored one block per line: a line that is one part of a longer reply
//!   starts with `[part N of M of reply MSG_ID]`, so the split reads without guessing;
//! * a tool result names the tool it answers (found on its parent line) and its id;
//! * `meta` lines (text Claude Code sent but the user did not type) start with
//!   `[meta]`; a compact summary with `[compact summary]`;
//! * system lines show their subtype's data (`turn_duration`, `local_command`,
//!   `compact_boundary`), attachments the text Claude Code sends for them.

use crate::model::core::base64;
use crate::model::core::js::{js_stringify, js_stringify_pretty};
use crate::model::core::text::{
    Image, PREVIEW_CHARS, finish, image_ext, join_chunks, one_line, truncate_chars,
};
use serde_json::Value;

/// What a line's rendering needs from elsewhere in the file.
#[derive(Debug, Clone, Default)]
pub struct Extra {
    /// For a tool result: the name of the tool whose call it answers.
    pub tool_name: Option<String>,
    /// For an assistant line that is one of several of its reply: (1-based part,
    /// parts, `message.id`).
    pub part: Option<(usize, usize, String)>,
    /// For a tool result spilled to `tool-results/`: the file shown beside it.
    pub full_output: Option<String>,
}

fn text_of(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => js_stringify(other),
    }
}

fn ty(v: &Value) -> &str {
    v.get("type").and_then(Value::as_str).unwrap_or("")
}

fn is_true(v: Option<&Value>) -> bool {
    v.and_then(Value::as_bool) == Some(true)
}

/// The KIND file of a line: never empty, ending in `\n`.
pub fn render_entry(v: &Value, x: &Extra) -> String {
    let mut n_image = 0;
    let body = match ty(v) {
        "user" => {
            let c = v.get("message").and_then(|m| m.get("content"));
            let mut head = Vec::new();
            if is_true(v.get("isCompactSummary")) {
                head.push("[compact summary]".to_string());
            } else if is_true(v.get("isMeta")) {
                head.push("[meta]".to_string());
            }
            let mut chunks = content_chunks(c, true, &mut n_image, x);
            if let Some(f) = &x.full_output {
                chunks.push(format!("[full output: tool-results/{f}]"));
            }
            let body = join_chunks(&chunks);
            if head.is_empty() {
                body
            } else {
                head.push(body);
                head.join("\n")
            }
        }
        "assistant" => {
            let m = v.get("message");
            let mut chunks =
                content_chunks(m.and_then(|m| m.get("content")), true, &mut n_image, x);
            if let Some((p, n, id)) = &x.part {
                let head = format!("[part {p} of {n} of reply {id}]");
                match chunks.first_mut() {
                    Some(c) => *c = format!("{head}\n{c}"),
                    None => chunks.push(head),
                }
            }
            if is_true(v.get("isApiErrorMessage")) {
                chunks.push(
                    "[error: the request failed; Claude Code does not send this reply]".into(),
                );
            }
            if let Some(r) = m
                .and_then(|m| m.get("stop_reason"))
                .and_then(Value::as_str)
                .filter(|r| !matches!(*r, "end_turn" | "tool_use" | "stop_sequence"))
            {
                chunks.push(format!("[stop reason: {r}]"));
            }
            join_chunks(&chunks)
        }
        "system" => render_system(v),
        "attachment" => render_attachment(v, x),
        _ => js_stringify_pretty(v),
    };
    if body.trim().is_empty() {
        "(no content)\n".to_string()
    } else {
        finish(body)
    }
}

/// An attachment line: `[attachment TYPE]` (and how it is sent), then the text Claude
/// Code sends for it: the `rendered` texts 2.1.332 stores with the line, else the text
/// its renderers make of the attachment; a `prompt_snapshot` (never sent) shows the
/// system prompt and tools it records; anything else its JSON.
fn render_attachment(v: &Value, x: &Extra) -> String {
    let a = v.get("attachment").cloned().unwrap_or(Value::Null);
    let t = text_of(a.get("type"));
    let stored: Vec<String> = match v.get("rendered") {
        Some(Value::Array(rs)) => rs
            .iter()
            .map(|r| {
                let c = r.get("content");
                let t = join_chunks(&content_chunks(c, false, &mut 0, x));
                unwrap_reminder(t.trim_end_matches('\n')).to_string()
            })
            .filter(|t| !t.trim().is_empty())
            .collect(),
        _ => Vec::new(),
    };
    if !stored.is_empty() {
        let how = match v.get("renderedRole").and_then(Value::as_str) {
            Some("user") => ", sent as user text",
            Some("system") => ", sent as system text",
            _ => "",
        };
        return format!("[attachment {t}{how}]\n{}", stored.join("\n\n"));
    }
    let texts: Vec<String> = super::api::attachment_messages(&a)
        .iter()
        .map(|m| {
            let c = m.get("message").and_then(|m| m.get("content"));
            let t = join_chunks(&content_chunks(c, false, &mut 0, x));
            super::api::unwrap_reminder(t.trim_end_matches('\n')).to_string()
        })
        .collect();
    if !texts.iter().all(|t| t.trim().is_empty()) {
        return format!("[attachment {t}]\n{}", texts.join("\n"));
    }
    if t == "prompt_snapshot" {
        return render_prompt_snapshot(&a);
    }
    let how = if NOT_SENT.contains(&t.as_str()) {
        ": not sent to the model"
    } else {
        ""
    };
    let mut out = format!("[attachment {t}{how}]\n");
    out.push_str(&js_stringify_pretty(&a));
    out
}

/// Attachment types 2.1.332 writes that are never sent (CLAUDE-FORMAT.md, 2.1.332 D).
const NOT_SENT: &[&str] = &["prompt_snapshot", "session_context"];

/// `<system-reminder>\n…\n</system-reminder>` without its wrapper.
fn unwrap_reminder(t: &str) -> &str {
    t.strip_prefix("<system-reminder>\n")
        .and_then(|r| r.strip_suffix("\n</system-reminder>"))
        .unwrap_or(t)
}

/// A `prompt_snapshot` (2.1.332): the system prompt and tools of the requests made
/// from here on, as recorded; the line itself is never sent.
fn render_prompt_snapshot(a: &Value) -> String {
    let mut parts =
        vec!["[attachment prompt_snapshot: not sent to the model; the system prompt and tools of the requests from here]".to_string()];
    if let Some(p) = a.get("cliPrefix").and_then(Value::as_str) {
        parts.push(format!("[prompt prefix]\n{p}"));
    }
    match a.get("systemPrompt") {
        Some(Value::Array(ps)) => {
            let texts: Vec<String> = ps.iter().map(|p| text_of(Some(p))).collect();
            parts.push(format!("[system prompt]\n{}", texts.join("\n")));
        }
        Some(Value::Null) | None => {}
        Some(other) => parts.push(format!("[system prompt]\n{}", text_of(Some(other)))),
    }
    if let Some(Value::Array(tools)) = a.get("tools") {
        for tool in tools {
            // `schema` is the definition sent to the API (`name`, `description`,
            // `input_schema`). Read in the shape of Pi's declarations, whose reading is
            // shared.
            let def = tool.get("schema").filter(|d| d.is_object()).unwrap_or(tool);
            let pick = |k: &str| {
                tool.get(k)
                    .or_else(|| def.get(k))
                    .cloned()
                    .unwrap_or(Value::Null)
            };
            let decl = serde_json::json!({
                "name": pick("name"),
                "description": pick("description"),
                "parameters": def
                    .get("input_schema")
                    .or_else(|| tool.get("input_schema"))
                    .cloned()
                    .unwrap_or(Value::Null),
            });
            parts.push(crate::model::core::text::render_tool(&decl));
        }
    }
    let flags: serde_json::Map<String, Value> = a
        .as_object()
        .map(|o| {
            o.iter()
                .filter(|(k, _)| {
                    !matches!(k.as_str(), "type" | "systemPrompt" | "tools" | "cliPrefix")
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    if !flags.is_empty() {
        parts.push(format!(
            "[settings]\n{}",
            js_stringify_pretty(&Value::Object(flags))
        ));
    }
    join_chunks(&parts)
}

/// What an attachment tells the model, in a few words, for `tree`: its type, then
/// the gist (`model claude-opus-5-5 (Opus 5.5)`, `tools +Read +Edit`, `date
/// 2026-12-01`). A run of attachments is drawn on one line of these.
pub fn attachment_gist(v: &Value) -> String {
    let a = v.get("attachment").unwrap_or(&Value::Null);
    let t = text_of(a.get("type"));
    let s = |k: &str| a.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let names = |k: &str, sign: char| -> Vec<String> {
        match a.get(k) {
            Some(Value::Array(xs)) => xs
                .iter()
                .filter_map(Value::as_str)
                .map(|n| format!("{sign}{n}"))
                .collect(),
            _ => Vec::new(),
        }
    };
    let delta = |add: &str, remove: &str| -> String {
        let mut v = names(add, '+');
        v.extend(names(remove, '-'));
        if v.is_empty() {
            "(no change)".into()
        } else {
            v.join(" ")
        }
    };
    let detail = match t.as_str() {
        "environment" => {
            let e = a.get("snapshot").unwrap_or(a);
            let g = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("");
            let mut facts: Vec<&str> = [g("platform"), g("shell")]
                .into_iter()
                .filter(|x| !x.is_empty())
                .collect();
            if e.get("isGitRepo").and_then(Value::as_bool) == Some(true) {
                facts.push("git repository");
            }
            let dir = g("workingDirectory");
            match (dir.is_empty(), facts.is_empty()) {
                (_, true) => dir.to_string(),
                (true, false) => facts.join(", "),
                (false, false) => format!("{dir} ({})", facts.join(", ")),
            }
        }
        "model" => {
            let id = a.get("identity");
            let g = |k: &str| {
                id.and_then(|i| i.get(k))
                    .and_then(Value::as_str)
                    .unwrap_or("")
            };
            match (g("modelId"), g("marketingName")) {
                ("", "") => s("text"),
                (m, "") => m.to_string(),
                ("", n) => n.to_string(),
                (m, n) => format!("{m} ({n})"),
            }
        }
        "deferred_tools_delta" => return format!("tools {}", delta("addedNames", "removedNames")),
        "agent_listing_delta" => return format!("agents {}", delta("addedTypes", "removedTypes")),
        "skill_listing" => {
            let names: Vec<&str> = a
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or("")
                .lines()
                .filter_map(|l| l.strip_prefix("- "))
                .filter_map(|l| l.split(':').next())
                .collect();
            return format!("skills {}", names.join(", "))
                .trim_end()
                .to_string();
        }
        "date" => s("date"),
        "remote_session_change" => return "git attribution".into(),
        "prompt_snapshot" => {
            let n = a.get("tools").and_then(Value::as_array).map(Vec::len);
            return match n {
                Some(n) => format!("prompt snapshot ({n} tools, not sent)"),
                None => "prompt snapshot (not sent)".into(),
            };
        }
        "compact_file_reference" | "file" | "new_file" => {
            let d = s("displayPath");
            if d.is_empty() { s("filename") } else { d }
        }
        _ => {
            let text = s("text");
            if !text.is_empty() {
                text
            } else {
                match v.get("rendered") {
                    Some(Value::Array(rs)) => rs
                        .first()
                        .and_then(|r| r.get("content"))
                        .and_then(Value::as_str)
                        .map(|c| unwrap_reminder(c).to_string())
                        .unwrap_or_default(),
                    _ => String::new(),
                }
            }
        }
    };
    if detail.is_empty() {
        t
    } else {
        format!("{t} {detail}")
    }
}

fn render_system(v: &Value) -> String {
    let sub = v.get("subtype").and_then(Value::as_str).unwrap_or("");
    match sub {
        "turn_duration" => {
            let ms = v.get("durationMs").and_then(Value::as_f64).unwrap_or(0.0);
            let mut s = format!("turn took {:.1} s", ms / 1000.0);
            if let Some(n) = v.get("messageCount").filter(|n| !n.is_null()) {
                s.push_str(&format!(", {} messages", text_of(Some(n))));
            }
            s
        }
        "compact_boundary" => {
            let meta = v.get("compactMetadata");
            let mut head = String::from("[compaction");
            let mut parts = Vec::new();
            if let Some(t) = meta.and_then(|m| m.get("trigger")).filter(|t| !t.is_null()) {
                parts.push(format!("{} trigger", text_of(Some(t))));
            }
            if let Some(t) = meta
                .and_then(|m| m.get("preTokens"))
                .filter(|t| !t.is_null())
            {
                parts.push(format!("{} tokens before", text_of(Some(t))));
            }
            if let Some(n) = meta
                .and_then(|m| m.get("preservedMessages"))
                .and_then(|p| p.get("uuids"))
                .and_then(Value::as_array)
            {
                parts.push(format!("{} messages kept", n.len()));
            }
            if !parts.is_empty() {
                head.push_str(": ");
                head.push_str(&parts.join(", "));
            }
            head.push_str("]\n");
            head + &text_of(v.get("content"))
        }
        _ => {
            let c = text_of(v.get("content"));
            if c.is_empty() {
                js_stringify_pretty(v)
            } else {
                c
            }
        }
    }
}

/// One string per content block (a string content is one block).
fn content_chunks(c: Option<&Value>, link: bool, n_image: &mut usize, x: &Extra) -> Vec<String> {
    match c {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(bs)) => bs.iter().map(|b| block_text(b, link, n_image, x)).collect(),
        Some(other) => vec![text_of(Some(other))],
    }
}

fn image_placeholder(b: &Value, link: bool, n_image: &mut usize) -> String {
    *n_image += 1;
    let n = *n_image;
    let src = b.get("source");
    let mime = src
        .and_then(|s| s.get("media_type"))
        .and_then(Value::as_str)
        .unwrap_or("unknown type")
        .to_string();
    let len = src
        .and_then(|s| s.get("data"))
        .and_then(Value::as_str)
        .map_or(0, base64::decoded_len);
    if link {
        let ext = image_ext(src.and_then(|s| s.get("media_type")));
        format!("[image {n}: {mime}, {len} bytes → image-{n}.{ext}]")
    } else {
        format!("[image {n}: {mime}, {len} bytes]")
    }
}

fn block_text(b: &Value, link: bool, n_image: &mut usize, x: &Extra) -> String {
    match ty(b) {
        "text" => text_of(b.get("text")),
        "image" => image_placeholder(b, link, n_image),
        "thinking" => {
            let t = text_of(b.get("thinking"));
            if t.is_empty() {
                "[thinking]".into()
            } else {
                format!("[thinking]\n{t}")
            }
        }
        "redacted_thinking" => "[thinking, redacted]".into(),
        "tool_use" | "server_tool_use" | "mcp_tool_use" => {
            let mut s = format!(
                "[tool call {} ({})]",
                text_of(b.get("name")),
                text_of(b.get("id"))
            );
            if let Some(i) = b.get("input") {
                s.push('\n');
                s.push_str(&js_stringify_pretty(i));
            }
            s
        }
        "tool_result" => {
            let name = x
                .tool_name
                .as_deref()
                .map(|n| format!("{n} "))
                .unwrap_or_default();
            let mut s = format!("[tool result {name}({})]", text_of(b.get("tool_use_id")));
            if is_true(b.get("is_error")) {
                s.push_str("\n[error]");
            }
            let inner = content_chunks(b.get("content"), link, n_image, x);
            let inner = join_chunks(&inner);
            if !inner.is_empty() {
                s.push('\n');
                s.push_str(inner.strip_suffix('\n').unwrap_or(&inner));
            }
            s
        }
        _ => match b {
            Value::String(s) => s.clone(),
            other => js_stringify_pretty(other),
        },
    }
}

/// The image blocks of a line, decoded, in the order of the placeholders.
pub fn images(v: &Value) -> Vec<Image> {
    let mut out = Vec::new();
    let c = v.get("message").and_then(|m| m.get("content"));
    collect_images(c, &mut out);
    out
}

fn collect_images(c: Option<&Value>, out: &mut Vec<Image>) {
    let Some(Value::Array(bs)) = c else { return };
    for b in bs {
        match ty(b) {
            "image" => {
                let src = b.get("source");
                out.push(Image {
                    ext: image_ext(src.and_then(|s| s.get("media_type"))),
                    data: src
                        .and_then(|s| s.get("data"))
                        .and_then(Value::as_str)
                        .map_or_else(Vec::new, base64::decode),
                });
            }
            "tool_result" => collect_images(b.get("content"), out),
            _ => {}
        }
    }
}

/// A one-line preview for `tree`, starting with the KIND.
pub fn preview(v: &Value, kind: &str, x: &Extra) -> String {
    let raw = match ty(v) {
        "user" | "assistant" => {
            let c = v.get("message").and_then(|m| m.get("content"));
            let mut parts = Vec::new();
            match c {
                Some(Value::Array(bs)) => {
                    for b in bs {
                        match ty(b) {
                            "text" => parts.push(text_of(b.get("text"))),
                            "image" => parts.push("[image]".into()),
                            "thinking" => {
                                parts.push(format!("[thinking] {}", text_of(b.get("thinking"))))
                            }
                            "redacted_thinking" => parts.push("[thinking]".into()),
                            "tool_use" => parts.push(format!(
                                "→ {} {}",
                                text_of(b.get("name")),
                                tool_input_summary(b.get("input"))
                            )),
                            "tool_result" => {
                                let err = if is_true(b.get("is_error")) {
                                    "[error] "
                                } else {
                                    ""
                                };
                                let inner = match b.get("content") {
                                    Some(Value::Array(i)) => i
                                        .iter()
                                        .map(|x| match ty(x) {
                                            "text" => text_of(x.get("text")),
                                            "image" => "[image]".into(),
                                            _ => String::new(),
                                        })
                                        .collect::<Vec<_>>()
                                        .join(" "),
                                    other => text_of(other),
                                };
                                parts.push(format!("{err}{inner}"));
                            }
                            _ => {}
                        }
                    }
                }
                other => parts.push(text_of(other)),
            }
            let name = match (&x.tool_name, kind) {
                (Some(n), "toolResult") => format!("{kind} {n}"),
                _ => kind.to_string(),
            };
            format!("{name}: {}", parts.join(" "))
        }
        "system" => {
            let sub = v.get("subtype").and_then(Value::as_str).unwrap_or("system");
            match sub {
                "turn_duration" => format!(
                    "{kind} {:.1} s",
                    v.get("durationMs").and_then(Value::as_f64).unwrap_or(0.0) / 1000.0
                ),
                _ => format!("{kind}: {}", text_of(v.get("content"))),
            }
        }
        "attachment" => format!("{kind} {}", attachment_gist(v)),
        _ => kind.to_string(),
    };
    truncate_chars(&one_line(&raw), PREVIEW_CHARS)
}

fn tool_input_summary(i: Option<&Value>) -> String {
    let Some(i) = i else { return String::new() };
    for k in [
        "command",
        "file_path",
        "path",
        "pattern",
        "description",
        "url",
        "query",
    ] {
        if let Some(Value::String(s)) = i.get(k) {
            return s.clone();
        }
    }
    js_stringify(i)
}

/// The readable `context`: each message under `## ROLE`, rendered as its KIND file
/// would be (image placeholders without a file name), then a blank line.
pub fn render_context(msgs: &[Value]) -> String {
    let mut out = String::new();
    let x = Extra::default();
    for m in msgs {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("message");
        out.push_str("## ");
        out.push_str(&one_line(role));
        out.push('\n');
        let mut n = 0;
        let body = join_chunks(&content_chunks(m.get("content"), false, &mut n, &x));
        out.push_str(&if body.trim().is_empty() {
            "(no content)\n".to_string()
        } else {
            finish(body)
        });
        out.push('\n');
    }
    out
}
