//! A hand-written reader of one JSON line that vouches only for what it is sure of.
//!
//! [`Reader`] walks a line once, 16 bytes at a compare inside strings, and gives its
//! caller the keys and values it asks for. It follows serde_json's grammar and checks
//! (the same whitespace, escapes, UTF-8, numbers, nesting), but it never refuses a
//! line: whatever it is not sure serde_json accepts it calls [`Unsure`], and the
//! caller then reads the line with the serde path ([`super`]), which decides. So the
//! fast path must be right only about the lines it accepts, and refusals, rare in
//! real sessions, cost one extra walk. It is unsure of:
//!
//! * anything serde_json refuses: a syntax error, a control byte or invalid UTF-8 in
//!   a string, an unknown escape, trailing characters;
//! * any `\u` escape of a surrogate other than a leading one directly followed by
//!   `\u` and a trailing one (serde_json refuses lone surrogates);
//! * a number whose range it cannot tell at a glance: more than 300 integer digits,
//!   an exponent of more than three digits, or integer digits plus a positive
//!   exponent past 300 (serde_json refuses a number that rounds to infinity);
//! * nesting deeper than [`MAX_DEPTH`] (serde_json refuses past 127);
//! * a line that is not one object.
//!
//! What it gives is what the `Value` would: a string is the decoded text (an escaped
//! one is decoded by serde_json itself, [`Reader::str`]), an integer follows
//! serde_json's `u64`/`i64`/`f64` choice, a float is parsed by serde_json.

use std::borrow::Cow;

/// The reader is not sure that serde_json accepts the line: ask it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unsure;

type R<T> = Result<T, Unsure>;

/// The deepest nesting the reader vouches for (serde_json accepts 127 containers).
pub(crate) const MAX_DEPTH: u32 = 100;

/// A line being read, at a byte.
pub(crate) struct Reader<'a> {
    b: &'a [u8],
    i: usize,
    depth: u32,
}

/// What reads one field of an object: called with the decoded key (its UTF-8 bytes:
/// they were checked with the string, and a match on bytes costs no second check)
/// and the reader on the field's value, which it must read with exactly one of
/// [`Reader::skip`], [`Reader::str`], [`Reader::i64`], [`Reader::u64`],
/// [`Reader::f64`] or [`Reader::object`].
pub(crate) trait Field<'a>: FnMut(&[u8], &mut Reader<'a>) -> R<()> {}
impl<'a, F: FnMut(&[u8], &mut Reader<'a>) -> R<()>> Field<'a> for F {}

impl<'a> Reader<'a> {
    /// Reads `line`, which must be one JSON object, with `field`; `Ok` only when
    /// `serde_json::from_slice::<Value>(line)` accepts it.
    pub(crate) fn object_line(line: &'a [u8], mut field: impl Field<'a>) -> R<()> {
        let mut r = Reader {
            b: line,
            i: 0,
            depth: 0,
        };
        r.ws();
        if r.peek() != Some(b'{') {
            return Err(Unsure);
        }
        r.object(&mut field)?;
        r.ws();
        if r.i != r.b.len() {
            return Err(Unsure);
        }
        Ok(())
    }

