//! Patterns as GNU grep reads them, compiled with the `regex` crate.
//!
//! `sessionfs grep` takes grep's pattern syntaxes: basic regular expressions by
//! default (`-G`), extended ones with `-E`, fixed strings with `-F`. A pattern holding
//! newlines is one pattern per line, any of which may match, as in grep. Each is
//! translated into the syntax of the [`regex`] crate, which then does all matching:
//! on the rendered lines of content files, where it decides what is printed, and (as
//! literals it requires) on the raw session lines, where it decides what is rendered.
//!
//! What is translated, and how it differs from grep in a UTF-8 locale:
//!
//! * BRE: `\(` `\)` groups, `\{m,n\}` intervals, `*`, and GNU's `\|`, `\+`, `\?`;
//!   `^` is an anchor at the start of a pattern or group, `$` at the end, `*` at the
//!   start is literal. ERE: `( ) { } | + ? *`; a `{` that starts no valid interval is
//!   literal, as are `*`, `+`, `?` with nothing before them and an unmatched `)`.
//! * Both: `.`, bracket expressions (`[a-z]`, `[^…]`, `]` first, `[:alpha:]` and the
//!   other POSIX classes, `[=c=]`, `[.c.]` for one character), and GNU's `\w \W \s \S
//!   \b \B \< \> \` \'`. Back-references (`\1`) are refused: the `regex` crate has none.
//! * Characters are Unicode scalar values, as in grep under a UTF-8 locale. POSIX
//!   classes and word characters follow Unicode properties (`[:alpha:]` is
//!   `\p{Alphabetic}`, a word character is alphabetic, a decimal digit or `_`), which is
//!   what glibc's tables are built from, but not identical to them for every character.
//!   `-i` is Unicode simple case folding.
//! * Among alternatives, the `regex` crate prefers the leftmost-first match where grep
//!   takes the longest one. Which lines match is the same; with `--color`, the coloured
//!   span can differ (`a|ab` colours `a` in `ab`).

use regex::bytes::{Regex, RegexBuilder};
use regex_syntax::hir::{Class, Hir, HirKind};

/// How the pattern is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// `-G`, the default: POSIX basic regular expressions with GNU extensions.
    Basic,
    /// `-E`: POSIX extended regular expressions with GNU extensions.
    Extended,
    /// `-F`: fixed strings.
    Fixed,
}

/// The characters grep counts as word characters (`-w`, `\w`, `\<`).
const WORD: &str = r"\p{Alphabetic}\p{Nd}_";

/// A compiled pattern.
#[derive(Debug, Clone)]
pub struct Pattern {
    /// Selects a line; with `word`, the match is its first capture group.
    re: Regex,
    /// The same in multi-line mode: matches a text if any of its lines matches.
    text_re: Regex,
    word: bool,
    /// Sets of literals, each a necessary condition: every matching line contains one
    /// literal of each set (case-folded with `-i`). Empty when none is known.
    pub required: Vec<Vec<String>>,
    pub ignore_case: bool,
}

impl Pattern {
    /// Compiles `pattern` (lines separated by `\n`, any of which may match).
    pub fn new(
        pattern: &str,
        syntax: Syntax,
        ignore_case: bool,
        word: bool,
    ) -> Result<Pattern, String> {
        let mut parts = Vec::new();
        for p in pattern.split('\n') {
            parts.push(match syntax {
                Syntax::Fixed => regex::escape(p),
                Syntax::Basic => translate(p, false)?,
                Syntax::Extended => translate(p, true)?,
            });
        }
        let alt = if parts.len() == 1 {
            parts.pop().unwrap()
        } else {
            parts
                .iter()
                .map(|p| format!("(?:{p})"))
                .collect::<Vec<_>>()
                .join("|")
        };
        let core = if word {
            format!(r"(?:^|[^{WORD}])({alt})(?:[^{WORD}]|$)")
        } else {
            alt.clone()
        };
        let build = |multi_line: bool| {
            RegexBuilder::new(&core)
                .case_insensitive(ignore_case)
                .multi_line(multi_line)
                .size_limit(256 << 20)
                .dfa_size_limit(64 << 20)
                .build()
                .map_err(|e| match e {
                    regex::Error::Syntax(s) => format!("invalid pattern: {s}"),
                    regex::Error::CompiledTooBig(_) => "the pattern is too large".to_string(),
                    other => other.to_string(),
                })
        };
        let re = build(false)?;
        let text_re = build(true)?;
        let required = match regex_syntax::ParserBuilder::new().build().parse(&alt) {
            Ok(hir) => required(&hir),
            Err(_) => Vec::new(),
        };
        Ok(Pattern {
            re,
            text_re,
            word,
            required,
            ignore_case,
        })
    }

