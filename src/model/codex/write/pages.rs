//! The little of Codex's format the reply writer needs to read: page file names, the
//! lines of one page with their byte ranges, and the history a page reads through
//! `history_base` (CODEX-FORMAT.md §1, §3.1).
//!
//! This is deliberately not the reader the mount uses: the writer reads the few files
//! it writes next to, right before writing, and needs exact byte offsets rather than
//! an index. Every line is parsed with serde_json as it is; a line that is not JSON is
//! kept (it still occupies bytes) but has no value.

use serde_json::Value;
use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// How deep a `history_base` chain may go before it is taken for a loop. Codex's own
/// chains in the samples are at most 3 deep (a rewind page on a rewind page on a fork).
const MAX_BASE_DEPTH: usize = 64;

/// A page's file name: the one parser, [`crate::model::codex::files`]'s.
pub use crate::model::codex::files::PageName;

/// One line of a page: its bytes `[start, end)` (with the `\n`), and its JSON.
#[derive(Debug)]
pub struct Line {
    pub start: u64,
    pub end: u64,
    pub value: Option<Value>,
}

impl Line {
    pub fn ordinal(&self) -> Option<u64> {
        self.value.as_ref()?.get("ordinal")?.as_u64()
    }

    pub fn line_type(&self) -> Option<&str> {
        self.value.as_ref()?.get("type")?.as_str()
    }

    pub fn payload(&self) -> Option<&Value> {
        self.value.as_ref()?.get("payload")
    }

    /// A line that is part of what the model is sent (§2): the tree's nodes.
    pub fn is_node(&self) -> bool {
        matches!(self.line_type(), Some("response_item" | "compacted"))
    }

    /// A line that opens a turn (§2): the `event_msg` `task_started`, or the turn's
    /// `turn_context` (which follows it in files Codex writes).
    pub fn is_turn_start(&self) -> bool {
        match self.line_type() {
            Some("turn_context") => true,
            Some("event_msg") => {
                self.payload()
                    .and_then(|p| p.get("type"))
                    .and_then(Value::as_str)
                    == Some("task_started")
            }
            _ => false,
        }
    }
}

/// One page file, read whole.
#[derive(Debug)]
pub struct Page {
    pub path: PathBuf,
    pub name: PageName,
    /// The complete lines (each ends in `\n`).
    pub lines: Vec<Line>,
    /// The file's size; larger than the last line's end when the last line is torn.
    pub len: u64,
}

impl Page {
    pub fn read(path: &Path) -> io::Result<Page> {
        let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let name = PageName::parse(file_name).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is not a Codex rollout file name (rollout-<time>-<thread id>[_<page id>].jsonl)",
                    path.display()
                ),
            )
        })?;
        if name.compressed {
            return Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP));
        }
        let mut bytes = Vec::new();
        io::Read::read_to_end(
            &mut crate::model::codex::files::open_page(path)?,
            &mut bytes,
        )?;
        Ok(Page::from_bytes(path.to_path_buf(), name, &bytes))
    }

    pub fn from_bytes(path: PathBuf, name: PageName, bytes: &[u8]) -> Page {
        let mut lines = Vec::new();
        let mut start = 0usize;
        while let Some(n) = memchr::memchr(b'\n', &bytes[start..]) {
            let end = start + n + 1;
            let value = serde_json::from_slice::<Value>(&bytes[start..end - 1]).ok();
            lines.push(Line {
                start: start as u64,
                end: end as u64,
                value,
            });
            start = end;
        }
        Page {
            path,
            name,
            lines,
            len: bytes.len() as u64,
        }
    }

    /// The page's own `session_meta` payload (its first line).
    pub fn meta(&self) -> Option<&serde_json::Map<String, Value>> {
        let first = self.lines.first()?;
        if first.line_type() != Some("session_meta") {
            return None;
        }
        first.payload()?.as_object()
    }

    /// `history_base` of the page: the page id it starts with and the byte offset.
    pub fn history_base(&self) -> Option<(String, u64)> {
        let hb = self.meta()?.get("history_base")?;
        Some((
            hb.get("thread_id")?.as_str()?.to_string(),
            hb.get("end_byte_offset")?.as_u64()?,
        ))
    }

    /// Whether the file ends in the middle of a line (§10: Codex writes `\n` first).
    pub fn torn(&self) -> bool {
        self.lines.last().map_or(0, |l| l.end) < self.len
    }

    /// The ordinal Codex would give the next line: the last line's + 1 (§3.3). The
    /// last line that has one decides; a torn fragment has none.
    pub fn next_ordinal(&self) -> Option<u64> {
        self.lines
            .iter()
            .rev()
            .find_map(|l| l.ordinal())
            .map(|o| o + 1)
    }

    /// The index of the line with this ordinal (the first, if a damaged file repeats it).
    pub fn index_of_ordinal(&self, ordinal: u64) -> Option<usize> {
        self.lines.iter().position(|l| l.ordinal() == Some(ordinal))
    }
}

