//! Qwen Code's sessions by project, for the agents' table
//! (`crate::model::sessions_dir::AGENTS`).
//!
//! Qwen Code keeps a folder per project under `projects/`, named after its working
//! directory (every character but `a-z`, `A-Z`, `0-9` as `-`), and in it `chats/` (the
//! sessions, one `<sessionId>.jsonl` each, and `<sessionId>.ledger.jsonl` side files),
//! `subagents/`, memory files. A mount shows each project with the sessions of its
//! `chats/` folder, under the project folder's name; a project whose `chats/` is not
//! there yet is listed empty, and its folder is watched until it appears. Archived
//! sessions (`chats/archive/`) are not listed.

use crate::model::core::catalog::{Catalog, CatalogOf, Lister, SessionRef};
use crate::model::core::listing;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Where a project keeps its sessions.
pub const CHATS: &str = "chats";

/// Qwen Code's entry in the agents' table.
pub const CATALOG: CatalogOf = CatalogOf {
    root_of,
    holds_sessions,
    lister,
};

/// Whether some project folder of `projects` has a `chats/` folder.
fn has_chats(projects: &Path) -> bool {
    listing::read_dir(projects).is_ok_and(|rd| {
        rd.into_iter()
            .take(100_000)
            .any(|e| e.path().join(CHATS).is_dir())
    })
}

/// The `projects/` folder `dir` stands for: a Qwen home (`~/.qwen`, or one whose
/// projects keep `chats/`) names its `projects/`; a `projects/` folder whose projects
/// keep `chats/` is itself.
pub fn root_of(dir: &Path) -> Option<PathBuf> {
    let projects = dir.join("projects");
    if projects.is_dir() && (dir.file_name() == Some(OsStr::new(".qwen")) || has_chats(&projects)) {
        return Some(projects);
    }
    (dir.file_name() == Some(OsStr::new("projects")) && has_chats(dir)).then(|| dir.to_path_buf())
}

/// `NAME` of a session file `NAME.jsonl` in `chats/` (not a `.ledger.jsonl` side file).
fn session_name(file: &OsStr) -> Option<&OsStr> {
    let b = file.as_bytes();
    if b.ends_with(b".ledger.jsonl") {
        return None;
    }
    let stem = b.strip_suffix(b".jsonl").filter(|s| !s.is_empty())?;
    Some(OsStr::from_bytes(stem))
}

/// The sessions of one `chats/` folder, sorted by name.
fn sessions_in(chats: &Path) -> Vec<SessionRef> {
    let Ok(rd) = listing::read_dir(chats) else {
        return Vec::new();
    };
    let mut out: Vec<SessionRef> = rd
        .into_iter()
        .filter_map(|e| {
            let name = session_name(e.file_name())?.to_os_string();
            // A regular file (as the listing says, without a `stat`), or a link to one.
            e.is_file().then(|| SessionRef {
                name,
                path: e.into_path(),
                mtime: None,
                files: Vec::new(),
            })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn holds_sessions(root: &Path) -> io::Result<bool> {
    for p in listing::read_dir(root)? {
        if !sessions_in(&p.path().join(CHATS)).is_empty() {
            return Ok(true);
        }
    }
    Ok(false)
}

fn lister(root: &Path) -> Box<dyn Lister> {
    Box::new(Projects {
        root: root.to_path_buf(),
    })
}

/// The projects under one `projects/` folder.
struct Projects {
    root: PathBuf,
}

impl Lister for Projects {
    fn scan(&self) -> io::Result<Catalog> {
        let mut cat = Catalog {
            folders: vec![self.root.clone()],
            ..Catalog::default()
        };
        for p in listing::read_dir(&self.root)? {
            if !p.is_dir() {
                continue;
            }
            let path = p.path();
            let chats = path.join(CHATS);
            // The project folder until its chats/ appears; then chats/.
            let has_chats = chats.is_dir();
            cat.folders.push(if has_chats {
                chats.clone()
            } else {
                path.to_path_buf()
            });
            let sessions = if has_chats {
                sessions_in(&chats)
            } else {
                Vec::new()
            };
            cat.projects.insert(p.file_name().to_os_string(), sessions);
        }
        Ok(cat)
    }

    fn session_of(&self, changed: &OsStr) -> Option<OsString> {
        session_name(changed).map(OsStr::to_os_string)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn projects_are_listed_from_their_chats_folders() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path().join(".qwen");
        let p = home.join("projects/-home-dev-src-a");
        fs::create_dir_all(p.join("chats/archive")).unwrap();
        fs::create_dir_all(p.join("subagents/x")).unwrap();
        fs::write(p.join("chats/s1.jsonl"), "").unwrap();
        fs::write(p.join("chats/s1.ledger.jsonl"), "").unwrap();
        fs::write(p.join("chats/s1.runtime.json"), "").unwrap();
        fs::write(p.join("meta.json"), "").unwrap();
        fs::create_dir_all(home.join("projects/-home-dev-src-new")).unwrap();
        assert_eq!(root_of(&home), Some(home.join("projects")));
        assert_eq!(root_of(&home.join("projects")), Some(home.join("projects")));
        assert_eq!(root_of(&p), None);
        let cat = lister(&home.join("projects")).scan().unwrap();
        let names: Vec<_> = cat.projects.keys().cloned().collect();
        assert_eq!(names, ["-home-dev-src-a", "-home-dev-src-new"]);
        let a = &cat.projects[OsStr::new("-home-dev-src-a")];
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].name, "s1");
        assert!(cat.folders.contains(&p.join("chats")));
        assert!(
            cat.folders
                .contains(&home.join("projects/-home-dev-src-new"))
        );
        assert!(holds_sessions(&home.join("projects")).unwrap());
        let l = lister(&home.join("projects"));
        assert_eq!(l.session_of(OsStr::new("s1.jsonl")), Some("s1".into()));
        assert_eq!(l.session_of(OsStr::new("s1.ledger.jsonl")), None);
    }
}
