//! Reading the fields of a Qwen Code record that the index needs, without building it.
//!
//! One pass over the JSON keeps the record's identity (`uuid`, `parentUuid`,
//! `sessionId`, `type`, `subtype`, `timestamp`), `provenance`, what its `message` is
//! (an object? its `role`, whether `parts` is an array, the ids of its
//! `functionCall` parts: a subagent hangs under the call that spawned it) and whether
//! a `chat_compression`'s `systemPayload.compressedHistory` is there; everything else
//! is skipped but validated, so a line is accepted exactly when `JSON.parse` accepts
//! it. Keys that occur twice keep their last value, as in JavaScript. The few records
//! whose text the index keeps (the session picker's first prompt, a title) are parsed
//! whole ([`first_prompt`], [`custom_title`]).

use crate::model::core::scan::{
    Field, FieldSeed, LineError, parse_line, parse_object, skip_other_values, skip_scalar_values,
};
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// The fields of one record that indexing uses.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Head<'a> {
    pub ty: Field<'a>,
    pub subtype: Field<'a>,
    pub uuid: Field<'a>,
    pub parent_uuid: Field<'a>,
    pub session_id: Field<'a>,
    pub timestamp: Field<'a>,
    pub provenance: Field<'a>,
    pub model: Field<'a>,
    /// `message`: missing, an object (its fields below) or something else.
    pub message: Field<'a>,
    /// `message` is an object.
    pub message_object: bool,
    pub role: Field<'a>,
    /// `message.parts` is an array.
    pub parts_array: bool,
    /// The `id`s of `message.parts[].functionCall`, in order.
    pub call_ids: Vec<String>,
    /// `systemPayload.compressedHistory` (its truthiness is what Qwen Code checks).
    pub compressed_history: Field<'a>,
    /// `systemPayload` is an object.
    pub payload_object: bool,
}

impl<'a> Head<'a> {
    /// Parses one line (without its `\n`).
    pub fn parse(line: &'a [u8]) -> Result<Head<'a>, LineError> {
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
            session_id: self.session_id.into_owned(),
            timestamp: self.timestamp.into_owned(),
            provenance: self.provenance.into_owned(),
            model: self.model.into_owned(),
            message: self.message.into_owned(),
            message_object: self.message_object,
            role: self.role.into_owned(),
            parts_array: self.parts_array,
            call_ids: self.call_ids,
            compressed_history: self.compressed_history.into_owned(),
            payload_object: self.payload_object,
        }
    }
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
    SessionId,
    Timestamp,
    Provenance,
    Model,
    Message,
    SystemPayload,
    Other,
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
                Ok(match s {
                    "type" => Key::Type,
                    "subtype" => Key::Subtype,
                    "uuid" => Key::Uuid,
                    "parentUuid" => Key::ParentUuid,
                    "sessionId" => Key::SessionId,
                    "timestamp" => Key::Timestamp,
                    "provenance" => Key::Provenance,
                    "model" => Key::Model,
                    "message" => Key::Message,
                    "systemPayload" => Key::SystemPayload,
                    _ => Key::Other,
                })
            }
        }
        d.deserialize_str(V)
    }
}

/// A part: the `id` of its `functionCall`, if it has one.
struct PartSeed;

impl<'de> de::DeserializeSeed<'de> for PartSeed {
    type Value = Option<String>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Option<String>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<String>, A::Error> {
                let mut id = None;
                while let Some(k) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    if &*k == "functionCall" {
                        id = map.next_value_seed(CallSeed)?;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(id)
            }
            skip_other_values!(None);
        }
        d.deserialize_any(V)
    }
}

/// A `functionCall`: its string `id`.
struct CallSeed;

impl<'de> de::DeserializeSeed<'de> for CallSeed {
    type Value = Option<String>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Option<String>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<String>, A::Error> {
                let mut id = None;
                while let Some(k) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    if &*k == "id" {
                        id = map.next_value_seed(FieldSeed)?.as_str().map(str::to_string);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(id)
            }
            skip_other_values!(None);
        }
        d.deserialize_any(V)
    }
}

/// `message.parts`: whether it is an array, and its call ids.
struct PartsSeed;

impl<'de> de::DeserializeSeed<'de> for PartsSeed {
    type Value = (bool, Vec<String>);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = (bool, Vec<String>);
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut ids = Vec::new();
                while let Some(id) = seq.next_element_seed(PartSeed)? {
                    ids.extend(id);
                }
                Ok((true, ids))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok((false, Vec::new()))
            }
            skip_scalar_values!((false, Vec::new()));
        }
        d.deserialize_any(V)
    }
}

