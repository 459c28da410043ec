//! The [`Agent`] interface over a Copilot CLI session's index ([`super::index`]): the
//! agents' table's detection, and each seam point answered by the folder's files (the
//! context, rendering, usage, replies and forks, fork links).

use super::events::{self, Ev, Line};
use super::index::{Copilot, Mark, Node};
use super::{render, usage, write};
use crate::model::core::agent::{Agent, SessionLink, SourcesMoved};
use crate::model::core::fork::{ForkError, ForkFile, Fresh};
use crate::model::core::format::Format;
use crate::model::core::json_view::{Json, JsonObj, Tape};
use crate::model::core::reply::{AppendError, NewEntry, Write};
use crate::model::core::scan::{LineError, LineHead};
use crate::model::core::session::{LoadError, ProblemKind, Session, Severity};
use crate::model::core::text::Image;
use crate::model::core::usage::Table;
use crate::model::core::usage::prices::Prices;
use serde_json::Value;
use std::any::Any;
use std::io;

/// Is `raw`, the first line of a file that parses, a Copilot CLI event?
pub fn looks_like_copilot(raw: &[u8]) -> bool {
    let Ok(h) = LineHead::parse(raw) else {
        return false;
    };
    let Some(ty) = h.ty.as_str() else {
        return false;
    };
    // Pi's header, Claude Code's and Codex's lines have other types (no `.` in them, and
    // no `data` object); an unknown type is not taken for Copilot's.
    if matches!(events::classify(ty), Line::Entry(Ev::Unknown)) {
        return false;
    }
    Tape::new(raw)
        .and_then(|t| {
            t.root()
                .obj()
                .and_then(|o| o.get("data"))
                .map(|d| d.obj().is_some())
        })
        .unwrap_or(false)
}

/// The agents' table's detection: a file whose first line is a Copilot CLI event.
pub fn detect(raw: &[u8]) -> Option<Box<dyn Agent>> {
    looks_like_copilot(raw).then(|| Box::<Copilot>::default() as Box<dyn Agent>)
}

/// Why a reply at the root is refused.
const NAME_REFUSED: &str = "a Copilot CLI session's name is in its workspace.yaml, which the CLI \
                            rewrites: rename it with /rename in Copilot CLI";
const LABELS_REFUSED: &str = "Copilot CLI sessions have no labels";
const ROOT_REPLY: &str = "a Copilot CLI session holds one conversation: reply under an entry \
     (at an earlier one it makes a new session, as /fork does)";

/// Whether a reply at the leaf is appended to the file: only to a session's own
/// `events.jsonl`. A copy the CLI kept when it repaired a file
/// (`events.jsonl.backup-before-recovery-*`, mounted to read a branch a rewind deleted
/// since) is never written: a reply there makes a new session, as at an earlier entry.
fn appends(s: &Session) -> bool {
    s.path()
        .file_name()
        .is_some_and(|n| n == super::home::EVENTS)
}

/// Why the session cannot take a line now: a Copilot CLI process has it open.
fn in_use(s: &Session) -> Option<String> {
    let pid = super::home::in_use_by(&Copilot::folder(s))?;
    Some(format!(
        "Copilot CLI (process {pid}) has this session open: a line appended now would be \
         unknown to it, and its own next lines would go on without it; type the message \
         there, or quit it first (a reply at an earlier entry makes a new session, and is \
         taken meanwhile)"
    ))
}

