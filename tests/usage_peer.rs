//! `sessionfs usage` against ccusage 20.0.24 (`ccusage … session --json --offline`) on
//! the same files. ccusage's outputs are committed (`tests/fixtures/usage/ccusage/`,
//! made by `scripts/make-usage-peer.sh`), so no Node is needed here.
//!
//! Where the figures differ, they differ on purpose, and each test below says so:
//! * a reply a fork copied counts, for ccusage, in the file named first; for us, in
//!   the session that started first (the one it was copied from);
//! * ccusage's Pi reader counts assistant messages only; Pi 1.6's `usage` entries and
//!   the summary requests of compactions and branch summaries are requests too;
//! * a model its price table lacks costs 0 for ccusage; ours prices it, or says "unknown".

use serde_json::Value;
use sessionfs::model::usage::Source;
use sessionfs::model::usage::prices::Prices;
use sessionfs::model::usage::report::{self, Attribution, Report, SessionRow};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn ccusage(name: &str) -> Value {
    let p = root().join(format!("tests/fixtures/usage/ccusage/{name}.json"));
    serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap()
}

fn ours(projects: &Path, rule: Attribution) -> Report {
    let files = report::files_of_dir(projects).unwrap();
    assert!(!files.is_empty(), "{}", projects.display());
    report::build_with(&files, &Prices::snapshot(), rule)
}

fn n(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"))
}

/// Every session of ccusage's output has our row with the same tokens, and the cost
/// to the cent where every model is priced; sessions ccusage leaves out record nothing.
fn same_sessions(r: &Report, cc: &Value, what: &str) {
    let sessions = cc["sessions"].as_array().unwrap();
    for c in sessions {
        let id = c["sessionId"].as_str().unwrap();
        let row = r
            .sessions
            .iter()
            .find(|s| s.session == id)
            .unwrap_or_else(|| panic!("{what}: no session {id}"));
        let t = &row.usage.tokens;
        assert_eq!(
            (t.input, t.output, t.cache_read, t.cache_write),
            (
                n(c, "inputTokens"),
                n(c, "outputTokens"),
                n(c, "cacheReadTokens"),
                n(c, "cacheCreationTokens")
            ),
            "{what}: tokens of {id}"
        );
        let their = c["totalCost"].as_f64().unwrap();
        let missing: Vec<&str> = c["modelBreakdowns"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["missingPricing"].as_bool() == Some(true))
            .filter_map(|m| m["modelName"].as_str())
            .collect();
        if missing.is_empty() {
            assert_eq!(row.usage.unpriced, 0, "{what}: {id}");
            assert!(
                (row.usage.cost - their).abs() < 0.005,
                "{what}: cost of {id}: ours {} ccusage {their}",
                row.usage.cost
            );
        } else {
            // ccusage counts a model it has no price for as $0 (Claude Code 2.1.332's
            // default, claude-opus-5-5, is in neither of its tables): ours prices it
            // (or says unknown), and what both price agrees.
            let ours_priced_by_them: f64 = row
                .records
                .iter()
                .filter(|(_, rec)| !missing.contains(&rec.model.as_str()))
                .filter_map(|(_, rec)| rec.cost)
                .sum();
            let priced_by_them: f64 = c["modelBreakdowns"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["missingPricing"].as_bool() != Some(true))
                .map(|m| m["cost"].as_f64().unwrap())
                .sum();
            assert!(
                (ours_priced_by_them - priced_by_them).abs() < 0.005,
                "{what}: priced part of {id}: ours {ours_priced_by_them} ccusage {priced_by_them}"
            );
        }
    }
    for s in &r.sessions {
        if !sessions
            .iter()
            .any(|c| c["sessionId"] == s.session.as_str())
        {
            assert_eq!(
                s.usage.requests, 0,
                "{what}: ccusage leaves out {}, which records requests",
                s.session
            );
        }
    }
}

fn same_totals(r: &Report, cc: &Value, what: &str) {
    let t = r.total().tokens;
    let c = &cc["totals"];
    assert_eq!(
        (t.input, t.output, t.cache_read, t.cache_write),
        (
            n(c, "inputTokens"),
            n(c, "outputTokens"),
            n(c, "cacheReadTokens"),
            n(c, "cacheCreationTokens")
        ),
        "{what}: totals"
    );
}

fn row<'a>(r: &'a Report, id: &str) -> &'a SessionRow {
    r.sessions
        .iter()
        .find(|s| s.session.starts_with(id))
        .unwrap()
}

#[test]
fn claude_code_2_1_197_sessions_equal_ccusage_under_its_fork_rule() {
    let dir = root().join("tests/fixtures/claude/projects");
    let cc = ccusage("claude-2.1.197");
    same_sessions(&ours(&dir, Attribution::PathOrder), &cc, "2.1.197");
    same_totals(&ours(&dir, Attribution::FirstStarted), &cc, "2.1.197");
}

#[test]
fn claude_code_2_1_332_sessions_equal_ccusage_under_its_fork_rule() {
    let dir = root().join("tests/fixtures/usage/claude-2.1.332/projects");
    let cc = ccusage("claude-2.1.332");
    same_sessions(&ours(&dir, Attribution::PathOrder), &cc, "2.1.332");
    same_totals(&ours(&dir, Attribution::FirstStarted), &cc, "2.1.332");
}

