//! Reading a few fields of a JSON line without building it.
//!
//! [`Json`] is what the `tree` previews need from an entry: look a key up, walk an
//! array, read a string (or only its beginning), test truthiness, and write a value as
//! `JSON.stringify` would. It is implemented twice: for a parsed `serde_json::Value`,
//! and for [`Raw`], a borrowed view of the bytes of a line that finds a field by
//! skipping over everything else. Code written against the trait (the previews in
//! [`super::render`]) gives the same text either way; drawing the tree of a 100k-entry
//! session with [`Raw`] allocates a few small vectors per line instead of a whole
//! document.
//!
//! [`Raw`] does not validate: it expects a line the index already accepted (valid
//! JSON, see [`super::scan`]). On anything else it never panics and never loops; it
//! answers "missing" where the bytes do not make sense. Strings are decoded as
//! `JSON.parse` decodes them after Node's UTF-8 decoding: escapes (surrogate pairs
//! included) resolved, invalid UTF-8 replaced by U+FFFD. A key that occurs twice has
//! its last value, as in JavaScript.

use serde_json::{Map, Value};
use std::borrow::Cow;

/// A JSON value, as much as previews need of it.
pub trait Json<'a>: Copy + Sized {
    /// An object whose members can be looked up.
    type Obj: JsonObj<'a, Val = Self>;
    /// The elements of an array.
    type Items: Iterator<Item = Self>;
    /// The object, if this is one.
    fn obj(self) -> Option<Self::Obj>;
    /// The elements, if this is an array.
    fn items(self) -> Option<Self::Items>;
    fn is_null(self) -> bool;
    fn is_string(self) -> bool;
    /// The string, if this is one.
    fn as_str(self) -> Option<Cow<'a, str>>;
    /// The string's first `max` bytes at most (cut at a character boundary), and
    /// whether that is all of it, if this is a string.
    fn str_prefix_whole(self, max: usize) -> Option<(Cow<'a, str>, bool)>;
    /// The string's first `max` bytes at most (cut at a character boundary), if this is
    /// a string.
    fn str_prefix(self, max: usize) -> Option<Cow<'a, str>> {
        self.str_prefix_whole(max).map(|(t, _)| t)
    }
    /// The shortest beginning of the string that holds `n` characters other than
    /// whitespace and control characters (all of it if it has fewer), if this is a
    /// string: what a one-line preview of at most `n` characters needs of it.
    fn str_visible(self, n: usize) -> Option<Cow<'a, str>> {
        let mut max = 2 * n + 64;
        loop {
            let (text, whole) = self.str_prefix_whole(max)?;
            if let Some(cut) = visible_cut(&text, n) {
                return Some(match text {
                    Cow::Borrowed(t) => Cow::Borrowed(&t[..cut]),
                    Cow::Owned(mut t) => {
                        t.truncate(cut);
                        Cow::Owned(t)
                    }
                });
            }
            if whole {
                return Some(text);
            }
            max = max.saturating_mul(4);
        }
    }
    /// JavaScript truthiness.
    fn truthy(self) -> bool;
    /// `JSON.stringify(value)`.
    fn stringify(self) -> String;
}

/// An object of a [`Json`] value.
pub trait JsonObj<'a> {
    type Val;
    fn get(&self, key: &str) -> Option<Self::Val>;
    /// The members in JavaScript's order: a key that occurs twice keeps its first
    /// place and its last value.
    fn members(&self) -> Vec<(Cow<'a, str>, Self::Val)>;
}

