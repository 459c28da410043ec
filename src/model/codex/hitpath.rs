//! Where a hit is in a Codex thread of one page, without opening the thread.
//!
//! Opening a thread (`Session::open`) reads every page it shows, parses each
//! line, builds the tree, names the thread and reads Codex's database: some 2 ms for a
//! page of 128 KB, paid by every thread a search finds something in. Most threads are
//! one page (no rewind, no fork), and there the tree is a chain: every entry hangs
//! under the entry before it in the file (`super::store`, §3.4). A hit's
//! directory is then the names of the node lines up to it, read in file order, so
//! only the lines before the last hit are read, and each once, as the index reads it
//! ([`page::parse_line`]: the same validation, the same `type` and `ordinal`), named
//! as the index names them ([`store::point_id`]) and given the KIND file the index
//! gives them ([`render::kind_key`], interned in a [`KindTable`] in the same order).
//!
//! Anything else is left to the thread's index ([`paths`] says `None`): a thread with
//! more pages or a base page (the search's side files), a page whose first line is not
//! surely a `session_meta` without a `history_base` ([`head`]), a compressed page, a
//! line too long to hold.
//!
//! The search reaches this module only through Codex's rules
//! (`super::search::CODEX`, [`crate::model::core::grep::HitPaths::Direct`]); it names
//! the directories from the ids given here, as the mount does.

use super::{files, head, page, render, store};
use crate::model::core::grep::{HitPath, PATH_MAX};
use crate::model::core::input::{self, Line};
use crate::model::core::kind::KindTable;
use std::collections::HashSet;
use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::Arc;

/// Why the reading stopped early.
enum Stop {
    /// Past the last hit: all is known.
    Done,
    /// A line the chain cannot be read through (too long to hold).
    Doubt,
    Io(io::Error),
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Stop {
        Stop::Io(e)
    }
}

