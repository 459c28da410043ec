//! Which sessions a session was forked from and forked into (COPILOT-FORMAT.md §6.2), for
//! the links a mount shows between them (`forked-from`, `forks/`; LAYOUT.md "Copilot CLI
//! sessions").
//!
//! `/fork` (and a reply through the mount at an earlier entry, which writes what `/fork`
//! writes) copies the session's events, **with their ids**, into a new session folder and
//! ends the copy with a `session.info` fork notice, `Forked from "NAME" (PARENT-ID) as
//! "NAME (fork)" (NEW-ID).`: the notice names the parent, and the copied ids say where in
//! it the fork continues: at the last copied entry that the parent still holds (a later
//! `/rewind` of the parent may have deleted the ones after it). The parent's own notice
//! ("Forked this session into …") is not relied on: a fork made through the mount leaves
//! the parent untouched.
//!
//! A fork also keeps the parent's `session.start` `id` (only its `data` changes), so the
//! forks of a session are found among the sessions whose first line has the same `id`:
//! one short read of each session's first line, then the candidates' files are read for
//! their notice. Both answers are kept for a second ([`FRESH`]): forks are made while a
//! session is mounted, and looking costs a read of every session's first line.

use super::home;
use crate::model::core::agent::SessionLink;
use crate::model::core::session::Session;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long an answer is trusted before the home is looked at again.
pub const FRESH: Duration = Duration::from_secs(1);

/// A session's fork notice: the parent it names and the ids copied before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// The parent's session id.
    pub parent: String,
    /// The ids of the lines before the notice, last first (the copy of the parent).
    pub copied: Vec<String>,
}

/// The `(UUID)`s of a fork notice's message, in order.
pub fn notice_ids(message: &str) -> Vec<String> {
    let b = message.as_bytes();
    let mut out = Vec::new();
    let mut k = 0;
    while let Some(p) = memchr::memchr(b'(', &b[k..]) {
        let at = k + p + 1;
        if let Some(id) = message.get(at..at + 36)
            && super::events::is_uuid(id)
            && b.get(at + 36) == Some(&b')')
        {
            out.push(id.to_string());
        }
        k = at;
    }
    out
}

/// The parent a `session.info` fork notice line names, when it is a "Forked from" notice.
pub fn parent_named(v: &serde_json::Value) -> Option<String> {
    let d = v.get("data")?;
    if d.get("infoType")?.as_str()? != "fork" {
        return None;
    }
    let m = d.get("message")?.as_str()?;
    if !m.starts_with("Forked from") {
        return None;
    }
    notice_ids(m).into_iter().next()
}

/// The fork notice of the session file at `path`: its **last** "Forked from" notice (a
/// fork of a fork also holds the notice its parent copied from its own parent).
pub fn read_notice(path: &Path) -> Option<Notice> {
    let f = BufReader::new(crate::model::core::input::open_regular(path).ok()?);
    let mut ids = Vec::new();
    let mut found: Option<(String, usize)> = None;
    for line in f.split(b'\n') {
        let line = line.ok()?;
        if memchr::memmem::find(&line, b"\"infoType\":\"fork\"").is_some()
            && let Ok(v) = crate::model::core::js::parse_line(&line)
            && v.get("type").and_then(|t| t.as_str()) == Some("session.info")
            && let Some(parent) = parent_named(&v)
        {
            found = Some((parent, ids.len()));
        }
        if let Ok(h) = crate::model::core::scan::LineHead::parse(&line)
            && let Some(id) = h.id.as_str()
        {
            ids.push(id.to_string());
        }
    }
    let (parent, k) = found?;
    ids.truncate(k);
    ids.reverse();
    Some(Notice {
        parent,
        copied: ids,
    })
}

/// The `id` of a session file's first line (its `session.start`), from its first 4 KiB.
pub fn start_id(path: &Path) -> Option<String> {
    let mut buf = vec![0u8; 4096];
    let mut f = crate::model::core::input::open_regular(path).ok()?;
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]).ok()? {
            0 => break,
            k => n += k,
        }
    }
    buf.truncate(n);
    let first = buf.split(|&b| b == b'\n').next()?;
    // `"id":"…"` at the top level comes after `data` (§2): the last one of the line.
    let key = b"\"id\":\"";
    let at = memchr::memmem::rfind(first, key)? + key.len();
    let id = std::str::from_utf8(first.get(at..at + 36)?).ok()?;
    super::events::is_uuid(id).then(|| id.to_string())
}

/// What was found, and when.
#[derive(Debug, Default)]
struct Found {
    at: Option<Instant>,
    from: Option<SessionLink>,
    /// Entry id → the forks continuing from it.
    forks: Arc<HashMap<String, Vec<SessionLink>>>,
}

/// The links of one session, found when first asked and again once [`FRESH`] has passed.
#[derive(Debug, Default)]
pub struct Links {
    found: Mutex<Found>,
}

