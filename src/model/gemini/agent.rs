//! Gemini CLI behind the core's [`Agent`] interface: [`Gemini`] indexes the session
//! file's lines and its subagents' files, and answers the seam points with the rest of
//! this folder.

use super::index::{FileState, Gemini, Loc};
use super::{append, context, render, system, usage};
use crate::model::core::agent::{Agent, SourcesMoved};
use crate::model::core::fork::{ForkError, ForkFile, Fresh};
use crate::model::core::format::Format;
use crate::model::core::input::Line;
use crate::model::core::reply::{AppendError, NewEntry};
use crate::model::core::session::{LoadError, NIL, ProblemKind, Session, Severity, Source, flags};
use crate::model::core::text::Image;
use crate::model::core::usage::Table;
use crate::model::core::usage::prices::Prices;
use serde_json::Value;
use std::any::Any;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

/// Whether `raw`, the first line of a file that parses, is a Gemini CLI line: the
/// metadata line (string `sessionId` and `projectHash`, no `type`), or, in a file
/// whose metadata line is damaged, a `$set` or `$rewindTo` line or a message record
/// of one of the CLI's types (string `id`, no `uuid` nor `parentId`).
pub fn looks_like_gemini(raw: &[u8]) -> bool {
    let Ok(Value::Object(o)) = crate::model::core::js::parse_line(raw) else {
        return false;
    };
    let is_str = |k: &str| o.get(k).is_some_and(Value::is_string);
    if is_str("sessionId") && is_str("projectHash") && !o.contains_key("type") {
        return true;
    }
    if is_str("$rewindTo") || o.get("$set").is_some_and(Value::is_object) {
        return o.len() == 1;
    }
    is_str("id")
        && !o.contains_key("uuid")
        && !o.contains_key("parentId")
        && matches!(
            o.get("type").and_then(Value::as_str),
            Some("user" | "gemini" | "info" | "error" | "warning")
        )
        && o.contains_key("content")
}

/// The agents' table's detection: a file whose first parsed line is Gemini CLI's.
pub fn detect(raw: &[u8]) -> Option<Box<dyn Agent>> {
    looks_like_gemini(raw).then(|| Box::<Gemini>::default() as Box<dyn Agent>)
}

impl Session {
    /// Gemini CLI's own index state, for a Gemini CLI file.
    pub fn gemini(&self) -> Option<&Gemini> {
        self.agent().as_any().downcast_ref()
    }
}

fn dev_ino(p: &std::path::Path) -> Option<((u64, u64), u64)> {
    std::fs::metadata(p)
        .ok()
        .map(|m| ((m.dev(), m.ino()), m.len()))
}

impl Gemini {
    /// The bytes at `loc`.
    pub fn read(&self, s: &Session, loc: Loc) -> io::Result<Vec<u8>> {
        if loc.file == 0 {
            let mut buf = vec![0u8; loc.len as usize];
            s.read_exact_at(&mut buf, loc.off)?;
            return Ok(buf);
        }
        match s.source(loc.file) {
            Some(src) => src.read(s.homes(), loc.off, loc.len),
            None => Err(io::Error::other("no such file in the session")),
        }
    }

