//! What the CLI sends when the conversation continues from a point (GEMINI-FORMAT §5).
//!
//! `gemini -p PROMPT --resume ID` loads the file, converts the active list to the
//! client's history (`convertSessionToClientHistory`), puts its own fresh
//! `<session_context>` first (`getInitialChatHistory`), and sends the prompt through
//! `GeminiChat.sendMessageStream`: an unanswered tool response gets a placeholder
//! model turn (`closeUnansweredToolResponseTurn`), invalid model turns are curated out
//! (`extractCuratedHistory`), thoughts are stripped, the first function call of a turn
//! that had thoughts gets a synthetic signature (`stripThoughts`), consecutive turns of
//! one role are merged (`coalesceConsecutiveRoles`), the first function call of each
//! model turn of the active loop gets a signature too
//! (`ensureActiveLoopHasThoughtSignatures`), the `<name>__` prefix of call ids goes
//! (`stripToolCallIdPrefixes`), and the `@google/genai` client writes each part with
//! its fields in its own order (`partToMldev`). [`contents`] does each step as the CLI
//! 0.61.0 does (read in its bundle, and checked against its requests through the
//! kit's `context.sh` on every point of every fixture), with the default settings
//! (no context management).
//!
//! What comes back is the request's `contents` without the two parts that are not
//! from the file: the new prompt (the last part) and the fresh `<session_context>`
//! (the first), as the kit reports it. A path the CLI would not resume (nothing in it
//! is sent) gives no contents.

use super::line::is_ignored_text;
use crate::model::core::genai::parts_to_string;
use crate::model::core::js::{js_to_string, js_truthy};
use serde_json::{Map, Value, json};

/// The prompt the conversion is run with; it is taken out again.
const PROBE: &str = "[[CONTEXT-PROBE]] sessionfs context probe";
/// Stands for the CLI's fresh `<session_context>` while converting; taken out again.
const SESSION_CONTEXT: &str = "<session_context>\n</session_context>";
/// The model turn the CLI puts after an unanswered tool response.
pub const INTERRUPTED: &str = "[The previous response was interrupted before it completed.]";
/// The signature the CLI gives a function call that has none.
const SIGNATURE: &str = "skip_thought_signature_validator";

fn s<'a>(v: &'a Value, k: &str) -> Option<&'a Value> {
    v.get(k)
}

/// Whether the CLI resumes a session whose active list is `records`: some user record
/// it sends, or a reply with text, tool calls or thoughts (the kit's test; the CLI
/// refuses others: "No previous sessions found").
pub fn resumable(records: &[Value]) -> bool {
    records
        .iter()
        .any(|m| match s(m, "type").and_then(Value::as_str) {
            Some("user") => {
                !is_ignored_text(&parts_to_string(m.get("content").unwrap_or(&Value::Null)))
            }
            Some("gemini") => {
                !parts_to_string(m.get("content").unwrap_or(&Value::Null))
                    .trim()
                    .is_empty()
                    || nonempty(m.get("toolCalls"))
                    || nonempty(m.get("thoughts"))
            }
            _ => false,
        })
}

/// `isIgnoredUserContent` of a user record's content: its string form (trimmed) is
/// empty or starts with `/`, `?`, `<session_context>` or `<hook_context>`. Only as
/// much of the string form is made as the test needs: a prompt's text is not copied.
fn ignored(content: &Value) -> bool {
    let mut head = String::new();
    let settled = |h: &str| {
        h.trim_start_matches(|c: char| c.is_whitespace() || c == '\u{FEFF}')
            .chars()
            .nth(20)
            .is_some()
    };
    let parts: &[Value] = match content {
        Value::Array(a) => a,
        other => std::slice::from_ref(other),
    };
    // A text's leading whitespace and what follows it, enough to settle the tests.
    let lead = |t: &str| -> usize {
        let start = t.len()
            - t.trim_start_matches(|c: char| c.is_whitespace() || c == '\u{FEFF}')
                .len();
        let mut end = (start + 64).min(t.len());
        while !t.is_char_boundary(end) {
            end += 1;
        }
        end
    };
    for p in parts {
        if settled(&head) {
            break;
        }
        match p {
            Value::String(t) => head.push_str(&t[..lead(t)]),
            Value::Object(o) if o.len() == 1 && o.get("text").is_some_and(Value::is_string) => {
                let t = o["text"].as_str().unwrap_or("");
                head.push_str(&t[..lead(t)]);
            }
            other => head.push_str(&parts_to_string(other)),
        }
    }
    is_ignored_text(&head)
}

