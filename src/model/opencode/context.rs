//! What opencode sends the model when a session continues right after a message
//! (OPENCODE-FORMAT.md §7), as opencode 1.18.33 builds it, for `context.json`.
//!
//! opencode rebuilds the request from the rows every time (`SessionPrompt.run`):
//!
//! 1. the session's messages up to the point, oldest first (a pending `/undo` is
//!    applied first, and the point's later messages are not there);
//! 2. `MessageV2.filterCompacted`: walking back from the newest, it stops at a
//!    compaction request (a user message with a `compaction` part) whose summary
//!    (`summary: true`, finished, no error) comes after it; with the part's
//!    `tail_start_id`, the kept tail of turns follows the summary;
//! 3. if the last finished answer reported more tokens than the model's usable context,
//!    or a compaction request has no summary yet, it compacts first (§5.5): it sends the
//!    summary request and only then the conversation; [`Point::compacts_first`] is
//!    that request;
//! 4. `MessageV2.toModelMessages`: empty messages and failed answers dropped (an
//!    interrupted one is kept with what it had), parts converted (a compaction part is
//!    `"What did we do so far?"`, reasoning kept only for the same model, tool parts as
//!    calls and their results), then the AI SDK's `convertToModelMessages` and the
//!    `@ai-sdk/openai-compatible` provider's Chat Completions messages: a user message
//!    of one text part is a string, an assistant's texts joined, `reasoning_content`,
//!    `tool_calls`, then one `tool` message per result.
//!
//! The system message and the tools are not in the session: opencode builds them for
//! every request (the agent's prompt, today's date, the tools its permission rules
//! allow); [`preamble`] says what it would hold. Every provider gets the same messages
//! in its own wire format; Chat Completions' is the one shown (the one the kit's
//! `context.sh` reads off the wire).

use super::agent::{OpencodeSession, Part, Role};
use super::config::Config;
use crate::model::core::js::js_stringify;
use crate::model::core::session::Session;
use serde_json::{Value, json};
use std::io;

/// A message as opencode reads it: `info` and `parts`.
#[derive(Debug, Clone)]
pub struct Msg {
    pub info: Value,
    pub parts: Vec<Value>,
    /// The row's data was not JSON (§10).
    pub damaged: bool,
}

impl Msg {
    /// The message of an entry's line.
    pub fn of(v: &Value) -> Msg {
        Msg {
            info: v.get("info").cloned().unwrap_or(Value::Null),
            parts: v
                .get("parts")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            damaged: v.get("damaged").is_some(),
        }
    }
    fn role(&self) -> &str {
        self.info.get("role").and_then(Value::as_str).unwrap_or("")
    }
    fn id(&self) -> &str {
        self.info.get("id").and_then(Value::as_str).unwrap_or("")
    }
    fn created(&self) -> i64 {
        self.info
            .get("time")
            .and_then(|t| t.get("created"))
            .and_then(Value::as_i64)
            .unwrap_or(0)
    }
    fn finished_summary_of(&self) -> Option<&str> {
        let i = &self.info;
        (self.role() == "assistant"
            && truthy(i.get("summary"))
            && truthy(i.get("finish"))
            && !truthy(i.get("error")))
        .then(|| i.get("parentID").and_then(Value::as_str))
        .flatten()
    }
}

fn part_type(p: &Value) -> &str {
    p.get("type").and_then(Value::as_str).unwrap_or("")
}

/// JavaScript truthiness of a JSON value.
fn truthy(v: Option<&Value>) -> bool {
    crate::model::core::js::js_truthy(v)
}