    /// `false` when no line of `text` (lines ending at `\n`, no NUL in it) can match:
    /// its anchors and word boundaries hold at line ends, and nothing else in the
    /// pattern looks outside the match, so a line's match is also one in the text.
    pub fn may_match_text(&self, text: &[u8]) -> bool {
        self.text_re.is_match(text)
    }

    /// Whether `line` (without its newline) matches.
    pub fn is_match(&self, line: &[u8]) -> bool {
        self.re.is_match(line)
    }

    /// The first match in `line` that starts at or after `at`, as grep would colour it.
    pub fn find_at(&self, line: &[u8], at: usize) -> Option<(usize, usize)> {
        if self.word {
            let c = self.re.captures_at(line, at)?;
            let m = c.get(1)?;
            Some((m.start(), m.end()))
        } else {
            self.re.find_at(line, at).map(|m| (m.start(), m.end()))
        }
    }
}

// ---------------------------------------------------------------------------------
// POSIX to `regex` syntax.

/// One element of a branch: its translation and whether a repetition may follow it.
struct Atom {
    text: String,
    repeatable: bool,
}

/// An open group: the finished branches and the one being built.
#[derive(Default)]
struct Frame {
    branches: Vec<String>,
    atoms: Vec<Atom>,
}

impl Frame {
    fn finish_branch(&mut self) {
        let b: String = self.atoms.drain(..).map(|a| a.text).collect();
        self.branches.push(b);
    }

    fn close(mut self) -> String {
        self.finish_branch();
        self.branches.join("|")
    }
}

