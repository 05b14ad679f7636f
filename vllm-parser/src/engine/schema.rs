//! Schema-aware argument types (vLLM's `ParserEngine._fix_arg_types` with
//! `extract_types_from_schema` and `coerce_to_schema_type`): formats that write
//! every argument as text (`<parameter=days>3</parameter>`) get the JSON types
//! the tool's schema declares.

use serde_json::Value;

use crate::json::{self, PyJson};
use crate::text::py_strip;
use crate::tools::{Tool, find_tool};

/// `args_json` with values coerced to the types `name`'s schema declares; the
/// text unchanged when no value changes (or it is not a JSON object).
pub fn fix_arg_types(args_json: &str, name: &str, tools: &[Tool]) -> String {
    if tools.is_empty() || name.is_empty() {
        return args_json.to_owned();
    }
    let Some(properties) = find_tool(tools, name).and_then(Tool::properties) else {
        return args_json.to_owned();
    };
    if properties.is_empty() {
        return args_json.to_owned();
    }
    let Ok(PyJson::Dict(mut items)) = json::loads(args_json) else {
        return args_json.to_owned();
    };
    if coerce_dict(&mut items, properties) {
        json::dumps(&PyJson::Dict(items))
    } else {
        args_json.to_owned()
    }
}

/// `_coerce_dict`: coerce each value that has an object schema; whether any changed.
fn coerce_dict(
    items: &mut [(String, PyJson)],
    properties: &serde_json::Map<String, Value>,
) -> bool {
    let mut changed = false;
    for (key, value) in items.iter_mut() {
        let Some(schema @ Value::Object(_)) = properties.get(key) else {
            continue;
        };
        changed |= coerce_value(value, schema);
    }
    changed
}

/// `_coerce_value`, in place; whether the value changed.
fn coerce_value(value: &mut PyJson, schema: &Value) -> bool {
    match value {
        PyJson::Str(text) => match coerce_text(text, &schema_types(schema)) {
            Some(coerced) => {
                *value = coerced;
                true
            }
            None => false,
        },
        PyJson::Dict(items) => match schema.get("properties") {
            Some(Value::Object(properties)) => coerce_dict(items, properties),
            _ => false,
        },
        PyJson::List(list) => match schema.get("items") {
            Some(items @ Value::Object(_)) => {
                let mut changed = false;
                for item in list.iter_mut() {
                    changed |= coerce_value(item, items);
                }
                changed
            }
            _ => false,
        },
        _ => {
            let text = json::dumps(value);
            let coerced = coerce_text(&text, &schema_types(schema))
                .unwrap_or_else(|| PyJson::Str(text.clone()));
            let same = std::mem::discriminant(&coerced) == std::mem::discriminant(value)
                && coerced == *value;
            if !same {
                *value = coerced;
            }
            !same
        }
    }
}

/// `extract_types_from_schema`: the type names a schema allows (`["string"]`
/// when it names none).
pub fn schema_types(schema: &Value) -> Vec<String> {
    let mut types = Vec::new();
    collect_types(schema, &mut types);
    if types.is_empty() {
        types.push("string".to_owned());
    }
    types
}

fn collect_types(schema: &Value, types: &mut Vec<String>) {
    let Value::Object(schema) = schema else {
        return;
    };
    match schema.get("type") {
        Some(Value::String(t)) => types.push(t.clone()),
        Some(Value::Array(list)) => {
            types.extend(list.iter().filter_map(Value::as_str).map(str::to_owned));
        }
        _ => {}
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        for value in values {
            types.push(
                match value {
                    Value::Null => "null",
                    Value::Bool(_) => "boolean",
                    Value::Number(n) if n.is_f64() => "number",
                    Value::Number(_) => "integer",
                    Value::String(_) => "string",
                    Value::Array(_) => "array",
                    Value::Object(_) => "object",
                }
                .to_owned(),
            );
        }
    }
    for field in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(choices)) = schema.get(field) {
            for choice in choices {
                let mut nested = Vec::new();
                collect_types(choice, &mut nested);
                if nested.is_empty() {
                    nested.push("string".to_owned());
                }
                types.extend(nested);
            }
        }
    }
}

/// vLLM's type aliases, applied after lower-casing and stripping.
fn normalise_type(name: &str) -> String {
    let name = py_strip(name).to_lowercase();
    let alias = match name.as_str() {
        "str" | "text" | "varchar" | "char" | "enum" => "string",
        "int" | "int32" | "int64" | "uint" | "uint32" | "uint64" | "long" | "short"
        | "unsigned" => "integer",
        "float" | "float32" | "float64" | "double" => "number",
        "bool" => "boolean",
        "dict" => "object",
        "arr" | "list" | "sequence" => "array",
        _ => return name,
    };
    alias.to_owned()
}

