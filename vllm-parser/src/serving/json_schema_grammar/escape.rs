//! Text as xgrammar 0.2.8 writes it: JSON values (compact, picojson's string
//! escapes) and EBNF string literals (C escapes, `\x` / `\u` / `\U` for the
//! rest).

use serde_json::Value;

use super::Unsupported;

/// A JSON value serialized compactly as xgrammar's JSON library (picojson)
/// does (`const` / `enum` values, property names): integers that fit an
/// `i64` as they are, other numbers as doubles ([`double`]).
pub(super) fn json_value(value: &Value) -> Result<String, Unsupported> {
    let mut out = String::new();
    write_value(&mut out, value, 0)?;
    Ok(out)
}

fn write_value(out: &mut String, value: &Value, depth: usize) -> Result<(), Unsupported> {
    if depth > super::MAX_DEPTH {
        return Err(Unsupported::TooDeep);
    }
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => out.push_str(&i.to_string()),
            (None, Some(f)) if f.is_finite() => out.push_str(&double(f)),
            _ => return Err(Unsupported::Keyword("a number value out of range".into())),
        },
        Value::String(s) => json_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item, depth + 1)?;
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_string(out, key);
                out.push(':');
                write_value(out, item, depth + 1)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

/// A double as picojson writes it: `%.f` for a whole number below 2^53 in
/// magnitude, else `%.17g` (C's shortest of fixed and exponent notation at
/// 17 significant digits, trailing zeros dropped).
pub(super) fn double(value: f64) -> String {
    if value.abs() < (1u64 << 53) as f64 && value.fract() == 0.0 {
        let text = format!("{value:.0}");
        // `%.f` keeps the sign of a negative zero.
        return if value == 0.0 && value.is_sign_negative() {
            "-0".into()
        } else {
            text
        };
    }
    // 17 significant digits, correctly rounded, and the decimal exponent.
    let scientific = format!("{value:.16e}");
    let (_, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let trim = |text: &str| -> String {
        if text.contains('.') {
            text.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            text.to_owned()
        }
    };
    if !(-4..17).contains(&exponent) {
        let (mantissa, _) = scientific.split_once('e').unwrap_or((&scientific, ""));
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exponent.unsigned_abs())
    } else {
        trim(&format!("{value:.*}", (16 - exponent) as usize))
    }
}

/// A JSON string: `"` and `\` escaped, `\b \f \n \r \t`, other controls and
/// DEL as `\u00xx`; `/` and non-ASCII as they are.
pub(super) fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The inside of an EBNF string literal as xgrammar prints it.
pub(super) fn ebnf_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '?' => out.push_str("\\?"),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            '\0' => out.push_str("\\0"),
            '\u{1b}' => out.push_str("\\e"),
            ' '..='~' => out.push(c),
            c => {
                let code = c as u32;
                if code <= 0xff {
                    out.push_str(&format!("\\x{code:02x}"));
                } else if code <= 0xffff {
                    out.push_str(&format!("\\u{code:04x}"));
                } else {
                    out.push_str(&format!("\\U{code:08x}"));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_are_escaped_as_xgrammar_prints_them() {
        let mut json = String::new();
        json_string(&mut json, "a\"b\\\u{1}\u{7f}é☃😀/?'");
        assert_eq!(json, "\"a\\\"b\\\\\\u0001\\u007fé☃😀/?'\"");
        assert_eq!(
            ebnf_literal(&json),
            "\\\"a\\\\\\\"b\\\\\\\\\\\\u0001\\\\u007f\\xe9\\u2603\\U0001f600/\\?\\'\\\""
        );
    }
}
