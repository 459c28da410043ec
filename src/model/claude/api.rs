//! The messages Claude Code sends the model, from a loaded chain.
//!
//! A transcription of Claude Code's request building for its default model, by the
//! rules of one release ([`super::rules`]: 2.1.332, the current one, for every file;
//! 2.1.197's are kept and tested). Written first from 2.1.197
//! (minified names: `otr` puts the per-request context reminder first, `jcm` moves
//! attachments back to the last reply, `Ak` normalises, with `Ctr` rendering
//! attachments, `fum` turning them into `role:"system"` text, `rdr`/`tum`/`jfc`
//! merging user messages, `Zcm`/`Ufc` merging the lines of one reply, `Aum`, `Z8e`,
//! `Hum`, `eum` placing system messages and `Vcm`; then `Cpc` pairs tool calls with
//! results and `xlm`/`klm`/`ypc` give each message its final shape). See
//! CLAUDE-FORMAT.md §8.3–8.6.
//!
//! 2.1.332 sends the texts an attachment line stores (`rendered`): system ones in one
//! `role:"system"` message after the user group, the git attribution in front of it.
//!
//! [`context`] goes one step further, as `claude-oracle/context.sh` does: a new prompt
//! is appended (a context is "what is sent when the next prompt follows"), with the
//! attachments the release makes for it, and then that prompt, what was made for it
//! and the per-request reminder are taken away again. The side effects of the prompt
//! stay, because they really are sent: the `"\n"` added to a text block that the
//! prompt merged after, and (2.1.197) a trailing system message folded into the user
//! message as `<system-reminder>` text, or (2.1.332) system texts still pending before
//! the prompt, sent after it.
//!
//! Not transcribed (nothing in the files seen needs it): the healing of API errors that
//! name rejected media, tool-reference blocks, MCP reminders, the advisor tool, and
//! the media size caps. Attachments render for the types below; other types
//! contribute nothing.

pub use super::messages::merge_user;
use super::messages::{as_blocks, block_type, content, is_true, results_first, set_content};
use super::rules::Rules;
use serde_json::{Value, json};

/// The prompt that stands for "the next prompt" while a context is built.
pub const PROBE: &str = "[[CONTEXT-PROBE]] sessionfs context probe";

/// Stand-ins for the new prompt's own attachments ([`Rules::prompt_attachments`]).
const PROBE_ATTRIBUTION: &str =
    "<system-reminder>\n[[CONTEXT-PROBE]] attribution\n</system-reminder>";
const PROBE_ENVIRONMENT: &str = "[[CONTEXT-PROBE]] environment";

/// The start of the per-request context reminder (`otr`).
const REMINDER: &str = "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# currentDate\nToday's date is 2026-01-01.\n\n      IMPORTANT: this context may or may not be relevant to your tasks. You should not respond to this context unless it is highly relevant to your task.\n</system-reminder>\n";
const REMINDER_PREFIX: &str =
    "<system-reminder>\nAs you answer the user's questions, you can use the following context:";

/// `Xw`.
const NO_CONTENT: &str = "(no content)";
/// `tdr`.
const AMBIENT: &str = "This is ambient context \u{2014} do not narrate it to the user unless they ask or it is directly relevant to their request.";

/// The context of a chain: the messages sent when a new prompt follows its last
/// message, without that prompt (see the module docs), by the rules of one release.
pub fn context(chain: Vec<Value>, rules: &Rules) -> Vec<Value> {
    let model = model_in_use(&chain, rules).to_string();
    let mut list = Vec::with_capacity(chain.len() + 2);
    if rules.date_reminder {
        list.push(super::loader::user_message(
            Value::String(REMINDER.into()),
            true,
        ));
    }
    let stopped = match rules.stopped_agent_note {
        Some(note) => stopped_agents(&chain, note),
        None => Vec::new(),
    };
    list.extend(chain);
    list.extend(stopped);
    list.push(super::loader::user_message(
        Value::String(PROBE.into()),
        false,
    ));
    if rules.prompt_attachments {
        if !has_attribution(&list) {
            list.push(json!({"type": "attachment", "renderedRole": "user",
                "rendered": [{"content": PROBE_ATTRIBUTION}]}));
        }
        list.push(json!({"type": "attachment", "renderedRole": "system",
            "rendered": [{"content": reminder(PROBE_ENVIRONMENT)}]}));
    }
    let msgs = normalize(list, rules);
    let msgs = pair_tool_results(msgs);
    let mut api: Vec<Value> = msgs.iter().map(to_api).collect();
    if let Some((models, effort)) = rules.per_turn_effort
        && models.iter().any(|p| model.starts_with(p))
    {
        per_turn_effort(&mut api, effort);
    }
    strip(api, rules)
}

/// The notifications a resume adds for background agents launched in the chain whose
/// own notification is not in it ([`Rules::stopped_agent_note`]).
fn stopped_agents(chain: &[Value], note: &str) -> Vec<Value> {
    let notified = |id: &str| {
        let tag = format!("<task-id>{id}</task-id>");
        chain.iter().any(|m| {
            m.get("origin")
                .and_then(|o| o.get("kind"))
                .and_then(Value::as_str)
                == Some("task-notification")
                && match content(m) {
                    Some(Value::String(t)) => t.contains(&tag),
                    Some(c) => c.to_string().contains(&tag),
                    None => false,
                }
        })
    };
    let mut out = Vec::new();
    for m in chain {
        let Some(r) = m.get("toolUseResult") else {
            continue;
        };
        if !(is_true(r.get("isAsync"))
            && r.get("status").and_then(Value::as_str) == Some("async_launched"))
        {
            continue;
        }
        let Some(id) = r.get("agentId").and_then(Value::as_str) else {
            continue;
        };
        if notified(id) {
            continue;
        }
        let text = format!(
            "<task-notification>\n<task-id>{id}</task-id>\n<output-file>{}</output-file>\n<status>stopped</status>\n<summary>Background agent \"{}\" didn't finish before the previous session ended</summary>\n<note>{note}</note>\n</task-notification>",
            s(r.get("outputFile")),
            s(r.get("description")),
        );
        let mut u = super::loader::user_message(Value::String(text), false);
        u["origin"] = json!({"kind": "task-notification"});
        out.push(u);
    }
    out
}

