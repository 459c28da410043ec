//! Entries and contexts as readable text (GEMINI-FORMAT §2.2, §5).
//!
//! The conventions are the mount's (see `core::genai` for parts): text verbatim,
//! markers as whole lines in square brackets, tool calls with their arguments as
//! indented JSON, images as placeholders naming their `image-N.EXT` file, every KIND
//! file ending in `\n`. KIND is `user`, `toolResult` (a user record of function
//! responses), `compaction` (the summary a compressed history starts from),
//! `assistant` (a `gemini` record), `info`, `error`, `warning`, or an unknown type as
//! written.
//!
//! A `gemini` record written live holds the model's thoughts (`thoughts`), its text,
//! and its tool calls with their results (`toolCalls`); the results are also the
//! content of the user record that follows (the CLI sends both, §5.3), which is where
//! they are shown, so that `grep -r` meets each output once per record that holds it
//! as a message. The reply's KIND file shows thoughts, text and each call with its
//! arguments and status, and names the subagent a call ran.

use crate::model::core::genai::{self, content_chunks};
use crate::model::core::js::{js_stringify, js_stringify_pretty};
use crate::model::core::text::{
    Image, PREVIEW_CHARS, finish, join_chunks, one_line, text_of, truncate_chars,
};
use serde_json::Value;

fn ty(v: &Value) -> &str {
    v.get("type").and_then(Value::as_str).unwrap_or("")
}

/// The `[thinking]` blocks of a live record's `thoughts`.
fn thought_chunks(v: &Value) -> Vec<String> {
    let Some(Value::Array(ts)) = v.get("thoughts") else {
        return Vec::new();
    };
    ts.iter()
        .map(|t| {
            let subject = text_of(t.get("subject"));
            let description = text_of(t.get("description"));
            let text = match (subject.is_empty(), description.is_empty()) {
                (true, _) => description,
                (false, true) => format!("**{subject}**"),
                (false, false) => format!("**{subject}** {description}"),
            };
            format!("[thinking]\n{text}")
        })
        .collect()
}

/// A tool call of a live record: `[tool call NAME (ID)]`, its arguments, and what
/// became of it when it did not succeed; a subagent it ran is named.
fn call_chunk(c: &Value) -> String {
    let mut s = format!(
        "[tool call {} ({})]",
        text_of(c.get("name")),
        text_of(c.get("id"))
    );
    if let Some(a) = c.get("args") {
        s.push('\n');
        s.push_str(&js_stringify_pretty(a));
    }
    match c.get("status").and_then(Value::as_str) {
        None | Some("success") => {}
        Some(st) => s.push_str(&format!("\n[status: {st}]")),
    }
    if let Some(a) = c.get("agentId").and_then(Value::as_str) {
        s.push_str(&format!("\n[subagent agent-{a}]"));
    }
    s
}

/// The KIND file of a record: never empty, ending in `\n`. `kind` is its KIND.
pub fn render_entry(v: &Value, kind: &str) -> String {
    let mut n = 0;
    let content = v.get("content").unwrap_or(&Value::Null);
    let body = match ty(v) {
        "user" => {
            let chunks = content_chunks(content, true, &mut n);
            let body = join_chunks(&chunks);
            if kind == "compaction" {
                format!("[compaction: the history after it starts over from this summary]\n{body}")
            } else {
                body
            }
        }
        "gemini" => {
            let mut chunks = thought_chunks(v);
            chunks.extend(
                content_chunks(content, true, &mut n)
                    .into_iter()
                    .filter(|c| !c.is_empty()),
            );
            if let Some(Value::Array(calls)) = v.get("toolCalls") {
                chunks.extend(calls.iter().map(call_chunk));
            }
            join_chunks(&chunks)
        }
        "info" | "error" | "warning" => join_chunks(&content_chunks(content, true, &mut n)),
        _ => js_stringify_pretty(v),
    };
    if body.trim().is_empty() {
        "(no content)\n".to_string()
    } else {
        finish(body)
    }
}

/// The images of a record, decoded, in the order of its placeholders.
pub fn images(v: &Value) -> Vec<Image> {
    match ty(v) {
        "user" | "gemini" | "info" | "error" | "warning" => {
            genai::images(v.get("content").unwrap_or(&Value::Null))
        }
        _ => Vec::new(),
    }
}

