//! Text helpers every agent's rendering shares: one-line previews, chunk joining,
//! decoded images, the tool-declaration block.

use crate::model::core::js::{js_stringify, js_stringify_pretty, write_json};
use serde_json::Value;

/// The folder a sessions mount lists a project's sessions in, for an agent that keeps
/// no folder per project (Codex, opencode): its path with every `/` and `.` made `-`,
/// as Claude Code names its project folders (`/home/dev/src/tui` → `-home-dev-src-tui`).
pub fn path_folder_name(path: &str) -> String {
    if path.is_empty() {
        return "unknown-project".to_string();
    }
    path.chars()
        .map(|c| if c == '/' || c == '.' { '-' } else { c })
        .collect()
}

/// The maximum length of a [`preview`], in characters.
pub const PREVIEW_CHARS: usize = 100;

/// Ends `s` with exactly the newline it needs; an empty `s` becomes `"\n"`.
/// `s` with every control character (C0, DEL, C1: a terminal's escape and
/// title-setting sequences start with ESC or CSI, and end with BEL) written as Rust
/// writes it in a string literal (`\u{1b}`, `\n`, `\0`), the rest as it is: for the
/// lines sessionfs composes for a terminal from what a session holds (a name, an id, a
/// path), which a session file must not be able to drive. `check` quotes the same way.
pub fn escape_controls(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Whether `b` holds a control character (see [`escape_controls`]): a C0 or DEL byte,
/// or the UTF-8 form of a C1 one.
pub fn has_controls(b: &[u8]) -> bool {
    b.iter().any(|&x| x < 0x20 || x == 0x7f)
        || b.windows(2)
            .any(|w| w[0] == 0xc2 && (0x80..0xa0).contains(&w[1]))
}

pub fn finish(mut s: String) -> String {
    if !s.ends_with('\n') {
        s.push('\n');
    }
    s
}

/// A tool declaration: `[tool NAME]`, its description, then its parameters, one per
/// line (`name (type, required): description`, with any other schema keywords as
/// JSON), or the schema as JSON when it is not a plain object of properties.
pub fn render_tool(t: &Value) -> String {
    let mut s = format!("[tool {}]\n", text_of(t.get("name")));
    let description = text_of(t.get("description"));
    if !description.is_empty() {
        s.push_str(&description);
        if !description.ends_with('\n') {
            s.push('\n');
        }
    }
    let params = t.get("parameters");
    let props = params
        .and_then(|p| p.get("properties"))
        .and_then(Value::as_object);
    match (params, props) {
        (None | Some(Value::Null), _) => {}
        (Some(p), Some(props)) => {
            let required: Vec<&str> = p
                .get("required")
                .into_iter()
                .flat_map(items)
                .filter_map(Value::as_str)
                .collect();
            if props.is_empty() {
                s.push_str("parameters: none\n");
            } else {
                s.push_str("parameters:\n");
            }
            for (name, schema) in props {
                let ty = match schema.get("type") {
                    Some(Value::String(t)) => t.clone(),
                    Some(Value::Array(ts)) => ts
                        .iter()
                        .map(|t| text_of(Some(t)))
                        .collect::<Vec<_>>()
                        .join("|"),
                    _ => "any".to_string(),
                };
                let req = if required.contains(&name.as_str()) {
                    ", required"
                } else {
                    ""
                };
                s.push_str(&format!("  {name} ({ty}{req})"));
                let desc = text_of(schema.get("description"));
                if !desc.is_empty() {
                    s.push_str(": ");
                    s.push_str(&desc);
                }
                if let Value::Object(rest) = schema {
                    let rest: serde_json::Map<String, Value> = rest
                        .iter()
                        .filter(|(k, _)| !matches!(k.as_str(), "type" | "description"))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    if !rest.is_empty() {
                        s.push(' ');
                        s.push_str(&js_stringify(&Value::Object(rest)));
                    }
                }
                s.push('\n');
            }
            if let Value::Object(top) = p {
                let rest: serde_json::Map<String, Value> = top
                    .iter()
                    .filter(|(k, v)| {
                        let object_type = k.as_str() == "type" && v.as_str() == Some("object");
                        !(matches!(k.as_str(), "properties" | "required") || object_type)
                    })
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                if !rest.is_empty() {
                    s.push_str(&format!(
                        "  schema: {}\n",
                        js_stringify(&Value::Object(rest))
                    ));
                }
            }
        }
        (Some(p), None) => {
            s.push_str("parameters:\n");
            s.push_str(&js_stringify_pretty(p));
            s.push('\n');
        }
    }
    if let Some(c) = t.get("constrainedSampling") {
        s.push_str(&format!("constrained sampling: {}\n", text_of(Some(c))));
    }
    s
}

/// Joins blocks with a blank line between them; each block ends in `\n`.
pub fn join_chunks<S: AsRef<str>>(chunks: &[S]) -> String {
    let mut out = String::with_capacity(chunks.iter().map(|c| c.as_ref().len() + 2).sum());
    for (i, chunk) in chunks.iter().enumerate() {
        let chunk = chunk.as_ref();
        if i > 0 {
            out.push('\n');
        }
        out.push_str(chunk);
        if !chunk.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// A decoded image block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// `png`, `jpg`, `gif`, `webp`, or `bin` for any other `mimeType`.
    pub ext: &'static str,
    /// The decoded bytes.
    pub data: Vec<u8>,
}

pub fn image_ext(mime: Option<&Value>) -> &'static str {
    let Some(mime) = mime.and_then(Value::as_str) else {
        return "bin";
    };
    let essence = mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match essence.as_str() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        _ => "bin",
    }
}

