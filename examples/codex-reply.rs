//! Writes one reply into a Codex thread with sessionfs's reply writer, for
//! `scripts/codex-accepts` (which then asks the real Codex CLI whether it resumes it).
//!
//!     cargo run --example codex-reply -- PAGE ORDINAL|end TEXT [--minimal] [--thread ID]
//!
//! `--thread ID`: the reply continues thread ID (a fork replying at an entry it
//! inherited from PAGE, its parent's page), not PAGE's own thread.
//! Prints the written file, the message id and what the database got, as JSON.

use sessionfs::model::codex::write::{Options, Point, Shape, WrittenKind, reply};
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let minimal = args.iter().any(|a| a == "--minimal");
    let thread = args
        .iter()
        .position(|a| a == "--thread")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let pos: Vec<&String> = args
        .iter()
        .enumerate()
        .filter(|(i, a)| !a.starts_with("--") && (*i == 0 || args[i - 1] != "--thread"))
        .map(|(_, a)| a)
        .collect();
    if pos.len() != 3 {
        eprintln!("usage: codex-reply PAGE ORDINAL|end TEXT [--minimal] [--thread ID]");
        return ExitCode::from(2);
    }
    let ordinal = match pos[1].as_str() {
        "end" => None,
        o => match o.parse() {
            Ok(n) => Some(n),
            Err(_) => {
                eprintln!("codex-reply: ORDINAL must be a number or `end`, not {o:?}");
                return ExitCode::from(2);
            }
        },
    };
    let at = Point {
        page: PathBuf::from(pos[0]),
        ordinal,
        thread,
    };
    let opts = Options {
        shape: if minimal { Shape::Minimal } else { Shape::Turn },
        ..Options::default()
    };
    match reply(&at, pos[2], &opts) {
        Ok(w) => {
            let kind = match &w.kind {
                WrittenKind::Appended { db } => format!("appended ({db:?})"),
                WrittenKind::NewPage { db } => format!("new page ({db:?})"),
            };
            println!(
                "{}",
                serde_json::json!({
                    "path": w.path, "kind": kind, "offset": w.offset,
                    "messageId": w.message_id, "ordinal": w.ordinal, "thread": w.thread_id,
                })
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("codex-reply: {e} (errno {})", e.errno());
            ExitCode::from(1)
        }
    }
}