/// Streamed reply (partial output on its first line), the 200k tier, cache reads and
/// writes, three priced models and one unknown: the cost agrees to the cent.
#[test]
fn priced_session_agrees_to_the_cent_and_the_unknown_model_stays_unknown() {
    let dir = root().join("tests/fixtures/usage/claude-priced/projects");
    let cc = ccusage("claude-priced");
    let r = ours(&dir, Attribution::FirstStarted);
    same_sessions(&r, &cc, "priced");
    same_totals(&r, &cc, "priced");
    let s = &r.sessions[0];
    assert_eq!(s.usage.unpriced_models, ["claude-nobody-9"]);
    assert!((cc["sessions"][0]["totalCost"].as_f64().unwrap() - 1.9497).abs() < 1e-9);
    assert_eq!(s.usage.cost_text(), "$1.95 + unknown");
    // The current branch is the priced one; the dead end is the unknown model's.
    assert_eq!(s.current.unpriced, 0);
    assert_eq!(s.dead_ends.unpriced_models, ["claude-nobody-9"]);
    assert_eq!(s.dead_ends.cost_text(), "unknown");
}

/// Our own rule for forks: the session a reply was copied from counts it. ccusage
/// gives the history of 6ca0dea1 (the source) to the fork 683c1736, named before it.
#[test]
fn a_reply_a_fork_copied_counts_in_the_session_it_was_copied_from() {
    let dir = root().join("tests/fixtures/usage/claude-2.1.332/projects");
    let cc = ccusage("claude-2.1.332");
    let ccs = |id: &str| {
        cc["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["sessionId"].as_str().unwrap().starts_with(id))
            .unwrap()
            .clone()
    };
    let r = ours(&dir, Attribution::FirstStarted);
    let source = row(&r, "6ca0dea1");
    let fork = row(&r, "683c1736");
    assert_eq!(source.copied.requests, 0);
    assert!(fork.copied.requests > 0);
    // The source counts its whole file; ccusage gives it only what no fork copied.
    assert_eq!(source.usage.tokens.input, 7766);
    assert_eq!(n(&ccs("6ca0dea1"), "inputTokens"), 2599);
    // What the fork adds is its own; what it copied is shown as copied.
    assert_eq!(
        fork.usage.tokens.input + fork.copied.tokens.input,
        n(&ccs("683c1736"), "inputTokens")
    );
    // Its branch still includes the copied history: what it cost to get there.
    assert_eq!(fork.current.tokens.input, 7817);
}

/// Pi: ccusage counts assistant messages, with the cost Pi recorded; we count those
/// the same, and add the requests Pi records elsewhere.
#[test]
fn pi_messages_equal_ccusage_and_usage_entries_and_summaries_come_on_top() {
    let cc = ccusage("pi");
    let mut files: Vec<(PathBuf, String)> =
        std::fs::read_dir(root().join("tests/fixtures/sessions"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .map(|p| (p, String::new()))
            .collect();
    files.push((root().join("examples/demo.jsonl"), String::new()));
    files.sort();
    let r = report::build(&files, &Prices::snapshot());
    let sessions = cc["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), r.sessions.len());
    let mut extra_seen = 0;
    for c in sessions {
        let id = c["sessionId"].as_str().unwrap();
        let s = r.sessions.iter().find(|s| s.session == id).unwrap();
        let mut msg = sessionfs::model::usage::Usage::default();
        let mut extra = sessionfs::model::usage::Usage::default();
        for (_, rec) in &s.records {
            if rec.source == Source::Message {
                msg.add_record(rec);
            } else {
                extra.add_record(rec);
            }
        }
        let t = msg.tokens;
        assert_eq!(
            (t.input, t.output, t.cache_read, t.cache_write),
            (
                n(c, "inputTokens"),
                n(c, "outputTokens"),
                n(c, "cacheReadTokens"),
                n(c, "cacheCreationTokens")
            ),
            "pi {id}"
        );
        assert!(
            (msg.cost - c["totalCost"].as_f64().unwrap()).abs() < 0.005,
            "pi {id} cost"
        );
        let mut sum = msg.clone();
        sum.add(&extra);
        assert_eq!(sum.tokens, s.usage.tokens, "{id}");
        if extra.requests > 0 {
            extra_seen += 1;
        }
    }
    // tour (a usage entry), the real 1.6 sessions and the demo (usage entries,
    // compaction summaries).
    assert!(extra_seen >= 5, "{extra_seen}");
}

/// Claude Code 2.1.332 prices its default model itself (`cost-state`): on every fixture
/// session whose lines hold exactly the tokens its own count holds (no compaction
/// summary or other request the lines do not record), the cost sessionfs gives the
/// lines equals Claude Code's own, so the price table's `claude-opus-5-5` is its.
#[test]
fn claude_codes_own_count_equals_ours_where_the_lines_hold_every_request() {
    use sessionfs::model::Session;
    use sessionfs::model::usage::Table;
    use sessionfs::model::usage::prices::Prices;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut files = Vec::new();
    for d in ["claude-332", "usage/claude-2.1.332"] {
        let out = std::process::Command::new("find")
            .args([
                root.join(d).to_str().unwrap(),
                "-name",
                "*.jsonl",
                "-not",
                "-path",
                "*/subagents/*",
            ])
            .output()
            .unwrap();
        files.extend(
            String::from_utf8(out.stdout)
                .unwrap()
                .lines()
                .map(PathBuf::from),
        );
    }
    let prices = Prices::snapshot();
    let mut checked = 0;
    for f in files {
        let Ok(s) = Session::open(&f) else { continue };
        let t = Table::build(&s, &prices);
        let Some(cs) = &t.cost_state else {
            continue;
        };
        let total = t.total();
        if total.tokens != cs.tokens || total.requests == 0 {
            continue;
        }
        assert_eq!(total.unpriced, 0, "{f:?}");
        assert!(
            (total.cost - cs.cost).abs() < 1e-9,
            "{f:?}: ours {} claude code {}",
            total.cost,
            cs.cost
        );
        checked += 1;
    }
    assert!(checked >= 5, "{checked} sessions checked");
}
