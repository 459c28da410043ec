//! What opencode sends the model when a session continues right after a message
//! (OPENCODE-FORMAT.md §7), as opencode 1.18.33 builds it, for `context.json`.
//!
//! opencode rebuilds the request from the rows every time (`SessionPrompt.run`):
//!
//! 1. the session's messages up to the point, oldest first (a pending `/undo` is
//!    applied first, and the point's later messages are not there);
//! 2. `MessageV2.filterCompacted`: walking back from the newest, it stops at a
//!    compaction request (a user message with a `compaction` part) whose summary
//!    (`summary: true`, finished, no error) comes after it; with the part's
//!    `tail_start_id`, the kept tail of turns follows the summary;
//! 3. if the last finished answer reported more tokens than the model's usable context,
//!    or a compaction request has no summary yet, it compacts first (§5.5): it sends the
//!    summary request and only then the conversation; [`Point::compacts_first`] is
//!    that request;
//! 4. `MessageV2.toModelMessages`: empty messages and failed answers dropped (an
//!    interrupted one is kept with what it had), parts converted (a compaction part is
//!    `"What did we do so far?"`, reasoning kept only for the same model, tool parts as
//!    calls and their results), then the AI SDK's `convertToModelMessages` and the
//!    `@ai-sdk/openai-compatible` provider's Chat Completions messages: a user message
//!    of one text part is a string, an assistant's texts joined, `reasoning_content`,
//!    `tool_calls`, then one `tool` message per result.
//!
//! The system message and the tools are not in the session: opencode builds them for
//! every request (the agent's prompt, today's date, the tools its permission rules
//! allow); [`preamble`] says what it would hold. Every provider gets the same messages
//! in its own wire format; Chat Completions' is the one shown (the one the kit's
//! `context.sh` reads off the wire).

use super::config::Config;
use super::index::{OpencodeSession, Part, Role};
use super::messages::{Msg, chat_messages, filter_compacted, model_of, part_type, truthy};
use crate::model::core::session::Session;
use serde_json::Value;
use std::io;

/// What continuing after a point does.
#[derive(Debug, Clone)]
pub enum Point {
    /// The request's messages.
    Messages(Vec<Value>),
    /// opencode compacts first: the summary request's messages (the new prompt left
    /// out of its conversation), and why.
    CompactsFirst { request: Vec<Value>, why: String },
    /// opencode cannot continue the session (a damaged row on the way): why.
    Fails(String),
}

/// The messages of the session of entry `i` up to it, as opencode reads them.
pub fn messages_to(a: &OpencodeSession, s: &Session, i: u32) -> io::Result<Vec<Msg>> {
    let sid = &a.meta(i).session_id;
    let mut out = Vec::new();
    for j in s.path_to(i) {
        if &a.meta(j).session_id != sid {
            continue;
        }
        out.push(Msg::of(&s.entry_value(j)?));
    }
    Ok(out)
}

/// The last finished answer and the last compaction request after it (`MessageV2.latest`).
fn pending_compaction(c: &[Msg]) -> (Option<&Msg>, bool) {
    let key = |m: &Msg| (m.created(), m.id().to_string());
    let finished = c
        .iter()
        .filter(|m| m.role() == "assistant" && truthy(m.info.get("finish")))
        .max_by_key(|m| key(m));
    let mut task = None;
    for m in c {
        if let Some(f) = finished
            && key(m) < key(f)
        {
            continue;
        }
        for p in &m.parts {
            match part_type(p) {
                "compaction" => task = Some(true),
                "subtask" => task = Some(false),
                _ => {}
            }
        }
    }
    (finished, task == Some(true))
}

/// What continuing right after entry `i` does (see the module docs).
pub fn point(a: &OpencodeSession, s: &Session, i: u32) -> io::Result<Point> {
    let msgs = messages_to(a, s, i)?;
    if let Some(bad) = msgs.iter().find(|m| m.damaged) {
        return Ok(Point::Fails(format!(
            "message {} of the session is not JSON: opencode fails to continue it \
             (\"Unexpected server error\", nothing sent) until that row is repaired",
            bad.id()
        )));
    }
    let c = filter_compacted(&msgs);
    let model = model_of(&msgs);
    let (finished, compaction_pending) = pending_compaction(&c);
    let config = Config::load(
        &a.db,
        a.directory(),
        a.project.as_ref().map(|p| p.worktree.as_str()),
    );
    let settings = config.compaction();
    let overflow = match (finished, config.limits(&model.provider, &model.model)) {
        (Some(f), Some(l))
            if !truthy(f.info.get("summary")) && settings.auto != Some(false) && l.context > 0 =>
        {
            let t = f.info.get("tokens");
            let n = |k: &str| {
                t.and_then(|t| t.get(k))
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
            };
            let cache = |k: &str| {
                t.and_then(|t| t.get("cache"))
                    .and_then(|c| c.get(k))
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
            };
            let total = match n("total") {
                0 => n("input") + n("output") + cache("read") + cache("write"),
                t => t,
            };
            (total >= l.usable(&settings)).then_some((total, l.usable(&settings)))
        }
        _ => None,
    };
    if compaction_pending || overflow.is_some() {
        let why = match overflow {
            Some((t, u)) if !compaction_pending => format!(
                "the last answer used {t} tokens, at or past the {u} this model can take \
                 before opencode compacts"
            ),
            _ => "the compaction requested here has no summary yet".to_string(),
        };
        return Ok(Point::CompactsFirst {
            request: super::compaction::summary_request(&c, &model, &config),
            why,
        });
    }
    Ok(Point::Messages(chat_messages(&c, &model)))
}