impl Links {
    /// Forgets what was found (a fork was just made).
    pub fn forget(&self) {
        self.found.lock().at = None;
    }

    /// `infos`: the session's main `session.info` entries, where its own notice is.
    fn refresh(&self, s: &Session, infos: &[u32]) {
        let mut f = self.found.lock();
        if f.at.is_some_and(|t| t.elapsed() < FRESH) {
            return;
        }
        let root = s
            .path()
            .parent()
            .and_then(Path::parent)
            .map(Path::to_path_buf);
        f.from = root.as_deref().and_then(|r| from(s, infos, r));
        f.forks = Arc::new(root.as_deref().map(|r| forks(s, r)).unwrap_or_default());
        f.at = Some(Instant::now());
    }

    /// The session this one was forked from, and the entry of it this one continues.
    pub fn forked_from(&self, s: &Session, infos: &[u32]) -> Option<SessionLink> {
        self.refresh(s, infos);
        self.found.lock().from.clone()
    }

    /// The sessions forked from entry `i`.
    pub fn forks_at(&self, s: &Session, infos: &[u32], i: u32) -> Vec<SessionLink> {
        self.refresh(s, infos);
        let forks = self.found.lock().forks.clone();
        forks.get(&s.id_string(i)).cloned().unwrap_or_default()
    }
}

/// The session folder `root/<id>`'s project, as the mount names it.
fn folder_of(root: &Path, id: &str) -> String {
    home::project_name(&home::session_cwd(&root.join(id)))
        .to_string_lossy()
        .into_owned()
}

/// For a fork: its parent (a session folder of `root`) and the parent's entry it continues.
fn from(s: &Session, infos: &[u32], root: &Path) -> Option<SessionLink> {
    // The notice in this session's own file: its last "Forked from" notice (a fork of
    // a fork also holds the one its parent copied).
    let (k, parent) = infos.iter().rev().copied().find_map(|i| {
        let v = s.entry_value(i).ok()?;
        parent_named(&v).map(|p| (i, p))
    })?;
    let ppath = root.join(&parent).join(home::EVENTS);
    let theirs = entry_ids(&ppath)?;
    // The last entry before the notice that the parent still holds.
    let entry = (0..k)
        .rev()
        .map(|i| s.id_string(i))
        .find(|id| theirs.contains(id))?;
    Some(SessionLink {
        folder: Some(folder_of(root, &parent)),
        session: parent,
        entry: Some(entry),
    })
}

/// The ids of the entry lines of a session file.
fn entry_ids(path: &Path) -> Option<HashSet<String>> {
    let f = BufReader::new(crate::model::core::input::open_regular(path).ok()?);
    let mut out = HashSet::new();
    for line in f.split(b'\n') {
        let line = line.ok()?;
        if let Ok(h) = crate::model::core::scan::LineHead::parse(&line)
            && let (Some(id), Some(ty)) = (h.id.as_str(), h.ty.as_str())
            && matches!(super::events::classify(ty), super::events::Line::Entry(_))
        {
            out.insert(id.to_string());
        }
    }
    Some(out)
}

/// The forks of session `s` among the session folders of `root`, by the entry of `s` each
/// continues from.
fn forks(s: &Session, root: &Path) -> HashMap<String, Vec<SessionLink>> {
    let mut out: HashMap<String, Vec<SessionLink>> = HashMap::new();
    let me = s.header().session_id.clone();
    let my_folder = s.path().parent().map(Path::to_path_buf);
    let Some(mine) = start_id(s.path()) else {
        return out;
    };
    let Ok(rd) = std::fs::read_dir(root) else {
        return out;
    };
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name();
        if !home::is_session_id(&name) || Some(e.path()) == my_folder {
            continue;
        }
        let events = e.path().join(home::EVENTS);
        if start_id(&events).as_deref() == Some(&mine) {
            found.push((name.to_string_lossy().into_owned(), events));
        }
    }
    found.sort();
    for (id, path) in found {
        let Some(n) = read_notice(&path) else {
            continue;
        };
        if n.parent != me {
            continue;
        }
        // The last copied entry this session still holds.
        let Some(at) = n.copied.iter().find_map(|x| s.find(x)) else {
            continue;
        };
        out.entry(s.id_string(at)).or_default().push(SessionLink {
            folder: Some(folder_of(root, &id)),
            session: id,
            entry: None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_names_the_parent_first() {
        let m = "Forked from \"[[QA1]] What is 2+2? (x)\" (4dd125e9-76d7-476c-8f81-d85f6275dab8) as \"[[QA1]] What is 2+2? (fork)\" (1d454d2d-f43a-424c-999f-b086faf1cb56).";
        assert_eq!(
            notice_ids(m),
            [
                "4dd125e9-76d7-476c-8f81-d85f6275dab8",
                "1d454d2d-f43a-424c-999f-b086faf1cb56"
            ]
        );
    }
}
