//! One line of a session file, read without building it (GEMINI-FORMAT §2).
//!
//! The CLI tells its four kinds of lines apart in this order (`loadConversationRecord`):
//! a string `$rewindTo` is a rewind, a string `id` a message record, an object `$set` an
//! update, string `sessionId` and `projectHash` the metadata; anything else is skipped.
//! A `$set.messages` line carries whole records, the resume's copy of the history: each
//! is read in place, so that an entry can stand for the bytes of a record inside such
//! a line. What indexing needs of a record (its id, type, time, what its KIND file is
//! called, whether the CLI ignores it, the subagents its tool calls ran) is read here
//! from the line's bytes.

use crate::model::core::json_view::{Json, JsonObj, Raw, RawObj};
use crate::model::core::reply::js_trim;
use std::borrow::Cow;

/// What a line is, in the CLI's order of tests.
pub enum Kind<'a> {
    /// `{"$rewindTo": ID}`.
    Rewind(Cow<'a, str>),
    /// A message record.
    Record(Raw<'a>),
    /// `{"$set": {...}}`: the update's object.
    Set(RawObj<'a>),
    /// The metadata line (`sessionId`, `projectHash`, ...).
    Meta(RawObj<'a>),
    /// JSON of no kind the CLI knows (skipped).
    Other,
}

/// The kind of the line whose value is `root`.
pub fn kind_of(root: Raw<'_>) -> Kind<'_> {
    let Some(o) = root.obj() else {
        return Kind::Other;
    };
    if let Some(r) = o.get("$rewindTo").filter(|v| v.is_string())
        && let Some(id) = r.as_str()
    {
        return Kind::Rewind(id);
    }
    if o.get("id").is_some_and(|v| v.is_string()) {
        return Kind::Record(root);
    }
    if let Some(set) = o.get("$set").and_then(|v| v.obj()) {
        return Kind::Set(set);
    }
    let is_str = |k: &str| o.get(k).is_some_and(|v| v.is_string());
    if is_str("sessionId") && is_str("projectHash") {
        return Kind::Meta(o);
    }
    Kind::Other
}

/// What a record's KIND file is called, and how it counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// A prompt (or any other user text).
    User,
    /// A user record of function responses only: a tool round's results.
    ToolResult,
    /// The summary `/compress` (or an automatic compression) starts a history with.
    Compaction,
    /// A `gemini` record: the model's answer.
    Assistant,
    Info,
    Error,
    Warning,
    /// A `type` the format does not know (or none).
    Other,
}

impl Flavor {
    /// The KIND file's name (an unknown type is named by the caller).
    pub fn name(self) -> &'static str {
        match self {
            Flavor::User => "user",
            Flavor::ToolResult => "toolResult",
            Flavor::Compaction => "compaction",
            Flavor::Assistant => "assistant",
            Flavor::Info => "info",
            Flavor::Error => "error",
            Flavor::Warning => "warning",
            Flavor::Other => "unknown",
        }
    }
}

/// What indexing reads of a message record.
#[derive(Debug, Clone)]
pub struct RecHead<'a> {
    pub id: Cow<'a, str>,
    /// The `type`, when it is a string.
    pub ty: Option<Cow<'a, str>>,
    /// `timestamp` as ms, when JavaScript can read it.
    pub ts: Option<i64>,
    pub flavor: Flavor,
    /// A user record the CLI leaves out of the history it sends, and of its
    /// points: its text (trimmed) is empty or starts with `/`, `?`,
    /// `<session_context>` or `<hook_context>` (`isIgnoredUserContent`).
    pub ignored: bool,
    /// The subagents its tool calls ran (`toolCalls[].agentId`).
    pub agents: Vec<String>,
}

/// The head of record `rec` (an object with a string `id`).
pub fn rec_head<'a>(rec: Raw<'a>) -> Option<RecHead<'a>> {
    let o = rec.obj()?;
    let id = o.get("id").filter(|v| v.is_string())?.as_str()?;
    let ty = o
        .get("type")
        .filter(|v| v.is_string())
        .and_then(|v| v.as_str());
    let ts = o
        .get("timestamp")
        .filter(|v| v.is_string())
        .and_then(|v| v.as_str())
        .and_then(|t| crate::model::core::js::js_date_ms(&t));
    let content = o.get("content");
    let mut ignored = false;
    let mut agents = Vec::new();
    let flavor = match ty.as_deref() {
        Some("user") => {
            let head = content.map(text_head).unwrap_or_default();
            ignored = is_ignored_text(&head);
            if content.is_some_and(all_responses) {
                Flavor::ToolResult
            } else if js_trim(&head).starts_with("<state_snapshot>") {
                Flavor::Compaction
            } else {
                Flavor::User
            }
        }
        Some("gemini") => {
            if let Some(calls) = o.get("toolCalls").and_then(|c| c.items()) {
                for c in calls {
                    if let Some(a) = c
                        .obj()
                        .and_then(|c| c.get("agentId"))
                        .and_then(|a| a.as_str())
                    {
                        agents.push(a.into_owned());
                    }
                }
            }
            Flavor::Assistant
        }
        Some("info") => Flavor::Info,
        Some("error") => Flavor::Error,
        Some("warning") => Flavor::Warning,
        _ => Flavor::Other,
    };
    Some(RecHead {
        id,
        ty,
        ts,
        flavor,
        ignored,
        agents,
    })
}

/// `isIgnoredUserContent` of a content's string form (see [`text_head`]).
pub fn is_ignored_text(head: &str) -> bool {
    let t = js_trim(head);
    t.is_empty()
        || t.starts_with('/')
        || t.starts_with('?')
        || t.starts_with("<session_context>")
        || t.starts_with("<hook_context>")
}

