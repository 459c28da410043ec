//! Gemini-style `Content`: what every agent that stores the Gemini API's messages
//! shares (Gemini CLI, and Qwen Code, which keeps the same shape).
//!
//! A `Content` is `{"role", "parts"}`; a part is one of `text` (with `thought: true`
//! for the model's thinking), `functionCall` (`{id, name, args}`), `functionResponse`
//! (`{id, name, response}`), `inlineData` (`{mimeType, data}`: base64 bytes, an image
//! or any other file), `fileData`, `executableCode`, `codeExecutionResult`. Agents
//! store parts as the API defines them, so what a part *means* is the same whoever
//! wrote it; what an agent does with them (which it sends, which it drops) stays in
//! its own folder. Here:
//!
//! * [`part_to_string`] and [`parts_to_string`]: the string form the Gemini CLI code
//!   base tests parts with (`partToString`, `partListUnionToString`), JavaScript's
//!   semantics included, since agents decide on it (an ignored prompt, a title);
//! * [`part_chunks`] and [`content_chunks`]: a part as readable text, in the mount's
//!   conventions (text verbatim, markers as whole lines in square brackets, tool calls
//!   with their arguments as indented JSON, images as placeholders naming their
//!   `image-N.EXT` file);
//! * [`images`]: the `inlineData` parts decoded, in the placeholders' order;
//! * [`parts`]: a Content's parts, borrowed; [`part_gist`]: a part on one line, for
//!   `tree`.
//!
//! A `functionResponse` may carry `parts` of its own (media a tool returned, as Qwen
//! Code's `read_file` of an image stores them): they are shown after the result's
//! output, and their images decoded in that order.

use crate::model::core::base64;
use crate::model::core::js::{js_stringify, js_stringify_pretty, js_to_string, js_truthy};
use crate::model::core::text::{Image, image_ext, text_of};
use serde_json::Value;

/// A part's string form, as the Gemini CLI's `partToString(part, {verbose})` gives it:
/// a falsy value is empty, a string is itself, an array its parts' forms joined; an
/// object is its `text` (empty when missing or `null`), and with `verbose` a marker
/// for the other kinds of part (`[Thought: true]`, `[Function Call: NAME]`,
/// `[Function Response: NAME]`, `[Image: image/png, 0.1 KB]`, …), tested in the
/// CLI's order.
pub fn part_to_string(v: &Value, verbose: bool) -> String {
    if !js_truthy(Some(v)) {
        return String::new();
    }
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(|p| part_to_string(p, verbose)).collect(),
        Value::Object(part) => {
            if verbose {
                if part.contains_key("videoMetadata") {
                    return "[Video Metadata]".into();
                }
                if let Some(t) = part.get("thought") {
                    return format!("[Thought: {}]", js_to_string(Some(t)));
                }
                if part.contains_key("codeExecutionResult") {
                    return "[Code Execution Result]".into();
                }
                if part.contains_key("executableCode") {
                    return "[Executable Code]".into();
                }
                if part.contains_key("fileData") {
                    return "[File Data]".into();
                }
                if let Some(c) = part.get("functionCall") {
                    return format!("[Function Call: {}]", js_to_string(c.get("name")));
                }
                if let Some(r) = part.get("functionResponse") {
                    return format!("[Function Response: {}]", js_to_string(r.get("name")));
                }
                if let Some(d) = part.get("inlineData") {
                    return inline_data_marker(d);
                }
            }
            match part.get("text") {
                None | Some(Value::Null) => String::new(),
                Some(t) => js_to_string(Some(t)),
            }
        }
        // A true boolean or a non-zero number: `part.text` is undefined.
        _ => String::new(),
    }
}

/// `[Image: image/png, 0.1 KB]`: the category of the MIME type (`Image`, `Audio`,
/// `Video`, else `Media`), and the size the base64 text stands for, in KB with one
/// decimal, as the CLI estimates it (`ceil(length * 3 / 4)` bytes).
fn inline_data_marker(d: &Value) -> String {
    let mime = match d.get("mimeType") {
        None | Some(Value::Null) => "unknown".to_string(),
        Some(m) => js_to_string(Some(m)),
    };
    let kb = match d.get("data") {
        None | Some(Value::Null) => "0.0".to_string(),
        // `data.length` counts UTF-16 code units.
        Some(Value::String(s)) => {
            let bytes = (s.encode_utf16().count() as f64 * 3.0 / 4.0).ceil();
            format!("{:.1}", bytes / 1024.0)
        }
        Some(_) => "NaN".to_string(),
    };
    let category = if mime.starts_with("audio/") {
        "Audio"
    } else if mime.starts_with("video/") {
        "Video"
    } else if mime.starts_with("image/") {
        "Image"
    } else {
        "Media"
    };
    format!("[{category}: {mime}, {kb} KB]")
}

