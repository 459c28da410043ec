//! The fast reader and the serde path against `serde_json::from_slice::<Value>`, on
//! generated lines: valid JSON with hard strings, numbers and nesting, then damaged.
//!
//! A reader here takes `s` as a string, `i` as an `i64`, `u` as a `u64`, `f` as an
//! `f64` and `o` as an object of the same keys, at the top of a line; whatever the
//! path, it must accept exactly the lines a `Value` accepts as an object and read
//! what the `Value`'s accessors read. The generators say when a line is plain (valid,
//! and nothing the fast reader leaves to serde): those the fast reader must accept,
//! so that it cannot pass by being unsure of everything.

use super::*;
use proptest::prelude::*;
use serde_json::Value;

/// What is read of a line or of its `o`: `s`, `i`, `u`, `f` (as bits: `-0.0` is not
/// `0.0`), and `o`'s own (one level).
#[derive(Debug, Default, Clone, PartialEq)]
struct Fields {
    s: Option<String>,
    i: Option<i64>,
    u: Option<u64>,
    f: Option<u64>,
    o: Option<Box<Fields>>,
}

fn by_value(line: &[u8]) -> Option<Fields> {
    fn of(v: &Value, deep: bool) -> Fields {
        Fields {
            s: v["s"].as_str().map(str::to_string),
            i: v["i"].as_i64(),
            u: v["u"].as_u64(),
            f: v["f"].as_f64().map(f64::to_bits),
            o: (deep && v["o"].is_object()).then(|| Box::new(of(&v["o"], false))),
        }
    }
    match serde_json::from_slice::<Value>(line) {
        Ok(v @ Value::Object(_)) => Some(of(&v, true)),
        _ => None,
    }
}

fn fast_fields(line: &[u8]) -> Result<Fields, Unsure> {
    fn field<'a>(f: &mut Fields, k: &[u8], r: &mut Reader<'a>, deep: bool) -> Result<(), Unsure> {
        match k {
            b"s" => f.s = r.str()?.map(|c| c.into_owned()),
            b"i" => f.i = r.i64()?,
            b"u" => f.u = r.u64()?,
            b"f" => f.f = r.f64()?.map(f64::to_bits),
            b"o" if deep => {
                let mut o = Fields::default();
                let is =
                    r.object(&mut |k: &[u8], r: &mut Reader<'a>| field(&mut o, k, r, false))?;
                f.o = is.then(|| Box::new(o));
            }
            _ => r.skip()?,
        }
        Ok(())
    }
    let mut f = Fields::default();
    Reader::object_line(line, |k: &[u8], r: &mut Reader<'_>| {
        field(&mut f, k, r, true)
    })?;
    Ok(f)
}

/// The serde path's reading of [`Fields`].
struct Deep(Fields);
struct Flat(Fields);

enum K {
    S,
    I,
    U,
    F,
    O,
    Other,
}

impl<'de> Deserialize<'de> for K {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<K, D::Error> {
        key(d, |k| match k {
            "s" => K::S,
            "i" => K::I,
            "u" => K::U,
            "f" => K::F,
            "o" => K::O,
            _ => K::Other,
        })
    }
}

fn from_map<'de, A: MapAccess<'de>>(mut a: A, deep: bool) -> Result<Fields, A::Error> {
    let mut f = Fields::default();
    while let Some(k) = a.next_key::<K>()? {
        match k {
            K::S => f.s = a.next_value::<Str>()?.0.map(|c| c.into_owned()),
            K::I => f.i = a.next_value::<I64>()?.0,
            K::U => f.u = a.next_value::<U64>()?.0,
            K::F => f.f = a.next_value::<F64>()?.0.map(f64::to_bits),
            K::O if deep => f.o = a.next_value::<Obj<Flat>>()?.0.map(|o| Box::new(o.0)),
            _ => {
                a.next_value::<Skip>()?;
            }
        }
    }
    Ok(f)
}

impl<'de> FromMap<'de> for Deep {
    fn from_map<A: MapAccess<'de>>(a: A) -> Result<Self, A::Error> {
        from_map(a, true).map(Deep)
    }
}

impl<'de> FromMap<'de> for Flat {
    fn from_map<A: MapAccess<'de>>(a: A) -> Result<Self, A::Error> {
        from_map(a, false).map(Flat)
    }
}

fn by_serde(line: &[u8]) -> Option<Fields> {
    serde_json::from_slice::<Obj<Deep>>(line)
        .ok()?
        .0
        .map(|d| d.0)
}