/// `MessageV2.filterCompacted` over `msgs` (oldest first): see the module docs.
pub fn filter_compacted(msgs: &[Msg]) -> Vec<Msg> {
    let mut out: Vec<&Msg> = Vec::new();
    let mut summarised: std::collections::HashSet<&str> = Default::default();
    let mut tail: Option<String> = None;
    for m in msgs.iter().rev() {
        out.push(m);
        if let Some(t) = &tail {
            if m.id() == t {
                break;
            }
            continue;
        }
        if m.role() == "user" && summarised.contains(m.id()) {
            let Some(z) = m.parts.iter().find(|p| part_type(p) == "compaction") else {
                continue;
            };
            match z.get("tail_start_id").and_then(Value::as_str) {
                None => break,
                Some(t) => {
                    if m.id() == t {
                        break;
                    }
                    tail = Some(t.to_string());
                    continue;
                }
            }
        }
        if let Some(p) = m.finished_summary_of() {
            summarised.insert(p);
        }
    }
    out.reverse();
    let w = out.iter().rposition(|m| {
        m.role() == "user"
            && m.parts.iter().any(|p| {
                part_type(p) == "compaction" && p.get("tail_start_id").is_some_and(|t| !t.is_null())
            })
    });
    if let Some(w) = w {
        let h = out[w];
        let z = h
            .parts
            .iter()
            .find(|p| part_type(p) == "compaction" && p.get("tail_start_id").is_some());
        let j = out.iter().enumerate().position(|(k, m)| {
            k > w
                && m.role() == "assistant"
                && truthy(m.info.get("summary"))
                && m.info.get("parentID").and_then(Value::as_str) == Some(h.id())
        });
        let v = z
            .and_then(|z| z.get("tail_start_id"))
            .and_then(Value::as_str)
            .and_then(|t| out.iter().position(|m| m.id() == t));
        if let (Some(v), Some(j)) = (v, j)
            && v < w
            && j > w
        {
            let mut re: Vec<&Msg> = Vec::new();
            re.extend(&out[w..=j]);
            re.extend(&out[v..w]);
            re.extend(&out[j + 1..]);
            return re.into_iter().cloned().collect();
        }
    }
    out.into_iter().cloned().collect()
}

/// The model of a request: `providerID/modelID`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ModelRef {
    pub provider: String,
    pub model: String,
}

/// The model a continuation would use: the last user message's.
pub fn model_of(msgs: &[Msg]) -> ModelRef {
    for m in msgs.iter().rev() {
        if m.role() == "user"
            && let Some(mo) = m.info.get("model")
        {
            let g = |k: &str| mo.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            return ModelRef {
                provider: g("providerID"),
                model: g("modelID"),
            };
        }
    }
    ModelRef::default()
}

/// A UI part of `toModelMessages`, before the AI SDK converts it.
#[derive(Debug, Clone)]
enum Ui {
    Text(String),
    File {
        url: String,
        media: String,
        filename: Option<String>,
    },
    StepStart,
    Reasoning(String),
    Tool {
        name: String,
        call_id: String,
        input: Value,
        output: Result<Value, String>,
    },
}

struct UiMsg {
    role: &'static str,
    parts: Vec<Ui>,
}

fn is_media(mime: &str) -> bool {
    mime.starts_with("image/") || mime == "application/pdf"
}

