//! Which blocks can hold a match: a boolean query over trigrams.
//!
//! The query never decides that a line matches; it only rules out the blocks that
//! cannot hold one of the lines the exact path would select (see the module docs of
//! [`super`]). It is made of:
//!
//! * **Literals** ([`Lit`]): a string that must occur in a line's raw bytes, each
//!   character with the ways it can be written: itself, or with `-i` every character
//!   of its simple case folding (`k`, `K`, and the Kelvin sign `K`). A block can hold
//!   the literal only if, for every character position, it holds one of the trigrams
//!   an occurrence may start there with (the first three bytes of the variants of
//!   that character and the ones after it). That is an AND over positions of small
//!   ORs; ASCII letters fold onto one trigram, as the index folds them.
//! * **Regular expressions** (the format's triggers, [`regex`]): their required
//!   literals ([`crate::search::pattern`]'s analysis: sets of literals, one of each set
//!   in every match), an AND over sets of ORs over literals.
//!
//! A literal shorter than three bytes (in some variant) says nothing: it is
//! [`Q::All`]. The query is evaluated over posting lists ([`eval`]).

use regex_syntax::hir::{ClassUnicode, ClassUnicodeRange};
use std::io;

use super::trigram::{FOLDED_ONTO_ASCII, RUN_MIN, tri};

/// A query over the trigrams of a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Q {
    /// Every block.
    All,
    /// No block.
    None,
    /// The blocks holding this trigram.
    Tri(u32),
    And(Vec<Q>),
    Or(Vec<Q>),
}

impl Q {
    /// The conjunction of `qs`, simplified.
    pub fn and(qs: impl IntoIterator<Item = Q>) -> Q {
        let mut out: Vec<Q> = Vec::new();
        for q in qs {
            match q {
                Q::All => {}
                Q::None => return Q::None,
                Q::And(v) => out.extend(v),
                q => out.push(q),
            }
        }
        out.sort_by(order);
        out.dedup();
        match out.len() {
            0 => Q::All,
            1 => out.pop().expect("one"),
            _ => Q::And(out),
        }
    }

    /// The disjunction of `qs`, simplified.
    pub fn or(qs: impl IntoIterator<Item = Q>) -> Q {
        let mut out: Vec<Q> = Vec::new();
        for q in qs {
            match q {
                Q::None => {}
                Q::All => return Q::All,
                Q::Or(v) => out.extend(v),
                q => out.push(q),
            }
        }
        out.sort_by(order);
        out.dedup();
        match out.len() {
            0 => Q::None,
            1 => out.pop().expect("one"),
            _ => Q::Or(out),
        }
    }

    /// Whether a block with exactly the trigrams `have` (sorted) satisfies the query:
    /// the definition [`eval`] computes over posting lists.
    pub fn holds(&self, have: &[u32]) -> bool {
        match self {
            Q::All => true,
            Q::None => false,
            Q::Tri(t) => have.binary_search(t).is_ok(),
            Q::And(v) => v.iter().all(|q| q.holds(have)),
            Q::Or(v) => v.iter().any(|q| q.holds(have)),
        }
    }
}

/// Trigrams first (in order), then the rest: a canonical order for deduplication.
fn order(a: &Q, b: &Q) -> std::cmp::Ordering {
    fn rank(q: &Q) -> (u8, u32) {
        match q {
            Q::Tri(t) => (0, *t),
            Q::And(_) => (1, 0),
            Q::Or(_) => (2, 0),
            Q::All => (3, 0),
            Q::None => (4, 0),
        }
    }
    rank(a)
        .cmp(&rank(b))
        .then_with(|| format!("{a:?}").cmp(&format!("{b:?}")))
}

/// The most trigrams one character position may start with before the position is
/// given up (it then constrains nothing).
const MAX_WINDOWS: usize = 64;

/// A literal, as the bytes each of its characters may be written with.
#[derive(Debug, Clone)]
pub struct Lit {
    chars: Vec<Vec<Vec<u8>>>,
}

impl Lit {
    /// `s`, each character as itself, or with `icase` as any character of its simple
    /// case folding (as the `regex` crate's `(?i)` matches it).
    pub fn new(s: &str, icase: bool) -> Lit {
        let chars = s
            .chars()
            .map(|c| {
                let mut v: Vec<Vec<u8>> = vec![c.to_string().into_bytes()];
                if icase {
                    let mut cls = ClassUnicode::new([ClassUnicodeRange::new(c, c)]);
                    cls.case_fold_simple();
                    for r in cls.iter() {
                        for ch in r.start()..=r.end() {
                            v.push(ch.to_string().into_bytes());
                        }
                    }
                }
                for b in &mut v {
                    b.make_ascii_lowercase();
                }
                v.sort();
                v.dedup();
                v
            })
            .collect();
        Lit { chars }
    }

