//! What Copilot CLI 1.0.102 sends the model when a conversation continues right after an
//! event (COPILOT-FORMAT.md §5–§7): the request's `messages` without the system message
//! (which the running CLI builds anew, §7.1) and without the new prompt. This is what the
//! CLI sends on a **resume** of the file cut after the event (what `/rewind` and the
//! kit's `context.sh` do), which is what it sends from then on; a live process differs in
//! five ways it keeps in memory only (§7: `refusal`, `reasoning_content`, no
//! `__copilotMessageSource`, a failed tool's longer live text, and the live compaction
//! wording).
//!
//! The events of the main agent are read in file order (a subagent's, with `agentId`,
//! are left out, §6.5):
//!
//! * `user.message` → `{"role":"user","content": transformedContent}` (`content` as is
//!   when there is no `transformedContent`); with image attachments, content parts: the
//!   text, then per image `Image file at path P` and the image as a data URL read from
//!   its `session.binary_asset` (§6.4);
//! * `assistant.message` → `{"role":"assistant","content","tool_calls"}`, `content` null
//!   when the text is empty and there are calls, each call's `arguments`
//!   `JSON.stringify`'d from the stored object (§5); the reasoning is not sent (§6.8);
//! * `tool.execution_complete` → `{"role":"tool","tool_call_id","content",
//!   "__copilotMessageSource":{"kind":"tool","name","summary"}}`: `result.content`, or
//!   `error.message` for a failure; placed after the call's assistant message **in the
//!   order of its calls**, whatever the order of the file (§5); a call without a result
//!   gets the CLI's made-up one: the short "The execution of this tool, or a previous
//!   tool was interrupted." for a `view` call, the long "interrupted before a result was
//!   recorded" text for any other tool (measured call by call on every tool 1.0.102
//!   has, and on unknown ones). A `task` call's message is marked
//!   `{"kind":"subagent","name":<agent_type>}` when its `agent_type` is a string, and
//!   carries no mark otherwise; `summary` is the call's `intentionSummary` when it is a
//!   string; after an `abort` a call without a result gets the short text, unmarked;
//! * `session.compaction_complete` → everything before it becomes one user message
//!   listing the earlier prompts (`content`, not `transformedContent`) and the summary
//!   (§6.3), worded as a resume words it;
//! * every other event adds nothing.

use crate::model::core::js::js_stringify;
use serde_json::{Map, Value, json};
use std::collections::HashMap;

use super::events::Ev;

/// The result the CLI makes up for a call that has none (§5).
pub const INTERRUPTED: &str = "Tool execution was interrupted before a result was recorded. \
Its effects may be absent, partial, or already complete, and other tools may have completed \
successfully. Check the current state before retrying; do not assume success or replay this \
operation blindly.";
/// The result it makes up for a `view` call that has none.
pub const INTERRUPTED_VIEW: &str =
    "The execution of this tool, or a previous tool was interrupted.";

/// The first words of the message a compaction leaves, as a resume words it (§6.3; a live
/// process says "The conversation history has been summarized", §7).
pub const SUMMARIZED: &str =
    "Some of the conversation history has been summarized to free up context.";

/// An image's MIME type and base64 data, by `assetId`.
pub type Assets<'a> = dyn Fn(&str) -> Option<(String, String)> + 'a;

/// A call of an assistant message, waiting for its result.
struct Call {
    id: String,
    /// The tool's name (a string, as written).
    name: Value,
    /// `__copilotMessageSource`, when the CLI marks the message.
    source: Option<Value>,
}

/// The calls of the last assistant message, waiting for their results.
struct Open {
    /// In the order of the message's calls.
    calls: Vec<Call>,
    results: HashMap<String, Value>,
}

/// Builds a context from the main agent's events, in file order.
pub struct Builder<'a> {
    out: Vec<Value>,
    open: Option<Open>,
    /// Every prompt so far (`content`), for a compaction's list.
    prompts: Vec<String>,
    assets: &'a Assets<'a>,
}

