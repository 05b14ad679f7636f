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

use crate::engine::adapters::{EngineReasoningParser, EngineToolParser};
use crate::engine::config::{Emit, EngineConfig, State, on};
use crate::engine::models::{ParamTag, dict_json, spaced, tag_params};
use crate::json::PyJson;
use crate::parser::{ParserOptions, ReasoningParser, ToolParser};

use Emit::*;
use State::*;

/// The four wrapper strings that tell Qwen3-grammar models apart.
#[derive(Debug, Clone, Copy)]
pub struct Wrappers {
    /// vLLM's config name.
    pub name: &'static str,
    /// Opens reasoning.
    pub think_start: &'static str,
    /// Closes reasoning.
    pub think_end: &'static str,
    /// Opens a call.
    pub tool_start: &'static str,
    /// Closes a call.
    pub tool_end: &'static str,
    /// The prompt's turn-delimiting tokens.
    pub turn_boundaries: &'static [&'static str],
}

/// Qwen3's own spellings.
pub const QWEN3: Wrappers = Wrappers {
    name: "qwen3",
    think_start: "<think>",
    think_end: "</think>",
    tool_start: "<tool_call>",
    tool_end: "</tool_call>",
    turn_boundaries: &["<|im_start|>", "<|im_end|>"],
};

/// The Qwen3 grammar with `wrappers`; `thinking` starts the output in reasoning.
pub fn config(wrappers: Wrappers, thinking: bool) -> EngineConfig {
    let mut config = EngineConfig::new(
        wrappers.name,
        if thinking { Reasoning } else { Content },
        vec![
            ("THINK_START", wrappers.think_start),
            ("THINK_END", wrappers.think_end),
            ("TOOL_START", wrappers.tool_start),
            ("TOOL_END", wrappers.tool_end),
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
            on(
                Reasoning,
                "TOOL_START",
                ToolPreamble,
                &[ReasoningEnd, ToolCallStart],
            ),
            on(
                Content,
                "TOOL_START",
                ToolPreamble,
                &[ReasoningEnd, ToolCallStart],
            ),
            on(Content, "FUNC_PREFIX", ToolName, &[ToolCallStart]),
            on(ToolPreamble, "TOOL_END", Content, &[ToolCallEnd]),
            on(ToolPreamble, "FUNC_PREFIX", ToolName, &[]),
            on(ToolName, "CLOSE_ANGLE", ToolArgs, &[]),
            on(ToolName, "FUNC_END", ToolBetween, &[ToolCallEnd]),
            on(ToolName, "TOOL_END", Content, &[ToolCallEnd]),
            on(
                ToolName,
                "TOOL_START",
                ToolPreamble,
                &[ToolCallEnd, ToolCallStart],
            ),
            on(
                ToolName,
                "FUNC_PREFIX",
                ToolName,
                &[ToolCallEnd, ToolCallStart],
            ),
            on(ToolArgs, "FUNC_END", ToolBetween, &[ToolCallEnd]),
            on(
                ToolArgs,
                "FUNC_PREFIX",
                ToolName,
                &[ToolCallEnd, ToolCallStart],
            ),
            on(ToolArgs, "PARAM_START", ToolArgs, &[Argument]),
            on(ToolArgs, "PARAM_END", ToolArgs, &[Argument]),
            on(ToolBetween, "TOOL_END", Content, &[]),
            on(ToolBetween, "TOOL_START", ToolPreamble, &[ToolCallStart]),
            on(ToolBetween, "FUNC_PREFIX", ToolName, &[ToolCallStart]),
        ],
    );
    config.converter = Some(convert);
    config.strip_trailing_reasoning_whitespace = false;
    config.turn_boundaries = wrappers.turn_boundaries.to_vec();
    config
}

/// Whether the request thinks (`enable_thinking`, on by default).
fn thinking(options: &ParserOptions) -> bool {
    options.template_flag("enable_thinking", true)
}

/// The `qwen3_xml` / `qwen3_coder` tool parser.
pub fn tool_parser(options: &ParserOptions) -> Box<dyn ToolParser> {
    tool_parser_for(QWEN3, options)
}

/// The tool parser of a Qwen3-grammar model.
pub fn tool_parser_for(wrappers: Wrappers, options: &ParserOptions) -> Box<dyn ToolParser> {
    EngineToolParser::boxed(config(wrappers, thinking(options)), options)
}

/// `step5`: vLLM's `Step5ToolParser`, the Qwen3 grammar configured with
/// `thinking=False` and content whitespace beside calls kept as it is.
pub fn step5_tool_parser(options: &ParserOptions) -> Box<dyn ToolParser> {
    let wrappers = Wrappers {
        name: "step5",
        turn_boundaries: &[],
        ..QWEN3
    };
    let mut config = config(wrappers, false);
    config.drop_whitespace_only_content_before_tools = false;
    config.strip_content_whitespace_with_tools = false;
    EngineToolParser::boxed(config, options)
}

/// The reasoning parser of a Qwen3-grammar model. (vLLM's `qwen3` reasoning
/// parser is this engine too; the crate keeps its `reasoning::think::QWEN3`
/// form, which also reads the prompt.)
pub fn reasoning_parser_for(
    wrappers: Wrappers,
    options: &ParserOptions,
) -> Box<dyn ReasoningParser> {
    let thinking = thinking(options);
    EngineReasoningParser::boxed(config(wrappers, thinking), thinking, &options.prompt)
}

/// `<parameter=NAME>VALUE</parameter>` (whitespace allowed inside the tags; a
/// value also ends at the next opening tag): `<\s*parameter\s*=\s*([^>]*)>`.
pub const PARAM: ParamTag = ParamTag {
    open: |text| spaced(text, &["<", "parameter", "="], true),
    name: |text| text.find('>').map(|gt| (&text[..gt], None, gt + 1)),
    close: |text| spaced(text, &["<", "/", "parameter", ">"], false),
};

/// vLLM's `_qwen3_arg_converter(raw, partial=False)`.
fn convert(raw: &str) -> Option<String> {
    let params = tag_params(raw, &PARAM).into_iter().map(|p| {
        (
            p.name.to_owned(),
            PyJson::Str(trim_wrapping_newlines(p.value).to_owned()),
        )
    });
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
