//! An opencode session as a core [`Session`] (`super::index` holds its state): the
//! seam points of [`Agent`], each answered by the file that knows (`render`,
//! `context`, `usage`, `write`, `forks`), and how a path names a session of a
//! database (`DB/ses_…`, the agents' table's `member`).

use super::db;
use super::index::{Meta, OpencodeSession, Part, Role};
use crate::model::core::agent::{Agent, SessionLink, SourcesMoved};
use crate::model::core::fork::{ForkError, ForkFile, Fresh};
use crate::model::core::format::Format;
use crate::model::core::reply::{AppendError, NewEntry, Write};
use crate::model::core::session::{LoadError, Member, Session};
use crate::model::core::text::Image;
use crate::model::core::usage::Table;
use crate::model::core::usage::prices::Prices;
use serde_json::Value;
use std::any::Any;
use std::io;
use std::path::{Path, PathBuf};

/// Whether `path` names a session of an opencode database: `DB/ses_…`, where `DB` is a
/// SQLite file.
pub fn member_of(path: &Path) -> Option<(PathBuf, String)> {
    member_held(path).map(|(db, sid, _)| (db, sid))
}

/// [`member_of`], with the database's descriptor held for the process ([`db::held`]).
fn member_held(path: &Path) -> Option<(PathBuf, String, &'static std::fs::File)> {
    let name = path.file_name()?.to_str()?;
    if !name.starts_with("ses_") || name.contains('/') {
        return None;
    }
    let db = path.parent()?;
    if !std::fs::metadata(db).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let held = db::held(db)?;
    Some((db.to_path_buf(), name.to_string(), held))
}

/// The agents' table's `member`: a session of an opencode database, read through the
/// database's descriptor this agent holds ([`db::held`]), never one of its own.
pub fn detect_member(path: &Path) -> Option<Member> {
    let (db, sid, held) = member_held(path)?;
    Some(Member {
        file: db.clone(),
        held,
        agent: Box::new(OpencodeSession::new(db, sid)),
    })
}

impl Agent for OpencodeSession {
    fn format(&self) -> Format {
        Format::Opencode
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    /// The database is never read as lines: this agent reads the session's rows.
    fn opaque_main_file(&self) -> bool {
        true
    }

    fn after_scan(&mut self, s: &mut Session) -> Result<(), LoadError> {
        self.catch_up(s)
    }

    fn sources_moved(&self, _s: &Session) -> SourcesMoved {
        self.moved()
    }

    /// The title, the revert and the forks move without a message being written.
    fn meta_moves(&self) -> bool {
        true
    }

    /// What is refused before anything is written (no write bit, `EACCES` at `open`):
    /// the root's reply, replies and forks under a deleted or a subagent's message,
    /// the name (opencode's title, changed by its `/rename`), labels. Whether the
    /// database can be written now is asked at `open` ([`Agent::refuse_reply_at`]).
    fn refuses(&self, s: &Session, w: Write) -> Option<String> {
        match w {
            Write::Reply(at) => super::write::fixed_refusal(self, s, at).map(|e| e.to_string()),
            Write::Fork(i) => super::write::fork_refusal(self, s, i).map(|e| e.to_string()),
            Write::Name => Some(
                "the name of an opencode session is its title, which opencode keeps: \
                 change it with opencode's /rename"
                    .into(),
            ),
            Write::Label => Some("opencode sessions have no labels".into()),
        }
    }

    fn has_side_files(&self) -> bool {
        !self.subagents.is_empty()
    }

    fn is_subagent(&self, _s: &Session, i: u32) -> bool {
        matches!(
            self.metas.get(i as usize).map(|m| m.part),
            Some(Part::Subagent(_))
        )
    }

    fn leaf(&self, _s: &Session) -> Option<u32> {
        if let Some(r) = &self.revert
            && let Some(&ri) = self.by_msg.get(r)
            && self.metas[ri as usize].part == Part::Main
        {
            return (0..ri)
                .rev()
                .find(|&i| self.metas[i as usize].part == Part::Main);
        }
        self.last_main()
    }

    fn name<'a>(&'a self, _s: &'a Session) -> Option<&'a str> {
        (!self.name.is_empty()).then_some(self.name.as_str())
    }

    fn session_json(&self, _s: &Session) -> io::Result<Vec<u8>> {
        Ok(self.session_json.clone())
    }

    fn session_json_len(&self, _s: &Session) -> u64 {
        self.session_json.len() as u64
    }

    /// No: rows are rewritten while a reply streams, and the leaf moves with `/undo`.
    fn contexts_settled(&self) -> bool {
        false
    }

    fn render(&self, s: &Session, i: u32, v: &Value) -> (String, Vec<Image>) {
        super::render::render(self, s, i, v)
    }

    fn preview(&self, s: &Session, i: u32, v: &Value) -> String {
        super::render::preview(self, s, i, v)
    }

    fn context_messages(&self, s: &Session, i: u32) -> io::Result<Vec<Value>> {
        super::context::context_json(self, s, i)
    }

    fn context_renderer(&self) -> fn(&[Value]) -> String {
        super::render::render_context
    }

    fn context_preamble(&self, s: &Session, i: u32) -> Option<String> {
        super::context::preamble(self, s, i)
    }

    /// An assistant message answered the request made right after the message before
    /// it (one request per assistant message, §2.3).
    fn request_of(&self, s: &Session, i: u32) -> Option<u32> {
        if self.metas.get(i as usize)?.role != Role::Assistant {
            return None;
        }
        s.parent(i)
    }

    fn refuse_reply_at(&self, s: &Session, i: Option<u32>) -> Option<AppendError> {
        super::write::refusal(self, s, i)
    }

    fn build_line(
        &self,
        _s: &Session,
        _what: &NewEntry<'_>,
        _now: i64,
        _batch: &[String],
    ) -> Result<(String, Vec<u8>), AppendError> {
        Err(AppendError::Unsupported(
            "an opencode session is rows of its database, not lines: \
             sessionfs writes replies there (write to `reply`); it has no labels, \
             and its name is the title opencode keeps",
        ))
    }

    fn write_reply(
        &self,
        s: &Session,
        parent: Option<&str>,
        text: &str,
    ) -> Option<Result<String, AppendError>> {
        Some(super::write::reply(self, s, parent, text))
    }

    fn fill_usage(&self, s: &Session, prices: &Prices, t: &mut Table) {
        super::usage::fill(self, s, prices, t);
    }

    fn fork(&self, _s: &Session, _i: u32, _fresh: &Fresh) -> Result<ForkFile, ForkError> {
        Err(ForkError::Unsupported(
            "an opencode fork is a new session in its database, not a file".into(),
        ))
    }

    fn write_fork(&self, s: &Session, i: u32) -> Option<Result<PathBuf, ForkError>> {
        Some(super::write::fork(self, s, i))
    }

    fn forked_from(&self, _s: &Session) -> Option<SessionLink> {
        self.forks.forked_from.clone()
    }

    fn forks_at(&self, _s: &Session, i: u32) -> Vec<SessionLink> {
        let Some(m) = self.metas.get(i as usize) else {
            return Vec::new();
        };
        self.forks.at.get(&m.id).cloned().unwrap_or_default()
    }

    fn watched_dirs(&self, _s: &Session) -> Vec<PathBuf> {
        self.db
            .parent()
            .map(Path::to_path_buf)
            .into_iter()
            .collect()
    }

    fn heap_bytes(&self) -> usize {
        self.total_bytes as usize
            + self.metas.capacity() * (std::mem::size_of::<Meta>() + 64)
            + self.session_json.capacity()
    }
}
