//! Qwen Code behind the core's [`Agent`] interface: its index state ([`State`])
//! indexes the session file's records and its subagents' transcripts, and answers the
//! seam points with the rest of this folder.

use super::{Outcome, State, mark_pieces, nflags, side_files};
use crate::model::core::agent::{Agent, SourcesMoved};
use crate::model::core::fork::{ForkError, ForkFile, Fresh};
use crate::model::core::format::Format;
use crate::model::core::id::IdKey;
use crate::model::core::input::Line;
use crate::model::core::reply::{AppendError, NewEntry};
use crate::model::core::session::{Entry, Header, LoadError, NIL, NO_TIME, Session, Source, flags};
use crate::model::core::text::Image;
use crate::model::core::usage::Table;
use crate::model::core::usage::prices::Prices;
use serde_json::Value;
use std::any::Any;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

/// Qwen Code's agent for a file whose first parsed line is `raw`, if it is one of
/// Qwen Code's.
pub fn detect(raw: &[u8]) -> Option<Box<dyn Agent>> {
    super::looks_like_qwen(raw).then(|| Box::<State>::default() as Box<dyn Agent>)
}

impl State {
    /// Indexes one line of source `side` into the session (an entry, a fragment of
    /// one, or a note).
    fn index_into(&mut self, s: &mut Session, raw: &[u8], off: u64, line_no: u32, side: u16) {
        let next = s.entries.len() as u32;
        let by_id = &s.by_id;
        let outcome = State::index_line(
            self,
            raw,
            line_no,
            off,
            next,
            side,
            &mut s.ids,
            &mut s.kinds,
            &|k: IdKey| by_id.get(&k).copied(),
        );
        // Problems in a subagent's file are reported by `check` on that file.
        let report = side == 0;
        match outcome {
            Outcome::Note(sev, what) => {
                if report {
                    s.note(line_no, sev, what);
                }
            }
            Outcome::Fragment(_, note) => {
                if let (Some((sev, what)), true) = (note, report) {
                    s.note(line_no, sev, what);
                }
            }
            Outcome::Entry {
                id,
                parent_id,
                ts,
                kind,
                flags: f,
                note,
            } => {
                if let (Some((sev, what)), true) = (note, report) {
                    s.note(line_no, sev, what);
                }
                if side == 0 {
                    s.register_id(id, next, line_no);
                    s.push_entry(off, raw.len() as u32, line_no, id, parent_id, ts, kind, f);
                } else {
                    if !id.is_none() {
                        s.by_id.insert(id, next);
                    }
                    let mut e =
                        Entry::new(off, raw.len() as u32, line_no, id, parent_id, ts, kind, f);
                    e.file = side;
                    s.entries.push(e);
                }
            }
        }
    }
}

