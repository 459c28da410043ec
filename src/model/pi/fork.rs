//! Pi's fork (see [`crate::model::core::fork`] for what it writes and why).

use crate::model::core::fork::{ForkError, ForkFile, Fresh, lexical_absolute};
use crate::model::core::js::js_stringify;
use crate::model::core::session::{Session, flags};
use crate::model::core::time::format_iso_ms;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::io;
use std::path::Path;

/// Why Pi's fork at entry `i` cannot be made, found without writing the file out
/// (the checks [`plan`] starts with): the mount shows `fork` there without a write
/// bit, and reading it says why.
pub fn refusal(s: &Session, i: u32) -> Option<ForkError> {
    checks(s, i).err()
}

/// The checks a fork at entry `i` must pass; the path from the root to it, and the
/// session's `cwd` as Pi resolves it.
fn checks(s: &Session, i: u32) -> Result<(Vec<u32>, String), ForkError> {
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
    Ok((path, cwd))
}

pub fn plan(s: &Session, i: u32, fresh: &Fresh) -> Result<ForkFile, ForkError> {
    let (path, cwd) = checks(s, i)?;
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
                None => format!("{:08x}", crate::model::core::id::random_u32()),
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
        extra: Vec::new(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_like_node() {
        assert_eq!(pi_resolve("/a/./b//c/../d/").as_deref(), Some("/a/b/d"));
        assert_eq!(pi_resolve("/").as_deref(), Some("/"));
        assert_eq!(pi_resolve("rel/x"), None);
    }
}
