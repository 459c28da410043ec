//! Claude Code's merging of two user messages (`rdr`) and the block helpers it takes,
//! shared by the loader (which merges the lines it reads) and [`super::api`] (which
//! merges what it sends). A file of its own that names neither, so that the loader
//! and `api.rs` (which uses the loader's `user_message`) do not name each other.

use serde_json::{Value, json};

pub(super) fn content(v: &Value) -> Option<&Value> {
    v.get("message").and_then(|m| m.get("content"))
}

pub(super) fn set_content(v: &mut Value, c: Value) {
    if let Some(m) = v.get_mut("message").and_then(Value::as_object_mut) {
        m.insert("content".into(), c);
    }
}

pub(super) fn block_type(b: &Value) -> &str {
    b.get("type").and_then(Value::as_str).unwrap_or("")
}

pub(super) fn is_true(v: Option<&Value>) -> bool {
    v.and_then(Value::as_bool) == Some(true)
}

/// `odr`: content as a block list.
pub(super) fn as_blocks(c: Option<&Value>) -> Vec<Value> {
    match c {
        Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    }
}

/// `tum`: concatenation, with `"\n"` added to a text block followed by a text block.
fn join_blocks(mut a: Vec<Value>, b: Vec<Value>) -> Vec<Value> {
    let last_text = a.last().is_some_and(|x| block_type(x) == "text");
    let first_text = b.first().is_some_and(|x| block_type(x) == "text");
    if last_text
        && first_text
        && let Some(l) = a.last_mut()
    {
        let t = l
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        l["text"] = Value::String(t + "\n");
    }
    a.extend(b);
    a
}

/// `jfc`: tool results first, keeping their order.
pub(super) fn results_first(bs: Vec<Value>) -> Vec<Value> {
    let (mut r, o): (Vec<Value>, Vec<Value>) =
        bs.into_iter().partition(|b| block_type(b) == "tool_result");
    r.extend(o);
    r
}

/// `rdr`: user message `b` merged into `a`.
pub fn merge_user(a: &Value, b: &Value) -> Value {
    let mut out = a.clone();
    if is_true(a.get("isMeta"))
        && let Some(u) = b.get("uuid")
    {
        out["uuid"] = u.clone();
    }
    let merged = results_first(join_blocks(as_blocks(content(a)), as_blocks(content(b))));
    set_content(&mut out, Value::Array(merged));
    out
}