/// The `sessions` (or `archived_sessions`) folder a page sits in, three levels up, and
/// the Codex home above it.
pub fn roots_of(page: &Path) -> Option<(PathBuf, PathBuf)> {
    let day = page.parent()?;
    let sessions = day.parent()?.parent()?.parent()?;
    let base = sessions.file_name()?.to_str()?;
    if base != "sessions" && base != "archived_sessions" {
        return None;
    }
    Some((sessions.to_path_buf(), sessions.parent()?.to_path_buf()))
}

/// Every rollout file under a `sessions` folder (`YYYY/MM/DD/rollout-…`), plain files
/// preferred over `.zst` ones of the same page (§8).
pub fn all_pages(sessions: &Path) -> io::Result<Vec<(PathBuf, PageName)>> {
    let mut by_page: HashMap<String, (PathBuf, PageName)> = HashMap::new();
    for y in read_dirs(sessions)? {
        for m in read_dirs(&y)? {
            for d in read_dirs(&m)? {
                for e in fs::read_dir(&d)? {
                    let e = e?;
                    let Some(name) = e.file_name().to_str().and_then(PageName::parse) else {
                        continue;
                    };
                    match by_page.get(&name.page_id) {
                        Some((_, old)) if !old.compressed => {}
                        _ => {
                            by_page.insert(name.page_id.clone(), (e.path(), name));
                        }
                    }
                }
            }
        }
    }
    Ok(by_page.into_values().collect())
}

fn read_dirs(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir)? {
        let e = e?;
        if e.file_type()?.is_dir() {
            out.push(e.path());
        }
    }
    Ok(out)
}

/// How far thread `thread` reads page `page_id` through its pages' `history_base`
/// chains (§3.1): the largest `end_byte_offset` at which one of its pages' chains
/// reaches that page, or `None` when none does. A fork reads its parent's page only up
/// to where it was forked; the parent's later lines are not its history.
pub fn read_limit(
    thread: &str,
    page_id: &str,
    all: &[(PathBuf, PageName)],
) -> io::Result<Option<u64>> {
    let by_id: HashMap<&str, &PathBuf> = all.iter().map(|(p, n)| (n.page_id.as_str(), p)).collect();
    let mut best: Option<u64> = None;
    for (path, name) in all.iter().filter(|(_, n)| n.thread_id == thread) {
        if name.compressed {
            continue;
        }
        let mut cur = Page::read(path)?.history_base();
        let mut depth = 0;
        while let Some((base, end)) = cur {
            if base == page_id {
                best = best.max(Some(end));
                break;
            }
            depth += 1;
            let Some(p) = by_id.get(base.as_str()).filter(|_| depth < MAX_BASE_DEPTH) else {
                break;
            };
            cur = match Page::read(p) {
                Ok(b) => b.history_base(),
                // A compressed base is not read here; its own base is not reached.
                Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => None,
                Err(e) => return Err(e),
            };
        }
    }
    Ok(best)
}

