//! The LLM context of one branch, computed exactly as Pi computes it.
//!
//! This module is a transcription of Pi 1.6.0's `buildSessionContext`
//! (`core/session-manager.js`: `buildSessionPath`, `getSessionContextSettings`,
//! `buildContextEntries`, `buildSessionProjection`, `projectContextEntry`,
//! `sessionEntryToContextMessages`) followed by `convertToLlm`
//! (`core/messages.js`). Given the root→leaf path of a session,
//! [`build_session_context`] yields the thinking level, the model and Pi's
//! in-memory "agent messages", and [`convert_to_llm`] turns those into the
//! messages Pi hands to the provider layer. The result equals Pi's value for
//! value: serialized with `render::js_stringify`, it is the JSON Pi's
//! `JSON.stringify` gives, except in the cases listed below.
//!
//! Pi 1.6's rules, which apply to every file whatever Pi version wrote it:
//!
//! * `system` messages are part of the context, in place, and pass through
//!   `convertToLlm` unchanged (prompt sections, tool declarations and all).
//! * With a compaction on the path only the **latest** one counts: it
//!   contributes its `systemMessage` (when set) and its summary, then come the
//!   path entries from its `firstKeptEntryId` on (none when that id is the
//!   compaction's own, "retain-none", or is not before it on the path),
//!   **without their system messages**, then everything after it. An older
//!   compaction inside that kept range contributes nothing.
//! * `context_edit` entries among those context entries replace or remove
//!   what their target contributes; for each target the last edit in path
//!   order wins. `replacement: null` removes everything the target gives; a
//!   replacement sets the `content` of the target's user, assistant,
//!   toolResult and custom messages (a string becomes one text block for
//!   assistant and toolResult) and leaves other roles alone.
//!
//! That includes JavaScript's coercions where Pi relies on them: `undefined`
//! fields are left out (a missing key stays missing), template strings use
//! JavaScript's `ToString` (so a numeric `exitCode` prints as JavaScript prints
//! numbers, a missing summary as `undefined`), truthiness decides which optional
//! parts appear, `Map` keys compare as JavaScript compares them (an object id
//! matches nothing), and timestamps of synthesized messages are
//! `new Date(entry.timestamp).getTime()`, written as `null` when JavaScript
//! would produce `NaN`.
//!
//! Deviations, none of them on anything Pi itself writes:
//!
//! * A `message` entry whose `message` is missing or `null` makes Pi throw a
//!   `TypeError`. Here it contributes nothing (no message, no model).
//! * A `context_edit` without a `replacement` key makes Pi throw a `TypeError`
//!   when its target gives an editable message. Here such an edit is ignored
//!   (`sessionfs check` reports it).
//! * A non-string `thinkingLevel` is turned into a string the way JavaScript's
//!   `String()` would (`undefined`, `null`, `5`); Pi would keep the raw value.
//! * Date-times without a UTC offset (`2026-01-05T09:00:00`) are local time in
//!   JavaScript. They are read as UTC here, which agrees with Pi when it runs
//!   with `TZ=UTC`. Of V8's "legacy" (non-ISO) date formats only
//!   `YYYY-MM-DD hh:mm[:ss[.fff]] [offset]` is understood; other legacy forms
//!   give `null` where V8 might find a date. Pi itself always writes
//!   `Date.prototype.toISOString()` output, which is parsed exactly.
//!
//! Values are moved, not copied: the entries handed in are consumed and their
//! messages become the context's messages. Nothing here does I/O; the caller
//! builds the path (see [`build_session_context`]).

#[allow(unused_imports)]
pub use crate::model::core::js::*;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Prefix of the text that replaces a `compactionSummary` message.
pub const COMPACTION_SUMMARY_PREFIX: &str = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
/// Suffix of the text that replaces a `compactionSummary` message.
pub const COMPACTION_SUMMARY_SUFFIX: &str = "\n</summary>";
/// Prefix of the text that replaces a `branchSummary` message.
pub const BRANCH_SUMMARY_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
/// Suffix of the text that replaces a `branchSummary` message (no newline before it).
pub const BRANCH_SUMMARY_SUFFIX: &str = "</summary>";

/// What Pi's `buildSessionContext` returns for one leaf.
#[derive(Clone, Debug, PartialEq)]
pub struct Context {
    /// The last `thinking_level_change` on the path, `"off"` without one.
    pub thinking_level: String,
    /// `{provider, modelId}` from the last `model_change` or assistant message
    /// on the path; `None` where Pi has `null`. Keys Pi would leave
    /// `undefined` are absent.
    pub model: Option<Value>,
    /// Pi's agent messages (roles `system`, `user`, `assistant`, `toolResult`,
    /// `bashExecution`, `custom`, `branchSummary`, `compactionSummary`, and
    /// whatever unknown role a file contains), before [`convert_to_llm`].
    pub agent_messages: Vec<Value>,
}

/// The thinking level and model of a path (Pi's `getSessionContextSettings`).
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub thinking_level: String,
    pub model: Option<Value>,
}

/// Builds the context for a path, as Pi 1.6.0's `buildSessionContext` does.
///
/// `path` is the root→leaf entries (already migrated to the v3 shape), as
/// Pi's `getBranch` returns them: it starts at an entry whose `parentId` is
/// `null`, missing, or not in the file, and ends at the leaf. Pi picks the
/// leaf like this, and the caller must do the same to agree with it: an
/// explicit `null` leaf gives the empty context (call this with an empty
/// path); an unknown or absent leaf id falls back to the **last entry in file
/// order**. With duplicate ids, the later entry is the one reachable by id.
///
/// Everything Pi looks up while building the context lies on the path
/// (`firstKeptEntryId` is searched for only among the path entries before the
/// compaction, and edits only among the context entries), so no other entries
/// are needed.
pub fn build_session_context(path: Vec<Value>) -> Context {
    let settings = settings(path.iter());
    let keep = context_entries(&path);
    let mut slots: Vec<Option<Value>> = path.into_iter().map(Some).collect();
    let entries = keep
        .into_iter()
        .map(|i| match slots[i].take() {
            Some(v) => v,
            // The same path entry twice (a compaction whose id an earlier entry
            // repeats): the second is an older compaction, which contributes nothing.
            None => Value::Null,
        })
        .collect();
    build_from_parts(settings, entries)
}

/// [`build_session_context`] from its two halves: the path's [`settings`] and its
/// context entries in order (what [`context_entries`] selects, the latest compaction
/// first). A caller that knows from an index which entries those are can parse
/// only them; entries that contribute no message and are no edit (labels, model
/// changes, older compactions inside the kept range, ...) may be left out.
pub fn build_from_parts(settings: Settings, entries: Vec<Value>) -> Context {
    Context {
        thinking_level: settings.thinking_level,
        model: settings.model,
        agent_messages: project(entries),
    }
}

