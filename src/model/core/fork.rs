//! Forking: a branch of a session, from its root to one entry, copied into a new
//! session file of its own, the way the agent that wrote the file forks.
//!
//! [`plan`] computes the new file (its directory, name and bytes) from the session and
//! the entry; it reads the source and never writes it. [`write_new`] then creates the
//! file so that nobody ever sees half of it: the bytes go to a hidden temporary file in
//! the same directory, are synced, and are linked under the final name (which must not
//! exist yet), and the directory is synced.
//!
//! * **Pi** (1.6.0's `/fork` "at" an entry, `SessionManager.createBranchedSession`,
//!   PI-FORMAT.md §9.5 and §16.6): a new header (version 3, a UUID v7 id, the time,
//!   the source's `cwd`, `parentSession` = the source's absolute path); then every
//!   entry on the path from the root to the entry, as Pi holds it in memory (migrated
//!   from v2), without its `label` entries, keeping its id, re-chained so that each
//!   entry's `parentId` is the entry before it (`null` for the first); a compaction
//!   whose `firstKeptEntryId` named a dropped label names the next kept entry; then
//!   one fresh `label` entry for each entry of the path that still has a label (in
//!   the order Pi's label map holds them, with the label's own timestamp), chained
//!   after the last entry. Every line is `JSON.stringify` of that object. The file is
//!   `<timestamp with : and . as ->_<id>.jsonl` beside the source.
//!   Refused: a v1 file (its ids exist only in sessionfs's memory), an entry without
//!   an id, and a path through a parent cycle or a self-parent (Pi's `getBranch`
//!   would loop forever on it).
//! * **Claude Code** (2.1.332's `claude --resume SID --resume-session-at ENTRY
//!   --fork-session`, measured with the real CLI, `scripts/claude-fork-measure.py`):
//!   the chain Claude Code loads and cuts after the entry (the parallel-tool pieces
//!   pulled in, the attachments on it; the compaction re-link applied), each line with
//!   the new `sessionId`, a `promptId` (where the line has one) replaced by one fresh
//!   id, `entrypoint` (where present) `sdk-cli` (print mode's), `slug` left out, the
//!   usage of the messages the last compaction preserves zeroed (as Claude Code holds
//!   them), and `requestSessionId` (the source session's id) added at the end of an
//!   assistant line that lacks it; then a `last-prompt` naming the entry, so that
//!   `claude --resume` continues from it. No metadata line is copied. The file is
//!   `<new uuid>.jsonl` beside the source. An entry on another branch is forked as
//!   after a rewind to it. Refused: a subagent's line, a line Claude Code does not
//!   load, and an entry that a later compaction removed from what Claude Code loads.

use crate::model::claude::loader;
use crate::model::format::Format;
use crate::model::render::js_stringify;
use crate::model::session::{Session, flags};
use crate::model::time::{format_iso_ms, now_ms};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

/// The new session file, not written yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkFile {
    /// The directory it goes into (the source's).
    pub dir: PathBuf,
    /// Its file name.
    pub file_name: String,
    /// The new session's id.
    pub session_id: String,
    /// The whole file, every line ending in `\n`.
    pub bytes: Vec<u8>,
}

impl ForkFile {
    pub fn path(&self) -> PathBuf {
        self.dir.join(&self.file_name)
    }
}

/// The fresh values a fork draws: random by default ([`Fresh::random`]); tests pass the
/// ones the agent drew, to compare bytes.
#[derive(Debug, Clone)]
pub struct Fresh {
    pub session_id: String,
    /// Now, in ms since the epoch (Pi's header timestamp and file name).
    pub now_ms: i64,
    /// Claude Code: the `promptId` the copied lines get.
    pub prompt_id: String,
    /// Pi: the ids of the fresh label entries, in order (random ones once used up).
    pub label_ids: Vec<String>,
}

