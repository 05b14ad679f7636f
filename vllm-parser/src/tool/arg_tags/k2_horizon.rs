//! `k2_horizon`: vLLM's `K2HorizonToolParser`, one group of calls in K2
//! Horizon's IFM tags, written in the request's
//! `chat_template_kwargs.tool_call_format`:
//!
//! ```text
//! <ifm|tool_calls><ifm|tool_call>get_weather
//! <ifm|arg_key>city</ifm|arg_key><ifm|arg_value>Paris</ifm|arg_value></ifm|tool_call></ifm|tool_calls>
//! ```
//!
//! (`xml`, the default; `xml_typed` adds `<ifm|arg_type>string</ifm|arg_type>`
//! before each value; `json` writes `{"name": …, "arguments": {…}}` in each
//! call.)
//!
//! vLLM's whole-text result, which this parser reproduces:
//! - the group runs from the first `<ifm|tool_calls>` to the next
//!   `</ifm|tool_calls>`; without both, or when the group holds anything but
//!   whitespace outside `<ifm|tool_call>…</ifm|tool_call>` calls, or no call,
//!   the whole output is content;
//! - every call must parse, else the whole output is content: a name without
//!   whitespace, among the request's tools when it offers any; `xml`
//!   arguments are key / value tag pairs with nothing but whitespace around
//!   them, keys `strip()`ped, non-empty and unique, type tags only (and always)
//!   in `xml_typed`; values are coerced by `coerce_to_schema_type` to the
//!   schema's types (narrowed to a written type the schema allows, or replaced
//!   by a written type when there is no schema; `any` keeps the text), and
//!   `strip()`ped unless the types include `string`; `json` arguments must be
//!   an object, each value with a schema coerced from its text (non-strings
//!   from their JSON);
//! - arguments are dumped with `allow_nan=False`: a non-finite number makes
//!   the whole output content;
//! - content is the text before and after the group; an output without calls
//!   that is only whitespace has no content (vLLM's streaming holds whitespace
//!   until other text comes; its whole text agrees when the tool parser runs
//!   alone, not after a reasoning parser, where the corpus follows streaming).
//!
//! vLLM rejects a request whose `tool_call_format` is not `json`, `xml` or
//! `xml_typed`; here such a request reads `xml`.

use serde_json::Value;

use super::ArgTags;
use crate::engine::schema::{coerce_text, schema_types};
use crate::json::{self, PyJson};
use crate::parser::{ParserOptions, ToolParser};
use crate::text::{py_is_blank, py_is_space, py_strip};
use crate::tool::Call;
use crate::tool::settle::{Opening, Settle, SettleParser, Settled};
use crate::tools::{Tool, find_tool};

const CALLS: &str = "<ifm|tool_calls>";
const CALLS_END: &str = "</ifm|tool_calls>";
const CALL: &str = "<ifm|tool_call>";
const CALL_END: &str = "</ifm|tool_call>";
const TAGS: ArgTags = ArgTags {
    key: ("<ifm|arg_key>", "</ifm|arg_key>"),
    kind: Some(("<ifm|arg_type>", "</ifm|arg_type>")),
    value: ("<ifm|arg_value>", "</ifm|arg_value>"),
    spaced: true,
};
const ARG_MARKERS: [&str; 6] = [
    TAGS.key.0,
    TAGS.key.1,
    "<ifm|arg_type>",
    "</ifm|arg_type>",
    TAGS.value.0,
    TAGS.value.1,
];

/// How the calls' arguments are written (`tool_call_format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolFormat {
    /// `{"name": …, "arguments": {…}}`.
    Json,
    /// Key / value tag pairs.
    Xml,
    /// Key / type / value tag triples.
    XmlTyped,
}

/// The `k2_horizon` format, with the request's tools.
#[derive(Debug, Clone)]
pub struct K2Horizon {
    format: ToolFormat,
    tools: Vec<Tool>,
}

impl K2Horizon {
    /// A boxed parser for the registry.
    pub fn boxed(options: &ParserOptions) -> Box<dyn ToolParser> {
        let format = match options.chat_template_kwargs.get("tool_call_format") {
            Some(Value::String(f)) if f == "json" => ToolFormat::Json,
            Some(Value::String(f)) if f == "xml_typed" => ToolFormat::XmlTyped,
            _ => ToolFormat::Xml,
        };
        SettleParser::boxed(K2Horizon {
            format,
            tools: options.tools.clone(),
        })
    }

