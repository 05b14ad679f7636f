//! Tool-call arguments cast by the calling tool's JSON schema, as transformers'
//! `ResponseParser._coerce_tool_calls` does when a region closes: string
//! arguments (as `xml-inline` produces them) become the integer, number,
//! boolean, null, object or array their parameter's schema declares.

use serde_json::Value;

use crate::engine::schema::{float_or_int, py_float, py_int};
use crate::json::{self, PyJson};
use crate::text::py_strip;
use crate::tools::Tool;

/// `_coerce_tool_calls(value)` with the request's tools.
pub(crate) fn coerce_tool_calls(value: &mut PyJson, tools: &[Tool]) {
    if let PyJson::List(items) = value {
        for item in items {
            coerce_tool_calls(item, tools);
        }
        return;
    }
    let Some(PyJson::Dict(function)) = dict_value_mut(value, "function") else {
        return;
    };
    let Some(name) = function
        .iter()
        .find(|(k, _)| k == "name")
        .and_then(|(_, v)| v.as_str())
        .map(str::to_owned)
    else {
        return;
    };
    let Some(PyJson::Dict(arguments)) = function
        .iter_mut()
        .find(|(k, _)| k == "arguments")
        .map(|(_, v)| v)
    else {
        return;
    };
    // The last tool of that name wins, as in the dict vLLM builds.
    let Some(properties) = tools
        .iter()
        .rev()
        .find(|tool| tool.name == name)
        .and_then(Tool::properties)
        .filter(|properties| !properties.is_empty())
    else {
        return;
    };
    for (key, argument) in arguments.iter_mut() {
        let types = properties.get(key).map(schema_types).unwrap_or_default();
        if types.is_empty() {
            continue;
        }
        match argument {
            PyJson::Str(raw) => *argument = coerce(raw, &types),
            PyJson::List(items) if !types.iter().any(|t| t == "array") => {
                for item in items {
                    if let PyJson::Str(raw) = item {
                        *item = coerce(raw, &types);
                    }
                }
            }
            _ => {}
        }
    }
}

fn dict_value_mut<'a>(value: &'a mut PyJson, key: &str) -> Option<&'a mut PyJson> {
    match value {
        PyJson::Dict(items) => items.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
        _ => None,
    }
}

/// `_schema_types`: `type` (a name or list), `anyOf` / `oneOf` choices, and
/// `null` for `nullable`.
fn schema_types(schema: &Value) -> Vec<String> {
    let Value::Object(schema) = schema else {
        return Vec::new();
    };
    let mut types = Vec::new();
    match schema.get("type") {
        Some(Value::String(t)) => types.push(t.clone()),
        Some(Value::Array(list)) => {
            types.extend(list.iter().filter_map(Value::as_str).map(str::to_owned));
        }
        _ => {}
    }
    for union in ["anyOf", "oneOf"] {
        if let Some(Value::Array(choices)) = schema.get(union) {
            types.extend(choices.iter().flat_map(schema_types));
        }
    }
    if schema.get("nullable").is_some_and(crate::py_truthy) && !types.iter().any(|t| t == "null") {
        types.push("null".to_owned());
    }
    types
}

/// `_coerce(raw, types)`: the first type the text converts to, else the text.
fn coerce(raw: &str, types: &[String]) -> PyJson {
    for name in types {
        let value = match name.as_str() {
            "integer" => py_int(raw).map(PyJson::Int).or_else(|| {
                py_float(raw)
                    .filter(|f| f.is_finite() && f.fract() == 0.0)
                    .map(float_or_int)
            }),
            "number" => py_float(raw).filter(|f| f.is_finite()).map(|number| {
                if number.fract() == 0.0 && !raw.contains('.') {
                    float_or_int(number)
                } else {
                    PyJson::Float(number)
                }
            }),
            "boolean" => match py_strip(raw).to_lowercase().as_str() {
                "true" | "1" => Some(PyJson::Bool(true)),
                "false" | "0" => Some(PyJson::Bool(false)),
                _ => None,
            },
            "null" => matches!(py_strip(raw), "null" | "None").then_some(PyJson::Null),
            "object" => json::loads(raw)
                .ok()
                .filter(|v| matches!(v, PyJson::Dict(_))),
            "array" => json::loads(raw)
                .ok()
                .filter(|v| matches!(v, PyJson::List(_))),
            _ => None,
        };
        if let Some(value) = value {
            return value;
        }
    }
    PyJson::Str(raw.to_owned())
}
