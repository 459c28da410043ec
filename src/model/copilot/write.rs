//! What a reply writes, and what a fork writes (COPILOT-FORMAT.md §9, §6.2), checked with
//! the real CLI (`scripts/copilot-accepts`, `tests/fixtures/copilot/accepts/`).
//!
//! * **At the leaf** a reply is one `user.message` line appended to `events.jsonl`: `type`,
//!   `data {content, transformedContent, messageId, supportedNativeDocumentMimeTypes,
//!   delivery}`, `id`, `timestamp`, `parentId` (the id of the file's last line), key for
//!   key as the CLI writes a prompt (`transformedContent` is what is sent: the prompt
//!   after a `<current_datetime>` line in the machine's time zone, as the CLI makes it).
//! * **At an earlier entry** the CLI continues from there only if the file ends there
//!   (§9), and cutting the file would delete the turns after it, which sessionfs never
//!   does. So the reply goes where `/fork` puts a copy: a new session folder
//!   `session-state/<new id>/` whose `events.jsonl` holds the events up to the entry with
//!   their ids (each line as the CLI's `/fork` writes it: re-serialised as
//!   `JSON.stringify` does, the `session.start` with the new `sessionId` and
//!   `startTime`, without `remoteSteerable`), the fork notice `/fork` ends the copy with
//!   (`Forked from "NAME" (ID) as "NAME (fork)" (NEW ID).`), then the reply; and a
//!   `workspace.yaml` with the new id, the project, the name `NAME (fork)` and the times,
//!   in the key order `/fork` writes. The folder is written whole under a hidden name and
//!   renamed into place, so the CLI never lists half of it. The session it came from is
//!   not touched (`/fork` also appends a notice to it and counts the fork in its
//!   `workspace.yaml`; a file another process may be writing is left alone).
//! * `fork` writes the same folder without a reply.

use super::home::{self, yaml_scalar};
use super::index::{Copilot, parse};
use crate::model::core::fork::{ForkError, ForkFile, Fresh, lexical_absolute, write_fork};
use crate::model::core::id::uuid_v4;
use crate::model::core::js::js_stringify;
use crate::model::core::session::{ProblemKind, Session};
use crate::model::core::time::{format_iso_ms, now_ms};
use serde_json::{Map, Value};
use std::path::PathBuf;

/// `new Date(ms)` as the CLI writes a prompt's date: local time with its offset
/// (`2026-12-05T07:40:00.000+00:00`).
pub fn local_iso(ms: i64) -> String {
    let secs = ms.div_euclid(1000) as libc::time_t;
    // SAFETY: `localtime_r` fills the plain struct it is given.
    let off = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&secs, &mut tm).is_null() {
            0
        } else {
            tm.tm_gmtoff
        }
    };
    let local = format_iso_ms(ms + off * 1000);
    let sign = if off < 0 { '-' } else { '+' };
    let a = off.unsigned_abs();
    format!(
        "{}{sign}{:02}:{:02}",
        local.trim_end_matches('Z'),
        a / 3600,
        a % 3600 / 60
    )
}

/// The `user.message` line of a reply (with its `\n`) and its id.
pub fn user_line(text: &str, parent: Option<&str>, now: i64) -> (String, Vec<u8>) {
    let id = uuid_v4();
    let mut d = Map::new();
    d.insert("content".into(), Value::String(text.into()));
    d.insert(
        "transformedContent".into(),
        Value::String(format!(
            "<current_datetime>{}</current_datetime>\n\n{text}",
            local_iso(now)
        )),
    );
    d.insert("messageId".into(), Value::String(uuid_v4()));
    d.insert(
        "supportedNativeDocumentMimeTypes".into(),
        Value::Array(Vec::new()),
    );
    d.insert("delivery".into(), Value::String("idle".into()));
    let mut m = Map::new();
    m.insert("type".into(), Value::String("user.message".into()));
    m.insert("data".into(), Value::Object(d));
    m.insert("id".into(), Value::String(id.clone()));
    m.insert("timestamp".into(), Value::String(format_iso_ms(now)));
    m.insert(
        "parentId".into(),
        parent.map_or(Value::Null, |p| Value::String(p.into())),
    );
    let mut line = js_stringify(&Value::Object(m)).into_bytes();
    line.push(b'\n');
    (id, line)
}

/// A new session folder: where it is, and the id of the reply it holds.
#[derive(Debug, Clone)]
pub struct Written {
    pub folder: PathBuf,
    pub reply_id: String,
}

/// Why a fork at entry `i` is refused, known from the index alone (no copy planned):
/// the entry is no line of the session's file, or a line up to it is one the CLI
/// refuses, so that a copy would not load either.
pub fn refusal(s: &Session, i: u32) -> Option<String> {
    if !s.in_main_file(i) {
        return Some("the entry is not a line of the session's events.jsonl".into());
    }
    let e = s.entry(i);
    s.problems()
        .iter()
        .find(|p| {
            p.line <= e.line
                && matches!(&p.what, ProblemKind::Agent { code, .. } if *code == "refused-envelope")
        })
        .map(|p| {
            format!(
                "line {} of the session is one Copilot CLI refuses (see `sessionfs check`): a copy of it would not load",
                p.line
            )
        })
}

