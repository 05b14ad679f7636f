//! The few Python semantics the native encoders lean on, over `serde_json` values:
//! `dict.get`, truthiness, negative indexing and `str.format` of non-strings. The
//! encoders are line-by-line ports of vLLM's Python, and these keep them readable.

use serde_json::Value;

use crate::RenderError;
use crate::python;

/// Python's `type(x).__name__` of a JSON value.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// `msg.get(key)`: `None` when absent or `null`.
pub(crate) fn get<'a>(msg: &'a Value, key: &str) -> Option<&'a Value> {
    msg.get(key).filter(|v| !v.is_null())
}

/// `msg.get(key)` compared with a string.
pub(crate) fn is(msg: &Value, key: &str, expected: &str) -> bool {
    msg.get(key).and_then(Value::as_str) == Some(expected)
}

/// Python's truthiness of a JSON value.
pub(crate) fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
    }
}

/// `str(value)` as `str.format` inserts it (`None` for a missing value).
pub(crate) fn s(v: Option<&Value>) -> String {
    v.map_or_else(|| "None".into(), python::str_of)
}

/// `value or ""` formatted.
pub(crate) fn or_empty(v: Option<&Value>) -> String {
    if truthy(v) { s(v) } else { String::new() }
}

/// `repr(value)`.
pub(crate) fn repr(v: &Value) -> String {
    python::repr(v)
}

/// `json.dumps(value, ensure_ascii=False)`.
pub(crate) fn to_json(v: &Value) -> String {
    python::json_dumps_unicode(v)
}

/// `list[i]` with Python's negative indices (`None` past either end).
pub(crate) fn at(list: &[Value], i: isize) -> Option<&Value> {
    let len = list.len() as isize;
    let i = if i < 0 { i + len } else { i };
    if (0..len).contains(&i) {
        list.get(i as usize)
    } else {
        None
    }
}

/// A `ValueError` (or any other exception) the encoder raises: vLLM answers 400
/// with its message.
pub(crate) fn error(message: impl Into<String>) -> RenderError {
    RenderError::InvalidRequest {
        message: message.into(),
        param: None,
    }
}

/// `KeyError(key)`'s message.
pub(crate) fn key_error(key: &str) -> RenderError {
    error(format!("'{key}'"))
}
