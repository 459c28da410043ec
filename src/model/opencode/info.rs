//! `session.json` of an opencode session: the session as opencode's own API returns it
//! (`Session.Info` with its project), made from its row when the session is read.

use super::store::{ProjectRow, SessionRow};
use crate::model::core::js::js_stringify_pretty;
use serde_json::{Map, Value, json};

/// `session.json`: the session as opencode's own API returns it (`Session.Info`, with
/// its project), pretty-printed.
pub fn session_json(row: &SessionRow, project: Option<&ProjectRow>) -> Vec<u8> {
    let c = &row.columns;
    let g = |k: &str| c.get(k).cloned().unwrap_or(Value::Null);
    let parsed = |k: &str| match c.get(k) {
        Some(Value::String(t)) => serde_json::from_str(t).unwrap_or(Value::String(t.clone())),
        Some(v) => v.clone(),
        None => Value::Null,
    };
    let mut o = Map::new();
    let mut put = |k: &str, v: Value| {
        if !v.is_null() {
            o.insert(k.to_string(), v);
        }
    };
    put("id", g("id"));
    put("slug", g("slug"));
    put("projectID", g("project_id"));
    put("workspaceID", g("workspace_id"));
    put("directory", g("directory"));
    put("path", g("path"));
    put("parentID", g("parent_id"));
    put("title", g("title"));
    put("agent", g("agent"));
    put("model", parsed("model"));
    put("version", g("version"));
    let has_summary = ["summary_additions", "summary_deletions", "summary_files"]
        .iter()
        .any(|k| !g(k).is_null());
    if has_summary {
        let n = |k: &str| match g(k) {
            Value::Null => json!(0),
            v => v,
        };
        let mut sm = Map::new();
        sm.insert("additions".into(), n("summary_additions"));
        sm.insert("deletions".into(), n("summary_deletions"));
        sm.insert("files".into(), n("summary_files"));
        let d = parsed("summary_diffs");
        if !d.is_null() {
            sm.insert("diffs".into(), d);
        }
        put("summary", Value::Object(sm));
    }
    put("cost", g("cost"));
    put(
        "tokens",
        json!({"input": g("tokens_input"), "output": g("tokens_output"),
            "reasoning": g("tokens_reasoning"),
            "cache": {"read": g("tokens_cache_read"), "write": g("tokens_cache_write")}}),
    );
    if let Value::String(u) = g("share_url") {
        put("share", json!({"url": u}));
    }
    put("metadata", parsed("metadata"));
    put("revert", parsed("revert"));
    put("permission", parsed("permission"));
    let mut t = Map::new();
    for (k, col) in [
        ("created", "time_created"),
        ("updated", "time_updated"),
        ("compacting", "time_compacting"),
        ("archived", "time_archived"),
    ] {
        if !g(col).is_null() {
            t.insert(k.into(), g(col));
        }
    }
    put("time", Value::Object(t));
    put(
        "project",
        match project {
            Some(p) => {
                let mut pm = Map::new();
                pm.insert("id".into(), json!(p.id));
                if let Some(n) = &p.name {
                    pm.insert("name".into(), json!(n));
                }
                pm.insert("worktree".into(), json!(p.worktree));
                Value::Object(pm)
            }
            None => Value::Null,
        },
    );
    let mut out = js_stringify_pretty(&Value::Object(o)).into_bytes();
    out.push(b'\n');
    out
}