/// A reader as the agents write one: fast, else serde.
fn read(line: &[u8]) -> Option<Fields> {
    match fast_fields(line) {
        Ok(f) => Some(f),
        Err(Unsure) => by_serde(line),
    }
}

/// A piece of JSON text and whether it is plain (see the module doc).
type Piece = (Vec<u8>, bool);

fn join(parts: Vec<Piece>) -> Piece {
    let plain = parts.iter().all(|p| p.1);
    (parts.into_iter().flat_map(|p| p.0).collect(), plain)
}

/// A piece of a string's body; `bad` weighs what serde_json refuses (the fast
/// reader is unsure of it) against 300 for the rest, so that most lines hold one
/// hard case or none and a broken rule shows.
fn str_piece(bad: u32) -> impl Strategy<Value = Piece> {
    let fixed = |s: &[(&str, bool)]| {
        let v: Vec<Piece> = s.iter().map(|(t, p)| (t.as_bytes().to_vec(), *p)).collect();
        prop::sample::select(v)
    };
    prop_oneof![
        // Plain runs, long enough to cross the 16- and 64-byte steps.
        160 => "[ -!#-\\[\\]-~]{0,80}".prop_map(|s| (s.into_bytes(), true)),
        80 => fixed(&[
            ("\\\"", true), ("\\\\", true), ("\\/", true), ("\\b", true), ("\\f", true),
            ("\\n", true), ("\\r", true), ("\\t", true), ("\\u0041", true), ("\\u00e9", true),
            ("\\uFFFF", true), ("\\u0000", true), ("\\ud83d\\ude00", true),
            ("\\uDBFF\\uDFFF", true), ("\\uD800\\uDC00", true),
            ("é", true), ("€", true), ("😀", true), ("\u{7f}", true), ("\u{10ffff}", true),
        ]),
        20 => "\\\\u[0-9a-fA-F]{4}".prop_map(|s| {
            let n = u16::from_str_radix(&s[2..], 16).unwrap();
            (s.into_bytes(), !(0xD800..=0xDFFF).contains(&n))
        }),
        40 => any::<char>().prop_map(|c| {
            (c.to_string().into_bytes(), c >= ' ' && c != '"' && c != '\\')
        }),
        bad => hard_piece(),
    ]
}

/// What serde_json refuses in a string: escapes, then raw bytes.
fn hard_piece() -> impl Strategy<Value = Piece> {
    let fixed = |s: &[(&str, bool)]| {
        let v: Vec<Piece> = s.iter().map(|(t, p)| (t.as_bytes().to_vec(), *p)).collect();
        prop::sample::select(v)
    };
    prop_oneof![
        fixed(&[
            ("\\ud800", false),
            ("\\udc00", false),
            ("\\udfff", false),
            ("\\ud800\\u0041", false),
            ("\\ud800\\n", false),
            ("\\ud800\\ud800", false),
            ("\\udbff\\u", false),
            ("\\x", false),
            ("\\u12", false),
            ("\\uZZZZ", false),
            ("\\'", false),
            ("\\", false),
            ("\\U0041", false),
        ]),
        // Raw bytes: control bytes, stray continuation bytes, overlong and surrogate
        // encodings, truncated characters, past U+10FFFF.
        prop::sample::select(vec![
            vec![0x00],
            vec![0x09],
            vec![0x0a],
            vec![0x1f],
            vec![0x80],
            vec![0xbf],
            vec![0xc0, 0x80],
            vec![0xc1, 0xbf],
            vec![0xc3],
            vec![0xe2, 0x82],
            vec![0xed, 0xa0, 0x80],
            vec![0xf4, 0x90, 0x80, 0x80],
            vec![0xf5, 0x80, 0x80, 0x80],
            vec![0xf0, 0x8f, 0xbf, 0xbf],
            vec![0xe0, 0x9f, 0xbf],
            vec![0xff],
            vec![0xfe],
        ])
        .prop_map(|v| (v, false)),
    ]
}

fn string(bad: u32) -> impl Strategy<Value = Piece> {
    prop::collection::vec(str_piece(bad), 0..6).prop_map(|parts| {
        let (body, plain) = join(parts);
        let mut v = vec![b'"'];
        v.extend(body);
        v.push(b'"');
        (v, plain)
    })
}

