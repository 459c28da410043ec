//! Readable text for Qwen Code records and contexts.
//!
//! The conventions of every agent's KIND files (message text verbatim, markers as
//! whole lines in square brackets, tool calls with their arguments as indented JSON,
//! images as placeholders naming their `image-N.EXT` file, every file ending in `\n`),
//! with the parts rendered by [`crate::model::core::genai`]. What is particular to
//! Qwen Code:
//!
//! * a user record Qwen Code wrote itself (a `<task-notification>`, a cron prompt)
//!   starts with `[SUBTYPE]`;
//! * `system` records say what they keep in their own words: a compression its
//!   trigger, token counts and the history that replaces what came before (each
//!   content under `## ROLE`), a rewind how many entries it dropped, a title its
//!   source, an API response its model, tokens and time; the others (snapshots,
//!   slash commands) their `systemPayload` as JSON under `[SUBTYPE]`;
//! * `tree` shows the first text of a message (`call NAME(ARGS)`, `result NAME`) and a
//!   few words for a bookkeeping record.

use super::{RType, State, nflags};
use crate::model::core::genai;
use crate::model::core::js::{js_stringify, js_stringify_pretty};
use crate::model::core::session::{NO_TIME, Session};
use crate::model::core::text::{
    Image, PREVIEW_CHARS, finish, join_chunks, one_line, text_of, truncate_chars,
};
use serde_json::Value;

fn str_of<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

fn payload(v: &Value) -> &Value {
    v.get("systemPayload").unwrap_or(&Value::Null)
}

fn message_parts(v: &Value) -> &[Value] {
    genai::parts(v.get("message"))
}

/// A count with thousands separators: `13,861`.
fn count(v: Option<&Value>) -> String {
    let Some(n) = v.and_then(Value::as_f64) else {
        return "?".into();
    };
    let s = format!("{}", n as i64);
    let (sign, digits) = s.strip_prefix('-').map_or(("", s.as_str()), |d| ("-", d));
    let mut out = String::new();
    for (k, c) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    format!("{sign}{out}")
}

/// One `ui_telemetry` event, on one line.
fn telemetry_line(ev: &Value) -> String {
    let name = str_of(ev, "event.name").unwrap_or("");
    let model = str_of(ev, "model").unwrap_or("");
    match name {
        "qwen-code.api_response" => format!(
            "[api response {model}: input {} (cached {}), output {} (thoughts {}), {} ms]",
            count(ev.get("input_token_count")),
            count(ev.get("cached_content_token_count")),
            count(ev.get("output_token_count")),
            count(ev.get("thoughts_token_count")),
            count(ev.get("duration_ms")),
        ),
        "qwen-code.api_error" => format!(
            "[api error {model}: {}{}]",
            str_of(ev, "error_message").unwrap_or(""),
            ev.get("status_code")
                .filter(|c| !c.is_null())
                .map(|c| format!(" (status {})", text_of(Some(c))))
                .unwrap_or_default(),
        ),
        "qwen-code.tool_call" => format!(
            "[tool call {} ({}): {}, {} ms]",
            str_of(ev, "function_name").unwrap_or(""),
            str_of(ev, "call_id").unwrap_or(""),
            str_of(ev, "status").unwrap_or(""),
            count(ev.get("duration_ms")),
        ),
        n => format!("[telemetry {n}]"),
    }
}