impl Fresh {
    /// Values as the agent of `format` draws them: a UUID v7 (Pi) or v4 (Claude Code)
    /// session id, the time now, random ids.
    pub fn random(format: Format) -> Fresh {
        let now = now_ms();
        Fresh {
            session_id: match format {
                Format::Pi => uuid_v7(now),
                Format::Claude => crate::model::claude::append::new_uuid(),
            },
            now_ms: now,
            prompt_id: crate::model::claude::append::new_uuid(),
            label_ids: Vec::new(),
        }
    }
}

/// Why a fork cannot be made. Nothing is written in any of these cases.
#[derive(Debug)]
pub enum ForkError {
    /// No entry with this id (or prefix).
    NoSuchEntry(String),
    /// More than one entry starts with this prefix.
    Ambiguous {
        prefix: String,
        ids: Vec<String>,
    },
    /// The agent cannot represent the path: the reason, in words.
    Refused(String),
    Io(io::Error),
}

impl std::fmt::Display for ForkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ForkError::NoSuchEntry(id) => write!(f, "no entry {id:?} in the session"),
            ForkError::Ambiguous { prefix, ids } => {
                write!(f, "{prefix:?} is the start of several entry ids: ")?;
                for (k, id) in ids.iter().take(5).enumerate() {
                    write!(f, "{}{id}", if k > 0 { ", " } else { "" })?;
                }
                if ids.len() > 5 {
                    write!(f, ", … ({} in all)", ids.len())?;
                }
                write!(f, "; give more of the id")
            }
            ForkError::Refused(why) => write!(f, "{why}"),
            ForkError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ForkError {}

impl From<io::Error> for ForkError {
    fn from(e: io::Error) -> Self {
        ForkError::Io(e)
    }
}

impl ForkError {
    /// The errno a filesystem write reports for it.
    pub fn errno(&self) -> i32 {
        match self {
            ForkError::NoSuchEntry(_) => libc::ENOENT,
            ForkError::Ambiguous { .. } => libc::EINVAL,
            ForkError::Refused(_) => libc::EROFS,
            ForkError::Io(e) => e.raw_os_error().unwrap_or(libc::EIO),
        }
    }
}

/// The entry named `id`: its exact id (or, for Claude Code, a subagent's
/// `agent-<id>`), else the one entry whose id starts with `id`.
pub fn find_entry(s: &Session, id: &str) -> Result<u32, ForkError> {
    if let Some(i) = s.find(id) {
        return Ok(i);
    }
    if id.is_empty() {
        return Err(ForkError::NoSuchEntry(id.into()));
    }
    let mut hits = Vec::new();
    for (i, e) in s.entries().iter().enumerate() {
        if e.is_node() && e.flags & flags::NO_ID == 0 {
            let full = s.id_string(i as u32);
            if full.starts_with(id) {
                hits.push((i as u32, full));
            }
        }
    }
    match hits.len() {
        0 => Err(ForkError::NoSuchEntry(id.into())),
        1 => Ok(hits[0].0),
        _ => Err(ForkError::Ambiguous {
            prefix: id.into(),
            ids: hits.into_iter().map(|(_, f)| f).collect(),
        }),
    }
}

/// The new session file that forking `s` at entry `i` makes (see the module docs).
pub fn plan(s: &Session, i: u32, fresh: &Fresh) -> Result<ForkFile, ForkError> {
    match s.format() {
        Format::Pi => pi(s, i, fresh),
        Format::Claude => claude(s, i, fresh),
    }
}

/// Forks `s` at entry `i` with fresh random values and writes the new file: its path.
pub fn fork(s: &Session, i: u32) -> Result<PathBuf, ForkError> {
    let f = plan(s, i, &Fresh::random(s.format()))?;
    Ok(write_new(
        &f.dir,
        &f.file_name,
        &f.bytes,
        mode_of(s.format()),
    )?)
}

/// The permission bits the agent gives its session files (before the umask).
pub fn mode_of(format: Format) -> u32 {
    match format {
        Format::Pi => 0o666,
        Format::Claude => 0o600,
    }
}

