//! Sessions an agent lists itself: for agents whose files are not laid out as a
//! sessions mount shows them.
//!
//! Pi and Claude Code keep one folder per project and one `.jsonl` file per session
//! in it, so a mount (and `sessionfs grep`, `usage`, `check`) lists their folders as
//! they are (`crate::model::sessions_dir::list`). Other agents do not: Codex files its
//! pages by day and a thread may span several of them; other agents keep a folder per
//! session, or every session in one database. What a user recognises is still
//! "project, then session", so such an agent supplies a [`Lister`]: from its sessions
//! root, every session by project, the file each session is opened from
//! ([`crate::model::Session::open`]), and the folders whose changes can change the
//! listing. The agents' table (`crate::model::sessions_dir::AGENTS`) says which agent
//! lists itself and which folders are its roots ([`CatalogOf`]); the mount, the search
//! and the reports reach a lister only through that table, never by the agent's name.
//!
//! A lister is asked again after every change in its folders ([`Lister::scan`]) and may
//! keep what it read between calls (a file's first line, which never changes in an
//! append-only file), so that listing again costs a directory read per folder. One
//! that can tell cheaply whether anything changed ([`Lister::moved_since`]) is also
//! asked at every safety poll of the watcher, in case an event was missed.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// A session as a listing shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRef {
    /// Its directory's name in its project.
    pub name: OsString,
    /// What the session is opened from (`Session::open`): a file, or a session kept
    /// with others in one file, `CONTAINER/NAME` ([`file_of`]).
    pub path: PathBuf,
    /// When it last changed, when the listing knows it better than the file it is
    /// opened from does (a session of a database: that file changes with every
    /// session): its directory's mtime. `None`: the file's.
    pub mtime: Option<SystemTime>,
    /// Every file of the session, where its last activity is read
    /// ([`super::activity`]); empty for a session of the one file `path`.
    pub files: Vec<PathBuf>,
}

/// Every session under a root, by project.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Catalog {
    /// Project folder name → its sessions, sorted by name.
    pub projects: BTreeMap<OsString, Vec<SessionRef>>,
    /// Every folder whose changes can change the listing or a session (to watch).
    pub folders: Vec<PathBuf>,
    /// Sessions the agent itself does not list yet (a Codex thread whose picker left
    /// it empty): not listed; a change of one of their files ([`Lister::session_of`])
    /// is a change of the listing.
    pub hidden: std::collections::HashSet<OsString>,
}

impl Catalog {
    /// The session named `name`, in whichever project it is.
    pub fn find(&self, name: &OsStr) -> Option<&SessionRef> {
        self.projects.values().flatten().find(|s| s.name == name)
    }
}

/// An agent's listing of the sessions under one root.
pub trait Lister: Send + Sync {
    /// Every session under the root, by project. An error only when the root itself
    /// cannot be read; what cannot be read below it is left out.
    fn scan(&self) -> io::Result<Catalog>;
    /// The session (its name in the listing) that a file named `changed`, created,
    /// written or removed in one of the catalog's folders, belongs to: that session
    /// catches up with its files. `None` for a name that is no session's.
    fn session_of(&self, changed: &OsStr) -> Option<OsString>;
    /// Whether a write to the file named `changed` in one of the catalog's folders
    /// (neither created nor removed) can change the listing, so that it is scanned
    /// again: a Gemini CLI session file becomes a session once its first message is
    /// written (before that it is a start-up stub). Creations, removals and renames
    /// always lead to a new scan.
    fn changes_listing(&self, _changed: &OsStr) -> bool {
        false
    }
    /// Whether a change to `changed` may change every session under the root and the
    /// listing (a database every session lives in, or its journal): then the listing
    /// is read again and every loaded session catches up.
    fn changes_every_session(&self, _changed: &OsStr) -> bool {
        false
    }
    /// After such a change (and a new [`scan`](Self::scan)): the sessions (names in the
    /// listing) that may have changed since the last call, when the lister can tell
    /// (a database that knows which sessions a commit wrote), so that only those catch
    /// up. `None`: every loaded session catches up.
    fn sessions_changed(&self) -> Option<Vec<OsString>> {
        None
    }
    /// Whether the sessions under the root may have changed since `shown` was
    /// scanned, when the lister can tell cheaply enough to be asked at every safety
    /// poll of the watcher (a database that counts its commits): then the listing is
    /// read again, as after [`changes_every_session`](Self::changes_every_session). A
    /// change whose event came before it could be seen (a commit whose pages were
    /// written before it was visible), or that came with no event at all, is listed at
    /// the next poll rather than never. `false`: only events tell.
    fn moved_since(&self, _shown: &Catalog) -> bool {
        false
    }
}

/// The file a session path names: the path itself, or for a session kept with others
/// in one file (`CONTAINER/NAME`, a database; `core::session::AgentTable::member`)
/// that container file.
pub fn file_of(path: &Path) -> PathBuf {
    if let Some(parent) = path.parent()
        && !path.exists()
        && std::fs::metadata(parent).is_ok_and(|m| m.is_file())
    {
        return parent.to_path_buf();
    }
    path.to_path_buf()
}

/// The folder a root stands in: the root itself, or the folder of a root that is a
/// file (a database of sessions).
pub fn folder_of(root: &Path) -> PathBuf {
    match root.parent() {
        Some(p) if std::fs::metadata(root).is_ok_and(|m| m.is_file()) => p.to_path_buf(),
        _ => root.to_path_buf(),
    }
}

/// How an agent's sessions are found when it lists them itself (an entry of the
/// agents' table).
#[derive(Clone, Copy)]
pub struct CatalogOf {
    /// The root of this agent's sessions that `dir` is (its home, or the sessions
    /// folder inside it), when it surely is one; `None` says nothing.
    pub root_of: fn(&Path) -> Option<PathBuf>,
    /// Whether the root holds at least one session (for "holds no sessions yet"),
    /// cheaply; an error when it cannot be read.
    pub holds_sessions: fn(&Path) -> io::Result<bool>,
    /// A lister of the sessions under a root.
    pub lister: fn(&Path) -> Box<dyn Lister>,
}

impl std::fmt::Debug for CatalogOf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CatalogOf")
    }
}
