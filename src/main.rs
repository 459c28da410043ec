//! The `sessionfs` command line.

use clap::{Parser, Subcommand};
use sessionfs::fuse;
use sessionfs::model::{check, input};
use sessionfs::search;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "sessionfs",
    version,
    about = "Browse, grep and extend coding-agent sessions (Pi, Claude Code, Codex, Gemini CLI, Qwen Code, Copilot CLI) as a filesystem"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Report what is wrong with session files, line by line.
    ///
    /// A directory stands for every `.jsonl` file under it, at any depth (one report
    /// each, in path order): `sessionfs check ~/.pi/agent/sessions` checks them all.
    ///
    /// Exit status: 0 when every file is clean (notes aside), 1 when problems were
    /// found, 2 when a file could not be read. Never writes to the files.
    Check {
        /// Session files (.jsonl), or directories to search for them.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// One JSON object per file, one per line.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        limits: Limits,
    },
    /// Mount a session file, or a whole sessions directory, as a directory tree.
    ///
    /// `sessionfs mount MOUNTPOINT` shows every agent's sessions directory found, one
    /// folder each: pi/ ($PI_CODING_AGENT_DIR/sessions, else ~/.pi/agent/sessions),
    /// claude/ ($CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects), codex/
    /// ($CODEX_HOME/sessions, else ~/.codex/sessions), gemini/
    /// ($GEMINI_CLI_HOME/.gemini/tmp, else ~/.gemini/tmp), qwen/ ($QWEN_RUNTIME_DIR or
    /// $QWEN_HOME, then projects/, else ~/.qwen/projects) and copilot/
    /// ($COPILOT_HOME/session-state, else ~/.copilot/session-state); in each, one folder
    /// per project, one per session (a Codex thread) in it, each indexed only when first
    /// entered. `sessionfs mount DIR MOUNTPOINT` shows any directory laid out the same way
    /// (or a Codex home, or its sessions/ folder, or a Gemini CLI folder, or its tmp/
    /// folder, or a Qwen Code home or its projects/ folder; a Copilot CLI home, or its
    /// session-state/ folder), and `sessionfs mount FILE.jsonl MOUNTPOINT` one session (a
    /// Codex rollout file: its thread; a Copilot CLI session folder: its session).
    ///
    /// Every entry of a session becomes a directory under its parent; `cat`, `grep`
    /// and `ls` read it, and `echo TEXT > reply` appends a user message. The command
    /// stays in the foreground until the mount is unmounted (`sessionfs unmount
    /// MOUNTPOINT`) or it receives SIGINT, SIGTERM or SIGHUP, which unmount it. Errors
    /// are one line on standard error, starting with `sessionfs: `.
    #[command(after_long_help = fuse::mount::EXIT_STATUS_HELP, allow_missing_positional = true)]
    Mount {
        /// A session file (.jsonl: Pi's, Claude Code's, Qwen Code's, a Codex rollout file, a
        /// Gemini CLI session, a Copilot CLI session's events.jsonl or its folder), or a
        /// directory of sessions laid out as the agents keep them (project folders of .jsonl
        /// files, a Codex home or its sessions/ folder, a Gemini CLI folder or its tmp/
        /// folder, a Qwen Code home or its projects/ folder, a Copilot CLI home or its
        /// session-state/ folder).
        /// Default: every agent's sessions directory found.
        #[arg(value_name = "FILE|DIR")]
        file: Option<PathBuf>,
        /// An empty directory to mount it on.
        #[arg(value_name = "MOUNTPOINT")]
        mount_point: PathBuf,
        /// Refuse every write (EROFS).
        #[arg(long)]
        read_only: bool,
        /// Let other users (and root) use the mount; non-root users need
        /// `user_allow_other` in /etc/fuse.conf. Each session shows its file's owner,
        /// group and permission bits (a linked file: its target's; write bits only where
        /// the mount writes), and the kernel checks them: another user reads through the
        /// mount exactly the sessions the disk lets them read.
        #[arg(long)]
        allow_other: bool,
        /// Return once the mount is ready, leaving it served by a background process.
        #[arg(long)]
        background: bool,
        /// The largest message accepted through `reply` (bytes; K, M and G suffixes
        /// allowed); larger writes fail with EFBIG.
        #[arg(long, value_name = "BYTES", default_value = "16MiB", value_parser = fuse::mount::parse_size)]
        max_reply: usize,
        /// With a sessions directory: drop the least recently used session indexes
        /// once the loaded ones take more than this (bytes; K, M and G allowed).
        /// They are reloaded when used again.
        #[arg(long, value_name = "BYTES", default_value = "256MiB", value_parser = fuse::mount::parse_size)]
        max_index_memory: usize,
        /// With --background: append the log (see RUST_LOG) to this file instead of
        /// discarding it.
        #[arg(long, value_name = "FILE", requires = "background")]
        log: Option<PathBuf>,
        #[command(flatten)]
        limits: Limits,
        /// Price table for the `cost` files, in LiteLLM's model_prices_and_context_window.json
        /// format (default: the snapshot shipped with sessionfs)
        #[arg(long, value_name = "FILE")]
        prices: Option<PathBuf>,
    },
    /// Unmount a sessionfs mount.
    ///
    /// As root with umount(2), otherwise with `fusermount3 -u`, as a user's own FUSE
    /// mounts are unmounted. Only a sessionfs mount is unmounted: anything else at
    /// MOUNTPOINT is left alone. The `sessionfs mount` serving it then exits.
    #[command(after_long_help = fuse::unmount::EXIT_STATUS_HELP)]
    Unmount {
        /// Where it is mounted.
        #[arg(value_name = "MOUNTPOINT")]
        mount_point: PathBuf,
        /// Detach it now even if it is busy; programs still inside it see errors.
        #[arg(long)]
        lazy: bool,
    },
    /// Print a shell completion script.
    ///
    /// bash: `sessionfs completions bash > ~/.local/share/bash-completion/completions/sessionfs`;
    /// zsh: into a directory of your `$fpath`, as `_sessionfs`;
    /// fish: `sessionfs completions fish > ~/.config/fish/completions/sessionfs.fish`.
    Completions {
        /// The shell to complete for.
        #[arg(value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
    /// Search sessions as `grep -r` searches a mount of them, without mounting.
    ///
    /// Prints what `grep -r PATTERN` prints at the root of `sessionfs mount FILE|DIR
    /// MNT`, for the entries' content files (KIND files and images), with the same
    /// paths: `PROJECT/SESSION/ID/…/KIND:LINE` for a sessions directory,
    /// `ID/…/KIND:LINE` for a session file, so that a hit can be found on a mount.
    /// Reads the session files directly: no mount, no FUSE, no root.
    #[command(after_long_help = search::HELP)]
    Grep(GrepArgs),
    /// Build, refresh, show or drop the index that makes `sessionfs grep` fast.
    ///
    /// `sessionfs grep` keeps a trigram index of the session files it searches under
    /// $XDG_CACHE_HOME/sessionfs/index-1 (~/.cache/sessionfs/index-1), and brings it up
    /// to date for the files of every search before using it: a file appended to has
    /// its new lines indexed, a file rewritten is indexed again, and nothing is ever
    /// answered from postings of bytes that changed. `sessionfs index` does that ahead
    /// of time for every agent's sessions (or the FILEs and DIRs given), waiting for
    /// another process that is writing the index, and says what the index covers.
    /// Deleting the index loses nothing; SESSIONFS_CACHE=off (or SESSIONFS_INDEX=off
    /// for searches) turns it off; SESSIONFS_INDEX_MAX bounds its size (16G by
    /// default; files past the bound are searched without it).
    Index {
        /// Session files or sessions directories. Default: every agent's, as for grep.
        #[arg(value_name = "FILE|DIR")]
        paths: Vec<PathBuf>,
        /// Only say what the index covers; change nothing.
        #[arg(long, conflicts_with = "drop")]
        status: bool,
        /// Remove the index.
        #[arg(long)]
        drop: bool,
        /// Index with N threads (default: one per CPU).
        #[arg(long, value_name = "N", default_value_t = 0, hide_default_value = true)]
        threads: usize,
        #[command(flatten)]
        limits: Limits,
    },
    /// Copy a branch, from the root to ENTRY, into a new session file of its own.
    ///
    /// The new file is the one the agent itself writes when it forks there: Pi's
    /// `/fork` (at the entry: a new header naming the source as `parentSession`, the
    /// path without its label entries, the labels on it re-created), or Claude Code's
    /// `claude --resume SID --resume-session-at ENTRY --fork-session` (the chain copied
    /// under a new session id). It goes into the session's own folder, so the agent
    /// lists it and resumes it like any other; its path is printed. The source file is
    /// never written to. No mount needed: a mount does the same when `fork` is written
    /// (see docs/LAYOUT.md).
    ///
    /// Exit status: 0 when the fork was written, 1 when it cannot be made (no such
    /// entry, an ambiguous prefix, a path the agent cannot fork), 2 when a file could not
    /// be read or written.
    Fork {
        /// The session file (.jsonl, Pi's or Claude Code's).
        #[arg(value_name = "SESSION")]
        session: PathBuf,
        /// The entry to fork at: its id (Claude Code: the line's uuid), or the start of
        /// one that no other id shares.
        #[arg(value_name = "ENTRY")]
        entry: String,
    },
    /// Print the tokens and cost of sessions, ccusage-style, with each session's
    /// current branch, branches and dead ends; no mount needed
    #[command(after_long_help = USAGE_HELP)]
    Usage {
        #[arg(value_name = "FILE|DIR", help = paths_help(), long_help = paths_long_help())]
        paths: Vec<PathBuf>,
        /// Group by session (with its branches), project, day (UTC) or model
        #[arg(long, value_enum, default_value = "session")]
        by: UsageBy,
        /// Print JSON
        #[arg(long)]
        json: bool,
        /// Price table in LiteLLM's model_prices_and_context_window.json format
        /// (default: the snapshot shipped with sessionfs)
        #[arg(long, value_name = "FILE")]
        prices: Option<PathBuf>,
        #[command(flatten)]
        limits: Limits,
    },
}