// ----- Pi ------------------------------------------------------------------------------

fn pi(s: &Session, i: u32, fresh: &Fresh) -> Result<ForkFile, ForkError> {
    let what = || s.id_string(i);
    if s.is_v1() {
        return Err(ForkError::Refused(format!(
            "cannot fork {}: the session is in format v1, whose entries have no ids in the file \
             (sessionfs derives them; Pi would draw others when it rewrites the file to v3). \
             Open it in Pi once (it migrates the file), then fork",
            what()
        )));
    }
    let e = s.entry(i);
    if !e.is_node() || e.flags & flags::NO_ID != 0 {
        return Err(ForkError::Refused(format!(
            "cannot fork at line {}: the entry has no id in the file, and Pi forks at an id",
            e.line
        )));
    }
    let path = s.path_to(i);
    if let Some(&bad) = path
        .iter()
        .find(|&&p| s.entry(p).flags & (flags::CYCLE | flags::SELF_PARENT) != 0)
    {
        return Err(ForkError::Refused(format!(
            "cannot fork {}: its path runs through a parent cycle at line {} (Pi's fork would \
             loop forever there); `sessionfs check` shows it",
            what(),
            s.entry(bad).line
        )));
    }

    // The header.
    let header: Value = serde_json::from_slice(&s.header_bytes()?)
        .map_err(|e| ForkError::Io(io::Error::new(io::ErrorKind::InvalidData, e)))?;
    let cwd = match header.get("cwd").and_then(Value::as_str) {
        Some(c) => pi_resolve(c).ok_or_else(|| {
            ForkError::Refused(format!(
                "cannot fork: the session's cwd {c:?} is not an absolute path (Pi would resolve \
                 it against the directory it runs in)"
            ))
        })?,
        None => {
            return Err(ForkError::Refused(
                "cannot fork: the session header has no cwd (Pi would use the directory it runs in)"
                    .into(),
            ));
        }
    };
    let source = lexical_absolute(s.path())?;
    let ts = format_iso_ms(fresh.now_ms);
    let mut h = Map::new();
    h.insert("type".into(), "session".into());
    h.insert("version".into(), 3.into());
    h.insert("id".into(), fresh.session_id.clone().into());
    h.insert("timestamp".into(), ts.clone().into());
    h.insert("cwd".into(), cwd.into());
    h.insert(
        "parentSession".into(),
        source.to_string_lossy().into_owned().into(),
    );
    let mut out = js_stringify(&Value::Object(h)).into_bytes();
    out.push(b'\n');

    // The path without labels, re-chained.
    let mut kept_ids: Vec<String> = Vec::with_capacity(path.len());
    let mut replacement: HashMap<String, String> = HashMap::new();
    let mut pending: Vec<String> = Vec::new();
    let mut parent = Value::Null;
    for &p in &path {
        let mut v = s.entry_value(p)?;
        let id = s.id_string(p);
        let Some(obj) = v.as_object_mut() else {
            continue;
        };
        if obj.get("type").and_then(Value::as_str) == Some("label") {
            pending.push(id);
            continue;
        }
        for l in pending.drain(..) {
            replacement.insert(l, id.clone());
        }
        obj.insert("parentId".into(), parent.clone());
        if obj.get("type").and_then(Value::as_str) == Some("compaction")
            && let Some(fk) = obj.get("firstKeptEntryId").and_then(Value::as_str)
            && fk != id
            && let Some(r) = replacement.get(fk)
        {
            let r = r.clone();
            obj.insert("firstKeptEntryId".into(), r.into());
        }
        out.extend_from_slice(js_stringify(&v).as_bytes());
        out.push(b'\n');
        parent = Value::String(id.clone());
        kept_ids.push(id);
    }

    // Labels still on the path, in the order of Pi's label map.
    let on_path: HashSet<&str> = kept_ids.iter().map(String::as_str).collect();
    let mut taken: HashSet<String> = kept_ids.iter().cloned().collect();
    let mut fresh_ids = fresh.label_ids.iter();
    for (target, label, ts) in pi_labels(s)? {
        if !on_path.contains(target.as_str()) {
            continue;
        }
        let id = loop {
            let id = match fresh_ids.next() {
                Some(id) => id.clone(),
                None => format!("{:08x}", crate::model::append::random_u32()),
            };
            if taken.insert(id.clone()) {
                break id;
            }
        };
        let mut m = Map::new();
        m.insert("type".into(), "label".into());
        m.insert("id".into(), id.clone().into());
        m.insert("parentId".into(), parent.clone());
        if let Some(ts) = ts {
            m.insert("timestamp".into(), ts);
        }
        m.insert("targetId".into(), target.into());
        m.insert("label".into(), label);
        out.extend_from_slice(js_stringify(&Value::Object(m)).as_bytes());
        out.push(b'\n');
        parent = Value::String(id);
    }

    Ok(ForkFile {
        dir: source.parent().map(Path::to_path_buf).unwrap_or_default(),
        file_name: format!("{}_{}.jsonl", ts.replace([':', '.'], "-"), fresh.session_id),
        session_id: fresh.session_id.clone(),
        bytes: out,
    })
}

