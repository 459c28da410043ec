//! The index ([`super::index`]) as the search uses it: what it records of each line
//! (the probes, the payloads), what a pattern asks of it (from the prefilter's
//! [`Selection`]), and the files it covers for one search.
//!
//! # Probes
//!
//! The kinds of lines the prefilter selects whatever the pattern's text, each
//! recorded line by line ([`PROBES`]): an escape `JSON.stringify` would not write
//! (`\u`, and `\/` apart, which matters only to a fragment with a `/`); a number
//! written otherwise; a line the format always selects (its [`Rules::always`]); a line
//! that may name a spilled file (its [`Rules::spilled`]), and apart the ones of those
//! whose file cannot be told from the line alone (read by every search that asks for
//! spilled files; the others only in files whose session may have one, its
//! `Spilled::any`: a rare literal no longer reads every Claude Code line naming a
//! spilled tool result in sessions without a `tool-results/` folder); for every string some
//! format's triggers ask a line to lack, the lines lacking it; for every nesting bound
//! some trigger names, the lines past it; for every length bound, the lines longer
//! than it; and, for binary content, the lines with
//! images and the lines whose binary content cannot be vouched for; and the lines
//! that may name binary content other lines hold ([`Rules::held`]), read only by `-c`
//! (which lists every image).
//!
//! # Lines shown nowhere
//!
//! A line its format shows in no file ([`Rules::shown`]: Claude Code's metadata, a
//! fifth of its bytes in a real home, most of it the system prompt and tool
//! definitions every request record repeats; most of a Codex thread's lines; the
//! system prompt each Copilot CLI request carried) has nothing indexed and no probe:
//! no query reads it, and its block is selected only by the lines around it. An index
//! built before this rule holds their text too, which only makes it select more; it
//! is built again anyway ([`INDEX_VERSION`] 8), to be smaller.
//!
//! # Payloads
//!
//! A line where its format says binary content may be ([`Rules::binary_content`]) is
//! rendered alone ([`Rules::alone`]): each image must be the decoding of one of the
//! line's long base64 strings, whose printable runs are then indexed; a base64 string
//! is left out of the text's trigrams when replacing it with other base64 of the same
//! length leaves the rendered text unchanged (it shows as no text).
//!
//! A format without [`Rules::alone`], and a line that cannot be rendered alone, keep
//! every base64 string in the text's trigrams, and the decoded bytes of each string the
//! prefilter decodes ([`prefilter::binary_strings`]: its rule 7, which every format's
//! images keep to, is what a search without the index relies on too) are indexed by
//! their runs. A line with such a string that holds an escape or does not end is
//! recorded as binary content that cannot be vouched for: every literal search reads
//! it. (Before, every line of such a format where binary content may be was read by
//! every literal search: a UUID read 19 MB of Qwen Code's image lines.)
//!
//! A line that may hold binary content other lines show ([`Rules::held`]: an image a
//! prompt names by id) shows none of its own, and its base64 never shows as text: each
//! of its `"data"` strings (as the prefilter decodes them) is left out of the text's
//! trigrams and its decoded bytes indexed by their runs; a line with such a string
//! that holds an escape or does not end is recorded as binary content that cannot be
//! vouched for. A search reads the holding lines that may match, never the naming
//! lines for their sake: the scan of a file reads it whole when one of those may
//! match ([`super::session`]), which is when the file has a hit.

use super::index::build::{LineFacts, LineRules};
use super::index::query::{Lit, Q};
use super::index::{self, Formats, Index, Options, Plans, Spec, Stat, store::Store};
use super::prefilter::{self, Prefilter, Selection};
use super::rules::{self, Rules, Trigger};
use super::session::{Job, Search};
use crate::model::core::fasthash::FastMap;
use regex::bytes::Regex;
use std::ffi::OsString;
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Bump when what the index records of a line changes in a way the fingerprint
/// cannot see: how a format's renderer shows base64 text, what is indexed of the
/// binary content of a format that has no renderer of a line alone, or the text it
/// shows for a line it rewrites ([`index::build::LineFacts::shown`]; the test
/// `rewritten_lines_render_as_the_index_was_told` says when), or which lines hold a
/// number written otherwise ([`prefilter::odd_number_tokens`]; 6: numbers are JSON tokens,
/// compared with their written forms, where every digit followed by an `e` was one;
/// 7: those forms are indexed as text the line shows, [`ODD_NUMBERS`] only marks a
/// number with no known form; 8: nothing is indexed of a line its format shows
/// nowhere, [`Rules::shown`], Codex's and Copilot CLI's lines that are no entries
/// among them: an older index is still right, it only selects more, but it is built
/// again to be a fifth smaller).
const INDEX_VERSION: u64 = 8;

// Probe numbers ([`HUGE`] is 0).
const ODD_U: usize = 1;
const ODD_SLASH: usize = 2;
/// A line holding a number written otherwise that serde_json does not take (out of
/// range), so with no known form: any fragment of a number may come from it. The forms
/// of the others are indexed as text the line shows ([`FormatLines`]).
const ODD_NUMBERS: usize = 3;
const ALWAYS: usize = 4;
const SPILL: usize = 5;
const BINARY_UNKNOWN: usize = 6;
const PAYLOAD: usize = 7;
/// The lines of [`SPILL`] whose file cannot be told from the line alone
/// (`Spilled::file` gives `Err`): read whether or not the session has spilled
/// files, when the others are read only where it may (`Spilled::any`).
const SPILL_UNTOLD: usize = 8;
/// The lines that may name binary content other lines hold ([`Rules::held`]): read by
/// a search that selects every such line (`-c`).
const HELD_NAMES: usize = 9;
const FIRST_TABLE: usize = 10;

/// The probes that depend on the formats' triggers: the lines where each trigger of
/// a decoration or of derived numbers holds (`Matches`), lacking each string a
/// trigger names (`Lacks`), past each nesting bound (`Openers`), longer than each
/// length bound (`Longer`).
struct Table {
    matches: Vec<&'static str>,
    lacks: Vec<&'static str>,
    /// A searcher for each of `lacks`, made once (the index asks every line).
    lacks_finders: Vec<memchr::memmem::Finder<'static>>,
    openers: Vec<usize>,
    longer: Vec<usize>,
}

