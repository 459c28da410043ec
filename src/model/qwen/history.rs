//! What Qwen Code 0.24.4 sends the model when a conversation continues right after a
//! record: `context.json`.
//!
//! Transcribed from the CLI's bundled source and checked against the real CLI on
//! every point of the fixtures (`tests.rs`, `tests/fixtures/qwen/`):
//!
//! 1. **The chain** (`walkTranscriptUuidChain`): from the record up through
//!    `parentUuid` over the records Qwen Code loads as conversation records (the first
//!    line of a uuid; later lines are fragments whose parts join it,
//!    `aggregateTranscriptRecordFragments`); the walk stops at a root, at a parent
//!    that is not there (the records before the gap are not sent, QWEN-FORMAT.md
//!    §3.3) and at a record already on the chain (a cycle).
//! 2. **The API history** (`SessionApiHistoryAccumulator`): each record's `message`
//!    (`{role, parts}`) in chain order; a `chat_compression` with a
//!    `compressedHistory` replaces everything before it (§5); a `slash_command`
//!    result takes back the command's own user record when the command sent nothing
//!    to the model; `mid_turn_user_message` joins the user content before it;
//!    `realtime_message` and every other `system` record add nothing.
//! 3. **The chat's history**: dangling tool calls get an error result
//!    (`repairOrphanedToolUseTurns`, done on every resume), consecutive user contents
//!    are merged into one, and a run of model contents with an empty part is dropped
//!    (`extractCuratedHistory`).
//! 4. **Media** (`super::media`): from 20 inline images on, each becomes a reference
//!    and the last three are attached again at the end; media the model does not take
//!    become `[image: …]`/`[document: …]` placeholders.
//! 5. **The OpenAI messages** (`convertLlmRequestToOpenAI` of the OpenAI-compatible
//!    provider): a model content becomes one `assistant` message (`content` the texts
//!    joined, `null` for tool calls alone, `reasoning_content` from thought parts,
//!    `tool_calls` from `functionCall` parts); a user content becomes one `tool`
//!    message per `functionResponse` and then one `user` message with its text and
//!    media parts; media a tool returned goes to a user message of its own;
//!    consecutive assistant messages merge; tool calls without a result (and results
//!    without a call) are dropped; past 250 images the oldest become a placeholder;
//!    for a `qwen3` model `reasoning` mirrors `reasoning_content`.
//!
//! The model is the one of the chain's last `assistant` record (the model a resume of
//! that session uses): it decides which media a message may carry (an image for a
//! model that takes none becomes a placeholder, `super::media`) and the `reasoning`
//! mirror. The system prompt, the tools, the startup context Qwen Code puts in front
//! of the first user message and the date reminder in front of a new prompt are made
//! at each run, not read from the file: they are not part of `context.json`
//! (`super::prompt` shows the first two in the readable `context`).

use super::modalities::{Modalities, modalities};
use super::{Fragment, State, nflags};
use crate::model::core::id::IdKey;
use crate::model::core::js::{js_stringify, js_truthy};
use crate::model::core::session::Session;
use serde_json::{Map, Value, json};
use std::collections::HashSet;
use std::io;

/// Qwen Code's text for a tool call whose result was never written.
pub const ORPHAN_REASON: &str = "Tool execution result was not recorded \u{2014} likely interrupted by network failure, abort, or process exit. Treat as failure and retry if needed.";
/// What an image past the cap becomes.
const EVICTED_IMAGE: &str = "[\u{5DF2}\u{6DD8}\u{6C70}\u{8F83}\u{65E9}\u{7684}\u{5173}\u{952E}\u{5E27}\u{4EE5}\u{63A7}\u{5236}\u{5355}\u{6B21}\u{8BF7}\u{6C42}\u{7684}\u{56FE}\u{7247}\u{6570}\u{91CF}\u{FF1B}\u{5982}\u{9700}\u{91CD}\u{770B}\u{8BE5}\u{753B}\u{9762}\u{8BF7}\u{91CD}\u{65B0}\u{62BD}\u{5E27}\u{6216}\u{5207}\u{7247}]";
const MAX_REQUEST_IMAGES: usize = 250;
const SPLIT_TOOL_MEDIA_TEXT: &str = "(attached media from previous tool call)";
const UPSTREAM_DEGRADED_PLACEHOLDER: &str = "(request timeout)";

/// The chain of entry `i`, root first: the entries Qwen Code walks from it.
pub fn chain(s: &Session, st: &State, i: u32) -> Vec<u32> {
    let Some(n) = st.node(i) else {
        return Vec::new();
    };
    let file = n.file;
    // The record Qwen Code finds for a uuid: the first line of it, if that is a
    // conversation record of the same file.
    let lookup = |k: IdKey| -> Option<u32> {
        if k.is_none() {
            return None;
        }
        let e = s.find_key(k)?;
        st.node(e)
            .filter(|n| n.file == file && n.is_conversation())
            .map(|_| e)
    };
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let start = if n.is_conversation() {
        Some(i)
    } else {
        lookup(n.parent)
    };
    let mut cur = start;
    while let Some(c) = cur {
        if !seen.insert(c) {
            break;
        }
        out.push(c);
        let p = st.nodes[c as usize].parent;
        if p.is_none() {
            break;
        }
        cur = lookup(p);
    }
    out.reverse();
    out
}