/// Translates one BRE (`ere` false) or ERE into the `regex` crate's syntax.
pub fn translate(p: &str, ere: bool) -> Result<String, String> {
    let cs: Vec<char> = p.chars().collect();
    let mut stack: Vec<Frame> = vec![Frame::default()];
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        i += 1;
        let depth = stack.len();
        let top = stack.last_mut().unwrap();
        // No atom yet in this branch (start of pattern, group or alternative).
        let fresh = top.atoms.is_empty();
        let last_repeatable = top.atoms.last().is_some_and(|a| a.repeatable);
        match c {
            '\\' => {
                let Some(&n) = cs.get(i) else {
                    return Err("trailing backslash".into());
                };
                i += 1;
                match n {
                    '(' if !ere => stack.push(Frame::default()),
                    ')' if !ere => {
                        if depth == 1 {
                            return Err("unmatched ) or \\)".into());
                        }
                        let f = stack.pop().unwrap();
                        group(&mut stack, f);
                    }
                    '|' if !ere => stack.last_mut().unwrap().finish_branch(),
                    '{' if !ere => {
                        if fresh || !last_repeatable {
                            literal(top, '{');
                        } else {
                            let (q, next) = interval(&cs, i, true)
                                .ok_or_else(|| "invalid content of \\{\\}".to_string())?;
                            i = next;
                            repeat(top, &q);
                        }
                    }
                    '+' | '?' if !ere => {
                        if fresh || !last_repeatable {
                            literal(top, n);
                        } else {
                            repeat(top, &n.to_string());
                        }
                    }
                    '1'..='9' => {
                        return Err(format!("back-references such as \\{n} are not supported"));
                    }
                    'w' => atom(top, format!("[{WORD}]")),
                    'W' => atom(top, format!("[^{WORD}]")),
                    's' => atom(top, r"\s".into()),
                    'S' => atom(top, r"\S".into()),
                    'b' => anchor(top, r"\b"),
                    'B' => anchor(top, r"\B"),
                    '<' => anchor(top, r"\b{start}"),
                    '>' => anchor(top, r"\b{end}"),
                    // The start and end of the text are those of the line.
                    '`' => anchor(top, "^"),
                    '\'' => anchor(top, "$"),
                    other => literal(top, other),
                }
            }
            '(' if ere => stack.push(Frame::default()),
            ')' if ere => {
                if depth == 1 {
                    literal(top, ')');
                } else {
                    let f = stack.pop().unwrap();
                    group(&mut stack, f);
                }
            }
            '|' if ere => top.finish_branch(),
            '{' if ere => match interval(&cs, i, false) {
                Some((q, next)) if !fresh && last_repeatable => {
                    i = next;
                    repeat(top, &q);
                }
                _ => literal(top, '{'),
            },
            '+' | '?' if ere => {
                if fresh || !last_repeatable {
                    literal(top, c);
                } else {
                    repeat(top, &c.to_string());
                }
            }
            '*' => {
                if fresh || !last_repeatable {
                    literal(top, '*');
                } else {
                    repeat(top, "*");
                }
            }
            '^' => {
                if ere || fresh {
                    anchor(top, "^");
                } else {
                    literal(top, '^');
                }
            }
            '$' => {
                let at_end = ere
                    || i == cs.len()
                    || (cs[i] == '\\' && matches!(cs.get(i + 1), Some(')') | Some('|')));
                if at_end {
                    anchor(top, "$");
                } else {
                    literal(top, '$');
                }
            }
            '.' => atom(top, ".".into()),
            '[' => {
                let (class, next) = bracket(&cs, i)?;
                i = next;
                atom(top, class);
            }
            other => literal(top, other),
        }
    }
    if stack.len() > 1 {
        return Err(if ere {
            "unmatched ( or \\(".into()
        } else {
            "unmatched \\(".into()
        });
    }
    Ok(stack.pop().unwrap().close())
}

fn atom(f: &mut Frame, text: String) {
    f.atoms.push(Atom {
        text,
        repeatable: true,
    });
}

fn anchor(f: &mut Frame, text: &str) {
    f.atoms.push(Atom {
        text: text.into(),
        repeatable: false,
    });
}

fn literal(f: &mut Frame, c: char) {
    atom(f, regex::escape(c.encode_utf8(&mut [0; 4])));
}

fn repeat(f: &mut Frame, q: &str) {
    let a = f.atoms.last_mut().unwrap();
    a.text = format!("(?:{}){q}", a.text);
}

fn group(stack: &mut [Frame], f: Frame) {
    let inner = f.close();
    atom(stack.last_mut().unwrap(), format!("(?:{inner})"));
}

