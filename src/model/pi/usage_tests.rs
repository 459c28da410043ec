//! The block-read, [`Fields`]-parsed [`fill`] against the per-entry path it replaced
//! (one `pread` per entry, [`Session::entry_value`], the fields read off a [`Value`]),
//! kept here verbatim as the reference. The lines drawn put every field [`record_of`]
//! reads in every shape a [`Value`] accessor tells apart (missing, `null`, wrong type,
//! negative, fractional, escaped, given twice), and damage the two parsers could judge
//! differently if one of them cut corners: lines cut short, invalid UTF-8, lone
//! surrogates, numbers out of range, nesting past serde_json's limit, in ignored
//! fields and in read ones.

use super::*;
use crate::model::core::session::Session;
use proptest::prelude::*;
use std::collections::HashMap;
use std::io::Write;

/// `t.own` and `t.reply_keys`.
type Filled = (Vec<Option<Record>>, HashMap<u32, (String, String)>);

/// The per-entry path as it was: `t.own` and `t.reply_keys`.
fn reference(s: &Session, prices: &Prices) -> Filled {
    let mut own = vec![None; s.entries().len()];
    let mut keys = HashMap::new();
    for i in 0..s.entries().len() as u32 {
        if !s.entry(i).is_node() {
            continue;
        }
        let Ok(bytes) = s.entry_bytes(i) else {
            continue;
        };
        if memchr::memmem::find(&bytes, b"\"usage\"").is_none() {
            continue;
        }
        let Ok(v) = s.entry_value(i) else { continue };
        own[i as usize] = reference_record(&v, prices);
        if own[i as usize].is_some()
            && !s.is_v1()
            && let Some(ts) = v.get("timestamp").and_then(Value::as_str)
        {
            keys.insert(i, (format!("pi:{}", s.id_string(i)), ts.to_string()));
        }
    }
    (own, keys)
}

fn reference_record(v: &Value, prices: &Prices) -> Option<Record> {
    let (u, model, source) = match v.get("type").and_then(Value::as_str)? {
        "message" => {
            let m = v.get("message")?;
            if m.get("role").and_then(Value::as_str) != Some("assistant") {
                return None;
            }
            (m.get("usage")?, reference_model_of(m), Source::Message)
        }
        "usage" => (v.get("usage")?, reference_model_of(v), Source::UsageEntry),
        "compaction" | "branch_summary" => {
            (v.get("usage")?, reference_model_of(v), Source::Summary)
        }
        _ => return None,
    };
    if !u.is_object() {
        return None;
    }
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    let tokens = Tokens {
        input: n("input"),
        output: n("output"),
        cache_read: n("cacheRead"),
        // `+` as the release build ran it (the fast path keeps that, without a
        // debug build's overflow panic).
        cache_write: n("cacheWrite").saturating_add(n("cacheWrite1h")),
    };
    let recorded = u
        .get("cost")
        .and_then(|c| c.get("total"))
        .and_then(Value::as_f64);
    let bare = model.rsplit_once('/').map_or(model.as_str(), |(_, m)| m);
    let cost = recorded.or_else(|| prices.rates(bare).map(|r| r.cost(&tokens)));
    Some(Record {
        model,
        source,
        tokens,
        cost,
        recorded: recorded.is_some(),
    })
}

fn reference_model_of(v: &Value) -> String {
    let p = v.get("provider").and_then(Value::as_str);
    let m = v.get("model").and_then(Value::as_str);
    match (p, m) {
        (Some(p), Some(m)) => format!("{p}/{m}"),
        (None, Some(m)) => m.to_string(),
        _ => "unrecorded".to_string(),
    }
}

/// Values that trip a parser that skips without checking (serde_json's `IgnoredAny`
/// accepts the first three; a `Value` does not).
fn hostile() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        r#""\ud800 lone""#.to_string(),
        "1e400".to_string(),
        format!("{}1{}", "[".repeat(130), "]".repeat(130)),
        format!("{}1{}", "[".repeat(100), "]".repeat(100)),
        r#""ok \"usage\" \u00e9""#.to_string(),
        r#"{"usage":{"input":1}}"#.to_string(),
        "-0".to_string(),
        "123456789012345678901234567890".to_string(),
    ])
}

/// A value for a string field ([`Value::as_str`]).
fn string_value() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        r#""claude-sonnet-4-5""#,
        r#""anthropic""#,
        r#""clau\u0064e-opus-4-1""#,
        r#""gpt-5""#,
        r#""2026-01-05T09:00:00.000Z""#,
        r#""""#,
        "null",
        "7",
        "[\"x\"]",
        r#"{"a":1}"#,
        r#""a/b/c""#,
    ])
    .prop_map(str::to_string)
}