/// `MessageV2.toModelMessages` (§7.2), before the AI SDK's conversion.
fn to_ui(msgs: &[Msg], model: &ModelRef) -> Vec<UiMsg> {
    let mut out = Vec::new();
    for m in msgs {
        if m.parts.is_empty() {
            continue;
        }
        match m.role() {
            "user" => {
                let mut parts = Vec::new();
                for z in &m.parts {
                    match part_type(z) {
                        "text" => {
                            let t = z.get("text").and_then(Value::as_str).unwrap_or("");
                            if !truthy(z.get("ignored")) && !t.is_empty() {
                                parts.push(Ui::Text(t.to_string()));
                            }
                        }
                        "file" => {
                            let mime = z.get("mime").and_then(Value::as_str).unwrap_or("");
                            if mime != "text/plain" && mime != "application/x-directory" {
                                parts.push(Ui::File {
                                    url: z
                                        .get("url")
                                        .and_then(Value::as_str)
                                        .unwrap_or("")
                                        .to_string(),
                                    media: mime.to_string(),
                                    filename: z
                                        .get("filename")
                                        .and_then(Value::as_str)
                                        .map(str::to_string),
                                });
                            }
                        }
                        "compaction" => {
                            parts.push(Ui::Text("What did we do so far?".into()))
                        }
                        "subtask" => parts.push(Ui::Text(
                            "The following tool was executed by the user".into(),
                        )),
                        _ => {}
                    }
                }
                if !parts.is_empty() {
                    out.push(UiMsg {
                        role: "user",
                        parts,
                    });
                }
            }
            "assistant" => {
                let info = &m.info;
                let own = format!(
                    "{}/{}",
                    info.get("providerID").and_then(Value::as_str).unwrap_or(""),
                    info.get("modelID").and_then(Value::as_str).unwrap_or("")
                );
                let differs = format!("{}/{}", model.provider, model.model) != own;
                if truthy(info.get("error")) {
                    let aborted = info
                        .get("error")
                        .and_then(|e| e.get("name"))
                        .and_then(Value::as_str)
                        == Some("MessageAbortedError");
                    let has_content = m
                        .parts
                        .iter()
                        .any(|p| !matches!(part_type(p), "step-start" | "reasoning"));
                    if !(aborted && has_content) {
                        continue;
                    }
                }
                let mut parts = Vec::new();
                let mut media_follow: Vec<Ui> = Vec::new();
                for n in &m.parts {
                    match part_type(n) {
                        "text" => {
                            let t = n.get("text").and_then(Value::as_str).unwrap_or("");
                            parts.push(Ui::Text(t.to_string()));
                        }
                        "step-start" => parts.push(Ui::StepStart),
                        "tool" => {
                            let state = n.get("state").cloned().unwrap_or(Value::Null);
                            let status = state.get("status").and_then(Value::as_str).unwrap_or("");
                            let name = n.get("tool").and_then(Value::as_str).unwrap_or("");
                            let call_id = n.get("callID").and_then(Value::as_str).unwrap_or("");
                            let input = state.get("input").cloned().unwrap_or(Value::Null);
                            let output = match status {
                                "completed" => {
                                    let compacted = state
                                        .get("time")
                                        .and_then(|t| t.get("compacted"))
                                        .is_some_and(|c| truthy(Some(c)));
                                    let text = if compacted {
                                        "[Old tool result content cleared]".to_string()
                                    } else {
                                        state
                                            .get("output")
                                            .and_then(Value::as_str)
                                            .unwrap_or("")
                                            .to_string()
                                    };
                                    let atts: Vec<Value> = if compacted {
                                        Vec::new()
                                    } else {
                                        state
                                            .get("attachments")
                                            .and_then(Value::as_array)
                                            .cloned()
                                            .unwrap_or_default()
                                    };
                                    let mime = |a: &Value| {
                                        a.get("mime").and_then(Value::as_str).unwrap_or("").to_string()
                                    };
                                    // No media in a Chat Completions tool result: they
                                    // follow in a user message.
                                    for a in atts.iter().filter(|a| is_media(&mime(a))) {
                                        media_follow.push(Ui::File {
                                            url: a.get("url").and_then(Value::as_str).unwrap_or("").to_string(),
                                            media: mime(a),
                                            filename: a.get("filename").and_then(Value::as_str).map(str::to_string),
                                        });
                                    }
                                    let rest: Vec<Value> =
                                        atts.into_iter().filter(|a| !is_media(&mime(a))).collect();
                                    if rest.is_empty() {
                                        Ok(Value::String(text))
                                    } else {
                                        Ok(json!({"text": text, "attachments": rest}))
                                    }
                                }
                                "error" => {
                                    let interrupted = state
                                        .get("metadata")
                                        .and_then(|m| m.get("interrupted"))
                                        == Some(&Value::Bool(true));
                                    let out = state
                                        .get("metadata")
                                        .and_then(|m| m.get("output"))
                                        .and_then(Value::as_str);
                                    match (interrupted, out) {
                                        (true, Some(o)) => Ok(Value::String(o.to_string())),
                                        _ => Err(crate::model::core::text::text_of(state.get("error"))),
                                    }
                                }
                                _ => Err("[Tool execution was interrupted]".to_string()),
                            };
                            parts.push(Ui::Tool {
                                name: name.to_string(),
                                call_id: call_id.to_string(),
                                input,
                                output,
                            });
                        }
                        "reasoning" => {
                            let t = n.get("text").and_then(Value::as_str).unwrap_or("");
                            if differs {
                                if !t.trim().is_empty() {
                                    parts.push(Ui::Text(t.to_string()));
                                }
                            } else {
                                parts.push(Ui::Reasoning(t.to_string()));
                            }
                        }
                        _ => {}
                    }
                }
                if !parts.is_empty() {
                    out.push(UiMsg {
                        role: "assistant",
                        parts,
                    });
                    if !media_follow.is_empty() {
                        let mut ps = vec![Ui::Text("Attached media from tool result:".into())];
                        ps.extend(media_follow);
                        out.push(UiMsg {
                            role: "user",
                            parts: ps,
                        });
                    }
                }
            }
            _ => {}
        }
    }
    out.retain(|m| m.parts.iter().any(|p| !matches!(p, Ui::StepStart)));
    out
}

