//! Codex usage through the core's `Session` and usage table: on the real CLI's files
//! (every branch sums to what Codex itself summed for it) and on small files made here
//! (cached tokens, an unknown model, files with `token_count` lines only, repeats).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::agent::CodexThread;
use super::files::{self, Root};
use super::page::LineKind;
use crate::model::core::session::Session;
use crate::model::core::usage::Table;
use crate::model::core::usage::prices::Prices;
use crate::model::core::usage::report;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex")
}

/// The first page of every thread of `home`, by thread id.
fn first_pages(home: &Path) -> HashMap<String, PathBuf> {
    let mut m: HashMap<String, PathBuf> = HashMap::new();
    for f in files::discover(&Root::Home(home.to_path_buf())) {
        if f.name.page_id == f.name.thread_id {
            m.insert(f.name.thread_id, f.path);
        }
    }
    m
}

/// Every page's branch costs the tokens of Codex's own running sum at its last
/// record (`thread_token_usage`, which follows the history: a rewind or a fork
/// continues from the sum at its cut), and the session counts every record once.
#[test]
fn every_branch_sums_what_codex_summed_for_it() {
    let prices = Prices::snapshot();
    let mut branches = 0;
    for set in ["samples", "own", "replies"] {
        let home = fixtures().join(set).join("codex-home");
        for (tid, page) in first_pages(&home) {
            let s = Session::open(&page).unwrap();
            let t = Table::build(&s, &prices);
            let a = s.agent().as_any().downcast_ref::<CodexThread>().unwrap();
            let codex = a.codex();
            let th = codex.thread(&tid).unwrap();
            let mut records = HashSet::new();
            let mut record_tokens = 0;
            for &p in &codex.threads[th].pages {
                let h = codex.history(p, None);
                let mut last_sum = None;
                let mut last_node = None;
                for r in h.lines() {
                    let line = codex.line(r);
                    if line.kind == LineKind::TokenUsageRecord {
                        let v = codex.read(r).unwrap();
                        let p = &v["payload"];
                        last_sum = p["thread_token_usage"]["total_tokens"].as_u64();
                        if records.insert(r) {
                            record_tokens += p["usage"]["total_tokens"].as_u64().unwrap();
                        }
                    }
                    if let Some(n) = codex.node_of(r) {
                        last_node = Some(n);
                    }
                }
                let (Some(sum), Some(n)) = (last_sum, last_node) else {
                    continue;
                };
                let e = s.find(&codex.id(n)).unwrap();
                let u = t.path_usage(&s, e);
                assert_eq!(
                    u.tokens.total(),
                    sum,
                    "{set} page {}",
                    codex.pages[p].page_id()
                );
                assert_eq!(u.unpriced, 0);
                branches += 1;
            }
            let total = t.total();
            assert_eq!(total.requests as usize, records.len(), "{set} {tid}");
            assert_eq!(total.tokens.total(), record_tokens, "{set} {tid}");
            // gpt-5-codex: $1.25 per million input tokens, $10 per million output.
            let want = total.tokens.input as f64 * 1.25e-6
                + total.tokens.cache_read as f64 * 1.25e-7
                + total.tokens.output as f64 * 1e-5;
            assert!((total.cost - want).abs() < 1e-9, "{} {want}", total.cost);
        }
    }
    assert!(branches >= 25, "{branches}");
}

/// A rewound thread: its pages are branches, not subagents, and the dead branch
/// after a cut is a dead end, not part of the current branch.
#[test]
fn rewind_pages_are_branches_and_dead_ends() {
    let page = fixtures().join(
        "own/codex-home/sessions/2026/12/01/rollout-2026-12-01T23-43-25-01a233fd-df11-70f1-ad16-33bfb8c9f2c5.jsonl",
    );
    let s = Session::open(&page).unwrap();
    let t = Table::build(&s, &Prices::snapshot());
    assert!(!t.side_files_are_subagents);
    assert!(t.side.iter().all(|u| u.requests == 0));
    let text = t.session_text(&s);
    // Measured on the files: 13,457 + 13,591 (page 1), then each rewind's own
    // turns on top of what its base had.
    assert!(text.contains("tokens 93,173 "), "{text}");
    assert!(
        text.contains("current branch (01a233fe-67a5-7ce3-936c-a4ebae3b2ab1:26): tokens 25,302 "),
        "{text}"
    );
    assert!(text.contains("dead ends: tokens 67,871 "), "{text}");
    assert_eq!(t.branches(&s).len(), 4);
}

