//! placeholder until the module lands
use serde_json::Value;
pub struct Image { pub ext: &'static str, pub data: Vec<u8> }
pub fn kind_name(_e: &Value) -> String { String::new() }
pub fn render_entry(e: &Value) -> String { format!("{e}\n") }
pub fn images(_e: &Value) -> Vec<Image> { Vec::new() }
pub fn preview(e: &Value) -> String { e.get("type").and_then(Value::as_str).unwrap_or("?").to_string() }
pub fn render_context_message(m: &Value) -> String { format!("## {}\n{m}\n\n", m.get("role").and_then(Value::as_str).unwrap_or("?")) }
pub fn render_context(ms: &[Value]) -> String { ms.iter().map(render_context_message).collect() }
pub fn context_json(ms: &[Value]) -> String { if ms.is_empty() { "[]\n".into() } else { format!("[\n{}\n]\n", ms.iter().map(|m| m.to_string()).collect::<Vec<_>>().join(",\n")) } }
pub fn js_stringify(v: &Value) -> String { v.to_string() }
