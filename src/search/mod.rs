//! `sessionfs grep`: search sessions as `grep -r` searches a mount of them, without
//! a mount.
//!
//! `sessionfs grep PATTERN ARG` prints what `grep -r PATTERN` prints at the root of
//! `sessionfs mount ARG MNT`, for the files that hold the entries' content (each
//! entry's KIND file and its images), with the same paths: `PROJECT/SESSION/ID/…/KIND`
//! for a sessions directory, `ID/…/KIND` for one session file. So a hit can be `cd`'d
//! into on a mount, and `-l`, `-c`, `-n`, `--color` and the exit status read as
//! grep's do.
//!
//! # How
//!
//! The search owns the mechanism; each agent supplies what its format means, from its
//! own folder, as a [`rules::Rules`] (`crate::model::core::grep`), chosen for a file
//! through the agents' table (`crate::model::agents::SEARCH`). The search names no
//! agent.
//!
//! Each session file is read once, raw, and a [`prefilter`] picks the lines that can
//! hold a match, looking for a fragment of the pattern's literals with the `regex`
//! crate's vectorised literal search; the format's rules say what its renderer adds
//! to a line, so that only lines that can match are picked. The entries on those lines
//! are rendered with the renderer the mount uses (`core::content`) and searched line
//! by line as grep would ([`grepfile`]): straight from the line where the format
//! renders a line alone, so a file is indexed (`Session`, for the paths) only when
//! something in it matches, and then, where the format places hits without the index
//! (a map of the file's ids built from its raw bytes and kept in the [`cache`]; the
//! lines before the hits in a one-page Codex thread), not even then. Other formats are
//! rendered after indexing. A session over several files (a Claude Code session's
//! subagents, a Codex thread's pages and the base pages its history reads) has them
//! all scanned raw. Files are searched on every CPU (one thread each, `--threads`),
//! and printed in order, each file's output as it comes.
//!
//! The search sees a session through [`session::Searchable`] (its entries in order,
//! each entry's directory name, id, KIND name and content files) and a format through
//! its [`rules::Rules`].
//!
//! # Guarantees
//!
//! * The hits are those of `grep -r` through a mount: the same text is searched (the
//!   KIND files are rendered by the same function), so JSON escapes, multi-line
//!   content and the text the renderer adds match as they do there. The prefilter is
//!   conservative (see its docs); `tests/search.rs` compares both on every fixture.
//! * Paths and their order are those of the mount: projects, then sessions, sorted
//!   by name, loose sessions after the projects; entries in pre-order, children in
//!   their format's order; an entry's KIND file, then its images, then a Claude Code
//!   tool result's `full-output`; a Claude Code subagent's tree under the entry that
//!   started it, as `agent-<id>`.
//! * Exit status as grep's: 0 if something matched, 1 if nothing did, 2 if an error
//!   occurred (even when something matched).
//!
//! # Limits
//!
//! * Patterns are grep's BRE, ERE or fixed strings, translated for the `regex` crate
//!   ([`pattern`] says how, and where that differs from grep); no back-references.
//! * Only content files are searched: not `session.json`, `name` or `tree`, whose
//!   text repeats the entries', nor `context` and `entry.json`, which `grep -r`
//!   through a mount does not read either (they are symbolic links).
//! * A file written while it is searched is searched as it was read, up to its last
//!   complete line; lines appended meanwhile may or may not be found.
//! * A session with a match is indexed whole to know its paths, except where its
//!   format places hits without the index (Pi's current format: a map of ids from one
//!   pass over the raw bytes, kept on disk for big files between searches, [`cache`],
//!   and the validation of the lines on the path; a one-page Codex thread); not with
//!   `-c` (every entry is printed), `--json` (a hit's leaves) or `--sessions`.
//! * In a directory with more than 10,000 entries, `grep -r` through a mount visits
//!   them in inode order (gnulib's fts sorts large directories); the order here is the
//!   listing order.

pub mod cache;
pub mod fresh;
pub mod grepfile;
pub mod index;
pub mod indexed;
pub mod output;
pub mod pattern;
pub mod prefilter;
pub mod progress;
pub mod rules;
pub mod session;
pub mod walk;

use crate::model::core::text::escape_controls;
use grepfile::Mode;
use output::{Colors, Printer};
use parking_lot::{Condvar, Mutex};
use pattern::{Pattern, Syntax};
use prefilter::Prefilter;
use session::{Chunk, Job, Report, Search};
use std::collections::BTreeMap;
use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};

