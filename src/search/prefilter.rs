//! Which raw lines can hold a match: the test that spares rendering the others.
//!
//! A line is rendered (and its KIND file and images searched) only when the
//! prefilter says it is a *candidate*. The prefilter must never drop a line whose
//! rendered text matches; it may keep lines that do not (they are rendered and found
//! not to match). It is built from the pattern's required literals
//! ([`super::pattern::Pattern::required`]) and the format's [`Rules`]:
//!
//! 1. From each literal, a *fragment* is chosen: a substring free of the characters
//!    that JSON escapes (`"`, `\`, control characters) or that the parser makes up
//!    (U+FFFD for invalid UTF-8), free of JSON punctuation (`{}[]:,`, which the
//!    renderer may re-space), and not starting with a space (indentation). Where the
//!    text of a fragment comes from a string of the line, the line holds the fragment
//!    as is; where it comes from JSON the renderer re-writes (tool-call arguments), the
//!    line holds it too, the rewrite changing only spacing, escapes and numbers.
//! 2. A fragment that overlaps one of the format's decorations (text the renderer
//!    adds: a heading, a placeholder) also selects the lines where that decoration can
//!    appear (its triggers). A fragment that overlaps a decoration that can appear
//!    anywhere is not used.
//! 3. A fragment that can lie inside one number as JavaScript writes it (`-12.5`,
//!    `1e+21`, and any part of one: `2.5`, `e+`) may come from a number, which the
//!    renderer writes as JavaScript does (or, for some values, as serde_json does:
//!    `2479.0`): it also selects the lines holding a number written otherwise (`1.50`,
//!    `1e3`, `-0`, 16 digits or more) and the lines where the format derives numbers. A
//!    fragment no one number can hold (`v1.5x`, a UUID, but also `1.6.0`, `127.0.0.1`,
//!    `2026-11-30`) reaches past a number only into text no fragment holds or into a
//!    decoration, whose triggers it selects ([`number_sensitive`]).
//! 4. Escapes that JavaScript's `JSON.stringify` would not write (`\/`, `\u0041`,
//!    upper-case hex, surrogate pairs) can spell any character: a line holding one is
//!    a candidate whatever the fragment.
//! 5. Where the format derives entry ids (Pi's v1 files), a fragment of hex digits
//!    alone could come from one, and is not used.
//! 6. Lines the format rewrites rather than copies (Pi 1.6's one-line summaries of a
//!    system prompt) are always candidates.
//! 7. Binary content files (images) are in a line only as base64: a line where the
//!    format says they may be (a `"image"` for Pi) is a candidate when one of the
//!    pattern's required literals occurs in the decoded bytes of any `"data"` string
//!    of the line (or when such a string holds an escape, and is not looked into).
//! 8. A file an entry shows as it is, kept beside the session (a Claude Code tool
//!    result's `full-output`, [`Rules::spilled`]), is not in the line at all: a line
//!    that may name one is a candidate when the file it names holds one of the
//!    pattern's required literals, or cannot be read, or the line does not parse.
//! 9. Binary content an entry shows from another line of its file (an image a Copilot
//!    CLI prompt names by id, [`Rules::held`]): a line that may name some is a
//!    candidate when its own bytes make it one, or when a line of the same file that
//!    may hold some may match: it is selected by the rules above (its strings, its
//!    triggers, its escapes), or one of the pattern's literals occurs in the decoded
//!    bytes of one of its `"data"` strings, or such a string holds an escape or does
//!    not end. The file's scan decides that once it has read every line it reads
//!    ([`HeldScan`]), since the holding line may come after the naming one.
//!
//! Among the fragments of the literals, the one that selects least is used (long,
//! adding few triggers and no full pass over the lines: [`score`]); a set of literals
//! (an alternation) gives one fragment per literal. With `-i`, fragments are searched
//! case-insensitively and compared with decorations case-insensitively. When no
//! literal gives a fragment (`.*`, a single `{`, a pattern made of decoration text
//! only), or the format is not known ([`super::rules::detect`]), every line is a
//! candidate.

use super::rules::{Rules, Trigger};
use memchr::memmem;
use regex::bytes::{Regex, RegexBuilder};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Characters a fragment may not hold (see the module docs).
fn risky(c: char) -> bool {
    matches!(
        c,
        '"' | '\\' | '{' | '}' | '[' | ']' | ':' | ',' | '\u{FFFD}'
    ) || (c as u32) < 0x20
}

/// Whether two characters are equal, or equal under case folding with `icase`.
fn same(a: char, b: char, icase: bool) -> bool {
    if a == b {
        return true;
    }
    if a.is_ascii() && b.is_ascii() {
        return icase && a.eq_ignore_ascii_case(&b);
    }
    icase && (a.to_lowercase().eq(b.to_lowercase()) || a.to_uppercase().eq(b.to_uppercase()))
}

fn eq(a: &[char], b: &[char], icase: bool) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(&x, &y)| same(x, y, icase))
}

/// Whether `needle` occurs in `hay` (the reference for [`Overlaps`]).
#[cfg(test)]
fn contains(hay: &[char], needle: &[char], icase: bool) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| eq(w, needle, icase))
}

/// Whether an occurrence of `f` can share characters with an occurrence of `d`: one
/// holds the other, or a proper prefix of one is a suffix of the other. The
/// definition, checked one fragment at a time; [`Overlaps`] answers the same for every
/// fragment of a literal at once.
#[cfg(test)]
fn overlaps(f: &[char], d: &[char], icase: bool) -> bool {
    if contains(d, f, icase) || contains(f, d, icase) {
        return true;
    }
    let n = f.len().min(d.len());
    (1..n).any(|k| eq(&f[..k], &d[d.len() - k..], icase) || eq(&f[f.len() - k..], &d[..k], icase))
}

/// Which substrings `cs[s..e]` of a literal overlap one decoration `d` (as
/// [`overlaps`] defines it), each answered in constant time after `O(|cs|·|d|)`
/// work. Testing every fragment against every decoration directly costs
/// `O(|cs|·64·|d|)` per decoration and more, which the long sentences of Claude
/// Code's attachments made the bulk of building a prefilter.
///
/// The four ways to overlap, for `f = cs[s..e]` of length `n`:
/// 1. `d` holds `f`: `n` is at most the longest prefix of `cs[s..]` found in `d`
///    (`inside[s]`);
/// 2. `f` holds `d`: an occurrence of `d` starts at `s` or later and ends by `e`
///    (`holds[s]` is the earliest such end);
/// 3. a prefix of `f` of length `k < min(n, |d|)` ends `d`: `n` exceeds the least such
///    `k` starting at `s` (`head[s]`);
/// 4. a suffix of `f` of length `k < min(n, |d|)` starts `d`: `n` exceeds the least
///    such `k` ending at `e` (`tail[e]`).
///
/// Fragments are at most [`MAX_FRAGMENT`] characters long, so 3 and 4 look no
/// further.
struct Overlaps {
    inside: Vec<usize>,
    holds: Vec<usize>,
    head: Vec<usize>,
    tail: Vec<usize>,
}

impl Overlaps {
    fn new(cs: &[char], d: &[char], icase: bool) -> Overlaps {
        let (l, dl) = (cs.len(), d.len());
        let mut inside = vec![0; l];
        let mut holds = vec![usize::MAX; l + 1];
        // `row[j]`: the longest common prefix of `cs[s..]` and `d[j..]`, for the `s`
        // of the iteration (from the end, so that `next` holds `s + 1`'s).
        let mut next = vec![0usize; dl + 1];
        let mut row = vec![0usize; dl + 1];
        for s in (0..l).rev() {
            for j in 0..dl {
                row[j] = if same(cs[s], d[j], icase) {
                    1 + next[j + 1]
                } else {
                    0
                };
            }
            inside[s] = row[..dl].iter().copied().max().unwrap_or(0);
            holds[s] = if dl == 0 || row.first().is_some_and(|&p| p >= dl) {
                s + dl
            } else {
                holds[s + 1]
            };
            std::mem::swap(&mut next, &mut row);
        }
        let least = |ok: &dyn Fn(usize) -> bool, most: usize| {
            (1..most).find(|&k| ok(k)).unwrap_or(usize::MAX)
        };
        let head = (0..l)
            .map(|s| {
                let most = (l - s + 1).min(dl).min(MAX_FRAGMENT);
                least(&|k| eq(&cs[s..s + k], &d[dl - k..], icase), most)
            })
            .collect();
        let tail = (0..=l)
            .map(|e| {
                let most = (e + 1).min(dl).min(MAX_FRAGMENT);
                least(&|k| eq(&cs[e - k..e], &d[..k], icase), most)
            })
            .collect();
        Overlaps {
            inside,
            holds,
            head,
            tail,
        }
    }

    /// Whether `cs[s..e]` (not empty) overlaps the decoration.
    fn at(&self, s: usize, e: usize) -> bool {
        let n = e - s;
        n <= self.inside[s] || e >= self.holds[s] || n > self.head[s] || n > self.tail[e]
    }
}

/// The longest fragment chosen, in characters (longer ones select no fewer lines in
/// practice, and cost more to find).
const MAX_FRAGMENT: usize = 64;

/// Whether an occurrence of `f` can share characters with a number the renderer writes
/// otherwise than the line (as JavaScript does: `-12.5`, `1e+21`, `1e-7`) or derives:
/// only a fragment that can lie inside one such number ([`in_one_number`]). A number
/// in the rendered text is a token of that shape, and what stands next to it is either
/// what no fragment holds (JSON punctuation, a quote, a line's end, the indentation
/// before it, which no fragment starts with) or a decoration of the format (the text
/// around a derived number: `, SIZE bytes → image-`); a fragment reaching past the
/// number overlaps that decoration, and selects the lines where it can be written
/// through its triggers. So `1.6.0`, `127.0.0.1` or `2026-11-30`, which no one number
/// holds, are in the line or meet a decoration, as any other text. The tests that
/// explain every fixture's rendering with the rules check that the renderers keep to
/// this.
fn number_sensitive(f: &[char]) -> bool {
    in_one_number(f)
}

