//! Pi behind the core's [`Agent`] interface: its index state ([`Index`]) indexes the
//! session file's lines and keeps Pi's header version, labels, edits, name and v1
//! bookkeeping; the other seam points are answered with the rest of this folder.

use super::index::Index;
use crate::model::core::agent::Agent;
use crate::model::core::fork::{ForkError, ForkFile, Fresh};
use crate::model::core::format::Format;
use crate::model::core::problem::ProblemKind;
use crate::model::core::reply::{AppendError, NewEntry, Write};
use crate::model::core::scan::{LineError, LineHead};
use crate::model::core::session::{NIL, Session};
use crate::model::core::text::Image;
use crate::model::core::usage::Table;
use crate::model::core::usage::prices::Prices;
use serde_json::Value;
use std::any::Any;
use std::io;

/// Pi's agent: its index state.
#[derive(Debug, Default)]
pub struct Pi(Index);

/// A new session's agent until its first line says otherwise.
pub fn first() -> Box<dyn Agent> {
    Box::<Pi>::default()
}

impl Agent for Pi {
    fn format(&self) -> Format {
        Format::Pi
    }
    /// Pi's `label` entries: a symbolic link made in `labels/` appends one.
    fn labels_writable(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn indexes_lines(&self) -> bool {
        true
    }
    fn index_line(&mut self, s: &mut Session, raw: &[u8], off: u64, line_no: u32) {
        self.0.index_line(s, raw, off, line_no);
    }
    fn indexes_heads(&self) -> bool {
        true
    }
    fn index_head(
        &mut self,
        s: &mut Session,
        raw: &[u8],
        head: &Result<LineHead<'_>, LineError>,
        off: u64,
        line_no: u32,
    ) {
        self.0.index_head(s, raw, head, off, line_no);
    }
    fn accepts_first_line(&self, raw: &[u8]) -> bool {
        Index::is_header(raw)
    }
    fn is_v1(&self) -> bool {
        self.0.is_v1()
    }
    fn labels<'a>(&'a self, s: &'a Session) -> Vec<(&'a str, u32)> {
        self.0.labels(s)
    }
    fn label_of<'a>(&'a self, s: &'a Session, i: u32) -> Option<&'a str> {
        self.0.label_of(s, i)
    }
    fn label_entry(&self, s: &Session, name: &str) -> Option<(u32, u32)> {
        self.0.label_entry(s, name)
    }
    fn labels_mark(&self) -> (usize, Option<u32>) {
        (
            self.0.labels.len(),
            self.0.labels.values().map(|(_, e)| *e).max(),
        )
    }
    fn edits_of(&self, s: &Session, i: u32) -> Vec<u32> {
        self.0.edits_of(s, i)
    }
    fn edited_targets(&self, s: &Session) -> Vec<u32> {
        self.0.edited_targets(s)
    }
    fn name_entry(&self) -> Option<u32> {
        self.0.name.as_ref().map(|(_, e)| *e)
    }
    fn tree_problems(&self, s: &Session, found: &mut Vec<(u32, ProblemKind)>) {
        self.0.tree_problems(s, found);
    }
    fn heap_bytes(&self) -> usize {
        self.0.heap_bytes()
    }

    /// Pi's v1/v2 migrations.
    fn migrate(&self, s: &Session, i: u32, v: &mut Value) {
        super::migrate::migrate_entry(&self.0, s, i, v);
    }

    /// The last entry in file order.
    fn leaf(&self, s: &Session) -> Option<u32> {
        (!s.entries().is_empty()).then(|| s.entries().len() as u32 - 1)
    }

    /// The latest `session_info` (an empty name clears it).
    fn name<'a>(&'a self, _s: &'a Session) -> Option<&'a str> {
        self.0.name.as_ref().map(|(n, _)| &**n)
    }

    /// The header line.
    fn session_json(&self, s: &Session) -> io::Result<Vec<u8>> {
        let mut b = s.header_bytes()?;
        b.push(b'\n');
        Ok(b)
    }

    fn session_json_len(&self, s: &Session) -> u64 {
        s.header().len as u64 + 1
    }

    /// Yes: a context follows from the entry's path alone.
    fn contexts_settled(&self) -> bool {
        true
    }

    fn render(&self, _s: &Session, _i: u32, v: &Value) -> (String, Vec<Image>) {
        (super::render::render_entry(v), super::render::images(v))
    }

    fn preview(&self, _s: &Session, _i: u32, v: &Value) -> String {
        super::render::preview(v)
    }

    fn preview_of_line(&self, raw: &[u8]) -> Option<String> {
        super::render::preview_line(raw)
    }

