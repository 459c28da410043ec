//! Gemini CLI's sessions as a mount lists them: by project, one directory per session.
//!
//! The CLI keeps a folder per project, `~/.gemini/tmp/<slug>/chats/`, where `<slug>`
//! is the project folder's base name (made unique), and `projects.json` maps the
//! project's path to it (GEMINI-FORMAT §1). A slug says little (`app`, `app-1`), so
//! the mount names a project by its path, the way Claude Code names its project
//! folders and the mount names Codex's projects (every `/` and `.` becomes `-`:
//! `/home/dev/src/qa` → `-home-dev-src-qa`), so that a user finds a project under the
//! same name in `claude/`, `codex/` and `gemini/`; a slug whose path is unknown keeps
//! its own name.
//!
//! A session is a directory named by its session id, which `gemini --resume ID` takes.
//! Its files: every start of the CLI writes a start-up stub (a metadata line and the
//! `<session_context>` record) to `session-<minute>-<sid8>.jsonl`, carrying the id of
//! the session it resumes, and a resume in another minute than the session's first
//! start leaves that stub as a second file with the same id (§2.4). The CLI's own list
//! skips files without conversation; so does the mount: a session is the file of its
//! id that holds a message (the newest such, should there be two), and a file that
//! holds none (a stub, or a session whose prompt is not written yet) is not listed.
//! Subagents' files (`chats/<sessionId>/`, §6) are listed inside the session that ran
//! them, not here.
//!
//! Listing costs one directory read per project, plus the first lines of each file
//! that changed since it was last read (a stub's two lines; a session's first message
//! is on its third line). [`CATALOG`] is the agents' table's entry: the mount, `sessionfs
//! grep`, `usage` and `check` list a CLI folder through it.

use super::line::{self, Kind};
use crate::model::core::catalog::{Catalog, CatalogOf, Lister, SessionRef};
use crate::model::core::json_view::{Json, JsonObj, Tape};
use crate::model::core::listing;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The `tmp/` folder of the CLI folder `dir` (`~/.gemini`), or `dir` itself when it is
/// that folder: one holding a project folder with a `chats/` folder, beside a
/// `projects.json` or a `settings.json` (or, for `tmp/` itself, inside a folder that
/// has them).
pub fn sessions_root_of(dir: &Path) -> Option<PathBuf> {
    let marks = |d: &Path| d.join("projects.json").is_file() || d.join("settings.json").is_file();
    let holds_chats = |tmp: &Path| {
        listing::read_dir(tmp).is_ok_and(|rd| rd.iter().any(|e| e.path().join("chats").is_dir()))
    };
    let tmp = dir.join("tmp");
    if tmp.is_dir() && marks(dir) && (holds_chats(&tmp) || dir.join("projects.json").is_file()) {
        return Some(tmp);
    }
    if dir.file_name() == Some(OsStr::new("tmp"))
        && dir.parent().is_some_and(marks)
        && holds_chats(dir)
    {
        return Some(dir.to_path_buf());
    }
    None
}

/// A project folder's name for the project at `path`: every `/` and `.` becomes `-`
/// (as Claude Code names its project folders), a control character (a NUL, which no
/// name may hold; a newline or an escape sequence, which must not reach a terminal
/// raw) its percent-encoded UTF-8 bytes (`%00`). `projects.json` is only the CLI's
/// file, and anyone who can write it names the folder.
pub fn project_name(path: &str) -> OsString {
    let mut s = String::with_capacity(path.len());
    for c in path.chars() {
        match c {
            '/' | '.' => s.push('-'),
            c if c.is_control() => push_percent(&mut s, c),
            c => s.push(c),
        }
    }
    OsString::from(s)
}

fn push_percent(s: &mut String, c: char) {
    let mut b = [0u8; 4];
    for byte in c.encode_utf8(&mut b).bytes() {
        s.push_str(&format!("%{byte:02X}"));
    }
}

/// A session's directory name for the id its file holds: the id itself, or, when it
/// cannot be a file name as it is (empty, `.`, `..`, a `/`, a control character, a
/// leading `%`), `%` and the id with `%`, `/` and control characters percent-encoded,
/// as the mount escapes an entry's id.
pub fn session_name(id: &str) -> OsString {
    let plain = !(id.is_empty()
        || id == "."
        || id == ".."
        || id.starts_with('%')
        || id.contains('/')
        || id.chars().any(char::is_control));
    if plain {
        return OsString::from(id);
    }
    let mut s = String::from("%");
    for c in id.chars() {
        match c {
            '%' => s.push_str("%25"),
            '/' => s.push_str("%2F"),
            c if c.is_control() => push_percent(&mut s, c),
            c => s.push(c),
        }
    }
    OsString::from(s)
}

/// What a session file's first lines say.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Head {
    pub session_id: Option<String>,
    pub kind: Option<String>,
    /// Whether a message the CLI counts (any record but the `<session_context>` and
    /// slash commands) is in it.
    pub conversation: bool,
}