/// Where the `n`-th character of `s` that is not whitespace or a control character
/// ends, if `s` has that many.
fn visible_cut(s: &str, n: usize) -> Option<usize> {
    if n == 0 {
        return Some(0);
    }
    let b = s.as_bytes();
    let mut seen = 0;
    let mut i = 0;
    // Whole blocks of ASCII that cannot reach `n`: count them at once.
    while i + 32 <= b.len() {
        let block = &b[i..i + 32];
        if block.iter().fold(0, |a, &c| a | c) >= 0x80 {
            break;
        }
        // Summed as bytes (at most 32), which the compiler does many at a time.
        let k = block
            .iter()
            .map(|&c| u8::from(c > 0x20) & u8::from(c != 0x7f))
            .sum::<u8>() as usize;
        if seen + k >= n {
            break;
        }
        seen += k;
        i += 32;
    }
    while i < b.len() {
        let c = b[i];
        let (blank, len) = if c < 0x80 {
            (c <= 0x20 || c == 0x7f, 1)
        } else {
            let ch = s[i..].chars().next()?;
            (ch.is_whitespace() || ch.is_control(), ch.len_utf8())
        };
        i += len;
        if !blank {
            seen += 1;
            if seen == n {
                return Some(i);
            }
        }
    }
    None
}

fn floor_boundary(s: &str, max: usize) -> usize {
    if max >= s.len() {
        return s.len();
    }
    let mut i = max;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

// ---- serde_json::Value ---------------------------------------------------------------

impl<'a> Json<'a> for &'a Value {
    type Obj = &'a Map<String, Value>;
    type Items = std::slice::Iter<'a, Value>;
    fn obj(self) -> Option<Self::Obj> {
        self.as_object()
    }
    fn items(self) -> Option<Self::Items> {
        self.as_array().map(|a| a.iter())
    }
    fn is_null(self) -> bool {
        self.is_null()
    }
    fn is_string(self) -> bool {
        Value::is_string(self)
    }
    fn as_str(self) -> Option<Cow<'a, str>> {
        Value::as_str(self).map(Cow::Borrowed)
    }
    fn str_prefix_whole(self, max: usize) -> Option<(Cow<'a, str>, bool)> {
        Value::as_str(self).map(|s| {
            let keep = floor_boundary(s, max);
            (Cow::Borrowed(&s[..keep]), keep == s.len())
        })
    }
    fn truthy(self) -> bool {
        crate::model::core::js::js_truthy(Some(self))
    }
    fn stringify(self) -> String {
        crate::model::core::js::js_stringify(self)
    }
}

impl<'a> JsonObj<'a> for &'a Map<String, Value> {
    type Val = &'a Value;
    fn get(&self, key: &str) -> Option<&'a Value> {
        Map::get(self, key)
    }
    fn members(&self) -> Vec<(Cow<'a, str>, &'a Value)> {
        self.iter()
            .map(|(k, v)| (Cow::Borrowed(k.as_str()), v))
            .collect()
    }
}

// ---- Raw ----------------------------------------------------------------------------

/// One line's bytes and where each of its strings, arrays and objects ends, found in
/// one pass: after that, stepping over a value costs a lookup, however long it is.
pub struct Tape<'a> {
    s: &'a [u8],
    /// Every string, array and object ("tokens"), in order: where it starts, the
    /// offset just past it, and the first token after its end (for a string, the
    /// next one).
    toks: Vec<[u32; 3]>,
    /// The line's one value (whitespace around it left out).
    root: (usize, usize),
}

/// Not a token: a number, `true`, `false` or `null`.
const SCALAR: u32 = u32::MAX;

thread_local! {
    /// Vectors of dropped tapes, kept for the next line (drawing a tree maps 100,000).
    static SPARE: std::cell::RefCell<Vec<Vec<u32>>> = const { std::cell::RefCell::new(Vec::new()) };
    static SPARE_TOKS: std::cell::RefCell<Vec<Vec<[u32; 3]>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

fn spare() -> Vec<u32> {
    SPARE.with(|s| s.borrow_mut().pop()).unwrap_or_default()
}

fn give_back(v: Vec<u32>) {
    SPARE.with(|s| {
        let mut s = s.borrow_mut();
        if s.len() < 8 && v.capacity() <= 1 << 16 {
            let mut v = v;
            v.clear();
            s.push(v);
        }
    });
}

impl Drop for Tape<'_> {
    fn drop(&mut self) {
        let mut v = std::mem::take(&mut self.toks);
        if v.capacity() <= 1 << 16 {
            v.clear();
            SPARE_TOKS.with(|s| {
                let mut s = s.borrow_mut();
                if s.len() < 8 {
                    s.push(v);
                }
            });
        }
    }
}

