//! GitHub Copilot CLI sessions (1.0.102): the events of a session folder, the tree the
//! mount shows of them, what the CLI sends when it continues from any entry, how entries
//! read, and what a reply writes. Everything sessionfs knows of Copilot CLI is here; the
//! facts carry their sections of COPILOT-FORMAT.md (measured on files the real CLI wrote).
//!
//! Why Copilot needs its own shape:
//!
//! * §1 a session is a **folder**, `$COPILOT_HOME/session-state/<sessionId>/`, whose
//!   `events.jsonl` holds the whole history; `workspace.yaml` beside it names the session
//!   and its project (`cwd`). Nothing is filed by project: a mount groups the folders by
//!   `cwd` itself → [`home`].
//! * §2–§3 every line is an event `{type, data, id, timestamp, parentId}`, and the file is
//!   a **log**: the CLI reads it in file order, `parentId` is not what it follows. So an
//!   entry's parent here is the entry before it in the file, never its `parentId`
//!   → [`events`], [`agent`].
//! * §4 some events are the conversation (messages, tool results, compactions, errors,
//!   notices) and are entries; the rest are bookkeeping read for what they mean (the
//!   system prompt, images, token usage, the working directory) → [`events`].
//! * §5–§7 the context at an entry: the messages of the events up to it, tool results in
//!   the order of their calls with the missing ones made up as the CLI makes them up, a
//!   compaction replacing what precedes it → [`context`]; the system prompt and the tools
//!   are not read back by the CLI but shown first in the readable `context` → [`render`].
//! * §6.1 `/rewind` **deletes** the rewound events (the file is rewritten) and §6.2
//!   `/fork` copies them, same ids, into a new folder; §10 a damaged file is rewritten
//!   with a `events.jsonl.backup-before-recovery-<sha256>` copy of the old bytes. The
//!   index follows a file rewritten under it (the core reloads it); forks are linked to
//!   the session they came from → [`home`]; sessionfs never cuts or rewrites the file:
//!   a reply at an earlier entry writes a new session folder, as `/fork` does → [`write`].
//! * §6.5 subagents write into the parent's file (events with a top-level `agentId`):
//!   each subagent is a side chain under the call that started it → [`agent`].
//! * §11 `session.usage_record` per model call → [`usage`].
//! * What the renderer adds to a line, for `sessionfs grep`'s prefilter → [`search`]; where
//!   a hit is, from the lines before it → [`hitpath`].

pub mod agent;
pub mod context;
pub mod events;
pub mod forks;
pub mod hitpath;
pub mod home;
pub mod index;
pub mod render;
pub mod search;
pub mod usage;
pub mod write;

#[cfg(test)]
mod tests;