fn number(bad: u32) -> impl Strategy<Value = Piece> {
    let fixed: Vec<(&str, bool)> = vec![
        ("0", true),
        ("-0", true),
        ("-0.0", true),
        ("7", true),
        ("-3", true),
        ("1.0", true),
        ("1e2", true),
        ("1E+2", true),
        ("1e-2", true),
        ("0.5e-400", true),
        ("1e-999", true),
        ("1e400", false),
        ("-1e400", false),
        ("1e308", false),
        ("1.7976931348623157e308", false),
        ("1.8e308", false),
        ("2.5e-324", true),
        ("4.9e-324", true),
        ("9223372036854775807", true),
        ("9223372036854775808", true),
        ("-9223372036854775808", true),
        ("-9223372036854775809", true),
        ("18446744073709551615", true),
        ("18446744073709551616", true),
        ("-18446744073709551616", true),
        ("123456789012345678901234567890", true),
        ("0e99999999999", false),
        ("1e99999999999", false),
        ("01", false),
        ("-", false),
        ("1.", false),
        (".5", false),
        ("1e", false),
        ("1e+", false),
        ("+1", false),
        ("0x1", false),
        ("1.5.2", false),
        ("--1", false),
        ("Infinity", false),
        ("NaN", false),
    ];
    let pick = |plain: bool| {
        let v: Vec<Piece> = fixed
            .iter()
            .filter(|f| f.1 == plain)
            .map(|(t, p)| (t.as_bytes().to_vec(), *p))
            .collect();
        prop::sample::select(v)
    };
    prop_oneof![
        40 => pick(true),
        bad => pick(false),
        // The grammar's parts at random: what the fast reader vouches for is up to 300
        // integer digits and an exponent of three digits at most that keeps it there.
        20 => (
            any::<bool>(),
            "0|[1-9][0-9]{0,24}",
            prop::option::of("[0-9]{1,20}"),
            prop::option::of(("[eE]", "[+-]?", "[0-9]{1,4}")),
        ).prop_map(|(neg, int, frac, exp)| {
            let mut s = String::new();
            if neg {
                s.push('-');
            }
            s += &int;
            if let Some(f) = frac {
                s.push('.');
                s += &f;
            }
            let mut plain = true;
            if let Some((e, sign, d)) = exp {
                s += &e;
                s += &sign;
                s += &d;
                let v: usize = d.parse().unwrap();
                plain = d.len() <= 3 && (sign == "-" || int.len() + v <= 300);
            }
            (s.into_bytes(), plain)
        }),
        // Hundreds of digits, around the edge of `f64`.
        5 => (300usize..320, prop::option::of(0usize..12)).prop_map(|(n, e)| {
            let mut s = "9".repeat(n);
            if let Some(e) = e {
                s += &format!("e{e}");
            }
            let plain = n + e.unwrap_or(0) <= 300 && n <= 300;
            (s.into_bytes(), plain)
        }),
    ]
}

fn scalar(bad: u32) -> impl Strategy<Value = Piece> {
    prop_oneof![
        30 => string(bad),
        30 => number(bad),
        10 => prop::sample::select(vec!["true", "false", "null"])
            .prop_map(|s| (s.as_bytes().to_vec(), true)),
        bad => prop::sample::select(vec!["nul", "tru", "True", "nulll"])
            .prop_map(|s| (s.as_bytes().to_vec(), false)),
    ]
}

/// A key: the few the readers read (twice in a line often enough), escaped or not.
fn key_text(bad: u32) -> impl Strategy<Value = Piece> {
    prop_oneof![
        4 => prop::sample::select(vec!["s", "i", "u", "f", "o", "x", "\\u0073", "\\u006f", "o\\n"])
            .prop_map(|k| (format!("\"{k}\"").into_bytes(), true)),
        1 => string(bad),
    ]
}

/// Whitespace between tokens: mostly none; a form feed is no JSON whitespace.
fn ws(bad: u32) -> impl Strategy<Value = Piece> {
    prop_oneof![
        400 => Just((vec![], true)),
        100 => "[ \t\r\n]{1,3}".prop_map(|s| (s.into_bytes(), true)),
        bad => Just((vec![0x0c], false)),
    ]
}