impl<'a> Tape<'a> {
    /// Maps a line; `None` unless it is one JSON value (with whitespace around it).
    pub fn new(line: &'a [u8]) -> Option<Tape<'a>> {
        if line.len() >= SCALAR as usize {
            return None;
        }
        let mut t = Tape {
            s: line,
            toks: SPARE_TOKS
                .with(|s| s.borrow_mut().pop())
                .unwrap_or_default(),
            root: (0, 0),
        };
        let mut stack = spare();
        let s = line;
        let mut i = 0;
        let mut ok = true;
        while i < s.len() {
            match s[i] {
                b'"' => {
                    let Some(e) = string_end(s, i) else {
                        ok = false;
                        break;
                    };
                    let k = t.toks.len() as u32;
                    t.toks.push([i as u32, e as u32, k + 1]);
                    i = e;
                }
                b'{' | b'[' => {
                    stack.push(t.toks.len() as u32);
                    t.toks.push([i as u32, 0, 0]);
                    i += 1;
                }
                b'}' | b']' => {
                    let Some(k) = stack.pop() else {
                        ok = false;
                        break;
                    };
                    let next = t.toks.len() as u32;
                    let tok = &mut t.toks[k as usize];
                    tok[1] = i as u32 + 1;
                    tok[2] = next;
                    i += 1;
                }
                _ => i += 1,
            }
        }
        ok &= stack.is_empty();
        give_back(stack);
        if !ok {
            return None;
        }
        let start = skip_ws(s, 0);
        let end = match s.get(start)? {
            b'"' | b'{' | b'[' => t.toks.first()?[1] as usize,
            _ => scalar_end(s, start)?,
        };
        if skip_ws(s, end) != s.len() {
            return None;
        }
        t.root = (start, end);
        Some(t)
    }

    /// The line's value.
    pub fn root(&self) -> Raw<'_> {
        Raw {
            t: self,
            start: self.root.0,
            end: self.root.1,
            tok: if self.toks.first().map(|t| t[0]) == Some(self.root.0 as u32) {
                0
            } else {
                SCALAR
            },
        }
    }

    /// The value that starts at `i`, where token `k` is the first token at or after
    /// it; and the first token after that value.
    fn value_at(&'a self, i: usize, k: u32) -> Option<(Raw<'a>, u32)> {
        let s = self.s;
        match *s.get(i)? {
            b'"' | b'{' | b'[' => {
                let [start, end, next] = *self.toks.get(k as usize)?;
                if start as usize != i {
                    return None;
                }
                let end = end as usize;
                let raw = Raw {
                    t: self,
                    start: i,
                    end,
                    tok: k,
                };
                Some((raw, next))
            }
            _ => {
                let end = scalar_end(s, i)?;
                let raw = Raw {
                    t: self,
                    start: i,
                    end,
                    tok: SCALAR,
                };
                Some((raw, k))
            }
        }
    }
}

/// The end of a number or a literal starting at `s[i]`: the next delimiter.
fn scalar_end(s: &[u8], i: usize) -> Option<usize> {
    let len = s[i..]
        .iter()
        .position(|b| matches!(b, b',' | b'}' | b']' | b':' | b' ' | b'\t' | b'\n' | b'\r'))
        .unwrap_or(s.len() - i);
    (len > 0).then_some(i + len)
}

/// The bytes of one JSON value of a [`Tape`] (no surrounding whitespace).
#[derive(Clone, Copy)]
pub struct Raw<'a> {
    t: &'a Tape<'a>,
    start: usize,
    end: usize,
    /// Its token, or [`SCALAR`].
    tok: u32,
}

impl<'a> Raw<'a> {
    /// The value's bytes.
    pub fn bytes(self) -> &'a [u8] {
        &self.t.s[self.start..self.end]
    }

    fn first(self) -> u8 {
        self.bytes().first().copied().unwrap_or(0)
    }

    /// The value parsed, as `JSON.parse` would after Node's UTF-8 decoding.
    fn parse(self) -> Option<Value> {
        crate::model::core::js::parse_line(self.bytes()).ok()
    }
}

