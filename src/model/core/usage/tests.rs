use super::*;
use crate::model::core::session::Session;
use std::io::Write;

fn session(lines: &[String]) -> (tempfile::NamedTempFile, Session) {
    let mut f = tempfile::Builder::new()
        .suffix(".jsonl")
        .tempfile()
        .unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
    f.flush().unwrap();
    let s = Session::open(f.path()).unwrap();
    (f, s)
}

const PI_HEAD: &str =
    r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#;

fn pi_asst(
    id: &str,
    parent: &str,
    model: &str,
    input: u64,
    output: u64,
    cost: Option<f64>,
) -> String {
    let cost = cost.map_or(String::new(), |c| {
        format!(r#","cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":{c}}}"#)
    });
    format!(
        r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"2026-01-01T00:00:01.000Z","message":{{"role":"assistant","content":[{{"type":"text","text":"x"}}],"provider":"anthropic","model":"{model}","usage":{{"input":{input},"output":{output},"cacheRead":10,"cacheWrite":5,"totalTokens":0{cost}}},"stopReason":"stop","timestamp":1}}}}"#
    )
}

fn pi_user(id: &str, parent: Option<&str>) -> String {
    let p = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{p},"timestamp":"2026-01-01T00:00:00.500Z","message":{{"role":"user","content":"hi","timestamp":1}}}}"#
    )
}

#[test]
fn pi_counts_messages_usage_entries_and_summaries_each_once() {
    let usage_entry = r#"{"type":"usage","id":"w1","parentId":"a2","timestamp":"2026-01-01T00:00:02.000Z","kind":"cache_warm","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":3,"output":1,"cacheRead":500,"cacheWrite":0,"totalTokens":504,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0.0002}}}"#;
    let compaction = r#"{"type":"compaction","id":"c1","parentId":"w1","timestamp":"2026-01-01T00:00:03.000Z","summary":"s","firstKeptEntryId":"a2","tokensBefore":9,"usage":{"input":40,"output":7,"cacheRead":0,"cacheWrite":0,"totalTokens":47,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0.001}}}"#;
    let (_f, s) = session(&[
        PI_HEAD.into(),
        pi_user("u1", None),
        pi_asst("a1", "u1", "claude-sonnet-4-5", 100, 20, Some(0.01)),
        pi_user("u2", Some("a1")),
        pi_asst("a2", "u2", "claude-sonnet-4-5", 200, 30, Some(0.02)),
        usage_entry.into(),
        compaction.into(),
        // a second branch from a1
        pi_user("u3", Some("a1")),
        pi_asst("a3", "u3", "claude-sonnet-4-5", 50, 5, Some(0.005)),
    ]);
    let t = Table::build(&s, &prices::Prices::snapshot());
    let total = t.total();
    assert_eq!(total.requests, 5);
    assert_eq!(total.tokens.input, 100 + 200 + 3 + 40 + 50);
    assert!((total.cost - 0.0362).abs() < 1e-12);
    let sources = t.by_source();
    assert_eq!(sources.len(), 3);
    // The leaf is the last line (a3): its branch is u1 a1 u3 a3.
    let leaf = s.leaf().unwrap();
    assert_eq!(s.id_string(leaf), "a3");
    let cur = t.path_usage(&s, leaf);
    assert_eq!(cur.tokens.input, 150);
    let dead = t.dead_ends(&s);
    let mut sum = dead.clone();
    sum.add(&cur);
    assert_eq!(sum.tokens, total.tokens);
    assert_eq!(dead.tokens.input, 243);
    assert_eq!(dead.requests, 3);
    // The compaction's running total holds everything on its path.
    let c1 = s.find("c1").unwrap();
    assert_eq!(t.path_usage(&s, c1).requests, 4);
    let text = t.entry_text(&s, c1);
    assert!(
        text.starts_with("id: c1\nentry: summary unrecorded, tokens 47"),
        "{text}"
    );
    assert!(text.contains("to here: tokens 931 "), "{text}");
    let u1 = s.find("u1").unwrap();
    assert!(t.entry_text(&s, u1).starts_with("id: u1\nentry: none\n"));
    let st = t.session_text(&s);
    assert!(st.contains("dead ends: tokens "), "{st}");
    assert!(st.contains("branch a3 (current): "), "{st}");
    assert!(st.contains("source usage entry: "), "{st}");
    let j: serde_json::Value = serde_json::from_str(&t.session_json(&s)).unwrap();
    assert_eq!(j["deadEnds"]["inputTokens"], 243);
    assert_eq!(j["branches"].as_array().unwrap().len(), 2);
}

