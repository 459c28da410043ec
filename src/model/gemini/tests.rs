//! Gemini CLI sessions against what the real CLI did with them: the kit's samples and
//! this project's own sessions (`tests/fixtures/gemini/`), each point's context as
//! `context.sh` measured it.

use crate::model::core::session::Session;
use serde_json::Value;
use std::path::{Path, PathBuf};

pub(crate) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gemini")
}

/// Every session file under `home/tmp/*/chats` (main sessions and subagents).
pub(crate) fn session_files(home: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(home.join("tmp")) else {
        return out;
    };
    for slug in rd.flatten() {
        let chats = slug.path().join("chats");
        let Ok(files) = std::fs::read_dir(&chats) else {
            continue;
        };
        for f in files.flatten() {
            let p = f.path();
            if p.is_dir() {
                for g in std::fs::read_dir(&p).into_iter().flatten().flatten() {
                    out.push(g.path());
                }
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The expected contexts of the session file `f`, if its set has them:
/// `contexts/<sessionId>.contexts.json`.
fn expected(contexts: &Path, s: &Session) -> Option<serde_json::Map<String, Value>> {
    let sid = &s.header().session_id;
    let p = contexts.join(format!("{sid}.contexts.json"));
    let v: Value = serde_json::from_slice(&std::fs::read(p).ok()?).ok()?;
    v.as_object().cloned()
}

/// Checks every point of every session of a fixture set: the entries are the
/// kit's points, each context equals the one measured, the leaf is the kit's.
/// Returns how many points were checked.
pub(crate) fn check_set(set: &Path) -> usize {
    let home = set.join("gemini-home");
    let contexts = set.join("contexts");
    let mut checked = 0;
    let mut failures = Vec::new();
    for f in session_files(&home) {
        let s = Session::open(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let g = s.gemini().expect("a Gemini CLI session");
        let Some(exp) = expected(&contexts, &s) else {
            continue;
        };
        // A start-up stub of the same session id has no points of its own.
        if g.files[0].replay.order.is_empty() {
            continue;
        }
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        for (id, want) in &exp {
            let Some(i) = s.find(id) else {
                failures.push(format!("{name}: point {id} is no entry"));
                continue;
            };
            if want.get("leaf") == Some(&Value::Bool(true)) {
                if s.leaf() != Some(i) {
                    failures.push(format!(
                        "{name}: leaf is {:?}, the kit says {id}",
                        s.leaf().map(|l| s.id_string(l))
                    ));
                }
            }
            if let Some(path) = want
                .get("point")
                .and_then(|p| p.get("path"))
                .and_then(Value::as_array)
            {
                // The parent is the point before it on its path.
                let parent = s.parent(i).map(|p| s.id_string(p));
                let points: Vec<&str> = path
                    .iter()
                    .filter_map(Value::as_str)
                    .filter(|p| exp.contains_key(*p) || s.find(p).is_some())
                    .collect();
                let want_parent = points.iter().rev().nth(1).map(|p| p.to_string());
                if s.alias(i).is_none() && parent != want_parent {
                    failures.push(format!(
                        "{name}: {id}: parent {parent:?}, the kit's path says {want_parent:?}"
                    ));
                }
            }
            let got = Value::Array(s.context_messages(i).unwrap());
            let want = want.get("contents").cloned().unwrap_or(Value::Null);
            if got != want {
                failures.push(format!(
                    "{name}: {id}: context differs\n  got  {}\n  want {}",
                    crate::model::core::js::js_stringify(&got),
                    crate::model::core::js::js_stringify(&want)
                ));
            }
            // The same bytes in the same order as the CLI's JSON.
            if crate::model::core::js::js_stringify(&got)
                != crate::model::core::js::js_stringify(&want)
            {
                failures.push(format!("{name}: {id}: key order differs"));
            }
            checked += 1;
        }
        // Every point is an entry, and every entry a point.
        let nodes: Vec<String> = (0..s.entries().len() as u32)
            .filter(|&i| s.entry(i).is_node() && s.in_main_file(i))
            .map(|i| s.id_string(i))
            .collect();
        for n in &nodes {
            if !exp.contains_key(n) {
                failures.push(format!("{name}: entry {n} is no point of the kit's"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} problems:\n{}",
        failures.len(),
        failures.join("\n")
    );
    checked
}

#[test]
fn every_point_of_the_samples_has_the_clis_context() {
    let n = check_set(&fixtures().join("samples"));
    assert!(n >= 90, "{n} points");
}

#[test]
fn the_system_instruction_is_the_samples() {
    let set = fixtures().join("samples");
    for f in session_files(&set.join("gemini-home")) {
        let s = Session::open(&f).unwrap();
        let Some(exp) = expected(&set.join("contexts"), &s) else {
            continue;
        };
        let Some(file) = exp
            .values()
            .find_map(|v| v.get("systemInstruction")?.get("file")?.as_str())
        else {
            continue;
        };
        let v: Value =
            serde_json::from_slice(&std::fs::read(set.join("contexts").join(file)).unwrap())
                .unwrap();
        let want = v["parts"][0]["text"].as_str().unwrap();
        // The samples' paths are under /home/dev/.gemini.
        let as_home =
            Path::new("/home/dev/.gemini").join(f.strip_prefix(set.join("gemini-home")).unwrap());
        assert_eq!(
            super::system::system_instruction(&as_home),
            want,
            "{}",
            f.display()
        );
    }
}