impl<'a> Builder<'a> {
    pub fn new(assets: &'a Assets<'a>) -> Builder<'a> {
        Builder {
            out: Vec::new(),
            open: None,
            prompts: Vec::new(),
            assets,
        }
    }

    /// A prompt that a compaction further on lists, before the events it replaces
    /// (the events of the history before the latest compaction are only counted).
    pub fn prompt_before(&mut self, v: &Value) {
        self.prompts.push(text(data(v).get("content")));
    }

    /// Adds event `v` of kind `ev`.
    pub fn push(&mut self, ev: Ev, v: &Value) {
        let d = data(v);
        match ev {
            Ev::User => {
                self.close();
                self.prompts.push(text(d.get("content")));
                self.out.push(user_message(d, self.assets));
            }
            Ev::Assistant => {
                self.close();
                let (m, calls) = assistant_message(d);
                self.out.push(m);
                if !calls.is_empty() {
                    self.open = Some(Open {
                        calls,
                        results: HashMap::new(),
                    });
                }
            }
            Ev::ToolResult => {
                let id = text(d.get("toolCallId"));
                if let Some(o) = &mut self.open
                    && o.calls.iter().any(|c| c.id == id)
                {
                    o.results.insert(id, tool_text(d));
                }
            }
            // An interrupted turn ends its calls as the live process did: a call without a
            // result gets the short text, and no mark (measured: a `bash` call cut by
            // Esc Esc in the TUI).
            Ev::Abort => self.close_with(Some(INTERRUPTED_VIEW)),
            Ev::Compaction => {
                self.open = None;
                self.out.clear();
                self.out.push(json!({
                    "role": "user",
                    "content": summary_text(&self.prompts, &text(d.get("summaryContent"))),
                }));
            }
            _ => {}
        }
    }

    /// The messages.
    pub fn finish(mut self) -> Vec<Value> {
        self.close();
        self.out
    }

    /// The tool messages of the open calls, made up where a result is missing.
    fn close(&mut self) {
        self.close_with(None);
    }

    /// [`Self::close`]; with `aborted`, a missing result is that text, unmarked.
    fn close_with(&mut self, aborted: Option<&str>) {
        let Some(mut o) = self.open.take() else {
            return;
        };
        for c in o.calls {
            let (content, source) = match (o.results.remove(&c.id), aborted) {
                (Some(r), _) => (r, c.source),
                (None, Some(t)) => (Value::String(t.to_string()), None),
                (None, None) => (
                    Value::String(
                        if c.name == "view" {
                            INTERRUPTED_VIEW
                        } else {
                            INTERRUPTED
                        }
                        .to_string(),
                    ),
                    c.source,
                ),
            };
            let mut m = Map::new();
            m.insert("role".into(), Value::String("tool".into()));
            m.insert("tool_call_id".into(), Value::String(c.id));
            m.insert("content".into(), content);
            if let Some(src) = source {
                m.insert("__copilotMessageSource".into(), src);
            }
            self.out.push(Value::Object(m));
        }
    }
}

fn data(v: &Value) -> &Value {
    v.get("data").unwrap_or(&Value::Null)
}

fn text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    }
}

/// A user message: its `transformedContent` (else `content`), with its images as parts.
fn user_message(d: &Value, assets: &Assets<'_>) -> Value {
    let body = match d.get("transformedContent") {
        Some(Value::String(s)) => Value::String(s.clone()),
        _ => d
            .get("content")
            .cloned()
            .unwrap_or(Value::String(String::new())),
    };
    let images: Vec<&Value> = d
        .get("attachments")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter(|x| is_image(x)).collect())
        .unwrap_or_default();
    if images.is_empty() {
        return json!({"role": "user", "content": body});
    }
    let mut parts = vec![json!({"type": "text", "text": body})];
    for a in images {
        parts.push(json!({
            "type": "text",
            "text": format!("Image file at path {}", text(a.get("path"))),
        }));
        if let Some((mime, b64)) = a.get("assetId").and_then(Value::as_str).and_then(assets) {
            let mime = if mime.is_empty() {
                text(a.get("mimeType"))
            } else {
                mime
            };
            parts.push(json!({
                "type": "image_url",
                "image_url": {"url": format!("data:{mime};base64,{b64}")},
            }));
        }
    }
    json!({"role": "user", "content": parts})
}