/// Whether `f` (not empty) can be a part of one number as JavaScript writes it,
/// `-?D+(\.D+)?(e[+-]D+)?` with `D` a digit (`e` in either case, for `-i`): a walk of
/// that shape's states that may start at any of them (so only a number's characters
/// pass).
fn in_one_number(f: &[char]) -> bool {
    // 0 before the sign, 1 after it, 2 in the integer digits, 3 after the point, 4 in
    // the fraction's digits, 5 after the `e`, 6 after the exponent's sign, 7 in its
    // digits.
    let step = |state: u8, c: char| -> Option<u8> {
        let digit = c.is_ascii_digit();
        match (state, c) {
            (0, '-') => Some(1),
            (0..=2, _) if digit => Some(2),
            (2, '.') => Some(3),
            (3 | 4, _) if digit => Some(4),
            (2 | 4, 'e' | 'E') => Some(5),
            (5, '+' | '-') => Some(6),
            (5..=7, _) if digit => Some(7),
            _ => None,
        }
    };
    !f.is_empty()
        && (0..8).any(|start| {
            f.iter()
                .try_fold(start, |state, &c| step(state, c))
                .is_some()
        })
}

/// A fragment and what else it selects.
#[derive(Debug, Clone)]
struct Choice {
    fragment: String,
    triggers: Vec<Trigger>,
    numbers: bool,
    score: i64,
}

/// How few lines a fragment of `chars` characters selects, as a score (higher is
/// fewer), when the lines where it overlaps a decoration add `triggers` distinct
/// triggers, `full_pass` when one of those needs a look at every line (a number, a
/// line's length or nesting).
///
/// Length counts up to 16 characters: past a few, a literal is rare in any text,
/// and one or two characters less change little (a fragment of 11 characters selects
/// about the lines one of 12 does). A trigger, by contrast, selects every line of a
/// kind whatever the pattern: every attachment line of every Claude Code session for
/// a fragment starting with `d`, which can end JavaScript's `undefined`. So a trigger
/// costs as much as four characters: `ebug_assert` (no trigger) is chosen over
/// `debug_assert` (every attachment line), where a trigger worth less than one
/// character chose the latter and read a thousand sessions that held neither. Under
/// three characters a fragment holds no trigram, so the index cannot narrow it, and
/// it occurs in most lines: a fragment that short costs five characters more, so
/// that `dog` and its trigger are still chosen over `og`.
fn score(chars: usize, full_pass: bool, triggers: usize) -> i64 {
    (chars.min(16) as i64) * 10
        - if chars < 3 { 50 } else { 0 }
        - if full_pass { 50 } else { 0 }
        - 40 * triggers as i64
}

/// The best fragment of `lit` under `rules`, if any is usable.
fn choose(lit: &str, rules: &Rules, icase: bool) -> Option<Choice> {
    let cs: Vec<char> = lit.chars().collect();
    // Each distinct trigger gets a bit; a decoration, and the derived numbers, a set.
    let mut table: Vec<Trigger> = Vec::new();
    let mut set_of = |ts: &[Trigger]| -> Vec<u64> {
        let mut bits = Vec::new();
        for t in ts {
            let k = table.iter().position(|x| x == t).unwrap_or_else(|| {
                table.push(*t);
                table.len() - 1
            });
            bits.resize(bits.len().max(k / 64 + 1), 0);
            bits[k / 64] |= 1 << (k % 64);
        }
        bits
    };
    let decos: Vec<(Overlaps, bool, Vec<u64>)> = rules
        .decorations
        .iter()
        .map(|d| {
            let text: Vec<char> = d.text.chars().collect();
            (
                Overlaps::new(&cs, &text, icase),
                d.when.is_empty(),
                set_of(d.when),
            )
        })
        .collect();
    let numbers_set = set_of(rules.derived_numbers);
    let words = table.len().div_ceil(64);
    let mut passes = vec![0u64; words];
    for (k, t) in table.iter().enumerate() {
        if !matches!(t, Trigger::Matches(_)) {
            passes[k / 64] |= 1 << (k % 64);
        }
    }
    let union = |into: &mut [u64], from: &[u64]| {
        into.iter_mut().zip(from).for_each(|(a, b)| *a |= b);
    };
    let mut set = vec![0u64; words];
    let mut best: Option<(usize, usize, Vec<u64>, bool, i64)> = None;
    for s in 0..cs.len() {
        if risky(cs[s]) || cs[s] == ' ' {
            continue;
        }
        'fragment: for e in s + 1..=cs.len().min(s + MAX_FRAGMENT) {
            if risky(cs[e - 1]) {
                break;
            }
            let f = &cs[s..e];
            set.iter_mut().for_each(|w| *w = 0);
            for (o, anywhere, when) in &decos {
                if o.at(s, e) {
                    if *anywhere {
                        continue 'fragment;
                    }
                    union(&mut set, when);
                }
            }
            let hex = |c: &char| {
                c.is_ascii_digit() || matches!(c, 'a'..='f') || (icase && matches!(c, 'A'..='F'))
            };
            if rules.derived_ids && f.iter().all(hex) {
                continue;
            }
            let numbers = number_sensitive(f);
            if numbers {
                union(&mut set, &numbers_set);
            }
            let full_pass = numbers || set.iter().zip(&passes).any(|(a, b)| a & b != 0);
            let count: u32 = set.iter().map(|w| w.count_ones()).sum();
            let score = score(f.len(), full_pass, count as usize);
            if best.as_ref().is_none_or(|b| score > b.4) {
                best = Some((s, e, set.clone(), numbers, score));
            }
        }
    }
    let (s, e, set, numbers, score) = best?;
    let mut triggers: Vec<Trigger> = table
        .iter()
        .enumerate()
        .filter(|(k, _)| set[k / 64] & (1 << (k % 64)) != 0)
        .map(|(_, t)| *t)
        .collect();
    triggers.sort_by_key(|t| format!("{t:?}"));
    Some(Choice {
        fragment: cs[s..e].iter().collect(),
        triggers,
        numbers,
        score,
    })
}

/// How lines that may have binary content files are decided.
#[derive(Debug, Clone)]
struct Binary {
    /// Where binary content may be (the format's triggers).
    place: Regex,
    /// The pattern's literals, looked for in the decoded binary content.
    literals: Regex,
}

/// How lines whose entry may show a file of its own are decided ([`Rules::spilled`]).
#[derive(Debug, Clone)]
struct Spill {
    /// Where the file may be named.
    place: Regex,
    /// The file a line shows, given the session file.
    file: fn(&Path, &[u8]) -> Result<Option<PathBuf>, ()>,
    /// The pattern's literals, looked for in the file.
    literals: Regex,
}

/// How lines that may show binary content held by other lines are decided
/// ([`Rules::held`]).
#[derive(Debug, Clone)]
struct HeldPlaces {
    /// Lines that may name held content.
    names: Regex,
    /// Lines that may hold it.
    holds: Regex,
    /// The pattern's literals, looked for in the decoded held content.
    literals: Regex,
}

/// What the scan of one file found of its held binary content ([`Rules::held`]), over
/// the blocks it reads: whether a holding line may match, and the naming lines that
/// are candidates only if one does (rule 9 of the module docs).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct HeldScan {
    /// A line that may hold binary content may match.
    pub may: bool,
    /// Naming lines not selected by their own bytes: each line's offset (as the scan
    /// was given it, `base` + position) and length without its newline.
    pub waiting: Vec<(u64, usize)>,
}

/// What a prefilter selects, as the index needs to know it ([`super::indexed`]): a
/// line is a candidate when it holds a fragment (with `icase`, any case variant) or
/// one of `triggers` holds on it, or it is of a kind the prefilter always selects
/// (escapes `JSON.stringify` would not write; `\/` only with `slash`; numbers written
/// otherwise only with `numbers`; the format's `always` lines; lines that may name a
/// spilled file with `spill`: every such line with `spill_every`, else only where the
/// session may have spilled files, `Spilled::any`), or (with `binary`) it may have
/// binary content holding one of those literals (none: any binary content), or (with
/// `held`) it may hold binary content other lines show holding one of those literals
/// (none: every line that may name held content is a candidate, `-c`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    pub fragments: Vec<String>,
    pub icase: bool,
    pub triggers: Vec<Trigger>,
    pub numbers: bool,
    pub slash: bool,
    pub binary: Option<Vec<String>>,
    pub spill: bool,
    pub spill_every: bool,
    pub held: Option<Vec<String>>,
}

/// The raw-line test for one pattern and one format. See the module docs.
#[derive(Debug, Clone)]
pub struct Prefilter {
    /// Every line is a candidate.
    all: bool,
    /// Finds the fragments and the triggers that are patterns.
    finder: Option<Regex>,
    lacks: Vec<memmem::Finder<'static>>,
    openers: Option<usize>,
    /// Lines longer than this are candidates ([`Trigger::Longer`]).
    longer: Option<usize>,
    /// A fragment holds a `/`.
    slash: bool,
    /// Where the format's binary content files may be, and what else decides.
    binary: Option<Binary>,
    /// Where a file of the entry's own may be named, and what else decides.
    spill: Option<Spill>,
    /// Where binary content other lines show may be named and held (not with
    /// `every_binary`, where every naming line is a candidate).
    held: Option<HeldPlaces>,
    /// The fragments and triggers alone, for a line where binary content, a spilled
    /// file or held content may be: a line that has them is a candidate anyway.
    text: Option<Regex>,
    /// The fragments that can lie inside one number (lower-case with `-i`): a line
    /// holding a number written otherwise is a candidate when a form the renderers
    /// write it in holds one of them (rule 3).
    numbers: Vec<Vec<u8>>,
    /// The fragments chosen (for `--debug` output and tests).
    pub fragments: Vec<String>,
    /// What it selects, for the index (`None`: every line).
    selection: Option<Selection>,
}

