//! Lines sessionfs appends to a Claude Code file, in Claude Code's own shape.
//!
//! * A reply is a user line with the key order of a typed prompt (CLAUDE-FORMAT.md §9):
//!   `parentUuid isSidechain promptId type message uuid timestamp userType entrypoint
//!   cwd sessionId version gitBranch`, content a string, `cwd`, `sessionId`, `version`
//!   and `gitBranch` taken from the file's last node (as Claude Code's own lines carry
//!   them). Its parent is the entry written to. When that entry is not the chain end,
//!   a `last-prompt` line naming the new line follows it in the same write, so that
//!   `claude --resume` continues from the new line (without it, Claude Code would
//!   resume the old branch). A reply at the root starts a new conversation in the file
//!   (`parentUuid: null`) and is named by a `last-prompt` too.
//! * A name is the `custom-title` and `agent-name` pair that `/rename` writes, which is
//!   all Claude Code's title rule reads. The conversation lines `/rename` adds in the
//!   TUI (the command's echo and a reminder sent to the model) are not written: naming
//!   a session through the mount does not change what the model is sent.
//! * Claude Code has no labels: label writes are refused.

use super::State;
use crate::model::core::reply::{AppendError, NewEntry, sanitize_name};
use crate::model::core::session::Session;
use crate::model::core::time::format_iso_ms;
use serde_json::{Map, Value};
use std::io;

pub use crate::model::core::id::uuid_v4 as new_uuid;

/// The fields Claude Code repeats on every node, from the last main-file node.
fn trailer(s: &Session, st: &State) -> io::Result<Map<String, Value>> {
    let mut out = Map::new();
    let last = (0..s.entries().len().min(st.nodes.len()) as u32)
        .rev()
        .find(|&i| {
            s.entry(i).is_node()
                && st.nodes[i as usize].is_loaded()
                && !st.nodes[i as usize].has(super::nflags::SIDECHAIN)
        });
    let v = match last {
        Some(i) => s.entry_value(i).unwrap_or(Value::Null),
        None => Value::Null,
    };
    let sid = v
        .get("sessionId")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| st.session_id.clone())
        .unwrap_or_else(|| session_id_from_path(s));
    // As on the last line, else what Claude Code 2.1.197 writes.
    let or = |k: &str, default: &str| {
        v.get(k)
            .cloned()
            .filter(Value::is_string)
            .unwrap_or_else(|| Value::String(default.into()))
    };
    out.insert("userType".into(), Value::String("external".into()));
    out.insert("entrypoint".into(), Value::String("cli".into()));
    out.insert("cwd".into(), or("cwd", ""));
    out.insert("sessionId".into(), Value::String(sid));
    out.insert("version".into(), or("version", "2.1.197"));
    out.insert("gitBranch".into(), or("gitBranch", "HEAD"));
    Ok(out)
}

fn session_id_from_path(s: &Session) -> String {
    s.path()
        .file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn line(v: &Value) -> Result<Vec<u8>, AppendError> {
    let mut l = serde_json::to_vec(v).map_err(|e| AppendError::Io(io::Error::other(e)))?;
    l.push(b'\n');
    Ok(l)
}

/// Builds the line(s) for `what` (each with its `\n`) and returns them with the new
/// entry's uuid (the session id for a name).
pub fn build_line(
    s: &Session,
    st: &State,
    what: &NewEntry<'_>,
    now: i64,
) -> Result<(String, Vec<u8>), AppendError> {
    let tr = trailer(s, st)?;
    let sid = tr["sessionId"].clone();
    match what {
        NewEntry::Reply { parent, text } => {
            let parent_idx = match parent {
                Some(p) => Some(
                    s.find(p)
                        .filter(|&i| st.nodes.get(i as usize).is_some_and(|n| n.is_loaded()))
                        .ok_or_else(|| AppendError::NoSuchEntry(p.to_string()))?,
                ),
                None => None,
            };
            if parent_idx.is_some_and(|i| st.file_of(i) != 0) {
                return Err(AppendError::Unsupported(
                    "a subagent's transcript cannot be continued (Claude Code does not resume subagents)",
                ));
            }
            let mut uuid = new_uuid();
            while s.find(&uuid).is_some() {
                uuid = new_uuid();
            }
            let mut m = Map::new();
            m.insert(
                "parentUuid".into(),
                match parent_idx {
                    Some(i) => Value::String(s.id_string(i)),
                    None => Value::Null,
                },
            );
            m.insert("isSidechain".into(), Value::Bool(false));
            m.insert("promptId".into(), Value::String(new_uuid()));
            m.insert("type".into(), Value::String("user".into()));
            let mut msg = Map::new();
            msg.insert("role".into(), Value::String("user".into()));
            msg.insert("content".into(), Value::String(text.to_string()));
            m.insert("message".into(), Value::Object(msg));
            m.insert("uuid".into(), Value::String(uuid.clone()));
            m.insert("timestamp".into(), Value::String(format_iso_ms(now)));
            for (k, v) in tr {
                m.insert(k, v);
            }
            let mut out = line(&Value::Object(m))?;
            // Not under the chain end: name the new line so that a resume continues here.
            let chain_end = s.leaf();
            if parent_idx.is_none() || parent_idx != chain_end {
                let mut lp = Map::new();
                lp.insert("type".into(), Value::String("last-prompt".into()));
                lp.insert("lastPrompt".into(), Value::String(text.to_string()));
                lp.insert("leafUuid".into(), Value::String(uuid.clone()));
                lp.insert("sessionId".into(), sid);
                out.extend(line(&Value::Object(lp))?);
            }
            Ok((uuid, out))
        }
        NewEntry::Name(name) => {
            let name = sanitize_name(name);
            let mut out = Vec::new();
            for (ty, key) in [("custom-title", "customTitle"), ("agent-name", "agentName")] {
                let mut m = Map::new();
                m.insert("type".into(), Value::String(ty.into()));
                m.insert(key.into(), Value::String(name.clone()));
                m.insert("sessionId".into(), sid.clone());
                out.extend(line(&Value::Object(m))?);
            }
            Ok((sid.as_str().unwrap_or_default().to_string(), out))
        }
        NewEntry::Label { .. } => Err(AppendError::Unsupported(
            "Claude Code sessions have no labels",
        )),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn uuids_are_v4() {
        let u = super::new_uuid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"));
        assert_ne!(u, super::new_uuid());
    }
}
