//! Python's text for JSON values, where vLLM's messages and fields embed it:
//! `repr()` (error messages quote request values, `{'json': None, …}`) and
//! `json.dumps()` with its default separators (`structural_tag` is stored as the
//! `json.dumps` of the response format).

use serde_json::Value;

use crate::template::{write_float, write_json_string};

/// `repr(value)` of the Python object vLLM builds from this JSON.
pub(crate) fn repr(value: &Value) -> String {
    let mut out = String::new();
    write(&mut out, value, Syntax::Repr);
    out
}

/// `str(x)` of a float: the same as its `repr`.
pub(crate) fn float(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    let mut out = String::new();
    write_float(&mut out, f);
    out
}

/// `json.dumps(value)`: `", "` and `": "` separators, `ensure_ascii=True`.
pub(crate) fn json_dumps(value: &Value) -> String {
    let mut out = String::new();
    write(&mut out, value, Syntax::Json);
    out
}

/// `json.dumps(value, ensure_ascii=False)`: default separators, non-ASCII kept.
pub(crate) fn json_dumps_unicode(value: &Value) -> String {
    let mut out = String::new();
    write(&mut out, value, Syntax::JsonUnicode);
    out
}

/// `str(value)`: a string as it is, anything else as its `repr()` (what Python's
/// `str.format` and f-strings insert).
pub(crate) fn str_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => repr(other),
    }
}

/// `json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)`.
pub(crate) fn json_dumps_canonical(value: &Value) -> String {
    fn go(out: &mut String, value: &Value) {
        match value {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Number(n) => write_number(out, n),
            Value::String(s) => write_json_string(out, s, false),
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    go(out, item);
                }
                out.push(']');
            }
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_json_string(out, k, false);
                    out.push(':');
                    go(out, &map[k]);
                }
                out.push('}');
            }
        }
    }
    let mut out = String::new();
    go(&mut out, value);
    out
}

fn write_number(out: &mut String, n: &serde_json::Number) {
    match n.as_f64() {
        Some(f) if n.is_f64() => out.push_str(&float(f)),
        _ => out.push_str(&n.to_string()),
    }
}

/// The two notations: they differ in scalars and strings, not in how containers nest.
#[derive(Clone, Copy)]
enum Syntax {
    /// Python's `repr()`.
    Repr,
    /// `json.dumps()` with default separators and `ensure_ascii`.
    Json,
    /// `json.dumps(ensure_ascii=False)`.
    JsonUnicode,
}

impl Syntax {
    fn write_str(self, out: &mut String, s: &str) {
        match self {
            Syntax::Repr => write_str_repr(out, s),
            Syntax::Json => write_json_string(out, s, true),
            Syntax::JsonUnicode => write_json_string(out, s, false),
        }
    }
}

fn write(out: &mut String, value: &Value, syntax: Syntax) {
    match (value, syntax) {
        (Value::Null, Syntax::Repr) => out.push_str("None"),
        (Value::Null, Syntax::Json | Syntax::JsonUnicode) => out.push_str("null"),
        (Value::Bool(b), Syntax::Repr) => out.push_str(if *b { "True" } else { "False" }),
        (Value::Bool(b), Syntax::Json | Syntax::JsonUnicode) => {
            out.push_str(if *b { "true" } else { "false" })
        }
        (Value::Number(n), _) => write_number(out, n),
        (Value::String(s), _) => syntax.write_str(out, s),
        (Value::Array(items), _) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write(out, item, syntax);
            }
            out.push(']');
        }
        (Value::Object(map), _) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                syntax.write_str(out, k);
                out.push_str(": ");
                write(out, v, syntax);
            }
            out.push('}');
        }
    }
}

/// `repr(str)`: single quotes unless the text has `'` and no `"`; printable
/// characters as they are, the others escaped.
fn write_str_repr(out: &mut String, s: &str) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => {
                let code = c as u32;
                if code < 0x100 {
                    out.push_str(&format!("\\x{code:02x}"));
                } else {
                    out.push_str(&format!("\\u{code:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn repr_and_dumps_read_like_python() {
        // Expected values are Python 3's repr() / json.dumps() of the same objects.
        let v = json!({"a": [1, 2.0, null, true], "b's": "it's", "c": "q\"'", "d": "é\n"});
        assert_eq!(
            super::repr(&v),
            r#"{'a': [1, 2.0, None, True], "b's": "it's", 'c': 'q"\'', 'd': 'é\n'}"#
        );
        assert_eq!(
            super::json_dumps(&v),
            r#"{"a": [1, 2.0, null, true], "b's": "it's", "c": "q\"'", "d": "\u00e9\n"}"#
        );
        assert_eq!(super::float(1e-9), "1e-09");
    }
}
