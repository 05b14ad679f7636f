//! DeepSeek V4 (vLLM's `parser/deepseek_v4.py`, name `deepseek_v4` for both
//! parsers): `<think>` reasoning and DSML calls.
//!
//! ```text
//! <think>…</think>
//! <｜DSML｜tool_calls>
//! <｜DSML｜invoke name="get_weather">
//! <｜DSML｜parameter name="city" string="true">杭州</｜DSML｜parameter>
//! <｜DSML｜parameter name="days" string="false">5</｜DSML｜parameter>
//! </｜DSML｜invoke>
//! </｜DSML｜tool_calls>
//! ```
//!
//! `string="true"` values are text; others are read as JSON (the text when
//! that fails). A call ends the turn: text after the block is dropped. When the
//! tool's schema lacks a lone `arguments` / `input` key that the model wrapped
//! its arguments in, the wrapper is removed.

use std::collections::HashSet;

use crate::engine::adapters::{EngineReasoningParser, EngineToolParser};
use crate::engine::config::{Emit, EngineConfig, State, Transition, on};
use crate::engine::models::{ParamTag, dict_json, skip_space, spaced, tag_params};
use crate::json::{self, PyJson};
use crate::parser::{ParserOptions, ReasoningParser, ToolParser, py_truthy};
use crate::tools::{Tool, find_tool};

use Emit::*;
use State::*;

/// The DSML terminals shared by V3.2 and V4, after the call wrapper.
pub const DSML_TERMINALS: [(&str, &str); 5] = [
    ("INVOKE_PREFIX", "<｜DSML｜invoke name=\""),
    ("INVOKE_NAME_END", "\">"),
    ("INVOKE_END", "</｜DSML｜invoke>"),
    ("PARAM_START", "<｜DSML｜parameter"),
    ("PARAM_CLOSE", "</｜DSML｜parameter>"),
];

/// The DSML transitions shared by V3.2 and V4 (`TOOL_START` / `TOOL_END` are
/// the call wrapper).
pub fn dsml_transitions() -> Vec<Transition> {
    vec![
        on(Content, "TOOL_START", ToolPreamble, &[]),
        on(ToolPreamble, "INVOKE_PREFIX", ToolName, &[ToolCallStart]),
        on(Content, "INVOKE_PREFIX", ToolName, &[ToolCallStart]),
        on(ToolName, "INVOKE_NAME_END", ToolArgs, &[]),
        on(ToolArgs, "INVOKE_END", ToolBetween, &[ToolCallEnd]),
        on(ToolArgs, "TOOL_END", ToolBetween, &[ToolCallEnd]),
        on(ToolBetween, "INVOKE_PREFIX", ToolName, &[ToolCallStart]),
        on(ToolBetween, "TOOL_END", ToolBetween, &[]),
        on(ToolBetween, "TOOL_START", ToolPreamble, &[]),
    ]
}

/// Sets what DSML formats share on a config.
pub fn dsml(mut config: EngineConfig) -> EngineConfig {
    config.converter = Some(convert);
    config.post_convert = Some(unwrap_wrapper);
    config.strip_content_whitespace_with_tools = false;
    config
}

/// The DeepSeek V4 grammar; `thinking` starts the output in reasoning.
pub fn config(thinking: bool) -> EngineConfig {
    let mut terminals = vec![
        ("THINK_START", "<think>"),
        ("THINK_END", "</think>"),
        ("TOOL_START", "<｜DSML｜tool_calls>"),
        ("TOOL_START", "<｜DSML｜toolcalls>"),
        ("TOOL_START", "<｜DSML｜tool>"),
        ("TOOL_END", "</｜DSML｜tool_calls>"),
    ];
    terminals.extend(DSML_TERMINALS);
    let mut transitions = vec![
        on(Content, "THINK_START", Reasoning, &[ReasoningStart]),
        on(Content, "THINK_END", Content, &[]),
        on(Reasoning, "THINK_START", Reasoning, &[]),
        on(Reasoning, "THINK_END", Content, &[ReasoningEnd]),
        on(Reasoning, "TOOL_START", ToolPreamble, &[ReasoningEnd]),
    ];
    transitions.extend(dsml_transitions());
    dsml(EngineConfig::new(
        "deepseek_v4",
        if thinking { Reasoning } else { Content },
        terminals,
        transitions,
    ))
}

