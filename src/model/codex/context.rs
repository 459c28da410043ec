//! What Codex sends the model when the conversation continues right after a node: the
//! request's `input` (CODEX-FORMAT §5), apart from the base-instructions message.
//!
//! The rule, measured against 65 real requests by `codex-oracle` (§5.1–§5.3):
//!
//! * walk the page's history (§3.1) up to and including the node's line;
//! * a `response_item` line contributes its `payload`, without
//!   `internal_chat_message_metadata_passthrough` and otherwise as stored (key order
//!   kept: serde_json's `preserve_order` is on); a line without `timestamp` is ignored,
//!   as Codex ignores it (§10), and so is a `payload.type` Codex does not send (§10);
//! * a `compacted` line replaces everything before it by its `replacement_history` (each
//!   item likewise without the internal key);
//! * a `function_call` that has no `function_call_output` anywhere after it gets a
//!   synthetic `{"type":"function_call_output","id":…,"call_id":…,"output":"aborted"}`
//!   right after it (§5.2).
//!
//! **The synthetic output's id.** Codex's is `fco_` + a UUID whose version nibble is 5
//! (a name-based UUID), stable for a call, but its namespace and name are not known: it
//! is none of the RFC namespaces over the call id or the thread id and call id, and the
//! `openai/codex` source available to us does not show it. So it is not derived; we
//! write `fco_aborted_<call_id>`: stable, unique per call, and plainly not one of
//! Codex's ids. Everything else of the item is Codex's.

use serde_json::{Map, Value, json};
use std::io;

use super::page::LineKind;
use super::render;
use super::store::{Codex, History, NodeIx, Problem};

/// The user message Codex 0.171.0 sends after the history to ask for a compaction
/// summary (`/compact`, or the automatic compaction before a turn), with no tools; it
/// writes it nowhere, so a summary's `request` adds it to the context of the entry
/// before the summary. The text is the one the real CLI sent
/// (`tests/fixtures/codex/pickers/compact-requests/`, §5.3).
pub const COMPACTION_PROMPT: &str = "You are performing a CONTEXT CHECKPOINT COMPACTION. \
Create a handoff summary for another LLM that will resume the task.\n\nInclude:\n\
- Current progress and key decisions made\n- Important context, constraints, or user \
preferences\n- What remains to be done (clear next steps)\n- Any critical data, \
examples, or references needed to continue\n\nBe concise, structured, and focused on \
helping the next LLM seamlessly continue the work.\n";

/// [`COMPACTION_PROMPT`] as the request's item.
pub fn compaction_prompt_item() -> Value {
    serde_json::json!({
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": COMPACTION_PROMPT}],
    })
}

/// The key Codex keeps in the file and never sends (§5.1).
pub const INTERNAL_KEY: &str = "internal_chat_message_metadata_passthrough";

/// `payload.type`s of `response_item` lines that are sent. Codex drops the ones it does
/// not know (§10); these are the item types of the Responses API it writes.
pub const SENT_TYPES: &[&str] = &[
    "message",
    "reasoning",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "web_search_call",
    "image_generation_call",
    "tool_search_call",
    "tool_search_output",
    "compaction",
];

/// The id we give a synthetic `aborted` output (see the module doc).
pub fn aborted_output_id(call_id: &str) -> String {
    format!("fco_aborted_{call_id}")
}

/// The context after node `n`.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// The request's `input`, minus the base-instructions message.
    pub input: Vec<Value>,
    /// Indexes in `input` of the synthetic `aborted` outputs.
    pub inserted: Vec<usize>,
    /// `session_meta.base_instructions.text` of the thread's first page (§5.5), as
    /// stored (Codex removes sections for tools it does not offer before sending).
    pub instructions: Option<String>,
    /// Set when the history could not be read whole (a missing base page, §3.1): the
    /// items are then those of the pages that could be read, and Codex itself would
    /// refuse to resume this point.
    pub error: Option<Problem>,
}