fn nonempty(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
        Some(Value::String(s)) => !s.is_empty(),
        Some(other) => js_truthy(Some(other)),
        None => false,
    }
}

/// `convertSessionToClientHistory`: the records as `{role, parts}` contents, each
/// with the id the CLI keeps for it (the record's; `<id>_response` for a reply's tool
/// results).
pub fn client_history(records: Vec<Value>) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for mut m in records {
        let id = js_to_string(m.get("id"));
        let ty = s(&m, "type").and_then(Value::as_str).map(str::to_string);
        match ty.as_deref() {
            Some("user") => {
                let c = m.get_mut("content").map(Value::take).unwrap_or(Value::Null);
                if ignored(&c) {
                    continue;
                }
                out.push((id, json!({"role": "user", "parts": into_part_list(c)})));
            }
            Some("gemini") => {
                let c = m.get_mut("content").map(Value::take).unwrap_or(Value::Null);
                let content_parts = if js_truthy(Some(&c)) {
                    into_part_list(c)
                } else {
                    Vec::new()
                };
                let has_calls = content_parts
                    .iter()
                    .any(|p| js_truthy(p.get("functionCall")));
                let has_thoughts = content_parts.iter().any(|p| js_truthy(p.get("thought")));
                let calls: &[Value] = match m.get("toolCalls") {
                    Some(Value::Array(a)) => a,
                    _ => &[],
                };
                let mut parts = Vec::new();
                if has_calls || has_thoughts {
                    parts.extend(content_parts);
                } else {
                    if let Some(Value::Array(ts)) = m.get("thoughts") {
                        for t in ts {
                            let subject = t.get("subject");
                            let description = js_to_string(t.get("description"));
                            let text = if js_truthy(subject) {
                                format!("**{}** {description}", js_to_string(subject))
                            } else {
                                description
                            };
                            parts.push(json!({"text": text, "thought": true}));
                        }
                    }
                    parts.extend(content_parts);
                    for c in calls {
                        let mut fc = Map::new();
                        for k in ["id", "name", "args"] {
                            if let Some(v) = c.get(k) {
                                fc.insert(k.into(), v.clone());
                            }
                        }
                        parts.push(json!({ "functionCall": Value::Object(fc) }));
                    }
                }
                if parts.is_empty() {
                    continue;
                }
                out.push((id.clone(), json!({"role": "model", "parts": parts})));
                let mut responses = Vec::new();
                for c in calls {
                    let Some(r) = c.get("result").filter(|r| js_truthy(Some(r))) else {
                        continue;
                    };
                    match r {
                        Value::String(text) => {
                            let mut fr = Map::new();
                            for k in ["id", "name"] {
                                if let Some(v) = c.get(k) {
                                    fr.insert(k.into(), v.clone());
                                }
                            }
                            fr.insert("response".into(), json!({ "output": text }));
                            responses.push(json!({ "functionResponse": Value::Object(fr) }));
                        }
                        Value::Array(_) => responses.extend(into_part_list(r.clone())),
                        other => responses.push(other.clone()),
                    }
                }
                if !responses.is_empty() {
                    out.push((
                        format!("{id}_response"),
                        json!({"role": "user", "parts": responses}),
                    ));
                }
            }
            _ => {}
        }
    }
    out
}

/// `ensurePartArray`, taking the content: a string is one text part, a list is
/// itself (its strings text parts), anything else one part.
fn into_part_list(content: Value) -> Vec<Value> {
    match content {
        Value::Array(items) => items
            .into_iter()
            .map(|p| match p {
                Value::String(s) => json!({ "text": s }),
                other => other,
            })
            .collect(),
        Value::String(s) => vec![json!({ "text": s })],
        other => vec![other],
    }
}

/// `deriveStableId`: the first 32 hex digits of the SHA-256 of the ids, sorted as
/// JavaScript sorts strings (by UTF-16 code units), joined with `|`.
fn derive_id(ids: &[&str]) -> String {
    let mut v: Vec<&str> = ids.to_vec();
    v.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
    super::sha256::hex(v.join("|").as_bytes())[..32].to_string()
}

