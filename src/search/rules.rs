//! What a session format's renderer adds to the text it takes from the raw lines.
//!
//! The prefilter ([`super::prefilter`]) looks for a fragment of the pattern in the raw
//! bytes of each line, and renders only the lines that hold it. That is sound as long
//! as the fragment, wherever it occurs in a rendered KIND file, comes from a string of
//! the line (where it is written as is, the fragment being free of characters JSON
//! escapes) or from JSON re-written from the line (where it is written the same way).
//! Text the renderer makes up itself breaks that: headings such as `[thinking]`, the
//! parts of `[tool call NAME (ID)]` around the name and id, placeholders such as
//! `(no content)`, numbers it computes (an image's size), file extensions it derives
//! from a MIME type. A format lists that text here as [`Decoration`]s, each with the
//! conditions on the raw line ([`Trigger`]s) under which the renderer can produce it.
//! A fragment that overlaps a decoration is still usable, but the lines where one of
//! the decoration's triggers holds are rendered too; a decoration without triggers (it
//! can appear anywhere) makes every fragment overlapping it unusable.
//!
//! The lists are knowledge about a renderer kept outside it, so they can fall behind
//! it. Two tests keep them honest: `tests/search_rules.rs` renders every entry of
//! every fixture and checks that each piece of rendered text that is not one of the
//! line's own strings is covered by a decoration whose trigger holds on the line, and
//! `tests/search.rs` compares `sessionfs grep` with `grep -r` through a real mount,
//! including patterns made of decorations. A new KIND rendering needs its text here.
//!
//! A format also says which lines can carry binary content files (images, searched
//! as decoded bytes, which the raw line holds only in base64), whether an entry's
//! content follows from its line alone (so that candidates can be confirmed before
//! the file is indexed), and is recognised from its first line ([`detect`]): a file
//! whose format or version is not known here is searched without prefilter, every
//! entry rendered.