fn all_triggers(r: &Rules) -> impl Iterator<Item = &Trigger> {
    r.decorations
        .iter()
        .flat_map(|d| d.when.iter())
        .chain(r.derived_numbers)
        .chain(r.always)
        .chain(r.binary_content)
        .chain(r.spilled.iter().flat_map(|s| s.place.iter()))
        .chain(r.held.iter().flat_map(|h| h.names.iter().chain(h.holds)))
}

/// The triggers a prefilter may ask for one by one: its decorations' and derived
/// numbers' (the format's `always`, binary content and spilled files have probes of
/// their own).
fn asked_triggers(r: &Rules) -> impl Iterator<Item = &Trigger> {
    r.decorations
        .iter()
        .flat_map(|d| d.when.iter())
        .chain(r.derived_numbers)
}

fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| {
        let mut matches = Vec::new();
        let mut lacks = Vec::new();
        let mut openers = Vec::new();
        let mut longer = Vec::new();
        for r in rules::all() {
            for t in asked_triggers(r) {
                if let Trigger::Matches(m) = *t
                    && !matches.contains(&m)
                {
                    matches.push(m);
                }
            }
            // Every kind of trigger, by name (see `Compiled::new`).
            for t in all_triggers(r) {
                match *t {
                    Trigger::Lacks(s) => {
                        if !lacks.contains(&s) {
                            lacks.push(s)
                        }
                    }
                    Trigger::Openers(n) => {
                        if !openers.contains(&n) {
                            openers.push(n)
                        }
                    }
                    Trigger::Longer(n) => {
                        if !longer.contains(&n) {
                            longer.push(n)
                        }
                    }
                    Trigger::Matches(_) => {}
                }
            }
        }
        matches.sort();
        lacks.sort();
        openers.sort();
        longer.sort();
        Table {
            matches,
            lacks_finders: lacks
                .iter()
                .map(|s| memchr::memmem::Finder::new(s.as_bytes()))
                .collect(),
            lacks,
            openers,
            longer,
        }
    })
}

impl Table {
    fn nprobes(&self) -> usize {
        FIRST_TABLE + self.matches.len() + self.lacks.len() + self.openers.len() + self.longer.len()
    }
    fn matches_probe(&self, m: &str) -> Option<usize> {
        self.matches
            .iter()
            .position(|x| *x == m)
            .map(|k| FIRST_TABLE + k)
    }
    fn lacks_probe(&self, s: &str) -> Option<usize> {
        self.lacks
            .iter()
            .position(|x| *x == s)
            .map(|k| FIRST_TABLE + self.matches.len() + k)
    }
    /// The probe of the largest bound at most `n`: its lines include those past `n`.
    fn openers_probe(&self, n: usize) -> Option<usize> {
        self.openers
            .iter()
            .rposition(|&m| m <= n)
            .map(|k| FIRST_TABLE + self.matches.len() + self.lacks.len() + k)
    }
    /// The probe of the largest bound at most `n`: its lines include those longer
    /// than `n`.
    fn longer_probe(&self, n: usize) -> Option<usize> {
        self.longer
            .iter()
            .rposition(|&m| m <= n)
            .map(|k| FIRST_TABLE + self.matches.len() + self.lacks.len() + self.openers.len() + k)
    }
}

/// A format as the index reads its lines.
struct FormatLines {
    rules: &'static Rules,
    always: Compiled,
    spill: Option<Compiled>,
    binary: Option<Regex>,
    /// Lines that may name held binary content, and lines that may hold it.
    held: Option<(Compiled, Compiled)>,
    /// Its decorations' and derived numbers' `Matches` triggers, and their probes.
    triggers: Option<(regex::bytes::RegexSet, Vec<u16>)>,
}

/// Triggers compiled for testing one line at a time.
struct Compiled {
    re: Option<Regex>,
    lacks: Vec<&'static str>,
    openers: Option<usize>,
    longer: Option<usize>,
}

impl Compiled {
    fn new(ts: &[Trigger]) -> Compiled {
        let mut pats: Vec<&str> = Vec::new();
        let mut lacks = Vec::new();
        let mut openers: Option<usize> = None;
        let mut longer: Option<usize> = None;
        // Every kind of trigger, by name: a new kind must be recorded here too, or the
        // index would leave out lines the prefilter selects.
        for t in ts {
            match *t {
                Trigger::Matches(r) => pats.push(r),
                Trigger::Lacks(s) => lacks.push(s),
                Trigger::Openers(n) => openers = Some(openers.map_or(n, |o| o.min(n))),
                Trigger::Longer(n) => longer = Some(longer.map_or(n, |o| o.min(n))),
            }
        }
        Compiled {
            re: (!pats.is_empty()).then(|| Regex::new(&pats.join("|")).expect("valid triggers")),
            lacks,
            openers,
            longer,
        }
    }

    fn holds(&self, line_nl: &[u8], line: &[u8], openers: usize) -> bool {
        self.re.as_ref().is_some_and(|r| r.is_match(line_nl))
            || self
                .lacks
                .iter()
                .any(|s| memchr::memmem::find(line, s.as_bytes()).is_none())
            || self.openers.is_some_and(|n| openers > n)
            // With its newline: a line of exactly the bound is recorded too, whichever
            // length the prefilter counts (more candidates, never fewer).
            || self.longer.is_some_and(|n| line_nl.len() > n)
    }
}

/// The shortest base64 string looked at as a payload.
const MIN_PAYLOAD: usize = 64;

/// The long strings of `line` made of base64 (after a `data:…;base64,` prefix, if
/// any), without escapes: where payloads may be.
fn base64_strings(line: &[u8]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(q) = memchr::memchr(b'"', &line[at..]) {
        let start = at + q + 1;
        // The string's end, and whether it holds an escape.
        let mut i = start;
        let mut escaped = false;
        let end = loop {
            match memchr::memchr2(b'"', b'\\', &line[i..]) {
                None => break None,
                Some(k) if line[i + k] == b'\\' => {
                    escaped = true;
                    i += k + 2;
                    if i > line.len() {
                        break None;
                    }
                }
                Some(k) => break Some(i + k),
            }
        };
        let Some(end) = end else { break };
        at = end + 1;
        if escaped || end - start < MIN_PAYLOAD {
            continue;
        }
        let mut s = start;
        if line[s..end].starts_with(b"data:")
            && let Some(c) = memchr::memmem::find(&line[s..(s + 256).min(end)], b";base64,")
        {
            s += c + 8;
        }
        if end - s >= MIN_PAYLOAD && all_base64(&line[s..end]) {
            out.push(s..end);
        }
    }
    out
}