/// `partListUnionToString`: a content's parts (a string, one part or a list) as one
/// string, verbose.
pub fn parts_to_string(content: &Value) -> String {
    part_to_string(content, true)
}

/// The parts of a content as a list: a string is one text part, a list is itself,
/// anything else one part (the shape `ensurePartArray` gives).
pub fn part_list(content: &Value) -> Vec<Value> {
    match content {
        Value::Array(items) => items
            .iter()
            .map(|p| match p {
                Value::String(s) => serde_json::json!({ "text": s }),
                other => other.clone(),
            })
            .collect(),
        Value::String(s) => vec![serde_json::json!({ "text": s })],
        other => vec![other.clone()],
    }
}

/// The `parts` of a Content, borrowed (nothing when it has none, or they are not a
/// list).
pub fn parts(content: Option<&Value>) -> &[Value] {
    match content.and_then(|c| c.get("parts")) {
        Some(Value::Array(ps)) => ps,
        _ => &[],
    }
}

/// Whether a part is the model's thinking (`thought` truthy).
pub fn is_thought(part: &Value) -> bool {
    js_truthy(part.get("thought"))
}

/// Readable text of each part of `content` (a string, one part, or a list of parts),
/// in order. `n_image` counts the `inlineData` parts met so far in the entry: their
/// placeholders name `image-N.EXT` (when `link`; a context, which has no image files,
/// says only what they are).
pub fn content_chunks(content: &Value, link: bool, n_image: &mut usize) -> Vec<String> {
    match content {
        Value::Null => Vec::new(),
        Value::Array(parts) => parts.iter().map(|p| part_chunk(p, link, n_image)).collect(),
        other => vec![part_chunk(other, link, n_image)],
    }
}

/// Readable text of the parts of a list (see [`content_chunks`]).
pub fn part_chunks(parts: &[Value], link: bool, n_image: &mut usize) -> Vec<String> {
    parts.iter().map(|p| part_chunk(p, link, n_image)).collect()
}