impl Agent for Copilot {
    fn format(&self) -> Format {
        Format::Copilot
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
    fn indexes_heads(&self) -> bool {
        true
    }

    fn begin(&mut self, s: &mut Session) {
        // Until a `session.start` says otherwise: the folder's name is the session id.
        s.header.session_id = Self::folder(s)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
    }

    fn index_line(&mut self, s: &mut Session, raw: &[u8], off: u64, line_no: u32) {
        let head = LineHead::parse(raw);
        self.index_head(s, raw, &head, off, line_no);
    }

    fn index_head(
        &mut self,
        s: &mut Session,
        raw: &[u8],
        head: &Result<LineHead<'_>, LineError>,
        off: u64,
        line_no: u32,
    ) {
        self.index_head_of(s, raw, head, off, line_no);
    }

    fn after_scan(&mut self, s: &mut Session) -> Result<(), LoadError> {
        // A session without its `session.start` line is one the CLI does not load (§10,
        // measured: "Session file is corrupted or incompatible").
        if s.header().len == 0
            && !s.entries().is_empty()
            && !s
                .problems()
                .iter()
                .any(|p| matches!(&p.what, ProblemKind::Agent { code, .. } if *code == "no-start"))
        {
            s.note(
                1,
                Severity::Warning,
                ProblemKind::Agent {
                    code: "no-start",
                    what: "no session.start line: Copilot CLI refuses to load the session \
                           (\"Session file is corrupted or incompatible\")"
                        .into(),
                },
            );
        }
        // New lines may change the first prompt or the header: cheap to redo.
        self.read_workspace(s);
        self.update_name();
        *self.session_json.lock() = None;
        Ok(())
    }

    fn sources_moved(&self, s: &Session) -> SourcesMoved {
        if self.workspace_moved(s) {
            SourcesMoved::Grew
        } else {
            SourcesMoved::No
        }
    }

    /// `workspace.yaml` names the session and changes without a line of the file.
    fn meta_moves(&self) -> bool {
        true
    }

    fn leaf(&self, s: &Session) -> Option<u32> {
        (!s.entries().is_empty()).then(|| s.entries().len() as u32 - 1)
    }

    fn name<'a>(&'a self, _s: &'a Session) -> Option<&'a str> {
        self.name.as_deref()
    }

    fn session_json(&self, s: &Session) -> io::Result<Vec<u8>> {
        Ok(super::render::session_json_bytes(s, self).to_vec())
    }

    fn session_json_len(&self, s: &Session) -> u64 {
        super::render::session_json_bytes(s, self).len() as u64
    }

    /// No: the readable context shows the system prompt of the request made from an
    /// entry, which the CLI writes after a prompt.
    fn contexts_settled(&self) -> bool {
        false
    }

    fn render(&self, s: &Session, i: u32, v: &Value) -> (String, Vec<Image>) {
        render::entry(s, self, i, v)
    }

    fn preview(&self, _s: &Session, i: u32, v: &Value) -> String {
        render::preview(self.nodes[i as usize], v)
    }

    fn context_messages(&self, s: &Session, i: u32) -> io::Result<Vec<Value>> {
        self.context_at(s, i)
    }

    fn context_preamble(&self, s: &Session, i: u32) -> Option<String> {
        Some(render::preamble(s, self, i))
    }

    fn context_renderer(&self) -> fn(&[Value]) -> String {
        render::render_context
    }

    /// A reply of the main agent answered the request made from the main entry before it.
    fn request_of(&self, s: &Session, i: u32) -> Option<u32> {
        let n = self.nodes[i as usize];
        if n.ev != Ev::Assistant || n.sub {
            return None;
        }
        s.parent(i)
    }

    fn build_line(
        &self,
        s: &Session,
        what: &NewEntry<'_>,
        now: i64,
        _batch: &[String],
    ) -> Result<(String, Vec<u8>), AppendError> {
        match what {
            NewEntry::Reply { .. } => {
                let parent = self.last_event_id.as_deref().unwrap_or("");
                let (id, line) = write::user_line(
                    match what {
                        NewEntry::Reply { text, .. } => text,
                        _ => "",
                    },
                    Some(parent).filter(|p| !p.is_empty()),
                    now,
                );
                let _ = s;
                Ok((id, line))
            }
            NewEntry::Name(_) => Err(AppendError::Unsupported(NAME_REFUSED)),
            NewEntry::Label { .. } => Err(AppendError::Unsupported(LABELS_REFUSED)),
        }
    }

    /// Known without planning a copy: a reply at the root, a name, a label; a fork where
    /// the CLI could not load the copy. A reply at an entry is refused only once the
    /// CLI is seen to hold the session ([`Agent::reply_refusal`]), which changes by the
    /// moment and so leaves the write bit alone.
    fn refuses(&self, s: &Session, w: Write) -> Option<String> {
        match w {
            Write::Reply(None) => Some(ROOT_REPLY.into()),
            Write::Reply(Some(_)) => None,
            Write::Name => Some(NAME_REFUSED.into()),
            Write::Label => Some(LABELS_REFUSED.into()),
            Write::Fork(i) => write::refusal(s, i),
        }
    }

    /// Refused at `open` with `EBUSY`: a reply at the leaf while a Copilot CLI process
    /// has the session open (its lock file): that process would go on from what it holds
    /// in memory, its next lines after the reply, which it never saw.
    fn reply_refusal(&self, s: &Session, parent: Option<u32>) -> Option<(i32, String)> {
        match parent {
            // Refused already ([`Agent::refuses`]).
            None => None,
            Some(i) if Some(i) == self.leaf(s) && appends(s) => {
                in_use(s).map(|why| (libc::EBUSY, why))
            }
            Some(_) => None,
        }
    }

    /// At the leaf: one `user.message` appended (the core's path). At an earlier entry: a
    /// new session folder, as `/fork` writes it, cut after the entry, with the reply.
    fn write_reply(
        &self,
        s: &Session,
        parent: Option<&str>,
        text: &str,
    ) -> Option<Result<String, AppendError>> {
        let Some(p) = parent else {
            return Some(Err(AppendError::Unsupported(ROOT_REPLY)));
        };
        let Some(i) = s.find(p) else {
            return Some(Err(AppendError::NoSuchEntry(p.to_string())));
        };
        if Some(i) == self.leaf(s) && appends(s) {
            // Asked again at the write: the CLI may have opened it since `open`.
            return in_use(s).map(|why| {
                Err(AppendError::Refused {
                    errno: libc::EBUSY,
                    message: why,
                })
            });
        }
        Some(
            write::reply_in_new_session(s, self, i, text)
                .map(|w| {
                    self.links.forget();
                    w.reply_id
                })
                .map_err(|e| AppendError::Refused {
                    errno: e.errno(),
                    message: e.to_string(),
                }),
        )
    }

    /// `.id/` also finds an entry by the CLI's other ids: a message's `messageId`, a tool
    /// result's `toolCallId` (the first entry with it).
    fn find_alias(&self, id: &str) -> Option<u32> {
        self.aliases.get(id).copied()
    }

    fn fill_usage(&self, s: &Session, prices: &Prices, t: &mut Table) {
        usage::fill(s, self, prices, t);
    }

    fn fork(&self, s: &Session, i: u32, fresh: &Fresh) -> Result<ForkFile, ForkError> {
        write::fork_file(s, self, i, fresh)
    }

    fn forked_from(&self, s: &Session) -> Option<SessionLink> {
        self.links.forked_from(s, &self.infos())
    }

    fn forks_at(&self, s: &Session, i: u32) -> Vec<SessionLink> {
        self.links.forks_at(s, &self.infos(), i)
    }

    fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.marks.capacity() * std::mem::size_of::<Mark>()
            + self.assets.len() * 96
            + self.event_ids.capacity() * 9
            + self.aliases.len() * 72
            + self
                .session_json
                .lock()
                .as_ref()
                .map_or(0, |j| j.capacity())
    }
}