/// An object's members, found in one step over the tape.
pub struct RawObj<'a> {
    obj: Raw<'a>,
    /// Each member: its key's token, its value's start, end and token.
    members: Vec<[u32; 4]>,
}

thread_local! {
    /// Member lists of dropped objects, kept for the next one.
    static SPARE_MEMBERS: std::cell::RefCell<Vec<Vec<[u32; 4]>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

impl Drop for RawObj<'_> {
    fn drop(&mut self) {
        let mut v = std::mem::take(&mut self.members);
        if v.capacity() <= 256 {
            v.clear();
            SPARE_MEMBERS.with(|s| {
                let mut s = s.borrow_mut();
                if s.len() < 16 {
                    s.push(v);
                }
            });
        }
    }
}

impl<'a> RawObj<'a> {
    fn new(obj: Raw<'a>) -> Option<RawObj<'a>> {
        let t = obj.t;
        let s = t.s;
        let mut members = SPARE_MEMBERS
            .with(|s| s.borrow_mut().pop())
            .unwrap_or_default();
        let mut i = skip_ws(s, obj.start + 1);
        let mut k = obj.tok + 1;
        while i + 1 < obj.end && s.get(i) == Some(&b'"') {
            let (key, after_key) = t.value_at(i, k)?;
            i = skip_ws(s, key.end);
            if s.get(i) != Some(&b':') {
                break;
            }
            i = skip_ws(s, i + 1);
            let (v, after) = t.value_at(i, after_key)?;
            members.push([key.tok, v.start as u32, v.end as u32, v.tok]);
            i = skip_ws(s, v.end);
            if s.get(i) == Some(&b',') {
                i = skip_ws(s, i + 1);
            }
            k = after;
        }
        Some(RawObj { obj, members })
    }

    fn key(&self, m: &[u32; 4]) -> &'a [u8] {
        let t = self.obj.t;
        let (a, b) = (
            t.toks[m[0] as usize][0] as usize,
            t.toks[m[0] as usize][1] as usize,
        );
        &t.s[a + 1..b - 1]
    }

    fn value(&self, m: &[u32; 4]) -> Raw<'a> {
        Raw {
            t: self.obj.t,
            start: m[1] as usize,
            end: m[2] as usize,
            tok: m[3],
        }
    }
}

impl<'a> JsonObj<'a> for RawObj<'a> {
    type Val = Raw<'a>;
    fn get(&self, key: &str) -> Option<Raw<'a>> {
        // The last occurrence wins, as in JavaScript.
        self.members
            .iter()
            .rev()
            .find(|m| key_is(self.key(m), key))
            .map(|m| self.value(m))
    }
    fn members(&self) -> Vec<(Cow<'a, str>, Raw<'a>)> {
        let mut out: Vec<(Cow<'a, str>, Raw<'a>)> = Vec::new();
        for m in &self.members {
            let k = decode(self.key(m), usize::MAX).unwrap_or_default();
            let v = self.value(m);
            match out.iter_mut().find(|(seen, _)| *seen == k) {
                Some(slot) => slot.1 = v,
                None => out.push((k, v)),
            }
        }
        out
    }
}

/// Whether the raw key (between its quotes) decodes to `key`.
fn key_is(raw: &[u8], key: &str) -> bool {
    // Every escape decodes to fewer bytes than it takes: a key written with escapes
    // is longer than the text it stands for.
    match raw.len().cmp(&key.len()) {
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => raw == key.as_bytes(),
        std::cmp::Ordering::Greater => {
            // Up to its first escape, the key is its bytes: the first byte that differs
            // from `key` must start an escape (unless `key` has a backslash before it).
            let key = key.as_bytes();
            let same = raw.iter().zip(key).take_while(|(a, b)| a == b).count();
            (raw[same] == b'\\' || key[..same].contains(&b'\\'))
                && decode(raw, usize::MAX).is_some_and(|k| k.as_bytes() == key)
        }
    }
}

/// The elements of an array.
pub struct RawItems<'a> {
    r: Raw<'a>,
    /// Where the next element starts, and the first token at or after it.
    i: usize,
    k: u32,
}