/// The data of a `data:` URL, without its header.
fn data_url_payload(url: &str) -> &str {
    match url.find(',') {
        Some(k) if url.starts_with("data:") => &url[k + 1..],
        _ => url,
    }
}

/// A user file part as Chat Completions content.
fn file_content(url: &str, media: &str, filename: Option<&str>) -> Value {
    if media.starts_with("image/") {
        let mt = if media == "image/*" { "image/jpeg" } else { media };
        let u = if url.starts_with("data:") {
            format!("data:{mt};base64,{}", data_url_payload(url))
        } else {
            url.to_string()
        };
        json!({"type": "image_url", "image_url": {"url": u}})
    } else if media == "application/pdf" {
        json!({"type": "file", "file": {"filename": filename.unwrap_or("part-0.pdf"),
            "file_data": format!("data:application/pdf;base64,{}", data_url_payload(url))}})
    } else {
        json!({"type": "text", "text": format!("[unsupported file: {media}]")})
    }
}

/// The Chat Completions messages of `ui` (the AI SDK's `convertToModelMessages` and
/// `@ai-sdk/openai-compatible`'s conversion).
fn to_chat(ui: &[UiMsg]) -> Vec<Value> {
    let mut out = Vec::new();
    for m in ui {
        if m.role == "user" {
            let parts: Vec<&Ui> = m
                .parts
                .iter()
                .filter(|p| !matches!(p, Ui::Text(t) if t.is_empty()))
                .collect();
            if let [Ui::Text(t)] = parts.as_slice() {
                out.push(json!({"role": "user", "content": t}));
                continue;
            }
            let content: Vec<Value> = parts
                .iter()
                .filter_map(|p| match p {
                    Ui::Text(t) => Some(json!({"type": "text", "text": t})),
                    Ui::File {
                        url,
                        media,
                        filename,
                    } => Some(file_content(url, media, filename.as_deref())),
                    _ => None,
                })
                .collect();
            out.push(json!({"role": "user", "content": content}));
            continue;
        }
        // An assistant message: one block per step (`step-start` splits them).
        let mut blocks: Vec<Vec<&Ui>> = vec![Vec::new()];
        for p in &m.parts {
            match p {
                Ui::StepStart => blocks.push(Vec::new()),
                other => blocks.last_mut().expect("a block").push(other),
            }
        }
        for block in blocks.into_iter().filter(|b| !b.is_empty()) {
            let mut text = String::new();
            let mut reasoning = String::new();
            let mut calls = Vec::new();
            let mut results = Vec::new();
            for p in &block {
                match p {
                    Ui::Text(t) => text.push_str(t),
                    Ui::Reasoning(t) => reasoning.push_str(t),
                    Ui::Tool {
                        name,
                        call_id,
                        input,
                        output,
                        ..
                    } => {
                        calls.push(json!({
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": js_stringify(input)},
                        }));
                        let content = match output {
                            Ok(Value::String(s)) => s.clone(),
                            Ok(other) => js_stringify(&tool_content(other)),
                            Err(e) => e.clone(),
                        };
                        results.push(json!({
                            "role": "tool",
                            "tool_call_id": call_id,
                            "content": content,
                        }));
                    }
                    _ => {}
                }
            }
            let mut a = serde_json::Map::new();
            a.insert("role".into(), "assistant".into());
            a.insert("content".into(), Value::String(text));
            if !reasoning.is_empty() {
                a.insert("reasoning_content".into(), Value::String(reasoning));
            }
            if !calls.is_empty() {
                a.insert("tool_calls".into(), Value::Array(calls));
            }
            out.push(Value::Object(a));
            out.extend(results);
        }
    }
    out
}

/// A tool output with attachments, as opencode's `toModelOutput` gives it to the SDK
/// (`{type: "content", value: [...]}`), whose value the provider sends as JSON.
fn tool_content(v: &Value) -> Value {
    let mut items = Vec::new();
    if let Some(t) = v.get("text").and_then(Value::as_str)
        && !t.is_empty()
    {
        items.push(json!({"type": "text", "text": t}));
    }
    Value::Array(items)
}

/// The Chat Completions messages opencode sends for `msgs` (already filtered).
pub fn chat_messages(msgs: &[Msg], model: &ModelRef) -> Vec<Value> {
    to_chat(&to_ui(msgs, model))
}

