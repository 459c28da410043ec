//! Codex's threads as a mount lists them: by project, one directory per thread.
//!
//! Pi and Claude Code keep one folder per project, so a mount lists their folders as
//! they are. Codex does not: it files every page of every thread by the day it was
//! written (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<ts>-<threadId>[_<pageId>].jsonl`,
//! CODEX-FORMAT.md §1), and a thread can span several files and days. What a user
//! recognises is the project a thread ran in, so the mount groups threads by the `cwd`
//! of their first page's `session_meta` line, named the way Claude Code names its
//! project folders: every `/` (and `.`) of the path becomes `-`
//! (`/home/dev/src/tui` → `-home-dev-src-tui`). A thread is a directory named by its
//! thread id (a UUIDv7, so `ls` lists a project's threads oldest first), whatever
//! pages it has.
//!
//! Archived threads (`$CODEX_HOME/archived_sessions/`, the same layout, CODEX-FORMAT
//! §1) are listed in their projects beside the others: a thread is opened from its
//! page wherever it lies, and its history is read across both folders.
//!
//! Listing costs one directory read per day folder plus the first line of each page
//! that has not been seen before: a first line never changes (files are only appended
//! to), so the `cwd` read from it is kept for the life of the [`Scanner`].

use crate::model::core::listing;
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A page file's name, taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageName {
    /// `YYYY-MM-DDTHH-MM-SS`, when the page was created.
    pub stamp: String,
    /// The thread's id.
    pub thread: String,
    /// The page's own id, for a later page (`…_<pageId>.jsonl`); `None` for a
    /// thread's first page.
    pub page: Option<String>,
    /// A zstd-compressed page (`.jsonl.zst`).
    pub compressed: bool,
}

/// Parses `rollout-<YYYY-MM-DDTHH-MM-SS>-<threadId>[_<pageId>].jsonl[.zst]` (with
/// [`super::files::parse_file_name`], the one parser of page names).
pub fn parse_page_name(name: &OsStr) -> Option<PageName> {
    let n = super::files::parse_file_name(std::str::from_utf8(name.as_bytes()).ok()?)?;
    let page = (n.page_id != n.thread_id).then_some(n.page_id);
    Some(PageName {
        stamp: n.ts,
        thread: n.thread_id,
        page,
        compressed: n.compressed,
    })
}

/// The `sessions/` folder of a Codex home given as `dir`, or `dir` itself when it is
/// such a folder: a folder with a `sessions/` folder and one of the files Codex keeps
/// beside it (or pages in it), or a folder named `sessions` whose year folders hold
/// pages.
pub fn sessions_root_of(dir: &Path) -> Option<PathBuf> {
    let sessions = dir.join("sessions");
    // Files only Codex keeps (Claude Code has a `history.jsonl` too).
    let marks = ["state_5.sqlite", "session_index.jsonl"];
    if sessions.is_dir()
        && (marks.iter().any(|m| dir.join(m).exists()) || holds_pages(&sessions, 3))
    {
        return Some(sessions);
    }
    if dir.file_name() == Some(OsStr::new("sessions")) && holds_pages(dir, 3) {
        return Some(dir.to_path_buf());
    }
    None
}

/// Whether a page lies in `dir` or in its folders, `depth` levels down at most.
pub fn holds_pages(dir: &Path, depth: u32) -> bool {
    let Ok(rd) = listing::read_dir(dir) else {
        return false;
    };
    for e in rd {
        if parse_page_name(e.file_name()).is_some() {
            return true;
        }
        if depth > 0 && e.is_dir() && holds_pages(e.path(), depth - 1) {
            return true;
        }
    }
    false
}

