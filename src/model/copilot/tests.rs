//! The Copilot CLI model against the real CLI's files and requests: every entry of every
//! fixture session reads equal to what the CLI sends when continuing from it
//! (`tests/fixtures/copilot/*/contexts/`, made by the kit's `context.sh`).

use super::index::Copilot;
use crate::model::core::session::Session;
use serde_json::Value;
use std::path::{Path, PathBuf};

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/copilot")
}

/// Every fixture set: (its folder, each session's `events.jsonl` with its expected contexts).
pub fn sets() -> Vec<(PathBuf, Vec<(PathBuf, Value)>)> {
    let mut out = Vec::new();
    for set in ["samples", "heldout", "own"] {
        let root = fixtures().join(set);
        let Ok(rd) = std::fs::read_dir(root.join("copilot-home/session-state")) else {
            continue;
        };
        let mut sessions = Vec::new();
        let mut ids: Vec<_> = rd.flatten().map(|e| e.file_name()).collect();
        ids.sort();
        for id in ids {
            let id = id.to_string_lossy().into_owned();
            let ctx = root.join(format!("contexts/{id}.contexts.json"));
            let Ok(text) = std::fs::read_to_string(&ctx) else {
                continue;
            };
            let v: Value = serde_json::from_str(&text).unwrap();
            sessions.push((
                root.join(format!("copilot-home/session-state/{id}/events.jsonl")),
                v,
            ));
        }
        out.push((root, sessions));
    }
    out
}

fn agent(s: &Session) -> &Copilot {
    s.agent().as_any().downcast_ref::<Copilot>().unwrap()
}

#[test]
fn every_point_of_every_fixture_is_what_the_cli_sends() {
    let mut points = 0;
    let mut failures = Vec::new();
    for (_, sessions) in sets() {
        for (path, expected) in sessions {
            let s = Session::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_eq!(s.format(), crate::model::core::format::Format::Copilot);
            for (id, want) in expected.as_object().unwrap() {
                let i = if want.get("leaf") == Some(&Value::Bool(true)) {
                    s.leaf().expect("a leaf")
                } else {
                    s.find(id)
                        .unwrap_or_else(|| panic!("{}: no entry {id}", path.display()))
                };
                let got = agent(&s).context_at(&s, i).unwrap();
                points += 1;
                if Value::Array(got.clone()) != want["messages"] {
                    failures.push(format!(
                        "{} at {id}{}:\n got  {}\n want {}",
                        path.display(),
                        if want.get("leaf").is_some() {
                            " (leaf)"
                        } else {
                            ""
                        },
                        serde_json::to_string(&got).unwrap(),
                        serde_json::to_string(&want["messages"]).unwrap()
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {points} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(points > 100, "{points}");
}

/// The search's index indexes nothing of a line `search::shown` says no for, so every
/// entry of every fixture session is shown, and so is every asset line (images other
/// lines name); the lines it drops are there (the system prompts, 61% of a home).
#[test]
fn every_entry_line_is_shown() {
    let mut files: Vec<PathBuf> = crate::model::core::scan::tests::jsonl_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/copilot"),
    )
    .into_iter()
    .filter(|p| p.file_name().is_some_and(|n| n == "events.jsonl"))
    .collect();
    files.sort();
    let (nodes, dropped) =
        crate::model::core::grep::shown_check::every_entry_shown(&files, super::search::shown);
    let mut assets = 0;
    for f in &files {
        for l in std::fs::read(f).unwrap().split(|&b| b == b'\n') {
            if memchr::memmem::find(l, br#""type":"session.binary_asset""#).is_some() {
                assert!(
                    super::search::shown(l),
                    "{}: an asset line not shown",
                    f.display()
                );
                assets += 1;
            }
        }
    }
    assert!(
        nodes > 200 && dropped > 100 && assets > 0,
        "{nodes} nodes, {dropped} lines dropped, {assets} assets"
    );
}