/// `s` on one line: runs of whitespace and control characters become one space,
/// none at the ends. Previews are cut to [`PREVIEW_CHARS`] later, so only the first
/// `PREVIEW_CHARS + 1` characters are built (enough to tell whether it was cut).
pub fn one_line(s: &str) -> String {
    // One character more than a preview shows says whether it was cut.
    one_line_n(s, PREVIEW_CHARS + 1)
}

/// [`one_line`] with at most `n` characters. Terminal escape sequences (colours
/// that a tool's output kept, say) are left out whole: a preview showing `[2m…[22m`
/// where the ESC was dropped helps nobody.
pub fn one_line_n(s: &str, n: usize) -> String {
    if memchr::memchr2(0x1b, 0xc2, s.as_bytes()).is_some() {
        let plain = strip_escapes(s);
        if plain.len() != s.len() {
            return one_line_n(&plain, n);
        }
    }
    if s.is_ascii() {
        // The same, copying the stretches that stay as they are (words with single
        // spaces between them) in one go: `out` then `b[kept..i]` is the line so far.
        let blank = |c: u8| c <= 0x20 || c == 0x7f;
        let b = s.as_bytes();
        let mut out = Vec::with_capacity(b.len().min(n + 1));
        let mut i = 0;
        while i < b.len() && blank(b[i]) {
            i += 1;
        }
        let mut kept = i;
        while i < b.len() && out.len() + (i - kept) < n {
            if !blank(b[i]) {
                i += 1;
                continue;
            }
            let mut j = i + 1;
            while j < b.len() && blank(b[j]) {
                j += 1;
            }
            if j == b.len() {
                break;
            }
            if j == i + 1 && b[i] == b' ' {
                i = j;
                continue;
            }
            out.extend_from_slice(&b[kept..i]);
            out.push(b' ');
            (kept, i) = (j, j);
        }
        out.extend_from_slice(&b[kept..i]);
        return String::from_utf8(out).unwrap_or_default();
    }
    let mut out = String::with_capacity(s.len().min(4 * n));
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut chars = 0;
    while i < bytes.len() && chars < n {
        // Skip a run of blanks.
        let mut blank = false;
        while i < bytes.len() {
            let b = bytes[i];
            if b < 0x80 {
                if b > 0x20 && b != 0x7f {
                    break;
                }
                i += 1;
            } else {
                let c = s[i..].chars().next().unwrap_or('a');
                if !(c.is_whitespace() || c.is_control()) {
                    break;
                }
                i += c.len_utf8();
            }
            blank = true;
        }
        if i >= bytes.len() {
            break;
        }
        if blank && !out.is_empty() {
            out.push(' ');
            chars += 1;
        }
        // Then a run of other characters, up to the limit.
        let start = i;
        while i < bytes.len() && chars < n {
            let run = visible_ascii_run(bytes, i, bytes.len().min(i + (n - chars)));
            chars += run - i;
            i = run;
            if i >= bytes.len() || chars >= n || bytes[i] < 0x80 {
                break;
            }
            let c = s[i..].chars().next().unwrap_or(' ');
            if c.is_whitespace() || c.is_control() {
                break;
            }
            i += c.len_utf8();
            chars += 1;
        }
        out.push_str(&s[start..i]);
    }
    out
}