/// The project folder name for a thread's working directory: `/` and `.` become `-`
/// (as Claude Code names its project folders), a control character (a NUL, which no
/// name may hold; a newline or an escape sequence, which must not reach a terminal
/// raw) its percent-encoded UTF-8 bytes (`%00`).
pub fn project_name(cwd: &str) -> OsString {
    if cwd.is_empty() {
        return OsString::from("unknown-project");
    }
    let mut s = String::with_capacity(cwd.len());
    for c in cwd.chars() {
        match c {
            '/' | '.' => s.push('-'),
            c if c.is_control() => {
                let mut b = [0u8; 4];
                for byte in c.encode_utf8(&mut b).bytes() {
                    s.push_str(&format!("%{byte:02X}"));
                }
            }
            c => s.push(c),
        }
    }
    OsString::from(s)
}

/// A thread as a mount lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadRef {
    /// The thread id: its directory's name.
    pub id: OsString,
    /// The file the thread is opened from: a plain page (the first page when it is
    /// plain), else its earliest page: opening any page opens the whole thread.
    pub path: PathBuf,
    /// Every page of the thread (one file per page, the plain one when both forms
    /// exist), oldest first: where its last activity is read
    /// (`crate::model::core::activity`).
    pub pages: Vec<PathBuf>,
}

/// Every thread under a `sessions/` folder, by project.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// Project folder name → its threads, sorted by id.
    pub projects: BTreeMap<OsString, Vec<ThreadRef>>,
    /// Thread id → its project folder name.
    pub project_of: HashMap<OsString, OsString>,
    /// Every folder holding pages, or folders that do (to watch).
    pub folders: Vec<PathBuf>,
    /// Threads not listed because they are empty ([`is_empty_thread`]); a change of
    /// their page (the first prompt) makes them listed.
    pub empty: std::collections::HashSet<OsString>,
}

/// What a page's first line says that a listing needs, kept per page: its `cwd` and,
/// for a plain page whose first line is surely a `session_meta` line, that line's
/// length.
#[derive(Debug, Clone, Default)]
struct First {
    cwd: Option<String>,
    meta_len: Option<u64>,
}

/// Lists `sessions/` folders, remembering the first lines it has read.
#[derive(Debug, Default)]
pub struct Scanner {
    cwd: Mutex<HashMap<PathBuf, First>>,
}

/// An empty thread: one plain page that holds its `session_meta` line and nothing
/// else. Codex leaves one when its picker starts a new thread and the user quits
/// before a prompt (measured with Codex 0.171.0: `tests/fixtures/codex/pickers`); it
/// writes no `threads` row for it, so `codex resume` does not list it, and neither does
/// the mount, `sessionfs grep` or `sessionfs usage`. The first prompt makes it a thread
/// like any other.
fn is_empty_thread(pages: &[(PathBuf, PageName)], meta_len: Option<u64>) -> bool {
    match (pages, meta_len) {
        ([(p, n)], Some(len)) if !n.compressed => fs::metadata(p).is_ok_and(|m| m.len() == len),
        _ => false,
    }
}

/// How deep pages lie below `sessions/` (`YYYY/MM/DD`).
const DEPTH: u32 = 3;

