//! Reading the few fields of a line that the tree needs, without building the line.
//!
//! Indexing a session must not cost a full `serde_json::Value` per line: a 100 MB file
//! would take seconds and hundreds of MB. [`LineHead::parse`] walks the JSON once,
//! keeps only `type`, `id`, `parentId`, `timestamp`, `message.role`, the label fields,
//! the session name and the header's `version`, and skips everything else while still
//! validating it, so a line is accepted exactly when `JSON.parse` would accept it (up to
//! serde_json's nesting limit of 128, past which a line counts as malformed).
//!
//! Keys that occur twice keep their last value, as in JavaScript. Invalid UTF-8 is
//! replaced by U+FFFD first, as Node's UTF-8 decoder does when Pi reads the file.

use super::input::Line;
use super::strict::{Reader, Unsure};
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use std::borrow::Cow;
use std::fmt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// A JSON value reduced to what the index needs to know about a field.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Field<'a> {
    /// The key is not there.
    #[default]
    Missing,
    Null,
    Str(Cow<'a, str>),
    /// A number; its text is kept only for the header's `version`.
    Num(f64),
    /// `true`, `false`, an array or an object.
    Other {
        truthy: bool,
    },
}

impl<'a> Field<'a> {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Field::Str(s) => Some(s),
            _ => None,
        }
    }

    pub(crate) fn into_owned(self) -> Field<'static> {
        match self {
            Field::Missing => Field::Missing,
            Field::Null => Field::Null,
            Field::Str(s) => Field::Str(Cow::Owned(s.into_owned())),
            Field::Num(n) => Field::Num(n),
            Field::Other { truthy } => Field::Other { truthy },
        }
    }
}

/// The fields of one line that indexing uses.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct LineHead<'a> {
    pub ty: Field<'a>,
    pub id: Field<'a>,
    pub parent_id: Field<'a>,
    pub timestamp: Field<'a>,
    /// `message.role`, when `message` is an object.
    pub role: Field<'a>,
    pub target_id: Field<'a>,
    pub label: Field<'a>,
    pub name: Field<'a>,
    pub version: Field<'a>,
    /// `firstKeptEntryIndex` (v1 compactions).
    pub first_kept_index: Field<'a>,
}

/// Why a line is not an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineError {
    /// Only whitespace.
    Blank,
    /// Not valid JSON (the parser's message).
    Malformed(String),
    /// Valid JSON, but not an object (`JSON.parse` accepts it; Pi then fails on it).
    NotAnObject,
}

impl<'a> LineHead<'a> {
    /// Parses one line (without its `\n`; a trailing `\r` is whitespace to JSON).
    ///
    /// `core::strict`'s fast reader reads it first; whatever that one is not sure
    /// serde_json accepts (a syntax error, invalid UTF-8, a lone surrogate, deep
    /// nesting…) is read by serde, which decides, so the answer is serde's on every
    /// line ([`LineHead::by_serde`]), only sooner: most of a line is long strings
    /// (tool output, base64 images) that the fast reader passes 16 bytes at a compare.
    pub fn parse(line: &'a [u8]) -> Result<LineHead<'a>, LineError> {
        parse_line(
            line,
            |l| match fast_head(l) {
                Ok(h) => Ok(h),
                Err(Unsure) => parse_object(l, HeadVisitor),
            },
            |l| parse_object(l, HeadVisitor).map(LineHead::into_owned),
        )
    }

    /// [`LineHead::parse`] by serde alone: what the fast reader must agree with.
    pub fn by_serde(line: &'a [u8]) -> Result<LineHead<'a>, LineError> {
        parse_line(
            line,
            |l| parse_object(l, HeadVisitor),
            |l| parse_object(l, HeadVisitor).map(LineHead::into_owned),
        )
    }

    fn into_owned(self) -> LineHead<'static> {
        LineHead {
            ty: self.ty.into_owned(),
            id: self.id.into_owned(),
            parent_id: self.parent_id.into_owned(),
            timestamp: self.timestamp.into_owned(),
            role: self.role.into_owned(),
            target_id: self.target_id.into_owned(),
            label: self.label.into_owned(),
            name: self.name.into_owned(),
            version: self.version.into_owned(),
            first_kept_index: self.first_kept_index.into_owned(),
        }
    }

    /// Is this a session header (`type: "session"` with a string `id`)?
    pub fn is_header(&self) -> bool {
        self.ty.as_str() == Some("session") && matches!(self.id, Field::Str(_))
    }
}

/// The `visit_*` methods of a visitor that wants objects: any other JSON value (an
/// array, a string, a number, a boolean, `null`) is skipped, and `$v` returned.
macro_rules! skip_other_values {
    ($v:expr) => {
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            Ok($v)
        }
        $crate::model::core::scan::skip_scalar_values!($v);
    };
}
pub(crate) use skip_other_values;

