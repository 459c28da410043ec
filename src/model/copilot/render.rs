//! How a Copilot CLI session's entries read: the KIND files, the `tree` previews, the
//! readable `context` (the system prompt and the tools first, then one `## ROLE` heading
//! per message), and `session.json`.
//!
//! * `user`: the prompt as typed (`content`; what is sent, `transformedContent`, adds the
//!   date, and is in `context`), then one line per attachment (`[image-1.png: PATH
//!   (image/png, 88 bytes)]`, the image itself decoded from its `session.binary_asset`);
//! * `assistant`: `[reasoning]` and the reasoning (stored, not sent again, §6.8), the text,
//!   and each call as `[call NAME (ID): SUMMARY]` with its arguments as JSON;
//! * `toolResult`: `[result (ID)]` (or `[error (ID): CODE]`), the text sent to the
//!   model, and the CLI's `[details]` (a diff) when it keeps them; the tool's name is in
//!   its call, not in this line: every KIND file follows from its own line (and the
//!   images it names), which `sessionfs grep` relies on;
//! * `compaction`: the checkpoint and what it removed, then the summary; `abort`, `error`,
//!   `warning`, `info`, `notification`, `subagent`: what the event says, on a first line
//!   in brackets, then its message.
//!
//! The system prompt is the one the CLI recorded (`system.message`) for the request made
//! from the entry: the CLI builds a new one when it resumes (§7), from its mode, the
//! working directory and the session folder, so a resume in the other mode sends
//! another. The tools are not in the file at all: shown are those 1.0.102 sends in the
//! mode of that system prompt (17 in prompt mode, 18 interactive: `ask_user` too), as
//! measured; MCP servers and custom agents add theirs.

use super::context::{Assets, is_image, tool_text};
use super::events::{Ev, Line};
use super::index::{Copilot, Node, parse};
use crate::model::core::js::{js_stringify, js_stringify_pretty};
use crate::model::core::session::Session;
use crate::model::core::text::{Image, finish, image_ext, one_line, render_tool};
use crate::model::core::usage::group;
use serde_json::Value;
use std::sync::OnceLock;

fn data(v: &Value) -> &Value {
    v.get("data").unwrap_or(&Value::Null)
}

fn s_of<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

/// The KIND file's text and the images of entry `i` (its line parsed as `v`).
pub fn entry(s: &Session, c: &Copilot, i: u32, v: &Value) -> (String, Vec<Image>) {
    entry_text(c.node(i).ev, v, &|id| c.asset(s, id))
}

