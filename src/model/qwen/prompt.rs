//! The system prompt and tools a continuation of a Qwen Code session is sent with,
//! shown first in the readable `context`, as the model gets them.
//!
//! Qwen Code stores neither in the session: it makes them at every run. What is
//! shown is what `qwen --resume SESSION PROMPT` (Qwen Code 0.24.4, its default
//! approval mode, not interactive) sends, measured with the real CLI
//! (`scripts/qwen-fixtures`) and kept in `prompt/`:
//!
//! * the base prompt, the same for every model but for its examples of tool calls,
//!   whose style Qwen Code picks by the model's name (`getToolCallExamples`:
//!   `qwen…-coder` and `coder-model` the Qwen Coder style, `qwen…-vl` the Qwen VL
//!   one, `gemma4` Gemma's, anything else the general one);
//! * the context files Qwen Code appends (`--- Context from: PATH ---`): `QWEN.md`
//!   and `AGENTS.md` in the Qwen home and from the session's directory up to its
//!   project root, then the output-language rule (`.qwen/output-language.md` of the
//!   directory, else of the Qwen home), each as the file holds it now (imports
//!   inside them are not expanded);
//! * the ten tools of that run, whose `read_file` says more for a model that takes
//!   video.
//!
//! The model is the one of the entry's chain's last answer (the one a resume uses).
//! The startup context Qwen Code puts in front of the first user message (skills, the
//! date, the directory's listing at the time of the run) is not shown: it is made
//! anew by every run.

use super::State;
use crate::model::core::session::Session;
use crate::model::core::text::render_tool;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const HEAD: &str = include_str!("prompt/system-head.txt");
const TAIL: &str = include_str!("prompt/system-tail.txt");
const EXAMPLES_CODER: &str = include_str!("prompt/examples-qwen-coder.txt");
const EXAMPLES_VL: &str = include_str!("prompt/examples-qwen-vl.txt");
const EXAMPLES_GEMMA4: &str = include_str!("prompt/examples-gemma4.txt");
const EXAMPLES_GENERAL: &str = include_str!("prompt/examples-general.txt");
const TOOLS_TEXT: &str = include_str!("prompt/tools-text.json");
const TOOLS_VIDEO: &str = include_str!("prompt/tools-video.json");

/// The memory files Qwen Code reads, in its order (`getAllMemoryFilenames`).
const MEMORY_FILES: &[&str] = &["QWEN.md", "AGENTS.md"];
const OUTPUT_LANGUAGE: &str = "output-language.md";

/// The examples Qwen Code shows `model` (`getToolCallExamples`).
fn examples(model: &str) -> &'static str {
    if model.len() >= 100 {
        return EXAMPLES_GENERAL;
    }
    let m = model.to_lowercase();
    // `/qwen[^-]*-X/i`: "qwen", then no dash, then "-X".
    let after_qwen = |x: &str| {
        m.match_indices("qwen").any(|(k, _)| {
            let rest = &m[k + 4..];
            rest.find('-').is_some_and(|d| rest[d..].starts_with(x))
        })
    };
    if after_qwen("-coder") || m.contains("coder-model") {
        EXAMPLES_CODER
    } else if after_qwen("-vl") {
        EXAMPLES_VL
    } else if m.match_indices("gemma").any(|(k, _)| {
        let rest = &m[k + 5..];
        let rest = rest.strip_prefix(['-', '_']).unwrap_or(rest);
        rest.starts_with('4')
    }) {
        EXAMPLES_GEMMA4
    } else {
        EXAMPLES_GENERAL
    }
}

/// The base prompt for `model`, without context files.
pub fn base_prompt(model: &str) -> String {
    format!("{HEAD}{}{TAIL}", examples(model))
}

/// The tools offered with `model` (OpenAI `{type, function}` objects).
pub fn tools(model: &str) -> &'static [Value] {
    static TEXT: OnceLock<Vec<Value>> = OnceLock::new();
    static VIDEO: OnceLock<Vec<Value>> = OnceLock::new();
    let (cell, src) = if super::modalities::modalities(model).video {
        (&VIDEO, TOOLS_VIDEO)
    } else {
        (&TEXT, TOOLS_TEXT)
    };
    cell.get_or_init(|| serde_json::from_str(src).unwrap_or_default())
}

