//! Tokens and cost through real mounts (`cost`, `cost.json`), and `sessionfs usage`,
//! driven with cat, grep, ls and the shell.
//!
//! Fixtures: `tests/fixtures/sessions/tour.jsonl` (Pi 1.6.0: three branches, a `usage`
//! entry), `tests/fixtures/usage/claude-priced` (hand-made Claude Code session: a reply
//! on two lines, the 200k tier, an unknown model on a dead end) and
//! `tests/fixtures/usage/claude-2.1.332` (Claude Code 2.1.332's samples: a subagent,
//! `cost-state` lines).

mod common;

use common::*;
use serde_json::Value;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn usage_fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/usage")
}

fn cat(p: &Path) -> String {
    run("cat", &[p.as_os_str()], Path::new("/")).ok().stdout
}

/// The line of `text` that starts with `prefix`, without the prefix.
fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no line {prefix:?} in:\n{text}"))
}

/// `tokens …, cost …, N requests` of a `to here:`/branch line, without what follows.
fn figures(s: &str) -> &str {
    s.split(" (from the root").next().unwrap()
}

const PRICED_SID: &str = "5e551075-0000-4000-8000-000000000001";
const PRICED_PROJECT: &str = "claude-priced/projects/-home-dev-src-priced";

fn mount_priced(args: &[&str]) -> Mount {
    let dir = tempdir();
    let file = dir.path().join(format!("{PRICED_SID}.jsonl"));
    fs::copy(
        usage_fixtures()
            .join(PRICED_PROJECT)
            .join(format!("{PRICED_SID}.jsonl")),
        &file,
    )
    .unwrap();
    Mount::start(dir, file, args)
}

#[test]
fn pi_cost_of_the_session_its_branches_and_dead_ends_read_with_cat() {
    let m = Mount::new("tour.jsonl");
    let root = cat(&m.path("cost"));
    assert_eq!(
        line(&root, "session: "),
        "tokens 1,440 (input 1,200, output 240, cache read 0, cache write 0), cost $0.0360, 12 requests"
    );
    // The current branch is what `leaf/cost` says it cost to get there.
    let current = line(&root, "current branch (d291b2b4): ");
    assert_eq!(
        figures(line(&cat(&m.path("leaf/cost")), "to here: ")),
        current
    );
    // Every branch, through `branches/LEAF/cost`.
    let listed = run("ls", &[m.path("branches")], Path::new("/")).ok().stdout;
    let leaves: Vec<&str> = listed.lines().collect();
    assert_eq!(leaves.len(), 3);
    for leaf in leaves {
        let there = cat(&m.path(&format!("branches/{leaf}/cost")));
        let in_root = root
            .lines()
            .find_map(|l| {
                l.strip_prefix(&format!("branch {leaf}"))
                    .map(|r| r.trim_start_matches(" (current)").trim_start_matches(": "))
            })
            .unwrap();
        assert_eq!(figures(line(&there, "to here: ")), in_root, "{leaf}");
    }
    // Dead ends: everything not on the current branch.
    assert_eq!(
        line(&root, "dead ends: "),
        "tokens 720 (input 600, output 120, cache read 0, cache write 0), cost $0.0180, 6 requests"
    );
    // Pi 1.6's usage entry counts as a request of its own, beside its KIND file `usage`.
    let warm = m.path(".id/f72eabfe");
    let names = run("ls", &[&warm], Path::new("/")).ok().stdout;
    assert!(names.lines().any(|l| l == "usage") && names.lines().any(|l| l == "cost"));
    assert!(cat(&warm.join("cost")).starts_with(
        "id: f72eabfe\nentry: usage entry anthropic/claude-sonnet-4-5, tokens 120 (input 100, output 20, \
             cache read 0, cache write 0), cost $0.0030, 1 request\n"
    ));
    assert!(root.contains("source usage entry: tokens 120 "));
    // JSON for scripts: the current branch and the dead ends make the session.
    let j: Value = serde_json::from_str(&cat(&m.path("cost.json"))).unwrap();
    let sum = j["currentBranch"]["usage"]["totalTokens"].as_u64().unwrap()
        + j["deadEnds"]["totalTokens"].as_u64().unwrap();
    assert_eq!(sum, j["session"]["totalTokens"].as_u64().unwrap());
    let e: Value = serde_json::from_str(&cat(&m.path("leaf/cost.json"))).unwrap();
    assert_eq!(e["toHere"], j["currentBranch"]["usage"]);
}

