//! `dots`: vLLM's `DotsToolParser`,
//!
//! ```text
//! <dots_function_call>
//! <invoke name="search">
//! <parameter name="query">weather in Shanghai</parameter>
//! </invoke>
//! </dots_function_call>
//! ```
//!
//! or a JSON object `{"name": …, "arguments": …}` inside the wrapper.
//!
//! vLLM's whole-text result, which this parser reproduces:
//! - blocks are the `<dots_function_call>…</dots_function_call>` matches (lazy);
//!   a block whose `strip()`ped body starts with `<invoke` holds the
//!   `<invoke name=NAME>…</invoke>` matches and their
//!   `<parameter name=NAME>VALUE</parameter>` matches (names unquoted, values
//!   `strip()`ped and converted by the schema's type: `null` → `None`,
//!   `integer` → `int()`, `number` → `float()` (integral floats as ints),
//!   `boolean` → `true`/`1`, strings kept, anything else `json.loads` or kept);
//!   any other body must be a JSON object;
//! - a call counts only when its name is one of the request's tools and its
//!   `arguments` (or `parameters`) is an object; a failing block is skipped;
//! - with calls, content is the text before the first `<dots_function_call>`,
//!   `strip()`ped; without, all text is content.
//!
//! Content before the first wrapper streams ([`StrippedHead`]); the rest is
//! settled once, at [`finish`](ToolParser::finish).

use serde_json::Value;

use crate::engine::models::dict_json;
use crate::engine::schema::{float_or_int, py_float, py_int};
use crate::event::Event;
use crate::json::{self, PyJson};
use crate::parser::{ParserOptions, ToolParser};
use crate::text::{py_is_space, py_strip};
use crate::tool::stripped::StrippedHead;
use crate::tool::{Call, emit_calls};
use crate::tools::Tool;

const START: &str = "<dots_function_call>";
const END: &str = "</dots_function_call>";

/// The `dots` tool parser.
pub struct DotsParser {
    tools: Vec<Tool>,
    head: StrippedHead,
}

impl DotsParser {
    /// A boxed parser for the registry.
    pub fn boxed(options: &ParserOptions) -> Box<dyn ToolParser> {
        Box::new(Self {
            tools: options.tools.clone(),
            head: StrippedHead::new(START),
        })
    }
}

impl ToolParser for DotsParser {
    fn push(&mut self, text: &str, _token_ids: &[u32], out: &mut Vec<Event>) {
        self.head.push(text, out);
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        let ended = self.head.finish();
        let calls: Vec<Call> = tagged(ended.tail.as_deref().unwrap_or(""), START, END)
            .into_iter()
            .flat_map(|body| block_calls(body, &self.tools))
            .collect();
        let text = if calls.is_empty() {
            ended.verbatim()
        } else {
            ended.content.stripped("")
        };
        if !text.is_empty() {
            out.push(Event::Content(text));
        }
        emit_calls(calls, 0, out);
    }
}

/// The inner texts of the lazy `OPEN(.*?)CLOSE` matches of `text`, searched
/// left to right without overlap.
fn tagged<'t>(text: &'t str, open: &str, close: &str) -> Vec<&'t str> {
    let mut found = Vec::new();
    let mut pos = 0;
    while let Some(at) = text[pos..].find(open) {
        let start = pos + at + open.len();
        let Some(len) = text[start..].find(close) else {
            break;
        };
        found.push(&text[start..start + len]);
        pos = start + len + close.len();
    }
    found
}

/// `<TAG\s+name\s*=\s*NAME>BODY</TAG>` matches (`NAME` = `[^>]+`): `(name, body)`.
fn named<'t>(text: &'t str, tag: &str, close: &str) -> Vec<(&'t str, &'t str)> {
    let mut found = Vec::new();
    let mut pos = 0;
    while let Some(at) = text[pos..].find(tag) {
        let after_tag = pos + at + tag.len();
        pos = after_tag;
        let Some((name, body_start)) = name_attribute(&text[after_tag..]) else {
            continue;
        };
        let body_start = after_tag + body_start;
        let Some(len) = text[body_start..].find(close) else {
            break;
        };
        found.push((name, &text[body_start..body_start + len]));
        pos = body_start + len + close.len();
    }
    found
}

/// `\s+name\s*=\s*([^>]+)>` at the start of `text`: the raw name and where the
/// body starts.
fn name_attribute(text: &str) -> Option<(&str, usize)> {
    let rest = text.trim_start_matches(py_is_space);
    if rest.len() == text.len() {
        return None;
    }
    let rest = rest.strip_prefix("name")?.trim_start_matches(py_is_space);
    let value = rest.strip_prefix('=')?;
    let trimmed = value.trim_start_matches(py_is_space);
    let gt = trimmed.find('>')?;
    let offset = |s: &str| text.len() - s.len();
    if gt > 0 {
        return Some((&trimmed[..gt], offset(trimmed) + gt + 1));
    }
    // `[^>]+` needs a character: `\s*` gives back its last one.
    let last = value[..value.len() - trimmed.len()].chars().next_back()?;
    let name_start = offset(trimmed) - last.len_utf8();
    Some((&text[name_start..offset(trimmed)], offset(trimmed) + 1))
}