/// Appends the fragments' parts to the record `v` (its first line), as Qwen Code
/// aggregates the lines of one uuid.
pub fn aggregate(s: &Session, frags: &[Fragment], v: &mut Value) {
    for f in frags {
        let bytes = if f.file == 0 {
            let mut b = vec![0u8; f.len as usize];
            match s.read_exact_at(&mut b, f.offset) {
                Ok(()) => b,
                Err(_) => continue,
            }
        } else {
            match s
                .source(f.file)
                .map(|src| src.read(s.homes(), f.offset, f.len))
            {
                Some(Ok(b)) => b,
                _ => continue,
            }
        };
        let Ok(r) = crate::model::core::js::parse_line(&bytes) else {
            continue;
        };
        let Value::Object(base) = v else { return };
        if let Some(m) = r.get("message").filter(|m| m.is_object()) {
            let more: Vec<Value> = m
                .get("parts")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            match base.get_mut("message") {
                Some(Value::Object(bm)) => {
                    let mut parts = bm
                        .get("parts")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    parts.extend(more);
                    bm.insert("parts".into(), Value::Array(parts));
                }
                _ => {
                    let mut nm = m.as_object().cloned().unwrap_or_default();
                    nm.insert("parts".into(), Value::Array(more));
                    base.insert("message".into(), Value::Object(nm));
                }
            }
        }
        if let Some(u) = r.get("usageMetadata").filter(|u| js_truthy(Some(u))) {
            base.insert("usageMetadata".into(), u.clone());
        }
        for k in ["toolCallResult", "model"] {
            if !js_truthy(base.get(k))
                && let Some(x) = r.get(k).filter(|x| js_truthy(Some(x)))
            {
                base.insert(k.into(), x.clone());
            }
        }
        if let Some(t) = r.get("timestamp").and_then(Value::as_str)
            && !t.is_empty()
            && base
                .get("timestamp")
                .and_then(Value::as_str)
                .is_none_or(|b| b.is_empty() || t > b)
        {
            base.insert("timestamp".into(), Value::String(t.into()));
        }
    }
}

/// The message of a record as Qwen Code's loader keeps it: `{role, parts}` (each only
/// when it has the right type), or nothing when `message` is not an object.
fn loaded_message(v: &Value) -> Option<Value> {
    let m = v.get("message")?.as_object()?;
    let mut out = Map::new();
    if let Some(r) = m.get("role").filter(|r| r.is_string()) {
        out.insert("role".into(), r.clone());
    }
    if let Some(p) = m.get("parts").filter(|p| p.is_array()) {
        out.insert("parts".into(), p.clone());
    }
    Some(Value::Object(out))
}

