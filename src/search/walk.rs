//! From the command line's FILE and DIR arguments to the session files to search,
//! in the order `grep -r` meets them through a mount of each argument, each with the
//! path prefix its hits get.

use super::session::Job;
use crate::model::input;
use crate::model::sessions_dir::{self, io_message as io_msg};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// An argument that could not be searched: its path, and the message (which names it).
#[derive(Debug)]
pub struct Problem {
    pub path: PathBuf,
    pub why: String,
}

impl Problem {
    fn io(path: &Path, e: &std::io::Error) -> Problem {
        Problem {
            path: path.to_path_buf(),
            why: format!("{}: {}", path.display(), io_msg(e)),
        }
    }
}

/// `a/b/` as `grep -r` prints it before a name: without trailing slashes.
fn display_prefix(arg: &Path) -> Vec<u8> {
    let b = arg.as_os_str().as_bytes();
    let t = b.len() - b.iter().rev().take_while(|&&c| c == b'/').count();
    if t == 0 && !b.is_empty() {
        return b"/".to_vec();
    }
    b[..t].to_vec()
}

fn join(prefix: &[u8], name: &OsStr) -> Vec<u8> {
    let mut v = prefix.to_vec();
    if !v.is_empty() && v != b"/" {
        v.push(b'/');
    }
    v.extend_from_slice(name.as_bytes());
    v
}

/// The jobs for `args` (with several arguments, each hit's path starts with its
/// argument), and the arguments or folders that could not be read.
pub fn jobs(args: &[PathBuf]) -> (Vec<Job>, Vec<Problem>) {
    let mut jobs = Vec::new();
    let mut problems = Vec::new();
    let several = args.len() > 1;
    for a in args {
        let prefix = if several {
            display_prefix(a)
        } else {
            Vec::new()
        };
        // A device or a FIFO is refused: reading it would never end, or never start.
        match input::argument(a) {
            // A session that is a folder (Copilot CLI's): its file.
            Ok(input::Argument::Dir) if let Some(f) = sessions_dir::session_folder_file(a) => jobs
                .push(Job {
                    path: f,
                    prefix,
                    explicit: true,
                }),
            Ok(input::Argument::Dir) => dir_jobs(a, &prefix, &mut jobs, &mut problems),
            // A database of sessions (opencode's): its sessions, as a mount lists them.
            Ok(input::Argument::File) if sessions_dir::is_listed_root(a) => {
                dir_jobs(a, &prefix, &mut jobs, &mut problems)
            }
            Ok(input::Argument::File) => jobs.push(Job {
                path: a.clone(),
                prefix,
                explicit: true,
            }),
            Err(r) => problems.push(Problem {
                path: a.clone(),
                why: r.0,
            }),
        }
    }
    (jobs, problems)
}

/// Keeps what the agents' listers read of files' heads between searches
/// (`core::memo`), in the cache directory, unless `SESSIONFS_CACHE=off`; the caller
/// saves it (`core::memo::save`) once done.
pub fn remember_heads() {
    use crate::model::core::memo;
    if let Some(dir) = super::cache::base_dir_from_env() {
        // A cache folder made before they were private: closed now, not at its next
        // write (a search of files that did not change writes nothing).
        if dir.is_dir() {
            let _ = memo::private_dir(&dir);
        }
        memo::enable(dir.join(memo::FILE_NAME));
    }
}