#[test]
fn cost_files_are_links_in_the_nested_tree_so_grep_r_reads_each_entry_once() {
    let m = Mount::new("tour.jsonl");
    // `grep -r` does not follow the links: only the root's `cost` matches.
    let out = run(
        "grep",
        &["-rl", "to here:", m.mnt.to_str().unwrap()],
        Path::new("/"),
    );
    assert_eq!(out.code(), Some(1), "{out:?}");
    let out = run(
        "grep",
        &["-rl", "dead ends:", m.mnt.to_str().unwrap()],
        Path::new("/"),
    );
    assert_eq!(out.stdout.trim(), m.path("cost").to_str().unwrap());
    // The link leads to the flat file.
    let root_entry = run("ls", &[m.mnt.as_os_str()], Path::new("/"))
        .ok()
        .stdout
        .lines()
        .find(|l| l.len() == 8)
        .unwrap()
        .to_string();
    let link = fs::read_link(m.path(&format!("{root_entry}/cost"))).unwrap();
    assert_eq!(link, PathBuf::from(format!("../.id/{root_entry}/cost")));
    assert!(cat(&m.path(&format!("{root_entry}/cost"))).contains("to here: "));
    // Read-only, as every derived file.
    let w = fs::OpenOptions::new().write(true).open(m.path("cost"));
    assert!(w.is_err());
}

#[test]
fn the_session_cost_follows_lines_appended_while_mounted() {
    let m = Mount::new("tour.jsonl");
    assert!(cat(&m.path("cost")).starts_with("session: tokens 1,440 "));
    let line = r#"{"type":"message","id":"feedc0de","parentId":"d291b2b4","timestamp":"2026-11-21T09:05:00.000Z","message":{"role":"assistant","content":[{"type":"text","text":"more"}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":1000,"output":60,"cacheRead":0,"cacheWrite":0,"totalTokens":1060,"cost":{"input":0.003,"output":0.0009,"cacheRead":0,"cacheWrite":0,"total":0.0039}},"stopReason":"stop","timestamp":1795000000000}}"#;
    let mut f = fs::OpenOptions::new().append(true).open(&m.file).unwrap();
    writeln!(f, "{line}").unwrap();
    drop(f);
    let mut seen = String::new();
    let ok = wait_until(Duration::from_secs(10), || {
        seen = cat(&m.path("cost"));
        seen.starts_with("session: tokens 2,500 ")
    });
    assert!(ok, "{seen}");
    assert!(seen.contains("current branch (feedc0de): "), "{seen}");
    assert!(cat(&m.path("leaf/cost")).contains("cost $0.0039, 1 request\n"));
}

#[test]
fn claude_code_reply_on_two_lines_counts_once_and_an_unknown_model_is_unknown() {
    let m = mount_priced(&[]);
    let root = cat(&m.path("cost"));
    assert!(
        line(&root, "session: ")
            .ends_with("cost $1.95 + unknown, 4 requests (no price for claude-nobody-9)"),
        "{root}"
    );
    assert!(
        line(&root, "dead ends: ").contains("cost unknown, 1 request"),
        "{root}"
    );
    assert!(root.contains("prices: snapshot 20"), "{root}");
    let first = cat(&m.path(".id/00000000-0000-4000-8000-000000000002/cost"));
    assert!(
        first.starts_with(
            "id: 00000000-0000-4000-8000-000000000002\nentry: message claude-opus-4-8, tokens 59,500 (input 1,200, output 300, cache read \
             50,000, cache write 8,000), cost $0.0885, 1 request\n"
        ),
        "{first}"
    );
    assert!(first.contains("priced: from the price table (snapshot 20"));
    let second = cat(&m.path(".id/00000000-0000-4000-8000-000000000003/cost"));
    assert!(
        second.starts_with(
            "id: 00000000-0000-4000-8000-000000000003\n\
             entry: part of a reply counted at 00000000-0000-4000-8000-000000000002\n"
        ),
        "{second}"
    );
    assert_eq!(
        figures(line(&first, "to here: ")),
        figures(line(&second, "to here: "))
    );
}