/// The KIND file of a `system` record.
fn render_system(v: &Value, subtype: &str) -> String {
    let p = payload(v);
    match subtype {
        "chat_compression" => {
            let info = p.get("info").unwrap_or(&Value::Null);
            let mut s = format!(
                "[compression{}: {} → {} tokens]",
                str_of(info, "triggerReason")
                    .map(|t| format!(" ({t})"))
                    .unwrap_or_default(),
                count(info.get("originalTokenCount")),
                count(info.get("newTokenCount")),
            );
            match p.get("compressedHistory") {
                Some(Value::Array(h)) => {
                    s.push_str(&format!(
                        "\n[the history from here on starts with these {} contents]\n",
                        h.len()
                    ));
                    let mut n = 0;
                    for c in h {
                        s.push_str(&format!("\n## {}\n", one_line(&text_of(c.get("role")))));
                        s.push_str(&join_chunks(&genai::part_chunks(
                            genai::parts(Some(c)),
                            false,
                            &mut n,
                        )));
                    }
                }
                _ => s.push_str("\n[no compressed history: Qwen Code does not use it]"),
            }
            s
        }
        "rewind" => format!(
            "[rewind: {} history entries dropped; the conversation goes on from the record before]",
            text_of(p.get("truncatedCount"))
        ),
        "custom_title" => format!(
            "[title{}]\n{}",
            str_of(p, "titleSource")
                .map(|t| format!(", {t}"))
                .unwrap_or_default(),
            text_of(p.get("customTitle"))
        ),
        "ui_telemetry" => match p.get("uiEvent") {
            Some(ev) => format!("{}\n{}", telemetry_line(ev), js_stringify_pretty(ev)),
            None => format!("[ui_telemetry]\n{}", js_stringify_pretty(p)),
        },
        "" => format!("[system]\n{}", js_stringify_pretty(v)),
        sub => format!("[{sub}]\n{}", js_stringify_pretty(p)),
    }
}

/// The KIND file of entry `i` and its images.
pub fn render_entry(_s: &Session, st: &State, i: u32, v: &Value) -> (String, Vec<Image>) {
    let Some(n) = st.node(i) else {
        return (finish(js_stringify_pretty(v)), Vec::new());
    };
    let subtype = st.subtype(i);
    let mut n_image = 0;
    let body = match n.rtype {
        RType::User | RType::Assistant | RType::ToolResult => {
            let mut chunks = genai::part_chunks(message_parts(v), true, &mut n_image);
            if !n.has(nflags::MESSAGE) {
                chunks.push("[no message: Qwen Code sends nothing for this record]".into());
            }
            let body = join_chunks(&chunks);
            if n.rtype == RType::User && !subtype.is_empty() {
                format!("[{subtype}]\n{body}")
            } else {
                body
            }
        }
        RType::System => render_system(v, subtype),
        RType::Other => format!(
            "[unknown record type: Qwen Code skips it]\n{}",
            js_stringify_pretty(v)
        ),
    };
    let images = match n.rtype {
        RType::User | RType::Assistant | RType::ToolResult => {
            let parts = v.get("message").and_then(|m| m.get("parts"));
            match parts {
                Some(ps @ Value::Array(_)) => genai::images(ps),
                _ => Vec::new(),
            }
        }
        _ => Vec::new(),
    };
    let text = if body.trim().is_empty() {
        "(no content)\n".to_string()
    } else {
        finish(body)
    };
    (text, images)
}

/// The one-line preview of entry `i` in `tree`.
pub fn preview(s: &Session, st: &State, i: u32, v: &Value) -> String {
    let kind = s.kind_name(i);
    let subtype = st.subtype(i);
    let raw = match st.node(i).map(|n| n.rtype) {
        Some(RType::User | RType::Assistant | RType::ToolResult) => {
            let gists: Vec<String> = message_parts(v).iter().map(genai::part_gist).collect();
            format!("{kind}: {}", gists.join(" | "))
        }
        Some(RType::System) => {
            let p = payload(v);
            match subtype {
                "chat_compression" => {
                    let n = p
                        .get("compressedHistory")
                        .and_then(Value::as_array)
                        .map_or(0, Vec::len);
                    format!("{kind}: {n} contents replace the history")
                }
                "rewind" => format!(
                    "{kind}: {} entries dropped",
                    text_of(p.get("truncatedCount"))
                ),
                "custom_title" => format!("title {}", text_of(p.get("customTitle"))),
                "ui_telemetry" => {
                    let ev = p.get("uiEvent").unwrap_or(&Value::Null);
                    match str_of(ev, "event.name").unwrap_or("") {
                        "qwen-code.api_response" => format!(
                            "api response {} {} tokens",
                            str_of(ev, "model").unwrap_or(""),
                            count(ev.get("total_token_count"))
                        ),
                        "qwen-code.api_error" => {
                            format!("api error {}", str_of(ev, "error_message").unwrap_or(""))
                        }
                        "qwen-code.tool_call" => format!(
                            "tool call {} {}",
                            str_of(ev, "function_name").unwrap_or(""),
                            str_of(ev, "status").unwrap_or("")
                        ),
                        other => format!("telemetry {other}"),
                    }
                }
                "slash_command" => format!(
                    "slash command {} ({})",
                    text_of(p.get("rawCommand")),
                    text_of(p.get("phase"))
                ),
                "at_command" => format!("at command {}", text_of(p.get("userText"))),
                "attribution_snapshot" => "attribution snapshot".into(),
                "file_history_snapshot" => "file history snapshot".into(),
                _ => kind.to_string(),
            }
        }
        _ => kind.to_string(),
    };
    truncate_chars(&one_line(&raw), PREVIEW_CHARS)
}

