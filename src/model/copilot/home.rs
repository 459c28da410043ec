//! Where Copilot CLI keeps its sessions, and how a mount lists them (COPILOT-FORMAT.md §1).
//!
//! Every session of every project is a folder `$COPILOT_HOME/session-state/<sessionId>/`
//! (default `~/.copilot`); the project is `workspace.yaml`'s `cwd` (else the `cwd` of the
//! session's `session.start`), written in no path. What a user recognises is the project,
//! so a mount groups sessions by it, named as Claude Code names its project folders
//! (every `/` and `.` of the path becomes `-`: `/home/dev/src/tui` → `-home-dev-src-tui`,
//! so the same project has the same name under `claude/`, `codex/` and `copilot/`), and
//! each session is a directory named by its id, the name `copilot --resume=<id>` takes.
//! A folder whose name is no UUID, or that holds no `events.jsonl`, is no session (the
//! CLI's own side folders such as `.session-operation-locks/`).
//!
//! Listing costs one directory read of `session-state/`, one `stat` per session folder and
//! the first bytes of each `workspace.yaml` not seen before (a session's `cwd` never
//! changes), kept for the life of the [`Scanner`].

use crate::model::core::catalog::{Catalog, SessionRef};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A session's history file, in its folder.
pub const EVENTS: &str = "events.jsonl";
/// A session's name and project, beside it.
pub const WORKSPACE: &str = "workspace.yaml";
/// The folder of the session folders, in a Copilot home.
pub const SESSION_STATE: &str = "session-state";

/// `workspace.yaml`, as far as sessionfs reads it: the flat `key: value` lines the CLI
/// writes (§1), every value a YAML scalar.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Workspace {
    /// `(key, value)` in file order, values unquoted.
    pub fields: Vec<(String, String)>,
}