/// `sessionfs usage` over a parent and its fork counts the parent's requests the fork
/// inherits once: in the parent, and as copied in the fork.
#[test]
fn a_fork_inherits_its_parents_requests_counted_once() {
    let day = fixtures().join("samples/codex-home/sessions/2026/12/01");
    let parent = day.join("rollout-2026-12-01T19-38-13-01a2331d-6282-7e72-8cca-35fb82ba4618.jsonl");
    let fork = day.join("rollout-2026-12-01T19-38-15-01a2331d-68ff-76e1-bf99-c1ba471b9285.jsonl");
    let r = report::build(
        &[(parent, String::new()), (fork, String::new())],
        &Prices::snapshot(),
    );
    assert!(r.skipped.is_empty(), "{:?}", r.skipped);
    let [p, f] = &r.sessions[..] else {
        panic!("{:?}", r.sessions.len())
    };
    assert_eq!(p.usage.requests, 3);
    assert_eq!(p.usage.tokens.total(), 30_779);
    assert_eq!(f.usage.requests, 2);
    assert_eq!(f.copied.requests, 3);
    // The fork's current branch is what it cost to get there: Codex's own sum.
    assert_eq!(f.current.tokens.total(), 51_842);
}

const T: &str = "01a23500-0000-7000-8000-000000000001";

fn line(ordinal: u64, ty: &str, payload: Value) -> String {
    let v = json!({
        "timestamp": format!("2026-12-01T10:00:{:02}.000Z", ordinal % 60),
        "ordinal": ordinal,
        "type": ty,
        "payload": payload,
    });
    format!("{v}\n")
}

fn msg(role: &str, text: &str) -> Value {
    let kind = if role == "assistant" {
        "output_text"
    } else {
        "input_text"
    };
    json!({"type": "message", "role": role, "content": [{"type": kind, "text": text}]})
}

fn usage(input: u64, cached: u64, output: u64) -> Value {
    json!({"input_tokens": input, "cached_input_tokens": cached, "cache_write_input_tokens": 0,
           "output_tokens": output, "reasoning_output_tokens": 0, "total_tokens": input + output})
}

fn count(total: Value, last: Value) -> Value {
    json!({"type": "token_count", "info": {"total_token_usage": total, "last_token_usage": last}, "rate_limits": null})
}

/// A lone rollout file made of `lines`, opened.
fn open(lines: &[String]) -> (tempfile::TempDir, Session) {
    let d = tempfile::tempdir().unwrap();
    let p = d
        .path()
        .join(format!("rollout-2026-12-01T10-00-00-{T}.jsonl"));
    let mut all = line(
        0,
        "session_meta",
        json!({"id": T, "session_id": T, "cwd": "/home/dev/src/x", "originator": "codex_exec",
               "cli_version": "0.171.0", "source": "exec", "history_mode": "paginated"}),
    );
    for l in lines {
        all.push_str(l);
    }
    std::fs::write(&p, all).unwrap();
    let s = Session::open(&p).unwrap();
    (d, s)
}