impl<'a> Iterator for RawItems<'a> {
    type Item = Raw<'a>;
    fn next(&mut self) -> Option<Raw<'a>> {
        let s = self.r.t.s;
        let start = skip_ws(s, self.i);
        if start >= self.r.end.saturating_sub(1) || s.get(start) == Some(&b']') {
            self.i = self.r.end;
            return None;
        }
        let Some((v, k)) = self.r.t.value_at(start, self.k) else {
            self.i = self.r.end;
            return None;
        };
        let mut j = skip_ws(s, v.end);
        if s.get(j) == Some(&b',') {
            j += 1;
        }
        self.i = j;
        self.k = k;
        Some(v)
    }
}

impl<'a> Json<'a> for Raw<'a> {
    type Obj = RawObj<'a>;
    type Items = RawItems<'a>;

    fn obj(self) -> Option<RawObj<'a>> {
        if self.first() != b'{' || self.tok == SCALAR {
            return None;
        }
        RawObj::new(self)
    }

    fn items(self) -> Option<RawItems<'a>> {
        (self.first() == b'[' && self.tok != SCALAR).then(|| RawItems {
            r: self,
            i: self.start + 1,
            k: self.tok + 1,
        })
    }

    fn is_null(self) -> bool {
        self.bytes() == b"null"
    }

    fn is_string(self) -> bool {
        self.first() == b'"'
    }

    fn as_str(self) -> Option<Cow<'a, str>> {
        self.str_prefix(usize::MAX)
    }

    fn str_prefix_whole(self, max: usize) -> Option<(Cow<'a, str>, bool)> {
        let b = self.bytes();
        if self.first() != b'"' || b.len() < 2 {
            return None;
        }
        decode_prefix(&b[1..b.len() - 1], max)
    }

    fn truthy(self) -> bool {
        let b = self.bytes();
        match self.first() {
            b'n' | b'f' => false,
            b't' | b'{' | b'[' => true,
            b'"' => b.len() > 2,
            _ => std::str::from_utf8(b)
                .ok()
                .and_then(|t| t.parse::<f64>().ok())
                .is_some_and(|f| f != 0.0 && !f.is_nan()),
        }
    }

    fn stringify(self) -> String {
        match self.parse() {
            Some(v) => crate::model::core::js::js_stringify(&v),
            None => String::from_utf8_lossy(self.bytes()).into_owned(),
        }
    }
}

fn skip_ws(s: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = s.get(i) {
        i += 1;
    }
    i
}

/// `s[i]` opens a string: the index just past its closing quote.
fn string_end(s: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    // Most strings (keys, ids, names) end sooner than a search would start: look at
    // their first words eight bytes at a time, for a quote or a backslash.
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut plain_words = 0;
    while plain_words < 4 && j + 8 <= s.len() {
        let x = u64::from_le_bytes([
            s[j],
            s[j + 1],
            s[j + 2],
            s[j + 3],
            s[j + 4],
            s[j + 5],
            s[j + 6],
            s[j + 7],
        ]);
        // A byte equal to the quote (or the backslash) is zero in `q` (or `b`); the
        // lowest flagged byte is always a real one.
        let q = x ^ (u64::from(b'"') * ONES);
        let b = x ^ (u64::from(b'\\') * ONES);
        let found = ((q.wrapping_sub(ONES) & !q) | (b.wrapping_sub(ONES) & !b)) & HIGH;
        if found == 0 {
            j += 8;
            plain_words += 1;
            continue;
        }
        let k = j + (found.trailing_zeros() / 8) as usize;
        if s[k] == b'"' {
            return Some(k + 1);
        }
        j = k + 2;
    }
    // Here `j` is not inside an escape, so a run of backslashes before a quote
    // starts at `j` or later.
    loop {
        let q = j + memchr::memchr(b'"', s.get(j..)?)?;
        // Escaped when preceded by an odd number of backslashes.
        let backslashes = s[j..q].iter().rev().take_while(|&&b| b == b'\\').count();
        if backslashes % 2 == 0 {
            return Some(q + 1);
        }
        j = q + 1;
    }
}

