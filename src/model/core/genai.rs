//! Gemini-style `Content` (`{role, parts}`), as Gemini CLI and Qwen Code (a Gemini CLI
//! fork) store their messages: what every agent that stores it needs of it, whatever
//! its file format.
//!
//! A part is an object with one of `text` (with `thought: true` for reasoning),
//! `functionCall {id, name, args}`, `functionResponse {id, name, response, parts}`,
//! `inlineData {mimeType, data}` (base64), `fileData {mimeType, fileUri}`, or
//! something else (`executableCode`, `codeExecutionResult`, …). This module renders
//! parts as readable text with the conventions every KIND file follows (message text
//! verbatim, markers as whole lines in square brackets, tool calls with their
//! arguments as indented JSON, images as placeholders naming their `image-N.EXT`),
//! decodes the images of `inlineData` parts in the order of those placeholders, and
//! makes a part's one-line gist for `tree`.

use crate::model::core::base64;
use crate::model::core::js::{js_stringify, js_stringify_pretty};
use crate::model::core::text::{Image, image_ext, text_of};
use serde_json::Value;

/// The `parts` of a Content (nothing when it has none, or they are not an array).
pub fn parts(content: Option<&Value>) -> &[Value] {
    match content.and_then(|c| c.get("parts")) {
        Some(Value::Array(ps)) => ps,
        _ => &[],
    }
}

/// Whether the part is a thought (`thought: true`, JavaScript truthiness).
pub fn is_thought(part: &Value) -> bool {
    crate::model::core::js::js_truthy(part.get("thought"))
}

/// The image parts of `inlineData`/`fileData` kind whose MIME type is an image's.
fn inline_image(part: &Value) -> Option<(&Value, &str)> {
    let d = part.get("inlineData")?;
    let mime = d.get("mimeType").and_then(Value::as_str)?;
    let data = d.get("data").and_then(Value::as_str)?;
    mime.starts_with("image/").then_some((d, data))
}

/// The readable text of each part, in order (see the module docs). `link`: name the
/// `image-N.EXT` file an image is decoded to (a KIND file) or not (a context).
/// `n_image` counts the images placed so far, across calls.
pub fn part_chunks(parts: &[Value], link: bool, n_image: &mut usize) -> Vec<String> {
    parts.iter().map(|p| part_text(p, link, n_image)).collect()
}

/// One part as readable text.
pub fn part_text(p: &Value, link: bool, n_image: &mut usize) -> String {
    let Value::Object(o) = p else {
        return text_of(Some(p));
    };
    if let Some(t) = o.get("text") {
        let t = text_of(Some(t));
        return if is_thought(p) {
            if t.is_empty() {
                "[thinking]".into()
            } else {
                format!("[thinking]\n{t}")
            }
        } else {
            t
        };
    }
    if let Some(fc) = o.get("functionCall") {
        let mut s = format!(
            "[tool call {} ({})]",
            text_of(fc.get("name")),
            text_of(fc.get("id"))
        );
        if let Some(a) = fc.get("args") {
            s.push('\n');
            s.push_str(&js_stringify_pretty(a));
        }
        return s;
    }
    if let Some(fr) = o.get("functionResponse") {
        return function_response_text(fr, link, n_image);
    }
    if let Some(d) = o.get("inlineData") {
        return inline_text(d, link, n_image);
    }
    if let Some(f) = o.get("fileData") {
        return format!(
            "[file {}: {}]",
            text_of(f.get("mimeType")),
            text_of(f.get("fileUri"))
        );
    }
    if o.get("thoughtSignature").is_some() && o.len() == 1 {
        return "[thought signature]".into();
    }
    js_stringify_pretty(p)
}

/// `[tool result NAME (ID)]`, then `[error]` and the error when the response is
/// `{error}`, else its `output` text (or the response as JSON), then the response's
/// own parts (media a tool returned).
fn function_response_text(fr: &Value, link: bool, n_image: &mut usize) -> String {
    let mut s = format!(
        "[tool result {} ({})]",
        text_of(fr.get("name")),
        text_of(fr.get("id"))
    );
    let r = fr.get("response");
    let body = match r {
        Some(Value::Object(o)) if o.get("output").is_some_and(Value::is_string) => {
            text_of(o.get("output"))
        }
        Some(Value::Object(o)) if o.get("error").is_some_and(Value::is_string) => {
            format!("[error]\n{}", text_of(o.get("error")))
        }
        None | Some(Value::Null) => String::new(),
        Some(Value::String(t)) => t.clone(),
        Some(other) => js_stringify_pretty(other),
    };
    if !body.is_empty() {
        s.push('\n');
        s.push_str(&body);
    }
    for p in parts(Some(fr)) {
        let t = part_text(p, link, n_image);
        if !t.is_empty() {
            s.push('\n');
            s.push_str(&t);
        }
    }
    s
}

