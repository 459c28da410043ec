//! Which agent wrote a session file: a tag that names the agents and imports none,
//! so the core can hold it. What each agent's format means is behind
//! [`Agent`](super::agent::Agent) (see its module docs for the seam points).

/// Which agent wrote a session file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// Pi (`~/.pi/agent/sessions`).
    Pi,
    /// Claude Code (`~/.claude/projects`).
    Claude,
    /// Codex CLI (`$CODEX_HOME/sessions`): a thread over several page files.
    Codex,
    /// Gemini CLI (`~/.gemini/tmp/<slug>/chats`): a log that replays into a list.
    Gemini,
    /// Qwen Code (`~/.qwen/projects/<project>/chats`).
    Qwen,
    /// GitHub Copilot CLI (`$COPILOT_HOME/session-state/<id>/events.jsonl`): a log of
    /// events per session folder.
    Copilot,
    /// opencode (`~/.local/share/opencode/opencode.db`): every session in one SQLite
    /// database, a session its rows.
    Opencode,
}

impl Format {
    /// A short name, as `check` prints it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Pi => "pi",
            Format::Claude => "claude-code",
            Format::Codex => "codex",
            Format::Gemini => "gemini-cli",
            Format::Qwen => "qwen-code",
            Format::Copilot => "copilot",
            Format::Opencode => "opencode",
        }
    }

    /// The agent's name, as messages name it ("Claude Code").
    pub fn program(self) -> &'static str {
        match self {
            Format::Pi => "Pi",
            Format::Claude => "Claude Code",
            Format::Codex => "Codex",
            Format::Gemini => "Gemini CLI",
            Format::Qwen => "Qwen Code",
            Format::Copilot => "Copilot CLI",
            Format::Opencode => "opencode",
        }
    }
}