/// Pi's `getSessionContextSettings`: over the whole path, last one wins. A caller
/// may pass only the last `thinking_level_change` and the last `model_change` or
/// assistant message of the path, in path order.
pub fn settings<'a>(path: impl IntoIterator<Item = &'a Value>) -> Settings {
    let mut thinking_level: Option<&Value> = None;
    let mut thinking_set = false;
    let mut model: Option<Value> = None;
    for entry in path {
        match type_of(entry) {
            Some("thinking_level_change") => {
                thinking_level = entry.get("thinkingLevel");
                thinking_set = true;
            }
            Some("model_change") => {
                model = Some(object(&[
                    ("provider", entry.get("provider")),
                    ("modelId", entry.get("modelId")),
                ]));
            }
            Some("message") => {
                if let Some(message) = entry.get("message")
                    && message.get("role").and_then(Value::as_str) == Some("assistant")
                {
                    model = Some(object(&[
                        ("provider", message.get("provider")),
                        ("modelId", message.get("model")),
                    ]));
                }
            }
            _ => {}
        }
    }
    let thinking_level = match (thinking_set, thinking_level) {
        (false, _) => "off".to_string(),
        (true, Some(Value::String(s))) => s.clone(),
        (true, other) => js_to_string(other),
    };
    Settings {
        thinking_level,
        model,
    }
}

/// Pi 1.6's `buildContextEntries`: the positions in `path` of the entries that
/// make the context, in order. Without a compaction that is the whole path. With
/// one, only the last compaction on the path counts: the compaction itself, then
/// the entries before it starting at its `firstKeptEntryId` (none if that id is not
/// among them, as for a retain-none compaction whose `firstKeptEntryId` is its own
/// id), leaving out `system` messages, then everything after it. An older compaction
/// inside the kept range stays in the list; it contributes nothing (see
/// [`build_from_parts`]).
pub fn context_entries(path: &[Value]) -> Vec<usize> {
    let Some(last) = path.iter().rposition(|e| type_of(e) == Some("compaction")) else {
        return (0..path.len()).collect();
    };
    let compaction = &path[last];
    // `path.findIndex((entry) => entry.id === compaction.id)`
    let Some(compaction_idx) = path
        .iter()
        .position(|e| js_strict_eq(e.get("id"), compaction.get("id")))
    else {
        return (0..path.len()).collect();
    };
    let first_kept = compaction.get("firstKeptEntryId");
    let mut entries = vec![last];
    let mut found_first_kept = false;
    for (i, entry) in path[..compaction_idx].iter().enumerate() {
        if js_strict_eq(entry.get("id"), first_kept) {
            found_first_kept = true;
        }
        if found_first_kept && !is_system_message(entry) {
            entries.push(i);
        }
    }
    entries.extend(compaction_idx + 1..path.len());
    entries
}

/// `entry.type === "message" && entry.message.role === "system"`.
pub fn is_system_message(entry: &Value) -> bool {
    type_of(entry) == Some("message")
        && entry
            .get("message")
            .and_then(|m| m.get("role"))
            .and_then(Value::as_str)
            == Some("system")
}

/// What a winning `context_edit` does to its target.
enum Edit {
    /// `replacement: null`: the target contributes nothing.
    Remove,
    /// `replacement.content` (`None`: `undefined`, the key is left out).
    Content(Option<Value>),
}

/// A JavaScript `Map` key made of a JSON value (`SameValueZero`): objects and
/// arrays are compared by reference, so as keys they match nothing.
#[derive(Hash, PartialEq, Eq)]
enum MapKey {
    Undefined,
    Null,
    Bool(bool),
    Number(u64),
    String(String),
}

fn map_key(v: Option<&Value>) -> Option<MapKey> {
    Some(match v {
        None => MapKey::Undefined,
        Some(Value::Null) => MapKey::Null,
        Some(Value::Bool(b)) => MapKey::Bool(*b),
        Some(Value::Number(n)) => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            MapKey::Number(if f == 0.0 { 0 } else { f.to_bits() })
        }
        Some(Value::String(s)) => MapKey::String(s.clone()),
        Some(Value::Array(_) | Value::Object(_)) => return None,
    })
}

/// Pi 1.6's `buildSessionProjection` over the context entries: the edits among
/// them (last one per target wins), then each entry's messages with its edit
/// applied. A compaction after the first position contributes nothing.
fn project(entries: Vec<Value>) -> Vec<Value> {
    // edits.set(entry.targetId, entry), in order.
    let mut winners: HashMap<MapKey, usize> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        if type_of(e) == Some("context_edit")
            && let Some(k) = map_key(e.get("targetId"))
        {
            winners.insert(k, i);
        }
    }
    let mut edits: Vec<Option<Edit>> = Vec::new();
    if !winners.is_empty() {
        edits = entries
            .iter()
            .map(|e| {
                let j = *winners.get(&map_key(e.get("id"))?)?;
                match entries[j].get("replacement") {
                    // Pi throws on `undefined.content`; ignore the edit.
                    None => None,
                    Some(Value::Null) => Some(Edit::Remove),
                    Some(r) => Some(Edit::Content(r.get("content").cloned())),
                }
            })
            .collect();
    }
    let mut out = Vec::with_capacity(entries.len());
    for (i, entry) in entries.into_iter().enumerate() {
        if i > 0 && type_of(&entry) == Some("compaction") {
            continue;
        }
        match edits.get_mut(i).and_then(Option::take) {
            None => entry_to_context_messages(entry, &mut out),
            Some(Edit::Remove) => {}
            Some(Edit::Content(content)) => {
                let start = out.len();
                entry_to_context_messages(entry, &mut out);
                for m in &mut out[start..] {
                    apply_edit(m, content.as_ref());
                }
            }
        }
    }
    out
}

/// Pi 1.6's `projectContextEntry` for one message and a non-null replacement:
/// `{...message, content}` for roles `user`, `assistant`, `toolResult` and
/// `custom`, a string becoming one text block for the assistant and tool results.
fn apply_edit(m: &mut Value, content: Option<&Value>) {
    let role = m.get("role").and_then(Value::as_str);
    let blocks = match role {
        Some("assistant" | "toolResult") => true,
        Some("user" | "custom") => false,
        _ => return,
    };
    let Value::Object(map) = m else { return };
    match content {
        Some(Value::String(s)) if blocks => {
            map.insert("content".into(), Value::Array(vec![text_block(s.clone())]));
        }
        Some(c) => {
            map.insert("content".into(), c.clone());
        }
        // `content: undefined`: JSON.stringify leaves the key out.
        None => {
            map.shift_remove("content");
        }
    }
}

