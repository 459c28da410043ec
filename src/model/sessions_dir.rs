//! The agents' sessions directories: where they are, and which of their files are
//! sessions.
//!
//! Pi keeps one folder per project (named after the project's path) under
//! `$PI_CODING_AGENT_DIR/sessions`, else `~/.pi/agent/sessions`, and one `.jsonl` file
//! per session in each. Claude Code keeps the same shape under
//! `$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`, with side folders beside
//! the sessions: `<sessionId>/` (subagents' transcripts, spilled tool results) and a
//! project's `memory/`. [`default_dir`] and [`default_claude_dir`] find them;
//! [`agents`] is every agent's directory found on this machine, which `sessionfs mount
//! MOUNTPOINT` and `sessionfs grep PATTERN` both start from when given no source.
//!
//! [`list`] reads one level of such a directory the way a sessions mount shows it
//! (`docs/LAYOUT.md`, "All sessions"): at the top, every folder (a project) and every
//! regular `NAME.jsonl` file; in a project, every regular `NAME.jsonl` file. Symbolic
//! links are followed, other files are left out, each list is sorted by name (bytes),
//! a Claude Code side folder ([`is_side_folder`]) is not a project, and a folder hides
//! a loose session of the same name. The sessions mount (`view::MultiView`) and
//! `sessionfs grep` both list directories with it.

use std::collections::HashSet;

/// Codex's own listing (threads by project), for tests that compare with it; the
/// view and the search reach every agent's listing through [`catalog_of`].
pub use crate::model::codex::catalog as codex_catalog;
pub use crate::model::core::catalog::{Catalog, CatalogOf, Lister, SessionRef};
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// Session files end with this; a session's directory is named without it.
pub const SESSION_EXT: &str = ".jsonl";

/// `$HOME`, when set and not empty.
fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// The directory an agent's environment variable names (a leading `~` expanded),
/// joined with `tail`; `None` when the variable is unset or empty, `Some(None)`
/// without a home directory to expand.
fn env_dir(var: &str, tail: &str) -> Option<Option<PathBuf>> {
    let d = std::env::var_os(var).filter(|d| !d.is_empty())?;
    let b = d.as_bytes();
    let base = if b == b"~" {
        home()
    } else if let Some(rest) = b.strip_prefix(b"~/") {
        home().map(|h| h.join(OsStr::from_bytes(rest)))
    } else {
        Some(PathBuf::from(d))
    };
    Some(base.map(|b| b.join(tail)))
}

/// Pi's sessions directory: `$PI_CODING_AGENT_DIR/sessions` (a leading `~` expanded),
/// else `~/.pi/agent/sessions`. `None` without a home directory to expand. Whether it
/// exists is the caller's question.
pub fn default_dir() -> Option<PathBuf> {
    env_dir("PI_CODING_AGENT_DIR", "sessions")
        .unwrap_or_else(|| home().map(|h| h.join(".pi/agent/sessions")))
}

/// Claude Code's projects directory: `$CLAUDE_CONFIG_DIR/projects` (a leading `~`
/// expanded), else `~/.claude/projects`. `None` without a home directory to expand.
pub fn default_claude_dir() -> Option<PathBuf> {
    env_dir("CLAUDE_CONFIG_DIR", "projects")
        .unwrap_or_else(|| home().map(|h| h.join(".claude/projects")))
}

/// Codex's sessions folder: `$CODEX_HOME/sessions` (a leading `~` expanded), else
/// `~/.codex/sessions`. Its pages lie in day folders (`YYYY/MM/DD`), not in project
/// folders: a mount groups them by project itself (see [`super::codex::catalog`]).
pub fn default_codex_dir() -> Option<PathBuf> {
    env_dir("CODEX_HOME", "sessions").unwrap_or_else(|| home().map(|h| h.join(".codex/sessions")))
}