/// `ensureStableToolIds`: a function call or response without an id (the CLI
/// always writes one; another program may not) gets one made from a hash of where
/// it is, paired with its response (or call) by name in the next (or previous) turn.
fn stable_tool_ids(turns: &mut [(String, Value)]) {
    // Only objects get an id (the CLI would fail on a call that is a string).
    let has = |p: &Value, k: &str| p.get(k).is_some_and(Value::is_object);
    let no_id = |v: &Value| !js_truthy(v.get("id"));
    for i in 0..turns.len() {
        let n = turns[i]
            .1
            .get("parts")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        for k in 0..n {
            let part = turns[i].1["parts"][k].clone();
            if has(&part, "functionCall") && no_id(&part["functionCall"]) {
                let name = part["functionCall"].get("name").cloned();
                let name_s = js_to_string(name.as_ref());
                let id = format!(
                    "synth_{name_s}_{}",
                    derive_id(&[&turns[i].0, &i.to_string(), &k.to_string()])
                );
                if let Some((_, next)) = turns.get_mut(i + 1)
                    && role(next) == Some("user")
                    && let Some(Value::Array(ps)) = next.get_mut("parts")
                    && let Some(r) = ps.iter_mut().find(|p| {
                        has(p, "functionResponse")
                            && crate::model::core::js::js_strict_eq(
                                p["functionResponse"].get("name"),
                                name.as_ref(),
                            )
                            && no_id(&p["functionResponse"])
                    })
                {
                    r["functionResponse"]["id"] = json!(id);
                }
                turns[i].1["parts"][k]["functionCall"]["id"] = json!(id);
            }
            let part = turns[i].1["parts"][k].clone();
            if has(&part, "functionResponse") && no_id(&part["functionResponse"]) {
                let name = part["functionResponse"].get("name").cloned();
                let name_s = js_to_string(name.as_ref());
                let mut paired = None;
                if i > 0 && role(&turns[i - 1].1) == Some("model") {
                    let prev_id = turns[i - 1].0.clone();
                    if let Some(Value::Array(ps)) = turns[i - 1].1.get_mut("parts")
                        && let Some(c) = ps.iter_mut().find(|p| {
                            has(p, "functionCall")
                                && crate::model::core::js::js_strict_eq(
                                    p["functionCall"].get("name"),
                                    name.as_ref(),
                                )
                                && no_id(&p["functionCall"])
                        })
                    {
                        let id = format!(
                            "synth_{name_s}_{}",
                            derive_id(&[&prev_id, &(i - 1).to_string(), &k.to_string()])
                        );
                        c["functionCall"]["id"] = json!(id);
                        paired = Some(id);
                    }
                }
                let id = paired.unwrap_or_else(|| {
                    format!(
                        "synth_orph_{name_s}_{}",
                        derive_id(&[&turns[i].0, &i.to_string(), &k.to_string()])
                    )
                });
                turns[i].1["parts"][k]["functionResponse"]["id"] = json!(id);
            }
        }
    }
}

fn role(c: &Value) -> Option<&str> {
    c.get("role").and_then(Value::as_str)
}

fn parts(c: &Value) -> Option<&Vec<Value>> {
    c.get("parts").and_then(Value::as_array)
}

/// `isValidContent`: what a model turn must be to be sent.
fn valid_content(c: &Value) -> bool {
    let ps = parts(c);
    if role(c) == Some("model") && ps.is_none_or(|p| p.is_empty()) {
        return true;
    }
    let Some(ps) = ps.filter(|p| !p.is_empty()) else {
        return false;
    };
    ps.iter().all(|p| {
        let Value::Object(o) = p else {
            // `Object.keys` of a string gives its indices; of a number, nothing.
            return matches!(p, Value::Array(a) if !a.is_empty())
                || matches!(p, Value::String(t) if !t.is_empty());
        };
        if o.is_empty() {
            return false;
        }
        let other_keys = o
            .keys()
            .any(|k| !matches!(k.as_str(), "text" | "thought" | "callIndex"));
        !(!js_truthy(o.get("thought")) && o.get("text") == Some(&json!("")) && !other_keys)
    })
}