impl Prefilter {
    /// A prefilter that selects every line.
    pub fn everything() -> Prefilter {
        Prefilter {
            all: true,
            finder: None,
            lacks: Vec::new(),
            openers: None,
            longer: None,
            slash: false,
            binary: None,
            spill: None,
            held: None,
            text: None,
            numbers: Vec::new(),
            fragments: Vec::new(),
            selection: None,
        }
    }

    /// The prefilter for a pattern with these required literal sets (each a
    /// necessary condition), searched case-insensitively with `icase`. With
    /// `every_binary`, every line that may have binary content files, a spilled file
    /// or held binary content is a candidate (`-c` lists every image and file,
    /// matching or not).
    pub fn new(
        required: &[Vec<String>],
        rules: &Rules,
        icase: bool,
        every_binary: bool,
    ) -> Prefilter {
        // The best set: each literal's best fragment, the set as good as its worst.
        let mut best: Option<(&Vec<String>, Vec<Choice>)> = None;
        let mut best_score = i64::MIN;
        for set in required {
            let choices: Option<Vec<Choice>> =
                set.iter().map(|l| choose(l, rules, icase)).collect();
            let Some(choices) = choices else { continue };
            let Some(score) = choices.iter().map(|c| c.score).min() else {
                continue;
            };
            if best.is_none() || score > best_score {
                best_score = score;
                best = Some((set, choices));
            }
        }
        let Some((set, choices)) = best else {
            return Prefilter::everything();
        };
        let mut triggers: Vec<Trigger> = Vec::new();
        let mut numbers = Vec::new();
        let mut fragments = Vec::new();
        for c in choices {
            triggers.extend(c.triggers);
            if c.numbers {
                // A number's forms are ASCII, with a lower-case `e`.
                numbers.push(if icase {
                    c.fragment.to_ascii_lowercase().into_bytes()
                } else {
                    c.fragment.clone().into_bytes()
                });
            }
            fragments.push(c.fragment);
        }
        triggers.sort_by_key(|t| format!("{t:?}"));
        triggers.dedup();
        fragments.sort();
        fragments.dedup();
        let mut alts: Vec<String> = Vec::new();
        let frag_alt = fragments
            .iter()
            .map(|f| regex::escape(f))
            .collect::<Vec<_>>()
            .join("|");
        alts.push(if icase {
            format!("(?i:{frag_alt})")
        } else {
            frag_alt
        });
        let mut lacks = Vec::new();
        let mut openers: Option<usize> = None;
        let mut longer: Option<usize> = None;
        let selection = Selection {
            fragments: fragments.clone(),
            icase,
            triggers: triggers.clone(),
            numbers: !numbers.is_empty(),
            slash: fragments.iter().any(|f| f.contains('/')),
            binary: (!rules.binary_content.is_empty()).then(|| {
                if every_binary {
                    Vec::new()
                } else {
                    set.clone()
                }
            }),
            spill: rules.spilled.is_some(),
            spill_every: rules.spilled.is_some() && every_binary,
            held: rules.held.map(|_| {
                if every_binary {
                    Vec::new()
                } else {
                    set.clone()
                }
            }),
        };
        triggers.extend_from_slice(rules.always);
        for t in &triggers {
            match *t {
                Trigger::Matches(r) => alts.push(r.to_string()),
                Trigger::Lacks(s) => lacks.push(memmem::Finder::new(s.as_bytes()).into_owned()),
                Trigger::Openers(n) => openers = Some(openers.map_or(n, |o| o.min(n))),
                Trigger::Longer(n) => longer = Some(longer.map_or(n, |o| o.min(n))),
            }
        }
        let build = |p: &str, icase: bool| {
            RegexBuilder::new(p)
                .case_insensitive(icase)
                .size_limit(64 << 20)
                .build()
                .expect("fragments and literals are escaped, triggers are valid")
        };
        let patterns = |ts: &[Trigger], what: &str| -> Vec<String> {
            ts.iter()
                .map(|t| match t {
                    Trigger::Matches(r) => r.to_string(),
                    _ => panic!("{what} is found with patterns"),
                })
                .collect()
        };
        let binary_where = patterns(rules.binary_content, "binary content");
        // With `every_binary` a spilled file is listed whatever it holds: its lines
        // are candidates as the format's other triggers are.
        let spill_where = match rules.spilled {
            Some(sp) if every_binary => {
                alts.extend(patterns(sp.place, "a spilled file"));
                Vec::new()
            }
            Some(sp) => patterns(sp.place, "a spilled file"),
            None => Vec::new(),
        };
        // Likewise a line that may name held content, with `every_binary`; otherwise
        // naming and holding lines are looked at whatever they hold.
        let (names_where, holds_where) = match rules.held {
            Some(h) if every_binary => {
                alts.extend(patterns(h.names, "held content"));
                (Vec::new(), Vec::new())
            }
            Some(h) => (
                patterns(h.names, "held content"),
                patterns(h.holds, "held content"),
            ),
            None => (Vec::new(), Vec::new()),
        };
        let text = alts.join("|");
        let literals = set
            .iter()
            .map(|l| regex::escape(l))
            .collect::<Vec<_>>()
            .join("|");
        let binary = (!binary_where.is_empty()).then(|| Binary {
            place: build(&binary_where.join("|"), false),
            literals: build(if every_binary { "" } else { &literals }, icase),
        });
        let spill = match rules.spilled {
            Some(sp) if !spill_where.is_empty() => Some(Spill {
                place: build(&spill_where.join("|"), false),
                file: sp.file,
                literals: build(&literals, icase),
            }),
            _ => None,
        };
        let held = (!names_where.is_empty()).then(|| HeldPlaces {
            names: build(&names_where.join("|"), false),
            holds: build(&holds_where.join("|"), false),
            literals: build(&literals, icase),
        });
        let text =
            (binary.is_some() || spill.is_some() || held.is_some()).then(|| build(&text, false));
        alts.extend(binary_where);
        alts.extend(spill_where);
        alts.extend(names_where);
        alts.extend(holds_where);
        let finder = build(&alts.join("|"), false);
        Prefilter {
            all: false,
            finder: Some(finder),
            binary,
            spill,
            held,
            text,
            lacks,
            openers,
            longer,
            slash: fragments.iter().any(|f| f.contains('/')),
            numbers,
            fragments,
            selection: Some(selection),
        }
    }

    /// What it selects, for the index; `None` when it selects every line.
    pub fn selection(&self) -> Option<&Selection> {
        self.selection.as_ref()
    }

    /// Whether every line is a candidate (nothing to scan).
    pub fn selects_everything(&self) -> bool {
        self.all
    }

    /// Appends to `out` the offsets (`base` + position in `buf`) of the candidate
    /// lines of `buf`, which holds whole lines, each ending in `\n`. Sorted, once each.
    /// A line that may name a spilled file ([`Rules::spilled`]) is a candidate: see
    /// [`Prefilter::scan_in`].
    pub fn scan(&self, buf: &[u8], base: u64, out: &mut Vec<u64>) {
        self.scan_in(buf, base, out, None, None);
    }