/// Gemini CLI's sessions folder: the `tmp/` folder of its CLI folder,
/// `$GEMINI_CLI_HOME/.gemini` (the variable stands for the home directory, as the CLI
/// reads it; a leading `~` expanded), else `~/.gemini`. Its sessions lie in project
/// folders named by slugs, beside start-up stubs and subagents: a mount lists them by
/// project itself (see [`super::gemini::catalog`]).
pub fn default_gemini_dir() -> Option<PathBuf> {
    env_dir("GEMINI_CLI_HOME", ".gemini/tmp")
        .unwrap_or_else(|| home().map(|h| h.join(".gemini/tmp")))
}

/// Qwen Code's projects folder: `$QWEN_RUNTIME_DIR/projects` (where it writes its
/// runtime output when that is set), else `$QWEN_HOME/projects`, else
/// `~/.qwen/projects` (a leading `~` expanded in either). Each project keeps its
/// sessions in its `chats/` folder: Qwen Code lists them itself
/// ([`super::qwen::catalog`]).
pub fn default_qwen_dir() -> Option<PathBuf> {
    env_dir("QWEN_RUNTIME_DIR", "projects")
        .or_else(|| env_dir("QWEN_HOME", "projects"))
        .unwrap_or_else(|| home().map(|h| h.join(".qwen/projects")))
}

/// Copilot CLI's session folders: `$COPILOT_HOME/session-state` (a leading `~`
/// expanded), else `~/.copilot/session-state`. Each session is a folder there, named by
/// its id, whatever its project: its lister groups them by project
/// (`crate::model::copilot::home`).
pub fn default_copilot_dir() -> Option<PathBuf> {
    env_dir("COPILOT_HOME", "session-state")
        .unwrap_or_else(|| home().map(|h| h.join(".copilot/session-state")))
}

/// opencode's database: `$OPENCODE_DB`, else `opencode.db` in its data folder
/// (`$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode`). A database, not a
/// folder: its lister lists its sessions by project ([`super::opencode::catalog`]).
pub fn default_opencode_db() -> Option<PathBuf> {
    super::opencode::catalog::default_db()
}

/// An agent whose sessions sessionfs shows.
#[derive(Debug, Clone, Copy)]
pub struct Agent {
    /// Its folder in a mount of every agent (`pi`, `claude`).
    pub folder: &'static str,
    /// How to name its directory to the user.
    pub what: &'static str,
    /// The environment variable that moves it.
    pub var: &'static str,
    /// The command it ships as, for "has it run yet?".
    pub program: &'static str,
    /// Where its directory is.
    pub dir: fn() -> Option<PathBuf>,
    /// The folder its files live in by default (`.pi`, `.claude`): a directory below
    /// one is taken for this agent's.
    pub marker: &'static str,
    /// How its sessions are listed when they are not one `.jsonl` file per session in
    /// project folders (Codex: threads by project, from its day folders); `None`: as
    /// on disk ([`list`]).
    pub catalog: Option<CatalogOf>,
}

