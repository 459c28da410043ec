//! What Qwen Code 0.24.4 does to the media of a history just before it sends it
//! (`GeminiChat.getRequestHistoryForRoute`), after the history is curated and before
//! it becomes OpenAI messages:
//!
//! 1. **Image payloads** (`getRequestHistory`, `image-payload-references.ts`): when the
//!    history holds 20 inline images or more (a tool's nested ones too), every one
//!    becomes a reference text `[Image #<id>: <mime>, <bytes> bytes]` (the id: the
//!    first 12 hex digits of the SHA-256 of the mime type, a NUL and the base64
//!    data), and the three most recent distinct ones are attached again at the end,
//!    after a line naming them, to the last user content (the new prompt).
//! 2. **Slimming** (`slimCompactionInput` with the model's modalities): an
//!    `inlineData` or `fileData` part of a medium the model does not take becomes
//!    `[image: <mime>]` (an image) or `[document: <mime>]` (anything else), nested
//!    in a tool's response too.

use serde_json::{Map, Value, json};
use std::collections::HashSet;

use super::modalities::Modalities;
use crate::model::core::js::{js_to_string, js_truthy};

/// `DEFAULT_IMAGE_PAYLOAD_THRESHOLD`.
const IMAGE_PAYLOAD_THRESHOLD: usize = 20;
/// `DEFAULT_MAX_RECENT_IMAGES`.
const MAX_RECENT_IMAGES: usize = 3;

/// `sanitizeMimeForPlaceholder`.
fn sanitize_mime(mime: &str) -> String {
    let mut s = String::new();
    let mut ws = false;
    for c in mime.chars() {
        if matches!(c, '\r' | '\n' | '\t') {
            if !ws {
                s.push(' ');
            }
            ws = true;
            continue;
        }
        ws = false;
        if c != '[' && c != ']' {
            s.push(c);
        }
    }
    js_slice(s.trim(), 128)
}

/// The first `n` UTF-16 units of `s` (`String.prototype.slice(0, n)`; a surrogate
/// pair cut in half loses its half, as the JSON encoder would replace it).
fn js_slice(s: &str, n: usize) -> String {
    let mut out = String::new();
    let mut units = 0;
    for c in s.chars() {
        units += c.len_utf16();
        if units > n {
            break;
        }
        out.push(c);
    }
    out
}

fn media_of(p: &Value) -> Option<&Value> {
    p.get("inlineData")
        .filter(|v| js_truthy(Some(v)))
        .or_else(|| p.get("fileData").filter(|v| js_truthy(Some(v))))
}

fn nested_parts_mut(p: &mut Value) -> Option<&mut Vec<Value>> {
    p.get_mut("functionResponse")?
        .get_mut("parts")?
        .as_array_mut()
}

fn nested_parts(p: &Value) -> Option<&Vec<Value>> {
    p.get("functionResponse")?.get("parts")?.as_array()
}

/// `supportsMimeType` (with modalities always known).
fn supports(mime: &str, m: Modalities) -> bool {
    if mime.starts_with("image/") {
        m.image
    } else if mime == "application/pdf" {
        m.pdf
    } else if mime.starts_with("audio/") {
        m.audio
    } else if mime.starts_with("video/") {
        m.video
    } else {
        false
    }
}

/// A part's `mimeType ?? "application/octet-stream"` as text (JS string coercion of
/// what else is there).
fn mime_of(d: &Value) -> String {
    match d.get("mimeType") {
        None | Some(Value::Null) => "application/octet-stream".into(),
        Some(Value::String(s)) => s.clone(),
        v => js_to_string(v),
    }
}

/// `transformPart` without a text cap: media the model does not take become a
/// placeholder; a tool's nested parts are slimmed the same way.
fn slim_part(p: &mut Value, m: Modalities) {
    if let Some(d) = media_of(p) {
        let mime = mime_of(d);
        // A non-string mimeType never matches a prefix.
        let supported = d.get("mimeType").is_some_and(Value::is_string) && supports(&mime, m);
        if !supported {
            let text = if mime.starts_with("image/") {
                format!("[image: {}]", sanitize_mime(&mime))
            } else {
                format!("[document: {}]", sanitize_mime(&mime))
            };
            *p = json!({ "text": text });
        }
        return;
    }
    if let Some(nested) = nested_parts_mut(p) {
        for q in nested {
            slim_part(q, m);
        }
    }
}