/// The `visit_*` methods for strings, numbers, booleans and `null`: each returns `$v`.
macro_rules! skip_scalar_values {
    ($v:expr) => {
        fn visit_borrowed_str<E>(self, _: &'de str) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($v)
        }
    };
}
pub(crate) use skip_scalar_values;

/// Parses one line (without its `\n`) with `parse`: blank lines are [`LineError::Blank`];
/// a line that fails and is not UTF-8 is decoded with replacement characters, as Node
/// does before `JSON.parse` sees it, and parsed again by `reparse`, which must return
/// owned fields (the decoded text does not outlive this call).
pub(crate) fn parse_line<'a, T>(
    line: &'a [u8],
    parse: impl FnOnce(&'a [u8]) -> Result<T, LineError>,
    reparse: impl FnOnce(&[u8]) -> Result<T, LineError>,
) -> Result<T, LineError> {
    if line.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(LineError::Blank);
    }
    match parse(line) {
        Ok(h) => Ok(h),
        Err(e) => {
            if std::str::from_utf8(line).is_ok() {
                return Err(e);
            }
            let fixed = String::from_utf8_lossy(line).into_owned();
            reparse(fixed.as_bytes())
        }
    }
}

/// Runs `visitor` over one whole JSON text: `Some` is an object's fields, `None` any other
/// JSON value ([`LineError::NotAnObject`]); trailing text makes the line malformed.
pub(crate) fn parse_object<'de, T, V>(line: &'de [u8], visitor: V) -> Result<T, LineError>
where
    V: Visitor<'de, Value = Option<T>>,
{
    let mut de = serde_json::Deserializer::from_slice(line);
    let r = de.deserialize_any(visitor);
    match r {
        Ok(Some(h)) => match de.end() {
            Ok(()) => Ok(h),
            Err(e) => Err(LineError::Malformed(e.to_string())),
        },
        Ok(None) => match de.end() {
            Ok(()) => Err(LineError::NotAnObject),
            Err(e) => Err(LineError::Malformed(e.to_string())),
        },
        Err(e) => Err(LineError::Malformed(e.to_string())),
    }
}

#[derive(Clone, Copy)]
enum Key {
    Type,
    Id,
    ParentId,
    Timestamp,
    Message,
    TargetId,
    Label,
    Name,
    Version,
    FirstKeptIndex,
    Role,
    Other,
}

impl Key {
    fn of(s: &str) -> Key {
        match s {
            "type" => Key::Type,
            "id" => Key::Id,
            "parentId" => Key::ParentId,
            "timestamp" => Key::Timestamp,
            "message" => Key::Message,
            "targetId" => Key::TargetId,
            "label" => Key::Label,
            "name" => Key::Name,
            "version" => Key::Version,
            "firstKeptEntryIndex" => Key::FirstKeptIndex,
            "role" => Key::Role,
            _ => Key::Other,
        }
    }
}

impl<'de> de::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Key, E> {
                Ok(Key::of(s))
            }
        }
        d.deserialize_str(V)
    }
}

/// Any JSON value, kept only when it is a string or a number.
pub(crate) struct FieldSeed;