/// The readable `context`: each message under `## ROLE` (`## tool CALL-ID` for a tool
/// result), its content as text (tool calls with their arguments, images as
/// placeholders), then a blank line.
pub fn render_context(msgs: &[Value]) -> String {
    let mut out = String::new();
    for m in msgs {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("message");
        out.push_str("## ");
        out.push_str(&one_line(role));
        if role == "tool" {
            out.push(' ');
            out.push_str(&one_line(&text_of(m.get("tool_call_id"))));
        }
        out.push('\n');
        let mut chunks = Vec::new();
        if let Some(r) = m.get("reasoning_content").and_then(Value::as_str) {
            chunks.push(format!("[thinking]\n{r}"));
        }
        match m.get("content") {
            Some(Value::String(t)) if !t.is_empty() => chunks.push(t.clone()),
            Some(Value::Array(ps)) => {
                for p in ps {
                    chunks.push(content_part_text(p));
                }
            }
            _ => {}
        }
        for tc in m
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let f = tc.get("function").unwrap_or(&Value::Null);
            let mut c = format!(
                "[tool call {} ({})]",
                text_of(f.get("name")),
                text_of(tc.get("id"))
            );
            let args = text_of(f.get("arguments"));
            let pretty = serde_json::from_str::<Value>(&args)
                .map(|a| js_stringify_pretty(&a))
                .unwrap_or(args);
            c.push('\n');
            c.push_str(&pretty);
            chunks.push(c);
        }
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

/// An OpenAI content part as text.
fn content_part_text(p: &Value) -> String {
    match p.get("type").and_then(Value::as_str) {
        Some("text") => text_of(p.get("text")),
        Some("image_url") => {
            let url = p
                .get("image_url")
                .and_then(|u| u.get("url"))
                .and_then(Value::as_str)
                .unwrap_or("");
            match url
                .strip_prefix("data:")
                .and_then(|r| r.split_once(";base64,"))
            {
                Some((mime, data)) => format!(
                    "[image: {mime}, {} bytes]",
                    crate::model::core::base64::decoded_len(data)
                ),
                None => format!("[image: {url}]"),
            }
        }
        Some(t) => format!("[{t}]"),
        None => js_stringify(p),
    }
}

/// `session.json`: an object made from the file (Qwen Code files have no header), one
/// line: `{"format":"qwen-code","sessionId","cwd","version","gitBranch","timestamp"}`,
/// and `forkedFrom` for a fork (`--fork-session`).
pub fn session_json(s: &Session, st: &State) -> String {
    let mut cwd = Value::Null;
    let mut version = Value::Null;
    let mut branch = Value::Null;
    let mut forked = None;
    for i in 0..st.nodes.len().min(s.entries().len()) as u32 {
        if st.nodes[i as usize].file != 0 || !st.nodes[i as usize].is_loaded() {
            continue;
        }
        if let Ok(v) = s.entry_value(i) {
            cwd = v.get("cwd").cloned().unwrap_or(Value::Null);
            version = v.get("version").cloned().unwrap_or(Value::Null);
            branch = v.get("gitBranch").cloned().unwrap_or(Value::Null);
            forked = v.get("forkedFrom").cloned();
            break;
        }
    }
    let ts = match s.header().timestamp_ms {
        NO_TIME => Value::Null,
        ms => Value::String(crate::model::core::time::format_iso_ms(ms)),
    };
    let mut v = serde_json::json!({
        "format": "qwen-code",
        "sessionId": st.session_id.clone().unwrap_or_else(|| s.header().session_id.clone()),
        "cwd": cwd,
        "version": version,
        "gitBranch": branch,
        "timestamp": ts,
    });
    if let Some(f) = forked {
        v["forkedFrom"] = f;
    }
    let mut out = js_stringify(&v);
    out.push('\n');
    out
}
