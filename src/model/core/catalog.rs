//! Sessions listed by their agent rather than found as files in folders.
//!
//! Pi and Claude Code keep one folder per project and one file per session, so a mount
//! lists their folders as they are. An agent that keeps its sessions otherwise (every
//! session a set of rows of one database) says what its sessions are, by project, with
//! a [`Catalogue`]: the mount's listing of such a source comes from
//! [`Catalogue::scan`], each session is a path the agents' table opens
//! (`CONTAINER/NAME`, see `core::session::AgentTable::member`), and the folders to
//! watch and which names in them matter come from the catalogue too.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// A session as a listing shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Its directory's name.
    pub name: OsString,
    /// What `Session::open` opens.
    pub path: PathBuf,
    /// When it last changed (its directory's mtime).
    pub mtime: SystemTime,
}

/// Every session of a source, by project folder (each list sorted by name).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Catalog {
    pub projects: BTreeMap<OsString, Vec<Listed>>,
}

/// A source of sessions that its agent lists (see the module docs).
pub trait Catalogue: std::fmt::Debug + Send + Sync {
    /// Every session, by project.
    fn scan(&self) -> io::Result<Catalog>;
    /// The folders whose changes can change the sessions.
    fn watch(&self) -> Vec<PathBuf>;
    /// Whether a change to `name` in one of those folders can change the sessions.
    fn concerns(&self, name: &OsStr) -> bool;
    /// The file the sessions are in (for the mount's folder attributes and errors).
    fn file(&self) -> &Path;
}

/// The file a session path names: the path itself, or for a session kept with others
/// in one file (`CONTAINER/NAME`, a database) that container file.
pub fn file_of(path: &Path) -> PathBuf {
    if let Some(parent) = path.parent()
        && !path.exists()
        && std::fs::metadata(parent).is_ok_and(|m| m.is_file())
    {
        return parent.to_path_buf();
    }
    path.to_path_buf()
}
