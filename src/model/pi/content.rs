//! Pi's content files straight from an entry, without the session (see
//! [`crate::model::core::content`]).

use crate::model::core::content::Content;
use serde_json::Value;

/// The content files of an entry parsed (and migrated) as Pi holds it.
pub fn content_of(v: &Value) -> Content {
    Content {
        text: super::render::render_entry(v).into_bytes(),
        images: super::render::images(v),
        full_output: None,
    }
}

/// The content files of the entry on `line` (without its newline) of a session of
/// format version 3 or later, where entries need no migration: what
/// [`entry_content`] gives for it once indexed. `None` when the line does not parse
/// (an entry too deeply nested, whose explanation names its line number).
pub fn line_content(line: &[u8]) -> Option<Content> {
    crate::model::core::js::parse_line(line)
        .ok()
        .map(|v| content_of(&v))
}
