//! The agent-neutral core of the model.

pub mod agent;
pub mod base64;
pub mod check;
pub mod content;
pub mod fork;
pub mod format;
pub mod id;
pub mod input;
pub mod js;
pub mod json_view;
pub mod kind;
pub mod reply;
pub mod scan;
pub mod session;
pub mod text;
pub mod time;
pub mod tree;
pub mod usage;
