//! Entries as readable text: the KIND name, the KIND file's text, images, and the
//! one-line preview `tree` shows (CODEX-FORMAT §2, §5.3, §5.6).
//!
//! KIND is the role for messages (`user`, `assistant`, `developer`), except that a user
//! message Codex wrote rather than the user typed (`<environment_context>`,
//! `<turn_aborted>`, `<subagent_notification>`, a compaction summary) is `meta`, as for
//! Claude Code, and the model's answer to a compaction request (`/compact`, or the
//! automatic one; its line's `metadata.compaction_output`, §5.3) is
//! `compaction_summary`; other items are their `payload.type` (`reasoning`,
//! `function_call`, `function_call_output`, …) and a `compacted` line is `compacted`.

use serde_json::Value;

use super::page::{Line, LineKind};

/// An image decoded from a `data:` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// `image-N.EXT`, N from 1 in the order the item holds them.
    pub name: String,
    pub bytes: Vec<u8>,
}

/// A KIND file's content.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rendered {
    pub text: String,
    pub images: Vec<Image>,
}

pub use super::page::{is_meta_user, message_texts};

/// The prompt a user typed in a message, if it is one (images' wrappers skipped).
pub fn typed_prompt(p: &Value) -> Option<String> {
    if p["type"] != "message" || p["role"] != "user" || is_meta_user(p) {
        return None;
    }
    let texts: Vec<&str> = message_texts(p)
        .into_iter()
        .filter(|t| !t.starts_with("<image") && !t.starts_with("</image>"))
        .collect();
    let t = texts.join("\n");
    (!t.trim().is_empty()).then_some(t)
}

/// The KIND of a `response_item` payload.
pub fn item_kind(p: &Value) -> String {
    let ty = p["type"].as_str().unwrap_or("unknown");
    if ty == "message" {
        let role = p["role"].as_str().unwrap_or("unknown");
        if role == "user" && is_meta_user(p) {
            return "meta".to_string();
        }
        return role.to_string();
    }
    ty.to_string()
}

/// The KIND of a compaction's summary (see the module doc).
pub const COMPACTION_SUMMARY: &str = "compaction_summary";

/// Whether the line is the model's answer to a compaction request: an assistant
/// message whose line's `metadata.compaction_output` is `true` (§5.3). Its request was
/// the history so far and Codex's compaction prompt ([`super::context::COMPACTION_PROMPT`]).
pub fn is_compaction_output(line: &Line) -> bool {
    line.kind == LineKind::ResponseItem
        && line.payload_type_str() == Some("message")
        && line.payload_role() == Some("assistant")
        // Only a line that says so is read whole.
        && memchr::memmem::find(line.bytes(), b"\"compaction_output\"").is_some()
        && line.value()["metadata"]["compaction_output"] == true
}

/// The KIND of a node's line.
pub fn line_kind(line: &Line) -> String {
    // Only a user's message is read whole (is it Codex's own?).
    let meta = line.kind != LineKind::Compacted
        && line.payload_type_str() == Some("message")
        && line.payload_role() == Some("user")
        && is_meta_user(line.payload());
    kind_name(
        line.kind,
        line.payload_type_str(),
        line.payload_role(),
        meta,
        is_compaction_output(line),
    )
}

/// The KIND of a node from what the index keeps of its line, as [`item_kind`] reads
/// the payload: its kind, its payload's `type` and `role` when they are strings, and
/// whether it is a user message Codex wrote or a compaction's summary
/// ([`is_compaction_output`]).
pub fn kind_name(
    kind: LineKind,
    ty: Option<&str>,
    role: Option<&str>,
    meta_user: bool,
    compaction_output: bool,
) -> String {
    match kind {
        LineKind::Compacted => "compacted".to_string(),
        _ => match ty.unwrap_or("unknown") {
            "message" if meta_user => "meta".to_string(),
            "message" if compaction_output && role == Some("assistant") => {
                COMPACTION_SUMMARY.to_string()
            }
            "message" => role.unwrap_or("unknown").to_string(),
            ty => ty.to_string(),
        },
    }
}