/// `path.relative(from, to)` for two absolute, normalized paths.
fn relative(from: &Path, to: &Path) -> String {
    let a: Vec<_> = from.components().collect();
    let b: Vec<_> = to.components().collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<String> = std::iter::repeat_n("..".to_string(), a.len() - common).collect();
    parts.extend(
        b[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

/// The most of a context file read (Qwen Code reads it whole; a context file is a
/// page or two of notes).
const CONTEXT_FILE_MAX: u64 = 1 << 20;

/// A context file's text: opened as the core opens a side file (only a regular file,
/// not through a link out of its folder, never blocking, bounded).
fn read_context_file(p: &Path) -> Option<String> {
    let dir = p.parent()?;
    let bytes = crate::model::core::input::read_beneath(dir, p, CONTEXT_FILE_MAX).ok()?;
    String::from_utf8(bytes).ok()
}

fn readable(p: &Path) -> bool {
    p.parent()
        .is_some_and(|dir| crate::model::core::input::open_beneath(dir, p).is_ok())
}

/// The context files Qwen Code reads for a run in `cwd` with Qwen home `qwen_home`
/// and home directory `home`, in its order.
fn context_file_paths(qwen_home: &Path, home: &Path, cwd: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let add = |p: PathBuf, out: &mut Vec<PathBuf>| {
        if !out.contains(&p) {
            out.push(p);
        }
    };
    let project_root = cwd
        .ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf);
    for name in MEMORY_FILES {
        let global = qwen_home.join(name);
        if readable(&global) {
            add(global.clone(), &mut out);
        }
        if cwd == home {
            let h = home.join(name);
            if h != global && readable(&h) {
                add(h, &mut out);
            }
        }
        let stop = match &project_root {
            Some(r) => r.parent().map(Path::to_path_buf),
            None => home.parent().map(Path::to_path_buf),
        };
        let mut upward = Vec::new();
        let mut cur = Some(cwd.to_path_buf());
        while let Some(d) = cur {
            let Some(parent) = d.parent() else { break };
            if d == qwen_home || d == home.join(".qwen") {
                break;
            }
            let p = d.join(name);
            if p != global && readable(&p) {
                upward.insert(0, p);
            }
            if Some(&d) == stop.as_ref() {
                break;
            }
            cur = Some(parent.to_path_buf());
        }
        for p in upward {
            add(p, &mut out);
        }
    }
    let project = cwd.join(".qwen").join(OUTPUT_LANGUAGE);
    let global = qwen_home.join(OUTPUT_LANGUAGE);
    if project.exists() {
        add(project, &mut out);
    } else if global.exists() {
        add(global, &mut out);
    }
    out
}

/// The context files' block Qwen Code appends to its prompt (empty: none).
pub fn context_files(qwen_home: &Path, home: &Path, cwd: &Path) -> String {
    let mut seen = Vec::new();
    let mut blocks = Vec::new();
    for p in context_file_paths(qwen_home, home, cwd) {
        let id = std::fs::canonicalize(&p).unwrap_or_else(|_| p.clone());
        if seen.contains(&id) {
            continue;
        }
        seen.push(id);
        let Some(text) = read_context_file(&p) else {
            continue;
        };
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let shown = relative(cwd, &p);
        blocks.push(format!(
            "--- Context from: {shown} ---\n{text}\n--- End of Context from: {shown} ---"
        ));
    }
    blocks.join("\n\n")
}

/// The Qwen home a session file lies in: `<home>/projects/<project>/chats/<id>.jsonl`.
pub fn qwen_home_of(path: &Path) -> Option<PathBuf> {
    let projects = path.parent()?.parent()?.parent()?;
    (projects.file_name()? == "projects").then(|| projects.parent().map(Path::to_path_buf))?
}

/// The whole system prompt of a continuation of the session at `path`, in `cwd`,
/// with `model`.
pub fn system_prompt(path: &Path, cwd: Option<&str>, model: &str) -> String {
    let mut s = base_prompt(model);
    if let (Some(qh), Some(cwd)) = (qwen_home_of(path), cwd.filter(|c| c.starts_with('/'))) {
        let home = if qh.file_name().is_some_and(|n| n == ".qwen") {
            qh.parent().map(Path::to_path_buf)
        } else {
            std::env::var_os("HOME").map(PathBuf::from)
        };
        if let Some(home) = home {
            let files = context_files(&qh, &home, Path::new(cwd));
            if !files.trim().is_empty() {
                s.push_str("\n\n---\n\n");
                s.push_str(files.trim());
            }
        }
    }
    s
}

/// What the readable `context` of entry `i` shows before its messages.
pub fn preamble(s: &Session, st: &State, i: u32) -> Option<String> {
    let model = super::history::model_at(s, st, i);
    let cwd = s
        .entry_value(i)
        .ok()
        .and_then(|v| v.get("cwd").and_then(Value::as_str).map(str::to_string));
    let shown_model = model.as_deref().unwrap_or("");
    let mut out = String::new();
    out.push_str(&format!(
        "[system prompt: made by Qwen Code 0.24.4 at every run, not stored in the session; \
         this is what `qwen --resume {}` sends{} in its default approval mode]\n",
        s.header().session_id,
        match &model {
            Some(m) => format!(" with {m}"),
            None => String::new(),
        }
    ));
    out.push_str(&system_prompt(s.path(), cwd.as_deref(), shown_model));
    out.push_str("\n\n");
    let ts = tools(shown_model);
    out.push_str(&format!("[tools: {} offered by that run]\n", ts.len()));
    for t in ts {
        out.push_str(&render_tool(t.get("function").unwrap_or(t)));
    }
    out.push('\n');
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_examples_follow_the_model_name() {
        assert_eq!(examples("qwen3-coder-plus"), EXAMPLES_CODER);
        assert_eq!(examples("qwen3-vl-plus"), EXAMPLES_VL);
        assert_eq!(examples("gemma-4-27b"), EXAMPLES_GEMMA4);
        assert_eq!(examples("qwen3.6-plus"), EXAMPLES_GENERAL);
        assert_eq!(examples("gpt-4o"), EXAMPLES_GENERAL);
        assert_eq!(tools("qwen3-coder-plus").len(), 10);
    }

    #[test]
    fn relative_paths_are_nodes() {
        assert_eq!(
            relative(
                Path::new("/home/dev/src/qa"),
                Path::new("/home/dev/.qwen/x.md")
            ),
            "../../.qwen/x.md"
        );
        assert_eq!(relative(Path::new("/a"), Path::new("/a/b")), "b");
    }
}