/// When to colour the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// What `sessionfs grep` was asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// The pattern (lines separated by `\n`, any of which may match).
    pub pattern: String,
    pub syntax: Syntax,
    pub ignore_case: bool,
    pub word: bool,
    /// `-l`.
    pub list: bool,
    /// `-c`.
    pub count: bool,
    /// `-n`.
    pub line_numbers: bool,
    pub json: bool,
    /// `--sessions`: each matching session once, newest first.
    pub sessions: bool,
    pub color: ColorChoice,
    /// Session files and sessions directories; empty: every agent's sessions
    /// directory (`sessions_dir::agents`), under `pi/` and `claude/`.
    pub paths: Vec<PathBuf>,
    /// Threads to search with; 0: one per CPU.
    pub threads: usize,
    /// Where the index is, if one is used.
    pub index: IndexUse,
}

/// Whether a search uses the index ([`index`]), and which.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexUse {
    /// As the environment says: `$XDG_CACHE_HOME/sessionfs/index-1`, unless
    /// `SESSIONFS_CACHE=off` or `SESSIONFS_INDEX=off`.
    FromEnv,
    /// None: every file is read whole.
    Off,
    /// The index in this directory.
    At(PathBuf),
}

/// Exit statuses.
const MATCHED: u8 = 0;
const NO_MATCH: u8 = 1;
const TROUBLE: u8 = 2;

/// Runs `sessionfs grep`; returns grep's exit status.
pub fn run(opts: Options) -> ExitCode {
    // Like grep, end quietly when the reader goes away (`| head`).
    // SAFETY: restores the default action of a signal; no handler is involved.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let stdout = io::stdout();
    let mut out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
    // Not locked: the progress line is written from a thread of its own.
    let mut err = io::stderr();
    let code = run_with(opts, &mut out, &mut err, &|e| {
        eprintln!("sessionfs: write error: {e}");
        std::process::exit(TROUBLE as i32);
    });
    ExitCode::from(code)
}

/// `sessionfs grep` writing to `out` and `err`; `on_write_error` is told of an error
/// writing `out` (the command line exits). Returns grep's exit status.
pub fn run_with(
    opts: Options,
    out: &mut dyn Write,
    err: &mut dyn Write,
    on_write_error: &dyn Fn(io::Error),
) -> u8 {
    match run_inner(opts, out, err, on_write_error) {
        Ok(code) => code,
        Err(msg) => {
            let _ = writeln!(err, "sessionfs: {msg}");
            TROUBLE
        }
    }
}