/// A value for a token count ([`Value::as_u64`]).
fn count_value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (0u64..100_000).prop_map(|n| n.to_string()),
        1 => Just("-5".to_string()),
        1 => Just("3.0".to_string()),
        1 => Just("1e3".to_string()),
        1 => Just("18446744073709551615".to_string()),
        1 => Just("18446744073709551616".to_string()),
        1 => Just("\"12\"".to_string()),
        1 => Just("null".to_string()),
        1 => hostile(),
    ]
}

/// `{k: v, ...}` from pairs, some keys possibly twice (the last one wins in a `Value`).
fn object(pairs: Vec<(String, String)>) -> String {
    let body: Vec<String> = pairs
        .into_iter()
        .map(|(k, v)| format!("{k:?}:{v}"))
        .collect();
    format!("{{{}}}", body.join(","))
}

/// Some of `pairs`, in any order, one of them maybe twice.
fn pick(pairs: Vec<(&'static str, BoxedStrategy<String>)>) -> BoxedStrategy<String> {
    let n = pairs.len();
    let each: Vec<BoxedStrategy<Option<(String, String)>>> = pairs
        .into_iter()
        .map(|(k, v)| prop::option::weighted(0.8, v.prop_map(move |v| (k.to_string(), v))).boxed())
        .collect();
    (each, 0..n * 2, any::<u64>())
        .prop_map(|(kv, dup, seed)| {
            let mut kv: Vec<(String, String)> = kv.into_iter().flatten().collect();
            if let Some(d) = kv.get(dup).cloned() {
                kv.push(d);
            }
            // A fixed shuffle by the seed: any order.
            let len = kv.len();
            if len > 1 {
                let mut x = seed;
                for i in (1..len).rev() {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    kv.swap(i, (x >> 33) as usize % (i + 1));
                }
            }
            object(kv)
        })
        .boxed()
}

fn usage_value() -> BoxedStrategy<String> {
    let cost = prop_oneof![
        3 => pick(vec![
            ("total", prop_oneof![
                3 => (0u32..100_000).prop_map(|n| format!("{}", n as f64 / 7.0)),
                1 => Just("2".to_string()),
                1 => Just("-1".to_string()),
                1 => Just("\"0.1\"".to_string()),
                1 => Just("null".to_string()),
                1 => hostile(),
            ].boxed()),
            ("input", count_value().boxed()),
        ]),
        1 => Just("0.5".to_string()).boxed(),
        1 => Just("null".to_string()).boxed(),
    ];
    prop_oneof![
        6 => pick(vec![
            ("input", count_value().boxed()),
            ("output", count_value().boxed()),
            ("cacheRead", count_value().boxed()),
            ("cacheWrite", count_value().boxed()),
            ("cacheWrite1h", count_value().boxed()),
            ("totalTokens", count_value().boxed()),
            ("cost", cost.boxed()),
        ]),
        1 => Just("null".to_string()).boxed(),
        1 => Just("[1,2]".to_string()).boxed(),
        1 => Just("\"usage\"".to_string()).boxed(),
    ]
    .boxed()
}

fn kind_value() -> BoxedStrategy<String> {
    prop::sample::select(vec![
        r#""message""#,
        r#""message""#,
        r#""usage""#,
        r#""compaction""#,
        r#""branch_summary""#,
        r#""model_change""#,
        r#""mess\u0061ge""#,
        "3",
        "null",
    ])
    .prop_map(str::to_string)
    .boxed()
}

/// One entry line (before damage): ids from a small set so that some are shadowed.
fn entry() -> BoxedStrategy<String> {
    let message = pick(vec![
        (
            "role",
            prop::sample::select(vec![
                r#""assistant""#,
                r#""assistant""#,
                r#""user""#,
                r#""hookMessage""#,
                "1",
            ])
            .prop_map(str::to_string)
            .boxed(),
        ),
        ("usage", usage_value()),
        ("provider", string_value().boxed()),
        ("model", string_value().boxed()),
        ("content", hostile().boxed()),
    ]);
    let id = prop::sample::select(vec!["e1", "e2", "e3", "e4", "e5", "e6"])
        .prop_map(|s| format!("{s:?}"))
        .boxed();
    pick(vec![
        ("type", kind_value()),
        ("id", id.clone()),
        ("parentId", id),
        ("timestamp", string_value().boxed()),
        (
            "message",
            prop_oneof![4 => message, 1 => Just("\"m\"".to_string()).boxed()].boxed(),
        ),
        ("usage", usage_value()),
        ("provider", string_value().boxed()),
        ("model", string_value().boxed()),
        ("details", hostile().boxed()),
    ])
}

/// A line as written: whole, cut short, with a bad byte, or no object at all.
fn line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        10 => entry().prop_map(String::into_bytes),
        2 => (entry(), 1usize..40).prop_map(|(l, cut)| l.as_bytes()[..l.len().saturating_sub(cut)].to_vec()),
        2 => (entry(), any::<prop::sample::Index>()).prop_map(|(l, at)| {
            // A byte that is no UTF-8, anywhere (inside a string or not).
            let mut b = l.into_bytes();
            let at = at.index(b.len() + 1);
            b.insert(at, 0xff);
            b
        }),
        1 => Just(b"[\"usage\"]".to_vec()),
        1 => Just(b"\"usage\"".to_vec()),
    ]
}