/// Reads a session file until its first message the CLI counts (or its end), taking
/// the metadata's `sessionId` and `kind` on the way.
pub fn head(path: &Path) -> Option<Head> {
    // A regular file only, never blocking (a FIFO in a sessions folder).
    let f = crate::model::core::input::open_regular(path).ok()?;
    let mut h = Head::default();
    let mut r = BufReader::new(f);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match r.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        // A line still being written is not read yet.
        if buf.last() != Some(&b'\n') {
            break;
        }
        let raw = &buf[..buf.len() - 1];
        let Some(t) = Tape::new(raw) else { continue };
        if crate::model::core::js::parse_line(raw).is_err() {
            continue;
        }
        let mut counts = |rec: crate::model::core::json_view::Raw<'_>| {
            if let Some(rh) = line::rec_head(rec)
                && !(rh.ty.as_deref() == Some("user") && rh.ignored)
            {
                h.conversation = true;
            }
        };
        match line::kind_of(t.root()) {
            Kind::Meta(o) => {
                let s = |k: &str| o.get(k).and_then(|v| v.as_str()).map(|v| v.into_owned());
                if h.session_id.is_none() {
                    h.session_id = s("sessionId");
                }
                if h.kind.is_none() {
                    h.kind = s("kind");
                }
                if let Some(list) = o.get("messages").and_then(|m| m.items()) {
                    list.for_each(&mut counts);
                }
            }
            Kind::Record(r) => counts(r),
            Kind::Set(o) => {
                if let Some(list) = o.get("messages").and_then(|m| m.items()) {
                    list.for_each(&mut counts);
                }
                if let Some(sid) = o.get("sessionId").and_then(|v| v.as_str()) {
                    h.session_id.get_or_insert_with(|| sid.into_owned());
                }
            }
            _ => {}
        }
        if h.conversation && h.session_id.is_some() {
            break;
        }
    }
    Some(h)
}

/// A file's size and modification time (ns) when its head was read, and its head.
type Seen = (u64, i64, Option<Head>);

/// Lists `tmp/` folders, remembering what it read of each file.
#[derive(Debug, Default)]
pub struct Scanner {
    /// Path → (size, mtime ns, what it said).
    heads: Mutex<HashMap<PathBuf, Seen>>,
}

impl Scanner {
    pub fn head(&self, path: &Path) -> Option<Head> {
        let md = fs::metadata(path).ok()?;
        let sig = (md.len(), md.mtime() * 1_000_000_000 + md.mtime_nsec());
        if let Some((l, m, h)) = self.heads.lock().get(path)
            && (*l, *m) == sig
        {
            return h.clone();
        }
        // Kept between searches while the file is as it was (`core::memo`).
        let h = crate::model::core::memo::get("gemini-head", path, || head(path));
        self.heads
            .lock()
            .insert(path.to_path_buf(), (sig.0, sig.1, h.clone()));
        h
    }

    /// The sessions under `root` (a `tmp/` folder), by project.
    pub fn scan(&self, root: &Path) -> std::io::Result<Catalog> {
        let mut cat = Catalog {
            folders: vec![root.to_path_buf()],
            ..Catalog::default()
        };
        let home = root.parent().unwrap_or(root);
        let projects = super::files::Projects::read(home);
        let mut slugs: Vec<PathBuf> = listing::read_dir(root)?
            .into_iter()
            .map(|e| e.into_path())
            .collect();
        slugs.sort();
        for slug_dir in slugs {
            let chats = slug_dir.join("chats");
            let Ok(rd) = listing::read_dir(&chats) else {
                continue;
            };
            cat.folders.push(chats.clone());
            let slug = slug_dir
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let project = match projects.project_of(home, &slug) {
                Some(p) => project_name(&p),
                // A folder's own name, its control characters escaped.
                None => {
                    let mut s = String::new();
                    for c in slug.chars() {
                        if c.is_control() {
                            push_percent(&mut s, c);
                        } else {
                            s.push(c);
                        }
                    }
                    OsString::from(s)
                }
            };
            // Session id → (has conversation, file name, path): the file to show.
            let mut best: HashMap<String, (bool, OsString, PathBuf)> = HashMap::new();
            for e in rd {
                let name = e.file_name().to_os_string();
                let b = name.as_bytes();
                if !(b.starts_with(b"session-") && b.ends_with(b".jsonl")) {
                    continue;
                }
                let path = e.into_path();
                let Some(h) = self.head(&path) else { continue };
                let Some(sid) = h.session_id.clone() else {
                    continue;
                };
                if h.kind.as_deref() == Some("subagent") || !h.conversation {
                    continue;
                }
                let cand = (h.conversation, name.clone(), path);
                match best.get(&sid) {
                    // Two files with conversation: the newer name (the later start).
                    Some(old) if (old.0, &old.1) >= (cand.0, &cand.1) => {}
                    _ => {
                        best.insert(sid, cand);
                    }
                }
            }
            if best.is_empty() {
                continue;
            }
            let list = cat.projects.entry(project.clone()).or_default();
            for (sid, (_, _, path)) in best {
                list.push(SessionRef {
                    name: session_name(&sid),
                    path,
                    mtime: None,
                    files: Vec::new(),
                });
            }
            list.sort_by(|a, b| a.name.cmp(&b.name));
            list.dedup_by(|a, b| a.name == b.name);
        }
        Ok(cat)
    }
}

