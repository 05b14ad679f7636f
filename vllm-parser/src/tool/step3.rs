//! `step3`: vLLM's `Step3ToolParser`,
//!
//! ```text
//! <｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="f">
//! <steptml:parameter name="a">1</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>
//! ```
//!
//! vLLM's whole-text result, which this parser reproduces:
//! - without `<｜tool_calls_begin｜>` and, after it, `<｜tool_calls_end｜>`, all text
//!   is content;
//! - the block between them splits at `<｜tool_call_begin｜>`; a part is a call when
//!   it holds `<｜tool_call_end｜>`, and before that a `<｜tool_sep｜>` whose left
//!   side `strip()`s to `function`, and on its right `<steptml:invoke name="NAME">`;
//! - parameters are the `<steptml:parameter name="KEY">VALUE</steptml:parameter>`
//!   matches, values `strip()`ped, then cast by the tool's schema `type`
//!   (`integer`: Python `int()`, `number`: `float()`, `boolean`: `true`/`false`,
//!   `null`: `null`; otherwise, or when the cast fails, the string);
//! - with calls, content is the text before and after the block, joined and
//!   `strip()`ped; without, all text is content.
//!
//! Content before the block streams ([`StrippedHead`]); the rest is settled
//! once, at [`finish`](ToolParser::finish).

use serde_json::Value;

use crate::engine::models::dict_json;
use crate::engine::schema::{py_float, py_int};
use crate::event::Event;
use crate::json::PyJson;
use crate::parser::{ParserOptions, ToolParser};
use crate::text::py_strip;
use crate::tool::stripped::StrippedHead;
use crate::tool::{Call, emit_calls};
use crate::tools::Tool;

const CALLS_BEGIN: &str = "<｜tool_calls_begin｜>";
const CALLS_END: &str = "<｜tool_calls_end｜>";
const CALL_BEGIN: &str = "<｜tool_call_begin｜>";
const CALL_END: &str = "<｜tool_call_end｜>";
const SEP: &str = "<｜tool_sep｜>";
const INVOKE: &str = "<steptml:invoke name=\"";
const PARAM: &str = "<steptml:parameter name=\"";
const PARAM_END: &str = "</steptml:parameter>";

/// The `step3` tool parser.
pub struct Step3Parser {
    tools: Vec<Tool>,
    head: StrippedHead,
}

impl Step3Parser {
    /// A boxed parser for the registry.
    pub fn boxed(options: &ParserOptions) -> Box<dyn ToolParser> {
        Box::new(Self {
            tools: options.tools.clone(),
            head: StrippedHead::new(CALLS_BEGIN),
        })
    }
}

impl ToolParser for Step3Parser {
    fn push(&mut self, text: &str, _token_ids: &[u32], out: &mut Vec<Event>) {
        self.head.push(text, out);
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        let ended = self.head.finish();
        let settled = ended
            .tail
            .as_deref()
            .and_then(|tail| tail.strip_prefix(CALLS_BEGIN))
            .and_then(|tail| {
                let (block, post) = tail.split_once(CALLS_END)?;
                let calls: Vec<Call> = block
                    .split(CALL_BEGIN)
                    .filter_map(|part| call(part, &self.tools))
                    .collect();
                (!calls.is_empty()).then_some((calls, post))
            });
        let (text, calls) = match settled {
            Some((calls, post)) => (ended.content.stripped(post), calls),
            None => (ended.verbatim(), Vec::new()),
        };
        if !text.is_empty() {
            out.push(Event::Content(text));
        }
        emit_calls(calls, 0, out);
    }
}

/// One `<｜tool_call_begin｜>` part as a call, if vLLM takes it as one.
fn call(part: &str, tools: &[Tool]) -> Option<Call> {
    let (body, _) = part.split_once(CALL_END)?;
    let (kind, invoke) = body.split_once(SEP)?;
    if py_strip(kind) != "function" {
        return None;
    }
    let name = quoted_name(invoke, INVOKE)?.1;
    let schema = tools
        .iter()
        .find(|tool| tool.name == name)
        .map(|tool| &tool.parameters);
    let params = parameters(invoke).into_iter().map(|(key, value)| {
        let value = py_strip(value);
        let kind = schema
            .and_then(|schema| schema.get("properties"))
            .and_then(|properties| properties.get(key))
            .and_then(|property| property.get("type"))
            .and_then(Value::as_str);
        (key.to_owned(), cast(value, kind))
    });
    Some(Call {
        name: name.to_owned(),
        arguments: dict_json(params),
    })
}

/// The first `OPEN NAME">` in `text` (`NAME` = `[^"]+`): the end of the match
/// and the name.
fn quoted_name<'t>(text: &'t str, open: &str) -> Option<(usize, &'t str)> {
    let mut pos = 0;
    while let Some(found) = text[pos..].find(open) {
        let start = pos + found + open.len();
        pos = start;
        let len = text[start..].find('"')?;
        if len > 0 && text[start + len..].starts_with("\">") {
            return Some((start + len + 2, &text[start..start + len]));
        }
    }
    None
}

/// The `<steptml:parameter name="KEY">VALUE</steptml:parameter>` matches.
fn parameters(text: &str) -> Vec<(&str, &str)> {
    let mut params = Vec::new();
    let mut pos = 0;
    while let Some((value_start, key)) = quoted_name(&text[pos..], PARAM) {
        let value_start = pos + value_start;
        let Some(len) = text[value_start..].find(PARAM_END) else {
            break;
        };
        params.push((key, &text[value_start..value_start + len]));
        pos = value_start + len + PARAM_END.len();
    }
    params
}

/// `_cast_arguments` for one value by its schema type.
fn cast(value: &str, kind: Option<&str>) -> PyJson {
    let cast = match kind {
        Some("integer") => py_int(value).map(PyJson::Int),
        Some("number") => py_float(value).map(PyJson::Float),
        Some("boolean") => match value.to_lowercase().as_str() {
            "true" => Some(PyJson::Bool(true)),
            "false" => Some(PyJson::Bool(false)),
            _ => None,
        },
        Some("null") if value.to_lowercase() == "null" => Some(PyJson::Null),
        _ => None,
    };
    cast.unwrap_or_else(|| PyJson::Str(value.to_owned()))
}