    /// [`Prefilter::scan`] for lines of the session file `session` (or of its side
    /// files): a line that may name a spilled file is a candidate when the file it
    /// names holds one of the pattern's literals, or cannot be read, or the line does
    /// not say (without `session`: always). With `held`, a line that may name binary
    /// content held by other lines ([`Rules::held`]) and is no candidate by its own
    /// bytes is added to `held.waiting` rather than to `out`, and `held.may` is set
    /// when a line that may hold such content may match: the caller makes the waiting
    /// lines candidates once it has read every line of the file it reads, if `may`
    /// is set then. Without `held`, such a line is a candidate.
    pub fn scan_in(
        &self,
        buf: &[u8],
        base: u64,
        out: &mut Vec<u64>,
        session: Option<&Path>,
        mut held: Option<&mut HeldScan>,
    ) {
        let mut marks: Vec<usize> = Vec::new();
        if self.all {
            let mut start = 0;
            for nl in memchr::memchr_iter(b'\n', buf) {
                marks.push(start);
                start = nl + 1;
            }
            out.extend(marks.into_iter().map(|m| base + m as u64));
            return;
        }
        let line_start = |at: usize| memchr::memrchr(b'\n', &buf[..at]).map_or(0, |p| p + 1);
        let line_end = |at: usize| memchr::memchr(b'\n', &buf[at..]).map_or(buf.len(), |p| at + p);
        // Fragments, triggers, binary content and spilled files, in one pass. A hit
        // where binary content or a spilled file may be is a candidate if the line
        // also has a fragment or a trigger, or its binary content or its spilled file
        // has the pattern's literals.
        let re = self.finder.as_ref().expect("built");
        let starts_at = |place: &Regex, h: usize, le: usize| {
            place.find_at(&buf[..le], h).is_some_and(|p| p.start() == h)
        };
        // Naming lines that are no candidates by their own bytes, waiting (positions).
        let mut waiting: Vec<(usize, usize)> = Vec::new();
        let mut at = 0;
        while at < buf.len() {
            let Some(m) = re.find_at(buf, at) else { break };
            let h = m.start();
            let (ls, le) = (line_start(h), line_end(h));
            let line = &buf[ls..le];
            let conditional =
                self.binary
                    .as_ref()
                    .is_some_and(|b| starts_at(&b.place, h, le))
                    || self
                        .spill
                        .as_ref()
                        .is_some_and(|sp| starts_at(&sp.place, h, le))
                    || self.held.as_ref().is_some_and(|hp| {
                        starts_at(&hp.names, h, le) || starts_at(&hp.holds, h, le)
                    });
            if let Some(hp) = &self.held
                && let Some(hs) = held.as_deref_mut()
                && !hs.may
                && hp.holds.is_match(line)
                && (self.text.as_ref().is_some_and(|t| t.is_match(line))
                    || binary_may_match(line, &hp.literals))
            {
                hs.may = true;
            }
            let names = |hp: &HeldPlaces| hp.names.is_match(line);
            let keep = !conditional
                || self.text.as_ref().is_some_and(|t| t.is_match(line))
                || self
                    .binary
                    .as_ref()
                    .is_some_and(|b| b.place.is_match(line) && binary_may_match(line, &b.literals))
                || self.spill.as_ref().is_some_and(|sp| {
                    sp.place.is_match(line) && spill_may_match(sp, line, session)
                })
                || (held.is_none() && self.held.as_ref().is_some_and(names));
            if keep {
                marks.push(ls);
            } else if self.held.as_ref().is_some_and(names) {
                waiting.push((ls, le - ls));
            }
            at = le + 1;
        }
        // Escapes JSON.stringify would not write. `\/` spells only a `/`, which matters
        // only to fragments holding one (triggers hold none).
        let mut escapes = memmem::find_iter(buf, b"\\u").collect::<Vec<_>>();
        if self.slash {
            escapes.extend(memmem::find_iter(buf, b"\\/"));
        }
        for h in escapes {
            if odd_escape(buf, h) {
                marks.push(line_start(h));
                // It may spell a key or a type: the line may hold content others show.
                if self.held.is_some()
                    && let Some(hs) = held.as_deref_mut()
                {
                    hs.may = true;
                }
            }
        }
        marks.sort_unstable();
        marks.dedup();
        // Checks that need every line.
        if !self.lacks.is_empty()
            || self.openers.is_some()
            || self.longer.is_some()
            || !self.numbers.is_empty()
        {
            let mut extra = Vec::new();
            let mut next_mark = marks.iter().peekable();
            let mut start = 0;
            for nl in memchr::memchr_iter(b'\n', buf) {
                let line = &buf[start..nl];
                while next_mark.next_if(|&&m| m < start).is_some() {}
                let marked = next_mark.peek().is_some_and(|&&m| m == start);
                if !marked && self.line_needs_more(line) {
                    extra.push(start);
                }
                start = nl + 1;
            }
            if let Some(hp) = &self.held
                && let Some(hs) = held.as_deref_mut()
                && !hs.may
            {
                // A holding line its triggers select (a nesting bound, a missing key).
                hs.may = extra
                    .iter()
                    .any(|&s| hp.holds.is_match(&buf[s..line_end(s)]));
            }
            marks.extend(extra);
            marks.sort_unstable();
        }
        if let Some(hs) = held {
            hs.waiting.extend(
                waiting
                    .into_iter()
                    .filter(|(s, _)| marks.binary_search(s).is_err())
                    .map(|(s, l)| (base + s as u64, l)),
            );
        }
        out.extend(marks.into_iter().map(|m| base + m as u64));
    }

    fn line_needs_more(&self, line: &[u8]) -> bool {
        self.lacks.iter().any(|f| f.find(line).is_none())
            || self
                .openers
                .is_some_and(|n| crate::model::core::grep::openers(line) > n)
            || self.longer.is_some_and(|n| line.len() > n)
            || (!self.numbers.is_empty() && odd_number_holding(line, &self.numbers))
    }
}

/// Whether `literals` occur in the decoded bytes of a `"data"` string of `line` (as
/// Pi's and Claude Code's images are decoded) or of the base64 part of an
/// `"image_url"` or `"url"` `data:` URL (as Codex's and opencode's are), or such a
/// string holds an escape.
fn binary_may_match(line: &[u8], literals: &Regex) -> bool {
    binary_strings(line, &mut |_, data| literals.is_match(data)).unwrap_or(true)
}

/// Visits the binary content of `line` as the prefilter decodes it: each `"data"`
/// string, and the base64 part of each `"image_url"` or `"url"` `data:` URL, with the
/// bytes of the line it is decoded from and the decoded bytes, until `visit` says
/// `true` (then `Some(true)`). `None` when such a string holds an escape or does not
/// end before one that `visit` accepts (it may be anything).
pub fn binary_strings(
    line: &[u8],
    visit: &mut dyn FnMut(Range<usize>, &[u8]) -> bool,
) -> Option<bool> {
    let ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
    for key in [&b"\"data\""[..], &b"\"image_url\""[..], &b"\"url\""[..]] {
        for h in memmem::find_iter(line, key) {
            let mut i = h + key.len();
            while line.get(i).is_some_and(ws) {
                i += 1;
            }
            if line.get(i) != Some(&b':') {
                continue;
            }
            i += 1;
            while line.get(i).is_some_and(ws) {
                i += 1;
            }
            if line.get(i) != Some(&b'"') {
                continue;
            }
            let start = i + 1;
            // A string that does not end may be anything.
            let len = memchr::memchr2(b'"', b'\\', &line[start..])?;
            if line[start + len] == b'\\' {
                return None;
            }
            let mut from = start;
            if key != b"\"data\"" {
                // `data:MIME;base64,DATA`: only DATA is decoded.
                match line[start..start + len].strip_prefix(b"data:") {
                    Some(r) => match memchr::memchr(b',', r) {
                        Some(c) => from = start + 5 + c + 1,
                        None => continue,
                    },
                    None => continue,
                }
            }
            let raw = &line[from..start + len];
            let data = crate::model::base64::decode(&String::from_utf8_lossy(raw));
            if visit(from..start + len, &data) {
                return Some(true);
            }
        }
    }
    Some(false)
}

/// Whether the file a line names ([`Rules::spilled`]) may hold the pattern's
/// literals: it does, or it cannot be read, or the line does not say which file.
fn spill_may_match(sp: &Spill, line: &[u8], session: Option<&Path>) -> bool {
    let Some(session) = session else {
        return true;
    };
    match (sp.file)(session, line) {
        Err(()) => true,
        Ok(None) => false,
        // Read as the mount reads it (inside the session's folder, a regular file,
        // bounded); one that cannot be read may hold anything.
        Ok(Some(p)) => crate::model::input::read_beneath(
            session.parent().unwrap_or(Path::new(".")),
            &p,
            crate::model::input::max_line() as u64,
        )
        .map_or(true, |data| sp.literals.is_match(&data)),
    }
}

/// Whether the `\u` or `\/` at `h` is an escape `JSON.stringify` would not write.
fn odd_escape(buf: &[u8], h: usize) -> bool {
    !escaped_backslash(buf, h) && (buf[h + 1] == b'/' || !canonical_u_escape(&buf[h..]))
}

/// Whether the backslash at `h` is the second half of an escaped backslash.
fn escaped_backslash(buf: &[u8], h: usize) -> bool {
    let before = buf[..h].iter().rev().take_while(|&&b| b == b'\\').count();
    before % 2 == 1
}

/// Whether `s` (starting with `\u`) is an escape as `JSON.stringify` writes one: a
/// control character without a short form, in lower-case hex.
fn canonical_u_escape(s: &[u8]) -> bool {
    let Some(hex) = s.get(2..6) else {
        return false;
    };
    if !hex
        .iter()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
    {
        return false;
    }
    let v = u32::from_str_radix(std::str::from_utf8(hex).unwrap(), 16).unwrap();
    v < 0x20 && !matches!(v, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d)
}

/// Whether `line` holds an escape `JSON.stringify` would not write: a `\\u` one
/// (`slash`: or `\\/`), as the prefilter looks for them (not after an escaped
/// backslash).
pub fn has_odd_escape(line: &[u8], slash: bool) -> bool {
    memmem::find_iter(line, b"\\u").any(|h| odd_escape(line, h))
        || (slash && memmem::find_iter(line, b"\\/").any(|h| odd_escape(line, h)))
}

/// Whether `line` holds a number written otherwise whose written forms may hold one
/// of `fragments` (each lower-case when the search ignores case, as the forms are):
/// the text a number-sensitive fragment can come from when the line does not hold it.
fn odd_number_holding(line: &[u8], fragments: &[Vec<u8>]) -> bool {
    odd_number_tokens(line, |_, forms| match forms {
        Some(forms) => forms.iter().any(|f| {
            fragments
                .iter()
                .any(|x| memmem::find(f.as_bytes(), x).is_some())
        }),
        None => true,
    })
}