/// An interval starting after `{` at `i`: `{m}`, `{m,}`, `{,n}` or `{m,n}`, closed by
/// `}` (or `\}` in a BRE). Returns its `regex` form and the index after it.
fn interval(cs: &[char], mut i: usize, bre: bool) -> Option<(String, usize)> {
    let num = |i: &mut usize| -> Option<u32> {
        let s = *i;
        while *i < cs.len() && cs[*i].is_ascii_digit() {
            *i += 1;
        }
        (*i > s).then(|| cs[s..*i].iter().collect::<String>().parse().ok())?
    };
    let min = num(&mut i);
    let comma = cs.get(i) == Some(&',');
    let max = if comma {
        i += 1;
        num(&mut i)
    } else {
        min
    };
    if bre {
        if cs.get(i) != Some(&'\\') || cs.get(i + 1) != Some(&'}') {
            return None;
        }
        i += 2;
    } else {
        if cs.get(i) != Some(&'}') {
            return None;
        }
        i += 1;
    }
    let min_v = min.unwrap_or(0);
    if min.is_none() && !comma {
        return None;
    }
    if let Some(m) = max
        && m < min_v
    {
        return None;
    }
    if min_v > 32767 || max.is_some_and(|m| m > 32767) {
        return None;
    }
    let q = match (comma, max) {
        (false, _) => format!("{{{min_v}}}"),
        (true, None) => format!("{{{min_v},}}"),
        (true, Some(m)) => format!("{{{min_v},{m}}}"),
    };
    Some((q, i))
}

/// A character of a bracket expression, written for a `regex` class.
fn class_char(c: char) -> String {
    if c.is_alphanumeric() || !c.is_ascii() {
        c.to_string()
    } else {
        format!(r"\x{{{:x}}}", c as u32)
    }
}

/// A POSIX class name as the items of a `regex` class.
fn posix_class(name: &str) -> Option<&'static str> {
    Some(match name {
        "alpha" => r"\p{Alphabetic}",
        "digit" => "0-9",
        "alnum" => r"\p{Alphabetic}\p{Nd}",
        "upper" => r"\p{Uppercase}",
        "lower" => r"\p{Lowercase}",
        "space" => r"\s",
        "blank" => r"\t\p{Zs}",
        "punct" => r"\p{P}\p{S}",
        "cntrl" => r"\p{Cc}",
        "print" => r"[^\p{Cc}\p{Cn}]",
        "graph" => r"[^\p{Cc}\p{Cn}\s]",
        "xdigit" => "0-9A-Fa-f",
        _ => return None,
    })
}

/// A bracket expression starting after `[` at `i`. Returns its `regex` class and the
/// index after its closing `]`.
fn bracket(cs: &[char], mut i: usize) -> Result<(String, usize), String> {
    const UNMATCHED: &str = "unmatched [, [^, [:, [., or [=";
    let mut out = String::from("[");
    if cs.get(i) == Some(&'^') {
        out.push('^');
        i += 1;
    }
    let mut first = true;
    // A single character of the expression (a plain one, or `[.c.]` / `[=c=]`).
    let single = |i: &mut usize| -> Result<Option<char>, String> {
        let c = *cs.get(*i).ok_or(UNMATCHED)?;
        if c == '['
            && let Some(&k @ ('.' | '=')) = cs.get(*i + 1)
        {
            let start = *i + 2;
            let mut j = start;
            while j + 1 < cs.len() && !(cs[j] == k && cs[j + 1] == ']') {
                j += 1;
            }
            if j + 1 >= cs.len() {
                return Err(UNMATCHED.into());
            }
            if j - start != 1 {
                return Err("invalid collation character".into());
            }
            *i = j + 2;
            return Ok(Some(cs[start]));
        }
        Ok(None)
    };
    loop {
        let c = *cs.get(i).ok_or(UNMATCHED)?;
        if c == ']' && !first {
            i += 1;
            break;
        }
        first = false;
        if c == '[' && cs.get(i + 1) == Some(&':') {
            let start = i + 2;
            let mut j = start;
            while j + 1 < cs.len() && !(cs[j] == ':' && cs[j + 1] == ']') {
                j += 1;
            }
            if j + 1 >= cs.len() {
                return Err(UNMATCHED.into());
            }
            let name: String = cs[start..j].iter().collect();
            let items = posix_class(&name).ok_or("invalid character class name")?;
            out.push_str(items);
            i = j + 2;
            continue;
        }
        let lo = match single(&mut i)? {
            Some(ch) => ch,
            None => {
                i += 1;
                c
            }
        };
        // A range, unless the `-` is the last character before `]`.
        if cs.get(i) == Some(&'-') && cs.get(i + 1).is_some_and(|&n| n != ']') {
            i += 1;
            let hi = match single(&mut i)? {
                Some(ch) => ch,
                None => {
                    let ch = *cs.get(i).ok_or(UNMATCHED)?;
                    i += 1;
                    ch
                }
            };
            if hi < lo {
                return Err("invalid range end".into());
            }
            out.push_str(&class_char(lo));
            out.push('-');
            out.push_str(&class_char(hi));
        } else {
            out.push_str(&class_char(lo));
        }
    }
    out.push(']');
    Ok((out, i))
}