    /// `_validate_tool_name`.
    fn name<'a>(&self, name: &'a str) -> Option<&'a str> {
        let valid = !name.is_empty()
            && !name.contains(py_is_space)
            && (self.tools.is_empty() || find_tool(&self.tools, name).is_some());
        valid.then_some(name)
    }

    fn schema(&self, name: &str, key: &str) -> Option<&Value> {
        find_tool(&self.tools, name)?.properties()?.get(key)
    }

    /// One call; `None` where vLLM raises.
    fn call(&self, body: &str) -> Option<Call> {
        let (name, arguments) = match self.format {
            ToolFormat::Json => self.json_call(body)?,
            ToolFormat::Xml | ToolFormat::XmlTyped => self.xml_call(body)?,
        };
        let arguments = PyJson::Dict(arguments);
        finite(&arguments).then(|| Call {
            name,
            arguments: json::dumps(&arguments),
        })
    }

    /// `_parse_json_call`.
    fn json_call(&self, body: &str) -> Option<(String, Vec<(String, PyJson)>)> {
        let call = json::loads(py_strip(body)).ok()?;
        let (PyJson::Dict(_), Some(PyJson::Str(name))) = (&call, call.get("name")) else {
            return None;
        };
        let name = self.name(name)?;
        let PyJson::Dict(arguments) = call
            .get("arguments")
            .cloned()
            .unwrap_or(PyJson::Dict(Vec::new()))
        else {
            return None;
        };
        let arguments = arguments
            .into_iter()
            .map(|(key, value)| {
                let value = match self.schema(name, &key) {
                    Some(schema @ Value::Object(_)) => {
                        let text = match value {
                            PyJson::Str(text) => text,
                            other if finite(&other) => json::dumps(&other),
                            _ => return None,
                        };
                        coerce_text(&text, &schema_types(schema)).unwrap_or(PyJson::Str(text))
                    }
                    _ => value,
                };
                Some((key, value))
            })
            .collect::<Option<Vec<_>>>()?;
        Some((name.to_owned(), arguments))
    }

    /// `_parse_xml_call`.
    fn xml_call(&self, body: &str) -> Option<(String, Vec<(String, PyJson)>)> {
        let Some(first) = body.find(TAGS.key.0) else {
            if ARG_MARKERS.iter().any(|marker| body.contains(marker)) {
                return None;
            }
            return Some((self.name(py_strip(body))?.to_owned(), Vec::new()));
        };
        let name = self.name(py_strip(&body[..first]))?;
        let args = &body[first..];
        let mut arguments: Vec<(String, PyJson)> = Vec::new();
        let mut position = 0;
        for pair in TAGS.pairs(args) {
            let key = py_strip(pair.key);
            let kind = pair.kind.map(py_strip);
            let typed_ok = match self.format {
                ToolFormat::XmlTyped => kind.is_some_and(|k| !k.is_empty()),
                _ => kind.is_none(),
            };
            if !py_is_blank(&args[position..pair.span.0])
                || key.is_empty()
                || arguments.iter().any(|(k, _)| k == key)
                || !typed_ok
            {
                return None;
            }
            let value = coerce_xml(pair.value, self.schema(name, key), kind);
            arguments.push((key.to_owned(), value));
            position = pair.span.1;
        }
        (position > 0 && py_is_blank(&args[position..])).then(|| (name.to_owned(), arguments))
    }
}

/// `_coerce_xml_value`: `value` as the schema's (or written) types want it.
fn coerce_xml(value: &str, schema: Option<&Value>, written: Option<&str>) -> PyJson {
    let base = written
        .map(|t| py_strip(t.split('[').next().unwrap_or_default()).to_lowercase())
        .filter(|t| !t.is_empty());
    let mut types = schema_types(schema.unwrap_or(&Value::Null));
    match (schema, base) {
        (Some(Value::Object(_)), Some(base)) => {
            let mut distinct = types.clone();
            distinct.sort();
            distinct.dedup();
            if types.contains(&base) && distinct.len() > 1 {
                types = vec![base];
            }
        }
        (Some(Value::Object(_)), None) => {}
        (_, Some(base)) if base == "any" => return PyJson::Str(value.to_owned()),
        (_, Some(base)) => types = vec![base],
        (_, None) => {}
    }
    let text = if types.iter().any(|t| t == "string") {
        value
    } else {
        py_strip(value)
    };
    coerce_text(text, &types).unwrap_or_else(|| PyJson::Str(text.to_owned()))
}

/// Whether `json.dumps(value, allow_nan=False)` accepts the value.
fn finite(value: &PyJson) -> bool {
    match value {
        PyJson::Float(f) => f.is_finite(),
        PyJson::List(items) => items.iter().all(finite),
        PyJson::Dict(items) => items.iter().all(|(_, v)| finite(v)),
        _ => true,
    }
}

impl Settle for K2Horizon {
    fn opening(&self) -> Opening {
        Opening::Marker(&[CALLS])
    }

    fn drops_blank_content(&self) -> bool {
        true
    }

    fn settle(&self, tail: &str) -> Option<Settled> {
        let group_end = CALLS.len() + tail[CALLS.len()..].find(CALLS_END)?;
        let group = &tail[CALLS.len()..group_end];
        let mut bodies = Vec::new();
        let mut cursor = 0;
        while let Some(start) = group[cursor..].find(CALL).map(|at| cursor + at) {
            let from = start + CALL.len();
            let Some(len) = group[from..].find(CALL_END) else {
                break;
            };
            if !py_is_blank(&group[cursor..start]) {
                return None;
            }
            bodies.push(&group[from..from + len]);
            cursor = from + len + CALL_END.len();
        }
        if bodies.is_empty() || !py_is_blank(&group[cursor..]) {
            return None;
        }
        let calls = bodies
            .into_iter()
            .map(|body| self.call(body))
            .collect::<Option<Vec<_>>>()?;
        Some(Settled {
            calls,
            content: tail[group_end + CALLS_END.len()..].to_owned(),
        })
    }
}