/// One part as readable text:
///
/// * text verbatim; thinking as `[thinking]` and its text;
/// * `[tool call NAME (ID)]` and the arguments as indented JSON;
/// * `[tool result NAME (ID)]`, `[error]` for an `error` response, then the output
///   (a response that is only `output` or `error` text shows that text; any other
///   response as indented JSON);
/// * `[image N: MIME, LEN bytes → image-N.EXT]` for `inlineData` (`[file N: …]` when
///   it is no image; the file is `image-N.bin` all the same);
/// * `[file data: URI (MIME)]`, `[code LANGUAGE]` and its code, `[code result
///   OUTCOME]` and its output, `[video metadata]`;
/// * anything else as indented JSON.
pub fn part_chunk(p: &Value, link: bool, n_image: &mut usize) -> String {
    let Value::Object(part) = p else {
        return match p {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => js_stringify_pretty(other),
        };
    };
    if let Some(c) = part.get("functionCall") {
        let mut s = format!(
            "[tool call {} ({})]",
            text_of(c.get("name")),
            text_of(c.get("id"))
        );
        if let Some(a) = c.get("args") {
            s.push('\n');
            s.push_str(&js_stringify_pretty(a));
        }
        return s;
    }
    if let Some(r) = part.get("functionResponse") {
        let mut s = format!(
            "[tool result {} ({})]",
            text_of(r.get("name")),
            text_of(r.get("id"))
        );
        let body = match r.get("response") {
            None | Some(Value::Null) => String::new(),
            Some(Value::Object(resp)) => {
                let only = |k: &str| resp.len() == 1 && resp.contains_key(k);
                if only("output") {
                    text_of(resp.get("output"))
                } else if only("error") {
                    format!("[error]\n{}", text_of(resp.get("error")))
                } else {
                    js_stringify_pretty(&Value::Object(resp.clone()))
                }
            }
            Some(other) => js_stringify_pretty(other),
        };
        if !body.is_empty() {
            s.push('\n');
            s.push_str(body.strip_suffix('\n').unwrap_or(&body));
        }
        // Media the tool returned.
        for q in parts(Some(r)) {
            let t = part_chunk(q, link, n_image);
            if !t.is_empty() {
                s.push('\n');
                s.push_str(&t);
            }
        }
        return s;
    }
    if let Some(d) = part.get("inlineData") {
        *n_image += 1;
        let n = *n_image;
        let mime = d.get("mimeType");
        let mime_s = mime
            .and_then(Value::as_str)
            .unwrap_or("unknown type")
            .to_string();
        let len = d
            .get("data")
            .and_then(Value::as_str)
            .map_or(0, base64::decoded_len);
        let what = if mime_s.starts_with("image/") {
            "image"
        } else {
            "file"
        };
        return if link {
            let ext = image_ext(mime);
            format!("[{what} {n}: {mime_s}, {len} bytes → image-{n}.{ext}]")
        } else {
            format!("[{what} {n}: {mime_s}, {len} bytes]")
        };
    }
    if let Some(f) = part.get("fileData") {
        let uri = text_of(f.get("fileUri"));
        return match f.get("mimeType").and_then(Value::as_str) {
            Some(m) => format!("[file data: {uri} ({m})]"),
            None => format!("[file data: {uri}]"),
        };
    }
    if let Some(c) = part.get("executableCode") {
        let lang = text_of(c.get("language"));
        let code = text_of(c.get("code"));
        return format!("[code {lang}]\n{code}");
    }
    if let Some(r) = part.get("codeExecutionResult") {
        let outcome = text_of(r.get("outcome"));
        let out = text_of(r.get("output"));
        return format!("[code result {outcome}]\n{out}");
    }
    if part.contains_key("videoMetadata") && !part.contains_key("text") {
        return "[video metadata]".into();
    }
    match part.get("text") {
        Some(Value::String(t)) if is_thought(p) => {
            if t.is_empty() {
                "[thinking]".into()
            } else {
                format!("[thinking]\n{t}")
            }
        }
        Some(Value::String(t)) => t.clone(),
        Some(Value::Null) | None if part.keys().all(|k| k == "thoughtSignature") => String::new(),
        _ => js_stringify_pretty(p),
    }
}

/// The `inlineData` parts of `content` decoded, in order: `image-1.EXT` first.
pub fn images(content: &Value) -> Vec<Image> {
    let mut out = Vec::new();
    collect_images(content, &mut out);
    out
}

/// Adds the `inlineData` parts of `content` to `out`, decoded.
pub fn collect_images(content: &Value, out: &mut Vec<Image>) {
    fn one(p: &Value, out: &mut Vec<Image>) {
        if let Some(d) = p.get("inlineData") {
            out.push(Image {
                ext: image_ext(d.get("mimeType")),
                data: d
                    .get("data")
                    .and_then(Value::as_str)
                    .map(base64::decode)
                    .unwrap_or_default(),
            });
        } else if let Some(r) = p.get("functionResponse") {
            parts(Some(r)).iter().for_each(|q| one(q, out));
        }
    }
    match content {
        Value::Array(ps) => ps.iter().for_each(|p| one(p, out)),
        Value::Object(_) => one(content, out),
        _ => {}
    }
}