/// Whether every byte of `s` is of either base64 alphabet or `=`. The strings
/// looked at are images of hundreds of KB, so each run of 64 bytes is checked
/// whole, without branches (which the compiler turns into vector compares), and
/// only then is the answer looked at.
fn all_base64(s: &[u8]) -> bool {
    s.chunks(64).all(|run| {
        run.iter().fold(true, |ok, &c| {
            ok & (crate::model::core::base64::in_alphabet(c) | (c == b'='))
        })
    })
}

impl FormatLines {
    fn new(rules: &'static Rules) -> FormatLines {
        let t = table();
        let mut pats: Vec<&str> = Vec::new();
        for tr in asked_triggers(rules) {
            if let Trigger::Matches(m) = *tr
                && !pats.contains(&m)
            {
                pats.push(m);
            }
        }
        let ids = pats
            .iter()
            .map(|m| t.matches_probe(m).expect("in the table") as u16)
            .collect();
        FormatLines {
            rules,
            always: Compiled::new(rules.always),
            spill: rules.spilled.map(|s| Compiled::new(s.place)),
            binary: Compiled::new(rules.binary_content).re,
            held: rules
                .held
                .map(|h| (Compiled::new(h.names), Compiled::new(h.holds))),
            triggers: (!pats.is_empty()).then(|| {
                (
                    regex::bytes::RegexSet::new(&pats).expect("valid triggers"),
                    ids,
                )
            }),
        }
    }

    /// The probes and payloads of a line where binary content may be: its images
    /// (as the format shows them, from the line alone) are indexed by their runs; a
    /// long base64 string is left out of the text when the text does not depend on it.
    fn binary(&self, line: &[u8], facts: &mut LineFacts) {
        // Without the line's rendering: its base64 kept in the text, and what the
        // prefilter decodes of it indexed (see the module docs).
        let rendered = self
            .rules
            .alone
            .and_then(|alone| Some((alone, alone(line)?)));
        let Some((alone, c)) = rendered else {
            held_payloads(line, facts, false);
            return;
        };
        if !c.images.is_empty() {
            facts.probes.push(PAYLOAD as u16);
        }
        let mut m: Option<Vec<u8>> = None;
        for r in base64_strings(line) {
            let m = m.get_or_insert_with(|| line.to_vec());
            let saved = m[r.clone()].to_vec();
            for b in &mut m[r.clone()] {
                if *b != b'=' {
                    *b = if *b == b'A' { b'B' } else { b'A' };
                }
            }
            if alone(m).is_some_and(|x| x.text == c.text) {
                facts.hide.push(r.clone());
            }
            m[r.clone()].copy_from_slice(&saved);
        }
        facts.binary.extend(c.images.into_iter().map(|im| im.data));
    }
}

/// The payloads of a line that may hold binary content other lines show
/// ([`Rules::held`]), or of a line where binary content may be that the format cannot
/// render alone ([`FormatLines::binary`]): the decoded bytes of each `"data"` string the prefilter decodes
/// are indexed, and with `hide` the string is left out of the text; a string with an
/// escape, or one that does not end, makes the line binary content that cannot be
/// vouched for.
fn held_payloads(line: &[u8], facts: &mut LineFacts, hide: bool) {
    let mut found: Vec<(Range<usize>, Vec<u8>)> = Vec::new();
    let whole = prefilter::binary_strings(line, &mut |r, data| {
        found.push((r, data.to_vec()));
        false
    });
    if whole.is_none() {
        facts.probes.push(BINARY_UNKNOWN as u16);
    }
    if found.is_empty() {
        return;
    }
    facts.probes.push(PAYLOAD as u16);
    found.sort_by_key(|(r, _)| r.start);
    for (r, data) in found {
        // Sorted, apart (the strings of a line do not overlap; a range given twice
        // is left in the text).
        if hide && facts.hide.last().is_none_or(|h| h.end <= r.start) {
            facts.hide.push(r);
        }
        facts.binary.push(data);
    }
}

impl LineRules for FormatLines {
    fn line(&self, line_nl: &[u8], facts: &mut LineFacts) {
        let t = table();
        let line = &line_nl[..line_nl.len() - 1];
        // A line its format shows nowhere (Claude Code's metadata: a request's system
        // prompt and tools, 38 KB a session) can give no search a hit: none of its
        // text is indexed, and no probe selects it. Its block still covers it.
        if self.rules.shown.is_some_and(|shown| !shown(line)) {
            facts.hide.push(0..line.len());
            return;
        }
        let p = &mut facts.probes;
        if prefilter::has_odd_escape(line, false) {
            p.push(ODD_U as u16);
        }
        if memchr::memmem::find(line, b"\\/").is_some() && prefilter::has_odd_escape(line, true) {
            p.push(ODD_SLASH as u16);
        }
        // A number written otherwise shows its written forms (`1e3` as `1000`): they
        // are indexed as text of the line, so that a fragment of a number finds the
        // line's block by them and no query reads every block holding such a number
        // (Pi's ids of digits and one `e` are numbers as a string can be one).
        let mut unknown = false;
        prefilter::odd_number_tokens(line, |_, forms| {
            match forms {
                Some(forms) => facts
                    .shown
                    .extend(forms.iter().map(|f| f.as_bytes().to_vec())),
                None => unknown = true,
            }
            false
        });
        let p = &mut facts.probes;
        if unknown {
            p.push(ODD_NUMBERS as u16);
        }
        let openers = crate::model::core::grep::openers(line);
        // Regular expressions see the newline, as the prefilter's scan of a block does.
        if self.always.holds(line_nl, line, openers) {
            // A line the format rewrites: where the search renders it from the line
            // alone, the text it shows is indexed, and the line is read only when its
            // block holds the query's trigrams; else it is read for every query.
            match self.rules.line_content.and_then(|lc| lc(line)) {
                Some(c) => facts.shown.push(c.text),
                None => p.push(ALWAYS as u16),
            }
        }
        if self
            .spill
            .as_ref()
            .is_some_and(|s| s.holds(line_nl, line, openers))
        {
            p.push(SPILL as u16);
            // Whether the line alone tells its file: asked of a session that is not
            // there, so that nothing but the line decides (see `Spilled::any`).
            if self
                .rules
                .spilled
                .is_some_and(|s| (s.file)(Path::new("/nonexistent/session.jsonl"), line).is_err())
            {
                p.push(SPILL_UNTOLD as u16);
            }
        }
        if let Some((set, ids)) = &self.triggers {
            for k in set.matches(line_nl).iter() {
                p.push(ids[k]);
            }
        }
        for (k, f) in t.lacks_finders.iter().enumerate() {
            if f.find(line).is_none() {
                p.push((FIRST_TABLE + t.matches.len() + k) as u16);
            }
        }
        for (k, &n) in t.openers.iter().enumerate() {
            if openers > n {
                p.push((FIRST_TABLE + t.matches.len() + t.lacks.len() + k) as u16);
            }
        }
        for (k, &n) in t.longer.iter().enumerate() {
            // With its newline, as in `Compiled::holds`.
            if line_nl.len() > n {
                p.push(
                    (FIRST_TABLE + t.matches.len() + t.lacks.len() + t.openers.len() + k) as u16,
                );
            }
        }
        if self.binary.as_ref().is_some_and(|r| r.is_match(line)) {
            self.binary(line, facts);
        }
        if let Some((names, holds)) = &self.held {
            if names.holds(line_nl, line, openers) {
                facts.probes.push(HELD_NAMES as u16);
            }
            if holds.holds(line_nl, line, openers) {
                // Its strings are left out of the text only where the line shows no
                // text of its own (an image's line: its strings show only in the
                // entries naming it, the base64 decoded), and nothing else hid any.
                let hide = facts.hide.is_empty()
                    && self
                        .rules
                        .line_content
                        .and_then(|f| f(line))
                        .is_some_and(|c| {
                            c.text.is_empty() && c.images.is_empty() && c.full_output.is_none()
                        });
                held_payloads(line, facts, hide);
            }
        }
    }
}

