//! opencode messages as readable text: the KIND file of an entry, its images, the one
//! line `tree` shows, `session.json`, and the readable `context`.
//!
//! The conventions of the other agents' renderings: text verbatim, markers as whole
//! lines in square brackets, tool calls with their input as indented JSON, images as
//! placeholders naming their `image-N.EXT` file, every file ending in `\n`.
//!
//! * KIND is the role (`user`, `assistant`), except a compaction request
//!   (`compaction`) and its summary (`summary`); a message whose row is not JSON is
//!   `damaged`.
//! * An assistant message is one model request (§2.3): its reasoning (`[reasoning]`),
//!   text, each tool call with its result (`[tool call bash (call_1)]`, then
//!   `[tool result bash (call_1)]` or `[tool error …]`), the files a step patched; an
//!   error the request ended with comes first (`[error APIError: …]`).
//! * A user message: its text, text opencode wrote itself (`[synthetic]`, the "Read
//!   tool" lines of an attached file), attached files (`[image 1: image/png, 84 bytes →
//!   image-1.png]`), a compaction request (`[compaction: automatic]`).
//! * What is particular to where a message is: a message opencode deleted
//!   (`[deleted by opencode …]`), hidden by a pending `/undo` (`[hidden by /undo …]`),
//!   the first message of a subagent's session (`[subagent session …]`).

use super::index::{OpencodeSession, Part};
use crate::model::core::base64;
use crate::model::core::js::{js_stringify, js_stringify_pretty};
use crate::model::core::session::Session;
use crate::model::core::text::{
    Image, PREVIEW_CHARS, finish, image_ext, join_chunks, one_line, text_of, truncate_chars,
};
use serde_json::Value;

fn ty(v: &Value) -> &str {
    v.get("type").and_then(Value::as_str).unwrap_or("")
}

fn st<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

fn truthy(v: Option<&Value>) -> bool {
    crate::model::core::js::js_truthy(v)
}

/// The file parts and tool attachments of a message that are images, in order.
fn image_parts(parts: &[Value]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for p in parts {
        let mut add = |mime: &str, url: &str| {
            if mime.starts_with("image/") && url.starts_with("data:") {
                out.push((mime.to_string(), url.to_string()));
            }
        };
        match ty(p) {
            "file" => add(st(p, "mime"), st(p, "url")),
            "tool" => {
                for a in p
                    .get("state")
                    .and_then(|st| st.get("attachments"))
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    add(st(a, "mime"), st(a, "url"));
                }
            }
            _ => {}
        }
    }
    out
}

/// The payload of a `data:` URL, decoded.
fn data_url_bytes(url: &str) -> Vec<u8> {
    match url.split_once(',') {
        Some((head, data)) if head.ends_with(";base64") => base64::decode(data),
        Some((_, data)) => data.as_bytes().to_vec(),
        None => Vec::new(),
    }
}

fn image_placeholder(n: usize, mime: &str, url: &str, name: Option<&str>) -> String {
    let ext = image_ext(Some(&Value::String(mime.to_string())));
    let len = data_url_bytes(url).len();
    let name = name.map(|n| format!("{n}, ")).unwrap_or_default();
    format!("[image {n}: {name}{mime}, {len} bytes → image-{n}.{ext}]")
}

/// The text of one part, in a KIND file (`n_image` counts the images placed).
fn part_text(p: &Value, n_image: &mut usize) -> Option<String> {
    Some(match ty(p) {
        "text" => {
            let t = st(p, "text");
            if truthy(p.get("synthetic")) {
                format!("[synthetic]\n{t}")
            } else if truthy(p.get("ignored")) {
                format!("[ignored]\n{t}")
            } else {
                t.to_string()
            }
        }
        "reasoning" => {
            let t = st(p, "text");
            if t.is_empty() {
                "[reasoning]".into()
            } else {
                format!("[reasoning]\n{t}")
            }
        }
        "file" => {
            let mime = st(p, "mime");
            let url = st(p, "url");
            let name = p.get("filename").and_then(Value::as_str);
            if mime.starts_with("image/") && url.starts_with("data:") {
                *n_image += 1;
                image_placeholder(*n_image, mime, url, name)
            } else {
                format!(
                    "[file {}: {mime}, {} bytes]",
                    name.unwrap_or("(unnamed)"),
                    data_url_bytes(url).len()
                )
            }
        }
        "tool" => tool_text(p, n_image),
        "compaction" => {
            let how = if truthy(p.get("auto")) {
                "automatic"
            } else {
                "/compact"
            };
            let overflow = if truthy(p.get("overflow")) {
                ", after a request too large for the model"
            } else {
                ""
            };
            format!("[compaction: {how}{overflow}]")
        }
        "patch" => {
            let files: Vec<String> = p
                .get("files")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|f| text_of(Some(f)))
                .collect();
            format!("[patch: {}]", files.join(", "))
        }
        "step-start" | "step-finish" => return None,
        "subtask" => format!("[subtask]\n{}", js_stringify_pretty(p)),
        "agent" => format!("[agent {}]", st(p, "name")),
        "retry" => format!(
            "[retry {}]",
            js_stringify(p.get("error").unwrap_or(&Value::Null))
        ),
        "snapshot" => return None,
        other => format!("[part {other}]\n{}", js_stringify_pretty(p)),
    })
}