/// The paths of `hits` (each a line's `(offset, len)` without its `\n`, in file
/// order) in the thread whose only file is the page `path`, read through `f`: one
/// [`HitPath`] per hit that is an entry, in file order (the mount's order for a
/// chain). `None` when the thread is not one this reads (see the module docs); the
/// caller has made sure it shows no other file.
pub fn paths(path: &Path, f: &File, hits: &[(u64, usize)]) -> io::Result<Option<Vec<HitPath>>> {
    let Some(name) = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(files::parse_file_name)
        .filter(|n| !n.compressed)
    else {
        return Ok(None);
    };
    let h = head::head(path);
    // The first line, the `session_meta` the head read, is no entry: the lines are
    // read from its end.
    let (Some(from), true, None) = (h.meta_len, h.surely_meta, &h.base) else {
        return Ok(None);
    };
    let Some(last) = hits.last() else {
        return Ok(Some(Vec::new()));
    };
    let end = last.0 + last.1 as u64;
    let mut out = Vec::with_capacity(hits.len());
    let mut chain: Vec<String> = Vec::new();
    // The bytes of the ids of `chain`'s nodes from the root, each with its slash.
    let mut depth_bytes = 0usize;
    let mut seen = HashSet::new();
    let mut kinds = KindTable::default();
    let mut number = 1usize;
    let mut next = 0usize;
    let read = input::read_line_batches(f, from, None, input::max_line(), 1 << 20, |lines| {
        for l in lines {
            number += 1;
            let (offset, bytes) = match *l {
                Line::Whole { bytes, offset } => (offset, bytes),
                Line::TooLong { .. } => return Err(Stop::Doubt),
            };
            let src: Arc<[u8]> = Arc::from(bytes);
            let line = page::parse_line(&src, 0, bytes.len() + 1, number);
            if line.kind.is_node() {
                let id = store::point_id(&name.page_id, &line, &mut seen);
                depth_bytes += id.len() + 1;
                if depth_bytes >= PATH_MAX {
                    // Past PATH_MAX a hit is printed by its own id only (`HitPath`):
                    // the chain need not be kept.
                    chain.clear();
                }
                chain.push(id);
                let (ty, kind) = render::kind_key(&line);
                let k = kinds.intern_named(ty, &kind, &kind);
                while next < hits.len() && hits[next].0 < offset {
                    next += 1;
                }
                if next < hits.len() && hits[next] == (offset, bytes.len()) {
                    out.push(HitPath::of_chain(
                        next,
                        chain.iter().cloned(),
                        depth_bytes,
                        kinds.name(k).to_string(),
                    ));
                    next += 1;
                }
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
        // The file ended before the last hit (it cannot have shrunk: a page is only
        // appended to), or a line could not be read: the index decides.
        Ok(_) | Err(Stop::Doubt) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    //! [`paths`] against the thread's index: random one-page threads (entries of every
    //! kind, Codex's own user messages, unknown types, ordinals missing, repeated or
    //! not integers, lines that are no entries, broken lines, a torn last line), hits
    //! on random lines; the paths and KIND files must be the mount's, in its order.

    use super::*;
    use crate::model::core::session::Session;
    use proptest::prelude::*;

    /// The name entry `j` is shown under, before the mount escapes it.
    fn raw_name(s: &Session, j: u32) -> String {
        s.alias(j).map_or_else(|| s.id_string(j), str::to_string)
    }

    const THREAD: &str = "019a0000-0000-7000-8000-000000000001";

    fn ordinal() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => (0..6u8).prop_map(|n| format!(",\"ordinal\":{n}")),
            1 => Just(String::new()),
            1 => Just(",\"ordinal\":\"3\"".to_string()),
            1 => Just(",\"ordinal\":2.0".to_string()),
            1 => Just(",\"ordinal\":-1".to_string()),
        ]
    }

    fn payload() -> impl Strategy<Value = String> {
        let text = prop::sample::select(vec![
            "hello",
            "<environment_context>cwd</environment_context>",
            "  <turn_aborted>",
            "x\\ny",
        ]);
        let role = prop::sample::select(vec!["user", "assistant", "developer", "we/ird", ""]);
        prop_oneof![
            (role, text).prop_map(|(r, t)| format!(
                r#"{{"type":"message","role":"{r}","content":[{{"type":"input_text","text":"{t}"}}]}}"#
            )),
            Just(r#"{"type":"message","content":"s"}"#.to_string()),
            Just(r#"{"type":"function_call","name":"exec","arguments":"{}","call_id":"c1"}"#.to_string()),
            Just(r#"{"type":"function_call_output","call_id":"c1","output":"ok"}"#.to_string()),
            Just(r#"{"type":"reasoning","summary":[]}"#.to_string()),
            Just(r#"{"type":"we/ird:kind","id":"p1"}"#.to_string()),
            Just(r#"{"type":7}"#.to_string()),
            Just("null".to_string()),
            Just("[]".to_string()),
        ]
    }

    fn line() -> impl Strategy<Value = String> {
        let ts = prop::sample::select(vec![
            r#""timestamp":"2026-12-01T10:00:00.000Z","#,
            r#""timestamp":5,"#,
            "",
        ]);
        prop_oneof![
            6 => (ts, ordinal(), payload()).prop_map(|(t, o, p)| format!(
                r#"{{{t}"type":"response_item"{o},"payload":{p}}}"#
            )),
            1 => ordinal().prop_map(|o| format!(
                r#"{{"type":"compacted"{o},"payload":{{"message":"sum","replacement_history":[]}}}}"#
            )),
            1 => ordinal().prop_map(|o| format!(r#"{{"type":"event_msg"{o},"payload":{{"type":"x"}}}}"#)),
            1 => Just(r#"{"type":"turn_context","payload":{"turn_id":"t"}}"#.to_string()),
            1 => Just(r#"{"type":"response_item","ordinal":1,"payload":{"type":"#.to_string()),
            1 => Just(r#"{"type":"response_item","ordinal":1,"payload":{"type":"message","role":"user","n":1e400}}"#.to_string()),
            1 => Just(r#"{"type":"response_item","type":"event_msg","payload":{}}"#.to_string()),
        ]
    }

    fn meta() -> String {
        format!(
            r#"{{"timestamp":"2026-12-01T10:00:00.000Z","type":"session_meta","payload":{{"id":"{THREAD}","cwd":"/w","base_instructions":{{"text":"be brief"}}}}}}"#
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(
            std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(128)
        ))]
        #[test]
        fn a_one_page_threads_hits_are_where_the_mount_shows_them(
            lines in prop::collection::vec(line(), 0..24),
            picks in prop::collection::vec(any::<bool>(), 24),
            torn in any::<bool>(),
        ) {
            let home = tempfile::tempdir().unwrap();
            let day = home.path().join("sessions/2026/12/01");
            std::fs::create_dir_all(&day).unwrap();
            let path = day.join(format!("rollout-2026-12-01T10-00-00-{THREAD}.jsonl"));
            let mut bytes = format!("{}\n", meta()).into_bytes();
            let mut hits = Vec::new();
            for (k, l) in lines.iter().enumerate() {
                if picks[k] {
                    hits.push((bytes.len() as u64, l.len()));
                }
                bytes.extend_from_slice(l.as_bytes());
                bytes.push(b'\n');
            }
            if torn {
                bytes.extend_from_slice(br#"{"type":"response_item","ordinal":9"#);
            }
            std::fs::write(&path, &bytes).unwrap();
            let f = File::open(&path).unwrap();
            let got = paths(&path, &f, &hits).unwrap().expect("a one-page thread is read");

            let s = Session::open(&path).unwrap();
            let nodes: Vec<Option<u32>> = hits
                .iter()
                .map(|&(o, l)| {
                    (0..s.entries().len() as u32).find(|&i| {
                        let e = s.entry(i);
                        s.in_main_file(i) && e.offset == o && e.is_node() && e.len as usize == l
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
    fn a_thread_with_a_base_is_left_to_its_index() {
        let home = tempfile::tempdir().unwrap();
        let day = home.path().join("sessions/2026/12/01");
        std::fs::create_dir_all(&day).unwrap();
        let path = day.join(format!("rollout-2026-12-01T10-00-00-{THREAD}.jsonl"));
        let meta = format!(
            r#"{{"type":"session_meta","payload":{{"id":"{THREAD}","history_base":{{"thread_id":"019a0000-0000-7000-8000-000000000002","end_byte_offset":10}}}}}}"#
        );
        let item = r#"{"type":"response_item","ordinal":1,"payload":{"type":"reasoning"}}"#;
        std::fs::write(&path, format!("{meta}\n{item}\n")).unwrap();
        let f = File::open(&path).unwrap();
        let hit = [(meta.len() as u64 + 1, item.len())];
        assert_eq!(paths(&path, &f, &hit).unwrap(), None);
    }
}
