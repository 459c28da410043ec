//! Where a hit is in a Copilot CLI session, without opening the session.
//!
//! Opening a session (`Session::open`) parses every line, builds the tree, reads
//! `workspace.yaml` and names the session: paid by every session a search finds
//! something in. The tree of a session without subagents is a chain: every entry hangs
//! under the entry before it in the file (the CLI's order, §3; [`super::index`]). A
//! hit's directory is then the ids of the entry lines up to it, read in file order, so
//! only the lines before the last hit are read, each once, with the same head the index
//! reads ([`LineHead::parse`]), classified as the index classifies them
//! ([`events::classify`]) and given the KIND file the index gives them (interned in a
//! [`KindTable`] in the same order).
//!
//! Anything else is left to the session's index ([`paths`] says `None`): an entry of a
//! subagent (its chain hangs under the call that started it), an entry without an `id`
//! or with one an earlier entry has (named `line-N`, `ID:L<N>`), a first line that is
//! no object, a line too long to hold, a file that ends before the last hit.
//!
//! The search reaches this module only through Copilot's rules
//! (`super::search::COPILOT`, [`crate::model::core::grep::HitPaths::Direct`]).

use super::events::{self, Ev, Line as Kind};
use crate::model::core::grep::HitPath;
use crate::model::core::input::{self, Line};
use crate::model::core::kind::KindTable;
use crate::model::core::scan::{LineError, LineHead};
use std::collections::HashSet;
use std::fs::File;
use std::io;
use std::path::Path;

/// Why the reading stopped early.
enum Stop {
    /// Past the last hit: all is known.
    Done,
    /// A line the chain cannot be read through (see the module docs).
    Doubt,
    Io(io::Error),
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Stop {
        Stop::Io(e)
    }
}

