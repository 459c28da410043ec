//! The session model: everything sessionfs knows about session files, with no
//! filesystem in it.
//!
//! * [`core`](mod@self::core) is agent-neutral: the index of entries over one or more
//!   files, the [`Agent`](self::core::agent::Agent) interface, ids, the JSON readers,
//!   time, input bounds, `check`'s report, tree drawing, the shared parts of fork and
//!   usage. Its module docs say how an agent is added.
//! * [`pi`] is Pi's format, [`claude`] Claude Code's; each implements the interface.
//! * [`agents`] is the table above them: which agent a file is, and `Session::open`.
//! * [`sessions_dir`] finds the agents' sessions directories and lists them.
//!
//! The core names no agent, no agent names another, and the folders import one
//! another without a circle (`architecture`'s tests check it on the source). The
//! paths from before that split (`model::session`, `model::render`, ...) are kept
//! below for callers.

pub mod agents;
#[cfg(test)]
mod architecture;
pub mod claude;
pub mod codex;
pub mod copilot;
pub mod core;
pub mod gemini;
pub mod opencode;
pub mod pi;
pub mod qwen;
pub mod sessions_dir;

// The paths from before the split into core/ and one folder per agent, kept so
// callers and tests name the same items as before.
pub use self::core::{
    append, base64, check, fork, format, id, input, json_view, kind, scan, time, tree,
};

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
pub use pi::{context, migrate, render};

pub use append::{AppendError, NewEntry};
pub use format::Format;
pub use session::{Change, LoadError, NIL, Session};
