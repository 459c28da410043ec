//! Where a session's files are (GEMINI-FORMAT §1, §2.4, §6).
//!
//! ```text
//! ~/.gemini/                          $GEMINI_CLI_HOME/.gemini when that is set
//! ├── projects.json                   {"projects": {"<project path>": "<slug>"}}
//! └── tmp/<slug>/
//!     ├── .project_root               the project path again
//!     └── chats/
//!         ├── session-<YYYY-MM-DDTHH-MM>-<sid8>.jsonl      a session
//!         └── <sessionId>/<subagentSessionId>.jsonl          its subagents
//! ```

use std::path::{Path, PathBuf};

/// The CLI folder and the project slug of a session file
/// `<CLI folder>/tmp/<slug>/chats/[<parent>/]<file>`, when it lies in one.
pub fn home_of(path: &Path) -> Option<(PathBuf, String)> {
    let mut chats = path.parent()?;
    if chats.file_name()? != "chats" {
        chats = chats.parent()?;
        if chats.file_name()? != "chats" {
            return None;
        }
    }
    let slug_dir = chats.parent()?;
    let tmp = slug_dir.parent()?;
    if tmp.file_name()? != "tmp" {
        return None;
    }
    let slug = slug_dir.file_name()?.to_str()?.to_string();
    Some((tmp.parent()?.to_path_buf(), slug))
}

/// The project folder of slug `slug` of the CLI folder `home`: from `projects.json`
/// (the path that maps to it), else `tmp/<slug>/.project_root`.
pub fn project_of(home: &Path, slug: &str) -> Option<String> {
    Projects::read(home).project_of(home, slug)
}

/// `projects.json` of a CLI folder, read once for a listing of all its projects (read
/// again for each, a listing of n projects read it n times).
#[derive(Debug, Default)]
pub struct Projects {
    /// Slug → the last project path that maps to it (as a JavaScript object lookup
    /// finds a key written twice: last).
    by_slug: std::collections::HashMap<String, String>,
}

impl Projects {
    pub fn read(home: &Path) -> Projects {
        use crate::model::core::input::read_beneath;
        let mut by_slug = std::collections::HashMap::new();
        // Opened inside the CLI folder, bounded: a link out of it or a FIFO in its
        // place is not followed.
        if let Ok(b) = read_beneath(home, &home.join("projects.json"), 64 << 20)
            && let Ok(v) = serde_json::from_slice::<serde_json::Value>(&b)
            && let Some(p) = v.get("projects").and_then(|p| p.as_object())
        {
            for (k, s) in p {
                if let Some(s) = s.as_str() {
                    by_slug.insert(s.to_string(), k.clone());
                }
            }
        }
        Projects { by_slug }
    }

    /// [`project_of`], with this `projects.json`.
    pub fn project_of(&self, home: &Path, slug: &str) -> Option<String> {
        if let Some(k) = self.by_slug.get(slug) {
            return Some(k.clone());
        }
        let file = home.join("tmp").join(slug).join(".project_root");
        let read = || {
            let root = crate::model::core::input::read_beneath(home, &file, 1 << 20).ok()?;
            let root = String::from_utf8(root).ok()?;
            let root = root.trim();
            (!root.is_empty()).then(|| root.to_string())
        };
        // Kept between searches while the file is as it was (`core::memo`): a `stat`
        // per project rather than an `open` and a read.
        crate::model::core::memo::get("gemini-project-root", &file, read)
    }
}

/// The folder of the subagents of session `sid` whose file is `path`:
/// `chats/<sid>/` beside it.
pub fn subagent_dir(path: &Path, sid: &str) -> Option<PathBuf> {
    if sid.is_empty() || sid.contains('/') || sid == "." || sid == ".." {
        return None;
    }
    Some(path.parent()?.join(sid))
}

/// The subagents' files of session `sid` (file `path`), sorted by name.
pub fn subagent_files(path: &Path, sid: &str) -> Vec<PathBuf> {
    let Some(dir) = subagent_dir(path, sid) else {
        return Vec::new();
    };
    let Ok(rd) = crate::model::core::listing::read_dir(&dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .into_iter()
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl") && e.is_file())
        .map(|e| e.into_path())
        .collect();
    v.sort();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn homes_and_slugs() {
        assert_eq!(
            home_of(Path::new("/h/.gemini/tmp/qa/chats/session-x.jsonl")),
            Some((PathBuf::from("/h/.gemini"), "qa".into()))
        );
        assert_eq!(
            home_of(Path::new("/h/.gemini/tmp/qa/chats/sid/sub.jsonl")),
            Some((PathBuf::from("/h/.gemini"), "qa".into()))
        );
        assert_eq!(home_of(Path::new("/x/session-x.jsonl")), None);
    }
}