/// What a node's KIND is interned as in the index (`KindTable::intern_named`): the
/// line's type (`compacted`, or its payload's `type`) and its KIND name.
pub fn kind_key(line: &Line) -> (&str, String) {
    let ty = match line.kind {
        LineKind::Compacted => "compacted",
        _ => line.payload_type(),
    };
    (ty, line_kind(line))
}

/// The KIND file of a node's line.
pub fn line_text(line: &Line) -> Rendered {
    node_text(line.kind, line.payload())
}

/// The KIND file of a node of kind `kind` whose line's `payload` is `p`.
pub fn node_text(kind: LineKind, p: &Value) -> Rendered {
    match kind {
        LineKind::Compacted => {
            let mut text =
                String::from("[compaction: what follows replaces the history before it]\n");
            text.push_str(p["message"].as_str().unwrap_or(""));
            if let Some(rh) = p["replacement_history"].as_array() {
                text.push_str(&format!("\n\n[replacement history: {} items]\n", rh.len()));
                for v in rh {
                    text.push_str(&format!("- {}\n", item_preview(v)));
                }
            }
            Rendered {
                text,
                images: Vec::new(),
            }
        }
        _ => item_text(p),
    }
}

/// The readable text of a `response_item` payload.
pub fn item_text(p: &Value) -> Rendered {
    let mut r = Rendered::default();
    match p["type"].as_str().unwrap_or("") {
        "message" => content_text(&p["content"], &mut r),
        "reasoning" => {
            let parts: Vec<&str> = p["summary"]
                .as_array()
                .map(|s| s.iter().filter_map(|b| b["text"].as_str()).collect())
                .unwrap_or_default();
            r.text = parts.join("\n\n");
            if let Some(c) = p["content"].as_array() {
                for b in c {
                    if let Some(t) = b["text"].as_str() {
                        r.text.push_str("\n\n");
                        r.text.push_str(t);
                    }
                }
            }
            if r.text.is_empty() && p["encrypted_content"].is_string() {
                r.text = "[reasoning: encrypted, no summary]".to_string();
            }
        }
        "function_call" | "custom_tool_call" => {
            let name = call_name(p);
            let call_id = p["call_id"].as_str().unwrap_or("");
            r.text = format!("[call {name} ({call_id})]\n");
            let args = p["arguments"]
                .as_str()
                .or_else(|| p["input"].as_str())
                .unwrap_or("");
            r.text.push_str(&pretty_json_string(args));
        }
        "function_call_output" | "custom_tool_call_output" => {
            let call_id = p["call_id"].as_str().unwrap_or("");
            r.text = format!("[output ({call_id})]\n");
            match &p["output"] {
                Value::String(s) => r.text.push_str(s),
                v @ Value::Array(_) => content_text(v, &mut r),
                v => r.text.push_str(&v.to_string()),
            }
        }
        _ => r.text = serde_json::to_string_pretty(p).unwrap_or_default(),
    }
    if !r.text.ends_with('\n') {
        r.text.push('\n');
    }
    r
}

fn call_name(p: &Value) -> String {
    let name = p["name"].as_str().unwrap_or("?");
    match p["namespace"].as_str() {
        Some(ns) if !ns.is_empty() => format!("{ns}.{name}"),
        _ => name.to_string(),
    }
}

/// Arguments are a JSON *string* (§2): pretty-printed when it parses, as is otherwise.
pub fn pretty_json_string(s: &str) -> String {
    match serde_json::from_str::<Value>(s) {
        Ok(v @ (Value::Object(_) | Value::Array(_))) => {
            serde_json::to_string_pretty(&v).unwrap_or_else(|_| s.to_string())
        }
        _ => s.to_string(),
    }
}