    /// The first byte of the value the reader is on, after whitespace: what kind of
    /// value it is (`"`, `{`, `[`, `t`, `f`, `n`, `-` or a digit), before reading it
    /// with one of the readers.
    pub(crate) fn next_byte(&mut self) -> Option<u8> {
        self.ws();
        self.peek()
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// Passes JSON whitespace (serde_json's: space, tab, CR, LF).
    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\r' | b'\n') = self.peek() {
            self.i += 1;
        }
    }

    /// Takes byte `c`, after whitespace.
    #[inline]
    fn expect(&mut self, c: u8) -> R<()> {
        self.ws();
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(Unsure)
        }
    }

    /// Reads the value as an object with `field`, or skips it when it is no object:
    /// whether it was one.
    pub(crate) fn object(&mut self, field: &mut impl Field<'a>) -> R<bool> {
        self.ws();
        if self.peek() != Some(b'{') {
            self.skip()?;
            return Ok(false);
        }
        self.enter()?;
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            self.depth -= 1;
            return Ok(true);
        }
        loop {
            self.expect(b'"')?;
            let (start, escaped) = self.string()?;
            let end = self.i;
            self.expect(b':')?;
            self.ws();
            if escaped {
                let k = decode(&self.b[start - 1..end])?;
                field(k.as_bytes(), self)?;
            } else {
                field(&self.b[start..end - 1], self)?;
            }
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    self.depth -= 1;
                    return Ok(true);
                }
                _ => return Err(Unsure),
            }
        }
    }

    /// Reads the value as an array, each element with `each` (which must read
    /// exactly one value, as a [`Field`] does), or skips it when it is no array:
    /// whether it was one.
    pub(crate) fn elements(&mut self, each: &mut impl FnMut(&mut Reader<'a>) -> R<()>) -> R<bool> {
        self.ws();
        if self.peek() != Some(b'[') {
            self.skip()?;
            return Ok(false);
        }
        self.enter()?;
        self.ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            self.depth -= 1;
            return Ok(true);
        }
        loop {
            self.ws();
            each(self)?;
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    self.depth -= 1;
                    return Ok(true);
                }
                _ => return Err(Unsure),
            }
        }
    }

    fn enter(&mut self) -> R<()> {
        self.i += 1;
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Unsure);
        }
        Ok(())
    }

    /// Walks any value, checking it as building a `Value` would.
    pub(crate) fn skip(&mut self) -> R<()> {
        self.ws();
        match self.peek() {
            Some(b'"') => {
                self.i += 1;
                self.string().map(drop)
            }
            Some(b'{') => self.skip_object(),
            Some(b'[') => self.array(),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.number().map(drop),
            _ => Err(Unsure),
        }
    }

    /// Walks an object, the reader on its `{`.
    fn skip_object(&mut self) -> R<()> {
        self.enter()?;
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            self.depth -= 1;
            return Ok(());
        }
        loop {
            self.expect(b'"')?;
            self.string()?;
            self.expect(b':')?;
            self.skip()?;
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                _ => return Err(Unsure),
            }
        }
    }

    /// Walks an array, the reader on its `[`.
    fn array(&mut self) -> R<()> {
        self.elements(&mut |r: &mut Reader<'a>| r.skip()).map(drop)
    }

    fn literal(&mut self, word: &[u8]) -> R<()> {
        if self.b[self.i..].starts_with(word) {
            self.i += word.len();
            Ok(())
        } else {
            Err(Unsure)
        }
    }

    /// `Value::as_str` of the value (which is walked whatever it is).
    pub(crate) fn str(&mut self) -> R<Option<Cow<'a, str>>> {
        self.ws();
        if self.peek() != Some(b'"') {
            self.skip()?;
            return Ok(None);
        }
        let quote = self.i;
        self.i += 1;
        let (start, escaped) = self.string()?;
        if escaped {
            return decode(&self.b[quote..self.i]).map(|s| Some(Cow::Owned(s)));
        }
        let raw = &self.b[start..self.i - 1];
        std::str::from_utf8(raw)
            .map(|s| Some(Cow::Borrowed(s)))
            .map_err(|_| Unsure)
    }

    /// `Value::as_i64` of the value.
    pub(crate) fn i64(&mut self) -> R<Option<i64>> {
        Ok(match self.int()? {
            Some(Int::Pos(n)) => i64::try_from(n).ok(),
            Some(Int::Neg(n)) => Some(n),
            None => None,
        })
    }

    /// `Value::as_u64` of the value.
    pub(crate) fn u64(&mut self) -> R<Option<u64>> {
        Ok(match self.int()? {
            Some(Int::Pos(n)) => Some(n),
            _ => None,
        })
    }

    /// `Value::as_f64` of the value: a float is parsed by serde_json itself.
    pub(crate) fn f64(&mut self) -> R<Option<f64>> {
        self.ws();
        if !matches!(self.peek(), Some(b'-' | b'0'..=b'9')) {
            self.skip()?;
            return Ok(None);
        }
        let start = self.i;
        let n = self.number()?;
        Ok(match n.int(&self.b[start..self.i]) {
            Some(Int::Pos(n)) => Some(n as f64),
            Some(Int::Neg(n)) => Some(n as f64),
            None => serde_json::from_slice::<serde_json::Value>(&self.b[start..self.i])
                .map_err(|_| Unsure)?
                .as_f64(),
        })
    }

    /// The value as the integer a `Value` holds, `None` when it is no number or a
    /// float (`1.0`, `-0`, an integer past `u64`).
    fn int(&mut self) -> R<Option<Int>> {
        self.ws();
        if !matches!(self.peek(), Some(b'-' | b'0'..=b'9')) {
            self.skip()?;
            return Ok(None);
        }
        let start = self.i;
        let n = self.number()?;
        Ok(n.int(&self.b[start..self.i]))
    }

    /// Reads a number (the reader is on its first byte), serde_json's grammar:
    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    fn number(&mut self) -> R<Number> {
        let b = self.b;
        let mut i = self.i;
        let neg = b[i] == b'-';
        i += neg as usize;
        let digits = |i: &mut usize| {
            let s = *i;
            while let Some(b'0'..=b'9') = b.get(*i) {
                *i += 1;
            }
            *i - s
        };
        let int_start = i;
        let int = digits(&mut i);
        if int == 0 || (b[int_start] == b'0' && int > 1) || int > 300 {
            return Err(Unsure);
        }
        let mut plain = true;
        if b.get(i) == Some(&b'.') {
            i += 1;
            plain = false;
            if digits(&mut i) == 0 {
                return Err(Unsure);
            }
        }
        if let Some(b'e' | b'E') = b.get(i) {
            i += 1;
            plain = false;
            let positive = match b.get(i) {
                Some(b'+') => {
                    i += 1;
                    true
                }
                Some(b'-') => {
                    i += 1;
                    false
                }
                _ => true,
            };
            let s = i;
            let n = digits(&mut i);
            if n == 0 || n > 3 {
                return Err(Unsure);
            }
            let exp: usize = b[s..i].iter().fold(0, |e, d| e * 10 + (d - b'0') as usize);
            if positive && int + exp > 300 {
                return Err(Unsure);
            }
        }
        self.i = i;
        Ok(Number { neg, plain })
    }

    /// Reads a string's body, the reader just past its opening quote: where the body
    /// starts and whether it holds an escape; the reader ends past the closing quote.
    #[inline]
    fn string(&mut self) -> R<(usize, bool)> {
        let b = self.b;
        let start = self.i;
        let mut i = start;
        let mut escaped = false;
        loop {
            i = plain_end(b, i);
            match b.get(i) {
                Some(b'"') => {
                    self.i = i + 1;
                    return Ok((start, escaped));
                }
                Some(b'\\') => {
                    escaped = true;
                    i = escape(b, i)?;
                }
                Some(&c) if c >= 0x80 => {
                    i = utf8(b, i)?;
                    // Text in another script: its characters follow each other.
                    while b.get(i).is_some_and(|&c| c >= 0x80) {
                        i = utf8(b, i)?;
                    }
                }
                // A control byte, or the line's end.
                _ => return Err(Unsure),
            }
        }
    }
}

