//! Pi's context goldens (tests/fixtures/golden, made by scripts/pi-goldens.mjs with Pi
//! 1.6.0's own code; the format is described in tests/fixtures/README.md).
//!
//! For each session `NAME`, `NAME.messages.jsonl` holds every distinct message Pi's
//! `convertToLlm` gave, one per line as `JSON.stringify` writes it, and
//! `NAME.contexts.jsonl` one line per entry (and one for the default leaf) naming the
//! messages of its context by line number in that table, with the thinking level, the
//! model and the shape of the path.
#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};

/// The context Pi built for one target entry.
pub struct Target {
    /// The entry's id (Pi's migrated id for v1 files); `None` for the default leaf.
    pub target: Option<String>,
    /// The entry's 1-based line in the session file.
    pub line: u32,
    pub thinking_level: String,
    pub model: Value,
    pub agent_message_count: usize,
    /// Lines of the message table.
    pub messages: Vec<usize>,
    /// Entries on Pi's root→target path.
    pub path_length: usize,
    /// Line of the entry before the target on that path.
    pub parent_line: Option<u32>,
}

pub struct Goldens {
    pub name: String,
    pub targets: Vec<Target>,
    table: Vec<String>,
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every golden's name, sorted.
pub fn names() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(repo().join("tests/fixtures/golden"))
        .unwrap()
        .filter_map(|e| {
            let n = e.unwrap().file_name().into_string().unwrap();
            n.strip_suffix(".contexts.jsonl").map(str::to_string)
        })
        .collect();
    v.sort();
    v
}

/// The session file a golden was made from: in tests/fixtures/sessions, examples or
/// tests/fixtures/damaged.
pub fn session_file(name: &str) -> PathBuf {
    for dir in [
        "tests/fixtures/sessions",
        "examples",
        "tests/fixtures/damaged",
    ] {
        let p = repo().join(dir).join(format!("{name}.jsonl"));
        if p.exists() {
            return p;
        }
    }
    panic!("no session file for golden {name}");
}

fn golden_path(name: &str, what: &str) -> PathBuf {
    repo()
        .join("tests/fixtures/golden")
        .join(format!("{name}.{what}.jsonl"))
}

impl Goldens {
    pub fn load(name: &str) -> Goldens {
        let read = |p: &Path| {
            std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        };
        let table = read(&golden_path(name, "messages"))
            .lines()
            .map(str::to_string)
            .collect();
        let targets = read(&golden_path(name, "contexts"))
            .lines()
            .map(|l| {
                let g: Value = serde_json::from_str(l).unwrap();
                Target {
                    target: g["target"].as_str().map(str::to_string),
                    line: g["line"].as_u64().unwrap() as u32,
                    thinking_level: g["thinkingLevel"].as_str().unwrap().to_string(),
                    model: g["model"].clone(),
                    agent_message_count: g["agentMessageCount"].as_u64().unwrap() as usize,
                    messages: g["messages"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|k| k.as_u64().unwrap() as usize)
                        .collect(),
                    path_length: g["pathLength"].as_u64().unwrap() as usize,
                    parent_line: g["parentLine"].as_u64().map(|l| l as u32),
                }
            })
            .collect();
        Goldens {
            name: name.to_string(),
            targets,
            table,
        }
    }

    /// The target's messages, each as `JSON.stringify` wrote it.
    pub fn message_texts(&self, t: &Target) -> Vec<&str> {
        t.messages.iter().map(|&k| self.table[k].as_str()).collect()
    }

    /// The exact bytes of the mount's `context.json` for the target.
    pub fn context_json(&self, t: &Target) -> String {
        let ms = self.message_texts(t);
        if ms.is_empty() {
            return "[]\n".to_string();
        }
        format!("[\n{}\n]\n", ms.join(",\n"))
    }
}