/// Whether an attachment is an image the request carries.
pub fn is_image(a: &Value) -> bool {
    a.get("assetId").is_some_and(Value::is_string)
        && a.get("mimeType")
            .and_then(Value::as_str)
            .is_some_and(|m| m.starts_with("image/"))
}

/// An assistant message and its calls.
fn assistant_message(d: &Value) -> (Value, Vec<Call>) {
    let content = text(d.get("content"));
    let reqs: &[Value] = d
        .get("toolRequests")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let mut m = Map::new();
    m.insert("role".into(), Value::String("assistant".into()));
    if reqs.is_empty() {
        m.insert("content".into(), Value::String(content));
        return (Value::Object(m), Vec::new());
    }
    m.insert(
        "content".into(),
        if content.is_empty() {
            Value::Null
        } else {
            Value::String(content)
        },
    );
    let mut calls = Vec::new();
    let mut tool_calls = Vec::new();
    for r in reqs {
        let id = text(r.get("toolCallId"));
        let name = r
            .get("name")
            .cloned()
            .unwrap_or(Value::String(String::new()));
        let args = r.get("arguments");
        let arguments = match args {
            None | Some(Value::Null) => "{}".to_string(),
            // Sent as written (measured with a string for arguments).
            Some(Value::String(a)) => a.clone(),
            Some(a) => js_stringify(a),
        };
        tool_calls.push(json!({
            "id": id,
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }));
        calls.push(Call {
            id,
            source: message_source(&name, args, r.get("intentionSummary")),
            name,
        });
    }
    m.insert("tool_calls".into(), Value::Array(tool_calls));
    (Value::Object(m), calls)
}

/// The mark the CLI puts on the tool message of a call (`__copilotMessageSource`): a
/// `task` call with a string `agent_type` is a subagent's, another `task` call has none,
/// any other is a tool's; `summary` is a string `intentionSummary`.
fn message_source(name: &Value, args: Option<&Value>, summary: Option<&Value>) -> Option<Value> {
    let mut m = Map::new();
    if name == "task" {
        let agent = args
            .and_then(|a| a.get("agent_type"))
            .filter(|a| a.is_string())?;
        m.insert("kind".into(), Value::String("subagent".into()));
        m.insert("name".into(), agent.clone());
    } else {
        m.insert("kind".into(), Value::String("tool".into()));
        m.insert("name".into(), name.clone());
    }
    if let Some(s @ Value::String(_)) = summary {
        m.insert("summary".into(), s.clone());
    }
    Some(Value::Object(m))
}

/// What a tool message carries: the result's `content`, or the error's `message` (§5).
pub fn tool_text(d: &Value) -> Value {
    let r = d.get("result").and_then(|r| r.get("content"));
    let e = d.get("error").and_then(|e| e.get("message"));
    match (d.get("success"), r, e) {
        (Some(Value::Bool(false)), _, Some(m)) => m.clone(),
        (_, Some(c), _) => c.clone(),
        (_, None, Some(m)) => m.clone(),
        _ => Value::String(String::new()),
    }
}

/// The user message a compaction leaves (§6.3).
pub fn summary_text(prompts: &[String], summary: &str) -> String {
    let mut s = String::from(SUMMARIZED);
    s.push_str(
        "\n\nYou were originally given instructions from a user over one or more turns. \
         Here were the user messages:\n",
    );
    for p in prompts {
        s.push_str("<user_message>\n");
        s.push_str(p);
        s.push_str("\n</user_message>\n");
    }
    s.push_str("\nHere is a summary of the prior context:\n<summary>\n");
    s.push_str(summary);
    s.push_str("\n</summary>\n");
    s
}