/// An integer as serde_json reads it into a `Value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Int {
    Pos(u64),
    Neg(i64),
}

/// A number's shape: its sign, and whether it has neither fraction nor exponent.
struct Number {
    neg: bool,
    plain: bool,
}

impl Number {
    /// The integer of `text` (this number), as serde_json's `parse_integer` makes it:
    /// a non-negative one that fits a `u64`, a negative one that fits an `i64` (not
    /// `-0`, a float); `None` for a float.
    fn int(&self, text: &[u8]) -> Option<Int> {
        if !self.plain {
            return None;
        }
        let digits = &text[self.neg as usize..];
        let mut n: u64 = 0;
        for d in digits {
            n = n.checked_mul(10)?.checked_add((d - b'0') as u64)?;
        }
        if !self.neg {
            return Some(Int::Pos(n));
        }
        let neg = (n as i64).wrapping_neg();
        (neg < 0).then_some(Int::Neg(neg))
    }
}

/// Decodes a whole string (its quotes included) with serde_json: exactly the text a
/// `Value` holds.
#[cold]
fn decode(quoted: &[u8]) -> R<String> {
    serde_json::from_slice::<String>(quoted).map_err(|_| Unsure)
}

/// Reads an escape at `b[i] == '\\'`: where it ends.
fn escape(b: &[u8], i: usize) -> R<usize> {
    match b.get(i + 1) {
        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(i + 2),
        Some(b'u') => {
            let n = hex4(b, i + 2)?;
            match n {
                0xD800..=0xDBFF => {
                    // A leading surrogate: a trailing one must follow, escaped.
                    if b.get(i + 6) != Some(&b'\\') || b.get(i + 7) != Some(&b'u') {
                        return Err(Unsure);
                    }
                    match hex4(b, i + 8)? {
                        0xDC00..=0xDFFF => Ok(i + 12),
                        _ => Err(Unsure),
                    }
                }
                0xDC00..=0xDFFF => Err(Unsure),
                _ => Ok(i + 6),
            }
        }
        _ => Err(Unsure),
    }
}