impl Workspace {
    /// Reads the flat mapping the CLI writes. Lines that are not `key: value` are left out;
    /// a quoted value is unquoted as YAML does (`'it''s'`, `"a\"b"`), a plain one loses a
    /// trailing ` # comment`.
    pub fn parse(text: &str) -> Workspace {
        let mut fields = Vec::new();
        for line in text.lines() {
            if line.starts_with([' ', '\t', '#', '-']) {
                continue;
            }
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            if k.is_empty() || k.contains(' ') || !(v.is_empty() || v.starts_with(' ')) {
                continue;
            }
            fields.push((k.to_string(), unquote(v.trim())));
        }
        Workspace { fields }
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The session's name as the CLI's picker shows it (`name`; empty is none).
    pub fn name(&self) -> Option<&str> {
        self.get("name").filter(|n| !n.is_empty())
    }
}

/// A YAML scalar's value: single- and double-quoted ones unquoted, plain ones as written
/// (without a trailing comment).
fn unquote(v: &str) -> String {
    if let Some(inner) = v.strip_prefix('\'') {
        let inner = inner.strip_suffix('\'').unwrap_or(inner);
        return inner.replace("''", "'");
    }
    if let Some(inner) = v.strip_prefix('"') {
        // serde_json reads YAML's double-quoted escapes that JSON shares; others are
        // kept as written.
        let inner = inner.strip_suffix('"').unwrap_or(inner);
        return serde_json::from_str::<String>(&format!("\"{inner}\""))
            .unwrap_or_else(|_| inner.replace("\\\"", "\"").replace("\\\\", "\\"));
    }
    let plain = match v.find(" #") {
        Some(k) => &v[..k],
        None => v,
    };
    let plain = plain.trim_end();
    match plain {
        "~" | "null" | "Null" | "NULL" => String::new(),
        p => p.to_string(),
    }
}

/// A YAML scalar for `s` as a single-quoted string when plain would not read back the
/// same (what the CLI's writer quotes, such as a name starting with `[`), else plain.
pub fn yaml_scalar(s: &str) -> String {
    let plain_ok = !s.is_empty()
        && !s.starts_with([
            ' ', '[', ']', '{', '}', '\'', '"', '#', '&', '*', '!', '|', '>', '%', '@', '`', ',',
            '?', ':', '-',
        ])
        && !s.ends_with(' ')
        && !s.contains(": ")
        && !s.contains(" #")
        && !s.chars().any(|c| c.is_control())
        && !matches!(
            s,
            "true" | "false" | "null" | "~" | "yes" | "no" | "on" | "off" | "True" | "False"
        )
        && s.parse::<f64>().is_err();
    if plain_ok {
        return s.to_string();
    }
    if s.chars().any(|c| c.is_control()) {
        // Double quotes carry control characters as escapes (JSON's are YAML's).
        return serde_json::to_string(s).unwrap_or_default();
    }
    format!("'{}'", s.replace('\'', "''"))
}

/// A session folder's `workspace.yaml`, read (at most 64 KiB: the CLI writes a few lines),
/// only inside the folder and only a regular file (a link out of it, or a FIFO, reads as
/// no workspace: `input::open_beneath`).
pub fn read_workspace(dir: &Path) -> Option<Workspace> {
    let mut text = String::new();
    crate::model::core::input::open_beneath(dir, &dir.join(WORKSPACE))
        .ok()?
        .take(64 << 10)
        .read_to_string(&mut text)
        .ok()?;
    Some(Workspace::parse(&text))
}

/// The project folder name for a working directory, as the mount names projects.
pub fn project_name(cwd: &str) -> OsString {
    if cwd.is_empty() {
        return OsString::from("unknown-project");
    }
    let s: String = cwd
        .chars()
        .map(|c| if c == '/' || c == '.' { '-' } else { c })
        .collect();
    OsString::from(s)
}

/// Whether `name` can be a session folder's name: a UUID, as the CLI names them.
pub fn is_session_id(name: &OsStr) -> bool {
    super::events::is_uuid(&String::from_utf8_lossy(name.as_bytes()))
}

/// The `session-state/` folder of a Copilot home given as `dir`, or `dir` itself when it
/// is such a folder: a folder named `session-state` beside the CLI's own files, or one
/// holding a session folder.
pub fn sessions_root_of(dir: &Path) -> Option<PathBuf> {
    let state = dir.join(SESSION_STATE);
    // Files only Copilot CLI keeps beside its session folders.
    let marks = ["session-store.db", "command-history-state.json"];
    if state.is_dir() && (marks.iter().any(|m| dir.join(m).exists()) || holds_sessions(&state)) {
        return Some(state);
    }
    if dir.file_name() == Some(OsStr::new(SESSION_STATE)) && holds_sessions(dir) {
        return Some(dir.to_path_buf());
    }
    None
}

/// Whether `dir` holds a session folder (a UUID-named folder with an `events.jsonl`).
pub fn holds_sessions(dir: &Path) -> bool {
    let Ok(rd) = fs::read_dir(dir) else {
        return false;
    };
    rd.flatten()
        .any(|e| is_session_id(&e.file_name()) && e.path().join(EVENTS).is_file())
}

/// The session folder a path given by the user stands for: a session folder itself (it
/// holds `events.jsonl` and is named by a UUID, or holds `workspace.yaml` too).
pub fn session_folder(path: &Path) -> Option<PathBuf> {
    let events = path.join(EVENTS);
    let md = fs::metadata(&events).ok()?;
    (md.is_file()
        && (path.file_name().is_some_and(is_session_id) || path.join(WORKSPACE).is_file()))
    .then_some(events)
}

/// The Copilot CLI process that has the session folder `dir` open, if one does: the CLI
/// marks a session it has open with `inuse.<pid>.lock` (holding the pid) and
/// `inuse.<pid>.hold`, removed when it exits. A file whose process is gone (a crash), or
/// whose pid now belongs to a program that is no Copilot CLI, does not count.
pub fn in_use_by(dir: &Path) -> Option<u32> {
    for e in fs::read_dir(dir).ok()?.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("inuse."))
            .and_then(|n| n.strip_suffix(".lock"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        // SAFETY: a plain syscall; signal 0 only asks whether the process exists.
        let alive = unsafe { libc::kill(pid as libc::pid_t, 0) } == 0
            || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if !alive {
            continue;
        }
        match fs::read(format!("/proc/{pid}/cmdline")) {
            Ok(cmd) if memchr::memmem::find(&cmd, b"copilot").is_none() => continue,
            _ => return Some(pid),
        }
    }
    None
}

/// Copilot CLI's entry in the agents' table: its roots (a home or its `session-state/`
/// folder), and its lister (session folders by project).
pub const CATALOG: crate::model::core::catalog::CatalogOf =
    crate::model::core::catalog::CatalogOf {
        root_of: sessions_root_of,
        holds_sessions: holds_any,
        lister,
    };

fn holds_any(root: &Path) -> io::Result<bool> {
    fs::read_dir(root)?;
    Ok(holds_sessions(root))
}

fn lister(root: &Path) -> Box<dyn crate::model::core::catalog::Lister> {
    Box::new(Lister {
        root: root.to_path_buf(),
        scanner: Scanner::default(),
    })
}

/// The sessions under one `session-state/` folder, for the agents' table.
struct Lister {
    root: PathBuf,
    scanner: Scanner,
}

impl crate::model::core::catalog::Lister for Lister {
    fn scan(&self) -> io::Result<Catalog> {
        self.scanner.scan(&self.root)
    }