fn value(bad: u32) -> impl Strategy<Value = Piece> {
    scalar(bad).prop_recursive(5, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(
                (ws(bad), key_text(bad), ws(bad), inner.clone(), ws(bad)),
                0..6
            )
            .prop_map(|kv| {
                let mut parts = vec![(b"{".to_vec(), true)];
                for (n, (w1, k, w2, v, w3)) in kv.into_iter().enumerate() {
                    if n > 0 {
                        parts.push((b",".to_vec(), true));
                    }
                    parts.extend([w1, k, w2, (b":".to_vec(), true), v, w3]);
                }
                parts.push((b"}".to_vec(), true));
                join(parts)
            }),
            prop::collection::vec((ws(bad), inner, ws(bad)), 0..5).prop_map(|vs| {
                let mut parts = vec![(b"[".to_vec(), true)];
                for (n, (w1, v, w2)) in vs.into_iter().enumerate() {
                    if n > 0 {
                        parts.push((b",".to_vec(), true));
                    }
                    parts.extend([w1, v, w2]);
                }
                parts.push((b"]".to_vec(), true));
                join(parts)
            }),
        ]
    })
}

/// A value nested in `n` arrays or objects, around serde_json's limit (127 in all,
/// the line's own object included); the fast reader vouches for 100.
fn deep(bad: u32) -> impl Strategy<Value = Piece> {
    (90usize..132, any::<bool>(), scalar(bad)).prop_map(|(n, objects, (v, p))| {
        let (open, close): (&[u8], &[u8]) = if objects {
            (b"{\"o\":", b"}")
        } else {
            (b"[", b"]")
        };
        let mut out = open.repeat(n);
        out.extend(v);
        out.extend(close.repeat(n));
        (out, p && n < fast::MAX_DEPTH as usize)
    })
}

/// A line: an object of generated fields, then at times damaged (a byte inserted,
/// replaced or removed, the line cut, something after it).
fn line(bad: u32) -> impl Strategy<Value = Piece> {
    let field = (
        ws(bad),
        key_text(bad),
        ws(bad),
        prop_oneof![4 => value(bad), 1 => deep(bad)],
        ws(bad),
    );
    let obj = (ws(bad), prop::collection::vec(field, 0..7), ws(bad)).prop_map(|(w0, kv, w9)| {
        let mut parts = vec![w0, (b"{".to_vec(), true)];
        for (n, (w1, k, w2, v, w3)) in kv.into_iter().enumerate() {
            if n > 0 {
                parts.push((b",".to_vec(), true));
            }
            parts.extend([w1, k, w2, (b":".to_vec(), true), v, w3]);
        }
        parts.extend([(b"}".to_vec(), true), w9]);
        join(parts)
    });
    let top = prop_oneof![
        12 => obj,
        1 => value(bad).prop_map(|(v, _)| (v, false)),
    ];
    (top, 0..24u8, any::<prop::sample::Index>(), any::<u8>()).prop_map(
        |((mut v, p), how, at, b)| {
            let i = at.index(v.len() + 1);
            let plain = match how {
                0 => {
                    v.insert(i, b);
                    false
                }
                1 if i < v.len() => {
                    v[i] = b;
                    false
                }
                2 if i < v.len() => {
                    v.remove(i);
                    false
                }
                3 => {
                    v.truncate(i);
                    false
                }
                4 => {
                    v.extend_from_slice(b" x");
                    false
                }
                5 => {
                    v.extend_from_slice(b",");
                    false
                }
                _ => p,
            };
            (v, plain)
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(4096)
    ))]
    #[test]
    fn every_path_reads_what_the_value_reads((l, plain) in (1u32..4).prop_flat_map(line)) {
        let show = String::from_utf8_lossy(&l).into_owned();
        let want = by_value(&l);
        // The fast reader, where it is sure; never sure of a line a `Value` refuses.
        if let Ok(f) = fast_fields(&l) {
            prop_assert_eq!(Some(f), want.clone(), "fast: {}", show);
        } else {
            prop_assert!(!plain, "plain, yet unsure: {}", show);
        }
        prop_assert_eq!(by_serde(&l), want.clone(), "serde: {}", show);
        prop_assert_eq!(read(&l), want, "read: {}", show);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(4096)
    ))]
    /// One hard string piece and one number of any kind in a valid line, skipped
    /// where the reader reads nothing and read where it reads: each rule alone.
    #[test]
    fn one_hard_case_in_a_valid_line(
        (v, _) in value(1),
        (piece, _) in hard_piece(),
        (num, _) in number(40),
        (a, b) in ("[ -!#-\\[\\]-~]{0,20}", "[ -!#-\\[\\]-~]{0,20}"),
        read_it in any::<bool>(),
    ) {
        let k = if read_it { "s" } else { "x" };
        let mut l = format!("{{\"v\":{}", String::from_utf8_lossy(&v)).into_bytes();
        l.extend(format!(",\"{k}\":\"{a}").bytes());
        l.extend(&piece);
        l.extend(format!("{b}\",\"{}\":", if read_it { "f" } else { "y" }).bytes());
        l.extend(&num);
        l.extend(b"}");
        let show = String::from_utf8_lossy(&l).into_owned();
        let want = by_value(&l);
        if let Ok(f) = fast_fields(&l) {
            prop_assert_eq!(Some(f), want.clone(), "fast: {}", show);
        }
        prop_assert_eq!(read(&l), want, "read: {}", show);
    }
}