/// Gives `visit` each number of `line` that a renderer may write otherwise than the
/// line does, with its written forms ([`written_forms`]; `None`: not known), until it
/// returns `true` (then `true`).
///
/// A renderer writes a number it parsed from JSON: the line's own, or a string of it
/// that it parses as JSON (Codex's tool-call arguments). In JSON a number is a token
/// `-?(0|[1-9]D*)(\.D+)?([eE][+-]?D+)?` between JSON's punctuation or whitespace; in
/// the raw line, whitespace inside a string is an escape (`\n`, `\t`, `\r`; one
/// written `\u0020` makes the line a candidate anyway, rule 4), and a string that is
/// all one number starts and ends with its quotes. So a number is a run of those
/// characters with none of `[A-Za-z0-9_.+-]` just before or after it (a letter
/// after a backslash is an escape, and may stand before it): the digits of an id
/// (`6461e083`, `a-0f3`), a version (`1.10.2`), a word (`x1e5`) or base64 are no
/// numbers. A number is written otherwise when JavaScript's form or serde_json's
/// ([`written_forms`]) is not its text in the line: `1.50`, `1e3`, `-0`, `2479e0`,
/// `0.000001` (serde_json's `1e-6`), an integer past 2^53; not `0.1`, `-12`, nor the
/// 17 digits of `0.30000000000000004` JavaScript wrote.
pub fn odd_number_tokens(
    line: &[u8],
    mut visit: impl FnMut(&[u8], Option<&[String; 2]>) -> bool,
) -> bool {
    let n = line.len();
    let digits_from = |mut j: usize| {
        while j < n && line[j].is_ascii_digit() {
            j += 1;
        }
        j
    };
    let mut i = 0;
    while i < n {
        if !line[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        // A run of digits starts at `i` (what precedes it is no digit).
        let start = if i > 0 && line[i - 1] == b'-' {
            i - 1
        } else {
            i
        };
        let int_end = digits_from(i);
        let mut j = int_end;
        let mut plain = true;
        if j + 1 < n && line[j] == b'.' && line[j + 1].is_ascii_digit() {
            j = digits_from(j + 1);
            plain = false;
        }
        if j < n && line[j] | 0x20 == b'e' {
            let mut k = j + 1;
            if k < n && (line[k] == b'+' || line[k] == b'-') {
                k += 1;
            }
            if k < n && line[k].is_ascii_digit() {
                j = digits_from(k);
                plain = false;
            }
        }
        let opens = start == 0
            || !word_char(line[start - 1])
            || (line[start - 1].is_ascii_alphabetic() && start >= 2 && line[start - 2] == b'\\');
        let closes = j == n || !word_char(line[j]);
        let leading_zero = int_end - i > 1 && line[i] == b'0';
        if opens && closes && !leading_zero {
            let tok = &line[start..j];
            // An integer: both write it as it is, up to 15 digits (beyond, as
            // JavaScript rounds past 2^53), but for `-0`.
            let as_is = plain && tok != b"-0" && int_end - i <= 15;
            if !as_is
                && let Some(forms) = written_otherwise(tok)
                && visit(tok, forms.as_ref())
            {
                return true;
            }
        }
        i = j;
    }
    false
}

/// What may stand next to a number's characters in a word, a version or an id, and
/// never next to a number in JSON.
fn word_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'+' | b'-')
}

/// When a renderer may write the number `tok` (a JSON number's text) otherwise than
/// `tok`, as JavaScript or serde_json does, its written forms (`Some(None)`: not
/// known); `None` when both write it as it is. A decimal fraction of 15 significant
/// digits or fewer, not ending in 0, from 1e-5 (below it serde_json writes an
/// exponent; JavaScript from 1e-6) up, is written as it is by both, without asking.
fn written_otherwise(tok: &[u8]) -> Option<Option<[String; 2]>> {
    let t = tok.strip_prefix(b"-").unwrap_or(tok);
    if let Some(dot) = memchr::memchr(b'.', t)
        && !t.iter().any(|&b| b | 0x20 == b'e')
    {
        let (int, frac) = (&t[..dot], &t[dot + 1..]);
        let significant = if int == b"0" {
            let zeros = frac.iter().take_while(|&&b| b == b'0').count();
            (zeros <= 4).then_some(frac.len() - zeros)
        } else {
            Some(int.len() + frac.len())
        };
        if frac.last() != Some(&b'0') && significant.is_some_and(|d| d <= 15) {
            return None;
        }
    }
    let forms = written_forms(tok);
    match &forms {
        Some(fs) if fs.iter().all(|f| f.as_bytes() == tok) => None,
        _ => Some(forms),
    }
}