fn parts_of(c: &Value) -> &[Value] {
    c.get("parts")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn role_of(c: &Value) -> Option<&str> {
    c.get("role").and_then(Value::as_str)
}

/// The API history of a chain (`SessionApiHistoryAccumulator`), and the model of its
/// last `assistant` record.
pub fn api_history(s: &Session, st: &State, chain: &[u32]) -> io::Result<(Vec<Value>, String)> {
    let mut history: Vec<Value> = Vec::new();
    let mut model = String::new();
    // The last record that added to the history (`lastMaterialRecord`).
    let mut last_material: Option<Value> = None;
    let mut completed: HashSet<String> = HashSet::new();
    let mut stopped = false;
    // A compression sets everything this walk keeps (the history, the completed calls,
    // whether records still count): the records before the last one matter only for
    // the model.
    let from = chain
        .iter()
        .rposition(|&i| {
            st.nodes[i as usize].rtype == super::RType::System
                && st.nodes[i as usize].has(nflags::COMPRESSION)
                && st.subtype(i) == "chat_compression"
        })
        .unwrap_or(0);
    for &i in &chain[from..] {
        let v = s.entry_value(i)?;
        let n = &st.nodes[i as usize];
        let subtype = st.subtype(i);
        if n.rtype == super::RType::Assistant
            && let Some(m) = v.get("model").and_then(Value::as_str)
            && !m.trim().is_empty()
        {
            model = m.to_string();
        }
        if n.rtype == super::RType::System {
            match subtype {
                "slash_command" => {
                    let p = v.get("systemPayload");
                    let prev_user = last_material
                        .as_ref()
                        .is_some_and(|r| r.get("type").and_then(Value::as_str) == Some("user"));
                    if let Some(prev) = &last_material
                        && takes_back(p, prev)
                    {
                        history.pop();
                    }
                    if prev_user {
                        last_material = None;
                    }
                }
                "goal_turn_end" => {}
                "chat_compression" if n.has(nflags::COMPRESSION) => {
                    let h = v
                        .get("systemPayload")
                        .and_then(|p| p.get("compressedHistory"));
                    match h {
                        Some(Value::Array(a)) => {
                            history = a.clone();
                            completed = v
                                .get("systemPayload")
                                .and_then(|p| p.get("completedToolCallIds"))
                                .and_then(Value::as_array)
                                .map(|ids| {
                                    ids.iter()
                                        .filter_map(Value::as_str)
                                        .map(str::to_string)
                                        .collect()
                                })
                                .unwrap_or_default();
                            stopped = false;
                        }
                        // A history that is no list: Qwen Code keeps nothing and
                        // ignores the records after it.
                        _ => {
                            history.clear();
                            stopped = true;
                        }
                    }
                    last_material = None;
                }
                _ => {}
            }
            continue;
        }
        if stopped {
            continue;
        }
        let Some(message) = loaded_message(&v) else {
            continue;
        };
        if subtype == "realtime_message" {
            continue;
        }
        for p in parts_of(&message) {
            for k in ["functionCall", "functionResponse"] {
                if let Some(id) = p.get(k).and_then(|x| x.get("id")).and_then(Value::as_str) {
                    completed.remove(id);
                }
            }
        }
        if subtype == "mid_turn_user_message"
            && let Some(prev) = history.last_mut()
            && role_of(prev) == Some("user")
            && !parts_of(prev).iter().any(|p| {
                p.get("functionResponse")
                    .and_then(|f| f.get("id"))
                    .and_then(Value::as_str)
                    .is_some_and(|id| completed.contains(id))
            })
        {
            let mut parts = parts_of(prev).to_vec();
            parts.extend(parts_of(&message).iter().cloned());
            prev["parts"] = Value::Array(parts);
        } else {
            history.push(message);
        }
        last_material = Some(v);
    }
    if model.is_empty()
        && let Some(m) = last_model(s, st, chain[..from].iter().copied())
    {
        model = m;
    }
    Ok((history, model))
}

/// Whether a `slash_command` result takes back the user record before it (the command
/// as typed, which sent nothing to the model).
fn takes_back(payload: Option<&Value>, prev: &Value) -> bool {
    let Some(p) = payload else { return false };
    let items = match p.get("outputHistoryItems") {
        Some(Value::Array(a)) if !a.is_empty() => a,
        _ => return false,
    };
    if p.get("phase").and_then(Value::as_str) != Some("result")
        || p.get("sentToModel") == Some(&Value::Bool(true))
        || !items
            .iter()
            .all(|it| it.get("type").and_then(Value::as_str) == Some("assistant"))
    {
        return false;
    }
    if prev.get("type").and_then(Value::as_str) != Some("user") || prev.get("subtype").is_some() {
        return false;
    }
    let m = prev.get("message");
    if m.and_then(|m| m.get("role")).and_then(Value::as_str) != Some("user") {
        return false;
    }
    let parts = m.and_then(|m| m.get("parts")).and_then(Value::as_array);
    let Some([only]) = parts.map(Vec::as_slice) else {
        return false;
    };
    let Some(o) = only.as_object() else {
        return false;
    };
    o.len() == 1
        && o.get("text").and_then(Value::as_str).is_some()
        && o.get("text") == p.get("rawCommand")
}

/// A model content that answers nothing: `(request timeout)` alone.
fn is_degraded_placeholder(c: &Value) -> bool {
    let parts = parts_of(c);
    if parts.is_empty()
        || !parts.iter().all(|p| {
            p.get("functionCall").is_none()
                && (js_truthy(p.get("thought")) || p.get("text").is_some())
        })
    {
        return false;
    }
    let text: String = parts
        .iter()
        .filter(|p| !js_truthy(p.get("thought")))
        .map(|p| p.get("text").and_then(Value::as_str).unwrap_or(""))
        .collect();
    text.trim() == UPSTREAM_DEGRADED_PLACEHOLDER
}

/// `repairOrphanedToolUseTurns`: an error result for every call of a model content
/// that no user content after it answers; a result away from its call moves next to
/// it; a second result of one call goes.
pub fn repair(history: &mut Vec<Value>) {
    let mut i = 0;
    while i < history.len() {
        if role_of(&history[i]) != Some("model") {
            i += 1;
            continue;
        }
        let mut expected: Vec<(String, String)> = Vec::new();
        for p in parts_of(&history[i]) {
            if let Some(fc) = p.get("functionCall")
                && let Some(id) = fc
                    .get("id")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
            {
                let name = match fc.get("name") {
                    Some(Value::String(n)) => n.clone(),
                    None | Some(Value::Null) => "unknown".into(),
                    Some(other) => crate::model::core::js::js_to_string(Some(other)),
                };
                match expected.iter_mut().find(|(e, _)| e == id) {
                    Some(slot) => slot.1 = name,
                    None => expected.push((id.to_string(), name)),
                }
            }
        }
        if expected.is_empty() {
            i += 1;
            continue;
        }
        let mut scan = i + 1;
        while scan < history.len()
            && role_of(&history[scan]) == Some("model")
            && is_degraded_placeholder(&history[scan])
        {
            scan += 1;
        }
        let adjacent = scan;
        // Where each call's results are: (content, part).
        let mut matched: Vec<(String, Vec<(usize, usize)>)> = Vec::new();
        while scan < history.len() && role_of(&history[scan]) == Some("user") {
            for (k, p) in parts_of(&history[scan]).iter().enumerate() {
                if let Some(id) = p
                    .get("functionResponse")
                    .and_then(|f| f.get("id"))
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                {
                    match matched.iter_mut().find(|(m, _)| m == id) {
                        Some(m) => m.1.push((scan, k)),
                        None => matched.push((id.to_string(), vec![(scan, k)])),
                    }
                }
            }
            scan += 1;
        }
        let scan_end = scan;
        let mut synth: Vec<(String, String)> = Vec::new();
        let mut hoisted: Vec<Value> = Vec::new();
        let mut removals: Vec<(usize, usize)> = Vec::new();
        for (id, name) in &expected {
            match matched.iter().find(|(m, _)| m == id) {
                None => synth.push((id.clone(), name.clone())),
                Some((_, locs)) => {
                    let first = locs[0];
                    if first.0 != adjacent {
                        hoisted.push(parts_of(&history[first.0])[first.1].clone());
                        removals.push(first);
                    }
                    removals.extend(locs[1..].iter().copied());
                }
            }
        }
        if synth.is_empty() && removals.is_empty() {
            i += 1;
            continue;
        }
        removals.sort_by(|a, b| b.cmp(a));
        for (t, k) in removals {
            if let Some(Value::Array(ps)) = history[t].get_mut("parts")
                && k < ps.len()
            {
                ps.remove(k);
            }
        }
        let mut j = scan_end;
        while j > adjacent + 1 {
            j -= 1;
            if j < history.len()
                && role_of(&history[j]) == Some("user")
                && parts_of(&history[j]).is_empty()
            {
                history.remove(j);
            }
        }
        let mut inject: Vec<Value> = synth
            .iter()
            .map(|(id, name)| {
                json!({"functionResponse": {"id": id, "name": name, "response": {"error": ORPHAN_REASON}}})
            })
            .collect();
        inject.extend(hoisted);
        if inject.is_empty() {
            i += 1;
            continue;
        }
        if adjacent < history.len() && role_of(&history[adjacent]) == Some("user") {
            let existing = parts_of(&history[adjacent]).to_vec();
            let at = existing
                .iter()
                .position(|p| {
                    p.get("functionResponse")
                        .is_none_or(|f| !js_truthy(Some(f)))
                })
                .unwrap_or(existing.len());
            let mut parts = existing[..at].to_vec();
            parts.extend(inject);
            parts.extend_from_slice(&existing[at..]);
            history[adjacent]["parts"] = Value::Array(parts);
            i += 1;
        } else {
            history.insert(adjacent, json!({"role": "user", "parts": inject}));
            i += 2;
        }
    }
}

/// `isValidContent`: parts, none empty, no empty non-thought text without a call.
fn is_valid_content(c: &Value) -> bool {
    let parts = parts_of(c);
    if parts.is_empty() {
        return false;
    }
    parts.iter().all(|p| match p.as_object() {
        None => true,
        Some(o) if o.is_empty() => false,
        Some(o) => {
            let invalid = !js_truthy(o.get("thought"))
                && !js_truthy(o.get("thoughtSignature"))
                && o.get("text") == Some(&Value::String(String::new()))
                && o.get("functionCall").is_none();
            !invalid
        }
    })
}

/// `extractCuratedHistory`: consecutive user contents merged; a run of model contents
/// kept only when each is valid, without the degraded placeholders.
pub fn curate(history: Vec<Value>) -> Vec<Value> {
    fn take_parts(c: &mut Value) -> Vec<Value> {
        match c.get_mut("parts").map(Value::take) {
            Some(Value::Array(a)) => a,
            _ => Vec::new(),
        }
    }
    let mut out: Vec<Value> = Vec::new();
    let mut it = history.into_iter().peekable();
    while let Some(mut c) = it.next() {
        match role_of(&c) {
            Some("user") => match out.last_mut() {
                Some(last) if role_of(last) == Some("user") => {
                    let mut parts = take_parts(last);
                    parts.extend(take_parts(&mut c));
                    last["parts"] = Value::Array(parts);
                }
                _ => out.push(c),
            },
            Some("model") => {
                let mut run = vec![c];
                while let Some(next) = it.next_if(|n| role_of(n) == Some("model")) {
                    run.push(next);
                }
                if run.iter().all(is_valid_content) {
                    out.extend(run.into_iter().filter(|c| !is_degraded_placeholder(c)));
                }
            }
            // Qwen Code refuses a history with any other role; such a content is
            // left out.
            _ => {}
        }
    }
    out
}

fn unsupported(modality: &str, name: &str) -> Value {
    let hint = if modality == "pdf" {
        "This model does not support PDF input directly. The read_file tool cannot extract PDF content either. To extract text from the PDF file, try using skills if applicable, or guide user to install pdf skill by running this slash command:\n/extensions install https://github.com/anthropics/skills:document-skills".to_string()
    } else {
        format!(
            "This model does not support {modality} input. The read_file tool cannot process this type of file either. To handle this file, try using skills if applicable, or any tools installed at system wide, or let the user know you cannot process this type of file."
        )
    };
    json!({"type": "text", "text": format!("[Unsupported {modality} file: \"{name}\". {hint}]")})
}

fn audio_format(mime: &str) -> Option<&'static str> {
    if mime.contains("wav") {
        Some("wav")
    } else if mime.contains("mp3") || mime.contains("mpeg") {
        Some("mp3")
    } else if mime.contains("flac") {
        Some("flac")
    } else if mime.contains("ogg") {
        Some("ogg")
    } else if mime == "audio/mp4" || mime.contains("m4a") {
        Some("m4a")
    } else {
        None
    }
}

