//! Reading the fields of a Claude Code line that the index needs, without building it.
//!
//! The same approach as [`crate::model::core::scan`] for Pi: one pass over the JSON that keeps
//! a handful of top-level fields (`type`, `subtype`, `uuid`, `parentUuid`,
//! `logicalParentUuid`, `timestamp`, the flags, the metadata of `last-prompt` and title
//! lines) and, inside `message`, its `role`, `id`, `model` and what its `content`
//! holds; everything else is skipped but validated, so a line is accepted exactly when
//! `JSON.parse` accepts it (up to serde_json's nesting limit). Keys that occur twice
//! keep their last value. Invalid UTF-8 is replaced first, as Node does.

use crate::model::core::scan::{
    Field, FieldSeed, LineError, fast_field, parse_line, parse_object, skip_other_values,
    skip_scalar_values,
};
use crate::model::core::strict::{Reader, Unsure};
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// The fields of one Claude Code line that indexing uses.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Head<'a> {
    pub ty: Field<'a>,
    pub subtype: Field<'a>,
    pub uuid: Field<'a>,
    pub parent_uuid: Field<'a>,
    pub logical_parent_uuid: Field<'a>,
    pub timestamp: Field<'a>,
    pub session_id: Field<'a>,
    pub is_sidechain: Field<'a>,
    pub is_meta: Field<'a>,
    pub is_compact_summary: Field<'a>,
    pub is_api_error: Field<'a>,
    pub tool_use_result: Field<'a>,
    /// `last-prompt` and `summary` lines.
    pub leaf_uuid: Field<'a>,
    pub explicit: Field<'a>,
    pub rewound: Field<'a>,
    /// Title lines: `custom-title`, `agent-name`, `ai-title`, `summary`.
    pub custom_title: Field<'a>,
    pub agent_name: Field<'a>,
    pub ai_title: Field<'a>,
    pub summary: Field<'a>,
    /// `last-prompt`'s `lastPrompt`: what the picker shows for an untitled session.
    pub last_prompt: Field<'a>,
    /// `attachment.type`.
    pub attachment_type: Field<'a>,
    /// `message.role`, `message.id`, `message.model`.
    pub role: Field<'a>,
    pub msg_id: Field<'a>,
    pub model: Field<'a>,
    /// What `message.content` holds.
    pub content: Content,
}

/// The shape of `message.content`, as far as the index cares.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Content {
    /// `content` is an array.
    pub is_array: bool,
    /// Its first block has `type: "tool_result"`.
    pub first_is_tool_result: bool,
    /// Some block has `type: "tool_result"`.
    pub any_tool_result: bool,
    /// Some block has `type: "image"`.
    pub any_image: bool,
    /// The `id` of the first `tool_use` block.
    pub tool_use_id: Option<String>,
}