/// The KIND file's text and the images of an entry of kind `ev`, from its line alone
/// (parsed as `v`) and, for an image, the asset it names (`assets`, by `assetId`).
pub fn entry_text(ev: Ev, v: &Value, assets: &Assets<'_>) -> (String, Vec<Image>) {
    let d = data(v);
    let mut images = Vec::new();
    let text = match ev {
        Ev::User => {
            let mut t = finish(s_of(d, "content").to_string());
            for a in d
                .get("attachments")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let path = s_of(a, "path");
                let mime = s_of(a, "mimeType");
                if is_image(a)
                    && let Some((m, b64)) =
                        a.get("assetId").and_then(Value::as_str).and_then(assets)
                {
                    let m = if m.is_empty() { mime.to_string() } else { m };
                    let ext = image_ext(Some(&Value::String(m.clone())));
                    let bytes = crate::model::core::base64::decode(&b64);
                    images.push(Image {
                        ext,
                        data: bytes.clone(),
                    });
                    t.push_str(&format!(
                        "[image-{}.{ext}: {path} ({m}, {} bytes)]\n",
                        images.len(),
                        bytes.len()
                    ));
                } else {
                    let ty = s_of(a, "type");
                    let shown = if path.is_empty() {
                        js_stringify(a)
                    } else {
                        path.to_string()
                    };
                    t.push_str(&format!(
                        "[attachment {}: {shown}{}]\n",
                        if ty.is_empty() { "?" } else { ty },
                        if mime.is_empty() {
                            String::new()
                        } else {
                            format!(" ({mime})")
                        }
                    ));
                }
            }
            t
        }
        Ev::Assistant => assistant_text(d),
        Ev::ToolResult => {
            // The tool's name is in its call's line, not in this one: not shown here
            // (the `context` names it), so that this file follows from this line alone.
            let id = s_of(d, "toolCallId");
            let failed = d.get("success") == Some(&Value::Bool(false));
            let mut t = if failed {
                let code = d.get("error").map(|e| s_of(e, "code")).unwrap_or_default();
                format!(
                    "[error ({id}){}]\n",
                    if code.is_empty() {
                        String::new()
                    } else {
                        format!(": {code}")
                    }
                )
            } else {
                format!("[result ({id})]\n")
            };
            let body = tool_text(d);
            t.push_str(&finish(match &body {
                Value::String(x) => x.clone(),
                other => js_stringify_pretty(other),
            }));
            if let Some(det) = d
                .get("result")
                .and_then(|r| r.get("detailedContent"))
                .and_then(Value::as_str)
                .filter(|x| !x.is_empty() && Some(*x) != body.as_str())
            {
                t.push_str("[details]\n");
                t.push_str(&finish(det.trim_start_matches('\n').to_string()));
            }
            t
        }
        Ev::Compaction => {
            let mut head = String::from("[compaction");
            if let Some(k) = d.get("checkpointNumber").and_then(Value::as_u64) {
                head.push_str(&format!(": checkpoint {k}"));
                if let Some(p) = d.get("checkpointPath").and_then(Value::as_str)
                    && let Some(f) = p.rsplit('/').next()
                {
                    head.push_str(&format!(" ({f})"));
                }
            }
            if let (Some(r), Some(l)) = (
                d.get("messagesRemoved").and_then(Value::as_u64),
                d.get("preCompactionMessagesLength").and_then(Value::as_u64),
            ) {
                head.push_str(&format!(", {r} of {l} messages summarized"));
            }
            if let (Some(a), Some(b)) = (
                d.get("preCompactionTokens").and_then(Value::as_u64),
                d.get("postCompactionTokens").and_then(Value::as_u64),
            ) {
                head.push_str(&format!(", {} -> {} tokens", group(a), group(b)));
            }
            head.push_str("]\n");
            head + &finish(s_of(d, "summaryContent").to_string())
        }
        Ev::Abort => format!("[interrupted: {}]\n", s_of(d, "reason")),
        Ev::Error => {
            let mut h = format!("[error {}", s_of(d, "errorType"));
            if let Some(code) = d.get("statusCode").and_then(Value::as_u64) {
                h.push_str(&format!(" (HTTP {code})"));
            }
            h.push_str("]\n");
            h + &finish(s_of(d, "message").to_string())
        }
        Ev::Warning => format!(
            "[warning {}]\n{}",
            s_of(d, "warningType"),
            finish(s_of(d, "message").to_string())
        ),
        Ev::Info => format!(
            "[info {}]\n{}",
            s_of(d, "infoType"),
            finish(s_of(d, "message").to_string())
        ),
        Ev::SubagentEnd => {
            let ty = s_of(v, "type");
            let name = s_of(d, "agentDisplayName");
            let agent = s_of(d, "agentName");
            let mut h = format!(
                "[subagent {name}{} {}",
                if agent.is_empty() || agent == name {
                    String::new()
                } else {
                    format!(" ({agent})")
                },
                if ty == "subagent.failed" {
                    "failed"
                } else {
                    "completed"
                }
            );
            let mut facts = Vec::new();
            if let Some(n) = d.get("totalToolCalls").and_then(Value::as_u64) {
                facts.push(format!("{n} tool call{}", if n == 1 { "" } else { "s" }));
            }
            if let Some(n) = d.get("totalTokens").and_then(Value::as_u64) {
                facts.push(format!("{} tokens", group(n)));
            }
            if let Some(n) = d.get("durationMs").and_then(Value::as_u64) {
                facts.push(format!("{} ms", group(n)));
            }
            if !facts.is_empty() {
                h.push_str(": ");
                h.push_str(&facts.join(", "));
            }
            h.push_str("]\n");
            if let Some(e) = d.get("error") {
                h.push_str(&finish(match e {
                    Value::String(x) => x.clone(),
                    other => js_stringify_pretty(other),
                }));
            }
            h
        }
        Ev::Notification | Ev::Note | Ev::Unknown => {
            format!("[{}]\n{}", s_of(v, "type"), finish(js_stringify_pretty(d)))
        }
    };
    (text, images)
}

/// An assistant message: reasoning, text, calls.
fn assistant_text(d: &Value) -> String {
    let mut chunks: Vec<String> = Vec::new();
    let reasoning = s_of(d, "reasoningText");
    if !reasoning.is_empty() {
        chunks.push(format!("[reasoning]\n{}", finish(reasoning.to_string())));
    }
    let content = s_of(d, "content");
    if !content.is_empty() {
        chunks.push(finish(content.to_string()));
    }
    for r in d
        .get("toolRequests")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let summary = s_of(r, "intentionSummary");
        let args = r
            .get("arguments")
            .map(js_stringify_pretty)
            .unwrap_or_else(|| "{}".into());
        chunks.push(format!(
            "[call {} ({}){}]\n{}",
            s_of(r, "name"),
            s_of(r, "toolCallId"),
            if summary.is_empty() {
                String::new()
            } else {
                format!(": {summary}")
            },
            finish(args)
        ));
    }
    if chunks.is_empty() {
        return "(no content)\n".into();
    }
    crate::model::core::text::join_chunks(&chunks)
}

