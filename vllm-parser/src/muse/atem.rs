//! ATEM tool calls inside a Muse tool channel:
//!
//! ```text
//! <atem:function_calls>
//! <atem:invoke name="tool.fn">
//! <atem:parameter name="arg">value</atem:parameter>
//! </atem:invoke>
//! </atem:function_calls>
//! ```
//!
//! vLLM's three regexes, each as one forward pass:
//! `(<atem:invoke\b.*?</atem:invoke>)` (non-overlapping, `findall`),
//! `<atem:invoke\b[^>]*?\bname="([^"]+)"` (first match in the invoke) and
//! `<atem:parameter\b[^>]*?\bname="(?P<key>[^"]+)"[^>]*?>(?P<value>.*?)</atem:parameter>`
//! (`finditer`). A value is JSON-decoded when it parses (`json.loads`), else
//! kept as text; Muse Spark keeps values of `"type": "string"` parameters as
//! text. Regex `\b` / `\w` are approximated by Unicode alphanumerics and `_`.

use crate::json::{self, PyJson};
use crate::tool::Call;
use crate::tools::Tool;

use super::messages::find_from;

const INVOKE: &str = "<atem:invoke";
const INVOKE_END: &str = "</atem:invoke>";
const PARAMETER: &str = "<atem:parameter";
const PARAMETER_END: &str = "</atem:parameter>";
const NAME_ATTR: &str = "name=\"";

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The next `tag` at or after `from` that ends at a word boundary (`tag\b`).
fn find_tag(text: &str, mut from: usize, tag: &str) -> Option<usize> {
    loop {
        let at = find_from(text, from, tag)?;
        if !text[at + tag.len()..].chars().next().is_some_and(is_word) {
            return Some(at);
        }
        from = at + 1;
    }
}

/// `[^>]*?\bname="(VALUE)"` from `from`: the first `name="…"` attribute (with
/// a non-empty value) that starts before the tag's first `>`. The outer
/// `Option` is `None` when no later tag can have one either.
fn name_attribute(text: &str, from: usize) -> Option<Option<(&str, usize)>> {
    let limit = find_from(text, from, ">").unwrap_or(text.len());
    let mut at = from;
    while let Some(found) = find_from(text, at, NAME_ATTR).filter(|&found| found < limit) {
        at = found + 1;
        if text[..found].chars().next_back().is_some_and(is_word) {
            continue;
        }
        let value_start = found + NAME_ATTR.len();
        let quote = find_from(text, value_start, "\"")?;
        if quote > value_start {
            return Some(Some((&text[value_start..quote], quote + 1)));
        }
    }
    Some(None)
}

/// `_NAME_RE.search(invoke)`.
fn invoke_name(invoke: &str) -> Option<&str> {
    let mut from = 0;
    while let Some(open) = find_tag(invoke, from, INVOKE) {
        if let Some((name, _)) = name_attribute(invoke, open + INVOKE.len())? {
            return Some(name);
        }
        from = open + 1;
    }
    None
}

/// `_PARAM_RE.finditer(invoke)`: `(key, raw value)` pairs in order.
fn parameters(invoke: &str) -> Vec<(&str, &str)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(open) = find_tag(invoke, from, PARAMETER) {
        let Some(attribute) = name_attribute(invoke, open + PARAMETER.len()) else {
            break;
        };
        let Some((key, after)) = attribute else {
            from = open + 1;
            continue;
        };
        // `[^>]*?>` then the value up to the first closing tag; when either is
        // missing, no later parameter can match.
        let Some(gt) = find_from(invoke, after, ">") else {
            break;
        };
        let Some(end) = find_from(invoke, gt + 1, PARAMETER_END) else {
            break;
        };
        found.push((key, &invoke[gt + 1..end]));
        from = end + PARAMETER_END.len();
    }
    found
}

/// How call names and values are read (the Spark and Glimmer profiles).
#[derive(Debug, Clone, Copy)]
pub(super) struct CallRules<'a> {
    /// The request's tools (names for `_normalize_name`, schemas for strings).
    pub tools: &'a [Tool],
    /// Spark's `_preserve_string_parameters`.
    pub preserve_strings: bool,
}

impl CallRules<'_> {
    /// `_normalize_name`: `tool.tool` for a registered bare `tool` is `tool`.
    fn normalize<'n>(&self, emitted: &'n str) -> &'n str {
        if self.tools.is_empty() || self.tools.iter().any(|t| t.name == emitted) {
            return emitted;
        }
        match emitted.split_once('.') {
            Some((head, tail)) if head == tail && self.tools.iter().any(|t| t.name == head) => head,
            _ => emitted,
        }
    }

    /// Whether `key` of tool `name` is a `"type": "string"` parameter kept as text.
    fn is_string(&self, name: &str, key: &str) -> bool {
        self.preserve_strings
            && self
                .tools
                .iter()
                .rev()
                .find(|tool| tool.name == name)
                .and_then(Tool::properties)
                .and_then(|properties| properties.get(key))
                .and_then(|schema| schema.get("type"))
                .is_some_and(|kind| kind == "string")
    }

    /// `_parse_tool_calls` over the tool-channel text.
    pub fn calls(&self, scoped: &str) -> Vec<Call> {
        let mut calls = Vec::new();
        let mut from = 0;
        while let Some(open) = find_tag(scoped, from, INVOKE) {
            let Some(end) = find_from(scoped, open + INVOKE.len(), INVOKE_END) else {
                break;
            };
            from = end + INVOKE_END.len();
            let invoke = &scoped[open..from];
            let Some(name) = invoke_name(invoke) else {
                continue;
            };
            let name = self.normalize(name);
            let mut arguments: Vec<(String, PyJson)> = Vec::new();
            for (key, raw) in parameters(invoke) {
                let value = if self.is_string(name, key) {
                    PyJson::Str(raw.to_owned())
                } else {
                    json::loads(raw).unwrap_or_else(|_| PyJson::Str(raw.to_owned()))
                };
                match arguments.iter_mut().find(|(k, _)| k == key) {
                    Some(slot) => slot.1 = value,
                    None => arguments.push((key.to_owned(), value)),
                }
            }
            calls.push(Call {
                name: name.to_owned(),
                arguments: json::dumps(&PyJson::Dict(arguments)),
            });
        }
        calls
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_and_tags_follow_the_regexes() {
        let invoke = r#"<atem:invoke id="1" xname="no" name="f"><atem:parameterx name="a">1</atem:parameterx><atem:parameter k="" name="b" z=">">2</atem:parameter></atem:invoke>"#;
        assert_eq!(invoke_name(invoke), Some("f"));
        // `name=""` is skipped; the next attribute is tried.
        assert_eq!(invoke_name(r#"<atem:invoke name="" name="g">"#), Some("g"));
        // After the first `>` no name counts.
        assert_eq!(invoke_name(r#"<atem:invoke> name="g">"#), None);
        assert_eq!(parameters(invoke), [("b", "\">2")]);
        let rules = CallRules {
            tools: &[],
            preserve_strings: true,
        };
        let calls = rules.calls(&format!("{invoke}<atem:invoke name=\"h\">"));
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].arguments, r#"{"b": "\">2"}"#);
    }
}