/// Pi 1.6's `sessionEntryToContextMessages`: the agent messages one entry
/// contributes (zero, one, or for a compaction with a `systemMessage` two),
/// appended to `out`.
pub fn entry_to_context_messages(entry: Value, out: &mut Vec<Value>) {
    let Value::Object(mut entry) = entry else {
        return;
    };
    enum Ty {
        Message,
        CustomMessage,
        BranchSummary,
        Compaction,
    }
    let ty = match entry.get("type").and_then(Value::as_str) {
        Some("message") => Ty::Message,
        Some("custom_message") => Ty::CustomMessage,
        Some("branch_summary") if js_truthy(entry.get("summary")) => Ty::BranchSummary,
        Some("compaction") => Ty::Compaction,
        _ => return,
    };
    match ty {
        Ty::Message => {
            let mut message = match entry.shift_remove("message") {
                // Pi throws a TypeError on these; we contribute nothing.
                None | Some(Value::Null) => return,
                Some(m) => m,
            };
            let content_is_nullish = matches!(message.get("content"), None | Some(Value::Null));
            let empty = match message.get("role").and_then(Value::as_str) {
                // `{ ...message, content: "" }`
                Some("system") => Value::String(String::new()),
                // `{ ...message, content: [] }`
                Some("user" | "assistant" | "toolResult") => Value::Array(vec![]),
                _ => Value::Null,
            };
            if content_is_nullish
                && !empty.is_null()
                && let Value::Object(map) = &mut message
            {
                map.insert("content".into(), empty);
            }
            out.push(message);
        }
        Ty::CustomMessage => {
            let timestamp = js_new_date(entry.get("timestamp"));
            let content = match entry.shift_remove("content") {
                None | Some(Value::Null) => Some(Value::Array(vec![])),
                c => c,
            };
            out.push(derived_message(
                "custom",
                [
                    ("customType", entry.shift_remove("customType")),
                    ("content", content),
                    ("display", entry.shift_remove("display")),
                    ("details", entry.shift_remove("details")),
                ],
                timestamp,
            ));
        }
        Ty::BranchSummary => {
            let timestamp = js_new_date(entry.get("timestamp"));
            out.push(derived_message(
                "branchSummary",
                [
                    ("summary", entry.shift_remove("summary")),
                    ("fromId", entry.shift_remove("fromId")),
                ],
                timestamp,
            ));
        }
        Ty::Compaction => {
            let timestamp = js_new_date(entry.get("timestamp"));
            if let Some(system) = entry.shift_remove("systemMessage")
                && js_truthy(Some(&system))
            {
                out.push(system);
            }
            out.push(derived_message(
                "compactionSummary",
                [
                    ("summary", entry.shift_remove("summary")),
                    ("tokensBefore", entry.shift_remove("tokensBefore")),
                ],
                timestamp,
            ));
        }
    }
}

/// Pi's `convertToLlm`: maps agent messages to the messages sent to the
/// model, with Pi's exact wording.
///
/// `system`, `user`, `assistant` and `toolResult` pass through unchanged.
/// `bashExecution`, `custom`, `branchSummary` and `compactionSummary` become
/// `user` messages `{role, content, timestamp}`. A `bashExecution` with a
/// truthy `excludeFromContext` is dropped, and so is every message with any
/// other role (or no role, or that is not an object).
pub fn convert_to_llm(agent_messages: Vec<Value>) -> Vec<Value> {
    agent_messages.into_iter().filter_map(convert_one).collect()
}

fn convert_one(mut m: Value) -> Option<Value> {
    let role = m.get("role").and_then(Value::as_str)?;
    let text_message = |text: String, m: &Value| {
        let content = Value::Array(vec![text_block(text)]);
        object(&[
            ("role", Some(&Value::String("user".into()))),
            ("content", Some(&content)),
            ("timestamp", m.get("timestamp")),
        ])
    };
    match role {
        "bashExecution" => {
            if js_truthy(m.get("excludeFromContext")) {
                return None;
            }
            Some(text_message(bash_execution_to_text(&m), &m))
        }
        "custom" => {
            let map = m.as_object_mut()?;
            let content = match map.shift_remove("content") {
                Some(Value::String(s)) => Some(Value::Array(vec![text_block(s)])),
                other => other,
            };
            let mut out = Map::new();
            out.insert("role".into(), Value::String("user".into()));
            if let Some(c) = content {
                out.insert("content".into(), c);
            }
            if let Some(t) = map.shift_remove("timestamp") {
                out.insert("timestamp".into(), t);
            }
            Some(Value::Object(out))
        }
        "branchSummary" => Some(text_message(
            format!(
                "{BRANCH_SUMMARY_PREFIX}{}{BRANCH_SUMMARY_SUFFIX}",
                js_to_string(m.get("summary"))
            ),
            &m,
        )),
        "compactionSummary" => Some(text_message(
            format!(
                "{COMPACTION_SUMMARY_PREFIX}{}{COMPACTION_SUMMARY_SUFFIX}",
                js_to_string(m.get("summary"))
            ),
            &m,
        )),
        "system" | "user" | "assistant" | "toolResult" => Some(m),
        _ => None,
    }
}

/// Pi's `bashExecutionToText`: the user text that stands for a `!command` run.
pub fn bash_execution_to_text(m: &Value) -> String {
    let mut text = format!("Ran `{}`\n", js_to_string(m.get("command")));
    let output = m.get("output");
    if js_truthy(output) {
        text.push_str("```\n");
        text.push_str(&js_to_string(output));
        text.push_str("\n```");
    } else {
        text.push_str("(no output)");
    }
    if js_truthy(m.get("cancelled")) {
        text.push_str("\n\n(command cancelled)");
    } else {
        let code = m.get("exitCode");
        let is_zero = matches!(code, Some(Value::Number(n)) if n.as_f64() == Some(0.0));
        if !matches!(code, None | Some(Value::Null)) && !is_zero {
            text.push_str("\n\nCommand exited with code ");
            text.push_str(&js_to_string(code));
        }
    }
    if js_truthy(m.get("truncated")) && js_truthy(m.get("fullOutputPath")) {
        text.push_str("\n\n[Output truncated. Full output: ");
        text.push_str(&js_to_string(m.get("fullOutputPath")));
        text.push(']');
    }
    text
}

fn text_block(text: String) -> Value {
    let mut map = Map::new();
    map.insert("type".into(), Value::String("text".into()));
    map.insert("text".into(), Value::String(text));
    Value::Object(map)
}

/// An object literal whose `undefined` (`None`) members are left out, as
/// `JSON.stringify` leaves them out.
fn object(fields: &[(&str, Option<&Value>)]) -> Value {
    let mut map = Map::new();
    for (k, v) in fields {
        if let Some(v) = v {
            map.insert((*k).into(), (*v).clone());
        }
    }
    Value::Object(map)
}

