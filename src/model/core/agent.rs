//! The interface between the core's index and each agent's format.
//!
//! [`Session`] indexes any agent's file: per entry the byte range of its line, its id
//! and parent id, kind, timestamp and flags, and the tree links; it reads lines back
//! with `pread` and follows appends. What a line *means* belongs to the agent. The
//! session holds its agent as a `Box<dyn Agent>`, chosen from the file's content when
//! it is opened (see `crate::model::agents`).
//!
//! Why a trait and not an enum: the core must not name the agents' types (an enum of
//! their states would make the core import every agent, and every agent imports the
//! core: an import circle). A trait object costs one indirect call where an enum cost
//! one branch; Pi's per-line index path makes at most one such call per line (see
//! `scripts/bench-index.sh` and the commit that introduced this trait for figures).
//!
//! | seam point | method |
//! |---|---|
//! | which agent | [`Agent::format`] |
//! | whose file | [`Agent::accepts_first_line`] (the table's `first` agent), then [`AgentTable::detect`] |
//! | line → entry or metadata | [`Agent::index_line`] |
//! | after a scan (other files of the session) | [`Agent::after_scan`], [`Agent::sources_moved`] |
//! | linking quirks | [`Agent::after_link`], [`Agent::root_is_fine`] |
//! | leaf, name, labels, `session.json` | [`Agent::leaf`], [`Agent::name`], [`Agent::session_json`] |
//! | rendering | [`Agent::render`], [`Agent::preview`], [`Agent::full_output`] |
//! | context | [`Agent::context_messages`], [`Agent::context_renderer`], [`Agent::contexts_settled`] |
//! | answers and replies | [`Agent::request_of`], [`Agent::can_reply_at`], [`Agent::build_line`] |
//! | other names of entries | [`Agent::alias`], [`Agent::find_alias`] |
//! | entries of other files | [`Session::add_source`], [`super::session::Source`], `Entry::file` |
//! | fork, usage | [`Agent::fork`], [`Agent::fill_usage`] |
//! | memory | [`Agent::heap_bytes`] |
//!
//! | labels, edits, name entry, v1 | [`Agent::labels`], [`Agent::label_entry`], [`Agent::edits_of`], [`Agent::name_entry`], [`Agent::is_v1`] |
//!
//! Every agent indexes its own lines: the core reads them, notes CRLF line endings,
//! and until the file's agent is known, skips blank and malformed lines and picks
//! the agent by the first line that parses. What a header said (session id, time,
//! version) the agent writes into the session's neutral [`super::session::Header`].

use super::fork_file::{ForkError, ForkFile, Fresh};
use super::format::Format;
use super::problem::LoadError;
use super::problem::ProblemKind;
use super::reply::{AppendError, NewEntry};
use super::session::Session;
use super::text::Image;
use super::usage::Table;
use super::usage::prices::Prices;
use serde_json::Value;
use std::any::Any;
use std::io;
use std::path::PathBuf;

/// What an agent's other files did since they were indexed (see
/// [`Agent::sources_moved`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourcesMoved {
    No,
    Grew,
    Rewritten,
}

/// How a session gets its agent: the agents' table above the core and the agents
/// (`crate::model::agents::TABLE`) fills it in; the session keeps it, so that a reload
/// chooses the same way.
#[derive(Debug)]
pub struct AgentTable {
    /// The agent of a file whose first line is a Pi header, or that is empty so far.
    pub first: fn() -> Box<dyn Agent>,
    /// The agent for a file whose first parsed line is `raw` and no Pi header;
    /// `None` when no agent recognises it.
    pub detect: fn(&[u8]) -> Option<Box<dyn Agent>>,
}

