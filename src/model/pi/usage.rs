//! Pi: what each entry records.
//!
//! * An assistant `message`: `message.usage` (`input`, `output`, `cacheRead`,
//!   `cacheWrite`) and the cost Pi recorded, `usage.cost.total`, under
//!   `provider/model`.
//! * A `usage` entry (Pi 1.6): a request Pi made on its own, outside the conversation
//!   (the idle cache warmer, PI-FORMAT.md §16.3). Its `usage` has the same shape. It is
//!   a request of its own, not a copy of a message's usage, so it adds to the total:
//!   nothing is counted twice.
//! * A `compaction` or `branch_summary` with `usage` (Pi 1.6 records the summary
//!   request's): also a request of its own.
//!
//! A usage without `cost` (very old files) is priced from the table, like Claude
//! Code's; an unknown model then has an unknown cost.
//!
//! Pi's `/fork` and `/clone` copy the path into a new file with the entries' ids and
//! timestamps (PI-FORMAT.md §9.5): `sessionfs usage` counts such a copy once over the
//! files it reads, keyed by id and timestamp (not for v1 files, whose ids are made up).

use crate::model::core::session::Session;
use crate::model::core::strict::{self, F64, FromMap, Obj, Reader, Skip, Str, U64, Unsure};
use crate::model::core::usage::prices::Prices;
use crate::model::core::usage::{Record, Source, Table, Tokens};
use serde::de::{Deserialize, Deserializer, MapAccess};
use serde_json::Value;
use std::borrow::Cow;

/// Fills `t.own` for every entry of a Pi session.
///
/// The session is read in large blocks ([`Session::for_each_entry_bytes`]); a line
/// without `"usage"` is passed over unparsed, and the others are read into
/// [`Fields`], the few values [`record_of`] looks at, instead of a whole [`Value`];
/// a large file is shared out by bytes over the CPUs. At 100k entries that is what
/// makes the first `cost` of a mount quick (it was one `pread` and one [`Value`] per
/// entry, on the request's thread). It reads what the per-entry path
/// ([`Session::entry_value`], then [`record`]) reads, for every line: the same parser
/// runs over the whole line and rejects the same lines (see [`Fields`]), and Pi's
/// migration touches none of these fields.
pub fn fill(s: &Session, prices: &Prices, t: &mut Table) {
    let nodes: Vec<u32> = (0..s.entries().len() as u32)
        .filter(|&i| s.entry(i).is_node())
        .collect();
    let threads = if s.scanned_bytes() < PARALLEL_BYTES {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
    };
    // Runs of about equal bytes (a Pi session's entries lie in file order).
    let off = |k: usize| s.entry(nodes[k]).offset;
    let mut bounds = vec![0usize];
    if let (Some(_), Some(&last)) = (nodes.first(), nodes.last()) {
        let (a, b) = (off(0), s.entry(last).offset);
        for k in 1..threads as u64 {
            let at = a + (b - a) * k / threads as u64;
            let i = nodes.partition_point(|&j| s.entry(j).offset < at);
            if i > *bounds.last().unwrap_or(&0) && i < nodes.len() {
                bounds.push(i);
            }
        }
    }
    bounds.push(nodes.len());
    let parts: Vec<Vec<Found>> = if bounds.len() <= 2 {
        vec![read_run(s, prices, &nodes)]
    } else {
        std::thread::scope(|scope| {
            // This thread reads the first run itself; helpers, below the request
            // threads (`crate::prio`), the others.
            let handles: Vec<_> = bounds[1..]
                .windows(2)
                .map(|w| {
                    let run = &nodes[w[0]..w[1]];
                    scope.spawn(move || {
                        crate::prio::helper();
                        read_run(s, prices, run)
                    })
                })
                .collect();
            let mut parts = vec![read_run(s, prices, &nodes[..bounds[1]])];
            parts.extend(handles.into_iter().map(|h| h.join().expect("usage thread")));
            parts
        })
    };
    t.reply_keys
        .reserve(parts.iter().flatten().filter(|f| f.2.is_some()).count());
    for (i, r, key) in parts.into_iter().flatten() {
        t.own[i as usize] = Some(r);
        if let Some(key) = key {
            t.reply_keys.insert(i, key);
        }
    }
}

/// Below this many bytes a session's usage is read on one thread.
const PARALLEL_BYTES: u64 = 8 << 20;