/// `slimCompactionInput(history, modalities)`.
pub fn slim(history: &mut [Value], m: Modalities) {
    for c in history {
        if let Some(Value::Array(parts)) = c.get_mut("parts") {
            for p in parts {
                slim_part(p, m);
            }
        }
    }
}

/// An inline image with data, as `inlineImageParts` yields it.
fn is_inline_image(p: &Value) -> bool {
    p.get("inlineData").is_some_and(|d| {
        d.get("mimeType")
            .and_then(Value::as_str)
            .is_some_and(|m| m.starts_with("image/"))
            && js_truthy(d.get("data"))
    })
}

fn count_images(history: &[Value]) -> usize {
    let mut n = 0;
    for c in history {
        for p in c
            .get("parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            n += usize::from(is_inline_image(p));
            n += nested_parts(p)
                .into_iter()
                .flatten()
                .filter(|q| is_inline_image(q))
                .count();
        }
    }
    n
}

/// An image taken out of the history (`StoredImagePayload`).
#[derive(Clone)]
struct Stored {
    id: String,
    mime: String,
    data: String,
    display: Option<Value>,
}

/// `approxBase64Bytes`.
fn approx_base64_bytes(s: &str) -> usize {
    let body = match s.strip_prefix("data:") {
        Some(_) => s.find(',').map_or(s, |k| &s[k + 1..]),
        None => s,
    };
    // Lengths count UTF-16 units; base64 is ASCII.
    let len = body.encode_utf16().count();
    if len == 0 {
        return 0;
    }
    let pad = if s.ends_with("==") {
        2
    } else {
        usize::from(s.ends_with('='))
    };
    (len * 3 / 4).saturating_sub(pad)
}

fn stored_of(d: &Value) -> Stored {
    let data = d
        .get("data")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let mime = d
        .get("mimeType")
        .and_then(Value::as_str)
        .unwrap_or("application/octet-stream")
        .to_string();
    let mut input = Vec::with_capacity(mime.len() + 1 + data.len());
    input.extend_from_slice(mime.as_bytes());
    input.push(0);
    input.extend_from_slice(data.as_bytes());
    let id = sha256_hex(&input)[..12].to_string();
    Stored {
        id,
        mime,
        data,
        display: d.get("displayName").cloned(),
    }
}

/// `safeImageMimeType`.
fn safe_image_mime(mime: &str) -> String {
    let ok = mime.len() > "image/".len()
        && mime.len() <= "image/".len() + 64
        && mime[..6].eq_ignore_ascii_case("image/")
        && mime[6..]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'+' | b'-'));
    if ok {
        mime.to_lowercase()
    } else {
        "image/unknown".into()
    }
}

fn reference_text(s: &Stored) -> String {
    format!(
        "[Image #{}: {}, {} bytes]",
        s.id,
        safe_image_mime(&s.mime),
        approx_base64_bytes(&s.data)
    )
}

/// The image ids named by reference texts in `parts` (and their nested parts), in
/// order of first appearance.
fn referenced_ids(parts: &[Value], out: &mut Vec<String>) {
    for p in parts {
        if let Some(t) = p.get("text").and_then(Value::as_str) {
            let mut rest = t;
            while let Some(k) = rest.find("[Image #") {
                let after = &rest[k + 8..];
                let hex: String = after.chars().take(12).collect();
                let ok = hex.len() == 12
                    && hex.bytes().all(|b| b.is_ascii_hexdigit())
                    && after[12..].starts_with(": ")
                    && after[14..].find(']').is_some_and(|e| e > 0);
                if ok {
                    let id = hex.to_lowercase();
                    if !out.contains(&id) {
                        out.push(id);
                    }
                }
                rest = &rest[k + 1..];
            }
        }
        if let Some(n) = nested_parts(p) {
            referenced_ids(n, out);
        }
    }
}