/// `extractCuratedHistory`: a run of model turns is kept only when every one is valid.
fn curated(history: Vec<Value>) -> Vec<Value> {
    let mut out = Vec::with_capacity(history.len());
    let mut run: Vec<Value> = Vec::new();
    let mut valid = true;
    for turn in history {
        if role(&turn) == Some("user") {
            if valid {
                out.append(&mut run);
            }
            run.clear();
            valid = true;
            out.push(turn);
        } else {
            valid &= valid_content(&turn);
            run.push(turn);
        }
    }
    if valid {
        out.append(&mut run);
    }
    out
}

/// `stripThoughts`: thought parts leave; in a model turn that had some, the first
/// function call without a signature gets the synthetic one; turns left without parts
/// go.
fn strip_thoughts(history: Vec<Value>) -> Vec<Value> {
    let is_thought = |p: &Value| js_truthy(Some(p)) && js_truthy(p.get("thought"));
    history
        .into_iter()
        .map(|mut turn| {
            let model = role(&turn) == Some("model");
            let Some(Value::Array(ps)) = turn.get_mut("parts") else {
                return turn;
            };
            if !ps.iter().any(is_thought) {
                return turn;
            }
            ps.retain(|p| js_truthy(Some(p)) && !is_thought(p));
            if model
                && let Some(p) = ps.iter_mut().find(|p| js_truthy(p.get("functionCall")))
                && !js_truthy(p.get("thoughtSignature"))
                && let Value::Object(o) = p
            {
                o.insert("thoughtSignature".into(), json!(SIGNATURE));
            }
            turn
        })
        .filter(|t| parts(t).is_none_or(|p| !p.is_empty()))
        .collect()
}

/// `coalesceConsecutiveRoles`: consecutive turns of one role become one.
fn coalesce(history: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(history.len());
    for mut turn in history {
        if let Some(last) = out.last_mut()
            && role(last).is_some_and(|r| !r.is_empty())
            && role(last) == role(&turn)
        {
            let has = last.get("parts").is_some_and(|p| !p.is_null())
                || turn.get("parts").is_some_and(|p| !p.is_null());
            if has {
                let more = match turn.get_mut("parts").map(Value::take) {
                    Some(Value::Array(a)) => a,
                    _ => Vec::new(),
                };
                if !matches!(last.get("parts"), Some(Value::Array(_))) {
                    last["parts"] = Value::Array(Vec::new());
                }
                if let Some(Value::Array(all)) = last.get_mut("parts") {
                    all.extend(more);
                }
            } else if let Value::Object(o) = last {
                o.remove("parts");
            }
            continue;
        }
        out.push(turn);
    }
    out
}

/// `ensureActiveLoopHasThoughtSignatures`: from the last user turn with text and no
/// function response on, the first function call of each model turn gets a signature.
fn sign_active_loop(contents: &mut [Value]) {
    let start = contents.iter().rposition(|c| {
        role(c) == Some("user")
            && parts(c).is_some_and(|ps| {
                ps.iter().any(|p| js_truthy(p.get("text")))
                    && !ps.iter().any(|p| js_truthy(p.get("functionResponse")))
            })
    });
    let Some(start) = start else { return };
    for c in &mut contents[start..] {
        if role(c) != Some("model") {
            continue;
        }
        let Some(Value::Array(ps)) = c.get_mut("parts") else {
            continue;
        };
        if let Some(p) = ps.iter_mut().find(|p| js_truthy(p.get("functionCall")))
            && !js_truthy(p.get("thoughtSignature"))
            && let Value::Object(o) = p
        {
            o.insert("thoughtSignature".into(), json!(SIGNATURE));
        }
    }
}