/// Pi, Claude Code, Codex, Gemini CLI, Qwen Code, Copilot CLI and opencode, in the order a mount of
/// every agent lists them.
pub const AGENTS: [Agent; 7] = [
    Agent {
        folder: "pi",
        what: "Pi's sessions directory",
        var: "PI_CODING_AGENT_DIR",
        program: "Pi",
        dir: default_dir,
        marker: ".pi",
        catalog: None,
    },
    Agent {
        folder: "claude",
        what: "Claude Code's projects directory",
        var: "CLAUDE_CONFIG_DIR",
        program: "Claude Code",
        dir: default_claude_dir,
        marker: ".claude",
        catalog: None,
    },
    Agent {
        folder: "codex",
        what: "Codex's sessions folder",
        var: "CODEX_HOME",
        program: "Codex",
        dir: default_codex_dir,
        marker: ".codex",
        catalog: Some(crate::model::codex::catalog::CATALOG),
    },
    Agent {
        folder: "gemini",
        what: "Gemini CLI's sessions folder",
        var: "GEMINI_CLI_HOME",
        program: "Gemini CLI",
        dir: default_gemini_dir,
        marker: ".gemini",
        catalog: Some(crate::model::gemini::catalog::CATALOG),
    },
    Agent {
        folder: "qwen",
        what: "Qwen Code's projects folder",
        var: "QWEN_HOME",
        program: "Qwen Code",
        dir: default_qwen_dir,
        marker: ".qwen",
        catalog: Some(crate::model::qwen::catalog::CATALOG),
    },
    Agent {
        folder: "copilot",
        what: "Copilot CLI's session-state folder",
        var: "COPILOT_HOME",
        program: "Copilot CLI",
        dir: default_copilot_dir,
        marker: ".copilot",
        catalog: Some(crate::model::copilot::home::CATALOG),
    },
    Agent {
        folder: "opencode",
        what: "opencode's database",
        var: "OPENCODE_DB",
        program: "opencode",
        dir: default_opencode_db,
        marker: "opencode.db",
        catalog: Some(crate::model::opencode::catalog::CATALOG),
    },
];

impl Agent {
    /// Whether its directory was named by its environment variable.
    pub fn explicit(&self) -> bool {
        std::env::var_os(self.var).is_some_and(|d| !d.is_empty())
    }

    /// Its directory, which must be an existing directory; otherwise why not, as one
    /// sentence for the user.
    pub fn existing_dir(&self) -> Result<PathBuf, String> {
        let what = self.what;
        let Some(dir) = (self.dir)() else {
            return Err(format!(
                "cannot find {what}: HOME is not set; \
                 give a sessions directory or a session file"
            ));
        };
        match fs::metadata(&dir) {
            // A database its agent lists (opencode's): its root is the file.
            Ok(m) if m.is_file() && self.catalog.is_some_and(|c| (c.root_of)(&dir).is_some()) => {
                Ok(dir)
            }
            Ok(m) if m.is_dir() => Ok(dir),
            Ok(_) => Err(format!("{what} {} is not a directory", dir.display())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(format!(
                "{what} {} does not exist (has {} run yet? \
                 {} moves it); give a sessions directory or a session file",
                dir.display(),
                self.program,
                self.var,
            )),
            Err(e) => Err(format!("{}: {}", dir.display(), io_message(&e))),
        }
    }
}

/// [`default_dir`], which must be an existing directory; otherwise why not, as one
/// sentence for the user.
pub fn existing_default_dir() -> Result<PathBuf, String> {
    AGENTS[0].existing_dir()
}

/// Every agent's directory on this machine, by folder name: a directory named by its
/// environment variable (`PI_CODING_AGENT_DIR`, `CLAUDE_CONFIG_DIR`, `CODEX_HOME`) must be there; a
/// default one is taken when it exists. At least one must be found; otherwise why
/// not, as one sentence for the user.
pub fn agents() -> Result<Vec<(&'static str, PathBuf)>, String> {
    let mut found = Vec::new();
    for a in &AGENTS {
        match a.existing_dir() {
            Ok(d) => found.push((a.folder, d)),
            Err(m) if a.explicit() => return Err(m),
            Err(_) => {}
        }
    }
    if found.is_empty() {
        let shown =
            |a: &Agent, dflt: &str| (a.dir)().map_or(dflt.to_string(), |d| d.display().to_string());
        return Err(format!(
            "no agent's sessions found: neither Pi's sessions directory {} \
             nor Claude Code's projects directory {} nor Codex's sessions folder {} \
             nor Gemini CLI's sessions folder {} \
             nor Qwen Code's projects folder {} \
             nor Copilot CLI's session-state folder {} \
             nor opencode's database {} \
             exists (PI_CODING_AGENT_DIR, CLAUDE_CONFIG_DIR, CODEX_HOME, \
             GEMINI_CLI_HOME, QWEN_HOME, COPILOT_HOME and OPENCODE_DB move them); \
             give a sessions directory or a session file",
            shown(&AGENTS[0], "~/.pi/agent/sessions"),
            shown(&AGENTS[1], "~/.claude/projects"),
            shown(&AGENTS[2], "~/.codex/sessions"),
            shown(&AGENTS[3], "~/.gemini/tmp"),
            shown(&AGENTS[4], "~/.qwen/projects"),
            shown(&AGENTS[5], "~/.copilot/session-state"),
            shown(&AGENTS[6], "~/.local/share/opencode/opencode.db"),
        ));
    }
    Ok(found)
}

/// Whose sessions `dir` is meant to hold, by where it is: the agent whose directory
/// it is in, or whose folder (`.pi`, `.claude`, …) is one of its ancestors (when
/// only one is); else "Pi or Claude Code".
pub fn agent_of(dir: &Path) -> &'static str {
    agent_by_place(dir).map_or("Pi or Claude Code", |a| a.program)
}

