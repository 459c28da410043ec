//! What indexing finds wrong with a line, or worth telling (`sessionfs check` reports
//! it, `model::core::check` words it). A leaf: it names nothing else of the model, so
//! that the index, the agents and `check` all name it without a circle. Also why a
//! file is no session at all ([`LoadError`]).

use std::io;

/// Something about a line worth telling the user (`sessionfs check`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub line: u32,
    pub severity: Severity,
    pub what: ProblemKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Harmless, reported for information.
    Note,
    /// Pi loses or mishandles something here.
    Warning,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProblemKind {
    Blank,
    Crlf,
    Malformed(String),
    NotAnObject,
    /// A second `type: "session"` line (Pi ignores it).
    ExtraHeader,
    MissingId,
    DuplicateId {
        id: String,
        first_line: u32,
    },
    Orphan {
        parent: String,
    },
    SelfParent,
    Cycle {
        ids: Vec<String>,
    },
    UnknownType(String),
    LabelTargetMissing {
        target: String,
    },
    /// A line that is not an entry, of a type the format does not know.
    UnknownLine(String),
    /// A line longer than the bound on lines (`model::input::max_line`): skipped, never
    /// read whole. `ended`: it has its `\n` (otherwise it is the last line, unfinished).
    TooLong {
        bytes: u64,
        limit: u64,
        ended: bool,
    },
    /// The last line has no `\n`: Pi's next append would be glued onto it.
    UnterminatedLastLine {
        bytes: u64,
        parses: bool,
        /// Where it starts: `truncate -s AT FILE` drops it, keeping every whole line.
        at: u64,
    },
    /// Something only one agent's format has (a Codex page whose base page is
    /// missing): `code` for `check --json`, `what` as `check` prints it.
    Agent {
        code: &'static str,
        what: String,
    },
    /// Something about a `context_edit` (Pi 1.6), found by `check`.
    ContextEdit {
        /// Its `targetId` (empty when it has none).
        target: String,
        what: EditProblem,
    },
}

/// What is wrong with a `context_edit`, or worth knowing about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditProblem {
    /// No string `targetId`.
    NoTarget,
    /// The target is not in the file.
    TargetMissing,
    /// The target is neither before it on its branch nor after it.
    OffBranch,
    /// The target comes after it on its branch (only a hand-made file does this).
    BeforeTarget,
    /// No `replacement` key: Pi fails to build a context that holds both.
    NoReplacement,
    /// A replacement that is neither `null` nor `{content: text or blocks}`.
    MalformedReplacement,
    /// The target's content is not replaced in a context (a system message, a bash
    /// run, a summary, a setting...): the edit changes nothing. The kind is named.
    NoEffect(String),
}

/// Why a file could not be loaded as a session.
#[derive(Debug)]
pub enum LoadError {
    Io(io::Error),
    /// The file is empty (Pi would write a fresh header into it).
    Empty,
    /// The first line that parses is not a session header.
    NotASession {
        line: u32,
        reason: String,
    },
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Io(e) => write!(f, "{e}"),
            LoadError::Empty => write!(
                f,
                "the file is empty: not a Pi, Claude Code or Codex session yet"
            ),
            LoadError::NotASession { line, reason } => {
                write!(
                    f,
                    "not a Pi, Claude Code or Codex session: line {line}: {reason}"
                )
            }
        }
    }
}

impl std::error::Error for LoadError {}

/// The message of a load error that was a panic (see [`unless_panic`]).
const PANICKED: &str = "sessionfs failed while reading this file";

impl LoadError {
    /// Whether reading the file panicked ([`unless_panic`]).
    pub fn is_panic(&self) -> bool {
        matches!(self, LoadError::Io(e) if e.to_string().starts_with(PANICKED))
    }
}

/// Runs `f`, which reads the session file at `path`, turning a panic into its load
/// error: a file that makes sessionfs panic (a bug, never meant to happen) is then a
/// session that cannot be read, shown as such (an `ERROR` file in a sessions mount, a
/// problem for `check`), and never takes the process down with it. Allocation failures
/// are not panics (Rust aborts on them): those are kept away by bounds instead (see
/// `core::input`).
pub fn unless_panic<T>(
    path: &std::path::Path,
    f: impl FnOnce() -> Result<T, LoadError>,
) -> Result<T, LoadError> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let why = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".into());
            log::error!("{}: {PANICKED}: {why}", path.display());
            Err(LoadError::Io(io::Error::other(format!(
                "{PANICKED} ({why}); please report this bug"
            ))))
        }
    }
}

impl From<io::Error> for LoadError {
    fn from(e: io::Error) -> Self {
        LoadError::Io(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_while_reading_is_the_files_load_error() {
        let p = std::path::Path::new("s.jsonl");
        let r: Result<(), LoadError> = unless_panic(p, || panic!("a bug"));
        let e = r.unwrap_err();
        assert!(e.is_panic());
        assert!(
            e.to_string().contains("(a bug); please report this bug"),
            "{e}"
        );
        let r: Result<u8, LoadError> = unless_panic(p, || Err(LoadError::Empty));
        assert!(matches!(r, Err(LoadError::Empty)));
        assert!(!LoadError::Empty.is_panic());
        assert_eq!(unless_panic(p, || Ok(7)).unwrap(), 7);
    }
}