/// The new session folder that forking entry `i` makes (see the module docs), its events
/// ending with the fork notice; the notice's id.
fn plan(s: &Session, c: &Copilot, i: u32, fresh: &Fresh) -> Result<(ForkFile, String), ForkError> {
    if let Some(why) = refusal(s, i) {
        return Err(ForkError::Refused(why));
    }
    let e = s.entry(i);
    let end = e.offset + e.len as u64;
    let mut bytes = vec![0u8; end as usize];
    s.read_exact_at(&mut bytes, 0)?;
    let now = fresh.now_ms;
    let now_s = format_iso_ms(now);
    let mut out = Vec::with_capacity(bytes.len() + 1024);
    let mut last_id: Option<String> = None;
    let mut compactions = 0u64;
    let mut first = true;
    for raw in bytes.split(|&b| b == b'\n') {
        // Lines the CLI's loader drops (§10) are not copied.
        let Ok(mut v) = parse(raw) else { continue };
        let Value::Object(obj) = &mut v else { continue };
        if first {
            first = false;
            if obj.get("type").and_then(Value::as_str) != Some("session.start") {
                return Err(ForkError::Refused(
                    "the session's first event is no session.start: Copilot CLI could not resume a copy".into(),
                ));
            }
            if let Some(Value::Object(d)) = obj.get_mut("data") {
                d.insert("sessionId".into(), Value::String(fresh.session_id.clone()));
                d.insert("startTime".into(), Value::String(now_s.clone()));
                d.shift_remove("remoteSteerable");
            }
            obj.insert("timestamp".into(), Value::String(now_s.clone()));
        }
        if obj.get("type").and_then(Value::as_str) == Some("session.compaction_complete") {
            compactions += 1;
        }
        if let Some(id) = obj.get("id").and_then(Value::as_str) {
            last_id = Some(id.to_string());
        }
        out.extend_from_slice(js_stringify(&v).as_bytes());
        out.push(b'\n');
    }
    let name = s.name().unwrap_or("").to_string();
    let fork_name = format!("{name} (fork)");
    let source_id = s.header().session_id.clone();
    let notice_id = uuid_v4();
    let mut d = Map::new();
    d.insert("infoType".into(), Value::String("fork".into()));
    d.insert(
        "message".into(),
        Value::String(format!(
            "Forked from \"{name}\" ({source_id}) as \"{fork_name}\" ({}).",
            fresh.session_id
        )),
    );
    let mut m = Map::new();
    m.insert("type".into(), Value::String("session.info".into()));
    m.insert("data".into(), Value::Object(d));
    m.insert("id".into(), Value::String(notice_id.clone()));
    m.insert("timestamp".into(), Value::String(now_s.clone()));
    m.insert(
        "parentId".into(),
        last_id.map_or(Value::Null, Value::String),
    );
    out.extend_from_slice(js_stringify(&Value::Object(m)).as_bytes());
    out.push(b'\n');
    // workspace.yaml, in the order /fork writes it.
    let w = &c.workspace;
    let cwd = w
        .get("cwd")
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| c.cwd.clone());
    let mut yaml = format!(
        "id: {}\nsummary_count: {compactions}\nfork_count: 0\ncwd: {}\n",
        fresh.session_id,
        yaml_scalar(&cwd)
    );
    if let Some(cn) = w.get("client_name") {
        yaml.push_str(&format!("client_name: {}\n", yaml_scalar(cn)));
    }
    yaml.push_str(&format!(
        "name: {}\nuser_named: {}\ncreated_at: {now_s}\nupdated_at: {now_s}\n",
        yaml_scalar(&fork_name),
        if w.get("user_named") == Some("true") {
            "true"
        } else {
            "false"
        }
    ));
    let folder = lexical_absolute(s.path())?;
    let state = folder
        .parent()
        .and_then(|f| f.parent())
        .map(|p| p.to_path_buf())
        .unwrap_or_default();
    Ok((
        ForkFile {
            dir: state,
            file_name: format!("{}/{}", fresh.session_id, home::EVENTS),
            session_id: fresh.session_id.clone(),
            bytes: out,
            extra: vec![(home::WORKSPACE.to_string(), yaml.into_bytes())],
        },
        notice_id,
    ))
}

/// What `fork` at entry `i` writes.
pub fn fork_file(s: &Session, c: &Copilot, i: u32, fresh: &Fresh) -> Result<ForkFile, ForkError> {
    plan(s, c, i, fresh).map(|(f, _)| f)
}

/// A reply at entry `i`, not the leaf: a new session folder (see the module docs).
pub fn reply_in_new_session(
    s: &Session,
    c: &Copilot,
    i: u32,
    text: &str,
) -> Result<Written, ForkError> {
    let now = now_ms();
    let fresh = Fresh {
        now_ms: now,
        ..Fresh::random(s.format())
    };
    let (mut f, notice) = plan(s, c, i, &fresh)?;
    let (reply_id, line) = user_line(text, Some(&notice), now);
    f.bytes.extend_from_slice(&line);
    let folder = write_fork(&f, 0o600)?;
    Ok(Written { folder, reply_id })
}