impl<'a> Head<'a> {
    /// Parses one line (without its `\n`).
    ///
    /// `core::strict`'s fast reader reads it first, serde what that one is not sure
    /// of, as [`crate::model::core::scan::LineHead::parse`] does: the answer is
    /// serde's ([`Head::by_serde`]) on every line.
    pub fn parse(line: &'a [u8]) -> Result<Head<'a>, LineError> {
        parse_line(
            line,
            |l| match fast(l) {
                Ok(h) => Ok(h),
                Err(Unsure) => parse_object(l, HeadVisitor),
            },
            |l| parse_object(l, HeadVisitor).map(Head::into_owned),
        )
    }

    /// [`Head::parse`] by serde alone: what the fast reader must agree with.
    pub fn by_serde(line: &'a [u8]) -> Result<Head<'a>, LineError> {
        parse_line(
            line,
            |l| parse_object(l, HeadVisitor),
            |l| parse_object(l, HeadVisitor).map(Head::into_owned),
        )
    }

    fn into_owned(self) -> Head<'static> {
        Head {
            ty: self.ty.into_owned(),
            subtype: self.subtype.into_owned(),
            uuid: self.uuid.into_owned(),
            parent_uuid: self.parent_uuid.into_owned(),
            logical_parent_uuid: self.logical_parent_uuid.into_owned(),
            timestamp: self.timestamp.into_owned(),
            session_id: self.session_id.into_owned(),
            is_sidechain: self.is_sidechain.into_owned(),
            is_meta: self.is_meta.into_owned(),
            is_compact_summary: self.is_compact_summary.into_owned(),
            is_api_error: self.is_api_error.into_owned(),
            tool_use_result: self.tool_use_result.into_owned(),
            leaf_uuid: self.leaf_uuid.into_owned(),
            explicit: self.explicit.into_owned(),
            rewound: self.rewound.into_owned(),
            custom_title: self.custom_title.into_owned(),
            agent_name: self.agent_name.into_owned(),
            ai_title: self.ai_title.into_owned(),
            summary: self.summary.into_owned(),
            last_prompt: self.last_prompt.into_owned(),
            attachment_type: self.attachment_type.into_owned(),
            role: self.role.into_owned(),
            msg_id: self.msg_id.into_owned(),
            model: self.model.into_owned(),
            content: self.content,
        }
    }
}

/// `true` exactly when JavaScript would treat the field as `true` (`=== true`).
pub fn is_true(f: &Field<'_>) -> bool {
    matches!(f, Field::Other { truthy: true }) && !matches!(f, Field::Str(_))
}

/// JavaScript truthiness of a field.
pub fn truthy(f: &Field<'_>) -> bool {
    match f {
        Field::Missing | Field::Null => false,
        Field::Str(s) => !s.is_empty(),
        Field::Num(n) => *n != 0.0 && !n.is_nan(),
        Field::Other { truthy } => *truthy,
    }
}

#[derive(Clone, Copy)]
enum Key {
    Type,
    Subtype,
    Uuid,
    ParentUuid,
    LogicalParentUuid,
    Timestamp,
    SessionId,
    IsSidechain,
    IsMeta,
    IsCompactSummary,
    IsApiError,
    ToolUseResult,
    LeafUuid,
    Explicit,
    Rewound,
    CustomTitle,
    AgentName,
    AiTitle,
    LastPrompt,
    Summary,
    Message,
    Attachment,
    Other,
}

impl Key {
    fn of(s: &str) -> Key {
        match s {
            "type" => Key::Type,
            "subtype" => Key::Subtype,
            "uuid" => Key::Uuid,
            "parentUuid" => Key::ParentUuid,
            "logicalParentUuid" => Key::LogicalParentUuid,
            "timestamp" => Key::Timestamp,
            "sessionId" => Key::SessionId,
            "isSidechain" => Key::IsSidechain,
            "isMeta" => Key::IsMeta,
            "isCompactSummary" => Key::IsCompactSummary,
            "isApiErrorMessage" => Key::IsApiError,
            "toolUseResult" => Key::ToolUseResult,
            "leafUuid" => Key::LeafUuid,
            "explicit" => Key::Explicit,
            "rewound" => Key::Rewound,
            "customTitle" => Key::CustomTitle,
            "agentName" => Key::AgentName,
            "aiTitle" => Key::AiTitle,
            "lastPrompt" => Key::LastPrompt,
            "summary" => Key::Summary,
            "message" => Key::Message,
            "attachment" => Key::Attachment,
            _ => Key::Other,
        }
    }
}

struct KeySeed;

impl<'de> de::DeserializeSeed<'de> for KeySeed {
    type Value = Key;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
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

/// Reads the `type` of an object and skips the rest; `Missing` for anything else.
struct TypeOnlySeed;

impl<'de> de::DeserializeSeed<'de> for TypeOnlySeed {
    type Value = Field<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Field<'de>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Field<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Field<'de>, A::Error> {
                let mut ty = Field::Missing;
                while let Some(k) = map.next_key_seed(KeySeed)? {
                    if let Key::Type = k {
                        ty = map.next_value_seed(FieldSeed)?;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(ty)
            }
            skip_other_values!(Field::Missing);
        }
        d.deserialize_any(V)
    }
}

/// A content block: its `type`, and its `id` when it is a `tool_use`.
struct BlockSeed;

impl<'de> de::DeserializeSeed<'de> for BlockSeed {
    type Value = (Field<'de>, Option<String>);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = (Field<'de>, Option<String>);
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut ty = Field::Missing;
                let mut id = None;
                while let Some(k) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    match &*k {
                        "type" => ty = map.next_value_seed(FieldSeed)?,
                        "id" => id = map.next_value_seed(FieldSeed)?.as_str().map(str::to_string),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                let id = if ty.as_str() == Some("tool_use") {
                    id
                } else {
                    None
                };
                Ok((ty, id))
            }
            skip_other_values!((Field::Missing, None));
        }
        d.deserialize_any(V)
    }
}

/// `message.content`: its shape.
struct ContentSeed;