/// The formats of [`rules::all`], for the index.
pub struct SearchFormats {
    lines: Vec<FormatLines>,
    fingerprint: u64,
}

impl SearchFormats {
    pub fn get() -> &'static SearchFormats {
        static F: OnceLock<SearchFormats> = OnceLock::new();
        F.get_or_init(|| {
            let t = table();
            let mut h = index::hash::Hasher::new();
            h.update(&INDEX_VERSION.to_le_bytes());
            h.update(env!("CARGO_PKG_VERSION").as_bytes());
            for r in rules::all() {
                h.update(r.name.as_bytes());
                h.update(&[0, u8::from(r.alone.is_some())]);
                for tr in r
                    .always
                    .iter()
                    .chain(r.binary_content)
                    .chain(r.spilled.iter().flat_map(|s| s.place.iter()))
                {
                    h.update(format!("{tr:?}").as_bytes());
                }
                h.update(b"held");
                for tr in r.held.iter().flat_map(|h| h.names.iter().chain(h.holds)) {
                    h.update(format!("{tr:?}").as_bytes());
                }
            }
            for s in t.matches.iter().chain(&t.lacks) {
                h.update(s.as_bytes());
            }
            for n in &t.openers {
                h.update(&n.to_le_bytes());
            }
            h.update(b"longer");
            for n in &t.longer {
                h.update(&n.to_le_bytes());
            }
            SearchFormats {
                lines: rules::all().iter().map(|r| FormatLines::new(r)).collect(),
                fingerprint: h.finish(),
            }
        })
    }
}

impl Formats for SearchFormats {
    fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    fn nprobes(&self) -> usize {
        table().nprobes()
    }

    fn detect(&self, path: &Path, head: &[u8]) -> Option<&'static str> {
        rules::known(path)
            .or_else(|| rules::detect(head))
            .map(|r| r.name)
    }

    fn lines(&self, name: &str) -> Option<&dyn LineRules> {
        self.lines
            .iter()
            .find(|l| l.rules.name == name)
            .map(|l| l as &dyn LineRules)
    }
}

/// What the index must select for a prefilter: `None` when it selects every line.
pub fn spec(p: &Prefilter) -> Option<Spec> {
    spec_of(p.selection()?)
}

/// [`spec`] of a [`Selection`].
pub fn spec_of(sel: &Selection) -> Option<Spec> {
    let t = table();
    let mut probes: Vec<usize> = vec![ODD_U, ALWAYS];
    let mut parts: Vec<Q> = sel
        .fragments
        .iter()
        .map(|f| Lit::new(f, sel.icase).query())
        .collect();
    for tr in &sel.triggers {
        probes.push(match *tr {
            Trigger::Matches(r) => t.matches_probe(r)?,
            Trigger::Lacks(s) => t.lacks_probe(s)?,
            Trigger::Openers(n) => t.openers_probe(n)?,
            Trigger::Longer(n) => t.longer_probe(n)?,
        });
    }
    if sel.slash {
        probes.push(ODD_SLASH);
    }
    if sel.numbers {
        probes.push(ODD_NUMBERS);
    }
    let mut guarded = Vec::new();
    if sel.spill && sel.spill_every {
        probes.push(SPILL);
    } else if sel.spill {
        probes.push(SPILL_UNTOLD);
        guarded.push(SPILL);
    }
    if let Some(lits) = &sel.binary {
        probes.push(BINARY_UNKNOWN);
        let lits: Vec<Lit> = lits.iter().map(|l| Lit::new(l, sel.icase)).collect();
        if lits.is_empty() || !lits.iter().all(Lit::run_safe) {
            probes.push(PAYLOAD);
        } else {
            parts.extend(lits.iter().map(Lit::query));
        }
    }
    match &sel.held {
        // Every naming line (`-c`).
        Some(lits) if lits.is_empty() => probes.push(HELD_NAMES),
        // The holding lines that may match: by their text (the query's fragments),
        // their payloads' runs, or every payload; and those not vouched for.
        Some(lits) => {
            probes.push(BINARY_UNKNOWN);
            let lits: Vec<Lit> = lits.iter().map(|l| Lit::new(l, sel.icase)).collect();
            if lits.iter().all(Lit::run_safe) {
                parts.extend(lits.iter().map(Lit::query));
            } else {
                probes.push(PAYLOAD);
            }
        }
        None => {}
    }
    probes.sort_unstable();
    probes.dedup();
    Some(Spec {
        q: Q::or(parts),
        probes,
        guarded,
    })
}