/// The ids of the inline images among `parts` (and their nested parts).
fn inline_ids(parts: &[Value], out: &mut Vec<String>) {
    for p in parts {
        if is_inline_image(p) {
            out.push(stored_of(&p["inlineData"]).id);
        }
        for q in nested_parts(p).into_iter().flatten() {
            if is_inline_image(q) {
                out.push(stored_of(&q["inlineData"]).id);
            }
        }
    }
}

/// `getRequestHistory` for the next prompt: when the history (with that prompt)
/// holds `IMAGE_PAYLOAD_THRESHOLD` inline images or more, each one outside the
/// prompt's content becomes a reference, and the most recent ones are attached again
/// at the end of that content (`buildReattachParts`). The prompt's content is a last
/// user content of the history, which the prompt joins, else a new one.
pub fn replace_image_payloads(history: &mut Vec<Value>) {
    if count_images(history) < IMAGE_PAYLOAD_THRESHOLD {
        return;
    }
    let is_user = |c: &Value| c.get("role").and_then(Value::as_str) == Some("user");
    let skip = history
        .len()
        .checked_sub(1)
        .filter(|&k| is_user(&history[k]));
    let mut replaced: Vec<Stored> = Vec::new();
    let replace = |p: &mut Value, replaced: &mut Vec<Stored>| {
        if !is_inline_image(p) {
            return;
        }
        let s = stored_of(&p["inlineData"]);
        let text = reference_text(&s);
        if let Some(o) = p.as_object_mut() {
            o.remove("inlineData");
            o.insert("text".into(), Value::String(text));
        }
        replaced.push(s);
    };
    for (k, c) in history.iter_mut().enumerate() {
        if Some(k) == skip {
            continue;
        }
        if let Some(Value::Array(parts)) = c.get_mut("parts") {
            for p in parts {
                replace(p, &mut replaced);
                if let Some(n) = nested_parts_mut(p) {
                    for q in n {
                        replace(q, &mut replaced);
                    }
                }
            }
        }
    }
    let parts_at = |k: usize| -> &[Value] {
        history[k]
            .get("parts")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    };
    let mut referenced = Vec::new();
    let mut inline = Vec::new();
    for k in 0..history.len() {
        referenced_ids(parts_at(k), &mut referenced);
        inline_ids(parts_at(k), &mut inline);
    }
    let mut last_referenced = Vec::new();
    if let Some(k) = skip {
        referenced_ids(parts_at(k), &mut last_referenced);
    }
    let fresh = |id: &String| !inline.contains(id) && !last_referenced.contains(id);
    let stored = |id: &String| replaced.iter().find(|s| &s.id == id);
    let mut candidates: Vec<&Stored> = replaced.iter().filter(|s| fresh(&s.id)).collect();
    candidates.extend(referenced.iter().filter(|id| fresh(id)).filter_map(stored));
    let mut seen = HashSet::new();
    let mut recent: Vec<&Stored> = Vec::new();
    for s in candidates.iter().rev() {
        if seen.insert(s.id.clone()) {
            recent.push(s);
            if recent.len() == MAX_RECENT_IMAGES {
                break;
            }
        }
    }
    recent.reverse();
    for id in &last_referenced {
        if inline.contains(id) || recent.iter().any(|s| &s.id == id) {
            continue;
        }
        if let Some(s) = stored(id) {
            if recent.len() >= MAX_RECENT_IMAGES.max(1) {
                recent.remove(0);
            }
            recent.push(s);
        }
    }
    if recent.is_empty() {
        return;
    }
    let mut parts = vec![json!({
        "text": format!(
            "Images read earlier in this session (may be OUTDATED, do not treat as current UI state): {}",
            recent.iter().map(|s| format!("Image #{}", s.id)).collect::<Vec<_>>().join(", ")
        )
    })];
    for s in &recent {
        let mut d = Map::new();
        d.insert("mimeType".into(), Value::String(s.mime.clone()));
        d.insert("data".into(), Value::String(s.data.clone()));
        if let Some(n) = &s.display {
            d.insert("displayName".into(), n.clone());
        }
        parts.push(json!({ "inlineData": d }));
    }
    match skip {
        Some(k) => {
            if let Some(Value::Array(p)) = history[k].get_mut("parts") {
                p.extend(parts);
            } else {
                history[k]["parts"] = Value::Array(parts);
            }
        }
        None => history.push(json!({"role": "user", "parts": parts})),
    }
}