impl<'de> de::DeserializeSeed<'de> for ContentSeed {
    type Value = Content;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Content, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
                let mut c = Content {
                    is_array: true,
                    ..Content::default()
                };
                let mut first = true;
                while let Some((ty, id)) = seq.next_element_seed(BlockSeed)? {
                    if c.tool_use_id.is_none() {
                        c.tool_use_id = id;
                    }
                    let t = ty.as_str();
                    if t == Some("tool_result") {
                        c.any_tool_result = true;
                        if first {
                            c.first_is_tool_result = true;
                        }
                    } else if t == Some("image") {
                        c.any_image = true;
                    }
                    first = false;
                }
                Ok(c)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Content, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Content::default())
            }
            skip_scalar_values!(Content::default());
        }
        d.deserialize_any(V)
    }
}

/// `message`: role, id, model, content.
struct MessageSeed<'h, 'de>(&'h mut Head<'de>);

impl<'de> de::DeserializeSeed<'de> for MessageSeed<'_, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        struct V<'h, 'de>(&'h mut Head<'de>);
        impl<'de> Visitor<'de> for V<'_, 'de> {
            type Value = ();
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
                // A later `message` key replaces an earlier one entirely.
                self.0.role = Field::Missing;
                self.0.msg_id = Field::Missing;
                self.0.model = Field::Missing;
                self.0.content = Content::default();
                while let Some(k) = map.next_key::<String>()? {
                    match k.as_str() {
                        "role" => self.0.role = map.next_value_seed(FieldSeed)?,
                        "id" => self.0.msg_id = map.next_value_seed(FieldSeed)?,
                        "model" => self.0.model = map.next_value_seed(FieldSeed)?,
                        "content" => self.0.content = map.next_value_seed(ContentSeed)?,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(())
            }
            skip_other_values!(());
        }
        d.deserialize_any(V(self.0))
    }
}

struct HeadVisitor;

impl<'de> Visitor<'de> for HeadVisitor {
    type Value = Option<Head<'de>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut h = Head::default();
        while let Some(k) = map.next_key_seed(KeySeed)? {
            let slot = match k {
                Key::Type => &mut h.ty,
                Key::Subtype => &mut h.subtype,
                Key::Uuid => &mut h.uuid,
                Key::ParentUuid => &mut h.parent_uuid,
                Key::LogicalParentUuid => &mut h.logical_parent_uuid,
                Key::Timestamp => &mut h.timestamp,
                Key::SessionId => &mut h.session_id,
                Key::IsSidechain => &mut h.is_sidechain,
                Key::IsMeta => &mut h.is_meta,
                Key::IsCompactSummary => &mut h.is_compact_summary,
                Key::IsApiError => &mut h.is_api_error,
                Key::ToolUseResult => &mut h.tool_use_result,
                Key::LeafUuid => &mut h.leaf_uuid,
                Key::Explicit => &mut h.explicit,
                Key::Rewound => &mut h.rewound,
                Key::CustomTitle => &mut h.custom_title,
                Key::AgentName => &mut h.agent_name,
                Key::AiTitle => &mut h.ai_title,
                Key::LastPrompt => &mut h.last_prompt,
                Key::Summary => &mut h.summary,
                Key::Attachment => {
                    h.attachment_type = map.next_value_seed(TypeOnlySeed)?;
                    continue;
                }
                Key::Message => {
                    map.next_value_seed(MessageSeed(&mut h))?;
                    continue;
                }
                Key::Other => {
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
/// object, with the fields [`HeadVisitor`] reads.
fn fast(line: &[u8]) -> Result<Head<'_>, Unsure> {
    let mut h = Head::default();
    Reader::object_line(line, |k: &[u8], r: &mut Reader<'_>| {
        let slot = match k {
            b"type" => &mut h.ty,
            b"subtype" => &mut h.subtype,
            b"uuid" => &mut h.uuid,
            b"parentUuid" => &mut h.parent_uuid,
            b"logicalParentUuid" => &mut h.logical_parent_uuid,
            b"timestamp" => &mut h.timestamp,
            b"sessionId" => &mut h.session_id,
            b"isSidechain" => &mut h.is_sidechain,
            b"isMeta" => &mut h.is_meta,
            b"isCompactSummary" => &mut h.is_compact_summary,
            b"isApiErrorMessage" => &mut h.is_api_error,
            b"toolUseResult" => &mut h.tool_use_result,
            b"leafUuid" => &mut h.leaf_uuid,
            b"explicit" => &mut h.explicit,
            b"rewound" => &mut h.rewound,
            b"customTitle" => &mut h.custom_title,
            b"agentName" => &mut h.agent_name,
            b"aiTitle" => &mut h.ai_title,
            b"lastPrompt" => &mut h.last_prompt,
            b"summary" => &mut h.summary,
            b"attachment" => {
                // Its `type` when it is an object ([`TypeOnlySeed`]).
                let mut ty = Field::Missing;
                r.object(&mut |k: &[u8], r: &mut Reader<'_>| {
                    if k == b"type" {
                        ty = fast_field(r)?;
                        Ok(())
                    } else {
                        r.skip()
                    }
                })?;
                h.attachment_type = ty;
                return Ok(());
            }
            b"message" => return fast_message(&mut h, r),
            _ => return r.skip(),
        };
        *slot = fast_field(r)?;
        Ok(())
    })?;
    Ok(h)
}

/// `message`, as [`MessageSeed`] reads it: an object replaces what an earlier one
/// gave; anything else leaves the head as it is.
fn fast_message<'a>(h: &mut Head<'a>, r: &mut Reader<'a>) -> Result<(), Unsure> {
    if r.next_byte() != Some(b'{') {
        return r.skip();
    }
    h.role = Field::Missing;
    h.msg_id = Field::Missing;
    h.model = Field::Missing;
    h.content = Content::default();
    r.object(&mut |k: &[u8], r: &mut Reader<'a>| {
        match k {
            b"role" => h.role = fast_field(r)?,
            b"id" => h.msg_id = fast_field(r)?,
            b"model" => h.model = fast_field(r)?,
            b"content" => h.content = fast_content(r)?,
            _ => r.skip()?,
        }
        Ok(())
    })?;
    Ok(())
}