impl Scanner {
    /// The threads under `root` (a `sessions/` folder, or any folder holding pages).
    pub fn scan(&self, root: &Path) -> io::Result<Catalog> {
        let mut pages: Vec<(PathBuf, PageName)> = Vec::new();
        let mut folders = vec![root.to_path_buf()];
        fs::read_dir(root)?;
        walk(root, DEPTH, &mut pages, &mut folders);
        // Archived threads (`codex archive`) keep the same layout beside `sessions/`
        // (CODEX-FORMAT §1): listed in their projects like the others.
        if let Some(archived) = archived_beside(root) {
            folders.push(archived.clone());
            walk(&archived, DEPTH, &mut pages, &mut folders);
        }
        // Per thread: its pages (one file per page, plain preferred), and the file to
        // open it from.
        let mut by_thread: HashMap<String, Vec<(PathBuf, PageName)>> = HashMap::new();
        for (p, n) in pages {
            let v = by_thread.entry(n.thread.clone()).or_default();
            match v.iter_mut().find(|(_, o)| o.page == n.page) {
                Some(o) if o.1.compressed && !n.compressed => *o = (p, n),
                Some(_) => {}
                None => v.push((p, n)),
            }
        }
        let mut best: HashMap<String, PathBuf> = HashMap::new();
        for (t, v) in &mut by_thread {
            v.sort_by(|a, b| (&a.1.stamp, &a.1.page).cmp(&(&b.1.stamp, &b.1.page)));
            if let Some((p, _)) = v.iter().min_by(|a, b| rank(&a.1).cmp(&rank(&b.1))) {
                best.insert(t.clone(), p.clone());
            }
        }
        let mut cat = Catalog {
            folders,
            ..Catalog::default()
        };
        self.read_cwds(best.values().map(|p| p.as_path()));
        for (thread, path) in best {
            let first = self.first_of(&path);
            let pages = by_thread.remove(&thread).unwrap_or_default();
            let id = OsString::from(thread);
            if is_empty_thread(&pages, first.meta_len) {
                cat.empty.insert(id);
                continue;
            }
            let project = project_name(first.cwd.as_deref().unwrap_or_default());
            cat.project_of.insert(id.clone(), project.clone());
            cat.projects.entry(project).or_default().push(ThreadRef {
                id,
                path,
                pages: pages.into_iter().map(|(p, _)| p).collect(),
            });
        }
        for v in cat.projects.values_mut() {
            v.sort_by(|a, b| a.id.cmp(&b.id));
        }
        Ok(cat)
    }

    /// Reads the `cwd` of the pages not seen yet, on every CPU when they are many (the
    /// first listing of a big home, every listing of a search): each is a first line
    /// of some 20 KB to read and walk.
    fn read_cwds<'a>(&self, pages: impl Iterator<Item = &'a Path>) {
        let todo: Vec<&Path> = {
            let known = self.cwd.lock();
            pages.filter(|p| !known.contains_key(*p)).collect()
        };
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
        if todo.len() < 64 || threads < 2 {
            return;
        }
        let found: Vec<Vec<(&Path, First)>> = std::thread::scope(|s| {
            let per = todo.len().div_ceil(threads);
            let handles: Vec<_> = todo
                .chunks(per)
                .map(|c| s.spawn(move || c.iter().map(|&p| (p, read_first(p))).collect()))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect()
        });
        let mut known = self.cwd.lock();
        for (p, c) in found.into_iter().flatten() {
            // A page whose first line is not complete yet is read again next time.
            if c.cwd.is_some() {
                known.insert(p.to_path_buf(), c);
            }
        }
    }

    /// What the page at `path`'s `session_meta` line says (cached).
    fn first_of(&self, path: &Path) -> First {
        if let Some(c) = self.cwd.lock().get(path) {
            return c.clone();
        }
        let c = read_first(path);
        // A page whose first line is not complete yet is read again next time.
        if c.cwd.is_some() {
            self.cwd.lock().insert(path.to_path_buf(), c.clone());
        }
        c
    }
}

/// Codex's entry in the agents' table: its roots (a home or its `sessions/`), and its
/// lister (threads by project, from [`Scanner`]).
pub const CATALOG: crate::model::core::catalog::CatalogOf =
    crate::model::core::catalog::CatalogOf {
        root_of: sessions_root_of,
        holds_sessions: holds_threads,
        lister,
    };

/// Whether a `sessions/` folder holds a page (three folders down at most).
fn holds_threads(root: &Path) -> io::Result<bool> {
    fs::read_dir(root)?;
    Ok(holds_pages(root, DEPTH))
}

fn lister(root: &Path) -> Box<dyn crate::model::core::catalog::Lister> {
    Box::new(Lister {
        root: root.to_path_buf(),
        scanner: Scanner::default(),
    })
}

/// The threads under one `sessions/` folder, for the agents' table.
struct Lister {
    root: PathBuf,
    scanner: Scanner,
}