/// Decodes the inside of a JSON string.
fn decode(raw: &[u8], max: usize) -> Option<Cow<'_, str>> {
    decode_prefix(raw, max).map(|(t, _)| t)
}

/// Decodes the inside of a JSON string, stopping once `max` bytes are out (cut at a
/// character boundary); says whether that is the whole string. `None` on a broken
/// escape.
fn decode_prefix(raw: &[u8], max: usize) -> Option<(Cow<'_, str>, bool)> {
    // Only the first `max` bytes (and a character's worth) can be kept: look no
    // further for an escape.
    let look = raw.len().min(max.saturating_add(4));
    let plain = memchr::memchr(b'\\', &raw[..look]).unwrap_or(look);
    if plain == raw.len() || plain >= max {
        // A cut in the middle of a character only spoils what lies past `max`.
        let cut = &raw[..plain.min(max.saturating_add(4))];
        let mut whole = cut.len() == raw.len();
        let text = match std::str::from_utf8(cut) {
            Ok(t) => Cow::Borrowed(t),
            Err(_) => Cow::Owned(String::from_utf8_lossy(cut).into_owned()),
        };
        let keep = floor_boundary(&text, max);
        whole &= keep == text.len();
        return Some((
            match text {
                Cow::Borrowed(t) => Cow::Borrowed(&t[..keep]),
                Cow::Owned(mut t) => {
                    t.truncate(keep);
                    Cow::Owned(t)
                }
            },
            whole,
        ));
    }
    let mut out: Vec<u8> = Vec::with_capacity(raw.len().min(max.saturating_add(4)));
    let mut i = 0;
    while i < raw.len() && out.len() < max {
        let b = raw[i];
        if b != b'\\' {
            let next = memchr::memchr(b'\\', &raw[i..]).map_or(raw.len(), |k| i + k);
            let room = (max - out.len()).saturating_add(4);
            let end = next.min(i.saturating_add(room)).min(raw.len());
            out.extend_from_slice(&raw[i..end]);
            i = end;
            continue;
        }
        let e = *raw.get(i + 1)?;
        i += 2;
        let c = match e {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hi = hex4(raw.get(i..i + 4)?)?;
                i += 4;
                if (0xD800..0xDC00).contains(&hi) && raw.get(i..i + 2) == Some(b"\\u") {
                    let lo = hex4(raw.get(i + 2..i + 6)?)?;
                    if (0xDC00..0xE000).contains(&lo) {
                        i += 6;
                        char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))?
                    } else {
                        char::REPLACEMENT_CHARACTER
                    }
                } else {
                    char::from_u32(hi).unwrap_or(char::REPLACEMENT_CHARACTER)
                }
            }
            _ => return None,
        };
        let mut buf = [0u8; 4];
        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    }
    let mut text = match String::from_utf8(out) {
        Ok(t) => t,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    let keep = floor_boundary(&text, max);
    let whole = i >= raw.len() && keep == text.len();
    text.truncate(keep);
    Some((Cow::Owned(text), whole))
}

