//! What the prefilters' property tests share: strings made of risky pieces, JSON
//! written in random encodings, patterns cut from rendered text, the number of cases,
//! and the two ways a test compares the prefilter with rendering everything.
//!
//! Each test (`tests/search_props.rs` for Pi, `tests/search_props_AGENT.rs` for the
//! others) writes the raw lines of its format with a [`Style`], renders them as the
//! mount does, cuts patterns from the rendered text with [`Cut::pattern`], and checks
//! that the prefilter keeps every line whose rendering matches. A format whose writer
//! nests JSON in strings (Codex) makes a second [`Style`] for the inner JSON.
//!
//! What differs between agents stays in their test: the pieces strings are made of,
//! the lines or rows written, where the session lives, how an entry is rendered. What
//! is the same logic is here, parameterised by the agent's [`Rules`]:
//!
//! - for a format whose lines can be rendered alone (Codex, Copilot CLI, Gemini CLI),
//!   the test lists each entry's line and content files ([`Entry`]), and
//!   [`check_entries`] asserts that the raw scan selects every line whose entry's
//!   files match;
//! - for a format whose entries need the session (Claude Code, Qwen Code, opencode),
//!   [`check_search`] runs the search of `sessionfs grep` ([`grep`]) with and without
//!   the prefilter and asserts that both print the same.
//!
//! The strategies here are the ones the tests always used (moved, not changed), so
//! that the `*.proptest-regressions` files beside the tests replay the same cases.
//!
//! Included with `#[path = "common/props.rs"] mod props;`, so that the tests that
//! mount (which include `common/mod.rs`) do not compile it.
#![allow(dead_code)]

use proptest::prelude::*;
use sessionfs::search::grepfile::{self, Mode};
use sessionfs::search::output::Printer;
use sessionfs::search::pattern::{Pattern, Syntax};
use sessionfs::search::prefilter::{HeldScan, Prefilter};
use sessionfs::search::rules::{self, Rules};
use sessionfs::search::session::{Chunk, Job, Search, search_file};
use std::ops::Range;
use std::path::Path;

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

/// Half the time plain but for spacing and numbers (as `JSON.stringify` writes
/// strings: any escape it would not write makes its line a candidate whatever the
/// pattern, which would hide what the rules must catch), else with random escapes and
/// spacing: how Codex, Copilot CLI and Gemini CLI lines are written.
pub fn spaced_or_style() -> impl Strategy<Value = Style> {
    let spaced = (prop::bool::weighted(0.2), 0u8..6).prop_map(|(spaced, number_form)| Style {
        spaced,
        number_form,
        ..plain()
    });
    prop_oneof![spaced, style(10, false)]
}

/// Half the time exactly as the agent writes ([`plain`]), else with random escapes
/// and spacing: how Claude Code, Qwen Code and opencode lines are written.
pub fn plain_or_style() -> impl Strategy<Value = Style> {
    prop_oneof![Just(plain()), style(10, false)]
}

/// The random parts of one line (or record, or part): which kind the test writes,
/// two texts, a number and a flag, each kind using them as it likes.
#[derive(Debug, Clone)]
pub struct Spec {
    pub kind: u8,
    pub a: String,
    pub b: String,
    pub n: i64,
    pub flag: bool,
}

/// Random [`Spec`]s: the kind from `kind`, both texts from `text()`, the number from
/// `n`.
pub fn spec<K, T>(kind: K, text: fn() -> T, n: Range<i64>) -> impl Strategy<Value = Spec>
where
    K: Strategy<Value = u8>,
    T: Strategy<Value = String>,
{
    (kind, text(), text(), n, any::<bool>()).prop_map(|(kind, a, b, n, flag)| Spec {
        kind,
        a,
        b,
        n,
        flag,
    })
}

/// Standard base64 with padding, for the tests' lines.
pub use sessionfs::model::core::base64::encode as base64;

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

/// An entry of a file whose lines render alone: the start of the line that holds it,
/// and its content files (its KIND file and its images) as the mount serves them.
pub type Entry = (u64, Vec<Vec<u8>>);

/// Every content file of every entry: what patterns are cut from.
pub fn texts(entries: &[Entry]) -> Vec<&[u8]> {
    entries
        .iter()
        .flat_map(|(_, files)| files.iter().map(Vec::as_slice))
        .collect()
}

/// Fails unless the file that starts with `head` is searched by `rules`: a case
/// written wrong would test another format's prefilter, or none.
pub fn detected(head: &[u8], rules: &Rules) -> Result<(), TestCaseError> {
    prop_assert_eq!(rules::detect(head).map(|r| r.name), Some(rules.name));
    Ok(())
}

