//! `minicpm5`: vLLM's `MiniCPM5XMLToolParser`,
//!
//! ```text
//! <function name="get_weather"><param name="city">Paris</param></function>
//! ```
//!
//! vLLM's whole-text result, which this parser reproduces (with the reference
//! environment's `xml.etree.ElementTree`; vLLM prefers `lxml` when installed):
//! - the output is first normalised (`Ġ` → space, `Ċ` → newline,
//!   `<functionname=` / `<paramname=` spaced) when it holds any of those;
//! - each `<function…</function>` block (to the first end tag) is parsed as XML
//!   ([`xml`]): the root's (or its `function` child's) `name` attribute, its
//!   `param` children (or those of an `arguments` child), each value its
//!   `.text`; where XML parsing fails or gives no name, vLLM's regexes are used
//!   instead (values `strip()`ped unless they are one CDATA section);
//! - a parameter without a name, a repeated one, or a malformed
//!   `properties` / `arguments` wrapper (an object of the tool's parameters,
//!   unwrapped) invalidates the call; parameters the tool's schema does not
//!   list are dropped; values are kept as text when the schema says `string`,
//!   else read by `json.loads`, else `ast.literal_eval`, else kept as text;
//! - a few tau-bench alias names are mapped to the offered tools (`_normalize_alias_tool_call`);
//! - the call must name an offered tool and give its `required` parameters;
//! - with calls the message has no content at all (text around calls is
//!   dropped); without, the output is content. A value `json.dumps` refuses
//!   makes the whole output content.
//!
//! Nothing can be released before the end (text before a call is dropped when
//! one comes), so the whole output settles at `finish`.

pub mod xml;

use std::collections::BTreeSet;

use serde_json::Value;

use crate::json::{self, PyJson};
use crate::parser::{ParserOptions, ToolParser};
use crate::text::{py_is_space, py_strip};
use crate::tool::Call;
use crate::tool::arg_tags::Arguments;
use crate::tool::arg_tags::literal::{Literal, json_or_literal};
use crate::tool::settle::{Opening, Settle, SettleParser, Settled};
use crate::tools::Tool;

const FUNCTION: &str = "<function";
const FUNCTION_END: &str = "</function>";
const PARAM: &str = "<param";
const PARAM_END: &str = "</param>";
const CDATA: (&str, &str) = ("<![CDATA[", "]]>");

/// The `minicpm5` format, with the request's tools.
#[derive(Debug, Clone)]
pub struct MiniCpm5 {
    tools: Vec<Tool>,
}

impl MiniCpm5 {
    /// A boxed parser for the registry.
    pub fn boxed(options: &ParserOptions) -> Box<dyn ToolParser> {
        SettleParser::boxed(MiniCpm5 {
            tools: options.tools.clone(),
        })
    }

