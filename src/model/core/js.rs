//! JavaScript's semantics for JSON values, as the agents' own code (Node) applies them:
//! `JSON.stringify`, truthiness, `Date` parsing, number formatting. Every agent that
//! reproduces what its CLI sends or writes uses these, so they live in the core.

use serde_json::{Number, Value};

/// Exactly JavaScript's `JSON.stringify(v)`.
pub fn js_stringify(v: &Value) -> String {
    let mut out = String::new();
    write_json(&mut out, v, None, 0);
    out
}

/// JavaScript's `JSON.stringify(v, null, 2)`.
pub fn js_stringify_pretty(v: &Value) -> String {
    let mut out = String::new();
    write_json(&mut out, v, Some("  "), 0);
    out
}

pub fn newline_indent(out: &mut String, indent: &str, depth: usize) {
    out.push('\n');
    for _ in 0..depth {
        out.push_str(indent);
    }
}

pub fn write_json(out: &mut String, v: &Value, indent: Option<&str>, depth: usize) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&js_number(n)),
        Value::String(s) => write_json_string(out, s),
        Value::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if let Some(ind) = indent {
                    newline_indent(out, ind, depth + 1);
                }
                write_json(out, item, indent, depth + 1);
            }
            if let Some(ind) = indent {
                newline_indent(out, ind, depth);
            }
            out.push(']');
        }
        Value::Object(map) => {
            if map.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push('{');
            let mut first = true;
            let mut member = |out: &mut String, k: &str, v: &Value| {
                if !first {
                    out.push(',');
                }
                first = false;
                if let Some(ind) = indent {
                    newline_indent(out, ind, depth + 1);
                }
                write_json_string(out, k);
                out.push(':');
                if indent.is_some() {
                    out.push(' ');
                }
                write_json(out, v, indent, depth + 1);
            };
            // JavaScript objects list array-index keys first, ascending.
            if map.keys().any(|k| array_index(k).is_some()) {
                let mut indexed: Vec<(u32, &String, &Value)> = map
                    .iter()
                    .filter_map(|(k, v)| array_index(k).map(|i| (i, k, v)))
                    .collect();
                indexed.sort_by_key(|(i, _, _)| *i);
                for (_, k, v) in indexed {
                    member(out, k, v);
                }
                for (k, v) in map.iter().filter(|(k, _)| array_index(k).is_none()) {
                    member(out, k, v);
                }
            } else {
                for (k, v) in map {
                    member(out, k, v);
                }
            }
            if let Some(ind) = indent {
                newline_indent(out, ind, depth);
            }
            out.push('}');
        }
    }
}

/// The index if `k` is a canonical array index (`0` to `4294967294`).
pub fn array_index(k: &str) -> Option<u32> {
    let b = k.as_bytes();
    if b.is_empty()
        || b.len() > 10
        || !b.iter().all(u8::is_ascii_digit)
        || (b[0] == b'0' && b.len() > 1)
    {
        return None;
    }
    let v: u64 = k.parse().ok()?;
    (v < u64::from(u32::MAX)).then_some(v as u32)
}

pub fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: Option<&str> = match b {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            b'\n' => Some("\\n"),
            b'\r' => Some("\\r"),
            b'\t' => Some("\\t"),
            0x08 => Some("\\b"),
            0x0c => Some("\\f"),
            0x00..=0x1f => None,
            _ => continue,
        };
        out.push_str(&s[start..i]);
        match esc {
            Some(e) => out.push_str(e),
            None => out.push_str(&format!("\\u{b:04x}")),
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// JavaScript truthiness of a JSON value (`None` is `undefined`).
pub fn js_truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(_) | Value::Object(_)) => true,
    }
}