/// What continuing after a point does.
#[derive(Debug, Clone)]
pub enum Point {
    /// The request's messages.
    Messages(Vec<Value>),
    /// opencode compacts first: the summary request's messages (the new prompt left
    /// out of its conversation), and why.
    CompactsFirst { request: Vec<Value>, why: String },
    /// opencode cannot continue the session (a damaged row on the way): why.
    Fails(String),
}

/// The messages of the session of entry `i` up to it, as opencode reads them.
pub fn messages_to(a: &OpencodeSession, s: &Session, i: u32) -> io::Result<Vec<Msg>> {
    let sid = &a.meta(i).session_id;
    let mut out = Vec::new();
    for j in s.path_to(i) {
        if &a.meta(j).session_id != sid {
            continue;
        }
        out.push(Msg::of(&s.entry_value(j)?));
    }
    Ok(out)
}

/// The last finished answer and the last compaction request after it (`MessageV2.latest`).
fn pending_compaction(c: &[Msg]) -> (Option<&Msg>, bool) {
    let key = |m: &Msg| (m.created(), m.id().to_string());
    let finished = c
        .iter()
        .filter(|m| m.role() == "assistant" && truthy(m.info.get("finish")))
        .max_by_key(|m| key(m));
    let mut task = None;
    for m in c {
        if let Some(f) = finished
            && key(m) < key(f)
        {
            continue;
        }
        for p in &m.parts {
            match part_type(p) {
                "compaction" => task = Some(true),
                "subtask" => task = Some(false),
                _ => {}
            }
        }
    }
    (finished, task == Some(true))
}

/// What continuing right after entry `i` does (see the module docs).
pub fn point(a: &OpencodeSession, s: &Session, i: u32) -> io::Result<Point> {
    let msgs = messages_to(a, s, i)?;
    if let Some(bad) = msgs.iter().find(|m| m.damaged) {
        return Ok(Point::Fails(format!(
            "message {} of the session is not JSON: opencode fails to continue it \
             (\"Unexpected server error\", nothing sent) until that row is repaired",
            bad.id()
        )));
    }
    let c = filter_compacted(&msgs);
    let model = model_of(&msgs);
    let (finished, compaction_pending) = pending_compaction(&c);
    let config = Config::load(
        &a.db,
        a.directory(),
        a.project.as_ref().map(|p| p.worktree.as_str()),
    );
    let settings = config.compaction();
    let overflow = match (finished, config.limits(&model.provider, &model.model)) {
        (Some(f), Some(l))
            if !truthy(f.info.get("summary"))
                && settings.auto != Some(false)
                && l.context > 0 =>
        {
            let t = f.info.get("tokens");
            let n = |k: &str| t.and_then(|t| t.get(k)).and_then(Value::as_u64).unwrap_or(0);
            let cache = |k: &str| {
                t.and_then(|t| t.get("cache"))
                    .and_then(|c| c.get(k))
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
            };
            let total = match n("total") {
                0 => n("input") + n("output") + cache("read") + cache("write"),
                t => t,
            };
            (total >= l.usable(&settings)).then_some((total, l.usable(&settings)))
        }
        _ => None,
    };
    if compaction_pending || overflow.is_some() {
        let why = match overflow {
            Some((t, u)) if !compaction_pending => format!(
                "the last answer used {t} tokens, at or past the {u} this model can take \
                 before opencode compacts"
            ),
            _ => "the compaction requested here has no summary yet".to_string(),
        };
        return Ok(Point::CompactsFirst {
            request: super::compaction::summary_request(&c, &model, &config),
            why,
        });
    }
    Ok(Point::Messages(chat_messages(&c, &model)))
}

/// `context.json` of entry `i`: the messages sent, or the summary request sent first.
pub fn context_json(a: &OpencodeSession, s: &Session, i: u32) -> io::Result<Vec<Value>> {
    Ok(match point(a, s, i)? {
        Point::Messages(m) => m,
        Point::CompactsFirst { request, .. } => request,
        Point::Fails(_) => Vec::new(),
    })
}

