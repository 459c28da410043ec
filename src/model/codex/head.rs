//! What a page's first line, its `session_meta`, says, read once.
//!
//! Every page starts with a `session_meta` line of some 20 KB (the base instructions),
//! and three readers want something of it: the catalog its `cwd` (a thread's project),
//! a thread's index and the search its `history_base` (the base page its history reads),
//! and the search whether the page is Codex's at all (to pick the prefilter's rules). A
//! search reads every page of a home, so each reading was a pass over those 20 KB per
//! page; [`PageHead`] takes the three from one pass ([`PageHead::of_line`]), and while a
//! process reads the files as they are when it starts (`files::list_once`, a search),
//! [`head`] reads each page's first line once.
//!
//! Each fact keeps the meaning of its reader: the one pass is a strict reading (one
//! `type`, one `payload` object, its `id`, `cwd` and `history_base` once each and of
//! the expected types); a line it refuses is read again by each fact's own reading
//! ([`cwd_in`], [`history_base_of`]), which decide the odd cases as before.

use super::{files, page};
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// The longest first line read for its `cwd` (a `session_meta` line holds the base
/// instructions, about 20 KB): a longer one names no project.
pub const MAX_META: u64 = 4 << 20;

/// The longest first line read for its `history_base`.
const MAX_BASE: u64 = 64 << 20;

/// What a page's first line says.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PageHead {
    /// `payload.cwd` of a `session_meta` line ([`cwd_in`]), for a line shorter than
    /// [`MAX_META`].
    pub cwd: Option<String>,
    /// The page id its `history_base` names ([`history_base_of`]).
    pub base: Option<String>,
    /// The line is surely a `session_meta` line: valid UTF-8, JSON, one `type`, which
    /// is `session_meta`, and a `payload` object. `false` says nothing (a line the
    /// strict reading refuses may still be one).
    pub surely_meta: bool,
    /// The first line's length with its `\n`, when it is surely a `session_meta` line
    /// of a plain page read from its file ([`PageHead::read`]): the bytes a search may
    /// pass over, since they are no entry.
    pub meta_len: Option<u64>,
}

impl PageHead {
    /// The facts of `line` (a first line, without its `\n`).
    pub fn of_line(line: &[u8]) -> PageHead {
        let long = line.len() as u64 >= MAX_META;
        match strict(line) {
            Some(mut h) => {
                if long {
                    h.cwd = None;
                }
                h
            }
            None => PageHead {
                cwd: if long { None } else { cwd_in(line) },
                base: history_base_of(line),
                surely_meta: false,
                meta_len: None,
            },
        }
    }

    /// The facts of the page at `path` (a `.jsonl.zst` decompressed as far as its first
    /// line); nothing for a page whose first line cannot be read or is not complete.
    pub fn read(path: &Path) -> PageHead {
        match files::first_line(path, MAX_BASE) {
            Some(line) => {
                let mut h = PageHead::of_line(&line);
                if h.surely_meta && path.extension().is_some_and(|e| e == "jsonl") {
                    h.meta_len = Some(line.len() as u64 + 1);
                }
                h
            }
            None => PageHead::default(),
        }
    }
}

/// [`PageHead::read`], once per page while the files are taken as they are
/// (`files::list_once`), and then from the memo of heads when the page has not
/// changed since an earlier search read it (`core::memo`); read each time otherwise
/// (a mount sees files change).
pub fn head(path: &Path) -> Arc<PageHead> {
    type Heads = Mutex<HashMap<PathBuf, Arc<PageHead>>>;
    static HEADS: OnceLock<Heads> = OnceLock::new();
    if !files::listing_once() {
        return Arc::new(PageHead::read(path));
    }
    let heads = HEADS.get_or_init(Default::default);
    let lock = || heads.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(h) = lock().get(path) {
        return h.clone();
    }
    // Kept between searches while the page is as it was (`core::memo`): the head is
    // the page's first line's, and its name's.
    let h = Arc::new(crate::model::core::memo::get(
        "codex-page-head",
        path,
        || PageHead::read(path),
    ));
    lock().insert(path.to_path_buf(), h.clone());
    h
}