/// JavaScript's `===` on two JSON values. Objects and arrays are equal only
/// when they are the same value in memory, as JavaScript compares references.
pub fn js_strict_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(Value::Null), Some(Value::Null)) => true,
        (Some(Value::Bool(x)), Some(Value::Bool(y))) => x == y,
        (Some(Value::Number(x)), Some(Value::Number(y))) => x.as_f64() == y.as_f64(),
        (Some(Value::String(x)), Some(Value::String(y))) => x == y,
        (Some(x @ (Value::Array(_) | Value::Object(_))), Some(y)) => std::ptr::eq(x, y),
        _ => false,
    }
}

/// JavaScript's `String(v)` (also what a template literal does): strings as
/// they are, numbers as JavaScript prints them, arrays joined with `,`
/// (`null`/`undefined` elements as empty strings), objects as
/// `[object Object]`, and `None` as `undefined`.
pub fn js_to_string(v: Option<&Value>) -> String {
    match v {
        None => "undefined".into(),
        Some(Value::Null) => "null".into(),
        Some(Value::Bool(b)) => if *b { "true" } else { "false" }.into(),
        Some(Value::Number(n)) => js_number(n),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => {
            let parts: Vec<String> = items
                .iter()
                .map(|item| match item {
                    Value::Null => String::new(),
                    other => js_to_string(Some(other)),
                })
                .collect();
            parts.join(",")
        }
        Some(Value::Object(_)) => "[object Object]".into(),
    }
}

/// A JSON number as JavaScript's `Number.prototype.toString()` writes it
/// (which is also `JSON.stringify`'s form for finite numbers): `5.0` is `5`,
/// `-0` is `0`, `1e21` is `1e+21`, `1e-7` stays `1e-7`, and integers beyond
/// 2^53 are rounded to the nearest double first, as `JSON.parse` does.
pub fn js_number(n: &Number) -> String {
    const EXACT: u64 = 1 << 53;
    if let Some(u) = n.as_u64() {
        if u <= EXACT {
            return u.to_string();
        }
        return js_f64(u as f64);
    }
    if let Some(i) = n.as_i64() {
        if i.unsigned_abs() <= EXACT {
            return i.to_string();
        }
        return js_f64(i as f64);
    }
    js_f64(n.as_f64().unwrap_or(f64::NAN))
}