/// Content blocks: texts as is, images decoded into files named in the text.
fn content_text(content: &Value, r: &mut Rendered) {
    let Some(blocks) = content.as_array() else {
        if let Some(s) = content.as_str() {
            r.text.push_str(s);
        }
        return;
    };
    for b in blocks {
        if let Some(t) = b["text"].as_str() {
            push_block(&mut r.text, t);
        } else if let Some(url) = b["image_url"].as_str() {
            match decode_data_url(url) {
                Some((ext, bytes)) => {
                    let name = format!("image-{}.{ext}", r.images.len() + 1);
                    push_block(&mut r.text, &format!("[image: {name}]"));
                    r.images.push(Image { name, bytes });
                }
                None => push_block(&mut r.text, &format!("[image: {}]", short(url, 80))),
            }
        }
    }
}

fn push_block(text: &mut String, t: &str) {
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(t);
}

/// `data:image/png;base64,…` → (`png`, bytes).
pub fn decode_data_url(url: &str) -> Option<(String, Vec<u8>)> {
    let rest = url.strip_prefix("data:")?;
    let (head, data) = rest.split_once(',')?;
    let mime = head.strip_suffix(";base64")?;
    let ext = match mime {
        "image/jpeg" => "jpg".to_string(),
        m => m
            .strip_prefix("image/")
            .filter(|e| !e.is_empty() && e.chars().all(|c| c.is_ascii_alphanumeric()))
            .unwrap_or("bin")
            .to_string(),
    };
    Some((ext, crate::model::core::base64::decode(data)))
}

/// The one-line preview of a node for `tree`.
pub fn preview(line: &Line) -> String {
    node_preview(line.kind, line.payload(), is_compaction_output(line))
}

/// The one-line preview of a node of kind `kind` whose line's `payload` is `p`
/// (`compaction_output`: the line is a compaction's summary, [`is_compaction_output`]).
pub fn node_preview(kind: LineKind, p: &Value, compaction_output: bool) -> String {
    match kind {
        LineKind::Compacted => format!(
            "compacted: {}",
            one_line(
                p["message"]
                    .as_str()
                    .and_then(|m| m.split_once("\n\n").map(|x| x.1).or(Some(m)))
                    .unwrap_or(""),
                70
            )
        ),
        _ if compaction_output => format!(
            "{COMPACTION_SUMMARY}: {}",
            one_line(&message_texts(p).join(" "), 70)
        ),
        _ => item_preview(p),
    }
}

/// The one-line preview of a `response_item` payload.
pub fn item_preview(p: &Value) -> String {
    let kind = item_kind(p);
    match p["type"].as_str().unwrap_or("") {
        "message" => {
            let texts = message_texts(p).join(" ");
            let images = p["content"].as_array().map_or(0, |c| {
                c.iter().filter(|b| b["image_url"].is_string()).count()
            });
            let mut s = format!("{kind}: {}", one_line(&texts, 70));
            if images > 0 {
                s.push_str(&format!(" [{images} image(s)]"));
            }
            s
        }
        "reasoning" => format!("reasoning: {}", one_line(&item_text(p).text, 70)),
        "function_call" | "custom_tool_call" => {
            let args = p["arguments"]
                .as_str()
                .or_else(|| p["input"].as_str())
                .unwrap_or("");
            let args = match serde_json::from_str::<Value>(args) {
                Ok(v) => v
                    .get("cmd")
                    .or_else(|| v.get("command"))
                    .map(|c| c.as_str().map_or_else(|| c.to_string(), str::to_string))
                    .unwrap_or_else(|| v.to_string()),
                Err(_) => args.to_string(),
            };
            format!("call {}: {}", call_name(p), one_line(&args, 60))
        }
        "function_call_output" | "custom_tool_call_output" => {
            let body = match &p["output"] {
                Value::String(s) => s
                    .split_once("Output:\n")
                    .map_or(s.as_str(), |x| x.1)
                    .to_string(),
                v => item_text(&serde_json::json!({"type":"message","content":v})).text,
            };
            format!(
                "output {}: {}",
                p["call_id"].as_str().unwrap_or(""),
                one_line(&body, 60)
            )
        }
        other => format!("{other}: {}", one_line(&p.to_string(), 60)),
    }
}

/// Whitespace collapsed, cut at `max` characters with `…`.
pub fn one_line(s: &str, max: usize) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    short(&flat, max)
}

fn short(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max).collect();
        t.push('…');
        t
    }
}