/// [`agent_of`]'s agent, when the place says.
fn agent_by_place(dir: &Path) -> Option<&'static Agent> {
    let abs = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    for a in &AGENTS {
        if let Some(d) = (a.dir)().map(|d| fs::canonicalize(&d).unwrap_or(d))
            && abs.starts_with(&d)
        {
            return Some(a);
        }
    }
    let has = |name: &str| abs.components().any(|c| c.as_os_str() == name);
    let mut found = AGENTS.iter().filter(|a| has(a.marker));
    match (found.next(), found.next()) {
        (Some(a), None) => Some(a),
        _ => None,
    }
}

/// The root and the lister of `dir` when an agent lists its sessions itself
/// ([`Agent::catalog`]), and that agent: `dir` is such an agent's root (its home, or
/// the sessions folder in it), or is meant for that agent (`agent`, the agent's folder
/// in a mount of every agent, or by where `dir` is: [`agent_of`]). `None`: listed as
/// on disk.
pub fn catalog_of(
    dir: &Path,
    agent: Option<&str>,
) -> Option<(PathBuf, Box<dyn Lister>, &'static Agent)> {
    let listed = |a: &'static Agent, root: PathBuf| {
        let l = (a.catalog?.lister)(&root);
        Some((root, l, a))
    };
    if let Some(folder) = agent {
        let a = AGENTS.iter().find(|a| a.folder == folder)?;
        let root = (a.catalog?.root_of)(dir).unwrap_or_else(|| dir.to_path_buf());
        return listed(a, root);
    }
    for a in &AGENTS {
        if let Some(root) = a.catalog.and_then(|c| (c.root_of)(dir)) {
            return listed(a, root);
        }
    }
    listed(agent_by_place(dir)?, dir.to_path_buf())
}

/// Whether `path` is itself the root of an agent that lists its sessions (a Codex
/// `sessions/` folder or home, opencode's database or the folder holding it), as
/// opposed to a file or folder of sessions inside one.
pub fn is_listed_root(path: &Path) -> bool {
    AGENTS
        .iter()
        .filter_map(|a| a.catalog)
        .any(|c| (c.root_of)(path).is_some())
}

/// The root `dir` stands for when an agent lists its sessions itself (its home names
/// the sessions folder in it); `dir` otherwise.
pub fn root_of(dir: &Path) -> PathBuf {
    AGENTS
        .iter()
        .filter_map(|a| a.catalog)
        .find_map(|c| (c.root_of)(dir))
        .unwrap_or_else(|| dir.to_path_buf())
}

