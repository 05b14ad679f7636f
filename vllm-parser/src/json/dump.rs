//! `json.dumps`.

use std::fmt::Write;

use super::PyJson;

/// Python's `json.dumps(value, ensure_ascii=False)`.
pub fn dumps(value: &PyJson) -> String {
    let mut out = String::new();
    write_value(&mut out, value, false);
    out
}

/// Python's `json.dumps(value)` (`ensure_ascii=True`).
pub fn dumps_ascii(value: &PyJson) -> String {
    let mut out = String::new();
    write_value(&mut out, value, true);
    out
}

fn write_value(out: &mut String, value: &PyJson, ascii: bool) {
    match value {
        PyJson::Null => out.push_str("null"),
        PyJson::Bool(true) => out.push_str("true"),
        PyJson::Bool(false) => out.push_str("false"),
        PyJson::Int(digits) => out.push_str(digits),
        PyJson::Float(f) => write_float(out, *f),
        PyJson::Str(s) => write_string(out, s, ascii),
        PyJson::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, item, ascii);
            }
            out.push(']');
        }
        PyJson::Dict(items) => {
            out.push('{');
            for (i, (key, item)) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_string(out, key, ascii);
                out.push_str(": ");
                write_value(out, item, ascii);
            }
            out.push('}');
        }
    }
}

/// A JSON string literal as Python's `json.dumps` writes it.
pub fn write_string(out: &mut String, s: &str, ascii: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            // `ensure_ascii` keeps only ' '..='~' (DEL is escaped too).
            c if c < ' ' || (ascii && c > '~') => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Python's `float.__repr__`: the shortest round-tripping digits, positional for
/// decimal exponents in `-4..16`, otherwise `d.ddde±XX`.
fn write_float(out: &mut String, f: f64) {
    if f.is_nan() {
        return out.push_str("NaN");
    }
    if f.is_infinite() {
        return out.push_str(if f > 0.0 { "Infinity" } else { "-Infinity" });
    }
    // `{:e}` gives the shortest round-trip digits: "-1.2345e-7", "1e16".
    let sci = format!("{f:e}");
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    out.push_str(sign);
    if (-4..16).contains(&exponent) {
        let point = exponent + 1; // digits before the decimal point
        if point <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-point) as usize));
            out.push_str(&digits);
        } else if point as usize >= digits.len() {
            out.push_str(&digits);
            out.extend(std::iter::repeat_n('0', point as usize - digits.len()));
            out.push_str(".0");
        } else {
            out.push_str(&digits[..point as usize]);
            out.push('.');
            out.push_str(&digits[point as usize..]);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(
            out,
            "e{}{:02}",
            if exponent < 0 { '-' } else { '+' },
            exponent.abs()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::loads;
    use super::*;

    #[test]
    fn floats_are_written_like_python_repr() {
        let cases = [
            ("1.0", "1.0"),
            ("1e16", "1e+16"),
            ("9999999999999998.0", "9999999999999998.0"),
            ("0.0001", "0.0001"),
            ("0.00001", "1e-05"),
            ("-2.5e-300", "-2.5e-300"),
            ("123.456", "123.456"),
            ("1e400", "Infinity"),
            ("-0.0", "-0.0"),
            ("1.5E3", "1500.0"),
        ];
        for (input, python) in cases {
            assert_eq!(dumps(&loads(input).unwrap()), python, "{input}");
        }
    }

    #[test]
    fn strings_and_containers_are_written_like_python() {
        let value =
            loads(r#"{"a": "S\u00e3o \"x\" \ud83c\udf27 \u0001", "b": [], "c": {}}"#).unwrap();
        assert_eq!(
            dumps(&value),
            "{\"a\": \"São \\\"x\\\" 🌧 \\u0001\", \"b\": [], \"c\": {}}"
        );
        assert_eq!(
            dumps_ascii(&value),
            "{\"a\": \"S\\u00e3o \\\"x\\\" \\ud83c\\udf27 \\u0001\", \"b\": [], \"c\": {}}"
        );
    }
}