/// Whether `SESSIONFS_INDEX` turns the index off for searching (`off`).
fn wanted() -> bool {
    !std::env::var_os("SESSIONFS_INDEX")
        .is_some_and(|v| matches!(v.to_str(), Some("off" | "0" | "no" | "false")))
}

/// The index's bound: `SESSIONFS_INDEX_MAX` (bytes, or with a K, M or G suffix), else
/// [`index::DEFAULT_CAP`].
pub fn cap() -> u64 {
    std::env::var("SESSIONFS_INDEX_MAX")
        .ok()
        .and_then(|v| parse_size(&v))
        .unwrap_or(index::DEFAULT_CAP)
}

/// `123`, `64K`, `512M`, `16G` (powers of 1024).
pub fn parse_size(v: &str) -> Option<u64> {
    let v = v.trim();
    let (num, mul) = match v.chars().last()? {
        'k' | 'K' => (&v[..v.len() - 1], 1u64 << 10),
        'm' | 'M' => (&v[..v.len() - 1], 1 << 20),
        'g' | 'G' => (&v[..v.len() - 1], 1 << 30),
        _ => (v, 1),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(mul)
}

/// The side files of each of `jobs` whose format has them, listed on `threads`
/// threads (a listing is a few system calls, most of them a folder that is not
/// there): for each such job, its format and its side files, in the order of `jobs`.
fn side_files<'a>(
    ix: &Index,
    jobs: &'a [Job],
    threads: usize,
) -> Vec<(&'a PathBuf, &'static Rules, Vec<PathBuf>)> {
    let formats = ix.formats_by_inode();
    let mut with: Vec<(&'a PathBuf, &'static Rules)> = Vec::new();
    for j in jobs {
        // As the refresh found it (a file it could not stat has no format).
        let Some(st) = ix.stat_seen(&j.path) else {
            continue;
        };
        let Some(r) = formats.get(&(st.dev, st.ino)).and_then(|f| rules::named(f)) else {
            continue;
        };
        if r.side_files.is_some() {
            with.push((&j.path, r));
        }
    }
    crate::search::walk::par_map(&with, threads, |&(p, r)| {
        let side = r.side_files.expect("kept above");
        (p, r, side(p))
    })
}

/// The files a search of `jobs` reads raw: each job's file and its side files.
fn files_of(ix: &Index, jobs: &[Job]) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = jobs.iter().map(|j| j.path.clone()).collect();
    files.extend(side_files(ix, jobs, 1).into_iter().flat_map(|(_, _, s)| s));
    files
}

/// What the index says a search must read of each file.
pub struct Planned {
    /// By device and inode: the ranges of the indexed bytes to read.
    pub plans: Plans,
    /// The files (by the path the search names them with) with nothing to read at all,
    /// as the search's refresh found them: no candidate in their indexed bytes, no
    /// byte after them. Their format's name. (Keyed by the path's bytes, as every
    /// lookup spells it.)
    nothing: FastMap<OsString, String>,
    /// Each session file's side files, as listed once for this search (by the name
    /// of the format they were listed for): the scan of a session takes them from
    /// here rather than listing its folders again.
    sides: FastMap<OsString, (&'static str, Vec<PathBuf>)>,
}

impl Planned {
    /// The format of `path` when the index says it has nothing to read.
    pub fn nothing_in(&self, path: &Path) -> Option<&'static Rules> {
        rules::named(self.nothing.get(path.as_os_str())?)
    }

    /// The side files of the session file `path` in the format `rules`, as this
    /// search listed them, if it did.
    pub fn sides_of(&self, path: &Path, rules: &Rules) -> Option<&[PathBuf]> {
        self.sides
            .get(path.as_os_str())
            .filter(|(f, _)| *f == rules.name)
            .map(|(_, s)| s.as_slice())
    }

    /// The format of the session file `path` when neither it nor any of its side
    /// files has anything to read: the search need not open it, nor look for what
    /// else it is.
    pub fn nothing_at_all(&self, path: &Path) -> Option<&'static Rules> {
        let r = self.nothing_in(path)?;
        match r.side_files {
            None => Some(r),
            Some(_) => self
                .sides_of(path, r)?
                .iter()
                .all(|s| self.nothing_in(s).is_some_and(|x| std::ptr::eq(x, r)))
                .then_some(r),
        }
    }
}

/// The index a search uses, as it is now (`None` without an index:
/// `SESSIONFS_CACHE=off` or `SESSIONFS_INDEX=off`): its manifest read, nothing
/// verified yet. It does not depend on the files searched, so the search opens it
/// while it lists them.
pub fn open(using: &super::IndexUse) -> Option<Index> {
    let store = match using {
        super::IndexUse::Off => return None,
        super::IndexUse::FromEnv if !wanted() => return None,
        super::IndexUse::FromEnv => Store::from_env()?,
        super::IndexUse::At(dir) => Store::at(dir.clone()),
    };
    Some(Index::open(store, SearchFormats::get().fingerprint()))
}