/// A tool call's arguments in a few words: the command, path or pattern when it has
/// one, else its JSON.
fn args_gist(a: Option<&Value>) -> String {
    let Some(a) = a else {
        return String::new();
    };
    for k in [
        "command",
        "file_path",
        "dir_path",
        "path",
        "pattern",
        "prompt",
        "query",
        "url",
        "description",
    ] {
        if let Some(Value::String(s)) = a.get(k) {
            return s.clone();
        }
    }
    js_stringify(a)
}

/// The one-line preview of a record in `tree`: its KIND, then its text, the calls it
/// makes (`→ NAME ARGS`) and the tool results it holds.
pub fn preview(v: &Value, kind: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    let content = v.get("content").unwrap_or(&Value::Null);
    let each_part = |p: &Value, parts: &mut Vec<String>| {
        if let Some(c) = p.get("functionCall") {
            parts.push(format!(
                "→ {} {}",
                text_of(c.get("name")),
                args_gist(c.get("args"))
            ));
        } else if let Some(r) = p.get("functionResponse") {
            let resp = r.get("response");
            let (err, text) = match resp {
                Some(x) if x.get("error").is_some() => ("[error] ", text_of(x.get("error"))),
                Some(x) => ("", text_of(x.get("output").or(Some(x)))),
                None => ("", String::new()),
            };
            parts.push(format!("{} {err}{text}", text_of(r.get("name"))));
        } else if p.get("inlineData").is_some() {
            parts.push("[image]".into());
        } else if genai::is_thought(p) {
            parts.push(format!("[thinking] {}", text_of(p.get("text"))));
        } else {
            parts.push(genai::part_to_string(p, false));
        }
    };
    match content {
        Value::Array(ps) => ps.iter().for_each(|p| each_part(p, &mut parts)),
        Value::Null => {}
        other => each_part(other, &mut parts),
    }
    if let Some(Value::Array(calls)) = v.get("toolCalls") {
        for c in calls {
            parts.push(format!(
                "→ {} {}",
                text_of(c.get("name")),
                args_gist(c.get("args"))
            ));
        }
    }
    let raw = format!("{kind}: {}", parts.join(" "));
    truncate_chars(&one_line(&raw), PREVIEW_CHARS)
}

/// The readable `context`: each content under `## ROLE`, its parts as a KIND file
/// reads them (image placeholders without a file name), then a blank line.
pub fn render_context(contents: &[Value]) -> String {
    let mut out = String::new();
    for c in contents {
        let role = c.get("role").and_then(Value::as_str).unwrap_or("content");
        out.push_str("## ");
        out.push_str(&one_line(role));
        out.push('\n');
        let mut n = 0;
        let chunks: Vec<String> =
            content_chunks(c.get("parts").unwrap_or(&Value::Null), false, &mut n)
                .into_iter()
                .filter(|c| !c.is_empty())
                .collect();
        let body = join_chunks(&chunks);
        out.push_str(&if body.trim().is_empty() {
            "(no content)\n".to_string()
        } else {
            finish(body)
        });
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_live_reply_shows_thoughts_text_and_calls() {
        let v = json!({"id":"g","type":"gemini","content":"Let me look.",
            "thoughts":[{"subject":"Looking around","description":"files first.","timestamp":"t"}],
            "toolCalls":[{"id":"ls__1","name":"ls","args":{"dir_path":"."},"status":"success",
                          "result":[{"functionResponse":{"id":"ls__1","name":"ls","response":{"output":"a"}}}]},
                         {"id":"x__2","name":"x","args":{},"status":"error"}]});
        assert_eq!(
            render_entry(&v, "assistant"),
            "[thinking]\n**Looking around** files first.\n\nLet me look.\n\n\
             [tool call ls (ls__1)]\n{\n  \"dir\": \".\"\n}\n\n[tool call x (x__2)]\n{}\n[status: error]\n"
                .replace("\"dir\"", "\"dir_path\"")
        );
        assert_eq!(
            preview(&v, "assistant"),
            "assistant: Let me look. → ls . → x {}"
        );
        assert_eq!(
            render_entry(&json!({"id":"i","type":"info","content":""}), "info"),
            "(no content)\n"
        );
    }
}