    /// The trigrams an occurrence may hold at its character position `i` (folded):
    /// `None` when there are too many to be worth asking, or the bytes from `i` to the
    /// end are fewer than three in some variant.
    fn windows(&self, i: usize) -> Option<Vec<u32>> {
        let mut out = Vec::new();
        // (next character, bytes so far)
        let mut stack: Vec<(usize, Vec<u8>)> = vec![(i, Vec::new())];
        while let Some((j, pre)) = stack.pop() {
            if pre.len() >= 3 {
                out.push(tri(pre[0], pre[1], pre[2]));
                if out.len() > MAX_WINDOWS * 4 {
                    return None;
                }
                continue;
            }
            let vs = self.chars.get(j)?;
            for v in vs {
                let mut p = pre.clone();
                p.extend_from_slice(v);
                stack.push((j + 1, p));
            }
        }
        out.sort_unstable();
        out.dedup();
        (out.len() <= MAX_WINDOWS).then_some(out)
    }

    /// The blocks that may hold the literal.
    pub fn query(&self) -> Q {
        Q::and((0..self.chars.len()).map(|i| match self.windows(i) {
            Some(ts) => Q::or(ts.into_iter().map(Q::Tri)),
            None => Q::All,
        }))
    }

    /// Whether every occurrence of the literal in binary content lies in a run whose
    /// trigrams are indexed ([`super::trigram`]): every variant of every character
    /// is printable ASCII or one of [`FOLDED_ONTO_ASCII`], and the shortest way of
    /// writing it is at least [`RUN_MIN`] bytes.
    pub fn run_safe(&self) -> bool {
        let unit = |v: &Vec<u8>| {
            (v.len() == 1 && (0x20..=0x7e).contains(&v[0]))
                || FOLDED_ONTO_ASCII.iter().any(|s| s == v)
        };
        let shortest: usize = self
            .chars
            .iter()
            .map(|vs| vs.iter().map(Vec::len).min().unwrap_or(0))
            .sum();
        shortest >= RUN_MIN && self.chars.iter().all(|vs| vs.iter().all(unit))
    }
}

/// The blocks that may hold a line matching the regular expression `re` (`regex`
/// crate syntax, case-sensitive unless it says otherwise): [`Q::All`] when it cannot
/// be parsed or requires no literal.
pub fn regex(re: &str) -> Q {
    match regex_syntax::ParserBuilder::new().build().parse(re) {
        Ok(hir) => required(&crate::search::pattern::required_literals(&hir), false),
        Err(_) => Q::All,
    }
}

/// The blocks that may hold, for every set of `sets`, one of its literals.
pub fn required(sets: &[Vec<String>], icase: bool) -> Q {
    Q::and(
        sets.iter()
            .map(|set| Q::or(set.iter().map(|l| Lit::new(l, icase).query()))),
    )
}

/// A set of blocks (their numbers), as a query's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Units {
    All,
    /// Sorted, each once.
    Some(Vec<u32>),
}

/// Where [`eval`] gets posting lists: the blocks holding a trigram, sorted.
pub trait Lists {
    fn list(&mut self, t: u32) -> io::Result<Vec<u32>>;
}

fn intersect(a: &[u32], b: &[u32]) -> Vec<u32> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::with_capacity(a.len().min(b.len()));
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out
}

