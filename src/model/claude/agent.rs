//! Claude Code behind the core's [`Agent`] interface: its index state ([`State`])
//! indexes the session file's lines and its subagents' transcripts, and answers the
//! seam points with the rest of this folder.

use super::{Outcome, State, mark_pieces, side_files};
use crate::model::core::agent::{Agent, SourcesMoved};
use crate::model::core::fork::{ForkError, ForkFile, Fresh};
use crate::model::core::format::Format;
use crate::model::core::id::IdKey;
use crate::model::core::input::Line;
use crate::model::core::reply::{AppendError, NewEntry, Write};
use crate::model::core::session::{Entry, Header, LoadError, NIL, NO_TIME, Session, Source, flags};
use crate::model::core::text::Image;
use crate::model::core::usage::Table;
use crate::model::core::usage::prices::Prices;
use serde_json::Value;
use std::any::Any;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

impl Session {
    /// Claude Code's own index state, for a Claude Code file.
    pub(crate) fn claude(&self) -> Option<&State> {
        self.agent().as_any().downcast_ref()
    }
}

/// Claude Code's agent for a file whose first parsed line is `raw`, if it is one of
/// Claude Code's.
pub fn detect(raw: &[u8]) -> Option<Box<dyn Agent>> {
    super::looks_like_claude(raw).then(|| Box::<State>::default() as Box<dyn Agent>)
}

impl Agent for State {
    fn format(&self) -> Format {
        Format::Claude
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

    /// A Claude Code file has no header: its session id is its name.
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
        let next = s.entries.len() as u32;
        let outcome = State::index_line(self, raw, line_no, next, 0, &mut s.ids, &mut s.kinds);
        if s.header.timestamp_ms == NO_TIME && self.first_ts != 0 {
            s.header.timestamp_ms = self.first_ts;
        }
        if let Some(sid) = &self.session_id
            && s.header.line == 0
            && s.header.session_id != *sid
        {
            s.header.session_id = sid.clone();
        }
        match outcome {
            Outcome::Skip => {}
            Outcome::Note(sev, what) => s.note(line_no, sev, what),
            Outcome::Entry {
                id,
                parent_id,
                ts,
                kind,
                flags,
                note,
            } => {
                if let Some((sev, what)) = note {
                    s.note(line_no, sev, what);
                }
                s.register_id(id, next, line_no);
                s.push_entry(
                    off,
                    raw.len() as u32,
                    line_no,
                    id,
                    parent_id,
                    ts,
                    kind,
                    flags,
                );
            }
        }
    }

    /// Indexes what the subagent transcripts gained (and any new one), after the
    /// session file itself. Their lines are entries of their own file
    /// ([`super::Side`]); problems in them are not reported here (`check` sees them as
    /// files of their own).
    fn after_scan(&mut self, s: &mut Session) -> Result<(), LoadError> {
        self.read_title_file(&s.path);
        for p in side_files(&s.path) {
            if self.sides.iter().any(|sd| sd.path == p) {
                continue;
            }
            // A transcript that is no regular file inside the session's folder (a
            // FIFO, a link out of it) is not indexed: its lines are not shown.
            if s.open_side(&p).is_ok() {
                let side = self.add_side(&s.path, p.clone())?;
                let src = s.add_source(Source::file(p))?;
                debug_assert_eq!(
                    side, src,
                    "a side file is the session's source of its number"
                );
            }
        }
        let max = crate::model::core::input::max_line();
        for k in 0..self.sides.len() {
            let Ok(file) = s.open_side(&self.sides[k].path) else {
                continue;
            };
            let from = self.sides[k].scanned;
            let tail =
                crate::model::core::input::read_lines::<io::Error>(&file, from, None, max, |l| {
                    let line = self.sides[k].next_line;
                    self.sides[k].next_line += 1;
                    // A line too long to hold is no entry, as a malformed one.
                    let Line::Whole {
                        bytes: raw,
                        offset: off,
                    } = l
                    else {
                        return Ok(());
                    };
                    let next = s.entries.len() as u32;
                    if let Outcome::Entry {
                        id,
                        parent_id,
                        ts,
                        kind,
                        flags,
                        ..
                    } = State::index_line(
                        self,
                        raw,
                        line,
                        next,
                        k as u16 + 1,
                        &mut s.ids,
                        &mut s.kinds,
                    ) {
                        if !id.is_none() {
                            if let Some(&prev) = s.by_id.get(&id) {
                                s.entries[prev as usize].flags |= flags::SHADOWED;
                                s.relink = true;
                            }
                            s.by_id.insert(id, next);
                        }
                        let len = raw.len() as u32;
                        let mut e = Entry::new(off, len, line, id, parent_id, ts, kind, flags);
                        e.file = k as u16 + 1;
                        s.entries.push(e);
                    }
                    Ok(())
                })?;
            self.sides[k].scanned = tail.offset;
        }
        Ok(())
    }