/// `Number.prototype.toString()` for an `f64` (radix 10).
pub fn js_f64(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x == 0.0 {
        return "0".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if x < 0.0 {
        return format!("-{}", js_f64(-x));
    }
    // Rust's `{:e}` gives the shortest digits that round-trip, which is what
    // ECMAScript's Number::toString asks for.
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci
        .split_once('e')
        .expect("LowerExp always has an exponent");
    let mut exp: i32 = exp.parse().expect("LowerExp exponent is an integer");
    let mut digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if let Some((even, even_exp)) = even_tie_digits(x, &digits, exp) {
        digits = even;
        exp = even_exp;
    }
    let k = digits.len() as i32;
    let n = exp + 1; // value = 0.DIGITS × 10^n
    if k <= n && n <= 21 {
        let mut s = digits;
        s.extend(std::iter::repeat_n('0', (n - k) as usize));
        s
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{}", "0".repeat((-n) as usize), digits)
    } else {
        let sign = if n - 1 < 0 { '-' } else { '+' };
        let e = (n - 1).abs();
        if k == 1 {
            format!("{digits}e{sign}{e}")
        } else {
            format!("{}.{}e{sign}{e}", &digits[..1], &digits[1..])
        }
    }
}

/// Where `x` lies exactly halfway between two shortest `k`-digit decimals,
/// ECMAScript takes the one with an even last digit; Rust's shortest
/// formatting may take the other (`8195.8770751953125` gives Rust
/// `…313`, JavaScript `…312`). Returns the even digits and their exponent
/// when they differ from `digits`.
pub fn even_tie_digits(x: f64, digits: &str, exp: i32) -> Option<(String, i32)> {
    let k = digits.len();
    if k >= 18 {
        return None;
    }
    // Cheap filter: a tie needs digit k+1 of x's exact expansion to be 5.
    let rounded = format!("{x:.k$e}");
    if rounded.split_once('e')?.0.as_bytes().last() != Some(&b'5') {
        return None;
    }
    // The exact expansion of a double has at most 767 significant digits.
    let exact = format!("{x:.800e}");
    let (mant, e) = exact.split_once('e')?;
    let e: i32 = e.parse().ok()?;
    let all: Vec<u8> = mant.bytes().filter(|c| *c != b'.').collect();
    if all[k] != b'5' || all[k + 1..].iter().any(|c| *c != b'0') {
        return None;
    }
    // x = D.5 (in units of the k-th digit): candidates D and D+1.
    let mut lower: Vec<u8> = all[..k].to_vec();
    let mut even = if (lower[k - 1] - b'0').is_multiple_of(2) {
        (String::from_utf8(lower).ok()?, e)
    } else {
        // D+1, carrying; 99…9 + 1 becomes 10…0 with one more exponent.
        let mut i = k;
        loop {
            if i == 0 {
                lower.insert(0, b'1');
                lower.pop();
                break (String::from_utf8(lower).ok()?, e + 1);
            }
            i -= 1;
            if lower[i] == b'9' {
                lower[i] = b'0';
            } else {
                lower[i] += 1;
                break (String::from_utf8(lower).ok()?, e);
            }
        }
    };
    while even.0.len() > 1 && even.0.ends_with('0') {
        even.0.pop();
    }
    if even.0 == digits && even.1 == exp {
        return None;
    }
    // Only if the even candidate reads back as x (it does, except possibly
    // at a power-of-two boundary).
    let candidate: f64 = format!("{}.{}0e{}", &even.0[..1], &even.0[1..], even.1)
        .parse()
        .ok()?;
    (candidate == x).then_some(even)
}

/// `new Date(v).getTime()` as a JSON value: the milliseconds, or `null`
/// where JavaScript gets `NaN` (which `JSON.stringify` writes as `null`).
pub fn js_new_date(v: Option<&Value>) -> Value {
    let ms = match v {
        None => None,
        Some(Value::Null) => Some(0),
        Some(Value::Bool(b)) => Some(i64::from(*b)),
        Some(Value::Number(n)) => n.as_f64().and_then(time_clip),
        Some(Value::String(s)) => js_date_ms(s),
        Some(array @ Value::Array(_)) => js_date_ms(&js_to_string(Some(array))),
        Some(Value::Object(_)) => None,
    };
    ms.map_or(Value::Null, |ms| Value::Number(ms.into()))
}

pub const MAX_TIME_MS: i64 = 8_640_000_000_000_000;

/// ECMAScript TimeClip followed by ToIntegerOrInfinity.
pub fn time_clip(t: f64) -> Option<i64> {
    if !t.is_finite() || t.abs() > MAX_TIME_MS as f64 {
        return None;
    }
    Some(t.trunc() as i64)
}

/// `Date.parse(s)` as V8 (Node) does it, for the date strings that matter:
/// milliseconds since the epoch, or `None` for `NaN`.
///
/// The ECMAScript date-time format is parsed completely, with V8's leniency:
/// `YYYY`, `YYYY-MM`, `YYYY-MM-DD`, a six-digit signed year (`-000000` is
/// invalid), then optionally `T` (or `t`) `hh:mm[:ss[.f…]]` with any number
/// of fraction digits (the first three count), then `Z`/`z`, `±hh:mm` or
/// `±hhmm`. Hours may be `24` only as `24:00[:00[.000]]`. Days 1–31 are
/// accepted in every month and overflow into the next (`02-30` is March 2nd
/// or 1st). The result must lie within ±8.64e15 ms.
///
/// V8 also accepts a space instead of `T` (and then `UTC`, `GMT`, `±hh` and
/// a space before the offset) through its legacy parser; that form is
/// handled too. Other legacy formats (`Mon, 05 Jan 2026 …`, `2026-1-5`)
/// give `None`. A date-time without an offset is local time in JavaScript;
/// here it is taken as UTC.
pub fn js_date_ms(s: &str) -> Option<i64> {
    let mut p = DateScanner {
        s: s.as_bytes(),
        i: 0,
    };
    // Date: [±YYYYYY | YYYY] [-MM [-DD]]
    let year: i64 = match p.peek() {
        Some(sign @ (b'+' | b'-')) => {
            p.i += 1;
            let (v, len) = p.number()?;
            if len != 6 || (sign == b'-' && v == 0) {
                return None;
            }
            if sign == b'-' { -v } else { v }
        }
        Some(b'0'..=b'9') => {
            let (v, len) = p.number()?;
            if len != 4 {
                return None;
            }
            v
        }
        _ => return None,
    };
    let (mut month, mut day) = (1, 1);
    let mut full_date = false;
    if p.eat(b'-') {
        month = p.fixed(2).filter(|m| (1..=12).contains(m))?;
        if p.eat(b'-') {
            day = p.fixed(2).filter(|d| (1..=31).contains(d))?;
            full_date = true;
        }
    }
    let days = days_from_civil(year, month, day);
    let mut time_ms = 0;
    let mut offset_min = 0;
    match p.peek() {
        None => {}
        Some(b'T' | b't') if p.s.get(p.i + 1).is_none_or(|c| !c.is_ascii_alphabetic()) => {
            p.i += 1;
            time_ms = p.time(2)?;
            offset_min = match p.peek() {
                Some(b'Z' | b'z') if p.word_len() == 1 => {
                    p.i += 1;
                    0
                }
                Some(b'+' | b'-') => p.iso_offset()?,
                _ => 0,
            };
            if p.peek().is_some() {
                return None;
            }
        }
        // V8's legacy parser after a complete date: whitespace, then a time.
        Some(c) if full_date && is_js_space(c) => {
            while p.peek().is_some_and(is_js_space) {
                p.i += 1;
            }
            time_ms = p.time(1)?;
            while p.peek().is_some_and(is_js_space) {
                p.i += 1;
            }
            offset_min = match p.peek() {
                None => 0,
                Some(b'+' | b'-') => p.legacy_offset()?,
                Some(c) if c.is_ascii_alphabetic() => {
                    let len = p.word_len();
                    let word = p.s[p.i..p.i + len].to_ascii_lowercase();
                    if !matches!(&word[..], b"z" | b"utc" | b"gmt" | b"ut") {
                        return None;
                    }
                    p.i += len;
                    match p.peek() {
                        Some(b'+' | b'-') => p.legacy_offset()?,
                        _ => 0,
                    }
                }
                _ => return None,
            };
            while p.peek().is_some_and(is_js_space) {
                p.i += 1;
            }
            if p.peek().is_some() {
                return None;
            }
        }
        _ => return None,
    }
    let ms = days * 86_400_000 + time_ms - offset_min * 60_000;
    (ms.abs() <= MAX_TIME_MS).then_some(ms)
}

pub fn is_js_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

pub struct DateScanner<'a> {
    s: &'a [u8],
    i: usize,
}