/// The paths of `hits` (each a line's `(offset, len)` without its `\n`, in file order)
/// in the session file `_path`, read through `f`: one [`HitPath`] per hit that is an
/// entry, in file order (the mount's order for a chain). `None` when the session is not
/// one this reads (see the module docs).
pub fn paths(_path: &Path, f: &File, hits: &[(u64, usize)]) -> io::Result<Option<Vec<HitPath>>> {
    let Some(last) = hits.last() else {
        return Ok(Some(Vec::new()));
    };
    let end = last.0 + last.1 as u64;
    let mut out = Vec::with_capacity(hits.len());
    let mut chain: Vec<String> = Vec::new();
    // The bytes the chain's ids take with a slash each (`HitPath::of_chain`).
    let mut chain_bytes = 0usize;
    let mut seen: HashSet<String> = HashSet::new();
    let mut kinds = KindTable::default();
    let mut parsed_one = false;
    let mut next = 0usize;
    let read = input::read_line_batches(f, 0, None, input::max_line(), 1 << 20, |lines| {
        for l in lines {
            let (offset, bytes) = match *l {
                Line::Whole { bytes, offset } => (offset, bytes),
                Line::TooLong { .. } => return Err(Stop::Doubt),
            };
            match LineHead::parse(bytes) {
                Ok(h) => {
                    parsed_one = true;
                    let ty = h.ty.as_str().unwrap_or("");
                    if let Kind::Entry(ev) = events::classify(ty) {
                        // A subagent's entry hangs under its call, not in the chain.
                        if ev != Ev::SubagentEnd && super::index::agent_id(bytes).is_some() {
                            return Err(Stop::Doubt);
                        }
                        let Some(id) = h.id.as_str() else {
                            return Err(Stop::Doubt);
                        };
                        if !seen.insert(id.to_string()) {
                            return Err(Stop::Doubt);
                        }
                        chain.push(id.to_string());
                        chain_bytes += id.len() + 1;
                        let name = if ev == Ev::Unknown { ty } else { ev.kind() };
                        let k = kinds.intern_named(ty, "", name);
                        while next < hits.len() && hits[next].0 < offset {
                            next += 1;
                        }
                        if next < hits.len() && hits[next] == (offset, bytes.len()) {
                            out.push(HitPath::of_chain(
                                next,
                                chain.iter().cloned(),
                                chain_bytes,
                                kinds.name(k).to_string(),
                            ));
                            next += 1;
                        }
                    }
                }
                // The first line that parses must be an object (else the file is
                // refused); blank and broken lines are no entries.
                Err(LineError::NotAnObject) if !parsed_one => return Err(Stop::Doubt),
                Err(_) => {}
            }
            if offset + bytes.len() as u64 >= end {
                return Err(Stop::Done);
            }
        }
        Ok(())
    });
    match read {
        Err(Stop::Done) => Ok(Some(out)),
        Err(Stop::Io(e)) => Err(e),
        // The file ended before the last hit, or a line the chain cannot be read
        // through: the index decides.
        Ok(_) | Err(Stop::Doubt) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    //! [`paths`] against the session's index: random sessions (entries of every kind,
    //! bookkeeping, unknown types, ids missing, repeated or not strings, subagent
    //! events, blank and broken lines, a torn last line), hits on random lines; the
    //! paths and KIND files must be the mount's, in its order, whenever [`paths`]
    //! answers.

    use super::*;
    use crate::model::core::session::Session;
    use proptest::prelude::*;

    const SID: &str = "4dd125e9-76d7-476c-8f81-d85f6275dab8";

    fn raw_name(s: &Session, j: u32) -> String {
        s.alias(j).map_or_else(|| s.id_string(j), str::to_string)
    }

    fn event() -> impl Strategy<Value = String> {
        let ty = prop::sample::select(vec![
            "user.message",
            "assistant.message",
            "tool.execution_complete",
            "tool.execution_start",
            "assistant.turn_start",
            "session.info",
            "session.error",
            "abort",
            "session.compaction_complete",
            "subagent.completed",
            "subagent.started",
            "session.usage_record",
            "future.kind",
            "we/ird",
            "",
        ]);
        let id = prop_oneof![
            40 => (0..400u16).prop_map(|n| format!(r#","id":"00000000-0000-4000-8000-000000000{n:03}""#)),
            1 => Just(String::new()),
            1 => Just(r#","id":7"#.to_string()),
            1 => Just(r#","id":"not-a-uuid""#.to_string()),
        ];
        let agent = prop_oneof![
            40 => Just(String::new()),
            1 => Just(r#","agentId":"a1""#.to_string()),
        ];
        (ty, id, agent).prop_map(|(t, i, a)| {
            format!(
                r#"{{"type":"{t}","data":{{"content":"x"}}{i},"timestamp":"2026-12-05T07:30:58.506Z","parentId":null{a}}}"#
            )
        })
    }

    fn line() -> impl Strategy<Value = String> {
        prop_oneof![
            12 => event(),
            1 => Just(String::new()),
            1 => Just(r#"{"type":"user.message","data":{"#.to_string()),
            1 => Just("[1,2]".to_string()),
            1 => Just(r#"{"type":"user.message","type":"abort","id":"00000000-0000-4000-8000-000000000099","timestamp":"2026-12-05T07:30:58.506Z"}"#.to_string()),
        ]
    }

    fn start() -> String {
        format!(
            r#"{{"type":"session.start","data":{{"sessionId":"{SID}","version":1,"producer":"copilot-agent","copilotVersion":"1.0.102","startTime":"2026-12-05T07:30:58.506Z","context":{{"cwd":"/w"}}}},"id":"10000000-0000-4000-8000-000000000000","timestamp":"2026-12-05T07:30:58.506Z","parentId":null}}"#
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(
            std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(256)
        ))]
        #[test]
        fn a_sessions_hits_are_where_the_mount_shows_them(
            lines in prop::collection::vec(line(), 0..24),
            picks in prop::collection::vec(any::<bool>(), 24),
            torn in any::<bool>(),
        ) {
            let home = tempfile::tempdir().unwrap();
            let dir = home.path().join("session-state").join(SID);
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join("events.jsonl");
            let mut bytes = format!("{}\n", start()).into_bytes();
            let mut hits = Vec::new();
            for (k, l) in lines.iter().enumerate() {
                if picks[k] {
                    hits.push((bytes.len() as u64, l.len()));
                }
                bytes.extend_from_slice(l.as_bytes());
                bytes.push(b'\n');
            }
            if torn {
                bytes.extend_from_slice(br#"{"type":"user.message","id":"x"#);
            }
            std::fs::write(&path, &bytes).unwrap();
            let f = File::open(&path).unwrap();
            let Some(got) = paths(&path, &f, &hits).unwrap() else {
                return Ok(());
            };
            let s = Session::open(&path).unwrap();
            let nodes: Vec<Option<u32>> = hits
                .iter()
                .map(|&(o, l)| {
                    (0..s.entries().len() as u32).find(|&i| {
                        let e = s.entry(i);
                        e.offset == o && e.is_node() && e.len as usize == l
                    })
                })
                .collect();
            let mut order = Vec::new();
            s.walk_preorder(|i, _| order.push(i));
            let mut want = Vec::new();
            for i in order {
                if let Some(hit) = nodes.iter().position(|n| *n == Some(i)) {
                    let dirs: Vec<String> =
                        s.path_to(i).into_iter().map(|j| raw_name(&s, j)).collect();
                    let bytes = dirs.iter().map(|d| d.len() + 1).sum();
                    want.push(HitPath::of_chain(
                        hit,
                        dirs.into_iter(),
                        bytes,
                        s.kind_name(i).to_string(),
                    ));
                }
            }
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn a_session_with_a_subagent_entry_is_left_to_its_index() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("session-state").join(SID);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("events.jsonl");
        let sub = r#"{"type":"assistant.message","data":{"content":"x"},"id":"00000000-0000-4000-8000-000000000001","timestamp":"2026-12-05T07:30:58.506Z","parentId":null,"agentId":"a1"}"#;
        std::fs::write(&path, format!("{}\n{sub}\n", start())).unwrap();
        let f = File::open(&path).unwrap();
        let hit = [(start().len() as u64 + 1, sub.len())];
        assert_eq!(paths(&path, &f, &hit).unwrap(), None);
    }
}