/// An entry with a record, and the key of its request when it has one.
type Found = (u32, Record, Option<(String, String)>);

/// The records of the entries of `run`, in its order.
fn read_run(s: &Session, prices: &Prices, run: &[u32]) -> Vec<Found> {
    let usage = memchr::memmem::Finder::new(b"\"usage\"");
    let mut out = Vec::new();
    s.for_each_entry_bytes(run, |i, bytes| {
        if usage.find(bytes).is_none() {
            return;
        }
        let Some(f) = Fields::parse(bytes) else {
            return;
        };
        let Some(r) = record_of(&f, prices) else {
            return;
        };
        // Pi's `/fork` and `/clone` copy entries into a new file with their ids and
        // timestamps: the same request, to be counted once over several files.
        let key = match &f.timestamp {
            Some(ts) if !s.is_v1() => Some((format!("pi:{}", s.id_string(i)), ts.to_string())),
            _ => None,
        };
        out.push((i, r, key));
    });
    out
}

/// The record of one Pi entry (as Pi holds it in memory, migrated), if it has one.
pub fn record(v: &Value, prices: &Prices) -> Option<Record> {
    Fields::deserialize(v)
        .ok()
        .and_then(|f| record_of(&f, prices))
}

/// The record of an entry read into [`Fields`]: what a record is, for both paths.
fn record_of(f: &Fields<'_>, prices: &Prices) -> Option<Record> {
    let (u, model, source) = match f.kind.as_deref()? {
        "message" => {
            let m = f.message.as_ref()?;
            if m.role.as_deref() != Some("assistant") {
                return None;
            }
            (
                m.usage.as_ref()?,
                model_of(&m.provider, &m.model),
                Source::Message,
            )
        }
        "usage" => (
            f.usage.as_ref()?,
            model_of(&f.provider, &f.model),
            Source::UsageEntry,
        ),
        "compaction" | "branch_summary" => (
            f.usage.as_ref()?,
            model_of(&f.provider, &f.model),
            Source::Summary,
        ),
        _ => return None,
    };
    let n = |k: Option<u64>| k.unwrap_or(0);
    let tokens = Tokens {
        input: n(u.input),
        output: n(u.output),
        cache_read: n(u.cache_read),
        // Saturating: a damaged count near `u64::MAX` must neither panic a debug
        // build nor wrap to a small wrong number.
        cache_write: n(u.cache_write).saturating_add(n(u.cache_write_1h)),
    };
    let recorded = u.cost_total;
    let bare = model.rsplit_once('/').map_or(model.as_str(), |(_, m)| m);
    let cost = recorded.or_else(|| prices.rates(bare).map(|r| r.cost(&tokens)));
    Some(Record {
        model,
        source,
        tokens,
        cost,
        recorded: recorded.is_some(),
    })
}

/// `provider/model` as Pi names it (`model` alone without a provider; `unrecorded`
/// without either: a compaction or branch summary records no model).
fn model_of(p: &Option<Cow<'_, str>>, m: &Option<Cow<'_, str>>) -> String {
    match (p, m) {
        (Some(p), Some(m)) => format!("{p}/{m}"),
        (None, Some(m)) => m.to_string(),
        _ => "unrecorded".to_string(),
    }
}

/// What [`record_of`] reads of an entry, each as [`Value`]'s accessors would give it:
/// `Value::as_str` (a string, else `None`), `Value::as_u64`, `Value::as_f64`, and an
/// object field only when it is an object. Read from bytes, every value goes through
/// `deserialize_any`, as a [`Value`] would be built, and what is not kept is walked by
/// [`Skip`] (not `IgnoredAny`, whose scan accepts lone surrogates, numbers out of range
/// and nesting past the depth limit, all of which fail [`Value`]): so a line is
/// rejected exactly when [`Session::entry_value`] rejects it. A key given twice keeps
/// its last value, as in a [`Value`]'s map.
#[derive(Default, Debug, PartialEq)]
pub(crate) struct Fields<'a> {
    kind: Option<Cow<'a, str>>,
    message: Option<Message<'a>>,
    provider: Option<Cow<'a, str>>,
    model: Option<Cow<'a, str>>,
    usage: Option<UsageFields>,
    timestamp: Option<Cow<'a, str>>,
}