#[test]
fn pi_without_a_recorded_cost_is_priced_and_an_unknown_model_stays_unknown() {
    let (_f, s) = session(&[
        PI_HEAD.into(),
        pi_user("u1", None),
        pi_asst("a1", "u1", "claude-sonnet-4-5", 1000, 100, None),
        pi_user("u2", Some("a1")),
        pi_asst("a2", "u2", "mystery-model", 10, 1, None),
    ]);
    let t = Table::build(&s, &prices::Prices::snapshot());
    let a1 = s.find("a1").unwrap();
    let r = t.own[a1 as usize].as_ref().unwrap();
    assert!(!r.recorded);
    let want = 1000.0 * 3e-6 + 100.0 * 1.5e-5 + 10.0 * 3e-7 + 5.0 * 3.75e-6;
    assert!((r.cost.unwrap() - want).abs() < 1e-12);
    let total = t.total();
    assert_eq!(total.unpriced, 1);
    assert_eq!(total.cost_text(), format!("{} + unknown", dollars(want)));
    let a2 = s.find("a2").unwrap();
    assert_eq!(t.own_usage(a2).cost_text(), "unknown");
    assert!(
        t.entry_text(&s, a2)
            .contains("(no price for anthropic/mystery-model)")
    );
    let j: serde_json::Value = serde_json::from_str(&t.entry_json(&s, a2)).unwrap();
    assert!(j["entry"]["usage"]["cost"].is_null());
    assert_eq!(j["toHere"]["costComplete"], false);
}

fn cc_line(uuid: &str, parent: Option<&str>, body: &str) -> String {
    let p = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
    format!(
        r#"{{"parentUuid":{p},"isSidechain":false,{body},"uuid":"{uuid}","timestamp":"2026-01-01T00:00:00.000Z","sessionId":"s","cwd":"/w","version":"2.1.332"}}"#
    )
}