/// `payload` without the internal key.
pub fn sent_payload(p: &Value) -> Value {
    match p {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| k.as_str() != INTERNAL_KEY)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<Map<_, _>>(),
        ),
        v => v.clone(),
    }
}

/// The context Codex sends after node `n` (§5). Its lines are read from the pages, in
/// order (a compressed page streams on through its decompressor).
pub fn context_at(codex: &Codex, n: NodeIx) -> io::Result<Context> {
    let history = codex.history_at(n);
    let mut items: Vec<Value> = Vec::new();
    let mut reader = codex.reader();
    for r in history.lines() {
        let line = codex.line(r);
        match line.kind {
            LineKind::ResponseItem
                if line.has_ts
                    && codex
                        .payload_type(r)
                        .is_some_and(|t| SENT_TYPES.contains(&t)) =>
            {
                let mut v = reader.value(r)?;
                items.push(sent_payload(&v["payload"].take()));
            }
            LineKind::Compacted => {
                let v = reader.value(r)?;
                if let Some(rh) = v["payload"]["replacement_history"].as_array() {
                    items = rh.iter().map(sent_payload).collect();
                }
            }
            _ => {}
        }
    }
    let (input, inserted) = insert_aborted(items);
    Ok(Context {
        input,
        inserted,
        instructions: instructions_of(codex, &history)?,
        error: history.error,
    })
}

/// The base instructions and the history's error at node `n`: what the readable
/// context shows before the items, without building the items.
pub fn preamble_at(codex: &Codex, n: NodeIx) -> io::Result<(Option<String>, Option<Problem>)> {
    let history = codex.history_at(n);
    Ok((instructions_of(codex, &history)?, history.error))
}

/// The base instructions of the history's first page (§5.5), read from its
/// `session_meta` line.
fn instructions_of(codex: &Codex, history: &History) -> io::Result<Option<String>> {
    let Some(p) = history.runs.iter().find(|r| r.1 > 0).map(|r| r.0) else {
        return Ok(None);
    };
    Ok(codex
        .meta_payload(p)?
        .as_ref()
        .and_then(super::page::instructions_of))
}

/// Adds an `aborted` output right after every `function_call` without an output (§5.2).
pub fn insert_aborted(items: Vec<Value>) -> (Vec<Value>, Vec<usize>) {
    let answered: std::collections::HashSet<String> = items
        .iter()
        .filter(|v| v["type"] == "function_call_output")
        .filter_map(|v| v["call_id"].as_str().map(str::to_string))
        .collect();
    let mut out = Vec::with_capacity(items.len());
    let mut inserted = Vec::new();
    for v in items {
        let missing = (v["type"] == "function_call")
            .then(|| v["call_id"].as_str())
            .flatten()
            .filter(|c| !answered.contains(*c))
            .map(str::to_string);
        out.push(v);
        if let Some(call_id) = missing {
            inserted.push(out.len());
            out.push(json!({
                "type": "function_call_output",
                "id": aborted_output_id(&call_id),
                "call_id": call_id,
                "output": "aborted",
            }));
        }
    }
    (out, inserted)
}

impl Context {
    /// `context.json`: the `input` array, one item per line, as the other agents' files
    /// are laid out.
    pub fn to_json(&self) -> String {
        let mut s = String::from("[");
        for (i, v) in self.input.iter().enumerate() {
            s.push_str(if i == 0 { "\n" } else { ",\n" });
            s.push_str(&v.to_string());
        }
        s.push_str(if self.input.is_empty() {
            "]\n"
        } else {
            "\n]\n"
        });
        s
    }

    /// The readable `context`: the base instructions first, then each item as its KIND
    /// file reads.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        if let Some(i) = &self.instructions {
            s.push_str("## instructions\n");
            s.push_str(i);
            s.push_str("\n\n");
        }
        for v in &self.input {
            s.push_str(&format!("## {}\n", render::item_kind(v)));
            s.push_str(&render::item_text(v).text);
            if !s.ends_with('\n') {
                s.push('\n');
            }
            s.push('\n');
        }
        s
    }
}
