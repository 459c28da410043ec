//! Session formats side by side: the seam between the shared index and each agent.
//!
//! One [`Session`](crate::model::core::session::Session) indexes any session file: per entry it keeps the
//! byte range of the line, its id and parent id, its kind, timestamp and flags, and the
//! tree links; it reads lines back with `pread` and follows appends. What a line *means*
//! belongs to the file's format, chosen from the file's content when it is opened:
//! a Pi file's first parsed line is its `session` header; a Claude Code file has no
//! header and starts with a node or metadata line (see
//! [`crate::model::claude::looks_like_claude`]).
//!
//! The format-specific parts are reached through `Session`'s `Dialect` (enum dispatch,
//! one `match` per call, so Pi's hot paths pay one branch per line):
//!
//! | seam point | Pi | Claude Code |
//! |---|---|---|
//! | line → entry (id, parent, kind, flags) or metadata | `Session::index_line` with [`super::scan`] | [`crate::model::claude::State::index_line`] with [`crate::model::claude::head`] |
//! | linking quirks | (none) | `SOFT_PARENT` (a boundary's logical parent), progress re-parenting, `PIECE` marks after each link ([`crate::model::claude::mark_pieces`]) |
//! | leaf (`Session::leaf`) | last entry in the file | chain end ([`crate::model::claude::loader`]) |
//! | name (`Session::name`) | last `session_info` | title rule ([`crate::model::claude::title`]) |
//! | labels (`Session::labels`) | `label` entries | none |
//! | `session.json` (`Session::session_json`) | header line | object made from the file |
//! | context (`Session::context_files`) | [`super::context`], `convertToLlm` | [`crate::model::claude::loader`] + [`crate::model::claude::api`] |
//! | rendering (`Session::render`, `Session::preview`) | [`super::render`] | [`crate::model::claude::render`] |
//! | append (`Session::build_line`) | [`super::append`] | [`crate::model::claude::append`] |
//! | `check`'s notes | `ProblemKind` from `index_line` | `ProblemKind` from `claude::State::index_line` |
//!
//! Adding a format (Codex, say) is one module holding its index state and those
//! functions, one `Dialect` variant, its detection in `Session::index_line`, and one
//! arm per seam point (the compiler lists every `match` that needs one).

/// Which agent wrote a session file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// Pi (`~/.pi/agent/sessions`).
    Pi,
    /// Claude Code (`~/.claude/projects`).
    Claude,
}

impl Format {
    /// A short name, as `check` prints it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Pi => "pi",
            Format::Claude => "claude-code",
        }
    }
}