/// `message`: role and parts.
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
                self.0.message = Field::Other { truthy: true };
                self.0.message_object = true;
                self.0.role = Field::Missing;
                self.0.parts_array = false;
                self.0.call_ids.clear();
                while let Some(k) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    match &*k {
                        "role" => self.0.role = map.next_value_seed(FieldSeed)?,
                        "parts" => {
                            let (array, ids) = map.next_value_seed(PartsSeed)?;
                            self.0.parts_array = array;
                            self.0.call_ids = ids;
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                self.0.message = Field::Other { truthy: true };
                self.0.message_object = false;
                self.0.role = Field::Missing;
                self.0.parts_array = false;
                self.0.call_ids.clear();
                Ok(())
            }
            fn visit_str<E>(self, s: &str) -> Result<(), E> {
                self.0.message = Field::Other {
                    truthy: !s.is_empty(),
                };
                self.0.message_object = false;
                self.0.role = Field::Missing;
                self.0.parts_array = false;
                self.0.call_ids.clear();
                Ok(())
            }
            fn visit_unit<E>(self) -> Result<(), E> {
                self.0.message = Field::Null;
                self.0.message_object = false;
                self.0.role = Field::Missing;
                self.0.parts_array = false;
                self.0.call_ids.clear();
                Ok(())
            }
            fn visit_bool<E>(self, b: bool) -> Result<(), E> {
                self.0.message = Field::Other { truthy: b };
                self.0.message_object = false;
                self.0.parts_array = false;
                self.0.call_ids.clear();
                Ok(())
            }
            fn visit_i64<E>(self, _: i64) -> Result<(), E> {
                self.0.message = Field::Other { truthy: true };
                self.0.message_object = false;
                self.0.parts_array = false;
                self.0.call_ids.clear();
                Ok(())
            }
            fn visit_u64<E>(self, _: u64) -> Result<(), E> {
                self.0.message = Field::Other { truthy: true };
                self.0.message_object = false;
                self.0.parts_array = false;
                self.0.call_ids.clear();
                Ok(())
            }
            fn visit_f64<E>(self, _: f64) -> Result<(), E> {
                self.0.message = Field::Other { truthy: true };
                self.0.message_object = false;
                self.0.parts_array = false;
                self.0.call_ids.clear();
                Ok(())
            }
        }
        d.deserialize_any(V(self.0))
    }
}

/// `systemPayload`: is it an object, and its `compressedHistory`.
struct PayloadSeed<'h, 'de>(&'h mut Head<'de>);

impl<'de> de::DeserializeSeed<'de> for PayloadSeed<'_, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        struct V<'h, 'de>(&'h mut Head<'de>);
        impl<'de> Visitor<'de> for V<'_, 'de> {
            type Value = ();
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
                self.0.payload_object = true;
                self.0.compressed_history = Field::Missing;
                while let Some(k) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    if &*k == "compressedHistory" {
                        self.0.compressed_history = map.next_value_seed(FieldSeed)?;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                self.0.payload_object = false;
                self.0.compressed_history = Field::Missing;
                Ok(())
            }
            // A payload that is no object holds no history (a later key would
            // replace an earlier one; Qwen Code writes one).
            skip_scalar_values!(());
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
                Key::SessionId => &mut h.session_id,
                Key::Timestamp => &mut h.timestamp,
                Key::Provenance => &mut h.provenance,
                Key::Model => &mut h.model,
                Key::Message => {
                    map.next_value_seed(MessageSeed(&mut h))?;
                    continue;
                }
                Key::SystemPayload => {
                    map.next_value_seed(PayloadSeed(&mut h))?;
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

/// `truncatePromptForDisplay`: at most 200 characters, then `...`.
fn truncate_prompt(t: &str) -> String {
    let mut it = t.chars();
    let head: String = it.by_ref().take(200).collect();
    if it.next().is_some() {
        format!("{head}...")
    } else {
        head
    }
}

/// The picker's prompt of a user record without a subtype: `systemPayload.displayText`
/// when there is one (an empty one: none), else its first text part.
pub fn first_prompt(raw: &[u8]) -> Option<String> {
    let v = crate::model::core::js::parse_line(raw).ok()?;
    if let Some(d) = v.get("systemPayload").and_then(|p| p.get("displayText")) {
        return d.as_str().filter(|d| !d.is_empty()).map(truncate_prompt);
    }
    let p = crate::model::core::genai::parts(v.get("message"))
        .iter()
        .find(|p| p.get("text").is_some())?;
    let t = crate::model::core::text::text_of(p.get("text"));
    (!t.is_empty()).then(|| truncate_prompt(&t))
}

/// The `customTitle` of a `custom_title` record (`None` when empty or missing).
pub fn custom_title(raw: &[u8]) -> Option<String> {
    let v = crate::model::core::js::parse_line(raw).ok()?;
    v.get("systemPayload")?
        .get("customTitle")?
        .as_str()
        .filter(|t| !t.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_record_head() {
        let l = br#"{"uuid":"u","parentUuid":null,"sessionId":"s","timestamp":"2026-12-05T07:31:56.499Z","type":"assistant","provenance":"assistant_output","model":"m","message":{"role":"model","parts":[{"text":"a"},{"functionCall":{"id":"c1","name":"ls","args":{}}},{"functionCall":{"id":"c2"}}]},"usageMetadata":{"x":1}}"#;
        let h = Head::parse(l).unwrap();
        assert_eq!(h.uuid.as_str(), Some("u"));
        assert_eq!(h.parent_uuid, Field::Null);
        assert_eq!(h.ty.as_str(), Some("assistant"));
        assert_eq!(h.role.as_str(), Some("model"));
        assert!(h.parts_array);
        assert_eq!(h.call_ids, ["c1", "c2"]);
        assert!(truthy(&h.message));
        let h = Head::parse(br#"{"type":"system","subtype":"chat_compression","systemPayload":{"info":{},"compressedHistory":[]}}"#).unwrap();
        assert!(h.payload_object && truthy(&h.compressed_history));
        let h = Head::parse(br#"{"type":"system","systemPayload":{"compressedHistory":null}}"#)
            .unwrap();
        assert!(!truthy(&h.compressed_history));
        assert!(Head::parse(b"[1]").is_err());
        assert!(Head::parse(b"{\"half\":").is_err());
    }
}