fn tool_text(p: &Value, n_image: &mut usize) -> String {
    let name = st(p, "tool");
    let call = st(p, "callID");
    let state = p.get("state").cloned().unwrap_or(Value::Null);
    let mut out = format!("[tool call {name} ({call})]");
    if let Some(i) = state.get("input") {
        out.push('\n');
        out.push_str(&js_stringify_pretty(i));
    }
    match st(&state, "status") {
        "completed" => {
            out.push_str(&format!("\n[tool result {name} ({call})]"));
            if let Some(m) = state.get("metadata")
                && let Some(code) = m.get("exit").and_then(Value::as_i64)
                && code != 0
            {
                out.push_str(&format!("\n[exit {code}]"));
            }
            let compacted = state
                .get("time")
                .and_then(|t| t.get("compacted"))
                .is_some_and(|c| truthy(Some(c)));
            let body = if compacted {
                "[output pruned by opencode: sent as \"[Old tool result content cleared]\"]\n"
                    .to_string()
                    + st(&state, "output")
            } else {
                st(&state, "output").to_string()
            };
            if !body.is_empty() {
                out.push('\n');
                out.push_str(body.strip_suffix('\n').unwrap_or(&body));
            }
            for a in state
                .get("attachments")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let mime = st(a, "mime");
                let url = st(a, "url");
                if mime.starts_with("image/") && url.starts_with("data:") {
                    *n_image += 1;
                    out.push('\n');
                    out.push_str(&image_placeholder(
                        *n_image,
                        mime,
                        url,
                        a.get("filename").and_then(Value::as_str),
                    ));
                }
            }
        }
        "error" => {
            out.push_str(&format!("\n[tool error {name} ({call})]\n"));
            out.push_str(&text_of(state.get("error")));
        }
        st => out.push_str(&format!(
            "\n[tool {name} ({call}): {}]",
            if st.is_empty() { "no state" } else { st }
        )),
    }
    out
}

/// What is particular to where entry `i` (whose line is `v`) is (see the module
/// docs), as a first line: from the line where the line says it.
fn where_note(v: &Value) -> Option<String> {
    if v.get("deleted").is_some() {
        return Some(
            "[deleted by opencode: an /undo, then a new prompt, removed this message; shown \
             from opencode's event log; no agent can continue from it]"
                .into(),
        );
    }
    if let Some(sub) = v.get("subagent") {
        return Some(format!(
            "[subagent session {}: {}]",
            st(sub, "id"),
            st(sub, "title")
        ));
    }
    (v.get("hidden") == Some(&Value::Bool(true))).then(|| {
        "[hidden by /undo: opencode deletes this message at the next prompt (/redo brings \
         it back)]"
            .to_string()
    })
}

/// The KIND file and images of entry `i`, whose line is `v`.
pub fn render(_a: &OpencodeSession, _s: &Session, _i: u32, v: &Value) -> (String, Vec<Image>) {
    let info = v.get("info").cloned().unwrap_or(Value::Null);
    let parts: Vec<Value> = v
        .get("parts")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut chunks: Vec<String> = Vec::new();
    if let Some(n) = where_note(v) {
        chunks.push(n);
    }
    if let Some(d) = v.get("damaged").and_then(Value::as_str) {
        chunks.push(format!(
            "[damaged: the message's data is not JSON; opencode cannot continue the session]\n{d}"
        ));
    }
    for d in v
        .get("damagedParts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        chunks.push(format!(
            "[damaged part {}: not a JSON object]\n{}",
            st(d, "id"),
            st(d, "data")
        ));
    }
    if let Some(e) = info.get("error").filter(|e| !e.is_null()) {
        let name = st(e, "name");
        let msg = e
            .get("data")
            .and_then(|d| d.get("message"))
            .map(|m| text_of(Some(m)))
            .unwrap_or_default();
        chunks.push(format!("[error {name}: {msg}]"));
    }
    if truthy(info.get("summary")) && st(&info, "role") == "assistant" {
        chunks.push("[compaction summary]".into());
    }
    let mut n_image = 0;
    for p in &parts {
        if let Some(t) = part_text(p, &mut n_image) {
            chunks.push(t);
        }
    }
    let body = join_chunks(&chunks);
    let text = if body.trim().is_empty() {
        "(no content)\n".to_string()
    } else {
        finish(body)
    };
    let images = image_parts(&parts)
        .into_iter()
        .map(|(mime, url)| Image {
            ext: image_ext(Some(&Value::String(mime))),
            data: data_url_bytes(&url),
        })
        .collect();
    (text, images)
}

