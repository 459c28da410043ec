//! The messages of a session as opencode reads them, and as it converts them for a
//! request (OPENCODE-FORMAT.md §7.1, §7.2): `MessageV2.filterCompacted`, then
//! `MessageV2.toModelMessages`, the AI SDK's `convertToModelMessages` and the
//! `@ai-sdk/openai-compatible` provider's Chat Completions messages. Below
//! `super::context` (which decides what is sent at a point) and `super::compaction`
//! (the summary request), which both use it.

use crate::model::core::js::js_stringify;
use serde_json::{Value, json};

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
    pub fn role(&self) -> &str {
        self.info.get("role").and_then(Value::as_str).unwrap_or("")
    }
    pub fn id(&self) -> &str {
        self.info.get("id").and_then(Value::as_str).unwrap_or("")
    }
    pub fn created(&self) -> i64 {
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

pub fn part_type(p: &Value) -> &str {
    p.get("type").and_then(Value::as_str).unwrap_or("")
}

/// JavaScript truthiness of a JSON value.
pub fn truthy(v: Option<&Value>) -> bool {
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
                        "compaction" => parts.push(Ui::Text("What did we do so far?".into())),
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
                                        a.get("mime")
                                            .and_then(Value::as_str)
                                            .unwrap_or("")
                                            .to_string()
                                    };
                                    // No media in a Chat Completions tool result: they
                                    // follow in a user message.
                                    for a in atts.iter().filter(|a| is_media(&mime(a))) {
                                        media_follow.push(Ui::File {
                                            url: a
                                                .get("url")
                                                .and_then(Value::as_str)
                                                .unwrap_or("")
                                                .to_string(),
                                            media: mime(a),
                                            filename: a
                                                .get("filename")
                                                .and_then(Value::as_str)
                                                .map(str::to_string),
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
                                    let interrupted =
                                        state.get("metadata").and_then(|m| m.get("interrupted"))
                                            == Some(&Value::Bool(true));
                                    let out = state
                                        .get("metadata")
                                        .and_then(|m| m.get("output"))
                                        .and_then(Value::as_str);
                                    match (interrupted, out) {
                                        (true, Some(o)) => Ok(Value::String(o.to_string())),
                                        _ => Err(crate::model::core::text::text_of(
                                            state.get("error"),
                                        )),
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
        let mt = if media == "image/*" {
            "image/jpeg"
        } else {
            media
        };
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
