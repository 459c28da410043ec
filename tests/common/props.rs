//! What the prefilters' property tests share: strings made of risky pieces, JSON
//! written in random encodings, patterns cut from rendered text, and the number of
//! cases.
//!
//! Each test (`tests/search_props.rs` for Pi, `tests/search_props_claude.rs` for
//! Claude Code, `tests/search_props_codex.rs` for Codex) writes the raw lines of its format with a [`Style`], renders them as
//! the mount does, cuts patterns from the rendered text with [`Cut::pattern`], and
//! checks that the prefilter keeps every line whose rendering matches. A format whose
//! writer nests JSON in strings (Codex) makes a second [`Style`] for the inner JSON;
//! everything here is plain data, so a test can build its own strategies around it.
//!
//! Included with `#[path = "common/props.rs"] mod props;`, so that the tests that
//! mount (which include `common/mod.rs`) do not compile it.
#![allow(dead_code)]

use proptest::prelude::*;
use sessionfs::search::pattern::{Pattern, Syntax};

/// Strings made of up to `most - 1` of `pieces`.
pub fn text(pieces: &'static [&'static str], most: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(pieces), 0..most).prop_map(|v| v.concat())
}

/// How a value is written.
#[derive(Debug, Clone)]
pub struct Style {
    /// Per character: 0 as `JSON.stringify`, 1 `\u` lower-case, 2 `\u` upper-case
    /// (and `\/` for a `/`).
    pub escapes: Vec<u8>,
    /// Spaces after colons and commas.
    pub spaced: bool,
    /// How numbers are written: 0 and 1 as JavaScript does, then `N.0`, `Ne0`,
    /// `N/10.N%10e1`, `N.50`.
    pub number_form: u8,
    /// Keys written as strings are (escapes and all), or as `JSON.stringify` writes
    /// them (for a format whose index reads keys raw).
    pub escaped_keys: bool,
}

/// JavaScript's way [`Style`]: what a format's own writer produces. A test needs it
/// half the time: an escape `JSON.stringify` would not write makes its line a
/// candidate whatever the pattern, which hides what the other rules must catch.
pub fn plain() -> Style {
    Style {
        escapes: vec![0],
        spaced: false,
        number_form: 0,
        escaped_keys: false,
    }
}

/// Random [`Style`]s: each character escaped otherwise once in `plain + 2` (spread
/// over 64 positions), spaced one time in five, numbers in each form.
pub fn style(plain: usize, escaped_keys: bool) -> impl Strategy<Value = Style> {
    let mut weights = vec![0u8; plain];
    weights.extend([1, 2]);
    (
        prop::collection::vec(prop::sample::select(weights), 64),
        prop::bool::weighted(0.2),
        0u8..6,
    )
        .prop_map(move |(escapes, spaced, number_form)| Style {
            escapes,
            spaced,
            number_form,
            escaped_keys,
        })
}

impl Style {
    /// `s` as a JSON string.
    pub fn string(&self, s: &str) -> String {
        let mut out = String::from("\"");
        for (k, c) in s.chars().enumerate() {
            let how = self.escapes[k % self.escapes.len()];
            let u = |out: &mut String, c: char, upper: bool| {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    if upper {
                        out.push_str(&format!("\\u{unit:04X}"));
                    } else {
                        out.push_str(&format!("\\u{unit:04x}"));
                    }
                }
            };
            match (c, how) {
                ('/', 1 | 2) => out.push_str("\\/"),
                (_, 1) => u(&mut out, c, false),
                (_, 2) => u(&mut out, c, true),
                ('"', _) => out.push_str("\\\""),
                ('\\', _) => out.push_str("\\\\"),
                ('\n', _) => out.push_str("\\n"),
                ('\r', _) => out.push_str("\\r"),
                ('\t', _) => out.push_str("\\t"),
                ('\u{8}', _) => out.push_str("\\b"),
                ('\u{c}', _) => out.push_str("\\f"),
                (c, _) if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                (c, _) => out.push(c),
            }
        }
        out.push('"');
        out
    }

    /// A key.
    pub fn key(&self, s: &str) -> String {
        if self.escaped_keys {
            self.string(s)
        } else {
            format!("\"{s}\"")
        }
    }

    pub fn number(&self, n: i64) -> String {
        match self.number_form {
            0 | 1 => n.to_string(),
            2 => format!("{n}.0"),
            3 => format!("{n}e0"),
            4 => format!("{}.{}e1", n / 10, (n % 10).abs()),
            _ => format!("{n}.50"),
        }
    }

    pub fn colon(&self) -> &'static str {
        if self.spaced { ": " } else { ":" }
    }

    pub fn comma(&self) -> &'static str {
        if self.spaced { ", " } else { "," }
    }

    pub fn object(&self, fields: &[(&str, String)]) -> String {
        let body: Vec<String> = fields
            .iter()
            .map(|(k, v)| format!("{}{}{v}", self.key(k), self.colon()))
            .collect();
        format!("{{{}}}", body.join(self.comma()))
    }

    pub fn array(&self, items: Vec<String>) -> String {
        format!("[{}]", items.join(self.comma()))
    }
}

/// Standard base64 with padding.
pub fn base64(b: &[u8]) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in b.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for k in 0..4 {
            if k <= c.len() {
                out.push(A[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A pattern cut from rendered text: which text, which of its lines, where, how
/// long, and with which options.
#[derive(Debug, Clone)]
pub struct Cut {
    pub text: usize,
    pub line: usize,
    pub start: usize,
    pub len: usize,
    pub icase: bool,
    pub word: bool,
    /// Replace the middle character by `.` (an extended regex).
    pub wildcard: bool,
}

pub fn cut() -> impl Strategy<Value = Cut> {
    (
        (any::<usize>(), any::<usize>(), any::<usize>()),
        1usize..14,
        any::<bool>(),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.3),
    )
        .prop_map(|((text, line, start), len, icase, word, wildcard)| Cut {
            text,
            line,
            start,
            len,
            icase,
            word,
            wildcard,
        })
}

impl Cut {
    /// The pattern cut from one of `texts` (read as UTF-8, lossily), as written, and
    /// its syntax; `None` when that text has no line that is not empty.
    pub fn source(&self, texts: &[&[u8]]) -> Option<(String, Syntax)> {
        let text = String::from_utf8_lossy(texts.get(self.text % texts.len().max(1))?);
        let lines: Vec<&str> = text.split('\n').filter(|l| !l.is_empty()).collect();
        if lines.is_empty() {
            return None;
        }
        let chars: Vec<char> = lines[self.line % lines.len()].chars().collect();
        let start = self.start % chars.len();
        let lit: String = chars[start..(start + self.len).min(chars.len())]
            .iter()
            .collect();
        let n = lit.chars().count();
        Some(if self.wildcard && n >= 3 {
            let a: String = lit.chars().take(n / 2).collect();
            let b: String = lit.chars().skip(n / 2 + 1).collect();
            (
                format!("{}.{}", regex::escape(&a), regex::escape(&b)),
                Syntax::Extended,
            )
        } else {
            (lit, Syntax::Fixed)
        })
    }

    /// [`Cut::source`], compiled; `None` also when the pattern does not compile.
    pub fn pattern(&self, texts: &[&[u8]]) -> Option<(String, Pattern)> {
        let (pat, syntax) = self.source(texts)?;
        let p = Pattern::new(&pat, syntax, self.icase, self.word).ok()?;
        Some((pat, p))
    }
}

/// The number of cases: `PROPTEST_CASES`, else `default` (small, so that the run of
/// every test stays short; the full runs set it).
pub fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