/// The tools opencode 1.18.33 offers an agent, less those the session's permission
/// rules deny (measured: `run` denies `question`, a subagent `task` and `todowrite`).
pub fn tools_for(agent: &str, permission: Option<&str>) -> Vec<&'static str> {
    let all = [
        "bash",
        "edit",
        "glob",
        "grep",
        "question",
        "read",
        "skill",
        "task",
        "todowrite",
        "webfetch",
        "write",
    ];
    let denied: Vec<String> = permission
        .and_then(|p| serde_json::from_str::<Value>(p).ok())
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter(|r| {
            r.get("action").and_then(Value::as_str) == Some("deny")
                && r.get("pattern").and_then(Value::as_str) == Some("*")
        })
        .filter_map(|r| r.get("permission").and_then(Value::as_str).map(str::to_string))
        .collect();
    all.into_iter()
        .filter(|t| !denied.iter().any(|d| d == t))
        .filter(|t| !(agent == "general" && matches!(*t, "task" | "todowrite")))
        .collect()
}

/// `Date.prototype.toDateString()` of today, in local time.
fn today() -> String {
    let now = crate::model::core::time::now_ms();
    let secs = now.div_euclid(1000);
    // SAFETY: localtime_r writes into the struct given.
    let tm = unsafe {
        let t: libc::time_t = secs as libc::time_t;
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&t, &mut tm);
        tm
    };
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{} {} {:02} {}",
        DAYS[tm.tm_wday.clamp(0, 6) as usize],
        MONTHS[tm.tm_mon.clamp(0, 11) as usize],
        tm.tm_mday,
        tm.tm_year + 1900
    )
}

/// What the readable `context` shows before the messages: what opencode adds to them
/// (the system message and the tools, rebuilt for every request), and what it does
/// first when it compacts first or fails.
pub fn preamble(a: &OpencodeSession, s: &Session, i: u32) -> Option<String> {
    let msgs = messages_to(a, s, i).ok()?;
    let model = model_of(&msgs);
    let agent = msgs
        .iter()
        .rev()
        .find(|m| m.role() == "user")
        .and_then(|m| m.info.get("agent").and_then(Value::as_str))
        .unwrap_or("build")
        .to_string();
    let mut out = String::new();
    let (dir, worktree, git) = match a.meta(i).part {
        Part::Subagent(k) => {
            let _ = k;
            (a.directory().to_string(), project_root(a), is_git(a))
        }
        _ => (a.directory().to_string(), project_root(a), is_git(a)),
    };
    match point(a, s, i).ok()? {
        Point::Fails(why) => {
            out.push_str(&format!("[opencode cannot continue here: {why}]\n\n"));
            return Some(out);
        }
        Point::CompactsFirst { why, .. } => {
            out.push_str(&format!(
                "[opencode compacts first: {why}. Continuing here, it first sends the \
                 summary request below (system: \"You are a context summarization \
                 agent…\", no tools; your prompt is added to its conversation), then \
                 \"What did we do so far?\", the summary and \"Continue if you have next \
                 steps…\" instead of this history]\n\n"
            ));
            return Some(out);
        }
        Point::Messages(_) => {}
    }
    out.push_str("[system]\n");
    out.push_str(&format!(
        "(rebuilt by opencode for every request, not stored in the session: the {agent} \
         agent's prompt, then)\n"
    ));
    if !model.model.is_empty() {
        out.push_str(&format!(
            "You are powered by the model named {}. The exact model ID is {}/{}\n",
            model.model, model.provider, model.model
        ));
    }
    out.push_str(&format!(
        "Here is some useful information about the environment you are running in:\n<env>\n  \
         Working directory: {dir}\n  Workspace root folder: {worktree}\n  Is directory a git \
         repo: {}\n  Platform: {}\n  Today's date: {}\n</env>\n",
        if git { "yes" } else { "no" },
        std::env::consts::OS,
        today()
    ));
    out.push_str("(then the skills opencode finds, and the AGENTS.md files of the project)\n\n");
    let perm = match a.meta(i).part {
        Part::Subagent(k) => a.subagent_permission(k as usize),
        _ => a.row.permission.clone(),
    };
    out.push_str(&format!(
        "[tools] {}\n\n",
        tools_for(&agent, perm.as_deref()).join(", ")
    ));
    let _ = Role::User;
    Some(out)
}

fn project_root(a: &OpencodeSession) -> String {
    match &a.project {
        Some(p) if p.worktree != "/" && !p.worktree.is_empty() => p.worktree.clone(),
        _ => a.directory().to_string(),
    }
}

fn is_git(a: &OpencodeSession) -> bool {
    a.project
        .as_ref()
        .is_some_and(|p| p.vcs.as_deref() == Some("git"))
}
