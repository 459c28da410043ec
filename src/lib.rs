//! sessionfs: Pi coding-agent sessions as a filesystem.
//!
//! The crate has three layers, each testable on its own:
//!
//! * [`model`]: Pi's session files (index, migrate, context, render, append, check).
//!   No FUSE in it.
//! * `view`: what every inode of a mount is, answering lookup/getattr/readdir/read/
//!   write as plain Rust over the model.
//! * `fuse`: a thin `fuser::Filesystem` adapter that only translates requests, and the
//!   mount command.
//! * [`prio`]: which threads come first (requests), which wait (background work).
//! * [`search`]: `sessionfs grep`, which searches session files as `grep -r` searches
//!   a mount of them, over the model alone.

pub mod fuse;
pub mod model;
pub mod prio;
pub mod search;
pub mod view;