/// What `grep` and `usage` read: the short help of their FILE|DIR operands, naming
/// every agent's folder (from the agents' table, so that an agent added there is
/// named here too).
fn paths_help() -> String {
    let folders: Vec<String> = sessionfs::model::sessions_dir::AGENTS
        .iter()
        .map(|a| format!("{}/", a.folder))
        .collect();
    format!(
        "Session files or sessions directories (default: every agent's sessions: {})",
        folders.join(", ")
    )
}

/// The long help of the same operands: every agent, its default directory and the
/// variable that moves it.
fn paths_long_help() -> String {
    let agents: Vec<String> = sessionfs::model::sessions_dir::AGENTS
        .iter()
        .map(|a| format!("{}/: {} (${} moves it)", a.folder, a.what, a.var))
        .collect();
    format!(
        "Session files (.jsonl), sessions directories laid out as an agent keeps them \
         (project folders of session files), or a Codex home. Default: every agent's \
         sessions found on this machine, as `sessionfs mount MOUNTPOINT` shows them: {}.",
        agents.join("; ")
    )
}

const USAGE_HELP: &str = "\
Pi's costs are the ones Pi recorded; Claude Code's and Codex's are their tokens priced \
with the table (each model an agent uses by default is in it, with its source and date; \
a model it lacks costs what the agent itself recorded for it where it did, as Claude \
Code's cost-state, else shows its tokens and an unknown cost, never zero). A reply \
copied into another session (a fork) counts once, in the session that started first. \
Through a mount, every entry has `cost` and `cost.json` (its own usage, and the total \
from the root to it: `cat branches/LEAF/cost` is a branch's), and the session's root has \
them for the whole session (see docs/LAYOUT.md, Usage).