/// Does the chain (since its compact summary) hold the git attribution? The CLI writes
/// it for a new prompt only when it does not.
fn has_attribution(list: &[Value]) -> bool {
    list.iter()
        .rev()
        .take_while(|m| !is_true(m.get("isCompactSummary")))
        .any(|m| {
            ty(m) == "attachment"
                && m.get("attachment")
                    .and_then(|a| a.get("type"))
                    .and_then(Value::as_str)
                    == Some("remote_session_change")
        })
}

/// The model a resume of this chain talks to: the model of its last real reply, else
/// the release's default.
fn model_in_use<'a>(chain: &'a [Value], rules: &Rules) -> &'a str {
    chain
        .iter()
        .rev()
        .filter(|m| ty(m) == "assistant")
        .filter_map(|m| m.get("message")?.get("model")?.as_str())
        .find(|m| *m != "<synthetic>")
        .unwrap_or(rules.default_model)
}

/// The per-turn control: `output_config` on the second message, a system message (an
/// empty one is put there when the second message is not a system message).
fn per_turn_effort(api: &mut Vec<Value>, effort: &str) {
    if api.is_empty() {
        return;
    }
    let oc = json!({"effort": effort});
    match api.get_mut(1) {
        Some(m) if m["role"] == "system" => {
            m["output_config"] = oc;
        }
        _ => api.insert(
            1,
            json!({"role": "system", "content": [], "output_config": oc}),
        ),
    }
}

// ----- small helpers ---------------------------------------------------------------------

fn ty(v: &Value) -> &str {
    v.get("type").and_then(Value::as_str).unwrap_or("")
}

/// `mw`.
fn reminder(text: &str) -> String {
    format!("<system-reminder>\n{text}\n</system-reminder>")
}

/// `M8o`: the text inside a `<system-reminder>` wrapper.
pub(crate) fn unwrap_reminder(t: &str) -> &str {
    if let Some(rest) = t.strip_prefix("<system-reminder>")
        && let Some(inner) = rest.strip_suffix("</system-reminder>")
    {
        let inner = inner.strip_prefix('\n').unwrap_or(inner);
        return inner.strip_suffix('\n').unwrap_or(inner);
    }
    t
}

fn api_system(text: String) -> Value {
    json!({"type": "api_system", "message": {"role": "system", "content": text}})
}

fn meta_user(text: String) -> Value {
    super::loader::user_message(Value::String(text), true)
}

// ----- attachments (Ctr) -------------------------------------------------------------------

/// `Ep`: attachment messages are wrapped in `<system-reminder>`.
fn wrap(msgs: Vec<Value>) -> Vec<Value> {
    msgs.into_iter()
        .map(|mut m| {
            match content(&m).cloned() {
                Some(Value::String(s)) => set_content(&mut m, Value::String(reminder(&s))),
                Some(Value::Array(bs)) => {
                    let bs = bs
                        .into_iter()
                        .map(|mut b| {
                            if block_type(&b) == "text" {
                                let t = b.get("text").and_then(Value::as_str).unwrap_or("");
                                b["text"] = Value::String(reminder(t));
                            }
                            b
                        })
                        .collect();
                    set_content(&mut m, Value::Array(bs));
                }
                _ => {}
            }
            m
        })
        .collect()
}

fn s(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => "undefined".into(),
        Some(other) => crate::model::core::js::js_stringify(other),
    }
}

fn lines_of(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().map(|x| s(Some(x))).collect())
        .unwrap_or_default()
}