fn union(a: &[u32], b: &[u32]) -> Vec<u32> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::with_capacity(a.len() + b.len());
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// The blocks satisfying `q`.
pub fn eval(q: &Q, lists: &mut dyn Lists) -> io::Result<Units> {
    Ok(match q {
        Q::All => Units::All,
        Q::None => Units::Some(Vec::new()),
        Q::Tri(t) => Units::Some(lists.list(*t)?),
        Q::And(v) => {
            let mut acc: Option<Vec<u32>> = None;
            for sub in v {
                if acc.as_ref().is_some_and(Vec::is_empty) {
                    break;
                }
                match eval(sub, lists)? {
                    Units::All => {}
                    Units::Some(s) => {
                        acc = Some(match acc {
                            None => s,
                            Some(a) => intersect(&a, &s),
                        })
                    }
                }
            }
            acc.map_or(Units::All, Units::Some)
        }
        Q::Or(v) => {
            let mut acc: Vec<u32> = Vec::new();
            for sub in v {
                match eval(sub, lists)? {
                    Units::All => return Ok(Units::All),
                    Units::Some(s) => acc = union(&acc, &s),
                }
            }
            Units::Some(acc)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::super::trigram::Extractor;
    use super::*;
    use std::collections::HashMap;

    fn trigrams(s: &[u8]) -> Vec<u32> {
        let mut e = Extractor::new();
        e.text(s);
        e.take()
    }

    #[test]
    fn simplification() {
        assert_eq!(Q::and([Q::All, Q::Tri(1)]), Q::Tri(1));
        assert_eq!(Q::and([Q::None, Q::Tri(1)]), Q::None);
        assert_eq!(Q::or([Q::All, Q::Tri(1)]), Q::All);
        assert_eq!(Q::or([Q::None, Q::Tri(1), Q::Tri(1)]), Q::Tri(1));
        assert_eq!(Q::and([]), Q::All);
        assert_eq!(Q::or([]), Q::None);
    }

    #[test]
    fn literals() {
        assert_eq!(Lit::new("ab", false).query(), Q::All);
        let q = Lit::new("Hello", false).query();
        assert!(q.holds(&trigrams(b"say hello there")));
        assert!(q.holds(&trigrams(b"HELLO")));
        assert!(!q.holds(&trigrams(b"hell o")));
        // -i with the Kelvin sign: both spellings.
        let q = Lit::new("kit", true).query();
        assert!(q.holds(&trigrams(b"KIT")));
        assert!(q.holds(&trigrams("\u{212a}it".as_bytes())));
        assert!(!q.holds(&trigrams(b"kiss")));
        // Non-ASCII letters fold through their variants.
        let q = Lit::new("été", true).query();
        assert!(q.holds(&trigrams("ÉTÉ".as_bytes())));
        assert!(q.holds(&trigrams("été".as_bytes())));
        assert!(
            !Lit::new("été", false)
                .query()
                .holds(&trigrams("ÉTÉ".as_bytes()))
        );
    }

    #[test]
    fn run_safety() {
        assert!(Lit::new("abcd", false).run_safe());
        assert!(!Lit::new("abc", false).run_safe());
        assert!(Lit::new("desk", true).run_safe());
        assert!(!Lit::new("café", false).run_safe());
        assert!(!Lit::new("a\tbcd", false).run_safe());
    }

    #[test]
    fn regexes() {
        let q = regex(r#""stopReason"[ \t\r]*:[ \t\r]*"(?:error|aborted)""#);
        assert!(q.holds(&trigrams(br#"{"stopReason": "error"}"#)));
        assert!(!q.holds(&trigrams(br#"{"stopReason":"stop"}"#)));
        assert_eq!(regex(r"\d+"), Q::All);
        assert_eq!(regex(r"("), Q::All);
    }

    struct Map(HashMap<u32, Vec<u32>>);
    impl Lists for Map {
        fn list(&mut self, t: u32) -> io::Result<Vec<u32>> {
            Ok(self.0.get(&t).cloned().unwrap_or_default())
        }
    }

    #[test]
    fn evaluation_agrees_with_the_definition() {
        let blocks: Vec<&[u8]> = vec![b"hello world", b"say HELLO", b"kit and kin", b"nothing"];
        let mut map = HashMap::new();
        let sets: Vec<Vec<u32>> = blocks.iter().map(|b| trigrams(b)).collect();
        for (k, s) in sets.iter().enumerate() {
            for &t in s {
                map.entry(t).or_insert_with(Vec::new).push(k as u32);
            }
        }
        let mut lists = Map(map);
        for q in [
            Lit::new("hello", false).query(),
            Lit::new("kin", true).query(),
            Q::or([
                Lit::new("world", false).query(),
                Lit::new("kit", false).query(),
            ]),
            Q::and([
                Lit::new("hello", false).query(),
                Lit::new("say", false).query(),
            ]),
            Q::None,
        ] {
            let want: Vec<u32> = (0..blocks.len() as u32)
                .filter(|&k| q.holds(&sets[k as usize]))
                .collect();
            assert_eq!(eval(&q, &mut lists).unwrap(), Units::Some(want), "{q:?}");
        }
        assert_eq!(eval(&Q::All, &mut lists).unwrap(), Units::All);
    }
}