/// The one-line preview of an entry in `tree`.
pub fn preview(n: Node, v: &Value) -> String {
    let d = data(v);
    let p = match n.ev {
        Ev::User => format!("user: {}", one_line(s_of(d, "content"))),
        Ev::Assistant => {
            let content = s_of(d, "content");
            let calls: Vec<String> = d
                .get("toolRequests")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|r| {
                    let args = r.get("arguments");
                    let gist = args
                        .and_then(|a| a.get("command").or(a.get("path")).or(a.get("prompt")))
                        .and_then(Value::as_str)
                        .map(one_line)
                        .unwrap_or_default();
                    if gist.is_empty() {
                        s_of(r, "name").to_string()
                    } else {
                        format!("{} {gist}", s_of(r, "name"))
                    }
                })
                .collect();
            match (content.is_empty(), calls.is_empty()) {
                (false, true) => format!("assistant: {}", one_line(content)),
                (false, false) => format!(
                    "assistant: {} [call {}]",
                    one_line(content),
                    calls.join(", ")
                ),
                (true, false) => format!("call {}", calls.join(", ")),
                (true, true) => "assistant: (no text)".to_string(),
            }
        }
        Ev::ToolResult => {
            let body = tool_text(d);
            let word = if d.get("success") == Some(&Value::Bool(false)) {
                "error"
            } else {
                "result"
            };
            format!(
                "{word} {}: {}",
                s_of(d, "toolCallId"),
                one_line(body.as_str().unwrap_or(""))
            )
        }
        Ev::Compaction => format!("compaction: {}", one_line(s_of(d, "summaryContent"))),
        Ev::Abort => format!("abort: {}", s_of(d, "reason")),
        Ev::Error => format!("error: {}", one_line(s_of(d, "message"))),
        Ev::Warning => format!("warning: {}", one_line(s_of(d, "message"))),
        Ev::Info => format!("info: {}", one_line(s_of(d, "message"))),
        Ev::SubagentEnd => format!(
            "subagent {} {}",
            s_of(d, "agentDisplayName"),
            if s_of(v, "type") == "subagent.failed" {
                "failed"
            } else {
                "completed"
            }
        ),
        Ev::Notification | Ev::Note | Ev::Unknown => s_of(v, "type").to_string(),
    };
    if n.sub { format!("(subagent) {p}") } else { p }
}

/// The readable `context`: each message under a `## ROLE` heading, as its KIND reads.
pub fn render_context(msgs: &[Value]) -> String {
    let mut out = String::new();
    for m in msgs {
        let role = s_of(m, "role");
        match role {
            "tool" => {
                let src = m.get("__copilotMessageSource");
                let name = src.map(|x| s_of(x, "name")).unwrap_or("");
                out.push_str(&format!("## tool ({name}, {})\n", s_of(m, "tool_call_id")));
            }
            "" => out.push_str("## message\n"),
            r => out.push_str(&format!("## {r}\n")),
        }
        let mut body = String::new();
        match m.get("content") {
            Some(Value::String(t)) => body.push_str(&finish(t.clone())),
            Some(Value::Array(parts)) => {
                for p in parts {
                    match s_of(p, "type") {
                        "text" => body.push_str(&finish(s_of(p, "text").to_string())),
                        "image_url" => {
                            let url = p
                                .get("image_url")
                                .map(|u| s_of(u, "url"))
                                .unwrap_or_default();
                            let mime = url
                                .strip_prefix("data:")
                                .and_then(|u| u.split(';').next())
                                .unwrap_or("");
                            body.push_str(&format!(
                                "[image {mime}, {} bytes of base64]\n",
                                url.len()
                            ));
                        }
                        _ => body.push_str(&finish(js_stringify_pretty(p))),
                    }
                }
            }
            _ => {}
        }
        for call in m
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let f = call.get("function").unwrap_or(&Value::Null);
            let args = s_of(f, "arguments");
            let pretty = serde_json::from_str::<Value>(args)
                .map(|a| js_stringify_pretty(&a))
                .unwrap_or_else(|_| args.to_string());
            body.push_str(&format!(
                "[call {} ({})]\n{}",
                s_of(f, "name"),
                s_of(call, "id"),
                finish(pretty)
            ));
        }
        if body.is_empty() {
            body.push_str("(no content)\n");
        }
        out.push_str(&body);
        out.push('\n');
    }
    out
}