/// `createMediaContentPart`: an `inlineData` or `fileData` part as an OpenAI content
/// part (or a placeholder text for a medium the model does not take).
fn media_part(p: &Value, m: Modalities) -> Option<Value> {
    fn str_of(v: Option<&Value>) -> Option<&str> {
        v.and_then(Value::as_str).filter(|s| !s.is_empty())
    }
    if let Some(d) = p.get("inlineData")
        && let (Some(mime), Some(data)) = (str_of(d.get("mimeType")), str_of(d.get("data")))
    {
        let display = str_of(d.get("displayName")).unwrap_or(mime);
        let url = format!("data:{mime};base64,{data}");
        if mime.starts_with("image/") {
            return Some(if m.image {
                json!({"type": "image_url", "image_url": {"url": url}})
            } else {
                unsupported("image", display)
            });
        }
        if mime == "application/pdf" {
            if !m.pdf {
                return Some(unsupported("pdf", display));
            }
            let filename = str_of(d.get("displayName")).unwrap_or("document.pdf");
            return Some(json!({"type": "file", "file": {"filename": filename, "file_data": url}}));
        }
        if mime.starts_with("audio/") {
            if !m.audio {
                return Some(unsupported("audio", display));
            }
            if let Some(f) = audio_format(mime) {
                return Some(
                    json!({"type": "input_audio", "input_audio": {"data": url, "format": f}}),
                );
            }
        }
        if mime.starts_with("video/") {
            if !m.video {
                return Some(unsupported("video", display));
            }
            return Some(json!({"type": "video_url", "video_url": {"url": url}}));
        }
        return Some(
            json!({"type": "text", "text": format!("Unsupported inline media type: {mime} ({display}).")}),
        );
    }
    if let Some(f) = p.get("fileData")
        && let (Some(mime), Some(uri)) = (str_of(f.get("mimeType")), str_of(f.get("fileUri")))
    {
        let filename = str_of(f.get("displayName")).unwrap_or("file");
        if mime.starts_with("image/") {
            return Some(if m.image {
                json!({"type": "image_url", "image_url": {"url": uri}})
            } else {
                unsupported("image", filename)
            });
        }
        if mime == "application/pdf" {
            return Some(if m.pdf {
                json!({"type": "file", "file": {"filename": filename, "file_data": uri}})
            } else {
                unsupported("pdf", filename)
            });
        }
        if mime.starts_with("video/") {
            return Some(if m.video {
                json!({"type": "video_url", "video_url": {"url": uri}})
            } else {
                unsupported("video", filename)
            });
        }
        if mime.starts_with("audio/") {
            if !m.audio {
                return Some(unsupported("audio", filename));
            }
            if let Some(fmt) = audio_format(mime) {
                return Some(
                    json!({"type": "input_audio", "input_audio": {"data": uri, "format": fmt}}),
                );
            }
        }
        let name = str_of(f.get("displayName"))
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        return Some(
            json!({"type": "text", "text": format!("Unsupported file media type: {mime}{name}.")}),
        );
    }
    None
}