/// The agents' table's entry for Gemini CLI.
pub const CATALOG: CatalogOf = CatalogOf {
    root_of: sessions_root_of,
    holds_sessions,
    lister,
};

fn holds_sessions(root: &Path) -> std::io::Result<bool> {
    Ok(!Scanner::default().scan(root)?.projects.is_empty())
}

fn lister(root: &Path) -> Box<dyn Lister> {
    Box::new(FolderLister {
        root: root.to_path_buf(),
        scanner: Scanner::default(),
        last: Mutex::new(None),
    })
}

/// The lister of one `tmp/` folder.
struct FolderLister {
    root: PathBuf,
    scanner: Scanner,
    /// The last scan: where to look for a changed file.
    last: Mutex<Option<Catalog>>,
}

impl FolderLister {
    /// The file named `name` in one of the folders of the last scan.
    fn find(&self, name: &OsStr) -> Option<PathBuf> {
        let last = self.last.lock();
        last.as_ref()?
            .folders
            .iter()
            .map(|f| f.join(name))
            .find(|p| p.symlink_metadata().is_ok())
    }
}

impl Lister for FolderLister {
    fn scan(&self) -> std::io::Result<Catalog> {
        let c = self.scanner.scan(&self.root)?;
        *self.last.lock() = Some(c.clone());
        Ok(c)
    }

    /// A session's file (or a stub of a later start, which names the session it
    /// resumes), or a session's subagents' folder `chats/<sessionId>/`.
    fn session_of(&self, changed: &OsStr) -> Option<OsString> {
        if let Some(c) = &*self.last.lock()
            && let Some(s) = c
                .projects
                .values()
                .flatten()
                .find(|s| s.path.file_name() == Some(changed) || s.name == changed)
        {
            return Some(s.name.clone());
        }
        let path = self.find(changed)?;
        if path.is_dir() {
            return Some(changed.to_os_string());
        }
        self.scanner
            .head(&path)?
            .session_id
            .map(|id| session_name(&id))
    }

    /// A file not yet known to hold a message may just have got its first.
    fn changes_listing(&self, changed: &OsStr) -> bool {
        let b = changed.as_bytes();
        if !(b.starts_with(b"session-") && b.ends_with(b".jsonl")) {
            return false;
        }
        let Some(path) = self.find(changed) else {
            return true;
        };
        match self.scanner.heads.lock().get(&path) {
            Some((_, _, Some(h))) => !(h.conversation && h.session_id.is_some()),
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_samples_home_lists_each_session_once_by_project() {
        let home =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gemini/samples/gemini-home");
        let root = sessions_root_of(&home).unwrap();
        assert_eq!(sessions_root_of(&root), Some(root.clone()));
        let cat = Scanner::default().scan(&root).unwrap();
        let names: Vec<String> = cat
            .projects
            .keys()
            .map(|k| k.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "-home-dev-src-apierr",
                "-home-dev-src-big",
                "-home-dev-src-compress",
                "-home-dev-src-image",
                "-home-dev-src-qa",
                "-home-dev-src-sessfile",
                "-home-dev-src-sub",
                "-home-dev-src-tools",
                "-home-dev-src-tui",
            ]
        );
        // The stub of the second start of `compress` (same id, no conversation) is
        // not listed; the session is its first file.
        let compress = &cat.projects[OsStr::new("-home-dev-src-compress")];
        assert_eq!(compress.len(), 1);
        assert!(
            compress[0]
                .path
                .ends_with("session-2026-12-05T07-37-76c200a5.jsonl")
        );
        // `sessfile`: the copied session, the imported one; the import's stub is not.
        let sf = &cat.projects[OsStr::new("-home-dev-src-sessfile")];
        assert_eq!(sf.len(), 2);
        assert!(
            sf.iter()
                .any(|s| s.path.ends_with("session-1796456297366-a1baab5a.jsonl"))
        );
        // Subagents are not sessions of the project.
        assert_eq!(cat.projects[OsStr::new("-home-dev-src-sub")].len(), 1);
    }

    #[test]
    fn names_hold_no_slash_and_no_control_character() {
        assert_eq!(project_name("/home/dev/src/qa"), "-home-dev-src-qa");
        assert_eq!(project_name("/p\0q"), "-p%00q");
        assert_eq!(project_name("/x\u{1b}]0;t\u{7}"), "-x%1B]0;t%07");
        let id = "7fb7d652-217c-47ce-af29-36bb75378f8d";
        assert_eq!(session_name(id), id);
        assert_eq!(session_name(".."), "%..");
        assert_eq!(session_name(""), "%");
        assert_eq!(session_name("a/b\u{1b}%"), "%a%2Fb%1B%25");
    }
}