#[test]
fn another_price_table_with_prices() {
    let dir = tempdir();
    let table = dir.path().join("prices.json");
    fs::write(
        &table,
        r#"{"claude-nobody-9": {"input_cost_per_token": 1e-3, "output_cost_per_token": 1e-3, "litellm_provider": "anthropic", "mode": "chat"}}"#,
    )
    .unwrap();
    let m = mount_priced(&["--prices", table.to_str().unwrap()]);
    let root = cat(&m.path("cost"));
    // The table knows only claude-nobody-9: 520 tokens at $0.001, the others unknown.
    assert!(
        line(&root, "dead ends: ").contains("cost $0.5200, 1 request"),
        "{root}"
    );
    assert!(
        line(&root, "current branch").contains("cost unknown"),
        "{root}"
    );
    assert!(
        root.contains(&format!("prices: {}", table.display())),
        "{root}"
    );
    // A file that is no price table is refused before mounting, saying why.
    fs::write(&table, "{\"a\": 1}").unwrap();
    let out = sessionfs(
        &[
            "mount",
            "--prices",
            table.to_str().unwrap(),
            "x.jsonl",
            dir.path().to_str().unwrap(),
        ],
        dir.path(),
    );
    assert_eq!(out.code(), Some(3), "{out:?}");
    assert!(out.stderr.contains("LiteLLM"), "{}", out.stderr);
}

#[test]
fn claude_code_subagents_count_in_their_session_and_cost_state_is_shown_beside() {
    let dir = tempdir();
    let projects = dir.path().join("projects");
    copy_tree(&usage_fixtures().join("claude-2.1.332/projects"), &projects);
    let m = Mount::sessions_dir(dir, Some(&projects), &["--read-only"], &[]);
    let root = cat(&m.path("-home-dev-src-sub/708fb51e-6dff-4443-a516-834aba56595c/cost"));
    // 3 replies of the session and 2 of its subagent, as Claude Code's own count says.
    assert!(
        line(&root, "session: ").starts_with("tokens 14,378 (input 14,194, output 184, "),
        "{root}"
    );
    assert!(
        line(&root, "claude code's own count (cost-state): ")
            .starts_with("cost $0.0605, tokens 14,378 "),
        "{root}"
    );
    // claude-opus-5-5 is priced at Claude Code's own rates (scripts/claude-prices):
    // the lines' cost is Claude Code's own count, to the cent.
    assert!(line(&root, "session: ").contains("cost $0.0605,"), "{root}");
    // The compaction's summary request is in cost-state only (no line records it).
    let qa = cat(&m.path("-home-dev-src-qa/d01acf0b-9e63-4d85-aae9-b6c73faa23e4/cost"));
    assert!(line(&qa, "session: ").starts_with("tokens 16,200 "), "{qa}");
    assert!(
        line(&qa, "claude code's own count (cost-state): ").contains("tokens 20,711 "),
        "{qa}"
    );
}