    fn context_messages(&self, s: &Session, i: u32) -> io::Result<Vec<Value>> {
        Ok(s.llm_context(i)?.messages)
    }

    fn context_renderer(&self) -> fn(&[Value]) -> String {
        super::render::render_context
    }

    /// An assistant message answers its parent.
    fn request_of(&self, s: &Session, i: u32) -> Option<u32> {
        let p = s.entry(i).parent;
        (s.kind_name(i) == "assistant" && p != NIL).then_some(p)
    }

    fn build_line(
        &self,
        s: &Session,
        what: &NewEntry<'_>,
        now: i64,
        batch: &[String],
    ) -> Result<(String, Vec<u8>), AppendError> {
        super::append::build_pi_line(s, what, now, batch)
    }

    fn fork(&self, s: &Session, i: u32, fresh: &Fresh) -> Result<ForkFile, ForkError> {
        super::fork::plan(s, i, fresh)
    }

    /// A fork's refusal without planning the file; everything else as the default.
    fn refuses(&self, s: &Session, w: Write) -> Option<String> {
        match w {
            Write::Fork(i) => super::fork::refusal(s, i).map(|e| e.to_string()),
            Write::Reply(_) | Write::Name | Write::Label if self.is_v1() => {
                Some(AppendError::LegacyV1.to_string())
            }
            _ => None,
        }
    }

    fn fill_usage(&self, s: &Session, prices: &Prices, t: &mut Table) {
        super::usage::fill(s, prices, t);
    }
}

#[cfg(test)]
mod parallel_index_tests {
    //! The index built from lines parsed ahead on two threads
    //! ([`crate::model::core::scan::each_head`]) against the line-by-line one.

    use crate::model::core::agent::AgentTable;
    use crate::model::core::session::{Reading, Session};
    use proptest::prelude::*;
    use std::io::Write;

    /// Pi alone: these files are Pi's or nobody's.
    static PI: AgentTable = AgentTable {
        first: super::first,
        detect: |_| None,
        opaque: |_| None,
        member: |_| None,
    };

    /// One line before it is written (`\n` added): kinds of entries over a few ids, so
    /// that duplicates, orphans, self-parents and cycles come up, and damaged lines.
    fn line() -> impl Strategy<Value = Vec<u8>> {
        let ids = prop::sample::select(vec![
            "a0000001",
            "a0000002",
            "a0000003",
            "b00000ff",
            "not-hex",
            "a0000001x",
            "",
        ]);
        let types = prop::sample::select(vec![
            "message",
            "label",
            "session_info",
            "context_edit",
            "compaction",
            "model_change",
            "session",
            "mystery",
        ]);
        let entry = (
            types,
            ids.clone(),
            prop::option::of(ids.clone()),
            ids,
            0u8..4,
            any::<bool>(),
        )
            .prop_map(|(ty, id, parent, target, role, crlf)| {
                let parent = parent.map_or("null".to_string(), |p| format!("{p:?}"));
                let role = ["user", "assistant", "toolResult", "bashExecution"][role as usize];
                let mut l = format!(
                    r#"{{"type":"{ty}","id":"{id}","parentId":{parent},"timestamp":"2026-01-05T09:00:00.000Z","targetId":"{target}","label":"l{id}","name":" n{id} ","message":{{"role":"{role}","content":[{{"type":"text","text":"a \"quoted\" \\ text"}}]}}}}"#
                )
                .into_bytes();
                if crlf {
                    l.push(b'\r');
                }
                l
            });
        prop_oneof![
            8 => entry.clone(),
            1 => Just(Vec::new()),
            1 => Just(b"  \t".to_vec()),
            1 => Just(b"[1,2]".to_vec()),
            1 => Just(b"\"just a string\"".to_vec()),
            // Cut short: malformed.
            1 => (entry.clone(), 1usize..60).prop_map(|(l, cut)| l[..l.len().saturating_sub(cut)].to_vec()),
            // Invalid UTF-8 in an id and in ignored text.
            1 => Just(b"{\"type\":\"message\",\"id\":\"a\xff1\",\"parentId\":\"a0000001\",\"x\":\"\xfe\"}".to_vec()),
            1 => Just(b"\xEF\xBB\xBF{\"type\":\"message\",\"id\":\"c0000001\"}".to_vec()),
        ]
    }

