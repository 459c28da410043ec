//! placeholder until the module lands
use serde_json::Value;
pub struct Context { pub thinking_level: String, pub model: Option<Value>, pub agent_messages: Vec<Value> }
pub fn build_session_context(path: &[&Value]) -> Context { Context { thinking_level: "off".into(), model: None, agent_messages: path.iter().filter_map(|e| e.get("message").cloned()).collect() } }
pub fn convert_to_llm(m: &[Value]) -> Vec<Value> { m.to_vec() }
