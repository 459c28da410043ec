//! Pi's sessions directory: where it is, and which of its files are sessions.
//!
//! Pi keeps one folder per project (named after the project's path) under
//! `$PI_CODING_AGENT_DIR/sessions`, else `~/.pi/agent/sessions`, and one `.jsonl` file
//! per session in each. [`default_dir`] finds that directory; `sessionfs mount
//! MOUNTPOINT` and `sessionfs grep PATTERN` both start there when given no source.
//!
//! [`list`] reads one level of such a directory the way a sessions mount shows it
//! (`docs/LAYOUT.md`, "All sessions"): at the top, every folder (a project) and every
//! regular `NAME.jsonl` file; in a project, every regular `NAME.jsonl` file. Symbolic
//! links are followed, other files are left out, each list is sorted by name (bytes),
//! and a folder hides a loose session of the same name. The sessions mount
//! (`view::MultiView`) and `sessionfs grep` both list directories with it.

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Session files end with this; a session's directory is named without it.
pub const SESSION_EXT: &str = ".jsonl";

/// Pi's sessions directory: `$PI_CODING_AGENT_DIR/sessions` (a leading `~` expanded),
/// else `~/.pi/agent/sessions`. `None` without a home directory to expand. Whether it
/// exists is the caller's question.
pub fn default_dir() -> Option<PathBuf> {
    let home = || {
        std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
    };
    match std::env::var_os("PI_CODING_AGENT_DIR").filter(|d| !d.is_empty()) {
        Some(d) => {
            let b = d.as_bytes();
            let agent = if b == b"~" {
                home()?
            } else if let Some(rest) = b.strip_prefix(b"~/") {
                home()?.join(OsStr::from_bytes(rest))
            } else {
                PathBuf::from(d)
            };
            Some(agent.join("sessions"))
        }
        None => Some(home()?.join(".pi/agent/sessions")),
    }
}

/// [`default_dir`], which must be an existing directory; otherwise why not, as one
/// sentence for the user.
pub fn existing_default_dir() -> Result<PathBuf, String> {
    let Some(dir) = default_dir() else {
        return Err("cannot find Pi's sessions directory: HOME is not set; \
                    give a sessions directory or a session file"
            .into());
    };
    match fs::metadata(&dir) {
        Ok(m) if m.is_dir() => Ok(dir),
        Ok(_) => Err(format!(
            "Pi's sessions directory {} is not a directory",
            dir.display()
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(format!(
            "Pi's sessions directory {} does not exist (has Pi run yet? \
             PI_CODING_AGENT_DIR moves it); give a sessions directory or a session file",
            dir.display()
        )),
        Err(e) => Err(format!("{}: {}", dir.display(), io_message(&e))),
    }
}

/// An I/O error as one phrase (`No such file or directory`), without Rust's
/// `(os error N)`.
pub fn io_message(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// `NAME` for a file name `NAME.jsonl` with a non-empty `NAME`.
pub fn session_stem(file_name: &OsStr) -> Option<&OsStr> {
    let b = file_name.as_bytes();
    let ext = SESSION_EXT.as_bytes();
    (b.len() > ext.len() && b.ends_with(ext)).then(|| OsStr::from_bytes(&b[..b.len() - ext.len()]))
}

/// One level of a sessions directory, as a sessions mount lists it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// Project folders (only at the top), sorted.
    pub projects: Vec<OsString>,
    /// Sessions: file names without `.jsonl`, sorted; none has a project's name.
    pub sessions: Vec<OsString>,
}

/// Reads `dir`: project folders too when `top`, sessions always (see the module docs).
/// Entries that vanish or cannot be examined while it is read are left out.
pub fn list(dir: &Path, top: bool) -> io::Result<Listing> {
    let mut out = Listing::default();
    for ent in fs::read_dir(dir)? {
        let Ok(ent) = ent else { continue };
        let name = ent.file_name();
        let Ok(mut ft) = ent.file_type() else {
            continue;
        };
        if ft.is_symlink() {
            match fs::metadata(ent.path()) {
                Ok(m) => ft = m.file_type(),
                Err(_) => continue,
            }
        }
        if ft.is_dir() && top {
            out.projects.push(name);
        } else if ft.is_file()
            && let Some(stem) = session_stem(&name)
        {
            out.sessions.push(stem.to_os_string());
        }
    }
    out.projects.sort();
    let projects: HashSet<&OsString> = out.projects.iter().collect();
    out.sessions.retain(|s| !projects.contains(s));
    out.sessions.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems() {
        assert_eq!(session_stem(OsStr::new("a.jsonl")), Some(OsStr::new("a")));
        assert_eq!(session_stem(OsStr::new(".jsonl")), None);
        assert_eq!(session_stem(OsStr::new("a.json")), None);
    }

    #[test]
    fn a_folder_hides_a_loose_session_and_other_files_are_left_out() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir(d.path().join("p")).unwrap();
        fs::write(d.path().join("p.jsonl"), "").unwrap();
        fs::write(d.path().join("b.jsonl"), "").unwrap();
        fs::write(d.path().join("a.jsonl"), "").unwrap();
        fs::write(d.path().join("notes.txt"), "").unwrap();
        fs::create_dir(d.path().join("dir.jsonl")).unwrap();
        std::os::unix::fs::symlink("a.jsonl", d.path().join("c.jsonl")).unwrap();
        std::os::unix::fs::symlink("missing", d.path().join("d.jsonl")).unwrap();
        let top = list(d.path(), true).unwrap();
        assert_eq!(top.projects, ["dir.jsonl", "p"]);
        assert_eq!(top.sessions, ["a", "b", "c"]);
        let inner = list(d.path(), false).unwrap();
        assert!(inner.projects.is_empty());
        assert_eq!(inner.sessions, ["a", "b", "c", "p"]);
    }
}