impl crate::model::core::catalog::Lister for Lister {
    fn scan(&self) -> io::Result<crate::model::core::catalog::Catalog> {
        use crate::model::core::catalog::{Catalog as Listed, SessionRef};
        let cat = self.scanner.scan(&self.root)?;
        Ok(Listed {
            projects: cat
                .projects
                .into_iter()
                .map(|(p, threads)| {
                    let v = threads
                        .into_iter()
                        .map(|t| SessionRef {
                            name: t.id,
                            path: t.path,
                            mtime: None,
                            files: t.pages,
                        })
                        .collect();
                    (p, v)
                })
                .collect(),
            folders: cat.folders,
            hidden: cat.empty,
        })
    }

    /// A page belongs to its thread (a new page is a rewind; Codex swaps a
    /// `.jsonl.zst` for its `.jsonl` before appending).
    fn session_of(&self, changed: &OsStr) -> Option<OsString> {
        parse_page_name(changed).map(|p| OsString::from(p.thread))
    }
}

/// The `archived_sessions/` folder beside a `sessions/` folder `root`, if there is one.
fn archived_beside(root: &Path) -> Option<PathBuf> {
    if root.file_name() != Some(OsStr::new("sessions")) {
        return None;
    }
    let a = root.parent()?.join("archived_sessions");
    a.is_dir().then_some(a)
}

/// First pages before later ones, plain before compressed, then oldest.
fn rank(n: &PageName) -> (bool, bool, String) {
    // A plain page first (a session opens from a plain file; any page of a thread
    // opens the whole thread), then the first page, then the oldest.
    (n.compressed, n.page.is_some(), n.stamp.clone())
}

fn walk(dir: &Path, depth: u32, pages: &mut Vec<(PathBuf, PageName)>, folders: &mut Vec<PathBuf>) {
    let Ok(rd) = listing::read_dir(dir) else {
        return;
    };
    for e in rd {
        let Some(kind) = e.kind_followed() else {
            continue;
        };
        if kind.is_file() {
            if let Some(n) = parse_page_name(e.file_name()) {
                pages.push((e.into_path(), n));
            }
        } else if kind.is_dir() && depth > 0 {
            let path = e.into_path();
            folders.push(path.clone());
            walk(&path, depth - 1, pages, folders);
        }
    }
}

/// The `cwd` of a page's first line (a compressed page's decompressed as far as that
/// line, §8); `None` for a first line not complete yet, or one that is not a
/// `session_meta` line.
#[cfg(test)]
fn read_cwd(path: &Path) -> Option<String> {
    super::head::head(path).cwd.clone()
}