/// `context.json` of entry `i`: the messages sent, or the summary request sent first.
pub fn context_json(a: &OpencodeSession, s: &Session, i: u32) -> io::Result<Vec<Value>> {
    Ok(match point(a, s, i)? {
        Point::Messages(m) => m,
        Point::CompactsFirst { request, .. } => request,
        Point::Fails(_) => Vec::new(),
    })
}

/// The tools opencode 1.18.33 offers an agent, less those the session's permission
/// rules deny (measured: `run` denies `question`, a subagent `task` and `todowrite`).
pub fn tools_for(agent: &str, permission: Option<&str>) -> Vec<&'static str> {
    let all = [
        "bash",
        "edit",
        "glob",
        "grep",
        "question",
        "read",
        "skill",
        "task",
        "todowrite",
        "webfetch",
        "write",
    ];
    let denied: Vec<String> = permission
        .and_then(|p| serde_json::from_str::<Value>(p).ok())
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter(|r| {
            r.get("action").and_then(Value::as_str) == Some("deny")
                && r.get("pattern").and_then(Value::as_str) == Some("*")
        })
        .filter_map(|r| {
            r.get("permission")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect();
    all.into_iter()
        .filter(|t| !denied.iter().any(|d| d == t))
        .filter(|t| !(agent == "general" && matches!(*t, "task" | "todowrite")))
        .collect()
}

/// `Date.prototype.toDateString()` of today, in local time.
fn today() -> String {
    let now = crate::model::core::time::now_ms();
    let secs = now.div_euclid(1000);
    // SAFETY: localtime_r writes into the struct given.
    let tm = unsafe {
        let t: libc::time_t = secs as libc::time_t;
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&t, &mut tm);
        tm
    };
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{} {} {:02} {}",
        DAYS[tm.tm_wday.clamp(0, 6) as usize],
        MONTHS[tm.tm_mon.clamp(0, 11) as usize],
        tm.tm_mday,
        tm.tm_year + 1900
    )
}

/// What the readable `context` shows before the messages: what opencode adds to them
/// (the system message and the tools, rebuilt for every request), and what it does
/// first when it compacts first or fails.
pub fn preamble(a: &OpencodeSession, s: &Session, i: u32) -> Option<String> {
    let msgs = messages_to(a, s, i).ok()?;
    let model = model_of(&msgs);
    let agent = msgs
        .iter()
        .rev()
        .find(|m| m.role() == "user")
        .and_then(|m| m.info.get("agent").and_then(Value::as_str))
        .unwrap_or("build")
        .to_string();
    let mut out = String::new();
    let (dir, worktree, git) = match a.meta(i).part {
        Part::Subagent(k) => {
            let _ = k;
            (a.directory().to_string(), project_root(a), is_git(a))
        }
        _ => (a.directory().to_string(), project_root(a), is_git(a)),
    };
    match point(a, s, i).ok()? {
        Point::Fails(why) => {
            out.push_str(&format!("[opencode cannot continue here: {why}]\n\n"));
            return Some(out);
        }
        Point::CompactsFirst { why, .. } => {
            out.push_str(&format!(
                "[opencode compacts first: {why}. Continuing here, it first sends the \
                 summary request below (system: \"You are a context summarization \
                 agent…\", no tools; your prompt is added to its conversation), then \
                 \"What did we do so far?\", the summary and \"Continue if you have next \
                 steps…\" instead of this history]\n\n"
            ));
            return Some(out);
        }
        Point::Messages(_) => {}
    }
    out.push_str("[system]\n");
    out.push_str(&format!(
        "(rebuilt by opencode for every request, not stored in the session: the {agent} \
         agent's prompt, then)\n"
    ));
    if !model.model.is_empty() {
        out.push_str(&format!(
            "You are powered by the model named {}. The exact model ID is {}/{}\n",
            model.model, model.provider, model.model
        ));
    }
    out.push_str(&format!(
        "Here is some useful information about the environment you are running in:\n<env>\n  \
         Working directory: {dir}\n  Workspace root folder: {worktree}\n  Is directory a git \
         repo: {}\n  Platform: {}\n  Today's date: {}\n</env>\n",
        if git { "yes" } else { "no" },
        std::env::consts::OS,
        today()
    ));
    out.push_str("(then the skills opencode finds, and the AGENTS.md files of the project)\n\n");
    let perm = match a.meta(i).part {
        Part::Subagent(k) => a.subagent_permission(k as usize),
        _ => a.row.permission.clone(),
    };
    out.push_str(&format!(
        "[tools] {}\n\n",
        tools_for(&agent, perm.as_deref()).join(", ")
    ));
    let _ = Role::User;
    Some(out)
}

fn project_root(a: &OpencodeSession) -> String {
    match &a.project {
        Some(p) if p.worktree != "/" && !p.worktree.is_empty() => p.worktree.clone(),
        _ => a.directory().to_string(),
    }
}

fn is_git(a: &OpencodeSession) -> bool {
    a.project
        .as_ref()
        .is_some_and(|p| p.vcs.as_deref() == Some("git"))
}