    /// The offered tool `name` (`_build_tool_maps` keeps the last one of a
    /// repeated name).
    fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools
            .iter()
            .rev()
            .find(|t| !t.name.is_empty() && t.name == name)
    }

    /// The parameter names `name`'s schema lists.
    fn allowed(&self, name: &str) -> BTreeSet<&str> {
        self.tool(name)
            .and_then(Tool::properties)
            .map(|props| props.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }

    /// `_parse_function_block`: the call, if the block is a valid one.
    fn block(&self, block: &str) -> Option<(String, Arguments)> {
        let from_xml = xml::parse(block).and_then(|root| {
            let function = if root.name == "function" {
                root
            } else {
                root.children_named("function").next()?.clone()
            };
            let name = py_strip(function.attribute("name").unwrap_or_default()).to_owned();
            if name.is_empty() {
                return None;
            }
            let mut params: Vec<&xml::Element> = function.children_named("param").collect();
            if params.is_empty()
                && let Some(args) = function.children_named("arguments").next()
            {
                params = args.children_named("param").collect();
            }
            let pairs = params
                .into_iter()
                .map(|p| {
                    Some((
                        p.attribute("name").filter(|k| !k.is_empty())?,
                        p.text.as_str(),
                    ))
                })
                .collect::<Option<Vec<_>>>();
            let arguments = pairs.and_then(|pairs| self.arguments(&name, pairs));
            Some((name.clone(), arguments))
        });
        let (name, arguments) = match from_xml {
            Some(found) => found,
            None => {
                let name = regex_name(block)?.to_owned();
                let arguments = if has_unnamed_param(block) {
                    None
                } else {
                    let pairs = regex_params(block);
                    self.arguments(
                        &name,
                        pairs
                            .iter()
                            .map(|(k, v)| (k.as_str(), v.as_str()))
                            .collect(),
                    )
                };
                (name, arguments)
            }
        };
        let arguments = arguments?;
        let (name, arguments) = self.alias(name, arguments);
        let tool = self.tool(&name)?;
        let required = tool.parameters.get("required").and_then(Value::as_array);
        let missing = required.is_some_and(|required| {
            required
                .iter()
                .any(|r| !r.as_str().is_some_and(|r| arguments.contains(r)))
        });
        (!missing).then_some((name, arguments))
    }

    /// `_add_argument` over a block's parameters; `None` for an invalid call.
    fn arguments(&self, name: &str, pairs: Vec<(&str, &str)>) -> Option<Arguments> {
        let allowed = self.allowed(name);
        let mut arguments = Arguments::default();
        for (key, text) in pairs {
            if matches!(key, "properties" | "arguments")
                && !allowed.is_empty()
                && !allowed.contains(key)
            {
                let Literal::Json(PyJson::Dict(wrapped)) = json_or_literal(text) else {
                    return None;
                };
                let mut added = false;
                for (key, value) in wrapped {
                    if !allowed.contains(key.as_str()) {
                        continue;
                    }
                    if arguments.contains(&key) {
                        return None;
                    }
                    let value = self.coerce(name, &key, Raw::Value(value));
                    arguments.insert(&key, value);
                    added = true;
                }
                if !added {
                    return None;
                }
                continue;
            }
            if !allowed.is_empty() && !allowed.contains(key) {
                continue;
            }
            if arguments.contains(key) {
                return None;
            }
            let value = self.coerce(name, key, Raw::Text(text));
            arguments.insert(key, value);
        }
        Some(arguments)
    }

    /// `_coerce_argument_value`; `None` for a value `json.dumps` refuses.
    fn coerce(&self, name: &str, key: &str, value: Raw) -> Option<PyJson> {
        let declared = self
            .tool(name)
            .and_then(Tool::properties)
            .and_then(|props| props.get(key)?.get("type"));
        let string = declared.is_some_and(|t| t == &Value::from("string"));
        let text = match value {
            Raw::Text(text) => text.to_owned(),
            Raw::Value(PyJson::Str(text)) => text,
            Raw::Value(value) if string => return Some(PyJson::Str(json::dumps(&value))),
            Raw::Value(value) => return Some(value),
        };
        if string {
            return Some(PyJson::Str(text));
        }
        match json_or_literal(&text) {
            Literal::Json(value) => Some(value),
            Literal::Unwritable => None,
            Literal::Malformed | Literal::Unhashable => Some(PyJson::Str(text)),
        }
    }

    /// `_normalize_alias_tool_call`.
    fn alias(&self, name: String, arguments: Arguments) -> (String, Arguments) {
        let offered = |tool: &str| self.tool(tool).is_some();
        if offered(&name) {
            return (name, arguments);
        }
        let get = |keys: &[&str]| first_truthy(&arguments, keys);
        let map = |pairs: Vec<(&str, Option<PyJson>)>| {
            let mut mapped = Arguments::default();
            for (key, value) in pairs {
                mapped.insert(key, value);
            }
            mapped
        };
        let to = |tool: &str, args: Arguments| (tool.to_owned(), args);
        match name.as_str() {
            "get_details_by_phone" if offered("get_customer_by_phone") => {
                if let Some(phone) = get(&["phone_number", "phone"]) {
                    return to("get_customer_by_phone", map(vec![("phone_number", phone)]));
                }
            }
            "get_details_by_name" if offered("get_customer_by_name") => {
                let mut mapped = Vec::new();
                if let Some(full) = get(&["full_name", "name"]) {
                    mapped.push(("full_name", full));
                }
                if let Some(dob) = get(&["date_of_birth", "dob"]) {
                    mapped.push(("date_of_birth", dob.clone()));
                    mapped.push(("dob", dob));
                }
                if !mapped.is_empty() {
                    return to("get_customer_by_name", map(mapped));
                }
            }
            "get_line_details" | "get_line_status" | "get_roaming_status"
                if offered("get_details_by_id") =>
            {
                if let Some(id) = get(&["line_id", "id"]) {
                    return to("get_details_by_id", map(vec![("id", id)]));
                }
            }
            "get_plan_details" if offered("get_details_by_id") => {
                if let Some(id) = get(&["plan_id", "id"]) {
                    return to("get_details_by_id", map(vec![("id", id)]));
                }
            }
            "enable_roaming" | "disable_roaming" if offered("toggle_roaming") => {
                if let Some(line) = get(&["line_id", "id"]) {
                    let enabled = Some(PyJson::Bool(name == "enable_roaming"));
                    return to(
                        "toggle_roaming",
                        map(vec![("line_id", line), ("enabled", enabled)]),
                    );
                }
            }
            "add_refueled_data" | "add_data_to_line" if offered("refuel_data") => {
                let mut mapped = Vec::new();
                if let Some(customer) = arguments.get("customer_id") {
                    mapped.push(("customer_id", customer.clone()));
                }
                if let Some(line) = get(&["line_id", "id"]) {
                    mapped.push(("line_id", line));
                }
                if let Some(amount) = get(&["amount_gb", "gb", "gb_amount", "amount"]) {
                    mapped.push(("amount_gb", amount));
                }
                if !mapped.is_empty() {
                    return to("refuel_data", map(mapped));
                }
            }
            _ => {}
        }
        (name, arguments)
    }
}

/// A parameter value before coercion: a block's text, or a value unwrapped
/// from a `properties` / `arguments` object.
enum Raw<'a> {
    Text(&'a str),
    Value(PyJson),
}

