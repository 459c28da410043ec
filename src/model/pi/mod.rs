//! Pi's session format.

pub mod agent;
pub mod append;
pub mod content;
pub mod context;
pub mod context_at;
pub mod fork;
pub mod hitpath;
pub mod index;
pub mod migrate;
pub mod render;
pub mod search;
pub mod usage;