/// What a page's first line says (see [`First`]).
fn read_first(path: &Path) -> First {
    let h = super::head::head(path);
    First {
        cwd: h.cwd.clone(),
        meta_len: h.meta_len,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "01a2331d-9d4a-7781-acec-f35cf40a4d8b";
    const P: &str = "01a2331d-e874-78f0-936a-c859781591a5";

    #[test]
    fn cwd_of_a_first_line() {
        let of = |l: &str| crate::model::codex::head::cwd_in(l.as_bytes());
        assert_eq!(
            of(r#"{"type":"session_meta","payload":{"id":"x","cwd":"/a\u0062","n":[1,{}]}}"#),
            Some("/ab".into())
        );
        assert_eq!(of(r#"{"type":"event_msg","payload":{"cwd":"/a"}}"#), None);
        assert_eq!(of(r#"{"type":"session_meta","payload":{"cwd":3}}"#), None);
        assert_eq!(of(r#"{"type":"session_meta","payload":[]}"#), None);
        assert_eq!(of(r#"{"type":"session_meta","payload":["/a"]}"#), None);
        assert_eq!(
            of(r#"{"type":"session_meta","payload":{"cwd":"/a","cwd":"/b"}}"#),
            Some("/b".into())
        );
        assert_eq!(of(r#"{"type":"session_meta","payload":{"cwd":"/a"}"#), None);
    }

    #[test]
    fn page_names() {
        let n = parse_page_name(OsStr::new(&format!(
            "rollout-2026-12-01T19-38-28-{T}.jsonl"
        )))
        .unwrap();
        assert_eq!((n.thread.as_str(), n.page, n.compressed), (T, None, false));
        assert_eq!(n.stamp, "2026-12-01T19-38-28");
        let n = parse_page_name(OsStr::new(&format!(
            "rollout-2026-12-01T19-38-47-{T}_{P}.jsonl.zst"
        )))
        .unwrap();
        assert_eq!((n.page.as_deref(), n.compressed), (Some(P), true));
        for bad in [
            format!("rollout-2026-12-01T19-38-28-{T}.json"),
            format!("rollout-2026-12-01-{T}.jsonl"),
            format!("rollout-2026-12-01T19-38-28-{T}_x.jsonl"),
            format!("x-2026-12-01T19-38-28-{T}.jsonl"),
            "rollout-.jsonl".to_string(),
        ] {
            assert_eq!(parse_page_name(OsStr::new(&bad)), None, "{bad}");
        }
    }

    // §8: a compressed first page is listed in its project, not in `unknown-project`.
    #[test]
    fn a_compressed_first_page_names_its_project() {
        let zst = Path::new(env!("CARGO_MANIFEST_DIR")).join(
            "tests/fixtures/codex/own-zst/codex-home/sessions/2026/12/01/\
             rollout-2026-12-01T23-42-25-01a233fc-f62c-79e0-b2f3-257e7f73df38.jsonl.zst",
        );
        assert_eq!(read_cwd(&zst).as_deref(), Some("/home/dev/src/forkfork"));
        // Not zstd: no cwd, and no panic.
        let d = tempfile::tempdir().unwrap();
        let bad = d.path().join("x.jsonl.zst");
        fs::write(&bad, b"{\"type\":\"session_meta\"}\n").unwrap();
        assert_eq!(read_cwd(&bad), None);
    }

    #[test]
    fn projects_look_like_paths() {
        assert_eq!(project_name("/home/dev/src/tui"), "-home-dev-src-tui");
        assert_eq!(project_name("/home/dev/.x"), "-home-dev--x");
        assert_eq!(project_name(""), "unknown-project");
        // A NUL can be in no name; an escape sequence must not reach a terminal.
        assert_eq!(project_name("/p\0q"), "-p%00q");
        assert_eq!(project_name("/x\u{1b}]0;t\u{7}"), "-x%1B]0;t%07");
    }

    fn page(dir: &Path, name: &str, cwd: &str) -> PathBuf {
        let p = empty_page(dir, name, cwd);
        let user = serde_json::json!({"timestamp":"2026-12-01T19:38:29.000Z","ordinal":1,
            "type":"response_item","payload":{"type":"message","role":"user",
            "content":[{"type":"input_text","text":"hi"}]}});
        let mut f = fs::OpenOptions::new().append(true).open(&p).unwrap();
        std::io::Write::write_all(&mut f, format!("{user}\n").as_bytes()).unwrap();
        p
    }

    /// A page of its `session_meta` line alone.
    fn empty_page(dir: &Path, name: &str, cwd: &str) -> PathBuf {
        fs::create_dir_all(dir).unwrap();
        let p = dir.join(name);
        let meta = serde_json::json!({"timestamp":"2026-12-01T19:38:28.000Z","ordinal":0,
            "type":"session_meta","payload":{"id":T,"cwd":cwd}});
        fs::write(&p, format!("{meta}\n")).unwrap();
        p
    }

    // An empty thread (one page of its session_meta alone: Codex's picker left it,
    // and does not list it) is not listed; its first prompt lists it.
    #[test]
    fn empty_threads_are_not_listed_until_their_first_line() {
        let home = tempfile::tempdir().unwrap();
        let day = home.path().join("sessions/2026/12/01");
        let e = empty_page(
            &day,
            &format!("rollout-2026-12-01T19-38-28-{T}.jsonl"),
            "/p/a",
        );
        let sc = Scanner::default();
        let cat = sc.scan(&home.path().join("sessions")).unwrap();
        assert!(cat.projects.is_empty(), "{:?}", cat.projects);
        assert!(cat.empty.contains(OsStr::new(T)));
        // Its first line after the session_meta lists it.
        let user = "{\"timestamp\":\"2026-12-01T19:38:29.000Z\",\"ordinal\":1,\"type\":\"response_item\"}\n";
        let mut f = fs::OpenOptions::new().append(true).open(&e).unwrap();
        std::io::Write::write_all(&mut f, user.as_bytes()).unwrap();
        let cat = sc.scan(&home.path().join("sessions")).unwrap();
        assert_eq!(cat.projects[OsStr::new("-p-a")][0].id, T);
        assert!(cat.empty.is_empty());
    }

    #[test]
    fn threads_grouped_by_cwd_and_opened_from_their_first_page() {
        let home = tempfile::tempdir().unwrap();
        fs::write(home.path().join("session_index.jsonl"), "").unwrap();
        let day = home.path().join("sessions/2026/12/01");
        let later = home.path().join("sessions/2026/12/02");
        let first = page(
            &day,
            &format!("rollout-2026-12-01T19-38-28-{T}.jsonl"),
            "/p/a",
        );
        page(
            &later,
            &format!("rollout-2026-12-02T10-00-00-{T}_{P}.jsonl"),
            "/p/a",
        );
        let other = "01a2331d-6282-7e72-8cca-35fb82ba4618";
        let alone = page(
            &later,
            &format!("rollout-2026-12-02T10-00-01-{other}_{P}.jsonl"),
            "/q",
        );
        fs::write(day.join("notes.txt"), "x").unwrap();
        let root = sessions_root_of(home.path()).unwrap();
        assert_eq!(root, home.path().join("sessions"));
        assert_eq!(sessions_root_of(&root).unwrap(), root);
        assert_eq!(sessions_root_of(&day), None);
        let cat = Scanner::default().scan(&root).unwrap();
        let names: Vec<_> = cat.projects.keys().cloned().collect();
        assert_eq!(names, ["-p-a", "-q"]);
        assert_eq!(
            cat.projects[OsStr::new("-p-a")],
            [ThreadRef {
                id: T.into(),
                path: first.clone(),
                pages: vec![
                    first,
                    later.join(format!("rollout-2026-12-02T10-00-00-{T}_{P}.jsonl"))
                ],
            }]
        );
        assert_eq!(cat.projects[OsStr::new("-q")][0].path, alone);
        assert_eq!(cat.project_of[OsStr::new(T)], "-p-a");
        assert!(cat.folders.contains(&later));
    }

    // §1: `archived_sessions/` beside `sessions/` is listed too, and watched.
    #[test]
    fn archived_threads_are_listed_in_their_projects() {
        let home = tempfile::tempdir().unwrap();
        let day = home.path().join("sessions/2026/12/01");
        let archived_day = home.path().join("archived_sessions/2026/11/20");
        page(
            &day,
            &format!("rollout-2026-12-01T19-38-28-{T}.jsonl"),
            "/p/a",
        );
        let old = "01a2331d-6282-7e72-8cca-35fb82ba4618";
        let archived = page(
            &archived_day,
            &format!("rollout-2026-11-20T10-00-00-{old}.jsonl"),
            "/p/a",
        );
        let cat = Scanner::default()
            .scan(&home.path().join("sessions"))
            .unwrap();
        let ids: Vec<_> = cat.projects[OsStr::new("-p-a")]
            .iter()
            .map(|t| t.id.clone())
            .collect();
        assert_eq!(ids, [OsString::from(old), OsString::from(T)]);
        assert_eq!(cat.projects[OsStr::new("-p-a")][0].path, archived);
        assert!(cat.folders.contains(&archived_day));
        // A folder not named `sessions` is searched as it is.
        let cat = Scanner::default().scan(&day).unwrap();
        assert_eq!(cat.projects[OsStr::new("-p-a")].len(), 1);
    }
}