fn header() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        r#"{"type":"session","version":3,"id":"s-3","timestamp":"2026-01-05T09:00:00.000Z"}"#,
        r#"{"type":"session","version":2,"id":"s-2","timestamp":"2026-01-05T09:00:00.000Z"}"#,
        r#"{"type":"session","id":"s-v1","timestamp":"2026-01-05T09:00:00.000Z"}"#,
    ])
}

fn check(header: &str, lines: &[Vec<u8>]) -> Result<(), TestCaseError> {
    let mut f = tempfile::Builder::new()
        .suffix(".jsonl")
        .tempfile()
        .unwrap();
    f.write_all(header.as_bytes()).unwrap();
    f.write_all(b"\n").unwrap();
    for l in lines {
        f.write_all(l).unwrap();
        f.write_all(b"\n").unwrap();
    }
    f.flush().unwrap();
    let s = Session::open(f.path()).unwrap();
    let prices = Prices::snapshot();
    let t = Table::build(&s, &prices);
    let (own, keys) = reference(&s, &prices);
    prop_assert_eq!(&t.own, &own);
    prop_assert_eq!(&t.reply_keys, &keys);
    // And `record` on a parsed entry, the other way in.
    for i in 0..s.entries().len() as u32 {
        if let Ok(v) = s.entry_value(i) {
            prop_assert_eq!(record(&v, &prices), reference_record(&v, &prices));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn fill_reads_what_the_per_entry_path_reads(
        h in header(),
        lines in prop::collection::vec(line(), 0..14),
    ) {
        check(h, &lines)?;
    }
}

/// Each hostile value where the reader skips it, in an entry that would count: the
/// line fails to parse (and counts nothing) exactly when a `Value` fails.
#[test]
fn hostile_values_in_skipped_fields_fail_as_a_value_fails() {
    let good = r#""usage":{"input":5,"output":2,"cost":{"total":0.5}},"provider":"p","model":"m""#;
    for bad in [
        r#""\ud800""#.to_string(),
        r#""\udc00 x""#.to_string(),
        "1e400".to_string(),
        "-1e400".to_string(),
        format!("{}1{}", "[".repeat(200), "]".repeat(200)),
        format!("{}1{}", "{\"a\":".repeat(200), "}".repeat(200)),
        r#""\x""#.to_string(),
        "\"tab\there\"".to_string(),
    ] {
        for key in ["\"x\"", "\"\\ud800\""] {
            let line = format!(
                r#"{{"type":"usage","id":"u1","parentId":null,"timestamp":"2026-01-05T09:00:00.000Z",{good},{key}:{bad}}}"#
            );
            check(
                r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-05T09:00:00.000Z"}"#,
                &[line.into_bytes()],
            )
            .unwrap();
        }
    }
}

/// A large session reads through several blocks, with shadowed entries and a header
/// between: the same records as entry by entry.
#[test]
fn many_blocks_read_what_single_reads_read() {
    let mut lines = Vec::new();
    let pad = "x".repeat(3000);
    for i in 0..4000 {
        let id = format!("e{}", i % 3900);
        lines.push(format!(
            r#"{{"type":"message","id":"{id}","parentId":null,"timestamp":"2026-01-05T09:00:0{}.000Z","message":{{"role":"assistant","content":"{pad}","provider":"p","model":"m{}","usage":{{"input":{i},"output":1,"cost":{{"total":0.25}}}}}}}}"#,
            i % 10,
            i % 7
        ).into_bytes());
    }
    check(
        r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-05T09:00:00.000Z"}"#,
        &lines,
    )
    .unwrap();
}