/// SHA-256 of `data`, in lowercase hex.
fn sha256_hex(data: &[u8]) -> String {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    let mut msg = data.to_vec();
    let bits = (data.len() as u64).wrapping_mul(8);
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bits.to_be_bytes());
    for block in msg.chunks_exact(64) {
        let mut w = [0u32; 64];
        for (t, c) in block.chunks_exact(4).enumerate() {
            w[t] = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
        }
        for t in 16..64 {
            let s0 = w[t - 15].rotate_right(7) ^ w[t - 15].rotate_right(18) ^ (w[t - 15] >> 3);
            let s1 = w[t - 2].rotate_right(17) ^ w[t - 2].rotate_right(19) ^ (w[t - 2] >> 10);
            w[t] = w[t - 16]
                .wrapping_add(s0)
                .wrapping_add(w[t - 7])
                .wrapping_add(s1);
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = h;
        for t in 0..64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = hh
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[t])
                .wrapping_add(w[t]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            hh = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
            *x = x.wrapping_add(y);
        }
    }
    h.iter().map(|x| format!("{x:08x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_is_sha256() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let long = vec![b'a'; 1000];
        assert_eq!(
            sha256_hex(&long),
            "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3"
        );
    }

    #[test]
    fn media_a_model_does_not_take_become_placeholders() {
        let mut h = vec![json!({"role": "user", "parts": [
            {"text": "look"},
            {"inlineData": {"mimeType": "image/png", "data": "AAAA"}},
            {"fileData": {"mimeType": "application/pdf", "fileUri": "x"}},
            {"functionResponse": {"name": "f", "response": {}, "parts": [
                {"inlineData": {"mimeType": "au\ndio/[x]", "data": "AA"}}]}}
        ]})];
        slim(&mut h, Modalities::default());
        assert_eq!(
            h[0]["parts"],
            json!([
                {"text": "look"},
                {"text": "[image: image/png]"},
                {"text": "[document: application/pdf]"},
                {"functionResponse": {"name": "f", "response": {}, "parts": [
                    {"text": "[document: au dio/x]"}]}}
            ])
        );
        let mut h2 = vec![json!({"role": "user", "parts": [
            {"inlineData": {"mimeType": "image/png", "data": "AAAA"}}]})];
        let keep = h2.clone();
        slim(
            &mut h2,
            Modalities {
                image: true,
                ..Modalities::default()
            },
        );
        assert_eq!(h2, keep);
    }

    #[test]
    fn twenty_images_become_references_and_the_last_three_come_back() {
        let mut h = Vec::new();
        for k in 0..20 {
            h.push(json!({"role": "user", "parts": [
                {"text": format!("p{k}")},
                {"inlineData": {"mimeType": "image/png", "data": format!("QUJD{k:02}==")}}]}));
            h.push(json!({"role": "model", "parts": [{"text": "ok"}]}));
        }
        let mut less = h[..38].to_vec();
        let keep = less.clone();
        replace_image_payloads(&mut less);
        assert_eq!(less, keep, "19 images stay");
        replace_image_payloads(&mut h);
        assert_eq!(h.len(), 41);
        let first = h[0]["parts"][1]["text"].as_str().unwrap();
        assert!(first.starts_with("[Image #"), "{first}");
        assert!(first.ends_with(": image/png, 4 bytes]"), "{first}");
        let last = h[40]["parts"].as_array().unwrap();
        assert_eq!(last.len(), 4);
        assert!(
            last[0]["text"]
                .as_str()
                .unwrap()
                .starts_with("Images read earlier in this session")
        );
        assert_eq!(last[3]["inlineData"]["data"], "QUJD19==");
    }
}
