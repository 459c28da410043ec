//! The session model: everything sessionfs knows about session files, with no
//! filesystem in it. Pi's format is the shared index and the modules below; Claude
//! Code's is [`claude`]; [`format`](mod@format) is the seam between them.
//!
//! * [`session`] indexes a file (tolerant of damage, lazy about content) and catches up
//!   with appends; [`scan`] is the per-line field reader it uses.
//! * [`migrate`] applies Pi's v1/v2 migrations in memory.
//! * [`context`] rebuilds the messages Pi would send to the model for any entry.
//! * [`render`] turns entries and contexts into readable text; [`tree`] draws the tree;
//!   [`content`] is what an entry's directory holds (its KIND file and images).
//! * [`append`] writes new entries the way Pi does; [`fork`] copies a branch into a new
//!   session file, the way each agent forks.
//! * [`check`] reports what is wrong with a file.
//! * [`claude`] is Claude Code's format: its lines, loader, context, rendering, append.
//! * [`input`] is what sessionfs agrees to read (regular files, lines up to a bound).
//! * [`usage`] sums the tokens and cost entries record, per entry, branch and session.
//! * [`sessions_dir`] finds the agents' sessions directories and lists them.

pub mod append;
pub mod base64;
pub mod check;
pub mod claude;
pub mod codex_write;
pub mod content;
pub mod context;
pub mod fork;
pub mod format;
pub mod id;
pub mod input;
pub mod json_view;
pub mod kind;
pub mod migrate;
pub mod render;
pub mod scan;
pub mod session;
pub mod sessions_dir;
pub mod time;
pub mod tree;
pub mod usage;

pub use append::{AppendError, NewEntry};
pub use format::Format;
pub use session::{Change, LoadError, NIL, Session};