/// vLLM's rule: thinking when `thinking` or `enable_thinking` is truthy, or
/// neither key is given; never with `reasoning_effort="none"`.
pub fn thinking(options: &ParserOptions) -> bool {
    let kwargs = &options.chat_template_kwargs;
    let given = ["thinking", "enable_thinking"]
        .iter()
        .any(|key| kwargs.contains_key(*key));
    let on = !given
        || ["thinking", "enable_thinking"]
            .iter()
            .any(|key| kwargs.get(*key).is_some_and(py_truthy));
    on && kwargs.get("reasoning_effort").and_then(|v| v.as_str()) != Some("none")
}

/// The `deepseek_v4` tool parser.
pub fn tool_parser(options: &ParserOptions) -> Box<dyn ToolParser> {
    EngineToolParser::boxed(config(thinking(options)), options)
}

/// The `deepseek_v4` reasoning parser.
pub fn reasoning_parser(options: &ParserOptions) -> Box<dyn ReasoningParser> {
    EngineReasoningParser::boxed(config(thinking(options)), true, &options.prompt)
}

/// `<｜DSML｜parameter\s+name="NAME"(?:\s+string="S")?\s*>` …
/// `</｜DSML｜parameter>`.
pub const PARAM: ParamTag = ParamTag {
    open: |text| {
        let at = spaced(text, &["<｜DSML｜parameter"], false)?;
        let after = skip_space(text, at);
        (after > at && text[after..].starts_with("name=")).then_some(after + "name=".len())
    },
    name: |text| {
        let rest = text.strip_prefix('"')?;
        let end = rest.find('"').filter(|&end| end > 0)?;
        let name = &rest[..end];
        let after_name = end + 2;
        let close = |at: usize| {
            let at = skip_space(text, at);
            text[at..].starts_with('>').then_some(at + 1)
        };
        let spaced_at = skip_space(text, after_name);
        if spaced_at > after_name
            && let Some(attr) = text[spaced_at..].strip_prefix("string=\"")
            && let Some(attr_end) = attr.find('"')
        {
            let attr_start = spaced_at + "string=\"".len();
            if let Some(len) = close(attr_start + attr_end + 1) {
                return Some((name, Some(&attr[..attr_end]), len));
            }
        }
        close(after_name).map(|len| (name, None, len))
    },
    close: |text| {
        text.starts_with("</｜DSML｜parameter>")
            .then_some("</｜DSML｜parameter>".len())
    },
};

/// vLLM's `_dsml_arg_converter(raw, partial=False)`.
fn convert(raw: &str) -> Option<String> {
    convert_params(raw, &PARAM)
}

/// vLLM's `_dsml_arg_converter` for a DSML dialect's parameter tag.
pub fn convert_params(raw: &str, tag: &ParamTag) -> Option<String> {
    let params = tag_params(raw, tag).into_iter().map(|p| {
        let value = if p.attribute == Some("true") {
            PyJson::Str(p.value.to_owned())
        } else {
            json::loads(p.value).unwrap_or_else(|_| PyJson::Str(p.value.to_owned()))
        };
        (p.name.to_owned(), value)
    });
    Some(dict_json(params))
}

/// vLLM's `_unwrap_wrapper_args`: `{"arguments": X}` or `{"input": X}` (X an
/// object, or a string holding one) becomes X when the tool declares
/// properties, not that key, and every key of X.
fn unwrap_wrapper(args_json: String, name: &str, tools: &[Tool]) -> String {
    let Some(properties) = find_tool(tools, name).and_then(Tool::properties) else {
        return args_json;
    };
    if properties.is_empty() {
        return args_json;
    }
    let Ok(PyJson::Dict(items)) = json::loads(&args_json) else {
        return args_json;
    };
    let allowed: HashSet<&str> = properties.keys().map(String::as_str).collect();
    for wrapper in ["arguments", "input"] {
        let [(key, inner)] = items.as_slice() else {
            continue;
        };
        if key != wrapper || allowed.contains(wrapper) {
            continue;
        }
        let inner = match inner {
            PyJson::Str(text) => match json::loads(text) {
                Ok(value) => value,
                Err(_) => return args_json,
            },
            other => other.clone(),
        };
        if let PyJson::Dict(fields) = &inner
            && fields.iter().all(|(k, _)| allowed.contains(k.as_str()))
        {
            return json::dumps(&inner);
        }
    }
    args_json
}