fn run_inner(
    opts: Options,
    out: &mut dyn Write,
    err: &mut dyn Write,
    on_write_error: &dyn Fn(io::Error),
) -> Result<u8, String> {
    let pattern = Pattern::new(&opts.pattern, opts.syntax, opts.ignore_case, opts.word)?;
    // Without a path, every agent's sessions directory, each under its folder of a
    // mount of every agent (`pi/`, `claude/`).
    let agents = if opts.paths.is_empty() {
        Some(crate::model::sessions_dir::agents()?)
    } else {
        None
    };
    let colour = match opts.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            io::stdout().is_terminal() && std::env::var("TERM").is_ok_and(|t| t != "dumb")
        }
    } && !opts.json
        && !opts.sessions;
    let colors = colour.then(|| {
        let (c, warning) = Colors::from_env(
            std::env::var("GREP_COLOR").ok().as_deref(),
            std::env::var("GREP_COLORS").ok().as_deref(),
        );
        if let Some(w) = warning {
            let _ = writeln!(err, "sessionfs: {w}");
        }
        c
    });
    let mode = if opts.json || opts.sessions {
        Mode::Lines
    } else if opts.list {
        Mode::List
    } else if opts.count {
        Mode::Count
    } else {
        Mode::Lines
    };
    let mut search = Search {
        pattern,
        mode,
        json: opts.json,
        printer: Printer {
            colors,
            line_numbers: opts.line_numbers,
        },
        sessions: opts.sessions,
        prefilters: Vec::new(),
        scans: Default::default(),
        plans: None,
    };
    // A search takes the files as they are when it starts (each Codex home is listed
    // once, not once per thread opened).
    (crate::model::agents::SEARCH.begin)();
    walk::remember_heads();
    // `--threads`: every phase's threads, the listing's included.
    let threads = match opts.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let t0 = std::time::Instant::now();
    let pattern = &search.pattern;
    let make_prefilters = move || {
        rules::all()
            .iter()
            .map(|r| {
                (
                    r.name,
                    Prefilter::new(
                        &pattern.required,
                        r,
                        pattern.ignore_case,
                        mode == Mode::Count,
                    ),
                )
            })
            .collect::<Vec<_>>()
    };
    let list = || match &agents {
        Some(a) => walk::agent_jobs(a, opts.threads),
        None => walk::jobs(&opts.paths),
    };
    // While the files are listed: the prefilters made (a regex or two per format) and
    // the index's manifest read, which do not depend on them.
    let ((jobs, problems), prefilters, ix) = if threads == 1 {
        (list(), make_prefilters(), indexed::open(&opts.index))
    } else {
        std::thread::scope(|s| {
            let prefilters = s.spawn(make_prefilters);
            let ix = s.spawn(|| indexed::open(&opts.index));
            let listed = list();
            (
                listed,
                prefilters
                    .join()
                    .unwrap_or_else(|e| std::panic::resume_unwind(e)),
                ix.join().unwrap_or_else(|e| std::panic::resume_unwind(e)),
            )
        })
    };
    search.prefilters = prefilters;
    log::debug!("walk: {} jobs in {:?}", jobs.len(), t0.elapsed());
    // The heads the listing read, kept now: a search cut short (`| head` ends it with
    // SIGPIPE) would otherwise keep none, however often it ran.
    crate::model::core::memo::save();
    // Nothing to search is not "no match": say so, as `mount` does.
    for w in empty_folders(agents.as_deref(), &opts.paths) {
        let _ = writeln!(err, "sessionfs: warning: {w}; nothing was searched there");
    }
    let mut trouble = false;
    for p in &problems {
        let _ = writeln!(err, "sessionfs: {}", p.why);
        trouble = true;
    }
    // The index: brought up to date for these files, then asked what to read.
    let t1 = std::time::Instant::now();
    search.plans = progress::showing("indexing", |p| {
        indexed::prepare(&jobs, &search, ix, threads, Some(p))
    });
    log::debug!("index: plans in {:?}", t1.elapsed());
    let t2 = std::time::Instant::now();
    let (matched, errors) =
        search_all(&jobs, &search, threads, opts.json, out, err, on_write_error);
    log::debug!("search: {:?}", t2.elapsed());
    // And those the search read (a Codex page's, for its hits' paths).
    crate::model::core::memo::save();
    Ok(if trouble || errors {
        TROUBLE
    } else if matched {
        MATCHED
    } else {
        NO_MATCH
    })
}