impl DateScanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// A run of digits: its value (first 9 digits, as V8 keeps) and length.
    fn number(&mut self) -> Option<(i64, usize)> {
        let start = self.i;
        let mut v: i64 = 0;
        while let Some(c @ b'0'..=b'9') = self.peek() {
            if self.i - start < 9 {
                v = v * 10 + i64::from(c - b'0');
            }
            self.i += 1;
        }
        let len = self.i - start;
        (len > 0).then_some((v, len))
    }

    fn fixed(&mut self, len: usize) -> Option<i64> {
        match self.number()? {
            (v, l) if l == len => Some(v),
            _ => None,
        }
    }

    fn word_len(&self) -> usize {
        self.s[self.i..]
            .iter()
            .take_while(|c| c.is_ascii_alphabetic())
            .count()
    }

    /// `hh:mm[:ss[.f…]]` in milliseconds; the hour has exactly two digits
    /// when `min_hour_digits` is 2, one or two when it is 1.
    fn time(&mut self, min_hour_digits: usize) -> Option<i64> {
        let (hour, len) = self.number()?;
        if len < min_hour_digits || len > 2 || hour > 24 {
            return None;
        }
        let h24 = hour == 24;
        if !self.eat(b':') {
            return None;
        }
        let minute = self.fixed(2).filter(|m| *m <= 59 && !(h24 && *m > 0))?;
        let mut second = 0;
        let mut milli = 0;
        if self.eat(b':') {
            second = self.fixed(2).filter(|s| *s <= 59 && !(h24 && *s > 0))?;
            if self.eat(b'.') {
                let start = self.i;
                self.number()?;
                let digits = &self.s[start..self.i];
                let mut ms = 0;
                for k in 0..3 {
                    ms = ms * 10 + digits.get(k).map_or(0, |c| i64::from(c - b'0'));
                }
                if h24 && ms > 0 {
                    return None;
                }
                milli = ms;
            }
        }
        Some(((hour * 60 + minute) * 60 + second) * 1000 + milli)
    }

    /// `±hh:mm` or `±hhmm`, in minutes east of UTC.
    fn iso_offset(&mut self) -> Option<i64> {
        let sign = if self.s[self.i] == b'+' { 1 } else { -1 };
        self.i += 1;
        let (v, len) = self.number()?;
        let (h, m) = match len {
            4 => (v / 100, v % 100),
            2 => {
                if !self.eat(b':') {
                    return None;
                }
                (v, self.fixed(2)?)
            }
            _ => return None,
        };
        if h > 23 || m > 59 {
            return None;
        }
        Some(sign * (h * 60 + m))
    }

    /// V8's legacy offsets: `±h`, `±hh`, `±hh:mm`, `±hmm`, `±hhmm`.
    fn legacy_offset(&mut self) -> Option<i64> {
        let sign = if self.s[self.i] == b'+' { 1 } else { -1 };
        self.i += 1;
        let (v, len) = self.number()?;
        let (h, m) = if self.eat(b':') {
            (v, self.fixed(2)?)
        } else {
            match len {
                1 | 2 => (v, 0),
                3 | 4 => (v / 100, v % 100),
                _ => return None,
            }
        };
        if h > 23 || m > 59 {
            return None;
        }
        Some(sign * (h * 60 + m))
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date; `day` may overflow
/// the month (ECMAScript MakeDay).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468 + (day - 1)
}