/// The index's plans for a search of `jobs`, after bringing the index `ix` ([`open`])
/// up to date for them (`None` without an index).
pub fn prepare(
    jobs: &[Job],
    search: &Search,
    ix: Option<Index>,
    threads: usize,
    progress: Option<&index::Progress>,
) -> Option<Planned> {
    let mut ix = ix?;
    let formats = SearchFormats::get();
    let opts = Options {
        wait: false,
        cap: cap(),
        threads,
        progress,
        read_only: false,
    };
    let t = std::time::Instant::now();
    let files: Vec<PathBuf> = jobs.iter().map(|j| j.path.clone()).collect();
    ix.refresh(&files, formats, &opts);
    log::debug!("index: opened and refreshed in {:?}", t.elapsed());
    let listed = side_files(&ix, jobs, threads);
    let side_of: Vec<(&PathBuf, &PathBuf)> = listed
        .iter()
        .flat_map(|(s, _, sides)| sides.iter().map(move |p| (p, *s)))
        .collect();
    let sides: Vec<PathBuf> = side_of.iter().map(|(p, _)| (*p).clone()).collect();
    if !sides.is_empty() {
        ix.refresh(&sides, formats, &opts);
    }
    log::debug!("index: {} side files in {:?}", sides.len(), t.elapsed());
    // The session files each file is searched as part of (itself, or the session
    // whose side file it is), for the guarded probes: spilled files.
    let mut sessions: FastMap<(u64, u64), Vec<&Path>> = Default::default();
    let pairs = jobs
        .iter()
        .map(|j| (&j.path, &j.path))
        .chain(side_of.iter().copied());
    for (p, s) in pairs {
        if let Some(st) = ix.stat_seen(p) {
            sessions.entry((st.dev, st.ino)).or_default().push(s);
        }
    }
    let guard = |name: &str, file: (u64, u64)| {
        let Some(sp) = rules::named(name).and_then(|r| r.spilled) else {
            return true;
        };
        sessions
            .get(&file)
            .is_none_or(|ss| ss.iter().any(|s| (sp.any)(s)))
    };
    let plans = ix.plans(
        &|name| {
            let r = rules::named(name)?;
            spec(search.prefilter_of(r))
        },
        &guard,
        threads,
    );
    let mut nothing = FastMap::default();
    for p in files.iter().chain(&sides) {
        if let Some(st) = ix.stat_seen(p)
            && let Some(plan) = plans.get(&(st.dev, st.ino))
            && plan.stat == st
            && plan.ranges.is_empty()
            && plan.covered == st.size
        {
            nothing.insert(p.as_os_str().to_os_string(), plan.format.clone());
        }
    }
    log::debug!(
        "index: planned in {:?}, {} files with nothing to read",
        t.elapsed(),
        nothing.len()
    );
    let sides = listed
        .into_iter()
        .map(|(p, r, s)| (p.as_os_str().to_os_string(), (r.name, s)))
        .collect();
    Some(Planned {
        plans,
        nothing,
        sides,
    })
}

/// Whether the index is on: not turned off (`SESSIONFS_CACHE=off`,
/// `SESSIONFS_INDEX=off`), and there is a home to keep it in.
pub fn enabled() -> bool {
    wanted() && Store::from_env().is_some()
}

/// Session files and the side files a refresh found for each ([`refresh_paths`]).
pub type SidesOf = Vec<(PathBuf, Vec<PathBuf>)>;

/// Brings the index up to date for `paths` (session files a running mount saw
/// change, [`super::fresh`]) and their side files, as a search of them would, without
/// waiting for another writer (one that holds the lock is left to finish: the next
/// search or change catches up). `None` when the index is off (`SESSIONFS_CACHE=off`,
/// `SESSIONFS_INDEX=off`). With the report, the side files found for each of `paths`
/// that has some (the keeper watches them change).
pub fn refresh_paths(paths: &[PathBuf]) -> Option<(index::Report, SidesOf)> {
    if !wanted() {
        return None;
    }
    let store = Store::from_env()?;
    let formats = SearchFormats::get();
    let mut ix = Index::open(store, formats.fingerprint());
    let opts = Options {
        wait: false,
        cap: cap(),
        threads: 1,
        progress: None,
        read_only: false,
    };
    let mut r = ix.refresh(paths, formats, &opts);
    let jobs: Vec<Job> = paths
        .iter()
        .map(|p| Job {
            path: p.clone(),
            prefix: Vec::new(),
            explicit: false,
        })
        .collect();
    let listed: SidesOf = side_files(&ix, &jobs, 1)
        .into_iter()
        .map(|(p, _, s)| (p.clone(), s))
        .collect();
    let sides: Vec<PathBuf> = listed.iter().flat_map(|(_, s)| s.iter().cloned()).collect();
    if !sides.is_empty() {
        let s = ix.refresh(&sides, formats, &opts);
        r.indexed += s.indexed;
        r.bytes += s.bytes;
        r.left += s.left;
        r.published |= s.published;
    }
    Some((r, listed))
}

