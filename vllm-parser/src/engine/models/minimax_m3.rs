//! MiniMax M3 tool calls (vLLM's `parser/minimax_m3.py`, tool name
//! `minimax_m3`): every structural tag carries the `]<]minimax[>[` prefix.
//!
//! ```text
//! ]<]minimax[>[<tool_call>
//! ]<]minimax[>[<invoke name="create_order">
//! ]<]minimax[>[<user_id>42]<]minimax[>[</user_id>
//! ]<]minimax[>[<items>]<]minimax[>[<item>]<]minimax[>[<sku>b1]<]minimax[>[</sku>]<]minimax[>[</item>]<]minimax[>[</items>
//! ]<]minimax[>[</invoke>
//! ]<]minimax[>[</tool_call>
//! ```
//!
//! Each `<invoke>` is one call; its parameters are elements named after the
//! argument, and may nest: an element with children becomes an object, or an
//! array when its schema says so. Text values are typed by the schema; a
//! repeated name collects its values into a list. Text after the block is
//! dropped.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::engine::adapters::EngineToolParser;
use crate::engine::config::{Emit, EngineConfig, State, on};
use crate::engine::schema::{coerce_text, schema_types};
use crate::json::{self, PyJson};
use crate::parser::{ParserOptions, ToolParser};
use crate::text::{py_is_space, py_strip};
use crate::tools::{Tool, find_tool};

use Emit::*;
use State::*;

/// The prefix of every structural tag.
const NAMESPACE: &str = "]<]minimax[>[";
/// An element opener's start (`NAMESPACE<`).
const ELEMENT_START: &str = "]<]minimax[>[<";
/// The field holding an element's text beside its children.
const MIXED_TEXT_FIELD: &str = "$text";
/// Deeper elements are malformed.
const MAX_ELEMENT_DEPTH: usize = 128;

/// The MiniMax M3 grammar.
pub fn config() -> EngineConfig {
    let mut transitions = vec![on(Content, "TOOL_START", ToolPreamble, &[])];
    for state in [ToolPreamble, ToolBetween] {
        for prefix in [
            "INVOKE_PREFIX_DQ",
            "INVOKE_PREFIX_SQ",
            "INVOKE_PREFIX_UNQUOTED",
        ] {
            transitions.push(on(state, prefix, ToolName, &[ToolCallStart]));
        }
    }
    for end in ["NAME_END_DQ", "NAME_END_SQ", "NAME_END_UNQUOTED"] {
        transitions.push(on(ToolName, end, ToolArgs, &[]));
    }
    transitions.extend([
        on(ToolArgs, "INVOKE_END", ToolBetween, &[ToolCallEnd]),
        on(ToolPreamble, "TOOL_END", ToolBetween, &[]),
        on(ToolBetween, "TOOL_END", ToolBetween, &[]),
    ]);
    let mut config = EngineConfig::new(
        "minimax_m3",
        Content,
        vec![
            ("TOOL_START", "]<]minimax[>[<tool_call>"),
            ("TOOL_END", "]<]minimax[>[</tool_call>"),
            ("INVOKE_PREFIX_DQ", "]<]minimax[>[<invoke name=\""),
            ("INVOKE_PREFIX_SQ", "]<]minimax[>[<invoke name='"),
            ("INVOKE_PREFIX_UNQUOTED", "]<]minimax[>[<invoke name="),
            ("INVOKE_END", "]<]minimax[>[</invoke>"),
            ("NAME_END_DQ", "\">"),
            ("NAME_END_SQ", "'>"),
            ("NAME_END_UNQUOTED", ">"),
        ],
        transitions,
    );
    config.schema_converter = Some(convert);
    config.strip_content_whitespace_with_tools = false;
    config
}

/// The `minimax_m3` tool parser.
pub fn tool_parser(options: &ParserOptions) -> Box<dyn ToolParser> {
    EngineToolParser::boxed(config(), options)
}

/// An element's value: its text, or its `(name, value)` children in order.
enum Element {
    Text(String),
    Children(Vec<(String, Element)>),
}

/// vLLM's `_minimax_m3_arg_converter` with the named tool's properties.
fn convert(raw: &str, name: &str, tools: &[Tool]) -> Option<String> {
    let properties = find_tool(tools, py_strip(name)).and_then(Tool::properties);
    let arguments = convert_object(invoke_params(raw), properties, None);
    Some(json::dumps(&arguments))
}

/// `_parse_invoke_params`: the parameter elements, up to the first malformed
/// or unterminated one.
fn invoke_params(raw: &str) -> Vec<(String, Element)> {
    let mut params = Vec::new();
    let mut pos = 0;
    loop {
        pos = raw.len() - raw[pos..].trim_start_matches(py_is_space).len();
        if !raw[pos..].starts_with(ELEMENT_START) {
            return params;
        }
        let Some((name, value, end)) = parse_element(raw, pos, 1) else {
            return params;
        };
        params.push((name, value));
        pos = end;
    }
}