/// Parses a line as Pi does: `JSON.parse` of the UTF-8-decoded text.
///
/// A line that is valid UTF-8 as a whole (nearly every one) is parsed as a `str`: the
/// same parser and grammar as from bytes, without checking each string's UTF-8 again
/// (a context's lines are mostly strings). A line that fails that way is parsed the
/// byte way ([`parse_line_bytes`]), so failures and damaged text are handled as
/// before.
pub fn parse_line(bytes: &[u8]) -> Result<Value, String> {
    crate::model::core::input::check_values(bytes)?;
    if let Ok(text) = std::str::from_utf8(bytes)
        && let Ok(v) = serde_json::from_str::<Value>(text)
    {
        return Ok(v);
    }
    parse_line_bytes(bytes)
}

/// [`parse_line`] from the bytes: what it does for a line that is not valid UTF-8 or
/// does not parse (and, for tests, the reference for every line).
#[doc(hidden)]
pub fn parse_line_bytes(bytes: &[u8]) -> Result<Value, String> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => Ok(v),
        Err(e) => {
            if std::str::from_utf8(bytes).is_ok() {
                return Err(e.to_string());
            }
            let fixed = String::from_utf8_lossy(bytes);
            serde_json::from_str(&fixed).map_err(|e| e.to_string())
        }
    }
}

#[cfg(test)]
mod parse_line_tests {
    //! [`parse_line`]'s `str` way against the byte way it replaced.

    use super::{parse_line, parse_line_bytes};
    use proptest::prelude::*;