/// Hand-picked lines: what the fast reader must vouch for, what it must leave to
/// serde, and the answers either way.
#[test]
fn the_hard_cases() {
    let sure: &[&[u8]] = &[
        br#"{}"#,
        b" \t{ \"s\" : \"a\" } \r\n",
        br#"{"s":"a\"b\\c\/d\b\f\n\r\t\u0041\u00e9\uffff\ud83d\ude00"}"#,
        "{\"s\":\"é€😀\u{7f}\"}".as_bytes(),
        br#"{"\u0073":"escaped key","s":"last wins"}"#,
        br#"{"s":"first","s":7}"#,
        br#"{"i":-0,"u":-0,"f":-0}"#,
        br#"{"i":-9223372036854775808,"u":18446744073709551615,"f":18446744073709551616}"#,
        br#"{"i":9223372036854775808,"u":18446744073709551616,"f":-9223372036854775809}"#,
        br#"{"i":1.0,"u":1e2,"f":1e-999}"#,
        br#"{"f":2.5e-324,"i":[1],"u":{"u":1}}"#,
        br#"{"o":{"s":"in","o":{"s":"deeper"}},"o":{"i":3}}"#,
        br#"{"o":{"s":"x"},"o":[]}"#,
        br#"{"x":[[[]],{},{"a":[true,false,null]}]}"#,
    ];
    for l in sure {
        let show = String::from_utf8_lossy(l);
        let f = fast_fields(l).unwrap_or_else(|_| panic!("unsure of {show}"));
        assert_eq!(Some(f), by_value(l), "{show}");
    }
    let unsure: &[&[u8]] = &[
        b"",
        b"[]",
        b"1",
        br#"{"s":"\ud800"}"#,
        br#"{"s":"\udc00"}"#,
        br#"{"s":"\ud800\u0041"}"#,
        br#"{"s":"\ud800\n"}"#,
        br#"{"s":"\x"}"#,
        b"{\"s\":\"\x01\"}",
        b"{\"s\":\"\xff\"}",
        b"{\"s\":\"\xed\xa0\x80\"}",
        b"{\"s\":\"\xc0\x80\"}",
        br#"{"f":1e400}"#,
        br#"{"f":1.8e308}"#,
        br#"{"f":01}"#,
        br#"{"f":1.}"#,
        br#"{"s":1,}"#,
        br#"{"s":1} x"#,
        b"{\"s\":1}\x0c",
        br#"{"s" 1}"#,
        br#"{"s":tru}"#,
        // Separators missing or doubled, in a walked array or object.
        br#"{"x":[1 2]}"#,
        br#"{"x":["a" "b"]}"#,
        br#"{"x":[[] {}]}"#,
        br#"{"x":[1,]}"#,
        br#"{"x":[,1]}"#,
        br#"{"x":[1,,2]}"#,
        br#"{"x":{"a":1 "b":2}}"#,
        br#"{"x":{"a":1,}}"#,
        br#"{"x":[1}"#,
        br#"{"s":1 "i":2}"#,
        br#"{"s":1,,"i":2}"#,
    ];
    for l in unsure {
        let show = String::from_utf8_lossy(l);
        assert_eq!(fast_fields(l), Err(Unsure), "{show}");
        assert_eq!(read(l), by_value(l), "{show}");
    }
    // Nesting: 127 containers in all are accepted, 128 refused; the fast reader
    // vouches for up to 100.
    for n in [98, 99, 100, 125, 126, 127] {
        let l = format!("{{\"x\":{}1{}}}", "[".repeat(n), "]".repeat(n));
        let l = l.as_bytes();
        assert_eq!(fast_fields(l).is_ok(), n < fast::MAX_DEPTH as usize, "{n}");
        assert_eq!(read(l), by_value(l), "{n}");
        assert_eq!(read(l).is_some(), n < 127, "{n}");
    }
}
