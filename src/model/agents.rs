//! The agents' table: which agent wrote a file, and opening it. It sits above the core
//! and the agents (it names them all; nothing below names it), so that the core stays
//! agent-neutral and `view/`, `search/` and `fuse/` reach an agent only through
//! [`Session`] and this table.

use crate::model::core::agent::AgentTable;
use crate::model::core::grep::{Rules, SearchTable};
use crate::model::core::scan::LineHead;
use crate::model::core::session::{LoadError, Session};
use std::path::Path;

/// Every agent sessionfs reads. A file whose first parsed line is a Pi header (or
/// that is empty so far) is Pi's; otherwise each agent's detection is asked in turn.
/// A compressed Codex page (`.jsonl.zst`) holds no lines to parse: it is told by its
/// name and its decompressed first line before the core reads it.
pub static TABLE: AgentTable = AgentTable {
    first: crate::model::pi::agent::first,
    detect,
    opaque: crate::model::codex::agent::detect_compressed,
    member: crate::model::opencode::agent::detect_member,
};

/// The agent of a file whose first parsed line, `raw`, is no Pi header.
fn detect(raw: &[u8]) -> Option<Box<dyn crate::model::core::agent::Agent>> {
    // Gemini CLI's metadata line has a `sessionId`, which Claude Code's detection
    // takes for one of its own lines: Gemini CLI is asked first.
    crate::model::codex::agent::detect(raw)
        .or_else(|| crate::model::gemini::agent::detect(raw))
        // Before Claude Code's: a Qwen Code record has a `uuid` too.
        .or_else(|| crate::model::qwen::agent::detect(raw))
        .or_else(|| crate::model::claude::agent::detect(raw))
        .or_else(|| crate::model::copilot::agent::detect(raw))
}

impl Session {
    /// Loads and indexes the session file at `path`, of any agent in [`TABLE`].
    pub fn open(path: impl AsRef<Path>) -> Result<Session, LoadError> {
        Session::open_with(path, &TABLE)
    }
}

/// When the session of `files` (a session file, or a Codex thread's pages) was last
/// active, read from the files' last lines without indexing them: the agent of the
/// first file (told by its first line, as [`Session::open`] tells it) reads each
/// tail ([`crate::model::core::agent::Agent::activity_in_tail`]). The same answer as
/// [`Session::last_activity`] of the session once loaded.
pub fn last_activity(files: &[std::path::PathBuf]) -> Option<(i64, std::path::PathBuf)> {
    let agent = agent_of_file(files.first()?);
    crate::model::core::session::activity_of(files, &|t| agent.activity_in_tail(t))
}

/// The agent of the file at `path`, by its first complete line (read a few KiB at a
/// time, up to 1 MiB; a longer or missing one: the table's first agent, whose reading
/// of times is the default one).
fn agent_of_file(path: &Path) -> Box<dyn crate::model::core::agent::Agent> {
    use std::io::Read;
    if let Some(a) = (TABLE.opaque)(path) {
        return a;
    }
    let first = (TABLE.first)();
    let Ok(mut f) = crate::model::core::input::open_regular(path) else {
        return first;
    };
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let line = loop {
        // The first line that is not blank, once it is complete.
        let complete = buf
            .split_inclusive(|&b| b == b'\n')
            .take_while(|l| l.ends_with(b"\n"))
            .map(|l| l.trim_ascii_end())
            .find(|l| !l.is_empty());
        if let Some(l) = complete {
            break Some(l.to_vec());
        }
        match f.read(&mut chunk) {
            Ok(0) | Err(_) => break None,
            Ok(n) if buf.len() + n <= 1 << 20 => buf.extend_from_slice(&chunk[..n]),
            Ok(_) => break None,
        }
    };
    match line {
        Some(l) if !first.accepts_first_line(&l) => (TABLE.detect)(&l).unwrap_or(first),
        _ => first,
    }
}

/// What `sessionfs grep` knows of every agent's formats (`crate::model::core::grep`).
pub static SEARCH: SearchTable = SearchTable {
    rules: &[
        &crate::model::pi::search::PI,
        &crate::model::pi::search::PI_V2,
        &crate::model::pi::search::PI_V1,
        &crate::model::claude::search::CLAUDE,
        &crate::model::codex::search::CODEX,
        &crate::model::gemini::search::GEMINI,
        &crate::model::qwen::search::QWEN,
        &crate::model::copilot::search::COPILOT,
        &crate::model::opencode::search::OPENCODE,
    ],
    detect: search_detect,
    known: search_known,
    begin: crate::model::codex::search::begin,
};

/// The rules of a file whose first parsed line is `line`, as [`detect`] (and Pi's
/// header before it) choose the agent.
fn search_detect(line: &[u8], head: &LineHead) -> Option<&'static Rules> {
    crate::model::pi::search::detect(line, head)
        .or_else(|| crate::model::codex::search::detect(line, head))
        .or_else(|| crate::model::gemini::search::detect(line, head))
        .or_else(|| {
            // A Qwen Code file is no Claude Code file, though its records have a uuid:
            // its own rules, or none (every entry rendered).
            if crate::model::qwen::looks_like_qwen(line) {
                return crate::model::qwen::search::detect(line, head);
            }
            crate::model::claude::search::detect(line, head)
        })
        .or_else(|| crate::model::copilot::search::detect(line, head))
        .or_else(|| crate::model::opencode::search::detect(line, head))
}

/// The rules of a file its name (and what was read of it) already say.
fn search_known(path: &Path) -> Option<&'static crate::model::core::grep::Rules> {
    crate::model::codex::search::known(path).or_else(|| crate::model::opencode::search::known(path))
}
