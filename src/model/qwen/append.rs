//! Records sessionfs appends to a Qwen Code file, in Qwen Code's own shape.
//!
//! * A reply is the `user` record Qwen Code writes for a typed prompt (QWEN-FORMAT.md
//!   §9): `uuid parentUuid sessionId timestamp type provenance cwd version [gitBranch]
//!   message`, `provenance: "real_user"`, `message {role: "user", parts: [{text}]}`,
//!   `cwd`, `version` and `gitBranch` as on the file's last record (Qwen Code repeats
//!   them on every record). At the leaf its parent is the leaf. At an earlier record
//!   it is what `/rewind` followed by a prompt writes: a `system`/`rewind` record under
//!   that record (`systemPayload {truncatedCount}`: how many messages of the current
//!   branch it leaves behind), then the prompt under the rewind, in one write. Qwen
//!   Code resumes the file's last conversation record, so the reply's branch becomes
//!   the current one, as after the CLI's own rewind. A reply at the root is a rewind
//!   to before the first prompt (`parentUuid: null`), then the prompt.
//! * A name is the `custom_title` record `/rename` writes (`titleSource: "manual"`),
//!   under the leaf; it becomes the leaf, as Qwen Code's own does, and changes no
//!   context. The two `slash_command` records of the TUI's `/rename` are not written:
//!   they only echo the command. An empty name clears the title (Qwen Code's picker
//!   then shows the first prompt again).
//! * Qwen Code has no labels: label writes are refused.

use super::{RType, State};
use crate::model::core::reply::{AppendError, NewEntry, sanitize_name};
use crate::model::core::session::Session;
use crate::model::core::time::format_iso_ms;
use serde_json::{Map, Value};
use std::io;

pub use crate::model::core::id::uuid_v4 as new_uuid;

/// What every record repeats: `sessionId`, `cwd`, `version`, `gitBranch`, from the last
/// record of the session file that has them.
struct Trailer {
    session_id: String,
    cwd: Value,
    version: Value,
    git_branch: Option<Value>,
}

fn trailer(s: &Session, st: &State) -> Trailer {
    let last = (0..s.entries().len().min(st.nodes.len()) as u32)
        .rev()
        .find(|&i| st.nodes[i as usize].file == 0 && st.nodes[i as usize].is_loaded());
    let v = last
        .and_then(|i| s.entry_value(i).ok())
        .unwrap_or(Value::Null);
    let session_id = st
        .session_id
        .clone()
        .unwrap_or_else(|| s.header().session_id.clone());
    Trailer {
        session_id,
        cwd: v
            .get("cwd")
            .cloned()
            .filter(Value::is_string)
            .unwrap_or(Value::String(String::new())),
        version: v
            .get("version")
            .cloned()
            .filter(Value::is_string)
            .unwrap_or(Value::String("0.24.4".into())),
        git_branch: v.get("gitBranch").cloned().filter(Value::is_string),
    }
}

fn line(v: &Value) -> Result<Vec<u8>, AppendError> {
    let mut l = serde_json::to_vec(v).map_err(|e| AppendError::Io(io::Error::other(e)))?;
    l.push(b'\n');
    Ok(l)
}

/// A fresh uuid used by no record of the file nor of this write.
fn fresh_uuid(s: &Session, taken: &[String]) -> String {
    loop {
        let u = new_uuid();
        if s.find(&u).is_none() && !taken.contains(&u) {
            return u;
        }
    }
}

/// The head of a record: `uuid parentUuid sessionId timestamp type provenance cwd
/// version [gitBranch]`.
fn base(
    tr: &Trailer,
    uuid: &str,
    parent: Option<&str>,
    now: i64,
    ty: &str,
    provenance: &str,
) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("uuid".into(), Value::String(uuid.into()));
    m.insert(
        "parentUuid".into(),
        parent.map_or(Value::Null, |p| Value::String(p.into())),
    );
    m.insert("sessionId".into(), Value::String(tr.session_id.clone()));
    m.insert("timestamp".into(), Value::String(format_iso_ms(now)));
    m.insert("type".into(), Value::String(ty.into()));
    m.insert("provenance".into(), Value::String(provenance.into()));
    m.insert("cwd".into(), tr.cwd.clone());
    m.insert("version".into(), tr.version.clone());
    if let Some(b) = &tr.git_branch {
        m.insert("gitBranch".into(), b.clone());
    }
    m
}

