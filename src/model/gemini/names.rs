//! A session's name, as the CLI's session browser shows it (GEMINI-FORMAT §7): the
//! `summary` the metadata holds, else the first prompt the CLI counts
//! (`firstUserMessage`: its text parts joined), each cleaned as the browser cleans it.

use serde_json::Value;

/// The text parts of a content joined (`isTextPart` parts only), or the content when
/// it is a string.
pub fn text_parts(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(ps)) => ps
            .iter()
            .map(|p| p.get("text").and_then(Value::as_str).unwrap_or(""))
            .collect(),
        _ => String::new(),
    }
}

/// `cleanMessage`: line breaks and runs of whitespace become one space, everything
/// but printable ASCII goes, then the ends are trimmed.
pub fn clean_message(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut space = false;
    for c in s.chars() {
        if c.is_whitespace() || c == '\u{FEFF}' {
            space = true;
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        if (' '..='~').contains(&c) {
            out.push(c);
        }
    }
    out.trim().to_string()
}

/// `stripUnsafeCharacters` of a summary (terminal escapes, C0 and C1 controls but
/// tab and line breaks, bidirectional marks, zero-width space and BOM), on one line:
/// a `name` file holds one line.
pub fn strip_unsafe(s: &str) -> String {
    let plain = crate::model::core::text::strip_escapes(s);
    let kept: String = plain
        .chars()
        .filter(|&c| {
            let u = c as u32;
            !(matches!(u, 0x00..=0x08 | 0x0B | 0x0C | 0x0E..=0x1F | 0x7F..=0x9F)
                || matches!(c, '\u{200E}' | '\u{200F}' | '\u{200B}' | '\u{FEFF}')
                || (0x202A..=0x202E).contains(&u)
                || (0x2066..=0x2069).contains(&u))
        })
        .collect();
    kept.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_cleaned_as_the_browser_cleans_them() {
        // The browser drops what is not printable ASCII after it collapsed the spaces.
        assert_eq!(
            clean_message("  [[QA2]] 4 × 3\n\n= 12 "),
            "[[QA2]] 4  3 = 12"
        );
        assert_eq!(
            text_parts(Some(
                &json!([{"text": "a"}, {"inlineData": {}}, {"text": "b"}])
            )),
            "ab"
        );
        assert_eq!(
            strip_unsafe("Arith\u{200B}metic\nsession\x1b[1m!"),
            "Arithmetic session!"
        );
    }
}