/// A part's gist on one line, for `tree`: its text (`(thinking) …` for a thought),
/// `call NAME(ARGS)`, `result NAME` (`(error)` for an error response), `[MIME]` for
/// inline data, `[file URI]`, else the part as JSON (not cut: the caller makes it one
/// line and cuts it).
pub fn part_gist(p: &Value) -> String {
    if let Some(Value::String(t)) = p.get("text") {
        return if is_thought(p) {
            format!("(thinking) {t}")
        } else {
            t.clone()
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
    fn string_forms_follow_the_cli() {
        let parts = json!([
            {"text": "<session_context>\nhi"},
            {"text": "x", "thought": true},
            {"functionCall": {"id": "c1", "name": "ls", "args": {}}},
            {"functionResponse": {"id": "c1", "name": "ls", "response": {"output": "a"}}},
            {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQ"}},
            {"inlineData": {"mimeType": "application/pdf", "data": ""}},
            {"fileData": {"fileUri": "gs://x"}},
            {},
            null,
            "plain",
            {"text": 5}
        ]);
        assert_eq!(
            parts_to_string(&parts),
            "<session_context>\nhi[Thought: true][Function Call: ls][Function Response: ls]\
             [Image: image/png, 0.0 KB][Media: application/pdf, 0.0 KB][File Data]plain5"
        );
        assert_eq!(
            part_to_string(&parts, false),
            "<session_context>\nhixplain5"
        );
        assert_eq!(parts_to_string(&json!("/help")), "/help");
        assert_eq!(parts_to_string(&json!(null)), "");
        assert_eq!(parts_to_string(&json!("")), "");
        // 1,500 base64 characters stand for 1,125 bytes: 1.1 KB.
        let d = "A".repeat(1500);
        assert_eq!(
            parts_to_string(&json!([{"inlineData": {"mimeType": "audio/wav", "data": d}}])),
            "[Audio: audio/wav, 1.1 KB]"
        );
    }

    #[test]
    fn parts_read_as_text_and_images_decode() {
        let parts = json!([
            {"text": "**Plan** look first", "thought": true},
            {"text": "Let me look."},
            {"functionCall": {"id": "ls__1", "name": "ls", "args": {"dir": "."}}},
            {"functionResponse": {"id": "ls__1", "name": "ls", "response": {"output": "a\nb\n"}}},
            {"functionResponse": {"id": "x__2", "name": "x", "response": {"error": "no such tool"}}},
            {"inlineData": {"mimeType": "image/png", "data": "aGVsbG8="}},
            {"thoughtSignature": "sig"}
        ]);
        let mut n = 0;
        let chunks = content_chunks(&parts, true, &mut n);
        assert_eq!(
            chunks,
            [
                "[thinking]\n**Plan** look first",
                "Let me look.",
                "[tool call ls (ls__1)]\n{\n  \"dir\": \".\"\n}",
                "[tool result ls (ls__1)]\na\nb",
                "[tool result x (x__2)]\n[error]\nno such tool",
                "[image 1: image/png, 5 bytes → image-1.png]",
                "",
            ]
        );
        assert_eq!(n, 1);
        let im = images(&parts);
        assert_eq!(im.len(), 1);
        assert_eq!((im[0].ext, &im[0].data[..]), ("png", &b"hello"[..]));
        let mut n = 0;
        assert_eq!(
            content_chunks(&json!("a string"), false, &mut n),
            ["a string"]
        );
    }

    #[test]
    fn a_tools_media_shows_after_its_output_and_parts_have_gists() {
        let parts = json!([
            {"functionResponse": {"id": "r1", "name": "read_file", "response": {"output": "Read image"},
                "parts": [{"inlineData": {"mimeType": "image/png", "data": "aGVsbG8="}}]}},
            {"inlineData": {"mimeType": "image/jpeg", "data": "aGk="}}
        ]);
        let mut n = 0;
        assert_eq!(
            content_chunks(&parts, true, &mut n),
            [
                "[tool result read_file (r1)]\nRead image\n[image 1: image/png, 5 bytes → image-1.png]",
                "[image 2: image/jpeg, 2 bytes → image-2.jpg]",
            ]
        );
        let im = images(&parts);
        assert_eq!((im[0].ext, im[1].ext), ("png", "jpg"));
        let content = json!({"role": "user", "parts": parts});
        assert_eq!(super::parts(Some(&content)).len(), 2);
        assert_eq!(part_gist(&parts[0]), "result read_file");
        assert_eq!(
            part_gist(&json!({"text": "hm", "thought": true})),
            "(thinking) hm"
        );
        assert_eq!(
            part_gist(&json!({"functionCall": {"name": "ls", "args": {"a": 1}}})),
            "call ls({\"a\":1})"
        );
    }

    #[test]
    fn part_lists_are_made_as_the_cli_makes_them() {
        assert_eq!(part_list(&json!("hi")), [json!({"text": "hi"})]);
        assert_eq!(
            part_list(&json!(["a", {"text": "b"}])),
            [json!({"text": "a"}), json!({"text": "b"})]
        );
        assert_eq!(part_list(&json!({"text": "c"})), [json!({"text": "c"})]);
    }
}
