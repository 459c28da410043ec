//! The agent-neutral core of the model: what every agent's sessions share.
//!
//! * [`session`] indexes a session (tolerant of damage, lazy about content) over one
//!   or more files ([`session::Source`]) and catches up with appends; [`agent`] is the
//!   interface each agent implements and the session holds.
//! * [`scan`] and [`json_view`] read fields of a JSON line from its bytes ([`strict`]:
//!   as a `serde_json::Value` would); [`js`] is
//!   JavaScript's JSON semantics (`JSON.stringify`, truthiness, `Date`); [`text`] the
//!   rendering helpers agents share; [`genai`] the Gemini API's `Content` parts, which
//!   more than one agent stores (Gemini CLI, Qwen Code); [`id`], [`kind`], [`time`],
//!   [`base64`].
//! * [`input`] is what sessionfs agrees to read; [`check`] what it reports; [`tree`]
//!   draws the tree; [`content`] is what an entry's directory holds.
//! * [`catalog`] is how an agent that lays its files out otherwise than one file per
//!   session in project folders lists its sessions, and [`memo`] keeps what a lister
//!   read of a file's head between processes, under the file's [`stamp::Stat`]
//!   ([`listing`]: a folder's entries, under the folder's); [`fasthash`] hashes the
//!   keys of a search's maps of every file; [`grep`] is what an agent tells
//!   `sessionfs grep` about its formats; [`structure`] finds a JSON line's strings and
//!   braces 64 bytes at a time (for a map of a big file's ids).
//! * [`reply`] is what a reply is before an agent writes it; [`fork`] and [`usage`]
//!   the parts of forking and of usage that do not depend on the agent; [`problem`]
//!   what indexing reports.
//!
//! # Adding an agent
//!
//! ```text
//! src/model/
//!   core/        this folder: names no agent
//!   pi/          Pi: agent.rs implements core::agent::Agent
//!   claude/      Claude Code: agent.rs implements core::agent::Agent
//!   codex/       Codex: agent.rs, catalog.rs (its lister), search.rs (its rules)
//!   NAME/        a new agent: mod.rs, agent.rs (its index state implements Agent),
//!                search.rs (its rules for sessionfs grep)
//!   agents.rs    the agents' tables: detection, Session::open, SEARCH
//!   sessions_dir.rs  where each agent's sessions are (AGENTS), and how they are listed
//! ```
//!
//! 1. A folder `src/model/NAME/` whose index state implements [`agent::Agent`]: its
//!    `index_line` turns a line into an entry (id key, parent id key, timestamp,
//!    kind, flags) with [`session::Session::push_entry`] and friends. A format without
//!    parent links gives each entry the id key of the previous one as its parent.
//! 2. A session of several files: the agent adds each other file as a source
//!    ([`session::Session::add_source`], a plain file or bytes in memory, with a byte
//!    limit when only a prefix belongs to the session), sets [`session::Entry::file`]
//!    of the entries it pushes from it, indexes those files in
//!    [`agent::Agent::after_scan`] and says in [`agent::Agent::sources_moved`] when
//!    they grew or were rewritten; [`session::Session::replace_source`] swaps a
//!    source's representation (same bytes, offsets stay valid).
//!
//!    A session that is **rows of a database**, not lines of a file (opencode), fits
//!    the same index: it is named `CONTAINER/NAME` (the database file, then the
//!    session's id) and found by the agents' table's `member`, so a path names it as
//!    if the file were a folder (`Session::open`, `sessionfs check`, `grep`, `usage`,
//!    `fork` and the mount's single-session form take it). Its source 0 is the
//!    container, which the core never reads ([`agent::Agent::opaque_main_file`]); the
//!    agent reads the session's rows in one snapshot in `after_scan`, writes each
//!    record as one JSON line into a byte source in memory ([`session::SourceData::Bytes`])
//!    and pushes an entry per line, so the core renders, searches and caches it by byte
//!    ranges like any other. A row the other program updates in place (a message
//!    streaming) is not an appended line: the agent writes its new line into a new
//!    byte source and calls [`session::Session::rewrite_entry`] (same id, parent and
//!    place; the next [`session::Change`] lists it in `rewritten`, and the view forgets
//!    what it showed of it and the contexts below it); [`session::Session::move_entry`]
//!    repacks sources without changing anything shown. A row deleted or inserted
//!    before others is a rewrite of the session (`SourcesMoved::Rewritten`), which
//!    reloads it. Only the sessions in use hold their rows' bytes: listing a
//!    database's thousands of sessions is the lister's one query
//!    ([`catalog::Lister`]), and a session is read when entered.
//! 3. A variant of [`format::Format`] (a tag: it names agents, imports none; its
//!    [`format::Format::name`] and [`format::Format::program`]) and the agent's
//!    detection in `crate::model::agents`.
//! 4. Where its sessions are: an entry in `crate::model::sessions_dir::AGENTS` (its
//!    folder in a mount of every agent, the environment variable that moves its
//!    directory, the default directory, the folder its files live under). Sessions laid
//!    out as project folders of `NAME.jsonl` files need nothing more. Any other layout
//!    (pages filed by day, a folder per session, a database) gives the entry a
//!    [`catalog::CatalogOf`]: which folders are the agent's roots, and a
//!    [`catalog::Lister`] that lists a root's sessions by project, names the file
//!    each is opened from, the folders to watch, which session a changed file
//!    belongs to, and whether a write to a file can change the listing
//!    ([`catalog::Lister::changes_listing`]: a file that becomes a session only once
//!    something is written to it). The mount (`view::MultiView`), `sessionfs grep`,
//!    `usage` and `check` list every agent through it.
//! 5. What differs per agent in the mount is asked of the trait, never of the
//!    [`format::Format`] tag: `labels_writable`, `writes_side_folder`, `entry_file`,
//!    `watched_dirs`, `forked_from`/`forks_at` and the rest of the table in [`agent`].
//! 6. For `sessionfs grep`: a `search.rs` in the folder with one [`grep::Rules`] per
//!    format (or version) the agent writes: what its renderer adds to a raw line
//!    (decorations and their triggers, computed numbers, rewritten lines, binary
//!    content), whether a line renders alone (`line_content`), side files, text taken
//!    from a parent, spilled files (a candidate line yields every entry whose bytes
//!    lie inside it, so a line may hold several entries' records); optionally
//!    [`grep::HitPaths`], how a hit is placed without the index (a map of the file's
//!    lines the search builds and caches, or the lines before the hits). Its rules go in `crate::model::agents::SEARCH`
//!    (`rules`, and its detection from the first parsed line in `detect`). Until then
//!    its files are searched without prefilter: every entry rendered, slower, never
//!    wrong. The search's tests check every agent's rules against every fixture
//!    (`search::prefilter`'s explanation test); add a property test that the prefilter
//!    never drops a line (`tests/search_props*.rs`) and the agent's fixtures to
//!    `tests/search.rs` (equal to `grep -r` through a mount).
//! 7. **Files.** The session file is opened by the core ([`input::open_regular`]: a
//!    regular file, never blocking). Every other file the agent reads (a transcript, a
//!    title or index file, a database) is opened with [`session::Session::open_side`]
//!    or [`session::Session::read_side`] ([`input::open_beneath`]): only inside the
//!    agent's folder (the session file's folder, or the folders the agent names with
//!    [`session::Session::set_homes`]), only a regular file, never blocking, with a
//!    bound; a SQLite database is checked with it before SQLite opens it by name, and
//!    opened with `SQLITE_OPEN_NOFOLLOW`. `model::architecture` fails on any other
//!    `File::open` or `fs::read` of the model. Nothing else is needed for the mount to
//!    show the right owner and permission bits ([`input::Access`]: the session file's,
//!    narrowed by its sources', see [`session::Session::access`]).
//! 8. **Writes.** [`agent::Agent::refuses`] says, before anything is written, whether a
//!    reply, a name, a label or a fork would be refused: the file then shows no write
//!    bit and its `open` fails. The default asks the agent's own
//!    [`agent::Agent::build_line`] and [`agent::Agent::fork`] (refusing with
//!    `Unsupported`, `Refused`); an agent whose fork is costly to plan, or that writes
//!    its replies itself, answers on its own.
//! 9. "Newest first" ([`activity`]): the time a session was last active is the newest
//!    time the agent wrote in its files, never their modification time (a copy resets
//!    it). The default reads the top-level `timestamp` of the last JSON lines of the
//!    session file; an agent that keeps its times elsewhere (another key, a JSON
//!    document, a database) overrides [`agent::Agent::activity_in_tail`], and one
//!    whose session spans several files lists them in
//!    [`agent::Agent::activity_files`]. `sessionfs grep --sessions`, `sessionfs
//!    usage`'s `lastActivity` and a mount's session directories (`ls -t`) all read it,
//!    the mount without indexing the session (`crate::model::agents::last_activity`).
//!
//! `src/search/`, `src/view/` and `src/fuse/` name no agent: they reach one through
//! the trait, [`grep`], [`catalog`] and the tables, which `model::architecture`
//! checks on their source.
//!
//! What is shared between two agents moves here; `model::architecture`'s tests fail
//! when the core names an agent or one agent names another.
//!
//! # Layers (which file names which)
//!
//! Lowest first; a file names only files on its own line or above it (never one
//! below), which `model::architecture` checks file by file:
//!
//! 1. leaves: [`format`], [`catalog`], [`structure`], [`problem`] (what indexing reports, [`problem::LoadError`]),
//!    [`base64`], [`time`], [`js`], [`id`], [`kind`], [`scan`], [`json_view`], [`strict`],
//!    [`input`], [`text`], [`activity`], [`usage::prices`] (with [`usage::Tokens`]),
//!    [`genai`] (over [`text`], [`js`], [`base64`]);
//! 2. what a seam point returns, naming no session: [`fork_file`] (the file a fork
//!    makes, [`fork_file::Fresh`], [`fork_file::ForkError`]), [`reply`], and
//!    [`usage`]'s tables (`usage/mod.rs`: [`usage::Table`] and what it holds);
//! 3. [`session`]: the index and the agent trait in one file, because the trait
//!    takes `&Session` and the session holds `Box<dyn Agent>`; [`agent`] re-exports
//!    the trait under its own name and keeps its docs;
//! 4. on the session: [`fork`], [`append`], [`check`], [`tree`], [`content`], [`grep`]
//!    (which names [`content`]),
//!    [`usage::report`] and the tables' methods that read a session
//!    (`usage/of_session.rs`, [`usage::Table::build`] and the rest);
//! 5. the agents' folders (`pi/`: `index.rs` and the other files below `agent.rs`;
//!    `claude/`), then the agents' table `crate::model::agents`.
//!
//! # Locks and order
//!
//! The core takes no lock. A session is changed only through `&mut Session`
//! (`refresh`, `replace_with`); an agent's `&mut self` hooks run with the agent taken
//! out of the session for the call (`Session::with_agent`), so the agent cannot reach
//! itself through the session during them.

pub mod activity;
pub mod agent;
pub mod append;
pub mod base64;
pub mod catalog;
pub mod check;
pub mod content;
pub mod fasthash;
pub mod fork;
pub mod fork_file;
pub mod format;
pub mod genai;
pub mod grep;
pub mod id;
pub mod input;
pub mod js;
pub mod json_view;
pub mod kind;
pub mod listing;
pub mod memo;
pub mod problem;
pub mod reply;
pub mod scan;
pub mod session;
pub mod stamp;
pub mod strict;
pub mod structure;
pub mod text;
pub mod time;
pub mod tree;
pub mod usage;