/// Files of a Codex that writes no `token_usage_record` (only `token_count`):
/// `last_token_usage` counts when the running sum moved; a repeat, a rate-limits-only
/// line and a new context estimate count nothing. Cached input is input's part.
#[test]
fn token_count_lines_alone_count_each_request_once() {
    let sum1 = usage(1_000, 400, 50);
    let sum2 = usage(3_000, 400, 150);
    let (_d, s) = open(&[
        line(1, "turn_context", json!({"model": "gpt-5-codex"})),
        line(2, "response_item", msg("user", "one")),
        line(
            3,
            "response_item",
            json!({"type": "reasoning", "summary": [], "content": null}),
        ),
        line(4, "response_item", msg("assistant", "a1")),
        line(5, "event_msg", count(sum1.clone(), sum1.clone())),
        line(6, "event_msg", count(sum1.clone(), sum1.clone())),
        line(
            7,
            "event_msg",
            json!({"type": "token_count", "info": null, "rate_limits": {}}),
        ),
        line(8, "response_item", msg("user", "two")),
        line(9, "response_item", msg("assistant", "a2")),
        line(10, "event_msg", count(sum2.clone(), usage(2_000, 0, 100))),
        line(11, "event_msg", count(sum2, usage(900, 0, 0))),
    ]);
    let t = Table::build(&s, &Prices::snapshot());
    let total = t.total();
    assert_eq!(total.requests, 2);
    assert_eq!(total.tokens.input, 600 + 2_000);
    assert_eq!(total.tokens.cache_read, 400);
    assert_eq!(total.tokens.output, 150);
    // The first request counts at its first output (the reasoning); the answer says so.
    let first = s.find(&format!("{T}:3")).unwrap();
    let answer = s.find(&format!("{T}:4")).unwrap();
    assert_eq!(
        t.own[first as usize].as_ref().unwrap().tokens.total(),
        1_050
    );
    assert_eq!(t.counted_at[answer as usize], first);
    assert!(
        t.entry_text(&s, answer)
            .contains(&format!("counted at {T}:3"))
    );
    // 600 × $1.25/M + 400 × $0.125/M + 50 × $10/M.
    let c = t.own[first as usize].as_ref().unwrap().cost.unwrap();
    assert!((c - 0.0013).abs() < 1e-12, "{c}");
    // The user's prompt before it has cost nothing yet.
    let prompt = s.find(&format!("{T}:2")).unwrap();
    assert_eq!(t.path_usage(&s, prompt).requests, 0);
    assert_eq!(t.path_usage(&s, s.leaf().unwrap()), total);
}

/// With `token_usage_record` lines, their `token_count` echoes count nothing; a
/// compaction's summary (which follows the last answer with no input between) is a
/// request of its own; a model the price table lacks shows its tokens and an unknown
/// cost, never a made-up one.
#[test]
fn records_win_and_an_unknown_model_has_an_unknown_cost() {
    let rec = |rid: &str, u: Value| {
        json!({"thread_id": T, "turn_id": "t", "response_id": rid, "usage": u,
               "turn_token_usage": null, "thread_token_usage": null})
    };
    let (_d, s) = open(&[
        line(1, "turn_context", json!({"model": "gpt-5-codex"})),
        line(2, "response_item", msg("user", "one")),
        line(3, "response_item", msg("assistant", "a1")),
        line(4, "token_usage_record", rec("r1", usage(1_000, 0, 10))),
        line(
            5,
            "event_msg",
            count(usage(1_000, 0, 10), usage(1_000, 0, 10)),
        ),
        line(6, "turn_context", json!({"model": "gpt-9-unheard-of"})),
        line(7, "response_item", msg("user", "two")),
        line(8, "response_item", msg("assistant", "a2")),
        line(9, "token_usage_record", rec("r2", usage(2_000, 500, 20))),
        line(
            10,
            "event_msg",
            count(usage(3_000, 500, 30), usage(2_000, 500, 20)),
        ),
        line(11, "response_item", msg("assistant", "summary")),
        line(12, "token_usage_record", rec("r3", usage(300, 0, 3))),
        line(
            13,
            "event_msg",
            count(usage(3_300, 500, 33), usage(300, 0, 3)),
        ),
    ]);
    let t = Table::build(&s, &Prices::snapshot());
    let total = t.total();
    assert_eq!(total.requests, 3);
    assert_eq!(total.tokens.total(), 1_010 + 2_020 + 303);
    assert_eq!(total.unpriced, 2);
    assert_eq!(total.unpriced_models, ["gpt-9-unheard-of"]);
    let a2 = s.find(&format!("{T}:8")).unwrap();
    let summary = s.find(&format!("{T}:11")).unwrap();
    assert_eq!(t.own[a2 as usize].as_ref().unwrap().tokens.cache_read, 500);
    assert_eq!(
        t.own[summary as usize].as_ref().unwrap().tokens.total(),
        303
    );
    let text = t.session_text(&s);
    assert!(text.contains(" + unknown"), "{text}");
    assert!(text.contains("(no price for gpt-9-unheard-of)"), "{text}");
    let a1 = t.own_usage(s.find(&format!("{T}:3")).unwrap());
    assert!((a1.cost - 0.00135).abs() < 1e-12, "{}", a1.cost);
}