use crate::model::content::{self, Content};
use crate::model::scan::{Field, LineHead};
use parking_lot::Mutex;
use regex::bytes::Regex;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A condition on a raw line (without its newline).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// The line matches this regular expression (`regex` crate syntax, on bytes).
    Matches(&'static str),
    /// The line does not contain this string.
    Lacks(&'static str),
    /// The line holds more than this many `[` and `{` together (it may be nested
    /// more deeply than the JSON parser builds).
    Openers(usize),
}

impl Trigger {
    /// Whether the trigger holds on `line` (one line at a time: for tests and
    /// checks; the prefilter compiles its triggers into one scan).
    pub fn holds(&self, line: &[u8]) -> bool {
        static COMPILED: OnceLock<Mutex<HashMap<&'static str, Regex>>> = OnceLock::new();
        match *self {
            Trigger::Matches(r) => {
                let re = COMPILED
                    .get_or_init(Default::default)
                    .lock()
                    .entry(r)
                    .or_insert_with(|| Regex::new(r).expect("a valid trigger"))
                    .clone();
                re.is_match(line)
            }
            Trigger::Lacks(s) => memchr::memmem::find(line, s.as_bytes()).is_none(),
            Trigger::Openers(n) => line.iter().filter(|&&b| b == b'[' || b == b'{').count() > n,
        }
    }
}

/// Text a renderer may write that is not in the line it renders.
#[derive(Debug, Clone, Copy)]
pub struct Decoration {
    pub text: &'static str,
    /// The renderer can write `text` only on lines where one of these holds; empty:
    /// anywhere.
    pub when: &'static [Trigger],
}

/// An entry's content files from its raw line, if the line alone gives them.
pub type LineContent = fn(&[u8]) -> Option<Content>;

/// What the search must know about one session format.
#[derive(Debug)]
pub struct Rules {
    pub name: &'static str,
    pub decorations: &'static [Decoration],
    /// Lines where the renderer may write numbers that are not in the line (counts,
    /// sizes, positions): a fragment holding a digit also selects these lines.
    pub derived_numbers: &'static [Trigger],
    /// Entry ids that exist only in memory (8 lower-case hex digits) may be written
    /// anywhere: a fragment made of hex digits alone is not used.
    pub derived_ids: bool,
    /// Lines the renderer rewrites rather than copies (whitespace collapsed, text cut
    /// short): always candidates, whatever the pattern.
    pub always: &'static [Trigger],
    /// Lines whose entries may have binary content files (see the prefilter).
    pub binary_content: &'static [Trigger],
    /// An entry's content files from its raw line alone, when the format allows it
    /// (`None` for a line that needs its session): a file whose candidate lines turn
    /// out not to match is then not indexed at all.
    pub line_content: Option<LineContent>,
    /// Other files whose lines are entries of the session (Claude Code's subagent
    /// transcripts), given the session file: scanned with the same prefilter.
    pub side_files: Option<fn(&Path) -> Vec<PathBuf>>,
    /// A line's rendering may take text from its parent's line (a Claude Code tool
    /// result names the tool of its parent's call): the children of a candidate are
    /// rendered too. The text taken is a string of the parent's line, so a fragment
    /// of it is found there.
    pub parent_text: bool,
    /// Lines whose entry shows a file of its own beside its KIND file, searched as
    /// is (a Claude Code tool result spilled to `tool-results/`): such a line is a
    /// candidate when that file holds one of the pattern's literals.
    pub spilled: Option<Spilled>,
    /// Where in a file its first entry may start, as far as the search has read the
    /// file already (a Codex page's first line, its `session_meta`, some 20 KB): the
    /// scan passes over the bytes before it, after checking that a line ends there.
    pub no_entries_before: Option<fn(&Path) -> Option<u64>>,
    /// An entry's content files from its raw line alone, as far as they depend on the
    /// line's own bytes (text taken from other lines may be missing or differ), images
    /// included: the index ([`super::indexed`]) asks it which base64 strings of a line
    /// are images and which show as no text. `None`: every line where binary content
    /// may be is a candidate for any literal (correct, slower).
    pub alone: Option<LineContent>,
}

/// Lines whose entry may show a file of its own ([`Rules::spilled`]).
#[derive(Debug, Clone, Copy)]
pub struct Spilled {
    /// Where the file may be named: the line is otherwise read as its other rules say.
    pub place: &'static [Trigger],
    /// The file a line's entry shows, given the session file and the line: `None`
    /// when it shows none, `Err` when that cannot be told from the line alone (the
    /// line is then a candidate).
    pub file: fn(&Path, &[u8]) -> Result<Option<PathBuf>, ()>,
}

// ----- Pi ------------------------------------------------------------------------

const THINKING: &[Trigger] = &[Trigger::Matches(r#""thinking""#)];
const TOOL_CALL: &[Trigger] = &[Trigger::Matches(r#""toolCall""#)];
const ERROR_MESSAGE: &[Trigger] = &[Trigger::Matches(r#""errorMessage""#)];
const STOP_REASON: &[Trigger] = &[Trigger::Matches(
    r#""stopReason"[ \t\r]*:[ \t\r]*"(?:error|aborted|length)""#,
)];
/// `isError` with any value but `false` (the renderer tests JavaScript truthiness).
const IS_ERROR: &[Trigger] = &[Trigger::Matches(
    r#""isError"[ \t\r]*:[ \t\r]*(?:[^f \t\r]|f[^a])"#,
)];
const BASH: &[Trigger] = &[Trigger::Matches(r#""bashExecution""#)];
const IMAGE: &[Trigger] = &[Trigger::Matches(r#""image""#)];
const COMPACTION: &[Trigger] = &[Trigger::Matches(r#""compaction""#)];
const BRANCH_SUMMARY: &[Trigger] = &[Trigger::Matches(r#""branch_summary""#)];
const MODEL_CHANGE: &[Trigger] = &[Trigger::Matches(r#""model_change""#)];
const LABEL: &[Trigger] = &[Trigger::Matches(r#""label""#)];
const SESSION_INFO: &[Trigger] = &[Trigger::Matches(r#""session_info""#)];
/// No content: `content` null, `[]`, or missing.
const NO_CONTENT: &[Trigger] = &[
    Trigger::Matches(r#""content"[ \t\r]*:[ \t\r]*(?:null|\[[ \t\r]*\])"#),
    Trigger::Lacks(r#""content""#),
];
/// Pi 1.6's `context_edit` and `usage` entries.
const CONTEXT_EDIT: &[Trigger] = &[Trigger::Matches(r#""context_edit""#)];
/// `"usage"` as a value (the entry's type), not as the key every assistant message has.
const USAGE: &[Trigger] = &[Trigger::Matches(r#""usage"[ \t\r]*[,}\]]"#)];
/// Pi 1.6's system messages (`"role":"system"`), and the system prompt a compaction
/// records (`"systemMessage"`): their one-line summaries (`[system message: text
/// "…"; sections …; tools +…]`) collapse whitespace and cut the text short, so the
/// rendered text is not the line's. Both hold a string starting `"system`, a literal
/// the scan finds in the same pass as the fragment.
const REWRITTEN: &[Trigger] = &[Trigger::Matches(r#""system"#)];
/// An entry nested past the JSON parser's limit of 128 levels.
const TOO_DEEP: &[Trigger] = &[Trigger::Openers(128)];

/// Image numbers and sizes; the line numbers of entries too deep to be built.
const DERIVED_NUMBERS: &[Trigger] = &[Trigger::Matches(r#""image""#), Trigger::Openers(128)];

const fn d(text: &'static str, when: &'static [Trigger]) -> Decoration {
    Decoration { text, when }
}

/// Pi's KIND files (`model::render::render_entry`, through `model::content`).
const PI_DECORATIONS: &[Decoration] = &[
    // Indented JSON (tool-call arguments, custom data, unknown entries): the
    // space after a key's colon and the indentation are the only text added.
    d("\": ", &[]),
    d("\n  ", &[]),
    // assistant
    d("[thinking]", THINKING),
    d("[thinking, redacted]", THINKING),
    d("[tool call ", TOOL_CALL),
    d(" (", TOOL_CALL),
    d(")]", TOOL_CALL),
    d("[error] ", ERROR_MESSAGE),
    d("[stop reason: ", STOP_REASON),
    // toolResult
    d("[error]\n", IS_ERROR),
    // bashExecution
    d("$ ", BASH),
    d("[cancelled]", BASH),
    d("[exit code ", BASH),
    d("[output truncated; full output: ", BASH),
    d("[output truncated]", BASH),
    d("[excluded from context]", BASH),
    // image placeholders: `[image N: MIME, SIZE bytes → image-N.EXT]`
    d("[image ", IMAGE),
    d(": ", IMAGE),
    d(", ", IMAGE),
    d(" bytes → image-", IMAGE),
    d(" byte → image-", IMAGE),
    d(".", IMAGE),
    d("unknown type", IMAGE),
    d("png", IMAGE),
    d("jpg", IMAGE),
    d("gif", IMAGE),
    d("webp", IMAGE),
    d("bin", IMAGE),
    // compaction, branch_summary
    d("[compaction: ", COMPACTION),
    d(" tokens before, kept from ", COMPACTION),
    d(" tokens before]", COMPACTION),
    d("[compaction: kept from ", COMPACTION),
    d("[compaction]", COMPACTION),
    d(" tokens before", COMPACTION),
    d(", keeps nothing]", COMPACTION),
    d(": keeps nothing]", COMPACTION),
    d("[branch summary from ", BRANCH_SUMMARY),
    d("[branch summary]", BRANCH_SUMMARY),
    // model_change: `provider/modelId`
    d("/", MODEL_CHANGE),
    // label
    d("label ", LABEL),
    d(" → ", LABEL),
    d("label cleared → ", LABEL),
    // session_info
    d("(name cleared)", SESSION_INFO),
    // context_edit (Pi 1.6); its replacement's content is rendered as a message's
    d("[context edit of ", CONTEXT_EDIT),
    d(": removes it from the context]", CONTEXT_EDIT),
    d(": no replacement, so Pi cannot apply it]", CONTEXT_EDIT),
    d(": its content in the context becomes]", CONTEXT_EDIT),
    d(
        ": a replacement without content, which leaves it without content]",
        CONTEXT_EDIT,
    ),
    // usage (Pi 1.6): `[usage KIND: PROVIDER/MODEL]`, the note, then
    // `tokens: N input, N output, N cache read, N cache write, N total` and
    // `cost: $T (N input, …)`
    d("[usage ", USAGE),
    d(": ", USAGE),
    d("/", USAGE),
    d("tokens: ", USAGE),
    d(" input", USAGE),
    d(" output", USAGE),
    d(" cache read", USAGE),
    d(" cache write", USAGE),
    d(" total", USAGE),
    d(", ", USAGE),
    d("cost: $", USAGE),
    d("cost: $?", USAGE),
    d(" (", USAGE),
    d(")", USAGE),
    // any message or custom_message without content
    d("(no content)", NO_CONTENT),
    // an entry too deeply nested to be built (model::content)
    d("[this entry cannot be shown: line ", TOO_DEEP),
    d(": recursion limit exceeded at line ", TOO_DEEP),
    d(" column ", TOO_DEEP),
    d("; its raw line is in entry.json]", TOO_DEEP),
];

/// Pi's sessions of format version 3, the current one: entries are read as written.
pub static PI: Rules = Rules {
    name: "pi",
    decorations: PI_DECORATIONS,
    derived_numbers: DERIVED_NUMBERS,
    always: REWRITTEN,
    binary_content: IMAGE,
    line_content: Some(content::line_content),
    derived_ids: false,
    side_files: None,
    parent_text: false,
    spilled: None,
    no_entries_before: None,
    alone: Some(content::line_content),
};

/// Pi's sessions of format version 2: entries are migrated when read (a role
/// renamed), so a line's content is known only through its session.
pub static PI_V2: Rules = Rules {
    name: "pi-v2",
    decorations: PI_DECORATIONS,
    derived_numbers: DERIVED_NUMBERS,
    always: REWRITTEN,
    binary_content: IMAGE,
    line_content: None,
    derived_ids: false,
    side_files: None,
    parent_text: false,
    spilled: None,
    no_entries_before: None,
    alone: Some(content::line_content),
};

/// Pi's sessions of format version 1 (no ids on disk): entries get ids derived from
/// their position when read, and those appear in rendered text (a compaction's `kept
/// from ID`, the indented JSON of an entry type Pi does not know).
pub static PI_V1: Rules = Rules {
    name: "pi-v1",
    decorations: PI_DECORATIONS,
    derived_numbers: DERIVED_NUMBERS,
    always: REWRITTEN,
    binary_content: IMAGE,
    line_content: None,
    derived_ids: true,
    side_files: None,
    parent_text: false,
    spilled: None,
    no_entries_before: None,
    alone: Some(content::line_content),
};

pub use super::rules_claude::CLAUDE;
pub use super::rules_codex::CODEX;

/// Every format the prefilter knows.
pub static ALL: [&Rules; 5] = [&PI, &PI_V2, &PI_V1, &CLAUDE, &CODEX];

/// The rules for a file whose first complete lines are `head` (whole lines, each
/// ending in `\n`), or `None` when the prefilter must not be used: the format is not
/// known here. As the index decides (`Session::open`): the first line that parses is
/// Pi's header, or a Claude Code line (which has no header,
/// `model::claude::looks_like_claude`), or a Codex page (its first line a
/// `session_meta`).
pub fn detect(head: &[u8]) -> Option<&'static Rules> {
    for line in head.split(|&b| b == b'\n') {
        let h = match LineHead::parse(line) {
            Ok(h) => h,
            // The index refuses a file whose first JSON line is not an object.
            Err(crate::model::scan::LineError::NotAnObject) => return None,
            Err(_) => continue,
        };
        if !h.is_header() {
            if super::rules_codex::is_codex_head(line, &h) {
                return Some(&CODEX);
            }
            return crate::model::claude::looks_like_claude(line).then_some(&CLAUDE);
        }
        // As Session::open reads it: a version that is not a number is current.
        return match h.version {
            Field::Num(n) if n >= 3.0 => Some(&PI),
            Field::Num(n) if n >= 2.0 => Some(&PI_V2),
            Field::Str(_) | Field::Other { .. } => Some(&PI),
            _ => Some(&PI_V1),
        };
    }
    None
}

/// The rules for the file at `path` when its name and what the search has read of it
/// already say them, before its first lines are read (a Codex page, whose first line
/// the catalog read for its project: `rules_codex::surely_codex`); `None`: ask
/// [`detect`].
pub fn known(path: &Path) -> Option<&'static Rules> {
    super::rules_codex::surely_codex(path).then_some(&CODEX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        let h = |v: &str| format!("{{\"type\":\"session\",\"id\":\"x\"{v}}}\n");
        assert_eq!(detect(h(",\"version\":3").as_bytes()).unwrap().name, "pi");
        assert_eq!(
            detect(h(",\"version\":2").as_bytes()).unwrap().name,
            "pi-v2"
        );
        assert_eq!(
            detect(h(",\"version\":\"x\"").as_bytes()).unwrap().name,
            "pi"
        );
        assert_eq!(
            detect(h(",\"version\":1").as_bytes()).unwrap().name,
            "pi-v1"
        );
        assert_eq!(detect(h("").as_bytes()).unwrap().name, "pi-v1");
        assert!(detect(format!("\n{}", h(",\"version\":3")).as_bytes()).is_some());
        assert!(detect(b"{\"type\":\"message\"}\n").is_none());
        let claude = br#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s"}"#;
        assert_eq!(
            detect(&[&claude[..], b"\n"].concat()).unwrap().name,
            "claude"
        );
        assert!(detect(b"").is_none());
    }

    #[test]
    fn triggers_compile() {
        for d in PI
            .decorations
            .iter()
            .chain(CLAUDE.decorations)
            .chain(CODEX.decorations)
        {
            for t in d.when {
                if let Trigger::Matches(r) = t {
                    Regex::new(r).unwrap();
                }
            }
        }
    }
}