Exit status: 0 done, 2 a bad command line, a FILE, DIR or the --prices table that \
cannot be read (missing, not permitted, not a regular file or directory, not a price \
table), or a session file that cannot be read (the others are reported all the same; \
inside a directory, a .jsonl that is no session is left out, as by grep).";

#[derive(Clone, Copy, clap::ValueEnum)]
enum UsageBy {
    Session,
    Project,
    Day,
    Model,
}

#[derive(clap::Args)]
struct GrepArgs {
    /// The pattern: a basic regular expression as grep's (-E: extended, -F: a fixed
    /// string); several patterns on separate lines match any of them.
    #[arg(value_name = "PATTERN", required_unless_present = "regexp")]
    pattern: Option<String>,
    #[arg(value_name = "FILE|DIR", help = paths_help(), long_help = paths_long_help())]
    paths: Vec<PathBuf>,
    /// Use PATTERN (may be given more than once; then every positional argument is a
    /// FILE or DIR).
    #[arg(short = 'e', long = "regexp", value_name = "PATTERN")]
    regexp: Vec<String>,
    /// PATTERN is an extended regular expression.
    #[arg(short = 'E', long = "extended-regexp", overrides_with_all = ["fixed_strings", "basic_regexp"])]
    extended_regexp: bool,
    /// PATTERN is a fixed string.
    #[arg(short = 'F', long = "fixed-strings", overrides_with_all = ["extended_regexp", "basic_regexp"])]
    fixed_strings: bool,
    /// PATTERN is a basic regular expression (the default).
    #[arg(short = 'G', long = "basic-regexp", overrides_with_all = ["extended_regexp", "fixed_strings"])]
    basic_regexp: bool,
    /// Ignore case distinctions (Unicode simple case folding).
    #[arg(short = 'i', long = "ignore-case")]
    ignore_case: bool,
    /// Match only whole words.
    #[arg(short = 'w', long = "word-regexp")]
    word_regexp: bool,
    /// Print only the paths of files with a match.
    #[arg(short = 'l', long = "files-with-matches")]
    files_with_matches: bool,
    /// Print the number of matching lines of every content file.
    #[arg(short = 'c', long = "count")]
    count: bool,
    /// Print each line's number in its file.
    #[arg(short = 'n', long = "line-number")]
    line_number: bool,
    /// Accepted for habit's sake: the search is always recursive.
    #[arg(short = 'r', long = "recursive", hide_short_help = true)]
    recursive: bool,
    /// As -r.
    #[arg(short = 'R', long = "dereference-recursive", hide = true)]
    dereference_recursive: bool,
    /// One JSON object per matching line: session file, entry id, the branch tips
    /// below it, KIND, file, paths, line number and text.
    #[arg(long, conflicts_with_all = ["files_with_matches", "count"])]
    json: bool,
    /// List each matching session once, newest first: its last activity (the newest
    /// time the agent wrote in its files, not their modification time), the number of
    /// matching lines, its path as a mount shows it, and its name. With --json: one
    /// object per session, whose `session` is the file of its last activity.
    #[arg(long, conflicts_with_all = ["files_with_matches", "count", "line_number"])]
    sessions: bool,
    /// Colour matches, paths and line numbers: auto (on a terminal, the default),
    /// always or never. GREP_COLORS sets the colours as for grep.
    #[arg(long, alias = "colour", value_name = "WHEN", value_enum, default_value = "auto",
          num_args = 0..=1, default_missing_value = "auto")]
    color: Color,
    /// Search with N threads (default: one per CPU).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        hide_short_help = true,
        hide_default_value = true
    )]
    threads: usize,
    #[command(flatten)]
    limits: Limits,
}

