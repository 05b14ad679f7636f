//! PLaMo 3 (vLLM's `parser/plamo3.py`, name `plamo3` for both parsers):
//!
//! ```text
//! <|plamo:begin_think:plamo|>…<|plamo:end_think:plamo|>
//! <|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|>
//! <|plamo:begin_tool_name:plamo|>get_weather<|plamo:end_tool_name:plamo|>
//! <|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>{"city": "Paris"}<|plamo:end_tool_arguments:plamo|>
//! <|plamo:end_tool_request:plamo|><|plamo:end_tool_requests:plamo|>
//! ```
//!
//! Names and arguments are separate fields; arguments are the JSON text as
//! written (stripped). The end-of-turn tag `<|plamo:tag|>` never shows. With
//! thinking off the grammar has no think markers.

use crate::engine::adapters::{EngineReasoningParser, EngineToolParser};
use crate::engine::config::{ArgsText, Emit, EngineConfig, State, on};
use crate::parser::{ParserOptions, ReasoningParser, ToolParser};

use Emit::*;
use State::*;

/// The PLaMo 3 grammar; `thinking` adds the think markers and starts in reasoning.
pub fn config(thinking: bool) -> EngineConfig {
    let mut terminals = Vec::new();
    let mut transitions = Vec::new();
    if thinking {
        terminals.extend([
            ("THINK_START", "<|plamo:begin_think:plamo|>"),
            ("THINK_END", "<|plamo:end_think:plamo|>"),
        ]);
        transitions.extend([
            on(Reasoning, "THINK_START", Reasoning, &[]),
            on(Content, "THINK_START", Reasoning, &[ReasoningStart]),
            on(Reasoning, "THINK_END", Content, &[ReasoningEnd]),
            on(Content, "THINK_END", Content, &[]),
            on(Reasoning, "TOOL_REQUESTS_START", ToolPreamble, &[ReasoningEnd]),
        ]);
    }
    terminals.extend([
        ("TOOL_REQUESTS_START", "<|plamo:begin_tool_requests:plamo|>"),
        ("TOOL_REQUESTS_END", "<|plamo:end_tool_requests:plamo|>"),
        ("TOOL_REQUEST_START", "<|plamo:begin_tool_request:plamo|>"),
        ("TOOL_REQUEST_END", "<|plamo:end_tool_request:plamo|>"),
        ("TOOL_NAME_START", "<|plamo:begin_tool_name:plamo|>"),
        ("TOOL_NAME_END", "<|plamo:end_tool_name:plamo|>"),
        (
            "TOOL_ARGS_START",
            "<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>",
        ),
        ("TOOL_ARGS_END", "<|plamo:end_tool_arguments:plamo|>"),
        ("EOT", "<|plamo:tag|>"),
    ]);
    transitions.extend([
        on(Content, "TOOL_REQUESTS_START", ToolPreamble, &[]),
        on(ToolPreamble, "TOOL_REQUEST_START", ToolPreamble, &[]),
        on(ToolPreamble, "TOOL_NAME_START", ToolName, &[ToolCallStart]),
        on(ToolName, "TOOL_NAME_END", ToolPreamble, &[]),
        on(ToolPreamble, "TOOL_ARGS_START", ToolArgs, &[]),
        on(ToolArgs, "TOOL_ARGS_END", ToolBetween, &[]),
        on(ToolBetween, "TOOL_REQUEST_END", ToolPreamble, &[ToolCallEnd]),
        on(ToolPreamble, "TOOL_REQUESTS_END", Content, &[]),
        on(Reasoning, "EOT", Content, &[ReasoningEnd]),
    ]);
    for state in [Content, ToolPreamble, ToolName, ToolArgs, ToolBetween] {
        transitions.push(on(state, "EOT", Content, &[]));
    }
    let mut config = EngineConfig::new(
        "plamo3",
        if thinking { Reasoning } else { Content },
        terminals,
        transitions,
    );
    config.strip_content_whitespace_with_tools = false;
    config.strip_trailing_reasoning_whitespace = false;
    config.args_text = ArgsText::Stripped;
    config
}

/// Whether the request thinks (`enable_thinking`, on by default).
fn thinking(options: &ParserOptions) -> bool {
    options.template_flag("enable_thinking", true)
}

/// The `plamo3` tool parser.
pub fn tool_parser(options: &ParserOptions) -> Box<dyn ToolParser> {
    EngineToolParser::boxed(config(thinking(options)), &options.tools)
}

/// The `plamo3` reasoning parser. With thinking off the engine still runs
/// (it drops the end-of-turn tag).
pub fn reasoning_parser(options: &ParserOptions) -> Box<dyn ReasoningParser> {
    EngineReasoningParser::boxed(config(thinking(options)), true, &options.prompt)
}