/// ccusage 20.0.24's `codex session` report of each fixture home
/// (`tests/fixtures/codex/ccusage/`): one row per page file with that page's own
/// accounting lines. For every page it lists, the requests recorded in that page
/// count the same tokens and cost here. It leaves out three pages sessionfs counts:
/// the compressed page of `own-zst` (it reads no `.jsonl.zst`), and in `samples` the
/// fork `…-68ff` and the subagent `…-8c96` (their requests are their own lines, no
/// copy of their parents'; why ccusage skips them was not found).
#[test]
fn each_page_counts_what_ccusage_counts_for_its_file() {
    use super::store::Codex;
    use super::usage::requests;
    let prices = Prices::snapshot();
    let rates = prices.rates("gpt-5-codex").unwrap();
    for (set, left_out) in [
        (
            "samples",
            &[
                "rollout-2026-12-01T19-38-15-01a2331d-68ff-76e1-bf99-c1ba471b9285",
                "rollout-2026-12-01T19-38-24-01a2331d-8c96-72e0-ac04-cd237fd70dc8",
            ][..],
        ),
        ("own", &[][..]),
        (
            "own-zst",
            &["rollout-2026-12-01T23-42-25-01a233fc-f62c-79e0-b2f3-257e7f73df38"][..],
        ),
    ] {
        let home = fixtures().join(set).join("codex-home");
        let codex = Codex::load(&Root::Home(home));
        let mut per_page: HashMap<String, (crate::model::core::usage::Tokens, usize)> =
            HashMap::new();
        let mut seen = HashSet::new();
        for t in 0..codex.threads.len() {
            for q in requests(&codex, t) {
                if !seen.insert(q.line) {
                    continue;
                }
                let f = &codex.pages[q.line.page].file.path;
                let stem = f.file_name().unwrap().to_str().unwrap();
                let stem = stem.split(".jsonl").next().unwrap().to_string();
                let e = per_page.entry(stem).or_default();
                e.0.add(&q.tokens);
                e.1 += 1;
            }
        }
        let cc: Value = serde_json::from_slice(
            &std::fs::read(fixtures().join(format!("ccusage/{set}.json"))).unwrap(),
        )
        .unwrap();
        let mut listed = HashSet::new();
        for row in cc["sessions"].as_array().unwrap() {
            let file = row["sessionFile"].as_str().unwrap();
            listed.insert(file.to_string());
            let (tokens, _) = per_page[file];
            assert_eq!(
                tokens.total(),
                row["totalTokens"].as_u64().unwrap(),
                "{file}"
            );
            assert_eq!(
                tokens.input + tokens.cache_read,
                row["inputTokens"].as_u64().unwrap(),
                "{file}"
            );
            assert_eq!(tokens.output, row["outputTokens"].as_u64().unwrap());
            let cost = rates.cost(&tokens);
            assert!(
                (cost - row["costUSD"].as_f64().unwrap()).abs() < 1e-9,
                "{file}: {cost} {}",
                row["costUSD"]
            );
        }
        let mut missing: Vec<&str> = per_page
            .keys()
            .filter(|k| !listed.contains(*k))
            .map(String::as_str)
            .collect();
        missing.sort();
        assert_eq!(missing, left_out, "{set}");
    }
}