/// `extractFunctionResponseContent`.
fn response_text(r: Option<&Value>) -> String {
    match r {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(o)) => match (o.get("output"), o.get("error")) {
            (Some(Value::String(s)), _) => s.clone(),
            (_, Some(Value::String(e))) => e.clone(),
            _ => js_stringify(r.unwrap_or(&Value::Null)),
        },
        Some(other) => js_stringify(other),
    }
}

/// `createToolMessage`.
fn tool_message(fr: &Value, m: Modalities) -> Value {
    let text = response_text(fr.get("response"));
    let mut content = Vec::new();
    if !text.is_empty() {
        content.push(json!({"type": "text", "text": text}));
    }
    for p in parts_of(fr) {
        if let Some(t) = p.get("text").and_then(Value::as_str) {
            if !t.is_empty() {
                content.push(json!({"type": "text", "text": t}));
            }
            continue;
        }
        if let Some(mp) = media_part(p, m) {
            content.push(mp);
        }
    }
    let id = fr
        .get("id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("");
    if content.is_empty() {
        json!({"role": "tool", "tool_call_id": id, "content": ""})
    } else {
        json!({"role": "tool", "tool_call_id": id, "content": content})
    }
}

/// Whether a text part is a disclosure that goes with the medium after it.
fn is_disclosure_text(t: &str) -> bool {
    if t.starts_with("\u{3010}\u{5A92}\u{4F53}\u{964D}\u{8D28}\u{3011}") {
        return true;
    }
    // `<M:SS>` or `<H:MM:SS>`, a keyframe's time.
    let Some(inner) = t.strip_prefix('<').and_then(|r| r.strip_suffix('>')) else {
        return false;
    };
    let fields: Vec<&str> = inner.split(':').collect();
    let digits = |f: &str, lo: usize, hi: usize| {
        f.len() >= lo && f.len() <= hi && f.bytes().all(|b| b.is_ascii_digit())
    };
    match fields.as_slice() {
        [a, b] => digits(a, 1, 2) && digits(b, 2, 2),
        [a, b, c] => digits(a, 1, 2) && digits(b, 2, 2) && digits(c, 2, 2),
        _ => false,
    }
}

fn tool_name(name: &str) -> String {
    if !name.starts_with("mcp__") {
        return name.to_string();
    }
    const MAX: usize = 63;
    let safe = name.len() <= MAX
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if safe {
        return name.to_string();
    }
    let sanitized: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let sanitized = if sanitized.starts_with(|c: char| c.is_ascii_alphabetic()) {
        sanitized
    } else {
        format!("tool_{sanitized}")
    };
    // FNV-1a over UTF-16 units, in base 36, seven digits at least.
    let mut h: u32 = 2_166_136_261;
    for u in name.encode_utf16() {
        h = (h ^ u as u32).wrapping_mul(16_777_619);
    }
    let mut digits = Vec::new();
    let mut x = h;
    loop {
        digits.push(std::char::from_digit(x % 36, 36).unwrap_or('0'));
        x /= 36;
        if x == 0 {
            break;
        }
    }
    while digits.len() < 7 {
        digits.push('0');
    }
    let hash: String = digits.into_iter().rev().collect();
    let suffix = format!("_{hash}");
    let keep = MAX - suffix.len();
    let head: String = sanitized.chars().take(keep).collect();
    format!("{head}{suffix}")
}

/// `processContent` for one content, appending its messages to `out`.
fn process_content(c: &Value, m: Modalities, out: &mut Vec<Value>) {
    let Some(role) = c.get("role") else { return };
    if !c.get("parts").is_some_and(Value::is_array) {
        return;
    }
    let assistant = role.as_str() == Some("model");
    let mut content: Vec<Value> = Vec::new();
    let mut reasoning: Vec<String> = Vec::new();
    let mut calls: Vec<Value> = Vec::new();
    let mut call_index = 0;
    let mut call_ids: HashSet<String> = HashSet::new();
    let mut response_ids: HashSet<String> = HashSet::new();
    let mut split_media: Vec<Value> = Vec::new();
    for p in parts_of(c) {
        if let Value::String(t) = p {
            content.push(json!({"type": "text", "text": t}));
            continue;
        }
        let Some(o) = p.as_object() else { continue };
        let thought = o.get("text").is_some() && js_truthy(o.get("thought"));
        if thought
            && assistant
            && let Some(t) = o.get("text").filter(|t| js_truthy(Some(t)))
        {
            reasoning.push(crate::model::core::js::js_to_string(Some(t)));
        }
        if let Some(t) = o.get("text").filter(|t| js_truthy(Some(t)))
            && !js_truthy(o.get("thought"))
        {
            content.push(json!({"type": "text", "text": t}));
        }
        if !assistant && let Some(mp) = media_part(p, m) {
            content.push(mp);
        }
        if assistant && let Some(fc) = o.get("functionCall").filter(|f| js_truthy(Some(f))) {
            let id = fc
                .get("id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty());
            if let Some(id) = id
                && !call_ids.insert(id.to_string())
            {
                continue;
            }
            let name = fc.get("name").and_then(Value::as_str).unwrap_or("");
            let args = match fc.get("args") {
                Some(a) if js_truthy(Some(a)) => js_stringify(a),
                _ => "{}".to_string(),
            };
            calls.push(json!({
                "id": id.map_or_else(|| format!("call_{call_index}"), str::to_string),
                "type": "function",
                "function": {"name": tool_name(name), "arguments": args},
            }));
            call_index += 1;
        }
        if !assistant && let Some(fr) = o.get("functionResponse").filter(|f| js_truthy(Some(f))) {
            if let Some(id) = fr
                .get("id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                && !response_ids.insert(id.to_string())
            {
                continue;
            }
            let mut tm = tool_message(fr, m);
            // Media a tool returned goes to a user message after the tool messages.
            if let Some(Value::Array(cps)) = tm.get("content").cloned() {
                let mut media: Vec<Value> = Vec::new();
                let mut texts: Vec<Value> = Vec::new();
                let mut prev: Option<&Value> = None;
                for cp in &cps {
                    let ty = cp.get("type").and_then(Value::as_str).unwrap_or("");
                    if matches!(ty, "image_url" | "input_audio" | "video_url" | "file") {
                        if let Some(pv) = prev
                            && pv.get("type").and_then(Value::as_str) == Some("text")
                            && is_disclosure_text(
                                pv.get("text").and_then(Value::as_str).unwrap_or(""),
                            )
                        {
                            texts.pop();
                            media.push(pv.clone());
                        }
                        media.push(cp.clone());
                    } else if ty == "text" {
                        texts.push(cp.clone());
                    }
                    prev = Some(cp);
                }
                if !media.is_empty() {
                    let text_only: Vec<&str> = texts
                        .iter()
                        .map(|t| t.get("text").and_then(Value::as_str).unwrap_or(""))
                        .collect();
                    let joined = text_only.join("\n");
                    tm["content"] = Value::String(if joined.is_empty() {
                        "[media attached in following user message]".into()
                    } else {
                        joined
                    });
                    split_media.extend(media);
                }
            }
            out.push(tm);
        }
    }
    if !split_media.is_empty() {
        let mut cs = vec![json!({"type": "text", "text": SPLIT_TOOL_MEDIA_TEXT})];
        cs.extend(split_media);
        out.push(json!({"role": "user", "content": cs}));
    }
    if assistant {
        if content.is_empty() && calls.is_empty() && reasoning.is_empty() {
            return;
        }
        let text: String = content
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
            .map(|p| crate::model::core::js::js_to_string(p.get("text")))
            .collect();
        let mut msg = Map::new();
        msg.insert("role".into(), json!("assistant"));
        msg.insert(
            "content".into(),
            if !text.is_empty() {
                Value::String(text)
            } else if !reasoning.is_empty() {
                Value::String(String::new())
            } else {
                Value::Null
            },
        );
        if !calls.is_empty() {
            msg.insert("tool_calls".into(), Value::Array(calls));
        }
        let r: String = reasoning.concat();
        if !r.is_empty() {
            msg.insert("reasoning_content".into(), Value::String(r));
        }
        out.push(Value::Object(msg));
        return;
    }
    if !content.is_empty() {
        out.push(json!({"role": "user", "content": content}));
    }
}

fn has_tool_calls(m: &Value) -> bool {
    m.get("role").and_then(Value::as_str) == Some("assistant")
        && m.get("tool_calls")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
}

fn is_split_media(m: &Value) -> bool {
    m.get("role").and_then(Value::as_str) == Some("user")
        && m.get("content")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
            .is_some_and(|p| {
                p.get("type").and_then(Value::as_str) == Some("text")
                    && p.get("text").and_then(Value::as_str) == Some(SPLIT_TOOL_MEDIA_TEXT)
            })
}

/// `mergeConsecutiveAssistantMessages`.
fn merge_assistants(messages: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for m in messages {
        let is_assistant = m.get("role").and_then(Value::as_str) == Some("assistant");
        if is_assistant
            && let Some(last) = out.last_mut()
            && last.get("role").and_then(Value::as_str) == Some("assistant")
        {
            let calls_of = |x: &Value| {
                x.get("tool_calls")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
            };
            let mut calls = calls_of(last);
            calls.extend(calls_of(&m));
            let (lc, cc) = (last.get("content").cloned(), m.get("content").cloned());
            let array = matches!(lc, Some(Value::Array(_))) || matches!(cc, Some(Value::Array(_)));
            let combined = if array {
                let to_parts = |c: Option<Value>| match c {
                    Some(Value::Array(a)) => a,
                    Some(Value::String(s)) if !s.is_empty() => {
                        vec![json!({"type": "text", "text": s})]
                    }
                    _ => Vec::new(),
                };
                let mut ps = to_parts(lc);
                ps.extend(to_parts(cc));
                if ps.is_empty() {
                    Value::Null
                } else {
                    Value::Array(ps)
                }
            } else {
                let t = |c: Option<Value>| match c {
                    Some(Value::String(s)) => s,
                    _ => String::new(),
                };
                let joined = format!("{}{}", t(lc), t(cc));
                if joined.is_empty() {
                    Value::Null
                } else {
                    Value::String(joined)
                }
            };
            last["content"] = combined;
            if !calls.is_empty() {
                last["tool_calls"] = Value::Array(calls);
            }
            let r = |x: &Value| {
                x.get("reasoning_content")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            let reasoning = format!("{}{}", r(last), r(&m));
            if !reasoning.is_empty() {
                last["reasoning_content"] = Value::String(reasoning);
            }
            continue;
        }
        out.push(m);
    }
    out
}

/// `cleanOrphanedToolCalls`: a tool call survives only with a result right after its
/// message (and a result only after its call).
fn clean_orphans(messages: Vec<Value>) -> Vec<Value> {
    use std::collections::HashMap;
    let mut valid_calls: HashMap<usize, Vec<Value>> = HashMap::new();
    let mut responses: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut split: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut surviving: HashSet<String> = HashSet::new();
    for (idx, m) in messages.iter().enumerate() {
        if !has_tool_calls(m) {
            continue;
        }
        let mut candidates: Vec<Value> = Vec::new();
        let mut candidate_ids: HashSet<String> = HashSet::new();
        for tc in m["tool_calls"].as_array().into_iter().flatten() {
            let Some(id) = tc
                .get("id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            else {
                continue;
            };
            if surviving.contains(id) || !candidate_ids.insert(id.to_string()) {
                continue;
            }
            candidates.push(tc.clone());
        }
        let mut adjacent: HashSet<String> = HashSet::new();
        let mut resp = Vec::new();
        let mut media = Vec::new();
        let mut last_matches = false;
        for (j, next) in messages.iter().enumerate().skip(idx + 1) {
            if next.get("role").and_then(Value::as_str) == Some("tool")
                && next.get("tool_call_id").is_some()
            {
                let id = next
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if id.is_empty() {
                    last_matches = false;
                    continue;
                }
                if candidate_ids.contains(id) && !adjacent.contains(id) {
                    adjacent.insert(id.to_string());
                    resp.push(j);
                    last_matches = true;
                } else {
                    last_matches = false;
                }
                continue;
            }
            if is_split_media(next) {
                if last_matches {
                    media.push(j);
                }
                continue;
            }
            if next.get("role").and_then(Value::as_str) == Some("assistant")
                && !has_tool_calls(next)
            {
                continue;
            }
            break;
        }
        let valid: Vec<Value> = candidates
            .into_iter()
            .filter(|tc| {
                tc.get("id")
                    .and_then(Value::as_str)
                    .is_some_and(|id| adjacent.contains(id))
            })
            .collect();
        for tc in &valid {
            if let Some(id) = tc.get("id").and_then(Value::as_str) {
                surviving.insert(id.to_string());
            }
        }
        valid_calls.insert(idx, valid);
        responses.insert(idx, resp);
        split.insert(idx, media);
    }
    let mut slots: Vec<Option<Value>> = messages.into_iter().map(Some).collect();
    let mut out = Vec::new();
    for idx in 0..slots.len() {
        let Some(mut m) = slots[idx].take() else {
            // Emitted after its call.
            continue;
        };
        if has_tool_calls(&m) {
            let valid = valid_calls.remove(&idx).unwrap_or_default();
            if !valid.is_empty() {
                m["tool_calls"] = Value::Array(valid);
                out.push(m);
                for j in responses.remove(&idx).unwrap_or_default() {
                    out.extend(slots[j].take());
                }
                for j in split.remove(&idx).unwrap_or_default() {
                    out.extend(slots[j].take());
                }
            } else if m
                .get("content")
                .and_then(Value::as_str)
                .is_some_and(|c| !c.trim().is_empty())
                || js_truthy(m.get("reasoning_content"))
            {
                if let Value::Object(o) = &mut m {
                    o.shift_remove("tool_calls");
                }
                out.push(m);
            }
        } else if !(m.get("role").and_then(Value::as_str) == Some("tool")
            && m.get("tool_call_id").is_some()
            || is_split_media(&m))
        {
            // A result goes with its call, a tool's media after its result.
            out.push(m);
        }
    }
    out
}

/// `evictOldestImagesBeyondCap`.
fn evict_images(messages: &mut [Value]) {
    let is_image = |p: &Value| p.get("type").and_then(Value::as_str) == Some("image_url");
    let total: usize = messages
        .iter()
        .filter_map(|m| m.get("content").and_then(Value::as_array))
        .map(|c| c.iter().filter(|p| is_image(p)).count())
        .sum();
    if total <= MAX_REQUEST_IMAGES {
        return;
    }
    let mut evict = total - MAX_REQUEST_IMAGES;
    for m in messages.iter_mut() {
        if evict == 0 {
            break;
        }
        if let Some(Value::Array(c)) = m.get_mut("content") {
            for p in c.iter_mut() {
                if evict > 0 && is_image(p) {
                    *p = json!({"type": "text", "text": EVICTED_IMAGE});
                    evict -= 1;
                }
            }
        }
    }
}

/// The OpenAI chat messages of a curated history, for `model`.
pub fn to_openai(history: &[Value], model: &str) -> Vec<Value> {
    let m = modalities(model);
    let mut messages = Vec::new();
    for c in history {
        process_content(c, m, &mut messages);
    }
    let mut messages = merge_assistants(messages);
    messages = clean_orphans(messages);
    messages = merge_assistants(messages);
    evict_images(&mut messages);
    if model.to_lowercase().contains("qwen3") {
        for msg in &mut messages {
            if msg.get("role").and_then(Value::as_str) != Some("assistant") {
                continue;
            }
            let r = msg
                .get("reasoning_content")
                .and_then(Value::as_str)
                .map(str::to_string);
            if let Some(r) = r.filter(|r| !r.is_empty())
                && !msg.get("reasoning").is_some_and(Value::is_string)
            {
                msg["reasoning"] = Value::String(r);
            }
        }
    }
    messages
}

/// `context.json` at entry `i`: the messages Qwen Code sends when the conversation
/// continues right after it (see the module docs).
pub fn context(s: &Session, st: &State, i: u32) -> io::Result<Vec<Value>> {
    let chain = chain(s, st, i);
    let (mut history, model) = api_history(s, st, &chain)?;
    let model = if model.is_empty() {
        model_at(s, st, i).unwrap_or_default()
    } else {
        model
    };
    repair(&mut history);
    let mut history = curate(history);
    super::media::replace_image_payloads(&mut history);
    super::media::slim(&mut history, modalities(&model));
    Ok(to_openai(&history, &model))
}

/// The model of the last answer among `entries` (read from the last).
fn last_model(
    s: &Session,
    st: &State,
    entries: impl DoubleEndedIterator<Item = u32>,
) -> Option<String> {
    entries
        .rev()
        .filter(|&c| st.nodes[c as usize].rtype == super::RType::Assistant)
        .find_map(|c| {
            s.entry_value(c)
                .ok()?
                .get("model")
                .and_then(Value::as_str)
                .filter(|m| !m.trim().is_empty())
                .map(str::to_string)
        })
}

/// The model a continuation from entry `i` uses: its chain's last answer's, else
/// (a chain with no answer yet) the session's last answer's.
pub fn model_at(s: &Session, st: &State, i: u32) -> Option<String> {
    last_model(s, st, chain(s, st, i).into_iter()).or_else(|| {
        let file = st.node(i).map_or(0, |n| n.file);
        let n = s.entries().len().min(st.nodes.len()) as u32;
        last_model(
            s,
            st,
            (0..n).filter(|&c| st.nodes[c as usize].file == file && s.entry(c).is_node()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_are_looked_up_as_qwen_code_does() {
        assert_eq!(modalities("qwen3-coder-plus"), Modalities::default());
        assert!(modalities("qwen3.6-plus").image);
        assert!(modalities("openai/gpt-4o-2024-08-06").image);
        assert!(modalities("gemini-2.5-pro").audio);
        assert!(!modalities("deepseek-chat").image);
    }

    #[test]
    fn a_dangling_call_gets_an_error_result() {
        let mut h = vec![
            json!({"role": "user", "parts": [{"text": "go"}]}),
            json!({"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "ls", "args": {}}}]}),
        ];
        repair(&mut h);
        assert_eq!(h.len(), 3);
        assert_eq!(
            h[2]["parts"][0]["functionResponse"]["response"]["error"],
            ORPHAN_REASON
        );
        let msgs = to_openai(&curate(h), "qwen3-coder-plus");
        assert_eq!(msgs[1]["content"], Value::Null);
        assert_eq!(msgs[2]["role"], "tool");
    }

    #[test]
    fn mcp_names_are_made_safe() {
        assert_eq!(tool_name("read_file"), "read_file");
        assert_eq!(tool_name("mcp__srv__tool"), "mcp__srv__tool");
        let long = tool_name(&format!("mcp__{}", "x.".repeat(40)));
        assert_eq!(long.len(), 63);
        assert!(long.starts_with("mcp__x_x_"));
    }
}
