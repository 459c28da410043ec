//! Pi's session format.

pub mod append;
pub mod context;
pub mod migrate;
pub mod render;
pub mod usage;