/// The one line of entry `i` in `tree`: its KIND and a gist.
pub fn preview(a: &OpencodeSession, s: &Session, i: u32, v: &Value) -> String {
    let kind = s.kind_name(i).to_string();
    let info = v.get("info").cloned().unwrap_or(Value::Null);
    let mut bits: Vec<String> = Vec::new();
    match a.meta(i).part {
        Part::Deleted => bits.push("[deleted]".into()),
        Part::Subagent(_) if v.get("subagent").is_some() => bits.push("[subagent]".into()),
        _ => {}
    }
    if let Some(e) = info.get("error").filter(|e| !e.is_null()) {
        bits.push(format!("[error {}]", st(e, "name")));
    }
    for p in v
        .get("parts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match ty(p) {
            "text" if truthy(p.get("synthetic")) => {
                bits.push(format!("(synthetic) {}", st(p, "text")))
            }
            "text" => bits.push(st(p, "text").to_string()),
            "reasoning" => bits.push(format!("[reasoning] {}", st(p, "text"))),
            "file" => bits.push(format!("[file {}]", st(p, "filename"))),
            "compaction" => bits.push("[compaction]".into()),
            "tool" => {
                let input = p.get("state").and_then(|st| st.get("input"));
                let gist = input
                    .and_then(|i| {
                        [
                            "command",
                            "filePath",
                            "pattern",
                            "description",
                            "url",
                            "path",
                        ]
                        .iter()
                        .find_map(|k| i.get(*k).and_then(Value::as_str))
                        .map(str::to_string)
                    })
                    .unwrap_or_else(|| input.map(js_stringify).unwrap_or_default());
                bits.push(format!("→ {} {gist}", st(p, "tool")));
            }
            _ => {}
        }
    }
    truncate_chars(
        &one_line(&format!("{kind}: {}", bits.join(" "))),
        PREVIEW_CHARS,
    )
}

/// One Chat Completions message's content as text.
fn content_text(c: Option<&Value>) -> String {
    match c {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(items)) => {
            let chunks: Vec<String> = items
                .iter()
                .map(|it| match ty(it) {
                    "text" => st(it, "text").to_string(),
                    "image_url" => {
                        let url = it
                            .get("image_url")
                            .and_then(|u| u.get("url"))
                            .and_then(Value::as_str)
                            .unwrap_or("");
                        let mime = url
                            .strip_prefix("data:")
                            .and_then(|r| r.split(';').next())
                            .unwrap_or("image");
                        format!("[image: {mime}, {} bytes]", data_url_bytes(url).len())
                    }
                    _ => js_stringify_pretty(it),
                })
                .collect();
            join_chunks(&chunks)
        }
        Some(other) => js_stringify_pretty(other),
    }
}

/// The readable `context`: each message under `## ROLE` (a tool result under `## tool
/// (CALL_ID)`), reasoning and tool calls as in the KIND files, then a blank line.
pub fn render_context(msgs: &[Value]) -> String {
    let mut out = String::new();
    for m in msgs {
        let role = st(m, "role");
        let head = match role {
            "tool" => format!("## tool ({})", st(m, "tool_call_id")),
            "" => "## message".to_string(),
            r => format!("## {}", one_line(r)),
        };
        out.push_str(&head);
        out.push('\n');
        let mut chunks = Vec::new();
        if let Some(r) = m.get("reasoning_content").and_then(Value::as_str) {
            chunks.push(format!("[reasoning]\n{r}"));
        }
        let body = content_text(m.get("content"));
        if !body.is_empty() {
            chunks.push(body);
        }
        for c in m
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let f = c.get("function").cloned().unwrap_or(Value::Null);
            let args = st(&f, "arguments");
            let pretty = serde_json::from_str::<Value>(args)
                .map(|v| js_stringify_pretty(&v))
                .unwrap_or_else(|_| args.to_string());
            chunks.push(format!(
                "[tool call {} ({})]\n{pretty}",
                st(&f, "name"),
                st(c, "id")
            ));
        }
        let body = join_chunks(&chunks);
        out.push_str(&if body.trim().is_empty() {
            "(no content)\n".to_string()
        } else {
            finish(body)
        });
        out.push('\n');
    }
    out
}