impl<'de> de::DeserializeSeed<'de> for FieldSeed {
    type Value = Field<'de>;
    // Inlined into each reader of lines (Pi's and Claude Code's), as when it had one.
    #[inline(always)]
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Field<'de>, D::Error> {
        d.deserialize_any(FieldVisitor)
    }
}

struct FieldVisitor;

impl<'de> Visitor<'de> for FieldVisitor {
    type Value = Field<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Field<'de>, E> {
        Ok(Field::Str(Cow::Borrowed(s)))
    }
    fn visit_str<E>(self, s: &str) -> Result<Field<'de>, E> {
        Ok(Field::Str(Cow::Owned(s.to_owned())))
    }
    fn visit_string<E>(self, s: String) -> Result<Field<'de>, E> {
        Ok(Field::Str(Cow::Owned(s)))
    }
    fn visit_unit<E>(self) -> Result<Field<'de>, E> {
        Ok(Field::Null)
    }
    fn visit_none<E>(self) -> Result<Field<'de>, E> {
        Ok(Field::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Field<'de>, E> {
        Ok(Field::Other { truthy: v })
    }
    fn visit_i64<E>(self, v: i64) -> Result<Field<'de>, E> {
        Ok(Field::Num(v as f64))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Field<'de>, E> {
        Ok(Field::Num(v as f64))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Field<'de>, E> {
        Ok(Field::Num(v))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Field<'de>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Field::Other { truthy: true })
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Field<'de>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Field::Other { truthy: true })
    }
}

/// The `message` object: only its `role` matters.
struct RoleSeed;

impl<'de> de::DeserializeSeed<'de> for RoleSeed {
    type Value = Field<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Field<'de>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Field<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Field<'de>, A::Error> {
                let mut role = Field::Missing;
                while let Some(k) = map.next_key::<Key>()? {
                    if let Key::Role = k {
                        role = map.next_value_seed(FieldSeed)?;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(role)
            }
            skip_other_values!(Field::Missing);
        }
        d.deserialize_any(V)
    }
}

/// The top level: `Some(head)` for an object, `None` for any other JSON value.
struct HeadVisitor;

impl<'de> Visitor<'de> for HeadVisitor {
    type Value = Option<LineHead<'de>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut h = LineHead::default();
        while let Some(k) = map.next_key::<Key>()? {
            let slot = match k {
                Key::Type => &mut h.ty,
                Key::Id => &mut h.id,
                Key::ParentId => &mut h.parent_id,
                Key::Timestamp => &mut h.timestamp,
                Key::TargetId => &mut h.target_id,
                Key::Label => &mut h.label,
                Key::Name => &mut h.name,
                Key::Version => &mut h.version,
                Key::FirstKeptIndex => &mut h.first_kept_index,
                Key::Message => {
                    h.role = map.next_value_seed(RoleSeed)?;
                    continue;
                }
                Key::Role | Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            *slot = map.next_value_seed(FieldSeed)?;
        }
        Ok(Some(h))
    }
    skip_other_values!(None);
}

/// The head by the fast reader: `Ok` only for a line that serde_json accepts as an
/// object, with the fields [`HeadVisitor`] reads (the last of a repeated key, a
/// `message` that is no object giving no role).
fn fast_head(line: &[u8]) -> Result<LineHead<'_>, Unsure> {
    let mut h = LineHead::default();
    Reader::object_line(line, |k: &[u8], r: &mut Reader<'_>| {
        let slot = match k {
            b"type" => &mut h.ty,
            b"id" => &mut h.id,
            b"parentId" => &mut h.parent_id,
            b"timestamp" => &mut h.timestamp,
            b"targetId" => &mut h.target_id,
            b"label" => &mut h.label,
            b"name" => &mut h.name,
            b"version" => &mut h.version,
            b"firstKeptEntryIndex" => &mut h.first_kept_index,
            b"message" => {
                let mut role = Field::Missing;
                r.object(&mut |k: &[u8], r: &mut Reader<'_>| {
                    if k == b"role" {
                        role = fast_field(r)?;
                        Ok(())
                    } else {
                        r.skip()
                    }
                })?;
                h.role = role;
                return Ok(());
            }
            _ => return r.skip(),
        };
        *slot = fast_field(r)?;
        Ok(())
    })?;
    Ok(h)
}

