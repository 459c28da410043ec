//! Gemini CLI sessions against what the real CLI did with them: the kit's samples and
//! this project's own sessions (`tests/fixtures/gemini/`), each point's context as
//! `context.sh` measured it.

use crate::model::core::session::Session;
use serde_json::Value;
use std::path::{Path, PathBuf};

pub(crate) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gemini")
}

/// A copy of fixture set `set` in `into`, its `.zst` files (the large ones are kept
/// compressed) decompressed.
pub(crate) fn materialize(set: &Path, into: &Path) {
    std::fs::create_dir_all(into).unwrap();
    for e in std::fs::read_dir(set).unwrap().flatten() {
        let p = e.path();
        let name = e.file_name();
        if p.is_dir() {
            materialize(&p, &into.join(&name));
        } else if let Some(plain) = name.to_str().and_then(|n| n.strip_suffix(".zst")) {
            let f = std::fs::File::open(&p).unwrap();
            let mut dec =
                ruzstd::decoding::StreamingDecoder::new(std::io::BufReader::new(f)).unwrap();
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut dec, &mut out).unwrap();
            std::fs::write(into.join(plain), out).unwrap();
        } else {
            std::fs::copy(&p, into.join(&name)).unwrap();
        }
    }
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
            // No leaf: the kit's key is `null` (nothing is left in the list).
            if id == "null" {
                if s.leaf().is_some() {
                    failures.push(format!("{name}: a leaf, the kit says none"));
                }
                continue;
            }
            let Some(i) = s.find(id) else {
                failures.push(format!("{name}: point {id} is no entry"));
                continue;
            };
            if want.get("leaf") == Some(&Value::Bool(true)) && s.leaf() != Some(i) {
                failures.push(format!(
                    "{name}: leaf is {:?}, the kit says {id}",
                    s.leaf().map(|l| s.id_string(l))
                ));
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
            if !exp.contains_key(n) && s.leaf().is_some() {
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
fn every_point_of_our_own_sessions_has_the_clis_context() {
    let d = tempfile::tempdir().unwrap();
    materialize(&fixtures().join("own"), d.path());
    let n = check_set(d.path());
    assert!(n >= 100, "{n} points");
}

#[test]
fn every_point_of_the_damaged_sessions_has_the_clis_context() {
    let n = check_set(&fixtures().join("damaged"));
    assert!(n >= 40, "{n} points");
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

fn sample(slug: &str, name: &str) -> PathBuf {
    fixtures()
        .join("samples/gemini-home/tmp")
        .join(slug)
        .join("chats")
        .join(name)
}

#[test]
fn a_subagent_hangs_under_the_call_that_ran_it() {
    let s = Session::open(sample("sub", "session-2026-12-05T07-38-60b5bfa0.jsonl")).unwrap();
    let a = s
        .find("agent-b99483c7-67ed-4019-993a-e39d9e0207d7")
        .unwrap();
    assert_eq!(
        s.alias(a),
        Some("agent-b99483c7-67ed-4019-993a-e39d9e0207d7")
    );
    assert!(s.id_string(a).starts_with("25310a97"));
    let p = s.parent(a).unwrap();
    assert!(s.id_string(p).starts_with("5c5020fd"), "{}", s.id_string(p));
    assert!(!s.in_main_file(a));
    assert!(!s.can_reply_at(a));
    // Its entries are the subagent's own points, chained.
    let kids: Vec<u32> = s.children(a).collect();
    assert_eq!(kids.len(), 1);
    assert!(s.has_side_files());
    // The leaf is the main session's.
    assert!(s.id_string(s.leaf().unwrap()).starts_with("81cd13e8"));
}

#[test]
fn names_are_the_summary_or_the_first_prompt() {
    let s = Session::open(sample("qa", "session-2026-12-05T07-36-7fb7d652.jsonl")).unwrap();
    assert_eq!(s.name(), Some("[[QA1]] What is 2+2?"));
    let sub = Session::open(
        fixtures()
            .join("samples/gemini-home/tmp/sub/chats/60b5bfa0-fc6c-46ae-84cc-e9dc0870dad1/b99483c7-67ed-4019-993a-e39d9e0207d7.jsonl"),
    )
    .unwrap();
    // A subagent's file ends with its result as `summary`.
    assert!(
        sub.name()
            .unwrap()
            .starts_with("{ \"response\": \"There are"),
        "{:?}",
        sub.name()
    );
    let j: Value = serde_json::from_slice(&s.session_json().unwrap()).unwrap();
    assert_eq!(j["format"], "gemini-cli");
    assert_eq!(j["sessionId"], "7fb7d652-217c-47ce-af29-36bb75378f8d");
    assert_eq!(j["kind"], "main");
    assert!(j.get("messages").is_none());
}

#[test]
fn rewinds_leave_branches() {
    let s = Session::open(sample("tui", "session-2026-12-05T07-38-4d2a47a1.jsonl")).unwrap();
    // The rewound third turn and the new one are siblings under the second reply.
    let by_prefix = |p: &str| {
        (0..s.entries().len() as u32)
            .find(|&i| s.entry(i).is_node() && s.id_string(i).starts_with(p))
            .unwrap()
    };
    let fork = by_prefix("1a50616f");
    let kids: Vec<String> = s
        .children(fork)
        .map(|c| s.id_string(c)[..8].to_string())
        .collect();
    assert_eq!(kids, ["d0ba14aa", "4614e383"]);
    // The compression starts a new root, as does the restored checkpoint.
    let roots: Vec<String> = s
        .roots()
        .iter()
        .map(|&r| s.id_string(r)[..8].to_string())
        .collect();
    assert_eq!(roots, ["195d4a3c", "7c863452", "55f352ad"]);
    assert_eq!(s.kind_name(by_prefix("7c863452")), "compaction");
    assert_eq!(s.kind_name(by_prefix("03d8d15b")), "info");
    assert!(s.leaf_count() >= 4);
}

/// A reply at every point of a session: the lines [`super::append`] writes, read
/// back, make a new entry under that point, the leaf, whose context is the point's
/// followed by the reply (merged into the last user content, as the CLI merges it).
#[test]
fn a_reply_continues_from_its_point() {
    use crate::model::core::reply::NewEntry;
    for (slug, name) in [
        ("tui", "session-2026-12-05T07-38-4d2a47a1.jsonl"),
        ("tools", "session-2026-12-05T07-36-ac5699fe.jsonl"),
    ] {
        let s0 = Session::open(sample(slug, name)).unwrap();
        let points: Vec<String> = (0..s0.entries().len() as u32)
            .filter(|&i| s0.entry(i).is_node() && s0.in_main_file(i))
            .map(|i| s0.id_string(i))
            .collect();
        for p in points.iter().map(Some).chain([None]) {
            let d = tempfile::tempdir().unwrap();
            let f = d.path().join(name);
            std::fs::copy(sample(slug, name), &f).unwrap();
            let mut s = Session::open(&f).unwrap();
            let before = p.map(|p| s.context_messages(s.find(p).unwrap()).unwrap());
            let text = "[[REPLY]] ünïcode \"quoted\"\nsecond line";
            let (id, _) = s
                .append(&NewEntry::Reply {
                    parent: p.map(String::as_str),
                    text,
                })
                .unwrap();
            let s = Session::open(&f).unwrap();
            let i = s.find(&id).unwrap();
            assert_eq!(s.leaf(), Some(i), "{p:?}");
            assert_eq!(s.parent(i).map(|q| s.id_string(q)).as_ref(), p, "{name}");
            let mut want = before.unwrap_or_default();
            // The placeholder the CLI puts after an unanswered tool response is no
            // longer needed once a prompt follows the response: the prompt joins it.
            let placeholder = serde_json::json!({"parts": [{"text": super::context::INTERRUPTED}], "role": "model"});
            let after_response = want.last() == Some(&placeholder);
            if after_response {
                want.pop();
            }
            let part = serde_json::json!({"text": text});
            match want.last_mut() {
                Some(c) if c["role"] == "user" => c["parts"].as_array_mut().unwrap().push(part),
                _ => want.push(serde_json::json!({"parts": [part], "role": "user"})),
            }
            let mut got = s.context_messages(i).unwrap();
            if after_response {
                // The last user turn now holds responses and text: the CLI's active
                // loop starts further back, and the first call of every model turn
                // after that start gets a signature.
                let unsign = |v: &mut Vec<Value>| {
                    for c in v.iter_mut() {
                        for p in c["parts"].as_array_mut().into_iter().flatten() {
                            if let Some(o) = p.as_object_mut() {
                                o.remove("thoughtSignature");
                            }
                        }
                    }
                };
                unsign(&mut got);
                unsign(&mut want);
            }
            assert_eq!(got, want, "{name} at {p:?}");
        }
    }
}