/// `stripToolCallIdPrefixes`: a call's or a response's id loses its `<name>__`
/// prefix; empty text leaves a part that has other fields, and a part that has none.
fn strip_prefixes(contents: &mut [Value]) {
    let strip = |v: &mut Value, keys: [&str; 3]| {
        let n = match v.get("name") {
            Some(Value::String(n)) if !crate::model::core::reply::js_trim(n).is_empty() => {
                crate::model::core::reply::js_trim(n).to_string()
            }
            _ => "generic_tool".to_string(),
        };
        let Some(rest) = v
            .get("id")
            .and_then(Value::as_str)
            .and_then(|id| id.strip_prefix(&format!("{n}__")))
            .map(str::to_string)
        else {
            return;
        };
        let mut o = Map::new();
        for k in keys {
            let val = if k == "id" {
                Some(json!(rest))
            } else {
                v.get_mut(k).map(Value::take)
            };
            if let Some(val) = val {
                o.insert(k.into(), val);
            }
        }
        *v = Value::Object(o);
    };
    for c in contents.iter_mut() {
        let Some(Value::Array(ps)) = c.get_mut("parts") else {
            if let Value::Object(o) = c {
                o.insert("parts".into(), Value::Array(Vec::new()));
            }
            continue;
        };
        ps.retain_mut(|p| {
            let Value::Object(o) = p else {
                return true;
            };
            if let Some(fc) = o.get_mut("functionCall").filter(|v| js_truthy(Some(v))) {
                strip(fc, ["name", "args", "id"]);
            }
            if let Some(fr) = o.get_mut("functionResponse").filter(|v| js_truthy(Some(v))) {
                strip(fr, ["name", "response", "id"]);
            }
            let other = o
                .keys()
                .any(|k| !matches!(k.as_str(), "text" | "thought" | "callIndex"));
            if o.get("text") == Some(&json!("")) {
                if !other {
                    return false;
                }
                o.remove("text");
            }
            true
        });
    }
}

/// A part as the `@google/genai` client writes it for the Gemini API
/// (`partToMldev`): its known fields, in the client's order, `null`s left out.
fn part_to_api(p: Value) -> Value {
    let Value::Object(mut o) = p else {
        return Value::Object(Map::new());
    };
    let mut out = Map::new();
    let mut take = |k: &str| o.remove(k).filter(|v| !v.is_null());
    let pick = |v: Value, keys: &[&str]| -> Value {
        let Value::Object(mut from) = v else {
            return Value::Object(Map::new());
        };
        let mut m = Map::new();
        for k in keys {
            if let Some(x) = from.remove(*k).filter(|x| !x.is_null()) {
                m.insert((*k).into(), x);
            }
        }
        Value::Object(m)
    };
    let fields: [(&str, Option<Value>); 11] = [
        ("mediaResolution", take("mediaResolution")),
        ("codeExecutionResult", take("codeExecutionResult")),
        ("executableCode", take("executableCode")),
        (
            "fileData",
            take("fileData").map(|v| pick(v, &["fileUri", "mimeType"])),
        ),
        (
            "functionCall",
            take("functionCall").map(|v| pick(v, &["id", "args", "name"])),
        ),
        ("functionResponse", take("functionResponse")),
        (
            "inlineData",
            take("inlineData").map(|v| pick(v, &["data", "mimeType"])),
        ),
        ("text", take("text")),
        ("thought", take("thought")),
        ("thoughtSignature", take("thoughtSignature")),
        ("videoMetadata", take("videoMetadata")),
    ];
    for (k, v) in fields {
        if let Some(v) = v {
            out.insert(k.into(), v);
        }
    }
    Value::Object(out)
}

/// A content as the client writes it (`contentToMldev`): `parts`, then `role`.
fn content_to_api(c: Value) -> Value {
    let Value::Object(mut c) = c else {
        return Value::Object(Map::new());
    };
    let mut out = Map::new();
    if let Some(ps) = c.remove("parts").filter(|v| !v.is_null()) {
        let ps = match ps {
            Value::Array(a) => Value::Array(a.into_iter().map(part_to_api).collect()),
            other => other,
        };
        out.insert("parts".into(), ps);
    }
    if let Some(r) = c.remove("role").filter(|v| !v.is_null()) {
        out.insert("role".into(), r);
    }
    Value::Object(out)
}