/// What every command that reads sessions accepts about their size.
#[derive(clap::Args)]
struct Limits {
    /// The longest line read (bytes; K, M and G suffixes allowed; 1MiB to 1GiB). A
    /// longer line is not an entry: it is reported as too long and skipped, without
    /// ever being held in memory, which stays bounded by the index plus one such line.
    #[arg(long, value_name = "BYTES", default_value = "64MiB", value_parser = parse_max_line, hide_short_help = true)]
    max_line: usize,
}

impl Limits {
    fn apply(&self) {
        input::set_max_line(self.max_line);
    }
}

fn parse_max_line(s: &str) -> Result<usize, String> {
    input::valid_max_line(fuse::mount::parse_size(s)?)
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Color {
    Auto,
    Always,
    Never,
}

/// When the program started, for the debug log's times.
static STARTED: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

fn main() -> ExitCode {
    STARTED.get_or_init(std::time::Instant::now);
    // The log says what it says as every other message does: `sessionfs: warning: …`,
    // `sessionfs: error: …` (and `info`; `debug` and `trace` with RUST_LOG, which also
    // name the module: `sessionfs: debug: fuser::request: FUSE(…)`).
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .format(|buf, rec| {
            use std::io::Write;
            let level = match rec.level() {
                log::Level::Error => "error",
                log::Level::Warn => "warning",
                log::Level::Info => "info",
                log::Level::Debug => "debug",
                log::Level::Trace => "trace",
            };
            if rec.level() >= log::Level::Debug {
                // What RUST_LOG=debug asks for: where each line comes from, and when
                // (milliseconds since the program started: where a command's time goes).
                let ms = STARTED
                    .get()
                    .map_or(0.0, |t| t.elapsed().as_secs_f64() * 1e3);
                writeln!(
                    buf,
                    "sessionfs: {level}: {ms:.1}ms {}: {}",
                    rec.target(),
                    rec.args()
                )
            } else {
                writeln!(buf, "sessionfs: {level}: {}", rec.args())
            }
        })
        .init();
    // `sessionfs manpages DIR` (scripts/man) writes the manual pages: a maintainer's
    // tool, kept out of the commands so that --help and completions do not offer it.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.len() == 3 && args[1] == "manpages" {
        return write_manpages(std::path::Path::new(&args[2]));
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    match cli.command {
        Command::Check {
            files,
            json,
            limits,
        } => {
            limits.apply();
            run_check(&files, json)
        }
        Command::Grep(a) => {
            a.limits.apply();
            run_grep(a)
        }
        Command::Index {
            paths,
            status,
            drop,
            threads,
            limits,
        } => {
            limits.apply();
            let mode = if drop {
                search::indexed::IndexMode::Drop
            } else if status {
                search::indexed::IndexMode::Status
            } else {
                search::indexed::IndexMode::Build
            };
            search::indexed::run_index(&paths, mode, threads)
        }
        Command::Fork { session, entry } => run_fork(&session, &entry),
        Command::Usage {
            paths,
            by,
            json,
            prices,
            limits,
        } => {
            limits.apply();
            run_usage(&paths, by, json, prices.as_deref())
        }
        Command::Unmount { mount_point, lazy } => fuse::unmount::run(&mount_point, lazy),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut cmd = Cli::command();
            clap_complete::generate(shell, &mut cmd, "sessionfs", &mut std::io::stdout());
            ExitCode::SUCCESS
        }
        Command::Mount {
            file,
            mount_point,
            read_only,
            allow_other,
            background,
            max_reply,
            max_index_memory,
            log,
            limits,
            prices,
        } => {
            limits.apply();
            if let Some(p) = &prices {
                match sessionfs::model::usage::prices::Prices::load(p) {
                    Ok(t) => sessionfs::model::usage::prices::set_global(t),
                    Err(e) => {
                        eprintln!("sessionfs: --prices {e}");
                        return ExitCode::from(3);
                    }
                }
            }
            if file.is_none() && looks_like_a_session_file(&mount_point) {
                use clap::CommandFactory;
                let mut cli = Cli::command();
                cli.build();
                let e = cli
                    .find_subcommand_mut("mount")
                    .expect("the mount subcommand")
                    .error(
                        clap::error::ErrorKind::MissingRequiredArgument,
                        format!(
                            "{} is a session file: give a mount point too \
                             (sessionfs mount FILE MOUNTPOINT)",
                            mount_point.display()
                        ),
                    );
                return usage_error(e);
            }
            fuse::mount::run(fuse::mount::MountArgs {
                file,
                mount_point,
                read_only,
                allow_other,
                background,
                max_reply,
                max_index_memory,
                log,
                prices,
                // The descriptor a --background parent waits on (see fuse::mount):
                // given in the environment, so that no option users could type (or
                // their shell's completion offer) exists for it.
                ready_fd: fuse::mount::take_ready_fd(),
            })
        }
    }
}