/// Enough of the beginning of a content's string form (`partListUnionToString`, see
/// [`crate::model::core::genai::parts_to_string`]) to tell whether the CLI ignores it:
/// at least 20 characters past any leading whitespace, or all of it.
pub fn text_head(content: Raw<'_>) -> String {
    let mut out = String::new();
    head_of(content, &mut out);
    out
}

/// Characters of the string form past leading whitespace that settle every test of
/// [`is_ignored_text`].
const ENOUGH: usize = 20;

fn settled(out: &str) -> bool {
    out.trim_start_matches(|c: char| c.is_whitespace() || c == '\u{FEFF}')
        .chars()
        .nth(ENOUGH)
        .is_some()
}

/// Adds the string form of `v` (a part or a list of them) to `out` until it is
/// [`settled`].
fn head_of(v: Raw<'_>, out: &mut String) {
    if settled(out) || !v.truthy() {
        return;
    }
    if v.is_string() {
        if let Some(s) = v.str_visible(ENOUGH + 1) {
            out.push_str(&s);
        }
        return;
    }
    if let Some(items) = v.items() {
        for p in items {
            head_of(p, out);
            if settled(out) {
                return;
            }
        }
        return;
    }
    let Some(o) = v.obj() else {
        // A true boolean or a number: `part.text` is undefined.
        return;
    };
    // Every marker of the verbose form starts with `[`, which settles the tests.
    const MARKED: [&str; 8] = [
        "videoMetadata",
        "thought",
        "codeExecutionResult",
        "executableCode",
        "fileData",
        "functionCall",
        "functionResponse",
        "inlineData",
    ];
    if MARKED.iter().any(|k| o.get(k).is_some()) {
        out.push_str("[marker]");
        return;
    }
    match o.get("text") {
        None => {}
        Some(t) if t.is_null() => {}
        Some(t) if t.is_string() => {
            if let Some(s) = t.str_visible(ENOUGH + 1) {
                out.push_str(&s);
            }
        }
        // A number, a boolean, an object or an array as a string: none of them
        // starts with a character the tests look for, except an array (its
        // elements joined with commas), which is rare enough to be written out.
        Some(t) => out.push_str(&crate::model::core::js::js_to_string(
            crate::model::core::js::parse_line(t.bytes()).ok().as_ref(),
        )),
    }
}

/// Whether a content is a non-empty list of `functionResponse` parts only.
fn all_responses(content: Raw<'_>) -> bool {
    let Some(items) = content.items() else {
        return false;
    };
    let mut n = 0;
    for p in items {
        let Some(o) = p.obj() else { return false };
        if o.get("functionResponse").is_none() {
            return false;
        }
        n += 1;
    }
    n > 0
}

/// Where `inner` lies in `line`: its offset (both are slices of the same bytes).
pub fn offset_in(line: &[u8], inner: &[u8]) -> usize {
    (inner.as_ptr() as usize).saturating_sub(line.as_ptr() as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::core::json_view::Tape;

    fn head(line: &str) -> (String, Flavor, bool) {
        let t = Tape::new(line.as_bytes()).unwrap();
        let h = rec_head(t.root()).unwrap();
        (h.id.into_owned(), h.flavor, h.ignored)
    }

    #[test]
    fn lines_are_told_apart_in_the_clis_order() {
        let k = |l: &str| {
            let t = Tape::new(l.as_bytes()).unwrap();
            match kind_of(t.root()) {
                Kind::Rewind(id) => format!("rewind {id}"),
                Kind::Record(_) => "record".into(),
                Kind::Set(_) => "set".into(),
                Kind::Meta(_) => "meta".into(),
                Kind::Other => "other".into(),
            }
        };
        assert_eq!(k(r#"{"$rewindTo":"a","id":"b"}"#), "rewind a");
        assert_eq!(k(r#"{"id":"b","$set":{}}"#), "record");
        assert_eq!(k(r#"{"$set":{"lastUpdated":"x"}}"#), "set");
        assert_eq!(k(r#"{"sessionId":"s","projectHash":"h"}"#), "meta");
        assert_eq!(k(r#"{"sessionId":"s"}"#), "other");
        assert_eq!(k(r#"{"$rewindTo":5}"#), "other");
        assert_eq!(k("[1]"), "other");
    }

    #[test]
    fn record_heads() {
        assert_eq!(
            head(r#"{"id":"a","type":"user","content":[{"text":"  <session_context>\nx"}]}"#),
            ("a".into(), Flavor::User, true)
        );
        assert!(head(r#"{"id":"a","type":"user","content":"/help"}"#).2);
        assert!(head(r#"{"id":"a","type":"user","content":[]}"#).2);
        assert!(!head(r#"{"id":"a","type":"user","content":[{"text":"   "},{"text":"hi"}]}"#).2);
        assert_eq!(
            head(r#"{"id":"a","type":"user","content":[{"functionResponse":{"name":"x"}}]}"#),
            ("a".into(), Flavor::ToolResult, false)
        );
        assert_eq!(
            head(r#"{"id":"a","type":"user","content":[{"text":"<state_snapshot>\n<x/>"}]}"#).1,
            Flavor::Compaction
        );
        let long = format!(
            r#"{{"id":"a","type":"user","content":[{{"text":"{}"}},{{"text":"?x"}}]}}"#,
            " ".repeat(5000)
        );
        assert!(head(&long).2);
        let t = Tape::new(
            br#"{"id":"g","type":"gemini","content":"","toolCalls":[{"name":"invoke_agent","agentId":"sub-1"}]}"#,
        )
        .unwrap();
        let h = rec_head(t.root()).unwrap();
        assert_eq!(
            (h.flavor, h.agents),
            (Flavor::Assistant, vec!["sub-1".into()])
        );
    }
}
