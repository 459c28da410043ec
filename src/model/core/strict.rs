//! Reading a few fields of a JSON line exactly as `serde_json::Value` would, without
//! building it.
//!
//! Some readers must accept and refuse the very lines a `Value` does, because what
//! they stand in for parses one (a Codex page's lines, Pi's usage records). Each value
//! here goes through `deserialize_any`, the call that building a `Value` makes, so a
//! string is decoded and checked (UTF-8, lone surrogates), a number is parsed and its
//! range checked, and nesting counts against the same limit of 128; what a reader
//! does not keep is walked by [`Skip`]. `serde::de::IgnoredAny` is not that: its scan
//! accepts lone surrogates, numbers out of range and nesting past the limit. A key
//! given twice keeps its last value when the reader assigns as it goes, as in a
//! `Value`'s map.
//!
//! The typed readers give what `Value`'s accessors give: [`Str`] is `as_str`, [`U64`]
//! `as_u64`, [`I64`] `as_i64`, [`F64`] `as_f64`, and [`Obj`] reads an object with a
//! [`FromMap`] (anything else is walked and `None`).
//!
//! # Two paths, one answer
//!
//! Walked through serde, a line costs what serde_json's reader costs: strings are
//! scanned eight bytes at a time and then checked as UTF-8 again, in `deserialize_any`
//! calls through visitors. On the lines of a big home that is most of what a search
//! spends outside matching. So a reader first tries [`Reader`] ([`fast`]), a
//! hand-written walk that passes over a string's plain bytes 16 at a compare, checks
//! its escapes and non-ASCII characters as it meets them, and hands its caller the
//! fields it asks for. It follows serde_json's rules but only vouches for the lines
//! it is sure of: on anything else (a refusal, a lone surrogate, a number near the
//! edge of `f64`, nesting near the limit) it says [`Unsure`] and the caller reads the
//! line again through serde here, which decides. So the fast path need only be right
//! about what it accepts, and the differential test (`tests` below) holds it to
//! `serde_json::from_slice::<Value>` on generated lines, valid and damaged.
//!
//! Pi's and Claude Code's line heads (`core::scan::LineHead`, `claude::head::Head`)
//! try [`Reader`] first too, though their serde path walks what it does not keep
//! with `IgnoredAny`, the laxer scan: a line the reader accepts is one a `Value`
//! accepts, so that scan accepts it too and reads the same fields, and every other
//! line is still that scan's to judge.
//!
//! The other ways measured (on the Codex pages of a 4.2 GB home, `codex::page`'s
//! ignored bench): serde with `IgnoredAny` is not exact (above); finding string ends
//! with `memchr2` and then checking the span for control bytes is two passes where
//! one compare finds all four kinds of byte (a signed compare below 0x20 takes both
//! the control bytes and those of 0x80 and up).

mod fast;

pub(crate) use fast::{Reader, Unsure};

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// Any JSON value, walked and dropped: `deserialize_any` all the way down, so that it
/// fails where building a `serde_json::Value` fails.
pub(crate) struct Skip;

/// The visitor methods for the values a lenient reader does not want: each walks the
/// value with [`Skip`] and gives `$none`.
macro_rules! skip_others {
    ($none:expr; $($m:ident)*) => {
        $(skip_others!(@one $m $none);)*
    };
    (@one bool $none:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> { Ok($none) }
    };
    (@one i64 $none:expr) => {
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> { Ok($none) }
    };
    (@one u64 $none:expr) => {
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> { Ok($none) }
    };
    (@one f64 $none:expr) => {
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> { Ok($none) }
    };
    (@one str $none:expr) => {
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> { Ok($none) }
    };
    (@one unit $none:expr) => {
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> { Ok($none) }
    };
    (@one seq $none:expr) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
            while a.next_element::<Skip>()?.is_some() {}
            Ok($none)
        }
    };
    (@one map $none:expr) => {
        fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
            while a.next_key::<SkipKey>()?.is_some() {
                a.next_value::<Skip>()?;
            }
            Ok($none)
        }
    };
}

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Skip, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Skip;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            skip_others!(Skip; bool i64 u64 f64 str unit seq map);
        }
        d.deserialize_any(V)
    }
}

/// An object's key, read (and checked) as a `serde_json::Value`'s would be, and dropped.
pub(crate) struct SkipKey;

impl<'de> Deserialize<'de> for SkipKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<SkipKey, D::Error> {
        key(d, |_| SkipKey)
    }
}

/// An object's key, read as a `Value`'s map reads it (`deserialize_str`: decoded and
/// checked), made into a `K` by `of`: the body of a reader's key enum's `Deserialize`.
pub(crate) fn key<'de, D: Deserializer<'de>, K>(d: D, of: fn(&str) -> K) -> Result<K, D::Error> {
    struct V<K>(fn(&str) -> K);
    impl<K> Visitor<'_> for V<K> {
        type Value = K;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a key")
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<K, E> {
            Ok((self.0)(s))
        }
    }
    d.deserialize_str(V(of))
}

/// `Value::as_str`.
pub(crate) struct Str<'a>(pub(crate) Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Str<'a>, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Str<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Str<'a>, E> {
                Ok(Str(Some(Cow::Borrowed(s))))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Str<'a>, E> {
                Ok(Str(Some(Cow::Owned(s.to_owned()))))
            }
            skip_others!(Str(None); bool i64 u64 f64 unit seq map);
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// `Value::as_u64`: a non-negative integer (a float, even a whole one, is none).
pub(crate) struct U64(pub(crate) Option<u64>);

impl<'de> Deserialize<'de> for U64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<U64, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = U64;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<U64, E> {
                Ok(U64(Some(n)))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<U64, E> {
                Ok(U64(u64::try_from(n).ok()))
            }
            skip_others!(U64(None); bool f64 str unit seq map);
        }
        d.deserialize_any(V)
    }
}

/// `Value::as_i64`: an integer that fits (a float, even a whole one, is none).
pub(crate) struct I64(pub(crate) Option<i64>);

impl<'de> Deserialize<'de> for I64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<I64, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = I64;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<I64, E> {
                Ok(I64(Some(n)))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<I64, E> {
                Ok(I64(i64::try_from(n).ok()))
            }
            skip_others!(I64(None); bool f64 str unit seq map);
        }
        d.deserialize_any(V)
    }
}

/// `Value::as_f64`: any number (a non-finite one would be `null` in a `serde_json::Value`).
pub(crate) struct F64(pub(crate) Option<f64>);

impl<'de> Deserialize<'de> for F64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<F64, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = F64;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<F64, E> {
                Ok(F64(Some(n as f64)))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<F64, E> {
                Ok(F64(Some(n as f64)))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<F64, E> {
                Ok(F64(n.is_finite().then_some(n)))
            }
            skip_others!(F64(None); bool str unit seq map);
        }
        d.deserialize_any(V)
    }
}

/// An object read into `T` by its map visitor; anything else is walked and `None`.
pub(crate) struct Obj<T>(pub(crate) Option<T>);

/// What reads one object's fields from a map.
pub(crate) trait FromMap<'de>: Sized {
    fn from_map<A: MapAccess<'de>>(a: A) -> Result<Self, A::Error>;
}

impl<'de, T: FromMap<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Obj<T>, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: FromMap<'de>> Visitor<'de> for V<T> {
            type Value = Obj<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<Obj<T>, A::Error> {
                T::from_map(a).map(|t| Obj(Some(t)))
            }
            skip_others!(Obj(None); bool i64 u64 f64 str unit seq);
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests;
