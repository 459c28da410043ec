//! Gemini CLI sessions (0.61.0): the replay, the tree, what the CLI sends, how entries
//! read, replies. No filesystem here beyond reading the session's own files, and
//! nothing from the other agents.
//!
//! Why Gemini CLI needs its own shape: a session file is an append-only **log** that
//! replays into a list (GEMINI-FORMAT §3), not a list of entries with parent links.
//! A record whose id is already in the list replaces it in place, `$rewindTo` drops
//! the end of the list, `$set.messages` replaces all of it (every resume writes the
//! whole history again), and metadata changes are `$set` lines too. What a rewind
//! drops stays in the file: the log holds a tree, which the mount shows. The facts,
//! with their sections in `GEMINI-FORMAT.md` (measured on files the real CLI wrote):
//!
//! * §1 layout, §2.4 the start-up stub files, §6 subagents' files → [`files`], and the
//!   listing of a CLI folder by project → [`catalog`];
//! * §2 the four kinds of lines, what a record is → [`line`];
//! * §3 the replay, the points, the tree and the leaf → [`index`];
//! * §4, §5 what is sent when the conversation continues from a point → [`context`];
//!   the system instruction and tools beside it → [`system`];
//! * §2.2 records as readable text → [`render`]; §7 names → [`names`];
//! * §2.2 `tokens` → [`usage`]; §9 a continuation written by another program →
//!   [`append`]; §10 damaged files → [`index`] (what `check` reports);
//! * what the renderer adds to a record's strings, for `sessionfs grep` → [`search`];
//! * the agent interface over all of it → [`agent`].

pub mod agent;
pub mod append;
pub mod catalog;
pub mod context;
pub mod files;
pub mod index;
pub mod line;
pub mod names;
pub mod render;
pub mod search;
pub mod sha256;
pub mod system;
pub mod usage;

#[cfg(test)]
mod tests;