    /// Have the subagent transcripts (or the title file) changed since they were
    /// indexed?
    fn sources_moved(&self, s: &Session) -> SourcesMoved {
        let mut moved = SourcesMoved::No;
        if self.title_file_moved(&s.path) {
            moved = SourcesMoved::Grew;
        }
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

    /// Marks the pieces of a turn, and counts leaves and branch points without them.
    fn after_link(&mut self, s: &mut Session) {
        mark_pieces(&mut s.entries, &self.nodes, &self.file_of);
        self.changed();
        s.leaves = 0;
        s.branch_points = 0;
        for e in &s.entries {
            if !e.is_node() || e.flags & flags::PIECE != 0 {
                continue;
            }
            let mut real = 0;
            let mut c = e.first_child;
            while c != NIL {
                if s.entries[c as usize].flags & flags::PIECE == 0 {
                    real += 1;
                }
                c = s.entries[c as usize].next_sibling;
            }
            match real {
                0 => s.leaves += 1,
                1 => {}
                _ => s.branch_points += 1,
            }
        }
    }

    /// A message a compaction keeps, whose parent Claude Code's in-place rewrite
    /// (2.1.332) dropped with everything else before the boundary: a root by design.
    fn root_is_fine(&self, id: IdKey) -> bool {
        self.is_preserved(id)
    }

    /// Metadata lines (titles, `last-prompt`) are no entries, yet move the name and
    /// the leaf.
    fn meta_moves(&self) -> bool {
        true
    }

    fn has_side_files(&self) -> bool {
        !self.sides.is_empty()
    }

    /// Subagents' transcripts and the custom title live in `<sessionId>/`.
    fn writes_side_folder(&self) -> bool {
        true
    }

    /// The session file's folder, its side folder `<sessionId>/` and the subagents'
    /// `<sessionId>/subagents/` (whether they exist yet or not): a mount of a whole
    /// sessions directory watches those of a loaded session, so that a subagent's
    /// transcript growing is seen as the session's change.
    fn watched_dirs(&self, s: &Session) -> Vec<PathBuf> {
        let side = s.path().with_extension("");
        let subagents = side.join("subagents");
        s.path()
            .parent()
            .map(|p| p.to_path_buf())
            .into_iter()
            .chain([side, subagents])
            .collect()
    }

    /// A subagent's line is in its transcript (`sides`), which is no source of the
    /// session: the agent reads it itself.
    fn entry_file(&self, _s: &Session, i: u32) -> Option<PathBuf> {
        let k = self.file_of(i).checked_sub(1)?;
        self.sides.get(k as usize).map(|sd| sd.path.clone())
    }

    /// The chain end (CLAUDE-FORMAT.md §6).
    fn leaf(&self, s: &Session) -> Option<u32> {
        self.chain_end_with(|| super::loader::chain_end(s, self))
    }

    /// The title rule (CLAUDE-FORMAT.md §7).
    fn name<'a>(&'a self, s: &'a Session) -> Option<&'a str> {
        self.name_with(|| super::title(s, self))
    }

    /// Claude Code's files have no header: a small object made from the file.
    fn session_json(&self, s: &Session) -> io::Result<Vec<u8>> {
        Ok(super::session_json(s, self).into_bytes())
    }

    fn session_json_len(&self, s: &Session) -> u64 {
        super::session_json(s, self).len() as u64
    }

    /// No: the chain end gets the resume context, and a parallel tool result written
    /// later joins the contexts of its turn.
    fn contexts_settled(&self) -> bool {
        false
    }

    fn render(&self, s: &Session, i: u32, v: &Value) -> (String, Vec<Image>) {
        let x = super::extra(s, self, i, v);
        (super::render::render_entry(v, &x), super::render::images(v))
    }

    fn preview(&self, s: &Session, i: u32, v: &Value) -> String {
        let x = super::extra(s, self, i, v);
        super::render::preview(v, s.kind_name(i), &x)
    }

    /// A tool result spilled to `<session>/tool-results/`.
    fn full_output(&self, s: &Session, i: u32) -> Option<PathBuf> {
        let nd = self.nodes.get(i as usize)?;
        if !nd.has(super::nflags::TOOL_USE_RESULT) {
            return None;
        }
        let v = s.entry_value(i).ok()?;
        super::full_output_path(&s.path, &v)
    }

    fn context_messages(&self, s: &Session, i: u32) -> io::Result<Vec<Value>> {
        super::context(s, self, i)
    }

    fn context_renderer(&self) -> fn(&[Value]) -> String {
        super::render::render_context
    }

    fn request_of(&self, s: &Session, i: u32) -> Option<u32> {
        super::request_of(s, self, i)
    }

    /// Not under a subagent's line (Claude Code does not resume subagents), nor a line
    /// Claude Code does not load.
    fn can_reply_at(&self, _s: &Session, i: u32) -> bool {
        self.file_of(i) == 0 && self.nodes.get(i as usize).is_some_and(|n| n.is_loaded())
    }

    /// An attachment joins a run of them on one `tree` line.
    fn joins_tree_runs(&self, i: u32) -> bool {
        self.nodes
            .get(i as usize)
            .is_some_and(|n| n.class == super::Class::Attachment)
    }

    fn alias(&self, i: u32) -> Option<&str> {
        State::alias(self, i)
    }

    fn find_alias(&self, id: &str) -> Option<u32> {
        self.by_alias(id)
    }

    fn build_line(
        &self,
        s: &Session,
        what: &NewEntry<'_>,
        now: i64,
        _batch: &[String],
    ) -> Result<(String, Vec<u8>), AppendError> {
        super::append::build_line(s, self, what, now)
    }

    fn heap_bytes(&self) -> usize {
        State::heap_bytes(self)
    }

    fn fork(&self, s: &Session, i: u32, fresh: &Fresh) -> Result<ForkFile, ForkError> {
        super::fork::plan(s, i, fresh)
    }

    /// A fork's refusal without loading its chain; everything else as the default.
    fn refuses(&self, s: &Session, w: Write) -> Option<String> {
        match w {
            Write::Fork(i) => super::fork::refusal(s, i).map(|e| e.to_string()),
            Write::Label => Some("Claude Code sessions have no labels".into()),
            Write::Reply(Some(i)) if !self.can_reply_at(s, i) => Some(if self.file_of(i) != 0 {
                "a subagent's transcript cannot be continued (Claude Code does not resume \
                 subagents)"
                    .into()
            } else {
                format!(
                    "Claude Code does not load lines of this type ({}), so it cannot resume there",
                    s.kind_name(i)
                )
            }),
            _ => None,
        }
    }

    fn fill_usage(&self, s: &Session, prices: &Prices, t: &mut Table) {
        super::usage::fill(s, prices, t);
    }
}
