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

pub mod agents;
#[cfg(test)]
mod architecture;
pub mod claude;
pub mod codex;
pub mod codex_catalog;
pub mod codex_write;
pub mod core;
pub mod pi;
pub mod sessions_dir;

// The paths from before the split into core/ and one folder per agent, kept so
// callers and tests name the same items as before.
pub use self::core::{base64, check, fork, format, id, input, json_view, kind, scan, time, tree};

/// Usage ([`core::usage`]), with the listing of a sessions directory at its old path.
pub mod usage {
    pub use super::core::usage::*;
    /// The report ([`crate::model::core::usage::report`]).
    pub mod report {
        pub use crate::model::core::usage::report::*;
        pub use crate::model::sessions_dir::files_of_dir;
    }
}

/// The index ([`core::session`]) with Pi's context type, at its old path.
pub mod session {
    pub use super::core::session::*;
    pub use super::pi::context_at::LlmContext;
}

/// What an entry's directory holds ([`core::content`]), with Pi's readers from the line.
pub mod content {
    pub use super::core::content::*;
    pub use super::pi::content::{content_of, line_content};
}
pub use pi::{append, context, migrate, render};

pub use append::{AppendError, NewEntry};
pub use format::Format;
pub use session::{Change, LoadError, NIL, Session};