/// A mistake on the command line, said as every other error is: on standard error,
/// starting with `sessionfs: ` (clap's own start with `error: `), with its usage
/// line; exit status 2. `--help` and `--version` print as clap prints them.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    let text = e.render().to_string();
    let text = text.strip_prefix("error: ").unwrap_or(&text);
    eprint!("sessionfs: {text}");
    ExitCode::from(2)
}

/// The manual pages, one per command, from the same definitions as `--help`, with the
/// sections a manual page has beside them: EXIT STATUS (taken out of the help text,
/// where it is a paragraph of its own), ENVIRONMENT, FILES and SEE ALSO; inline code
/// (`` `x` `` in the help) in bold rather than between backticks.
fn write_manpages(dir: &std::path::Path) -> ExitCode {
    use clap::CommandFactory;
    let mut cmd = Cli::command().disable_help_subcommand(true);
    for sub in cmd.get_subcommands_mut() {
        let synopsis = synopsis(sub);
        *sub = std::mem::take(sub).override_usage(synopsis);
    }
    cmd.build();
    let mut pages = vec![cmd.clone()];
    pages.extend(cmd.get_subcommands().cloned());
    let written = std::fs::create_dir_all(dir).and_then(|()| {
        for page in pages {
            let (file, text) = man_page(page)?;
            std::fs::write(dir.join(file), text)?;
        }
        Ok(())
    });
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sessionfs: {}: {e}", dir.display());
            ExitCode::FAILURE
        }
    }
}

/// One manual page: its file name and text.
fn man_page(cmd: clap::Command) -> std::io::Result<(String, String)> {
    let name = cmd.get_display_name().unwrap_or(cmd.get_name()).to_string();
    // The exit status: the paragraph of the long help or the after-help that starts
    // with "Exit status", moved to a section of its own.
    let split = |t: Option<&clap::builder::StyledStr>| -> (Option<String>, Option<String>) {
        let Some(t) = t.map(|t| t.to_string()) else {
            return (None, None);
        };
        match t.find("Exit status") {
            Some(k) => {
                let rest = t[..k].trim_end().to_string();
                let exit = t[k..].to_string();
                ((!rest.is_empty()).then_some(rest), Some(exit))
            }
            None => (Some(t), None),
        }
    };
    let (about, exit_a) = split(cmd.get_long_about());
    let (after, exit_b) = split(cmd.get_after_long_help());
    let mut page = cmd.clone();
    if let Some(a) = &about {
        page = page.long_about(a.clone());
    }
    page = match &after {
        Some(a) => page.after_long_help(a.clone()),
        None => page.after_long_help(""),
    };
    // Every option described: clap_mangen leaves out the help of an option kept out
    // of `-h` (`--max-line`, `--threads`).
    let ids: Vec<clap::Id> = page.get_arguments().map(|a| a.get_id().clone()).collect();
    for id in ids {
        page = page.mut_arg(id, |a| a.hide_short_help(false));
    }
    let man = clap_mangen::Man::new(page.clone());
    let file = man.get_filename();
    let mut out: Vec<u8> = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    if page.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out)?;
    }
    if page.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(&mut out)?;
    }
    if after.is_some() {
        man.render_extra_section(&mut out)?;
    }
    let exit = exit_a.or(exit_b).unwrap_or_else(|| {
        "Exit status:\n  0  done\n  1  it failed\n  2  bad command line".to_string()
    });
    let mut text = String::from_utf8_lossy(&out).into_owned();
    text.push_str(".SH \"EXIT STATUS\"\n");
    let exit = exit
        .trim_start_matches("Exit status")
        .trim_start_matches(':');
    if exit.starts_with('\n') {
        // A table, one status a line.
        text.push_str(".nf\n");
        for l in exit.lines().filter(|l| !l.trim().is_empty()) {
            text.push_str(&roff_line(l.trim_start()));
            text.push('\n');
        }
        text.push_str(".fi\n");
    } else {
        text.push_str(&roff_line(exit.trim()));
        text.push('\n');
    }
    text.push_str(&environment_section());
    text.push_str(&files_section());
    text.push_str(&see_also(&name));
    if page.get_version().is_some() {
        let mut v = Vec::new();
        man.render_version_section(&mut v)?;
        text.push_str(&String::from_utf8_lossy(&v));
    }
    // Each section rendered alone starts with roff's quote definition: keep the first.
    const PREAMBLE: &str = ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n";
    let text = match text.split_once(PREAMBLE) {
        Some((head, rest)) => format!("{head}{PREAMBLE}{}", rest.replace(PREAMBLE, "")),
        None => text,
    };
    Ok((file, bold_code(&text)))
}

/// A line of text as roff reads it: backslashes doubled, a leading `.` or `'` escaped.
fn roff_line(l: &str) -> String {
    let l = l.replace('\\', "\\e").replace('-', "\\-");
    if l.starts_with('.') || l.starts_with('\'') {
        format!("\\&{l}")
    } else {
        l
    }
}