fn type_of(entry: &Value) -> Option<&str> {
    entry.get("type").and_then(Value::as_str)
}

// ---------------------------------------------------------------------------
// JavaScript semantics. `None` stands for `undefined` (a missing key).
// ---------------------------------------------------------------------------

/// A message Pi makes from an entry that is not a `message`: `{ role, ...fields,
/// timestamp }`, the fields in the order given, those the entry lacks left out (as
/// JavaScript leaves out `undefined` when the object is serialised).
fn derived_message<const N: usize>(
    role: &str,
    fields: [(&str, Option<Value>); N],
    timestamp: Value,
) -> Value {
    let mut map = Map::new();
    map.insert("role".into(), Value::String(role.into()));
    for (k, v) in fields {
        if let Some(v) = v {
            map.insert(k.into(), v);
        }
    }
    map.insert("timestamp".into(), timestamp);
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx(entries: &[Value]) -> Context {
        build_session_context(entries.to_vec())
    }

    fn to_llm(ms: &[Value]) -> Vec<Value> {
        convert_to_llm(ms.to_vec())
    }

    fn ts(s: u32) -> String {
        format!("2026-01-05T09:00:{s:02}.000Z")
    }

    fn user(id: &str, text: &str) -> Value {
        json!({"type":"message","id":id,"parentId":null,"timestamp":ts(1),
               "message":{"role":"user","content":[{"type":"text","text":text}],"timestamp":1}})
    }

    fn asst(id: &str, provider: &str, model: &str) -> Value {
        json!({"type":"message","id":id,"parentId":null,"timestamp":ts(2),
               "message":{"role":"assistant","content":[{"type":"text","text":"a"}],
                          "provider":provider,"model":model,"stopReason":"stop","timestamp":2}})
    }

    fn compaction(id: &str, first_kept: &str, summary: &str) -> Value {
        json!({"type":"compaction","id":id,"parentId":null,"timestamp":ts(6),
               "summary":summary,"firstKeptEntryId":first_kept,"tokensBefore":100})
    }

    fn texts(ms: &[Value]) -> Vec<String> {
        ms.iter()
            .map(|m| match &m["content"] {
                Value::String(s) => s.clone(),
                Value::Array(bs) => bs
                    .iter()
                    .map(|b| b["text"].as_str().unwrap_or("").to_string())
                    .collect(),
                _ => String::new(),
            })
            .collect()
    }

    #[test]
    fn empty_path() {
        let c = ctx(&[]);
        assert_eq!(c.thinking_level, "off");
        assert_eq!(c.model, None);
        assert!(c.agent_messages.is_empty());
    }

    #[test]
    fn settings_last_one_wins_and_assistant_sets_model() {
        let es = [
            json!({"type":"model_change","id":"1","provider":"anthropic","modelId":"claude"}),
            json!({"type":"thinking_level_change","id":"2","thinkingLevel":"medium"}),
            user("3", "hi"),
            asst("4", "openai", "gpt-5"),
            json!({"type":"thinking_level_change","id":"5","thinkingLevel":"high"}),
        ];
        let c = ctx(&es);
        assert_eq!(c.thinking_level, "high");
        assert_eq!(
            c.model,
            Some(json!({"provider":"openai","modelId":"gpt-5"}))
        );
        assert_eq!(c.agent_messages.len(), 2);
    }

    #[test]
    fn model_with_missing_fields_leaves_them_out() {
        let es = [json!({"type":"model_change","id":"1","provider":"x"})];
        assert_eq!(ctx(&es).model, Some(json!({"provider":"x"})));
        let es = [json!({"type":"thinking_level_change","id":"1"})];
        assert_eq!(ctx(&es).thinking_level, "undefined");
    }

    #[test]
    fn bookkeeping_entries_contribute_nothing() {
        let es = [
            json!({"type":"label","id":"1","targetId":"x","label":"l"}),
            json!({"type":"session_info","id":"2","name":"n"}),
            json!({"type":"custom","customType":"t","data":{},"id":"3"}),
            json!({"type":"future_thing","id":"4"}),
            json!({"type":"branch_summary","id":"5","fromId":"x","summary":""}),
        ];
        assert!(ctx(&es).agent_messages.is_empty());
    }

    #[test]
    fn custom_message_becomes_role_custom() {
        let es = [
            json!({"type":"custom_message","customType":"note","content":"hello","display":true,
                         "id":"1","parentId":null,"timestamp":"2026-01-05T09:00:14.749Z"}),
        ];
        let c = ctx(&es);
        assert_eq!(
            c.agent_messages,
            vec![
                json!({"role":"custom","customType":"note","content":"hello","display":true,"timestamp":1767603614749i64})
            ]
        );
        assert_eq!(
            to_llm(&c.agent_messages),
            vec![
                json!({"role":"user","content":[{"type":"text","text":"hello"}],"timestamp":1767603614749i64})
            ]
        );
    }

    #[test]
    fn custom_message_null_content_is_empty_array() {
        let es = [
            json!({"type":"custom_message","customType":"n","content":null,"display":false,"id":"1","timestamp":"x"}),
        ];
        let c = ctx(&es);
        assert_eq!(c.agent_messages[0]["content"], json!([]));
        assert_eq!(c.agent_messages[0]["timestamp"], Value::Null);
        let llm = to_llm(&c.agent_messages);
        assert_eq!(
            llm,
            vec![json!({"role":"user","content":[],"timestamp":null})]
        );
    }

    #[test]
    fn null_content_becomes_empty_array_in_place() {
        let es = [
            json!({"type":"message","id":"1","message":{"role":"user","content":null,"timestamp":1}}),
        ];
        let c = ctx(&es);
        let m = &c.agent_messages[0];
        assert_eq!(m, &json!({"role":"user","content":[],"timestamp":1}));
        let keys: Vec<&str> = m.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["role", "content", "timestamp"]);
        // Missing content is added at the end.
        let es = [json!({"type":"message","id":"1","message":{"role":"toolResult","timestamp":1}})];
        let m = &ctx(&es).agent_messages[0];
        let keys: Vec<&str> = m.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["role", "timestamp", "content"]);
        // Other roles keep null.
        let es = [json!({"type":"message","id":"1","message":{"role":"custom","content":null}})];
        assert_eq!(ctx(&es).agent_messages[0]["content"], Value::Null);
    }

    #[test]
    fn message_without_message_is_skipped() {
        let es = [
            json!({"type":"message","id":"1"}),
            json!({"type":"message","id":"2","message":null}),
        ];
        let c = ctx(&es);
        assert!(c.agent_messages.is_empty());
        assert_eq!(c.model, None);
    }

    #[test]
    fn branch_summary_message() {
        let es = [
            json!({"type":"branch_summary","id":"b","parentId":"a","timestamp":"2026-01-05T09:00:04.000Z",
                         "fromId":"a","summary":"did X"}),
        ];
        let c = ctx(&es);
        assert_eq!(
            c.agent_messages,
            vec![
                json!({"role":"branchSummary","summary":"did X","fromId":"a","timestamp":1767603604000i64})
            ]
        );
        assert_eq!(
            texts(&to_llm(&c.agent_messages)),
            [
                "The following is a summary of a branch that this conversation came back from:\n\n<summary>\ndid X</summary>"
            ]
        );
    }

    #[test]
    fn compaction_keeps_from_first_kept() {
        let es = [
            user("u1", "one"),
            user("u2", "two"),
            user("u3", "three"),
            compaction("c1", "u2", "S"),
            user("u4", "four"),
        ];
        let c = ctx(&es);
        let llm = to_llm(&c.agent_messages);
        assert_eq!(
            texts(&llm),
            [
                "The conversation history before this point was compacted into the following summary:\n\n<summary>\nS\n</summary>",
                "two",
                "three",
                "four"
            ]
        );
        assert_eq!(llm[0]["timestamp"], json!(1767603606000i64));
        assert_eq!(
            c.agent_messages[0],
            json!({"role":"compactionSummary","summary":"S","tokensBefore":100,"timestamp":1767603606000i64})
        );
    }

    #[test]
    fn compaction_first_kept_not_on_path() {
        let es = [
            user("u1", "one"),
            compaction("c1", "zzzzzzzz", "S"),
            user("u2", "two"),
        ];
        let llm = to_llm(&ctx(&es).agent_messages);
        assert_eq!(texts(&llm)[1..], ["two"]);
        assert_eq!(llm.len(), 2);
    }

    #[test]
    fn second_compaction_keeping_the_first_contributes_nothing_of_it() {
        // pi-edge-cases.mjs "second-compaction-keeps-range-containing-first": 0.81.1
        // emitted S1 again after "u a4"; 1.6.0 does not.
        let es = [
            user("a2", "u a2"),
            user("a4", "u a4"),
            compaction("c1", "a4", "S1"),
            user("a6", "u a6"),
            compaction("c2", "a4", "S2"),
            user("a8", "u a8"),
        ];
        let c = ctx(&es);
        let roles: Vec<String> = c
            .agent_messages
            .iter()
            .map(|m| match m["role"].as_str().unwrap() {
                "compactionSummary" => format!("cs:{}", m["summary"].as_str().unwrap()),
                "user" => texts(std::slice::from_ref(m))[0].clone(),
                r => r.to_string(),
            })
            .collect();
        assert_eq!(roles, ["cs:S2", "u a4", "u a6", "u a8"]);
    }

    #[test]
    fn older_compaction_before_first_kept_is_dropped() {
        let es = [
            user("a1", "one"),
            compaction("c1", "a1", "S1"),
            user("a2", "two"),
            compaction("c2", "a2", "S2"),
        ];
        let c = ctx(&es);
        assert_eq!(c.agent_messages.len(), 2);
        assert_eq!(c.agent_messages[0]["summary"], "S2");
    }

    #[test]
    fn compaction_with_missing_fields() {
        let es = [json!({"type":"compaction","id":"c"})];
        let c = ctx(&es);
        assert_eq!(
            c.agent_messages,
            vec![json!({"role":"compactionSummary","timestamp":null})]
        );
        assert_eq!(
            texts(&to_llm(&c.agent_messages)),
            [format!(
                "{COMPACTION_SUMMARY_PREFIX}undefined{COMPACTION_SUMMARY_SUFFIX}"
            )]
        );
    }

    #[test]
    fn bash_execution_wording() {
        let m = json!({"role":"bashExecution","command":"ls","output":"a\nb","exitCode":0,"cancelled":false,"truncated":false,"timestamp":5});
        assert_eq!(bash_execution_to_text(&m), "Ran `ls`\n```\na\nb\n```");
        let m = json!({"role":"bashExecution","command":"false","output":"","exitCode":1,"cancelled":false,"truncated":true,"fullOutputPath":"/tmp/o"});
        assert_eq!(
            bash_execution_to_text(&m),
            "Ran `false`\n(no output)\n\nCommand exited with code 1\n\n[Output truncated. Full output: /tmp/o]"
        );
        let m = json!({"role":"bashExecution","command":"sleep","output":"x","exitCode":null,"cancelled":true,"truncated":true});
        assert_eq!(
            bash_execution_to_text(&m),
            "Ran `sleep`\n```\nx\n```\n\n(command cancelled)"
        );
        let m = json!({"role":"bashExecution","command":"x","exitCode":"0"});
        assert_eq!(
            bash_execution_to_text(&m),
            "Ran `x`\n(no output)\n\nCommand exited with code 0"
        );
        let m = json!({"role":"bashExecution","exitCode":-0.0});
        assert_eq!(bash_execution_to_text(&m), "Ran `undefined`\n(no output)");
        let m = json!({"role":"bashExecution","command":"x","exitCode":2.5e21});
        assert_eq!(
            bash_execution_to_text(&m),
            "Ran `x`\n(no output)\n\nCommand exited with code 2.5e+21"
        );
    }

    #[test]
    fn convert_drops_excluded_and_unknown() {
        let ms = [
            json!({"role":"bashExecution","command":"a","output":"","exitCode":0,"excludeFromContext":true,"timestamp":1}),
            json!({"role":"bashExecution","command":"b","output":"","exitCode":0,"excludeFromContext":false,"timestamp":2}),
            json!({"role":"weird","content":"x"}),
            json!({"content":"x"}),
            json!("string"),
            json!({"role":"assistant","content":[],"x":1}),
        ];
        let llm = to_llm(&ms);
        assert_eq!(
            llm,
            vec![
                json!({"role":"user","content":[{"type":"text","text":"Ran `b`\n(no output)"}],"timestamp":2}),
                json!({"role":"assistant","content":[],"x":1}),
            ]
        );
    }

    #[test]
    fn convert_custom_without_timestamp_or_content() {
        let llm = to_llm(&[json!({"role":"custom"})]);
        assert_eq!(llm, vec![json!({"role":"user"})]);
        let llm = to_llm(&[
            json!({"role":"custom","content":[{"type":"image","data":"","mimeType":"image/png"}],"timestamp":3}),
        ]);
        assert_eq!(llm[0]["content"][0]["type"], "image");
    }

    #[test]
    fn js_to_string_matches_javascript() {
        assert_eq!(
            js_to_string(Some(&json!([1, [2, [null, 3]], {}]))),
            "1,2,,3,[object Object]"
        );
        assert_eq!(js_to_string(Some(&json!(null))), "null");
        assert_eq!(js_to_string(None), "undefined");
        assert_eq!(js_to_string(Some(&json!(true))), "true");
        assert_eq!(js_to_string(Some(&json!(-0.0))), "0");
    }

    #[test]
    fn js_number_formatting() {
        let cases: &[(f64, &str)] = &[
            (0.1 + 0.2, "0.30000000000000004"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (1e-6, "0.000001"),
            (123e-20, "1.23e-18"),
            (5.0, "5"),
            (-5.5, "-5.5"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (123456789012345680000.0, "123456789012345680000"),
            (0.000123, "0.000123"),
            (1234.5678, "1234.5678"),
            (-0.0, "0"),
            // A tie between two shortest forms: JavaScript takes the even one.
            (f64::from_bits(0x40c0_01f0_4400_0000), "8195.877075195312"), // 8195.8770751953125
            (1180591620717411303424.0, "1.1805916207174113e+21"),
        ];
        for (x, s) in cases {
            assert_eq!(js_f64(*x), *s, "{x:e}");
        }
        let n: Value = serde_json::from_str("12345678901234567890").unwrap();
        assert_eq!(js_to_string(Some(&n)), "12345678901234567000");
        let n: Value = serde_json::from_str("9007199254740993").unwrap();
        assert_eq!(js_to_string(Some(&n)), "9007199254740992");
        let n: Value = serde_json::from_str("-9007199254740992").unwrap();
        assert_eq!(js_to_string(Some(&n)), "-9007199254740992");
    }

    #[test]
    fn js_truthiness() {
        for v in [json!(0), json!(-0.0), json!(""), json!(null), json!(false)] {
            assert!(!js_truthy(Some(&v)), "{v}");
        }
        assert!(!js_truthy(None));
        for v in [json!(1), json!("0"), json!([]), json!({}), json!(true)] {
            assert!(js_truthy(Some(&v)), "{v}");
        }
    }

    #[test]
    fn date_parsing_matches_v8() {
        // Values printed by Node 20 (`new Date(s).getTime()`) with TZ=UTC.
        let cases: &[(&str, Option<i64>)] = &[
            ("2026-01-05T09:00:14.749Z", Some(1767603614749)),
            ("2026-01-05T09:00:14Z", Some(1767603614000)),
            ("2026-01-05T09:00Z", Some(1767603600000)),
            ("2026-01-05T09Z", None),
            ("2026-01-05", Some(1767571200000)),
            ("2026-01", Some(1767225600000)),
            ("2026", Some(1767225600000)),
            ("+002026-01-05T09:00:14.749Z", Some(1767603614749)),
            ("-000001-01-01T00:00:00Z", Some(-62198755200000)),
            ("-000000-01-01T00:00:00Z", None),
            ("2026-01-05T09:00:14.7Z", Some(1767603614700)),
            ("2026-01-05T09:00:14.74912345Z", Some(1767603614749)),
            (
                "2026-01-05T09:00:14.0000000000000000000000001Z",
                Some(1767603614000),
            ),
            ("2026-01-05T09:00:14.9999Z", Some(1767603614999)),
            ("2026-01-05T09:00:14.Z", None),
            ("2026-01-05t09:00:14.749z", Some(1767603614749)),
            ("2026-01-05 09:00:14.749Z", Some(1767603614749)),
            ("2026-01-05T09:00:14.749+01:00", Some(1767600014749)),
            ("2026-01-05T09:00:14.749+0100", Some(1767600014749)),
            ("2026-01-05T09:00:14.749+01", None),
            ("2026-01-05T09:00:14.749-00:00", Some(1767603614749)),
            ("2026-01-05T09:00:14.749+24:00", None),
            ("2026-01-05T09:00:14.749+23:59", Some(1767517274749)),
            ("2026-01-05T09:00:14.749+00:60", None),
            ("2026-01-05T09:00:14.749+2400", None),
            ("2026-01-05T09:00:14.749", Some(1767603614749)),
            ("2026-01-05T24:00:00Z", Some(1767657600000)),
            ("2026-01-05T24:00:01Z", None),
            ("2026-02-30T00:00:00Z", Some(1772409600000)),
            ("2026-02-31T00:00:00Z", Some(1772496000000)),
            ("2026-04-31T00:00:00Z", Some(1777593600000)),
            ("2024-02-29T00:00:00Z", Some(1709164800000)),
            ("2026-13-01T00:00:00Z", None),
            ("2026-01-32T00:00:00Z", None),
            ("2026-00-10T00:00:00Z", None),
            ("2026-01-00T00:00:00Z", None),
            ("2026-01-05T25:00:00Z", None),
            ("2026-01-05T09:60:00Z", None),
            ("2026-01-05T09:00:60Z", None),
            ("2026-01-05T9:00:00Z", None),
            ("2026-01-05T09:00:1Z", None),
            ("2026-01-05T09:00:14,749Z", None),
            ("2026-01-05TZ", None),
            ("2026-01-05T", None),
            ("2026-01-05T09", None),
            ("2026-01-05T09:00:14.749ZZ", None),
            ("2026-01-05T09:00:14.749-", None),
            ("2026-01-05T09:00:14.749UTC", None),
            ("2026-01-05T09:00:14.749Z\n", None),
            ("12026-01-05T09:00:14.749Z", None),
            ("", None),
            ("x", None),
            (" 2026-01-05T09:00:14.749Z", None),
            ("2026-01-05T09:00:14.749Z ", None),
            ("275760-09-13T00:00:00Z", None),
            ("+275760-09-13T00:00:00.000Z", Some(8640000000000000)),
            ("+275760-09-13T00:00:00.001Z", None),
            ("-271821-04-20T00:00:00Z", Some(-8640000000000000)),
            ("-271821-04-19T23:59:59.999Z", None),
            ("0000-01-01T00:00:00Z", Some(-62167219200000)),
            ("1969-12-31T23:59:59.999Z", Some(-1)),
            // V8's legacy parser, space-separated forms.
            ("2026-01-05 09:00:14Z", Some(1767603614000)),
            ("2026-01-05 09:00Z", Some(1767603600000)),
            ("2026-01-05 09:00:14.749+01:00", Some(1767600014749)),
            ("2026-01-05 09:00:14.749+0100", Some(1767600014749)),
            ("2026-01-05 09:00:14.749+01", Some(1767600014749)),
            ("2026-01-05 09:00:14.749 +01:00", Some(1767600014749)),
            ("2026-01-05 09:00:14.749 Z", Some(1767603614749)),
            ("2026-01-05 09:00:14.749z", Some(1767603614749)),
            ("2026-01-05 09:00:14.749 UTC", Some(1767603614749)),
            ("2026-01-05 9:00:14Z", Some(1767603614000)),
            ("2026-01-05 09:00:14.74912Z", Some(1767603614749)),
            ("2026-01-05 24:00:00Z", Some(1767657600000)),
            ("2026-01-05  09:00:14Z", Some(1767603614000)),
            ("2026-02-30 00:00:00Z", Some(1772409600000)),
        ];
        for (s, want) in cases {
            assert_eq!(js_date_ms(s), *want, "{s:?}");
        }
    }

    #[test]
    fn new_date_of_non_strings() {
        assert_eq!(js_new_date(None), Value::Null);
        assert_eq!(js_new_date(Some(&json!(null))), json!(0));
        assert_eq!(js_new_date(Some(&json!(true))), json!(1));
        assert_eq!(js_new_date(Some(&json!(1.9))), json!(1));
        assert_eq!(js_new_date(Some(&json!(-1.9))), json!(-1));
        assert_eq!(js_new_date(Some(&json!(9e15))), Value::Null);
        assert_eq!(
            js_new_date(Some(&json!(["2026-01-05T09:00:14.749Z"]))),
            json!(1767603614749i64)
        );
        assert_eq!(js_new_date(Some(&json!({}))), Value::Null);
    }

    #[test]
    fn strict_equality() {
        let a = json!({"x":1});
        let b = json!({"x":1});
        assert!(js_strict_eq(Some(&a), Some(&a)));
        assert!(!js_strict_eq(Some(&a), Some(&b)));
        assert!(js_strict_eq(None, None));
        assert!(!js_strict_eq(None, Some(&Value::Null)));
        assert!(js_strict_eq(Some(&json!(1)), Some(&json!(1.0))));
        assert!(!js_strict_eq(Some(&json!("1")), Some(&json!(1))));
    }

    // ---- Pi 1.6.0 (PI-FORMAT §16.4): the edge-case table, row by row --------------

    /// model_change → system S (content "", a preamble section, one tool) → u2 → a3.
    fn base16() -> Vec<Value> {
        vec![
            json!({"type":"model_change","id":"m1","parentId":null,"timestamp":ts(0),"provider":"p","modelId":"m"}),
            json!({"type":"message","id":"S","parentId":"m1","timestamp":ts(1),
                   "message":{"role":"system","content":"","sections":{"preamble":"You are a helper."},
                              "timestamp":1,"toolsAdded":[{"name":"read","description":"Read a file","parameters":{"type":"object"}}]}}),
            user("u2", "u2"),
            asst("a3", "p", "m"),
        ]
    }

    fn edit(id: &str, target: &str, replacement: Value) -> Value {
        json!({"type":"context_edit","id":id,"parentId":null,"timestamp":ts(9),"targetId":target,"replacement":replacement})
    }

    /// Each agent message as `role` or `role:TEXT` (string content quoted, blocks
    /// joined with `|`), like pi-edge-cases.mjs prints `contextMessages`.
    fn roles(c: &Context) -> Vec<String> {
        c.agent_messages
            .iter()
            .map(|m| {
                let role = m["role"].as_str().unwrap_or("?").to_string();
                match &m["content"] {
                    Value::String(s) => format!("{role}:\"{s}\""),
                    Value::Array(bs) => {
                        let t: Vec<&str> = bs
                            .iter()
                            .map(|b| b["text"].as_str().unwrap_or("[image]"))
                            .collect();
                        format!("{role}:{}", t.join("|"))
                    }
                    _ => match m.get("summary") {
                        Some(s) => format!("{role}:{}", s.as_str().unwrap_or("")),
                        None => role,
                    },
                }
            })
            .collect()
    }

    #[test]
    fn pi16_system_message_in_context() {
        let c = ctx(&base16());
        assert_eq!(roles(&c), ["system:\"\"", "user:u2", "assistant:a"]);
        // It passes convertToLlm unchanged, sections, tools and timestamp included.
        let l = to_llm(&c.agent_messages);
        assert_eq!(l[0], base16()[1]["message"]);
    }

    #[test]
    fn pi16_system_message_null_content() {
        let mut es = base16();
        es[1]["message"]["content"] = Value::Null;
        es.truncate(3);
        let c = ctx(&es);
        assert_eq!(roles(&c), ["system:\"\"", "user:u2"]);
        // `{...message, content: ""}` keeps the key where it was.
        let keys: Vec<&str> = c.agent_messages[0]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            ["role", "content", "sections", "timestamp", "toolsAdded"]
        );
        let mut es = base16();
        es[1]["message"]
            .as_object_mut()
            .unwrap()
            .shift_remove("content");
        assert_eq!(ctx(&es).agent_messages[0]["content"], "");
    }

    #[test]
    fn pi16_context_edit_null_removes_target() {
        let mut es = base16();
        es.push(edit("e1", "u2", Value::Null));
        assert_eq!(roles(&ctx(&es)), ["system:\"\"", "assistant:a"]);
    }

    #[test]
    fn pi16_context_edit_last_in_path_wins() {
        let mut es = base16();
        es.push(edit("e1", "u2", json!({"content":"first"})));
        es.push(edit(
            "e2",
            "u2",
            json!({"content":[{"type":"text","text":"second"}]}),
        ));
        assert_eq!(
            roles(&ctx(&es)),
            ["system:\"\"", "user:second", "assistant:a"]
        );
        // And the other way round: a string on a user message stays a string.
        let mut es = base16();
        es.push(edit(
            "e2",
            "u2",
            json!({"content":[{"type":"text","text":"second"}]}),
        ));
        es.push(edit("e1", "u2", json!({"content":"first"})));
        assert_eq!(
            roles(&ctx(&es)),
            ["system:\"\"", "user:\"first\"", "assistant:a"]
        );
    }

    #[test]
    fn pi16_context_edit_string_on_assistant_becomes_a_text_block() {
        let mut es = base16();
        es.push(edit("e1", "a3", json!({"content":"plain string"})));
        let c = ctx(&es);
        assert_eq!(
            c.agent_messages[2]["content"],
            json!([{"type":"text","text":"plain string"}])
        );
        // Only the content changes: role, provider, usage, stopReason stay, in order.
        let keys: Vec<&str> = c.agent_messages[2]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "role",
                "content",
                "provider",
                "model",
                "stopReason",
                "timestamp"
            ]
        );
    }

    #[test]
    fn pi16_context_edit_target_missing() {
        let mut es = base16();
        es.push(edit("e1", "zzzzzzzz", Value::Null));
        assert_eq!(roles(&ctx(&es)), roles(&ctx(&base16())));
    }

    #[test]
    fn pi16_context_edit_before_its_target_on_path() {
        let mut es = base16();
        es.push(edit("e1", "u4", json!({"content":"edited later user"})));
        es.push(user("u4", "u4"));
        assert_eq!(
            roles(&ctx(&es)),
            [
                "system:\"\"",
                "user:u2",
                "assistant:a",
                "user:\"edited later user\""
            ]
        );
    }

    #[test]
    fn pi16_context_edit_on_other_branch_or_before_first_kept_does_nothing() {
        // An edit that is not a context entry does nothing: here the edit lies on the
        // path before the compaction's first kept entry, while its target is kept.
        let es = vec![
            base16()[0].clone(),
            base16()[1].clone(),
            user("u2", "u2"),
            edit("e1", "u4", Value::Null),
            user("u4", "u4"),
            asst("a5", "p", "m"),
            compaction("c1", "u4", "S"),
            user("u6", "u6"),
        ];
        assert_eq!(
            roles(&ctx(&es)),
            ["compactionSummary:S", "user:u4", "assistant:a", "user:u6"]
        );
    }

    #[test]
    fn pi16_context_edit_on_system_message() {
        let mut es = base16();
        es.push(edit("e1", "S", Value::Null));
        assert_eq!(roles(&ctx(&es)), ["user:u2", "assistant:a"]);
        let mut es = base16();
        es.push(edit("e1", "S", json!({"content":"ignored"})));
        assert_eq!(roles(&ctx(&es)), roles(&ctx(&base16())));
    }

    #[test]
    fn pi16_context_edit_null_on_compaction_removes_system_message_and_summary() {
        let mut es = base16();
        let mut c = compaction("c1", "a3", "S");
        c["systemMessage"] =
            json!({"role":"system","content":"","sections":{"preamble":"P"},"timestamp":5});
        es.push(c);
        es.push(user("u4", "u4"));
        assert_eq!(
            roles(&ctx(&es)),
            [
                "system:\"\"",
                "compactionSummary:S",
                "assistant:a",
                "user:u4"
            ]
        );
        es.push(edit("e1", "c1", Value::Null));
        assert_eq!(roles(&ctx(&es)), ["assistant:a", "user:u4"]);
    }

    #[test]
    fn pi16_compaction_system_message_and_kept_system_messages_dropped() {
        let mut es = base16();
        es.push(
            json!({"type":"message","id":"P","parentId":"a3","timestamp":ts(4),
                       "message":{"role":"system","content":"patch","timestamp":4}}),
        );
        es.push(user("u4", "u4"));
        let mut c = compaction("c1", "a3", "S");
        c["systemMessage"] = json!({"role":"system","content":"patch","timestamp":6});
        es.push(c);
        es.push(user("u6", "u6"));
        assert_eq!(
            roles(&ctx(&es)),
            [
                "system:\"patch\"",
                "compactionSummary:S",
                "assistant:a",
                "user:u4",
                "user:u6"
            ]
        );
        // A falsy systemMessage adds nothing; a truthy one is added as it is.
        let mut es = base16();
        let mut c = compaction("c1", "a3", "S");
        c["systemMessage"] = json!("");
        es.push(c);
        assert_eq!(ctx(&es).agent_messages.len(), 2);
    }

    #[test]
    fn pi16_compaction_retain_none() {
        let mut es = base16();
        es.push(compaction("c1", "c1", "S"));
        es.push(user("u4", "u4"));
        assert_eq!(roles(&ctx(&es)), ["compactionSummary:S", "user:u4"]);
    }

    #[test]
    fn pi16_usage_entry_contributes_nothing_and_sets_no_model() {
        let mut es = base16();
        es.push(
            json!({"type":"usage","id":"u9","parentId":"a3","timestamp":ts(9),"kind":"cache_warm",
                       "provider":"other","model":"warm","usage":{"input":1}}),
        );
        let c = ctx(&es);
        assert_eq!(roles(&c), roles(&ctx(&base16())));
        assert_eq!(c.model, Some(json!({"provider":"p","modelId":"m"})));
    }

    #[test]
    fn pi16_edit_replacement_shapes_as_javascript_reads_them() {
        // A replacement that is not an object has no `content`: the key goes.
        let mut es = base16();
        es.push(edit("e1", "u2", json!("just a string")));
        let c = ctx(&es);
        assert!(c.agent_messages[1].get("content").is_none());
        assert_eq!(
            to_llm(&c.agent_messages)[1],
            json!({"role":"user","timestamp":1})
        );
        // `content: null` is kept as null.
        let mut es = base16();
        es.push(edit("e1", "u2", json!({"content":null})));
        assert_eq!(ctx(&es).agent_messages[1]["content"], Value::Null);
        // No `replacement` at all makes Pi throw; here the edit is ignored.
        let mut es = base16();
        es.push(json!({"type":"context_edit","id":"e1","targetId":"u2"}));
        assert_eq!(roles(&ctx(&es)), roles(&ctx(&base16())));
        // A custom message keeps a string, which convertToLlm makes one block.
        let es = vec![
            json!({"type":"custom_message","id":"cm","customType":"note","content":"x","display":true,"timestamp":ts(1)}),
            edit("e1", "cm", json!({"content":"edited"})),
        ];
        let c = ctx(&es);
        assert_eq!(c.agent_messages[0]["content"], "edited");
        assert_eq!(
            to_llm(&c.agent_messages)[0]["content"],
            json!([{"type":"text","text":"edited"}])
        );
        // A bash run, a branch summary and a compaction summary ignore replacements.
        let es = vec![
            json!({"type":"branch_summary","id":"b","fromId":"x","summary":"S","timestamp":ts(1)}),
            json!({"type":"message","id":"x","message":{"role":"bashExecution","command":"ls","output":"","exitCode":0,"timestamp":2}}),
            edit("e1", "b", json!({"content":"no"})),
            edit("e2", "x", json!({"content":"no"})),
        ];
        let c = ctx(&es);
        assert_eq!(c.agent_messages[0]["summary"], "S");
        assert_eq!(c.agent_messages[1]["command"], "ls");
        assert!(c.agent_messages[1].get("content").is_none());
    }

    #[test]
    fn pi16_edit_keys_compare_as_javascript_map_keys() {
        // Numeric ids match numerically; an object id matches nothing; a missing
        // targetId matches entries without an id.
        let es = vec![
            json!({"type":"message","id":1,"message":{"role":"user","content":"one","timestamp":1}}),
            json!({"type":"message","id":{"o":1},"message":{"role":"user","content":"obj","timestamp":2}}),
            json!({"type":"context_edit","id":"e1","targetId":1.0,"replacement":null}),
            json!({"type":"context_edit","id":"e2","targetId":{"o":1},"replacement":null}),
            json!({"type":"context_edit","id":"e3","replacement":{"content":"edited"}}),
            json!({"type":"message","parentId":"e3","message":{"role":"user","content":"no id","timestamp":3}}),
        ];
        // (Checked with Pi 1.6.0's buildSessionContext on the same chain.)
        assert_eq!(roles(&ctx(&es)), ["user:\"obj\"", "user:\"edited\""]);
    }
}
