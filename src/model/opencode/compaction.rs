//! The summary request opencode sends when it compacts (OPENCODE-FORMAT.md §5.5), as
//! 1.18.33's `SessionCompaction.process` builds it.
//!
//! The conversation (less the compaction requests that have a summary, whose latest
//! summary becomes the "prior summary") is split into a head, summarised, and a tail of
//! recent turns kept as they are: turns (a user message and what follows it) are
//! taken from the newest while they fit `compaction.preserve_recent_tokens` (by
//! default a quarter of the usable context, between 2,000 and 15,000 tokens, counted
//! as opencode estimates them: a quarter of the characters of the turn's messages as
//! JSON). When everything fits, everything is the head. The head is written out as
//! text (`[User]: …`, `[Assistant]: …`, `[Assistant tool call]: name(input)`,
//! `[Tool result]: …` cut at 2,000 characters) inside `<conversation>`, followed by
//! the instructions and the template of the summary.
//!
//! Where the token estimate decides the head and the tail, sessionfs counts what the
//! AI SDK's model messages would hold; only a session whose recent turns come within
//! a few characters of the budget could be split one message differently.

use super::config::Config;
use super::messages::{ModelRef, Msg};
use crate::model::core::js::js_stringify;
use serde_json::{Value, json};

/// The template and rules every summary request ends with.
const TEMPLATE: &str = "Output exactly the Markdown structure shown inside <template> and keep the section order unchanged. Do not include the <template> tags in your response.
<template>
## Objective
- [one or two brief sentences describing what the user is trying to accomplish]