/// `` `code` `` in bold, the backticks gone.
fn bold_code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut parts = text.split('`');
    if let Some(first) = parts.next() {
        out.push_str(first);
    }
    let mut open = false;
    let rest: Vec<&str> = parts.collect();
    let n = rest.len();
    for (k, p) in rest.into_iter().enumerate() {
        // An unmatched last backtick stays as it is.
        if !open && k + 1 == n {
            out.push('`');
            out.push_str(p);
            break;
        }
        out.push_str(if open { "\\fR" } else { "\\fB" });
        out.push_str(p);
        open = !open;
    }
    out
}

/// The ENVIRONMENT section: what every command reads from the environment.
fn environment_section() -> String {
    let mut s = String::from(".SH ENVIRONMENT\n");
    for a in &sessionfs::model::sessions_dir::AGENTS {
        s.push_str(&format!(
            ".TP\n\\fB{}\\fR\nwhere {} is ({} when no source is given); a leading ~ is \
             the home directory\n",
            a.var,
            roff_line(a.what),
            roff_line(&format!("{}/ in a mount of every agent", a.folder)),
        ));
    }
    for (var, what) in [
        ("HOME", "the default directories of the agents are under it"),
        (
            "RUST_LOG",
            "how much the mount logs (warn by default; debug names every request that failed)",
        ),
        (
            "XDG_CACHE_HOME",
            "sessionfs grep keeps its maps of big Pi sessions in $XDG_CACHE_HOME/sessionfs (~/.cache/sessionfs)",
        ),
        ("SESSIONFS_CACHE", "off: sessionfs grep keeps no maps"),
        (
            "SESSIONFS_BACKGROUND",
            "off: sessionfs grep runs at normal priority while a mount is up (it yields the CPU otherwise)",
        ),
        (
            "GREP_COLORS, GREP_COLOR",
            "the colours of sessionfs grep --color, as grep's",
        ),
        (
            "COLUMNS",
            "the width sessionfs usage fits its table in (else the terminal's)",
        ),
    ] {
        s.push_str(&format!(".TP\n\\fB{var}\\fR\n{}\n", roff_line(what)));
    }
    s
}

/// The FILES section: what sessionfs reads and writes besides its arguments.
fn files_section() -> String {
    let mut s = String::from(".SH FILES\n");
    for (f, what) in [
        (
            "~/.pi/agent/sessions",
            "Pi's sessions (PROJECT/SESSION.jsonl)",
        ),
        (
            "~/.claude/projects",
            "Claude Code's sessions (PROJECT/SESSION.jsonl, side folders SESSION/)",
        ),
        (
            "~/.codex/sessions, ~/.codex/archived_sessions",
            "Codex's threads (YYYY/MM/DD/rollout-*.jsonl[.zst])",
        ),
        (
            "~/.codex/state_5.sqlite",
            "Codex's database: read for names and the current page; a reply at an earlier entry makes its new page current there",
        ),
        (
            "~/.cache/sessionfs",
            "the maps sessionfs grep keeps of big Pi sessions (at most 256 MiB; delete at any time)",
        ),
    ] {
        s.push_str(&format!(
            ".TP\n\\fI{}\\fR\n{}\n",
            roff_line(f),
            roff_line(what)
        ));
    }
    s
}

/// The SEE ALSO section of page `name`: the other pages, and the documents.
fn see_also(name: &str) -> String {
    let pages = [
        "sessionfs",
        "sessionfs-mount",
        "sessionfs-unmount",
        "sessionfs-check",
        "sessionfs-grep",
        "sessionfs-fork",
        "sessionfs-usage",
        "sessionfs-completions",
    ];
    let mut s = String::from(".SH \"SEE ALSO\"\n");
    let refs: Vec<String> = pages
        .iter()
        .filter(|p| **p != name)
        .map(|p| format!("\\fB{}\\fR(1)", roff_line(p)))
        .collect();
    s.push_str(&refs.join(", "));
    s.push_str(", \\fBgrep\\fR(1), \\fBfusermount3\\fR(1)\n.PP\n");
    s.push_str(
        "docs/COMMANDS.md (every command and option), docs/LAYOUT.md (every file of a mount), \
         docs/AGENTS.md, docs/LIMITS.md in the source tree\n",
    );
    s
}

/// A manual page's synopsis for subcommand `sub`: every option with its value
/// (clap_mangen's own leaves values out: `[--max-reply]`), then the operands.
fn synopsis(sub: &clap::Command) -> String {
    let mut out = format!("sessionfs {}", sub.get_name());
    let (operands, options): (Vec<&clap::Arg>, Vec<&clap::Arg>) = sub
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .partition(|a| a.is_positional());
    for a in options.into_iter().chain(operands) {
        let value = a
            .get_value_names()
            .map(|v| v.join(" "))
            .unwrap_or_else(|| a.get_id().as_str().to_uppercase());
        let takes_value = a.get_action().takes_values();
        let word = match (a.get_short(), a.get_long()) {
            (_, _) if a.is_positional() => value,
            (Some(s), Some(l)) if takes_value => format!("-{s}|--{l} {value}"),
            (Some(s), Some(l)) => format!("-{s}|--{l}"),
            (None, Some(l)) if takes_value => format!("--{l} {value}"),
            (None, Some(l)) => format!("--{l}"),
            (Some(s), None) => format!("-{s}"),
            (None, None) => continue,
        };
        let many = matches!(a.get_action(), clap::ArgAction::Append);
        let word = if many { format!("{word}...") } else { word };
        out.push(' ');
        if a.is_required_set() {
            out.push_str(&word);
        } else {
            out.push_str(&format!("[{word}]"));
        }
    }
    out
}

