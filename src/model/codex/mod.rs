//! Codex CLI threads (0.171.0): pages, threads, the tree, what Codex sends, and how
//! entries read. No filesystem here, and nothing from the other agents: this module
//! depends on `serde_json`, `std`, `rusqlite` (reading Codex's state), `ruzstd`
//! (compressed pages) and the model's `base64`, so that the agent interface wraps it in a
//! thin layer.
//!
//! Why Codex needs its own shape: a thread is several files. Later pages (TUI rewinds)
//! and forks start with the bytes `[0, end_byte_offset)` of another page
//! (`history_base`), there are no parent links (file order is the conversation), ordinals
//! repeat inside a thread, the current page is chosen by `state_5.sqlite`, and old pages
//! may be zstd-compressed. The facts, with their sections in `CODEX-FORMAT.md` (measured
//! on files the real CLI wrote):
//!
//! * §1 layout: `sessions/YYYY/MM/DD/rollout-<ts>-<threadId>[_<pageId>].jsonl[.zst]`,
//!   and `archived_sessions/` likewise → [`files`];
//! * §2 lines: `{timestamp, ordinal, type, payload[, metadata]}`; `session_meta` first →
//!   [`page`];
//! * §3.1 a page = its base's complete lines within `[0, end_byte_offset)` (recursively,
//!   across threads for forks) + its own; the bytes decide, not the ordinal; §3.3 point
//!   ids `<pageId>:<ordinal>`; §3.4 the tree → [`store`];
//! * §4 the current page: `threads.rollout_path`, else newest by file name → [`state`],
//!   [`store::Thread`];
//! * §5 the context at a point: payloads along the history without
//!   `internal_chat_message_metadata_passthrough`, compactions replacing what precedes
//!   them, an `aborted` output after a call without one → [`context`];
//! * §5.6, §6 tools, images, subagents → [`render`]; §7 names → [`state`],
//!   [`session`]; §8 compressed pages → [`files`]; §10 damaged files → [`page`],
//!   [`store::Problem`];
//! * §2 the accounting lines (`token_usage_record`, `token_count`): what each request
//!   cost, per branch → [`usage`].
//!
//! Entry ids are point ids; why is in [`store`]'s doc.

pub mod agent;
pub mod catalog;
pub mod context;
pub mod files;
pub mod forks;
pub mod head;
pub mod hitpath;
pub mod open;
pub mod page;
pub mod render;
pub mod search;
pub mod session;
pub mod state;
pub mod store;
pub mod usage;
pub mod write;
pub mod zst;

#[cfg(test)]
mod compressed_tests;
#[cfg(test)]
mod session_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod usage_tests;

pub use context::{Context, context_at};
pub use files::{PageFile, PageName, Root};
pub use store::{Codex, History, LineRef, NodeIx, PageIx, Problem, Reader, Thread};