/// The plan for the open file `f`, if the index has one that still holds.
pub fn plan_for<'a>(planned: &'a Planned, f: &File) -> Option<&'a index::FilePlan> {
    let st = Stat::of(&f.metadata().ok()?);
    planned
        .plans
        .get(&(st.dev, st.ino))
        .filter(|p| p.stat == st)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The index keeps the text a format shows for the lines it rewrites (a Pi system
    /// prompt's one-line summary), and the forms of the numbers a line holds written
    /// otherwise, as they were rendered when the index was built; an
    /// index built by an older program would answer from text this one no longer
    /// shows. So the text of every such line of the committed fixtures is pinned
    /// here: a change to it must come with a new [`INDEX_VERSION`], which makes every
    /// index be built again.
    #[test]
    fn rewritten_lines_render_as_the_index_was_told() {
        const PINNED: (u64, u64) = (8, 232185532057074274);
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut files = Vec::new();
        let mut todo = vec![root];
        while let Some(d) = todo.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    todo.push(p);
                } else if p.extension().is_some_and(|x| x == "jsonl") {
                    files.push(p);
                }
            }
        }
        files.sort();
        let mut h = index::hash::Hasher::new();
        let mut lines = 0;
        for f in &files {
            let b = std::fs::read(f).unwrap();
            let head: Vec<u8> = b.iter().take(1 << 16).copied().collect();
            let Some(r) = rules::detect(&head) else {
                continue;
            };
            let lines_of = FormatLines::new(r);
            for line in b.split_inclusive(|&c| c == b'\n') {
                if line.last() != Some(&b'\n') {
                    continue;
                }
                let mut facts = LineFacts::default();
                lines_of.line(line, &mut facts);
                for t in &facts.shown {
                    h.update(r.name.as_bytes());
                    h.update(t);
                    lines += 1;
                }
            }
        }
        let now = (INDEX_VERSION, h.finish());
        assert!(lines > 0, "no rewritten line in the fixtures");
        assert_eq!(
            now, PINNED,
            "the text shown for rewritten lines changed ({lines} lines): an index built \
             before would answer from the old text. Bump INDEX_VERSION, and pin the new \
             pair here"
        );
    }

    /// A number written otherwise is indexed by its written forms (a query for
    /// `1000` finds the block of a line holding `1e3` by its text, not by a probe that
    /// every such line would set); one with no known form (out of range) is marked.
    #[test]
    fn numbers_written_otherwise_are_indexed_by_their_forms() {
        let lines = FormatLines::new(rules::named("pi").unwrap());
        let mut facts = LineFacts::default();
        lines.line(
            b"{\"type\":\"x\",\"n\":1e3,\"id\":\"6461e08a\",\"m\":12}\n",
            &mut facts,
        );
        assert_eq!(facts.shown, [b"1000".to_vec(), b"1000.0".to_vec()]);
        assert!(!facts.probes.contains(&(ODD_NUMBERS as u16)));
        let mut facts = LineFacts::default();
        lines.line(b"{\"type\":\"x\",\"n\":1e400}\n", &mut facts);
        assert!(facts.shown.is_empty());
        assert!(facts.probes.contains(&(ODD_NUMBERS as u16)));
    }

    #[test]
    fn a_holding_line_indexes_its_decoded_data_and_hides_its_base64_only_if_asked() {
        let data = "iVBORw0KGgpxdWl6emxlYnJvdA==";
        let line = format!(r#"{{"kind":"blob","mime":"image/png","data":"{data}"}}"#);
        let at = line.find(data).unwrap();
        let mut facts = LineFacts::default();
        held_payloads(line.as_bytes(), &mut facts, true);
        assert_eq!(facts.hide.len(), 1);
        assert_eq!(facts.hide[0], at..at + data.len());
        assert_eq!(facts.binary, [b"\x89PNG\r\n\x1a\nquizzlebrot".to_vec()]);
        assert_eq!(facts.probes, [PAYLOAD as u16]);
        // Not asked to hide (the line shows text of its own): the text keeps it.
        let mut facts = LineFacts::default();
        held_payloads(line.as_bytes(), &mut facts, false);
        assert!(facts.hide.is_empty() && facts.binary.len() == 1);
        // An escape in its data, or data that does not end: not vouched for.
        for bad in [
            r#"{"kind":"blob","data":"iVBOR\u0077w0KGgo="}"#,
            r#"{"kind":"blob","data":"iVBORw0KGgo"#,
        ] {
            let mut facts = LineFacts::default();
            held_payloads(bad.as_bytes(), &mut facts, true);
            assert_eq!(facts.probes, [BINARY_UNKNOWN as u16], "{bad}");
            assert!(facts.hide.is_empty(), "{bad}");
        }
    }

    #[test]
    fn a_format_without_a_renderer_of_a_line_alone_indexes_what_the_prefilter_decodes() {
        // Every format without one: an image line is found by its decoded runs and
        // its text (base64 included), no longer read by every literal search.
        let without: Vec<&Rules> = rules::all()
            .iter()
            .copied()
            .filter(|r| r.alone.is_none() && !r.binary_content.is_empty())
            .collect();
        assert!(!without.is_empty());
        let data = "iVBORw0KGgpxdWl6emxlYnJvdA==";
        for r in without {
            let lines = FormatLines::new(r);
            let line = format!(
                r#"{{"inlineData":{{"mimeType":"image/png","data":"{data}"}},"image":1,"file":1,"type":"image","url":"data:image/png;base64,{data}"}}"#
            );
            let mut facts = LineFacts::default();
            lines.binary(line.as_bytes(), &mut facts);
            assert!(
                facts.hide.is_empty(),
                "{}: the base64 stays in the text",
                r.name
            );
            assert!(facts.probes.contains(&(PAYLOAD as u16)), "{}", r.name);
            assert!(
                !facts.probes.contains(&(BINARY_UNKNOWN as u16)),
                "{}",
                r.name
            );
            assert_eq!(facts.binary.len(), 2, "{}", r.name);
            assert!(facts.binary.iter().all(|b| b.ends_with(b"quizzlebrot")));
            // One it cannot decode as the prefilter does: read by every literal search.
            let bad = r#"{"inlineData":{"data":"iVBOR\u0077w0KGgo="}}"#;
            let mut facts = LineFacts::default();
            lines.binary(bad.as_bytes(), &mut facts);
            assert_eq!(facts.probes, [BINARY_UNKNOWN as u16], "{}", r.name);
            // No base64 at all: nothing to read it for.
            let mut facts = LineFacts::default();
            lines.binary(br#"{"inlineData":{"mimeType":"image/png"}}"#, &mut facts);
            assert!(
                facts.probes.is_empty() && facts.binary.is_empty(),
                "{}",
                r.name
            );
        }
    }

    #[test]
    fn held_content_asks_for_its_payloads_or_every_naming_line() {
        let sel = |held: Option<Vec<String>>| Selection {
            fragments: vec!["quizzlebrot".into()],
            icase: false,
            triggers: Vec::new(),
            numbers: false,
            slash: false,
            binary: None,
            spill: false,
            spill_every: false,
            held,
        };
        let s = spec_of(&sel(Some(vec!["quizzlebrot".into()]))).unwrap();
        assert!(s.probes.contains(&BINARY_UNKNOWN) && !s.probes.contains(&HELD_NAMES));
        assert!(!s.probes.contains(&PAYLOAD), "a literal found by its runs");
        let s = spec_of(&sel(Some(vec!["é".into()]))).unwrap();
        assert!(s.probes.contains(&PAYLOAD), "a literal runs cannot find");
        // `-c`: every naming line.
        let s = spec_of(&sel(Some(Vec::new()))).unwrap();
        assert!(s.probes.contains(&HELD_NAMES));
        let s = spec_of(&sel(None)).unwrap();
        assert!(!s.probes.contains(&HELD_NAMES) && !s.probes.contains(&BINARY_UNKNOWN));
    }

    #[test]
    fn all_base64_agrees_with_a_byte_at_a_time_check() {
        let plain = |s: &[u8]| {
            s.iter()
                .all(|&c| c.is_ascii_alphanumeric() || b"+/=-_".contains(&c))
        };
        for c in 0..=255u8 {
            assert_eq!(all_base64(&[c]), plain(&[c]), "byte {c}");
        }
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for len in (0..700).step_by(3) {
            let mut s: Vec<u8> = (0..len).map(|k| b"QUJDab+/=-_09"[k % 13]).collect();
            assert!(all_base64(&s));
            if len > 0 {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let at = (seed >> 33) as usize % len;
                s[at] = [b'"', b'\\', b' ', b'.', 0x80, b'@', b'['][(seed >> 20) as usize % 7];
                assert_eq!(all_base64(&s), plain(&s), "length {len}, at {at}");
                assert!(!all_base64(&s));
            }
        }
    }

    #[test]
    fn probe_table() {
        let t = table();
        assert!(t.lacks.contains(&"\"content\""));
        assert!(t.openers.contains(&128));
        assert!(t.nprobes() < u16::MAX as usize);
        assert_eq!(t.openers_probe(200), t.openers_probe(128));
        assert!(t.openers_probe(1).is_none());
    }

    #[test]
    fn strings_that_may_be_payloads() {
        let b = "QUJD".repeat(20);
        let line =
            format!(r#"{{"a":"{b}","b":"short","c":"data:image/png;base64,{b}","d":"x\"{b}"}}"#);
        let r = base64_strings(line.as_bytes());
        assert_eq!(r.len(), 2);
        assert_eq!(&line.as_bytes()[r[0].clone()], b.as_bytes());
        assert_eq!(&line.as_bytes()[r[1].clone()], b.as_bytes());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("10"), Some(10));
        assert_eq!(parse_size("2K"), Some(2048));
        assert_eq!(parse_size("1g"), Some(1 << 30));
        assert_eq!(parse_size("x"), None);
    }
}

/// What `sessionfs index` is asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexMode {
    /// Build or refresh the index of the files, then say what it covers.
    Build,
    /// Say what it covers, changing nothing.
    Status,
    /// Remove it.
    Drop,
}