/// The one strict pass of [`PageHead::of_line`]; `None` when the line is not read
/// this way.
fn strict(line: &[u8]) -> Option<PageHead> {
    use serde::Deserialize;
    #[derive(Deserialize)]
    struct Top<'a> {
        #[serde(borrow, rename = "type")]
        ty: Option<Cow<'a, str>>,
        #[serde(borrow)]
        payload: Option<Payload<'a>>,
    }
    /// An object only, each wanted key once.
    struct Payload<'a> {
        id: Option<Cow<'a, str>>,
        cwd: Option<Cow<'a, str>>,
        history_base: Option<Base<'a>>,
    }
    #[derive(Deserialize)]
    struct Base<'a> {
        #[serde(borrow)]
        thread_id: Option<Cow<'a, str>>,
        end_byte_offset: Option<u64>,
    }
    impl<'de: 'a, 'a> Deserialize<'de> for Payload<'a> {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V<'a>(std::marker::PhantomData<&'a ()>);
            impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
                type Value = Payload<'a>;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<M: serde::de::MapAccess<'de>>(
                    self,
                    mut m: M,
                ) -> Result<Payload<'a>, M::Error> {
                    use serde::de::Error;
                    let (mut id, mut cwd, mut hb) = (None, None, None);
                    while let Some(k) = m.next_key::<Cow<'de, str>>()? {
                        match &*k {
                            "id" if id.is_some() => return Err(M::Error::duplicate_field("id")),
                            "id" => id = Some(m.next_value::<Option<Cow<'de, str>>>()?),
                            "cwd" if cwd.is_some() => {
                                return Err(M::Error::duplicate_field("cwd"));
                            }
                            "cwd" => cwd = Some(m.next_value::<Cow<'de, str>>()?),
                            "history_base" if hb.is_some() => {
                                return Err(M::Error::duplicate_field("history_base"));
                            }
                            "history_base" => hb = Some(m.next_value::<Option<Base<'de>>>()?),
                            _ => {
                                m.next_value::<serde::de::IgnoredAny>()?;
                            }
                        }
                    }
                    Ok(Payload {
                        id: id.flatten(),
                        cwd,
                        history_base: hb.flatten(),
                    })
                }
            }
            d.deserialize_map(V(std::marker::PhantomData))
        }
    }
    let t: Top = serde_json::from_slice(line).ok()?;
    let meta = t.ty.as_deref() == Some("session_meta");
    let surely_meta = meta && t.payload.is_some() && std::str::from_utf8(line).is_ok();
    let p = t.payload.filter(|_| meta);
    let base = p.as_ref().and_then(|p| {
        p.id.as_ref()?;
        let b = p.history_base.as_ref()?;
        b.end_byte_offset?;
        b.thread_id.as_deref().map(str::to_string)
    });
    Some(PageHead {
        cwd: p
            .as_ref()
            .and_then(|p| p.cwd.as_deref().map(str::to_string)),
        base,
        surely_meta,
        meta_len: None,
    })
}

/// The `cwd` of a `session_meta` line. The line (some 20 KB of instructions) is walked
/// without being built: a search asks this of every thread.
pub fn cwd_in(line: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Meta<'a> {
        #[serde(borrow, rename = "type")]
        ty: Option<Cow<'a, str>>,
        #[serde(borrow)]
        payload: Option<Payload<'a>>,
    }
    /// A payload's `cwd`: an object only (a derived reading would take `["/a"]` too).
    struct Payload<'a> {
        cwd: Option<Cow<'a, str>>,
    }
    impl<'de: 'a, 'a> serde::Deserialize<'de> for Payload<'a> {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V<'a>(std::marker::PhantomData<&'a ()>);
            impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
                type Value = Payload<'a>;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<M: serde::de::MapAccess<'de>>(
                    self,
                    mut m: M,
                ) -> Result<Payload<'a>, M::Error> {
                    let mut cwd = None;
                    while let Some(k) = m.next_key::<Cow<'de, str>>()? {
                        if k == "cwd" {
                            if cwd.is_some() {
                                return Err(serde::de::Error::duplicate_field("cwd"));
                            }
                            cwd = Some(m.next_value::<Cow<'de, str>>()?);
                        } else {
                            m.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                    Ok(Payload { cwd })
                }
            }
            d.deserialize_map(V(std::marker::PhantomData))
        }
    }
    match serde_json::from_slice::<Meta>(line) {
        Ok(m) => {
            if m.ty.as_deref() != Some("session_meta") {
                return None;
            }
            m.payload?.cwd.map(Cow::into_owned)
        }
        // What this reading refuses (a key twice, a field of another type) is read
        // whole, where the last of two keys counts and a `cwd` that is not a string
        // is none.
        Err(_) => {
            let v: serde_json::Value = serde_json::from_slice(line).ok()?;
            if v.get("type")?.as_str()? != "session_meta" {
                return None;
            }
            Some(v.get("payload")?.get("cwd")?.as_str()?.to_string())
        }
    }
}

