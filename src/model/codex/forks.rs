//! Which threads continue a thread: the forks made from it, for the links a mount
//! shows between a fork and the entry of its parent it forked after (LAYOUT.md "Codex
//! threads").
//!
//! A fork names its parent (`session_meta.forked_from_id`, and a `history_base` into
//! one of the parent's pages, CODEX-FORMAT §3.2); the parent names none of its forks,
//! and nothing else does (`state_5.sqlite` has no such column). So the forks of a thread
//! are found by reading the first line of the other threads' first pages. That line
//! holds the base instructions (about 20 KB), but `forked_from_id` comes before them
//! (key order, §2): a short prefix of each first page tells whether it is a fork of
//! this thread, and only those are read to the end of their first line. A compressed
//! first page is decompressed as far as its first line for the same test.

use std::collections::HashMap;
use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::files::{self, PageFile, Root};
use super::page::SessionMeta;
use super::store::{Codex, NodeIx};
use crate::model::core::agent::SessionLink;

/// A fork of a thread, found in its home.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fork {
    /// The fork's thread id.
    pub thread: String,
    /// Its `cwd` (which names its project in a mount).
    pub cwd: String,
    /// The node of the parent it continues from: the last node within its
    /// `history_base`.
    pub node: NodeIx,
}

/// How much of a first page is read to find `forked_from_id` (it precedes `timestamp`,
/// `cwd` and the base instructions).
const PREFIX: usize = 2048;
/// The longest first line read for its `history_base` (see `codex_catalog`).
const MAX_META: u64 = 4 << 20;

/// The forks of thread `t` of `codex` among the first pages under `root` (a home, a
/// sessions folder; a single file has no neighbours to look at). Unreadable pages are
/// skipped: a fork that cannot be read cannot be linked.
pub fn forks_of(codex: &Codex, t: usize, root: &Root) -> Vec<Fork> {
    let root = match root {
        Root::File(_) => match root.codex_home() {
            Some(h) => Root::Home(h),
            None => return Vec::new(),
        },
        r => r.clone(),
    };
    let id = &codex.threads[t].id;
    let needle = format!("\"forked_from_id\":\"{id}\"");
    let mut out = Vec::new();
    for f in files::discover(&root) {
        if f.name.page_id != f.name.thread_id || &f.name.thread_id == id {
            continue;
        }
        match fork_meta(&f, needle.as_bytes()) {
            Ok(Some(meta)) => {
                if let Some(node) = origin(codex, &meta) {
                    out.push(Fork {
                        thread: f.name.thread_id.clone(),
                        cwd: meta.cwd.clone().unwrap_or_default(),
                        node,
                    });
                }
            }
            Ok(None) => {}
            Err(e) => log::debug!("{}: {e}", f.path.display()),
        }
    }
    out.sort_by(|a, b| a.thread.cmp(&b.thread));
    out
}

/// The `session_meta` of first page `f` when its first line has `needle` (this
/// thread's `forked_from_id`).
fn fork_meta(f: &PageFile, needle: &[u8]) -> io::Result<Option<SessionMeta>> {
    let head = if f.name.compressed {
        files::first_line(&f.path, MAX_META).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidData, "no first line within 4 MiB")
        })?
    } else {
        let mut buf = vec![0; PREFIX];
        let mut file = files::open_page(&f.path)?;
        let mut n = 0;
        while n < PREFIX {
            match file.read(&mut buf[n..])? {
                0 => break,
                k => n += k,
            }
        }
        buf.truncate(n);
        buf
    };
    let first = head.split(|&b| b == b'\n').next().unwrap_or(&[]);
    if memchr::memmem::find(first, needle).is_none() {
        return Ok(None);
    }
    let line = if f.name.compressed || head.contains(&b'\n') {
        first.to_vec()
    } else {
        first_line(&f.path)?
    };
    let v: serde_json::Value =
        serde_json::from_slice(&line).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    Ok(SessionMeta::from_payload(&v["payload"]))
}

/// The whole first line of a plain page (without its `\n`), at most [`MAX_META`] bytes.
fn first_line(path: &Path) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    files::open_page(path)?
        .take(MAX_META)
        .read_to_end(&mut out)?;
    let end = memchr::memchr(b'\n', &out).unwrap_or(out.len());
    out.truncate(end);
    Ok(out)
}

/// The node of `codex` a fork whose first page has `meta` continues from: the last node
/// within its `history_base` (the bytes decide, §3.1).
fn origin(codex: &Codex, meta: &SessionMeta) -> Option<NodeIx> {
    let hb = meta.history_base.as_ref()?;
    let p = codex.page(&hb.page_id)?;
    let h = codex.history(p, Some(hb.end_byte_offset));
    h.lines().rev().find_map(|r| codex.node_of(r))
}