#[derive(Default, Debug, PartialEq)]
struct Message<'a> {
    role: Option<Cow<'a, str>>,
    provider: Option<Cow<'a, str>>,
    model: Option<Cow<'a, str>>,
    usage: Option<UsageFields>,
}

#[derive(Default, Debug, PartialEq)]
struct UsageFields {
    input: Option<u64>,
    output: Option<u64>,
    cache_read: Option<u64>,
    cache_write: Option<u64>,
    cache_write_1h: Option<u64>,
    /// `cost.total`, when `cost` is an object.
    cost_total: Option<f64>,
}

impl<'a> Fields<'a> {
    /// A line as [`crate::model::core::js::parse_line`] reads it: strictly when it is
    /// UTF-8, else with its bad bytes replaced (the replacement is the only case that
    /// allocates the line again). `None` when that parse fails.
    pub(crate) fn parse(bytes: &'a [u8]) -> Option<Fields<'a>> {
        match std::str::from_utf8(bytes) {
            // The fast reader first; serde decides what it is not sure of.
            Ok(text) => match Fields::fast(bytes) {
                Ok(f) => Some(f),
                Err(Unsure) => serde_json::from_str(text).ok(),
            },
            Err(_) => {
                let fixed = String::from_utf8_lossy(bytes).into_owned();
                let f: Fields<'_> = serde_json::from_str(&fixed).ok()?;
                Some(f.into_owned())
            }
        }
    }

    /// [`Fields`] by `core::strict`'s fast reader: `Ok` only for an object line that
    /// serde_json accepts, read as the serde path reads it.
    fn fast(bytes: &'a [u8]) -> Result<Fields<'a>, Unsure> {
        let mut f = Fields::default();
        Reader::object_line(bytes, |k: &[u8], r: &mut Reader<'a>| {
            match k {
                b"type" => f.kind = r.str()?,
                b"message" => {
                    let mut m = Message::default();
                    let is = r.object(&mut |k: &[u8], r: &mut Reader<'a>| {
                        match k {
                            b"role" => m.role = r.str()?,
                            b"provider" => m.provider = r.str()?,
                            b"model" => m.model = r.str()?,
                            b"usage" => m.usage = UsageFields::fast(r)?,
                            _ => r.skip()?,
                        }
                        Ok(())
                    })?;
                    f.message = is.then_some(m);
                }
                b"provider" => f.provider = r.str()?,
                b"model" => f.model = r.str()?,
                b"usage" => f.usage = UsageFields::fast(r)?,
                b"timestamp" => f.timestamp = r.str()?,
                _ => r.skip()?,
            }
            Ok(())
        })?;
        Ok(f)
    }

    fn into_owned(self) -> Fields<'static> {
        let own = |c: Option<Cow<'_, str>>| c.map(|c| Cow::Owned(c.into_owned()));
        Fields {
            kind: own(self.kind),
            message: self.message.map(|m| Message {
                role: own(m.role),
                provider: own(m.provider),
                model: own(m.model),
                usage: m.usage,
            }),
            provider: own(self.provider),
            model: own(self.model),
            usage: self.usage,
            timestamp: own(self.timestamp),
        }
    }
}

/// The keys [`Fields`] and the objects in it look at.
enum Key {
    Type,
    Message,
    Role,
    Provider,
    Model,
    Usage,
    Timestamp,
    Input,
    Output,
    CacheRead,
    CacheWrite,
    CacheWrite1h,
    Cost,
    Total,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        strict::key(d, |s| match s {
            "type" => Key::Type,
            "message" => Key::Message,
            "role" => Key::Role,
            "provider" => Key::Provider,
            "model" => Key::Model,
            "usage" => Key::Usage,
            "timestamp" => Key::Timestamp,
            "input" => Key::Input,
            "output" => Key::Output,
            "cacheRead" => Key::CacheRead,
            "cacheWrite" => Key::CacheWrite,
            "cacheWrite1h" => Key::CacheWrite1h,
            "cost" => Key::Cost,
            "total" => Key::Total,
            _ => Key::Other,
        })
    }
}