    /// Pieces of JSON text, good and bad: escapes (lone and paired surrogates),
    /// numbers past `f64` and `u64`, raw control characters, multi-byte and invalid
    /// UTF-8, brackets to nest past the parser's limit.
    fn piece() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            prop::sample::select(vec![
                &b"{"[..],
                b"}",
                b"[",
                b"]",
                b",",
                b":",
                b"\"",
                b"\"k\"",
                b"\"\\ud800\"",
                b"\"\\udc00\\ud800\"",
                b"\"\\ud83d\\ude00\"",
                b"\"\\u00e9\\n\\\"\"",
                b"\"\\x\"",
                b"1e400",
                b"-1e-400",
                b"18446744073709551616",
                b"-9223372036854775809",
                b"0.1",
                b"01",
                b"true",
                b"null",
                b"nul",
                b" ",
                b"\t",
                b"\x01",
                "é".as_bytes(),
                "😀".as_bytes(),
                b"\xff",
                b"\xc3",
                b"\xed\xa0\x80",
            ])
            .prop_map(<[u8]>::to_vec),
            prop::collection::vec(any::<u8>(), 0..4),
            (1usize..200).prop_map(|n| b"[".repeat(n)),
            (1usize..200).prop_map(|n| b"]".repeat(n)),
        ]
    }

    /// A whole line: mostly an object of a few members, often damaged.
    fn line() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            prop::collection::vec(piece(), 0..24).prop_map(|ps| ps.concat()),
            prop::collection::vec(piece(), 0..12).prop_map(|ps| {
                let mut l = b"{\"type\":\"message\",\"a\":".to_vec();
                if ps.is_empty() {
                    l.extend_from_slice(b"1");
                }
                for p in ps {
                    l.extend_from_slice(&p);
                }
                l.extend_from_slice(b",\"a\":[1,\"x\"]}");
                l
            }),
        ]
    }

    /// Valid JSON text of any shape, with strings of any characters written as
    /// serde_json writes them, sometimes with one byte changed.
    fn valid_line() -> impl Strategy<Value = Vec<u8>> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::Bool),
            any::<i64>().prop_map(Into::into),
            any::<u64>().prop_map(Into::into),
            any::<f64>().prop_map(Into::into),
            any::<String>().prop_map(serde_json::Value::String),
        ];
        let value = leaf.prop_recursive(4, 40, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
                prop::collection::vec((any::<String>(), inner), 0..6)
                    .prop_map(|kv| serde_json::Value::Object(kv.into_iter().collect())),
            ]
        });
        (value, any::<Option<(prop::sample::Index, u8)>>()).prop_map(|(v, change)| {
            let mut l = serde_json::to_vec(&v).unwrap();
            if let Some((at, b)) = change {
                let i = at.index(l.len());
                l[i] = b;
            }
            l
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn str_way_agrees_with_the_byte_way(l in line()) {
            prop_assert_eq!(parse_line(&l), parse_line_bytes(&l));
        }

        #[test]
        fn str_way_agrees_on_valid_and_altered_json(l in valid_line()) {
            prop_assert_eq!(parse_line(&l), parse_line_bytes(&l));
        }
    }

    #[test]
    fn the_two_ways_agree_on_edge_lines() {
        let deep = format!("{}{}", "[".repeat(130), "]".repeat(130));
        let lines: [&[u8]; 10] = [
            br#"{"a":"\ud800","b":1e400}"#,
            br#"{"a":1,"a":2,"b":3}"#,
            br#"{"n":18446744073709551616,"m":-0,"f":1.0e2}"#,
            b"{\"a\":\"\xff\"}",
            b"{\"a\":\"\xed\xa0\x80\"}",
            b"{\"a\":\"\x01\"}",
            deep.as_bytes(),
            b"",
            b"{} x",
            "{\"é\":\"😀\"}".as_bytes(),
        ];
        for l in lines {
            assert_eq!(
                parse_line(l),
                parse_line_bytes(l),
                "{}",
                String::from_utf8_lossy(l)
            );
        }
    }
}
