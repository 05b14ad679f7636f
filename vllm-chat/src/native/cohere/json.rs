//! How the Cohere format spells JSON: compact `serde_json` text with a space after
//! every `,` and `:` outside string literals, and strings escaped as JSON without
//! their quotes where the format puts a value between quotes of its own.

use serde_json::Value;

/// `value` as the format writes it (`{"a": 1, "b": [2, 3]}`).
pub(super) fn to_json(value: &Value) -> String {
    spaced(&serde_json::to_string(value).unwrap_or_default())
}

/// A string escaped as a JSON string body (no surrounding quotes).
pub(super) fn escape(s: &str) -> String {
    let quoted = serde_json::to_string(s).unwrap_or_default();
    quoted
        .get(1..quoted.len().saturating_sub(1))
        .unwrap_or_default()
        .to_owned()
}

/// Compact JSON with a space after each structural `,` and `:`.
fn spaced(compact: &str) -> String {
    let mut out = String::with_capacity(compact.len() + compact.len() / 4);
    let mut in_string = false;
    let mut escaped = false;
    for c in compact.chars() {
        out.push(c);
        if !in_string && (c == ',' || c == ':') {
            out.push(' ');
        }
        if c == '"' && !escaped {
            in_string = !in_string;
        }
        escaped = c == '\\' && !escaped;
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn spaces_outside_strings_only() {
        let v = json!({"a": "x, y: \"z\"", "b": [1, 2.5, null]});
        assert_eq!(to_json(&v), r#"{"a": "x, y: \"z\"", "b": [1, 2.5, null]}"#);
        assert_eq!(escape("q\"\n\u{1}é"), r#"q\"\n\u0001é"#);
    }
}
