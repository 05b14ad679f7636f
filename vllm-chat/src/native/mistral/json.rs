//! Python's `json.dumps` (default separators `", "` and `": "`) and `json.loads`
//! round trips, as mistral-common writes tools, tool calls and tool results.

use serde_json::Value;

use super::instruct::ToolJson;
use crate::template::{write_float, write_json_string};

/// `json.dumps(value, ensure_ascii=…)`.
pub(crate) fn dumps(value: &Value, ensure_ascii: bool) -> String {
    let mut out = String::new();
    write(&mut out, value, ensure_ascii);
    out
}

/// `json.dumps([tool.model_dump() for tool in tools])` for `[AVAILABLE_TOOLS]`, written
/// from the request's own values (a cold render of a request with large tool
/// schemas spent a fifth of its time copying them into a `Value` first).
pub(crate) fn dumps_tools(tools: &[ToolJson<'_>]) -> String {
    let mut out = String::new();
    out.push('[');
    for (i, tool) in tools.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(r#"{"type": "function", "function": {"name": "#);
        write_json_string(&mut out, tool.name, false);
        out.push_str(r#", "description": "#);
        write_json_string(&mut out, tool.description, false);
        out.push_str(r#", "parameters": "#);
        match tool.parameters {
            Some(parameters) => write(&mut out, parameters, false),
            None => out.push_str("{}"),
        }
        out.push_str("}}");
    }
    out.push(']');
    out
}

fn write(out: &mut String, value: &Value, ensure_ascii: bool) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => {
            if n.is_i64() || n.is_u64() {
                out.push_str(&n.to_string());
            } else if let Some(f) = n.as_f64() {
                write_float(out, f);
            } else {
                out.push_str(&n.to_string());
            }
        }
        Value::String(s) => write_json_string(out, s, ensure_ascii),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write(out, item, ensure_ascii);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_json_string(out, key, ensure_ascii);
                out.push_str(": ");
                write(out, item, ensure_ascii);
            }
            out.push('}');
        }
    }
}

/// `json.loads(text)`, `None` when the text is not JSON.
pub(crate) fn loads(text: &str) -> Option<Value> {
    serde_json::from_str(text).ok()
}