impl Agent for State {
    fn format(&self) -> Format {
        Format::Qwen
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

    /// A Qwen Code file has no header: its session id is its name (and its records'
    /// `sessionId`).
    fn begin(&mut self, s: &mut Session) {
        let sid = s
            .path
            .file_stem()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        s.header = Header {
            offset: 0,
            len: 0,
            line: 0,
            session_id: sid,
            version: 3,
            timestamp_ms: NO_TIME,
        };
    }

    fn index_line(&mut self, s: &mut Session, raw: &[u8], off: u64, line_no: u32) {
        self.index_into(s, raw, off, line_no, 0);
        if s.header.timestamp_ms == NO_TIME && self.first_ts != 0 {
            s.header.timestamp_ms = self.first_ts;
        }
        if let Some(sid) = &self.session_id
            && s.header.session_id != *sid
        {
            s.header.session_id = sid.clone();
        }
    }

    /// Indexes what the subagent transcripts gained (and any new one), after the
    /// session file itself.
    fn after_scan(&mut self, s: &mut Session) -> Result<(), LoadError> {
        // A session's subagents lie in its project's `subagents/`, beside its `chats/`:
        // the project's folder is the agent's folder its other files are opened in.
        if let Some(project) = super::project_of(&s.path) {
            s.set_homes(vec![project.to_path_buf()]);
        }
        for p in side_files(&s.path) {
            if self.sides.iter().any(|sd| sd.path == p) {
                continue;
            }
            let side = self.add_side(s, p.clone())?;
            let src = s.add_source(Source::file(p))?;
            debug_assert_eq!(
                side, src,
                "a side file is the session's source of its number"
            );
        }
        let max = crate::model::core::input::max_line();
        for k in 0..self.sides.len() {
            let Ok(file) = s.open_side(&self.sides[k].path) else {
                continue;
            };
            let from = self.sides[k].scanned;
            let side = k as u16 + 1;
            let tail =
                crate::model::core::input::read_lines::<io::Error>(&file, from, None, max, |l| {
                    let line = self.sides[k].next_line;
                    self.sides[k].next_line += 1;
                    // A line too long to hold is no entry, as a malformed one.
                    if let Line::Whole { bytes, offset } = l {
                        self.index_into(s, bytes, offset, line, side);
                    }
                    Ok(())
                })?;
            self.sides[k].scanned = tail.offset;
        }
        Ok(())
    }

    fn sources_moved(&self, s: &Session) -> SourcesMoved {
        let mut moved = SourcesMoved::No;
        for sd in &self.sides {
            match std::fs::metadata(&sd.path) {
                Ok(m) if (m.dev(), m.ino()) != sd.dev_ino || m.len() < sd.scanned => {
                    return SourcesMoved::Rewritten;
                }
                Ok(m) if m.len() > sd.scanned => moved = SourcesMoved::Grew,
                _ => {}
            }
        }
        if moved == SourcesMoved::No && side_files(&s.path).len() != self.sides.len() {
            moved = SourcesMoved::Grew;
        }
        moved
    }

    fn after_link(&mut self, s: &mut Session) {
        let (leaves, branch_points) = mark_pieces(&mut s.entries, &self.nodes, self.last_conv);
        s.leaves = leaves;
        s.branch_points = branch_points;
    }

    /// The picker's label (its first records, a title) can change with any line.
    fn meta_moves(&self) -> bool {
        true
    }

    fn has_side_files(&self) -> bool {
        !self.sides.is_empty()
    }

    /// The last conversation record of the file (QWEN-FORMAT.md §3.2).
    fn leaf(&self, s: &Session) -> Option<u32> {
        self.last_conv.filter(|&i| s.entry(i).is_node())
    }

    /// The session picker's label: the last title, else the first prompt.
    fn name<'a>(&'a self, _s: &'a Session) -> Option<&'a str> {
        self.title
            .as_ref()
            .map(|(t, _)| t.as_str())
            .or(self.first_prompt.as_deref())
    }

    fn name_entry(&self) -> Option<u32> {
        self.title.as_ref().map(|(_, i)| *i)
    }

    fn session_json(&self, s: &Session) -> io::Result<Vec<u8>> {
        Ok(super::render::session_json(s, self).into_bytes())
    }

    fn session_json_len(&self, s: &Session) -> u64 {
        super::render::session_json(s, self).len() as u64
    }

    /// A context follows from the entry's chain alone, unless a fragment (a later
    /// line of a record) can still join a record on it.
    fn contexts_settled(&self) -> bool {
        self.fragments.is_empty()
    }

    fn render(&self, s: &Session, i: u32, v: &Value) -> (String, Vec<Image>) {
        super::render::render_entry(s, self, i, v)
    }

    fn preview(&self, s: &Session, i: u32, v: &Value) -> String {
        super::render::preview(s, self, i, v)
    }

    fn context_messages(&self, s: &Session, i: u32) -> io::Result<Vec<Value>> {
        super::history::context(s, self, i)
    }

    fn context_renderer(&self) -> fn(&[Value]) -> String {
        super::render::render_context
    }

    fn context_preamble(&self, s: &Session, i: u32) -> Option<String> {
        super::prompt::preamble(s, self, i)
    }

    /// An answer (an `assistant` record) answered the request made from the record
    /// before it: its context is what the model saw.
    fn request_of(&self, s: &Session, i: u32) -> Option<u32> {
        let n = self.nodes.get(i as usize)?;
        if n.rtype != super::RType::Assistant {
            return None;
        }
        let p = s.entry(i).parent;
        (p != NIL && s.entry(i).flags & flags::SOFT_PARENT == 0).then_some(p)
    }

    /// Under a record of the session file that Qwen Code loads as a conversation
    /// record: a reply under anything else would start from nothing (Qwen Code's walk
    /// stops at a parent it does not load).
    fn can_reply_at(&self, _s: &Session, i: u32) -> bool {
        self.nodes
            .get(i as usize)
            .is_some_and(|n| n.file == 0 && n.is_conversation())
    }

    /// Bookkeeping records join their neighbours on one `tree` line.
    fn joins_tree_runs(&self, i: u32) -> bool {
        self.nodes
            .get(i as usize)
            .is_some_and(|n| n.has(nflags::BOOKKEEPING))
    }

    fn tree_run_noun(&self) -> &'static str {
        "records"
    }

    fn alias(&self, i: u32) -> Option<&str> {
        State::alias(self, i)
    }

    /// A fragment's line shows in the files of its record's first line.
    fn line_owner(&self, file: u16, offset: u64) -> Option<u32> {
        self.fragment_of.get(&(file, offset)).copied()
    }

    fn find_alias(&self, id: &str) -> Option<u32> {
        self.by_alias(id)
    }

    fn build_line(
        &self,
        s: &Session,
        what: &NewEntry<'_>,
        now: i64,
        batch: &[String],
    ) -> Result<(String, Vec<u8>), AppendError> {
        super::append::build_line(s, self, what, now, batch)
    }

    /// Keeps the entry's first line, with the parts of its fragments appended, as
    /// Qwen Code aggregates them.
    fn migrate(&self, s: &Session, i: u32, v: &mut Value) {
        if let Some(frags) = self.fragments.get(&i) {
            super::history::aggregate(s, frags, v);
        }
    }

    fn heap_bytes(&self) -> usize {
        State::heap_bytes(self)
    }

    fn fork(&self, s: &Session, i: u32, fresh: &Fresh) -> Result<ForkFile, ForkError> {
        super::fork::plan(s, self, i, fresh)
    }

    fn fill_usage(&self, s: &Session, prices: &Prices, t: &mut Table) {
        super::usage::fill(s, self, prices, t);
    }

    /// The chats folder, and the session's subagent folder (or where it will appear).
    fn watched_dirs(&self, s: &Session) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = s
            .path()
            .parent()
            .map(|p| p.to_path_buf())
            .into_iter()
            .collect();
        v.extend(super::side_dir(s.path()));
        v
    }
}