/// Whether `dir` holds a session: a `.jsonl` file at its top or in a folder of it (or
/// one its agent's lister finds: a Codex page in its day folders).
/// `None` when it cannot be read.
fn holds_sessions(dir: &Path) -> Option<bool> {
    for a in &AGENTS {
        let Some(c) = a.catalog else { continue };
        let root = match (c.root_of)(dir) {
            Some(r) => r,
            None if agent_by_place(dir).is_some_and(|b| b.folder == a.folder) => dir.to_path_buf(),
            None => continue,
        };
        return (c.holds_sessions)(&root).ok();
    }
    let is_session = |e: &fs::DirEntry| {
        e.file_name().as_bytes().ends_with(SESSION_EXT.as_bytes()) && e.path().is_file()
    };
    for e in fs::read_dir(dir).ok()?.flatten() {
        if is_session(&e) {
            return Some(true);
        }
        if e.path().is_dir()
            && fs::read_dir(e.path())
                .into_iter()
                .flatten()
                .flatten()
                .any(|f| is_session(&f))
        {
            return Some(true);
        }
    }
    Some(false)
}

/// What a sessions directory that holds no session is, as the start of a warning
/// (`shown` names it): most often the wrong directory, or the agent has not run. It
/// says what sessionfs reads. `None` when it holds one, or cannot be read (the caller
/// says why elsewhere).
pub fn no_sessions(dir: &Path, shown: &str) -> Option<String> {
    (!holds_sessions(dir)?).then(|| {
        format!(
            "{shown} holds no sessions yet (no .jsonl file in it or in its project \
             folders, where {} keeps them)",
            agent_of(dir)
        )
    })
}