    /// A session folder, made or removed in `session-state/`, is its session. (Its
    /// files change in its own folder, which the mount watches for it.)
    fn session_of(&self, changed: &OsStr) -> Option<OsString> {
        is_session_id(changed).then(|| changed.to_os_string())
    }
}

/// Lists `session-state/` folders, remembering the `cwd` of each session it has read.
#[derive(Debug, Default)]
pub struct Scanner {
    cwd: Mutex<HashMap<PathBuf, (u64, String)>>,
}

impl Scanner {
    /// The sessions under `root` (a `session-state/` folder), by project. The folder to
    /// watch is `root` (sessions made and removed); each session's own folder holds its
    /// files.
    pub fn scan(&self, root: &Path) -> io::Result<Catalog> {
        let mut cat = Catalog {
            folders: vec![root.to_path_buf()],
            ..Catalog::default()
        };
        for e in crate::model::core::listing::read_dir(root)? {
            let id = e.file_name().to_os_string();
            if !is_session_id(&id) {
                continue;
            }
            let dir = e.into_path();
            let events = dir.join(EVENTS);
            if !fs::metadata(&events).is_ok_and(|m| m.is_file()) {
                continue;
            }
            let project = project_name(&self.cwd_of(&dir));
            cat.projects.entry(project).or_default().push(SessionRef {
                name: id,
                path: events,
                mtime: None,
                files: Vec::new(),
            });
        }
        for v in cat.projects.values_mut() {
            v.sort_by(|a, b| a.name.cmp(&b.name));
        }
        Ok(cat)
    }

    /// The `cwd` of the session in folder `dir` (cached while `workspace.yaml` keeps its
    /// inode; a session's `cwd` does not change).
    pub fn cwd_of(&self, dir: &Path) -> String {
        let ino = fs::metadata(dir.join(WORKSPACE))
            .map(|m| m.ino())
            .unwrap_or(0);
        if let Some((i, c)) = self.cwd.lock().get(dir)
            && *i == ino
            && ino != 0
        {
            return c.clone();
        }
        let c = session_cwd(dir);
        self.cwd.lock().insert(dir.to_path_buf(), (ino, c.clone()));
        c
    }
}

/// A session folder's project directory: `workspace.yaml`'s `cwd`, else the `cwd` of its
/// `session.start` line, else empty.
/// Each file's reading is kept between searches while the file is as it was
/// (`core::memo`).
pub fn session_cwd(dir: &Path) -> String {
    use crate::model::core::memo;
    let workspace: Option<String> =
        memo::get("copilot-workspace-cwd", &dir.join(WORKSPACE), || {
            read_workspace(dir)
                .as_ref()
                .and_then(|w| w.get("cwd"))
                .map(|c| c.to_string())
        });
    if let Some(c) = workspace.filter(|c| !c.is_empty()) {
        return c;
    }
    let events = dir.join(EVENTS);
    memo::get("copilot-start-cwd", &events, || {
        first_line(&events, 64 << 10)
            .and_then(|l| serde_json::from_slice::<serde_json::Value>(&l).ok())
            .and_then(|v| {
                v.pointer("/data/context/cwd")
                    .and_then(|c| c.as_str())
                    .map(str::to_string)
            })
            .unwrap_or_default()
    })
}

/// The first line of a file (without its `\n`), when it ends within `max` bytes.
pub fn first_line(path: &Path, max: u64) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    crate::model::core::input::open_regular(path)
        .ok()?
        .take(max)
        .read_to_end(&mut out)
        .ok()?;
    let end = memchr::memchr(b'\n', &out)?;
    out.truncate(end);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_yaml_as_the_cli_writes_it() {
        let w = Workspace::parse(
            "id: f6aa2aa4-8629-4474-a8d5-05b66689811b\ncwd: /home/dev/src/tui\n\
             name: '[[QA1]] What is 2+2? it''s'\nuser_named: false\nsummary: \"a\\nb\"\n\
             plain: Fix#12 # a comment\n",
        );
        assert_eq!(w.get("cwd"), Some("/home/dev/src/tui"));
        assert_eq!(w.name(), Some("[[QA1]] What is 2+2? it's"));
        assert_eq!(w.get("summary"), Some("a\nb"));
        assert_eq!(w.get("plain"), Some("Fix#12"));
        for s in [
            "TUI rewind demo",
            "[[QA1]] x (fork)",
            "it's",
            "a: b",
            "",
            "1.5",
            "a\nb",
        ] {
            let back = Workspace::parse(&format!("name: {}\n", yaml_scalar(s)));
            assert_eq!(back.get("name"), Some(s), "{s:?} as {}", yaml_scalar(s));
        }
    }

    #[test]
    fn a_workspace_yaml_read_only_inside_its_folder_and_never_blocking() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        fs::create_dir_all(&a).unwrap();
        fs::create_dir_all(&b).unwrap();
        fs::write(d.path().join("secret.yaml"), "name: secret\n").unwrap();
        std::os::unix::fs::symlink("../secret.yaml", a.join(WORKSPACE)).unwrap();
        assert!(read_workspace(&a).is_none());
        let c = std::ffi::CString::new(b.join(WORKSPACE).as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(read_workspace(&b).is_none());
        assert!(first_line(&b.join(WORKSPACE), 100).is_none());
    }

    #[test]
    fn projects_are_named_as_claude_code_names_them() {
        assert_eq!(project_name("/home/dev/src/tui"), "-home-dev-src-tui");
        assert_eq!(project_name("/a/b.c"), "-a-b-c");
        assert_eq!(project_name(""), "unknown-project");
    }
}