/// The lines of a page's history up to byte `end` of the page, bases first, as Codex
/// reads them (§3.1): the complete lines within `[0, end_byte_offset)` of the base page,
/// recursively, then the page's own lines. Only the values are returned: the writer
/// looks for the last settings lines and the metadata counters in them.
pub fn history(page: &Page, end: u64, pages: &HashMap<String, PathBuf>) -> io::Result<Vec<Value>> {
    let mut chain: Vec<(Page, u64)> = Vec::new();
    let mut cur_base = page.history_base();
    while let Some((base_id, base_end)) = cur_base {
        if chain.len() >= MAX_BASE_DEPTH {
            return Err(io::Error::other(format!(
                "the history_base chain of {} is longer than {MAX_BASE_DEPTH} pages (a loop?)",
                page.path.display()
            )));
        }
        let path = pages.get(&base_id).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "the base page {base_id} of {} is missing: Codex cannot resume this thread either",
                    page.path.display()
                ),
            )
        })?;
        if PageName::parse(path.file_name().and_then(|n| n.to_str()).unwrap_or(""))
            .is_some_and(|n| n.compressed)
        {
            // A compressed base (§8) is not read here: what the writer looks for (the
            // last settings, the counters) is nearly always in the newer pages, which a
            // rewind page starts with its own settings lines. Codex reads it itself.
            break;
        }
        let base = Page::read(path)?;
        cur_base = base.history_base();
        chain.push((base, base_end));
    }
    let mut out = Vec::new();
    for (p, e) in chain.iter().rev() {
        out.extend(
            p.lines
                .iter()
                .filter(|l| l.end <= *e)
                .filter_map(|l| l.value.clone()),
        );
    }
    out.extend(
        page.lines
            .iter()
            .filter(|l| l.end <= end)
            .filter_map(|l| l.value.clone()),
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "01a2331d-9d4a-7781-acec-f35cf40a4d8b";
    const P: &str = "01a2331d-e874-78f0-936a-c859781591a5";

    #[test]
    fn names() {
        let n = PageName::parse(&format!("rollout-2026-12-01T19-38-47-{T}_{P}.jsonl")).unwrap();
        assert_eq!((n.thread_id.as_str(), n.page_id.as_str()), (T, P));
        assert_eq!(n.ts, "2026-12-01T19-38-47");
        assert!(!n.compressed);
        let n = PageName::parse(&format!("rollout-2026-12-01T19-38-47-{T}.jsonl.zst")).unwrap();
        assert_eq!(n.page_id, T);
        assert!(n.compressed);
        for bad in [
            format!("rollout-2026-12-01T19-38-47-{T}.json"),
            format!("rollout-2026-12-01-{T}.jsonl"),
            format!("rollout-2026-12-01T19-38-47-{}.jsonl", &T[1..]),
            format!("rollout-2026-12-01T19-38-47-{T}_.jsonl"),
            format!("rollout-2026-12-01T19-38-47-{}.jsonl", T.to_uppercase()),
            "rollout-é.jsonl".to_string(),
        ] {
            assert_eq!(PageName::parse(&bad), None, "{bad}");
        }
    }

    #[test]
    fn lines_ordinals_and_torn_tail() {
        let name = PageName::parse(&format!("rollout-2026-12-01T19-38-47-{T}.jsonl")).unwrap();
        let bytes = b"{\"ordinal\":0,\"type\":\"session_meta\",\"payload\":{\"id\":\"x\"}}\nnot json\n{\"ordinal\":7,\"type\":\"response_item\"}\n{\"ordinal\":8,\"ty";
        let p = Page::from_bytes(PathBuf::from("x"), name, bytes);
        assert_eq!(p.lines.len(), 3);
        assert!(p.lines[1].value.is_none());
        assert!(p.torn());
        assert_eq!(p.next_ordinal(), Some(8));
        assert_eq!(p.index_of_ordinal(7), Some(2));
        assert!(p.lines[2].is_node());
        assert_eq!(p.meta().unwrap()["id"], "x");
        assert_eq!(p.history_base(), None);
    }
}
