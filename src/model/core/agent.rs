//! The interface between the core's index and each agent's format.
//!
//! [`Session`](super::session::Session) indexes any agent's file: per entry the byte range of its line, its id
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
//! | whose file | [`Agent::accepts_first_line`] (the table's `first` agent), then [`AgentTable::detect`]; a file of no lines (a compressed Codex page): [`AgentTable::opaque`], [`Agent::opaque_main_file`] |
//! | line → entry or metadata | [`Agent::index_line`]; an agent that reads a line by its [`super::scan::LineHead`] alone says so ([`Agent::indexes_heads`]) and gets heads parsed ahead, on two threads ([`Agent::index_head`]) |
//! | after a scan (other files of the session) | [`Agent::after_scan`], [`Agent::sources_moved`] |
//! | linking quirks | [`Agent::after_link`], [`Agent::root_is_fine`] |
//! | leaf, name, labels, `session.json` | [`Agent::leaf`], [`Agent::name`], [`Agent::session_json`] |
//! | rendering | [`Agent::render`], [`Agent::preview`], [`Agent::full_output`]; `tree`'s runs: [`Agent::joins_tree_runs`], [`Agent::tree_run_noun`] |
//! | context | [`Agent::context_messages`], [`Agent::context_renderer`], [`Agent::contexts_settled`] |
//! | answers and replies | [`Agent::request_of`], [`Agent::can_reply_at`], [`Agent::build_line`], [`Agent::write_reply`], [`Agent::reply_refusal`] (refused at `open` for now, with its errno: another program holds the session) |
//! | writes known to fail (no write bit, refused at `open`) | [`Agent::refuses`] |
//! | other files of the session, opened inside the agent's folder | [`Session::open_side`](super::session::Session::open_side), [`Session::set_homes`](super::session::Session::set_homes) |
//! | other names of entries | [`Agent::alias`], [`Agent::find_alias`] |
//! | lines that are no entry of their own (fragments) | [`Agent::line_owner`] |
//! | other sessions this one continues or that continue it | [`Agent::forked_from`], [`Agent::forks_at`] |
//! | entries of other files | [`Session::add_source`](super::session::Session::add_source), [`super::session::Source`], `Entry::file` |
//! | fork, usage | [`Agent::fork`], [`Agent::fill_usage`] |
//! | memory | [`Agent::heap_bytes`] |
//! | last activity ("newest first", [`super::activity`]) | [`Agent::activity_files`], [`Agent::activity_in_tail`] |
//!
//! | labels, edits, name entry, v1 | [`Agent::labels`], [`Agent::label_entry`], [`Agent::edits_of`], [`Agent::name_entry`], [`Agent::is_v1`], [`Agent::labels_writable`] |
//! | files beside the session file | [`Agent::writes_side_folder`] (watched by a mount of the session alone), [`Agent::entry_file`] (which file an entry's line is in), [`Agent::watched_dirs`] |
//! | where sessions are, when not one file per session in project folders | [`super::catalog::CatalogOf`] in the agents' table (`crate::model::sessions_dir::AGENTS`) |
//! | a session kept with others in one file (a database's rows) | [`AgentTable::member`] (path `CONTAINER/NAME`), [`Agent::opaque_main_file`], bytes sources, [`Session::rewrite_entry`](super::session::Session::rewrite_entry) for a record changed in place, [`super::catalog::Lister::changes_every_session`], [`super::catalog::Lister::sessions_changed`] (only the sessions a change touched catch up) |
//! | replies and forks the agent writes itself (not lines appended) | [`Agent::refuse_reply_at`] (an errno at `open`), [`Agent::write_reply`], [`Agent::write_fork`] |
//! | entries of a subagent inside the session (usage counted where it was spawned) | [`Agent::is_subagent`] |
//!
//! Every agent indexes its own lines: the core reads them, notes CRLF line endings,
//! and until the file's agent is known, skips blank and malformed lines and picks
//! the agent by the first line that parses. What a header said (session id, time,
//! version) the agent writes into the session's neutral [`super::session::Header`].

pub use super::session::{Agent, AgentTable, SessionLink, SourcesMoved};