// ---------------------------------------------------------------------------------
// Required literals.

/// What a sub-expression tells about the literals of its matches.
struct Info {
    /// It matches exactly this string (and nothing else).
    exact: Option<String>,
    /// Sets of literals, each necessary: every match contains one literal of each.
    sets: Vec<Vec<String>>,
}

/// Necessary literal sets of a whole pattern (see [`Pattern::required`]).
/// [`Pattern::required`] of a parsed pattern (for the index's queries of a format's
/// triggers).
pub(crate) fn required_literals(h: &Hir) -> Vec<Vec<String>> {
    required(h)
}

fn required(h: &Hir) -> Vec<Vec<String>> {
    let mut i = info(h);
    if let Some(e) = i.exact.take()
        && !e.is_empty()
    {
        i.sets.push(vec![e]);
    }
    i.sets
        .retain(|s| !s.is_empty() && s.iter().all(|l| !l.is_empty()));
    i.sets.sort();
    i.sets.dedup();
    i.sets
}

/// The best set by a format-neutral measure: its shortest literal, longest.
fn best(sets: &[Vec<String>]) -> Option<&Vec<String>> {
    sets.iter()
        .filter(|s| !s.is_empty() && s.iter().all(|l| !l.is_empty()))
        .max_by_key(|s| s.iter().map(|l| l.chars().count()).min().unwrap_or(0))
}

