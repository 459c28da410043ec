//! opencode (`opencode-ai`, 1.18.33): every session in one SQLite database.
//!
//! Since 1.2.0 opencode keeps all of a user's sessions in
//! `~/.local/share/opencode/opencode.db` (WAL mode): a session is a `session` row, its
//! messages `message` rows, each message's content `part` rows (OPENCODE-FORMAT.md).
//! This folder is all sessionfs knows of it:
//!
//! * [`db`]: opening opencode's live database (read-only snapshots; writes in one
//!   transaction under SQLite's locking);
//! * [`store`]: one session's rows in one snapshot, with its subagents' sessions and
//!   the messages opencode deleted (from its event log);
//! * [`line`]: a message as one line of JSON, the bytes an entry indexes;
//! * [`agent`]: the session as a core `Session`: entries, the tree, the leaf, the
//!   name, following changes;
//! * [`render`]: KIND files, images, `tree` lines, `session.json`, readable contexts;
//! * [`context`] and [`compaction`]: what opencode sends when it continues from a
//!   message (§7), and the summary request it sends first when it compacts (§5.5);
//!   [`config`]: the model limits and settings that decide when;
//! * [`write`]: replies and forks, as opencode writes them (§9);
//! * [`usage`]: tokens and cost (§8); [`forks`]: which session a fork came from;
//! * [`catalog`]: where the database is, and its sessions by project for a mount.
//!
//! A session is named `DB/ses_…`: the database file, then the session id, as if the
//! file were a folder (`core::session::AgentTable::member`).

pub mod agent;
pub mod catalog;
pub mod compaction;
pub mod config;
pub mod context;
pub mod db;
pub mod forks;
pub mod index;
pub mod info;
pub mod line;
pub mod live;
pub mod messages;
pub mod render;
pub mod search;
pub mod store;
pub mod usage;
pub mod write;

#[cfg(test)]
mod tests;