/// Pi's label map after loading (`_buildIndex`): target id → (label, the timestamp of
/// the label entry that set it), in the map's insertion order (a cleared label leaves
/// it; setting it again puts it last; relabelling keeps its place).
fn pi_labels(s: &Session) -> io::Result<Vec<(String, Value, Option<Value>)>> {
    let mut order: Vec<Option<(String, Value, Option<Value>)>> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for i in 0..s.entries().len() as u32 {
        if s.kind_name(i) != "label" {
            continue;
        }
        let v = match s.entry_value(i) {
            Ok(v) => v,
            Err(e) if e.kind() == io::ErrorKind::InvalidData => continue,
            Err(e) => return Err(e),
        };
        if v.get("type").and_then(Value::as_str) != Some("label") {
            continue;
        }
        let Some(target) = v.get("targetId").and_then(Value::as_str) else {
            continue;
        };
        let label = v.get("label").cloned().unwrap_or(Value::Null);
        let set = match &label {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
            Value::String(t) => !t.is_empty(),
            _ => true,
        };
        if set {
            let ts = v.get("timestamp").cloned();
            match at.get(target) {
                Some(&k) => order[k] = Some((target.to_string(), label, ts)),
                None => {
                    at.insert(target.to_string(), order.len());
                    order.push(Some((target.to_string(), label, ts)));
                }
            }
        } else if let Some(k) = at.remove(target) {
            order[k] = None;
        }
    }
    Ok(order.into_iter().flatten().collect())
}

/// Node's `path.resolve` of an absolute path (`.` and `..` resolved, repeated and
/// trailing slashes dropped), and Pi's `~` expansion; `None` for a relative path.
fn pi_resolve(p: &str) -> Option<String> {
    let expanded;
    let p = if p == "~" || p.starts_with("~/") {
        let home = std::env::var("HOME").ok()?;
        expanded = format!("{home}{}", &p[1..]);
        expanded.as_str()
    } else {
        p
    };
    if !p.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    Some(format!("/{}", parts.join("/")))
}

/// `path` made absolute (against the current directory) and normalised lexically, as
/// Node's `path.resolve` does: symbolic links are not followed.
fn lexical_absolute(path: &Path) -> io::Result<PathBuf> {
    let abs = std::path::absolute(path)?;
    let mut out = PathBuf::from("/");
    for c in abs.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    Ok(out)
}

