//! Lines written to a session: a reply, a name (GEMINI-FORMAT §9).
//!
//! A reply is what the CLI writes for a prompt: one user record and the `$set` of
//! `lastUpdated` after it,
//!
//! ```text
//! {"id":"<uuid>","timestamp":"<ISO ms>","type":"user","content":[{"text":"<text>"}]}
//! {"$set":{"lastUpdated":"<the same time>"}}
//! ```
//!
//! appended in one write. At the leaf nothing else is needed. At an earlier entry
//! that is on the current conversation, the record is preceded by the `$rewindTo` of
//! the message after the entry, which is what the TUI's `/rewind` writes; at an entry
//! of an abandoned branch, by a `$set.messages` of the entry's path, the records as the
//! file holds them (byte for byte), which is the shape every resume writes. Either way
//! `gemini --resume` then continues after the new message, with the entry's history
//! before it (checked with the kit's `accepts.sh` at every kind of entry; the results
//! are in `tests/fixtures/gemini/accepts/`). The root `reply` starts over: a
//! `$rewindTo` of the list's first message empties it, as the TUI's rewind to the
//! first prompt does.
//!
//! `name` appends `{"$set":{"summary":NAME}}`: the summary is the session's title in
//! the CLI's browser (the CLI writes it the same way, §2.3, §7).

use super::index::Gemini;
use crate::model::core::js::write_json_string;
use crate::model::core::reply::{AppendError, NewEntry, sanitize_name};
use crate::model::core::session::Session;

/// `{"$set":{"lastUpdated":TIME}}` and so on: one compact line.
fn set_line(key: &str, value: &str) -> String {
    let mut s = String::from("{\"$set\":{");
    write_json_string(&mut s, key);
    s.push(':');
    write_json_string(&mut s, value);
    s.push_str("}}\n");
    s
}

/// The lines for `what` and the new record's id.
pub fn build(
    s: &Session,
    g: &Gemini,
    what: &NewEntry<'_>,
    now: i64,
) -> Result<(String, Vec<u8>), AppendError> {
    let Some(main) = g.files.first() else {
        return Err(AppendError::Unsupported(
            "the session file has no lines yet",
        ));
    };
    if main.replay.meta_str("kind") == Some("subagent") {
        return Err(AppendError::Unsupported(
            "this is a subagent's session, which Gemini CLI does not resume: reply in the \
             session that ran it",
        ));
    }
    match what {
        NewEntry::Reply { parent, text } => reply(s, g, *parent, text, now),
        NewEntry::Name(name) => {
            let name = sanitize_name(name);
            Ok((String::new(), set_line("summary", &name).into_bytes()))
        }
        NewEntry::Label { .. } => Err(AppendError::Unsupported(
            "Gemini CLI sessions have no labels: name an entry by its path or .id/ID",
        )),
    }
}

fn reply(
    s: &Session,
    g: &Gemini,
    parent: Option<&str>,
    text: &str,
    now: i64,
) -> Result<(String, Vec<u8>), AppendError> {
    let r = &g.files[0].replay;
    let mut out = String::new();
    match parent {
        None => {
            if let Some(first) = r.active.first() {
                rewind_line(s, *first, &mut out);
            }
        }
        Some(id) => {
            let i = s
                .find(id)
                .ok_or_else(|| AppendError::NoSuchEntry(id.to_string()))?;
            let (f, key) = g
                .msg_of(s, i)
                .ok_or_else(|| AppendError::NoSuchEntry(id.to_string()))?;
            if f != 0 {
                return Err(AppendError::Unsupported(
                    "this entry is a subagent's, which Gemini CLI does not resume: reply \
                     in the session that ran it",
                ));
            }
            match r.active.iter().position(|&k| k == key) {
                Some(p) if p + 1 == r.active.len() => {}
                Some(p) => rewind_line(s, r.active[p + 1], &mut out),
                None => {
                    out.push_str("{\"$set\":{\"messages\":[");
                    for (n, loc) in g.path_locs(0, key).into_iter().enumerate() {
                        if n > 0 {
                            out.push(',');
                        }
                        let b = g.read(s, loc)?;
                        let t = std::str::from_utf8(&b).map_err(|_| {
                            AppendError::Io(std::io::Error::new(
                                std::io::ErrorKind::InvalidData,
                                format!(
                                    "line {} of the session is not UTF-8: the CLI would not \
                                     read its copy back the same",
                                    loc.line
                                ),
                            ))
                        })?;
                        out.push_str(t);
                    }
                    out.push_str("]}}\n");
                }
            }
        }
    }
    let id = crate::model::core::id::uuid_v4();
    let ts = crate::model::core::time::format_iso_ms(now);
    out.push_str("{\"id\":");
    write_json_string(&mut out, &id);
    out.push_str(",\"timestamp\":");
    write_json_string(&mut out, &ts);
    out.push_str(",\"type\":\"user\",\"content\":[{\"text\":");
    write_json_string(&mut out, text);
    out.push_str("}]}\n");
    out.push_str(&set_line("lastUpdated", &ts));
    Ok((id, out.into_bytes()))
}

/// `{"$rewindTo":ID}` of message `key`.
fn rewind_line(s: &Session, key: crate::model::core::id::IdKey, out: &mut String) {
    let id = s.ids().resolve(key).unwrap_or_default().into_owned();
    out.push_str("{\"$rewindTo\":");
    write_json_string(out, &id);
    out.push_str("}\n");
}