/// The tools 1.0.102 sends in prompt mode and interactively, as measured.
fn tools(interactive: bool) -> &'static [Value] {
    static PROMPT: OnceLock<Vec<Value>> = OnceLock::new();
    static TUI: OnceLock<Vec<Value>> = OnceLock::new();
    let (cell, text) = if interactive {
        (&TUI, include_str!("tools-interactive.json"))
    } else {
        (&PROMPT, include_str!("tools-prompt.json"))
    };
    cell.get_or_init(|| serde_json::from_str(text).unwrap_or_default())
}

/// What the readable `context` of entry `i` shows before the messages: the system prompt
/// recorded for the request made from there, and the tools of its mode.
pub fn preamble(s: &Session, c: &Copilot, i: u32) -> String {
    let mut out = String::from("## system\n");
    let sys = c.mark_for(i, Line::System).and_then(|m| {
        let mut buf = vec![0u8; m.len as usize];
        s.read_exact_at(&mut buf, m.offset).ok()?;
        let v = parse(&buf).ok()?;
        Some((m.line, s_of(data(&v), "content").to_string()))
    });
    let interactive = match &sys {
        Some((line, text)) => {
            out.push_str(&format!(
                "[the system prompt recorded on line {line}, sent with the request made from here; \
                 Copilot CLI builds it anew when it resumes]\n"
            ));
            out.push_str(&finish(text.clone()));
            text.contains("You are an interactive tool")
        }
        None => {
            out.push_str(
                "[no system prompt recorded yet: Copilot CLI builds one when it resumes]\n",
            );
            false
        }
    };
    let t = tools(interactive);
    out.push_str("\n## tools\n");
    out.push_str(&format!(
        "[the {} tools Copilot CLI 1.0.102 sends {} (not recorded in the session file)]\n",
        t.len(),
        if interactive {
            "interactively"
        } else {
            "in prompt mode (-p)"
        }
    ));
    for tool in t {
        out.push_str(&render_tool(tool.get("function").unwrap_or(tool)));
    }
    out.push('\n');
    out
}

/// `session.json` (see [`session_json`]), made once per scan and kept in the index.
pub(crate) fn session_json_bytes(s: &Session, c: &Copilot) -> std::sync::Arc<Vec<u8>> {
    let mut j = c.session_json.lock();
    j.get_or_insert_with(|| std::sync::Arc::new(session_json(s, c)))
        .clone()
}

/// `session.json`: the `session.start` event's `data` (in its key order), the session's
/// `workspace.yaml`, and where the session is.
pub fn session_json(s: &Session, c: &Copilot) -> Vec<u8> {
    let mut obj = serde_json::Map::new();
    obj.insert("format".into(), Value::String("copilot".into()));
    let h = s.header();
    if h.len > 0
        && let Ok(b) = s.header_bytes()
        && let Ok(v) = parse(&b)
        && let Some(Value::Object(d)) = v.get("data")
    {
        for (k, x) in d {
            obj.insert(k.clone(), x.clone());
        }
    } else {
        obj.insert("sessionId".into(), Value::String(h.session_id.clone()));
    }
    if !c.workspace.fields.is_empty() {
        let mut w = serde_json::Map::new();
        for (k, x) in &c.workspace.fields {
            let val = match x.as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                n if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => n
                    .parse::<u64>()
                    .map(Value::from)
                    .unwrap_or(Value::String(x.clone())),
                _ => Value::String(x.clone()),
            };
            w.insert(k.clone(), val);
        }
        obj.insert("workspace".into(), Value::Object(w));
    }
    if let Some(d) = s.path().parent() {
        obj.insert(
            "folder".into(),
            Value::String(d.to_string_lossy().into_owned()),
        );
        // The copies the CLI kept when it repaired the file (§10): each one the file as
        // it was then, which a rewind since may have cut (mount one to read it).
        let mut backups: Vec<String> = std::fs::read_dir(d)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("events.jsonl.backup-before-recovery-"))
            .collect();
        if !backups.is_empty() {
            backups.sort();
            obj.insert(
                "backups".into(),
                Value::Array(backups.into_iter().map(Value::String).collect()),
            );
        }
    }
    let mut out = js_stringify(&Value::Object(obj)).into_bytes();
    out.push(b'\n');
    out
}