/// Warnings for the sessions directories searched that hold no session: every
/// agent's when none holds one, else each DIR argument that holds none.
fn empty_folders(agents: Option<&[(&'static str, PathBuf)]>, paths: &[PathBuf]) -> Vec<String> {
    use crate::model::sessions_dir;
    match agents {
        Some(a) => sessions_dir::no_agent_sessions(a).into_iter().collect(),
        None => paths
            .iter()
            .filter(|p| p.is_dir())
            .filter_map(|p| sessions_dir::no_sessions(p, &p.display().to_string()))
            .collect(),
    }
}

/// What the workers have produced and the printer has not printed yet.
#[derive(Default)]
struct Board {
    /// The first job not yet printed in full.
    want: usize,
    /// Output of jobs from `want` on, and whether each is done.
    pending: BTreeMap<usize, (Vec<Chunk>, Option<Report>)>,
    matched: bool,
    errors: bool,
}

impl Board {
    /// Passes over the jobs at the front that are done and have nothing left to print.
    fn advance(&mut self) {
        while let Some((chunks, Some(r))) = self.pending.get(&self.want) {
            if !chunks.is_empty() {
                break;
            }
            self.matched |= r.matched;
            self.errors |= r.error;
            self.pending.remove(&self.want);
            self.want += 1;
        }
    }

    /// Whether the printer has something to do: output of the front job, or the end.
    fn ready(&self, jobs: usize) -> bool {
        self.want == jobs
            || self
                .pending
                .get(&self.want)
                .is_some_and(|(chunks, _)| !chunks.is_empty())
    }
}

/// Searches every job on `threads` threads, printing outcomes in job order: the
/// front job's output as it comes, the others' kept until their turn. The printer is
/// woken only when the front job has output, or at the end, so files without hits
/// cost it nothing. Returns whether anything matched and whether any error occurred.
fn search_all(
    jobs: &[Job],
    search: &Search,
    threads: usize,
    json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
    on_write_error: &dyn Fn(io::Error),
) -> (bool, bool) {
    let mut sessions: Vec<session::SessionHits> = Vec::new();
    let next = AtomicUsize::new(0);
    let board = Mutex::new(Board::default());
    let wake = Condvar::new();
    let n = jobs.len();
    let policy = crate::prio::search_policy();
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, n.max(1)) {
            let (next, board, wake) = (&next, &board, &wake);
            scope.spawn(move || {
                crate::prio::set(policy);
                let mut buf = Vec::new();
                let post = |k: usize, chunk: Option<Chunk>, done: Option<Report>| {
                    let mut b = board.lock();
                    let slot = b.pending.entry(k).or_default();
                    slot.0.extend(chunk);
                    if done.is_some() {
                        slot.1 = done;
                    }
                    b.advance();
                    if b.ready(n) {
                        wake.notify_one();
                    }
                };
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(job) = jobs.get(k) else { break };
                    let r = session::search_file(job, search, &mut buf, &mut |c| {
                        post(k, Some(c), None)
                    });
                    post(k, None, Some(r));
                }
            });
        }
        let mut failed = false;
        let mut b = board.lock();
        loop {
            b.advance();
            if b.want == n {
                break;
            }
            let want = b.want;
            match b.pending.get_mut(&want) {
                Some((chunks, _)) if !chunks.is_empty() => {
                    let chunks = std::mem::take(chunks);
                    drop(b);
                    for c in chunks {
                        if failed {
                            break;
                        }
                        let ok = match c {
                            Chunk::Out(bytes) => out.write_all(&bytes),
                            Chunk::Err(m) => out.flush().map(|_| {
                                let _ = writeln!(err, "sessionfs: {m}");
                            }),
                            Chunk::Session(h) => {
                                sessions.push(h);
                                Ok(())
                            }
                        };
                        if let Err(e) = ok {
                            failed = true;
                            on_write_error(e);
                        }
                    }
                    b = board.lock();
                }
                _ => wake.wait(&mut b),
            }
        }
        if !failed {
            let listed = print_sessions(out, &mut sessions, json);
            if let Err(e) = listed.and_then(|()| out.flush()) {
                on_write_error(e);
            }
        }
    });
    let b = board.into_inner();
    (b.matched, b.errors)
}

/// `--sessions`: the matching sessions, newest first (by last activity), one line each:
/// last activity, hits, path, name; or one JSON object each with `json`.
fn print_sessions(
    out: &mut dyn Write,
    sessions: &mut [session::SessionHits],
    json: bool,
) -> io::Result<()> {
    sessions.sort_by(|a, b| b.last_ms.cmp(&a.last_ms).then_with(|| a.path.cmp(&b.path)));
    for h in sessions.iter() {
        let last = crate::model::time::format_iso_ms(h.last_ms);
        if json {
            let v = serde_json::json!({
                "path": h.path,
                "session": h.file.to_string_lossy(),
                "name": h.name,
                "last_activity": last,
                "hits": h.hits,
            });
            writeln!(out, "{v}")?;
        } else {
            // A line sessionfs composes: nothing of a session's drives the terminal.
            let name = escape_controls(h.name.as_deref().unwrap_or(""));
            let path = escape_controls(&h.path);
            writeln!(out, "{last}  {:>6}  {path}  {name}", h.hits)?;
        }
    }
    Ok(())
}

/// The long help's closing section of `sessionfs grep --help`.
pub const HELP: &str = "\
Examples:
  sessionfs grep -rl parser                 every content file that mentions parser,
                                            in every agent's sessions on this machine
  sessionfs grep -in 'todo:' ~/.pi/agent/sessions/--home-dev-cli--
  sessionfs grep --json -F 'cargo test' s.jsonl | jq .path
  sessionfs grep --sessions -i 'flaky test'  the sessions that mention it, newest first:
                                            last activity, hits, path in the mount, name

Patterns: grep's basic regular expressions (default), extended (-E) or fixed strings
(-F), run by the regex crate: characters are Unicode, -i is Unicode simple case
folding, POSIX classes follow Unicode properties, and back-references are refused.

What is searched: each entry's KIND file and its images (as grep treats binary files:
a match prints \"PATH: binary file matches\" on standard error). Not session.json, name
or tree, nor the derived context files.

Paths deeper than PATH_MAX (about 450 entries deep) are printed whole, as grep -r
prints them through a mount; on a mount, open such an entry as MOUNT/.id/ID/ (--json
gives that path as id_path).

Exit status:
  0  something matched
  1  nothing matched
  2  an error occurred (a file could not be read, a bad pattern), even with matches";