#[test]
fn usage_cli_prints_sessions_branches_and_dead_ends_without_a_mount() {
    let dir = tempdir();
    let out = sessionfs(
        &[
            "usage",
            usage_fixtures()
                .join("claude-priced/projects")
                .to_str()
                .unwrap(),
        ],
        dir.path(),
    )
    .ok();
    let head = out.stdout.lines().next().unwrap();
    assert!(head.starts_with("Session "), "{}", out.stdout);
    assert!(
        head.ends_with("Current Branch / Dead Ends"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("$1.95 + unknown"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("  branch 00000000-0000-4000-8000-000000000007 *"),
        "{}",
        out.stdout
    );
    let by_model = sessionfs(
        &[
            "usage",
            "--by",
            "model",
            "--json",
            usage_fixtures()
                .join("claude-priced/projects")
                .to_str()
                .unwrap(),
        ],
        dir.path(),
    )
    .ok();
    let j: Value = serde_json::from_str(&by_model.stdout).unwrap();
    let models: Vec<&str> = j["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["key"].as_str().unwrap())
        .collect();
    assert_eq!(
        models,
        [
            "claude-haiku-4-5-20251001",
            "claude-nobody-9",
            "claude-opus-4-8",
            "claude-sonnet-4-5-20250929"
        ]
    );
    assert_eq!(j["totals"]["costComplete"], false);
    let by_day = sessionfs(
        &[
            "usage",
            "--by",
            "day",
            fixture("tour.jsonl").to_str().unwrap(),
        ],
        dir.path(),
    )
    .ok();
    assert!(by_day.stdout.contains("2026-11-21 "), "{}", by_day.stdout);
}

#[test]
fn usage_cli_reads_every_agents_folder_by_default_and_refuses_what_is_no_file() {
    let dir = tempdir();
    let pi = dir.path().join("pi");
    fs::create_dir_all(pi.join("sessions/--home-dev-src-tour--")).unwrap();
    fs::copy(
        fixture("tour.jsonl"),
        pi.join("sessions/--home-dev-src-tour--/tour.jsonl"),
    )
    .unwrap();
    let claude = dir.path().join("claude");
    copy_tree(
        &usage_fixtures().join("claude-priced/projects"),
        &claude.join("projects"),
    );
    let mut c = std::process::Command::new(bin());
    c.args(["usage", "--by", "project"])
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .env("PI_CODING_AGENT_DIR", &pi)
        .env("CLAUDE_CONFIG_DIR", &claude);
    let out = run_command(c).ok();
    assert!(
        out.stdout.contains("\npi/--home-dev-src-tour--  "),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("\nclaude/-home-dev-src-priced  "),
        "{}",
        out.stdout
    );
    // A FIFO would block a reader for ever: refused, as `mount` refuses it.
    let fifo = dir.path().join("s.jsonl");
    let made = run("mkfifo", &[&fifo], dir.path());
    assert!(made.status.success());
    let out = sessionfs(&["usage", fifo.to_str().unwrap()], dir.path());
    assert_eq!(out.code(), Some(2));
    assert!(
        out.stderr
            .contains("is neither a regular file nor a directory"),
        "{}",
        out.stderr
    );
    let out = sessionfs(&["usage", "missing.jsonl"], dir.path());
    assert_eq!(out.code(), Some(2));
    assert!(
        out.stderr
            .contains("missing.jsonl: No such file or directory")
    );
}

/// Pi's `/fork` copies the path with its ids and timestamps into a new file: over both
/// files, each request counts once, in the session it was made in.
#[test]
fn usage_cli_counts_a_pi_fork_copy_once() {
    let dir = tempdir();
    let sessions = dir.path().join("sessions");
    fs::create_dir_all(&sessions).unwrap();
    let tour = fs::read_to_string(fixture("tour.jsonl")).unwrap();
    fs::write(sessions.join("tour.jsonl"), &tour).unwrap();
    let lines: Vec<Value> = tour
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut path = Vec::new();
    let mut at = Some("d291b2b4".to_string());
    while let Some(id) = at {
        let e = lines.iter().find(|e| e["id"] == id.as_str()).unwrap();
        path.push(e.clone());
        at = e["parentId"].as_str().map(str::to_owned);
    }
    path.reverse();
    let mut fork = String::from(
        r#"{"type":"session","version":3,"id":"f0f0f0f0-0000-4000-8000-000000000000","timestamp":"2026-11-22T00:00:00.000Z","cwd":"/home/dev","parentSession":"tour.jsonl"}"#,
    );
    fork.push('\n');
    for e in &path {
        fork.push_str(&e.to_string());
        fork.push('\n');
    }
    fs::write(sessions.join("zz-fork.jsonl"), fork).unwrap();
    let out = sessionfs(&["usage", "--json", sessions.to_str().unwrap()], dir.path()).ok();
    let j: Value = serde_json::from_str(&out.stdout).unwrap();
    let s = |name: &str| {
        j["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["sessionId"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(s("tour")["totalTokens"], 1440);
    assert_eq!(s("zz-fork")["totalTokens"], 0);
    assert_eq!(s("zz-fork")["copiedFromOtherSessions"]["totalTokens"], 720);
    // The fork's branch still cost what it took to get there.
    assert_eq!(s("zz-fork")["currentBranch"]["totalTokens"], 720);
    assert_eq!(j["totals"]["totalTokens"], 1440);
}

// docs/COMMANDS.md, usage: like grep and check, `usage` reports a session file it
// cannot read on standard error as every error is (`sessionfs: PATH: why`) and exits 2,
// after reporting the others; it takes `--max-line` as they do; and on an 80-column
// terminal (`COLUMNS`) its table fits, in the compact layout ccusage switches to.
#[test]
fn usage_exits_2_after_an_unreadable_file_takes_max_line_and_fits_80_columns() {
    let dir = tempdir();
    let projects = dir.path().join("projects");
    copy_tree(&usage_fixtures().join("claude-2.1.332/projects"), &projects);
    let a_dir = fs::read_dir(&projects)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    // A file named on the command line that is no session, beside a good directory.
    let bad = dir.path().join("not-a-session.jsonl");
    fs::write(&bad, "{\"hello\":1}\n").unwrap();
    let out = sessionfs(
        &["usage", a_dir.to_str().unwrap(), bad.to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(out.code(), Some(2), "{out:?}");
    assert!(
        out.stdout.contains("Total"),
        "the others are reported: {}",
        out.stdout
    );
    assert!(
        out.stderr
            .starts_with(&format!("sessionfs: {}: ", bad.display())),
        "{}",
        out.stderr
    );
    // --max-line, checked as every command checks it.
    let out = sessionfs(
        &["usage", "--max-line", "1K", a_dir.to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(out.code(), Some(2));
    assert!(out.stderr.contains("--max-line"), "{}", out.stderr);
    sessionfs(
        &["usage", "--max-line", "2MiB", a_dir.to_str().unwrap()],
        dir.path(),
    )
    .ok();
    // 80 columns.
    let mut c = std::process::Command::new(bin());
    c.args(["usage", "--by", "project", projects.to_str().unwrap()])
        .env("COLUMNS", "80");
    let narrow = run_command(c).ok();
    let wide = sessionfs(
        &["usage", "--by", "project", projects.to_str().unwrap()],
        dir.path(),
    )
    .ok();
    assert!(
        wide.stdout.lines().any(|l| l.chars().count() > 80),
        "the fixture's table is wider than 80 columns: {}",
        wide.stdout
    );
    for l in narrow
        .stdout
        .lines()
        .filter(|l| !l.starts_with('(') && !l.starts_with("prices:"))
    {
        assert!(
            l.chars().count() <= 80,
            "{} columns: {l}",
            l.chars().count()
        );
    }
    assert!(narrow.stdout.contains("compact"), "{}", narrow.stdout);
}

// LAYOUT.md, cost: `ls -l` shows a cost file's real size from the first `stat`, and
// `cat branches/*/cost` says which branch each block is (its first line names the tip).
#[test]
fn cost_files_have_their_size_in_ls_and_name_their_entry() {
    let dir = tempdir();
    let file = dir.path().join("demo.jsonl");
    fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo.jsonl"),
        &file,
    )
    .unwrap();
    let m = Mount::start(dir, file, &[]);
    let ls = run("ls", &["-l", "cost", "cost.json"], &m.mnt).ok();
    for (l, name) in ls.stdout.lines().zip(["cost", "cost.json"]) {
        let size: u64 = l.split_whitespace().nth(4).unwrap().parse().unwrap();
        assert_eq!(size, cat(&m.path(name)).len() as u64, "{l}");
        assert!(size > 0, "{l}");
    }
    let tips = try_ls(&m.path("branches")).unwrap();
    assert!(tips.len() >= 2, "{tips:?}");
    let all = sh("cat branches/*/cost", &m.mnt).ok().stdout;
    let ids: Vec<&str> = all.lines().filter_map(|l| l.strip_prefix("id: ")).collect();
    assert_eq!(ids, tips, "{all}");
    let flat = format!(".id/{}/cost", tips[0]);
    let link = format!("branches/{}/cost", tips[0]);
    let st = run("stat", &["-L", "-c", "%s", link.as_str()], &m.mnt);
    assert_eq!(st.ok().stdout.trim(), cat(&m.path(&flat)).len().to_string());
}