fn hex4(h: &[u8]) -> Option<u32> {
    u32::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both(
        line: &str,
        f: impl Fn(&dyn Fn(&str) -> Option<String>, &dyn Fn(&str) -> Option<String>),
    ) {
        let v: Value = serde_json::from_str(line).unwrap();
        let tape = Tape::new(line.as_bytes()).unwrap();
        let raw = tape.root();
        let by_value = |k: &str| Json::obj(&v).and_then(|o| o.get(k)).map(|x| x.stringify());
        let by_raw = |k: &str| raw.obj().and_then(|o| o.get(k)).map(|x| x.stringify());
        f(&by_value, &by_raw);
    }

    #[test]
    fn raw_and_value_agree_on_fields() {
        let line =
            r#" {"a":1,"b":"x\"y\\\\","c":[1,{"d":"]}"},[]],"e":null,"a":2.50, "f":{"g":true}} "#;
        both(line, |v, r| {
            for k in ["a", "b", "c", "e", "f", "zz"] {
                assert_eq!(v(k), r(k), "{k}");
            }
        });
        let tape = Tape::new(line.as_bytes()).unwrap();
        let o = tape.root().obj().unwrap();
        assert_eq!(o.get("a").unwrap().stringify(), "2.5");
        let items: Vec<String> = o
            .get("c")
            .unwrap()
            .items()
            .unwrap()
            .map(|x| x.stringify())
            .collect();
        assert_eq!(items, ["1", "{\"d\":\"]}\"}", "[]"]);
        assert!(o.get("e").unwrap().is_null());
        assert!(!o.get("e").unwrap().truthy());
        assert!(o.get("f").unwrap().truthy());
    }

    #[test]
    fn strings_end_where_they_end_wherever_their_escapes_fall() {
        // Escaped quotes and backslashes on either side of where a string stops being
        // read a byte at a time.
        for k in 0..40 {
            for m in 0..40 {
                let line = format!(
                    r#"{{"k":"{}\"{}\\","z":"\\\"{}"}}"#,
                    "a".repeat(k),
                    "b".repeat(m),
                    "c".repeat(m)
                );
                let v: Value = serde_json::from_str(&line).unwrap();
                let tape = Tape::new(line.as_bytes()).unwrap();
                let o = tape.root().obj().unwrap();
                for key in ["k", "z"] {
                    assert_eq!(
                        o.get(key).and_then(|x| x.as_str()).as_deref(),
                        v[key].as_str(),
                        "{line}"
                    );
                }
            }
        }
    }

    #[test]
    fn strings_decode_as_javascript_does() {
        let cases: &[&[u8]] = &[
            br#""plain""#,
            br#""a\nb\t\"q\" \\ \/ \u00e9 \ud83d\ude00 end""#,
            br#""lone \ud83d here""#,
            b"\"bad \xff\xfe bytes\"",
            br#""""#,
        ];
        for c in cases {
            let tape = Tape::new(c).unwrap();
            let raw = tape.root();
            if c.starts_with(br#""lone"#) {
                // serde_json refuses lone surrogates (the index calls such lines
                // malformed); decoding still does not fail.
                assert!(raw.as_str().is_some());
                continue;
            }
            let want = match crate::model::core::js::parse_line(c).unwrap() {
                Value::String(s) => s,
                _ => unreachable!(),
            };
            assert_eq!(raw.as_str().unwrap(), want);
            let v = Value::String(want.clone());
            for max in 0..want.len() + 2 {
                let p = raw.str_prefix_whole(max).unwrap();
                assert_eq!(p, Json::str_prefix_whole(&v, max).unwrap(), "{max}");
            }
            for n in 0..want.chars().count() + 2 {
                assert_eq!(raw.str_visible(n), Json::str_visible(&v, n), "{n}");
            }
        }
    }

    #[test]
    fn visible_cut_counts_characters_that_are_not_blank() {
        fn naive(s: &str, n: usize) -> Option<usize> {
            if n == 0 {
                return Some(0);
            }
            let mut seen = 0;
            for (i, c) in s.char_indices() {
                if !(c.is_whitespace() || c.is_control()) {
                    seen += 1;
                    if seen == n {
                        return Some(i + c.len_utf8());
                    }
                }
            }
            None
        }
        let long = "word  \t".repeat(30) + "é fin " + &"x".repeat(40);
        for s in [
            "",
            "abc",
            "a b c",
            long.as_str(),
            &" ".repeat(100),
            &"ab\n".repeat(50),
        ] {
            for n in 0..s.len() + 2 {
                assert_eq!(visible_cut(s, n), naive(s, n), "{s:?} {n}");
            }
        }
    }

    #[test]
    fn broken_bytes_never_panic() {
        for s in [
            &b"{"[..],
            b"{\"a\"",
            b"{\"a\":",
            b"{\"a\":[1,2",
            b"{\"a\":\"x",
            b"[\"\\",
            b"\"\\u12",
            b"}",
            b"",
            b"{\"a\" 1}",
        ] {
            if let Some(t) = Tape::new(s) {
                let r = t.root();
                let _ = r
                    .obj()
                    .map(|o| o.get("a").map(|v| (v.truthy(), v.as_str(), v.stringify())));
                let _ = r.items().map(|i| i.count());
                let _ = r.as_str();
            }
        }
    }
}