/// `sessionfs mount X` with one argument mounts the agents' sessions on X; an X
/// that is a session file is the common mistake of forgetting the mount point.
fn looks_like_a_session_file(p: &std::path::Path) -> bool {
    p.extension().is_some_and(|e| e == "jsonl") || p.is_file()
}

/// The sessions of the root of an agent that lists its sessions itself (a Codex
/// home or `sessions/` folder: each thread once, by the file it opens from, which
/// brings its other pages and the base pages its history reads), as a mount lists
/// them; `None` for a folder listed as on disk.
fn catalog_sessions(dir: &std::path::Path) -> Option<(Vec<PathBuf>, &'static str)> {
    let (_, lister, agent) = sessionfs::model::sessions_dir::catalog_of(dir, None)?;
    let cat = lister.scan().ok()?;
    let files = cat.projects.values().flatten().map(|t| t.path.clone());
    Some((files.collect(), agent.program))
}

fn run_check(args: &[PathBuf], json: bool) -> ExitCode {
    let mut code = 0u8;
    // (path, Some(report) when known without reading it)
    let mut files: Vec<(PathBuf, Option<check::Report>)> = Vec::new();
    for a in args {
        match input::argument(a) {
            // A session that is a folder (Copilot CLI's): its file.
            Ok(input::Argument::Dir)
                if let Some(f) = sessionfs::model::sessions_dir::session_folder_file(a) =>
            {
                files.push((f, None))
            }
            // A folder its agent lists, or a database of sessions (opencode's).
            Ok(_) if let Some((found, program)) = catalog_sessions(a) => {
                if found.is_empty() {
                    let why = format!("a {program} sessions folder with no session in it");
                    files.push((a.clone(), Some(check::Report::Unreadable(why))));
                }
                files.extend(found.into_iter().map(|f| (f, None)));
            }
            Ok(input::Argument::Dir) => {
                let found = check::session_files(a);
                if found.is_empty() {
                    // Nothing to check is not a clean bill of health.
                    let why = "a directory with no .jsonl file in it".to_string();
                    files.push((a.clone(), Some(check::Report::Unreadable(why))));
                }
                files.extend(found.into_iter().map(|f| (f, None)));
            }
            Ok(input::Argument::File) => files.push((a.clone(), None)),
            // A device or a FIFO is never read; a missing file is reported as before.
            Err(refusal) if a.exists() => {
                files.push((a.clone(), Some(check::Report::Refused(refusal.0))));
            }
            Err(_) => files.push((a.clone(), None)),
        }
    }
    for (f, known) in files {
        let r = known.unwrap_or_else(|| check::check(&f));
        if let (check::Report::Refused(why), false) = (&r, json) {
            // Word for word what `mount` says of it.
            eprintln!("sessionfs: {why}");
        } else if json {
            println!("{}", check::to_json(&f, &r));
        } else {
            print!("{}", check::to_text(&f, &r));
        }
        let c = match &r {
            check::Report::Unreadable(_) | check::Report::Refused(_) => 2,
            _ if r.has_problems() => 1,
            _ => 0,
        };
        code = code.max(c);
    }
    ExitCode::from(code)
}

fn run_fork(path: &std::path::Path, entry: &str) -> ExitCode {
    use sessionfs::model::fork;
    let fail = |code: u8, msg: String| {
        eprintln!("sessionfs: {msg}");
        ExitCode::from(code)
    };
    let folder_file = sessionfs::model::sessions_dir::session_folder_file(path);
    let path = folder_file.as_deref().unwrap_or(path);
    match sessionfs::model::input::argument(path) {
        Ok(sessionfs::model::input::Argument::File) => {}
        Ok(sessionfs::model::input::Argument::Dir) => {
            return fail(
                2,
                format!(
                    "{} is a directory: fork takes one session file (a .jsonl)",
                    path.display()
                ),
            );
        }
        Err(refusal) => return fail(2, refusal.to_string()),
    }
    let s = match sessionfs::model::Session::open(path) {
        Ok(s) => s,
        Err(sessionfs::model::LoadError::Io(e)) => {
            return fail(2, format!("{}: {e}", path.display()));
        }
        Err(e) => return fail(1, format!("{}: {e}", path.display())),
    };
    let made = fork::find_entry(&s, entry).and_then(|i| fork::fork(&s, i));
    match made {
        Ok(p) => {
            println!("{}", p.display());
            ExitCode::SUCCESS
        }
        Err(fork::ForkError::Io(e)) => fail(2, format!("{}: {e}", path.display())),
        Err(e) => fail(1, format!("{}: {e}", path.display())),
    }
}