/// The lines `pf` selects in `bytes` (their start offsets); every line when it
/// selects everything (the scan is then skipped, as the search skips it). Lines
/// that may show binary content held by other lines wait for the whole file, as the
/// search's scan of a file has them wait.
pub fn scanned(bytes: &[u8], pf: &Prefilter) -> Vec<u64> {
    let mut out = Vec::new();
    if pf.selects_everything() {
        let mut start = 0;
        for (k, b) in bytes.iter().enumerate() {
            if *b == b'\n' {
                out.push(start as u64);
                start = k + 1;
            }
        }
        return out;
    }
    let mut held = HeldScan::default();
    pf.scan_in(bytes, 0, &mut out, None, Some(&mut held));
    if held.may {
        out.extend(held.waiting.iter().map(|&(o, _)| o));
        out.sort_unstable();
        out.dedup();
    }
    out
}

/// The property for a format whose lines render alone: the raw scan of `bytes` by
/// `pf` (built for `p`) selects the line of every entry one of whose content files
/// `p` matches. `shown` says which pattern it is, for the failure's message.
pub fn check_entry_lines(
    bytes: &[u8],
    entries: &[Entry],
    p: &Pattern,
    pf: &Prefilter,
    shown: &str,
) -> Result<(), TestCaseError> {
    let sel = scanned(bytes, pf);
    for (start, files) in entries {
        let matches = files
            .iter()
            .any(|f| grepfile::grep(p, f, Mode::Count).count > 0);
        prop_assert!(
            !matches || sel.contains(start),
            "the prefilter dropped the line at {start}, whose rendering matches {shown}\nfile:\n{}",
            String::from_utf8_lossy(bytes)
        );
    }
    Ok(())
}

/// [`check_entry_lines`] for each of `cuts`, cut from the entries' content files,
/// with the prefilter of `rules`.
pub fn check_entries(
    bytes: &[u8],
    rules: &Rules,
    entries: &[Entry],
    cuts: &[Cut],
) -> Result<(), TestCaseError> {
    let texts = texts(entries);
    for c in cuts {
        let Some((pat, p)) = c.pattern(&texts) else {
            continue;
        };
        let pf = Prefilter::new(&p.required, rules, p.ignore_case, false);
        let shown = format!("{pat:?} (-i {}, -w {})", c.icase, c.word);
        check_entry_lines(bytes, entries, &p, &pf, &shown)?;
    }
    Ok(())
}

/// The search of `sessionfs grep PATTERN PATH` over one session, with `mode` (`-c`:
/// every entry listed, a dropped one with a count of 0; `-n`: a dropped one missing),
/// with the prefilter of `rules` or with every entry rendered. The other formats'
/// prefilters are never used: the session is of `rules`' format.
pub fn grep(path: &Path, rules: &Rules, p: &Pattern, mode: Mode, prefiltered: bool) -> Vec<u8> {
    let prefilters = rules::all()
        .iter()
        .map(|r| {
            let pf = if prefiltered && r.name == rules.name {
                Prefilter::new(&p.required, r, p.ignore_case, mode == Mode::Count)
            } else {
                Prefilter::everything()
            };
            (r.name, pf)
        })
        .collect();
    let search = Search {
        pattern: p.clone(),
        mode,
        json: false,
        printer: Printer {
            colors: None,
            line_numbers: true,
        },
        sessions: false,
        prefilters,
        scans: Default::default(),
        plans: None,
    };
    let job = Job {
        path: path.to_path_buf(),
        prefix: Vec::new(),
        explicit: true,
    };
    let mut out = Vec::new();
    // The search's read buffer, kept between searches as `sessionfs grep` keeps it
    // between files (each new one would be zeroed first).
    thread_local! {
        static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BUF.with_borrow_mut(|buf| {
        search_file(&job, &search, buf, &mut |c| match c {
            Chunk::Out(b) => out.extend(b),
            Chunk::Err(e) => out.extend(format!("error: {e}\n").bytes()),
            Chunk::Session(_) => {}
        })
    });
    out
}

/// The property for a format whose entries need their session: [`grep`] of the
/// pattern `c` cuts from `from` over the session at `path`, with `-c` when `counted`,
/// prints with the prefilter of `rules` what it prints with every entry rendered (a
/// dropped entry would print a count of 0, or be missing). `what` names an entry in
/// the failure's message (`an entry`, `a message`), `context` tells the case.
pub fn check_search(
    path: &Path,
    rules: &Rules,
    from: &[&[u8]],
    c: &Cut,
    counted: bool,
    what: &str,
    context: &dyn Fn() -> String,
) -> Result<(), TestCaseError> {
    let Some((pat, p)) = c.pattern(from) else {
        return Ok(());
    };
    let mode = if counted { Mode::Count } else { Mode::Lines };
    let want = grep(path, rules, &p, mode, false);
    let got = grep(path, rules, &p, mode, true);
    prop_assert!(
        want == got,
        "the prefilter dropped {what} that matches {pat:?} (-i {}, -w {}, {mode:?})\nwith everything rendered:\n{}\nwith the prefilter:\n{}\n{}",
        c.icase,
        c.word,
        String::from_utf8_lossy(&want),
        String::from_utf8_lossy(&got),
        context()
    );
    Ok(())
}