/// `_parse_element`: the element starting at `pos` and the offset after it;
/// `None` if malformed.
fn parse_element(text: &str, pos: usize, depth: usize) -> Option<(String, Element, usize)> {
    if depth > MAX_ELEMENT_DEPTH {
        return None;
    }
    let name_start = pos + ELEMENT_START.len();
    let name_end = name_start + text[name_start..].find('>')?;
    let name = &text[name_start..name_end];
    if name.is_empty() || name.starts_with('/') || py_strip(name).is_empty() {
        return None;
    }
    let close = format!("{NAMESPACE}</{name}>");
    let mut pos = name_end + 1;
    let mut body = String::new();
    let mut children = Vec::new();
    loop {
        let marker = pos + text[pos..].find(NAMESPACE)?;
        body.push_str(&text[pos..marker]);
        if text[marker..].starts_with(&close) {
            pos = marker + close.len();
            break;
        }
        if !text[marker..].starts_with(ELEMENT_START) {
            return None;
        }
        let (child, value, end) = parse_element(text, marker, depth + 1)?;
        children.push((child, value));
        pos = end;
    }
    if children.is_empty() {
        return Some((name.to_owned(), Element::Text(body), pos));
    }
    if !py_strip(&body).is_empty() {
        // Mixed text goes under a reserved field no child uses.
        let mut field = MIXED_TEXT_FIELD.to_owned();
        while children.iter().any(|(child, _)| *child == field) {
            field.insert(0, '$');
        }
        children.push((field, Element::Text(body)));
    }
    Some((name.to_owned(), Element::Children(children), pos))
}

/// `_container_schema`: the first `array` or `object` alternative.
fn container_schema(schema: &Map<String, Value>) -> Option<(&'static str, &Map<String, Value>)> {
    let types = schema.get("type");
    for kind in ["array", "object"] {
        let named = match types {
            Some(Value::String(t)) => t == kind,
            Some(Value::Array(list)) => list.iter().any(|t| t.as_str() == Some(kind)),
            _ => false,
        };
        if named {
            return Some((kind, schema));
        }
    }
    if matches!(types, None | Some(Value::Null)) {
        if schema.contains_key("items") {
            return Some(("array", schema));
        }
        if schema.contains_key("properties") || schema.contains_key("additionalProperties") {
            return Some(("object", schema));
        }
    }
    for field in ["anyOf", "oneOf"] {
        if let Some(Value::Array(choices)) = schema.get(field) {
            for choice in choices.iter().filter_map(Value::as_object) {
                if let Some(found) = container_schema(choice) {
                    return Some(found);
                }
            }
        }
    }
    None
}

/// `_convert_element`: a value typed by its schema.
fn convert_element(value: Element, schema: Option<&Value>) -> PyJson {
    let schema = schema.and_then(Value::as_object);
    let container = schema.and_then(container_schema);
    match value {
        Element::Text(text) => {
            let Some(schema) = schema else {
                return PyJson::Str(text);
            };
            let types = schema_types(&Value::Object(schema.clone()));
            // The template renders an empty list or dict as an empty element.
            if let Some((kind, _)) = container
                && !types.iter().any(|t| t == "string")
                && py_strip(&text).is_empty()
            {
                return if kind == "array" {
                    PyJson::List(Vec::new())
                } else {
                    PyJson::Dict(Vec::new())
                };
            }
            coerce_text(&text, &types).unwrap_or(PyJson::Str(text))
        }
        Element::Children(children) => match container {
            Some(("array", schema)) => PyJson::List(
                children
                    .into_iter()
                    .map(|(_, child)| convert_element(child, schema.get("items")))
                    .collect(),
            ),
            _ => {
                let schema = container.map(|(_, schema)| schema);
                convert_object(
                    children,
                    schema
                        .and_then(|s| s.get("properties"))
                        .and_then(Value::as_object),
                    schema.and_then(|s| s.get("additionalProperties")),
                )
            }
        },
    }
}

/// `_convert_object`: named elements to an object; a repeated name collects
/// its values into a list.
fn convert_object(
    elements: Vec<(String, Element)>,
    properties: Option<&Map<String, Value>>,
    additional: Option<&Value>,
) -> PyJson {
    let mut result: Vec<(String, PyJson)> = Vec::new();
    let mut repeated: HashSet<String> = HashSet::new();
    for (name, element) in elements {
        let schema = match properties.and_then(|p| p.get(&name)) {
            Some(schema) => Some(schema),
            None => additional,
        };
        let converted = convert_element(element, schema);
        match result.iter_mut().find(|(key, _)| *key == name) {
            None => result.push((name, converted)),
            Some((_, PyJson::List(values))) if repeated.contains(&name) => values.push(converted),
            Some((_, value)) => {
                let first = std::mem::replace(value, PyJson::Null);
                *value = PyJson::List(vec![first, converted]);
                repeated.insert(name);
            }
        }
    }
    PyJson::Dict(result)
}