    /// The record at `loc`, parsed.
    pub fn record_at(&self, s: &Session, loc: Loc) -> io::Result<Value> {
        let b = self.read(s, loc)?;
        crate::model::core::js::parse_line(&b).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("line {}: {e}", loc.line),
            )
        })
    }

    /// The file and message of entry `i`.
    pub fn msg_of(&self, s: &Session, i: u32) -> Option<(usize, crate::model::core::id::IdKey)> {
        let e = s.entries().get(i as usize)?;
        let f = e.file as usize;
        let m = self.files.get(f)?.replay.msgs.get(&e.id)?;
        (m.entry == i).then_some((f, e.id))
    }

    /// The records of the path to entry `i` as the file held them the last time the
    /// message was in the active list (GEMINI-FORMAT §3.3), from the head of the list.
    pub fn path_records(&self, s: &Session, i: u32) -> io::Result<Vec<Value>> {
        let Some((f, key)) = self.msg_of(s, i) else {
            return Ok(Vec::new());
        };
        let locs = self.path_locs(f, key);
        self.records_at(s, &locs)
    }

    /// The records at `locs`, parsed, in that order. Records that lie close together
    /// in one file are read in one block, not one `pread` each (a path of 100,000
    /// records is most of a session file).
    pub fn records_at(&self, s: &Session, locs: &[Loc]) -> io::Result<Vec<Value>> {
        /// The most bytes read at once, and the most bytes of no wanted record read
        /// rather than start another block.
        const BLOCK: u64 = 1 << 20;
        const GAP: u64 = 64 << 10;
        let mut order: Vec<usize> = (0..locs.len()).collect();
        order.sort_unstable_by_key(|&k| (locs[k].file, locs[k].off));
        let mut out: Vec<Option<Value>> = vec![None; locs.len()];
        let mut k = 0;
        while k < order.len() {
            let first = locs[order[k]];
            let (start, mut end) = (first.off, first.off + first.len as u64);
            let mut run = k + 1;
            while let Some(&j) = order.get(run) {
                let l = locs[j];
                let l_end = l.off + l.len as u64;
                if l.file != first.file || l.off > end + GAP || l_end.max(end) - start > BLOCK {
                    break;
                }
                end = end.max(l_end);
                run += 1;
            }
            let block = self.read(
                s,
                Loc {
                    file: first.file,
                    off: start,
                    len: (end - start) as u32,
                    line: first.line,
                },
            )?;
            for &j in &order[k..run] {
                let l = locs[j];
                let at = (l.off - start) as usize;
                let bytes = &block[at..at + l.len as usize];
                let v = crate::model::core::js::parse_line(bytes).map_err(|e| {
                    io::Error::new(io::ErrorKind::InvalidData, format!("line {}: {e}", l.line))
                })?;
                out[j] = Some(v);
            }
            k = run;
        }
        Ok(out.into_iter().flatten().collect())
    }

    /// Where the records of the path to message `key` of file `f` lie.
    pub fn path_locs(&self, f: usize, key: crate::model::core::id::IdKey) -> Vec<Loc> {
        let rp = &self.files[f].replay;
        let Some(m) = rp.msgs.get(&key) else {
            return Vec::new();
        };
        let at = rp.last_line(m);
        let mut out = Vec::new();
        let mut cur = key;
        // Each step goes one place towards the head of the list as it was then.
        for _ in 0..=rp.msgs.len() {
            let Some(v) = rp.ver_at(cur, at) else { break };
            out.push(v.loc);
            if v.pred.is_none() {
                break;
            }
            cur = v.pred;
        }
        out.reverse();
        out
    }

    /// Indexes the subagents' files: new ones, and what the known ones gained.
    fn scan_subagents(&mut self, s: &mut Session) -> Result<(), LoadError> {
        let main_is_subagent = self.files[0].replay.meta_str("kind") == Some("subagent");
        if let Some(sid) = self.files[0]
            .replay
            .meta_str("sessionId")
            .map(str::to_string)
            && !main_is_subagent
        {
            for p in super::files::subagent_files(&s.path, &sid) {
                if self.files.iter().any(|f| f.path == p) {
                    continue;
                }
                let n = s.add_source(Source::file(p.clone()))?;
                debug_assert_eq!(n as usize, self.files.len());
                self.files.push(FileState {
                    path: p,
                    replay: Default::default(),
                    scanned: 0,
                    dev_ino: (0, 0),
                });
            }
        }
        let max = crate::model::core::input::max_line();
        for k in 1..self.files.len() {
            let path = self.files[k].path.clone();
            // Inside the session's folder (`chats/`), never blocking.
            let Ok(file) = s.open_side(&path) else {
                continue;
            };
            if let Ok(md) = file.metadata() {
                self.files[k].dev_ino = (md.dev(), md.ino());
            }
            let from = self.files[k].scanned;
            let mut line_no = self.files[k].replay.lines;
            let tail =
                crate::model::core::input::read_lines::<io::Error>(&file, from, None, max, |l| {
                    line_no += 1;
                    if let Line::Whole { bytes, offset } = l {
                        self.index_line(s, k, bytes, offset, line_no);
                    }
                    self.files[k].replay.lines = line_no;
                    Ok(())
                })?;
            self.files[k].scanned = tail.offset;
        }
        Ok(())
    }

    /// Hangs each subagent's first point under the call that ran it, once that call
    /// is indexed (it may be written after the subagent's file).
    fn link_subagents(&mut self, s: &mut Session) {
        for k in 1..self.files.len() {
            let Some(sid) = self.files[k].replay.meta_str("sessionId") else {
                continue;
            };
            let Some(&inv) = self.invokers.get(sid) else {
                continue;
            };
            let roots: Vec<u32> = self.files[k]
                .replay
                .order
                .iter()
                .filter_map(|id| self.files[k].replay.msgs.get(id))
                .map(|m| m.entry)
                .filter(|&e| e != NIL && s.entries[e as usize].parent_id.is_none())
                .collect();
            for e in roots {
                let en = &mut s.entries[e as usize];
                en.parent_id = inv;
                en.flags |= flags::SOFT_PARENT;
                s.relink = true;
            }
        }
    }

    /// `name` and `session.json`, after the lines read.
    fn describe(&mut self, s: &Session) {
        let r = &self.files[0].replay;
        self.name = match r.meta.get("summary") {
            Some(Value::String(t)) if !t.is_empty() => Some(super::names::strip_unsafe(t)),
            _ => r
                .first_user
                .and_then(|l| self.record_at(s, l).ok())
                .map(|v| super::names::clean_message(&super::names::text_parts(v.get("content"))))
                .filter(|n| !n.is_empty()),
        };
        let mut o = serde_json::Map::new();
        o.insert("format".into(), Value::from("gemini-cli"));
        for (k, v) in &r.meta {
            o.insert(k.clone(), v.clone());
        }
        if let Some((home, slug)) = super::files::home_of(&s.path)
            && let Some(p) = super::files::project_of(&home, &slug)
        {
            o.insert("project".into(), Value::from(p));
        }
        let mut j = crate::model::core::js::js_stringify(&Value::Object(o)).into_bytes();
        j.push(b'\n');
        self.session_json = j;
    }

    /// What `check` says of the file as a whole (GEMINI-FORMAT §2.4, §10), again
    /// after every scan.
    fn file_problems(&self, s: &mut Session) {
        const CODES: [&str; 2] = ["gemini-no-metadata", "gemini-no-conversation"];
        s.problems.retain(
            |p| !matches!(&p.what, ProblemKind::Agent { code, .. } if CODES.contains(code)),
        );
        let r = &self.files[0].replay;
        if r.meta_str("sessionId").is_none() || r.meta_str("projectHash").is_none() {
            s.note(
                0,
                Severity::Warning,
                ProblemKind::Agent {
                    code: CODES[0],
                    what: "no metadata line with a string sessionId and projectHash: Gemini \
                           CLI cannot read this file (it tries it as a legacy JSON session, \
                           which fails)"
                        .into(),
                },
            );
        } else if r.order.is_empty() {
            s.note(
                0,
                Severity::Note,
                ProblemKind::Agent {
                    code: CODES[1],
                    what: "no conversation, only what a start of the CLI writes (a start-up \
                           stub): the CLI neither lists nor resumes it"
                        .into(),
                },
            );
        }
    }

    /// Entries shown under another name: each subagent's first point, as
    /// `agent-<its session id>`.
    fn name_subagents(&mut self) {
        self.aliases.clear();
        self.alias_of.clear();
        for k in 1..self.files.len() {
            let r = &self.files[k].replay;
            let Some(sid) = r.meta_str("sessionId") else {
                continue;
            };
            let Some(e) = r
                .order
                .first()
                .and_then(|id| r.msgs.get(id))
                .map(|m| m.entry)
                .filter(|&e| e != NIL)
            else {
                continue;
            };
            let a = format!("agent-{sid}");
            self.aliases.insert(e, a.clone());
            self.alias_of.insert(a, e);
        }
    }
}