/// What the index covers of some files: (files, bytes) in all, and indexed.
#[derive(Debug, Default, Clone, Copy)]
struct Cover {
    files: u64,
    bytes: u64,
    covered_files: u64,
    covered_bytes: u64,
}

/// `sessionfs index`: builds or refreshes the index of every agent's sessions (or of
/// `paths`), shows its size and what it covers, or drops it. Returns the exit status.
pub fn run_index(paths: &[PathBuf], mode: IndexMode, threads: usize) -> std::process::ExitCode {
    use std::process::ExitCode;
    let Some(store) = Store::from_env() else {
        eprintln!(
            "sessionfs: the index is off (SESSIONFS_CACHE=off, or no home directory to keep it in)"
        );
        return ExitCode::from(2);
    };
    let shown = store.dir().display().to_string();
    if mode == IndexMode::Drop {
        return match store.remove() {
            Ok(n) => {
                println!(
                    "removed the index at {shown} ({})",
                    super::progress::bytes(n)
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!(
                    "sessionfs: {shown}: {}",
                    crate::model::sessions_dir::io_message(&e)
                );
                ExitCode::from(2)
            }
        };
    }
    let agents = if paths.is_empty() {
        match crate::model::sessions_dir::agents() {
            Ok(a) => Some(a),
            Err(m) => {
                eprintln!("sessionfs: {m}");
                return ExitCode::from(2);
            }
        }
    } else {
        None
    };
    (crate::model::agents::SEARCH.begin)();
    super::walk::remember_heads();
    let (jobs, problems) = match &agents {
        Some(a) => super::walk::agent_jobs(a, threads),
        None => super::walk::jobs(paths),
    };
    crate::model::core::memo::save();
    for p in &problems {
        eprintln!("sessionfs: {}", p.why);
    }
    let formats = SearchFormats::get();
    let mut ix = Index::open(store, formats.fingerprint());
    if let Some(why) = &ix.ignored
        && mode == IndexMode::Build
    {
        eprintln!("sessionfs: the index at {shown} is rebuilt: {why}");
    }
    let threads = match threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let start = std::time::Instant::now();
    let mut indexed = (0usize, 0u64);
    let files: Vec<PathBuf> = jobs.iter().map(|j| j.path.clone()).collect();
    super::progress::showing("indexing", |p| {
        let opts = Options {
            wait: true,
            cap: cap(),
            threads,
            progress: Some(p),
            read_only: mode == IndexMode::Status,
        };
        let r = ix.refresh(&files, formats, &opts);
        indexed = (r.indexed, r.bytes);
        let sides: Vec<PathBuf> = files_of(&ix, &jobs).split_off(jobs.len());
        if !sides.is_empty() {
            let r = ix.refresh(&sides, formats, &opts);
            indexed.0 += r.indexed;
            indexed.1 += r.bytes;
        }
    });
    let all = files_of(&ix, &jobs);
    let m = ix.manifest();
    let by_inode = m.by_inode();
    let verified = ix.formats_by_inode();
    let mut by_format: std::collections::BTreeMap<String, Cover> = Default::default();
    let mut seen = std::collections::HashSet::new();
    for p in &all {
        let Ok(md) = std::fs::metadata(p) else {
            continue;
        };
        let st = Stat::of(&md);
        if !seen.insert((st.dev, st.ino)) {
            continue;
        }
        let e = by_inode.get(&(st.dev, st.ino)).map(|&k| &m.entries[k]);
        let format = e
            .filter(|e| !e.format.is_empty())
            .map_or("not indexed", |e| e.format.as_str());
        let c = by_format.entry(format.to_string()).or_default();
        c.files += 1;
        c.bytes += st.size;
        if let Some(e) = e
            && verified.contains_key(&(st.dev, st.ino))
            && e.flags & index::store::Entry::CAPPED == 0
        {
            c.covered_files += 1;
            c.covered_bytes += e.covered;
        }
    }
    let segs = m.segments.len();
    println!(
        "index: {shown}: {} in {segs} segment{}; bound {}",
        super::progress::bytes(m.bytes()),
        if segs == 1 { "" } else { "s" },
        super::progress::bytes(cap()),
    );
    let total = by_format.values().fold(Cover::default(), |a, c| Cover {
        files: a.files + c.files,
        bytes: a.bytes + c.bytes,
        covered_files: a.covered_files + c.covered_files,
        covered_bytes: a.covered_bytes + c.covered_bytes,
    });
    println!(
        "covers: {} of {} session files, {} of {} ({:.1}%)",
        total.covered_files,
        total.files,
        super::progress::bytes(total.covered_bytes),
        super::progress::bytes(total.bytes),
        100.0 * total.covered_bytes as f64 / total.bytes.max(1) as f64
    );
    for (f, c) in &by_format {
        println!(
            "  {f}: {} of {} files, {} of {}",
            c.covered_files,
            c.files,
            super::progress::bytes(c.covered_bytes),
            super::progress::bytes(c.bytes)
        );
    }
    if mode == IndexMode::Build {
        println!(
            "indexed now: {} file{}, {} in {:.1} s",
            indexed.0,
            if indexed.0 == 1 { "" } else { "s" },
            super::progress::bytes(indexed.1),
            start.elapsed().as_secs_f64()
        );
    }
    if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    }
}