/// One agent's format, and its own index state. See the module docs.
pub trait Agent: std::fmt::Debug + Send + Sync + 'static {
    /// Which agent.
    fn format(&self) -> Format;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;

    /// Kept for agents written against it; every agent indexes its own lines through
    /// [`Agent::index_line`], whatever this says.
    fn indexes_lines(&self) -> bool {
        false
    }
    /// Indexes one line of the session file (`line_no` from 1, at `off`).
    fn index_line(&mut self, _s: &mut Session, _raw: &[u8], _off: u64, _line_no: u32) {}
    /// Called when the agent was detected, before its first line is indexed.
    fn begin(&mut self, _s: &mut Session) {}
    /// After the session file's new lines: index the other files of the session.
    fn after_scan(&mut self, _s: &mut Session) -> Result<(), LoadError> {
        Ok(())
    }
    /// Have the other files of the session changed since they were indexed?
    fn sources_moved(&self, _s: &Session) -> SourcesMoved {
        SourcesMoved::No
    }
    /// After the tree links changed: what the agent derives from them.
    fn after_link(&mut self, _s: &mut Session) {}
    /// Whether an entry whose parent is missing (`id` is its id key) is a root by
    /// design rather than damage.
    fn root_is_fine(&self, _id: super::id::IdKey) -> bool {
        false
    }
    /// Whether metadata lines (no entries) can move the name and the leaf, so that a
    /// refresh always reports them changed.
    fn meta_moves(&self) -> bool {
        false
    }
    /// Whether lines of other files are indexed with the session's own.
    fn has_side_files(&self) -> bool {
        false
    }

    /// Migrates a parsed entry to the form the agent holds in memory.
    fn migrate(&self, _s: &Session, _i: u32, _v: &mut Value) {}
    fn leaf(&self, s: &Session) -> Option<u32>;
    fn name<'a>(&'a self, s: &'a Session) -> Option<&'a str>;
    fn session_json(&self, s: &Session) -> io::Result<Vec<u8>>;
    fn session_json_len(&self, s: &Session) -> u64;
    fn contexts_settled(&self) -> bool;
    fn render(&self, s: &Session, i: u32, v: &Value) -> (String, Vec<Image>);
    fn preview(&self, s: &Session, i: u32, v: &Value) -> String;
    /// The preview of an entry straight from its line's bytes, for an agent whose
    /// entries need no building (`tree` of a large file reads its lines in runs).
    /// `None` when the line must be built ([`Agent::preview`]).
    fn preview_of_line(&self, _raw: &[u8]) -> Option<String> {
        None
    }
    fn full_output(&self, _s: &Session, _i: u32) -> Option<PathBuf> {
        None
    }
    fn context_messages(&self, s: &Session, i: u32) -> io::Result<Vec<Value>>;
    fn context_renderer(&self) -> fn(&[Value]) -> String;
    fn request_of(&self, s: &Session, i: u32) -> Option<u32>;
    fn can_reply_at(&self, _s: &Session, _i: u32) -> bool {
        true
    }
    fn joins_tree_runs(&self, _i: u32) -> bool {
        false
    }
    fn alias(&self, _i: u32) -> Option<&str> {
        None
    }
    fn find_alias(&self, _id: &str) -> Option<u32> {
        None
    }
    /// The line for `what` (with its `\n`) and its new id, after the lines of `batch`.
    fn build_line(
        &self,
        s: &Session,
        what: &NewEntry<'_>,
        now: i64,
        batch: &[String],
    ) -> Result<(String, Vec<u8>), AppendError>;
    /// Fills the usage table with what the entries record (tokens, cost).
    fn fill_usage(&self, s: &Session, prices: &Prices, t: &mut Table);
    /// The new session file that forking at entry `i` makes, as the agent forks.
    fn fork(&self, s: &Session, i: u32, fresh: &Fresh) -> Result<ForkFile, ForkError>;
    fn heap_bytes(&self) -> usize {
        0
    }
    /// Writes a reply itself, for an agent whose reply is not one line appended to the
    /// session file (Codex: the current page, or a new page and its database row),
    /// under the entry with id `parent` (`None`: at the root). Returns the new entry's
    /// id. `None`: the core's path ([`Agent::build_line`], appended to the session
    /// file).
    fn write_reply(
        &self,
        _s: &Session,
        _parent: Option<&str>,
        _text: &str,
    ) -> Option<Result<String, AppendError>> {
        None
    }
    /// The folders whose changes can change the session: the session file's own, and
    /// for a session over several files theirs (and where new ones appear).
    fn watched_dirs(&self, s: &Session) -> Vec<PathBuf> {
        s.path()
            .parent()
            .map(|p| p.to_path_buf())
            .into_iter()
            .collect()
    }
    /// What the readable `context` of entry `i` shows before its messages (Codex's
    /// base instructions), if anything.
    fn context_preamble(&self, _s: &Session, _i: u32) -> Option<String> {
        None
    }

    /// Whether `raw`, the first line of a file that parses, is this agent's: asked of
    /// the table's `first` agent before the table's `detect`.
    fn accepts_first_line(&self, _raw: &[u8]) -> bool {
        false
    }
    /// Whether the file's entries have ids only in memory (Pi's v1), so that nothing
    /// may be appended.
    fn is_v1(&self) -> bool {
        false
    }
    /// Live labels, `(label, target node)`, sorted by label.
    fn labels<'a>(&'a self, _s: &'a Session) -> Vec<(&'a str, u32)> {
        Vec::new()
    }
    fn label_of<'a>(&'a self, _s: &'a Session, _i: u32) -> Option<&'a str> {
        None
    }
    /// The live label `name`: `(target node, label entry)`.
    fn label_entry(&self, _s: &Session, _name: &str) -> Option<(u32, u32)> {
        None
    }
    /// Something that changes whenever a label is set or cleared (a refresh compares
    /// it before and after).
    fn labels_mark(&self) -> (usize, Option<u32>) {
        (0, None)
    }
    /// The entries that edit node `i`, in file order.
    fn edits_of(&self, _s: &Session, _i: u32) -> Vec<u32> {
        Vec::new()
    }
    /// The nodes some entry edits.
    fn edited_targets(&self, _s: &Session) -> Vec<u32> {
        Vec::new()
    }
    /// The entry that set the session's name, when a line does.
    fn name_entry(&self) -> Option<u32> {
        None
    }
    /// Problems of the agent's own that the tree's links decide, after the tree was
    /// rebuilt: `(line, what)`.
    fn tree_problems(&self, _s: &Session, _found: &mut Vec<(u32, ProblemKind)>) {}
}