impl Agent for Gemini {
    fn format(&self) -> Format {
        Format::Gemini
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

    fn begin(&mut self, s: &mut Session) {
        self.files = vec![FileState {
            path: s.path.clone(),
            replay: Default::default(),
            scanned: 0,
            dev_ino: (0, 0),
        }];
    }

    fn index_line(&mut self, s: &mut Session, raw: &[u8], off: u64, line_no: u32) {
        Gemini::index_line(self, s, 0, raw, off, line_no);
    }

    fn after_scan(&mut self, s: &mut Session) -> Result<(), LoadError> {
        self.scan_subagents(s)?;
        self.link_subagents(s);
        self.describe(s);
        self.file_problems(s);
        Ok(())
    }

    fn sources_moved(&self, s: &Session) -> SourcesMoved {
        let mut moved = SourcesMoved::No;
        for f in &self.files[1..] {
            match dev_ino(&f.path) {
                Some((di, len)) if di != f.dev_ino || len < f.scanned => {
                    return SourcesMoved::Rewritten;
                }
                Some((_, len)) if len > f.scanned => moved = SourcesMoved::Grew,
                _ => {}
            }
        }
        if moved == SourcesMoved::No
            && let Some(sid) = self.files[0].replay.meta_str("sessionId")
            && self.files[0].replay.meta_str("kind") != Some("subagent")
            && super::files::subagent_files(&s.path, sid).len() != self.files.len() - 1
        {
            moved = SourcesMoved::Grew;
        }
        moved
    }

    /// A subagent's entries are pieces of the call that ran them, not branches of
    /// the conversation (`branches/`, `tree`, a branch's cost); leaves and branch
    /// points are counted without them.
    fn after_link(&mut self, s: &mut Session) {
        self.name_subagents();
        if self.files.len() < 2 {
            return;
        }
        for e in s.entries.iter_mut() {
            if e.file != 0 {
                e.flags |= flags::PIECE;
            }
        }
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

    /// The summary and the leaf are metadata: a `$set` moves them without an entry.
    fn meta_moves(&self) -> bool {
        true
    }

    fn has_side_files(&self) -> bool {
        self.files.len() > 1
    }

    /// The last point of the active list after the last line (§3.3).
    fn leaf(&self, _s: &Session) -> Option<u32> {
        let r = &self.files.first()?.replay;
        let id = r.leaf()?;
        let e = r.msgs.get(&id)?.entry;
        (e != NIL).then_some(e)
    }

    fn name<'a>(&'a self, _s: &'a Session) -> Option<&'a str> {
        self.name.as_deref()
    }

    fn session_json(&self, _s: &Session) -> io::Result<Vec<u8>> {
        Ok(self.session_json.clone())
    }

    fn session_json_len(&self, _s: &Session) -> u64 {
        self.session_json.len() as u64
    }

    /// No: the records an entry's path holds change with the lines after it (a resume
    /// rewrites them), and the leaf moves.
    fn contexts_settled(&self) -> bool {
        false
    }

    fn render(&self, s: &Session, i: u32, v: &Value) -> (String, Vec<Image>) {
        (render::render_entry(v, s.kind_name(i)), render::images(v))
    }

    fn preview(&self, s: &Session, i: u32, v: &Value) -> String {
        render::preview(v, s.kind_name(i))
    }

    fn context_messages(&self, s: &Session, i: u32) -> io::Result<Vec<Value>> {
        let records = self.path_records(s, i)?;
        Ok(context::contents(records))
    }

    fn context_preamble(&self, s: &Session, _i: u32) -> Option<String> {
        Some(system::preamble(&s.path))
    }

    fn context_renderer(&self) -> fn(&[Value]) -> String {
        render::render_context
    }

    /// A reply answered the request made from the point before it.
    fn request_of(&self, s: &Session, i: u32) -> Option<u32> {
        let v = s.entry_value(i).ok()?;
        if v.get("type").and_then(Value::as_str) != Some("gemini") {
            return None;
        }
        s.parent(i)
    }

    /// Not in a subagent's file (the CLI resumes main sessions only), nor in a
    /// subagent's file opened alone.
    fn can_reply_at(&self, s: &Session, i: u32) -> bool {
        self.msg_of(s, i).is_some_and(|(f, _)| f == 0)
            && self.files[0].replay.meta_str("kind") != Some("subagent")
    }

    fn alias(&self, i: u32) -> Option<&str> {
        self.aliases.get(&i).map(String::as_str)
    }

    fn find_alias(&self, id: &str) -> Option<u32> {
        self.alias_of.get(id).copied()
    }

    fn build_line(
        &self,
        s: &Session,
        what: &NewEntry<'_>,
        now: i64,
        _batch: &[String],
    ) -> Result<(String, Vec<u8>), AppendError> {
        append::build(s, self, what, now)
    }

    fn fill_usage(&self, s: &Session, prices: &Prices, t: &mut Table) {
        usage::fill(s, self, prices, t);
    }

    fn fork(&self, _s: &Session, _i: u32, _fresh: &Fresh) -> Result<ForkFile, ForkError> {
        Err(ForkError::Unsupported(
            "Gemini CLI 0.61.0 has no fork: reply at the entry instead (the session then \
             continues from there, as after a /rewind), or copy the session with \
             `gemini --session-file FILE`"
                .into(),
        ))
    }

    fn heap_bytes(&self) -> usize {
        self.files
            .iter()
            .map(|f| {
                f.replay.msgs.len() * 96
                    + f.replay
                        .msgs
                        .values()
                        .map(|m| m.vers.capacity() * std::mem::size_of::<super::index::Ver>())
                        .sum::<usize>()
                    + f.replay.active.capacity() * 24
            })
            .sum::<usize>()
            + self.session_json.capacity()
    }

    fn watched_dirs(&self, s: &Session) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = s
            .path()
            .parent()
            .map(|p| p.to_path_buf())
            .into_iter()
            .collect();
        if let Some(sid) = self.files[0].replay.meta_str("sessionId")
            && let Some(d) = super::files::subagent_dir(s.path(), sid)
            && d.is_dir()
        {
            v.push(d);
        }
        v
    }
}
