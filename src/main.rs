//! The `sessionfs` command line.

use clap::{Parser, Subcommand};
use sessionfs::fuse;
use sessionfs::model::check;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "sessionfs",
    version,
    about = "Browse, grep and extend Pi coding-agent sessions as a filesystem"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Report what is wrong with session files, line by line.
    ///
    /// Exit status: 0 when every file is clean (notes aside), 1 when problems were
    /// found, 2 when a file could not be read. Never writes to the files.
    Check {
        /// Session files (.jsonl).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// One JSON object per file, one per line.
        #[arg(long)]
        json: bool,
    },
    /// Mount a session file as a directory tree.
    ///
    /// Every entry of the session becomes a directory under its parent; `cat`, `grep`
    /// and `ls` read it, and `echo TEXT > reply` appends a user message. The command
    /// stays in the foreground until the mount is unmounted (`umount MOUNTPOINT`) or it
    /// receives SIGINT, SIGTERM or SIGHUP, which unmount it. Errors are one line on
    /// standard error, starting with `sessionfs: `.
    #[command(after_long_help = fuse::mount::EXIT_STATUS_HELP)]
    Mount {
        /// The session file (.jsonl).
        file: PathBuf,
        /// An empty directory to mount it on.
        #[arg(value_name = "MOUNTPOINT")]
        mount_point: PathBuf,
        /// Refuse every write (EROFS).
        #[arg(long)]
        read_only: bool,
        /// Let other users (and root) use the mount; non-root users need
        /// `user_allow_other` in /etc/fuse.conf.
        #[arg(long)]
        allow_other: bool,
        /// Return once the mount is ready, leaving it served by a background process.
        #[arg(long)]
        background: bool,
        /// The largest message accepted through `reply` (bytes; K, M and G suffixes
        /// allowed); larger writes fail with EFBIG.
        #[arg(long, value_name = "BYTES", default_value = "16MiB", value_parser = fuse::mount::parse_size)]
        max_reply: usize,
        /// With --background: append the log (see RUST_LOG) to this file instead of
        /// discarding it.
        #[arg(long, value_name = "FILE", requires = "background")]
        log: Option<PathBuf>,
        /// Internal: the descriptor a --background parent waits on.
        #[arg(long, hide = true)]
        ready_fd: Option<i32>,
    },
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = Cli::parse();
    match cli.command {
        Command::Check { files, json } => run_check(&files, json),
        Command::Mount {
            file,
            mount_point,
            read_only,
            allow_other,
            background,
            max_reply,
            log,
            ready_fd,
        } => fuse::mount::run(fuse::mount::MountArgs {
            file,
            mount_point,
            read_only,
            allow_other,
            background,
            max_reply,
            log,
            ready_fd,
        }),
    }
}

fn run_check(files: &[PathBuf], json: bool) -> ExitCode {
    let mut code = 0u8;
    for f in files {
        let r = check::check(f);
        if json {
            println!("{}", check::to_json(f, &r));
        } else {
            print!("{}", check::to_text(f, &r));
        }
        let c = match &r {
            check::Report::Unreadable(_) => 2,
            _ if r.has_problems() => 1,
            _ => 0,
        };
        code = code.max(c);
    }
    ExitCode::from(code)
}