/// The page id a `session_meta` line's `history_base` names, if any (as
/// `page::SessionMeta` reads it: `payload.history_base.thread_id`, with an
/// `end_byte_offset`, in a `session_meta` with an id). The line is only walked, not
/// built.
pub fn history_base_of(line: &[u8]) -> Option<String> {
    use serde::Deserialize;
    #[derive(Deserialize)]
    struct Line<'a> {
        #[serde(borrow, rename = "type")]
        ty: Option<Cow<'a, str>>,
        #[serde(borrow)]
        payload: Option<Payload<'a>>,
    }
    #[derive(Deserialize)]
    struct Payload<'a> {
        #[serde(borrow)]
        id: Option<Cow<'a, str>>,
        #[serde(borrow)]
        history_base: Option<Base<'a>>,
    }
    #[derive(Deserialize)]
    struct Base<'a> {
        #[serde(borrow)]
        thread_id: Option<Cow<'a, str>>,
        end_byte_offset: Option<u64>,
    }
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let Ok(l) = serde_json::from_slice::<Line>(line) else {
        // Whatever this reading refuses (a field of another type, a key twice), the
        // page parser decides.
        let mut b = line.to_vec();
        b.push(b'\n');
        return page::parse(&b).meta?.history_base.map(|h| h.page_id);
    };
    let p = l
        .payload
        .filter(|_| l.ty.as_deref() == Some("session_meta"))?;
    p.id?;
    let b = p.history_base?;
    b.end_byte_offset?;
    b.thread_id.map(Cow::into_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_bases() {
        let meta = |p: &str| format!(r#"{{"timestamp":"t","type":"session_meta","payload":{p}}}"#);
        let base =
            r#""history_base":{"thread_id":"b1","end_ordinal_exclusive":3,"end_byte_offset":10}"#;
        let of = |l: String| history_base_of(l.as_bytes());
        assert_eq!(
            of(meta(&format!(r#"{{"id":"t1",{base}}}"#))),
            Some("b1".into())
        );
        assert_eq!(of(meta(r#"{"id":"t1"}"#)), None);
        // No id, or not a session_meta: no base, as the page parser reads it.
        assert_eq!(of(meta(&format!("{{{base}}}"))), None);
        assert_eq!(
            of(format!(
                r#"{{"type":"event_msg","payload":{{"id":"t1",{base}}}}}"#
            )),
            None
        );
        // What this reading refuses, the page parser decides: a key twice (the last
        // one counts), an offset written as a float.
        assert_eq!(
            of(meta(&format!(
                r#"{{"id":"t1","history_base":null,{base}}}"#
            ))),
            Some("b1".into())
        );
        assert_eq!(
            of(meta(
                r#"{"id":"t1","history_base":{"thread_id":"b1","end_byte_offset":1.5}}"#
            )),
            None
        );
        assert_eq!(
            of(meta(
                r#"{"id":"t\u0031","history_base":{"thread_id":"b\u0031","end_byte_offset":4}}"#
            )),
            Some("b1".into())
        );
    }

    /// The one pass agrees with each fact's own reading, on lines it reads and on
    /// lines it leaves to them.
    #[test]
    fn one_pass_reads_as_each_reader() {
        let base = r#""history_base":{"thread_id":"b1","end_byte_offset":10}"#;
        let lines = [
            format!(r#"{{"type":"session_meta","payload":{{"id":"t","cwd":"/a",{base}}}}}"#),
            format!(r#"{{"type":"session_meta","payload":{{"cwd":"/a",{base}}}}}"#),
            r#"{"type":"session_meta","payload":{"id":"t","cwd":"/a\u0062","x":[1,{}]}}"#.into(),
            r#"{"type":"session_meta","payload":{"id":null,"cwd":"/a"}}"#.into(),
            r#"{"type":"session_meta","payload":{"cwd":null}}"#.into(),
            r#"{"type":"session_meta","payload":{"cwd":3}}"#.into(),
            r#"{"type":"session_meta","payload":{"cwd":"/a","cwd":"/b"}}"#.into(),
            format!(r#"{{"type":"session_meta","payload":{{"id":"t","history_base":null,{base}}}}}"#),
            r#"{"type":"session_meta","payload":["t","/a"]}"#.into(),
            r#"{"type":"session_meta","payload":null}"#.into(),
            r#"{"type":"session_meta"}"#.into(),
            r#"{"type":"session_meta","type":"event_msg","payload":{"cwd":"/a"}}"#.into(),
            format!(r#"{{"type":"event_msg","payload":{{"id":"t","cwd":"/a",{base}}}}}"#),
            r#"{"type":"session_meta","payload":{"id":"t","history_base":{"thread_id":"b","end_byte_offset":1.5}}}"#.into(),
            r#"{"type":"session_meta","payload":{"id":"t","cwd":"/a"}"#.into(),
            r#"[1,2]"#.into(),
            "not json".into(),
            String::new(),
        ];
        for l in &lines {
            let h = PageHead::of_line(l.as_bytes());
            assert_eq!(h.cwd, cwd_in(l.as_bytes()), "{l}");
            assert_eq!(h.base, history_base_of(l.as_bytes()), "{l}");
            // Surely a session_meta: as the agents' table reads it too.
            if h.surely_meta {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                assert!(
                    v["type"] == "session_meta" && v["payload"].is_object(),
                    "{l}"
                );
            }
        }
        assert!(PageHead::of_line(lines[0].as_bytes()).surely_meta);
        assert!(!PageHead::of_line(lines[9].as_bytes()).surely_meta);
        assert!(
            !PageHead::of_line(b"{\"type\":\"session_meta\",\"payload\":{\"a\":\"\xff\"}}")
                .surely_meta
        );
    }
}
