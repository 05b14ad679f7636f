//! Granite 3.x (vLLM's `parser/granite.py`, tool name `granite`): a marker,
//! then one JSON array of calls, no closing marker.
//!
//! ```text
//! <|tool_call|>[{"name": "get_weather", "arguments": {"city": "SF"}}]
//! <tool_call>[{"name": "get_weather", "arguments": {"city": "SF"}}]
//! ```
//!
//! Each element's name is its `"name": "…"`; its arguments are the verbatim
//! text of its `"arguments"` object. Text around the array is content.

use crate::engine::adapters::EngineToolParser;
use crate::engine::config::{EngineConfig, State, on};
use crate::parser::{ParserOptions, ToolParser};

/// The Granite grammar.
pub fn config() -> EngineConfig {
    let mut config = EngineConfig::new(
        "granite",
        State::Content,
        vec![
            ("TOOL_TOKEN", "<|tool_call|>"),
            ("TOOL_STRING", "<tool_call>"),
        ],
        vec![
            on(State::Content, "TOOL_TOKEN", State::ToolArgs, &[]),
            on(State::Content, "TOOL_STRING", State::ToolArgs, &[]),
        ],
    );
    config.converter = Some(convert);
    config.array_body = true;
    config
}

/// The `granite` tool parser.
pub fn tool_parser(options: &ParserOptions) -> Box<dyn ToolParser> {
    EngineToolParser::boxed(config(), options)
}

/// vLLM's `_granite_arg_converter(raw, partial=False)`: the verbatim
/// `"arguments"` object (`{}` without one; `None`, vLLM's error, when its value
/// is not an object).
fn convert(raw: &str) -> Option<String> {
    match member_object(raw, "arguments") {
        Ok(Some(span)) => Some(span.to_owned()),
        Ok(None) => Some("{}".to_owned()),
        Err(()) => None,
    }
}

/// vLLM's `extract_json_member_object`: the text of the object value of the
/// top-level member `key` (to the end when unterminated), `Ok(None)` when there
/// is none or it has not started, `Err` when the value is not an object.
/// (Inkling's converter carves its `"args"` member with it.)
pub(crate) fn member_object<'a>(raw: &'a str, key: &str) -> Result<Option<&'a str>, ()> {
    let bytes = raw.as_bytes();
    let (mut depth, mut in_string, mut escape) = (0i64, false, false);
    let mut string_start = 0;
    let mut last_string: Option<&str> = None;
    for (i, &b) in bytes.iter().enumerate() {
        if escape {
            escape = false;
            continue;
        }
        if in_string {
            match b {
                b'\\' => escape = true,
                b'"' => {
                    in_string = false;
                    if depth == 1 {
                        last_string = Some(&raw[string_start + 1..i]);
                    }
                }
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                string_start = i;
            }
            b':' if depth == 1 && last_string == Some(key) => {
                let start = i + 1 + raw[i + 1..].len()
                    - raw[i + 1..]
                        .trim_start_matches([' ', '\t', '\r', '\n'])
                        .len();
                if start >= raw.len() {
                    return Ok(None);
                }
                if bytes[start] != b'{' {
                    return Err(());
                }
                return Ok(Some(match object_end(raw, start) {
                    Some(end) => &raw[start..end],
                    None => &raw[start..],
                }));
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth -= 1,
            _ => {}
        }
    }
    Ok(None)
}

/// vLLM's `scan_json_object_end`: the end of the object starting at `start`.
fn object_end(raw: &str, start: usize) -> Option<usize> {
    let (mut depth, mut in_string, mut escape) = (0usize, false, false);
    for (i, &b) in raw.as_bytes().iter().enumerate().skip(start) {
        if escape {
            escape = false;
        } else if in_string {
            match b {
                b'\\' => escape = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => in_string = true,
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_carved_verbatim() {
        let raw = r#"{"name": "f", "arguments": {"a": "}", "b": [1]} }"#;
        assert_eq!(convert(raw).as_deref(), Some(r#"{"a": "}", "b": [1]}"#));
        assert_eq!(convert(r#"{"name": "f"}"#).as_deref(), Some("{}"));
        assert_eq!(convert(r#"{"arguments": 5}"#), None);
        assert_eq!(convert(r#"{"arguments": {"a"#).as_deref(), Some(r#"{"a"#));
    }
}