/// The jobs for every agent's sessions directory (`sessions_dir::agents`), each hit's
/// path starting with the agent's folder (`pi/`, `claude/`), as in a mount of every
/// agent; on at most `threads` threads (`--threads`; 0: one per agent).
pub fn agent_jobs(agents: &[(&'static str, PathBuf)], threads: usize) -> (Vec<Job>, Vec<Problem>) {
    // By default each agent's folder on a thread of its own, more than the CPUs:
    // listing is system calls and small reads (a Codex rollout's first line), which
    // wait on the kernel, and the agents' folders are apart.
    let threads = match threads {
        0 => agents.len(),
        n => n.min(agents.len()),
    };
    let each = par_map(agents, threads, |(folder, dir)| {
        let mut jobs = Vec::new();
        let mut problems = Vec::new();
        dir_jobs(dir, folder.as_bytes(), &mut jobs, &mut problems);
        (jobs, problems)
    });
    let mut jobs = Vec::new();
    let mut problems = Vec::new();
    for (j, p) in each {
        jobs.extend(j);
        problems.extend(p);
    }
    (jobs, problems)
}

/// `f` of each of `items`, in their order, computed on up to `threads` threads
/// taking the next item as they finish one (the items may cost very differently).
pub fn par_map<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let threads = threads.clamp(1, items.len().max(1));
    if threads == 1 {
        return items.iter().map(f).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut out: Vec<(usize, R)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(item) = items.get(k) else { break };
                        mine.push((k, f(item)));
                    }
                    mine
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    out.sort_unstable_by_key(|(k, _)| *k);
    out.into_iter().map(|(_, r)| r).collect()
}

/// A sessions directory: its projects' sessions, then its loose sessions. The root of
/// an agent that lists its sessions itself (a Codex home or `sessions/` folder): its
/// sessions by project, as a mount lists them.
fn dir_jobs(dir: &Path, prefix: &[u8], jobs: &mut Vec<Job>, problems: &mut Vec<Problem>) {
    if let Some((_, lister, _)) = sessions_dir::catalog_of(dir, None) {
        match lister.scan() {
            Ok(cat) => {
                for (p, sessions) in &cat.projects {
                    let pprefix = join(prefix, p);
                    for t in sessions {
                        jobs.push(Job {
                            path: t.path.clone(),
                            prefix: join(&pprefix, &t.name),
                            explicit: false,
                        });
                    }
                }
            }
            Err(e) => problems.push(Problem::io(dir, &e)),
        }
        return;
    }
    let top = match sessions_dir::list(dir, true) {
        Ok(l) => l,
        Err(e) => {
            problems.push(Problem::io(dir, &e));
            return;
        }
    };
    // A session's shown name back to its file (`..jsonl` is shown as `%.`).
    let file = |d: &Path, stem: &OsStr| d.join(sessions_dir::with_ext(stem));
    for p in &top.projects {
        let pdir = dir.join(p);
        let pprefix = join(prefix, p);
        match sessions_dir::list(&pdir, false) {
            Ok(l) => {
                for s in &l.sessions {
                    jobs.push(Job {
                        path: file(&pdir, s),
                        prefix: join(&pprefix, s),
                        explicit: false,
                    });
                }
            }
            Err(e) => problems.push(Problem::io(&pdir, &e)),
        }
    }
    for s in &top.sessions {
        jobs.push(Job {
            path: file(dir, s),
            prefix: join(prefix, s),
            explicit: false,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn prefixes() {
        assert_eq!(display_prefix(Path::new("a/b/")), b"a/b");
        assert_eq!(display_prefix(Path::new("/")), b"/");
        assert_eq!(join(b"/", OsStr::new("x")), b"/x");
        assert_eq!(join(b"", OsStr::new("x")), b"x");
    }

    #[test]
    fn order_and_prefixes() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir(d.path().join("p2")).unwrap();
        fs::create_dir(d.path().join("p1")).unwrap();
        fs::write(d.path().join("p1/b.jsonl"), "").unwrap();
        fs::write(d.path().join("p1/a.jsonl"), "").unwrap();
        fs::write(d.path().join("p2/c.jsonl"), "").unwrap();
        fs::write(d.path().join("loose.jsonl"), "").unwrap();
        let (j, p) = jobs(&[d.path().to_path_buf()]);
        assert!(p.is_empty());
        let prefixes: Vec<String> = j
            .iter()
            .map(|j| String::from_utf8(j.prefix.clone()).unwrap())
            .collect();
        assert_eq!(prefixes, ["p1/a", "p1/b", "p2/c", "loose"]);
        let (j, p) = jobs(&[d.path().join("loose.jsonl"), d.path().join("nope")]);
        assert_eq!(j.len(), 1);
        assert_eq!(
            j[0].prefix,
            d.path().join("loose.jsonl").as_os_str().as_bytes()
        );
        assert_eq!(p.len(), 1);
    }

    #[test]
    fn codex_threads_by_project() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path().join(".codex");
        let day = home.join("sessions/2026/12/01");
        fs::create_dir_all(&day).unwrap();
        fs::write(home.join("session_index.jsonl"), "").unwrap();
        let t = "01a2331d-9d4a-7781-acec-f35cf40a4d8b";
        let meta = r#"{"timestamp":"2026-12-01T19:38:28.000Z","ordinal":0,"type":"session_meta","payload":{"cwd":"/w/a"}}"#;
        // A line after the session_meta: a thread of only that line is empty, and
        // not searched (as Codex's picker does not list it).
        let user = r#"{"timestamp":"2026-12-01T19:38:29.000Z","ordinal":1,"type":"response_item","payload":{"type":"message","role":"user","content":[]}}"#;
        let page = day.join(format!("rollout-2026-12-01T19-38-28-{t}.jsonl"));
        fs::write(&page, format!("{meta}\n{user}\n")).unwrap();
        for arg in [home.clone(), home.join("sessions")] {
            let (j, p) = jobs(&[arg]);
            assert!(p.is_empty());
            assert_eq!(j.len(), 1);
            assert_eq!(j[0].path, page);
            assert_eq!(j[0].prefix, format!("-w-a/{t}").as_bytes());
        }
    }
}