fn info(h: &Hir) -> Info {
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => Info {
            exact: Some(String::new()),
            sets: vec![],
        },
        HirKind::Literal(l) => {
            let s = String::from_utf8_lossy(&l.0).into_owned();
            Info {
                exact: Some(s.clone()),
                sets: vec![vec![s]],
            }
        }
        HirKind::Class(Class::Unicode(c)) => {
            let n: u32 = c
                .ranges()
                .iter()
                .map(|r| r.end() as u32 - r.start() as u32 + 1)
                .sum();
            if n == 1 {
                let s = c.ranges()[0].start().to_string();
                Info {
                    exact: Some(s.clone()),
                    sets: vec![vec![s]],
                }
            } else if n <= 8 {
                let set = c
                    .ranges()
                    .iter()
                    .flat_map(|r| (r.start()..=r.end()).map(|ch| ch.to_string()))
                    .collect();
                Info {
                    exact: None,
                    sets: vec![set],
                }
            } else {
                Info {
                    exact: None,
                    sets: vec![],
                }
            }
        }
        HirKind::Class(Class::Bytes(_)) => Info {
            exact: None,
            sets: vec![],
        },
        HirKind::Repetition(r) => {
            if r.min == 0 {
                return Info {
                    exact: (r.max == Some(0)).then(String::new),
                    sets: vec![],
                };
            }
            let sub = info(&r.sub);
            let mut sets = sub.sets;
            let exact = match &sub.exact {
                Some(s) if r.max == Some(r.min) => Some(s.repeat(r.min as usize)),
                _ => None,
            };
            if let Some(s) = &sub.exact
                && !s.is_empty()
            {
                sets.push(vec![s.repeat(r.min.min(64) as usize)]);
            }
            Info { exact, sets }
        }
        HirKind::Capture(c) => info(&c.sub),
        HirKind::Concat(subs) => {
            let infos: Vec<Info> = subs.iter().map(info).collect();
            let exact = infos
                .iter()
                .map(|i| i.exact.as_deref())
                .collect::<Option<Vec<&str>>>()
                .map(|v| v.concat());
            let mut sets = Vec::new();
            let mut run = String::new();
            for i in infos {
                match i.exact {
                    Some(e) => run.push_str(&e),
                    None => {
                        if !run.is_empty() {
                            sets.push(vec![std::mem::take(&mut run)]);
                        }
                    }
                }
                sets.extend(i.sets);
            }
            if !run.is_empty() {
                sets.push(vec![run]);
            }
            Info { exact, sets }
        }
        HirKind::Alternation(alts) => {
            let mut union = Vec::new();
            for a in alts {
                let mut i = info(a);
                if let Some(e) = i.exact.take() {
                    if e.is_empty() {
                        // This alternative can match the empty string.
                        return Info {
                            exact: None,
                            sets: vec![],
                        };
                    }
                    i.sets.push(vec![e]);
                }
                match best(&i.sets) {
                    Some(s) => union.extend(s.iter().cloned()),
                    None => {
                        return Info {
                            exact: None,
                            sets: vec![],
                        };
                    }
                }
            }
            union.sort();
            union.dedup();
            Info {
                exact: None,
                sets: vec![union],
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bre(p: &str) -> String {
        translate(p, false).unwrap()
    }
    fn ere(p: &str) -> String {
        translate(p, true).unwrap()
    }
    fn m(p: &str, syntax: Syntax, line: &str) -> bool {
        Pattern::new(p, syntax, false, false)
            .unwrap()
            .is_match(line.as_bytes())
    }

    #[test]
    fn basic_syntax() {
        assert!(m("a+b", Syntax::Basic, "xa+by"));
        assert!(!m("a+b", Syntax::Basic, "aab"));
        assert!(m(r"a\+b", Syntax::Basic, "aab"));
        assert!(m(r"\(ab\)\{2\}", Syntax::Basic, "xababx"));
        assert!(!m(r"\(ab\)\{2\}", Syntax::Basic, "xabx"));
        assert!(m(r"foo\|bar", Syntax::Basic, "a bar"));
        assert!(m("*a", Syntax::Basic, "x*a"));
        assert!(m("a^b", Syntax::Basic, "a^b"));
        assert!(m("a$b", Syntax::Basic, "a$b"));
        assert!(m("^ab$", Syntax::Basic, "ab"));
        assert!(!m("^ab$", Syntax::Basic, "xab"));
        assert!(m("(x)", Syntax::Basic, "f(x)"));
        assert!(m("a{1}", Syntax::Basic, "a{1}"));
        assert!(m(r"\<word\>", Syntax::Basic, "a word."));
        assert!(!m(r"\<word\>", Syntax::Basic, "swords"));
        assert!(m(r"a\.b", Syntax::Basic, "a.b"));
        assert!(!m(r"a\.b", Syntax::Basic, "axb"));
        assert_eq!(bre("a.b"), "a.b");
    }

    #[test]
    fn extended_syntax() {
        assert!(m("a+b", Syntax::Extended, "aab"));
        assert!(m("(ab){2}", Syntax::Extended, "abab"));
        assert!(m("foo|bar", Syntax::Extended, "bar"));
        assert!(m("a{", Syntax::Extended, "a{"));
        assert!(m("a{x}", Syntax::Extended, "a{x}"));
        assert!(m("*a", Syntax::Extended, "*a"));
        assert!(m("a)", Syntax::Extended, "a)"));
        assert!(m(r"\(x\)", Syntax::Extended, "(x)"));
        assert!(m("x**", Syntax::Extended, "xx"));
        assert_eq!(ere("a|b"), "a|b");
    }

    #[test]
    fn brackets() {
        assert!(m("[]a]", Syntax::Basic, "]"));
        assert!(m("[^]a]", Syntax::Basic, "b"));
        assert!(!m("[^]a]", Syntax::Basic, "]"));
        assert!(m(r"[\n]", Syntax::Basic, r"\"));
        assert!(m(r"[\n]", Syntax::Basic, "n"));
        assert!(m("[[:digit:]]x", Syntax::Basic, "5x"));
        assert!(m("[[:alpha:]]", Syntax::Basic, "é"));
        assert!(m("[a-]", Syntax::Basic, "-"));
        assert!(m("[[.-.]]", Syntax::Basic, "-"));
        assert!(m("[&&]", Syntax::Basic, "&"));
        assert!(m("[a[]", Syntax::Basic, "["));
        assert!(m("[~-~]", Syntax::Basic, "~"));
        assert!(Pattern::new("[z-a]", Syntax::Basic, false, false).is_err());
        assert!(Pattern::new("[a", Syntax::Basic, false, false).is_err());
        assert!(Pattern::new("[[:nope:]]", Syntax::Basic, false, false).is_err());
    }

    #[test]
    fn refused() {
        assert!(Pattern::new(r"\(a\)\1", Syntax::Basic, false, false).is_err());
        assert!(Pattern::new(r"a\", Syntax::Basic, false, false).is_err());
        assert!(Pattern::new(r"\(a", Syntax::Basic, false, false).is_err());
        assert!(Pattern::new(r"(a", Syntax::Extended, false, false).is_err());
    }

    #[test]
    fn fixed_strings_and_several_patterns() {
        assert!(m("a.b", Syntax::Fixed, "a.b"));
        assert!(!m("a.b", Syntax::Fixed, "axb"));
        assert!(m("foo\nbar", Syntax::Fixed, "xbar"));
        assert!(m("foo\n", Syntax::Fixed, "anything"));
    }

    #[test]
    fn words_and_case() {
        let p = Pattern::new("foo", Syntax::Fixed, true, true).unwrap();
        assert!(p.is_match(b"a FOO b"));
        assert!(!p.is_match(b"foobar"));
        assert!(!p.is_match(b"x_foo"));
        assert!(p.is_match(b"foo-bar"));
        // The first word-bounded match, not the first match.
        assert!(p.is_match(b"foobar foo"));
        assert_eq!(p.find_at(b"foobar foo", 0), Some((7, 10)));
        let p = Pattern::new("@foo", Syntax::Fixed, false, true).unwrap();
        assert!(!p.is_match(b"a@foo"));
        assert!(p.is_match(b"a @foo"));
        let p = Pattern::new("é", Syntax::Fixed, true, false).unwrap();
        assert!(p.is_match("É".as_bytes()));
    }

    fn req(p: &str, syntax: Syntax) -> Vec<Vec<String>> {
        Pattern::new(p, syntax, false, false).unwrap().required
    }

    #[test]
    fn required_literals() {
        assert_eq!(req("hello", Syntax::Fixed), [["hello"]]);
        assert!(req("foo.*bar", Syntax::Basic).contains(&vec!["foo".to_string()]));
        assert!(req("foo.*bar", Syntax::Basic).contains(&vec!["bar".to_string()]));
        assert_eq!(req("foo|barbaz", Syntax::Extended), [["barbaz", "foo"]]);
        assert!(req("a*", Syntax::Basic).is_empty());
        assert!(req("foo|", Syntax::Extended).is_empty());
        assert!(req("(ab)+c", Syntax::Extended).contains(&vec!["ab".to_string()]));
        assert!(req("x[0-9]+y", Syntax::Extended).contains(&vec!["x".to_string()]));
        assert!(req(r"\bword\b", Syntax::Basic).contains(&vec!["word".to_string()]));
        assert_eq!(req("a\nbc", Syntax::Fixed), [["a", "bc"]]);
    }
}