/// How many messages of the current branch a rewind to entry `p` (`None`: before the
/// first prompt) leaves behind: the message records on the leaf's chain after the
/// last record it shares with `p`'s.
fn truncated_count(s: &Session, st: &State, p: Option<u32>) -> usize {
    let Some(leaf) = s.leaf() else { return 0 };
    let leaf_chain = super::history::chain(s, st, leaf);
    let kept: std::collections::HashSet<u32> = match p {
        Some(p) => super::history::chain(s, st, p).into_iter().collect(),
        None => Default::default(),
    };
    let cut = leaf_chain
        .iter()
        .rposition(|c| kept.contains(c))
        .map_or(0, |k| k + 1);
    leaf_chain[cut..]
        .iter()
        .filter(|&&c| {
            matches!(
                st.nodes[c as usize].rtype,
                RType::User | RType::Assistant | RType::ToolResult
            )
        })
        .count()
}

/// Builds the record(s) for `what` (each line with its `\n`) and returns them with the
/// new entry's uuid.
pub fn build_line(
    s: &Session,
    st: &State,
    what: &NewEntry<'_>,
    now: i64,
    batch: &[String],
) -> Result<(String, Vec<u8>), AppendError> {
    let tr = trailer(s, st);
    match what {
        NewEntry::Reply { parent, text } => {
            let parent_idx = match parent {
                Some(p) => Some(
                    s.find(p)
                        .ok_or_else(|| AppendError::NoSuchEntry(p.to_string()))?,
                ),
                None => None,
            };
            if let Some(i) = parent_idx {
                let n = st.node(i);
                if n.is_some_and(|n| n.file != 0) {
                    return Err(AppendError::Unsupported(
                        "a subagent's transcript cannot be continued (Qwen Code resumes sessions, not subagents)",
                    ));
                }
                if !n.is_some_and(|n| n.is_conversation()) {
                    return Err(AppendError::Unsupported(
                        "Qwen Code does not load this record as part of the conversation: a reply under it would start from nothing",
                    ));
                }
            }
            let leaf = s.leaf();
            let mut taken: Vec<String> = batch.to_vec();
            let mut out = Vec::new();
            let at_leaf = parent_idx.is_some() && parent_idx == leaf;
            let user_parent = if at_leaf || (parent_idx.is_none() && leaf.is_none()) {
                parent_idx.map(|i| s.id_string(i))
            } else {
                // A rewind to the entry (or to before the first prompt), then the prompt.
                let rewind = fresh_uuid(s, &taken);
                taken.push(rewind.clone());
                let p = parent_idx.map(|i| s.id_string(i));
                let mut m = base(&tr, &rewind, p.as_deref(), now, "system", "system");
                m.insert("subtype".into(), Value::String("rewind".into()));
                let mut pl = Map::new();
                pl.insert(
                    "truncatedCount".into(),
                    Value::from(truncated_count(s, st, parent_idx)),
                );
                m.insert("systemPayload".into(), Value::Object(pl));
                out.extend(line(&Value::Object(m))?);
                Some(rewind)
            };
            let uuid = fresh_uuid(s, &taken);
            let mut m = base(&tr, &uuid, user_parent.as_deref(), now, "user", "real_user");
            let mut part = Map::new();
            part.insert("text".into(), Value::String(text.to_string()));
            let mut msg = Map::new();
            msg.insert("role".into(), Value::String("user".into()));
            msg.insert("parts".into(), Value::Array(vec![Value::Object(part)]));
            m.insert("message".into(), Value::Object(msg));
            out.extend(line(&Value::Object(m))?);
            Ok((uuid, out))
        }
        NewEntry::Name(name) => {
            let name = sanitize_name(name);
            let parent = match batch.last() {
                Some(b) => Some(b.clone()),
                None => s.leaf().map(|i| s.id_string(i)),
            };
            let uuid = fresh_uuid(s, batch);
            let mut m = base(&tr, &uuid, parent.as_deref(), now, "system", "system");
            m.insert("subtype".into(), Value::String("custom_title".into()));
            let mut pl = Map::new();
            pl.insert("customTitle".into(), Value::String(name));
            pl.insert("titleSource".into(), Value::String("manual".into()));
            m.insert("systemPayload".into(), Value::Object(pl));
            Ok((uuid, line(&Value::Object(m))?))
        }
        NewEntry::Label { .. } => Err(AppendError::Unsupported(
            "Qwen Code sessions have no labels",
        )),
    }
}