/// The four hex digits at `b[i..i + 4]`.
fn hex4(b: &[u8], i: usize) -> R<u16> {
    let h = b.get(i..i + 4).ok_or(Unsure)?;
    h.iter().try_fold(0u16, |n, &c| {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return Err(Unsure),
        };
        Ok(n << 4 | d as u16)
    })
}

/// Reads the UTF-8 character that starts at `b[i]` (not ASCII): where it ends.
#[inline]
fn utf8(b: &[u8], i: usize) -> R<usize> {
    let len = match b[i] {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => return Err(Unsure),
    };
    // `from_utf8` on one character is the standard's own check (overlong forms,
    // surrogates, past U+10FFFF).
    let c = b.get(i..i + len).ok_or(Unsure)?;
    std::str::from_utf8(c).map_err(|_| Unsure)?;
    Ok(i + len)
}

/// The first byte at or after `i` that a string cannot pass over without a look:
/// `"`, `\`, a control byte (below 0x20) or a byte of a non-ASCII character (0x80 and
/// up); `b.len()` when there is none.
#[inline]
fn plain_end(b: &[u8], i: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        plain_end_sse2(b, i)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        plain_end_bytes(b, i)
    }
}

/// Whether a string's byte needs a look ([`plain_end`]).
#[inline]
fn special(c: u8) -> bool {
    c == b'"' || c == b'\\' || !(0x20..0x80).contains(&c)
}

/// [`plain_end`] a byte at a time: for every target, for the ends of a line, and
/// the test of the other.
#[inline]
fn plain_end_bytes(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && !special(b[i]) {
        i += 1;
    }
    i
}

/// [`plain_end`] 16 bytes at a compare, 64 at a step: with SSE2 (every x86-64 CPU
/// has it), a signed compare below 0x20 takes both the control bytes and those of
/// 0x80 and up (negative as `i8`).
#[cfg(target_arch = "x86_64")]
#[inline]
fn plain_end_sse2(b: &[u8], mut i: usize) -> usize {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_cmplt_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of every x86-64 target; every load reads 16 bytes at `i`
    // (or `i + 16k`) with `i + 16 <= b.len()` (or `i + 64 <= b.len()`) checked first.
    unsafe {
        let q = _mm_set1_epi8(b'"' as i8);
        let s = _mm_set1_epi8(b'\\' as i8);
        let c = _mm_set1_epi8(0x20);
        let mask = |at: usize| {
            let v = _mm_loadu_si128(b.as_ptr().add(at).cast::<__m128i>());
            let m = _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(v, q), _mm_cmpeq_epi8(v, s)),
                _mm_cmplt_epi8(v, c),
            );
            _mm_movemask_epi8(m) as u32 as u64
        };
        // Most strings (keys, ids, short values) end within 16 bytes: one compare.
        if i + 16 <= b.len() {
            let m = mask(i);
            if m != 0 {
                return i + m.trailing_zeros() as usize;
            }
            i += 16;
        }
        while i + 64 <= b.len() {
            let m = mask(i) | mask(i + 16) << 16 | mask(i + 32) << 32 | mask(i + 48) << 48;
            if m != 0 {
                return i + m.trailing_zeros() as usize;
            }
            i += 64;
        }
        while i + 16 <= b.len() {
            let m = mask(i);
            if m != 0 {
                return i + m.trailing_zeros() as usize;
            }
            i += 16;
        }
    }
    plain_end_bytes(b, i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn plain_end_is_the_first_special_byte(
            v in prop::collection::vec(
                prop_oneof![4 => 0x20u8..0x7f, 1 => any::<u8>()], 0..300),
            from in any::<prop::sample::Index>(),
        ) {
            let i = from.index(v.len() + 1);
            prop_assert_eq!(plain_end(&v, i), plain_end_bytes(&v, i));
        }
    }
}