/// `s` without its terminal escape sequences (ECMA-48): CSI (`ESC [` or U+009B,
/// parameters, intermediates, a final byte), OSC, DCS, SOS, PM and APC strings (up to
/// BEL or ST), and two-character escapes (`ESC` and one character, intermediates
/// before it allowed). An unfinished sequence at the end is dropped too; a lone ESC
/// becomes nothing. Other text is kept as it is.
pub fn strip_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        let csi = match c {
            '\u{1b}' => match it.peek() {
                Some('[') => {
                    it.next();
                    true
                }
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    it.next();
                    // A string, ended by BEL or ST (ESC \\ or U+009C).
                    while let Some(d) = it.next() {
                        if d == '\u{7}' || d == '\u{9c}' {
                            break;
                        }
                        if d == '\u{1b}' && it.peek() == Some(&'\\') {
                            it.next();
                            break;
                        }
                    }
                    continue;
                }
                _ => {
                    // Intermediates, then one final character.
                    while it.next_if(|d| ('\u{20}'..='\u{2f}').contains(d)).is_some() {}
                    it.next_if(|d| ('\u{30}'..='\u{7e}').contains(d));
                    continue;
                }
            },
            '\u{9b}' => true,
            _ => {
                out.push(c);
                continue;
            }
        };
        if csi {
            // Parameters and intermediates, then the final byte.
            while it.next_if(|d| ('\u{20}'..='\u{3f}').contains(d)).is_some() {}
            it.next_if(|d| ('\u{40}'..='\u{7e}').contains(d));
        }
    }
    out
}

/// The end of the run of visible ASCII characters (not blanks, not control
/// characters, not the start of a longer character) that starts at `b[i]`, looking no
/// further than `end`.
pub fn visible_ascii_run(b: &[u8], mut i: usize, end: usize) -> usize {
    // Words are short: a byte at a time beats anything wider here.
    while i < end && b[i] > 0x20 && b[i] < 0x7f {
        i += 1;
    }
    i
}

/// `truncate_chars(&one_line(s), max)` in one pass.
pub fn one_line_cut(s: &str, max: usize) -> String {
    let line = one_line_n(s, max + 1);
    if line.len() <= max {
        // At most as many characters as bytes: nothing to cut.
        return line;
    }
    truncate_chars(&line, max)
}

pub fn truncate_chars(s: &str, max: usize) -> String {
    // At most as many characters as bytes: nothing to cut.
    if s.len() <= max {
        return s.to_string();
    }
    // Where the first `max - 1` characters end, if there are more than `max`.
    let keep = if s.is_ascii() {
        Some(max.saturating_sub(1))
    } else {
        let mut it = s.char_indices().map(|(i, _)| i);
        if max == 0 {
            it.next().map(|_| 0)
        } else {
            // Where the `max`-th character starts (the first `max - 1` end there), if
            // another follows it: then there are more than `max`.
            let keep = it.nth(max - 1);
            keep.filter(|_| it.next().is_some())
        }
    };
    match keep {
        None => s.to_string(),
        Some(keep) => {
            let mut out = s[..keep].trim_end().to_string();
            out.push('…');
            out
        }
    }
}

/// `context.json`: `"[\n"`, each message as [`js_stringify`] joined with
/// `",\n"`, then `"\n]\n"`; `"[]\n"` for no messages.
pub fn context_json(messages: &[Value]) -> String {
    if messages.is_empty() {
        return "[]\n".to_string();
    }
    let mut out = String::from("[\n");
    for (i, m) in messages.iter().enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        write_json(&mut out, m, None, 0);
    }
    out.push_str("\n]\n");
    out
}

/// A string as is; `null`/missing as empty; anything else as JSON.
pub fn text_of(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => js_stringify(other),
    }
}

pub fn items(v: &Value) -> std::slice::Iter<'_, Value> {
    match v {
        Value::Array(a) => a.iter(),
        _ => [].iter(),
    }
}