/// The request's `contents` when the conversation continues after the path whose
/// records are `records` (in list order, as the file held them then), without the new
/// prompt and the fresh `<session_context>`. Empty when the CLI would not resume it.
pub fn contents(records: Vec<Value>) -> Vec<Value> {
    if !resumable(&records) {
        return Vec::new();
    }
    let mut turns = vec![(
        derive_id(&["environment-context"]),
        json!({"role": "user", "parts": [{"text": SESSION_CONTEXT}]}),
    )];
    turns.extend(client_history(records));
    stable_tool_ids(&mut turns);
    let mut history: Vec<Value> = turns.into_iter().map(|(_, c)| c).collect();
    // closeUnansweredToolResponseTurn
    if history.last().is_some_and(|c| {
        role(c) == Some("user")
            && parts(c).is_some_and(|ps| ps.iter().any(|p| js_truthy(p.get("functionResponse"))))
    }) {
        history.push(json!({"role": "model", "parts": [{"text": INTERRUPTED}]}));
    }
    history.push(json!({"role": "user", "parts": [{"text": PROBE}]}));
    // getHistoryTurns(curated), then makeApiCallAndProcessStream.
    let history = coalesce(strip_thoughts(curated(history)));
    let mut contents = coalesce(history);
    sign_active_loop(&mut contents);
    strip_prefixes(&mut contents);
    let mut contents: Vec<Value> = contents.into_iter().map(content_to_api).collect();
    // The prompt and the session context, as the kit takes them out.
    if let Some(last) = contents.last_mut() {
        let mut empty = false;
        if let Some(Value::Array(ps)) = last.get_mut("parts")
            && ps.last().and_then(|p| p.get("text")) == Some(&json!(PROBE))
        {
            ps.pop();
            empty = ps.is_empty();
        }
        if empty {
            contents.pop();
        }
    }
    if let Some(first) = contents.first_mut() {
        let mut empty = false;
        if role(first) == Some("user")
            && let Some(Value::Array(ps)) = first.get_mut("parts")
            && ps
                .first()
                .and_then(|p| p.get("text"))
                .and_then(Value::as_str)
                .is_some_and(|t| t.starts_with("<session_context>"))
        {
            ps.remove(0);
            empty = ps.is_empty();
        }
        if empty {
            contents.remove(0);
        }
    }
    contents
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_of_the_format_page() {
        // GEMINI-FORMAT §5.5, the path of `tuirew`'s leaf.
        let recs = vec![
            json!({"id":"c","type":"user","content":[{"text":"<session_context>\nx"}]}),
            json!({"id":"a","type":"user","content":[{"text":"[[AFTER]] First turn after rewinding everything."}]}),
            json!({"id":"b","type":"gemini","content":"A turn after the rewind.","thoughts":[],"tokens":{}}),
            json!({"id":"d","type":"user","content":[{"text":"[[QA4]] Add one."}]}),
            json!({"id":"e","type":"gemini","content":[{"text":"7 + 1 = 8."}]}),
        ];
        assert_eq!(
            Value::Array(contents(recs)),
            json!([{"parts":[{"text":"[[AFTER]] First turn after rewinding everything."}],"role":"user"},
                   {"parts":[{"text":"A turn after the rewind."}],"role":"model"},
                   {"parts":[{"text":"[[QA4]] Add one."}],"role":"user"},
                   {"parts":[{"text":"7 + 1 = 8."}],"role":"model"}])
        );
    }

    #[test]
    fn tool_rounds_thoughts_and_an_unanswered_response() {
        let recs = vec![
            json!({"id":"u","type":"user","content":[{"text":"go"}]}),
            json!({"id":"g","type":"gemini","content":"Look.","thoughts":[{"subject":"S","description":"d"}],
                   "toolCalls":[{"id":"ls__c1","name":"ls","args":{"a":1},"result":[{"functionResponse":{"id":"ls__c1","name":"ls","response":{"output":"o"}}}]}]}),
            json!({"id":"r","type":"user","content":[{"functionResponse":{"id":"ls__c1","name":"ls","response":{"output":"o"}}}]}),
        ];
        let fr = json!({"functionResponse":{"name":"ls","response":{"output":"o"},"id":"c1"}});
        assert_eq!(
            Value::Array(contents(recs)),
            json!([{"parts":[{"text":"go"}],"role":"user"},
                   {"parts":[{"text":"Look."},{"functionCall":{"id":"c1","args":{"a":1},"name":"ls"},"thoughtSignature":SIGNATURE}],"role":"model"},
                   {"parts":[fr, fr],"role":"user"},
                   {"parts":[{"text":INTERRUPTED}],"role":"model"}])
        );
        // Nothing the CLI sends: no contents, as it does not resume.
        assert!(contents(vec![json!({"id":"i","type":"info","content":"x"})]).is_empty());
        // An empty reply is curated out.
        let recs = vec![
            json!({"id":"u","type":"user","content":[{"text":"go"}]}),
            json!({"id":"g","type":"gemini","content":[{"text":""}]}),
        ];
        assert_eq!(
            Value::Array(contents(recs)),
            json!([{"parts":[{"text":"go"}],"role":"user"}])
        );
    }
}