/// The value the fast reader is on, as [`FieldSeed`] keeps it.
pub(crate) fn fast_field<'a>(r: &mut Reader<'a>) -> Result<Field<'a>, Unsure> {
    Ok(match r.next_byte() {
        Some(b'"') => Field::Str(r.str()?.ok_or(Unsure)?),
        Some(b'-' | b'0'..=b'9') => Field::Num(r.f64()?.ok_or(Unsure)?),
        Some(b'n') => {
            r.skip()?;
            Field::Null
        }
        Some(c @ (b't' | b'f')) => {
            r.skip()?;
            Field::Other { truthy: c == b't' }
        }
        Some(b'[' | b'{') => {
            r.skip()?;
            Field::Other { truthy: true }
        }
        _ => return Err(Unsure),
    })
}

/// A batch of lines handed on by [`read_line_batches`](super::input::read_line_batches)
/// that add up to fewer bytes than this is parsed by one thread.
pub(crate) const PARALLEL_HEADS_BYTES: usize = 256 << 10;

/// About this many bytes of lines make one run: what either thread takes at a time.
pub(crate) const RUN_BYTES: usize = 64 << 10;

/// Hands `each` every line of `lines` in order, with its [`LineHead::parse`] (`None`
/// for a line too long to hold). Lines parse independently, so when they add up to
/// `parallel_from` bytes or more and the machine has a second CPU, a helper thread
/// takes runs of them (of about `run` bytes) as this one does, and this one hands on every run parsed (by
/// either) as soon as the runs before it were: `each` sees the same lines and heads
/// in the same order either way, only sooner.
///
/// The helper is started by the thread that indexes and inherits its priority: at
/// normal priority for a mount's first load (nothing answers before it), lowered
/// with it when a request's load runs beside other sessions' requests
/// ([`crate::prio::Lowered`]), so that requests are served before both. This thread
/// never waits for more than one line of the helper's: once no run is left to take,
/// it tells the helper to stop and parses again any run the helper had not finished.
pub(crate) fn each_head<'a>(
    lines: &[Line<'a>],
    parallel_from: usize,
    run: usize,
    mut each: impl FnMut(&Line<'a>, Option<&Result<LineHead<'a>, LineError>>),
) -> Shared {
    type Heads<'a> = Vec<Option<Result<LineHead<'a>, LineError>>>;
    let parse = |l: &Line<'a>| match l {
        Line::Whole { bytes, .. } => Some(LineHead::parse(bytes)),
        Line::TooLong { .. } => None,
    };
    let size = |l: &Line<'_>| match l {
        Line::Whole { bytes, .. } => bytes.len() + 1,
        Line::TooLong { .. } => 1,
    };
    let total: usize = lines.iter().map(size).sum();
    if total < parallel_from || !second_cpu() {
        for l in lines {
            each(l, parse(l).as_ref());
        }
        return Shared::default();
    }
    let mut runs = Vec::new();
    let (mut from, mut bytes) = (0, 0);
    for (i, l) in lines.iter().enumerate() {
        bytes += size(l);
        if bytes >= run || i + 1 == lines.len() {
            runs.push(from..i + 1);
            (from, bytes) = (i + 1, 0);
        }
    }
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let take = || {
        let r = next.fetch_add(1, Ordering::Relaxed);
        (r < runs.len()).then_some(r)
    };
    let parse_run = |r: usize| -> Heads<'a> { lines[runs[r].clone()].iter().map(parse).collect() };
    let mut done: Vec<Option<Heads<'a>>> = (0..runs.len()).map(|_| None).collect();
    let mut helped = 0;
    // Runs before this one have been handed on.
    let mut handed = 0;
    let mut hand_on = |done: &mut Vec<Option<Heads<'a>>>, handed: &mut usize, fill: bool| {
        while *handed < runs.len() {
            let heads = match done[*handed].take() {
                Some(h) => h,
                None if fill => parse_run(*handed),
                None => return,
            };
            for (l, h) in lines[runs[*handed].clone()].iter().zip(&heads) {
                each(l, h.as_ref());
            }
            *handed += 1;
        }
    };
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::channel::<(usize, Heads<'a>)>();
        let helper = std::thread::Builder::new()
            .name("index-parse".into())
            .spawn_scoped(scope, || {
                let tx = tx;
                'runs: while let Some(r) = take() {
                    let mut heads = Vec::with_capacity(runs[r].len());
                    for l in &lines[runs[r].clone()] {
                        if stop.load(Ordering::Relaxed) {
                            break 'runs;
                        }
                        heads.push(parse(l));
                    }
                    if tx.send((r, heads)).is_err() {
                        break;
                    }
                }
            });
        while let Some(r) = take() {
            done[r] = Some(parse_run(r));
            while let Ok((r, heads)) = rx.try_recv() {
                done[r] = Some(heads);
                helped += 1;
            }
            hand_on(&mut done, &mut handed, false);
        }
        stop.store(true, Ordering::Relaxed);
        // Without a helper (no thread to be had), this thread has parsed every run.
        if let Ok(h) = helper
            && let Err(p) = h.join()
        {
            std::panic::resume_unwind(p);
        }
        while let Ok((r, heads)) = rx.try_recv() {
            done[r] = Some(heads);
            helped += 1;
        }
    });
    hand_on(&mut done, &mut handed, true);
    Shared {
        runs: runs.len(),
        helped,
    }
}