impl<'de: 'a, 'a> FromMap<'de> for Fields<'a> {
    fn from_map<A: MapAccess<'de>>(mut a: A) -> Result<Self, A::Error> {
        let mut f = Fields::default();
        while let Some(k) = a.next_key::<Key>()? {
            match k {
                Key::Type => f.kind = a.next_value::<Str>()?.0,
                Key::Message => f.message = a.next_value::<Obj<Message>>()?.0,
                Key::Provider => f.provider = a.next_value::<Str>()?.0,
                Key::Model => f.model = a.next_value::<Str>()?.0,
                Key::Usage => f.usage = a.next_value::<Obj<UsageFields>>()?.0,
                Key::Timestamp => f.timestamp = a.next_value::<Str>()?.0,
                _ => {
                    a.next_value::<Skip>()?;
                }
            }
        }
        Ok(f)
    }
}

impl<'de: 'a, 'a> FromMap<'de> for Message<'a> {
    fn from_map<A: MapAccess<'de>>(mut a: A) -> Result<Self, A::Error> {
        let mut m = Message::default();
        while let Some(k) = a.next_key::<Key>()? {
            match k {
                Key::Role => m.role = a.next_value::<Str>()?.0,
                Key::Provider => m.provider = a.next_value::<Str>()?.0,
                Key::Model => m.model = a.next_value::<Str>()?.0,
                Key::Usage => m.usage = a.next_value::<Obj<UsageFields>>()?.0,
                _ => {
                    a.next_value::<Skip>()?;
                }
            }
        }
        Ok(m)
    }
}

impl UsageFields {
    /// The value as [`Obj<UsageFields>`] reads it, by the fast reader.
    fn fast(r: &mut Reader<'_>) -> Result<Option<UsageFields>, Unsure> {
        let mut u = UsageFields::default();
        let is = r.object(&mut |k: &[u8], r: &mut Reader<'_>| {
            match k {
                b"input" => u.input = r.u64()?,
                b"output" => u.output = r.u64()?,
                b"cacheRead" => u.cache_read = r.u64()?,
                b"cacheWrite" => u.cache_write = r.u64()?,
                b"cacheWrite1h" => u.cache_write_1h = r.u64()?,
                b"cost" => {
                    let mut total = None;
                    let is = r.object(&mut |k: &[u8], r: &mut Reader<'_>| {
                        match k {
                            b"total" => total = r.f64()?,
                            _ => r.skip()?,
                        }
                        Ok(())
                    })?;
                    u.cost_total = total.filter(|_| is);
                }
                _ => r.skip()?,
            }
            Ok(())
        })?;
        Ok(is.then_some(u))
    }
}

/// `cost` as far as [`UsageFields`] reads it: its `total`.
struct CostTotal(Option<f64>);

impl<'de> FromMap<'de> for CostTotal {
    fn from_map<A: MapAccess<'de>>(mut a: A) -> Result<Self, A::Error> {
        let mut t = None;
        while let Some(k) = a.next_key::<Key>()? {
            match k {
                Key::Total => t = a.next_value::<F64>()?.0,
                _ => {
                    a.next_value::<Skip>()?;
                }
            }
        }
        Ok(CostTotal(t))
    }
}

impl<'de> FromMap<'de> for UsageFields {
    fn from_map<A: MapAccess<'de>>(mut a: A) -> Result<Self, A::Error> {
        let mut u = UsageFields::default();
        while let Some(k) = a.next_key::<Key>()? {
            match k {
                Key::Input => u.input = a.next_value::<U64>()?.0,
                Key::Output => u.output = a.next_value::<U64>()?.0,
                Key::CacheRead => u.cache_read = a.next_value::<U64>()?.0,
                Key::CacheWrite => u.cache_write = a.next_value::<U64>()?.0,
                Key::CacheWrite1h => u.cache_write_1h = a.next_value::<U64>()?.0,
                Key::Cost => u.cost_total = a.next_value::<Obj<CostTotal>>()?.0.and_then(|c| c.0),
                _ => {
                    a.next_value::<Skip>()?;
                }
            }
        }
        Ok(u)
    }
}

/// A whole line: an object read into [`Fields`]; any other JSON value is a line
/// without fields (it has no `type`).
impl<'de: 'a, 'a> Deserialize<'de> for Fields<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Fields<'a>, D::Error> {
        Obj::<Fields<'a>>::deserialize(d).map(|o| o.0.unwrap_or_default())
    }
}

#[cfg(test)]
#[path = "usage_tests.rs"]
mod tests;
