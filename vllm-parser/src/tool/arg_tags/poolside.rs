//! `poolside_v1`: vLLM's `PoolsideV1ToolParser` (GLM-4 style calls),
//!
//! ```text
//! <tool_call>get_weather
//! <arg_key>city</arg_key>
//! <arg_value>Paris</arg_value>
//! </tool_call>
//! ```
//!
//! vLLM's whole-text result, which this parser reproduces:
//! - blocks are `<tool_call>…</tool_call>` (to the first end tag); a block is a
//!   call when some `<tool_call>` in it is followed by a name (no `<` or newline,
//!   `strip()`ped) and then, after whitespace, `<arg_key>` or the end tag;
//!   other blocks are skipped;
//! - arguments are the tag pairs after the name; a key is `strip()`ped; a value
//!   whose schema `type` is `"string"` is kept verbatim, any other is
//!   `strip()`ped and read by `json.loads`, else `ast.literal_eval`, else kept as
//!   text; a repeated key takes the last value;
//! - a value `json.dumps` refuses (a set, bytes, …) or an unhashable literal
//!   makes the whole output content, as does finding no call;
//! - with calls, content is the text before the first `<tool_call>`.

use serde_json::Value;

use super::literal::{Literal, json_or_literal};
use super::{ArgTags, Arguments};
use crate::json::PyJson;
use crate::parser::{ParserOptions, ToolParser};
use crate::text::{py_is_space, py_strip};
use crate::tool::Call;
use crate::tool::settle::{Opening, Settle, SettleParser, Settled};
use crate::tools::{Tool, find_tool};

const CALL: &str = "<tool_call>";
const CALL_END: &str = "</tool_call>";
const ARG_KEY: &str = "<arg_key>";
const TAGS: ArgTags = ArgTags {
    key: (ARG_KEY, "</arg_key>"),
    kind: None,
    value: ("<arg_value>", "</arg_value>"),
    spaced: true,
};

/// The `poolside_v1` format, with the request's tools.
#[derive(Debug, Clone)]
pub struct Poolside {
    tools: Vec<Tool>,
}

impl Poolside {
    /// A boxed parser for the registry.
    pub fn boxed(options: &ParserOptions) -> Box<dyn ToolParser> {
        SettleParser::boxed(Poolside {
            tools: options.tools.clone(),
        })
    }

    /// `_is_string_type`: whether the schema says `"type": "string"`.
    fn is_string(&self, name: &str, key: &str) -> bool {
        find_tool(&self.tools, name)
            .and_then(|tool| tool.parameters.get("properties")?.get(key)?.get("type"))
            .is_some_and(|kind| kind == &Value::from("string"))
    }

    /// One call's arguments JSON; `None` where vLLM raises.
    fn arguments(&self, name: &str, args: &str) -> Option<String> {
        let mut arguments = Arguments::default();
        for pair in TAGS.pairs(args) {
            let key = py_strip(pair.key);
            let value = if self.is_string(name, key) {
                Some(PyJson::Str(pair.value.to_owned()))
            } else {
                // `_deserialize` catches only `ValueError` / `SyntaxError`.
                let text = py_strip(pair.value);
                match json_or_literal(text) {
                    Literal::Json(value) => Some(value),
                    Literal::Malformed => Some(PyJson::Str(text.to_owned())),
                    Literal::Unwritable => None,
                    Literal::Unhashable => return None,
                }
            };
            arguments.insert(key, value);
        }
        arguments.dumps()
    }
}

/// `func_detail_regex.search(block)` (`block` is one `<tool_call>…` up to its
/// end tag): the name and the text from the first `<arg_key>` on, if any.
fn detail(block: &str) -> Option<(&str, &str)> {
    block
        .match_indices(CALL)
        .find_map(|(at, _)| detail_at(&block[at + CALL.len()..]))
}

/// `\s*([^\n<]+?)\s*\n?\s*(<arg_key>.*?)?` up to the end tag.
fn detail_at(rest: &str) -> Option<(&str, &str)> {
    let after = rest.trim_start_matches(py_is_space);
    let space = &rest[..rest.len() - after.len()];
    let name_len = after.find(['\n', '<']).unwrap_or(after.len());
    // An empty name can still be one whitespace character other than `\n`.
    if name_len == 0 && !space.contains(|c| c != '\n') {
        return None;
    }
    let args = after[name_len..].trim_start_matches(py_is_space);
    (args.is_empty() || args.starts_with(ARG_KEY)).then(|| (py_strip(&after[..name_len]), args))
}

impl Settle for Poolside {
    fn opening(&self) -> Opening {
        Opening::Marker(&[CALL])
    }

    fn settle(&self, tail: &str) -> Option<Settled> {
        let mut calls = Vec::new();
        let mut cursor = 0;
        while let Some(start) = tail[cursor..].find(CALL).map(|at| cursor + at) {
            let Some(len) = tail[start..].find(CALL_END) else {
                break;
            };
            let block = &tail[start..start + len];
            cursor = start + len + CALL_END.len();
            if let Some((name, args)) = detail(block) {
                calls.push(Call {
                    name: name.to_owned(),
                    arguments: self.arguments(name, args)?,
                });
            }
        }
        (!calls.is_empty()).then(|| Settled {
            calls,
            content: String::new(),
        })
    }
}
