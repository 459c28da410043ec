//! Claude Code's fork (see [`crate::model::core::fork`] for what it writes and why).

use super::loader;
use crate::model::core::fork::lexical_absolute;
use crate::model::core::fork::{ForkError, ForkFile, Fresh};
use crate::model::core::js::js_stringify;
use crate::model::core::session::Session;
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::path::Path;

/// Why Claude Code's fork at entry `x` cannot be made, as far as it is known without
/// loading the chain (the checks [`plan`] starts with): the mount shows `fork` there
/// without a write bit, and reading it says why.
pub fn refusal(s: &Session, x: u32) -> Option<ForkError> {
    checks(s, x).err()
}

/// The checks a fork at `x` must pass before its chain is loaded.
fn checks(s: &Session, x: u32) -> Result<(), ForkError> {
    let st = s
        .claude()
        .ok_or_else(|| ForkError::Refused("not a Claude Code session".into()))?;
    let what = || s.id_string(x);
    if st.file_of(x) != 0 {
        return Err(ForkError::Refused(format!(
            "cannot fork {}: it is a line of a subagent's transcript, which Claude Code does not \
             resume; fork at the line that called the agent instead",
            s.alias(x).map(str::to_string).unwrap_or_else(what)
        )));
    }
    if !st.nodes.get(x as usize).is_some_and(|n| n.is_loaded()) {
        return Err(ForkError::Refused(format!(
            "cannot fork {}: Claude Code does not load lines of this type ({}), so it cannot \
             resume there",
            what(),
            s.kind_name(x)
        )));
    }
    let plan = loader::plan_for(s, st, x);
    if plan != loader::Variant::WHOLE {
        return Err(ForkError::Refused(format!(
            "cannot fork {}: the compaction at line {} removed it from what Claude Code loads \
             (`claude --resume-session-at` no longer finds it); fork at an entry after that \
             compaction",
            what(),
            plan.upto_line
        )));
    }
    Ok(())
}

pub fn plan(s: &Session, x: u32, fresh: &Fresh) -> Result<ForkFile, ForkError> {
    checks(s, x)?;
    let st = s
        .claude()
        .ok_or_else(|| ForkError::Refused("not a Claude Code session".into()))?;
    let what = || s.id_string(x);
    let Some(chain) = loader::chain_messages(s, st, Some(x), super::rules::CURRENT)? else {
        return Err(ForkError::Refused(format!(
            "cannot fork {}: Claude Code does not find it on the chain it loads (its messages \
             are dropped when the session is resumed)",
            what()
        )));
    };
    let old_sid = s
        .path()
        .file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| n.len() == 36)
        .or_else(|| st.session_id.clone())
        .unwrap_or_default();
    // The messages the last compaction preserves: Claude Code holds them with their
    // usage zeroed, and copies them so.
    let preserved: HashSet<String> = (0..s.entries().len().min(st.nodes.len()) as u32)
        .rev()
        .find(|&b| st.nodes[b as usize].has(super::nflags::BOUNDARY) && st.file_of(b) == 0)
        .and_then(|b| st.preserved.get(&b))
        .map(|p| {
            p.all
                .iter()
                .chain(p.list.iter().flat_map(|(_, l)| l.iter()))
                .filter_map(|&k| s.ids().resolve(k).map(|c| c.into_owned()))
                .collect()
        })
        .unwrap_or_default();
    let mut out = Vec::new();
    // `last-prompt` names the last prompt the user typed on the copied path, as the
    // CLI's fork writes it (not a slash command: `/compact` is no prompt there).
    let mut last_prompt: Option<String> = None;
    for mut v in chain {
        let Some(obj) = v.as_object_mut() else {
            continue;
        };
        if let Some(p) = typed_prompt(obj) {
            last_prompt = Some(p);
        }
        obj.insert("sessionId".into(), fresh.session_id.clone().into());
        if obj.contains_key("promptId") {
            obj.insert("promptId".into(), fresh.prompt_id.clone().into());
        }
        // Written by the forking process: print mode's entry point, no session slug.
        if obj.contains_key("entrypoint") {
            obj.insert("entrypoint".into(), "sdk-cli".into());
        }
        obj.shift_remove("slug");
        if obj.get("type").and_then(Value::as_str) == Some("assistant")
            && obj
                .get("uuid")
                .and_then(Value::as_str)
                .is_some_and(|u| preserved.contains(u))
            && let Some(usage) = obj
                .get_mut("message")
                .and_then(|m| m.get_mut("usage"))
                .and_then(Value::as_object_mut)
        {
            for k in [
                "input_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
                "output_tokens",
            ] {
                if let Some(n) = usage.get_mut(k) {
                    *n = 0.into();
                }
            }
        }
        if obj.get("type").and_then(Value::as_str) == Some("assistant")
            && !obj.contains_key("requestSessionId")
        {
            obj.insert("requestSessionId".into(), old_sid.clone().into());
        }
        out.extend_from_slice(js_stringify(&v).as_bytes());
        out.push(b'\n');
    }
    let mut lp = Map::new();
    lp.insert("type".into(), "last-prompt".into());
    if let Some(p) = last_prompt {
        lp.insert("lastPrompt".into(), p.into());
    }
    lp.insert("leafUuid".into(), s.id_string(x).into());
    lp.insert("sessionId".into(), fresh.session_id.clone().into());
    out.extend_from_slice(js_stringify(&Value::Object(lp)).as_bytes());
    out.push(b'\n');
    // Claude Code's own tally (`cost-state`): the CLI's fork starts from the source's,
    // whatever the entry (it resumes with the source's last line), and writes it with
    // the new session id; so does this one, so that the fork's tally goes on from there
    // rather than from zero.
    if let Some((mut cs, _)) = super::usage::last_cost_state_line(s)
        && let Some(o) = cs.as_object_mut()
    {
        o.insert("sessionId".into(), fresh.session_id.clone().into());
        out.extend_from_slice(js_stringify(&cs).as_bytes());
        out.push(b'\n');
    }
    let source = lexical_absolute(s.path())?;
    Ok(ForkFile {
        dir: source.parent().map(Path::to_path_buf).unwrap_or_default(),
        file_name: format!("{}.jsonl", fresh.session_id),
        session_id: fresh.session_id.clone(),
        bytes: out,
        extra: Vec::new(),
    })
}

/// The text of a prompt the user typed (a user line that is not meta, a compact
/// summary, a tool result, or a slash command and its output).
fn typed_prompt(obj: &Map<String, Value>) -> Option<String> {
    let t = any_prompt(obj)?;
    let command = ["<command-name>", "<command-message>", "<local-command-"]
        .iter()
        .any(|c| t.trim_start().starts_with(c));
    (!command).then_some(t)
}

fn any_prompt(obj: &Map<String, Value>) -> Option<String> {
    if obj.get("type").and_then(Value::as_str) != Some("user")
        || obj.get("isMeta").is_some_and(|m| m == true)
        || obj.get("isCompactSummary").is_some_and(|m| m == true)
    {
        return None;
    }
    match obj.get("message")?.get("content")? {
        Value::String(t) => Some(t.clone()),
        Value::Array(blocks) => {
            if blocks
                .iter()
                .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            {
                return None;
            }
            blocks
                .iter()
                .find(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .and_then(|b| b.get("text"))
                .and_then(Value::as_str)
                .map(str::to_string)
        }
        _ => None,
    }
}