/// How [`each_head`] shared a batch: into how many runs, how many the helper parsed.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Shared {
    pub(crate) runs: usize,
    pub(crate) helped: usize,
}

/// Whether the process may run on more than one CPU (asked once: the answer reads
/// cgroup files).
pub(crate) fn second_cpu() -> bool {
    static MANY: OnceLock<bool> = OnceLock::new();
    *MANY.get_or_init(|| std::thread::available_parallelism().is_ok_and(|p| p.get() > 1))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn reads_the_tree_fields_only() {
        let l = br#"{"type":"message","id":"aaaaaaa2","parentId":"aaaaaaa1","timestamp":"2026-01-05T09:00:02.000Z","message":{"content":[{"type":"text","text":"role"}],"role":"user","timestamp":1}}"#;
        let h = LineHead::parse(l).unwrap();
        assert_eq!(h.ty.as_str(), Some("message"));
        assert_eq!(h.id.as_str(), Some("aaaaaaa2"));
        assert_eq!(h.parent_id.as_str(), Some("aaaaaaa1"));
        assert_eq!(h.role.as_str(), Some("user"));
        assert!(matches!(h.ty, Field::Str(Cow::Borrowed(_))));
    }

    #[test]
    fn null_parent_and_escaped_strings() {
        let h = LineHead::parse(
            br#"{"type":"label","id":"a\u0062","parentId":null,"targetId":"x","label":"l"}"#,
        )
        .unwrap();
        assert_eq!(h.id.as_str(), Some("ab"));
        assert_eq!(h.parent_id, Field::Null);
        assert_eq!(h.label.as_str(), Some("l"));
    }

    #[test]
    fn duplicate_keys_last_wins() {
        let h = LineHead::parse(br#"{"id":"first","type":"x","id":"second"}"#).unwrap();
        assert_eq!(h.id.as_str(), Some("second"));
    }

    #[test]
    fn crlf_and_whitespace() {
        assert!(LineHead::parse(b"{\"type\":\"x\"}\r").is_ok());
        assert_eq!(LineHead::parse(b"  \r"), Err(LineError::Blank));
        assert_eq!(LineHead::parse(b""), Err(LineError::Blank));
    }

    #[test]
    fn malformed_and_non_objects() {
        assert!(matches!(
            LineHead::parse(b"{\"half\":"),
            Err(LineError::Malformed(_))
        ));
        assert!(matches!(
            LineHead::parse(b"not json"),
            Err(LineError::Malformed(_))
        ));
        assert!(matches!(
            LineHead::parse(b"{} x"),
            Err(LineError::Malformed(_))
        ));
        assert_eq!(LineHead::parse(b"[1,2]"), Err(LineError::NotAnObject));
        assert_eq!(LineHead::parse(b"\"s\""), Err(LineError::NotAnObject));
        // A BOM is not JSON whitespace.
        assert!(matches!(
            LineHead::parse(b"\xEF\xBB\xBF{}"),
            Err(LineError::Malformed(_))
        ));
    }

    #[test]
    fn invalid_utf8_is_replaced_not_rejected() {
        let h = LineHead::parse(b"{\"type\":\"message\",\"id\":\"ab\xFFcd\"}").unwrap();
        assert_eq!(h.id.as_str(), Some("ab\u{FFFD}cd"));
    }

    #[test]
    fn deep_nesting_does_not_crash() {
        let mut s = String::from("{\"type\":\"x\",\"deep\":");
        s.push_str(&"[".repeat(100_000));
        s.push_str(&"]".repeat(100_000));
        s.push('}');
        // serde_json skips ignored values without recursion, so the head parses, as
        // JSON.parse would; a full parse (content) stops at its nesting limit instead.
        assert!(LineHead::parse(s.as_bytes()).is_ok());
        assert!(crate::model::core::js::parse_line(s.as_bytes()).is_err());
    }

    /// Every `.jsonl` file under `dir`, at any depth.
    pub(crate) fn jsonl_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        fn walk(d: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if p.extension().is_some_and(|x| x == "jsonl") {
                    out.push(p);
                }
            }
        }
        let mut files = Vec::new();
        walk(dir, &mut files);
        files
    }

    /// Every `.jsonl` file of the committed fixtures (every agent's, damaged ones
    /// included).
    pub(crate) fn fixture_files() -> Vec<std::path::PathBuf> {
        let files =
            jsonl_files(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"));
        assert!(files.len() > 100, "fixtures not found: {}", files.len());
        files
    }

    /// Every line of the committed fixtures: the fast reader's head is serde's, and
    /// it reads nearly every line itself.
    #[test]
    fn the_fast_head_is_serde_s_on_every_fixture_line() {
        let (mut lines, mut fast) = (0usize, 0usize);
        for f in &fixture_files() {
            let src = std::fs::read(f).unwrap();
            for l in src.split(|&b| b == b'\n') {
                assert_eq!(
                    LineHead::parse(l),
                    LineHead::by_serde(l),
                    "{}: {}",
                    f.display(),
                    String::from_utf8_lossy(&l[..l.len().min(300)])
                );
                lines += 1;
                fast += usize::from(fast_head(l).is_ok());
            }
        }
        // Blank and damaged lines are left to serde; real ones are not.
        assert!(
            fast * 10 > lines * 9,
            "{fast} of {lines} lines read by the fast reader"
        );
    }

    #[test]
    fn the_last_message_gives_the_role() {
        for (l, role) in [
            (
                &br#"{"message":{"role":"user"},"message":"x"}"#[..],
                Field::Missing,
            ),
            (
                br#"{"message":{"role":"user"},"message":{}}"#,
                Field::Missing,
            ),
            (br#"{"message":{"role":"user","role":7}}"#, Field::Num(7.0)),
            (br#"{"message":[{"role":"user"}]}"#, Field::Missing),
            (
                br#"{"message":{"role":"a"},"message":{"role":"b"}}"#,
                Field::Str("b".into()),
            ),
        ] {
            assert_eq!(
                LineHead::parse(l).unwrap().role,
                role,
                "{}",
                String::from_utf8_lossy(l)
            );
            assert!(fast_head(l).is_ok());
            assert_eq!(LineHead::parse(l), LineHead::by_serde(l));
        }
    }

    /// The rates (MB/s) of `parse` and of `by_serde` over the lines of every `.jsonl`
    /// file under `dir`, with the MB read; `same` checks both answers on every line.
    pub(crate) fn head_rates(
        dir: &std::path::Path,
        parse: impl Fn(&[u8]) -> bool,
        by_serde: impl Fn(&[u8]) -> bool,
        same: impl Fn(&[u8]) -> bool,
    ) -> (f64, f64, f64) {
        use std::hint::black_box;
        use std::time::{Duration, Instant};
        let files = jsonl_files(dir);
        let (mut bytes, mut old, mut new) = (0usize, Duration::ZERO, Duration::ZERO);
        for f in &files {
            let src = std::fs::read(f).unwrap();
            let ls: Vec<&[u8]> = src.split(|&b| b == b'\n').collect();
            bytes += src.len();
            let t = Instant::now();
            for l in &ls {
                black_box(by_serde(black_box(l)));
            }
            old += t.elapsed();
            let t = Instant::now();
            for l in &ls {
                black_box(parse(black_box(l)));
            }
            new += t.elapsed();
            for l in &ls {
                assert!(same(l), "{}: {}", f.display(), String::from_utf8_lossy(l));
            }
        }
        let mb = bytes as f64 / 1e6;
        (mb, mb / old.as_secs_f64(), mb / new.as_secs_f64())
    }

    /// How fast [`LineHead::parse`] reads Pi's lines, against serde alone, over the
    /// sessions under `$SESSIONFS_BENCH_PI`:
    /// `SESSIONFS_BENCH_PI=… cargo test --release --lib scan::tests::head_rate -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn head_rate() {
        let Some(dir) = std::env::var_os("SESSIONFS_BENCH_PI") else {
            eprintln!("set SESSIONFS_BENCH_PI to a Pi sessions folder");
            return;
        };
        let (mb, serde, fast) = head_rates(
            std::path::Path::new(&dir),
            |l| LineHead::parse(l).is_ok(),
            |l| LineHead::by_serde(l).is_ok(),
            |l| LineHead::parse(l) == LineHead::by_serde(l),
        );
        eprintln!("{mb:.0} MB: serde {serde:.0} MB/s, fast reader first {fast:.0} MB/s");
    }

    /// Generated lines for a reader of a line's head: objects of the keys it reads
    /// and others, with hard strings and numbers, nesting, and damage.
    pub(crate) mod generated {
        use crate::model::core::scan::{LineHead, fast_head};
        use proptest::prelude::*;

        /// A piece of a line and whether the fast reader must read it itself (valid
        /// JSON, nothing it leaves to serde).
        type Piece = (String, bool);

        /// Pi's keys (and a few others): what [`LineHead`] reads.
        pub(crate) const PI_KEYS: &[&str] = &[
            "type",
            "id",
            "parentId",
            "timestamp",
            "message",
            "message",
            "targetId",
            "label",
            "name",
            "version",
            "firstKeptEntryIndex",
            "role",
            "role",
            "content",
            "ty\\u0070e",
            "\\u0069d",
            "typ",
            "",
        ];

        fn key(keys: &'static [&'static str]) -> impl Strategy<Value = Piece> {
            prop::sample::select(keys).prop_map(|k| (format!("\"{k}\""), true))
        }

        fn scalar() -> impl Strategy<Value = Piece> {
            let plain = prop::sample::select(vec![
                "\"abc\"",
                "\"\"",
                "\"tool_use\"",
                "\"tool_result\"",
                "\"image\"",
                "\"a\\\"b\\\\c\\n\"",
                "\"caf\u{e9} \u{1F600}\"",
                "\"\\u00e9\\ud83d\\ude00\"",
                "\"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==\"",
                "0",
                "-0",
                "12",
                "-12",
                "1.5",
                "1E2",
                "2.5e-3",
                "18446744073709551615",
                "18446744073709551616",
                "-9223372036854775809",
                "null",
                "true",
                "false",
            ])
            .prop_map(|s| (s.to_string(), true));
            // Each refused by serde_json, or left to it by the fast reader.
            let bad = prop::sample::select(vec![
                "\"\\ud800\"",
                "\"\\udc00x\"",
                "\"tab\there\"",
                "\"\\x\"",
                "1e400",
                "01",
                "1.",
                "-",
                "nul",
                "tru",
            ])
            .prop_map(|s| (s.to_string(), false));
            prop_oneof![12 => plain, 1 => bad]
        }

        fn ws() -> impl Strategy<Value = String> {
            prop_oneof![
                12 => prop::sample::select(vec!["", "", "", " ", "\t", "\r\n "]),
                1 => Just("\u{a0}"),
            ]
            .prop_map(str::to_string)
        }

        fn value(keys: &'static [&'static str]) -> impl Strategy<Value = Piece> {
            scalar().prop_recursive(4, 24, 4, move |inner| {
                prop_oneof![
                    prop::collection::vec((ws(), inner.clone()), 0..4).prop_map(|vs| {
                        let plain = vs.iter().all(|(w, v)| v.1 && !w.contains('\u{a0}'));
                        let body: Vec<String> =
                            vs.into_iter().map(|(w, v)| format!("{w}{}", v.0)).collect();
                        (format!("[{}]", body.join(",")), plain)
                    }),
                    prop::collection::vec((key(keys), inner), 0..4).prop_map(|kvs| {
                        let plain = kvs.iter().all(|(_, v)| v.1);
                        let body: Vec<String> = kvs
                            .into_iter()
                            .map(|(k, v)| format!("{}:{}", k.0, v.0))
                            .collect();
                        (format!("{{{}}}", body.join(",")), plain)
                    }),
                ]
            })
        }

        /// A line: an object of generated fields (or, rarely, another value), then
        /// maybe damaged by a cut or a changed byte.
        pub(crate) fn line(
            keys: &'static [&'static str],
        ) -> impl Strategy<Value = (Vec<u8>, bool)> {
            let fields = prop::collection::vec((ws(), key(keys), ws(), value(keys)), 0..8);
            (
                fields,
                prop::bool::weighted(0.2),
                0u8..8,
                any::<prop::sample::Index>(),
                any::<u8>(),
            )
                .prop_map(|(fields, deep, damage, at, byte)| {
                    let mut plain = fields
                        .iter()
                        .all(|(a, _, b, v)| v.1 && !a.contains('\u{a0}') && !b.contains('\u{a0}'));
                    let mut body: Vec<String> = fields
                        .into_iter()
                        .map(|(a, k, b, v)| format!("{a}{}{b}:{}", k.0, v.0))
                        .collect();
                    if deep {
                        // Past the fast reader's depth, within serde_json's or not.
                        let n = 90 + byte as usize;
                        body.push(format!("\"deep\":{}{}", "[".repeat(n), "]".repeat(n)));
                        // (With the line's own object, 100 levels is its limit.)
                        plain &= n < 100;
                    }
                    let mut l = format!("{{{}}}", body.join(",")).into_bytes();
                    match damage {
                        0 => {
                            l.truncate(at.index(l.len() + 1));
                            plain = false;
                        }
                        1 => {
                            let i = at.index(l.len());
                            l[i] = *b"\"\\}],: \x01\xff"
                                .get(byte as usize % 10)
                                .unwrap_or(&byte);
                            plain = false;
                        }
                        2 => {
                            l = b"[{\"type\":\"x\"}]".to_vec();
                            plain = false;
                        }
                        _ => {}
                    }
                    (l, plain)
                })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(4000))]
            #[test]
            fn the_fast_head_is_serde_s((l, plain) in line(PI_KEYS)) {
                prop_assert_eq!(LineHead::parse(&l), LineHead::by_serde(&l));
                if plain {
                    prop_assert!(fast_head(&l).is_ok(), "left to serde: {}", String::from_utf8_lossy(&l));
                }
            }
        }
    }
}