fn cc_asst(
    uuid: &str,
    parent: &str,
    mid: &str,
    req: Option<&str>,
    model: &str,
    output: u64,
) -> String {
    let req = req.map_or(String::new(), |r| format!(r#","requestId":"{r}""#));
    cc_line(
        uuid,
        Some(parent),
        &format!(
            r#""type":"assistant","message":{{"id":"{mid}","role":"assistant","model":"{model}","content":[{{"type":"text","text":"x"}}],"usage":{{"input_tokens":100,"cache_creation_input_tokens":0,"cache_read_input_tokens":1000,"output_tokens":{output}}}}}{req}"#
        ),
    )
}

#[test]
fn claude_code_counts_a_streamed_reply_once_at_its_first_line_with_its_final_output() {
    let user = cc_line(
        "u1",
        None,
        r#""type":"user","message":{"role":"user","content":"hi"}"#,
    );
    let (_f, s) = session(&[
        user,
        cc_asst("a1", "u1", "msg_1", Some("req_1"), "claude-opus-4-8", 2),
        cc_asst("a2", "a1", "msg_1", Some("req_1"), "claude-opus-4-8", 2),
        cc_asst("a3", "a2", "msg_1", Some("req_1"), "claude-opus-4-8", 150),
        // no requestId: grouped by the message id alone
        cc_asst("b1", "a3", "msg_2", None, "claude-opus-4-8", 7),
        cc_asst("b2", "b1", "msg_2", None, "claude-opus-4-8", 9),
        // an error Claude Code wrote itself: no request
        cc_asst("e1", "b2", "msg_3", Some("req_3"), "<synthetic>", 0),
    ]);
    let t = Table::build(&s, &prices::Prices::snapshot());
    let a1 = s.find("a1").unwrap();
    let a3 = s.find("a3").unwrap();
    let r = t.own[a1 as usize].as_ref().unwrap();
    assert_eq!(r.tokens.output, 150);
    assert!(t.own[a3 as usize].is_none());
    assert_eq!(t.counted_at[a3 as usize], a1);
    assert!(
        t.entry_text(&s, a3)
            .starts_with("id: a3\nentry: part of a reply counted at a1\n")
    );
    let total = t.total();
    assert_eq!(total.requests, 2);
    assert_eq!(total.tokens.output, 159);
    assert_eq!(total.tokens.cache_read, 2000);
    let want = 2.0 * (100.0 * 5e-6 + 1000.0 * 5e-7) + 159.0 * 2.5e-5;
    assert!((total.cost - want).abs() < 1e-12);
    // The path to the first line of the reply already holds it.
    assert_eq!(t.path_usage(&s, a1).tokens.output, 150);
    assert_eq!(t.reply_keys.len(), 2);
}

#[test]
fn cost_state_is_read_from_the_last_line_and_never_added() {
    let user = cc_line(
        "u1",
        None,
        r#""type":"user","message":{"role":"user","content":"hi"}"#,
    );
    let cs = |cost: f64, input: u64| {
        format!(
            r#"{{"type":"cost-state","sessionId":"s","totalCostUSD":{cost},"modelUsage":{{"claude-future-1":{{"inputTokens":{input},"outputTokens":3,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"costUSD":{cost}}}}},"hasUnknownModelCost":false}}"#
        )
    };
    let (_f, s) = session(&[
        user,
        cc_asst("a1", "u1", "msg_1", Some("req_1"), "claude-future-1", 3),
        cs(0.01, 100),
        cs(0.05, 900),
    ]);
    let t = Table::build(&s, &prices::Prices::snapshot());
    let c = t.cost_state.as_ref().unwrap();
    assert_eq!(c.lines, 2);
    assert_eq!(c.cost, 0.05);
    assert_eq!(c.tokens.input, 900);
    assert_eq!(t.total().tokens.input, 100);
    assert_eq!(t.total().cost_text(), "unknown");
    let text = t.session_text(&s);
    assert!(
        text.contains("claude code's own count (cost-state): cost $0.0500"),
        "{text}"
    );
    // A model the table lacks: the session's cost is Claude Code's own for it (never
    // added to a priced request; per branch it stays unknown: the record is the
    // session's).
    assert!(
        text.contains("session: tokens 1,103 (input 100, output 3, cache read 1,000, cache write 0), cost $0.0500, 1 request (claude-future-1 at the agent's own recorded cost)"),
        "{text}"
    );
    assert!(text.contains("current branch (a1): tokens 1,103"), "{text}");
    let row = crate::model::core::usage::report::build(
        &[(s.path().to_path_buf(), String::new())],
        &prices::Prices::snapshot(),
    );
    assert_eq!(row.sessions[0].usage.cost_text(), "$0.0500");
    // One it does not price (it said so): unknown stays unknown.
    let mut u = t.total();
    let mut own = c.clone();
    own.unknown_model_cost = true;
    assert!(!u.price_from_own_count(&own));
    assert_eq!(u.cost_text(), "unknown");
}

/// The word in other lines, twice in one line, and in a cost-state line that is
/// damaged: each line is read once, in order, and only whole cost-state lines count.
#[test]
fn cost_state_lines_are_found_whatever_else_names_them() {
    let user = cc_line(
        "u1",
        None,
        r#""type":"user","message":{"role":"user","content":"\"cost-state\" and \"cost-state\""}"#,
    );
    let cs = |cost: f64| {
        format!(
            r#"{{"type":"cost-state","note":"\"cost-state\"","totalCostUSD":{cost},"modelUsage":{{}},"hasUnknownModelCost":false}}"#
        )
    };
    let (_f, s) = session(&[
        cs(0.5),
        user,
        cs(0.7),
        r#"{"type":"cost-state","totalCostUSD":0.9"#.to_string(),
    ]);
    let t = Table::build(&s, &prices::Prices::snapshot());
    let c = t.cost_state.as_ref().unwrap();
    assert_eq!(c.lines, 2);
    assert_eq!(c.cost, 0.7);
}

#[test]
fn numbers_read_well() {
    assert_eq!(group(0), "0");
    assert_eq!(group(1234), "1,234");
    assert_eq!(group(1234567), "1,234,567");
    assert_eq!(dollars(0.12345), "$0.1235");
    assert_eq!(dollars(12.345), "$12.35");
    assert_eq!(round(0.12232000000000001), 0.12232);
    assert_eq!(Usage::default().cost_text(), "$0.0000");
}