    fn header() -> impl Strategy<Value = Vec<u8>> {
        prop::sample::select(vec![
            r#"{"type":"session","version":3,"id":"s-1","timestamp":"2026-01-05T09:00:00.000Z"}"#,
            r#"{"type":"session","version":2,"id":"s-2","timestamp":"2026-01-05T09:00:00.000Z"}"#,
            r#"{"type":"session","id":"s-v1","timestamp":"2026-01-05T09:00:00.000Z"}"#,
            r#"{"type":"session","version":"x","id":"s-3"}"#,
            r#"{"broken":"#,
        ])
        .prop_map(|h| h.as_bytes().to_vec())
    }

    /// What two indexes of the same file must agree on.
    fn summary(s: &Session) -> String {
        format!(
            "{:?}\n{:?}\n{:?}\n{:?}\nlabels {:?}\nname {:?} {:?}\nedits {:?}\n{} {} {} {} {} {}\nv1 {}",
            s.header(),
            s.entries(),
            s.problems(),
            s.roots(),
            s.labels(),
            s.name(),
            s.name_entry(),
            s.edited_entries(),
            s.scanned_bytes(),
            s.tail_bytes(),
            s.leaf_count(),
            s.branch_point_count(),
            s.problems_dropped(),
            s.node_count(),
            s.is_v1(),
        )
    }

    fn open(path: &std::path::Path, reading: Reading) -> Result<Session, String> {
        Session::open_reading(path, &PI, reading).map_err(|e| e.to_string())
    }

    /// Line by line, as one thread.
    const SEQUENTIAL: Reading = Reading {
        chunk: 1 << 20,
        parallel_from: usize::MAX,
        run: 1 << 20,
        back_off: false,
    };

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// The index built from batches whose heads two threads parse is the one a
        /// single thread builds line by line: on load and after appended lines.
        #[test]
        fn parallel_index_equals_sequential(
            head in header(),
            lines in prop::collection::vec(line(), 0..120),
            tail in prop::option::of(line()),
            split in 0usize..120,
            chunk in 40usize..3000,
            run in 1usize..600,
        ) {
            let parallel = Reading { chunk, parallel_from: 0, run, back_off: false };
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("s.jsonl");
            let mut bytes = head.clone();
            bytes.push(b'\n');
            let mut at = vec![bytes.len()];
            for l in &lines {
                bytes.extend_from_slice(l);
                bytes.push(b'\n');
                at.push(bytes.len());
            }
            if let Some(t) = &tail {
                bytes.extend_from_slice(t);
            }
            // Load the first lines, then append the rest and catch up.
            let first = at[split.min(at.len() - 1)];
            std::fs::write(&path, &bytes[..first]).unwrap();
            let (a, b) = (open(&path, SEQUENTIAL), open(&path, parallel));
            match (a, b) {
                (Ok(mut a), Ok(mut b)) => {
                    prop_assert_eq!(summary(&a), summary(&b));
                    let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
                    f.write_all(&bytes[first..]).unwrap();
                    drop(f);
                    let (ca, cb) = (a.refresh(), b.refresh());
                    prop_assert_eq!(format!("{ca:?}"), format!("{cb:?}"));
                    prop_assert_eq!(summary(&a), summary(&b));
                }
                (a, b) => prop_assert_eq!(a.err(), b.err()),
            }
            // And the whole file at once.
            let (a, b) = (open(&path, SEQUENTIAL), open(&path, parallel));
            match (a, b) {
                (Ok(a), Ok(b)) => prop_assert_eq!(summary(&a), summary(&b)),
                (a, b) => prop_assert_eq!(a.err(), b.err()),
            }
        }
    }

    /// Lines too long to hold, between others, in both readings.
    #[test]
    fn parallel_index_passes_long_lines_as_sequential_does() {
        let max = crate::model::core::input::max_line();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut bytes =
            br#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-05T09:00:00.000Z"}"#
                .to_vec();
        bytes.push(b'\n');
        for i in 0..40 {
            if i % 13 == 5 {
                bytes.extend(std::iter::repeat_n(b'x', max + 7));
            } else {
                bytes.extend_from_slice(
                    format!(
                        r#"{{"type":"message","id":"a{i:07}","parentId":"a{:07}"}}"#,
                        i.max(1) - 1
                    )
                    .as_bytes(),
                );
            }
            bytes.push(b'\n');
        }
        std::fs::write(&path, &bytes).unwrap();
        let a = open(&path, SEQUENTIAL).unwrap();
        let b = open(
            &path,
            Reading {
                chunk: 4096,
                parallel_from: 0,
                run: 100,
                back_off: true,
            },
        )
        .unwrap();
        assert_eq!(summary(&a), summary(&b));
        assert!(a.problems().len() >= 3, "{:?}", a.problems());
    }
}