/// The Read tool's text result: numbered lines.
fn numbered(file: &Value) -> String {
    let text = file.get("content").and_then(Value::as_str).unwrap_or("");
    let start = file.get("startLine").and_then(Value::as_i64).unwrap_or(1);
    text.split('\n')
        .enumerate()
        .map(|(i, l)| format!("{}\t{l}", start + i as i64))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `Ctr`: the messages an attachment stands for (meta user messages).
pub fn attachment_messages(a: &Value) -> Vec<Value> {
    let t = ty(a);
    let one = |text: String| wrap(vec![meta_user(text)]);
    match t {
        "agent_listing_delta" => {
            let mut parts = Vec::new();
            let added = lines_of(a.get("addedLines"));
            let initial = is_true(a.get("isInitial"));
            if !added.is_empty() {
                let head = if initial {
                    "Available agent types for the Agent tool:"
                } else {
                    "New agent types are now available for the Agent tool:"
                };
                parts.push(format!("{head}\n{}", added.join("\n")));
            }
            let removed = lines_of(a.get("removedTypes"));
            if !removed.is_empty() {
                parts.push(format!(
                    "The following agent types are no longer available:\n{}",
                    removed
                        .iter()
                        .map(|r| format!("- {r}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                ));
                parts.push(AMBIENT.into());
            }
            if initial && is_true(a.get("showConcurrencyNote")) {
                parts.push("When you launch multiple agents for independent work, send them in a single message with multiple tool uses so they run concurrently.".into());
            }
            one(parts.join("\n\n"))
        }
        "skill_listing" => match a.get("content") {
            Some(c) if crate::model::core::js::js_truthy(Some(c)) => one(format!(
                "The following skills are available for use with the Skill tool:\n\n{}",
                s(Some(c))
            )),
            _ => Vec::new(),
        },
        "task_reminder" => {
            let tasks: Vec<String> = a
                .get("content")
                .and_then(Value::as_array)
                .map(|ts| {
                    ts.iter()
                        .map(|x| {
                            format!(
                                "#{}. [{}] {}",
                                s(x.get("id")),
                                s(x.get("status")),
                                s(x.get("subject"))
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            let mut r = "The task tools haven't been used recently. If you're working on tasks that would benefit from tracking progress, consider using TaskCreate to add new tasks and TaskUpdate to update task status (set to in_progress when starting, completed when done). Also consider cleaning up the task list if it has become stale. Only use these if relevant to the current work. This is just a gentle reminder - ignore if not applicable.\n".to_string();
            if !tasks.is_empty() {
                r.push_str(&format!(
                    "\n\nHere are the existing tasks:\n\n{}",
                    tasks.join("\n")
                ));
            }
            one(r)
        }
        "todo_reminder" => {
            let todos: Vec<String> = a
                .get("content")
                .and_then(Value::as_array)
                .map(|ts| {
                    ts.iter()
                        .enumerate()
                        .map(|(i, x)| {
                            format!(
                                "{}. [{}] {}",
                                i + 1,
                                s(x.get("status")),
                                s(x.get("content"))
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            let mut r = "The TodoWrite tool hasn't been used recently. If you're working on tasks that would benefit from tracking progress, consider using the TodoWrite tool to track progress. Also consider cleaning up the todo list if has become stale and no longer matches what you are working on. Only use it if it's relevant to the current work. This is just a gentle reminder - ignore if not applicable.\n".to_string();
            if !todos.is_empty() {
                r.push_str(&format!(
                    "\n\nHere are the existing contents of your todo list:\n\n[{}]",
                    todos.join("\n")
                ));
            }
            one(r)
        }
        "file" | "new_file" => {
            let c = a.get("content").cloned().unwrap_or(Value::Null);
            let filename = s(a.get("filename"));
            let call = meta_user(format!(
                "Called the Read tool with the following input: {}",
                crate::model::core::js::js_stringify(&json!({"file_path": filename}))
            ));
            match ty(&c) {
                "text" => {
                    let file = c.get("file").cloned().unwrap_or(Value::Null);
                    let mut v = vec![
                        call,
                        meta_user(format!(
                            "Result of calling the Read tool:\n{}",
                            numbered(&file)
                        )),
                    ];
                    if is_true(a.get("truncated")) {
                        v.push(meta_user(format!("Note: The file {filename} was too large and has been truncated to the first 2000 lines. Don't tell the user about this truncation. Use Read to read more of the file if you need.")));
                    }
                    wrap(v)
                }
                "image" => {
                    let file = c.get("file").cloned().unwrap_or(Value::Null);
                    let block = json!({"type": "image", "source": {
                        "type": "base64",
                        "media_type": file.get("type").cloned().unwrap_or(Value::Null),
                        "data": file.get("base64").cloned().unwrap_or(Value::Null),
                    }});
                    wrap(vec![
                        call,
                        super::loader::user_message(Value::Array(vec![block]), true),
                    ])
                }
                _ => Vec::new(),
            }
        }
        "compact_file_reference" => one(format!(
            "Note: {} was read before the last conversation was summarized, but the contents are too large to include. Use Read tool if you need to access it.",
            s(a.get("filename"))
        )),
        "nested_memory" => {
            let c = a.get("content").cloned().unwrap_or(Value::Null);
            one(format!(
                "Contents of {}:\n\n{}",
                s(c.get("path")),
                s(c.get("content"))
            ))
        }
        "opened_file_in_ide" => one(format!(
            "The user opened the file {} in the IDE. This may or may not be related to the current task.",
            s(a.get("filename"))
        )),
        "plan_file_reference" => one(format!(
            "A plan file exists from plan mode at: {}\n\nPlan contents:\n\n{}\n\nIf this plan is relevant to the current work and not already complete, continue working on it.",
            s(a.get("planFilePath")),
            s(a.get("planContent"))
        )),
        "agent_mention" => one(format!(
            "The user has expressed a desire to invoke the agent \"{}\". Please invoke the agent appropriately, passing in the required context to it. ",
            s(a.get("agentType"))
        )),
        "critical_system_reminder" => one(s(a.get("content"))),
        "date_change" => one(format!(
            "The date has changed. Today's date is now {}. DO NOT mention this to the user explicitly because they are already aware.",
            s(a.get("newDate"))
        )),
        "hook_additional_context" => {
            let c = lines_of(a.get("content"));
            if c.is_empty() {
                return Vec::new();
            }
            vec![meta_user(reminder(&format!(
                "{} hook additional context: {}",
                s(a.get("hookName")),
                c.join("\n")
            )))]
        }
        "hook_stopped_continuation" => vec![meta_user(reminder(&format!(
            "{} hook stopped continuation: {}",
            s(a.get("hookName")),
            s(a.get("message"))
        )))],
        "queued_command" => {
            if is_true(a.get("renderedByBatchHead")) {
                return Vec::new();
            }
            match a.get("prompt") {
                Some(Value::Array(bs)) => {
                    let text: Vec<String> = bs
                        .iter()
                        .filter(|b| block_type(b) == "text")
                        .map(|b| s(b.get("text")))
                        .collect();
                    let mut c = vec![json!({"type": "text", "text": text.join("\n")})];
                    c.extend(bs.iter().filter(|b| block_type(b) == "image").cloned());
                    wrap(vec![super::loader::user_message(Value::Array(c), false)])
                }
                p => wrap(vec![super::loader::user_message(
                    Value::String(s(p)),
                    false,
                )]),
            }
        }
        _ => Vec::new(),
    }
}

/// `fum`: the attachment's messages as one system text, when they are all text.
fn attachment_text(msgs: &[Value]) -> Option<String> {
    let mut t = Vec::new();
    for m in msgs {
        match content(m) {
            Some(Value::String(s)) => t.push(unwrap_reminder(s).to_string()),
            Some(Value::Array(bs)) => {
                for b in bs {
                    if block_type(b) != "text" {
                        return None;
                    }
                    t.push(
                        unwrap_reminder(b.get("text").and_then(Value::as_str).unwrap_or(""))
                            .to_string(),
                    );
                }
            }
            _ => {}
        }
    }
    let n = t.join("\n");
    (!n.trim().is_empty()).then_some(n)
}

// ----- Ak ------------------------------------------------------------------------------------

/// `R8o`: a synthetic API-error reply.
fn is_synthetic_error(m: &Value) -> bool {
    ty(m) == "assistant"
        && is_true(m.get("isApiErrorMessage"))
        && m.get("message")
            .and_then(|x| x.get("model"))
            .and_then(Value::as_str)
            == Some("<synthetic>")
}

/// `B7t`.
fn is_virtual(m: &Value) -> bool {
    matches!(ty(m), "user" | "assistant") && is_true(m.get("isVirtual"))
}

/// `jcm`: attachments move back to just after the previous reply or tool result.
fn move_attachments(list: Vec<Value>) -> Vec<Value> {
    if !list.iter().any(|m| ty(m) == "attachment" || is_virtual(m)) {
        return list;
    }
    let mut r: Vec<Value> = Vec::with_capacity(list.len());
    let mut held: Vec<Value> = Vec::new();
    for m in list.into_iter().rev() {
        if ty(&m) == "attachment" {
            held.push(m);
            continue;
        }
        let stop = ty(&m) == "assistant"
            || (ty(&m) == "user"
                && matches!(content(&m), Some(Value::Array(bs)) if bs.first().is_some_and(|b| block_type(b) == "tool_result")));
        let drop = is_virtual(&m);
        if stop && !held.is_empty() {
            r.append(&mut held);
            if !drop {
                r.push(m);
            }
        } else if !drop {
            r.push(m);
        }
    }
    r.append(&mut held);
    r.reverse();
    r
}

/// `Ufc`: in a reply, tool calls go after the other blocks (unless thinking is
/// interleaved).
fn tool_uses_last(bs: Vec<Value>) -> Vec<Value> {
    let is_call = |i: usize| block_type(&bs[i]) == "tool_use";
    let mut first_call = None;
    let mut out_of_place = false;
    let mut blocked = false;
    let mut prev_thinking = false;
    let mut since_call = false;
    for (i, b) in bs.iter().enumerate() {
        let t = block_type(b);
        if t == "tool_use" {
            if first_call.is_none() {
                first_call = Some(i);
            }
            since_call = true;
        } else if is_call(i) {
            since_call = true;
        } else {
            if first_call.is_some() {
                out_of_place = true;
            }
            let th = t == "thinking" || t == "redacted_thinking";
            if th && prev_thinking && since_call {
                blocked = true;
            }
            prev_thinking = th;
            since_call = false;
        }
    }
    if !out_of_place || blocked {
        return bs;
    }
    let (calls, other): (Vec<Value>, Vec<Value>) =
        bs.into_iter().partition(|b| block_type(b) == "tool_use");
    let mut out = other;
    out.extend(calls);
    out
}

/// `Zcm`: two lines of one reply merged.
fn merge_assistant(a: &Value, b: &Value) -> Value {
    let mut all: Vec<Value> = as_blocks(content(a));
    all.extend(as_blocks(content(b)));
    let all: Vec<Value> = all
        .into_iter()
        .filter(|x| block_type(x) != "text" || x.get("text").is_some_and(Value::is_string))
        .collect();
    let is_th = |x: Option<&Value>| {
        x.is_some_and(|x| matches!(block_type(x), "thinking" | "redacted_thinking"))
    };
    let kept: Vec<Value> = (0..all.len())
        .filter(|&i| {
            let x = &all[i];
            let t = x.get("text").and_then(Value::as_str);
            if block_type(x) != "text" || t.is_none_or(|t| t.is_empty() || !t.trim().is_empty()) {
                return true;
            }
            is_th(i.checked_sub(1).and_then(|p| all.get(p))) && is_th(all.get(i + 1))
        })
        .map(|i| all[i].clone())
        .collect();
    let real = kept
        .iter()
        .any(|x| !matches!(block_type(x), "thinking" | "redacted_thinking"));
    let mut out = a.clone();
    set_content(
        &mut out,
        Value::Array(tool_uses_last(if real { kept } else { all })),
    );
    out
}

/// `Ak` for the default model (attachments as system messages).
fn normalize(list: Vec<Value>, rules: &Rules) -> Vec<Value> {
    let list = if rules.orphan_thinking_first {
        super::loader::drop_orphan_thinking(list)
    } else {
        list
    };
    let list = move_attachments(list);
    let mut g: Vec<Value> = Vec::with_capacity(list.len());
    let mut pending: Vec<String> = Vec::new();
    let mut system_after_user = false;
    let flush = |g: &mut Vec<Value>, pending: &mut Vec<String>, flag: &mut bool| {
        if pending.is_empty() {
            return;
        }
        let k = pending.join("\n\n");
        pending.clear();
        match g.last_mut() {
            Some(last) if ty(last) == "api_system" => {
                let c = last["message"]["content"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                last["message"]["content"] = Value::String(format!("{c}\n\n{k}"));
            }
            Some(last) if ty(last) == "user" => {
                *flag = true;
                g.push(api_system(k));
            }
            _ => g.push(meta_user(reminder(&k))),
        }
    };
    // What the merge of an assistant message looks back over, for each message of `g`
    // (kept in step with it: only the last message changes in place, or one merged
    // into, which stays what it was), so that a long run of tool calls does not make
    // each lookback parse its way through the run again.
    let mut run: Vec<Run> = Vec::with_capacity(list.len());
    // Messages of `g` below this one no longer change.
    let mut settled = 0;
    for k in list {
        run.truncate(settled);
        run.extend(g[settled..].iter().map(Run::of));
        settled = g.len().saturating_sub(1);
        let t = ty(&k).to_string();
        if t == "progress" || is_synthetic_error(&k) {
            continue;
        }
        if t == "system" && k.get("subtype").and_then(Value::as_str) != Some("local_command") {
            continue;
        }
        match t.as_str() {
            "system" => {
                let c = k.get("content").cloned().unwrap_or(Value::Null);
                let c = match c {
                    Value::String(s) if s.is_empty() => Value::String(NO_CONTENT.into()),
                    Value::Null => Value::String(NO_CONTENT.into()),
                    c => c,
                };
                let mut d = json!({"type": "user", "message": {"role": "user", "content": c}});
                if let Some(u) = k.get("uuid") {
                    d["uuid"] = u.clone();
                }
                push_user(&mut g, d);
            }
            "user" => {
                let d = strip_tool_references(k);
                let d = match rules.task_notification {
                    Some(wrap) => task_notification(d, wrap),
                    None => d,
                };
                push_user(&mut g, d);
            }
            "assistant" => {
                let mut k = k;
                // Tool calls are rebuilt as {type, id, name, input} (no tool search here).
                if let Some(Value::Array(bs)) =
                    k.get_mut("message").and_then(|m| m.get_mut("content"))
                {
                    for b in bs.iter_mut() {
                        if block_type(b) == "tool_use" {
                            *b = json!({
                                "type": "tool_use",
                                "id": b.get("id").cloned().unwrap_or(Value::Null),
                                "name": b.get("name").cloned().unwrap_or(Value::Null),
                                "input": b.get("input").cloned().unwrap_or(Value::Null),
                            });
                        }
                    }
                }
                let id = k.get("message").and_then(|m| m.get("id"));
                let mut merged = false;
                for f in (0..g.len()).rev() {
                    match &run[f] {
                        Run::Breaks => break,
                        Run::Passes => {}
                        Run::Assistant(a) if a.as_ref() == id => {
                            g[f] = merge_assistant(&g[f], &k);
                            merged = true;
                            break;
                        }
                        Run::Assistant(_) => {}
                    }
                }
                if !merged {
                    flush(&mut g, &mut pending, &mut system_after_user);
                    let c = as_blocks(content(&k));
                    let is_arr = matches!(content(&k), Some(Value::Array(_)));
                    if is_arr {
                        set_content(&mut k, Value::Array(tool_uses_last(c)));
                    }
                    g.push(k);
                }
            }
            "attachment" => {
                let at = k.get("attachment").and_then(|a| a.get("type"));
                if at
                    .and_then(Value::as_str)
                    .is_some_and(|t| rules.unsent_attachments.contains(&t))
                {
                    continue;
                }
                let msgs = match stored_rendered(&k, rules) {
                    Some(Rendered::System(text)) => {
                        pending.push(text);
                        continue;
                    }
                    Some(Rendered::User(msgs)) => msgs,
                    None => {
                        let msgs = attachment_messages(k.get("attachment").unwrap_or(&Value::Null));
                        if let Some(text) = attachment_text(&msgs) {
                            pending.push(text);
                            continue;
                        }
                        msgs
                    }
                };
                if msgs.is_empty() {
                    continue;
                }
                match g.last_mut() {
                    Some(last) if ty(last) == "user" => {
                        let mut acc = last.clone();
                        for m in &msgs {
                            acc = merge_attachment(&acc, m);
                        }
                        *last = acc;
                    }
                    _ => g.extend(msgs),
                }
            }
            _ => {}
        }
    }
    flush(&mut g, &mut pending, &mut system_after_user);
    let g = super::loader::drop_orphan_thinking(g);
    let g = strip_trailing_thinking(g);
    let g = super::loader::drop_whitespace_assistants(g);
    let g = fill_empty_assistants(g);
    let g = if system_after_user && rules.fold_trailing_system {
        place_system(g)
    } else {
        g
    };
    errors_keep_text(g)
}

/// What an attachment line's stored `rendered` texts send.
enum Rendered {
    /// `renderedRole:"system"`: the texts, unwrapped and joined (`fum`).
    System(String),
    /// `renderedRole:"user"`: meta user messages, as stored (still wrapped).
    User(Vec<Value>),
}

/// The stored rendering of an attachment line, where the release sends it (`None`:
/// the attachment is rendered by [`attachment_messages`], which renders nothing for
/// the types 2.1.332 writes without `rendered`, such as `prompt_snapshot`).
fn stored_rendered(k: &Value, rules: &Rules) -> Option<Rendered> {
    if !rules.stored_rendered {
        return None;
    }
    let Some(Value::Array(rs)) = k.get("rendered") else {
        return None;
    };
    let texts: Vec<&str> = rs
        .iter()
        .filter_map(|r| r.get("content").and_then(Value::as_str))
        .collect();
    if k.get("renderedRole").and_then(Value::as_str) == Some("user") {
        return Some(Rendered::User(
            texts.iter().map(|t| meta_user((*t).to_string())).collect(),
        ));
    }
    let joined = texts
        .iter()
        .map(|t| unwrap_reminder(t))
        .collect::<Vec<_>>()
        .join("\n");
    Some(if joined.trim().is_empty() {
        Rendered::User(Vec::new())
    } else {
        Rendered::System(joined)
    })
}

/// A background task's notification, sent as a system event (the release's wrapper).
fn task_notification(mut m: Value, (before, after): (&str, &str)) -> Value {
    let is_task = m
        .get("origin")
        .and_then(|o| o.get("kind"))
        .and_then(Value::as_str)
        == Some("task-notification");
    if !is_task {
        return m;
    }
    if let Some(Value::String(t)) = content(&m) {
        let wrapped = format!("{before}{t}{after}");
        set_content(&mut m, Value::String(wrapped));
    }
    m
}

/// What an assistant message's merge (in [`normalize`]) sees of an earlier message.
enum Run {
    /// An assistant message, with its `message.id`.
    Assistant(Option<Value>),
    /// Looked past: an `api_system` message, a user message with a tool result.
    Passes,
    /// Ends the lookback.
    Breaks,
}

impl Run {
    fn of(n: &Value) -> Run {
        match ty(n) {
            "assistant" => Run::Assistant(n.get("message").and_then(|m| m.get("id")).cloned()),
            "api_system" => Run::Passes,
            _ if has_tool_result(n) => Run::Passes,
            _ => Run::Breaks,
        }
    }
}

/// `Qcm`: an attachment message merged into a user message (`num`'s plain case).
fn merge_attachment(a: &Value, b: &Value) -> Value {
    let mut out = a.clone();
    let mut bs = as_blocks(content(a));
    bs.extend(as_blocks(content(b)));
    set_content(&mut out, Value::Array(results_first(bs)));
    out
}

fn has_tool_result(m: &Value) -> bool {
    ty(m) == "user"
        && matches!(content(m), Some(Value::Array(bs)) if bs.iter().any(|b| block_type(b) == "tool_result"))
}

fn push_user(g: &mut Vec<Value>, d: Value) {
    match g.last_mut() {
        Some(last) if ty(last) == "user" => {
            let m = merge_user(last, &d);
            *last = m;
        }
        _ => g.push(d),
    }
}

/// `X9o`: tool-reference blocks in tool results are removed (no tool search).
fn strip_tool_references(mut m: Value) -> Value {
    let Some(Value::Array(bs)) = m.get_mut("message").and_then(|x| x.get_mut("content")) else {
        return m;
    };
    for b in bs.iter_mut() {
        if block_type(b) != "tool_result" {
            continue;
        }
        if let Some(Value::Array(inner)) = b.get_mut("content")
            && inner.iter().any(|x| block_type(x) == "tool_reference")
        {
            inner.retain(|x| block_type(x) != "tool_reference");
            if inner.is_empty() {
                inner.push(json!({"type": "text", "text": "[Tool references removed - tool search not enabled]"}));
            }
        }
    }
    m
}

/// `Aum`: thinking at the end of the last reply is dropped.
fn strip_trailing_thinking(mut g: Vec<Value>) -> Vec<Value> {
    let Some(last) = g.last_mut() else { return g };
    if ty(last) != "assistant" {
        return g;
    }
    let Some(Value::Array(bs)) = last.get_mut("message").and_then(|m| m.get_mut("content")) else {
        return g;
    };
    let th = |b: &Value| matches!(block_type(b), "thinking" | "redacted_thinking");
    if !bs.last().is_some_and(th) {
        return g;
    }
    while bs.last().is_some_and(th) {
        bs.pop();
    }
    if bs.is_empty() {
        bs.push(json!({"type": "text", "text": "[No message content]", "citations": []}));
    }
    g
}

/// `Hum`: an empty reply (not the last message) gets "(no content)".
fn fill_empty_assistants(mut g: Vec<Value>) -> Vec<Value> {
    let n = g.len().saturating_sub(1);
    for m in g.iter_mut().take(n) {
        if ty(m) != "assistant" {
            continue;
        }
        if let Some(Value::Array(bs)) = m.get_mut("message").and_then(|x| x.get_mut("content"))
            && bs.is_empty()
        {
            bs.push(json!({"type": "text", "text": NO_CONTENT, "citations": []}));
        }
    }
    g
}

/// `eum`: a system message stays only after a user message and before nothing, a reply
/// or another system message; otherwise it becomes `<system-reminder>` text.
fn place_system(e: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(e.len());
    let mut changed = false;
    for n in 0..e.len() {
        let r = &e[n];
        if ty(r) != "api_system" {
            out.push(r.clone());
            continue;
        }
        let prev_is_system = out.last().is_some_and(|o| ty(o) == "api_system");
        if prev_is_system {
            changed = true;
            let last = out.last_mut().expect("checked");
            let c = last["message"]["content"]
                .as_str()
                .unwrap_or("")
                .to_string();
            let add = r["message"]["content"].as_str().unwrap_or("");
            last["message"]["content"] = Value::String(format!("{c}\n\n{add}"));
            continue;
        }
        let after_user = out.last().is_some_and(|o| ty(o) == "user");
        let next_ok = e
            .get(n + 1)
            .is_none_or(|s| matches!(ty(s), "assistant" | "api_system"));
        if after_user && next_ok {
            out.push(r.clone());
            continue;
        }
        changed = true;
        let text = r["message"]["content"].as_str().unwrap_or("");
        out.push(meta_user(reminder(text)));
    }
    if !changed {
        return out;
    }
    merge_adjacent_users(out)
}

/// `Ffc`: adjacent user messages merged again.
fn merge_adjacent_users(out: Vec<Value>) -> Vec<Value> {
    let mut merged: Vec<Value> = Vec::with_capacity(out.len());
    for m in out {
        if ty(&m) == "user" && merged.last().is_some_and(|l| ty(l) == "user") {
            let l = merged.pop().expect("checked");
            merged.push(merge_user(&l, &m));
        } else {
            merged.push(m);
        }
    }
    merged
}

/// `Vcm`: an error tool result keeps only its text.
fn errors_keep_text(mut g: Vec<Value>) -> Vec<Value> {
    for m in g.iter_mut() {
        if ty(m) != "user" {
            continue;
        }
        let Some(Value::Array(bs)) = m.get_mut("message").and_then(|x| x.get_mut("content")) else {
            continue;
        };
        for b in bs.iter_mut() {
            if block_type(b) != "tool_result" || !is_true(b.get("is_error")) {
                continue;
            }
            let Some(Value::Array(inner)) = b.get("content") else {
                continue;
            };
            if inner.iter().all(|x| block_type(x) == "text") {
                continue;
            }
            let texts: Vec<String> = inner
                .iter()
                .filter(|x| block_type(x) == "text")
                .map(|x| {
                    x.get("text")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                })
                .collect();
            let c = if texts.is_empty() {
                Vec::new()
            } else {
                vec![json!({"type": "text", "text": texts.join("\n\n")})]
            };
            b["content"] = Value::Array(c);
        }
    }
    g
}

// ----- Cpc: tool calls and results paired ------------------------------------------------------

/// The messages are moved from `e` to the result as they are passed (a message is
/// copied only where it changes), so a long session costs no copy of its contents.
fn pair_tool_results(mut e: Vec<Value>) -> Vec<Value> {
    let mut t: Vec<Value> = Vec::with_capacity(e.len());
    let mut seen_uses: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut o = 0;
    while o < e.len() {
        let s = &e[o];
        if ty(s) != "assistant" {
            if ty(s) == "user"
                && let Some(Value::Array(bs)) = content(s)
                && t.last().is_none_or(|l| ty(l) != "assistant")
                && bs.iter().any(|b| block_type(b) == "tool_result")
            {
                let kept: Vec<Value> = bs
                    .iter()
                    .filter(|b| block_type(b) != "tool_result")
                    .cloned()
                    .collect();
                let c = if !kept.is_empty() {
                    Some(kept)
                } else if t.is_empty() {
                    Some(vec![
                        json!({"type": "text", "text": "[Orphaned tool result removed due to conversation resume]"}),
                    ])
                } else {
                    None
                };
                if let Some(c) = c {
                    let mut m = std::mem::take(&mut e[o]);
                    set_content(&mut m, Value::Array(c));
                    t.push(m);
                }
                o += 1;
                continue;
            }
            t.push(std::mem::take(&mut e[o]));
            o += 1;
            continue;
        }
        let owned;
        let bs: &[Value] = match content(s) {
            Some(Value::Array(a)) => a,
            other => {
                owned = as_blocks(other);
                &owned
            }
        };
        let result_ids: std::collections::HashSet<String> = bs
            .iter()
            .filter_map(|b| b.get("tool_use_id").and_then(Value::as_str))
            .map(str::to_string)
            .collect();
        let mut uses: Vec<String> = Vec::new();
        let mut dropped = vec![false; bs.len()];
        for (i, b) in bs.iter().enumerate() {
            let mut drop = false;
            let bt = block_type(b);
            if bt == "tool_use" {
                let id = b
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                if seen_uses.contains(&id) {
                    drop = true;
                } else {
                    seen_uses.insert(id.clone());
                    uses.push(id);
                }
            } else if (bt == "server_tool_use" || bt == "mcp_tool_use")
                && !b
                    .get("id")
                    .and_then(Value::as_str)
                    .is_some_and(|id| result_ids.contains(id))
            {
                drop = true;
            }
            dropped[i] = drop;
        }
        // The content without the dropped blocks, where some are.
        let c = dropped.contains(&true).then(|| {
            let mut c: Vec<Value> = Vec::new();
            for (i, b) in bs.iter().enumerate() {
                if !dropped[i] {
                    c.push(b.clone());
                    continue;
                }
                let th = |x: Option<&Value>| {
                    x.is_some_and(|x| matches!(block_type(x), "thinking" | "redacted_thinking"))
                };
                if th(i.checked_sub(1).and_then(|p| bs.get(p))) && th(bs.get(i + 1)) {
                    c.push(json!({"type": "text", "text": "[Tool use removed]", "citations": []}));
                }
            }
            if c.is_empty() {
                c.push(json!({"type": "text", "text": "[Tool use interrupted]", "citations": []}));
            }
            c
        });
        let mut a = std::mem::take(&mut e[o]);
        if let Some(c) = c {
            set_content(&mut a, Value::Array(c));
        }
        t.push(a);
        let next = e.get(o + 1);
        let mut got: Vec<String> = Vec::new();
        let mut dup = false;
        if let Some(p) = next.filter(|p| ty(p) == "user")
            && let Some(Value::Array(pbs)) = content(p)
        {
            for b in pbs {
                if block_type(b) == "tool_result" {
                    let id = b
                        .get("tool_use_id")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string();
                    if got.contains(&id) {
                        dup = true;
                    }
                    got.push(id);
                }
            }
        }
        let missing: Vec<&String> = uses.iter().filter(|u| !got.contains(u)).collect();
        let stray: Vec<&String> = got.iter().filter(|g| !uses.contains(g)).collect();
        if missing.is_empty() && stray.is_empty() && !dup {
            o += 1;
            continue;
        }
        let fillers: Vec<Value> = missing
            .iter()
            .map(|id| {
                json!({"type": "tool_result", "tool_use_id": id, "content": "[Tool result missing due to internal error]", "is_error": true})
            })
            .collect();
        match next.filter(|p| ty(p) == "user") {
            Some(p) => {
                let mut pbs = match content(p) {
                    Some(Value::Array(a)) => a.clone(),
                    Some(other) => vec![json!({"type": "text", "text": other.clone()})],
                    None => Vec::new(),
                };
                if !stray.is_empty() || dup {
                    let mut v: Vec<String> = Vec::new();
                    pbs.retain(|b| {
                        if block_type(b) != "tool_result" {
                            return true;
                        }
                        let id = b
                            .get("tool_use_id")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string();
                        if stray.contains(&&id) || v.contains(&id) {
                            return false;
                        }
                        v.push(id);
                        true
                    });
                }
                let mut all = fillers;
                all.extend(pbs);
                o += 1;
                if all.is_empty() {
                    t.push(meta_user(NO_CONTENT.into()));
                } else {
                    let mut m = p.clone();
                    set_content(&mut m, Value::Array(all));
                    t.push(m);
                }
            }
            None => {
                if !fillers.is_empty() {
                    t.push(super::loader::user_message(Value::Array(fillers), true));
                }
            }
        }
        o += 1;
    }
    t
}

// ----- the request's messages --------------------------------------------------------------------

/// `ypc`: empty text blocks of a user message go.
fn drop_empty_text(bs: &[Value]) -> Vec<Value> {
    let kept: Vec<Value> = bs
        .iter()
        .filter(|b| {
            block_type(b) != "text"
                || b.get("text")
                    .and_then(Value::as_str)
                    .is_some_and(|t| !t.trim().is_empty())
        })
        .cloned()
        .collect();
    if kept.len() == bs.len() {
        return kept;
    }
    if kept.is_empty() {
        vec![json!({"type": "text", "text": NO_CONTENT})]
    } else {
        kept
    }
}

/// `xlm`/`klm` (without cache markers): `{role, content}`.
fn to_api(m: &Value) -> Value {
    match ty(m) {
        "user" => {
            let c = match content(m) {
                Some(Value::Array(bs)) => Value::Array(drop_empty_text(bs)),
                Some(c) => c.clone(),
                None => Value::Null,
            };
            json!({"role": "user", "content": c})
        }
        "assistant" => {
            json!({"role": "assistant", "content": content(m).cloned().unwrap_or(Value::Null)})
        }
        _ => json!({"role": "system", "content": content(m).cloned().unwrap_or(Value::Null)}),
    }
}

fn is_probe(b: &Value) -> bool {
    block_type(b) == "text" && b.get("text").and_then(Value::as_str) == Some(PROBE)
}

/// What `context.sh` removes from a request: the probe and everything after it, the
/// context reminder of the first user message (2.1.197; the first user message stays
/// a block list, the reminder made it one). System texts of the file that were still
/// waiting for the next reply when the probe came go after it, with its own
/// attachments: where the release keeps such a message a system message, it stays
/// (as the request's last message, a block list).
fn strip(msgs: Vec<Value>, rules: &Rules) -> Vec<Value> {
    let Some(pi) = msgs.iter().rposition(|m| {
        m["role"] == "user"
            && match &m["content"] {
                Value::String(s) => s == PROBE,
                Value::Array(bs) => bs.iter().any(is_probe),
                _ => false,
            }
    }) else {
        return msgs;
    };
    let mut out: Vec<Value> = msgs[..pi].to_vec();
    if let Value::Array(bs) = &msgs[pi]["content"] {
        let mut bs = bs.clone();
        if let Some(j) = bs.iter().rposition(is_probe) {
            bs.remove(j);
        }
        bs.retain(|b| {
            let t = b.get("text").and_then(Value::as_str);
            !(block_type(b) == "text"
                && t.is_some_and(|t| t.strip_suffix('\n').unwrap_or(t) == PROBE_ATTRIBUTION))
        });
        if !bs.is_empty() {
            let mut last = msgs[pi].clone();
            last["content"] = Value::Array(bs);
            out.push(last);
        }
    }
    if !rules.fold_trailing_system {
        for m in msgs[pi + 1..].iter().take_while(|m| m["role"] == "system") {
            let text = match &m["content"] {
                Value::String(t) => without_piece(t, PROBE_ENVIRONMENT),
                _ => String::new(),
            };
            if text.trim().is_empty() {
                continue;
            }
            let mut m = m.clone();
            if rules.last_system_as_blocks {
                m["content"] = json!([{"type": "text", "text": text}]);
            }
            out.push(m);
        }
    }
    if rules.date_reminder
        && let Some(first) = out.iter_mut().find(|m| m["role"] == "user")
        && let Value::Array(bs) = &mut first["content"]
    {
        bs.retain(|b| {
            !(block_type(b) == "text"
                && b.get("text")
                    .and_then(Value::as_str)
                    .is_some_and(|t| t.starts_with(REMINDER_PREFIX)))
        });
    }
    out.retain(|m| {
        m["role"] != "user" || !matches!(&m["content"], Value::Array(bs) if bs.is_empty())
    });
    out
}

/// A system text without one of the pieces it was joined from (with `"\n\n"`).
fn without_piece(text: &str, piece: &str) -> String {
    for cand in [
        format!("\n\n{piece}"),
        format!("{piece}\n\n"),
        piece.to_string(),
    ] {
        if text.contains(&cand) {
            return text.replacen(&cand, "", 1);
        }
    }
    text.to_string()
}

/// Was the probe merged into the last user message of this context (so that its last
/// text block carries the merge's `"\n"`)? For tests and the readable form.
pub fn probe_marker() -> &'static str {
    PROBE
}