/// The forms in which the renderers write the JSON number `tok`: JavaScript's
/// (`JSON.stringify`, `String(n)`) and serde_json's (Codex's output objects: `2479.0`,
/// `1e-6`). `None` when serde_json does not take it (out of range: any form).
fn written_forms(tok: &[u8]) -> Option<[String; 2]> {
    let n: serde_json::Number = serde_json::from_slice(tok).ok()?;
    Some([crate::model::core::js::js_number(&n), n.to_string()])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pi's rules, the richest set: these tests' lines are Pi's.
    static PI: std::sync::LazyLock<&'static Rules> = std::sync::LazyLock::new(|| {
        crate::search::rules::named("pi").expect("Pi's rules in the agents' table")
    });

    fn cands(p: &Prefilter, lines: &[&str]) -> Vec<usize> {
        let mut buf = String::new();
        let mut starts = Vec::new();
        for l in lines {
            starts.push(buf.len());
            buf.push_str(l);
            buf.push('\n');
        }
        let mut out = Vec::new();
        p.scan(buf.as_bytes(), 0, &mut out);
        out.iter()
            .map(|&o| starts.iter().position(|&s| s as u64 == o).unwrap())
            .collect()
    }

    fn pf(lit: &str, icase: bool) -> Prefilter {
        Prefilter::new(&[vec![lit.to_string()]], *PI, icase, false)
    }

    #[test]
    fn fragments_avoid_escaped_and_structural_characters() {
        assert_eq!(pf("say \"hello world\"", false).fragments, ["hello world"]);
        assert!(["a", "b"].contains(&pf("a\\b", false).fragments[0].as_str()));
        // Every fragment of `fix it` overlaps a decoration of Pi's usage lines at an
        // edge (` input`, `tokens: `), which every assistant line has: `TODO` has none.
        assert_eq!(pf("TODO: fix it", false).fragments, ["TODO"]);
        assert_eq!(pf("  indented", false).fragments, ["indented"]);
        assert!(pf("{}", false).selects_everything());
    }

    #[test]
    fn decorations_bring_their_triggers_or_are_avoided() {
        // "hinking" is inside "[thinking]": usable, with the thinking lines. (Its `t`
        // would also end ` output`, a decoration of every usage line.)
        let p = pf("thinking", false);
        assert_eq!(p.fragments, ["hinking"]);
        let lines = [
            r#"{"type":"message","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hm"}]}}"#,
            r#"{"type":"message","message":{"role":"user","content":"nothing here"}}"#,
        ];
        assert_eq!(cands(&p, &lines), [0]);
        // Case-insensitively too.
        assert_eq!(cands(&pf("THINKING", true), &lines), [0]);
        // ": " can appear anywhere (indented JSON): never part of a fragment.
        assert_eq!(pf("x\": y", false).fragments, ["x"]);
    }

    /// A literal that meets a decoration only at an edge letter (`dzqxjv`, whose `d`
    /// could end Claude Code's `undefined`) is looked for without that letter, not
    /// with every line the decoration's triggers select: in every format, for every
    /// decoration that starts or ends with a letter.
    #[test]
    fn an_edge_letter_is_dropped_rather_than_a_kind_of_line_read() {
        let mut checked = 0;
        for r in crate::search::rules::all() {
            for d in r.decorations.iter().filter(|d| !d.when.is_empty()) {
                let (Some(first), Some(last)) = (d.text.chars().next(), d.text.chars().last())
                else {
                    continue;
                };
                let lits = [
                    last.is_alphabetic().then(|| format!("{last}zqxjvw")),
                    first.is_alphabetic().then(|| format!("zqxjvw{first}")),
                ];
                for lit in lits.into_iter().flatten() {
                    let c = choose(&lit, r, false).expect("a fragment");
                    assert_eq!(
                        (c.fragment.as_str(), c.triggers.as_slice()),
                        ("zqxjvw", &[][..]),
                        "{lit:?} in {} (decoration {:?})",
                        r.name,
                        d.text
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 20, "only {checked} literals");
    }

    #[test]
    fn odd_escapes_make_candidates() {
        let p = pf("hello", false);
        let lines = [
            r#"{"t":"h\u0065llo"}"#,
            r#"{"t":"h\/b"}"#,
            r#"{"t":"\u001b[1m bold"}"#,
            r#"{"t":"\\u0041 is text"}"#,
            r#"{"t":"\\\u0041"}"#,
            r#"{"t":"hello"}"#,
        ];
        assert_eq!(cands(&p, &lines), [0, 4, 5]);
        // `\/` spells a `/`, which only a fragment holding one needs.
        assert_eq!(cands(&pf("h/b", false), &lines), [0, 1, 4]);
    }

    #[test]
    fn numbers() {
        // A fragment without digits is preferred.
        assert!(pf("issue 1000", false).numbers.is_empty());
        let p = pf("1000", false);
        assert_eq!(p.numbers, [b"1000".to_vec()]);
        let lines = [
            r#"{"n":1e3}"#,
            r#"{"n":1000}"#,
            r#"{"n":12}"#,
            r#"{"n":1.50}"#,
            r#"{"n":-0}"#,
            r#"{"n":0.0000001}"#,
            r#"{"n":12345678901234567}"#,
            r#"{"n":-0.5}"#,
            r#"{"n":0.1e4}"#,
            r#"{"a":"{\"n\":[\n1E3]}"}"#,
            r#"{"id":"a1e3","v":"x-1e3","w":"1e3x"}"#,
        ];
        // Where a number written otherwise is written `1000` (by JavaScript; serde_json
        // writes `1000.0`), or the line holds it: not where it is written `1.5`, `0`,
        // `1e-7` or `12345678901234568`, nor where `1e3` is no number.
        assert_eq!(cands(&p, &lines), [0, 1, 8, 9]);
        // `-i`: the forms have a lower-case `e`.
        let p = pf("1E+21", true);
        assert_eq!(p.numbers, [b"1e+21".to_vec()]);
        assert_eq!(
            cands(&p, &[r#"{"n":1000000000000000000000}"#, r#"{"n":1e3}"#]),
            [0]
        );
        assert_eq!(
            cands(&pf("1E+21", false), &[r#"{"n":1000000000000000000000}"#]),
            Vec::<usize>::new()
        );
        // No one number holds a version, an address or a date: they are looked for
        // as text, in the lines that hold them.
        for text in ["1.6.0", "127.0.0.1", "2026-11-30", "1e5e5", "1-2", "+-1"] {
            let p = pf(text, false);
            assert!(p.numbers.is_empty(), "{text}");
            assert_eq!(p.fragments, [text]);
            let lines = [r#"{"n":1.50,"m":1e3}"#, &format!(r#"{{"t":"{text}"}}"#)];
            assert_eq!(cands(&p, &lines), [1], "{text}");
        }
    }

    /// Which numbers of a line are written otherwise: JSON tokens only (not the digits
    /// of an id, a version or a word), compared with the forms JavaScript and
    /// serde_json write them in.
    #[test]
    fn numbers_written_otherwise() {
        let odd = |line: &str| {
            let mut v = Vec::new();
            odd_number_tokens(line.as_bytes(), |t, _| {
                v.push(String::from_utf8(t.to_vec()).unwrap());
                false
            });
            v
        };
        assert_eq!(
            odd(r#"{"a":1.50,"b":1e3,"c":-0,"d":2479e0,"e":0.000001,"f":9007199254740993}"#),
            [
                "1.50",
                "1e3",
                "-0",
                "2479e0",
                "0.000001",
                "9007199254740993"
            ]
        );
        assert_eq!(
            odd(r#"{"a":1E3,"b":1e+3,"c":-1.0,"d":100000000000000000000000,"e":1e21}"#),
            ["1E3", "1e+3", "-1.0", "100000000000000000000000", "1e21"]
        );
        // As both write them (JavaScript's 17 digits of a sum, 2^53 - 1, the bounds of
        // fixed notation that both keep).
        let same = [
            r#"{"a":0.1,"b":-12,"c":0.30000000000000004,"d":9007199254740991}"#,
            r#"{"a":0.00001,"b":1e-7,"c":0.05419600000000001,"d":123456789012345}"#,
            r#"{"a":[0,-1,2.5],"b":18446744073709551615.5e-20}"#,
        ];
        assert_eq!(odd(same[0]), Vec::<String>::new());
        assert_eq!(odd(same[1]), Vec::<String>::new());
        assert_eq!(odd(same[2]), ["18446744073709551615.5e-20"]);
        // Not JSON numbers: ids, versions, words, base64, leading zeros. (An id of
        // digits and one `e`, `"6461e083"`, is a number as a string can be.)
        let none = r#"{"id":"6461e08a","x":"a-0f3","v":"1.10.2","w":"x1e5","y":"1e5e5","z":"007.50","b":"q+1e3/","c":"5.","d":"1e","e":"--0"}"#;
        assert_eq!(odd(none), Vec::<String>::new());
        // In a string the renderer parses as JSON (escaped whitespace before them), or
        // a string that is one number.
        assert_eq!(
            odd(r#"{"args":"{\"n\":[\n1.50,\t2e2, 3e3]}","s":"1.50"}"#),
            ["1.50", "2e2", "3e3", "1.50"]
        );
        // At the line's ends.
        assert_eq!(odd("1e3"), ["1e3"]);
        assert_eq!(odd("-0"), ["-0"]);
    }

    /// [`in_one_number`] against the numbers JavaScript writes: every substring of
    /// each is in one number, and a string is in one exactly when some such number
    /// holds it.
    #[test]
    fn what_lies_inside_one_number() {
        let numbers = [
            "0",
            "-0.5",
            "12.25",
            "1e+21",
            "1.5e-7",
            "-123456789",
            "9.99e+300",
            "-1e-7",
        ];
        let subs: std::collections::HashSet<String> = numbers
            .iter()
            .flat_map(|n| {
                (0..n.len()).flat_map(move |a| (a + 1..=n.len()).map(move |b| n[a..b].to_string()))
            })
            .collect();
        for t in &subs {
            let cs: Vec<char> = t.chars().collect();
            assert!(in_one_number(&cs), "{t}");
        }
        // Every string of up to four of a number's characters (`0`, `1`, `.`, `e`,
        // `+`, `-`): in one number exactly when it is a part of one made by the
        // grammar (a sign, digits, a fraction, an exponent with its sign).
        let one = regex::Regex::new(r"^-?[01]+(\.[01]+)?(e[+-]?[01]+)?$").unwrap();
        let alphabet = ['0', '1', '.', 'e', '+', '-'];
        let mut all: Vec<String> = vec![String::new()];
        for _ in 0..4 {
            all = all
                .iter()
                .flat_map(|s| alphabet.iter().map(move |c| format!("{s}{c}")))
                .collect();
            for t in &all {
                // Part of a number of that grammar: what can stand before it and
                // after it in one makes one.
                let part = ["", "-", "0", "0.", "0e", "0e+", "0e-"].iter().any(|pre| {
                    ["", "0", "+0"]
                        .iter()
                        .any(|post| one.is_match(&format!("{pre}{t}{post}")))
                });
                let cs: Vec<char> = t.chars().collect();
                assert_eq!(in_one_number(&cs), part, "{t:?}");
            }
        }
    }

    #[test]
    fn lacks_and_openers() {
        let p = pf("no content", false);
        let lines = [
            r#"{"type":"message","message":{"role":"user"}}"#,
            r#"{"type":"message","message":{"role":"user","content":[]}}"#,
            r#"{"type":"message","message":{"role":"user","content":"x"}}"#,
        ];
        assert_eq!(cands(&p, &lines), [0, 1]);
        let p = pf("recursion limit", false);
        let deep = format!("{{\"a\":{}1{}}}", "[".repeat(130), "]".repeat(130));
        assert_eq!(cands(&p, &[&deep, r#"{"a":[[1]]}"#]), [0]);
    }

    #[test]
    fn images_are_candidates_when_their_bytes_hold_a_literal() {
        let p = pf("zebra", true);
        let lines = [
            r#"{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}]}"#,
            r#"{"content":[{"type":"image","data" : "YSBaRUJSQSBoZXJl","mimeType":"image/png"}]}"#,
            r#"{"content":[{"type":"image","data":"AA\u0041A","mimeType":"image/png"}]}"#,
            r#"{"content":"an \"image\" quoted"}"#,
        ];
        assert_eq!(cands(&p, &lines), [1, 2]);
    }

    /// A format whose prompts (`"ref"`) show images held by lines of their own
    /// (`"kind":"blob"`), as [`Rules::held`] describes.
    static HELD: Rules = Rules {
        name: "held-test",
        decorations: &[],
        derived_numbers: &[],
        derived_ids: false,
        always: &[],
        binary_content: &[],
        line_content: None,
        side_files: None,
        parent_text: false,
        spilled: None,
        no_entries_before: None,
        hit_paths: None,
        alone: None,
        held: Some(crate::model::core::grep::Held {
            names: &[Trigger::Matches(r#""ref""#)],
            holds: &[Trigger::Matches(r#""kind":"blob""#)],
        }),
        shown: None,
    };

    fn blob(id: &str, bytes: &[u8]) -> String {
        format!(
            r#"{{"kind":"blob","id":"{id}","mime":"image/png","data":"{}"}}"#,
            crate::model::core::base64::encode(bytes)
        )
    }

    fn prompt(text: &str, id: &str) -> String {
        format!(r#"{{"kind":"prompt","text":"{text}","ref":"{id}"}}"#)
    }

    /// The candidates of `blocks` (each whole lines, scanned one after the other as a
    /// file's blocks are) and what the held scan found, as line numbers over all.
    fn held_scan(p: &Prefilter, blocks: &[&[String]]) -> (Vec<usize>, bool, Vec<usize>) {
        let mut starts = Vec::new();
        let mut out = Vec::new();
        let mut hs = HeldScan::default();
        let mut base = 0u64;
        for lines in blocks {
            let mut buf = String::new();
            for l in *lines {
                starts.push(base + buf.len() as u64);
                buf.push_str(l);
                buf.push('\n');
            }
            p.scan_in(buf.as_bytes(), base, &mut out, None, Some(&mut hs));
            base += buf.len() as u64;
        }
        let no = |o: u64| starts.iter().position(|&s| s == o).unwrap();
        let waiting = hs.waiting.iter().map(|&(o, _)| no(o)).collect();
        (out.into_iter().map(no).collect(), hs.may, waiting)
    }

    fn pf_held(lit: &str) -> Prefilter {
        Prefilter::new(&[vec![lit.to_string()]], &HELD, false, false)
    }

    #[test]
    fn a_prompt_naming_held_content_waits_for_a_holding_line_that_may_match() {
        let png = b"\x89PNG\r\n\x1a\n one quizzlebrot here \x00\x01";
        let with = blob("a", png);
        let without = blob("b", b"\x89PNG\r\n\x1a\n nothing to see \x00");
        let p1 = prompt("look", "a");
        let p2 = prompt("again", "a");
        let other = prompt("and this", "b");
        let plain = r#"{"kind":"prompt","text":"no image"}"#.to_string();
        let p = pf_held("quizzlebrot");
        // The asset before the prompts, or after them, in one block or another: both
        // prompts sharing it wait, and the scan says an asset may match.
        for blocks in [
            vec![vec![with.clone(), p1.clone(), p2.clone(), plain.clone()]],
            vec![vec![p1.clone(), p2.clone(), plain.clone(), with.clone()]],
            vec![
                vec![p1.clone(), p2.clone()],
                vec![plain.clone()],
                vec![with.clone()],
            ],
        ] {
            let b: Vec<&[String]> = blocks.iter().map(Vec::as_slice).collect();
            let (cands, may, waiting) = held_scan(&p, &b);
            assert!(may, "{blocks:?}");
            assert!(cands.is_empty(), "{cands:?}");
            let at = |l: &String| blocks.concat().iter().position(|x| x == l).unwrap();
            assert_eq!(waiting, [at(&p1), at(&p2)], "{blocks:?}");
        }
        // No asset holds it: nothing may match, the prompts wait for nothing.
        let (cands, may, waiting) = held_scan(&p, &[&[without.clone(), other.clone()]]);
        assert!(!may && cands.is_empty());
        assert_eq!(waiting, [1]);
        // A prompt whose own text holds it is a candidate by itself.
        let (cands, may, waiting) = held_scan(
            &p,
            &[&[without.clone(), prompt("a quizzlebrot", "b"), other.clone()]],
        );
        assert_eq!((cands, may, waiting), (vec![1], false, vec![2]));
        // A holding line's own strings show in the prompt (its MIME type).
        let (_, may, _) = held_scan(&pf_held("image/png"), &[&[without.clone(), other.clone()]]);
        assert!(may);
        // Without a held scan (a caller that cannot wait), every prompt is a candidate.
        let mut out = Vec::new();
        let buf = format!("{without}\n{other}\n");
        p.scan_in(buf.as_bytes(), 0, &mut out, None, None);
        assert_eq!(out, [without.len() as u64 + 1]);
        // `-c` lists every image: every prompt is a candidate, none waits.
        let every = Prefilter::new(&[vec!["quizzlebrot".into()]], &HELD, false, true);
        let (cands, may, waiting) = held_scan(&every, &[&[without.clone(), other.clone()]]);
        assert_eq!((cands, may, waiting), (vec![1], false, vec![]));
    }

    #[test]
    fn a_holding_line_that_cannot_be_vouched_for_may_match() {
        let p = pf_held("quizzlebrot");
        let other = prompt("and this", "b");
        // An escape in its data: not decoded, it may hold anything.
        let escaped = r#"{"kind":"blob","id":"b","data":"iVBOR\u0077w0KGgo"}"#.to_string();
        let (_, may, waiting) = held_scan(&p, &[&[escaped, other.clone()]]);
        assert!(may);
        assert_eq!(waiting, [1]);
        let slashed = r#"{"kind":"blob","id":"b","data":"iVBOR\/w0KGgo"}"#.to_string();
        assert!(held_scan(&p, &[&[slashed, other.clone()]]).1);
        // Damaged: its data does not end.
        let cut =
            r#"{"kind":"blob","id":"b","data":"iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCA"#.to_string();
        assert!(held_scan(&p, &[&[cut, other.clone()]]).1);
        // A key spelled with escapes: any line may then be a holding one.
        let spelled = r#"{"k\u0069nd":"blob","id":"b","data":"iVBORw0KGgo="}"#.to_string();
        let (cands, may, _) = held_scan(&p, &[&[spelled, other.clone()]]);
        assert!(may);
        assert_eq!(cands, [0]);
        // Whole and plain, without the literal: nothing may match.
        let fine = blob("b", b"\x89PNG\r\n\x1a\n nothing \x00");
        assert!(!held_scan(&p, &[&[fine, other]]).1);
    }

    #[test]
    fn overlap() {
        let c = |s: &str| s.chars().collect::<Vec<_>>();
        assert!(overlaps(&c("error"), &c("[error] "), false));
        assert!(!overlaps(&c("error handling"), &c("[error] "), false));
        assert!(overlaps(&c("] x"), &c("[error] "), false));
        assert!(overlaps(&c("ERROR"), &c("[error] "), true));
        assert!(!overlaps(&c("ERROR"), &c("[error] "), false));
        assert!(overlaps(&c("tokens"), &c(" tokens before]"), false));
        assert!(overlaps(&c("x tok"), &c(" tokens before]"), false));
    }

    /// [`choose`] by the definition: every fragment tested against every decoration
    /// with [`overlaps`] (as it was done before [`Overlaps`]).
    fn choose_by_definition(lit: &str, rules: &Rules, icase: bool) -> Option<Choice> {
        let cs: Vec<char> = lit.chars().collect();
        let decos: Vec<(Vec<char>, &[Trigger])> = rules
            .decorations
            .iter()
            .map(|d| (d.text.chars().collect(), d.when))
            .collect();
        let mut best: Option<Choice> = None;
        for s in 0..cs.len() {
            if risky(cs[s]) || cs[s] == ' ' {
                continue;
            }
            'fragment: for e in s + 1..=cs.len().min(s + MAX_FRAGMENT) {
                if risky(cs[e - 1]) {
                    break;
                }
                let f = &cs[s..e];
                let mut triggers: Vec<Trigger> = Vec::new();
                for (text, when) in &decos {
                    if overlaps(f, text, icase) {
                        if when.is_empty() {
                            continue 'fragment;
                        }
                        triggers.extend_from_slice(when);
                    }
                }
                let hex = |c: &char| {
                    c.is_ascii_digit()
                        || matches!(c, 'a'..='f')
                        || (icase && matches!(c, 'A'..='F'))
                };
                if rules.derived_ids && f.iter().all(hex) {
                    continue;
                }
                let numbers = number_sensitive(f);
                if numbers {
                    triggers.extend_from_slice(rules.derived_numbers);
                }
                triggers.sort_by_key(|t| format!("{t:?}"));
                triggers.dedup();
                let full_pass =
                    numbers || triggers.iter().any(|t| !matches!(t, Trigger::Matches(_)));
                let score = score(f.len(), full_pass, triggers.len());
                if best.as_ref().is_none_or(|b| score > b.score) {
                    best = Some(Choice {
                        fragment: f.iter().collect(),
                        triggers,
                        numbers,
                        score,
                    });
                }
            }
        }
        best
    }

    /// [`Overlaps`] answers as [`overlaps`] for every fragment of literals made of
    /// pieces of every format's decorations (their starts, ends and middles, cases
    /// changed), and [`choose`] picks what the definition picks.
    #[test]
    fn the_overlap_table_agrees_with_the_definition() {
        let all = crate::search::rules::all();
        let mut lits: Vec<String> = vec![
            "error".into(),
            "] x".into(),
            "x tok".into(),
            "tokens before the [error] (no content)".into(),
            "ſK\u{212A}é É ßss".into(),
            "a".repeat(70),
            "The date has changed. Today's date is now 2026".into(),
            "turn took 1.5 s, 3 messages".into(),
            "[image 1: image/png, 12 bytes → image-1.png]".into(),
        ];
        for r in all {
            let ds = r.decorations;
            for k in (0..ds.len()).step_by(9) {
                let (a, b): (Vec<char>, Vec<char>) = (
                    ds[k].text.chars().collect(),
                    ds[(k + 4) % ds.len()].text.chars().collect(),
                );
                let tail: String = a[a.len().saturating_sub(4)..].iter().collect();
                let head: String = b[..b.len().min(5)].iter().collect();
                let mid: String = a[a.len() / 3..(a.len() / 3 + 7).min(a.len())]
                    .iter()
                    .collect();
                lits.push(format!("{tail}x{head}"));
                lits.push(format!("q{}{}", mid.to_uppercase(), k % 10));
            }
        }
        let mut fragments = 0;
        for r in all {
            for lit in &lits {
                for icase in [false, true] {
                    let cs: Vec<char> = lit.chars().collect();
                    for d in r.decorations {
                        let text: Vec<char> = d.text.chars().collect();
                        let o = Overlaps::new(&cs, &text, icase);
                        for s in 0..cs.len() {
                            for e in s + 1..=cs.len().min(s + MAX_FRAGMENT) {
                                assert_eq!(
                                    o.at(s, e),
                                    overlaps(&cs[s..e], &text, icase),
                                    "{:?} against {:?} (-i {icase})",
                                    &lit[..],
                                    d.text
                                );
                                fragments += 1;
                            }
                        }
                    }
                    let (a, b) = (choose(lit, r, icase), choose_by_definition(lit, r, icase));
                    assert_eq!(format!("{a:?}"), format!("{b:?}"), "{lit:?} (-i {icase})");
                }
            }
        }
        assert!(fragments > 100_000, "only {fragments} fragments compared");
    }

    /// Whether `line` holds an escape `JSON.stringify` would not write.
    fn has_odd_escape(line: &[u8]) -> bool {
        memmem::find_iter(line, b"\\u")
            .chain(memmem::find_iter(line, b"\\/"))
            .any(|h| odd_escape(line, h))
    }

    /// Marks, in the characters of one rendered line, the occurrences of `d`: a part
    /// of a decoration that follows a newline is marked only at the line's start, a
    /// part that precedes one only at its end.
    fn mark(line: &[char], d: &str, covered: &mut [bool]) {
        let parts: Vec<&str> = d.split('\n').collect();
        for (k, part) in parts.iter().enumerate() {
            let p: Vec<char> = part.chars().collect();
            if p.is_empty() || p.len() > line.len() {
                continue;
            }
            let at_start = k > 0;
            let at_end = k + 1 < parts.len();
            for s in 0..=line.len() - p.len() {
                if line[s..s + p.len()] != p[..]
                    || (at_start && s != 0)
                    || (at_end && s + p.len() != line.len())
                {
                    continue;
                }
                covered[s..s + p.len()].iter_mut().for_each(|c| *c = true);
            }
        }
    }

    /// The pieces of `rendered` that the prefilter relies on finding in `raw`, and
    /// are not there: every run of fragment characters not covered by a decoration
    /// whose trigger holds on `raw` must be in `raw` (a piece that can lie inside one
    /// number, [`in_one_number`], may instead come from a number the line holds
    /// written otherwise, inside a form the renderers write it in, or from a number
    /// the format derives there). Empty when the rules explain the rendering.
    fn unexplained(rendered: &str, raw: &[u8], rules: &Rules) -> Vec<String> {
        unexplained_with(rendered, raw, b"", rules)
    }

    /// [`unexplained`], where pieces may also come from `also` (the parent's line,
    /// for a format whose lines take text from their parent's).
    fn unexplained_with(rendered: &str, raw: &[u8], also: &[u8], rules: &Rules) -> Vec<String> {
        let raw_text = String::from_utf8_lossy(raw);
        let also_text = String::from_utf8_lossy(also);
        let holds = |ts: &[Trigger]| ts.iter().any(|t| t.holds(raw));
        let decos: Vec<&str> = rules
            .decorations
            .iter()
            .filter(|d| d.when.is_empty() || holds(d.when))
            .map(|d| d.text)
            .collect();
        let derived = holds(rules.derived_numbers);
        let mut bad = Vec::new();
        for line in rendered.split('\n') {
            let cs: Vec<char> = line.chars().collect();
            let mut covered = vec![false; cs.len()];
            for d in &decos {
                mark(&cs, d, &mut covered);
            }
            let mut piece = String::new();
            for (k, &c) in cs.iter().enumerate() {
                let ends = risky(c) || covered[k];
                let leading_space = piece.is_empty() && c == ' ';
                if !ends && !leading_space {
                    piece.push(c);
                }
                if ends || k + 1 == cs.len() {
                    let derived_id = rules.derived_ids
                        && piece
                            .chars()
                            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c));
                    let explained = derived_id
                        || raw_text.contains(piece.as_str())
                        || also_text.contains(piece.as_str())
                        || (number_sensitive(&piece.chars().collect::<Vec<_>>())
                            && (derived || odd_number_holding(raw, &[piece.as_bytes().to_vec()])));
                    if !piece.is_empty() && !explained {
                        bad.push(piece.clone());
                    }
                    piece.clear();
                }
            }
        }
        bad
    }

    /// Every session file under `tests/fixtures` (not a subagent's transcript, which
    /// its session indexes), and the bundled example.
    fn fixture_files() -> Vec<std::path::PathBuf> {
        fn walk(d: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            let Ok(rd) = std::fs::read_dir(d) else { return };
            for e in rd {
                let p = e.unwrap().path();
                if p.is_dir() {
                    if !p.ends_with("subagents") {
                        walk(&p, out);
                    }
                } else if p.to_string_lossy().ends_with(".jsonl")
                    || p.to_string_lossy().ends_with(".jsonl.zst")
                {
                    out.push(p);
                } else if crate::model::sessions_dir::is_listed_root(&p) {
                    // A database of sessions: each of its sessions.
                    if let Some((_, l, _)) = crate::model::sessions_dir::catalog_of(&p, None)
                        && let Ok(cat) = l.scan()
                    {
                        out.extend(cat.projects.into_values().flatten().map(|s| s.path));
                    }
                }
            }
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut out = vec![root.join("examples/demo.jsonl")];
        walk(&root.join("tests/fixtures"), &mut out);
        out.sort();
        out
    }

    /// What the explanation test found for one format.
    #[derive(Debug, Default)]
    struct Checked {
        entries: usize,
        /// Entries of other files of their session (subagents, other pages).
        sides: usize,
        /// Entries the rules always select (not checked).
        always: usize,
        /// Entries that may show binary content other lines hold.
        naming: usize,
    }

    /// Every entry of every committed fixture whose lines the prefilter reads, for
    /// every agent: the rendered KIND file (as the mount serves it) is explained by the
    /// line, its parent's line where the format takes text from it (a Claude Code tool
    /// result's tool name), and the format's rules. This is the test that fails when a
    /// renderer learns a new decoration its rules lack; a new agent's fixtures are
    /// checked as soon as its rules are in the agents' table.
    #[test]
    fn every_agents_rules_explain_every_fixture_entry() {
        use crate::model::core::content::entry_content;
        use crate::model::core::session::Session;
        let mut by_format: std::collections::BTreeMap<&str, Checked> = Default::default();
        let mut failures = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for f in fixture_files() {
            let Ok(s) = Session::open(&f) else { continue };
            // A session of a database (`DB/ID`) has no bytes of its own to read.
            let head = std::fs::read(&f).unwrap_or_default();
            let Some(rules) = crate::search::rules::known(&f).or_else(|| rules_of(&f, &head))
            else {
                continue;
            };
            let c = by_format.entry(rules.name).or_default();
            // A line that is no entry of its own (a Qwen Code fragment) shows in its
            // owner's files: the owner is explained by both lines.
            let mut owned: std::collections::HashMap<u32, Vec<u8>> = Default::default();
            let starts: std::collections::HashSet<u64> = s
                .entries()
                .iter()
                .filter(|e| e.file == 0)
                .map(|e| e.offset)
                .collect();
            // The lines holding binary content other lines show (their strings may
            // show in the naming lines' entries).
            let held: Vec<u8> = match rules.held {
                Some(h) => head
                    .split(|&b| b == b'\n')
                    .filter(|l| h.holds.iter().any(|t| t.holds(l)))
                    .flat_map(|l| l.iter().copied().chain([b'\n']))
                    .collect(),
                None => Vec::new(),
            };
            let mut off = 0u64;
            for line in head.split_inclusive(|&b| b == b'\n') {
                if !starts.contains(&off)
                    && let Some(o) = s.line_owner(0, off)
                {
                    let v = owned.entry(o).or_default();
                    v.push(b'\n');
                    v.extend_from_slice(line.trim_ascii_end());
                }
                off += line.len() as u64;
            }
            for i in 0..s.entries().len() as u32 {
                let e = s.entry(i);
                if !e.is_node() {
                    continue;
                }
                // An entry several sessions show (a Codex base page) is checked once.
                let file = s.entry_file(i).unwrap_or_default();
                if !seen.insert((std::fs::canonicalize(&file).unwrap_or(file), e.offset)) {
                    continue;
                }
                let mut raw = s.entry_bytes(i).unwrap();
                if let Some(more) = owned.get(&i) {
                    raw.extend_from_slice(more);
                }
                if has_odd_escape(&raw) || rules.always.iter().any(|t| t.holds(&raw)) {
                    c.always += 1;
                    continue;
                }
                let mut parent = match s.parent(i) {
                    Some(p) if rules.parent_text => s.entry_bytes(p).unwrap(),
                    _ => Vec::new(),
                };
                if rules
                    .held
                    .is_some_and(|h| h.names.iter().any(|t| t.holds(&raw)))
                {
                    c.naming += 1;
                    parent.extend_from_slice(&held);
                }
                let content = entry_content(&s, i).unwrap();
                let text = String::from_utf8(content.text).unwrap();
                let bad = unexplained_with(&text, &raw, &parent, rules);
                if !bad.is_empty() {
                    failures.push(format!("{}:{}: {bad:?}", f.display(), e.line));
                }
                c.entries += 1;
                c.sides += usize::from(!s.in_main_file(i));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        let get = |n: &str| {
            by_format
                .get(n)
                .map_or((0, 0, 0), |c| (c.entries, c.sides, c.always))
        };
        // The formats whose fixtures are many enough to say the test ran.
        let (pi, _, _) = get("pi");
        assert!(pi > 3000, "only {pi} Pi entries checked: {by_format:?}");
        let (claude, sides, _) = get("claude");
        assert!(claude > 900, "only {claude} Claude Code entries checked");
        assert!(sides > 10, "only {sides} subagent entries checked");
        let (gemini, _, _) = get("gemini-cli");
        assert!(gemini > 150, "only {gemini} Gemini CLI entries checked");
        let (qwen, qwen_sides, _) = get("qwen-code");
        assert!(qwen > 500, "only {qwen} Qwen Code entries checked");
        assert!(
            qwen_sides >= 5,
            "only {qwen_sides} Qwen Code subagent entries checked"
        );
        let (opencode, _, always) = get("opencode");
        assert!(opencode > 400, "only {opencode} opencode entries checked");
        assert_eq!(always, 0, "opencode entries always selected");
        let (codex, _, always) = get("codex");
        assert!(codex > 200, "only {codex} Codex entries checked");
        assert!(
            always < codex / 10,
            "{always} of {codex} Codex entries always selected"
        );
        let (copilot, _, always) = get("copilot");
        assert!(copilot > 300, "only {copilot} Copilot CLI entries checked");
        let naming = by_format.get("copilot").map_or(0, |c| c.naming);
        assert!(naming > 0, "no Copilot CLI prompt with an image checked");
        assert!(
            always < copilot / 10,
            "{always} of {copilot} Copilot CLI entries always selected"
        );
    }

    /// The rules of a file from its first lines, as the search reads them.
    fn rules_of(f: &std::path::Path, bytes: &[u8]) -> Option<&'static Rules> {
        let _ = f;
        let end = memchr::memrchr(b'\n', &bytes[..bytes.len().min(1 << 20)])? + 1;
        crate::search::rules::detect(&bytes[..end])
    }

    #[test]
    fn the_explanation_test_can_fail() {
        let raw =
            br#"{"type":"message","message":{"role":"toolResult","content":"x","isError":true}}"#;
        assert!(unexplained("[error]\nx\n", raw, *PI).is_empty());
        let bare = Rules {
            name: "bare",
            decorations: &[],
            derived_numbers: &[],
            always: &[],
            binary_content: &[],
            line_content: None,
            derived_ids: false,
            side_files: None,
            parent_text: false,
            spilled: None,
            no_entries_before: None,
            hit_paths: None,
            alone: None,
            held: None,
            shown: None,
        };
        assert_eq!(unexplained("[error]\nx\n", raw, &bare), ["error"]);
        assert_eq!(unexplained("1000\n", br#"{"n":999}"#, &bare), ["1000"]);
        // A number next to text is not explained by a number written otherwise.
        assert_eq!(
            unexplained("abc12\n", br#"{"t":"abc","n":1.20}"#, &bare),
            ["abc12"]
        );
        assert!(unexplained("1000\n", br#"{"n":1e3}"#, &bare).is_empty());
    }
}