/// `agents` (as [`agents`] finds them) named for the user: "Pi's sessions directory
/// X and Claude Code's projects directory Y".
pub fn agents_shown(agents: &[(&'static str, PathBuf)]) -> String {
    let list: Vec<String> = agents
        .iter()
        .map(|(folder, p)| {
            let what = AGENTS
                .iter()
                .find(|a| a.folder == *folder)
                .map_or("the sessions directory", |a| a.what);
            format!("{what} {}", p.display())
        })
        .collect();
    list.join(" and ")
}

/// The agents' programs named: "Pi", "Pi and Claude Code".
pub fn agent_programs(agents: &[(&'static str, PathBuf)]) -> String {
    let list: Vec<&str> = agents
        .iter()
        .filter_map(|(folder, _)| AGENTS.iter().find(|a| a.folder == *folder))
        .map(|a| a.program)
        .collect();
    list.join(" and ")
}

/// [`no_sessions`] for every agent's directory: only when none holds a session.
pub fn no_agent_sessions(agents: &[(&'static str, PathBuf)]) -> Option<String> {
    let none = agents.iter().all(|(_, p)| holds_sessions(p) == Some(false));
    none.then(|| {
        let (verb, place) = if agents.len() == 1 {
            ("holds", "in it or in its project folders")
        } else {
            ("hold", "in them or in their project folders")
        };
        format!(
            "{} {verb} no sessions yet (no .jsonl file {place})",
            agents_shown(agents)
        )
    })
}

pub use crate::model::core::input::io_message;

/// The name a session's directory is shown under for a file name `NAME.jsonl` with a
/// non-empty `NAME`: `NAME`, unless it cannot be a name or should not reach a terminal
/// as it is (`.` and `..`, from the files `..jsonl` and `...jsonl`; a name starting
/// with `%`; one holding a control character): then `%` and `NAME` with `%` and the
/// control bytes percent-encoded, as entry ids are escaped (`..jsonl` is `%.`).
/// [`with_ext`] gives the file name back.
pub fn session_stem(file_name: &OsStr) -> Option<OsString> {
    let b = file_name.as_bytes();
    let ext = SESSION_EXT.as_bytes();
    if b.len() <= ext.len() || !b.ends_with(ext) {
        return None;
    }
    let stem = &b[..b.len() - ext.len()];
    let control = |c: u8| c < 0x20 || c == 0x7f;
    let plain =
        stem != b"." && stem != b".." && stem[0] != b'%' && !stem.iter().any(|&c| control(c));
    if plain {
        return Some(OsStr::from_bytes(stem).to_os_string());
    }
    let mut out = vec![b'%'];
    for &c in stem {
        if c == b'%' || control(c) {
            out.extend_from_slice(format!("%{c:02X}").as_bytes());
        } else {
            out.push(c);
        }
    }
    Some(OsString::from_vec(out))
}

/// The file name (`NAME.jsonl`) of the session shown as `name` ([`session_stem`]).
pub fn with_ext(name: &OsStr) -> OsString {
    let b = name.as_bytes();
    let mut f = match b.strip_prefix(b"%") {
        Some(rest) => {
            let mut out = Vec::with_capacity(rest.len());
            let mut i = 0;
            while i < rest.len() {
                let hex = (rest[i] == b'%')
                    .then(|| rest.get(i + 1..i + 3))
                    .flatten()
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(c) => {
                        out.push(c);
                        i += 3;
                    }
                    None => {
                        out.push(rest[i]);
                        i += 1;
                    }
                }
            }
            OsString::from_vec(out)
        }
        None => name.to_os_string(),
    };
    f.push(SESSION_EXT);
    f
}

/// A Claude Code session id: a UUID.
pub fn is_uuid(name: &OsStr) -> bool {
    let b = name.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, &c)| match i {
            8 | 13 | 18 | 23 => c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Is folder `d`, in a folder whose sessions are `sessions` (names without
/// `.jsonl`), the side folder of a Claude Code session (`<sessionId>/` beside
/// `<sessionId>.jsonl`) or its project's `memory/`? Those are not projects.
pub fn is_side_folder(d: &OsStr, sessions: &[OsString]) -> bool {
    (is_uuid(d) && sessions.iter().any(|s| s == d))
        || (d == "memory" && sessions.iter().any(|s| is_uuid(s)))
}

/// [`is_side_folder`] for one folder `d` of `dir`, asking the disk.
pub fn is_side_folder_on_disk(dir: &Path, d: &OsStr) -> bool {
    if is_uuid(d) {
        return dir.join(with_ext(d)).is_file();
    }
    d == "memory"
        && fs::read_dir(dir).is_ok_and(|rd| {
            rd.flatten()
                .any(|e| session_stem(&e.file_name()).is_some_and(|s| is_uuid(&s)))
        })
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
    for ent in crate::model::core::listing::read_dir(dir)? {
        let name = ent.file_name().to_os_string();
        let Some(ft) = ent.kind_followed() else {
            continue;
        };
        if ft.is_dir() && top {
            out.projects.push(name);
        } else if ft.is_file()
            && let Some(stem) = session_stem(&name)
        {
            out.sessions.push(stem);
        }
    }
    out.projects.sort();
    out.projects.retain(|d| !is_side_folder(d, &out.sessions));
    let projects: HashSet<&OsString> = out.projects.iter().collect();
    out.sessions.retain(|s| !projects.contains(s));
    out.sessions.sort();
    Ok(out)
}

/// The session files of a sessions directory, as a mount shows them: `*.jsonl` at the
/// top and in each project folder, with the project's name. The root of an agent that
/// lists its sessions itself ([`Agent::catalog`]) gives the file each session opens
/// from (a Codex thread: one page, which opens the whole thread), with its project as a
/// mount names it.
pub fn files_of_dir(dir: &Path) -> std::io::Result<Vec<(PathBuf, String)>> {
    let mut out = Vec::new();
    let listed = AGENTS
        .iter()
        .filter_map(|a| a.catalog)
        .find_map(|c| (c.root_of)(dir).map(|r| (c.lister)(&r)));
    if let Some(lister) = listed {
        let cat = lister.scan()?;
        for (project, sessions) in cat.projects {
            for t in sessions {
                out.push((t.path, project.to_string_lossy().into_owned()));
            }
        }
        return Ok(out);
    }
    let top = list(dir, true)?;
    for f in &top.sessions {
        out.push((dir.join(with_ext(f)), String::new()));
    }
    for p in &top.projects {
        let pdir = dir.join(p);
        let Ok(l) = list(&pdir, false) else {
            continue;
        };
        for f in &l.sessions {
            out.push((pdir.join(with_ext(f)), p.to_string_lossy().into_owned()));
        }
    }
    Ok(out)
}

/// The session file of `dir` when `dir` is a session of its own (a Copilot CLI session
/// folder, `<id>/` holding `events.jsonl`): commands given such a folder read that
/// file, as if it had been named.
pub fn session_folder_file(dir: &Path) -> Option<PathBuf> {
    crate::model::copilot::home::session_folder(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems() {
        let stem = |s: &str| session_stem(OsStr::new(s));
        assert_eq!(stem("a.jsonl").as_deref(), Some(OsStr::new("a")));
        assert_eq!(stem(".jsonl"), None);
        assert_eq!(stem("a.json"), None);
        // Names that cannot be shown as they are, and back.
        for (file, shown) in [
            ("..jsonl", "%."),
            ("...jsonl", "%.."),
            ("%x.jsonl", "%%25x"),
            ("a\nb.jsonl", "%a%0Ab"),
            ("\x1b]0;t\x07.jsonl", "%%1B]0;t%07"),
        ] {
            assert_eq!(stem(file).as_deref(), Some(OsStr::new(shown)), "{file:?}");
            assert_eq!(with_ext(OsStr::new(shown)), OsStr::new(file));
        }
        assert_eq!(with_ext(OsStr::new("a")), OsStr::new("a.jsonl"));
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

    #[test]
    fn claude_side_folders_are_not_projects() {
        let d = tempfile::tempdir().unwrap();
        let sid = "0b6e8a1c-7f0e-4c1e-9a57-3e2f1d4c5b6a";
        fs::write(d.path().join(format!("{sid}.jsonl")), "").unwrap();
        fs::create_dir(d.path().join(sid)).unwrap();
        fs::create_dir(d.path().join("memory")).unwrap();
        fs::create_dir(d.path().join("-home-dev-app")).unwrap();
        let top = list(d.path(), true).unwrap();
        assert_eq!(top.projects, ["-home-dev-app"]);
        assert_eq!(top.sessions, [sid]);
        assert!(is_side_folder_on_disk(d.path(), OsStr::new(sid)));
        assert!(is_side_folder_on_disk(d.path(), OsStr::new("memory")));
        assert!(!is_side_folder_on_disk(
            d.path(),
            OsStr::new("-home-dev-app")
        ));
        // Without a Claude Code session beside it, `memory` is a project like any other.
        let e = tempfile::tempdir().unwrap();
        fs::create_dir(e.path().join("memory")).unwrap();
        assert_eq!(list(e.path(), true).unwrap().projects, ["memory"]);
    }

    /// `sessionfs usage` of a Codex home: one file per thread, each request once over
    /// them (a fork's inherited requests are counted in its parent), the same total as
    /// ccusage's over the same home.
    #[test]
    fn usage_of_a_codex_home_counts_each_request_once() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex");
        let home = fixtures.join("own/codex-home");
        let files = files_of_dir(&home).unwrap();
        assert_eq!(files.len(), 10);
        assert!(files.iter().any(|(_, p)| p == "-home-dev-src-tui2"));
        let r = crate::model::core::usage::report::build(
            &files,
            &crate::model::core::usage::prices::Prices::snapshot(),
        );
        assert!(r.skipped.is_empty(), "{:?}", r.skipped);
        let mut total = crate::model::core::usage::Usage::default();
        for s in &r.sessions {
            total.add(&s.usage);
        }
        let cc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(fixtures.join("ccusage/own.json")).unwrap())
                .unwrap();
        assert_eq!(
            total.tokens.total(),
            cc["totals"]["totalTokens"].as_u64().unwrap()
        );
        assert!((total.cost - cc["totals"]["costUSD"].as_f64().unwrap()).abs() < 1e-9);
        assert_eq!(total.requests, 42);
    }
}