/// Stands in for a session's agent while that agent's `&mut self` hook runs with the
/// session (see `Session::with_agent`); never seen outside it.
#[derive(Debug)]
pub(crate) struct Lent;

impl Agent for Lent {
    fn format(&self) -> Format {
        Format::Pi
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn leaf(&self, _: &Session) -> Option<u32> {
        None
    }
    fn name<'a>(&'a self, _: &'a Session) -> Option<&'a str> {
        None
    }
    fn session_json(&self, _: &Session) -> io::Result<Vec<u8>> {
        Ok(Vec::new())
    }
    fn session_json_len(&self, _: &Session) -> u64 {
        0
    }
    fn contexts_settled(&self) -> bool {
        false
    }
    fn render(&self, _: &Session, _: u32, _: &Value) -> (String, Vec<Image>) {
        (String::new(), Vec::new())
    }
    fn preview(&self, _: &Session, _: u32, _: &Value) -> String {
        String::new()
    }
    fn context_messages(&self, _: &Session, _: u32) -> io::Result<Vec<Value>> {
        Ok(Vec::new())
    }
    fn context_renderer(&self) -> fn(&[Value]) -> String {
        |_| String::new()
    }
    fn request_of(&self, _: &Session, _: u32) -> Option<u32> {
        None
    }
    fn build_line(
        &self,
        _: &Session,
        _: &NewEntry<'_>,
        _: i64,
        _: &[String],
    ) -> Result<(String, Vec<u8>), AppendError> {
        Err(AppendError::Io(io::Error::other("no agent")))
    }
    fn fill_usage(&self, _: &Session, _: &Prices, _: &mut Table) {}
    fn fork(&self, _: &Session, _: u32, _: &Fresh) -> Result<ForkFile, ForkError> {
        Err(ForkError::Refused("no agent".into()))
    }
}
