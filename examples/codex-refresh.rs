//! How long a Codex thread takes to open and to catch up with an appended line, over
//! a copy of a thread grown to N lines (`scripts/` style measurement, not a test):
//!
//!     cargo run --release --example codex-refresh -- PAGE [LINES]
//!
//! PAGE is a plain page of a thread inside a Codex home (its other pages are found as
//! `Session::open` finds them). The page is copied into a temporary home, its lines
//! repeated (with fresh ordinals) up to LINES, then opened, appended to and refreshed.

use sessionfs::model::Session;
use std::io::Write;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(page) = args.first() else {
        eprintln!("usage: codex-refresh PAGE [LINES]");
        std::process::exit(2);
    };
    let want: usize = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(10_000);
    let text = std::fs::read_to_string(page).expect("read the page");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let day = dir.path().join("sessions/2026/12/01");
    std::fs::create_dir_all(&day).unwrap();
    let path = day.join(std::path::Path::new(page).file_name().unwrap());
    let mut out = String::new();
    let mut ord = 0i64;
    out.push_str(&lines[0].to_string());
    out.push('\n');
    'fill: loop {
        for v in &lines[1..] {
            let mut v = v.clone();
            ord += 1;
            v["ordinal"] = ord.into();
            if let Some(id) = v["payload"]["id"].as_str() {
                v["payload"]["id"] = format!("{id}-{ord}").into();
            }
            out.push_str(&v.to_string());
            out.push('\n');
            if ord as usize >= want {
                break 'fill;
            }
        }
    }
    std::fs::write(&path, &out).unwrap();
    let t = Instant::now();
    let mut s = Session::open(&path).expect("open");
    let open = t.elapsed();
    let n = s.entries().len();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    writeln!(f, "{{\"timestamp\":\"2026-12-02T00:00:00.000Z\",\"ordinal\":{},\"type\":\"response_item\",\"payload\":{{\"type\":\"message\",\"role\":\"user\",\"content\":[{{\"type\":\"input_text\",\"text\":\"x\"}}]}}}}", ord + 1).unwrap();
    drop(f);
    let t = Instant::now();
    let c = s.refresh().expect("refresh");
    let refresh = t.elapsed();
    let t = Instant::now();
    let none = s.refresh().expect("refresh");
    let idle = t.elapsed();
    println!(
        "{} bytes, {} lines, {n} entries: open {:.1} ms, refresh after an append {:.1} ms ({} new), refresh with nothing new {:.2} ms ({}), heap {} KB",
        out.len(),
        ord + 1,
        open.as_secs_f64() * 1e3,
        refresh.as_secs_f64() * 1e3,
        c.new_entries.len(),
        idle.as_secs_f64() * 1e3,
        none.new_entries.len(),
        s.heap_bytes() / 1024
    );
}