/// An `inlineData` part: an image's placeholder, or what else it holds.
fn inline_text(d: &Value, link: bool, n_image: &mut usize) -> String {
    let mime = d
        .get("mimeType")
        .and_then(Value::as_str)
        .unwrap_or("unknown type");
    let len = d
        .get("data")
        .and_then(Value::as_str)
        .map_or(0, base64::decoded_len);
    let name = d
        .get("displayName")
        .and_then(Value::as_str)
        .map(|n| format!(" {n}"))
        .unwrap_or_default();
    if mime.starts_with("image/") && d.get("data").is_some_and(Value::is_string) {
        *n_image += 1;
        let n = *n_image;
        if link {
            let ext = image_ext(d.get("mimeType"));
            format!("[image {n}{name}: {mime}, {len} bytes → image-{n}.{ext}]")
        } else {
            format!("[image {n}{name}: {mime}, {len} bytes]")
        }
    } else {
        format!("[inline data{name}: {mime}, {len} bytes]")
    }
}

/// The images of `parts` (and of their function responses' parts), decoded, in the
/// order of [`part_chunks`]'s placeholders.
pub fn images(parts: &[Value]) -> Vec<Image> {
    let mut out = Vec::new();
    collect_images(parts, &mut out);
    out
}

fn collect_images(ps: &[Value], out: &mut Vec<Image>) {
    for p in ps {
        if let Some((d, data)) = inline_image(p) {
            out.push(Image {
                ext: image_ext(d.get("mimeType")),
                data: base64::decode(data),
            });
        } else if let Some(fr) = p.get("functionResponse") {
            collect_images(parts(Some(fr)), out);
        }
    }
}

/// A part's gist on one line, for `tree`: its text, `call NAME(ARGS)`, `result NAME`,
/// `image`, … (not cut; the caller makes it one line and cuts it).
pub fn part_gist(p: &Value) -> String {
    if let Some(t) = p.get("text") {
        let t = text_of(Some(t));
        return if is_thought(p) {
            format!("(thinking) {t}")
        } else {
            t
        };
    }
    if let Some(fc) = p.get("functionCall") {
        let args = fc.get("args").map(js_stringify).unwrap_or_default();
        return format!("call {}({args})", text_of(fc.get("name")));
    }
    if let Some(fr) = p.get("functionResponse") {
        let failed = fr
            .get("response")
            .and_then(|r| r.get("error"))
            .is_some_and(|e| !e.is_null());
        return format!(
            "result {}{}",
            text_of(fr.get("name")),
            if failed { " (error)" } else { "" }
        );
    }
    if let Some(d) = p.get("inlineData") {
        return format!("[{}]", text_of(d.get("mimeType")));
    }
    if let Some(f) = p.get("fileData") {
        return format!("[file {}]", text_of(f.get("fileUri")));
    }
    js_stringify(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parts_read_as_text_with_their_markers() {
        let ps = json!([
            {"text": "why", "thought": true},
            {"text": "Hello"},
            {"functionCall": {"id": "c1", "name": "ls", "args": {"path": "."}}},
            {"functionResponse": {"id": "c1", "name": "ls", "response": {"output": "a\nb"}}},
            {"functionResponse": {"id": "c2", "name": "cat", "response": {"error": "no"}}},
            {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
        ]);
        let mut n = 0;
        let c = part_chunks(ps.as_array().unwrap(), true, &mut n);
        assert_eq!(c[0], "[thinking]\nwhy");
        assert_eq!(c[1], "Hello");
        assert_eq!(c[2], "[tool call ls (c1)]\n{\n  \"path\": \".\"\n}");
        assert_eq!(c[3], "[tool result ls (c1)]\na\nb");
        assert_eq!(c[4], "[tool result cat (c2)]\n[error]\nno");
        assert_eq!(c[5], "[image 1: image/png, 8 bytes → image-1.png]");
        assert_eq!(n, 1);
        let imgs = images(ps.as_array().unwrap());
        assert_eq!(imgs.len(), 1);
        assert_eq!(imgs[0].ext, "png");
        assert_eq!(&imgs[0].data[..4], b"\x89PNG");
        assert_eq!(part_gist(&ps[2]), "call ls({\"path\":\".\"})");
        assert_eq!(part_gist(&ps[4]), "result cat (error)");
    }
}