/// A thread's project folder in a mount: its first page's `cwd`, named as the catalog
/// names it.
fn folder_of(codex: &Codex, t: usize) -> String {
    let cwd = codex
        .meta(t)
        .and_then(|m| m.cwd.clone())
        .unwrap_or_default();
    super::catalog::project_name(&cwd)
        .to_string_lossy()
        .into_owned()
}

/// For a fork (thread `t`): the parent thread and the entry of it the fork continues
/// from (the agent's `forked_from`).
pub fn forked_from(codex: &Codex, t: usize) -> Option<SessionLink> {
    let n = codex.fork_origin(t)?;
    let parent = codex.thread_of_node(n);
    Some(SessionLink {
        session: codex.threads[parent].id.clone(),
        folder: Some(folder_of(codex, parent)),
        entry: Some(codex.id(n).to_string()),
    })
}

/// How long a thread's list of forks is trusted before the home is looked at again:
/// forks are made while a thread is mounted, and looking costs a directory walk.
const FRESH: Duration = Duration::from_secs(1);

/// Forks by the point id of the node they continue from.
type ByPoint = HashMap<String, Vec<SessionLink>>;

/// The forks of a thread by the point id they continue from, found when first asked
/// and again when asked more than [`FRESH`] later (the agent's `forks_at`).
#[derive(Debug, Default)]
pub struct Links {
    found: Mutex<Option<(Instant, Arc<ByPoint>)>>,
}

impl Links {
    /// The forks made after node `n` of thread `t`, among the threads of `home`.
    pub fn at(&self, codex: &Codex, t: usize, home: Option<&Path>, n: NodeIx) -> Vec<SessionLink> {
        let Some(home) = home else {
            return Vec::new();
        };
        let map = {
            let mut found = self.found.lock();
            match &*found {
                Some((when, map)) if when.elapsed() < FRESH => map.clone(),
                _ => {
                    let mut map = ByPoint::new();
                    for f in forks_of(codex, t, &Root::Home(home.to_path_buf())) {
                        map.entry(codex.id(f.node)).or_default().push(SessionLink {
                            session: f.thread,
                            folder: Some(
                                super::catalog::project_name(&f.cwd)
                                    .to_string_lossy()
                                    .into_owned(),
                            ),
                            entry: None,
                        });
                    }
                    let map = Arc::new(map);
                    *found = Some((Instant::now(), map.clone()));
                    map
                }
            }
        };
        map.get(&codex.id(n)).cloned().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::codex::state::State;
    use std::path::PathBuf;

    fn own() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex/own/codex-home")
    }

    #[test]
    fn a_thread_knows_its_forks_and_where_they_start() {
        let root = Root::Home(own());
        let codex = Codex::load_with_state(&root, State::load(&own()));
        let own_t = codex
            .thread("01a23400-e6d3-71a0-9a66-4dd95b7695d2")
            .unwrap();
        let forks = forks_of(&codex, own_t, &root);
        assert_eq!(forks.len(), 1, "{forks:?}");
        assert_eq!(forks[0].thread, "01a23400-f640-7c03-91ec-79c99c0b6e60");
        assert_eq!(forks[0].cwd, "/home/dev/src/own");
        // The same node the fork's own history hangs under.
        let fork_t = codex.thread(&forks[0].thread).unwrap();
        assert_eq!(codex.fork_origin(fork_t), Some(forks[0].node));
        assert_eq!(
            codex.id(forks[0].node),
            "01a23400-e6d3-71a0-9a66-4dd95b7695d2:41"
        );
        // forkfork: the first thread has one fork, the middle one the other.
        let a = codex
            .thread("01a233fc-f62c-79e0-b2f3-257e7f73df38")
            .unwrap();
        let fa = forks_of(&codex, a, &root);
        assert_eq!(
            fa.iter().map(|f| f.thread.as_str()).collect::<Vec<_>>(),
            ["01a233fd-2142-7c21-82a7-deda48f72fc4"]
        );
        // A thread without forks.
        let parfail = codex
            .thread("01a233fd-8e4f-7f93-83c7-b38d978b73dc")
            .unwrap();
        assert_eq!(forks_of(&codex, parfail, &root), []);
    }

    #[test]
    fn a_compressed_parent_page_and_a_single_file_root() {
        let home = own()
            .parent()
            .unwrap()
            .parent()
            .unwrap()
            .join("own-zst/codex-home");
        let root = Root::Home(home.clone());
        let codex = Codex::load_with_state(&root, State::load(&home));
        let a = codex
            .thread("01a233fc-f62c-79e0-b2f3-257e7f73df38")
            .unwrap();
        let fa = forks_of(&codex, a, &root);
        assert_eq!(fa.len(), 1, "{fa:?}");
        // A file root looks in its home.
        let file = codex.pages[codex.threads[a].pages[0]].file.path.clone();
        let fr = Root::File(file);
        assert_eq!(forks_of(&codex, a, &fr), fa);
    }
}
