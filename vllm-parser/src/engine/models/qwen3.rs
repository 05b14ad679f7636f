//! Qwen3 (vLLM's `parser/qwen3.py`, tool names `qwen3_xml` and `qwen3_coder`):
//!
//! ```text
//! <think>…</think>
//! <tool_call>
//! <function=get_weather>
//! <parameter=city>
//! Paris
//! </parameter>
//! </function>
//! </tool_call>
//! ```
//!
//! Parameter values are text; one leading and one trailing newline are the
//! template's and are removed; the tool's schema then types them.

use crate::engine::config::{Emit, EngineConfig, State, on};
use crate::engine::models::{ParamTag, dict_json, tag_params};

use Emit::*;
use State::*;

/// The Qwen3 grammar; `thinking` starts the output in reasoning.
pub fn config(thinking: bool) -> EngineConfig {
    let mut config = EngineConfig::new(
        "qwen3",
        if thinking { Reasoning } else { Content },
        vec![
            ("THINK_START", "<think>"),
            ("THINK_END", "</think>"),
            ("TOOL_START", "<tool_call>"),
            ("TOOL_END", "</tool_call>"),
            ("FUNC_PREFIX", "<function="),
            ("FUNC_END", "</function>"),
            ("PARAM_START", "<parameter="),
            ("PARAM_END", "</parameter>"),
            ("CLOSE_ANGLE", ">"),
        ],
        vec![
            on(Reasoning, "THINK_START", Reasoning, &[]),
            on(Reasoning, "THINK_END", Content, &[ReasoningEnd]),
            on(Content, "THINK_END", Content, &[]),
            on(Reasoning, "TOOL_START", ToolPreamble, &[ReasoningEnd, ToolCallStart]),
            on(Content, "TOOL_START", ToolPreamble, &[ReasoningEnd, ToolCallStart]),
            on(Content, "FUNC_PREFIX", ToolName, &[ToolCallStart]),
            on(ToolPreamble, "TOOL_END", Content, &[ToolCallEnd]),
            on(ToolPreamble, "FUNC_PREFIX", ToolName, &[]),
            on(ToolName, "CLOSE_ANGLE", ToolArgs, &[]),
            on(ToolName, "FUNC_END", ToolBetween, &[ToolCallEnd]),
            on(ToolName, "TOOL_END", Content, &[ToolCallEnd]),
            on(ToolName, "TOOL_START", ToolPreamble, &[ToolCallEnd, ToolCallStart]),
            on(ToolName, "FUNC_PREFIX", ToolName, &[ToolCallEnd, ToolCallStart]),
            on(ToolArgs, "FUNC_END", ToolBetween, &[ToolCallEnd]),
            on(ToolArgs, "FUNC_PREFIX", ToolName, &[ToolCallEnd, ToolCallStart]),
            on(ToolArgs, "PARAM_START", ToolArgs, &[Argument]),
            on(ToolArgs, "PARAM_END", ToolArgs, &[Argument]),
            on(ToolBetween, "TOOL_END", Content, &[]),
            on(ToolBetween, "TOOL_START", ToolPreamble, &[ToolCallStart]),
            on(ToolBetween, "FUNC_PREFIX", ToolName, &[ToolCallStart]),
        ],
    );
    config.converter = Some(convert);
    config.strip_trailing_reasoning_whitespace = false;
    config
}

/// `<parameter=NAME>VALUE</parameter>` (whitespace allowed inside the tags; a
/// value also ends at the next opening tag).
const PARAM: ParamTag = ParamTag {
    open: &["<", "parameter", "="],
    close: &["<", "/", "parameter", ">"],
};

/// vLLM's `_qwen3_arg_converter(raw, partial=False)`.
fn convert(raw: &str) -> Option<String> {
    let params = tag_params(raw, &PARAM)
        .into_iter()
        .map(|(name, value)| (name.to_owned(), trim_wrapping_newlines(value).to_owned()));
    Some(dict_json(params))
}

/// One leading and one trailing `\n` (the template's markup).
fn trim_wrapping_newlines(value: &str) -> &str {
    let value = value.strip_prefix('\n').unwrap_or(value);
    value.strip_suffix('\n').unwrap_or(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converter_keeps_first_position_and_last_value() {
        let raw = "\n<parameter=a>\n1\n</parameter>\n<parameter = b >x<parameter=a>2</parameter><parameter=c>open";
        assert_eq!(convert(raw).unwrap(), r#"{"a": "2", "b ": "x"}"#);
    }
}