/// `message.content`, as [`ContentSeed`] reads it.
fn fast_content(r: &mut Reader<'_>) -> Result<Content, Unsure> {
    let mut c = Content::default();
    let mut first = true;
    c.is_array = r.elements(&mut |r: &mut Reader<'_>| {
        // A block, as [`BlockSeed`] reads it.
        let (mut ty, mut id) = (Field::Missing, None);
        r.object(&mut |k: &[u8], r: &mut Reader<'_>| {
            match k {
                b"type" => ty = fast_field(r)?,
                b"id" => id = fast_field(r)?.as_str().map(str::to_string),
                _ => r.skip()?,
            }
            Ok(())
        })?;
        let t = ty.as_str();
        if c.tool_use_id.is_none() && t == Some("tool_use") {
            c.tool_use_id = id;
        }
        if t == Some("tool_result") {
            c.any_tool_result = true;
            c.first_is_tool_result |= first;
        } else if t == Some("image") {
            c.any_image = true;
        }
        first = false;
        Ok(())
    })?;
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_node_fields() {
        let l = br#"{"parentUuid":"p","isSidechain":false,"promptId":"x","type":"user","message":{"role":"user","content":[{"tool_use_id":"t","type":"tool_result","content":"ok"}]},"uuid":"u","timestamp":"2026-12-01T06:11:27.129Z","toolUseResult":{"stdout":""}}"#;
        let h = Head::parse(l).unwrap();
        assert_eq!(h.ty.as_str(), Some("user"));
        assert_eq!(h.uuid.as_str(), Some("u"));
        assert_eq!(h.parent_uuid.as_str(), Some("p"));
        assert_eq!(h.role.as_str(), Some("user"));
        assert!(h.content.is_array && h.content.first_is_tool_result && h.content.any_tool_result);
        assert!(truthy(&h.tool_use_result));
        assert!(!truthy(&h.is_sidechain));
    }

    #[test]
    fn reads_metadata_and_attachments() {
        let h = Head::parse(
            br#"{"type":"last-prompt","leafUuid":"l","explicit":true,"sessionId":"s"}"#,
        )
        .unwrap();
        assert_eq!(h.leaf_uuid.as_str(), Some("l"));
        assert!(is_true(&h.explicit));
        let h = Head::parse(br#"{"parentUuid":null,"attachment":{"type":"skill_listing","content":"x"},"type":"attachment","uuid":"a"}"#).unwrap();
        assert_eq!(h.attachment_type.as_str(), Some("skill_listing"));
        assert_eq!(h.parent_uuid, Field::Null);
        assert!(Head::parse(b"[1]").is_err());
        assert!(Head::parse(b"{\"half\":").is_err());
    }

    /// Every line of the committed fixtures: the fast reader's head is serde's, and
    /// it reads nearly every line itself.
    #[test]
    fn the_fast_head_is_serde_s_on_every_fixture_line() {
        let (mut lines, mut quick) = (0usize, 0usize);
        for f in &crate::model::core::scan::tests::fixture_files() {
            let src = std::fs::read(f).unwrap();
            for l in src.split(|&b| b == b'\n') {
                assert_eq!(
                    Head::parse(l),
                    Head::by_serde(l),
                    "{}: {}",
                    f.display(),
                    String::from_utf8_lossy(&l[..l.len().min(300)])
                );
                lines += 1;
                quick += usize::from(fast(l).is_ok());
            }
        }
        assert!(
            quick * 10 > lines * 9,
            "{quick} of {lines} lines read by the fast reader"
        );
    }

    #[test]
    fn a_later_message_replaces_an_earlier_one_only_when_it_is_an_object() {
        let l = br#"{"message":{"role":"user","id":"m","content":[{"type":"tool_use","id":"t"}]},"message":"x"}"#;
        let h = Head::parse(l).unwrap();
        assert_eq!(h.role.as_str(), Some("user"));
        assert_eq!(h.content.tool_use_id.as_deref(), Some("t"));
        let l =
            br#"{"message":{"role":"user","content":[{"type":"image"}]},"message":{"model":"m"}}"#;
        let h = Head::parse(l).unwrap();
        assert_eq!(h.role, Field::Missing);
        assert_eq!(h.content, Content::default());
        let l = br#"{"message":{"content":[7,{"type":"tool_result"},{"id":"a","type":"tool_use","id":"b"},{"type":"tool_use","id":"c"}]}}"#;
        let h = Head::parse(l).unwrap();
        assert!(h.content.is_array && h.content.any_tool_result && !h.content.first_is_tool_result);
        assert_eq!(h.content.tool_use_id.as_deref(), Some("b"));
        for l in [&l[..], br#"{"message":{"content":{"type":"image"}}}"#] {
            assert!(fast(l).is_ok());
            assert_eq!(Head::parse(l), Head::by_serde(l));
        }
    }

    /// How fast [`Head::parse`] reads Claude Code's lines, against serde alone, over
    /// the sessions under `$SESSIONFS_BENCH_CLAUDE`:
    /// `SESSIONFS_BENCH_CLAUDE=… cargo test --release --lib claude::head::tests::head_rate -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn head_rate() {
        let Some(dir) = std::env::var_os("SESSIONFS_BENCH_CLAUDE") else {
            eprintln!("set SESSIONFS_BENCH_CLAUDE to a Claude Code projects folder");
            return;
        };
        let (mb, serde, fast) = crate::model::core::scan::tests::head_rates(
            std::path::Path::new(&dir),
            |l| Head::parse(l).is_ok(),
            |l| Head::by_serde(l).is_ok(),
            |l| Head::parse(l) == Head::by_serde(l),
        );
        eprintln!("{mb:.0} MB: serde {serde:.0} MB/s, fast reader first {fast:.0} MB/s");
    }

    mod generated {
        use crate::model::claude::head::{Head, fast};
        use crate::model::core::scan::tests::generated::line;
        use proptest::prelude::*;

        /// What [`Head`] reads, a few others, and escaped spellings.
        const KEYS: &[&str] = &[
            "type",
            "subtype",
            "uuid",
            "parentUuid",
            "logicalParentUuid",
            "timestamp",
            "sessionId",
            "isSidechain",
            "isMeta",
            "isCompactSummary",
            "isApiErrorMessage",
            "toolUseResult",
            "leafUuid",
            "explicit",
            "rewound",
            "customTitle",
            "agentName",
            "aiTitle",
            "lastPrompt",
            "summary",
            "message",
            "message",
            "message",
            "attachment",
            "attachment",
            "role",
            "id",
            "id",
            "model",
            "content",
            "content",
            "content",
            "u\\u0075id",
            "",
        ];

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(4000))]
            #[test]
            fn the_fast_head_is_serde_s((l, plain) in line(KEYS)) {
                prop_assert_eq!(Head::parse(&l), Head::by_serde(&l));
                if plain {
                    prop_assert!(fast(&l).is_ok(), "left to serde: {}", String::from_utf8_lossy(&l));
                }
            }
        }
    }
}