/// `args.get(a) or args.get(b) or …`, then `is not None`; `Some(None)` for a
/// value `json.dumps` refuses (which Python finds truthy).
fn first_truthy(arguments: &Arguments, keys: &[&str]) -> Option<Option<PyJson>> {
    let mut last = None;
    for key in keys {
        last = arguments.get(key).cloned();
        if last
            .as_ref()
            .is_some_and(|v| v.as_ref().is_none_or(PyJson::is_truthy))
        {
            return last;
        }
    }
    last.filter(|v| !matches!(v, Some(PyJson::Null)))
}

/// `_FUNC_NAME_V1_REGEX.search`: `<function\s+name=['"]([^'"]+)['"][^>]*>`.
fn regex_name(block: &str) -> Option<&str> {
    let last_close = block.rfind('>')?;
    block.match_indices(FUNCTION).find_map(|(at, _)| {
        let rest = &block[at + FUNCTION.len()..];
        let after = rest.trim_start_matches(py_is_space);
        if after.len() == rest.len() {
            return None;
        }
        let value = after.strip_prefix("name=")?.strip_prefix(['\'', '"'])?;
        let len = value.find(['\'', '"'])?;
        let quote_at = block.len() - value.len() + len;
        (len > 0 && last_close > quote_at).then(|| &value[..len])
    })
}

/// `_PARAM_MISSING_NAME_REGEX.search`: a `<param…>` tag without `name=` at a
/// word boundary before its `>`. Linear: the `name=` positions are found once.
fn has_unnamed_param(block: &str) -> bool {
    let names: Vec<usize> = block
        .match_indices("name=")
        .map(|(at, _)| at)
        .filter(|&at| !block[..at].chars().next_back().is_some_and(is_word))
        .collect();
    let mut close: Option<usize> = None;
    block.match_indices(PARAM).any(|(at, _)| {
        let from = at + PARAM.len();
        if close.is_none_or(|c| c < from) {
            close = block[from..].find('>').map(|c| from + c);
        }
        let Some(close) = close else {
            return false;
        };
        let first = names.partition_point(|&n| n < from);
        names.get(first).is_none_or(|&n| n >= close)
    })
}

/// `\w`.
fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `_PARAM_WITH_NAME_REGEX.finditer`:
/// `<param\s+name=['"]([^'"]+)['"]>([\s\S]*?)</param>`, keys `strip()`ped,
/// values `strip()`ped unless one CDATA section.
fn regex_params(block: &str) -> Vec<(String, String)> {
    let mut params = Vec::new();
    let mut cursor = 0;
    while let Some(at) = block[cursor..].find(PARAM).map(|i| cursor + i) {
        let Some((key, value_from)) = param_header(block, at + PARAM.len()) else {
            cursor = at + PARAM.len();
            continue;
        };
        let Some(len) = block[value_from..].find(PARAM_END) else {
            break;
        };
        let value = &block[value_from..value_from + len];
        let value = match value
            .strip_prefix(CDATA.0)
            .and_then(|v| v.strip_suffix(CDATA.1))
        {
            Some(inner) => inner,
            None => py_strip(value),
        };
        params.push((py_strip(key).to_owned(), value.to_owned()));
        cursor = value_from + len + PARAM_END.len();
    }
    params
}

/// `\s+name=['"]([^'"]+)['"]>` at `at`: the name and where the value starts.
fn param_header(block: &str, at: usize) -> Option<(&str, usize)> {
    let rest = &block[at..];
    let after = rest.trim_start_matches(py_is_space);
    if after.len() == rest.len() {
        return None;
    }
    let value = after.strip_prefix("name=")?.strip_prefix(['\'', '"'])?;
    let len = value.find(['\'', '"'])?;
    if len == 0 || !value[len + 1..].starts_with('>') {
        return None;
    }
    let value_from = block.len() - value[len + 2..].len();
    Some((&value[..len], value_from))
}

/// `_normalize_model_output`.
fn normalise(text: &str) -> String {
    let marks = ['\u{120}', '\u{10A}'];
    if !text.contains(marks) && !text.contains("<functionname=") && !text.contains("<paramname=") {
        return text.to_owned();
    }
    text.replace('\u{120}', " ")
        .replace('\u{10A}', "\n")
        .replace("<functionname=", "<function name=")
        .replace("<paramname=", "<param name=")
}

impl Settle for MiniCpm5 {
    fn opening(&self) -> Opening {
        Opening::Whole
    }

    fn settle(&self, tail: &str) -> Option<Settled> {
        let text = normalise(tail);
        if !text.contains(FUNCTION) {
            return None;
        }
        let mut calls = Vec::new();
        let mut cursor = 0;
        while let Some(start) = text[cursor..].find(FUNCTION).map(|at| cursor + at) {
            let Some(len) = text[start..].find(FUNCTION_END) else {
                break;
            };
            let end = start + len + FUNCTION_END.len();
            if let Some((name, arguments)) = self.block(&text[start..end]) {
                calls.push(Call {
                    name,
                    arguments: arguments.dumps()?,
                });
            }
            cursor = end;
        }
        (!calls.is_empty()).then(|| Settled {
            calls,
            content: String::new(),
        })
    }
}
