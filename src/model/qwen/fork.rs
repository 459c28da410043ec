//! Forking a Qwen Code session at a record, as Qwen Code forks
//! (`SessionService.forkSession`, behind `--fork-session` and `/branch`; QWEN-FORMAT.md
//! §6.8).
//!
//! The new file copies the chain Qwen Code loads up to the record (every conversation
//! record on it, bookkeeping included, each line with its fragments' parts joined),
//! each with the new `sessionId`, its `parentUuid` set to the record copied before it
//! (so the copy is one line of descent, as Qwen Code rebuilds it) and
//! `forkedFrom {sessionId: SOURCE, messageUuid: ITS UUID}` added last; its uuid,
//! timestamp and everything else stay. The records that say where a session came from
//! (`session_sources_snapshot`, `parent_session`, `session_source`, `turn_result`) are
//! not copied, as Qwen Code leaves them out. The file is `<new uuid>.jsonl` beside the
//! source, mode 0600, and `qwen --resume NEW` continues right after the record. Qwen
//! Code's own fork then asks its first prompt; the mount's waits for yours.
//!
//! Refused: a subagent's record (Qwen Code forks sessions, not subagents) and a record
//! Qwen Code does not load as a conversation record.

use super::State;
use crate::model::core::fork::{ForkError, ForkFile, Fresh};
use crate::model::core::js::js_stringify;
use crate::model::core::session::Session;
use serde_json::{Map, Value};

/// Subtypes a fork leaves out.
const NOT_COPIED: &[&str] = &[
    "session_sources_snapshot",
    "parent_session",
    "session_source",
    "turn_result",
];

/// The file forking `s` at entry `i` makes.
pub fn plan(s: &Session, st: &State, i: u32, fresh: &Fresh) -> Result<ForkFile, ForkError> {
    let n = st
        .node(i)
        .ok_or_else(|| ForkError::NoSuchEntry(s.id_string(i)))?;
    if n.file != 0 {
        return Err(ForkError::Refused(
            "this record is a subagent's: Qwen Code forks sessions, not subagents".into(),
        ));
    }
    if !n.is_conversation() {
        return Err(ForkError::Refused(
            "Qwen Code does not load this record as part of the conversation, so it cannot \
             continue from it"
                .into(),
        ));
    }
    let source_id = st
        .session_id
        .clone()
        .unwrap_or_else(|| s.header().session_id.clone());
    let chain = super::history::chain(s, st, i);
    let mut out = Vec::new();
    let mut prev: Option<String> = None;
    for c in chain {
        if NOT_COPIED.contains(&st.subtype(c)) {
            continue;
        }
        let v = s.entry_value(c)?;
        let Value::Object(rec) = v else { continue };
        let uuid = s.id_string(c);
        let mut m: Map<String, Value> = rec;
        m.insert("sessionId".into(), Value::String(fresh.session_id.clone()));
        m.insert(
            "parentUuid".into(),
            prev.as_ref()
                .map_or(Value::Null, |p| Value::String(p.clone())),
        );
        let mut from = Map::new();
        from.insert("sessionId".into(), Value::String(source_id.clone()));
        from.insert("messageUuid".into(), Value::String(uuid.clone()));
        m.shift_remove("forkedFrom");
        m.insert("forkedFrom".into(), Value::Object(from));
        out.extend_from_slice(js_stringify(&Value::Object(m)).as_bytes());
        out.push(b'\n');
        prev = Some(uuid);
    }
    if out.is_empty() {
        return Err(ForkError::Refused("no record to copy".into()));
    }
    let dir = s
        .path()
        .parent()
        .map(|p| p.to_path_buf())
        .unwrap_or_default();
    Ok(ForkFile {
        dir,
        file_name: format!("{}.jsonl", fresh.session_id),
        session_id: fresh.session_id.clone(),
        bytes: out,
        extra: Vec::new(),
    })
}
