//! Pi behind the core's [`Agent`] interface: its index state ([`Index`]) indexes the
//! session file's lines and keeps Pi's header version, labels, edits, name and v1
//! bookkeeping; the other seam points are answered with the rest of this folder.

use super::index::Index;
use crate::model::core::agent::Agent;
use crate::model::core::fork::{ForkError, ForkFile, Fresh};
use crate::model::core::format::Format;
use crate::model::core::problem::ProblemKind;
use crate::model::core::reply::{AppendError, NewEntry};
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
        head: Result<LineHead<'_>, LineError>,
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

    fn fill_usage(&self, s: &Session, prices: &Prices, t: &mut Table) {
        super::usage::fill(s, prices, t);
    }
}
