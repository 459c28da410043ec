//! What indexing finds wrong with a line, or worth telling (`sessionfs check` reports
//! it, `model::core::check` words it). A leaf: it names nothing else of the model, so
//! that the index, the agents and `check` all name it without a circle.

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