/// A UUID v7 (RFC 9562) for the time `ms`, as Pi 1.6 makes session ids.
pub fn uuid_v7(ms: i64) -> String {
    let mut b = [0u8; 16];
    for chunk in b.chunks_mut(4) {
        chunk.copy_from_slice(&crate::model::append::random_u32().to_ne_bytes());
    }
    let ms = ms.max(0) as u64;
    b[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
    b[6] = (b[6] & 0x0f) | 0x70;
    b[8] = (b[8] & 0x3f) | 0x80;
    crate::model::id::uuid_string(&b)
}

// ----- Claude Code ---------------------------------------------------------------------

fn claude(s: &Session, x: u32, fresh: &Fresh) -> Result<ForkFile, ForkError> {
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
    let Some(chain) = loader::chain_messages(s, st, Some(x), crate::model::claude::rules::CURRENT)?
    else {
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
        .find(|&b| {
            st.nodes[b as usize].has(crate::model::claude::nflags::BOUNDARY) && st.file_of(b) == 0
        })
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
    let mut first_prompt: Option<String> = None;
    for mut v in chain {
        let Some(obj) = v.as_object_mut() else {
            continue;
        };
        if first_prompt.is_none() {
            first_prompt = typed_prompt(obj);
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
    if let Some(p) = first_prompt {
        lp.insert("lastPrompt".into(), p.into());
    }
    lp.insert("leafUuid".into(), s.id_string(x).into());
    lp.insert("sessionId".into(), fresh.session_id.clone().into());
    out.extend_from_slice(js_stringify(&Value::Object(lp)).as_bytes());
    out.push(b'\n');
    let source = lexical_absolute(s.path())?;
    Ok(ForkFile {
        dir: source.parent().map(Path::to_path_buf).unwrap_or_default(),
        file_name: format!("{}.jsonl", fresh.session_id),
        session_id: fresh.session_id.clone(),
        bytes: out,
    })
}

/// The text of a prompt the user typed (a user line that is not meta, a compact
/// summary or a tool result).
fn typed_prompt(obj: &Map<String, Value>) -> Option<String> {
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

// ----- writing -------------------------------------------------------------------------

/// Creates `dir/name` holding `bytes`, all at once: written to a hidden temporary file
/// in `dir` (`O_EXCL`), synced, linked under `name` (which fails with `EEXIST` if it
/// exists: nothing is ever replaced), and the directory synced. No reader sees a part
/// of the file under `name`; on failure nothing is left behind.
pub fn write_new(dir: &Path, name: &str, bytes: &[u8], mode: u32) -> io::Result<PathBuf> {
    let target = dir.join(name);
    let mut tmp;
    let mut file: File;
    loop {
        tmp = dir.join(format!(
            ".{name}.{:08x}.tmp",
            crate::model::append::random_u32()
        ));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(libc::O_CLOEXEC)
            .open(&tmp)
        {
            Ok(f) => {
                file = f;
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    let res = (|| {
        file.write_all(bytes)?;
        file.sync_all()?;
        let a = CString::new(tmp.as_os_str().as_bytes())?;
        let b = CString::new(target.as_os_str().as_bytes())?;
        // SAFETY: both are valid NUL-terminated paths.
        if unsafe { libc::link(a.as_ptr(), b.as_ptr()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    })();
    let _ = std::fs::remove_file(&tmp);
    res?;
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_v7_carries_the_time() {
        let u = uuid_v7(0x0123_4567_89ab);
        assert_eq!(&u[..13], "01234567-89ab");
        assert_eq!(&u[14..15], "7");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"));
    }

    #[test]
    fn resolve_like_node() {
        assert_eq!(pi_resolve("/a/./b//c/../d/").as_deref(), Some("/a/b/d"));
        assert_eq!(pi_resolve("/").as_deref(), Some("/"));
        assert_eq!(pi_resolve("rel/x"), None);
    }

    #[test]
    fn write_new_never_replaces() {
        let d = tempfile::tempdir().unwrap();
        let p = write_new(d.path(), "a.jsonl", b"one\n", 0o600).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"one\n");
        let e = write_new(d.path(), "a.jsonl", b"two\n", 0o600).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&p).unwrap(), b"one\n");
        // Nothing left behind.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }
}
