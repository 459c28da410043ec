//! What a request carries besides the conversation: the system instruction and the
//! tools (GEMINI-FORMAT §5.1). The session file records neither; the readable `context`
//! shows what Gemini CLI 0.61.0 sends with them when it continues a session with
//! `gemini -p PROMPT --resume ID` in its default approval mode (what the kit's
//! `context.sh` measures, and `context.json` equals): the system instruction made for
//! the session's project (its temporary folder, `~/.gemini/tmp/<slug>/`, is the one
//! part of it that depends on the session; the CLI adds the user's `GEMINI.md` files
//! and settings, which no session file names, and lists its built-in skills under the
//! folder it is installed in, taken as `/usr/local/lib/node_modules/@google/gemini-cli`)
//! and the eight tools it declares then.
//!
//! Both were taken from the request of a `-p` run of the real CLI (the kit's step
//! `01-qa`); the system instruction, so filled in, equals the one of every point of
//! the kit's samples.

use serde_json::Value;
use std::path::Path;

/// The system instruction, with `{GEMINI_DIR}` and `{SLUG}` for the CLI folder and the
/// project's slug.
const SYSTEM: &str = include_str!("system-0.61.0.txt");
/// The function declarations of the request.
const TOOLS: &str = include_str!("tools-0.61.0.json");

/// The system instruction for the session file at `path`.
pub fn system_instruction(path: &Path) -> String {
    let (home, slug) = match super::files::home_of(path) {
        Some((h, s)) => (h.display().to_string(), s),
        None => ("~/.gemini".to_string(), "PROJECT".to_string()),
    };
    SYSTEM
        .replace("{GEMINI_DIR}", &home)
        .replace("{SLUG}", &slug)
}

/// The tools' declarations as `[tool NAME]` blocks.
pub fn tools_text() -> String {
    let Ok(Value::Array(tools)) = serde_json::from_str::<Value>(TOOLS) else {
        return String::new();
    };
    tools
        .iter()
        .map(|t| {
            let mut t = t.clone();
            if let Value::Object(o) = &mut t
                && let Some(p) = o.remove("parametersJsonSchema")
            {
                o.insert("parameters".into(), p);
            }
            crate::model::core::text::render_tool(&t)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the readable `context` shows before the conversation.
pub fn preamble(path: &Path) -> String {
    format!(
        "[system instruction: what Gemini CLI 0.61.0 sends with `gemini -p PROMPT --resume ID` \
         in its default approval mode; the session file does not record it]\n{}\n\n{}\n\n",
        system_instruction(path).trim_end_matches('\n'),
        tools_text().trim_end_matches('\n'),
    )
}