## Important Details
- [constraints/preferences, decisions and why, important facts/assumptions, exact context needed to continue, or \"(none)\"]

## Work State
### Completed
- [finished work, verified facts, or changes made; otherwise \"(none)\"]

### Active
- [current work, partial changes, or investigation state; otherwise \"(none)\"]

### Blocked
- [blockers, failing commands, or unknowns; otherwise \"(none)\"]

## Next Move
1. [immediate concrete action, or \"(none)\"]
2. [next action if known, or \"(none)\"]

## Relevant Files
- [file or directory path: why it matters, or \"(none)\"]
</template>

Rules:
- Keep every section, even when empty.
- Use terse bullets, not prose paragraphs.
- Preserve exact file paths, symbols, commands, error strings, URLs, and identifiers when known.
- Do not mention the summary process or that context was compacted.";

/// What combining a prior summary with the new conversation asks.
const COMBINE: &str = "The <prior-summary> summarizes everything that happened before the <conversation>. Construct a new summary that combines both. The <prior-summary> is discarded after this: anything you do not carry into the new summary is lost.

When combining:
- Carry forward objectives, constraints, user directives, decisions, and parallel workstreams from the <prior-summary> even when the <conversation> does not mention them. Drop only what is finished and no longer needed.
- The <conversation> is more recent than the <prior-summary>. Where they conflict, the conversation wins: state the corrected fact and drop the old claim.
- Add new progress, decisions, constraints, and context from the conversation.
- Move completed work from \"Active\" to \"Completed\".
- If a blocker has been resolved, update the summary to reflect that while keeping any details still needed to continue the work.
- Update \"Objective\" and \"Next Move\" to reflect the current work state.";

fn ty(p: &Value) -> &str {
    p.get("type").and_then(Value::as_str).unwrap_or("")
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

fn role(m: &Msg) -> &str {
    s(&m.info, "role")
}

/// JavaScript's `s.length` (UTF-16 code units).
fn js_len(t: &str) -> usize {
    t.encode_utf16().count()
}

/// A tool result as the summary shows it: cut at 2,000 characters.
fn cut(t: &str) -> String {
    if js_len(t) <= 2000 {
        return t.to_string();
    }
    let units: Vec<u16> = t.encode_utf16().take(2000).collect();
    format!("{}\n[truncated]", String::from_utf16_lossy(&units))
}

/// One message of the conversation as text (empty when it shows nothing).
fn message_text(m: &Msg) -> String {
    if role(m) == "user" {
        let text: Vec<&str> = m
            .parts
            .iter()
            .filter(|p| ty(p) == "text" && !crate::model::core::js::js_truthy(p.get("ignored")))
            .map(|p| s(p, "text"))
            .filter(|t| !t.is_empty())
            .collect();
        let text = text.join("\n");
        let mut lines = Vec::new();
        if !text.is_empty() {
            lines.push(format!("[User]: {text}"));
        }
        for p in m.parts.iter().filter(|p| ty(p) == "file") {
            let name = p.get("filename").and_then(Value::as_str).unwrap_or("file");
            lines.push(format!("[Attached {}: {name}]", s(p, "mime")));
        }
        return lines.join("\n");
    }
    let mut lines = Vec::new();
    for o in &m.parts {
        match ty(o) {
            "text" if !s(o, "text").is_empty() => {
                lines.push(format!("[Assistant]: {}", s(o, "text")))
            }
            "reasoning" if !s(o, "text").is_empty() => {
                lines.push(format!("[Assistant reasoning]: {}", s(o, "text")))
            }
            "tool" => {
                let state = o.get("state").cloned().unwrap_or(Value::Null);
                let input = state.get("input").cloned().unwrap_or(Value::Null);
                let call = format!(
                    "[Assistant tool call]: {}({})",
                    s(o, "tool"),
                    js_stringify(&input)
                );
                match s(&state, "status") {
                    "completed" => {
                        let compacted = state
                            .get("time")
                            .and_then(|t| t.get("compacted"))
                            .is_some_and(|c| crate::model::core::js::js_truthy(Some(c)));
                        let body = if compacted {
                            "[Old tool result content cleared]".to_string()
                        } else {
                            let mut all = vec![s(&state, "output").to_string()];
                            for a in state
                                .get("attachments")
                                .and_then(Value::as_array)
                                .into_iter()
                                .flatten()
                            {
                                let name =
                                    a.get("filename").and_then(Value::as_str).unwrap_or("file");
                                all.push(format!("[Attached {}: {name}]", s(a, "mime")));
                            }
                            cut(&all.join("\n"))
                        };
                        lines.push(call);
                        lines.push(format!("[Tool result]: {body}"));
                    }
                    "error" => {
                        lines.push(call);
                        lines.push(format!(
                            "[Tool error]: {}",
                            crate::model::core::text::text_of(state.get("error"))
                        ));
                    }
                    _ => lines.push(call),
                }
            }
            _ => {}
        }
    }
    lines.join("\n")
}

/// The text of a summary message: its text parts, trimmed, joined.
fn summary_text(m: &Msg) -> String {
    let t: Vec<&str> = m
        .parts
        .iter()
        .filter(|p| ty(p) == "text")
        .map(|p| s(p, "text").trim())
        .filter(|t| !t.is_empty())
        .collect();
    t.join("\n\n").trim().to_string()
}

/// An estimate of a run of messages as opencode makes it: a quarter of the length of
/// the JSON of their model messages.
fn estimate(msgs: &[Msg], model: &ModelRef) -> usize {
    let mut len = 0;
    for v in model_messages(msgs, model) {
        len += js_len(&js_stringify(&v));
    }
    // The array's brackets and commas.
    let n = msgs.len();
    len += 2 + n.saturating_sub(1);
    ((len as f64) / 4.0).round() as usize
}

/// The AI SDK's model messages of `msgs`, as far as their size goes.
fn model_messages(msgs: &[Msg], model: &ModelRef) -> Vec<Value> {
    let chat = super::messages::chat_messages(msgs, model);
    chat.into_iter()
        .map(|m| match s(&m, "role") {
            "user" => match m.get("content") {
                Some(Value::String(t)) => {
                    json!({"role": "user", "content": [{"type": "text", "text": t}]})
                }
                _ => m,
            },
            "tool" => json!({"role": "tool", "content": [{"type": "tool-result",
                "toolCallId": s(&m, "tool_call_id"), "toolName": "tool",
                "output": {"type": "text", "value": s(&m, "content")}}]}),
            _ => {
                let mut content = Vec::new();
                if let Some(r) = m.get("reasoning_content") {
                    content.push(json!({"type": "reasoning", "text": r}));
                }
                let t = s(&m, "content");
                if !t.is_empty() {
                    content.push(json!({"type": "text", "text": t}));
                }
                for c in m
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let f = c.get("function").cloned().unwrap_or(Value::Null);
                    let input: Value =
                        serde_json::from_str(s(&f, "arguments")).unwrap_or(Value::Null);
                    content.push(json!({"type": "tool-call", "toolCallId": s(c, "id"),
                        "toolName": s(&f, "name"), "input": input}));
                }
                json!({"role": "assistant", "content": content})
            }
        })
        .collect()
}

/// The head of `msgs` (see the module docs): the messages summarised.
fn head<'a>(msgs: &'a [Msg], model: &ModelRef, config: &Config) -> &'a [Msg] {
    let c = config.compaction();
    if c.tail_turns.is_some_and(|t| t <= 0) {
        return msgs;
    }
    let usable = config
        .limits(&model.provider, &model.model)
        .map_or(0, |l| l.usable(&c));
    let budget = c
        .preserve_recent_tokens
        .unwrap_or_else(|| 15_000.min(2_000.max(usable / 4))) as usize;
    // Turns: each user message that is no compaction request, to the next.
    let mut turns: Vec<(usize, usize)> = Vec::new();
    for (k, m) in msgs.iter().enumerate() {
        if role(m) == "user" && !m.parts.iter().any(|p| ty(p) == "compaction") {
            if let Some(last) = turns.last_mut() {
                last.1 = k;
            }
            turns.push((k, msgs.len()));
        }
    }
    if turns.is_empty() {
        return msgs;
    }
    let considered = match c.tail_turns {
        Some(t) if (t as usize) < turns.len() => &turns[turns.len() - t as usize..],
        _ => &turns[..],
    };
    let mut used = 0;
    let mut start: Option<usize> = None;
    for &(a, b) in considered.iter().rev() {
        let size = estimate(&msgs[a..b], model);
        if used + size <= budget {
            used += size;
            start = Some(a);
            continue;
        }
        let left = budget - used;
        if left > 0 && b - a > 1 {
            for o in a + 1..b {
                if estimate(&msgs[o..b], model) <= left {
                    start = Some(o);
                    break;
                }
            }
        }
        break;
    }
    match start {
        None | Some(0) => msgs,
        Some(k) => &msgs[..k],
    }
}

/// The summary request's messages when opencode compacts after `c` (the messages it
/// would send, compactions applied), without the new prompt.
pub fn summary_request(c: &[Msg], model: &ModelRef, config: &Config) -> Vec<Value> {
    // The compaction requests that have a finished summary, and the latest summary.
    let mut paired = vec![false; c.len()];
    let mut prior: Option<String> = None;
    for (k, m) in c.iter().enumerate() {
        if role(m) != "assistant"
            || !crate::model::core::js::js_truthy(m.info.get("summary"))
            || !crate::model::core::js::js_truthy(m.info.get("finish"))
            || crate::model::core::js::js_truthy(m.info.get("error"))
        {
            continue;
        }
        let parent = s(&m.info, "parentID");
        if let Some(u) = c.iter().position(|x| {
            role(x) == "user"
                && s(&x.info, "id") == parent
                && x.parts.iter().any(|p| ty(p) == "compaction")
        }) {
            paired[u] = true;
            paired[k] = true;
            prior = Some(summary_text(m));
        }
    }
    let rest: Vec<Msg> = c
        .iter()
        .zip(&paired)
        .filter(|(_, p)| !**p)
        .map(|(m, _)| m.clone())
        .collect();
    let head = head(&rest, model, config);
    let texts: Vec<String> = head
        .iter()
        .map(message_text)
        .filter(|t| !t.is_empty())
        .collect();
    let conversation = format!(
        "Here is the conversation so far:\n\n<conversation>\n{}\n</conversation>",
        texts.join("\n\n")
    );
    let text = match prior {
        None => [
            conversation.as_str(),
            "Create a new anchored summary from the conversation history in the <conversation> tags above so another coding agent can continue the work.",
            TEMPLATE,
        ]
        .join("\n\n"),
        Some(p) => [
            conversation,
            format!(
                "Here is the summary of the conversation before the <conversation> above:\n\n<prior-summary>\n{p}\n</prior-summary>"
            ),
            COMBINE.to_string(),
            TEMPLATE.to_string(),
        ]
        .join("\n\n"),
    };
    vec![json!({"role": "user", "content": text})]
}