/// `coerce_to_schema_type(text, types)`: `None` when the result is the text
/// itself (a `str`), else the coerced value.
pub fn coerce_text(text: &str, types: &[String]) -> Option<PyJson> {
    let types: Vec<String> = types.iter().map(|t| normalise_type(t)).collect();
    let has = |t: &str| types.iter().any(|x| x == t);
    for candidate in [
        "null", "integer", "number", "boolean", "object", "array", "string",
    ] {
        if !has(candidate) {
            continue;
        }
        match candidate {
            "null" if text.to_lowercase() == "null" => return Some(PyJson::Null),
            "string" => return None,
            "integer" => {
                if let Some(int) = py_int(text) {
                    return Some(PyJson::Int(int));
                }
            }
            "number" => {
                if let Some(int) = py_int(text) {
                    return Some(PyJson::Int(int));
                }
                if let Some(float) = py_float(text).filter(|f| f.is_finite()) {
                    return Some(float_or_int(float));
                }
            }
            "boolean" => match py_strip(&text.to_lowercase()) {
                "true" | "1" => return Some(PyJson::Bool(true)),
                "false" | "0" => return Some(PyJson::Bool(false)),
                _ => {}
            },
            "object" | "array" => {
                if let Ok(parsed) = json::loads(text).map_err(drop).and_then(finite) {
                    return Some(parsed);
                }
            }
            _ => {}
        }
    }
    json::loads(text).ok().and_then(|v| finite(v).ok())
}

/// The value when it holds no infinite or NaN float (`_is_json_finite`).
fn finite(value: PyJson) -> Result<PyJson, ()> {
    fn ok(value: &PyJson) -> bool {
        match value {
            PyJson::Float(f) => f.is_finite(),
            PyJson::List(items) => items.iter().all(ok),
            PyJson::Dict(items) => items.iter().all(|(_, v)| ok(v)),
            _ => true,
        }
    }
    if ok(&value) { Ok(value) } else { Err(()) }
}

/// Python's `val if val != int(val) else int(val)` for a finite float.
pub(crate) fn float_or_int(value: f64) -> PyJson {
    if value.fract() != 0.0 {
        return PyJson::Float(value);
    }
    let digits = format!("{value:.0}");
    PyJson::Int(if digits == "-0" {
        "0".to_owned()
    } else {
        digits
    })
}

/// Python's `int(text)` as decimal digits: surrounding whitespace, a sign,
/// ASCII digits with single underscores between them.
pub(crate) fn py_int(text: &str) -> Option<String> {
    let text = py_strip(text);
    let (negative, digits) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let clean = underscored_digits(digits)?;
    let trimmed = clean.trim_start_matches('0');
    Some(match (trimmed.is_empty(), negative) {
        (true, _) => "0".to_owned(),
        (false, true) => format!("-{trimmed}"),
        (false, false) => trimmed.to_owned(),
    })
}

/// ASCII digits with single underscores between digits, underscores removed.
fn underscored_digits(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    if bytes.is_empty() || !bytes[0].is_ascii_digit() || !bytes[bytes.len() - 1].is_ascii_digit() {
        return None;
    }
    let mut out = String::with_capacity(bytes.len());
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'0'..=b'9' => out.push(b as char),
            b'_' if bytes[i - 1].is_ascii_digit() && bytes[i + 1].is_ascii_digit() => {}
            _ => return None,
        }
    }
    Some(out)
}

/// Python's `float(text)`: decimal or exponent notation (underscores between
/// digits), `inf`/`infinity`/`nan` in any case, surrounding whitespace.
pub(crate) fn py_float(text: &str) -> Option<f64> {
    let text = py_strip(text);
    let (sign, body) = match text.as_bytes().first()? {
        b'-' => (-1.0, &text[1..]),
        b'+' => (1.0, &text[1..]),
        _ => (1.0, text),
    };
    match body.to_lowercase().as_str() {
        "inf" | "infinity" => return Some(sign * f64::INFINITY),
        "nan" => return Some(f64::NAN),
        _ => {}
    }
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(at) => (&body[..at], Some(&body[at + 1..])),
        None => (body, None),
    };
    let (int_part, frac_part) = match mantissa.find('.') {
        Some(at) => (&mantissa[..at], Some(&mantissa[at + 1..])),
        None => (mantissa, None),
    };
    let int_digits = if int_part.is_empty() {
        String::new()
    } else {
        underscored_digits(int_part)?
    };
    let frac_digits = match frac_part {
        Some("") | None => String::new(),
        Some(frac) => underscored_digits(frac)?,
    };
    if int_digits.is_empty() && frac_digits.is_empty() {
        return None;
    }
    let mut normal = format!("{int_digits}.{frac_digits}0");
    if let Some(exponent) = exponent {
        let (esign, edigits) = match exponent.as_bytes().first()? {
            b'-' => ("-", &exponent[1..]),
            b'+' => ("", &exponent[1..]),
            _ => ("", exponent),
        };
        normal.push('e');
        normal.push_str(esign);
        normal.push_str(&underscored_digits(edigits)?);
    }
    normal.parse::<f64>().ok().map(|f| sign * f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_number_syntax() {
        assert_eq!(py_int(" +0_7 ").as_deref(), Some("7"));
        assert_eq!(py_int("-0").as_deref(), Some("0"));
        assert_eq!(py_int("1__0"), None);
        assert_eq!(py_int("1.0"), None);
        assert_eq!(py_float("2.50"), Some(2.5));
        assert_eq!(py_float(".5e1"), Some(5.0));
        assert_eq!(py_float("5."), Some(5.0));
        assert_eq!(py_float("1e400"), Some(f64::INFINITY));
        assert_eq!(py_float("e5"), None);
        assert_eq!(
            float_or_int(1e20),
            PyJson::Int("100000000000000000000".into())
        );
    }
}