/// `_extract_name`: stripped, one pair of matching quotes removed.
fn unquote(value: &str) -> &str {
    let value = py_strip(value);
    let bytes = value.as_bytes();
    if bytes.len() >= 2 && bytes[0] == bytes[bytes.len() - 1] && matches!(bytes[0], b'"' | b'\'') {
        &value[1..value.len() - 1]
    } else {
        value
    }
}

/// The calls of one block body (empty where vLLM's parsing raises).
fn block_calls(body: &str, tools: &[Tool]) -> Vec<Call> {
    let body = py_strip(body);
    let parsed: Vec<(String, PyJson)> = if body.starts_with("<invoke") {
        named(body, "<invoke", "</invoke>")
            .into_iter()
            .map(|(name, invoke)| {
                let name = unquote(name);
                let arguments = invoke_arguments(name, invoke, tools);
                (name.to_owned(), PyJson::Dict(arguments))
            })
            .collect()
    } else {
        match json::loads(body) {
            Ok(value @ PyJson::Dict(_)) => {
                let Some(PyJson::Str(name)) = value.get("name") else {
                    return Vec::new();
                };
                let arguments = match value.get("arguments") {
                    Some(arguments) => arguments.clone(),
                    None => value.get("parameters").cloned().unwrap_or(PyJson::Null),
                };
                vec![(name.clone(), arguments)]
            }
            _ => return Vec::new(),
        }
    };
    parsed
        .into_iter()
        .filter(|(name, _)| tools.iter().any(|tool| &tool.name == name))
        .filter_map(|(name, arguments)| {
            let arguments = match arguments {
                PyJson::Dict(items) => dict_json(items),
                falsy if !falsy.is_truthy() => "{}".to_owned(),
                _ => return None,
            };
            Some(Call { name, arguments })
        })
        .collect()
}

/// The parameters of one `<invoke>`, converted by the tool's schema.
fn invoke_arguments(name: &str, body: &str, tools: &[Tool]) -> Vec<(String, PyJson)> {
    let schema = tools
        .iter()
        .find(|tool| tool.name == name)
        .map(|tool| &tool.parameters)
        .filter(|schema| schema.is_object());
    let field = |key: &str| {
        schema
            .and_then(|schema| schema.get(key))
            .filter(|value| value.is_object())
    };
    let (properties, defs) = (field("properties"), field("$defs"));
    named(body, "<parameter", "</parameter>")
        .into_iter()
        .map(|(param, value)| {
            let param = unquote(param);
            let kind = properties
                .and_then(|properties| properties.get(param))
                .and_then(|schema| resolve_type(schema, defs, 0));
            (param.to_owned(), convert(py_strip(value), kind))
        })
        .collect()
}

/// `_resolve_param_type`: the schema's `type`, through `$ref` and the first
/// non-null `anyOf` / `oneOf` / `allOf` alternative.
fn resolve_type<'s>(schema: &'s Value, defs: Option<&'s Value>, depth: usize) -> Option<&'s Value> {
    let schema = schema.as_object().filter(|_| depth <= 10)?;
    if let Some(kind) = schema.get("type") {
        return Some(kind);
    }
    if let Some(name) = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
    {
        let name = name.rsplit('/').next().unwrap_or(name);
        return defs
            .and_then(|defs| defs.get(name))
            .and_then(|def| resolve_type(def, defs, depth + 1));
    }
    for keyword in ["anyOf", "oneOf", "allOf"] {
        let Some(Value::Array(alternatives)) = schema.get(keyword) else {
            continue;
        };
        for alternative in alternatives {
            if alternative.get("type").and_then(Value::as_str) == Some("null") {
                continue;
            }
            if let Some(kind) = resolve_type(alternative, defs, depth + 1) {
                return Some(kind);
            }
        }
    }
    None
}

/// `_convert_param_value` for one stripped value and its schema type.
fn convert(value: &str, kind: Option<&Value>) -> PyJson {
    if value.to_lowercase() == "null" {
        return PyJson::Null;
    }
    let kind = match kind {
        None => "string".to_owned(),
        Some(Value::Array(items)) => items
            .iter()
            .find(|item| item.as_str() != Some("null"))
            .map_or("string".to_owned(), |item| {
                item.as_str().unwrap_or("").to_lowercase()
            }),
        Some(Value::String(kind)) => kind.to_lowercase(),
        Some(_) => String::new(),
    };
    let text = || PyJson::Str(value.to_owned());
    match kind.as_str() {
        "string" | "str" | "text" => text(),
        "integer" | "int" => py_int(value).map_or_else(text, PyJson::Int),
        "number" | "float" => py_float(value).map_or_else(text, |number| {
            if number.is_finite() && number.fract() == 0.0 {
                float_or_int(number)
            } else {
                PyJson::Float(number)
            }
        }),
        "boolean" | "bool" => PyJson::Bool(matches!(value.to_lowercase().as_str(), "true" | "1")),
        _ => json::loads(value).unwrap_or_else(|_| text()),
    }
}