fn run_usage(
    paths: &[PathBuf],
    by: UsageBy,
    json: bool,
    prices: Option<&std::path::Path>,
) -> ExitCode {
    use sessionfs::model::usage::{prices::Prices, report};
    let table = match prices {
        Some(p) => match Prices::load(p) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("sessionfs: --prices {e}");
                return ExitCode::from(2);
            }
        },
        None => Prices::snapshot(),
    };
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    let add_dir = |d: &std::path::Path, prefix: &str, files: &mut Vec<(PathBuf, String)>| {
        match report::files_of_dir(d) {
            Ok(found) => {
                files.extend(found.into_iter().map(|(f, p)| {
                    let p = match (prefix.is_empty(), p.is_empty()) {
                        (true, _) => p,
                        (false, true) => prefix.to_string(),
                        (false, false) => format!("{prefix}/{p}"),
                    };
                    (f, p)
                }));
                Ok(())
            }
            Err(e) => Err(format!(
                "{}: {}",
                d.display(),
                sessionfs::model::sessions_dir::io_message(&e)
            )),
        }
    };
    if paths.is_empty() {
        match sessionfs::model::sessions_dir::agents() {
            Ok(agents) => {
                for (folder, d) in agents {
                    if let Err(e) = add_dir(&d, folder, &mut files) {
                        eprintln!("sessionfs: {e}");
                        return ExitCode::from(2);
                    }
                }
            }
            Err(e) => {
                eprintln!("sessionfs: {e}");
                return ExitCode::from(2);
            }
        }
    }
    for p in paths {
        // A session that is a folder (Copilot CLI's): its file.
        let folder_file = sessionfs::model::sessions_dir::session_folder_file(p);
        let p = folder_file.as_ref().unwrap_or(p);
        // What every command refuses (a FIFO or a device would block or never end).
        let is_dir = match sessionfs::model::input::argument(p) {
            // A database of sessions counts as the folder of its sessions.
            Ok(arg) => {
                arg == sessionfs::model::input::Argument::Dir
                    || sessionfs::model::sessions_dir::is_listed_root(p)
            }
            Err(refusal) => {
                eprintln!("sessionfs: {refusal}");
                return ExitCode::from(2);
            }
        };
        if is_dir {
            if let Err(e) = add_dir(p, "", &mut files) {
                eprintln!("sessionfs: {e}");
                return ExitCode::from(2);
            }
        } else {
            let project = p
                .parent()
                .and_then(|d| d.file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            files.push((p.clone(), project));
        }
    }
    let by = match by {
        UsageBy::Session => report::By::Session,
        UsageBy::Project => report::By::Project,
        UsageBy::Day => report::By::Day,
        UsageBy::Model => report::By::Model,
    };
    let r = report::build(&files, &table);
    if json {
        print!("{}", r.json(by));
    } else {
        print!("{}", r.text_within(by, terminal_width()));
    }
    // As grep and check: a file that cannot be read, or one named on the command line
    // that is no session, is an error (exit status 2, after the report of the others);
    // inside a directory a file that is no session is left out, as a mount shows it
    // as an ERROR file rather than a session.
    let mut code = 0;
    for s in &r.skipped {
        if s.unreadable || paths.contains(&s.path) {
            let line = format!("{}: {}", s.path.display(), s.why);
            eprintln!(
                "sessionfs: {}",
                sessionfs::model::core::text::escape_controls(&line)
            );
            code = 2;
        }
    }
    ExitCode::from(code)
}

/// The width to fit the table in: `COLUMNS` when set (as ls and ccusage take it),
/// else the terminal's when standard output is one; none for a file or a pipe.
fn terminal_width() -> Option<usize> {
    if let Some(c) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse::<usize>().ok())
        .filter(|&c| c > 0)
    {
        return Some(c);
    }
    // SAFETY: isatty reads nothing but the descriptor's state.
    if unsafe { libc::isatty(libc::STDOUT_FILENO) } != 1 {
        return None;
    }
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ fills the winsize it is given.
    let r = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) };
    (r == 0 && ws.ws_col > 0).then_some(ws.ws_col as usize)
}

fn run_grep(a: GrepArgs) -> ExitCode {
    let mut paths = a.paths;
    let pattern = if a.regexp.is_empty() {
        a.pattern.expect("required unless -e")
    } else {
        if let Some(p) = a.pattern {
            paths.insert(0, PathBuf::from(p));
        }
        a.regexp.join("\n")
    };
    let syntax = if a.fixed_strings {
        search::pattern::Syntax::Fixed
    } else if a.extended_regexp {
        search::pattern::Syntax::Extended
    } else {
        search::pattern::Syntax::Basic
    };
    let _ = (a.basic_regexp, a.recursive, a.dereference_recursive);
    search::run(search::Options {
        pattern,
        syntax,
        ignore_case: a.ignore_case,
        word: a.word_regexp,
        list: a.files_with_matches,
        count: a.count,
        line_numbers: a.line_number,
        json: a.json,
        sessions: a.sessions,
        color: match a.color {
            Color::Auto => search::ColorChoice::Auto,
            Color::Always => search::ColorChoice::Always,
            Color::Never => search::ColorChoice::Never,
        },
        paths,
        threads: a.threads,
        index: search::IndexUse::FromEnv,
    })
}
